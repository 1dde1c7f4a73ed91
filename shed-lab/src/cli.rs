//! The overload lab's command line: its flags, how they combine, and what
//! is refused. `src/bin/overload.rs` is a thin `main` around [`parse`].
//! The flags are a contract: scripts and `BENCHMARKS.md` call them.

use std::ops::Range;
use std::path::PathBuf;

use crate::PolicyKind;

/// What `--help` and every usage error print.
pub const USAGE: &str = "usage: overload [SCENARIO.toml] [--policy none|reject-when-full|queue-wait|shed] [--compare] [--algorithms] [--sweep 0.5,1,2,3] [--seeds 0..16] [--json] [--plot FILE.svg] [--clients none,immediate,backoff,budget,budget+throttle]";

/// A run of the lab, as the command line asks for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    /// The scenario file.
    pub scenario: PathBuf,
    /// The policies to run (all of them for `--compare`, a sweep, or no
    /// arguments at all; `shed` for a scenario alone).
    pub policies: Vec<PolicyKind>,
    /// The rate factors (`--sweep`; 1 by default).
    pub factors: Vec<f64>,
    /// Print JSON instead of tables.
    pub json: bool,
    /// Draw the sweep to this SVG file.
    pub plot: Option<PathBuf>,
    /// Compare the adaptive limit algorithms.
    pub algorithms: bool,
    /// Run every seed of this range and report worst and mean.
    pub seeds: Option<Range<u64>>,
    /// Run each of these client retry policies (see [`crate::retries`]).
    pub clients: Option<Vec<crate::retries::ClientPolicy>>,
}

/// Parses the arguments after the program's name; `default_scenario` is
/// run when none is given. The error is the message to print.
pub fn parse(
    args: impl IntoIterator<Item = String>,
    default_scenario: PathBuf,
) -> Result<Args, String> {
    let mut scenario = None;
    let mut policy = None;
    let mut compare = false;
    let mut factors = None;
    let mut json = false;
    let mut plot = None;
    let mut algorithms = false;
    let mut seeds = None;
    let mut clients = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or(format!("{flag} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--policy" => policy = Some(value("--policy")?.parse::<PolicyKind>()?),
            "--compare" => compare = true,
            "--sweep" => {
                let list = value("--sweep")?;
                let parsed: Result<Vec<f64>, _> =
                    list.split(',').map(|f| f.trim().parse::<f64>()).collect();
                match parsed {
                    Ok(fs) if !fs.is_empty() && fs.iter().all(|f| *f > 0.0 && f.is_finite()) => {
                        factors = Some(fs)
                    }
                    _ => {
                        return Err(format!(
                            "--sweep takes positive factors like 0.5,1,2,3, got `{list}`"
                        ))
                    }
                }
            }
            "--json" => json = true,
            "--algorithms" => algorithms = true,
            "--seeds" => {
                let range = value("--seeds")?;
                let parsed = range.split_once("..").and_then(|(a, b)| {
                    Some(a.trim().parse::<u64>().ok()?..b.trim().parse::<u64>().ok()?)
                });
                match parsed {
                    Some(r) if !r.is_empty() => seeds = Some(r),
                    _ => {
                        return Err(format!(
                            "--seeds takes a range of seeds like 0..16 (the end excluded), got `{range}`"
                        ))
                    }
                }
            }
            "--plot" => plot = Some(PathBuf::from(value("--plot")?)),
            "--clients" => {
                let list = value("--clients")?;
                let parsed: Result<Vec<_>, _> = list.split(',').map(str::parse).collect();
                clients = Some(parsed?);
            }
            "-h" | "--help" => return Err(USAGE.to_string()),
            flag if flag.starts_with('-') => return Err(format!("unknown flag `{flag}`\n{USAGE}")),
            path if scenario.is_none() => scenario = Some(PathBuf::from(path)),
            extra => return Err(format!("unexpected argument `{extra}`\n{USAGE}")),
        }
    }
    let no_arguments = scenario.is_none() && policy.is_none() && factors.is_none() && !compare;
    let scenario = scenario.unwrap_or(default_scenario);
    let policies = match (policy, compare || no_arguments || factors.is_some()) {
        (Some(p), false) => vec![p],
        (Some(_), true) if compare => {
            return Err("--policy and --compare exclude each other".into())
        }
        (Some(p), true) => vec![p],
        (None, true) => PolicyKind::ALL.to_vec(),
        (None, false) => vec![PolicyKind::Shed],
    };
    if seeds.is_some() && (algorithms || plot.is_some() || policy.is_some() || compare) {
        return Err(
            "--seeds compares the shed policy with both anchors; it takes --sweep and --json only"
                .into(),
        );
    }
    if plot.is_some() && factors.is_none() {
        return Err("--plot draws a sweep: add --sweep 0.5,1,2,3".into());
    }
    Ok(Args {
        scenario,
        policies,
        factors: factors.unwrap_or_else(|| vec![1.0]),
        json,
        plot,
        algorithms,
        seeds,
        clients,
    })
}

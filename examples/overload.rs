//! The overload lab: offered load above capacity, with and without
//! shedding, in virtual time.
//!
//! ```text
//! cargo run --release --example overload                     # seed-asyncio, every policy
//! cargo run --release --example overload -- examples/scenarios/checkout.toml --policy shed
//! cargo run --release --example overload -- --sweep 0.5,1,2,3 --plot sweep.svg
//! cargo run --release --example overload -- --compare --json
//! cargo run --release --example overload -- examples/scenarios/anchor.toml --sweep 1,1.5 --seeds 0..16
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use shed_lab::{report, PolicyKind, Report, Scenario};

const USAGE: &str = "usage: overload [SCENARIO.toml] [--policy none|reject-when-full|queue-wait|shed] [--compare] [--algorithms] [--sweep 0.5,1,2,3] [--seeds 0..16] [--json] [--plot FILE.svg]";

struct Args {
    scenario: PathBuf,
    policies: Vec<PolicyKind>,
    factors: Vec<f64>,
    json: bool,
    plot: Option<PathBuf>,
    algorithms: bool,
    seeds: Option<std::ops::Range<u64>>,
}

fn parse_args() -> Result<Args, String> {
    let mut scenario = None;
    let mut policy = None;
    let mut compare = false;
    let mut factors = None;
    let mut json = false;
    let mut plot = None;
    let mut algorithms = false;
    let mut seeds = None;
    let mut args = std::env::args().skip(1);
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
            "-h" | "--help" => return Err(USAGE.to_string()),
            flag if flag.starts_with('-') => return Err(format!("unknown flag `{flag}`\n{USAGE}")),
            path if scenario.is_none() => scenario = Some(PathBuf::from(path)),
            extra => return Err(format!("unexpected argument `{extra}`\n{USAGE}")),
        }
    }
    let no_arguments = scenario.is_none() && policy.is_none() && factors.is_none() && !compare;
    let scenario = scenario.unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/scenarios/seed-asyncio.toml")
    });
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
    })
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let scenario = match Scenario::from_file(&args.scenario) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(seeds) = args.seeds.clone() {
        let rows = shed_lab::seeds::across_seeds(&scenario, &args.factors, seeds.clone());
        if args.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&rows).expect("rows serialise")
            );
        } else {
            println!(
                "{}: the shed policy against the better anchor, seeds {}..{}\n",
                scenario.name, seeds.start, seeds.end
            );
            print!("{}", shed_lab::seeds::table(&rows));
        }
        return ExitCode::SUCCESS;
    }
    if args.algorithms {
        let reports: Vec<Report> = args
            .factors
            .iter()
            .flat_map(|&f| shed_lab::compare_algorithms(&scenario, f))
            .collect();
        if args.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&reports).expect("reports serialise")
            );
        } else {
            println!(
                "{}: adaptive algorithms under the shed policy\n",
                scenario.name
            );
            print!("{}", report::algorithm_table(&reports));
        }
        return ExitCode::SUCCESS;
    }
    let reports: Vec<Report> = shed_lab::sweep(&scenario, &args.policies, &args.factors);

    if args.json {
        let value = if reports.len() == 1 {
            serde_json::to_value(&reports[0])
        } else {
            serde_json::to_value(&reports)
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&value.expect("reports serialise")).unwrap()
        );
    } else {
        let offered: f64 = scenario.traffic.iter().map(|t| t.rps).sum();
        println!(
            "{}: {:.0} rps offered to a capacity of {:.0} rps ({} slots), {} s simulated\n",
            scenario.name,
            offered,
            scenario.capacity_rps(),
            scenario.limiter.capacity,
            scenario.seconds
        );
        print!("{}", report::table(&reports));
        if reports.len() == 1 || scenario.traffic.len() > 1 {
            for r in &reports {
                println!("\n{} at {}x, per class:", r.policy, r.factor);
                print!("{}", report::class_table(r));
            }
        }
    }
    if let Some(path) = &args.plot {
        if let Err(e) = shed_lab::plot::svg(&reports, path) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        eprintln!("wrote {}", path.display());
    }
    ExitCode::SUCCESS
}

//! The defaults grid: services nobody configured `shed` for (see
//! `shed_lab::grid`), under the library's defaults, tower's reject-when-full,
//! the best hand-tuned preset and `shed` told the shape, worst (and mean)
//! over the seeds.
//!
//! ```text
//! cargo run --release -p shed-lab --example grid                 # seeds 0..8, every contender
//! cargo run --release -p shed-lab --example grid -- --seeds 0..2 --only defaults --json
//! cargo run --release -p shed-lab --example grid -- --seeds 0..32 --only defaults --goals   # runs meeting each goal
//! cargo run --release -p shed-lab --example grid -- --seeds 0..16 --only defaults --goals --slowdown-at 7
//! cargo run --release -p shed-lab --example grid -- --holdout --only defaults   # shapes the defaults were not tuned on
//! cargo run --release -p shed-lab --example grid -- --tails --only defaults   # the grid's calls of varying length with a heavy tail
//! cargo run --release -p shed-lab --example grid -- --mixed --only defaults   # calls that are cache hits and misses
//! cargo run --release -p shed-lab --example grid -- --seeds 0..32 --only defaults --goals --twice   # a second slowdown at 20 s
//! cargo run --release -p shed-lab --example grid -- --trace --windows --seeds 0..1 --only defaults --shape ps-16
//! ```
//!
//! `--windows` (with `--trace`) prints each window the default limit closed
//! in a run, before the run's seconds: the `shed::adaptive` debug event the
//! README's *Watching it learn* describes.

use std::fmt;
use std::process::ExitCode;

use shed_lab::grid::{self, Contender, Schedule};

const USAGE: &str =
    "usage: grid [--seeds 0..8] [--only defaults|old-defaults|tower|hand-tuned|informed] [--shape NAME-PREFIX] [--slowdown-at SECONDS] [--twice] [--holdout | --tails | --mixed] [--json] [--trace [--windows] | --goals]";

fn main() -> ExitCode {
    let mut seeds = 0..8;
    let mut contenders = Contender::ALL.to_vec();
    // The set of shapes named (its flag, its shapes, its table's name):
    // the grid unless one of the others is.
    let mut set: Option<(String, &[grid::Shape], &str)> = None;
    let mut prefix = None;
    let mut json = false;
    let mut trace = false;
    let mut windows = false;
    let mut goals = false;
    let mut schedule = Schedule::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        // Flags stand alone; options take the next argument.
        match arg.as_str() {
            "--trace" => {
                trace = true;
                continue;
            }
            "--goals" => {
                goals = true;
                continue;
            }
            "--windows" => {
                windows = true;
                continue;
            }
            "--json" => {
                json = true;
                continue;
            }
            "--twice" => {
                schedule.twice = true;
                continue;
            }
            "--holdout" | "--tails" | "--mixed" => {
                let (shapes, name) = match arg.as_str() {
                    "--holdout" => (&grid::HOLDOUT[..], "holdout grid"),
                    "--tails" => (&grid::TAILS[..], "heavy-tail grid"),
                    _ => (&grid::MIXED[..], "mixed-calls grid"),
                };
                if let Some((other, ..)) = set.replace((arg.clone(), shapes, name)) {
                    eprintln!("{other} and {arg} do not go together\n{USAGE}");
                    return ExitCode::from(2);
                }
                continue;
            }
            _ => {}
        }
        let value = args.next();
        match (arg.as_str(), value.as_deref()) {
            ("--seeds", Some(range)) => {
                match range
                    .split_once("..")
                    .and_then(|(a, b)| Some(a.parse().ok()?..b.parse().ok()?))
                {
                    Some(r) if !std::ops::Range::<u64>::is_empty(&r) => seeds = r,
                    _ => {
                        eprintln!("--seeds takes a range like 0..8, got `{range}`\n{USAGE}");
                        return ExitCode::from(2);
                    }
                }
            }
            ("--only", Some(name)) => {
                let Some(c) = Contender::ALL.into_iter().find(|c| match name {
                    "defaults" => *c == Contender::Defaults,
                    "old-defaults" => *c == Contender::OldDefaults,
                    "tower" => *c == Contender::Tower,
                    "hand-tuned" => *c == Contender::HandTuned,
                    "informed" => *c == Contender::Informed,
                    _ => false,
                }) else {
                    eprintln!("unknown contender `{name}`\n{USAGE}");
                    return ExitCode::from(2);
                };
                contenders = vec![c];
            }
            ("--slowdown-at", Some(at)) => match at.parse() {
                // The cold start's two settling seconds come first, and
                // the worst second is read from the third on.
                Ok(second) if second >= 3 => schedule.slowdown_at = second,
                _ => {
                    eprintln!("--slowdown-at takes a whole second from 3 on, got `{at}`\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            ("--shape", Some(name)) => prefix = Some(name.to_owned()),
            _ => {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let (all, grid_name) = set.map_or((&grid::SHAPES[..], "defaults grid"), |(_, shapes, name)| {
        (shapes, name)
    });
    let mut shapes = all.to_vec();
    if let Some(prefix) = prefix {
        shapes.retain(|s| s.name().starts_with(&prefix));
        if shapes.is_empty() {
            let names: Vec<String> = all.iter().map(|s| s.name()).collect();
            eprintln!(
                "no shape's name starts with `{prefix}` (shapes: {})\n{USAGE}",
                names.join(", ")
            );
            return ExitCode::from(2);
        }
    }
    if trace && goals {
        eprintln!("--trace and --goals do not go together\n{USAGE}");
        return ExitCode::from(2);
    }
    if windows && !trace {
        eprintln!("--windows goes with --trace\n{USAGE}");
        return ExitCode::from(2);
    }
    // The lab runs each scenario on this thread (a current-thread runtime).
    let _windows = windows.then(|| tracing::subscriber::set_default(WindowPrinter));
    if trace {
        for shape in &shapes {
            for factor in grid::FACTORS {
                for &contender in &contenders {
                    for seed in seeds.clone() {
                        print!("{}", grid::trace(shape, factor, contender, seed, schedule));
                    }
                }
            }
        }
        return ExitCode::SUCCESS;
    }
    if goals {
        let counts = grid::count_goals(&shapes, &contenders, seeds.clone(), schedule);
        let heading = format!(
            "{grid_name}, runs meeting each goal, one per seed of {}..{}{}",
            seeds.start,
            seeds.end,
            slowdown_note(schedule)
        );
        emit(json, &counts, &heading, || grid::goal_table(&counts));
        return ExitCode::SUCCESS;
    }
    let cells = grid::run_grid(
        &shapes,
        &grid::FACTORS,
        &contenders,
        seeds.clone(),
        schedule,
    );
    let slowdowns: Vec<String> = schedule
        .slowdowns()
        .iter()
        .map(|(slowed, recovered)| format!("from {slowed} s to {recovered} s"))
        .collect();
    let heading = format!(
        "{grid_name}, worst and mean of seeds {}..{} ({} s from a cold start, 4x slowdown {})",
        seeds.start,
        seeds.end,
        schedule.seconds(),
        slowdowns.join(" and "),
    );
    emit(json, &cells, &heading, || grid::table(&cells));
    ExitCode::SUCCESS
}

/// Prints `value` as JSON, or `heading` and the table `table` makes.
fn emit<T: serde::Serialize + ?Sized>(
    json: bool,
    value: &T,
    heading: &str,
    table: impl FnOnce() -> String,
) {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(value).expect("the grid serialises")
        );
    } else {
        println!("{heading}\n");
        print!("{}", table());
    }
}

/// The goal table's note of a schedule other than the grid's one
/// slowdown at 6 s.
fn slowdown_note(schedule: Schedule) -> String {
    let starts: Vec<String> = schedule
        .slowdowns()
        .iter()
        .map(|(slowed, _)| format!("{slowed} s"))
        .collect();
    match starts.as_slice() {
        _ if schedule == Schedule::default() => String::new(),
        [one] => format!(" (slowdown from {one})"),
        many => format!(" (slowdowns from {})", many.join(" and ")),
    }
}

/// Prints each `shed::adaptive` window event as a line of its fields.
struct WindowPrinter;

impl tracing::Subscriber for WindowPrinter {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        metadata.target() == "shed::adaptive"
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Fields(String);
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
                if field.name() != "message" {
                    self.0 += &format!(" {}={value:?}", field.name());
                }
            }
            fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
                self.0 += &format!(" {}={value:.1}", field.name());
            }
        }
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        println!("  window{}", fields.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

//! The overload lab: offered load above capacity, with and without
//! shedding, in virtual time.
//!
//! ```text
//! cargo run --release -p shed-lab                     # seed-asyncio-defaults, every policy
//! cargo run --release -p shed-lab -- examples/scenarios/seed-asyncio.toml --compare
//! cargo run --release -p shed-lab -- examples/scenarios/checkout.toml --policy shed
//! cargo run --release -p shed-lab -- --sweep 0.5,1,2,3 --plot sweep.svg
//! cargo run --release -p shed-lab -- --compare --json
//! cargo run --release -p shed-lab -- examples/scenarios/anchor.toml --sweep 1,1.5 --seeds 0..16
//! cargo run --release -p shed-lab -- examples/scenarios/metastable.toml --policy shed --clients budget
//! cargo run --release -p shed-lab -- examples/scenarios/tenants-noisy-neighbour.toml --compare
//! ```

use std::path::Path;
use std::process::ExitCode;

use shed_lab::{report, Report, Scenario};

fn main() -> ExitCode {
    // The scenarios live in the repository's `examples/scenarios/`. The
    // demo is the seed's service as a new user meets it: shed configured
    // with nothing, the anchors tuned by hand as the seed tuned them.
    let default_scenario = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new(".."))
        .join("examples/scenarios/seed-asyncio-defaults.toml");
    let args = match shed_lab::cli::parse(std::env::args().skip(1), default_scenario) {
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
    if scenario.fleet.is_some() && args.seeds.is_none() && !args.algorithms {
        return fleet(&scenario, &args);
    }
    if let Some(seeds) = args.seeds.clone() {
        let rows = shed_lab::seeds::across_seeds(&scenario, &args.factors, seeds.clone());
        if args.json {
            print_json(&rows);
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
            print_json(&reports);
        } else {
            println!(
                "{}: adaptive algorithms under the shed policy\n",
                scenario.name
            );
            print!("{}", report::algorithm_table(&reports));
        }
        return ExitCode::SUCCESS;
    }
    if scenario.tenants.is_some() && args.plot.is_none() {
        return tenants(&scenario, &args);
    }
    if let Some(clients) = &args.clients {
        let reports: Vec<Report> = args
            .factors
            .iter()
            .flat_map(|&f| {
                shed_lab::retries::compare_clients(&scenario, &args.policies, clients, f)
            })
            .collect();
        if args.json {
            print_json(&reports);
        } else {
            println!("{}: server policy x client retry policy\n", scenario.name);
            print!("{}", shed_lab::retries::table(&reports));
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
            "{}: {:.0} rps offered to a capacity of {:.0} rps ({}), {} s simulated\n",
            scenario.name,
            offered,
            scenario.capacity_rps(),
            scenario.limiter.slots_label(),
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

/// A scenario with a `[fleet]`: every balancer, with and without its
/// retry, under each policy asked for.
fn fleet(scenario: &Scenario, args: &shed_lab::cli::Args) -> ExitCode {
    let reports: Vec<_> = args
        .factors
        .iter()
        .flat_map(|&f| shed_lab::fleet::compare(scenario, &args.policies, f))
        .collect();
    if args.json {
        print_json(&reports);
    } else {
        let fleet = scenario.fleet.as_ref().expect("a fleet");
        let offered: f64 = scenario.traffic.iter().map(|t| t.rps).sum();
        println!(
            "{}: {:.0} rps offered to {} replicas of {:.0} rps ({} each), {} s simulated\n",
            scenario.name,
            offered,
            fleet.replicas,
            scenario.capacity_rps(),
            scenario.limiter.slots_label(),
            scenario.seconds
        );
        print!("{}", shed_lab::fleet::table(&reports));
    }
    ExitCode::SUCCESS
}

/// A scenario with `[tenants]`: each policy asked for, and `shed` once
/// more without tenant keys, with the tenants' groups.
fn tenants(scenario: &Scenario, args: &shed_lab::cli::Args) -> ExitCode {
    let reports: Vec<Report> = args
        .factors
        .iter()
        .flat_map(|&f| shed_lab::tenants::compare(scenario, &args.policies, f))
        .collect();
    if args.json {
        print_json(&reports);
    } else {
        let offered: f64 = scenario.traffic.iter().map(|t| t.rps).sum();
        println!(
            "{}: {:.0} rps offered to a capacity of {:.0} rps ({}), {} s simulated\n",
            scenario.name,
            offered,
            scenario.capacity_rps(),
            scenario.limiter.slots_label(),
            scenario.seconds
        );
        print!("{}", report::table(&reports));
        println!("\nper group of tenants:");
        print!("{}", shed_lab::tenants::table(&reports));
    }
    ExitCode::SUCCESS
}

/// Prints `value` as the `--json` output.
fn print_json(value: &impl serde::Serialize) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("reports serialise")
    );
}

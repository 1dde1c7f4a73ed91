//! The overload lab of [`shed`]: a deterministic traffic simulator.
//!
//! It drives the real limiter (through [`shed::run_guarded`], the same
//! admission that `#[shed]` expands to) with open-loop traffic in virtual
//! time (tokio's paused clock): the same scenario and seed give the same
//! numbers on any machine, and simulated seconds take milliseconds.
//!
//! ```
//! use shed_lab::{run, PolicyKind, Scenario};
//!
//! let scenario = Scenario::from_toml(r#"
//!     name = "doc"
//!     seconds = 1
//!     seed = 1
//!     [limiter]
//!     capacity = 4
//!     [[traffic]]
//!     rps = 2000            # 2.5x the capacity of 4 slots x 5 ms
//!     service = "5ms"
//!     timeout = "100ms"
//!     max_wait = "20ms"
//! "#, "doc.toml").unwrap();
//! let unshed = run(&scenario, PolicyKind::None, 1.0);
//! let shed = run(&scenario, PolicyKind::Shed, 1.0);
//! assert!(shed.total.goodput_rps > 3.0 * unshed.total.goodput_rps);
//! assert_eq!(shed.total.late, 0);
//! ```

pub mod cli;
mod engine;
pub mod grid;
pub mod plot;
pub mod report;
pub mod retries;
pub mod scenario;
pub mod seeds;
mod server;

pub use engine::{direction_changes, run, shed_config, PolicyKind};
pub use report::{Counts, Report};
pub use scenario::{Scenario, ScenarioError};

/// Runs `scenario` under every policy, on the same traffic.
pub fn compare(scenario: &Scenario, factor: f64) -> Vec<Report> {
    PolicyKind::ALL
        .iter()
        .map(|&policy| run(scenario, policy, factor))
        .collect()
}

/// The adaptive algorithms `--algorithms` compares.
pub const ALGORITHMS: [&str; 4] = ["static", "aimd", "vegas", "gradient2"];

/// Every algorithm an `[adaptive]` table may name: those of
/// [`ALGORITHMS`] and `auto`, the library's default limit (which a scenario
/// without `[limiter]` and `[adaptive]` runs anyway).
pub const KNOWN_ALGORITHMS: [&str; 5] = ["static", "auto", "aimd", "vegas", "gradient2"];

/// Runs `scenario` under the `shed` policy once per adaptive algorithm
/// (the scenario's `[adaptive]` table, with only the algorithm changed;
/// AIMD keeps the scenario's target or uses 40 ms).
pub fn compare_algorithms(scenario: &Scenario, factor: f64) -> Vec<Report> {
    ALGORITHMS
        .iter()
        .map(|algorithm| {
            let mut variant = scenario.clone();
            let mut adaptive = variant
                .adaptive
                .clone()
                .unwrap_or(scenario::AdaptiveConfig {
                    algorithm: String::new(),
                    min: 1,
                    max: 1000,
                    initial: None,
                    window: None,
                    target: None,
                });
            adaptive.algorithm = algorithm.to_string();
            if adaptive.target.is_none() {
                adaptive.target = Some(scenario::Dur(std::time::Duration::from_millis(40)));
            }
            variant.adaptive = Some(adaptive);
            run(&variant, PolicyKind::Shed, factor)
        })
        .collect()
}

/// Runs `scenario` under each policy at each rate factor.
pub fn sweep(scenario: &Scenario, policies: &[PolicyKind], factors: &[f64]) -> Vec<Report> {
    factors
        .iter()
        .flat_map(|&factor| {
            policies
                .iter()
                .map(move |&policy| run(scenario, policy, factor))
        })
        .collect()
}

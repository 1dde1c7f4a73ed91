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

mod admission;
pub mod algorithm;
pub mod cli;
mod engine;
pub mod fleet;
pub mod grid;
pub mod plot;
pub mod report;
pub mod retries;
pub mod scenario;
pub mod seeds;
mod server;
pub mod tenants;

pub use algorithm::Algorithm;
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

/// Runs `scenario` under the `shed` policy once per adaptive algorithm
/// of [`Algorithm::COMPARED`] (the scenario's `[adaptive]` table, with
/// only the algorithm changed; AIMD keeps the scenario's target or uses
/// [`algorithm::AIMD_TARGET`]).
pub fn compare_algorithms(scenario: &Scenario, factor: f64) -> Vec<Report> {
    Algorithm::COMPARED
        .iter()
        .map(|algorithm| {
            let mut variant = scenario.clone();
            let mut adaptive = variant
                .adaptive
                .clone()
                .unwrap_or(scenario::AdaptiveConfig {
                    algorithm: String::new(),
                    min: shed::adaptive::AdaptiveLimit::DEFAULT_LIMITS.0,
                    max: shed::adaptive::AdaptiveLimit::DEFAULT_LIMITS.1,
                    initial: None,
                    window: None,
                    target: None,
                });
            adaptive.algorithm = algorithm.name().to_string();
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

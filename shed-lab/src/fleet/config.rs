//! The `[fleet]` table: replicas behind a balancer, and what happens to
//! them.
//!
//! ```toml
//! [fleet]
//! replicas = 4                  # each with the scenario's limiter and server
//! balancer = "least-outstanding" # round-robin | random | least-outstanding | p2c | weighted
//! weights = "orca"              # weighted: orca (Envoy's client-side WRR) | agent-check (HAProxy)
//! refresh = "500ms"             # how often the balancer reads reports and readiness
//! delay = "100ms"               # how late what it reads takes effect
//! retry = true                  # a refused request is tried once on another replica
//! readiness = true              # not-ready replicas (shed's Readiness) leave the rotation
//! detect = "1s"                 # how long a lost replica goes unnoticed
//! cold = "3s"                   # a started replica is slow for this long ...
//! cold_factor = 4.0             # ... starting this many times slower
//!
//! [[fleet.event]]
//! at = "2s"
//! replica = 3                   # from 0
//! action = "slow"               # slow | lose | stop | start
//! factor = 4.0                  # slow: multiplies its service times
//! ```

use std::time::Duration;

use serde::Deserialize;

use crate::scenario::Dur;

/// How the balancer picks a replica for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum BalancerKind {
    /// Each replica in turn.
    #[default]
    RoundRobin,
    /// A replica drawn at random.
    Random,
    /// The replica with the fewest requests the balancer has outstanding
    /// on it (HAProxy's `leastconn`, Envoy's least request with all
    /// replicas compared).
    LeastOutstanding,
    /// Power of two choices: the less busy of two replicas drawn at random
    /// (Envoy's least request default).
    P2c,
    /// Weighted round robin by the load the replicas report (see
    /// [`Weights`]).
    Weighted,
}

impl BalancerKind {
    /// Every balancer, in the order comparisons show them.
    pub const ALL: [BalancerKind; 5] = [
        BalancerKind::RoundRobin,
        BalancerKind::Random,
        BalancerKind::LeastOutstanding,
        BalancerKind::P2c,
        BalancerKind::Weighted,
    ];

    /// The name used in scenario files and results.
    pub fn name(self) -> &'static str {
        match self {
            BalancerKind::RoundRobin => "round-robin",
            BalancerKind::Random => "random",
            BalancerKind::LeastOutstanding => "least-outstanding",
            BalancerKind::P2c => "p2c",
            BalancerKind::Weighted => "weighted",
        }
    }
}

/// What the `weighted` balancer reads from each replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Weights {
    /// The ORCA `endpoint-load-metrics` header in its TEXT form, weighted
    /// as Envoy's client-side weighted round robin does:
    /// `rps / (utilization + eps / rps)`.
    #[default]
    Orca,
    /// HAProxy's agent check: `up NN%` sets the weight, `drain` takes the
    /// replica out of the rotation.
    AgentCheck,
}

/// What a fleet event does to its replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Its service times are multiplied by `factor` (1.0 restores them).
    Slow,
    /// It dies: requests in progress on it fail, and new ones are refused
    /// at connection until the balancer notices (after `detect`).
    Lose,
    /// A graceful stop: it leaves the rotation at once, finishes what it
    /// has, and is down until started.
    Stop,
    /// It starts (again): a new process with a fresh limiter, cold for
    /// `cold`, back in the rotation at once.
    Start,
}

/// A `[[fleet.event]]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetEvent {
    /// When, from the start of the measured window.
    pub at: Dur,
    /// Which replica, from 0.
    pub replica: usize,
    /// What happens to it.
    pub action: Action,
    /// For `slow`: the factor on its service times.
    pub factor: Option<f64>,
}

/// The `[fleet]` table. See the [module docs](self).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetConfig {
    /// How many replicas, each with the scenario's `[limiter]` and
    /// `[server]`; the scenario's traffic is the whole fleet's.
    pub replicas: usize,
    /// How the balancer picks a replica.
    #[serde(default)]
    pub balancer: BalancerKind,
    /// What the `weighted` balancer reads.
    #[serde(default)]
    pub weights: Weights,
    /// How often the balancer reads the replicas' load reports and
    /// readiness (default 500 ms).
    pub refresh: Option<Dur>,
    /// How long after a read its values take effect (default 100 ms).
    pub delay: Option<Dur>,
    /// Whether a refused request is tried once more on another replica
    /// (HAProxy's `retry-on 503` with `option redispatch`).
    #[serde(default)]
    pub retry: bool,
    /// Whether replicas that shed's `Readiness` calls not ready leave the
    /// rotation.
    #[serde(default)]
    pub readiness: bool,
    /// How long a lost replica goes unnoticed by the balancer's health
    /// check (default 1 s).
    pub detect: Option<Dur>,
    /// How long a started replica stays cold (default none).
    pub cold: Option<Dur>,
    /// How much slower a replica is when it has just started; the factor
    /// falls linearly to 1 over `cold` (default 4).
    pub cold_factor: Option<f64>,
    /// What happens to the replicas over time.
    #[serde(default, rename = "event")]
    pub events: Vec<FleetEvent>,
}

impl FleetConfig {
    /// How often the balancer reads reports and readiness.
    pub fn refresh(&self) -> Duration {
        self.refresh.map_or(Duration::from_millis(500), |d| d.0)
    }

    /// How late what the balancer reads takes effect.
    pub fn delay(&self) -> Duration {
        self.delay.map_or(Duration::from_millis(100), |d| d.0)
    }

    /// How long a lost replica goes unnoticed.
    pub fn detect(&self) -> Duration {
        self.detect.map_or(Duration::from_secs(1), |d| d.0)
    }

    /// The service-time factor of a replica `since_start` after it
    /// started: `cold_factor` at first, falling linearly to 1 over `cold`.
    pub fn cold_factor_at(&self, since_start: Duration) -> f64 {
        let Some(cold) = self.cold.map(|d| d.0).filter(|c| !c.is_zero()) else {
            return 1.0;
        };
        let left = 1.0 - since_start.as_secs_f64() / cold.as_secs_f64();
        1.0 + (self.cold_factor.unwrap_or(4.0) - 1.0) * left.max(0.0)
    }

    /// What is wrong with the table, in the scenario's terms.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !(1..=64).contains(&self.replicas) {
            problems.push(format!(
                "`fleet.replicas` must be from 1 to 64, got {}",
                self.replicas
            ));
        }
        if self.refresh().is_zero() {
            problems.push("`fleet.refresh` must be longer than zero".into());
        }
        if self
            .cold_factor
            .is_some_and(|f| !(f >= 1.0 && f.is_finite()))
        {
            problems.push("`fleet.cold_factor` must be at least 1".into());
        }
        for (i, e) in self.events.iter().enumerate() {
            let at = format!("fleet event #{}", i + 1);
            if e.replica >= self.replicas {
                problems.push(format!(
                    "{at}: `replica` = {} but replicas are numbered 0 to {}",
                    e.replica,
                    self.replicas.saturating_sub(1)
                ));
            }
            match (e.action, e.factor) {
                (Action::Slow, Some(f)) if f > 0.0 && f.is_finite() => {}
                (Action::Slow, _) => {
                    problems.push(format!("{at}: `slow` needs a positive `factor`"))
                }
                (_, Some(_)) => problems.push(format!("{at}: only `slow` takes a `factor`")),
                (_, None) => {}
            }
        }
        problems
    }
}

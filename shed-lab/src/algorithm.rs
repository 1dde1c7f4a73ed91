//! The adaptive limit algorithms the lab runs: one list, each named as the
//! runtime names it ([`LimitAlgorithm::name`]), each built with the
//! runtime's own defaults.

use std::time::Duration;

use shed::adaptive::{AdaptiveLimit, Aimd, Auto, Fixed, Gradient2, LimitAlgorithm, Vegas, Window};

/// AIMD's latency target when a scenario gives none (the runtime's AIMD
/// has no default target: it depends on the service).
pub const AIMD_TARGET: Duration = Duration::from_millis(40);

/// An adaptive limit algorithm of the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// The library's default limit ([`Auto`]).
    Auto,
    /// A limit that never moves: the baseline.
    Fixed,
    /// Additive increase, multiplicative decrease.
    Aimd,
    /// Vegas.
    Vegas,
    /// Gradient2.
    Gradient2,
}

impl Algorithm {
    /// Every algorithm an `[adaptive]` table may name.
    pub const ALL: [Algorithm; 5] = [
        Algorithm::Auto,
        Algorithm::Fixed,
        Algorithm::Aimd,
        Algorithm::Vegas,
        Algorithm::Gradient2,
    ];

    /// What `--algorithms` compares: the fixed baseline and the classic
    /// algorithms (`auto` is what a scenario without `[limiter]` and
    /// `[adaptive]` runs anyway).
    pub const COMPARED: [Algorithm; 4] = [
        Algorithm::Fixed,
        Algorithm::Aimd,
        Algorithm::Vegas,
        Algorithm::Gradient2,
    ];

    /// The algorithm, with the runtime's defaults (AIMD with `aimd_target`).
    fn build(self, aimd_target: Duration) -> Box<dyn LimitAlgorithm> {
        match self {
            Algorithm::Auto => Box::new(Auto::default()),
            Algorithm::Fixed => Box::new(Fixed),
            Algorithm::Aimd => Box::new(Aimd::new(aimd_target)),
            Algorithm::Vegas => Box::new(Vegas::default()),
            Algorithm::Gradient2 => Box::new(Gradient2::default()),
        }
    }

    /// A controller running this algorithm, with the runtime's default
    /// bounds and window.
    pub fn controller(self, aimd_target: Option<Duration>) -> AdaptiveLimit {
        AdaptiveLimit::new(Boxed(self.build(aimd_target.unwrap_or(AIMD_TARGET))))
    }

    /// The runtime's name for it.
    pub fn name(self) -> &'static str {
        self.build(AIMD_TARGET).name()
    }

    /// The algorithm named `name`; `static` is the former name of `fixed`.
    pub fn parse(name: &str) -> Option<Algorithm> {
        if name == "static" {
            return Some(Algorithm::Fixed);
        }
        Algorithm::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The names of [`ALL`](Algorithm::ALL), for messages.
    pub fn names() -> String {
        Algorithm::ALL.map(Algorithm::name).join(", ")
    }
}

/// A boxed algorithm, as [`AdaptiveLimit::new`] takes a sized one.
struct Boxed(Box<dyn LimitAlgorithm>);

impl LimitAlgorithm for Boxed {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn next_limit(&mut self, window: &Window) -> f64 {
        self.0.next_limit(window)
    }

    fn probe_limit(&mut self, limit: f64) -> Option<f64> {
        self.0.probe_limit(limit)
    }
}

//! The slots an admitted call holds, given back when it is dropped.

use tokio::time::Instant;

use super::Held;
use crate::policy::PolicyStats;

/// Slots held by an admitted call. Dropping it gives them back: when the
/// call completes, when it panics (unwinding drops it), and when the
/// call's future is dropped at any await point.
#[must_use = "the slots are given back as soon as the permit is dropped"]
pub struct Permit {
    held: Option<Held>,
    class: usize,
    weight: u64,
    /// When the call started, if its service time is measured.
    start: Option<Instant>,
    stats: Option<&'static PolicyStats>,
    /// The caller's deadline: the call is counted as served in time or
    /// late when it ends.
    deadline: Option<Instant>,
}

impl Permit {
    pub(crate) fn new(
        held: Held,
        class: usize,
        weight: u64,
        start: Option<Instant>,
        stats: Option<&'static PolicyStats>,
    ) -> Self {
        Self {
            held: Some(held),
            class,
            weight,
            start,
            stats,
            deadline: None,
        }
    }

    pub(crate) fn with_deadline(mut self, deadline: Option<Instant>) -> Self {
        self.deadline = deadline;
        self
    }

    /// A permit that holds nothing (mode `off`).
    pub(crate) fn bypass() -> Self {
        Self {
            held: None,
            class: 0,
            weight: 0,
            start: None,
            stats: None,
            deadline: None,
        }
    }

    /// Gives the slots back, counting the request as answered in time or
    /// late after `latency` from its arrival (for integrations that see
    /// the response end, such as the HTTP layer's response bodies).
    pub fn finish(mut self, latency: std::time::Duration, in_time: bool) {
        self.deadline = None;
        if let Some(held) = &self.held {
            held.core.classes[self.class]
                .counters
                .count_served(Some(latency), in_time);
        }
    }

    /// The slots this permit holds (0 when the limiter is bypassed).
    pub fn weight(&self) -> u64 {
        self.weight
    }
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit")
            .field("class", &self.class)
            .field("weight", &self.weight)
            .finish_non_exhaustive()
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let Some(held) = self.held.take() else {
            return;
        };
        if let Some(deadline) = self.deadline {
            let in_time = Instant::now() <= deadline;
            held.core.classes[self.class]
                .counters
                .count_served(None, in_time);
        }
        if let Some(start) = self.start {
            let took = start.elapsed();
            if let Some(stats) = self.stats {
                stats.observe(took);
            }
            held.core.classes[self.class].counters.record_service(took);
            held.window.record(took, held.core.snapshot().in_flight);
            if let Some(auto) = &held.auto {
                auto.completed(&held, start + took);
            }
        }
        held.core.release(self.class, self.weight);
    }
}

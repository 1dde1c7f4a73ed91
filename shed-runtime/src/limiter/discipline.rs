//! How the wait queue is served under sustained overload: CoDel-style
//! dropping of waiters once the queue stands, and adaptive LIFO.
//!
//! Serving the oldest waiter first serves the caller most likely to have
//! left. Both controls are opt-in per limiter (see
//! [`Config::codel`](crate::Config::codel) and
//! [`Config::adaptive_lifo`](crate::Config::adaptive_lifo)).

use std::time::Duration;

use tokio::time::Instant;

/// Parameters of the standing-queue controls.
///
/// A queue *stands* when it has overflowed recently: within the last
/// `interval`, a waiter ran out of its budget or deadline, was dropped, or
/// found the queue full, or fresh callers piled up behind one that had
/// already waited six times the target. That is the point
/// where serving in arrival order stops working: the oldest callers are
/// already being lost. While the queue stands, CoDel refuses waiters older
/// than twice `target` (reason `overload`) instead of serving them late,
/// and adaptive LIFO serves the newest first. Bursts that the queue
/// absorbs within budget never make it stand, so they are served in order
/// and nothing is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Codel {
    /// The acceptable standing queue wait (default 5 ms).
    pub target: Duration,
    /// How long an overflow keeps the queue standing (default 100 ms).
    pub interval: Duration,
}

impl Default for Codel {
    fn default() -> Self {
        Self {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
        }
    }
}

/// How the queue is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Discipline {
    /// How a standing queue is recognised.
    pub(crate) detector: Codel,
    /// Refuse waiters older than twice the target while the queue stands.
    pub(crate) codel_drops: bool,
    /// Serve the newest waiter first while the queue stands.
    pub(crate) lifo: bool,
}

impl Discipline {
    /// Whether the standing-queue detector must run.
    pub(crate) fn watches(&self) -> Option<&Codel> {
        (self.codel_drops || self.lifo).then_some(&self.detector)
    }
}

/// The standing-queue state, kept under the queue lock.
#[derive(Debug, Default)]
pub(crate) struct CodelState {
    last_overflow: Option<Instant>,
    standing: bool,
}

impl CodelState {
    /// A waiter was lost to time or room at `now`.
    pub(crate) fn overflowed(&mut self, now: Instant) {
        self.last_overflow = Some(now);
    }

    /// Re-evaluates whether the queue stands.
    pub(crate) fn update(&mut self, codel: &Codel, now: Instant) {
        self.standing = self
            .last_overflow
            .is_some_and(|at| now.saturating_duration_since(at) < codel.interval);
    }

    /// Whether a waiter that has waited `waited` should be dropped now.
    pub(crate) fn drops(&self, codel: &Codel, waited: Duration) -> bool {
        self.standing && waited > 2 * codel.target
    }

    pub(crate) fn is_standing(&self) -> bool {
        self.standing
    }
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_queue_stands_from_an_overflow_until_an_interval_without_one() {
        let codel = Codel::default();
        let start = Instant::now();
        let mut state = CodelState::default();
        state.update(&codel, start);
        assert!(!state.is_standing(), "a queue alone is a burst");
        state.overflowed(start);
        state.update(&codel, start + Duration::from_millis(1));
        assert!(state.is_standing());
        assert!(state.drops(&codel, Duration::from_millis(11)));
        assert!(!state.drops(&codel, Duration::from_millis(10)));
        state.update(&codel, start + codel.interval);
        assert!(!state.is_standing(), "no overflow for an interval");
    }
}

//! How the wait queue is served under sustained overload: CoDel-style
//! dropping of waiters once the queue stands, and adaptive LIFO.
//!
//! Serving the oldest waiter first serves the caller most likely to have
//! left. Both controls are opt-in per limiter (see
//! [`Config::codel`](crate::Config::codel) and
//! [`Config::adaptive_lifo`](crate::Config::adaptive_lifo)).

use std::time::Duration;

use tokio::time::Instant;

use super::load::{LoadMeter, Reading};

/// Parameters of the standing-queue controls.
///
/// A queue *stands* when serving it in arrival order has started to lose
/// callers and more calls arrive than the slots can serve:
/// - within the last `interval`, a waiter ran out of its budget or
///   deadline, was dropped, or found the queue full, or fresh callers piled
///   up behind one that had already waited six times the target; and
/// - the offered load, measured over windows of `interval` and smoothed
///   over about five of them, is at least 1.05 times what the limiter
///   serves when saturated. (Until the limiter has been seen saturated,
///   the first condition alone decides.)
///
/// It keeps standing while the measured load stays at or above 1.02.
///
/// While the queue stands, CoDel refuses waiters older than twice `target`
/// (reason `overload`) instead of serving them late, and adaptive LIFO
/// serves the newest first. Bursts that the queue absorbs within budget
/// never make it stand, so they are served in order and nothing is
/// refused; nor does a queue at exactly the capacity, which grows and
/// shrinks by chance and would lose calls the slots could still serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Codel {
    /// The acceptable standing queue wait (default 5 ms).
    pub target: Duration,
    /// How long an overflow keeps the queue standing (default 100 ms).
    pub interval: Duration,
}

impl Codel {
    /// CoDel with the given standing-queue `target` and `interval`.
    pub const fn new(target: Duration, interval: Duration) -> Self {
        Self { target, interval }
    }
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Discipline {
    /// How a standing queue is recognised.
    pub(crate) detector: Codel,
    /// Refuse waiters older than twice the target while the queue stands.
    pub(crate) codel_drops: bool,
    /// Serve the newest waiter first while the queue stands.
    pub(crate) lifo: bool,
    /// Serve a class's retries after its first attempts.
    pub(crate) retries_yield: bool,
}

impl Default for Discipline {
    fn default() -> Self {
        Self {
            detector: Codel::default(),
            codel_drops: false,
            lifo: false,
            retries_yield: true,
        }
    }
}

impl Discipline {
    /// Whether the standing-queue detector must run.
    pub(crate) fn watches(&self) -> Option<&Codel> {
        (self.codel_drops || self.lifo).then_some(&self.detector)
    }
}

/// The measured load at which a queue that overflows starts standing.
const ENTER_LOAD: f64 = 1.05;
/// The measured load below which it stops.
const EXIT_LOAD: f64 = 1.02;

/// The standing-queue state, kept under the queue lock.
#[derive(Debug, Default)]
pub(crate) struct CodelState {
    last_overflow: Option<Instant>,
    standing: bool,
    pub(crate) load: LoadMeter,
}

impl CodelState {
    /// A waiter was lost to time or room at `now`.
    pub(crate) fn overflowed(&mut self, now: Instant) {
        self.last_overflow = Some(now);
    }

    /// Re-evaluates whether the queue stands.
    pub(crate) fn update(&mut self, codel: &Codel, now: Instant, reading: Reading) {
        self.load.observe(codel.interval, now, reading);
        let overflowed = self
            .last_overflow
            .is_some_and(|at| now.saturating_duration_since(at) < codel.interval);
        self.standing = match self.load.load() {
            None => overflowed,
            Some(load) if self.standing => load >= EXIT_LOAD,
            Some(load) => overflowed && load >= ENTER_LOAD,
        };
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

    fn idle() -> Reading {
        Reading {
            admitted: 0,
            queued: 0,
            capacity: 8,
        }
    }

    fn queue_of_8(admitted: u64) -> Reading {
        Reading {
            admitted,
            queued: 8,
            capacity: 8,
        }
    }

    #[test]
    fn before_any_saturation_the_queue_stands_from_an_overflow_until_an_interval_without_one() {
        let codel = Codel::default();
        let start = Instant::now();
        let mut state = CodelState::default();
        state.update(&codel, start, idle());
        assert!(!state.is_standing(), "a queue alone is a burst");
        state.overflowed(start);
        state.update(&codel, start + Duration::from_millis(1), idle());
        assert!(state.is_standing());
        assert!(state.drops(&codel, Duration::from_millis(11)));
        assert!(!state.drops(&codel, Duration::from_millis(10)));
        state.update(&codel, start + codel.interval, idle());
        assert!(!state.is_standing(), "no overflow for an interval");
    }

    /// Runs `windows` intervals in which `arrived` calls arrive, `served`
    /// are admitted and the rest refused from a queue of 8 that never
    /// drains; `overflow` marks an overflow in each.
    fn windows(
        state: &mut CodelState,
        (now, admitted): (&mut Instant, &mut u64),
        count: u32,
        (arrived, served, overflow): (u64, u64, bool),
    ) {
        let codel = Codel::default();
        for _ in 0..count {
            for _ in served..arrived {
                state.load.refused();
            }
            *admitted += served;
            *now += codel.interval;
            if overflow {
                state.overflowed(*now);
            }
            state.update(&codel, *now, queue_of_8(*admitted));
        }
    }

    #[test]
    fn an_overflow_at_the_capacity_does_not_make_the_queue_stand() {
        let (mut now, mut admitted) = (Instant::now(), 0);
        let mut state = CodelState::default();
        state.update(&Codel::default(), now, queue_of_8(admitted));
        windows(&mut state, (&mut now, &mut admitted), 10, (160, 160, true));
        assert!(!state.is_standing(), "as many arrive as are served");
    }

    #[test]
    fn sustained_overload_stands_until_the_load_falls_back() {
        let (mut now, mut admitted) = (Instant::now(), 0);
        let mut state = CodelState::default();
        state.update(&Codel::default(), now, queue_of_8(admitted));
        // 1.2x, with overflows.
        windows(&mut state, (&mut now, &mut admitted), 3, (192, 160, true));
        assert!(state.is_standing());
        // Still 1.2x, but no waiter lost for a while: keeps standing.
        windows(&mut state, (&mut now, &mut admitted), 5, (192, 160, false));
        assert!(state.is_standing(), "the load alone keeps it standing");
        // The load falls to the capacity.
        windows(&mut state, (&mut now, &mut admitted), 20, (160, 160, false));
        assert!(!state.is_standing());
    }
}

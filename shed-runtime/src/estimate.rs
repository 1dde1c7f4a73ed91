//! What a limiter learns of one guarded fn's service time: a moving
//! average that no run of outliers can move by more than a bounded factor
//! per window.
//!
//! The estimate decides deadline refusals ("the caller's time left is
//! shorter than the fn takes"), so a wrong estimate refuses calls that
//! would have made it, or admits calls that will be late. Two kinds of
//! outliers are common: calls that hold their slots long after their work
//! is done (a client reading a response slowly), and floods of refusals of
//! deadlines no service could meet. Each sample is therefore clamped to a
//! factor of the estimate at the start of the current window, and so is the
//! estimate itself: a genuine change of the service time is followed within
//! a few windows (a factor of [`FACTOR`] per window), a burst of outliers
//! moves it at most that much.

use std::sync::OnceLock;
use std::time::Duration;

use tokio::time::Instant;

use std::sync::atomic::{AtomicU64, Ordering};

/// The most the estimate moves, up or down, within one window.
const FACTOR: u64 = 2;
/// How long a window lasts.
const WINDOW: Duration = Duration::from_secs(1);
/// The weight of a new observation in the moving average: 1/8.
const EWMA_SHIFT: u32 = 3;
/// What a refusal takes off the estimate: 1/64 (see [`ServiceEstimate::decay`]).
const DECAY_SHIFT: u32 = 6;

/// One fn's learned service time on one limiter. Updated without locks;
/// concurrent updates may overwrite each other, which an estimate can
/// afford.
#[derive(Debug, Default)]
pub(crate) struct ServiceEstimate {
    /// The moving average in nanoseconds; 0 until the first observation.
    nanos: AtomicU64,
    /// The estimate when the current window began.
    anchor: AtomicU64,
    /// When the current window ends, in nanoseconds since [`epoch`]: kept
    /// as its end so that the common check, whether it ended, is an
    /// addition and a comparison of instants rather than a subtraction
    /// (a `Duration` worked out of two instants, dearer).
    window_end: AtomicU64,
}

/// A fixed point to count window starts from.
fn epoch() -> Instant {
    static EPOCH: OnceLock<std::time::Instant> = OnceLock::new();
    Instant::from_std(*EPOCH.get_or_init(std::time::Instant::now))
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl ServiceEstimate {
    pub(crate) const fn new() -> Self {
        Self {
            nanos: AtomicU64::new(0),
            anchor: AtomicU64::new(0),
            window_end: AtomicU64::new(0),
        }
    }

    /// Forgets everything learned, as if new (for a slot handed from one
    /// limiter to the next).
    pub(crate) fn reset(&self) {
        self.nanos.store(0, Ordering::Relaxed);
        self.anchor.store(0, Ordering::Relaxed);
        self.window_end.store(0, Ordering::Relaxed);
    }

    /// The estimate, once a call has completed.
    pub(crate) fn get(&self) -> Option<Duration> {
        match self.nanos.load(Ordering::Relaxed) {
            0 => None,
            n => Some(Duration::from_nanos(n)),
        }
    }

    /// The bounds of the current window at `now`, opening a new one if the
    /// last has run out.
    fn bounds(&self, now: Instant, current: u64) -> (u64, u64) {
        let epoch = epoch();
        let ends = self.window_end.load(Ordering::Relaxed);
        let mut anchor = self.anchor.load(Ordering::Relaxed);
        if anchor == 0 || now >= epoch + Duration::from_nanos(ends) {
            anchor = current;
            self.anchor.store(anchor, Ordering::Relaxed);
            let at = nanos(now.saturating_duration_since(epoch));
            self.window_end
                .store(at.saturating_add(nanos(WINDOW)), Ordering::Relaxed);
        }
        ((anchor / FACTOR).max(1), anchor.saturating_mul(FACTOR))
    }

    /// Folds one call that took `took`, ending at `now`, into the estimate.
    pub(crate) fn observe(&self, took: Duration, now: Instant) {
        let sample = nanos(took).max(1);
        let old = self.nanos.load(Ordering::Relaxed);
        if old == 0 {
            self.nanos.store(sample, Ordering::Relaxed);
            return;
        }
        let (low, high) = self.bounds(now, old);
        let sample = sample.clamp(low, high);
        let moved = if sample >= old {
            old + ((sample - old) >> EWMA_SHIFT)
        } else {
            old - ((old - sample) >> EWMA_SHIFT)
        };
        self.nanos.store(moved.clamp(low, high), Ordering::Relaxed);
    }

    /// Lowers the estimate by 1/64 (and at most by the window's factor)
    /// after a call was refused because of it. A refused call yields no
    /// observation, so without this a fn whose service time recovered
    /// would be refused forever on an old estimate; the more calls are
    /// refused, the sooner one is let through to measure it again.
    pub(crate) fn decay(&self, now: Instant) {
        let old = self.nanos.load(Ordering::Relaxed);
        if old == 0 {
            return;
        }
        let (low, _) = self.bounds(now, old);
        let lowered = (old - (old >> DECAY_SHIFT)).max(low).max(1);
        self.nanos.store(lowered, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Within 0.1% (the moving average approaches a bound, never jumps).
    fn assert_near(got: Option<Duration>, want: Duration) {
        let got = got.expect("an estimate");
        let diff = got.abs_diff(want);
        assert!(diff <= want / 1000, "got {got:?}, want about {want:?}");
    }

    #[test]
    fn follows_steady_samples() {
        let estimate = ServiceEstimate::new();
        let now = Instant::now();
        assert_eq!(estimate.get(), None);
        estimate.observe(10 * MS, now);
        assert_eq!(estimate.get(), Some(10 * MS));
        for _ in 0..200 {
            estimate.observe(12 * MS, now);
        }
        let got = estimate.get().unwrap();
        assert!(got > 11 * MS && got <= 12 * MS, "{got:?}");
    }

    #[test]
    fn slow_outliers_move_it_at_most_by_the_factor_per_window() {
        let estimate = ServiceEstimate::new();
        let start = Instant::now();
        estimate.observe(100 * MS, start);
        for i in 0..10_000 {
            estimate.observe(
                Duration::from_secs(24),
                start + i * Duration::from_micros(50),
            );
        }
        // Half a second of slow readers: one window.
        assert_near(estimate.get(), 200 * MS);
        // A genuine change is followed, a factor per window.
        for s in 1..=3 {
            for _ in 0..100 {
                estimate.observe(Duration::from_secs(24), start + s * WINDOW);
            }
        }
        assert_near(estimate.get(), 1600 * MS);
    }

    #[test]
    fn refusals_lower_it_at_most_by_the_factor_per_window() {
        let estimate = ServiceEstimate::new();
        let now = Instant::now();
        estimate.observe(100 * MS, now);
        for _ in 0..3_000 {
            estimate.decay(now);
        }
        assert_eq!(estimate.get(), Some(50 * MS));
        for _ in 0..3_000 {
            estimate.decay(now + WINDOW);
        }
        assert_eq!(estimate.get(), Some(25 * MS));
    }

    #[test]
    fn fast_outliers_pull_it_down_at_most_by_the_factor_per_window() {
        let estimate = ServiceEstimate::new();
        let now = Instant::now();
        estimate.observe(100 * MS, now);
        for _ in 0..3_000 {
            estimate.observe(Duration::from_micros(1), now);
        }
        assert_near(estimate.get(), 50 * MS);
    }
}

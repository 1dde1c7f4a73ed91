//! The measurement window: what completed calls took, accumulated
//! lock-free until an adaptive limit closes the window.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Lock-free accumulators of the current window, updated on completion.
#[derive(Debug)]
pub(crate) struct Accumulator {
    count: AtomicU64,
    sum_nanos: AtomicU64,
    min_nanos: AtomicU64,
    max_in_flight: AtomicU64,
    /// The sum of the squared times, in microseconds squared, each time
    /// capped at [`SQUARED_MICROS_CAP`]: with the count and the sum, the
    /// spread of the calls' times (see [`Taken::squared_micros`]).
    squared_micros: AtomicU64,
}

/// The longest time, in microseconds (4.2 s), whose square the window
/// adds as it is: a longer one adds this one's. Capped so that a million
/// calls' squares fit a `u64`; the cap only ever reads the spread short,
/// and only of calls that long.
pub(crate) const SQUARED_MICROS_CAP: u64 = 1 << 22;

/// A window's accumulators, as [`Accumulator::take`] leaves them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Taken {
    pub(crate) count: u64,
    pub(crate) sum_nanos: u64,
    pub(crate) min_nanos: u64,
    pub(crate) max_in_flight: u64,
    /// The sum of the squared times in microseconds, each capped at
    /// [`SQUARED_MICROS_CAP`].
    pub(crate) squared_micros: u64,
}

impl Default for Accumulator {
    fn default() -> Self {
        Self {
            count: AtomicU64::new(0),
            sum_nanos: AtomicU64::new(0),
            min_nanos: AtomicU64::new(u64::MAX),
            max_in_flight: AtomicU64::new(0),
            squared_micros: AtomicU64::new(0),
        }
    }
}

impl Accumulator {
    pub(crate) fn record(&self, took: Duration, in_flight: u64) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        let micros = (nanos / 1_000).min(SQUARED_MICROS_CAP);
        self.squared_micros
            .fetch_add(micros * micros, Ordering::Relaxed);
        // The extremes change rarely once a window has a few samples: a
        // load first spares the read-modify-write (a locked instruction)
        // when they do not. Skipping it is safe: either extreme only moves
        // one way until `take` resets it, so a sample that is not past the
        // value read is not past any later one either (and one racing a
        // `take` may land in either window, as its count and sum may).
        if nanos < self.min_nanos.load(Ordering::Relaxed) {
            self.min_nanos.fetch_min(nanos, Ordering::Relaxed);
        }
        if in_flight > self.max_in_flight.load(Ordering::Relaxed) {
            self.max_in_flight.fetch_max(in_flight, Ordering::Relaxed);
        }
    }

    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The mean time of the calls recorded so far, if any. The count and
    /// the sum are read apart, so a record racing the read may be in one
    /// and not the other: an estimate, for the budgets before the first
    /// window closes.
    pub(crate) fn mean(&self) -> Option<Duration> {
        let count = self.count.load(Ordering::Relaxed);
        (count > 0).then(|| Duration::from_nanos(self.sum_nanos.load(Ordering::Relaxed) / count))
    }

    pub(crate) fn take(&self) -> Taken {
        Taken {
            count: self.count.swap(0, Ordering::Relaxed),
            sum_nanos: self.sum_nanos.swap(0, Ordering::Relaxed),
            min_nanos: self.min_nanos.swap(u64::MAX, Ordering::Relaxed),
            max_in_flight: self.max_in_flight.swap(0, Ordering::Relaxed),
            squared_micros: self.squared_micros.swap(0, Ordering::Relaxed),
        }
    }
}

impl Taken {
    /// The times' coefficient of variation: their standard deviation over
    /// their mean (0 with fewer than two, or times all under a
    /// microsecond).
    pub(crate) fn cv(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let n = self.count as f64;
        let mean_micros = self.sum_nanos as f64 / 1_000.0 / n;
        let variance = self.squared_micros as f64 / n - mean_micros * mean_micros;
        if mean_micros < 1.0 || variance <= 0.0 {
            return 0.0;
        }
        variance.sqrt() / mean_micros
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(times_micros: &[u64]) -> Taken {
        let window = Accumulator::default();
        for &micros in times_micros {
            window.record(Duration::from_micros(micros), 1);
        }
        window.take()
    }

    #[test]
    fn the_spread_of_the_times_is_their_standard_deviation_over_their_mean() {
        // 1, 2, 3 and 6 ms: a mean of 3 ms, a variance of 3.5 ms².
        let cv = taken(&[1_000, 2_000, 3_000, 6_000]).cv();
        assert!((cv - 3.5f64.sqrt() / 3.0).abs() < 1e-9, "{cv}");
        assert_eq!(taken(&[5_000; 10]).cv(), 0.0, "times of one length");
        assert_eq!(taken(&[5_000]).cv(), 0.0, "one time has no spread");
        assert_eq!(taken(&[]).cv(), 0.0);
        // Taken, the window starts over.
        let window = Accumulator::default();
        window.record(Duration::from_millis(1), 1);
        window.record(Duration::from_millis(9), 1);
        assert!(window.take().cv() > 0.0);
        window.record(Duration::from_millis(4), 1);
        window.record(Duration::from_millis(4), 1);
        assert_eq!(window.take().cv(), 0.0);
    }

    #[test]
    fn a_time_past_the_cap_adds_the_caps_square_and_never_overflows() {
        // A million calls of an hour each: their squares, capped, still
        // fit; the spread reads short (0, as the mean is past the cap),
        // never as garbage.
        let window = Accumulator::default();
        for _ in 0..1_000_000 {
            window.record(Duration::from_secs(3_600), 1);
        }
        let taken = window.take();
        assert_eq!(
            taken.squared_micros,
            1_000_000 * SQUARED_MICROS_CAP * SQUARED_MICROS_CAP
        );
        assert_eq!(taken.cv(), 0.0);
        // Calls under the cap read as they are.
        let cv = self::taken(&[1_000_000, 3_000_000]).cv();
        assert!((cv - 0.5).abs() < 1e-9, "{cv}");
    }
}

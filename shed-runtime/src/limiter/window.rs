//! The measurement window: what completed calls took, accumulated
//! lock-free until an adaptive limit closes the window.

use std::time::Duration;

use tokio::time::Instant;

use crate::sync::{AtomicU64, Ordering};

/// Lock-free accumulators of the current window, updated on completion.
#[derive(Debug)]
pub(crate) struct Accumulator {
    count: AtomicU64,
    sum_nanos: AtomicU64,
    min_nanos: AtomicU64,
    max_in_flight: AtomicU64,
    /// The sum of the squared times, in microseconds squared, each time
    /// capped at [`SQUARED_MICROS_CAP`]: with the count and the sum, the
    /// spread of the calls' times (see [`coefficient_of_variation`]).
    squared_micros: AtomicU64,
    /// The calls admitted in the window (its cohort): their count and
    /// the sum of their times. The others were admitted before it opened.
    cohort_count: AtomicU64,
    cohort_sum_nanos: AtomicU64,
    /// When the window opened, in nanoseconds since `epoch`.
    opened: AtomicU64,
    epoch: Instant,
}

/// The longest time, in microseconds (4.2 s), whose square the window
/// adds as it is: a longer one adds this one's. Capped so that a million
/// calls' squares fit a `u64`; the cap only ever reads the spread short,
/// and only of calls that long.
const SQUARED_MICROS_CAP: u64 = 1 << 22;

/// What completed in the measurement window since it was last taken.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Completions {
    pub(crate) count: u64,
    /// Sum of the measured service times, for the mean.
    pub(crate) total: Duration,
    /// The shortest measured service time (meaningless when `count` is 0).
    pub(crate) min: Duration,
    /// The most weight in flight seen at a completion.
    pub(crate) max_in_flight: u64,
    /// The measured times' coefficient of variation (see
    /// [`coefficient_of_variation`]).
    pub(crate) cv: f64,
    /// Measured completions of calls admitted in the window.
    pub(crate) cohort_count: u64,
    /// The sum of their times.
    pub(crate) cohort_total: Duration,
}

impl Completions {
    /// The mean of the measured times (zero with none).
    pub(crate) fn mean(&self) -> Duration {
        mean(self.total, self.count)
    }

    /// The mean of the cohort's times (zero with none).
    pub(crate) fn cohort_mean(&self) -> Duration {
        mean(self.cohort_total, self.cohort_count)
    }
}

/// `total` over `count` (zero for none).
fn mean(total: Duration, count: u64) -> Duration {
    total
        .checked_div(u32::try_from(count).unwrap_or(u32::MAX))
        .unwrap_or_default()
}

impl Default for Accumulator {
    fn default() -> Self {
        Self {
            count: AtomicU64::new(0),
            sum_nanos: AtomicU64::new(0),
            min_nanos: AtomicU64::new(u64::MAX),
            max_in_flight: AtomicU64::new(0),
            squared_micros: AtomicU64::new(0),
            cohort_count: AtomicU64::new(0),
            cohort_sum_nanos: AtomicU64::new(0),
            opened: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }
}

impl Accumulator {
    /// Records a call admitted at `admitted` that took `took`, completing
    /// with `in_flight` weight held.
    pub(crate) fn record(&self, admitted: Instant, took: Duration, in_flight: u64) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        if self.since_epoch(admitted) >= self.opened.load(Ordering::Relaxed) {
            self.cohort_count.fetch_add(1, Ordering::Relaxed);
            self.cohort_sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        }
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

    /// The window's completions, and a new window opened at `now`. Each
    /// accumulator is swapped on its own, so a record racing the take may
    /// land partly in either window (its count in one, its square in the
    /// other): that window's spread is then off by one call's, which
    /// `Auto` pools with a thousand others, and its cohort by one call.
    pub(crate) fn take(&self, now: Instant) -> Completions {
        self.opened.store(self.since_epoch(now), Ordering::Relaxed);
        let count = self.count.swap(0, Ordering::Relaxed);
        let sum_nanos = self.sum_nanos.swap(0, Ordering::Relaxed);
        let squared_micros = self.squared_micros.swap(0, Ordering::Relaxed);
        Completions {
            count,
            total: Duration::from_nanos(sum_nanos),
            min: Duration::from_nanos(self.min_nanos.swap(u64::MAX, Ordering::Relaxed)),
            max_in_flight: self.max_in_flight.swap(0, Ordering::Relaxed),
            cv: coefficient_of_variation(count, sum_nanos, squared_micros),
            cohort_count: self.cohort_count.swap(0, Ordering::Relaxed),
            cohort_total: Duration::from_nanos(self.cohort_sum_nanos.swap(0, Ordering::Relaxed)),
        }
    }

    /// `at`, in nanoseconds since the accumulator was made (0 before).
    fn since_epoch(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }
}

/// The coefficient of variation of `count` times summing to `sum_nanos`,
/// whose squares in microseconds (each capped at [`SQUARED_MICROS_CAP`])
/// sum to `squared_micros`: their standard deviation over their mean (0
/// with fewer than two, times all under a microsecond, or a negative
/// variance, which only capped times or a racing record leave).
fn coefficient_of_variation(count: u64, sum_nanos: u64, squared_micros: u64) -> f64 {
    if count < 2 {
        return 0.0;
    }
    let n = count as f64;
    let mean_micros = sum_nanos as f64 / 1_000.0 / n;
    let variance = squared_micros as f64 / n - mean_micros * mean_micros;
    if mean_micros < 1.0 || variance <= 0.0 {
        return 0.0;
    }
    variance.sqrt() / mean_micros
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;

    /// The spread of a window of calls of `times_micros`.
    fn cv_of(times_micros: &[u64]) -> f64 {
        let window = Accumulator::default();
        for &micros in times_micros {
            window.record(Instant::now(), Duration::from_micros(micros), 1);
        }
        window.take(Instant::now()).cv
    }

    #[test]
    fn the_spread_of_the_times_is_their_standard_deviation_over_their_mean() {
        // 1, 2, 3 and 6 ms: a mean of 3 ms, a variance of 3.5 ms².
        let cv = cv_of(&[1_000, 2_000, 3_000, 6_000]);
        assert!((cv - 3.5f64.sqrt() / 3.0).abs() < 1e-9, "{cv}");
        assert_eq!(cv_of(&[5_000; 10]), 0.0, "times of one length");
        assert_eq!(cv_of(&[5_000]), 0.0, "one time has no spread");
        assert_eq!(cv_of(&[]), 0.0);
        // Taken, the window starts over.
        let window = Accumulator::default();
        window.record(Instant::now(), Duration::from_millis(1), 1);
        window.record(Instant::now(), Duration::from_millis(9), 1);
        assert!(window.take(Instant::now()).cv > 0.0);
        window.record(Instant::now(), Duration::from_millis(4), 1);
        window.record(Instant::now(), Duration::from_millis(4), 1);
        assert_eq!(window.take(Instant::now()).cv, 0.0);
    }

    #[test]
    fn the_cohort_is_the_calls_admitted_since_the_window_opened() {
        let window = Accumulator::default();
        let opened = Instant::now() + Duration::from_secs(1);
        window.take(opened);
        // Admitted before the window opened: not of its cohort.
        window.record(
            opened - Duration::from_millis(1),
            Duration::from_millis(30),
            1,
        );
        // Admitted as it opened and after: of its cohort.
        window.record(opened, Duration::from_millis(10), 1);
        window.record(
            opened + Duration::from_millis(5),
            Duration::from_millis(20),
            1,
        );
        let taken = window.take(opened + Duration::from_millis(40));
        assert_eq!(taken.count, 3);
        assert_eq!(taken.total, Duration::from_millis(60));
        assert_eq!(taken.cohort_count, 2);
        assert_eq!(taken.cohort_total, Duration::from_millis(30));
        // The next window's cohort starts at that take.
        window.record(
            opened + Duration::from_millis(39),
            Duration::from_millis(10),
            1,
        );
        window.record(
            opened + Duration::from_millis(40),
            Duration::from_millis(10),
            1,
        );
        let taken = window.take(opened + Duration::from_millis(80));
        assert_eq!((taken.count, taken.cohort_count), (2, 1));
    }

    #[test]
    fn a_million_times_up_to_the_cap_read_their_spread_and_longer_ones_read_none() {
        // Half a million calls each of 2 s and 4 s (under the 4.2 s cap):
        // their squares sum to 1e19, within a u64, and they read their
        // spread exactly (a mean of 3 s, a deviation of 1 s). Wrapped,
        // the sum would read as anything.
        let window = Accumulator::default();
        for i in 0..1_000_000u64 {
            window.record(Instant::now(), Duration::from_secs(2 + 2 * (i % 2)), 1);
        }
        let cv = window.take(Instant::now()).cv;
        assert!((cv - 1.0 / 3.0).abs() < 1e-9, "{cv}");
        // Calls of an hour add the cap's square: their spread reads short
        // (none at all), never past what they have.
        let window = Accumulator::default();
        for _ in 0..1_000 {
            window.record(Instant::now(), Duration::from_secs(3_600), 1);
        }
        window.record(Instant::now(), Duration::from_secs(1), 1);
        assert_eq!(window.take(Instant::now()).cv, 0.0);
    }
}

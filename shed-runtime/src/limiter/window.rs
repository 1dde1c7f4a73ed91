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
}

impl Default for Accumulator {
    fn default() -> Self {
        Self {
            count: AtomicU64::new(0),
            sum_nanos: AtomicU64::new(0),
            min_nanos: AtomicU64::new(u64::MAX),
            max_in_flight: AtomicU64::new(0),
        }
    }
}

impl Accumulator {
    pub(crate) fn record(&self, took: Duration, in_flight: u64) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
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

    pub(crate) fn take(&self) -> (u64, u64, u64, u64) {
        (
            self.count.swap(0, Ordering::Relaxed),
            self.sum_nanos.swap(0, Ordering::Relaxed),
            self.min_nanos.swap(u64::MAX, Ordering::Relaxed),
            self.max_in_flight.swap(0, Ordering::Relaxed),
        )
    }
}

//! Counts over a sliding window of time, kept as a ring of buckets on
//! tokio's clock (so tests run it on the paused clock).

use std::time::Duration;

use tokio::time::Instant;

/// How many buckets a window is cut into: the window slides by a tenth of
/// its length at a time.
const BUCKETS: usize = 10;

/// `K` counters summed over the last `window`.
#[derive(Debug)]
pub(crate) struct Window<const K: usize> {
    origin: Instant,
    bucket: Duration,
    /// `(bucket index since origin, counts)`; `u64::MAX` marks an unused slot.
    ring: [(u64, [u64; K]); BUCKETS],
}

impl<const K: usize> Window<K> {
    pub(crate) fn new(window: Duration) -> Self {
        let bucket = (window / BUCKETS as u32).max(Duration::from_micros(1));
        Self {
            origin: Instant::now(),
            bucket,
            ring: [(u64::MAX, [0; K]); BUCKETS],
        }
    }

    fn index(&self, now: Instant) -> u64 {
        let since = now.saturating_duration_since(self.origin).as_nanos();
        (since / self.bucket.as_nanos()) as u64
    }

    /// Adds `n` to counter `k` at `now`.
    pub(crate) fn add(&mut self, now: Instant, k: usize, n: u64) {
        let index = self.index(now);
        let slot = &mut self.ring[(index % BUCKETS as u64) as usize];
        if slot.0 != index {
            *slot = (index, [0; K]);
        }
        slot.1[k] += n;
    }

    /// The counters summed over the buckets of the last window.
    pub(crate) fn sum(&self, now: Instant) -> [u64; K] {
        let index = self.index(now);
        let mut total = [0; K];
        for (at, counts) in &self.ring {
            if *at <= index && index - at < BUCKETS as u64 {
                for (t, c) in total.iter_mut().zip(counts) {
                    *t += c;
                }
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn counts_leave_the_window_after_its_length() {
        let mut window = Window::<2>::new(Duration::from_secs(10));
        window.add(Instant::now(), 0, 5);
        tokio::time::advance(Duration::from_secs(4)).await;
        window.add(Instant::now(), 1, 2);
        assert_eq!(window.sum(Instant::now()), [5, 2]);
        tokio::time::advance(Duration::from_secs(6)).await;
        assert_eq!(window.sum(Instant::now()), [0, 2], "the first bucket left");
        tokio::time::advance(Duration::from_secs(4)).await;
        assert_eq!(window.sum(Instant::now()), [0, 0]);
        tokio::time::advance(Duration::from_secs(3600)).await;
        window.add(Instant::now(), 0, 1);
        assert_eq!(
            window.sum(Instant::now()),
            [1, 0],
            "a reused slot starts from zero"
        );
    }
}

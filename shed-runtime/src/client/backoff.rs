//! Exponential backoff with full jitter.

use std::time::Duration;

/// How long to wait before a retry when the server gave no pushback, and
/// how much jitter to add after the pushback it gave.
///
/// The ceiling of retry `n` (1 = the first retry) is
/// `min(max, base · 2^(n-1))`; the wait is drawn uniformly from
/// `[0, ceiling]` ("full jitter"), so that callers refused together do not
/// come back together.
///
/// ```
/// use std::time::Duration;
/// use shed_runtime::client::Backoff;
///
/// let backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
/// assert_eq!(backoff.ceiling(1), Duration::from_millis(100));
/// assert_eq!(backoff.ceiling(3), Duration::from_millis(400));
/// assert_eq!(backoff.ceiling(10), Duration::from_secs(1));
/// assert!(backoff.delay(2) <= Duration::from_millis(200));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    base: Duration,
    max: Duration,
}

impl Default for Backoff {
    /// 100 ms, doubling up to 10 s.
    fn default() -> Self {
        Self::new(Duration::from_millis(100), Duration::from_secs(10))
    }
}

impl Backoff {
    /// Backoff starting at `base` and doubling up to `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self { base, max }
    }

    /// The longest wait before retry `retry` (1 = the first retry).
    pub fn ceiling(&self, retry: u32) -> Duration {
        let doublings = retry.saturating_sub(1).min(31);
        self.base
            .checked_mul(1 << doublings)
            .map_or(self.max, |d| d.min(self.max))
    }

    /// A wait drawn uniformly from `[0, ceiling(retry)]`.
    pub fn delay(&self, retry: u32) -> Duration {
        self.ceiling(retry).mul_f64(fastrand::f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_stay_under_a_doubling_ceiling_and_spread_over_it() {
        let backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(2));
        for retry in 1..=8 {
            let ceiling = backoff.ceiling(retry);
            assert_eq!(
                ceiling,
                (Duration::from_millis(50) * (1 << (retry - 1))).min(Duration::from_secs(2))
            );
            let delays: Vec<Duration> = (0..2_000).map(|_| backoff.delay(retry)).collect();
            assert!(delays.iter().all(|d| *d <= ceiling), "retry {retry}");
            // Full jitter: uniform on [0, ceiling], so about a tenth of the
            // draws fall in each tenth of the range, the lowest included.
            let low = delays.iter().filter(|d| **d < ceiling / 10).count();
            let high = delays.iter().filter(|d| **d > ceiling.mul_f64(0.9)).count();
            assert!((100..=300).contains(&low), "retry {retry}: {low} low");
            assert!((100..=300).contains(&high), "retry {retry}: {high} high");
        }
    }

    #[test]
    fn huge_retry_numbers_saturate_at_the_cap() {
        let backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(30));
        assert_eq!(backoff.ceiling(u32::MAX), Duration::from_secs(30));
        assert_eq!(backoff.ceiling(0), Duration::from_secs(1));
    }
}

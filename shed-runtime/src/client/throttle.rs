//! Adaptive client-side throttling (Google SRE book, "Handling Overload").

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::window::Window;

const REQUESTS: usize = 0;
const ACCEPTS: usize = 1;

/// Refuses calls locally when the backend has been refusing them: each
/// call is rejected before it is sent with probability
///
/// ```text
/// max(0, (requests − K · accepts) / (requests + 1))
/// ```
///
/// over a sliding window, where `requests` counts every call the client
/// attempted (locally rejected ones included, sent ones once answered) and
/// `accepts` the calls the
/// backend accepted — any answer but an overload refusal (`503`, `429`,
/// gRPC `UNAVAILABLE` / `RESOURCE_EXHAUSTED`, connection refused). While the
/// backend accepts at least one call in `K`, nothing is rejected; when it
/// sheds more, every caller sends less, so a fleet backs off as a whole
/// instead of spending the backend's capacity on refusals.
///
/// `K` defaults to 2, as in the SRE book; the window to 2 s, not the
/// book's two minutes. The refusals of an overload stay in the window
/// after the backend has recovered, and outweighing them takes accepts:
/// after 10 s at three times the capacity, then 0.8x, a two-minute window
/// kept rejecting a quarter of the calls a recovered backend would have
/// served for more than 10 s, and a 10 s window for about 5 s (the lab's
/// `metastable` scenario, `BENCHMARKS.md`); a 2 s window lets go within
/// about a second, and still engages within a second of an overload.
/// Clones share the counts.
///
/// ```
/// use shed_runtime::client::AdaptiveThrottle;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let throttle = AdaptiveThrottle::new();
/// for _ in 0..99 {
///     throttle.record(throttle.admit(), false); // every call sent is shed
/// }
/// assert!(throttle.reject_probability() > 0.9);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct AdaptiveThrottle {
    k: f64,
    window: Duration,
    counts: Arc<Mutex<Window<2>>>,
}

impl Default for AdaptiveThrottle {
    fn default() -> Self {
        Self::new()
    }
}

impl AdaptiveThrottle {
    /// K = 2 over 2 s.
    pub fn new() -> Self {
        Self::with(2.0, Duration::from_secs(2))
    }

    fn with(k: f64, window: Duration) -> Self {
        Self {
            k: k.max(1.0),
            window,
            counts: Arc::new(Mutex::new(Window::new(window))),
        }
    }

    /// The multiplier K (at least 1; default 2): lower rejects sooner.
    pub fn k(self, k: f64) -> Self {
        Self::with(k, self.window)
    }

    /// The sliding window (default 2 s).
    pub fn window(self, window: Duration) -> Self {
        Self::with(self.k, window)
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Window<2>> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn probability(&self, [requests, accepts]: [u64; 2]) -> f64 {
        let requests = requests as f64;
        ((requests - self.k * accepts as f64) / (requests + 1.0)).max(0.0)
    }

    /// The probability that the next call is rejected locally.
    pub fn reject_probability(&self) -> f64 {
        self.probability(self.counts().sum(Instant::now()))
    }

    /// Decides whether a call may be sent (`false`: reject it locally, and
    /// count it as a request). A call that is sent must be followed by
    /// [`record`](Self::record), which counts it.
    ///
    /// A sent call counts as a request only once its answer is in: counted
    /// when sent, the calls in flight would weigh as refusals until their
    /// answers came back, and a client starting at 8,000 calls a second
    /// against a backend answering in 10 ms rejected 85% of its calls in
    /// its first second without a single refusal from the backend (the
    /// lab's `seed-retries` scenario).
    pub fn admit(&self) -> bool {
        let now = Instant::now();
        let mut counts = self.counts();
        let p = self.probability(counts.sum(now));
        let send = p == 0.0 || fastrand::f64() >= p;
        if !send {
            counts.add(now, REQUESTS, 1);
        }
        send
    }

    /// Records the answer to a call: `accepted` unless the backend refused
    /// it for overload. `sent` is what [`admit`](Self::admit) returned; a call
    /// rejected locally was counted then and records nothing more.
    pub fn record(&self, sent: bool, accepted: bool) {
        if sent {
            let (now, mut counts) = (Instant::now(), self.counts());
            counts.add(now, REQUESTS, 1);
            if accepted {
                counts.add(now, ACCEPTS, 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_counts(throttle: AdaptiveThrottle, requests: u64, accepts: u64) -> AdaptiveThrottle {
        let now = Instant::now();
        throttle.counts().add(now, REQUESTS, requests);
        throttle.counts().add(now, ACCEPTS, accepts);
        throttle
    }

    #[tokio::test(start_paused = true)]
    async fn the_probability_follows_the_formula() {
        assert_eq!(AdaptiveThrottle::new().reject_probability(), 0.0);
        let p = with_counts(AdaptiveThrottle::new(), 30, 10).reject_probability();
        assert!((p - (30.0 - 2.0 * 10.0) / 31.0).abs() < 1e-12, "{p}");
        // Half accepted: K = 2 lets everything through.
        let p = with_counts(AdaptiveThrottle::new(), 30, 15).reject_probability();
        assert_eq!(p, 0.0);
        // K = 1 is stricter on the same counts.
        let p = with_counts(AdaptiveThrottle::new().k(1.0), 30, 15).reject_probability();
        assert!((p - 15.0 / 31.0).abs() < 1e-12, "{p}");
        // Nothing accepted: almost everything is rejected.
        let p = with_counts(AdaptiveThrottle::new(), 99, 0).reject_probability();
        assert!((p - 0.99).abs() < 1e-12, "{p}");
    }

    #[tokio::test(start_paused = true)]
    async fn rejections_happen_with_that_probability() {
        fastrand::seed(3);
        // p = (300 - 2·50) / 301 ≈ 0.66; the window is long enough that
        // the rejections counted by admit() barely move it.
        let throttle = with_counts(AdaptiveThrottle::new(), 300_000, 50_000);
        let expected = throttle.reject_probability();
        let rejected = (0..10_000).filter(|_| !throttle.admit()).count();
        let share = rejected as f64 / 10_000.0;
        assert!((share - expected).abs() < 0.03, "{share} vs {expected}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_fleet_facing_a_fixed_capacity_sends_about_k_times_what_is_accepted() {
        fastrand::seed(7);
        // Every 10 ms, 30 calls are offered to a backend that accepts 10 of
        // what it is sent and sheds the rest: a third of the offered load.
        let throttle = AdaptiveThrottle::new().window(Duration::from_secs(10));
        let (mut offered, mut sent, mut accepted) = (0u32, 0u32, 0u32);
        for tick in 0..2_000 {
            let mut room = 10;
            for _ in 0..30 {
                let admit = throttle.admit();
                let accept = admit && room > 0;
                room -= u32::from(accept);
                throttle.record(admit, accept);
                // Count the last 10 s, once the window has filled.
                if tick >= 1_000 {
                    offered += 1;
                    sent += u32::from(admit);
                    accepted += u32::from(accept);
                }
            }
            tokio::time::advance(Duration::from_millis(10)).await;
        }
        // At equilibrium p = (offered − 2 · capacity) / offered = 1/3: the
        // fleet sends twice what the backend accepts, not three times.
        let share_sent = f64::from(sent) / f64::from(offered);
        assert!(
            (0.62..=0.72).contains(&share_sent),
            "{share_sent:.3} of calls sent"
        );
        assert_eq!(accepted, 10 * 1_000, "the backend stays fully used");
    }

    #[tokio::test(start_paused = true)]
    async fn calls_in_flight_do_not_count_as_refusals() {
        fastrand::seed(1);
        let throttle = AdaptiveThrottle::new();
        // 80 calls sent before the first answer comes back, all accepted.
        let sent: Vec<bool> = (0..80).map(|_| throttle.admit()).collect();
        assert!(
            sent.iter().all(|s| *s),
            "nothing refused yet, nothing rejected"
        );
        for s in sent {
            throttle.record(s, true);
        }
        assert_eq!(throttle.reject_probability(), 0.0);
    }

    #[tokio::test(start_paused = true)]
    async fn old_refusals_leave_the_window() {
        let throttle = AdaptiveThrottle::new().window(Duration::from_secs(10));
        for _ in 0..100 {
            let sent = throttle.admit();
            throttle.record(sent, false);
        }
        assert!(throttle.reject_probability() > 0.9);
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(throttle.reject_probability(), 0.0);
        assert!(throttle.admit());
    }
}

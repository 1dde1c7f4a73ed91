//! A retry budget shared by every call of a client.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::window::Window;

const FIRST: usize = 0;
const RETRY: usize = 1;

/// Caps retries at a share of recent first attempts, Finagle- and
/// Linkerd-style: over a sliding `window` (default 10 s), a retry is
/// allowed while
///
/// ```text
/// retries + 1 ≤ ratio · first attempts + min_per_second · window
/// ```
///
/// `ratio` defaults to 10% (the second seed's "retries capped at roughly
/// 10% of requests"; Finagle and Linkerd default to 20%). The floor lets a
/// client with little traffic still retry now and then; it defaults to
/// one retry a second — not Finagle's ten — because every instance of a
/// fleet has its own floor, and a fleet of idle callers should not be
/// able to add ten retries a second each to a service that is shedding.
///
/// Clones share the budget. Time is tokio's clock, so the budget follows a
/// paused test clock.
///
/// ```
/// use std::time::Duration;
/// use shed_runtime::client::RetryBudget;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let budget = RetryBudget::new().ratio(0.1).min_per_second(0.0);
/// for _ in 0..20 {
///     budget.deposit(); // twenty first attempts sent
/// }
/// assert!(budget.try_withdraw());
/// assert!(budget.try_withdraw());
/// assert!(!budget.try_withdraw(), "10% of 20 is 2 retries");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct RetryBudget {
    ratio: f64,
    min_per_second: f64,
    window: Duration,
    counts: Arc<Mutex<Window<2>>>,
}

impl Default for RetryBudget {
    fn default() -> Self {
        Self::new()
    }
}

impl RetryBudget {
    /// A budget of 10% of first attempts plus one retry a second, over 10 s.
    pub fn new() -> Self {
        Self::with(0.1, 1.0, Duration::from_secs(10))
    }

    fn with(ratio: f64, min_per_second: f64, window: Duration) -> Self {
        Self {
            ratio: ratio.max(0.0),
            min_per_second: min_per_second.max(0.0),
            window,
            counts: Arc::new(Mutex::new(Window::new(window))),
        }
    }

    /// Retries allowed per first attempt (default 0.1). A new budget: set
    /// it before sharing.
    pub fn ratio(self, ratio: f64) -> Self {
        Self::with(ratio, self.min_per_second, self.window)
    }

    /// Retries allowed per second whatever the traffic (default 1).
    pub fn min_per_second(self, min_per_second: f64) -> Self {
        Self::with(self.ratio, min_per_second, self.window)
    }

    /// The window the ratio is measured over (default 10 s).
    pub fn window(self, window: Duration) -> Self {
        Self::with(self.ratio, self.min_per_second, window)
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Window<2>> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a first attempt sent.
    pub fn deposit(&self) {
        self.counts().add(Instant::now(), FIRST, 1);
    }

    /// Takes one retry from the budget if it allows one.
    pub fn try_withdraw(&self) -> bool {
        let now = Instant::now();
        let mut counts = self.counts();
        let [first, retries] = counts.sum(now);
        let allowed = self.ratio * first as f64 + self.min_per_second * self.window.as_secs_f64();
        if (retries + 1) as f64 <= allowed + 1e-9 {
            counts.add(now, RETRY, 1);
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn retries_are_a_share_of_first_attempts_in_the_window() {
        let budget = RetryBudget::new().ratio(0.2).min_per_second(0.0);
        assert!(!budget.try_withdraw(), "no traffic, no floor: no retry");
        for _ in 0..50 {
            budget.deposit();
        }
        let granted = (0..100).filter(|_| budget.try_withdraw()).count();
        assert_eq!(granted, 10, "20% of 50");
        // The deposits leave the window after 10 s, the withdrawals too.
        tokio::time::advance(Duration::from_secs(11)).await;
        assert!(!budget.try_withdraw());
        for _ in 0..10 {
            budget.deposit();
        }
        assert_eq!((0..100).filter(|_| budget.try_withdraw()).count(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn the_floor_allows_a_few_retries_per_second_without_traffic() {
        let budget = RetryBudget::new()
            .ratio(0.1)
            .min_per_second(2.0)
            .window(Duration::from_secs(5));
        assert_eq!((0..100).filter(|_| budget.try_withdraw()).count(), 10);
        // Half a window later the floor has not come back: the withdrawals
        // are still in the window.
        tokio::time::advance(Duration::from_millis(2500)).await;
        assert!(!budget.try_withdraw());
        tokio::time::advance(Duration::from_millis(2600)).await;
        assert_eq!((0..100).filter(|_| budget.try_withdraw()).count(), 10);
    }

    #[tokio::test(start_paused = true)]
    async fn clones_share_one_budget() {
        let a = RetryBudget::new().min_per_second(0.0);
        let b = a.clone();
        for _ in 0..10 {
            a.deposit();
        }
        assert!(b.try_withdraw());
        assert!(
            !a.try_withdraw(),
            "the one retry was taken through the clone"
        );
    }
}

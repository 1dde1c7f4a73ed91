//! A retry budget shared by every call of a client.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::window::Window;

const FIRST: usize = 0;
const RETRY: usize = 1;

/// The span over which the rate of first attempts is measured.
const SECOND: Duration = Duration::from_secs(1);

/// Slack for float rounding in the comparisons.
const EPS: f64 = 1e-9;

/// The most retries a busy client's balance holds: enough to absorb the
/// jitter of first attempts (with one, a fifth of the retries paced at 3x
/// in the lab's `metastable` scenario were not paid for when due).
const BUSY_CAP: f64 = 2.0;

/// Paced retries are spaced as if earned at this share of the rate, so
/// that the jitter of first attempts seldom leaves one unpaid when due.
const PACE: f64 = 0.9;

/// The longest a retry is deferred past the instant asked for: a retry
/// granted far ahead is more likely to be due when first attempts have
/// fallen and no longer pay for it (in the lab's `metastable` scenario, a
/// second of deferral left 526 retries unpaid when due, a quarter second
/// 348).
const MAX_DEFER: Duration = Duration::from_millis(250);

/// Caps retries at a share of first attempts, over a window and from
/// moment to moment: retries are paced at `ratio` of the rate of first
/// attempts, and never outnumber `ratio` of the first attempts of the last
/// second. Each first attempt sent earns `ratio` of a retry, each retry
/// sent spends a whole one, and a retry is sent only while
///
/// ```text
/// retries over the window    + 1 ≤ ratio · first attempts over the window + min_per_second · window
/// retries over the last second + 1 ≤ ratio · first attempts over the last second (or the reserve)
/// and the balance earned and not spent holds a whole retry (it holds at most 2)
/// ```
///
/// The first line is Finagle's and Linkerd's budget (retries a share of
/// recent requests over a sliding `window`, default 10 s, plus a floor so
/// a client with little traffic can still retry: its reserve,
/// `min_per_second · window`, may be spent at once while first attempts
/// earn less than the floor). The others keep a busier past from paying
/// for the retries of a quieter present: when a budget was spent at the
/// refusal only, retries budgeted against three times the load and
/// deferred by a server's `Retry-After` landed, once the load fell back,
/// at 1.27 times the first attempts of that second (the lab's
/// `metastable` scenario, `BENCHMARKS.md`; at most 1.1 with this budget).
///
/// A retry is decided in two steps:
///
/// - **when it is scheduled** ([`reserve`](Self::reserve), with the
///   instant it is asked for), against the window, counting the retries
///   granted and not sent yet. A retry the balance cannot pay for is
///   paced: given the next slot at the rate first attempts earn retries
///   (measured over the last second), no more than a quarter second later
///   than asked. Refused (window spent, no slot), the caller is told at
///   once;
/// - **when it is due** ([`Reservation::redeem`]), against the last
///   second and the balance as they stand: a retry paced at the rate of a
///   busier moment is not sent if first attempts have not earned it. That
///   is the one case in which a caller waits out a `Retry-After` to be
///   refused by its own budget: first attempts fell while it waited.
///
/// `ratio` defaults to 10% (the second seed's "retries capped at roughly
/// 10% of requests"; Finagle and Linkerd default to 20%). The floor
/// defaults to one retry a second — not Finagle's ten — because every
/// instance of a fleet has its own, and a fleet of idle callers should not
/// be able to add ten retries a second each to a service that is shedding;
/// its reserve (10 retries over the default window) is also what a quiet
/// client may spend in any one second.
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
///     budget.deposit(); // twenty first attempts sent: two retries earned
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
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    /// First attempts and retries sent, over the window.
    window: Window<2>,
    /// First attempts and retries sent over the last second: the rate the
    /// balance earns at, and the per-second line.
    second: Window<2>,
    /// Retries earned and not spent: each first attempt adds `ratio`.
    tokens: f64,
    /// When `tokens` last earned the floor.
    refilled: Instant,
    /// The earliest a paced retry may be sent: one earning interval after
    /// the last one granted.
    next_slot: Instant,
    /// Retries granted and not sent yet, by the instant they are due.
    pending: BTreeMap<Instant, u64>,
}

impl Default for RetryBudget {
    fn default() -> Self {
        Self::new()
    }
}

impl RetryBudget {
    /// A budget of 10% of first attempts plus one retry a second over
    /// 10 s, paced at 10% of the rate of first attempts, and at most 10% of
    /// the first attempts of the last second.
    pub fn new() -> Self {
        Self::with(0.1, 1.0, Duration::from_secs(10))
    }

    fn with(ratio: f64, min_per_second: f64, window: Duration) -> Self {
        Self {
            ratio: ratio.max(0.0),
            min_per_second: min_per_second.max(0.0),
            window,
            state: Arc::new(Mutex::new(State {
                window: Window::new(window),
                second: Window::new(SECOND),
                tokens: min_per_second.max(0.0) * window.as_secs_f64(),
                refilled: Instant::now(),
                next_slot: Instant::now(),
                pending: BTreeMap::new(),
            })),
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

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Retries a quiet client may make over the window, whatever its
    /// traffic, and in any one second.
    fn reserve_size(&self) -> f64 {
        self.min_per_second * self.window.as_secs_f64()
    }

    /// Retries allowed over the window with `first` first attempts in it.
    fn window_allowance(&self, first: u64) -> f64 {
        self.ratio * first as f64 + self.reserve_size()
    }

    /// Retries earned per second at the last second's rate of first
    /// attempts, or the floor if that is more.
    fn rate(&self, state: &State, now: Instant) -> f64 {
        (self.ratio * state.second.sum(now)[FIRST] as f64).max(self.min_per_second)
    }

    /// Brings the balance to `now`: the floor's earnings while first
    /// attempts earn less than it, and the cap, which falls with the rate.
    fn refill(&self, state: &mut State, now: Instant) {
        let earned = self.ratio * state.second.sum(now)[FIRST] as f64;
        let elapsed = now.saturating_duration_since(state.refilled).as_secs_f64();
        if earned < self.min_per_second {
            state.tokens += self.min_per_second * elapsed;
        }
        state.refilled = now;
        // Quiet, the floor's reserve may be spent at once; busy, retries
        // are paced and a few tokens absorb the jitter of first attempts.
        let cap = if earned < self.min_per_second {
            self.reserve_size().max(BUSY_CAP)
        } else {
            BUSY_CAP
        };
        state.tokens = state.tokens.min(cap);
    }

    /// Records a first attempt sent.
    pub fn deposit(&self) {
        let now = Instant::now();
        let mut state = self.state();
        self.refill(&mut state, now);
        state.window.add(now, FIRST, 1);
        state.second.add(now, FIRST, 1);
        state.tokens += self.ratio;
    }

    /// Grants a retry asked for at `due` if the window allows it and the
    /// balance pays for it then or, paced, within a quarter second of it; `None`:
    /// no retry, tell the caller now. Send the retry at
    /// [`Reservation::due`] (which may be later than asked), and only if
    /// [`Reservation::redeem`] says so then; dropping the reservation gives
    /// it back.
    pub fn reserve(&self, due: Instant) -> Option<Reservation> {
        self.grant(due, MAX_DEFER)
    }

    /// [`reserve`](Self::reserve), deferring the retry by at most `defer`.
    fn grant(&self, due: Instant, defer: Duration) -> Option<Reservation> {
        let now = Instant::now();
        let due = due.max(now);
        let mut state = self.state();
        let [first, sent] = state.window.sum(now);
        let pending: u64 = state.pending.values().sum();
        if (sent + pending + 1) as f64 > self.window_allowance(first) + EPS {
            return None;
        }
        // What the balance holds goes when asked; beyond it, retries are
        // paced at the rate first attempts earn them, one after another.
        self.refill(&mut state, now);
        let due = if (pending + 1) as f64 <= state.tokens + EPS {
            due
        } else {
            let rate = self.rate(&state, now);
            let slot = due.max(state.next_slot);
            if rate <= 0.0 || slot > due + defer {
                return None;
            }
            state.next_slot = slot + Duration::from_secs_f64(1.0 / (PACE * rate));
            slot
        };
        *state.pending.entry(due).or_default() += 1;
        drop(state);
        Some(Reservation {
            budget: self.clone(),
            due,
            live: true,
        })
    }

    /// Takes one retry, sent now, from the budget if it allows one.
    pub fn try_withdraw(&self) -> bool {
        self.grant(Instant::now(), Duration::ZERO)
            .is_some_and(Reservation::redeem)
    }

    /// Forgets the grant of a retry due at `due`.
    fn release(state: &mut State, due: Instant) {
        if let Some(n) = state.pending.get_mut(&due) {
            *n -= 1;
            if *n == 0 {
                state.pending.remove(&due);
            }
        }
    }
}

/// A retry [granted](RetryBudget::reserve) for a later instant: it holds
/// its share of the budget until it is redeemed or dropped.
#[derive(Debug)]
#[must_use = "a reservation holds its share of the budget until redeemed or dropped"]
pub struct Reservation {
    budget: RetryBudget,
    due: Instant,
    live: bool,
}

impl Reservation {
    /// When to send the retry: the instant asked for, or a later one if
    /// the budget paced it.
    pub fn due(&self) -> Instant {
        self.due
    }

    /// Called when the retry is about to be sent: `true` if the last second
    /// and the balance pay for it (it is then counted as sent), `false` if
    /// first attempts have not earned it, their rate having fallen since
    /// it was granted: do not send it.
    pub fn redeem(mut self) -> bool {
        self.live = false;
        let budget = &self.budget;
        let now = Instant::now();
        let mut state = budget.state();
        RetryBudget::release(&mut state, self.due);
        budget.refill(&mut state, now);
        let [first, sent] = state.second.sum(now);
        let per_second =
            (sent + 1) as f64 <= (budget.ratio * first as f64).max(budget.reserve_size()) + EPS;
        let allowed = per_second && state.tokens + EPS >= 1.0;
        if allowed {
            state.tokens = (state.tokens - 1.0).max(0.0);
            state.window.add(now, RETRY, 1);
            state.second.add(now, RETRY, 1);
        }
        allowed
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.live {
            RetryBudget::release(&mut self.budget.state(), self.due);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` first attempts sent now.
    fn deposits(budget: &RetryBudget, n: u32) {
        for _ in 0..n {
            budget.deposit();
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_balance_pays_at_once_and_the_rest_is_paced_at_the_earning_rate() {
        let budget = RetryBudget::new().ratio(0.1).min_per_second(0.0);
        assert!(budget.reserve(Instant::now()).is_none(), "nothing earned");
        // 100 first attempts in the last second earn 10 retries a second.
        deposits(&budget, 100);
        assert!(budget.try_withdraw(), "the balance holds two retries");
        let now = Instant::now();
        let granted: Vec<Reservation> = (0..100).map_while(|_| budget.reserve(now)).collect();
        // The balance's second retry at once, then paced at 90% of the
        // rate (one every 111 ms), within a quarter second of the instant
        // asked.
        assert_eq!(granted.len(), 4);
        assert_eq!(granted[0].due(), now);
        for pair in granted[1..].windows(2) {
            let gap = pair[1].due() - pair[0].due();
            assert!(gap >= Duration::from_millis(111), "{gap:?}");
        }
        assert!(granted.iter().all(|r| r.due() <= now + MAX_DEFER));
        assert!(
            budget.reserve(now).is_none(),
            "no slot within a quarter second: told at once"
        );
        let later = budget.reserve(now + Duration::from_secs(1));
        assert_eq!(later.map(|r| r.due()), Some(now + Duration::from_secs(1)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_paced_retry_is_sent_only_if_first_attempts_earned_it_meanwhile() {
        let budget = RetryBudget::new().ratio(0.1).min_per_second(0.0);
        deposits(&budget, 100);
        assert!(budget.try_withdraw() && budget.try_withdraw(), "spent");
        let first = budget.reserve(Instant::now()).expect("paced");
        let second = budget.reserve(Instant::now()).expect("paced");
        assert!(second.due() > first.due());
        drop(first);
        // The traffic goes on until it is due: ten first attempts pay.
        tokio::time::advance(Duration::from_millis(50)).await;
        deposits(&budget, 10);
        tokio::time::sleep_until(second.due()).await;
        assert!(second.redeem());
        // Then it stops: the next is granted, not earned, and not sent.
        let third = budget.reserve(Instant::now()).expect("paced");
        tokio::time::sleep_until(third.due()).await;
        assert!(!third.redeem());
    }

    #[tokio::test(start_paused = true)]
    async fn no_second_sends_more_retries_than_a_tenth_of_its_first_attempts() {
        let budget = RetryBudget::new().ratio(0.1).min_per_second(0.0);
        // A busy moment earns the balance its two retries; then first
        // attempts stop.
        deposits(&budget, 300);
        tokio::time::advance(Duration::from_millis(1500)).await;
        assert!(
            !budget.try_withdraw(),
            "the balance holds two, but no first attempt in the last second pays"
        );
        // Ten new first attempts pay for one retry in this second.
        deposits(&budget, 10);
        assert!(budget.try_withdraw());
        assert!(!budget.try_withdraw(), "10% of 10, whatever the balance");
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_reservation_gives_its_share_back() {
        // A window of 10 first attempts at 20% allows 2 retries.
        let budget = RetryBudget::new().ratio(0.2).min_per_second(0.0);
        deposits(&budget, 10);
        let now = Instant::now();
        let a = budget.reserve(now).expect("paid at once");
        let b = budget.reserve(now).expect("paid at once");
        assert!(budget.reserve(now).is_none(), "the window is spent");
        drop(b);
        assert!(budget.reserve(now).is_some(), "given back");
        assert!(a.redeem());
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

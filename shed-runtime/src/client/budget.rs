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

/// The most retries a busy client's balance holds.
const BUSY_CAP: f64 = 1.0;

/// Paced retries are spaced as if earned at this share of the rate, so
/// that the jitter of first attempts seldom leaves one unpaid when due.
const PACE: f64 = 0.9;

/// The longest a retry is deferred past the instant asked for.
const MAX_DEFER: Duration = Duration::from_secs(1);

/// Caps retries at a share of first attempts, over a window and from
/// moment to moment: each first attempt sent earns `ratio` of a retry, a
/// retry sent spends a whole one, and retries are paced at the rate they
/// are earned. Two rules, so a retry is sent only while
///
/// ```text
/// retries over the window + 1 ≤ ratio · first attempts over the window + min_per_second · window
/// retries over any span       ≤ ratio · first attempts over that span + 1
/// ```
///
/// The first is Finagle's and Linkerd's budget (retries a share of recent
/// requests over a sliding `window`, default 10 s, plus a floor so a
/// client with little traffic can still retry). The second is a token
/// bucket holding at most one retry (the floor's reserve,
/// `min_per_second · window`, while first attempts earn less than the
/// floor): a busier past cannot pay for the retries of a quieter present.
/// Without it, retries budgeted against three times the load and deferred
/// by a server's `Retry-After` landed, once the load fell back, at 1.27
/// times the first attempts of that second (the lab's `metastable`
/// scenario, `BENCHMARKS.md`).
///
/// A retry is decided in two steps:
///
/// - **when it is scheduled** ([`reserve`](Self::reserve), with the
///   instant it is asked for), against the window, counting the retries
///   granted and not sent yet; refused there, the caller is told at once.
///   A retry the balance cannot pay for now is paced: it is given the
///   next slot at the rate first attempts earn retries (as measured over
///   the last second), at most one second later than asked, or refused
///   at once if there is none;
/// - **when it is due** ([`Reservation::redeem`]), against the balance as
///   it stands: a retry paced at the rate of a busier moment is not sent
///   if first attempts have not earned it since (the only case in which a
///   caller waits to be refused by its own budget: when the rate of first
///   attempts falls while retries wait).
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
///     budget.deposit(); // twenty first attempts sent: two retries a second
/// }
/// assert!(budget.try_withdraw(), "the balance pays for one at once");
/// assert!(!budget.try_withdraw(), "the next is not earned yet");
/// let now = tokio::time::Instant::now();
/// let paced = budget.reserve(now).expect("but it can be paced");
/// assert!(paced.due() > now);
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
    /// First attempts over the last second: the rate the bucket earns at.
    second: Window<1>,
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
    /// A budget of 10% of first attempts plus one retry a second, over
    /// 10 s, paced at 10% of the rate of first attempts.
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
        (self.ratio * state.second.sum(now)[0] as f64).max(self.min_per_second)
    }

    /// Brings the balance to `now`: the floor's earnings while first
    /// attempts earn less than it, and the cap, which falls with the rate.
    fn refill(&self, state: &mut State, now: Instant) {
        let earned = self.ratio * state.second.sum(now)[0] as f64;
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
        state.second.add(now, 0, 1);
        state.tokens += self.ratio;
    }

    /// Grants a retry asked for at `due` if the window allows it and the
    /// balance pays for it then or, paced, within a second of it; `None`:
    /// no retry, tell the caller now. Send the retry at
    /// [`Reservation::due`] (which may be later than asked), and only if
    /// [`Reservation::redeem`] says so then; dropping the reservation gives
    /// it back.
    pub fn reserve(&self, due: Instant) -> Option<Reservation> {
        let now = Instant::now();
        let due = due.max(now);
        let mut state = self.state();
        let [first, sent] = state.window.sum(now);
        let pending: u64 = state.pending.values().sum();
        let over_window = (sent + pending + 1) as f64 <= self.window_allowance(first) + EPS;
        // What the balance holds goes at once; beyond it, retries are
        // paced at the rate first attempts earn them, one after another.
        self.refill(&mut state, now);
        let slot = if (pending + 1) as f64 <= state.tokens + EPS {
            due
        } else {
            let rate = self.rate(&state, now);
            let slot = due.max(state.next_slot);
            if rate <= 0.0 || slot > due + MAX_DEFER {
                return None;
            }
            if over_window {
                state.next_slot = slot + Duration::from_secs_f64(1.0 / (PACE * rate));
            }
            slot
        };
        if !over_window {
            return None;
        }
        let due = slot;
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
        let now = Instant::now();
        self.reserve(now)
            .is_some_and(|r| r.due() <= now && r.redeem())
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

    /// Called when the retry is about to be sent: `true` if the balance
    /// pays for it (it is then counted as sent), `false` if first attempts
    /// have not earned it, their rate having fallen since it was granted:
    /// do not send it.
    pub fn redeem(mut self) -> bool {
        self.live = false;
        let budget = &self.budget;
        let now = Instant::now();
        let mut state = budget.state();
        RetryBudget::release(&mut state, self.due);
        budget.refill(&mut state, now);
        let allowed = state.tokens + EPS >= 1.0;
        if allowed {
            state.tokens = (state.tokens - 1.0).max(0.0);
            state.window.add(now, RETRY, 1);
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
        assert!(budget.try_withdraw(), "the balance holds one retry");
        let now = Instant::now();
        let granted: Vec<Reservation> = (0..100).map_while(|_| budget.reserve(now)).collect();
        // Paced at 90% of the rate, within a second of the instant asked.
        assert_eq!(granted.len(), 9);
        for pair in granted.windows(2) {
            let gap = pair[1].due() - pair[0].due();
            assert!(gap >= Duration::from_millis(111), "{gap:?}");
        }
        assert!(granted.iter().all(|r| r.due() <= now + MAX_DEFER));
        assert!(
            budget.reserve(now).is_none(),
            "no slot within a second: told at once"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_paced_retry_is_sent_only_if_first_attempts_earned_it_meanwhile() {
        let budget = RetryBudget::new().ratio(0.1).min_per_second(0.0);
        deposits(&budget, 100);
        assert!(budget.try_withdraw());
        let paced = budget.reserve(Instant::now()).expect("paced");
        let later = budget.reserve(Instant::now()).expect("paced");
        assert!(later.due() > paced.due());
        // The traffic goes on until the first is due: it is paid for.
        tokio::time::sleep_until(paced.due() - Duration::from_millis(50)).await;
        deposits(&budget, 10);
        tokio::time::sleep_until(paced.due()).await;
        assert!(paced.redeem());
        // Then it stops: the second is granted but not earned, and not sent.
        tokio::time::sleep_until(later.due()).await;
        assert!(!later.redeem());
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_reservation_gives_its_share_back() {
        // A window of 10 first attempts at 20% allows 2 retries.
        let budget = RetryBudget::new().ratio(0.2).min_per_second(0.0);
        deposits(&budget, 10);
        let now = Instant::now();
        let a = budget.reserve(now).expect("paid at once");
        let b = budget.reserve(now).expect("paced");
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

//! Readiness from shedding: report not-ready while the instance refuses
//! more than it should, so the load balancer moves traffic away — the
//! fleet-level version of shedding — and ready again, with hysteresis.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::Limiter;

/// A readiness check driven by the limiter's refusal rate.
///
/// The rate is measured over windows of [`window`](Readiness::window): the
/// share of calls refused among those that asked. The instance turns
/// not-ready when a window's rate exceeds `enter`, and ready again only
/// when a window's rate falls below `exit` (lower than `enter`), so a rate
/// hovering around one threshold does not flap. Liveness is a different
/// question: never tie it to shedding.
///
/// Servers [`start`](Readiness::start) it: a task then closes a window
/// every `window`, whether or not anybody probes, and
/// [`is_ready`](Readiness::is_ready) only reads the result. Unstarted, it
/// closes a window when probed, so the first probe after a quiet spell
/// averages over the whole gap.
///
/// ```
/// use std::time::Duration;
/// use shed_runtime::{Limiter, Readiness};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// let limiter = Limiter::builder().build().unwrap();
/// let readiness = Readiness::new(limiter.clone())
///     .thresholds(0.2, 0.05)
///     .window(Duration::from_secs(1))
///     .start();
/// assert!(readiness.is_ready());
/// # }
/// ```
#[derive(Debug)]
pub struct Readiness {
    limiter: Limiter,
    enter: f64,
    exit: f64,
    window: Duration,
    state: Mutex<State>,
    /// Set once a task closes the windows on a tick.
    ticking: AtomicBool,
    /// Not ready while this probe reports the runtime lagging.
    lag: Option<crate::LagProbe>,
}

#[derive(Debug)]
struct State {
    ready: bool,
    /// Start of the current window, with the totals then.
    since: Instant,
    asked: u64,
    refused: u64,
    last_rate: f64,
}

impl Readiness {
    /// Not-ready above 20% refused, ready again below 5%, over 1 s windows.
    pub fn new(limiter: Limiter) -> Self {
        let (asked, refused) = totals(&limiter);
        Self {
            limiter,
            enter: 0.2,
            exit: 0.05,
            window: Duration::from_secs(1),
            state: Mutex::new(State {
                ready: true,
                since: Instant::now(),
                asked,
                refused,
                last_rate: 0.0,
            }),
            ticking: AtomicBool::new(false),
            lag: None,
        }
    }

    /// Also not ready while `probe` reports the runtime lagging (with the
    /// probe's own hysteresis): a runtime whose threads are blocked serves
    /// nobody well, and the balancer should send its traffic elsewhere,
    /// though the limiter, which sees only its own queue, may refuse
    /// nothing.
    pub fn lag(mut self, probe: crate::LagProbe) -> Self {
        self.lag = Some(probe);
        self
    }

    /// Closes a window every [`window`](Readiness::window) on a task of the
    /// current tokio runtime, so readiness follows the load continuously,
    /// not when probed. The task ends when the last `Arc` is dropped.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn start(self) -> Arc<Self> {
        let readiness = Arc::new(self);
        readiness.ticking.store(true, Ordering::Relaxed);
        let weak = Arc::downgrade(&readiness);
        let window = readiness.window;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval_at(Instant::now() + window, window);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(readiness) = weak.upgrade() else {
                    return;
                };
                readiness.close_window_if_due();
            }
        });
        readiness
    }

    /// The refusal rates that turn the instance not-ready (`enter`) and
    /// ready again (`exit`); `exit` is kept at or below `enter`.
    pub fn thresholds(mut self, enter: f64, exit: f64) -> Self {
        self.enter = enter;
        self.exit = exit.min(enter);
        self
    }

    /// The length of a measuring window.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window.max(Duration::from_millis(1));
        self
    }

    /// Whether the instance should receive traffic. Cheap to call from a
    /// probe handler: started, it reads the last window's verdict;
    /// unstarted, it looks at the counters once a window.
    pub fn is_ready(&self) -> bool {
        let lagging = self.lag.as_ref().is_some_and(crate::LagProbe::is_lagging);
        let shedding_ok = if self.ticking.load(Ordering::Relaxed) {
            self.state.lock().unwrap_or_else(|p| p.into_inner()).ready
        } else {
            self.close_window_if_due()
        };
        shedding_ok && !lagging
    }

    /// Closes the window if it has lasted long enough; returns readiness.
    fn close_window_if_due(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if now.duration_since(state.since) >= self.window {
            let (asked, refused) = totals(&self.limiter);
            let (d_asked, d_refused) = (asked - state.asked, refused - state.refused);
            let rate = if d_asked == 0 {
                0.0
            } else {
                d_refused as f64 / d_asked as f64
            };
            if state.ready && rate > self.enter {
                state.ready = false;
            } else if !state.ready && rate < self.exit {
                state.ready = true;
            }
            state.last_rate = rate;
            state.since = now;
            state.asked = asked;
            state.refused = refused;
        }
        state.ready
    }

    /// The refusal rate of the last complete window.
    pub fn refusal_rate(&self) -> f64 {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last_rate
    }
}

fn totals(limiter: &Limiter) -> (u64, u64) {
    let stats = limiter.stats();
    stats.classes.iter().fold((0, 0), |(asked, refused), c| {
        (
            asked + c.admitted + c.refused_total(),
            refused + c.refused_total(),
        )
    })
}

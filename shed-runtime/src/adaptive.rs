//! Adaptive concurrency limits: the limiter's capacity follows what the
//! service can currently sustain, learned from completed calls.
//!
//! Completions are folded into a window of lock-free accumulators (count,
//! latency sum, sum of squares and minimum, highest in-flight weight, late
//! completions) only when a call's service time is measured, so the hot
//! path pays nothing more. A controller task closes the window every
//! [`AdaptiveLimit::window`], hands it to the [`LimitAlgorithm`], and sets
//! the new capacity; class shares and floors follow the new capacity.
//!
//! ```
//! use std::time::Duration;
//! use shed_runtime::adaptive::{AdaptiveLimit, Gradient2};
//! use shed_runtime::Limiter;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let limiter = Limiter::builder().capacity(20).service_time_sampling(1).build().unwrap();
//! let controller = AdaptiveLimit::new(Gradient2::default())
//!     .limits(5, 200)
//!     .window(Duration::from_millis(100))
//!     .spawn(limiter.clone());
//! # controller.abort();
//! # }
//! ```

use std::time::Duration;

use tokio::time::Instant;

mod auto;

pub(crate) use auto::AutoControl;
pub use auto::{Auto, AutoSettings};

use crate::class::ClassSpec;
use crate::limiter::controller::Controller;
use crate::limiter::view::Load;
use crate::limiter::Inner;
use crate::Limiter;

/// More than 1% of a window's calls finishing late means overload,
/// whatever the latency says; a stray late call does not.
fn overloaded_by_lateness(w: &Window) -> bool {
    w.late * 100 > w.completed
}

/// What the calls completed in one window say.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Window {
    /// Measured completions.
    pub completed: u64,
    /// Their mean service time.
    pub avg_latency: Duration,
    /// Their shortest service time.
    pub min_latency: Duration,
    /// Their service times' coefficient of variation: the standard
    /// deviation over the mean (1 for times of exponential length, 0 for
    /// times of one length, and 0 with fewer than two measured).
    pub latency_cv: f64,
    /// The highest in-flight weight seen at a completion.
    pub max_in_flight: u64,
    /// Measured completions of calls admitted in the window (its cohort):
    /// the others were admitted before it opened, at the limit before.
    pub cohort_completed: u64,
    /// The cohort's mean service time (zero with none).
    pub cohort_avg_latency: Duration,
    /// Calls that finished after their caller's deadline: the service is
    /// overloaded whatever the latency says.
    pub late: u64,
    /// The limit during the window.
    pub limit: f64,
    /// Whether the window ran at a probe limit the algorithm asked for.
    pub probe: bool,
    /// Calls that finished in the window, measured or not (the weight
    /// admitted, less the growth of the in-flight weight): the throughput
    /// is `finished / elapsed`.
    pub finished: u64,
    /// How long the window lasted.
    pub elapsed: Duration,
    /// Whether calls were waiting for slots when the window closed: the
    /// limit binds.
    pub waiting: bool,
    /// Calls waiting for slots when the window closed.
    pub waiters: u64,
    /// Calls that came to wait for a slot in the window (served, refused
    /// or still waiting): while calls wait, nearly every arrival, so
    /// `arrived / elapsed` reads the demand's rate (less what a full
    /// queue refused at once).
    pub arrived: u64,
    /// When the window closed.
    pub at: Instant,
}

impl Window {
    /// Calls finished per second in the window.
    pub fn throughput(&self) -> f64 {
        let seconds = self.elapsed.as_secs_f64();
        if seconds > 0.0 {
            self.finished as f64 / seconds
        } else {
            0.0
        }
    }

    /// Whether the limit bound in the window: calls waited for slots, or
    /// the in-flight weight reached the limit.
    pub fn limit_binds(&self) -> bool {
        self.waiting || self.max_in_flight as f64 >= self.limit.round()
    }
}

/// A way of choosing the next limit from a window of completions.
pub trait LimitAlgorithm: Send + 'static {
    /// A short name, for reports.
    fn name(&self) -> &'static str;

    /// The next limit, given the last window (with at least one
    /// completion). Clamping to the configured bounds is the caller's job.
    fn next_limit(&mut self, window: &Window) -> f64;

    /// Asked before each window: a lower limit to run the next window at,
    /// to measure latency with less concurrency. The window is then
    /// reported with `probe` set. Never, by default.
    fn probe_limit(&mut self, _limit: f64) -> Option<f64> {
        None
    }
}

/// Additive increase, multiplicative decrease (the seed's loop, as in
/// Netflix concurrency-limits): on late calls or a mean latency above
/// `target`, multiply by `backoff`, at most once per round trip; while
/// the limit is in use, add about one per `limit` completions.
#[derive(Debug, Clone)]
pub struct Aimd {
    /// Latency above which the service counts as overloaded.
    pub target: Duration,
    /// The multiplicative decrease (default 0.9).
    pub backoff: f64,
    last_decrease: Option<Instant>,
}

impl Aimd {
    /// AIMD with a latency target and the default backoff of 0.9.
    pub fn new(target: Duration) -> Self {
        Self {
            target,
            backoff: 0.9,
            last_decrease: None,
        }
    }
}

impl LimitAlgorithm for Aimd {
    fn name(&self) -> &'static str {
        "aimd"
    }

    fn next_limit(&mut self, w: &Window) -> f64 {
        if overloaded_by_lateness(w) || w.avg_latency > self.target {
            let round_trip = w.avg_latency;
            let due = self
                .last_decrease
                .is_none_or(|at| w.at.saturating_duration_since(at) >= round_trip);
            if due {
                self.last_decrease = Some(w.at);
                return w.limit * self.backoff;
            }
            return w.limit;
        }
        if (w.max_in_flight as f64) * 2.0 >= w.limit {
            return w.limit + w.completed as f64 / w.limit.max(1.0);
        }
        w.limit
    }
}

/// TCP Vegas for request concurrency (as in Netflix concurrency-limits):
/// estimates the queue inside the service from the ratio of the no-load
/// latency to the current one, grows while it is short and shrinks when it
/// is long.
///
/// The no-load latency is the lowest window mean, drifting up (see
/// `drift`) so that a dependency that really got slower becomes the new
/// normal. Under sustained overload no window is free of queueing, and the
/// drift alone would accept the queue; so every `probe_every` windows one
/// window runs at half the limit, and if it completes as many calls, its
/// latency is the no-load one and the lower limit stays (the same probe as
/// [`Gradient2`]'s). The limit is never pinned low to measure.
#[derive(Debug, Clone)]
pub struct Vegas {
    /// How fast the no-load latency estimate rises per window when no
    /// window is faster (default 0.03).
    pub drift: f64,
    /// Windows between probes at half the limit (default 10; 0: never).
    pub probe_every: u32,
    no_load: Option<Duration>,
    probe: HalfLimitProbe,
}

impl Default for Vegas {
    fn default() -> Self {
        Self {
            drift: 0.03,
            probe_every: 10,
            no_load: None,
            probe: HalfLimitProbe::default(),
        }
    }
}

fn log10_at_least(limit: f64, floor: f64) -> f64 {
    limit.max(1.0).log10().max(floor)
}

impl LimitAlgorithm for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn probe_limit(&mut self, limit: f64) -> Option<f64> {
        self.probe.start(self.probe_every, limit)
    }

    fn next_limit(&mut self, w: &Window) -> f64 {
        if w.probe {
            return match self.probe.finish(w) {
                // The other half of the concurrency was only queueing:
                // this latency is the no-load one.
                ProbeVerdict::Queueing => {
                    self.no_load = Some(w.avg_latency.max(Duration::from_nanos(1)));
                    w.limit
                }
                ProbeVerdict::Working { restore } => {
                    self.no_load = self.no_load.map(|d| d.min(w.avg_latency));
                    restore
                }
            };
        }
        self.probe.ordinary(w);
        // The no-load latency is the lowest *window mean* seen (the
        // shortest single call says nothing when service times vary: with
        // exponential ones it is near zero, and Vegas would see a queue
        // that is not there). It drifts up by `drift` a window until a
        // lower mean refreshes it, so a dependency that really got slower
        // becomes the new no-load within seconds, without probing at a
        // tiny limit.
        let rtt = w.avg_latency.max(Duration::from_nanos(1));
        // Not `mul_f64`, which panics (in the controller's task) on a
        // drift that is not a number or takes the estimate out of range:
        // such a drift refreshes the estimate from this window instead.
        let drifted = self
            .no_load
            .and_then(|d| Duration::try_from_secs_f64(d.as_secs_f64() * (1.0 + self.drift)).ok());
        let no_load = match drifted {
            Some(d) if d <= rtt => d,
            _ => rtt,
        };
        self.no_load = Some(no_load);
        let limit = w.limit;
        let step = log10_at_least(limit, 1.0);
        if (w.max_in_flight as f64) * 2.0 < limit {
            return limit;
        }
        let queue = (limit * (1.0 - no_load.as_secs_f64() / rtt.as_secs_f64())).ceil();
        let alpha = 3.0 * log10_at_least(limit, 1.0);
        let beta = 6.0 * log10_at_least(limit, 1.0);
        let threshold = log10_at_least(limit, 1.0);
        if queue <= threshold {
            limit + beta
        } else if queue < alpha {
            limit + step
        } else if queue > beta {
            limit - step
        } else {
            limit
        }
    }
}

/// Gradient2 (as in Netflix concurrency-limits): compares the window's
/// latency with a long-term average; a gradient below 1 (latency rising
/// past `tolerance` times the average) shrinks the limit, and a small
/// queue allowance lets it grow. The long average decays faster after a
/// slowdown so that the limit comes back once the service recovers, and
/// nothing changes while the service does not use half the limit.
///
/// The long average alone takes a slowdown that queues inside the service
/// for the new normal. So every `probe_every` windows, one window runs at
/// half the limit (never lower, and for one window only, unlike Envoy's
/// probes at a minimal limit). If that window completed nearly as many
/// calls, the other half of the concurrency was only queueing: the lower
/// limit stays, and its latency becomes the reference. If it completed
/// fewer, the limit comes back.
#[derive(Debug, Clone)]
pub struct Gradient2 {
    /// How much latency may rise before the limit shrinks (default 1.5).
    pub tolerance: f64,
    /// Extra concurrency allowed on top of the gradient (default 4).
    pub queue_size: f64,
    /// Weight of the newest window in the limit (default 0.2).
    pub smoothing: f64,
    /// Weight of the newest window in the long average (default 0.05).
    pub long_weight: f64,
    /// Windows between probes at half the limit (default 10; 0: never).
    pub probe_every: u32,
    long: Option<f64>,
    windows: u32,
    probe: HalfLimitProbe,
}

impl Default for Gradient2 {
    fn default() -> Self {
        Self {
            tolerance: 1.5,
            queue_size: 4.0,
            smoothing: 0.2,
            long_weight: 0.05,
            probe_every: 10,
            long: None,
            windows: 0,
            probe: HalfLimitProbe::default(),
        }
    }
}

impl LimitAlgorithm for Gradient2 {
    fn name(&self) -> &'static str {
        "gradient2"
    }

    fn probe_limit(&mut self, limit: f64) -> Option<f64> {
        self.probe.start(self.probe_every, limit)
    }

    fn next_limit(&mut self, w: &Window) -> f64 {
        let short = w.avg_latency.as_secs_f64().max(1e-9);
        self.windows += 1;
        if w.probe {
            return match self.probe.finish(w) {
                // The lower limit stays, and its latency is the reference.
                ProbeVerdict::Queueing => {
                    self.long = Some(short);
                    w.limit
                }
                ProbeVerdict::Working { restore } => {
                    self.long = self.long.map(|long| long.min(short));
                    restore
                }
            };
        }
        self.probe.ordinary(w);
        let long = match self.long {
            // Warm-up: a plain average of the first ten windows.
            Some(long) if self.windows <= 10 => long + (short - long) / f64::from(self.windows),
            Some(long) => long * (1.0 - self.long_weight) + short * self.long_weight,
            None => short,
        };
        // After a slowdown, let the long average catch up faster.
        let long = if long / short > 2.0 {
            long * 0.95
        } else {
            long
        };
        self.long = Some(long);
        if (w.max_in_flight as f64) < w.limit / 2.0 {
            return w.limit;
        }
        let gradient = (self.tolerance * long / short).clamp(0.5, 1.0);
        let next = w.limit * gradient + self.queue_size;
        w.limit * (1.0 - self.smoothing) + next * self.smoothing
    }
}

/// The safe re-probe shared by Vegas and Gradient2: every so many windows
/// in which the limit is in use, run one window at half the limit. If it
/// completes (nearly) as many calls as the window before, the other half
/// of the concurrency was only queueing inside the service (Little's law),
/// and the lower limit and its latency are the truth; otherwise the
/// concurrency was doing work, and the limit comes back. Never lower than
/// half, and for one window only: the service is never pinned to a tiny
/// limit (Envoy's weakness). A service that uses little of its limit passes
/// the probe, so its limit follows what it uses, ready for a slowdown.
#[derive(Debug, Clone, Default)]
struct HalfLimitProbe {
    /// Ordinary windows since the last probe.
    windows_since: u32,
    /// The limit before the running probe.
    before: Option<f64>,
    /// Completions per ordinary window, smoothed.
    completed: Option<f64>,
}

enum ProbeVerdict {
    /// As many completions at half the limit: keep it.
    Queueing,
    /// Fewer: go back to `restore`.
    Working { restore: f64 },
}

impl HalfLimitProbe {
    fn start(&mut self, every: u32, limit: f64) -> Option<f64> {
        if every == 0 || self.before.is_some() || self.windows_since < every {
            return None;
        }
        self.windows_since = 0;
        self.before = Some(limit);
        Some((limit / 2.0).max(1.0))
    }

    fn ordinary(&mut self, w: &Window) {
        // Smoothed over a few windows: one window's count is too noisy to
        // judge a probe by.
        self.completed = match self.completed {
            Some(c) => c + (w.completed as f64 - c) * 0.3,
            None => w.completed as f64,
        }
        .into();
        self.windows_since += 1;
    }

    fn finish(&mut self, w: &Window) -> ProbeVerdict {
        let restore = self.before.take().unwrap_or(w.limit);
        if w.completed as f64 >= 0.95 * self.completed.unwrap_or(0.0) {
            ProbeVerdict::Queueing
        } else {
            ProbeVerdict::Working { restore }
        }
    }
}

/// A limit that never moves: the baseline the adaptive ones are compared with.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fixed;

impl LimitAlgorithm for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }

    fn next_limit(&mut self, w: &Window) -> f64 {
        w.limit
    }
}

/// Drives a limiter's capacity with a [`LimitAlgorithm`].
pub struct AdaptiveLimit {
    algorithm: Box<dyn LimitAlgorithm>,
    min: u32,
    max: u32,
    initial: Option<u32>,
    window: Duration,
}

impl std::fmt::Debug for AdaptiveLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdaptiveLimit")
            .field("algorithm", &self.algorithm.name())
            .field("min", &self.min)
            .field("max", &self.max)
            .field("initial", &self.initial)
            .field("window", &self.window)
            .finish()
    }
}

impl AdaptiveLimit {
    /// The bounds of the limit unless [`limits`](AdaptiveLimit::limits)
    /// sets others.
    pub const DEFAULT_LIMITS: (u32, u32) = (1, 1000);

    /// How often the limit is reconsidered unless
    /// [`window`](AdaptiveLimit::window) says otherwise.
    pub const DEFAULT_WINDOW: Duration = Duration::from_millis(100);

    /// A controller with `algorithm`, limits 1 to 1,000, starting from the
    /// limiter's capacity, with 100 ms windows.
    pub fn new(algorithm: impl LimitAlgorithm) -> Self {
        Self {
            algorithm: Box::new(algorithm),
            min: Self::DEFAULT_LIMITS.0,
            max: Self::DEFAULT_LIMITS.1,
            initial: None,
            window: Self::DEFAULT_WINDOW,
        }
    }

    /// The bounds of the limit.
    pub fn limits(mut self, min: u32, max: u32) -> Self {
        self.min = min.max(1);
        self.max = max.max(self.min);
        self
    }

    /// The limit to start from (default: the limiter's capacity).
    pub fn initial(mut self, initial: u32) -> Self {
        self.initial = Some(initial);
        self
    }

    /// How often the limit is reconsidered.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window.max(Duration::from_millis(1));
        self
    }

    /// Starts the controller on the current tokio runtime. The limiter's
    /// `shed_limit` gauge shows the limit; abort the handle to stop.
    pub fn spawn(self, limiter: Limiter) -> tokio::task::JoinHandle<()> {
        self.spawn_observed(limiter, |_, _| {})
    }

    /// Like [`spawn`](AdaptiveLimit::spawn), calling `observe(window, new
    /// limit)` after every decision (for reports and tests). A limiter
    /// built without a fixed capacity stops adapting on its own: this
    /// controller takes over.
    pub fn spawn_observed(
        self,
        limiter: Limiter,
        mut observe: impl FnMut(&Window, u32) + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        // The adaptive default stops with the pin below (`set_capacity`).
        limiter.read_by_adaptive_limit();
        let limit = f64::from(
            self.initial
                .unwrap_or(limiter.capacity())
                .clamp(self.min, self.max),
        );
        let mut driver = Driver::new(
            self.algorithm,
            (f64::from(self.min), f64::from(self.max)),
            limit,
            &limiter.inner,
            Instant::now(),
        );
        limiter.set_capacity(limit as u32);
        let period = self.window;
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(period);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticker.tick().await;
            driver.open(&limiter.inner, Instant::now());
            loop {
                ticker.tick().await;
                let now = Instant::now();
                if let Some((window, capacity)) = driver.close(&limiter.inner, now) {
                    observe(&window, capacity);
                }
                driver.open(&limiter.inner, now);
            }
        })
    }
}

/// Runs a [`LimitAlgorithm`] window by window on a limiter: opens a window
/// (at a probe limit if the algorithm asks for one), closes it into a
/// [`Window`], and sets the capacity the algorithm chose.
pub(crate) struct Driver<A: ?Sized> {
    bounds: (f64, f64),
    limit: f64,
    probing: bool,
    late_before: u64,
    /// The limiter's queued calls (see [`Window::arrived`]) when the
    /// window opened.
    arrivals_before: u64,
    /// The limiter's load when the window opened.
    before: Load,
    opened: Instant,
    algorithm: Box<A>,
}

impl<A: LimitAlgorithm + ?Sized> Driver<A> {
    fn new(algorithm: Box<A>, bounds: (f64, f64), limit: f64, inner: &Inner, now: Instant) -> Self {
        Self {
            bounds,
            limit,
            probing: false,
            late_before: inner.late_total(),
            arrivals_before: inner.waiting_and_arrivals().1,
            before: inner.load(),
            opened: now,
            algorithm,
        }
    }

    /// A driver for a limiter that has admitted nothing yet.
    fn fresh(algorithm: Box<A>, bounds: (f64, f64), limit: f64, now: Instant) -> Self {
        Self {
            bounds,
            limit,
            probing: false,
            late_before: 0,
            arrivals_before: 0,
            before: Load::default(),
            opened: now,
            algorithm,
        }
    }

    /// Starts a window at `now`, at a probe limit if the algorithm asks.
    fn open(&mut self, inner: &Inner, now: Instant) {
        self.opened = now;
        self.before = inner.load();
        if let Some(probe) = self.algorithm.probe_limit(self.limit) {
            let probe = probe.clamp(self.bounds.0, self.limit);
            inner.set_limit(probe.round().max(1.0) as u64);
            self.probing = true;
        }
    }

    /// Ends the window at `now` and applies the algorithm's next limit.
    /// `None` if no call was measured in it (the limit stays).
    fn close(&mut self, inner: &Inner, now: Instant) -> Option<(Window, u32)> {
        let completions = inner.take_completions(now);
        let late_now = inner.late_total();
        let late = late_now.saturating_sub(self.late_before);
        self.late_before = late_now;
        let (waiters, arrivals) = inner.waiting_and_arrivals();
        let arrived = arrivals.wrapping_sub(self.arrivals_before);
        self.arrivals_before = arrivals;
        let load = inner.load();
        let finished = (load.admitted_since(&self.before) + self.before.in_flight)
            .saturating_sub(load.in_flight);
        let count = completions.count;
        if count == 0 {
            if std::mem::take(&mut self.probing) {
                inner.set_limit(self.limit.round() as u64);
            }
            return None;
        }
        let window = Window {
            completed: count,
            avg_latency: completions.mean(),
            min_latency: completions.min,
            latency_cv: completions.cv,
            max_in_flight: completions.max_in_flight,
            cohort_completed: completions.cohort_count,
            cohort_avg_latency: completions.cohort_mean(),
            late,
            limit: if self.probing {
                load.capacity as f64
            } else {
                self.limit
            },
            probe: std::mem::take(&mut self.probing),
            finished,
            elapsed: now.saturating_duration_since(self.opened),
            waiting: load.waiting,
            waiters: waiters as u64,
            arrived,
            at: now,
        };
        let next = self.algorithm.next_limit(&window);
        self.limit =
            if next.is_finite() { next } else { self.limit }.clamp(self.bounds.0, self.bounds.1);
        let capacity = self.limit.round().max(1.0) as u32;
        inner.set_limit(u64::from(capacity));
        Some((window, capacity))
    }
}

impl Limiter {
    /// Whether the capacity is adaptive: the default limit ([`Auto`]) runs
    /// because no capacity was pinned, and no [`AdaptiveLimit`] took over.
    /// The `shed_limit` gauge and [`capacity`](Limiter::capacity) show the
    /// limit it has learned so far.
    pub fn is_adaptive(&self) -> bool {
        self.inner
            .auto
            .as_ref()
            .is_some_and(|auto| auto.is_enabled())
    }
}

/// The default adaptive limit, as the limiter sees it.
impl Controller for AutoControl {
    fn completed(&self, limiter: &Inner, now: Instant, took: Duration) {
        AutoControl::completed(self, limiter, now, took);
    }

    fn budget(&self, class: &ClassSpec) -> Duration {
        AutoControl::budget(self, class)
    }

    fn is_enabled(&self) -> bool {
        AutoControl::is_enabled(self)
    }

    fn disable(&self) -> bool {
        AutoControl::disable(self)
    }

    fn enable(&self) {
        AutoControl::enable(self)
    }

    #[cfg(test)]
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(all(test, not(shed_loom)))]
mod properties;

#[cfg(test)]
mod tests {
    use super::*;

    fn window(latency_ms: u64, limit: f64, in_flight: u64) -> Window {
        Window {
            completed: 100,
            avg_latency: Duration::from_millis(latency_ms),
            min_latency: Duration::from_millis(latency_ms / 2),
            latency_cv: 1.0,
            max_in_flight: in_flight,
            cohort_completed: 0,
            cohort_avg_latency: Duration::ZERO,
            late: 0,
            limit,
            probe: false,
            finished: 100,
            elapsed: Duration::from_millis(100),
            waiting: false,
            waiters: 0,
            arrived: 0,
            at: Instant::now(),
        }
    }

    /// Keeps the windows it is given, and the limit as it is.
    struct Recorder(std::sync::Arc<std::sync::Mutex<Vec<Window>>>);

    impl LimitAlgorithm for Recorder {
        fn name(&self) -> &'static str {
            "recorder"
        }

        fn next_limit(&mut self, window: &Window) -> f64 {
            self.0.lock().unwrap().push(*window);
            window.limit
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_window_counts_the_calls_that_came_to_wait_in_it() {
        // Four slots, held: every call after them waits (the queue holds
        // 16). The first window sees 5 come, the next 3 more, though 8
        // wait at its close.
        let limiter = crate::Config::new().capacity(4).build().unwrap();
        let inner = &limiter.inner;
        let windows = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let recorder = Box::new(Recorder(windows.clone()));
        let mut driver = Driver::new(recorder, (1.0, 10.0), 4.0, inner, Instant::now());
        let _held = limiter.acquire("critical", 4, "call").await.unwrap();
        for (came, waiting) in [(5u64, 5usize), (3, 8)] {
            for _ in 0..came {
                let limiter = limiter.clone();
                tokio::spawn(async move { limiter.acquire("critical", 1, "call").await });
            }
            while inner.queued().0 < waiting {
                tokio::task::yield_now().await;
            }
            // A window closes only on a measured call.
            inner.record_completion(Duration::from_millis(10), 4);
            driver
                .close(inner, Instant::now())
                .expect("a measured call");
            let window = *windows.lock().unwrap().last().unwrap();
            assert_eq!((window.arrived, window.waiters), (came, waiting as u64));
        }
    }

    #[test]
    fn aimd_backs_off_above_target_and_grows_while_used() {
        let mut aimd = Aimd::new(Duration::from_millis(30));
        assert!((aimd.next_limit(&window(50, 20.0, 20)) - 18.0).abs() < 1e-9);
        let mut aimd = Aimd::new(Duration::from_millis(30));
        assert!(
            (aimd.next_limit(&window(10, 20.0, 15)) - 25.0).abs() < 1e-9,
            "+100/20"
        );
        assert_eq!(
            aimd.next_limit(&window(10, 20.0, 5)),
            20.0,
            "unused limits do not grow"
        );
    }

    #[test]
    fn vegas_grows_without_a_queue_and_shrinks_with_one() {
        let mut vegas = Vegas::default();
        let grown = vegas.next_limit(&window(10, 20.0, 20));
        assert!(grown > 20.0, "no queue yet: {grown}");
        let shrunk = vegas.next_limit(&window(40, 20.0, 20));
        assert!(
            shrunk < 20.0,
            "latency 4x the no-load: a queue of 15: {shrunk}"
        );
    }

    #[test]
    fn vegas_learns_the_no_load_latency_from_a_probe_that_completes_as_many() {
        let mut vegas = Vegas::default();
        // Under sustained overload every window shows 40 ms: the drift
        // would take it for the no-load latency.
        let mut probe = None;
        for _ in 0..20 {
            probe = vegas.probe_limit(40.0);
            if probe.is_some() {
                break;
            }
            vegas.next_limit(&window(40, 40.0, 40));
        }
        assert_eq!(probe, Some(20.0), "one window at half the limit");
        let as_many = Window {
            probe: true,
            ..window(10, 20.0, 20)
        };
        assert_eq!(vegas.next_limit(&as_many), 20.0, "the lower limit stays");
        assert_eq!(vegas.no_load, Some(Duration::from_millis(10)));
        // Back at 40 ms, it now sees the queue and shrinks.
        assert!(vegas.next_limit(&window(40, 20.0, 20)) < 20.0);
    }

    #[test]
    fn gradient2_shrinks_when_latency_rises_and_probes_at_half_the_limit() {
        let mut g = Gradient2::default();
        for _ in 0..11 {
            assert!(g.next_limit(&window(10, 40.0, 40)) >= 40.0);
        }
        assert!(
            g.next_limit(&window(40, 40.0, 40)) < 40.0,
            "latency rose 4x"
        );
        let probe = (0..20).find_map(|_| {
            let probe = g.probe_limit(40.0);
            if probe.is_none() {
                g.next_limit(&window(40, 40.0, 40));
            }
            probe
        });
        assert_eq!(
            probe,
            Some(20.0),
            "one window at half the limit, not a minimal one"
        );
        // Half the concurrency, half the completions: it was doing work.
        let fewer = Window {
            probe: true,
            completed: 50,
            ..window(20, 20.0, 20)
        };
        assert_eq!(
            g.next_limit(&fewer),
            40.0,
            "the limit comes back after the probe"
        );

        // Half the concurrency, as many completions: it was only queueing.
        let probe = (0..20).find_map(|_| {
            let probe = g.probe_limit(40.0);
            if probe.is_none() {
                g.next_limit(&window(40, 40.0, 40));
            }
            probe
        });
        assert_eq!(probe, Some(20.0));
        let as_many = Window {
            probe: true,
            ..window(20, 20.0, 20)
        };
        assert_eq!(g.next_limit(&as_many), 20.0, "the lower limit stays");
        assert_eq!(g.long, Some(0.020), "and its latency becomes the reference");
    }
}

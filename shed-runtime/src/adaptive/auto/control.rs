//! [`AutoControl`]: drives [`Auto`] on a limiter from its completed
//! calls, and scales the default classes' queue-wait budgets by what it
//! learns.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use super::budget_scale::{BudgetScale, Unlearned};
use super::{
    slow_to_gather, Auto, Driver, Window, CROWD, FIRST_WINDOW_LONGEST, MIN_SAMPLES, STARTUP_SAMPLES,
};
use crate::class::ClassSpec;
use crate::limiter::Inner;
use crate::sync::Stoppable;

/// The settings of the default adaptive limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AutoSettings {
    /// The limit it starts from (default 2).
    pub initial: u32,
    /// The lowest limit (default 1).
    pub min: u32,
    /// The highest limit (default 10,000).
    pub max: u32,
    /// The shortest window after startup (default 100 ms); a window also
    /// lasts at least twice the no-load latency (one during startup) and
    /// until enough calls were measured.
    pub min_window: Duration,
    /// A class's default queue-wait budget becomes this many times the
    /// calls' service time ([`Auto::service_time`]; times their spread,
    /// their coefficient of variation, for calls of two lengths such as a
    /// cache's hits and misses, whose short calls queue behind the long
    /// ones), in the proportion of
    /// the class's default to 50 ms (default 4: `critical` may wait four
    /// times the service time,
    /// `optional` 1.6 times, `background` 0.4 times): a call that waited
    /// its whole budget still ends within 5x its service time, the
    /// shortest client timeout of the defaults grid. Three times refused
    /// more of the ordinary queueing of small pools below their capacity
    /// (2 workers of 200 ms at 0.8 load served 99% in time on 23 runs of
    /// 96 where four times did on 34), twice more still; with adaptive
    /// LIFO under overload a longer budget costs little.
    /// Until the first window closes, the mean of the calls measured so
    /// far stands for the service time (the class's own default until
    /// one is).
    pub wait_factor: f64,
}

impl Default for AutoSettings {
    fn default() -> Self {
        Self {
            initial: 2,
            min: 1,
            max: 10_000,
            min_window: Duration::from_millis(100),
            wait_factor: 4.0,
        }
    }
}

/// The budget of the default classes' reference (`critical`'s 50 ms).
const REFERENCE_WAIT: Duration = Duration::from_millis(50);

/// The most measured calls a window after the startup waits for. A
/// window's rate and mean are read within about 1/sqrt(n) of n calls, and
/// the rules compare them against steps of a quarter (a probe at 0.75 of
/// the limit, a slowdown at 0.6 of the rate, a queue at 1.5 times the
/// latency): 64 calls put those steps two standard errors out, where 32
/// (18%) read noise as a step. In a 4x slowdown a window of 32 calls held
/// a 16-worker pool's few dozen calls, and probes that served as many
/// calls within that noise took its limit to 9 slots (57% of the slowed
/// pool for a second). Chosen on the defaults grid over seeds 0..32, runs
/// meeting each goal of issue 10: every second after the third at 80% or
/// more at 3x, 213 to 225 of 320 (`fifo-16x10ms` 15 to 23 of 32,
/// `ps-16x10ms` 29 to 30); 90% goodput at 3x, 281 to 280 of 320; 99%
/// served at 0.8x, 211 to 212 of 320; back within 2 s, 525 to 530 of
/// 640. At 128 calls, 221 of 320 kept every second.
const STEADY_SAMPLES: u64 = 64;

/// Calls a slot a window after the startup waits for, up to
/// [`STEADY_SAMPLES`]: at two a slot, 16 workers' windows held 32 calls.
const STEADY_CALLS_PER_SLOT: f64 = 4.0;

/// Below this many slots a window waits for two calls a slot: a pool of
/// 2 workers of 200 ms completes 10 calls a second, and windows of 8
/// calls left `ps-2x200ms-const`'s limit a slot above the pool for whole
/// seconds (at 3x, 14 of 16 runs kept every second at 80% with windows of
/// 4 calls, 6 with 8).
const SMALL_POOL: f64 = 8.0;

/// The fewest calls a slot a first window closed early measures (see
/// [`AutoControl::first_window_due`]): six at the initial 2 slots.
const FIRST_WINDOW_CALLS_PER_SLOT: u64 = 3;

/// Drives [`Auto`] on a limiter from its completed calls. A measured
/// completion (a sampled one, or one that waited) checks a few atomics;
/// once the window is due (or a call raised the alarm, see
/// [`AutoControl::alarm_for`]), the first completion to take the
/// controller's lock without waiting closes it. No task, no runtime
/// needed.
pub(crate) struct AutoControl {
    epoch: Instant,
    /// When the window may close, in nanoseconds since `epoch`.
    next_close: AtomicU64,
    /// Measured calls the window needs before it may close.
    min_samples: AtomicU64,
    /// A call's time, in nanoseconds, that closes the window early (see
    /// [`AutoControl::alarm_for`]; `u64::MAX`: none does).
    alarm: AtomicU64,
    /// Measured calls the window needs before such a call may close it.
    alarm_samples: AtomicU64,
    /// The default budgets' scale: guessed from the calls measured so far
    /// (see [`AutoControl::guess_budgets`]) until a window closes with a
    /// service time ([`Auto::service_time`]).
    wait_scale: BudgetScale,
    settings: AutoSettings,
    /// Off while a pin, a warm-up ramp or a spawned
    /// [`AdaptiveLimit`](crate::adaptive::AdaptiveLimit) sets the capacity instead.
    driver: Stoppable<Driver<Auto>>,
}

impl std::fmt::Debug for AutoControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutoControl")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl AutoControl {
    /// A controller for a fresh limiter whose capacity is `settings.initial`.
    pub(crate) fn new(settings: AutoSettings) -> Self {
        let now = Instant::now();
        let bounds = (f64::from(settings.min), f64::from(settings.max));
        Self {
            epoch: now,
            next_close: AtomicU64::new(0),
            min_samples: AtomicU64::new(min_samples(
                f64::from(settings.initial).max(STARTUP_SAMPLES),
            )),
            wait_scale: BudgetScale::new(),
            alarm: AtomicU64::new(u64::MAX),
            alarm_samples: AtomicU64::new(u64::MAX),
            driver: Stoppable::new(Driver::fresh(
                Box::new(Auto::default()),
                bounds,
                f64::from(settings.initial),
                now,
            )),
            settings,
        }
    }

    /// A measured call that took `took` completed at `now`.
    #[inline]
    pub(crate) fn completed(&self, inner: &Inner, now: Instant, took: Duration) {
        // Stopped (a pin), nothing to learn: a pin before the first
        // window closed would otherwise guess on every measured call for
        // good.
        if !self.driver.is_on() {
            return;
        }
        if let Some(read) = self.wait_scale.unlearned() {
            self.guess_budgets(inner, read);
        }
        let since = nanos(now.saturating_duration_since(self.epoch));
        let next_close = self.next_close.load(Ordering::Relaxed);
        let due = since >= next_close
            && (inner.completions_so_far() >= self.min_samples.load(Ordering::Relaxed)
                || self.first_window_due(inner, next_close, since));
        if due || self.alarm_raised(inner, took) {
            self.close_if_due(inner, now, since, took);
        }
    }

    /// Whether the first window (the only one whose close is at 0) closes
    /// on fewer than its [`STARTUP_SAMPLES`] calls: once it lasted
    /// [`FIRST_WINDOW_LONGEST`] and measured
    /// [`FIRST_WINDOW_CALLS_PER_SLOT`] calls a slot, if its calls are slow
    /// enough that its dozen would take longer at the initial limit, and
    /// a [`CROWD`] waits for its slots.
    ///
    /// A dozen calls of 200 ms take 1.2 s at 2 slots, more than half of
    /// the 2 s a cold start has to find 1,000 such workers while
    /// thousands of calls wait: on `fifo-1000x200ms` over seeds 0..32,
    /// closing on 6 calls after half a second took the runs that served
    /// 99% at 0.8x from 12 to 29, and those back within 2 s from 11 to
    /// 28 (7 to 25 at 3x). A pool of a few workers, whose first window
    /// is the reference of every window after it, keeps its dozen: it
    /// draws no crowd at 3x, and closing early there too took holdout
    /// `fifo-3x200ms` at 3x from 22 runs at 90% of capacity to 14. Nor
    /// does a window made long by idleness close early: a service idle
    /// for 6 s after its start closed its first window on the trickle's
    /// calls of 10 ms as the load came, read them at a few
    /// calls a second, and served 1,346 calls in its first second of
    /// load for 1,440. The queue's lock is taken only past the other
    /// tests, on at most the few completions a first window of slow
    /// calls has left after its half second.
    fn first_window_due(&self, inner: &Inner, next_close: u64, since: u64) -> bool {
        let slots = u64::from(self.settings.initial.max(1));
        next_close == 0
            && since >= nanos(FIRST_WINDOW_LONGEST)
            && inner.completions_so_far() >= FIRST_WINDOW_CALLS_PER_SLOT * slots
            && inner
                .mean_so_far()
                .is_some_and(|mean| slow_to_gather(mean.as_secs_f64(), slots as f64))
            && inner.queued().0 as u64 >= CROWD
    }

    /// Whether a call that took `took` closes the window early (see
    /// [`AutoControl::alarm_for`]).
    /// The window's count is read last: with no alarm set (the usual
    /// case), a completion reads one atomic more than before the alarm.
    fn alarm_raised(&self, inner: &Inner, took: Duration) -> bool {
        nanos(took) >= self.alarm.load(Ordering::Relaxed)
            && inner.completions_so_far() >= self.alarm_samples.load(Ordering::Relaxed)
    }

    /// Closes the window if it is still due, or a call that took `took`
    /// still raises the alarm, unless the controller was stopped or
    /// another completion is closing it (see [`Stoppable`]: a
    /// [`AutoControl::disable`] that returned is seen, and one that is
    /// under way waits for this close). Both are read again under the
    /// lock: a completion that read them before another closed the window
    /// would close the next one, just opened, too.
    fn close_if_due(&self, inner: &Inner, now: Instant, since: u64, took: Duration) {
        self.driver.try_with(|driver| {
            if since >= self.next_close.load(Ordering::Relaxed) || self.alarm_raised(inner, took) {
                self.close_window(driver, inner, now, since);
            }
        });
    }

    /// Closes the window at `now` (`since` the epoch) and opens the next.
    fn close_window(&self, driver: &mut Driver<Auto>, inner: &Inner, now: Instant, since: u64) {
        let closed = driver.close(inner, now);
        driver.open(inner, now);
        let algorithm = &driver.algorithm;
        if let Some((window, capacity)) = closed {
            trace_window(&window, capacity, algorithm, since);
        }
        if let Some(budget_time) = algorithm.budget_time() {
            self.learn_budgets(budget_time);
        }
        let next = self.next_window(algorithm, driver.limit);
        self.min_samples.store(next.samples, Ordering::Relaxed);
        self.alarm.store(next.alarm, Ordering::Relaxed);
        self.alarm_samples
            .store(next.alarm_samples, Ordering::Relaxed);
        self.next_close
            .store(since.saturating_add(nanos(next.length)), Ordering::Relaxed);
    }

    /// What the window opening at `limit` slots needs before it may close
    /// (see [`NextWindow`]).
    ///
    /// One round trip while starting up from cold (growth is judged by
    /// the throughput there, see `Auto`; four or eight in a restarted
    /// startup, see `Auto::startup_round_trips`); then two, and long
    /// enough for a throughput and a mean latency worth comparing: right
    /// after the limit rose, the calls that complete first are the short
    /// ones.
    ///
    /// A cold-start window of calls of one length after a rise also waits
    /// for the calls the rise queued: in calls (`Auto::rise_samples`), and,
    /// up to 64 calls, in time too (`Auto::rise_round_trips`). Its alarm is
    /// still set by the calls it gathers: the alarm is for windows slow to
    /// gather theirs, and one set by the rise's calls closed the window on
    /// the first of them to complete, before its mean or its cohort read
    /// their queue (24 workers of 20 ms at 0.8 load: the window at 32
    /// slots closed on the first of 8 queued calls, the limit doubled to
    /// 64, which the load never filled, and the slowdown met 64 slots:
    /// 61% of the slowed pool served in its worst second).
    fn next_window(&self, algorithm: &Auto, limit: f64) -> NextWindow {
        let round_trip = algorithm.no_load_latency().unwrap_or_default();
        let (length, gathered, samples) = if algorithm.in_startup() {
            let gathered = min_samples(limit.max(STARTUP_SAMPLES));
            let length =
                (round_trip * algorithm.startup_round_trips()).max(Duration::from_millis(10));
            (
                algorithm
                    .rise_round_trips(limit)
                    .map_or(length, |rounds| length.max(round_trip.mul_f64(rounds))),
                gathered,
                algorithm
                    .rise_samples(limit)
                    .map_or(gathered, |rise| rise.max(gathered)),
            )
        } else {
            let samples = steady_samples(limit);
            (
                (round_trip * 2).max(self.settings.min_window),
                samples,
                samples,
            )
        };
        let (alarm, alarm_samples) =
            Self::alarm_for(algorithm, limit, gathered, self.settings.min_window);
        NextWindow {
            length,
            samples,
            alarm,
            alarm_samples,
        }
    }

    /// The call time that closes the next window early, and the calls it
    /// needs by then: for calls of one length, twice the no-load latency,
    /// after one call a slot, when the window needs more calls than its
    /// `samples` slots. Such a call waited a whole call inside the
    /// service (or every call got slower), which the window's mean reads
    /// exactly from a few calls, and a window of a dozen calls at a few
    /// a second lasts seconds: 2 workers of 200 ms slowed four times, at
    /// 4 slots in the cold start, queued every call past its clients' 1 s
    /// for the 4.8 s the window's 12 calls took. Calls of varying length
    /// raise no alarm (one call twice the mean is their noise), nor does
    /// a window of a call a slot or fewer: it closes as soon (and in a
    /// slowdown of 64 workers, windows closed on every slowed call read
    /// it as a queue and the limit swung between 40 and 85). After the
    /// startup, only a window whose calls take longer to come than the
    /// shortest window (`min_window`) raises one: a shorter one closes by
    /// time as soon, and the early closes of 8 workers of 2 ms, on calls
    /// that queued a moment inside, raised their p99 from 11 to 15 ms.
    fn alarm_for(algorithm: &Auto, limit: f64, samples: u64, min_window: Duration) -> (u64, u64) {
        let slots = (limit.round() as u64).max(1);
        let gathering = |no_load: Duration| {
            let rounds = u32::try_from(samples / slots).unwrap_or(u32::MAX);
            no_load.checked_mul(rounds).is_none_or(|d| d > min_window)
        };
        match algorithm.no_load_latency() {
            Some(no_load)
                if algorithm.calls_of_one_length()
                    && slots < samples
                    && (algorithm.in_startup() || gathering(no_load)) =>
            {
                (nanos(no_load * 2), slots)
            }
            _ => (u64::MAX, u64::MAX),
        }
    }

    /// Stops the controller; returns whether it was running. Returns only
    /// once no window is closing, so the capacity the caller sets next (a
    /// pin, a warm-up ramp's cap) is the last word: without the wait, a
    /// pin could land in the middle of a close and be overwritten by it,
    /// with the controller stopped for good.
    pub(crate) fn disable(&self) -> bool {
        self.driver.stop()
    }

    /// Whether the controller runs.
    pub(crate) fn is_enabled(&self) -> bool {
        self.driver.is_on()
    }

    /// Runs the controller again from where it stopped.
    pub(crate) fn enable(&self) {
        self.driver.start();
    }

    /// Scales the default budgets to a service time of `service_time` (see
    /// [`Auto::budget_time`]).
    fn learn_budgets(&self, service_time: Duration) {
        self.wait_scale.learn(self.scale_for(service_time));
    }

    /// Until the first window closes, scales the default budgets to the
    /// mean of the calls measured so far (`read`: the scale read before).
    /// Without it the budgets are the classes' defaults, set for calls of
    /// a few milliseconds: 2 workers of 200 ms at 0.8 load refused most
    /// of the calls that waited at their 50 ms, and a call refused is not
    /// measured, so the first window waited 13 s for its 12 calls while
    /// 40% of the calls offered were refused. The cold start's limit is
    /// small, so its calls barely queue inside the service: their mean is
    /// near the service time the first window will read. The learned
    /// scale of a window that closed since `read` is never overwritten by
    /// a guess (see [`BudgetScale`]).
    fn guess_budgets(&self, inner: &Inner, read: Unlearned) {
        if let Some(mean) = inner.mean_so_far() {
            self.wait_scale.guess(read, self.scale_for(mean));
        }
    }

    /// The default budgets' scale for a service time of `service_time`.
    fn scale_for(&self, service_time: Duration) -> f64 {
        self.settings.wait_factor * service_time.as_secs_f64() / REFERENCE_WAIT.as_secs_f64()
    }

    /// The queue-wait budget of a call of `class` without a `max_wait` of
    /// its own.
    pub(crate) fn budget(&self, class: &ClassSpec) -> Duration {
        let default = class.default_max_wait();
        if class.max_wait_is_set() {
            return default;
        }
        match self.wait_scale.get() {
            // Past what a `Duration` holds (a `wait_factor` that large):
            // no limit, which the queue's clock takes (see
            // `deadline::after`). `mul_f64` would panic in the caller.
            Some(scale) => Duration::try_from_secs_f64(default.as_secs_f64() * scale)
                .unwrap_or(Duration::MAX)
                .max(Duration::from_micros(100)),
            None => default,
        }
    }
}

/// What a window needs before it may close (see
/// [`AutoControl::next_window`]).
#[derive(Debug, PartialEq)]
struct NextWindow {
    /// Its shortest length.
    length: Duration,
    /// The measured calls it waits for.
    samples: u64,
    /// A call's time, in nanoseconds, that closes it early, and the
    /// measured calls it needs by then (see [`AutoControl::alarm_for`]).
    alarm: u64,
    alarm_samples: u64,
}

/// Reports a closed window and the limit it led to as a `debug` event of
/// target `shed::adaptive` (the README's *Watching it learn* names its
/// fields): once a window, under the controller's lock, never on an
/// admission. `since` is the close's time since the limiter was built.
fn trace_window(window: &Window, next: u32, algorithm: &Auto, since: u64) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    tracing::debug!(
        target: "shed::adaptive",
        since_start_ms = since / 1_000_000,
        limit = window.limit,
        next,
        probe = window.probe,
        calls = window.completed,
        finished = window.finished,
        elapsed_ms = ms(window.elapsed),
        mean_ms = ms(window.avg_latency),
        shortest_ms = ms(window.min_latency),
        cv = window.latency_cv,
        rate = window.throughput(),
        waiting = window.waiting,
        waiters = window.waiters,
        arrived = window.arrived,
        in_flight = window.max_in_flight,
        cohort = window.cohort_completed,
        cohort_mean_ms = ms(window.cohort_avg_latency),
        startup = algorithm.in_startup(),
        no_load_ms = algorithm.no_load_latency().map_or(f64::NAN, ms),
        "window closed"
    );
}

/// What a window needs measured: `wanted`, at most [`MIN_SAMPLES`].
fn min_samples(wanted: f64) -> u64 {
    (wanted.ceil() as u64).clamp(1, MIN_SAMPLES)
}

/// What a window after the startup needs measured at a limit of `limit`
/// slots: [`STEADY_CALLS_PER_SLOT`] calls a slot, at most
/// [`STEADY_SAMPLES`]; two a slot below [`SMALL_POOL`] slots.
fn steady_samples(limit: f64) -> u64 {
    let per_slot = if limit >= SMALL_POOL {
        STEADY_CALLS_PER_SLOT
    } else {
        2.0
    };
    ((per_slot * limit).ceil() as u64).clamp(1, STEADY_SAMPLES)
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;

//! What [`Auto`](super::Auto)'s rules keep of past windows, and the readings
//! they take of one: a windowed maximum, a smoothed throughput, pooled
//! windows, the calls' spread, and what a window's mean latency says
//! about a queue.

use super::{Window, ONE_LENGTH};

/// How many windows the throughput filter remembers.
const HORIZON: usize = 10;

/// The last [`HORIZON`] samples, for a windowed maximum.
#[derive(Debug, Clone, Default)]
pub(super) struct Filter {
    samples: [f64; HORIZON],
    len: usize,
    next: usize,
}

impl Filter {
    /// A filter holding `sample` alone.
    pub(super) fn only(sample: f64) -> Self {
        let mut filter = Self::default();
        filter.push(sample);
        filter
    }

    pub(super) fn push(&mut self, sample: f64) {
        self.samples[self.next] = sample;
        self.next = (self.next + 1) % HORIZON;
        self.len = (self.len + 1).min(HORIZON);
    }

    pub(super) fn max(&self) -> Option<f64> {
        self.samples[..self.len].iter().copied().reduce(f64::max)
    }
}

/// The recent throughputs of windows of [`MIN_SAMPLES`](super::MIN_SAMPLES)
/// calls or more, and, apart, those of the windows among them in which
/// the limit bound (which the first filter forgets sooner, as it takes
/// every such window).
#[derive(Debug, Clone, Default)]
pub(super) struct Rates {
    pub(super) all: Filter,
    pub(super) bound: Filter,
}

impl Rates {
    /// Rates holding `rate` alone, as read in a binding window.
    pub(super) fn only(rate: f64) -> Self {
        Self {
            all: Filter::only(rate),
            bound: Filter::only(rate),
        }
    }

    /// Takes the throughput of a window in which the limit did or did
    /// not bind.
    pub(super) fn push(&mut self, rate: f64, binds: bool) {
        self.all.push(rate);
        if binds {
            self.bound.push(rate);
        }
    }

    /// The highest rate of a binding window, else of any.
    pub(super) fn highest_bound(&self) -> Option<f64> {
        self.bound.max().or(self.all.max())
    }

    /// The highest rate of either filter.
    pub(super) fn highest(&self) -> Option<f64> {
        self.all
            .max()
            .into_iter()
            .chain(self.bound.max())
            .reduce(f64::max)
    }
}

/// The smoothed throughput of ordinary binding windows, and what it was
/// before the window that last moved it (a slowdown is scaled against
/// that, see `Auto::steady_step`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct BindingRate {
    now: Option<f64>,
    pub(super) before: Option<f64>,
    /// Whether the one window it holds came right after a window in which
    /// no call waited for a slot.
    pub(super) first_after_unbound: bool,
}

impl BindingRate {
    pub(super) fn get(&self) -> Option<f64> {
        self.now
    }

    /// Moves the smoothed rate towards a binding window's `rate`;
    /// `bound_before`: whether calls waited for slots in the window before.
    pub(super) fn add(&mut self, rate: f64, bound_before: bool) {
        self.first_after_unbound = self.now.is_none() && !bound_before;
        self.before = self.now;
        self.now = Some(self.now.map_or(rate, |r| r + (rate - r) * 0.3));
    }

    /// Starts again from `rate`, with nothing before it.
    pub(super) fn reset(&mut self, rate: Option<f64>) {
        *self = Self {
            now: rate,
            before: None,
            first_after_unbound: false,
        };
    }
}

/// Windows in which every slot was busy, pooled: calls completed per slot
/// and second over all of them.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Pool {
    /// Slots times seconds.
    slot_seconds: f64,
    /// Calls finished.
    pub(super) finished: f64,
}

impl Pool {
    pub(super) fn add(&mut self, w: &Window) {
        self.slot_seconds += w.limit * w.elapsed.as_secs_f64();
        self.finished += w.finished as f64;
    }

    /// Calls per slot and second; its inverse is the latency (Little).
    pub(super) fn per_slot(&self) -> Option<f64> {
        (self.finished > 0.0 && self.slot_seconds > 0.0).then(|| self.finished / self.slot_seconds)
    }

    /// The calls' latency by Little's law, in seconds: slot-seconds per
    /// call.
    pub(super) fn latency(&self) -> Option<f64> {
        self.per_slot().map(|p| 1.0 / p)
    }
}

/// Whether the load outran window `w`'s limit: calls were waiting for
/// slots when it closed, and at least as many calls came to wait in it as
/// finished, or still waited at its close. Below capacity a burst makes
/// some calls wait, but fewer than the limit serves (each arrival waits
/// only if it finds every slot taken); only a demand above what the limit
/// serves keeps its waiters coming as fast as its calls finish. A backlog
/// of a window's calls or more is demand the limit has not served, though
/// fewer come to wait while it drains: a cold start's crowd at 256 slots
/// for 300 workers of 100 ms at 0.8 load (337 waiting, 255 come to wait,
/// 256 finished), held there, drained it, overshot to 512 slots three
/// windows later, and settled at 395, which the slowdown's calls then
/// filled past their clients' timeout.
pub(super) fn load_outran_limit(w: &Window) -> bool {
    w.waiting && (w.arrived >= w.finished || w.waiters >= w.finished)
}

/// Whether window `w`, of mean latency `latency`, holds calls of about
/// one length: its shortest near its mean.
pub(super) fn holds_one_length(w: &Window, latency: f64) -> bool {
    w.min_latency.as_secs_f64() >= ONE_LENGTH * latency
}

/// The calls of window `w` (of calls of one length, with a mean latency of
/// `latency`) that waited inside the service: of those in flight, the
/// share that the no-load latency's part of their time does not account
/// for (Little's law, for a service holding its calls throughout).
pub(super) fn queued_calls(w: &Window, latency: f64, no_load: f64) -> f64 {
    w.max_in_flight as f64 - ran_without_queue(w, latency, no_load)
}

/// The calls of window `w` (as in [`queued_calls`]) that ran without
/// waiting inside the service.
pub(super) fn ran_without_queue(w: &Window, latency: f64, no_load: f64) -> f64 {
    w.max_in_flight as f64 * (no_load / latency).min(1.0)
}

/// A limit `from` that window `w` did not fill (the window's own, or the
/// one a probe in it left), brought down to `room` times the most calls in
/// flight in the window, but not below `floor` nor 2 slots, nor above
/// `from` (see `Auto::unfilled` and the cold start's fourfold rule).
pub(super) fn unfilled_limit(w: &Window, from: f64, room: f64, floor: f64) -> f64 {
    (room * w.max_in_flight as f64)
        .max(floor)
        .max(2.0)
        .min(from)
}

/// The relative noise of a mean or a rate read from `n` calls (one
/// standard error, for calls of exponential length): 1/sqrt(n).
pub(super) fn standard_error(n: u64) -> f64 {
    1.0 / (n.max(1) as f64).sqrt()
}

/// About how many of the latest measured calls [`Spread`] remembers: a
/// window of `n` calls leaves the spread before it a weight of
/// `SPREAD_CALLS / (SPREAD_CALLS + n)`.
const SPREAD_CALLS: f64 = 1024.0;

/// How many measured calls [`Spread`] pools into one batch, whose calls'
/// own spread it reads (see [`Spread::of_pooled_calls`]).
const BATCH_CALLS: f64 = 256.0;

/// The spread of the calls' latency over about the last [`SPREAD_CALLS`]
/// measured calls, read two ways.
///
/// - The windows' own spreads, pooled: a moving mean of their squared
///   coefficients of variation, each weighted by its calls
///   ([`Spread::factor`], which the noise allowances scale by). A window
///   of a few dozen calls of a heavy tail reads its own spread short more
///   often than not (its longest calls are rare); a thousand read it
///   within a few tenths (calls of σ 1 lognormal length, of 1.31, at 1.0
///   to 1.4 in the lab's traces).
/// - The spread of the calls themselves, batch by batch: the windows'
///   first two moments pooled until a batch holds [`BATCH_CALLS`] calls,
///   and the batches' squared spreads pooled as the windows' are
///   ([`Spread::of_pooled_calls`], which tells calls of two lengths).
///
/// The calls' mean latency is pooled as the windows' spreads are.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Spread {
    calls: f64,
    cv_squared: f64,
    mean: f64,
    /// The windows since the last batch closed.
    batch: Moments,
    /// Calls in the batches pooled, and their squared spreads' moving mean.
    batches_calls: f64,
    batches_cv_squared: f64,
}

/// Calls' latencies as their count, sum and sum of squares (seconds).
#[derive(Debug, Clone, Copy, Default)]
struct Moments {
    calls: f64,
    sum: f64,
    sum_of_squares: f64,
}

impl Moments {
    /// Adds `calls` calls of mean `mean` and squared coefficient of
    /// variation `cv_squared` (a population variance: the mean square is
    /// the mean squared times `1 + cv_squared`).
    fn add(&mut self, calls: f64, mean: f64, cv_squared: f64) {
        self.calls += calls;
        self.sum += mean * calls;
        self.sum_of_squares += mean * mean * (1.0 + cv_squared) * calls;
    }

    /// The calls' squared coefficient of variation, 0 without a mean.
    fn cv_squared(&self) -> f64 {
        if self.sum <= 0.0 {
            return 0.0;
        }
        let mean = self.sum / self.calls;
        (self.sum_of_squares / self.calls / (mean * mean) - 1.0).max(0.0)
    }
}

/// A moving mean of `before` over `kept` calls and `value` over `n` more,
/// each weighted by its calls.
fn weighted(before: f64, kept: f64, value: f64, n: f64) -> f64 {
    (before * kept + value * n) / (kept + n)
}

impl Spread {
    pub(super) fn add(&mut self, w: &Window) {
        if w.completed < 2 {
            return;
        }
        let n = w.completed as f64;
        let kept = self.calls.min(SPREAD_CALLS);
        let cv_squared = w.latency_cv * w.latency_cv;
        let mean = w.avg_latency.as_secs_f64();
        self.cv_squared = weighted(self.cv_squared, kept, cv_squared, n);
        self.mean = weighted(self.mean, kept, mean, n);
        self.calls = kept + n;
        self.batch.add(n, mean, cv_squared);
        if self.batch.calls >= BATCH_CALLS {
            let calls = self.batch.calls;
            let kept = self.batches_calls.min(SPREAD_CALLS);
            self.batches_cv_squared = weighted(
                self.batches_cv_squared,
                kept,
                self.batch.cv_squared(),
                calls,
            );
            self.batches_calls = kept + calls;
            self.batch = Moments::default();
        }
    }

    /// The calls' mean latency (seconds) over the same windows, 0 before
    /// any.
    pub(super) fn mean(&self) -> f64 {
        self.mean
    }

    /// How many times the noise of calls of exponential length (see
    /// [`standard_error`]) a reading of these calls has: their
    /// coefficient of variation, never below 1 (less spread calls keep
    /// the allowance of exponential ones, which the rules were set by;
    /// calls of one length are judged by rules of their own).
    pub(super) fn factor(&self) -> f64 {
        self.cv_squared.sqrt().max(1.0)
    }

    /// The coefficient of variation of the calls themselves, batch by
    /// batch: the batches' pooled, or the first batch's so far; 0 before
    /// any calls.
    ///
    /// Not the windows' own spreads pooled ([`Spread::factor`]): a window
    /// of `n` calls reads at most `sqrt(n - 1)`, and one too short to hold
    /// a long call reads the short ones alone. A cache's hits and misses
    /// (nine in ten of 8.5 ms, one of 424 ms: a spread of 3.7) on 64
    /// processor-sharing workers read 0.9 to 2.7 in the cold start's
    /// windows of 12 calls, pooled under 2, and the floor of
    /// `Auto::keep_no_load_near_the_mean` did not hold there; those
    /// windows' calls pooled read 2.3 by the fourth and 3.2 by the sixth
    /// (`a_cold_start_of_calls_of_two_lengths_reads_their_spread_before_its_windows_do`).
    /// Nor the calls of every window pooled: their means differ by a
    /// slowdown's scale too, and a slowdown of calls of exponential
    /// length would read as spread (two windows four times slower, pooled
    /// with a thousand calls before them, held the limit of
    /// `a_slowdown_after_an_overload_holds_no_more_than_headroom_times_the_product`
    /// at 29 slots for 20 workers, not 24). A batch of 256 calls spans a
    /// slowdown's start once.
    pub(super) fn of_pooled_calls(&self) -> f64 {
        if self.batches_calls > 0.0 {
            self.batches_cv_squared.sqrt()
        } else {
            self.batch.cv_squared().sqrt()
        }
    }
}

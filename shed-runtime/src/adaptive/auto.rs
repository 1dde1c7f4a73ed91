//! The default limit: what a limiter runs when nobody gave it a capacity.
//!
//! [`Auto`] estimates the service's concurrency from throughput and
//! latency (the bandwidth-delay product, as TCP BBR does), starting small
//! and growing fast; [`AutoControl`] drives it from completed calls, with
//! no task to spawn and nothing added to an admission that does not wait.
//!
//! Here, how a window is read (`Auto::decide`); the rules of the startup
//! in `startup`, of the steady state (probes, recoveries, slowdowns) in
//! `steady`, what they keep of past windows in `stats`; the controller
//! and the budgets it scales in `control` and `budget_scale`.

mod budget_scale;
mod control;
mod startup;
mod stats;
mod steady;
#[cfg(test)]
mod tests;

use std::time::Duration;

use super::{Driver, LimitAlgorithm, Window};
pub(crate) use control::AutoControl;
pub use control::AutoSettings;
use stats::{
    load_outran_limit, queued_calls, standard_error, unfilled_limit, BindingRate, Filter, Pool,
    Rates, Spread,
};

/// A throughput below this share of the usual one, with latency up, is a
/// slowdown of every call rather than a queue.
const SLOWER: f64 = 0.6;
/// Consecutive windows of queueing after which a probe tells a queue the
/// shrink did not reach from a stale no-load latency.
const STALE_WINDOWS: u32 = 5;
/// How far Little's latency (limit over throughput) may exceed the
/// calls' own mean latency before the window counts as partly idle. While
/// the limit binds throughout, the two agree within the bias of a short
/// window (its first completions are the short calls: about 2x at most for
/// exponential service times).
const IDLE_BEFORE: f64 = 4.0;
/// The shortest window that can count as partly idle, in seconds.
const IDLE_WINDOW: f64 = 1.0;
/// A window whose shortest call is at least this share of its mean latency
/// holds calls of about one length.
const ONE_LENGTH: f64 = 0.8;
/// Calls queued inside the service, read from a window of calls of one
/// length, that count as a queue: half a call (a window's mean of calls
/// of one length is exact to far less).
const QUEUED_CALLS: f64 = 0.5;
/// A window of calls of one length whose mean is within this factor of
/// the lowest such mean, and whose spread is under [`UNQUEUED_SPREAD`],
/// ran every call it held in flight without a queue (see
/// `Auto::note_unqueued_in_flight`). The window's most calls in flight
/// is a moment's, its mean and spread the whole window's: a burst past
/// the pool slows only the calls it meets. 48 processor-sharing workers
/// of 50 ms at 0.8 load met a burst of 60 calls in a window that read
/// 50.31 ms with a spread of 1%; counted at 2% and 2%, the pool was
/// taken to run 60 calls at once, a slowdown met at 60 slots was read
/// as calls of 250 ms with no queue (calls of 200 ms shared by 60, in
/// truth), and the slowed seconds served 1-19% of the slowed capacity.
/// It is also how near the no-load latency of calls of one length must
/// come back to the one before a slowdown for the slowdown to be over
/// (see `Auto::note_unslowed_rate`): either way, the same latency as
/// calls of one length read it, within what a real service's vary by.
const UNQUEUED_LATENCY: f64 = 1.005;
/// The largest coefficient of variation of such a window (see
/// [`UNQUEUED_LATENCY`]).
const UNQUEUED_SPREAD: f64 = 0.005;
/// The fewest measured calls a window needs, once the limit allows them.
const MIN_SAMPLES: u64 = 32;
/// The calls' spread ([`Spread::of_pooled_calls`](stats::Spread::of_pooled_calls))
/// past which they are of two lengths or more, not one length's noise: twice
/// that of calls of exponential length (lognormal calls of σ 1 read 1.31,
/// a cache's hits and misses 3.7; see `Auto::keep_no_load_near_the_mean`).
const TWO_LENGTHS: f64 = 2.0;
/// Round trips a window of a startup restarted from the steady state
/// lasts (see `Auto::startup_round_trips`).
const RESTARTED_ROUND_TRIPS: u32 = 4;
/// After the startup, a limit a window did not fill comes down to this
/// many times the most calls in flight in it (see `Auto::unfilled`).
const UNFILLED_ROOM: f64 = 1.25;
/// Seconds of windows of calls of one length between their probes (see
/// `Auto::probe_limit`): BBR refreshes its lowest round trip as often.
const ONE_LENGTH_PROBE_EVERY: f64 = 10.0;
/// Calls waiting for a cold start's first few slots that show a demand
/// far beyond a few workers (see `Auto::stalled_in_a_crowd`, and
/// `AutoControl::first_window_due`): half a
/// second into a cold start at 3x, the lab's pools of 2 to 6 workers of
/// 200 ms kept at most 42 calls waiting at 2 slots, its pools of 200 to
/// 1,000 workers of 100-200 ms, at 0.8x as at 3x, 425 to 7,126.
const CROWD: u64 = 64;
/// The fewest measured calls a startup window needs, whatever the limit:
/// the first windows of two or four calls read a rate off by 2x, which
/// set the no-load latency and ended the startup far below the pool. Chosen
/// on the defaults grid (seeds 0..8) and checked on seeds 8..16: 12 met the
/// goal at 3x on 7 of 10 shapes there, 16 on 6 (`fifo-64x50ms-const`
/// 57%), and 8 and 24 lost `fifo-1000x200ms` (29% and 44%); each window
/// costs the slowest pools 12 service times at a limit of 1.
const STARTUP_SAMPLES: f64 = 12.0;
/// How long a first window of slow calls waits for its
/// [`STARTUP_SAMPLES`] while a crowd waits for its slots (see
/// `AutoControl::first_window_due`); 0.3 s and 0.7 s met the goals of
/// the defaults grid on about as many runs (tried before its latency
/// gate).
const FIRST_WINDOW_LONGEST: Duration = Duration::from_millis(500);

/// Whether calls of mean latency `mean` (seconds) are slow to gather at
/// `slots`: the [`STARTUP_SAMPLES`] a startup window needs take longer than
/// [`FIRST_WINDOW_LONGEST`] there.
fn slow_to_gather(mean: f64, slots: f64) -> bool {
    mean * STARTUP_SAMPLES / slots >= FIRST_WINDOW_LONGEST.as_secs_f64()
}

/// The shortest latency, in seconds, a window's mean reads as, and the
/// no-load latency and service time are reported as: a `Duration`'s
/// resolution. A mean of 0 (no call timed, or calls under a nanosecond)
/// would divide the rules' ratios by 0. A recovery scales the no-load
/// latency down by the throughput's rise, which a window of absurd
/// throughput (140,883 calls in 1 µs) took to 1e-12 s, and reported as a
/// `Duration` of 0 it set the default budgets' scale to 0.
const SHORTEST_LATENCY: f64 = 1e-9;

/// The default adaptive limit: finds the concurrency a service sustains
/// from what its completions show, with no latency target to pick.
///
/// - **Startup.** From a small limit, multiply it by `startup_gain` every
///   window (of at least 12 calls; the first, of calls whose dozen
///   would take longer, closes on 6 after half a second if 64 calls wait
///   for its slots) in which the limit binds (in the cold
///   start, in which the load outran the limit: calls waited for a slot at
///   its close, and as many came to wait, or still waited, as finished;
///   below capacity a window can reach its limit in a burst with none
///   waiting, or fewer than the slots serve, and its throughput is the
///   load's, though its calls, if of one length, still show their
///   latency; by its square for a window that took two round trips or
///   more, to the nearest, to gather its calls, or for any window from
///   64 slots once the rising windows hold 32 calls of varying length,
///   if the window
///   before rose and every slot still completes calls at the rate the
///   rises showed, without a queue), as long as the
///   throughput rises with it (by at least a quarter of the limit's rise,
///   judged against the rate per slot of all the startup windows that
///   rose, not the last one alone). When it stops rising
///   (two or three windows in a row: a window of a few dozen calls is
///   noisy, and the one right after a rise lags) or stops rising while the
///   window's mean latency passes 1.2 times the lowest reading of the
///   rising windows (calls queue inside the service; for calls of varying
///   length, each window's reading with its noise allowed for and capped
///   by the rising windows' pool as it is then), set the limit to
///   `headroom` times the bandwidth-delay product: the highest recent
///   throughput (of windows of 32 calls or more) times the lowest recent
///   latency (each window's read by Little's law with its noise allowed
///   for, or, for calls of about one length
///   (the window's, or most rising windows'), as their mean), which is the
///   concurrency the service's workers absorb without queueing (Little's
///   law); until a window of 32 calls was seen, the limit itself stands
///   for the product, or the highest limit the throughput followed if it
///   failed to follow the last one over two windows or more, or once with
///   a queue. A queue alone does not end it.
/// - **A second look.** A cold start about to end while its rising
///   windows hold fewer than 32 calls first goes back, for one window, to
///   the last limit the throughput followed (judged once the higher
///   limit's calls are done). If that window completes fewer calls a
///   second than the stalled ones, by more than half the limit's fall,
///   and its calls took at most 1.25 times as long, the slots above were
///   working: a lucky window had set the rate per slot. The startup then
///   goes on from the stalled limit, with the stalled windows and the
///   second look as its pool and no-load latency. Otherwise it ends.
/// - **A crowd.** A cold start that stalls below 32 slots while 64 calls
///   or more wait for them (a demand a few workers rarely draw) does not
///   end: the limit doubles from the stalled one, judged against the
///   stalled windows. If that rise is followed, the windows before the
///   stall read too high, and the stalled windows with the rise read the
///   no-load latency; if not, the stall was a queue, and the startup
///   goes on from its last followed limit and pool before the stall
///   (the lowest reading of its rising windows, cleared at the stall,
///   stays cleared: the pool caps the queue's reference alone), and its
///   next stall ends it, crowd or not. So does a stall whose second look
///   (above) did not show the slots working, if a crowd waits at the
///   look's close.
/// - **Below capacity.** A window closing with no call waiting for a slot
///   neither shrinks the limit nor ends a startup, whatever its latency
///   or throughput: those then show the load, not the service (nor does
///   it grow a cold start, see above). Nor, after the startup, does a
///   window of calls of varying length whose calls waited but fewer came
///   to wait, or still waited, than finished shrink it: the load did not
///   outrun the limit, a burst did. Calls of one length that queued
///   inside the service are the exception: they show the limit past the
///   service's concurrency, and end a startup. And a cold start that grows
///   fourfold brings a limit its window did not fill down to twice the
///   most calls in flight in it: a limit far above the load would let a
///   slowdown queue calls past their clients, as a TCP sender's unused
///   window would burst (RFC 7661). A window at that limit or below then
///   grows the limit only if its slots keep the rising windows' rate.
///   After the startup (and to end a restarted one, whose windows would
///   otherwise never end it) an unfilled limit comes down to a quarter
///   above the most calls in flight, never below the product with its
///   headroom; and such a window of 32 calls or more whose latency is
///   below the no-load one by more than its noise sets it at once (a
///   slowdown's scaled latency is stale once the service recovered).
/// - **Steady.** A window whose latency is past `tolerance` times the
///   lowest recent one shrinks the limit to `headroom` times the
///   bandwidth-delay product (at most by half; until a window of 32 calls
///   was seen, the product takes the highest rate of the shorter windows);
///   a window in which the limit binds while latency shows no queue grows
///   it by `growth` (within 10% of the lowest, and then judged by
///   throughput as in startup, over windows of four round trips; by one
///   slot at least), or by a quarter of that. Such a restarted startup
///   below the highest limit held since the last startup stops there for
///   a window before it goes past: the service ran there before the cut.
/// - **Slowdown.** Two windows in a row with latency up and the throughput
///   below 0.6 of the usual (the smoothed throughput of binding windows,
///   or before any since the startup, the highest recent one of a window
///   of 32 calls or more; for calls of one length, of one in which the
///   limit bound) at the same
///   limit are every call getting slower, not a queue (which keeps the
///   throughput): the limit stays (a pool of workers needs as many calls
///   in flight as before), and the no-load latency is scaled by the
///   throughput's fall (against the usual throughput before the window
///   the slowdown began in, which the slowed calls already pull down;
///   for calls of one length, never past the slowed window's mean, and
///   that mean itself if the window held no more calls in flight than
///   a window of them at the lowest latency they were read at did,
///   within 0.5% and with a spread under 0.5%: the service runs that
///   many at once without a queue, and a slowdown does not take workers
///   away; if it held more, never past that mean times that many over
///   the calls in flight, which is the slowed latency if the pool is no
///   larger than seen (Little's law), and if that is what it is read
///   as, the limit comes down to that many at once, and the first
///   window since that runs no more, while the slowdown is remembered,
///   reads its mean as the no-load latency; a slowdown read while
///   another is remembered, never past the no-load latency before the
///   first scaled by the throughput's fall since then). For
///   calls of varying length after an overload (the load above the limit
///   in the three windows before), the limit comes down to `headroom`
///   times the product before the slowdown if it was above (scaled up by
///   the calls' spread, see `Auto::noise`), and holds while the
///   throughput, counted per slot of the limit before the slowdown,
///   stays down: only a queue past twice the tolerance moves it.
///   Once a window in which calls waited completes 0.9 of the usual
///   throughput before the slowdown again, at twice the limit before it
///   or more and with the no-load latency still the scaled one, the next
///   probe tries that limit (see the probe): a pool of workers serves as
///   many calls a second there, a service without one a quarter.
/// - **Probe.** Every `probe_every` windows in which the limit binds (for
///   calls of varying length, see below), one window runs at `probe` times
///   the limit. If it admits as many calls a second (and more than its
///   own slots would with no queue, by two standard errors of its count),
///   the rest of the concurrency was only queueing: the lower limit
///   stays. Either way its latency, if below the no-load one by more
///   than its noise, becomes it at once: sustained overload would
///   otherwise never show it. If it admits fewer, by more than its noise
///   and by more than half its cut in slots, it ran below the service's
///   concurrency, where no call queues inside: for calls of varying
///   length the no-load latency rises to its mean or to the lowest
///   window's since the last probe, whichever is lower (a latency read
///   low at the cold start otherwise reads the calls' own as a queue in
///   every other window). A throughput 1.5 times
///   the usual one is a recovery: the usual rate becomes the new one. If
///   the calls' latency fell below the no-load one, it becomes the no-load
///   latency and the limit grows as in startup (calls of one length then
///   probe at half the limit once it ends). If not, the limit holds, and
///   a window of 64 calls or more of varying length scales the no-load
///   latency down by the throughput's rise, as a slowdown scales it up by
///   its fall (the window itself, of slow calls and fast, is not judged
///   further); a shorter window, or calls of one length, send the next
///   probe to half the limit. In a startup restarted from the steady
///   state, such a window whose rate per slot is also above the last
///   window's by three standard errors of its count (a tenth at least),
///   with a mean below the no-load latency by more than its noise, is a
///   recovery too, not concurrency found: the startup ends at the limit,
///   the mean becomes the no-load latency, and the next probe tries the
///   limit before the last slowdown. Once a window with calls waiting
///   shows the throughput back at what it was before the last slowdown,
///   the no-load latency is the one from then, times how much longer a
///   call a second holds a slot (Little's law), but by no more than the
///   cold start read the calls' mean above it (what holds the slots
///   longer past that is a queue inside the pool); a throughput above
///   that one only lowers it, and the rises of calls of one length
///   from the product start their pacing over (see *Calls of one
///   length*). Until then the slowdown is remembered while the no-load
///   latency is above the one from before by more than `tolerance`
///   times, or for calls of one length by more than 0.5% (their
///   latency reads exactly). A restarted
///   startup's window of 128 calls or more whose mean is 1.2 times the
///   no-load latency ends it, whatever its throughput read (its windows
///   are long, and a recovery inside one reads as the throughput
///   following the limit), and its windows learn the no-load latency
///   down as the steady state's do.
///
/// - **Calls of one length.** If most windows of the cold start that
///   rose held calls of about one length (the shortest at least 0.8 of
///   the mean), a window whose shortest call took at least 0.8 of the
///   no-load latency is read exactly: its queue inside the service is the
///   calls in flight times the share of their latency past the no-load
///   one (Little), and half a call of it is a queue (in the cold start, a
///   mean latency 1.1 times the no-load one, or 1.05 times it for the
///   calls admitted in the window, 4 or more, which ends it whatever the
///   throughput read: the calls admitted before a rise dilute the queue
///   it made). After a rise, a cold-start window of them waits for its
///   limit and the one it rose from in calls (up to 64; below that, for
///   2.25 round trips of the no-load latency at least), so that the
///   calls the rise queued complete in it, and a window that took round
///   trips grows by those its dozen calls needed at its limit, not by a
///   batch of completions it waited for. The limit settles at the product itself (no
///   `headroom`), and takes the periodic probe only once in 10 s of its
///   windows (a no-load latency learned high reads the pool's queue as
///   none, and only fewer slots show it). With no queue at the
///   product, it rises by a slot or a sixteenth (a restarted startup
///   whose first queue ends it), at once the first time, then only after
///   `probe_every`, twice and four times that many windows while the
///   rises find nothing; a rise that finds more goes on by twice its step
///   (1, 2, 4... slots; stopping, as any restarted startup does, at the
///   highest limit held since the last startup), and, as a slowdown or a
///   recovery does, starts the pacing over. A rise ends no lower than the highest limit without a
///   queue on the way, and ends at once if the calls change speed. Below
///   0.9 of the product they grow as other calls do. A window of them
///   that queued inside the service while the throughput held (a
///   slowdown drops it) reads the pool itself: the calls in flight that
///   ran without the queue, never fewer than a window of them ran at
///   once without one. Until a rise finds more, the product is taken no
///   higher than that pool, both where a queue brings the limit down and
///   where the rises from the product start. A queue read at the limit
///   the window before ran without one (no rise put it there) while the
///   throughput fell under 0.9 of the usual is cut as any other, but if
///   the next window runs its calls at the same no-load latency without
///   a queue, the limit goes back at once, once: the queue was a
///   moment's (a stall of the machine). A window's
///   throughput counts no more than its slots (the most in flight in it
///   or the window before) complete at its latency: such calls end in
///   batches, and a window closing just after one reads more. A window
///   that needs more calls than it has slots (in startup, below 12 slots,
///   whatever a rise makes it wait for; after it, below 64, and only if
///   its calls take longer to come than `min_window`) closes early, once every slot completed a call, on a
///   call that took twice the no-load latency: it waited a whole call
///   inside the service, or every call got slower. A cold-start window
///   whose every call waited so (its shortest over 1.1x the no-load
///   latency) ends the startup, however few its calls; one whose mean
///   alone is over it does not grow the limit when no window rose
///   before it to judge its throughput by. A window after the
///   startup whose shortest call took more than 1.05 times the no-load
///   latency, with less than half a call queued, teaches its shortest as
///   the no-load latency (a slowdown scaled by a load's rate reads it
///   low). After the cold start (in a restarted startup too), a window
///   whose own calls are of one length and whose mean is below the
///   no-load latency sets it at once: a queue only adds to their mean,
///   and one a slowdown scaled up is stale once they run faster.
/// - **Idle before the load.** A window that binds, lasted at least 1 s
///   and ten times its calls' latency, and whose calls would have filled
///   the limit for less than a quarter of it, began before the load came
///   (a window closes at its first calls): its throughput, which counts
///   the idle time, is not judged (the limit holds), its latency is.
///
/// Every allowance for a window's noise (a mean or a rate read from `n`
/// calls) is in standard errors of calls as spread as the service's: the
/// coefficient of variation of the windows' calls (`Window::latency_cv`),
/// pooled over about the last thousand measured calls, and never less
/// than 1, that of calls of exponential length.
///
/// Both filters span the last ten windows. Latency that reads as a queue
/// for five windows in a row, without the throughput's fall, is probed:
/// if fewer slots admit as many calls a second, it was a queue (the lower
/// limit stays); if they admit fewer, by more than the window's noise, it
/// is the service's own, and becomes the no-load latency. Either way, or
/// if it showed neither, the count of five starts over.
///
/// Calls of two very different lengths (a handler in front of a cache:
/// most calls quick, a few fifty times longer) keep a no-load latency of
/// their pooled mean over `headroom` at least, once the calls' own
/// spread (read in batches of 256 calls, not window by window) passes
/// twice that of calls of exponential length (`keep_no_load_near_the_mean`):
/// the cold start's short windows complete the quick calls and none of
/// the long ones, and the lowest window's mean reads a fraction of the
/// calls' own. For the same reason a startup restarted in a slowdown of
/// such calls waits twice the round trips a window, and grows by a
/// quarter, not twice (`slowed_with_two_lengths`), and a slowdown of
/// such calls is judged against the rates of the windows after the cold
/// start only (`highest_recent_rate`). Any slowdown's fall is counted
/// per call in flight, and a held one's throughput per slot of the limit
/// before it: a limit cut below the calls the usual throughput was read
/// with completes fewer calls a second at any speed. A service
/// of a handful of workers, or of processor sharing through a
/// slowdown, can still be throttled below capacity:
/// it pins its capacity (`SHED_CAPACITY`, `Config::capacity`;
/// `docs/defaults.md`, *Where calls of mixed lengths fall short*).
#[derive(Debug, Clone)]
pub struct Auto {
    /// Growth per window (one round trip) during startup (default 2).
    pub startup_gain: f64,
    /// The limit over the bandwidth-delay product (default 1.2; 1 for
    /// calls of one length).
    pub headroom: f64,
    /// Latency over the lowest recent one that means a queue inside the
    /// service (default 1.5; calls of one length are read by the calls
    /// queued instead).
    pub tolerance: f64,
    /// Growth per window while the limit binds and no queue shows
    /// (default 1.25).
    pub growth: f64,
    /// Windows in which the limit binds between probes (default 8; 0:
    /// never; calls of one length probe once in 10 s of their windows),
    /// and between rises of calls of one length that find nothing.
    pub probe_every: u32,
    /// The probe's fraction of the limit (default 0.75).
    pub probe: f64,
    startup: bool,
    /// The service's latency without a queue inside it, in seconds.
    no_load: Option<f64>,
    /// Throughput of the windows of [`MIN_SAMPLES`] calls or more (and,
    /// apart, of those in which the limit bound): what the
    /// bandwidth-delay product is read from, and a slowdown judged
    /// against before any binding window since the startup.
    rates: Rates,
    /// Throughput of every window, however few its calls.
    any_rates: Filter,
    /// `rates` of the windows after the cold start: what a slowdown of
    /// calls of two lengths is judged against (see
    /// [`Auto::highest_recent_rate`]).
    rates_after_cold_start: Rates,
    /// The most calls in flight of each recent window: how many calls
    /// the throughputs a slowdown is judged against were read with (see
    /// [`Reading::fewer_in_flight`]).
    in_flight: Filter,
    /// Binding windows since the last probe.
    since_probe: u32,
    /// Seconds of windows of calls of one length since the last probe.
    one_length_unprobed: f64,
    /// Whether the startup was restarted from the steady state (see
    /// [`Auto::startup_round_trips`]).
    restarted: bool,
    /// Consecutive windows that read as queueing, and their lowest latency.
    stale: u32,
    stale_latency: f64,
    /// Throughput of ordinary binding windows, smoothed: what a probe is
    /// judged against.
    binding_rate: BindingRate,
    /// The throughputs a slowdown under way is read against, set at its
    /// first slowed window.
    fall_from: Option<FallFrom>,
    /// Windows in a row whose throughput had not fallen (see
    /// `steady_step`) in which the load outran the limit (see
    /// `load_outran_limit`). A window whose throughput fell neither counts
    /// nor breaks the run.
    overloaded_windows: u32,
    /// The limit before the running probe.
    before_probe: Option<f64>,
    /// The last startup window's limit and throughput.
    startup_last: Option<(f64, f64)>,
    /// Startup windows in a row whose throughput did not keep up.
    startup_stalls: u32,
    /// The startup windows whose throughput followed the limit.
    startup_pool: Pool,
    /// Whether the next probe goes to half the limit.
    deep_probe: bool,
    /// Whether a probe was asked to tell a queue from a stale no-load
    /// latency (latency high for [`STALE_WINDOWS`] windows at the product).
    stale_probe: bool,
    /// Consecutive windows that read as a slowdown.
    slower_windows: u32,
    /// Binding windows of calls of one length without a queue since the
    /// limit last grew.
    calm: u32,
    /// Whether the last window held calls of about one length.
    one_length: bool,
    /// Rises of calls of one length from the product in a row that found
    /// no more concurrency (each doubles the wait for the next).
    idle_rises: u32,
    /// What the last window left the next to judge by (see
    /// [`WindowBefore`]).
    before: WindowBefore,
    /// The limit a rise of calls of one length left, which showed no
    /// queue: where its startup ends at the lowest.
    rise_from: Option<f64>,
    /// The highest limit the steady state held since the last startup
    /// ended: a startup restarted below it stops there for a window
    /// before it goes past (see `Auto::stop_at_held`).
    steady_high: Option<f64>,
    /// The windows of the cold start that rose which held calls of about
    /// one length, and those which did not.
    one_length_votes: (u32, u32),
    /// The most calls in flight in a window of calls of one length that
    /// all ran at the lowest latency such calls were read at (see
    /// `Auto::note_unqueued_in_flight`): the service runs at least that
    /// many at once without a queue (a slowdown slows its calls, it does
    /// not take workers away). See `Auto::ran_unqueued`. Never lowered: a
    /// pool that has since lost workers (a database that dropped
    /// connections) would have its queue in a slowdown read as the slowed
    /// latency, which only a probe at fewer slots then shows.
    unqueued_in_flight: u64,
    /// The lowest mean of a window of calls of one length: what
    /// `unqueued_in_flight` counts windows against. Not the no-load
    /// latency, which a limit above the pool can teach high.
    one_length_floor: f64,
    /// The pool the last window of calls of one length that queued
    /// inside the service read while the throughput held (see
    /// `Auto::read_pool`), until a rise finds more: the product of
    /// calls of one length is taken no higher (see
    /// `Auto::product_of_one_length`).
    queue_read_pool: Option<f64>,
    /// Whether the last slowdown's no-load latency was read at the pool
    /// seen (`Auto::slowed_at_seen_pool`), the least it can be, and no
    /// window has since read it without a queue (see
    /// `Auto::confirm_read_at_seen_pool`).
    read_at_seen_pool: bool,
    /// The most slots the window before this one held (its limit, or the
    /// calls in flight, if more): as many may be in flight at this
    /// window's start.
    window_before: f64,
    /// Whether the last window judged had calls waiting for slots.
    last_bound: bool,
    /// Whether the probe at half the limit waits for the end of the
    /// startup (a recovery of calls of one length, see `note_recovery`).
    probe_after_startup: bool,
    /// The startup windows that stalled at the current limit, pooled:
    /// what a cold start's second look is judged against.
    stalled: Pool,
    /// The second look under way: the limit that stalled and its stalled
    /// windows.
    second_look: Option<(f64, Pool)>,
    /// Whether the cold start took its second look.
    looked_again: bool,
    /// A cold start went on past a stall at a few slots because a crowd
    /// waited (see `Auto::stalled_in_a_crowd`): the next binding window
    /// says whether the stall was a lucky window before it or a queue.
    /// Until then, the startup's last followed limit and its pool before
    /// the stall, which a queue keeps.
    crowd_rise: Option<(Option<(f64, f64)>, Pool)>,
    /// A crowd's rise was not followed: the stall was a queue, and a later
    /// stall ends the cold start whatever waits (see
    /// `Auto::stalled_in_a_crowd`).
    crowd_rise_failed: bool,
    /// The lowest reading of the cold start's rising windows (Little's
    /// with its noise allowed for, or the mean of calls of one length),
    /// none capped by the pool of its time (see `startup_step`).
    cold_lowest: f64,
    /// The calls' mean service time over the no-load latency, as the cold
    /// start's pooled windows read it (see [`Auto::service_time`]).
    mean_over_lowest: f64,
    /// The service before the last slowdown scaled the no-load latency,
    /// until a recovery shows and the no-load latency is back near its
    /// own (see `Auto::note_unslowed_rate` and
    /// `Auto::learn_no_load_back_at_speed`).
    unslowed: Option<Unslowed>,
    /// The limit the next probe tries: the one before the slowdown, once
    /// the throughput is back (see `Auto::note_unslowed_rate`).
    recovery_probe: Option<f64>,
    /// The spread of the calls' latency (see [`Auto::noise`]).
    spread: Spread,
    /// The lowest mean latency of the windows of [`MIN_SAMPLES`] calls or
    /// more since the last probe (see `Auto::after_probe`).
    low_since_probe: f64,
}

/// The throughputs (calls a second) before a slowdown under way, set at
/// its first slowed window (see `steady_step`).
#[derive(Debug, Clone, Copy)]
struct FallFrom {
    /// The usual one, which the slowdown is scaled against.
    usual: f64,
    /// The one that counts the pool (see `Auto::slowed_limit`): the usual
    /// one, or the highest recent one if higher where the smoothed rate
    /// holds only the window the slowdown began in.
    pool: f64,
}

/// What a slowdown scaled from: the no-load latency (seconds), the usual
/// throughput (calls a second) and the limit before it.
#[derive(Debug, Clone, Copy)]
struct Unslowed {
    no_load: f64,
    rate: f64,
    limit: f64,
    /// Whether the windows before the slowdown showed the load above the
    /// limit (see `Auto::overloaded_windows`): the limit was the one the
    /// service's throughput had set, not one a load below capacity left
    /// (see `Auto::holds_through_slowdown`).
    overloaded: bool,
}

impl Default for Auto {
    fn default() -> Self {
        Self {
            startup_gain: 2.0,
            headroom: 1.2,
            tolerance: 1.5,
            growth: 1.25,
            probe_every: 8,
            probe: 0.75,
            startup: true,
            no_load: None,
            rates: Rates::default(),
            any_rates: Filter::default(),
            rates_after_cold_start: Rates::default(),
            in_flight: Filter::default(),
            since_probe: 0,
            one_length_unprobed: 0.0,
            restarted: false,
            stale: 0,
            stale_latency: f64::INFINITY,
            binding_rate: BindingRate::default(),
            fall_from: None,
            overloaded_windows: 0,
            before_probe: None,
            startup_last: None,
            startup_stalls: 0,
            startup_pool: Pool::default(),
            deep_probe: false,
            stale_probe: false,
            slower_windows: 0,
            calm: 0,
            one_length: false,
            idle_rises: 0,
            before: WindowBefore::default(),
            rise_from: None,
            steady_high: None,
            one_length_votes: (0, 0),
            unqueued_in_flight: 0,
            one_length_floor: f64::INFINITY,
            window_before: 0.0,
            last_bound: false,
            probe_after_startup: false,
            stalled: Pool::default(),
            second_look: None,
            looked_again: false,
            crowd_rise: None,
            crowd_rise_failed: false,
            cold_lowest: f64::INFINITY,
            mean_over_lowest: 1.0,
            unslowed: None,
            recovery_probe: None,
            spread: Spread::default(),
            low_since_probe: f64::INFINITY,
            queue_read_pool: None,
            read_at_seen_pool: false,
        }
    }
}

impl Auto {
    /// The lowest recent window latency: the service time without a
    /// queue inside the service, as far as the limiter has seen.
    pub fn no_load_latency(&self) -> Option<Duration> {
        self.no_load.map(latency_duration)
    }

    /// The calls' mean service time without a queue inside the service:
    /// what the default budgets are multiples of. The no-load latency is
    /// the lowest of noisy readings, which the limit's rules need (see
    /// `startup_step`), and it reads calls of varying length low (a first
    /// window of 12 calls read 64 workers of 50 ms at 34 ms); as much
    /// higher as the cold start's pooled windows read their calls, up to
    /// twice. Budgets of four times the lowest reading refused the bursts
    /// of 4 workers of 1 ms at 0.8 load that waited longest.
    pub fn service_time(&self) -> Option<Duration> {
        self.no_load
            .map(|d| latency_duration(d * self.mean_over_lowest))
    }

    /// The calls' spread ([`Spread::of_pooled_calls`]), if it shows calls
    /// of two lengths or more (past [`TWO_LENGTHS`]).
    fn spread_of_two_lengths(&self) -> Option<f64> {
        let spread = self.spread.of_pooled_calls();
        (spread > TWO_LENGTHS).then_some(spread)
    }

    /// What the default budgets are multiples of: the service time, times
    /// the calls' spread once it shows calls of two lengths (past
    /// [`TWO_LENGTHS`]). Below capacity a queue waits about
    /// `(1 + spread²) / 2` times as long as one of calls of exponential
    /// length at the same load (Kingman's approximation): the short calls
    /// wait behind the long ones. Budgets of four times the mean refused
    /// those ordinary waits: 16 workers of a cache's hits and misses
    /// (mean 10 ms, spread 3.7) at 0.8 load served 98.5% of their calls
    /// in time where 16 slots and a budget of the clients' timeout served
    /// 99.7% (`fifo-16x10ms-mix` seed 25; times the spread, 99.6%). Their
    /// clients wait for the misses (8.5 times the mean), so a budget that
    /// long is no wait past them; times the spread's square, the waits
    /// under overload ran past the clients of processor-sharing pools,
    /// and every second at 80% at 3x was kept on 80 runs of 192 instead
    /// of 87 (times the spread, 82).
    pub(super) fn budget_time(&self) -> Option<Duration> {
        let service = self.service_time()?;
        if let Some(spread) = self.spread_of_two_lengths() {
            // A window of n calls reads a spread of at most sqrt(n - 1), so
            // this is finite; past a `Duration`'s range it is no limit, as
            // a budget that large is (see `AutoControl::budget`).
            Some(
                Duration::try_from_secs_f64(service.as_secs_f64() * spread)
                    .unwrap_or(Duration::MAX),
            )
        } else {
            Some(service)
        }
    }

    /// Whether the limit is still in its startup (growing fast).
    pub fn in_startup(&self) -> bool {
        self.startup
    }

    /// How many round trips a startup window lasts: one from the cold
    /// start, where the limit must grow fast; four in a startup restarted
    /// from the steady state, where the limit is near the service's
    /// concurrency already. There a window of one round trip holds a batch
    /// or two of completions (calls of one length, started together, end
    /// together) and reads a rate the pool cannot do: a 16-worker pool of
    /// 20 ms calls read 1,100 calls a second of its 800 from 22 calls, the
    /// limit doubled to 42, and every few seconds the next window waited
    /// twice the service time. Twice that in a startup restarted in a
    /// slowdown of calls of two lengths (see
    /// [`Auto::slowed_with_two_lengths`]).
    pub(crate) fn startup_round_trips(&self) -> u32 {
        if !self.restarted {
            1
        } else if self.slowed_with_two_lengths() {
            2 * RESTARTED_ROUND_TRIPS
        } else {
            RESTARTED_ROUND_TRIPS
        }
    }

    /// Whether the calls are of two lengths (their spread, read batch by
    /// batch, past [`TWO_LENGTHS`]) and the service is still slowed: a
    /// slowdown is remembered, and the throughput the startup last rose
    /// from is at most [`SLOWER`] times the one before it. A startup
    /// restarted then waits twice the round trips a window, and grows by
    /// the steady state's step (`growth`), not `startup_gain`.
    ///
    /// A startup window completes the short calls first, more so the
    /// more slots the rise added: the long calls it admitted are still in
    /// flight when it closes, and its rate reads what the pool cannot do.
    /// In a slowdown the long calls are slower still, and the windows of
    /// a few slowed round trips are short next to them: `ps-16x10ms-mix`
    /// at 0.8x, seed 3, whose 16 processor-sharing workers were slowed to
    /// 400 calls a second, read 530, 962 and 1,149 in windows of 130 ms,
    /// and the limit doubled from 20 slots to 158 (a later restart, to 260); the
    /// recovery met 173 slots, and two seconds after it served 17.5% and
    /// 0.2% of their calls in time. Windows twice as long read the
    /// misses' share nearer to theirs, and a pool of workers slowed down
    /// needs no more calls in flight than before (`holds_through_slowdown`
    /// reads it so too): a rise that the bias still lets through grows the
    /// limit by a quarter, not twice (seed 18 had doubled from 64 slots to
    /// 257 on windows of 920 ms). Over seeds 0..64 of `grid --mixed`, runs
    /// meeting each goal (goodput, worst second, steady, back within 2 s,
    /// no outage) went from 339/147/169/675/736 to 344/150/197/670/755
    /// (longer windows alone: 337/145/177/675/755; four times as long,
    /// more steady runs and 17 fewer back within 2 s, windows that
    /// straddle the recovery; see `docs/defaults.md`). A recovery's
    /// restarted startup, whose throughput is back, keeps windows of the
    /// usual length and doubles: it must find the pool within 2 s.
    pub(super) fn slowed_with_two_lengths(&self) -> bool {
        self.spread_of_two_lengths().is_some()
            && self.unslowed.is_some_and(|before| {
                self.startup_last
                    .is_some_and(|(_, rate)| rate <= SLOWER * before.rate)
            })
    }

    /// Highest recent throughput times lowest recent latency.
    fn bandwidth_delay(&self) -> Option<f64> {
        Some(self.rates.all.max().or(self.any_rates.max())? * self.no_load?)
    }

    /// Whether the cold start read the service's calls as of about one
    /// length: most of its windows that rose held such calls.
    fn calls_of_one_length(&self) -> bool {
        let (of_one, not) = self.one_length_votes;
        of_one > not
    }

    /// Whether window `w` holds calls of about one length: the cold start
    /// read them so, and none of the window's took much less than
    /// `reference` (the no-load latency, or the window's own mean).
    fn of_one_length(&self, w: &Window, reference: f64) -> bool {
        self.calls_of_one_length() && w.min_latency.as_secs_f64() >= ONE_LENGTH * reference
    }

    /// The limit over the bandwidth-delay product for a window whose
    /// calls were (`one_length`) or were not of about one length. The
    /// product of calls of one length is exact (their latency has no
    /// spread, and a queue shows in it, see `decide`), so the limit is
    /// the product itself: at 1.2x it, a pool of 16 workers of 20 ms held
    /// 19 slots, and 3 calls in 19 waited a whole call inside it.
    fn headroom_for(&self, one_length: bool) -> f64 {
        if one_length {
            1.0
        } else {
            self.headroom
        }
    }

    /// The limit `from` (the window's own, or the one a probe in it left)
    /// after window `w`, in which no call waited for a slot (its calls'
    /// mean latency `latency`, of about `one_length` or not): like a TCP
    /// sender's window its application leaves unused (RFC 7661), a
    /// quarter above the most calls in flight in it (twice that
    /// left 1,684 slots for 1,000 workers at 0.8 load, and a slowdown then
    /// queued 684 slowed calls inside the service), but never below what
    /// the service was measured to sustain (the product with its
    /// headroom, which a burst after a quiet spell needs at once) nor
    /// above `from`. The product takes the window's latency if lower
    /// than the no-load one: calls that did not wait for a slot below
    /// capacity barely queue inside the service, and a no-load latency
    /// learned in a slowdown and not yet unlearned (542 ms for 1,000
    /// workers of 200 ms) held the limit at twice the pool.
    fn unfilled(&self, w: &Window, from: f64, latency: f64, one_length: bool) -> f64 {
        let rate = self.highest_rate().or(self.any_rates.max());
        let no_load = self.no_load.map(|d| d.min(latency));
        let product = rate
            .zip(no_load)
            .map_or(0.0, |(rate, d)| self.headroom_for(one_length) * rate * d);
        unfilled_limit(w, from, UNFILLED_ROOM, product)
    }

    /// The highest recent throughput of a window in which the limit
    /// bound, else of any window of `MIN_SAMPLES` calls: what the service
    /// was last seen to sustain.
    fn highest_rate(&self) -> Option<f64> {
        self.rates.highest_bound()
    }

    /// The highest throughput of the recent windows of `MIN_SAMPLES`
    /// calls, binding or not: what a slowdown is judged against before
    /// any binding window since the startup. Below capacity the windows
    /// that did not bind show the load's rate, which the service
    /// sustained, and the cold start's binding windows the rates of lower
    /// limits: judged against those alone (2,493 calls a second at 512
    /// slots, under a load of 4,000), a 4x slowdown of 1,000 workers of
    /// 200 ms was scaled 1.8 times, its slowed calls read as a queue, and
    /// the limit fell to 447 slots (30-40% of the slowed pool for four
    /// seconds). Calls of one length take the binding windows' alone, if
    /// any are recent: one that did not bind and closed just after a
    /// batch of their completions read 1,828 calls a second from a pool
    /// of 1,280, which scaled the slowed no-load latency to 286 ms for
    /// calls of 200, and the limit grew into a queue past the clients'
    /// 250 ms (`fifo-64x50ms-const` at 0.8x, 15.6% of the slowed pool for
    /// a second).
    ///
    /// Calls of two lengths (their spread past [`TWO_LENGTHS`]) take the
    /// windows after the cold start alone. The cold start's windows last
    /// a round trip of its first calls, the short ones, and complete the
    /// short calls while the long ones still hold their slots: 100
    /// workers of 20 ms (nine calls in ten of 3.4 ms, one of 170) read
    /// 6,800 calls a second at 32 slots for a pool of 5,000. Judged
    /// against that, the first windows after it, at 2,370 calls a second,
    /// read as a slowdown: the limit held at 47 slots for 16 s, every
    /// rise refused, and a load of 0.8 of the pool saw 57.7% of its calls
    /// served in time (`fifo-100x20ms-mix`, seed 22).
    fn highest_recent_rate(&self) -> Option<f64> {
        if self.calls_of_one_length() {
            return self.highest_rate();
        }
        if self.spread_of_two_lengths().is_some() {
            self.rates_after_cold_start.highest()
        } else {
            self.rates.highest()
        }
    }

    /// Whether window `w`'s mean `latency` is below `reference` by more
    /// than its noise: two standard errors of its calls' count (see
    /// [`Auto::noise`]); none for calls of one length, whose mean is
    /// exact.
    fn below_beyond_noise(&self, w: &Window, latency: f64, reference: f64) -> bool {
        let noise = if self.calls_of_one_length() {
            0.0
        } else {
            2.0 * self.noise(w.completed)
        };
        latency < reference * (1.0 - noise)
    }

    /// The relative noise of a mean or a rate read from `n` calls: one
    /// standard error for calls as spread as this service's have been
    /// ([`Spread`]), never less than for calls of exponential length.
    /// Allowed for as if exponential, lognormal calls (σ 1, a
    /// coefficient of variation of 1.31) read as a queue, or as no
    /// queue, by noise alone a third more often than the rules meant.
    fn noise(&self, n: u64) -> f64 {
        self.spread.factor() * standard_error(n)
    }

    /// Raises the no-load latency of calls of two lengths (their own
    /// spread, read batch by batch, past [`TWO_LENGTHS`]: see
    /// [`Spread::of_pooled_calls`](stats::Spread::of_pooled_calls), which
    /// a cold start's windows of a few calls reach where their own
    /// spreads do not) to their pooled mean latency over the headroom, if
    /// below: the bandwidth-delay product is then not below the
    /// concurrency such calls hold at the highest recent throughput (by
    /// Little's law, that throughput times their mean). Called as each
    /// window is read, before its rules, which may lower it again until
    /// the next (a probe's reading, a slowdown's).
    ///
    /// The lowest of windows' means is the no-load latency of calls of one
    /// length's noise, which scatters means around the calls' own. Calls of
    /// two lengths it reads at a fraction of theirs. A window shorter than
    /// the long calls completes the short ones and none of the long, which
    /// hold their slots all the while: a cache's hits and misses (nine in
    /// ten of 0.85 ms, one of 42 ms, 5 ms on average), whose cold start's
    /// windows of 10 ms read 0.6-1.1 ms. Against that latency every window
    /// read a queue or a slowdown, each shrink brought the limit below the
    /// concurrency the load needed, and a slowdown read at 11.9 slots for
    /// 64 workers held there for 8 s (`grid --mixed`, `fifo-64x5ms-mix`
    /// at 0.8x: 9.3% of the calls in time on the worst of 8 seeds, where
    /// the former fixed default served 99.7%; 99.6% with this floor).
    ///
    /// Over the headroom, because a queue inside the service adds to the
    /// mean: a floor of the mean itself read the queue of an overload as
    /// the calls' own latency, and the product would grow with it. Not
    /// for calls of one length or of one length's noise (exponential,
    /// lognormal), whose lowest means read their latency within their
    /// noise, and which a queue's mean would lift: the grid's shapes
    /// never reach the spread, and of its lognormal ones only
    /// processor sharing under an overload, now and then
    /// (`ps-64x50ms-logn` and `ps-16x10ms-logn` at 3x: a few tenths of
    /// a point of goodput, a few milliseconds of p99).
    fn keep_no_load_near_the_mean(&mut self) {
        if self.spread_of_two_lengths().is_none() {
            return;
        }
        let floor = self.spread.mean() / self.headroom;
        if floor > 0.0 {
            self.no_load = Some(self.no_load.map_or(floor, |d| d.max(floor)));
        }
    }

    /// Moves the no-load latency `weight` of the way to `latency`.
    ///
    /// As a weighted mean of the two, not as `d + (latency - d) *
    /// weight`: with a weight of 1 that form cancels to 0 when `d` is
    /// many orders above `latency` (a no-load latency of 2.4e7 s, scaled
    /// by a window of absurd throughput, met calls of 1 ns), and a
    /// no-load latency of 0 made the bandwidth-delay product, and with it
    /// the limit, 0.
    fn learn_no_load(&mut self, latency: f64, weight: f64) {
        self.no_load = Some(match self.no_load {
            Some(d) => d * (1.0 - weight) + latency * weight,
            None => latency,
        });
    }

    /// Counts window `w` (its calls' mean `latency`) toward
    /// `unqueued_in_flight` if it held calls of one length that all ran
    /// at the lowest latency such calls were read at: its mean within
    /// [`UNQUEUED_LATENCY`] of it, its spread under [`UNQUEUED_SPREAD`].
    /// Not against the no-load latency: 400 processor-sharing workers of
    /// 100 ms at 3x had learned it at 104 ms, at 416 slots, whose windows
    /// then counted 416 calls as run without a queue. A real service's
    /// calls of one length vary by a few percent, so its windows seldom
    /// count, and its slowdowns are scaled by the throughput's fall as
    /// before.
    fn note_unqueued_in_flight(&mut self, w: &Window, latency: f64) {
        if !self.of_one_length(w, latency) {
            return;
        }
        self.one_length_floor = self.one_length_floor.min(latency);
        if w.latency_cv <= UNQUEUED_SPREAD && latency <= UNQUEUED_LATENCY * self.one_length_floor {
            self.unqueued_in_flight = self.unqueued_in_flight.max(w.max_in_flight);
        }
    }
}

impl LimitAlgorithm for Auto {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn probe_limit(&mut self, limit: f64) -> Option<f64> {
        if self.startup {
            return None;
        }
        // The limit before a slowdown, once the throughput is back (see
        // `Auto::note_unslowed_rate`); a probe at half the limit after a
        // recovery waits for the next window.
        let recovery = self.recovery_probe.take().filter(|&before| before < limit);
        let deep = recovery.is_none() && std::mem::take(&mut self.deep_probe);
        // Calls of one length show the queue in every window, against
        // the no-load latency (see `decide`): for them the periodic probe
        // goes up, not down (see `steady_step`). Unless that latency was
        // learned high (a cold start on a busy machine read a real
        // database's queries of 21 ms at 36 ms): at its product every
        // call waits inside the service, as long as it reads as none, and
        // only fewer slots show it, so they probe down too, but every 10
        // s, not every few windows (a probe at a limit that was right
        // costs a quarter of a window's calls).
        let periodic = self.probe_every > 0
            && if self.one_length {
                self.one_length_unprobed >= ONE_LENGTH_PROBE_EVERY
            } else {
                self.since_probe >= self.probe_every
            };
        if self.before_probe.is_some()
            || !(recovery.is_some() || self.stale_probe || deep || periodic)
        {
            return None;
        }
        self.since_probe = 0;
        self.one_length_unprobed = 0.0;
        self.before_probe = Some(limit);
        let fraction = if deep { 0.5 } else { self.probe };
        Some(recovery.unwrap_or(limit * fraction).max(1.0))
    }

    fn next_limit(&mut self, w: &Window) -> f64 {
        self.decide(w)
    }
}

/// A latency in seconds as a `Duration` of one nanosecond at least (see
/// [`SHORTEST_LATENCY`]).
fn latency_duration(seconds: f64) -> Duration {
    Duration::from_secs_f64(seconds.max(SHORTEST_LATENCY))
}

/// What a window of calls of one length leaves the next one to judge by
/// (see `Auto::steady_step`), taken by the next window whatever it is.
#[derive(Debug, Clone, Copy, Default)]
struct WindowBefore {
    /// Its limit, if it bound and ran its calls without a queue.
    calm_limit: Option<f64>,
    /// The limit it cut on a queue read at the limit the window before it
    /// ran without one, while the throughput fell, and the no-load
    /// latency then: a moment of the service's, if the next window runs
    /// without a queue.
    cut_without_rise: Option<(f64, f64)>,
}

/// What `decide` reads from one window.
#[derive(Debug, Clone, Copy)]
struct Reading {
    /// The calls' mean latency, in seconds.
    latency: f64,
    /// Calls completed per second.
    rate: f64,
    /// Whether calls waited for slots.
    binds: bool,
    /// Whether the limit bound and the window's throughput is the
    /// service's (not that of a window partly idle before its load).
    rate_binds: bool,
    /// Whether the window's calls were of about one length: its shortest
    /// call took at least [`ONE_LENGTH`] of the no-load latency.
    one_length: bool,
    /// How many times fewer calls the window held in flight than the
    /// recent windows did at most, those counted no higher than the
    /// bandwidth-delay product; 1 if as many or more. A pool of workers
    /// completes fewer calls a second with fewer of them in flight,
    /// whatever their speed (see `Auto::steady_step`).
    fewer_in_flight: f64,
}

impl Auto {
    /// The next limit after window `w` (see the type's docs): the window
    /// read, then judged as a probe, in startup or in the steady state.
    fn decide(&mut self, w: &Window) -> f64 {
        let before = std::mem::take(&mut self.before);
        // A window in which no call finished, or that took no time, has
        // no throughput (it reads 0), and every rule below judges one: as
        // a rate, it made the bandwidth-delay product 0 and the limit 1.
        // The controller's windows last 10 ms at least and hold a
        // completion; a window that does not is not judged. Past this,
        // every window's rate is above 0.
        if w.finished == 0 || w.elapsed.is_zero() {
            return if w.probe {
                self.before_probe.take().unwrap_or(w.limit)
            } else {
                w.limit
            };
        }
        let latency = w.avg_latency.as_secs_f64().max(SHORTEST_LATENCY);
        self.spread.add(w);
        self.keep_no_load_near_the_mean();
        // Calls of one length that start together end together: a window
        // that closes just after a batch of completions reads a rate its
        // slots cannot sustain (a 16-connection database read 852 calls a
        // second of its 760, which held the limit at 18). Little's law
        // bounds what the window's slots complete at their latency, which
        // such calls read exactly; the slots are the most that were in
        // flight in this window or the one before (after the limit fell,
        // a window still completes the calls the higher limit admitted,
        // and its own slots bounded 64 workers slowed to 200 ms at 197
        // calls a second of 320). Not calls of varying length: right
        // after a rise their window's mean is the short calls'.
        let slots = w.limit.max(w.max_in_flight as f64);
        let rate = if self.calls_of_one_length() {
            w.throughput().min(slots.max(self.window_before) / latency)
        } else {
            w.throughput()
        };
        self.window_before = slots;
        let binds = w.limit_binds();
        let bound_before = std::mem::replace(&mut self.last_bound, binds);
        // A window that binds, that lasted far longer than its calls, and
        // whose calls would have filled the limit for less than a quarter
        // of it, was idle before the load came (a window closes at its
        // first calls, however long it waited for them): its throughput
        // counts the idle time. A service idle for minutes after its start
        // reads as a few calls a minute, and Little's law then gives a
        // "latency" of seconds, which sets the windows' length and the
        // budgets. Its latency is the calls' own; its throughput says
        // nothing, so nothing is judged by it. (The length matters: the
        // first windows of a cold start hold a few calls, the short ones
        // first, whose mean is far below Little's latency too.)
        let idle_before = binds
            && w.elapsed.as_secs_f64() >= (10.0 * latency).max(IDLE_WINDOW)
            && w.limit / rate > IDLE_BEFORE * latency;
        if idle_before && w.probe {
            // Nothing to judge the probe by: back to the limit it left.
            return self.before_probe.take().unwrap_or(w.limit);
        }
        if idle_before && self.startup {
            // The next window, bound throughout, is judged afresh.
            self.startup_last = None;
            self.startup_stalls = 0;
            self.stalled = Pool::default();
            self.second_look = None;
            self.crowd_rise = None;
            self.crowd_rise_failed = false;
            return w.limit;
        }
        let mut r = Reading {
            latency,
            rate,
            binds,
            rate_binds: binds && !idle_before,
            one_length: false,
            fewer_in_flight: 1.0,
        };
        // The highest of noisy rates is biased high (and with it the
        // bandwidth-delay product): only a window of a few dozen calls
        // counts.
        let after_cold_start = !self.startup || self.restarted;
        if !idle_before && w.finished >= MIN_SAMPLES {
            self.rates.push(rate, binds);
            if after_cold_start {
                self.rates_after_cold_start.push(rate, binds);
            }
        }
        if !idle_before {
            self.any_rates.push(rate);
            // Calls past the bandwidth-delay product queued in the
            // service and added nothing to the throughput.
            r.fewer_in_flight = self.in_flight.max().map_or(1.0, |most| {
                let ran = self.bandwidth_delay().map_or(most, |bdp| most.min(bdp));
                (ran / w.max_in_flight.max(1) as f64).max(1.0)
            });
            self.in_flight.push(w.max_in_flight as f64);
        }
        // The no-load latency only comes down here (a probe's window in
        // `after_probe`, at once), and only for a mean below it by more
        // than its noise (two standard errors, see `Auto::noise`; calls
        // of one length read their mean exactly): the lowest of a stream
        // of noisy means read 1 ms calls as 0.7 ms, whose product then
        // held 4 workers at 0.8 load behind 2.9 slots. A little at a
        // time, but at once from a window of
        // `MIN_SAMPLES` calls in which none waited for a slot: below
        // capacity they barely queue inside the service, and the slowed
        // latency a slowdown scaled it to is stale. Unlearned a third at a
        // time, 1,000 workers of 200 ms kept 310 ms five windows after
        // their recovery, a second slowdown scaled that to 1,102 ms for
        // calls of 800, and its queue inside the service read as none. It
        // goes up only when it is shown to be stale (the stale probe: see
        // `steady_step` and `after_probe`). In a startup restarted from the
        // steady state too, whose windows that do not rise learn nothing
        // else: 16 workers of 10 ms, whose recovery's probe read 21.5 ms,
        // restarted at 18 slots, read calls of 10.6 and 12.1 ms there and
        // at 22.5 slots, and ended the startup with no rise; the 19.3 ms
        // they kept read a queue inside the service as none, and the limit
        // held 42 to 49 slots until the next slowdown.
        if after_cold_start
            && !w.probe
            && self
                .no_load
                .is_none_or(|d| self.below_beyond_noise(w, latency, d))
        {
            let weight = if !binds && w.finished >= MIN_SAMPLES {
                1.0
            } else {
                0.3
            };
            self.learn_no_load(latency, weight);
        }
        // Calls of one length read their no-load latency exactly, and a
        // queue only adds to it: a window whose own calls are of one
        // length (its shortest near its mean) and whose mean is below the
        // no-load latency shows it stale, and sets it at once, in a
        // startup restarted from the steady state too. A third at a time,
        // and not at all in a restarted startup, 400 workers of 100 ms
        // kept 264-335 ms, learned in a slowdown, for eight seconds after
        // their recovery; their calls of 132-198 ms read as no queue, the
        // limit grew to 1,184 slots, and the next slowdown met it: every
        // slowed call took a second, for clients of 500 ms (5 s at 0%).
        // A window with a call much shorter than its mean (a cache hit,
        // an error's fast path) says nothing about the others.
        if after_cold_start
            && self.of_one_length(w, latency)
            && self.no_load.is_some_and(|d| latency < d)
        {
            self.no_load = Some(latency);
        }

        self.confirm_read_at_seen_pool(w, latency);
        self.note_unqueued_in_flight(w, latency);
        self.note_unslowed_rate(w, r);
        if !w.probe && w.completed >= MIN_SAMPLES {
            self.low_since_probe = self.low_since_probe.min(latency);
        }
        if w.probe {
            return self.after_probe(w, r);
        }
        // After the recovery's own reading, which the speed before the
        // slowdown corrects once the throughput is back at it.
        let recovered = self.note_recovery(w, r);
        self.learn_no_load_back_at_speed(w, r);
        if recovered {
            // The recovery's window mixes calls slowed before it with
            // fast ones: judged against the no-load latency it just
            // scaled, its mean read as a queue, and 70 slots for 64
            // workers went to 52 as the pool sped up. The next window,
            // of the new speed, is judged.
            return w.limit;
        }
        let no_load = self.no_load.unwrap_or(latency);
        r.one_length = self.of_one_length(w, no_load);
        self.one_length = r.one_length;
        let queueing = if r.one_length {
            // Calls of one length show a queue inside the service as
            // it is: every slot past the service's concurrency adds its
            // call's wait to the window's mean, so the calls in flight
            // that did not run are those over the no-load latency's share
            // (Little). Against `tolerance` (1.5x), 16 workers of 20 ms
            // ran their limit at 19-26 and a quarter of the calls waited
            // a whole call inside.
            queued_calls(w, latency, no_load) >= QUEUED_CALLS
        } else {
            latency > self.tolerance * no_load
        };
        // The usual throughput before this window; before any binding
        // window since the startup, the highest recent one (see
        // `Auto::highest_recent_rate`). Under a load below capacity the
        // limit had not bound since the cold start, and a slowdown of
        // every call that made it bind read as a queue: 64 workers of 50
        // ms slowed to 200 ms lost their limit to 12 slots, and three
        // quarters of the slowed pool stood idle.
        let usual_rate = self
            .binding_rate
            .get()
            .or_else(|| self.highest_recent_rate())
            .filter(|_| r.rate_binds && !self.startup);
        let fallen = usual_rate.is_some_and(|usual| rate < SLOWER * usual);
        if !fallen {
            self.overloaded_windows = if load_outran_limit(w) {
                self.overloaded_windows.saturating_add(1)
            } else {
                0
            };
        }
        if r.rate_binds && !(queueing && fallen) {
            self.binding_rate.add(rate, bound_before);
        }
        if self.startup {
            return self.startup_step(w, r);
        }
        self.steady_high = Some(self.steady_high.map_or(w.limit, |high| high.max(w.limit)));
        self.steady_step(w, r, no_load, queueing, usual_rate, before)
    }
}

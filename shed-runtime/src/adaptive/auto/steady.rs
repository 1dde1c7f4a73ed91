//! The steady state: probes, recoveries, slowdowns, and the slow
//! sawtooth between the bandwidth-delay product and a queue (see
//! [`Auto`]'s docs).

use super::stats::{load_outran_limit, ran_without_queue, Filter, Pool, Rates};
use super::{
    Auto, FallFrom, Reading, Unslowed, Window, WindowBefore, MIN_SAMPLES, SLOWER, STALE_WINDOWS,
    UNQUEUED_LATENCY,
};

/// A probe whose throughput is at least this share of the usual one shows
/// that the concurrency it removed was only queueing.
const PROBE_HOLDS: f64 = 0.95;
/// How much longer than the no-load latency the shortest of a window's
/// calls of one length takes to show the service's own latency (a real
/// service's calls of one length vary by a few percent).
const ONE_LENGTH_SLOWER: f64 = 1.05;
/// The share of the throughput before a slowdown that shows the service
/// back to it (see `Auto::note_unslowed_rate`).
const RECOVERED: f64 = 0.9;
/// How far above the limit before a slowdown the limit must be for a
/// probe back at that one (see `Auto::note_unslowed_rate`).
const RECOVERY_PROBE_FROM: f64 = 2.0;
/// The fewest calls a recovery's window completes for its throughput's
/// rise to scale the no-load latency (see `Auto::note_recovery`): as
/// many as the longest window after the startup holds, whose rate is read
/// within an eighth.
const SCALED_RECOVERY_CALLS: u64 = 64;
/// Windows in a row before a slowdown that must show the load above the
/// limit for the slowdown's limit to hold (see
/// `Auto::holds_through_slowdown`).
const OVERLOADED_WINDOWS: u32 = 3;
/// How many times the tolerance a slowed window's latency must pass
/// for its queue to shrink a limit that holds through the slowdown (see
/// `Auto::holds_through_slowdown`).
const FAR_QUEUE: f64 = 2.0;
/// How many times the usual throughput shows the service faster (a
/// recovery).
const FASTER: f64 = 1.5;
/// How many times the last window's throughput per slot a restarted
/// startup's window must complete, at least, to show the service faster
/// (see `Auto::restarted_startup_sped_up`); a window of fewer than about
/// 900 calls needs three standard errors of its count more.
const SPED_UP_PER_SLOT: f64 = 1.1;
/// The share of the usual throughput under which a window of calls of one
/// length that queued did less work with as many calls: a moment of the
/// service, not a queue past its pool, which keeps the pool's throughput
/// (see `Auto::steady_step`).
const STALLED: f64 = 0.9;

impl Auto {
    /// A probe window: the lower limit stays if it served as many calls a
    /// second, else the limit goes back to where it was.
    pub(super) fn after_probe(&mut self, w: &Window, r: Reading) -> f64 {
        let Reading {
            latency,
            rate,
            binds,
            ..
        } = r;
        // The probe's latency is the one with the least queueing: learned
        // at once, once below the no-load latency by more than its noise,
        // as any window's must be (see `decide`). A probe of 4 workers of
        // 1 ms at 0.8 load holds a few dozen calls, which read their mean
        // within a fifth or so (a quarter for calls of a heavy tail).
        if self
            .no_load
            .is_some_and(|d| self.below_beyond_noise(w, latency, d))
        {
            self.no_load = Some(latency);
        }
        let restore = self.before_probe.take().unwrap_or(w.limit);
        // As many calls a second as usual, and more than its own slots
        // would serve with no queue, beyond its noise (two standard
        // errors of its count): a probe of a few calls reads its rate
        // within a half, and probes of 5 calls at 0.75 that read "as
        // many" took a 64-worker pool, whose cold start had read its
        // calls at half their length, from 2.4 slots down to 1, where it
        // stayed (2% of its capacity over the run).
        let fraction = w.limit / restore.max(f64::MIN_POSITIVE);
        let holds = PROBE_HOLDS.max(fraction * (1.0 + 2.0 * self.noise(w.finished)));
        let as_many = self
            .binding_rate
            .get()
            .is_some_and(|usual| rate >= holds * usual);
        let stale = std::mem::take(&mut self.stale_probe);
        // Calls of one length do not rise from the product in the window
        // after a probe (see `steady_step`), which its lower throughput
        // spills into.
        self.calm = 0;
        // As many calls a second at the lower limit: the rest of the
        // concurrency was only queueing inside the service.
        if as_many && binds {
            self.stale = 0;
            self.stale_latency = f64::INFINITY;
            return w.limit;
        }
        // Fewer calls a second with fewer slots, beyond the window's
        // noise (one standard error of its count): in a slowdown a
        // window holds a few dozen calls, and a probe of 16 workers at
        // 18 slots that served 386 calls a second of the usual 420 read
        // as fewer, the pool's queue became the no-load latency twice,
        // and the limit grew to 38 slots.
        let noise = self.noise(w.finished);
        let fewer = self
            .binding_rate
            .get()
            .is_none_or(|usual| rate < (1.0 - noise) * usual);
        let low_before = std::mem::replace(&mut self.low_since_probe, f64::INFINITY);
        if stale && fewer {
            // The latency that stayed high was the service's own (the
            // no-load latency was measured too low, or every call got
            // slower).
            self.no_load = Some(self.stale_latency.min(latency));
        } else if fewer && !self.calls_of_one_length() && self.below_the_pool(rate, fraction) {
            // A probe that ran below the service's concurrency shows the
            // service's own latency too: no call queued inside, at any
            // length. Without it, a no-load latency read low (6.5
            // ms, from a cold start's first dozen calls of 16 lognormal
            // workers of 10 ms) stayed: against 1.5 times it every other
            // window read as a queue and shrank the limit, the calm ones
            // between started the stale count over, and the limit sank
            // from 14 slots to 9 in four seconds (74.1% of the pool at 3x
            // on the worst of 8 seeds; 97.2% with it). Whether or not the
            // probe's own mean reads as a queue: 16 processor-sharing
            // workers read 8.6-9.1 ms under the 9.75 the same 6.5 ms
            // allowed, and held 8 slots for ten seconds (64.5%; 94.4%).
            // No more than the lowest window's since the last probe: the
            // probe's window still completes calls admitted at the higher
            // limit before it, which a queue or shared workers slowed (64
            // processor-sharing workers of 50 ms probed at 66 slots from
            // 87 read 69.5 ms, where the lowest window since the last
            // probe read 49.5). Only rises: it comes down as any window's
            // latency does.
            self.no_load = self.no_load.map(|d| d.max(low_before.min(latency)));
        }
        // A stale probe that showed neither starts the count over: left
        // at five, the next window of the queue asked for another, and
        // 48 ps workers of 50 ms, whose one call past the pool at 48.8
        // slots read as a queue that the product (49 slots) cannot
        // shrink, ran every other window at three quarters of the limit
        // (93.3% of their capacity at 3x instead of 97.2%).
        if stale {
            self.stale = 0;
            self.stale_latency = f64::INFINITY;
        }
        // A probe the load left unfilled at fewer slots shows the limit it
        // left unfilled too: it comes back only as far as any unfilled
        // limit does (`Auto::unfilled`), with the no-load latency the
        // probe read.
        if !binds {
            return self.unfilled(w, restore, latency, self.calls_of_one_length());
        }
        restore
    }

    /// Notes a recovery: a throughput well above the usual one. Returns
    /// whether the no-load latency was scaled by the throughput's rise,
    /// in which case the window is judged no further (see `decide`).
    pub(super) fn note_recovery(&mut self, w: &Window, r: Reading) -> bool {
        let Reading {
            latency,
            rate,
            rate_binds,
            ..
        } = r;
        let in_restart = self.restarted_startup_sped_up(w, r);
        let Some(usual) = self
            .binding_rate
            .get()
            .filter(|&usual| rate_binds && (!self.startup || in_restart) && rate > FASTER * usual)
        else {
            return false;
        };
        if in_restart {
            self.recovery_in_restart(w, r);
            return true;
        }
        // The service got much faster (a recovery): the no-load
        // latency is stale. Calls whose own latency fell below it
        // show the new one at most that long (a queue only adds):
        // it is learned at once, and the limit is free to grow
        // (below). Probing at half the limit first held a 1,000-worker
        // pool, already under its workers, at half for two windows: 4 s
        // to its capacity instead of 2 s. Calls of one length
        // still take the probe at half, once the growth has ended:
        // the recovery's window mixes slow calls with fast ones,
        // and its mean (2.7 ms for 8 workers' 2 ms) would hold
        // their limit a quarter above the pool, where their
        // latency shows no queue against it.
        let seen = self.no_load.is_some_and(|d| latency < d);
        // Otherwise a window of calls of varying length that holds
        // enough of them scales the no-load latency by the throughput's
        // rise, as a slowdown scales it by its fall, and the limit holds:
        // a pool of workers takes as many calls in flight as before. The
        // probe at half the limit for it held 64 workers of 50 ms, back
        // from 200 ms, at 35 slots for a window and at 44 for the next
        // (a second at 51% of the pool). The rise reads the speed-up
        // short (the window still completes slowed calls), so a later
        // window's calls then show the new latency, below the scaled
        // one, as above. A few dozen calls read the rise too roughly:
        // scaled from windows of a dozen calls, 3 and 6 workers of 200
        // ms met 90% of their capacity at 3x on 15 and 16 runs of 32
        // instead of 22 and 21.
        // Calls of one length keep the probe (above).
        let scaled = !seen && w.finished >= SCALED_RECOVERY_CALLS && !self.calls_of_one_length();
        if seen {
            self.no_load = Some(latency);
        } else if scaled {
            // Never below the no-load latency before the slowdown: a
            // recovery's windows read the rise in steps, each scaled by
            // its rise over the last, and two steps took 64 workers of 50
            // ms from 115.9 ms to about 63 and then 33, under the 38.5 ms
            // they had before the slowdown; their calls then read as a
            // queue, and the limit sat at 32-47 slots for the rest of the
            // run (59-73% of the pool a second). A service faster than
            // before shows it in its calls' own latency (`seen`).
            let before = self.unslowed.map_or(0.0, |b| b.no_load);
            self.no_load = self.no_load.map(|d| (d * usual / rate).max(before));
        }
        // Otherwise only a window well below the current limit
        // shows the new latency: probe at half the limit next (the
        // limit holds until then, see `steady_step`), judged
        // against the faster rate: against the slow one, the probe
        // of a 2-worker pool kept half its limit.
        self.deep_probe = !seen && !scaled;
        self.probe_after_startup = seen && self.calls_of_one_length();
        // The concurrency the service takes is to be found again.
        self.idle_rises = 0;
        self.binding_rate.reset(Some(rate));
        scaled
    }

    /// Whether a probe at `fraction` of the limit that served `rate` calls
    /// a second ran below the service's concurrency: its throughput fell
    /// by more than half its cut in slots. Below the concurrency every
    /// slot completes calls at the same rate, so the throughput falls with
    /// the slots (to `fraction` of the usual); above it, it holds, and
    /// midway tells the two apart with a margin each way. Told apart by
    /// the window's noise alone (one standard error of its count, as
    /// `fewer` is in `after_probe`), 64 processor-sharing workers of 50
    /// ms probed at 80 slots from 107 served 1,140 calls a second of
    /// about 1,300, read as fewer, and the lowest window before it (54.6
    /// ms, with 95 to 116 calls sharing the workers) became the no-load
    /// latency; the limit held 95 slots through the slowdown, whose worst
    /// second served 71.9% (78.8% with the margin, worst of 8 seeds).
    fn below_the_pool(&self, rate: f64, fraction: f64) -> bool {
        self.binding_rate
            .get()
            .is_none_or(|usual| rate < (1.0 - (1.0 - fraction) / 2.0) * usual)
    }

    /// Whether window `w` (read as `r`), in a startup restarted from the
    /// steady state, shows the service faster than its last window did:
    /// each slot completes more calls a second, beyond the window's noise
    /// ([`SPED_UP_PER_SLOT`] times as many at least), and the calls' mean
    /// is below the no-load latency beyond its noise.
    ///
    /// A startup judges a rise by the throughput following the limit, and
    /// a recovery's throughput follows it by far: 1,000 workers of 200 ms,
    /// whose slowdown had scaled the no-load latency to 601 ms, restarted
    /// a startup at 951 slots in it; the recovery's window at 1,188 slots
    /// read 4,597 calls a second for 1,936 before, the limit doubled twice
    /// to 4,754, and its drain served 36% of the pool's capacity in the
    /// next second. Slots alone do not make each of them faster, and a
    /// queue only adds to the mean: a rise of the load (slots busier than
    /// before) leaves the mean at the no-load latency or above.
    ///
    /// Half as many again a slot (as the usual throughput must rise for a
    /// recovery) misses a recovery that a long window splits: restarted
    /// at 0.8 load in the slowdown, on its no-load latency of 795 ms, the
    /// windows of 1,000 workers lasted 3.2 s; the one the recovery came
    /// in read 1.2 times as many calls a slot, as the throughput
    /// following the limit, and the next, wholly recovered, 1.24 times
    /// (15,023 calls, a mean of 632 ms): the limit doubled twice, to
    /// 6,115 slots, and the second slowdown served half as many calls in
    /// time as the first.
    fn restarted_startup_sped_up(&self, w: &Window, r: Reading) -> bool {
        let faster = (1.0 + 3.0 * self.noise(w.finished)).max(SPED_UP_PER_SLOT);
        self.startup
            && self.restarted
            && self
                .startup_last
                .is_some_and(|(limit, rate)| r.rate / w.limit > faster * rate / limit)
            && self
                .no_load
                .is_some_and(|d| self.below_beyond_noise(w, r.latency, d))
    }

    /// A recovery in a startup restarted from the steady state (see
    /// [`Auto::restarted_startup_sped_up`]): the startup ends at the limit
    /// (through [`Auto::end_startup`], which also releases a probe at half
    /// the limit that a recovery of calls of one length held for it),
    /// the calls' mean is the no-load latency (a queue only adds to it),
    /// and the next probe tries the limit before the slowdown, if the
    /// last one scaled the no-load latency from a lower limit: the
    /// recovery's window mixes calls slowed before it with fast ones, so
    /// its mean still reads the new speed high, and the probe's does not
    /// (`after_probe`). A service without a pool, whose slowed calls took
    /// more slots, serves fewer calls a second there, and the limit comes
    /// back. What the service did before the slowdown is kept for
    /// [`Auto::learn_no_load_back_at_speed`]: the mean taken here is the
    /// recovery's, of slowed calls and fast.
    fn recovery_in_restart(&mut self, w: &Window, r: Reading) {
        // Its limit is not the one a startup settles at: the limit holds.
        self.end_startup(w, false);
        self.no_load = Some(r.latency);
        self.binding_rate.reset(Some(r.rate));
        self.idle_rises = 0;
        if let Some(before) = self.unslowed.filter(|b| b.limit < w.limit) {
            self.recovery_probe = Some(before.limit);
        }
    }

    /// Notes a window whose throughput is back at what the service did
    /// before the last slowdown while its no-load latency is still the
    /// scaled one: the next probe tries the limit before the slowdown.
    ///
    /// A recovery that comes during a restarted startup reads as the
    /// throughput following the limit, and the startup ends on the scaled
    /// no-load latency, against which a queue inside the service reads as
    /// none: 16 workers of 10 ms, whose slowdown had scaled it to 32 ms,
    /// held 61-90 slots after their recovery, and the next slowdown served
    /// 0-4% of the slowed pool for five seconds. The throughput alone
    /// cannot tell: a service without a pool (its calls slower, its
    /// concurrency unbounded) does as much again at four times the slots.
    /// The probe does: a pool of workers serves as many calls a second at
    /// the limit it had (`after_probe` keeps it, and its latency lowers
    /// the no-load one), the other serves a quarter (the limit goes back).
    /// Only from twice that limit, with calls waiting for slots: a probe
    /// at 5 slots for 4 workers of 1 ms at 0.8 load refused its bursts.
    pub(super) fn note_unslowed_rate(&mut self, w: &Window, r: Reading) {
        let Some(before) = self.unslowed else {
            return;
        };
        // Calls of one length read their no-load latency exactly, so
        // theirs is back only at the one from before (within the 0.5% a
        // real service's calls vary by): within the tolerance, a
        // recovery's windows above the pool, whose calls share the
        // workers, set it high for good (58 ms for 48 processor-sharing
        // workers of 50 ms at 55-58 slots), and the next slowdown met
        // the limit that latency reads no queue at, 55 slots.
        let back = if self.calls_of_one_length() {
            UNQUEUED_LATENCY
        } else {
            self.tolerance
        };
        if self.no_load.is_some_and(|d| d <= back * before.no_load) {
            // Learned back down: nothing to probe for.
            self.unslowed = None;
        } else if !self.startup
            && !w.probe
            && r.rate_binds
            && w.waiting
            && r.rate >= RECOVERED * before.rate
            && w.limit > RECOVERY_PROBE_FROM * before.limit
        {
            self.recovery_probe = Some(before.limit);
            self.unslowed = None;
        }
    }

    /// Once window `w` (read as `r`) shows the service back at the
    /// throughput it had before its last slowdown, with calls waiting for
    /// slots, the no-load latency is the one it had then, times how much
    /// longer a call a second holds a slot now than then (Little's law:
    /// the limit over the throughput, now against then), but never by
    /// more than the cold start read its calls' mean over its lowest
    /// reading (`Auto::mean_over_lowest`), nor less.
    ///
    /// A recovery's windows mix calls slowed before it with fast ones, so
    /// the no-load latency they leave, scaled by the throughput's rise or
    /// taken from their mean, is a guess: 1,000 workers of 200 ms kept
    /// 306-362 ms after their recovery (the mean of slowed calls and
    /// fast; `--twice` seed 4 at 3x, with the cold start's floor of
    /// `Auto::keep_lowest_near_the_pool`); a queue inside the service of
    /// five hundred calls read as none against it, a restarted startup
    /// doubled the limit from 1,509 slots to 3,018 between the slowdowns,
    /// and the next one met a limit of twice the pool.
    ///
    /// The scale reads two things. Calls of varying length whose no-load
    /// latency is the lowest of noisy readings (64 workers of 50 ms read
    /// at 34 ms) hold a slot longer than it with no queue at all, as long
    /// as their mean: scaled no further than the no-load latency itself,
    /// 16 processor-sharing workers of 10 ms came back to 6.7 ms, their
    /// windows' means of 9-11 ms read as a queue half the time, and the
    /// limit sat at 8-14 slots (`ps-16x10ms` seed 25 at 3x: 54-72% of the
    /// pool for four seconds; scaled to 8.1 ms, 89-95%). Past that mean,
    /// what holds the slots longer is the queue inside the pool, which
    /// the scale took for the service's own latency: `--twice` seed 3
    /// at 3x learned 259 ms for 1,000 workers of 200 ms (read at 200.9 ms,
    /// its mean as well) at 1,870 slots; its sawtooth then ran from 1,510
    /// slots to 2,045, and the second slowdown met 1,895 (seconds of
    /// 80-85%; at 1,170 since, 90-95%). A service whose calls did get
    /// slower at the same throughput shows it to the probes of a latency
    /// that stays high (`steady_step`).
    ///
    /// A throughput back at the one before (within [`RECOVERED`] either
    /// way) sets it, up as well as down: the one from before the slowdown
    /// was read over a steady state's windows at this speed, what the
    /// recovery left over a few windows that were not. One above it
    /// (below capacity, the rate before was the load's, and a backlog's
    /// drain runs at the pool's) only lowers it.
    pub(super) fn learn_no_load_back_at_speed(&mut self, w: &Window, r: Reading) {
        let Some(before) = self.unslowed else {
            return;
        };
        if !(r.rate_binds && w.waiting && r.rate >= RECOVERED * before.rate) {
            return;
        }
        // A service back at its speed starts its rises over (see
        // `steady_step`), as a recovery `note_recovery` reads does: the
        // slowdown's rises that found nothing had made the wait for the
        // next four times `probe_every` windows, and 40 processor-sharing
        // workers of 5 ms, brought down to 25 slots by their recovery's
        // window of slowed calls and fast, stood there for three
        // seconds, serving 78% of a load below capacity.
        self.idle_rises = 0;
        let holds_longer = (w.limit / r.rate) / (before.limit / before.rate);
        // `max` and `min`, not `clamp`, which panics on a NaN bound.
        let back = before.no_load * holds_longer.max(1.0).min(self.mean_over_lowest);
        self.no_load = Some(if r.rate * RECOVERED <= before.rate {
            back
        } else {
            self.no_load.map_or(back, |d| d.min(back))
        });
    }

    /// Whether the limit holds through window `w` (read as `r`, its calls'
    /// `queueing` judged against `no_load`) of a slowdown whose load was
    /// above the limit before it ([`Unslowed::overloaded`]): neither a
    /// queue nor its absence moves it, no probe runs, and only a queue
    /// past [`FAR_QUEUE`] times the tolerance shrinks it (the pool itself
    /// may have shrunk). It holds while the throughput stays at the
    /// slowdown's (at most [`SLOWER`] times the one before it), so a
    /// recovery is judged as ever.
    ///
    /// That throughput is counted per slot of the limit before the
    /// slowdown, as a fall is counted per call in flight (see
    /// `steady_step`): a pool held at fewer slots completes fewer calls a
    /// second at any speed, and a limit that a far queue had cut held its
    /// own throughput down for good. 64
    /// processor-sharing workers of 50 ms at 3x, their calls of two
    /// lengths, read a slowdown at 46 slots against the rates of the
    /// windows right after their cold start (up to 2,390 calls a second
    /// for a pool of 1,280), a far queue then cut them to 20, and at 20
    /// slots the pool served 165-612 calls a second against the 1,600
    /// before: the limit held there for 14 s, and 27% of the capacity
    /// was served in time (`ps-64x50ms-mix`, seed 30). A slowdown that
    /// keeps its limit is judged as before.
    ///
    /// A pool of workers four times slower needs as many calls in flight as
    /// before, which the limit the throughput had set before is, at most
    /// `headroom` times the product (`Auto::slowed_limit`), and the windows
    /// after it only add noise. A slowed window holds a few dozen calls (64
    /// workers of 200 ms: 64 calls in 0.23 s), the no-load latency scaled by
    /// the throughput's fall reads the slowdown within a third either way, and
    /// judged against it, the slowed limit of `ps-64x50ms` moved between 40 and
    /// 140 slots (seed 21 at 3x: a shrink to 53 and a probe at 40, then a
    /// restarted startup that doubled 70 to 140; its seconds at 65%, 74% and
    /// 54%; 83-91% held at 63). The clients' patience does not grow with the
    /// slowdown either (a timeout of 2.5 slowed calls on those three shapes),
    /// and every shrink of the ordinary sawtooth stops admitting for as long as
    /// the slowed calls take to drain it: 1,000 workers of 200 ms, cut from
    /// 1,635 slots to 1,151 there, served 51% of a second's calls in time.
    ///
    /// Only when the load was above the limit before the slowdown
    /// (`Auto::overloaded_windows`): a load below capacity leaves the
    /// limit where it filled it (13 slots for 16 workers at 0.8 load), and
    /// held there, 16 workers of 10 ms came back to 90% of the slowed
    /// capacity within 2 s of the slowdown on 22 runs of 32 instead of 31.
    /// Not from calls waiting at a window's close alone: the slowdown's own
    /// first windows have them, and 100 workers of 20 ms at 0.8 load were
    /// held at 82 slots for their slowed pool (24 runs instead of 29).
    /// Calls of one length read a queue exactly (see `decide`), and their
    /// limit follows it.
    fn holds_through_slowdown(&self, w: &Window, r: Reading, queueing: bool, no_load: f64) -> bool {
        self.slowed_after_overload().is_some_and(|before| {
            let fewer_slots = (before.limit / w.limit).max(1.0);
            r.rate * fewer_slots <= SLOWER * before.rate
        }) && !(queueing && r.latency > FAR_QUEUE * self.tolerance * no_load)
    }

    /// What a slowdown of calls of varying length after an overload scaled
    /// from; `None` for any other (see `Auto::holds_through_slowdown`).
    pub(super) fn slowed_after_overload(&self) -> Option<Unslowed> {
        self.unslowed
            .filter(|before| before.overloaded && !self.calls_of_one_length())
    }

    /// The limit a slowdown learned in a window at `limit` goes on from,
    /// `product` the bandwidth-delay product before it (the usual
    /// throughput times the no-load latency; the highest recent throughput
    /// if higher, where the smoothed one holds only the window the
    /// slowdown began in): the same limit, except one that holds through
    /// the slowdown (`Auto::holds_through_slowdown`), which comes down to
    /// `headroom` times that product if it is above, allowing for the
    /// calls' spread.
    ///
    /// A pool of workers four times slower needs as many calls in flight
    /// as before, which the product counts, but the limit an overload
    /// sets is a point of its sawtooth between the product and a queue,
    /// and held there, the slowed calls queue inside for the whole
    /// slowdown: `ps-64x50ms` at 3x, seed 28, held 95 slots for 64
    /// workers (slowed seconds at 75-87%; 83-91% at 76 slots). Over seeds
    /// 0..32 every second after the third served 80% at 3x on 24 runs of
    /// `ps-64x50ms` instead of 18, 30 of `fifo-1000x200ms` instead of
    /// 28, and on the holdout 31 of `fifo-160x50ms` instead of 28 and 32
    /// of `ps-100x20ms` instead of 29.
    ///
    /// Only down: a limit below it is where the cold start or a probe
    /// found the pool, and moved up to it (or set to it either way), calls
    /// of heavy-tailed length lost more than they gained (`ps-64x50ms` of
    /// lognormal calls, 14 runs instead of 19). Scaled by the spread
    /// ([`Spread::factor`](super::stats::Spread::factor)), as the noise
    /// allowances are: the no-load latency is the lowest of noisy windows'
    /// means, which reads further below the calls' own the more they
    /// spread. Without it, that shape's seed 1 went from 67 slots to 56
    /// for 64 workers (its worst second 82.5% to 68.1%; 17 runs instead
    /// of 19). The noise still costs some: seed 21 of `ps-64x50ms`, whose
    /// no-load latency read 38.5 ms for calls of 50, went from 63 slots
    /// to 53 (its worst second 83.1% to 70.6%).
    fn slowed_limit(&self, limit: f64, product: f64) -> f64 {
        if self.slowed_after_overload().is_some() {
            limit.min(self.headroom * self.spread.factor() * product)
        } else {
            limit
        }
    }

    /// Whether slowed window `w` (its calls' mean `latency`) ran its calls
    /// without a queue: calls of one length, no more of them in flight
    /// than the service was seen to run at once at the lowest latency
    /// they were read at (`Auto::unqueued_in_flight`). A slowdown makes
    /// calls slower; it does not take workers away, so the window's mean
    /// is the slowed no-load latency itself.
    ///
    /// The throughput's fall reads that latency short below capacity,
    /// where the rate before the slowdown was the load's, not the
    /// pool's: 12 processor-sharing workers of 10 ms at 0.8 load, slowed
    /// to 40 ms, read 33.5 ms: their calls of 40 ms read as a queue, the
    /// limit sat at the product, 10.3 slots for 12 workers, until the
    /// stale probe a second later, and the slowdown stayed under 90% of
    /// its capacity for over 2 s on 20 runs of 32 (on 5, with this
    /// reading). Calls of varying length, or more calls in flight than
    /// that, keep the throughput's scale.
    pub(super) fn ran_unqueued(&self, w: &Window, latency: f64) -> bool {
        self.of_one_length(w, latency) && (1..=self.unqueued_in_flight).contains(&w.max_in_flight)
    }

    /// The slowed no-load latency that slowed window `w` of calls of one
    /// length (their mean `latency`) reads if the pool is no larger than
    /// it was seen to run without a queue (`Auto::unqueued_in_flight`),
    /// when the window held more in flight than that: by Little's law
    /// its calls took `latency` times the pool over the calls in flight,
    /// and the pool is at least the calls seen run at once. `None` when
    /// no such pool was seen, or the window held no more.
    ///
    /// The least the slowed latency can be, where the throughput's fall
    /// and the window's own mean are the most: a queue of calls of one
    /// length shared by processor-sharing workers slows each call alike,
    /// and reads as no queue at all. 300 such workers of 100 ms at 0.8
    /// load met a 4x slowdown at 377 slots (a quarter above the most
    /// calls a burst had in flight); their calls took 503 ms, 400 ms
    /// shared by 377, and the throughput's fall, against the rate of the
    /// window that drained the cold start's overshoot (3,770 calls a
    /// second for a pool of 3,000), scaled past that. Learned as the
    /// slowed latency, 503 ms held the limit at 377 for clients of 500
    /// ms, and no slowed call was in time (holdout seeds 18 and 20 of
    /// 32). The smallest pool consistent with what was seen is the side
    /// to err on: the limit comes down to it, where the calls read no
    /// queue, and a larger pool shows itself as the limit rises from the
    /// product.
    fn slowed_at_seen_pool(&self, w: &Window, latency: f64) -> Option<f64> {
        let seen = self.unqueued_in_flight;
        (self.calls_of_one_length() && seen > 0 && w.max_in_flight > seen)
            .then(|| latency * seen as f64 / w.max_in_flight as f64)
    }

    /// Takes the mean `latency` of window `w` as the no-load latency if
    /// a slowdown's was read at the pool seen (`Auto::read_at_seen_pool`)
    /// and `w` is the first window since to run its calls without a
    /// queue (`Auto::ran_unqueued`). The pool seen is the smallest
    /// consistent with the slowed window; a larger one ran the calls at
    /// the limit it brought down faster than that reading, whose windows
    /// then read a queue that is not there and never rose to the pool:
    /// 300 processor-sharing workers, seen to run 284 calls at once,
    /// read calls of 400 ms as 379 at 284 slots, and held there through
    /// the slowdown (95% of the slowed pool, its seconds alternating
    /// between 74% and 112% as batches of calls completed together), and
    /// the recovery, met by the stale probe those windows raised, came
    /// back to 90% of capacity in 1.5 s instead of 0.2 (holdout seed 5).
    ///
    /// Only while the slowdown is remembered (`Auto::unslowed`): the
    /// reading is the slowdown's, and once the service is back, a window
    /// that ran no more calls than the pool seen is read by the rules of
    /// any other. The pool seen can exceed the pool (a window right after
    /// a cold start's rise completes the calls admitted before it, with
    /// the rise's in flight: 128 for 64 workers), and every such window
    /// read as the no-load latency held 64 workers at 80-85 slots.
    pub(super) fn confirm_read_at_seen_pool(&mut self, w: &Window, latency: f64) {
        if self.unslowed.is_none() {
            self.read_at_seen_pool = false;
        }
        if self.read_at_seen_pool && !w.probe && self.ran_unqueued(w, latency) {
            self.read_at_seen_pool = false;
            self.no_load = Some(latency);
        }
    }

    /// The pool that window `w` of calls of one length, which queued
    /// inside the service (their mean `latency`, the no-load latency
    /// `no_load`), reads: the calls in flight that ran without the queue
    /// (see [`ran_without_queue`]), which a queue of such calls shows
    /// exactly, but never fewer than a window of them ran at once without
    /// one (`Auto::unqueued_in_flight`): the throughput of a window of a
    /// few calls can hold by chance. 2 processor-sharing workers slowed
    /// from 200 ms to 800 ms met the slowdown at 3 slots, and its first
    /// window, 3 calls sharing the workers for 1.2 s each, read half a
    /// call as run without a queue and took the limit to 1.5.
    fn read_pool(&self, w: &Window, latency: f64, no_load: f64) -> f64 {
        ran_without_queue(w, latency, no_load).max(self.unqueued_in_flight as f64)
    }

    /// The bandwidth-delay product `bdp` for calls of one length: no
    /// higher than the pool their last queue read
    /// (`Auto::queue_read_pool`). Their highest recent rate can be a
    /// window that closed just after a batch of their completions: 12
    /// processor-sharing workers slowed to 40 ms read 351 calls a second
    /// of their 300 in the window after a rise, and for the ten windows
    /// it was the highest, the product said 14 slots. Calls of 47 ms at
    /// 14.1 slots were brought down only to it, and at 11.8 slots, calls
    /// of 40 ms read as below the product and rose by the whole gain,
    /// not by the slot a rise from the product takes: the limit went
    /// round from 11.8 slots to 13.4 and back every five windows, each
    /// time a queue past the clients' 50 ms for a batch of calls.
    fn product_of_one_length(&self, bdp: f64) -> f64 {
        self.queue_read_pool.map_or(bdp, |pool| bdp.min(pool))
    }

    /// A window in the steady state: a slowdown keeps the limit, a queue
    /// shrinks it towards the bandwidth-delay product, a binding limit
    /// without a queue grows; judged against the no-load latency and the
    /// usual throughput, with what the window `before` it left.
    pub(super) fn steady_step(
        &mut self,
        w: &Window,
        r: Reading,
        no_load: f64,
        queueing: bool,
        usual_rate: Option<f64>,
        before: WindowBefore,
    ) -> f64 {
        let Reading {
            latency,
            rate,
            binds,
            rate_binds,
            one_length,
            fewer_in_flight,
        } = r;
        let bdp = self.bandwidth_delay().unwrap_or(w.limit);
        if one_length && binds {
            self.one_length_unprobed += w.elapsed.as_secs_f64();
        }
        // The throughput below `SLOWER` of the usual: a slowdown, if it
        // lasts (a queue keeps the throughput).
        let below_usual = usual_rate.is_some_and(|usual| rate < SLOWER * usual);
        // Counted per call in flight: a limit cut below the calls the
        // usual rate was read with completes fewer calls a second at any
        // speed. 64 processor-sharing workers of 50 ms at 0.8 load, whose
        // cold start ended by cutting 32 slots to 14, read 446 calls a
        // second against the 1,038 of the load before the cut, as a
        // slowdown; the limit held at 14 slots for 15 s, and a fifth of
        // the calls were served in time (`ps-64x50ms-mix`, seed 31).
        let slower_per_call =
            usual_rate.is_some_and(|usual| rate * fewer_in_flight < SLOWER * usual);
        let fell = queueing && rate_binds && w.completed >= MIN_SAMPLES / 2 && slower_per_call;
        if !fell {
            self.slower_windows = 0;
        } else if let Some(usual) = usual_rate {
            // Against the usual rate before the window the slowdown began
            // in: that window's late calls were slowed, it completed fewer
            // calls but not fewer by enough to read as slowed, and the
            // running mean took it in. 16 workers of 10 ms slowed four
            // times were scaled 3.1 times, the slowed calls read as a
            // queue, and their limit fell to 10 slots. Taken at the first
            // slowed window: before any binding window since the startup,
            // the usual rate is the highest recent one, which the next
            // window's push can drop from the filter. So is the usual rate
            // before it when the smoothed rate holds only the window the
            // slowdown began in, the first to bind after windows the load
            // left unbound: 1,000 workers of 200 ms at 0.8 load, whose
            // startup had ended (which starts the smoothed rate over),
            // were scaled against that window alone (2,861 calls a second,
            // the load's 4,000 before it), 2.1 times for a 4x slowdown;
            // their slowed calls read as a queue, and the limit fell to
            // 729 slots (61-68% of the slowed pool). Not after a binding
            // window: the highest of noisy rates reads high, and 64
            // workers of 50 ms at 3x, scaled by it, grew their limit
            // into a queue in the slowdown (a second at 68%).
            if self.slower_windows == 0 {
                let before = if self.binding_rate.first_after_unbound {
                    self.highest_recent_rate()
                } else {
                    self.binding_rate.before
                };
                let from = usual.max(before.unwrap_or(usual));
                // The pool, though, is counted by the throughput before
                // the slowdown, which a smoothed rate of that one window
                // does not hold: 1,000 workers of 200 ms at 3x, whose
                // restarted startup had ended (which starts the smoothed
                // rate over) a window before their second slowdown, read
                // 3,145 calls a second for 5,000, and their limit came
                // down to 807 slots (`grid --twice`, seed 11).
                let pool = match self.binding_rate.before {
                    None => self.highest_recent_rate().map_or(from, |h| h.max(from)),
                    Some(_) => from,
                };
                self.fall_from = Some(FallFrom { usual: from, pool });
            }
            let fall_from = self.fall_from.unwrap_or(FallFrom { usual, pool: usual });
            let usual = fall_from.usual;
            // Latency up and throughput down by much, at the same limit,
            // two windows in a row: every call got slower (a dependency, a
            // slowdown), which a queue inside the service does not do (it
            // keeps the throughput). A pool of workers needs as many calls
            // in flight as before, so the limit stays, and the no-load
            // latency takes the slowdown that the throughput shows. Not
            // the latency's rise, which may include a queue, and lags the
            // throughput's fall: the first calls to complete were started
            // before the slowdown, and, capped by it, a 4x slowdown of
            // 1,000 workers of 200 ms was learned as 2.7x, its slowed
            // calls then read as a queue, and the limit fell to 740 slots
            // (54-70% of the slowed pool for three seconds). Calls of one
            // length bound it, though: their mean is exact, and no call
            // runs faster than without a queue. The throughput's fall
            // can read far more than the slowdown (the usual rate a
            // window that drained an overshoot read at 4,029 calls a
            // second for 300 ps workers of 100 ms, at most 3,000), and a
            // slowed no-load latency of 808 ms for calls of 419 read
            // every queue as none: the limit grew from 314 slots to
            // 1,571, each call took seconds, and the slowdown served
            // none of them in time. The rates start over at the new
            // speed.
            self.slower_windows += 1;
            if self.slower_windows >= 2 {
                self.slower_windows = 0;
                let remembered = self.unslowed.is_some();
                let before = *self.unslowed.get_or_insert(Unslowed {
                    no_load,
                    rate: usual,
                    limit: w.limit,
                    // The slowed windows since the first neither count
                    // nor break the run (see `Auto::overloaded_windows`).
                    overloaded: self.overloaded_windows >= OVERLOADED_WINDOWS,
                });
                // A slowdown read while another is remembered is scaled
                // no further than from the speed before the first: the
                // no-load latency it would scale holds the first one's
                // scale already, and the usual rate since then was read
                // from windows of the slowed service, so whatever either
                // read wrong since (a no-load latency lifted by a
                // recovery's mixed window, a usual rate read high by a
                // restarted startup's short ones) multiplies the other.
                // For a service that did slow twice the two agree.
                // `fifo-100x20ms-mix` at 0.8x (100
                // workers of a cache's hits and misses, 20 ms on
                // average), slowed four times from 6 s to 11 s, was read
                // slowed at 6.8 s (21 ms to 56 ms), again at 7.8 s (54 ms
                // to 140 ms) and at 11.2 s, in the window the recovery
                // met, from 64 ms to 762 ms; the next window, two such
                // round trips long, lasted 1.5 s, and the recovery's
                // seconds served 27.8% and 77.0% of the calls in time
                // (seed 26). From the speed before the first, 86 ms and
                // 183 ms: the recovery was read 1.2 s sooner, and those
                // seconds served 76.1% and 99.7%.
                let scaled = no_load * usual / rate.max(1e-9);
                let scaled = if remembered {
                    scaled.min(before.no_load * before.rate / rate.max(1e-9))
                } else {
                    scaled
                };
                let slowed = if self.ran_unqueued(w, latency) {
                    latency
                } else if self.calls_of_one_length() {
                    scaled.min(latency)
                } else {
                    scaled
                };
                let at_seen_pool = self
                    .slowed_at_seen_pool(w, latency)
                    .filter(|&least| least < slowed);
                self.no_load = Some(at_seen_pool.unwrap_or(slowed));
                self.rates = Rates::only(rate);
                self.any_rates = Filter::only(rate);
                self.rates_after_cold_start = Rates::only(rate);
                self.binding_rate.reset(Some(rate));
                self.stale = 0;
                self.stale_latency = f64::INFINITY;
                self.idle_rises = 0;
                self.read_at_seen_pool = at_seen_pool.is_some();
                if self.read_at_seen_pool {
                    // Read so, the window queued the calls past the pool
                    // seen: down to it at once, not a window later, for
                    // which every slowed call waits.
                    return (self.unqueued_in_flight as f64).min(w.limit);
                }
                return self.slowed_limit(w.limit, no_load * fall_from.pool);
            }
            return w.limit;
        }
        if self.holds_through_slowdown(w, r, queueing, no_load) {
            return w.limit;
        }
        // Calls of one length that all took longer than the no-load
        // latency, with less than half a call queued, show the service's
        // own latency in their shortest: a FIFO queue that short leaves
        // most calls unqueued, and processor sharing that short slows
        // each call by less. A slowdown's scale by the throughput's fall
        // under a load below capacity (8 workers slowed from 2 ms to 8 ms
        // were scaled 3.7 times) read each slowed call as half a call
        // queued at 6.5 slots, which held the limit there, a quarter of
        // the pool idle, for the whole slowdown.
        if one_length && !queueing && w.min_latency.as_secs_f64() > ONE_LENGTH_SLOWER * no_load {
            self.no_load = Some(w.min_latency.as_secs_f64());
        }
        // A queue inside the service while no call waits for a slot is
        // the load's own burstiness below capacity (4 workers of 1 ms at
        // 0.8 load queue half a call on average): a lower limit would
        // only move it into the limiter's queue, whose budget refused one
        // call in twenty there. So is a queue of calls of varying length
        // whose window a burst left with calls waiting at its close, if
        // the load did not outrun the limit (see `load_outran_limit`):
        // their mean reads a queue against the lowest of noisy means
        // where there is little or none. 4 workers of 1 ms of lognormal
        // length at 0.8 load read 1.0-1.5 ms against 0.8 ms, each such
        // window shrank the limit to the load's product (3.1 slots), and
        // the bursts waited past the 4 ms budget (seed 15: 97.2% served
        // in time outside the slowdown; held, 98.0%). Calls of one length
        // read a queue exactly: it is the limit past the pool, whatever
        // the load. Held on such windows, 12 ps workers of 10 ms at 0.8
        // load kept 16 slots (calls of 12.8 ms), and came back to 90% of
        // the slowed capacity within 2 s of the slowdown on 5 runs of 32
        // instead of 12 (at b6f32dd, before `Auto::ran_unqueued`).
        let load_below_the_limit = if one_length {
            !w.waiting
        } else {
            !load_outran_limit(w)
        };
        if queueing && load_below_the_limit {
            return w.limit;
        }
        if queueing {
            // A queue of calls of one length read at the limit the window
            // before ran without one, while the throughput fell: not the
            // limit's (no rise put a call past the pool, and a queue past
            // it keeps the pool's throughput), but a moment of the
            // service's, a slowdown, or a pool that lost workers. The
            // next window tells (below). Not while the throughput held:
            // 40 processor-sharing workers at 0.8 load ran a window at 42
            // slots without a queue and the next with one, a burst past
            // the pool (holdout `ps-40x5ms-const`, seed 3).
            if one_length {
                self.before.cut_without_rise = before
                    .calm_limit
                    // Within half a slot: no rise between.
                    .filter(|&calm| w.limit <= calm + 0.5)
                    .filter(|_| usual_rate.is_some_and(|usual| rate < STALLED * usual))
                    .map(|calm| (calm, no_load));
            }
            // A queue inside the service goes once the limit is down to the
            // bandwidth-delay product, within a few windows. Latency that
            // stays high for longer is either a queue the product does not
            // reach (its highest rate read high: a 16-worker pool held 28
            // slots) or the service's own (every call got slower, or the
            // no-load latency was measured too low). Taken for the latter,
            // it ratcheted the limit up (13 to 59 slots for 16 workers
            // after a slowdown), so a probe at fewer slots tells them
            // apart: the lowest latency of those windows becomes the
            // no-load one only if the probe admits fewer calls a second.
            self.stale += 1;
            self.stale_latency = self.stale_latency.min(latency);
            if self.stale >= STALE_WINDOWS && !self.stale_probe {
                self.stale_probe = true;
            }
            // Not while the throughput is down: a slowdown under way,
            // whose slowed calls read as queued.
            if one_length && !below_usual {
                self.queue_read_pool = Some(self.read_pool(w, latency, no_load));
            }
            let product = if one_length {
                self.product_of_one_length(bdp)
            } else {
                bdp
            };
            return (self.headroom_for(one_length) * product).clamp(w.limit * 0.5, w.limit);
        }
        self.stale_latency = f64::INFINITY;
        self.stale = 0;
        if binds && self.deep_probe {
            // The service got faster: the probe at half the limit, next,
            // shows its new no-load latency before anything is judged by
            // the stale one.
            return w.limit;
        }
        if binds {
            // Calls wait for slots and the service shows no queue worth
            // the name: it may take more. Fast while latency is at the
            // no-load one, slowly above it (which, past the service's
            // concurrency, ends in a queue and a shrink: a slow sawtooth
            // between the product and `tolerance` times it).
            self.since_probe += 1;
            if one_length {
                // The window after a queue read without a rise (above)
                // runs its calls at the no-load latency it was read
                // against, without a queue: the queue was a moment's (a
                // stall of the machine), and the limit goes back at once.
                // Once: a pool that lost workers reads its queue again at
                // the limit it goes back to, and the cut stays. A real
                // 16-connection database of 21 ms queries, at 16.27 slots
                // for 5 s, read one window of 142 ms at 33 ms a call with
                // 16 in flight; the limit went to its product, 10.14
                // slots, whose calls then took 21 ms, and waited 12
                // windows for the first rise from the product (87.3% of
                // capacity over the run, where the others served 92-94%).
                if let Some((cut_from, then)) = before.cut_without_rise
                    && w.limit + 1.0 <= cut_from
                    && no_load <= ONE_LENGTH_SLOWER * then
                    && then <= ONE_LENGTH_SLOWER * no_load
                {
                    self.calm = 0;
                    return cut_from;
                }
                self.before.calm_limit = Some(w.limit);
            }
            if one_length || latency <= 1.1 * no_load {
                // Calls of one length at the product show no queue
                // whether or not the service could take more: only a
                // window above it tells, and every call past the
                // service's concurrency waits a whole call there. So
                // there they rise by a slot or a sixteenth (the
                // throughput reads a slot's worth exactly), less and less
                // often: restarted at every window with 1.25x, 16
                // workers' limit stood at 20 for two windows in three,
                // and every fifth call waited 20 ms inside. Below the
                // product the service showed it takes more, and they
                // grow as other calls do.
                let at_product = one_length && w.limit >= 0.9 * self.product_of_one_length(bdp);
                if at_product {
                    // The first rise comes at once; each that finds nothing
                    // doubles the wait for the next, from `probe_every`
                    // windows up to four times that; one that finds more
                    // (`startup_step`), or a service that changed speed,
                    // starts over.
                    let wait = match self.idle_rises {
                        0 => 0,
                        n => self.probe_every << (n - 1),
                    };
                    if self.calm < wait {
                        self.calm += 1;
                        return w.limit;
                    }
                    self.idle_rises = (self.idle_rises + 1).min(3);
                    self.rise_from = Some(w.limit);
                }
                self.calm = 0;
                // No queue at all: the service's concurrency may be far
                // above; find it as fast as at the start.
                // Judged like the start: the next window must show the
                // throughput rising with the limit, or startup ends.
                self.startup = true;
                self.restarted = true;
                self.startup_last = Some((w.limit, rate));
                self.startup_pool = Pool::default();
                self.startup_pool.add(w);
                let gain = if at_product {
                    1.0 + (self.growth - 1.0) / 4.0
                } else {
                    self.growth
                };
                let grown = w.limit * gain;
                return if grown.round() > w.limit.round() {
                    grown
                } else {
                    w.limit.round() + 1.0
                };
            }
            return w.limit * (1.0 + (self.growth - 1.0) / 4.0);
        }
        // A limit a load below capacity leaves unfilled keeps coming
        // down with the product (see `Auto::unfilled`): a restarted
        // startup that ended on a backlog's drain left one at 3.3 times
        // the product for 1,000 workers, and the next slowdown queued
        // its slowed calls past every client's timeout.
        self.unfilled(w, w.limit, latency, one_length)
    }
}

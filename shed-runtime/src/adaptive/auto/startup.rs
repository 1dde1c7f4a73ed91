//! The startup: from a small limit, grow while the throughput follows,
//! and end at the bandwidth-delay product once it stops (see
//! [`Auto`]'s docs for the rules, and why each).

use super::stats::{
    holds_one_length, load_outran_limit, queued_calls, ran_without_queue, unfilled_limit, Pool,
};
use super::{
    slow_to_gather, Auto, Reading, Window, CROWD, MIN_SAMPLES, QUEUED_CALLS, SHORTEST_LATENCY,
    STARTUP_SAMPLES,
};

/// A startup window's mean latency over the no-load one that shows calls
/// queueing inside the service.
const QUEUE_SHOWS: f64 = 1.2;
/// The share of the pooled rate per slot at which every slot of a
/// startup window counts as busy without a queue.
const FOLLOWED: f64 = 0.9;
/// A cold-start window's mean latency over the no-load one that shows
/// calls of one length queueing inside the service.
const COLD_QUEUE: f64 = 1.1;
/// The mean latency, over the no-load one, of a cold-start window's calls
/// of one length admitted in it (its cohort) that shows them queueing
/// inside the service (see `Auto::cohort_queued`).
const COHORT_QUEUE: f64 = 1.05;
/// The fewest calls of a window's cohort whose mean reads a queue.
const COHORT_CALLS: u64 = 4;
/// The most measured calls a cold-start window of calls of one length
/// waits for after a rise (see `Auto::rise_samples`).
const RISE_SAMPLES: f64 = 2.0 * MIN_SAMPLES as f64;
/// The fewest round trips of the no-load latency a cold-start window of
/// calls of one length lasts after a rise whose calls it waits for in
/// full (see `Auto::rise_round_trips`): a call the rise queued waits at
/// most one call for a worker and takes one more, and a quarter more
/// covers what a real service's calls of one length vary by (a few
/// percent) and the no-load latency read as their lowest window mean.
const RISE_ROUND_TRIPS: f64 = 2.25;
/// The fewest calls the cold start's rising windows hold for it to end
/// without a second look (see `Auto::second_look_at`), and to grow
/// fourfold (see `Auto::grows_fourfold`).
const THIN_POOL: f64 = 32.0;
/// A cold start that grows fourfold brings a limit its window did not
/// fill down to this many times the most calls in flight in it.
const UNFILLED: f64 = 2.0;
/// The least limit a cold start grows fourfold from (see
/// `Auto::grows_fourfold`).
const FOURFOLD_FROM: f64 = 64.0;
/// The most a second look's rate per slot may exceed the stalled
/// windows' for its slots to count as the stalled ones at work (a window
/// of a dozen calls reads its rate within about a third).
const PER_SLOT_KEPT: f64 = 1.5;
/// The second look's mean latency over the stalled windows' (Little's:
/// their slots over their rate) that shows every call slower, not slots
/// that worked.
const SECOND_LOOK_SLOWER: f64 = 1.25;
/// The most the calls' mean service time is taken to be over the no-load
/// latency (see `Auto::service_time`).
const MEAN_OVER_LOWEST: f64 = 2.0;
/// The fewest calls a restarted startup's window completes for its mean
/// alone to show a queue (see `startup_step`): its mean is then read
/// within about a tenth.
const RESTART_QUEUE_CALLS: u64 = 4 * MIN_SAMPLES;
/// The limit below which a cold start's stall with a crowd waiting does
/// not end it (see `Auto::stalled_in_a_crowd`). With the first window
/// closed early in a crowd (see `AutoControl::first_window_due`), a
/// first window of 10 calls read too fast now and then set a rate per
/// slot whose doubling stalled at 16 slots: below 8 slots, 3 cold starts
/// of `fifo-1000x200ms` of seeds 0..256 at 3x collapsed (under 2% of
/// capacity served over the run); below 32, none.
const CROWDED_FEW_SLOTS: f64 = 32.0;
/// The share of the demand's concurrency a rising cold-start window in a
/// crowd grows to at least (see `Auto::demand_in_a_crowd`).
const DEMAND_SHARE: f64 = 0.25;

impl Auto {
    /// A startup window: the limit doubles while the throughput follows
    /// it, and the startup ends when it stops doing so.
    pub(super) fn startup_step(&mut self, w: &Window, r: Reading) -> f64 {
        let Reading {
            latency,
            rate,
            binds,
            ..
        } = r;
        if !binds {
            // A cold start that grows fourfold can leave a limit far
            // above what a load below capacity fills (from its queue of
            // the cold start's first seconds), and nothing brings it
            // down while the load stays under it: 1,000 workers of 200 ms
            // at 0.8 load kept 4,096 slots, and a 4x slowdown then queued
            // three slowed calls a worker, past every client's 2 s (a
            // second served 0%). Like a TCP sender's window its
            // application leaves unused (RFC 7661), the limit comes down
            // to twice the most calls in flight.
            if !self.restarted && self.grows_fourfold(w.limit) {
                return unfilled_limit(w, w.limit, UNFILLED, 0.0);
            }
            // A restarted startup whose limit the load no longer fills
            // has nothing more to find, and never ended: the one a
            // recovery restarted for 1,000 workers of 200 ms at 0.8 load
            // doubled on the backlog the slowdown left, to 4,479 slots,
            // and held them, with the slowed no-load latency, once the
            // backlog drained; the next slowdown queued four slowed calls
            // a worker, past every client's 2 s (seconds of 0%). It ends
            // here, and the steady state brings an unfilled limit down.
            if self.restarted {
                return self.end_startup(w, false).min(self.unfilled(
                    w,
                    w.limit,
                    latency,
                    r.one_length,
                ));
            }
            return w.limit;
        }
        if let Some((stalled_limit, stalled)) = self.second_look.take() {
            return self.after_second_look(w, r, stalled_limit, stalled);
        }
        // Calls already queue inside the service (the mean is biased
        // low right after a rise, so this errs late; a handful of calls
        // says nothing). A cold start's calls of varying length are
        // judged against its rising windows as they are now (the lowest
        // reading, noise allowed, capped by their pool), not against the
        // no-load latency, which keeps each window's cap of its time: a
        // pool of one window is that window without its allowance. A
        // first window of 14 calls of 200 ms in 0.83 s set it at 118 ms,
        // its pool was at 151 ms three windows later, and the window at
        // 16 slots read its 179 ms as a queue and ended the startup there
        // for 1,000 workers (under 3% of their capacity until the
        // recovery, 11 s in). The no-load latency itself stays the lowest reading:
        // raised to this reference, the product held 64 workers above
        // their pool, and their slowed calls then read as no queue.
        let reference = self.cold_pooled_latency().or(self.no_load);
        let queue_shows =
            w.completed >= MIN_SAMPLES / 2 && reference.is_some_and(|d| latency > QUEUE_SHOWS * d);
        // Calls of one length show their queue as it is (see `decide`):
        // past the service's concurrency, whatever the throughput read.
        // Near the pool (a restarted startup), a throughput that seemed to
        // follow a slot's rise doubled the limit of 16 workers of 20 ms to
        // 34 while half a call queued. The cold start, far below the pool,
        // needs a tenth over the no-load latency (a real service's calls
        // of one length vary by a few percent, which reads as half a call
        // at a few dozen slots): a real 16-connection pool read a batch
        // of completions at 20 slots as 934 calls a second while its
        // calls took 26.5 ms for 21, doubled to 40, and a hundred calls
        // waited one to two queries in the pool. A handful of calls shows
        // it too when even the shortest waited: 2 workers of 200 ms at
        // 0.8 load, whose window at 4 slots the alarm closed after 4
        // calls of 400 ms, read the load's rise as the throughput
        // following the limit and doubled to 8 (calls of 800 ms, then
        // 3.2 s in the slowdown, for clients that wait 1 s).
        // Calls of one length a tenth over the no-load latency, or the
        // calls admitted in a cold-start window a twentieth over it (see
        // `cohort_queued`): a queue or a slowdown, never slots that worked
        // (see `grew`, below).
        let one_length_slower = self.no_load.is_some_and(|d| {
            self.of_one_length(w, d) && (latency > COLD_QUEUE * d || self.cohort_queued(w, d))
        });
        let one_length_queue = if self.restarted {
            self.no_load.is_some_and(|d| {
                self.of_one_length(w, d) && queued_calls(w, latency, d) >= QUEUED_CALLS
            })
        } else {
            one_length_slower
                && (w.completed >= MIN_SAMPLES / 2
                    || self
                        .no_load
                        .is_some_and(|d| w.min_latency.as_secs_f64() > COLD_QUEUE * d))
        };
        // A rise of calls of one length whose calls are no longer of the
        // no-load latency's length says nothing about concurrency: the
        // service changed speed (a recovery read as the throughput
        // following the limit took 400 workers' limit to 1,734).
        let speed_changed =
            self.rise_from.is_some() && self.no_load.is_some_and(|d| !self.of_one_length(w, d));
        if speed_changed {
            return self.end_startup(w, false);
        }
        // Below the service's concurrency every slot completes calls at
        // the same rate (one per service time), so the windows whose
        // throughput followed the limit are pooled, and a window is
        // judged against their rate per slot, not against the last
        // window alone: a window of a dozen calls of varying length
        // reads its rate within a third or so, and one lucky window
        // ended the startup of a 1,000-worker pool at 16 slots.
        let grew = match (self.startup_last, self.startup_pool.per_slot()) {
            // A quarter of the limit's rise at least (1.25x for a
            // doubling): past the service's concurrency it stays flat.
            // A window at the last limit or below (brought down, above)
            // grew only if its slots kept the pooled rate: counted as
            // risen, a window at the 1,634 slots an unfilled limit came
            // down to met a 4x slowdown, and the limit doubled.
            (Some((last_limit, _)), Some(per_slot)) if w.limit <= last_limit => {
                rate >= FOLLOWED * per_slot * w.limit
            }
            (Some((last_limit, _)), Some(per_slot)) => {
                rate >= per_slot * last_limit * (1.0 + 0.25 * (w.limit / last_limit - 1.0))
            }
            // Nothing to judge the throughput by: the first window that
            // bound grows, unless its calls of one length took longer
            // than the no-load latency (a queue or a slowdown, either way
            // not slots that worked), even too few of them to read a
            // queue by. 2 workers of 200 ms at 0.8 load never bound
            // before the slowdown; the window that met it, 10 calls at
            // 260 ms, doubled the limit to 4, and calls of 800 ms then
            // shared the 2 workers past every client's 1 s: no call
            // served in time for 4 s.
            _ => !one_length_slower,
        };
        // Below capacity a cold-start window can reach its limit in a
        // moment's burst with no call waiting for a slot: its throughput
        // is the load's, not what its slots can do, so it neither grows
        // the limit nor joins the pool (as TCP holds the window of a
        // sender its application limits, RFC 7661). 2 workers of 200 ms
        // at 0.8 load doubled from 4 slots to 8 on such windows (to 16
        // with the round trips' gain), and the slowdown then queued 8
        // calls of 800 ms behind the 2 workers, past every client's 2 s.
        // So does a window whose bursts left calls waiting at its close
        // but fewer came to wait, or still waited, than finished: the
        // load did not outrun the limit (see `load_outran_limit`).
        // Growing on calls waiting at the close alone, 2 workers of 200
        // ms at 0.8 load rose from 2 slots to 4 on a window of 12 calls
        // in which 8 came to wait, then to 16; the slowdown queued 16
        // calls of 800 ms behind the 2 workers, and nothing was served in
        // time from 7 s to the run's end at 16 s (held at 2, 83 calls in
        // time instead of 50). Over seeds 0..32 the grid's runs back
        // within 2 s went from 593 to 607 and those without an outage
        // from 588 to 603 (see `docs/defaults.md`). Calls of one length
        // that queued inside the service show the limit past its
        // concurrency, waiting or not (below).
        if !self.restarted && !load_outran_limit(w) && !one_length_queue {
            self.learn_below_the_limit(w, latency);
            return w.limit;
        }
        let crowd_rise = self.crowd_rise.take();
        // A queue alone does not end the startup: with a few dozen calls
        // of varying length a window's mean is noisy, and a 1,000-worker
        // pool read as queueing at 32 slots stays there.
        let per_slot_before = self.startup_pool.per_slot();
        // A restarted startup's window of a few hundred calls reads its
        // mean within a tenth or so: one whose mean shows a queue is past
        // the pool, whatever its throughput read, and ends the startup
        // (below). Its windows are long (a few round trips of the no-load
        // latency, which a slowdown scaled up), so a recovery or a
        // backlog's drain inside one reads as the throughput following
        // the limit: 1,000 workers of 200 ms (after a cold start that
        // jumped to the demand, see `docs/defaults.md`), restarted in
        // their slowdown at 926 slots, read 844-1,085 ms (1.4-1.8 times
        // the scaled 618 ms) in windows of 2.5 s and doubled to 9,262
        // slots across the recovery; one second then served nothing, and
        // the second slowdown four seconds of 0%.
        let queue_in_restart = self.restarted && queue_shows && w.finished >= RESTART_QUEUE_CALLS;
        if grew && !one_length_queue && !queue_in_restart {
            if self.restarted {
                // More concurrency found: the pool a queue read before
                // is past.
                self.idle_rises = 0;
                self.queue_read_pool = None;
                if self.rise_from.is_some() {
                    self.rise_from = Some(w.limit);
                }
            }
            self.startup_pool.add(w);
            self.stalled = Pool::default();
            // While the limit binds, the service holds `limit` calls,
            // so Little's law gives their latency from the throughput
            // alone. (The window's mean latency would not do: right
            // after the limit rose, the calls that complete first are
            // the short ones.) The no-load latency is the lowest such
            // reading, each with its noise allowed for (a window of n
            // calls reads its rate within about 1/sqrt(n)): the lowest
            // raw reading of a few was half the service time of
            // exponential calls (a 64-worker pool of 50 ms calls read
            // 12 ms from its first two calls, and every window after
            // looked like a queue). It is never above the pooled
            // windows' reading, which the allowance alone would pass.
            let noise = 1.0 + self.noise(w.finished);
            let little = w.limit / rate * noise;
            let pooled = self.startup_pool.latency().unwrap_or(little);
            // Calls of about one length (the shortest near the mean)
            // are read by their own mean, which no call order biases:
            // Little's reading of a window that closes in the middle
            // of a batch of completions (a cold start fills every slot
            // at once) is off by up to a batch, either way (a 16-
            // connection database of 20 ms queries read 17 ms and 25 ms
            // from a 12-call window at 5 slots, and the high reading
            // held its limit at 21-30).
            let one_length = holds_one_length(w, latency);
            // Whether the service's calls are of one length is read here,
            // mostly below its concurrency, where nothing queues inside
            // it (past it, a FIFO queue inside makes every call wait, and
            // calls of any length look alike), by most windows: a real
            // service's window that rose past its pool on a batch of
            // completions, or one slowed by a busy CPU, reads otherwise.
            if !self.restarted {
                self.vote_one_length(one_length);
            }
            // Read by their mean, a window's queue only reads higher
            // than the lowest reading: Little's law read such a window
            // of a real service at 17.9 ms for calls of 21 ms.
            let of_one = one_length || self.calls_of_one_length();
            if of_one {
                self.learn_startup_reading(latency, latency);
            } else {
                self.learn_startup_reading(little.min(pooled), little);
                if !self.restarted {
                    self.keep_lowest_near_the_pool(w, latency, rate, per_slot_before, pooled);
                }
            }
            // The rise after a stall in a crowd followed: the windows
            // before the stalled ones read too high, as after a second
            // look, and the stalled ones and this one read the no-load
            // latency (had it not followed, the stall was a queue, and
            // the lower reading before it stays).
            if crowd_rise.is_some() {
                self.no_load = self.startup_pool.latency();
            }
            let last_limit = self.startup_last.map(|(l, _)| l);
            self.startup_last = Some((w.limit, rate));
            self.startup_stalls = 0;
            if let (true, Some(last), Some(d)) = (self.restarted, last_limit, self.no_load)
                && self.of_one_length(w, d)
                && w.limit > last
            {
                return self.restarted_rise(w.limit, last);
            }
            // A cold-start window that needed whole round trips more to
            // gather its calls grows by a round trip's gain for each, up
            // to two, once a rise was followed in full: no queue, and
            // every slot completing calls at the pooled rate. At 2 slots
            // a window of 12 calls lasts six round trips: 1,000 workers
            // of 200 ms took 3.4 s to find, doubling once a window.
            // From `FOURFOLD_FROM` slots, once the rising windows hold
            // `THIN_POOL` calls, their rate per slot is known within a
            // fifth, and a window followed in full grows by two round
            // trips' gain however short it was:
            // doubling a round trip, 1,000 workers of 200 ms were found
            // 3.0-3.2 s after a cold start (a window of one round trip
            // from 16 slots on), and at 0.8 load 3 runs of 32 served 99%
            // of their calls outside the slowdown; growing fourfold, 11.
            // The price is a limit up to four times the pool for the
            // window that finds it: its calls queue inside for up to
            // three service times, and the calls that come while they
            // drain wait (see `docs/defaults.md`). Not for calls of one
            // length, whose queue shows at once and whose p99 that queue
            // would set: 16 workers of 20 ms went from 31 ms to 48.
            // Their windows that took round trips still grow by each. Nor
            // below 64 slots, where doubling finds a pool within a second
            // or so: from 16, a real service's 16 connections of 20 ms
            // queries, whose calls did not all read as of one length,
            // saw p99 at 1.9-2.1 times the uncontended p99 at 3x, 1.3-1.5
            // times doubling.
            let rounds = match (self.restarted, last_limit, self.no_load) {
                (false, Some(_), Some(d))
                    if self.followed_in_full(w, latency, rate, per_slot_before) =>
                {
                    if self.grows_fourfold(w.limit) {
                        2.0
                    } else {
                        self.gathering_round_trips(w, d)
                    }
                }
                _ => 1.0,
            };
            // In a slowdown of calls of two lengths, by the steady
            // state's step (see `Auto::slowed_with_two_lengths`).
            let gain = if self.slowed_with_two_lengths() {
                self.growth
            } else {
                self.startup_gain
            };
            let grown = self.stop_at_held(w.limit, w.limit * gain.powf(rounds));
            return self
                .demand_in_a_crowd(w, latency)
                .map_or(grown, |demand| grown.max(DEMAND_SHARE * demand));
        }
        // The rise after a stall in a crowd did not follow: the stall was
        // a queue, and the startup is judged by its limit last followed
        // and its pool of the windows that rose, as before the stall (the
        // lowest reading, cleared at the stall, stays cleared).
        if let Some((last, pool)) = crowd_rise {
            self.startup_last = last;
            self.startup_pool = pool;
            self.crowd_rise_failed = true;
        }
        // A throughput that did not keep up while no call waited for a
        // slot shows the load, not the service: below capacity, ending
        // here put the limit at the load's product, and its bursts then
        // waited in the limiter's queue (a tenth of them past the budget,
        // for 4 workers of 1 ms at 0.8 load). Calls of one length that
        // queued inside the service show the service, whatever the load:
        // 8 ps workers of 2 ms at 0.8 load held 16 slots over five such
        // windows, a queue of 8 calls inside.
        if !w.waiting && !one_length_queue {
            return w.limit;
        }
        // The limit grew, the throughput did not keep up (twice, for
        // one window's rate is noisy, or once with a queue): the service's
        // concurrency was reached. It is the highest throughput times
        // the lowest latency seen.
        self.startup_stalls += 1;
        self.stalled.add(w);
        // A few dozen calls give a rate within a fifth or so, and the
        // window right after a rise lags: a third look then.
        let looks = if w.finished < 4 * MIN_SAMPLES { 3 } else { 2 };
        if (self.startup_stalls >= looks || queue_shows)
            && !one_length_queue
            && let Some(grown) = self.stalled_in_a_crowd(w, w.limit)
        {
            return grown;
        }
        if self.startup_stalls >= looks || queue_shows || one_length_queue {
            // Calls of one length read their queue exactly: no second
            // look for them.
            if let Some(followed) = self.second_look_at(w).filter(|_| !one_length_queue) {
                self.looked_again = true;
                self.second_look = Some((w.limit, std::mem::take(&mut self.stalled)));
                return followed;
            }
            return self.end_startup(w, queue_shows && !one_length_queue);
        }
        w.limit
    }

    /// The limit a startup restarted from the steady state grows to from
    /// `limit`, which it rose to from `last` and which found more, for
    /// calls of one length: twice its step, not twice the limit (and no
    /// further than [`Auto::stop_at_held`] allows). It starts a slot from
    /// the product, where doubling put a whole pool of calls behind the
    /// workers (the real service's 16 connections rose from 15.4 to 16.4,
    /// found the sixteenth, and doubled to 32.7 slots for a window).
    /// Steps of 1, 2, 4... still find a pool that doubled within a few
    /// windows.
    fn restarted_rise(&self, limit: f64, last: f64) -> f64 {
        self.stop_at_held(limit, limit + 2.0 * (limit - last))
    }

    /// `grown`, the limit a window at `limit` slots grows to, but in a
    /// startup restarted from the steady state below the highest limit
    /// the steady state held since the last startup (`Auto::steady_high`),
    /// no further than that limit: the service ran there before the cut
    /// the startup climbs back from, and past it nothing is known. The
    /// next rise, once the window there finds more, is not stopped: a
    /// pool larger than the limit held shows itself as before.
    ///
    /// A slowdown met past the pool seen brings the limit down to that
    /// pool (see `Auto::slowed_at_seen_pool`), and the restarted
    /// startup's steps then overshot the slowed pool by the last of them:
    /// 48 processor-sharing workers of 50 ms at 0.8 load, held at 51-56
    /// slots before their 4x slowdown, went 32, 34, 38, 46 and 62 slots
    /// in it; every call at 62 took 258 ms, shared by 62, for clients of
    /// 250 ms, and the slowed second served 17-26% of the slowed pool
    /// (holdout `ps-48x50ms-const` at 0.8x, 4 seeds of 8). Stopped at
    /// the 51-56 slots held before, a call takes 213-233 ms. A recovery
    /// read as the throughput following the limit doubled past the pool
    /// too: 1,000 workers of 200 ms of lognormal length at 3x, held at
    /// 1,170-1,491 slots before their slowdown and at 1,065 in it, rose
    /// to 1,331 on the recovery and doubled to 2,662; calls queued inside
    /// the pool for over a second, and the limit fell to 1,138 (the
    /// seconds after served 68.0-78.6%; `--tails` seeds 1 and 2). Stopped
    /// at 1,491 (and 1,346), they serve 87.8-97.6%, and every second at
    /// 80% is kept at 3x on 32 runs of 32 instead of 21.
    fn stop_at_held(&self, limit: f64, grown: f64) -> f64 {
        match self.steady_high {
            Some(high) if self.restarted && limit < high => grown.min(high),
            _ => grown,
        }
    }

    /// The measured calls a cold-start window of calls of one length at
    /// `limit` slots waits for after a rise: the limit and the one it rose
    /// from, up to [`RISE_SAMPLES`] (`None` otherwise). The calls the rise
    /// admitted, queued inside the service behind those admitted before
    /// it, then complete in the window, and its cohort reads their queue
    /// (see `cohort_queued`). A real 16-connection database's window at
    /// 20 slots closed on its 20th call, one round trip in, before the 4
    /// calls its rise queued had completed, and doubled the limit to 40.
    pub(crate) fn rise_samples(&self, limit: f64) -> Option<u64> {
        self.cold_rise_from(limit)
            .map(|last| (limit + last).min(RISE_SAMPLES).ceil() as u64)
    }

    /// The round trips of the no-load latency that a cold-start window of
    /// calls of one length at `limit` slots lasts at least after a rise,
    /// [`RISE_ROUND_TRIPS`], when it waits for the rise's calls in full
    /// (`None` otherwise: no such rise, or one past [`RISE_SAMPLES`]
    /// calls, whose window is any other's). Counted in calls alone, the
    /// window can close just before the calls the rise queued complete:
    /// a pool that completes its calls in batches brings the calls a
    /// window needs in as they complete. A real 16-connection database's
    /// window at 20 slots read 30 calls in 2.0 round trips of its 21 ms
    /// queries, none of them queued (its cohort at 0.99 times the no-load
    /// latency), and doubled the limit to 40.
    pub(crate) fn rise_round_trips(&self, limit: f64) -> Option<f64> {
        self.cold_rise_from(limit)
            .filter(|&last| limit + last <= RISE_SAMPLES)
            .map(|_| RISE_ROUND_TRIPS)
    }

    /// The limit a cold start of calls of one length rose to `limit`
    /// from, if it rose.
    fn cold_rise_from(&self, limit: f64) -> Option<f64> {
        self.startup_last
            .map(|(last, _)| last)
            .filter(|&last| !self.restarted && self.calls_of_one_length() && last < limit)
    }

    /// The round trips a followed cold-start window took to gather its
    /// calls, 1 or 2, by which it grows (see `startup_step`): its length
    /// over the no-load latency `d`. Calls of one length complete in
    /// batches (a cold start fills its slots at once), so a window at
    /// `limit` slots that needs more than `limit` calls lasts a round
    /// trip more to the next batch: it counts only the round trips its
    /// [`STARTUP_SAMPLES`] needed at `limit`, not those of the calls a
    /// rise makes it wait for (see `Auto::rise_samples`). A real
    /// 16-connection database's window at 10 slots, which waited for 15
    /// calls, lasted two round trips and grew fourfold, to 40 slots.
    fn gathering_round_trips(&self, w: &Window, d: f64) -> f64 {
        let rounds = (w.elapsed.as_secs_f64() / d).round();
        let rounds = if self.of_one_length(w, d) {
            rounds.min((STARTUP_SAMPLES / w.limit).floor())
        } else {
            rounds
        };
        rounds.clamp(1.0, 2.0)
    }

    /// Whether the calls of one length admitted in cold-start window `w`
    /// (its cohort, [`COHORT_CALLS`] at least) took [`COHORT_QUEUE`]
    /// times the no-load latency `d` on average: they queued inside the
    /// service. The window's mean mixes them with the calls admitted
    /// before it, at the limit before the rise (below the pool, so at the
    /// no-load latency), which dilute the queue a rise past the pool
    /// makes: over 14 traced cold starts, a real 16-connection database's
    /// window at 20 slots (30 calls, see `rise_samples`) read a mean of
    /// 1.07-1.17 times its no-load latency of 21 ms, under the tenth that
    /// shows a queue on 6 of them, and its cohort 1.09-1.23; the cohorts
    /// of the 41 windows below the pool read 0.99-1.04. Not in a restarted
    /// startup, whose windows span round trips and whose queue is read in
    /// calls (see `startup_step`).
    fn cohort_queued(&self, w: &Window, d: f64) -> bool {
        !self.restarted
            && w.cohort_completed >= COHORT_CALLS
            && w.cohort_avg_latency.as_secs_f64() > COHORT_QUEUE * d
    }

    /// At a cold start's end, notes how far above the no-load latency its
    /// calls' mean sat, as the rising windows judged queues by
    /// ([`Auto::cold_pooled_latency`]): up to twice, the noise of a first
    /// window of a dozen calls. Calls of one length are read by their
    /// mean already; a restarted startup's end leaves it.
    fn note_mean_over_lowest(&mut self) {
        if let (Some(pooled), Some(d)) = (self.cold_pooled_latency(), self.no_load) {
            self.mean_over_lowest = (pooled / d).clamp(1.0, MEAN_OVER_LOWEST);
        }
    }

    /// What a cold start of calls of varying length reads their latency
    /// as: its rising windows' pool, capped by their lowest reading with
    /// its noise allowed for. `None` in a restarted startup, for calls of
    /// one length (the no-load latency reads them exactly) and before a
    /// window rose.
    fn cold_pooled_latency(&self) -> Option<f64> {
        if self.restarted || self.calls_of_one_length() {
            return None;
        }
        self.startup_pool
            .latency()
            .map(|pooled| pooled.min(self.cold_lowest))
    }

    /// Whether a cold-start window at `limit` followed in full grows by
    /// two round trips' gain however short it was: `limit` is at least
    /// [`FOURFOLD_FROM`], and the rising windows hold [`THIN_POOL`] calls,
    /// of varying length (see `startup_step`).
    fn grows_fourfold(&self, limit: f64) -> bool {
        limit >= FOURFOLD_FROM
            && self.startup_pool.finished >= THIN_POOL
            && !self.calls_of_one_length()
    }

    /// The concurrency the demand would hold with no queue, read from a
    /// rising cold-start window `w` (of mean latency `latency`) that a
    /// [`CROWD`] waited through: `None` unless its calls are of varying
    /// length and slow to gather at its limit (see `slow_to_gather`), and
    /// the startup is the cold one. The limit grows to at least
    /// [`DEMAND_SHARE`] of it (see `startup_step`).
    ///
    /// While a crowd waits for a few slots, nearly every call that comes
    /// waits in the limiter's queue, so the calls that came in a window
    /// (`Window::arrived`) read the demand's rate, and by Little's law
    /// that rate times the calls' latency is the concurrency the demand
    /// would hold: 0.8 times the pool at 0.8 load, three times at 3x.
    /// Doubling from 2 slots, 1,000 workers of 200 ms were found up to
    /// 2.4 s after the cold start (worst of seeds 0..8; over 2 s on 7 runs
    /// of 32 at 3x); jumping, within 0.4-0.6 s (on 6cc12ff, seed 40 at 3x
    /// went from 2 slots to 606, then 2,422, and the startup ended at
    /// 1,154 slots 1.6 s after the start instead of 3.3 s). A quarter, and only
    /// from a window that rose, because the window's mean is the short
    /// calls' right after a rise and the next window still judges the
    /// rise. Not for calls of one length: the first window after a jump
    /// to 79 slots for 400 workers of 100 ms held calls admitted at 2,
    /// and a quarter of a 40-fold rise is a low bar: the limit doubled on
    /// such windows to 1,269 slots. Not for calls quick to gather: a
    /// lucky window of 13 calls in 11 ms at 8 slots set the rising
    /// windows' rate for 16 workers of 10 ms, and the startup ended at 53
    /// slots (every second at 80% at 3x on 12 runs of 32 instead of 21;
    /// both gates measured on 6cc12ff, see `docs/defaults.md`).
    fn demand_in_a_crowd(&self, w: &Window, latency: f64) -> Option<f64> {
        let crowded = !self.restarted
            && !self.calls_of_one_length()
            && w.waiters >= CROWD
            && slow_to_gather(latency, w.limit);
        crowded.then(|| w.arrived as f64 / w.elapsed.as_secs_f64() * latency)
    }

    /// What a cold-start window `w` (of mean latency `latency`) in which
    /// no call waited for a slot still shows, whatever the load: whether
    /// the service's calls are of one length, and if they are, their
    /// no-load latency, as their mean. Without it, 2 ps workers of 200 ms
    /// at 0.8 load learned nothing until a window of waiting calls, which
    /// took 5 s to time its 12, and that window met the slowdown: its
    /// 700 ms became the no-load latency, the limit went to 16, and every
    /// call took 1.6 s for clients of 1 s.
    fn learn_below_the_limit(&mut self, w: &Window, latency: f64) {
        let one_length = holds_one_length(w, latency);
        self.vote_one_length(one_length);
        if one_length {
            self.learn_startup_reading(latency, latency);
        }
    }

    /// Counts a cold-start window's vote on whether the service's calls
    /// are of one length (see [`Auto::calls_of_one_length`]).
    fn vote_one_length(&mut self, one_length: bool) {
        let (of_one, not) = &mut self.one_length_votes;
        *if one_length { of_one } else { not } += 1;
    }

    /// Whether a rising startup window `w` (of mean latency `latency` and
    /// throughput `rate`) followed its rise in full: no queue against the
    /// no-load latency, and every slot completing calls at the pooled
    /// rate `per_slot` of the windows before it.
    fn followed_in_full(&self, w: &Window, latency: f64, rate: f64, per_slot: Option<f64>) -> bool {
        self.no_load.is_some_and(|d| {
            latency <= QUEUE_SHOWS * d && per_slot.is_some_and(|p| rate >= FOLLOWED * p * w.limit)
        })
    }

    /// Keeps a cold start's no-load latency of calls of varying length
    /// within the noise of its rising windows' pool (`pooled`, their
    /// Little's reading), once window `w` followed its rise in full (see
    /// [`Auto::followed_in_full`]; `per_slot` is the pool's rate per slot
    /// before `w`).
    ///
    /// The lowest reading is that of one window, often the first, of a
    /// dozen calls: off by a third now and then, it stays the no-load
    /// latency long after the pool of the windows that rose has read the
    /// calls within a few percent, and the product, and the budgets, sit
    /// below the pool. 1,000 workers of 200 ms kept the 173.8 ms of a first
    /// window of 8 calls while their pool of 589 read 198 ms; kept near
    /// the pool, at 3x they served 90% of their capacity on 31 runs of 32
    /// instead of 28, and kept every second at 80% on 7 instead of 3 (see
    /// `docs/defaults.md`). Not from a window that did not follow in full:
    /// one of a slowdown read as a rise raised a pool of 1,000 workers of
    /// 200 ms to 322 ms.
    fn keep_lowest_near_the_pool(
        &mut self,
        w: &Window,
        latency: f64,
        rate: f64,
        per_slot: Option<f64>,
        pooled: f64,
    ) {
        if !self.followed_in_full(w, latency, rate, per_slot) {
            return;
        }
        let floor = pooled * (1.0 - 2.0 * self.noise(self.startup_pool.finished as u64));
        self.no_load = self.no_load.map(|d| d.max(floor));
    }

    /// Takes a startup window's `reading` as the no-load latency if it is
    /// lower, and in the cold start its `uncapped` reading (not capped by
    /// the pool of its time) as `cold_lowest` if that is.
    fn learn_startup_reading(&mut self, reading: f64, uncapped: f64) {
        self.no_load = Some(self.no_load.map_or(reading, |d| d.min(reading)));
        if !self.restarted {
            self.cold_lowest = self.cold_lowest.min(uncapped);
        }
    }

    /// The limit a cold start about to end after window `w` takes its
    /// second look at (see the type's docs), if it takes one: its rising
    /// windows hold too few calls to be sure of their rate per slot. One
    /// window of 14 calls at the initial 2 slots that came in half their
    /// time (a 3% chance) set it twice too high for 1,000 workers of 200
    /// ms; the windows at 4 slots then read as stalled, the startup ended
    /// at 2.4 slots, and the service served 0.3% of its capacity.
    fn second_look_at(&self, w: &Window) -> Option<f64> {
        let (followed, _) = self.startup_last?;
        (!self.restarted
            && !self.looked_again
            && self.startup_pool.finished < THIN_POOL
            && followed < w.limit)
            .then_some(followed)
    }

    /// The second look's window `w` (read as `r`), at the limit the
    /// throughput last followed, after the windows `stalled` at
    /// `stalled_limit` did not keep up: the startup goes on from
    /// `stalled_limit` if those slots were working, or ends.
    fn after_second_look(
        &mut self,
        w: &Window,
        r: Reading,
        stalled_limit: f64,
        stalled: Pool,
    ) -> f64 {
        // Calls the stalled limit admitted still complete in a window
        // right after the fall, and add their rate to the lower limit's:
        // in the lab, a look at 8 slots right after 16 read 47 calls a
        // second of calls of 200 ms, of which 8 slots complete 40. The
        // next window is the look.
        if w.max_in_flight as f64 > w.limit.ceil() {
            self.second_look = Some((stalled_limit, stalled));
            return w.limit;
        }
        let (Some(per_slot), Some(stalled_latency)) = (stalled.per_slot(), stalled.latency())
        else {
            return self.end_startup(w, false);
        };
        // A service whose concurrency the lower limit already reached
        // completes as many calls a second there as at the stalled
        // limit; one it did not reach completes as many per slot. The
        // line is half-way. A slowdown also completes fewer calls a
        // second, but every call takes longer: a look at 4 slots for 2
        // workers that met the lab's 4x slowdown read as slots that
        // worked, and the limit went to 16 for calls of 800 ms. And slots
        // that worked each complete about as many calls as the stalled
        // ones did: a look at a quarter of the limit may keep up to 2.5
        // times their rate per slot below the half-way line, which is
        // the slots above doing nothing (2 workers at 16 slots, whose
        // calls queued 1.3 s inside, looked at 4 in the slowdown, read
        // 2.5 times the rate per slot in calls no slower than the queued
        // ones, and the limit went to 32).
        let stalled_rate = per_slot * stalled_limit;
        let slots_worked = r.rate < stalled_rate * (1.0 + w.limit / stalled_limit) / 2.0
            && r.rate <= PER_SLOT_KEPT * per_slot * w.limit
            && r.latency <= SECOND_LOOK_SLOWER * stalled_latency;
        if !slots_worked {
            // A crowd that came while the look ran: the stall goes on as
            // one in a crowd does (see `Auto::stalled_in_a_crowd`), from
            // the stalled limit. A look is taken where the stall had too
            // few waiting for a crowd, and at half the slots the crowd
            // grows: 64 processor-sharing workers of 50 ms (a cache's hits
            // and misses) at 0.8 load stalled at 4 slots with 61 calls
            // waiting, looked at 2 with 199, and the cold start ended
            // there; a restart found the pool 3.3 s after the start
            // (`grid --mixed`, `ps-64x50ms-mix` seed 10: the first three
            // seconds at 5-10% of the calls in time).
            self.stalled = stalled;
            if let Some(grown) = self.stalled_in_a_crowd(w, stalled_limit) {
                return grown;
            }
            return self.end_startup(w, false);
        }
        // The windows before the stalled ones read too high: the stalled
        // windows and this one, every slot busy without a queue, are the
        // pool now, and its reading the no-load latency.
        self.startup_pool = stalled;
        self.startup_pool.add(w);
        self.no_load = self.startup_pool.latency();
        self.cold_lowest = f64::INFINITY;
        self.startup_last = Some((stalled_limit, stalled_rate));
        self.startup_stalls = 0;
        stalled_limit * self.startup_gain
    }

    /// A cold start that stalled at `stalled_limit`, below
    /// [`CROWDED_FEW_SLOTS`] slots, while a crowd of [`CROWD`] calls or
    /// more waited at the close of window `w` (the last stalled one, or
    /// the second look after them) goes on from the stalled limit, with
    /// the stalled windows (`self.stalled`) as its pool, instead of
    /// ending (`None`: it was not such a stall, or a crowd's rise of
    /// this cold start was not followed before). If the next window
    /// rises, their reading becomes the no-load latency (see
    /// `startup_step`). At 2 to 4 slots a window of 12 calls of
    /// varying length reads its rate within about a third, and now and
    /// then at twice the truth: 12 calls of 200 ms at 2 slots in 578 ms
    /// (`fifo-1000x200ms`, seed 118) set the rate per slot, the windows at
    /// 4 slots read as no rise, the second look at 2 read a slow window,
    /// and the startup ended at 2 slots for 1,000 workers (0.5% of their
    /// capacity served at 3x; 6 runs of 256 seeds so). A demand that
    /// keeps a crowd waiting at a few slots is rarely a few workers'
    /// (see [`CROWD`]), and for those it is, the price is a window or two
    /// at twice their limit, whose stall then ends the startup as before.
    fn stalled_in_a_crowd(&mut self, w: &Window, stalled_limit: f64) -> Option<f64> {
        if self.restarted
            || self.crowd_rise_failed
            || w.waiters < CROWD
            || stalled_limit >= CROWDED_FEW_SLOTS
        {
            return None;
        }
        let stalled = std::mem::take(&mut self.stalled);
        let Some(per_slot) = stalled.per_slot() else {
            self.stalled = stalled;
            return None;
        };
        let before = std::mem::replace(&mut self.startup_pool, stalled);
        self.crowd_rise = Some((self.startup_last, before));
        self.cold_lowest = f64::INFINITY;
        self.startup_last = Some((stalled_limit, per_slot * stalled_limit));
        self.startup_stalls = 0;
        Some(stalled_limit * self.startup_gain)
    }

    /// The end of the startup after window `w`: the limit settles at
    /// `headroom` times the concurrency the service sustained.
    /// `queue_showed`: `w` showed calls queueing inside the service.
    pub(super) fn end_startup(&mut self, w: &Window, queue_showed: bool) -> f64 {
        // Read while `restarted` still tells a cold start from a
        // restarted one, whose pool says nothing of the calls' length.
        self.note_mean_over_lowest();
        self.startup = false;
        self.restarted = false;
        self.steady_high = None;
        // The highest limit the throughput followed, if it failed to
        // follow the last one over more than one window (the window right
        // after a rise lags, and one alone ended a 16-worker pool's
        // startup under 3x at 16 slots), or once with a queue inside the
        // service: then the limit itself is past the pool. A window of
        // 12 calls that read 2 workers of 200 ms at 17 calls a second at
        // 8 slots doubled the limit to 16, whose window showed every
        // call waiting (1.4 s for calls of 200 ms); the startup ended at
        // 16 slots with headroom, and the next window, of 64 calls at 19
        // slots, took 11.6 s (36% of capacity at 3x, over the run).
        // Calls of one length that queued end at the limit, which the
        // next window cuts to the product they read exactly: the limit
        // before theirs can be far below (the README's 8 workers rose
        // from 4 to 16, and ending at 4 cost 5% of the run's goodput).
        let followed = self
            .startup_last
            .take()
            .filter(|_| self.startup_stalls >= 2 || queue_showed)
            .map(|(limit, _)| limit);
        self.startup_pool = Pool::default();
        self.stalled = Pool::default();
        self.startup_stalls = 0;
        // The rates of startup were those of lower limits: a probe is
        // judged against the rate of the limit it leaves.
        self.binding_rate.reset(None);
        // A recovery's probe at half the limit, if it waited for this.
        self.deep_probe = std::mem::take(&mut self.probe_after_startup);
        self.since_probe = 0;
        // Only the rates of full windows here: a startup window of a dozen
        // calls, right after the limit doubled, reads the rate of the
        // limit before (a 16-worker pool ended at 7).
        let full = self.rates.all.max().zip(self.no_load).map(|(r, d)| r * d);
        let one_length = self.no_load.is_some_and(|d| self.of_one_length(w, d));
        // Without one, the highest limit the throughput followed: the
        // limit itself, which three windows showed past the pool, held a
        // pool of 2 workers of 200 ms at 9.6 slots (no startup window of
        // 12 calls there reaches 32), and its slowdown served nothing.
        let fallback = followed.unwrap_or(w.limit);
        let settled = self.headroom_for(one_length) * full.unwrap_or(fallback).min(w.limit);
        // A rise of calls of one length ends no lower than the highest
        // limit that showed no queue on the way, nor than the concurrency
        // its last window ran calls at without a queue (Little: the calls
        // in flight times the no-load share of their latency). The
        // product, from the rates of full windows at lower limits, can
        // read below both: 8 workers back from a slowdown at 4 slots rose
        // to 5, doubled to 10, and ended at 4.1, every 1.1 s.
        match (self.rise_from.take(), self.no_load) {
            (Some(from), Some(d)) if self.of_one_length(w, d) => {
                let ran =
                    ran_without_queue(w, w.avg_latency.as_secs_f64().max(SHORTEST_LATENCY), d);
                settled.max(from).max(ran).min(w.limit)
            }
            (Some(from), _) => settled.max(from).min(w.limit),
            (None, _) => settled,
        }
    }
}

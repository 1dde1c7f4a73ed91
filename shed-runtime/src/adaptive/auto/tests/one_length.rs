//! Calls of one length, whose queue the latency reads exactly.

use super::*;

#[test]
fn calls_of_one_length_teach_their_own_latency_not_littles_reading_of_a_batch() {
    // A cold start fills every slot at once, so calls of 20 ms complete
    // in batches of the limit, and a window closes at its twelfth
    // completion, in the middle of a batch: 5 slots for 62 ms read 12
    // calls (Little: 25.8 ms) or for 44 ms (Little: 18.3 ms). Both
    // were learned as the no-load latency on a real service; the high
    // one held the limit at 21-30 for 16 connections.
    for (elapsed_ms, finished) in [(62.0, 12), (44.0, 12)] {
        let mut auto = Auto::default();
        let batch = Window {
            elapsed: Duration::from_secs_f64(elapsed_ms / 1000.0),
            min_latency: Duration::from_micros(20_300),
            ..window(20.9, 5.0, finished, true)
        };
        assert_eq!(auto.next_limit(&batch), 10.0, "the startup goes on");
        let learned = no_load_ms(&auto);
        assert!(
            (20.0..=21.5).contains(&learned),
            "{elapsed_ms} ms: learned {learned} ms for calls of 20.9 ms"
        );
    }
    // Calls of varying length keep Little's reading: their first
    // completions after a rise are the short ones.
    let mut auto = Auto::default();
    let varied = Window {
        elapsed: Duration::from_millis(60),
        min_latency: Duration::from_millis(2),
        ..window(12.0, 4.0, 12, true)
    };
    auto.next_limit(&varied);
    let learned = no_load_ms(&auto);
    assert!(
        learned > 19.0,
        "Little's 20 ms, not the mean's 12: {learned}"
    );
}

#[test]
fn calls_of_one_length_are_held_at_the_pool_not_a_fifth_above_it() {
    // With `headroom` 1.2 and `tolerance` 1.5, 16 workers of 20 ms ran
    // their limit in a sawtooth at 19-26 slots: a queue inside the pool
    // that the calls' latency shows exactly.
    let mut auto = Auto::default();
    let limits = drive(&mut auto, 2.0, 300, |l| pool_of_one_length(16.0, l));
    // One slot above, one window in thirty once settled: the rises that
    // find no more workers come less and less often.
    let settled = &limits[20..];
    let above = settled.iter().filter(|&&l| l.round() > 16.0).count();
    assert!(
        above * 20 <= settled.len(),
        "above the 16 workers in {above} windows of {}: {limits:?}",
        settled.len()
    );
    assert!(
        settled
            .iter()
            .all(|&l| l.round() >= 16.0 && l.round() <= 17.0),
        "{limits:?}"
    );
}

/// The pool of [`one_length_at`] with its queue standing: past the
/// workers, every call waits, the shortest too.
fn standing_queue_of_one_length(service_ms: f64, workers: f64, limit: f64) -> Window {
    let w = one_length_at(service_ms, workers, limit);
    Window {
        min_latency: w.avg_latency,
        ..w
    }
}

#[test]
fn calls_of_one_length_whose_no_load_latency_was_learned_high_find_it_again() {
    // A cold start on a busy machine read a real 16-connection database's
    // queries of 21 ms at 36 ms. At the product of that latency, 29 slots,
    // every call waits about 16 ms inside the pool, which reads as no
    // queue against 36, so nothing brought the limit down (it stood at 23
    // slots for 16 workers). A probe at 0.75 of the limit every 10 s of
    // such windows shows calls take less: 23 to 18 slots at the first,
    // 16 at the second, where the next ones find nothing to take.
    let mut auto = Auto::default();
    drive(&mut auto, 2.0, 200, |l| pool_of_one_length(16.0, l));
    auto.no_load = Some(0.036);
    // Windows of 100 ms: 400 of them are 40 s.
    let limits = drive(&mut auto, 16.0, 400, |l| {
        standing_queue_of_one_length(20.0, 16.0, l)
    });
    let no_load = no_load_ms(&auto);
    assert!((20.0..21.0).contains(&no_load), "{no_load}: {limits:?}");
    assert!(
        limits[300..]
            .iter()
            .all(|&l| l.round() >= 16.0 && l.round() <= 17.0),
        "{limits:?}"
    );
}

#[test]
fn calls_of_one_length_faster_than_their_no_load_latency_set_it_at_once() {
    // 400 ps workers of 100 ms kept a no-load latency of 264-335 ms,
    // learned in a slowdown, for eight seconds after their recovery: it
    // came down a third of the way a window, their calls of 132-198 ms
    // read as no queue, and the limit grew to 1,184 slots. A window of
    // calls of one length (its shortest near its mean) reads their
    // latency exactly, and a queue only adds to it.
    let mut auto = Auto::default();
    drive(&mut auto, 2.0, 200, |l| pool_of_one_length(16.0, l));
    assert!(auto.calls_of_one_length());
    auto.no_load = Some(0.060);
    auto.next_limit(&pool_of_one_length(16.0, 16.0));
    assert_eq!(no_load_ms(&auto), 20.0);

    // A window with a call far shorter than its mean (a cache hit) reads
    // the others no better than before: a third of the way, as for calls
    // of varying length.
    auto.no_load = Some(0.060);
    let with_a_cache_hit = Window {
        min_latency: Duration::from_millis(1),
        ..one_length_at(24.0, 16.0, 16.0)
    };
    auto.next_limit(&with_a_cache_hit);
    let no_load = no_load_ms(&auto);
    assert!((49.0..49.5).contains(&no_load), "{no_load}");
}

#[test]
fn calls_of_one_length_held_at_the_pool_still_find_more_workers() {
    // Held at the product, the limit rises less and less often; the pool
    // doubling must still be found.
    let mut auto = Auto::default();
    drive(&mut auto, 2.0, 200, |l| pool_of_one_length(16.0, l));
    let limits = drive(&mut auto, 16.0, 100, |l| pool_of_one_length(32.0, l));
    let found = limits.iter().position(|&l| l.round() >= 32.0);
    assert!(
        found.is_some_and(|i| i <= 50),
        "32 workers found after {found:?} windows: {limits:?}"
    );
    assert!(
        limits[60..].iter().all(|&l| (30.0..=40.0).contains(&l)),
        "{limits:?}"
    );
}

#[test]
fn one_window_past_the_pool_does_not_unmake_calls_of_one_length() {
    // The real service's cold start (16 connections, 21 ms queries): four
    // windows of calls of one length, then one at 20 slots that read a
    // batch of completions as 1,311 calls a second, whose calls queued in
    // the pool (mean 27.8 ms, shortest 20.8). Taken as calls of varying
    // length, the service was read by Little's law at 17.9 ms, and
    // its limit ran at 15-21 with 1.2x headroom.
    let mut auto = Auto::default();
    let cold = [
        (5.0, 12, 45.4, 22.5, 20.8),
        (10.0, 12, 42.6, 21.3, 21.0),
        (10.0, 20, 42.1, 21.3, 20.5),
        (20.0, 26, 42.8, 21.0, 20.8),
        (20.0, 28, 21.4, 27.8, 20.8),
    ];
    replay(&mut auto, &cold);
    assert!(auto.calls_of_one_length());
    let learned = no_load_ms(&auto);
    assert!(
        (20.5..=21.5).contains(&learned),
        "learned {learned} ms for calls of 21 ms"
    );
}

#[test]
fn calls_of_one_length_all_slower_than_the_no_load_latency_teach_it() {
    // 8 workers of 2 ms slowed to 8 ms under a load below capacity: the
    // throughput's fall, a load's rate over the slowed pool's, scaled the
    // no-load latency 3.7 times, and the slowdown started the rates over
    // at 6.5 slots. There each call read as half a call queued (6.5 x
    // (1 - 7.4 / 8)), not enough to shrink, too much to rise: a quarter
    // of the pool stood idle for the whole slowdown.
    let mut auto = Auto::default();
    drive(&mut auto, 2.0, 100, |l| one_length_at(2.0, 8.0, l));
    let slowed_rate = 6.5 / 0.008;
    auto.no_load = Some(0.0074);
    auto.rates = Rates::only(slowed_rate);
    auto.any_rates = Filter::only(slowed_rate);
    auto.binding_rate.reset(Some(slowed_rate));
    let first = auto.next_limit(&one_length_at(8.0, 8.0, 6.5));
    assert_eq!(
        auto.no_load_latency(),
        Some(Duration::from_millis(8)),
        "taught by the first such window"
    );
    let limits = drive(&mut auto, first, 40, |l| one_length_at(8.0, 8.0, l));
    assert!(
        limits[20..].iter().all(|&l| l.round() >= 8.0),
        "the pool busy again: {limits:?}"
    );
}

#[test]
fn a_rise_of_calls_of_one_length_that_finds_a_slot_grows_by_twice_its_step() {
    // The real service (16 connections of 21 ms): held at 15.4 slots, a
    // rise to 16.4 found the sixteenth connection, and the restarted
    // startup then doubled the limit to 32.7, where 16 calls waited a
    // whole query inside the pool for a window. Calls of one length
    // rise by twice the step that found more instead: 18.4, where their
    // queue ends the rise.
    let mut auto = Auto::default();
    drive(&mut auto, 2.0, 200, |l| pool_of_one_length(16.0, l));
    let mut auto = Auto {
        startup: true,
        restarted: true,
        rise_from: Some(15.4),
        startup_last: Some((15.4, 15.4 / 0.020)),
        ..auto
    };
    auto.startup_pool.add(&pool_of_one_length(16.0, 15.4));
    let next = auto.next_limit(&pool_of_one_length(16.0, 16.4));
    assert!((next - 18.4).abs() < 1e-9, "{next}");
    let settled = auto.next_limit(&pool_of_one_length(16.0, next));
    assert!((16.0..=16.5).contains(&settled), "{settled}");
}

#[test]
fn a_batch_of_completions_does_not_raise_the_product_of_calls_of_one_length() {
    // 16 workers of 20 ms held at 16 slots. One window closes just after
    // a batch of completions and reads twice the 800 calls a second the
    // slots can complete; then the limit is 20, and calls queue inside
    // the pool. Read as it was, the batch looked like a recovery (twice
    // the usual rate): a probe at half the limit, a no-load latency
    // relearned at the queue's 25 ms, and the limit held at 20-25.
    // Bounded by what 16 slots complete at 20 ms, the product stays 16
    // and the queue goes.
    let mut auto = Auto::default();
    drive(&mut auto, 2.0, 200, |l| pool_of_one_length(16.0, l));
    let calm = pool_of_one_length(16.0, 16.0);
    let batch = Window {
        finished: calm.finished * 2,
        completed: calm.completed * 2,
        ..calm
    };
    auto.next_limit(&batch);
    let mut auto = Auto {
        startup: false,
        restarted: false,
        ..auto
    };
    let limits = drive(&mut auto, 20.0, 5, |l| pool_of_one_length(16.0, l));
    assert!(
        limits.iter().any(|&l| l.round() <= 16.0),
        "the queue at 20 slots goes: {limits:?}"
    );
}

#[test]
fn calls_of_one_length_that_queue_behind_a_burst_still_shrink_the_limit() {
    // Calls of one length read a queue exactly: past the pool, whatever
    // the load. Held on such windows, 12 ps workers of 10 ms at 0.8 load
    // kept 16 slots in the lab.
    let mut auto = Auto::default();
    drive(&mut auto, 2.0, 200, |l| pool_of_one_length(16.0, l));
    let no_load = auto.no_load_latency().expect("a no-load latency");
    assert!(auto.calls_of_one_length());
    let queued = standing_queue_of_one_length(20.0, 16.0, 24.0);
    let burst = Window {
        waiting: true,
        waiters: 3,
        arrived: queued.finished / 2,
        ..queued
    };
    assert!(!load_outran_limit(&burst));
    assert!(
        auto.next_limit(&burst) < 24.0,
        "no-load latency {no_load:?}"
    );
}

#[test]
fn a_first_binding_window_whose_calls_of_one_length_took_longer_does_not_grow() {
    // 2 ps workers of 200 ms at 0.8 load (`ps-2x200ms-const-5x`, seed
    // 0): two cold-start windows in which no call waited, then the one
    // that met the 4x slowdown, the first to bind: 18 calls finished, 10
    // measured, at 260 ms on average. Grown to 4 slots, the slowed calls
    // shared the 2 workers for 1.6 s each, past the clients' 1 s.
    let unbound = |elapsed_ms| Window {
        max_in_flight: 2,
        waiting: false,
        waiters: 0,
        ..recorded((2.0, 12, elapsed_ms, 200.0, 200.0))
    };
    let mut auto = Auto::default();
    assert_eq!(auto.next_limit(&unbound(2145.0)), 2.0);
    assert_eq!(auto.next_limit(&unbound(1728.0)), 2.0);
    let slowed = Window {
        finished: 18,
        ..recorded((2.0, 10, 3749.0, 260.0, 200.0))
    };
    let next = auto.next_limit(&slowed);
    assert!(
        next <= 2.0,
        "grew to {next} on calls slower than the no-load latency"
    );
    // Calls that took the no-load latency in that window still grow it.
    let mut auto = Auto::default();
    auto.next_limit(&unbound(2145.0));
    auto.next_limit(&unbound(1728.0));
    let bound = recorded((2.0, 12, 1200.0, 200.0, 200.0));
    assert_eq!(auto.next_limit(&bound), 4.0);
}

#[test]
fn a_queue_of_calls_of_one_length_reads_the_pool_until_a_rise_finds_more() {
    // Holdout `ps-12x10ms-const` at 0.8 load, seed 13, slowed to 40 ms:
    // the window after a rise closed just after a batch of completions
    // and read 351 calls a second of the pool's 300, the highest recent
    // rate, so the product said 14 slots. At 14 slots, calls of 47 ms:
    // 12 of the 14 in flight ran without the queue (Little).
    let mut auto = of_one_length(steady(0.040, 300.0, 351.3), 0.040, 12);
    let limit = auto.next_limit(&recorded_of_one_length(14.1, 47.0, 57, 188.0));
    assert!(
        (11.5..=12.5).contains(&limit),
        "down to the 12 workers, not to the batch's product of 14: {limit}"
    );
    // At the pool, calls of 40 ms show no queue: the next rise is the
    // slot a rise from the product takes, not the whole gain a limit
    // below the product (by the batch's rate) would take.
    let next = auto.next_limit(&recorded_of_one_length(12.0, 40.0, 48, 160.0));
    assert!(next > 12.0, "a rise from the product comes at once: {next}");
    assert!(next <= 13.0, "by a slot, not by the gain: {next}");
    // A rise that finds more (the pool grew: the throughput follows the
    // slots, and no call queues) leaves that reading behind.
    let calls = (next.round() * 4.0) as u64;
    auto.next_limit(&recorded_of_one_length(next, 40.0, calls, 160.0));
    assert_eq!(auto.queue_read_pool, None, "the pool has grown past it");
}

/// A window of a real service's cold start: `calls` measured (and
/// finished) over `elapsed_ms` at `limit`, of mean `mean_ms` and shortest
/// `shortest_ms`, of which `cohort` were admitted in it, at a mean of
/// `cohort_ms`.
fn cold_start_window(
    (limit, calls, elapsed_ms, mean_ms, shortest_ms): (f64, u64, f64, f64, f64),
    (cohort, cohort_ms): (u64, f64),
) -> Window {
    Window {
        cohort_completed: cohort,
        cohort_avg_latency: Duration::from_secs_f64(cohort_ms / 1000.0),
        ..recorded((limit, calls, elapsed_ms, mean_ms, shortest_ms))
    }
}

#[test]
fn a_cold_start_of_calls_of_one_length_reads_its_rise_past_the_pool_in_the_calls_it_admitted() {
    // A real 16-connection database of 21 ms queries, at 3x its capacity
    // (`examples/http_load`, traced). The window at 20 slots read a mean
    // of 22.58 ms, within the noise of calls of one length, and a rate
    // that followed the rise; the 21 calls admitted in it read 23.09 ms,
    // a queue: the rise went past the pool, and without the cohort the
    // limit doubled to 40.
    let mut auto = Auto::default();
    let limits: Vec<f64> = [
        ((5.0, 12, 60.1, 21.31, 20.78), (8, 21.29)),
        ((10.0, 15, 42.6, 21.16, 20.85), (11, 21.20)),
        ((20.0, 30, 41.5, 22.58, 20.25), (21, 23.09)),
    ]
    .into_iter()
    .map(|(w, cohort)| auto.next_limit(&cold_start_window(w, cohort)))
    .collect();
    assert_eq!(limits[..2], [10.0, 20.0], "{limits:?}");
    assert!(limits[2] <= 20.0, "past the pool: {limits:?}");
    assert!(!auto.in_startup(), "the queue ends the startup: {limits:?}");
}

#[test]
fn a_cold_start_window_of_calls_of_one_length_waits_for_its_rise_and_grows_by_its_dozen() {
    // After a rise, a window of calls of one length waits for its limit
    // and the one it rose from, so that the calls the rise queued
    // complete in it; below the pool's rise, for its dozen as before.
    let mut auto = Auto::default();
    assert_eq!(auto.rise_samples(10.0), None);
    assert_eq!(
        auto.next_limit(&recorded((5.0, 12, 63.5, 21.22, 20.83))),
        10.0
    );
    assert_eq!(auto.rise_samples(10.0), Some(15));
    assert_eq!(auto.rise_samples(100.0), Some(64), "at most");
    // And for 2.25 round trips, up to 64 calls: past them the window is
    // any other's.
    assert_eq!(auto.rise_round_trips(10.0), Some(2.25));
    assert_eq!(auto.rise_round_trips(59.0), Some(2.25));
    assert_eq!(auto.rise_round_trips(60.0), None);
    assert_eq!(auto.rise_round_trips(5.0), None, "no rise");
    // The same real service, traced before the cohort was measured: the
    // window at 10 slots, whose 15 calls took two round trips (the second
    // for the batch after the first ten), followed its rise in full and
    // grew by two round trips' gain, to 40 slots for 16 connections. Its
    // dozen calls needed one round trip at 10 slots: it grows by one.
    assert_eq!(
        auto.next_limit(&recorded((10.0, 15, 43.1, 21.29, 20.84))),
        20.0
    );
    // As does the window that lasted its 2.25 round trips.
    let mut waited = Auto::default();
    waited.next_limit(&recorded((5.0, 12, 63.5, 21.22, 20.83)));
    assert_eq!(
        waited.next_limit(&recorded((10.0, 22, 47.9, 21.29, 20.84))),
        20.0
    );
    // Calls of varying length still grow by each round trip they took.
    let mut varied = Auto::default();
    varied.next_limit(&Window {
        min_latency: Duration::from_millis(2),
        ..recorded((5.0, 12, 63.5, 21.0, 2.0))
    });
    let grown = varied.next_limit(&Window {
        min_latency: Duration::from_millis(2),
        ..recorded((10.0, 15, 43.1, 21.0, 2.0))
    });
    assert_eq!(grown, 40.0, "two round trips: fourfold");
}

/// A window of a real 16-connection database's queries of about 21 ms
/// (`examples/http_load`, traced): `calls` over `elapsed_ms` at `limit`,
/// `in_flight` at most, of mean `mean_ms` and spread `cv`, calls waiting
/// for slots.
fn database_window(
    limit: f64,
    (calls, elapsed_ms): (u64, f64),
    (mean_ms, cv): (f64, f64),
    in_flight: u64,
) -> Window {
    Window {
        latency_cv: cv,
        max_in_flight: in_flight,
        ..recorded((limit, calls, elapsed_ms, mean_ms, 20.2))
    }
}

#[test]
fn a_queue_of_calls_of_one_length_read_without_a_rise_and_gone_the_next_window_gives_the_limit_back(
) {
    // The database at 16.27 slots for 5 s, its rises from the product
    // come every few dozen windows. One window of 142 ms read its 16
    // calls in flight at 33 ms (a stall of the machine: no rise had put
    // a call past the 16 connections), and the limit went to the
    // product; the next window's calls took 21 ms again.
    let mut auto = of_one_length(steady(0.02099, 757.0, 766.0), 0.02099, 0);
    auto.idle_rises = 3;
    let calm = |limit| database_window(limit, (80, 105.8), (21.2, 0.02), 16);
    let stall = database_window(16.27, (73, 141.9), (33.1, 0.62), 16);
    for _ in 0..2 {
        assert_eq!(auto.next_limit(&calm(16.27)), 16.27);
    }
    let cut = auto.next_limit(&stall);
    assert!(cut < 12.0, "cut to the product: {cut}");
    let after = |limit| database_window(limit, (50, 106.0), (21.01, 0.011), 16);
    assert_eq!(auto.next_limit(&after(cut)), 16.27, "back at once");
    // Once: a pool that lost 6 of its connections reads the queue again
    // at 16.27, and the cut stays.
    let lost = database_window(16.27, (50, 105.0), (34.2, 0.3), 16);
    let cut = auto.next_limit(&lost);
    assert!(cut < 12.0, "cut to the product: {cut}");
    for _ in 0..4 {
        let limit = auto.next_limit(&after(cut));
        assert!(limit < cut + 1.0, "{limit} from {cut}");
    }
    // A queue read at the calm limit while the throughput held is past
    // the pool: 40 processor-sharing workers of 5 ms at 0.8 load ran a
    // window at 42 slots without a queue, and a burst took the next one
    // past the pool. The cut stays.
    let mut auto = of_one_length(steady(0.005, 6_400.0, 6_500.0), 0.005, 0);
    auto.idle_rises = 3;
    let at = |limit: f64, mean_ms: f64, calls: u64| Window {
        latency_cv: 0.05,
        max_in_flight: limit.round() as u64,
        ..recorded((limit, calls, 100.0, mean_ms, 5.0))
    };
    assert_eq!(auto.next_limit(&at(42.0, 5.0, 640)), 42.0);
    let cut = auto.next_limit(&at(42.0, 5.4, 629));
    assert!(cut < 35.0, "{cut}");
    let limit = auto.next_limit(&at(cut, 5.0, 640));
    assert!(limit < cut + 1.0, "{limit} from {cut}");
    // A queue read after a rise is the limit's, even as the throughput
    // fell: the cut stays too.
    let mut auto = of_one_length(steady(0.02099, 757.0, 766.0), 0.02099, 0);
    auto.idle_rises = 3;
    assert_eq!(auto.next_limit(&calm(16.27)), 16.27);
    let risen = database_window(17.9, (73, 141.9), (33.1, 0.62), 18);
    let cut = auto.next_limit(&risen);
    assert!(cut < 12.0, "cut to the product: {cut}");
    let next = auto.next_limit(&after(cut));
    assert!(next < cut + 1.0, "{next} from {cut}");
}

/// A window traced by the lab (`grid --trace --windows`): `calls`
/// measured of `finished` over `elapsed_ms` at `limit`, their mean,
/// shortest and spread, whether calls waited for slots at its close and
/// how many came to wait in it, its most calls in flight, and the calls
/// admitted in it that completed in it (`cohort`) with their mean.
fn traced(
    (limit, calls, finished, elapsed_ms): (f64, u64, u64, f64),
    (mean_ms, shortest_ms, cv): (f64, f64, f64),
    (waiting, arrived, in_flight): (bool, u64, u64),
    (cohort, cohort_ms): (u64, f64),
) -> Window {
    Window {
        completed: calls,
        finished,
        elapsed: Duration::from_secs_f64(elapsed_ms / 1000.0),
        avg_latency: Duration::from_secs_f64(mean_ms / 1000.0),
        min_latency: Duration::from_secs_f64(shortest_ms / 1000.0),
        latency_cv: cv,
        waiting,
        arrived,
        max_in_flight: in_flight,
        cohort_completed: cohort,
        cohort_avg_latency: Duration::from_secs_f64(cohort_ms / 1000.0),
        ..window(mean_ms, limit, calls, waiting)
    }
}

/// The cold start and the steady state of holdout `ps-48x50ms-const`
/// at 0.8x, seed 7, traced: 48 processor-sharing workers of 50 ms, held
/// at 52.5 slots, slowed to 200 ms at 6 s (for clients of 250 ms), and
/// the limit down to the 32 calls seen run without a queue.
#[rustfmt::skip]
const HELD_AT_52_THEN_SLOWED: [TracedRow; 11] = [
    ((2.0, 12, 12, 303.0), (50.0, 50.0, 0.0), (true, 236, 2), (12, 50.0)),
    ((4.0, 12, 12, 150.0), (50.0, 50.0, 0.0), (true, 114, 4), (11, 50.0)),
    ((16.0, 33, 33, 149.0), (50.0, 50.0, 0.0), (true, 121, 16), (32, 50.0)),
    ((32.0, 80, 80, 150.0), (50.0, 50.0, 0.0), (true, 110, 32), (65, 50.0)),
    ((64.0, 64, 64, 61.0), (55.9, 50.0, 0.1), (false, 18, 64), (33, 61.0)),
    ((52.5, 64, 632, 763.0), (53.3, 50.0, 0.1), (false, 30, 52), (52, 51.5)),
    ((52.5, 64, 1058, 1372.0), (51.6, 50.0, 0.0), (false, 62, 52), (59, 51.6)),
    ((52.5, 64, 669, 893.0), (51.6, 50.0, 0.0), (false, 36, 52), (45, 51.7)),
    ((52.5, 64, 582, 702.0), (52.0, 50.0, 0.0), (false, 72, 52), (64, 52.0)),
    ((52.5, 64, 1178, 1905.0), (94.9, 50.0, 0.8), (true, 324, 52), (48, 109.6)),
    ((32.0, 64, 64, 235.0), (209.3, 200.0, 0.0), (true, 182, 52), (13, 200.1)),
];

/// A row of [`traced`]'s arguments.
type TracedRow = (
    (f64, u64, u64, f64),
    (f64, f64, f64),
    (bool, u64, u64),
    (u64, f64),
);

/// `workers` processor-sharing workers of 200 ms at `limit`, overloaded,
/// over a window of four round trips (a restarted startup's): every
/// call past the workers slows each call alike.
fn shared_200ms(workers: f64, limit: f64) -> Window {
    let in_flight = limit.round();
    let mean_ms = 200.0 * (in_flight / workers).max(1.0);
    let calls = (in_flight.min(workers) / 0.2 * 0.8) as u64;
    traced(
        (limit, calls, calls, 800.0),
        (mean_ms, mean_ms, 0.0),
        (true, 3 * calls, in_flight as u64),
        (calls * 3 / 4, mean_ms),
    )
}

#[test]
fn a_restarted_rise_of_calls_of_one_length_stops_at_the_limit_held_before_the_cut() {
    // Traced, the restarted startup rose from 32 slots by steps of 2, 4
    // and 8 to 46, and its next step went to 62, where every call, shared
    // by 62, took 258 ms: the slowed second served 24% of the pool. Here
    // it rises from 32 to 40, and its next step would be 56.
    let replay = |auto: &mut Auto| {
        let mut limit = 0.0;
        for (a, b, c, d) in HELD_AT_52_THEN_SLOWED {
            limit = auto.next_limit(&traced(a, b, c, d));
        }
        assert_eq!(limit, 32.0, "down to the pool seen");
        limit
    };
    let mut auto = Auto::default();
    let from = replay(&mut auto);
    let limits = drive(&mut auto, from, 8, |l| shared_200ms(48.0, l));
    assert!(
        limits.iter().all(|&l| l <= 52.5),
        "past the 52.5 slots held before: {limits:?}"
    );
    assert!(limits.contains(&52.5), "{limits:?}");
    assert!(
        limits[limits.len() - 3..]
            .iter()
            .all(|l| (48.0..51.5).contains(l)),
        "settles at the slowed pool: {limits:?}"
    );
    // Stopped there for a window only: a larger pool is found as before.
    let mut auto = Auto::default();
    let from = replay(&mut auto);
    let limits = drive(&mut auto, from, 4, |l| shared_200ms(96.0, l));
    assert_eq!(limits[1], 52.5, "stopped at the limit held: {limits:?}");
    assert!(limits[2] > 52.5 && limits[3] >= 90.0, "{limits:?}");
}

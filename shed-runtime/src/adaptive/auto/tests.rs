//! `Auto`'s rules, one window at a time.

use tokio::time::Instant;

use super::*;

fn window(latency_ms: f64, limit: f64, admitted: u64, binds: bool) -> Window {
    Window {
        completed: admitted,
        avg_latency: Duration::from_secs_f64(latency_ms / 1000.0),
        min_latency: Duration::ZERO,
        latency_cv: 1.0,
        max_in_flight: if binds { limit as u64 } else { 0 },
        late: 0,
        limit,
        probe: false,
        finished: admitted,
        elapsed: Duration::from_millis(100),
        waiting: binds,
        waiters: 0,
        // A binding window's load outran its limit: as many calls came to
        // wait as finished (see `load_outran_limit`).
        arrived: if binds { admitted } else { 0 },
        at: Instant::now(),
    }
}

/// A window recorded from a trace: `calls` finished and measured over
/// `elapsed_ms`, with their mean and shortest latency, at `limit` while
/// calls waited for slots.
fn recorded(
    (limit, calls, elapsed_ms, latency_ms, shortest_ms): (f64, u64, f64, f64, f64),
) -> Window {
    Window {
        elapsed: Duration::from_secs_f64(elapsed_ms / 1000.0),
        min_latency: Duration::from_secs_f64(shortest_ms / 1000.0),
        ..window(latency_ms, limit, calls, true)
    }
}

/// Replays recorded windows (see [`recorded`]) on `auto`; the limits it
/// chose.
fn replay(auto: &mut Auto, windows: &[(f64, u64, f64, f64, f64)]) -> Vec<f64> {
    windows
        .iter()
        .map(|&row| auto.next_limit(&recorded(row)))
        .collect()
}

/// The no-load latency `auto` learned, in milliseconds.
fn no_load_ms(auto: &Auto) -> f64 {
    auto.no_load_latency()
        .expect("a no-load latency")
        .as_secs_f64()
        * 1000.0
}

/// A pool of `workers` serving calls of 10 ms, at `limit`, overloaded.
fn pool(workers: f64, limit: f64) -> Window {
    let throughput = limit.min(workers) / 0.010; // per second
    let latency = 10.0 * (limit / workers).max(1.0);
    window(latency, limit, (throughput * 0.1) as u64, true)
}

/// Runs `windows` windows of `service` (the pool at a limit), with
/// the probes the algorithm asks for; returns the limits.
fn drive(
    auto: &mut Auto,
    mut limit: f64,
    windows: usize,
    service: impl Fn(f64) -> Window,
) -> Vec<f64> {
    let mut limits = Vec::new();
    for _ in 0..windows {
        let probing = auto.probe_limit(limit);
        let at = probing.unwrap_or(limit);
        let next = auto.next_limit(&Window {
            probe: probing.is_some(),
            ..service(at)
        });
        limit = next;
        limits.push(limit);
    }
    limits
}

#[test]
fn startup_doubles_then_settles_near_the_pool() {
    let mut auto = Auto::default();
    let limits = drive(&mut auto, 4.0, 60, |l| pool(100.0, l));
    let out_of_startup = limits.iter().position(|&l| l >= 100.0).unwrap();
    assert!(out_of_startup <= 6, "doubling from 4: {limits:?}");
    assert!(!auto.in_startup());
    for &l in &limits[20..] {
        assert!(
            (90.0..=200.0).contains(&l),
            "stays near the pool: {limits:?}"
        );
    }
}

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
fn a_first_window_that_waited_a_minute_for_its_calls_teaches_nothing() {
    let mut auto = Auto::default();
    // Idle for a minute after the start, then overloaded: the window
    // that closes at the load's first calls spans the minute, so its
    // throughput is a few calls a minute while its calls took 10 ms.
    let idle_then_busy = Window {
        elapsed: Duration::from_secs(60),
        ..window(10.0, 2.0, 3, true)
    };
    assert_eq!(auto.next_limit(&idle_then_busy), 2.0, "held");
    assert_eq!(auto.no_load_latency(), None, "not Little's 40 s");
    // The windows after it are the service's: the startup goes on from
    // there and finds the pool as from a cold start.
    let limits = drive(&mut auto, 2.0, 40, |l| pool(100.0, l));
    let found = limits.iter().position(|&l| l >= 100.0).unwrap();
    assert!(found <= 7, "doubling from 2: {limits:?}");
    assert!(auto.no_load_latency().unwrap() < Duration::from_millis(20));
}

#[test]
fn a_slowdown_keeps_the_limit_of_a_pool_of_workers() {
    let mut auto = Auto::default();
    let before = *drive(&mut auto, 4.0, 40, |l| pool(20.0, l)).last().unwrap();
    // Every call four times slower: the same 20 workers.
    let slow = |limit: f64| {
        let w = pool(20.0, limit);
        Window {
            avg_latency: w.avg_latency * 4,
            finished: w.finished / 4,
            ..w
        }
    };
    let limits = drive(&mut auto, before, 40, slow);
    for &limit in &limits {
        assert!(
            limit >= 16.0 && limit <= 2.5 * before,
            "{before} -> {limits:?}"
        );
    }
}

#[test]
fn a_noisy_mean_does_not_end_the_startup_while_the_throughput_follows() {
    let mut auto = Auto::default();
    // 1,000 workers of 10 ms: at 32 slots, one window's mean reads
    // 1.5x the service time (noise), but the throughput doubled.
    assert_eq!(auto.next_limit(&pool(1000.0, 16.0)), 32.0);
    let noisy = Window {
        avg_latency: Duration::from_millis(15),
        ..pool(1000.0, 32.0)
    };
    assert_eq!(auto.next_limit(&noisy), 64.0);
    assert!(auto.in_startup());
}

/// Window `w` with every call four times slower: latency up 4x and
/// throughput down 4x at the same limit.
fn four_times_slower(w: Window) -> Window {
    Window {
        avg_latency: w.avg_latency * 4,
        finished: w.finished / 4,
        completed: w.completed / 4,
        ..w
    }
}

/// Window `w` that a load below capacity left a slot short of its limit:
/// no call waited, and the run of windows the load outran (see
/// `Auto::overloaded_windows`) ends. The limit stays where it was (see
/// `Auto::unfilled`).
fn a_slot_short(w: Window) -> Window {
    Window {
        waiting: false,
        arrived: 0,
        max_in_flight: (w.limit.round() as u64).saturating_sub(1),
        ..w
    }
}

/// A pool of 20 workers of 10 ms driven from a cold start until it
/// settles, then left a slot short for a window: a slowdown after it is
/// not one after an overload (see `Auto::holds_through_slowdown`).
fn settled_below_capacity(auto: &mut Auto) -> f64 {
    let before = *drive(auto, 2.0, 40, |l| pool(20.0, l)).last().unwrap();
    assert_eq!(auto.next_limit(&a_slot_short(pool(20.0, before))), before);
    before
}

#[test]
fn one_slow_window_is_noise_and_two_are_a_slowdown() {
    let mut auto = Auto::default();
    let before = settled_below_capacity(&mut auto);
    let slow = |limit: f64| four_times_slower(pool(20.0, limit));
    let no_load = auto.no_load_latency().unwrap();
    assert_eq!(auto.next_limit(&slow(before)), before, "held, not cut");
    assert_eq!(auto.no_load_latency(), Some(no_load), "not learned yet");
    assert_eq!(auto.next_limit(&slow(before)), before);
    let learned = auto.no_load_latency().unwrap();
    assert!(
        learned >= no_load * 3,
        "the slowdown is learned: {no_load:?} -> {learned:?}"
    );
}

/// Window `w` under a load above its limit: calls wait at its close,
/// three times as many came to wait as finished.
fn overloaded(w: Window) -> Window {
    Window {
        waiting: true,
        arrived: 3 * w.finished,
        ..w
    }
}

/// A pool of 20 workers of 10 ms, driven (`load` applied to each window)
/// until it settles, then slowed four times for the two windows that show
/// a slowdown: the limit before it, the limit the slowdown left, and the
/// no-load latency it scaled.
fn slowed_after(auto: &mut Auto, load: impl Fn(Window) -> Window) -> (f64, f64, Duration) {
    let before = *drive(auto, 4.0, 40, |l| load(pool(20.0, l)))
        .last()
        .unwrap();
    let (after, no_load) = slow_down(auto, before, load);
    (before, after, no_load)
}

/// The pool of 20 workers at `before` slowed four times (`load` applied)
/// for the two windows that show a slowdown: the limit the slowdown left,
/// and the no-load latency it scaled.
fn slow_down(auto: &mut Auto, before: f64, load: impl Fn(Window) -> Window) -> (f64, Duration) {
    let slowed = load(four_times_slower(pool(20.0, before)));
    assert_eq!(auto.next_limit(&slowed), before, "one window is noise");
    let after = auto.next_limit(&slowed);
    (after, auto.no_load_latency().unwrap())
}

/// What the limit does over slowed windows (at `limit`) whose means read,
/// in turn, as a queue and as none against the scaled no-load latency
/// `no_load`: their noise.
fn noisy_slowed_windows(
    auto: &mut Auto,
    limit: f64,
    no_load: Duration,
    load: impl Fn(Window) -> Window,
) -> Vec<f64> {
    let mut limits = Vec::new();
    let mut limit = limit;
    for i in 0..12 {
        let mean = if i % 2 == 0 { 1.7 } else { 0.95 };
        let w = Window {
            avg_latency: no_load.mul_f64(mean),
            ..load(four_times_slower(pool(20.0, limit)))
        };
        limit = auto.next_limit(&w);
        limits.push(limit);
    }
    limits
}

#[test]
fn a_slowdown_after_an_overload_holds_the_limit_through_its_noise() {
    // `ps-64x50ms` at 3x, seed 21: judged against the no-load latency the
    // throughput's fall scaled, the slowed windows of a few dozen calls
    // took the limit of 64 workers from 63 slots to 53, a probe to 40,
    // and a restarted startup from 70 to 140 (seconds at 65%, 74% and
    // 54%). The load was above the limit before the slowdown, so the
    // limit was the one the throughput had set: it holds.
    // Calls as spread as lognormal ones, whose limit the slowdown leaves
    // where it found it (see
    // `a_slowdown_after_an_overload_allows_for_the_calls_spread`), above
    // `headroom` times the product, where a queue can still shrink it.
    let mut auto = Auto::default();
    let (before, held, no_load) = slowed_after(&mut auto, spread);
    assert_eq!(held, before);
    let limits = noisy_slowed_windows(&mut auto, held, no_load, spread);
    assert!(limits.iter().all(|&l| l == held), "{held} -> {limits:?}");
    assert_eq!(auto.probe_limit(held), None, "no probe either");
    // A queue far past the tolerance still shrinks it: the pool itself
    // may have shrunk.
    let far = Window {
        avg_latency: no_load.mul_f64(3.5),
        ..spread(four_times_slower(pool(20.0, held)))
    };
    assert!(auto.next_limit(&far) < held);
}

/// Window `w` overloaded (see [`overloaded`]), of calls as spread as
/// lognormal ones (a coefficient of variation of 1.5).
fn spread(w: Window) -> Window {
    Window {
        latency_cv: 1.5,
        ..overloaded(w)
    }
}

#[test]
fn a_slowdown_after_an_overload_holds_no_more_than_headroom_times_the_product() {
    // `ps-64x50ms` at 3x, seed 28: the slowdown met the limit at 95 slots
    // for 64 workers, the top of its sawtooth, and held there, the
    // slowed calls queued inside the pool for the whole slowdown. The
    // pool of 20 here meets it at the top of its own (29 slots).
    let mut auto = Auto::default();
    let (before, held, no_load) = slowed_after(&mut auto, overloaded);
    let product = 20.0;
    assert!(before > 1.2 * product, "the top of the sawtooth: {before}");
    assert!((held - 1.2 * product).abs() < 1e-9, "{before} -> {held}");
    // And it holds there through the slowed windows' noise.
    let limits = noisy_slowed_windows(&mut auto, held, no_load, overloaded);
    assert!(limits.iter().all(|&l| l == held), "{held} -> {limits:?}");
}

#[test]
fn a_slowdown_after_an_overload_keeps_a_limit_below_headroom_times_the_product() {
    // Only down: a limit below it is where a probe or a shrink found the
    // pool.
    let mut auto = Auto::default();
    drive(&mut auto, 4.0, 40, |l| overloaded(pool(20.0, l)));
    let at = 21.0;
    let slowed = overloaded(four_times_slower(pool(20.0, at)));
    assert_eq!(auto.next_limit(&slowed), at);
    assert_eq!(auto.next_limit(&slowed), at);
    assert!(auto.no_load_latency().unwrap() > Duration::from_millis(30));
    assert!(auto.slowed_after_overload().is_some(), "a held slowdown");
}

#[test]
fn a_slowdown_after_an_overload_allows_for_the_calls_spread() {
    // The no-load latency is the lowest of noisy windows' means, which
    // reads lower the more the calls spread: `ps-64x50ms` of lognormal
    // calls, seed 1, read 40.2 ms for calls of 50, and brought down to
    // `headroom` times that product, went from 67 slots to 56 for 64
    // workers (its worst second 82.5% to 68.1%).
    let mut auto = Auto::default();
    let (before, held, _) = slowed_after(&mut auto, spread);
    assert!(auto.slowed_after_overload().is_some(), "a held slowdown");
    assert!(before > 1.2 * 20.0, "above the product's: {before}");
    assert!(before < 1.2 * 1.5 * 20.0, "{before}");
    assert_eq!(held, before);
}

#[test]
fn a_slowdown_right_after_a_restarted_startup_counts_its_pool_by_the_recent_rates() {
    // `fifo-1000x200ms` at 3x with `--twice`, seed 11: the restarted
    // startup ended a window before the second slowdown began, which
    // started the smoothed rate over, and it held only the window the
    // slowdown began in (3,145 calls a second, slowed calls among them).
    // Counted by it, the pool of 1,000 workers came down to 807 slots
    // (67% of the slowed pool in time for four seconds).
    let mut auto = steady(0.2138, 0.0, 5231.3);
    auto.binding_rate.reset(None);
    for rate in [5070.1, 4948.6, 5046.7, 5003.5] {
        auto.rates.push(rate);
    }
    auto.overloaded_windows = 3;
    // The startup's last window bound.
    auto.last_bound = true;
    let limits: Vec<f64> = [
        (1342.1, 1346, 428.0, 358.8, 77.0),
        (1342.1, 636, 429.0, 524.8, 177.0),
        (1342.1, 558, 428.0, 700.1, 237.0),
    ]
    .into_iter()
    .map(|row| auto.next_limit(&overloaded(recorded(row))))
    .collect();
    assert!(
        limits.iter().all(|&l| l >= 1_300.0),
        "for 1,000 workers: {limits:?}"
    );
}

#[test]
fn a_slowdown_after_a_load_below_capacity_is_not_held() {
    // Below capacity the limit is where the load left it, not where the
    // throughput set it (16 workers of 10 ms at 0.8 load: 13 slots), and
    // the slowed windows, past it, must still move it.
    let mut auto = Auto::default();
    let before = settled_below_capacity(&mut auto);
    let (after, no_load) = slow_down(&mut auto, before, |w| w);
    assert_eq!(after, before, "the slowdown itself keeps it");
    let limits = noisy_slowed_windows(&mut auto, before, no_load, |w| w);
    assert!(
        limits.iter().any(|&l| l != before),
        "{before} -> {limits:?}"
    );
}

#[test]
fn a_recovery_read_in_steps_keeps_the_no_load_latency_it_had_before_the_slowdown() {
    // `ps-64x50ms` at 3x, seed 21, holding 62.6 slots through its
    // slowdown: 38.5 ms before it, scaled to 115.9 ms by the throughput's
    // fall (290 calls a second of 1,250). The recovery's first window
    // read 539 calls a second, the next 1,023: each rise scaled the
    // no-load latency again, to about 63 ms and then 33 ms, below where
    // it was; the calls of 50 ms then read as a queue, and the limit sat
    // at 32-47 slots for the rest of the run.
    let mut auto = after_slowdown(0.1159, 290.0, (0.0385, 1250.0, 62.6));
    auto.next_limit(&recorded((62.6, 125, 232.0, 132.2, 0.0)));
    assert!((no_load_ms(&auto) - 115.9 * 290.0 / 538.8).abs() < 0.5);
    auto.next_limit(&recorded((62.6, 132, 129.0, 82.9, 0.0)));
    assert!(
        (no_load_ms(&auto) - 38.5).abs() < 1e-6,
        "{}",
        no_load_ms(&auto)
    );
}

#[test]
fn a_slowdown_is_scaled_by_the_throughputs_fall_not_by_a_mean_that_lags_it() {
    // Every call four times slower: the throughput falls at once, but the
    // first calls to complete were started before, and the second slowed
    // window's mean was only 2.7 times the no-load latency (1,000 workers
    // of 200 ms at 3x). Taken as the slowdown, it read the slowed calls
    // as a queue, and the limit fell to 740 slots for the 1,000 workers.
    let mut auto = Auto::default();
    let before = settled_below_capacity(&mut auto);
    let no_load = auto.no_load_latency().unwrap();
    // A slowed window: its mean `lag` times the no-load latency while
    // calls started before the slowdown still complete (`None`: four
    // times the usual mean, once none do).
    let slowed = |lag: Option<f64>| {
        let w = four_times_slower(pool(20.0, before));
        Window {
            avg_latency: lag.map_or(w.avg_latency, |lag| no_load.mul_f64(lag)),
            ..w
        }
    };
    assert_eq!(auto.next_limit(&slowed(Some(2.5))), before);
    assert_eq!(auto.next_limit(&slowed(Some(2.7))), before);
    let learned = auto.no_load_latency().unwrap();
    assert!(
        learned >= no_load.mul_f64(3.5),
        "the throughput's fall: {no_load:?} -> {learned:?}"
    );
    let limits: Vec<f64> = (0..10).map(|_| auto.next_limit(&slowed(None))).collect();
    assert!(
        limits.iter().all(|&l| l >= 20.0),
        "the slowed pool keeps its slots: {before} -> {limits:?}"
    );
}

#[test]
fn a_slowdown_is_scaled_against_the_rate_before_the_window_it_began_in() {
    // The window the slowdown began in completes fewer calls (its late
    // calls are slowed), not fewer by enough to read as slowed, and the
    // usual rate, a running mean, took it in: 16 ps workers of 10 ms
    // slowed four times were scaled 3.1x (seed 2 of `ps-16x10ms` at 3x),
    // the slowed calls read as a queue, and the limit fell to 10 slots.
    let mut auto = Auto::default();
    let before = settled_below_capacity(&mut auto);
    let no_load = auto.no_load_latency().unwrap();
    let usual = pool(20.0, before);
    let straddling = Window {
        finished: usual.finished * 62 / 100,
        completed: usual.completed * 62 / 100,
        ..usual
    };
    let at = auto.next_limit(&straddling);
    assert!(at >= before, "not slowed yet: {before} -> {at}");
    let slowed = four_times_slower(pool(20.0, at));
    for _ in 0..2 {
        assert_eq!(
            auto.next_limit(&slowed),
            at,
            "the slowed pool keeps its slots"
        );
    }
    let learned = auto.no_load_latency().unwrap();
    assert!(
        learned >= no_load.mul_f64(3.9),
        "four times slower: {no_load:?} -> {learned:?}"
    );
}

#[test]
fn growth_from_a_limit_of_one_moves_the_slots_not_only_the_fraction() {
    let mut auto = Auto {
        startup: false,
        ..Auto::default()
    };
    // 1.25 slots are one slot: the next window would run as this one
    // did, read as a throughput that did not follow, and end at 1.
    let next = auto.next_limit(&window(200.0, 1.0, 5, true));
    assert!(next.round() >= 2.0, "{next}");
}

#[test]
fn without_a_window_of_32_calls_the_product_still_comes_from_the_rates() {
    // 4 workers of 20 ms: windows of 12 calls, under the 32 that the
    // throughput filter takes. The startup ends at 8 or 16 slots; the
    // limit must come down to the 4 workers, not stay where it ended
    // (the product fell back to the limit itself).
    let small = |limit: f64| {
        let throughput = limit.min(4.0) / 0.020;
        Window {
            elapsed: Duration::from_secs_f64(12.0 / throughput),
            ..window(20.0 * (limit / 4.0).max(1.0), limit, 12, true)
        }
    };
    let mut auto = Auto::default();
    let limits = drive(&mut auto, 2.0, 40, small);
    assert!(!auto.in_startup());
    for &l in &limits[10..] {
        assert!(l <= 7.0, "near the 4 workers: {limits:?}");
    }
}

/// Past its startup, with a no-load latency of `no_load` seconds, a usual
/// throughput of `usual` calls a second and a best recent one of `best`.
fn steady(no_load: f64, usual: f64, best: f64) -> Auto {
    let mut auto = Auto {
        startup: false,
        no_load: Some(no_load),
        ..Auto::default()
    };
    auto.binding_rate.reset(Some(usual));
    auto.rates.push(best);
    auto
}

/// [`steady`] after a slowdown scaled its no-load latency to `no_load`
/// (seconds), its usual throughput now `usual`; `before` is what the
/// service did before the slowdown: (no-load latency, calls a second,
/// limit).
fn after_slowdown(
    no_load: f64,
    usual: f64,
    (before_no_load, rate, limit): (f64, f64, f64),
) -> Auto {
    let mut auto = steady(no_load, usual, usual);
    auto.unslowed = Some(Unslowed {
        no_load: before_no_load,
        rate,
        limit,
        overloaded: false,
    });
    auto
}

#[test]
fn a_queue_that_outlasts_the_shrink_is_probed_before_its_latency_is_learned() {
    // 16 workers of 10 ms; one lucky window read 2,300 calls a second
    // (the pool does 1,600), so the product says 23 and the limit of
    // 28 queues: latency 17.5 ms against 10. That latency is not the
    // service's: a probe at fewer slots admits as many calls a second.
    let mut auto = steady(0.010, 1600.0, 2300.0);
    let limits = drive(&mut auto, 28.0, 40, |l| pool(16.0, l));
    let no_load = auto.no_load_latency().unwrap();
    assert!(
        no_load <= Duration::from_millis(12),
        "not the queue's 17.5 ms: {no_load:?}, {limits:?}"
    );
    for &l in &limits[10..] {
        assert!(l <= 28.0, "no ratchet above the start: {limits:?}");
    }
}

#[test]
fn a_stale_probe_that_shows_neither_starts_the_count_over() {
    // A queue that the shrink to the product does not reach (here 16 ms
    // against 10, at 19.2 slots, the product with its headroom): after
    // five such windows a probe at three quarters of the limit. It served
    // neither as many calls a second nor fewer beyond its noise, so it
    // told nothing; left at five windows, the count asked for the next
    // probe at once, and a pool of 48 workers ran every other window at
    // three quarters of its limit.
    let mut auto = steady(0.010, 1600.0, 1600.0);
    let queue = || window(16.0, 19.2, 160, true);
    let mut probed_at = Vec::new();
    for i in 0..12 {
        if let Some(limit) = auto.probe_limit(19.2) {
            probed_at.push(i);
            let neither = Window {
                probe: true,
                ..window(12.0, limit, 150, true)
            };
            assert_eq!(auto.next_limit(&neither), 19.2, "back to the limit");
        } else {
            assert_eq!(auto.next_limit(&queue()), 19.2);
        }
    }
    assert_eq!(probed_at, [5, 11], "a probe after each five windows");
}

#[test]
fn a_throughput_back_from_a_slowdown_probes_the_limit_before_it() {
    // 16 workers of 10 ms, whose slowdown scaled the no-load latency to
    // 32 ms; after the recovery the limit stood at 80 slots, at which the
    // pool's queue of 64 calls read as none. Back at its 1,600 calls a
    // second, the next probe tries the 20 slots it had before.
    let slowed = || after_slowdown(0.032, 1600.0, (0.010, 1600.0, 20.0));
    let mut pool = slowed();
    pool.next_limit(&window(45.0, 80.0, 160, true));
    assert_eq!(pool.probe_limit(80.0), Some(20.0));
    // A pool of workers serves as many calls a second there: the limit
    // stays, and the probe's latency lowers the no-load one.
    // A probe window at the 20 slots, of `calls` at `latency_ms`.
    let probe_at_20 = |latency_ms, calls| Window {
        probe: true,
        ..window(latency_ms, 20.0, calls, true)
    };
    assert_eq!(pool.next_limit(&probe_at_20(20.0, 160)), 20.0);
    assert!(no_load_ms(&pool) <= 20.0, "{}", no_load_ms(&pool));

    // A service without a pool, whose calls still take four times as long,
    // serves a quarter at the old limit: the limit goes back.
    let mut unbounded = slowed();
    unbounded.next_limit(&window(40.0, 80.0, 160, true));
    assert_eq!(unbounded.probe_limit(80.0), Some(20.0));
    assert_eq!(unbounded.next_limit(&probe_at_20(40.0, 40)), 80.0);
    // Once: the next probe is the periodic one.
    assert_eq!(unbounded.probe_limit(80.0), None);
}

#[test]
fn a_probe_the_load_left_unfilled_goes_back_only_as_far_as_an_unfilled_limit() {
    // `fifo-1000x200ms` at 0.8 load with `--twice`, seed 7, with the jump
    // to the demand: the startup the recovery restarted ended at 2,218
    // slots, which the load (4,000 calls a second) left unfilled, with a
    // no-load latency of 521 ms still learned in the slowdown. The probe
    // at the 836 slots before the slowdown did not bind either: no call
    // waited, fewer than 836 were in flight, its calls took 214 ms, 3,907
    // a second. Back at 2,218 slots, the second
    // slowdown queued its slowed calls past every client's 2 s (its
    // seconds served 192, 764, 804 and 448 calls in time, the first's
    // 470, 1,210, 1,182 and 1,943).
    let mut auto = steady(0.521, 4373.5, 5006.3);
    auto.before_probe = Some(2217.7);
    let probe = Window {
        probe: true,
        waiting: false,
        max_in_flight: 800,
        ..recorded((836.0, 4134, 1058.0, 214.3, 1.0))
    };
    // The limit it goes back to is what any unfilled limit comes down to:
    // the product, with its headroom, at the latency the probe read.
    let product = auto.headroom * 5006.3 * 0.2143;
    let limit = auto.next_limit(&probe);
    assert!((limit - product).abs() < 0.5, "{limit} against {product}");
    // A probe the load filled goes back to the limit it left (above).
    let mut filled = steady(0.521, 4373.5, 5006.3);
    filled.before_probe = Some(2217.7);
    let bound = Window {
        probe: true,
        ..recorded((836.0, 3300, 1058.0, 250.0, 1.0))
    };
    assert_eq!(filled.next_limit(&bound), 2217.7);
}

#[test]
fn a_recovery_during_a_restarted_startup_ends_it_and_probes_the_limit_before_the_slowdown() {
    // `fifo-1000x200ms` at 3x with `--twice`, seed 0: the slowdown scaled
    // the no-load latency from 157.8 ms to 601.3 ms at 980 slots. A
    // window at 951 slots whose calls took 629 ms read as no queue and
    // restarted a startup; the recovery's window at 1,188 slots then read
    // 4,597 calls a second (1,936 before), as if the throughput followed
    // the limit: it doubled to 2,377, then 4,754, and the drain served
    // 36% of the pool's capacity for a second.
    let mut auto = after_slowdown(0.6013, 1300.0, (0.1578, 5000.0, 980.0));
    let restarted = auto.next_limit(&recorded((950.7, 2329, 1203.0, 629.0, 0.0)));
    assert!((restarted - 1188.4).abs() < 0.1, "{restarted}");
    // Each slot completes twice as many calls, of a mean below the
    // no-load latency: a recovery, and the startup ends at the limit.
    let recovery = recorded((restarted, 11061, 2406.0, 295.6, 0.0));
    assert_eq!(auto.next_limit(&recovery), restarted);
    assert!(no_load_ms(&auto) <= 295.6, "{}", no_load_ms(&auto));
    assert_eq!(auto.probe_limit(restarted), Some(980.0));
    // The pool serves as many calls a second at the limit it had: it
    // stays there, and the probe's calls lower the no-load latency.
    let probe = Window {
        probe: true,
        ..recorded((980.0, 2950, 592.0, 234.8, 0.0))
    };
    assert_eq!(auto.next_limit(&probe), 980.0);
    assert!(no_load_ms(&auto) <= 234.8, "{}", no_load_ms(&auto));
}

#[test]
fn a_load_rise_during_a_restarted_startup_still_grows_it() {
    // 20 slots of calls of 10 ms, half idle (800 calls a second): a
    // window at the no-load latency restarts a startup. Then the load
    // rises: each slot completes twice as many calls, but the calls take
    // no less than before, so the throughput followed the limit.
    let mut auto = steady(0.010, 800.0, 800.0);
    let restarted = auto.next_limit(&window(10.5, 20.0, 80, true));
    assert_eq!(restarted, 25.0);
    let grown = auto.next_limit(&window(10.2, restarted, 245, true));
    assert!(grown > restarted, "{grown}");
}

#[test]
fn a_slowdown_that_begins_in_the_first_binding_window_is_scaled_against_the_recent_rates() {
    // `fifo-1000x200ms` at 0.8x with `--twice`, seed 0: the startup that
    // ended before the second slowdown left no usual rate, and the load
    // left the limit unbound (4,000-5,000 calls a second). The first
    // window that bound was the one the slowdown began in (2,861 calls a
    // second, slowed calls among them), and the slowdown, confirmed two
    // windows later at 1,376, was scaled against it alone: 2.1 times for
    // 4, the slowed calls of 800 ms read as a queue against 441 ms, and
    // the limit fell to 729 slots (61-68% of the slowed pool). Against
    // the highest recent rate, as before any binding window, it is scaled
    // 3.7 times.
    let mut auto = steady(0.2123, 0.0, 5079.5);
    auto.binding_rate.reset(None);
    for rate in [4182.0, 4035.1, 3966.0] {
        auto.rates.push(rate);
    }
    for row in [
        (1293.9, 3067, 1072.0, 244.3, 10.0),
        (1374.8, 529, 428.0, 390.3, 207.0),
        (1374.8, 585, 425.0, 571.4, 267.0),
    ] {
        auto.next_limit(&recorded(row));
    }
    assert!(
        no_load_ms(&auto) >= 3.0 * 212.3,
        "scaled to {} ms",
        no_load_ms(&auto)
    );
}

/// Window `w` over a quarter of its time: a quarter of its calls.
fn a_quarter_of(w: Window) -> Window {
    Window {
        completed: w.completed / 4,
        finished: w.finished / 4,
        elapsed: w.elapsed / 4,
        ..w
    }
}

#[test]
fn after_a_recovery_of_a_few_dozen_calls_the_half_limit_probe_is_judged_against_the_faster_rate() {
    // 16 workers whose calls took 16 ms (1,000 calls a second) are back
    // to 10 ms. At 28 slots the pool's queue hides the speed-up (17.5 ms,
    // above the stale 16), and 40 calls read the throughput's rise too
    // roughly to scale by: only fewer slots show the new latency.
    let mut auto = steady(0.016, 1000.0, 1000.0);
    let recovered = a_quarter_of(pool(16.0, 28.0));
    assert_eq!(auto.next_limit(&recovered), 28.0, "held for the probe");
    let probe = auto.probe_limit(28.0).expect("a probe at half");
    assert_eq!(probe, 14.0);
    let after = auto.next_limit(&Window {
        probe: true,
        ..a_quarter_of(pool(16.0, probe))
    });
    // 1,400 calls a second at 14 slots is fewer than the 1,600 of the
    // recovered service (not more than the slow 1,000): the 28 slots stay.
    assert_eq!(after, 28.0);
    assert_eq!(auto.no_load_latency(), Some(Duration::from_millis(10)));
}

#[test]
fn a_recovery_read_from_a_full_window_scales_the_no_load_latency_by_the_throughputs_rise() {
    // `ps-64x50ms` at 3x, seed 14: 64 workers slowed from 50 ms to 200
    // ms, their no-load latency scaled to 140.9 ms and their usual rate
    // 320 calls a second, are back to 50 ms. The window the recovery
    // began in completed 141 calls in 283 ms (498 a second) at a mean of
    // 144.5 ms, slowed calls among them: above the stale no-load
    // latency, so the speed-up did not show in it. Probed at half, the
    // limit sat at 35 slots, then 44, and the second served 51% of the
    // pool. Scaled by the throughput's rise (498 over 320), the no-load
    // latency is 90.5 ms and the 70.8 slots stay; not judged against it
    // either, which read the mixed window as a queue and shrank the
    // limit to 52.
    let mut auto = steady(0.1409, 320.0, 348.0);
    let recovery = recorded((70.8, 141, 283.0, 144.5, 0.0));
    assert_eq!(auto.next_limit(&recovery), 70.8);
    assert_eq!(auto.probe_limit(70.8), None, "no probe at half the limit");
    assert!(
        (no_load_ms(&auto) - 140.9 * 320.0 / 498.2).abs() < 0.5,
        "{}",
        no_load_ms(&auto)
    );
    // The next window, of the new speed, shows its calls' latency below
    // the scaled one: it is learned, and the limit grows.
    let faster = recorded((70.8, 340, 283.0, 62.0, 0.0));
    assert!(auto.next_limit(&faster) > 70.8);
    assert_eq!(no_load_ms(&auto), 62.0);
}

#[test]
fn a_recovery_that_shows_in_the_calls_latency_grows_at_once() {
    // 16 workers whose calls took 40 ms are back to 10 ms, and the limit
    // of 12 (below the workers) shows it in the calls' own latency: it
    // is the new no-load latency, and the limit grows to the pool without
    // first probing at half (6 slots: a window at three eighths of the
    // capacity).
    let mut auto = steady(0.040, 400.0, 400.0);
    let limits = drive(&mut auto, 12.0, 30, |l| pool(16.0, l));
    assert_eq!(auto.no_load_latency(), Some(Duration::from_millis(10)));
    assert!(limits.iter().all(|&l| l >= 12.0), "no probe: {limits:?}");
    let found = limits.iter().position(|&l| l >= 16.0);
    assert!(found.is_some_and(|i| i <= 2), "{limits:?}");
    assert!(
        limits[10..].iter().all(|&l| (16.0..=25.0).contains(&l)),
        "{limits:?}"
    );
}

#[test]
fn an_unused_limit_comes_down_to_the_calls_in_flight_and_a_binding_one_without_a_queue_grows() {
    // 100 calls of 10 ms in 100 ms with no call waiting for a slot: 10 in
    // flight at most, a thousand calls a second. The limit of 50 comes
    // down to what the load used, a quarter above (no lower than the
    // product with its headroom, which a burst needs at once).
    let mut auto = Auto {
        startup: false,
        ..Auto::default()
    };
    let unused = Window {
        max_in_flight: 10,
        ..window(10.0, 50.0, 100, false)
    };
    let product = auto.headroom * 1000.0 * 0.010;
    let expected = (UNFILLED_ROOM * 10.0).max(product);
    let limit = auto.next_limit(&unused);
    assert!(
        (limit - expected).abs() < 1e-9,
        "{limit} against {expected}"
    );
    assert!(limit < 15.0, "the limit of 50 came down to {limit}");
    // A limit the load fills, with no queue inside the service, grows.
    assert_eq!(auto.next_limit(&window(10.0, 50.0, 100, true)), 62.5);
}

/// A FIFO pool of `workers` serving calls of exactly `service_ms`, at
/// `limit`, overloaded, over a window as long as `AutoControl` makes it
/// once settled: two round trips, 100 ms at least.
fn one_length_at(service_ms: f64, workers: f64, limit: f64) -> Window {
    let throughput = limit.min(workers) / (service_ms / 1000.0);
    let latency = service_ms * (limit / workers).max(1.0);
    let elapsed = (2.0 * latency / 1000.0).max(0.1);
    Window {
        min_latency: Duration::from_secs_f64(service_ms / 1000.0),
        elapsed: Duration::from_secs_f64(elapsed),
        ..window(latency, limit, (throughput * elapsed) as u64, true)
    }
}

/// A FIFO pool of `workers` serving calls of exactly 20 ms, at `limit`,
/// overloaded: past the workers, calls wait inside the pool.
fn pool_of_one_length(workers: f64, limit: f64) -> Window {
    one_length_at(20.0, workers, limit)
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
fn a_cold_start_of_calls_of_one_length_ends_when_they_queue() {
    // The real service's cold start (16 connections, 21 ms queries):
    // at 20 slots its calls took 24.7 ms, then 26.5 ms, while a window of
    // 21 ms read a batch of completions as 934 calls a second; judged by
    // the throughput alone, the limit doubled to 40, and a hundred calls
    // waited one or two queries in the pool.
    let mut auto = Auto::default();
    let cold = [
        (5.0, 12, 59.1, 21.2, 20.3),
        (10.0, 12, 22.9, 21.0, 20.7),
        (20.0, 20, 40.7, 24.7, 20.5),
        (20.0, 20, 21.4, 26.5, 21.2),
    ];
    let mut limits = Vec::new();
    for row in cold {
        limits.push(auto.next_limit(&recorded(row)));
        if !auto.in_startup() {
            break;
        }
    }
    assert!(!auto.in_startup(), "{limits:?}");
    assert!(limits.iter().all(|&l| l <= 20.0), "{limits:?}");
}

#[test]
fn a_cold_start_window_of_a_few_calls_of_one_length_that_all_waited_ends_it() {
    // 2 ps workers of 200 ms at 0.8 load (the defaults grid, seed 1): at
    // 4 slots the alarm closed a window after 4 calls of 400 ms, whose
    // rate (10 a second, up from the load's 8) read as following the
    // limit; it doubled to 8, and calls took 800 ms for clients that
    // wait 1 s (3.2 s once slowed). Every call of the window waited a
    // whole call inside the service, however few they were.
    let mut auto = Auto::default();
    let cold = [
        (2.0, 12, 1636.0, 200.0, 200.0),
        (4.0, 4, 400.0, 400.0, 400.0),
        (4.0, 4, 400.0, 400.0, 400.0),
        (4.0, 4, 400.0, 400.0, 400.0),
    ];
    let limits = replay(&mut auto, &cold);
    assert!(auto.calls_of_one_length(), "{limits:?}");
    assert!(!auto.in_startup(), "{limits:?}");
    assert!(limits.iter().all(|&l| l <= 4.0), "{limits:?}");
    assert!(limits.last().unwrap().round() <= 3.0, "{limits:?}");
}

#[test]
fn below_capacity_a_cold_start_window_in_which_no_call_waited_grows_nothing() {
    // 2 workers of 200 ms at 0.8 load (the defaults grid's
    // `fifo-2x200ms-exp-10x`, seed 3): the window at 4 slots reached its
    // limit in a burst, but no call waited for a slot, and its 9 calls a
    // second (the load's) read as following the limit: it doubled to 8,
    // and the slowdown queued 8 calls of 800 ms behind 2 workers.
    let mut auto = Auto::default();
    let first = recorded((2.0, 12, 2113.0, 193.6, 5.0));
    assert_eq!(auto.next_limit(&first), 4.0);
    let unwaited = Window {
        waiting: false,
        waiters: 0,
        ..recorded((4.0, 12, 1276.0, 192.9, 34.0))
    };
    assert!(unwaited.limit_binds(), "the limit was reached");
    assert_eq!(auto.next_limit(&unwaited), 4.0, "the load's rate");
    assert!(auto.in_startup());
    // The same window with calls waiting for a slot shows the slots'.
    assert_eq!(
        auto.next_limit(&recorded((4.0, 12, 1276.0, 192.9, 34.0))),
        8.0
    );
}

#[test]
fn a_cold_start_window_whose_load_did_not_outrun_its_limit_grows_nothing() {
    // 2 workers of 200 ms at 0.8 load (the defaults grid's
    // `fifo-2x200ms-exp-10x`, seed 13): the first window closed with 2
    // calls waiting for its 2 slots, but 8 had come to wait while 12
    // finished, a burst of a load the slots kept up with. Grown on it to
    // 4, then to 16, the limit let the slowdown queue 16 calls of 800 ms
    // behind the 2 workers, past every client's 2 s, to the end of the
    // run.
    let burst = Window {
        waiters: 2,
        arrived: 8,
        ..recorded((2.0, 12, 3091.0, 281.3, 5.0))
    };
    assert!(burst.waiting && burst.limit_binds());
    let mut auto = Auto::default();
    assert_eq!(auto.next_limit(&burst), 2.0, "the load's rate");
    assert!(auto.in_startup());
    // As many calls coming to wait as finished, or a backlog of as many
    // still waiting: the load outran the slots.
    let outran = Window {
        arrived: 12,
        ..burst
    };
    assert_eq!(Auto::default().next_limit(&outran), 4.0);
    let backlog = Window {
        waiters: 12,
        ..burst
    };
    assert_eq!(Auto::default().next_limit(&backlog), 4.0);
}

#[test]
fn calls_of_one_length_that_queued_inside_end_a_cold_start_whether_or_not_any_waited() {
    // 8 ps workers of 2 ms at 0.8 load (the defaults grid, seed 2): the
    // cold start reached 16 slots, and the windows there, in which no
    // call waited for a slot, read 2.9-3.9 ms; held as the load's, the
    // limit stayed at 16 for five windows.
    let mut auto = Auto::default();
    let cold = [(2.0, 12, 13.0, 2.0, 2.0), (4.0, 17, 10.0, 2.0, 2.0)];
    assert_eq!(replay(&mut auto, &cold), [4.0, 16.0]);
    let queued = Window {
        waiting: false,
        waiters: 0,
        ..recorded((16.0, 33, 11.0, 3.4, 2.0))
    };
    let next = auto.next_limit(&queued);
    assert!(!auto.in_startup(), "ended at {next}");
    assert!(next <= 10.0, "back near the 8 workers: {next}");
}

#[test]
fn a_cold_start_window_in_which_no_call_waited_still_teaches_calls_of_one_length() {
    // 2 ps workers of 200 ms at 0.8 load (the defaults grid, seed 4): no
    // call waited at 2 slots, so nothing was learned until a window of
    // waiting calls, which took 5 s to time and met the slowdown: its
    // 700 ms became the no-load latency and the limit went to 16.
    let mut auto = Auto::default();
    let unwaited = Window {
        waiting: false,
        waiters: 0,
        ..recorded((2.0, 12, 1596.0, 200.0, 200.0))
    };
    assert_eq!(auto.next_limit(&unwaited), 2.0, "the load's rate");
    assert_eq!(no_load_ms(&auto), 200.0);
    assert!(auto.calls_of_one_length());
    // Calls of varying length read below the limit teach no latency
    // (Little's reading needs the limit to bind), only their kind.
    let mut varying = Auto::default();
    let unwaited = Window {
        waiting: false,
        waiters: 0,
        ..recorded((2.0, 12, 1596.0, 200.0, 20.0))
    };
    assert_eq!(varying.next_limit(&unwaited), 2.0);
    assert_eq!(varying.no_load_latency(), None);
    // Its vote counts: one window of one length after it does not make
    // the service's calls of one length.
    varying.next_limit(&recorded((2.0, 12, 1200.0, 200.0, 190.0)));
    assert!(!varying.calls_of_one_length(), "a vote each way");
}

#[test]
fn a_startup_without_a_full_window_ends_at_the_limit_the_throughput_followed() {
    // 2 fifo workers of 200 ms (exponential) at 3x, from the defaults
    // grid: a window at 4 slots read its dozen calls' rate high enough to
    // double, the three windows at 8 did not rise, and no window held the
    // 32 calls the bandwidth-delay product takes: the startup ended at
    // 1.2 times the limit itself, 9.6 slots, and the slowdown after it
    // served nothing in time for seconds.
    let mut auto = Auto::default();
    let cold = [
        (2.0, 17, 1849.0, 190.9, 5.0),
        (4.0, 18, 1537.0, 297.2, 50.0),
        (8.0, 14, 1268.0, 490.8, 220.0),
        (8.0, 12, 1252.0, 947.3, 476.0),
        (8.0, 12, 2343.0, 1242.9, 562.0),
    ];
    let mut limits = Vec::new();
    for row in cold {
        // A dozen of the calls finished were measured.
        limits.push(auto.next_limit(&Window {
            completed: 12,
            ..recorded(row)
        }));
    }
    assert!(!auto.in_startup(), "{limits:?}");
    let settled = *limits.last().unwrap();
    assert!(settled <= 1.2 * 4.0 + 1e-9, "{limits:?}");
}

#[test]
fn calls_of_one_length_back_from_a_slowdown_learn_their_latency_below_the_pool() {
    // 8 workers of 20 ms, slowed to 80 ms, back to 20 ms. The window of
    // the recovery mixes slow calls with fast ones (a mean of 27 ms):
    // taken as the no-load latency, it held the limit at 10-12 slots, a
    // quarter above the pool, where the calls' latency (25 ms) shows no
    // queue against 27. The probe at half the limit after the growth
    // shows 20 ms again.
    let mut auto = Auto::default();
    drive(&mut auto, 2.0, 100, |l| one_length_at(20.0, 8.0, l));
    let slow = drive(&mut auto, 8.0, 40, |l| one_length_at(80.0, 8.0, l));
    let limit = *slow.last().unwrap();
    let mixed = Window {
        min_latency: Duration::from_millis(20),
        ..window(27.0, limit, 40, true)
    };
    let limit = auto.next_limit(&mixed);
    let limits = drive(&mut auto, limit, 60, |l| one_length_at(20.0, 8.0, l));
    assert_eq!(
        auto.no_load_latency(),
        Some(Duration::from_millis(20)),
        "{slow:?} {limits:?}"
    );
    assert!(
        limits[30..]
            .iter()
            .all(|&l| l.round() >= 8.0 && l.round() <= 9.0),
        "{slow:?} {limits:?}"
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
    auto.rates = Filter::only(slowed_rate);
    auto.bound_rates = Filter::only(slowed_rate);
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

/// A cold start of calls of 50 ms in front of 64 workers, up to the
/// limit of 128 it reaches; with that limit.
fn a_cold_start_of_50ms_calls_past_64_workers() -> (Auto, f64) {
    let mut auto = Auto::default();
    let mut limit = 2.0;
    while limit < 128.0 {
        limit = drive(&mut auto, limit, 1, |l| one_length_at(50.0, 64.0, l))[0];
    }
    (auto, limit)
}

/// That cold start, then windows below capacity of `calls` calls of 50 ms
/// each (the limit holds through them), then 30 windows of every call
/// four times slower: the limits of those, once the no-load latency has
/// been checked to follow the slowdown to 200 ms.
fn a_slowdown_to_200ms_after_windows_below_capacity(calls: &[u64]) -> Vec<f64> {
    let (mut auto, limit) = a_cold_start_of_50ms_calls_past_64_workers();
    assert!(auto.in_startup());
    for &calls in calls {
        let below = Window {
            min_latency: Duration::from_millis(50),
            ..window(50.0, limit, calls, false)
        };
        assert_eq!(auto.next_limit(&below), limit, "an unused limit holds");
    }
    let slow = drive(&mut auto, limit, 30, |l| one_length_at(200.0, 64.0, l));
    let no_load = auto.no_load_latency().unwrap();
    assert!(
        (Duration::from_millis(190)..=Duration::from_millis(210)).contains(&no_load),
        "{no_load:?} {slow:?}"
    );
    slow
}

#[test]
fn a_slowdown_right_after_a_load_below_capacity_keeps_the_pool_busy() {
    // 64 workers of 50 ms under 0.8x: the cold start doubles to 128 and
    // the limit never binds again, so no usual rate is known when every
    // call becomes four times slower. The rate the limit once bound at is
    // the usual one: the slowdown is read as such (the no-load latency
    // scales, the limit keeps the 64 workers busy); read as a queue, the
    // limit fell to 12-18 slots and served a quarter of the slowed pool.
    let slow = a_slowdown_to_200ms_after_windows_below_capacity(&[100; 5]);
    assert!(slow[5..].iter().all(|&l| l.round() >= 64.0), "{slow:?}");
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
fn a_window_draining_a_higher_limit_keeps_its_throughput() {
    // Little's bound on a window of calls of one length counts the calls
    // in flight at its start too: after the limit fell from 32 to 16,
    // the window still completes the calls the 32 slots admitted, at the
    // pool's 800 a second. Bounded by its own 20 in flight at 40 ms (500
    // a second), the usual rate fell to 710 (in the lab, 64 workers
    // slowed to 200 ms read 197 calls a second of 320, and the next
    // ordinary window then looked like a recovery).
    let mut auto = Auto::default();
    drive(&mut auto, 2.0, 200, |l| pool_of_one_length(16.0, l));
    auto.next_limit(&pool_of_one_length(16.0, 32.0));
    let draining = Window {
        limit: 16.0,
        max_in_flight: 20,
        ..pool_of_one_length(16.0, 32.0)
    };
    auto.next_limit(&draining);
    let usual = auto.binding_rate.get().unwrap();
    assert!(usual >= 790.0, "{usual}");
}

/// A cold start of 1,000 workers of 200 ms (exponential), past its first
/// window, through windows of one round trip each: below 64 slots (and
/// with 16, then 24 calls in the rising windows) each grows by one round
/// trip's gain; from 64, with 84 calls pooled, a window followed in full
/// grows by two, however short. Doubling a round trip found the pool
/// 3.0-3.2 s after the cold start.
fn grown_fourfold_to_256() -> Auto {
    let mut auto = past_a_first_window_of_200ms_calls();
    let limits = replay(&mut auto, &RISING_200MS_CALLS);
    assert_eq!(limits, [8.0, 16.0, 32.0, 64.0, 256.0]);
    auto
}

/// The windows of [`grown_fourfold_to_256`]: every slot completes a call
/// of 200 ms a round trip, without a queue.
const RISING_200MS_CALLS: [(f64, u64, f64, f64, f64); 5] = [
    (4.0, 4, 200.0, 200.0, 20.0),
    (8.0, 8, 200.0, 200.0, 20.0),
    (16.0, 16, 200.0, 200.0, 20.0),
    (32.0, 32, 200.0, 200.0, 20.0),
    (64.0, 64, 200.0, 200.0, 20.0),
];

#[test]
fn a_cold_start_limit_that_grew_fourfold_comes_down_to_twice_what_the_load_fills() {
    // At 0.8 load 1,000 workers kept 4,096 slots the load never filled,
    // and a 4x slowdown queued three slowed calls a worker past every
    // client (a second at 0%).
    let mut auto = grown_fourfold_to_256();
    let unfilled = Window {
        max_in_flight: 6,
        waiting: false,
        waiters: 0,
        ..recorded((256.0, 32, 400.0, 200.0, 20.0))
    };
    assert_eq!(auto.next_limit(&unfilled), 12.0);
    assert!(auto.in_startup());
    // A window at that limit, below the last one that rose, whose calls
    // came four times slower did not rise: the limit holds, where it
    // doubled.
    assert_eq!(
        auto.next_limit(&recorded((12.0, 12, 1000.0, 800.0, 20.0))),
        12.0
    );
    // One whose slots kept their rate goes on rising.
    let mut auto = grown_fourfold_to_256();
    auto.next_limit(&unfilled);
    assert_eq!(
        auto.next_limit(&recorded((12.0, 12, 200.0, 200.0, 20.0))),
        24.0
    );
    // Before the rising windows hold 32 calls, a limit grows by one round
    // trip at most, and the load's bursts keep it.
    let mut auto = past_a_first_window_of_200ms_calls();
    let unfilled = Window {
        max_in_flight: 1,
        waiting: false,
        waiters: 0,
        ..recorded((4.0, 4, 400.0, 200.0, 20.0))
    };
    assert_eq!(auto.next_limit(&unfilled), 4.0);
}

#[test]
fn a_startup_that_ends_on_a_queue_without_a_full_window_settles_at_the_limit_the_throughput_followed(
) {
    // 2 fifo workers of 200 ms (exponential) at 3x, seed 61 of the
    // defaults grid: 12 calls at 8 slots came at 17 a second (2 workers
    // complete 10), the limit doubled to 16, and there every call waited
    // inside the service (the shortest 470 ms). Ended at the limit
    // itself, the startup settled at 19.2 slots, and the next window of
    // 64 calls took 11.6 s.
    let mut auto = Auto::default();
    let limits = replay(
        &mut auto,
        &[
            (2.0, 12, 1465.0, 197.5, 39.0),
            (4.0, 12, 1046.0, 359.0, 48.0),
            (8.0, 12, 689.0, 359.8, 65.0),
            (16.0, 16, 2385.0, 1367.6, 470.0),
        ],
    );
    assert!(!auto.in_startup(), "{limits:?}");
    assert_eq!(&limits[..3], [4.0, 8.0, 16.0]);
    assert!(limits[3] <= 1.2 * 8.0 + 1e-9, "{limits:?}");
}

/// Past the cold start's first window: 12 calls of 200 ms (exponential)
/// at 2 slots, six round trips; the limit doubled to 4.
fn past_a_first_window_of_200ms_calls() -> Auto {
    let mut auto = Auto::default();
    assert_eq!(
        auto.next_limit(&recorded((2.0, 12, 1200.0, 200.0, 20.0))),
        4.0
    );
    auto
}

#[test]
fn a_cold_start_window_that_took_round_trips_to_fill_grows_by_each_once_a_rise_was_followed() {
    // 1,000 workers: a window needs 12 calls, which take six round trips
    // at 2 slots and three at 4. Doubling once a window held the limit
    // there for 3.4 s.
    let mut auto = past_a_first_window_of_200ms_calls();
    // Every slot completed a call per 200 ms, as at 2, without a queue:
    // two round trips' gain.
    assert_eq!(
        auto.next_limit(&recorded((4.0, 12, 600.0, 200.0, 20.0))),
        16.0
    );
}

#[test]
fn a_cold_start_window_of_one_round_trip_grows_by_one_below_64_slots_or_32_calls() {
    // 1,000 workers of 200 ms: see the helper for each step.
    let mut auto = grown_fourfold_to_256();
    // One that shows a queue (calls of 200 ms taking 400) grows by one.
    assert_eq!(
        auto.next_limit(&recorded((256.0, 64, 50.0, 400.0, 20.0))),
        512.0
    );
    // Calls of one length grow by one: a queue behind their workers
    // would set their p99.
    let mut auto = Auto::default();
    let of_one_length =
        |(limit, calls, elapsed, latency, _)| (limit, calls, elapsed, latency, 190.0);
    assert_eq!(
        auto.next_limit(&recorded(of_one_length((2.0, 12, 1200.0, 200.0, 0.0)))),
        4.0
    );
    let limits = replay(&mut auto, &RISING_200MS_CALLS.map(of_one_length));
    assert!(auto.calls_of_one_length());
    assert_eq!(limits, [8.0, 16.0, 32.0, 64.0, 128.0]);
}

#[test]
fn a_rise_not_followed_in_full_grows_by_one_round_trip() {
    // 2 workers: at 4 slots a dozen exponential calls read 13 a second of
    // the 10 they do (the rise seems to pay, but not every slot completes
    // at the rate of those at 2), and the mean hides the queue. Four times
    // would put 14 calls behind the workers.
    let mut auto = past_a_first_window_of_200ms_calls();
    assert_eq!(
        auto.next_limit(&recorded((4.0, 12, 923.0, 200.0, 20.0))),
        8.0
    );
    // Every slot at the rate of those at 2, but calls queue inside the
    // service (260 ms for 200): one round trip's gain too.
    let mut auto = past_a_first_window_of_200ms_calls();
    assert_eq!(
        auto.next_limit(&recorded((4.0, 12, 600.0, 260.0, 20.0))),
        8.0
    );
}

/// 4 workers of 1 ms at 0.8 load behind `limit` slots: bursts reach the
/// limit now and then, the service queues half a call on average, and no
/// call waits for a slot when the window closes.
fn below_capacity(limit: f64) -> Window {
    Window {
        max_in_flight: limit as u64,
        waiting: false,
        waiters: 0,
        ..window(1.75, limit, 320, true)
    }
}

#[test]
fn a_queue_inside_the_service_that_no_caller_waits_behind_keeps_the_limit() {
    // The product at this load is 3.2 slots: shrinking to it put 4
    // workers behind 3.8 slots, and the bursts waited in the limiter's
    // queue, past its 3 ms budget one call in twenty.
    let mut auto = steady(0.001, 3200.0, 3200.0);
    assert_eq!(auto.next_limit(&below_capacity(12.0)), 12.0);
    // With callers waiting for slots the same queue is the limit's doing.
    let overloaded = Window {
        waiting: true,
        waiters: 0,
        ..below_capacity(12.0)
    };
    assert!(auto.next_limit(&overloaded) < 12.0);
}

#[test]
fn a_queue_inside_the_service_behind_a_burst_the_limit_kept_up_with_keeps_the_limit() {
    // A burst left 3 calls waiting at the window's close, but only 150
    // came to wait while 320 finished: the load did not outrun the limit.
    // Shrunk on such windows to the load's product, 4 workers of 1 ms of
    // lognormal length at 0.8 load stood at 3-4 slots, and their bursts
    // waited past the budget.
    let mut auto = steady(0.001, 3200.0, 3200.0);
    let burst = Window {
        waiting: true,
        waiters: 3,
        arrived: 150,
        ..below_capacity(12.0)
    };
    assert!(!load_outran_limit(&burst));
    assert_eq!(auto.next_limit(&burst), 12.0);
    // As many came to wait as finished: the load outran the limit, and
    // the queue is the limit's doing.
    let outran = Window {
        arrived: 320,
        ..burst
    };
    assert!(auto.next_limit(&outran) < 12.0);
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
fn a_startup_whose_throughput_stops_following_while_no_caller_waits_goes_on() {
    // Restarted from the steady state below capacity: the load, not the
    // service, stopped the throughput. Ending here set the limit to the
    // load's product.
    let mut auto = steady(0.001, 3200.0, 3200.0);
    auto.startup = true;
    auto.restarted = true;
    auto.startup_last = Some((6.0, 3200.0));
    auto.startup_pool.add(&Window {
        finished: 320,
        ..window(1.0, 6.0, 320, true)
    });
    for _ in 0..4 {
        assert_eq!(auto.next_limit(&below_capacity(12.0)), 12.0);
        assert!(auto.in_startup());
    }
}

#[test]
fn the_no_load_latency_comes_down_only_for_a_mean_below_its_noise() {
    // 100 calls of exponential length read their mean within a tenth or
    // so: 0.85 ms says nothing against 1 ms, 0.7 ms does, a third of the
    // way while calls wait for slots (a queue may hide behind the limit).
    let mut auto = steady(0.001, 3200.0, 3200.0);
    auto.next_limit(&window(0.85, 12.0, 100, true));
    assert_eq!(auto.no_load_latency(), Some(Duration::from_millis(1)));
    // (That window, with no queue, restarted the startup: a fresh one.)
    let mut auto = steady(0.001, 3200.0, 3200.0);
    auto.next_limit(&window(0.7, 12.0, 100, true));
    let no_load = auto.no_load_latency().unwrap().as_secs_f64();
    assert!((no_load - 0.00091).abs() < 1e-6, "{no_load}");
}

#[test]
fn a_window_in_which_no_call_waited_unlearns_a_stale_no_load_latency_at_once() {
    // 1,000 workers of 200 ms at 0.8 load after a slowdown that scaled
    // the no-load latency to 542 ms: a window of calls that waited for
    // no slot, at 184.5 ms, shows it at once (a third of the way at a
    // time kept 310 ms five windows on, which a second slowdown scaled
    // past its calls' own latency). Within its noise, it says nothing.
    let unfilled = |latency_ms: f64, limit: f64| Window {
        max_in_flight: 842,
        elapsed: Duration::from_millis(1100),
        ..window(latency_ms, limit, 4400, false)
    };
    let mut auto = steady(0.542, 4000.0, 4000.0);
    auto.next_limit(&unfilled(184.5, 1684.0));
    assert_eq!(
        auto.no_load_latency(),
        Some(Duration::from_secs_f64(0.1845))
    );
    auto.next_limit(&unfilled(182.0, 1053.0));
    assert_eq!(
        auto.no_load_latency(),
        Some(Duration::from_secs_f64(0.1845))
    );
}

#[test]
fn a_stale_probe_within_its_noise_of_the_usual_rate_does_not_teach_the_queue() {
    // 16 workers slowed to 40 ms, held at 24.5 slots: the pool's queue
    // stayed for five windows, so the probe at 18 slots decides whether
    // that latency is the service's own. It served 39 calls in 100 ms
    // (390 a second against the usual 420): within a window's noise of as
    // many, so the 45 ms (a queue still draining) is not the no-load
    // latency.
    let mut auto = steady(0.036, 420.0, 420.0);
    auto.stale_probe = true;
    auto.stale_latency = 0.045;
    assert_eq!(auto.probe_limit(24.5), Some(18.375));
    auto.next_limit(&Window {
        probe: true,
        ..window(44.9, 18.375, 39, true)
    });
    assert_eq!(auto.no_load_latency(), Some(Duration::from_millis(36)));
    // Far fewer calls at fewer slots: the latency is the service's own.
    auto.stale_probe = true;
    auto.stale_latency = 0.045;
    auto.before_probe = Some(24.5);
    auto.next_limit(&Window {
        probe: true,
        ..window(44.9, 18.375, 30, true)
    });
    assert_eq!(
        auto.no_load_latency(),
        Some(Duration::from_secs_f64(0.0449))
    );
}

#[test]
fn a_probe_of_a_few_calls_keeps_the_lower_limit_only_beyond_its_noise() {
    // 64 workers of 50 ms held at 2.4 slots (a cold start read the calls
    // at half their length): a window holds 5 calls. A probe at 1.8 slots
    // that served as many calls a second as usual may be noise (5 calls
    // read a rate within about 45%), and the lower limit must not stay.
    let mut auto = steady(0.025, 48.0, 48.0);
    auto.since_probe = auto.probe_every;
    let probe = auto.probe_limit(2.4).expect("a periodic probe");
    assert!((probe - 1.8).abs() < 1e-9, "{probe}");
    let five = Window {
        probe: true,
        ..recorded((probe, 5, 100.0, 50.0, 2.0))
    };
    assert_eq!(auto.next_limit(&five), 2.4, "back to the limit it left");
    // 64 calls at 0.75 of 32 slots serving as many: a queue, and the
    // lower limit stays.
    let mut auto = steady(0.025, 640.0, 640.0);
    auto.since_probe = auto.probe_every;
    assert_eq!(auto.probe_limit(32.0), Some(24.0));
    let many = Window {
        probe: true,
        ..recorded((24.0, 64, 100.0, 37.0, 1.0))
    };
    assert_eq!(auto.next_limit(&many), 24.0);
}

#[test]
fn a_slowdown_is_judged_against_a_rate_the_limit_bound_at_not_a_batch() {
    // As above, but one window below capacity closed just after a batch
    // of completions: 183 calls of 50 ms in 100 ms, 1,830 a second from
    // a pool that does 1,280. Judged against that rate, the slowdown to
    // 200 ms read as 5.7 times slower, the no-load latency as 286 ms, and
    // the slowed calls' queue as none: the limit grew past the pool.
    let slow = a_slowdown_to_200ms_after_windows_below_capacity(&[100, 183, 100]);
    assert!(slow[10..].iter().all(|&l| l.round() <= 70.0), "{slow:?}");
}

#[test]
fn a_window_that_took_no_time_is_not_read_as_a_rate_of_zero() {
    // Found by `properties`: a cold start whose first window held 32
    // calls in no time read their rate as 0, the highest rate of the
    // windows of 32 calls or more was that 0, and the startup ended at a
    // bandwidth-delay product of 0 (the driver's floor of one slot).
    let mut auto = Auto::default();
    let no_time = Window {
        elapsed: Duration::ZERO,
        waiting: false,
        waiters: 0,
        ..window(0.0, 1.0, 32, false)
    };
    assert_eq!(auto.next_limit(&no_time), 1.0, "not judged");
    let brief = |completed, latency_us: u64, shortest_us: u64| Window {
        completed,
        avg_latency: Duration::from_micros(latency_us),
        min_latency: Duration::from_micros(shortest_us),
        finished: 1,
        elapsed: Duration::from_micros(1),
        ..window(0.0, 1.0, completed, true)
    };
    let mut limit = 1.0;
    for w in [brief(1, 1, 1), brief(16, 2, 0)] {
        limit = auto.next_limit(&Window { limit, ..w });
        assert!(limit >= 1.0, "{limit}");
    }
}

/// The cold start of seed 19 of `fifo-1000x200ms` at 3x, up to its end:
/// the first window's 14 calls came in 0.69 s, twice the rate of 2 slots
/// of 200 ms calls, and the windows at 4 slots then read as stalled.
const A_LUCKY_FIRST_WINDOW: [(f64, u64, f64, f64, f64); 4] = [
    (2.0, 14, 693.0, 93.5, 4.0),
    (4.0, 12, 677.0, 217.4, 7.0),
    (4.0, 12, 632.0, 154.8, 35.0),
    (4.0, 12, 584.0, 233.6, 23.0),
];

#[test]
fn a_cold_start_that_stalls_on_a_lucky_first_window_looks_again_and_goes_on() {
    let mut auto = Auto::default();
    let limits = replay(&mut auto, &A_LUCKY_FIRST_WINDOW);
    assert_eq!(limits, [4.0, 4.0, 4.0, 2.0], "a second look at 2 slots");
    assert!(auto.in_startup());
    // Right after the fall, the calls the 4 slots admitted still complete.
    let draining = Window {
        max_in_flight: 4,
        ..recorded((2.0, 12, 1078.0, 221.7, 7.0))
    };
    assert_eq!(auto.next_limit(&draining), 2.0, "not judged yet");
    // 12.6 calls a second at 2 slots against 19 at 4: the slots above
    // were working, and the first window was lucky.
    let look = recorded((2.0, 12, 951.0, 149.6, 32.0));
    assert_eq!(auto.next_limit(&look), 8.0, "the startup goes on from 4");
    let learned = no_load_ms(&auto);
    assert!(
        (190.0..=210.0).contains(&learned),
        "the no-load latency of 200 ms calls, not the first window's: {learned} ms"
    );
}

/// The cold start of seed 50 of `fifo-1000x200ms` at 3x, to its window at
/// 16 slots: the first window's 14 calls came in 0.83 s (17 a second of
/// the 10 that 2 slots of 200 ms calls complete), and the windows after
/// it rose.
const A_LUCKY_FIRST_WINDOW_THEN_RISES: [(f64, u64, f64, f64, f64); 4] = [
    (2.0, 14, 829.0, 74.0, 2.0),
    (4.0, 12, 524.0, 191.3, 0.0),
    (8.0, 12, 250.0, 100.8, 38.0),
    (16.0, 16, 262.0, 178.6, 16.0),
];

#[test]
fn a_cold_start_reads_a_queue_against_its_windows_as_they_are_not_its_luckiest() {
    let mut auto = Auto::default();
    let limits = replay(&mut auto, &A_LUCKY_FIRST_WINDOW_THEN_RISES);
    // The lucky first window read 118 ms, and 179 ms passes 1.2 times
    // that; the three windows' pool reads 151 ms, which it does not.
    assert_eq!(
        limits,
        [4.0, 8.0, 16.0, 16.0],
        "the window at 16 slots stalled once, without a queue: judged again"
    );
    assert!(auto.in_startup());
    let next = auto.next_limit(&recorded((16.0, 16, 153.0, 162.6, 1.0)));
    assert_eq!(
        next, 32.0,
        "105 calls a second at 16 slots: the startup goes on"
    );
}

/// The cold start of seed 118 of `fifo-1000x200ms` at 3x, to its third
/// window at 4 slots: 12 calls at 2 slots in 578 ms (21 a second of the
/// 10 that 2 slots of 200 ms calls complete), then the 4 slots' 19 and
/// 13, while thousands of calls waited.
const A_LUCKY_FIRST_WINDOW_IN_A_CROWD: [(f64, u64, f64, f64, f64); 4] = [
    (2.0, 12, 578.0, 85.6, 3.0),
    (4.0, 12, 632.0, 203.2, 7.0),
    (4.0, 12, 638.0, 178.4, 7.0),
    (4.0, 12, 959.0, 297.2, 16.0),
];

/// Replays recorded windows (see [`recorded`]) on `auto` with a crowd of
/// `waiters` calls waiting at each close, and as many calls come to wait
/// in each as finished; the limits it chose.
fn replay_with(auto: &mut Auto, waiters: u64, windows: &[(f64, u64, f64, f64, f64)]) -> Vec<f64> {
    windows
        .iter()
        .map(|&row| auto.next_limit(&in_a_crowd(row, waiters, row.1)))
        .collect()
}

/// A cold-start window of `calls` of varying length at `limit` (see
/// [`recorded`]) that `waiters` waited through while `arrived` came.
fn in_a_crowd(row: (f64, u64, f64, f64, f64), waiters: u64, arrived: u64) -> Window {
    Window {
        waiters,
        arrived,
        ..recorded(row)
    }
}

#[test]
fn a_cold_start_that_stalls_at_a_few_slots_while_a_crowd_waits_goes_on() {
    let mut few_waiting = Auto::default();
    let limits = replay_with(
        &mut few_waiting,
        CROWD - 1,
        &A_LUCKY_FIRST_WINDOW_IN_A_CROWD,
    );
    assert_eq!(
        limits,
        [4.0, 4.0, 4.0, 2.0],
        "without a crowd, a second look"
    );
    let mut auto = Auto::default();
    let limits = replay_with(&mut auto, CROWD, &A_LUCKY_FIRST_WINDOW_IN_A_CROWD);
    assert_eq!(limits, [4.0, 4.0, 4.0, 8.0], "with one, on from 4 slots");
    assert!(auto.in_startup());
    // 8 slots complete 40 calls a second: a rise followed.
    let next = auto.next_limit(&Window {
        waiters: CROWD,
        ..recorded((8.0, 12, 300.0, 200.0, 5.0))
    });
    assert!(next >= 16.0 && auto.in_startup(), "grew: {next}");
    let learned = no_load_ms(&auto);
    assert!(
        (190.0..=260.0).contains(&learned),
        "the stalled windows' and the rise's reading of calls of 200 ms, not the first window's 96 ms: {learned} ms"
    );
}

#[test]
fn a_cold_start_in_a_crowd_of_slow_calls_grows_to_a_quarter_of_the_demand() {
    // `fifo-1000x200ms` at 3x, seed 7: the first window, 8 calls at 2
    // slots in 605 ms (a mean of 121.9 ms, the short ones first), while
    // 9,111 calls came, 5,540 of them still waiting: 15,060 calls a
    // second, which at that latency would hold 1,836 slots with no
    // queue. Doubling, the cold start took seconds to find the pool.
    let first = (2.0, 8, 605.0, 121.9, 6.0);
    let demand = 9111.0 / 0.605 * 0.1219;
    let mut auto = Auto::default();
    let limit = auto.next_limit(&in_a_crowd(first, 5540, 9111));
    assert!(
        (limit - 0.25 * demand).abs() < 0.5 && auto.in_startup(),
        "{limit} against a quarter of {demand}"
    );
    // The next window rose with it, and doubles, above its own quarter.
    let next = auto.next_limit(&in_a_crowd((limit, 375, 152.0, 58.7, 0.0), 4960, 2220));
    assert!((next - 2.0 * limit).abs() < 1e-9, "{next}");
    // Without a crowd, the same window grows as any other.
    let mut few = Auto::default();
    assert!(few.next_limit(&in_a_crowd(first, CROWD - 1, 9111)) <= 8.0);
    // Calls quick to gather (a dozen of 10 ms take 60 ms at 2 slots) grow
    // as any other too: a lucky window of them would set the rising
    // windows' rate.
    let mut quick = Auto::default();
    let fast = in_a_crowd((2.0, 12, 60.0, 10.0, 1.0), 5540, 9111);
    assert!(quick.next_limit(&fast) <= 8.0);
    // So do calls of one length (the window right after a jump holds
    // calls admitted before it), and a startup restarted from the steady
    // state, whose queue is not a cold start's crowd.
    let mut one_length = Auto {
        one_length_votes: (8, 0),
        ..Auto::default()
    };
    assert!(one_length.next_limit(&in_a_crowd(first, 5540, 9111)) <= 8.0);
    let mut restarted = Auto {
        restarted: true,
        ..Auto::default()
    };
    assert!(restarted.next_limit(&in_a_crowd(first, 5540, 9111)) <= 8.0);
}

#[test]
fn a_few_workers_in_a_crowd_end_their_cold_start_one_doubling_later() {
    // 2 workers of 200 ms: 10 calls a second whatever the limit, each
    // call's latency its limit's tenth of a second. The crowd's rise to
    // 8 slots is not followed: the stall was a queue, and the next stall
    // ends the cold start. Were every stall under 32 slots risen from,
    // the pool would go on to 16 and 32 slots, three windows of 1.2 s
    // each, every call there waiting seconds for clients of 1 s.
    let mut auto = Auto::default();
    let at = |limit: f64| (limit, 12, 1200.0, 100.0 * limit, 5.0);
    let limits = replay_with(&mut auto, CROWD, &[at(2.0), at(4.0), at(4.0), at(4.0)]);
    assert_eq!(limits, [4.0, 4.0, 4.0, 8.0]);
    let mut limits = vec![8.0];
    while auto.in_startup() && limits.len() < 12 {
        let limit = limits[limits.len() - 1];
        limits.push(auto.next_limit(&Window {
            waiters: CROWD,
            ..recorded(at(limit))
        }));
    }
    assert!(
        !auto.in_startup(),
        "no second way out at 8 slots: {limits:?}"
    );
    assert!(limits.iter().all(|&l| l <= 8.0), "one doubling: {limits:?}");
    assert!(
        limits[limits.len() - 1] <= 3.0,
        "settled near the 2 workers: {limits:?}"
    );
}

/// `fifo-1000x200ms` seed 45 at 3x, with the first window closed early
/// in a crowd (see `AutoControl::first_window_due`): 10 calls of 200 ms
/// at 2 slots came in 579 ms, 17 a second of the 10 two slots complete.
/// The windows at 4 slots stalled, the crowd's rise to 8 was followed,
/// and the windows at 16 stalled again.
const A_LUCKY_SHORT_FIRST_WINDOW: [(f64, u64, f64, f64, f64); 6] = [
    (2.0, 10, 579.0, 89.4, 13.0),
    (4.0, 12, 732.0, 225.8, 1.0),
    (4.0, 12, 362.0, 156.9, 2.0),
    (8.0, 12, 267.0, 118.6, 11.0),
    (16.0, 16, 252.0, 144.3, 7.0),
    (16.0, 16, 261.0, 227.0, 20.0),
];

#[test]
fn after_a_crowd_rise_that_was_followed_a_stall_at_16_slots_goes_on_too() {
    // The stall at 16 slots ended that cold start at 10 slots, where the
    // limit stayed for 6 s (989 calls in time of 61,250 over the run; 3
    // seeds of 256 so, where rises stopped at 8 slots). A crowd's
    // rise that was followed shows the stall before it a lucky reading,
    // and the next one is judged the same way.
    let mut auto = Auto::default();
    let limits = replay_with(&mut auto, CROWD, &A_LUCKY_SHORT_FIRST_WINDOW);
    assert_eq!(limits, [4.0, 4.0, 8.0, 16.0, 16.0, 32.0]);
    assert!(auto.in_startup());
    let mut few_waiting = Auto::default();
    let limits = replay_with(&mut few_waiting, CROWD - 1, &A_LUCKY_SHORT_FIRST_WINDOW);
    assert!(
        !few_waiting.in_startup() && limits[limits.len() - 1] < 16.0,
        "without a crowd the stall ends it: {limits:?}"
    );
}

#[test]
fn a_second_look_at_a_pool_the_lower_limit_filled_ends_the_cold_start() {
    // 2 workers of 200 ms: 10 calls a second at 2 slots and at 4.
    let mut auto = Auto::default();
    let at_two = (2.0, 12, 1200.0, 200.0, 5.0);
    let at_four = (4.0, 12, 1200.0, 400.0, 10.0);
    let limits = replay(&mut auto, &[at_two, at_four, at_four, at_four]);
    assert_eq!(limits, [4.0, 4.0, 4.0, 2.0], "a second look at 2 slots");
    let end = auto.next_limit(&recorded(at_two));
    assert!(!auto.in_startup(), "as many calls a second at 2 slots");
    assert!((end - 2.4).abs() < 1e-9, "settled at 1.2x the pool: {end}");
}

#[test]
fn a_second_look_whose_calls_got_slower_is_a_slowdown_not_slots_that_worked() {
    // The second look meets a 4x slowdown: a quarter of the calls a
    // second, each four times as long.
    let mut auto = Auto::default();
    let limits = replay(&mut auto, &A_LUCKY_FIRST_WINDOW);
    assert_eq!(limits, [4.0, 4.0, 4.0, 2.0], "a second look at 2 slots");
    let end = auto.next_limit(&recorded((2.0, 12, 4800.0, 800.0, 30.0)));
    assert!(!auto.in_startup(), "the startup ends");
    assert!(end <= 2.4 + 1e-9, "no growth into the slowdown: {end}");
}

#[test]
fn a_second_look_whose_slots_each_did_twice_the_work_is_not_slots_that_worked() {
    // 2 workers of 200 ms at 3x (`fifo-2x200ms-exp-10x`, seed 26): a
    // window at 4 slots read 22 calls a second (20 at most) and the limit
    // went to 16, whose calls queued 1.3 s inside the service. The look
    // back at 4 met the slowdown: 5.3 calls a second, fewer by more than
    // half the limit's fall, and calls of 0.96 s, not slower than the
    // queued ones; read as slots that worked, the limit went to 32.
    let mut auto = Auto::default();
    let limits = replay(
        &mut auto,
        &[(2.0, 12, 1105.0, 169.1, 2.0), (4.0, 12, 541.0, 181.9, 39.0)],
    );
    assert_eq!(limits, [4.0, 16.0]);
    let stalled = Window {
        finished: 26,
        arrived: 26,
        ..recorded((16.0, 16, 3070.0, 1334.2, 151.0))
    };
    assert_eq!(auto.next_limit(&stalled), 4.0, "a second look at 4 slots");
    let draining = Window {
        max_in_flight: 16,
        ..recorded((4.0, 12, 1065.0, 1383.0, 1154.0))
    };
    assert_eq!(auto.next_limit(&draining), 4.0, "not judged yet");
    // Each of the 4 slots completed 1.3 calls a second, 2.5 times the
    // stalled slots' 0.5: the slots above did nothing.
    let end = auto.next_limit(&recorded((4.0, 12, 2272.0, 958.9, 404.0)));
    assert!(!auto.in_startup(), "the startup ends");
    assert!(end <= 4.8 + 1e-9, "1.2 times the look's 4 slots: {end}");
}

/// A window recorded from a trace in full: `(limit, measured, finished,
/// elapsed_ms, latency_ms, shortest_ms, most in flight, waiting)`.
fn traced(
    (limit, completed, finished, elapsed_ms, latency_ms, shortest_ms, in_flight, waiting): (
        f64,
        u64,
        u64,
        f64,
        f64,
        f64,
        u64,
        bool,
    ),
) -> Window {
    Window {
        completed,
        finished,
        max_in_flight: in_flight,
        waiting,
        waiters: 0,
        ..recorded((limit, completed, elapsed_ms, latency_ms, shortest_ms))
    }
}

#[test]
fn a_slowdown_of_calls_of_one_length_is_never_learned_past_what_the_calls_took() {
    // 300 ps workers of 100 ms at 0.8 load (a pool size outside the
    // defaults grid): the cold start overshot to 512 slots and ended at
    // 314, and the window that drained the overshoot read 4,029 calls a
    // second (3,000 at most), which stood for the usual rate when every
    // call became four times slower. Scaled by that fall, the slowed
    // no-load latency read 808 ms for calls that took 419, every queue
    // read as none, and the limit grew to 1,571 slots.
    let mut auto = Auto::default();
    let rows = [
        (2.0, 12, 12, 602.0, 100.0, 100.0, 2, true),
        (4.0, 12, 12, 300.0, 100.0, 100.0, 4, true),
        (16.0, 16, 16, 100.0, 100.0, 100.0, 16, true),
        (32.0, 32, 32, 100.0, 100.0, 100.0, 32, true),
        (64.0, 32, 32, 100.0, 100.0, 100.0, 64, true),
        (64.0, 34, 34, 100.0, 100.0, 100.0, 64, true),
        (64.0, 64, 64, 100.0, 100.0, 100.0, 64, true),
        (128.0, 64, 64, 100.0, 100.0, 100.0, 128, true),
        (128.0, 128, 128, 100.0, 100.0, 100.0, 128, true),
        (256.0, 128, 128, 100.0, 100.0, 100.0, 256, true),
        (256.0, 256, 256, 100.0, 100.0, 100.0, 256, true),
        (512.0, 255, 255, 161.0, 100.243, 100.0, 512, true),
        (512.0, 385, 512, 146.0, 162.938, 146.0, 512, true),
    ];
    let limits: Vec<f64> = rows
        .into_iter()
        .map(|row| auto.next_limit(&traced(row)))
        .collect();
    let settled = *limits.last().unwrap();
    assert!(
        !auto.in_startup() && (300.0..330.0).contains(&settled),
        "{limits:?}"
    );
    // The drain, then the load below capacity, then the window the
    // slowdown began in and the first wholly slowed one.
    for row in [
        (settled, 529, 826, 205.0, 123.584, 100.0, 510, false),
        (settled, 64, 1341, 528.0, 100.0, 100.0, 297, false),
        (settled, 64, 4096, 1679.0, 100.0, 100.0, 267, false),
        (settled, 64, 4096, 1989.0, 119.688, 100.0, 314, true),
        (settled, 64, 174, 349.0, 418.984, 418.0, 314, true),
    ] {
        assert_eq!(
            auto.next_limit(&traced(row)),
            settled,
            "the slowed pool keeps its slots"
        );
    }
    let no_load = no_load_ms(&auto);
    assert!(
        (300.0..=419.0).contains(&no_load),
        "at most the slowed calls' 419 ms: {no_load}"
    );
    // The slowed pool from here on: 300 workers sharing calls of 400 ms.
    let limits = drive(&mut auto, settled, 20, |l| {
        let latency = 400.0 * (l / 300.0).max(1.0);
        let calls = (l.round() / latency * 1600.0) as u64;
        traced((
            l,
            calls,
            calls,
            1600.0,
            latency,
            latency,
            l.round() as u64,
            true,
        ))
    });
    assert!(limits.iter().all(|&l| l < 1.2 * settled), "{limits:?}");
}

/// A window of [`traced`] with its calls' spread (`cv`) and the calls
/// that came in it (`arrived`).
fn traced_spread(row: (f64, u64, u64, f64, f64, f64, u64, bool), cv: f64, arrived: u64) -> Window {
    Window {
        latency_cv: cv,
        arrived,
        ..traced(row)
    }
}

/// `ps-12x10ms-const` at 0.8 load, seed 0, to its slowdown: past a cold
/// start that read calls of one length of 10 ms, windows the load left
/// unfilled (960 calls a second) ran up to 12 calls at once, their
/// spread `steady_cv` (0 as traced); then, as traced, the window the 4x
/// slowdown began in and one wholly slowed, at the same 12.4 slots. The
/// limits chosen after the two slowed windows.
fn ps_12_slowed(steady_cv: f64) -> (Auto, [f64; 2]) {
    let mut auto = steady(0.010, 960.0, 960.0);
    auto.one_length_votes = (4, 0);
    // As traced: its rises from the product had found nothing, and the
    // next one waits.
    auto.idle_rises = 3;
    for _ in 0..4 {
        let unfilled = (12.4, 50, 96, 100.0, 10.0, 10.0, 12, false);
        assert_eq!(
            auto.next_limit(&traced_spread(unfilled, steady_cv, 96)),
            12.4
        );
    }
    let limits = slowed_limits(
        &mut auto,
        ((12.4, 50, 72, 185.0, 32.8, 10.0, 12, true), 0.4, 170),
        ((12.4, 50, 50, 162.0, 40.0, 40.0, 12, true), 0.0, 157),
    );
    (auto, limits)
}

/// A [`traced`] row with its calls' spread and arrivals (see
/// [`traced_spread`]).
type SpreadRow = ((f64, u64, u64, f64, f64, f64, u64, bool), f64, u64);

/// The limits `auto` chooses after the window a slowdown began in and
/// the first one wholly slowed.
fn slowed_limits(auto: &mut Auto, began_in: SpreadRow, slowed: SpreadRow) -> [f64; 2] {
    [began_in, slowed].map(|(row, cv, arrived)| auto.next_limit(&traced_spread(row, cv, arrived)))
}

#[test]
fn a_slowdown_of_calls_the_pool_ran_without_a_queue_is_read_from_their_latency() {
    // The throughput's fall below capacity is the load's rate over the
    // slowed pool's (3.11 here, 3.35 in the lab's trace, for 4): scaled
    // by it, the no-load latency read 33.5 ms for calls of 40 in the lab,
    // those calls then read as a queue, and the limit sat at 10.3 slots
    // for 12 workers. The pool was seen to run 12 calls at once at the
    // lowest latency they were read at; the slowed window held no more,
    // so its calls' 40 ms is the slowed no-load latency.
    let (mut auto, limits) = ps_12_slowed(0.0);
    assert_eq!(limits, [12.4, 12.4], "the slowed pool keeps its slots");
    assert!(
        (no_load_ms(&auto) - 40.0).abs() < 1e-9,
        "{}",
        no_load_ms(&auto)
    );
    let slowed = (12.4, 50, 50, 162.0, 40.0, 40.0, 12, true);
    let next = auto.next_limit(&traced_spread(slowed, 0.0, 157));
    assert!(next >= 12.0, "no shrink to a product of 10.3: {next}");
}

#[test]
fn a_slowdown_is_scaled_by_the_throughput_where_a_burst_met_a_queue() {
    // The same service, but its windows of 12 calls in flight spread
    // their latency by 1%: a burst past the pool slowed the calls it
    // met, so 12 at once is not known to run without a queue, and the
    // slowdown is scaled by the throughput's fall, never past the slowed
    // calls' own latency.
    let (auto, _) = ps_12_slowed(0.01);
    // 10 ms times the fall from 960 calls a second to the slowed
    // window's 50 in 162 ms.
    let scaled = 10.0 * 960.0 / (50.0 / 0.162);
    let no_load = no_load_ms(&auto);
    assert!(
        (no_load - scaled).abs() < 1e-6,
        "scaled to {scaled}, not read: {no_load}"
    );
}

/// Holdout `ps-300x100ms-const-5x` at 0.8 load, seed 18: 300
/// processor-sharing workers of 100 ms, seen to run 297 calls at once at
/// 100 ms, whose usual rate was read from the window that drained the
/// cold start's overshoot (3,770 calls a second, Little's bound of 512
/// slots at 136 ms; 3,000 at most). A 4x slowdown met the limit at 377
/// slots: the window it began in, then one wholly slowed, 377 calls
/// sharing the workers for 503 ms each. The limits chosen after the two.
fn ps_300_slowed_at_377() -> (Auto, [f64; 2]) {
    let mut auto = of_one_length(steady(0.100, 3770.0, 3770.0), 0.100, 297);
    let limits = slowed_limits(
        &mut auto,
        (
            (376.9, 64, 1705, 1431.0, 375.7, 100.0, 377, true),
            0.5,
            1949,
        ),
        ((376.9, 340, 340, 482.0, 503.0, 503.0, 377, true), 0.0, 1179),
    );
    (auto, limits)
}

#[test]
fn a_slowdown_met_past_the_pool_seen_is_read_at_that_pool() {
    // The throughput's fall scales past what the calls took, and 503 ms
    // read as the slowed no-load latency held the 377 slots, every call
    // past its clients' 500 ms. At the pool seen, the calls took 503 ms
    // times 297 over 377: 396 ms, and the 80 calls past it were queued.
    let (auto, limits) = ps_300_slowed_at_377();
    let no_load = no_load_ms(&auto);
    assert!(
        (no_load - 503.0 * 297.0 / 377.0).abs() < 1e-6,
        "read at the pool seen: {no_load}"
    );
    // The window the slowdown began in holds; the one that read it
    // brings the limit down to the pool seen at once.
    assert_eq!(limits, [376.9, 297.0]);
}

#[test]
fn a_slowdown_read_at_the_pool_seen_takes_its_first_window_without_a_queue() {
    // At 297 slots, no more than the pool was seen to run, the slowed
    // calls took 400 ms: no queue, so that is their no-load latency. Left
    // at 396 ms, every such window read about 3 of its 297 calls as
    // queued (400 ms against 396), the limit never rose to the 300
    // workers, and the stale probe those windows raised met the
    // recovery.
    let (mut auto, _) = ps_300_slowed_at_377();
    // The calls admitted at 377 slots drain first: still more in flight
    // than the pool seen, so nothing is read from that window.
    let draining = (297.0, 604, 604, 801.0, 412.4, 400.0, 377, true);
    auto.next_limit(&traced_spread(draining, 0.0, 1922));
    assert!(no_load_ms(&auto) < 400.0, "{}", no_load_ms(&auto));
    let at_pool = (297.0, 594, 594, 800.0, 400.0, 400.0, 297, true);
    let limit = auto.next_limit(&traced_spread(at_pool, 0.0, 1913));
    assert!(
        (no_load_ms(&auto) - 400.0).abs() < 1e-6,
        "read without a queue: {}",
        no_load_ms(&auto)
    );
    assert!(limit >= 297.0, "no queue, no shrink: {limit}");
}

#[test]
fn a_reading_at_the_pool_seen_is_not_confirmed_once_the_slowdown_is_over() {
    // Read at the pool seen, and the service back before any window ran
    // no more than it: the slowdown's record is gone, and a window of
    // 297 calls in flight that took 150 ms (a queue, if the pool seen
    // read more than the pool) is judged by the rules of any other.
    let (mut auto, _) = ps_300_slowed_at_377();
    auto.unslowed = None;
    auto.no_load = Some(0.100);
    let queued = (297.0, 594, 594, 300.0, 150.0, 150.0, 297, true);
    auto.next_limit(&traced_spread(queued, 0.0, 600));
    assert!(
        no_load_ms(&auto) < 150.0,
        "not read as the no-load latency: {}",
        no_load_ms(&auto)
    );
    assert!(
        !auto.read_at_seen_pool,
        "the reading went with the slowdown"
    );
}

/// The cold start of 64 ps workers of 50 ms of exponential length at 3x
/// (`ps-64x50ms-exp-10x`, seed 11), replayed to its end.
fn after_the_cold_start_of_64_workers_of_50ms() -> Auto {
    let mut auto = Auto::default();
    let limits = replay(
        &mut auto,
        &[
            (2.0, 12, 203.0, 32.6, 1.0),
            (4.0, 12, 146.0, 43.7, 1.0),
            (8.0, 12, 60.0, 27.0, 3.0),
            (32.0, 32, 46.0, 24.1, 0.0),
            (64.0, 56, 35.0, 23.7, 0.0),
            (256.0, 35, 36.0, 24.1, 4.0),
            (256.0, 41, 36.0, 49.3, 4.0),
            (256.0, 40, 36.0, 76.1, 0.0),
        ],
    );
    assert!(!auto.in_startup(), "the startup ended: {limits:?}");
    auto
}

#[test]
fn the_budgets_service_time_is_the_cold_starts_pooled_reading_not_its_luckiest() {
    // The first window's 12 calls at 2 slots came in 203 ms (Little: 34
    // ms), and the no-load latency kept that lowest reading. The rising
    // windows' pool read 42 ms, which is what the default budgets are
    // now multiples of.
    let auto = after_the_cold_start_of_64_workers_of_50ms();
    let no_load = no_load_ms(&auto);
    let service = auto.service_time().expect("a service time").as_secs_f64() * 1000.0;
    assert!(
        (33.0..35.0).contains(&no_load),
        "the lowest reading: {no_load}"
    );
    assert!(
        (41.0..=43.0).contains(&service),
        "the rising windows' pool: {service}"
    );
}

#[test]
fn a_restarted_startup_leaves_the_service_time_the_cold_start_read() {
    // The cold start of `ps-64x50ms` seed 11 read the calls' service
    // time at 1.24 times the no-load latency. A startup restarted
    // later from the steady state (a window at 0.9 of the no-load
    // latency, then one at 1.8 times it, the throughput flat: a queue)
    // pools windows of its own, at limits past the cold start's, whose
    // reading says nothing of the calls' length: the end of the cold
    // start set the service time, and that of a restarted startup leaves
    // it. It took the restarted windows' pool, capped by the cold start's
    // lowest reading, for the calls' service time: 43.6 ms here instead
    // of 41.8, and after a slowdown (a lowest reading from before it)
    // the no-load latency itself.
    let mut auto = after_the_cold_start_of_64_workers_of_50ms();
    let service = auto.service_time().expect("a service time");
    let no_load = no_load_ms(&auto);
    let limit = 80.0;
    let restart = auto.next_limit(&window(0.9 * no_load, limit, 128, true));
    assert!(auto.in_startup() && restart > limit, "restarted: {restart}");
    let settled = auto.next_limit(&window(1.8 * no_load, restart, 128, true));
    assert!(!auto.in_startup(), "ended on the queue: {settled}");
    assert_eq!(no_load_ms(&auto), no_load);
    assert_eq!(auto.service_time(), Some(service));
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
fn a_restarted_startup_whose_calls_queue_does_not_double_on_a_throughput_that_rose() {
    // `fifo-1000x200ms` at 3x with `--twice`, seed 1, after a cold start
    // that jumped to the demand (`docs/defaults.md`): the slowdown scaled
    // the no-load latency to 618 ms for slowed calls of 800, and a
    // window of calls of 643 ms at 926 slots restarted a startup. Its
    // window of 2.5 s at 1,158 slots read 1,258 calls a second (1,146
    // before), as if the throughput followed the limit, while the calls'
    // mean of 844 ms showed a queue inside: it doubled, and went on
    // doubling across the recovery to 9,262 slots.
    let mut auto = steady(0.618, 1150.0, 1150.0);
    let restarted = auto.next_limit(&recorded((926.0, 1418, 1237.0, 643.0, 1.0)));
    assert!(auto.in_startup(), "restarted at {restarted}");
    assert!((restarted - 1157.5).abs() < 1.0, "{restarted}");
    let queued = auto.next_limit(&recorded((restarted, 3111, 2472.0, 844.1, 4.0)));
    assert!(queued <= restarted, "{queued}");
    assert!(!auto.in_startup());
}

#[test]
fn a_restarted_startup_learns_a_no_load_latency_its_calls_show_stale() {
    // `fifo-16x10ms` at 3x with `--twice`, seed 3: after the recovery's
    // probe the no-load latency stood at 21.5 ms for calls of 10; a
    // window of 10.6 ms at 18 slots restarted a startup, whose window at
    // 22.5 slots read 12.1 ms. Both learn it down, 0.3 of the way each
    // (their calls waited for slots), as in the steady state.
    let mut auto = steady(0.0215, 1550.0, 1550.0);
    auto.next_limit(&recorded((18.0, 179, 100.0, 10.6, 0.0)));
    assert!(auto.in_startup());
    let after_restart = no_load_ms(&auto);
    assert!((after_restart - 18.23).abs() < 0.01, "{after_restart} ms");
    auto.next_limit(&recorded((22.5, 159, 87.0, 12.1, 0.0)));
    let learned = no_load_ms(&auto);
    assert!((learned - 16.39).abs() < 0.01, "{learned} ms");
}

/// A no-load latency many orders above a window's latency, learned with
/// a weight of 1, becomes that latency, not 0 (`d + (latency - d)`
/// cancels to 0 in floating point for 2.4e7 s and 1 ns).
#[test]
fn a_no_load_latency_learned_at_once_from_a_far_higher_one_is_the_windows() {
    let mut auto = Auto {
        no_load: Some(2.4e7),
        ..Auto::default()
    };
    auto.learn_no_load(1e-9, 1.0);
    assert_eq!(auto.no_load, Some(1e-9));
    auto.learn_no_load(2e-9, 0.5);
    let halfway = auto.no_load.expect("a no-load latency");
    assert!((halfway - 1.5e-9).abs() < 1e-18, "{halfway}");
}

#[test]
fn a_throughput_back_at_its_speed_before_the_slowdown_brings_back_the_no_load_latency() {
    // `fifo-1000x200ms` at 3x with `--twice`, seed 4, the cold start's
    // lowest reading kept near its pool: the slowdown scaled the no-load
    // latency from 200.2 ms, at 1,238 slots and 5,025 calls a second. The
    // recovery left it at 362.2 ms, the mean of slowed calls and fast,
    // and a window at 1,207 slots restarted a startup. Its window at
    // 1,509 slots read 4,765 calls a second, of 337.8 ms: no queue
    // against 362 ms, and the limit doubled to 3,018 for 1,000 workers.
    let mut auto = after_slowdown(0.3622, 4225.4, (0.2002, 5025.5, 1238.3));
    let restarted = auto.next_limit(&recorded((1207.3, 3300, 781.0, 362.2, 42.0)));
    assert!(auto.in_startup(), "{restarted}");
    assert!((restarted - 1509.1).abs() < 0.1, "{restarted}");
    // Back at the speed before the slowdown: the no-load latency is the
    // one from then, and the queue inside the service shows.
    let next = auto.next_limit(&recorded((restarted, 6905, 1449.0, 337.8, 44.0)));
    let no_load = no_load_ms(&auto);
    assert!((no_load - 200.2).abs() < 0.1, "{no_load} ms");
    assert!(next < restarted, "{next}");
}

#[test]
fn a_throughput_back_at_its_speed_is_not_scaled_by_the_queue_that_holds_its_slots_longer() {
    // `fifo-1000x200ms` at 3x with `--twice`, seed 3: the slowdown scaled
    // the no-load latency from 200.9 ms, at 1,496 slots and 5,010 calls a
    // second, and the recovery's restarted startup grew the limit to
    // 1,870. Its next window read 4,854 calls a second, of 401.6 ms:
    // back at the speed before. Scaled by how much longer a call a second
    // held a slot (1,870 slots for 4,854 calls against 1,496 for 5,010),
    // the queue inside the pool became 259.2 ms of no-load latency;
    // windows of 323-353 ms read as no queue against it, and the limit
    // grew to 2,045 slots for 1,000 workers.
    let mut auto = after_slowdown(0.4705, 3973.2, (0.2009, 5010.0, 1495.8));
    auto.next_limit(&recorded((1869.8, 9140, 1883.0, 401.6, 105.0)));
    let no_load = no_load_ms(&auto);
    assert!((no_load - 200.9).abs() < 0.1, "{no_load} ms");
    // The next window's queue, of 2,551 calls at 1,604 slots, shows.
    let next = auto.next_limit(&recorded((1604.4, 2551, 519.0, 323.1, 105.0)));
    assert!(next < 1604.4, "{next}");
}

#[test]
fn a_throughput_back_at_its_speed_scales_a_low_no_load_latency_up_to_the_calls_mean() {
    // `ps-16x10ms` at 3x, seed 25: 16 processor-sharing workers of 10 ms,
    // whose cold start read them at 6.7 ms (its lowest reading) and their
    // mean at 1.212 times that. Back at the speed before the slowdown,
    // 20.7 slots held a call a second 1.25 times as long as 16.6 did: the
    // calls' own mean over the lowest reading, which no queue adds to,
    // and past it 20.7 slots shared by 16 workers. Taken at 6.7 ms,
    // means of 9-11 ms read as a queue half the time and the limit sat
    // at 8-14 slots.
    let mut auto = after_slowdown(0.0151, 1360.0, (0.0067, 1566.2, 16.6));
    auto.mean_over_lowest = 1.212;
    auto.next_limit(&recorded((20.7, 102, 65.0, 12.5, 0.0)));
    let no_load = no_load_ms(&auto);
    assert!((no_load - 6.7 * 1.212).abs() < 0.05, "{no_load} ms");
    // More than that mean is the queue inside the pool.
    let mut auto = after_slowdown(0.0151, 1360.0, (0.0067, 1566.2, 16.6));
    auto.mean_over_lowest = 1.212;
    auto.next_limit(&recorded((33.2, 102, 65.0, 21.0, 0.0)));
    let no_load = no_load_ms(&auto);
    assert!((no_load - 6.7 * 1.212).abs() < 0.05, "{no_load} ms");
}

#[test]
fn a_recovery_split_by_a_restarted_startups_long_windows_ends_it() {
    // `fifo-1000x200ms` at 0.8x with `--twice`, seed 3: a startup
    // restarted in the slowdown, on a no-load latency of 795 ms, ran
    // windows of 3.2 s. The recovery came in the one at 1,529 slots,
    // which completed 1.2 times as many calls a slot as the window before
    // and doubled the limit; the next, wholly recovered, 1.24 times
    // (15,023 calls, of 632 ms), and doubled it again, to 6,115 slots.
    let mut auto = after_slowdown(0.795, 1273.0, (0.193, 3809.3, 1636.0));
    let restarted = auto.next_limit(&recorded((1223.0, 1731, 1590.0, 782.1, 153.0)));
    assert!(auto.in_startup(), "{restarted}");
    let split = auto.next_limit(&recorded((restarted, 6023, 3180.0, 803.4, 135.0)));
    assert!((split - 2.0 * restarted).abs() < 0.1, "{split}");
    // Each slot faster beyond the window's noise, calls below the no-load
    // latency: a recovery, which ends the startup at the limit.
    let recovered = recorded((split, 15023, 3180.0, 632.3, 129.0));
    assert_eq!(auto.next_limit(&recovered), split);
    assert!(!auto.in_startup());
    // Its mean, of slowed calls and fast, is not the no-load latency:
    // the throughput above the one before the slowdown (the load's)
    // brings back the one from then.
    let no_load = no_load_ms(&auto);
    assert!((no_load - 193.0).abs() < 0.1, "{no_load} ms");
    assert_eq!(auto.probe_limit(split), Some(1636.0));
}

#[test]
fn a_cold_starts_lucky_first_window_does_not_outlive_the_pool_that_read_the_calls() {
    // 1,000 workers of 100 ms calls of varying length: the first window's
    // 12 calls at 2 slots came in 480 ms, a rate that Little's law reads
    // as calls of 80 ms; every window after it reads them as they are
    // (a mean of 92 ms, the short calls of a rise completing first).
    let mut auto = Auto::default();
    let mut limit = auto.next_limit(&recorded((2.0, 12, 480.0, 85.0, 2.0)));
    let lucky = no_load_ms(&auto);
    assert!(lucky <= 80.0, "the first window reads low: {lucky} ms");
    while limit < 1000.0 {
        let calls = limit.max(12.0).round();
        let elapsed_ms = calls / limit * 100.0;
        limit = auto.next_limit(&recorded((limit, calls as u64, elapsed_ms, 92.0, 2.0)));
    }
    let kept = no_load_ms(&auto);
    assert!(
        kept > 88.0,
        "once the pool's windows followed their rise, the lowest reading stays within their noise: {lucky} ms then {kept} ms"
    );
}

/// 16 workers of calls of 10 ms on average whose windows' means scatter
/// around it (9.4 ms and 10.6 ms in turn), at `limit`, overloaded: below
/// the pool each slot completes a call each 10 ms; past it, the calls
/// queue inside.
fn scattered_pool(turn: &std::cell::Cell<u32>, limit: f64) -> Window {
    turn.set(turn.get() + 1);
    let scatter = if turn.get().is_multiple_of(2) {
        0.94
    } else {
        1.06
    };
    let w = pool(16.0, limit);
    Window {
        avg_latency: w.avg_latency.mul_f64(scatter),
        ..w
    }
}

#[test]
fn a_probe_below_the_pool_teaches_the_latency_its_windows_read_as_a_queue() {
    // A cold start read the calls at 6.5 ms (a lucky window of a dozen
    // calls of a heavy tail): against 1.5 times that, 9.75 ms, every
    // other window reads as a queue and shrinks the limit towards the
    // product, and the calm ones between start the stale count over, so
    // no stale probe comes. The periodic probe serves fewer calls a
    // second at its fewer slots, in proportion: it ran below the pool,
    // where no call queues, and the latency is the service's own.
    let mut auto = steady(0.0065, 1400.0, 1400.0);
    let turn = std::cell::Cell::new(0);
    let limits = drive(&mut auto, 14.0, 60, |l| scattered_pool(&turn, l));
    let no_load = no_load_ms(&auto);
    assert!(
        (9.0..=10.6).contains(&no_load),
        "the calls' own latency, not the lucky 6.5 ms: {no_load} ms, {limits:?}"
    );
    for &l in &limits[40..] {
        assert!(l >= 14.0, "no drift below the pool: {limits:?}");
    }
}

/// Runs a periodic probe of `auto` at its limit `limit`, the probe's
/// window `at(probe limit)`; `auto`'s no-load latency after it, in
/// milliseconds.
fn after_a_probe(auto: &mut Auto, limit: f64, at: impl FnOnce(f64) -> Window) -> f64 {
    auto.since_probe = auto.probe_every;
    let probe = auto.probe_limit(limit).expect("a periodic probe");
    auto.next_limit(&Window {
        probe: true,
        ..at(probe)
    });
    no_load_ms(auto)
}

#[test]
fn a_probe_below_the_pool_teaches_no_more_than_the_lowest_window_before_it() {
    // 64 processor-sharing workers of 50 ms, whose no-load latency was
    // read at 41.3 ms, at 76 slots: every call takes 59 ms, a queue
    // against 1.5 times 41.3 ms only now and then. The probe at 57 slots
    // still completes calls that shared the workers with 76 (69.5 ms) and
    // serves fewer calls a second: the service's own latency is at most
    // that of the lowest window before it (49.5 ms), not the probe's.
    let mut auto = steady(0.0413, 1300.0, 1300.0);
    auto.next_limit(&window(49.5, 76.0, 130, true));
    auto.next_limit(&window(59.0, 76.0, 128, true));
    let no_load = after_a_probe(&mut auto, 76.0, |probe| window(69.5, probe, 110, true));
    assert!((no_load - 49.5).abs() < 1e-6, "{no_load} ms");
}

#[test]
fn a_probe_whose_throughput_fell_by_less_than_half_its_cut_teaches_nothing() {
    // The same pool at 107 slots, probed at 80: still above the 64
    // workers, it serves as many calls a second, less its noise. 1,140
    // of the usual 1,300 is fewer by more than a standard error of its
    // 114 calls, but not by half the probe's cut (a probe below the pool
    // serves 0.75 of the usual): the 41.3 ms stay.
    let mut auto = steady(0.0413, 1300.0, 1300.0);
    auto.next_limit(&window(54.6, 107.0, 130, true));
    let no_load = after_a_probe(&mut auto, 107.0, |probe| window(83.0, probe, 114, true));
    assert!((no_load - 41.3).abs() < 1e-6, "{no_load} ms");
}

/// [`steady`] for 4 workers of calls of 1 ms read at 0.8 ms, after
/// windows of 64 calls whose latency's coefficient of variation was `cv`.
fn four_workers_of_spread(cv: f64) -> Auto {
    let mut auto = steady(0.0008, 3200.0, 3200.0);
    for _ in 0..16 {
        auto.next_limit(&Window {
            latency_cv: cv,
            ..window(0.9, 4.0, 64, false)
        });
    }
    auto
}

/// A probe at 3 of `auto`'s 4 slots whose 24 calls took `latency_ms` on
/// average; `auto`'s no-load latency after it, in milliseconds.
fn after_a_probe_of_24_calls(mut auto: Auto, latency_ms: f64) -> f64 {
    after_a_probe(&mut auto, 4.0, |probe| Window {
        finished: 300,
        ..window(latency_ms, probe, 24, true)
    })
}

#[test]
fn a_probe_teaches_a_lower_latency_only_beyond_the_noise_of_the_calls_spread() {
    // 24 calls read their mean within about a fifth (for calls of
    // exponential length): a probe's mean of 0.5 ms for calls read at 0.8
    // is noise, one of 0.42 ms is not.
    let exponential = four_workers_of_spread(1.0);
    assert!((after_a_probe_of_24_calls(exponential.clone(), 0.5) - 0.8).abs() < 1e-9);
    assert!((after_a_probe_of_24_calls(exponential, 0.42) - 0.42).abs() < 1e-9);
    // Calls of a heavy tail (a coefficient of variation of 1.31, σ 1
    // lognormal) read theirs within about a quarter: 0.42 ms is noise
    // too. Less spread calls keep the allowance of exponential ones.
    let heavy = four_workers_of_spread(1.31);
    assert!((after_a_probe_of_24_calls(heavy, 0.42) - 0.8).abs() < 1e-9);
    let narrow = four_workers_of_spread(0.3);
    assert!((after_a_probe_of_24_calls(narrow, 0.42) - 0.42).abs() < 1e-9);
}

#[test]
fn the_calls_spread_is_pooled_over_about_the_last_thousand_calls() {
    let spread_after = |windows: &[(f64, u64)]| {
        let mut spread = Spread::default();
        for &(cv, calls) in windows {
            spread.add(&Window {
                latency_cv: cv,
                ..window(10.0, 16.0, calls, true)
            });
        }
        spread.factor()
    };
    // Weighted by their calls: a window of 64 calls at 3 moves a thousand
    // at 1.31 by a little, not to 3.
    let heavy = spread_after(&[(1.31, 1024), (3.0, 64)]);
    assert!((1.31..1.6).contains(&heavy), "{heavy}");
    // A spread of the past fades: a few thousand calls later, the new
    // one (a thousand later, it still weighs about a third).
    let mut windows = vec![(3.0, 1024)];
    windows.extend([(1.31, 64); 16]);
    let soon = spread_after(&windows);
    assert!((1.9..2.3).contains(&soon), "{soon}");
    windows.extend([(1.31, 64); 48]);
    let later = spread_after(&windows);
    assert!((1.31..1.4).contains(&later), "{later}");
    // Never below the allowance of calls of exponential length, and a
    // window of one call has no spread to add.
    assert_eq!(spread_after(&[(0.2, 1024)]), 1.0);
    assert_eq!(spread_after(&[(5.0, 1)]), 1.0);
}

#[test]
fn a_service_back_at_its_speed_rises_from_the_product_at_once() {
    // `ps-40x5ms-const` at 0.8 load (6,400 calls a second), seed 1: in
    // the slowdown to 20 ms, rises from the product that found nothing
    // had made the next one wait four times `probe_every` windows. The
    // first window back at speed, of slowed calls and fast, read as a
    // queue and brought the limit down to 25 slots, where calls of 5 ms
    // read none at 5,000 calls a second while more waited: three seconds
    // at 78% of the load before the next rise.
    let mut auto = after_slowdown(0.020, 2000.0, (0.005, 4800.0, 33.5));
    auto.one_length_votes = (4, 0);
    auto.idle_rises = 3;
    // The recovery came in the window after a restarted startup ended,
    // which starts the usual rate over.
    auto.binding_rate.reset(None);
    let back = Window {
        min_latency: Duration::from_millis(5),
        ..window(8.46, 40.4, 508, true)
    };
    let limit = auto.next_limit(&back);
    assert!(limit < 30.0, "brought down by the mixed window: {limit}");
    assert_eq!(no_load_ms(&auto), 5.0, "the speed before the slowdown");
    let at_speed = |limit: f64| Window {
        min_latency: Duration::from_millis(5),
        ..window(5.0, limit, (limit.round() * 20.0) as u64, true)
    };
    let next = auto.next_limit(&at_speed(limit));
    assert!(next > limit, "rises at once from {limit}: {next}");
}

#[test]
fn calls_at_a_no_load_latency_learned_high_are_not_counted_as_run_without_a_queue() {
    // 400 processor-sharing workers of 100 ms at 3x: the cold start ran
    // 400 calls at once at 100 ms, then the limit settled at 416 slots,
    // where every call takes 104 ms, and the no-load latency was learned
    // there. Judged against it, 416 calls at once read as run without a
    // queue, and a slowdown met at 416 slots as the slowed calls' own
    // latency.
    let mut auto = steady(0.100, 4000.0, 4000.0);
    auto.one_length_votes = (4, 0);
    let at = |limit: f64, latency_ms: f64| Window {
        latency_cv: 0.0,
        min_latency: Duration::from_secs_f64(latency_ms / 1000.0),
        max_in_flight: limit as u64,
        ..window(latency_ms, limit, 400, true)
    };
    auto.next_limit(&at(400.0, 100.0));
    auto.no_load = Some(0.104);
    auto.next_limit(&at(416.0, 104.0));
    let slowed = at(416.0, 416.0);
    assert!(
        !auto.ran_unqueued(&slowed, 0.416),
        "416 calls on 400 workers queue"
    );
    assert!(auto.ran_unqueued(&at(400.0, 400.0), 0.400));
}

/// A window of `calls` calls of one length of `latency_ms` each in
/// `elapsed_ms`, at `limit` slots, all of them in flight, while calls
/// waited for slots.
fn recorded_of_one_length(limit: f64, latency_ms: f64, calls: u64, elapsed_ms: f64) -> Window {
    Window {
        latency_cv: 0.0,
        min_latency: Duration::from_secs_f64(latency_ms / 1000.0),
        max_in_flight: limit.round() as u64,
        elapsed: Duration::from_secs_f64(elapsed_ms / 1000.0),
        ..window(latency_ms, limit, calls, true)
    }
}

/// `auto` once its cold start read calls of one length, the lowest mean
/// of a window of them `floor` seconds, and `unqueued` of them seen
/// running at once without a queue.
fn of_one_length(mut auto: Auto, floor: f64, unqueued: u64) -> Auto {
    auto.one_length_votes = (4, 0);
    auto.one_length_floor = floor;
    auto.unqueued_in_flight = unqueued;
    auto
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

#[test]
fn the_pool_a_queue_reads_is_never_fewer_than_ran_without_one() {
    // `ps-2x200ms-const` at 0.8 load, seed 1: the slowdown to 800 ms met
    // a rise to 3 slots, and its first slowed window, 3 calls sharing the
    // 2 workers for 1.2 s each, came before the throughput fell by
    // enough to read as a slowdown. By Little, half a call ran without
    // a queue; the 2 workers had been seen running 2 calls at once
    // without one.
    let mut auto = of_one_length(steady(0.200, 4.0, 10.0), 0.200, 2);
    let limit = auto.next_limit(&recorded_of_one_length(3.0, 1200.0, 3, 1200.0));
    assert_eq!(limit, 2.0, "the 2 workers");
}

#[test]
fn a_queue_read_while_the_throughput_is_down_is_not_the_pool() {
    // A real service's calls of one length vary by a few percent, so no
    // window counted toward the calls run at once without a queue. Its 2
    // workers of 200 ms slowed to 800 ms: the first slowed window, 2
    // calls at 2.5 a second against the usual 10, reads as a queue of a
    // call and a half, but the throughput fell with it, which a queue
    // does not do. Read as the pool, half a slot took the limit to 1.
    let mut auto = of_one_length(steady(0.200, 10.0, 10.0), 0.200, 0);
    let limit = auto.next_limit(&recorded_of_one_length(2.0, 800.0, 2, 800.0));
    assert_eq!(auto.queue_read_pool, None, "no pool read in a slowdown");
    assert_eq!(limit, 2.0, "the limit holds for the slowdown to show");
}

#[test]
fn a_recovery_of_calls_of_one_length_takes_back_the_no_load_latency_from_before_the_slowdown() {
    // Holdout `ps-48x50ms-const` at 3x, with `--twice`: after the first
    // recovery, windows above the pool, whose calls shared the 48
    // workers, taught a no-load latency of 58.9 ms for calls of 50. Within
    // the tolerance of the 50 ms from before the slowdown, it read as
    // learned back, and the record of the slowdown went with it: calls
    // of 61 ms at 57.9 slots, at the throughput from before, left it
    // there, and a limit the stale latency reads no queue at met the
    // next slowdown.
    let before = (0.050, 960.0, 48.0);
    let mut auto = of_one_length(after_slowdown(0.0589, 950.0, before), 0.050, 48);
    auto.next_limit(&recorded_of_one_length(57.9, 61.0, 116, 122.0));
    assert_eq!(no_load_ms(&auto), 50.0, "the no-load latency from before");
}

/// Calls of two lengths (a cache's hits and misses) whose cold start read
/// the hits alone keep a no-load latency of their pooled mean over the
/// headroom at least, so that the product is never below the concurrency
/// they hold at their throughput; calls of one length's noise (lognormal,
/// a spread of 1.31) keep the lowest reading.
#[test]
fn calls_of_two_lengths_keep_a_no_load_latency_near_their_mean() {
    // `fifo-64x5ms-mix` (`grid --mixed`): the cold start's 10 ms windows
    // read the hits alone, 0.8 ms, for calls of 5 ms on average.
    let read_after = |cv: f64| {
        let mut auto = steady(0.0008, 10_000.0, 10_000.0);
        for _ in 0..10 {
            auto.next_limit(&Window {
                latency_cv: cv,
                ..window(5.0, 60.0, 1_000, false)
            });
        }
        no_load_ms(&auto)
    };
    let floor = 5.0 / Auto::default().headroom;
    let two_lengths = read_after(3.7);
    assert!(
        two_lengths >= 0.99 * floor,
        "{two_lengths} ms, at least the mean over the headroom ({floor} ms)"
    );
    let one_length_noise = read_after(1.31);
    assert!(
        one_length_noise < 1.0,
        "the lowest reading kept: {one_length_noise} ms"
    );
}

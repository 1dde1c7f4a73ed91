//! Slowdowns and recoveries: every call slower or faster, told from a queue
//! by the throughput.

use super::*;

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
    settled_below_capacity_with(auto, |w| w)
}

/// [`settled_below_capacity`], with `load` applied to the pool's windows.
fn settled_below_capacity_with(auto: &mut Auto, load: impl Fn(Window) -> Window) -> f64 {
    let before = *drive(auto, 2.0, 40, |l| load(pool(20.0, l)))
        .last()
        .unwrap();
    let short = a_slot_short(load(pool(20.0, before)));
    assert_eq!(auto.next_limit(&short), before);
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
fn a_slowdown_held_at_a_cut_limit_holds_while_every_call_is_slower() {
    // A held slowdown's throughput is counted per slot of the limit
    // before it (see `a_held_slowdown_counts_the_throughput_per_slot_of_the_limit_before_it`),
    // and a pool still four times slower at a third of that limit reads
    // as slowed all the same.
    let mut auto = Auto::default();
    let (_, held, _) = slowed_after(&mut auto, spread);
    let cut = held / 3.0;
    let slowed = spread(four_times_slower(pool(20.0, cut)));
    for _ in 0..3 {
        assert_eq!(auto.next_limit(&slowed), cut, "still a slowdown");
    }
    assert!(auto.slowed_after_overload().is_some());
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
        auto.rates.all.push(rate);
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
        auto.rates.all.push(rate);
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
    // slowdown began in and the first two wholly slowed ones. (Counted
    // per call in flight against the drain's, whose 510 calls count as
    // its bandwidth-delay product of 403, the window it began in read
    // 0.66 of the drain's rate, not below 0.6: the slowdown shows in the
    // two after it.)
    for row in [
        (settled, 529, 826, 205.0, 123.584, 100.0, 510, false),
        (settled, 64, 1341, 528.0, 100.0, 100.0, 297, false),
        (settled, 64, 4096, 1679.0, 100.0, 100.0, 267, false),
        (settled, 64, 4096, 1989.0, 119.688, 100.0, 314, true),
        (settled, 64, 174, 349.0, 418.984, 418.0, 314, true),
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

/// Window `w` of calls of two lengths, a cache's hits and misses (a
/// coefficient of variation of 3.7), overloaded (see [`overloaded`]).
fn of_two_lengths(w: Window) -> Window {
    Window {
        latency_cv: 3.7,
        ..overloaded(w)
    }
}

/// A pool of 20 workers settled below capacity (`load` applied to its
/// windows), slowed four times, and the startup that a slowed window
/// reading no queue restarts: `auto`, the limit that window ran at, and
/// the one the startup restarted at.
fn restarted_in_a_slowdown(load: impl Fn(Window) -> Window) -> (Auto, f64, f64) {
    let mut auto = Auto::default();
    let before = settled_below_capacity_with(&mut auto, &load);
    let (held, no_load) = slow_down(&mut auto, before, &load);
    let restarted = restarted_by(
        &mut auto,
        Window {
            avg_latency: no_load,
            ..load(four_times_slower(pool(20.0, held)))
        },
    );
    (auto, held, restarted)
}

/// The limit `auto` restarts its startup at on `unqueued`, a window at
/// its limit that reads no queue while calls wait for slots.
fn restarted_by(auto: &mut Auto, unqueued: Window) -> f64 {
    let restarted = auto.next_limit(&unqueued);
    assert!(
        auto.in_startup() && restarted > unqueued.limit,
        "{} -> {restarted}",
        unqueued.limit
    );
    restarted
}

/// The limit after a window of the startup of `auto` restarted from
/// `held` slots to `limit` whose throughput followed the rise: each slot
/// completes as many slowed calls as at `held`, with no queue (`load`
/// applied).
fn after_a_slowed_rise(
    auto: &mut Auto,
    (held, limit): (f64, f64),
    load: impl Fn(Window) -> Window,
) -> f64 {
    let workers = 20.0 * limit / held.max(20.0);
    let followed = Window {
        avg_latency: auto.no_load_latency().unwrap(),
        ..load(four_times_slower(pool(workers, limit)))
    };
    auto.next_limit(&followed)
}

#[test]
fn a_startup_restarted_in_a_slowdown_of_calls_of_two_lengths_waits_and_grows_as_the_steady_state() {
    // `ps-16x10ms-mix` at 0.8x, seed 3: windows of four slowed round
    // trips read the short calls' rate, and the limit doubled past the
    // slowed pool, to 158 slots for 16 workers (see
    // `Auto::slowed_with_two_lengths`). (Calls of two lengths settle far
    // past the 20 workers here, at 127 slots: the pool's queue raises the
    // pooled mean that the no-load latency is kept near, the floor's
    // blindness `docs/defaults.md` names.)
    let (mut auto, held, limit) = restarted_in_a_slowdown(of_two_lengths);
    assert_eq!(auto.startup_round_trips(), 2 * RESTARTED_ROUND_TRIPS);
    let grown = after_a_slowed_rise(&mut auto, (held, limit), of_two_lengths);
    assert!(auto.in_startup(), "still rising");
    assert!(
        (grown - limit * auto.growth).abs() < 1e-9,
        "{limit} -> {grown}"
    );
    // Calls of exponential length read their rate from four round trips,
    // and double.
    let (mut auto, held, limit) = restarted_in_a_slowdown(overloaded);
    assert_eq!(auto.startup_round_trips(), RESTARTED_ROUND_TRIPS);
    let grown = after_a_slowed_rise(&mut auto, (held, limit), overloaded);
    assert!(
        (grown - limit * auto.startup_gain).abs() < 1e-9,
        "{limit} -> {grown}"
    );
    // And so do calls of two lengths at the service's own speed.
    let mut auto = Auto::default();
    let before = settled_below_capacity_with(&mut auto, of_two_lengths);
    let unqueued = Window {
        avg_latency: auto.no_load_latency().unwrap(),
        ..of_two_lengths(pool(20.0, before))
    };
    restarted_by(&mut auto, unqueued);
    assert_eq!(auto.startup_round_trips(), RESTARTED_ROUND_TRIPS);
}

/// `fifo-100x20ms-mix` at 0.8 load, seed 22, as traced: 100 workers
/// serving nine calls in ten of 3.4 ms and one of 170 (a mean of 20
/// ms). The cold start's windows, a round trip of its first calls long,
/// completed the short calls while the long ones held their slots, and
/// read up to 6,800 calls a second for a pool of 5,000; the startup
/// ended at 47 slots, and the first two windows after it, 100 ms long,
/// read 1,337 and 2,370 calls a second with their long calls in.
const A_COLD_START_OF_TWO_LENGTHS: [SpreadRow; 14] = [
    ((2.0, 12, 12, 36.0, 2.8, 0.0, 2, true), 1.0, 118),
    ((4.0, 12, 12, 25.0, 7.8, 0.0, 4, true), 1.8, 89),
    ((8.0, 18, 18, 10.0, 3.6, 0.0, 8, true), 1.0, 31),
    ((32.0, 56, 68, 10.0, 3.2, 0.0, 32, true), 1.8, 29),
    ((32.0, 32, 125, 35.0, 5.8, 0.0, 32, true), 0.9, 45),
    ((32.0, 32, 32, 16.0, 3.5, 0.0, 32, true), 1.2, 69),
    ((32.0, 32, 33, 14.0, 7.3, 0.0, 32, true), 2.0, 58),
    ((64.0, 51, 67, 10.0, 3.5, 0.0, 64, false), 1.5, 8),
    ((64.0, 32, 266, 73.0, 11.4, 0.0, 64, true), 2.6, 44),
    ((64.0, 32, 33, 13.0, 2.9, 0.0, 64, true), 1.1, 59),
    ((64.0, 32, 35, 11.0, 6.8, 0.0, 64, true), 2.6, 43),
    ((64.0, 32, 35, 11.0, 7.0, 0.0, 64, true), 2.8, 53),
    ((47.1, 126, 135, 101.0, 13.4, 0.0, 64, true), 2.6, 397),
    ((47.1, 230, 237, 100.0, 15.1, 0.0, 47, true), 3.3, 354),
];

#[test]
fn a_cold_start_of_calls_of_two_lengths_is_no_rate_a_slowdown_is_judged_against() {
    // Judged against the cold start's 6,800 calls a second, the two
    // windows after it read as a slowdown: the limit held at 47 slots for
    // the whole run (16 s), every rise refused while a load of 0.8 of
    // the pool waited, and 57.7% of its calls were served in time.
    let mut auto = Auto::default();
    let limits: Vec<f64> = A_COLD_START_OF_TWO_LENGTHS
        .iter()
        .map(|&(row, cv, arrived)| auto.next_limit(&traced_spread(row, cv, arrived)))
        .collect();
    assert!(!auto.in_startup(), "{limits:?}");
    assert!(
        auto.spread.of_pooled_calls() > TWO_LENGTHS,
        "calls of two lengths: {}",
        auto.spread.of_pooled_calls()
    );
    assert!(auto.unslowed.is_none(), "no slowdown: {limits:?}");
    // The pool as it is from here on: 100 workers of calls of 20 ms at
    // the limit, whose mean shows no queue against the floor of the
    // pooled mean, while the load waits for slots.
    let at = *limits.last().unwrap();
    let limits = drive(&mut auto, at, 10, |l| {
        let calls = (l.min(100.0) / 0.020 * 0.1) as u64;
        traced_spread(
            (l, calls, calls, 100.0, 17.0, 0.0, l as u64, true),
            3.7,
            2 * calls,
        )
    });
    assert!(
        limits.last().unwrap() > &(1.2 * at),
        "the limit grows from {at}: {limits:?}"
    );
}

#[test]
fn a_throughput_that_fell_with_the_calls_in_flight_is_no_slowdown() {
    // `ps-64x50ms-mix` at 0.8 load, seed 31: the cold start ended by
    // cutting 32 slots to 14, and the windows at 14 read 446 calls a
    // second against the load's 1,038 before the cut, with means that
    // read as a queue (calls of two lengths): taken for a slowdown, the
    // limit held at 14 slots for 15 s, and a fifth of the calls were
    // served in time. Here: 20 workers of 10 ms settled under an
    // overload, then two windows at a third of the limit whose calls'
    // mean reads 1.7 times the no-load latency.
    let mut auto = Auto::default();
    let before = *drive(&mut auto, 4.0, 40, |l| pool(20.0, l)).last().unwrap();
    let no_load = auto.no_load_latency().unwrap();
    let cut = (before / 3.0).round();
    let fewer = Window {
        avg_latency: no_load.mul_f64(1.7),
        ..pool(20.0, cut)
    };
    auto.next_limit(&fewer);
    auto.next_limit(&fewer);
    assert!(auto.unslowed.is_none(), "{before} slots cut to {cut}");
    assert_eq!(auto.no_load_latency(), Some(no_load), "not scaled");
    // As many calls in flight as before, the same fall is a slowdown.
    let mut auto = Auto::default();
    let before = *drive(&mut auto, 4.0, 40, |l| pool(20.0, l)).last().unwrap();
    let slowed = Window {
        avg_latency: no_load.mul_f64(1.7),
        finished: pool(20.0, cut).finished,
        ..pool(20.0, before)
    };
    auto.next_limit(&slowed);
    auto.next_limit(&slowed);
    assert!(auto.unslowed.is_some(), "at {before} slots");
}

/// `ps-64x50ms-mix` at 3x, seed 30, as traced to 3.8 s: a cold start that
/// ended at 64 slots for 64 processor-sharing workers of 50 ms (calls of
/// two lengths), windows right after it that read up to 2,390 calls a
/// second for a pool of 1,280, a slowdown read at 46 slots against them,
/// then a far queue's cut to 20.
const A_SLOWDOWN_THAT_WAS_NOT_HELD_AT_A_CUT: [SpreadRow; 32] = [
    ((2.0, 12, 12, 79.0, 11.8, 1.0, 2, true), 0.8, 293),
    ((4.0, 12, 12, 32.0, 7.8, 1.0, 4, true), 0.9, 135),
    ((16.0, 22, 22, 12.0, 4.9, 0.0, 16, true), 1.0, 46),
    ((32.0, 32, 32, 11.0, 6.3, 0.0, 32, true), 0.8, 46),
    ((64.0, 69, 69, 11.0, 5.7, 0.0, 64, true), 0.9, 56),
    ((64.0, 61, 61, 11.0, 7.5, 0.0, 64, true), 0.9, 43),
    ((64.0, 32, 52, 14.0, 15.5, 1.0, 64, false), 0.6, 5),
    ((64.0, 32, 136, 37.0, 11.7, 0.0, 64, false), 1.1, 31),
    ((64.0, 32, 61, 24.0, 8.1, 0.0, 64, true), 1.0, 65),
    ((64.0, 32, 34, 11.0, 5.6, 0.0, 64, true), 1.2, 40),
    ((64.0, 32, 32, 12.0, 6.8, 0.0, 64, true), 0.9, 39),
    ((76.8, 233, 239, 100.0, 15.7, 0.0, 77, true), 1.8, 394),
    ((76.8, 183, 184, 101.0, 15.4, 0.0, 77, true), 1.6, 357),
    ((81.6, 138, 141, 101.0, 21.3, 0.0, 82, true), 1.8, 374),
    ((78.2, 137, 138, 100.0, 28.1, 0.0, 82, true), 2.7, 357),
    ((69.1, 135, 135, 101.0, 42.1, 0.0, 78, true), 2.6, 332),
    ((46.3, 64, 66, 193.0, 165.4, 0.0, 69, true), 1.5, 760),
    ((46.3, 89, 90, 101.0, 42.1, 0.0, 46, true), 3.7, 371),
    ((40.1, 67, 68, 100.0, 84.8, 0.0, 46, true), 2.5, 373),
    ((20.1, 64, 67, 404.0, 150.2, 0.0, 40, true), 1.9, 1629),
    ((20.1, 64, 64, 259.0, 75.1, 0.0, 20, true), 3.6, 977),
    ((20.1, 77, 77, 136.0, 90.0, 1.0, 20, true), 3.5, 543),
    ((20.1, 64, 64, 361.0, 109.0, 0.0, 20, true), 3.1, 1347),
    ((20.1, 64, 64, 258.0, 105.0, 0.0, 20, true), 3.0, 1027),
    ((20.1, 82, 82, 197.0, 66.3, 0.0, 20, true), 4.0, 730),
    ((20.1, 78, 78, 133.0, 46.8, 0.0, 20, true), 2.7, 481),
    ((20.1, 64, 64, 193.0, 48.8, 0.0, 20, true), 3.7, 757),
    ((20.1, 64, 64, 153.0, 42.1, 0.0, 20, true), 4.1, 556),
    ((20.1, 67, 67, 135.0, 38.1, 0.0, 20, true), 3.5, 562),
    ((20.1, 64, 64, 133.0, 50.8, 0.0, 20, true), 2.9, 488),
    ((20.1, 80, 80, 136.0, 35.5, 0.0, 20, true), 3.5, 520),
    ((20.1, 64, 64, 175.0, 36.2, 0.0, 20, true), 3.3, 649),
];

#[test]
fn a_held_slowdown_counts_the_throughput_per_slot_of_the_limit_before_it() {
    // At 20 slots the pool served 165-612 calls a second against the
    // 1,600 before the slowdown, never 0.6 of it: the limit held at 20
    // for 14 s, and 27% of the capacity was served in time. Per slot of
    // the limit before (46), some windows read as the service's own
    // speed, and the limit grows from the cut.
    let mut auto = Auto::default();
    let limits: Vec<f64> = A_SLOWDOWN_THAT_WAS_NOT_HELD_AT_A_CUT
        .iter()
        .map(|&(row, cv, arrived)| auto.next_limit(&traced_spread(row, cv, arrived)))
        .collect();
    let cut = 20.1;
    assert!(
        auto.unslowed.is_some_and(|before| before.limit > 2.0 * cut),
        "a slowdown read above the cut: {limits:?}"
    );
    assert!(
        limits[19..].iter().any(|&l| l > 1.2 * cut),
        "held at the cut: {limits:?}"
    );
}

#[test]
fn a_slowdown_read_while_another_is_remembered_is_scaled_from_the_speed_before_the_first() {
    let mut auto = Auto::default();
    let before = *drive(&mut auto, 4.0, 40, |l| pool(20.0, l)).last().unwrap();
    let unslowed_ms = no_load_ms(&auto);
    let (after, slowed) = slow_down(&mut auto, before, |w| w);
    // Lifted since the first reading, as a recovery's window of slowed
    // calls and fast ones, or the floor of calls of two lengths, lifts it.
    auto.no_load = Some(2.0 * slowed.as_secs_f64());
    // Every call four times slower again: sixteen times the first speed,
    // the same pool, and the throughput a sixteenth of the first.
    let sixteen_times_slower = |limit: f64| {
        let w = pool(20.0, limit);
        Window {
            avg_latency: w.avg_latency * 16,
            elapsed: w.elapsed * 4,
            finished: w.finished / 4,
            completed: w.completed / 4,
            ..w
        }
    };
    auto.next_limit(&sixteen_times_slower(after));
    auto.next_limit(&sixteen_times_slower(after));
    let learned = no_load_ms(&auto);
    // Scaled from the lifted latency by the fall since the first reading,
    // it would read twice the slowed calls' latency (320 ms).
    assert!(
        learned <= 1.01 * 16.0 * unslowed_ms,
        "{learned} ms, at most sixteen times the {unslowed_ms} ms before the first slowdown"
    );
    assert!(
        learned >= 0.99 * 16.0 * unslowed_ms,
        "{learned} ms: the second slowdown is still learned"
    );
}

#[test]
fn a_restarted_startup_stops_at_the_limit_held_before_the_cut() {
    // `--tails` `fifo-1000x200ms-logn` at 3x, seed 1: 1,000 workers of
    // 200 ms of lognormal length, held at 1,170-1,491 slots before their
    // slowdown and at 1,065 in it. The recovery restarted the startup,
    // which rose to 1,331 slots and read the throughput following (4,507
    // calls a second for 3,600 at 1,065); it doubled to 2,662, and calls
    // queued inside the pool for over a second.
    let restarted = |steady_high| {
        let mut auto = Auto {
            startup: true,
            restarted: true,
            no_load: Some(0.2955),
            startup_last: Some((1064.8, 3599.5)),
            steady_high,
            ..Auto::default()
        };
        auto.startup_pool.add(&Window {
            elapsed: Duration::from_millis(1116),
            ..spread(window(344.5, 1064.8, 4017, true))
        });
        auto
    };
    let at_1331 = Window {
        elapsed: Duration::from_millis(1378),
        min_latency: Duration::from_millis(25),
        latency_cv: 1.4,
        ..overloaded(window(312.9, 1331.1, 6210, true))
    };
    let mut auto = restarted(Some(1491.1));
    assert_eq!(auto.next_limit(&at_1331), 1491.1, "stops at the limit held");
    let mut auto = restarted(None);
    assert!(
        auto.next_limit(&at_1331) > 2600.0,
        "with no limit held since the last startup, it doubles"
    );
}

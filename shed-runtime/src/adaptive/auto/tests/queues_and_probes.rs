//! The steady state: a queue shrinks the limit, an unused one comes down,
//! probes look below it, each within the readings' noise.

use super::*;

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

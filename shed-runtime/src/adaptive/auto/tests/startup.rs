//! The cold start and the restarted startup: how the limit grows, and when
//! it stops.

use super::*;

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

/// A window recorded from a trace (see [`recorded`]), with its calls'
/// spread, the calls waiting at its close and those that came to wait.
type CrowdedRow = ((f64, u64, f64, f64, f64), f64, u64, u64);

/// The cold start of seed 10 of `grid --mixed`'s `ps-64x50ms-mix` at
/// 0.8x (64 processor-sharing workers of a cache's hits and misses, 50 ms
/// on average): windows of the hits alone at 2 and 4 slots, the stall at
/// 4 with 61 calls waiting (under [`CROWD`]), and the second look at 2,
/// which the misses held for 833 ms while 199 calls came to wait.
const A_SECOND_LOOK_IN_A_CROWD: [CrowdedRow; 5] = [
    ((2.0, 12, 108.0, 9.3, 0.0), 0.8, 50, 130),
    ((4.0, 12, 113.0, 11.3, 1.0), 0.6, 53, 97),
    ((4.0, 12, 110.0, 9.2, 0.0), 1.0, 63, 107),
    ((4.0, 12, 102.0, 27.8, 1.0), 2.5, 61, 101),
    ((2.0, 12, 833.0, 213.1, 1.0), 1.7, 199, 850),
];

/// Replays `rows` on `auto`, with at most `most_waiting` calls waiting
/// at each close; the limits it chose.
fn replay_crowded(auto: &mut Auto, rows: &[CrowdedRow], most_waiting: u64) -> Vec<f64> {
    rows.iter()
        .map(|&(row, spread, waiters, arrived)| {
            auto.next_limit(&Window {
                latency_cv: spread,
                waiters: waiters.min(most_waiting),
                arrived,
                ..recorded(row)
            })
        })
        .collect()
}

#[test]
fn a_second_look_that_a_crowd_waits_through_goes_on_from_the_stalled_limit() {
    let mut auto = Auto::default();
    let limits = replay_crowded(&mut auto, &A_SECOND_LOOK_IN_A_CROWD, u64::MAX);
    assert_eq!(
        limits[..4],
        [4.0, 4.0, 4.0, 2.0],
        "the stall at 4 slots, with too few waiting for a crowd, looks at 2"
    );
    // The look read calls of 213 ms, far slower than the stalled windows'
    // (not slots that worked), and ended the cold start at 2 slots for
    // 64 workers. With a crowd at its close, the stall goes on as one in
    // a crowd: from the stalled 4 slots, doubled.
    assert_eq!(limits[4], 8.0, "{limits:?}");
    assert!(auto.in_startup());
    // Without the crowd, the look ends the cold start as before.
    let mut few = Auto::default();
    let limits = replay_crowded(&mut few, &A_SECOND_LOOK_IN_A_CROWD, CROWD - 1);
    assert!(!few.in_startup(), "{limits:?}");
    assert!(limits[4] < 3.0, "near the look's 2 slots: {limits:?}");
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

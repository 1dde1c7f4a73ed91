//! A scenario that configures nothing runs the library's defaults: the
//! same configuration, and so the same code path, as the process-wide
//! limiter nobody configured.

use shed_lab::{grid, run, shed_config, PolicyKind, Scenario};

const UNCONFIGURED: &str = r#"
    name = "unconfigured"
    seconds = 4
    seed = 3
    [server]
    workers = 16
    model = "ps"
    [[traffic]]
    rps = 4800                # 3x the 16 workers' 1,600 rps
    service = "10ms"
    service_dist = "exp"
    timeout = "100ms"
"#;

#[test]
fn a_scenario_without_limiter_or_adaptive_tables_runs_exactly_the_library_defaults() {
    let scenario = Scenario::from_toml(UNCONFIGURED, "unconfigured.toml").unwrap();
    assert!(!scenario.limiter.pinned);
    let lab = format!("{:?}", shed_config(&scenario));
    // What `Limiter::global()` builds from when no variable is set.
    let global = format!("{:?}", shed::Config::from_env_with(|_| None));
    assert_eq!(lab, format!("{:?}", shed::Config::new()));
    assert_eq!(lab, global);
    assert!(shed_config(&scenario).build().unwrap().is_adaptive());

    // Pinning the capacity is what opts out.
    let pinned = Scenario::from_toml(
        &UNCONFIGURED.replace("[server]", "[limiter]\ncapacity = 16\n[server]"),
        "pinned.toml",
    )
    .unwrap();
    assert!(!shed_config(&pinned).build().unwrap().is_adaptive());
}

#[test]
fn without_a_bottleneck_a_scenario_must_pin_a_capacity() {
    let text = UNCONFIGURED.replace("[server]\n    workers = 16\n    model = \"ps\"", "");
    let error = Scenario::from_toml(&text, "bare.toml")
        .unwrap_err()
        .to_string();
    assert!(error.contains("needs a `[server]`"), "{error}");
}

#[test]
fn the_defaults_find_a_bottleneck_nobody_told_them_and_beat_reject_when_full() {
    let scenario = Scenario::from_toml(UNCONFIGURED, "unconfigured.toml").unwrap();
    let shed = run(&scenario, PolicyKind::Shed, 1.0);
    let tower = run(&scenario, PolicyKind::RejectWhenFull, 1.0);
    let after_warmup: u64 = shed.timeline[1..].iter().map(|s| s.served_in_time).sum();
    // 97.6% of the capacity on this seed (the limit settles at 26-28 for
    // 16 workers: see BENCHMARKS.md, "Protection without tuning").
    assert!(
        after_warmup as f64 >= 0.9 * 3.0 * 1600.0,
        "{:?}",
        shed.timeline
    );
    assert!(shed.total.goodput_rps > 1.2 * tower.total.goodput_rps);
    let limits: Vec<u32> = shed.timeline.iter().filter_map(|s| s.limit).collect();
    assert!(
        limits.iter().all(|&l| (8..=64).contains(&l)),
        "the limit learned the 16 workers: {limits:?}"
    );
}

#[test]
fn a_service_idle_after_its_start_is_protected_within_two_seconds_of_its_first_overload() {
    // A trickle for 6 s (a service started before its traffic), then 3x.
    let text = UNCONFIGURED.replace("seconds = 4", "seconds = 9").replace(
        "rps = 4800                # 3x the 16 workers' 1,600 rps",
        "rps = 1",
    ) + "    [[event]]\n    at = \"6s\"\n    rps = 4800\n";
    let scenario = Scenario::from_toml(&text, "idle-start.toml").unwrap();
    let shed = run(&scenario, PolicyKind::Shed, 1.0);
    let served: Vec<u64> = shed.timeline.iter().map(|s| s.served_in_time).collect();
    // The window open when the load came spans the idle seconds; judged
    // by its throughput (a few calls a second) it held the limit at 2-4
    // for about two seconds (in a 12 s run of this scenario: 199 and 406
    // calls served in the first two seconds of load, then 1,451).
    assert!(
        served[7] as f64 >= 0.9 * 1600.0,
        "the second after the load came: {served:?}"
    );
    assert!(served[8] as f64 >= 0.9 * 1600.0, "{served:?}");
}

#[test]
fn below_capacity_the_defaults_find_a_pool_of_slow_exponential_calls_and_throttle_nothing() {
    // 64 workers of 50 ms (exponential) at 0.8 of their 1,280 rps: a
    // startup window of a few calls reads its rate far off (the first two
    // read 12 ms for the 50 ms calls), and the lowest such reading, taken
    // for the no-load latency, made every later window look like a queue:
    // the limit stayed at 2-4 and served about 5% of the offered calls for
    // seconds (74.7% outside the slowdown in the defaults grid).
    let text = r#"
        name = "slow-exponential-pool"
        seconds = 5
        seed = 1
        [server]
        workers = 64
        model = "ps"
        [[traffic]]
        rps = 1024
        service = "50ms"
        service_dist = "exp"
        timeout = "500ms"
    "#;
    let scenario = Scenario::from_toml(text, "slow-exponential-pool.toml").unwrap();
    let shed = run(&scenario, PolicyKind::Shed, 1.0);
    let served: u64 = shed.timeline[2..].iter().map(|s| s.served_in_time).sum();
    let offered = 3.0 * 1024.0;
    assert!(
        served as f64 >= 0.97 * offered,
        "seconds 2-4 served {served} of about {offered}: {:?}",
        shed.timeline
    );
}

/// `workers` fifo workers of 20 ms constant calls at 3x their capacity,
/// clients that give up after 250 ms, nothing configured: the example
/// service's shape (its database is such a pool).
fn pool_of_20ms_calls_at_3x(workers: u32) -> Scenario {
    let text = format!(
        r#"
        name = "{workers}-workers"
        seconds = 10
        seed = 1
        [server]
        workers = {workers}
        model = "fifo"
        [[traffic]]
        rps = {rps}
        service = "20ms"
        service_dist = "const"
        timeout = "250ms"
        "#,
        rps = 3 * 50 * workers
    );
    Scenario::from_toml(&text, "pool.toml").unwrap()
}

#[test]
fn a_small_pool_of_short_calls_is_held_near_its_workers_not_at_four_times_them() {
    // 4 fifo workers of 20 ms at 3x. Every window holds 12-31 calls, fewer
    // than the 32 the throughput filter takes, and the bandwidth-delay
    // product fell back to the limit itself: no shrink moved it, and after
    // five such windows the queue's latency became the no-load latency.
    // The limit sat at 15-24 for the 4 workers (p50 95 ms, p99 207 ms).
    // Now it holds at 4-7 (p50 26 ms, p99 55 ms), serving as much: the
    // product takes the short windows' rates, and a probe comes before a
    // queue's latency is learned (either alone keeps it under 10 here;
    // the unit tests in `adaptive/auto/tests/` pin each).
    let shed = run(&pool_of_20ms_calls_at_3x(4), PolicyKind::Shed, 1.0);
    let limits: Vec<u32> = shed.timeline[1..].iter().filter_map(|s| s.limit).collect();
    assert!(
        limits.iter().all(|&l| l <= 10),
        "near the 4 workers: {limits:?}"
    );
    assert!(shed.total.p99_ms <= 100.0, "{:?}", shed.total);
    assert!(shed.total.goodput_rps >= 0.95 * 200.0, "{:?}", shed.total);
}

#[test]
fn a_startup_restarted_near_the_pool_does_not_double_on_a_batch_of_completions() {
    // The real service's shape: 16 fifo workers of 20 ms constant calls
    // at 3x. Once settled, a window with no queue restarts the startup;
    // with windows of one round trip, its first window held one batch of
    // completions (calls of one length end together), read 1,100 calls a
    // second from a pool that does 800, and doubled the limit to 42: p99
    // 67 ms. Restarted startups judge four round trips: p99 50 ms.
    let shed = run(&pool_of_20ms_calls_at_3x(16), PolicyKind::Shed, 1.0);
    assert!(shed.total.p99_ms <= 56.0, "{:?}", shed.total);
    assert!(shed.total.goodput_rps >= 0.95 * 800.0, "{:?}", shed.total);
}

#[test]
fn a_pool_of_calls_of_one_length_is_held_at_its_workers_within_twice_their_latency() {
    // The real service's shape again. With the limit at 1.2x the
    // product and growth until 1.5x the no-load latency, it ran at 16-26
    // slots for 16 workers, and the calls past the workers waited a whole
    // 20 ms call in the pool: p99 50 ms, 2.5x. Calls of one length show
    // their queue exactly, so the limit is the product (16), and rises
    // from it by one slot, less and less often: p99 31-32 ms.
    for seed in [1, 2] {
        let mut scenario = pool_of_20ms_calls_at_3x(16);
        scenario.seed = seed;
        let shed = run(&scenario, PolicyKind::Shed, 1.0);
        assert!(shed.total.p99_ms < 40.0, "seed {seed}: {:?}", shed.total);
        assert!(shed.total.goodput_rps >= 0.97 * 800.0, "{:?}", shed.total);
        let limits: Vec<u32> = shed.timeline.iter().filter_map(|s| s.limit).collect();
        assert!(limits.iter().all(|&l| (16..=17).contains(&l)), "{limits:?}");
    }
}

#[test]
fn a_slowed_pool_keeps_its_workers_busy_through_windows_of_a_few_dozen_calls() {
    // 16 ps workers of 10 ms (exponential) at 3x, every call four times
    // slower from 6 s to 11 s: 400 calls a second. Windows of 32 calls
    // read their rate within about 18%, and probes at 0.75 of the limit
    // that served as many calls within that noise took the limit to 9
    // slots: 57.2% of the slowed pool at 8 s (seed 2). Windows of 4 calls a
    // slot (64 here) keep it at the workers.
    let cell = defaults_cell("ps-16x10ms-exp-20x", 3.0, 2..3);
    assert!(cell.worst_second_pct >= 80.0, "{cell:?}");
}

#[test]
fn a_cold_start_that_read_its_calls_at_half_their_length_is_not_probed_down_to_one_slot() {
    // 64 ps workers of 50 ms (exponential) at 3x, seed 19: the first
    // window's 14 calls came in 173 ms (81 a second where 2 slots serve
    // 40), so the no-load latency read 25 ms, the startup ended at 2.4
    // slots, and probes of 5 calls that served "as many" within their
    // noise took the limit to 1: 2.3% of the capacity over the run. A
    // probe now keeps its lower limit only beyond its noise.
    let cell = defaults_cell("ps-64x50ms-exp-10x", 3.0, 19..20);
    assert!(cell.goodput_pct >= 75.0, "{cell:?}");
}

/// The defaults grid's shape named `name`.
/// The shape of the grid or of its holdout set named `name`.
fn grid_shape(name: &str) -> &'static grid::Shape {
    grid::SHAPES
        .iter()
        .chain(&grid::HOLDOUT)
        .find(|s| s.name() == name)
        .expect("the grid or its holdout has the shape")
}

/// The library's defaults on the shape named `name` at `factor` times its
/// capacity, over `seeds`, with the grid's slowdown.
fn defaults_cell(name: &str, factor: f64, seeds: std::ops::Range<u64>) -> grid::Cell {
    grid::run_cell(
        grid_shape(name),
        factor,
        grid::Contender::Defaults,
        seeds,
        grid::Schedule::default(),
    )
}

#[test]
fn a_pool_below_its_load_judges_its_slowdown_against_a_rate_it_bound_at() {
    // 64 fifo workers of 50 ms (constant) at 0.8x, seed 1: the limit last
    // bound in the cold start, and a window that closed just after a
    // batch read 1,828 calls a second from a pool that does 1,280. The
    // slowdown to 200 ms was judged against that rate: the no-load
    // latency read 286 ms, the limit grew to 114 slots, and the calls
    // queued past their 250 ms timeout (15.6% of the slowed pool in its
    // worst second, never back to 90% before the recovery).
    let cell = defaults_cell("fifo-64x50ms-const-5x", 0.8, 1..2);
    assert!(cell.worst_second_pct >= 80.0, "{cell:?}");
    assert!(
        cell.converged_s[1].is_some_and(|s| s <= 2.0),
        "back within 2 s of the slowdown: {cell:?}"
    );
}

#[test]
fn a_holdout_pool_of_calls_of_one_length_keeps_its_slowdown_in_time() {
    // 300 ps workers of 100 ms (constant) at 0.8x, seed 1, a shape of the
    // holdout set: the window that drained the cold start's overshoot
    // read more calls a second than the pool does, the slowdown scaled
    // the no-load latency by the fall from that rate to twice the slowed
    // calls' own, every queue read as none, and the limit grew into one
    // past the clients' 500 ms (0.0% of the slowed pool in its worst
    // second).
    let cell = defaults_cell("ps-300x100ms-const-5x", 0.8, 1..2);
    assert!(cell.worst_second_pct >= 80.0, "{cell:?}");
    assert!(cell.goodput_pct >= 95.0, "{cell:?}");
}

#[test]
fn a_cold_start_window_waiting_for_its_rises_calls_reads_their_queue_before_it_closes() {
    // 24 fifo workers of 20 ms (constant) at 0.8x, seed 0, a shape of the
    // holdout set. The window at 32 slots waits for the calls its rise
    // queued (its limit and the one before it, 48); with the alarm of a
    // window slow to gather its calls (a call of twice the no-load
    // latency, once every slot completed one), it closed on the first of
    // them to complete, read no queue, and doubled the limit to 64, which
    // the load below capacity never filled: the slowdown met 64 slots, and
    // its worst second served 61% of the slowed pool.
    let scenario = grid::scenario(
        grid_shape("fifo-24x20ms-const-5x"),
        grid::Contender::Defaults,
        0,
        grid::Schedule::default(),
    );
    let report = run(&scenario, PolicyKind::Shed, 0.8);
    let before_the_slowdown = seconds(&report, 0, 6);
    assert!(
        before_the_slowdown.iter().all(|&(_, limit)| limit <= 32),
        "the window at 32 slots read its queue: {before_the_slowdown:?}"
    );
    let cell = defaults_cell("fifo-24x20ms-const-5x", 0.8, 0..1);
    assert!(cell.worst_second_pct >= 80.0, "{cell:?}");
}

#[test]
fn a_slowdown_during_a_small_pools_startup_is_seen_within_a_round_of_its_calls() {
    // 2 ps workers of 200 ms at 3x, the slowdown at 5 s: the cold start
    // still ran 4 slots (windows of 12 calls at 10 a second, three looks),
    // the calls four times slower took 1.6 s, past the clients' 1 s, and
    // the next window took 4.8 s to close. Served 90% within 2 s of the
    // start, the slowdown and the recovery on 1 run of 16 (and every
    // settled second at 80% on 1); a slow call of one length now closes
    // a small window once every slot completed a call.
    let counts = grid::count_goals(
        std::slice::from_ref(grid_shape("ps-2x200ms-const-5x")),
        &[grid::Contender::Defaults],
        0..16,
        grid::Schedule {
            slowdown_at: 5,
            ..grid::Schedule::default()
        },
    );
    let overloaded = counts.iter().find(|c| c.factor > 1.0).unwrap();
    assert!(overloaded.converged >= 6, "{overloaded:?}");
    assert!(overloaded.worst_second >= Some(6), "{overloaded:?}");
}

#[test]
fn below_capacity_a_pool_of_slow_calls_is_not_refused_while_its_first_window_fills() {
    // 2 workers of 200 ms at 0.8x: below capacity, only the calls that
    // waited (and 1 in 64 of the others) are measured, and the classes'
    // own 50 ms budget, a quarter of a call, refused most of those that
    // waited, so the first window's 12 calls took seconds to come: 82.9%
    // and 81.9% of the calls offered outside the slowdown were served in
    // time on average over 8 seeds. The budgets then followed the calls
    // measured until that window closed (93.0% and 94.0%); now the first
    // 32 calls are timed, so it closes on them, and the cold start grows
    // only on windows in which calls waited (95.7% and 96.1%).
    for name in ["fifo-2x200ms-exp-10x", "ps-2x200ms-const-5x"] {
        let cell = defaults_cell(name, 0.8, 0..8);
        assert!(cell.steady_mean_pct >= Some(95.0), "{name}: {cell:?}");
    }
}

/// The library's defaults on the shape named `name` at `factor` times its
/// capacity, seed `seed`, with the grid's `--twice` schedule: every call
/// four times slower from 6 s to 11 s and again from 20 s to 25 s.
fn run_twice(name: &str, seed: u64, factor: f64) -> shed_lab::Report {
    let twice = grid::Schedule {
        twice: true,
        ..grid::Schedule::default()
    };
    let scenario = grid::scenario(grid_shape(name), grid::Contender::Defaults, seed, twice);
    run(&scenario, PolicyKind::Shed, factor)
}

/// The seconds from `from` to `to` of `report`: each second's calls
/// served in time, and the limit at its end.
fn seconds(report: &shed_lab::Report, from: usize, to: usize) -> Vec<(u64, u32)> {
    report.timeline[from..to]
        .iter()
        .map(|s| (s.served_in_time, s.limit.unwrap_or(0)))
        .collect()
}

#[test]
fn a_second_slowdown_below_capacity_finds_the_limit_brought_back_to_the_pool() {
    // 1,000 fifo workers of 200 ms (exponential) at 0.8x, every call four
    // times slower from 6 s to 11 s and again from 20 s to 25 s. The
    // startup restarted by the recovery doubled on the backlog the
    // slowdown left (its windows of 2.5 s, four round trips of the slowed
    // no-load latency, took the recovery for the throughput following the
    // limit), up to 4,479 slots on seed 0; once the backlog drained no
    // window bound, and a startup whose windows do not bind never ended:
    // the limit and the no-load latency (542 ms for calls of 200) stayed,
    // the second slowdown queued four slowed calls a worker, past every
    // client's 2 s, and its seconds served 164, 0, 0 and 135 calls in
    // time where the first served 499, 1,211, 1,118 and 1,352. Now that
    // startup ends, an unfilled limit comes down to a quarter above the
    // calls in flight, and a window of calls that waited for no slot
    // unlearns the slowed no-load latency at once.
    // Over seeds 0..8, with that defect: the limits before the second
    // slowdown were 1,461 to 5,213 slots (3,479 on average), and the
    // second slowdown served 46% of what the first did (7% on three
    // seeds); at 61269e8, 1,044 to 1,514 and 87%. One seed alone pinned
    // this less than it seemed: 23 of seeds 0..48 serve under 85% of
    // their first slowdown in their second at 61269e8, in some of them a
    // recovery's restarted startup still doubles past the pool (see
    // docs/defaults.md, *A second slowdown*). Seeds 8..16 hold two of
    // them: seed 8 (2,273 slots before the second slowdown, which served
    // 42% of the first) and seed 10 (2,441 slots, 31%). A recovery that a
    // restarted startup's long windows split now ends that startup, and
    // the no-load latency is the one from before the slowdown once the
    // throughput is back (1,566 and 1,214 slots; 51% and 76%).
    let (mut first_total, mut second_total, mut limits) = (0, 0, Vec::new());
    for seed in 0..16 {
        let shed = run_twice("fifo-1000x200ms-exp-10x", seed, 0.8);
        let served = |from, to| -> u64 { seconds(&shed, from, to).iter().map(|s| s.0).sum() };
        let (first, second) = (served(7, 11), served(21, 25));
        assert!(
            2 * second >= first,
            "seed {seed}: the second slowdown served {second} in time, the first {first}: {:?}",
            seconds(&shed, 0, 30)
        );
        (first_total, second_total) = (first_total + first, second_total + second);
        limits.push(u64::from(seconds(&shed, 19, 20)[0].1));
    }
    assert!(
        100 * second_total >= 75 * first_total,
        "the second slowdowns served {second_total} in time, the first {first_total}"
    );
    assert!(
        limits.iter().sum::<u64>() <= 16 * 1_500,
        "the limits before the second slowdown, for 1,000 workers: {limits:?}"
    );
}

#[test]
fn a_slowdown_under_a_load_below_capacity_keeps_the_slowed_pool_busy() {
    // 1,000 fifo workers of 200 ms (exponential) at 0.8x, seed 2, every
    // call four times slower from 6 s to 11 s. The limit had not bound
    // since the cold start, and the slowdown's fall in throughput was
    // judged against the cold start's binding windows alone: 2,493 calls
    // a second at 512 slots, where the load was 4,000. The slowed no-load
    // latency was scaled 1.8 times for a 4x slowdown, the slowed calls
    // read as a queue, and the limit fell to 447 slots: seconds 8 to 10
    // served 380, 493 and 494 calls in time of the slowed pool's 1,250.
    // Judged against the highest recent rate of any window (the load's),
    // the limit stays at the pool: 1,144, 1,167 and 1,222.
    let shape = grid_shape("fifo-1000x200ms-exp-10x");
    let scenario = grid::scenario(
        shape,
        grid::Contender::Defaults,
        2,
        grid::Schedule::default(),
    );
    let shed = run(&scenario, PolicyKind::Shed, 0.8);
    let slowed = &shed.timeline[8..11];
    let served: u64 = slowed.iter().map(|s| s.served_in_time).sum();
    let limits: Vec<u32> = shed.timeline.iter().filter_map(|s| s.limit).collect();
    assert!(
        served >= 3_000,
        "seconds 8 to 10 of the slowdown served {served} in time of 3,750: {limits:?}"
    );
    assert!(
        slowed.iter().all(|s| s.limit >= Some(900)),
        "the limit in the slowdown, for 1,000 slowed workers: {limits:?}"
    );
}

#[test]
fn a_recovered_pool_of_calls_of_one_length_meets_its_second_slowdown_at_its_workers() {
    // 400 ps workers of 100 ms (constant) at 3x, every call four times
    // slower from 6 s to 11 s and again from 20 s to 25 s. The first
    // slowdown scaled the no-load latency to 415 ms; after the recovery
    // it came down a third of the way a window, and not at all in the
    // startup the recovery restarted, so calls of 132-198 ms read as no
    // queue and the limit grew to 1,184 slots. The second slowdown met
    // 1,053: every slowed call took a second, for clients of 500 ms, and
    // its five seconds served none in time. A window of calls of one
    // length below the no-load latency now sets it at once: 395 slots
    // before the second slowdown, whose seconds serve 815-1,260 calls in
    // time of the slowed pool's 1,000.
    let shed = run_twice("ps-400x100ms-const-5x", 0, 3.0);
    let limits: Vec<u32> = shed.timeline.iter().filter_map(|s| s.limit).collect();
    let second = &shed.timeline[20..25];
    assert!(
        second.iter().all(|s| s.served_in_time >= 700),
        "the second slowdown's seconds: {:?}, limits {limits:?}",
        second.iter().map(|s| s.served_in_time).collect::<Vec<_>>()
    );
    assert!(
        limits[19] <= 600,
        "the limit before the second slowdown, for 400 workers: {limits:?}"
    );
}

#[test]
fn a_queue_the_product_cannot_shrink_is_not_probed_every_other_window() {
    // 48 ps workers of 50 ms (constant) at 3x, a shape of the holdout
    // set. After the recovery the limit sat at 48.8 slots: the call past
    // the pool read as the queue it is, but the product, 49 slots, could
    // not shrink it, and once five such windows had asked for a stale
    // probe, each one that showed nothing left the count at five, so
    // every other window ran at three quarters of the limit (93.3% of
    // the capacity on every seed of 0..8; 97.2% with the count started
    // over).
    let cell = defaults_cell("ps-48x50ms-const-5x", 3.0, 0..1);
    assert!(cell.goodput_pct >= 96.0, "{cell:?}");
}

#[test]
fn a_large_pool_started_cold_pays_two_seconds_or_nothing_from_a_known_floor() {
    // The README's "What a cold start costs": 1,000 workers of 200 ms at a
    // quarter of their capacity. From 2 slots, the windows of a dozen
    // slow calls take a second to double the limit: the first two
    // seconds serve 13 and 402 calls in time of about 1,250 each, and
    // every call from the third. Started at 64 slots, a floor the
    // service is known to take, nothing is refused.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/scenarios/large-pool-cold-start.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let cold = run(
        &Scenario::from_toml(&text, path).unwrap(),
        PolicyKind::Shed,
        1.0,
    );
    let timeline = &cold.timeline;
    assert!(
        timeline[0].served_in_time * 2 < timeline[0].offered,
        "{timeline:?}"
    );
    assert!(
        timeline[2..]
            .iter()
            .all(|s| s.served_in_time * 100 >= s.offered * 99),
        "every call from the third second: {timeline:?}"
    );

    // The file's commented-out `[limiter]` table.
    let floor = text
        .lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(setting) if setting.starts_with('[') || setting.contains(" = ") => setting,
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let warm = run(
        &Scenario::from_toml(&floor, path).unwrap(),
        PolicyKind::Shed,
        1.0,
    );
    assert_eq!(warm.total.shed, 0, "{:?}", warm.timeline);
}

#[test]
fn a_recovery_of_a_large_pool_during_a_restarted_startup_does_not_double_its_limit() {
    // 1,000 fifo workers of 200 ms (exponential) at 3x, slowed four times
    // from 6 s to 11 s and from 20 s to 25 s. On seed 0 the recovery's
    // window came during a startup restarted in the slowdown, at 1,188
    // slots: it read 4,597 calls a second for 1,936 before, as the
    // throughput following the limit, which doubled twice to 4,754 slots.
    // Its drain served 36% of the pool's capacity at 16 s, and the second
    // slowdown met 2,153 slots: 889-995 calls in time a second of its
    // 1,250. Each slot now completes twice as many calls, of a mean below
    // the no-load latency: a recovery, and the limit before the slowdown
    // is probed. Over seeds 0..8 the other seeds never met that window,
    // before the change as after: their limits between the slowdowns
    // stayed at 2,820 slots or fewer and their seconds at 3,759 calls in
    // time or more, and their second slowdowns served 88% to 90% of the
    // slowed pool's capacity. Seeds 8..16 still met such windows: the
    // limits of seeds 8 and 13 passed 3,000 slots between the slowdowns,
    // the recovery's mean of slowed calls and fast left as the no-load
    // latency (see `Auto::learn_no_load_back_at_speed`).
    let mut second_total = 0;
    for seed in 0..16 {
        let shed = run_twice("fifo-1000x200ms-exp-10x", seed, 3.0);
        let between = seconds(&shed, 13, 20);
        assert!(
            between.iter().all(|&(_, limit)| limit <= 3_000),
            "seed {seed}: the limit between the slowdowns, for 1,000 workers: {between:?}"
        );
        assert!(
            between[1..].iter().all(|&(in_time, _)| in_time >= 3_500),
            "seed {seed}: the seconds between the slowdowns (5,000 calls each): {between:?}"
        );
        second_total += seconds(&shed, 21, 25).iter().map(|s| s.0).sum::<u64>();
    }
    // 88%: a slowdown after an overload holds the limit it found (see
    // `Auto::holds_through_slowdown` in the runtime), and a recovery's
    // no-load latency is scaled no further than the calls' mean (see
    // `Auto::learn_no_load_back_at_speed`), so the second slowdown meets
    // 1,145-1,461 slots for the 1,000 workers, not the 1,355-1,914 of a
    // sawtooth above a queue read as their speed: 89.5% of the slowed
    // pool (84.8% before the cap, 85.6% before the hold), the fewest
    // calls in time in one second 992 (926, 695). Held at no more than
    // 1.2 times the product before the slowdown (`Auto::slowed_limit`),
    // 1,135-1,342 slots: 88.5%, the fewest 1,008.
    assert!(
        100 * second_total >= 88 * 16 * 4 * 1_250,
        "the second slowdowns' seconds served {second_total} calls in time (1,250 a second)"
    );
}

#[test]
fn a_recovery_during_a_restarted_startup_is_probed_back_to_the_pool() {
    // 16 fifo workers of 10 ms (exponential) at 3x, seed 3, slowed four
    // times from 6 s to 11 s and from 20 s to 25 s. The recovery came
    // during a startup restarted from the steady state: its rise read as
    // the throughput following the limit, the startup ended on the no-load
    // latency the slowdown had scaled to 32 ms, and the limit held 61-90
    // slots; the second slowdown then queued 4-5 slowed calls a worker,
    // and its seconds served 0-4% of the slowed pool in time. Back at the
    // throughput it had before the slowdown, the limit is now probed at
    // the 20 slots it had then.
    let shed = run_twice("fifo-16x10ms-exp-10x", 3, 3.0);
    let limits: Vec<u32> = shed.timeline.iter().filter_map(|s| s.limit).collect();
    assert!(
        limits[13..20].iter().all(|&l| l <= 40),
        "the limit between the slowdowns, for 16 workers: {limits:?}"
    );
    let second = &shed.timeline[20..25];
    assert!(
        second.iter().all(|s| s.served_in_time >= 200),
        "the second slowdown's seconds (400 calls each at most): {:?}, limits {limits:?}",
        second.iter().map(|s| s.served_in_time).collect::<Vec<_>>()
    );
}

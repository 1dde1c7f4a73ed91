use shed_lab::grid::*;
use shed_lab::scenario::ServiceDist;

#[test]
fn the_grid_scenarios_are_valid_and_the_defaults_leave_the_limiter_unconfigured() {
    for shape in SHAPES.iter().chain(&HOLDOUT).chain(&TAILS).chain(&MIXED) {
        for contender in Contender::ALL {
            let s = scenario(shape, contender, 1, Schedule::default());
            let text_free = shed_lab::shed_config(&s);
            if contender == Contender::Defaults {
                assert_eq!(
                    format!("{text_free:?}"),
                    format!("{:?}", shed::Config::new()),
                    "{}",
                    shape.name()
                );
            }
            assert!((s.capacity_rps() - shape.capacity_rps()).abs() < 1e-6);
        }
    }
    let names: std::collections::BTreeSet<String> = SHAPES
        .iter()
        .chain(&HOLDOUT)
        .chain(&TAILS)
        .chain(&MIXED)
        .map(Shape::name)
        .collect();
    assert_eq!(
        names.len(),
        SHAPES.len() + HOLDOUT.len() + TAILS.len() + MIXED.len(),
        "unique names, none in two sets"
    );
}

/// The heavy-tail shapes are the grid's shapes of calls of varying
/// length, with lognormal service times instead of exponential ones.
#[test]
fn the_heavy_tail_shapes_are_the_grids_exponential_ones_with_a_lognormal_tail() {
    let exponential: Vec<Shape> = SHAPES
        .iter()
        .filter(|s| s.dist == ServiceDist::Exp)
        .copied()
        .collect();
    assert_eq!(TAILS.len(), exponential.len());
    for (heavy, exp) in TAILS.iter().zip(&exponential) {
        assert_eq!(heavy.name(), exp.name().replace("-exp-", "-logn-"));
        assert_eq!(heavy.dist, ServiceDist::Lognormal);
        let s = scenario(heavy, Contender::Defaults, 1, Schedule::default());
        assert_eq!(s.traffic[0].service_dist, ServiceDist::Lognormal);
        assert_eq!(heavy.capacity_rps(), exp.capacity_rps());
    }
}

/// The mixed shapes run one stream of cache hits and misses, named so,
/// whose clients wait 30 times the mean.
#[test]
fn the_mixed_shapes_serve_one_stream_of_hits_and_misses() {
    for shape in &MIXED {
        assert!(shape.name().contains("-mix-30x"), "{}", shape.name());
        let s = scenario(shape, Contender::Defaults, 1, Schedule::default());
        assert_eq!(s.traffic.len(), 1, "one handler");
        assert_eq!(s.traffic[0].service_dist, ServiceDist::Bimodal);
        let service_time = std::time::Duration::from_millis(shape.service_ms);
        assert_eq!(s.traffic[0].timeout.0, service_time * 30);
    }
}
/// The steady column: a load below capacity judged outside the slowdown.
#[test]
fn the_steady_column_judges_a_load_below_capacity_outside_the_slowdown() {
    // fifo-16x10ms: tower's 256 slots admit everything below capacity and
    // drown in the slowdown, when the 0.8x load is 3.2x the slowed service.
    let shape = &SHAPES[2];
    let below = run_cell(shape, 0.8, Contender::Tower, 0..1, Schedule::default());
    let steady = below.steady_pct.expect("measured below capacity");
    assert!(
        steady >= 99.0,
        "nothing throttled outside the slowdown: {steady}%"
    );
    assert!(
        below.goodput_pct < 95.0 && below.worst_second_pct < 50.0,
        "the slowdown is in goodput, not in steady: {below:?}"
    );
    let above = run_cell(shape, 3.0, Contender::Tower, 0..1, Schedule::default());
    assert_eq!(above.steady_pct, None, "only below capacity");
}

/// `shed informed`: the reference of what a shape allows.
#[test]
fn informed_shed_is_told_the_shape_and_refuses_nothing_below_capacity() {
    let shape = &SHAPES[6];
    assert_eq!(shape.name(), "fifo-4x1ms-exp-20x");
    let s = scenario(shape, Contender::Informed, 0, Schedule::default());
    assert!(s.limiter.pinned);
    assert_eq!(s.limiter.capacity, 4, "the workers");
    let budget = s.traffic[0].max_wait.as_ref().map(|d| d.0);
    assert_eq!(
        budget,
        Some(std::time::Duration::from_millis(19)),
        "timeout less the service time"
    );
    assert_eq!(
        s.limiter.queue_bound,
        Some(76),
        "what 19 ms at 4,000 calls a second drains"
    );
    assert!(s.limiter.lifo);

    let cell = run_cell(shape, 0.8, Contender::Informed, 0..2, Schedule::default());
    let (worst, mean) = (cell.steady_pct.unwrap(), cell.steady_mean_pct.unwrap());
    assert!(worst >= 99.0, "nothing throttled below capacity: {cell:?}");
    assert!(
        mean >= worst && cell.goodput_mean_pct >= cell.goodput_pct,
        "{cell:?}"
    );
}

/// `--goals`: one run per seed, each goal counted where it applies.
#[test]
fn goal_counts_tally_each_seed_against_the_goals_where_they_apply() {
    let shape = &SHAPES[6];
    let counts = count_goals(
        std::slice::from_ref(shape),
        &[Contender::Informed],
        0..2,
        Schedule::default(),
    );
    assert_eq!(counts.len(), FACTORS.len());
    for count in &counts {
        assert_eq!(count.runs, 2);
        let per_seed: Vec<Cell> = (0..2)
            .map(|s| {
                run_cell(
                    shape,
                    count.factor,
                    Contender::Informed,
                    s..s + 1,
                    Schedule::default(),
                )
            })
            .collect();
        let met = |ok: &dyn Fn(&Cell) -> bool| per_seed.iter().filter(|c| ok(c)).count() as u64;
        if count.factor > 1.0 {
            assert_eq!(count.goodput, Some(met(&|c| c.goodput_pct >= 90.0)));
            assert_eq!(
                count.worst_second,
                Some(met(&|c| c.worst_second_pct >= 80.0))
            );
            assert_eq!(count.steady, None);
        } else {
            assert_eq!(count.goodput, None);
            assert_eq!(count.steady, Some(met(&|c| c.steady_pct.unwrap() >= 99.0)));
        }
        let back = |c: &Cell| c.converged_s.iter().all(|s| s.is_some_and(|s| s <= 2.0));
        assert_eq!(count.converged, met(&back));
        assert_eq!(count.no_outage, met(&|c| c.dark_s < 2));
    }
    // The last line totals each goal over the runs it applies to.
    let table = goal_table(&counts);
    let total: Vec<&str> = table
        .lines()
        .last()
        .expect("a totals line")
        .split_whitespace()
        .collect();
    let (below, above) = (&counts[0], &counts[1]);
    let expected = [
        "all".to_string(),
        format!("{}/2", above.goodput.unwrap()),
        format!("{}/2", above.worst_second.unwrap()),
        format!("{}/2", below.steady.unwrap()),
        format!("{}/4", below.converged + above.converged),
        format!("{}/4", below.no_outage + above.no_outage),
    ];
    assert_eq!(total, expected, "{table}");
}

/// `--slowdown-at`: the slowdown, the recovery and the run's end move
/// together, and the settled seconds with them.
/// A scenario's changes of speed: the second each comes at, and the
/// factor of the service time from then on.
fn service_changes(s: &shed_lab::Scenario) -> Vec<(u64, Option<f64>)> {
    s.events
        .iter()
        .map(|e| (e.at.0.as_secs(), e.service_factor))
        .collect()
}

#[test]
fn a_slowdown_moved_later_moves_the_recovery_and_the_runs_end_with_it() {
    let shape = &SHAPES[6];
    let later = Schedule {
        slowdown_at: 7,
        ..Schedule::default()
    };
    let s = scenario(shape, Contender::Informed, 0, later);
    assert_eq!(s.seconds, 17.0);
    let at = service_changes(&s);
    assert_eq!(at, [(7, Some(4.0)), (12, Some(1.0))]);
    // `shed informed` below capacity: nothing throttled outside the
    // slowdown, wherever it falls, and its worst second is the slowed one.
    for schedule in [Schedule::default(), later] {
        let cell = run_cell(shape, 0.8, Contender::Informed, 0..1, schedule);
        assert!(cell.steady_pct.unwrap() >= 99.0, "{schedule:?}: {cell:?}");
        assert!(
            cell.converged_s.iter().all(|c| c.is_some()),
            "{schedule:?}: {cell:?}"
        );
    }
}

#[test]
fn twice_slows_the_service_again_14_s_after_the_first_slowdown() {
    let shape = &SHAPES[6];
    let twice = Schedule {
        twice: true,
        ..Schedule::default()
    };
    assert_eq!(twice.slowdowns(), [(6, 11), (20, 25)]);
    let s = scenario(shape, Contender::Informed, 0, twice);
    assert_eq!(s.seconds, 30.0);
    let at = service_changes(&s);
    assert_eq!(
        at,
        [
            (6, Some(4.0)),
            (11, Some(1.0)),
            (20, Some(4.0)),
            (25, Some(1.0))
        ]
    );
    // `shed informed` below capacity: nothing throttled outside either
    // slowdown, and back within every change.
    let cell = run_cell(shape, 0.8, Contender::Informed, 0..1, twice);
    assert!(cell.steady_pct.unwrap() >= 99.0, "{cell:?}");
    assert!(cell.converged_s.iter().all(|c| c.is_some()), "{cell:?}");
}

/// A cell's dark stretch: seconds in a row serving under a tenth of the
/// best possible (the count itself is tested below).
#[test]
fn reject_when_full_goes_dark_for_seconds_where_the_defaults_never_do() {
    // fifo-16x10ms at 3x: tower's 256 slots queue every call past its
    // clients' 100 ms from the start, and the defaults never go dark.
    let shape = &SHAPES[2];
    let tower = run_cell(shape, 3.0, Contender::Tower, 0..1, Schedule::default());
    assert!(tower.dark_s >= 10, "{tower:?}");
    let defaults = run_cell(shape, 3.0, Contender::Defaults, 0..1, Schedule::default());
    assert_eq!(defaults.dark_s, 0, "{defaults:?}");
}

#[test]
fn convergence_is_the_slowest_of_each_kind_of_change() {
    // Cold start, slowdown, recovery, slowdown, recovery.
    let phases = [Some(1.5), Some(0.5), Some(1.0), Some(2.5), Some(0.5)];
    assert_eq!(
        converged_by_kind(phases.into_iter()),
        [Some(1.5), Some(2.5), Some(1.0)]
    );
    let never = [Some(1.5), Some(0.5), Some(1.0), Some(0.5), None];
    assert_eq!(
        converged_by_kind(never.into_iter()),
        [Some(1.5), Some(0.5), None]
    );
}

#[test]
fn a_traced_run_names_how_long_each_phase_took_to_converge() {
    let phases = [Some(2.5), Some(0.0), None];
    assert_eq!(phase_convergence(phases.into_iter()), "2.5s/0s/never");
    // One seed of fifo-16x10ms at 3x: its cold start, slowdown and
    // recovery, each as the cell of that one run reads it.
    let shape = &SHAPES[2];
    let trace = trace(shape, 3.0, Contender::Defaults, 0, Schedule::default());
    let header = trace.lines().next().unwrap();
    let converged = header.split(" converged ").nth(1).unwrap();
    let cell = run_cell(shape, 3.0, Contender::Defaults, 0..1, Schedule::default());
    assert_eq!(
        converged,
        phase_convergence(cell.converged_s.into_iter()),
        "{header}"
    );
}

#[test]
fn a_dark_stretch_is_seconds_in_a_row_under_a_tenth_of_the_best_possible() {
    let stretch = |seconds: &[(f64, f64)]| longest_dark_stretch(seconds.iter().copied());
    // Scattered dark seconds are stretches of one.
    assert_eq!(
        stretch(&[(0.0, 100.0), (50.0, 100.0), (9.0, 100.0), (95.0, 100.0)]),
        1
    );
    // The longest of two stretches; a tenth exactly is not dark.
    assert_eq!(
        stretch(&[
            (0.0, 100.0),
            (0.0, 100.0),
            (10.0, 100.0),
            (1.0, 100.0),
            (2.0, 100.0),
            (3.0, 100.0),
        ]),
        3
    );
    assert_eq!(
        stretch(&[(0.0, 100.0), (0.0, 0.0), (0.0, 100.0)]),
        1,
        "nothing possible: not dark"
    );
}

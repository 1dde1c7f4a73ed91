use std::time::Duration;

use shed_lab::scenario::*;

const MINIMAL: &str = r#"
    name = "t"
    seconds = 1
    [limiter]
    capacity = 4
    [[traffic]]
    rps = 100
    service = "10ms"
    timeout = "100ms"
"#;

/// The error a scenario `text` read from `bad.toml` fails with.
fn error_of(text: &str) -> String {
    Scenario::from_toml(text, "bad.toml")
        .unwrap_err()
        .to_string()
}

#[test]
fn phases_follow_the_events_and_cap_the_ideal_at_the_slots_time() {
    let text = format!(
        "{MINIMAL}
        [[event]]
        at = \"0.4s\"
        service_factor = 8.0
        [[event]]
        at = \"0.4s\"
        rps = 200
        [[event]]
        at = \"0.7s\"
        service_factor = 1.0"
    );
    let s = Scenario::from_toml(&text, "t.toml").unwrap();
    let phases = s.phases(1.0);
    let bounds: Vec<(f64, f64)> = phases.iter().map(|p| (p.start_s, p.end_s)).collect();
    assert_eq!(bounds, [(0.0, 0.4), (0.4, 0.7), (0.7, 1.0)]);
    // 100 rps of 10 ms on 4 slots: all of it. Then 200 rps of 80 ms:
    // 16 slot-seconds asked of 4, a quarter. Then 200 rps of 10 ms.
    let ideal: Vec<f64> = phases.iter().map(|p| p.ideal_rps).collect();
    assert_eq!(ideal, [100.0, 50.0, 200.0]);
    assert_eq!(
        s.phases(2.0)[0].ideal_rps,
        200.0,
        "the factor scales the rates"
    );
}

#[test]
fn a_minimal_scenario_has_sane_defaults() {
    let s = Scenario::from_toml(MINIMAL, "t.toml").unwrap();
    assert_eq!(s.traffic[0].class, "critical");
    assert_eq!(s.traffic[0].weight, 1);
    assert_eq!(s.traffic[0].arrivals, Arrivals::Poisson);
    assert!((s.capacity_rps() - 400.0).abs() < 1e-9);
}

#[test]
fn errors_name_the_file_the_key_and_what_was_expected() {
    let unknown_key = MINIMAL.replace("rps = 100", "rps = 100\n        burst = 3");
    let e = error_of(&unknown_key);
    assert!(e.starts_with("bad.toml:"), "{e}");
    assert!(e.contains("unknown field `burst`"), "{e}");

    let bad_duration = MINIMAL.replace("\"10ms\"", "\"10 parsecs\"");
    let e = error_of(&bad_duration);
    assert!(
        e.contains("expected a duration like \"50ms\", got \"10 parsecs\""),
        "{e}"
    );
    assert!(e.contains("service"), "{e}");

    let unknown_class = MINIMAL.replace("rps = 100", "rps = 100\n        class = \"batch\"");
    let e = error_of(&unknown_class);
    assert!(
        e.contains("traffic #1: `class` = \"batch\" is not a class (known classes: critical, optional, background)"),
        "{e}"
    );
}

#[test]
fn an_initial_limit_needs_the_adaptive_default_and_a_slot() {
    let pinned = MINIMAL.replace("capacity = 4", "capacity = 4\n    initial = 8");
    let e = error_of(&pinned);
    assert!(
        e.contains("`limiter.initial` is where the adaptive default starts"),
        "{e}"
    );

    let adaptive = MINIMAL.replace("capacity = 4", "initial = 0\n    [server]\n    workers = 4");
    let e = error_of(&adaptive);
    assert!(e.contains("`limiter.initial` must be at least 1"), "{e}");

    let started = adaptive.replace("initial = 0", "initial = 8");
    let scenario = Scenario::from_toml(&started, "ok.toml").unwrap();
    assert_eq!(
        shed_lab::shed_config(&scenario).build().unwrap().capacity(),
        8,
        "the adaptive default starts at 8 slots"
    );
}

#[test]
fn class_tables_override_and_extend_the_defaults() {
    let text = format!("{MINIMAL}\n[[class]]\nname = \"background\"\nshare = 0.3\n[[class]]\nname = \"batch\"\nmax_wait = \"2ms\"\n");
    let s = Scenario::from_toml(&text, "t.toml").unwrap();
    let specs = s.class_specs();
    let bg = specs.iter().find(|c| c.name() == "background").unwrap();
    assert_eq!((bg.rank(), bg.share_of_capacity()), (2, 0.3));
    let batch = specs.iter().find(|c| c.name() == "batch").unwrap();
    assert_eq!(batch.default_max_wait(), Duration::from_millis(2));
}

#[test]
fn anchor_capacity_sets_the_anchors_slots_alone() {
    let pinned = Scenario::from_toml(MINIMAL, "t.toml").unwrap();
    assert_eq!(pinned.limiter.anchor_slots(), 4);
    assert_eq!(pinned.limiter.slots_label(), "4 slots");

    let defaults = r#"
        name = "t"
        seconds = 1
        [limiter]
        anchor_capacity = 8
        [server]
        workers = 8
        [[traffic]]
        rps = 100
        service = "10ms"
        timeout = "100ms"
    "#;
    let s = Scenario::from_toml(defaults, "t.toml").unwrap();
    assert!(!s.limiter.pinned, "shed keeps its adaptive default");
    assert_eq!(s.limiter.anchor_slots(), 8);
    assert_eq!(s.limiter.slots_label(), "shed adaptive, anchors 8 slots");

    let e = Scenario::from_toml(
        &defaults.replace("anchor_capacity = 8", "anchor_capacity = 0"),
        "zero.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("`limiter.anchor_capacity` must be at least 1"),
        "{e}"
    );
}

/// Each distribution keeps the scenario's mean service time; the
/// lognormal one has the heavy tail it names (a p99 about 6.2 times the
/// mean, a median about 0.61 of it), the bimodal one its hits and misses,
/// and a random draw lands on whole milliseconds (tokio's timer ticks).
#[test]
fn service_distributions_keep_the_mean_and_the_lognormal_and_bimodal_ones_their_shape() {
    let heavy = MINIMAL.replace("timeout", "service_dist = \"lognormal\"\n    timeout");
    let heavy = Scenario::from_toml(&heavy, "heavy.toml").unwrap();
    assert_eq!(heavy.traffic[0].service_dist, ServiceDist::Lognormal);
    let mean = 0.050;
    assert_eq!(
        ServiceDist::Const.draw(mean, &mut fastrand::Rng::with_seed(1)),
        mean
    );
    for dist in [
        ServiceDist::Exp,
        ServiceDist::Lognormal,
        ServiceDist::Bimodal,
    ] {
        let mut rng = fastrand::Rng::with_seed(7);
        let mut draws: Vec<f64> = (0..200_000).map(|_| dist.draw(mean, &mut rng)).collect();
        assert!(draws
            .iter()
            .all(|d| (d * 1000.0 - (d * 1000.0).round()).abs() < 1e-6));
        let drawn_mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!(
            (drawn_mean / mean - 1.0).abs() < 0.02,
            "{dist:?}: mean {drawn_mean}"
        );
        draws.sort_by(f64::total_cmp);
        let (median, p99) = (draws[draws.len() / 2], draws[draws.len() * 99 / 100]);
        if dist == ServiceDist::Lognormal {
            assert!((p99 / mean - 6.2).abs() < 0.4, "p99 {p99}");
            assert!((median / mean - 0.61).abs() < 0.03, "median {median}");
        } else if dist == ServiceDist::Bimodal {
            // Hits of 0.17 times the mean, misses of 8.5 times it: the
            // median is a hit's (0.81 of one), the p99 a long miss's (115
            // hits, 19.5 times the mean), and the spread 3.7 times an
            // exponential one's.
            let hit = mean / 5.9;
            assert!((median / hit - 0.81).abs() < 0.1, "median {median}");
            assert!((p99 / hit - 115.0).abs() < 8.0, "p99 {p99}");
            let var =
                draws.iter().map(|d| (d - drawn_mean).powi(2)).sum::<f64>() / draws.len() as f64;
            let cv = var.sqrt() / drawn_mean;
            assert!((cv - 3.66).abs() < 0.2, "cv {cv}");
        } else {
            // Exponential: p99 = ln(100) = 4.6 times the mean.
            assert!((p99 / mean - 4.6).abs() < 0.3, "p99 {p99}");
        }
    }
}

use shed_lab::seeds::*;
use shed_lab::Scenario;

#[test]
fn every_seed_is_run_and_summarised() {
    let scenario = Scenario::from_toml(
        r#"
        name = "t"
        seconds = 0.5
        [limiter]
        capacity = 2
        [[traffic]]
        rps = 400               # the capacity: 2 slots x 5 ms
        service = "5ms"
        timeout = "100ms"
        max_wait = "20ms"
        "#,
        "t.toml",
    )
    .unwrap();
    let rows = across_seeds(&scenario, &[0.5, 2.0], 3..6);
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r.seeds == 3));
    let (light, heavy) = (&rows[0], &rows[1]);
    assert_eq!(light.most_shed_pct, 0.0, "half the capacity: nothing shed");
    assert!(heavy.most_shed_pct > 40.0, "{heavy:?}");
    assert!(heavy.worst_goodput_vs_anchor_pct <= heavy.mean_goodput_vs_anchor_pct);
    assert!(heavy.worst_p99_ms >= heavy.mean_p99_ms);
    let text = table(&rows);
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(text.contains("    2x      3"), "{text}");
}

use std::time::Duration;

use shed_lab::report::*;
use shed_lab::scenario::Phase;

#[test]
fn a_phase_converges_when_half_a_second_serves_ninety_percent_of_its_ideal() {
    let phases = [
        Phase {
            start_s: 0.0,
            end_s: 1.0,
            ideal_rps: 100.0,
        },
        Phase {
            start_s: 1.0,
            end_s: 2.0,
            ideal_rps: 100.0,
        },
    ];
    // 10 a tick (100 rps) in the first phase; in the second, 2 a tick
    // for 0.3 s, then 10.
    let mut per_tick = vec![10; 10];
    per_tick.extend([2, 2, 2, 10, 10, 10, 10, 10, 10, 10]);
    let reports = phase_reports(&phases, &per_tick);
    assert_eq!(reports[0].converged_after_s, Some(0.0));
    // From 1.1 s: 2 + 2 + 10 + 10 + 10 = 34 of the 45 needed; from
    // 1.3 s: 50.
    assert_eq!(reports[1].converged_after_s, Some(0.3));
    let starved = phase_reports(&phases[..1], &[8; 10]);
    assert_eq!(starved[0].converged_after_s, None, "80% is not converged");
}

#[test]
fn counts_add_up_and_percentiles_use_nearest_rank() {
    let mut t = Tally::default();
    for i in 1..=100u64 {
        // Half in the first tick, half in the second.
        let arrival = Duration::from_millis(if i <= 50 { 0 } else { 150 });
        t.offer(i > 95, arrival);
        if i <= 90 {
            t.served(Duration::from_millis(i), true, Duration::ZERO);
        } else if i <= 93 {
            t.served(Duration::from_millis(300), false, Duration::ZERO);
        } else if i <= 98 {
            t.shed("max_wait");
        }
    }
    assert_eq!(t.offered_per_tick, [50, 50]);
    let c = t.counts(2.0);
    assert_eq!(
        (
            c.offered,
            c.served_in_time,
            c.late,
            c.shed,
            c.unfinished,
            c.retries
        ),
        (100, 90, 3, 5, 2, 5)
    );
    assert_eq!(c.goodput_rps, 45.0);
    assert_eq!(c.p50_ms, 45.0);
    assert_eq!(c.p99_ms, 90.0);
    assert_eq!(c.shed_by_reason["max_wait"], 5);
}

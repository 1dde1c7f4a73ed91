//! The fleet presets on the paused clock: what each balancer makes of a
//! slow replica, a lost one and a rolling restart, with and without
//! shedding on the replicas (see BENCHMARKS.md, "The lab: a fleet").

use shed_lab::fleet::{self, BalancerKind, FleetReport, Weights};
use shed_lab::{PolicyKind, Scenario};

use crate::preset;

/// `scenario` with this balancer and retry setting.
fn with(scenario: &Scenario, balancer: BalancerKind, retry: bool) -> Scenario {
    let mut variant = scenario.clone();
    let fleet = variant.fleet.as_mut().unwrap();
    fleet.balancer = balancer;
    fleet.retry = retry;
    variant
}

fn run(scenario: &Scenario, policy: PolicyKind) -> FleetReport {
    fleet::run(scenario, policy, 1.0)
}

#[test]
fn a_slow_replica_costs_only_its_lost_capacity_with_load_aware_balancing() {
    let slow = preset("fleet-slow-replica");
    for (balancer, weights) in [
        (BalancerKind::LeastOutstanding, Weights::Orca),
        (BalancerKind::Weighted, Weights::Orca),
        (BalancerKind::Weighted, Weights::AgentCheck),
    ] {
        let mut scenario = with(&slow, balancer, false);
        scenario.fleet.as_mut().unwrap().weights = weights;
        let report = run(&scenario, PolicyKind::Shed);
        assert!(
            report.of_ideal() >= 0.95,
            "{balancer:?} {weights:?}: {} of {} rps",
            report.report.total.goodput_rps,
            report.ideal_rps
        );
        assert!(report.report.total.late <= 20, "{:?}", report.report.total);
    }
    // Round robin keeps sending the slow replica a quarter of the load.
    let round_robin = run(
        &with(&slow, BalancerKind::RoundRobin, false),
        PolicyKind::Shed,
    );
    assert!(round_robin.of_ideal() < 0.94, "{}", round_robin.of_ideal());
    let unshed = run(
        &with(&slow, BalancerKind::RoundRobin, false),
        PolicyKind::None,
    );
    assert!(unshed.of_ideal() < 0.9, "{}", unshed.of_ideal());
    assert!(unshed.report.total.late > 10 * round_robin.report.total.late.max(1));
}

#[test]
fn a_lost_replica_leaves_the_rest_serving_their_capacity_without_late_answers() {
    let lost = preset("fleet-lost-replica");
    for balancer in [BalancerKind::LeastOutstanding, BalancerKind::Weighted] {
        let report = run(&with(&lost, balancer, true), PolicyKind::Shed);
        let t = &report.report.total;
        assert!(
            report.of_ideal() >= 0.95,
            "{balancer:?}: {} of {} rps",
            t.goodput_rps,
            report.ideal_rps
        );
        assert_eq!(t.late, 0, "{balancer:?}: {t:?}");
    }
    // Without shedding, the three left queue 1.2 times their capacity.
    let unshed = run(
        &with(&lost, BalancerKind::LeastOutstanding, true),
        PolicyKind::None,
    );
    let t = &unshed.report.total;
    assert!(t.late > t.served_in_time, "{t:?}");
    assert!(unshed.of_ideal() < 0.5, "{}", unshed.of_ideal());
    // A dead replica refuses at once, so it has the fewest outstanding:
    // least-outstanding sends it nearly everything until the health check
    // notices, unless the balancer retries elsewhere.
    let no_retry = run(
        &with(&lost, BalancerKind::LeastOutstanding, false),
        PolicyKind::Shed,
    );
    assert!(
        no_retry.worst_second_of_ideal() < 0.5,
        "{}",
        no_retry.worst_second_of_ideal()
    );
}

#[test]
fn a_rolling_restart_with_cold_replicas_dips_no_further_than_the_missing_capacity() {
    let restart = preset("fleet-rolling-restart");
    let report = run(&restart, PolicyKind::Shed);
    assert!(report.of_ideal() >= 0.97, "{}", report.of_ideal());
    assert!(
        report.worst_second_of_ideal() >= 0.9,
        "{:?}",
        report.timeline
    );
    assert!(report.report.total.late <= 20, "{:?}", report.report.total);
    // Round robin without shedding gives each cold replica its full share.
    let unshed = run(
        &with(&restart, BalancerKind::RoundRobin, false),
        PolicyKind::None,
    );
    assert!(
        unshed.worst_second_of_ideal() < 0.5,
        "{:?}",
        unshed.timeline
    );
}

#[test]
fn a_fleet_run_is_deterministic_and_counts_every_request_once() {
    let scenario = preset("fleet-lost-replica");
    let first = run(&scenario, PolicyKind::Shed);
    assert_eq!(first, run(&scenario, PolicyKind::Shed));
    // The lost replica's requests are retried on the others in the same
    // order every time (see `a_lost_replicas_requests_fail_in_the_order_they_came`):
    // the weighted balancer's run gave three reports in 30 when not.
    let weighted = with(&scenario, BalancerKind::Weighted, true);
    let once = run(&weighted, PolicyKind::Shed);
    for _ in 0..3 {
        assert_eq!(once, run(&weighted, PolicyKind::Shed));
    }
    let t = &first.report.total;
    assert_eq!(t.offered, t.served_in_time + t.late + t.shed + t.unfinished);
    let sent: u64 = first.replicas.iter().map(|r| r.sent).sum();
    assert_eq!(
        sent,
        t.offered + first.balancer_retries,
        "each request reaches a replica, and a retried one a second"
    );
    // The engine's entry point runs a fleet scenario as a fleet.
    assert_eq!(
        shed_lab::run(&scenario, PolicyKind::Shed, 1.0),
        first.report
    );
}

#[test]
fn what_a_fleet_does_not_simulate_is_refused_with_the_reason() {
    let text = r#"
        name = "t"
        seconds = 1
        [limiter]
        capacity = 4
        [adaptive]
        algorithm = "vegas"
        [[traffic]]
        rps = 100
        service = "10ms"
        timeout = "100ms"
        retries = 1
        [fleet]
        replicas = 2
        balancer = "p3c"
    "#;
    let e = Scenario::from_toml(text, "t.toml").unwrap_err().to_string();
    assert!(e.contains("unknown variant `p3c`"), "{e}");
    let e = Scenario::from_toml(&text.replace("p3c", "p2c"), "t.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("client retries (`traffic.retries`, `[clients]`) are not simulated in a fleet"),
        "{e}"
    );
    assert!(
        e.contains("`[adaptive]` and `[overload]` are not simulated in a fleet"),
        "{e}"
    );
}

//! Clients with retry policies on the paused clock: the second seed's
//! retry arithmetic, and a metastable failure that shedding and budgeted
//! clients recover from while immediate retries into an unshed queue do
//! not (`examples/scenarios/{seed-retries,metastable}.toml`).

use shed_lab::retries::{ClientPolicy, ClientReport, ClientSecond};
use shed_lab::{run, PolicyKind, Scenario};

use crate::preset;

fn with_clients(scenario: &Scenario, policy: ClientPolicy) -> Scenario {
    let mut variant = scenario.clone();
    variant
        .clients
        .as_mut()
        .expect("the preset has [clients]")
        .policy = policy;
    variant
}

fn clients(scenario: &Scenario, server: PolicyKind, policy: ClientPolicy) -> ClientReport {
    run(&with_clients(scenario, policy), server, 1.0)
        .clients
        .expect("a run with clients reports them")
}

fn within(value: u64, expected: u64, tolerance: u64) -> bool {
    value.abs_diff(expected) <= tolerance
}

#[test]
fn the_seeds_retry_arithmetic_8000_on_5000_then_11000_and_6000_refused() {
    let scenario = preset("seed-retries");
    let storm = clients(&scenario, PolicyKind::Shed, ClientPolicy::Immediate);
    let (first, second) = (&storm.per_second[0], &storm.per_second[1]);
    // The first second: 8,000 offered, 3,000 refused.
    assert!(within(first.offered, 8_000, 50), "{first:?}");
    assert!(within(first.refused, 3_000, 50), "{first:?}");
    assert_eq!(first.retries, 0);
    // The next: the 3,000 come back on top of 8,000 new ones, and the
    // service, still at 5,000, refuses 6,000.
    assert!(within(second.offered, 11_000, 100), "{second:?}");
    assert!(within(second.retries, 3_000, 50), "{second:?}");
    assert!(within(second.refused, 6_000, 100), "{second:?}");
    // A budget holds the same clients to a tenth of their first attempts.
    let budget = clients(&scenario, PolicyKind::Shed, ClientPolicy::Budget);
    for s in &budget.per_second {
        assert!(s.offered as f64 <= 1.11 * s.first_attempts as f64, "{s:?}");
    }
    // The service accepts 5 calls in 8, more than the throttle's 1 in
    // K = 2: it holds back almost nothing (it threw away 85% of the first
    // second when calls in flight counted as refusals).
    let throttled = clients(&scenario, PolicyKind::Shed, ClientPolicy::BudgetThrottle);
    assert!(
        throttled.throttled * 100 < throttled.requests,
        "{} of {} throttled",
        throttled.throttled,
        throttled.requests
    );
}

/// The seconds of the metastable scenario's trigger (3x from 2 s to 12 s).
const TRIGGER: std::ops::Range<usize> = 2..12;

fn trigger_seconds(report: &ClientReport) -> &[ClientSecond] {
    &report.per_second[TRIGGER]
}

/// Requests answered in time over requests, in seconds `range`.
fn good_share(report: &ClientReport, range: std::ops::Range<usize>) -> f64 {
    let seconds = &report.per_second[range];
    let good: u64 = seconds.iter().map(|s| s.good).sum();
    let requests: u64 = seconds.iter().map(|s| s.requests).sum();
    good as f64 / requests as f64
}

#[test]
fn immediate_retries_keep_an_unshed_service_collapsed_after_the_trigger() {
    let scenario = preset("metastable");
    let storm = clients(&scenario, PolicyKind::None, ClientPolicy::Immediate);
    assert_eq!(storm.trigger_end_s, Some(12.0));
    assert_eq!(storm.recovered_after_s, None, "{storm:?}");
    // Ten seconds after the load fell back to 0.8x, almost nothing is
    // answered in time, and every request is sent about four times.
    let after = good_share(&storm, 12..22);
    assert!(
        after < 0.05,
        "{after:.3} answered in time after the trigger"
    );
    let late = &storm.per_second[16..22];
    assert!(
        late.iter().all(|s| s.amplification > 3.5),
        "the retries sustain the overload: {late:?}"
    );
}

#[test]
fn shed_with_budgeted_clients_recovers_within_two_seconds_of_the_trigger() {
    let scenario = preset("metastable");
    for policy in [ClientPolicy::Budget, ClientPolicy::BudgetThrottle] {
        let report = clients(&scenario, PolicyKind::Shed, policy);
        let recovered = report.recovered_after_s.expect("recovers");
        assert!(recovered <= 2.0, "{policy}: recovered after {recovered} s");
        // Goodput against the offered 0.8x, from 2 s after the trigger.
        let after = good_share(&report, 14..22);
        assert!(
            after >= 0.95,
            "{policy}: {after:.3} of 0.8x answered in time"
        );
        assert!(report.amplification <= 1.1, "{policy}: {report:?}");
        // Every second, the ones right after the trigger included: the
        // retries of its last refusals, paced at the rate of 3x, arrive
        // on a load 3.75 times lower, and the budget sends only those
        // that the new first attempts earn (it was 1.27 and 1.13 when the
        // budget was spent when a retry was scheduled).
        for s in &report.per_second {
            assert!(s.amplification <= 1.1, "{policy}: {s:?}");
        }
        let after = &report.per_second[12..15];
        assert!(
            after.iter().any(|s| s.retries > 0),
            "{policy}: retries still go after the trigger: {after:?}"
        );
        assert!(report.revoked > 0, "{policy}: some were not earned");
    }
}

#[test]
fn retries_ranked_below_first_attempts_keep_first_attempts_served_at_3x() {
    let scenario = preset("metastable");
    let mut unranked = scenario.clone();
    unranked.limiter.retries_yield = Some(false);
    // First attempts answered in time per second of the trigger.
    let first_goodput = |scenario: &Scenario, policy| {
        let report = clients(scenario, PolicyKind::Shed, policy);
        let seconds = trigger_seconds(&report);
        seconds.iter().map(|s| s.first_good).sum::<u64>() as f64 / seconds.len() as f64
    };
    for (policy, at_least) in [(ClientPolicy::Backoff, 10.0), (ClientPolicy::Budget, 1.1)] {
        let ranked = first_goodput(&scenario, policy);
        let flat = first_goodput(&unranked, policy);
        // The capacity is 1,000 rps: ranked, first attempts get nearly all.
        assert!(ranked >= 950.0, "{policy}: {ranked:.0} rps");
        assert!(
            ranked >= at_least * flat,
            "{policy}: ranked {ranked:.0} rps vs arrival order {flat:.0} rps"
        );
    }
}

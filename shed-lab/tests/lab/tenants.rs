//! The tenant presets in virtual time: the runtime's fair lanes, tiers and
//! cohorts against reject-when-full and against shed without tenant keys,
//! on the same traffic (see BENCHMARKS.md, "Tenants").

use std::path::PathBuf;

use shed_lab::tenants::{self, GroupCounts, TenantsReport};
use shed_lab::{PolicyKind, Report, Scenario};

fn preset(name: &str) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/scenarios")
        .join(format!("{name}.toml"));
    Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// reject-when-full, shed, and shed without keys, on the same traffic.
fn compare(scenario: &Scenario) -> [Report; 3] {
    let reports = tenants::compare(
        scenario,
        &[PolicyKind::RejectWhenFull, PolicyKind::Shed],
        1.0,
    );
    eprintln!("{}", tenants::table(&reports));
    reports.try_into().expect("three runs")
}

fn tenants(report: &Report) -> &TenantsReport {
    report.tenants.as_ref().expect("a [tenants] scenario")
}

fn group<'a>(report: &'a Report, name: &str) -> &'a GroupCounts {
    tenants(report)
        .groups
        .iter()
        .find(|g| g.name == name)
        .expect("a group of the preset")
}

#[test]
fn the_quiet_tenants_keep_their_service_next_to_a_noisy_one() {
    let scenario = preset("tenants-noisy-neighbour");
    let [tower, shed, without] = compare(&scenario);
    let quiet = group(&shed, "quiet");
    // At exactly their part with random arrivals, a lane is at times
    // behind; 96% here (99.4% at 90% of their part, see BENCHMARKS.md).
    assert!(quiet.in_time_share >= 0.95, "{quiet:?}");
    for other in [&tower, &without] {
        let q = group(other, "quiet");
        assert!(q.in_time_share < 0.6, "{}: {q:?}", other.policy);
    }
    // No capacity wasted: the noisy tenant gets the rest.
    assert!(
        shed.total.goodput_rps >= 0.99 * shed.capacity_rps,
        "{:?}",
        shed.total
    );
    assert!(group(&shed, "noisy").of_fair_share >= Some(1.0));
    let jain = |r: &Report| tenants(r).jain.expect("calls served");
    assert!(jain(&shed) > 0.99 && jain(&without) < 0.96);
}

#[test]
fn premium_is_served_while_free_absorbs_the_shedding() {
    let [tower, shed, without] = compare(&preset("tenants-tiers"));
    assert!(group(&shed, "premium").in_time_share >= 0.99);
    assert!(group(&shed, "free").in_time_share < 0.4);
    for other in [&tower, &without] {
        let premium = group(other, "premium");
        assert!(premium.in_time_share < 0.6, "{}: {premium:?}", other.policy);
    }
}

#[test]
fn a_hundred_thousand_zipf_tenants_lose_no_goodput() {
    let [tower, shed, without] = compare(&preset("tenants-zipf"));
    let (keyed, single) = (shed.total.goodput_rps, without.total.goodput_rps);
    assert!(
        (keyed - single).abs() <= 0.01 * single,
        "{keyed} vs {single}"
    );
    assert!(keyed > tower.total.goodput_rps);
    // Fairer than one anonymous tenant: the heaviest tenants wait behind
    // themselves.
    let jain = |r: &Report| tenants(r).jain.expect("calls served");
    assert!(jain(&shed) > jain(&without) + 0.05);
}

#[test]
fn a_class_shed_to_a_third_is_shed_by_cohort() {
    let [_, shed, without] = compare(&preset("tenants-cohorts"));
    let users = group(&shed, "users");
    assert!((0.30..0.37).contains(&users.in_time_share), "{users:?}");
    assert!(tenants(&shed).all_or_none >= 0.9);
    assert!(tenants(&without).all_or_none < 0.05);
}

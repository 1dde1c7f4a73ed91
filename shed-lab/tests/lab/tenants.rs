//! The tenant presets in virtual time: the runtime's fair lanes, tiers and
//! cohorts against reject-when-full and against shed without tenant keys,
//! on the same traffic (see BENCHMARKS.md, "Tenants").

use shed_lab::tenants::{self, GroupCounts, TenantsReport};
use shed_lab::{PolicyKind, Report, Scenario};

use crate::preset;

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
    // Issue 15's goal on eight seeds (eight draws of the Poisson arrivals
    // and of who sends each call): the nine quiet tenants, each at exactly
    // its fair part, keep 99% of their calls served in time, and the noisy
    // one gets the rest of the capacity.
    let mut quiet_in_time = Vec::new();
    let mut summary = String::from(
        "seed  quiet in time: reject-when-full  shed-no-keys   shed  | noisy served  goodput\n",
    );
    for seed in 0..8 {
        let mut scenario = preset("tenants-noisy-neighbour");
        scenario.seed = seed;
        let [tower, shed, without] = compare(&scenario);
        let quiet = group(&shed, "quiet");
        quiet_in_time.push(quiet.in_time_share);
        summary += &format!(
            "{seed:>4} {:>33.1}% {:>12.1}% {:>6.2}% | {:>12} {:>8.1}\n",
            100.0 * group(&tower, "quiet").in_time_share,
            100.0 * group(&without, "quiet").in_time_share,
            100.0 * quiet.in_time_share,
            group(&shed, "noisy").served_in_time,
            shed.total.goodput_rps,
        );
        for other in [&tower, &without] {
            let q = group(other, "quiet");
            assert!(
                q.in_time_share < 0.6,
                "seed {seed}: {}: {q:?}",
                other.policy
            );
        }
        // No capacity wasted: the noisy tenant gets the rest (its part by
        // max-min fairness over the whole run may be more: a quiet tenant
        // whose calls came above its part over the run was served them).
        let (quiet, noisy) = (quiet.served_in_time, group(&shed, "noisy").served_in_time);
        let capacity = shed.capacity_rps * scenario.seconds;
        assert!(
            (quiet + noisy) as f64 >= 0.99 * capacity,
            "seed {seed}: the noisy one {noisy}, the quiet ones {quiet}, of {capacity}"
        );
        let jain = |r: &Report| tenants(r).jain.expect("calls served");
        assert!(jain(&shed) > 0.99 && jain(&without) < 0.96, "seed {seed}");
    }
    eprintln!("{summary}");
    assert!(
        quiet_in_time.iter().all(|&q| q >= 0.99),
        "{quiet_in_time:?}"
    );
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

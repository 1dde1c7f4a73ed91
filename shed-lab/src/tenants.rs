//! Tenants in the lab: a scenario's `[tenants]` table gives every call a
//! tenant, drawn from groups (a few quiet tenants and one noisy one, plan
//! tiers, 100,000 Zipf-distributed tenants), and the `shed` policy hands
//! the tenant to the real limiter (its fair lanes, tiers and tally: the
//! lab does not model fairness itself). Reports count each group's calls
//! and how fairly the calls served were spread over the tenants.
//!
//! ```toml
//! [tenants]
//! keys = true            # optional: false runs the same tenants' traffic without keys
//! tiers = ["premium", "free"]  # optional: plans, first served first
//!
//! [[tenants.group]]
//! name = "quiet"
//! count = 9              # tenants in the group
//! load = 1.0             # each tenant's offered load, relative to the other groups'
//! distribution = "uniform"  # or "zipf": tenants' loads fall as 1/rank^zipf
//! zipf = 1.0
//! plan = "premium"       # optional: the group's plan (one of `tiers`)
//!
//! [[tenants.admit]]      # optional: hold a class back to a fraction (cohorts)
//! class = "optional"
//! fraction = 0.3333
//! at = "0s"              # from the start of the measured window
//! ```
//!
//! Each call of every `[[traffic]]` stream picks a group with a
//! probability of `count x load` over the sum, then a tenant of the group
//! (evenly, or by Zipf rank). The draw is the same under every policy.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use shed::Tenant;
use tokio::time::Instant;

use crate::{run, PolicyKind, Report, Scenario};

/// The `[tenants]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantsConfig {
    /// Whether calls carry their tenant to the limiter (default true);
    /// false is the same traffic as one anonymous tenant.
    #[serde(default = "yes")]
    pub keys: bool,
    /// Plans, first served first (the limiter's [`shed::Tiers`]).
    #[serde(default)]
    pub tiers: Vec<String>,
    /// The groups of tenants.
    #[serde(rename = "group")]
    pub groups: Vec<Group>,
    /// Classes held back to a fraction (as the overload controller's ramp
    /// does), under the `shed` policy.
    #[serde(default, rename = "admit")]
    pub admits: Vec<Admit>,
}

/// A `[[tenants.admit]]` table: from `at` into the window on, the limiter
/// admits only `fraction` of `class` ([`shed::Limiter::set_class_admitted_fraction`]):
/// by cohort for calls with a tenant, evenly spaced without.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Admit {
    /// The class.
    pub class: String,
    /// The part admitted, in [0, 1].
    pub fraction: f64,
    /// When, from the start of the measured window (default: its start).
    #[serde(default)]
    pub at: Option<crate::scenario::Dur>,
}

fn yes() -> bool {
    true
}

fn one() -> f64 {
    1.0
}

/// A `[[tenants.group]]` table: tenants alike in load and plan.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    /// Its name, in reports; its tenants are `NAME-0`, `NAME-1`, ...
    pub name: String,
    /// How many tenants.
    pub count: u32,
    /// Each tenant's offered load relative to the other groups' (the
    /// group's mean tenant, under Zipf).
    #[serde(default = "one")]
    pub load: f64,
    /// How the group's calls spread over its tenants.
    #[serde(default)]
    pub distribution: Distribution,
    /// Zipf's exponent (default 1).
    pub zipf: Option<f64>,
    /// The group's plan, one of `tiers`.
    pub plan: Option<String>,
}

/// How a group's calls spread over its tenants.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    /// Every tenant alike.
    #[default]
    Uniform,
    /// The tenant of rank k (from 1) offers in proportion to 1/k^s.
    Zipf,
}

impl TenantsConfig {
    /// What is wrong with the table.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.groups.is_empty() {
            problems.push("`[tenants]` needs at least one `[[tenants.group]]`".into());
        }
        if self.tiers.len() > shed::Tiers::MAX {
            problems.push(format!(
                "`tenants.tiers`: at most {} plans",
                shed::Tiers::MAX
            ));
        }
        for a in &self.admits {
            if !(0.0..=1.0).contains(&a.fraction) {
                problems.push(format!(
                    "`tenants.admit` of `{}`: `fraction` must be in [0, 1]",
                    a.class
                ));
            }
        }
        for g in &self.groups {
            let at = format!("tenants group `{}`", g.name);
            if g.count == 0 || g.count > 10_000_000 {
                problems.push(format!("{at}: `count` must be from 1 to 10,000,000"));
            }
            if !(g.load > 0.0 && g.load.is_finite()) {
                problems.push(format!("{at}: `load` must be positive"));
            }
            if g.zipf.is_some_and(|s| !(s > 0.0 && s.is_finite())) {
                problems.push(format!("{at}: `zipf` must be positive"));
            }
            if g.zipf.is_some() && g.distribution != Distribution::Zipf {
                problems.push(format!("{at}: `zipf` needs `distribution = \"zipf\"`"));
            }
            if let Some(plan) = &g.plan {
                if !self.tiers.contains(plan) {
                    problems.push(format!(
                        "{at}: `plan` = \"{plan}\" is not in `tenants.tiers`"
                    ));
                }
            }
        }
        problems
    }

    /// The limiter's tiers, if any.
    pub fn tiers(&self) -> Option<shed::Tiers> {
        (!self.tiers.is_empty()).then(|| shed::Tiers::new(self.tiers.clone()))
    }
}

/// Holds the `[[tenants.admit]]` classes back on `limiter`, each at its
/// time from `start`.
pub fn hold_back(config: &TenantsConfig, limiter: &shed::Limiter, start: Instant) {
    for admit in config.admits.clone() {
        let limiter = limiter.clone();
        tokio::task::spawn_local(async move {
            tokio::time::sleep_until(start + admit.at.map_or(Duration::ZERO, |d| d.0)).await;
            limiter
                .set_class_admitted_fraction(&admit.class, admit.fraction)
                .expect("a class of the scenario");
        });
    }
}

/// A tenant's calls in the measured window.
#[derive(Debug, Clone, Copy, Default)]
struct Calls {
    offered: u64,
    in_time: u64,
    late: u64,
    shed: u64,
}

/// The tenants of a run: who each call is, and what each tenant got.
pub struct Tenants {
    config: TenantsConfig,
    /// Every tenant, group after group.
    tenants: Vec<Tenant>,
    /// Each group's first tenant's index.
    first: Vec<usize>,
    /// The groups' cumulative weights (`count x load`), for the draw.
    group_cdf: Vec<f64>,
    /// Per group, the cumulative Zipf weights of its ranks (empty: even).
    rank_cdf: Vec<Vec<f64>>,
    calls: RefCell<Vec<Calls>>,
    /// Per group, its refusals by reason.
    refusals: RefCell<Vec<BTreeMap<String, u64>>>,
}

impl Tenants {
    /// The tenants `config` describes, in group order, with nothing counted yet.
    pub fn new(config: &TenantsConfig) -> Self {
        let mut tenants = Vec::new();
        let mut first = Vec::new();
        let mut group_cdf = Vec::new();
        let mut rank_cdf = Vec::new();
        let mut total = 0.0;
        for g in &config.groups {
            first.push(tenants.len());
            tenants.extend((0..g.count).map(|i| {
                let tenant = Tenant::new(format!("{}-{i}", g.name));
                match &g.plan {
                    Some(plan) => tenant.plan(plan.as_str()),
                    None => tenant,
                }
            }));
            total += f64::from(g.count) * g.load;
            group_cdf.push(total);
            rank_cdf.push(match g.distribution {
                Distribution::Uniform => Vec::new(),
                Distribution::Zipf => {
                    let s = g.zipf.unwrap_or(1.0);
                    let mut sum = 0.0;
                    (1..=g.count)
                        .map(|k| {
                            sum += f64::from(k).powf(-s);
                            sum
                        })
                        .collect()
                }
            });
        }
        Self {
            config: config.clone(),
            calls: RefCell::new(vec![Calls::default(); tenants.len()]),
            refusals: RefCell::new(vec![BTreeMap::new(); config.groups.len()]),
            tenants,
            first,
            group_cdf,
            rank_cdf,
        }
    }

    /// The tenant of the next call, drawn from `rng`.
    pub fn draw(&self, rng: &mut fastrand::Rng) -> usize {
        let pick = |cdf: &[f64], u: f64| {
            let x = u * cdf.last().copied().unwrap_or(0.0);
            cdf.partition_point(|&c| c <= x).min(cdf.len() - 1)
        };
        let group = pick(&self.group_cdf, rng.f64());
        let count = self.config.groups[group].count as usize;
        let rank = match &self.rank_cdf[group] {
            cdf if cdf.is_empty() => rng.usize(..count),
            cdf => pick(cdf, rng.f64()),
        };
        self.first[group] + rank
    }
    /// How many tenants the run has.
    pub fn len(&self) -> usize {
        self.tenants.len()
    }

    /// Whether the run has no tenants.
    pub fn is_empty(&self) -> bool {
        self.tenants.is_empty()
    }

    /// The `i`th tenant, whether or not its calls carry its key.
    pub fn tenant(&self, i: usize) -> &Tenant {
        &self.tenants[i]
    }

    /// The key a call of tenant `i` carries to the limiter, if any.
    pub fn key(&self, i: usize) -> Option<&Tenant> {
        self.config.keys.then(|| &self.tenants[i])
    }

    /// Counts a call of tenant `i` offered.
    pub fn offer(&self, i: usize) {
        self.calls.borrow_mut()[i].offered += 1;
    }

    /// Counts a call of tenant `i` served, in time or late.
    pub fn served(&self, i: usize, in_time: bool) {
        let calls = &mut self.calls.borrow_mut()[i];
        if in_time {
            calls.in_time += 1;
        } else {
            calls.late += 1;
        }
    }

    /// Counts a call of tenant `i` refused, and by what (`reason`).
    pub fn shed(&self, i: usize, reason: &str) {
        self.calls.borrow_mut()[i].shed += 1;
        let group = self.first.partition_point(|&f| f <= i) - 1;
        *self.refusals.borrow_mut()[group]
            .entry(reason.to_string())
            .or_default() += 1;
    }

    /// What each group got, and how fairly the calls served in time were
    /// spread over the tenants.
    pub fn report(&self) -> TenantsReport {
        let calls = self.calls.borrow();
        let offered: Vec<u64> = calls.iter().map(|c| c.offered).collect();
        let served: u64 = calls.iter().map(|c| c.in_time).sum();
        let fair = max_min_fair(&offered, served);
        let groups = self
            .config
            .groups
            .iter()
            .enumerate()
            .map(|(g, group)| {
                let range = self.first[g]..self.first[g] + group.count as usize;
                let mut sum = Calls::default();
                for c in &calls[range.clone()] {
                    sum.offered += c.offered;
                    sum.in_time += c.in_time;
                    sum.late += c.late;
                    sum.shed += c.shed;
                }
                let fair: f64 = fair[range].iter().sum();
                GroupCounts {
                    name: group.name.clone(),
                    plan: group.plan.clone(),
                    tenants: group.count,
                    offered: sum.offered,
                    served_in_time: sum.in_time,
                    late: sum.late,
                    shed: sum.shed,
                    shed_by_reason: self.refusals.borrow()[g].clone(),
                    in_time_share: ratio(sum.in_time as f64, sum.offered as f64),
                    of_fair_share: (fair > 0.0).then(|| round(sum.in_time as f64 / fair)),
                }
            })
            .collect();
        let shares: Vec<f64> = calls
            .iter()
            .zip(&fair)
            .filter(|(_, &f)| f > 0.0)
            .map(|(c, &f)| (c.in_time as f64 / f).min(1.0))
            .collect();
        let several: Vec<&Calls> = calls.iter().filter(|c| c.offered >= 2).collect();
        let all_or_none = several
            .iter()
            .filter(|c| c.in_time == 0 || c.in_time == c.offered)
            .count();
        TenantsReport {
            keys: self.config.keys,
            groups,
            jain: (served > 0).then(|| round(jain(&shares))),
            all_or_none: round(ratio(all_or_none as f64, several.len() as f64)),
        }
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        round(a / b)
    } else {
        1.0
    }
}

fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// Each tenant's max-min fair part of `total` calls, given what each
/// offered: no tenant gets more than it offered, and what a light tenant
/// leaves is shared evenly by the others (water-filling).
pub fn max_min_fair(offered: &[u64], total: u64) -> Vec<f64> {
    let mut order: Vec<usize> = (0..offered.len()).filter(|&i| offered[i] > 0).collect();
    order.sort_by_key(|&i| offered[i]);
    let mut fair = vec![0.0; offered.len()];
    let mut left = total as f64;
    for (k, &i) in order.iter().enumerate() {
        let level = left / (order.len() - k) as f64;
        let part = (offered[i] as f64).min(level);
        fair[i] = part;
        left -= part;
    }
    fair
}

/// Jain's fairness index of `x`: 1 when all are equal, 1/n when one has
/// everything.
pub fn jain(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    let squares: f64 = x.iter().map(|v| v * v).sum();
    if squares == 0.0 {
        1.0
    } else {
        sum * sum / (x.len() as f64 * squares)
    }
}

/// One group's calls in a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupCounts {
    /// The group's name.
    pub name: String,
    /// Its plan, if any.
    pub plan: Option<String>,
    /// How many tenants it has.
    pub tenants: u32,
    /// Calls offered in the window.
    pub offered: u64,
    /// Answered before the client's timeout.
    pub served_in_time: u64,
    /// Answered after it.
    pub late: u64,
    /// Refused.
    pub shed: u64,
    /// Refusals by reason (`max_wait`, `queue_full`, ...).
    pub shed_by_reason: BTreeMap<String, u64>,
    /// Served in time over offered.
    pub in_time_share: f64,
    /// Served in time over the group's max-min fair part of everything
    /// served in time (above 1: it had more, which others did not want);
    /// `None` when nothing was served in time.
    pub of_fair_share: Option<f64>,
}

/// The tenants' side of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TenantsReport {
    /// Whether calls carried their tenants' keys.
    pub keys: bool,
    /// Per group.
    pub groups: Vec<GroupCounts>,
    /// Jain's index over the tenants of their served-in-time calls each
    /// against its max-min fair part (capped at 1): 1 when every tenant
    /// got at least its fair part of what was served; `None` when nothing
    /// was.
    pub jain: Option<f64>,
    /// Of the tenants with two calls or more, the share who had all or
    /// none of them served in time (what cohort shedding aims at).
    pub all_or_none: f64,
}

/// The policy name of `shed` run without tenant keys.
pub const SHED_WITHOUT_KEYS: &str = "shed-no-keys";

/// Runs a scenario with a `[tenants]` table under each of `policies`, and
/// under `shed` once more without tenant keys (the same traffic as one
/// anonymous tenant), all on the same traffic.
pub fn compare(scenario: &Scenario, policies: &[PolicyKind], factor: f64) -> Vec<Report> {
    let mut reports: Vec<Report> = policies
        .iter()
        .map(|&policy| run(scenario, policy, factor))
        .collect();
    if policies.contains(&PolicyKind::Shed) && scenario.tenants.as_ref().is_some_and(|t| t.keys) {
        let mut without = scenario.clone();
        if let Some(t) = without.tenants.as_mut() {
            t.keys = false;
        }
        let mut report = run(&without, PolicyKind::Shed, factor);
        report.policy = SHED_WITHOUT_KEYS.to_string();
        reports.push(report);
    }
    reports
}

/// Renders each run's groups: offered, served in time, shed, the share in
/// time and of the fair part, and the run's fairness figures.
pub fn table(reports: &[Report]) -> String {
    let mut out = format!(
        "{:<16} {:<10} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8}   {:>6} {:>11}  {}\n",
        "policy",
        "group",
        "tenants",
        "offered",
        "in time",
        "shed",
        "in time",
        "of fair",
        "jain",
        "all-or-none",
        "refused by"
    );
    for r in reports {
        let Some(t) = &r.tenants else { continue };
        for (i, g) in t.groups.iter().enumerate() {
            let (jain, all) = if i == 0 {
                (
                    t.jain
                        .map_or_else(|| "-".to_string(), |j| format!("{j:.3}")),
                    format!("{:.1}%", 100.0 * t.all_or_none),
                )
            } else {
                (String::new(), String::new())
            };
            let reasons: Vec<String> = g
                .shed_by_reason
                .iter()
                .map(|(r, n)| format!("{r}={n}"))
                .collect();
            let line = format!(
                "{:<16} {:<10} {:>9} {:>9} {:>8} {:>8} {:>7.1}% {:>8}   {:>6} {:>11}  {}",
                if i == 0 { r.policy.as_str() } else { "" },
                g.name,
                g.tenants,
                g.offered,
                g.served_in_time,
                g.shed,
                100.0 * g.in_time_share,
                g.of_fair_share
                    .map_or_else(|| "-".to_string(), |f| format!("{:.1}%", 100.0 * f)),
                jain,
                all,
                reasons.join(" "),
            );
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}

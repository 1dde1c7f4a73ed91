//! What a run measured, per class and in total, as JSON and as a table.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

/// The counts of one class, or of all of them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Counts {
    /// Calls sent, retries included.
    pub offered: u64,
    /// Calls answered before their client's timeout.
    pub served_in_time: u64,
    /// Calls answered after their client had given up: wasted work.
    pub late: u64,
    /// Calls refused by the server.
    pub shed: u64,
    /// Calls still queued or running when the run stopped.
    pub unfinished: u64,
    /// Retries among the offered calls.
    pub retries: u64,
    /// Served in time per simulated second of arrivals.
    pub goodput_rps: f64,
    /// Median latency of the calls served in time.
    pub p50_ms: f64,
    /// 99th percentile latency of the calls served in time.
    pub p99_ms: f64,
    /// Refusals by reason.
    pub shed_by_reason: BTreeMap<String, u64>,
}

/// One run: a scenario, a policy, a rate factor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The scenario's name.
    pub scenario: String,
    /// The policy's name.
    pub policy: String,
    /// The factor every stream's rate was multiplied by.
    pub factor: f64,
    /// Simulated seconds of arrivals.
    pub seconds: f64,
    /// The service's throughput with every slot busy.
    pub capacity_rps: f64,
    /// All classes together.
    pub total: Counts,
    /// Per class.
    pub classes: BTreeMap<String, Counts>,
    /// Second by second: calls served in time that arrived in that second,
    /// and the limit at its end (`shed` policy).
    pub timeline: Vec<Second>,
    /// The adaptive limit's algorithm, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<String>,
    /// How often the adaptive limit turned from rising to falling or back:
    /// a measure of oscillation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_direction_changes: Option<u32>,
    /// How often the overload controller started or stopped shedding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shedding_transitions: Option<u32>,
    /// What the clients did, when the scenario has a `[clients]` table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clients: Option<crate::retries::ClientReport>,
    /// Per group of tenants, with the scenario's `[tenants]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenants: Option<crate::tenants::TenantsReport>,
    /// The stretches between the scenario's events, with how long the
    /// policy took to serve near the best possible goodput in each.
    pub phases: Vec<PhaseReport>,
}

/// One stretch of a run between events, and how fast the policy found its
/// way in it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseReport {
    /// When it starts, in seconds from the start of the window.
    pub start_s: f64,
    /// When it ends.
    pub end_s: f64,
    /// The best goodput possible in it: everything offered, or the
    /// capacity's worth of it (see [`Phase`](crate::scenario::Phase)).
    pub ideal_rps: f64,
    /// How long after its start the policy first served, over half a
    /// second, at least 90% of `ideal_rps`; `None` if it never did.
    pub converged_after_s: Option<f64>,
}

/// How much of the ideal a half-second window must serve to count as
/// converged.
const CONVERGED: f64 = 0.9;
/// The window over which convergence is judged, in ticks.
const CONVERGENCE_TICKS: usize = 5;

/// When, in each phase, the calls served in time (by tick of arrival)
/// first reached `CONVERGED` of the ideal over `CONVERGENCE_TICKS`.
pub fn phase_reports(phases: &[crate::scenario::Phase], per_tick: &[u64]) -> Vec<PhaseReport> {
    let tick_s = TICK.as_secs_f64();
    phases
        .iter()
        .map(|phase| {
            let first = (phase.start_s / tick_s).round() as usize;
            let end = ((phase.end_s / tick_s).round() as usize).max(first);
            let needed = CONVERGED * phase.ideal_rps * tick_s * CONVERGENCE_TICKS as f64;
            let converged_at = (first..end.saturating_sub(CONVERGENCE_TICKS - 1).max(first + 1))
                .find(|&t| {
                    let served: u64 = (t..t + CONVERGENCE_TICKS)
                        .map(|i| per_tick.get(i).copied().unwrap_or(0))
                        .sum();
                    served as f64 >= needed
                });
            PhaseReport {
                start_s: phase.start_s,
                end_s: phase.end_s,
                ideal_rps: (phase.ideal_rps * 10.0).round() / 10.0,
                converged_after_s: converged_at
                    .map(|t| ((t - first) as f64 * tick_s * 10.0).round() / 10.0),
            }
        })
        .collect()
}

/// One second of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Second {
    /// The second, from the start.
    pub second: u32,
    /// Calls arriving in this second that were served in time.
    pub served_in_time: u64,
    /// Calls arriving in this second (first attempts and retries).
    pub offered: u64,
    /// The limiter's capacity at the end of the second (`shed` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// The resolution at which served calls are counted over time.
pub(crate) const TICK: Duration = Duration::from_millis(100);

/// Tallies a run as it goes.
#[derive(Debug, Default)]
pub struct Tally {
    /// Served in time, by the `TICK` of arrival.
    pub per_tick: Vec<u64>,
    /// Offered, by the `TICK` of arrival.
    pub offered_per_tick: Vec<u64>,
    offered: u64,
    retries: u64,
    late: u64,
    latencies_us: Vec<u64>,
    shed: BTreeMap<String, u64>,
}

impl Tally {
    /// Counts a call offered `arrival` into the window; `retry` when it is
    /// a retry of an earlier one.
    pub fn offer(&mut self, retry: bool, arrival: Duration) {
        self.offered += 1;
        let tick = (arrival.as_nanos() / TICK.as_nanos()) as usize;
        if self.offered_per_tick.len() <= tick {
            self.offered_per_tick.resize(tick + 1, 0);
        }
        self.offered_per_tick[tick] += 1;
        if retry {
            self.retries += 1;
        }
    }

    /// A call that arrived `arrival` into the window was served.
    /// Counts a call served after `latency`, in time or late, by its `arrival`'s tick.
    pub fn served(&mut self, latency: Duration, in_time: bool, arrival: Duration) {
        if in_time {
            let tick = (arrival.as_nanos() / TICK.as_nanos()) as usize;
            if self.per_tick.len() <= tick {
                self.per_tick.resize(tick + 1, 0);
            }
            self.per_tick[tick] += 1;
            self.latencies_us.push(latency.as_micros() as u64);
        } else {
            self.late += 1;
        }
    }

    /// Counts a call refused, by `reason`.
    pub fn shed(&mut self, reason: &str) {
        *self.shed.entry(reason.to_string()).or_default() += 1;
    }

    /// The sum of several tallies (a fleet's replicas).
    pub fn merge(tallies: &[&Tally]) -> Tally {
        let mut all = Tally::default();
        for t in tallies {
            all.offered += t.offered;
            all.retries += t.retries;
            all.late += t.late;
            if all.per_tick.len() < t.per_tick.len() {
                all.per_tick.resize(t.per_tick.len(), 0);
            }
            for (a, b) in all.per_tick.iter_mut().zip(&t.per_tick) {
                *a += b;
            }
            if all.offered_per_tick.len() < t.offered_per_tick.len() {
                all.offered_per_tick.resize(t.offered_per_tick.len(), 0);
            }
            for (a, b) in all.offered_per_tick.iter_mut().zip(&t.offered_per_tick) {
                *a += b;
            }
            all.latencies_us.extend_from_slice(&t.latencies_us);
            for (reason, n) in &t.shed {
                *all.shed.entry(reason.clone()).or_default() += n;
            }
        }
        all
    }

    /// The totals over a run of `seconds`.
    pub fn counts(&self, seconds: f64) -> Counts {
        let mut sorted = self.latencies_us.clone();
        sorted.sort_unstable();
        let served = sorted.len() as u64;
        let shed: u64 = self.shed.values().sum();
        Counts {
            offered: self.offered,
            served_in_time: served,
            late: self.late,
            shed,
            unfinished: self.offered - served - self.late - shed,
            retries: self.retries,
            goodput_rps: round(served as f64 / seconds, 1),
            p50_ms: percentile_ms(&sorted, 0.50),
            p99_ms: percentile_ms(&sorted, 0.99),
            shed_by_reason: self.shed.clone(),
        }
    }
}

fn round(x: f64, digits: i32) -> f64 {
    let k = 10f64.powi(digits);
    (x * k).round() / k
}

/// The nearest-rank percentile, in milliseconds.
fn percentile_ms(sorted_us: &[u64], q: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted_us.len() as f64).ceil() as usize).clamp(1, sorted_us.len());
    round(sorted_us[rank - 1] as f64 / 1000.0, 2)
}

/// Renders runs as an aligned table, one row per run.
pub fn table(reports: &[Report]) -> String {
    let header = [
        "policy",
        "factor",
        "offered",
        "in time",
        "late",
        "shed",
        "unfinished",
        "goodput",
        "of cap.",
        "p50",
        "p99",
    ];
    let rows: Vec<Vec<String>> = reports
        .iter()
        .map(|r| {
            let t = &r.total;
            vec![
                r.policy.clone(),
                format!("{}x", r.factor),
                t.offered.to_string(),
                t.served_in_time.to_string(),
                t.late.to_string(),
                t.shed.to_string(),
                t.unfinished.to_string(),
                format!("{:.0} rps", t.goodput_rps),
                format!("{:.1}%", 100.0 * t.goodput_rps / r.capacity_rps),
                format!("{:.1} ms", t.p50_ms),
                format!("{:.1} ms", t.p99_ms),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: Vec<String>| -> String {
        cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
    };
    let mut out = line(header.iter().map(|h| h.to_string()).collect());
    out.push('\n');
    for row in rows {
        out.push_str(&line(row));
        out.push('\n');
    }
    out
}

/// Renders a comparison of adaptive algorithms: totals, oscillation, and
/// the second-by-second goodput and limit.
pub fn algorithm_table(reports: &[Report]) -> String {
    let mut out = format!(
        "{:<10} {:>9} {:>8} {:>6} {:>7} {:>9}  {:<16}  per second: served in time / limit\n",
        "algorithm", "goodput", "p99", "late", "shed", "reversals", "converged after"
    );
    for r in reports {
        let seconds: Vec<String> = r
            .timeline
            .iter()
            .map(|s| {
                format!(
                    "{}/{}",
                    s.served_in_time,
                    s.limit.map_or("-".into(), |l| l.to_string())
                )
            })
            .collect();
        let converged: Vec<String> = r
            .phases
            .iter()
            .map(|p| {
                p.converged_after_s
                    .map_or("never".into(), |s| format!("{s:.1}s"))
            })
            .collect();
        out.push_str(&format!(
            "{:<10} {:>5.0} rps {:>5.0} ms {:>6} {:>7} {:>9}  {:<16}  {}\n",
            r.adaptive.as_deref().unwrap_or("-"),
            r.total.goodput_rps,
            r.total.p99_ms,
            r.total.late,
            r.total.shed,
            r.limit_direction_changes.unwrap_or(0),
            converged.join(" "),
            seconds.join(" ")
        ));
    }
    out
}

/// Renders the per-class counts of one run.
pub fn class_table(report: &Report) -> String {
    let mut out = String::new();
    for (class, c) in &report.classes {
        let reasons: Vec<String> = c
            .shed_by_reason
            .iter()
            .map(|(r, n)| format!("{r}={n}"))
            .collect();
        out.push_str(&format!(
            "  {class:<12} offered {:>7}  in time {:>7}  late {:>6}  shed {:>6} {}  p99 {:.1} ms\n",
            c.offered,
            c.served_in_time,
            c.late,
            c.shed,
            if reasons.is_empty() {
                String::new()
            } else {
                format!("({})", reasons.join(", "))
            },
            c.p99_ms
        ));
    }
    out
}

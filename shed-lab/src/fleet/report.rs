//! What a fleet run measured: the engine's report of the whole fleet,
//! the best goodput the replicas present could give, and each replica's
//! part.

use serde::Serialize;

use crate::Report;

/// One replica's part of a run (requests that arrived in the window).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReplicaCounts {
    /// Requests the balancer sent it, retries included.
    pub sent: u64,
    /// Answered before their client's timeout.
    pub served_in_time: u64,
    /// Answered after their client had given up.
    pub late: u64,
    /// Refused, or failed with the replica.
    pub refused: u64,
}

/// One second of a fleet run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetSecond {
    /// The second, from the start of the window.
    pub second: u32,
    /// Requests arriving in this second that were served in time.
    pub served_in_time: u64,
    /// The best possible: what was offered, or the capacity of the
    /// replicas present (up, in service, at their current speed) if less.
    pub ideal: f64,
}

/// A fleet run: a scenario with a `[fleet]`, a policy on every replica,
/// a balancer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetReport {
    /// The balancer's name.
    pub balancer: String,
    /// Whether the balancer retried refused requests on another replica.
    pub retry: bool,
    /// Whether readiness took replicas out of the rotation.
    pub readiness: bool,
    /// The whole fleet, as the engine reports a single instance; its
    /// `capacity_rps` is the full fleet's at base speed.
    pub report: Report,
    /// The best goodput possible over the window: what was offered, or
    /// the capacity of the replicas present if less, averaged.
    pub ideal_rps: f64,
    /// Requests the balancer sent to a second replica.
    pub balancer_retries: u64,
    /// Per replica.
    pub replicas: Vec<ReplicaCounts>,
    /// Second by second.
    pub timeline: Vec<FleetSecond>,
}

impl FleetReport {
    /// Goodput over the best possible.
    pub fn of_ideal(&self) -> f64 {
        self.report.total.goodput_rps / self.ideal_rps
    }

    /// The worst second's goodput over that second's best possible.
    pub fn worst_second_of_ideal(&self) -> f64 {
        self.timeline
            .iter()
            .filter(|s| s.ideal > 0.0)
            .map(|s| s.served_in_time as f64 / s.ideal)
            .fold(f64::INFINITY, f64::min)
    }
}

/// Renders fleet runs as an aligned table, one row per run.
pub fn table(reports: &[FleetReport]) -> String {
    let header = [
        "balancer",
        "retry",
        "policy",
        "offered",
        "in time",
        "late",
        "shed",
        "goodput",
        "of ideal",
        "worst s",
        "p99",
        "retries",
        "served per replica",
    ];
    let rows: Vec<Vec<String>> = reports
        .iter()
        .map(|f| {
            let t = &f.report.total;
            let per_replica: Vec<String> = f
                .replicas
                .iter()
                .map(|r| r.served_in_time.to_string())
                .collect();
            vec![
                f.balancer.clone(),
                if f.retry { "yes" } else { "no" }.into(),
                f.report.policy.clone(),
                t.offered.to_string(),
                t.served_in_time.to_string(),
                t.late.to_string(),
                t.shed.to_string(),
                format!("{:.0} rps", t.goodput_rps),
                format!("{:.1}%", 100.0 * f.of_ideal()),
                format!("{:.0}%", 100.0 * f.worst_second_of_ideal()),
                format!("{:.0} ms", t.p99_ms),
                f.balancer_retries.to_string(),
                per_replica.join("/"),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: &[String]| -> String {
        let cells: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i < 3 || i == cells.len() - 1 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        cells.join("  ").trim_end().to_string()
    };
    let mut out = line(&header.map(String::from));
    out.push('\n');
    for row in rows {
        out.push_str(&line(&row));
        out.push('\n');
    }
    out
}

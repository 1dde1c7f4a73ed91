//! Robustness across seeds: a result that holds only on the shipped seed
//! is luck. Runs a sweep on many seeds and reports, per rate factor, the
//! worst and the mean of the shed policy against the better anchor.

use std::ops::Range;

use serde::Serialize;

use crate::{run, PolicyKind, Scenario};

/// The shed policy at one rate factor, over a range of seeds.
#[derive(Debug, Clone, Serialize)]
pub struct AcrossSeeds {
    /// The rate factor.
    pub factor: f64,
    /// How many seeds were run.
    pub seeds: u64,
    /// Goodput relative to the better anchor (`reject-when-full` or
    /// `queue-wait`) on the same seed, in percent: the worst seed.
    pub worst_goodput_vs_anchor_pct: f64,
    /// The same, averaged over the seeds.
    pub mean_goodput_vs_anchor_pct: f64,
    /// The highest p99 of served calls, in milliseconds.
    pub worst_p99_ms: f64,
    /// The mean p99 of served calls, in milliseconds.
    pub mean_p99_ms: f64,
    /// The largest share of offered calls refused on any seed, in percent.
    pub most_shed_pct: f64,
}

/// One seed at one factor.
struct Sample {
    goodput_vs_anchor_pct: f64,
    p99_ms: f64,
    shed_pct: f64,
}

fn sample(scenario: &Scenario, factor: f64) -> Sample {
    let shed = run(scenario, PolicyKind::Shed, factor);
    let better_anchor = [PolicyKind::RejectWhenFull, PolicyKind::QueueWait]
        .into_iter()
        .map(|p| run(scenario, p, factor).total.goodput_rps)
        .fold(0.0, f64::max);
    let t = &shed.total;
    Sample {
        goodput_vs_anchor_pct: if better_anchor > 0.0 {
            100.0 * (t.goodput_rps / better_anchor - 1.0)
        } else {
            0.0
        },
        p99_ms: t.p99_ms,
        shed_pct: 100.0 * t.shed as f64 / t.offered.max(1) as f64,
    }
}

/// Runs `scenario` at each factor on every seed of `seeds` (in parallel,
/// one thread per core), under the shed policy and both anchors.
pub fn across_seeds(scenario: &Scenario, factors: &[f64], seeds: Range<u64>) -> Vec<AcrossSeeds> {
    let seeds: Vec<u64> = seeds.collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_thread = seeds.len().div_ceil(threads).max(1);
    // samples[seed][factor]
    let samples: Vec<Vec<Sample>> = std::thread::scope(|scope| {
        let handles: Vec<_> = seeds
            .chunks(per_thread)
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|&seed| {
                            let mut variant = scenario.clone();
                            variant.seed = seed;
                            factors.iter().map(|&f| sample(&variant, f)).collect()
                        })
                        .collect::<Vec<Vec<Sample>>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a simulation panicked"))
            .collect()
    });
    factors
        .iter()
        .enumerate()
        .map(|(i, &factor)| {
            let at: Vec<&Sample> = samples.iter().map(|s| &s[i]).collect();
            let n = at.len().max(1) as f64;
            let mean = |f: fn(&Sample) -> f64| at.iter().map(|s| f(s)).sum::<f64>() / n;
            let extreme = |f: fn(&Sample) -> f64, worst: fn(f64, f64) -> f64, start: f64| {
                at.iter().map(|s| f(s)).fold(start, worst)
            };
            AcrossSeeds {
                factor,
                seeds: at.len() as u64,
                worst_goodput_vs_anchor_pct: round2(extreme(
                    |s| s.goodput_vs_anchor_pct,
                    f64::min,
                    f64::INFINITY,
                )),
                mean_goodput_vs_anchor_pct: round2(mean(|s| s.goodput_vs_anchor_pct)),
                worst_p99_ms: extreme(|s| s.p99_ms, f64::max, 0.0),
                mean_p99_ms: round2(mean(|s| s.p99_ms)),
                most_shed_pct: round2(extreme(|s| s.shed_pct, f64::max, 0.0)),
            }
        })
        .collect()
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The across-seeds results as an aligned text table.
pub fn table(rows: &[AcrossSeeds]) -> String {
    let mut out = format!(
        "{:>6}  {:>5}  {:>22}  {:>20}  {:>10}\n",
        "factor", "seeds", "goodput vs anchor", "p99 of served", "most shed"
    );
    out += &format!(
        "{:>6}  {:>5}  {:>10} {:>11}  {:>9} {:>10}  {:>10}\n",
        "", "", "worst", "mean", "worst", "mean", ""
    );
    for r in rows {
        out += &format!(
            "{:>5}x  {:>5}  {:>+9.2}% {:>+10.2}%  {:>6.0} ms {:>7.1} ms  {:>9.2}%\n",
            r.factor,
            r.seeds,
            r.worst_goodput_vs_anchor_pct,
            r.mean_goodput_vs_anchor_pct,
            r.worst_p99_ms,
            r.mean_p99_ms,
            r.most_shed_pct
        );
    }
    out
}

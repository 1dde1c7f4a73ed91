//! Counting what the limiter decides, cheaply, and publishing it.
//!
//! The hot path only increments plain atomics owned by the limiter (no map
//! lookup, no allocation). [`spawn_reporter`] publishes them through the
//! [`metrics`] facade on an interval and logs one summary line per interval
//! in which calls were refused, never one line per refusal.
//!
//! Every series is described once to each recorder (with its unit), and
//! registered again on every publication, so a recorder installed after
//! [`spawn_reporter`] receives everything from the next interval on.
//!
//! Series (all labelled with `class`, refusals also with `reason`; the
//! series of any limiter other than the process-wide one also carry a
//! `limiter` label with its id, so that two limiters never write the same
//! series):
//!
//! | name | kind | meaning |
//! |---|---|---|
//! | `shed_offered_total` | counter | calls that asked for admission (admitted + refused) |
//! | `shed_admitted_total` | counter | calls admitted |
//! | `shed_served_in_time_total` | counter | calls with a deadline that finished before it |
//! | `shed_late_total` | counter | calls with a deadline that finished after it: wasted work |
//! | `shed_fallback_total` | counter | refusals answered by a `fallback` fn instead |
//! | `shed_tier_admitted_total`, `shed_tier_refused_total` | counter | tenants' calls per class and `tier` (the plan; never a label per tenant) |
//! | `shed_refused_total` | counter | calls refused, by `reason` |
//! | `shed_observed_refusals_total` | counter | refusals that observe mode let through, by `reason` |
//! | `shed_class_in_flight` | gauge | weight held by the class |
//! | `shed_in_flight` | gauge | weight held by all calls (no `class` label) |
//! | `shed_limit` | gauge | current capacity (no `class` label) |
//! | `shed_queued_weight` | gauge | weight waiting for slots (no `class` label) |
//! | `shed_queue_wait_seconds` | histogram | how long admitted calls waited (only calls that had to wait) |
//! | `shed_service_seconds` | histogram | how long admitted calls held their slots (sampled) |
//! | `shed_latency_seconds` | histogram | arrival to end of response, per class (HTTP layer) |
//! | `shed_shedding_active_seconds` | gauge | how long refusals have gone on without a quiet interval (no `class` label) |
//! | `shed_overload_signal` | gauge | the overload controller's smoothed occupancy (with [`OverloadController`](crate::OverloadController)) |
//! | `shed_overload_ramp` | gauge | the share of held-back traffic re-admitted, 0 to 1 |
//! | `shed_overload_active_seconds` | gauge | how long the overload controller has been shedding |
//! | `shed_warm_up_fraction` | gauge | the cold-start ramp's share of the target capacity, 0.1 to 1 (1: not ramping; no `class` label) |

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Bucket bounds, in seconds, for the `_seconds` histograms: 0.5 ms (an
/// admission that barely waited) to 10 s (past any client's patience),
/// two to two and a half times apart, with 50 ms and 100 ms (common
/// queue-wait budgets) among them.
///
/// Give them to an exporter that keeps histograms as fixed buckets. Its
/// memory is then set by the bounds, not by the samples. Buckets from
/// every instance of a fleet also add up, which quantiles do not. With
/// `metrics-exporter-prometheus`, whose default is a summary per series
/// that grows until its 60 s window fills:
///
/// ```text
/// PrometheusBuilder::new()
///     .set_buckets_for_metric(Matcher::Prefix("shed_".into()), shed::metrics::SECONDS_BUCKETS)?
/// ```
pub const SECONDS_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

use metrics::{Label, Unit};

use crate::limiter::counters::ClassHandles;
pub use crate::limiter::stats::{ClassStats, LimiterStats};
use crate::Limiter;

impl Limiter {
    /// The labels every series of this limiter carries.
    pub(crate) fn base_labels(&self) -> Vec<Label> {
        self.metrics_label()
            .map(|id| Label::new("limiter", id.to_string()))
            .into_iter()
            .collect()
    }

    /// Registers each class's histograms with the current recorder.
    fn register_histograms(&self, base: &[Label]) {
        self.set_histograms(|class| {
            let labels = with([Label::new("class", class)], base);
            ClassHandles {
                queue_wait: metrics::histogram!("shed_queue_wait_seconds", labels.clone()),
                service: metrics::histogram!("shed_service_seconds", labels.clone()),
                latency: metrics::histogram!("shed_latency_seconds", labels),
            }
        });
    }

    /// Publishes the current counters and gauges to the installed
    /// [`metrics`] recorder, and registers the histograms with it.
    /// [`spawn_reporter`] calls it on an interval.
    pub fn publish_metrics(&self) {
        describe_once_per_recorder();
        let base = self.base_labels();
        self.register_histograms(&base);
        let stats = self.stats();
        metrics::gauge!("shed_limit", base.clone()).set(f64::from(stats.capacity));
        metrics::gauge!("shed_in_flight", base.clone()).set(stats.in_flight as f64);
        metrics::gauge!("shed_queued_weight", base.clone()).set(stats.queued_weight as f64);
        let warm_up = self.warm_up_fraction().unwrap_or(1.0);
        metrics::gauge!("shed_warm_up_fraction", base.clone()).set(warm_up);
        for class in &stats.classes {
            let class_label = Label::new("class", class.class);
            let labels = with([class_label.clone()], &base);
            let counter = |name: &'static str| metrics::counter!(name, labels.clone());
            counter("shed_admitted_total").absolute(class.admitted);
            counter("shed_offered_total").absolute(class.admitted + class.refused_total());
            counter("shed_served_in_time_total").absolute(class.served_in_time);
            counter("shed_late_total").absolute(class.late);
            counter("shed_fallback_total").absolute(class.fallbacks);
            metrics::gauge!("shed_class_in_flight", labels.clone()).set(class.in_flight as f64);
            for (name, counts) in [
                ("shed_refused_total", &class.refused),
                ("shed_observed_refusals_total", &class.observed_refusals),
            ] {
                for (reason, n) in counts {
                    let labels = with(
                        [class_label.clone(), Label::new("reason", reason.as_str())],
                        &base,
                    );
                    metrics::counter!(name, labels).absolute(*n);
                }
            }
        }
        self.publish_tier_metrics(&base);
    }
}

/// A series' own labels, then the limiter's (last, so that the labels
/// read the same with or without it).
fn with<const N: usize>(own: [Label; N], base: &[Label]) -> Vec<Label> {
    own.into_iter().chain(base.iter().cloned()).collect()
}

/// Describes every series to the current recorder, once per recorder: the
/// first publication after a recorder is installed describes them to it.
/// (A recorder is told apart by its address; two recorders of a type
/// without data may share one, and then the second is not described.)
fn describe_once_per_recorder() {
    static DESCRIBED_TO: AtomicUsize = AtomicUsize::new(0);
    let current = metrics::with_recorder(|r| std::ptr::from_ref(r).cast::<()>() as usize) | 1;
    if DESCRIBED_TO.swap(current, Ordering::Relaxed) != current {
        describe();
    }
}

/// The unit and meaning of every series, as in the table of this module.
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        "shed_offered_total",
        Unit::Count,
        "Calls that asked for admission (admitted + refused)."
    );
    describe_counter!("shed_admitted_total", Unit::Count, "Calls admitted.");
    describe_counter!(
        "shed_served_in_time_total",
        Unit::Count,
        "Calls with a deadline that finished before it."
    );
    describe_counter!(
        "shed_late_total",
        Unit::Count,
        "Calls with a deadline that finished after it: wasted work."
    );
    describe_counter!(
        "shed_fallback_total",
        Unit::Count,
        "Refusals answered by a fallback fn instead."
    );
    describe_counter!(
        "shed_refused_total",
        Unit::Count,
        "Calls refused, by reason."
    );
    describe_counter!(
        "shed_observed_refusals_total",
        Unit::Count,
        "Refusals that observe mode let through, by reason."
    );
    describe_gauge!(
        "shed_class_in_flight",
        Unit::Count,
        "Weight (slots) held by the class."
    );
    describe_gauge!(
        "shed_in_flight",
        Unit::Count,
        "Weight (slots) held by all calls."
    );
    describe_gauge!("shed_limit", Unit::Count, "Current capacity in slots.");
    describe_gauge!(
        "shed_queued_weight",
        Unit::Count,
        "Weight (slots) waiting for admission."
    );
    describe_histogram!(
        "shed_queue_wait_seconds",
        Unit::Seconds,
        "How long admitted calls waited (only calls that had to wait)."
    );
    describe_histogram!(
        "shed_service_seconds",
        Unit::Seconds,
        "How long admitted calls held their slots (sampled)."
    );
    describe_histogram!(
        "shed_latency_seconds",
        Unit::Seconds,
        "Arrival to end of response, per class (HTTP layer)."
    );
    describe_gauge!(
        "shed_shedding_active_seconds",
        Unit::Seconds,
        "How long refusals have gone on without a quiet interval."
    );
    describe_gauge!(
        "shed_overload_signal",
        "The overload controller's smoothed occupancy."
    );
    describe_gauge!(
        "shed_overload_ramp",
        "The share of held-back traffic re-admitted, 0 to 1."
    );
    describe_gauge!(
        "shed_warm_up_fraction",
        "The cold-start ramp's share of the target capacity, 0.1 to 1 (1: not ramping)."
    );
    describe_gauge!(
        "shed_overload_active_seconds",
        Unit::Seconds,
        "How long the overload controller has been shedding."
    );
}

/// Publishes `limiter`'s metrics every `every`, and logs one summary line
/// (target `shed::summary`) for each interval in which calls were refused.
///
/// A `metrics` recorder may be installed before or after this call: each
/// interval describes the series to a recorder that is new, and registers
/// the histograms again, so a late recorder misses only what was recorded
/// before it existed.
pub fn spawn_reporter(limiter: Limiter, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last = limiter.stats();
        // Shedding is "active" through every interval with a refusal; the
        // gauge says for how long, so that shedding which outlives its
        // incident can be alerted on.
        let mut shedding_since: Option<tokio::time::Instant> = None;
        loop {
            ticker.tick().await;
            limiter.publish_metrics();
            let now = limiter.stats();
            let line = summary_line(&last, &now);
            let at = tokio::time::Instant::now();
            shedding_since = match (&line, shedding_since) {
                (Some(_), None) => Some(at),
                (Some(_), since) => since,
                (None, _) => None,
            };
            let active = shedding_since.map_or(0.0, |since| (at - since + every).as_secs_f64());
            metrics::gauge!("shed_shedding_active_seconds", limiter.base_labels()).set(active);
            let heaviest = limiter.take_heaviest_tenants();
            if let Some(mut line) = line {
                if let Some(lag) = crate::lag::last_reported() {
                    line.push_str(&format!("; runtime lag {} ms", lag.as_millis()));
                }
                if heaviest.refused.is_empty() && heaviest.admitted.is_empty() {
                    tracing::info!(target: "shed::summary", "{line}");
                } else {
                    tracing::info!(target: "shed::summary", "{line}; {heaviest}");
                }
            }
            last = now;
        }
    })
}

/// One line describing the refusals between two snapshots, or `None` if
/// there were none.
pub fn summary_line(before: &LimiterStats, after: &LimiterStats) -> Option<String> {
    let mut parts = Vec::new();
    for (old, new) in before.classes.iter().zip(&after.classes) {
        for (reason, n) in &new.refused {
            let delta = n - old.refused_for(*reason);
            if delta > 0 {
                parts.push(format!("{}/{}={}", new.class, reason, delta));
            }
        }
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!(
        "shed refused {} (in flight {}/{}, queued {})",
        parts.join(" "),
        after.in_flight,
        after.capacity,
        after.queued
    ))
}

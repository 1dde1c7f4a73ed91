//! Counts reach the `metrics` facade, labelled by class and reason, and the
//! periodic summary is one line, not one per refusal.

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::{CompositeKey, MetricKind};
use shed_runtime::metrics::summary_line;
use shed_runtime::{Config, Reason};

fn find<'a>(
    snapshot: &'a [(
        CompositeKey,
        Option<metrics::Unit>,
        Option<metrics::SharedString>,
        DebugValue,
    )],
    kind: MetricKind,
    name: &str,
    labels: &[(&str, &str)],
) -> Option<&'a DebugValue> {
    snapshot.iter().find_map(|(key, _, _, value)| {
        let k = key.key();
        let matches = key.kind() == kind
            && k.name() == name
            && labels.iter().all(|(l, v)| {
                k.labels()
                    .any(|label| label.key() == *l && label.value() == *v)
            });
        matches.then_some(value)
    })
}

#[tokio::test(start_paused = true)]
async fn counts_by_class_and_reason_reach_the_metrics_facade() {
    let limiter = Config::new().capacity(2).build().unwrap();
    let held = limiter.acquire("critical", 2, "holder").await.unwrap();
    let refused = limiter.acquire("optional", 1, "waits").await.unwrap_err();
    assert_eq!(refused.reason(), Reason::MaxWait);
    limiter.set_class_enabled("background", false).unwrap();
    for _ in 0..3 {
        let _ = limiter.acquire("background", 1, "off").await;
    }

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || limiter.publish_metrics());
    let snapshot = snapshotter.snapshot().into_vec();

    assert_eq!(
        find(
            &snapshot,
            MetricKind::Counter,
            "shed_admitted_total",
            &[("class", "critical")]
        ),
        Some(&DebugValue::Counter(1))
    );
    assert_eq!(
        find(
            &snapshot,
            MetricKind::Counter,
            "shed_refused_total",
            &[("class", "optional"), ("reason", "max_wait")]
        ),
        Some(&DebugValue::Counter(1))
    );
    assert_eq!(
        find(
            &snapshot,
            MetricKind::Counter,
            "shed_refused_total",
            &[("class", "background"), ("reason", "disabled")]
        ),
        Some(&DebugValue::Counter(3))
    );
    assert_eq!(
        find(&snapshot, MetricKind::Gauge, "shed_in_flight", &[]),
        Some(&DebugValue::Gauge(2.0.into()))
    );
    assert_eq!(
        find(&snapshot, MetricKind::Gauge, "shed_limit", &[]),
        Some(&DebugValue::Gauge(2.0.into()))
    );
    drop(held);
}

#[tokio::test(start_paused = true)]
async fn the_summary_is_one_line_per_interval_with_the_new_refusals() {
    let limiter = Config::new().capacity(1).build().unwrap();
    let before = limiter.stats();
    assert_eq!(
        summary_line(&before, &limiter.stats()),
        None,
        "nothing refused, nothing logged"
    );
    limiter.set_class_enabled("background", false).unwrap();
    for _ in 0..1000 {
        let _ = limiter.acquire("background", 1, "off").await;
    }
    let line = summary_line(&before, &limiter.stats()).unwrap();
    assert_eq!(
        line,
        "shed refused background/disabled=1000 (in flight 0/1, queued 0)"
    );
    assert!(!line.contains('\n'));
}

#[tokio::test(start_paused = true)]
async fn admitted_totals_survive_many_admissions() {
    let limiter = Config::new().capacity(4).build().unwrap();
    for _ in 0..10_000 {
        let _permit = limiter.acquire("critical", 1, "a").await.unwrap();
        let _other = limiter.acquire("optional", 1, "b").await.unwrap();
    }
    let stats = limiter.stats();
    assert_eq!(stats.class("critical").unwrap().admitted, 10_000);
    assert_eq!(stats.class("optional").unwrap().admitted, 10_000);
}

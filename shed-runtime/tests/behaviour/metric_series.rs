//! Counts reach the `metrics` facade, labelled by class and reason, and the
//! periodic summary is one line, not one per refusal.

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::{CompositeKey, MetricKind};
use std::time::Duration;

use shed_runtime::metrics::{spawn_reporter, summary_line};
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

#[tokio::test(start_paused = true)]
async fn a_recorder_installed_after_the_reporter_receives_everything() {
    let limiter = Config::new().capacity(1).build().unwrap();
    let reporter = spawn_reporter(limiter.clone(), Duration::from_secs(1));
    // Two intervals published to no recorder at all.
    tokio::time::sleep(Duration::from_millis(2500)).await;

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    // The test's runtime has one thread: the reporter sees this recorder.
    let _installed = metrics::set_default_local_recorder(&recorder);
    tokio::time::sleep(Duration::from_secs(1)).await;

    // A call that waits 10 ms for its slot: a queue-wait observation.
    let held = limiter.acquire("critical", 1, "holder").await.unwrap();
    let waiter = {
        let limiter = limiter.clone();
        tokio::spawn(async move { limiter.acquire("critical", 1, "waiter").await.map(drop) })
    };
    tokio::time::sleep(Duration::from_millis(10)).await;
    drop(held);
    waiter.await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    reporter.abort();

    let snapshot = snapshotter.snapshot().into_vec();
    let waits = find(
        &snapshot,
        MetricKind::Histogram,
        "shed_queue_wait_seconds",
        &[("class", "critical")],
    );
    assert_eq!(waits, Some(&DebugValue::Histogram(vec![0.01.into()])));
    assert_eq!(
        find(
            &snapshot,
            MetricKind::Counter,
            "shed_admitted_total",
            &[("class", "critical")]
        ),
        Some(&DebugValue::Counter(2))
    );
    let described = |name: &str| {
        snapshot
            .iter()
            .find(|(key, ..)| key.key().name() == name)
            .map(|(_, unit, description, _)| (*unit, description.is_some()))
    };
    assert_eq!(
        described("shed_queue_wait_seconds"),
        Some((Some(metrics::Unit::Seconds), true))
    );
    assert_eq!(
        described("shed_admitted_total"),
        Some((Some(metrics::Unit::Count), true))
    );
}

#[tokio::test(start_paused = true)]
async fn two_limiters_never_write_the_same_series() {
    let first = Config::new().capacity(4).build().unwrap();
    let second = Config::new().capacity(4).build().unwrap();
    drop(first.acquire("critical", 1, "a").await.unwrap());
    for _ in 0..2 {
        drop(second.acquire("critical", 1, "b").await.unwrap());
    }

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        first.publish_metrics();
        second.publish_metrics();
    });
    let snapshot = snapshotter.snapshot().into_vec();
    let admitted: Vec<(String, &DebugValue)> = snapshot
        .iter()
        .filter(|(key, ..)| {
            key.key().name() == "shed_admitted_total"
                && key.key().labels().any(|l| l.value() == "critical")
        })
        .map(|(key, _, _, value)| {
            let limiter = key
                .key()
                .labels()
                .find(|l| l.key() == "limiter")
                .map(|l| l.value().to_string())
                .expect("a limiter other than the process-wide one is labelled");
            (limiter, value)
        })
        .collect();
    assert_eq!(admitted.len(), 2, "{admitted:?}");
    assert_ne!(admitted[0].0, admitted[1].0, "distinct labels");
    let mut counts: Vec<&DebugValue> = admitted.iter().map(|(_, v)| *v).collect();
    counts.sort_by_key(|v| format!("{v:?}"));
    assert_eq!(counts, [&DebugValue::Counter(1), &DebugValue::Counter(2)]);
}

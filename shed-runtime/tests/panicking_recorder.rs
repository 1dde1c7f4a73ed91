//! A metrics recorder that panics must not cost a slot: the permit gives
//! its slots back before it records anything (issue 11, defect 5). In a
//! test binary of its own, because the recorder is process-wide.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use metrics::{
    Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};
use shed_runtime::{Config, Policy};

struct PanickingRecorder;

struct PanickingHistogram;

impl HistogramFn for PanickingHistogram {
    fn record(&self, _value: f64) {
        panic!("the recorder failed");
    }
}

impl Recorder for PanickingRecorder {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
        Counter::noop()
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(Arc::new(PanickingHistogram))
    }
}

fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    let waker = std::task::Waker::noop();
    Pin::new(future).poll(&mut Context::from_waker(waker))
}

#[tokio::test(start_paused = true)]
async fn a_panicking_recorder_never_keeps_a_slot() {
    metrics::set_global_recorder(PanickingRecorder).unwrap();
    let limiter = Config::new()
        .capacity(1)
        .service_time_sampling(1)
        .build()
        .unwrap();
    // Publishing registers the histograms the permits record into.
    limiter.publish_metrics();
    let policy = Policy::leak("recorder::call", "critical", None, 1);

    // A call that completes: its service time is recorded on drop.
    let permit = limiter.acquire_as(policy).await.unwrap();
    let dropped = catch_unwind(AssertUnwindSafe(|| drop(permit)));
    assert!(dropped.is_err(), "the recorder was called");
    assert_eq!(limiter.in_flight(), 0, "the slot leaked on completion");

    // A call that waited: its queue wait is recorded when it is granted.
    let holder = limiter.acquire("critical", 1, "holder").await.unwrap();
    let mut waiter = limiter.acquire_as(policy);
    assert!(poll_once(&mut waiter).is_pending());
    drop(holder);
    let granted = catch_unwind(AssertUnwindSafe(|| poll_once(&mut waiter)));
    assert!(granted.is_err(), "the recorder was called");
    drop(waiter);
    assert_eq!(limiter.in_flight(), 0, "the granted slot leaked");
}

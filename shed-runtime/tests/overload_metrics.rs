//! Two overload controllers on two limiters publish their gauges under
//! distinct `limiter` labels, so neither overwrites the other. In a test
//! binary of its own: the controllers' tasks publish to the process-wide
//! recorder.

use std::time::Duration;

use metrics_util::debugging::DebuggingRecorder;
use shed_runtime::{Config, OverloadController};

#[tokio::test(start_paused = true)]
async fn two_controllers_never_write_the_same_gauges() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().unwrap();
    let limiters = [
        Config::new().capacity(4).build().unwrap(),
        Config::new().capacity(4).build().unwrap(),
    ];
    let tasks: Vec<_> = limiters
        .iter()
        .map(|limiter| OverloadController::new().spawn(limiter.clone()))
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let labels: Vec<String> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == "shed_overload_signal")
        .map(|(key, ..)| {
            key.key()
                .labels()
                .find(|l| l.key() == "limiter")
                .map(|l| l.value().to_string())
                .expect("labelled with its limiter")
        })
        .collect();
    assert_eq!(labels.len(), 2, "{labels:?}");
    assert_ne!(labels[0], labels[1]);
    for task in tasks {
        task.abort();
    }
}

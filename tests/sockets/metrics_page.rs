//! The example's Prometheus exporter keeps shed's latency histograms as
//! fixed buckets. The exporter's default, a summary per series, grew the
//! server's memory for the first 60 s of any run (its window filling):
//! 3.2 MB over a 100 s soak, which failed the soak's ±2 MB bound.

use std::time::Duration;

use crate::server;
use shed::Config;

#[tokio::test(start_paused = true)]
async fn the_example_exports_shed_latencies_as_fixed_buckets() {
    let recorder = server::prometheus().unwrap().build_recorder();
    let handle = recorder.handle();
    let limiter = Config::new().capacity(1).build().unwrap();
    // Registers the limiter's histograms with this recorder, as the
    // reporter does with the global one.
    metrics::with_local_recorder(&recorder, || limiter.publish_metrics());

    // One call that waits 30 ms and is then admitted: one queue-wait sample.
    let held = limiter.acquire("critical", 1, "holder").await.unwrap();
    let waiter = tokio::spawn({
        let limiter = limiter.clone();
        async move { limiter.acquire("critical", 1, "waits").await.map(drop) }
    });
    while limiter.stats().queued_weight == 0 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(30)).await;
    drop(held);
    waiter
        .await
        .unwrap()
        .expect("admitted once the slot is free");

    let page = handle.render();
    let buckets: Vec<&str> = page
        .lines()
        .filter(|line| line.starts_with("shed_queue_wait_seconds_bucket{class=\"critical\""))
        .collect();
    // One line per bound and one for +Inf, each cumulative: the 30 ms wait
    // is counted from the 50 ms bucket on.
    assert_eq!(
        buckets.len(),
        shed::metrics::SECONDS_BUCKETS.len() + 1,
        "{page}"
    );
    let count = |le: &str| {
        let line = buckets
            .iter()
            .find(|line| line.contains(&format!("le=\"{le}\"")))
            .unwrap_or_else(|| panic!("no le={le} bucket in:\n{page}"));
        line.rsplit(' ').next().unwrap().to_string()
    };
    assert_eq!(count("0.025"), "0");
    assert_eq!(count("0.05"), "1");
    assert_eq!(count("+Inf"), "1");
    assert!(!page.contains("quantile="), "a summary in:\n{page}");
}

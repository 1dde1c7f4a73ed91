//! The runtime-lag probe on a real clock: a handler that blocks the
//! runtime's only thread for 0.6 s shows up as about that much lag and
//! turns the probe to lagging (the first seed measured 587 ms). Only lower
//! bounds are asserted: a busy machine can only add lag. Readiness that
//! watches the probe turns not-ready while the runtime lags.

use std::time::Duration;

use shed_runtime::{LagProbe, Limiter, Readiness};

#[tokio::test(flavor = "current_thread")]
async fn a_blocked_runtime_shows_its_lag() {
    let probe = LagProbe::builder()
        .interval(Duration::from_millis(20))
        .thresholds(Duration::from_millis(300), Duration::from_millis(50))
        .spawn();
    let limiter = Limiter::builder().build().unwrap();
    let readiness = Readiness::new(limiter).lag(probe.clone());
    tokio::time::sleep(Duration::from_millis(100)).await;
    // A handler that blocks the only worker thread.
    tokio::spawn(async { std::thread::sleep(Duration::from_millis(600)) })
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        probe.lag() >= Duration::from_millis(450),
        "lag {:?}",
        probe.lag()
    );
    assert!(probe.is_lagging());
    assert!(!readiness.is_ready(), "a lagging runtime is not ready");
}

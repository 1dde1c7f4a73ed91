//! `#[shed(tenant = ...)]`: the fn's own admission is the tenant's named
//! by an expression over its arguments, so a flood from one account waits
//! behind itself while another account's call is served next.

use std::time::Duration;

use shed::{shed, ClassSpec, Limiter, Rejected};

#[shed(class = "api", tenant = account, name = "lookup")]
async fn lookup(account: &'static str) -> Result<&'static str, Rejected> {
    tokio::time::sleep(Duration::from_millis(10)).await;
    Ok(account)
}

#[tokio::test(start_paused = true)]
async fn a_flooding_account_waits_behind_itself() {
    let limiter = Limiter::builder()
        .capacity(1)
        .queue_bound(100)
        .class(ClassSpec::new("api", 0).max_wait(Duration::from_secs(10)))
        .build()
        .unwrap();
    let finished = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut calls = Vec::new();
    // Ten calls of `flood` queue first, then one of `quiet`.
    for account in std::iter::repeat_n("flood", 10).chain(["quiet"]) {
        let (limiter, finished) = (limiter.clone(), finished.clone());
        calls.push(tokio::spawn(limiter.scope(async move {
            let served = lookup(account).await.unwrap();
            finished.lock().unwrap().push(served);
        })));
        tokio::task::yield_now().await;
    }
    for call in calls {
        call.await.unwrap();
    }
    let order = finished.lock().unwrap().clone();
    let quiet = order.iter().position(|a| *a == "quiet").unwrap();
    assert!(quiet <= 2, "served next, not last: {order:?}");
}

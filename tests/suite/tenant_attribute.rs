//! `#[shed(tenant = ...)]`: the fn's own admission is the tenant's named
//! by an expression over its arguments, so a flood from one account waits
//! behind itself while another account's call is served next.

use std::time::Duration;

use shed::{shed, ClassSpec, Limiter, Rejected, Tenant};

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

#[shed(class = "api", tenant = account, name = "quick")]
async fn quick(account: &'static str) -> Result<(), Rejected> {
    let _ = account;
    Ok(())
}

#[shed(class = "api", name = "quick_in_scope")]
async fn quick_in_scope() -> Result<(), Rejected> {
    Ok(())
}

/// The attribute's inline admission (free slots, no deadline, nothing held
/// back) tallies the tenant as the limiter's other paths do: the
/// heaviest-tenants summary counts a tenant whose calls never queue,
/// whether the tenant is the task's (as a layer sets it) or the fn's own
/// `tenant = ...` (named by its hash).
#[tokio::test(start_paused = true)]
async fn uncontended_calls_count_in_the_heaviest_tenants() {
    for (sampling, calls) in [(1, 40u64), (64, 64 * 8)] {
        let limiter = Limiter::builder()
            .capacity(4)
            .service_time_sampling(sampling)
            .class(ClassSpec::new("api", 0))
            .build()
            .unwrap();
        let (busy, rare) = (Tenant::new("busy"), Tenant::new("rare"));
        limiter
            .scope(async {
                for _ in 0..calls {
                    busy.clone().scope(quick_in_scope()).await.unwrap();
                }
                rare.scope(quick_in_scope()).await.unwrap();
            })
            .await;
        let heaviest = limiter.take_heaviest_tenants();
        let (name, count) = heaviest
            .admitted
            .first()
            .unwrap_or_else(|| panic!("no tenant counted (sampling {sampling}): {heaviest}"));
        assert_eq!(name, "busy", "{heaviest}");
        // Sampled: one call in `sampling` counts for `sampling`.
        assert!(
            count.abs_diff(calls) <= u64::from(sampling),
            "sampling {sampling}: {count} of {calls}"
        );

        limiter
            .scope(async {
                for _ in 0..calls {
                    quick("busy").await.unwrap();
                }
            })
            .await;
        let heaviest = limiter.take_heaviest_tenants();
        let count = heaviest.admitted.first().map_or(0, |(_, c)| *c);
        assert!(
            count.abs_diff(calls) <= u64::from(sampling),
            "tenant = ..., sampling {sampling}: {heaviest}"
        );
    }
}

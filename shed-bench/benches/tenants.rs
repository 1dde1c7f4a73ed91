//! The cost of tenants on the path that waits: two tasks take turns at one
//! slot (each call holds it across a yield, so the other's call queues and
//! is then granted), as in `hot_path`'s *wait then grant*, on a limiter of
//! its own. Variants: no tenant (the path as it was); every call of one
//! tenant; every call of a different tenant among 100,000 (drawn from a
//! skew, so lanes are both shared and fresh). As a server does, each call
//! builds its tenant from the request's identity (a fresh key), in both
//! tenant variants alike: taking ready-made tenants from a table of
//! 100,000 would time the table's cache misses (a cold `Arc` per call),
//! not the limiter. The report prints each variant's cost over the
//! no-tenant and the one-tenant runs, measured in the same run.
//!
//! `cargo bench -p shed-bench --bench tenants -- --measurement-time 2`

use std::future::Future;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use shed::{Limiter, Tenant};

fn limiter() -> Limiter {
    Limiter::builder().capacity(1).build().unwrap()
}

/// One call that holds its slot across a yield.
async fn turn(limiter: &Limiter, x: u64) -> u64 {
    match limiter.acquire("critical", 1, "turn").await {
        Ok(_permit) => {
            tokio::task::yield_now().await;
            black_box(x).wrapping_mul(31)
        }
        Err(_) => 0,
    }
}

/// Runs `iters` calls spread over two tasks; the elapsed time.
fn timed<F, Fut>(rt: &tokio::runtime::Runtime, iters: u64, call: F) -> Duration
where
    F: Fn(u64) -> Fut + Send + Sync + Clone + 'static,
    Fut: Future<Output = u64> + Send,
{
    rt.block_on(async move {
        let start = Instant::now();
        let per_task = iters.div_ceil(2);
        let handles: Vec<_> = (0..2u64)
            .map(|t| {
                let call = call.clone();
                tokio::spawn(async move {
                    let mut acc = 0u64;
                    for i in 0..per_task {
                        acc = acc.wrapping_add(call(i * 2 + t).await);
                    }
                    acc
                })
            })
            .collect();
        for handle in handles {
            black_box(handle.await.unwrap());
        }
        start.elapsed()
    })
}

/// How many tenants the many-tenant variant spreads its calls over.
const TENANTS: u64 = 100_000;

/// The i-th call's tenant among [`TENANTS`], skewed: half the calls go to
/// the first 1%.
fn skewed(i: u64) -> u64 {
    let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 11;
    if x.is_multiple_of(2) {
        x % (TENANTS / 100)
    } else {
        x % TENANTS
    }
}

/// The tenant of a request whose identity is `id`, built as a server
/// builds it per request.
fn tenant(id: u64) -> Tenant {
    Tenant::new(format!("tenant-{id}"))
}

fn wait_then_grant(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("tenants_wait_then_grant");
    let l = limiter();
    group.bench_function("no_tenant", |b| {
        b.iter_custom(|iters| {
            let l = l.clone();
            timed(&rt, iters, move |x| {
                let l = l.clone();
                async move { turn(&l, x).await }
            })
        })
    });
    group.bench_function("one_tenant", |b| {
        b.iter_custom(|iters| {
            let l = l.clone();
            timed(&rt, iters, move |x| {
                let (l, one) = (l.clone(), tenant(0));
                async move { one.scope(async { turn(&l, x).await }).await }
            })
        })
    });
    group.bench_function("100k_tenants", |b| {
        b.iter_custom(|iters| {
            let l = l.clone();
            timed(&rt, iters, move |x| {
                let (l, tenant) = (l.clone(), tenant(skewed(x)));
                async move { tenant.scope(async { turn(&l, x).await }).await }
            })
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    targets = wait_then_grant
}

fn estimate(name: &str) -> Option<f64> {
    ["../target/criterion", "target/criterion"]
        .iter()
        .map(|root| {
            Path::new(root)
                .join("tenants_wait_then_grant")
                .join(name)
                .join("new/estimates.json")
        })
        .find(|p| p.exists())
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|json| json["median"]["point_estimate"].as_f64())
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    let Some(base) = estimate("no_tenant") else {
        return;
    };
    let one = estimate("one_tenant").unwrap_or(base);
    println!("\nper call (median), against no tenant and one tenant in this run:");
    for name in ["no_tenant", "one_tenant", "100k_tenants"] {
        if let Some(t) = estimate(name) {
            println!("  {name:<24} {t:8.1} ns  {:.2}x  {:.2}x", t / base, t / one);
        }
    }
}

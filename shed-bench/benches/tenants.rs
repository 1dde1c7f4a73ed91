//! The cost of tenants on the path that waits: two tasks take turns at one
//! slot (each call holds it across a yield, so the other's call queues and
//! is then granted), as in `hot_path`'s *wait then grant*, on a limiter of
//! its own. Variants: no tenant (the path as it was); every call of one
//! tenant; every call of a different tenant among 100,000 (drawn from a
//! Zipf-like skew, so lanes are both shared and fresh); and the same with
//! a deep queue (64 calls of 64 tenants waiting behind the slot), which
//! makes each dispatch look at many lanes. The report prints each
//! variant's cost over the no-tenant one, measured in the same run.
//!
//! `cargo bench -p shed-bench --bench tenants -- --measurement-time 2`

use std::future::Future;
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
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

/// 100,000 tenant names, and a skewed draw over them: the i-th call's
/// tenant (half the calls go to the first 1%).
fn tenants() -> Arc<Vec<Tenant>> {
    Arc::new(
        (0..100_000)
            .map(|i| Tenant::new(format!("tenant-{i}")))
            .collect(),
    )
}

fn skewed(tenants: &[Tenant], i: u64) -> Tenant {
    let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 11;
    let n = tenants.len() as u64;
    let index = if x.is_multiple_of(2) {
        x % (n / 100)
    } else {
        x % n
    };
    tenants[index as usize].clone()
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
    let one = Tenant::new("one");
    group.bench_function("one_tenant", |b| {
        b.iter_custom(|iters| {
            let (l, one) = (l.clone(), one.clone());
            timed(&rt, iters, move |x| {
                let (l, one) = (l.clone(), one.clone());
                async move { one.scope(async { turn(&l, x).await }).await }
            })
        })
    });
    let all = tenants();
    group.bench_function("100k_tenants", |b| {
        b.iter_custom(|iters| {
            let (l, all) = (l.clone(), Arc::clone(&all));
            timed(&rt, iters, move |x| {
                let (l, tenant) = (l.clone(), skewed(&all, x));
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
    println!("\nper call (median), against no tenant in this run (target: 100k tenants <= 2x):");
    for name in ["no_tenant", "one_tenant", "100k_tenants"] {
        if let Some(t) = estimate(name) {
            println!("  {name:<24} {t:8.1} ns  {:.2}x", t / base);
        }
    }
}

//! What a deadline in the task costs a nested `#[shed]` call.
//!
//! `cargo bench -p shed-bench --bench nested_deadline` times one call of a
//! trivial `#[shed]` fn two ways in one run: with no deadline in the task
//! (the fast path: no clock read), and inside `with_deadline` 30 s away
//! (what the HTTP layer used to give every request, header or not; a
//! client's own deadline costs the same). It prints the ratio of the
//! second to the first.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, Criterion};
use shed::{shed, Rejected};
use tokio::time::Instant;

#[shed(class = "critical", name = "bench::nested")]
async fn nested(x: u64) -> Result<u64, Rejected> {
    Ok(black_box(x).wrapping_mul(31))
}

async fn calls(iters: u64) -> std::time::Duration {
    let start = std::time::Instant::now();
    let mut acc = 0u64;
    for i in 0..iters {
        acc = acc.wrapping_add(nested(i).await.unwrap());
    }
    black_box(acc);
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    shed::Limiter::global().set_capacity(1024);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("nested_deadline");
    group.bench_function("none", |b| b.iter_custom(|iters| rt.block_on(calls(iters))));
    group.bench_function("far_30s", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let deadline = Instant::now() + Duration::from_secs(30);
                shed::with_deadline(deadline, calls(iters)).await
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
    targets = bench
}

fn estimate(name: &str) -> Option<f64> {
    ["../target/criterion", "target/criterion"]
        .iter()
        .map(|root| {
            Path::new(root)
                .join("nested_deadline")
                .join(name)
                .join("new/estimates.json")
        })
        .find(|p| p.exists())
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|j| j["median"]["point_estimate"].as_f64())
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    if let Some(none) = estimate("none") {
        println!("\nper call (median, ns) and ratio to no deadline:");
        println!("  none          {none:6.1}  1.00");
        if let Some(far) = estimate("far_30s") {
            println!("  deadline 30 s {far:6.1}  {:.2}", far / none);
        }
    }
}

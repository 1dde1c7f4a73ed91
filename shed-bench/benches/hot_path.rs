//! The cost of admission on the hot path, against baselines in the same run.
//!
//! `cargo bench --bench hot_path` measures one call of a trivial async fn:
//! plain, behind `tokio::sync::Semaphore`, behind tower's `LoadShed` +
//! `ConcurrencyLimit`, and as a `#[shed]` fn (the process-wide limiter),
//! first on one task, then with four tasks on a multi-thread runtime. It
//! then prints each guard's *added* cost per call (its time minus the plain
//! call's) and the ratio of `shed`'s added cost to the Semaphore's.

use std::future::Future;
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use shed::{shed, Rejected};
use tokio::sync::Semaphore;
use tower::{Service, ServiceBuilder, ServiceExt};

const SLOTS: usize = 1024;
const TASKS: u64 = 4;

#[inline(never)]
async fn work(x: u64) -> u64 {
    black_box(x).wrapping_mul(31)
}

#[shed(class = "critical")]
async fn guarded(x: u64) -> Result<u64, Rejected> {
    Ok(work(x).await)
}

type Ready = std::future::Ready<Result<u64, std::convert::Infallible>>;
type Tower = tower::load_shed::LoadShed<
    tower::limit::ConcurrencyLimit<tower::util::ServiceFn<fn(u64) -> Ready>>,
>;

/// tower's `LoadShed` + `ConcurrencyLimit`, sharing one limit across all
/// tasks (as `#[shed]` shares one limiter) through the global layer.
fn tower_stack(limit: &tower::limit::GlobalConcurrencyLimitLayer) -> Tower {
    fn f(x: u64) -> Ready {
        std::future::ready(Ok(black_box(x).wrapping_mul(31)))
    }
    ServiceBuilder::new()
        .load_shed()
        .layer(limit.clone())
        .service(tower::service_fn(f as fn(u64) -> Ready))
}

/// Runs `iters` calls of `call` spread over `tasks` tasks and returns the
/// elapsed time of the whole batch.
fn timed<F, Fut>(rt: &tokio::runtime::Runtime, iters: u64, tasks: u64, call: F) -> Duration
where
    F: Fn(u64) -> Fut + Send + Sync + Clone + 'static,
    Fut: Future<Output = u64> + Send,
{
    rt.block_on(async move {
        let start = Instant::now();
        let per_task = iters.div_ceil(tasks);
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                let call = call.clone();
                tokio::spawn(async move {
                    let mut acc = 0u64;
                    for i in 0..per_task {
                        acc = acc.wrapping_add(call(i).await);
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

fn bench_group(c: &mut Criterion, group_name: &str, rt: &tokio::runtime::Runtime, tasks: u64) {
    // Create the process-wide limiter before measuring.
    shed::Limiter::global().set_capacity(SLOTS as u32);
    let mut group = c.benchmark_group(group_name);
    group.bench_function("plain", |b| {
        b.iter_custom(|iters| timed(rt, iters, tasks, work))
    });
    let semaphore = Arc::new(Semaphore::new(SLOTS));
    group.bench_function("semaphore", |b| {
        b.iter_custom(|iters| {
            let semaphore = semaphore.clone();
            timed(rt, iters, tasks, move |x| {
                let semaphore = semaphore.clone();
                async move {
                    let _permit = semaphore.acquire().await.unwrap();
                    work(x).await
                }
            })
        })
    });
    let limit = tower::limit::GlobalConcurrencyLimitLayer::new(SLOTS);
    group.bench_function("tower", |b| {
        b.iter_custom(|iters| {
            let limit = limit.clone();
            rt.block_on(async move {
                let start = Instant::now();
                let per_task = iters.div_ceil(tasks);
                let handles: Vec<_> = (0..tasks)
                    .map(|_| {
                        let limit = limit.clone();
                        tokio::spawn(async move {
                            // One stack per task, as a server has one per
                            // connection, all sharing one limit.
                            let mut svc = tower_stack(&limit);
                            let mut acc = 0u64;
                            for i in 0..per_task {
                                let ready = svc.ready().await.unwrap();
                                acc = acc.wrapping_add(ready.call(i).await.unwrap());
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
        })
    });
    group.bench_function("shed", |b| {
        b.iter_custom(|iters| {
            timed(
                rt,
                iters,
                tasks,
                |x| async move { guarded(x).await.unwrap() },
            )
        })
    });
    group.finish();
}

fn uncontended(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    bench_group(c, "uncontended", &rt, 1);
}

fn four_tasks(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    bench_group(c, "four_tasks", &rt, TASKS);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = uncontended, four_tasks
}

/// The point estimate (ns per call) criterion saved for a benchmark.
fn estimate(group: &str, name: &str) -> Option<f64> {
    let path = Path::new("../target/criterion")
        .join(group)
        .join(name)
        .join("new/estimates.json");
    let path = if path.exists() {
        path
    } else {
        Path::new("target/criterion")
            .join(group)
            .join(name)
            .join("new/estimates.json")
    };
    let text = std::fs::read_to_string(path).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    json["median"]["point_estimate"].as_f64()
}

fn report() {
    println!("\nadded cost per call over the plain call (median, ns), and shed / semaphore:");
    for group in ["uncontended", "four_tasks"] {
        let Some(plain) = estimate(group, "plain") else {
            continue;
        };
        let added = |name| estimate(group, name).map(|t| t - plain);
        let (Some(sem), Some(tower), Some(shed)) =
            (added("semaphore"), added("tower"), added("shed"))
        else {
            continue;
        };
        println!(
            "  {group:<12} plain {plain:6.1}  semaphore +{sem:6.1}  tower +{tower:6.1}  shed +{shed:6.1}  shed/semaphore {:.2}",
            shed / sem
        );
    }
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report();
}

//! The cost of admission on the hot path, against baselines in the same run.
//!
//! `cargo bench -p shed-bench --bench hot_path` measures, per call of a
//! trivial async fn:
//! - *uncontended* (one task) and *four_tasks* (four tasks, two workers):
//!   plain, behind a `static` `tokio::sync::Semaphore`, behind tower's
//!   `LoadShed` + `ConcurrencyLimit` (a static limit), and as a `#[shed]` fn
//!   on the process-wide limiter (also static);
//! - *wait_then_grant*: two tasks taking turns at one slot, so that every
//!   call waits and is then granted (a `#[shed]` fn against the Semaphore
//!   under `tokio::time::timeout` with the same budget);
//! - *cancel_while_waiting*: a call that queues behind a held slot and is
//!   dropped (`select!`) before it is granted.
//!
//! It then prints each guard's *added* cost per call (its time minus the
//! plain call's) and the ratio of `shed`'s to the Semaphore's, against the
//! targets of issue 11.

use std::future::Future;
use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use shed_bench::hot_path::{
    cancelled, guarded, guarded_turn, hold_the_slot, install_limiter, work, ONE_SLOT, SEMAPHORE,
    SLOTS,
};
use tower::{Service, ServiceBuilder, ServiceExt};

const TASKS: u64 = 4;
/// The budget of a waiting call: the `critical` class's default
/// `max_wait`, also given to the Semaphore as a `timeout`.
const BUDGET: Duration = Duration::from_millis(50);

/// Waiting calls that ran out of budget: only a scheduling stall longer
/// than [`BUDGET`] (a loaded machine) causes one; the report shows them.
static SHED_OUT_OF_BUDGET: AtomicU64 = AtomicU64::new(0);
static SEMAPHORE_OUT_OF_BUDGET: AtomicU64 = AtomicU64::new(0);
/// tower's limit, shared by every task's stack.
static TOWER_LIMIT: LazyLock<tower::limit::GlobalConcurrencyLimitLayer> =
    LazyLock::new(|| tower::limit::GlobalConcurrencyLimitLayer::new(SLOTS));

type Ready = std::future::Ready<Result<u64, std::convert::Infallible>>;
type Tower = tower::load_shed::LoadShed<
    tower::limit::ConcurrencyLimit<tower::util::ServiceFn<fn(u64) -> Ready>>,
>;

/// tower's `LoadShed` + `ConcurrencyLimit` on the static limit. A stack
/// is built once per task (a server builds one per connection); tower's
/// `ConcurrencyLimit` takes an owned permit, so it clones the limit's
/// `Arc` inside every call: that is part of its real cost.
fn tower_stack() -> Tower {
    fn f(x: u64) -> Ready {
        std::future::ready(Ok(black_box(x).wrapping_mul(31)))
    }
    ServiceBuilder::new()
        .load_shed()
        .layer(TOWER_LIMIT.clone())
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

/// The calls that find a free slot: plain, Semaphore, tower, shed.
fn admitted_at_once(c: &mut Criterion, group_name: &str, rt: &tokio::runtime::Runtime, tasks: u64) {
    install_limiter(BUDGET);
    shed::Limiter::global().set_capacity(SLOTS as u32);
    let mut group = c.benchmark_group(group_name);
    group.bench_function("plain", |b| {
        b.iter_custom(|iters| timed(rt, iters, tasks, work))
    });
    group.bench_function("semaphore", |b| {
        b.iter_custom(|iters| {
            timed(rt, iters, tasks, |x| async move {
                let _permit = SEMAPHORE.acquire().await.unwrap();
                work(x).await
            })
        })
    });
    group.bench_function("tower", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async move {
                let start = Instant::now();
                let per_task = iters.div_ceil(tasks);
                let handles: Vec<_> = (0..tasks)
                    .map(|_| {
                        tokio::spawn(async move {
                            let mut svc = tower_stack();
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
    admitted_at_once(c, "uncontended", &rt, 1);
}

fn four_tasks(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    admitted_at_once(c, "four_tasks", &rt, TASKS);
}

/// A runtime with timers: a call that waits has a budget.
fn timed_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// Two tasks take turns at one slot: each call holds it across a yield,
/// during which the other task's call queues, and is granted the slot when
/// the first releases it. Every call but the very first waits.
fn wait_then_grant(c: &mut Criterion) {
    let rt = timed_runtime();
    install_limiter(BUDGET);
    shed::Limiter::global().set_capacity(1);
    let mut group = c.benchmark_group("wait_then_grant");
    group.bench_function("plain", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, 2, |x| async move {
                tokio::task::yield_now().await;
                work(x).await
            })
        })
    });
    group.bench_function("semaphore", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, 2, |x| async move {
                let Ok(permit) = tokio::time::timeout(BUDGET, ONE_SLOT.acquire()).await else {
                    SEMAPHORE_OUT_OF_BUDGET.fetch_add(1, Ordering::Relaxed);
                    return 0;
                };
                let _permit = permit.unwrap();
                tokio::task::yield_now().await;
                work(x).await
            })
        })
    });
    group.bench_function("shed", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, 2, |x| async move {
                guarded_turn(x).await.unwrap_or_else(|_| {
                    SHED_OUT_OF_BUDGET.fetch_add(1, Ordering::Relaxed);
                    0
                })
            })
        })
    });
    group.finish();
    shed::Limiter::global().set_capacity(SLOTS as u32);
}

/// A call that queues behind a held slot and is cancelled before it is
/// granted: the queue entry (and for shed the budget's timer, for the
/// Semaphore the `timeout`'s) is made and undone.
fn cancel_while_waiting(c: &mut Criterion) {
    let rt = timed_runtime();
    install_limiter(BUDGET);
    let held = rt.block_on(hold_the_slot());
    let mut group = c.benchmark_group("cancel_while_waiting");
    group.bench_function("plain", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, 1, |x| {
                cancelled(async { std::future::pending::<()>().await }, x)
            })
        })
    });
    group.bench_function("semaphore", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, 1, |x| {
                let call = tokio::time::timeout(BUDGET, ONE_SLOT.acquire());
                cancelled(
                    async {
                        call.await.expect_err("admitted past the held slot");
                        SEMAPHORE_OUT_OF_BUDGET.fetch_add(1, Ordering::Relaxed);
                    },
                    x,
                )
            })
        })
    });
    group.bench_function("shed", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, 1, |x| {
                cancelled(
                    async move {
                        guarded(x).await.expect_err("admitted past the held slot");
                        SHED_OUT_OF_BUDGET.fetch_add(1, Ordering::Relaxed);
                    },
                    x,
                )
            })
        })
    });
    group.finish();
    drop(held);
    shed::Limiter::global().set_capacity(SLOTS as u32);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = uncontended, four_tasks, wait_then_grant, cancel_while_waiting
}

/// The point estimate (median, ns per call) criterion saved for a benchmark:
/// under `cargo bench` in the workspace's `target/`, run by hand in the
/// working directory's. The newer of the two, so that a stale copy (a
/// `target/` copied from another checkout) is never read for this run.
fn estimate(group: &str, name: &str) -> Option<f64> {
    let path = ["../target/criterion", "target/criterion"]
        .into_iter()
        .map(|root| {
            Path::new(root)
                .join(group)
                .join(name)
                .join("new/estimates.json")
        })
        .filter_map(|path| Some((std::fs::metadata(&path).ok()?.modified().ok()?, path)))
        .max_by_key(|(modified, _)| *modified)?
        .1;
    let text = std::fs::read_to_string(path).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    json["median"]["point_estimate"].as_f64()
}

/// Prints every figure of the run and each target of issue 11, met or not.
fn report() {
    println!("\nadded cost per call over the plain call (median, ns); shed / semaphore against its target:");
    // (group, shed / semaphore at most, shed below tower)
    let targets = [
        ("uncontended", 0.5, true),
        ("four_tasks", 0.5, false),
        ("wait_then_grant", 1.0, false),
        ("cancel_while_waiting", 1.0, false),
    ];
    for (group, at_most, below_tower) in targets {
        let Some(plain) = estimate(group, "plain") else {
            continue;
        };
        let added = |name| estimate(group, name).map(|t| t - plain);
        let (Some(sem), Some(shed)) = (added("semaphore"), added("shed")) else {
            continue;
        };
        let ratio = shed / sem;
        let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
        let mut line = format!(
            "  {group:<21} plain {plain:7.1}  semaphore +{sem:7.1}  shed +{shed:7.1}  shed/semaphore {ratio:.2} (target <= {at_most:.1}: {})",
            verdict(ratio <= at_most)
        );
        if let Some(tower) = added("tower") {
            line.push_str(&format!(
                "  tower +{tower:7.1}  shed/tower {:.2}",
                shed / tower
            ));
            if below_tower {
                line.push_str(&format!(" (target < 1: {})", verdict(shed < tower)));
            }
        }
        println!("{line}");
    }
    let (sem, shed) = (
        SEMAPHORE_OUT_OF_BUDGET.load(Ordering::Relaxed),
        SHED_OUT_OF_BUDGET.load(Ordering::Relaxed),
    );
    if sem + shed > 0 {
        println!("  waiting calls out of their {BUDGET:?} budget (scheduling stalls): semaphore {sem}, shed {shed}");
    }
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report();
}

//! A fixed number of calls of one hot-path variant, for counting
//! instructions under `valgrind --tool=callgrind` where wall-clock timing
//! is too noisy (a shared machine): the single-task paths of
//! `benches/hot_path.rs`, same code, without criterion.
//!
//! `cargo build --release -p shed-bench --bin hot_path_count`, then
//! `valgrind --tool=callgrind target/release/hot_path_count <path> <variant> <calls>`
//! with path `uncontended`, `wait_then_grant` or `cancel_while_waiting`
//! and variant `plain`, `semaphore` or `shed` (on `uncontended`, also
//! `shed_in_context`: the calls inside a call context); compare the totals of two
//! call counts to cancel out start-up (`shed-bench/scripts/hot_path_count.sh`
//! does it for every path and variant).

use std::hint::black_box;
use std::time::Duration;

use shed_bench::hot_path::{
    cancelled, guarded, guarded_turn, hold_the_slot, install_limiter, work, ONE_SLOT, SEMAPHORE,
};

/// Long, so that valgrind's slowdown on a busy machine never runs a
/// waiting call out of it (both sides keep a timer all the same).
const BUDGET: Duration = Duration::from_secs(10);

async fn one(path: &str, variant: &str, x: u64) -> u64 {
    match (path, variant) {
        ("uncontended", "plain") => work(x).await,
        ("uncontended", "semaphore") => {
            let _permit = SEMAPHORE.acquire().await.unwrap();
            work(x).await
        }
        ("uncontended", "shed" | "shed_in_context") => guarded(x).await.unwrap(),
        ("wait_then_grant", "plain") => {
            tokio::task::yield_now().await;
            work(x).await
        }
        ("wait_then_grant", "semaphore") => {
            let _permit = tokio::time::timeout(BUDGET, ONE_SLOT.acquire())
                .await
                .unwrap()
                .unwrap();
            tokio::task::yield_now().await;
            work(x).await
        }
        ("wait_then_grant", "shed") => guarded_turn(x).await.unwrap(),
        ("cancel_while_waiting", "plain") => {
            cancelled(async { std::future::pending::<()>().await }, x).await
        }
        ("cancel_while_waiting", "semaphore") => {
            let call = tokio::time::timeout(BUDGET, ONE_SLOT.acquire());
            cancelled(
                async {
                    call.await.expect_err("admitted past the held slot");
                },
                x,
            )
            .await
        }
        ("cancel_while_waiting", "shed") => {
            cancelled(
                async move {
                    guarded(x).await.expect_err("admitted past the held slot");
                },
                x,
            )
            .await
        }
        _ => panic!("unknown path or variant"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, path, variant, calls] = &args[..] else {
        panic!("usage: hot_path_count <path> <variant> <calls>");
    };
    let calls: u64 = calls.parse().expect("a number of calls");
    let path: &'static str = Box::leak(path.clone().into_boxed_str());
    let variant: &'static str = Box::leak(variant.clone().into_boxed_str());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    // A pinned capacity and the Semaphore's budget, which valgrind's
    // slowdown never exceeds (the adaptive default scales the budget to
    // the measured service time).
    install_limiter(BUDGET);
    let tasks = if path == "wait_then_grant" { 2 } else { 1 };
    shed::Limiter::global().set_capacity(if path == "uncontended" { 1024 } else { 1 });
    let total = rt.block_on(async move {
        let _held = if path == "cancel_while_waiting" {
            Some(hold_the_slot().await)
        } else {
            None
        };
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                let task = async move {
                    let mut acc = 0u64;
                    for i in 0..calls / tasks {
                        acc = acc.wrapping_add(one(path, variant, i).await);
                    }
                    acc
                };
                // `shed_in_context`: the calls run inside a call context
                // (as under the HTTP or gRPC layer), one without a
                // deadline or a scoped limiter, so the guard looks it up.
                tokio::spawn(async move {
                    if variant == "shed_in_context" {
                        shed::with_attempt(1, task).await
                    } else {
                        task.await
                    }
                })
            })
            .collect();
        let mut acc = 0u64;
        for handle in handles {
            acc = acc.wrapping_add(handle.await.unwrap());
        }
        acc
    });
    black_box(total);
}

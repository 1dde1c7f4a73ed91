//! Property test: random interleavings of arrivals, weights up to the
//! capacity, classes, completions, panics, cancellations, capacity changes,
//! class switches, observe/enforce switches and queue disciplines never
//! exceed the capacity or a class's share, and always drain to nothing in
//! flight and nothing queued, after which a full-capacity call gets in.
//!
//! `cargo test` runs 96 cases; `.ci/run` runs 10,000 in release mode
//! (`SHED_PROPTEST_CASES=10000 cargo test --release -p shed-runtime --test properties`).

use std::future::Future;
use std::time::Duration;

use proptest::prelude::*;
use shed_runtime::{ClassSpec, Codel, Config, Limiter, Mode};
use tokio::task::JoinHandle;

const CAPACITY: u32 = 6;
/// The capacities the test switches between.
const MAX_CAPACITY: u32 = 8;
const CLASSES: [&str; 3] = ["critical", "optional", "background"];

#[derive(Debug, Clone, Copy)]
enum Fate {
    Complete,
    Panic,
    /// Aborted this many ms after arriving, waiting or running.
    Cancel(u64),
}

#[derive(Debug, Clone)]
enum Op {
    Arrive {
        class: usize,
        weight: u32,
        hold_ms: u64,
        fate: Fate,
    },
    Advance(u64),
    Toggle(usize),
    SetCapacity(u32),
    Observe(bool),
}

fn op() -> impl Strategy<Value = Op> {
    let fate = prop_oneof![
        6 => Just(Fate::Complete),
        1 => Just(Fate::Panic),
        2 => (0u64..15).prop_map(Fate::Cancel),
    ];
    prop_oneof![
        6 => (0..3usize, prop_oneof![4 => 1..=3u32, 1 => 1..=MAX_CAPACITY], 0u64..20, fate).prop_map(|(class, weight, hold_ms, fate)| Op::Arrive { class, weight, hold_ms, fate }),
        3 => (0u64..8).prop_map(Op::Advance),
        1 => (0..3usize).prop_map(Op::Toggle),
        1 => (1..=MAX_CAPACITY).prop_map(Op::SetCapacity),
        1 => any::<bool>().prop_map(Op::Observe),
    ]
}

fn limiter(codel: bool, lifo: bool) -> Limiter {
    let config = if codel {
        Config::new().codel(Codel::default()).adaptive_lifo(lifo)
    } else {
        Config::new()
    };
    config
        .capacity(CAPACITY)
        .classes([
            ClassSpec::new("critical", 0).max_wait(Duration::from_millis(30)),
            ClassSpec::new("optional", 1)
                .share(0.5)
                .floor(1)
                .max_wait(Duration::from_millis(10)),
            ClassSpec::new("background", 2)
                .share(0.34)
                .max_wait(Duration::from_millis(5)),
        ])
        .queue_bound(8)
        .build()
        .unwrap()
}

/// The bounds hold at the largest capacity set so far (a capacity that
/// shrinks leaves what is in flight in flight); with observe mode on at
/// some point, only the totals are checked.
fn check_bounds(limiter: &Limiter, largest: u32, observed: bool) {
    let stats = limiter.stats();
    let sum: u64 = stats.classes.iter().map(|c| c.in_flight).sum();
    assert_eq!(sum, stats.in_flight, "class weights add up to the total");
    if observed {
        return;
    }
    assert!(stats.in_flight <= u64::from(largest), "{stats:?}");
    let limits = [
        u64::from(largest),
        (u64::from(largest) / 2).max(1),
        (u64::from(largest) * 34 / 100).max(1),
    ];
    for (class, limit) in stats.classes.iter().zip(limits) {
        assert!(
            class.in_flight <= limit,
            "{} holds {} > {limit}: {stats:?}",
            class.class,
            class.in_flight
        );
    }
}

fn run(ops: Vec<Op>, codel: bool, lifo: bool) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async move {
        let limiter = limiter(codel, lifo);
        let mut enabled = [true; 3];
        let mut largest = CAPACITY;
        let mut observed = false;
        let mut tasks: Vec<JoinHandle<()>> = Vec::new();
        for op in ops {
            match op {
                Op::Arrive {
                    class,
                    weight,
                    hold_ms,
                    fate,
                } => {
                    // The call asks for its slots before its task exists,
                    // so the check below sees it admitted or queued.
                    let mut admission = limiter.acquire(CLASSES[class], weight, "prop");
                    let waker = std::task::Waker::noop();
                    let decided = std::pin::Pin::new(&mut admission)
                        .poll(&mut std::task::Context::from_waker(waker));
                    let call = tokio::spawn(async move {
                        let result = match decided {
                            std::task::Poll::Ready(result) => result,
                            std::task::Poll::Pending => admission.await,
                        };
                        if let Ok(_permit) = result {
                            tokio::time::sleep(Duration::from_millis(hold_ms)).await;
                            if matches!(fate, Fate::Panic) {
                                panic!("a handler panicked");
                            }
                        }
                    });
                    if let Fate::Cancel(after) = fate {
                        let handle = call.abort_handle();
                        tasks.push(tokio::spawn(async move {
                            tokio::time::sleep(Duration::from_millis(after)).await;
                            handle.abort();
                        }));
                    }
                    tasks.push(call);
                }
                // On the paused clock the sleep ends only once every task
                // is idle, so the check below sees the calls after they moved.
                Op::Advance(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
                Op::Toggle(class) => {
                    enabled[class] = !enabled[class];
                    limiter
                        .set_class_enabled(CLASSES[class], enabled[class])
                        .unwrap();
                }
                Op::SetCapacity(capacity) => {
                    largest = largest.max(capacity);
                    limiter.set_capacity(capacity);
                }
                Op::Observe(on) => {
                    observed |= on;
                    limiter.set_mode(if on { Mode::Observe } else { Mode::Enforce });
                }
            }
            check_bounds(&limiter, largest, observed);
        }
        for task in tasks {
            let _ = task.await; // panics and cancellations are part of the test
            check_bounds(&limiter, largest, observed);
        }
        let stats = limiter.stats();
        assert_eq!(
            (stats.in_flight, stats.queued, stats.queued_weight),
            (0, 0, 0),
            "{stats:?}"
        );
        assert!(stats.classes.iter().all(|c| c.in_flight == 0), "{stats:?}");
        // Nothing is stuck: a call of the whole capacity gets in at once.
        limiter.set_mode(Mode::Enforce);
        limiter.set_class_enabled("critical", true).unwrap();
        let full = tokio::time::timeout(
            Duration::from_millis(1),
            limiter.acquire("critical", limiter.capacity(), "full"),
        )
        .await;
        assert!(matches!(full, Ok(Ok(_))), "{full:?}");
    });
}

fn cases() -> u32 {
    std::env::var("SHED_PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(96)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn never_over_capacity_and_always_drains(
        ops in proptest::collection::vec(op(), 1..60),
        codel in any::<bool>(),
        lifo in any::<bool>(),
    ) {
        run(ops, codel, lifo);
    }
}

//! Regression tests of defects found by adversarial testing of the
//! limiter (issue 11), each named after what it pins. Every one failed
//! before its fix.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use shed_runtime::{with_deadline, ClassSpec, Config, Mode, Policy, Reason};
use tokio::time::{advance, Instant};

/// Polls a future once, without a runtime-driven wake-up.
fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    let waker = std::task::Waker::noop();
    Pin::new(future).poll(&mut Context::from_waker(waker))
}

fn reason<T>(poll: Poll<Result<T, shed_runtime::Rejected>>) -> Option<Reason> {
    match poll {
        Poll::Ready(Err(rejected)) => Some(rejected.reason()),
        _ => None,
    }
}

/// The largest capacity a limiter takes.
const LARGEST: u32 = (1 << 23) - 1;

#[tokio::test(start_paused = true)]
async fn observe_mode_at_the_largest_capacity_never_wraps_the_in_flight_count() {
    let limiter = Config::new()
        .capacity(LARGEST)
        .mode(Mode::Observe)
        .build()
        .unwrap();
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(limiter.acquire("critical", LARGEST, "big").await.unwrap());
    }
    let in_flight = limiter.in_flight();
    assert!(
        (u64::from(LARGEST)..=3 * u64::from(LARGEST)).contains(&in_flight),
        "in flight: {in_flight}"
    );
    limiter.set_mode(Mode::Enforce);
    let mut late = limiter.acquire("critical", 1, "small");
    assert!(
        poll_once(&mut late).is_pending(),
        "admitted past the capacity"
    );
    drop(late);
    drop(held);
    assert_eq!(limiter.in_flight(), 0);
    let full = limiter.acquire("critical", LARGEST, "big").await.unwrap();
    assert_eq!(limiter.in_flight(), u64::from(LARGEST));
    drop(full);
}

#[test]
fn a_waiter_whose_timer_cannot_be_made_is_never_queued() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    // A budget long enough that the waiter cannot run out of it here.
    let limiter = Config::new()
        .capacity(1)
        .classes([ClassSpec::new("critical", 0).max_wait(Duration::from_secs(3600))])
        .build()
        .unwrap();
    let holder = runtime
        .block_on(limiter.acquire("critical", 1, "holder"))
        .unwrap();
    // Polled in a runtime without timers: a call that must wait cannot
    // make its timer, and tokio says so by panicking. (Outside any runtime
    // it is refused instead: see `tests/no_runtime.rs`.)
    let no_timers = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut waiter = limiter.acquire("critical", 1, "waiter");
    let polled = {
        let _inside = no_timers.enter();
        catch_unwind(AssertUnwindSafe(|| poll_once(&mut waiter)))
    };
    assert!(polled.is_err(), "waiting needs a timer");
    drop(waiter);
    drop(holder);
    assert_eq!(limiter.in_flight(), 0, "the slot went to an orphan");
    let again = runtime.block_on(limiter.acquire("critical", 1, "again"));
    assert!(again.is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_waiter_too_heavy_for_a_shrunk_capacity_is_refused_and_holds_nobody_up() {
    let limiter = Config::new().capacity(4).build().unwrap();
    let holder = limiter.acquire("critical", 1, "holder").await.unwrap();
    let mut heavy = limiter.acquire("critical", 4, "heavy");
    assert!(poll_once(&mut heavy).is_pending());
    let mut light = limiter.acquire("optional", 1, "light");
    assert!(poll_once(&mut light).is_pending());
    limiter.set_capacity(2);
    assert_eq!(reason(poll_once(&mut heavy)), Some(Reason::TooHeavy));
    drop(holder);
    assert!(
        matches!(poll_once(&mut light), Poll::Ready(Ok(_))),
        "stalled behind a waiter that can never fit"
    );
}

#[tokio::test(start_paused = true)]
async fn an_arrival_that_cannot_fit_the_queue_evicts_nobody() {
    let limiter = Config::new().capacity(8).queue_bound(4).build().unwrap();
    let holder = limiter.acquire("critical", 8, "holder").await.unwrap();
    let mut background: Vec<_> = (0..3)
        .map(|_| limiter.acquire("background", 1, "background"))
        .collect();
    for waiter in &mut background {
        assert!(poll_once(waiter).is_pending());
    }
    let mut heavy = limiter.acquire("critical", 6, "heavy");
    assert_eq!(reason(poll_once(&mut heavy)), Some(Reason::QueueFull));
    for waiter in &mut background {
        assert!(poll_once(waiter).is_pending(), "evicted for nothing");
    }
    // An arrival that fits once lower classes leave still evicts them.
    let mut fits = limiter.acquire("critical", 3, "fits");
    assert!(poll_once(&mut fits).is_pending());
    let evicted = background
        .iter_mut()
        .map(|w| reason(poll_once(w)))
        .filter(|r| *r == Some(Reason::QueueFull))
        .count();
    assert_eq!(evicted, 2);
    drop(holder);
}

#[tokio::test(start_paused = true)]
async fn a_deadline_already_reached_is_refused_even_with_zero_service_time() {
    let limiter = Config::new()
        .default_service_time(Duration::ZERO)
        .build()
        .unwrap();
    let at_deadline = with_deadline(Instant::now(), limiter.acquire("critical", 1, "late")).await;
    assert_eq!(at_deadline.unwrap_err().reason(), Reason::Deadline);
    let in_time = with_deadline(
        Instant::now() + Duration::from_millis(1),
        limiter.acquire("critical", 1, "in time"),
    )
    .await;
    assert!(in_time.is_ok());
}

#[tokio::test(start_paused = true)]
async fn what_one_limiter_learned_does_not_refuse_calls_on_another() {
    let policy = Policy::leak("regressions::slow", "critical", None, 1);
    let build = || Config::new().service_time_sampling(1).build().unwrap();
    let (slow, fresh) = (build(), build());
    for _ in 0..8 {
        let permit = slow.acquire_as(policy).await.unwrap();
        advance(Duration::from_millis(100)).await;
        drop(permit);
    }
    let deadline = || Instant::now() + Duration::from_millis(50);
    let on_slow = with_deadline(deadline(), slow.acquire_as(policy)).await;
    assert_eq!(on_slow.unwrap_err().reason(), Reason::Deadline);
    let on_fresh = with_deadline(deadline(), fresh.acquire_as(policy)).await;
    assert!(on_fresh.is_ok(), "refused on another limiter's estimate");
}

#[tokio::test(start_paused = true)]
async fn impossible_deadlines_do_not_pull_the_learned_service_time_down() {
    let policy = Policy::leak("regressions::steady", "critical", None, 1);
    let limiter = Config::new().service_time_sampling(1).build().unwrap();
    for _ in 0..8 {
        let permit = limiter.acquire_as(policy).await.unwrap();
        advance(Duration::from_millis(100)).await;
        drop(permit);
    }
    for _ in 0..3_000 {
        let refused = with_deadline(
            Instant::now() + Duration::from_millis(1),
            limiter.acquire_as(policy),
        )
        .await;
        assert_eq!(refused.unwrap_err().reason(), Reason::Deadline);
    }
    // A 10 ms deadline still cannot be met by a 100 ms fn.
    let short = with_deadline(
        Instant::now() + Duration::from_millis(10),
        limiter.acquire_as(policy),
    )
    .await;
    assert_eq!(short.unwrap_err().reason(), Reason::Deadline);
}

#[tokio::test(start_paused = true)]
async fn observe_mode_counts_a_late_call_that_would_have_waited() {
    let limiter = Config::new()
        .capacity(1)
        .mode(Mode::Observe)
        .build()
        .unwrap();
    let (fits, would_wait) = shed_runtime::with_deadline_in(Duration::from_millis(10), async {
        (
            limiter.acquire("critical", 1, "fits").await.unwrap(),
            limiter.acquire("critical", 1, "would wait").await.unwrap(),
        )
    })
    .await;
    advance(Duration::from_millis(20)).await;
    drop((fits, would_wait));
    let stats = limiter.stats();
    let critical = &stats.classes[0];
    assert_eq!((critical.served_in_time, critical.late), (0, 2));
}

/// `Duration::MAX` is how a caller says "no limit": a budget, a deadline
/// budget or a server's cap of it must wait as long as it takes, not
/// overflow the clock (`Instant + Duration` panics) in the caller's task.
#[tokio::test(start_paused = true)]
async fn a_budget_of_duration_max_waits_instead_of_overflowing_the_clock() {
    let limiter = Config::new()
        .capacity(1)
        .class(ClassSpec::new("critical", 0).max_wait(Duration::MAX))
        .build()
        .unwrap();
    let held = limiter.acquire("critical", 1, "first").await.unwrap();
    let waiting = tokio::spawn({
        let limiter = limiter.clone();
        async move { limiter.acquire("critical", 1, "patient").await.map(drop) }
    });
    advance(Duration::from_secs(3600)).await;
    drop(held);
    assert!(
        waiting.await.expect("no panic").is_ok(),
        "admitted once the slot is free"
    );
    // A policy's own budget, and a deadline budget, likewise.
    let patient = Policy::leak("patient", "critical", Some(Duration::MAX), 1);
    let held = limiter.acquire("critical", 1, "first").await.unwrap();
    let waiting = tokio::spawn({
        let limiter = limiter.clone();
        shed_runtime::with_deadline_in(Duration::MAX, async move {
            limiter.acquire_as(patient).await.map(drop)
        })
    });
    advance(Duration::from_secs(3600)).await;
    drop(held);
    assert!(waiting.await.expect("no panic").is_ok());
}

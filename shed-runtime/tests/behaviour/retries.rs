//! Retries yield first: a call whose caller says it is a retry waits
//! behind the first attempts of its class and is the first of its class
//! evicted from a full queue (the first seed: "retries and hedges first").

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use shed_runtime::{with_attempt, ClassSpec, Config, Limiter, Permit, Reason, Rejected};

type Call = Pin<Box<dyn Future<Output = Result<Permit, Rejected>>>>;

fn poll(call: &mut Call) -> Poll<Result<Permit, Rejected>> {
    let waker = std::task::Waker::noop();
    call.as_mut().poll(&mut Context::from_waker(waker))
}

fn limiter(retries_yield: bool, queue_bound: u64) -> Limiter {
    Config::new()
        .capacity(1)
        .classes([ClassSpec::new("critical", 0).max_wait(Duration::from_secs(1))])
        .queue_bound(queue_bound)
        .retries_yield(retries_yield)
        .build()
        .unwrap()
}

fn call(limiter: &Limiter, attempt: u32) -> Call {
    Box::pin(with_attempt(
        attempt,
        limiter.acquire("critical", 1, "call"),
    ))
}

#[tokio::test(start_paused = true)]
async fn a_retry_waits_behind_first_attempts_that_came_later() {
    let limiter = limiter(true, 16);
    let holder = limiter.acquire("critical", 1, "holder").await.unwrap();
    let mut retry = call(&limiter, 2);
    assert!(poll(&mut retry).is_pending());
    let mut first = call(&limiter, 1);
    assert!(poll(&mut first).is_pending());
    drop(holder);
    let Poll::Ready(Ok(permit)) = poll(&mut first) else {
        panic!("the first attempt goes first");
    };
    assert!(poll(&mut retry).is_pending());
    drop(permit);
    assert!(matches!(poll(&mut retry), Poll::Ready(Ok(_))));
}

#[tokio::test(start_paused = true)]
async fn without_yielding_retries_wait_in_arrival_order() {
    let limiter = limiter(false, 16);
    let holder = limiter.acquire("critical", 1, "holder").await.unwrap();
    let mut retry = call(&limiter, 2);
    assert!(poll(&mut retry).is_pending());
    let mut first = call(&limiter, 1);
    assert!(poll(&mut first).is_pending());
    drop(holder);
    let Poll::Ready(Ok(_permit)) = poll(&mut retry) else {
        panic!("the older call goes first");
    };
    assert!(poll(&mut first).is_pending());
}

#[tokio::test(start_paused = true)]
async fn a_first_attempt_evicts_a_retry_from_a_full_queue() {
    let limiter = limiter(true, 2);
    let holder = limiter.acquire("critical", 1, "holder").await.unwrap();
    let mut retries = [call(&limiter, 2), call(&limiter, 3)];
    for retry in &mut retries {
        assert!(poll(retry).is_pending());
    }
    let mut first = call(&limiter, 1);
    assert!(poll(&mut first).is_pending(), "queued, not refused");
    let [older, newer] = &mut retries;
    assert!(poll(older).is_pending(), "the newest retry leaves first");
    match poll(newer) {
        Poll::Ready(Err(refused)) => assert_eq!(refused.reason(), Reason::QueueFull),
        other => panic!("{other:?}"),
    }
    // A retry that finds the queue full is refused itself: it may evict
    // nobody of its own class.
    let mut late_retry = call(&limiter, 2);
    match poll(&mut late_retry) {
        Poll::Ready(Err(refused)) => assert_eq!(refused.reason(), Reason::QueueFull),
        other => panic!("{other:?}"),
    }
    assert!(poll(older).is_pending());
    assert!(poll(&mut first).is_pending());
    drop(holder);
}

//! Admission outside a tokio runtime: what needs no waiting works, what
//! would wait is refused with a clear reason instead of a panic in tokio.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use shed_runtime::{Limiter, Reason};

/// Polls `future` once on this plain thread, with no runtime around.
fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
    let mut future = pin!(future);
    future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn a_call_that_would_wait_outside_a_tokio_runtime_is_refused_with_no_runtime() {
    assert!(tokio::runtime::Handle::try_current().is_err());
    let limiter = Limiter::builder().capacity(1).build().unwrap();
    // Free slots: admitted without any runtime.
    let Poll::Ready(Ok(permit)) = poll_once(limiter.acquire("critical", 1, "first")) else {
        panic!("a free slot is granted outside a runtime");
    };
    // No room: the call would have to wait, which it cannot do here.
    let Poll::Ready(Err(refused)) = poll_once(limiter.acquire("critical", 1, "second")) else {
        panic!("a call that would wait is refused, not left pending");
    };
    assert_eq!(refused.reason(), Reason::NoRuntime);
    assert_eq!(refused.reason().as_str(), "no_runtime");
    assert!(!refused.is_retryable(), "the same call fails the same way");
    assert!(
        refused.to_string().contains("outside a tokio runtime"),
        "{refused}"
    );
    // Nothing was queued and nothing leaked: the slot frees as usual.
    assert_eq!(limiter.in_flight(), 1);
    drop(permit);
    assert_eq!(limiter.in_flight(), 0);
    // Counted like any refusal.
    let stats = limiter.stats();
    assert_eq!(stats.queued, 0);
    let critical = stats.class("critical").unwrap();
    assert_eq!(critical.refused_for(Reason::NoRuntime), 1);
}

//! Behaviour of the limiter on tokio's paused clock: every refusal reason,
//! priorities, shares, floors, and giving slots back on every exit path.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use shed_runtime::{ClassSpec, Config, Limiter, Mode, Permit, Reason, Rejected};
use tokio::task::JoinHandle;
use tokio::time::Instant;

fn limiter(capacity: u32) -> Limiter {
    Config::new()
        .capacity(capacity)
        .classes([
            ClassSpec::new("critical", 0).max_wait(Duration::from_millis(100)),
            ClassSpec::new("optional", 1)
                .share(0.75)
                .max_wait(Duration::from_millis(100)),
            ClassSpec::new("background", 2)
                .share(0.5)
                .max_wait(Duration::from_millis(100)),
        ])
        .queue_bound(64)
        .build()
        .unwrap()
}

/// Polls a future once, without a runtime-driven wake-up.
fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    let waker = std::task::Waker::noop();
    Pin::new(future).poll(&mut Context::from_waker(waker))
}

/// Spawns a call that holds its slots until `hold` has passed.
///
/// The call asks for its slots here, before the task is spawned: when this
/// returns, it is admitted or queued, whatever the scheduler does next.
fn spawn_call(
    limiter: &Limiter,
    class: &'static str,
    weight: u32,
    hold: Duration,
) -> JoinHandle<Result<Instant, Rejected>> {
    let mut admission = limiter.acquire(class, weight, "test::call");
    let decided = match poll_once(&mut admission) {
        Poll::Ready(result) => Some(result),
        Poll::Pending => None,
    };
    tokio::spawn(async move {
        let permit = match decided {
            Some(result) => result?,
            None => admission.await?,
        };
        let started = Instant::now();
        tokio::time::sleep(hold).await;
        drop(permit);
        Ok(started)
    })
}

#[tokio::test(start_paused = true)]
async fn admits_at_once_while_slots_are_free() {
    let limiter = limiter(4);
    let a = limiter.acquire("critical", 3, "a").await.unwrap();
    let b = limiter.acquire("critical", 1, "b").await.unwrap();
    assert_eq!((a.weight(), b.weight()), (3, 1));
    assert_eq!(limiter.in_flight(), 4);
    drop(a);
    assert_eq!(limiter.in_flight(), 1);
    drop(b);
    assert_eq!(limiter.in_flight(), 0);
    assert_eq!(limiter.stats().class("critical").unwrap().admitted, 2);
}

#[tokio::test(start_paused = true)]
async fn in_flight_weight_never_exceeds_capacity() {
    let limiter = limiter(5);
    let calls: Vec<_> = (0..20)
        .map(|i| spawn_call(&limiter, "critical", 1 + (i % 3), Duration::from_millis(10)))
        .collect();
    for _ in 0..200 {
        // On the paused clock, a sleep ends only once every other task is
        // idle: each check sees the limiter after all calls have moved.
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert!(
            limiter.in_flight() <= 5,
            "in flight {}",
            limiter.in_flight()
        );
    }
    for call in calls {
        if let Err(refused) = call.await.unwrap() {
            assert!(
                matches!(refused.reason(), Reason::MaxWait | Reason::QueueFull),
                "{refused}"
            );
        }
    }
    assert_eq!(limiter.in_flight(), 0);
    let critical = limiter.stats().class("critical").unwrap().clone();
    assert!(critical.admitted >= 10, "{critical:?}");
}

#[tokio::test(start_paused = true)]
async fn max_wait_refusal_takes_no_slot() {
    let limiter = limiter(1);
    let holder = limiter.acquire("critical", 1, "holder").await.unwrap();
    let arrived = Instant::now();
    let refused = limiter.acquire("critical", 1, "late").await.unwrap_err();
    assert_eq!(refused.reason(), Reason::MaxWait);
    assert_eq!(refused.name(), "late");
    assert_eq!(
        Instant::now() - arrived,
        Duration::from_millis(100),
        "refused when its budget ran out"
    );
    assert_eq!(limiter.in_flight(), 1, "the refused call holds nothing");
    assert_eq!(limiter.stats().queued, 0);
    drop(holder);
    assert_eq!(limiter.in_flight(), 0);
    let stats = limiter.stats();
    assert_eq!(
        stats
            .class("critical")
            .unwrap()
            .refused_for(Reason::MaxWait),
        1
    );
}

#[tokio::test(start_paused = true)]
async fn a_waiter_admitted_within_its_budget_runs() {
    let limiter = limiter(1);
    let first = spawn_call(&limiter, "critical", 1, Duration::from_millis(60));
    let second = spawn_call(&limiter, "critical", 1, Duration::from_millis(10));
    assert_eq!(limiter.stats().queued, 1);
    let started_first = first.await.unwrap().unwrap();
    let started_second = second.await.unwrap().unwrap();
    assert_eq!(
        started_second - started_first,
        Duration::from_millis(60),
        "waited 60ms of its 100ms"
    );
}

#[tokio::test(start_paused = true)]
async fn expired_waiters_hand_the_slot_to_the_next() {
    let limiter = Config::new()
        .capacity(1)
        .classes([
            ClassSpec::new("critical", 0).max_wait(Duration::from_millis(200)),
            ClassSpec::new("background", 1).max_wait(Duration::from_millis(10)),
        ])
        .build()
        .unwrap();
    let holder = spawn_call(&limiter, "critical", 1, Duration::from_millis(50));
    let impatient = spawn_call(&limiter, "background", 1, Duration::from_millis(1));
    let patient = spawn_call(&limiter, "critical", 1, Duration::from_millis(1));
    assert_eq!(
        impatient.await.unwrap().unwrap_err().reason(),
        Reason::MaxWait
    );
    let started_holder = holder.await.unwrap().unwrap();
    let started_patient = patient.await.unwrap().unwrap();
    assert_eq!(started_patient - started_holder, Duration::from_millis(50));
    assert_eq!(limiter.in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn queue_full_past_the_bound() {
    let limiter = Config::new().capacity(2).queue_bound(2).build().unwrap();
    let _holder = limiter.acquire("critical", 2, "holder").await.unwrap();
    let mut first = limiter.acquire("critical", 2, "fills the queue");
    assert!(poll_once(&mut first).is_pending());
    let refused = limiter.acquire("critical", 1, "no room").await.unwrap_err();
    assert_eq!(refused.reason(), Reason::QueueFull);
    assert!(refused.retry_after() >= Duration::from_secs(1));
    assert_eq!(limiter.stats().queued_weight, 2);
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_evicts_lower_classes_for_higher_ones() {
    let limiter = Config::new().capacity(1).queue_bound(1).build().unwrap();
    let _holder = limiter.acquire("critical", 1, "holder").await.unwrap();
    let mut background = limiter.acquire("background", 1, "bg");
    assert!(poll_once(&mut background).is_pending());
    let mut critical = limiter.acquire("critical", 1, "crit");
    assert!(
        poll_once(&mut critical).is_pending(),
        "critical takes the queued place"
    );
    match poll_once(&mut background) {
        Poll::Ready(Err(r)) => assert_eq!(r.reason(), Reason::QueueFull),
        other => panic!("background should be evicted, got {other:?}"),
    }
    assert_eq!(limiter.stats().queued, 1);
}

#[tokio::test(start_paused = true)]
async fn waiters_are_served_by_rank_then_arrival() {
    let limiter = limiter(1);
    let holder = limiter.acquire("critical", 1, "holder").await.unwrap();
    let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut calls = Vec::new();
    for (label, class) in [
        ("bg1", "background"),
        ("opt1", "optional"),
        ("crit1", "critical"),
        ("opt2", "optional"),
        ("crit2", "critical"),
    ] {
        // Queued here, in this order, before its task exists.
        let mut admission = limiter.acquire(class, 1, "ordered");
        assert!(poll_once(&mut admission).is_pending(), "{label} waits");
        let order = order.clone();
        calls.push(tokio::spawn(async move {
            let _permit = admission.await.expect(label);
            order.lock().unwrap().push(label);
            tokio::time::sleep(Duration::from_millis(1)).await;
        }));
    }
    drop(holder);
    for call in calls {
        call.await.unwrap();
    }
    assert_eq!(
        *order.lock().unwrap(),
        ["crit1", "crit2", "opt1", "opt2", "bg1"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_class_never_holds_more_than_its_share() {
    let limiter = limiter(4);
    let a = limiter.acquire("background", 1, "a").await.unwrap();
    let b = limiter.acquire("background", 1, "b").await.unwrap();
    let mut third = limiter.acquire("background", 1, "c");
    assert!(
        poll_once(&mut third).is_pending(),
        "background's share of 4 is 2"
    );
    // Other classes still use the free slots.
    let critical = limiter.acquire("critical", 2, "crit").await.unwrap();
    assert_eq!(limiter.in_flight(), 4);
    drop(critical);
    assert!(
        poll_once(&mut third).is_pending(),
        "free slots, but the class is at its share"
    );
    drop(a);
    let c = match poll_once(&mut third) {
        Poll::Ready(Ok(permit)) => permit,
        other => panic!("expected the slot, got {other:?}"),
    };
    assert_eq!(limiter.stats().class("background").unwrap().in_flight, 2);
    drop((b, c));
}

#[tokio::test(start_paused = true)]
async fn floors_keep_low_classes_from_starving() {
    let limiter = Config::new()
        .capacity(2)
        .classes([
            ClassSpec::new("critical", 0).max_wait(Duration::from_secs(10)),
            ClassSpec::new("background", 1)
                .floor(1)
                .max_wait(Duration::from_secs(10)),
        ])
        .build()
        .unwrap();
    let first = limiter.acquire("critical", 1, "c1").await.unwrap();
    let second = limiter.acquire("critical", 1, "c2").await.unwrap();
    let mut background = limiter.acquire("background", 1, "bg");
    assert!(poll_once(&mut background).is_pending());
    let mut critical = limiter.acquire("critical", 1, "c3");
    assert!(poll_once(&mut critical).is_pending());
    drop(first);
    let Poll::Ready(Ok(_background_permit)) = poll_once(&mut background) else {
        panic!("below its floor, background is served before a higher class");
    };
    assert!(poll_once(&mut critical).is_pending());
    drop(second);
    let Poll::Ready(Ok(_critical_permit)) = poll_once(&mut critical) else {
        panic!("critical is served next");
    };
    assert_eq!(limiter.in_flight(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_heavy_waiter_is_not_overtaken_by_light_ones() {
    let limiter = limiter(4);
    let held = limiter.acquire("critical", 3, "held").await.unwrap();
    let mut heavy = limiter.acquire("critical", 3, "heavy");
    assert!(poll_once(&mut heavy).is_pending());
    let mut light = limiter.acquire("critical", 1, "light");
    assert!(
        poll_once(&mut light).is_pending(),
        "one slot is free, but the heavy call is ahead"
    );
    drop(held);
    let Poll::Ready(Ok(_heavy)) = poll_once(&mut heavy) else {
        panic!("the heavy call goes first");
    };
    let Poll::Ready(Ok(_light)) = poll_once(&mut light) else {
        panic!("the light call fits beside it");
    };
    assert_eq!(limiter.in_flight(), 4);
}

#[tokio::test(start_paused = true)]
async fn too_heavy_calls_are_refused_at_once() {
    let limiter = limiter(4);
    let refused = limiter.acquire("critical", 5, "huge").await.unwrap_err();
    assert_eq!(refused.reason(), Reason::TooHeavy);
    let refused = limiter
        .acquire("background", 3, "over its share")
        .await
        .unwrap_err();
    assert_eq!(refused.reason(), Reason::TooHeavy);
    assert_eq!(limiter.in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_deadline_shorter_than_the_service_time_is_refused_before_waiting() {
    let limiter = Config::new()
        .capacity(1)
        .default_service_time(Duration::from_millis(20))
        .build()
        .unwrap();
    let refused = shed_runtime::with_deadline_in(
        Duration::from_millis(10),
        limiter.acquire("critical", 1, "hurried"),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.reason(), Reason::Deadline);
    assert_eq!(limiter.in_flight(), 0);
    let admitted = shed_runtime::with_deadline_in(
        Duration::from_millis(30),
        limiter.acquire("critical", 1, "in time"),
    )
    .await;
    assert!(admitted.is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_waiter_gives_up_when_its_deadline_can_no_longer_be_met() {
    let limiter = Config::new()
        .capacity(1)
        .default_service_time(Duration::from_millis(20))
        .build()
        .unwrap();
    let _holder = limiter.acquire("critical", 1, "holder").await.unwrap();
    let arrived = Instant::now();
    let refused = shed_runtime::with_deadline_in(
        Duration::from_millis(45),
        limiter.acquire("critical", 1, "waiting"),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.reason(), Reason::Deadline);
    assert_eq!(
        Instant::now() - arrived,
        Duration::from_millis(25),
        "deadline minus service time"
    );
    assert_eq!(limiter.stats().queued, 0);
}

#[tokio::test(start_paused = true)]
async fn a_switched_off_class_is_refused_and_its_waiters_too() {
    let limiter = limiter(1);
    let holder = limiter.acquire("critical", 1, "holder").await.unwrap();
    let mut waiting = limiter.acquire("optional", 1, "waiting");
    assert!(poll_once(&mut waiting).is_pending());
    limiter.set_class_enabled("optional", false).unwrap();
    match poll_once(&mut waiting) {
        Poll::Ready(Err(r)) => assert_eq!(r.reason(), Reason::Disabled),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let refused = limiter.acquire("optional", 1, "new").await.unwrap_err();
    assert_eq!(refused.reason(), Reason::Disabled);
    assert!(!refused.is_retryable(), "not until it is switched on");
    let later = Duration::from_secs(21)..=Duration::from_secs(39);
    assert!(later.contains(&refused.retry_after()), "30 s ± 30%");
    drop(holder);
    assert_eq!(limiter.in_flight(), 0);
    assert!(limiter
        .set_class_enabled("nosuch", false)
        .unwrap_err()
        .to_string()
        .contains("known classes: critical, optional, background"));
    limiter.set_class_enabled("optional", true).unwrap();
    assert!(limiter.acquire("optional", 1, "back").await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn observe_mode_counts_refusals_but_admits_everything() {
    let limiter = Config::new()
        .capacity(1)
        .mode(Mode::Observe)
        .build()
        .unwrap();
    limiter.set_class_enabled("background", false).unwrap();
    let a = limiter.acquire("critical", 1, "a").await.unwrap();
    let b = limiter
        .acquire("critical", 1, "over the limit")
        .await
        .unwrap();
    let c = limiter
        .acquire("background", 1, "switched off")
        .await
        .unwrap();
    assert_eq!(
        limiter.in_flight(),
        3,
        "observe mode shows real concurrency"
    );
    let stats = limiter.stats();
    assert_eq!(
        stats.class("background").unwrap().observed_refusals,
        vec![(Reason::Disabled, 1)]
    );
    assert_eq!(stats.class("background").unwrap().refused_total(), 0);
    drop((a, b, c));
    assert_eq!(limiter.in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn off_mode_bypasses_the_limiter() {
    let limiter = Config::new().capacity(1).mode(Mode::Off).build().unwrap();
    limiter.set_class_enabled("critical", false).unwrap();
    let permits: Vec<Permit> = futures_join(&limiter, 3).await;
    assert_eq!(limiter.in_flight(), 0);
    assert!(permits.iter().all(|p| p.weight() == 0));
}

async fn futures_join(limiter: &Limiter, n: usize) -> Vec<Permit> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(limiter.acquire("critical", 1, "off").await.unwrap());
    }
    out
}

#[tokio::test(start_paused = true)]
async fn dropping_a_waiting_call_loses_no_slot_and_no_waiter() {
    let limiter = limiter(1);
    let holder = limiter.acquire("critical", 1, "holder").await.unwrap();
    let mut dropped = limiter.acquire("critical", 1, "dropped");
    assert!(poll_once(&mut dropped).is_pending());
    let mut next = limiter.acquire("critical", 1, "next");
    assert!(poll_once(&mut next).is_pending());
    drop(dropped);
    assert_eq!(limiter.stats().queued, 1);
    drop(holder);
    assert!(matches!(poll_once(&mut next), Poll::Ready(Ok(_))));
}

#[tokio::test(start_paused = true)]
async fn slots_granted_to_a_dropped_waiter_are_given_back() {
    let limiter = limiter(1);
    let holder = limiter.acquire("critical", 1, "holder").await.unwrap();
    let mut granted = limiter.acquire("critical", 1, "granted, never polled");
    assert!(poll_once(&mut granted).is_pending());
    drop(holder);
    assert_eq!(limiter.in_flight(), 1, "granted to the waiter");
    drop(granted);
    assert_eq!(limiter.in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_panicking_call_gives_its_slots_back() {
    let limiter = limiter(2);
    let task = {
        let limiter = limiter.clone();
        tokio::spawn(async move {
            let _permit = limiter.acquire("critical", 2, "panics").await.unwrap();
            tokio::task::yield_now().await;
            panic!("handler bug");
        })
    };
    assert!(task.await.unwrap_err().is_panic());
    assert_eq!(limiter.in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn an_aborted_call_gives_its_slots_back() {
    let limiter = limiter(1);
    let running = spawn_call(&limiter, "critical", 1, Duration::from_secs(60));
    let waiting = spawn_call(&limiter, "critical", 1, Duration::from_secs(60));
    assert_eq!((limiter.in_flight(), limiter.stats().queued), (1, 1));
    waiting.abort();
    running.abort();
    // A cancelled task's handle resolves once its future has been dropped.
    assert!(waiting.await.unwrap_err().is_cancelled());
    assert!(running.await.unwrap_err().is_cancelled());
    assert_eq!((limiter.in_flight(), limiter.stats().queued), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn raising_the_capacity_admits_waiters() {
    let limiter = limiter(2);
    let _holder = limiter.acquire("critical", 1, "holder").await.unwrap();
    let mut waiting = limiter.acquire("critical", 2, "waiting");
    assert!(poll_once(&mut waiting).is_pending());
    limiter.set_capacity(3);
    let Poll::Ready(Ok(_permit)) = poll_once(&mut waiting) else {
        panic!("the new room admits the waiter");
    };
    assert_eq!(limiter.in_flight(), 3);
}

#[tokio::test(start_paused = true)]
async fn scoped_limiters_do_not_share_state() {
    let a = limiter(1);
    let b = limiter(1);
    let _held = a.acquire("critical", 1, "a").await.unwrap();
    let current = b.scope(async { Limiter::current() }).await;
    assert_eq!(current.in_flight(), 0);
    assert!(b.acquire("critical", 1, "b").await.is_ok());
}

#[test]
fn a_refusal_explains_itself() {
    let limiter = Limiter::builder().capacity(1).build().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let refused = rt
        .block_on(limiter.acquire("nosuch", 1, "orders::create"))
        .unwrap_err();
    assert_eq!(refused.reason(), Reason::UnknownClass);
    assert!(
        !refused.is_retryable(),
        "an unconfigured class stays unconfigured"
    );
    let error: Box<dyn std::error::Error> = Box::new(refused);
    assert!(error.to_string().contains("`orders::create`"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn absurd_weights_are_refused_without_disturbing_anyone() {
    let limiter = limiter(4);
    let held = limiter.acquire("critical", 1, "held").await.unwrap();
    for weight in [5, 1 << 23, 1 << 24, u32::MAX] {
        let refused = limiter
            .acquire("critical", weight, "huge")
            .await
            .unwrap_err();
        assert_eq!(refused.reason(), Reason::TooHeavy, "weight {weight}");
    }
    assert_eq!((limiter.in_flight(), limiter.stats().queued), (1, 0));
    drop(held);
    let observe = Config::new()
        .capacity(4)
        .mode(Mode::Observe)
        .build()
        .unwrap();
    let admitted = observe.acquire("critical", u32::MAX, "huge").await.unwrap();
    assert_eq!(observe.in_flight(), 0, "observed, admitted, not counted");
    drop(admitted);
    assert_eq!(
        limiter
            .acquire("critical", 4, "fits")
            .await
            .unwrap()
            .weight(),
        4
    );
}

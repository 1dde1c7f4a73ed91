//! Queue discipline under sustained overload, on the paused clock: bursts
//! are served in order; once the queue stands, adaptive LIFO serves the
//! newest caller and CoDel refuses the oldest.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use shed_runtime::{ClassSpec, Codel, Config, Limiter, Reason};
use tokio::time::sleep;

fn limiter(configure: impl FnOnce(Config) -> Config) -> Limiter {
    configure(
        Config::new()
            .capacity(1)
            .classes([ClassSpec::new("critical", 0).max_wait(Duration::from_millis(30))])
            .queue_bound(100),
    )
    .build()
    .unwrap()
}

/// Queues `labels` behind a held slot (the first at once, then `gap`, the
/// others one millisecond apart), releases the slot after `hold`, and
/// returns the order in which the waiters ran.
async fn serve_order(
    limiter: &Limiter,
    labels: &[&'static str],
    gap: Duration,
    hold: Duration,
) -> Vec<&'static str> {
    let start = tokio::time::Instant::now();
    let order = Arc::new(Mutex::new(Vec::new()));
    let holder = limiter.acquire("critical", 1, "holder").await.unwrap();
    let mut tasks = Vec::new();
    for &label in labels {
        let (limiter, order) = (limiter.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            if let Ok(_permit) = limiter.acquire("critical", 1, label).await {
                order.lock().unwrap().push(label);
                sleep(Duration::from_millis(1)).await;
            }
        }));
        sleep(if tasks.len() == 1 {
            gap
        } else {
            Duration::from_millis(1)
        })
        .await;
    }
    tokio::time::sleep_until(start + hold).await;
    drop(holder);
    for task in tasks {
        task.await.unwrap();
    }

    order.lock().unwrap().clone()
}

#[tokio::test(start_paused = true)]
async fn a_burst_is_served_in_arrival_order_even_with_adaptive_lifo() {
    let limiter = limiter(|c| c.adaptive_lifo(true));
    let order = serve_order(
        &limiter,
        &["a", "b", "c", "d"],
        Duration::from_millis(1),
        Duration::from_millis(10),
    )
    .await;
    assert_eq!(order, ["a", "b", "c", "d"], "no overflow yet: FIFO");
    assert_eq!(
        limiter.stats().class("critical").unwrap().refused_total(),
        0
    );
}

#[tokio::test(start_paused = true)]
async fn once_the_queue_overflows_adaptive_lifo_serves_the_newest_first() {
    let limiter = limiter(|c| c.adaptive_lifo(true));
    // "old" waits past its 30 ms budget: an overflow, the queue stands.
    let order = serve_order(
        &limiter,
        &["old", "a", "b", "c"],
        Duration::from_millis(20),
        Duration::from_millis(35),
    )
    .await;
    assert_eq!(
        order,
        ["c", "b", "a"],
        "newest first while the queue stands"
    );
    let critical = limiter.stats().class("critical").unwrap().clone();
    assert_eq!(critical.refused_for(Reason::MaxWait), 1);
}

#[tokio::test(start_paused = true)]
async fn without_lifo_the_same_overflow_is_served_in_order() {
    let limiter = limiter(|c| c);
    let order = serve_order(
        &limiter,
        &["old", "a", "b", "c"],
        Duration::from_millis(20),
        Duration::from_millis(35),
    )
    .await;
    assert_eq!(order, ["a", "b", "c"]);
}

#[tokio::test(start_paused = true)]
async fn codel_refuses_old_waiters_of_a_standing_queue_while_younger_ones_can_fill_the_slots() {
    let limiter = limiter(|c| c.codel(Codel::default()).adaptive_lifo(true));
    let labels = [
        "old", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o",
    ];
    let order = serve_order(
        &limiter,
        &labels,
        Duration::from_millis(14),
        Duration::from_millis(31),
    )
    .await;
    let critical = limiter.stats().class("critical").unwrap().clone();
    assert_eq!(
        critical.refused_for(Reason::MaxWait),
        1,
        "the first overflow"
    );
    assert!(
        critical.refused_for(Reason::Overload) > 0,
        "then CoDel drops: {critical:?}"
    );
    assert_eq!(
        order.first(),
        Some(&"o"),
        "the newest is served first: {order:?}"
    );
    assert!(
        !order.contains(&"a"),
        "the oldest waiters were dropped, not served late: {order:?}"
    );
}

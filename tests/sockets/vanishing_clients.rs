//! Clients that go away mid-request over a real socket: the one whose
//! call holds the slot and the one queued behind it. Their work is
//! abandoned with them (nobody waits for the answer), and the limiter is
//! left with nothing held and nothing queued, by HTTP/1.1 through the
//! example's connection layer. Wall clock: the test only waits, with a
//! wide margin, for what must happen.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use shed::http::{Routes, ShedLayer};
use shed::{ClassSpec, Config};
use tokio::io::AsyncWriteExt;

use crate::hostile_heads::{exchange, get as get_head, status};
use crate::server::conn;
use crate::ONE_AT_A_TIME;

/// Sends a request head and returns the open connection.
async fn ask(address: std::net::SocketAddr, path: &str) -> tokio::net::TcpStream {
    let mut client = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = format!("GET {path} HTTP/1.1\r\nhost: test\r\n\r\n");
    client.write_all(head.as_bytes()).await.unwrap();
    client
}

/// Waits up to 10 s for `done`.
async fn eventually(what: &str, done: impl Fn() -> bool) {
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "{what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_hang_up_leave_nothing_held_or_queued_and_their_work_stops() {
    let _serial = ONE_AT_A_TIME.lock().await;
    // One slot, and a queue budget long enough that only the client's
    // going away can end the wait.
    let limiter = Config::new()
        .capacity(1)
        .class(ClassSpec::new("critical", 0).max_wait(Duration::from_secs(60)))
        .build()
        .unwrap();
    // Counts handlers dropped before their end.
    struct Abandoned(Arc<AtomicUsize>);
    impl Drop for Abandoned {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let abandoned = Arc::new(AtomicUsize::new(0));
    let app = axum::Router::new()
        .route(
            "/slow",
            get({
                let abandoned = Arc::clone(&abandoned);
                move || async move {
                    let guard = Abandoned(abandoned);
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    std::mem::forget(guard);
                    "done"
                }
            }),
        )
        .route("/fast", get(|| async { "fast" }))
        .layer(ShedLayer::new(Routes::new("critical")).limiter(limiter.clone()));
    let stats = Arc::new(conn::Stats::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(conn::serve(
        listener,
        app,
        conn::Limits::default(),
        Arc::clone(&stats),
    ));

    let holder = ask(address, "/slow").await;
    eventually("the first call holds the slot", || {
        limiter.stats().in_flight == 1
    })
    .await;
    let queued = ask(address, "/fast").await;
    eventually("the second call queues behind it", || {
        limiter.stats().queued_weight == 1
    })
    .await;

    // Both clients hang up.
    drop(queued);
    drop(holder);
    eventually("nothing held and nothing queued once both are gone", || {
        let stats = limiter.stats();
        stats.in_flight == 0 && stats.queued_weight == 0
    })
    .await;
    eventually("both connections closed", || {
        stats.open.load(Ordering::SeqCst) == 0
    })
    .await;
    eventually(
        "the abandoned handler was dropped, not run to its end",
        || abandoned.load(Ordering::SeqCst) == 1,
    )
    .await;

    // The slot serves the next caller at once.
    let answer = exchange(address, get_head("/fast", b"")).await;
    assert_eq!(status(&answer), "200", "{answer}");
}

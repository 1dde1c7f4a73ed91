//! A client that stops reading a response holds a socket that a graceful
//! close would keep until the response ends, that is never: the example's
//! connection layer closes it once a write has been blocked for its write
//! timeout. Real sockets on the wall clock: the test only waits, with a
//! wide margin, for what must happen.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::server::conn;
use crate::ONE_AT_A_TIME;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_disconnected_after_the_write_timeout() {
    let _serial = ONE_AT_A_TIME.lock().await;
    // Far more than the socket buffers hold: the writes must block.
    let app = axum::Router::new().route("/big", get(|| async { vec![b'x'; 64 << 20] }));
    let limits = conn::Limits {
        write_timeout: Duration::from_millis(500),
        ..conn::Limits::default()
    };
    let stats = Arc::new(conn::Stats::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(conn::serve(listener, app, limits, Arc::clone(&stats)));

    let mut client = tokio::net::TcpStream::connect(address).await.unwrap();
    client
        .write_all(b"GET /big HTTP/1.1\r\nhost: test\r\n\r\n")
        .await
        .unwrap();
    // Read the head and a little of the body, then stop reading.
    let mut start = [0u8; 4096];
    let read = client.read(&mut start).await.unwrap();
    assert!(start[..read].starts_with(b"HTTP/1.1 200"));

    let waited = tokio::time::timeout(Duration::from_secs(20), async {
        while stats.stalled_closed.load(Ordering::Relaxed) == 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "the stalled connection was never closed");
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        while stats.open.load(Ordering::Relaxed) > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(closed.is_ok(), "the socket stayed open");
    // What the client can still read ends: the server closed it.
    let mut rest = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(10), client.read_to_end(&mut rest)).await;
    assert!(ended.is_ok(), "the stream never ended");
    assert!(
        rest.len() + read < 64 << 20,
        "the response was cut, not finished"
    );
}

//! Absurd request heads over a real socket: heads larger than any server
//! should buffer, thousands of headers, deadlines no clock can hold,
//! headers that claim a class. The server refuses what it cannot parse
//! with a 4xx before the limiter sees it, ignores what it must not trust,
//! and afterwards holds no slot, no waiter and no connection, and still
//! answers its health probe.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::server::{self, conn};
use crate::ONE_AT_A_TIME;

/// Sends `head` on a fresh connection and reads until the server closes
/// it. A server may answer (and close) before it has read a head that is
/// too large, so a failed write is not an error; what was read is.
pub(crate) async fn exchange(address: std::net::SocketAddr, head: Vec<u8>) -> String {
    let stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let writing = tokio::spawn(async move {
        let _ = writer.write_all(&head).await;
        writer
    });
    let mut response = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        let mut chunk = [0u8; 4096];
        loop {
            match reader.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => response.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server neither answered nor closed");
    drop(writing.await);
    String::from_utf8_lossy(&response).into_owned()
}

/// A `GET` head with `headers`, asking the server to close afterwards.
pub(crate) fn get(path: &str, headers: &[u8]) -> Vec<u8> {
    let mut head = format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n").into_bytes();
    head.extend_from_slice(headers);
    head.extend_from_slice(b"\r\n");
    head
}

/// The status code of a raw HTTP/1.1 response.
pub(crate) fn status(response: &str) -> &str {
    response.get(9..12).unwrap_or("none")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absurd_heads_are_refused_or_ignored_and_leave_nothing_held() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let limiter = shed::Config::new().capacity(4).build().unwrap();
    let app = server::App {
        readiness: shed::Readiness::new(limiter.clone()).start(),
        database: Arc::new(server::Database::new(4, Duration::from_millis(1))),
        limiter: limiter.clone(),
        metrics: None,
        admin_token: None,
    };
    let stats = Arc::new(conn::Stats::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(conn::serve(
        listener,
        server::router(app),
        conn::Limits::default(),
        Arc::clone(&stats),
    ));

    // Heads the server must not buffer: refused with a 4xx (hyper answers
    // 431) or cut off, never served.
    let huge_value = [b"x-junk: ".as_slice(), &vec![b'a'; 1 << 20], b"\r\n"].concat();
    let many_headers: Vec<u8> = (0..5_000)
        .flat_map(|i| format!("x-h{i}: {i}\r\n").into_bytes())
        .collect();
    let long_path = format!("/orders/{}", "9".repeat(200_000));
    for (what, head) in [
        ("a 1 MiB header", get("/orders/1", &huge_value)),
        ("5,000 headers", get("/orders/1", &many_headers)),
        ("a 200 kB path", get(&long_path, b"")),
    ] {
        let response = exchange(address, head).await;
        assert!(
            response.is_empty() || status(&response).starts_with('4'),
            "{what}: {:?}",
            &response[..response.len().min(200)]
        );
    }

    // Deadlines no clock can hold, and malformed ones: ignored or capped
    // at the server's 30 s, so the call is served.
    for header in [
        b"x-request-timeout: 99999999999999999999999999\r\n".as_slice(),
        b"x-request-timeout: 18446744073709551616ms\r\n",
        b"x-request-timeout: 1e400s\r\n",
        b"x-request-timeout: -5\r\n",
        b"x-request-timeout: \xff\xfe\r\n",
        b"grpc-timeout: 99999999H\r\n",
        b"grpc-timeout: 1\r\n",
    ] {
        let response = exchange(address, get("/orders/1", header)).await;
        assert_eq!(
            status(&response),
            "200",
            "{:?}: {response:?}",
            String::from_utf8_lossy(header)
        );
    }
    // A deadline already past is refused without running, as a 504 that
    // says why (the same call again would not meet it either).
    let expired = exchange(address, get("/orders/1", b"x-request-timeout: 0\r\n")).await;
    assert_eq!(status(&expired), "504", "{expired:?}");
    assert!(expired.contains("\"reason\":\"deadline\""), "{expired:?}");

    // A class claimed by the client changes nothing: with `background`
    // switched off, the reports route is refused whatever the head says,
    // and the orders route is served.
    limiter.set_class_enabled("background", false).unwrap();
    for claim in [
        b"x-shed-class: critical\r\n".as_slice(),
        b"x-priority: critical\r\n",
        b"x-class: critical\r\n",
    ] {
        let report = exchange(address, get("/reports", claim)).await;
        assert_eq!(status(&report), "503", "{report:?}");
        let orders = exchange(address, get("/orders/1", b"x-shed-class: background\r\n")).await;
        assert_eq!(status(&orders), "200", "{orders:?}");
    }
    limiter.set_class_enabled("background", true).unwrap();

    let probe = exchange(address, get("/healthz", b"")).await;
    assert_eq!(status(&probe), "200", "{probe:?}");
    // Every connection asked to close: give the server a moment to see
    // the last ones go.
    for _ in 0..100 {
        if stats.open.load(Ordering::Acquire) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        stats.open.load(Ordering::Acquire),
        0,
        "connections left open"
    );
    assert_eq!(limiter.in_flight(), 0, "a slot was kept");
    assert_eq!(limiter.stats().queued, 0, "a waiter was kept");
}

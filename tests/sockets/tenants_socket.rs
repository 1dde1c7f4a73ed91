//! The example axum service over loopback with API keys: one key floods
//! the service at twice its capacity while three others send a fraction
//! of it. With each key a tenant (the example's authentication records
//! the key's owner; shed's layer reads it from there), the three keep
//! their service and the flood waits behind itself; with the same traffic
//! and no tenants, the flood takes the others' slots.
//!
//! Real sockets run on the wall clock, and a loaded 2-core machine can be
//! slower than the service: the test counts answers (200 within a
//! generous 2 s), not latency, and the margins are wide (the quiet keys
//! need 90% where the fair queue gives them nearly all, and without
//! tenants get about a third).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use shed::{Config, Readiness, Tiers};

use crate::{server, ONE_AT_A_TIME};

/// 4 slots in front of a 4-connection database at 20 ms a query: 200 rps.
async fn serve() -> (SocketAddr, shed::Limiter) {
    let limiter = Config::new()
        .capacity(4)
        .tiers(Tiers::new(["premium", "free"]))
        .build()
        .unwrap();
    let app = server::App {
        readiness: Readiness::new(limiter.clone()).start(),
        database: Arc::new(server::Database::new(4, Duration::from_millis(20))),
        limiter: limiter.clone(),
        metrics: None,
        admin_token: None,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, server::router(app)).await.unwrap() });
    (addr, limiter)
}

/// One GET with `key` on a fresh connection: whether it was answered 200
/// within `timeout` (a client that gave up counts as not served).
async fn get(addr: SocketAddr, key: Option<&str>, timeout: Duration) -> bool {
    let call = async {
        let stream = tokio::net::TcpStream::connect(addr).await.ok()?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .ok()?;
        tokio::spawn(connection);
        let mut request = http::Request::get("/orders/1").header("host", "localhost");
        if let Some(key) = key {
            request = request.header("x-api-key", key);
        }
        let response = sender
            .send_request(request.body(Empty::<Bytes>::new()).ok()?)
            .await
            .ok()?;
        let ok = response.status() == http::StatusCode::OK;
        response.into_body().collect().await.ok()?;
        Some(ok)
    };
    tokio::time::timeout(timeout, call).await.ok().flatten() == Some(true)
}

/// Sends `rps` a second with each key for `seconds`; per key, (sent, ok).
async fn load(
    addr: SocketAddr,
    keys: &[(Option<&'static str>, f64)],
    seconds: f64,
) -> Vec<(usize, usize)> {
    let timeout = Duration::from_secs(2);
    let mut per_key = Vec::new();
    for &(key, rps) in keys {
        per_key.push(tokio::spawn(async move {
            let end = Instant::now() + Duration::from_secs_f64(seconds);
            let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / rps));
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            let mut calls = Vec::new();
            while Instant::now() < end {
                ticker.tick().await;
                calls.push(tokio::spawn(get(addr, key, timeout)));
            }
            let sent = calls.len();
            let mut ok = 0;
            for call in calls {
                ok += usize::from(call.await.unwrap());
            }
            (sent, ok)
        }));
    }
    let mut results = Vec::new();
    for key in per_key {
        results.push(key.await.unwrap());
    }
    results
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_flooding_key_leaves_the_others_unaffected() {
    let _serial = ONE_AT_A_TIME.lock().await;
    // No other test of this binary sends a key, so nothing has read the
    // table yet.
    assert!(
        server::tenants::set_keys("k-flood=flood:free,k-a=alpha:free,k-b=beta:free,k-c=gamma:free"),
        "the key table was read before the test set it"
    );
    let (addr, limiter) = serve().await;
    // 400 rps from one key, 3 x 20 rps from the others: 2.3x the capacity.
    let quiet_fraction = |results: &[(usize, usize)]| {
        let (sent, ok) = results[1..]
            .iter()
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        ok as f64 / sent as f64
    };
    let with_keys = load(
        addr,
        &[
            (Some("k-flood"), 400.0),
            (Some("k-a"), 20.0),
            (Some("k-b"), 20.0),
            (Some("k-c"), 20.0),
        ],
        2.0,
    )
    .await;
    let fair = quiet_fraction(&with_keys);
    println!("with keys: {with_keys:?}, quiet served {fair:.3}");
    let heaviest = limiter.take_heaviest_tenants();
    println!("{heaviest}");

    let (addr, _) = serve().await;
    let without = load(
        addr,
        &[(None, 400.0), (None, 20.0), (None, 20.0), (None, 20.0)],
        2.0,
    )
    .await;
    let shared = quiet_fraction(&without);
    println!("without keys: {without:?}, quiet served {shared:.3}");

    assert!(fair >= 0.9, "the quiet keys keep their service: {fair:.3}");
    assert!(with_keys[0].1 > 0, "the flood gets the rest");
    assert_eq!(
        heaviest.refused[0].0, "flood",
        "the summary names the flood"
    );
    assert!(
        fair > shared + 0.2,
        "tenants make the difference: {fair:.3} vs {shared:.3}"
    );
}

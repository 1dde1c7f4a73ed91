//! The example axum service under a real overload over loopback sockets:
//! refusals are proper 503s, health probes keep answering, and goodput is
//! several times that of the same server with shedding off.
//!
//! This is the short version (a few seconds, modest rates, debug build);
//! `cargo run --release --example http_load --features axum` is the full
//! run recorded in BENCHMARKS.md. The assertions are qualitative, with
//! wide margins, because real sockets run on the wall clock.

#[allow(dead_code)]
#[path = "../examples/axum_server.rs"]
mod server;
#[allow(dead_code)]
mod support {
    pub mod load;
}

use std::sync::Arc;
use std::time::Duration;

use shed::{Config, Mode, Readiness};
use support::load::{self, LoadReport};

/// Starts the example's router on a free loopback port: 4 slots in front
/// of a 4-connection database at 20 ms a query, i.e. 200 rps of capacity.
async fn serve(mode: Mode) -> std::net::SocketAddr {
    let limiter = Config::new().capacity(4).mode(mode).build().unwrap();
    let app = server::App {
        readiness: Arc::new(Readiness::new(limiter.clone())),
        database: Arc::new(server::Database::new(4, Duration::from_millis(20))),
        limiter,
        metrics: None,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, server::router(app)).await.unwrap() });
    addr
}

async fn overload(mode: Mode) -> LoadReport {
    let addr = serve(mode).await;
    // 600 rps on a 200 rps service, 2.5 s, clients give up after 250 ms.
    load::run(
        addr,
        &["/orders/1", "/orders/2", "/reports"],
        600.0,
        2.5,
        Duration::from_millis(250),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_overload_refusals_are_503s_probes_answer_and_goodput_beats_no_shedding() {
    let shed = overload(Mode::Enforce).await;
    println!("shedding:     {}", shed.summary());
    let unshed = overload(Mode::Off).await;
    println!("SHED_MODE=off: {}", unshed.summary());

    assert!(
        shed.errors.is_empty(),
        "only 200s and proper 503s: {:?}",
        &shed.errors[..shed.errors.len().min(5)]
    );
    assert!(shed.refused > 0, "the overload was shed");
    assert_eq!(shed.probe_failures, 0, "liveness is never shed");
    assert!(shed.probes >= 10);
    assert!(
        unshed.errors.is_empty(),
        "no 5xx without shedding either: {:?}",
        &unshed.errors[..unshed.errors.len().min(5)]
    );
    assert_eq!(unshed.refused, 0, "SHED_MODE=off refuses nothing");
    assert!(
        shed.in_time >= 3 * unshed.in_time,
        "goodput with shedding {} vs without {}",
        shed.in_time,
        unshed.in_time
    );
}

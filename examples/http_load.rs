//! The full HTTP load test: the example axum service on a loopback port,
//! first at a quarter of its capacity (the uncontended p99), then an
//! open-loop client at three times its capacity against the defaults (no
//! capacity given: the adaptive limit), a fixed capacity of 16 and
//! `SHED_MODE=off`. Figures in BENCHMARKS.md.
//!
//! ```text
//! cargo run --release --example http_load --features axum [-- RPS SECONDS]
//! ```

#[allow(dead_code)]
#[path = "../tests/support/load.rs"]
mod load;
#[allow(dead_code)]
#[path = "axum_server/main.rs"]
mod server;

use std::sync::Arc;
use std::time::Duration;

use shed::{Config, Mode, Readiness};

/// One run: a fresh server with `limiter`, `rps` offered for `seconds`.
async fn run(limiter: shed::Limiter, rps: f64, seconds: f64) -> load::LoadReport {
    let app = server::App {
        readiness: Readiness::new(limiter.clone()).start(),
        database: Arc::new(server::Database::new(16, Duration::from_millis(20))),
        limiter,
        metrics: None,
        admin_token: None,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let addr = listener.local_addr().expect("bound");
    let server = tokio::spawn(server::conn::serve(
        listener,
        server::router(app),
        server::conn::Limits::default(),
        Arc::default(),
    ));
    let report = load::run(
        addr,
        &["/orders/1", "/orders/2", "/reports"],
        rps,
        seconds,
        Duration::from_millis(250),
    )
    .await;
    server.abort();
    report
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let rps: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2400.0);
    let seconds: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10.0);
    const CAPACITY: f64 = 800.0;
    println!("a 16-connection database at 20 ms a query: {CAPACITY} rps of capacity");
    println!("offered {rps} rps for {seconds} s, client timeout 250 ms\n");
    let defaults = || Config::new().build().expect("valid");
    // Built before any load, as a service builds its limiter at startup:
    // each waits idle through the runs before its own (the defaults must
    // learn the service from the load, not from the idle time).
    let contenders = [
        ("defaults (no capacity)", defaults()),
        (
            "capacity 16",
            Config::new().capacity(16).build().expect("valid"),
        ),
        (
            "SHED_MODE=off",
            Config::new().mode(Mode::Off).build().expect("valid"),
        ),
    ];
    let quiet = run(defaults(), CAPACITY / 4.0, seconds).await;
    let quiet_p99 = load::LoadReport::percentile(&quiet.latencies, 0.99);
    println!(
        "uncontended, defaults, {} rps: {}\n",
        CAPACITY / 4.0,
        quiet.summary()
    );
    println!("| limiter | goodput | of capacity | p99 of served | p99 / uncontended p99 | refused | late |");
    println!("|---|---|---|---|---|---|---|");
    for (name, limiter) in contenders {
        let report = run(limiter, rps, seconds).await;
        let p99 = load::LoadReport::percentile(&report.latencies, 0.99);
        println!(
            "| {name} | {:.0} rps | {:.1}% | {:.1} ms | {:.2} | {} | {} |",
            report.goodput(),
            100.0 * report.goodput() / CAPACITY,
            p99.as_secs_f64() * 1e3,
            p99.as_secs_f64() / quiet_p99.as_secs_f64().max(1e-9),
            report.refused,
            report.late,
        );
    }
    println!(
        "\n(uncontended p99: {:.1} ms)",
        quiet_p99.as_secs_f64() * 1e3
    );
}

//! The full HTTP load test: the example axum service on a loopback port,
//! an open-loop client at three times its capacity, with shedding and with
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

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let rps: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2400.0);
    let seconds: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10.0);
    println!("16 slots in front of a 16-connection database at 20 ms a query: 800 rps of capacity");
    println!("offered {rps} rps for {seconds} s, client timeout 250 ms\n");
    for mode in [Mode::Enforce, Mode::Off] {
        let limiter = Config::new()
            .capacity(16)
            .mode(mode)
            .build()
            .expect("valid");
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
        println!("SHED_MODE={:<8} {}\n", mode.as_str(), report.summary());
        server.abort();
    }
}

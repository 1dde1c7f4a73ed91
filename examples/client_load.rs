//! The longer run of `tests/sockets/client_retries.rs`: clients built on shed's
//! client layer against a shed-guarded axum server at three times its
//! capacity, over loopback, under four retry policies. Figures in
//! BENCHMARKS.md.
//!
//! ```text
//! cargo run --release --example client_load --features axum,client [-- RPS SECONDS]
//! ```

#[allow(dead_code)]
#[path = "../tests/support/retries.rs"]
mod retries;

use std::time::Duration;

use shed::client::ClientLayer;

/// A name and the client layer each caller is built with.
type Policy = (&'static str, fn() -> ClientLayer);

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let rps: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(600.0);
    let seconds: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10.0);
    let (slots, work, clients, deadline) = (
        4,
        Duration::from_millis(20),
        5,
        Duration::from_millis(3_500),
    );
    println!(
        "{slots} slots, {work:?} a request: {} rps of capacity; {clients} clients send {rps} rps for {seconds} s,",
        slots as f64 / work.as_secs_f64()
    );
    println!("each call with a {deadline:?} deadline and up to 4 attempts\n");
    let policies: [Policy; 4] = [
        ("no retries", || {
            ClientLayer::new().max_attempts(1).throttle(None)
        }),
        ("retries, no budget", || {
            ClientLayer::new()
                .max_attempts(4)
                .budget(None)
                .throttle(None)
        }),
        ("retries + budget", || {
            ClientLayer::new().max_attempts(4).throttle(None)
        }),
        ("retries + budget + throttle", || {
            ClientLayer::new().max_attempts(4)
        }),
    ];
    println!("| clients | calls | ok | refused (final) | throttled locally | first attempts at server | retries at server | amplification | retries before Retry-After | retries past deadline |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (name, layer) in policies {
        let server = retries::serve(slots, work).await;
        let run = retries::run(&server, layer, clients, rps, seconds, deadline).await;
        assert!(
            run.errors.is_empty(),
            "{:?}",
            &run.errors[..run.errors.len().min(5)]
        );
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {:.2} | {} | {} |",
            run.calls,
            run.ok,
            run.refused,
            run.throttled,
            run.server_first,
            run.server_retries,
            run.amplification(),
            run.early_retries,
            run.retries_past_deadline,
        );
    }
}

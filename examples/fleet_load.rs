//! The fleet test's client: drives a balancer in front of `axum_server`
//! instances at a fixed rate (open loop: requests leave on schedule whether
//! or not earlier ones were answered, as independent clients do) and prints
//! one line of figures as JSON.
//!
//! ```text
//! scripts/fleet-haproxy.sh          # the whole comparison
//! cargo run --example fleet_load --features axum -- PORT RPS SECONDS TIMEOUT_MS [WARMUP]
//! ```
//!
//! The first `WARMUP` seconds (default 0) are sent at the same rate but not
//! counted: the queues build as they would, and the figures cover the
//! `SECONDS` after them. A request is *good* if it got a `200` within
//! `TIMEOUT_MS`; the client gives up on it after eight times that (it
//! counts as late). The p50 and p99 are over every `200`, late ones
//! included, so a queue shows.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

#[derive(Debug)]
enum Outcome {
    Ok(Duration),
    /// The client stopped waiting.
    GaveUp,
    Status(u16),
    Failed,
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: f64| -> f64 {
        args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default)
    };
    let port = arg(0, 8400.0) as u16;
    let rps = arg(1, 2250.0);
    let seconds = arg(2, 20.0);
    let timeout = Duration::from_secs_f64(arg(3, 500.0) / 1000.0);
    let warmup = arg(4, 0.0);

    let client = Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(5))
        .build_http::<Empty<Bytes>>();
    let start = Instant::now();
    let total = warmup + seconds;
    let end = Duration::from_secs_f64(total);
    let counted_from = (warmup * rps) as u64;
    let mut ticker = tokio::time::interval(Duration::from_millis(1));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut calls = Vec::new();
    let mut sent: u64 = 0;
    while start.elapsed() < end {
        ticker.tick().await;
        // As many as are due by now: the rate holds when ticks are late.
        let due = (start.elapsed().as_secs_f64().min(total) * rps) as u64;
        while sent < due {
            let uri: http::Uri = format!("http://127.0.0.1:{port}/orders/{sent}")
                .parse()
                .expect("valid uri");
            sent += 1;
            let client = client.clone();
            let counted = sent > counted_from;
            calls.push(tokio::spawn(async move {
                let began = Instant::now();
                let call = async {
                    let response = client.get(uri).await.map_err(|_| ())?;
                    let status = response.status().as_u16();
                    response.into_body().collect().await.map_err(|_| ())?;
                    Ok::<_, ()>(status)
                };
                let outcome = match tokio::time::timeout(timeout * 8, call).await {
                    Ok(Ok(200)) => Outcome::Ok(began.elapsed()),
                    Ok(Ok(status)) => Outcome::Status(status),
                    Ok(Err(())) => Outcome::Failed,
                    Err(_) => Outcome::GaveUp,
                };
                counted.then_some(outcome)
            }));
        }
    }
    let (mut good, mut late, mut refused, mut other, mut failed) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut latencies = Vec::new();
    for call in calls {
        let Some(outcome) = call.await.expect("request task") else {
            continue;
        };
        match outcome {
            Outcome::Ok(took) => {
                if took <= timeout {
                    good += 1;
                } else {
                    late += 1;
                }
                latencies.push(took);
            }
            Outcome::GaveUp => late += 1,
            Outcome::Status(503) => refused += 1,
            Outcome::Status(_) => other += 1,
            Outcome::Failed => failed += 1,
        }
    }
    latencies.sort();
    let percentile = |q: f64| -> f64 {
        if latencies.is_empty() {
            return 0.0;
        }
        let i = ((q * latencies.len() as f64).ceil() as usize).clamp(1, latencies.len()) - 1;
        latencies[i].as_secs_f64() * 1000.0
    };
    let report = serde_json::json!({
        "offered": sent - counted_from,
        "offered_rps": (sent - counted_from) as f64 / seconds,
        "good": good,
        "goodput_rps": good as f64 / seconds,
        "late": late,
        "503": refused,
        "other_status": other,
        "failed": failed,
        "p50_ms": percentile(0.5),
        "p99_ms": percentile(0.99),
    });
    println!("{report}");
}

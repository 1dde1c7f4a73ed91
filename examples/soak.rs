//! The soak test's client: drives a running `axum_server` at a fixed rate
//! and watches the server process, then checks that it settles.
//!
//! ```text
//! scripts/soak.sh            # 3 minutes at 2x, release build
//! scripts/soak.sh --ci       # 30 s at 2x, debug build
//! cargo run --example soak --features axum -- PID PORT ADMIN_PORT RPS SECONDS WARMUP
//! ```
//!
//! Checks (exit status 1 if one fails):
//! - the server's RSS stays within ±2 MB of what it is after `WARMUP`
//!   seconds;
//! - the number of open file descriptors does not grow: after the run it
//!   is back to what it was before (±4);
//! - in-flight weight and queued weight are back to 0 within 1 s of the end;
//! - full service at once: requests right after that are all `200`s.

#[allow(dead_code)]
#[path = "../tests/support/load.rs"]
mod load;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The RSS of `pid` in kB (Linux).
fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The open file descriptors of `pid` (Linux).
fn fds(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// The limiter's in-flight and queued weight, from `/admin/stats`.
async fn backlog(admin: SocketAddr) -> Option<(u64, u64)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(admin).await.ok()?;
    s.write_all(b"GET /admin/stats HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .ok()?;
    let mut response = Vec::new();
    s.read_to_end(&mut response).await.ok()?;
    let text = String::from_utf8_lossy(&response);
    let body = text.split("\r\n\r\n").nth(1)?;
    let stats: serde_json::Value = serde_json::from_str(body).ok()?;
    Some((
        stats["in_flight"].as_u64()?,
        stats["queued_weight"].as_u64()?,
    ))
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| -> f64 {
        args.get(i)
            .and_then(|a| a.parse().ok())
            .expect("PID PORT ADMIN_PORT RPS SECONDS WARMUP")
    };
    let (pid, port, admin_port) = (arg(0) as u32, arg(1) as u16, arg(2) as u16);
    let (rps, seconds, warmup) = (arg(3), arg(4), arg(5));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let admin = SocketAddr::from(([127, 0, 0, 1], admin_port));

    let fds_before = fds(pid).expect("the server's /proc entry");
    let sampler = tokio::spawn(async move {
        let start = Instant::now();
        let mut samples = Vec::new();
        while start.elapsed().as_secs_f64() < seconds {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if let (Some(rss), Some(fds)) = (rss_kb(pid), fds(pid)) {
                samples.push((start.elapsed().as_secs_f64(), rss, fds));
            }
        }
        samples
    });
    let report = load::run(
        addr,
        &["/orders/1", "/recommendations/2", "/orders/3", "/reports"],
        rps,
        seconds,
        Duration::from_millis(250),
    )
    .await;
    let ended = Instant::now();
    let samples = sampler.await.unwrap();
    let settled = loop {
        match backlog(admin).await {
            Some((0, 0)) => break Some(ended.elapsed()),
            _ if ended.elapsed() > Duration::from_secs(5) => break None,
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    let after_settle = load::run(addr, &["/orders/1"], 20.0, 0.5, Duration::from_millis(250)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let fds_after = fds(pid).unwrap_or(usize::MAX);

    let steady: Vec<u64> = samples
        .iter()
        .filter(|(t, _, _)| *t >= warmup)
        .map(|(_, rss, _)| *rss)
        .collect();
    let (min, max) = (
        steady.iter().copied().min().unwrap_or(0),
        steady.iter().copied().max().unwrap_or(0),
    );
    let first = samples.first().map_or(0, |s| s.1);
    let base = steady.first().copied().unwrap_or(0);
    println!("load: {}", report.summary());
    let series: Vec<String> = samples
        .iter()
        .step_by(10.max(samples.len() / 18))
        .map(|(t, rss, fds)| format!("{t:.0}s {:.1}MB/{fds}fd", *rss as f64 / 1024.0))
        .collect();
    println!("RSS/fds over time: {}", series.join(", "));
    println!(
        "RSS: {:.1} MB at 1 s, {:.1} MB at {warmup} s, {:.1}..{:.1} MB after (spread {:.2} MB)",
        first as f64 / 1024.0,
        base as f64 / 1024.0,
        min as f64 / 1024.0,
        max as f64 / 1024.0,
        (max - min) as f64 / 1024.0
    );
    println!(
        "fds: {fds_before} before, {} at most during, {fds_after} after",
        samples.iter().map(|s| s.2).max().unwrap_or(0)
    );
    println!("in flight and queue back to 0: {settled:?} after the end");
    println!("right after: {}", after_settle.summary());

    let mut failed = Vec::new();
    // Flat: every sample after the warm-up within ±2 MB of the first one.
    if steady.is_empty() || steady.iter().any(|&rss| rss.abs_diff(base) > 2048) {
        failed.push("RSS not flat within ±2 MB after warm-up");
    }
    if fds_after > fds_before + 4 {
        failed.push("file descriptors grew");
    }
    if settled.is_none_or(|t| t > Duration::from_secs(1)) {
        failed.push("in-flight and queue not back to 0 within 1 s");
    }
    // Served (a 200), not refused; on a loaded CI machine a debug build
    // may answer one late, which is not a refusal.
    if after_settle.in_time + after_settle.late != after_settle.offered {
        failed.push("not full service right after the run");
    }
    if !report.errors.is_empty() {
        failed.push("errors other than proper refusals");
    }
    if failed.is_empty() {
        println!("soak: OK");
    } else {
        println!("soak: FAILED: {}", failed.join("; "));
        std::process::exit(1);
    }
}

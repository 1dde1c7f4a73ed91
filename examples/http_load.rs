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

use std::sync::{Arc, Mutex};
use std::time::Duration;

use shed::{Config, Mode, Readiness};

/// The limit over one run, second by second: its lowest and highest of
/// the samples taken every 50 ms in that second.
#[derive(Default)]
struct LimitTrace(Vec<(u32, u32)>);

impl LimitTrace {
    /// Samples `limiter`'s capacity every 50 ms until aborted.
    fn sample(limiter: shed::Limiter) -> (tokio::task::JoinHandle<()>, Arc<Mutex<Self>>) {
        let trace = Arc::new(Mutex::new(Self::default()));
        let into = trace.clone();
        let start = tokio::time::Instant::now();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(50));
            loop {
                tick.tick().await;
                let second = start.elapsed().as_secs() as usize;
                let limit = limiter.capacity();
                let mut trace = into.lock().expect("not poisoned");
                if trace.0.len() <= second {
                    trace.0.resize(second + 1, (limit, limit));
                }
                let (low, high) = &mut trace.0[second];
                *low = (*low).min(limit);
                *high = (*high).max(limit);
            }
        });
        (task, trace)
    }
}

impl std::fmt::Display for LimitTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (second, (low, high)) in self.0.iter().enumerate() {
            if second > 0 {
                f.write_str(", ")?;
            }
            if low == high {
                write!(f, "{second}s {low}")?;
            } else {
                write!(f, "{second}s {low}-{high}")?;
            }
        }
        Ok(())
    }
}

/// One run: a fresh server with `limiter`, `rps` offered for `seconds`;
/// the report and the limit over the run.
async fn run(limiter: shed::Limiter, rps: f64, seconds: f64) -> (load::LoadReport, LimitTrace) {
    let (sampler, trace) = LimitTrace::sample(limiter.clone());
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
    sampler.abort();
    let trace = std::mem::take(&mut *trace.lock().expect("not poisoned"));
    (report, trace)
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
    let (quiet, _) = run(defaults(), CAPACITY / 4.0, seconds).await;
    let quiet_p99 = load::LoadReport::percentile(&quiet.latencies, 0.99);
    println!(
        "uncontended, defaults, {} rps: {}\n",
        CAPACITY / 4.0,
        quiet.summary()
    );
    println!("| limiter | goodput | of capacity | p99 of served | p99 / uncontended p99 | refused | late |");
    println!("|---|---|---|---|---|---|---|");
    let mut adaptive_limit = None;
    for (name, limiter) in contenders {
        let (report, trace) = run(limiter, rps, seconds).await;
        if name.starts_with("defaults") {
            adaptive_limit = Some(trace);
        }
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
    if let Some(trace) = adaptive_limit {
        // What a run far from the others did: the limit it learned.
        println!("the defaults' limit, second by second (lowest-highest): {trace}");
    }
}

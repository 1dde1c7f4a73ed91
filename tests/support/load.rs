//! An open-loop HTTP load generator over real sockets: requests leave at a
//! fixed rate whether or not earlier ones were answered, as real clients
//! do, and a health probe runs beside them.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;

/// What one request saw.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// 200 within the client timeout.
    InTime(Duration),
    /// 200 after the client timeout: wasted work.
    Late,
    /// 503 with `Retry-After` and a problem+json body, or 504 (a deadline
    /// that cannot be met) with a problem body: a proper refusal.
    Refused,
    /// Anything else: another status, a 503 without the headers, or a
    /// connection error.
    Error(String),
}

/// The figures of a run.
#[derive(Debug, Default, Clone)]
pub struct LoadReport {
    pub offered: usize,
    pub in_time: usize,
    pub late: usize,
    pub refused: usize,
    pub errors: Vec<String>,
    pub latencies: Vec<Duration>,
    pub probes: usize,
    pub probe_failures: usize,
    pub probe_latencies: Vec<Duration>,
    pub seconds: f64,
}

impl LoadReport {
    pub fn goodput(&self) -> f64 {
        self.in_time as f64 / self.seconds
    }

    pub fn percentile(samples: &[Duration], q: f64) -> Duration {
        let mut sorted = samples.to_vec();
        sorted.sort();
        if sorted.is_empty() {
            return Duration::ZERO;
        }
        sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
    }

    pub fn summary(&self) -> String {
        format!(
            "offered {} ({:.0} rps), in time {} (goodput {:.0} rps), late {}, refused {}, other errors {}, \
             p50 {:?} p99 {:?} of served; health probes {} ok of {}, p99 {:?}",
            self.offered,
            self.offered as f64 / self.seconds,
            self.in_time,
            self.goodput(),
            self.late,
            self.refused,
            self.errors.len(),
            Self::percentile(&self.latencies, 0.5),
            Self::percentile(&self.latencies, 0.99),
            self.probes - self.probe_failures,
            self.probes,
            Self::percentile(&self.probe_latencies, 0.99),
        )
    }
}

/// One GET on a fresh connection (as many independent clients would).
async fn get(
    addr: SocketAddr,
    path: &str,
) -> Result<(http::StatusCode, http::HeaderMap, Bytes), String> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    let request = http::Request::get(path)
        .header("host", "localhost")
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    Ok((parts.status, parts.headers, body))
}

fn classify(
    result: Result<(http::StatusCode, http::HeaderMap, Bytes), String>,
    took: Duration,
    timeout: Duration,
) -> Outcome {
    match result {
        Ok((status, _, _)) if status == http::StatusCode::OK => {
            if took <= timeout {
                Outcome::InTime(took)
            } else {
                Outcome::Late
            }
        }
        Ok((status, headers, body))
            if status == http::StatusCode::SERVICE_UNAVAILABLE
                || status == http::StatusCode::GATEWAY_TIMEOUT =>
        {
            // A proper refusal: a problem body saying whether to retry,
            // and when (`Retry-After`) unless the deadline can never be met.
            let retry_after = headers
                .get("retry-after")
                .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
            let problem = headers
                .get("content-type")
                .is_some_and(|v| v == "application/problem+json")
                .then(|| serde_json::from_slice::<serde_json::Value>(&body).ok())
                .flatten();
            let proper = match problem.as_ref().map(|p| &p["retryable"]) {
                Some(serde_json::Value::Bool(_)) if status == http::StatusCode::GATEWAY_TIMEOUT => {
                    retry_after.is_none()
                }
                Some(serde_json::Value::Bool(_)) => retry_after.is_some(),
                _ => false,
            };
            if proper {
                Outcome::Refused
            } else {
                Outcome::Error(format!(
                    "{status} without Retry-After or problem body: {headers:?}"
                ))
            }
        }
        Ok((status, _, _)) => Outcome::Error(format!("status {status}")),
        Err(e) => Outcome::Error(e),
    }
}

/// Sends `rps` requests a second to `paths` (in turn) for `seconds`, each
/// judged against `timeout`, while probing `/healthz` every 50 ms.
pub async fn run(
    addr: SocketAddr,
    paths: &[&str],
    rps: f64,
    seconds: f64,
    timeout: Duration,
) -> LoadReport {
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / rps));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let probes = tokio::spawn(async move {
        let mut results = Vec::new();
        while Instant::now() < end {
            let sent = Instant::now();
            let ok = matches!(get(addr, "/healthz").await, Ok((status, _, _)) if status == http::StatusCode::OK);
            results.push((ok, sent.elapsed()));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        results
    });
    let mut calls = Vec::new();
    let mut i = 0;
    while Instant::now() < end {
        ticker.tick().await;
        let path = paths[i % paths.len()].to_string();
        i += 1;
        calls.push(tokio::spawn(async move {
            let sent = Instant::now();
            // The client stops waiting far past its timeout, so a run
            // always ends; such a call is late, not an error of the server.
            match tokio::time::timeout(timeout * 8, get(addr, &path)).await {
                Ok(result) => classify(result, sent.elapsed(), timeout),
                Err(_) => Outcome::Late,
            }
        }));
    }
    let mut report = LoadReport {
        seconds,
        offered: calls.len(),
        ..LoadReport::default()
    };
    for call in calls {
        match call.await.expect("request task") {
            Outcome::InTime(took) => {
                report.in_time += 1;
                report.latencies.push(took);
            }
            Outcome::Late => report.late += 1,
            Outcome::Refused => report.refused += 1,
            Outcome::Error(e) => report.errors.push(e),
        }
    }
    for (ok, took) in probes.await.expect("probe task") {
        report.probes += 1;
        report.probe_failures += usize::from(!ok);
        report.probe_latencies.push(took);
    }
    report
}

//! Clients built on shed's client layer calling a shed-guarded axum
//! server over loopback, with every attempt logged on the client side, so
//! that retry timing can be checked exactly: the log is written where the
//! request leaves and where its answer arrives.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::routing::get;
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy;
use hyper_util::rt::TokioExecutor;
use shed::client::{Client, ClientLayer, LocalRefusal};
use shed::http::{RetryStats, Routes, ShedLayer};
use shed::Config;
use tokio::time::Instant;
use tower::{Layer, Service, ServiceExt};

/// A shed-guarded axum server on a free loopback port.
pub struct Server {
    pub addr: SocketAddr,
    /// First attempts and retries as the server counted them.
    pub retries: RetryStats,
}

/// `slots` slots in front of a handler that takes `work`: a capacity of
/// `slots / work` requests a second. `/work` is guarded (class
/// `critical`) and answers with the attempt number it was told; `/healthz`
/// is exempt.
pub async fn serve(slots: u32, work: Duration) -> Server {
    let limiter = Config::new().capacity(slots).build().expect("valid config");
    let layer = ShedLayer::new(Routes::new("critical").exempt("/healthz")).limiter(limiter);
    let retries = layer.retry_stats();
    let app = axum::Router::new()
        .route(
            "/work",
            get(move || async move {
                tokio::time::sleep(work).await;
                format!("attempt {}", shed::attempt())
            }),
        )
        .route("/healthz", get(|| async { "alive" }))
        .layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    Server { addr, retries }
}

/// One attempt as it left the client and as its answer came back.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub call: u64,
    pub attempt: u32,
    pub sent: Instant,
    pub deadline: Option<Instant>,
    /// `(when the answer's head arrived, its Retry-After, its status)`.
    pub answered: Option<(Instant, Option<Duration>, u16)>,
}

type Log = Arc<Mutex<Vec<Attempt>>>;

type Recorder = tower::util::BoxCloneSyncService<
    Request<Full<Bytes>>,
    Response<Incoming>,
    Box<dyn std::error::Error + Send + Sync>,
>;

/// hyper-util's pooled client, logging each attempt it sends.
fn recorder(log: Log) -> Recorder {
    let hyper = legacy::Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let service = tower::service_fn(move |request: Request<Full<Bytes>>| {
        let number = |name: &str| {
            request
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        };
        let call = number("x-call-id").expect("every call is numbered");
        let attempt = number("x-shed-attempt").unwrap_or(1) as u32;
        let index = {
            let mut log = log.lock().unwrap();
            log.push(Attempt {
                call,
                attempt,
                sent: Instant::now(),
                // Read in the caller's task, inside the layer's future.
                deadline: shed::deadline(),
                answered: None,
            });
            log.len() - 1
        };
        let (hyper, log) = (hyper.clone(), Arc::clone(&log));
        async move {
            let response = hyper.request(request).await?;
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                .map(Duration::from_secs);
            log.lock().unwrap()[index].answered =
                Some((Instant::now(), retry_after, response.status().as_u16()));
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(response)
        }
    });
    tower::util::BoxCloneSyncService::new(service)
}

/// What a run of callers saw.
#[derive(Debug, Default, Clone)]
pub struct Run {
    pub calls: usize,
    /// Calls answered 200.
    pub ok: usize,
    /// Calls whose final answer was a refusal (503).
    pub refused: usize,
    /// Calls rejected locally by adaptive throttling.
    pub throttled: usize,
    /// Calls not sent because their deadline had passed.
    pub expired: usize,
    /// Anything else (connection errors, other statuses).
    pub errors: Vec<String>,
    /// First attempts and retries the server saw.
    pub server_first: u64,
    pub server_retries: u64,
    /// Retries sent sooner than the Retry-After of the answer before them.
    pub early_retries: usize,
    /// Retries sent at or after their call's deadline.
    pub retries_past_deadline: usize,
    /// The smallest margin by which a retry waited past its Retry-After.
    pub min_slack: Option<Duration>,
    pub seconds: f64,
}

impl Run {
    /// Retries over first attempts plus one, as the server counted them.
    pub fn amplification(&self) -> f64 {
        (self.server_first + self.server_retries) as f64 / self.server_first.max(1) as f64
    }

    pub fn summary(&self) -> String {
        format!(
            "{} calls ({:.0} rps): ok {}, refused {}, throttled locally {}, deadline passed {}, \
             errors {}; server saw {} first attempts and {} retries: amplification {:.3}; \
             early retries {}, retries past deadline {}, least wait past Retry-After {:?}",
            self.calls,
            self.calls as f64 / self.seconds,
            self.ok,
            self.refused,
            self.throttled,
            self.expired,
            self.errors.len(),
            self.server_first,
            self.server_retries,
            self.amplification(),
            self.early_retries,
            self.retries_past_deadline,
            self.min_slack,
        )
    }
}

enum Outcome {
    Ok,
    Refused,
    Throttled,
    Expired,
    Error(String),
}

/// `clients` callers, each its own `layer()` over hyper-util's client,
/// sending `rps` calls a second in all to `server` for `seconds`, each
/// with `deadline`; then waits until every call has ended.
pub async fn run(
    server: &Server,
    layer: impl Fn() -> ClientLayer,
    clients: usize,
    rps: f64,
    seconds: f64,
    deadline: Duration,
) -> Run {
    let log: Log = Arc::default();
    let fleet: Vec<Client<Recorder>> = (0..clients)
        .map(|_| layer().layer(recorder(Arc::clone(&log))))
        .collect();
    let uri = format!("http://{}/work", server.addr);
    let started = Instant::now();
    let end = started + Duration::from_secs_f64(seconds);
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / rps));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut calls = Vec::new();
    let mut id = 0u64;
    while Instant::now() < end {
        ticker.tick().await;
        let mut client = fleet[id as usize % clients].clone();
        let request = Request::get(&uri)
            .header("x-call-id", id)
            .body(Full::new(Bytes::new()))
            .expect("request");
        id += 1;
        calls.push(tokio::spawn(shed::with_deadline_in(deadline, async move {
            let response = match client.ready().await {
                Ok(ready) => ready.call(request).await,
                Err(e) => Err(e),
            };
            match response {
                Ok(response) => {
                    let status = response.status().as_u16();
                    // Read the body so the connection goes back to the pool.
                    let _ = response.into_body().collect().await;
                    match status {
                        200 => Outcome::Ok,
                        // 503: shed; 504: the deadline left (as propagated)
                        // is shorter than the route's service time.
                        503 | 504 => Outcome::Refused,
                        other => Outcome::Error(format!("status {other}")),
                    }
                }
                Err(e) => match e.downcast_ref::<LocalRefusal>() {
                    Some(LocalRefusal::Throttled) => Outcome::Throttled,
                    Some(LocalRefusal::DeadlineExpired) => Outcome::Expired,
                    _ => Outcome::Error(e.to_string()),
                },
            }
        })));
    }
    let mut report = Run {
        calls: calls.len(),
        seconds,
        ..Run::default()
    };
    for call in calls {
        match call.await.expect("call task") {
            Outcome::Ok => report.ok += 1,
            Outcome::Refused => report.refused += 1,
            Outcome::Throttled => report.throttled += 1,
            Outcome::Expired => report.expired += 1,
            Outcome::Error(e) => report.errors.push(e),
        }
    }
    let total = server.retries.total();
    report.server_first = total.first_offered();
    report.server_retries = total.retries_offered();
    check_timing(&log.lock().unwrap(), &mut report);
    report
}

/// Every retry against the answer before it: sent no sooner than that
/// answer's arrival plus its Retry-After, and before the call's deadline.
fn check_timing(log: &[Attempt], report: &mut Run) {
    let mut by_call: Vec<&Attempt> = log.iter().collect();
    by_call.sort_by_key(|a| (a.call, a.attempt));
    for pair in by_call.windows(2) {
        let (before, retry) = (pair[0], pair[1]);
        if before.call != retry.call {
            continue;
        }
        assert_eq!(
            retry.attempt,
            before.attempt + 1,
            "attempts are numbered in order"
        );
        if let Some((answered, retry_after, _)) = before.answered {
            let earliest = answered + retry_after.unwrap_or(Duration::ZERO);
            match retry.sent.checked_duration_since(earliest) {
                Some(slack) => {
                    report.min_slack = Some(report.min_slack.map_or(slack, |m| m.min(slack)))
                }
                None => report.early_retries += 1,
            }
        }
        if retry
            .deadline
            .is_some_and(|deadline| retry.sent >= deadline)
        {
            report.retries_past_deadline += 1;
        }
    }
}

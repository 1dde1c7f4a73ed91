//! The gRPC example end to end over loopback: tonic clients through shed's
//! client layer calling the tonic service shed guards.
//!
//! Behaviour is asserted, not timings: what the server was told, what was
//! sent at all, and retries against the pushback of the answer before
//! them, all logged where each attempt leaves and its answer arrives.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response};
use prost::Message;
use shed::client::grpc::{local_refusal, Buffered, Unbuffered};
use shed::client::Client;
use shed::client::{ClientLayer, Idempotent, LocalRefusal, RetryBudget};
use shed::http::{Classification, Routes};
use shed::Config;
use shed_grpc_example::client::work_client;
use shed_grpc_example::orca::OrcaLoadReport;
use shed_grpc_example::proto::work_client::WorkClient;
use shed_grpc_example::proto::{WorkReply, WorkRequest};
use shed_grpc_example::server::{self, Options, Server};
use tokio::time::Instant;
use tonic::transport::Channel;
use tonic::Code;

/// 2 slots, 20 ms a call: 100 calls a second of capacity.
const SLOTS: u32 = 2;
const WORK_MS: u32 = 20;

async fn start(limiter: shed::Limiter, orca: bool) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    server::serve(listener, Options::new(limiter).orca(orca))
        .await
        .expect("serve")
}

fn limiter(slots: u32, service: Duration) -> shed::Limiter {
    Config::new()
        .capacity(slots)
        .default_service_time(service)
        .build()
        .expect("valid config")
}

async fn channel(server: &Server) -> Channel {
    Channel::from_shared(format!("http://{}", server.addr))
        .expect("uri")
        .connect()
        .await
        .expect("connect")
}

/// One attempt as it left the client and as its answer came back.
#[derive(Debug, Clone)]
struct Attempt {
    call: u64,
    attempt: u32,
    sent: Instant,
    deadline: Option<Instant>,
    grpc_timeout: Option<Duration>,
    /// `(when the answer's head arrived, its pushback)`.
    answered: Option<(Instant, Option<Duration>)>,
}

type Log = Arc<Mutex<Vec<Attempt>>>;

/// Its error is the channel's: with a boxed error, spawning the calls'
/// futures meets a limit of the compiler's `Send` inference for async
/// code ("implementation of `From` is not general enough").
type Recorder = tower::util::BoxCloneService<
    Request<tonic::body::Body>,
    Response<tonic::body::Body>,
    tonic::transport::Error,
>;

type Work = WorkClient<Buffered<Client<Unbuffered<Recorder>>>>;

/// The channel, logging each attempt the client layer sends through it.
fn recorder(channel: Channel, log: Log) -> Recorder {
    let service = tower::service_fn(move |request: Request<tonic::body::Body>| {
        let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
        let call = header("x-call-id")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let previous: u32 = header("grpc-previous-rpc-attempts")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let grpc_timeout = header("grpc-timeout").and_then(shed::http::parse_grpc_timeout);
        let index = {
            let mut log = log.lock().unwrap();
            log.push(Attempt {
                call,
                attempt: previous + 1,
                sent: Instant::now(),
                // Read in the caller's task, inside the layer's future.
                deadline: shed::deadline(),
                grpc_timeout,
                answered: None,
            });
            log.len() - 1
        };
        let (mut channel, log) = (channel.clone(), Arc::clone(&log));
        async move {
            let response = tower::ServiceExt::ready(&mut channel)
                .await?
                .call(request)
                .await?;
            let pushback = response
                .headers()
                .get(shed::tonic::RETRY_PUSHBACK)
                .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                .map(Duration::from_millis);
            log.lock().unwrap()[index].answered = Some((Instant::now(), pushback));
            Ok::<_, tonic::transport::Error>(response)
        }
    });
    tower::util::BoxCloneService::new(service)
}

use tower::Service as _;

/// Every slot of the test's limiter, held until the permit is dropped.
async fn hold_every_slot(limiter: &shed::Limiter) -> shed::Permit {
    limiter
        .acquire("critical", SLOTS, "the test")
        .await
        .expect("an idle limiter admits a full-capacity call")
}

/// The refusal's `grpc-retry-pushback-ms`, after checking that it is
/// shed's `UNAVAILABLE`.
fn unavailable_with_pushback(status: &tonic::Status) -> u64 {
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    status
        .metadata()
        .get(shed::tonic::RETRY_PUSHBACK)
        .expect("a refusal carries its pushback")
        .to_str()
        .expect("ASCII")
        .parse()
        .expect("milliseconds")
}

/// A call of `cost_ms`, numbered, marked safe to retry (gRPC calls are
/// `POST`s: the client layer retries them only when told).
fn request(call: u64, cost_ms: u32) -> tonic::Request<WorkRequest> {
    let mut request = tonic::Request::new(WorkRequest { cost_ms });
    request
        .metadata_mut()
        .insert("x-call-id", call.to_string().parse().unwrap());
    request.extensions_mut().insert(Idempotent);
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_travels_as_grpc_timeout_less_the_margin() {
    let server = start(limiter(SLOTS, Duration::from_millis(20)), false).await;
    let log: Log = Arc::default();
    let layer = ClientLayer::new().deadline_margin(Duration::from_millis(50));
    let mut client = work_client(&layer, recorder(channel(&server).await, Arc::clone(&log)));
    let deadline = Duration::from_secs(3);
    let reply: WorkReply = shed::with_deadline_in(deadline, client.r#do(request(1, 1)))
        .await
        .expect("an idle server answers")
        .into_inner();
    let told = Duration::from_micros(reply.grpc_timeout_us);
    // At most the deadline less the margin; the time the call took to
    // leave is the rest (bounded loosely: a loaded machine is slow).
    assert!(told <= deadline - Duration::from_millis(50), "{told:?}");
    assert!(told > deadline / 2, "{told:?}");
    assert_eq!(reply.attempt, 1);
    let sent = log.lock().unwrap()[0].grpc_timeout;
    assert_eq!(sent, Some(told), "the server read what the layer sent");

    // Without a deadline, none is sent.
    let reply = client.r#do(request(2, 1)).await.unwrap().into_inner();
    assert_eq!(reply.grpc_timeout_us, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_deadline_has_passed_is_never_sent() {
    let server = start(limiter(SLOTS, Duration::from_millis(20)), false).await;
    let log: Log = Arc::default();
    let layer = ClientLayer::new();
    let mut client = work_client(&layer, recorder(channel(&server).await, Arc::clone(&log)));
    for deadline in [Instant::now() - Duration::from_millis(1), Instant::now()] {
        let status = shed::with_deadline(deadline, client.r#do(request(1, 1)))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
        assert_eq!(
            local_refusal(&status),
            Some(LocalRefusal::DeadlineExpired),
            "refused by the client layer, not the server: {status:?}"
        );
    }
    assert!(log.lock().unwrap().is_empty(), "nothing left the client");
    assert_eq!(layer.stats().deadline_expired, 2);
    assert_eq!(layer.stats().attempts, 0);
    assert_eq!(
        server.retries.total().first_offered(),
        0,
        "the server saw none"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_shorter_than_the_work_is_deadline_exceeded_and_not_retried() {
    // The work is known to take 5 s; the caller leaves it 0.5 s.
    let server = start(limiter(SLOTS, Duration::from_secs(5)), false).await;
    let layer = ClientLayer::new().max_attempts(3);
    let mut client = work_client(&layer, channel(&server).await);
    let status = shed::with_deadline_in(Duration::from_millis(500), client.r#do(request(1, 1)))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert_eq!(
        local_refusal(&status),
        None,
        "the server's answer: {status:?}"
    );
    assert!(status.metadata().get(shed::tonic::RETRY_PUSHBACK).is_none());
    assert_eq!(
        (layer.stats().attempts, layer.stats().retries),
        (1, 0),
        "the same deadline would fail again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shed_call_is_unavailable_with_pushback_and_retried_no_sooner() {
    let limiter = limiter(SLOTS, Duration::from_millis(20));
    let server = start(limiter.clone(), false).await;
    let log: Log = Arc::default();
    let layer = ClientLayer::new()
        .max_attempts(2)
        .budget(None)
        .throttle(None);
    let mut client = work_client(&layer, recorder(channel(&server).await, Arc::clone(&log)));

    // Every slot taken: the call waits its class's queue-wait budget, is
    // shed, and the layer retries after the pushback, by when the slots
    // are free again.
    let held = hold_every_slot(&limiter).await;
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        drop(held);
    });
    let reply = shed::with_deadline_in(Duration::from_secs(20), client.r#do(request(7, 1)))
        .await
        .expect("the retry is admitted")
        .into_inner();
    release.await.unwrap();
    assert_eq!(
        reply.attempt, 2,
        "the server read grpc-previous-rpc-attempts"
    );
    let log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 2, "{log:?}");
    let (answered, pushback) = log[0].answered.expect("the first was answered");
    let pushback = pushback.expect("a shed call carries grpc-retry-pushback-ms");
    assert!(pushback > Duration::ZERO);
    assert!(
        log[1].sent >= answered + pushback,
        "retried {:?} after the answer, pushback {pushback:?}",
        log[1].sent - answered
    );
    let total = server.retries.total();
    assert_eq!(
        (total.first_shed, total.retries_admitted),
        (1, 1),
        "the server layer counts the handler's refusal as shed: {total:?}"
    );

    // With no retry left, the caller gets shed's status itself.
    let held = hold_every_slot(&limiter).await;
    let once_layer = ClientLayer::new().max_attempts(1);
    let mut once = work_client(&once_layer, channel(&server).await);
    let status = once.r#do(request(9, 1)).await.unwrap_err();
    drop(held);
    assert!(unavailable_with_pushback(&status) > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_layer_refuses_grpc_calls_in_grpc() {
    // The layer guards the method by its path, before the handler runs.
    let limiter = limiter(SLOTS, Duration::from_millis(20));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut options = Options::new(limiter.clone());
    options.routes = Routes::new("critical")
        .otherwise(Classification::ByHandler)
        .route("/shed.example.work.Work/Do", "critical", 1);
    let server = server::serve(listener, options).await.unwrap();
    let layer = ClientLayer::new().max_attempts(1);
    let mut client = work_client(&layer, channel(&server).await);
    let held = hold_every_slot(&limiter).await;
    let status = client.r#do(request(1, 1)).await.unwrap_err();
    drop(held);
    let pushback = unavailable_with_pushback(&status);
    assert!(pushback >= 1_000, "{pushback}");
    let total = server.retries.total();
    assert_eq!((total.first_shed, total.first_admitted), (1, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_orca_trailer_arrives_and_decodes() {
    let limiter = limiter(SLOTS, Duration::from_millis(20));
    let server = start(limiter.clone(), true).await;
    let layer = ClientLayer::new().max_attempts(1);
    let mut client = work_client(&layer, channel(&server).await);
    let decode = |metadata: &tonic::metadata::MetadataMap| {
        let bytes = metadata
            .get_bin(shed::http::ORCA_TRAILER)
            .expect("the ORCA trailer")
            .to_bytes()
            .expect("base64");
        OrcaLoadReport::decode(bytes).expect("an OrcaLoadReport")
    };

    // An answer: tonic merges the trailers into the response's metadata.
    let answer = client.r#do(request(1, 1)).await.unwrap();
    let report = decode(answer.metadata());
    assert_eq!(report.named_metrics["shed_capacity"], f64::from(SLOTS));
    for name in ["shed_occupancy", "shed_refused_share", "shed_queued"] {
        let value = report.named_metrics.get(name).copied().unwrap_or(0.0);
        assert!(value.is_finite() && value >= 0.0, "{name} = {value}");
    }

    // A refusal (trailers-only) carries it too, with the load that caused
    // it once the reporter's interval has passed. Occupancy and
    // utilisation are averaged over the reports asked for in the interval
    // (see `LoadReporter::report`): here the answer above (0, or 0.5 if
    // its report was made before its slot came back) and this refusal, at
    // full occupancy (1).
    let held = hold_every_slot(&limiter).await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let status = client.r#do(request(2, 1)).await.unwrap_err();
    drop(held);
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    let report = decode(status.metadata());
    let occupancy = report.named_metrics["shed_occupancy"];
    assert!((0.5..=0.75).contains(&occupancy), "{report:?}");
    assert_eq!(report.application_utilization, occupancy, "{report:?}");
    assert!(report.eps > 0.0, "the refusal shows as errors: {report:?}");
}

/// What a run of callers saw.
#[derive(Debug, Default)]
struct Run {
    calls: usize,
    ok: usize,
    /// Calls whose final answer was shed's refusal.
    refused: usize,
    /// Calls refused locally (throttled, or no time left).
    local: usize,
    errors: Vec<String>,
    /// First attempts and retries as the server counted them.
    server_first: u64,
    server_retries: u64,
    retries_checked: usize,
    /// Retries sent sooner than the pushback of the answer before them.
    early_retries: usize,
    /// Retries sent at or after their call's deadline.
    retries_past_deadline: usize,
}

impl Run {
    fn amplification(&self) -> f64 {
        (self.server_first + self.server_retries) as f64 / self.server_first.max(1) as f64
    }
}

/// 300 calls a second (three times the capacity) from 3 clients for 2 s,
/// each with 6.5 s to live: room for three retries after pushbacks of
/// about 1 to 2 s.
async fn storm(layer: fn() -> ClientLayer) -> Run {
    const RPS: f64 = 300.0;
    const CLIENTS: usize = 3;
    const SECONDS: f64 = 2.0;
    const DEADLINE: Duration = Duration::from_millis(6_500);
    let server = start(limiter(SLOTS, Duration::from_millis(20)), false).await;
    let channel = channel(&server).await;
    let log: Log = Arc::default();
    let fleet: Vec<(ClientLayer, Work)> = (0..CLIENTS)
        .map(|_| {
            let layer = layer();
            let client = work_client(&layer, recorder(channel.clone(), Arc::clone(&log)));
            (layer, client)
        })
        .collect();
    let end = Instant::now() + Duration::from_secs_f64(SECONDS);
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / RPS));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut calls = Vec::new();
    let mut id = 0u64;
    while Instant::now() < end {
        ticker.tick().await;
        let mut client = fleet[id as usize % CLIENTS].1.clone();
        let request = request(id, WORK_MS);
        id += 1;
        calls.push(tokio::spawn(shed::with_deadline_in(DEADLINE, async move {
            client.r#do(request).await
        })));
    }
    let mut run = Run {
        calls: calls.len(),
        ..Run::default()
    };
    for call in calls {
        match call.await.expect("call task") {
            Ok(_) => run.ok += 1,
            Err(status) if local_refusal(&status).is_some() => run.local += 1,
            Err(status) if status.code() == Code::Unavailable => run.refused += 1,
            Err(status) => run.errors.push(format!("{status:?}")),
        }
    }
    let total = server.retries.total();
    run.server_first = total.first_offered();
    run.server_retries = total.retries_offered();
    let mut log = log.lock().unwrap().clone();
    log.sort_by_key(|a| (a.call, a.attempt));
    for pair in log.windows(2) {
        let (before, retry) = (&pair[0], &pair[1]);
        if before.call != retry.call {
            continue;
        }
        assert_eq!(retry.attempt, before.attempt + 1, "attempts in order");
        let (answered, pushback) = before.answered.expect("a retry follows an answer");
        run.retries_checked += 1;
        if retry.sent < answered + pushback.unwrap_or(Duration::ZERO) {
            run.early_retries += 1;
        }
        if retry
            .deadline
            .is_some_and(|deadline| retry.sent >= deadline)
        {
            run.retries_past_deadline += 1;
        }
    }
    println!(
        "{} calls: ok {}, refused {}, refused locally {}, errors {}; server saw {} first \
         attempts, {} retries: amplification {:.3}; {} retries checked, {} early, {} past \
         the deadline; client layers: {:?}",
        run.calls,
        run.ok,
        run.refused,
        run.local,
        run.errors.len(),
        run.server_first,
        run.server_retries,
        run.amplification(),
        run.retries_checked,
        run.early_retries,
        run.retries_past_deadline,
        fleet
            .iter()
            .map(|(layer, _)| layer.stats())
            .collect::<Vec<_>>(),
    );
    run
}

fn retrying() -> ClientLayer {
    ClientLayer::new().max_attempts(4)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_budget_keeps_amplification_down_where_unbudgeted_retries_double_the_load() {
    // The budget's floor (a reserve of retries for quiet clients) is off:
    // over a 2 s run it would be a large share of the retries. The two
    // storms run side by side, each against a server of its own (a run is
    // mostly waiting: for the pushback, then for the last retries' deadline).
    let (budgeted, unbudgeted) = tokio::join!(
        storm(|| retrying().budget(Some(RetryBudget::new().ratio(0.1).min_per_second(0.0)))),
        storm(|| retrying().budget(None).throttle(None)),
    );
    for run in [&budgeted, &unbudgeted] {
        assert!(
            run.errors.is_empty(),
            "{:?}",
            &run.errors[..run.errors.len().min(5)]
        );
        assert!(run.refused > 0, "the server shed: {run:?}");
        assert!(run.retries_checked > 0, "there were retries to check");
        assert_eq!(run.early_retries, 0, "no retry before its pushback");
        assert_eq!(run.retries_past_deadline, 0, "no retry after its deadline");
    }
    assert!(
        budgeted.amplification() <= 1.1,
        "with a budget: {budgeted:?}"
    );
    assert!(
        unbudgeted.amplification() > 2.0,
        "without one: {unbudgeted:?}"
    );
}

/// Waits up to 10 s for the limiter's stats to satisfy `done`.
async fn eventually(
    limiter: &shed::Limiter,
    what: &str,
    done: impl Fn(shed::LimiterStats) -> bool,
) {
    for _ in 0..500 {
        if done(limiter.stats()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what}: {:?}", limiter.stats());
}

/// Over HTTP/2 a caller that gives up resets its stream: the call holding
/// the only slot and the one queued behind it leave nothing behind, and
/// the next call is served at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_that_give_up_leave_nothing_held_or_queued() {
    // One slot, and a queue budget long enough that only the caller's
    // going away can end the wait.
    let limiter = Config::new()
        .capacity(1)
        .class(shed::ClassSpec::new("critical", 0).max_wait(Duration::from_secs(60)))
        .build()
        .expect("valid config");
    let server = start(limiter.clone(), false).await;
    let client = WorkClient::new(channel(&server).await);
    let holder = tokio::spawn({
        let mut client = client.clone();
        async move { client.r#do(request(1, 60_000)).await }
    });
    eventually(&limiter, "the first call holds the slot", |s| {
        s.in_flight == 1
    })
    .await;
    let queued = tokio::spawn({
        let mut client = client.clone();
        async move { client.r#do(request(2, 1)).await }
    });
    eventually(&limiter, "the second call queues", |s| s.queued_weight == 1).await;

    // Both callers give up: their futures are dropped, their streams reset.
    holder.abort();
    queued.abort();
    eventually(&limiter, "nothing held and nothing queued", |s| {
        s.in_flight == 0 && s.queued_weight == 0
    })
    .await;
    let reply = tokio::time::timeout(Duration::from_secs(10), client.clone().r#do(request(3, 1)))
        .await
        .expect("answered")
        .expect("served at once");
    assert_eq!(reply.get_ref().attempt, 1);
}

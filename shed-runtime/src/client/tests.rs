//! The layer against a scripted service, on the paused clock.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use http_body_util::{BodyExt, Full};
use tokio::time::Instant;
use tower_layer::Layer;
use tower_service::Service;

use super::*;

/// What the scripted service answers, in order (then 200s).
#[derive(Clone)]
enum Reply {
    Ok,
    /// shed's refusal: 503, `Retry-After`, a retryable problem body.
    Shed {
        retry_after_secs: u64,
    },
    /// A 503 from something else: no problem body.
    Plain503,
    /// gRPC `UNAVAILABLE`, trailers-only, with this pushback.
    Unavailable {
        pushback: &'static str,
    },
    /// The connection was refused.
    ConnectionRefused,
}

#[derive(Clone, Default)]
struct Scripted {
    replies: Arc<Mutex<VecDeque<Reply>>>,
    /// Each request's headers and when it arrived.
    seen: Arc<Mutex<Vec<(HeaderMap, Instant)>>>,
}

impl Scripted {
    fn new(replies: impl IntoIterator<Item = Reply>) -> Self {
        let s = Self::default();
        s.replies.lock().unwrap().extend(replies);
        s
    }

    fn seen(&self) -> Vec<(HeaderMap, Instant)> {
        self.seen.lock().unwrap().clone()
    }
}

impl Service<Request<String>> for Scripted {
    type Response = Response<Full<Bytes>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<String>) -> Self::Future {
        self.seen
            .lock()
            .unwrap()
            .push((request.headers().clone(), Instant::now()));
        let reply = self
            .replies
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Reply::Ok);
        Box::pin(async move {
            let response = match reply {
                Reply::Ok => Response::new(Full::from("ok")),
                Reply::Shed { retry_after_secs } => Response::builder()
                    .status(503)
                    .header("retry-after", retry_after_secs)
                    .header("content-type", "application/problem+json")
                    .body(Full::from(
                        r#"{"type":"urn:shed:overloaded","reason":"overload:critical","retryable":true}"#,
                    ))
                    .unwrap(),
                Reply::Plain503 => Response::builder()
                    .status(503)
                    .header("retry-after", 1)
                    .body(Full::from("busy"))
                    .unwrap(),
                Reply::Unavailable { pushback } => Response::builder()
                    .header("content-type", "application/grpc")
                    .header("grpc-status", "14")
                    .header("grpc-retry-pushback-ms", pushback)
                    .body(Full::default())
                    .unwrap(),
                Reply::ConnectionRefused => {
                    return Err(std::io::Error::from(std::io::ErrorKind::ConnectionRefused).into())
                }
            };
            Ok(response)
        })
    }
}

/// A layer with no budget, no throttle and no backoff jitter to speak of,
/// so each test looks at one mechanism.
fn bare() -> ClientLayer {
    ClientLayer::new()
        .budget(None)
        .throttle(None)
        .backoff(Backoff::new(
            Duration::from_millis(1),
            Duration::from_millis(1),
        ))
}

fn get() -> Request<String> {
    Request::get("/orders/1").body(String::new()).unwrap()
}

async fn call(
    client: &mut Client<Scripted>,
    request: Request<String>,
) -> Result<(u16, String), BoxError> {
    std::future::poll_fn(|cx| client.poll_ready(cx)).await?;
    let response = client.call(request).await?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get(name).map(|v| v.to_str().unwrap().to_string())
}

#[tokio::test(start_paused = true)]
async fn a_refusal_is_retried_no_sooner_than_its_retry_after() {
    let service = Scripted::new([Reply::Shed {
        retry_after_secs: 2,
    }]);
    let layer = bare().backoff(Backoff::new(
        Duration::from_millis(200),
        Duration::from_secs(1),
    ));
    let mut client = layer.layer(service.clone());
    let (status, body) = call(&mut client, get()).await.unwrap();
    assert_eq!((status, body.as_str()), (200, "ok"));
    let seen = service.seen();
    assert_eq!(seen.len(), 2);
    let waited = seen[1].1 - seen[0].1;
    assert!(
        waited >= Duration::from_secs(2) && waited <= Duration::from_millis(2_200),
        "Retry-After plus at most one backoff ceiling of jitter: {waited:?}"
    );
    assert_eq!(
        header(&seen[0].0, "x-shed-attempt"),
        None,
        "first attempts are unmarked"
    );
    assert_eq!(header(&seen[1].0, "x-shed-attempt").as_deref(), Some("2"));
    assert_eq!(
        header(&seen[1].0, "grpc-previous-rpc-attempts"),
        None,
        "not a gRPC call"
    );
    let stats = client.stats();
    assert_eq!((stats.attempts, stats.retries), (2, 1));
}

#[tokio::test(start_paused = true)]
async fn the_last_refusal_reaches_the_caller_with_its_body() {
    let service = Scripted::new(vec![
        Reply::Shed {
            retry_after_secs: 1
        };
        5
    ]);
    let mut client = bare().max_attempts(3).layer(service.clone());
    let (status, body) = call(&mut client, get()).await.unwrap();
    assert_eq!(status, 503);
    assert!(
        body.contains(r#""retryable":true"#),
        "the problem body read by the layer: {body}"
    );
    assert_eq!(service.seen().len(), 3, "max_attempts");
}

#[tokio::test(start_paused = true)]
async fn backoff_spreads_retries_without_pushback() {
    // A refused connection carries no pushback: the wait is the jittered
    // backoff alone, under a doubling ceiling.
    let service = Scripted::new(vec![Reply::ConnectionRefused; 3]);
    let layer = bare().max_attempts(4).backoff(Backoff::new(
        Duration::from_millis(100),
        Duration::from_secs(10),
    ));
    let mut client = layer.layer(service.clone());
    let (status, _) = call(&mut client, get()).await.unwrap();
    assert_eq!(status, 200, "refused connections did not run: retried");
    let at: Vec<Instant> = service.seen().into_iter().map(|(_, t)| t).collect();
    for (retry, pair) in at.windows(2).enumerate() {
        let ceiling = Duration::from_millis(100) * (1 << retry);
        assert!(
            pair[1] - pair[0] <= ceiling,
            "retry {}: {:?}",
            retry + 1,
            pair[1] - pair[0]
        );
    }
}

#[tokio::test(start_paused = true)]
async fn only_idempotent_calls_are_retried() {
    let service = Scripted::new([Reply::Shed {
        retry_after_secs: 1,
    }]);
    let mut client = bare().layer(service.clone());
    let post = || Request::post("/orders").body("{}".to_string()).unwrap();
    let (status, _) = call(&mut client, post()).await.unwrap();
    assert_eq!(
        (status, service.seen().len()),
        (503, 1),
        "a POST is not retried"
    );

    let service = Scripted::new([Reply::Shed {
        retry_after_secs: 1,
    }]);
    let mut client = bare().layer(service.clone());
    let mut marked = post();
    marked.extensions_mut().insert(Idempotent);
    let (status, _) = call(&mut client, marked).await.unwrap();
    assert_eq!(
        (status, service.seen().len()),
        (200, 2),
        "unless marked idempotent"
    );
}

#[tokio::test(start_paused = true)]
async fn answers_that_may_have_run_are_not_retried() {
    for reply in [
        Reply::Plain503,
        Reply::Unavailable { pushback: "-1" },
        Reply::Unavailable { pushback: "soon" },
    ] {
        let service = Scripted::new([reply]);
        let mut client = bare().layer(service.clone());
        call(&mut client, get()).await.unwrap();
        assert_eq!(service.seen().len(), 1);
    }
}

#[tokio::test(start_paused = true)]
async fn grpc_pushback_is_honoured_and_retries_are_marked_the_grpc_way() {
    let service = Scripted::new([Reply::Unavailable { pushback: "300" }]);
    let mut client = bare().layer(service.clone());
    let request = Request::post("/orders.Orders/Get")
        .header("content-type", "application/grpc")
        .body(String::new())
        .unwrap();
    let mut request = request;
    request.extensions_mut().insert(Idempotent);
    let started = Instant::now();
    crate::with_deadline_in(Duration::from_secs(2), async {
        call(&mut client, request).await.unwrap();
    })
    .await;
    let seen = service.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen[1].1 - seen[0].1 >= Duration::from_millis(300));
    assert_eq!(
        header(&seen[1].0, "grpc-previous-rpc-attempts").as_deref(),
        Some("1")
    );
    // The deadline travels as grpc-timeout: 2 s less the 10 ms margin.
    let sent = |i: usize| {
        crate::http::parse_grpc_timeout(&header(&seen[i].0, "grpc-timeout").unwrap()).unwrap()
    };
    assert_eq!(sent(0), Duration::from_millis(1_990));
    assert_eq!(
        sent(1),
        Duration::from_millis(1_990) - (seen[1].1 - started)
    );
}

#[tokio::test(start_paused = true)]
async fn the_deadline_travels_less_the_margin() {
    let service = Scripted::new([]);
    let mut client = bare()
        .deadline_margin(Duration::from_millis(50))
        .layer(service.clone());
    crate::with_deadline_in(Duration::from_millis(800), call(&mut client, get()))
        .await
        .unwrap();
    let seen = service.seen();
    assert_eq!(
        header(&seen[0].0, "x-request-timeout").as_deref(),
        Some("750")
    );
    assert_eq!(header(&seen[0].0, "grpc-timeout"), None, "not a gRPC call");

    // Without a deadline nothing is sent.
    call(&mut client, get()).await.unwrap();
    assert_eq!(header(&service.seen()[1].0, "x-request-timeout"), None);
}

#[tokio::test(start_paused = true)]
async fn a_call_past_its_deadline_is_refused_without_being_sent() {
    let service = Scripted::new([]);
    let mut client = bare().layer(service.clone());
    let past = Instant::now() - Duration::from_millis(1);
    let error = crate::with_deadline(past, call(&mut client, get()))
        .await
        .unwrap_err();
    assert_eq!(
        error.downcast_ref::<LocalRefusal>(),
        Some(&LocalRefusal::DeadlineExpired)
    );
    // Within the margin counts as past too.
    let soon = Instant::now() + Duration::from_millis(5);
    let error = crate::with_deadline(soon, call(&mut client, get()))
        .await
        .unwrap_err();
    assert_eq!(
        error.downcast_ref::<LocalRefusal>(),
        Some(&LocalRefusal::DeadlineExpired)
    );
    assert!(service.seen().is_empty());
    assert_eq!(client.stats().deadline_expired, 2);
}

#[tokio::test(start_paused = true)]
async fn no_retry_goes_out_after_the_deadline() {
    // Retry-After is 2 s, the deadline 1.5 s away: the refusal is final.
    let service = Scripted::new(vec![
        Reply::Shed {
            retry_after_secs: 2
        };
        3
    ]);
    let mut client = bare().layer(service.clone());
    let started = Instant::now();
    let (status, _) =
        crate::with_deadline_in(Duration::from_millis(1_500), call(&mut client, get()))
            .await
            .unwrap();
    assert_eq!((status, service.seen().len()), (503, 1));
    assert_eq!(
        Instant::now(),
        started,
        "it did not wait for a retry it would not make"
    );
    assert_eq!(client.stats().retries_past_deadline, 1);

    // With 3.5 s, one retry fits (at 2 s) and the second would not (4 s).
    let service = Scripted::new(vec![
        Reply::Shed {
            retry_after_secs: 2
        };
        3
    ]);
    let mut client = bare().layer(service.clone());
    crate::with_deadline_in(Duration::from_millis(3_500), call(&mut client, get()))
        .await
        .unwrap();
    assert_eq!(service.seen().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_shared_budget_caps_retries_across_calls() {
    let service = Scripted::new(vec![
        Reply::Shed {
            retry_after_secs: 1
        };
        10_000
    ]);
    let layer = bare()
        .max_attempts(5)
        .budget(Some(RetryBudget::new().ratio(0.1).min_per_second(0.0)));
    // Two services from one layer (one client, one budget), 100 calls a
    // second each for 4 s, every attempt refused with `Retry-After: 1`.
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..800 {
        let mut client = layer.layer(service.clone());
        calls.spawn(async move {
            tokio::time::sleep(Duration::from_millis(10 * (i / 2))).await;
            call(&mut client, get()).await.unwrap()
        });
    }
    while calls.join_next().await.is_some() {}
    let stats = layer.stats();
    let first = stats.attempts - stats.retries;
    assert_eq!(first, 800);
    assert!(stats.retries <= 80, "10% of 800 first attempts: {stats:?}");
    // Paced at 90% of 20 a second, from 1 s (`Retry-After`) to 4 s (the
    // end of the first attempts, which pay for them).
    assert!(stats.retries >= 40, "the budget is used: {stats:?}");
    assert_eq!(
        stats.budget_exhausted, 800,
        "every call ended on a denied retry"
    );
    // Each second's retries are paid by the first attempts of that second.
    let seen = service.seen();
    let start = seen[0].1;
    for second in 0..5 {
        let count = |retry: bool| {
            seen.iter()
                .filter(|(h, at)| {
                    (*at - start).as_secs() == second && h.contains_key("x-shed-attempt") == retry
                })
                .count()
        };
        let (first, retries) = (count(false), count(true));
        // The balance holds at most two retries beyond what a span's first
        // attempts earn.
        assert!(
            retries * 10 <= first + 20,
            "second {second}: {retries} retries, {first} first attempts"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_retry_due_when_first_attempts_have_stopped_is_not_sent() {
    let service = Scripted::new(vec![
        Reply::Shed {
            retry_after_secs: 1
        };
        10_000
    ]);
    let layer = bare()
        .max_attempts(2)
        .budget(Some(RetryBudget::new().ratio(0.1).min_per_second(0.0)));
    let client = layer.layer(service.clone());
    // Ten calls at once earn one retry, due a second later, when no
    // first attempt has come for a second: it is not sent, and the caller
    // gets the refusal it had (the budget was spent when the retry was
    // scheduled, it was 10% of the first attempts over 10 s).
    let started = Instant::now();
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..10 {
        let mut client = client.clone();
        calls.spawn(async move { call(&mut client, get()).await.unwrap() });
    }
    while let Some(done) = calls.join_next().await {
        assert_eq!(done.unwrap().0, 503);
    }
    let stats = layer.stats();
    assert_eq!((stats.attempts, stats.retries), (10, 0), "{stats:?}");
    assert_eq!((stats.budget_exhausted, stats.budget_revoked), (10, 1));
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "the one granted waited"
    );
}

#[tokio::test(start_paused = true)]
async fn a_shedding_backend_makes_the_client_throttle_itself() {
    fastrand::seed(11);
    let service = Scripted::new(vec![
        Reply::Shed {
            retry_after_secs: 1
        };
        10_000
    ]);
    let mut client = bare()
        .max_attempts(1)
        .throttle(Some(AdaptiveThrottle::new()))
        .layer(service.clone());
    let mut throttled = 0;
    for _ in 0..200 {
        match call(&mut client, get()).await {
            Ok((503, _)) => {}
            Err(e) => {
                assert_eq!(
                    e.downcast_ref::<LocalRefusal>(),
                    Some(&LocalRefusal::Throttled)
                );
                throttled += 1;
            }
            other => panic!("{:?}", other.map_err(|e| e.to_string())),
        }
    }
    // Nothing is accepted, so p = requests / (requests + 1): after the
    // first call almost everything is rejected locally.
    assert!(throttled >= 180, "{throttled} of 200 throttled");
    assert_eq!(service.seen().len(), 200 - throttled);
    assert_eq!(client.stats().throttled, throttled as u64);
}

#[test]
fn counts_are_published_as_metrics() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap()
            .block_on(async {
                let service = Scripted::new([Reply::Shed {
                    retry_after_secs: 1,
                }]);
                let mut client = bare().name("orders").layer(service);
                call(&mut client, get()).await.unwrap();
                let past = Instant::now() - Duration::from_secs(1);
                let _ = crate::with_deadline(past, call(&mut client, get())).await;
            })
    });
    let counters: Vec<(String, u64)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter_map(|(key, _, _, value)| match value {
            DebugValue::Counter(n) => {
                let labels: Vec<_> = key.key().labels().map(|l| l.value().to_string()).collect();
                assert_eq!(labels, ["orders"]);
                Some((key.key().name().to_string(), n))
            }
            _ => None,
        })
        .collect();
    let get = |name: &str| counters.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    assert_eq!(get("shed_client_attempts_total"), Some(2));
    assert_eq!(get("shed_client_retries_total"), Some(1));
    assert_eq!(get("shed_client_deadline_expired_total"), Some(1));
}

#[tokio::test(start_paused = true)]
async fn a_throttled_retry_ends_with_the_refusal_before_it() {
    // Ten refusals in the window and one accept: p = (11 - 2) / 12 for the
    // next call, so with this seed the retry is rejected locally.
    fastrand::seed(5);
    let throttle = AdaptiveThrottle::new();
    for i in 0..11 {
        throttle.record(throttle.admit(), i == 0);
    }
    let service = Scripted::new([Reply::Shed {
        retry_after_secs: 1,
    }]);
    let mut client = bare().throttle(Some(throttle)).layer(service.clone());
    let mut throttled_retry = false;
    for _ in 0..20 {
        let before = client.stats();
        if let Ok((503, body)) = call(&mut client, get()).await {
            let after = client.stats();
            if after.throttled > before.throttled {
                assert!(body.contains("retryable"), "the server's refusal: {body}");
                throttled_retry = true;
                break;
            }
        }
    }
    assert!(
        throttled_retry,
        "some retry was throttled and answered with the refusal"
    );
}

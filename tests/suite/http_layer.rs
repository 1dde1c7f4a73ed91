//! The tower layer and the HTTP responses, on the paused clock; without
//! sockets except for the slow reader, which needs a real one (the load
//! test in `tests/sockets/load_test.rs` uses real ones too).

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use shed::http::{Classification, DeadlineHeaders, Routes, ShedLayer};
use shed::{shed, Config, Limiter, Reason, Rejected};
use tower::{service_fn, Layer, ServiceExt};

fn limiter(capacity: u32) -> Limiter {
    Config::new().capacity(capacity).build().unwrap()
}

fn get_req(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_refused_request_gets_503_retry_after_and_a_problem_body_and_never_reaches_the_service() {
    let limiter = limiter(4);
    limiter.set_class_enabled("optional", false).unwrap();
    let reached = Arc::new(AtomicUsize::new(0));
    let inner = {
        let reached = reached.clone();
        service_fn(move |_req: Request<Body>| {
            reached.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, Infallible>(Response::new(Body::from("ok"))) }
        })
    };
    let layer = ShedLayer::new(Routes::new("critical").route("/recommendations", "optional", 1))
        .limiter(limiter.clone());
    let service = layer.layer(inner);

    let response = service
        .clone()
        .oneshot(get_req("/recommendations/7"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let retry_after: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (21..=39).contains(&retry_after),
        "30 s ± 30% for a switched-off class: {retry_after}"
    );
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(problem["type"], "urn:shed:overloaded");
    assert_eq!(problem["reason"], "disabled");
    assert_eq!(problem["class"], "optional");
    assert_eq!(
        problem["retryable"], false,
        "not until somebody switches it on"
    );
    assert!(problem["title"].is_string());
    assert!(
        problem.get("name").is_none(),
        "no internal names by default"
    );
    assert_eq!(
        reached.load(Ordering::SeqCst),
        0,
        "refusals never reach the inner service"
    );

    let ok = service.oneshot(get_req("/orders")).await.unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    assert_eq!(reached.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn queue_full_refusals_say_which_class_was_overloaded() {
    let limiter = Config::new().capacity(1).queue_bound(0).build().unwrap();
    let _held = limiter.acquire("critical", 1, "holder").await.unwrap();
    let inner = service_fn(|_req: Request<Body>| async {
        Ok::<_, Infallible>(Response::new(Body::empty()))
    });
    let service = ShedLayer::new(Routes::new("optional"))
        .limiter(limiter.clone())
        .layer(inner);
    let response = service.oneshot(get_req("/x")).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(problem["reason"], "overload:optional");
}

#[tokio::test(start_paused = true)]
async fn liveness_routes_are_exempt_by_construction() {
    let limiter = limiter(1);
    for class in ["critical", "optional", "background"] {
        limiter.set_class_enabled(class, false).unwrap();
    }
    let app = Router::new()
        .route("/healthz", get(|| async { "alive" }))
        .route("/x", get(|| async { "x" }));
    let service = ShedLayer::new(Routes::new("critical").exempt("/healthz"))
        .limiter(limiter.clone())
        .layer(app);
    let health = service.clone().oneshot(get_req("/healthz")).await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    // A client cannot make a request exempt with a header: the path decides.
    let sneaky = Request::get("/x")
        .header("x-shed-class", "exempt")
        .body(Body::empty())
        .unwrap();
    assert_eq!(
        service.oneshot(sneaky).await.unwrap().status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
}

#[tokio::test(start_paused = true)]
async fn streaming_responses_hold_their_slots_until_the_body_ends_or_is_dropped() {
    let limiter = limiter(4);
    let inner = service_fn(|_req: Request<Body>| async {
        let chunks = futures_stream(vec!["a", "b", "c"]);
        Ok::<_, Infallible>(Response::new(Body::from_stream(chunks)))
    });
    let service = ShedLayer::new(Routes::new("critical").route("/stream", "critical", 2))
        .limiter(limiter.clone())
        .layer(inner);

    let response = service.clone().oneshot(get_req("/stream")).await.unwrap();
    assert!(response.body().holds_slots());
    assert_eq!(
        limiter.in_flight(),
        2,
        "the handler returned, the body has not been sent"
    );
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"abc");
    assert_eq!(limiter.in_flight(), 0, "given back at the end of the body");
    assert_eq!(limiter.stats().class("critical").unwrap().served_in_time, 1);

    let abandoned = service.oneshot(get_req("/stream")).await.unwrap();
    assert_eq!(limiter.in_flight(), 2);
    drop(abandoned);
    assert_eq!(
        limiter.in_flight(),
        0,
        "given back when the client goes away"
    );
}

/// A stream of body chunks, as a streaming handler produces.
fn futures_stream(items: Vec<&'static str>) -> Chunks {
    Chunks(items.into_iter())
}

struct Chunks(std::vec::IntoIter<&'static str>);

mod chunks {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use bytes::Bytes;

    impl futures_core::Stream for super::Chunks {
        type Item = Result<Bytes, std::convert::Infallible>;
        fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            Poll::Ready(self.0.next().map(|s| Ok(Bytes::from_static(s.as_bytes()))))
        }
    }
}

#[shed(class = "critical", name = "http::nested")]
async fn nested_work() -> Result<Option<Duration>, Rejected> {
    Ok(shed::deadline().map(|d| d - tokio::time::Instant::now()))
}

fn millis(left: Option<Duration>) -> String {
    left.map_or("none".into(), |d| d.as_millis().to_string())
}

#[tokio::test(start_paused = true)]
async fn client_deadlines_come_from_headers_capped_by_the_server_and_reach_nested_calls() {
    let limiter = limiter(4);
    let app = Router::new().route(
        "/work",
        get(|| async { millis(nested_work().await.unwrap()) }),
    );
    let service = ShedLayer::new(Routes::new("critical").by_handler("/work"))
        .deadlines(DeadlineHeaders::default().max(Duration::from_secs(2)))
        .limiter(limiter.clone())
        .layer(app);
    let ask = |header: Option<(&str, &str)>| {
        let mut req = Request::get("/work");
        if let Some((name, value)) = header {
            req = req.header(name, value);
        }
        req.body(Body::empty()).unwrap()
    };
    for (header, expected_ms) in [
        (Some(("x-request-timeout", "250")), "250"),
        (Some(("grpc-timeout", "100m")), "100"),
        (Some(("x-request-timeout", "99999999")), "2000"),
        // Malformed or absent: no deadline in the handler, so nested
        // `#[shed]` calls keep their fast path (the cap still bounds how
        // long the answer may take to count as in time).
        (Some(("x-request-timeout", "-1")), "none"),
        (None, "none"),
    ] {
        let response = service.clone().oneshot(ask(header)).await.unwrap();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            expected_ms,
            "{header:?}"
        );
    }
    assert_eq!(
        limiter.stats().class("critical").unwrap().admitted,
        5,
        "the nested #[shed] used the layer's limiter"
    );
}

#[shed(class = "background", name = "http::report")]
async fn report() -> Result<String, Rejected> {
    Ok("report".into())
}

async fn cached_recommendations(user: u32) -> Result<axum::Json<Vec<u32>>, Rejected> {
    Ok(axum::Json(vec![user]))
}

#[shed(class = "optional", name = "http::recommendations", fallback = cached_recommendations)]
async fn recommendations(user: u32) -> Result<axum::Json<Vec<u32>>, Rejected> {
    Ok(axum::Json(vec![user, user + 1, user + 2]))
}

#[tokio::test(start_paused = true)]
async fn annotated_axum_handlers_refuse_with_503_or_fall_back() {
    let limiter = limiter(4);
    let app = Router::new()
        .route("/report", get(|| async { report().await }))
        .route(
            "/recommendations",
            get(|| async { recommendations(7).await }),
        );
    let layer = ShedLayer::new(Routes::new("critical").otherwise(Classification::ByHandler))
        .limiter(limiter.clone());
    let counters = layer.counters();
    let service = layer.layer(app);
    limiter.set_class_enabled("background", false).unwrap();
    limiter.set_class_enabled("optional", false).unwrap();

    let refused = service.clone().oneshot(get_req("/report")).await.unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(refused.headers().contains_key("retry-after"));

    let degraded = service
        .clone()
        .oneshot(get_req("/recommendations"))
        .await
        .unwrap();
    assert_eq!(degraded.status(), StatusCode::OK);
    assert_eq!(
        degraded.headers()["shed-degraded"],
        "fallback",
        "a degraded answer says so"
    );
    assert_eq!(counters.degraded(), 1);
    let body = degraded.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"[7]", "the fallback's cached answer");
    let optional = limiter.stats().class("optional").unwrap().clone();
    assert_eq!(
        (optional.fallbacks, optional.refused_for(Reason::Disabled)),
        (1, 1)
    );

    limiter.set_class_enabled("optional", true).unwrap();
    let full = service.oneshot(get_req("/recommendations")).await.unwrap();
    assert!(!full.headers().contains_key("shed-degraded"));
    assert_eq!(counters.degraded(), 1);
    let body = full.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"[7,8,9]");
}

#[tokio::test(start_paused = true)]
async fn refusals_are_grpc_statuses_that_say_whether_and_when_to_retry() {
    let limiter = limiter(1);
    let held = limiter.acquire("critical", 1, "holder").await.unwrap();
    // Refused by the load: UNAVAILABLE, pushback in milliseconds.
    let busy = limiter
        .acquire("optional", 1, "Greeter/SayHello")
        .await
        .unwrap_err();
    assert!(busy.is_retryable());
    let status = tonic::Status::from(busy.clone());
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert!(
        !status.message().contains("Greeter/SayHello"),
        "internal names stay inside: {}",
        status.message()
    );
    let pushback: u128 = status
        .metadata()
        .get(shed::tonic::RETRY_PUSHBACK)
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(pushback, busy.retry_after().as_millis());
    assert!(pushback >= 1000);
    drop(held);

    // A switched-off class: do not retry (a negative pushback, gRFC A6).
    limiter.set_class_enabled("optional", false).unwrap();
    let off = limiter
        .acquire("optional", 1, "Greeter/SayHello")
        .await
        .unwrap_err();
    let status = tonic::Status::from(off);
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert_eq!(
        status.metadata().get(shed::tonic::RETRY_PUSHBACK).unwrap(),
        "-1"
    );

    // A deadline shorter than the call takes on an idle server.
    let unmeetable = shed::with_deadline_in(
        Duration::from_nanos(1),
        limiter.acquire("critical", 1, "Greeter/SayHello"),
    )
    .await
    .unwrap_err();
    assert!(unmeetable.is_unmeetable_deadline() && !unmeetable.is_retryable());
    let status = tonic::Status::from(unmeetable);
    assert_eq!(status.code(), tonic::Code::DeadlineExceeded);
    assert!(status.metadata().get(shed::tonic::RETRY_PUSHBACK).is_none());
}

#[tokio::test(start_paused = true)]
async fn a_deadline_the_server_can_never_meet_is_a_504_without_retry_after() {
    let limiter = Config::new()
        .capacity(4)
        .default_service_time(Duration::from_millis(100))
        .build()
        .unwrap();
    let inner = service_fn(|_req: Request<Body>| async {
        Ok::<_, Infallible>(Response::new(Body::from("ok")))
    });
    let service = ShedLayer::new(Routes::new("critical"))
        .limiter(limiter.clone())
        .layer(inner);
    let ask = |timeout: &str| {
        Request::get("/orders/1")
            .header("x-request-timeout", timeout)
            .body(Body::empty())
            .unwrap()
    };
    // Idle server, 20 ms deadline, 100 ms expected service time.
    let response = service.clone().oneshot(ask("20")).await.unwrap();
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    assert!(!response.headers().contains_key("retry-after"));
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(problem["reason"], "deadline");
    assert_eq!(problem["retryable"], false);
    assert_eq!(problem["status"], 504);
    // A deadline that can be met is served.
    let ok = service.oneshot(ask("10s")).await.unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn a_deadline_that_runs_out_in_the_queue_is_an_overload_answer_not_an_unmeetable_one() {
    let limiter = limiter(1);
    let _held = limiter.acquire("critical", 1, "holder").await.unwrap();
    let refused = shed::with_deadline_in(
        Duration::from_millis(5),
        limiter.acquire("critical", 1, "waits"),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.reason(), Reason::Deadline);
    assert!(
        refused.is_retryable(),
        "the queue, not the deadline, was the problem"
    );
    let response: Response<String> = shed::http::refusal_response(&refused);
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(response.headers().contains_key("retry-after"));
}

#[tokio::test(start_paused = true)]
async fn retry_after_follows_the_backlog_and_spreads_across_refusals() {
    // One slot, held; refusals of a full queue say how long the backlog
    // takes to drain, jittered.
    let limiter = Config::new().capacity(1).queue_bound(0).build().unwrap();
    let _held = limiter.acquire("critical", 1, "holder").await.unwrap();
    let mut suggestions = Vec::new();
    let mut seconds = std::collections::BTreeMap::<u64, usize>::new();
    for _ in 0..500 {
        let refused = limiter.acquire("optional", 1, "r").await.unwrap_err();
        assert_eq!(refused.reason(), Reason::QueueFull);
        let response: Response<String> = shed::http::refusal_response(&refused);
        let header: u64 = response.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        *seconds.entry(header).or_default() += 1;
        suggestions.push(refused.retry_after().as_secs_f64());
    }
    let mean = suggestions.iter().sum::<f64>() / suggestions.len() as f64;
    let min = suggestions.iter().copied().fold(f64::MAX, f64::min);
    let max = suggestions.iter().copied().fold(0.0, f64::max);
    assert!(min >= 1.0, "at least a second: {min}");
    assert!(
        min <= 0.8 * mean && max >= 1.2 * mean,
        "spread of at least ±20%: {min:.2} {mean:.2} {max:.2}"
    );
    assert_eq!(
        seconds.keys().copied().collect::<Vec<_>>(),
        [1, 2],
        "whole seconds vary too: {seconds:?}"
    );
    assert!(seconds[&1] > 100 && seconds[&2] > 100, "{seconds:?}");
}

#[tokio::test(start_paused = true)]
async fn readiness_turns_off_under_heavy_shedding_and_back_on_with_hysteresis() {
    let limiter = limiter(1);
    let readiness = shed::Readiness::new(limiter.clone())
        .thresholds(0.5, 0.1)
        .window(Duration::from_secs(1));
    let window = |refused: u32, admitted: u32| {
        let limiter = limiter.clone();
        async move {
            limiter.set_class_enabled("background", false).unwrap();
            for _ in 0..refused {
                let _ = limiter.acquire("background", 1, "r").await;
            }
            for _ in 0..admitted {
                drop(limiter.acquire("critical", 1, "a").await.unwrap());
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    };
    assert!(readiness.is_ready());
    window(8, 2).await; // 80% refused
    assert!(!readiness.is_ready(), "above 50%: not ready");
    window(3, 7).await; // 30%: below enter, above exit
    assert!(!readiness.is_ready(), "hysteresis: stays not ready at 30%");
    window(0, 10).await;
    assert!(readiness.is_ready(), "below 10%: ready again");
    window(3, 7).await;
    assert!(
        readiness.is_ready(),
        "30% is not enough to turn it off again"
    );
}

#[tokio::test(start_paused = true)]
async fn started_readiness_follows_the_load_on_a_tick_not_at_probe_time() {
    let limiter = limiter(1);
    limiter.set_class_enabled("background", false).unwrap();
    let probed = shed::Readiness::new(limiter.clone()).thresholds(0.5, 0.1);
    let ticking = shed::Readiness::new(limiter.clone())
        .thresholds(0.5, 0.1)
        .start();
    let refuse = |n: u32| {
        let limiter = limiter.clone();
        async move {
            for _ in 0..n {
                let _ = limiter.acquire("background", 1, "r").await;
            }
        }
    };
    // Heavy shedding for 1.45 s, probed once, just after the first tick.
    refuse(10).await;
    tokio::time::sleep(Duration::from_millis(1050)).await;
    assert!(!probed.is_ready() && !ticking.is_ready());
    refuse(10).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    // Then a quiet spell: nobody asks, nobody probes.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(
        ticking.is_ready(),
        "the tick closed the shedding window and then the quiet ones"
    );
    assert!(
        !probed.is_ready(),
        "probed only, the first window after the gap still holds the shedding"
    );
}

#[shed(class = "optional", name = "http::impl_into_response")]
async fn impl_into_response_style() -> Result<impl axum::response::IntoResponse, Rejected> {
    Ok((StatusCode::CREATED, "made"))
}

#[tokio::test(start_paused = true)]
async fn handlers_returning_impl_into_response_results_refuse_with_503() {
    use axum::response::IntoResponse;
    let limiter = limiter(2);
    let made = limiter
        .scope(impl_into_response_style())
        .await
        .into_response();
    assert_eq!(made.status(), StatusCode::CREATED);
    limiter.set_class_enabled("optional", false).unwrap();
    let refused = limiter
        .scope(impl_into_response_style())
        .await
        .into_response();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
}

/// The value of the `limiter` label on a rendered Prometheus page.
fn limiter_label(page: &str) -> &str {
    let start = page.find("limiter=\"").expect("a limiter label") + "limiter=\"".len();
    let len = page[start..].find('"').expect("a closing quote");
    &page[start..start + len]
}

#[tokio::test(start_paused = true)]
async fn the_prometheus_page_has_the_documented_series() {
    let limiter = limiter(1);
    let held = limiter.acquire("critical", 1, "holder").await.unwrap();
    let _ = limiter.acquire("optional", 1, "waits").await;
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || limiter.publish_metrics());
    // A limiter other than the process-wide one labels its series with its
    // id, last: read the page without that label.
    let rendered = handle.render();
    let label = format!("limiter=\"{}\"", limiter_label(&rendered));
    let page = rendered
        .replace(&format!(",{label}"), "")
        .replace(&format!("{{{label}}}"), "");
    for series in [
        "shed_offered_total{class=\"optional\"} 1",
        "shed_admitted_total{class=\"critical\"} 1",
        "shed_refused_total{class=\"optional\",reason=\"max_wait\"} 1",
        "shed_served_in_time_total",
        "shed_late_total",
        "shed_in_flight 1",
        "shed_limit 1",
        "shed_queued_weight 0",
    ] {
        assert!(page.contains(series), "missing {series} in:\n{page}");
    }
    drop(held);
}

/// A body that streams 16 KiB chunks for ever, as fast as it is polled.
fn endless() -> Body {
    struct Endless;
    impl futures_core::Stream for Endless {
        type Item = Result<Bytes, Infallible>;
        fn poll_next(
            self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            std::task::Poll::Ready(Some(Ok(Bytes::from(vec![b'x'; 16 * 1024]))))
        }
    }
    Body::from_stream(Endless)
}

#[tokio::test(start_paused = true)]
async fn a_slow_reader_holds_its_slots_no_longer_than_the_maximum_hold_time() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let limiter = limiter(1);
    let app = Router::new()
        .route("/stream", get(|| async { endless() }))
        .route("/x", get(|| async { "x" }));
    let layer = ShedLayer::new(Routes::new("critical"))
        .limiter(limiter.clone())
        .max_hold(Duration::from_secs(5));
    let counters = layer.counters();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app.layer(layer)).await.unwrap() });

    // The client asks for the endless stream, reads the head and a little
    // of the body, then stops reading: the socket buffers fill and the
    // server stops polling the body.
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /stream HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut head = [0u8; 64];
    slow.read_exact(&mut head).await.unwrap();
    assert!(head.starts_with(b"HTTP/1.1 200"), "{head:?}");
    assert_eq!(limiter.in_flight(), 1, "the stream holds the only slot");

    // Before the hold time is up, everybody else is refused...
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(fetch(addr, "/x").await, 503);
    assert_eq!(counters.hold_expired(), 0);
    // ...after it, the slot is back although the client still reads nothing.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        limiter.in_flight(),
        0,
        "given back at the maximum hold time"
    );
    assert_eq!(counters.hold_expired(), 1, "and counted");
    assert_eq!(fetch(addr, "/x").await, 200);
    drop(slow);
}

/// The status of a one-shot HTTP/1.1 request over a fresh connection.
async fn fetch(addr: std::net::SocketAddr, path: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    std::str::from_utf8(&response[9..12])
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_body_can_be_cut_at_its_maximum_hold_time_and_a_handler_can_set_its_own() {
    let limiter = limiter(2);
    let inner = service_fn(|req: Request<Body>| async move {
        let mut response = Response::new(Body::from_stream(Pending));
        if req.uri().path() == "/export" {
            response
                .extensions_mut()
                .insert(shed::http::MaxHold(Duration::from_secs(60)));
        }
        Ok::<_, Infallible>(response)
    });
    let layer = ShedLayer::new(Routes::new("critical"))
        .limiter(limiter.clone())
        .max_hold(Duration::from_secs(2))
        .cut_at_max_hold(true);
    let counters = layer.counters();
    let service = layer.layer(inner);

    let stuck = service.clone().oneshot(get_req("/x")).await.unwrap();
    let export = service.oneshot(get_req("/export")).await.unwrap();
    let collect = tokio::spawn(stuck.into_body().collect());
    let export = tokio::spawn(export.into_body().collect());
    tokio::time::sleep(Duration::from_secs(3)).await;
    let error = collect.await.unwrap().unwrap_err();
    assert!(error.is::<shed::http::HoldExpired>(), "{error}");
    assert_eq!(counters.hold_expired(), 1);
    assert_eq!(
        limiter.in_flight(),
        1,
        "the export's own hold time is longer"
    );
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(export.await.unwrap().is_err(), "cut too");
    assert_eq!(limiter.in_flight(), 0);
    assert_eq!(counters.hold_expired(), 2);
}

/// A body stream that never yields.
struct Pending;

impl futures_core::Stream for Pending {
    type Item = Result<Bytes, Infallible>;
    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        std::task::Poll::Pending
    }
}

#[tokio::test(start_paused = true)]
async fn the_service_time_is_measured_to_the_response_head_not_the_body_drain() {
    let limiter = limiter(4);
    let inner = service_fn(|_req: Request<Body>| async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let slow = futures_stream(vec!["a", "b", "c"]);
        Ok::<_, Infallible>(Response::new(Body::from_stream(slow)))
    });
    let routes = Routes::new("critical").route("/slow-read", "critical", 1);
    let policy = routes.policies().get("/slow-read").unwrap();
    let service = ShedLayer::new(routes).limiter(limiter.clone()).layer(inner);
    for _ in 0..5 {
        // A deadline makes every admission timed, not one in a sample.
        let request = Request::get("/slow-read")
            .header("x-request-timeout", "60s")
            .body(Body::empty())
            .unwrap();
        let response = service.clone().oneshot(request).await.unwrap();
        // The client takes 10 s to read the body.
        tokio::time::sleep(Duration::from_secs(10)).await;
        response.into_body().collect().await.unwrap();
    }
    let expected = limiter.expected_service(policy).expect("measured");
    assert!(
        expected < Duration::from_millis(200),
        "the handler's 100 ms, not the reader's 10 s: {expected:?}"
    );
}

#[shed(class = "critical", name = "http::upload")]
async fn store_upload(body: String) -> Result<String, Rejected> {
    Ok(format!("{} bytes", body.len()))
}

/// A request whose body never comes (a client trickling it, or stalled).
fn stalled_upload(path: &str) -> Request<Body> {
    Request::post(path)
        .header("content-length", "1000")
        .body(Body::from_stream(Pending))
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_stalled_request_body_holds_a_slot_only_where_the_layer_admits_the_request() {
    let limiter = limiter(4);
    let upload = axum::routing::post(|body: String| async move { store_upload(body).await });
    let app = Router::new()
        .route("/guarded", upload.clone())
        .route("/by-handler", upload);
    let service = ShedLayer::new(Routes::new("critical").by_handler("/by-handler"))
        .limiter(limiter.clone())
        .layer(app);

    // Admitted by the handler's `#[shed]` fn, which runs after axum has
    // read the body: the stalled client holds nothing.
    let by_handler = tokio::spawn(service.clone().oneshot(stalled_upload("/by-handler")));
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(limiter.stats().in_flight, 0);

    // Admitted by the layer: the slot is held while the body is awaited,
    // which is what the layer's documentation warns about.
    let guarded = tokio::spawn(service.clone().oneshot(stalled_upload("/guarded")));
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(limiter.stats().in_flight, 1);

    // Dropping the request (the client went away) gives the slot back.
    guarded.abort();
    by_handler.abort();
    let _ = guarded.await;
    assert_eq!(limiter.stats().in_flight, 0);
}

//! The tower layer and the HTTP responses, on the paused clock, without
//! sockets (the load test in `tests/load_test.rs` uses real ones).

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
        (5..=7).contains(&retry_after),
        "5 s for a switched-off class, plus jitter: {retry_after}"
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
    assert_eq!(problem["retryable"], true);
    assert!(problem["title"].is_string());
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

#[tokio::test(start_paused = true)]
async fn deadlines_come_from_headers_capped_by_the_server_and_reach_nested_calls() {
    let limiter = limiter(4);
    let app = Router::new().route(
        "/work",
        get(|| async { format!("{:?}", nested_work().await.unwrap().unwrap().as_millis()) }),
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
        (Some(("x-request-timeout", "-1")), "2000"),
        (None, "2000"),
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
    let service = ShedLayer::new(Routes::new("critical").otherwise(Classification::ByHandler))
        .limiter(limiter.clone())
        .layer(app);
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
    let body = degraded.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"[7]", "the fallback's cached answer");
    let optional = limiter.stats().class("optional").unwrap().clone();
    assert_eq!(
        (optional.fallbacks, optional.refused_for(Reason::Disabled)),
        (1, 1)
    );

    limiter.set_class_enabled("optional", true).unwrap();
    let full = service.oneshot(get_req("/recommendations")).await.unwrap();
    let body = full.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"[7,8,9]");
}

#[test]
fn refusals_are_grpc_unavailable_with_retry_pushback() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let limiter = limiter(1);
    limiter.set_class_enabled("optional", false).unwrap();
    let refused = rt
        .block_on(limiter.acquire("optional", 1, "Greeter/SayHello"))
        .unwrap_err();
    let status = tonic::Status::from(refused);
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert!(status.message().contains("Greeter/SayHello"));
    assert_eq!(
        status.metadata().get(shed::tonic::RETRY_PUSHBACK).unwrap(),
        "5000"
    );
    let _: Bytes = Bytes::new();
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

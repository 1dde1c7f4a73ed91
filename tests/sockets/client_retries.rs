//! Clients built on shed's client layer against a shed-guarded axum server
//! at three times its capacity, over loopback: with the retry budget,
//! retries add at most 10% to the load; every retry waits at least the
//! Retry-After it was given and none leaves after its deadline. The same
//! clients with retries but no budget (and no throttling) more than double
//! the load — the retry storm the layer exists to prevent.
//!
//! The short version (2.5 s of load, debug build); `cargo run --release
//! --example client_load --features axum,client` is the longer one in
//! BENCHMARKS.md.

use std::time::Duration;

use crate::support::retries::{self, Run};
use crate::ONE_AT_A_TIME;
use shed::client::{ClientLayer, RetryBudget};

/// 2 slots, 20 ms a request: 100 rps of capacity.
const SLOTS: u32 = 2;
const WORK: Duration = Duration::from_millis(20);
/// 300 rps: three times the capacity, from 3 clients.
const RPS: f64 = 300.0;
const CLIENTS: usize = 3;
const SECONDS: f64 = 2.5;
/// Room for three retries: shed's Retry-After is at least 1 s and, from
/// the backlog with its jitter, up to about 2 s here.
const DEADLINE: Duration = Duration::from_millis(6_500);

fn retrying() -> ClientLayer {
    ClientLayer::new().max_attempts(4)
}

async fn storm(layer: fn() -> ClientLayer) -> Run {
    let server = retries::serve(SLOTS, WORK).await;
    retries::run(&server, layer, CLIENTS, RPS, SECONDS, DEADLINE).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_budget_keeps_amplification_down_where_unbudgeted_retries_double_the_load() {
    let _serial = ONE_AT_A_TIME.lock().await;
    // The budget's floor (a reserve of retries for quiet clients) is off:
    // over a 2.5 s run it would be a large share of the retries. The two
    // storms run side by side, each against a server of its own (a run is
    // mostly waiting: for Retry-After, then for the last retries' deadline).
    let (budgeted, unbudgeted) = tokio::join!(
        storm(|| retrying().budget(Some(RetryBudget::new().ratio(0.1).min_per_second(0.0)))),
        storm(|| retrying().budget(None).throttle(None)),
    );
    println!("budget + throttle: {}", budgeted.summary());
    println!("no budget:         {}", unbudgeted.summary());

    for run in [&budgeted, &unbudgeted] {
        assert!(
            run.errors.is_empty(),
            "{:?}",
            &run.errors[..run.errors.len().min(5)]
        );
        assert!(run.refused > 0, "the server shed: {}", run.summary());
        assert_eq!(run.early_retries, 0, "no retry before its Retry-After");
        assert_eq!(run.retries_past_deadline, 0, "no retry after its deadline");
        assert!(run.min_slack.is_some(), "there were retries to check");
    }
    assert!(
        budgeted.amplification() <= 1.1,
        "with a budget: {}",
        budgeted.summary()
    );
    assert!(
        unbudgeted.amplification() > 2.0,
        "without one: {}",
        unbudgeted.summary()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_tells_retries_from_first_attempts() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = retries::serve(SLOTS, WORK).await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<bytes::Bytes>>();
    let uri: http::Uri = format!("http://{}/work", server.addr).parse().unwrap();
    for (headers, attempt) in [
        (vec![], 1),
        (vec![("x-shed-attempt", "2")], 2),
        (vec![("x-envoy-attempt-count", "3")], 3),
        (vec![("grpc-previous-rpc-attempts", "1")], 2),
        (vec![("x-envoy-attempt-count", "1")], 1),
    ] {
        let mut request = http::Request::get(uri.clone());
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let response = client
            .request(request.body(Default::default()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let body = http_body_util::BodyExt::collect(response.into_body())
            .await
            .unwrap();
        assert_eq!(
            body.to_bytes(),
            format!("attempt {attempt}"),
            "the handler reads the attempt with shed::attempt()"
        );
    }
    let total = server.retries.total();
    assert_eq!((total.first_admitted, total.retries_admitted), (2, 3));
    assert_eq!((total.first_shed, total.retries_shed), (0, 0));
    assert!((total.amplification() - 2.5).abs() < 1e-12);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_retried_through_hyper_util() {
    let _serial = ONE_AT_A_TIME.lock().await;
    // A port nobody listens on: every attempt's connection is refused.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let hyper = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<bytes::Bytes>>();
    let layer =
        ClientLayer::new()
            .max_attempts(3)
            .throttle(None)
            .backoff(shed::client::Backoff::new(
                Duration::from_millis(1),
                Duration::from_millis(5),
            ));
    let mut client = tower::Layer::layer(&layer, hyper);
    let request = http::Request::get(format!("http://{closed}/"))
        .body(Default::default())
        .unwrap();
    let error = tower::ServiceExt::oneshot(&mut client, request)
        .await
        .unwrap_err();
    println!("{error}");
    let stats = layer.stats();
    assert_eq!(
        (stats.attempts, stats.retries),
        (3, 2),
        "hyper-util's connect error is found to be a refused connection"
    );
}

//! The signals balancers read, over real sockets on loopback: the ORCA
//! `endpoint-load-metrics` header on every response, and HAProxy's agent
//! check answering with a weight from what the instance refused.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use shed::http::{OrcaFormat, OrcaLayer, ORCA_HEADER};
use shed::{ClassSpec, Config, LoadReporter};
use tokio::io::AsyncReadExt;
use tower::{Layer, ServiceExt};

#[tokio::test(start_paused = true)]
async fn every_response_carries_the_orca_load_report() {
    let limiter = Config::new().capacity(4).build().unwrap();
    let reporter =
        Arc::new(LoadReporter::new(limiter.clone()).interval(Duration::from_millis(100)));
    let held = limiter.acquire("critical", 2, "busy").await.unwrap();
    tokio::time::advance(Duration::from_millis(100)).await;
    let service =
        tower::service_fn(|_: Request<()>| async { Ok::<_, Infallible>(Response::new(())) });
    for (format, prefix) in [(OrcaFormat::Text, "TEXT "), (OrcaFormat::Json, "JSON ")] {
        let service = OrcaLayer::new(Arc::clone(&reporter), format).layer(service);
        let response = service.oneshot(Request::new(())).await.unwrap();
        let value = response.headers()[ORCA_HEADER].to_str().unwrap().to_owned();
        assert!(value.starts_with(prefix), "{value}");
        if format == OrcaFormat::Text {
            assert!(
                value.contains("named_metrics.shed_occupancy=0.5"),
                "{value}"
            );
            assert!(value.contains("rps_fractional=10,"), "{value}");
        }
    }
    drop(held);
}

#[tokio::test]
async fn the_agent_check_answers_with_a_weight_and_drains_when_not_ready() {
    // Every call waits at most 0 ms: with the one slot held, all are refused.
    let limiter = Config::new()
        .capacity(1)
        .classes([ClassSpec::new("critical", 0).max_wait(Duration::ZERO)])
        .build()
        .unwrap();
    let reporter = Arc::new(LoadReporter::new(limiter.clone()).interval(Duration::from_millis(10)));
    let ready = Arc::new(AtomicBool::new(true));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(shed::serve_agent_check(listener, Arc::clone(&reporter), {
        let ready = Arc::clone(&ready);
        move || ready.load(Ordering::Relaxed)
    }));
    let check = || async move {
        let mut socket = tokio::net::TcpStream::connect(address).await.unwrap();
        let mut reply = String::new();
        socket.read_to_string(&mut reply).await.unwrap();
        reply
    };
    assert_eq!(check().await, "up 100%\n");

    let held = limiter.acquire("critical", 1, "held").await.unwrap();
    for _ in 0..3 {
        assert!(limiter.acquire("critical", 1, "refused").await.is_err());
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    // One admitted, three refused over the interval: a quarter of the weight.
    assert_eq!(check().await, "up 25%\n");

    ready.store(false, Ordering::Relaxed);
    assert_eq!(check().await, "drain\n");
    drop(held);
    server.abort();
}

//! Calling a shed-guarded service through shed's client layer.
//!
//! ```text
//! cargo run --example client --features axum,client           # starts the axum example in-process
//! cargo run --example client --features axum,client -- http://127.0.0.1:3000 http://127.0.0.1:9090
//!                                                   # or calls a running one (service, admin)
//! ```
//!
//! Three calls, each under a deadline set with `shed::with_deadline_in`:
//! 1. `GET /orders/1`: the deadline travels as `x-request-timeout`, less
//!    the layer's margin;
//! 2. `GET /reports` with the `background` class switched off and 2 s
//!    left: the refusal's `Retry-After` (5 s or more) is past the
//!    deadline, so the layer does not retry and the caller gets the 503 at
//!    once;
//! 3. the same with 15 s left while the class comes back after 2 s: the
//!    layer waits out the `Retry-After` and the retry succeeds.

#[allow(dead_code)]
#[path = "axum_server/main.rs"]
mod server;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy;
use hyper_util::rt::TokioExecutor;
use shed::client::{ClientLayer, LocalRefusal};
use tokio::time::Instant;
use tower::{Layer, Service, ServiceExt};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Starts the axum example, its service and admin listeners on free
/// loopback ports.
async fn start_server() -> Result<(String, String), Error> {
    let limiter = shed::Config::new().capacity(16).build()?;
    let app = server::App {
        readiness: Arc::new(shed::Readiness::new(limiter.clone())),
        database: Arc::new(server::Database::new(16, Duration::from_millis(20))),
        limiter,
        metrics: None,
        admin_token: None,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let admin = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let admin_base = format!("http://{}", admin.local_addr()?);
    let admin_app = server::admin_router(app.clone());
    tokio::spawn(async move { axum::serve(listener, server::router(app)).await });
    tokio::spawn(async move { axum::serve(admin, admin_app).await });
    Ok((base, admin_base))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let (base, admin) = match (args.next(), args.next()) {
        (Some(base), admin) => (
            base,
            admin.unwrap_or_else(|| "http://127.0.0.1:9090".into()),
        ),
        (None, _) => start_server().await?,
    };
    println!("calling {base}\n");

    // Any tower::Service<http::Request<B>> works; here hyper-util's pooled
    // client. Every call through `client` (and its clones) shares one
    // retry budget and one throttle.
    let hyper = legacy::Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    // Adaptive throttling is off: it reads the backend's refusal rate over
    // many calls, and three calls from one caller are too few to read.
    let layer = ClientLayer::new()
        .name("example")
        .max_attempts(3)
        .throttle(None);
    let client = layer.layer(hyper.clone());

    let get = |path: &str| {
        http::Request::get(format!("{base}{path}"))
            .body(Empty::<Bytes>::new())
            .expect("request")
    };
    let call = |request: http::Request<Empty<Bytes>>| {
        let mut client = client.clone();
        async move {
            let started = Instant::now();
            let outcome = match client.ready().await {
                Ok(ready) => ready.call(request).await,
                Err(e) => Err(e),
            };
            match outcome {
                Ok(response) => {
                    let status = response.status();
                    let retry_after = response.headers().get("retry-after").cloned();
                    let body = response.into_body().collect().await?.to_bytes();
                    println!(
                        "  -> {status} after {:?} (Retry-After {retry_after:?}): {}",
                        started.elapsed(),
                        String::from_utf8_lossy(&body)
                    );
                }
                Err(e) => match e.downcast_ref::<LocalRefusal>() {
                    Some(refusal) => println!("  -> refused locally: {refusal}"),
                    None => println!("  -> error: {e}"),
                },
            }
            Ok::<_, Error>(())
        }
    };
    // The admin listener switches classes with a JSON PUT.
    let admin_client =
        legacy::Client::builder(TokioExecutor::new()).build_http::<http_body_util::Full<Bytes>>();
    let switch = move |state: &'static str| {
        let (admin_client, admin) = (admin_client.clone(), admin.clone());
        async move {
            let enabled = state == "on";
            let request = http::Request::put(format!("{admin}/admin/classes/background"))
                .header("content-type", "application/json")
                .body(http_body_util::Full::new(Bytes::from(format!(
                    "{{\"enabled\": {enabled}}}"
                ))))?;
            admin_client.request(request).await?;
            Ok::<_, Error>(())
        }
    };

    println!("1. GET /orders/1 with 500 ms left (the server reads x-request-timeout: 490)");
    shed::with_deadline_in(Duration::from_millis(500), call(get("/orders/1"))).await?;

    switch("off").await?;
    println!("\n2. GET /reports, background switched off, 2 s left");
    shed::with_deadline_in(Duration::from_secs(2), call(get("/reports"))).await?;

    println!("\n3. GET /reports, 15 s left, background back on in 2 s");
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        switch("on").await
    });
    shed::with_deadline_in(Duration::from_secs(15), call(get("/reports"))).await?;

    println!("\nclient: {:?}", layer.stats());
    Ok(())
}

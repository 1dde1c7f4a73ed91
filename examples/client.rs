//! Calling a shed-guarded service through shed's client layer.
//!
//! ```text
//! cargo run --example client --features axum,client                       # starts the axum example in-process
//! cargo run --example client --features axum,client -- http://127.0.0.1:3000   # or calls a running one
//! ```
//!
//! Three calls, each under a deadline set with `shed::with_timeout`:
//! 1. `GET /orders/1`: the deadline travels as `x-request-timeout`, less
//!    the layer's margin;
//! 2. `GET /reports` with the `background` class switched off and 2 s
//!    left: the refusal's `Retry-After` (5 s or more) is past the
//!    deadline, so the layer does not retry and the caller gets the 503 at
//!    once;
//! 3. the same with 15 s left while the class comes back after 2 s: the
//!    layer waits out the `Retry-After` and the retry succeeds.

#[allow(dead_code)]
#[path = "axum_server.rs"]
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

/// Starts the axum example on a free loopback port.
async fn start_server() -> Result<String, Error> {
    let limiter = shed::Config::new().capacity(16).build()?;
    let app = server::App {
        readiness: Arc::new(shed::Readiness::new(limiter.clone())),
        database: Arc::new(server::Database::new(16, Duration::from_millis(20))),
        limiter,
        metrics: None,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, server::router(app)).await });
    Ok(base)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let base = match std::env::args().nth(1) {
        Some(base) => base,
        None => start_server().await?,
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
    let switch = {
        let (hyper, base) = (hyper.clone(), base.clone());
        move |state: &'static str| {
            let (hyper, base) = (hyper.clone(), base.clone());
            async move {
                let uri = format!("{base}/admin/classes/background/{state}");
                let request = http::Request::post(uri).body(Empty::<Bytes>::new())?;
                hyper.request(request).await?;
                Ok::<_, Error>(())
            }
        }
    };

    println!("1. GET /orders/1 with 500 ms left (the server reads x-request-timeout: 490)");
    shed::with_timeout(Duration::from_millis(500), call(get("/orders/1"))).await?;

    switch("off").await?;
    println!("\n2. GET /reports, background switched off, 2 s left");
    shed::with_timeout(Duration::from_secs(2), call(get("/reports"))).await?;

    println!("\n3. GET /reports, 15 s left, background back on in 2 s");
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        switch("on").await
    });
    shed::with_timeout(Duration::from_secs(15), call(get("/reports"))).await?;

    println!("\nclient: {:?}", layer.stats());
    Ok(())
}

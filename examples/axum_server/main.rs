//! A real axum service guarded by `shed`, hardened for deployment.
//!
//! ```text
//! cargo run --release --example axum_server --features axum
//! PORT=8080 ADMIN_PORT=9090 ADMIN_TOKEN=secret SHED_CLASSES=background=off \
//!     cargo run --release --example axum_server --features axum
//! ```
//!
//! Public listener (`PORT`, default 3000, on 127.0.0.1 unless `BIND` says
//! otherwise):
//! - `GET /orders/{id}`: interactive, class `critical`;
//! - `GET /recommendations/{user}`: class `optional`, falls back to a
//!   cached answer instead of refusing (marked `shed-degraded: fallback`);
//! - `GET /reports`: background, three slots a call;
//! - `GET /healthz`: liveness, never shed; `GET /readyz`: not ready while
//!   the instance refuses more than 20% of calls (evaluated every second).
//!
//! Admin listener (`ADMIN_PORT`, default 9090, always 127.0.0.1; with
//! `ADMIN_TOKEN` set, every call needs `authorization: Bearer <token>`):
//! - `GET /metrics`: Prometheus text, rendered at most once a second;
//! - `GET /admin/policies`: the `#[shed]` fns and the route table;
//! - `GET /admin/stats`: the limiter's figures as JSON;
//! - `PUT /admin/classes/{class}` with `{"enabled": false}` as
//!   `application/json` switches a class: a request no browser page can
//!   send without a CORS preflight the server never approves.
//!
//! `QUERY_MS` (default 20) sets the database's query time, so the capacity
//! is its 16 connections / `QUERY_MS` (800 rps by default). The limiter is
//! not told: its default adaptive limit finds the database's concurrency
//! from the calls' latency and throughput (`SHED_CAPACITY=16` pins it).
//!
//! `AGENT_PORT`, if set, serves HAProxy's agent check on 127.0.0.1 there
//! (`up NN%` from the share of calls not refused; see
//! `scripts/fleet-haproxy.sh`).
//!
//! Connections are limited (see `conn.rs`): 408 for heads not sent within
//! 10 s, idle keep-alive connections closed after 60 s, and a cap below
//! the process's file-descriptor limit that closes idle connections before
//! refusing new ones.
//!
//! The handlers share a "database" of a few connections, the bottleneck
//! the limiter protects: with shedding off (`SHED_MODE=off`) calls pile
//! up in front of it, as they would in front of a real pool.

#[path = "conn.rs"]
pub mod conn;
#[path = "tenants.rs"]
pub mod tenants;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use shed::http::{Routes, ShedLayer};
use shed::{shed, Limiter, Readiness, Rejected};
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// The service's state: its limiter, its readiness and its bottleneck.
#[derive(Clone)]
pub struct App {
    pub limiter: Limiter,
    pub readiness: Arc<Readiness>,
    pub database: Arc<Database>,
    pub metrics: Option<Arc<MetricsPage>>,
    /// Required as `authorization: Bearer <token>` on the admin listener.
    pub admin_token: Option<Arc<str>>,
}

/// The Prometheus page, rendered at most once per `every`: a flood of
/// scrapes costs one render a second, not one per scrape.
pub struct MetricsPage {
    handle: metrics_exporter_prometheus::PrometheusHandle,
    every: Duration,
    cached: Mutex<Option<(Instant, Arc<str>)>>,
}

impl MetricsPage {
    pub fn new(handle: metrics_exporter_prometheus::PrometheusHandle, every: Duration) -> Self {
        Self {
            handle,
            every,
            cached: Mutex::new(None),
        }
    }

    /// The page, rendered anew if the cached one is older than `every`.
    pub fn render(&self) -> Arc<str> {
        let mut cached = self.cached.lock().unwrap();
        match &*cached {
            Some((at, page)) if at.elapsed() < self.every => Arc::clone(page),
            _ => {
                let page: Arc<str> = self.handle.render().into();
                *cached = Some((Instant::now(), Arc::clone(&page)));
                page
            }
        }
    }

    /// Drains the histograms into their summaries; without it, samples
    /// pile up between scrapes and memory grows.
    pub fn run_upkeep(&self) {
        self.handle.run_upkeep();
    }
}

/// The Prometheus exporter, with shed's `_seconds` histograms kept as
/// fixed buckets: the exporter's default, a summary per series, grows
/// with its samples until its 60 s window fills, and quantiles from
/// several instances cannot be added up.
pub fn prometheus(
) -> Result<metrics_exporter_prometheus::PrometheusBuilder, metrics_exporter_prometheus::BuildError>
{
    metrics_exporter_prometheus::PrometheusBuilder::new().set_buckets_for_metric(
        metrics_exporter_prometheus::Matcher::Prefix("shed_".into()),
        shed::metrics::SECONDS_BUCKETS,
    )
}

/// A pool of `connections`, each query holding one for `query_time`.
pub struct Database {
    connections: Semaphore,
    query_time: Duration,
}

impl Database {
    pub fn new(connections: usize, query_time: Duration) -> Self {
        Self {
            connections: Semaphore::new(connections),
            query_time,
        }
    }

    async fn query(&self, cost: u32) -> u64 {
        let _connection = self.connections.acquire_many(cost).await.expect("open");
        tokio::time::sleep(self.query_time).await;
        u64::from(cost)
    }
}

#[shed(class = "critical", max_wait = "50ms", name = "orders::get")]
async fn order(db: Arc<Database>, id: u64) -> Result<Json<serde_json::Value>, Rejected> {
    db.query(1).await;
    Ok(Json(serde_json::json!({ "order": id, "status": "paid" })))
}

async fn cached_recommendations(_db: Arc<Database>, user: u64) -> Result<Json<Vec<u64>>, Rejected> {
    Ok(Json(vec![user % 7, 42]))
}

#[shed(class = "optional", max_wait = "10ms", name = "recommendations::get", fallback = cached_recommendations)]
async fn recommendations(db: Arc<Database>, user: u64) -> Result<Json<Vec<u64>>, Rejected> {
    db.query(1).await;
    Ok(Json(vec![user + 1, user + 2, user + 3]))
}

#[shed(
    class = "background",
    max_wait = "5ms",
    weight = 3,
    name = "reports::build"
)]
async fn report(db: Arc<Database>) -> Result<&'static str, Rejected> {
    db.query(3).await;
    Ok("report built")
}

/// The body of `PUT /admin/classes/{class}`.
#[derive(serde::Deserialize)]
struct Switch {
    enabled: bool,
}

/// `Json` rejects anything not sent as `application/json`: a cross-site
/// form or `fetch` without a preflight cannot switch a class.
async fn switch_class(
    State(app): State<App>,
    Path(class): Path<String>,
    Json(switch): Json<Switch>,
) -> impl IntoResponse {
    match app.limiter.set_class_enabled(&class, switch.enabled) {
        Ok(()) => (
            StatusCode::OK,
            format!("{class} enabled={}", switch.enabled),
        ),
        Err(unknown) => (StatusCode::NOT_FOUND, unknown.to_string()),
    }
}

/// The public route table, built once (its policies live for the process).
pub fn routes() -> &'static Routes {
    static ROUTES: OnceLock<Routes> = OnceLock::new();
    ROUTES.get_or_init(|| {
        Routes::new("critical")
            .exempt("/healthz")
            .exempt("/readyz")
            .by_handler("/orders")
            .by_handler("/recommendations")
            .by_handler("/reports")
    })
}

/// The public router, guarded by the shed layer.
pub fn router(app: App) -> Router {
    let layer = ShedLayer::new(routes().clone())
        .limiter(app.limiter.clone())
        .tenant(tenants::tenant_of);
    Router::new()
        .route(
            "/orders/{id}",
            get(|State(app): State<App>, Path(id): Path<u64>| async move {
                order(app.database, id).await
            }),
        )
        .route(
            "/recommendations/{user}",
            get(|State(app): State<App>, Path(user): Path<u64>| async move {
                recommendations(app.database, user).await
            }),
        )
        .route(
            "/reports",
            get(|State(app): State<App>| async move { report(app.database).await }),
        )
        .route("/healthz", get(|| async { "alive" }))
        .route(
            "/readyz",
            get(|State(app): State<App>| async move {
                if app.readiness.is_ready() {
                    (StatusCode::OK, "ready")
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, "shedding")
                }
            }),
        )
        .layer(layer)
        // Runs first: the shed layer reads the key's owner it records.
        .layer(axum::middleware::from_fn(tenants::authenticate))
        .with_state(app)
}

/// The admin router: bind it to localhost only.
pub fn admin_router(app: App) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(|State(app): State<App>| async move {
                app.metrics
                    .as_ref()
                    .map(|m| m.render().to_string())
                    .unwrap_or_default()
            }),
        )
        .route(
            "/admin/policies",
            get(|| async {
                Json(serde_json::json!({
                    "fns": shed::policies().to_json(),
                    "routes": routes().to_json(),
                }))
            }),
        )
        .route(
            "/admin/stats",
            get(|State(app): State<App>| async move { Json(app.limiter.stats()) }),
        )
        .route("/admin/classes/{class}", put(switch_class))
        .layer(axum::middleware::from_fn_with_state(app.clone(), authorize))
        .with_state(app)
}

/// With a token configured, every admin call must carry it.
async fn authorize(State(app): State<App>, request: Request, next: Next) -> Response {
    if let Some(token) = &app.admin_token {
        let expected = format!("Bearer {token}");
        let given = request.headers().get("authorization").map(|v| v.as_bytes());
        if given != Some(expected.as_bytes()) {
            return (StatusCode::UNAUTHORIZED, "admin token required").into_response();
        }
    }
    next.run(request).await
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let (bind, port, admin_port) = (
        env("BIND", "127.0.0.1"),
        env("PORT", "3000"),
        env("ADMIN_PORT", "9090"),
    );
    // The database's query time: 20 ms makes 800 rps of capacity.
    let query_ms: u64 = env("QUERY_MS", "20").parse()?;
    // Metrics first: the reporter registers its histograms with the
    // recorder installed here.
    let metrics = prometheus()?.install_recorder()?;
    let metrics = Arc::new(MetricsPage::new(metrics, Duration::from_secs(1)));
    {
        let metrics = Arc::clone(&metrics);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(5));
            loop {
                every.tick().await;
                metrics.run_upkeep();
            }
        });
    }
    // No capacity: the default adaptive limit learns the database's 16
    // connections, as it would any bottleneck nobody measured.
    let limiter = shed::Config::from_env()
        .tiers(shed::Tiers::new(["premium", "free"]))
        .install()
        .map_err(|problems| format!("{problems}"))?
        .clone();
    shed::metrics::spawn_reporter(limiter.clone(), Duration::from_secs(1));
    println!("{}", shed::policies());

    let app = App {
        // Not ready while the runtime lags (a blocking handler, a starved
        // machine): the complementary signal to queue wait, never a
        // reason to shed on its own.
        readiness: Readiness::new(limiter.clone())
            .lag(shed::LagProbe::builder().spawn())
            .start(),
        database: Arc::new(Database::new(16, Duration::from_millis(query_ms))),
        limiter,
        metrics: Some(metrics),
        admin_token: std::env::var("ADMIN_TOKEN").ok().map(Into::into),
    };
    if let Ok(agent_port) = std::env::var("AGENT_PORT") {
        let agent = tokio::net::TcpListener::bind(format!("127.0.0.1:{agent_port}")).await?;
        let reporter = Arc::new(shed::LoadReporter::new(app.limiter.clone()));
        // The weight already follows the refusals. Draining on the
        // refusal-rate readiness would drain every instance at once when
        // the whole fleet is overloaded, and HAProxy would then refuse
        // everything (measured: no goodput at all, scripts/fleet-haproxy.sh).
        tokio::spawn(shed::serve_agent_check(agent, reporter, || true));
    }
    let admin = tokio::net::TcpListener::bind(format!("127.0.0.1:{admin_port}")).await?;
    println!("admin on http://{}", admin.local_addr()?);
    let admin_app = admin_router(app.clone());
    tokio::spawn(async move { axum::serve(admin, admin_app).await });

    let listener = tokio::net::TcpListener::bind(format!("{bind}:{port}")).await?;
    let limits = conn::Limits::default();
    println!(
        "listening on http://{} ({} connections at most)",
        listener.local_addr()?,
        limits.max_connections
    );
    conn::serve(listener, router(app), limits, Arc::default()).await;
    Ok(())
}

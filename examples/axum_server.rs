//! A real axum service guarded by `shed`.
//!
//! ```text
//! cargo run --release --example axum_server --features axum
//! PORT=8080 SHED_CLASSES=background=off cargo run --release --example axum_server --features axum
//! ```
//!
//! Routes:
//! - `GET /orders/{id}`: interactive, class `critical`;
//! - `GET /recommendations/{user}`: class `optional`, falls back to a
//!   cached answer instead of refusing;
//! - `GET /reports`: background, three slots a call;
//! - `GET /healthz`: liveness, never shed; `GET /readyz`: not ready while
//!   the instance refuses more than 20% of calls;
//! - `GET /metrics`: Prometheus text; `GET /admin/policies`: the policy
//!   table as JSON; `POST /admin/classes/{class}/{on|off}` switches a
//!   class (put admin routes behind authentication in a real service).
//!
//! The handlers share a "database" of a few connections, the bottleneck
//! the limiter protects: with shedding off (`SHED_MODE=off`) calls pile
//! up in front of it, as they would in front of a real pool.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use shed::http::{Routes, ShedLayer};
use shed::{shed, Limiter, Readiness, Rejected};
use tokio::sync::Semaphore;

/// The service's state: its limiter, its readiness and its bottleneck.
#[derive(Clone)]
pub struct App {
    pub limiter: Limiter,
    pub readiness: Arc<Readiness>,
    pub database: Arc<Database>,
    pub metrics: Option<metrics_exporter_prometheus::PrometheusHandle>,
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

async fn switch_class(
    State(app): State<App>,
    Path((class, state)): Path<(String, String)>,
) -> impl IntoResponse {
    let enabled = match state.as_str() {
        "on" => true,
        "off" => false,
        _ => return (StatusCode::BAD_REQUEST, "expected on or off".to_string()),
    };
    match app.limiter.set_class_enabled(&class, enabled) {
        Ok(()) => (StatusCode::OK, format!("{class} {state}")),
        Err(unknown) => (StatusCode::NOT_FOUND, unknown.to_string()),
    }
}

/// The router, guarded by the shed layer.
pub fn router(app: App) -> Router {
    let layer = ShedLayer::new(
        Routes::new("critical")
            .exempt("/healthz")
            .exempt("/readyz")
            .exempt("/metrics")
            .by_handler("/admin")
            .by_handler("/orders")
            .by_handler("/recommendations")
            .by_handler("/reports"),
    )
    .limiter(app.limiter.clone());
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
        .route(
            "/metrics",
            get(|State(app): State<App>| async move {
                app.metrics.as_ref().map(|m| m.render()).unwrap_or_default()
            }),
        )
        .route(
            "/admin/policies",
            get(|| async { Json(shed::policies().to_json()) }),
        )
        .route("/admin/classes/{class}/{state}", post(switch_class))
        .layer(layer)
        .with_state(app)
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = std::env::var("PORT").unwrap_or_else(|_| "3000".into());
    // Metrics first: the reporter registers its histograms with the
    // recorder installed here.
    let metrics = metrics_exporter_prometheus::PrometheusBuilder::new().install_recorder()?;
    let limiter = shed::Config::from_env()
        .capacity(16)
        .install()
        .map_err(|problems| format!("{problems}"))?
        .clone();
    shed::metrics::spawn_reporter(limiter.clone(), Duration::from_secs(1));
    println!("{}", shed::policies());

    let app = App {
        readiness: Arc::new(Readiness::new(limiter.clone())),
        database: Arc::new(Database::new(16, Duration::from_millis(20))),
        limiter,
        metrics: Some(metrics),
    };
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}")).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, router(app)).await?;
    Ok(())
}

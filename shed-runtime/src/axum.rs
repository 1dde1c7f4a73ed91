//! axum (feature `axum`): a refusal is a response, so `#[shed]` works on
//! handlers returning `Result<T, shed::Rejected>` or an error type that
//! converts from it.
//!
//! ```
//! use axum_core::response::IntoResponse;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let limiter = shed_runtime::Limiter::builder().build().unwrap();
//! limiter.set_class_enabled("background", false).unwrap();
//! let refused = limiter.acquire("background", 1, "GET /report").await.unwrap_err();
//! let response = refused.into_response();
//! assert_eq!(response.status(), 503);
//! assert!(response.headers().contains_key("retry-after"));
//! # }
//! ```

use axum_core::response::{IntoResponse, Response};

use crate::Rejected;

impl IntoResponse for Rejected {
    fn into_response(self) -> Response {
        crate::http::refusal_response(&self)
    }
}

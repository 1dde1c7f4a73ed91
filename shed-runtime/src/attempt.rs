//! Which attempt of its caller's request a task serves: 1 for a first
//! attempt, 2 and more for retries. Integrations set it from the request
//! (the HTTP layer reads `grpc-previous-rpc-attempts`,
//! `x-envoy-attempt-count` and `x-shed-attempt`), so handlers and metrics
//! can tell a retry from a first attempt.

use std::future::Future;

/// Runs `future` as attempt `attempt` (1 = the first) of its caller's
/// request. `0` is read as 1.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// assert_eq!(shed_runtime::attempt(), 1, "outside any scope: a first attempt");
/// shed_runtime::with_attempt(3, async {
///     assert_eq!(shed_runtime::attempt(), 3);
/// })
/// .await;
/// # }
/// ```
pub fn with_attempt<F: Future>(attempt: u32, future: F) -> impl Future<Output = F::Output> {
    crate::context::scope_attempt(attempt, future)
}

/// The current task's attempt number: 1 unless an integration or
/// [`with_attempt`] said this is a retry.
pub fn attempt() -> u32 {
    crate::context::current_attempt()
}

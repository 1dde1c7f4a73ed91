//! The caller's deadline, carried task-locally through everything a future
//! awaits, nested guarded calls included.

use std::future::Future;

use tokio::time::{Duration, Instant};

/// Runs `future` with `deadline` as the caller's deadline. Guarded calls
/// inside it refuse to start (reason `deadline`) when the time left is
/// shorter than their expected service time. A deadline nested inside
/// another can only tighten it: the earlier of the two applies.
///
/// ```
/// use std::time::Duration;
/// use tokio::time::Instant;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let soon = Instant::now() + Duration::from_millis(200);
/// shed_runtime::with_deadline(soon, async {
///     assert_eq!(shed_runtime::deadline(), Some(soon));
///     let later = soon + Duration::from_secs(1);
///     shed_runtime::with_deadline(later, async {
///         assert_eq!(shed_runtime::deadline(), Some(soon), "inner deadlines only tighten");
///     })
///     .await;
/// })
/// .await;
/// # }
/// ```
pub fn with_deadline<F: Future>(deadline: Instant, future: F) -> impl Future<Output = F::Output> {
    crate::context::scope_deadline(deadline, future)
}

/// Runs `future` with a deadline `budget` from now (see [`with_deadline`]).
///
/// It sets the deadline guarded calls are admitted against; it does not
/// cancel `future` when the time is up. To also stop waiting, wrap it in
/// `tokio::time::timeout` with the same budget.
///
/// ```
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let answer = shed_runtime::with_deadline_in(Duration::from_millis(200), async {
///     assert!(shed_runtime::deadline().is_some());
///     42
/// })
/// .await;
/// assert_eq!(answer, 42);
/// # }
/// ```
pub fn with_deadline_in<F: Future>(budget: Duration, future: F) -> impl Future<Output = F::Output> {
    with_deadline(after(Instant::now(), budget), future)
}

/// How far ahead [`after`] puts a time the clock cannot hold: about 30
/// years, as tokio does for a sleep of `Duration::MAX`.
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// The instant `wait` after `at`, or, for a wait past what the clock can
/// hold (`Duration::MAX` is how callers say "no limit"), about 30 years
/// after it: `Instant + Duration` panics on overflow, in the caller's
/// task.
pub(crate) fn after(at: Instant, wait: Duration) -> Instant {
    at.checked_add(wait)
        .unwrap_or_else(|| at.checked_add(FAR_FUTURE).unwrap_or(at))
}

/// The current task's deadline, if the caller set one.
pub fn deadline() -> Option<Instant> {
    crate::context::current_deadline()
}

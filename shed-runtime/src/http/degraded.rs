//! Marks responses answered by a fallback, so that a degraded answer is
//! visible to the client (`shed-degraded: fallback`) and counted.

use std::cell::Cell;
use std::future::Future;

use http::HeaderValue;

/// The header a response answered by a `#[shed]` fallback carries.
pub const DEGRADED_HEADER: &str = "shed-degraded";

/// Its value.
pub const DEGRADED_FALLBACK: HeaderValue = HeaderValue::from_static("fallback");

tokio::task_local! {
    static FELL_BACK: Cell<bool>;
}

/// Called when a guarded fn answers with its fallback: marks the request
/// being served by the HTTP layer, if any.
pub(crate) fn note_fallback() {
    let _ = FELL_BACK.try_with(|fell_back| fell_back.set(true));
}

/// Runs `future` (the inner service) and says whether a fallback answered
/// while it ran.
pub(crate) async fn watch<F: Future>(future: F) -> (F::Output, bool) {
    FELL_BACK
        .scope(Cell::new(false), async move {
            let output = future.await;
            (output, FELL_BACK.with(Cell::get))
        })
        .await
}

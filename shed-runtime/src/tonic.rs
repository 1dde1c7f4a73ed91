//! gRPC (feature `tonic`): a refusal is a status the way gRPC clients
//! expect, so a `#[shed]` fn returning `Result<T, tonic::Status>` refuses
//! properly:
//!
//! - refused because of the load: `UNAVAILABLE` with a retry pushback of
//!   the (jittered) suggestion in milliseconds;
//! - a deadline shorter than the call takes: `DEADLINE_EXCEEDED`, no
//!   pushback (retrying with the same deadline will not help);
//! - a switched-off class or a call that can never fit: `UNAVAILABLE`
//!   with a negative pushback, which tells gRPC clients not to retry
//!   (gRFC A6).
//!
//! The status message names the refused fn only if
//! [`Rejected::expose_names_to_clients`] was turned on.

use crate::Rejected;

/// The trailer that tells gRPC clients when to retry (gRPC A6).
pub const RETRY_PUSHBACK: &str = "grpc-retry-pushback-ms";

impl From<Rejected> for tonic::Status {
    fn from(rejected: Rejected) -> Self {
        let message = rejected.client_message();
        if rejected.is_unmeetable_deadline() {
            return tonic::Status::deadline_exceeded(message);
        }
        let mut status = tonic::Status::unavailable(message);
        let pushback = if rejected.is_retryable() {
            let millis = rejected.retry_after().as_millis().min(u128::from(u32::MAX));
            millis.to_string()
        } else {
            "-1".to_string()
        };
        if let Ok(value) = pushback.parse() {
            status.metadata_mut().insert(RETRY_PUSHBACK, value);
        }
        status
    }
}

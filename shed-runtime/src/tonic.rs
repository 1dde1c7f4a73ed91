//! gRPC (feature `tonic`): a refusal is `UNAVAILABLE` with a retry
//! pushback, so a `#[shed]` fn returning `Result<T, tonic::Status>`
//! refuses the way gRPC clients expect.

use crate::Rejected;

/// The trailer that tells gRPC clients when to retry (gRPC A6).
pub const RETRY_PUSHBACK: &str = "grpc-retry-pushback-ms";

impl From<Rejected> for tonic::Status {
    fn from(rejected: Rejected) -> Self {
        let mut status = tonic::Status::unavailable(rejected.to_string());
        let millis = rejected.retry_after().as_millis().min(u128::from(u32::MAX));
        if let Ok(value) = millis.to_string().parse() {
            status.metadata_mut().insert(RETRY_PUSHBACK, value);
        }
        status
    }
}

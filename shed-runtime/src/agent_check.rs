//! HAProxy's agent check (feature `http`): a small TCP server that answers
//! each connection with one line saying how much traffic this instance
//! wants, from its limiter's load (see
//! [`LoadReport::agent_check_reply`](crate::LoadReport::agent_check_reply)).
//!
//! ```text
//! backend app
//!     server a 127.0.0.1:8080 check agent-check agent-port 8081 agent-inter 1s weight 100
//! ```

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use crate::LoadReporter;

/// Answers HAProxy's agent checks on `listener` until the returned future
/// is dropped: `up NN%` while `ready()` says so, with the share of calls
/// not refused as the weight, and `drain` otherwise. A check that does not
/// read its answer within a second is dropped.
pub async fn serve_agent_check(
    listener: TcpListener,
    reporter: Arc<LoadReporter>,
    ready: impl Fn() -> bool + Send + Sync + 'static,
) {
    loop {
        let Ok((mut socket, _)) = listener.accept().await else {
            // Out of file descriptors, say: try again shortly rather
            // than spin.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let reply = reporter.report().agent_check_reply(ready());
        tokio::spawn(async move {
            let write = async {
                socket.write_all(reply.as_bytes()).await?;
                socket.shutdown().await
            };
            let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
        });
    }
}

//! The example service and shed's layers over real loopback sockets, on
//! the wall clock, in one binary (each module was a test binary of its
//! own; each compiled the example server and hyper again and linked
//! again).
//!
//! Real sockets measure in wall-clock time, so the tests that drive load
//! take [`ONE_AT_A_TIME`]: one test's connections never starve another's
//! measurement, as when each file ran alone. Their assertions count
//! answers and keep wide margins.

/// The example service (`examples/axum_server`), built as a module.
#[allow(dead_code)]
#[path = "../../examples/axum_server/main.rs"]
mod server;

/// Load generators shared with the examples that run the long versions.
#[allow(dead_code)]
#[path = "../support"]
mod support {
    pub mod load;
    pub mod retries;
}

mod client_retries;
mod fleet_signals;
mod hostile_heads;
mod load_test;
mod metrics_page;
mod stalled_reader;
mod tenants_socket;
mod vanishing_clients;

/// Held by each test that drives load over sockets.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

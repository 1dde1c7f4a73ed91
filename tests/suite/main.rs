//! `#[shed]` and the HTTP layers in process (on tokio's paused clock), in
//! one binary (each module was a test binary of its own, and each of
//! those compiled and linked axum, hyper and the runtime's generic code
//! again). The tests that read the environment or the process-wide policy
//! table at startup (`env_switch`, `env_malformed`, `startup_check`) stay
//! binaries of their own, and so do the tests over real sockets
//! (`sockets`).

mod attribute;
mod http_layer;
mod tenant_attribute;

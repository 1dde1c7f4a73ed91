//! The runtime's behaviour tests, in one binary. Each module was a test
//! binary of its own, and each of those compiled its generic tokio and
//! runtime code again and linked again: most of the suite's build time.
//! Tests that install a process-wide metrics recorder
//! (`overload_metrics`, `panicking_recorder`) stay binaries of their own,
//! as do the stress and property tests, which run in release mode on
//! their own too, and the source scan of `module_cycles`.
//!
//! Run one file's tests with its module path, for example
//! `cargo test -p shed-runtime --test behaviour tenants::`.

mod cohorts;
mod discipline;
mod lag;
mod limiter;
mod metric_series;
mod no_runtime;
mod overload;
mod regressions;
mod retries;
mod tenants;
mod warm_up;

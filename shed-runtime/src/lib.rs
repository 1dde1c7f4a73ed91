//! The runtime of [`shed`](https://docs.rs/shed): the admission limiter,
//! priority classes, deadlines, the policy table and configuration.
//!
//! Applications depend on the `shed` crate, which re-exports this one and
//! adds the `#[shed]` attribute.
//!
//! # Runtime
//!
//! tokio is a public dependency: deadlines are `tokio::time::Instant`s and
//! a call waits for slots on tokio's timer. A call that would have to wait
//! outside a tokio runtime is refused with [`Reason::NoRuntime`]; in a
//! runtime without time enabled, tokio panics ("timers are disabled").
//!
//! # Layout
//!
//! The modules depend on each other without cycles (a test,
//! `tests/module_cycles.rs`, fails on a new one). From the bottom up:
//!
//! - leaves: `sync`, `mode`, `rejected`, `estimate`, `retry_after`,
//!   `lag`, `class` (what a class is configured with), `policy` (the
//!   `#[shed]` table; uses `estimate`), `context` (what a task carries:
//!   deadline, tenant, attempt, and the scoped limiter as an opaque
//!   handle), and `deadline`, `attempt`, `tenant` over it;
//! - `limiter`: the slots, the wait queue and everything the limiter
//!   owns: each class's live state, the counters, the measurement
//!   window. It calls a capacity controller only through its
//!   `Controller` trait;
//! - over the limiter, reading it: `adaptive` (implements `Controller`),
//!   `metrics` (publishes the counters), `overload`, `readiness`,
//!   `load_report`;
//! - `config` builds a limiter (over `adaptive` and `limiter`);
//!   `global` is the process-wide limiter, built from a `config`;
//!   `guard` is what `#[shed]` expands to (over `global`);
//! - the integrations: `http` (and `axum`, `tonic`, `client`,
//!   `agent_check`).
#![warn(missing_docs)]
// docs.rs builds with `--cfg docsrs` (see Cargo.toml): items behind a
// feature carry a badge that names it.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod adaptive;
#[cfg(feature = "http")]
mod agent_check;

mod attempt;
#[cfg(feature = "axum")]
#[cfg_attr(docsrs, doc(cfg(feature = "axum")))]
mod axum;
mod class;
#[cfg(feature = "client")]
pub mod client;
mod config;
mod context;
mod deadline;
mod estimate;
mod global;
mod guard;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
mod lag;
mod limiter;
mod load_report;
pub mod metrics;
mod mode;
mod overload;
mod policy;
mod readiness;
mod rejected;
mod retry_after;
mod sync;
mod tenant;
#[cfg(feature = "tonic")]
#[cfg_attr(docsrs, doc(cfg(feature = "tonic")))]
pub mod tonic;
#[cfg(test)]
mod tracing_capture;

#[cfg(feature = "http")]
pub use agent_check::serve_agent_check;

pub use attempt::{attempt, with_attempt};
pub use class::{ClassSpec, UnknownClass};
pub use config::{
    Config, ConfigErrors, Problem, DEFAULT_CAPACITY, ENV_CAPACITY, ENV_CLASSES, ENV_MODE,
};
pub use deadline::{deadline, with_deadline, with_deadline_in};
pub use lag::{LagProbe, LagProbeBuilder};
pub use limiter::discipline::Codel;
pub use limiter::heavy::HeaviestTenants;
pub use limiter::warm_up::ENV_WARM_UP;
pub use limiter::{Admission, Limiter, Permit};
pub use load_report::{LoadReport, LoadReporter};
pub use metrics::{ClassStats, LimiterStats};
pub use mode::{Mode, UnknownMode};
pub use overload::{OverloadController, OverloadState};
pub use policy::{policies, Policy, PolicyTable};
pub use readiness::Readiness;
pub use rejected::{FromRejected, Reason, Rejected};
pub use tenant::{with_tenant, with_tenant_plan, Tenant, Tiers};

/// Not public API: used by code that `#[shed]` generates.
#[doc(hidden)]
pub mod __private {
    pub use crate::guard::{admit, admit_rest, count_fallback, try_admit, Decision, NotYet};

    /// [`admit`] as a call of tenant `key` (`#[shed(tenant = ...)]`).
    pub fn admit_for_tenant<K: core::hash::Hash + ?Sized>(
        policy: &'static Policy,
        key: &K,
    ) -> Decision {
        crate::context::sync_scope_tenant(crate::tenant::tenant_hash(key), || admit(policy))
    }

    /// The value a refused call returns, in the fn's own return type.
    #[inline]
    pub fn refuse<T: crate::FromRejected>(rejected: crate::Rejected) -> T {
        T::from_rejected(rejected)
    }
    pub use crate::policy::{Policy, Registration};
    pub use core::time::Duration;
    pub use inventory;
}

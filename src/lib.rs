//! Load shedding for async Rust services.
//!
//! An async service under overload accepts everything and serves almost
//! nothing: queues grow, callers time out, and the server spends its
//! capacity on answers nobody waits for. `shed` refuses some work early and
//! cheaply so that what it admits finishes inside its deadline.
//!
//! ```
//! use shed::{shed, Rejected};
//!
//! #[derive(Debug)]
//! enum ReportError {
//!     Busy(Rejected),
//! }
//!
//! impl From<Rejected> for ReportError {
//!     fn from(r: Rejected) -> Self {
//!         ReportError::Busy(r)
//!     }
//! }
//!
//! /// Builds a report: cheap to postpone, so it is shed first.
//! #[shed(class = "background", max_wait = "5ms", weight = 3)]
//! async fn build_report(id: u64) -> Result<String, ReportError> {
//!     Ok(format!("report {id}"))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! assert_eq!(build_report(7).await.unwrap(), "report 7");
//! let table = shed::policies();
//! let policy = table.get("rust_out::build_report").expect("registered");
//! assert_eq!((policy.class(), policy.weight()), ("background", 3));
//! # }
//! ```
//!
//! # Runtime
//!
//! `shed` runs on tokio, a public dependency: [`with_deadline`] and
//! [`deadline`] take and return `tokio::time::Instant`, and a call that
//! has to wait for a slot waits on tokio's timer, so it must run inside a
//! tokio runtime with time enabled (`#[tokio::main]` and `#[tokio::test]`
//! enable it). A major version of tokio that changes these types is a
//! major version of `shed`. A call admitted at once needs no runtime; one
//! that would have to wait, polled outside a tokio runtime (another
//! executor, a plain thread), is refused with [`Reason::NoRuntime`]
//! rather than panicking. In a runtime built without time
//! (`enable_time`), tokio itself panics: "timers are disabled".
//!
//! # The attribute
//!
//! `#[shed(...)]` goes on an `async fn` (free fn, method, trait impl
//! method, generic or not). Each call first asks the current limiter (the
//! process-wide one unless [`Limiter::scope`] set another) for `weight`
//! slots; the body runs only once they are granted, and gives them back
//! when it completes, panics, or is dropped at any await point. A call is
//! refused, without running, when
//!
//! - its class is switched off ([`Reason::Disabled`]),
//! - its caller's deadline ([`with_deadline`]) is closer than the fn's
//!   learned service time ([`Reason::Deadline`]),
//! - it waited longer than `max_wait` for slots ([`Reason::MaxWait`]),
//! - or the bounded wait queue is full ([`Reason::QueueFull`]).
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `class = "background"` | `"critical"` | the priority class |
//! | `max_wait = "5ms"` | the class's | the queue-wait budget (`"500us"`, `"1.5s"`, ...; at most 1h) |
//! | `weight = 3` | 1 | slots one call holds |
//! | `name = "orders::create"` | `module::path::fn`, `module::path::Type::fn` for methods | the name in the policy table and refusals (the default is for reading: give a `name` that dashboards may depend on) |
//! | `fallback = cached` | none | an async fn with the same arguments and return type, called instead of refusing (counted as a fallback) |
//! | `crate = "my_shed"` | `::shed` | the path of this crate, if it was renamed |
//!
//! A refused call returns [`FromRejected::from_rejected`] of the
//! [`Rejected`]: any `Result<T, E>` with `E: From<Rejected>` works, and
//! other return types opt in by implementing [`FromRejected`].
//!
//! # The policy table and the startup check
//!
//! Every annotated fn is registered at program start; [`policies()`] lists
//! them and [`Config::check`] checks them against the configuration,
//! returning every problem at once with its file and line:
//!
//! ```
//! let config = shed::Config::from_env().capacity(128);
//! if let Err(problems) = config.check() {
//!     panic!("{problems}");
//! }
//! println!("{}", shed::policies());
//! ```
//!
//! # Switching classes from the environment
//!
//! `SHED_CLASSES=background=off,optional=on` switches classes without a
//! rebuild; `SHED_MODE=enforce|observe|off` sets the mode; `SHED_CAPACITY`
//! the capacity. The process-wide limiter honours them even if the
//! application never configures anything.

// docs.rs builds with `--cfg docsrs` (see Cargo.toml): items behind a
// feature carry a badge that names it.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use shed_macros::shed;
pub use shed_runtime::adaptive;
pub use shed_runtime::{
    attempt, deadline, metrics, policies, with_deadline, with_deadline_in, Admission, ClassSpec,
    ClassStats, Codel, Config, ConfigErrors, FromRejected, LagProbe, LagProbeBuilder, Limiter,
    LimiterStats, LoadReport, LoadReporter, Mode, OverloadController, OverloadState, Permit,
    Policy, PolicyTable, Problem, Readiness, Reason, Rejected, UnknownClass, UnknownMode,
    DEFAULT_CAPACITY, ENV_CAPACITY, ENV_CLASSES, ENV_MODE,
};
pub use shed_runtime::{with_attempt, with_tenant};
pub use shed_runtime::{with_tenant_plan, HeaviestTenants, Tenant, Tiers};

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use shed_runtime::http;
#[cfg(feature = "http")]
pub use shed_runtime::serve_agent_check;
#[cfg(feature = "tonic")]
#[cfg_attr(docsrs, doc(cfg(feature = "tonic")))]
pub use shed_runtime::tonic;

#[cfg(feature = "client")]
pub use shed_runtime::client;

/// Runs `work` under `policy` exactly as a `#[shed]` fn with that policy
/// would: it waits for the policy's slots on the current limiter and runs
/// only if admitted, holding the slots until it completes or is dropped.
///
/// For work whose policy is chosen at run time ([`Policy::leak`]): routes,
/// simulated traffic.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let policy = shed::Policy::leak("GET /search", "optional", None, 1);
/// let answer = shed::run_guarded(policy, async { 42 }).await;
/// assert_eq!(answer.unwrap(), 42);
/// # }
/// ```
pub async fn run_guarded<F: std::future::Future>(
    policy: &'static Policy,
    work: F,
) -> Result<F::Output, Rejected> {
    let _permit = match __private::admit(policy) {
        __private::Decision::Admitted(permit) => permit,
        __private::Decision::Refused(rejected) => return Err(rejected),
        __private::Decision::Wait(admission) => admission.await?,
    };
    Ok(work.await)
}

/// The README's examples, compiled as doctests so they cannot rot.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// Not public API: used by code that `#[shed]` generates.
#[doc(hidden)]
pub mod __private {
    pub use shed_runtime::__private::*;
}

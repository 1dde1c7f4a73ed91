//! The typed refusal that a guarded call returns instead of running.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Why a call was refused. Every refusal is counted by class and reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Reason {
    /// The call's class is switched off (`SHED_CLASSES=background=off`, or at run time).
    Disabled,
    /// The caller's remaining deadline is shorter than the fn's expected
    /// service time: it cannot finish in time, so it is not started.
    Deadline,
    /// The call waited for slots longer than its `max_wait` budget.
    MaxWait,
    /// The wait queue was full (bounded by total queued weight), or the call
    /// was evicted from it by a higher-priority arrival.
    QueueFull,
    /// The call's class is not configured on the limiter. The startup check
    /// ([`Config::check`](crate::Config::check)) reports this before traffic arrives.
    UnknownClass,
    /// The call asks for more slots than the limiter will ever have.
    TooHeavy,
    /// The limiter is shedding to get out of overload: the queue stands
    /// (CoDel) or the overload controller is holding the class back.
    Overload,
    /// The call had to wait for slots, but its admission was polled
    /// outside a tokio runtime, where it cannot wait (waiting needs
    /// tokio's timer). Not retryable: the same call fails the same way.
    NoRuntime,
}

impl Reason {
    /// Every reason, in a stable order: the order of the metrics arrays
    /// and of the queue's status codes. Not public, so that a new reason
    /// does not change a public type: see [`Reason::all`].
    pub(crate) const ALL: [Reason; 8] = [
        Reason::Disabled,
        Reason::Deadline,
        Reason::MaxWait,
        Reason::QueueFull,
        Reason::UnknownClass,
        Reason::TooHeavy,
        Reason::Overload,
        Reason::NoRuntime,
    ];

    /// Every reason, in a stable order. A later release may add reasons
    /// (the enum is `#[non_exhaustive]`), which lengthens the slice.
    ///
    /// ```
    /// let labels: Vec<_> = shed_runtime::Reason::all().iter().map(|r| r.as_str()).collect();
    /// assert!(labels.contains(&"max_wait"));
    /// ```
    pub fn all() -> &'static [Reason] {
        &Self::ALL
    }

    /// The label used in metrics, JSON and HTTP problem bodies.
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::Disabled => "disabled",
            Reason::Deadline => "deadline",
            Reason::MaxWait => "max_wait",
            Reason::QueueFull => "queue_full",
            Reason::UnknownClass => "unknown_class",
            Reason::TooHeavy => "too_heavy",
            Reason::Overload => "overload",
            Reason::NoRuntime => "no_runtime",
        }
    }

    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A call refused by the limiter: it did not run and held no slot, so a
/// retry is always *safe*; [`is_retryable`](Rejected::is_retryable) says
/// whether one is likely to *succeed* soon.
///
/// ```
/// use shed_runtime::{Limiter, Reason};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let limiter = Limiter::builder().capacity(4).build().unwrap();
/// limiter.set_class_enabled("background", false).unwrap();
/// let refused = limiter
///     .acquire("background", 1, "report::build")
///     .await
///     .unwrap_err();
/// assert_eq!(refused.reason(), Reason::Disabled);
/// assert_eq!(refused.class(), "background");
/// assert!(!refused.is_retryable(), "switched off: not soon");
/// assert_eq!(
///     refused.to_string(),
///     "shed refused `report::build` (class `background`): class is switched off; not retryable soon"
/// );
/// // What a client is told leaves the fn's name out.
/// assert_eq!(refused.client_message(), "refused (class `background`): class is switched off");
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    reason: Reason,
    class: &'static str,
    name: &'static str,
    retry_after: Duration,
    retryable: bool,
}

/// Whether clients are told the name of the refused fn or route.
static EXPOSE_NAMES: AtomicBool = AtomicBool::new(false);

impl Rejected {
    pub(crate) fn new(
        reason: Reason,
        class: &'static str,
        name: &'static str,
        retry_after: Duration,
    ) -> Self {
        Self {
            reason,
            class,
            name,
            retry_after,
            retryable: !matches!(
                reason,
                Reason::Disabled | Reason::UnknownClass | Reason::TooHeavy | Reason::NoRuntime
            ),
        }
    }

    /// Marks a deadline refusal as one the same deadline can never pass.
    pub(crate) fn unmeetable(mut self) -> Self {
        self.retryable = false;
        self
    }

    /// Why the call was refused.
    pub fn reason(&self) -> Reason {
        self.reason
    }

    /// The class of the refused call.
    pub fn class(&self) -> &'static str {
        self.class
    }

    /// The name of the guarded fn (or route) that was refused.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// A suggested delay before retrying: for refusals caused by the load,
    /// how long the limiter's backlog takes to drain, at least a second,
    /// with ±30% of random jitter so refused callers do not come back
    /// together. HTTP integrations send it as `Retry-After`, gRPC as
    /// `grpc-retry-pushback-ms`.
    pub fn retry_after(&self) -> Duration {
        self.retry_after
    }

    /// Whether retrying the same call soon may succeed: `true` for
    /// refusals caused by the load (queue full, waited too long, shedding
    /// to recover, a deadline that ran out while queued); `false` when the
    /// class is switched off, the call can never fit, or the caller's
    /// deadline is shorter than the call takes on an idle server (a retry
    /// with the same deadline fails again).
    pub fn is_retryable(&self) -> bool {
        self.retryable
    }

    /// Whether the deadline was refused as one that cannot be met at all,
    /// rather than one that ran out while the call waited.
    pub fn is_unmeetable_deadline(&self) -> bool {
        self.reason == Reason::Deadline && !self.retryable
    }

    /// Whether refusals sent to clients (HTTP problem bodies, gRPC status
    /// messages) name the refused fn or route. Off by default: names are
    /// internal (`module::fn`). Turn it on for internal services whose
    /// callers may know them.
    pub fn expose_names_to_clients(expose: bool) {
        EXPOSE_NAMES.store(expose, Ordering::Relaxed);
    }

    /// Whether clients are told names (see
    /// [`expose_names_to_clients`](Rejected::expose_names_to_clients)).
    pub fn names_exposed_to_clients() -> bool {
        EXPOSE_NAMES.load(Ordering::Relaxed)
    }

    /// The refusal as a client may read it: the class and the reason, and
    /// the name only if names are exposed.
    pub fn client_message(&self) -> String {
        let what = if Self::names_exposed_to_clients() {
            format!("refused `{}`", self.name)
        } else {
            "refused".to_string()
        };
        format!("{what} (class `{}`): {}", self.class, self.why())
    }

    fn why(&self) -> &'static str {
        match self.reason {
            Reason::Disabled => "class is switched off",
            Reason::Deadline if !self.retryable => {
                "the caller's deadline is shorter than the call takes"
            }
            Reason::Deadline => "the caller's deadline cannot be met",
            Reason::MaxWait => "waited longer than its max_wait",
            Reason::QueueFull => "the wait queue is full",
            Reason::UnknownClass => "its class is not configured",
            Reason::TooHeavy => "its weight exceeds the capacity",
            Reason::Overload => "the service is shedding to recover from overload",
            Reason::NoRuntime => "it had to wait for slots outside a tokio runtime",
        }
    }
}

impl fmt::Display for Rejected {
    /// For logs: names the refused fn.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "shed refused `{}` (class `{}`): {}; ",
            self.name,
            self.class,
            self.why()
        )?;
        if self.retryable {
            write!(
                f,
                "retry after {}",
                humantime::format_duration(self.retry_after)
            )
        } else {
            f.write_str("not retryable soon")
        }
    }
}

impl std::error::Error for Rejected {}

/// How a guarded fn's return type carries a refusal.
///
/// `#[shed]` returns `FromRejected::from_rejected(rejected)` instead of
/// running the body when a call is refused. It is implemented for every
/// `Result<T, E>` whose error converts from [`Rejected`]; implement it for
/// your own return types (HTTP responses, for example) to opt in.
///
/// ```
/// use shed_runtime::{FromRejected, Rejected};
///
/// enum Reply { Ok(String), Busy { retry_after_secs: u64 } }
///
/// impl FromRejected for Reply {
///     fn from_rejected(rejected: Rejected) -> Self {
///         Reply::Busy { retry_after_secs: rejected.retry_after().as_secs().max(1) }
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`#[shed]` cannot return a refusal from a fn returning `{Self}`",
    label = "this return type cannot carry a `shed::Rejected`",
    note = "return `Result<T, E>` where `E: From<shed::Rejected>` (for example `Result<T, shed::Rejected>`), or implement `shed::FromRejected` for `{Self}`"
)]
pub trait FromRejected {
    /// Builds the value returned by a refused call.
    fn from_rejected(rejected: Rejected) -> Self;
}

impl<T, E: From<Rejected>> FromRejected for Result<T, E> {
    fn from_rejected(rejected: Rejected) -> Self {
        Err(E::from(rejected))
    }
}

//! What `#[shed]` expands to: the admission of a guarded call on the
//! current limiter (the scoped one, else the process-wide one), decided
//! inline when no wait is needed.

use tokio::time::Instant;

pub use crate::limiter::Decision;
use crate::limiter::{Held, Limiter, NotAtOnce, Request};
use crate::policy::Policy;

impl Held {
    /// The limiter guarded calls use here, the caller's deadline, and
    /// whether the caller runs in a call context.
    // Always: on the fast path that `guard::admit` inlines into every
    // `#[shed]` fn; left to itself the compiler calls it out of line.
    #[inline(always)]
    fn current() -> (Held, Option<Instant>, bool) {
        let context = crate::context::current();
        let in_context = context.is_some();
        let (scoped, deadline) = context.unwrap_or((None, None));
        let held = match scoped {
            Some(scoped) => Held::scoped(Limiter::from_scoped(scoped).inner),
            None => Held::global(&Limiter::global().inner),
        };
        (held, deadline, in_context)
    }
}

/// Not public API: counts a refusal of `policy` answered by its fallback.
#[doc(hidden)]
pub fn count_fallback(policy: &'static Policy) {
    let held = Held::current().0;
    if let Ok(class) = held.policy_class(policy) {
        held.count_fallback(class);
    }
    #[cfg(feature = "http")]
    crate::http::note_fallback();
}

/// Not public API: what `#[shed]` expands to.
///
/// The common case (slots free, no deadline, the class's index cached in
/// the policy) is decided inline in the guarded fn with one task-local
/// lookup (none until a call context was ever entered) and one
/// compare-and-swap; a call that then found no room goes straight to the
/// waiting half of [`Held::decide`] ([`Held::wait_after_fast_path`]),
/// everything else through all of it, out of line, so that the inline
/// part stays small.
#[doc(hidden)]
// Always: on the fast path that `guard::admit` inlines into every
// `#[shed]` fn; left to itself the compiler calls it out of line.
#[inline(always)]
pub fn admit(policy: &'static Policy) -> Decision {
    let (held, deadline, in_context) = Held::current();
    if let (None, Some(class)) = (deadline, policy.stats.bound_class(held.id)) {
        return at_once(held, class, policy, in_context);
    }
    admit_after_fast_path(held, deadline, in_context, policy)
}

/// The fast path of a call without a deadline: admitted at once, or on to
/// the waiting half or the checks of [`Held::decide`].
#[inline(always)]
fn at_once(held: Held, class: usize, policy: &'static Policy, in_context: bool) -> Decision {
    match held.admit_at_once(class, u64::from(policy.weight()), &policy.stats) {
        Ok(permit) => Decision::Admitted(permit),
        Err(NotAtOnce::NoRoom(held)) => held.wait_after_fast_path(class, policy, in_context),
        Err(NotAtOnce::Checks(held)) => checks_first(held, class, policy, in_context),
    }
}

/// [`admit`] when the inline admission left a check to [`Held::decide`]
/// (the limiter off, the class off or held back by the overload
/// controller).
#[inline(never)]
fn checks_first(held: Held, class: usize, policy: &'static Policy, in_context: bool) -> Decision {
    Held::decision(request(held, Ok(class), policy, in_context), None)
}

/// [`admit`] of a call with a deadline, or whose policy has not cached its
/// class index on this limiter yet: through all of [`Held::decide`], the
/// fast path first when there is no deadline.
#[inline(never)]
fn admit_after_fast_path(
    held: Held,
    deadline: Option<Instant>,
    in_context: bool,
    policy: &'static Policy,
) -> Decision {
    let class = held.policy_class(policy);
    match (class, deadline) {
        (Ok(class), None) => at_once(held, class, policy, in_context),
        _ => Held::decision(request(held, class, policy, in_context), deadline),
    }
}

/// The admission `policy` asks of `held`, for [`Held::decide`].
#[inline]
fn request(
    held: Held,
    class: Result<usize, crate::rejected::Reason>,
    policy: &'static Policy,
    in_context: bool,
) -> Request {
    Request {
        held,
        class,
        weight: u64::from(policy.weight()),
        name: policy.name(),
        max_wait: policy.max_wait(),
        policy: Some((&policy.stats, policy.class())),
        in_context,
    }
}

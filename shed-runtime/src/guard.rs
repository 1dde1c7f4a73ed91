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
    #[inline]
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
/// The common case (slots free, no deadline) is decided inline with one
/// task-local lookup and one compare-and-swap; a call that then found no
/// room goes straight to the waiting half of [`Held::decide`]
/// ([`Held::wait_after_fast_path`]), everything else through all of it.
#[doc(hidden)]
#[inline]
pub fn admit(policy: &'static Policy) -> Decision {
    let (held, deadline, in_context) = Held::current();
    let class = held.policy_class(policy);
    let weight = u64::from(policy.weight());
    match (class, deadline) {
        (Ok(class), None) => match held.admit_at_once(class, weight, &policy.stats) {
            Ok(permit) => Decision::Admitted(permit),
            Err(NotAtOnce::NoRoom(held)) => held.wait_after_fast_path(class, policy, in_context),
            Err(NotAtOnce::Checks(held)) => {
                Held::decision(request(held, Ok(class), policy, in_context), None)
            }
        },
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

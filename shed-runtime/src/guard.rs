//! What `#[shed]` expands to: the admission of a guarded call on the
//! current limiter (the scoped one, else the process-wide one), decided
//! inline when no wait is needed.

use tokio::time::Instant;

pub use crate::limiter::Decision;
use crate::limiter::{Held, Limiter, NotAtOnce, Permit, Request};
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

/// Not public API: the admission of a call of `policy`, as one value
/// ([`try_admit`], then [`admit_rest`] if it did not admit).
#[doc(hidden)]
// Always: on the fast path, inlined into every caller.
#[inline(always)]
pub fn admit(policy: &'static Policy) -> Decision {
    match try_admit(policy, policy.weight()) {
        Ok(permit) => Decision::Admitted(permit),
        Err(rest) => admit_rest(policy, rest),
    }
}

/// Not public API: what `#[shed]` expands to first.
///
/// The common case (slots free, no deadline, the class's index cached in
/// the policy) is admitted inline in the guarded fn with one task-local
/// lookup (none until a call context was ever entered) and one
/// compare-and-swap. The permit is returned apart from the rarer
/// outcomes, so that the guarded fn writes it once, where its body holds
/// it, rather than into a [`Decision`] first and then copied out. Any
/// other case is left to [`admit_rest`].
///
/// `weight` is the policy's, given as the literal the attribute read, so
/// that the compiler folds it into the compare-and-swap (a `static`'s
/// field is read at run time).
#[doc(hidden)]
// Always: on the fast path that is inlined into every `#[shed]` fn;
// left to itself the compiler calls it out of line.
#[inline(always)]
pub fn try_admit(policy: &'static Policy, weight: u32) -> Result<Permit, NotYet> {
    debug_assert_eq!(weight, policy.weight(), "the policy's own weight");
    let (held, deadline, in_context) = Held::current();
    if let (None, Some(class)) = (deadline, policy.stats.bound_class(held.id)) {
        return held
            .admit_at_once(class, u64::from(weight), &policy.stats)
            .map_err(|not| NotYet(Rest::after(not, class, in_context)));
    }
    Err(NotYet(Rest::All(held, deadline, in_context)))
}

/// Not public API: what [`try_admit`] found, for [`admit_rest`].
#[doc(hidden)]
pub struct NotYet(Rest);

enum Rest {
    /// No room on the fast path: on to the waiting half of
    /// [`Held::decide`] ([`Held::wait_after_fast_path`]).
    NoRoom(Held, usize, bool),
    /// A check left to [`Held::decide`] (the limiter off, the class off
    /// or held back by the overload controller).
    Checks(Held, usize, bool),
    /// A caller with a deadline, or a policy whose class index is not
    /// cached on this limiter yet: through all of [`Held::decide`].
    All(Held, Option<Instant>, bool),
}

impl Rest {
    /// What the fast path of a call of `class` left to do.
    #[inline(always)]
    fn after(not: NotAtOnce, class: usize, in_context: bool) -> Self {
        match not {
            NotAtOnce::NoRoom(held) => Rest::NoRoom(held, class, in_context),
            NotAtOnce::Checks(held) => Rest::Checks(held, class, in_context),
        }
    }
}

/// Not public API: the admission [`try_admit`] did not make, decided
/// out of line (the waiting half of [`Held::decide`], or all of it).
#[doc(hidden)]
// Always: a match that calls out of line in every arm, so that the
// guarded fn passes no `NotYet` through memory.
#[inline(always)]
pub fn admit_rest(policy: &'static Policy, rest: NotYet) -> Decision {
    match rest.0 {
        Rest::NoRoom(held, class, in_context) => {
            held.wait_after_fast_path(class, policy, in_context)
        }
        Rest::Checks(held, class, in_context) => checks_first(held, class, policy, in_context),
        Rest::All(held, deadline, in_context) => {
            admit_after_fast_path(held, deadline, in_context, policy)
        }
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
        (Ok(class), None) => {
            match held.admit_at_once(class, u64::from(policy.weight()), &policy.stats) {
                Ok(permit) => Decision::Admitted(permit),
                Err(not) => admit_rest(policy, NotYet(Rest::after(not, class, in_context))),
            }
        }
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

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;
    use crate::{Mode, Reason};

    /// What the whole admission of `policy` decides, its permit's weight
    /// if admitted (0: bypassed), else the refusal's reason.
    fn decided(policy: &'static Policy) -> Result<u64, Reason> {
        match admit(policy) {
            Decision::Admitted(permit) => Ok(permit.weight()),
            Decision::Refused(rejected) => Err(rejected.reason()),
            Decision::Wait(_) => panic!("a free slot"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_fast_path_admits_only_while_the_mode_the_switch_and_the_controller_let_it() {
        let limiter = Limiter::builder().capacity(4).build().unwrap();
        let policy = Policy::leak("guard::gated", "optional", None, 1);
        let inline = || try_admit(policy, 1).map(|permit| permit.weight()).ok();
        let checks = async {
            assert_eq!(decided(policy), Ok(1), "the class's index cached");
            assert_eq!(inline(), Some(1));
            limiter.set_mode(Mode::Off);
            assert_eq!((inline(), decided(policy)), (None, Ok(0)), "bypassed");
            limiter.set_mode(Mode::Enforce);
            assert_eq!(inline(), Some(1));
            limiter.set_class_enabled("optional", false).unwrap();
            assert_eq!((inline(), decided(policy)), (None, Err(Reason::Disabled)));
            limiter.set_class_enabled("optional", true).unwrap();
            limiter
                .set_class_admitted_fraction("optional", 0.0)
                .unwrap();
            assert_eq!((inline(), decided(policy)), (None, Err(Reason::Overload)));
            limiter
                .set_class_admitted_fraction("optional", 1.0)
                .unwrap();
            assert_eq!(inline(), Some(1));
        };
        limiter.scope(checks).await;
        assert_eq!(limiter.in_flight(), 0);
    }
}

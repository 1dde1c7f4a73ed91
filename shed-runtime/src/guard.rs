//! What `#[shed]` expands to: the admission of a guarded call on the
//! current limiter (the scoped one, else the process-wide one), decided
//! inline when no wait is needed.

use std::sync::atomic::Ordering;

use tokio::time::Instant;

pub use crate::limiter::Decision;
use crate::limiter::{Held, Limiter, Permit, Request};
use crate::mode::Mode;
use crate::policy::Policy;

impl Held {
    /// The limiter guarded calls use here, and the caller's deadline.
    #[inline]
    fn current() -> (Held, Option<Instant>) {
        let (scoped, deadline) = crate::context::current();
        let held = match scoped {
            Some(scoped) => Held::Scoped(Limiter::from_scoped(scoped).inner),
            None => Held::Global(&Limiter::global().inner),
        };
        (held, deadline)
    }
}

/// Not public API: counts a refusal of `policy` answered by its fallback.
#[doc(hidden)]
pub fn count_fallback(policy: &'static Policy) {
    let held = Held::current().0;
    if let Ok(class) = held.policy_class(policy) {
        held.core.classes[class].counters.count_fallback();
    }
    #[cfg(feature = "http")]
    crate::http::note_fallback();
}

/// Not public API: what `#[shed]` expands to.
///
/// The common case (slots free, no deadline) is decided inline with one
/// task-local lookup and one compare-and-swap; everything else goes
/// through [`Held::decide`].
#[doc(hidden)]
#[inline]
pub fn admit(policy: &'static Policy) -> Decision {
    let (held, deadline) = Held::current();
    let class = held.policy_class(policy);
    let weight = u64::from(policy.weight());
    if let (Ok(class), None) = (class, deadline) {
        let state = &held.core.classes[class];
        if held.mode.load(Ordering::Relaxed) != Mode::Off.to_u8()
            && state.is_enabled()
            && state.admits_everything()
        {
            if let Some(admitted) = held.core.try_acquire(class, weight) {
                // The sampled call is timed and tallies its tenant.
                let start = (admitted & held.sample_mask == 0).then(|| {
                    tally_sampled(&held, class);
                    Instant::now()
                });
                return Decision::Admitted(Permit::new(
                    held,
                    class,
                    weight,
                    start,
                    Some(&policy.stats),
                ));
            }
        }
    }
    let request = Request {
        held,
        class,
        weight,
        name: policy.name(),
        max_wait: policy.max_wait(),
        policy: Some((&policy.stats, policy.class())),
    };
    Held::decide(request, deadline).into_decision()
}

/// Counts the caller's tenant's admissions on the sampled call, as
/// `decide` does: the heaviest-tenants summary counts this path too. Out
/// of line, so the inline admission stays as small as it was.
#[cold]
#[inline(never)]
fn tally_sampled(held: &Held, class: usize) {
    held.tally_tenant(class, true, held.sample_mask + 1);
}

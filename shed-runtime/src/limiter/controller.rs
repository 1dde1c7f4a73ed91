//! What the limiter asks of the controller of its capacity (the default
//! adaptive limit, [`crate::adaptive::Auto`]): the limiter calls it, and
//! knows nothing else of it, so the limiter does not depend on `adaptive`.

use std::time::Duration;

use tokio::time::Instant;

use super::Inner;
use crate::class::ClassSpec;

/// The controller, shared by the limiter that calls it and the queue that
/// reads its default budgets when it serves a waiter (see
/// `Core::out_of_time`).
pub(crate) type SharedController = std::sync::Arc<dyn Controller>;

/// A controller's default budgets, as the queue reads them when it looks
/// at a waiter that set none (see `Core::out_of_time`).
#[derive(Clone)]
pub(crate) struct DefaultBudgets(pub(crate) SharedController);

impl DefaultBudgets {
    /// The default budget of `class`'s calls now.
    pub(crate) fn of(&self, class: &ClassSpec) -> Duration {
        self.0.budget(class)
    }
}

impl std::fmt::Debug for DefaultBudgets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DefaultBudgets")
    }
}

/// A controller of a limiter's capacity, run inline on completions.
pub(crate) trait Controller: Send + Sync + 'static {
    /// A call that took `took` completed at `now` (its time already
    /// recorded in the limiter's measurement window): a window may close.
    fn completed(&self, limiter: &Inner, now: Instant, took: Duration);

    /// The queue-wait budget of `class`'s calls that set none: read when
    /// such a call starts to wait, and again whenever the queue looks at
    /// it (the budget follows the service, and a waiter is held to twice
    /// the one in force too). The queue reads it under its own lock, so it
    /// takes no lock: the controller holds its own while it calls the
    /// limiter, whose dispatch takes the queue's.
    fn budget(&self, class: &ClassSpec) -> Duration;

    /// Whether the controller still sets the capacity.
    fn is_enabled(&self) -> bool;

    /// Stops the controller (the capacity was pinned, or a warm-up ramp
    /// holds it for a while); returns whether it was running.
    fn disable(&self) -> bool;

    /// Lets a controller stopped by [`Controller::disable`] set the
    /// capacity again, from where it left it (the end of a warm-up ramp).
    fn enable(&self);

    /// The controller itself, for tests that drive it by hand.
    #[cfg(test)]
    fn as_any(&self) -> &dyn std::any::Any;
}

/// A controller whose default budget a test sets, and another thread may
/// move while the queue reads it: one atomic, read with no lock, as
/// [`Controller::budget`] asks.
#[cfg(test)]
pub(crate) struct SetBudget(crate::sync::AtomicU64);

#[cfg(test)]
impl SetBudget {
    /// A controller whose default budget is `budget` for every class.
    pub(crate) fn new(budget: Duration) -> Self {
        Self(crate::sync::AtomicU64::new(nanos(budget)))
    }

    /// Sets the default budget of every class to `budget`.
    pub(crate) fn set(&self, budget: Duration) {
        self.0.store(nanos(budget), crate::sync::Ordering::Relaxed);
    }
}

#[cfg(test)]
fn nanos(budget: Duration) -> u64 {
    u64::try_from(budget.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
impl Controller for SetBudget {
    fn completed(&self, _: &Inner, _: Instant, _: Duration) {}

    fn budget(&self, _: &ClassSpec) -> Duration {
        Duration::from_nanos(self.0.load(crate::sync::Ordering::Relaxed))
    }

    fn is_enabled(&self) -> bool {
        true
    }

    fn disable(&self) -> bool {
        false
    }

    fn enable(&self) {}

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

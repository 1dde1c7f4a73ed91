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

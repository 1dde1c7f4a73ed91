//! What the limiter asks of the controller of its capacity (the default
//! adaptive limit, [`crate::adaptive::Auto`]): the limiter calls it, and
//! knows nothing else of it, so the limiter does not depend on `adaptive`.

use std::time::Duration;

use tokio::time::Instant;

use super::Inner;
use crate::class::ClassSpec;

/// A controller of a limiter's capacity, run inline on completions.
pub(crate) trait Controller: Send + Sync + 'static {
    /// A call that took `took` completed at `now` (its time already
    /// recorded in the limiter's measurement window): a window may close.
    fn completed(&self, limiter: &Inner, now: Instant, took: Duration);

    /// The queue-wait budget of `class`'s calls that set none.
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

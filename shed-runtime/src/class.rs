//! Priority classes: what a class is configured with. Its live state
//! inside a limiter is the limiter's ([`crate::limiter`]).

use std::time::Duration;

/// The configuration of one priority class.
///
/// ```
/// use std::time::Duration;
/// use shed_runtime::ClassSpec;
///
/// let batch = ClassSpec::new("batch", 3)
///     .share(0.3)
///     .floor(2)
///     .max_wait(Duration::from_millis(2));
/// assert_eq!(batch.name(), "batch");
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ClassSpec {
    name: &'static str,
    rank: u32,
    share: f64,
    floor: u32,
    max_wait: Duration,
    /// Whether `max_wait` was set explicitly: a default budget follows the
    /// measured service time under the adaptive default limit.
    #[serde(skip)]
    max_wait_set: bool,
    enabled: bool,
}

impl ClassSpec {
    /// A class named `name` with priority `rank` (0 is served first), a full
    /// share of the capacity, no floor and a 50 ms `max_wait`.
    pub fn new(name: &'static str, rank: u32) -> Self {
        Self {
            name,
            rank,
            share: 1.0,
            floor: 0,
            max_wait: Duration::from_millis(50),
            max_wait_set: false,
            enabled: true,
        }
    }

    /// The most this class may hold, as a fraction of the capacity (0, 1].
    pub fn share(mut self, share: f64) -> Self {
        self.share = share;
        self
    }

    /// Slots this class is served first to, whenever it has demand, so
    /// that higher classes cannot starve it: while it holds fewer than
    /// `slots` and has a waiter, every slot given back goes to it before
    /// any other class, and no call of another class overtakes it on the
    /// fast path.
    ///
    /// A floor is a priority, not a reservation: slots are not kept idle
    /// for a class that has no demand. So if other classes hold every slot
    /// for longer than this class's `max_wait`, its call is refused when
    /// its budget runs out, before any slot comes back. Work that needs
    /// capacity held for it even then belongs on a limiter of its own (a
    /// bulkhead), built with [`Limiter::builder`](crate::Limiter::builder).
    pub fn floor(mut self, slots: u32) -> Self {
        self.floor = slots;
        self
    }

    /// How long a call of this class may wait for slots unless its
    /// `#[shed(max_wait = ...)]` says otherwise.
    pub fn max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = max_wait;
        self.max_wait_set = true;
        self
    }

    /// Whether the budget was set with [`max_wait`](ClassSpec::max_wait).
    /// A default budget is scaled to the measured service time while the
    /// limiter's capacity is adaptive (see [`Config`](crate::Config)); a set
    /// one keeps its meaning.
    pub fn max_wait_is_set(&self) -> bool {
        self.max_wait_set
    }

    /// Whether the class starts switched on.
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// The class's name, as written in `#[shed(class = "...")]`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The priority rank (0 is served first).
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The share of the capacity.
    pub fn share_of_capacity(&self) -> f64 {
        self.share
    }

    /// The floor in slots (see [`ClassSpec::floor`]).
    pub fn floor_slots(&self) -> u32 {
        self.floor
    }

    /// The default queue-wait budget.
    pub fn default_max_wait(&self) -> Duration {
        self.max_wait
    }

    /// Whether the class starts switched on.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The default classes from the seed: `critical` (rank 0, share 1.0,
    /// 50 ms), `optional` (rank 1, share 0.8, 20 ms) and `background`
    /// (rank 2, share 0.6, 5 ms).
    pub fn defaults() -> Vec<ClassSpec> {
        // Default budgets, not set ones: they follow the measured service
        // time under the adaptive default limit, in these proportions.
        let with_default_wait = |spec: ClassSpec, millis| ClassSpec {
            max_wait: Duration::from_millis(millis),
            ..spec
        };
        vec![
            with_default_wait(ClassSpec::new("critical", 0).share(1.0), 50),
            with_default_wait(ClassSpec::new("optional", 1).share(0.8), 20),
            with_default_wait(ClassSpec::new("background", 2).share(0.6), 5),
        ]
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("a class name must not be empty".into());
        }
        if !(self.share > 0.0 && self.share <= 1.0) {
            return Err(format!(
                "class `{}`: share must be in (0, 1], got {}",
                self.name, self.share
            ));
        }
        Ok(())
    }
}

/// A class name that is not configured on a limiter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown class `{name}` (known classes: {known})")]
pub struct UnknownClass {
    name: String,
    known: String,
}

impl UnknownClass {
    pub(crate) fn new<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Self {
        Self {
            name: name.to_string(),
            known: known.collect::<Vec<_>>().join(", "),
        }
    }
}

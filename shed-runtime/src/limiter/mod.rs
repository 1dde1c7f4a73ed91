//! The admission limiter: weighted slots shared by priority classes, a
//! lock-free fast path, and a bounded wait queue for calls that must wait.

mod admission;
mod class;
pub(crate) mod controller;
mod core;
pub(crate) mod counters;
pub mod discipline;
mod fair;
mod gate;
pub(crate) mod heavy;
mod learned;
mod load;
mod permit;
mod queue;
mod state;
pub(crate) mod stats;
pub(crate) mod view;
mod wait_timer;
pub(crate) mod warm_up;
mod window;

#[cfg(all(test, shed_loom))]
mod loom_tests;

use std::future::Future;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

pub use admission::Admission;
pub(crate) use admission::Request;
pub use permit::Permit;

pub(crate) use self::class::ClassState;
use self::controller::{DefaultBudgets, SharedController};
use self::core::Core;
use self::counters::AdmittedTotals;
use self::gate::{Gate, Open};
use self::learned::Learned;
pub(crate) use self::state::MAX_CAPACITY;
use self::window::Accumulator;
use crate::estimate::ServiceEstimate;
use crate::mode::Mode;
use crate::policy::{Policy, PolicyStats};
use crate::rejected::{Reason, Rejected};

/// A limiter of weighted slots shared by priority classes.
///
/// Most programs use the process-wide limiter ([`Limiter::global`]), which
/// every `#[shed]` fn goes through. A limiter is also an ordinary value: a
/// test, a simulator or an integration can build its own and run a future
/// with it as the *current* limiter ([`Limiter::scope`]), so concurrent
/// tests never share state by accident.
///
/// Cloning is cheap and yields a handle to the same limiter.
///
/// ```
/// use shed_runtime::{Limiter, Reason};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let limiter = Limiter::builder().capacity(2).build().unwrap();
/// let a = limiter.acquire("critical", 1, "a").await.unwrap();
/// let b = limiter.acquire("critical", 1, "b").await.unwrap();
/// assert_eq!(limiter.in_flight(), 2);
/// drop((a, b));
/// assert_eq!(limiter.in_flight(), 0);
/// # }
/// ```
#[derive(Clone)]
pub struct Limiter {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) id: u32,
    core: Core,
    /// Written by `Inner::set_mode` alone, which keeps the classes'
    /// gates' copy of it.
    mode: AtomicU8,
    default_service: Duration,
    /// A power of two less one: one fast-path admission in `mask + 1` is
    /// timed. `sampled_mask` from the start, or under the default adaptive
    /// limit 0 (each one) until [`TIMED_FIRST`] were (see
    /// [`Held::note_sampled`]). Its one change is that single store, so
    /// Relaxed does: an admission that reads either value only times its
    /// own call or not, and counts its tenant at that value's rate. No
    /// slot, waiter or counter of the limiter depends on it (around the
    /// switch, one tenant tally may count a sample at the other rate),
    /// which is why no loom model covers it.
    sample_mask: AtomicU64,
    /// The sample mask of `Config::sample_every`, which waiters use: all
    /// of them are timed while the default adaptive limit runs.
    pub(crate) sampled_mask: u64,
    /// Which controllers may read the measurement window, whose windows
    /// close only after as many measured completions as the limit (see
    /// `Auto`): [`READ_BY_AUTO`] until the application pins the capacity,
    /// [`READ_BY_LIMIT`] once a spawned
    /// [`AdaptiveLimit`](crate::adaptive::AdaptiveLimit) controls the
    /// limiter. While any may, every call that waited is timed; else one
    /// in `sample_mask + 1`, as on the fast path. Relaxed: a change seen
    /// late only times a call more or fewer.
    pub(crate) window_readers: AtomicU8,
    totals: AdmittedTotals,
    /// The adaptive limit's window of measured completions.
    window: Accumulator,
    /// The default adaptive limit, unless the capacity is fixed.
    pub(crate) auto: Option<SharedController>,
    pub(crate) learned: Learned,
    /// The cold-start ramp (see `warm_up.rs`).
    pub(crate) warm_up: crate::limiter::warm_up::WarmUp,
    /// The tenants' plans, by rank within a class.
    pub(crate) tiers: crate::tenant::Tiers,
}

static NEXT_ID: AtomicU32 = AtomicU32::new(1);

/// `Inner::window_readers`: the adaptive default, which stops for good
/// when the application pins the capacity.
pub(crate) const READ_BY_AUTO: u8 = 1;
/// `Inner::window_readers`: a spawned adaptive limit.
pub(crate) const READ_BY_LIMIT: u8 = 2;

/// The admissions of a limiter's life that the fast path times, all of
/// them, under the default adaptive limit: its first window then closes
/// on the first calls, below capacity too, where only the calls that
/// waited and one in 64 of the others are timed. Without them, 2 workers
/// of 200 ms at 0.8 load took their first window of 12 calls 2 to 6 s to
/// time, and until it closed their budgets were guessed from one or two
/// calls (one of 15 ms refused a second's calls after 45 ms). A clock
/// read on a limiter's first 32 calls, none on its steady hot path.
const TIMED_FIRST: u64 = 32;

impl std::fmt::Debug for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.inner.core.snapshot();
        f.debug_struct("Limiter")
            .field("id", &self.inner.id)
            .field("capacity", &s.capacity)
            .field("in_flight", &s.in_flight)
            .field("mode", &self.mode())
            .finish_non_exhaustive()
    }
}

/// Which limiter a call holds slots of: the process-wide one without a
/// reference count, a scoped one with.
///
/// A pointer read without a branch (every step of an admission reaches
/// the limiter through it), and the reference count that keeps a scoped
/// limiter alive beside it.
#[derive(Clone)]
pub(crate) struct Held {
    /// Valid while this value lives: the process-wide limiter is
    /// `'static`, a scoped one is kept alive by `_owner`, whose allocation
    /// it points into (an `Arc`'s contents never move).
    inner: std::ptr::NonNull<Inner>,
    /// Held for its reference count; read only for whether there is one
    /// (a permit of the process-wide limiter has nothing to let go of).
    _owner: Option<Arc<Inner>>,
}

// SAFETY: `Held` is a `&Inner` (`'static`, or borrowed from its own
// `Arc<Inner>`) and that `Arc`, both `Send` and `Sync` as `Inner` is.
unsafe impl Send for Held {}
// SAFETY: as above.
unsafe impl Sync for Held {}

impl Held {
    /// The process-wide limiter.
    #[inline]
    pub(crate) fn global(inner: &'static Inner) -> Self {
        Self {
            inner: std::ptr::NonNull::from(inner),
            _owner: None,
        }
    }

    /// A scoped limiter, kept alive by `inner`.
    #[inline]
    pub(crate) fn scoped(inner: Arc<Inner>) -> Self {
        Self {
            inner: std::ptr::NonNull::from(&*inner),
            _owner: Some(inner),
        }
    }
}

impl std::ops::Deref for Held {
    type Target = Inner;

    #[inline]
    fn deref(&self) -> &Inner {
        // SAFETY: `inner` is valid while `self` lives (see the field).
        unsafe { self.inner.as_ref() }
    }
}

impl Limiter {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_parts(
        capacity: u64,
        classes: Vec<ClassState>,
        queue_bound: u64,
        mode: Mode,
        default_service: Duration,
        sample_every: u32,
        discipline: discipline::Discipline,
        auto: Option<SharedController>,
    ) -> Self {
        let classes_len = classes.len();
        let sampled_mask = u64::from(sample_every.max(1).next_power_of_two()) - 1;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let limiter = Self {
            inner: Arc::new(Inner {
                id,
                core: Core::new(
                    capacity,
                    classes,
                    queue_bound,
                    discipline,
                    auto.clone().map(DefaultBudgets),
                ),
                mode: AtomicU8::new(mode.to_u8()),
                default_service,
                sample_mask: AtomicU64::new(if auto.is_some() { 0 } else { sampled_mask }),
                sampled_mask,
                window_readers: AtomicU8::new(if auto.is_some() { READ_BY_AUTO } else { 0 }),
                totals: AdmittedTotals::new(classes_len),
                window: Default::default(),
                learned: Learned::new(id),
                tiers: Default::default(),
                auto,
                warm_up: Default::default(),
            }),
        };
        // The classes' gates copy the mode.
        limiter.inner.set_mode(mode);
        limiter
    }

    /// The limiter a [`scope`](Limiter::scope) put in the call context.
    #[inline]
    pub(crate) fn from_scoped(scoped: crate::context::ScopedLimiter) -> Limiter {
        let inner = scoped
            .downcast::<Inner>()
            .unwrap_or_else(|_| unreachable!("only Limiter::scope sets the scoped limiter"));
        Limiter { inner }
    }

    /// Notes that a spawned adaptive limit reads the measurement window
    /// from now on (see `Inner::window_readers`).
    pub(crate) fn read_by_adaptive_limit(&self) {
        self.inner
            .window_readers
            .fetch_or(READ_BY_LIMIT, Ordering::Relaxed);
    }

    /// Marks this limiter as the process-wide one, which keeps what it
    /// learns in the guarded fns' own statics.
    pub(crate) fn into_global(self) -> Self {
        self.inner.learned.global.store(true, Ordering::Relaxed);
        self
    }

    /// Runs `future` with this limiter as the current one: every guarded
    /// call it makes, however deeply nested, uses this limiter. The
    /// caller's deadline, if any, carries on inside.
    pub fn scope<F: Future>(&self, future: F) -> impl Future<Output = F::Output> + use<F> {
        let scoped: crate::context::ScopedLimiter = Arc::clone(&self.inner) as _;
        crate::context::scope_limiter(scoped, future)
    }

    /// Asks for `weight` slots for a call of `class` named `name` (for
    /// integrations and tests; `#[shed]` fns use their policy instead).
    /// The call waits at most the class's default `max_wait`.
    pub fn acquire(&self, class: &str, weight: u32, name: &'static str) -> Admission {
        let held = Held::scoped(Arc::clone(&self.inner));
        let class = self.inner.class_index(class).ok_or(Reason::UnknownClass);
        Admission::start(admission::Request {
            held,
            class,
            weight: u64::from(weight),
            name,
            max_wait: None,
            policy: None,
            in_context: true,
        })
    }

    /// Asks for slots as the guarded fn `policy` would, on this limiter.
    pub fn acquire_as(&self, policy: &'static Policy) -> Admission {
        let held = Held::scoped(Arc::clone(&self.inner));
        Admission::start(admission::Request {
            class: held.policy_class(policy),
            held,
            weight: u64::from(policy.weight()),
            name: policy.name(),
            max_wait: policy.max_wait(),
            policy: Some((&policy.stats, policy.class())),
            in_context: true,
        })
    }

    /// The service time this limiter learned for the guarded fn `policy`
    /// from its completed calls, if any. Each limiter learns for itself.
    pub fn expected_service(&self, policy: &'static Policy) -> Option<Duration> {
        self.inner.learned.with(&policy.stats, ServiceEstimate::get)
    }

    /// The current capacity in slots: a `u32`, as in
    /// [`set_capacity`](Limiter::set_capacity) and `Config::capacity`.
    pub fn capacity(&self) -> u32 {
        // Always set from a `u32`, so it always fits.
        u32::try_from(self.inner.core.snapshot().capacity).unwrap_or(u32::MAX)
    }

    /// Changes the capacity at run time. Waiters the new room lets in are
    /// admitted at once; if the capacity shrinks below the in-flight
    /// weight, new calls wait until enough is released. This pins the
    /// capacity: the adaptive default, if it ran, stops (a spawned
    /// [`AdaptiveLimit`](crate::adaptive::AdaptiveLimit) goes on).
    pub fn set_capacity(&self, capacity: u32) {
        // The pin stops the adaptive default (under the warm-up's lock).
        self.inner
            .window_readers
            .fetch_and(!READ_BY_AUTO, Ordering::Relaxed);
        self.inner
            .warm_up
            .pin(&self.inner, u64::from(capacity.max(1)));
    }

    /// The weight held by admitted calls.
    pub fn in_flight(&self) -> u64 {
        self.inner.core.snapshot().in_flight
    }

    /// The enforcement mode.
    pub fn mode(&self) -> Mode {
        Mode::from_u8(self.inner.mode.load(Ordering::Relaxed))
    }

    /// Changes the enforcement mode at run time.
    pub fn set_mode(&self, mode: Mode) {
        self.inner.set_mode(mode);
    }

    /// The configured classes, in configuration order.
    pub fn classes(&self) -> impl Iterator<Item = &crate::ClassSpec> + '_ {
        self.inner.core.classes.iter().map(|c| &c.spec)
    }

    /// Switches a class on or off at run time (an admin endpoint, say).
    /// Switching it off refuses its queued calls at once (reason
    /// `disabled`); calls already admitted finish.
    pub fn set_class_enabled(&self, class: &str, enabled: bool) -> Result<(), crate::UnknownClass> {
        let index = self
            .inner
            .class_index(class)
            .ok_or_else(|| crate::UnknownClass::new(class, self.classes().map(|c| c.name())))?;
        self.inner.core.classes[index].set_enabled(enabled);
        if !enabled {
            self.inner.core.refuse_class(index, Reason::Disabled);
        }
        Ok(())
    }

    /// Admits only `fraction` (0 to 1) of `class`'s calls from now on,
    /// refusing the others with reason `overload`: calls with a tenant by
    /// cohort (the same tenants throughout, see [`crate::with_tenant`]),
    /// calls without one evenly. `1.0` admits everything again. An
    /// [`OverloadController`](crate::OverloadController) running on this
    /// limiter sets these fractions itself on every tick.
    pub fn set_class_admitted_fraction(
        &self,
        class: &str,
        fraction: f64,
    ) -> Result<(), crate::UnknownClass> {
        let index = self
            .inner
            .class_index(class)
            .ok_or_else(|| crate::UnknownClass::new(class, self.classes().map(|c| c.name())))?;
        self.set_admitted_fraction_at(index, fraction);
        Ok(())
    }

    /// Whether `class` is switched on (`None` if it is not configured).
    pub fn class_enabled(&self, class: &str) -> Option<bool> {
        let index = self.inner.class_index(class)?;
        Some(self.inner.core.classes[index].is_enabled())
    }
}

impl Inner {
    /// Whether an adaptive limit may read the measurement window, so that
    /// every call that waited is timed (see `Inner::window_readers`).
    #[inline]
    pub(crate) fn window_is_read(&self) -> bool {
        self.window_readers.load(Ordering::Relaxed) != 0
    }

    /// Stores the mode, then brings each class's gate up to date with it
    /// (see `gate.rs`).
    fn set_mode(&self, mode: Mode) {
        self.mode.store(mode.to_u8(), Ordering::SeqCst);
        let off = || self.mode.load(Ordering::SeqCst) == Mode::Off.to_u8();
        for class in self.core.classes.iter() {
            class.gate.follow(Gate::OFF, off);
        }
    }

    fn class_index(&self, name: &str) -> Option<usize> {
        self.core.classes.iter().position(|c| c.spec.name() == name)
    }

    /// A retry-after suggestion ([`crate::retry_after`]), jittered: for
    /// refusals caused by the load, how long the backlog (queued and
    /// in-flight weight) takes to drain at the throughput the expected
    /// service time gives; for a switched-off class or a call that can
    /// never fit, "not soon".
    fn retry_after(&self, reason: Reason, expected_service: Duration) -> Duration {
        let draw = fastrand::f64();
        match reason {
            Reason::Disabled | Reason::UnknownClass | Reason::TooHeavy | Reason::NoRuntime => {
                crate::retry_after::not_soon(draw)
            }
            _ => {
                let s = self.core.snapshot();
                let queued = if s.waiters { self.core.queued().1 } else { 0 };
                let service = if expected_service.is_zero() {
                    self.default_service
                } else {
                    expected_service
                };
                let throughput = crate::retry_after::throughput(s.capacity, service);
                crate::retry_after::from_backlog(queued + s.in_flight, throughput, draw)
            }
        }
    }
}

/// Why [`Held::admit_at_once`] did not admit: a check it leaves to
/// [`Held::decide`] (the limiter off, the class off or held back by the
/// overload controller), or no room on the fast path.
pub(crate) enum NotAtOnce {
    Checks(Held),
    NoRoom(Held),
}

/// What an admission that found no room knows already.
struct Facts {
    mode: Mode,
    class: usize,
    weight: u64,
    name: &'static str,
    max_wait: Option<Duration>,
    stats: Option<&'static PolicyStats>,
    /// The caller's deadline.
    deadline: Option<Instant>,
    /// The clock, if read already (for the deadline).
    now: Option<Instant>,
    /// The fn's expected service time, if read already (for the deadline).
    expected: Option<Duration>,
    /// Whether the caller may run in a call context (see `Request`).
    in_context: bool,
}

impl Held {
    /// The class index of `policy` on this limiter, cached in the policy.
    #[inline]
    pub(crate) fn policy_class(&self, policy: &'static Policy) -> Result<usize, Reason> {
        if let Some(class) = policy.stats.bound_class(self.id) {
            return Ok(class);
        }
        let class = self
            .class_index(policy.class())
            .ok_or(Reason::UnknownClass)?;
        policy.stats.bind_class(self.id, class);
        Ok(class)
    }

    /// The fast path of a guarded call without a deadline: admits at once
    /// when the limiter is not off, the class is on and admits all of its
    /// calls, and both the class's share and the capacity have room. One
    /// compare-and-swap; gives `self` back when the call must go through
    /// [`decide`](Held::decide) ([`NotAtOnce::Checks`]) or found no room
    /// ([`NotAtOnce::NoRoom`], for [`Held::wait_after_fast_path`]).
    // Always: on the fast path that `guard::admit` inlines into every
    // `#[shed]` fn; left to itself the compiler calls it out of line.
    #[inline(always)]
    pub(crate) fn admit_at_once(
        self,
        class: usize,
        weight: u64,
        stats: &'static PolicyStats,
    ) -> Result<Permit, NotAtOnce> {
        let state = &self.core.classes[class];
        // The mode, the class's switch, the controller and the class's
        // kind in one load (see `gate.rs`).
        let tracked = match state.gate.open() {
            Open::Untracked => false,
            Open::Tracked => true,
            Open::Closed => return Err(NotAtOnce::Checks(self)),
        };
        match self.core.try_acquire_as(state, tracked, weight) {
            Some(admitted) => {
                // The sampled call is timed and tallies its tenant.
                let start = (admitted & self.sample_mask() == 0).then(|| {
                    self.note_sampled(class);
                    Instant::now()
                });
                Ok(Permit::new(
                    self,
                    (class, tracked),
                    weight,
                    start,
                    Some(stats),
                ))
            }
            None => Err(NotAtOnce::NoRoom(self)),
        }
    }

    /// The fast path's sample mask (see `Inner::sample_mask`).
    #[inline(always)]
    fn sample_mask(&self) -> u64 {
        self.sample_mask.load(Ordering::Relaxed)
    }

    /// Notes a sampled admission: counts the caller's tenant's
    /// admissions, on this path as in `decide` (the heaviest-tenants
    /// summary counts both), and once [`TIMED_FIRST`] were admitted, ends
    /// their timing. Out of line, so the inline admission stays as small
    /// as it was.
    #[cold]
    #[inline(never)]
    fn note_sampled(&self, class: usize) {
        let mask = self.sample_mask();
        self.tally_tenant(class, true, mask + 1);
        if mask != self.sampled_mask && self.core.snapshot().admitted >= TIMED_FIRST {
            self.sample_mask.store(self.sampled_mask, Ordering::Relaxed);
        }
    }

    /// Counts a refusal of `class` answered by a fallback.
    pub(crate) fn count_fallback(&self, class: usize) {
        self.core.classes[class].counters.count_fallback();
    }

    /// [`Held::decide`], as the generated code goes on from it: run,
    /// refuse, or await.
    pub(crate) fn decision(request: Request, deadline: Option<Instant>) -> Decision {
        Self::decide(request, deadline).into_decision()
    }

    /// Every admission decision, in the order the seeds prescribe: cheap
    /// refusals first (class off, deadline), then the lock-free fast path,
    /// then the bounded queue with a measured-wait budget. `deadline` is
    /// the caller's, read from its context when the admission starts.
    pub(crate) fn decide(request: Request, deadline: Option<Instant>) -> Admission {
        let Request {
            held,
            class,
            weight,
            name,
            max_wait,
            policy,
            in_context,
        } = request;
        let mode = Mode::from_u8(held.mode.load(Ordering::Relaxed));
        if mode == Mode::Off {
            return Admission::ready(Ok(Permit::bypass()));
        }
        let stats = policy.map(|(stats, _)| stats);
        let class = match class {
            Ok(class) => class,
            // Observe mode never refuses; an unknown class has no counters.
            Err(_) if mode == Mode::Observe => return Admission::ready(Ok(Permit::bypass())),
            Err(reason) => {
                let class_name = policy.map_or("unknown", |(_, c)| c);
                let retry_after = held.retry_after(reason, Duration::ZERO);
                return Admission::ready(Err(Rejected::new(reason, class_name, name, retry_after)));
            }
        };
        let state = &held.core.classes[class];

        // Refusals that need no slot and no wait.
        let mut now = None;
        let mut expected = None;
        let refusal = if !state.is_enabled() {
            Some(Reason::Disabled)
        } else if !state.admits_everything()
            && !state.admitted_by_controller(crate::context::current_tenant())
        {
            // The tenant is looked up only while the controller holds the
            // class back (its cohort decides).
            Some(Reason::Overload)
        } else if let Some(deadline) = deadline {
            let at = *now.insert(Instant::now());
            let service = *expected.insert(held.expected_service(stats));
            let left = deadline.saturating_duration_since(at);
            // A deadline already reached is refused even when the expected
            // service time is zero.
            if left.is_zero() || left < service {
                if left >= service / 2 {
                    // Within a factor of two of the estimate: the estimate
                    // may be stale (see `ServiceEstimate::decay`). A
                    // deadline far shorter than any plausible service time
                    // says nothing about it, so it must not pull it down.
                    if let Some(stats) = stats {
                        held.learned.with(stats, |e| e.decay(at));
                    }
                }
                Some(Reason::Deadline)
            } else {
                None
            }
        } else {
            None
        };
        if let Some(reason) = refusal {
            return held.refuse_or_observe(mode, class, weight, reason, name, now, stats, deadline);
        }

        if let Some(admitted) = held.core.try_acquire(class, weight) {
            let sampled = admitted & held.sample_mask() == 0;
            if sampled {
                // Sampled: a tenant's admissions cost nothing more on the
                // fast path than the service-time sampling does.
                held.note_sampled(class);
            }
            let start = match now {
                Some(at) => Some(at),
                None if stats.is_some() && sampled => Some(Instant::now()),
                None => None,
            };
            let tracked = state.is_tracked();
            let permit =
                Permit::new(held, (class, tracked), weight, start, stats).with_deadline(deadline);
            return Admission::ready(Ok(permit));
        }

        // No room now: the call would have to wait.
        let facts = Facts {
            mode,
            class,
            weight,
            name,
            max_wait,
            stats,
            deadline,
            now,
            expected,
            in_context,
        };
        held.wait_for_room(facts).into_admission()
    }

    /// The guard's way in after its own try of the fast path (see
    /// [`Held::admit_at_once`]) found no room, with the limiter not off and
    /// the class on and admitting all of its calls: what [`Held::decide`]
    /// does next for a caller without a deadline, without its checks and
    /// its try a second time. A second try would almost always fail the
    /// same way a moment later, and a slot given back in between is seen
    /// on the way into the queue (`Core::enqueue` reads the word after
    /// setting the waiters flag). Out of line: the fast path is inlined
    /// into every guarded fn.
    #[inline(never)]
    pub(crate) fn wait_after_fast_path(
        self,
        class: usize,
        policy: &'static Policy,
        in_context: bool,
    ) -> Decision {
        let mode = Mode::from_u8(self.mode.load(Ordering::Relaxed));
        if mode == Mode::Off {
            // Switched off since the fast path looked.
            return Decision::Admitted(Permit::bypass());
        }
        self.wait_for_room(Facts {
            mode,
            class,
            weight: u64::from(policy.weight()),
            name: policy.name(),
            max_wait: policy.max_wait(),
            stats: Some(&policy.stats),
            deadline: None,
            now: None,
            expected: None,
            in_context,
        })
    }

    /// The rest of an admission that found no room: refused if it can
    /// never fit, admitted unchecked in observe mode, else queued with its
    /// budget's timer; as the decision the guarded fn goes on from.
    /// Inlined into its two callers, both out of line:
    /// what the guard's caller does not have (a deadline, a clock read, an
    /// estimate) then costs it no branches, and the facts are not copied.
    #[inline(always)]
    fn wait_for_room(self, facts: Facts) -> Decision {
        let held = self;
        let Facts {
            mode,
            class,
            weight,
            name,
            max_wait,
            stats,
            deadline,
            now,
            expected,
            in_context,
        } = facts;
        let state = &held.core.classes[class];
        if weight > state.limit(held.core.word.capacity()) {
            return held
                .refuse_or_observe(
                    mode,
                    class,
                    weight,
                    Reason::TooHeavy,
                    name,
                    now,
                    stats,
                    deadline,
                )
                .into_decision();
        }
        if mode == Mode::Observe {
            return held
                .admit_unchecked(class, weight, now, stats, deadline)
                .into_decision();
        }
        let arrived = now.unwrap_or_else(Instant::now);
        let budget = max_wait.unwrap_or_else(|| match &held.auto {
            Some(auto) => auto.budget(&state.spec),
            None => state.spec.default_max_wait(),
        });
        let mut gives_up = (crate::deadline::after(arrived, budget), Reason::MaxWait);
        if let Some(deadline) = deadline {
            // Read already by `decide`'s deadline check.
            let expected = expected.unwrap_or_else(|| held.expected_service(stats));
            let last_start = deadline.checked_sub(expected).unwrap_or(arrived);
            if last_start < gives_up.0 {
                gives_up = (last_start, Reason::Deadline);
            }
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // Waiting needs tokio's timer, which panics outside a runtime:
            // refuse instead, before anything is queued.
            return held
                .refuse_or_observe(
                    mode,
                    class,
                    weight,
                    Reason::NoRuntime,
                    name,
                    now,
                    stats,
                    deadline,
                )
                .into_decision();
        };
        // The caller's attempt and tenant, in one lookup of its context;
        // outside any context, a first attempt without a tenant or a plan
        // (`Caller::OUTSIDE`), without building one.
        let (retry, tenant) = if in_context {
            let caller = crate::context::current_caller();
            let retry = held.core.discipline.retries_yield && caller.attempt > 1;
            let tier = held.tiers.rank(caller.plan.as_deref());
            (
                retry,
                self::fair::TenantTag::named(caller.tenant, tier, caller.name),
            )
        } else {
            (
                false,
                self::fair::TenantTag::named(None, held.tiers.rank(None), None),
            )
        };
        let call = queue::Call {
            class,
            weight,
            arrived,
            gives_up: Some(gives_up),
            deadline,
            retry,
            tenant,
            default_budget: max_wait.is_none(),
        };
        // Queued when first polled, with the task to wake (see `Admission`).
        let waiter = wait_timer::new_waiter(call, gives_up.0, runtime.id());
        // Built in place in the decision the guarded fn awaits.
        Decision::Wait(Admission::waiting(held, waiter, name, expected, stats))
    }

    /// Counts `count` calls of the caller's tenant, if it has one, in
    /// `class`: admitted or refused (see [`heavy`](crate::limiter::heavy)).
    fn tally_tenant(&self, class: usize, admitted: bool, count: u64) {
        if let (Some(hash), name, plan) = crate::context::current_tenant_detail() {
            let tier = self.tiers.rank(plan.as_deref());
            self.core
                .tenants
                .record((class, tier), (hash, name.as_ref()), admitted, count);
        }
    }

    fn expected_service(&self, stats: Option<&'static PolicyStats>) -> Duration {
        stats
            .and_then(|stats| self.learned.with(stats, ServiceEstimate::get))
            .unwrap_or(self.default_service)
    }

    #[allow(clippy::too_many_arguments)]
    fn refuse_or_observe(
        self,
        mode: Mode,
        class: usize,
        weight: u64,
        reason: Reason,
        name: &'static str,
        now: Option<Instant>,
        stats: Option<&'static PolicyStats>,
        deadline: Option<Instant>,
    ) -> Admission {
        let counters = &self.core.classes[class].counters;
        if mode == Mode::Observe {
            counters.count_observed(reason);
            if reason == Reason::TooHeavy {
                // Admitted, but not counted in flight: a weight past the
                // capacity could overflow the admission word.
                return Admission::ready(Ok(Permit::bypass()));
            }
            return self.admit_unchecked(class, weight, now, stats, deadline);
        }
        counters.count_refusal(reason);
        self.tally_tenant(class, false, 1);
        let expected = self.expected_service(stats);
        let rejected = self.rejected(class, reason, name, expected);
        // A deadline refused before any wait is shorter than the call
        // takes with free slots: the same deadline fails again.
        Admission::ready(Err(if reason == Reason::Deadline {
            rejected.unmeetable()
        } else {
            rejected
        }))
    }

    /// Observe mode's admission of a call enforce mode would have refused
    /// or queued: counted in flight (when the counters hold it), timed,
    /// and counted as served in time or late against its deadline like any
    /// other, since these are the calls likeliest to be late.
    fn admit_unchecked(
        self,
        class: usize,
        weight: u64,
        now: Option<Instant>,
        stats: Option<&'static PolicyStats>,
        deadline: Option<Instant>,
    ) -> Admission {
        if !self.core.acquire_unchecked(class, weight) {
            // Beyond what the counters hold: admitted, not counted.
            return Admission::ready(Ok(Permit::bypass()));
        }
        let start = now.or_else(|| stats.map(|_| Instant::now()));
        let tracked = self.core.classes[class].is_tracked();
        Admission::ready(Ok(Permit::new(
            self,
            (class, tracked),
            weight,
            start,
            stats,
        )
        .with_deadline(deadline)))
    }

    pub(crate) fn rejected(
        &self,
        class: usize,
        reason: Reason,
        name: &'static str,
        expected: Duration,
    ) -> Rejected {
        Rejected::new(
            reason,
            self.core.classes[class].spec.name(),
            name,
            self.retry_after(reason, expected),
        )
    }
}

/// Not public API: the outcome of a guarded call's admission, decided
/// without a future when no wait is needed.
#[doc(hidden)]
pub enum Decision {
    /// Run the body, holding this permit.
    Admitted(Permit),
    /// Do not run the body; return this refusal.
    Refused(Rejected),
    /// Await this admission first.
    Wait(Admission),
}

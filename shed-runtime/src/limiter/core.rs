//! The admission state machine, free of futures so that `loom` can check
//! every interleaving of acquire, release and cancel.
//!
//! Invariants (checked by the property and loom tests):
//! - the in-flight weight never exceeds the capacity, and a class's never
//!   exceeds its share, except transiently after the capacity is lowered;
//! - a waiter is granted, refused or removed exactly once, always under the
//!   queue lock, and every grant is matched by exactly one release (a
//!   release wakes the task it granted after letting go of the lock: the
//!   grant is published before, see `Waiter::grant_quietly`);
//! - the task a waiter wakes is stored (when it queues, or when another
//!   task polls it) and taken (when it is settled) under that same lock:
//!   a settling either comes first, and the poll that stores sees it, or
//!   comes after and takes the task stored last (see `sync::WakerCell`);
//! - a class's waiters flag is set whenever it has queued waiters, from
//!   before any dispatch looks at the new waiter: the fast path of that
//!   class never overtakes them, and a release (or an undone take) of that
//!   class always notices that somebody may now fit;
//! - the limiter's waiters flag is set from the start of every dispatch
//!   that finds the queue non-empty until a dispatch finds that every
//!   remaining waiter is held back by its own class's share. So a waiter
//!   that the limiter's capacity keeps out is never overtaken by the fast
//!   path, and every release after it was looked at notices it; a waiter
//!   held back only by its class's share holds nobody else up (no slow
//!   path for the other classes) and is woken through its class's flag.
//!
//! Why a flag read after a change always sees a waiter that the change may
//! let in: every word is only changed by read-modify-writes (`SeqCst`), and
//! a dispatcher sets the flag before it reads the word for the waiter. If
//! the dispatcher's read saw the word before a release or an undone take,
//! that change comes later in the word's modification order than the flag,
//! so the value it returns has the flag set, and its caller dispatches.

use std::task::Waker;

use tokio::time::Instant;

use super::class::ClassState;
use super::controller::DefaultBudgets;
use super::discipline::{Codel, Discipline};
use super::load::Reading;
use super::queue::{End, Status, WaitQueue, Waiter};
use super::state::{AdmissionWord, ClassTake, FastTake, Snapshot};
use crate::rejected::Reason;
use crate::sync::{lock, Arc, Mutex, MutexGuard};

/// How many times the default budget in force a waiter that set none may
/// have waited, whatever budget it started with: the budget is read again
/// every window, and twice it allows for that reading's noise (see
/// [`Core::out_of_time`]).
const STALE_BUDGETS: u32 = 2;

#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) word: AdmissionWord,
    pub(crate) classes: Box<[ClassState]>,
    queue: Mutex<WaitQueue>,
    /// The most weight that may wait at once.
    pub(crate) queue_bound: u64,
    pub(crate) discipline: Discipline,
    /// Tenants' calls by class and tier, and the heaviest tenants.
    pub(crate) tenants: crate::limiter::heavy::TenantTally,
    /// Whether any class reserves a floor (else dispatch skips that pass).
    floors: bool,
    /// Whether any class keeps a word of its own (else no class flag is
    /// ever set, and settling the flags skips them).
    tracked: bool,
    /// The default budgets that a waiter which set none is held to when
    /// the queue looks at it (see [`Core::out_of_time`]).
    default_budgets: Option<DefaultBudgets>,
}

enum Grant {
    Granted,
    /// The class is at its share; later classes may still be served.
    NoClassRoom,
    /// The limiter is full; nobody behind this waiter may overtake it.
    NoGlobalRoom,
}

/// Reads the clock at most once per dispatch, and only if something needs
/// the time: a waiter's budget or the standing-queue controls.
struct LazyNow(Option<Instant>);

impl LazyNow {
    fn get(&mut self) -> Instant {
        *self.0.get_or_insert_with(Instant::now)
    }
}

impl Core {
    pub(crate) fn new(
        capacity: u64,
        classes: Vec<ClassState>,
        queue_bound: u64,
        discipline: Discipline,
        default_budgets: Option<DefaultBudgets>,
    ) -> Self {
        let mut by_rank: Vec<usize> = (0..classes.len()).collect();
        by_rank.sort_by_key(|&c| classes[c].spec.rank());
        let floors = classes.iter().any(|c| c.spec.floor_slots() > 0);
        let tracked = classes.iter().any(ClassState::is_tracked);
        Self {
            tracked,
            tenants: crate::limiter::heavy::TenantTally::new(classes.len()),
            floors,
            word: AdmissionWord::new(capacity),
            classes: classes.into_boxed_slice(),
            queue: Mutex::new(WaitQueue::new(by_rank)),
            queue_bound,
            discipline,
            default_budgets,
        }
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        self.word.load()
    }

    pub(crate) fn queued(&self) -> (usize, u64) {
        let queue = lock(&self.queue);
        (queue.len(), queue.queued_weight())
    }

    /// Calls waiting for slots, and calls queued since the limiter was
    /// made (wrapping).
    pub(crate) fn waiting_and_arrivals(&self) -> (usize, u64) {
        let queue = lock(&self.queue);
        (queue.len(), queue.arrivals())
    }

    /// The lock-free fast path: admits at once if nobody waits and both the
    /// class's share and the capacity have room. Never blocks, never
    /// allocates, never reads the clock. Returns the limiter's admission
    /// count (wrapping), which callers use to sample.
    #[inline]
    pub(crate) fn try_acquire(&self, class: usize, weight: u64) -> Option<u64> {
        self.try_acquire_in(&self.classes[class], weight)
    }

    /// [`Core::try_acquire`] for a caller that has looked up the class's
    /// state already (`state`, one of `self.classes`).
    // Always: on the fast path that `guard::admit` inlines into every
    // `#[shed]` fn; left to itself the compiler calls it out of line.
    #[inline(always)]
    pub(crate) fn try_acquire_in(&self, state: &ClassState, weight: u64) -> Option<u64> {
        self.try_acquire_as(state, state.is_tracked(), weight)
    }

    /// [`Core::try_acquire_in`] by a caller that knows whether the class
    /// is tracked (the fast path reads it from the class's gate).
    // Always: as `try_acquire_in`.
    #[inline(always)]
    pub(crate) fn try_acquire_as(
        &self,
        state: &ClassState,
        tracked: bool,
        weight: u64,
    ) -> Option<u64> {
        let capacity = self.word.capacity();
        if state.try_take_as(tracked, weight, capacity, true) != ClassTake::Taken {
            return None;
        }
        match self.word.try_take_uncontended(weight, capacity) {
            FastTake::Taken { admitted } => Some(admitted),
            FastTake::Full => {
                if state.untake(weight) {
                    // While our take stood, a dispatcher may have found this
                    // class at its share and left a waiter that fits now.
                    let mut queue = lock(&self.queue);
                    self.dispatch(&mut queue);
                }
                None
            }
        }
    }

    /// Admits regardless of capacity and shares (observe mode). Returns
    /// whether the weight is counted in flight: a weight that the counters
    /// cannot hold is admitted uncounted rather than overflow them.
    pub(crate) fn acquire_unchecked(&self, class: usize, weight: u64) -> bool {
        let state = &self.classes[class];
        if !state.take_unchecked(weight) {
            return false;
        }
        if self.word.take_unchecked(weight) {
            return true;
        }
        if state.untake(weight) {
            let mut queue = lock(&self.queue);
            self.dispatch(&mut queue);
        }
        false
    }

    /// The slow path: queues `waiter` and serves whoever can be served now,
    /// the new waiter included. Returns the waiter's status afterwards:
    /// `Pending` means it waits, and `task` is woken when it is granted or
    /// refused (stored under the lock, before anybody can settle it).
    pub(crate) fn enqueue(&self, waiter: &Arc<Waiter>, task: &Waker) -> Status {
        let mut queue = lock(&self.queue);
        match self.enqueue_locked(&mut queue, waiter) {
            // SAFETY: under the lock of the queue the waiter is in.
            Status::Pending => unsafe { waiter.register(task) },
            settled => settled,
        }
    }

    /// [`Core::enqueue`] of a waiter whose task is woken by nothing (the
    /// tests that look at its status themselves).
    #[cfg(test)]
    pub(crate) fn enqueue_unwoken(&self, waiter: &Arc<Waiter>) -> Status {
        self.enqueue(waiter, Waker::noop())
    }

    /// A waiting call polled again, by a task that may not be the one it
    /// stored: stores `task` if the waiter is still pending, and returns
    /// its status. Under the lock, as every settling (see
    /// `Waiter::register`).
    pub(crate) fn register(&self, waiter: &Waiter, task: &Waker) -> Status {
        let _queue = lock(&self.queue);
        // SAFETY: under the lock of the queue the waiter was queued in.
        unsafe { waiter.register(task) }
    }

    /// [`Core::enqueue`] under its lock.
    fn enqueue_locked(
        &self,
        queue: &mut MutexGuard<'_, WaitQueue>,
        waiter: &Arc<Waiter>,
    ) -> Status {
        let state = &self.classes[waiter.class];
        if !state.is_enabled() {
            // Switched off after the caller checked. The switch is stored
            // before `refuse_class` takes this lock to empty the class, so
            // a waiter queued after that would never be refused.
            self.refuse(waiter, Reason::Disabled);
            return waiter.status();
        }
        let rank = state.spec.rank();
        let rank_of = |c: usize| self.classes[c].spec.rank();
        // What the arrival could evict only matters when it does not fit
        // as things are (the common case fits: no pass over the classes
        // and lanes).
        let fits = queue.queued_weight() + waiter.weight <= self.queue_bound;
        if !fits {
            // What it may evict is in the bands.
            queue.spill();
            let evictable = queue.evictable_by(rank_of, rank, waiter);
            if waiter.weight
                > self
                    .queue_bound
                    .saturating_sub(queue.queued_weight() - evictable)
            {
                // Even evicting everybody it may would not make room:
                // refuse without evicting anybody.
                self.refuse_overflow(queue, waiter, Reason::QueueFull);
                return waiter.status();
            }
        }
        // Kept apart from the bands while it waits alone, where the
        // dispatch serves it without its passes (see `dispatch_apart`).
        let apart = !self.floors && self.discipline.watches().is_none();
        queue.push(Arc::clone(waiter), apart);
        if queue.class_flag_changes(waiter.class, true) {
            state.set_waiters(true);
        }
        if self.waits_alone_behind_the_capacity(queue, state, waiter) {
            return Status::Pending;
        }
        // The waiter's arrival stands in for the clock: read just before
        // it queued, it is at most the time the lock took behind "now", and
        // every waiter's own timer refuses it at its budget exactly.
        if let Some(task) = self.dispatch_at(queue, LazyNow(Some(waiter.arrived))) {
            task.wake();
        }
        if waiter.status() != Status::Pending {
            return waiter.status();
        }
        let mut evicted = false;
        while queue.queued_weight() > self.queue_bound {
            // Checked above that enough weight is evictable; but the
            // dispatch since may have served a waiter a tenant's fair
            // share counted on, so the arrival may be the one to go.
            let victim = match queue.evict_for(rank_of, rank, waiter) {
                Some(victim) => victim,
                None => {
                    queue.remove(waiter);
                    Arc::clone(waiter)
                }
            };
            self.refuse_overflow(queue, &victim, Reason::QueueFull);
            evicted = true;
        }
        if evicted {
            // Evicted waiters may have been heads that held others up.
            self.dispatch(queue);
        }
        waiter.status()
    }

    /// The common way into the queue, decided without a dispatch: the
    /// arrival (queued already, of `class`) waits alone, and the limiter
    /// has no room for it. Sets the limiter's flag first, as every dispatch does (see
    /// the module docs), then reads the word: a release or an undone take
    /// that this read does not see comes later in the word's order than
    /// the flag, so it sees the flag and dispatches. Nothing else that a
    /// dispatch does applies: there is no other waiter to serve or refuse,
    /// and the arrival's class is on (checked by `enqueue`), it is not out
    /// of time at its arrival, and it fits the capacity once the slots
    /// come back. Whether its class's share holds it back as well does
    /// not matter: the limiter's flag stays set, which holds nobody up
    /// who could be admitted (the capacity is what keeps it out) and
    /// costs at most one dispatch more at the next release. The
    /// standing-queue controls watch every arrival: with them, never.
    fn waits_alone_behind_the_capacity(
        &self,
        queue: &mut WaitQueue,
        class: &ClassState,
        waiter: &Waiter,
    ) -> bool {
        if queue.len() != 1 || self.discipline.watches().is_some() {
            return false;
        }
        if !queue.global_flag {
            queue.global_flag = true;
            self.word.set_waiters(true);
        }
        let word = self.word.load();
        word.in_flight + waiter.weight > word.capacity
            && waiter.weight <= class.limit(word.capacity)
            && waiter.expired_at(waiter.arrived).is_none()
    }

    /// Gives `weight` back and wakes whoever it lets in (the tests' way;
    /// a permit uses [`Core::release_at`]).
    #[cfg(test)]
    pub(crate) fn release(&self, class: usize, weight: u64) {
        self.release_at(class, weight, None);
    }

    /// [`Core::release`] by a caller that read the clock just before
    /// (`now`): the dispatch it may make then grants at that time rather
    /// than reading the clock again, as an enqueue's dispatch uses the
    /// arrival (a waiter's own timer refuses it at its budget exactly).
    #[inline]
    pub(crate) fn release_at(&self, class: usize, weight: u64, now: Option<Instant>) {
        // The class first: a waiter that the limiter's capacity holds up is
        // then seen through the limiter's flag by the second write.
        let class_waiters = self.classes[class].give_back(weight);
        if self.word.give_back(weight) || class_waiters {
            self.dispatch_after_release(now);
        }
    }

    /// [`Core::release_at`] of a class without a word of its own and
    /// without a clock read: one `fetch_sub` when nobody waits (the
    /// permit's drop inlines it into every guarded fn).
    #[inline(always)]
    pub(crate) fn release_untracked(&self, weight: u64) {
        if self.word.give_back(weight) {
            self.dispatch_after_release(None);
        }
    }

    /// The waiters' half of [`Core::release_at`], out of line: a release
    /// that finds nobody waiting (the common case) stays small.
    #[inline(never)]
    fn dispatch_after_release(&self, now: Option<Instant>) {
        let mut queue = lock(&self.queue);
        let granted = self.dispatch_at(&mut queue, LazyNow(now));
        // Woken once the lock is let go, so that the task does not
        // run into it (as tokio's `Semaphore` does).
        drop(queue);
        if let Some(task) = granted {
            task.wake();
        }
    }

    /// The waiter's time ran out (`reason`): refuses it unless it was
    /// granted meanwhile. Returns its final status.
    pub(crate) fn expire(&self, waiter: &Arc<Waiter>, reason: Reason) -> Status {
        let mut queue = lock(&self.queue);
        if waiter.status() == Status::Pending {
            queue.remove(waiter);
            self.refuse_overflow(&mut queue, waiter, reason);
            self.after_removal(&mut queue);
        }
        waiter.status()
    }

    /// The waiting future was dropped: forgets the waiter, and gives back
    /// the slots if they were granted but never taken up.
    pub(crate) fn abandon(&self, waiter: &Arc<Waiter>) {
        let mut queue = lock(&self.queue);
        match waiter.status() {
            Status::Pending => {
                queue.remove(waiter);
                // It arrived and was not served: the load counts it.
                queue.codel.load.refused();
            }
            Status::Granted => {
                // Granted, but the call was gone before it took its
                // permit: the slots go straight back.
                self.classes[waiter.class].give_back(waiter.weight);
                self.word.give_back(waiter.weight);
            }
            Status::Refused(_) => return,
        }
        self.after_removal(&mut queue);
    }

    /// After a waiter left without being served: serve whoever its leaving
    /// lets in. With no room in the limiter nobody can be, so only the
    /// flags are brought up to date (the common case of a caller giving up
    /// while the limiter is full costs no dispatch); the standing-queue
    /// controls, which watch every change, always dispatch.
    fn after_removal(&self, queue: &mut MutexGuard<'_, WaitQueue>) {
        let word = self.word.load();
        if word.in_flight < word.capacity || self.discipline.watches().is_some() {
            self.dispatch(queue);
        } else {
            let blocked_globally = queue.global_flag;
            self.settle_flags(queue, blocked_globally);
        }
    }

    /// Serves waiters while slots allow: first classes below their reserved
    /// floor, then every class by rank. Within a class, waiters are served
    /// in arrival order, or newest first under adaptive LIFO; waiters out
    /// of time (their budget, their deadline, or CoDel's standing-queue
    /// bound), of a class switched off, or too heavy to ever fit the
    /// current capacity leave first. A class at its share is skipped; a
    /// waiter that does not fit in the limiter stops the round, so light
    /// calls cannot starve a heavy one.
    fn dispatch(&self, queue: &mut MutexGuard<'_, WaitQueue>) {
        if let Some(task) = self.dispatch_at(queue, LazyNow(None)) {
            task.wake();
        }
    }

    /// [`Core::dispatch`] with the clock read already, or not. Wakes the
    /// tasks it settles but one: the first it grants, which it returns for
    /// the caller to wake, after letting go of the lock if it can (the
    /// grant is published already: see [`Waiter::grant_quietly`]).
    #[must_use = "the granted task must be woken"]
    fn dispatch_at(
        &self,
        queue: &mut MutexGuard<'_, WaitQueue>,
        mut now: LazyNow,
    ) -> Option<Waker> {
        let mut granted: Option<Waker> = None;
        if !queue.is_empty() && !queue.global_flag {
            // Before any waiter is looked at (see the module docs).
            queue.global_flag = true;
            self.word.set_waiters(true);
        }
        if let Some(granted) = self.dispatch_apart(queue, &mut now) {
            return granted;
        }
        // Whatever follows reads the bands.
        queue.spill();
        if let Some(codel) = self.discipline.watches() {
            let now = now.get();
            if self.piling_up_behind_old_waiter(queue, codel, now) {
                queue.codel.overflowed(now);
            }
            let word = self.word.load();
            let reading = Reading {
                admitted: word.admitted,
                queued: queue.len() as u64,
                capacity: word.capacity,
            };
            queue.codel.update(codel, now, reading);
        }
        if queue.len() == 1
            && !self.floors
            && self.discipline.watches().is_none()
            && let Some(granted) = self.dispatch_lone(queue, &mut now)
        {
            return granted;
        }
        let ranks = queue.by_rank.len();
        let passes: &[bool] = if self.floors {
            &[true, false]
        } else {
            &[false]
        };
        for &floors_only in passes {
            for position in 0..ranks {
                let c = queue.by_rank[position];
                let state = &self.classes[c];
                let floor = u64::from(state.spec.floor_slots());
                if floors_only && floor == 0 {
                    continue;
                }
                // A class without waiters (most, and every class once its
                // last waiter is served) costs no lookup.
                while queue.has_waiters(c) {
                    let end = self.end_to_serve(queue);
                    // With one lane of arrival order served from its front
                    // and no standing-queue drops, the waiter served next
                    // is the class's oldest, whose time the check below
                    // looks at anyway: no separate pass over the heads,
                    // and the lane is reached directly.
                    let lone = match end {
                        End::Front if !self.discipline.codel_drops => queue.lone_lane(c),
                        _ => None,
                    };
                    if lone.is_none() {
                        self.refuse_stale(queue, c, &mut now);
                    }
                    // Looked at in place, taken out only once decided: no
                    // reference count is touched for a waiter that stays.
                    let peeked = match lone {
                        Some(band) => queue.lone_front(c, band),
                        None => queue.peek(c, end),
                    };
                    let Some(waiter) = peeked else {
                        break;
                    };
                    if let Some(reason) = self.refusal_at_dispatch(state, waiter, &mut now) {
                        let waiter = queue.pop_served(c, lone, end);
                        self.refuse_overflow(queue, &waiter, reason);
                        continue;
                    }
                    if floors_only && self.class_in_flight(c) >= floor {
                        break;
                    }
                    match self.try_grant(state, waiter) {
                        Grant::Granted => {
                            let waiter = queue.pop_served(c, lone, end);
                            if let Some(task) = waiter.grant_quietly(now.get()) {
                                match granted {
                                    None => granted = Some(task),
                                    Some(_) => task.wake(),
                                }
                            }
                            self.tally(&waiter, true);
                        }
                        Grant::NoClassRoom => break,
                        Grant::NoGlobalRoom => {
                            self.settle_flags(queue, true);
                            return granted;
                        }
                    }
                }
            }
        }
        self.settle_flags(queue, false);
        granted
    }

    /// [`Core::dispatch_at`] of a queue that holds one waiter, in one lane
    /// of arrival order, when no class reserves a floor and the
    /// standing-queue controls are off (the common case under a brief
    /// overload): what the general loop does for that waiter, granting it
    /// or leaving it, without the loop's passes over the classes. `None`
    /// when it must leave the queue unserved (out of time, its class off,
    /// too heavy), or is not in such a lane: the general loop then deals
    /// with it.
    #[inline(always)]
    fn dispatch_lone(&self, queue: &mut WaitQueue, now: &mut LazyNow) -> Option<Option<Waker>> {
        let (c, band) = queue.lone_waiter()?;
        let state = &self.classes[c];
        let waiter = queue.lone_front(c, band)?;
        if self.refusal_at_dispatch(state, waiter, now).is_some() {
            return None;
        }
        let grant = self.try_grant(state, waiter);
        Some(self.settle_alone(queue, grant, now, |queue| {
            queue.pop_lone_front(c, band).expect("peeked")
        }))
    }

    /// What [`Core::dispatch_lone`] and [`Core::dispatch_apart`] do once
    /// the waiter alone in the queue was tried: `take` it out and wake it
    /// if it was granted, and settle the flags either way.
    #[inline(always)]
    fn settle_alone(
        &self,
        queue: &mut WaitQueue,
        grant: Grant,
        now: &mut LazyNow,
        take: impl FnOnce(&mut WaitQueue) -> Arc<Waiter>,
    ) -> Option<Waker> {
        match grant {
            Grant::Granted => {
                let waiter = take(queue);
                let task = waiter.grant_quietly(now.get());
                self.tally(&waiter, true);
                self.settle_flags(queue, false);
                task
            }
            // As the loop: nobody else waits, and only a waiter that the
            // capacity holds back keeps the limiter's flag set.
            Grant::NoClassRoom => {
                self.settle_flags(queue, false);
                None
            }
            Grant::NoGlobalRoom => {
                self.settle_flags(queue, true);
                None
            }
        }
    }

    /// [`Core::dispatch_lone`] of the waiter kept apart from the bands
    /// (see `WaitQueue::apart`), if there is one: it waits alone, in arrival
    /// order, and the queue was built without floors or the
    /// standing-queue controls. `None` when there is none, or when it
    /// must leave the queue unserved: the general loop then deals with
    /// it, from its band.
    #[inline(always)]
    fn dispatch_apart(&self, queue: &mut WaitQueue, now: &mut LazyNow) -> Option<Option<Waker>> {
        let waiter = queue.apart()?;
        let state = &self.classes[waiter.class];
        if self.refusal_at_dispatch(state, waiter, now).is_some() {
            return None;
        }
        let grant = self.try_grant(state, waiter);
        Some(self.settle_alone(queue, grant, now, WaitQueue::take_apart))
    }

    /// Why `waiter` (of `class`) must leave the queue without being
    /// served, if it must: its class was switched off, it ran out of time,
    /// or it can never fit (the capacity fell below its weight while it
    /// waited).
    #[inline(always)]
    fn refusal_at_dispatch(
        &self,
        class: &ClassState,
        waiter: &Waiter,
        now: &mut LazyNow,
    ) -> Option<Reason> {
        if !class.is_enabled() {
            return Some(Reason::Disabled);
        }
        if let Some(reason) = waiter
            .gives_up
            .and_then(|_| self.out_of_time(waiter, now.get()))
        {
            return Some(reason);
        }
        (waiter.weight > class.limit(self.word.capacity())).then_some(Reason::TooHeavy)
    }

    /// Whether `waiter` has run out of time at `now`, and why: past the
    /// budget or the deadline it started to wait with
    /// ([`Waiter::expired_at`]), or, if its budget is the controller's
    /// default ([`Call::default_budget`](super::queue::Call::default_budget)),
    /// past [`STALE_BUDGETS`] times the default in force now.
    ///
    /// The default budgets follow the service time, which each window
    /// reads again, and a budget read while the service was slow (or read
    /// slow) outlived the reading: `grid --mixed`, `fifo-4x10ms-mix` at
    /// 0.8 load, seed 0 (4 workers of a cache's hits and misses, 10 ms on
    /// average, clients of 300 ms), read its slowdown's service time at
    /// 461 ms for calls of 40, the budget became 5.3 s, and while adaptive
    /// LIFO served the newest, 834 calls waited under it. Once the queue
    /// stopped standing, two seconds after the recovery, it served its
    /// oldest: calls that had waited up to 5.4 s, for clients long gone,
    /// under a budget of 76-255 ms by then, and the calls that arrived
    /// meanwhile waited behind them until their own budgets refused them
    /// (that second: 0% in time; 101.6% with this check). Twice the
    /// budget in force, not the budget itself, which moves with every
    /// window's reading: held to it, waiters near its end were refused as
    /// it moved (99% served in time below capacity on 280 runs of the
    /// grid instead of 282). Only down: a waiter keeps the budget it
    /// started with if twice the one in force is longer, and a budget set
    /// for the call or its class is the controller's answer unchanged.
    /// Read under the queue lock, as the waiter's other checks are; the
    /// budget comes from the controller's scale, one relaxed atomic, and a
    /// change this reading misses is seen at the next dispatch.
    #[inline(always)]
    fn out_of_time(&self, waiter: &Waiter, now: Instant) -> Option<Reason> {
        waiter.expired_at(now).or_else(|| {
            let budgets = self
                .default_budgets
                .as_ref()
                .filter(|_| waiter.default_budget)?;
            let budget = budgets.of(&self.classes[waiter.class].spec);
            let stale = budget.saturating_mul(STALE_BUDGETS);
            (now >= crate::deadline::after(waiter.arrived, stale)).then_some(Reason::MaxWait)
        })
    }

    /// Sustained overload, recognised before anyone has run out of budget:
    /// in some class the oldest waiter has waited six times the target
    /// (a measured wait), and more fresh callers (younger than twice the
    /// target) stand behind it than three times the capacity. A burst the
    /// slots can drain does not pile fresh callers up that fast; sustained
    /// overload does, and waiting for the first expiry would first serve a
    /// whole budget's worth of callers late.
    fn piling_up_behind_old_waiter(&self, queue: &WaitQueue, codel: &Codel, now: Instant) -> bool {
        let (Some(old), Some(fresh)) = (
            now.checked_sub(6 * codel.target),
            now.checked_sub(2 * codel.target),
        ) else {
            return false;
        };
        let deep = 3 * self.word.capacity();
        (0..queue.by_rank.len()).any(|c| {
            queue.head(c).is_some_and(|head| head.arrived < old)
                && queue.arrived_after(c, fresh) as u64 >= deep
        })
    }

    /// Refuses the oldest waiters of class `c` while they are out of time:
    /// past their budget or deadline, or too old for a standing queue.
    fn refuse_stale(&self, queue: &mut WaitQueue, c: usize, now: &mut LazyNow) {
        while let Some(front) = queue.head(c) {
            let reason = match front.gives_up {
                Some(_) => self.out_of_time(front, now.get()),
                None => None,
            }
            .or_else(|| {
                // Drop for a standing queue only while enough fresh
                // waiters (younger than the drop bound) remain to keep
                // every slot busy: dropping into idle slots would trade
                // goodput for latency.
                if !self.discipline.codel_drops {
                    return None;
                }
                let codel = &self.discipline.detector;
                let now = now.get();
                let waited = now.saturating_duration_since(front.arrived);
                if !queue.codel.drops(codel, waited) {
                    return None;
                }
                let fresh = queue.arrived_after(c, now.checked_sub(2 * codel.target)?);
                (fresh as u64 >= self.word.capacity()).then_some(Reason::Overload)
            });
            let Some(reason) = reason else {
                return;
            };
            let front = queue.pop_head(c).expect("front exists");
            self.refuse_overflow(queue, &front, reason);
        }
    }

    /// Adaptive LIFO: the newest waiter while the queue stands (sustained
    /// overload, where the oldest caller is the likeliest to have left),
    /// the oldest otherwise, so that bursts are still served in order.
    fn end_to_serve(&self, queue: &WaitQueue) -> End {
        if self.discipline.lifo && queue.codel.is_standing() {
            End::Back
        } else {
            End::Front
        }
    }

    /// Takes `waiter`'s slots, of its class's share (`class`) and of the
    /// limiter, if both have room.
    #[inline(always)]
    fn try_grant(&self, class: &ClassState, waiter: &Waiter) -> Grant {
        // The dispatcher serves the class's own waiters, so it does not
        // yield to the class's flag.
        if class.try_take(waiter.weight, self.word.capacity(), false) != ClassTake::Taken {
            return Grant::NoClassRoom;
        }
        if self.word.try_take_queued(waiter.weight) {
            Grant::Granted
        } else {
            // Under the lock: a waiter of this class that our take kept out
            // is this dispatcher's to serve, and it stops here anyway.
            class.untake(waiter.weight);
            Grant::NoGlobalRoom
        }
    }

    /// The weight a class holds: its own count if tracked, else the total
    /// minus the tracked classes' (momentarily inexact while calls of
    /// other classes are being admitted or released).
    pub(crate) fn class_in_flight(&self, class: usize) -> u64 {
        match self.classes[class].tracked_counts() {
            Some((in_flight, _)) => in_flight,
            None => {
                let tracked: u64 = self
                    .classes
                    .iter()
                    .filter_map(|c| c.tracked_counts().map(|(n, _)| n))
                    .sum();
                self.word.load().in_flight.saturating_sub(tracked)
            }
        }
    }

    fn refuse(&self, waiter: &Waiter, reason: Reason) {
        self.classes[waiter.class].counters.count_refusal(reason);
        waiter.refuse(reason);
        self.tally(waiter, false);
    }

    /// Counts a tenant's waiter admitted or refused (see [`heavy`](crate::limiter::heavy)).
    fn tally(&self, waiter: &Waiter, admitted: bool) {
        if let Some(hash) = waiter.tenant.key {
            self.tenants.record(
                (waiter.class, waiter.tenant.tier),
                (hash, waiter.tenant.name.as_ref()),
                admitted,
                waiter.weight.max(1),
            );
        }
    }

    /// Refuses a waiter that ran out of time or room, which tells the
    /// standing-queue controls that arrival order is losing callers.
    fn refuse_overflow(&self, queue: &mut WaitQueue, waiter: &Waiter, reason: Reason) {
        if self.discipline.watches().is_some() && reason != Reason::Disabled {
            queue.codel.overflowed(Instant::now());
            queue.codel.load.refused();
        }
        self.refuse(waiter, reason);
    }

    /// Brings the flags in line with the queue after a dispatch: each
    /// class's flag says whether it has waiters; the limiter's stays set
    /// only if a waiter is `blocked_globally` (held up by the capacity, not
    /// by its class's share).
    fn settle_flags(&self, queue: &mut WaitQueue, blocked_globally: bool) {
        // Only tracked classes (a share or a floor) keep a flag.
        if self.tracked {
            for c in 0..self.classes.len() {
                let waiting = queue.has_waiters(c);
                if self.classes[c].is_tracked() && queue.class_flag_changes(c, waiting) {
                    self.classes[c].set_waiters(waiting);
                }
            }
        }
        if queue.is_empty() {
            queue.codel.load.drained();
        }
        let global = blocked_globally && !queue.is_empty();
        if queue.global_flag != global {
            queue.global_flag = global;
            self.word.set_waiters(global);
        }
    }

    /// Changes the capacity and serves waiters the new room lets in, or
    /// refuses those that can no longer ever fit.
    pub(crate) fn set_capacity(&self, capacity: u64) {
        self.word.set_capacity(capacity);
        let mut queue = lock(&self.queue);
        if !queue.is_empty() {
            self.dispatch(&mut queue);
        }
    }

    /// Refuses every waiter of `class` (the class was switched off).
    pub(crate) fn refuse_class(&self, class: usize, reason: Reason) {
        let mut queue = lock(&self.queue);
        while let Some(waiter) = queue.pop_head(class) {
            self.refuse(&waiter, reason);
        }
        self.dispatch(&mut queue);
    }
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;
    use crate::class::ClassSpec;
    use crate::limiter::controller::SetBudget;
    use crate::limiter::queue::Call;

    fn core(capacity: u64) -> Core {
        Core::new(
            capacity,
            ClassState::all(vec![
                ClassSpec::new("critical", 0),
                ClassSpec::new("batch", 1).share(0.5),
            ]),
            16,
            Default::default(),
            None,
        )
    }

    fn waiter(class: usize, weight: u64, arrived: Instant) -> Arc<Waiter> {
        Waiter::new(class, weight, arrived, None, None, false)
    }

    #[test]
    fn a_waiter_held_only_by_its_share_leaves_other_classes_the_fast_path() {
        let core = core(4);
        assert!(core.try_acquire(1, 2).is_some(), "batch at its share");
        let queued = waiter(1, 1, Instant::now());
        assert_eq!(core.enqueue_unwoken(&queued), Status::Pending);
        assert!(!core.snapshot().waiters, "the limiter's flag is clear");
        assert!(
            core.try_acquire(0, 2).is_some(),
            "critical admitted on the fast path"
        );
        assert!(
            core.try_acquire(1, 1).is_none(),
            "batch does not overtake its own waiter"
        );
        core.release(1, 1);
        assert_eq!(queued.status(), Status::Granted);
        assert!(!core.classes[1].has_waiters_flag());
    }

    #[test]
    fn a_waiter_held_by_the_capacity_keeps_every_class_off_the_fast_path() {
        let core = core(2);
        assert!(core.try_acquire(0, 2).is_some());
        let queued = waiter(0, 1, Instant::now());
        assert_eq!(core.enqueue_unwoken(&queued), Status::Pending);
        assert!(core.snapshot().waiters);
        core.release(0, 1);
        assert_eq!(queued.status(), Status::Granted);
        assert!(!core.snapshot().waiters);
    }

    #[test]
    fn a_waiter_of_the_default_budget_is_held_to_twice_the_one_in_force() {
        let ms = std::time::Duration::from_millis;
        let budget = std::sync::Arc::new(SetBudget::new(ms(1_000)));
        let core = Core::new(
            1,
            ClassState::all(vec![ClassSpec::new("critical", 0)]),
            16,
            Default::default(),
            Some(DefaultBudgets(budget.clone())),
        );
        assert!(core.try_acquire(0, 1).is_some());
        let start = Instant::now();
        // Each waits under the budget of a second it started with.
        let waiting = |arrived: Instant, default_budget| {
            Arc::new(Waiter::of(Call {
                class: 0,
                weight: 1,
                arrived,
                gives_up: Some((arrived + ms(1_000), Reason::MaxWait)),
                deadline: None,
                retry: false,
                tenant: crate::limiter::fair::TenantTag::new(None, 0),
                default_budget,
            }))
        };
        let defaulted = waiting(start, true);
        let own = waiting(start, false);
        let fresh = waiting(start + ms(140), true);
        let late = waiting(start + ms(141), true);
        for waiter in [&defaulted, &own, &fresh, &late] {
            assert_eq!(core.enqueue_unwoken(waiter), Status::Pending);
        }
        // The service is read faster: the default budget is 50 ms now.
        budget.set(ms(50));
        core.release_at(0, 1, Some(start + ms(150)));
        assert_eq!(
            defaulted.status(),
            Status::Refused(Reason::MaxWait),
            "waited 150 ms, past twice the default in force"
        );
        assert_eq!(own.status(), Status::Granted, "a budget of its own is kept");
        assert_eq!(fresh.status(), Status::Pending);
        core.release_at(0, 1, Some(start + ms(230)));
        assert_eq!(
            fresh.status(),
            Status::Granted,
            "waited 90 ms, past the default but within its noise"
        );
        // Read slower again, the default does not lengthen a wait past the
        // budget it started with.
        budget.set(ms(5_000));
        core.release_at(0, 1, Some(start + ms(1_200)));
        assert_eq!(late.status(), Status::Refused(Reason::MaxWait));
        assert_eq!(core.queued(), (0, 0));
        assert_eq!(core.snapshot().in_flight, 0);
    }

    #[test]
    fn a_release_refuses_the_expired_head_and_grants_the_next_waiter() {
        // One lane in arrival order: the expired head is found by the
        // dispatch's own check of the waiter it serves, not a separate pass.
        let core = core(1);
        assert!(core.try_acquire(0, 1).is_some());
        let start = Instant::now();
        let ms = std::time::Duration::from_millis;
        let budget = |after| Some((start + ms(after), Reason::MaxWait));
        let expired = Waiter::new(0, 1, start, budget(1), None, false);
        let fresh = Waiter::new(0, 1, start + ms(1), budget(1_000), None, false);
        assert_eq!(core.enqueue_unwoken(&expired), Status::Pending);
        assert_eq!(core.enqueue_unwoken(&fresh), Status::Pending);
        core.release_at(0, 1, Some(start + ms(2)));
        assert_eq!(expired.status(), Status::Refused(Reason::MaxWait));
        assert_eq!(fresh.status(), Status::Granted);
        let (refused, _) = core.classes[0].counters.snapshot();
        assert_eq!(refused[Reason::MaxWait.index()], 1);
        core.release(0, 1);
        assert_eq!(core.queued(), (0, 0));
        assert!(!core.snapshot().waiters);
    }

    #[test]
    fn waiters_overtaken_on_the_way_in_are_queued_by_arrival() {
        let core = core(1);
        assert!(core.try_acquire(0, 1).is_some());
        let start = Instant::now();
        let later = waiter(0, 1, start + std::time::Duration::from_millis(1));
        let earlier = waiter(0, 1, start);
        assert_eq!(core.enqueue_unwoken(&later), Status::Pending);
        assert_eq!(core.enqueue_unwoken(&earlier), Status::Pending);
        core.release(0, 1);
        assert_eq!(earlier.status(), Status::Granted);
        assert_eq!(later.status(), Status::Pending);
        // Removing from the middle of a class's queue finds the waiter.
        let last = waiter(0, 1, start + std::time::Duration::from_millis(2));
        assert_eq!(core.enqueue_unwoken(&last), Status::Pending);
        core.abandon(&later);
        core.release(0, 1);
        assert_eq!(last.status(), Status::Granted);
        core.release(0, 1);
        assert_eq!(core.queued(), (0, 0));
    }
}

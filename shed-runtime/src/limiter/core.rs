//! The admission state machine, free of futures so that `loom` can check
//! every interleaving of acquire, release and cancel.
//!
//! Invariants (checked by the property and loom tests):
//! - the in-flight weight never exceeds the capacity, and a class's never
//!   exceeds its share, except transiently after the capacity is lowered;
//! - a waiter is granted, refused or removed exactly once, always under the
//!   queue lock, and every grant is matched by exactly one release;
//! - the `waiters` flag of the admission word is set whenever the queue is
//!   not empty, so the lock-free fast path never overtakes a waiter and a
//!   release always notices that somebody must be woken.

use tokio::time::Instant;

use super::discipline::{Codel, Discipline};
use super::load::Reading;
use super::queue::{End, Status, WaitQueue, Waiter};
use super::state::{AdmissionWord, FastTake, Snapshot};
use crate::class::ClassState;
use crate::rejected::Reason;
use crate::sync::{lock, Arc, Mutex, MutexGuard};

#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) word: AdmissionWord,
    pub(crate) classes: Box<[ClassState]>,
    queue: Mutex<WaitQueue>,
    /// The most weight that may wait at once.
    pub(crate) queue_bound: u64,
    pub(crate) discipline: Discipline,
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
    ) -> Self {
        let mut by_rank: Vec<usize> = (0..classes.len()).collect();
        by_rank.sort_by_key(|&c| classes[c].spec.rank());
        Self {
            word: AdmissionWord::new(capacity),
            classes: classes.into_boxed_slice(),
            queue: Mutex::new(WaitQueue::new(by_rank)),
            queue_bound,
            discipline,
        }
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        self.word.load()
    }

    pub(crate) fn queued(&self) -> (usize, u64) {
        let queue = lock(&self.queue);
        (queue.len(), queue.queued_weight())
    }

    /// The lock-free fast path: admits at once if nobody waits and both the
    /// class's share and the capacity have room. Never blocks, never
    /// allocates, never reads the clock. Returns the limiter's admission
    /// count (wrapping), which callers use to sample.
    #[inline]
    pub(crate) fn try_acquire(&self, class: usize, weight: u64) -> Option<u64> {
        let capacity = self.word.capacity();
        let class = &self.classes[class];
        if !class.try_take(weight, capacity) {
            return None;
        }
        match self.word.try_take_uncontended(weight, capacity) {
            FastTake::Taken { admitted } => Some(admitted),
            FastTake::Full { waiters } => {
                class.untake(weight);
                if waiters {
                    // Our transient take may have made a dispatcher stop
                    // short of a waiter that fits: serve it now.
                    let mut queue = lock(&self.queue);
                    self.dispatch(&mut queue);
                }
                None
            }
        }
    }

    /// Admits regardless of capacity and shares (observe mode).
    pub(crate) fn acquire_unchecked(&self, class: usize, weight: u64) {
        self.classes[class].take_unchecked(weight);
        self.word.take_unchecked(weight);
    }

    /// The slow path: queues `waiter` and serves whoever can be served now,
    /// the new waiter included. Returns the waiter's status afterwards:
    /// `Pending` means it waits (and will be woken).
    pub(crate) fn enqueue(&self, waiter: &Arc<Waiter>) -> Status {
        let mut queue = lock(&self.queue);
        queue.push(Arc::clone(waiter));
        self.word.set_waiters(true);
        self.dispatch(&mut queue);
        if waiter.status() != Status::Pending {
            return waiter.status();
        }
        let rank = self.classes[waiter.class].spec.rank();
        let mut removed_self = false;
        while queue.queued_weight() > self.queue_bound {
            let rank_of = |c: usize| self.classes[c].spec.rank();
            match queue.evict_below(rank_of, rank) {
                Some(victim) => self.refuse_overflow(&mut queue, &victim, Reason::QueueFull),
                None => {
                    queue.remove(waiter);
                    self.refuse_overflow(&mut queue, waiter, Reason::QueueFull);
                    removed_self = true;
                    break;
                }
            }
        }
        if removed_self {
            // The refused arrival may have been the head that blocked others.
            self.dispatch(&mut queue);
        }
        self.settle_flag(&mut queue);
        waiter.status()
    }

    /// Gives `weight` back and wakes whoever it lets in.
    #[inline]
    pub(crate) fn release(&self, class: usize, weight: u64) {
        self.classes[class].give_back(weight);
        if self.word.give_back(weight) {
            let mut queue = lock(&self.queue);
            self.dispatch(&mut queue);
        }
    }

    /// The waiter's time ran out (`reason`): refuses it unless it was
    /// granted meanwhile. Returns its final status.
    pub(crate) fn expire(&self, waiter: &Arc<Waiter>, reason: Reason) -> Status {
        let mut queue = lock(&self.queue);
        if waiter.status() == Status::Pending {
            queue.remove(waiter);
            self.refuse_overflow(&mut queue, waiter, reason);
            self.dispatch(&mut queue);
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
                self.classes[waiter.class].give_back(waiter.weight);
                self.word.give_back(waiter.weight);
            }
            Status::Refused(_) => return,
        }
        self.dispatch(&mut queue);
    }

    /// Serves waiters while slots allow: first classes below their reserved
    /// floor, then every class by rank. Within a class, waiters are served
    /// in arrival order, or newest first under adaptive LIFO; waiters out
    /// of time (their budget, their deadline, or CoDel's standing-queue
    /// bound) leave first. A class at its share is skipped; a waiter that
    /// does not fit in the limiter stops the round, so light calls cannot
    /// starve a heavy one.
    fn dispatch(&self, queue: &mut MutexGuard<'_, WaitQueue>) {
        let mut now = LazyNow(None);
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
        let ranks = queue.by_rank.len();
        for floors_only in [true, false] {
            for position in 0..ranks {
                let c = queue.by_rank[position];
                let floor = u64::from(self.classes[c].spec.floor_slots());
                if floors_only && floor == 0 {
                    continue;
                }
                loop {
                    self.refuse_stale(queue, c, &mut now);
                    let end = self.end_to_serve(queue);
                    let Some(waiter) = queue.peek(c, end).cloned() else {
                        break;
                    };
                    if let Some(reason) = waiter.gives_up.and_then(|_| waiter.expired_at(now.get()))
                    {
                        queue.pop(c, end);
                        self.refuse_overflow(queue, &waiter, reason);
                        continue;
                    }
                    if floors_only && self.class_in_flight(c) >= floor {
                        break;
                    }
                    match self.try_grant(&waiter) {
                        Grant::Granted => {
                            queue.pop(c, end);
                            waiter.grant();
                        }
                        Grant::NoClassRoom => break,
                        Grant::NoGlobalRoom => {
                            self.settle_flag(queue);
                            return;
                        }
                    }
                }
            }
        }
        self.settle_flag(queue);
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
                Some(_) => front.expired_at(now.get()),
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

    fn try_grant(&self, waiter: &Waiter) -> Grant {
        let class = &self.classes[waiter.class];
        if !class.try_take(waiter.weight, self.word.capacity()) {
            return Grant::NoClassRoom;
        }
        if self.word.try_take_queued(waiter.weight) {
            Grant::Granted
        } else {
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

    fn settle_flag(&self, queue: &mut WaitQueue) {
        if queue.is_empty() {
            queue.codel.load.drained();
            self.word.set_waiters(false);
        }
    }

    /// Changes the capacity and serves waiters the new room lets in.
    pub(crate) fn set_capacity(&self, capacity: u64) {
        if self.word.set_capacity(capacity) {
            let mut queue = lock(&self.queue);
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

//! The bounded wait queue: one FIFO per class, served by rank, plus the
//! waiter nodes shared between a waiting future and the dispatcher.

use std::collections::VecDeque;
use std::task::Waker;

use tokio::time::Instant;

use crate::rejected::Reason;
use crate::sync::{Arc, AtomicU64, AtomicU8, Ordering, WakerSlot};

const PENDING: u8 = 0;
const GRANTED: u8 = 1;
const REFUSED_BASE: u8 = 2;

/// What happened to a waiter, as seen by its future.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Pending,
    Granted,
    Refused(Reason),
}

/// One call waiting for slots. Shared by its future and, while queued, the
/// queue; its status only changes under the queue lock.
#[derive(Debug)]
pub(crate) struct Waiter {
    pub(crate) class: usize,
    pub(crate) weight: u64,
    pub(crate) arrived: Instant,
    /// When the waiter gives up, and why: its `max_wait` budget or the last
    /// moment at which its deadline can still be met.
    pub(crate) gives_up: Option<(Instant, Reason)>,
    /// The caller's deadline, handed on to the permit.
    pub(crate) deadline: Option<Instant>,
    /// A retry of the caller's request, served after the class's first
    /// attempts (when the limiter lets retries yield).
    pub(crate) retry: bool,
    /// The order in which it was queued: with `arrived`, its place in its
    /// class's queue (set under the queue lock).
    seq: AtomicU64,
    /// When it was granted, in nanoseconds after `arrived` (set under the
    /// queue lock before the grant is published), so that its future
    /// reads no clock of its own for its queue wait and its permit.
    granted_after: AtomicU64,
    status: AtomicU8,
    waker: WakerSlot,
    /// Its budget's timer, polled by its future alone (see `wait_timer`).
    pub(crate) timer: super::wait_timer::TimerSlot,
}

impl Waiter {
    /// A shared waiter without a timer (the tests' way to make one).
    #[cfg(test)]
    pub(crate) fn new(
        class: usize,
        weight: u64,
        arrived: Instant,
        gives_up: Option<(Instant, Reason)>,
        deadline: Option<Instant>,
        retry: bool,
    ) -> Arc<Self> {
        Arc::new(Self::fresh(
            class, weight, arrived, gives_up, deadline, retry,
        ))
    }

    /// A waiter not yet shared (see `wait_timer`, which sets its timer).
    pub(crate) fn fresh(
        class: usize,
        weight: u64,
        arrived: Instant,
        gives_up: Option<(Instant, Reason)>,
        deadline: Option<Instant>,
        retry: bool,
    ) -> Self {
        Self {
            class,
            weight,
            arrived,
            gives_up,
            deadline,
            retry,
            seq: AtomicU64::new(0),
            granted_after: AtomicU64::new(0),
            status: AtomicU8::new(PENDING),
            waker: WakerSlot::new(),
            timer: Default::default(),
        }
    }

    pub(crate) fn status(&self) -> Status {
        match self.status.load(Ordering::SeqCst) {
            PENDING => Status::Pending,
            GRANTED => Status::Granted,
            refused => Status::Refused(Reason::ALL[usize::from(refused - REFUSED_BASE)]),
        }
    }

    /// Stores the task to wake when the status changes.
    pub(crate) fn register(&self, waker: &Waker) {
        self.waker.register(waker);
    }

    fn settle(&self, status: u8) {
        self.status.store(status, Ordering::SeqCst);
        self.waker.wake();
    }

    /// Grants the waiter its slots at `now` (the dispatcher's clock).
    pub(crate) fn grant(&self, now: Instant) {
        let after = now.saturating_duration_since(self.arrived);
        let nanos = u64::try_from(after.as_nanos()).unwrap_or(u64::MAX);
        // Published by the status store that follows (`SeqCst`).
        self.granted_after.store(nanos, Ordering::Relaxed);
        self.settle(GRANTED);
    }

    /// When a granted waiter was granted (read after seeing `Granted`).
    pub(crate) fn granted_at(&self) -> Instant {
        self.arrived + std::time::Duration::from_nanos(self.granted_after.load(Ordering::Relaxed))
    }

    pub(crate) fn refuse(&self, reason: Reason) {
        self.settle(REFUSED_BASE + reason.index() as u8);
    }

    /// Whether the waiter has run out of time at `now`, and why.
    pub(crate) fn expired_at(&self, now: Instant) -> Option<Reason> {
        match self.gives_up {
            Some((at, reason)) if now >= at => Some(reason),
            _ => None,
        }
    }
}

/// Which end of a class's queue to serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The oldest waiter (FIFO).
    Front,
    /// The newest waiter (LIFO).
    Back,
}

/// The waiters of one class: first attempts, then retries, each in
/// arrival order.
#[derive(Debug, Default)]
struct ClassQueue {
    first: VecDeque<Arc<Waiter>>,
    retries: VecDeque<Arc<Waiter>>,
}

/// A waiter's place: arrival, then queueing order.
fn key(waiter: &Waiter) -> (Instant, u64) {
    (waiter.arrived, waiter.seq.load(Ordering::Relaxed))
}

impl ClassQueue {
    fn band(&mut self, retry: bool) -> &mut VecDeque<Arc<Waiter>> {
        if retry {
            &mut self.retries
        } else {
            &mut self.first
        }
    }

    fn is_empty(&self) -> bool {
        self.first.is_empty() && self.retries.is_empty()
    }

    /// The band served next: first attempts while there are any.
    fn served(&self) -> &VecDeque<Arc<Waiter>> {
        if self.first.is_empty() {
            &self.retries
        } else {
            &self.first
        }
    }

    /// Whether the oldest waiter of the class is a retry.
    fn oldest_is_retry(&self) -> bool {
        match (self.first.front(), self.retries.front()) {
            (Some(first), Some(retry)) => key(retry) < key(first),
            (None, Some(_)) => true,
            _ => false,
        }
    }
}

/// The waiters of every class, in arrival order within a class (first
/// attempts ahead of retries, see [`ClassQueue`]).
#[derive(Debug)]
pub(crate) struct WaitQueue {
    per_class: Vec<ClassQueue>,
    /// CoDel's state, if the limiter uses CoDel.
    pub(crate) codel: super::discipline::CodelState,
    /// Class indices from the highest priority (rank 0) down; ties keep
    /// configuration order.
    pub(crate) by_rank: Vec<usize>,
    queued_weight: u64,
    /// The weight queued in each class, and in its retries.
    class_weight: Vec<u64>,
    retry_weight: Vec<u64>,
    len: usize,
    /// Sequence numbers handed out by [`WaitQueue::push`].
    next_seq: u64,
    /// The waiters flag of each class's word as last set, so that only
    /// changes cost an atomic write.
    class_flags: Vec<bool>,
    /// The limiter's waiters flag as last set.
    pub(crate) global_flag: bool,
}

impl WaitQueue {
    pub(crate) fn new(by_rank: Vec<usize>) -> Self {
        Self {
            per_class: by_rank.iter().map(|_| ClassQueue::default()).collect(),
            class_flags: by_rank.iter().map(|_| false).collect(),
            class_weight: by_rank.iter().map(|_| 0).collect(),
            retry_weight: by_rank.iter().map(|_| 0).collect(),
            codel: Default::default(),
            by_rank,
            queued_weight: 0,
            len: 0,
            next_seq: 0,
            global_flag: false,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn queued_weight(&self) -> u64 {
        self.queued_weight
    }

    /// Queues `waiter` in arrival order within its class and band. Arrival
    /// times are read before the lock is taken, so a caller can be
    /// overtaken on the way in; it is then placed by its arrival, keeping
    /// each band sorted (which the searches below rely on).
    pub(crate) fn push(&mut self, waiter: Arc<Waiter>) {
        self.queued_weight += waiter.weight;
        self.class_weight[waiter.class] += waiter.weight;
        if waiter.retry {
            self.retry_weight[waiter.class] += waiter.weight;
        }
        self.len += 1;
        waiter.seq.store(self.next_seq, Ordering::Relaxed);
        self.next_seq += 1;
        let band = self.per_class[waiter.class].band(waiter.retry);
        if band
            .back()
            .is_none_or(|last| last.arrived <= waiter.arrived)
        {
            band.push_back(waiter);
        } else {
            let at = band.partition_point(|w| w.arrived <= waiter.arrived);
            band.insert(at, waiter);
        }
    }

    /// Whether `class` has queued waiters.
    pub(crate) fn has_waiters(&self, class: usize) -> bool {
        !self.per_class[class].is_empty()
    }

    /// The weight an arrival of `class` (ranked `rank`, a `retry` or not)
    /// may evict: every waiter of a class ranked below it, and the
    /// retries of its own class if it is a first attempt.
    pub(crate) fn evictable_by(
        &self,
        rank_of: impl Fn(usize) -> u32,
        rank: u32,
        class: usize,
        retry: bool,
    ) -> u64 {
        let below: u64 = (0..self.per_class.len())
            .filter(|&c| rank_of(c) > rank)
            .map(|c| self.class_weight[c])
            .sum();
        below + if retry { 0 } else { self.retry_weight[class] }
    }

    /// Records that class `c`'s waiters flag is now `on`; returns whether
    /// that is a change (which the caller then makes in the class word).
    pub(crate) fn class_flag_changes(&mut self, class: usize, on: bool) -> bool {
        std::mem::replace(&mut self.class_flags[class], on) != on
    }

    /// How many waiters of `class` arrived after `since`.
    pub(crate) fn arrived_after(&self, class: usize, since: Instant) -> usize {
        let queue = &self.per_class[class];
        [&queue.first, &queue.retries]
            .into_iter()
            .map(|band| band.len() - band.partition_point(|w| w.arrived <= since))
            .sum()
    }

    /// The oldest waiter of `class`, first attempt or retry.
    pub(crate) fn head(&self, class: usize) -> Option<&Arc<Waiter>> {
        let queue = &self.per_class[class];
        if queue.oldest_is_retry() {
            queue.retries.front()
        } else {
            queue.first.front()
        }
    }

    /// Removes the oldest waiter of `class`.
    pub(crate) fn pop_head(&mut self, class: usize) -> Option<Arc<Waiter>> {
        let queue = &mut self.per_class[class];
        let retry = queue.oldest_is_retry();
        let waiter = queue.band(retry).pop_front()?;
        self.forget(&waiter);
        Some(waiter)
    }

    /// The waiter of `class` to serve next: from `end` of its first
    /// attempts, or of its retries when no first attempt waits.
    pub(crate) fn peek(&self, class: usize, end: End) -> Option<&Arc<Waiter>> {
        let band = self.per_class[class].served();
        match end {
            End::Front => band.front(),
            End::Back => band.back(),
        }
    }

    /// Removes the waiter [`WaitQueue::peek`] shows.
    pub(crate) fn pop(&mut self, class: usize, end: End) -> Option<Arc<Waiter>> {
        let queue = &mut self.per_class[class];
        let retry = queue.first.is_empty();
        let band = queue.band(retry);
        let waiter = match end {
            End::Front => band.pop_front(),
            End::Back => band.pop_back(),
        }?;
        self.forget(&waiter);
        Some(waiter)
    }

    /// Removes a waiter to make room for an arrival of `class` (ranked
    /// `rank`, a `retry` or not): the newest (a retry if there is one) of
    /// the lowest-priority class ranked below it, else, for a first
    /// attempt, the newest retry of its own class.
    pub(crate) fn evict_for(
        &mut self,
        rank_of: impl Fn(usize) -> u32,
        rank: u32,
        class: usize,
        retry: bool,
    ) -> Option<Arc<Waiter>> {
        let lower = self
            .by_rank
            .iter()
            .rev()
            .copied()
            .find(|&c| rank_of(c) > rank && !self.per_class[c].is_empty());
        let waiter = match lower {
            Some(c) => {
                let queue = &mut self.per_class[c];
                match queue.retries.pop_back() {
                    Some(retry) => retry,
                    None => queue.first.pop_back()?,
                }
            }
            None if !retry => self.per_class[class].retries.pop_back()?,
            None => return None,
        };
        self.forget(&waiter);
        Some(waiter)
    }

    /// Removes `waiter` if it is still queued: a binary search by its
    /// arrival and queueing order, so cancelling or expiring one of many
    /// waiters costs a search and a move of pointers, not a scan.
    pub(crate) fn remove(&mut self, waiter: &Arc<Waiter>) -> bool {
        let target = key(waiter);
        let band = self.per_class[waiter.class].band(waiter.retry);
        let index = band.partition_point(|w| key(w) < target);
        match band.get(index) {
            Some(found) if Arc::ptr_eq(found, waiter) => {
                band.remove(index);
                self.forget(waiter);
                true
            }
            _ => false,
        }
    }

    fn forget(&mut self, waiter: &Waiter) {
        self.queued_weight -= waiter.weight;
        self.class_weight[waiter.class] -= waiter.weight;
        if waiter.retry {
            self.retry_weight[waiter.class] -= waiter.weight;
        }
        self.len -= 1;
    }
}

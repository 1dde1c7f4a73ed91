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
    /// The order in which it was queued: with `arrived`, its place in its
    /// class's queue (set under the queue lock).
    seq: AtomicU64,
    status: AtomicU8,
    waker: WakerSlot,
}

impl Waiter {
    pub(crate) fn new(
        class: usize,
        weight: u64,
        arrived: Instant,
        gives_up: Option<(Instant, Reason)>,
        deadline: Option<Instant>,
    ) -> Arc<Self> {
        Arc::new(Self {
            class,
            weight,
            arrived,
            gives_up,
            deadline,
            seq: AtomicU64::new(0),
            status: AtomicU8::new(PENDING),
            waker: WakerSlot::new(),
        })
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

    pub(crate) fn grant(&self) {
        self.settle(GRANTED);
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

/// The waiters of every class, in arrival order within a class.
#[derive(Debug)]
pub(crate) struct WaitQueue {
    per_class: Vec<VecDeque<Arc<Waiter>>>,
    /// CoDel's state, if the limiter uses CoDel.
    pub(crate) codel: super::discipline::CodelState,
    /// Class indices from the highest priority (rank 0) down; ties keep
    /// configuration order.
    pub(crate) by_rank: Vec<usize>,
    queued_weight: u64,
    /// The weight queued in each class.
    class_weight: Vec<u64>,
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
            per_class: by_rank.iter().map(|_| VecDeque::new()).collect(),
            class_flags: by_rank.iter().map(|_| false).collect(),
            class_weight: by_rank.iter().map(|_| 0).collect(),
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

    /// Queues `waiter` in arrival order within its class. Arrival times
    /// are read before the lock is taken, so a caller can be overtaken on
    /// the way in; it is then placed by its arrival, keeping each class's
    /// queue sorted (which the searches below rely on).
    pub(crate) fn push(&mut self, waiter: Arc<Waiter>) {
        self.queued_weight += waiter.weight;
        self.class_weight[waiter.class] += waiter.weight;
        self.len += 1;
        waiter.seq.store(self.next_seq, Ordering::Relaxed);
        self.next_seq += 1;
        let queue = &mut self.per_class[waiter.class];
        if queue
            .back()
            .is_none_or(|last| last.arrived <= waiter.arrived)
        {
            queue.push_back(waiter);
        } else {
            let at = queue.partition_point(|w| w.arrived <= waiter.arrived);
            queue.insert(at, waiter);
        }
    }

    /// Whether `class` has queued waiters.
    pub(crate) fn has_waiters(&self, class: usize) -> bool {
        !self.per_class[class].is_empty()
    }

    /// The total weight queued in classes ranked below `rank`.
    pub(crate) fn weight_below(&self, rank_of: impl Fn(usize) -> u32, rank: u32) -> u64 {
        (0..self.per_class.len())
            .filter(|&c| rank_of(c) > rank)
            .map(|c| self.class_weight[c])
            .sum()
    }

    /// Records that class `c`'s waiters flag is now `on`; returns whether
    /// that is a change (which the caller then makes in the class word).
    pub(crate) fn class_flag_changes(&mut self, class: usize, on: bool) -> bool {
        std::mem::replace(&mut self.class_flags[class], on) != on
    }

    /// How many waiters of `class` arrived after `since`.
    pub(crate) fn arrived_after(&self, class: usize, since: Instant) -> usize {
        let queue = &self.per_class[class];
        queue.len() - queue.partition_point(|w| w.arrived <= since)
    }

    pub(crate) fn head(&self, class: usize) -> Option<&Arc<Waiter>> {
        self.per_class[class].front()
    }

    pub(crate) fn pop_head(&mut self, class: usize) -> Option<Arc<Waiter>> {
        self.pop(class, End::Front)
    }

    pub(crate) fn peek(&self, class: usize, end: End) -> Option<&Arc<Waiter>> {
        match end {
            End::Front => self.per_class[class].front(),
            End::Back => self.per_class[class].back(),
        }
    }

    pub(crate) fn pop(&mut self, class: usize, end: End) -> Option<Arc<Waiter>> {
        let waiter = match end {
            End::Front => self.per_class[class].pop_front(),
            End::Back => self.per_class[class].pop_back(),
        }?;
        self.forget(&waiter);
        Some(waiter)
    }

    /// Removes the newest waiter of the lowest-priority class ranked below
    /// `rank`, to make room for a more important arrival.
    pub(crate) fn evict_below(
        &mut self,
        rank_of: impl Fn(usize) -> u32,
        rank: u32,
    ) -> Option<Arc<Waiter>> {
        let class = self
            .by_rank
            .iter()
            .rev()
            .copied()
            .find(|&c| rank_of(c) > rank && !self.per_class[c].is_empty())?;
        let waiter = self.per_class[class].pop_back()?;
        self.forget(&waiter);
        Some(waiter)
    }

    /// Removes `waiter` if it is still queued: a binary search by its
    /// arrival and queueing order, so cancelling or expiring one of many
    /// waiters costs a search and a move of pointers, not a scan.
    pub(crate) fn remove(&mut self, waiter: &Arc<Waiter>) -> bool {
        let key = |w: &Waiter| (w.arrived, w.seq.load(Ordering::Relaxed));
        let target = key(waiter);
        let queue = &mut self.per_class[waiter.class];
        let index = queue.partition_point(|w| key(w) < target);
        match queue.get(index) {
            Some(found) if Arc::ptr_eq(found, waiter) => {
                queue.remove(index);
                self.forget(waiter);
                true
            }
            _ => false,
        }
    }

    fn forget(&mut self, waiter: &Waiter) {
        self.queued_weight -= waiter.weight;
        self.class_weight[waiter.class] -= waiter.weight;
        self.len -= 1;
    }
}

//! The bounded wait queue: one queue per class, served by rank, plus the
//! waiter nodes shared between a waiting future and the dispatcher.
//!
//! A class's queue is a list of bands served in order: each tier's first
//! attempts, then its retries (see [`ClassQueue`]); each band is fair
//! across tenants ([`super::fair`]).

use std::task::Waker;

use tokio::time::Instant;

use super::fair::{key, FairBand, TenantTag};
use crate::rejected::Reason;
use crate::sync::{Arc, AtomicU64, AtomicU8, Ordering, PublishedCell, WakerCell};

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
///
/// It reads as its [`Call`] (`waiter.class`, `waiter.arrived`, ...): what
/// the call asked for is fixed while it waits; the rest is the queue's.
#[derive(Debug)]
pub(crate) struct Waiter {
    /// What the call asked for.
    call: Call,
    /// The order in which it was queued: with `arrived`, its place in its
    /// class's queue (set under the queue lock).
    seq: AtomicU64,
    /// When it was granted, by the dispatcher's clock: written under the
    /// queue lock before the grant is published, read by its future after
    /// seeing the grant (see [`Waiter::granted_at`]), so that it reads no
    /// clock of its own for its permit and its queue wait, and the
    /// dispatcher works nothing out for it.
    granted_at: PublishedCell<Instant>,
    status: AtomicU8,
    /// The task to wake when the status changes: left by the waiting
    /// future under the queue lock, taken by whoever settles the waiter,
    /// under the same lock (see [`WakerCell`]).
    waker: WakerCell,
    /// Its budget's timer, polled by its future alone (see `wait_timer`).
    pub(crate) timer: super::wait_timer::TimerSlot,
}

impl Waiter {
    /// A shared waiter without a tenant or a timer (the tests' way to make one).
    #[cfg(test)]
    pub(crate) fn new(
        class: usize,
        weight: u64,
        arrived: Instant,
        gives_up: Option<(Instant, Reason)>,
        deadline: Option<Instant>,
        retry: bool,
    ) -> Arc<Self> {
        Self::for_tenant(
            class,
            weight,
            arrived,
            gives_up,
            deadline,
            retry,
            TenantTag::new(None, 0),
        )
    }

    /// A shared waiter of a tenant (see [`TenantTag`]), without a timer.
    #[cfg(test)]
    pub(crate) fn for_tenant(
        class: usize,
        weight: u64,
        arrived: Instant,
        gives_up: Option<(Instant, Reason)>,
        deadline: Option<Instant>,
        retry: bool,
        tenant: TenantTag,
    ) -> Arc<Self> {
        Arc::new(Self::of(Call {
            class,
            weight,
            arrived,
            gives_up,
            deadline,
            retry,
            tenant,
            default_budget: false,
        }))
    }

    /// A waiter for `call`, not yet shared, without a timer (see
    /// `wait_timer`, which sets it).
    pub(crate) fn of(call: Call) -> Self {
        Self {
            granted_at: PublishedCell::new(call.arrived),
            call,
            seq: AtomicU64::new(0),
            status: AtomicU8::new(PENDING),
            waker: WakerCell::new(),
            timer: Default::default(),
        }
    }

    /// Makes a waiter that nobody shares any more new for `call`, in place:
    /// every field but the timer is written (the caller sets the timer),
    /// without moving the whole waiter (its timer makes it large).
    #[cfg_attr(shed_loom, allow(dead_code))] // the spare is not modelled
    pub(crate) fn renew(&mut self, call: Call) {
        self.granted_at.set(call.arrived);
        self.call = call;
        self.seq = AtomicU64::new(0);
        self.status = AtomicU8::new(PENDING);
        // The waker cell was emptied by `clear`, as every spare's is.
    }

    /// Lets go of what a finished waiter refers to (the task that waited,
    /// its tenant's name), so that a spare keeps nothing alive.
    pub(crate) fn clear(&mut self) {
        self.waker.clear();
        self.call.tenant = TenantTag::new(None, 0);
    }

    /// Its queueing order (set under the queue lock).
    pub(crate) fn seq(&self) -> u64 {
        self.seq.load(Ordering::Relaxed)
    }

    pub(crate) fn set_seq(&self, seq: u64) {
        self.seq.store(seq, Ordering::Relaxed);
    }

    pub(crate) fn status(&self) -> Status {
        match self.status.load(Ordering::SeqCst) {
            PENDING => Status::Pending,
            GRANTED => Status::Granted,
            refused => Status::Refused(Reason::ALL[usize::from(refused - REFUSED_BASE)]),
        }
    }

    /// Stores the task to wake when the status changes, if the waiter is
    /// still pending; returns its status. Under the queue lock, as every
    /// settling: so a waiter settled before this call is seen settled
    /// here, and one settled after it wakes the task stored here.
    ///
    /// # Safety
    ///
    /// The caller holds the lock of the queue this waiter is queued in.
    pub(crate) unsafe fn register(&self, waker: &Waker) -> Status {
        let status = self.status();
        if status == Status::Pending {
            // SAFETY: under the queue lock (the caller's contract), as
            // every access through `&self`.
            unsafe { self.waker.register(waker) };
        }
        status
    }

    /// Settles the waiter and wakes its task. Under the queue lock (the
    /// caller's, as every settling).
    fn settle(&self, status: u8) {
        self.status.store(status, Ordering::SeqCst);
        // SAFETY: under the queue lock (the callers: `refuse`, by the
        // core's dispatch, expiry and refusals, all holding it; and the
        // tests' own waiters, which nothing else reaches at the time).
        if let Some(task) = unsafe { self.waker.take() } {
            task.wake();
        }
    }

    /// Grants the waiter its slots at `now` (the dispatcher's clock).
    #[cfg(all(test, not(shed_loom)))]
    pub(crate) fn grant(&self, now: Instant) {
        if let Some(task) = self.grant_quietly(now) {
            task.wake();
        }
    }

    /// Grants the waiter its slots at `now` (the dispatcher's clock), and
    /// returns its task for the caller to wake, unwoken, so that the
    /// dispatcher can wake it after letting go of the queue lock. Sound to
    /// wake late: the grant is stored before the task is taken, so a poll
    /// meanwhile sees it, and a registration meanwhile (under the lock,
    /// after this) sees the grant and stores nothing.
    pub(crate) fn grant_quietly(&self, now: Instant) -> Option<Waker> {
        // SAFETY: under the queue lock, as every grant; a waiter is granted
        // once (it leaves the queue as it is), and its time is read only
        // after the status store below, which publishes it (`SeqCst`).
        unsafe { self.granted_at.write(now) };
        self.status.store(GRANTED, Ordering::SeqCst);
        // SAFETY: under the queue lock, as above.
        unsafe { self.waker.take() }
    }

    /// When the waiter was granted, by the dispatcher's clock, if it was.
    pub(crate) fn granted_at(&self) -> Option<Instant> {
        // SAFETY: the grant's time is written before the status store that
        // this load saw, and never again while the waiter is shared.
        (self.status() == Status::Granted).then(|| unsafe { self.granted_at.read() })
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

impl std::ops::Deref for Waiter {
    type Target = Call;

    fn deref(&self) -> &Call {
        &self.call
    }
}

/// What a call that must wait brings to its waiter.
#[derive(Debug)]
pub(crate) struct Call {
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
    /// The caller's tenant and tier, and its lane in the queue.
    pub(crate) tenant: TenantTag,
    /// Whether its budget is the controller's default for its class (it
    /// set no `max_wait` of its own): it is then held to twice the
    /// default in force as well, whichever ends first (see
    /// `Core::out_of_time`).
    pub(crate) default_budget: bool,
}

/// Which end of a class's queue to serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The oldest waiter (FIFO).
    Front,
    /// The newest waiter (LIFO).
    Back,
}

/// The waiters of one class, in bands served in order: tier 0's first
/// attempts, tier 0's retries, tier 1's first attempts, and so on (a
/// tier is a rank within the class; retries yield within their tier).
/// Without tiers or retries there is one band; without tenants a band is
/// one FIFO.
#[derive(Debug, Default)]
struct ClassQueue {
    bands: Vec<FairBand>,
    len: usize,
    weight: u64,
}

/// The band of a waiter of `tier`, a `retry` or not.
fn band_of(waiter: &Waiter) -> usize {
    usize::from(waiter.tenant.tier) * 2 + usize::from(waiter.retry)
}

impl ClassQueue {
    #[inline]
    fn band(&mut self, index: usize) -> &mut FairBand {
        if self.bands.len() <= index {
            self.bands.resize_with(index + 1, FairBand::default);
        }
        &mut self.bands[index]
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The band served next: the first with waiters.
    #[inline]
    fn served(&self) -> Option<usize> {
        self.bands.iter().position(|b| !b.is_empty())
    }

    /// The band holding the class's oldest waiter, and that waiter. A band
    /// that holds every waiter of the class ends the search (the common
    /// case: one band), so an empty class or a single band costs no scan.
    fn oldest(&self) -> Option<(usize, &Arc<Waiter>)> {
        if self.len == 0 {
            return None;
        }
        let mut best: Option<(usize, &Arc<Waiter>)> = None;
        for (i, band) in self.bands.iter().enumerate() {
            let Some(waiter) = band.oldest() else {
                continue;
            };
            if band.len() == self.len {
                return Some((i, waiter));
            }
            if best.is_none_or(|(_, b)| key(waiter) < key(b)) {
                best = Some((i, waiter));
            }
        }
        best
    }

    /// The last band with waiters after band `after` (all bands if `None`).
    fn last_after(&self, after: Option<usize>) -> Option<usize> {
        let from = after.map_or(0, |a| a + 1);
        (from..self.bands.len())
            .rev()
            .find(|&i| !self.bands[i].is_empty())
    }

    /// The weight of the bands served after band `own`.
    fn weight_after(&self, own: usize) -> u64 {
        self.bands.iter().skip(own + 1).map(FairBand::weight).sum()
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
    len: usize,
    /// Sequence numbers handed out by [`WaitQueue::push`].
    next_seq: u64,
    /// The waiters flag of each class's word as last set, so that only
    /// changes cost an atomic write.
    class_flags: Vec<bool>,
    /// The limiter's waiters flag as last set.
    pub(crate) global_flag: bool,
    /// The one waiter of a queue that holds no other, kept apart from its
    /// class's bands (see [`WaitQueue::push`]): a brief overload queues
    /// one call at a time, and queueing it, serving it or taking it out
    /// then moves a pointer rather than walking the class's bands and
    /// lanes. Counted as any waiter is (`len`, `queued_weight`, its
    /// class's `len` and `weight`); moved into its band
    /// ([`WaitQueue::spill`]) before anything looks at the bands, which
    /// then hold every waiter as if it had been pushed there.
    apart: Option<Arc<Waiter>>,
}

impl WaitQueue {
    pub(crate) fn new(by_rank: Vec<usize>) -> Self {
        Self {
            per_class: by_rank.iter().map(|_| ClassQueue::default()).collect(),
            class_flags: by_rank.iter().map(|_| false).collect(),
            codel: Default::default(),
            by_rank,
            queued_weight: 0,
            len: 0,
            next_seq: 0,
            global_flag: false,
            apart: None,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn queued_weight(&self) -> u64 {
        self.queued_weight
    }

    /// Calls queued since the queue was made (wrapping): what came to
    /// wait for a slot, served, refused or still waiting.
    #[inline]
    pub(crate) fn arrivals(&self) -> u64 {
        self.next_seq
    }

    /// Queues `waiter` in arrival order within its class, band and lane.
    /// Arrival times are read before the lock is taken, so a caller can be
    /// overtaken on the way in; it is then placed by its arrival, keeping
    /// each lane sorted (which the searches rely on).
    ///
    /// With `apart` (the caller serves the queue without floors or the
    /// standing-queue controls), the first waiter of an empty queue is
    /// kept apart from the bands while it stays alone (see
    /// `WaitQueue::apart`) if its band would hold it in its one lane of
    /// arrival order and keep no history for it: it has no tenant, and no
    /// tenant has waited in its band.
    #[inline]
    pub(crate) fn push(&mut self, waiter: Arc<Waiter>, apart: bool) {
        self.queued_weight += waiter.weight;
        self.len += 1;
        waiter.set_seq(self.next_seq);
        self.next_seq += 1;
        let (class, band) = (waiter.class, band_of(&waiter));
        let queue = &mut self.per_class[class];
        queue.len += 1;
        queue.weight += waiter.weight;
        if apart
            && self.len == 1
            && waiter.tenant.key.is_none()
            && queue.bands.get(band).is_none_or(FairBand::anonymous_only)
        {
            self.apart = Some(waiter);
            return;
        }
        // The waiter apart came first: it goes in first.
        self.spill();
        self.per_class[class].band(band).push(waiter);
    }

    /// Moves the waiter kept apart, if any, into its band: where
    /// [`WaitQueue::push`] would have put it (nothing else was queued
    /// since, so its band is as it was).
    #[inline]
    pub(crate) fn spill(&mut self) {
        if let Some(waiter) = self.apart.take() {
            let band = band_of(&waiter);
            self.per_class[waiter.class].band(band).push(waiter);
        }
    }

    /// The waiter kept apart (the only one queued), if any.
    #[inline]
    pub(crate) fn apart(&self) -> Option<&Arc<Waiter>> {
        self.apart.as_ref()
    }

    /// Removes the waiter kept apart.
    ///
    /// # Panics
    ///
    /// If there is none (the caller saw it under the same lock).
    #[inline]
    pub(crate) fn take_apart(&mut self) -> Arc<Waiter> {
        let waiter = self.apart.take().expect("a waiter kept apart");
        self.forget(&waiter);
        waiter
    }

    /// Whether `class` has queued waiters.
    #[inline]
    pub(crate) fn has_waiters(&self, class: usize) -> bool {
        !self.per_class[class].is_empty()
    }

    /// The weight an `arrival` of a class ranked `rank` may evict: every
    /// waiter of a class ranked below it, those of its own class served
    /// after it (its tier's retries if it is a first attempt, and lower
    /// tiers), and in its own band the newest of a tenant with more
    /// waiters than it has.
    pub(crate) fn evictable_by(
        &self,
        rank_of: impl Fn(usize) -> u32,
        rank: u32,
        arrival: &Waiter,
    ) -> u64 {
        debug_assert!(self.apart.is_none(), "spilled before the bands are read");
        let below: u64 = (0..self.per_class.len())
            .filter(|&c| rank_of(c) > rank)
            .map(|c| self.per_class[c].weight)
            .sum();
        let queue = &self.per_class[arrival.class];
        let own = band_of(arrival);
        let fair = queue
            .bands
            .get(own)
            .map_or(0, |b| b.evictable_by(arrival.tenant.key));
        below + queue.weight_after(own) + fair
    }

    /// Records that class `c`'s waiters flag is now `on`; returns whether
    /// that is a change (which the caller then makes in the class word).
    #[inline]
    pub(crate) fn class_flag_changes(&mut self, class: usize, on: bool) -> bool {
        std::mem::replace(&mut self.class_flags[class], on) != on
    }

    /// How many waiters of `class` arrived after `since`.
    pub(crate) fn arrived_after(&self, class: usize, since: Instant) -> usize {
        debug_assert!(self.apart.is_none(), "spilled before the bands are read");
        self.per_class[class]
            .bands
            .iter()
            .map(|band| band.arrived_after(since))
            .sum()
    }

    /// The oldest waiter of `class`, in any band.
    pub(crate) fn head(&self, class: usize) -> Option<&Arc<Waiter>> {
        debug_assert!(self.apart.is_none(), "spilled before the bands are read");
        self.per_class[class].oldest().map(|(_, waiter)| waiter)
    }

    /// Removes the oldest waiter of `class`.
    pub(crate) fn pop_head(&mut self, class: usize) -> Option<Arc<Waiter>> {
        self.spill();
        let queue = &mut self.per_class[class];
        let (band, _) = queue.oldest()?;
        let waiter = queue.bands[band].pop_oldest()?;
        self.forget(&waiter);
        Some(waiter)
    }

    /// The band holding every waiter of `class` in one lane of arrival
    /// order (no tenant has waited in it), if there is one: the waiter
    /// [`WaitQueue::peek`] shows at the front is then the class's oldest,
    /// and [`WaitQueue::lone_front`] and [`WaitQueue::pop_lone_front`]
    /// reach it without going through the band's turns.
    #[inline]
    pub(crate) fn lone_lane(&self, class: usize) -> Option<usize> {
        debug_assert!(self.apart.is_none(), "spilled before the bands are read");
        let queue = &self.per_class[class];
        queue
            .served()
            .filter(|&b| queue.bands[b].len() == queue.len && queue.bands[b].anonymous_only())
    }

    /// The class of the one waiter queued, and its band if that band is
    /// one lane of arrival order (see [`WaitQueue::lone_lane`]).
    #[inline]
    pub(crate) fn lone_waiter(&self) -> Option<(usize, usize)> {
        debug_assert_eq!(self.len, 1);
        debug_assert!(self.apart.is_none(), "spilled before the bands are read");
        let class = self.per_class.iter().position(|q| !q.is_empty())?;
        Some((class, self.lone_lane(class)?))
    }

    /// The oldest waiter of `class`, whose waiters are all in band `band`'s
    /// one lane (see [`WaitQueue::lone_lane`]): what `peek(class, End::Front)`
    /// shows.
    #[inline]
    pub(crate) fn lone_front(&self, class: usize, band: usize) -> Option<&Arc<Waiter>> {
        self.per_class[class].bands[band].anonymous_front()
    }

    /// Removes the waiter [`WaitQueue::lone_front`] shows, as
    /// `pop(class, End::Front)` does.
    #[inline(always)]
    pub(crate) fn pop_lone_front(&mut self, class: usize, band: usize) -> Option<Arc<Waiter>> {
        let waiter = self.per_class[class].bands[band].pop_anonymous_front()?;
        self.forget(&waiter);
        Some(waiter)
    }

    /// The waiter of `class` to serve next: from the first band with
    /// waiters, the lane whose turn it is, at `end`.
    #[inline]
    pub(crate) fn peek(&self, class: usize, end: End) -> Option<&Arc<Waiter>> {
        debug_assert!(self.apart.is_none(), "spilled before the bands are read");
        let queue = &self.per_class[class];
        queue.bands[queue.served()?].peek(end)
    }

    /// Removes the waiter [`WaitQueue::peek`] shows.
    #[inline]
    pub(crate) fn pop(&mut self, class: usize, end: End) -> Option<Arc<Waiter>> {
        let queue = &mut self.per_class[class];
        let band = queue.served()?;
        let waiter = queue.bands[band].pop(end)?;
        self.forget(&waiter);
        Some(waiter)
    }

    /// Removes the waiter a dispatch looked at: [`WaitQueue::lone_front`]'s
    /// if `lone` is the class's lone lane, else [`WaitQueue::peek`]'s.
    ///
    /// # Panics
    ///
    /// If there is no such waiter (the caller saw it under the same lock).
    #[inline(always)]
    pub(crate) fn pop_served(
        &mut self,
        class: usize,
        lone: Option<usize>,
        end: End,
    ) -> Arc<Waiter> {
        match lone {
            Some(band) => self.pop_lone_front(class, band),
            None => self.pop(class, end),
        }
        .expect("peeked")
    }

    /// Removes a waiter to make room for `arrival` (queued already, of a
    /// class ranked `rank`): the newest (a retry if there is one, of the
    /// lowest tier, of the tenant with most waiters) of the lowest-priority
    /// class ranked below it; else the newest of its own class served
    /// after it; else the newest of a tenant of its band with more waiters
    /// than the arrival's.
    pub(crate) fn evict_for(
        &mut self,
        rank_of: impl Fn(usize) -> u32,
        rank: u32,
        arrival: &Waiter,
    ) -> Option<Arc<Waiter>> {
        self.spill();
        let lower = self
            .by_rank
            .iter()
            .rev()
            .copied()
            .find(|&c| rank_of(c) > rank && !self.per_class[c].is_empty());
        let waiter = match lower {
            Some(c) => {
                let queue = &mut self.per_class[c];
                let band = queue.last_after(None)?;
                queue.bands[band].pop_newest()?
            }
            None => {
                let queue = &mut self.per_class[arrival.class];
                let own = band_of(arrival);
                match queue.last_after(Some(own)) {
                    Some(band) => queue.bands[band].pop_newest()?,
                    None => queue.bands.get_mut(own)?.evict_for(arrival)?,
                }
            }
        };
        self.forget(&waiter);
        Some(waiter)
    }

    /// Removes `waiter` if it is still queued: a binary search in its lane
    /// by its arrival and queueing order, so cancelling or expiring one of
    /// many waiters costs a search and a move of pointers, not a scan.
    #[inline(always)]
    pub(crate) fn remove(&mut self, waiter: &Arc<Waiter>) -> bool {
        if self
            .apart
            .as_ref()
            .is_some_and(|apart| Arc::ptr_eq(apart, waiter))
        {
            self.take_apart();
            return true;
        }
        let removed = self.per_class[waiter.class]
            .bands
            .get_mut(band_of(waiter))
            .is_some_and(|band| band.remove(waiter));
        if removed {
            self.forget(waiter);
        }
        removed
    }

    #[inline]
    fn forget(&mut self, waiter: &Waiter) {
        self.queued_weight -= waiter.weight;
        self.len -= 1;
        let queue = &mut self.per_class[waiter.class];
        queue.len -= 1;
        queue.weight -= waiter.weight;
    }
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(start: Instant, ms: u64) -> Instant {
        start + Duration::from_millis(ms)
    }

    #[test]
    fn anonymous_waiters_take_their_turns_once_a_tenant_waits_too() {
        let start = Instant::now();
        let mut queue = WaitQueue::new(vec![0]);
        let anonymous: Vec<_> = (0..4)
            .map(|i| Waiter::new(0, 1, at(start, i), None, None, false))
            .collect();
        for waiter in &anonymous {
            queue.push(Arc::clone(waiter), false);
        }
        // Without tenants the band is one FIFO.
        assert!(Arc::ptr_eq(queue.head(0).unwrap(), &anonymous[0]));
        assert!(queue.remove(&anonymous[2]), "removed from the middle");
        let tenant = TenantTag::new(Some(7), 0);
        let flood = Waiter::for_tenant(0, 1, at(start, 5), None, None, false, tenant);
        queue.push(Arc::clone(&flood), false);
        let order: Vec<_> = std::iter::from_fn(|| queue.pop(0, End::Front))
            .map(|w| (w.arrived - start).as_millis())
            .collect();
        assert_eq!(order, [0, 5, 1, 3], "the lanes take turns, oldest first");
        assert!(queue.is_empty());
        assert_eq!(queue.queued_weight(), 0);
    }

    #[test]
    fn a_lone_waiter_kept_apart_leaves_and_joins_its_band_as_if_it_had_been_there() {
        let start = Instant::now();
        let mut queue = WaitQueue::new(vec![0]);
        let later = Waiter::new(0, 1, at(start, 1), None, None, false);
        queue.push(Arc::clone(&later), true);
        assert!(queue.apart().is_some_and(|w| Arc::ptr_eq(w, &later)));
        assert_eq!((queue.len(), queue.queued_weight()), (1, 1));
        assert!(queue.has_waiters(0));
        assert!(queue.remove(&later), "taken out from apart");
        assert!(queue.is_empty() && !queue.has_waiters(0));
        // Overtaken on the way in: the band orders both by arrival.
        queue.push(Arc::clone(&later), true);
        let earlier = Waiter::new(0, 1, start, None, None, false);
        queue.push(Arc::clone(&earlier), true);
        assert!(queue.apart().is_none(), "two waiters: both in the band");
        assert!(Arc::ptr_eq(&queue.pop(0, End::Front).unwrap(), &earlier));
        assert!(Arc::ptr_eq(&queue.pop(0, End::Front).unwrap(), &later));
        // A tenant's waiter, and any waiter of a band a tenant waited in,
        // go to the band: it keeps their history.
        let tenant = Waiter::for_tenant(0, 1, start, None, None, false, TenantTag::new(Some(7), 0));
        queue.push(Arc::clone(&tenant), true);
        assert!(queue.apart().is_none());
        assert!(queue.remove(&tenant));
        queue.push(Arc::clone(&later), true);
        assert!(queue.apart().is_none(), "its band keeps lanes for tenants");
        assert_eq!(
            queue.pop_head(0).map(|w| Arc::ptr_eq(&w, &later)),
            Some(true)
        );
        assert!(queue.is_empty());
    }
}

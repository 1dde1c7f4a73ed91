//! Fair dispatch across tenants inside one band of a class's queue.
//!
//! A band (one tier's first attempts, or its retries) holds its waiters in
//! *lanes*: lane 0 for calls without a tenant, and a fixed table of
//! [`TENANT_LANES`] lanes for tenants. A tenant waits in a lane of its own
//! while one of the few lanes its key hashes to is free (or already
//! its own); only when all of those hold other tenants' waiters does it
//! share one (bounded probing, as a hash table does). Lanes with waiters
//! are served in turn, one call per turn, so a tenant that floods the
//! class waits behind its own calls while every other tenant is served at
//! its turn; within a lane, calls are in arrival order. As in FQ-CoDel, a
//! lane that was empty (a tenant that sends little) is served before the
//! lanes that stay busy, once, and then takes its turn with them: the
//! calls of light tenants wait for one release, not for a whole round.
//!
//! Turns alone are memoryless: a tenant that sends exactly its even part
//! at random times is at times behind (a burst), and while it is, it gets
//! one turn in every round like the flood next to it, which at exactly its
//! part is a queue at utilisation 1 whose wait has no bound. So the band
//! also remembers, over a horizon of about [`WINDOW`] to twice that many
//! dispatches, how many calls came to each lane: a lane whose calls came
//! at no more than [`SLACK`] times its even part of the dispatches (the
//! dispatches over the lanes that had calls) is *light*, and light lanes
//! are served before heavy ones (each group fresh lanes first, then in
//! turn). A light tenant's burst is then served from the part a heavy one
//! was taking, as max-min fairness over the horizon has it; a heavy
//! tenant still gets all that the light ones leave (no capacity is
//! wasted), and heavy tenants share that in turns. A tenant that starts
//! to flood is heavy once its calls pass 5/4 of its part of the horizon's
//! dispatches. When the queue is full, an arrival evicts from a heavy lane
//! before a light one.
//!
//! Memory and the cost of a dispatch are bounded by the table, never by
//! the number of tenants: a million distinct keys use the same lanes (the
//! table is allocated at the first call with a tenant; without tenants a
//! band is one lane, the queue it always was).

use std::collections::VecDeque;

use tokio::time::Instant;

use super::queue::{End, Waiter};
use crate::sync::{Arc, Ordering};

/// How many lanes tenants share, per band.
pub(crate) const TENANT_LANES: usize = 64;

/// How many lanes a tenant's key may take, tried in turn.
const PROBES: usize = 8;

/// The lane of calls without a tenant.
const ANONYMOUS: usize = 0;

/// Dispatches per accounting window: a lane's demand is its calls of the
/// window under way plus the part of the previous window's that the
/// current one has not yet replaced (a sliding window of this many
/// dispatches). Long enough that a lane at its even part of 1/64 of the
/// dispatches sees 32 calls a window (with 1,024, a tenant at exactly its
/// part among ten was counted heavy often enough to lose 1% of its calls
/// in the lab), short enough that a tenant that stops flooding is light
/// again within two windows (two seconds at 1,000 calls a second).
const WINDOW: u32 = 2048;

/// How far above its even part a lane's demand may be and the lane still
/// be light: 5/4, so that a tenant at exactly its part is light despite
/// the randomness of its arrivals (among 10 lanes, a window holds about
/// 205 of its calls; 5/4 of that is 3.6 standard deviations of a Poisson
/// count above), while a light lane can take at most a quarter more than
/// its part ahead of the heavy ones.
const SLACK: (u64, u64) = (5, 4);

/// The `i`th lane a tenant's key may take.
fn probe(tenant: u64, i: usize) -> usize {
    1 + ((tenant as usize).wrapping_add(i)) % TENANT_LANES
}

/// A waiter's place in its band: arrival, then queueing order.
pub(crate) fn key(waiter: &Waiter) -> (Instant, u64) {
    (waiter.arrived, waiter.seq())
}

#[derive(Debug, Default)]
struct Lane {
    /// The tenant this lane was last claimed for: its own while it has
    /// waiters, and the one it goes back to (with its history) after.
    owner: u64,
    /// Sorted by [`key`].
    waiters: VecDeque<Arc<Waiter>>,
    /// Calls queued in this lane in the window under way.
    arrived: u32,
    /// Calls queued in this lane in the previous window.
    before: u32,
}

/// One band of a class: fair across tenants, FIFO within a lane.
#[derive(Debug, Default)]
pub(crate) struct FairBand {
    /// Lane 0 always; the tenant table once a tenant has waited.
    lanes: Vec<Lane>,
    /// Lanes that were empty when their first waiter came: served first
    /// (among the light lanes, or among the heavy ones). Neither list is
    /// kept while the band has only the anonymous lane (see
    /// [`FairBand::anonymous_only`]).
    fresh: VecDeque<u8>,
    /// The other lanes with waiters, in the order their turns come.
    turns: VecDeque<u8>,
    len: usize,
    weight: u64,
    /// Dispatches in the window under way (counted with tenants only).
    served: u32,
    /// Whether a whole window has passed (until then the horizon is the
    /// window under way).
    rolled: bool,
    /// Lanes with calls in this window or the previous one.
    recent: u32,
}

/// Which list a lane's turn is kept in.
#[derive(Debug, Clone, Copy)]
enum List {
    Fresh,
    Turns,
}

impl FairBand {
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn weight(&self) -> u64 {
        self.weight
    }

    /// No tenant has waited in this band: the anonymous lane is the whole
    /// band, served in arrival order, and the turn lists stay empty (the
    /// table, once made, stays, and [`FairBand::lane_for`] enters the
    /// anonymous lane in the lists when it makes it).
    #[inline]
    pub(crate) fn anonymous_only(&self) -> bool {
        self.lanes.len() == 1
    }

    /// How many lanes this band holds (bounded by the table).
    #[cfg(all(test, not(shed_loom)))]
    pub(crate) fn lane_count(&self) -> usize {
        self.lanes.len()
    }

    /// The lane `tenant` waits in (it has waited in this band).
    #[cfg(all(test, not(shed_loom)))]
    fn lane_for_test(&self, tenant: u64) -> usize {
        (0..PROBES)
            .map(|i| probe(tenant, i))
            .find(|&l| self.lanes[l].owner == tenant)
            .expect("the tenant waited here")
    }

    /// The lane for a waiter of `tenant`: its own, a free one among its
    /// probes (claimed), or, when all of those are busy with other
    /// tenants, its first probe, shared.
    #[inline]
    fn lane_for(&mut self, tenant: Option<u64>) -> usize {
        let Some(tenant) = tenant else {
            if self.lanes.is_empty() {
                self.lanes.push(Lane::default());
            }
            return ANONYMOUS;
        };
        if self.lanes.len() < 1 + TENANT_LANES {
            if self.lanes.first().is_some_and(|l| !l.waiters.is_empty()) {
                // From now on the anonymous lane takes turns too; its
                // waiters came first, so it is served first, once.
                self.fresh.push_front(ANONYMOUS as u8);
            }
            self.lanes.resize_with(1 + TENANT_LANES, Lane::default);
        }
        let mut free = None;
        for i in 0..PROBES {
            let lane = &self.lanes[probe(tenant, i)];
            if lane.owner == tenant {
                return probe(tenant, i);
            }
            if lane.waiters.is_empty() {
                free.get_or_insert(probe(tenant, i));
            }
        }
        match free {
            Some(lane) => {
                self.lanes[lane].owner = tenant;
                lane
            }
            None => probe(tenant, 0),
        }
    }

    /// Queues `waiter` in its tenant's lane, by arrival.
    #[inline]
    pub(crate) fn push(&mut self, waiter: Arc<Waiter>) {
        let lane = self.lane_for(waiter.tenant.key);
        waiter.tenant.set_lane(lane);
        self.len += 1;
        self.weight += waiter.weight;
        let anonymous_only = self.anonymous_only();
        if !anonymous_only {
            let lane = &mut self.lanes[lane];
            lane.arrived = lane.arrived.saturating_add(1);
            if lane.arrived == 1 && lane.before == 0 {
                self.recent += 1;
            }
        }
        let waiters = &mut self.lanes[lane].waiters;
        if waiters.is_empty() && !anonymous_only {
            self.fresh.push_back(lane as u8);
        }
        if waiters
            .back()
            .is_none_or(|last| last.arrived <= waiter.arrived)
        {
            waiters.push_back(waiter);
        } else {
            let at = waiters.partition_point(|w| w.arrived <= waiter.arrived);
            waiters.insert(at, waiter);
        }
    }

    /// Whether `lane`'s calls came at no more than [`SLACK`] times its
    /// even part of the dispatches over the horizon.
    fn is_light(&self, lane: &Lane) -> bool {
        // Both sides scaled by WINDOW: the previous window counts for the
        // part of it the window under way has not replaced yet.
        let (w, served) = (u64::from(WINDOW), u64::from(self.served));
        let demand = u64::from(lane.before) * (w - served) + u64::from(lane.arrived) * w;
        let dispatched = if self.rolled { w * w } else { served * w };
        SLACK.1 * demand * u64::from(self.recent) <= SLACK.0 * dispatched
    }

    /// The lane served next, and where its turn is kept: the first light
    /// lane, fresh ones first; else the first fresh lane; else the lane
    /// whose turn it is.
    fn next(&self) -> Option<(List, usize)> {
        let first = match (self.fresh.front(), self.turns.front()) {
            (Some(_), _) => (List::Fresh, 0),
            (None, Some(_)) => (List::Turns, 0),
            (None, None) => return None,
        };
        // One lane waiting: no choice to make.
        if self.fresh.len() + self.turns.len() == 1 {
            return Some(first);
        }
        let light = |&l: &u8| self.is_light(&self.lanes[usize::from(l)]);
        if let Some(i) = self.fresh.iter().position(light) {
            return Some((List::Fresh, i));
        }
        if let Some(i) = self.turns.iter().position(light) {
            return Some((List::Turns, i));
        }
        Some(first)
    }

    fn list(&self, list: List) -> &VecDeque<u8> {
        match list {
            List::Fresh => &self.fresh,
            List::Turns => &self.turns,
        }
    }

    /// Every lane with waiters.
    fn active(&self) -> impl DoubleEndedIterator<Item = usize> + '_ {
        let anonymous = (self.anonymous_only() && !self.is_empty()).then_some(ANONYMOUS);
        anonymous.into_iter().chain(
            self.fresh
                .iter()
                .chain(self.turns.iter())
                .map(|&l| usize::from(l)),
        )
    }

    /// The waiter served next: from `end` of the lane [`FairBand::next`]
    /// picks.
    #[inline]
    pub(crate) fn peek(&self, end: End) -> Option<&Arc<Waiter>> {
        let waiters = if self.anonymous_only() {
            &self.lanes[ANONYMOUS].waiters
        } else {
            let (list, at) = self.next()?;
            &self.lanes[usize::from(self.list(list)[at])].waiters
        };
        match end {
            End::Front => waiters.front(),
            End::Back => waiters.back(),
        }
    }

    /// The oldest waiter of a band that holds only the anonymous lane
    /// ([`FairBand::anonymous_only`]): what `peek(End::Front)` shows.
    #[inline]
    pub(crate) fn anonymous_front(&self) -> Option<&Arc<Waiter>> {
        debug_assert!(self.anonymous_only());
        self.lanes[ANONYMOUS].waiters.front()
    }

    /// Removes the waiter [`FairBand::anonymous_front`] shows, as
    /// `pop(End::Front)` does in a band without tenants (no turns, no
    /// history to keep).
    #[inline(always)]
    pub(crate) fn pop_anonymous_front(&mut self) -> Option<Arc<Waiter>> {
        debug_assert!(self.anonymous_only());
        let waiter = self.lanes[ANONYMOUS].waiters.pop_front()?;
        self.forget(&waiter);
        Some(waiter)
    }

    /// Removes the waiter [`FairBand::peek`] shows; the lane's turn passes
    /// (it goes to the back of the turns, if it still has waiters).
    #[inline]
    pub(crate) fn pop(&mut self, end: End) -> Option<Arc<Waiter>> {
        if self.anonymous_only() {
            let waiters = &mut self.lanes[ANONYMOUS].waiters;
            let waiter = match end {
                End::Front => waiters.pop_front(),
                End::Back => waiters.pop_back(),
            }?;
            self.forget(&waiter);
            return Some(waiter);
        }
        let (list, at) = self.next()?;
        let list = match list {
            List::Fresh => &mut self.fresh,
            List::Turns => &mut self.turns,
        };
        let lane = usize::from(list[at]);
        let waiters = &mut self.lanes[lane].waiters;
        let waiter = match end {
            End::Front => waiters.pop_front(),
            End::Back => waiters.pop_back(),
        }?;
        let more = !waiters.is_empty();
        if at == 0 {
            list.pop_front();
        } else {
            list.remove(at);
        }
        if more {
            self.turns.push_back(lane as u8);
        }
        self.forget(&waiter);
        self.dispatched();
        Some(waiter)
    }

    /// Counts a dispatch; at the end of a window, the window under way
    /// becomes the previous one. Without tenants there is no history.
    #[inline]
    fn dispatched(&mut self) {
        if self.lanes.len() == 1 {
            return;
        }
        self.served += 1;
        if self.served == WINDOW {
            self.served = 0;
            self.rolled = true;
            self.recent = 0;
            for lane in &mut self.lanes {
                lane.before = std::mem::take(&mut lane.arrived);
                self.recent += u32::from(lane.before > 0);
            }
        }
    }

    /// How many waiters the band holds.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The lane holding the band's oldest waiter: the one lane with
    /// waiters without a scan (calls without tenants, or one tenant
    /// waiting: the common case, on every dispatch), else the lane whose
    /// front comes first.
    fn oldest_lane(&self) -> Option<usize> {
        if self.anonymous_only() {
            return (!self.is_empty()).then_some(ANONYMOUS);
        }
        match (self.fresh.len(), self.turns.len()) {
            (0, 0) => None,
            (1, 0) => self.fresh.front().map(|&l| usize::from(l)),
            (0, 1) => self.turns.front().map(|&l| usize::from(l)),
            _ => self
                .active()
                .min_by_key(|&l| self.lanes[l].waiters.front().map(|w| key(w))),
        }
    }

    /// The oldest waiter of the band, in any lane.
    pub(crate) fn oldest(&self) -> Option<&Arc<Waiter>> {
        self.lanes[self.oldest_lane()?].waiters.front()
    }

    /// Removes the oldest waiter of the band.
    pub(crate) fn pop_oldest(&mut self) -> Option<Arc<Waiter>> {
        let lane = self.oldest_lane()?;
        let waiter = self.lanes[lane].waiters.pop_front()?;
        self.after_taking(lane);
        self.forget(&waiter);
        Some(waiter)
    }

    /// How many waiters arrived after `since`.
    pub(crate) fn arrived_after(&self, since: Instant) -> usize {
        self.active()
            .map(|l| {
                let waiters = &self.lanes[l].waiters;
                waiters.len() - waiters.partition_point(|w| w.arrived <= since)
            })
            .sum()
    }

    /// The lane to take a waiter from to make room: of the lanes with more
    /// than `than` waiters, a heavy one before a light one (a light
    /// tenant's burst is not the flood), then the one with most waiters
    /// (the first in turn order on a tie).
    fn victim(&self, than: usize) -> Option<usize> {
        let tenants = self.lanes.len() > 1;
        self.active()
            .map(|l| (l, self.lanes[l].waiters.len()))
            .filter(|&(_, len)| len > than)
            .rev()
            .max_by_key(|&(l, len)| (tenants && !self.is_light(&self.lanes[l]), len))
            .map(|(l, _)| l)
    }

    /// The weight that an arrival of `tenant` may evict from this band: the
    /// newest waiter of a lane longer than the arrival's own would be with
    /// it, of a heavy one first ([`FairBand::victim`]), so a flooding
    /// tenant's queue makes room for others, never the other way round.
    pub(crate) fn evictable_by(&self, tenant: Option<u64>) -> u64 {
        let own = self.len_of(tenant);
        self.victim(own + 1)
            .and_then(|lane| self.lanes[lane].waiters.back())
            .map_or(0, |w| w.weight)
    }

    /// How many waiters the lane a call of `tenant` would join holds now
    /// (the choice [`FairBand::lane_for`] makes, without claiming).
    fn len_of(&self, tenant: Option<u64>) -> usize {
        let Some(tenant) = tenant else {
            return self.lanes.first().map_or(0, |l| l.waiters.len());
        };
        if self.lanes.len() < 1 + TENANT_LANES {
            return 0;
        }
        let mut free = false;
        for i in 0..PROBES {
            let lane = &self.lanes[probe(tenant, i)];
            if lane.owner == tenant {
                return lane.waiters.len();
            }
            free |= lane.waiters.is_empty();
        }
        if free {
            0
        } else {
            self.lanes[probe(tenant, 0)].waiters.len()
        }
    }

    /// Removes, to make room for `arrival` (already queued in this band),
    /// the newest waiter of a lane longer than the arrival's, a heavy one
    /// first.
    pub(crate) fn evict_for(&mut self, arrival: &Waiter) -> Option<Arc<Waiter>> {
        let own = self
            .lanes
            .get(arrival.tenant.lane())
            .map_or(0, |l| l.waiters.len());
        let lane = self.victim(own)?;
        self.pop_newest_of(lane)
    }

    /// Removes the newest waiter of the heaviest lane, else the longest
    /// (to make room for an arrival of a band served before this one).
    pub(crate) fn pop_newest(&mut self) -> Option<Arc<Waiter>> {
        let lane = self.victim(0)?;
        self.pop_newest_of(lane)
    }

    fn pop_newest_of(&mut self, lane: usize) -> Option<Arc<Waiter>> {
        let waiter = self.lanes[lane].waiters.pop_back()?;
        self.after_taking(lane);
        self.forget(&waiter);
        Some(waiter)
    }

    /// Removes `waiter` if it is still queued: a binary search in its lane.
    #[inline(always)]
    pub(crate) fn remove(&mut self, waiter: &Arc<Waiter>) -> bool {
        let lane = waiter.tenant.lane();
        let Some(waiters) = self.lanes.get_mut(lane).map(|l| &mut l.waiters) else {
            return false;
        };
        // The newest or the oldest of its lane (a lone waiter, a caller
        // that gave up right after queueing, the head timing out) leaves
        // without a search.
        let taken = if waiters.back().is_some_and(|w| Arc::ptr_eq(w, waiter)) {
            waiters.pop_back()
        } else if waiters.front().is_some_and(|w| Arc::ptr_eq(w, waiter)) {
            waiters.pop_front()
        } else {
            let target = key(waiter);
            let index = waiters.partition_point(|w| key(w) < target);
            match waiters.get(index) {
                Some(found) if Arc::ptr_eq(found, waiter) => waiters.remove(index),
                _ => None,
            }
        };
        if taken.is_none() {
            return false;
        }
        self.after_taking(lane);
        self.forget(waiter);
        true
    }

    /// A lane left empty out of turn gives its turn up. Inline for a band
    /// without tenants, which keeps no turns.
    #[inline]
    fn after_taking(&mut self, lane: usize) {
        if !self.anonymous_only() && self.lanes[lane].waiters.is_empty() {
            self.give_up_turn(lane);
        }
    }

    fn give_up_turn(&mut self, lane: usize) {
        let lane = lane as u8;
        for list in [&mut self.fresh, &mut self.turns] {
            // A lane is in one list at most, once; most often alone.
            if list.front() == Some(&lane) {
                list.pop_front();
            } else if list.back() == Some(&lane) {
                list.pop_back();
            } else if let Some(at) = list.iter().position(|&l| l == lane) {
                list.remove(at);
            }
        }
    }

    #[inline]
    fn forget(&mut self, waiter: &Waiter) {
        self.len -= 1;
        self.weight -= waiter.weight;
    }
}

/// Where a waiter waits: its tenant, tier, and (set under the queue lock)
/// its lane.
#[derive(Debug)]
pub(crate) struct TenantTag {
    /// The hash of the caller's tenant key, if it has one.
    pub(crate) key: Option<u64>,
    /// Its tier's rank within the class (0 first).
    pub(crate) tier: u8,
    /// The tenant's name, if known, for the heaviest-tenants summary.
    pub(crate) name: Option<std::sync::Arc<str>>,
    lane: crate::sync::AtomicU8,
}

impl TenantTag {
    pub(crate) fn new(key: Option<u64>, tier: u8) -> Self {
        Self::named(key, tier, None)
    }

    /// Built in place, inline: a waiting call makes one every time.
    #[inline]
    pub(crate) fn named(key: Option<u64>, tier: u8, name: Option<std::sync::Arc<str>>) -> Self {
        Self {
            key,
            tier,
            name,
            lane: crate::sync::AtomicU8::new(0),
        }
    }

    fn set_lane(&self, lane: usize) {
        self.lane.store(lane as u8, Ordering::Relaxed);
    }

    fn lane(&self) -> usize {
        usize::from(self.lane.load(Ordering::Relaxed))
    }
}

#[cfg(all(test, not(shed_loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    fn waiter(tenant: Option<u64>, at: Instant, seq: u64) -> Arc<Waiter> {
        let w = Waiter::for_tenant(0, 1, at, None, None, false, TenantTag::new(tenant, 0));
        w.set_seq(seq);
        w
    }

    #[test]
    fn lanes_take_turns_so_a_flood_waits_behind_itself() {
        let start = Instant::now();
        let mut band = FairBand::default();
        for i in 0..10 {
            band.push(waiter(Some(7), start, i));
        }
        band.push(waiter(Some(8), start + Duration::from_millis(1), 10));
        band.push(waiter(None, start + Duration::from_millis(2), 11));
        let order: Vec<_> = std::iter::from_fn(|| band.pop(End::Front))
            .map(|w| w.tenant.key)
            .take(4)
            .collect();
        assert_eq!(order, [Some(7), Some(8), None, Some(7)]);
        assert_eq!(band.len, 8);
    }

    #[test]
    fn a_million_tenants_use_the_same_fixed_table() {
        let start = Instant::now();
        let mut band = FairBand::default();
        let mut queued = VecDeque::new();
        for t in 0..1_000_000u64 {
            let w = waiter(Some(crate::tenant::tenant_hash(&t)), start, t);
            band.push(Arc::clone(&w));
            queued.push_back(w);
            if queued.len() > 200 {
                let old = queued.pop_front().unwrap();
                assert!(band.remove(&old));
            }
        }
        assert_eq!(band.lane_count(), 1 + TENANT_LANES);
        assert_eq!(band.len, 200);
        assert!(band.active().count() <= TENANT_LANES);
    }

    #[test]
    fn the_longest_lane_gives_way_to_an_arrival() {
        let start = Instant::now();
        let mut band = FairBand::default();
        for i in 0..5 {
            band.push(waiter(Some(1), start, i));
        }
        assert_eq!(band.evictable_by(Some(2)), 1);
        assert_eq!(band.evictable_by(Some(1)), 0, "not from its own lane");
        let arrival = waiter(Some(2), start, 9);
        band.push(Arc::clone(&arrival));
        let evicted = band.evict_for(&arrival).unwrap();
        assert_eq!((evicted.tenant.key, evicted.seq()), (Some(1), 4));
    }

    /// A horizon of `dispatches`: the heavy tenant queues two calls for
    /// each dispatch, the light one a call every tenth; one call is
    /// served each time.
    fn history(band: &mut FairBand, heavy: u64, light: u64, dispatches: u64) {
        let start = Instant::now();
        let mut seq = 0;
        let mut push = |band: &mut FairBand, tenant| {
            band.push(waiter(
                Some(tenant),
                start + Duration::from_micros(seq),
                seq,
            ));
            seq += 1;
        };
        for i in 0..dispatches {
            push(band, heavy);
            push(band, heavy);
            if i % 10 == 0 {
                push(band, light);
            }
            band.pop(End::Front).expect("a waiter");
        }
    }

    #[test]
    fn a_light_lanes_burst_is_served_ahead_of_a_heavy_lane() {
        let (heavy, light) = (7, 8);
        let mut band = FairBand::default();
        history(&mut band, heavy, light, 500);
        // The light tenant sends a burst of three while the heavy one has
        // a queue: over the horizon it sent a tenth of what was served,
        // below its half, so all three go first. Turns alone would
        // alternate (the first served as fresh, then one turn each).
        let at = Instant::now() + Duration::from_secs(1);
        for i in 0..3 {
            band.push(waiter(Some(light), at, 10_000 + i));
        }
        let order: Vec<_> = (0..4)
            .map(|_| band.pop(End::Front).unwrap().tenant.key)
            .collect();
        assert_eq!(order, [Some(light), Some(light), Some(light), Some(heavy)]);
    }

    #[test]
    fn heavy_lanes_share_in_turns_and_a_lane_that_stops_flooding_is_light_again() {
        let (a, b) = (7, 8);
        let mut band = FairBand::default();
        // Both flood: neither is light, so they take turns.
        let start = Instant::now();
        for i in 0..20 {
            band.push(waiter(Some(a), start, 2 * i));
            band.push(waiter(Some(b), start, 2 * i + 1));
        }
        for i in 0..u64::from(WINDOW) {
            band.pop(End::Front).unwrap();
            band.push(waiter(Some(a), start, 40 + 2 * i));
            band.push(waiter(Some(b), start, 40 + 2 * i + 1));
        }
        let lane = |t| &band.lanes[band.lane_for_test(t)];
        assert!(!band.is_light(lane(a)) && !band.is_light(lane(b)));
        let order: Vec<_> = (0..4)
            .map(|_| band.pop(End::Front).unwrap().tenant.key)
            .collect();
        assert!(
            order == [Some(a), Some(b), Some(a), Some(b)]
                || order == [Some(b), Some(a), Some(b), Some(a)]
        );
        // `a` stops; `b` floods on for two windows: `a`'s history is gone,
        // and its next call is served first.
        history(&mut band, b, b, u64::from(2 * WINDOW));
        band.push(waiter(Some(a), start + Duration::from_secs(9), 1 << 40));
        let lane = |t| &band.lanes[band.lane_for_test(t)];
        assert!(band.is_light(lane(a)) && !band.is_light(lane(b)));
        assert_eq!(band.pop(End::Front).unwrap().tenant.key, Some(a));
    }

    #[test]
    fn a_heavy_lane_gives_way_before_a_longer_light_one() {
        let (heavy, light) = (7, 8);
        let mut band = FairBand::default();
        history(&mut band, heavy, light, 500);
        // Leave the heavy tenant two waiters, and the light one five.
        while band.len_of(Some(heavy)) > 2 {
            let lane = band.lane_for_test(heavy);
            band.pop_newest_of(lane);
        }
        let at = Instant::now() + Duration::from_secs(1);
        for i in 0..5 {
            band.push(waiter(Some(light), at, 10_000 + i));
        }
        let evicted = band.pop_newest().unwrap();
        assert_eq!(evicted.tenant.key, Some(heavy));
    }

    /// Checks what every operation must keep: the turns are exactly the
    /// lanes with waiters, each lane is sorted, the counts add up.
    fn check(band: &FairBand) {
        let with_waiters: Vec<usize> = (0..band.lanes.len())
            .filter(|&l| !band.lanes[l].waiters.is_empty())
            .collect();
        let mut turns: Vec<usize> = band.active().collect();
        turns.sort_unstable();
        assert_eq!(turns, with_waiters);
        let len: usize = band.lanes.iter().map(|l| l.waiters.len()).sum();
        assert_eq!(len, band.len);
        for lane in &band.lanes {
            assert!(lane
                .waiters
                .iter()
                .zip(lane.waiters.iter().skip(1))
                .all(|(a, b)| key(a) < key(b)));
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push(Option<u8>, u8),
        Pop(bool),
        PopOldest,
        Remove(usize),
        Evict,
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            4 => (proptest::option::of(0u8..200), 0u8..4).prop_map(|(t, at)| Op::Push(t, at)),
            2 => any::<bool>().prop_map(Op::Pop),
            1 => Just(Op::PopOldest),
            2 => (0usize..64).prop_map(Op::Remove),
            1 => Just(Op::Evict),
        ]
    }

    proptest::proptest! {
        #[test]
        fn any_sequence_keeps_the_band_consistent_and_takes_turns(
            ops in proptest::collection::vec(op(), 1..200)
        ) {
            let start = Instant::now();
            let mut band = FairBand::default();
            let mut queued: Vec<Arc<Waiter>> = Vec::new();
            for (seq, op) in ops.into_iter().enumerate() {
                match op {
                    Op::Push(tenant, at) => {
                        let at = start + Duration::from_millis(u64::from(at) + seq as u64 / 4);
                        let w = waiter(tenant.map(u64::from), at, seq as u64);
                        band.push(Arc::clone(&w));
                        queued.push(w);
                    }
                    Op::Pop(front) => {
                        let lanes_before = band.active().count();
                        let turn = if band.anonymous_only() {
                            Some(ANONYMOUS as u8)
                        } else {
                            band.fresh.front().or(band.turns.front()).copied()
                        };
                        let light: Vec<usize> = band
                            .active()
                            .filter(|&l| band.is_light(&band.lanes[l]))
                            .collect();
                        let end = if front { End::Front } else { End::Back };
                        let shown = band.peek(end).cloned();
                        let popped = band.pop(end);
                        assert_eq!(shown.as_ref().map(Arc::as_ptr), popped.as_ref().map(Arc::as_ptr));
                        if let (Some(w), Some(turn)) = (popped, turn) {
                            queued.retain(|q| !Arc::ptr_eq(q, &w));
                            // A light lane was served if there was one
                            // (with more than one lane waiting), the first
                            // in turn otherwise.
                            let served = w.tenant.lane();
                            if lanes_before > 1 && !light.is_empty() {
                                assert_eq!(Some(&served), light.first());
                            } else {
                                assert_eq!(served, usize::from(turn));
                            }
                            // The lane's turn passed: it is last now, or gone.
                            if band.lanes[served].waiters.is_empty() {
                                assert_eq!(band.active().count(), lanes_before - 1);
                            } else if !band.anonymous_only() {
                                assert_eq!(band.turns.back(), Some(&(served as u8)));
                            }
                        }
                    }
                    Op::PopOldest => {
                        let oldest = queued.iter().min_by_key(|w| key(w)).cloned();
                        let popped = band.pop_oldest();
                        assert_eq!(oldest.as_ref().map(Arc::as_ptr), popped.as_ref().map(Arc::as_ptr));
                        if let Some(w) = popped {
                            queued.retain(|q| !Arc::ptr_eq(q, &w));
                        }
                    }
                    Op::Remove(i) if !queued.is_empty() => {
                        let w = queued.remove(i % queued.len());
                        assert!(band.remove(&w));
                        assert!(!band.remove(&w), "removed once");
                    }
                    Op::Remove(_) => {}
                    Op::Evict => {
                        if let Some(w) = band.pop_newest() {
                            queued.retain(|q| !Arc::ptr_eq(q, &w));
                        }
                    }
                }
                check(&band);
                assert_eq!(band.len, queued.len());
                assert!(band.lanes.len() <= 1 + TENANT_LANES);
            }
        }
    }
}

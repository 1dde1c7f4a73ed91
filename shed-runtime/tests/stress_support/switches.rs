//! The workload's own record of when each class was switched off and on,
//! so that a call can tell whether its class stayed off while it was
//! admitted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use shed_runtime::Limiter;

use super::wake_clock::Times;
use super::workload::CLASSES;

/// One class's switch state: how many times it was switched, whether it is
/// on, and when it last changed (microseconds since the run started),
/// packed in one word so that a reader sees all three at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switch {
    pub epoch: u32,
    pub on: bool,
    pub changed_us: u64,
}

const ON: u64 = 1 << 39;
const TIME: u64 = ON - 1;

impl Switch {
    fn pack(self) -> u64 {
        (u64::from(self.epoch) << 40) | if self.on { ON } else { 0 } | (self.changed_us & TIME)
    }

    fn unpack(word: u64) -> Self {
        Self {
            epoch: (word >> 40) as u32,
            on: word & ON != 0,
            changed_us: word & TIME,
        }
    }
}

/// Per class, the last switch.
pub struct Switches {
    started: Instant,
    classes: [AtomicU64; CLASSES.len()],
    /// Per class, when the last switch off began (before the limiter was
    /// told): a call still on its way into the queue then may queue after
    /// the switch only if the limiter's check on the way in is missing.
    off_began: [AtomicU64; CLASSES.len()],
}

impl Switches {
    /// Every class on, as the stress limiters start.
    pub fn new() -> Self {
        let on = Switch {
            epoch: 0,
            on: true,
            changed_us: 0,
        }
        .pack();
        Self {
            started: Instant::now(),
            classes: std::array::from_fn(|_| AtomicU64::new(on)),
            off_began: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// The base of every time in the record.
    pub fn started(&self) -> Instant {
        self.started
    }

    pub fn now_us(&self) -> u64 {
        self.started.elapsed().as_micros() as u64
    }

    pub fn read(&self, class: &str) -> Switch {
        Switch::unpack(self.classes[index(class)].load(Ordering::SeqCst))
    }

    /// When the last switch off of `class` began (a later switch off, in
    /// progress, may have moved it on: later, so a check against it is
    /// only more lenient).
    pub fn off_began(&self, class: &str) -> u64 {
        self.off_began[index(class)].load(Ordering::SeqCst)
    }

    /// Switches `class` on the limiter and in the record, in the order
    /// that keeps the record conservative: it says *off* only while the
    /// limiter's class is off (switching off, the limiter first; switching
    /// on, the record first).
    pub fn switch(&self, limiter: &Limiter, class: &str, on: bool) {
        let slot = &self.classes[index(class)];
        let current = Switch::unpack(slot.load(Ordering::SeqCst));
        if current.on == on {
            return;
        }
        let epoch = (current.epoch + 1) & 0xff_ffff;
        if on {
            let changed_us = self.now_us();
            slot.store(
                Switch {
                    epoch,
                    on,
                    changed_us,
                }
                .pack(),
                Ordering::SeqCst,
            );
            limiter.set_class_enabled(class, true).unwrap();
        } else {
            self.off_began[index(class)].store(self.now_us(), Ordering::SeqCst);
            // The time is read once the limiter has refused the class's
            // waiters: a call first polled after it checked after the switch.
            limiter.set_class_enabled(class, false).unwrap();
            let changed_us = self.now_us();
            slot.store(
                Switch {
                    epoch,
                    on,
                    changed_us,
                }
                .pack(),
                Ordering::SeqCst,
            );
        }
    }
}

/// Whether an admission contradicts the switches, for a call that read
/// `before` just before its first poll, `after` once admitted, while the
/// last switch off began at `off_began_us`, and that was polled at `times`:
/// - its class was off the whole time (the record says off only while the
///   limiter's class is off, so the enabled check must have refused it);
/// - or its class was switched off once and stayed off, and either
///   - the call was first polled after the switch had returned: every
///     check it made came after the switch, so the enabled check on the
///     way in should have refused it; or
///   - it waited, its first pending poll returned after the switch began
///     (so it queued after the switch began: a call queued before it was
///     either granted before the switch took the queue lock, or refused by
///     it) and the wake that ended its wait came after the switch
///     returned: it queued after the switch and was granted later, which
///     the enabled checks in the queue (on the way in, and at dispatch)
///     should have prevented.
///
/// The wake alone does not date the grant: a release wakes the call it
/// granted after letting the queue lock go, so a grant made before a
/// switch took the lock can be woken after the switch returned (a stress
/// run of this check by the wake alone failed so, with the wake 1 us after
/// the switch).
pub fn admitted_while_off(before: Switch, after: Switch, off_began_us: u64, times: Times) -> bool {
    if after.on {
        return false;
    }
    let switched_once = after.epoch == (before.epoch + 1) & 0xff_ffff;
    let checked_after_the_switch = times.first_poll_us > after.changed_us;
    let queued_after_the_switch_and_granted_later = times
        .first_pending_us
        .is_some_and(|pending| pending > off_began_us)
        && times.woke_us.is_some_and(|woke| woke > after.changed_us);
    after.epoch == before.epoch
        || (switched_once
            && (checked_after_the_switch || queued_after_the_switch_and_granted_later))
}

fn index(class: &str) -> usize {
    CLASSES
        .iter()
        .position(|c| *c == class)
        .expect("a stress class")
}

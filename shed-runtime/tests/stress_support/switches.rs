//! The workload's own record of when each class was switched off and on,
//! so that a call can tell whether its class stayed off while it was
//! admitted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use shed_runtime::Limiter;

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
            // The time is read once the limiter has refused the class's
            // waiters: a grant after it was made to a call that queued
            // after the switch.
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
/// `before` when it started and `after` once admitted, and whose wait (if
/// it waited) ended with a wake at `woke_us`:
/// - its class was off the whole time (the record says off only while the
///   limiter's class is off, so the enabled check must have refused it); or
/// - it waited, its class was switched off once meanwhile and stayed off,
///   and the wake that ended its wait (the grant) came after the switch
///   had refused every queued call of the class: so it queued after the
///   switch, which the enabled check should have prevented.
///
/// A call admitted on its first poll is not judged by time: it may have
/// passed the check just before the switch and been descheduled.
pub fn admitted_while_off(before: Switch, after: Switch, woke_us: Option<u64>) -> bool {
    if after.on {
        return false;
    }
    let switched_once = after.epoch == (before.epoch + 1) & 0xff_ffff;
    after.epoch == before.epoch || (switched_once && woke_us.is_some_and(|w| w > after.changed_us))
}

fn index(class: &str) -> usize {
    CLASSES
        .iter()
        .position(|c| *c == class)
        .expect("a stress class")
}

//! Synchronisation primitives, swapped for `loom`'s model-checked versions
//! under `cfg(shed_loom)` so the limiter's state machine can be model-checked.

mod stoppable;

pub(crate) use stoppable::Stoppable;

#[cfg(shed_loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
#[cfg(shed_loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};

#[cfg(not(shed_loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
#[cfg(not(shed_loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};

/// Locks a mutex, ignoring poisoning: every critical section in this crate
/// leaves the protected data consistent before it can panic, so a poisoned
/// lock carries no broken invariant and refusing to continue would only turn
/// one panic into many.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    #[cfg(shed_loom)]
    {
        mutex.lock().unwrap()
    }
    #[cfg(not(shed_loom))]
    {
        mutex
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Where a waiting call leaves its waker for whoever settles it. Every
/// access through a shared reference is made under the queue lock, which
/// every settling of a waiter holds too, so a plain cell suffices: the
/// waiter leaves its waker while it queues (or, polled again by another
/// task, re-registers under the lock), and a dispatcher takes it when it
/// grants or refuses the waiter, under that same lock. Under `loom`,
/// loom's cell, which checks that the accesses never overlap.
#[derive(Debug)]
pub(crate) struct WakerCell(
    #[cfg(not(shed_loom))] std::cell::UnsafeCell<Option<std::task::Waker>>,
    #[cfg(shed_loom)] loom::cell::UnsafeCell<Option<std::task::Waker>>,
);

// SAFETY: the cell is reached through `&self` only under the queue lock
// (the contract of `register` and `take`), and a `Waker` is `Send`.
unsafe impl Sync for WakerCell {}

impl WakerCell {
    pub(crate) fn new() -> Self {
        #[cfg(not(shed_loom))]
        return Self(std::cell::UnsafeCell::new(None));
        #[cfg(shed_loom)]
        return Self(loom::cell::UnsafeCell::new(None));
    }

    /// Stores `waker`, unless the one stored wakes the same task.
    ///
    /// # Safety
    ///
    /// No other access to the cell may overlap: the caller holds the queue
    /// lock, which every other access through `&self` holds too.
    pub(crate) unsafe fn register(&self, waker: &std::task::Waker) {
        let store = |slot: &mut Option<std::task::Waker>| match slot {
            Some(current) if current.will_wake(waker) => {}
            _ => *slot = Some(waker.clone()),
        };
        #[cfg(not(shed_loom))]
        // SAFETY: no overlapping access (the caller's contract).
        store(unsafe { &mut *self.0.get() });
        #[cfg(shed_loom)]
        // SAFETY: as above; loom checks it.
        self.0.with_mut(|p| store(unsafe { &mut *p }));
    }

    /// Takes the waker out.
    ///
    /// # Safety
    ///
    /// As for [`WakerCell::register`].
    pub(crate) unsafe fn take(&self) -> Option<std::task::Waker> {
        #[cfg(not(shed_loom))]
        // SAFETY: no overlapping access (the caller's contract).
        return unsafe { (*self.0.get()).take() };
        #[cfg(shed_loom)]
        // SAFETY: as above; loom checks it.
        return self.0.with_mut(|p| unsafe { (*p).take() });
    }

    /// Drops the waker, through an exclusive reference (a waiter nobody
    /// shares).
    pub(crate) fn clear(&mut self) {
        *self = Self::new();
    }
}

/// A value written once by whoever settles a waiter, under the queue lock,
/// and published by the `SeqCst` store of the waiter's status; read only
/// by someone who saw that store. Under `loom`, loom's cell, which checks
/// that the accesses never overlap.
#[derive(Debug)]
pub(crate) struct PublishedCell<T>(
    #[cfg(not(shed_loom))] std::cell::UnsafeCell<T>,
    #[cfg(shed_loom)] loom::cell::UnsafeCell<T>,
);

// SAFETY: the cell is written and read only as `write` and `read` require
// (never at once), and `T` is sent between the threads that do.
unsafe impl<T: Send> Sync for PublishedCell<T> {}

impl<T: Copy> PublishedCell<T> {
    pub(crate) fn new(value: T) -> Self {
        #[cfg(not(shed_loom))]
        return Self(std::cell::UnsafeCell::new(value));
        #[cfg(shed_loom)]
        return Self(loom::cell::UnsafeCell::new(value));
    }

    /// Sets the value through an exclusive reference (a waiter nobody
    /// shares).
    #[cfg_attr(shed_loom, allow(dead_code))] // the spare is not modelled
    pub(crate) fn set(&mut self, value: T) {
        *self = Self::new(value);
    }

    /// Writes the value.
    ///
    /// # Safety
    ///
    /// No other access to the cell may overlap: the caller holds the lock
    /// every writer takes, and nobody reads before the store that
    /// publishes this write (made after it).
    pub(crate) unsafe fn write(&self, value: T) {
        #[cfg(not(shed_loom))]
        // SAFETY: no overlapping access (the caller's contract).
        unsafe {
            *self.0.get() = value;
        }
        #[cfg(shed_loom)]
        // SAFETY: as above; loom checks it.
        self.0.with_mut(|p| unsafe { *p = value });
    }

    /// Reads the value.
    ///
    /// # Safety
    ///
    /// The caller saw the store that published the last write, and no
    /// write comes after it.
    pub(crate) unsafe fn read(&self) -> T {
        #[cfg(not(shed_loom))]
        // SAFETY: the write happened before (the caller's contract).
        return unsafe { *self.0.get() };
        #[cfg(shed_loom)]
        // SAFETY: as above; loom checks it.
        return self.0.with(|p| unsafe { *p });
    }
}

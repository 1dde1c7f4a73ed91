//! Model checks of the admission state machine: every interleaving of
//! concurrent acquire, release and cancel (run with
//! `RUSTFLAGS="--cfg shed_loom" cargo test -p shed-runtime --lib --release loom`).

use loom::thread;
use tokio::time::Instant;

use super::core::Core;
use super::queue::{Status, Waiter};
use crate::class::{ClassSpec, ClassState};
use crate::sync::Arc;

fn core(capacity: u64, share: f64) -> Arc<Core> {
    Arc::new(Core::new(
        capacity,
        vec![ClassState::new(
            ClassSpec::new("critical", 0).share(share),
            share < 1.0,
        )],
        16,
        Default::default(),
    ))
}

/// Acquires one slot the way a call does: fast path, else the queue.
fn acquire(core: &Core) -> Result<(), Arc<Waiter>> {
    if core.try_acquire(0, 1).is_some() {
        return Ok(());
    }
    let waiter = Waiter::new(0, 1, Instant::now(), None, None);
    match core.enqueue(&waiter) {
        Status::Granted => Ok(()),
        Status::Pending => Err(waiter),
        Status::Refused(reason) => panic!("refused: {reason}"),
    }
}

fn assert_idle(core: &Core) {
    let s = core.snapshot();
    assert_eq!(s.in_flight, 0);
    assert!(!s.waiters);
    assert_eq!(core.queued(), (0, 0));
    assert_eq!(core.class_in_flight(0), 0);
}

#[test]
fn loom_release_never_loses_a_waiter() {
    loom::model(|| {
        let core = core(1, 1.0);
        assert!(core.try_acquire(0, 1).is_some());
        let releaser = {
            let core = core.clone();
            thread::spawn(move || core.release(0, 1))
        };
        let outcome = acquire(&core);
        releaser.join().unwrap();
        if let Err(waiter) = outcome {
            // The holder released: a queued waiter must have been granted.
            assert_eq!(waiter.status(), Status::Granted);
        }
        core.release(0, 1);
        assert_idle(&core);
    });
}

#[test]
fn loom_cancel_racing_a_release_leaks_nothing() {
    loom::model(|| {
        let core = core(1, 1.0);
        assert!(core.try_acquire(0, 1).is_some());
        let waiter = Waiter::new(0, 1, Instant::now(), None, None);
        assert_eq!(core.enqueue(&waiter), Status::Pending);
        let releaser = {
            let core = core.clone();
            thread::spawn(move || core.release(0, 1))
        };
        core.abandon(&waiter);
        releaser.join().unwrap();
        assert_idle(&core);
    });
}

#[test]
fn loom_concurrent_callers_never_exceed_a_share() {
    loom::model(|| {
        // Capacity 2, share 0.5: at most one call of the class at a time.
        let core = core(2, 0.5);
        let callers: Vec<_> = (0..2)
            .map(|_| {
                let core = core.clone();
                thread::spawn(move || {
                    let outcome = acquire(&core);
                    if outcome.is_ok() {
                        assert!(core.class_in_flight(0) <= 1);
                        core.release(0, 1);
                    }
                    outcome
                })
            })
            .collect();
        let mut waiting: Vec<Arc<Waiter>> = callers
            .into_iter()
            .filter_map(|caller| caller.join().unwrap().err())
            .collect();
        // Each release must hand the slot to a waiter: serve them in turn.
        while !waiting.is_empty() {
            let granted = waiting
                .iter()
                .position(|w| w.status() == Status::Granted)
                .expect("a released slot went to nobody");
            waiting.remove(granted);
            assert!(core.class_in_flight(0) <= 1);
            core.release(0, 1);
        }
        assert_idle(&core);
    });
}

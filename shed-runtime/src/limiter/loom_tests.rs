//! Model checks of the admission state machine: every interleaving of
//! concurrent acquire, release, cancel, capacity changes, class switches
//! and observe-mode admissions. `.ci/run` runs them with
//! `RUSTFLAGS="--cfg shed_loom" cargo test -p shed-runtime --lib --release loom`,
//! each model bounded in preemptions so that CI stays fast.

use loom::thread;
use tokio::time::Instant;

use super::class::ClassState;
use super::core::Core;
use super::queue::{Status, Waiter};
use crate::class::ClassSpec;
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
        None,
    ))
}

/// Acquires one slot the way a call does: fast path, else the queue.
fn acquire(core: &Core) -> Result<(), Arc<Waiter>> {
    if core.try_acquire(0, 1).is_some() {
        return Ok(());
    }
    let waiter = Waiter::new(0, 1, Instant::now(), None, None, false);
    match core.enqueue_unwoken(&waiter) {
        Status::Granted => Ok(()),
        Status::Pending => Err(waiter),
        Status::Refused(reason) => panic!("refused: {reason}"),
    }
}

/// Gives `weight` slots of `class` back on another thread.
fn release_elsewhere(core: &Arc<Core>, class: usize, weight: u64) -> thread::JoinHandle<()> {
    let core = core.clone();
    thread::spawn(move || core.release(class, weight))
}

fn assert_idle(core: &Core) {
    let s = core.snapshot();
    assert_eq!(s.in_flight, 0);
    assert!(!s.waiters);
    assert_eq!(core.queued(), (0, 0));
    for class in 0..core.classes.len() {
        assert_eq!(core.class_in_flight(class), 0);
        assert!(!core.classes[class].has_waiters_flag());
    }
}

#[test]
fn loom_release_never_loses_a_waiter() {
    loom::model(|| {
        let core = core(1, 1.0);
        assert!(core.try_acquire(0, 1).is_some());
        let releaser = release_elsewhere(&core, 0, 1);
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
        let waiter = Waiter::new(0, 1, Instant::now(), None, None, false);
        assert_eq!(core.enqueue_unwoken(&waiter), Status::Pending);
        let releaser = release_elsewhere(&core, 0, 1);
        core.abandon(&waiter);
        releaser.join().unwrap();
        assert_idle(&core);
    });
}

#[test]
fn loom_a_waiter_reads_its_grant_time_only_once_it_is_published() {
    loom::model(|| {
        let core = core(1, 1.0);
        assert!(core.try_acquire(0, 1).is_some());
        let arrived = Instant::now();
        let at = arrived + std::time::Duration::from_millis(3);
        let waiter = Waiter::new(0, 1, arrived, None, None, false);
        assert_eq!(core.enqueue_unwoken(&waiter), Status::Pending);
        let releaser = {
            let core = core.clone();
            thread::spawn(move || core.release_at(0, 1, Some(at)))
        };
        // Racing the grant: nothing, or the dispatcher's time (loom's cell
        // fails the model if the read could overlap the write).
        if let Some(granted) = waiter.granted_at() {
            assert_eq!(granted, at);
        }
        releaser.join().unwrap();
        assert_eq!(waiter.granted_at(), Some(at));
        core.release(0, 1);
        assert_idle(&core);
    });
}

/// A task that counts its wake-ups, on loom's atomics.
struct Task(loom::sync::atomic::AtomicUsize);

impl std::task::Wake for Task {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, loom::sync::atomic::Ordering::SeqCst);
    }
}

fn task() -> (std::task::Waker, std::sync::Arc<Task>) {
    let task = std::sync::Arc::new(Task(loom::sync::atomic::AtomicUsize::new(0)));
    (std::task::Waker::from(task.clone()), task)
}

#[test]
fn loom_the_task_a_waiter_leaves_under_the_lock_is_the_one_its_grant_wakes() {
    loom::model(|| {
        let core = core(1, 1.0);
        assert!(core.try_acquire(0, 1).is_some());
        let releaser = release_elsewhere(&core, 0, 1);
        let (first, first_task) = task();
        let (second, second_task) = task();
        let waiter = Waiter::new(0, 1, Instant::now(), None, None, false);
        // Queued with its first task, then polled by another (as after a
        // `select!` moved it), both racing the release's grant.
        let queued = core.enqueue(&waiter, &first);
        let polled = match queued {
            Status::Pending => core.register(&waiter, &second),
            settled => settled,
        };
        releaser.join().unwrap();
        assert_eq!(waiter.status(), Status::Granted);
        let load = |t: &Task| t.0.load(loom::sync::atomic::Ordering::SeqCst);
        let woken = (load(&first_task), load(&second_task));
        match (queued, polled) {
            // Granted while queueing: nobody waits to be woken.
            (Status::Granted, _) => assert_eq!(woken, (0, 0)),
            // Granted before the second poll, which saw it: the first task.
            (Status::Pending, Status::Granted) => assert_eq!(woken, (1, 0)),
            // Granted after: the task that polled last, and it alone.
            (Status::Pending, Status::Pending) => assert_eq!(woken, (0, 1)),
            other => panic!("{other:?}"),
        }
        core.release(0, 1);
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

/// The default classes' shape: `critical` (index 0, the residual class)
/// and a tracked `batch` class (index 1) with `share` and `floor`.
fn two_classes(capacity: u64, share: f64, floor: u32) -> Arc<Core> {
    Arc::new(Core::new(
        capacity,
        ClassState::all(vec![
            ClassSpec::new("critical", 0),
            ClassSpec::new("batch", 1).share(share).floor(floor),
        ]),
        16,
        Default::default(),
        None,
    ))
}

/// Acquires like a call of `class` with `weight`: fast path, else queue.
fn acquire_as(core: &Core, class: usize, weight: u64) -> Result<(), Arc<Waiter>> {
    if core.try_acquire(class, weight).is_some() {
        return Ok(());
    }
    let waiter = Waiter::new(class, weight, Instant::now(), None, None, false);
    match core.enqueue_unwoken(&waiter) {
        Status::Granted => Ok(()),
        Status::Pending => Err(waiter),
        Status::Refused(reason) => panic!("refused: {reason}"),
    }
}

/// Nobody is stranded: a waiter still pending must be kept out by the
/// capacity or by its class's share, not left waiting with room for it.
fn assert_not_stranded(core: &Core, waiter: &Waiter) {
    if waiter.status() != Status::Pending {
        return;
    }
    let s = core.snapshot();
    let class = &core.classes[waiter.class];
    let global_room = s.in_flight + waiter.weight <= s.capacity;
    let class_room = core.class_in_flight(waiter.class) + waiter.weight <= class.limit(s.capacity);
    assert!(
        !(global_room && class_room),
        "a waiter is pending with room for it: {s:?}"
    );
}

fn bounded() -> loom::model::Builder {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder
}

#[test]
fn loom_an_undone_class_take_never_strands_a_waiter_of_that_class() {
    bounded().check(|| {
        // Capacity 2, `batch` may hold 1. `critical` fills the limiter.
        let core = two_classes(2, 0.5, 0);
        assert!(core.try_acquire(0, 2).is_some());
        // A batch call whose fast path takes the class, fails on the full
        // limiter and undoes its take...
        let fast = {
            let core = core.clone();
            thread::spawn(move || core.try_acquire(1, 1).is_some())
        };
        // ...while critical gives a slot back...
        let releaser = release_elsewhere(&core, 0, 1);
        // ...and another batch call queues.
        let outcome = acquire_as(&core, 1, 1);
        let fast_admitted = fast.join().unwrap();
        releaser.join().unwrap();
        if let Err(waiter) = &outcome {
            assert_not_stranded(&core, waiter);
        }
        if fast_admitted {
            core.release(1, 1);
        }
        if let Err(waiter) = &outcome {
            assert_eq!(waiter.status(), Status::Granted);
        }
        core.release(1, 1);
        core.release(0, 1);
        assert_idle(&core);
    });
}

#[test]
fn loom_a_waiter_held_by_its_share_is_woken_by_its_class_release() {
    bounded().check(|| {
        let core = two_classes(4, 0.5, 0);
        assert!(core.try_acquire(1, 2).is_some());
        let queued = acquire_as(&core, 1, 1).expect_err("batch is at its share");
        // Critical calls take the free slots on the fast path, while batch
        // gives one back.
        let releaser = release_elsewhere(&core, 1, 1);
        let critical = core.try_acquire(0, 1).is_some();
        releaser.join().unwrap();
        assert_not_stranded(&core, &queued);
        assert_eq!(queued.status(), Status::Granted);
        if critical {
            core.release(0, 1);
        }
        core.release(1, 1);
        core.release(1, 1);
        assert_idle(&core);
    });
}

/// `Core::enqueue`'s shortcut: an arrival that waits alone behind a full
/// limiter leaves the limiter's flag set without a dispatch. When its
/// class's share holds it back as well, a release of another class that
/// races its arrival must still leave the flag clear (other classes keep
/// the fast path) and the waiter pending, and its class's release grants it.
#[test]
fn loom_an_arrival_held_by_its_share_and_the_capacity_releases_the_flag() {
    bounded().check(|| {
        // Capacity 2, `batch` may hold 1: batch and critical hold one each.
        let core = two_classes(2, 0.5, 0);
        assert!(core.try_acquire(1, 1).is_some());
        assert!(core.try_acquire(0, 1).is_some());
        let releaser = release_elsewhere(&core, 0, 1);
        let queued = acquire_as(&core, 1, 1).expect_err("batch is at its share");
        releaser.join().unwrap();
        assert_eq!(queued.status(), Status::Pending);
        assert!(
            !core.snapshot().waiters,
            "a waiter held only by its share holds the other classes up"
        );
        assert!(core.try_acquire(0, 1).is_some(), "critical's fast path");
        core.release(1, 1);
        assert_eq!(queued.status(), Status::Granted);
        core.release(1, 1);
        core.release(0, 1);
        assert_idle(&core);
    });
}

#[test]
fn loom_a_capacity_change_with_waiters_queued_strands_nobody() {
    bounded().check(|| {
        let core = two_classes(3, 1.0, 0);
        assert!(core.try_acquire(0, 3).is_some());
        let heavy = acquire_as(&core, 0, 3).expect_err("full");
        let light = acquire_as(&core, 1, 1).expect_err("waits behind");
        let shrink = {
            let core = core.clone();
            thread::spawn(move || core.set_capacity(2))
        };
        core.release(0, 3);
        shrink.join().unwrap();
        // Either the heavy waiter got in before the shrink (and holds 3 of
        // now 2), or it can never fit and was refused.
        match heavy.status() {
            Status::Granted => {
                assert_eq!(light.status(), Status::Pending);
                core.release(0, 3);
            }
            Status::Refused(reason) => assert_eq!(reason, crate::rejected::Reason::TooHeavy),
            Status::Pending => panic!("a waiter that can never fit stays queued"),
        }
        assert_eq!(light.status(), Status::Granted);
        core.release(1, 1);
        assert_idle(&core);
    });
}

#[test]
fn loom_a_cancel_during_dispatch_with_floors_and_weights_leaks_nothing() {
    bounded().check(|| {
        // Capacity 3; batch holds at most 1 but has a floor of 1.
        let core = two_classes(3, 0.34, 1);
        assert!(core.try_acquire(0, 3).is_some());
        let critical = acquire_as(&core, 0, 2).expect_err("full");
        let batch = acquire_as(&core, 1, 1).expect_err("full");
        let releaser = release_elsewhere(&core, 0, 3);
        core.abandon(&batch);
        releaser.join().unwrap();
        // The floor serves batch first when it is still there; critical
        // fits either way.
        assert_eq!(critical.status(), Status::Granted);
        core.release(0, 2);
        assert_idle(&core);
    });
}

#[test]
fn loom_observe_admissions_racing_enforced_waiters_leak_nothing() {
    bounded().check(|| {
        let core = two_classes(1, 1.0, 0);
        assert!(core.try_acquire(0, 1).is_some());
        let waiter = acquire_as(&core, 1, 1).expect_err("full");
        // An observe-mode call counts itself past the capacity and leaves,
        // while the holder leaves too.
        let observer = {
            let core = core.clone();
            thread::spawn(move || {
                assert!(core.acquire_unchecked(0, 1));
                core.release(0, 1);
            })
        };
        core.release(0, 1);
        observer.join().unwrap();
        assert_eq!(waiter.status(), Status::Granted);
        core.release(1, 1);
        assert_idle(&core);
    });
}

#[test]
fn loom_a_class_switched_off_never_keeps_a_call_that_queues_meanwhile() {
    bounded().check(|| {
        let core = two_classes(1, 1.0, 0);
        assert!(core.try_acquire(0, 1).is_some());
        let switch = {
            let core = core.clone();
            thread::spawn(move || {
                core.classes[1].set_enabled(false);
                core.refuse_class(1, crate::rejected::Reason::Disabled);
            })
        };
        // A call that saw the class on, then queues.
        let waiter = Waiter::new(1, 1, Instant::now(), None, None, false);
        if core.classes[1].is_enabled() {
            assert_ne!(
                core.enqueue_unwoken(&waiter),
                Status::Granted,
                "the limiter is full"
            );
            switch.join().unwrap();
            assert_ne!(
                waiter.status(),
                Status::Pending,
                "queued after its class was switched off"
            );
        } else {
            switch.join().unwrap();
        }
        core.release(0, 1);
        assert_idle(&core);
    });
}

/// Two tenants' waiters in their own lanes; one tenant's waiter is
/// cancelled while the holder releases: the other tenant's waiter is
/// granted exactly once and nothing leaks, whichever lane's turn it was.
#[test]
fn loom_a_cancel_in_one_lane_racing_a_release_strands_no_other_lane() {
    use super::fair::TenantTag;
    loom::model(|| {
        let core = core(1, 1.0);
        assert!(core.try_acquire(0, 1).is_some());
        let tagged = |tenant: u64| {
            Waiter::for_tenant(
                0,
                1,
                Instant::now(),
                None,
                None,
                false,
                TenantTag::new(Some(tenant), 0),
            )
        };
        let (first, second) = (tagged(1), tagged(2));
        assert_eq!(core.enqueue_unwoken(&first), Status::Pending);
        assert_eq!(core.enqueue_unwoken(&second), Status::Pending);
        let releaser = release_elsewhere(&core, 0, 1);
        core.abandon(&first);
        releaser.join().unwrap();
        // The slot went to `second`, or to `first` and straight back.
        assert_eq!(second.status(), Status::Granted);
        core.release(0, 1);
        assert_idle(&core);
    });
}

/// The learned-service-time slot of a fn (`learned.rs`): two scoped
/// limiters race for it while the first, having learned, is dropped and
/// gives it back. At most one owns it at a time; whoever claims it after
/// a give-back sees the estimate reset, never its predecessor's figure;
/// and it ends free.
#[test]
fn loom_a_learned_slot_has_one_owner_and_a_successor_starts_afresh() {
    use super::learned::{SlotOwner, FREE};
    use crate::sync::{AtomicU32, AtomicU64, Ordering};
    bounded().check(|| {
        let owner = Arc::new(AtomicU32::new(FREE));
        // The slot's estimate (0: nothing learned), and how many limiters
        // hold the slot at once.
        let estimate = Arc::new(AtomicU64::new(0));
        let holders = Arc::new(AtomicU32::new(0));
        let limiter = |id: u32, learned: u64| {
            let (owner, estimate, holders) = (owner.clone(), estimate.clone(), holders.clone());
            move || {
                if !owner.claim(id) {
                    // Another limiter owns it: this one uses its table.
                    assert!(!owner.owned_by(id));
                    return;
                }
                assert_eq!(holders.fetch_add(1, Ordering::SeqCst), 0, "one owner");
                assert!(owner.owned_by(id));
                assert_eq!(estimate.load(Ordering::Relaxed), 0, "starts afresh");
                estimate.store(learned, Ordering::Relaxed);
                // Dropped: gives the slot back, reset.
                holders.fetch_sub(1, Ordering::SeqCst);
                owner.give_back(|| estimate.store(0, Ordering::Relaxed));
            }
        };
        let second = thread::spawn(limiter(2, 30));
        limiter(1, 10)();
        second.join().unwrap();
        assert_eq!(owner.load(Ordering::SeqCst), FREE);
        assert_eq!(estimate.load(Ordering::SeqCst), 0);
        // A third limiter, after both, claims it afresh.
        limiter(3, 5)();
    });
}

/// Two writers of a class's admitted fraction, one holding the class back
/// and one letting all of it in: whichever stores last, the gate's copy
/// ends up agreeing with the fraction (see `gate.rs`). Without the second
/// read in `Gate::follow`, the copy can stay behind.
#[test]
fn loom_the_gate_copy_of_a_fraction_agrees_with_it_after_two_writers() {
    loom::model(|| {
        let class = Arc::new(ClassState::new(ClassSpec::new("optional", 1), false));
        let writer = |ppm: u32| {
            let class = class.clone();
            thread::spawn(move || class.set_admit_fraction(ppm))
        };
        let (half, full) = (writer(super::class::FULL / 2), writer(super::class::FULL));
        half.join().unwrap();
        full.join().unwrap();
        assert_eq!(
            class.gate.has(super::gate::Gate::HELD_BACK),
            !class.admits_everything()
        );
        assert_eq!(
            class.gate.open() == super::gate::Open::Closed,
            !class.admits_everything()
        );
    });
}

/// The same for a copy of a limiter-wide source (the mode): two writers
/// store it and bring the gate up to date.
#[test]
fn loom_the_gate_copy_of_the_mode_agrees_with_it_after_two_writers() {
    use super::gate::Gate;
    use crate::sync::{AtomicU8, Ordering};
    loom::model(|| {
        let state = Arc::new((AtomicU8::new(0), Gate::new(true, false)));
        let writer = |off: u8| {
            let state = state.clone();
            thread::spawn(move || {
                let (mode, gate) = &*state;
                mode.store(off, Ordering::SeqCst);
                gate.follow(Gate::OFF, || mode.load(Ordering::SeqCst) == 1);
            })
        };
        let (on, off) = (writer(0), writer(1));
        on.join().unwrap();
        off.join().unwrap();
        let (mode, gate) = &*state;
        assert_eq!(gate.has(Gate::OFF), mode.load(Ordering::SeqCst) == 1);
    });
}

#[test]
fn loom_a_default_budget_cut_during_a_release_settles_the_waiter_once() {
    // The queue reads the default budget in force as it serves a waiter
    // (`Core::out_of_time`); the controller cuts it from an hour to
    // nothing on another thread meanwhile. Granted or refused, the waiter
    // is settled once and no slot is lost.
    loom::model(|| {
        let hour = std::time::Duration::from_secs(3_600);
        let budget = std::sync::Arc::new(super::controller::SetBudget::new(hour));
        let core = Arc::new(Core::new(
            1,
            vec![ClassState::new(ClassSpec::new("critical", 0), false)],
            16,
            Default::default(),
            Some(super::controller::DefaultBudgets(budget.clone())),
        ));
        assert!(core.try_acquire(0, 1).is_some());
        let arrived = Instant::now();
        let waiter = Arc::new(Waiter::of(super::queue::Call {
            class: 0,
            weight: 1,
            arrived,
            gives_up: Some((arrived + hour, crate::rejected::Reason::MaxWait)),
            deadline: None,
            retry: false,
            tenant: super::fair::TenantTag::new(None, 0),
            default_budget: true,
        }));
        assert_eq!(core.enqueue_unwoken(&waiter), Status::Pending);
        let cut = thread::spawn(move || budget.set(std::time::Duration::ZERO));
        let releaser = release_elsewhere(&core, 0, 1);
        cut.join().unwrap();
        releaser.join().unwrap();
        match waiter.status() {
            Status::Granted => core.release(0, 1),
            Status::Refused(crate::rejected::Reason::MaxWait) => {}
            other => panic!("{other:?}: the release settles the waiter"),
        }
        assert_idle(&core);
    });
}

#[test]
fn loom_a_completion_racing_a_window_close_is_counted_once_and_its_cohort_at_most_once() {
    // A call admitted before the window closes completes as the adaptive
    // limit takes the window: it lands in one window or the other (its
    // count, sum and cohort each swapped on their own, so possibly split
    // between the two), never lost nor counted twice. A call admitted
    // after the close is of the new window's cohort whatever it reads of
    // the close.
    bounded().check(|| {
        let window = Arc::new(super::window::Accumulator::default());
        let before = Instant::now();
        let closed = before + std::time::Duration::from_millis(10);
        let after = closed + std::time::Duration::from_millis(1);
        let ms = std::time::Duration::from_millis;
        let recorder = {
            let window = window.clone();
            thread::spawn(move || {
                window.record(before, ms(3), 1);
                window.record(after, ms(5), 1);
            })
        };
        let first = window.take(closed);
        recorder.join().unwrap();
        let second = window.take(closed + ms(20));
        assert_eq!(first.count + second.count, 2);
        assert_eq!(first.total + second.total, ms(8));
        let cohort = first.cohort_count + second.cohort_count;
        let cohort_total = first.cohort_total + second.cohort_total;
        assert!(cohort == 1 || cohort == 2, "{cohort}");
        assert_eq!(cohort_total, if cohort == 2 { ms(8) } else { ms(5) });
    });
}

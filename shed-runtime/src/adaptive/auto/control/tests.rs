//! [`AutoControl`]: when windows close (by time, by count, on an alarm),
//! pins among closing windows, and the default budgets it scales.

use super::*;
use crate::adaptive::auto::tests::window;

/// The default adaptive limit's controller of `inner`.
fn auto_control(inner: &crate::limiter::Inner) -> &AutoControl {
    let control = inner.auto.as_deref().expect("adaptive by default");
    control
        .as_any()
        .downcast_ref()
        .expect("the default controller")
}

#[tokio::test(start_paused = true)]
async fn the_default_budgets_are_four_times_the_service_time_in_the_classes_proportions() {
    let control = AutoControl::new(AutoSettings::default());
    let classes = ClassSpec::defaults();
    let (critical, optional, background) = (&classes[0], &classes[1], &classes[2]);
    assert_eq!(
        control.budget(critical),
        Duration::from_millis(50),
        "the class's own default until a call was measured"
    );
    control.learn_budgets(Duration::from_millis(200));
    assert_eq!(control.budget(critical), Duration::from_millis(800));
    assert_eq!(control.budget(optional), Duration::from_millis(320));
    assert_eq!(control.budget(background), Duration::from_millis(80));
    let pinned = critical.clone().max_wait(Duration::from_millis(7));
    assert_eq!(
        control.budget(&pinned),
        Duration::from_millis(7),
        "set: kept"
    );
}

#[test]
fn until_a_window_closes_the_default_budgets_follow_the_calls_measured_so_far() {
    // 2 workers of 200 ms: at the classes' own 50 ms, most calls that
    // waited were refused, and a refused call is not measured, so the
    // first window waited 13 s for its 12 calls.
    let limiter = crate::Config::new().build().unwrap();
    let inner = &limiter.inner;
    let control = auto_control(inner);
    let classes = ClassSpec::defaults();
    let (critical, background) = (&classes[0], &classes[2]);
    assert_eq!(control.budget(critical), Duration::from_millis(50));
    let mut now = Duration::ZERO;
    for took in [200, 100] {
        let took = Duration::from_millis(took);
        now += took;
        inner.record_completion(took, 1);
        control.completed(inner, control.epoch + now, took);
    }
    assert_eq!(inner.completions_so_far(), 2, "the window is still open");
    assert_eq!(control.budget(critical), Duration::from_millis(600));
    assert_eq!(control.budget(background), Duration::from_millis(60));
    // A window that closed is learned, and no guess read before the close
    // replaces it.
    let guessed = control.wait_scale.unlearned().expect("a guess");
    control.learn_budgets(Duration::from_millis(20));
    control.guess_budgets(inner, guessed);
    assert_eq!(control.budget(critical), Duration::from_millis(80));
    inner.record_completion(Duration::from_millis(500), 1);
    control.completed(inner, control.epoch + now, Duration::from_millis(500));
    assert_eq!(control.budget(critical), Duration::from_millis(80));

    // Pinned before any window closed: nothing is guessed any more.
    let pinned = crate::Config::new().build().unwrap();
    pinned.set_capacity(8);
    let (inner, took) = (&pinned.inner, Duration::from_millis(200));
    let control = auto_control(inner);
    inner.record_completion(took, 1);
    control.completed(inner, control.epoch + took, took);
    assert_eq!(control.budget(critical), Duration::from_millis(50));
}

#[test]
fn a_window_closing_after_a_pin_sets_nothing() {
    // A completion that read the controller as running, and reaches the
    // close only after a pin: the close must see the controller stopped,
    // or it sets its limit over the pin for good (the pinned 100 slots
    // became the adaptive limit's 2). Every interleaving of the two is
    // `crate::sync::stoppable`'s loom model; the race on real threads is
    // `pins_among_windows_closing_on_other_threads_are_never_overwritten`.
    let limiter = crate::Config::new().build().unwrap();
    let inner = &limiter.inner;
    let control = auto_control(inner);
    for _ in 0..12 {
        inner.record_completion(Duration::from_millis(10), 2);
    }
    assert!(control.is_enabled(), "the completion's first look");
    limiter.set_capacity(100);
    let at = Duration::from_secs(1);
    control.close_if_due(inner, control.epoch + at, nanos(at), Duration::ZERO);
    assert_eq!(limiter.capacity(), 100);
    assert!(!limiter.is_adaptive());
}

#[test]
fn a_budget_past_what_a_duration_holds_is_no_limit_not_a_panic() {
    // The configuration refuses such a factor; the controller built
    // without it (or a no-load latency of hours) must still not panic in
    // the caller's task.
    let control = AutoControl::new(AutoSettings {
        wait_factor: 1e300,
        ..AutoSettings::default()
    });
    control.learn_budgets(Duration::from_secs(1));
    let critical = &ClassSpec::defaults()[0];
    assert_eq!(control.budget(critical), Duration::MAX);
}

#[test]
fn pins_among_windows_closing_on_other_threads_are_never_overwritten() {
    // The race above, on real threads: two threads complete calls and
    // close windows as fast as they can (each close sets the limit) while
    // this one pins the capacity at a random moment; after the threads
    // finish, the pin holds and the adaptive default is stopped. Each
    // round ends idle: the closers joined, nothing left running.
    let mut rng = fastrand::Rng::with_seed(11);
    for round in 0..100u32 {
        let limiter = crate::Config::new().build().unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let closers: Vec<_> = (0..2)
            .map(|_| {
                let (limiter, stop) = (limiter.clone(), stop.clone());
                std::thread::spawn(move || {
                    let inner = &limiter.inner;
                    let control = inner.auto.as_deref().unwrap();
                    let start = Instant::now();
                    let mut at = start;
                    while !stop.load(Ordering::Relaxed) {
                        // Far enough apart that every window may close.
                        at += Duration::from_secs(1);
                        for _ in 0..32 {
                            inner.record_completion(Duration::from_millis(10), 2);
                        }
                        control.completed(inner, at, Duration::from_millis(10));
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_micros(rng.u64(0..2_000)));
        let pinned = 100 + round;
        limiter.set_capacity(pinned);
        std::thread::sleep(Duration::from_micros(500));
        stop.store(true, Ordering::Relaxed);
        for closer in closers {
            closer.join().unwrap();
        }
        assert_eq!(limiter.capacity(), pinned, "round {round}");
        assert!(!limiter.is_adaptive(), "round {round}");
    }
}

/// The default limiter's controller, with the cold start having read
/// calls of 200 ms, of one length (`one_length`) or not, and a window
/// just closed at 2 slots: the next needs 12 calls.
fn controller_after_calls_of_200ms(one_length: bool) -> (crate::Limiter, Duration) {
    controller_after_a_window(|auto| {
        auto.no_load = Some(0.200);
        auto.one_length_votes = if one_length { (3, 0) } else { (0, 3) };
    })
}

/// The default limiter's controller, its algorithm set by `learned`, and
/// a window just closed (1 s after the epoch, with no call in it).
fn controller_after_a_window(learned: impl FnOnce(&mut Auto)) -> (crate::Limiter, Duration) {
    let limiter = crate::Config::new().build().unwrap();
    let control = auto_control(&limiter.inner);
    learned(&mut control.driver.lock().algorithm);
    let at = Duration::from_secs(1);
    control.close_if_due(
        &limiter.inner,
        control.epoch + at,
        nanos(at),
        Duration::ZERO,
    );
    (limiter, at)
}

#[test]
fn a_closing_window_scales_the_budgets_to_the_calls_service_time_not_the_lowest_reading() {
    // A cold start of calls of varying length read their no-load latency
    // at 200 ms and their mean half as high again.
    let (limiter, _) = controller_after_a_window(|auto| {
        auto.no_load = Some(0.200);
        auto.mean_over_lowest = 1.5;
    });
    let control = auto_control(&limiter.inner);
    let critical = &ClassSpec::defaults()[0];
    let budget = control.budget(critical).as_secs_f64();
    assert!(
        (budget - 1.2).abs() < 1e-6,
        "four times the 300 ms service time, not the 200 ms reading: {budget} s"
    );
}

/// The default budget of `critical` after a window closed on a cold start
/// that read calls of 10 ms whose windows of 256 calls each spread `cv`.
fn budget_of_calls_of_10ms_spread(cv: f64) -> f64 {
    let (limiter, _) = controller_after_a_window(|auto| {
        auto.no_load = Some(0.010);
        for _ in 0..4 {
            auto.spread.add(&Window {
                latency_cv: cv,
                ..window(10.0, 16.0, 256, true)
            });
        }
    });
    let control = auto_control(&limiter.inner);
    control.budget(&ClassSpec::defaults()[0]).as_secs_f64()
}

#[test]
fn the_budgets_of_calls_of_two_lengths_are_as_many_times_longer_as_their_spread() {
    // A cache's hits and misses: their short calls queue behind the long
    // ones below capacity, and four times the mean refused those waits
    // (`fifo-16x10ms-mix` at 0.8 load, seed 25: 98.5% in time).
    let budget = budget_of_calls_of_10ms_spread(3.7);
    assert!(
        (budget - 4.0 * 0.010 * 3.7).abs() < 1e-6,
        "four times 10 ms times the spread: {budget} s"
    );
    // Calls of one length's noise, or a heavy tail: four times the mean.
    for cv in [1.0, 1.31, 2.0] {
        let budget = budget_of_calls_of_10ms_spread(cv);
        assert!((budget - 0.040).abs() < 1e-6, "spread {cv}: {budget} s");
    }
}

#[tokio::test(start_paused = true)]
async fn a_first_window_of_slow_calls_closes_on_six_after_half_a_second_while_a_crowd_waits() {
    // 1,000 workers of 200 ms started cold: the first window's dozen calls
    // take 1.2 s at the initial 2 slots while thousands of calls wait.
    // With a crowd waiting it closes once it lasted half a second and
    // measured six; not without the crowd (a few workers), nor for calls
    // whose dozen take less than half a second at 2 slots (a trickle
    // that made the window long by idleness). Each case: the calls
    // waiting, the calls' length, the time between completions, and the
    // completion that closes the window (`None`: not before its dozen).
    let ms = Duration::from_millis;
    for (waiting, took, every, closes_at) in [
        (64, ms(200), ms(100), Some(6)),
        (64, ms(200), ms(50), Some(10)),
        (63, ms(200), ms(100), None),
        (64, ms(80), ms(100), None),
    ] {
        let case = format!("{waiting} waiting, calls of {took:?} every {every:?}");
        let limiter = crate::Config::new().build().unwrap();
        let inner = &limiter.inner;
        let control = auto_control(inner);
        let _running = (
            limiter.acquire("critical", 1, "call").await.unwrap(),
            limiter.acquire("critical", 1, "call").await.unwrap(),
        );
        for _ in 0..waiting {
            let limiter = limiter.clone();
            tokio::spawn(async move { limiter.acquire("critical", 1, "call").await });
        }
        while inner.queued().0 < waiting {
            tokio::task::yield_now().await;
        }
        let mut closed_at = None;
        for call in 1..12u32 {
            inner.record_completion(took, 2);
            control.completed(inner, control.epoch + every * call, took);
            if inner.completions_so_far() == 0 {
                closed_at = Some(call);
                break;
            }
        }
        assert_eq!(closed_at, closes_at, "{case}");
    }
}

#[test]
fn a_call_of_one_length_twice_the_no_load_latency_closes_a_small_window_early() {
    // 2 workers of 200 ms, four times slower from now, at 3 slots after a
    // rise: its window of 12 calls took 4.8 s at 2.5 calls a second, and
    // every call queued past its clients' 1 s meanwhile. A call twice the
    // no-load latency closes it once every slot completed a call.
    let slow = Duration::from_millis(800);
    for (one_length, took, closes) in [
        (true, slow, true),
        (true, Duration::from_millis(300), false),
        (false, slow, false),
    ] {
        let (limiter, at) = controller_after_calls_of_200ms(one_length);
        let inner = &limiter.inner;
        let control = auto_control(inner);
        let case = format!("one length {one_length}, {took:?}");
        assert_eq!(limiter.capacity(), 2, "{case}");
        let mut now = at;
        for call in 1..=2u64 {
            now += took;
            inner.record_completion(took, 2);
            control.completed(inner, control.epoch + now, took);
            let closed = inner.completions_so_far() == 0;
            // One call a slot first: the first call alone says little.
            assert_eq!(closed, closes && call == 2, "{case}, call {call}");
        }
    }
}

#[test]
fn after_the_startup_only_a_window_slower_to_gather_than_the_shortest_one_raises_the_alarm() {
    // 8 workers of 2 ms: a steady window of 32 calls at 8 slots gathers
    // them in 8 ms and closes by time at 100 ms anyway; closing it early
    // on calls that queued a moment inside raised the p99 from 11 to
    // 15 ms. 2 workers of 200 ms: 4 calls at 2 slots take 400 ms.
    let min_window = AutoSettings::default().min_window;
    let steady = |no_load: f64| Auto {
        no_load: Some(no_load),
        one_length_votes: (3, 0),
        startup: false,
        ..Auto::default()
    };
    let alarm = |auto: &Auto, limit: f64| {
        AutoControl::alarm_for(auto, limit, steady_samples(limit), min_window)
    };
    assert_eq!(alarm(&steady(0.002), 8.0), (u64::MAX, u64::MAX));
    assert_eq!(
        alarm(&steady(0.200), 2.0),
        (nanos(Duration::from_millis(400)), 2)
    );
    // In the startup, a window raises it however fast its calls come.
    let starting = Auto {
        startup: true,
        ..steady(0.002)
    };
    let samples = min_samples(8.0f64.max(STARTUP_SAMPLES));
    assert_eq!(
        AutoControl::alarm_for(&starting, 8.0, samples, min_window),
        (nanos(Duration::from_millis(4)), 8)
    );
}

#[test]
fn a_window_after_a_rise_of_calls_of_one_length_waits_for_the_calls_it_queued() {
    // 24 workers of 20 ms in a cold start that rose from 16 slots to 32:
    // the window waits for 48 calls, the limit and the one before it, so
    // that the 8 calls the rise queued complete in it. Its alarm is that
    // of the dozen calls it gathers at 32 slots: none. An alarm after one
    // call a slot closed it on the first queued call to complete (see
    // `next_window`).
    let control = AutoControl::new(AutoSettings::default());
    let rose = Auto {
        no_load: Some(0.020),
        one_length_votes: (3, 0),
        startup_last: Some((16.0, 800.0)),
        ..Auto::default()
    };
    let next = control.next_window(&rose, 32.0);
    assert_eq!((next.samples, next.alarm), (48, u64::MAX), "{next:?}");
    // And for 2.25 round trips: a queued call waits up to one call for a
    // worker and takes one more, which 48 calls of a pool that completes
    // them in batches can come in just under.
    assert_eq!(next.length, Duration::from_millis(45), "{next:?}");
    // Calls of varying length, or a window at the limit it rose from,
    // wait for their dozen or their limit, as before.
    let varied = Auto {
        one_length_votes: (0, 3),
        ..rose.clone()
    };
    let next = control.next_window(&varied, 32.0);
    assert_eq!((next.samples, next.length), (32, Duration::from_millis(20)));
    let next = control.next_window(&rose, 16.0);
    assert_eq!((next.samples, next.length), (16, Duration::from_millis(20)));
    // A rise past 64 calls waits for 64, in one round trip, as any window.
    let large = Auto {
        startup_last: Some((64.0, 3200.0)),
        ..rose.clone()
    };
    let next = control.next_window(&large, 128.0);
    assert_eq!((next.samples, next.length), (64, Duration::from_millis(20)));
    // A window at 8 slots after a rise from 4 still waits for its dozen,
    // and its slow calls' alarm after a call a slot.
    let small = Auto {
        startup_last: Some((4.0, 200.0)),
        ..rose.clone()
    };
    let next = control.next_window(&small, 8.0);
    assert_eq!((next.samples, next.length), (12, Duration::from_millis(45)));
    assert_eq!(
        (next.alarm, next.alarm_samples),
        (nanos(Duration::from_millis(40)), 8)
    );
}

#[test]
fn a_call_that_raised_the_alarm_as_another_closed_the_window_leaves_the_next_one_open() {
    // Two slow calls complete together; both read the alarm raised, one
    // closes the window. The other, taking the lock next, must read the
    // alarm again for the window just opened (one call in it, of the two
    // its slots need), or it closes that one with a single call.
    let (limiter, at) = controller_after_calls_of_200ms(true);
    let inner = &limiter.inner;
    let control = auto_control(inner);
    let slow = Duration::from_millis(800);
    for _ in 0..2 {
        inner.record_completion(slow, 2);
    }
    let now = at + slow;
    control.close_if_due(inner, control.epoch + now, nanos(now), slow);
    assert_eq!(inner.completions_so_far(), 0, "the first closes it");
    inner.record_completion(slow, 2);
    control.close_if_due(inner, control.epoch + now, nanos(now), slow);
    assert_eq!(inner.completions_so_far(), 1, "the next window stays open");
}

#[tokio::test(start_paused = true)]
async fn a_waiter_is_held_to_twice_the_default_budget_in_force() {
    // The limiter as the defaults build it: its queue reads the budgets of
    // this controller when it looks at a waiter that set none.
    let limiter = crate::Config::new().build().unwrap();
    let control = auto_control(&limiter.inner);
    control.learn_budgets(Duration::from_secs(1));
    let critical = &ClassSpec::defaults()[0];
    assert_eq!(control.budget(critical), Duration::from_secs(4));
    let capacity = limiter.capacity();
    let mut held = Vec::new();
    for _ in 0..capacity {
        held.push(limiter.acquire("critical", 1, "test::held").await.unwrap());
    }
    let mut waiting = std::pin::pin!(limiter.acquire("critical", 1, "test::waiting"));
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    assert!(waiting.as_mut().poll(&mut cx).is_pending(), "queued");
    tokio::time::advance(Duration::from_millis(600)).await;
    // The service is read ten times faster: `critical` may wait 400 ms,
    // and its waiter has waited 600 ms of the 4 s it started with: past
    // the budget in force but within twice it, the reading's noise.
    control.learn_budgets(Duration::from_millis(100));
    limiter.set_capacity(capacity + 1);
    let std::task::Poll::Ready(Ok(served)) = waiting.as_mut().poll(&mut cx) else {
        panic!("within twice the budget in force: served");
    };
    held.push(served);
    // Read slow, then fast: the next waiter starts under 4 s again, and
    // has waited 900 ms when `critical` may wait 40 ms.
    control.learn_budgets(Duration::from_secs(1));
    let mut late = std::pin::pin!(limiter.acquire("critical", 1, "test::late"));
    assert!(late.as_mut().poll(&mut cx).is_pending(), "queued");
    tokio::time::advance(Duration::from_millis(900)).await;
    control.learn_budgets(Duration::from_millis(10));
    drop(held.pop());
    match late.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(Err(refused)) => {
            assert_eq!(refused.reason(), crate::Reason::MaxWait)
        }
        other => panic!("{other:?}: past twice the budget in force, refused"),
    }
}

//! The hysteresis controller on the paused clock: low classes go first,
//! come back step by step in rank order, and nothing flaps.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use shed_runtime::{ClassSpec, Config, Limiter, OverloadController, OverloadState, Reason};
use tokio::time::sleep;

const TICK: Duration = Duration::from_millis(100);

fn limiter() -> Limiter {
    Config::new()
        .capacity(10)
        .classes([
            ClassSpec::new("critical", 0).max_wait(Duration::from_secs(60)),
            ClassSpec::new("optional", 1),
            ClassSpec::new("background", 2),
        ])
        .queue_bound(1000)
        .build()
        .unwrap()
}

/// How many of `n` calls of `class` the limiter admits right now.
async fn admitted(limiter: &Limiter, class: &str, n: usize) -> usize {
    let mut admitted = 0;
    for _ in 0..n {
        match limiter.acquire(class, 1, "probe").await {
            Ok(_permit) => admitted += 1,
            Err(refused) => assert_eq!(refused.reason(), Reason::Overload, "{refused}"),
        }
    }
    admitted
}

#[tokio::test(start_paused = true)]
async fn low_classes_are_shed_first_and_readmitted_step_by_step() {
    let limiter = limiter();
    let watch = Arc::new(Mutex::new(None::<OverloadState>));
    let controller = OverloadController::new()
        .thresholds(1.25, 0.9)
        .smoothing(0.5)
        .tick(TICK)
        .spawn_watched(limiter.clone(), watch.clone());
    let state = || watch.lock().unwrap().expect("ticked");

    // Overload: every slot held and 10 more critical calls waiting.
    let held: Vec<_> = futures(&limiter, 10).await;
    let waiting: Vec<_> = (0..10)
        .map(|_| {
            let limiter = limiter.clone();
            tokio::spawn(async move { limiter.acquire("critical", 1, "waiting").await.map(drop) })
        })
        .collect();
    sleep(TICK * 3).await;
    assert!(
        state().shedding,
        "occupancy 2.0 for three ticks: {:?}",
        state()
    );
    assert_eq!(admitted(&limiter, "background", 10).await, 0);
    assert_eq!(admitted(&limiter, "optional", 10).await, 0);

    // The overload ends.
    drop(held);
    for task in waiting {
        task.await.unwrap().unwrap();
    }
    sleep(TICK * 3 + TICK / 2).await;
    let ramp = state().ramp;
    assert!(
        state().shedding && ramp > 0.0 && ramp < 0.5,
        "{:?}",
        state()
    );
    let optional = admitted(&limiter, "optional", 100).await;
    assert!(
        optional > 0 && optional < 100,
        "optional partly back: {optional}"
    );
    assert_eq!(
        admitted(&limiter, "background", 10).await,
        0,
        "background comes back last"
    );

    sleep(TICK * 4).await;
    assert_eq!(
        admitted(&limiter, "optional", 100).await,
        100,
        "optional fully back at ramp 0.5: {:?}",
        state()
    );
    let background = admitted(&limiter, "background", 100).await;
    assert!(background < 100, "{background}");

    sleep(TICK * 6).await;
    assert!(!state().shedding, "{:?}", state());
    assert_eq!(admitted(&limiter, "background", 100).await, 100);
    assert_eq!(
        state().transitions,
        2,
        "one episode: in once, out once, no flapping"
    );
    controller.abort();
}

async fn futures(limiter: &Limiter, n: usize) -> Vec<shed_runtime::Permit> {
    let mut permits = Vec::new();
    for _ in 0..n {
        permits.push(limiter.acquire("critical", 1, "held").await.unwrap());
    }
    permits
}

#[tokio::test(start_paused = true)]
async fn a_signal_hovering_between_the_thresholds_never_flaps() {
    let limiter = limiter();
    let watch = Arc::new(Mutex::new(None::<OverloadState>));
    let controller = OverloadController::new()
        .thresholds(1.25, 0.9)
        .smoothing(1.0)
        .tick(TICK)
        .spawn_watched(limiter.clone(), watch.clone());
    // Occupancy alternating between 1.0 and 1.2: inside the band.
    for round in 0..20 {
        let held = futures(&limiter, 10).await;
        let extra: Vec<_> = if round % 2 == 0 {
            (0..2)
                .map(|_| {
                    let limiter = limiter.clone();
                    tokio::spawn(async move { limiter.acquire("critical", 1, "w").await.map(drop) })
                })
                .collect()
        } else {
            Vec::new()
        };
        sleep(TICK).await;
        drop(held);
        for task in extra {
            task.await.unwrap().unwrap();
        }
    }
    let state = watch.lock().unwrap().unwrap();
    assert_eq!(state.transitions, 0, "{state:?}");
    controller.abort();
}

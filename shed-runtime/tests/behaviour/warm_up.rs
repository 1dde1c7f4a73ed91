//! The cold-start ramp, on tokio's paused clock: the capacity starts at a
//! tenth and climbs linearly over the warm-up, after a start and after
//! `begin_warm_up`, with a fixed capacity and with the adaptive default.

use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::MetricKind;
use shed_runtime::adaptive::AutoSettings;
use shed_runtime::{Config, Limiter, Reason, ENV_WARM_UP};

const WARM_UP: Duration = Duration::from_secs(10);

async fn at(seconds: f64) {
    // Past the step at `seconds` (steps are 200 ms apart for 10 s).
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
}

#[tokio::test(start_paused = true)]
async fn a_fixed_capacity_ramps_from_a_tenth_to_full_over_the_warm_up() {
    let limiter = Config::new()
        .capacity(100)
        .warm_up(WARM_UP)
        .build()
        .unwrap();
    assert_eq!(limiter.capacity(), 10);
    assert_eq!(limiter.warm_up_fraction(), Some(0.1));

    // Only the ramp's share is admitted: the eleventh call waits and is
    // refused when its budget runs out.
    let mut held = Vec::new();
    for _ in 0..10 {
        held.push(limiter.acquire("critical", 1, "cold").await.unwrap());
    }
    let refused = limiter.acquire("critical", 1, "cold").await.unwrap_err();
    assert_eq!(refused.reason(), Reason::MaxWait);

    at(5.0).await;
    let capacity = limiter.capacity();
    assert!(
        (50..=60).contains(&capacity),
        "halfway: 10% + 90% x 0.5 = 55, got {capacity}"
    );
    let fraction = limiter.warm_up_fraction().unwrap();
    assert!((0.5..0.6).contains(&fraction), "{fraction}");
    // The room the ramp made admits at once.
    held.push(limiter.acquire("critical", 1, "warmer").await.unwrap());

    at(5.5).await;
    assert_eq!(limiter.capacity(), 100);
    assert_eq!(limiter.warm_up_fraction(), None);
    drop(held);
    assert_eq!(limiter.in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn begin_warm_up_ramps_again_after_a_recovery_and_restarts_a_ramp_in_progress() {
    let limiter = Config::new().capacity(40).warm_up(WARM_UP).build().unwrap();
    at(11.0).await;
    assert_eq!(limiter.capacity(), 40);

    assert!(limiter.begin_warm_up());
    assert_eq!(limiter.capacity(), 4);
    at(5.0).await;
    assert!(limiter.capacity() > 4 && limiter.capacity() < 40);
    // A second recovery mid-ramp starts over, towards the same 40 (not
    // towards the capped value).
    assert!(limiter.begin_warm_up());
    assert_eq!(limiter.capacity(), 4);
    at(10.5).await;
    assert_eq!(limiter.capacity(), 40);
}

#[tokio::test(start_paused = true)]
async fn set_capacity_during_a_ramp_changes_its_target() {
    let limiter = Config::new()
        .capacity(100)
        .warm_up(WARM_UP)
        .build()
        .unwrap();
    at(1.0).await;
    limiter.set_capacity(20);
    at(0.3).await;
    let capacity = limiter.capacity();
    assert!(
        capacity < 20,
        "the new target is capped too, got {capacity}"
    );
    at(10.0).await;
    assert_eq!(limiter.capacity(), 20);
}

#[tokio::test(start_paused = true)]
async fn the_adaptive_default_is_paused_for_the_ramp_and_resumes_from_its_limit() {
    let settings = AutoSettings {
        initial: 60,
        ..AutoSettings::default()
    };
    let limiter = Config::new()
        .adaptive(settings)
        .warm_up(WARM_UP)
        .build()
        .unwrap();
    // A fresh adaptive limiter starts small and grows on its own: no ramp.
    assert_eq!(limiter.capacity(), 60);
    assert_eq!(limiter.warm_up_fraction(), None);
    assert!(limiter.is_adaptive());

    assert!(limiter.begin_warm_up());
    assert_eq!(limiter.capacity(), 6);
    assert!(
        !limiter.is_adaptive(),
        "it would grow without bound under the cap"
    );
    at(5.0).await;
    assert!(limiter.capacity() > 6 && limiter.capacity() < 60);
    at(5.5).await;
    assert_eq!(limiter.capacity(), 60);
    assert!(limiter.is_adaptive(), "handed back after the ramp");
}

#[tokio::test(start_paused = true)]
async fn pinning_the_capacity_during_a_ramp_keeps_the_adaptive_default_off() {
    let limiter = Config::new().warm_up(WARM_UP).build().unwrap();
    assert!(limiter.begin_warm_up());
    limiter.set_capacity(30);
    at(10.5).await;
    assert_eq!(limiter.capacity(), 30);
    assert!(!limiter.is_adaptive());
}

#[tokio::test(start_paused = true)]
async fn the_warm_up_comes_from_the_environment_and_can_be_switched_off() {
    let env = |value: &'static str| move |name: &str| (name == ENV_WARM_UP).then(|| value.into());
    let from_env = Config::new()
        .capacity(50)
        .env_from(env("2s"))
        .build()
        .unwrap();
    assert_eq!(from_env.capacity(), 5);
    at(2.1).await;
    assert_eq!(from_env.capacity(), 50);

    let off = Config::new()
        .capacity(50)
        .warm_up(WARM_UP)
        .env_from(env("off"))
        .build()
        .unwrap();
    assert_eq!(off.capacity(), 50);
    assert!(!off.begin_warm_up(), "no warm-up configured");

    let malformed = Config::new().capacity(50).env_from(env("soon"));
    let warnings = malformed.env_warnings();
    assert!(
        warnings.iter().any(|w| w.to_string().contains(ENV_WARM_UP)),
        "a malformed SHED_WARM_UP is reported: {warnings:?}"
    );
    assert_eq!(malformed.build().unwrap().capacity(), 50, "and ignored");
}

#[test]
fn without_a_runtime_the_ramp_waits_for_begin_warm_up() {
    let limiter = Config::new().capacity(50).warm_up(WARM_UP).build().unwrap();
    assert_eq!(limiter.capacity(), 50);
    assert!(!limiter.begin_warm_up());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        assert!(limiter.begin_warm_up());
        assert_eq!(limiter.capacity(), 5);
    });
}

#[tokio::test(start_paused = true)]
async fn the_fraction_is_a_gauge_with_the_limiter_label() {
    let limiter: Limiter = Config::new()
        .capacity(100)
        .warm_up(WARM_UP)
        .build()
        .unwrap();
    at(5.0).await;
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || limiter.publish_metrics());
    let snapshot = snapshotter.snapshot().into_vec();
    let (key, _, description, value) = snapshot
        .iter()
        .find(|(key, ..)| {
            key.kind() == MetricKind::Gauge && key.key().name() == "shed_warm_up_fraction"
        })
        .expect("published");
    assert!(key.key().labels().any(|l| l.key() == "limiter"));
    assert!(description.is_some(), "described like the other series");
    let DebugValue::Gauge(fraction) = value else {
        panic!("a gauge: {value:?}");
    };
    assert!((0.5..0.6).contains(&fraction.into_inner()));
}

//! The startup check reports every problem of the policy table at once,
//! with the file and line of each fn, and installs nothing when it fails.

use shed::{shed, ClassSpec, Config, Limiter, Rejected};

#[shed(class = "batch")]
async fn nightly_export() -> Result<(), Rejected> {
    Ok(())
}

#[shed(class = "critical", weight = 40)]
async fn giant_query() -> Result<(), Rejected> {
    Ok(())
}

#[shed(name = "orders::create")]
async fn create_order() -> Result<(), Rejected> {
    Ok(())
}

#[shed(name = "orders::create")]
async fn create_order_v2() -> Result<(), Rejected> {
    Ok(())
}

#[test]
fn every_problem_is_reported_at_once_with_its_location() {
    let config = Config::new().capacity(32).env_from(|name| match name {
        "SHED_CLASSES" => Some("archive=off".into()),
        _ => None,
    });
    let errors = config.check().unwrap_err();
    let text = errors.to_string();
    assert_eq!(errors.problems().len(), 4, "{text}");
    assert!(text.starts_with("4 shed configuration problems:"), "{text}");
    assert!(
        text.contains("tests/startup_check.rs:7: `startup_check::nightly_export` uses class `batch`, which is not configured (known classes: critical, optional, background)"),
        "{text}"
    );
    assert!(
        text.contains("tests/startup_check.rs:12: `startup_check::giant_query` has weight 40, but class `critical` can hold at most 32 of the 32 slots"),
        "{text}"
    );
    assert!(
        text.contains("the name `orders::create` is used by 2 guarded fns (tests/startup_check.rs:17, tests/startup_check.rs:22)"),
        "{text}"
    );
    assert!(
        text.contains("SHED_CLASSES names class `archive`, which is not configured"),
        "{text}"
    );
}

#[test]
fn a_failed_check_installs_nothing_and_a_fixed_one_installs() {
    let broken = Config::new().capacity(32);
    assert!(broken.install().is_err());

    let fixed = Config::new()
        .capacity(64)
        .class(ClassSpec::new("batch", 3).share(0.25));
    let errors = fixed.clone().check().unwrap_err();
    assert_eq!(
        errors.problems().len(),
        1,
        "only the duplicate name is left: {errors}"
    );
    let problem = &errors.problems()[0];
    assert_eq!(problem.location(), Some("tests/startup_check.rs:17"));
    assert!(
        problem.message().contains("give each a unique `name"),
        "{problem}"
    );

    // A limiter built without the table check serves these fns anyway.
    let limiter = fixed.build().unwrap();
    assert_eq!(limiter.capacity(), 64);
    assert_eq!(
        Limiter::global().capacity(),
        shed::DEFAULT_CAPACITY,
        "nothing installed"
    );
}

#[tokio::test]
async fn unknown_classes_are_refused_at_run_time_too() {
    let limiter = Config::new().capacity(32).build().unwrap();
    let refused = limiter.scope(nightly_export()).await.unwrap_err();
    assert_eq!(refused.reason(), shed::Reason::UnknownClass);
    assert_eq!(refused.class(), "batch");
    let too_heavy = limiter.scope(giant_query()).await.unwrap_err();
    assert_eq!(too_heavy.reason(), shed::Reason::TooHeavy);
    assert!(limiter.scope(create_order()).await.is_ok());
    assert!(limiter.scope(create_order_v2()).await.is_ok());
}

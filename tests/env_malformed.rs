//! A malformed environment never fails a request: it is reported once and
//! ignored as a whole.

use shed::{shed, Limiter, Mode, Rejected};

#[shed(class = "background")]
async fn analytics() -> Result<&'static str, Rejected> {
    Ok("sent")
}

#[tokio::test]
async fn a_malformed_environment_is_ignored_not_half_applied() {
    std::env::set_var("SHED_CLASSES", "background=off,optional=maybe");
    std::env::set_var("SHED_MODE", "loud");

    assert_eq!(
        analytics().await.unwrap(),
        "sent",
        "no switch of a malformed list applies"
    );
    assert_eq!(Limiter::global().mode(), Mode::Enforce);

    let config = shed::Config::from_env();
    // Ignored, not an error: install would not fail either.
    assert!(config.check().is_ok());
    let problems: Vec<String> = config
        .env_warnings()
        .iter()
        .map(|w| w.to_string())
        .collect();
    let problems = problems.join("\n");
    assert!(
        problems.contains("SHED_CLASSES=`background=off,optional=maybe` is malformed"),
        "{problems}"
    );
    assert!(
        problems.contains("expected `on` or `off`, got `maybe`"),
        "{problems}"
    );
    assert!(
        problems.contains("SHED_MODE=`loud` is malformed"),
        "{problems}"
    );
}

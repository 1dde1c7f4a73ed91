//! The process-wide limiter nobody configured honours `SHED_CLASSES` and
//! `SHED_MODE`. One test per binary: the environment is read once, on the
//! first guarded call.

use shed::{shed, Limiter, Mode, Reason, Rejected};

#[shed(class = "background")]
async fn analytics() -> Result<&'static str, Rejected> {
    Ok("sent")
}

#[shed(class = "optional")]
async fn recommendations() -> Result<&'static str, Rejected> {
    Ok("shown")
}

#[tokio::test]
async fn classes_switch_off_from_the_environment_without_a_rebuild() {
    std::env::set_var("SHED_CLASSES", "background=off, optional=on");
    std::env::set_var("SHED_MODE", "enforce");

    let refused = analytics().await.unwrap_err();
    assert_eq!(refused.reason(), Reason::Disabled);
    assert_eq!(recommendations().await.unwrap(), "shown");

    let global = Limiter::global();
    assert_eq!(global.mode(), Mode::Enforce);
    assert_eq!(global.class_enabled("background"), Some(false));
    // Operators can switch it back on at run time (an admin endpoint).
    global.set_class_enabled("background", true).unwrap();
    assert_eq!(analytics().await.unwrap(), "sent");
    let stats = global.stats();
    assert_eq!(
        stats
            .class("background")
            .unwrap()
            .refused_for(Reason::Disabled),
        1
    );
}

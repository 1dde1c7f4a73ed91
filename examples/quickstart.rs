//! A tour of `shed` in one screen: annotate handlers, check the policy
//! table at startup, then watch calls being admitted and refused.
//!
//! ```text
//! cargo run --example quickstart
//! SHED_CLASSES=background=off cargo run --example quickstart
//! ```

use std::time::Duration;

use shed::{shed, ClassSpec, Config, Limiter, Rejected};

/// Interactive traffic: what the service exists for.
#[shed(class = "critical", max_wait = "50ms")]
async fn place_order(id: u32) -> Result<String, Rejected> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    Ok(format!("order {id} placed"))
}

/// Nice to have: shed before interactive traffic.
#[shed(class = "optional", max_wait = "10ms")]
async fn recommendations(id: u32) -> Result<Vec<u32>, Rejected> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    Ok(vec![id + 1, id + 2])
}

/// Expensive and deferrable: three slots a call, shed first.
#[shed(class = "background", max_wait = "1ms", weight = 3)]
async fn rebuild_report() -> Result<&'static str, Rejected> {
    tokio::time::sleep(Duration::from_millis(50)).await;
    Ok("report rebuilt")
}

#[tokio::main]
async fn main() {
    // Startup: configure, check every guarded fn against the configuration
    // (all problems at once, with file:line), then install.
    let config = Config::from_env().capacity(8).class(
        ClassSpec::new("background", 2)
            .share(0.5)
            .max_wait(Duration::from_millis(1)),
    );
    let limiter = match config.install() {
        Ok(limiter) => limiter,
        Err(problems) => {
            eprintln!("{problems}");
            std::process::exit(1);
        }
    };
    println!("policy table:\n{}", shed::policies());

    // Quiet traffic: everything is admitted.
    println!("{}", place_order(1).await.unwrap());
    println!("{:?}", recommendations(1).await.unwrap());
    match rebuild_report().await {
        Ok(done) => println!("{done}"),
        Err(refused) => println!("refused: {refused}"),
    }

    // A burst of 40 calls on 8 slots: critical calls wait up to 50 ms and
    // mostly get through; optional ones give up after 10 ms; background is
    // shed almost at once.
    let mut calls = Vec::new();
    for i in 0..40 {
        calls.push(tokio::spawn(async move {
            match i % 4 {
                0 | 1 => place_order(i).await.map(|_| "critical"),
                2 => recommendations(i).await.map(|_| "optional"),
                _ => rebuild_report().await.map(|_| "background"),
            }
        }));
    }
    let mut refusals = Vec::new();
    for call in calls {
        if let Err(refused) = call.await.unwrap() {
            refusals.push(refused);
        }
    }
    println!(
        "\nburst of 40 calls, {} refused; for example:",
        refusals.len()
    );
    for refused in refusals.iter().take(3) {
        println!("  {refused}");
    }

    println!("\nper class:");
    for class in limiter.stats().classes {
        println!(
            "  {:<10} admitted {:>3}  refused {:>3} {:?}",
            class.class,
            class.admitted,
            class.refused_total(),
            class.refused
        );
    }
    assert_eq!(
        Limiter::global().in_flight(),
        0,
        "every slot was given back"
    );
}

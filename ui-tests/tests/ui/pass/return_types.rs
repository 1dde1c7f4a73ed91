use shed::{shed, FromRejected, Rejected};

/// An application's own reply type opts in to carrying refusals.
#[derive(Debug, PartialEq)]
enum Reply {
    Ok(String),
    Busy { retry_after_secs: u64 },
}

impl FromRejected for Reply {
    fn from_rejected(rejected: Rejected) -> Self {
        Reply::Busy {
            retry_after_secs: rejected.retry_after().as_secs(),
        }
    }
}

#[shed(class = "optional")]
async fn reply(name: &str) -> Reply {
    Reply::Ok(format!("hi {name}"))
}

#[shed]
async fn boxed_error() -> Result<u8, Box<dyn std::error::Error + Send + Sync>> {
    Ok(1)
}

#[shed]
async fn anyhow_like() -> Result<u8, Box<dyn std::error::Error>> {
    Ok(2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(reply("ann").await, Reply::Ok("hi ann".into()));
    assert_eq!(boxed_error().await.unwrap(), 1);
    assert_eq!(anyhow_like().await.unwrap(), 2);
    let busy = shed::Limiter::builder().build().unwrap();
    busy.set_class_enabled("optional", false).unwrap();
    // A switched-off class: "not soon", 30 s with ±30% of jitter.
    match busy.scope(reply("bob")).await {
        Reply::Busy { retry_after_secs } => assert!((21..=39).contains(&retry_after_secs)),
        other => panic!("{other:?}"),
    }
}

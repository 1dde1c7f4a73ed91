use shed::{shed, Rejected};

struct Account {
    id: u64,
}

// The tenant is any hashable expression over the arguments, borrowed (the
// arguments stay usable in the body).
#[shed(class = "critical", tenant = account.id)]
async fn balance(account: Account, name: String) -> Result<String, Rejected> {
    Ok(format!("{name}: {}", account.id))
}

#[shed(tenant = name)]
async fn greet(name: String) -> Result<String, Rejected> {
    Ok(name)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let _ = balance(Account { id: 7 }, "x".into()).await;
    let _ = greet("y".into()).await;
}

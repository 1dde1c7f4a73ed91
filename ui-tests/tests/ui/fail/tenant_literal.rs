use shed::{shed, Rejected};

// A literal tenant would make every call the same tenant's.
#[shed(tenant = "acme")]
async fn lookup(account: &str) -> Result<usize, Rejected> {
    Ok(account.len())
}

fn main() {}

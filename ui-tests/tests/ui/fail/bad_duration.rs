use shed::{shed, Rejected};

#[shed(max_wait = "5 parsecs")]
async fn parsecs() -> Result<(), Rejected> {
    Ok(())
}

#[shed(max_wait = "-1ms")]
async fn negative() -> Result<(), Rejected> {
    Ok(())
}

#[shed(max_wait = "2months")]
async fn months() -> Result<(), Rejected> {
    Ok(())
}

#[shed(max_wait = 5)]
async fn not_a_string() -> Result<(), Rejected> {
    Ok(())
}

fn main() {}

use shed::{shed, Rejected};

#[shed(class = "")]
async fn handler() -> Result<(), Rejected> {
    Ok(())
}

#[shed(class = background)]
async fn unquoted() -> Result<(), Rejected> {
    Ok(())
}

fn main() {}

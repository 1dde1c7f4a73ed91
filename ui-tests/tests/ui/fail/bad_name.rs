use shed::{shed, Rejected};

#[shed(name = " ")]
async fn blank() -> Result<(), Rejected> {
    Ok(())
}

#[shed(crate = "not a path")]
async fn bad_crate() -> Result<(), Rejected> {
    Ok(())
}

fn main() {}

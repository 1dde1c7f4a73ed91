use shed::{shed, Rejected};

#[shed(weight = 0)]
async fn zero() -> Result<(), Rejected> {
    Ok(())
}

#[shed(weight = "3")]
async fn string() -> Result<(), Rejected> {
    Ok(())
}

#[shed(weight = 1.5)]
async fn fraction() -> Result<(), Rejected> {
    Ok(())
}

#[shed(weight = 99999999999)]
async fn too_big() -> Result<(), Rejected> {
    Ok(())
}

fn main() {}

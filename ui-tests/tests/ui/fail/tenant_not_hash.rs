use shed::{shed, Rejected};

// The tenant key must be hashable: a float is not.
#[shed(tenant = score)]
async fn rank(score: f64) -> Result<f64, Rejected> {
    Ok(score * 2.0)
}

fn main() {}

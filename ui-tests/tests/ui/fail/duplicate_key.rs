use shed::{shed, Rejected};

#[shed(class = "background", weight = 2, class = "optional")]
async fn handler() -> Result<(), Rejected> {
    Ok(())
}

fn main() {}

use shed::{shed, Rejected};

#[shed(class = "background", priority = 3)]
async fn handler() -> Result<(), Rejected> {
    Ok(())
}

fn main() {
    let _ = handler();
}

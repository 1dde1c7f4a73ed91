use shed::{shed, Rejected};

#[shed(class = "background")]
fn not_async() -> Result<(), Rejected> {
    Ok(())
}

fn main() {
    // The fn is still emitted, so this call does not add a second error.
    let _ = not_async();
}

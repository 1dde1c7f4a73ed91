use shed::{shed, Rejected};

// Every mistake is reported, not just the first.
#[shed(clas = "background", weight = 0, max_wait = "soon")]
fn handler() -> Result<(), Rejected> {
    Ok(())
}

fn main() {}

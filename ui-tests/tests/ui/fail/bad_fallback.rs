use shed::{shed, Rejected};

async fn cached(_: u8) -> Result<u8, Rejected> {
    Ok(0)
}

#[shed(fallback = "cached")]
async fn string_path(n: u8) -> Result<u8, Rejected> {
    Ok(n)
}

#[shed(fallback = cached)]
async fn pattern_argument((a, _b): (u8, u8)) -> Result<u8, Rejected> {
    Ok(a)
}

fn main() {}

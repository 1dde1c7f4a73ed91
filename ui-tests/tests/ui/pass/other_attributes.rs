use shed::{shed, Rejected};

#[shed(class = "optional")]
#[allow(clippy::unused_async)]
#[must_use = "check the result"]
#[inline]
async fn annotated() -> Result<u8, Rejected> {
    Ok(1)
}

#[shed]
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Rejected> {
    assert_eq!(annotated().await?, 1);
    Ok(())
}

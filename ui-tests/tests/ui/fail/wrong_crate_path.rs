// A `crate = "..."` path that does not lead to the `shed` crate is
// reported once, on the path, not again on the fn's return type.
extern crate shed as my_shed;

#[my_shed::shed(crate = "::nonexistent_shed")]
async fn handler() -> Result<(), my_shed::Rejected> {
    Ok(())
}

fn main() {}

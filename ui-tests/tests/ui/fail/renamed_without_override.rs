// Without `crate = "..."`, generated code looks for `::shed`; a program
// that renamed the dependency gets an error that names the path.
extern crate shed as my_shed;

#[my_shed::shed(crate = "::nonexistent_shed")]
async fn handler() -> Result<(), my_shed::Rejected> {
    Ok(())
}

fn main() {}

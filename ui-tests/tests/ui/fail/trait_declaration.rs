use shed::{shed, Rejected};

trait Store {
    #[shed]
    async fn load(&self) -> Result<(), Rejected>;
}

fn main() {}

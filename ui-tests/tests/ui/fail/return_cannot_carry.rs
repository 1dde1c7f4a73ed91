use shed::shed;

#[shed]
async fn returns_a_number() -> u32 {
    1
}

#[shed]
async fn returns_nothing() {}

#[shed]
async fn error_type_without_from() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}

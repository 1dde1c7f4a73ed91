use shed::{shed, Rejected};

async fn cached(user: u32) -> Result<Vec<u32>, Rejected> {
    Ok(vec![user])
}

#[shed(class = "optional", fallback = cached)]
async fn recommendations(user: u32) -> Result<Vec<u32>, Rejected> {
    Ok(vec![user, user + 1])
}

struct Catalog;

impl Catalog {
    async fn stale(&self, query: &str) -> Result<String, Rejected> {
        Ok(format!("stale {query}"))
    }

    #[shed(class = "optional", fallback = Self::stale)]
    async fn search(&self, query: &str) -> Result<String, Rejected> {
        Ok(format!("fresh {query}"))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(recommendations(1).await.unwrap(), vec![1, 2]);
    assert_eq!(Catalog.search("x").await.unwrap(), "fresh x");
    let off = shed::Limiter::builder().build().unwrap();
    off.set_class_enabled("optional", false).unwrap();
    assert_eq!(off.scope(recommendations(1)).await.unwrap(), vec![1]);
    assert_eq!(off.scope(Catalog.search("x")).await.unwrap(), "stale x");
    assert_eq!(off.stats().class("optional").unwrap().fallbacks, 2);
}

use std::sync::Arc;

use shed::{shed, Rejected};

struct Service {
    hits: u32,
}

impl Service {
    #[shed(class = "optional")]
    async fn by_ref(&self) -> Result<u32, Rejected> {
        Ok(self.hits)
    }

    #[shed(class = "optional")]
    async fn by_mut(&mut self) -> Result<u32, Rejected> {
        self.hits += 1;
        Ok(self.hits)
    }

    #[shed]
    async fn by_value(self) -> Result<u32, Rejected> {
        Ok(self.hits)
    }

    #[shed]
    async fn by_arc(self: Arc<Self>) -> Result<u32, Rejected> {
        Ok(self.hits)
    }

    #[shed(weight = 2)]
    async fn generic_method<T: Into<u32>>(&self, extra: T) -> Result<u32, Rejected> {
        Ok(self.hits + extra.into())
    }

    #[shed]
    async fn returns_self_type(&self) -> Result<Self, Rejected> {
        Ok(Service { hits: self.hits })
    }
}

struct Generic<T>(T);

impl<T: Clone + Send + Sync> Generic<T> {
    #[shed(name = "generic::get")]
    async fn get(&self) -> Result<T, Rejected> {
        Ok(self.0.clone())
    }
}

trait Repository {
    async fn find(&self, id: u32) -> Result<String, Rejected>;
}

impl Repository for Service {
    #[shed(class = "critical", name = "repo::find")]
    async fn find(&self, id: u32) -> Result<String, Rejected> {
        Ok(format!("{id}:{}", self.hits))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut service = Service { hits: 1 };
    assert_eq!(service.by_ref().await.unwrap(), 1);
    assert_eq!(service.by_mut().await.unwrap(), 2);
    assert_eq!(service.generic_method(3u8).await.unwrap(), 5);
    assert_eq!(service.find(7).await.unwrap(), "7:2");
    assert_eq!(service.returns_self_type().await.unwrap().hits, 2);
    assert_eq!(Arc::new(Service { hits: 9 }).by_arc().await.unwrap(), 9);
    assert_eq!(service.by_value().await.unwrap(), 2);
    assert_eq!(Generic("g").get().await.unwrap(), "g");
    let table = shed::policies();
    for name in ["::by_ref", "::by_mut", "::by_value", "::by_arc", "::generic_method", "generic::get", "repo::find"] {
        assert!(table.iter().any(|p| p.name().ends_with(name)), "{name} is registered:\n{table}");
    }
}

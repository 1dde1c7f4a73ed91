use shed::{shed, Rejected};

#[derive(Debug)]
pub enum Error {
    Busy(Rejected),
    NotFound,
}

impl From<Rejected> for Error {
    fn from(r: Rejected) -> Self {
        Error::Busy(r)
    }
}

/// Docs stay on the fn.
#[shed]
pub async fn plain() -> Result<(), Rejected> {
    Ok(())
}

#[shed(class = "background", max_wait = "500us", weight = 3, name = "reports::build")]
pub(crate) async fn all_keys(id: u64) -> Result<u64, Error> {
    if id == 0 {
        return Err(Error::NotFound);
    }
    Ok(id)
}

#[shed(max_wait = "1.5s")]
async fn question_mark(input: &str) -> Result<u32, Error> {
    let n: u32 = input.parse().map_err(|_| Error::NotFound)?;
    Ok(n)
}

#[shed(class = "optional")]
async fn patterns((a, b): (u8, u8), [c, _]: [u8; 2], Wrapper(d): Wrapper) -> Result<u8, Rejected> {
    Ok(a + b + c + d)
}

struct Wrapper(u8);

#[shed]
async fn impl_trait_args(items: impl IntoIterator<Item = u32>, f: impl Fn(u32) -> u32) -> Result<u32, Rejected> {
    Ok(items.into_iter().map(f).sum())
}

#[shed]
async fn generic<T, U>(value: T, other: U) -> Result<String, Rejected>
where
    T: std::fmt::Display + Send,
    U: Into<String>,
{
    Ok(format!("{value}{}", other.into()))
}

#[shed]
async fn lifetimes<'a, 'b: 'a>(left: &'a str, _right: &'b str) -> Result<&'a str, Rejected> {
    Ok(left)
}

#[shed]
async fn elided(text: &str) -> Result<&str, Rejected> {
    Ok(text.trim())
}

#[shed]
#[allow(clippy::needless_return)]
async fn early_return(flag: bool) -> Result<u8, Rejected> {
    if flag {
        return Ok(1);
    }
    return Ok(2);
}

#[shed]
async fn inner_attributes() -> Result<(), Rejected> {
    #![allow(unused_variables)]
    let unused = 1;
    Ok(())
}

#[shed]
async fn mutable_args(mut n: u32) -> Result<u32, Rejected> {
    n += 1;
    Ok(n)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    plain().await.unwrap();
    assert_eq!(all_keys(4).await.unwrap(), 4);
    assert!(matches!(all_keys(0).await, Err(Error::NotFound)));
    assert_eq!(question_mark("7").await.unwrap(), 7);
    assert_eq!(patterns((1, 2), [3, 4], Wrapper(5)).await.unwrap(), 11);
    assert_eq!(impl_trait_args(vec![1, 2], |x| x * 2).await.unwrap(), 6);
    assert_eq!(generic(1, "a").await.unwrap(), "1a");
    assert_eq!(lifetimes("x", "y").await.unwrap(), "x");
    assert_eq!(elided(" z ").await.unwrap(), "z");
    assert_eq!(early_return(true).await.unwrap(), 1);
    inner_attributes().await.unwrap();
    assert_eq!(mutable_args(1).await.unwrap(), 2);
    assert!(shed::policies().get("reports::build").is_some());
}

// No identifier of the user's, in the arguments, the body or a fallback's
// arguments, collides with a name the expansion introduces: every one of
// them is used here, by the user, with the user's own meaning.
#![allow(non_upper_case_globals, clippy::let_unit_value)]

use shed::{shed, Rejected};

async fn cached(admission: u32, permit: u32, rejected: u32) -> Result<u32, Rejected> {
    Ok(admission + permit + rejected)
}

#[shed(class = "optional", fallback = cached)]
async fn guarded(admission: u32, permit: u32, rejected: u32) -> Result<u32, Rejected> {
    Ok(admission * permit * rejected)
}

// The generated names, and the names of the crate's items, as arguments.
#[shed(class = "optional", fallback = cached_underscored)]
async fn underscored(
    __shed_admission: u32,
    __shed_permit: u32,
    __shed_rejected: u32,
) -> Result<u32, Rejected> {
    Ok(__shed_admission * __shed_permit * __shed_rejected)
}

async fn cached_underscored(
    __shed_admission: u32,
    __shed_permit: u32,
    __shed_rejected: u32,
) -> Result<u32, Rejected> {
    Ok(__shed_admission + __shed_permit + __shed_rejected)
}

// The generated names as locals and items of the body.
#[shed]
async fn body_names(x: u32) -> Result<u32, Rejected> {
    static __SHED_POLICY: u32 = 100;
    fn __shed_here() -> u32 {
        1000
    }
    #[allow(dead_code)]
    struct __ShedHere;
    mod __shed {
        pub const VALUE: u32 = 10_000;
    }
    let __shed_permit = 1;
    let __shed_admission = 2;
    let __shed_rejected = 3;
    let admission = 4;
    let permit = 5;
    let rejected = 6;
    let policy = 7;
    Ok(x + __SHED_POLICY
        + __shed_here()
        + __shed::VALUE
        + __shed_permit
        + __shed_admission
        + __shed_rejected
        + admission
        + permit
        + rejected
        + policy)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(guarded(2, 3, 4).await.unwrap(), 24);
    assert_eq!(underscored(2, 3, 4).await.unwrap(), 24);
    assert_eq!(body_names(0).await.unwrap(), 11_128);
    // Refused, so the fallback runs with the arguments as passed.
    let off = shed::Limiter::builder().build().unwrap();
    off.set_class_enabled("optional", false).unwrap();
    assert_eq!(off.scope(guarded(2, 3, 4)).await.unwrap(), 9);
    assert_eq!(off.scope(underscored(2, 3, 4)).await.unwrap(), 9);
}

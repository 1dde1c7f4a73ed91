//! The `#[shed]` attribute. Use it through the `shed` crate, whose docs
//! describe it; this crate only rewrites code, all behaviour lives in the
//! runtime.

mod args;
mod duration;
mod expand;
mod item;
mod stacking;

use proc_macro::TokenStream;

/// Guards an `async fn` with the process-wide load-shedding limiter.
/// See the `shed` crate for the keys and the semantics.
#[proc_macro_attribute]
pub fn shed(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::shed(args.into(), item.into()).into()
}

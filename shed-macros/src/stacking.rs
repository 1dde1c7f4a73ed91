//! `#[shed]` below `#[tokio::test]` or `#[tokio::main]`.
//!
//! Attributes expand from the top down, so when `#[tokio::test]` is written
//! above `#[shed]`, `#[shed]` receives tokio's rewrite: a plain `fn` whose
//! body starts with `let body = async { <the user's body> };` and then runs
//! `body` on a new runtime. The guard then goes at the top of that `async`
//! block, which is the user's body, so both orders behave the same. Any
//! other plain `fn` is refused with a message that says which order works.

use proc_macro2::{Group, TokenStream, TokenTree};

/// The user's body inside tokio's rewrite, if `rest` (a plain fn's body)
/// has tokio's shape: `let body = async { ... } ...`. Returns the index of
/// the `async` block among `rest`'s tokens, and the block.
pub(crate) fn tokio_body(rest: &TokenStream) -> Option<(usize, Group)> {
    let tokens: Vec<TokenTree> = rest.clone().into_iter().collect();
    let is_ident =
        |i: usize, name: &str| matches!(tokens.get(i), Some(TokenTree::Ident(t)) if t == name);
    let is_eq = matches!(tokens.get(2), Some(TokenTree::Punct(p)) if p.as_char() == '=');
    if !(is_ident(0, "let") && is_ident(1, "body") && is_eq && is_ident(3, "async")) {
        return None;
    }
    match tokens.get(4) {
        Some(TokenTree::Group(group)) if group.delimiter() == proc_macro2::Delimiter::Brace => {
            Some((4, group.clone()))
        }
        _ => None,
    }
}

/// `rest` with the block at `index` replaced by `block`.
pub(crate) fn replace(rest: &TokenStream, index: usize, block: Group) -> TokenStream {
    rest.clone()
        .into_iter()
        .enumerate()
        .map(|(i, token)| {
            if i == index {
                block.clone().into()
            } else {
                token
            }
        })
        .collect()
}

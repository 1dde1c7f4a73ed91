//! The annotated item, parsed only as far as the rewrite needs: the body
//! is kept as tokens, so a body `syn` cannot parse still compiles as the
//! user wrote it.

use proc_macro2::{Delimiter, Group, TokenStream};
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Signature, Visibility};

/// An `fn` item, or a trait method declaration (without a body).
pub(crate) struct FnItem {
    pub(crate) outer_attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) sig: Signature,
    pub(crate) body: Option<Body>,
}

/// A fn body: its inner attributes (`#![allow(...)]`), which must stay
/// first, and the rest.
pub(crate) struct Body {
    pub(crate) brace: Group,
    pub(crate) inner_attrs: Vec<Attribute>,
    pub(crate) rest: TokenStream,
}

impl Parse for Body {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let brace: Group = input.parse()?;
        if brace.delimiter() != Delimiter::Brace {
            return Err(syn::Error::new(brace.span(), "expected the fn body"));
        }
        let (inner_attrs, rest) = syn::parse::Parser::parse2(
            |body: ParseStream<'_>| {
                let inner = body.call(Attribute::parse_inner)?;
                let rest: TokenStream = body.parse()?;
                Ok((inner, rest))
            },
            brace.stream(),
        )?;
        Ok(Body {
            brace,
            inner_attrs,
            rest,
        })
    }
}

impl Parse for FnItem {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let outer_attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let sig: Signature = input.parse()?;
        let body = if input.peek(syn::Token![;]) {
            input.parse::<syn::Token![;]>()?;
            None
        } else {
            Some(input.parse()?)
        };
        Ok(FnItem {
            outer_attrs,
            vis,
            sig,
            body,
        })
    }
}

//! The attribute's arguments: parsed, checked key by key, every error kept.

use proc_macro2::{Span, TokenStream};
use std::time::Duration;
use syn::meta::ParseNestedMeta;
use syn::{LitInt, LitStr};

use crate::duration;

const KEYS: &str = "`class`, `max_wait`, `weight`, `name`, `fallback`, `tenant`, `crate`";

/// What the attribute says, with defaults filled in by the expansion.
#[derive(Default)]
pub(crate) struct Args {
    pub(crate) class: Option<LitStr>,
    pub(crate) max_wait: Option<(Duration, Span)>,
    pub(crate) weight: Option<(u32, Span)>,
    pub(crate) name: Option<LitStr>,
    pub(crate) krate: Option<syn::Path>,
    pub(crate) fallback: Option<syn::ExprPath>,
    /// The caller's tenant: an expression over the fn's arguments.
    pub(crate) tenant: Option<syn::Expr>,
    /// Keys seen so far, to reject duplicates.
    seen: Vec<String>,
}

/// Collects every error instead of stopping at the first.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn finish(self) -> Result<(), syn::Error> {
        self.0.map_or(Ok(()), Err)
    }
}

impl Args {
    pub(crate) fn parse(tokens: TokenStream, errors: &mut Errors) -> Args {
        let mut args = Args::default();
        let parser = syn::meta::parser(|meta| {
            if let Err(e) = args.key(&meta) {
                errors.push(e);
            }
            Ok(())
        });
        if let Err(e) = syn::parse::Parser::parse2(parser, tokens) {
            errors.push(e);
        }
        args
    }

    fn key(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        // Read the whole value first, so that a wrong value still lets the
        // following keys be checked.
        let value: syn::Expr = meta.value()?.parse()?;
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_else(|| {
                let path = &meta.path;
                quote::quote!(#path).to_string().replace(' ', "")
            });
        let known = [
            "class", "max_wait", "weight", "name", "fallback", "tenant", "crate",
        ];
        if !known.contains(&key.as_str()) {
            return Err(meta.error(format!("unknown key `{key}`; valid keys are {KEYS}")));
        }
        if self.seen.contains(&key) {
            return Err(meta.error(format!("duplicate key `{key}`: give each key once")));
        }
        self.seen.push(key.clone());
        match key.as_str() {
            "class" => {
                let lit: LitStr = literal(&value)
                    .map_err(|e| expected(e, "a class name, like `class = \"background\"`"))?;
                if lit.value().trim().is_empty() {
                    return Err(syn::Error::new(
                        lit.span(),
                        "empty class name: write a configured class, like `class = \"background\"`",
                    ));
                }
                self.class = Some(lit);
            }
            "max_wait" => {
                let lit: LitStr = literal(&value)
                    .map_err(|e| expected(e, "a duration string, like `max_wait = \"5ms\"`"))?;
                let parsed =
                    duration::parse(&lit.value()).map_err(|m| syn::Error::new(lit.span(), m))?;
                self.max_wait = Some((parsed, lit.span()));
            }
            "weight" => {
                let lit: LitInt = literal(&value)
                    .map_err(|e| expected(e, "a whole number of slots, like `weight = 3`"))?;
                let weight: u32 = lit.base10_parse().map_err(|_| {
                    syn::Error::new(lit.span(), "weight must be a whole number of slots from 1 to 4294967295, like `weight = 3`")
                })?;
                if weight == 0 {
                    return Err(syn::Error::new(
                        lit.span(),
                        "weight must be at least 1: every call holds at least one slot",
                    ));
                }
                self.weight = Some((weight, lit.span()));
            }
            "name" => {
                let lit: LitStr = literal(&value)
                    .map_err(|e| expected(e, "a name string, like `name = \"orders::create\"`"))?;
                if lit.value().trim().is_empty() {
                    return Err(syn::Error::new(
                        lit.span(),
                        "empty name: leave `name` out to use `module::path::fn`, or write one",
                    ));
                }
                self.name = Some(lit);
            }
            "fallback" => match value {
                syn::Expr::Path(path) => self.fallback = Some(path),
                other => {
                    return Err(syn::Error::new_spanned(
                        other,
                        "expected the path of an async fn with the same arguments, like `fallback = cached_results` or `fallback = Self::cached`",
                    ))
                }
            },
            "tenant" => match value {
                syn::Expr::Lit(lit) => {
                    return Err(syn::Error::new_spanned(
                        lit,
                        "a literal tenant is the same for every call: write an expression over the fn's arguments, like `tenant = account.id` (without `tenant`, the caller's task-local tenant applies)",
                    ))
                }
                other => self.tenant = Some(other),
            },
            "crate" => {
                let lit: LitStr = literal(&value).map_err(|e| {
                    expected(
                        e,
                        "the path of the renamed `shed` crate, like `crate = \"my_shed\"`",
                    )
                })?;
                let path: syn::Path = lit.parse().map_err(|_| {
                    syn::Error::new(lit.span(), "expected a path to the `shed` crate, like `crate = \"my_shed\"` or `crate = \"::deps::shed\"`")
                })?;
                self.krate = Some(path);
            }
            _ => unreachable!("checked against the known keys"),
        }
        Ok(())
    }
}

/// The value as a literal of the kind the key takes.
fn literal<T: syn::parse::Parse>(value: &syn::Expr) -> syn::Result<T> {
    match value {
        syn::Expr::Lit(lit) => syn::parse2(quote::ToTokens::to_token_stream(&lit.lit)),
        other => Err(syn::Error::new_spanned(other, "not a literal")),
    }
}

fn expected(error: syn::Error, what: &str) -> syn::Error {
    syn::Error::new(error.span(), format!("expected {what}"))
}

//! The rewrite: the user's fn, unchanged, with an admission prelude at the
//! top of its body and a `static` policy registered in the policy table.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

use crate::args::{Args, Errors};
use crate::item::FnItem;

pub(crate) fn shed(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let args = Args::parse(args, &mut errors);
    let parsed = match syn::parse2::<FnItem>(item.clone()) {
        Ok(parsed) => parsed,
        Err(_) => {
            errors.push(syn::Error::new(
                first_token_span(&item),
                "`#[shed]` applies to an `async fn` (a free fn, a method, or a trait impl's method)",
            ));
            return with_errors(item, errors);
        }
    };
    if parsed.sig.asyncness.is_none() {
        errors.push(syn::Error::new(
            parsed.sig.fn_token.span,
            "`#[shed]` works on `async fn` only: make this fn `async`, or admit the work by hand with `shed::Limiter::acquire`",
        ));
    }
    if parsed.body.is_none() {
        errors.push(syn::Error::new(
            parsed.sig.span(),
            "`#[shed]` needs a fn body: put it on the method in the trait's `impl`, not on the declaration",
        ));
    }
    let fallback_args = match &args.fallback {
        Some(_) => match forwarded_args(&parsed.sig) {
            Ok(names) => Some(names),
            Err(e) => {
                errors.push(e);
                None
            }
        },
        None => None,
    };
    if let Err(all) = errors.finish() {
        // Keep the user's fn so the rest of the crate, and rust-analyzer,
        // still see it while the attribute is being fixed.
        return with_errors(item, Errors::from(all));
    }
    rewrite(&args, parsed, fallback_args)
}

/// The arguments to hand on to a fallback: `self` and every argument's
/// name. A fallback needs plain names, since a pattern has already taken
/// its argument apart.
fn forwarded_args(sig: &syn::Signature) -> syn::Result<Vec<TokenStream>> {
    sig.inputs
        .iter()
        .map(|input| match input {
            syn::FnArg::Receiver(receiver) => Ok(receiver.self_token.to_token_stream()),
            syn::FnArg::Typed(typed) => match &*typed.pat {
                syn::Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => {
                    Ok(ident.ident.to_token_stream())
                }
                other => Err(syn::Error::new_spanned(
                    other,
                    "`fallback` passes the arguments on by name: give this argument a plain name, like `args: (u8, u8)`, and take it apart in the body",
                )),
            },
        })
        .collect()
}

impl From<syn::Error> for Errors {
    fn from(error: syn::Error) -> Self {
        let mut errors = Errors::default();
        errors.push(error);
        errors
    }
}

fn with_errors(item: TokenStream, errors: Errors) -> TokenStream {
    let compile_errors = errors
        .finish()
        .err()
        .map(|e| e.to_compile_error())
        .unwrap_or_default();
    quote!(#compile_errors #item)
}

fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let proc_macro2::TokenTree::Group(group) = &token {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                token = inner.into();
            } else if !matches!(&token, proc_macro2::TokenTree::Ident(i) if i == "__shed_rejected")
            {
                token.set_span(span);
            }
            token
        })
        .collect()
}

fn first_token_span(item: &TokenStream) -> Span {
    item.clone()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span())
}

fn rewrite(args: &Args, item: FnItem, fallback_args: Option<Vec<TokenStream>>) -> TokenStream {
    let FnItem {
        outer_attrs,
        vis,
        sig,
        body,
    } = item;
    let body = body.expect("checked above");
    let krate = args
        .krate
        .as_ref()
        .map_or_else(|| quote!(::shed), ToTokens::to_token_stream);
    let fn_name = sig.ident.to_string();
    let name = match &args.name {
        Some(name) => quote!(#name),
        None => quote!(::core::concat!(::core::module_path!(), "::", #fn_name)),
    };
    let class = args
        .class
        .as_ref()
        .map_or_else(|| quote!("critical"), ToTokens::to_token_stream);
    let max_wait = match args.max_wait {
        Some((duration, _)) => {
            let nanos = duration.as_nanos() as u64;
            quote!(::core::option::Option::Some(#krate::__private::Duration::from_nanos(#nanos)))
        }
        None => quote!(::core::option::Option::None),
    };
    let weight = args.weight.map_or(1, |(w, _)| w);
    let at = sig.ident.span();
    let location = quote_spanned!(at=> ::core::file!(), ::core::line!());

    // Refusal: the fn's own return type must carry the `Rejected`; a type
    // that cannot is reported on the return type.
    let refuse_span = match &sig.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => sig.ident.span(),
    };
    let permit = syn::Ident::new("__shed_permit", Span::mixed_site());
    let rejected = syn::Ident::new("__shed_rejected", Span::mixed_site());
    // Every token of the call carries the return type's span, so an
    // unfit return type is reported there.
    let refuse = respan(
        quote!(#krate::__private::refuse::<_>(#rejected)),
        refuse_span,
    );

    // On refusal: the fallback's answer if there is one, else the refusal.
    let on_refusal = match (&args.fallback, fallback_args) {
        (Some(fallback), Some(forwarded)) => quote! {{
            let _ = #rejected;
            #krate::__private::count_fallback(&__SHED_POLICY);
            return #fallback(#(#forwarded),*).await;
        }},
        _ => quote!(return #refuse),
    };
    let inner_attrs = &body.inner_attrs;
    let rest = &body.rest;
    let mut block = quote! {
        #(#inner_attrs)*
        static __SHED_POLICY: #krate::__private::Policy = #krate::__private::Policy::new(
            #name, #class, #max_wait, #weight, #location,
        );
        #krate::__private::inventory::submit! {
            #krate::__private::Registration(&__SHED_POLICY)
        }
        let #permit = match #krate::__private::admit(&__SHED_POLICY) {
            #krate::__private::Decision::Admitted(permit) => permit,
            #krate::__private::Decision::Refused(#rejected) => #on_refusal,
            #krate::__private::Decision::Wait(admission) => match admission.await {
                ::core::result::Result::Ok(permit) => permit,
                ::core::result::Result::Err(#rejected) => #on_refusal,
            },
        };
        #rest
    };
    // Keep the body's braces on their original span.
    let mut group =
        proc_macro2::Group::new(proc_macro2::Delimiter::Brace, std::mem::take(&mut block));
    group.set_span(body.brace.span());
    quote! {
        #(#outer_attrs)*
        #vis #sig #group
    }
}

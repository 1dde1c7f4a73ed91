//! The rewrite: the user's fn, unchanged, with an admission prelude at the
//! top of its body and a `static` policy registered in the policy table.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

use crate::args::{Args, Errors};
use crate::item::{Body, FnItem};
use crate::stacking;

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
    let below_tokio = parsed
        .body
        .as_ref()
        .is_some_and(|body| stacking::tokio_body(&body.rest).is_some());
    if parsed.sig.asyncness.is_none() && !below_tokio {
        errors.push(syn::Error::new(
            parsed.sig.fn_token.span,
            "`#[shed]` works on `async fn` only: make this fn `async`, or admit the work by hand with `shed::Limiter::acquire` \
             (if an attribute above `#[shed]`, such as a runtime's `test` or `main`, made it a plain `fn`, write `#[shed]` above that attribute)",
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
            } else if !matches!(&token, proc_macro2::TokenTree::Ident(i) if i == "__shed_rejected" || i == "__shed")
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
    // Every name the expansion introduces is `mixed_site`: no identifier of
    // the user's, in the arguments, the body or the fallback's forwarding,
    // can refer to one of them or be shadowed by one. The items live in a
    // block of their own, which the user's body cannot see into.
    let private = ident("__shed");
    let policy = ident("__SHED_POLICY");
    let here = ident("__ShedHere");
    let permit = ident("__shed_permit");
    let admission = ident("__shed_admission");
    let rejected = ident("__shed_rejected");
    let admitted = label("'__shed_admitted");
    let refused = label("'__shed_refused");
    // The crate path appears once, in a `use`: a wrong path is reported
    // once, on the path the user wrote.
    let krate = args
        .krate
        .as_ref()
        .map_or_else(|| quote!(::shed), ToTokens::to_token_stream);
    let import = quote!(use #krate::__private as #private;);

    let (name_marker, constructor, name) = match &args.name {
        Some(name) => (quote!(), quote!(new), quote!(#name)),
        // The default name is the fn's path, impl type included, which only
        // the compiler knows: the policy reads it from the type name of a
        // marker type declared here (`Orders::get` and `Users::get` in one
        // module differ). One instantiation of `type_name` per fn.
        None => (
            quote! {
                #[allow(dead_code)]
                enum #here {}
            },
            quote!(named_here),
            quote!(::core::any::type_name::<#here>),
        ),
    };
    let class = args
        .class
        .as_ref()
        .map_or_else(|| quote!("critical"), ToTokens::to_token_stream);
    let max_wait = match args.max_wait {
        Some((duration, _)) => {
            let nanos = duration.as_nanos() as u64;
            quote!(::core::option::Option::Some(#private::Duration::from_nanos(#nanos)))
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
    // Every token of the call carries the return type's span, so an
    // unfit return type is reported there.
    let refuse = respan(quote!(#private::refuse::<_>(#rejected)), refuse_span);

    // On refusal: the fallback's answer if there is one, else the refusal.
    let on_refusal = match (&args.fallback, fallback_args) {
        (Some(fallback), Some(forwarded)) => quote! {{
            let _ = #rejected;
            #private::count_fallback(&#policy);
            return #fallback(#(#forwarded),*).await;
        }},
        _ => quote!(return #refuse),
    };
    // With `tenant`, the admission is the tenant's (evaluated by reference,
    // so no argument is moved); without, the task's tenant, if any, and
    // the common case is admitted inline, its permit apart from the
    // `Decision` of the rest (see `try_admit`).
    let not_yet = ident("__shed_not_yet");
    let decision = match &args.tenant {
        Some(tenant) => quote!(#private::admit_for_tenant(&#policy, &(#tenant))),
        None => quote! {
            match #private::try_admit(&#policy, #weight) {
                ::core::result::Result::Ok(#permit) => break #admitted #permit,
                ::core::result::Result::Err(#not_yet) => #private::admit_rest(&#policy, #not_yet),
            }
        },
    };
    // The decision is matched, and let go of, before anything is awaited:
    // a value alive across an await is kept in the fn's future, and the
    // common case would then write the permit there and copy it out.
    // Matched this way, it lives in registers and the permit is written
    // once, where the body holds it. The refusal, on either way out, is
    // answered once.
    let prelude = quote! {
        let #permit = #admitted: {
            #import
            #name_marker
            static #policy: #private::Policy = #private::Policy::#constructor(
                #name, #class, #max_wait, #weight, #location,
            );
            #private::inventory::submit! {
                #private::Registration(&#policy)
            }
            let #rejected = #refused: {
                let #admission = match #decision {
                    #private::Decision::Admitted(#permit) => break #admitted #permit,
                    #private::Decision::Refused(#rejected) => break #refused #rejected,
                    #private::Decision::Wait(#admission) => #admission,
                };
                match #admission.await {
                    ::core::result::Result::Ok(#permit) => break #admitted #permit,
                    ::core::result::Result::Err(#rejected) => #rejected,
                }
            };
            #on_refusal
        };
    };
    let group = if sig.asyncness.is_some() {
        guard(&body, &prelude)
    } else {
        // Below `#[tokio::test]`: the user's body is tokio's `async` block.
        let (index, block) = stacking::tokio_body(&body.rest).expect("checked above");
        let inner: Body = syn::parse2(block.to_token_stream()).expect("a block parses as a body");
        let rest = stacking::replace(&body.rest, index, guard(&inner, &prelude));
        let inner_attrs = &body.inner_attrs;
        let mut group = proc_macro2::Group::new(
            proc_macro2::Delimiter::Brace,
            quote!(#(#inner_attrs)* #rest),
        );
        group.set_span(body.brace.span());
        group
    };
    quote! {
        #(#outer_attrs)*
        #vis #sig #group
    }
}

/// `body` with the admission `prelude` first, after its inner attributes,
/// its braces on their original span.
fn guard(body: &Body, prelude: &TokenStream) -> proc_macro2::Group {
    let inner_attrs = &body.inner_attrs;
    let rest = &body.rest;
    let mut group = proc_macro2::Group::new(
        proc_macro2::Delimiter::Brace,
        quote!(#(#inner_attrs)* #prelude #rest),
    );
    group.set_span(body.brace.span());
    group
}

/// A name the expansion introduces, invisible to the user's code.
fn ident(name: &str) -> syn::Ident {
    syn::Ident::new(name, Span::mixed_site())
}

/// A block label the expansion introduces, invisible to the user's code.
fn label(name: &str) -> syn::Lifetime {
    syn::Lifetime::new(name, Span::mixed_site())
}

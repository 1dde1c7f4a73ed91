//! API keys to tenants and plans: an authentication middleware checks the
//! key and records its owner in the request; shed's layer reads the owner
//! from there (never from a header the client chooses), so a client that
//! floods with one key waits behind its own calls while other keys keep
//! their service, and `free` keys yield to `premium` ones.
//!
//! Keys come from `API_KEYS` (`key=tenant:plan,...`); without it requests
//! carry no key and are one anonymous tenant, as before.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The authenticated caller of a request: who owns its API key.
#[derive(Debug, Clone)]
pub struct KeyOwner {
    pub tenant: Arc<str>,
    pub plan: Arc<str>,
}

static KEYS: OnceLock<HashMap<String, KeyOwner>> = OnceLock::new();

/// The key table: from `API_KEYS` unless [`set_keys`] came first.
fn keys() -> &'static HashMap<String, KeyOwner> {
    KEYS.get_or_init(|| parse(&std::env::var("API_KEYS").unwrap_or_default()))
}

/// Sets the key table (`key=tenant:plan,...`, for tests); false if it was
/// already set.
pub fn set_keys(spec: &str) -> bool {
    KEYS.set(parse(spec)).is_ok()
}

/// `key=tenant:plan,...`
fn parse(spec: &str) -> HashMap<String, KeyOwner> {
    spec.split(',')
        .filter_map(|entry| {
            let (key, owner) = entry.trim().split_once('=')?;
            let (tenant, plan) = owner.split_once(':').unwrap_or((owner, "free"));
            Some((
                key.to_string(),
                KeyOwner {
                    tenant: tenant.into(),
                    plan: plan.into(),
                },
            ))
        })
        .collect()
}

/// Checks `x-api-key`: a known key's owner goes into the request's
/// extensions; an unknown key is refused (401); no key is anonymous.
pub async fn authenticate(mut request: Request, next: Next) -> Response {
    if let Some(key) = request.headers().get("x-api-key") {
        match key.to_str().ok().and_then(|k| keys().get(k)) {
            Some(owner) => {
                request.extensions_mut().insert(owner.clone());
            }
            None => return (StatusCode::UNAUTHORIZED, "unknown API key").into_response(),
        }
    }
    next.run(request).await
}

/// shed's tenant of a request: the authenticated key's owner and plan.
pub fn tenant_of(request: &axum::http::request::Parts) -> Option<shed::Tenant> {
    let owner = request.extensions.get::<KeyOwner>()?;
    Some(shed::Tenant::new(Arc::clone(&owner.tenant)).plan(Arc::clone(&owner.plan)))
}

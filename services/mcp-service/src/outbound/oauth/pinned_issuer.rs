//! The authorization server metadata of an issuer the operator pinned,
//! read from the issuer's own well-known documents only and accepted only
//! when it names that very issuer (RFC 8414 section 3.3). Whatever the MCP
//! server's metadata says about its authorization server, a credential's
//! destination comes from here: a server cannot serve a document of its own
//! that claims the pinned issuer and names its own token endpoint.
//!
//! The documents tried, in order (RFC 8414 section 3.1, then the OpenID
//! Connect forms the MCP authorization specification also names): the
//! OAuth document with the well-known segment inserted before the issuer's
//! path, the OpenID Connect one inserted the same way, and the OpenID
//! Connect one appended to the issuer's path. Redirects are not followed.

use rmcp::transport::auth::{AuthorizationMetadata, OAuthHttpRedirectPolicy};
use url::Url;

use crate::outbound::oauth::{client::summary, http::PolicyOAuthHttp};

const OAUTH_WELL_KNOWN: &str = "/.well-known/oauth-authorization-server";
const OIDC_WELL_KNOWN: &str = "/.well-known/openid-configuration";

/// Whether `received` is the issuer identifier `pinned`: the same text,
/// up to the trailing slash a URL parser adds to an empty path.
pub fn is_pinned_issuer(received: &str, pinned: &str) -> bool {
    let without_root_slash = |issuer: &str| -> String {
        match Url::parse(issuer) {
            Ok(url) if url.path() == "/" && issuer.ends_with('/') => {
                issuer.trim_end_matches('/').to_owned()
            }
            _ => issuer.to_owned(),
        }
    };
    without_root_slash(received) == without_root_slash(pinned)
}

/// The well-known documents of `issuer`, in the order they are tried.
fn candidates(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let at = |path: String| {
        let mut url = issuer.clone();
        url.set_query(None);
        url.set_fragment(None);
        url.set_path(&path);
        url
    };
    let mut urls = vec![
        at(format!("{OAUTH_WELL_KNOWN}{path}")),
        at(format!("{OIDC_WELL_KNOWN}{path}")),
    ];
    let appended = at(format!("{path}{OIDC_WELL_KNOWN}"));
    if !urls.contains(&appended) {
        urls.push(appended);
    }
    urls
}

/// The metadata `pinned` publishes about itself: its own document naming
/// exactly `pinned` as issuer, or why not (every reason says that no
/// credential was sent).
pub async fn pinned_metadata(
    http: &PolicyOAuthHttp,
    pinned: &str,
) -> Result<AuthorizationMetadata, String> {
    let issuer = Url::parse(pinned)
        .map_err(|_| "the configured issuer is not a URL; no credential was sent".to_owned())?;
    for url in candidates(&issuer) {
        let request = http::Request::get(url.as_str())
            .header(http::header::ACCEPT, "application/json")
            .body(Vec::new())
            .map_err(|e| format!("the issuer's metadata request is invalid: {e}"))?;
        let response = http
            .execute_bounded(request, OAuthHttpRedirectPolicy::Stop, None)
            .await
            .map_err(|e| {
                format!(
                    "the configured issuer's metadata could not be read ({}); no credential was sent",
                    summary(&e.to_string())
                )
            })?;
        if response.status() != http::StatusCode::OK {
            continue;
        }
        let Ok(metadata) = serde_json::from_slice::<AuthorizationMetadata>(response.body()) else {
            continue;
        };
        return match metadata.issuer.as_deref() {
            Some(named) if is_pinned_issuer(named, pinned) => Ok(metadata),
            _ => Err(
                "the configured issuer's metadata names another issuer (RFC 8414 section 3.3); no credential was sent"
                    .to_owned(),
            ),
        };
    }
    Err(
        "the configured issuer publishes no authorization server metadata at its well-known addresses; no credential was sent"
            .to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(issuer: &str) -> Vec<String> {
        candidates(&Url::parse(issuer).expect("a URL"))
            .into_iter()
            .map(String::from)
            .collect()
    }

    #[test]
    fn a_root_issuer_has_its_oauth_then_its_openid_document() {
        assert_eq!(
            urls("https://as.example"),
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn an_issuer_with_a_path_has_the_well_known_segment_inserted_then_appended() {
        assert_eq!(
            urls("https://as.example/tenant/1"),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant/1",
                "https://as.example/.well-known/openid-configuration/tenant/1",
                "https://as.example/tenant/1/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn issuers_match_exactly_but_for_a_root_slash() {
        assert!(is_pinned_issuer(
            "https://as.example/",
            "https://as.example"
        ));
        assert!(is_pinned_issuer("https://as.example", "https://as.example"));
        assert!(!is_pinned_issuer(
            "https://as.example/t/",
            "https://as.example/t"
        ));
        assert!(!is_pinned_issuer(
            "https://AS.example",
            "https://as.example"
        ));
        assert!(!is_pinned_issuer(
            "https://as.example.evil",
            "https://as.example"
        ));
        assert!(!is_pinned_issuer("http://as.example", "https://as.example"));
    }
}

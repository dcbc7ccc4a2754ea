//! Which URLs OAuth may use: every endpoint (metadata, registration,
//! authorization, token), every redirect URI and every issuer is `https`;
//! plain `http` only on a loopback address the operator allows outbound
//! (`SWITCHBOARD_OUTBOUND_ALLOW`, a development setup). The scheme is an
//! allowlist: an authorization URL handed to users can never be
//! `javascript:`, `data:` or anything a browser would run.

use std::net::{IpAddr, Ipv4Addr};

use url::{Host, Url};

use super::address_policy::AddressPolicy;

/// Why an OAuth URL is refused. Names the problem, never the URL (its
/// query may carry a `state` or a code).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum OAuthUrlError {
    /// Not a URL.
    #[error("is not a valid URL")]
    Invalid,
    /// A scheme other than `https` (and `http` on loopback).
    #[error("must be an https URL (scheme {0:?} is not allowed)")]
    Scheme(String),
    /// Plain `http` off loopback, or on a loopback address the operator
    /// does not allow.
    #[error(
        "must be an https URL: plain http is allowed only on a loopback address the operator allows"
    )]
    PlainHttp,
    /// The address policy refuses the host.
    #[error("{0}")]
    Refused(String),
}

/// The loopback address an `http` URL names, if it names one.
fn loopback(url: &Url) -> Option<IpAddr> {
    match url.host()? {
        Host::Ipv4(ip) if ip.is_loopback() => Some(IpAddr::V4(ip)),
        Host::Ipv6(ip) if ip.is_loopback() => Some(IpAddr::V6(ip)),
        Host::Domain(name) if name.eq_ignore_ascii_case("localhost") => {
            Some(IpAddr::V4(Ipv4Addr::LOCALHOST))
        }
        _ => None,
    }
}

/// `url` parsed, when OAuth may use it under `policy`: `https` (whose
/// IP-literal host the policy allows), or `http` on a loopback address the
/// policy allow-lists.
pub fn check_oauth_url(policy: &AddressPolicy, url: &str) -> Result<Url, OAuthUrlError> {
    let parsed = Url::parse(url).map_err(|_| OAuthUrlError::Invalid)?;
    match parsed.scheme() {
        "https" => {
            policy
                .check_url(url)
                .map_err(|e| OAuthUrlError::Refused(e.to_string()))?;
            Ok(parsed)
        }
        "http" => {
            let ip = loopback(&parsed).ok_or(OAuthUrlError::PlainHttp)?;
            policy
                .check_ip(parsed.host_str().unwrap_or_default(), ip)
                .map_err(|e| OAuthUrlError::Refused(e.to_string()))?;
            Ok(parsed)
        }
        other => Err(OAuthUrlError::Scheme(other.chars().take(32).collect())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback_allowed() -> AddressPolicy {
        AddressPolicy::parse_allow_list("127.0.0.0/8,::1/128").expect("a list")
    }

    #[test]
    fn https_is_allowed_and_every_other_scheme_refused() {
        let policy = AddressPolicy::default();
        assert!(check_oauth_url(&policy, "https://auth.example/authorize").is_ok());
        for url in [
            "javascript:alert(document.domain)//?state=x",
            "data:text/html,<script>x</script>",
            "file:///etc/passwd",
            "ftp://auth.example/",
            "vbscript:msgbox",
        ] {
            assert!(
                matches!(
                    check_oauth_url(&loopback_allowed(), url),
                    Err(OAuthUrlError::Scheme(_) | OAuthUrlError::Invalid)
                ),
                "{url}"
            );
        }
    }

    #[test]
    fn plain_http_needs_loopback_and_the_operator_allowing_it() {
        let url = "http://127.0.0.1:8080/token";
        assert!(matches!(
            check_oauth_url(&AddressPolicy::default(), url),
            Err(OAuthUrlError::Refused(_))
        ));
        assert!(check_oauth_url(&loopback_allowed(), url).is_ok());
        assert!(check_oauth_url(&loopback_allowed(), "http://localhost:9/cb").is_ok());
        assert!(check_oauth_url(&loopback_allowed(), "http://[::1]:9/cb").is_ok());
        for url in [
            "http://auth.example/token",
            "http://10.0.0.1/token",
            "http://localhost.auth.example/token",
            "http://127.0.0.1.nip.io/token",
        ] {
            assert_eq!(
                check_oauth_url(&loopback_allowed(), url),
                Err(OAuthUrlError::PlainHttp),
                "{url}"
            );
        }
    }

    #[test]
    fn an_https_ip_literal_the_policy_refuses_is_refused() {
        assert!(matches!(
            check_oauth_url(&AddressPolicy::default(), "https://169.254.169.254/token"),
            Err(OAuthUrlError::Refused(_))
        ));
    }
}

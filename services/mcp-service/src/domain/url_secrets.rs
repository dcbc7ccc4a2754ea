//! Credentials do not belong in URLs. A URL is configuration: it is stored in
//! plaintext, returned to every member of the organization and written to
//! logs, while secrets are sealed and write-only. So a URL carrying a password
//! (`https://user:secret@host/`) or a token in its query is refused, and the
//! admin is pointed at the secret fields (bearer token, custom header) made
//! for it.
//!
//! Which query parameters carry secrets cannot be known for sure; the list
//! below covers the names in common use (OAuth, API keys, signed URLs of the
//! large clouds). Long, unambiguous words are matched anywhere in the name
//! (`x_api_key`, `githubToken`, `client_secret`); short ones only as the
//! whole name, since as parts they occur in harmless names (`keyword`,
//! `author`, `signal`, `passage`). Names are compared in lowercase with `-`,
//! `_` and `.` removed, so `Access-Token`, `access_token` and `accessToken`
//! are one name.

use url::Url;

/// Words that mark a secret wherever they appear in a parameter name.
const SECRET_WORDS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "signature",
    "credential",
    "bearer",
    "sessionid",
    "privatekey",
];

/// Names that mark a secret only as the whole parameter name.
const SECRET_NAMES: &[&str] = &[
    "key",
    "auth",
    "authorization",
    "sig",
    "pass",
    "pwd",
    "jwt",
    "session",
    "sid",
    "code",
    "assertion",
    // AWS SigV4 and Google signed URLs name their signing material so.
    "xamzcredential",
    "xamzsignature",
    "xamzsecuritytoken",
    "xgoogcredential",
    "xgoogsignature",
];

/// Why a URL is refused: a sentence for the admin that names the part of
/// the URL at fault, never its value.
pub fn credentials_in(url: &Url) -> Option<String> {
    if !url.username().is_empty() || url.password().is_some() {
        return Some(
            "must not carry a user name or password (user:secret@host): URLs are stored in \
             plaintext and shown to every member; put credentials in the bearer token or \
             custom header fields, which are sealed"
                .to_owned(),
        );
    }
    // A fragment is never sent, but it is stored and shown like the rest.
    let fragment = url::form_urlencoded::parse(url.fragment().unwrap_or_default().as_bytes());
    let secret = url
        .query_pairs()
        .chain(fragment)
        .map(|(name, _)| name)
        .find(|name| is_secret_name(name))?;
    Some(format!(
        "must not carry credentials in its query (parameter `{secret}`): URLs are stored in \
         plaintext and shown to every member; put credentials in the bearer token or custom \
         header fields, which are sealed"
    ))
}

/// What a member of the organization is shown of a URL an admin entered: its
/// origin (`https://host:port`). A path (`/v1/<key>/mcp`) or a query name no
/// list knows (`subscription-key`, `x-functions-key`) can hold a credential,
/// and names cannot be checked into safety; admins, who entered the URL, see
/// all of it. A URL that does not parse shows as empty.
pub fn shown_to_members(url: &str) -> String {
    match Url::parse(url).map(|url| url.origin()) {
        Ok(origin @ url::Origin::Tuple(..)) => origin.ascii_serialization(),
        _ => String::new(),
    }
}

/// Whether a query parameter name is one that carries credentials.
pub fn is_secret_name(name: &str) -> bool {
    let normalized: String = name
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '.'))
        .flat_map(char::to_lowercase)
        .collect();
    SECRET_NAMES.contains(&normalized.as_str())
        || SECRET_WORDS.iter().any(|word| normalized.contains(word))
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    fn refusal(url: &str) -> Option<String> {
        credentials_in(&Url::parse(url).expect("a URL"))
    }

    #[test]
    fn userinfo_is_refused_without_echoing_it() {
        for url in [
            "https://user:hunter2@mcp.example.com/mcp",
            "https://user@mcp.example.com/mcp",
            "https://:hunter2@mcp.example.com/mcp",
        ] {
            let why = refusal(url).expect("refused");
            assert!(why.contains("user name or password"), "{why}");
            assert!(!why.contains("hunter2"), "{why}");
        }
    }

    #[test]
    fn secret_query_parameters_are_refused_by_name() {
        for name in [
            "token",
            "access_token",
            "Access-Token",
            "accessToken",
            "id_token",
            "api_key",
            "apikey",
            "X-API-Key",
            "key",
            "secret",
            "client_secret",
            "password",
            "auth",
            "sig",
            "signature",
            "X-Amz-Signature",
            "X-Amz-Credential",
            "code",
            "session_id",
        ] {
            let why = refusal(&format!("https://mcp.example.com/mcp?a=1&{name}=hunter2"))
                .unwrap_or_else(|| panic!("{name} refused"));
            assert!(why.contains(name), "{why}");
            assert!(!why.contains("hunter2"), "{why}");
        }
    }

    #[test]
    fn secrets_in_the_fragment_are_refused_too() {
        assert!(refusal("https://mcp.example.com/mcp#access_token=hunter2").is_some());
    }

    #[test]
    fn members_see_only_the_origin() {
        for (url, shown) in [
            (
                "https://mcp.example.com/v1/sk-hunter2/mcp?subscription-key=hunter2#x",
                "https://mcp.example.com",
            ),
            (
                "http://127.0.0.1:8080/api?x-functions-key=hunter2",
                "http://127.0.0.1:8080",
            ),
            ("https://mcp.example.com:443/mcp", "https://mcp.example.com"),
            ("not a url", ""),
            ("data:text/plain,hunter2", ""),
        ] {
            assert_eq!(shown_to_members(url), shown, "{url}");
        }
    }

    #[test]
    fn ordinary_urls_pass() {
        for url in [
            "https://mcp.example.com/mcp",
            "https://mcp.example.com/mcp?region=eu&keyword=x&author=me&signal=1",
            "http://127.0.0.1:8080/mcp?version=2",
            "https://mcp.example.com/token/mcp",
        ] {
            assert_eq!(refusal(url), None, "{url}");
        }
    }
}

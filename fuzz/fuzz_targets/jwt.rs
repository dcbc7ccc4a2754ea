//! JWT parsing and verification (`switchboard-auth`), as every gRPC call's
//! bearer token goes through it.
//!
//! Input (structured with `arbitrary`): either a raw token text, or a header
//! and claims that are encoded and signed with the verifier's own secret (so
//! that the fuzzer gets past the signature to the claims) or with another
//! one, then possibly cut or altered.
//!
//! Checked on every input: no panic; a token is accepted only when its
//! header names HS256, its signature is the verifier's, it names an
//! organization and a user, and it has not expired (issuer and audience too,
//! when the verifier requires them); a well-formed, correctly signed,
//! unexpired token is accepted.

#![no_main]

use std::{
    sync::LazyLock,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use arbitrary::Arbitrary;
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, EncodingKey};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};
use switchboard_auth::{AuthError, Authenticator, VerifierConfig};

const SECRET: &str = "fuzz-secret-of-sufficient-length";
const OTHER_SECRET: &str = "another-secret-of-enough-length!";
const ISSUER: &str = "https://issuer.example";
const AUDIENCE: &str = "switchboard";
const LEEWAY_SECS: u64 = 30;

static PLAIN: LazyLock<Authenticator> = LazyLock::new(|| {
    Authenticator::new(&VerifierConfig::hs256(SECRET))
        .expect("the verifier builds (a set-up invariant)")
});

static STRICT: LazyLock<Authenticator> = LazyLock::new(|| {
    let mut config = VerifierConfig::hs256(SECRET);
    config.issuer = Some(ISSUER.to_owned());
    config.audience = Some(AUDIENCE.to_owned());
    config.leeway = Duration::from_secs(LEEWAY_SECS);
    Authenticator::new(&config).expect("the verifier builds (a set-up invariant)")
});

#[derive(Debug, Arbitrary)]
enum Input {
    Raw(String),
    Built(Built),
}

#[derive(Debug, Arbitrary)]
struct Built {
    alg: Alg,
    extra_header: Vec<(String, Json)>,
    sub: Option<Json>,
    org: Option<Json>,
    roles: Option<Json>,
    /// Seconds from now.
    exp: Option<i32>,
    iss: Option<Issuer>,
    aud: Option<Audience>,
    extra_claims: Vec<(String, Json)>,
    signer: Signer,
    tamper: Tamper,
}

#[derive(Debug, Arbitrary)]
enum Alg {
    Hs256,
    Named(Named),
    Other(String),
    Missing,
}

#[derive(Debug, Clone, Copy, Arbitrary)]
enum Named {
    None,
    NoneUpper,
    Hs256Lower,
    Hs384,
    Hs512,
    Rs256,
    Es256,
    EdDsa,
}

#[derive(Debug, Arbitrary)]
enum Issuer {
    Expected,
    Other(String),
    List,
}

#[derive(Debug, Arbitrary)]
enum Audience {
    Expected,
    Other(String),
    ListWithExpected,
}

#[derive(Debug, Clone, Copy, Arbitrary, PartialEq, Eq)]
enum Signer {
    Verifier,
    Other,
    Unsigned,
}

#[derive(Debug, Arbitrary)]
enum Tamper {
    None,
    Truncate(u16),
    FlipByte(u16),
    Append(String),
}

/// Free-form JSON, shallow enough to stay fast.
#[derive(Debug, Arbitrary)]
enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    List(Vec<Leaf>),
    Object(Vec<(String, Leaf)>),
}

#[derive(Debug, Arbitrary)]
enum Leaf {
    Null,
    Int(i64),
    Text(String),
}

impl Leaf {
    fn value(&self) -> Value {
        match self {
            Self::Null => Value::Null,
            Self::Int(n) => json!(n),
            Self::Text(s) => json!(s),
        }
    }
}

impl Json {
    fn value(&self) -> Value {
        match self {
            Self::Null => Value::Null,
            Self::Bool(b) => json!(b),
            Self::Int(n) => json!(n),
            Self::Float(f) => json!(f),
            Self::Text(s) => json!(s),
            Self::List(items) => Value::Array(items.iter().map(Leaf::value).collect()),
            Self::Object(fields) => {
                Value::Object(fields.iter().map(|(k, v)| (k.clone(), v.value())).collect())
            }
        }
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fuzz_target!(|input: Input| {
    match input {
        Input::Raw(token) => {
            for verifier in [&*PLAIN, &*STRICT] {
                if let Ok(principal) = verifier.verify(&token) {
                    panic!("an unsigned text was accepted: {token:?} as {principal:?}");
                }
            }
        }
        Input::Built(built) => check_built(&built),
    }
});

fn header(built: &Built) -> Map<String, Value> {
    let mut header = Map::new();
    for (key, value) in &built.extra_header {
        header.insert(key.clone(), value.value());
    }
    header.insert("typ".into(), json!("JWT"));
    let alg = match &built.alg {
        Alg::Hs256 => Some("HS256".to_owned()),
        Alg::Named(named) => Some(
            match named {
                Named::None => "none",
                Named::NoneUpper => "NONE",
                Named::Hs256Lower => "hs256",
                Named::Hs384 => "HS384",
                Named::Hs512 => "HS512",
                Named::Rs256 => "RS256",
                Named::Es256 => "ES256",
                Named::EdDsa => "EdDSA",
            }
            .to_owned(),
        ),
        Alg::Other(other) => Some(other.clone()),
        Alg::Missing => None,
    };
    match alg {
        Some(alg) => header.insert("alg".into(), json!(alg)),
        None => header.remove("alg"),
    };
    header
}

fn claims(built: &Built, now: u64) -> Map<String, Value> {
    let mut claims = Map::new();
    for (key, value) in &built.extra_claims {
        claims.insert(key.clone(), value.value());
    }
    let mut set = |key: &str, value: Option<Value>| match value {
        Some(value) => claims.insert(key.to_owned(), value),
        None => claims.remove(key),
    };
    set("sub", built.sub.as_ref().map(Json::value));
    set("org", built.org.as_ref().map(Json::value));
    set("roles", built.roles.as_ref().map(Json::value));
    set(
        "exp",
        built
            .exp
            .map(|offset| json!(now.saturating_add_signed(i64::from(offset)))),
    );
    set(
        "iss",
        built.iss.as_ref().map(|iss| match iss {
            Issuer::Expected => json!(ISSUER),
            Issuer::Other(other) => json!(other),
            Issuer::List => json!([ISSUER]),
        }),
    );
    set(
        "aud",
        built.aud.as_ref().map(|aud| match aud {
            Audience::Expected => json!(AUDIENCE),
            Audience::Other(other) => json!(other),
            Audience::ListWithExpected => json!([AUDIENCE, "other"]),
        }),
    );
    claims
}

/// The signed token, and the same after the input's alteration.
fn encode(
    built: &Built,
    header: &Map<String, Value>,
    claims: &Map<String, Value>,
) -> (String, String) {
    let part = |map: &Map<String, Value>| {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(map).expect("a JSON map serialises"))
    };
    let message = format!("{}.{}", part(header), part(claims));
    let signature = match built.signer {
        Signer::Verifier => sign(&message, SECRET),
        Signer::Other => sign(&message, OTHER_SECRET),
        Signer::Unsigned => String::new(),
    };
    let signed = format!("{message}.{signature}");
    let mut token = signed.clone();
    match &built.tamper {
        Tamper::None => {}
        Tamper::Truncate(at) => token.truncate(usize::from(*at) % (token.len() + 1)),
        Tamper::FlipByte(at) => {
            let mut bytes = token.into_bytes();
            let at = usize::from(*at) % bytes.len();
            // Stay in base64url so that the token still splits and decodes.
            bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
            token = String::from_utf8(bytes).expect("ASCII stays UTF-8");
        }
        Tamper::Append(tail) => token.push_str(tail),
    }
    (signed, token)
}

fn sign(message: &str, secret: &str) -> String {
    jsonwebtoken::crypto::sign(
        message.as_bytes(),
        &EncodingKey::from_secret(secret.as_bytes()),
        Algorithm::HS256,
    )
    .expect("HMAC signing cannot fail")
}

fn check_built(built: &Built) {
    let now = now();
    let header = header(built);
    let claims = claims(built, now);
    let (signed, token) = encode(built, &header, &claims);
    let untampered = matches!(built.tamper, Tamper::None);
    // Claims that deserialise into the service's claim types.
    let typed = matches!(&built.sub, Some(Json::Text(s)) if !s.is_empty())
        && matches!(&built.org, Some(Json::Text(s)) if !s.is_empty())
        && match &built.roles {
            None => true,
            Some(Json::List(roles)) => roles.iter().all(|r| matches!(r, Leaf::Text(_))),
            Some(_) => false,
        }
        && !matches!(built.iss, Some(Issuer::List))
        && !matches!(built.aud, Some(Audience::ListWithExpected));

    for (verifier, strict) in [(&*PLAIN, false), (&*STRICT, true)] {
        let verdict = verifier.verify(&token);
        if let Ok(principal) = &verdict {
            assert_eq!(header.get("alg"), Some(&json!("HS256")), "{token}");
            assert_eq!(built.signer, Signer::Verifier, "{token}");
            assert_eq!(token, signed, "an altered token was accepted");
            assert!(!principal.org_id.is_empty() && !principal.user_id.is_empty());
            assert_eq!(claims.get("org"), Some(&json!(principal.org_id)));
            assert_eq!(claims.get("sub"), Some(&json!(principal.user_id)));
            let exp = built.exp.expect("accepted tokens carry exp");
            assert!(
                i64::from(exp) + LEEWAY_SECS as i64 >= -5,
                "expired: {token}"
            );
            if strict {
                assert!(matches!(built.iss, Some(Issuer::Expected | Issuer::List)));
                assert!(matches!(
                    built.aud,
                    Some(Audience::Expected | Audience::ListWithExpected)
                ));
            }
        }
        // Completeness: a plain, correct token passes.
        let well_formed = untampered
            && built.signer == Signer::Verifier
            && matches!(built.alg, Alg::Hs256)
            && built.extra_header.is_empty()
            && built.extra_claims.is_empty()
            && typed
            && built.exp.is_some_and(|offset| offset > 5)
            && (!strict
                || matches!(built.iss, Some(Issuer::Expected))
                    && matches!(built.aud, Some(Audience::Expected)));
        if well_formed {
            assert!(verdict.is_ok(), "{token}: {verdict:?}");
        }
        if let Err(error) = verdict {
            assert!(
                matches!(error, AuthError::Invalid | AuthError::Expired),
                "{error:?}"
            );
        }
    }
}

//! DPoP (RFC 9449): proof-of-possession for OAuth tokens, used where the
//! authorization server asks for it (its metadata lists ES256 among
//! `dpop_signing_alg_values_supported`).
//!
//! A DPoP-bound token is useless without the private key it is bound to,
//! so the key lives exactly where and as long as the tokens bound to it:
//! a user's grant of the authorization code flow is sealed in the database
//! and shared by every replica, so its key is sealed in the same record
//! (one key per grant, made when the flow starts). Nothing else holds it;
//! it is never logged (its `Debug` shows the public key's thumbprint only).
//!
//! Every request carrying a DPoP token carries a fresh proof: a JWT signed
//! with the key, naming the request's method (`htm`) and URL without query
//! or fragment (`htu`), when it was made (`iat`), a unique `jti`, the hash
//! of the token (`ath`, towards the MCP server) and the server's nonce when
//! it gave one.

use std::{
    sync::{Arc, Mutex, PoisonError},
    time::{SystemTime, UNIX_EPOCH},
};

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use ring::{
    rand::SystemRandom,
    signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _},
};
use rmcp::transport::auth::AuthorizationMetadata;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// The one signing algorithm mcp-service makes DPoP proofs with.
pub const ALGORITHM: &str = "ES256";
/// The request header a proof travels in.
pub const DPOP_HEADER: &str = "dpop";
/// The response header a server's nonce travels in.
pub const NONCE_HEADER: &str = "dpop-nonce";
/// The OAuth error (token endpoint) and `WWW-Authenticate` error (MCP
/// server) asking for a proof with the server's nonce.
pub const USE_NONCE: &str = "use_dpop_nonce";
/// The longest nonce kept: a server's nonce is an opaque string, and one
/// past this is refused rather than signed into every proof.
const MAX_NONCE_BYTES: usize = 1024;

/// Why a proof could not be made.
#[derive(Debug, thiserror::Error)]
pub enum DpopError {
    /// The key could not be made or read.
    #[error("the DPoP key is unusable")]
    Key,
    /// Signing failed.
    #[error("the DPoP proof could not be signed")]
    Sign,
}

/// An ES256 key pair that DPoP proofs are signed with.
#[derive(Clone)]
pub struct DpopKey {
    /// The PKCS#8 document (private and public key): what is sealed.
    pkcs8: Arc<[u8]>,
    pair: Arc<EcdsaKeyPair>,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopKey")
            .field("thumbprint", &self.thumbprint())
            .finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A new key pair from the system's random source.
    pub fn generate() -> Result<Self, DpopError> {
        let rng = SystemRandom::new();
        let document = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| DpopError::Key)?;
        Self::from_pkcs8(document.as_ref())
    }

    /// The key pair of a PKCS#8 document.
    fn from_pkcs8(pkcs8: &[u8]) -> Result<Self, DpopError> {
        let rng = SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &rng)
            .map_err(|_| DpopError::Key)?;
        Ok(Self {
            pkcs8: pkcs8.into(),
            pair: Arc::new(pair),
        })
    }

    /// The public key as a JWK (RFC 7517), members in the order RFC 7638
    /// hashes them.
    pub fn public_jwk(&self) -> Value {
        // An uncompressed point: 0x04, then x and y of 32 bytes each.
        let point = self.pair.public_key().as_ref();
        let (x, y) = point
            .get(1..)
            .map(|xy| xy.split_at(xy.len() / 2))
            .unwrap_or_default();
        json!({
            "crv": "P-256",
            "kty": "EC",
            "x": URL_SAFE_NO_PAD.encode(x),
            "y": URL_SAFE_NO_PAD.encode(y),
        })
    }

    /// The JWK thumbprint (RFC 7638) a bound token names in `cnf.jkt`.
    pub fn thumbprint(&self) -> String {
        let jwk = self.public_jwk();
        // The required members only, sorted (as written above, whether or
        // not maps keep insertion order), without whitespace (RFC 7638).
        URL_SAFE_NO_PAD.encode(Sha256::digest(jwk.to_string().as_bytes()))
    }

    /// A fresh proof for a `method` request to `url`, with the server's
    /// `nonce` and, towards a resource server, the hash of `access_token`.
    pub fn proof(
        &self,
        method: &str,
        url: &str,
        nonce: Option<&str>,
        access_token: Option<&str>,
    ) -> Result<String, DpopError> {
        let header = json!({"typ": "dpop+jwt", "alg": ALGORITHM, "jwk": self.public_jwk()});
        let mut claims = json!({
            "jti": uuid::Uuid::now_v7().to_string(),
            "htm": method,
            "htu": htu(url),
            "iat": SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs(),
        });
        if let Some(nonce) = nonce {
            claims["nonce"] = Value::from(nonce);
        }
        if let Some(token) = access_token {
            claims["ath"] = Value::from(URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())));
        }
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&SystemRandom::new(), signing_input.as_bytes())
            .map_err(|_| DpopError::Sign)?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        ))
    }
}

impl Serialize for DpopKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Only ever written into a sealed record.
        serializer.serialize_str(&URL_SAFE_NO_PAD.encode(&self.pkcs8))
    }
}

impl<'de> Deserialize<'de> for DpopKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        let bytes = URL_SAFE_NO_PAD
            .decode(text)
            .map_err(serde::de::Error::custom)?;
        Self::from_pkcs8(&bytes).map_err(serde::de::Error::custom)
    }
}

/// `url` as a proof names it: without query or fragment (RFC 9449 section
/// 4.2).
pub fn htu(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => url.split(['?', '#']).next().unwrap_or_default().to_owned(),
    }
}

/// Whether the authorization server of `metadata` binds tokens with DPoP
/// and accepts ES256 proofs.
pub fn wanted_by(metadata: &AuthorizationMetadata) -> bool {
    metadata
        .additional_fields
        .get("dpop_signing_alg_values_supported")
        .and_then(Value::as_array)
        .is_some_and(|algs| algs.iter().any(|alg| alg.as_str() == Some(ALGORITHM)))
}

/// The last nonce a server gave, shared by the requests that go to it.
#[derive(Debug, Clone, Default)]
pub struct Nonce(Arc<Mutex<Option<String>>>);

impl Nonce {
    /// The nonce to sign into the next proof.
    pub fn get(&self) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Keeps the nonce a response's `DPoP-Nonce` header gives, if any and
    /// within the bound; whether one was kept.
    pub fn learn(&self, headers: &http::HeaderMap) -> bool {
        let Some(nonce) = headers
            .get(NONCE_HEADER)
            .and_then(|value| value.to_str().ok())
            .filter(|nonce| !nonce.is_empty() && nonce.len() <= MAX_NONCE_BYTES)
        else {
            return false;
        };
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(nonce.to_owned());
        true
    }
}

#[cfg(test)]
mod tests {
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    use super::*;

    fn part(jwt: &str, index: usize) -> Value {
        let text = jwt.split('.').nth(index).expect("a part");
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(text).expect("base64url")).expect("json")
    }

    #[test]
    fn a_proof_is_signed_by_the_key_it_names_and_binds_method_url_nonce_and_token() {
        let key = DpopKey::generate().expect("a key");
        let proof = key
            .proof(
                "POST",
                "https://mcp.example/mcp?x=1#f",
                Some("n-1"),
                Some("tok"),
            )
            .expect("a proof");
        let header = part(&proof, 0);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none(), "no private part");
        let claims = part(&proof, 1);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(claims["nonce"], "n-1");
        assert_eq!(
            claims["ath"],
            URL_SAFE_NO_PAD.encode(Sha256::digest(b"tok"))
        );
        let (input, signature) = proof.rsplit_once('.').expect("three parts");
        let public = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key.pair.public_key());
        public
            .verify(
                input.as_bytes(),
                &URL_SAFE_NO_PAD.decode(signature).expect("base64url"),
            )
            .expect("the signature verifies");
        let again = key.proof("POST", "https://mcp.example/mcp", None, None);
        assert_ne!(part(&again.expect("a proof"), 1)["jti"], claims["jti"]);
    }

    #[test]
    fn a_key_survives_sealing_as_the_same_key() {
        let key = DpopKey::generate().expect("a key");
        let text = serde_json::to_string(&key).expect("serialized");
        let back: DpopKey = serde_json::from_str(&text).expect("read back");
        assert_eq!(back.thumbprint(), key.thumbprint());
        assert!(!format!("{key:?}").contains(text.trim_matches('"')));
    }

    #[test]
    fn a_nonce_past_the_bound_is_not_kept() {
        let nonce = Nonce::default();
        let mut headers = http::HeaderMap::new();
        headers.insert(
            NONCE_HEADER,
            "x".repeat(MAX_NONCE_BYTES + 1).parse().expect("a value"),
        );
        assert!(!nonce.learn(&headers));
        headers.insert(NONCE_HEADER, "n".parse().expect("a value"));
        assert!(nonce.learn(&headers));
        assert_eq!(nonce.get().as_deref(), Some("n"));
    }
}

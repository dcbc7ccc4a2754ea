//! Sealing secrets at rest with AES-256-GCM: mcp-service's integration
//! secrets and grants, runs-service's callers' tokens of runs that continue
//! on another replica.
//!
//! Keys form a ring: the first key seals, every key can open, and each
//! ciphertext is stored with the id of the key that sealed it, so keys rotate
//! by putting a new key first and re-saving at leisure. The caller binds
//! what the secret belongs to (an integration's id and organization, a run's
//! id) as associated data, so a ciphertext copied to another row does not
//! open.

use aes_gcm::{
    Aes256Gcm, Key, Nonce,
    aead::{Aead, AeadCore, KeyInit, OsRng, Payload},
};
use base64::{Engine as _, engine::general_purpose::STANDARD};

const NONCE_LEN: usize = 12;

/// A sealed secret: the key id and `nonce || ciphertext || tag`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    /// Id of the key that sealed it.
    pub key_id: String,
    /// Nonce followed by the ciphertext and tag.
    pub bytes: Vec<u8>,
}

/// Why the key ring could not be built or a secret could not be opened.
/// Messages never contain key material or plaintext.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SecretBoxError {
    /// The key configuration is malformed.
    #[error("invalid secret key configuration: {0}")]
    Config(String),
    /// The ciphertext names a key the ring does not hold.
    #[error("secrets were sealed with key `{0}`, which is not configured")]
    UnknownKey(String),
    /// Tampered, truncated, or bound to another integration.
    #[error("sealed secrets failed authentication")]
    Corrupt,
}

/// The keys secrets are sealed and opened with.
pub struct KeyRing {
    active: (String, Aes256Gcm),
    others: Vec<(String, Aes256Gcm)>,
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyRing")
            .field("active", &self.active.0)
            .field(
                "others",
                &self.others.iter().map(|(id, _)| id).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl KeyRing {
    /// Parses `id:base64key` entries separated by commas or newlines; each key
    /// is 32 bytes, the first entry seals.
    pub fn parse(spec: &str) -> Result<Self, SecretBoxError> {
        let mut keys = Vec::new();
        for entry in spec
            .split([',', '\n'])
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let (id, encoded) = entry
                .split_once(':')
                .ok_or_else(|| SecretBoxError::Config("entries must be `id:base64key`".into()))?;
            let id = id.trim();
            if id.is_empty() || keys.iter().any(|(existing, _)| existing == id) {
                return Err(SecretBoxError::Config(format!(
                    "key ids must be non-empty and unique (`{id}`)"
                )));
            }
            let bytes = STANDARD
                .decode(encoded.trim())
                .map_err(|_| SecretBoxError::Config(format!("key `{id}` is not base64")))?;
            let key: [u8; 32] = bytes
                .try_into()
                .map_err(|_| SecretBoxError::Config(format!("key `{id}` must be 32 bytes")))?;
            keys.push((id.to_owned(), Aes256Gcm::new(&Key::<Aes256Gcm>::from(key))));
        }
        let mut keys = keys.into_iter();
        let active = keys
            .next()
            .ok_or_else(|| SecretBoxError::Config("no key given".into()))?;
        Ok(Self {
            active,
            others: keys.collect(),
        })
    }

    /// The configuration of a ring of one new random key named `id`, in the
    /// form [`KeyRing::parse`] reads: for tests, and for operators who
    /// generate a key.
    pub fn random_spec(id: &str) -> String {
        let key = Aes256Gcm::generate_key(&mut OsRng);
        format!("{id}:{}", STANDARD.encode(key))
    }

    /// A fixed, publicly known key for local development only.
    pub fn development() -> Self {
        let key = [7u8; 32];
        Self {
            active: (
                "dev".to_owned(),
                Aes256Gcm::new(&Key::<Aes256Gcm>::from(key)),
            ),
            others: Vec::new(),
        }
    }

    /// Id of the key that seals.
    pub fn active_key_id(&self) -> &str {
        &self.active.0
    }

    /// Seals `plaintext`, bound to `aad`.
    pub fn seal(&self, plaintext: &[u8], aad: &[u8]) -> Result<Sealed, SecretBoxError> {
        let (id, cipher) = &self.active;
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let ciphertext = cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: plaintext,
                    aad,
                },
            )
            .map_err(|_| SecretBoxError::Corrupt)?;
        let mut bytes = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        bytes.extend_from_slice(&nonce);
        bytes.extend_from_slice(&ciphertext);
        Ok(Sealed {
            key_id: id.clone(),
            bytes,
        })
    }

    /// Opens a sealed secret bound to `aad`.
    pub fn open(&self, sealed: &Sealed, aad: &[u8]) -> Result<Vec<u8>, SecretBoxError> {
        let cipher = std::iter::once(&self.active)
            .chain(&self.others)
            .find(|(id, _)| *id == sealed.key_id)
            .map(|(_, cipher)| cipher)
            .ok_or_else(|| SecretBoxError::UnknownKey(sealed.key_id.clone()))?;
        if sealed.bytes.len() < NONCE_LEN {
            return Err(SecretBoxError::Corrupt);
        }
        let (nonce, ciphertext) = sealed.bytes.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| SecretBoxError::Corrupt)?;
        cipher
            .decrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: ciphertext,
                    aad,
                },
            )
            .map_err(|_| SecretBoxError::Corrupt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> String {
        STANDARD.encode([byte; 32])
    }

    #[test]
    fn sealed_secrets_open_only_with_the_same_binding() {
        let ring = KeyRing::parse(&format!("k1:{}", key(1))).expect("valid");
        let sealed = ring.seal(b"canary", b"org/id").expect("seals");
        assert!(!sealed.bytes.windows(6).any(|w| w == b"canary"));
        assert_eq!(ring.open(&sealed, b"org/id").expect("opens"), b"canary");
        assert_eq!(
            ring.open(&sealed, b"org/other"),
            Err(SecretBoxError::Corrupt)
        );
    }

    #[test]
    fn an_old_key_still_opens_after_rotation_and_the_new_one_seals() {
        let old = KeyRing::parse(&format!("k1:{}", key(1))).expect("valid");
        let sealed = old.seal(b"secret", b"aad").expect("seals");
        let rotated = KeyRing::parse(&format!("k2:{},k1:{}", key(2), key(1))).expect("valid");
        assert_eq!(rotated.open(&sealed, b"aad").expect("opens"), b"secret");
        assert_eq!(rotated.seal(b"x", b"aad").expect("seals").key_id, "k2");
        let without_old = KeyRing::parse(&format!("k2:{}", key(2))).expect("valid");
        assert_eq!(
            without_old.open(&sealed, b"aad"),
            Err(SecretBoxError::UnknownKey("k1".into()))
        );
    }

    #[test]
    fn a_random_spec_parses_and_differs_each_time() {
        let (one, two) = (KeyRing::random_spec("r"), KeyRing::random_spec("r"));
        assert_ne!(one, two);
        let ring = KeyRing::parse(&one).expect("valid");
        assert_eq!(ring.active_key_id(), "r");
    }

    #[test]
    fn malformed_key_configuration_is_refused() {
        for spec in [
            "",
            "nokey",
            "k1:notbase64!",
            &format!("k1:{}", STANDARD.encode([1u8; 16])),
        ] {
            assert!(KeyRing::parse(spec).is_err(), "{spec}");
        }
        assert!(KeyRing::parse(&format!("k1:{},k1:{}", key(1), key(2))).is_err());
    }

    #[test]
    fn tampered_ciphertext_is_refused() {
        let ring = KeyRing::development();
        let mut sealed = ring.seal(b"secret", b"aad").expect("seals");
        let last = sealed.bytes.len() - 1;
        sealed.bytes[last] ^= 1;
        assert_eq!(ring.open(&sealed, b"aad"), Err(SecretBoxError::Corrupt));
    }
}

//! The identity a client certificate proves.

use std::net::SocketAddr;

use x509_parser::{extensions::GeneralName, prelude::FromDer as _};

use super::MAX_IDENTITY_BYTES;

/// What the TLS handshake of a connection established, attached to every
/// request of the connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerIdentity {
    /// The client's address.
    pub remote_addr: Option<SocketAddr>,
    /// The calling service its verified certificate names: the SPIFFE ID
    /// (URI SAN `spiffe://…`), else the subject's common name; `None`
    /// without a client certificate.
    pub service: Option<String>,
}

/// The calling service named by a verified client certificate (DER): its
/// SPIFFE ID, else its subject's common name; `None` when it names neither
/// or names one longer than [`MAX_IDENTITY_BYTES`].
pub fn peer_identity(der: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::certificate::X509Certificate::from_der(der).ok()?;
    let spiffe_id = cert
        .subject_alternative_name()
        .ok()
        .flatten()
        .and_then(|san| {
            san.value.general_names.iter().find_map(|name| match name {
                GeneralName::URI(uri) if uri.starts_with("spiffe://") => Some((*uri).to_owned()),
                _ => None,
            })
        });
    let identity = spiffe_id.or_else(|| {
        cert.subject()
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .map(str::to_owned)
    })?;
    (!identity.is_empty() && identity.len() <= MAX_IDENTITY_BYTES).then_some(identity)
}

#[cfg(test)]
mod tests {
    use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, SanType};

    use super::*;

    fn certificate(cn: Option<&str>, sans: Vec<SanType>) -> Vec<u8> {
        let mut params = CertificateParams::default();
        let mut name = DistinguishedName::new();
        if let Some(cn) = cn {
            name.push(DnType::CommonName, cn);
        }
        params.distinguished_name = name;
        params.subject_alt_names = sans;
        let key = KeyPair::generate().expect("a key");
        params.self_signed(&key).expect("signed").der().to_vec()
    }

    #[test]
    fn a_spiffe_id_wins_over_the_common_name() {
        let der = certificate(
            Some("billing"),
            vec![
                SanType::DnsName("billing.svc".try_into().expect("a name")),
                SanType::URI(
                    "spiffe://corp.example/ns/billing/sa/api"
                        .try_into()
                        .expect("a uri"),
                ),
            ],
        );
        assert_eq!(
            peer_identity(&der).as_deref(),
            Some("spiffe://corp.example/ns/billing/sa/api")
        );
    }

    #[test]
    fn without_a_spiffe_id_the_common_name_names_the_service() {
        let der = certificate(
            Some("billing"),
            vec![SanType::URI(
                "https://not-spiffe.example".try_into().expect("a uri"),
            )],
        );
        assert_eq!(peer_identity(&der).as_deref(), Some("billing"));
    }

    #[test]
    fn a_certificate_naming_nothing_or_too_much_gives_no_identity() {
        assert_eq!(peer_identity(&certificate(None, Vec::new())), None);
        let long = format!("spiffe://corp.example/{}", "a".repeat(MAX_IDENTITY_BYTES));
        let der = certificate(
            None,
            vec![SanType::URI(long.as_str().try_into().expect("a uri"))],
        );
        assert_eq!(peer_identity(&der), None);
        assert_eq!(peer_identity(b"not a certificate"), None);
    }
}

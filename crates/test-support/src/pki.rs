//! A certificate authority made for one test, issuing server and client
//! certificates into PEM files, as cert-manager or a SPIFFE agent would
//! mount them.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, SanType,
};
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

/// A test's own CA and the directory its files are written to.
#[derive(Debug)]
pub struct TestPki {
    /// The CA certificate, PEM.
    pub ca_pem: String,
    issuer: Issuer<'static, KeyPair>,
    dir: tempfile::TempDir,
}

/// A certificate and its key, in memory and in files.
#[derive(Debug, Clone)]
pub struct Issued {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The private key, PEM.
    pub key_pem: String,
    /// The file holding the certificate.
    pub cert_file: PathBuf,
    /// The file holding the key.
    pub key_file: PathBuf,
}

impl Issued {
    /// Writes this certificate and key over `other`'s files, as a rotation
    /// does.
    pub fn write_over(&self, other: &Issued) {
        std::fs::write(&other.key_file, &self.key_pem).expect("key written");
        std::fs::write(&other.cert_file, &self.cert_pem).expect("certificate written");
    }

    /// The certificate and key as a tonic client identity.
    pub fn identity(&self) -> Identity {
        Identity::from_pem(&self.cert_pem, &self.key_pem)
    }
}

impl TestPki {
    /// A new CA named `name`.
    pub fn new(name: &str) -> Self {
        let mut params = CertificateParams::default();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, name);
        params.distinguished_name = dn;
        let key = KeyPair::generate().expect("a CA key");
        let cert = params.self_signed(&key).expect("a CA certificate");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let ca_pem = cert.pem();
        std::fs::write(dir.path().join("ca.pem"), &ca_pem).expect("CA written");
        Self {
            ca_pem,
            issuer: Issuer::new(params, key),
            dir,
        }
    }

    /// The file holding the CA certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The directory the files are in.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A server certificate for `localhost` and 127.0.0.1, written to
    /// `<file>.pem` and `<file>.key`.
    pub fn server(&self, file: &str) -> Issued {
        let mut params =
            CertificateParams::new(vec!["localhost".to_owned()]).expect("a valid name");
        params
            .subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.issue(params, file)
    }

    /// A client certificate naming `spiffe_id` (a URI SAN) and, as its
    /// subject, `common_name`.
    pub fn client(&self, file: &str, spiffe_id: Option<&str>, common_name: &str) -> Issued {
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, common_name);
        params.distinguished_name = dn;
        if let Some(id) = spiffe_id {
            params
                .subject_alt_names
                .push(SanType::URI(id.try_into().expect("a valid URI")));
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.issue(params, file)
    }

    fn issue(&self, params: CertificateParams, file: &str) -> Issued {
        let key = KeyPair::generate().expect("a key");
        let cert = params.signed_by(&key, &self.issuer).expect("signed");
        let issued = Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            cert_file: self.dir.path().join(format!("{file}.pem")),
            key_file: self.dir.path().join(format!("{file}.key")),
        };
        std::fs::write(&issued.cert_file, &issued.cert_pem).expect("certificate written");
        std::fs::write(&issued.key_file, &issued.key_pem).expect("key written");
        issued
    }

    /// A client TLS configuration trusting this CA, presenting `identity`.
    pub fn client_tls(&self, identity: Option<&Issued>) -> ClientTlsConfig {
        let config = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&self.ca_pem))
            .domain_name("localhost");
        match identity {
            Some(issued) => config.identity(issued.identity()),
            None => config,
        }
    }
}

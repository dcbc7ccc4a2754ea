//! What is wrong with a gRPC integration as written: a target that is not
//! `http(s)://host:port`, TLS settings on a plaintext target or that are
//! not PEM, a descriptor set that cannot be read within its bounds, a
//! method chosen that it does not hold. (Whether the server's reflection
//! answers is seen when the integration is validated or first used.)

use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject as _};
use switchboard_server::FieldViolation;

use super::{GrpcLimits, ServiceSchema};
use crate::domain::transport::Grpc;

/// The violations of `grpc`, named under `transport_field`.
pub fn violations(transport_field: &str, grpc: &Grpc, limits: &GrpcLimits) -> Vec<FieldViolation> {
    let at = |name: &str| format!("{transport_field}.grpc.{name}");
    let mut violations = Vec::new();
    // A target that is not an http(s) URL is the address policy's to
    // refuse (every kind's URL is checked there); what is gRPC's own is
    // checked here.
    let tls = !grpc.target.starts_with("http://");
    if let Err(why) = target_shape(&grpc.target) {
        violations.push(FieldViolation::new(at("target"), why));
    }
    for (name, pem) in [
        ("ca_certificate", &grpc.ca_certificate),
        ("client_certificate", &grpc.client_certificate),
    ] {
        if pem.is_empty() {
            continue;
        }
        if !tls {
            violations.push(FieldViolation::new(at(name), "needs an https target"));
        } else if CertificateDer::pem_slice_iter(pem.as_bytes())
            .next()
            .is_none_or(|c| c.is_err())
        {
            violations.push(FieldViolation::new(at(name), "is not a PEM certificate"));
        }
    }
    if !grpc.descriptor_set.is_empty() {
        match ServiceSchema::read(&grpc.descriptor_set, &grpc.methods, limits) {
            Err(error) => {
                violations.push(FieldViolation::new(at("descriptor_set"), error.to_string()))
            }
            Ok(schema) => {
                violations.extend(schema.unknown(&grpc.methods).into_iter().map(|(i, _)| {
                    FieldViolation::new(
                        format!("{transport_field}.grpc.methods[{i}]"),
                        "names no service or method of the descriptor set",
                    )
                }))
            }
        }
    }
    violations
}

/// Whether a client key (PEM) can be read; `None` if it can.
pub fn client_key_violation(pem: &str) -> Option<&'static str> {
    PrivateKeyDer::from_pem_slice(pem.as_bytes())
        .err()
        .map(|_| "is not a PEM private key")
}

/// Whether an http(s) `target` is a scheme, a host, maybe a port, and
/// nothing else.
fn target_shape(target: &str) -> Result<(), String> {
    let Ok(url) = url::Url::parse(target) else {
        return Ok(());
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not hold credentials".to_owned());
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err("must end at the port: gRPC names its own paths".to_owned());
    }
    Ok(())
}

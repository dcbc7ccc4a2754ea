//! Integration tests of switchboard-auth: verification against a real JWKS
//! server on loopback.

mod jwks;

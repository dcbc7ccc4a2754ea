//! The outbound address policy (SSRF protection): URLs an admin saves and
//! addresses a host name resolves to.
//!
//! Input (structured with `arbitrary`): a URL text, an address, an
//! allow-list text and one allow-listed network.
//!
//! Checked on every input: no panic; an accepted URL is http(s) with a host,
//! its IP literal (if any) is itself accepted, and the URL as it will be
//! dialled is accepted again with the same host; every address the standard
//! library calls loopback, private, link-local, multicast, unspecified,
//! broadcast, documentation or unique-local is refused unless allow-listed;
//! an IPv4 address and its IPv4-mapped IPv6 form get the same verdict; the
//! same address written as a URL host (dotted, one decimal number,
//! hexadecimal, bracketed IPv6) gets the same verdict as the address;
//! an address inside an allow-listed network is accepted.

#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use arbitrary::Arbitrary;
use ipnet::IpNet;
use libfuzzer_sys::fuzz_target;
use switchboard_mcp_service::domain::address_policy::{AddressPolicy, PolicyError};
use url::Host;

#[derive(Debug, Arbitrary)]
struct Input {
    url: String,
    address: Address,
    allow_list: String,
    allowed: Address,
    allowed_prefix: u8,
}

#[derive(Debug, Arbitrary)]
enum Address {
    V4([u8; 4]),
    V6([u8; 16]),
    /// IPv4-mapped IPv6 (`::ffff:a.b.c.d`).
    Mapped([u8; 4]),
}

impl Address {
    fn ip(&self) -> IpAddr {
        match self {
            Self::V4(octets) => IpAddr::V4(Ipv4Addr::from(*octets)),
            Self::V6(octets) => IpAddr::V6(Ipv6Addr::from(*octets)),
            Self::Mapped(octets) => IpAddr::V6(Ipv4Addr::from(*octets).to_ipv6_mapped()),
        }
    }
}

fuzz_target!(|input: Input| {
    let open = AddressPolicy::default();
    check_url(&open, &input.url);
    if let Ok(listed) = AddressPolicy::parse_allow_list(&input.allow_list) {
        check_url(&listed, &input.url);
        for net in listed.allow_list() {
            assert!(listed.check_ip("h", net.network()).is_ok(), "{net}");
            assert!(listed.check_ip("h", net.broadcast()).is_ok(), "{net}");
        }
    }

    let ip = input.address.ip();
    check_address(&open, ip);

    let allowed = input.allowed.ip();
    let max_prefix = if allowed.is_ipv4() { 32 } else { 128 };
    let net = IpNet::new(allowed, input.allowed_prefix % (max_prefix + 1))
        .expect("the prefix is in range by construction");
    let policy = AddressPolicy::new(vec![net]);
    assert!(policy.check_ip("h", allowed).is_ok(), "{allowed} in {net}");
    if net.contains(&ip) {
        assert!(policy.check_ip("h", ip).is_ok(), "{ip} in {net}");
    }
    check_address(&policy, ip);
});

/// The properties of one URL under `policy`.
fn check_url(policy: &AddressPolicy, url: &str) {
    let Ok(parsed) = policy.check_url(url) else {
        return;
    };
    assert!(matches!(parsed.scheme(), "http" | "https"), "{url}");
    let literal = match parsed.host() {
        None | Some(Host::Domain("")) => panic!("accepted without a host: {url:?}"),
        Some(Host::Domain(_)) => None,
        Some(Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
        Some(Host::Ipv6(v6)) => Some(IpAddr::V6(v6)),
    };
    if let Some(ip) = literal {
        assert!(policy.check_ip("h", ip).is_ok(), "{url:?} reaches {ip}");
    }
    // What the client dials is the serialised URL: it must pass again and
    // name the same host.
    let again = policy
        .check_url(parsed.as_str())
        .unwrap_or_else(|e| panic!("{url:?} accepted, its serialisation {parsed} not: {e}"));
    assert_eq!(again.host(), parsed.host(), "{url:?}");
    assert_eq!(
        again.port_or_known_default(),
        parsed.port_or_known_default()
    );
}

/// The properties of one address under `policy`.
fn check_address(policy: &AddressPolicy, ip: IpAddr) {
    let verdict = policy.check_ip("h", ip);
    if let Err(error) = &verdict {
        assert!(
            matches!(error, PolicyError::Blocked { addr, .. } if *addr == ip),
            "{ip}: {error:?}"
        );
    }
    // The policy judges an IPv4-mapped address by its IPv4 address.
    let listed = policy
        .allow_list()
        .iter()
        .any(|net| net.contains(&ip) || net.contains(&ip.to_canonical()));
    if !listed && std_says_internal(ip) {
        assert!(verdict.is_err(), "{ip} is internal but accepted");
    }

    // The same address in each spelling a URL host may use.
    let mut spellings = Vec::new();
    match ip {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            spellings.push(format!("http://{v4}/"));
            spellings.push(format!("http://{bits}/"));
            spellings.push(format!("https://0x{bits:x}:8443/"));
            let [a, b, c, d] = v4.octets();
            spellings.push(format!("http://0{a:o}.0{b:o}.0{c:o}.0{d:o}/"));
            // The mapped form is judged as the IPv4 address, unless the
            // operator allow-listed IPv6 space that holds it.
            let mapped = IpAddr::V6(v4.to_ipv6_mapped());
            if !policy.allow_list().iter().any(|net| net.contains(&mapped)) {
                spellings.push(format!("http://[{mapped}]/"));
                let verdict_mapped = policy.check_ip("h", mapped);
                assert_eq!(verdict_mapped.is_ok(), verdict.is_ok(), "{v4} vs {mapped}");
            }
        }
        IpAddr::V6(v6) => spellings.push(format!("http://[{v6}]:80/x")),
    }
    for url in spellings {
        let through_url = policy.check_url(&url);
        assert_eq!(
            through_url.is_ok(),
            verdict.is_ok(),
            "{url}: {through_url:?} vs {ip}: {verdict:?}"
        );
    }
}

/// Whether the standard library classes `ip` as not publicly routable.
fn std_says_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_multicast()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_multicast()
                || v6.is_unspecified()
                || v6.is_unique_local()
                || v6.is_unicast_link_local()
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| std_says_internal(IpAddr::V4(v4)))
        }
    }
}

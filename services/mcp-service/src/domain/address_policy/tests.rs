//! Unit tests of `address_policy`: a table of addresses and URLs, each with
//! what the policy decides.

use super::*;

/// What a table row expects when no allow-list applies.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    /// Refused as this category of address.
    Address(&'static str),
    /// Refused for its scheme, whatever the allow-list.
    Scheme,
}

/// URLs the policy refuses with no allow-list. `resolve` marks the rows
/// whose host is a name (only `check_url_resolved` can refuse those).
const REFUSED: &[(&str, Refusal, bool)] = &[
    (
        "http://169.254.169.254/",
        Refusal::Address("link-local"),
        false,
    ),
    (
        "http://169.254.169.254/latest/meta-data/",
        Refusal::Address("link-local"),
        false,
    ),
    ("http://127.1/", Refusal::Address("loopback"), false),
    ("http://0x7f000001/", Refusal::Address("loopback"), false),
    ("http://2130706433/", Refusal::Address("loopback"), false),
    ("http://0177.0.0.1/", Refusal::Address("loopback"), false),
    (
        "http://127.0.0.1:8080/mcp",
        Refusal::Address("loopback"),
        false,
    ),
    (
        "http://[::ffff:127.0.0.1]/",
        Refusal::Address("loopback"),
        false,
    ),
    (
        "http://[::ffff:169.254.169.254]/",
        Refusal::Address("link-local"),
        false,
    ),
    ("http://[::1]/", Refusal::Address("loopback"), false),
    ("http://[fd00::1]/", Refusal::Address("unique-local"), false),
    ("http://10.0.0.1/", Refusal::Address("private"), false),
    ("http://172.16.0.1/", Refusal::Address("private"), false),
    ("http://172.31.255.255/", Refusal::Address("private"), false),
    ("http://192.168.1.1/", Refusal::Address("private"), false),
    ("http://localhost/", Refusal::Address("loopback"), true),
    ("file:///etc/passwd", Refusal::Scheme, false),
    ("gopher://example.com/", Refusal::Scheme, false),
    ("ftp://127.0.0.1/", Refusal::Scheme, false),
    ("http://0.0.0.0/", Refusal::Address("unspecified"), false),
    ("http://0.1.2.3/", Refusal::Address("this-network"), false),
    (
        "http://100.64.0.1/",
        Refusal::Address("shared (CGNAT)"),
        false,
    ),
    (
        "http://100.127.255.255/",
        Refusal::Address("shared (CGNAT)"),
        false,
    ),
    (
        "http://192.0.0.8/",
        Refusal::Address("IETF protocol assignment"),
        false,
    ),
    (
        "http://192.0.2.1/",
        Refusal::Address("documentation"),
        false,
    ),
    (
        "http://198.51.100.7/",
        Refusal::Address("documentation"),
        false,
    ),
    (
        "http://203.0.113.9/",
        Refusal::Address("documentation"),
        false,
    ),
    (
        "http://198.18.0.1/",
        Refusal::Address("benchmarking"),
        false,
    ),
    (
        "http://198.19.255.255/",
        Refusal::Address("benchmarking"),
        false,
    ),
    ("http://224.0.0.1/", Refusal::Address("multicast"), false),
    (
        "http://239.255.255.250/",
        Refusal::Address("multicast"),
        false,
    ),
    ("http://240.0.0.1/", Refusal::Address("reserved"), false),
    (
        "http://255.255.255.255/",
        Refusal::Address("broadcast"),
        false,
    ),
    ("http://[::]/", Refusal::Address("unspecified"), false),
    ("http://[fe80::1]/", Refusal::Address("link-local"), false),
    ("http://[fec0::1]/", Refusal::Address("site-local"), false),
    ("http://[ff02::1]/", Refusal::Address("multicast"), false),
    (
        "http://[2001:db8::1]/",
        Refusal::Address("documentation"),
        false,
    ),
    ("http://[100::1]/", Refusal::Address("discard-only"), false),
    (
        "http://[64:ff9b::7f00:1]/",
        Refusal::Address("loopback"),
        false,
    ),
    (
        "http://[64:ff9b::a9fe:a9fe]/",
        Refusal::Address("link-local"),
        false,
    ),
    (
        "http://[2002:7f00:1::]/",
        Refusal::Address("loopback"),
        false,
    ),
    (
        "http://[2002:a00:1::1]/",
        Refusal::Address("private"),
        false,
    ),
    ("http://[::127.0.0.1]/", Refusal::Address("loopback"), false),
];

/// An allow-list naming every address class of `REFUSED`.
const ALLOW_ALL_OF_THEM: &str = "127.0.0.0/8, ::1/128, 169.254.169.254, fd00::/8, 10.0.0.0/8, \
     172.16.0.0/12 192.168.0.0/16,0.0.0.0/8, 100.64.0.0/10, 192.0.0.0/24, 192.0.2.0/24, \
     198.51.100.0/24, 203.0.113.0/24, 198.18.0.0/15, 224.0.0.0/4, 240.0.0.0/4, ::, \
     fe80::/10, fec0::/10, ff00::/8, 2001:db8::/32, 100::/64";

async fn check_both(policy: &AddressPolicy, url: &str, resolve: bool) -> Result<(), PolicyError> {
    let form = policy.check_url(url);
    let resolved = policy.check_url_resolved(url).await;
    if resolve {
        // A name passes the form check; only resolution can refuse it.
        assert!(
            form.is_ok(),
            "{url}: check_url must not resolve names, got {form:?}"
        );
    } else {
        assert_eq!(
            form, resolved,
            "{url}: check_url and check_url_resolved disagree"
        );
    }
    resolved.map(|_| ())
}

#[tokio::test]
async fn refuses_special_purpose_addresses_and_schemes() {
    let policy = AddressPolicy::default();
    for &(url, refusal, resolve) in REFUSED {
        let err = check_both(&policy, url, resolve)
            .await
            .expect_err(&format!("{url} must be refused"));
        match (refusal, &err) {
            (Refusal::Address(want), PolicyError::Blocked { category, .. }) => {
                assert_eq!(*category, want, "{url}");
            }
            (Refusal::Scheme, PolicyError::UnsupportedScheme(_)) => {}
            _ => panic!("{url}: expected {refusal:?}, got {err:?}"),
        }
    }
}

#[tokio::test]
async fn allow_list_allows_every_address_but_no_scheme() {
    let policy = AddressPolicy::parse_allow_list(ALLOW_ALL_OF_THEM).expect("allow-list parses");
    for &(url, refusal, resolve) in REFUSED {
        let outcome = check_both(&policy, url, resolve).await;
        match refusal {
            Refusal::Address(_) => assert_eq!(outcome, Ok(()), "{url} must be allowed"),
            Refusal::Scheme => assert!(
                matches!(outcome, Err(PolicyError::UnsupportedScheme(_))),
                "{url} must stay refused, got {outcome:?}"
            ),
        }
    }
}

#[tokio::test]
async fn public_addresses_are_allowed_without_allow_list() {
    let policy = AddressPolicy::default();
    for url in [
        "http://93.184.216.34/",
        "https://93.184.216.34:8443/mcp?x=1",
        "http://1.1.1.1/",
        "http://8.8.8.8/",
        "http://172.15.255.255/",
        "http://172.32.0.0/",
        "http://100.63.255.255/",
        "http://100.128.0.0/",
        "http://198.17.255.255/",
        "http://198.20.0.0/",
        "http://192.0.1.1/",
        "http://223.255.255.255/",
        "https://[2606:4700::1111]/",
        "http://[2a00:1450:4001:80b::200e]/",
        "http://[::ffff:93.184.216.34]/",
        "http://[64:ff9b::808:808]/",
        "http://[2002:5db8:d822::1]/",
    ] {
        assert_eq!(check_both(&policy, url, false).await, Ok(()), "{url}");
    }
}

#[test]
fn hostnames_are_not_resolved_by_check_url() {
    let policy = AddressPolicy::default();
    let url = policy
        .check_url("https://mcp.example.com/sse")
        .expect("names pass the form check");
    assert_eq!(url.host_str(), Some("mcp.example.com"));
}

#[test]
fn invalid_urls_are_refused_without_echoing_them() {
    let policy = AddressPolicy::default();
    for url in [
        "not a url",
        "http://",
        "https://user:s3cret@[::1/",
        "http://exa mple.com/?token=s3cret",
    ] {
        let err = policy.check_url(url).expect_err(url);
        assert!(matches!(err, PolicyError::InvalidUrl(_)), "{url}: {err:?}");
        assert!(!err.to_string().contains("s3cret"), "{url}: {err}");
    }
}

#[test]
fn blocked_message_names_policy_host_address_and_category() {
    let policy = AddressPolicy::default();
    let err = policy
        .check_url("http://user:s3cret@169.254.169.254/latest?token=s3cret")
        .expect_err("metadata address");
    assert_eq!(
        err.to_string(),
        "outbound address policy refuses 169.254.169.254 (169.254.169.254): link-local address"
    );
}

#[test]
fn allow_list_matches_embedded_ipv4_forms() {
    let policy = AddressPolicy::parse_allow_list("127.0.0.1").expect("parses");
    for ip in [
        "127.0.0.1",
        "::ffff:127.0.0.1",
        "64:ff9b::7f00:1",
        "2002:7f00:1::",
        "::127.0.0.1",
    ] {
        let ip: IpAddr = ip.parse().expect("ip");
        assert_eq!(policy.check_ip("h", ip), Ok(()), "{ip}");
    }
    for ip in ["127.0.0.2", "::ffff:127.0.0.2", "::1", "::"] {
        let ip: IpAddr = ip.parse().expect("ip");
        assert!(policy.check_ip("h", ip).is_err(), "{ip}");
    }
}

#[test]
fn parse_allow_list_accepts_cidrs_and_bare_ips() {
    let policy = AddressPolicy::parse_allow_list(" 127.0.0.1, ::1/128,10.0.0.5/8\n fd00::1 ,")
        .expect("parses");
    let listed: Vec<String> = policy
        .allow_list()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        listed,
        ["127.0.0.1/32", "::1/128", "10.0.0.0/8", "fd00::1/128"]
    );
    assert!(
        AddressPolicy::parse_allow_list("")
            .expect("empty")
            .allow_list()
            .is_empty()
    );
    let err =
        AddressPolicy::parse_allow_list("10.0.0.0/8, localhost").expect_err("a name is no IP");
    assert!(err.contains("\"localhost\""), "{err}");
    assert!(AddressPolicy::parse_allow_list("10.0.0.0/33").is_err());
}

#[test]
fn ipv6_outside_global_unicast_is_reserved() {
    let policy = AddressPolicy::default();
    for ip in ["4000::1", "::2:0:0:1", "::ffff:0:7f00:1", "8000::1"] {
        let ip: IpAddr = ip.parse().expect("ip");
        assert!(
            matches!(
                policy.check_ip("h", ip),
                Err(PolicyError::Blocked {
                    category: "reserved",
                    ..
                })
            ),
            "{ip}"
        );
    }
}

/// Every address std's own predicates call special is refused by the table.
#[test]
fn table_covers_std_special_addresses() {
    let policy = AddressPolicy::default();
    let samples: Vec<IpAddr> = (0..=255u8)
        .flat_map(|a| {
            [0u8, 1, 16, 31, 51, 64, 88, 168, 254, 255]
                .into_iter()
                .flat_map(move |b| {
                    [
                        (0u8, 0u8),
                        (0, 1),
                        (2, 1),
                        (99, 1),
                        (100, 7),
                        (113, 9),
                        (255, 255),
                    ]
                    .into_iter()
                    .map(move |(c, d)| IpAddr::V4(Ipv4Addr::new(a, b, c, d)))
                })
        })
        .chain(
            [
                "0.0.0.0",
                "127.255.255.255",
                "10.255.255.255",
                "169.254.0.1",
                "192.168.255.255",
                "224.0.0.0",
                "255.255.255.255",
                "192.0.2.255",
                "203.0.113.0",
            ]
            .iter()
            .map(|s| s.parse().expect("ip")),
        )
        .chain(
            [
                "::",
                "::1",
                "fe80::abcd",
                "ff05::2",
                "fc00::1",
                "fdff::1",
                "2001:db8:ffff::1",
            ]
            .iter()
            .map(|s| s.parse().expect("ip")),
        )
        .collect();
    for ip in samples {
        let special = match ip {
            IpAddr::V4(v4) => {
                v4.is_unspecified()
                    || v4.is_loopback()
                    || v4.is_private()
                    || v4.is_link_local()
                    || v4.is_multicast()
                    || v4.is_broadcast()
                    || v4.is_documentation()
            }
            IpAddr::V6(v6) => {
                v6.is_unspecified()
                    || v6.is_loopback()
                    || v6.is_multicast()
                    || v6.is_unicast_link_local()
                    || v6.is_unique_local()
            }
        };
        if special {
            assert!(
                policy.check_ip("h", ip).is_err(),
                "{ip} is special but allowed"
            );
        }
    }
}

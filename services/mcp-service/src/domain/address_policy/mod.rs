//! Outbound address policy (SSRF protection): which URLs and IP addresses
//! mcp-service may dial when it reaches customers' MCP servers and OAuth
//! token endpoints.
//!
//! A URL is acceptable when its scheme is `http` or `https`, it has a host,
//! and every address that host stands for is either a public unicast address
//! or inside the operator's allow-list. URLs are parsed with the `url` crate,
//! whose WHATWG host parser normalises the numeric spellings of IPv4
//! (`127.1`, `0x7f000001`, `2130706433`, `0177.0.0.1` are all 127.0.0.1), so
//! classification only ever sees [`IpAddr`]s. Those are judged against a table
//! of the IANA special-purpose ranges; IPv6 forms that embed an IPv4 address
//! (v4-mapped, v4-compatible, NAT64, 6to4) are judged by that IPv4 address.
//!
//! [`AddressPolicy::check_url`] never resolves names; the HTTP client checks
//! the resolved addresses at connect time (see `outbound::http`), and
//! [`AddressPolicy::check_url_resolved`] does both for a one-off check (for
//! example when an admin saves an integration).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use url::{Host, Url};

/// Why an outbound address was refused. Messages are shown to admins: they
/// name the problem (host, address, class of address), never the full URL,
/// whose path, query or user-info may carry secrets.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    /// The URL's scheme is not `http` or `https`.
    #[error("outbound address policy refuses scheme {0:?}: only http and https are allowed")]
    UnsupportedScheme(String),
    /// The URL does not parse; holds the parser's reason, not the URL.
    #[error("invalid URL: {0}")]
    InvalidUrl(String),
    /// The URL has no host to connect to.
    #[error("URL has no host")]
    MissingHost,
    /// The host is, or resolves to, an address the policy refuses.
    #[error("outbound address policy refuses {host} ({addr}): {category} address")]
    Blocked {
        /// The host as written in the URL (an IP literal or a name).
        host: String,
        /// The refused address.
        addr: IpAddr,
        /// Which class of address matched, e.g. "loopback", "private", "link-local".
        category: &'static str,
    },
    /// The host name did not resolve; holds the host and the resolver's reason.
    #[error("could not resolve {0}")]
    Unresolvable(String),
}

/// The outbound address policy: refuse non-public addresses unless the
/// operator allow-lists them.
#[derive(Debug, Clone, Default)]
pub struct AddressPolicy {
    allow: Vec<IpNet>,
}

const fn v4(
    a: u8,
    b: u8,
    c: u8,
    d: u8,
    prefix: u8,
    category: &'static str,
) -> (Ipv4Net, &'static str) {
    (
        Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), prefix),
        category,
    )
}

const fn v6(segments: [u16; 8], prefix: u8, category: &'static str) -> (Ipv6Net, &'static str) {
    let [a, b, c, d, e, f, g, h] = segments;
    (
        Ipv6Net::new_assert(Ipv6Addr::new(a, b, c, d, e, f, g, h), prefix),
        category,
    )
}

/// IPv4 special-purpose ranges that are refused (IANA IPv4 Special-Purpose
/// Address Registry, plus multicast and the reserved 240/4). The first
/// matching entry names the category, so narrower entries come first.
static V4_REFUSED: [(Ipv4Net, &str); 17] = [
    v4(0, 0, 0, 0, 32, "unspecified"),
    v4(0, 0, 0, 0, 8, "this-network"),
    v4(10, 0, 0, 0, 8, "private"),
    v4(100, 64, 0, 0, 10, "shared (CGNAT)"),
    v4(127, 0, 0, 0, 8, "loopback"),
    v4(169, 254, 0, 0, 16, "link-local"),
    v4(172, 16, 0, 0, 12, "private"),
    v4(192, 0, 0, 0, 24, "IETF protocol assignment"),
    v4(192, 0, 2, 0, 24, "documentation"),
    v4(192, 88, 99, 0, 24, "6to4 relay anycast"),
    v4(192, 168, 0, 0, 16, "private"),
    v4(198, 18, 0, 0, 15, "benchmarking"),
    v4(198, 51, 100, 0, 24, "documentation"),
    v4(203, 0, 113, 0, 24, "documentation"),
    v4(224, 0, 0, 0, 4, "multicast"),
    v4(255, 255, 255, 255, 32, "broadcast"),
    v4(240, 0, 0, 0, 4, "reserved"),
];

/// IPv6 special-purpose ranges that are refused (IANA IPv6 Special-Purpose
/// Address Registry). `::` and `::1` are handled before the embedded-IPv4
/// forms; anything outside 2000::/3 that is not listed is refused as
/// "reserved". The first matching entry names the category.
static V6_REFUSED: [(Ipv6Net, &str); 14] = [
    v6([0, 0, 0, 0, 0, 0, 0, 0], 128, "unspecified"),
    v6([0, 0, 0, 0, 0, 0, 0, 1], 128, "loopback"),
    v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, "local-use NAT64"),
    v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "discard-only"),
    v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 32, "Teredo"),
    v6([0x2001, 2, 0, 0, 0, 0, 0, 0], 48, "benchmarking"),
    v6(
        [0x2001, 0, 0, 0, 0, 0, 0, 0],
        23,
        "IETF protocol assignment",
    ),
    v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, "documentation"),
    v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, "documentation"),
    v6([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16, "SRv6 SID"),
    v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "unique-local"),
    v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "link-local"),
    v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, "site-local"),
    v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "multicast"),
];

/// IPv6 global unicast space; public IPv6 addresses live here.
const V6_GLOBAL_UNICAST: (Ipv6Net, &str) = v6([0x2000, 0, 0, 0, 0, 0, 0, 0], 3, "global unicast");
/// NAT64 well-known prefix: the IPv4 address is the last 32 bits.
const V6_NAT64: (Ipv6Net, &str) = v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96, "NAT64");
/// 6to4: the IPv4 address is bits 16..48.
const V6_6TO4: (Ipv6Net, &str) = v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16, "6to4");
/// IPv4-compatible (deprecated): the IPv4 address is the last 32 bits.
const V6_V4_COMPATIBLE: (Ipv6Net, &str) = v6([0, 0, 0, 0, 0, 0, 0, 0], 96, "IPv4-compatible");

/// The IPv4 address an IPv6 address stands for, if it is one of the forms
/// that embed one: v4-mapped (`::ffff:0:0/96`), v4-compatible (`::/96`,
/// except `::` and `::1`), NAT64 (`64:ff9b::/96`) or 6to4 (`2002::/16`).
fn embedded_ipv4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let bits = u128::from(v6);
    let low32 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    if V6_NAT64.0.contains(&v6) {
        return Some(low32);
    }
    if V6_6TO4.0.contains(&v6) {
        return Some(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32));
    }
    if V6_V4_COMPATIBLE.0.contains(&v6) && !v6.is_unspecified() && !v6.is_loopback() {
        return Some(low32);
    }
    None
}

fn classify_v4(ip: Ipv4Addr) -> Option<&'static str> {
    V4_REFUSED
        .iter()
        .find(|(net, _)| net.contains(&ip))
        .map(|&(_, category)| category)
}

/// The class of a refused address, or `None` for a public unicast address.
fn classify(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => {
            if v6.is_unspecified() {
                return Some("unspecified");
            }
            if v6.is_loopback() {
                return Some("loopback");
            }
            if let Some(v4) = embedded_ipv4(v6) {
                return classify_v4(v4);
            }
            if let Some(&(_, category)) = V6_REFUSED.iter().find(|(net, _)| net.contains(&v6)) {
                return Some(category);
            }
            if !V6_GLOBAL_UNICAST.0.contains(&v6) {
                return Some("reserved");
            }
            None
        }
    }
}

impl AddressPolicy {
    /// A policy that additionally allows the given networks.
    pub fn new(allow: Vec<IpNet>) -> Self {
        Self {
            allow: allow.into_iter().map(|net| net.trunc()).collect(),
        }
    }

    /// Parses an operator allow-list: comma/whitespace separated CIDRs or
    /// bare IPs (`"127.0.0.1, ::1/128, 10.0.0.0/8"`). An empty spec allows
    /// nothing beyond public addresses.
    pub fn parse_allow_list(spec: &str) -> Result<Self, String> {
        let allow = spec
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                entry
                    .parse::<IpNet>()
                    .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| {
                        format!("invalid allow-list entry {entry:?}: expected an IP address or a CIDR such as 10.0.0.0/8")
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::new(allow))
    }

    /// The allow-listed networks.
    pub fn allow_list(&self) -> &[IpNet] {
        &self.allow
    }

    /// Checks a URL's form: http or https only, a host present, and when the
    /// host is an IP literal, that it is allowed. Returns the parsed URL.
    /// Hostnames are NOT resolved here.
    pub fn check_url(&self, url: &str) -> Result<Url, PolicyError> {
        let parsed = Url::parse(url).map_err(|err| PolicyError::InvalidUrl(err.to_string()))?;
        match parsed.scheme() {
            "http" | "https" => {}
            other => return Err(PolicyError::UnsupportedScheme(other.to_owned())),
        }
        let literal = match parsed.host() {
            None => return Err(PolicyError::MissingHost),
            Some(Host::Domain("")) => {
                return Err(PolicyError::MissingHost);
            }
            Some(Host::Domain(_)) => None,
            Some(Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
            Some(Host::Ipv6(v6)) => Some(IpAddr::V6(v6)),
        };
        if let Some(ip) = literal {
            self.check_ip(parsed.host_str().unwrap_or_default(), ip)?;
        }
        Ok(parsed)
    }

    /// Whether an address may be dialled: allowed when it is a public unicast
    /// address or inside the allow-list. `host` only names the address in
    /// the error.
    pub fn check_ip(&self, host: &str, ip: IpAddr) -> Result<(), PolicyError> {
        if self.is_allow_listed(ip) {
            return Ok(());
        }
        match classify(ip) {
            None => Ok(()),
            Some(category) => Err(PolicyError::Blocked {
                host: host.to_owned(),
                addr: ip,
                category,
            }),
        }
    }

    /// check_url, then resolves the host (`tokio::net::lookup_host`) and
    /// checks EVERY resolved address; refuses if any is refused. Returns the
    /// parsed URL. IP-literal hosts are not resolved.
    pub async fn check_url_resolved(&self, url: &str) -> Result<Url, PolicyError> {
        let parsed = self.check_url(url)?;
        if let Some(Host::Domain(domain)) = parsed.host() {
            self.resolve_host(domain, parsed.port_or_known_default().unwrap_or(0))
                .await?;
        }
        Ok(parsed)
    }

    /// Resolves `host` and checks every address; returns them all only when
    /// all are allowed (one refused address refuses the host, so a name
    /// cannot smuggle an internal address among public ones).
    pub async fn resolve_host(
        &self,
        host: &str,
        port: u16,
    ) -> Result<Vec<SocketAddr>, PolicyError> {
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|err| PolicyError::Unresolvable(format!("{host}: {err}")))?
            .collect();
        if addrs.is_empty() {
            return Err(PolicyError::Unresolvable(format!("{host}: no addresses")));
        }
        for addr in &addrs {
            self.check_ip(host, addr.ip())?;
        }
        Ok(addrs)
    }

    /// Whether the address, or the IPv4 address it embeds, is allow-listed.
    fn is_allow_listed(&self, ip: IpAddr) -> bool {
        let listed = |ip: IpAddr| self.allow.iter().any(|net| net.contains(&ip));
        listed(ip)
            || match ip {
                IpAddr::V6(v6) => embedded_ipv4(v6).is_some_and(|v4| listed(IpAddr::V4(v4))),
                IpAddr::V4(_) => false,
            }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;

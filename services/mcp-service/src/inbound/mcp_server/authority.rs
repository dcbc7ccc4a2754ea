//! The `Host` a request names, parsed as RFC 3986's `host [ ":" port ]`
//! (RFC 9110 section 7.2) before it is compared with the allowed hosts or
//! written into a URL: an IPv6 literal in brackets, an IPv4 address or a
//! registered name of letters, digits, `-` and `.`, then an optional port of
//! digits. Anything else (user information, a second host after a bracket,
//! percent-encoding, spaces) is no host at all, so that what is compared is
//! exactly what a URL parser reading the reflected URL would see.

use std::{
    fmt,
    net::{Ipv4Addr, Ipv6Addr},
};

/// A host and optional port, lowercased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Authority {
    host: Host,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    /// A registered name or an IPv4 address, lowercased.
    Name(String),
    /// An IPv6 literal, written in brackets.
    Ipv6(Ipv6Addr),
}

impl Authority {
    /// `text` as `host [ ":" port ]`, or `None` when it is anything else.
    pub(super) fn parse(text: &str) -> Option<Self> {
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (literal, after) = rest.split_once(']')?;
            let host = Host::Ipv6(literal.parse().ok()?);
            (host, port_after(after)?)
        } else {
            let (name, port) = match text.split_once(':') {
                Some((name, port)) => (name, Some(parse_port(port)?)),
                None => (text, None),
            };
            (Host::Name(registered_name(name)?), port)
        };
        Some(Self { host, port })
    }

    /// An allowed-hosts entry: an authority, or a bare IPv6 address
    /// (`::1`) as operators write it.
    pub(super) fn parse_entry(text: &str) -> Option<Self> {
        match text.parse::<Ipv6Addr>() {
            Ok(address) => Some(Self {
                host: Host::Ipv6(address),
                port: None,
            }),
            Err(_) => Self::parse(text),
        }
    }

    /// Whether `self`, an allowed-hosts entry, admits `requested`: the
    /// same host, and the same port when the entry names one.
    pub(super) fn admits(&self, requested: &Self) -> bool {
        self.host == requested.host && (self.port.is_none() || self.port == requested.port)
    }
}

impl fmt::Display for Authority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Host::Name(name) => f.write_str(name)?,
            Host::Ipv6(address) => write!(f, "[{address}]")?,
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

/// The port after an IPv6 literal's closing bracket: nothing, or `:`
/// and digits.
fn port_after(after: &str) -> Option<Option<u16>> {
    if after.is_empty() {
        return Some(None);
    }
    parse_port(after.strip_prefix(':')?).map(Some)
}

/// A port: one to five digits, at most 65535.
fn parse_port(port: &str) -> Option<u16> {
    if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    port.parse().ok()
}

/// A registered name (or IPv4 address) of letters, digits, `-` and `.`,
/// each label non-empty and at most 63 bytes, 253 bytes in all; lowercased.
fn registered_name(name: &str) -> Option<String> {
    if name.parse::<Ipv4Addr>().is_ok() {
        return Some(name.to_owned());
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    let valid = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    valid.then(|| name.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_ports_parse_and_print_back_normalised() {
        for (text, printed) in [
            ("localhost", "localhost"),
            ("LocalHost:3000", "localhost:3000"),
            ("mcp.example.com.", "mcp.example.com"),
            ("127.0.0.1:8080", "127.0.0.1:8080"),
            ("[::1]", "[::1]"),
            ("[0:0::1]:9000", "[::1]:9000"),
        ] {
            let authority = Authority::parse(text).unwrap_or_else(|| panic!("{text} parses"));
            assert_eq!(authority.to_string(), printed);
        }
    }

    #[test]
    fn anything_but_host_and_port_is_no_authority() {
        for text in [
            "[localhost]evil.example",
            "[::1]@evil.example",
            "[::1]evil.example",
            "user@localhost",
            "localhost@evil.example",
            "localhost:80:80",
            "localhost:",
            "localhost:99999",
            "localhost:+80",
            "evil%2eexample",
            "local host",
            "",
            "[::1",
            "[localhost]",
            "a..b",
            "localhost/evil",
            "localhost\\evil",
            "localhost#x",
        ] {
            assert_eq!(Authority::parse(text), None, "{text:?}");
        }
    }

    #[test]
    fn an_entry_admits_its_host_on_any_port_or_its_exact_port() {
        let any_port = Authority::parse_entry("localhost").expect("entry");
        let one_port = Authority::parse_entry("mcp.example.com:8443").expect("entry");
        let loopback = Authority::parse_entry("::1").expect("entry");
        let parse = |text| Authority::parse(text).expect("authority");
        assert!(any_port.admits(&parse("localhost:3000")));
        assert!(one_port.admits(&parse("mcp.example.com:8443")));
        assert!(!one_port.admits(&parse("mcp.example.com:443")));
        assert!(!one_port.admits(&parse("mcp.example.com")));
        assert!(loopback.admits(&parse("[::1]:8080")));
        assert!(!any_port.admits(&parse("localhost.evil.example")));
    }
}

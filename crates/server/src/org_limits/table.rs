//! The limits of each organization: one set for all, and overrides per
//! organization in a TOML file a platform operator mounts
//! (`SWITCHBOARD_ORG_LIMITS_FILE`), read and checked once at start.

use std::{
    collections::HashMap,
    num::{NonZeroU32, NonZeroU64, NonZeroUsize},
    path::Path,
};

use anyhow::{Context as _, ensure};
use serde::Deserialize;

/// The largest limits file read.
const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// The most organizations one limits file names.
const MAX_ORGANIZATIONS: usize = 10_000;

/// How many calls one organization may make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrgLimits {
    /// Calls in flight at once.
    pub concurrency: usize,
    /// Calls per second on average.
    pub rate: NonZeroU32,
    /// Calls at once above the rate.
    pub burst: NonZeroU32,
    /// Upstream MCP sessions open at once (mcp-service); none: the
    /// service's own setting.
    pub sessions: Option<usize>,
    /// Stdio MCP server processes running at once, within the sessions
    /// (mcp-service); none: the service's own setting.
    pub stdio_processes: Option<usize>,
    /// CSV bytes the organization's data sources hold in all
    /// (runs-service); none: the service's own setting.
    pub data_source_bytes: Option<u64>,
}

/// The limits of every organization: the defaults, and the organizations
/// whose own limits differ.
#[derive(Debug, Clone)]
pub struct OrgLimitTable {
    defaults: OrgLimits,
    overrides: HashMap<String, OrgLimits>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsFile {
    #[serde(default)]
    orgs: HashMap<String, OrgOverride>,
}

/// Each field left out keeps the default.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OrgOverride {
    concurrency: Option<NonZeroUsize>,
    rate: Option<NonZeroU32>,
    burst: Option<NonZeroU32>,
    sessions: Option<NonZeroUsize>,
    stdio_processes: Option<NonZeroUsize>,
    data_source_bytes: Option<NonZeroU64>,
}

impl OrgLimitTable {
    /// `defaults` for every organization.
    pub fn uniform(defaults: OrgLimits) -> Self {
        Self {
            defaults,
            overrides: HashMap::new(),
        }
    }

    /// `defaults`, overridden per organization by the TOML file at `path`
    /// (`[orgs."<org id>"]` with `concurrency`, `rate`, `burst`, for
    /// mcp-service `sessions` and `stdio_processes`, for runs-service
    /// `data_source_bytes`, each optional and at least 1). A file past its bounds, with an unknown key
    /// or a value out of range is refused.
    pub fn read(defaults: OrgLimits, path: &Path) -> anyhow::Result<Self> {
        let shown = path.display();
        let size = std::fs::metadata(path)
            .with_context(|| format!("SWITCHBOARD_ORG_LIMITS_FILE {shown}"))?
            .len();
        ensure!(
            size <= MAX_FILE_BYTES,
            "SWITCHBOARD_ORG_LIMITS_FILE {shown} is larger than {MAX_FILE_BYTES} bytes"
        );
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("SWITCHBOARD_ORG_LIMITS_FILE {shown}"))?;
        let file: LimitsFile = toml::from_str(&text)
            .with_context(|| format!("SWITCHBOARD_ORG_LIMITS_FILE {shown}"))?;
        ensure!(
            file.orgs.len() <= MAX_ORGANIZATIONS,
            "SWITCHBOARD_ORG_LIMITS_FILE {shown} names more than {MAX_ORGANIZATIONS} organizations"
        );
        let overrides = file
            .orgs
            .into_iter()
            .map(|(org, o)| {
                let limits = OrgLimits {
                    concurrency: o
                        .concurrency
                        .map_or(defaults.concurrency, NonZeroUsize::get),
                    rate: o.rate.unwrap_or(defaults.rate),
                    burst: o.burst.unwrap_or(defaults.burst),
                    sessions: o.sessions.map(NonZeroUsize::get).or(defaults.sessions),
                    stdio_processes: o
                        .stdio_processes
                        .map(NonZeroUsize::get)
                        .or(defaults.stdio_processes),
                    data_source_bytes: o
                        .data_source_bytes
                        .map(NonZeroU64::get)
                        .or(defaults.data_source_bytes),
                };
                (org, limits)
            })
            .collect();
        Ok(Self {
            defaults,
            overrides,
        })
    }

    /// The limits of `org`.
    pub fn of(&self, org: &str) -> OrgLimits {
        self.overrides.get(org).copied().unwrap_or(self.defaults)
    }

    /// The limits every organization without an override has.
    pub fn defaults(&self) -> OrgLimits {
        self.defaults
    }

    /// The organizations with limits of their own.
    pub fn overrides(&self) -> impl Iterator<Item = (&str, &OrgLimits)> {
        self.overrides.iter().map(|(org, l)| (org.as_str(), l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> OrgLimits {
        OrgLimits {
            concurrency: 256,
            rate: NonZeroU32::new(1000).expect("not zero"),
            burst: NonZeroU32::new(2000).expect("not zero"),
            sessions: None,
            stdio_processes: None,
            data_source_bytes: None,
        }
    }

    fn file(text: &str) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().expect("a file");
        std::fs::write(file.path(), text).expect("written");
        file
    }

    #[test]
    fn the_file_overrides_the_defaults_field_by_field() {
        let f = file(
            "[orgs.big]\nconcurrency = 1000\nrate = 5000\nburst = 9000\n\
             sessions = 40\nstdio_processes = 4\ndata_source_bytes = 5000000000\n\
             [orgs.\"trial-1\"]\nconcurrency = 2\n",
        );
        let table = OrgLimitTable::read(defaults(), f.path()).expect("read");
        assert_eq!(table.of("big").concurrency, 1000);
        assert_eq!(table.of("big").rate.get(), 5000);
        assert_eq!(table.of("big").burst.get(), 9000);
        assert_eq!(table.of("big").sessions, Some(40));
        assert_eq!(table.of("big").stdio_processes, Some(4));
        assert_eq!(table.of("big").data_source_bytes, Some(5_000_000_000));
        let trial = table.of("trial-1");
        assert_eq!(trial.concurrency, 2);
        assert_eq!(
            (trial.rate, trial.burst),
            (defaults().rate, defaults().burst)
        );
        assert_eq!(table.of("anyone"), defaults());
        assert_eq!(table.overrides().count(), 2);
    }

    #[test]
    fn a_file_naming_the_most_organizations_and_of_the_largest_size_is_read() {
        let most: String = (0..MAX_ORGANIZATIONS)
            .map(|i| format!("[orgs.o{i}]\nconcurrency = 1\n"))
            .collect();
        let f = file(&most);
        let table = OrgLimitTable::read(defaults(), f.path()).expect("read");
        assert_eq!(table.overrides().count(), MAX_ORGANIZATIONS);

        let mut largest = "[orgs.a]\nrate = 1\n".to_owned();
        let padding = usize::try_from(MAX_FILE_BYTES).expect("fits") - largest.len();
        largest.push_str(&"#".repeat(padding));
        let f = file(&largest);
        let table = OrgLimitTable::read(defaults(), f.path()).expect("a file of the largest size");
        assert_eq!(table.of("a").rate.get(), 1);
    }

    #[test]
    fn a_file_with_an_unknown_key_a_value_below_one_or_past_its_bounds_is_refused() {
        let cases = [
            ("[orgs.a]\nconcurency = 5\n".to_owned(), "concurency"),
            ("[limits.a]\nconcurrency = 5\n".to_owned(), "limits"),
            ("[orgs.a]\nconcurrency = 0\n".to_owned(), "nonzero"),
            ("[orgs.a]\nrate = 0\n".to_owned(), "nonzero"),
            ("[orgs.a]\nsessions = 0\n".to_owned(), "nonzero"),
            ("[orgs.a]\ndata_source_bytes = 0\n".to_owned(), "nonzero"),
            (
                "[orgs.a]\nstdio_processes = -1\n".to_owned(),
                "stdio_processes",
            ),
            ("[orgs.a]\nburst = -3\n".to_owned(), "burst"),
            ("[orgs.a]\nrate = \"fast\"\n".to_owned(), "rate"),
            (
                "#".repeat(usize::try_from(MAX_FILE_BYTES).expect("fits") + 1),
                "larger than",
            ),
            (
                (0..=MAX_ORGANIZATIONS)
                    .map(|i| format!("[orgs.o{i}]\nconcurrency = 1\n"))
                    .collect(),
                "more than 10000",
            ),
        ];
        for (text, expected) in cases {
            let f = file(&text);
            let error = OrgLimitTable::read(defaults(), f.path()).expect_err("refused");
            let shown = format!("{error:#}");
            assert!(shown.contains("SWITCHBOARD_ORG_LIMITS_FILE"), "{shown}");
            assert!(shown.contains(expected), "{expected}: {shown}");
        }
        let missing = OrgLimitTable::read(defaults(), Path::new("/nonexistent/limits.toml"));
        assert!(missing.is_err());
    }
}

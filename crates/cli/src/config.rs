//! The config file, and the settings that result from flags, the
//! environment, the file and the defaults, in that order.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use serde::Deserialize;

use crate::{args::ConnectionArgs, error::CliError};

/// Default mcp-service address (what `make run` and `make demo` listen on).
pub const DEFAULT_MCP_ADDR: &str = "http://127.0.0.1:50051";
/// Default runs-service address.
pub const DEFAULT_RUNS_ADDR: &str = "http://127.0.0.1:50052";
/// Largest config or token file read; they hold a few lines.
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// The keys of the config file (TOML).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    mcp_addr: Option<String>,
    runs_addr: Option<String>,
    token: Option<String>,
    token_file: Option<PathBuf>,
}

/// Where to connect and as whom.
#[derive(Debug, Clone)]
pub struct Settings {
    /// mcp-service address, with its scheme.
    pub mcp_addr: String,
    /// runs-service address, with its scheme.
    pub runs_addr: String,
    /// The bearer token, when one was given.
    pub token: Option<String>,
    /// Deadline of unary calls.
    pub timeout: Duration,
}

impl Settings {
    /// Resolves the settings: flags and environment first, then the config
    /// file, then the defaults.
    pub fn resolve(args: &ConnectionArgs) -> Result<Self, CliError> {
        let file = match &args.config {
            Some(path) => load(path)?,
            None => match default_path().filter(|path| path.exists()) {
                Some(path) => load(&path)?,
                None => FileConfig::default(),
            },
        };
        let token = match (&args.token, file.token, &file.token_file) {
            (Some(token), _, _) => Some(token.clone()),
            (None, Some(token), _) => Some(token),
            (None, None, Some(path)) => Some(read_small(path)?),
            (None, None, None) => None,
        };
        Ok(Self {
            mcp_addr: with_scheme(
                args.mcp_addr
                    .clone()
                    .or(file.mcp_addr)
                    .unwrap_or_else(|| DEFAULT_MCP_ADDR.to_owned()),
            ),
            runs_addr: with_scheme(
                args.runs_addr
                    .clone()
                    .or(file.runs_addr)
                    .unwrap_or_else(|| DEFAULT_RUNS_ADDR.to_owned()),
            ),
            token: token
                .map(|token| token.trim().to_owned())
                .filter(|token| !token.is_empty()),
            timeout: args.timeout.into(),
        })
    }
}

/// `$XDG_CONFIG_HOME/switchboard/config.toml`, else under `~/.config`.
fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(base.join("switchboard").join("config.toml"))
}

fn load(path: &Path) -> Result<FileConfig, CliError> {
    let text = read_small(path)?;
    toml::from_str(&text).map_err(|error| {
        CliError::Usage(format!(
            "config file {}: {}",
            path.display(),
            crate::error::one_line(error.message())
        ))
    })
}

fn read_small(path: &Path) -> Result<String, CliError> {
    let unreadable =
        |error: std::io::Error| CliError::Usage(format!("cannot read {}: {error}", path.display()));
    let size = std::fs::metadata(path).map_err(unreadable)?.len();
    if size > MAX_FILE_BYTES {
        return Err(CliError::Usage(format!(
            "{} is {size} bytes; at most {MAX_FILE_BYTES} are read",
            path.display()
        )));
    }
    std::fs::read_to_string(path).map_err(unreadable)
}

/// Plain host:port means plaintext HTTP/2.
fn with_scheme(addr: String) -> String {
    if addr.contains("://") {
        addr
    } else {
        format!("http://{addr}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(config: Option<PathBuf>) -> ConnectionArgs {
        ConnectionArgs {
            mcp_addr: None,
            runs_addr: Some("127.0.0.1:7".into()),
            token: None,
            config,
            timeout: Duration::from_secs(1).into(),
        }
    }

    #[test]
    fn flags_win_over_the_file_and_the_file_over_defaults() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, "jwt-from-file\n").expect("written");
        let config = dir.path().join("config.toml");
        std::fs::write(
            &config,
            format!(
                "mcp_addr = \"http://10.0.0.1:1\"\nruns_addr = \"http://10.0.0.1:2\"\ntoken_file = {:?}\n",
                token_file
            ),
        )
        .expect("written");
        let settings = Settings::resolve(&args(Some(config))).expect("resolves");
        assert_eq!(settings.mcp_addr, "http://10.0.0.1:1");
        assert_eq!(settings.runs_addr, "http://127.0.0.1:7");
        assert_eq!(settings.token.as_deref(), Some("jwt-from-file"));
    }

    #[test]
    fn an_unknown_key_is_a_usage_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let config = dir.path().join("config.toml");
        std::fs::write(&config, "tokn = \"x\"\n").expect("written");
        let error = Settings::resolve(&args(Some(config))).expect_err("refused");
        assert_eq!(error.exit_code(), 2);
        assert!(error.to_string().contains("config.toml"), "{error}");
    }
}

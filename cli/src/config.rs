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
    ca_file: Option<PathBuf>,
    client_cert_file: Option<PathBuf>,
    client_key_file: Option<PathBuf>,
}

/// What TLS connections trust and present, read from PEM files.
#[derive(Debug, Clone, Default)]
pub struct TlsFiles {
    /// CAs trusted besides the system's.
    pub ca_pem: Option<String>,
    /// The client certificate and key, for mutual TLS.
    pub identity: Option<(String, String)>,
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
    /// What `https://` connections trust and present.
    pub tls: TlsFiles,
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
        let tls = tls_files(args, &file)?;
        let token = match (&args.token, file.token, &file.token_file) {
            (Some(token), _, _) => Some(token.clone()),
            (None, Some(token), _) => Some(token),
            (None, None, Some(path)) => Some(read_small(path)?),
            (None, None, None) => None,
        };
        let settings = Self {
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
            tls,
        };
        if settings.token.is_some() && !args.insecure_plaintext {
            for addr in [&settings.mcp_addr, &settings.runs_addr] {
                refuse_plaintext_off_loopback(addr)?;
            }
        }
        Ok(settings)
    }
}

/// The CA and client certificate files named by flags, else the file.
fn tls_files(args: &ConnectionArgs, file: &FileConfig) -> Result<TlsFiles, CliError> {
    let ca = args.ca_file.as_ref().or(file.ca_file.as_ref());
    let cert = args.client_cert.as_ref().or(file.client_cert_file.as_ref());
    let key = args.client_key.as_ref().or(file.client_key_file.as_ref());
    let identity = match (cert, key) {
        (Some(cert), Some(key)) => Some((read_small(cert)?, read_small(key)?)),
        (None, None) => None,
        _ => {
            return Err(CliError::Usage(
                "--client-cert and --client-key go together".into(),
            ));
        }
    };
    Ok(TlsFiles {
        ca_pem: ca.map(|path| read_small(path)).transpose()?,
        identity,
    })
}

/// A token sent as plaintext leaves the machine readable by anyone on the
/// path, so `http://` is for loopback only unless `--insecure-plaintext`.
fn refuse_plaintext_off_loopback(addr: &str) -> Result<(), CliError> {
    let url = url::Url::parse(addr)
        .map_err(|error| CliError::Usage(format!("address {addr:?}: {error}")))?;
    if url.scheme() == "http" && !is_loopback(&url) {
        return Err(CliError::Usage(format!(
            "{addr} is plaintext to a host that is not loopback and the token would travel \
             unencrypted: use https://, or pass --insecure-plaintext to send it anyway"
        )));
    }
    Ok(())
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
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

/// Plain host:port means TLS, except on loopback (the local demo), where it
/// means plaintext HTTP/2.
fn with_scheme(addr: String) -> String {
    if addr.contains("://") {
        return addr;
    }
    let plaintext = format!("http://{addr}");
    match url::Url::parse(&plaintext) {
        Ok(url) if is_loopback(&url) => plaintext,
        _ => format!("https://{addr}"),
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
            insecure_plaintext: false,
            ca_file: None,
            client_cert: None,
            client_key: None,
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
                "mcp_addr = \"https://10.0.0.1:1\"\nruns_addr = \"https://10.0.0.1:2\"\ntoken_file = {:?}\n",
                token_file
            ),
        )
        .expect("written");
        let settings = Settings::resolve(&args(Some(config))).expect("resolves");
        assert_eq!(settings.mcp_addr, "https://10.0.0.1:1");
        assert_eq!(settings.runs_addr, "http://127.0.0.1:7");
        assert_eq!(settings.token.as_deref(), Some("jwt-from-file"));
    }

    #[test]
    fn an_address_without_a_scheme_is_tls_unless_loopback() {
        assert_eq!(with_scheme("10.0.0.1:1".into()), "https://10.0.0.1:1");
        assert_eq!(
            with_scheme("switchboard.example.com:443".into()),
            "https://switchboard.example.com:443"
        );
        assert_eq!(with_scheme("127.0.0.1:7".into()), "http://127.0.0.1:7");
        assert_eq!(with_scheme("[::1]:7".into()), "http://[::1]:7");
        assert_eq!(with_scheme("localhost:7".into()), "http://localhost:7");
        assert_eq!(with_scheme("http://10.0.0.1:1".into()), "http://10.0.0.1:1");
    }

    #[test]
    fn a_token_is_not_sent_as_plaintext_off_loopback_unless_asked() {
        let mut args = args(None);
        args.token = Some("jwt".into());
        args.mcp_addr = Some("http://10.0.0.1:1".into());
        let error = Settings::resolve(&args).expect_err("refused");
        assert_eq!(error.exit_code(), 2);
        assert!(
            error.to_string().contains("--insecure-plaintext"),
            "{error}"
        );
        assert!(!error.to_string().contains("jwt"), "{error}");

        args.mcp_addr = Some("http://localhost:1".into());
        Settings::resolve(&args).expect("loopback plaintext is the demo's default");
        args.mcp_addr = Some("https://10.0.0.1:1".into());
        Settings::resolve(&args).expect("TLS");
        args.mcp_addr = Some("http://10.0.0.1:1".into());
        args.insecure_plaintext = true;
        Settings::resolve(&args).expect("asked for");
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

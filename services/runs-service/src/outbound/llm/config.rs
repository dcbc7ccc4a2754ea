//! Which model providers runs-service talks to, and how.

use std::{collections::HashSet, time::Duration};

use anyhow::{Context as _, bail, ensure};
use secrecy::{ExposeSecret as _, SecretString};

use super::StreamLimits;

/// Default for [`ProviderConfig::connect_timeout`].
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for [`ProviderConfig::request_timeout`]: long prompts can take a
/// while before the first token.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// Default for [`ProviderConfig::max_retries`].
pub const DEFAULT_MAX_RETRIES: u32 = 3;

/// The wire API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// OpenAI Chat Completions, as served by OpenAI, Ollama, vLLM, llama.cpp
    /// and others.
    OpenAiCompatible,
    /// Anthropic Messages.
    Anthropic,
}

/// One configured model provider.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// Name runs refer to the provider by.
    pub name: String,
    /// Wire API of the provider.
    pub kind: ProviderKind,
    /// API base URL, e.g. `http://host/v1`.
    pub base_url: String,
    /// API key, when the provider needs one.
    pub api_key: Option<SecretString>,
    /// Budget for establishing a connection. The HTTP client is shared and
    /// pools connections, so it is added to `request_timeout` as the
    /// deadline for the response headers.
    pub connect_timeout: Duration,
    /// How long the provider may take to start answering (time to first
    /// byte). The stream that follows is bounded by `limits`.
    pub request_timeout: Duration,
    /// Retries of the request phase after the first attempt.
    pub max_retries: u32,
    /// Limits of one call: time, idle time and size of its answer.
    pub limits: StreamLimits,
    /// Send the tools whose schemas have a strict form with `"strict": true`
    /// (OpenAI-compatible providers; see `schema::openai_strict`). On by
    /// default; `strict_tools=off` turns it off for a server that refuses the
    /// field.
    pub strict_tools: bool,
}

impl ProviderConfig {
    /// A provider with no API key and the default timeouts and retries.
    pub fn new(name: impl Into<String>, kind: ProviderKind, base_url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            kind,
            base_url: base_url.into(),
            api_key: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_retries: DEFAULT_MAX_RETRIES,
            limits: StreamLimits::default(),
            strict_tools: true,
        }
    }
}

/// Parses `name=kind,base_url[,api_key_env=VAR][,strict_tools=on|off]`
/// entries separated by `;` (kinds: `openai`, `anthropic`), reading API keys
/// from the named env vars,
/// e.g. `local=openai,http://127.0.0.1:8090/v1;claude=anthropic,https://api.anthropic.com/v1,api_key_env=ANTHROPIC_API_KEY`.
///
/// Timeouts, retries and stream limits take their defaults. Empty entries are skipped; an
/// unknown kind or option, a duplicate name, a base URL that is not an
/// http(s) URL, or an API key variable that is unset or empty is an error.
pub fn parse_providers(spec: &str) -> anyhow::Result<Vec<ProviderConfig>> {
    let mut providers = Vec::new();
    let mut names = HashSet::new();
    for entry in spec
        .split(';')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
    {
        let provider = parse_entry(entry).with_context(|| format!("model provider `{entry}`"))?;
        ensure!(
            names.insert(provider.name.clone()),
            "model provider `{}` is configured twice",
            provider.name
        );
        providers.push(provider);
    }
    Ok(providers)
}

fn parse_entry(entry: &str) -> anyhow::Result<ProviderConfig> {
    let (name, rest) = entry
        .split_once('=')
        .context("expected `name=kind,base_url[,api_key_env=VAR]`")?;
    let name = name.trim();
    ensure!(!name.is_empty(), "the name is empty");
    let mut parts = rest.split(',').map(str::trim);
    let kind = match parts.next().unwrap_or_default() {
        "openai" => ProviderKind::OpenAiCompatible,
        "anthropic" => ProviderKind::Anthropic,
        other => bail!("unknown kind `{other}` (expected `openai` or `anthropic`)"),
    };
    let base_url = parts.next().unwrap_or_default();
    let parsed = reqwest::Url::parse(base_url)
        .with_context(|| format!("base url `{base_url}` is not a url"))?;
    ensure!(
        matches!(parsed.scheme(), "http" | "https"),
        "base url `{base_url}` is not http or https"
    );

    let mut config = ProviderConfig::new(name, kind, base_url);
    for option in parts {
        let (key, value) = option.split_once('=').unwrap_or((option, ""));
        match key.trim() {
            "api_key_env" => config.api_key = Some(read_api_key(value.trim())?),
            "strict_tools" => {
                config.strict_tools = match value.trim() {
                    "on" => true,
                    "off" => false,
                    other => bail!("strict_tools is `on` or `off`, not `{other}`"),
                };
            }
            other => bail!(
                "unknown option `{other}` (expected `api_key_env=VAR` or `strict_tools=on|off`)"
            ),
        }
    }
    Ok(config)
}

fn read_api_key(var: &str) -> anyhow::Result<SecretString> {
    ensure!(!var.is_empty(), "api_key_env names no variable");
    let key = std::env::var(var).with_context(|| format!("env var {var} is not set"))?;
    let key = SecretString::from(key);
    let exposed = key.expose_secret();
    ensure!(!exposed.is_empty(), "env var {var} is empty");
    // Checked here so that a key that cannot go into a header fails at
    // startup instead of on every request. The message names only the
    // variable.
    ensure!(
        reqwest::header::HeaderValue::from_str(exposed).is_ok(),
        "env var {var} holds characters that cannot be sent in an http header"
    );
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_entries_with_and_without_keys() {
        // Setting a variable is unsafe while other test threads run, so the
        // key comes from one every test process already has.
        let var = "PATH";
        let spec = format!(
            " local=openai,http://127.0.0.1:8090/v1 ; claude=anthropic,https://api.anthropic.com/v1,api_key_env={var};"
        );
        let providers = parse_providers(&spec).expect("valid spec");
        assert_eq!(providers.len(), 2);
        assert_eq!(providers[0].name, "local");
        assert_eq!(providers[0].kind, ProviderKind::OpenAiCompatible);
        assert_eq!(providers[0].base_url, "http://127.0.0.1:8090/v1");
        assert!(providers[0].api_key.is_none());
        assert_eq!(providers[0].max_retries, DEFAULT_MAX_RETRIES);
        assert!(providers[0].strict_tools, "strict tools are on by default");
        assert_eq!(providers[1].kind, ProviderKind::Anthropic);
        let key = providers[1].api_key.as_ref().expect("key read");
        assert_eq!(
            key.expose_secret(),
            std::env::var(var).expect("PATH is set")
        );
        assert!(
            !format!("{:?}", providers[1]).contains(key.expose_secret()),
            "debug output hides the key"
        );
    }

    #[test]
    fn strict_tools_can_be_turned_off() {
        let providers = parse_providers("local=openai,http://127.0.0.1:8090/v1,strict_tools=off")
            .expect("valid spec");
        assert!(!providers[0].strict_tools);
    }

    #[test]
    fn rejects_bad_entries() {
        for spec in [
            "local",
            "=openai,http://x/v1",
            "local=gemini,http://x/v1",
            "local=openai",
            "local=openai,ftp://x/v1",
            "local=openai,http://x/v1,timeout=3",
            "local=openai,http://x/v1,strict_tools=maybe",
            "local=openai,http://x/v1,api_key_env=SWITCHBOARD_SURELY_UNSET_VARIABLE",
            "a=openai,http://x/v1;a=anthropic,http://y/v1",
        ] {
            assert!(parse_providers(spec).is_err(), "{spec} should be rejected");
        }
        assert!(parse_providers("").expect("empty is fine").is_empty());
    }
}

//! Environment names no stdio integration may set, whatever the operator's
//! allow-list says: they make a runtime load code or libraries, change which
//! program runs, or redirect or weaken the child's connections.

/// Environment names no integration may set, matched on the upper-cased
/// name. Prefixes cover families (`LD_AUDIT`, `PYTHONSTARTUP`, `NPM_CONFIG_*`).
const REFUSED_ENV_PREFIXES: &[&str] = &[
    // The dynamic linker loads libraries and audit modules.
    "LD_",
    "DYLD_",
    "GCONV",
    "MALLOC_",
    "GLIBC_",
    // Runtimes that load code or options from the environment.
    "NODE_",
    "NPM_CONFIG_",
    "YARN_",
    "BUN_",
    "DENO_",
    "PYTHON",
    "PIP_",
    "UV_",
    "PERL",
    "RUBY",
    "GEM_",
    "BUNDLE_",
    "JAVA_",
    "_JAVA_",
    "JDK_",
    "LUA_",
    "PHP",
    "BASH_",
    "GIT_",
    "CARGO_",
    "RUSTC",
    "ELECTRON_",
];

/// Exceptions to the prefixes: conventional, harmless switches.
const PERMITTED_DESPITE_PREFIX: &[&str] = &["NODE_ENV", "PYTHONUNBUFFERED"];

/// Single names no integration may set.
const REFUSED_ENV_NAMES: &[&str] = &[
    // Which program runs, and where the child keeps its files: fixed by the service.
    "PATH",
    "HOME",
    "TMPDIR",
    "SHELL",
    "ENV",
    "IFS",
    "SHELLOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "CLASSPATH",
    "LOCPATH",
    "NLSPATH",
    "GOFLAGS",
    "GOPATH",
    "GOPROXY",
    "GODEBUG",
    // Name resolution.
    "HOSTALIASES",
    "RESOLV_HOST_CONF",
    "RES_OPTIONS",
    "LOCALDOMAIN",
    // Proxies and trust stores redirect or weaken the child's connections.
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "FTP_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "OPENSSL_CONF",
    "OPENSSL_MODULES",
    // Configuration directories tools read code or plugins from.
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CONFIG_DIRS",
    "XDG_DATA_DIRS",
];

/// Why an environment name is refused whatever the allow-list says, or
/// `None` when it may be permitted.
pub fn refused_env_name(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    if PERMITTED_DESPITE_PREFIX.contains(&upper.as_str()) {
        return None;
    }
    if REFUSED_ENV_NAMES.contains(&upper.as_str())
        || REFUSED_ENV_PREFIXES.iter().any(|p| upper.starts_with(p))
    {
        Some(
            "is refused: it can make the program load other code or libraries, change which \
             program runs, or redirect its connections",
        )
    } else {
        None
    }
}

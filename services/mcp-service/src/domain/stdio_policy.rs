//! Which programs an organization admin may start as stdio MCP servers, with
//! which arguments and which environment names, and how the operator writes
//! that down.
//!
//! A child process runs with mcp-service's privileges, so pinning only the
//! program pins nothing: `node -e …`, `python3 -c …`, `npx <any package>`,
//! `NODE_OPTIONS=--require …` or `LD_PRELOAD=…` each run code of the
//! admin's choosing. An allow-list entry therefore pins the whole command
//! line: the program, one glob pattern per argument (the count must match),
//! and the environment names the integration may set. A pattern's wildcards
//! match within one path component, never `..` nor an option the pattern
//! does not name (see [`super::stdio_args`]). Entries for the same
//! program are alternatives.
//!
//! In `SWITCHBOARD_STDIO_ALLOW` entries are comma-separated; in an entry,
//! words are separated by spaces: the program, then argument patterns, and
//! `env=NAME|NAME` for the permitted environment names:
//!
//! ```text
//! /usr/bin/node /opt/mcp/everything/index.js stdio env=API_KEY|REGION,
//! /usr/local/bin/github-mcp-server stdio --read-only=* env=GITHUB_TOKEN
//! ```
//!
//! Patterns containing spaces or commas are written in the file form,
//! `SWITCHBOARD_STDIO_ALLOW_FILE` (TOML, `[[program]]` tables with `command`,
//! `args` and `env`). An entry that names only the program permits it with no
//! arguments and no environment; before this format, such an entry permitted
//! any arguments and environment.
//!
//! Whatever the allow-list says, names that make a runtime load code or
//! libraries, change which program runs, or redirect or weaken the child's
//! network and TLS ([`refused_env_name`]) are refused, and an allow-list that
//! permits one does not load.

use std::collections::BTreeSet;

use anyhow::{Context as _, bail};
use serde::Deserialize;

use super::stdio_args::ArgPattern;
pub use super::stdio_env::refused_env_name;

/// One permitted command line.
#[derive(Debug, Clone)]
pub struct StdioProgram {
    command: String,
    args: Vec<ArgPattern>,
    env: BTreeSet<String>,
}

impl StdioProgram {
    /// An entry; refuses patterns that do not parse and refused names.
    pub fn new(command: &str, args: &[String], env: &[String]) -> anyhow::Result<Self> {
        if command.is_empty() {
            bail!("an entry has no program");
        }
        let args = args
            .iter()
            .map(|a| ArgPattern::new(a.as_str()))
            .collect::<anyhow::Result<Vec<_>>>()?;
        for name in env {
            if let Some(why) = refused_env_name(name) {
                bail!("`{command}` permits environment name {name}, which {why}");
            }
        }
        Ok(Self {
            command: command.to_owned(),
            args,
            env: env.iter().cloned().collect(),
        })
    }

    fn accepts_args(&self, args: &[String]) -> bool {
        self.args.len() == args.len()
            && self
                .args
                .iter()
                .zip(args)
                .all(|(pattern, arg)| pattern.matches(arg))
    }

    fn describe_args(&self) -> String {
        let args: Vec<&str> = self.args.iter().map(ArgPattern::as_str).collect();
        if args.is_empty() {
            "no arguments".to_owned()
        } else {
            format!("`{}`", args.join(" "))
        }
    }
}

/// The file form of the allow-list.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AllowFile {
    #[serde(default)]
    program: Vec<FileEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEntry {
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Vec<String>,
}

/// A refusal of a stdio command line: the request field under the stdio
/// transport it concerns (`command`, `args`, `env[NAME]`, `secret_env[NAME]`)
/// and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioRefusal {
    /// Field path below the transport's `stdio`.
    pub field: String,
    /// The reason, for admins.
    pub reason: String,
}

/// How an allowed program is started: what it finds in its environment and
/// the resource limits it runs under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildSettings {
    /// `PATH` of the child (the service's own is never passed on).
    pub path: String,
    /// The directory each session's private, empty `HOME` is made in (and
    /// removed from when the session closes). It belongs to one replica:
    /// leftovers are removed at start-up.
    pub home_root: String,
    /// `RLIMIT_FSIZE`: bytes of the largest file a child may write.
    pub max_file_bytes: u64,
    /// Bytes all the homes of one organization's live sessions may hold;
    /// past it, the organization's sessions are ended.
    pub org_disk_quota_bytes: u64,
    /// Files and directories all the homes of one organization may hold.
    pub org_max_files: u64,
    /// How often the homes are measured against the quota.
    pub disk_check_interval: std::time::Duration,
    /// `RLIMIT_DATA`: bytes of heap and private writable mappings.
    pub max_data_bytes: u64,
    /// `RLIMIT_CPU`: seconds of CPU time over the child's life.
    pub max_cpu_seconds: u64,
    /// `RLIMIT_NOFILE`: open file descriptors.
    pub max_open_files: u64,
    /// `RLIMIT_NPROC`: processes and threads of the service's user, counted
    /// across that user (the kernel counts per user, not per process tree).
    pub max_processes: u64,
    /// The sandbox launcher every program is started through, if any.
    pub sandbox: Option<Sandbox>,
}

/// The `stdio-sandbox` launcher and the paths it lets programs use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// The launcher binary.
    pub launcher: String,
    /// Paths programs may read and execute below (the program's own
    /// directory is added).
    pub read: Vec<String>,
    /// Paths programs may write below, never execute (`HOME` and
    /// `/dev/null` are added).
    pub write: Vec<String>,
}

impl Default for ChildSettings {
    fn default() -> Self {
        Self {
            path: "/usr/local/bin:/usr/bin:/bin".into(),
            home_root: "/tmp/switchboard-stdio".into(),
            max_file_bytes: 256 << 20,
            org_disk_quota_bytes: 1 << 30,
            org_max_files: 100_000,
            disk_check_interval: std::time::Duration::from_secs(10),
            max_data_bytes: 2 << 30,
            max_cpu_seconds: 3600,
            max_open_files: 256,
            max_processes: 4096,
            sandbox: None,
        }
    }
}

impl ChildSettings {
    /// Refuses settings under which a child could execute what it writes:
    /// the home root and the writable paths must not lie below a path the
    /// sandbox lets programs read and execute.
    pub fn check_paths(&self) -> anyhow::Result<()> {
        let Some(sandbox) = &self.sandbox else {
            return Ok(());
        };
        let written = std::iter::once(&self.home_root).chain(&sandbox.write);
        for path in written {
            let path = std::path::Path::new(path);
            if !path.is_absolute() {
                bail!("stdio sandbox path {} is not absolute", path.display());
            }
            if let Some(read) = sandbox.read.iter().find(|r| path.starts_with(r)) {
                bail!(
                    "stdio servers may write below {} but it lies below {read}, where they may \
                     execute: move it out of SWITCHBOARD_STDIO_SANDBOX_READ",
                    path.display()
                );
            }
        }
        Ok(())
    }
}

/// The programs an operator allows as stdio MCP servers, each with its
/// permitted arguments and environment names, and how they are started.
#[derive(Debug, Clone, Default)]
pub struct StdioAllowList {
    programs: Vec<StdioProgram>,
    child: ChildSettings,
}

impl StdioAllowList {
    /// Parses the one-line form of `SWITCHBOARD_STDIO_ALLOW` (see the module
    /// documentation).
    pub fn parse(spec: &str) -> anyhow::Result<Self> {
        let mut programs = Vec::new();
        for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let mut words = entry.split_whitespace();
            let command = words.next().unwrap_or_default();
            let (mut args, mut env) = (Vec::new(), Vec::new());
            for word in words {
                match word.strip_prefix("env=") {
                    Some(names) => env.extend(
                        names
                            .split('|')
                            .filter(|n| !n.is_empty())
                            .map(str::to_owned),
                    ),
                    None => args.push(word.to_owned()),
                }
            }
            programs.push(
                StdioProgram::new(command, &args, &env)
                    .with_context(|| format!("invalid stdio allow-list entry {entry:?}"))?,
            );
        }
        Ok(Self {
            programs,
            child: ChildSettings::default(),
        })
    }

    /// Parses the file form (TOML `[[program]]` tables).
    pub fn parse_file(text: &str) -> anyhow::Result<Self> {
        let file: AllowFile = toml::from_str(text).context("invalid stdio allow-list file")?;
        file.program
            .iter()
            .map(|e| StdioProgram::new(&e.command, &e.args, &e.env))
            .collect::<anyhow::Result<Vec<_>>>()
            .map(|programs| Self {
                programs,
                child: ChildSettings::default(),
            })
    }

    /// Both lists together.
    pub fn extend(mut self, other: Self) -> Self {
        self.programs.extend(other.programs);
        self
    }

    /// The list, starting programs with `child`.
    pub fn with_child_settings(mut self, child: ChildSettings) -> Self {
        self.child = child;
        self
    }

    /// How allowed programs are started.
    pub fn child_settings(&self) -> &ChildSettings {
        &self.child
    }

    /// Whether some entry names `command`.
    pub fn allows(&self, command: &str) -> bool {
        self.programs.iter().any(|p| p.command == command)
    }

    /// Every reason the command line is refused, empty when it is
    /// permitted: the program must be listed, its arguments must match an
    /// entry for it, and every environment name (`env`, then `secret_env`)
    /// must be permitted by such an entry and not refused outright.
    pub fn check<'a>(
        &self,
        command: &str,
        args: &[String],
        env: impl IntoIterator<Item = &'a str>,
        secret_env: impl IntoIterator<Item = &'a str>,
    ) -> Vec<StdioRefusal> {
        let mut refusals = Vec::new();
        let refuse = |field: String, reason: String| StdioRefusal { field, reason };
        let entries: Vec<&StdioProgram> = self
            .programs
            .iter()
            .filter(|p| p.command == command)
            .collect();
        let matching: Vec<&StdioProgram> = entries
            .iter()
            .copied()
            .filter(|p| p.accepts_args(args))
            .collect();
        if entries.is_empty() {
            refusals.push(refuse(
                "command".into(),
                "is not on the operator's stdio allow-list".into(),
            ));
        } else if matching.is_empty() {
            let allowed: Vec<String> = entries.iter().map(|p| p.describe_args()).collect();
            refusals.push(refuse(
                "args".into(),
                format!(
                    "are not permitted for `{command}` by the operator's stdio allow-list \
                     (permitted: {})",
                    allowed.join("; ")
                ),
            ));
        }
        let names = env
            .into_iter()
            .map(|n| ("env", n))
            .chain(secret_env.into_iter().map(|n| ("secret_env", n)));
        for (kind, name) in names {
            let field = format!("{kind}[{name}]");
            if let Some(why) = refused_env_name(name) {
                refusals.push(refuse(field, why.into()));
            } else if !matching.is_empty() && !matching.iter().any(|p| p.env.contains(name)) {
                refusals.push(refuse(
                    field,
                    format!(
                        "is not an environment name the operator's stdio allow-list permits \
                         for `{command}`"
                    ),
                ));
            }
        }
        refusals
    }
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    fn fields(list: &StdioAllowList, command: &str, args: &[&str], env: &[&str]) -> Vec<String> {
        list.check(command, &strings(args), env.iter().copied(), [])
            .into_iter()
            .map(|r| r.field)
            .collect()
    }

    #[test]
    fn an_entry_pins_program_arguments_and_environment_names() {
        let list = StdioAllowList::parse(
            "/usr/bin/node /opt/mcp/index.js stdio env=API_KEY|REGION, /bin/srv --port=[0-9]*",
        )
        .expect("parses");
        assert!(
            fields(
                &list,
                "/usr/bin/node",
                &["/opt/mcp/index.js", "stdio"],
                &["API_KEY"]
            )
            .is_empty()
        );
        assert!(fields(&list, "/bin/srv", &["--port=8080"], &[]).is_empty());
        assert_eq!(fields(&list, "/bin/sh", &[], &[]), ["command"]);
        assert_eq!(
            fields(&list, "/usr/bin/node", &["-e", "evil()"], &[]),
            ["args"]
        );
        assert_eq!(
            fields(
                &list,
                "/usr/bin/node",
                &["/opt/mcp/index.js", "stdio", "x"],
                &[]
            ),
            ["args"]
        );
        assert_eq!(
            fields(
                &list,
                "/usr/bin/node",
                &["/opt/mcp/index.js", "stdio"],
                &["OTHER"]
            ),
            ["env[OTHER]"]
        );
        assert_eq!(fields(&list, "/bin/srv", &["--port=x"], &[]), ["args"]);
    }

    #[test]
    fn a_bare_entry_permits_no_arguments_and_no_environment() {
        let list = StdioAllowList::parse("/opt/mcp/server").expect("parses");
        assert!(fields(&list, "/opt/mcp/server", &[], &[]).is_empty());
        assert_eq!(fields(&list, "/opt/mcp/server", &["--x"], &[]), ["args"]);
        assert_eq!(fields(&list, "/opt/mcp/server", &[], &["A"]), ["env[A]"]);
    }

    #[test]
    fn dangerous_names_are_refused_whatever_the_list_says() {
        let list = StdioAllowList::parse("/opt/mcp/server env=API_KEY").expect("parses");
        for name in [
            "LD_PRELOAD",
            "ld_library_path",
            "NODE_OPTIONS",
            "PYTHONPATH",
            "PATH",
            "HTTPS_PROXY",
            "BASH_ENV",
            "PERL5OPT",
        ] {
            assert!(refused_env_name(name).is_some(), "{name}");
            assert_eq!(
                fields(&list, "/opt/mcp/server", &[], &[name]),
                [format!("env[{name}]")]
            );
        }
        assert!(refused_env_name("NODE_ENV").is_none());
        assert!(refused_env_name("GITHUB_TOKEN").is_none());
        let error = StdioAllowList::parse("/opt/mcp/server env=NODE_OPTIONS")
            .expect_err("an allow-list permitting NODE_OPTIONS does not load");
        assert!(format!("{error:#}").contains("NODE_OPTIONS"), "{error:#}");
    }

    #[test]
    fn the_file_form_allows_patterns_with_spaces() {
        let list = StdioAllowList::parse_file(
            r#"
            [[program]]
            command = "/usr/bin/python3"
            args = ["/opt/mcp/server.py", "--name=* *"]
            env = ["TOKEN"]
            "#,
        )
        .expect("parses");
        assert!(
            fields(
                &list,
                "/usr/bin/python3",
                &["/opt/mcp/server.py", "--name=a b"],
                &["TOKEN"]
            )
            .is_empty()
        );
        assert_eq!(
            fields(&list, "/usr/bin/python3", &["-c", "x"], &[]),
            ["args"]
        );
        assert!(StdioAllowList::parse_file("[[program]]\ncommand = \"x\"\nbogus = 1").is_err());
    }
}

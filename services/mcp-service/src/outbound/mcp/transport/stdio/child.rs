//! Starting a stdio MCP server: exactly the command line the allow-list
//! permits, an environment holding nothing of the service's, and resource
//! limits.
//!
//! * The environment is cleared; the child gets the integration's
//!   variables, then a fixed `PATH` from the operator's settings, its
//!   session's private home as `HOME`, `TMPDIR`, XDG directories and working
//!   directory, and `PYTHONNOUSERSITE=1` (no Python user site, whatever the
//!   home holds).
//! * Resource limits are set with `prlimit(2)` on the child's pid right after
//!   it is started (the workspace forbids `unsafe`, which a `pre_exec` hook
//!   would need, and a distroless image has no `prlimit` program to wrap the
//!   child with). A child could fork within the microseconds before the
//!   limits land; its own later forks inherit them, and `RLIMIT_NPROC` is
//!   counted per user whatever the process tree.
//! * mcp-service makes itself non-dumpable before its first child starts,
//!   so a child running as the same (non-root) user cannot read the
//!   service's `/proc/<pid>/environ` or memory, where its sealing keys,
//!   token secret and database URL live.

use std::collections::BTreeMap;

use process_wrap::tokio::{ChildWrapper, CommandWrap};
use secrecy::ExposeSecret as _;

use crate::domain::{
    integration::Secrets,
    stdio_policy::{ChildSettings, Sandbox},
};
use crate::outbound::mcp::transport::stdio::home::PrivateHome;

/// What a stdio server runs as: its command line, its integration's
/// environment and its session's home.
#[derive(Debug, Clone, Copy)]
pub struct Launch<'a> {
    /// The program.
    pub command: &'a str,
    /// Its arguments.
    pub args: &'a [String],
    /// The integration's plain environment.
    pub env: &'a BTreeMap<String, String>,
    /// The integration's secret environment.
    pub secrets: &'a Secrets,
    /// The session's private home.
    pub home: &'a PrivateHome,
}

/// The command for `launch`, with a clean environment: the integration's
/// variables, then the fixed ones (which the allow-list never lets an
/// integration set).
pub fn command(launch: Launch<'_>, settings: &ChildSettings) -> CommandWrap {
    let (program, argv) = match &settings.sandbox {
        None => (launch.command.to_owned(), launch.args.to_vec()),
        Some(sandbox) => (
            sandbox.launcher.clone(),
            sandbox_argv(launch, settings, sandbox),
        ),
    };
    CommandWrap::with_new(&program, |process| {
        process
            .args(&argv)
            .env_clear()
            .envs(launch.env)
            .envs(
                launch
                    .secrets
                    .env()
                    .map(|(name, value)| (name, value.expose_secret())),
            )
            .env("PATH", &settings.path)
            .envs(launch.home.env())
            .env("PYTHONNOUSERSITE", "1")
            .current_dir(launch.home.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
    })
}

/// The launcher's command line: limits, paths, then the program.
fn sandbox_argv(launch: Launch<'_>, settings: &ChildSettings, sandbox: &Sandbox) -> Vec<String> {
    let command = launch.command;
    let mut argv = vec![
        format!("--data-bytes={}", settings.max_data_bytes),
        format!("--file-bytes={}", settings.max_file_bytes),
        format!("--cpu-seconds={}", settings.max_cpu_seconds),
        format!("--open-files={}", settings.max_open_files),
        format!("--processes={}", settings.max_processes),
    ];
    let program_dir = std::path::Path::new(command)
        .parent()
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.display().to_string());
    for path in sandbox.read.iter().cloned().chain(program_dir) {
        argv.push(format!("--read={path}"));
    }
    let home = launch.home.path().display().to_string();
    let fixed = [home, "/dev/null".to_owned()];
    for path in sandbox.write.iter().cloned().chain(fixed) {
        argv.push(format!("--write={path}"));
    }
    argv.push("--".to_owned());
    argv.push(command.to_owned());
    argv.extend(launch.args.iter().cloned());
    argv
}

/// Keeps children away from the service's own secrets: makes this process
/// non-dumpable (its `/proc` files then belong to root, and same-user
/// processes cannot read its environment or memory nor trace it).
/// Idempotent; cheap enough to call before every start.
pub fn protect_service() {
    #[cfg(target_os = "linux")]
    if let Err(error) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        tracing::warn!(%error, "could not make mcp-service non-dumpable");
    }
}

/// Applies the resource limits of `settings` to a started child. On error
/// the caller must not use the child (it is killed when dropped).
pub fn confine(child: &dyn ChildWrapper, settings: &ChildSettings) -> Result<(), String> {
    let pid = child.id().ok_or("the stdio server exited at once")?;
    confine_pid(pid, settings)
}

#[cfg(target_os = "linux")]
fn confine_pid(pid: u32, settings: &ChildSettings) -> Result<(), String> {
    use rustix::process::{Pid, Resource, Rlimit, prlimit};
    let pid = i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or("the stdio server has no valid process id")?;
    let limits = [
        (Resource::Data, settings.max_data_bytes, "data"),
        (Resource::Fsize, settings.max_file_bytes, "file size"),
        (Resource::Cpu, settings.max_cpu_seconds, "cpu"),
        (Resource::Nofile, settings.max_open_files, "open files"),
        (Resource::Nproc, settings.max_processes, "processes"),
        (Resource::Core, 0, "core"),
    ];
    for (resource, value, name) in limits {
        let limit = Rlimit {
            current: Some(value),
            maximum: Some(value),
        };
        prlimit(Some(pid), resource, limit)
            .map_err(|e| format!("failed to limit the stdio server ({name}): {e}"))?;
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn confine_pid(_pid: u32, _settings: &ChildSettings) -> Result<(), String> {
    tracing::warn!("resource limits of stdio servers are only applied on Linux");
    Ok(())
}

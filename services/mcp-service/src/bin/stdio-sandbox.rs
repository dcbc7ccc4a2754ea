//! `stdio-sandbox`: confines itself, then becomes the stdio MCP server.
//!
//! mcp-service starts `stdio-sandbox [limits] [paths] -- program args…`
//! instead of the program when `SWITCHBOARD_STDIO_SANDBOX` names this
//! binary. Everything here is done by the process to itself, with safe
//! system-call wrappers, before `exec` — the only place where resource
//! limits leave no window and a Landlock domain covers the program from its
//! first instruction (the service cannot do this between `fork` and `exec`
//! without `unsafe`):
//!
//! 1. resource limits (`setrlimit`), core dumps off;
//! 2. `no_new_privs` and a Landlock domain: read and execute only below the
//!    `--read` paths, read and write but never execute below the `--write`
//!    paths (the session's home among them), no TCP bind or connect at all
//!    (ABI 4), no connecting to abstract Unix sockets nor signalling outside
//!    the domain (ABI 6). A Landlock domain also keeps the program from
//!    tracing, or reading the `/proc/<pid>/` `environ` and `mem` of, any
//!    process outside it: mcp-service and other organizations' servers. On a
//!    kernel without Landlock the program runs with the limits and the
//!    socket filter only, and this is said on stderr;
//! 3. a seccomp filter: `socket(2)` of any family but `AF_UNIX` (IPv4, IPv6,
//!    packet, netlink…) fails with `EACCES`, and so does `io_uring_setup(2)`
//!    (its operations would open sockets past the filter). This holds on
//!    every kernel with seccomp, Landlock or not, needs no privilege and no
//!    user namespace;
//! 4. `exec` of the program with the environment it was given.

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

use std::{
    collections::BTreeMap, os::unix::process::CommandExt as _, path::PathBuf, process::ExitCode,
};

use clap::Parser;
use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible as _, Ruleset, RulesetAttr as _,
    RulesetCreatedAttr as _, RulesetStatus, Scope, path_beneath_rules,
};
use rustix::process::{Resource, Rlimit, setrlimit};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// The Landlock ABI whose access rights are asked for; newer kernels enforce
/// all of them, older ones what they know (best effort): ABI 1 files, 4 TCP
/// ports, 6 abstract Unix sockets and signals.
const ABI_WANTED: ABI = ABI::V6;

/// The bit x32 system calls carry on x86_64; a filter on the plain number
/// alone would let them through.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

#[derive(Debug, Parser)]
#[command(
    name = "stdio-sandbox",
    about = "Confines itself, then runs a stdio MCP server"
)]
struct Args {
    /// RLIMIT_DATA, bytes.
    #[arg(long)]
    data_bytes: u64,
    /// RLIMIT_FSIZE, bytes.
    #[arg(long)]
    file_bytes: u64,
    /// RLIMIT_CPU, seconds.
    #[arg(long)]
    cpu_seconds: u64,
    /// RLIMIT_NOFILE.
    #[arg(long)]
    open_files: u64,
    /// RLIMIT_NPROC.
    #[arg(long)]
    processes: u64,
    /// Paths the program may read and execute below.
    #[arg(long)]
    read: Vec<PathBuf>,
    /// Paths the program may read and write, not execute, below.
    #[arg(long)]
    write: Vec<PathBuf>,
    /// The program and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

fn limit(resource: Resource, value: u64) -> std::io::Result<()> {
    setrlimit(
        resource,
        Rlimit {
            current: Some(value),
            maximum: Some(value),
        },
    )
    .map_err(Into::into)
}

fn confine(args: &Args) -> anyhow::Result<RulesetStatus> {
    limit(Resource::Data, args.data_bytes)?;
    limit(Resource::Fsize, args.file_bytes)?;
    limit(Resource::Cpu, args.cpu_seconds)?;
    limit(Resource::Nofile, args.open_files)?;
    limit(Resource::Nproc, args.processes)?;
    limit(Resource::Core, 0)?;
    let writable = AccessFs::from_all(ABI_WANTED) & !AccessFs::Execute;
    // Handling TCP bind and connect with no rule allowing any port denies both.
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI_WANTED))?
        .handle_access(AccessNet::from_all(ABI_WANTED))?
        .scope(Scope::from_all(ABI_WANTED))?
        .create()?
        .add_rules(path_beneath_rules(
            &args.read,
            AccessFs::from_read(ABI_WANTED),
        ))?
        .add_rules(path_beneath_rules(&args.write, writable))?
        .restrict_self()?;
    deny_sockets()?;
    Ok(status.ruleset)
}

/// Installs the seccomp filter: sockets of no family but `AF_UNIX`, no
/// io_uring. Installing it sets `no_new_privs` (Landlock set it already).
fn deny_sockets() -> anyhow::Result<()> {
    let not_unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Ne,
        libc::AF_UNIX as u64,
    )?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, vec![SeccompRule::new(vec![not_unix])?]);
    rules.insert(libc::SYS_io_uring_setup, vec![]);
    #[cfg(target_arch = "x86_64")]
    for call in [libc::SYS_socket, libc::SYS_io_uring_setup] {
        rules.insert(call | X32_SYSCALL_BIT, vec![]);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        std::env::consts::ARCH.try_into()?,
    )?;
    let program: BpfProgram = filter.try_into()?;
    seccompiler::apply_filter(&program)?;
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    match confine(&args) {
        Ok(RulesetStatus::NotEnforced) => {
            eprintln!(
                "stdio-sandbox: this kernel has no Landlock; running with resource limits and \
                 the socket filter only"
            );
        }
        Ok(_) => {}
        Err(error) => {
            eprintln!("stdio-sandbox: failed to confine: {error:#}");
            return ExitCode::from(126);
        }
    }
    let (program, rest) = args
        .command
        .split_first()
        .map(|(p, r)| (p.clone(), r.to_vec()))
        .unwrap_or_default();
    // `exec` only returns on failure.
    let error = std::process::Command::new(&program).args(rest).exec();
    eprintln!("stdio-sandbox: failed to start {program}: {error}");
    ExitCode::from(127)
}

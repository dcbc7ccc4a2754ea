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
//!    `--read` paths, write only below the `--write` paths. A Landlock domain
//!    also keeps the program from tracing, or reading the `/proc/<pid>/`
//!    `environ` and `mem` of, any process outside it: mcp-service and other
//!    organizations' servers. On a kernel without Landlock the program runs
//!    with the limits only, and this is said on stderr;
//! 3. `exec` of the program with the environment it was given.

use std::{os::unix::process::CommandExt as _, path::PathBuf, process::ExitCode};

use clap::Parser;
use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible as _, Ruleset, RulesetAttr as _,
    RulesetCreatedAttr as _, RulesetStatus, path_beneath_rules,
};
use rustix::process::{Resource, Rlimit, setrlimit};

/// The Landlock ABI whose access rights are asked for; newer kernels enforce
/// all of them, older ones what they know (best effort).
const ABI_WANTED: ABI = ABI::V5;

#[derive(Debug, Parser)]
#[command(
    name = "stdio-sandbox",
    about = "Confines itself, then runs a stdio MCP server"
)]
struct Args {
    /// RLIMIT_DATA, bytes.
    #[arg(long)]
    data_bytes: u64,
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
    /// Paths the program may read and write below.
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
    limit(Resource::Cpu, args.cpu_seconds)?;
    limit(Resource::Nofile, args.open_files)?;
    limit(Resource::Nproc, args.processes)?;
    limit(Resource::Core, 0)?;
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI_WANTED))?
        .create()?
        .add_rules(path_beneath_rules(
            &args.read,
            AccessFs::from_read(ABI_WANTED),
        ))?
        .add_rules(path_beneath_rules(
            &args.write,
            AccessFs::from_all(ABI_WANTED),
        ))?
        .restrict_self()?;
    Ok(status.ruleset)
}

fn main() -> ExitCode {
    let args = Args::parse();
    match confine(&args) {
        Ok(RulesetStatus::NotEnforced) => {
            eprintln!(
                "stdio-sandbox: this kernel has no Landlock; running with resource limits only"
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

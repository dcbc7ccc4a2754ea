//! Private homes of stdio sessions, and the disk quota of each
//! organization's homes.
//!
//! Every stdio session gets an empty directory of its own (mode 0700, named
//! by a random id, never by anything a caller chose) as `HOME`, `TMPDIR`,
//! working directory and XDG directories, and nothing else it may write: a
//! file one session leaves (a Python `.pth`, a shell rc file, a planted
//! binary) is never seen by another session, of its own organization or of
//! another. The directory is removed when the session closes, and leftovers
//! of an earlier run are removed at start-up.
//!
//! The homes of one organization's live sessions are measured together
//! every check interval (allocated bytes and entries); when they hold more
//! than the quota, every session of the organization is ended (its homes are
//! then removed) and a new session of the organization is refused while its
//! remaining homes are still over it.

use std::{
    collections::HashMap,
    os::unix::fs::{DirBuilderExt as _, MetadataExt as _},
    path::{Path, PathBuf},
    sync::{Arc, Mutex, MutexGuard, OnceLock, Weak},
    time::Duration,
};

use process_wrap::tokio::ChildWrapper;

use crate::domain::{integration::OrgId, stdio_policy::ChildSettings};

/// A stdio server's process group, shared with the quota check that may end it.
pub type SharedChild = Arc<Mutex<Box<dyn ChildWrapper>>>;

/// Prefix of the homes' names; only such entries are removed at start-up.
const HOME_PREFIX: &str = "home-";

/// The directories made inside each home, and the variables naming them.
const HOME_DIRS: &[(&str, &str)] = &[
    ("TMPDIR", "tmp"),
    ("XDG_CACHE_HOME", ".cache"),
    ("XDG_CONFIG_HOME", ".config"),
    ("XDG_DATA_HOME", ".local/share"),
    ("XDG_STATE_HOME", ".local/state"),
    ("XDG_RUNTIME_DIR", "run"),
];

/// One live home.
struct Tenant {
    id: uuid::Uuid,
    path: PathBuf,
    child: Option<Weak<Mutex<Box<dyn ChildWrapper>>>>,
}

struct Inner {
    root: PathBuf,
    quota_bytes: u64,
    max_files: u64,
    interval: Duration,
    orgs: Mutex<HashMap<OrgId, Vec<Tenant>>>,
    watching: OnceLock<()>,
}

/// The homes of every stdio session of this replica.
#[derive(Clone)]
pub struct StdioHomes {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for StdioHomes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioHomes")
            .field("root", &self.inner.root)
            .finish_non_exhaustive()
    }
}

/// What an organization's homes hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Usage {
    bytes: u64,
    entries: u64,
}

impl StdioHomes {
    /// The homes below `settings.home_root`; removes what an earlier run left
    /// there (entries named like a home only).
    pub fn new(settings: &ChildSettings) -> Self {
        let root = PathBuf::from(&settings.home_root);
        sweep(&root);
        Self {
            inner: Arc::new(Inner {
                root,
                quota_bytes: settings.org_disk_quota_bytes,
                max_files: settings.org_max_files,
                interval: settings.disk_check_interval,
                orgs: Mutex::default(),
                watching: OnceLock::new(),
            }),
        }
    }

    /// A new, empty home for a session of `org`; refused while the
    /// organization's live homes are over the quota.
    pub async fn create(&self, org: &OrgId) -> Result<PrivateHome, String> {
        self.start_watching();
        let inner = Arc::clone(&self.inner);
        let org = org.clone();
        tokio::task::spawn_blocking(move || {
            let usage = measure(&inner.paths_of(&org), inner.max_files);
            if let Some(why) = inner.over_quota(usage) {
                return Err(format!(
                    "the organization's stdio servers are over their disk quota ({why}); \
                     a new one starts when they have ended"
                ));
            }
            let id = uuid::Uuid::now_v7();
            let path = inner.root.join(format!("{HOME_PREFIX}{}", id.simple()));
            make_home(&inner.root, &path)
                .map_err(|e| format!("failed to make the stdio server's home: {e}"))?;
            inner.lock().entry(org.clone()).or_default().push(Tenant {
                id,
                path: path.clone(),
                child: None,
            });
            Ok(PrivateHome {
                homes: Arc::downgrade(&inner),
                org,
                id,
                path,
            })
        })
        .await
        .map_err(|e| format!("failed to make the stdio server's home: {e}"))?
    }

    /// Starts the periodic quota check, once.
    fn start_watching(&self) {
        self.inner.watching.get_or_init(|| {
            let weak = Arc::downgrade(&self.inner);
            let interval = self.inner.interval;
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(interval).await;
                    let Some(inner) = weak.upgrade() else { break };
                    if tokio::task::spawn_blocking(move || inner.enforce_quota())
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
            });
        });
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, HashMap<OrgId, Vec<Tenant>>> {
        self.orgs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn paths_of(&self, org: &OrgId) -> Vec<PathBuf> {
        self.lock()
            .get(org)
            .map(|tenants| tenants.iter().map(|t| t.path.clone()).collect())
            .unwrap_or_default()
    }

    /// Why `usage` is over the quota, if it is.
    fn over_quota(&self, usage: Usage) -> Option<String> {
        if usage.bytes > self.quota_bytes {
            Some(format!(
                "{} bytes, the quota is {}",
                usage.bytes, self.quota_bytes
            ))
        } else if usage.entries > self.max_files {
            Some(format!(
                "more than {} files and directories",
                self.max_files
            ))
        } else {
            None
        }
    }

    /// Measures every organization's homes and ends the sessions of those
    /// over the quota.
    fn enforce_quota(&self) {
        let orgs: Vec<(OrgId, Vec<PathBuf>)> = self
            .lock()
            .iter()
            .map(|(org, t)| (org.clone(), t.iter().map(|t| t.path.clone()).collect()))
            .collect();
        for (org, paths) in orgs {
            let usage = measure(&paths, self.max_files);
            let Some(why) = self.over_quota(usage) else {
                continue;
            };
            tracing::warn!(org_id = %org, usage = %why, "stdio homes over the disk quota: ending the organization's stdio sessions");
            let ended: Vec<(SharedChild, PathBuf)> = self
                .lock()
                .get(&org)
                .into_iter()
                .flatten()
                .filter_map(|t| {
                    let child = t.child.as_ref().and_then(Weak::upgrade)?;
                    Some((child, t.path.clone()))
                })
                .collect();
            for (child, path) in ended {
                let mut child = child
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Err(error) = child.start_kill() {
                    tracing::debug!(%error, "stdio server already gone");
                }
                drop(child);
                // The session may stay in the pool until its next call; its
                // home goes now.
                remove_home(&path);
            }
        }
    }
}

/// A session's home: removed, and no longer counted, when dropped.
pub struct PrivateHome {
    homes: Weak<Inner>,
    org: OrgId,
    id: uuid::Uuid,
    path: PathBuf,
}

impl std::fmt::Debug for PrivateHome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PrivateHome").field(&self.path).finish()
    }
}

impl PrivateHome {
    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The variables that point a program at its home: `HOME`, `TMPDIR` and
    /// the XDG directories.
    pub fn env(&self) -> Vec<(&'static str, PathBuf)> {
        std::iter::once(("HOME", self.path.clone()))
            .chain(
                HOME_DIRS
                    .iter()
                    .map(|(name, dir)| (*name, self.path.join(dir))),
            )
            .collect()
    }

    /// Lets the quota check end `child` with the organization's other sessions.
    pub fn watch(&self, child: &SharedChild) {
        let Some(inner) = self.homes.upgrade() else {
            return;
        };
        let mut orgs = inner.lock();
        let tenant = orgs
            .get_mut(&self.org)
            .and_then(|tenants| tenants.iter_mut().find(|t| t.id == self.id));
        if let Some(tenant) = tenant {
            tenant.child = Some(Arc::downgrade(child));
        }
    }
}

impl Drop for PrivateHome {
    fn drop(&mut self) {
        if let Some(inner) = self.homes.upgrade() {
            let mut orgs = inner.lock();
            if let Some(tenants) = orgs.get_mut(&self.org) {
                tenants.retain(|t| t.id != self.id);
                if tenants.is_empty() {
                    orgs.remove(&self.org);
                }
            }
        }
        let path = std::mem::take(&mut self.path);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(move || remove_home(&path))),
            Err(_) => remove_home(&path),
        }
    }
}

/// Makes the root (if needed) and an empty home with its directories, all
/// mode 0700.
fn make_home(root: &Path, path: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.mode(0o700).recursive(true).create(root)?;
    builder.recursive(false).create(path)?;
    for (_, dir) in HOME_DIRS {
        builder.recursive(true).create(path.join(dir))?;
    }
    Ok(())
}

/// Removes a home whose processes were just killed: they may still be
/// writing for a moment, so a removal that finds new entries is retried.
fn remove_home(path: &Path) {
    for _ in 0..20 {
        match std::fs::remove_dir_all(path) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    tracing::warn!(path = %path.display(), "could not remove a stdio server's home");
}

/// Removes the homes an earlier run left below `root`.
fn sweep(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(HOME_PREFIX) {
            tracing::info!(path = %entry.path().display(), "removing a stdio home left by an earlier run");
            remove_home(&entry.path());
        }
    }
}

/// Allocated bytes and entries below `paths`, without following links;
/// stops counting past `max_entries` (enough to know it is over).
fn measure(paths: &[PathBuf], max_entries: u64) -> Usage {
    let mut usage = Usage::default();
    let mut pending: Vec<PathBuf> = paths.to_vec();
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            usage.entries += 1;
            if usage.entries > max_entries {
                return usage;
            }
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            usage.bytes = usage
                .bytes
                .saturating_add(metadata.blocks().saturating_mul(512));
            if metadata.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    usage
}

//! The sandbox of exec KRM functions.
//!
//! A function is untrusted code an admin approved by digest: it gets its
//! input on stdin, a clean environment, an empty temporary working
//! directory and nothing else. The protections, each applied in the child
//! between `fork` and `exec`:
//!
//! * **rlimits**: CPU seconds, address space, processes, open files, file
//!   size. `RLIMIT_NPROC` counts every task of the (real) user, not only
//!   the function's, so the limit is set to the tasks that user already
//!   has plus [`Limits::processes`]; it holds for non-root users only
//!   (the kernel exempts uid 0), which is one reason a function never runs
//!   as root (below). The wall-clock timeout kills the whole process group
//!   and the function cannot leave it (`setsid`/`setpgid` are denied).
//! * **Landlock** (kernel 5.13+, ABI 1; TCP rules from ABI 4; signal and
//!   abstract socket scoping from ABI 6): read and execute the binary and
//!   the system directories (`/usr`, `/lib*`, `/bin`, `/sbin`, the dynamic
//!   loader's files in `/etc`), read and write `/dev/null` and the private
//!   working directory, nothing else (no `/var/run/secrets`, no `$HOME`, no
//!   kustomization or bundle directory).
//! * **seccomp** (a BPF filter): without the network, `socket()` fails for
//!   every address family (`AF_INET`, `AF_INET6`, `AF_NETLINK`, `AF_PACKET`
//!   and `AF_UNIX` too: a Unix socket such as a container engine's would be
//!   a way out); `io_uring_setup` (its requests bypass seccomp), `setsid`,
//!   `setpgid`, `unshare`, `setns`, `mount` and `clone` with
//!   `CLONE_NEWUSER` fail with `EPERM`, `clone3` with `ENOSYS` (the C
//!   library falls back to `clone`, whose flags the filter can see).
//! * **no root**: when krmsync runs as root, the function runs as
//!   [`Sandbox::run_as`] (default 65534, `nobody`), from a copy of its
//!   binary in the sandbox directory (the original may sit in a directory
//!   only root can read). Root would be exempt from `RLIMIT_NPROC` and
//!   could raise its own limits.
//! * `no_new_privs`, the parent-death signal (`SIGKILL`), and every file
//!   descriptor but stdin, stdout and stderr closed on exec.
//!
//! [`probe`] reports what this kernel offers; with [`Sandbox::require`] a
//! run fails instead of going ahead with a missing protection.

use std::ffi::OsStr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// Resource limits of one function run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `RLIMIT_CPU`, seconds of CPU time.
    pub cpu_seconds: u64,
    /// `RLIMIT_AS`, bytes of address space.
    pub address_space: u64,
    /// Processes (and threads) the function may have at once, on top of
    /// the ones its user already has (`RLIMIT_NPROC` is per user).
    pub processes: u64,
    /// `RLIMIT_NOFILE`.
    pub open_files: u64,
    /// `RLIMIT_FSIZE`, bytes of one written file.
    pub file_size: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            cpu_seconds: 120,
            // Go runtimes reserve address space generously.
            address_space: 4 << 30,
            processes: 64,
            open_files: 256,
            file_size: 64 << 20,
        }
    }
}

/// How exec functions are confined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sandbox {
    pub limits: Limits,
    /// The operator lets functions that ask for it have the network.
    pub allow_network: bool,
    /// Refuse to run when a protection is missing on this kernel.
    pub require: bool,
    /// The uid and gid functions run as when krmsync is root.
    pub run_as: (u32, u32),
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox {
            limits: Limits::default(),
            allow_network: false,
            require: false,
            run_as: (65534, 65534),
        }
    }
}

/// Which protections this kernel and process offer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The Landlock ABI version (`None`: no Landlock).
    pub landlock_abi: Option<i32>,
    /// seccomp BPF filters can be installed.
    pub seccomp: bool,
    /// The limits can be set (always on Linux).
    pub rlimits: bool,
    /// krmsync's effective uid.
    pub euid: u32,
}

impl Probe {
    /// The protections that are missing, each with what it needs.
    pub fn missing(&self) -> Vec<String> {
        let mut m = Vec::new();
        match self.landlock_abi {
            None => m.push(
                "landlock: not available (needs Linux 5.13+ with landlock in the lsm= list)"
                    .to_string(),
            ),
            Some(v) if v < 6 => m.push(format!(
                "landlock ABI {v}: no signal scoping (needs ABI 6, Linux 6.12+)"
            )),
            Some(_) => {}
        }
        if !self.seccomp {
            m.push("seccomp: not available (needs CONFIG_SECCOMP_FILTER)".to_string());
        }
        if !self.rlimits {
            m.push("rlimits: cannot be set".to_string());
        }
        m
    }

    /// A human-readable report, one protection a line.
    pub fn report(&self, sandbox: &Sandbox) -> String {
        let mut s = String::new();
        match self.landlock_abi {
            Some(v) => s.push_str(&format!(
                "landlock: active (ABI {v}{})\n",
                if v >= 4 {
                    ", filesystem, TCP, scoping"
                } else {
                    ", filesystem"
                }
            )),
            None => s.push_str("landlock: MISSING\n"),
        }
        s.push_str(if self.seccomp {
            "seccomp: active (socket creation denied without --network; io_uring, setsid, namespaces denied)\n"
        } else {
            "seccomp: MISSING\n"
        });
        let l = &sandbox.limits;
        s.push_str(&format!(
            "rlimits: {} (cpu {}s, address space {} MiB, processes +{} per user, open files {}, file size {} MiB)\n",
            if self.rlimits { "active" } else { "MISSING" },
            l.cpu_seconds,
            l.address_space >> 20,
            l.processes,
            l.open_files,
            l.file_size >> 20
        ));
        if self.euid == 0 {
            s.push_str(&format!(
                "user: krmsync runs as root; functions run as uid {} gid {}\n",
                sandbox.run_as.0, sandbox.run_as.1
            ));
        } else {
            s.push_str(&format!("user: functions run as uid {}\n", self.euid));
        }
        s.push_str(&format!(
            "network: {}\n",
            if sandbox.allow_network {
                "allowed for functions that ask for it (--network)"
            } else {
                "denied"
            }
        ));
        let missing = self.missing();
        if missing.is_empty() {
            s.push_str("sandbox: complete\n");
        } else {
            s.push_str(&format!("sandbox: INCOMPLETE: {}\n", missing.join("; ")));
        }
        s
    }
}

/// What this kernel offers (cheap: two system calls).
pub fn probe() -> Probe {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    // only returns the ABI version; no memory is passed.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    let seccomp = rustix::thread::no_new_privs().is_ok() && seccomp_supported();
    Probe {
        landlock_abi: (abi > 0).then_some(abi as i32),
        seccomp,
        rlimits: true,
        euid: rustix::process::geteuid().as_raw(),
    }
}

fn seccomp_supported() -> bool {
    // /proc/self/status has a `Seccomp:` line when the kernel has seccomp;
    // filters need CONFIG_SECCOMP_FILTER, which every distribution kernel
    // with seccomp has (and the filter's installation fails otherwise).
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| s.contains("\nSeccomp:"))
        && compile_filters(false).is_ok()
}

/// What one run may touch.
#[derive(Clone, Debug)]
pub struct Policy<'a> {
    /// The program (read and execute).
    pub program: &'a Path,
    /// The private working directory (read and write).
    pub work_dir: &'a Path,
    /// The function may have the network (it asked and the operator allows).
    pub network: bool,
}

/// Protections prepared in the parent for one child: everything that
/// allocates happens here, the child only issues system calls.
pub struct Prepared {
    landlock: Option<OwnedFd>,
    filters: Vec<BpfProgram>,
    rlimits: Vec<(rustix::process::Resource, u64)>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("landlock", &self.landlock.is_some())
            .field("filters", &self.filters.len())
            .field("rlimits", &self.rlimits)
            .finish()
    }
}

const READ_DIRS: &[&str] = &["/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin"];
const READ_FILES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ld.so.preload",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/dev/urandom",
    "/dev/zero",
];
const NETWORK_FILES: &[&str] = &[
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
];

impl Sandbox {
    /// Prepares the protections of one run; fails when [`Sandbox::require`]
    /// is set and one is missing.
    pub fn prepare(&self, policy: &Policy<'_>) -> Result<Prepared, String> {
        let probe = probe();
        if self.require {
            let missing = probe.missing();
            if !missing.is_empty() {
                return Err(format!(
                    "the sandbox is required (--require-sandbox) but incomplete: {}",
                    missing.join("; ")
                ));
            }
        }
        let landlock = match probe.landlock_abi {
            Some(_) => Some(landlock_ruleset(policy)?),
            None => None,
        };
        let filters = if probe.seccomp {
            compile_filters(policy.network)?
        } else {
            Vec::new()
        };
        let uid = if probe.euid == 0 {
            self.run_as.0
        } else {
            probe.euid
        };
        let l = &self.limits;
        use rustix::process::Resource;
        let rlimits = vec![
            (Resource::Cpu, l.cpu_seconds),
            (Resource::As, l.address_space),
            (Resource::Nproc, tasks_of(uid).saturating_add(l.processes)),
            (Resource::Nofile, l.open_files),
            (Resource::Fsize, l.file_size),
            (Resource::Core, 0),
        ];
        Ok(Prepared {
            landlock,
            filters,
            rlimits,
        })
    }

    /// The uid and gid to switch to (`None`: stay, krmsync is not root).
    pub fn switch_to(&self) -> Option<(u32, u32)> {
        (rustix::process::geteuid().is_root()).then_some(self.run_as)
    }
}

/// Tasks (processes and threads) the user `uid` has now: `RLIMIT_NPROC`
/// counts them all.
fn tasks_of(uid: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut n = 0u64;
    for e in dir.flatten() {
        let name = e.file_name();
        if !name
            .to_str()
            .is_some_and(|s| s.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        if e.metadata().is_ok_and(|m| m.uid() == uid) {
            n += std::fs::read_dir(e.path().join("task"))
                .map(|d| d.count() as u64)
                .unwrap_or(1);
        }
    }
    n
}

fn landlock_ruleset(policy: &Policy<'_>) -> Result<OwnedFd, String> {
    let err = |e: landlock::RulesetError| format!("preparing the landlock ruleset: {e}");
    let abi = ABI::V6;
    let read = AccessFs::from_read(abi);
    let file_read = AccessFs::ReadFile | AccessFs::Execute;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(err)?
        .scope(Scope::from_all(abi))
        .map_err(err)?;
    if !policy.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(err)?;
    }
    let existing = |paths: &[&'static str]| -> Vec<&'static str> {
        paths
            .iter()
            .copied()
            .filter(|p| Path::new(p).exists())
            .collect()
    };
    let mut files = existing(READ_FILES);
    if policy.network {
        files.extend(existing(NETWORK_FILES));
    }
    let created = ruleset
        .create()
        .map_err(err)?
        .add_rules(path_beneath_rules(existing(READ_DIRS), read))
        .map_err(err)?
        .add_rules(path_beneath_rules(files, read))
        .map_err(err)?
        .add_rules(path_beneath_rules(
            ["/dev/null"],
            AccessFs::ReadFile | AccessFs::WriteFile,
        ))
        .map_err(err)?
        .add_rules(path_beneath_rules([policy.program], file_read))
        .map_err(err)?
        .add_rules(path_beneath_rules(
            [policy.work_dir],
            AccessFs::from_all(abi),
        ))
        .map_err(err)?;
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| "preparing the landlock ruleset: no ruleset was created".to_string())
}

fn compile_filters(network: bool) -> Result<Vec<BpfProgram>, String> {
    fn err(e: impl std::fmt::Display) -> String {
        format!("preparing the seccomp filter: {e}")
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(err)?;
    let mut denied: Vec<(i64, Vec<SeccompRule>)> = vec![
        (libc::SYS_io_uring_setup, vec![]),
        (libc::SYS_setsid, vec![]),
        (libc::SYS_setpgid, vec![]),
        (libc::SYS_unshare, vec![]),
        (libc::SYS_setns, vec![]),
        (libc::SYS_mount, vec![]),
        (
            libc::SYS_clone,
            vec![
                SeccompRule::new(vec![
                    SeccompCondition::new(
                        0,
                        SeccompCmpArgLen::Qword,
                        SeccompCmpOp::MaskedEq(libc::CLONE_NEWUSER as u64),
                        libc::CLONE_NEWUSER as u64,
                    )
                    .map_err(err)?,
                ])
                .map_err(err)?,
            ],
        ),
    ];
    if !network {
        denied.push((libc::SYS_socket, vec![]));
    }
    let eperm = SeccompFilter::new(
        denied.into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(err)?;
    let enosys = SeccompFilter::new(
        vec![(libc::SYS_clone3, vec![])].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(err)?;
    Ok(vec![
        eperm.try_into().map_err(err)?,
        enosys.try_into().map_err(err)?,
    ])
}

/// Applies `p` to the calling process. Runs in the child between `fork`
/// and `exec` (from a `pre_exec` hook): only system calls, no allocation.
pub fn apply_in_child(p: &Prepared) -> std::io::Result<()> {
    use rustix::process::{Rlimit, Signal, set_parent_process_death_signal, setrlimit};
    set_parent_process_death_signal(Some(Signal::KILL))?;
    for (res, v) in &p.rlimits {
        setrlimit(
            *res,
            Rlimit {
                current: Some(*v),
                maximum: Some(*v),
            },
        )?;
    }
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets the
    // close-on-exec flag of descriptors 3 and up; nothing is closed before
    // exec (the standard library's error-reporting pipe keeps working).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    rustix::thread::set_no_new_privs(true)?;
    if let Some(fd) = &p.landlock {
        // SAFETY: landlock_restrict_self takes a ruleset descriptor (owned
        // by `p`, alive for this call) and flags; no memory is passed.
        let rc = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    for f in &p.filters {
        seccompiler::apply_filter(f).map_err(|e| match e {
            seccompiler::Error::Seccomp(e) | seccompiler::Error::Prctl(e) => e,
            _ => std::io::Error::from_raw_os_error(libc::EINVAL),
        })?;
    }
    Ok(())
}

/// A private directory for one run, removed (with what the function left
/// there) on drop: `work/` is the function's working directory, `bin/` its
/// program's copy when krmsync is root.
#[derive(Debug)]
pub struct RunDir {
    root: PathBuf,
}

impl RunDir {
    /// Creates the directory, owned by `owner` (uid, gid) when given.
    pub fn new(owner: Option<(u32, u32)>) -> std::io::Result<RunDir> {
        let base = std::env::temp_dir();
        let mut last = None;
        for n in 0..100u32 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let root = base.join(format!("krmsync-fn-{}-{nanos}-{n}", std::process::id()));
            match std::fs::create_dir(&root) {
                Ok(()) => {
                    let dir = RunDir { root };
                    std::fs::set_permissions(&dir.root, std::fs::Permissions::from_mode(0o700))?;
                    std::fs::create_dir(dir.work())?;
                    std::fs::create_dir(dir.root.join("bin"))?;
                    if let Some((uid, gid)) = owner {
                        for p in [dir.root.clone(), dir.work(), dir.root.join("bin")] {
                            std::os::unix::fs::chown(&p, Some(uid), Some(gid))?;
                        }
                    }
                    return Ok(dir);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("cannot create a run directory")))
    }

    /// The function's working directory (also its `HOME` and `TMPDIR`).
    pub fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    /// Copies `program` into `bin/` (readable and executable by all).
    pub fn copy_program(&self, program: &Path) -> std::io::Result<PathBuf> {
        let name = program
            .file_name()
            .unwrap_or(OsStr::new("function"))
            .to_os_string();
        let dst = self.root.join("bin").join(name);
        std::fs::copy(program, &dst)?;
        std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o555))?;
        Ok(dst)
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

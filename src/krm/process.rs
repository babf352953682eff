//! Running one child process: piped stdin/stdout/stderr, an explicit
//! environment, its own process group (killed as a whole at the
//! wall-clock timeout, at an output cap, and after the child exits), and
//! optionally the [sandbox](super::sandbox).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What to run.
#[derive(Clone, Debug, Default)]
pub struct Run {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The whole environment of the child (nothing is inherited).
    pub env: Vec<(String, String)>,
    pub dir: PathBuf,
    pub stdin: Vec<u8>,
    /// Protections applied in the child before exec.
    pub sandbox: Option<Arc<super::sandbox::Prepared>>,
    /// Run as this uid and gid (krmsync is root).
    pub user: Option<(u32, u32)>,
}

/// What came out.
#[derive(Clone, Debug, Default)]
pub struct Output {
    pub success: bool,
    /// `exit status N` or `killed by signal N`.
    pub status: String,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

fn kill_group(pgid: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pgid as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// Reads `r` up to `cap` bytes; past the cap, kills the process group
/// `pgid` and stops reading (the rest of the output is never buffered).
fn read_capped(mut r: impl Read, cap: usize, pgid: u32) -> std::io::Result<(Vec<u8>, bool)> {
    let mut out = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            return Ok((out, false));
        }
        if out.len() + n > cap {
            kill_group(pgid);
            return Ok((out, true));
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// Runs `run`; kills the child after `timeout`; fails when stdout or
/// stderr exceed `max_output` bytes.
pub fn run(run: Run, timeout: Duration, max_output: usize) -> Result<Output, String> {
    if !run.dir.is_dir() {
        return Err(format!(
            "working directory {} does not exist",
            run.dir.display()
        ));
    }
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(&run.program);
    cmd.args(&run.args)
        .env_clear()
        .envs(run.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&run.dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some((uid, gid)) = run.user {
        cmd.uid(uid).gid(gid);
    }
    if let Some(prepared) = run.sandbox.clone() {
        // SAFETY: the hook runs in the forked child before exec; it only
        // issues system calls on data prepared (allocated) before the fork
        // (see `sandbox::apply_in_child`), which is async-signal-safe.
        unsafe {
            cmd.pre_exec(move || super::sandbox::apply_in_child(&prepared));
        }
    }
    // ETXTBSY: the program was written just now (a function binary copied
    // out of a bundle), and a process another thread is starting may still
    // hold an inherited copy of its write descriptor until that process
    // execs. That lasts microseconds: try again.
    const TEXT_FILE_BUSY: i32 = 26;
    let mut spawned = cmd.spawn();
    for attempt in 1..=20u64 {
        match &spawned {
            Err(e) if e.raw_os_error() == Some(TEXT_FILE_BUSY) => {
                std::thread::sleep(Duration::from_millis(5 * attempt));
                spawned = cmd.spawn();
            }
            _ => break,
        }
    }
    let mut child = spawned.map_err(|e| {
        let hint = if run.user.is_some() && e.kind() == std::io::ErrorKind::PermissionDenied {
            " (krmsync runs as root, so the sandbox runs the function as an unprivileged user)"
        } else {
            ""
        };
        format!("cannot start {}: {e}{hint}", run.program.display())
    })?;
    let pgid = child.id();
    let mut stdin = child.stdin.take();
    let input = run.stdin;
    let writer = std::thread::spawn(move || {
        if let Some(s) = stdin.as_mut() {
            // A child that does not read its input closes the pipe: not an error.
            let _ = s.write_all(&input);
        }
        drop(stdin);
    });
    let out_pipe = child.stdout.take();
    let err_pipe = child.stderr.take();
    let out_t = std::thread::spawn(move || match out_pipe {
        Some(p) => read_capped(p, max_output, pgid),
        None => Ok((Vec::new(), false)),
    });
    let err_t = std::thread::spawn(move || match err_pipe {
        Some(p) => read_capped(p, max_output, pgid),
        None => Ok((Vec::new(), false)),
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {
                if start.elapsed() >= timeout {
                    kill_group(pgid);
                    let _ = child.kill();
                    let _ = child.wait();
                    let _ = writer.join();
                    return Err(format!(
                        "{} timed out after {}s and was killed",
                        run.program.display(),
                        timeout.as_secs_f64()
                    ));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(format!("waiting for {}: {e}", run.program.display())),
        }
    };
    // What the child left behind in its group (background processes
    // holding the pipes open) goes with it.
    kill_group(pgid);
    let _ = writer.join();
    let (stdout, over_out) = out_t
        .join()
        .map_err(|_| "stdout reader panicked".to_string())?
        .map_err(|e| format!("reading stdout: {e}"))?;
    let (stderr, over_err) = err_t
        .join()
        .map_err(|_| "stderr reader panicked".to_string())?
        .map_err(|e| format!("reading stderr: {e}"))?;
    for (over, what) in [(over_out, "stdout"), (over_err, "stderr")] {
        if over {
            return Err(format!(
                "{} wrote more than {max_output} bytes on {what}; output cut off and the process killed",
                run.program.display()
            ));
        }
    }
    let status_text = match (
        status.code(),
        std::os::unix::process::ExitStatusExt::signal(&status),
    ) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => "unknown exit status".to_string(),
    };
    Ok(Output {
        success: status.success(),
        status: status_text,
        stdout,
        stderr,
    })
}

/// A file in the temporary directory, removed on drop.
#[derive(Debug)]
pub struct TempFile {
    path: PathBuf,
}

impl TempFile {
    pub fn new(prefix: &str, content: &[u8]) -> std::io::Result<TempFile> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir();
        for _ in 0..100 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let path = dir.join(format!("{prefix}{}{n}{nanos}", std::process::id()));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    f.write_all(content)?;
                    return Ok(TempFile { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other("cannot create a temporary file"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

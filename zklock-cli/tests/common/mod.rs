//! Shared pieces of the zklock-cli integration tests: running the `zklock`
//! binary with its output in files, and the ZooKeeper side (a real server
//! through the harness, zklock clients with short timeouts, a raw
//! third-party client), which is zklock-core's test module, included here
//! rather than copied.
//!
//! zklock's stdout and stderr go to files (never pipes), so a grandchild
//! left behind by a killed shell cannot block a test.
#![allow(dead_code)]

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

#[path = "../../../zklock-core/tests/common/mod.rs"]
mod zk;

#[allow(unused_imports)] // not every test file needs a server
pub use zk::*;

/// One second.
pub const SEC: Duration = Duration::from_secs(1);

/// The `zklock` binary under test: cargo's build of this crate, or
/// `$ZKLOCK_TEST_BIN` if set (an installed or release build, or a copy
/// while another package's `zklock` binary shares the target directory).
pub fn bin() -> String {
    std::env::var("ZKLOCK_TEST_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_zklock").to_owned())
}

/// A temporary directory for one test, removed at the end.
pub struct Dir(pub PathBuf);

impl Dir {
    pub fn new(name: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("zklock-cli-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        Dir(p)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    pub fn read(&self, name: &str) -> String {
        fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    pub fn exists(&self, name: &str) -> bool {
        self.path(name).exists()
    }

    pub fn touch(&self, name: &str) {
        fs::write(self.path(name), b"").unwrap();
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A running `zklock`.
pub struct Run {
    pub child: Child,
    out: PathBuf,
    err: PathBuf,
}

/// How a `zklock` ended.
#[derive(Debug)]
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// What zklock wrote to stdout so far.
    pub fn stdout(&self) -> String {
        fs::read_to_string(&self.out).unwrap_or_default()
    }

    /// What zklock wrote to stderr so far.
    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.err).unwrap_or_default()
    }

    /// zklock's stdin, if it was started with [`spawn_with_stdin`].
    pub fn stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    /// Whether zklock is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits (bounded) for zklock to exit.
    pub fn wait(mut self, limit: Duration) -> Outcome {
        let mut status = None;
        let done = zklock_harness::wait_for(limit, || {
            status = self.child.try_wait().unwrap();
            status.is_some()
        });
        if !done {
            let _ = self.child.kill();
            let _ = self.child.wait();
            panic!("zklock did not exit within {limit:?}; stderr: {}", self.stderr());
        }
        let status = status.unwrap();
        let code = status.code().unwrap_or_else(|| 128 + status.signal().unwrap());
        Outcome { code, stdout: self.stdout(), stderr: self.stderr() }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Starts `zklock ARGS` with `$D` = the test directory and extra `env`;
/// `ZKLOCK_HOSTS`, the other `ZKLOCK_*` options and `RUST_LOG` are never
/// inherited; stdin is empty.
pub fn spawn(dir: &Dir, name: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    spawn_io(dir, name, args, env, Stdio::null())
}

/// [`spawn`] with stdin a pipe from the test ([`Run::stdin`]).
pub fn spawn_with_stdin(dir: &Dir, name: &str, args: &[&str]) -> Run {
    spawn_io(dir, name, args, &[], Stdio::piped())
}

fn spawn_io(dir: &Dir, name: &str, args: &[&str], env: &[(&str, &str)], stdin: Stdio) -> Run {
    let out = dir.path(&format!("{name}.stdout"));
    let err = dir.path(&format!("{name}.stderr"));
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .env_remove("ZKLOCK_HOSTS")
        .env_remove("ZKLOCK_LOG")
        .env_remove("RUST_LOG")
        .env("D", &dir.0)
        .stdin(stdin)
        .stdout(fs::File::create(&out).unwrap())
        .stderr(fs::File::create(&err).unwrap());
    for var in [
        "ZKLOCK_TLS_CA",
        "ZKLOCK_TLS_CERT",
        "ZKLOCK_TLS_KEY",
        "ZKLOCK_DIGEST_USER",
        "ZKLOCK_DIGEST_PASSWORD",
        "ZKLOCK_SASL_USER",
        "ZKLOCK_SASL_PASSWORD",
        "ZKLOCK_ACL",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    Run { child: cmd.spawn().unwrap(), out, err }
}

/// Runs `zklock ARGS` to the end (at most 30 s).
pub fn zklock(dir: &Dir, name: &str, args: &[&str]) -> Outcome {
    spawn(dir, name, args, &[]).wait(30 * SEC)
}

pub fn kill(pid: i32, sig: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill({pid}, {sig})");
}

/// A shell script that waits until the file `$D/<file>` exists (at most 30 s).
pub fn wait_for_file(file: &str) -> String {
    format!(r#"i=0; while [ ! -e "$D/{file}" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done"#)
}

pub fn assert_no_panic(o: &Outcome) {
    assert!(!o.stderr.contains("panicked"), "zklock panicked: {}", o.stderr);
}

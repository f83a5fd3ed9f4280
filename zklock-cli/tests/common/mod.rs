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

/// The signals whose disposition the tests rely on: what zklock handles,
/// and what the tests' commands trap or die of.
const SIGNALS: [i32; 11] = [
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGHUP,
    libc::SIGTERM,
    libc::SIGALRM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGTSTP,
    libc::SIGTTIN,
    libc::SIGTTOU,
    libc::SIGCONT,
];

/// Makes `cmd` start with the default action for [`SIGNALS`], but `ignore`
/// ignored, whatever the test process inherited: `make test &` leaves
/// SIGINT and SIGQUIT ignored, and `exec` passes that on (Rust's `Command`
/// resets only SIGPIPE and the signal mask).
pub fn signal_dispositions(cmd: &mut Command, ignore: &[i32]) {
    use std::os::unix::process::CommandExt as _;
    let ignore = ignore.to_vec();
    // SAFETY: the closure runs between fork and exec and calls only
    // sigaction (async-signal-safe) on a sigaction value of its own; it
    // does not allocate (`ignore` was copied before the fork).
    unsafe {
        cmd.pre_exec(move || {
            for sig in SIGNALS {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = if ignore.contains(&sig) { libc::SIG_IGN } else { libc::SIG_DFL };
                if libc::sigaction(sig, &action, std::ptr::null_mut()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// Starts `zklock ARGS` with `$D` = the test directory and extra `env`;
/// `ZKLOCK_HOSTS`, the other `ZKLOCK_*` options and `RUST_LOG` are never
/// inherited; stdin is empty; the signals tests send have their default
/// action ([`signal_dispositions`]).
pub fn spawn(dir: &Dir, name: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    spawn_io(dir, name, args, env, Stdio::null(), &[])
}

/// [`spawn`] with stdin a pipe from the test ([`Run::stdin`]).
pub fn spawn_with_stdin(dir: &Dir, name: &str, args: &[&str]) -> Run {
    spawn_io(dir, name, args, &[], Stdio::piped(), &[])
}

/// [`spawn`] with the signals `ignore` ignored, as a shell leaves SIGINT
/// and SIGQUIT for a background job, or `nohup` SIGHUP.
pub fn spawn_ignoring(dir: &Dir, name: &str, args: &[&str], ignore: &[i32]) -> Run {
    spawn_io(dir, name, args, &[], Stdio::null(), ignore)
}

/// [`spawn`] with zklock in a process group of its own. The test's own
/// group is orphaned when the suite runs in a background job whose shell
/// has exited, and the kernel drops a stop signal (of default action) sent
/// to a process of an orphaned group: a command in zklock's group then
/// never stops. zklock's own group, whose parent (the test) is in another
/// group of the same session, is not orphaned.
pub fn spawn_in_own_group(dir: &Dir, name: &str, args: &[&str]) -> Run {
    spawn_cmd(dir, name, args, &[], Stdio::null(), &[], true)
}

fn spawn_io(dir: &Dir, name: &str, args: &[&str], env: &[(&str, &str)], stdin: Stdio, ignore: &[i32]) -> Run {
    spawn_cmd(dir, name, args, env, stdin, ignore, false)
}

fn spawn_cmd(
    dir: &Dir,
    name: &str,
    args: &[&str],
    env: &[(&str, &str)],
    stdin: Stdio,
    ignore: &[i32],
    own_group: bool,
) -> Run {
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
    signal_dispositions(&mut cmd, ignore);
    if own_group {
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    }
    Run { child: cmd.spawn().unwrap(), out, err }
}

/// The state letter of process `pid` in `/proc/PID/stat` (`R`, `S`, `D`,
/// `T`, `Z`...), `None` if there is no such process.
pub fn proc_state(pid: i32) -> Option<char> {
    stat_fields(&format!("/proc/{pid}/stat")).map(|(state, _, _)| state)
}

/// The state, parent pid and process group of the process whose stat file
/// is `path`.
fn stat_fields(path: &str) -> Option<(char, i32, i32)> {
    let st = fs::read_to_string(path).ok()?;
    // After the command name (in parentheses, which it may contain).
    let mut rest = st.rsplit_once(") ")?.1.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    let pgrp = rest.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

/// Whether the process group `pgid` is stopped: a member is stopped
/// (`T`) and no member can run: each is stopped, dead and not yet reaped
/// by its stopped parent (`Z`), or a shell waiting in its vfork for a child
/// of the group that is stopped before its exec (`D` with a stopped child:
/// dash starts commands with vfork, and a stop signal to the group that
/// comes in between stops the child and leaves the parent in `D` until the
/// child goes on).
pub fn group_stopped(pgid: i32) -> bool {
    let members = group_members(pgid);
    members.iter().any(|&(_, state, _)| state == 'T')
        && members.iter().all(|&(pid, state, _)| {
            matches!(state, 'T' | 'Z' | 'X')
                || (state == 'D' && members.iter().any(|&(_, s, ppid)| ppid == pid && s == 'T'))
        })
}

/// Waits up to `limit` until [`group_stopped`]; panics with the states of
/// the group's members if it is not.
pub fn wait_until_group_stopped(pgid: i32, limit: Duration) {
    assert!(
        zklock_harness::wait_for(limit, || group_stopped(pgid)),
        "timed out waiting until the command's process group {pgid} is stopped; its members (pid, state, parent): \
         {:?}",
        group_members(pgid)
    );
}

/// The processes of the process group `pgid`: pid, state, parent pid.
pub fn group_members(pgid: i32) -> Vec<(i32, char, i32)> {
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| {
            let pid: i32 = e.ok()?.file_name().to_str()?.parse().ok()?;
            let (state, ppid, pgrp) = stat_fields(&format!("/proc/{pid}/stat"))?;
            (pgrp == pgid).then_some((pid, state, ppid))
        })
        .collect()
}

/// Whether every thread of process `pid` is stopped (`T`): SIGSTOP stops
/// the threads one by one.
pub fn all_threads_stopped(pid: i32) -> bool {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else { return false };
    let states: Vec<Option<char>> = tasks
        .map(|t| {
            let t = t.ok()?;
            stat_fields(&format!("/proc/{pid}/task/{}/stat", t.file_name().to_str()?)).map(|(s, _, _)| s)
        })
        .collect();
    !states.is_empty() && states.iter().all(|s| *s == Some('T'))
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

//! Spawning server processes that die with us.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits, not
//! when the process exits. Test frameworks run tests on short-lived threads and
//! a `Cluster` may outlive the thread that created it, so every child is forked
//! from one dedicated thread that lives as long as the process.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::thread;

type Request = (Command, mpsc::Sender<io::Result<Child>>);

/// Channel to the spawner thread, or `None` if that thread could not be
/// created (then children are forked from the calling thread).
static SPAWNER: OnceLock<Option<mpsc::Sender<Request>>> = OnceLock::new();

/// Spawns `cmd` with `PR_SET_PDEATHSIG(SIGKILL)` from the long-lived spawner
/// thread.
///
/// Errors: whatever `Command::spawn` returns (e.g. java not found).
pub(crate) fn spawn_tied(cmd: Command) -> io::Result<Child> {
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        thread::Builder::new()
            .name("zklock-harness-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    // The requester may have given up; nothing to do then
                    // except not leaking the child.
                    if let Err(mpsc::SendError(Ok(mut child))) = reply.send(spawn_now(&mut cmd)) {
                        let _ = child.kill();
                        let _ = child.wait();
                    }
                }
            })
            .ok()
            .map(|_| tx)
    });
    let Some(tx) = spawner else {
        let mut cmd = cmd;
        return spawn_now(&mut cmd);
    };
    let (reply_tx, reply_rx) = mpsc::channel();
    if let Err(mpsc::SendError((mut cmd, _))) = tx.send((cmd, reply_tx)) {
        // Spawner thread gone (cannot happen: it never exits); fall back.
        return spawn_now(&mut cmd);
    }
    reply_rx.recv().unwrap_or_else(|_| Err(io::Error::other("zklock-harness spawner thread died")))
}

fn spawn_now(cmd: &mut Command) -> io::Result<Child> {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // Runs in the forked child before exec; only async-signal-safe calls.
    let hook = move || -> io::Result<()> {
        // SAFETY: plain syscalls (prctl, getppid, _exit) with valid
        // arguments, all async-signal-safe.
        unsafe {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
        }
        Ok(())
    };
    // SAFETY: `hook` does not allocate, lock or touch shared state; it only
    // makes async-signal-safe syscalls, as required between fork and exec.
    unsafe {
        cmd.pre_exec(hook);
    }
    cmd.spawn()
}

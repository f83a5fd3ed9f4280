//! The signals `zklock run` handles itself: SIGINT, SIGTERM and SIGHUP.
//!
//! They are blocked in every thread (the mask is set before any thread
//! starts, and threads inherit it) and taken by one thread with
//! `sigwaitinfo`, which reports each one to a callback. The command must not
//! inherit that mask (a shell would not die of SIGTERM, for one), and the
//! standard library does not reset it: [`unblock_in_child`] does, between
//! `fork` and `exec`.

use std::io;
use std::mem::MaybeUninit;

/// The signals forwarded to the command (or that cancel the wait).
pub(crate) const HANDLED: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// `si_code` of a signal the kernel sent on its own, e.g. SIGINT from the
/// terminal's Ctrl-C, which went to the whole foreground process group.
const SI_KERNEL: i32 = 0x80;

/// One signal received.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Received {
    /// The signal number.
    pub(crate) signal: i32,
    /// Sent by the kernel to the process group (terminal Ctrl-C, hang-up):
    /// the command received it too, so it is not forwarded again.
    pub(crate) to_group: bool,
}

/// The signal set of [`HANDLED`].
fn handled_set() -> io::Result<libc::sigset_t> {
    let mut set = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises the set; sigaddset only writes to it.
    unsafe {
        if libc::sigemptyset(set.as_mut_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        for sig in HANDLED {
            if libc::sigaddset(set.as_mut_ptr(), sig) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(set.assume_init())
    }
}

/// Blocks [`HANDLED`] in the calling thread (and so in every thread it
/// starts later) and starts the thread that receives them and passes each to
/// `on_signal`. Call it before any other thread is started.
///
/// # Errors
/// The OS error if the mask cannot be set or the thread cannot start.
pub(crate) fn start(on_signal: impl Fn(Received) -> bool + Send + 'static) -> io::Result<()> {
    let set = handled_set()?;
    // SAFETY: `set` is an initialised signal set; the old mask is not wanted.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    std::thread::Builder::new().name("zklock-signals".into()).spawn(move || {
        // Runs until the receiver is gone (`on_signal` returns false) or the
        // process exits.
        loop {
            let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
            // SAFETY: `set` is initialised and `info` is writable memory of
            // the right type.
            let sig = unsafe { libc::sigwaitinfo(&set, info.as_mut_ptr()) };
            if sig < 0 {
                // EINTR (e.g. a stop/continue): wait again.
                continue;
            }
            // SAFETY: sigwaitinfo filled `info` (it was zeroed before).
            let code = unsafe { info.assume_init() }.si_code;
            if !on_signal(Received { signal: sig, to_group: code == SI_KERNEL }) {
                return;
            }
        }
    })?;
    Ok(())
}

/// Makes `cmd` unblock [`HANDLED`] in the child before `exec`, so that the
/// command starts with the signal mask zklock was started with.
///
/// # Errors
/// The OS error if the signal set cannot be built.
pub(crate) fn unblock_in_child(cmd: &mut std::process::Command) -> io::Result<()> {
    use std::os::unix::process::CommandExt as _;
    let set = handled_set()?;
    // SAFETY: the closure runs in the child between fork and exec and only
    // calls pthread_sigmask, which is async-signal-safe, on a set built
    // before the fork.
    unsafe {
        cmd.pre_exec(move || match libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) {
            0 => Ok(()),
            rc => Err(io::Error::from_raw_os_error(rc)),
        });
    }
    Ok(())
}

/// Sends `sig` to process `pid`. The caller must not have reaped `pid`.
pub(crate) fn send(pid: u32, sig: i32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: kill has no memory-safety preconditions.
    if unsafe { libc::kill(pid, sig) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

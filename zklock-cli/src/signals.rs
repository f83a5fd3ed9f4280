//! The signals zklock handles itself: SIGINT, SIGTERM and SIGHUP, received
//! through signal-hook (a handler that only writes to a pipe, read by one
//! thread of ours), with the origin of each: a signal the kernel sent to
//! the whole foreground process group (a terminal's Ctrl-C or hang-up)
//! reached the command too, unless it runs in a group of its own.
//!
//! The command does not inherit the handler: `exec` resets handled signals
//! to their default action, and zklock's signal mask is never changed.

use std::io;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::iterator::SignalsInfo;
use signal_hook::low_level::siginfo::Cause;

/// The signals forwarded to the command (or that cancel the wait, or end
/// `zklock hold`).
const HANDLED: [i32; 3] = [SIGINT, SIGTERM, SIGHUP];

/// One signal received.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Received {
    /// The signal number.
    pub(crate) signal: i32,
    /// Sent by the kernel to the process group (terminal Ctrl-C, hang-up):
    /// a command in zklock's process group received it too.
    pub(crate) to_group: bool,
}

/// Installs the handler for [`HANDLED`] and starts the thread that passes
/// each signal received to `on_signal`, until it returns false. From then
/// on these signals no longer end zklock by themselves.
///
/// # Errors
/// The OS error if the handler cannot be installed or the thread cannot
/// start.
pub(crate) fn start(on_signal: impl Fn(Received) -> bool + Send + 'static) -> io::Result<()> {
    let mut signals = SignalsInfo::<WithOrigin>::new(HANDLED)?;
    std::thread::Builder::new().name("zklock-signals".into()).spawn(move || {
        for origin in signals.forever() {
            if !on_signal(Received { signal: origin.signal, to_group: origin.cause == Cause::Kernel }) {
                return;
            }
        }
    })?;
    Ok(())
}

/// Sends `sig` to process `pid`, or with `group` to its process group
/// (whose id is `pid`: the command leads a group of its own). The caller
/// must not have reaped `pid` (a group outlives its leader, and its id is
/// not reused while it has members).
///
/// # Errors
/// The OS error of kill(2) (`ESRCH`: no such process or group).
pub(crate) fn send(pid: u32, sig: i32, group: bool) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let target = if group { -pid } else { pid };
    // SAFETY: kill has no memory-safety preconditions.
    if unsafe { libc::kill(target, sig) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether the process group `pgid` still has a member (one that has not
/// been reaped; zklock may signal it).
pub(crate) fn group_alive(pgid: u32) -> bool {
    match send(pgid, 0, true) {
        Ok(()) => true,
        Err(e) => e.raw_os_error() == Some(libc::EPERM),
    }
}

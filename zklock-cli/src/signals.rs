//! The signals zklock handles itself, received through signal-hook (a
//! handler that only writes to a pipe, read by one thread of ours), with
//! the origin of each: a signal the kernel sent to the whole foreground
//! process group (a terminal's Ctrl-C, Ctrl-\\ or hang-up) reached the
//! command too, unless it runs in a group of its own.
//!
//! Every signal whose default action ends a process and that a user or a
//! supervisor sends is handled ([`HANDLED`]): left to its default, it
//! would end zklock and leave the command running without anyone watching
//! the lock. The rest (SIGKILL, and signals of faults or resource limits)
//! still end zklock; the command then gets SIGKILL from the kernel
//! ([`kill_with_parent`]).
//!
//! A signal that is ignored when zklock starts (SIGINT and SIGQUIT for
//! `zklock run ... &` in a script, SIGHUP under `nohup`) stays ignored,
//! by zklock and by the command, which inherits that: an ignored signal
//! cannot end zklock, and the command runs as it would without zklock.
//! SIGCONT is the exception ([`to_handle`]).
//!
//! The command does not inherit the handler: `exec` resets handled signals
//! to their default action. Every thread of zklock but the signals thread
//! blocks SIGTSTP and SIGCONT ([`start`]); the command starts with the
//! mask zklock started with ([`unmasked`]: a child inherits its parent's
//! mask through `exec`, and Rust's `Command` leaves it so).

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::OnceLock;

use signal_hook::consts::{
    SIGALRM, SIGCONT, SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2,
};
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::iterator::SignalsInfo;
use signal_hook::low_level::siginfo::Cause;

/// The signals forwarded to the command (or that cancel the wait, or end
/// `zklock hold`), and the job-control ones ([`job_control`]).
const HANDLED: [i32; 11] =
    [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2, SIGTSTP, SIGTTIN, SIGTTOU, SIGCONT];

/// Whether `sig`, forwarded to the command, asks zklock to stop too
/// (`zklock lead` does not stand again after a loss): all but SIGUSR1 and
/// SIGUSR2, which are only passed on.
pub(crate) fn stops(sig: i32) -> bool {
    sig != SIGUSR1 && sig != SIGUSR2
}

/// Job control: a stop (SIGTSTP, SIGTTIN, SIGTTOU) or SIGCONT. By default
/// a stop signal would stop zklock alone and leave its command running
/// with nobody watching the lock; zklock handles them itself: a stop the
/// terminal sent to the whole foreground group (Ctrl-Z: the command got it
/// too) stops zklock as well ([`stop_self_unless_continued`]), one sent to zklock alone is
/// passed to the command and zklock keeps watching. `Some(true)` for a
/// stop, `Some(false)` for SIGCONT, `None` for other signals.
pub(crate) fn job_control(sig: i32) -> Option<bool> {
    match sig {
        SIGTSTP | SIGTTIN | SIGTTOU => Some(true),
        SIGCONT => Some(false),
        _ => None,
    }
}

/// Stops zklock (SIGSTOP, which cannot be handled) until a SIGCONT, for
/// a stop received earlier, unless a SIGCONT came since: handled
/// ([`LAST_JOB_CONTROL`] is SIGCONT) or still pending (the calling thread
/// blocks it; see [`start`]). A SIGCONT that came before the SIGSTOP does
/// not continue it (and SIGSTOP discards one still pending): stopped
/// after it, zklock stayed stopped for good (outside attack round 42, F1:
/// SIGTSTP and SIGCONT back to back to a zklock waiting for its lock, 4 of
/// 30 runs). What is left is a SIGCONT sent between this check and the
/// SIGSTOP, microseconds, where a pair sent back to back is long in.
pub(crate) fn stop_self_unless_continued() {
    // SAFETY: sigpending writes only to `pending`, ours (all-zero is a
    // valid value); sigismember only reads it; kill has no memory-safety
    // preconditions.
    unsafe {
        // First: on the signals thread, which does not block SIGCONT, the
        // return from this call is where a pending one is handled.
        let mut pending: libc::sigset_t = std::mem::zeroed();
        if libc::sigpending(&mut pending) == 0 && libc::sigismember(&pending, SIGCONT) == 1 {
            return;
        }
        if LAST_JOB_CONTROL.load(Ordering::SeqCst) == SIGCONT {
            return;
        }
        libc::kill(libc::getpid(), libc::SIGSTOP);
    }
}

/// Whether a stop sent to zklock stops zklock itself, on the signals
/// thread, rather than being reported ([`stops_stop_zklock`]).
static STOPS_STOP_ZKLOCK: AtomicBool = AtomicBool::new(false);

/// From now on (`on`), or no longer, a stop sent to zklock stops zklock
/// itself, before anything else happens, and is not reported: while
/// nothing runs yet (connecting, waiting for the lock). Done on the signals
/// thread, whose handlers run to their end before it goes on, a SIGCONT
/// that came before the stop is done with is always seen by
/// [`stop_self_unless_continued`]; decided on another thread, one taken by
/// the signals thread but not yet recorded was missed (1 in about 400
/// back-to-back pairs while the machine was loaded).
pub(crate) fn stops_stop_zklock(on: bool) {
    STOPS_STOP_ZKLOCK.store(on, Ordering::SeqCst);
}

/// Makes `cmd` get SIGKILL from the kernel when zklock dies (Linux's
/// parent-death signal): SIGKILL to zklock, a crash, or a signal zklock
/// does not handle would otherwise leave the command running without the
/// lock once the session expires, while nothing is left to signal it.
/// SIGKILL, not `--lost-signal`: nobody would be left to follow up with
/// `--kill-after`. It reaches the command's process only, not processes
/// it started; it is cleared by an `exec` of a set-user-ID program.
///
/// The spawning thread must live as long as the command (the kernel sends
/// the signal when that thread ends): zklock spawns from its main thread.
pub(crate) fn kill_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    let parent = std::process::id();
    // SAFETY: the closure runs in the child between fork and exec and
    // calls only async-signal-safe system calls (prctl, getppid).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            // zklock died between fork and prctl: the signal will not come.
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                // (No allocation between fork and exec: a raw OS error.)
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// One signal received.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Received {
    /// The signal number.
    pub(crate) signal: i32,
    /// Sent by the kernel to the process group (terminal Ctrl-C, hang-up):
    /// a command in zklock's process group received it too.
    pub(crate) to_group: bool,
}

/// Whether `sig` is ignored (`SIG_IGN`) in this process.
fn ignored(sig: i32) -> bool {
    // SAFETY: sigaction with no new action only writes the current one to
    // `old`, a valid sigaction of ours (all-zero is a valid value of it).
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// The signals of [`HANDLED`] that zklock handles here: those not ignored
/// when it starts (they stay ignored, for the command too), and SIGCONT
/// always (it continues a stopped process whatever its disposition, so
/// ignoring it only hid from zklock the SIGCONT it must pass on to a
/// command it stopped).
fn to_handle() -> Vec<i32> {
    HANDLED.into_iter().filter(|&sig| sig == SIGCONT || !ignored(sig)).collect()
}

/// The job-control signal ([`job_control`]) received last, 0 before any.
/// signal-hook reports the signals that came since its last look in the
/// order of their numbers, SIGCONT (18) before SIGTSTP (20), whatever the
/// order they came in: a stop and a continue sent back to back would be
/// passed on continue first, leaving the command stopped with the lock
/// held. The kernel lets the last of a stop and a continue win; so does
/// zklock, by this record.
static LAST_JOB_CONTROL: AtomicI32 = AtomicI32::new(0);

/// The signals only the signals thread takes ([`start`]): a stop a user
/// or a supervisor sends, and SIGCONT.
fn one_thread_only() -> libc::sigset_t {
    // SAFETY: sigemptyset and sigaddset write only to `set`, ours; the
    // signal numbers are valid.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, SIGTSTP);
        libc::sigaddset(&mut set, SIGCONT);
        set
    }
}

/// Changes the calling thread's signal mask by `how` with
/// [`one_thread_only`]; the mask it had before.
fn mask(how: libc::c_int) -> io::Result<libc::sigset_t> {
    let set = one_thread_only();
    // SAFETY: `set` is a valid signal set, `old` a sigset_t of ours to
    // write (all-zero is a valid value of it).
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    match unsafe { libc::pthread_sigmask(how, &set, &mut old) } {
        0 => Ok(old),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// The signal mask of the thread that called [`start`], before it blocked
/// [`one_thread_only`]: what zklock started with.
static MASK_BEFORE: OnceLock<libc::sigset_t> = OnceLock::new();

/// Makes `cmd` start with the signal mask zklock started with, not the one
/// of the thread that spawns it ([`start`] blocked SIGTSTP and SIGCONT
/// there): a command that keeps the mask it is given (`sleep`, a shell's
/// `exec`) would otherwise never stop (outside attack round 40, F1: Ctrl-Z
/// stopped zklock and left its command running, with nobody watching the
/// lock). Nothing to do before [`start`].
pub(crate) fn unmasked(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    let Some(&before) = MASK_BEFORE.get() else { return };
    // SAFETY: the closure runs in the child between fork and exec and calls
    // only pthread_sigmask (sigprocmask, async-signal-safe) on a copy of a
    // valid signal set.
    unsafe {
        cmd.pre_exec(move || match libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut()) {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        });
    }
}

/// Installs the handler for [`HANDLED`] but those ignored (see
/// [`to_handle`]) and starts the thread that passes each signal received
/// to `on_signal`, until it returns false. From then on these signals no
/// longer end zklock by themselves. Of the job-control signals reported
/// together, only the one that came last is passed on.
///
/// SIGTSTP and SIGCONT are handled on the signals thread only: the calling
/// thread blocks them, and so does every thread it starts later (they
/// inherit its mask), so it must be called before zklock starts any other
/// thread. Handled on two threads at once, a stop and a continue sent back
/// to back could be recorded in the wrong order (the stop's handler,
/// started first, storing last), and the continue then not passed on:
/// the command stayed stopped with the lock held. On one thread the
/// kernel delivers them in the order they were sent (a SIGCONT discards a
/// stop not yet delivered, and a stop a SIGCONT), and each job-control
/// signal's handler runs with the others blocked
/// ([`handle_one_at_a_time`]: a continue delivered during a stop's handler
/// could otherwise interrupt it before its record). SIGTTIN and SIGTTOU stay
/// unblocked: the kernel sends them when a background zklock reads or
/// writes its terminal, and a thread that blocks them would get EIO there
/// instead (or write through a terminal's `tostop`).
///
/// # Errors
/// The OS error if the handler cannot be installed, the mask cannot be
/// set or the thread cannot start.
pub(crate) fn start(on_signal: impl Fn(Received) -> bool + Send + 'static) -> io::Result<()> {
    let handled = to_handle();
    let before = mask(libc::SIG_BLOCK)?;
    let _ = MASK_BEFORE.set(before);
    for &sig in handled.iter().filter(|&&sig| job_control(sig).is_some()) {
        // Registered before signal-hook's own action, so it runs first
        // (signal-hook-registry runs the actions of a signal in the order
        // of registration): the record is up to date when the signal is
        // reported.
        // SAFETY: the action only stores to an atomic, which is
        // async-signal-safe.
        unsafe { signal_hook::low_level::register(sig, move || LAST_JOB_CONTROL.store(sig, Ordering::SeqCst)) }?;
    }
    let mut signals = SignalsInfo::<WithOrigin>::new(handled.clone())?;
    let job: Vec<i32> = handled.iter().copied().filter(|&sig| job_control(sig).is_some()).collect();
    for &sig in &job {
        handle_one_at_a_time(sig, &job)?;
    }
    std::thread::Builder::new().name("zklock-signals".into()).spawn(move || {
        // The thread inherits the block set above; it alone unblocks them.
        // (pthread_sigmask cannot fail for a valid `how` and set.)
        let _ = mask(libc::SIG_UNBLOCK);
        for origin in signals.forever() {
            // A stop or continue that another one came after: that one is
            // (or was) reported too, and is what holds.
            if job_control(origin.signal).is_some() && LAST_JOB_CONTROL.load(Ordering::SeqCst) != origin.signal {
                continue;
            }
            if job_control(origin.signal) == Some(true) && STOPS_STOP_ZKLOCK.load(Ordering::SeqCst) {
                stop_self_unless_continued();
                continue;
            }
            if !on_signal(Received { signal: origin.signal, to_group: origin.cause == Cause::Kernel }) {
                return;
            }
        }
    })?;
    Ok(())
}

/// Makes the handler of `sig` (signal-hook's registry installed it) run
/// with every signal of `job` blocked. The registry installs its handlers
/// with an empty `sa_mask`, so a SIGCONT could interrupt the handler of a
/// SIGTSTP delivered just before it, on the signals thread itself, before
/// the stop's store to [`LAST_JOB_CONTROL`]: the stop was recorded last and
/// passed on last, and the command stayed stopped with the lock held (the
/// stop-then-continue test failed about once in 40 runs of 50 pairs on a
/// loaded machine, the command's shell stopped, zklock running). With the
/// others blocked, the handlers run one after the other in the order the
/// kernel delivers the signals. The registry installs a signal's handler
/// once, at its first registration, and never again: this changes only the
/// mask of the action it installed.
///
/// # Errors
/// The OS error of sigaction(2).
fn handle_one_at_a_time(sig: i32, job: &[i32]) -> io::Result<()> {
    // SAFETY: sigaction with a null new action only writes the current one
    // to `act` (ours; all-zero is a valid value); sigaddset writes only to
    // its mask; the action installed again is the one just read, with a
    // larger mask.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, std::ptr::null(), &mut act) != 0 {
            return Err(io::Error::last_os_error());
        }
        for &other in job {
            libc::sigaddset(&mut act.sa_mask, other);
        }
        if libc::sigaction(sig, &act, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The action's mask of signal `sig` now.
    fn action_mask(sig: i32) -> libc::sigset_t {
        // SAFETY: as in `handle_one_at_a_time`.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            assert_eq!(libc::sigaction(sig, std::ptr::null(), &mut act), 0);
            act.sa_mask
        }
    }

    fn has(set: &libc::sigset_t, sig: i32) -> bool {
        // SAFETY: sigismember only reads a valid set.
        unsafe { libc::sigismember(set, sig) == 1 }
    }

    /// A handler installed by signal-hook's registry runs with an empty
    /// mask, and `handle_one_at_a_time` adds the signals given, keeping the
    /// handler. (SIGURG and SIGWINCH: ignored by default, never sent here.)
    #[test]
    fn a_handler_runs_with_the_other_job_signals_blocked() {
        let fired = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let f = fired.clone();
        // SAFETY: the action only stores to an atomic.
        let id =
            unsafe { signal_hook::low_level::register(libc::SIGURG, move || f.store(true, Ordering::SeqCst)) }.unwrap();
        assert!(!has(&action_mask(libc::SIGURG), libc::SIGWINCH), "the registry's mask is empty");
        handle_one_at_a_time(libc::SIGURG, &[libc::SIGURG, libc::SIGWINCH]).unwrap();
        let mask = action_mask(libc::SIGURG);
        assert!(has(&mask, libc::SIGWINCH) && has(&mask, libc::SIGURG));
        // The handler is still the registry's: it runs the action.
        // SAFETY: raise has no memory-safety preconditions.
        unsafe { libc::raise(libc::SIGURG) };
        assert!(fired.load(Ordering::SeqCst));
        signal_hook::low_level::unregister(id);
    }
}

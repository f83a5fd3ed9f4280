//! `zklock run`: take the lock, run the command while holding it, release.
//! `zklock lead`: the same with leadership of an election, again and
//! again while leadership is lost (rejoin).

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zklock_core::{AcquireOptions, CancelToken, Client, Error, ErrorKind, Guard, Lock, LockOptions, LockState};

use crate::args::{signal_name, NodeData, RunOptions};
use crate::connect_options;
use crate::exit;
use crate::signals::{self, Received};

/// How often the running command and the lock are looked at.
const TICK: Duration = Duration::from_millis(50);

/// What the main thread waits for.
enum Event {
    /// SIGINT, SIGTERM or SIGHUP reached zklock.
    Signal(Received),
    /// The connect finished.
    Connected(zklock_core::Result<Client>),
    /// The acquire finished.
    Acquired(zklock_core::Result<Guard>),
}

/// Runs `zklock run` and returns the exit code.
pub(crate) fn run(opts: RunOptions) -> i32 {
    let hosts = match crate::checked_target(&opts.connection, &opts.path) {
        Ok(h) => h,
        Err(code) => return code,
    };
    let options = match &opts.data {
        None => LockOptions::default(),
        Some(NodeData::Text(t)) => LockOptions::default().data(t.as_bytes()),
        Some(NodeData::Identify) => LockOptions::default().identify_process(),
    };
    // Bad --data is a usage error before connecting, like every other input.
    if let Err(e) = options.validate() {
        return crate::zk_error(if opts.rejoin { "bad --id (or --data)" } else { "bad --data" }, &e);
    }

    let (tx, rx) = mpsc::channel::<Event>();
    let signal_tx = tx.clone();
    if let Err(e) = signals::start(move |r| signal_tx.send(Event::Signal(r)).is_ok()) {
        note!("cannot set up signal handling: {e}");
        return exit::INTERNAL;
    }

    // Connect through the core's callback, so that a signal can end the wait.
    let copts = connect_options(&opts.connection, &hosts);
    let connect_limit = copts.1 + Duration::from_secs(30);
    let t = tx.clone();
    if let Err(e) = Client::connect_then(copts.0, move |r| {
        let _ = t.send(Event::Connected(r));
    }) {
        return crate::connect_error(&hosts, &e);
    }
    let client = match wait_for(&rx, connect_limit, |ev| match ev {
        Event::Connected(r) => Some(r),
        _ => None,
    }) {
        Waited::Done(Ok(c)) => c,
        Waited::Done(Err(e)) => return crate::connect_error(&hosts, &e),
        Waited::Signal(sig) => {
            note!("{} while connecting; nothing was locked", signal_name(sig));
            return 128 + sig;
        },
        Waited::Gone => {
            note!("internal error: connecting to ZooKeeper did not finish");
            return exit::INTERNAL;
        },
    };

    // A signal to zklock while the command runs: no rejoining after it.
    let stopping = AtomicBool::new(false);
    let code = loop {
        let code = hold_and_run(&opts, &client, options.clone(), &rx, &tx, &stopping);
        if !(opts.rejoin && code == exit::LOST) {
            break code;
        }
        if stopping.load(Ordering::Acquire) {
            note!("leadership of {} lost while stopping; not rejoining", opts.path);
            break code;
        }
        // `zklock lead`: the command has exited; stand again.
        note!("leadership of {} lost; rejoining the election", opts.path);
    };
    client.close();
    code
}

/// How [`wait_for`] ended.
enum Waited<T> {
    /// The awaited event came.
    Done(T),
    /// A signal came first.
    Signal(i32),
    /// Nothing within the limit (or the senders are gone).
    Gone,
}

/// Waits up to `limit` for the event `pick` accepts, or a signal.
fn wait_for<T>(rx: &Receiver<Event>, limit: Duration, mut pick: impl FnMut(Event) -> Option<T>) -> Waited<T> {
    let deadline = Instant::now().checked_add(limit);
    loop {
        let ev = match deadline {
            Some(d) => match rx.recv_timeout(d.saturating_duration_since(Instant::now())) {
                Ok(ev) => ev,
                Err(_) => return Waited::Gone,
            },
            None => match rx.recv() {
                Ok(ev) => ev,
                Err(_) => return Waited::Gone,
            },
        };
        if let Event::Signal(r) = ev {
            return Waited::Signal(r.signal);
        }
        if let Some(v) = pick(ev) {
            return Waited::Done(v);
        }
    }
}

/// Acquires, runs the command, releases. The caller closes the client.
fn hold_and_run(
    opts: &RunOptions,
    client: &Client,
    options: LockOptions,
    rx: &Receiver<Event>,
    tx: &mpsc::Sender<Event>,
    stopping: &AtomicBool,
) -> i32 {
    let made = match opts.permits {
        Some(permits) => client.semaphore(&opts.path, permits, options),
        None => client.lock_with(&opts.path, opts.mode, options),
    };
    let lock = match made {
        Ok(l) => l,
        Err(e) => return crate::zk_error("cannot make the lock", &e),
    };
    let op_limit = client_op_limit(client);
    let t = tx.clone();
    let cancel = CancelToken::new();
    let call = AcquireOptions::new().timeout(opts.timeout).cancel_token(cancel.clone());
    if let Err(e) = lock.acquire_then(&call, move |r| {
        let _ = t.send(Event::Acquired(r));
    }) {
        return acquire_error(opts, &e);
    }
    // The acquire ends by itself at the deadline; without one it may wait
    // as long as the user asked (until a signal).
    // After the deadline the acquire still deletes its node (a few requests).
    let limit = opts.timeout.map_or(Duration::MAX, |t| t.saturating_add(op_limit * 3 + Duration::from_secs(5)));
    let guard = match wait_for(rx, limit, |ev| match ev {
        Event::Acquired(r) => Some(r),
        _ => None,
    }) {
        Waited::Done(Ok(g)) => g,
        Waited::Done(Err(e)) => return acquire_error(opts, &e),
        Waited::Signal(sig) => return cancel_acquire(&lock, &cancel, rx, op_limit, sig),
        Waited::Gone => {
            note!("internal error: the acquire did not finish");
            return exit::INTERNAL;
        },
    };
    if opts.verbose {
        note!(
            "acquired the {} lock {}: node {}, fencing token {}, session {:#x}",
            opts.mode.name().to_ascii_lowercase(),
            opts.path,
            guard.node_path(),
            guard.fencing_token(),
            guard.session_id()
        );
    }
    let code = supervise(opts, &guard, rx, stopping);
    match guard.release() {
        Ok(status) if opts.verbose => note!("released {} ({status:?})", guard.node_path()),
        Ok(_) => {},
        // A loss is reported by `supervise` already.
        Err(e) if opts.verbose => note!("release: {}", e.message()),
        Err(_) => {},
    }
    code
}

/// The longest one ZooKeeper request may take for this client.
fn client_op_limit(client: &Client) -> Duration {
    crate::operation_timeout(client.session_timeout().unwrap_or(Duration::from_secs(10)))
}

/// Reports a failed acquire; returns 75 for a timeout, else per [`crate::zk_error`].
fn acquire_error(opts: &RunOptions, e: &Error) -> i32 {
    match e.kind() {
        ErrorKind::Timeout => {
            let waited = match opts.timeout {
                Some(t) if t.is_zero() => "it is held (--timeout 0 tries once)".to_owned(),
                Some(t) => format!("not granted within {t:?}"),
                None => "deadline passed".to_owned(),
            };
            note!("timed out: lock {}: {waited}", opts.path);
            exit::TIMEOUT
        },
        _ => crate::zk_error(&format!("cannot acquire lock {}", opts.path), e),
    }
}

/// A signal came while waiting: cancel the acquire (our node is deleted),
/// then exit with 128 + the signal.
fn cancel_acquire(lock: &Lock, cancel: &CancelToken, rx: &Receiver<Event>, op_limit: Duration, sig: i32) -> i32 {
    cancel.cancel();
    // The cancelled acquire deletes its node before it returns; a second
    // signal while we wait for that is ignored.
    let deadline = Instant::now() + op_limit * 3 + Duration::from_secs(5);
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Event::Acquired(Ok(g))) => {
                // Granted before the cancel took effect: give it back.
                let _ = g.release();
                break;
            },
            Ok(Event::Acquired(Err(_))) => break,
            Ok(_) => {},
            Err(_) => {
                note!("the cancelled acquire did not finish; closing the session removes its node");
                break;
            },
        }
    }
    note!("{} while waiting for lock {}; not acquired", signal_name(sig), lock.path());
    128 + sig
}

/// Spawns the command and follows it and the lock until the command exits.
/// A SIGINT, SIGTERM or SIGHUP to zklock sets `stopping` (forwarded to the
/// command unless the whole group got it).
fn supervise(opts: &RunOptions, guard: &Guard, rx: &Receiver<Event>, stopping: &AtomicBool) -> i32 {
    let program = &opts.command[0];
    let mut cmd = std::process::Command::new(program);
    cmd.args(&opts.command[1..])
        .env("ZKLOCK_FENCING_TOKEN", guard.fencing_token().to_string())
        .env("ZKLOCK_NODE_PATH", guard.node_path())
        .env("ZKLOCK_LOCK_PATH", &opts.path)
        .env("ZKLOCK_LOCK_MODE", opts.mode.name().to_ascii_lowercase())
        .env("ZKLOCK_SESSION_ID", format!("{:#x}", guard.session_id()));
    if let Err(e) = signals::unblock_in_child(&mut cmd) {
        note!("cannot prepare the command's signal mask: {e}");
        return exit::INTERNAL;
    }
    // Every state change reaches this flag, also a suspension too short for
    // the polling below to see (it matters with --signal-on-suspend).
    let troubled = Arc::new(AtomicBool::new(false));
    let flag = troubled.clone();
    guard.on_state_change(move |state| {
        if state != LockState::Held {
            flag.store(true, Ordering::Release);
        }
    });
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let shown = program.to_string_lossy();
            return if e.kind() == std::io::ErrorKind::NotFound {
                note!("command not found: {shown}");
                exit::NOT_FOUND
            } else {
                note!("cannot run {shown}: {e}");
                exit::CANNOT_EXECUTE
            };
        },
    };
    let mut watch =
        LockWatch { path: opts.path.clone(), strict: opts.signal_on_suspend, suspended_since: None, troubled };
    let mut lost: Option<String> = None;
    let mut kill_at: Option<Instant> = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {},
            Err(e) => {
                note!("cannot poll the command: {e}; waiting for it to exit");
                match child.wait() {
                    Ok(status) => break status,
                    Err(e) => {
                        note!("cannot wait for the command: {e}");
                        return exit::INTERNAL;
                    },
                }
            },
        }
        match rx.recv_timeout(TICK) {
            Ok(Event::Signal(r)) => {
                stopping.store(true, Ordering::Release);
                if !r.to_group {
                    forward(&child, r.signal);
                }
            },
            Ok(_) | Err(RecvTimeoutError::Timeout) => {},
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(TICK),
        }
        if lost.is_none() {
            if let Some(why) = watch.look(guard) {
                note!("{why}; sending {} to the command (pid {})", signal_name(opts.lost_signal), child.id());
                forward(&child, opts.lost_signal);
                lost = Some(why);
                kill_at = Some(Instant::now() + opts.kill_after);
            }
        }
        if let Some(at) = kill_at {
            if Instant::now() >= at {
                note!("the command did not exit within --kill-after {:?}; sending SIGKILL", opts.kill_after);
                forward(&child, libc::SIGKILL);
                kill_at = None;
            }
        }
    };
    let after = if lost.is_none() {
        // Lost just before the command ended: its last steps may have run
        // without the lock.
        watch.lost_for_good(guard).map(|why| format!("{why}; "))
    } else {
        Some(String::new())
    };
    match after {
        Some(why) => {
            if opts.rejoin {
                note!("{why}the command {} (leadership was lost while it ran)", describe(status));
            } else {
                note!(
                    "{why}the command {}; exit status {} (the lock was lost while the command ran)",
                    describe(status),
                    exit::LOST
                );
            }
            exit::LOST
        },
        None => status_code(status),
    }
}

/// Sends `sig` to the command (not yet reaped), reporting a failure.
fn forward(child: &Child, sig: i32) {
    if let Err(e) = signals::send(child.id(), sig) {
        note!("cannot send {} to the command (pid {}): {e}", signal_name(sig), child.id());
    }
}

/// The shell's convention: the exit code, or 128 + the signal.
fn status_code(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        (None, None) => exit::INTERNAL,
    }
}

/// "exited with status 3", "was killed by SIGKILL".
fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by {}", signal_name(s)),
        (None, None) => "ended".to_owned(),
    }
}

/// Decides when a held lock counts as lost for the command.
struct LockWatch {
    /// The lock path, for messages.
    path: String,
    /// `--signal-on-suspend`: not safely held is lost.
    strict: bool,
    suspended_since: Option<Instant>,
    /// Set by the state-change callback on any state but Held.
    troubled: Arc<AtomicBool>,
}

impl LockWatch {
    /// `Some(reason)` once the lock counts as lost.
    fn look(&mut self, guard: &Guard) -> Option<String> {
        let checked = guard.check();
        if self.strict && checked.is_ok() && self.troubled.load(Ordering::Acquire) {
            return Some(self.was_suspended());
        }
        let e = match checked {
            Ok(()) => {
                if self.suspended_since.take().is_some() {
                    note!("ZooKeeper answers again; lock {} is held again", self.path);
                }
                return None;
            },
            Err(e) => e,
        };
        if e.kind() != ErrorKind::ConnectionLoss {
            return Some(e.message().to_owned());
        }
        if self.suspended_since.is_none() {
            self.suspended_since = Some(Instant::now());
            if !self.strict {
                note!(
                    "lock {}: {}; the command keeps running while the lock is still safely ours (until ZooKeeper \
                     has not answered for nearly a session timeout)",
                    self.path,
                    e.message()
                );
            }
        }
        if self.strict {
            return Some(format!("lock {} is not safely held (--signal-on-suspend): {}", self.path, e.message()));
        }
        // The core's safety clock: past it, the server may have expired the
        // session and granted the lock to another client.
        if guard.safe_until().is_none_or(|until| Instant::now() >= until) {
            return Some(format!(
                "lock {} counts as lost: ZooKeeper has not answered for nearly a session timeout, so the session \
                 may expire and the lock be granted to another client",
                self.path
            ));
        }
        None
    }

    /// After the command ended: lost for good (or, with
    /// `--signal-on-suspend`, not safely held).
    fn lost_for_good(&self, guard: &Guard) -> Option<String> {
        match guard.check() {
            Ok(()) if self.strict && self.troubled.load(Ordering::Acquire) => Some(self.was_suspended()),
            Ok(()) => None,
            Err(e) if e.kind() == ErrorKind::ConnectionLoss && !self.strict => None,
            Err(e) => Some(e.message().to_owned()),
        }
    }

    fn was_suspended(&self) -> String {
        format!("lock {} was suspended for a moment (--signal-on-suspend)", self.path)
    }
}

//! `zklock run`: take the lock, run the command while holding it, release.
//! `zklock lead`: the same with leadership of an election, again and
//! again while leadership is lost (rejoin). The connect and the acquire,
//! both ended early by a signal, serve `zklock hold` too ([`Session`]).

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zklock_core::{
    AcquireOptions, CancelToken, Client, Error, ErrorKind, Guard, Lock, LockMode, LockOptions, LockState,
};

use crate::args::{signal_name, Connection, LockRequest, NodeData, Pool, RunOptions};
use crate::connect_options;
use crate::exit;
use crate::signals::{self, Received};

/// How often the running command and the lock are looked at.
pub(crate) const TICK: Duration = Duration::from_millis(50);

/// What the main thread waits for.
pub(crate) enum Event {
    /// A signal zklock handles reached it (see `signals.rs`).
    Signal(Received),
    /// The connect finished.
    Connected(zklock_core::Result<Client>),
    /// The acquire finished.
    Acquired(zklock_core::Result<Guard>),
    /// `zklock hold`: stdin reached end of file, or cannot be read (why).
    InputClosed(Option<std::io::Error>),
    /// The server confirmed the close (or the core stopped waiting).
    Closed,
    /// The release finished.
    Released(zklock_core::Result<zklock_core::ReleaseStatus>),
}

/// The lock options of `req` (its node data), checked, and its shared
/// count's path (`--shared-count`): bad data or a count path the semaphore
/// cannot use is a usage error before connecting, like every other input
/// (outside attack round 22, F6: it was found only once connected, so an
/// unreachable server made it exit 69).
///
/// # Errors
/// The exit code (64), reported.
pub(crate) fn lock_options(req: &LockRequest) -> Result<LockOptions, i32> {
    if let Some(Pool::SharedCount(count)) = &req.pool {
        if let Err(e) = zklock_core::validate_shared_count_path(&req.path, count) {
            return Err(crate::zk_error("bad --shared-count", &e));
        }
    }
    let options = match &req.data {
        None => LockOptions::default(),
        Some(NodeData::Text(t)) => LockOptions::default().data(t.as_bytes()),
        Some(NodeData::Identify) => LockOptions::default().identify_process(),
    };
    match options.validate() {
        Ok(()) => Ok(options),
        Err(e) => {
            Err(crate::zk_error(if req.mode == LockMode::Leader { "bad --id (or --data)" } else { "bad --data" }, &e))
        },
    }
}

/// A connected client and the events the main thread waits for: signals
/// (from [`Session::open`] on), the connect and acquires.
pub(crate) struct Session {
    /// The client; [`Session::close`] closes it.
    pub(crate) client: Client,
    /// The events.
    pub(crate) rx: Receiver<Event>,
    /// For more events (an acquire's callback, stdin's end).
    pub(crate) tx: Sender<Event>,
    /// Until when zklock waits for ZooKeeper at exit (the release's delete
    /// and the close together), once the release began.
    exit_by: std::cell::Cell<Option<Instant>>,
    /// The signal that ended a wait at exit (the release's): the close that
    /// follows does not wait either (outside attack round 30, F1: it waited
    /// the rest of the exit's bound after the signal).
    stopped_by: std::cell::Cell<Option<i32>>,
    /// Locks this run counted as lost (exit status 70), for `-v`'s summary:
    /// also those the core does not count (a strict watch's suspension,
    /// the safety clock run out while the session came back).
    lost: std::cell::Cell<u64>,
}

impl Session {
    /// Checks the hosts and `path`, starts signal handling and connects
    /// through the core's callback, so that a signal can end the wait.
    ///
    /// # Errors
    /// The exit code, reported: 64, 69, 71, or 128 + N after signal N.
    pub(crate) fn open(connection: &Connection, path: &str) -> Result<Session, i32> {
        let hosts = crate::checked_target(connection, path)?;
        let (tx, rx) = mpsc::channel::<Event>();
        let signal_tx = tx.clone();
        if let Err(e) = signals::start(move |r| signal_tx.send(Event::Signal(r)).is_ok()) {
            note!("cannot set up signal handling: {e}");
            return Err(exit::INTERNAL);
        }
        let (options, connect_timeout) = connect_options(connection, &hosts)?;
        let connect_limit = connect_timeout + Duration::from_secs(30);
        let t = tx.clone();
        if let Err(e) = Client::connect_then(options, move |r| {
            let _ = t.send(Event::Connected(r));
        }) {
            return Err(crate::connect_error(&hosts, &e));
        }
        match wait_for(&rx, connect_limit, Stops::StopZklock, |ev| match ev {
            Event::Connected(r) => Some(r),
            _ => None,
        }) {
            Waited::Done(Ok(client)) => Ok(Session {
                client,
                rx,
                tx,
                exit_by: std::cell::Cell::new(None),
                stopped_by: std::cell::Cell::new(None),
                lost: std::cell::Cell::new(0),
            }),
            Waited::Done(Err(e)) => Err(crate::connect_error(&hosts, &e)),
            Waited::Signal(sig) => {
                note!("{} while connecting; nothing was locked", signal_name(sig));
                Err(128 + sig)
            },
            Waited::Gone => {
                note!("internal error: connecting to ZooKeeper did not finish");
                Err(exit::INTERNAL)
            },
        }
    }

    /// Until when zklock waits for ZooKeeper at exit: [`close_limit`] from
    /// the first call (the release, or else the close).
    fn exit_by(&self) -> Instant {
        let by = self.exit_by.get().unwrap_or_else(|| {
            Instant::now() + close_limit(self.client.session_timeout().unwrap_or(Duration::from_secs(10)))
        });
        self.exit_by.set(Some(by));
        by
    }

    /// Releases `guard`, saying so with `verbose`, waiting for ZooKeeper
    /// no later than the exit's bound ([`close_limit`] for the release and
    /// the close together); a signal ends the wait. A delete not confirmed
    /// by then is left to the close that follows (the session's end takes
    /// the node). A loss is reported by the caller already.
    pub(crate) fn release(&self, guard: &Guard, verbose: bool) {
        let t = self.tx.clone();
        if self.client.spawn_then(guard.release_async(), move |r| drop(t.send(Event::Released(r)))).is_err() {
            return;
        }
        let limit = self.exit_by().saturating_duration_since(Instant::now());
        match wait_for(&self.rx, limit, Stops::Ignore, |ev| match ev {
            Event::Released(r) => Some(r),
            _ => None,
        }) {
            Waited::Done(Ok(status)) if verbose => note!("released {} ({status:?})", guard.node_path()),
            Waited::Done(Err(e)) if verbose => note!("release: {}", e.message()),
            Waited::Done(_) => {},
            Waited::Signal(sig) => {
                self.stopped_by.set(Some(sig));
                note!("{}: not waiting for the release of {}", signal_name(sig), guard.node_path());
            },
            Waited::Gone => note!("no answer within {} ms to the release of {}", limit.as_millis(), guard.node_path()),
        }
    }

    /// `zklock lead` stands again: the exit's bound starts anew.
    fn rejoining(&self) {
        self.exit_by.set(None);
    }

    /// The longest one ZooKeeper request may take for this client.
    fn op_limit(&self) -> Duration {
        crate::operation_timeout(self.client.session_timeout().unwrap_or(Duration::from_secs(10)))
    }

    /// Makes the lock of `req` and acquires it within its wait; a signal
    /// cancels the acquire (its node is deleted).
    ///
    /// # Errors
    /// The exit code, reported: the conflict code (`-E`, 75) when the lock
    /// was not granted in time, 128 + N after signal N, else per
    /// [`crate::zk_error`].
    pub(crate) fn acquire(&self, req: &LockRequest, options: LockOptions) -> Result<Guard, i32> {
        let made = match &req.pool {
            Some(Pool::Permits(permits)) => self.client.semaphore(&req.path, *permits, options),
            Some(Pool::SharedCount(count)) => self.client.semaphore_with_count(&req.path, count, options),
            None => self.client.lock_with(&req.path, req.mode, options),
        };
        let lock = made.map_err(|e| crate::zk_error("cannot make the lock", &e))?;
        let op_limit = self.op_limit();
        let t = self.tx.clone();
        let cancel = CancelToken::new();
        let call = AcquireOptions::new().timeout(req.wait.timeout).cancel_token(cancel.clone());
        if let Err(e) = self.client.spawn_then(lock.acquire_async(call), move |r| {
            let _ = t.send(Event::Acquired(r));
        }) {
            return Err(acquire_error(req, &e));
        }
        // The acquire ends by itself at the deadline; without one it may
        // wait as long as the user asked (until a signal).
        // After the deadline the acquire still deletes its node (a few requests).
        let limit = req.wait.timeout.map_or(Duration::MAX, |t| t.saturating_add(op_limit * 3 + Duration::from_secs(5)));
        let guard = match wait_for(&self.rx, limit, Stops::StopZklock, |ev| match ev {
            Event::Acquired(r) => Some(r),
            _ => None,
        }) {
            Waited::Done(Ok(g)) => g,
            Waited::Done(Err(e)) => return Err(acquire_error(req, &e)),
            Waited::Signal(sig) => return Err(cancel_acquire(&lock, &cancel, &self.rx, op_limit, sig)),
            Waited::Gone => {
                note!("internal error: the acquire did not finish");
                return Err(exit::INTERNAL);
            },
        };
        if req.verbose {
            note!(
                "acquired the {} lock {}: node {}, fencing token {}, session {:#x}",
                req.mode.name(),
                req.path,
                guard.node_path(),
                guard.fencing_token(),
                guard.session_id()
            );
        }
        Ok(guard)
    }

    /// Closes the client (its session ends; any node left goes with it);
    /// with `verbose`, first says what the client did (its metrics). Waits
    /// for ZooKeeper to confirm until the exit's bound ([`close_limit`]
    /// from the release or the close; a signal ends the wait, and one that
    /// ended the release's wait means no wait here): while the
    /// session reconnects the close is sent on
    /// the next connection, so a covered outage still deletes the node at
    /// once; when no server answers, the exit is not put off by more than
    /// that (outside attack round 26, F2: it waited up to the session
    /// timeout and another second, silently), and the node goes when
    /// ZooKeeper expires the session.
    pub(crate) fn close(self, verbose: bool) {
        if verbose {
            note!("{}", summary(&self.client.metrics(), self.lost.get()));
        }
        let limit = match self.stopped_by.get() {
            Some(_) => Duration::ZERO,
            None => self.exit_by().saturating_duration_since(Instant::now()),
        };
        let session = self.client.session_id().ok();
        let t = self.tx.clone();
        let confirmed = self.client.close_async();
        if self.client.spawn_then(confirmed, move |()| drop(t.send(Event::Closed))).is_err() {
            return;
        }
        let waited = wait_for(&self.rx, limit, Stops::Ignore, |ev| matches!(ev, Event::Closed).then_some(()));
        if !matches!(waited, Waited::Done(())) {
            let why = match (waited, self.stopped_by.get()) {
                (Waited::Signal(sig), _) | (_, Some(sig)) => format!("{}: not waiting", signal_name(sig)),
                _ if limit.is_zero() => "no time left (the release took the exit's whole wait)".to_string(),
                _ => format!("no answer within {} ms", limit.as_millis()),
            };
            if let Some(id) = session {
                note!("{why} for ZooKeeper to confirm the close of session {id:#x}; its nodes go when it expires");
            }
            // The process exits next: dropping the client would wait once
            // more for the confirmation that did not come.
            std::mem::forget(self.client);
        }
    }
}

/// Runs `zklock run` or `zklock lead` and returns the exit code.
pub(crate) fn run(opts: RunOptions) -> i32 {
    let options = match lock_options(&opts.lock) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let session = match Session::open(&opts.lock.connection, &opts.lock.path) {
        Ok(s) => s,
        Err(code) => return code,
    };
    // A signal to zklock while the command runs: no rejoining after it.
    let stopping = AtomicBool::new(false);
    let code = loop {
        let code = hold_and_run(&opts, &session, options.clone(), &stopping);
        if code == exit::LOST {
            session.lost.set(session.lost.get() + 1);
        }
        if !(opts.rejoin && code == exit::LOST) {
            break code;
        }
        if stopping.load(Ordering::Acquire) {
            note!("leadership of {} lost while stopping; not rejoining", opts.lock.path);
            break code;
        }
        // `zklock lead`: the command has exited; stand again.
        session.rejoining();
        note!("leadership of {} lost; rejoining the election", opts.lock.path);
    };
    session.close(opts.lock.verbose);
    code
}

/// The one-line summary `-v` prints at exit: acquires by outcome, the
/// time spent waiting and holding, trouble seen, and ZooKeeper requests.
/// Losses are the core's (`m`) or, if more, the `lost` the run counted
/// (exit status 70): the core counts only locks it knows lost.
pub(crate) fn summary(m: &zklock_core::Metrics, lost: u64) -> String {
    let requests: u64 = m.requests.iter().filter(|(op, _)| **op != "ping").map(|(_, n)| n).sum();
    format!(
        "summary: {} acquired, {} timed out, {} cancelled, {} failed; waited {:.3} s, held {:.3} s; {} \
         suspension(s), {} loss(es), {} reconnect(s), {} session expiry(ies); {requests} ZooKeeper requests \
         (pings aside)",
        m.acquires_granted,
        m.acquires_timed_out,
        m.acquires_cancelled,
        m.acquires_failed,
        m.wait_time.sum_seconds,
        m.hold_time.sum_seconds,
        m.suspensions,
        m.losses.max(lost),
        m.reconnects,
        m.session_expiries,
    )
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

/// How long zklock waits at exit for ZooKeeper to confirm the close of a
/// session of timeout `session_timeout`: half of it (the covered outages,
/// up to 0.3 of it, end before that), at least 1 s and at most the
/// operation timeout.
pub(crate) fn close_limit(session_timeout: Duration) -> Duration {
    (session_timeout / 2).max(Duration::from_secs(1)).min(crate::operation_timeout(session_timeout))
}

/// What a stop sent to zklock does while [`wait_for`] waits.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stops {
    /// Nothing runs yet (connecting, acquiring): a stop stops zklock, as
    /// by default.
    StopZklock,
    /// The command has ended and zklock is releasing and closing, within
    /// the exit's bound: a stop is not acted on (stopped there, zklock
    /// kept the lock's node until it was continued: outside attack round
    /// 42, F2, a SIGTERM and a SIGTSTP back to back).
    Ignore,
}

/// Waits up to `limit` for the event `pick` accepts, or a signal.
fn wait_for<T>(
    rx: &Receiver<Event>,
    limit: Duration,
    stops: Stops,
    mut pick: impl FnMut(Event) -> Option<T>,
) -> Waited<T> {
    /// Stops stop zklock on the signals thread while this wait lasts.
    struct Stopping;
    impl Drop for Stopping {
        fn drop(&mut self) {
            signals::stops_stop_zklock(false);
        }
    }
    let _stopping = (stops == Stops::StopZklock).then(|| {
        signals::stops_stop_zklock(true);
        Stopping
    });
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
            // Nothing runs yet: a stop stops zklock (as by default; the
            // signals thread does it, `stops_stop_zklock`, but for one
            // reported before this wait began), and SIGCONT is only the
            // end of it.
            match signals::job_control(r.signal) {
                Some(true) if stops == Stops::StopZklock => signals::stop_self_unless_continued(),
                Some(true) => note!("{} not acted on: zklock is releasing and exiting", signal_name(r.signal)),
                Some(false) => {},
                None => return Waited::Signal(r.signal),
            }
            continue;
        }
        if let Some(v) = pick(ev) {
            return Waited::Done(v);
        }
    }
}

/// Acquires, runs the command, releases. The caller closes the client.
fn hold_and_run(opts: &RunOptions, session: &Session, options: LockOptions, stopping: &AtomicBool) -> i32 {
    let guard = match session.acquire(&opts.lock, options) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let code = supervise(opts, &guard, &session.rx, stopping);
    session.release(&guard, opts.lock.verbose);
    code
}

/// Reports a failed acquire; returns the conflict code (`-E`, 75) for a
/// timeout, else per [`crate::zk_error`].
fn acquire_error(req: &LockRequest, e: &Error) -> i32 {
    match e.kind() {
        ErrorKind::Timeout => {
            let waited = match req.wait.timeout {
                Some(_) if req.wait.nonblock => "it is held (-n tries once)".to_owned(),
                Some(t) if t.is_zero() => "it is held (--timeout 0 tries once)".to_owned(),
                Some(t) => format!("not granted within {t:?}"),
                None => "deadline passed".to_owned(),
            };
            note!("timed out: lock {}: {waited}", req.path);
            req.wait.conflict_exit_code
        },
        _ => crate::zk_error(&format!("cannot acquire lock {}", req.path), e),
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

/// Why the kernel said "not found" running `path`, a file that exists: its
/// `#!` interpreter is missing, or is itself a script whose interpreter is,
/// or (no `#!`) a binary's dynamic loader is.
fn missing_interpreter(path: &std::path::Path) -> String {
    use std::io::Read as _;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
    let Some(line) = head[..n].strip_prefix(b"#!") else {
        return "the file exists but could not be started (a program whose dynamic loader is missing?)".to_owned();
    };
    let line = String::from_utf8_lossy(line.split(|&b| b == b'\n').next().unwrap_or_default());
    let Some(interpreter) = line.split_whitespace().next() else {
        return "its #! line names no interpreter".to_owned();
    };
    let shown = interpreter.escape_debug();
    if std::path::Path::new(interpreter).is_file() {
        format!(
            "its #! interpreter {shown} exists but could not be started (a script whose own interpreter is missing?)"
        )
    } else {
        format!("its #! interpreter {shown} was not found")
    }
}

/// Spawns the command and follows it and the lock until the command exits.
/// A signal to zklock is forwarded to the command (unless the whole process
/// group, the command's too, got it); all but SIGUSR1 and SIGUSR2 set
/// `stopping`.
fn supervise(opts: &RunOptions, guard: &Guard, rx: &Receiver<Event>, stopping: &AtomicBool) -> i32 {
    use std::os::unix::process::CommandExt as _;
    let program = &opts.command[0];
    let mut cmd = std::process::Command::new(program);
    cmd.args(&opts.command[1..])
        .env("ZKLOCK_FENCING_TOKEN", guard.fencing_token().to_string())
        .env("ZKLOCK_NODE_PATH", guard.node_path())
        .env("ZKLOCK_LOCK_PATH", &opts.lock.path)
        .env("ZKLOCK_LOCK_MODE", opts.lock.mode.name())
        .env("ZKLOCK_SESSION_ID", format!("{:#x}", guard.session_id()))
        .envs(opts.lock.connection.env());
    if opts.process_group {
        // A group of its own, led by the command: its id is the command's pid.
        cmd.process_group(0);
    }
    signals::kill_with_parent(&mut cmd);
    signals::unmasked(&mut cmd);
    let mut watch = LockWatch::new(guard, &opts.lock.path, opts.signal_on_suspend, "the command keeps running");
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let shown = program.to_string_lossy();
            let path = std::path::Path::new(program);
            return if e.kind() == std::io::ErrorKind::NotFound && path.components().count() > 1 && path.is_file() {
                // The file is there: what is missing is what it needs to
                // run (the shell says "bad interpreter", 126).
                note!("cannot run {shown}: {}", missing_interpreter(path));
                exit::CANNOT_EXECUTE
            } else if e.kind() == std::io::ErrorKind::NotFound {
                note!("command not found: {shown}");
                exit::NOT_FOUND
            } else {
                note!("cannot run {shown}: {e}");
                exit::CANNOT_EXECUTE
            };
        },
    };
    let target = Target { pid: child.id(), group: opts.process_group };
    let mut lost: Option<String> = None;
    let mut kill_at: Option<Instant> = None;
    // A stop zklock passed on: a signal sent to the command while it is
    // stopped stays pending until it is continued (it gets SIGCONT after).
    let mut stopped = false;
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
            // A stop sent to zklock alone after the command was told to end
            // (a forwarded signal that stops zklock, or the lost signal) is
            // not passed on: the command is let finish. (signal-hook reports
            // signals that came together in the order of their numbers:
            // SIGTERM before a SIGTSTP that came first; passed on, the stop
            // left the command stopped mid-exit with the lock held.)
            Ok(Event::Signal(r))
                if signals::job_control(r.signal) == Some(true)
                    && !r.to_group
                    && (stopping.load(Ordering::Acquire) || lost.is_some()) =>
            {
                note!("{} not passed on: the command was told to end", signal_name(r.signal));
            },
            Ok(Event::Signal(r)) => {
                let job = signals::job_control(r.signal);
                if job.is_none() && signals::stops(r.signal) {
                    stopping.store(true, Ordering::Release);
                }
                // A command in a group of its own did not get the signal the
                // kernel sent to zklock's group.
                if !r.to_group || opts.process_group {
                    target.send(r.signal);
                    match job {
                        Some(stop) => stopped = stop,
                        None if stopped => {
                            target.send(libc::SIGCONT);
                            stopped = false;
                        },
                        None => {},
                    }
                }
                // The terminal stops the whole job (Ctrl-Z): zklock too, like
                // its command. A stop sent to zklock alone only stops the
                // command: zklock keeps its session and watches the lock.
                if job == Some(true) && r.to_group {
                    signals::stop_self_unless_continued();
                }
            },
            Ok(_) | Err(RecvTimeoutError::Timeout) => {},
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(TICK),
        }
        if lost.is_none() {
            if let Some(why) = watch.look(guard) {
                note!("{why}; sending {} to the command ({target})", signal_name(opts.lost_signal));
                target.send(opts.lost_signal);
                if stopped {
                    target.send(libc::SIGCONT);
                    stopped = false;
                }
                lost = Some(why);
                kill_at = Some(Instant::now() + opts.kill_after);
            }
        }
        if let Some(at) = kill_at {
            if Instant::now() >= at {
                note!("the command did not exit within --kill-after {:?}; sending SIGKILL", opts.kill_after);
                target.send(libc::SIGKILL);
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
    let Some(why) = after else { return status_code(status) };
    if opts.process_group {
        end_group(opts, target, kill_at, lost.is_some());
    }
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
}

/// After a loss, with `--process-group`: processes the command started may
/// outlive it, running without the lock. They get the lost signal (if the
/// group did not get it yet) and SIGKILL once `--kill-after` has passed
/// since it (at `kill_at`; `None` once SIGKILL was sent); zklock waits for
/// the group to empty until then.
fn end_group(opts: &RunOptions, target: Target, mut kill_at: Option<Instant>, signalled: bool) {
    if !signals::group_alive(target.pid) {
        return;
    }
    if !signalled {
        note!("sending {} to what is left of the command's process group ({target})", signal_name(opts.lost_signal));
        target.send(opts.lost_signal);
        kill_at = Some(Instant::now() + opts.kill_after);
    }
    let Some(at) = kill_at else { return };
    while Instant::now() < at {
        if !signals::group_alive(target.pid) {
            return;
        }
        std::thread::sleep(TICK);
    }
    if signals::group_alive(target.pid) {
        note!(
            "processes of the command's group still run --kill-after {:?} after the lost signal; sending SIGKILL",
            opts.kill_after
        );
        target.send(libc::SIGKILL);
    }
}

/// Where signals for the command go: its process, or its process group.
#[derive(Clone, Copy)]
struct Target {
    /// The command's pid (not yet reaped while signals go to it alone).
    pid: u32,
    /// `--process-group`: the group the command leads.
    group: bool,
}

impl Target {
    /// Sends `sig`, reporting a failure.
    fn send(self, sig: i32) {
        if let Err(e) = signals::send(self.pid, sig, self.group) {
            note!("cannot send {} to the command ({self}): {e}", signal_name(sig));
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group {
            write!(f, "process group {}", self.pid)
        } else {
            write!(f, "pid {}", self.pid)
        }
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

/// Decides when a held lock counts as lost for the command (or for
/// `zklock hold`).
pub(crate) struct LockWatch {
    /// The lock path, for messages.
    path: String,
    /// `--signal-on-suspend`: not safely held is lost.
    strict: bool,
    /// Since when ZooKeeper has not answered (the lock is suspended).
    suspended_since: Option<Instant>,
    /// Set by the state-change callback on any state but Held.
    troubled: Arc<AtomicBool>,
    /// What goes on while a suspended lock is still safely ours ("the
    /// command keeps running"), for the message.
    meanwhile: &'static str,
}

impl LockWatch {
    /// Watches `guard`, the lock at `path`; `strict`: a suspension is a loss.
    /// `meanwhile` says what goes on while a suspended lock is still safely
    /// ours.
    pub(crate) fn new(guard: &Guard, path: &str, strict: bool, meanwhile: &'static str) -> LockWatch {
        // Every state change reaches this flag, also a suspension too short
        // for the polling to see (it matters with --signal-on-suspend).
        let troubled = Arc::new(AtomicBool::new(false));
        let flag = troubled.clone();
        guard.on_state_change(move |state| {
            if state != LockState::Held {
                flag.store(true, Ordering::Release);
            }
        });
        LockWatch { path: path.to_owned(), strict, suspended_since: None, troubled, meanwhile }
    }

    /// `Some(reason)` once the lock counts as lost.
    pub(crate) fn look(&mut self, guard: &Guard) -> Option<String> {
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
                    "lock {}: {}; {} while the lock is still safely ours (until ZooKeeper has not confirmed the \
                     session for nearly a session timeout)",
                    self.path,
                    e.message(),
                    self.meanwhile
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
                "lock {} counts as lost: ZooKeeper has not confirmed the session for nearly a session timeout, so \
                 the session may have expired and the lock be granted to another client",
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

    /// Why a strict watch counts a suspension that has passed as a loss.
    fn was_suspended(&self) -> String {
        format!("lock {} was suspended for a moment (--signal-on-suspend)", self.path)
    }
}

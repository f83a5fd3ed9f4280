//! `zklock hold`: take the lock, print its fencing token, hold it until
//! stdin reaches end of file or a signal comes, release it (like `etcdctl
//! lock` without a command).

use std::io::{self, Read as _, Write as _};
use std::sync::mpsc::RecvTimeoutError;

use serde::Serialize;
use zklock_core::Guard;

use crate::args::{signal_name, HoldOptions};
use crate::exit;
use crate::run::{self, Event, LockWatch, Session, TICK};
use crate::signals;

/// The line `zklock hold --json` prints.
#[derive(Serialize)]
struct Held<'a> {
    /// The fencing token (czxid of our node).
    token: u64,
    /// Our lock node.
    node_path: String,
    /// The lock path as given.
    lock_path: &'a str,
    /// `EXCLUSIVE`, `READ`, `WRITE` or `LEASE`.
    mode: &'static str,
    /// The session id, hex with `0x` (as `zklock list` shows it).
    session_id: String,
}

/// Runs `zklock hold` and returns the exit code.
pub(crate) fn hold(opts: HoldOptions) -> i32 {
    let req = &opts.lock;
    let options = match run::lock_options(req) {
        Ok(o) => o,
        Err(code) => return code,
    };
    // A background job of an interactive shell that reads the terminal is
    // stopped by SIGTTIN, and a stopped zklock holds the lock without
    // keeping its session: ignored, the read fails instead (released).
    // SAFETY: setting a signal to SIG_IGN has no memory-safety preconditions.
    unsafe { libc::signal(libc::SIGTTIN, libc::SIG_IGN) };
    let session = match Session::open(&req.connection, &req.path) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let code = match session.acquire(req, options) {
        Ok(guard) => {
            let code = hold_until_told(&opts, &guard, &session);
            if code == exit::LOST {
                // Whoever waits for zklock's exit learns of the loss now,
                // not after a release and a close that may wait for a
                // silent ZooKeeper (the session ends with the process).
                std::process::exit(code);
            }
            session.release(&guard, req.verbose);
            code
        },
        Err(code) => code,
    };
    session.close(req.verbose);
    code
}

/// Prints the token, then waits for the end of stdin, a signal or a loss.
fn hold_until_told(opts: &HoldOptions, guard: &Guard, session: &Session) -> i32 {
    let path = &opts.lock.path;
    let line = if opts.json {
        let held = Held {
            token: guard.fencing_token(),
            node_path: guard.node_path(),
            lock_path: path,
            mode: opts.lock.mode.name(),
            session_id: format!("{:#x}", guard.session_id()),
        };
        serde_json::to_string(&held).expect("a struct of strings and numbers is always valid JSON")
    } else {
        guard.fencing_token().to_string()
    };
    let mut out = io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
        // Nobody learns the token: holding the lock would only block others.
        note!("cannot write the fencing token: {e}; releasing lock {path}");
        return exit::INTERNAL;
    }
    drop(out);
    let tx = session.tx.clone();
    let reader = std::thread::Builder::new().name("zklock-stdin".into()).spawn(move || {
        let mut stdin = io::stdin().lock();
        let mut buf = [0u8; 4096];
        let closed = loop {
            match stdin.read(&mut buf) {
                Ok(0) => break None,
                // What is written is ignored; an endless input (/dev/zero)
                // must not take a core.
                Ok(_) => std::thread::sleep(std::time::Duration::from_millis(1)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {},
                // Unreadable stdin is as good as closed (a terminal that a
                // background job may not read: EIO).
                Err(e) => break Some(e),
            }
        };
        let _ = tx.send(Event::InputClosed(closed));
    });
    if let Err(e) = reader {
        note!("cannot start a thread to read stdin: {e}; releasing lock {path}");
        return exit::INTERNAL;
    }
    let mut watch = LockWatch::new(guard, path, false, "zklock keeps holding it");
    loop {
        match session.rx.recv_timeout(TICK) {
            Ok(Event::InputClosed(None)) => {
                if opts.lock.verbose {
                    note!("stdin closed; releasing lock {path}");
                }
                return exit::OK;
            },
            Ok(Event::InputClosed(Some(e))) => {
                note!("cannot read stdin ({e}), which holds the lock until it closes; releasing lock {path}");
                return exit::OK;
            },
            Ok(Event::Signal(r)) if signals::job_control(r.signal).is_some() => {
                // The terminal stops the whole job (Ctrl-Z), the script that
                // uses the token too: zklock stops as well. Stopped alone, it
                // could not keep its session while the script works on.
                if signals::job_control(r.signal) == Some(true) {
                    if r.to_group {
                        signals::stop_self_unless_continued();
                    } else {
                        note!(
                            "{} ignored: zklock hold keeps lock {path} (stop the whole process group to pause it)",
                            signal_name(r.signal)
                        );
                    }
                }
            },
            Ok(Event::Signal(r)) => {
                if opts.lock.verbose {
                    note!("{}; releasing lock {path}", signal_name(r.signal));
                }
                return exit::OK;
            },
            Ok(_) | Err(RecvTimeoutError::Timeout) => {},
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(TICK),
        }
        if let Some(why) = watch.look(guard) {
            note!("{why}; lock {path} is lost (exit status {})", exit::LOST);
            return exit::LOST;
        }
    }
}

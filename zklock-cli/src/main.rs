//! `zklock`: run a command while holding a ZooKeeper lock, in the spirit of
//! flock(1); hold a lock for a shell script; lead an election; list the
//! queue of a lock.
//!
//! ```text
//! zklock run  [OPTIONS] PATH [--] COMMAND [ARGS...]    zklock run  [OPTIONS] PATH -c CMD
//! zklock lead [OPTIONS] PATH [--] COMMAND [ARGS...]    zklock lead [OPTIONS] PATH -c CMD
//! zklock hold [OPTIONS] PATH
//! zklock list [OPTIONS] PATH
//! zklock completions bash|zsh|fish|elvish|powershell
//! ```
//!
//! The command line is declared with clap in [`args`] (its help texts are
//! also the man page, [`docs`]); durations are humantime's (`1m30s`,
//! `500ms`) or plain seconds (`2.5`).
//!
//! `zklock run` connects, takes the lock at `PATH`, runs the command with
//! the lock details in its environment, and when the command exits releases
//! the lock and closes the session (so no node is left behind, whatever
//! happened). The lock is the plain exclusive lock by default (Curator
//! `InterProcessMutex`, nodes `-lock-`); `-s`/`--read` (`--shared`) and
//! `-x`/`--write` (`--exclusive`, flock's name) are the read and the write
//! side of a read/write lock; `--permits N` is one lease of a counting semaphore,
//! `--shared-count COUNT_PATH` one of a semaphore whose permits are a
//! shared count (Curator's node names throughout). zklock keeps every kind of a path in
//! one queue, so among zklock clients the plain lock excludes `-s` holders
//! too; Curator's and kazoo's readers do not wait for the plain lock's
//! `-lock-` nodes, so on a path shared with them use `-s` and `-x`
//! together, never `-s` with the plain lock.
//! Waiting follows flock(1): `-n`/`--nonblock` tries once, `-w`/`--timeout`
//! bounds the wait, and `-E`/`--conflict-exit-code` is the exit status when
//! the lock is not granted (75 by default); `-c CMD` runs `/bin/sh -c CMD`.
//! If the lock is lost while the command runs, the command gets
//! `--lost-signal` (SIGTERM), then SIGKILL after `--kill-after` (5 s), and
//! zklock exits with 70.
//!
//! `zklock lead` is `zklock run` on a leader election (Curator
//! `LeaderLatch` compatible): the command runs while zklock leads; when
//! leadership is lost the command is signalled as above and, once it has
//! exited, zklock joins the election again (`--id` sets the participant
//! id, by default `<hostname>/<pid>`), unless zklock got a signal other
//! than SIGUSR1, SIGUSR2 or job control meanwhile.
//!
//! `zklock hold` takes the lock (the kinds and waiting options of `run`),
//! prints its fencing token on one line of stdout (`--json`: an object with
//! `token`, `node_path`, `lock_path`, `mode`, `session_id`), and holds it
//! until stdin reaches end of file (or cannot be read) or zklock gets one
//! of the signals below; then it releases the lock and exits 0. A lock
//! lost meanwhile is reported on stderr, exit 70 at once (its node goes
//! when ZooKeeper expires the session). Like `etcdctl lock` without a
//! command.
//!
//! `zklock fence-check [TOKEN]` exits 0 while the grant with that fencing
//! token (default `$ZKLOCK_FENCING_TOKEN`) and lock node (`--node`, default
//! `$ZKLOCK_NODE_PATH`) still stands in ZooKeeper, 70 once it is over: for
//! the scripts `run` and `lead` run.
//!
//! `zklock shared-count PATH [N]` prints the shared count at `PATH`, or
//! sets it to `N` (Curator's `SharedCount`: 4 bytes, big-endian).
//!
//! `zklock list` prints the participants of a lock in queue order, holders
//! first (a table, or one JSON object with `--json`). `zklock completions
//! SHELL` prints a completion script; the hidden `zklock man [--dir DIR]`
//! prints the man page (or writes zklock.1 and a page per command).
//!
//! # Environment of the command
//!
//! | variable | value |
//! |---|---|
//! | `ZKLOCK_FENCING_TOKEN` | the fencing token (czxid of our node), decimal |
//! | `ZKLOCK_NODE_PATH` | our lock node, e.g. `/locks/job/_c_<uuid>-lock-0000000004` |
//! | `ZKLOCK_LOCK_PATH` | the lock path as given |
//! | `ZKLOCK_LOCK_MODE` | `EXCLUSIVE`, `READ`, `WRITE`, `LEADER` or `LEASE` |
//! | `ZKLOCK_SESSION_ID` | the ZooKeeper session id, hex with `0x` |
//! | `ZKLOCK_HOSTS`, `ZKLOCK_TLS_CA`, ... | the connection options given, by flag or variable |
//!
//! `ZKLOCK_HOSTS` is read by zklock when `--hosts` is absent, `ZKLOCK_LOG`
//! (or else `RUST_LOG`)
//! for the level of zklock's log records on stderr (default `warn`).
//!
//! # Signals
//!
//! SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1 and SIGUSR2 sent to
//! zklock are forwarded to the command (except when the kernel sent them to
//! the whole process group, as Ctrl-C in a terminal does: the command has
//! them already; one a user sends to the whole group reaches it twice).
//! zklock then keeps waiting for the command and exits with its status.
//! While zklock still waits for the lock, such a signal cancels the wait
//! (our node is deleted) and zklock exits with 128 + the signal number. If
//! zklock itself dies (SIGKILL, a crash, another signal), the kernel sends
//! the command SIGKILL (parent-death signal, `signals::kill_with_parent`).
//! A job-control stop sent to zklock alone stops the command instead
//! (`signals::job_control`); SIGSTOP, which cannot be handled, leaves the
//! command unwatched. Of a stop and a SIGCONT that come together, the one
//! that came last counts (as in the kernel); a stop sent to zklock alone
//! after the command was told to end is not passed on. A signal ignored
//! when zklock starts (SIGINT and
//! SIGQUIT for a background job of a script, SIGHUP under `nohup`) stays
//! ignored, by zklock and by the command, as without zklock; SIGCONT is
//! handled even then (`signals::to_handle`).
//!
//! Signals go to the command's process only, not to processes it started
//! (a shell script should `exec` its long-running program or pass the
//! signal on), unless `--process-group` starts the command in a process
//! group of its own: then forwarded signals, the lost signal and SIGKILL go
//! to the whole group (and a Ctrl-C, which no longer reaches the command
//! from the terminal, is forwarded too); after a loss, what is left of the
//! group once the command has exited is killed after `--kill-after`.
//! Processes that leave the group (setsid) are not reached.
//!
//! A suspended lock (connection lost; it may still be ours) is tolerated by
//! default while the core's safety clock says it is still safely ours; once
//! ZooKeeper has not confirmed the session for nearly a session timeout (before the
//! server can expire the session and grant the lock to anyone else) it
//! counts as lost. With `--signal-on-suspend` the command is signalled as
//! soon as the lock is suspended.
//!
//! # Exit status
//!
//! | code | meaning |
//! |---|---|
//! | the command's | the command ran and exited (128 + N if killed by signal N) |
//! | 0 | `hold` released the lock after stdin closed or a signal; `list`, `--help`, `--version` |
//! | 64 | usage error: bad option or duration, invalid lock path, no or empty hosts (clap's errors too) |
//! | 69 | cannot connect to ZooKeeper, or ZooKeeper failed, before the command ran |
//! | 70 | the lock was lost while the command ran or `hold` held it (wins over the command's status; `lead` rejoins instead) |
//! | 71 | internal error (e.g. no thread could be started) |
//! | 75 | conflict: the lock was held (`-n`) or not granted within `--timeout`; `-E CODE` changes it |
//! | 77 | ZooKeeper refused for lack of permission (`NO_AUTH`: an ACL, or refused credentials) |
//! | 126 | the command was found but cannot be executed |
//! | 127 | the command was not found |
//! | 128 + N | zklock got signal N while waiting for the lock |

/// Prints one line `zklock: ...` on stderr (never panics, even if stderr is
/// closed). Defined before the modules so that they can use it.
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "zklock: {}", format_args!($($arg)*));
    }};
}

mod args;
mod docs;
mod hold;
mod list;
mod run;
mod signals;

use std::time::Duration;

use clap::Parser as _;
use zklock_core::{Acl, ClientOptions, Error, ErrorKind, TlsOptions};

/// The exit codes of `zklock` (see the module documentation).
mod exit {
    /// Success (`zklock list`, `zklock hold`, help).
    pub(crate) const OK: i32 = 0;
    /// Usage error (sysexits `EX_USAGE`).
    pub(crate) const USAGE: i32 = 64;
    /// ZooKeeper unreachable or failing (sysexits `EX_UNAVAILABLE`).
    pub(crate) const UNAVAILABLE: i32 = 69;
    /// The lock was lost while the command ran (or `zklock hold` held it).
    pub(crate) const LOST: i32 = 70;
    /// Internal or OS error (sysexits `EX_OSERR`).
    pub(crate) const INTERNAL: i32 = 71;
    /// The lock was held (`-n`) or not granted in time (sysexits
    /// `EX_TEMPFAIL`): the default of `-E`.
    pub(crate) const TIMEOUT: u8 = 75;
    /// The command cannot be executed (as in the shell).
    pub(crate) const CANNOT_EXECUTE: i32 = 126;
    /// The command was not found (as in the shell).
    pub(crate) const NOT_FOUND: i32 = 127;
    /// ZooKeeper refused for lack of permission (an ACL, or credentials;
    /// sysexits `EX_NOPERM`).
    pub(crate) const NO_PERMISSION: i32 = 77;
}

/// Parses the command line, runs the subcommand, exits with its code.
fn main() {
    // An empty variable counts as unset (`ZKLOCK_ACL= zklock ...`), as in
    // most tools: removed before clap reads it (no other thread yet).
    for var in args::ENV_OPTIONS {
        if std::env::var_os(var).is_some_and(|v| v.is_empty()) {
            std::env::remove_var(var);
        }
    }
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let code = match args::Cli::try_parse_from(&argv) {
        Ok(cli) => dispatch(cli.command),
        Err(e) => clap_error(&e, args::subcommand_in(argv.get(1..).unwrap_or_default()).as_deref()),
    };
    std::process::exit(code);
}

/// Runs the subcommand; returns the exit code.
fn dispatch(sub: args::Sub) -> i32 {
    use args::Sub;
    let verbose = match &sub {
        Sub::Run(a) => a.verbose(),
        Sub::Lead(a) => a.verbose(),
        Sub::Hold(a) => a.verbose(),
        Sub::List(_) | Sub::FenceCheck(_) | Sub::SharedCount(_) | Sub::Completions { .. } | Sub::Man { .. } => false,
    };
    log_to_stderr(verbose);
    let outcome = match sub {
        Sub::Run(a) => a.options().map(run::run),
        Sub::Lead(a) => a.options().map(run::run),
        Sub::Hold(a) => a.options().map(hold::hold),
        Sub::List(a) => Ok(list::list(a.options())),
        Sub::FenceCheck(a) => Ok(fence_check(&a)),
        Sub::SharedCount(a) => Ok(shared_count(&a)),
        Sub::Completions { shell } => Ok(docs::completions(shell)),
        Sub::Man { dir } => Ok(docs::man(dir.as_deref())),
    };
    outcome.unwrap_or_else(|u| usage_error(&u.0))
}

/// Runs `zklock fence-check`: 0 while the grant stands, 70 once it is
/// over, as `zk_error` says for a failure to ask.
fn fence_check(a: &args::FenceCheckArgs) -> i32 {
    // Creates nothing: the ACL is not the client's (as for `list`).
    let client = match connected(&a.connection, &a.node, false) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let checked = client.fence_check(&a.node, a.token);
    client.close();
    match checked {
        Ok(()) => exit::OK,
        Err(e) if e.kind() == ErrorKind::LockLost => {
            note!("{}", e.message());
            exit::LOST
        },
        Err(e) => zk_error("cannot check the grant", &e),
    }
}

/// A client for a one-request subcommand on `path` (`fence-check`,
/// `shared-count`), with the ACL of the command line if it `creates`.
///
/// # Errors
/// The exit code, reported: a usage error (64) for bad hosts, path or
/// options, else per [`connect_error`].
fn connected(c: &args::Connection, path: &str, creates: bool) -> Result<zklock_core::Client, i32> {
    let hosts = checked_target(c, path)?;
    let (options, _) = connect_options(c, &hosts)?;
    let options = if creates { options } else { options.acl(zklock_core::Acl::open()) };
    zklock_core::Client::connect(options).map_err(|e| connect_error(&hosts, &e))
}

/// Runs `zklock shared-count`: prints the count, or sets it.
fn shared_count(a: &args::SharedCountArgs) -> i32 {
    let client = match connected(&a.connection, &a.path, a.count.is_some()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let done = match a.count {
        Some(n) => client.set_shared_count(&a.path, n).map(|()| None),
        None => client.shared_count(&a.path).map(Some),
    };
    client.close();
    match done {
        Ok(Some(n)) => write_stdout(format!("{n}\n").as_bytes()),
        Ok(None) => exit::OK,
        Err(e) if a.count.is_some() => zk_error("cannot set the shared count", &e),
        Err(e) => zk_error("cannot read the shared count", &e),
    }
}

/// `--help` and `--version` (exit 0), or a usage error in one line (64);
/// `sub`: the subcommand given, if any.
fn clap_error(e: &clap::Error, sub: Option<&str>) -> i32 {
    use clap::error::ErrorKind as Kind;
    match e.kind() {
        Kind::DisplayHelp | Kind::DisplayVersion => {
            // A closed stdout is no error.
            let _ = e.print();
            exit::OK
        },
        _ => usage_error(&args::clap_message(e, sub)),
    }
}

/// The core's log records on stderr: `$ZKLOCK_LOG` (`error`, `warn`,
/// `info`, `debug`, `trace`, `off`), else the level `$RUST_LOG` gives
/// zklock (a plain level, or a `zklock...=level` directive; other
/// directives are for other programs), else warnings; at least `info`
/// with `-v`.
fn log_to_stderr(verbose: bool) {
    let asked = match std::env::var("ZKLOCK_LOG") {
        Ok(v) => {
            let level = zklock_core::logging::level_filter(&v);
            if level.is_none() {
                eprintln!(
                    "zklock: ZKLOCK_LOG={v:?} is not a log level (error, warn, info, debug, trace, off); using warn"
                );
            }
            level
        },
        Err(_) => std::env::var("RUST_LOG").ok().and_then(|v| rust_log_level(&v)),
    };
    let mut level = asked.unwrap_or(log::LevelFilter::Warn);
    if verbose {
        level = level.max(log::LevelFilter::Info);
    }
    let _ = zklock_core::logging::set_log_sink(level, zklock_core::logging::to_stderr);
}

/// The level `RUST_LOG` (env_logger's syntax) gives zklock: the last
/// directive that is a plain level or names a `zklock` target.
fn rust_log_level(spec: &str) -> Option<log::LevelFilter> {
    spec.split(',').rev().find_map(|d| match d.trim().split_once('=') {
        None => zklock_core::logging::level_filter(d.trim()),
        Some((target, level)) if target.starts_with("zklock") => zklock_core::logging::level_filter(level),
        Some(_) => None,
    })
}

/// The hosts (from `--hosts` or `ZKLOCK_HOSTS`) once they and the lock
/// `path` are valid; otherwise the usage error's exit code (64), printed.
pub(crate) fn checked_target(c: &args::Connection, path: &str) -> Result<String, i32> {
    let hosts = c.hosts().map_err(|u| usage_error(&u.0))?;
    if let Err(e) = zklock_core::validate_connect_string(&hosts) {
        return Err(usage_error(&format!("invalid ZooKeeper hosts: {}", e.message())));
    }
    if let Err(e) = zklock_core::validate_lock_path(path) {
        return Err(usage_error(e.message()));
    }
    Ok(hosts)
}

/// Writes `bytes` to stdout; returns 0, or 71 if it cannot (a reader that
/// went away, as in `zklock list ... | head -1`, is no error).
pub(crate) fn write_stdout(bytes: &[u8]) -> i32 {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => exit::OK,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => exit::OK,
        Err(e) => {
            note!("cannot write the output: {e}");
            exit::INTERNAL
        },
    }
}

/// Reports a usage error; returns 64.
pub(crate) fn usage_error(message: &str) -> i32 {
    note!("{message}");
    exit::USAGE
}

/// Reports a failed connect; returns its exit code.
pub(crate) fn connect_error(hosts: &str, e: &Error) -> i32 {
    match e.kind() {
        ErrorKind::InvalidArgument | ErrorKind::InvalidPath => usage_error(e.message()),
        // The core's message names the servers when it is about them.
        _ if e.message().contains(hosts) => zk_error("cannot connect to ZooKeeper", e),
        _ => zk_error(&format!("cannot connect to ZooKeeper at {hosts}"), e),
    }
}

/// Reports a ZooKeeper failure while doing `what`; returns its exit code.
pub(crate) fn zk_error(what: &str, e: &Error) -> i32 {
    note!("{what}: {} ({})", e.message(), e.kind());
    match e.kind() {
        ErrorKind::InvalidArgument | ErrorKind::InvalidPath => exit::USAGE,
        ErrorKind::NoAuth => exit::NO_PERMISSION,
        ErrorKind::Internal | ErrorKind::Closed => exit::INTERNAL,
        _ => exit::UNAVAILABLE,
    }
}

/// The operation timeout zklock uses: the session timeout, within 1 s to
/// 10 s (it bounds the release and the close at exit).
pub(crate) fn operation_timeout(session_timeout: Duration) -> Duration {
    session_timeout.clamp(Duration::from_secs(1), Duration::from_secs(10))
}

/// Client options from the command line, and the connect timeout.
///
/// # Errors
/// The usage error's exit code (64), printed: a malformed ACL, TLS files
/// that do not go together, a user without its password in the
/// environment.
pub(crate) fn connect_options(c: &args::Connection, hosts: &str) -> Result<(ClientOptions, Duration), i32> {
    let session = c.session_timeout;
    let mut o = ClientOptions::new(hosts)
        .session_timeout(session)
        .operation_timeout(operation_timeout(session))
        .connect_timeout(c.connect_timeout);
    let password = |user: &Option<String>, option: &str, var: &str| -> Result<Option<(String, String)>, i32> {
        let Some(user) = user else {
            if std::env::var_os(var).is_some_and(|v| !v.is_empty()) {
                note!("warning: ${var} is set, but no {option}: not logging in");
            }
            return Ok(None);
        };
        match std::env::var(var) {
            Ok(password) => Ok(Some((user.clone(), password))),
            Err(_) => Err(usage_error(&format!("{user:?} needs its password in ${var} (never on the command line)"))),
        }
    };
    if let Some((user, password)) = password(&c.digest_user, "--digest-user", "ZKLOCK_DIGEST_PASSWORD")? {
        o = o.digest_auth(user, password);
    }
    if let Some((user, password)) = password(&c.sasl_user, "--sasl-user", "ZKLOCK_SASL_PASSWORD")? {
        o = o.sasl_digest_md5(user, password);
    }
    if let Some(spec) = &c.acl {
        o = o.acl(Acl::parse(spec).map_err(|e| usage_error(&format!("--acl: {}", e.message())))?);
    }
    let tls = TlsOptions::from_file_names(c.tls_ca.as_deref(), c.tls_cert.as_deref(), c.tls_key.as_deref())
        .map_err(|e| usage_error(e.message()))?;
    if let Some(tls) = tls {
        o = o.tls(tls);
    }
    Ok((o, c.connect_timeout))
}

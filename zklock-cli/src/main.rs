//! `zklock`: run a command while holding a ZooKeeper lock, in the spirit of
//! flock(1), and list the queue of a lock.
//!
//! ```text
//! zklock run  [--hosts H] PATH [OPTIONS] [--] COMMAND [ARGS...]
//! zklock lead [--hosts H] PATH [OPTIONS] [--] COMMAND [ARGS...]
//! zklock list [--hosts H] PATH [--json]
//! ```
//!
//! `zklock run` connects, takes the lock at `PATH` (exclusive by default,
//! `--read` / `--write` for the two sides of a read/write lock, `--permits N`
//! for one lease of a counting semaphore; Curator's node names), runs the command with the lock details in its environment,
//! and when the command exits releases the lock and closes the session (so
//! no node is left behind, whatever happened). If the lock is lost while the
//! command runs, the command gets `--lost-signal` (SIGTERM), then SIGKILL
//! after `--kill-after` (5 s), and zklock exits with 70.
//!
//! `zklock lead` is `zklock run` on a leader election (Curator
//! `LeaderLatch` compatible): the command runs while zklock leads; when
//! leadership is lost the command is signalled as above and, once it has
//! exited, zklock joins the election again (`--id` sets the participant
//! id, by default `<hostname>/<pid>`), unless zklock got SIGINT, SIGTERM
//! or SIGHUP meanwhile.
//!
//! `zklock list` prints the participants of a lock in queue order, holders
//! first (a table, or one JSON object with `--json`).
//!
//! # Environment of the command
//!
//! | variable | value |
//! |---|---|
//! | `ZKLOCK_FENCING_TOKEN` | the fencing token (czxid of our node), decimal |
//! | `ZKLOCK_NODE_PATH` | our lock node, e.g. `/locks/job/_c_<uuid>-lock-0000000004` |
//! | `ZKLOCK_LOCK_PATH` | the lock path as given |
//! | `ZKLOCK_LOCK_MODE` | `exclusive`, `read`, `write`, `leader` or `lease` |
//! | `ZKLOCK_SESSION_ID` | the ZooKeeper session id, hex with `0x` |
//!
//! `ZKLOCK_HOSTS` is read by zklock when `--hosts` is absent, `ZKLOCK_LOG`
//! for the level of zklock's log records on stderr (default `warn`).
//!
//! # Signals
//!
//! SIGINT, SIGTERM and SIGHUP sent to zklock are forwarded to the command
//! (except when the kernel sent them to the whole process group, as Ctrl-C
//! in a terminal does: the command has them already). zklock then keeps
//! waiting for the command and exits with its status. While zklock still
//! waits for the lock, such a signal cancels the wait (our node is deleted)
//! and zklock exits with 128 + the signal number.
//!
//! Signals go to the command's process only, not to processes it started
//! (a shell script should `exec` its long-running program or pass the
//! signal on).
//!
//! A suspended lock (connection lost; it may still be ours) is tolerated by
//! default while the core's safety clock says it is still safely ours; once
//! ZooKeeper has not answered for nearly a session timeout (before the
//! server can expire the session and grant the lock to anyone else) it
//! counts as lost. With `--signal-on-suspend` the command is signalled as
//! soon as the lock is suspended.
//!
//! # Exit status
//!
//! | code | meaning |
//! |---|---|
//! | the command's | the command ran and exited (128 + N if killed by signal N) |
//! | 64 | usage error: bad option or duration, invalid lock path, no or empty hosts |
//! | 69 | cannot connect to ZooKeeper, or ZooKeeper failed, before the command ran |
//! | 70 | the lock was lost while the command ran (wins over the command's status; `lead` rejoins instead) |
//! | 71 | internal error (e.g. no thread could be started) |
//! | 75 | timeout: the lock was not granted within `--timeout` |
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
mod list;
mod run;
mod signals;

use std::time::Duration;

use zklock_core::{ClientOptions, Error, ErrorKind};

/// The exit codes of `zklock` (see the module documentation).
mod exit {
    /// Success (`zklock list`, help).
    pub(crate) const OK: i32 = 0;
    /// Usage error (sysexits `EX_USAGE`).
    pub(crate) const USAGE: i32 = 64;
    /// ZooKeeper unreachable or failing (sysexits `EX_UNAVAILABLE`).
    pub(crate) const UNAVAILABLE: i32 = 69;
    /// The lock was lost while the command ran.
    pub(crate) const LOST: i32 = 70;
    /// Internal or OS error (sysexits `EX_OSERR`).
    pub(crate) const INTERNAL: i32 = 71;
    /// The lock was not granted in time (sysexits `EX_TEMPFAIL`).
    pub(crate) const TIMEOUT: i32 = 75;
    /// The command cannot be executed (as in the shell).
    pub(crate) const CANNOT_EXECUTE: i32 = 126;
    /// The command was not found (as in the shell).
    pub(crate) const NOT_FOUND: i32 = 127;
}

const HELP: &str = "\
zklock - run a command while holding a ZooKeeper lock or leading an
election, list a lock's queue

USAGE
  zklock run  [--hosts H] PATH [OPTIONS] [--] COMMAND [ARGS...]
  zklock lead [--hosts H] PATH [OPTIONS] [--] COMMAND [ARGS...]
  zklock list [--hosts H] PATH [--json]
  zklock --help | --version

  Options may come before or after PATH; the first word after PATH that is
  not an option (or everything after `--`) is the command.

COMMON OPTIONS
  --hosts H                ZooKeeper connect string host:port[,host:port...][/chroot]
                           (default: $ZKLOCK_HOSTS)
  --session-timeout D      session timeout to ask for (default 10s); a lock
                           whose holder died is freed after this long
  --connect-timeout D      give up connecting after D (default 15s)
  -h, --help               this help

RUN OPTIONS
  --timeout D              wait at most D for the lock (0: try once);
                           default: wait without limit
  --read                   take the read (shared) side of a read/write lock
  --write                  take the write side of a read/write lock
                           (default: an exclusive lock; Curator node names)
  --permits N              take one lease of a counting semaphore with N
                           permits (Curator InterProcessSemaphoreV2): up to N
                           commands run at once; every user must give the same N
  --data STRING            store STRING in the lock node (shown by `list`)
  --identify               store \"<hostname>/<pid of zklock>\" in the lock node
  --lost-signal SIG        signal for the command when the lock is lost
                           (default TERM; a name like INT, USR1, SIGKILL or a number)
  --kill-after D           SIGKILL the command if it is still running D after
                           the lost signal (default 5s)
  --signal-on-suspend      treat a suspended lock (connection to ZooKeeper lost,
                           so it may be someone else's soon) as lost at once;
                           default: lost once ZooKeeper has not answered for
                           nearly a session timeout (before the server can
                           expire the session and grant the lock to another)
  -v, --verbose            say on stderr when the lock is acquired and released,
                           and show zklock's INFO log records (reconnects,
                           suspensions, re-queues; $ZKLOCK_LOG sets the level:
                           error, warn (default), info, debug, trace, off)

LEAD
  `lead` joins the leader election at PATH (Curator LeaderLatch compatible)
  and runs the command while it leads, with the options of `run` except
  --read and --write. When leadership is lost, the command gets
  --lost-signal (then SIGKILL after --kill-after) and, once it has exited,
  zklock joins the election again and runs the command again when it leads
  again. When the command exits by itself, zklock resigns and exits with its
  status; after a signal to zklock (SIGINT, SIGTERM, SIGHUP) it does not
  stand again (a loss meanwhile: exit 70). --timeout bounds each wait to lead.
  --id ID                  our participant id, stored in our node and shown by
                           `list` (default: \"<hostname>/<pid of zklock>\")

LIST OPTIONS
  --json                   one JSON object: {\"path\":...,\"participants\":[{\"position\",
                           \"state\",\"holds\",\"kind\",\"sequence\",\"session_id\",\"data\",
                           \"node\",\"node_path\"}]}

  `list` prints the participants in queue order, holders first: position,
  HOLDS or WAITS, reader or writer, sequence, owner session, node name and
  node data. A lock path that does not exist has an empty queue.

DURATIONS
  500ms, 10s, 2m, 1h, or a plain number of seconds (decimals allowed).

ENVIRONMENT OF THE COMMAND
  ZKLOCK_FENCING_TOKEN     fencing token of this grant (czxid of the lock node);
                           grows with every grant: pass it to the resource
  ZKLOCK_NODE_PATH         our lock node, e.g. /locks/job/_c_<uuid>-lock-0000000004
  ZKLOCK_LOCK_PATH         the lock path
  ZKLOCK_LOCK_MODE         exclusive, read, write, leader or lease
  ZKLOCK_SESSION_ID        the ZooKeeper session id, hex (0x...)

SIGNALS
  SIGINT, SIGTERM and SIGHUP sent to zklock are forwarded to the command
  (not those the kernel sent to the whole process group, e.g. Ctrl-C: the
  command got them already); zklock then exits with the command's status.
  While still waiting for the lock, they cancel the wait (no node is left)
  and zklock exits with 128 + the signal number.
  When the lock is lost (session expired, node deleted, or no answer from
  ZooKeeper for nearly a session timeout; with --signal-on-suspend, as soon as
  it is suspended) the command gets --lost-signal, then SIGKILL after
  --kill-after. The lock is released and the session closed when the command
  exits. Signals go to the command's process only, not to processes it
  started: in a shell script, `exec` the long-running program (or trap the
  signal and pass it on).

EXIT STATUS
  N        the command's exit status (128+N if it was killed by signal N)
  64       usage error (bad option or duration, invalid lock path, no or empty hosts)
  69       cannot connect to ZooKeeper, or a ZooKeeper error before the command ran
  70       the lock was lost while the command ran (this wins over the command's status;
           `lead` rejoins instead)
  71       internal error
  75       timeout: the lock was not granted within --timeout
  126      the command cannot be executed
  127      the command was not found
  128+N    zklock received signal N while waiting for the lock
  The command's own status can also be one of these numbers; use --verbose
  to tell them apart.
";

/// Parses the command line, runs the subcommand, exits with its code.
fn main() {
    let parsed = args::parse(std::env::args_os().skip(1).collect());
    let verbose = matches!(&parsed, Ok(args::Command::Run(o)) if o.verbose);
    log_to_stderr(verbose);
    let code = match parsed {
        Ok(args::Command::Help) => print_stdout(HELP),
        Ok(args::Command::Version) => print_stdout(&format!("zklock {}\n", env!("CARGO_PKG_VERSION"))),
        Ok(args::Command::Run(opts)) => run::run(opts),
        Ok(args::Command::List(opts)) => list::list(opts),
        Err(u) => usage_error(&u.0),
    };
    std::process::exit(code);
}

/// The core's log records on stderr: `$ZKLOCK_LOG` (`error`, `warn`,
/// `info`, `debug`, `trace`, `off`) or warnings, and at least `info` with
/// `-v`.
fn log_to_stderr(verbose: bool) {
    let asked = std::env::var("ZKLOCK_LOG").ok().and_then(|v| {
        let level = zklock_core::logging::level_filter(&v);
        if level.is_none() {
            eprintln!("zklock: ZKLOCK_LOG={v:?} is not a log level (error, warn, info, debug, trace, off); using warn");
        }
        level
    });
    let mut level = asked.unwrap_or(log::LevelFilter::Warn);
    if verbose {
        level = level.max(log::LevelFilter::Info);
    }
    let _ = zklock_core::logging::set_log_sink(level, zklock_core::logging::to_stderr);
}

/// Writes `text` to stdout (a closed stdout is no error); returns 0.
fn print_stdout(text: &str) -> i32 {
    use std::io::Write as _;
    let _ = std::io::stdout().write_all(text.as_bytes());
    exit::OK
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

/// Reports a usage error; returns 64.
pub(crate) fn usage_error(message: &str) -> i32 {
    note!("{message}");
    exit::USAGE
}

/// Reports a failed connect; returns its exit code.
pub(crate) fn connect_error(hosts: &str, e: &Error) -> i32 {
    match e.kind() {
        ErrorKind::InvalidArgument | ErrorKind::InvalidPath => usage_error(e.message()),
        _ => zk_error(&format!("cannot connect to ZooKeeper at {hosts}"), e),
    }
}

/// Reports a ZooKeeper failure while doing `what`; returns its exit code.
pub(crate) fn zk_error(what: &str, e: &Error) -> i32 {
    note!("{what}: {} ({})", e.message(), e.kind());
    match e.kind() {
        ErrorKind::InvalidArgument | ErrorKind::InvalidPath => exit::USAGE,
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
pub(crate) fn connect_options(c: &args::Connection, hosts: &str) -> (ClientOptions, Duration) {
    let mut o = ClientOptions::new(hosts);
    let session = c.session_timeout.unwrap_or(Duration::from_secs(10));
    o = o.session_timeout(session).operation_timeout(operation_timeout(session));
    let connect = c.connect_timeout.unwrap_or(Duration::from_secs(15));
    (o.connect_timeout(connect), connect)
}

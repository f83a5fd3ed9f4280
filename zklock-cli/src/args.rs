//! The command line of `zklock`, declared with clap (derive): the
//! subcommands and their options, the value parsers (durations, signals,
//! permits), the help texts (also the man page's), and the conversion of
//! what was parsed into the options the subcommands run with, where the
//! rules clap cannot express are checked (which lock kind, which command).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use zklock_core::LockMode;

/// A usage error: the message names what was wrong (exit code 64).
#[derive(Debug)]
pub(crate) struct Usage(pub(crate) String);

impl Usage {
    /// A usage error with `msg`.
    fn new(msg: impl Into<String>) -> Usage {
        Usage(msg.into())
    }
}

/// The sections at the end of `zklock --help` and of the man page
/// zklock(1): title and text. Every line of a text, the first too, is
/// indented by two spaces (a text opened with a `\` line continuation
/// would lose its first line's indent: the continuation eats it).
pub(crate) const SECTIONS: [(&str, &str); 5] = [
    (
        "DURATIONS",
        "  1m30s, 500ms, 10s, 2h, 1h 15m, 0.5s (humantime), or a plain number of
  seconds as flock(1) takes them (2, 2.5).",
    ),
    (
        "ENVIRONMENT",
        "  ZKLOCK_HOSTS             the connect string when --hosts is absent
  ZKLOCK_LOG               level of zklock's log records on stderr: error,
                           warn (default), info, debug, trace or off
  RUST_LOG                 the same when ZKLOCK_LOG is absent (a level, or
                           zklock=LEVEL among other directives)
  ZKLOCK_TLS_CA, ZKLOCK_TLS_CERT, ZKLOCK_TLS_KEY, ZKLOCK_DIGEST_USER,
  ZKLOCK_SASL_USER, ZKLOCK_ACL
                           the options --tls-ca ... --acl when absent
  ZKLOCK_DIGEST_PASSWORD   the password of --digest-user (only here: a
                           command line is visible to every user)
  ZKLOCK_SASL_PASSWORD     the password of --sasl-user

  The command of `run` and `lead` gets:
  ZKLOCK_FENCING_TOKEN     fencing token of this grant (czxid of the lock node);
                           grows with every grant: pass it to the resource
  ZKLOCK_NODE_PATH         our lock node, e.g. /locks/job/_c_<uuid>-lock-0000000004
  ZKLOCK_LOCK_PATH         the lock path
  ZKLOCK_LOCK_MODE         EXCLUSIVE, READ, WRITE, LEADER or LEASE
  ZKLOCK_SESSION_ID        the ZooKeeper session id, hex (0x...)
  ZKLOCK_HOSTS, ...        the connection options given (flags too), so that
                           `zklock fence-check` in it connects the same way",
    ),
    (
        "LOCK KINDS",
        "  Without -s or -x, `run` and `hold` take the plain exclusive lock (Curator
  InterProcessMutex, nodes `-lock-`). -s and -x are the read and the write
  side of a read/write lock (Curator InterProcessReadWriteLock, nodes
  `__READ__` and `__WRIT__`): -s holders share it, -x excludes everyone.
  zklock keeps every kind of a path in one queue, so among zklock clients
  the plain lock excludes -s holders too, like -x. Curator's and kazoo's
  readers, however, do not wait for `-lock-` nodes: on a path that other
  libraries use, use -s and -x together, never -s with the plain lock.
  --permits N is a counting semaphore (nodes under PATH/leases); --shared-count
  COUNT_PATH one whose permits are the shared count at COUNT_PATH.",
    ),
    (
        "SIGNALS",
        "  SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1 and SIGUSR2 sent to
  zklock are forwarded to the command (not those the kernel sent to the
  whole process group, e.g. Ctrl-C: the command got them already, unless
  --process-group put it in a group of its own; one that a user sends to
  the whole group, kill -TERM -PGID, reaches the command twice, directly
  and from zklock); zklock then exits with the command's status (after
  one of them, `lead` does not stand again when leadership is lost, except
  after SIGUSR1 or SIGUSR2). SIGTSTP, SIGTTIN and SIGTTOU sent to zklock
  alone stop the command, not zklock, which keeps its session and watches
  the lock (SIGCONT is passed on too); the terminal's Ctrl-Z stops both.
  Of a stop and a SIGCONT that come together, the one sent last counts; a
  stop sent after the command was told to end is not passed on. A signal
  ignored when zklock starts stays ignored, by zklock and its command
  (nohup zklock run; zklock run ... & in a script); SIGCONT is handled
  even then.
  SIGSTOP, which cannot be handled, stops zklock alone: its command runs on
  unwatched, and may overlap the next holder once the session expires;
  stop the whole process group instead (kill -STOP -PGID). While still
  waiting for the lock they cancel the wait (no node is left) and zklock
  exits with 128 + the signal number; `hold` releases the lock and exits 0.
  When the lock is lost (session expired, node deleted, or the session not
  confirmed by ZooKeeper for nearly a session timeout; with
  --signal-on-suspend, as soon as it is suspended) the command gets
  --lost-signal, then SIGKILL after --kill-after. The lock is released and
  the session closed when the command exits. If zklock itself dies (SIGKILL,
  a crash, a signal it does not handle), the kernel sends the command
  SIGKILL at once (Linux's parent-death signal): nothing is left to watch
  the lock. Without --process-group, signals go to the command's process
  only: a shell script should `exec` its long-running program, or trap the
  signal and pass it on. No signal reaches processes that left the
  command's process group (setsid, `set -m`, daemons), nor anything but the
  command itself when zklock dies.",
    ),
    (
        "EXIT STATUS",
        "  N        the command's exit status (128+N if it was killed by signal N)
  0        `hold`: released after stdin closed or a signal; `list`: listed
  64       usage error (bad option or duration, invalid lock path, no or empty hosts)
  69       cannot connect to ZooKeeper, or a ZooKeeper error before the command ran
  70       the lock was lost while the command ran or while `hold` held it (this
           wins over the command's status; `lead` rejoins instead)
  71       internal error
  75       conflict: the lock was held (-n) or not granted within --timeout;
           -E CODE changes it
  77       ZooKeeper refused for lack of permission (an ACL, or credentials)
  126      the command cannot be executed
  127      the command was not found
  128+N    zklock received signal N while waiting for the lock
  The command's own status can also be one of these numbers; use --verbose
  to tell them apart.",
    ),
];

/// `zklock --help`'s text after the options: [`SECTIONS`].
fn after_long_help() -> String {
    SECTIONS.iter().map(|(title, text)| format!("{title}\n{text}\n")).collect::<Vec<_>>().join("\n")
}

/// `zklock`: run a command under a ZooKeeper lock, hold one, lead an
/// election, list a lock's queue.
#[derive(Parser, Debug)]
#[command(
    name = "zklock",
    version,
    about = "Run a command while holding a ZooKeeper lock, hold a lock, lead an election, list a lock's queue",
    long_about = "\
zklock takes distributed locks on Apache ZooKeeper and runs a command while it holds one, in the spirit of flock(1); \
it can also hold a lock for a shell script (`zklock hold`, like `etcdctl lock` without a command), run a command while \
it leads an election (`zklock lead`), list who holds a lock and who waits (`zklock list`), and tell a script run under \
a lock whether its grant still stands (`zklock fence-check`).

The locks use Curator's node names, so Curator, kazoo and the zklock libraries (Rust, C, Python, Node) on the same path \
contend with it. Whatever happens (the command fails, a timeout, a signal, a lost lock), zklock deletes its node and \
closes its session before it exits, waiting at most half the session timeout (at least 1 s) in all for ZooKeeper to \
confirm the release and the close (a signal ends that wait): \
after an outage it deletes them once a server is back; if none answers in that time, it exits anyway and the node goes \
when ZooKeeper expires the session. One exception: `zklock hold` whose lock is lost exits at once (its exit is the \
script's signal to stop), and its node goes when ZooKeeper expires the session.",
    after_help = "See `zklock --help` for durations, lock kinds, environment, signals and exit status, and `zklock \
                  SUBCOMMAND --help` for each subcommand.",
    after_long_help = after_long_help(),
    subcommand_required = true,
    subcommand_value_name = "SUBCOMMAND",
    subcommand_help_heading = "Subcommands"
)]
pub(crate) struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub(crate) command: Sub,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub(crate) enum Sub {
    /// Run a command while holding a lock (flock-style)
    #[command(
        long_about = "\
Run a command while holding the lock at PATH, in the spirit of flock(1): connect, take the lock (waiting for it unless \
-n or --timeout says otherwise), run the command with the lock's details in its environment, and when it exits release \
the lock, close the session and exit with the command's status.

Options may come before or after PATH; the first word after PATH that is not an option (or everything after `--`) is \
the command. With -c, the command is a string run by /bin/sh -c.

Without -s or -x the lock is the plain exclusive lock (Curator InterProcessMutex). zklock queues it with the -s and \
-x holders of the path, so it excludes them too; but Curator's and kazoo's readers do not wait for it: on a path \
shared with them, use -s and -x together (see LOCK KINDS in `zklock --help`).

If the lock is lost while the command runs, the command gets --lost-signal, then SIGKILL after --kill-after, and zklock \
exits with 70.",
        override_usage = "zklock run [OPTIONS] <PATH> [--] <COMMAND> [ARGS]...\n       zklock run [OPTIONS] <PATH> -c \
                          <CMD>"
    )]
    Run(RunArgs),
    /// Run a command while leading an election (Curator LeaderLatch)
    #[command(
        long_about = "\
Join the leader election at PATH (Curator LeaderLatch compatible) and run the command while zklock leads, with the \
options of `run` except the lock kinds. When leadership is lost, the command gets --lost-signal (then SIGKILL after \
--kill-after) and, once it has exited, zklock joins the election again and runs the command again when it leads \
again. When the command exits by itself, zklock resigns and exits with its status; after a signal to zklock (SIGINT, \
SIGTERM, SIGHUP) it does not stand again (a loss meanwhile: exit 70). --timeout bounds each wait to lead.",
        override_usage = "zklock lead [OPTIONS] <PATH> [--] <COMMAND> [ARGS]...\n       zklock lead [OPTIONS] <PATH> -c \
                          <CMD>"
    )]
    Lead(LeadArgs),
    /// Take a lock, print its fencing token, hold it until stdin closes
    #[command(long_about = "\
Take the lock at PATH (the lock kinds and waiting options of `run`), print its fencing token on one line of stdout \
(with --json an object with token, node_path, lock_path, mode and session_id), then hold it until stdin reaches end of \
file or zklock gets a signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2); then release it and exit \
0. Like `etcdctl lock` without a command: a shell script reads the token, does its work and closes zklock's stdin. If \
the lock is lost meanwhile, zklock says so on stderr and exits 70 at once (hold the lock as long as you need it, and \
watch for that exit); it does not wait to delete its node, which goes when ZooKeeper expires the session. stdin that cannot be read releases the lock at once, like one that is closed: `zklock hold PATH \
&` in an interactive shell has the terminal as stdin, which a background job may not read; give it a pipe.

Example (bash):
  coproc LOCK { zklock hold /locks/job; }
  read -r token <&\"${LOCK[0]}\" || exit 1     # held once the token is there
  ./job --fencing-token \"$token\"
  exec {LOCK[1]}>&-; wait \"$LOCK_PID\"        # close its stdin: released")]
    Hold(HoldArgs),
    /// List a lock's participants, holders first
    #[command(long_about = "\
Print the participants of the lock at PATH in queue order, holders first: position, HOLDS or WAITS, reader or writer, \
sequence, owner session, node name and node data (other libraries' nodes too). A lock path that does not exist has an \
empty queue (exit 0).")]
    List(ListArgs),
    /// Exit 0 while the grant of `zklock run` or `lead` still stands (for the command's scripts)
    #[command(
        name = "fence-check",
        long_about = "\
Ask ZooKeeper whether the grant whose fencing token is TOKEN (default $ZKLOCK_FENCING_TOKEN) and whose lock node is \
--node (default $ZKLOCK_NODE_PATH) still stands: after a sync, the node must exist with that creation zxid. Exit 0 if \
it does, 70 if the grant is over (the node is gone or is another node). `zklock run` and `zklock lead` give their \
command both variables and ZKLOCK_HOSTS (with the connection options given as flags in their variables too), so a \
script it runs calls `zklock fence-check` with no arguments before each step that must not run without the lock.

The answer is for the moment ZooKeeper read the node: the lock may be lost right after. Where that window matters, \
give the token to the resource (it refuses smaller ones) or keep the state in ZooKeeper with a fenced write.

Example (sh, run by `zklock run /locks/job -- ./steps.sh`):
  for step in fetch build publish; do
    zklock fence-check || exit 70      # the lock is gone: stop
    ./$step --fencing-token \"$ZKLOCK_FENCING_TOKEN\"
  done"
    )]
    FenceCheck(FenceCheckArgs),
    /// Print the shared count at PATH, or set it to N (the permits of `--shared-count` semaphores)
    #[command(
        name = "shared-count",
        long_about = "\
Print the shared count at PATH (one line: the number as written), or with N set it to N, making the node and its \
parents if needed. The count is 4 bytes, big-endian, as Curator's SharedCount keeps it; semaphores taken with \
`--shared-count PATH` (and Curator's InterProcessSemaphoreV2 over a SharedCount) follow it at once: a waiter gets \
in as soon as it grows; when it shrinks, leases held stay held. Exit 0; 69 when the node does not exist (printing) or \
ZooKeeper fails; 64 for a node that holds no count or a bad N (0 to 2147483647)."
    )]
    SharedCount(SharedCountArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    #[command(long_about = "\
Print the completion script for SHELL on stdout, e.g.
  zklock completions bash > ~/.local/share/bash-completion/completions/zklock
  zklock completions zsh > ~/.zfunc/_zklock
  zklock completions fish > ~/.config/fish/completions/zklock.fish
`make install` installs the bash, zsh and fish scripts.")]
    Completions {
        /// The shell to complete for
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page zklock(1) (roff), or write every page to a directory
    #[command(hide = true)]
    Man {
        /// Write zklock.1 and a page per command (zklock-run.1, ...) into DIR
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// Where and how to connect to ZooKeeper: the options of every subcommand
/// that connects (the place for TLS and ACL options when the core has them).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Connection")]
pub(crate) struct Connection {
    /// ZooKeeper connect string `host:port[,host:port...][/chroot]`
    #[arg(long, value_name = "HOSTS", env = "ZKLOCK_HOSTS")]
    pub(crate) hosts: Option<String>,
    /// Session timeout to ask for; a lock whose holder died is freed after this long
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration, allow_hyphen_values = true)]
    pub(crate) session_timeout: Duration,
    /// Give up connecting after this long
    ///
    /// When every server refuses the connection (nothing listens on its
    /// port), has no route or a name that does not resolve, zklock gives up
    /// at once, naming them ("connection refused by 127.0.0.1:2181"), and
    /// exits 69.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = duration, allow_hyphen_values = true)]
    pub(crate) connect_timeout: Duration,
    /// Speak TLS to every server (name their secureClientPort), trusting the CAs in this PEM file
    #[arg(long, value_name = "FILE", env = "ZKLOCK_TLS_CA")]
    pub(crate) tls_ca: Option<String>,
    /// The client certificate (PEM) shown when the server asks for one; needs --tls-key and --tls-ca
    #[arg(long, value_name = "FILE", env = "ZKLOCK_TLS_CERT")]
    pub(crate) tls_cert: Option<String>,
    /// The client certificate's private key (PEM)
    #[arg(long, value_name = "FILE", env = "ZKLOCK_TLS_KEY")]
    pub(crate) tls_key: Option<String>,
    /// Digest authentication as USER; the password comes from $ZKLOCK_DIGEST_PASSWORD (never the command line)
    #[arg(long, value_name = "USER", env = "ZKLOCK_DIGEST_USER")]
    pub(crate) digest_user: Option<String>,
    /// SASL DIGEST-MD5 login as USER; the password comes from $ZKLOCK_SASL_PASSWORD
    #[arg(long, value_name = "USER", env = "ZKLOCK_SASL_USER")]
    pub(crate) sasl_user: Option<String>,
    /// ACL of the nodes zklock creates: 'open' (default), 'creator', or scheme:id:perms,... as zkCli writes it
    #[arg(long, value_name = "SPEC", env = "ZKLOCK_ACL")]
    pub(crate) acl: Option<String>,
}

impl Connection {
    /// The connection as environment variables for the command of `run`
    /// and `lead` (so that `zklock fence-check` and other zklock calls in
    /// it connect the same way): every option given, by flag or by
    /// variable, in its variable. Passwords are only ever variables, so the
    /// command has them already.
    pub(crate) fn env(&self) -> Vec<(&'static str, &str)> {
        [
            ("ZKLOCK_HOSTS", &self.hosts),
            ("ZKLOCK_TLS_CA", &self.tls_ca),
            ("ZKLOCK_TLS_CERT", &self.tls_cert),
            ("ZKLOCK_TLS_KEY", &self.tls_key),
            ("ZKLOCK_DIGEST_USER", &self.digest_user),
            ("ZKLOCK_SASL_USER", &self.sasl_user),
            ("ZKLOCK_ACL", &self.acl),
        ]
        .into_iter()
        .filter_map(|(var, value)| value.as_deref().map(|v| (var, v)))
        .collect()
    }

    /// The connect string: `--hosts`, else `$ZKLOCK_HOSTS` (clap read it).
    ///
    /// # Errors
    /// A usage error when neither is given (an empty `--hosts` is passed on
    /// and refused by the connect-string check, which names the problem).
    pub(crate) fn hosts(&self) -> Result<String, Usage> {
        self.hosts.clone().ok_or_else(|| {
            Usage::new("no ZooKeeper hosts: pass --hosts HOST:PORT[,HOST:PORT...][/CHROOT] or set ZKLOCK_HOSTS")
        })
    }
}

/// Which lock `run` and `hold` take (the plain exclusive lock by default)
/// and what its node holds.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Lock")]
pub(crate) struct LockArgs {
    /// Take the read (shared) side of the read/write lock at PATH: -s holders share it, -x excludes them
    ///
    /// zklock's plain lock (no -s or -x) waits for -s holders as well, but a Curator or kazoo reader does not wait
    /// for the plain lock: use -s and -x together on one path.
    ///
    /// --shared is flock's name for it, kept as an alias.
    #[arg(short = 's', long = "read", visible_alias = "shared")]
    shared: bool,
    /// Take the write side of the read/write lock at PATH: excludes -s and -x holders
    ///
    /// Without -s or -x, the plain exclusive lock (Curator InterProcessMutex, nodes -lock-) is taken. Among zklock
    /// clients it waits for -s holders too (one queue per path), but Curator's and kazoo's readers do not wait for it:
    /// where they share the path, use -s and -x together.
    ///
    /// --exclusive is flock's name for it, kept as an alias; in zklock's words (LockMode) EXCLUSIVE is the plain lock,
    /// taken without -s or -x.
    #[arg(short = 'x', long = "write", visible_alias = "exclusive")]
    exclusive: bool,
    /// Take one lease of a counting semaphore with N permits (up to N at once; every user must give the same N)
    ///
    /// Curator InterProcessSemaphoreV2: nodes under PATH/leases and PATH/locks.
    #[arg(long, value_name = "N", value_parser = permits, allow_hyphen_values = true)]
    permits: Option<usize>,
    /// Take one lease of a counting semaphore whose permits are the shared count at COUNT_PATH
    ///
    /// Curator InterProcessSemaphoreV2 with a SharedCount (4 bytes, big-endian; set it with `zklock shared-count
    /// COUNT_PATH N`): a waiter gets in as soon as the count grows; when it shrinks, leases held stay held.
    #[arg(long, value_name = "COUNT_PATH", conflicts_with = "permits")]
    shared_count: Option<String>,

    /// Store STRING in the lock node (shown by `zklock list`)
    #[arg(long, value_name = "STRING")]
    data: Option<String>,
    /// Store `<hostname>/<pid of zklock>` in the lock node
    #[arg(long, conflicts_with = "data")]
    identify: bool,
}

impl LockArgs {
    /// The lock mode asked for, and the permits of a semaphore.
    ///
    /// # Errors
    /// A usage error for two kinds at once.
    fn mode(&self) -> Result<(LockMode, Option<Pool>), Usage> {
        if self.shared && self.exclusive {
            return Err(Usage::new(
                "-s/--read (--shared) and -x/--write (--exclusive) exclude each other: they are the two sides of \
                 one read/write lock; take one",
            ));
        }
        let pool = match (self.permits, &self.shared_count) {
            (Some(n), _) => Some(Pool::Permits(n)),
            (None, Some(path)) => Some(Pool::SharedCount(path.clone())),
            (None, None) => None,
        };
        Ok(match (pool, self.shared, self.exclusive) {
            (Some(_), true, _) | (Some(_), _, true) => {
                return Err(Usage::new(
                    "--permits and --shared-count (a semaphore) exclude -s/--read (--shared) and -x/--write \
                     (--exclusive)",
                ))
            },
            (Some(pool), false, false) => (LockMode::Lease, Some(pool)),
            (None, true, _) => (LockMode::Read, None),
            (None, _, true) => (LockMode::Write, None),
            (None, false, false) => (LockMode::Exclusive, None),
        })
    }

    /// `--data` or `--identify`, if given.
    fn node_data(self) -> Option<NodeData> {
        match (self.data, self.identify) {
            (Some(text), _) => Some(NodeData::Text(text)),
            (None, true) => Some(NodeData::Identify),
            (None, false) => None,
        }
    }

    /// The lock to take at `path`, connecting by `connection`, waiting as
    /// `wait` says.
    ///
    /// # Errors
    /// A usage error for two lock kinds at once.
    fn request(
        self,
        path: String,
        connection: Connection,
        wait: &WaitArgs,
        verbose: bool,
    ) -> Result<LockRequest, Usage> {
        let (mode, pool) = self.mode()?;
        Ok(LockRequest { connection, path, mode, pool, wait: wait.wait(), data: self.node_data(), verbose })
    }
}

/// How long to wait for the lock, and the exit status when it is not
/// granted (flock's -n, -w and -E).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Waiting")]
pub(crate) struct WaitArgs {
    /// Wait at most DURATION for the lock (0 tries once); default: without limit
    ///
    /// Then exit with the conflict code (-E, default 75). flock's -w takes seconds: 2.5 works here too, and so do
    /// 500ms or 1m30s.
    #[arg(
        short = 'w',
        long = "timeout",
        visible_alias = "wait",
        value_name = "DURATION",
        value_parser = acquire_timeout,
        allow_hyphen_values = true
    )]
    timeout: Option<AcquireTimeout>,
    /// Do not wait: if the lock is held, exit at once with the conflict code (-E, default 75)
    #[arg(short = 'n', long = "nonblock", alias = "nb", conflicts_with = "timeout")]
    nonblock: bool,
    /// Exit status when the lock is held (-n) or not granted in time (-w)
    #[arg(short = 'E', long = "conflict-exit-code", value_name = "CODE", default_value_t = crate::exit::TIMEOUT)]
    conflict_exit_code: u8,
}

impl WaitArgs {
    /// The options as [`Wait`].
    fn wait(&self) -> Wait {
        let timeout = if self.nonblock { Some(Duration::ZERO) } else { self.timeout.and_then(|t| t.0) };
        Wait { timeout, nonblock: self.nonblock, conflict_exit_code: i32::from(self.conflict_exit_code) }
    }
}

/// How the command runs and is stopped (`run` and `lead`).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Command")]
pub(crate) struct CommandArgs {
    /// Run CMD with `/bin/sh -c` (like flock -c) instead of `COMMAND [ARGS]`
    #[arg(short = 'c', long = "command", value_name = "CMD")]
    shell_command: Option<OsString>,
    /// Signal for the command when the lock is lost (a name like INT, USR1, SIGKILL or a number)
    #[arg(long, value_name = "SIGNAL", default_value = "TERM", value_parser = signal)]
    lost_signal: i32,
    /// SIGKILL the command if it is still running this long after the lost signal
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = duration, allow_hyphen_values = true)]
    kill_after: Duration,
    /// Treat a suspended lock (connection to ZooKeeper lost) as lost at once
    ///
    /// By default a suspended lock counts as lost once ZooKeeper has not confirmed the session for nearly a session
    /// timeout (before the server can expire the session and grant the lock to another).
    #[arg(long)]
    signal_on_suspend: bool,
    /// Start the command in a process group of its own and signal the whole group
    ///
    /// Forwarded signals, the lost signal and SIGKILL go to every process of the group, so processes the command
    /// started stop with it; after a loss, zklock SIGKILLs what is left of the group after --kill-after even if the
    /// command itself has exited. The command is then not in the terminal's foreground group: Ctrl-C reaches it
    /// through zklock, and it cannot read from the terminal.
    #[arg(long)]
    process_group: bool,
}

impl CommandArgs {
    /// The options of `zklock SUB` (`run` or `lead`, which rejoins) that
    /// takes `lock` and runs `positional` (`COMMAND [ARGS...]`) or `-c`'s.
    ///
    /// # Errors
    /// A usage error for a missing or doubled command.
    fn options(self, sub: &str, lock: LockRequest, positional: Vec<OsString>) -> Result<RunOptions, Usage> {
        Ok(RunOptions {
            lock,
            command: command(sub, positional, self.shell_command)?,
            lost_signal: self.lost_signal,
            kill_after: self.kill_after,
            signal_on_suspend: self.signal_on_suspend,
            process_group: self.process_group,
            rejoin: sub == "lead",
        })
    }
}

/// The arguments of `zklock run`.
#[derive(Args, Debug)]
pub(crate) struct RunArgs {
    /// The lock path, e.g. /locks/nightly
    #[arg(value_name = "PATH")]
    path: String,
    /// The command to run and its arguments
    #[arg(value_name = "COMMAND", trailing_var_arg = true)]
    command: Vec<OsString>,
    /// Say on stderr when the lock is acquired and released, and show zklock's INFO log records
    #[arg(short, long)]
    verbose: bool,
    /// Which lock, and its node's data.
    #[command(flatten)]
    lock: LockArgs,
    /// How long to wait.
    #[command(flatten)]
    wait: WaitArgs,
    /// How the command runs.
    #[command(flatten)]
    run: CommandArgs,
    /// Where to connect.
    #[command(flatten)]
    connection: Connection,
}

/// The arguments of `zklock lead`.
#[derive(Args, Debug)]
pub(crate) struct LeadArgs {
    /// The election path, e.g. /jobs/scheduler
    #[arg(value_name = "PATH")]
    path: String,
    /// The command to run and its arguments
    #[arg(value_name = "COMMAND", trailing_var_arg = true)]
    command: Vec<OsString>,
    /// Say on stderr when leadership is taken and given up, and show zklock's INFO log records
    #[arg(short, long)]
    verbose: bool,
    /// Our participant id, stored in our node and shown by `list` (default: `<hostname>/<pid of zklock>`)
    #[arg(long, visible_alias = "data", value_name = "ID", help_heading = "Lock")]
    id: Option<String>,
    /// How long to wait.
    #[command(flatten)]
    wait: WaitArgs,
    /// How the command runs.
    #[command(flatten)]
    run: CommandArgs,
    /// Where to connect.
    #[command(flatten)]
    connection: Connection,
}

/// The arguments of `zklock hold`.
#[derive(Args, Debug)]
pub(crate) struct HoldArgs {
    /// The lock path, e.g. /locks/nightly
    #[arg(value_name = "PATH")]
    path: String,
    /// Say on stderr when the lock is acquired and released, and show zklock's INFO log records
    #[arg(short, long)]
    verbose: bool,
    /// Print one JSON object: {"token", "node_path", "lock_path", "mode", "session_id"}
    #[arg(long)]
    json: bool,
    /// Which lock, and its node's data.
    #[command(flatten)]
    lock: LockArgs,
    /// How long to wait.
    #[command(flatten)]
    wait: WaitArgs,
    /// Where to connect.
    #[command(flatten)]
    connection: Connection,
}

/// The arguments of `zklock list`.
#[derive(Args, Debug)]
pub(crate) struct ListArgs {
    /// The lock path, e.g. /locks/nightly
    #[arg(value_name = "PATH")]
    path: String,
    /// Print one JSON object: {"path", "participants": [{"position", "state", "holds", "kind", "sequence",
    /// "session_id", "data", "node", "node_path"}]}
    #[arg(long)]
    json: bool,
    /// PATH is a counting semaphore with N permits: list its leases (under PATH/leases), the first N holding
    #[arg(long, value_name = "N", value_parser = permits, allow_hyphen_values = true)]
    permits: Option<usize>,
    /// Where to connect.
    #[command(flatten)]
    connection: Connection,
}

/// `zklock fence-check`'s command line.
#[derive(Args, Debug)]
pub(crate) struct FenceCheckArgs {
    /// The grant's fencing token (`zklock run` and `lead` give it to their command in $ZKLOCK_FENCING_TOKEN)
    #[arg(value_name = "TOKEN", env = "ZKLOCK_FENCING_TOKEN")]
    pub(crate) token: u64,
    /// The grant's lock node (`zklock run` and `lead` give it to their command in $ZKLOCK_NODE_PATH)
    #[arg(long, value_name = "PATH", env = "ZKLOCK_NODE_PATH")]
    pub(crate) node: String,
    /// Where to connect.
    #[command(flatten)]
    pub(crate) connection: Connection,
}

/// `zklock shared-count`'s command line.
#[derive(Args, Debug)]
pub(crate) struct SharedCountArgs {
    /// The count node, e.g. /pools/db-size
    #[arg(value_name = "PATH")]
    pub(crate) path: String,
    /// Set the count to N (0 to 2147483647) instead of printing it
    #[arg(value_name = "N", value_parser = clap::value_parser!(i32).range(0..), allow_hyphen_values = true)]
    pub(crate) count: Option<i32>,
    /// Where to connect.
    #[command(flatten)]
    pub(crate) connection: Connection,
}

/// Node data for the lock node.
#[derive(Debug)]
pub(crate) enum NodeData {
    /// `--data STRING` (`--id ID` for `lead`).
    Text(String),
    /// `--identify`: `hostname/pid` of zklock.
    Identify,
}

/// How long to wait for a lock and what to say when it is not granted.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wait {
    /// `None` waits without limit, zero tries once.
    pub(crate) timeout: Option<Duration>,
    /// `-n` (the timeout is zero).
    pub(crate) nonblock: bool,
    /// `-E`: the exit status when the lock is not granted (75 by default).
    pub(crate) conflict_exit_code: i32,
}

/// A lock to take: what `run`, `lead` and `hold` have in common.
#[derive(Debug)]
pub(crate) struct LockRequest {
    /// Where and how to connect.
    pub(crate) connection: Connection,
    /// The lock path.
    pub(crate) path: String,
    /// Exclusive (default), read (`-s`), write (`-x`), a lease
    /// (`--permits`) or an election (`zklock lead`).
    pub(crate) mode: LockMode,
    /// `--permits N` or `--shared-count COUNT_PATH`: a lease of a semaphore
    /// (mode `Lease`).
    pub(crate) pool: Option<Pool>,
    /// `--timeout`, `-n`, `-E`.
    pub(crate) wait: Wait,
    /// `--data` / `--identify` (`--id` for `lead`).
    pub(crate) data: Option<NodeData>,
    /// `--verbose`.
    pub(crate) verbose: bool,
}

/// Where a semaphore's permits come from.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Pool {
    /// `--permits N`: N, the same for every user.
    Permits(usize),
    /// `--shared-count COUNT_PATH`: the shared count at COUNT_PATH.
    SharedCount(String),
}

/// Options of `zklock run` and `zklock lead`.
#[derive(Debug)]
pub(crate) struct RunOptions {
    /// The lock (or election) to take.
    pub(crate) lock: LockRequest,
    /// The command and its arguments (never empty; `/bin/sh -c CMD` for `-c`).
    pub(crate) command: Vec<OsString>,
    /// `--lost-signal` (default SIGTERM).
    pub(crate) lost_signal: i32,
    /// `--kill-after` (default 5 s).
    pub(crate) kill_after: Duration,
    /// `--signal-on-suspend`.
    pub(crate) signal_on_suspend: bool,
    /// `--process-group`.
    pub(crate) process_group: bool,
    /// `zklock lead`: after the leadership is lost (and the command has
    /// exited), join the election again and run the command again.
    pub(crate) rejoin: bool,
}

/// Options of `zklock hold`.
#[derive(Debug)]
pub(crate) struct HoldOptions {
    /// The lock to take.
    pub(crate) lock: LockRequest,
    /// `--json`.
    pub(crate) json: bool,
}

/// Options of `zklock list`.
#[derive(Debug)]
pub(crate) struct ListOptions {
    /// Where and how to connect.
    pub(crate) connection: Connection,
    /// The lock path.
    pub(crate) path: String,
    /// `--json`.
    pub(crate) json: bool,
    /// `--permits N`: the path is a semaphore of N permits.
    pub(crate) permits: Option<usize>,
}

/// The program `-c` runs its command with.
const SHELL: &str = "/bin/sh";

/// The command to run: `COMMAND [ARGS...]`, or `/bin/sh -c CMD` for `-c`.
///
/// # Errors
/// A usage error if there is none, or both, or it is an empty string.
fn command(sub: &str, positional: Vec<OsString>, shell: Option<OsString>) -> Result<Vec<OsString>, Usage> {
    let command = match (shell, positional.is_empty()) {
        (Some(_), false) => {
            return Err(Usage::new(format!(
                "-c/--command and a COMMAND after the lock path exclude each other: zklock {sub} [OPTIONS] PATH -c \
                 'SHELL COMMAND' or zklock {sub} [OPTIONS] PATH -- COMMAND [ARGS...]"
            )))
        },
        (Some(cmd), true) if cmd.is_empty() => return Err(Usage::new("the shell command of -c/--command is empty")),
        (Some(cmd), true) => vec![OsString::from(SHELL), OsString::from("-c"), cmd],
        (None, true) => {
            return Err(Usage::new(format!(
                "missing command to run after the lock path: zklock {sub} [OPTIONS] PATH -- COMMAND [ARGS...] (or \
                 -c 'SHELL COMMAND')"
            )))
        },
        (None, false) => positional,
    };
    if command[0].is_empty() {
        return Err(Usage::new("the command to run is an empty string"));
    }
    Ok(command)
}

impl RunArgs {
    /// The options of `zklock run`.
    ///
    /// # Errors
    /// A usage error for rules clap does not check.
    pub(crate) fn options(self) -> Result<RunOptions, Usage> {
        let lock = self.lock.request(self.path, self.connection, &self.wait, self.verbose)?;
        self.run.options("run", lock, self.command)
    }

    /// `--verbose`.
    pub(crate) fn verbose(&self) -> bool {
        self.verbose
    }
}

impl LeadArgs {
    /// The options of `zklock lead`.
    ///
    /// # Errors
    /// A usage error for rules clap does not check.
    pub(crate) fn options(self) -> Result<RunOptions, Usage> {
        // A participant's id tells who leads: by default, who we are.
        let data = Some(self.id.map_or(NodeData::Identify, NodeData::Text));
        let lock = LockRequest {
            connection: self.connection,
            path: self.path,
            mode: LockMode::Leader,
            pool: None,
            wait: self.wait.wait(),
            data,
            verbose: self.verbose,
        };
        self.run.options("lead", lock, self.command)
    }

    /// `--verbose`.
    pub(crate) fn verbose(&self) -> bool {
        self.verbose
    }
}

impl HoldArgs {
    /// The options of `zklock hold`.
    ///
    /// # Errors
    /// A usage error for two lock kinds at once.
    pub(crate) fn options(self) -> Result<HoldOptions, Usage> {
        Ok(HoldOptions {
            lock: self.lock.request(self.path, self.connection, &self.wait, self.verbose)?,
            json: self.json,
        })
    }

    /// `--verbose`.
    pub(crate) fn verbose(&self) -> bool {
        self.verbose
    }
}

impl ListArgs {
    /// The options of `zklock list`.
    pub(crate) fn options(self) -> ListOptions {
        ListOptions { connection: self.connection, path: self.path, json: self.json, permits: self.permits }
    }
}

/// The message of a clap error as one line (without the usage and the
/// "for more information" paragraphs), with where to find help: `sub`, the
/// subcommand given if any.
pub(crate) fn clap_message(e: &clap::Error, sub: Option<&str>) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let subcommands =
        "use `zklock run`, `zklock hold`, `zklock lead`, `zklock list` or `zklock fence-check` (see zklock --help)";
    match e.kind() {
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            return format!("missing subcommand: {subcommands}");
        },
        ErrorKind::InvalidSubcommand => {
            if let Some(ContextValue::String(name)) = e.get(ContextKind::InvalidSubcommand) {
                return format!("unknown subcommand {name:?}: {subcommands}");
            }
        },
        ErrorKind::MissingRequiredArgument => {
            if let (Some(ContextValue::Strings(missing)), Some(sub)) = (e.get(ContextKind::InvalidArg), sub) {
                if missing.iter().any(|m| m == "<PATH>") {
                    return format!("missing lock path: zklock {sub} [OPTIONS] PATH ... (see zklock {sub} --help)");
                }
            }
        },
        _ => {},
    }
    let rendered = e.render().to_string();
    let mut line = String::new();
    for paragraph in rendered.split("\n\n") {
        let paragraph = paragraph.trim();
        if paragraph.starts_with("Usage:") || paragraph.starts_with("For more information") {
            continue;
        }
        for part in paragraph.lines().map(str::trim).filter(|p| !p.is_empty()) {
            let part = part.strip_prefix("error: ").unwrap_or(part);
            if !line.is_empty() {
                line.push_str(if line.ends_with(':') { " " } else { "; " });
            }
            line.push_str(part);
        }
    }
    match sub {
        Some(sub) => format!("{line} (see zklock {sub} --help)"),
        None => format!("{line} (see zklock --help)"),
    }
}

/// The subcommand named in `args` (the arguments after the program name),
/// if it is one: the first argument that is not an option.
pub(crate) fn subcommand_in(args: &[OsString]) -> Option<String> {
    use clap::CommandFactory as _;
    let first = args.iter().find(|a| !a.to_string_lossy().starts_with('-'))?.to_str()?;
    Cli::command().find_subcommand(first).map(|s| s.get_name().to_owned())
}

/// The value of `--timeout`: `None` waits without limit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AcquireTimeout(Option<Duration>);

/// `--timeout`: a duration as [`parse_seconds`] reads it, by the core's
/// acquire timeout rule: one too large to represent, or beyond its FOREVER,
/// waits without limit, as in every other front end.
fn acquire_timeout(text: &str) -> Result<AcquireTimeout, String> {
    let secs = parse_seconds(text)?;
    zklock_core::acquire_timeout_from_secs(secs).map(AcquireTimeout).map_err(|e| e.message().to_owned())
}

/// A duration option other than `--timeout` (the core checks its range).
fn duration(text: &str) -> Result<Duration, String> {
    let secs = parse_seconds(text)?;
    Duration::try_from_secs_f64(secs).map_err(|_| "the duration is too large".to_owned())
}

/// The number of seconds in a duration: a plain number of seconds (`2.5`,
/// as flock's `-w` takes it), or anything humantime reads (`1m30s`,
/// `500ms`, `0.5s`, `1h 15m`). A number too large for humantime is
/// infinite (the caller decides what that means).
fn parse_seconds(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let plain = t.chars().all(|c| c.is_ascii_digit() || c == '.')
        && t.chars().filter(|&c| c == '.').count() <= 1
        && t.chars().any(|c| c.is_ascii_digit());
    if plain {
        if let Ok(secs) = t.parse::<f64>() {
            return Ok(secs);
        }
    }
    match humantime::parse_duration(t) {
        Ok(d) => Ok(d.as_secs_f64()),
        Err(humantime::DurationError::NumberOverflow) => Ok(f64::INFINITY),
        Err(e) => Err(format!(
            "invalid duration {text:?}: {e} (expected e.g. 1m30s, 500ms, 10s, 2h or a number of seconds such as 2.5)"
        )),
    }
}

/// `--permits N`: a whole number from 1 to 2147483647 (Curator's limit).
fn permits(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=i32::MAX as usize).contains(&n) => Ok(n),
        _ => Err("must be a whole number from 1 to 2147483647".to_owned()),
    }
}

/// Signal names zklock knows (Linux numbers, from libc).
const SIGNALS: &[(&str, i32)] = &[
    ("HUP", libc::SIGHUP),
    ("INT", libc::SIGINT),
    ("QUIT", libc::SIGQUIT),
    ("ILL", libc::SIGILL),
    ("TRAP", libc::SIGTRAP),
    ("ABRT", libc::SIGABRT),
    ("BUS", libc::SIGBUS),
    ("FPE", libc::SIGFPE),
    ("KILL", libc::SIGKILL),
    ("USR1", libc::SIGUSR1),
    ("SEGV", libc::SIGSEGV),
    ("USR2", libc::SIGUSR2),
    ("PIPE", libc::SIGPIPE),
    ("ALRM", libc::SIGALRM),
    ("TERM", libc::SIGTERM),
    ("CHLD", libc::SIGCHLD),
    ("CONT", libc::SIGCONT),
    ("STOP", libc::SIGSTOP),
    ("TSTP", libc::SIGTSTP),
    ("TTIN", libc::SIGTTIN),
    ("TTOU", libc::SIGTTOU),
    ("URG", libc::SIGURG),
    ("XCPU", libc::SIGXCPU),
    ("XFSZ", libc::SIGXFSZ),
    ("VTALRM", libc::SIGVTALRM),
    ("PROF", libc::SIGPROF),
    ("WINCH", libc::SIGWINCH),
    ("IO", libc::SIGIO),
    ("PWR", libc::SIGPWR),
    ("SYS", libc::SIGSYS),
];

/// The highest signal number accepted as a number (Linux `SIGRTMAX`).
const MAX_SIGNAL: i32 = 64;

/// Parses a signal: a name with or without `SIG` (any case) or a number.
fn signal(text: &str) -> Result<i32, String> {
    let t = text.trim();
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
        return match t.parse::<i32>() {
            Ok(n) if (1..=MAX_SIGNAL).contains(&n) => Ok(n),
            _ => Err(format!("invalid signal number {t} (1 to {MAX_SIGNAL})")),
        };
    }
    let upper = t.to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    SIGNALS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, s)| s)
        .ok_or_else(|| format!("unknown signal {text:?} (a name such as TERM, INT, KILL, USR1, or a number)"))
}

/// The environment variables that stand for options (the `env` of their
/// arguments, which a test compares with this list: kept as a constant so
/// that start-up need not build the command twice); an empty one counts as
/// unset.
pub(crate) const ENV_OPTIONS: [&str; 9] = [
    "ZKLOCK_HOSTS",
    "ZKLOCK_TLS_CA",
    "ZKLOCK_TLS_CERT",
    "ZKLOCK_TLS_KEY",
    "ZKLOCK_DIGEST_USER",
    "ZKLOCK_SASL_USER",
    "ZKLOCK_ACL",
    "ZKLOCK_FENCING_TOKEN",
    "ZKLOCK_NODE_PATH",
];

/// `SIGTERM` for 15, `signal 40` for numbers without a name.
pub(crate) fn signal_name(sig: i32) -> String {
    match SIGNALS.iter().find(|&&(_, s)| s == sig) {
        Some((name, _)) => format!("SIG{name}"),
        None => format!("signal {sig}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    #[test]
    fn env_options_are_the_arguments_env() {
        let cmd = Cli::command();
        let mut from_clap: Vec<String> = cmd
            .get_subcommands()
            .flat_map(|s| s.get_arguments())
            .filter_map(|a| a.get_env().map(|e| e.to_string_lossy().into_owned()))
            .collect();
        from_clap.sort();
        from_clap.dedup();
        let mut listed: Vec<String> = ENV_OPTIONS.iter().map(|v| (*v).to_owned()).collect();
        listed.sort();
        assert_eq!(listed, from_clap);
    }

    /// Parses `zklock ARGS`; the clap error as the one line zklock prints.
    fn parse(args: &[&str]) -> Result<Sub, String> {
        let sub = subcommand_in(&os(args));
        Cli::try_parse_from(std::iter::once("zklock").chain(args.iter().copied()))
            .map(|c| c.command)
            .map_err(|e| clap_message(&e, sub.as_deref()))
    }

    fn run(args: &[&str]) -> Result<RunOptions, String> {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        match parse(&all)? {
            Sub::Run(r) => r.options().map_err(|u| u.0),
            other => panic!("not run: {other:?}"),
        }
    }

    fn os(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations() {
        let d = |s: &str| duration(s).ok();
        assert_eq!(d("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(d("10s"), Some(Duration::from_secs(10)));
        assert_eq!(d("2m"), Some(Duration::from_secs(120)));
        assert_eq!(d("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(d("7"), Some(Duration::from_secs(7)));
        assert_eq!(d("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(d("0.5s"), Some(Duration::from_millis(500)));
        assert_eq!(d("0"), Some(Duration::ZERO));
        // humantime's forms.
        assert_eq!(d("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(d("1h 15m"), Some(Duration::from_secs(4500)));
        assert_eq!(d("2min"), Some(Duration::from_secs(120)));
        assert_eq!(d("1s500ms"), Some(Duration::from_millis(1500)));
        assert_eq!(d("1.5m"), Some(Duration::from_secs(90)));
        for bad in ["", "s", "-1", "-1s", "10x", "1e3", "1.2.3", ".", "ms", "NaN", "inf", "1.5.m"] {
            assert!(duration(bad).is_err(), "{bad:?} accepted");
        }
        assert!(duration("10x").err().is_some_and(|m| m.contains("10x")));
        // --timeout: beyond the core's FOREVER (or any f64) waits without limit.
        let t = |s: &str| acquire_timeout(s).map(|t| t.0);
        assert_eq!(t("0").ok(), Some(Some(Duration::ZERO)));
        assert_eq!(t("2m").ok(), Some(Some(Duration::from_secs(120))));
        assert_eq!(t(&"9".repeat(400)).ok(), Some(None));
        assert_eq!(t("99999999999999999999h").ok(), Some(None));
        assert_eq!(t("99999999999999999999999999h 1s").ok(), Some(None));
        assert!(t("-1").is_err());
        assert!(duration(&"9".repeat(400)).is_err());
    }

    #[test]
    fn signals() {
        let s = |t: &str| signal(t).ok();
        assert_eq!(s("TERM"), Some(libc::SIGTERM));
        assert_eq!(s("sigusr1"), Some(libc::SIGUSR1));
        assert_eq!(s("SIGKILL"), Some(libc::SIGKILL));
        assert_eq!(s("9"), Some(9));
        assert_eq!(s("0"), None);
        assert_eq!(s("65"), None);
        assert_eq!(s("FOO"), None);
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
        assert_eq!(signal_name(40), "signal 40");
    }

    #[test]
    fn run_command_lines() {
        let r = run(&["--hosts", "h:1", "/a", "--timeout=10s", "--read", "--", "echo", "--x"]).unwrap();
        assert_eq!(r.lock.path, "/a");
        assert_eq!(r.lock.mode, LockMode::Read);
        assert_eq!(r.lock.wait.timeout, Some(Duration::from_secs(10)));
        assert_eq!(r.command, os(&["echo", "--x"]));
        assert_eq!(r.lock.connection.hosts.as_deref(), Some("h:1"));
        assert_eq!(r.lock.connection.session_timeout, Duration::from_secs(10));
        // Without `--`, the first word after the path starts the command;
        // options after it are the command's, `--` too.
        let r = run(&["/a", "-s", "ls", "-l", "--", "-x"]).unwrap();
        assert_eq!(r.command, os(&["ls", "-l", "--", "-x"]));
        assert_eq!(r.lock.mode, LockMode::Read);
        let r = run(&["/a", "ls"]).unwrap();
        assert_eq!(r.lock.mode, LockMode::Exclusive);
        assert_eq!(r.lost_signal, libc::SIGTERM);
        assert_eq!(r.kill_after, Duration::from_secs(5));
        assert_eq!((r.lock.wait.timeout, r.lock.wait.conflict_exit_code), (None, 75));
        assert!(!r.process_group);
        // flock's options.
        let r = run(&["-n", "-E", "3", "-x", "/a", "-c", "echo hi | wc -c"]).unwrap();
        assert_eq!(r.command, os(&["/bin/sh", "-c", "echo hi | wc -c"]));
        assert_eq!(r.lock.mode, LockMode::Write);
        assert_eq!((r.lock.wait.timeout, r.lock.wait.nonblock), (Some(Duration::ZERO), true));
        assert_eq!(r.lock.wait.conflict_exit_code, 3);
        let r = run(&["-w", "1m30s", "--process-group", "/a", "true"]).unwrap();
        assert_eq!(r.lock.wait.timeout, Some(Duration::from_secs(90)));
        assert!(r.process_group);
        let r = run(&["--wait", "2.5", "/a", "true"]).unwrap();
        assert_eq!(r.lock.wait.timeout, Some(Duration::from_millis(2500)));
        let r = run(&["--write", "/a", "true"]).unwrap();
        assert_eq!(r.lock.mode, LockMode::Write);
        let r = run(&["/a", "--permits=3", "x"]).unwrap();
        assert_eq!((r.lock.mode, r.lock.pool), (LockMode::Lease, Some(Pool::Permits(3))));
        let r = run(&["/a", "--shared-count", "/a-count", "x"]).unwrap();
        assert_eq!((r.lock.mode, r.lock.pool), (LockMode::Lease, Some(Pool::SharedCount("/a-count".into()))));
        let err = |a: &[&str]| run(a).err().unwrap_or_default();
        assert!(err(&["/a", "--"]).contains("missing command"));
        assert!(err(&["/a"]).contains("missing command"));
        assert!(err(&["--", "x"]).contains("missing command"));
        assert!(err(&["-s"]).contains("missing lock path"));
        assert!(err(&["/a", "--frob", "--", "x"]).contains("--frob"));
        assert!(err(&["/a", "--read", "--write", "--", "x"]).contains("exclude each other"));
        assert!(err(&["/a", "-s", "-x", "x"]).contains("--read"));
        assert!(err(&["/a", "--timeout"]).contains("--timeout"));
        assert!(err(&["/a", "--read=1", "--", "x"]).contains("--read"));
        assert!(err(&["/a", "-n", "-w", "1s", "x"]).contains("cannot be used with"));
        assert!(err(&["/a", "-c", "true", "x"]).contains("exclude each other"));
        assert!(err(&["/a", "-c", ""]).contains("empty"));
        assert!(err(&["/a", ""]).contains("empty string"));
        assert!(err(&["/a", "-E", "256", "x"]).contains("-E") || err(&["/a", "-E", "256", "x"]).contains("256"));
        assert!(err(&["/a", "--permits", "0", "x"]).contains("whole number"));
        assert!(err(&["/a", "--permits", "-1", "x"]).contains("--permits"));
        assert!(err(&["/a", "--permits", "2", "--write", "x"]).contains("exclude -s"));
        assert!(err(&["/a", "--shared-count", "/c", "-s", "x"]).contains("exclude -s"));
        assert!(err(&["/a", "--shared-count", "/c", "--permits", "2", "x"]).contains("cannot be used with"));
        assert!(err(&["/a", "--data", "d", "--identify", "x"]).contains("--identify"));
        assert!(err(&["/a", "-w", "1x", "x"]).contains("1x"));
        assert!(err(&["/a", "-w", "-1s", "x"]).contains("-1s"));
    }

    #[test]
    fn other_command_lines() {
        let Ok(Sub::List(l)) = parse(&["list", "/a", "--json"]) else { panic!("not parsed") };
        let l = l.options();
        assert_eq!(l.path, "/a");
        assert!(l.json);
        assert!(parse(&["list", "/a", "/b"]).err().unwrap_or_default().contains("/b"));
        assert!(parse(&["list"]).err().unwrap_or_default().contains("missing lock path"));
        let Ok(Sub::Lead(l)) = parse(&["lead", "--id", "me", "/a", "x"]) else { panic!("not parsed") };
        let l = l.options().unwrap();
        assert_eq!(l.lock.mode, LockMode::Leader);
        assert!(matches!(l.lock.data, Some(NodeData::Text(ref t)) if t == "me"));
        assert!(l.rejoin);
        let Ok(Sub::Lead(l)) = parse(&["lead", "/a", "x"]) else { panic!("not parsed") };
        assert!(matches!(l.options().unwrap().lock.data, Some(NodeData::Identify)));
        assert!(parse(&["lead", "/a", "--permits", "2", "x"]).err().unwrap_or_default().contains("--permits"));
        assert!(parse(&["lead", "/a", "-s", "x"]).err().unwrap_or_default().contains("-s"));
        let Ok(Sub::Hold(h)) = parse(&["hold", "-s", "-w", "500ms", "--json", "/a"]) else { panic!("not parsed") };
        let h = h.options().unwrap();
        assert_eq!((h.lock.mode, h.json), (LockMode::Read, true));
        assert_eq!(h.lock.wait.timeout, Some(Duration::from_millis(500)));
        assert!(parse(&["hold", "/a", "cmd"]).err().unwrap_or_default().contains("cmd"));
        let err = |a: &[&str]| parse(a).err().unwrap_or_default();
        assert!(err(&[]).contains("missing subcommand"));
        assert!(err(&["frob"]).contains("unknown subcommand"));
        assert!(err(&["completions", "tcsh"]).contains("tcsh"));
    }
}

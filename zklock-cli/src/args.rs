//! Command-line parsing for `zklock` (by hand, no parser crate): the two
//! subcommands, durations (`500ms`, `10s`, `2m`, `1h`, plain seconds) and
//! signal names (`TERM`, `SIGTERM`, `15`).

use std::ffi::OsString;
use std::time::Duration;

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

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Command {
    /// Print the help text.
    Help,
    /// Print the version.
    Version,
    /// `zklock run`, or `zklock lead` (an election; `rejoin` set).
    Run(RunOptions),
    /// `zklock list`.
    List(ListOptions),
}

/// Connection settings shared by the subcommands.
#[derive(Debug, Default)]
pub(crate) struct Connection {
    /// `--hosts`, or `ZKLOCK_HOSTS` when absent (resolved by [`Connection::hosts`]).
    pub(crate) hosts: Option<String>,
    /// `--session-timeout`.
    pub(crate) session_timeout: Option<Duration>,
    /// `--connect-timeout`.
    pub(crate) connect_timeout: Option<Duration>,
}

impl Connection {
    /// The connect string: `--hosts`, else `$ZKLOCK_HOSTS`.
    ///
    /// # Errors
    /// A usage error when neither is given (an empty string is passed on and
    /// rejected by the connect-string check, which names the problem).
    pub(crate) fn hosts(&self) -> Result<String, Usage> {
        if let Some(h) = &self.hosts {
            return Ok(h.clone());
        }
        match std::env::var_os("ZKLOCK_HOSTS") {
            Some(h) => h.into_string().map_err(|_| Usage::new("ZKLOCK_HOSTS is not valid UTF-8")),
            None => Err(Usage::new(
                "no ZooKeeper hosts: pass --hosts HOST:PORT[,HOST:PORT...][/CHROOT] or set ZKLOCK_HOSTS",
            )),
        }
    }

    /// Handles the connection options; `Ok(false)` if `name` is not one.
    fn take(&mut self, name: &str, args: &mut Args) -> Result<bool, Usage> {
        match name {
            "--hosts" => self.hosts = Some(args.value(name)?),
            "--session-timeout" => self.session_timeout = Some(parse_duration(name, &args.value(name)?)?),
            "--connect-timeout" => self.connect_timeout = Some(parse_duration(name, &args.value(name)?)?),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Node data for the lock node.
#[derive(Debug)]
pub(crate) enum NodeData {
    /// `--data STRING`.
    Text(String),
    /// `--identify`: `hostname/pid` of zklock.
    Identify,
}

/// Options of `zklock run`.
#[derive(Debug)]
pub(crate) struct RunOptions {
    /// Where and how to connect.
    pub(crate) connection: Connection,
    /// The lock path.
    pub(crate) path: String,
    /// Exclusive (default), `--read`, `--write`, a lease (`--permits`) or
    /// an election (`zklock lead`).
    pub(crate) mode: LockMode,
    /// `--permits N`: a lease of a semaphore with N permits (mode `Lease`).
    pub(crate) permits: Option<usize>,
    /// `--timeout`: `None` (not given, or beyond the core's FOREVER) waits
    /// forever, zero tries once.
    pub(crate) timeout: Option<Duration>,
    /// `--data` / `--identify`.
    pub(crate) data: Option<NodeData>,
    /// `--lost-signal` (default SIGTERM).
    pub(crate) lost_signal: i32,
    /// `--kill-after` (default 5 s).
    pub(crate) kill_after: Duration,
    /// `--signal-on-suspend`.
    pub(crate) signal_on_suspend: bool,
    /// `--verbose`.
    pub(crate) verbose: bool,
    /// The command and its arguments (never empty).
    pub(crate) command: Vec<OsString>,
    /// `zklock lead`: after the leadership is lost (and the command has
    /// exited), join the election again and run the command again.
    pub(crate) rejoin: bool,
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
}

/// The default of `--kill-after`.
pub(crate) const DEFAULT_KILL_AFTER: Duration = Duration::from_secs(5);

/// A cursor over the arguments after the subcommand.
struct Args {
    /// The arguments.
    items: Vec<OsString>,
    /// Index of the next argument to read.
    next: usize,
    /// The value of a `--name=value` option being handled.
    inline: Option<String>,
}

impl Args {
    /// The value of option `name`: from `--name=value` or the next argument.
    fn value(&mut self, name: &str) -> Result<String, Usage> {
        if let Some(v) = self.inline.take() {
            return Ok(v);
        }
        let Some(v) = self.items.get(self.next) else {
            return Err(Usage::new(format!("option {name} needs a value")));
        };
        self.next += 1;
        v.clone().into_string().map_err(|_| Usage::new(format!("the value of {name} is not valid UTF-8")))
    }

    /// Splits an option argument into its name and inline value.
    fn option(&mut self, arg: &str) -> String {
        match arg.split_once('=') {
            Some((name, value)) if arg.starts_with("--") => {
                self.inline = Some(value.to_owned());
                name.to_owned()
            },
            _ => {
                self.inline = None;
                arg.to_owned()
            },
        }
    }

    /// Fails if a `--flag=value` was given to an option without a value.
    fn no_value(&mut self, name: &str) -> Result<(), Usage> {
        match self.inline.take() {
            Some(_) => Err(Usage::new(format!("option {name} takes no value"))),
            None => Ok(()),
        }
    }
}

/// Parses the arguments after the program name.
///
/// # Errors
/// A usage error naming the bad argument.
pub(crate) fn parse(args: Vec<OsString>) -> Result<Command, Usage> {
    let mut it = args.into_iter();
    let Some(sub) = it.next() else {
        return Err(Usage::new(
            "missing subcommand: use `zklock run`, `zklock lead` or `zklock list` (see zklock --help)",
        ));
    };
    let rest = Args { items: it.collect(), next: 0, inline: None };
    match sub.to_str() {
        Some("-h" | "--help" | "help") => Ok(Command::Help),
        Some("-V" | "--version") => Ok(Command::Version),
        Some("run") => parse_run(rest, false),
        Some("lead") => parse_run(rest, true),
        Some("list") => parse_list(rest),
        _ => Err(Usage::new(format!(
            "unknown subcommand {:?}: use `zklock run`, `zklock lead` or `zklock list` (see zklock --help)",
            sub.to_string_lossy()
        ))),
    }
}

/// Whether `arg` looks like an option (`-x`, `--xyz`), not a positional.
fn is_option(arg: &OsString) -> bool {
    arg.to_str().is_some_and(|s| s.len() > 1 && s.starts_with('-'))
}

/// An argument as UTF-8, or a usage error naming `what`.
fn utf8(arg: OsString, what: &str) -> Result<String, Usage> {
    arg.into_string().map_err(|_| Usage::new(format!("the {what} is not valid UTF-8")))
}

/// `--permits N`: a whole number from 1 to 2147483647 (Curator's limit).
fn parse_permits(name: &str, value: &str) -> Result<usize, Usage> {
    match value.parse::<usize>() {
        Ok(n) if (1..=i32::MAX as usize).contains(&n) => Ok(n),
        _ => Err(Usage::new(format!("{name} must be a whole number from 1 to 2147483647, not {value:?}"))),
    }
}

/// Parses the arguments of `zklock run`, or with `lead` of `zklock lead`
/// (the same options, but `--id` instead of `--read` / `--write`).
fn parse_run(mut args: Args, lead: bool) -> Result<Command, Usage> {
    let sub = if lead { "zklock lead" } else { "zklock run" };
    let mut connection = Connection::default();
    let mut path: Option<String> = None;
    let mut read = false;
    let mut write = false;
    let mut permits: Option<usize> = None;
    let mut timeout = None;
    let mut data_text: Option<String> = None;
    let mut identify = false;
    let mut lost_signal = libc::SIGTERM;
    let mut kill_after = DEFAULT_KILL_AFTER;
    let mut signal_on_suspend = false;
    let mut verbose = false;
    let mut command: Option<Vec<OsString>> = None;
    while let Some(arg) = args.items.get(args.next).cloned() {
        args.next += 1;
        if arg == "--" {
            command = Some(args.items[args.next..].to_vec());
            break;
        }
        if !is_option(&arg) {
            if path.is_none() {
                path = Some(utf8(arg, "lock path")?);
                continue;
            }
            // The first argument after the path that is not an option starts
            // the command (as in flock(1)).
            command = Some(args.items[args.next - 1..].to_vec());
            break;
        }
        let name = args.option(&utf8(arg, "option")?);
        if connection.take(&name, &mut args)? {
            continue;
        }
        match name.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--read" if !lead => {
                args.no_value(&name)?;
                read = true
            },
            "--write" if !lead => {
                args.no_value(&name)?;
                write = true
            },
            "--identify" => {
                args.no_value(&name)?;
                identify = true
            },
            "--signal-on-suspend" => {
                args.no_value(&name)?;
                signal_on_suspend = true
            },
            "-v" | "--verbose" => {
                args.no_value(&name)?;
                verbose = true
            },
            "--permits" if !lead => permits = Some(parse_permits(&name, &args.value(&name)?)?),
            "--timeout" => timeout = parse_acquire_timeout(&name, &args.value(&name)?)?,
            "--data" => data_text = Some(args.value(&name)?),
            "--id" if lead => data_text = Some(args.value(&name)?),
            "--lost-signal" => lost_signal = parse_signal(&name, &args.value(&name)?)?,
            "--kill-after" => kill_after = parse_duration(&name, &args.value(&name)?)?,
            _ => return Err(Usage::new(format!("unknown option {name} for `{sub}` (see zklock --help)"))),
        }
    }
    let Some(path) = path else {
        return Err(Usage::new(format!("missing lock path: {sub} [OPTIONS] PATH -- COMMAND [ARGS...]")));
    };
    let command = match command {
        Some(c) if !c.is_empty() => c,
        _ => {
            return Err(Usage::new(format!(
                "missing command to run after the lock path: {sub} [OPTIONS] {path} -- COMMAND [ARGS...]"
            )))
        },
    };
    if command[0].is_empty() {
        return Err(Usage::new("the command to run is an empty string"));
    }
    if read && write {
        return Err(Usage::new("--read and --write exclude each other"));
    }
    if permits.is_some() && (read || write) {
        return Err(Usage::new("--permits (a semaphore) excludes --read and --write"));
    }
    let mode = if lead {
        LockMode::Leader
    } else if permits.is_some() {
        LockMode::Lease
    } else if read {
        LockMode::Read
    } else if write {
        LockMode::Write
    } else {
        LockMode::Exclusive
    };
    let data = match (data_text, identify) {
        (Some(_), true) => return Err(Usage::new("--data (--id) and --identify exclude each other")),
        (Some(text), false) => Some(NodeData::Text(text)),
        // A participant's id tells who leads: by default, who we are.
        (None, true) => Some(NodeData::Identify),
        (None, false) if lead => Some(NodeData::Identify),
        (None, false) => None,
    };
    Ok(Command::Run(RunOptions {
        connection,
        path,
        mode,
        permits,
        timeout,
        data,
        lost_signal,
        kill_after,
        signal_on_suspend,
        verbose,
        command,
        rejoin: lead,
    }))
}

/// Parses the arguments of `zklock list`.
fn parse_list(mut args: Args) -> Result<Command, Usage> {
    let mut connection = Connection::default();
    let mut path: Option<String> = None;
    let mut json = false;
    let mut only_positional = false;
    while let Some(arg) = args.items.get(args.next).cloned() {
        args.next += 1;
        if !only_positional && arg == "--" {
            only_positional = true;
            continue;
        }
        if only_positional || !is_option(&arg) {
            if path.is_some() {
                return Err(Usage::new(format!(
                    "unexpected argument {:?}: `zklock list` takes one lock path",
                    arg.to_string_lossy()
                )));
            }
            path = Some(utf8(arg, "lock path")?);
            continue;
        }
        let name = args.option(&utf8(arg, "option")?);
        if connection.take(&name, &mut args)? {
            continue;
        }
        match name.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--json" => {
                args.no_value(&name)?;
                json = true
            },
            _ => return Err(Usage::new(format!("unknown option {name} for `zklock list` (see zklock --help)"))),
        }
    }
    let Some(path) = path else {
        return Err(Usage::new("missing lock path: zklock list [OPTIONS] PATH"));
    };
    Ok(Command::List(ListOptions { connection, path, json }))
}

/// Parses `500ms`, `10s`, `2m`, `1h` or a plain number of seconds
/// (decimals allowed: `1.5`, `0.25s`).
///
/// # Errors
/// A usage error naming `option` and the bad value.
pub(crate) fn parse_duration(option: &str, text: &str) -> Result<Duration, Usage> {
    let secs = parse_seconds(option, text)?;
    Duration::try_from_secs_f64(secs).map_err(|_| Usage::new(format!("the duration given for {option} is too large")))
}

/// `--timeout`: a duration as [`parse_duration`], by the core's acquire
/// timeout rule: one too large to represent, or beyond its FOREVER, waits
/// without limit (`None`), like in every other front end.
///
/// # Errors
/// A usage error naming `option` and the bad value.
pub(crate) fn parse_acquire_timeout(option: &str, text: &str) -> Result<Option<Duration>, Usage> {
    let secs = parse_seconds(option, text)?;
    zklock_core::acquire_timeout_from_secs(secs).map_err(|e| Usage::new(format!("{option}: {}", e.message())))
}

/// The number of seconds a duration in [`parse_duration`]'s forms means.
fn parse_seconds(option: &str, text: &str) -> Result<f64, Usage> {
    let bad = || {
        Usage::new(format!(
            "invalid duration {text:?} for {option} (expected e.g. 500ms, 10s, 2m, 1h or a number of seconds)"
        ))
    };
    let t = text.trim();
    let (number, unit) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let well_formed = !number.is_empty()
        && number.chars().all(|c| c.is_ascii_digit() || c == '.')
        && number.chars().filter(|&c| c == '.').count() <= 1
        && number.chars().any(|c| c.is_ascii_digit());
    if !well_formed {
        return Err(bad());
    }
    let value: f64 = number.parse().map_err(|_| bad())?;
    Ok(value * unit)
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
///
/// # Errors
/// A usage error naming `option` and the bad value.
pub(crate) fn parse_signal(option: &str, text: &str) -> Result<i32, Usage> {
    let t = text.trim();
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
        return match t.parse::<i32>() {
            Ok(n) if (1..=MAX_SIGNAL).contains(&n) => Ok(n),
            _ => Err(Usage::new(format!("invalid signal number {t} for {option} (1 to {MAX_SIGNAL})"))),
        };
    }
    let upper = t.to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    SIGNALS.iter().find(|(n, _)| *n == name).map(|&(_, s)| s).ok_or_else(|| {
        Usage::new(format!("unknown signal {text:?} for {option} (a name such as TERM, INT, KILL, USR1, or a number)"))
    })
}

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

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn durations() {
        let d = |s: &str| parse_duration("--timeout", s).map_err(|e| e.0);
        assert_eq!(d("500ms").ok(), Some(Duration::from_millis(500)));
        assert_eq!(d("10s").ok(), Some(Duration::from_secs(10)));
        assert_eq!(d("2m").ok(), Some(Duration::from_secs(120)));
        assert_eq!(d("1h").ok(), Some(Duration::from_secs(3600)));
        assert_eq!(d("7").ok(), Some(Duration::from_secs(7)));
        assert_eq!(d("1.5").ok(), Some(Duration::from_millis(1500)));
        assert_eq!(d("0").ok(), Some(Duration::ZERO));
        for bad in ["", "s", "-1", "10x", "1e3", "1.2.3", ".", "ms", "NaN", "inf"] {
            assert!(d(bad).is_err(), "{bad:?} accepted");
        }
        assert!(d("10x").err().is_some_and(|m| m.contains("--timeout") && m.contains("10x")));
        // --timeout: beyond the core's FOREVER (or any f64) waits without limit.
        let t = |s: &str| parse_acquire_timeout("--timeout", s).map_err(|e| e.0);
        assert_eq!(t("0").ok(), Some(Some(Duration::ZERO)));
        assert_eq!(t("2m").ok(), Some(Some(Duration::from_secs(120))));
        assert_eq!(t(&"9".repeat(400)).ok(), Some(None));
        assert_eq!(t("99999999999999999999h").ok(), Some(None));
        assert!(t("-1").is_err());
    }

    #[test]
    fn signals() {
        let s = |t: &str| parse_signal("--lost-signal", t).ok();
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
        let Ok(Command::Run(r)) =
            parse(args(&["run", "--hosts", "h:1", "/a", "--timeout=10s", "--read", "--", "echo", "--x"]))
        else {
            panic!("not parsed")
        };
        assert_eq!(r.path, "/a");
        assert_eq!(r.mode, LockMode::Read);
        assert_eq!(r.timeout, Some(Duration::from_secs(10)));
        assert_eq!(r.command, args(&["echo", "--x"]));
        assert_eq!(r.connection.hosts.as_deref(), Some("h:1"));
        // Without `--`, the first word after the path starts the command.
        let Ok(Command::Run(r)) = parse(args(&["run", "/a", "ls", "-l"])) else { panic!("not parsed") };
        assert_eq!(r.command, args(&["ls", "-l"]));
        assert_eq!(r.mode, LockMode::Exclusive);
        assert_eq!(r.lost_signal, libc::SIGTERM);
        let err = |a: &[&str]| parse(args(a)).err().map(|e| e.0).unwrap_or_default();
        assert!(err(&["run", "/a", "--"]).contains("missing command"));
        assert!(err(&["run", "/a"]).contains("missing command"));
        assert!(err(&["run", "--", "x"]).contains("missing lock path"));
        assert!(err(&["run", "/a", "--frob", "--", "x"]).contains("--frob"));
        assert!(err(&["run", "/a", "--read", "--write", "--", "x"]).contains("exclude"));
        assert!(err(&["run", "/a", "--timeout"]).contains("needs a value"));
        assert!(err(&["run", "/a", "--read=1", "--", "x"]).contains("takes no value"));
        let Ok(Command::Run(r)) = parse(args(&["run", "/a", "--permits=3", "x"])) else { panic!("not parsed") };
        assert_eq!((r.mode, r.permits), (LockMode::Lease, Some(3)));
        assert!(err(&["run", "/a", "--permits", "0", "x"]).contains("whole number"));
        assert!(err(&["run", "/a", "--permits", "-1", "x"]).contains("whole number"));
        assert!(err(&["run", "/a", "--permits", "2", "--write", "x"]).contains("excludes"));
        assert!(err(&["lead", "/a", "--permits", "2", "x"]).contains("--permits"));
        assert!(err(&[]).contains("missing subcommand"));
        assert!(err(&["frob"]).contains("unknown subcommand"));
    }

    #[test]
    fn list_command_lines() {
        let Ok(Command::List(l)) = parse(args(&["list", "/a", "--json"])) else { panic!("not parsed") };
        assert_eq!(l.path, "/a");
        assert!(l.json);
        assert!(parse(args(&["list", "/a", "/b"])).is_err());
        assert!(parse(args(&["list"])).is_err());
    }
}

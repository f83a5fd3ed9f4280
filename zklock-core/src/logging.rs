//! Where the core's log records go when a front end (the C, Python and Node
//! bindings, the CLI) asks for them: [`set_log_sink`].
//!
//! The core logs through the `log` facade (targets `zklock_core::...`, the
//! module that logs): connects,
//! reconnects, suspensions, session expiries, re-queues, background
//! cleanups, each with the lock path and session id it concerns. A Rust
//! program sees the records through whatever `log` logger it installs (for
//! example `env_logger`), and needs nothing from this module. A binding is
//! a library of its own with its own copy of the facade: it installs a sink
//! here, which hands the records to the host language's logging.
//!
//! The sink runs on a thread of its own (`zklock-log`), never on the thread
//! that logs: the client's runtime thread must never wait for Python's GIL,
//! Node's event loop or a C callback. Records wait in a queue of
//! [`QUEUE`]; when a slow sink lets it fill up, further records are
//! dropped (and counted: the next record delivered says how many).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{Error, Result};

zklock_proto::vocabulary! {
    /// How much of the core's log a front end asks for ([`LogLevel::filter`]:
    /// a level lets its own records and every more severe one through), and
    /// the level of one record ([`LogLevel::of`]; never `Off`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum LogLevel {
        /// Nothing.
        Off = 0, "OFF";
        /// Errors.
        Error = 1, "ERROR";
        /// Warnings: a session that ended, a lost lock, a cleanup left to the
        /// background (the default, on stderr).
        Warn = 2, "WARN";
        /// Connects, reconnects, suspensions, re-queues, cleanups done.
        Info = 3, "INFO";
        /// Every grant too.
        Debug = 4, "DEBUG";
        /// Everything.
        Trace = 5, "TRACE";
    }
}

impl LogLevel {
    /// The `log` crate's filter that lets this level and every more severe
    /// one through.
    pub fn filter(self) -> log::LevelFilter {
        match self {
            LogLevel::Off => log::LevelFilter::Off,
            LogLevel::Error => log::LevelFilter::Error,
            LogLevel::Warn => log::LevelFilter::Warn,
            LogLevel::Info => log::LevelFilter::Info,
            LogLevel::Debug => log::LevelFilter::Debug,
            LogLevel::Trace => log::LevelFilter::Trace,
        }
    }

    /// The level of a record of the `log` crate's `level`.
    pub fn of(level: log::Level) -> LogLevel {
        match level {
            log::Level::Error => LogLevel::Error,
            log::Level::Warn => LogLevel::Warn,
            log::Level::Info => LogLevel::Info,
            log::Level::Debug => LogLevel::Debug,
            log::Level::Trace => LogLevel::Trace,
        }
    }

    /// A level's name in any case (`"warn"`, `"WARN"`), or Python's names
    /// `"WARNING"` (warn) and `"CRITICAL"` (error), in any case; `None` for
    /// anything else. Every front end takes these names.
    pub fn parse(name: &str) -> Option<LogLevel> {
        if name.eq_ignore_ascii_case("warning") {
            return Some(LogLevel::Warn);
        }
        if name.eq_ignore_ascii_case("critical") {
            return Some(LogLevel::Error);
        }
        LogLevel::ALL.iter().copied().find(|l| l.name().eq_ignore_ascii_case(name))
    }
}

/// Records that may wait for the sink before new ones are dropped.
pub const QUEUE: usize = 1024;

/// One log record, as a sink receives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    /// Its level.
    pub level: log::Level,
    /// Where it comes from: the module path, `zklock_core::client` and the
    /// like for the core's records.
    pub target: String,
    /// The message, with the lock path and session id it concerns (without
    /// the `zklock: ` the core's messages start with for plain loggers).
    pub message: String,
}

/// A sink: called with each record, on the `zklock-log` thread.
type Sink = Arc<dyn Fn(LogRecord) + Send + Sync>;

/// The process-wide logger this module installs (once).
struct Forwarder {
    /// The queue to the sink thread, and the sink it calls.
    queue: Mutex<Option<SyncSender<LogRecord>>>,
    sink: Mutex<Option<Sink>>,
    /// Held by the sink thread while it calls the sink: a replacement waits
    /// for the call in progress (its userdata may be freed after).
    delivering: Mutex<()>,
    dropped: AtomicU64,
}

impl log::Log for Forwarder {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let Ok(queue) = self.queue.lock() else { return };
        let Some(queue) = queue.as_ref() else { return };
        let message = record.args().to_string();
        // The core's messages start with "zklock: " for plain stderr
        // loggers; the host's logger names zklock itself.
        let message = message.strip_prefix("zklock: ").map(str::to_owned).unwrap_or(message);
        let record = LogRecord { level: record.level(), target: record.target().to_owned(), message };
        if let Err(TrySendError::Full(_)) = queue.try_send(record) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn flush(&self) {}
}

static FORWARDER: OnceLock<Forwarder> = OnceLock::new();

/// Sends the records at `max_level` and more severe to `sink`, on the
/// `zklock-log` thread (see the module docs), replacing any sink set
/// before (waiting for a call of the old sink in progress to return,
/// unless called from that sink; the new one gets no record queued under a
/// lower level than `max_level`); `max_level` `Off` stops forwarding. For bindings: call it once
/// at load time with the host's default (warnings), and again when the
/// user asks for more, less or another destination.
///
/// # Errors
/// `Internal` if another `log` logger is already installed in this
/// library (a Rust program uses its own logger instead), or the thread
/// cannot be started.
pub fn set_log_sink(max_level: log::LevelFilter, sink: impl Fn(LogRecord) + Send + Sync + 'static) -> Result<()> {
    let forwarder = FORWARDER.get_or_init(|| Forwarder {
        queue: Mutex::new(None),
        sink: Mutex::new(None),
        delivering: Mutex::new(()),
        dropped: AtomicU64::new(0),
    });
    {
        // Wait for a call of the old sink in progress to return before the
        // new one takes over (unless this is that call: a sink replacing
        // itself), so that what the old one uses may go once this returns
        // and the new one is not called before.
        let _delivering = (std::thread::current().name() != Some(LOG_THREAD)).then(|| forwarder.delivering.lock());
        if let Ok(mut slot) = forwarder.sink.lock() {
            *slot = Some(Arc::new(sink));
        }
        log::set_max_level(max_level);
    }
    let mut queue = forwarder.queue.lock().map_err(|_| Error::internal("log queue mutex poisoned"))?;
    if queue.is_none() {
        // First call: the logger and its thread.
        match log::set_logger(forwarder) {
            Ok(()) => {},
            Err(_) => return Err(Error::internal("another `log` logger is installed in this library")),
        }
        let (tx, rx) = mpsc::sync_channel::<LogRecord>(QUEUE);
        // The thread takes no process signal (it starts with every signal
        // blocked): a program that waits for signals on a thread of its
        // own, as the CLI does, must not have them end up here.
        let spawned = without_signals(|| {
            std::thread::Builder::new().name(LOG_THREAD.into()).spawn(move || {
                for mut record in rx {
                    let Some(forwarder) = FORWARDER.get() else { return };
                    let _delivering = forwarder.delivering.lock();
                    // Queued under a lower level than the sink's now: not
                    // for this sink.
                    if record.level > log::max_level() {
                        continue;
                    }
                    let dropped = forwarder.dropped.swap(0, Ordering::Relaxed);
                    if dropped > 0 {
                        record.message =
                            format!("{} ({dropped} other records were dropped: the sink was slow)", record.message);
                    }
                    let sink = forwarder.sink.lock().ok().and_then(|s| s.clone());
                    if let Some(sink) = sink {
                        // A sink that panics loses its record, not the thread.
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sink(record)));
                    }
                }
            })
        });
        spawned.map_err(|e| Error::internal(format!("cannot start the zklock-log thread: {e}")))?;
        *queue = Some(tx);
    }
    drop(queue);
    Ok(())
}

/// Runs `f` (which starts a thread) with every signal blocked in the
/// calling thread, so that the new thread inherits that mask; restores the
/// caller's mask after.
fn without_signals<T>(f: impl FnOnce() -> T) -> T {
    let mut all = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    let mut old = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigfillset initialises `all`; pthread_sigmask reads it and
    // writes the old mask into `old`, which is only read back if it did.
    let blocked = unsafe {
        libc::sigfillset(all.as_mut_ptr()) == 0
            && libc::pthread_sigmask(libc::SIG_SETMASK, all.as_ptr(), old.as_mut_ptr()) == 0
    };
    let out = f();
    if blocked {
        // SAFETY: `old` was written by the successful call above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old.as_ptr(), std::ptr::null_mut()) };
    }
    out
}

/// The name of the thread that calls the sinks.
const LOG_THREAD: &str = "zklock-log";

/// The plain sink of every front end without a logger of its own: the
/// record on stderr as `zklock WARN: message`.
pub fn to_stderr(record: LogRecord) {
    eprintln!("zklock {}: {}", record.level, record.message);
}

/// The filter of a level named as [`LogLevel::parse`] takes it; `None`
/// for anything else.
pub fn level_filter(name: &str) -> Option<log::LevelFilter> {
    LogLevel::parse(name).map(LogLevel::filter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_names_are_the_table_in_any_case_and_python_names() {
        for level in LogLevel::ALL {
            assert_eq!(LogLevel::parse(level.name()), Some(*level));
            assert_eq!(LogLevel::parse(&level.name().to_ascii_lowercase()), Some(*level));
        }
        assert_eq!(LogLevel::parse("Warning"), Some(LogLevel::Warn));
        assert_eq!(LogLevel::parse("CRITICAL"), Some(LogLevel::Error));
        for bad in ["", "loud", "warn ", "3"] {
            assert_eq!(LogLevel::parse(bad), None, "{bad:?}");
        }
        assert_eq!(level_filter("debug"), Some(log::LevelFilter::Debug));
        assert_eq!(level_filter("off"), Some(log::LevelFilter::Off));
    }

    #[test]
    fn a_level_lets_through_what_the_log_crate_would() {
        let records = [log::Level::Error, log::Level::Warn, log::Level::Info, log::Level::Debug, log::Level::Trace];
        for level in LogLevel::ALL {
            for record in records {
                // The table's order is the log crate's: a level passes its
                // own records and every more severe one.
                assert_eq!(record <= level.filter(), LogLevel::of(record) <= *level, "{level:?} {record:?}");
                assert_ne!(LogLevel::of(record), LogLevel::Off);
            }
        }
    }
}

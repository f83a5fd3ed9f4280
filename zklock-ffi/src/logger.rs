//! Where the core's log records go from C: `zklock_set_logger`.

use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};

use zklock_core::logging::{set_log_sink, to_stderr, LogLevel, LogRecord};
use zklock_core::Error;

use crate::error::{zklock_code, zklock_error};
use crate::util::{call, invalid_arg, UserData};

pub use crate::vocabulary::zklock_log_level;

/// A `zklock_log_level` value passed in from C (a plain integer, so that
/// an out-of-range value is an ordinary input; the header spells it
/// `zklock_log_level`).
pub type zklock_log_level_arg = i32;

/// A logger: called with the caller's `userdata`, the record's level (never
/// `ZKLOCK_LOG_OFF`) and its message (NUL-terminated UTF-8, valid during
/// the call only), on zklock's `zklock-log` thread, one record at a time.
/// It may call zklock functions; it should return promptly (records that
/// do not fit a queue of 1,024 meanwhile are dropped and counted).
pub type zklock_log_cb =
    Option<unsafe extern "C" fn(userdata: *mut c_void, level: zklock_log_level, message: *const c_char)>;

/// Whether the program chose a logger (then no default is installed).
static CHOSEN: AtomicBool = AtomicBool::new(false);

/// Installs the default logger (warnings on stderr) unless the program
/// chose one; once per process (called when a client is made).
pub(crate) fn ensure_default() {
    static DEFAULT: std::sync::Once = std::sync::Once::new();
    DEFAULT.call_once(|| {
        if !CHOSEN.load(Ordering::Acquire) {
            let _ = set_log_sink(log::LevelFilter::Warn, to_stderr);
        }
    });
}

/// The sink that calls the C logger `cb` with `data`.
fn c_sink(
    cb: unsafe extern "C" fn(userdata: *mut c_void, level: zklock_log_level, message: *const c_char),
    data: UserData,
) -> impl Fn(LogRecord) + Send + Sync + 'static {
    move |record| {
        let message = CString::new(record.message.replace('\0', "\u{FFFD}")).unwrap_or_default();
        // SAFETY: the caller's logger, with its userdata and a message
        // valid during the call (zklock_set_logger's contract).
        unsafe { cb(data.get(), zklock_log_level::from(LogLevel::of(record.level)), message.as_ptr()) }
    }
}

/// Sends the core's log records of `level` and more severe to `cb` (see
/// `zklock_log_cb`), replacing the logger set before; `cb` NULL writes
/// them to stderr instead (`"zklock WARN: ..."`). Until this is called,
/// warnings go to stderr. Process-wide: one logger for every client. The
/// records are connects, reconnects, suspensions, session expiries,
/// re-queues and background cleanups, each naming its lock path and
/// session id.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for a level that is not a `zklock_log_level`;
/// `ZKLOCK_INTERNAL` if the logging thread cannot be started.
///
/// # Threads
/// Any thread, also from the logger itself (the new logger takes over from
/// the next record). `userdata` must stay valid until another logger
/// replaces this one and the record being delivered (if any) returns.
///
/// # Safety
/// `err` is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_set_logger(
    cb: zklock_log_cb,
    userdata: *mut c_void,
    level: zklock_log_level_arg,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_set_logger";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let Some(filter) = zklock_log_level::parse(level).map(LogLevel::filter) else {
                return Err(invalid_arg(F, "level", &format!("is not a zklock_log_level ({level})")));
            };
            CHOSEN.store(true, Ordering::Release);
            let installed: Result<(), Error> = match cb {
                None => set_log_sink(filter, to_stderr),
                Some(cb) => set_log_sink(filter, c_sink(cb, UserData(userdata))),
            };
            installed
        })
    }
}

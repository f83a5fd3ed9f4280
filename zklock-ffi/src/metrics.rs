//! `zklock_client_metrics`: a snapshot of what a client did.

use std::ffi::c_char;

use crate::client::zklock_client;
use crate::error::{zklock_code, zklock_error};
use crate::util::{arg_ref, arg_str, call, guarded, invalid_arg};

/// A snapshot of a client's metrics, from `zklock_client_metrics`. Every
/// counter only grows over the client's life (hand them to a monitoring
/// system as counters); `cleanups_pending` is a gauge. The struct can
/// grow: new fields are only ever appended, and `zklock_client_metrics`
/// writes as many bytes as the caller's struct has.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct zklock_metrics {
    /// Acquires granted (every lock kind, elections and leases; each
    /// member of a multi-lock; reentrant ones included).
    pub acquires_granted: u64,
    /// Acquires that ended at their deadline (a try that found the lock
    /// held included).
    pub acquires_timed_out: u64,
    /// Acquires cancelled.
    pub acquires_cancelled: u64,
    /// Acquires that failed otherwise.
    pub acquires_failed: u64,
    /// How many granted acquires `wait_seconds` sums.
    pub wait_count: u64,
    /// The time granted acquires waited, in seconds, in all.
    pub wait_seconds: f64,
    /// How many holds (grant to release or loss) `hold_seconds` sums.
    pub hold_count: u64,
    /// The time locks were held, in seconds, in all.
    pub hold_seconds: f64,
    /// Times a held lock became suspended.
    pub suspensions: u64,
    /// Held locks lost (not by a close of the client).
    pub losses: u64,
    /// Times a lost connection came back with the same session.
    pub reconnects: u64,
    /// Sessions that expired (each replaced by a new one).
    pub session_expiries: u64,
    /// Requests written to ZooKeeper, pings aside, over every session
    /// (`zklock_client_requests_sent` gives them by operation).
    pub requests: u64,
    /// Background cleanups not finished yet (a gauge).
    pub cleanups_pending: u64,
}

/// Writes a snapshot of the client's metrics to `*out`: the first `size`
/// bytes of it (`size` = `sizeof *out` as the caller was compiled; a
/// library newer than the caller's header writes only the fields the
/// caller has). Never blocks; any thread, also after `zklock_client_close`.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for a NULL argument or a `size` of 0.
///
/// # Safety
/// `client` is NULL or a live client; `out` is NULL or valid for writing
/// `size` bytes; `err` is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_metrics(
    client: *const zklock_client,
    out: *mut zklock_metrics,
    size: usize,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_client_metrics";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let client = arg_ref(client, F, "client")?;
            if out.is_null() {
                return Err(invalid_arg(F, "out", "is NULL"));
            }
            if size == 0 {
                return Err(invalid_arg(F, "size", "is 0: pass sizeof *out"));
            }
            let m = client.inner.metrics();
            let snapshot = zklock_metrics {
                acquires_granted: m.acquires_granted,
                acquires_timed_out: m.acquires_timed_out,
                acquires_cancelled: m.acquires_cancelled,
                acquires_failed: m.acquires_failed,
                wait_count: m.wait_time.count,
                wait_seconds: m.wait_time.sum_seconds,
                hold_count: m.hold_time.count,
                hold_seconds: m.hold_time.sum_seconds,
                suspensions: m.suspensions,
                losses: m.losses,
                reconnects: m.reconnects,
                session_expiries: m.session_expiries,
                requests: m.requests.iter().filter(|(op, _)| **op != "ping").map(|(_, n)| n).sum(),
                cleanups_pending: m.cleanups_pending,
            };
            let n = size.min(std::mem::size_of::<zklock_metrics>());
            std::ptr::copy_nonoverlapping(std::ptr::from_ref(&snapshot).cast::<u8>(), out.cast::<u8>(), n);
            Ok(())
        })
    }
}

/// How many requests of operation `op` (ZooKeeper's name: `"create2"`,
/// `"getData"`, `"getChildren"`, `"delete"`, `"sync"`, `"ping"`, ...) the
/// client has written to ZooKeeper, over every session; 0 for an
/// operation never sent, an unknown name, or NULL arguments. Never blocks.
///
/// # Safety
/// `client` is NULL or a live client; `op` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_requests_sent(client: *const zklock_client, op: *const c_char) -> u64 {
    guarded(0, || {
        // SAFETY: caller's contract.
        let (Some(client), Ok(op)) = (unsafe { client.as_ref() }, unsafe { arg_str(op, "", "op") }) else {
            return 0;
        };
        client.inner.metrics().requests.get(op).copied().unwrap_or(0)
    })
}

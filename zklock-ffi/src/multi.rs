//! Multi-locks: several locks taken all or none (`zklock_multi_*`,
//! `zklock_multi_guard_*`).

use std::ffi::c_char;

use zklock_core::{LockMode, LockOptions, MultiGuard, MultiLock};

use crate::cancel::zklock_cancel;
use crate::client::zklock_client;
use crate::error::{zklock_code, zklock_error};
use crate::guard::zklock_state;
use crate::lock::{call_options, mode_of, zklock_mode_arg};
use crate::util::{arg_ref, arg_str, call, guarded, invalid_arg, null_arg, out_arg, write_pending};

/// Several locks taken all or none (from `zklock_multi_new`). Thread-safe;
/// free with `zklock_multi_free`.
pub struct zklock_multi {
    inner: MultiLock,
}

/// Every member of a multi-lock held (from `zklock_multi_acquire`).
/// Thread-safe; free with `zklock_multi_guard_free`, which releases every
/// member still held.
pub struct zklock_multi_guard {
    pub(crate) inner: MultiGuard,
}

/// Makes a multi-lock over the `n` paths `paths[0..n]`, member `i` of mode
/// `modes[i]` (a `zklock_mode` value; `modes` NULL: every member
/// exclusive). An acquire takes the members one after another in one order
/// (by path), so two multi-locks sharing paths never deadlock, under one
/// deadline and one cancel token; if a member fails, the members taken so
/// far are released. Does not talk to ZooKeeper. On success `*out`
/// receives a new multi-lock that the caller frees with
/// `zklock_multi_free`.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for a NULL argument (`paths`, a path,
/// `client`, `out`), `n` = 0, a path named twice or a bad mode;
/// `ZKLOCK_INVALID_PATH`; `ZKLOCK_CLOSED`.
///
/// # Threads
/// Any thread.
///
/// # Safety
/// `client` is NULL or a live client; `paths` is NULL or points to `n`
/// pointers, each NULL or NUL-terminated; `modes` is NULL or points to `n`
/// values; `out` and `err` are NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_multi_new(
    client: *const zklock_client,
    paths: *const *const c_char,
    modes: *const zklock_mode_arg,
    n: usize,
    out: *mut *mut zklock_multi,
    err: *mut *mut zklock_error,
) -> zklock_code {
    // SAFETY: pointers as documented (caller's contract).
    unsafe { new_multi("zklock_multi_new", client, paths, modes, n, LockOptions::default(), out, err) }
}

/// `zklock_multi_new` for a multi-lock that is reentrant per thread
/// (Curator's `InterProcessMultiLock` over its reentrant mutexes): a thread
/// that holds the set and acquires it again gets another multi-guard on
/// the same nodes at once; the nodes go at the last release.
///
/// # Errors
/// As `zklock_multi_new`.
///
/// # Threads
/// Any thread.
///
/// # Safety
/// As `zklock_multi_new`.
#[no_mangle]
pub unsafe extern "C" fn zklock_multi_new_reentrant(
    client: *const zklock_client,
    paths: *const *const c_char,
    modes: *const zklock_mode_arg,
    n: usize,
    out: *mut *mut zklock_multi,
    err: *mut *mut zklock_error,
) -> zklock_code {
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        new_multi("zklock_multi_new_reentrant", client, paths, modes, n, LockOptions::default().reentrant(), out, err)
    }
}

/// The body of `zklock_multi_new` and `zklock_multi_new_reentrant`.
///
/// # Safety
/// As `zklock_multi_new`.
#[allow(clippy::too_many_arguments)]
unsafe fn new_multi(
    f: &'static str,
    client: *const zklock_client,
    paths: *const *const c_char,
    modes: *const zklock_mode_arg,
    n: usize,
    options: LockOptions,
    out: *mut *mut zklock_multi,
    err: *mut *mut zklock_error,
) -> zklock_code {
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(f, err, || {
            let client = arg_ref(client, f, "client")?;
            let out = out_arg(out, f, "out")?;
            if paths.is_null() {
                return Err(null_arg(f, "paths"));
            }
            if n == 0 {
                return Err(invalid_arg(f, "n", "is 0: a multi-lock needs at least one member"));
            }
            let mut members: Vec<(&str, LockMode)> = Vec::with_capacity(n);
            for i in 0..n {
                let path = arg_str(*paths.add(i), f, &format!("paths[{i}]"))?;
                let mode = if modes.is_null() {
                    LockMode::Exclusive
                } else {
                    mode_of(f, &format!("modes[{i}]"), *modes.add(i))?
                };
                members.push((path, mode));
            }
            let multi = client.inner.multi_lock_with(&members, options)?;
            out.write(Box::into_raw(Box::new(zklock_multi { inner: multi })));
            Ok(())
        })
    }
}

/// Takes every member of `multi`, waiting at most `timeout_ms` in total
/// (< 0: no limit; 0: try each once). `cancel` (may be NULL) cancels this
/// call only. On success `*out` receives a new multi-guard that the
/// caller frees with `zklock_multi_guard_free`.
///
/// # Errors
/// The first failing member's error (`ZKLOCK_TIMEOUT`, `ZKLOCK_CANCELLED`,
/// `ZKLOCK_CLOSED`, ...; the message names its path), after every member
/// taken so far was released (or about 250 ms after the deadline or the
/// error, their releases going on in the background);
/// `ZKLOCK_CONNECTION_LOSS` if a member suspended when the last is granted
/// is not held again by the deadline; `ZKLOCK_LOCK_LOST` naming a member
/// lost before the set was held (at once, even while a later member waits
/// in its queue); `ZKLOCK_INVALID_ARGUMENT` for a NULL `multi` or `out`.
///
/// # Threads
/// Blocks the calling thread; do not call it from a state-change callback.
///
/// # Safety
/// `multi` is NULL or a live multi-lock; `cancel` is NULL or a live
/// token; `out` and `err` are NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_multi_acquire(
    multi: *const zklock_multi,
    timeout_ms: i64,
    cancel: *const zklock_cancel,
    out: *mut *mut zklock_multi_guard,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_multi_acquire";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let multi = arg_ref(multi, F, "multi")?;
            let out = out_arg(out, F, "out")?;
            let guard = multi.inner.acquire(call_options(timeout_ms, cancel))?;
            out.write(Box::into_raw(Box::new(zklock_multi_guard { inner: guard })));
            Ok(())
        })
    }
}

/// Frees a multi-lock (acquires in progress on it go on; their guards stay
/// valid). `zklock_multi_free(NULL)` does nothing.
///
/// # Safety
/// `multi` is NULL or a multi-lock not yet freed.
#[no_mangle]
pub unsafe extern "C" fn zklock_multi_free(multi: *mut zklock_multi) {
    if multi.is_null() {
        return;
    }
    // SAFETY: multi came from Box::into_raw and is freed once (caller's contract).
    guarded((), || drop(unsafe { Box::from_raw(multi) }));
}

/// Succeeds while every member is safely held (see `zklock_guard_check`).
/// Never blocks.
///
/// # Errors
/// The first failing member's error (`ZKLOCK_CONNECTION_LOSS`,
/// `ZKLOCK_LOCK_LOST`, `ZKLOCK_NOT_HELD`, `ZKLOCK_CLOSED`; the message
/// names its path); `ZKLOCK_INVALID_ARGUMENT` for NULL.
///
/// # Safety
/// `guard` is NULL or a live multi-guard; `err` is NULL or valid for
/// writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_multi_guard_check(
    guard: *const zklock_multi_guard,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_multi_guard_check";
    // SAFETY: pointers as documented (caller's contract).
    unsafe { call(F, err, || arg_ref(guard, F, "guard")?.inner.check()) }
}

/// The state of the set: `ZKLOCK_STATE_RELEASED` once released (and for
/// NULL), `ZKLOCK_STATE_LOST` if any member is lost, else
/// `ZKLOCK_STATE_SUSPENDED` if any is suspended, else `ZKLOCK_STATE_HELD`.
///
/// # Safety
/// `guard` is NULL or a live multi-guard.
#[no_mangle]
pub unsafe extern "C" fn zklock_multi_guard_state(guard: *const zklock_multi_guard) -> zklock_state {
    let released = zklock_state::ZKLOCK_STATE_RELEASED;
    // SAFETY: caller's contract.
    guarded(released, || unsafe { guard.as_ref() }.map_or(released, |g| g.inner.state().into()))
}

/// The number of members (0 for NULL).
///
/// # Safety
/// `guard` is NULL or a live multi-guard.
#[no_mangle]
pub unsafe extern "C" fn zklock_multi_guard_len(guard: *const zklock_multi_guard) -> usize {
    // SAFETY: caller's contract.
    guarded(0, || unsafe { guard.as_ref() }.map_or(0, |g| g.inner.guards().len()))
}

/// The fencing token of member `i` (in path order, see
/// `zklock_multi_new`); 0 for NULL or `i` out of range (never a valid
/// token).
///
/// # Safety
/// `guard` is NULL or a live multi-guard.
#[no_mangle]
pub unsafe extern "C" fn zklock_multi_guard_fencing_token(guard: *const zklock_multi_guard, i: usize) -> u64 {
    // SAFETY: caller's contract.
    guarded(0, || unsafe { guard.as_ref() }.and_then(|g| g.inner.guards().get(i)).map_or(0, |g| g.fencing_token()))
}

/// Releases every member (newest first, each to the end). `*pending` (if
/// not NULL) is set to whether a delete could not be confirmed now (it is
/// retried in the background). The multi-guard stays valid (to free).
///
/// # Errors
/// The first member's error (`ZKLOCK_LOCK_LOST` if it had been lost,
/// `ZKLOCK_NOT_HELD` if already released), after every member was
/// released; `ZKLOCK_INVALID_ARGUMENT` for NULL.
///
/// # Threads
/// Blocks the calling thread.
///
/// # Safety
/// `guard` is NULL or a live multi-guard; `pending` and `err` are NULL or
/// valid for writing.
#[no_mangle]
pub unsafe extern "C" fn zklock_multi_guard_release(
    guard: *const zklock_multi_guard,
    pending: *mut bool,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_multi_guard_release";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let guard = arg_ref(guard, F, "guard")?;
            let status = guard.inner.release()?;
            write_pending(pending, status);
            Ok(())
        })
    }
}

/// Frees a multi-guard, releasing every member still held (blocking for
/// the deletes). `zklock_multi_guard_free(NULL)` does nothing.
///
/// # Safety
/// `guard` is NULL or a multi-guard not yet freed.
#[no_mangle]
pub unsafe extern "C" fn zklock_multi_guard_free(guard: *mut zklock_multi_guard) {
    if guard.is_null() {
        return;
    }
    // SAFETY: guard came from Box::into_raw and is freed once (caller's contract).
    guarded((), || drop(unsafe { Box::from_raw(guard) }));
}

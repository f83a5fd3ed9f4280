//! `zklock_cancel`: the cancel token of one acquire call.

use zklock_core::CancelToken;

use crate::error::{zklock_code, zklock_error};
use crate::util::{call, guarded, out_arg};

/// A cancel token: made before an acquire call, given to it
/// (`zklock_lock_acquire_cancellable`, `zklock_lock_acquire_async`), and cancelled with `zklock_cancel_cancel`
/// to make that call fail with `ZKLOCK_CANCELLED`: that call only, not
/// other acquires of the same lock handle, and also when the cancel comes
/// before the call starts. One token may be given to several calls (it
/// cancels them all). Thread-safe. Freed with `zklock_cancel_free` (a call
/// keeps its own reference: the token may be freed while the call goes on).
pub struct zklock_cancel {
    pub(crate) token: CancelToken,
}

/// Makes a cancel token that is not cancelled; `*out` receives it (free it
/// with `zklock_cancel_free`).
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for a NULL `out`.
///
/// # Safety
/// `out` and `err` are NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_cancel_new(out: *mut *mut zklock_cancel, err: *mut *mut zklock_error) -> zklock_code {
    const F: &str = "zklock_cancel_new";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let out = out_arg(out, F, "out")?;
            out.write(Box::into_raw(Box::new(zklock_cancel { token: CancelToken::new() })));
            Ok(())
        })
    }
}

/// Cancels every call given this token, now and later. Idempotent. NULL:
/// nothing.
///
/// # Threads
/// Any thread; never blocks (safe from a signal-handling thread or a
/// callback, not from an async signal handler itself).
///
/// # Safety
/// `cancel` is NULL or a live token.
#[no_mangle]
pub unsafe extern "C" fn zklock_cancel_cancel(cancel: *const zklock_cancel) {
    // SAFETY: caller's contract.
    guarded((), || {
        if let Some(c) = unsafe { cancel.as_ref() } {
            c.token.cancel();
        }
    })
}

/// Frees a cancel token. Calls it was given keep their own reference (a
/// cancel after the free is no longer possible, the calls go on).
/// `zklock_cancel_free(NULL)` does nothing.
///
/// # Safety
/// `cancel` is NULL or a token that was not freed yet and that no other
/// thread is using; it must not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn zklock_cancel_free(cancel: *mut zklock_cancel) {
    if !cancel.is_null() {
        // SAFETY: came from Box::into_raw and is freed once (caller's contract).
        guarded((), || drop(unsafe { Box::from_raw(cancel) }));
    }
}

//! Helpers shared by the exported functions: the panic guard, argument
//! checks and conversions. Nothing here is exported to C.

use std::any::Any;
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use zklock_core::{Error, ErrorKind};

use crate::error::{zklock_code, zklock_error};

pub(crate) type Result<T> = std::result::Result<T, Error>;

/// Runs the body of a fallible exported function: a panic becomes
/// `ZKLOCK_INTERNAL` (never unwinding into C), an error becomes its code, and
/// on failure `*err` (when `err` is not NULL) receives a new error object.
///
/// # Safety
/// `err` is NULL or valid for writing one pointer.
pub(crate) unsafe fn call(func: &str, err: *mut *mut zklock_error, body: impl FnOnce() -> Result<()>) -> zklock_code {
    let outcome = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(payload) => Err(panic_error(func, payload)),
    };
    match outcome {
        Ok(()) => zklock_code::ZKLOCK_OK,
        Err(e) => {
            let code = zklock_code::from(e.kind());
            if !err.is_null() {
                if let Ok(obj) = catch_unwind(|| Box::into_raw(Box::new(zklock_error::of(&e)))) {
                    // SAFETY: err is not NULL and valid for writes (caller's contract).
                    unsafe { *err = obj };
                }
            }
            code
        },
    }
}

/// Runs the body of an infallible exported function (getters, `_free`,
/// cancel): a panic returns `default`.
pub(crate) fn guarded<T>(default: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(default)
}

fn panic_error(func: &str, payload: Box<dyn Any + Send>) -> Error {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    // Dropping the payload runs foreign code only for exotic payloads; keep
    // even that from unwinding.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
    Error::new(ErrorKind::Internal, format!("{func}: internal error (panic): {what}"))
}

/// The error for a NULL pointer argument.
pub(crate) fn null_arg(func: &str, name: &str) -> Error {
    Error::new(ErrorKind::InvalidArgument, format!("{func}: argument `{name}` is NULL"))
}

/// An `InvalidArgument` error about argument `name` of `func`.
pub(crate) fn invalid_arg(func: &str, name: &str, why: &str) -> Error {
    Error::new(ErrorKind::InvalidArgument, format!("{func}: argument `{name}` {why}"))
}

/// Borrows the object behind a handle pointer, or fails naming the argument.
///
/// # Safety
/// `p` is NULL or points to a live object of type `T` for `'a`.
pub(crate) unsafe fn arg_ref<'a, T>(p: *const T, func: &str, name: &str) -> Result<&'a T> {
    // SAFETY: caller's contract.
    unsafe { p.as_ref() }.ok_or_else(|| null_arg(func, name))
}

/// Checks that an output pointer is not NULL.
pub(crate) fn out_arg<T>(p: *mut T, func: &str, name: &str) -> Result<*mut T> {
    if p.is_null() {
        Err(null_arg(func, name))
    } else {
        Ok(p)
    }
}

/// Reads a NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that lives for `'a`.
pub(crate) unsafe fn arg_str<'a>(p: *const c_char, func: &str, name: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(null_arg(func, name));
    }
    // SAFETY: p is a NUL-terminated string (caller's contract).
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|e| invalid_arg(func, name, &format!("is not valid UTF-8 ({e})")))
}

/// `timeout_ms < 0`: no limit; `0`: try once; `> 0`: a total deadline.
pub(crate) fn timeout_from_ms(timeout_ms: i64) -> Option<Duration> {
    // Negative: C has no "no value". Otherwise the core's one rule (longer
    // than `zklock_core::FOREVER`, about 31.7 years: no limit).
    if timeout_ms < 0 {
        return None;
    }
    let timeout = Duration::from_millis(timeout_ms.unsigned_abs());
    (timeout <= zklock_core::FOREVER).then_some(timeout)
}

/// Writes to `pending` (if not NULL) whether a release's delete is still
/// to be confirmed.
///
/// # Safety
/// `pending` is NULL or valid for writing.
pub(crate) unsafe fn write_pending(pending: *mut bool, status: zklock_core::ReleaseStatus) {
    if !pending.is_null() {
        // SAFETY: caller's contract.
        unsafe { pending.write(status == zklock_core::ReleaseStatus::Pending) };
    }
}

/// The C caller's userdata pointer, handed back to the caller's callback on
/// another thread (the event thread, the `zklock-log` thread): the caller
/// promises that this is safe (each function's header comment says where).
pub(crate) struct UserData(pub(crate) *mut std::ffi::c_void);
// SAFETY: zklock only passes the pointer back to the caller's callback, on
// the thread the header documents for it.
unsafe impl Send for UserData {}
// SAFETY: as above; zklock never dereferences it.
unsafe impl Sync for UserData {}
impl UserData {
    /// The pointer (a method, so that closures capture the whole wrapper).
    pub(crate) fn get(&self) -> *mut std::ffi::c_void {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts() {
        assert_eq!(timeout_from_ms(-1), None);
        assert_eq!(timeout_from_ms(i64::MIN), None);
        assert_eq!(timeout_from_ms(0), Some(Duration::ZERO));
        assert_eq!(timeout_from_ms(1500), Some(Duration::from_millis(1500)));
        assert_eq!(timeout_from_ms(i64::MAX), None);
    }

    #[test]
    fn panics_become_internal() {
        let mut err: *mut zklock_error = std::ptr::null_mut();
        // SAFETY: err is a valid out pointer.
        let code = unsafe { call("test_fn", &mut err, || panic!("boom")) };
        assert_eq!(code, zklock_code::ZKLOCK_INTERNAL);
        assert!(!err.is_null());
        // SAFETY: err was just created by `call`.
        let e = unsafe { Box::from_raw(err) };
        assert_eq!(e.code(), zklock_code::ZKLOCK_INTERNAL);
        assert!(e.message().contains("test_fn") && e.message().contains("boom"), "{}", e.message());
    }
}

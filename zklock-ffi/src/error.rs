//! Result codes (`zklock_code`) and error objects (`zklock_error`).

use std::ffi::{c_char, CString};
use std::sync::OnceLock;

use zklock_core::ErrorKind;

use crate::util::guarded;

pub use crate::vocabulary::zklock_code;

/// A `zklock_code` value passed in from C. Rust receives it as a plain
/// integer so that an out-of-range value is an ordinary input, not
/// undefined behaviour; the header spells it `zklock_code`.
pub type zklock_code_arg = i32;

/// Details of a failure: its code and a message naming what was wrong.
///
/// Created by a failing function when the caller passed a non-NULL
/// `zklock_error **err`; the caller owns it and frees it with
/// `zklock_error_free`. Immutable: it may be read from any thread.
pub struct zklock_error {
    code: zklock_code,
    message: CString,
    /// For a fenced write ZooKeeper refused: the operation's index and
    /// ZooKeeper's code name.
    failed_op: Option<(usize, CString)>,
}

impl zklock_error {
    pub(crate) fn new(code: zklock_code, message: &str) -> zklock_error {
        // A NUL inside the message would cut it short in C: replace it.
        let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
        zklock_error { code, message, failed_op: None }
    }

    /// The error object of a core error (its code, message and failed
    /// operation).
    pub(crate) fn of(e: &zklock_core::Error) -> zklock_error {
        let mut out = zklock_error::new(zklock_code::from(e.kind()), e.message());
        out.failed_op = e.failed_op().map(|f| (f.index, CString::new(f.code.replace('\0', "")).unwrap_or_default()));
        out
    }

    /// The code.
    pub fn code(&self) -> zklock_code {
        self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        self.message.to_str().unwrap_or("")
    }
}

/// The code of an error object (`ZKLOCK_INVALID_ARGUMENT` for NULL).
///
/// # Safety
/// `err` is NULL or an error object that was not freed.
#[no_mangle]
pub unsafe extern "C" fn zklock_error_code(err: *const zklock_error) -> zklock_code {
    // SAFETY: caller's contract.
    guarded(zklock_code::ZKLOCK_INVALID_ARGUMENT, || {
        unsafe { err.as_ref() }.map_or(zklock_code::ZKLOCK_INVALID_ARGUMENT, |e| e.code)
    })
}

/// The message of an error object: NUL-terminated UTF-8 that names what went
/// wrong (it does not repeat the code's name). Owned by the error object and
/// valid until `zklock_error_free`; do not free it. `""` for NULL.
///
/// # Safety
/// `err` is NULL or an error object that was not freed.
#[no_mangle]
pub unsafe extern "C" fn zklock_error_message(err: *const zklock_error) -> *const c_char {
    let empty = c"".as_ptr();
    // SAFETY: caller's contract.
    guarded(empty, || unsafe { err.as_ref() }.map_or(empty, |e| e.message.as_ptr()))
}

/// For a fenced write that ZooKeeper refused because of one of the
/// caller's operations (`zklock_guard_fenced_multi`): ZooKeeper's name for
/// the error (`"BadVersion"`, `"NoNode"`, `"NodeExists"`, `"NotEmpty"`,
/// ...; owned by the error object, valid until `zklock_error_free`), and
/// the operation's index in `*index` (if `index` is not NULL). NULL (and
/// `*index` untouched) for every other error and for NULL.
///
/// # Safety
/// `err` is NULL or an error object that was not freed; `index` is NULL or
/// valid for writing.
#[no_mangle]
pub unsafe extern "C" fn zklock_error_failed_op(err: *const zklock_error, index: *mut usize) -> *const c_char {
    // SAFETY: caller's contract.
    guarded(std::ptr::null(), || match unsafe { err.as_ref() }.and_then(|e| e.failed_op.as_ref()) {
        Some((i, code)) => {
            if !index.is_null() {
                // SAFETY: index is valid for writes (caller's contract).
                unsafe { index.write(*i) };
            }
            code.as_ptr()
        },
        None => std::ptr::null(),
    })
}

/// Frees an error object. `zklock_error_free(NULL)` does nothing.
///
/// # Safety
/// `err` is NULL or an error object that was not freed yet; it must not be
/// used afterwards.
#[no_mangle]
pub unsafe extern "C" fn zklock_error_free(err: *mut zklock_error) {
    if !err.is_null() {
        // SAFETY: err came from Box::into_raw and is freed once (caller's contract).
        guarded((), || drop(unsafe { Box::from_raw(err) }));
    }
}

/// The name of a code without the `ZKLOCK_` prefix, e.g. `"TIMEOUT"` for
/// `ZKLOCK_TIMEOUT` and `"OK"` for `ZKLOCK_OK`; `"UNKNOWN"` for values that
/// are not codes. A static string: never NULL, do not free it. Any thread.
#[no_mangle]
pub extern "C" fn zklock_code_name(code: zklock_code_arg) -> *const c_char {
    guarded(c"UNKNOWN".as_ptr(), || code_name(code).as_ptr())
}

/// The names, taken from the core's `ErrorKind::name()`.
fn code_name(code: i32) -> &'static std::ffi::CStr {
    static NAMES: OnceLock<Vec<(i32, CString)>> = OnceLock::new();
    if code == 0 {
        return c"OK";
    }
    let names = NAMES.get_or_init(|| {
        ErrorKind::ALL.iter().map(|k| (k.code(), CString::new(k.name()).unwrap_or_default())).collect()
    });
    names.iter().find(|(c, _)| *c == code).map_or(c"UNKNOWN", |(_, n)| n.as_c_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every core kind maps to the C code with the same number and name,
    /// and the C enum has no other codes.
    #[test]
    fn every_core_kind_has_its_c_code() {
        for &kind in ErrorKind::ALL {
            let c = zklock_code::from(kind);
            assert_eq!(c as i32, kind.code(), "{kind:?}");
            assert_eq!(format!("{c:?}"), format!("ZKLOCK_{}", kind.name()), "{kind:?}");
            assert_eq!(code_name(kind.code()).to_str().ok(), Some(kind.name()));
        }
        assert_eq!(code_name(0).to_str().ok(), Some("OK"));
        assert_eq!(code_name(-1).to_str().ok(), Some("UNKNOWN"));
        assert_eq!(code_name(ErrorKind::ALL.len() as i32 + 1).to_str().ok(), Some("UNKNOWN"));
    }

    /// The committed header declares exactly ZKLOCK_OK and one
    /// `ZKLOCK_<NAME> = <code>` per core kind in `zklock_code`.
    #[test]
    fn header_enum_matches_core_kinds() {
        let header = include_str!("../../include/zklock.h");
        let start = header.find("enum zklock_code").expect("the header declares enum zklock_code");
        let body = &header[start..];
        let body = &body[..body.find("};").expect("enum zklock_code is closed")];
        let entries: Vec<(String, i32)> = body
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("ZKLOCK_"))
            .filter_map(|l| {
                let (name, value) = l.trim_end_matches(',').split_once(" = ")?;
                Some((name.to_owned(), value.parse().ok()?))
            })
            .collect();
        let mut expected = vec![("ZKLOCK_OK".to_owned(), 0)];
        expected.extend(ErrorKind::ALL.iter().map(|k| (format!("ZKLOCK_{}", k.name()), k.code())));
        assert_eq!(entries, expected);
    }
}

//! Fenced writes: `zklock_guard_fenced_multi` and
//! `zklock_multi_guard_fenced_multi` make the caller's ZooKeeper operations
//! in one transaction with a check of the guard's own lock node(s).

use std::ffi::{c_char, CString};

use zklock_core::{CreateMode, FencedKind, FencedOp, FencedResult};

use crate::error::{zklock_code, zklock_error};
use crate::guard::zklock_guard;
use crate::multi::zklock_multi_guard;
use crate::util::{arg_ref, arg_str, call, guarded, invalid_arg, Result};

pub use crate::vocabulary::{zklock_create_mode, zklock_fenced_kind};

/// A `zklock_fenced_kind` value in a `zklock_fenced_op` (a plain integer
/// on the Rust side, so that an out-of-range value is an ordinary input).
pub type zklock_fenced_kind_arg = i32;

/// A `zklock_create_mode` value in a `zklock_fenced_op` (a plain integer
/// on the Rust side).
pub type zklock_create_mode_arg = i32;

/// One operation of a fenced write, filled in by the caller. Only read
/// during the call; the caller keeps ownership of every pointer.
#[repr(C)]
pub struct zklock_fenced_op {
    /// What to do: a `zklock_fenced_kind` value.
    pub kind: zklock_fenced_kind_arg,
    /// The node: a NUL-terminated UTF-8 absolute path (outside the lock's
    /// own path). For a sequential create, the prefix of its name.
    pub path: *const c_char,
    /// The data of a create or set data (`data_len` bytes; may be NULL
    /// when `data_len` is 0); ignored otherwise.
    pub data: *const u8,
    /// The length of `data`.
    pub data_len: usize,
    /// For set data, delete and check: the data version the node must have,
    /// or -1 for any (other negative values are refused). Ignored for a
    /// create.
    pub version: i32,
    /// For a create: a `zklock_create_mode` value. Ignored otherwise.
    pub mode: zklock_create_mode_arg,
}

/// What each operation of a successful fenced write did, in the order of
/// the operations. Immutable: may be read from any thread. Every string it
/// returns is owned by it and valid until `zklock_fenced_results_free`.
pub struct zklock_fenced_results {
    items: Vec<(zklock_fenced_kind, Option<CString>, i32)>,
}

impl zklock_fenced_results {
    fn new(results: Vec<FencedResult>) -> zklock_fenced_results {
        let items = results
            .into_iter()
            .map(|r| {
                let kind = zklock_fenced_kind::from(r.kind());
                match r {
                    FencedResult::Created { path } => {
                        (kind, Some(CString::new(path.replace('\0', "\\0")).unwrap_or_default()), -1)
                    },
                    FencedResult::DataSet { version } => (kind, None, version),
                    _ => (kind, None, -1),
                }
            })
            .collect();
        zklock_fenced_results { items }
    }

    /// # Safety
    /// `r` is NULL or a live result list.
    unsafe fn at<'a>(
        r: *const zklock_fenced_results,
        i: usize,
    ) -> Option<&'a (zklock_fenced_kind, Option<CString>, i32)> {
        // SAFETY: caller's contract.
        unsafe { r.as_ref() }.and_then(|r| r.items.get(i))
    }
}

/// Reads the caller's operations.
///
/// # Safety
/// `ops` is NULL or points to `n` readable operations whose pointers are as
/// documented on `zklock_fenced_op`.
unsafe fn read_ops(f: &str, ops: *const zklock_fenced_op, n: usize) -> Result<Vec<FencedOp>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if ops.is_null() {
        return Err(invalid_arg(f, "ops", &format!("is NULL with n_ops {n}")));
    }
    // SAFETY: ops points to n operations (caller's contract).
    let raw = unsafe { std::slice::from_raw_parts(ops, n) };
    raw.iter()
        .enumerate()
        .map(|(i, op)| {
            let name = format!("ops[{i}]");
            // SAFETY: path is NULL or NUL-terminated (caller's contract).
            let path = unsafe { arg_str(op.path, f, &format!("{name}.path")) }?.to_owned();
            let data = || -> Result<Vec<u8>> {
                match (op.data.is_null(), op.data_len) {
                    (_, 0) => Ok(Vec::new()),
                    (true, len) => {
                        Err(invalid_arg(f, &format!("{name}.data"), &format!("is NULL with data_len {len}")))
                    },
                    // SAFETY: data points to data_len bytes (caller's contract).
                    (false, len) => Ok(unsafe { std::slice::from_raw_parts(op.data, len) }.to_vec()),
                }
            };
            let version = || -> Result<Option<i32>> {
                match op.version {
                    -1 => Ok(None),
                    v if v < 0 => Err(invalid_arg(
                        f,
                        &format!("{name}.version"),
                        &format!("is {v}: give a data version, or -1 for any"),
                    )),
                    v => Ok(Some(v)),
                }
            };
            let k = op.kind;
            Ok(match zklock_fenced_kind::parse(k) {
                Some(FencedKind::Create) => FencedOp::create(path, data()?, mode_of(f, &name, op.mode)?),
                Some(FencedKind::SetData) => FencedOp::set_data(path, data()?, version()?),
                Some(FencedKind::Delete) => FencedOp::delete(path, version()?),
                Some(FencedKind::Check) => FencedOp::check(path, version()?),
                _ => {
                    return Err(invalid_arg(f, &format!("{name}.kind"), &format!("is not a zklock_fenced_kind ({k})")))
                },
            })
        })
        .collect()
}

fn mode_of(f: &str, name: &str, mode: zklock_create_mode_arg) -> Result<CreateMode> {
    zklock_create_mode::parse(mode)
        .ok_or_else(|| invalid_arg(f, &format!("{name}.mode"), &format!("is not a zklock_create_mode ({mode})")))
}

/// Makes the `n_ops` operations `ops[0..n_ops]` in one ZooKeeper
/// transaction with a check that the guard's lock node still exists: all
/// are made, and only while the lock is ours, or none is. A holder paused
/// past its session, or whose node was deleted, has its write refused by
/// ZooKeeper itself, whatever it believes. `n_ops` 0 only checks. On
/// success `*out` (if `out` is not NULL) receives the results, which the
/// caller frees with `zklock_fenced_results_free`.
///
/// # Errors
/// Nothing sent: `ZKLOCK_INVALID_ARGUMENT` for NULL arguments, an unknown
/// kind or mode, a version below -1, a request or reply over one packet
/// (`MAX_FENCED_BYTES` of zklock-core: 1 MiB less 1 KiB, a 68-byte Stat per
/// set data and create in the reply); `ZKLOCK_INVALID_PATH` for a malformed
/// path or one inside the lock's own path (each message names the
/// operation); `ZKLOCK_NOT_HELD`
/// after the release; `ZKLOCK_LOCK_LOST` once the lock is known lost;
/// `ZKLOCK_CLOSED` after `zklock_client_close`. From ZooKeeper, nothing
/// written: `ZKLOCK_LOCK_LOST` when our node is gone or the session ended;
/// `ZKLOCK_ZOOKEEPER` (or `ZKLOCK_NO_AUTH`, `ZKLOCK_INVALID_ARGUMENT`) for an
/// operation ZooKeeper refused: `zklock_error_failed_op` gives its index
/// and ZooKeeper's code name. Outcome unknown: `ZKLOCK_CONNECTION_LOSS`
/// and `ZKLOCK_TIMEOUT` (a write that was made was made while the lock was
/// ours).
///
/// # Threads
/// Blocks the calling thread for one request (waiting first for the
/// connection if it is down), at most the operation timeout; any thread.
///
/// # Safety
/// `guard` is NULL or a live guard; `ops` is NULL or points to `n_ops`
/// operations as documented on `zklock_fenced_op`; `out` and `err` are
/// NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_guard_fenced_multi(
    guard: *const zklock_guard,
    ops: *const zklock_fenced_op,
    n_ops: usize,
    out: *mut *mut zklock_fenced_results,
    err: *mut *mut zklock_error,
) -> zklock_code {
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        fenced("zklock_guard_fenced_multi", guard, ops, n_ops, out, err, |g: &zklock_guard, ops| {
            g.inner.fenced_multi(ops)
        })
    }
}

/// The body of the two `_fenced_multi` functions: reads the operations,
/// makes the write through `write` on the guard and hands the results out.
///
/// # Safety
/// As `zklock_guard_fenced_multi`, with `guard` NULL or a live `G`.
unsafe fn fenced<G>(
    f: &str,
    guard: *const G,
    ops: *const zklock_fenced_op,
    n_ops: usize,
    out: *mut *mut zklock_fenced_results,
    err: *mut *mut zklock_error,
    write: impl FnOnce(&G, &[FencedOp]) -> zklock_core::Result<Vec<FencedResult>>,
) -> zklock_code {
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(f, err, || {
            let guard = arg_ref(guard, f, "guard")?;
            let ops = read_ops(f, ops, n_ops)?;
            let results = write(guard, &ops)?;
            write_results(out, results);
            Ok(())
        })
    }
}

/// `zklock_guard_fenced_multi` fenced by every member of a multi-lock:
/// the operations are made only while every member's node exists.
///
/// # Errors
/// As `zklock_guard_fenced_multi`; a path inside any member's lock path is
/// refused.
///
/// # Threads
/// As `zklock_guard_fenced_multi`.
///
/// # Safety
/// As `zklock_guard_fenced_multi`, with `guard` NULL or a live multi-lock
/// guard.
#[no_mangle]
pub unsafe extern "C" fn zklock_multi_guard_fenced_multi(
    guard: *const zklock_multi_guard,
    ops: *const zklock_fenced_op,
    n_ops: usize,
    out: *mut *mut zklock_fenced_results,
    err: *mut *mut zklock_error,
) -> zklock_code {
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        fenced("zklock_multi_guard_fenced_multi", guard, ops, n_ops, out, err, |g: &zklock_multi_guard, ops| {
            g.inner.fenced_multi(ops)
        })
    }
}

/// Hands the results to the caller, if it asked for them.
///
/// # Safety
/// `out` is NULL or valid for writing a pointer.
unsafe fn write_results(out: *mut *mut zklock_fenced_results, results: Vec<FencedResult>) {
    if !out.is_null() {
        // SAFETY: out is valid for writes (caller's contract).
        unsafe { out.write(Box::into_raw(Box::new(zklock_fenced_results::new(results)))) };
    }
}

/// The number of results (0 for NULL).
///
/// # Safety
/// `r` is NULL or a live result list.
#[no_mangle]
pub unsafe extern "C" fn zklock_fenced_results_len(r: *const zklock_fenced_results) -> usize {
    // SAFETY: caller's contract.
    guarded(0, || unsafe { r.as_ref() }.map_or(0, |r| r.items.len()))
}

/// What operation `i` did (its `zklock_fenced_kind`); `ZKLOCK_FENCED_CHECK`
/// if `r` is NULL or `i` is out of range.
///
/// # Safety
/// `r` is NULL or a live result list.
#[no_mangle]
pub unsafe extern "C" fn zklock_fenced_results_kind(r: *const zklock_fenced_results, i: usize) -> zklock_fenced_kind {
    // SAFETY: caller's contract.
    guarded(zklock_fenced_kind::ZKLOCK_FENCED_CHECK, || {
        unsafe { zklock_fenced_results::at(r, i) }.map_or(zklock_fenced_kind::ZKLOCK_FENCED_CHECK, |x| x.0)
    })
}

/// The path of the node operation `i` created (with the sequence number
/// of a sequential mode; NUL-terminated, owned by the list); NULL if it
/// was not a create, `r` is NULL or `i` is out of range.
///
/// # Safety
/// `r` is NULL or a live result list.
#[no_mangle]
pub unsafe extern "C" fn zklock_fenced_results_path(r: *const zklock_fenced_results, i: usize) -> *const c_char {
    // SAFETY: caller's contract.
    guarded(std::ptr::null(), || {
        unsafe { zklock_fenced_results::at(r, i) }.and_then(|x| x.1.as_ref()).map_or(std::ptr::null(), |p| p.as_ptr())
    })
}

/// The node's new data version after set data operation `i`; -1 if it
/// was not a set data, `r` is NULL or `i` is out of range.
///
/// # Safety
/// `r` is NULL or a live result list.
#[no_mangle]
pub unsafe extern "C" fn zklock_fenced_results_version(r: *const zklock_fenced_results, i: usize) -> i32 {
    // SAFETY: caller's contract.
    guarded(-1, || unsafe { zklock_fenced_results::at(r, i) }.map_or(-1, |x| x.2))
}

/// Frees a result list. `zklock_fenced_results_free(NULL)` does nothing.
///
/// # Safety
/// `r` is NULL or a result list not freed yet; it must not be used
/// afterwards.
#[no_mangle]
pub unsafe extern "C" fn zklock_fenced_results_free(r: *mut zklock_fenced_results) {
    if !r.is_null() {
        // SAFETY: r came from Box::into_raw and is freed once (caller's contract).
        guarded((), || drop(unsafe { Box::from_raw(r) }));
    }
}

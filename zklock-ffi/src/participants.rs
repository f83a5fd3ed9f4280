//! `zklock_participants`: a snapshot of a lock's queue.

use std::ffi::{c_char, CString};

use zklock_core::{NodeKind, Participant};

use crate::util::guarded;

/// A snapshot of the participants of a lock path, in queue order (holders
/// first), from `zklock_client_participants`. Immutable: may be read from
/// any thread. Every string and byte pointer it returns is owned by it and
/// valid until `zklock_participants_free`.
pub struct zklock_participants {
    items: Vec<(CString, Participant)>,
}

impl zklock_participants {
    pub(crate) fn new(list: Vec<Participant>) -> zklock_participants {
        let items =
            list.into_iter().map(|p| (CString::new(p.name.replace('\0', "\\0")).unwrap_or_default(), p)).collect();
        zklock_participants { items }
    }

    /// Participant `i`, if the list exists and `i` is in range.
    ///
    /// # Safety
    /// `p` is NULL or a live list.
    unsafe fn at<'a>(p: *const zklock_participants, i: usize) -> Option<&'a (CString, Participant)> {
        // SAFETY: caller's contract.
        unsafe { p.as_ref() }.and_then(|p| p.items.get(i))
    }
}

/// The number of participants (0 for NULL).
///
/// # Safety
/// `p` is NULL or a live list.
#[no_mangle]
pub unsafe extern "C" fn zklock_participants_len(p: *const zklock_participants) -> usize {
    // SAFETY: caller's contract.
    guarded(0, || unsafe { p.as_ref() }.map_or(0, |p| p.items.len()))
}

/// The child name of participant `i`, e.g. `_c_<uuid>-lock-0000000003`
/// (NUL-terminated; owned by the list). NULL if `p` is NULL or `i` is out
/// of range.
///
/// # Safety
/// `p` is NULL or a live list.
#[no_mangle]
pub unsafe extern "C" fn zklock_participants_name(p: *const zklock_participants, i: usize) -> *const c_char {
    // SAFETY: caller's contract.
    guarded(std::ptr::null(), || unsafe { zklock_participants::at(p, i) }.map_or(std::ptr::null(), |(n, _)| n.as_ptr()))
}

/// The sequence number of participant `i`; -1 if `p` is NULL or `i` is out
/// of range.
///
/// # Safety
/// `p` is NULL or a live list.
#[no_mangle]
pub unsafe extern "C" fn zklock_participants_sequence(p: *const zklock_participants, i: usize) -> i64 {
    // SAFETY: caller's contract.
    guarded(-1, || unsafe { zklock_participants::at(p, i) }.map_or(-1, |(_, x)| x.sequence))
}

/// Whether participant `i` is a reader (shared); false for writers and
/// exclusive nodes, and if `p` is NULL or `i` is out of range.
///
/// # Safety
/// `p` is NULL or a live list.
#[no_mangle]
pub unsafe extern "C" fn zklock_participants_is_reader(p: *const zklock_participants, i: usize) -> bool {
    // SAFETY: caller's contract.
    guarded(false, || unsafe { zklock_participants::at(p, i) }.is_some_and(|(_, x)| x.kind == NodeKind::Reader))
}

/// Whether participant `i` holds the lock (by the ordering rule, when the
/// snapshot was taken); false if `p` is NULL or `i` is out of range.
///
/// # Safety
/// `p` is NULL or a live list.
#[no_mangle]
pub unsafe extern "C" fn zklock_participants_holds(p: *const zklock_participants, i: usize) -> bool {
    // SAFETY: caller's contract.
    guarded(false, || unsafe { zklock_participants::at(p, i) }.is_some_and(|(_, x)| x.holds))
}

/// The id of the session that owns participant `i`'s node; 0 if `p` is
/// NULL or `i` is out of range.
///
/// # Safety
/// `p` is NULL or a live list.
#[no_mangle]
pub unsafe extern "C" fn zklock_participants_session_id(p: *const zklock_participants, i: usize) -> i64 {
    // SAFETY: caller's contract.
    guarded(0, || unsafe { zklock_participants::at(p, i) }.map_or(0, |(_, x)| x.session_id))
}

/// The data of participant `i`'s node (chosen by its owner; may be empty;
/// not NUL-terminated): returns a pointer to `*len` bytes owned by the list.
/// If `p` is NULL or `i` is out of range: returns NULL and sets `*len` to 0.
/// `len` may be NULL.
///
/// # Safety
/// `p` is NULL or a live list; `len` is NULL or valid for writing.
#[no_mangle]
pub unsafe extern "C" fn zklock_participants_data(
    p: *const zklock_participants,
    i: usize,
    len: *mut usize,
) -> *const u8 {
    static EMPTY: [u8; 1] = [0];
    guarded(std::ptr::null(), || {
        // SAFETY: caller's contract.
        let (ptr, n) = match unsafe { zklock_participants::at(p, i) } {
            Some((_, x)) if x.data.is_empty() => (EMPTY.as_ptr(), 0),
            Some((_, x)) => (x.data.as_ptr(), x.data.len()),
            None => (std::ptr::null(), 0),
        };
        if !len.is_null() {
            // SAFETY: len is valid for writes (caller's contract).
            unsafe { len.write(n) };
        }
        ptr
    })
}

/// Frees a participant list. `zklock_participants_free(NULL)` does nothing.
///
/// # Safety
/// `p` is NULL or a list that was not freed yet and that no other thread is
/// reading; it must not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn zklock_participants_free(p: *mut zklock_participants) {
    if !p.is_null() {
        // SAFETY: p came from Box::into_raw and is freed once (caller's contract).
        guarded((), || drop(unsafe { Box::from_raw(p) }));
    }
}

//! `zklock_guard`: proof of holding a lock, and state-change callbacks.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, ThreadId};

use zklock_core::{Guard, LockState};

use crate::error::{zklock_code, zklock_error};
use crate::listener::zklock_subscription;
use crate::util::{arg_ref, call, guarded, null_arg, out_arg, write_pending, UserData};

pub use crate::vocabulary::zklock_state;

/// A state-change callback: `userdata` is the pointer given to
/// `zklock_guard_on_state_change`, `state` the new state (`HELD`,
/// `SUSPENDED` or `LOST`; `RELEASED` only when registered on a released
/// guard).
///
/// It runs on the client's event thread (never the caller's thread, never
/// zklock's runtime thread), one callback at a time, in order. It must not
/// block for long (the client's other callbacks wait) and must not unwind
/// (no C++ exception may leave it). It may call zklock functions, including
/// `zklock_guard_release` / `zklock_guard_free` of its own guard.
pub type zklock_state_cb = Option<unsafe extern "C" fn(userdata: *mut c_void, state: zklock_state)>;

/// Proof of holding a lock, from `zklock_lock_acquire`.
///
/// Thread-safe: any function may be called on one guard from several threads
/// at once; a guard may be released on another thread than the one that
/// acquired it. A guard keeps its client alive. `zklock_guard_free` releases
/// the lock if the guard still holds it.
pub struct zklock_guard {
    pub(crate) inner: Guard,
    /// One gate per registered callback, closed by `zklock_guard_free`.
    pub(crate) gates: Mutex<Vec<Arc<Gate>>>,
}

/// Lets a callback run until it is closed, and lets `close` wait for a run
/// in progress, so that no callback runs after `zklock_guard_free` returns.
#[derive(Default)]
pub(crate) struct Gate {
    state: Mutex<GateState>,
    done: Condvar,
}

#[derive(Default)]
struct GateState {
    closed: bool,
    /// The thread running the callback now.
    running: Option<ThreadId>,
}

impl Gate {
    fn state(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn run(&self, f: impl FnOnce()) {
        {
            let mut st = self.state();
            if st.closed {
                return;
            }
            st.running = Some(thread::current().id());
        }
        f();
        self.state().running = None;
        self.done.notify_all();
    }

    /// Closes the gate and waits for a run in progress on another thread
    /// (a callback that frees its own guard does not wait for itself).
    pub(crate) fn close(&self) {
        let me = thread::current().id();
        let mut st = self.state();
        st.closed = true;
        while st.running.is_some_and(|t| t != me) {
            st = self.done.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Write to read downgrade: `*out` receives a new read guard of the same
/// `zklock_rwlock_new` pair whose node takes this write node's sequence,
/// granted at once (no writer queued behind can slip in); then release
/// this guard to let other readers in. Free the new guard with
/// `zklock_guard_free`.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for NULL arguments or a guard that is not a
/// write guard of a `zklock_rwlock_new` pair; `ZKLOCK_NOT_HELD` once
/// released; what `zklock_guard_check` gives if the write lock is not
/// safely held; `ZKLOCK_LOCK_LOST` if the write node was gone when the read
/// node was to be made (it is made in one transaction with a check of the
/// write node, so never after it went, unless a third party made a node of
/// its name since: docs/guarantees.md, "Lock-node names made by someone
/// else").
///
/// # Threads
/// Blocks the calling thread for one request, at most the operation
/// timeout (then `ZKLOCK_TIMEOUT`); any thread.
///
/// # Safety
/// `guard` is NULL or a live guard; `out` and `err` are NULL or valid for
/// writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_guard_downgrade(
    guard: *const zklock_guard,
    out: *mut *mut zklock_guard,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_guard_downgrade";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let guard = arg_ref(guard, F, "guard")?;
            let out = out_arg(out, F, "out")?;
            let read = guard.inner.downgrade()?;
            out.write(Box::into_raw(Box::new(zklock_guard { inner: read, gates: Mutex::default() })));
            Ok(())
        })
    }
}

/// Releases the guard. The lock node is deleted when this is the last
/// guard of its node (a reentrant handle's acquires by one thread share
/// one node). Blocks up to the
/// operation timeout. The guard must still be freed.
///
/// On success `*pending` (if `pending` is not NULL) is set to false when the
/// node is deleted (or other guards of its node still hold it), and to true
/// when the delete could not be confirmed because of connection trouble; it
/// is then retried in the background until it succeeds or the session ends,
/// or until ZooKeeper refuses it (NoAuth: an ACL without the delete right; a
/// warning is logged and the node stays until the session ends).
///
/// # Errors
/// `ZKLOCK_NOT_HELD` if this guard was already released;
/// `ZKLOCK_LOCK_LOST` (`ZKLOCK_CLOSED` if the client was closed) if the
/// lock had been lost before the release: the critical section may have run
/// without the lock (the node is cleaned up all the same);
/// `ZKLOCK_INVALID_ARGUMENT` for a NULL `guard`.
///
/// # Threads
/// Any thread, also a state-change callback.
///
/// # Safety
/// `guard` is NULL or a live guard; `pending` and `err` are NULL or valid
/// for writing.
#[no_mangle]
pub unsafe extern "C" fn zklock_guard_release(
    guard: *const zklock_guard,
    pending: *mut bool,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_guard_release";
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

/// Succeeds while the lock is safely held: state `HELD`, connected, and the
/// safety clock has not run out (the ZooKeeper leader is known to have heard
/// of the session less than a session timeout, minus a margin, ago), so the
/// session cannot have expired yet. Call it before each
/// step that must not run without the lock, and pass the fencing token to
/// the protected resource. Never blocks.
///
/// # Errors
/// `ZKLOCK_CONNECTION_LOSS` while suspended (it may come back);
/// `ZKLOCK_LOCK_LOST` (`ZKLOCK_CLOSED` if the client was closed) once
/// lost; `ZKLOCK_NOT_HELD` after release; `ZKLOCK_INVALID_ARGUMENT` for a
/// NULL `guard`.
///
/// # Safety
/// `guard` is NULL or a live guard; `err` is NULL or valid for writing a
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_guard_check(guard: *const zklock_guard, err: *mut *mut zklock_error) -> zklock_code {
    const F: &str = "zklock_guard_check";
    // SAFETY: pointers as documented (caller's contract).
    unsafe { call(F, err, || arg_ref(guard, F, "guard")?.inner.check()) }
}

/// The current state of this guard: `ZKLOCK_STATE_RELEASED` once this
/// guard is released (even while other guards of its handle keep the lock)
/// and for NULL; `ZKLOCK_STATE_LOST` once the client is closed. Never
/// blocks.
///
/// # Safety
/// `guard` is NULL or a live guard.
#[no_mangle]
pub unsafe extern "C" fn zklock_guard_state(guard: *const zklock_guard) -> zklock_state {
    let released = zklock_state::ZKLOCK_STATE_RELEASED;
    // SAFETY: caller's contract.
    guarded(released, || unsafe { guard.as_ref() }.map_or(released, |g| g.inner.state().into()))
}

/// The fencing token of this grant: the creation zxid of our node. It only
/// grows over the ensemble's life, so successive grants of a lock have
/// strictly larger tokens; give it to the protected resource and have it
/// reject tokens smaller than the largest it has seen. 0 for NULL (never a
/// valid token).
///
/// # Safety
/// `guard` is NULL or a live guard.
#[no_mangle]
pub unsafe extern "C" fn zklock_guard_fencing_token(guard: *const zklock_guard) -> u64 {
    // SAFETY: caller's contract.
    guarded(0, || unsafe { guard.as_ref() }.map_or(0, |g| g.inner.fencing_token()))
}

/// The sequence number of our lock node; -1 for NULL.
///
/// # Safety
/// `guard` is NULL or a live guard.
#[no_mangle]
pub unsafe extern "C" fn zklock_guard_sequence(guard: *const zklock_guard) -> i64 {
    // SAFETY: caller's contract.
    guarded(-1, || unsafe { guard.as_ref() }.map_or(-1, |g| g.inner.sequence()))
}

/// The id of the session that holds the lock; 0 for NULL.
///
/// # Safety
/// `guard` is NULL or a live guard.
#[no_mangle]
pub unsafe extern "C" fn zklock_guard_session_id(guard: *const zklock_guard) -> i64 {
    // SAFETY: caller's contract.
    guarded(0, || unsafe { guard.as_ref() }.map_or(0, |g| g.inner.session_id()))
}

/// Copies the full path of our lock node (e.g.
/// `/jobs/nightly/_c_<uuid>-lock-0000000003`) into `buf`, snprintf style:
/// writes at most `len` bytes including a terminating NUL (nothing if `len`
/// is 0, and then `buf` may be NULL) and returns the length of the whole
/// path without the NUL. The copy was complete if the result is less than
/// `len`. Returns 0 (and writes `""` if it can) for a NULL guard.
///
/// # Safety
/// `guard` is NULL or a live guard; `buf` is NULL or valid for writing
/// `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn zklock_guard_node_path(guard: *const zklock_guard, buf: *mut c_char, len: usize) -> usize {
    guarded(0, || {
        // SAFETY: caller's contract.
        let path = unsafe { guard.as_ref() }.map(|g| g.inner.node_path()).unwrap_or_default();
        if !buf.is_null() && len > 0 {
            let n = path.len().min(len - 1);
            // SAFETY: buf is valid for len bytes and n < len (caller's contract).
            unsafe {
                std::ptr::copy_nonoverlapping(path.as_ptr(), buf.cast::<u8>(), n);
                buf.add(n).write(0);
            }
        }
        path.len()
    })
}

/// Registers `cb` to be called with `userdata` on every state change
/// (`HELD`, `SUSPENDED`, `LOST`) of this lock; closing the client makes it
/// `LOST` (without `SUSPENDED` first). A release is not reported. If the
/// lock is no longer `HELD` when registering, `cb` is called once soon with
/// the current state (`RELEASED` for a released guard, and then never
/// again). Several callbacks may be registered.
///
/// `out` may be NULL (the callback stays as long as the guard); otherwise
/// `*out` receives a subscription that `zklock_subscription_free` takes the
/// callback back with (freeing it after the guard is fine too).
///
/// The callback runs on the client's event thread, one at a time and in
/// order (see `zklock_state_cb`); it must not block for long. It may call
/// zklock functions. It is never called after `zklock_guard_free` of this
/// guard has returned (free waits for a call in progress on another thread),
/// so `userdata` may be freed then.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for a NULL `guard` or `cb`.
///
/// # Safety
/// `guard` is NULL or a live guard; `userdata` must stay usable by `cb` on
/// the event thread until the guard or the subscription is freed; `out`
/// and `err` are NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_guard_on_state_change(
    guard: *const zklock_guard,
    cb: zklock_state_cb,
    userdata: *mut c_void,
    out: *mut *mut zklock_subscription,
    err: *mut *mut zklock_error,
) -> zklock_code {
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        register("zklock_guard_on_state_change", guard, cb, out, err, |g, cb, gate| {
            g.on_state_change(callback(cb, UserData(userdata), gate))
        })
    }
}

/// The body of the guard's callback registrations: checks the arguments,
/// gives the callback a gate that `zklock_guard_free` closes, registers it
/// through `add` and hands the subscription out.
///
/// # Safety
/// `guard` is NULL or a live guard; `out` and `err` are NULL or valid for
/// writing a pointer.
unsafe fn register<C>(
    f: &str,
    guard: *const zklock_guard,
    cb: Option<C>,
    out: *mut *mut zklock_subscription,
    err: *mut *mut zklock_error,
    add: impl FnOnce(&Guard, C, Arc<Gate>) -> zklock_core::Subscription,
) -> zklock_code {
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(f, err, || {
            let guard = arg_ref(guard, f, "guard")?;
            let cb = cb.ok_or_else(|| null_arg(f, "cb"))?;
            let gate = Arc::new(Gate::default());
            guard.gates.lock().unwrap_or_else(|e| e.into_inner()).push(gate.clone());
            let sub = add(&guard.inner, cb, gate.clone());
            if let Some(out) = out.as_mut() {
                *out = zklock_subscription::new(sub, gate);
            }
            Ok(())
        })
    }
}

/// A revocation callback: `userdata` as given to
/// `zklock_guard_on_revocation`. Runs on the client's event thread, like
/// `zklock_state_cb` (same rules).
pub type zklock_revocation_cb = Option<unsafe extern "C" fn(userdata: *mut c_void)>;

/// Registers `cb` to be called with `userdata` when someone asks this
/// holder to let go: revocation, Curator-compatible (Curator's `Revoker`,
/// or `zklock_client_revoke`, writes `__REVOKE__` to our node). The lock
/// stays held: the holder decides (for example to finish and release). If
/// a request came before, `cb` is called once soon. `out` and the
/// callback's life are as for `zklock_guard_on_state_change` (never called
/// after `zklock_guard_free` of this guard has returned).
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for a NULL `guard` or `cb`.
///
/// # Safety
/// As `zklock_guard_on_state_change`.
#[no_mangle]
pub unsafe extern "C" fn zklock_guard_on_revocation(
    guard: *const zklock_guard,
    cb: zklock_revocation_cb,
    userdata: *mut c_void,
    out: *mut *mut zklock_subscription,
    err: *mut *mut zklock_error,
) -> zklock_code {
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        register("zklock_guard_on_revocation", guard, cb, out, err, |g, cb, gate| {
            g.on_revocation(revocation_callback(cb, UserData(userdata), gate))
        })
    }
}

/// The core revocation callback that calls the C callback through its
/// gate.
fn revocation_callback(
    cb: unsafe extern "C" fn(*mut c_void),
    userdata: UserData,
    gate: Arc<Gate>,
) -> impl Fn() + Send + Sync + 'static {
    move || {
        // SAFETY: cb and userdata as promised by the caller of
        // zklock_guard_on_revocation; the gate keeps this from running
        // after zklock_guard_free.
        gate.run(|| unsafe { cb(userdata.get()) });
    }
}

/// Whether someone asked this holder to let go (see
/// `zklock_guard_on_revocation`); false for NULL. Never blocks.
///
/// # Safety
/// `guard` is NULL or a live guard.
#[no_mangle]
pub unsafe extern "C" fn zklock_guard_revocation_requested(guard: *const zklock_guard) -> bool {
    // SAFETY: caller's contract.
    guarded(false, || unsafe { guard.as_ref() }.is_some_and(|g| g.inner.revocation_requested()))
}

/// The core callback that calls the C callback through its gate.
fn callback(
    cb: unsafe extern "C" fn(*mut c_void, zklock_state),
    userdata: UserData,
    gate: Arc<Gate>,
) -> impl Fn(LockState) + Send + Sync + 'static {
    move |state| {
        let state = zklock_state::from(state);
        // SAFETY: cb and userdata as promised by the caller of
        // zklock_guard_on_state_change; the gate keeps this from running
        // after zklock_guard_free.
        gate.run(|| unsafe { cb(userdata.get(), state) });
    }
}

/// Frees a guard, releasing the lock first if this guard still holds it
/// (blocking up to the operation timeout; errors of that release are not
/// reported: call `zklock_guard_release` first to see them). After it
/// returns, none of the guard's callbacks runs again.
/// `zklock_guard_free(NULL)` does nothing.
///
/// # Threads
/// Any thread, also a state-change callback (even the guard's own).
///
/// # Safety
/// `guard` is NULL or a guard that was not freed yet and that no other
/// thread is using; it must not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn zklock_guard_free(guard: *mut zklock_guard) {
    if guard.is_null() {
        return;
    }
    guarded((), || {
        // SAFETY: guard came from Box::into_raw and is freed once (caller's contract).
        let guard = unsafe { Box::from_raw(guard) };
        for gate in guard.gates.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            gate.close();
        }
        drop(guard);
    })
}

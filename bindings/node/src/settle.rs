//! Promises settled from any thread, guarded against the teardown of their
//! Node environment.
//!
//! napi-rs 2's `JsDeferred` settles through a threadsafe function of its
//! own, made for each Promise and released by its settle, which it calls
//! from whatever thread settles. When the environment is torn down first (a
//! `worker_threads` Worker terminated while an acquire is in flight), Node
//! frees that function with the environment, and the late call aborts the
//! whole process (SIGABRT in `uv_mutex_lock` under
//! `napi_call_threadsafe_function`; found by an outside test, and
//! napi-rs#2460 upstream, fixed only in napi-rs 3).
//!
//! Here every Promise of one environment is settled through one threadsafe
//! function ([`Queue`]), made with the environment's first Promise and kept
//! until its teardown. A function per Promise also cost its making, a
//! cleanup hook added and removed, and the close its release queued to
//! the JavaScript thread: measured with `perf stat` over 6,000 acquires and
//! releases, alternating builds, one context switch fewer per acquire and
//! release (15.5 to 14.5; the Rust core's blocking calls take 10.3) and a
//! 3 % shorter cycle. The function keeps Node's event loop alive only
//! while a Promise of it is pending.
//!
//! The guard: an environment cleanup hook, added after the threadsafe
//! function (so run before Node's own teardown of it), takes the function
//! and aborts it; a settle uses it under the same lock, so no settle uses
//! it once the hook has run.
//!
//! The outcomes wait in a queue of ours, not in Node's: each call of the
//! function only wakes the JavaScript thread, which takes the oldest. At
//! the teardown the hook drops what is still queued (a guard in it is
//! released) and aborts the work still running for a Promise of the
//! environment ([`Deferred::abortable`]): an acquire nobody can see the end
//! of any more (a terminated worker's, waiting without a timeout) is
//! cancelled and leaves no node, where it kept its client, session and
//! queue node alive for the rest of the process (found by an outside test).
//! Between `worker.terminate()` and the hook, when JavaScript can no longer
//! run, an outcome is dropped rather than settled ([`can_run_js`]): making
//! a guard's object then leaked the guard inside napi-rs.
//!
//! Threads: [`Deferred::new`] and the callbacks run on the JavaScript
//! thread of the environment; [`Deferred::settle`] and the drop of a
//! [`Deferred`] on any thread.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::future::Future;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::{AbortHandle, Abortable};

use napi::bindgen_prelude::ToNapiValue;
use napi::{sys, Env, JsObject, NapiRaw, NapiValue};

/// What settles a Promise, run on the JavaScript thread: its value, or the
/// error it rejects with.
pub(crate) type Outcome = Box<dyn FnOnce(Env) -> napi::Result<sys::napi_value> + Send>;

/// The pending side of a Promise made by [`Deferred::new`]. Dropping it
/// unsettled leaves the Promise pending but lets Node exit.
pub(crate) struct Deferred {
    queue: Arc<Queue>,
    deferred: SendPtr<sys::napi_deferred__>,
    /// Whether a message (the settle, or the drop's) was sent.
    sent: bool,
    /// The key of its work's abort handle in `Queue::running`.
    id: u64,
}

/// One environment's way to its JavaScript thread.
struct Queue {
    /// The threadsafe function, until the teardown takes it.
    tsfn: Mutex<Option<SendPtr<sys::napi_threadsafe_function__>>>,
    /// Promises made and not yet settled or dropped; the function keeps
    /// the event loop alive while this is not 0. Only read and written on
    /// the JavaScript thread (a `Mutex` only to be `Sync`).
    pending: Mutex<usize>,
    /// The outcomes on their way to the JavaScript thread.
    messages: Mutex<VecDeque<Message>>,
    /// The work of the pending Promises, to abort at the teardown (`None`
    /// once it has run), by the Promise's id.
    running: Mutex<Option<HashMap<u64, AbortHandle>>>,
    /// The next Promise's id.
    next_id: AtomicU64,
    /// A reference to a native function that does nothing, called before a
    /// settle to learn whether JavaScript can still run (see `call_js`).
    probe: Mutex<Option<SendPtr<sys::napi_ref__>>>,
}

thread_local! {
    /// The queue of the environment whose JavaScript thread this is (the
    /// environment's address with it), until its teardown.
    static QUEUE: RefCell<Option<(usize, Arc<Queue>)>> = const { RefCell::new(None) };
}

/// A raw napi pointer that the guard makes safe to move between threads.
struct SendPtr<T>(*mut T);

// SAFETY: the pointers are napi handles: a threadsafe function is meant to
// be used from any thread (the lock keeps it from being used once torn
// down), and a deferred is only used on the JavaScript thread, in
// `call_js`.
unsafe impl<T> Send for SendPtr<T> {}

/// One message on its way to the JavaScript thread: a Promise to settle,
/// or (no outcome) one that will never be settled.
struct Message {
    deferred: SendPtr<sys::napi_deferred__>,
    outcome: Option<Outcome>,
}

fn check(status: sys::napi_status) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(napi::Status::from(status), "making a Promise".to_owned()))
    }
}

impl Queue {
    /// The queue of `env`, made with its threadsafe function and teardown
    /// hook the first time. On the JavaScript thread.
    fn of(env: &Env) -> napi::Result<Arc<Queue>> {
        let raw = env.raw();
        let known = QUEUE.with(|q| q.borrow().as_ref().filter(|(e, _)| *e == raw as usize).map(|(_, q)| q.clone()));
        if let Some(queue) = known {
            return Ok(queue);
        }
        let name = env.create_string("zklock")?;
        let queue = Arc::new(Queue {
            tsfn: Mutex::new(None),
            pending: Mutex::new(0),
            messages: Mutex::new(VecDeque::new()),
            running: Mutex::new(Some(HashMap::new())),
            next_id: AtomicU64::new(0),
            probe: Mutex::new(None),
        });
        let mut probe = ptr::null_mut();
        let mut probe_ref = ptr::null_mut();
        // SAFETY: `raw` is the live environment of this call; the function
        // has no data, and its reference lives as long as the environment.
        unsafe {
            if sys::napi_create_function(raw, c"zklockProbe".as_ptr(), 11, Some(nothing), ptr::null_mut(), &mut probe)
                == sys::Status::napi_ok
                && sys::napi_create_reference(raw, probe, 1, &mut probe_ref) == sys::Status::napi_ok
            {
                if let Ok(mut slot) = queue.probe.lock() {
                    *slot = Some(SendPtr(probe_ref));
                }
            }
        }
        // The function's own reference (its context), given back by
        // `finalize` when Node destroys the function.
        let context = Arc::into_raw(queue.clone()) as *mut c_void;
        let mut tsfn = ptr::null_mut();
        // SAFETY: `raw` is the live environment of this call; no
        // JavaScript function (call_js settles), an unbounded queue, one
        // thread holding it (released by the teardown).
        let made = check(unsafe {
            sys::napi_create_threadsafe_function(
                raw,
                ptr::null_mut(),
                ptr::null_mut(),
                name.raw(),
                0,
                1,
                context,
                Some(finalize),
                context,
                Some(call_js),
                &mut tsfn,
            )
        });
        if let Err(e) = made {
            // SAFETY: not made: its reference comes back here.
            drop(unsafe { Arc::from_raw(context as *const Queue) });
            return Err(e);
        }
        // SAFETY: the function just made, on its JavaScript thread. Nothing
        // is pending yet: it must not keep Node alive.
        unsafe { sys::napi_unref_threadsafe_function(raw, tsfn) };
        if let Ok(mut slot) = queue.tsfn.lock() {
            *slot = Some(SendPtr(tsfn));
        }
        let hook = Arc::into_raw(queue.clone()) as *mut c_void;
        // SAFETY: `hook` is a live `Arc<Queue>` reference, given back by
        // `on_teardown`.
        if let Err(e) = check(unsafe { sys::napi_add_env_cleanup_hook(raw, Some(on_teardown), hook) }) {
            // SAFETY: the hook was not added: take its reference back, and
            // let the function go (out of the slot first).
            unsafe {
                drop(Arc::from_raw(hook as *const Queue));
                drop(queue.tsfn.lock().map(|mut slot| slot.take()));
                sys::napi_release_threadsafe_function(tsfn, sys::ThreadsafeFunctionReleaseMode::abort);
            }
            return Err(e);
        }
        QUEUE.with(|q| *q.borrow_mut() = Some((raw as usize, queue.clone())));
        Ok(queue)
    }

    /// Sends `message` to the JavaScript thread, unless the environment is
    /// gone (then it is dropped here). Any thread.
    fn send(&self, message: Message) {
        let Ok(slot) = self.tsfn.lock() else { return };
        let Some(SendPtr(tsfn)) = slot.as_ref() else { return };
        if let Ok(mut messages) = self.messages.lock() {
            messages.push_back(message);
        }
        // SAFETY: `tsfn` is live: it is in the slot, and the teardown takes
        // it under this lock before Node frees it. No data: call_js takes
        // the queue.
        unsafe {
            sys::napi_call_threadsafe_function(*tsfn, ptr::null_mut(), sys::ThreadsafeFunctionCallMode::nonblocking)
        };
    }

    /// Counts a Promise made (`+1`) or done with (`-1`) and keeps the event
    /// loop alive exactly while some are pending. On the JavaScript thread.
    fn count(&self, env: sys::napi_env, delta: isize) {
        let Ok(mut pending) = self.pending.lock() else { return };
        let before = *pending;
        *pending = before.saturating_add_signed(delta);
        let Ok(slot) = self.tsfn.lock() else { return };
        let Some(SendPtr(tsfn)) = slot.as_ref() else { return };
        // SAFETY: live (in the slot, under its lock), on its JavaScript
        // thread.
        unsafe {
            if before == 0 && *pending > 0 {
                sys::napi_ref_threadsafe_function(env, *tsfn);
            } else if before > 0 && *pending == 0 {
                sys::napi_unref_threadsafe_function(env, *tsfn);
            }
        }
    }
}

impl Deferred {
    /// A new Promise and its pending side. On the JavaScript thread.
    pub(crate) fn new(env: &Env) -> napi::Result<(Deferred, JsObject)> {
        let raw = env.raw();
        let queue = Queue::of(env)?;
        let (mut deferred, mut promise) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: `raw` is the live environment of this call.
        check(unsafe { sys::napi_create_promise(raw, &mut deferred, &mut promise) })?;
        queue.count(raw, 1);
        let id = queue.next_id.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `promise` is the value napi_create_promise made.
        let promise = unsafe { JsObject::from_raw_unchecked(raw, promise) };
        Ok((Deferred { queue, deferred: SendPtr(deferred), sent: false, id }, promise))
    }

    /// `work`, made to end (as `Err(Aborted)`, dropping `work` where it
    /// runs) when the environment is torn down. Any thread.
    pub(crate) fn abortable<F: Future>(&self, work: F) -> Abortable<F> {
        let (handle, registration) = AbortHandle::new_pair();
        match self.queue.running.lock().ok().as_deref_mut() {
            Some(Some(running)) => {
                running.insert(self.id, handle);
            },
            // Torn down already.
            _ => handle.abort(),
        }
        Abortable::new(work, registration)
    }

    /// Forgets this Promise's abort handle (its work has ended).
    fn done(&self) {
        if let Ok(mut running) = self.queue.running.lock() {
            if let Some(running) = running.as_mut() {
                running.remove(&self.id);
            }
        }
    }

    /// Settles the Promise with `outcome` (run on the JavaScript thread),
    /// unless its environment is gone. Any thread.
    pub(crate) fn settle(mut self, outcome: Outcome) {
        self.sent = true;
        self.done();
        self.queue.send(Message { deferred: SendPtr(self.deferred.0), outcome: Some(outcome) });
    }
}

impl Drop for Deferred {
    /// Unsettled (its work was dropped): tells the JavaScript thread, so
    /// that a Promise that will never settle does not keep Node alive.
    fn drop(&mut self) {
        if !self.sent {
            self.done();
            self.queue.send(Message { deferred: SendPtr(self.deferred.0), outcome: None });
        }
    }
}

/// The environment is being torn down (JavaScript thread): take the
/// threadsafe function before Node frees it, so that no settle uses it.
unsafe extern "C" fn on_teardown(arg: *mut c_void) {
    // SAFETY: `arg` is the reference `Queue::of` made for the hook; this
    // runs once.
    let queue = unsafe { Arc::from_raw(arg as *const Queue) };
    QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        if q.as_ref().is_some_and(|(_, known)| Arc::ptr_eq(known, &queue)) {
            *q = None;
        }
    });
    let taken = queue.tsfn.lock().ok().and_then(|mut slot| slot.take());
    if let Some(SendPtr(tsfn)) = taken {
        // SAFETY: live until Node's own teardown of it, which runs after
        // this hook (hooks run in reverse order of addition).
        unsafe { sys::napi_release_threadsafe_function(tsfn, sys::ThreadsafeFunctionReleaseMode::abort) };
    }
    // No settle is sent from here on: drop what is queued (a guard in an
    // outcome is released by its drop) and end the work still running.
    drop(queue.messages.lock().map(|mut m| std::mem::take(&mut *m)));
    let running = queue.running.lock().ok().and_then(|mut r| r.take()).unwrap_or_default();
    for handle in running.into_values() {
        handle.abort();
    }
}

/// Node destroys the threadsafe function: its reference to the queue goes.
unsafe extern "C" fn finalize(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: the reference `Queue::of` made for the function, given back
    // once.
    drop(unsafe { Arc::from_raw(data as *const Queue) });
}

/// The JavaScript thread is woken (`env` is null when Node tears the
/// function down: the teardown hook has dropped the queue then): settles
/// the oldest message queued.
unsafe extern "C" fn call_js(env: sys::napi_env, _js: sys::napi_value, context: *mut c_void, _data: *mut c_void) {
    if env.is_null() || context.is_null() {
        return;
    }
    // SAFETY: `context` is the function's reference to the queue, alive
    // until `finalize`, which comes after the last call.
    let queue = unsafe { &*(context as *const Queue) };
    // One per call (each send made one): the microtasks of one settle run
    // before the next is settled, as with a function per Promise (an abort
    // made in a release's continuation must come before a grant that
    // follows it; `abort.test.js`).
    let Some(Message { deferred, outcome }) = queue.messages.lock().ok().and_then(|mut m| m.pop_front()) else {
        return;
    };
    queue.count(env, -1);
    // After `worker.terminate()` JavaScript cannot run while this queue is
    // still served: making a guard's object then fails inside napi-rs,
    // which leaks the guard (its node stayed held for the rest of the
    // process: outside test, round 7). The outcome is dropped instead (a
    // guard in it is released).
    if !can_run_js(env, queue) {
        return;
    }
    if let Some(outcome) = outcome {
        settle_one(env, deferred, outcome);
    }
}

/// Whether JavaScript can run in `env` now: a call of the queue's native
/// function that does nothing succeeds. On the JavaScript thread.
fn can_run_js(env: sys::napi_env, queue: &Queue) -> bool {
    let Ok(probe) = queue.probe.lock() else { return true };
    let Some(SendPtr(probe)) = probe.as_ref() else { return true };
    let (mut func, mut recv, mut result) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    // SAFETY: a live environment on its JavaScript thread, and the
    // reference made for it in `Queue::of`.
    unsafe {
        sys::napi_get_reference_value(env, *probe, &mut func) == sys::Status::napi_ok
            && !func.is_null()
            && sys::napi_get_undefined(env, &mut recv) == sys::Status::napi_ok
            && sys::napi_call_function(env, recv, func, 0, ptr::null(), &mut result) == sys::Status::napi_ok
    }
}

/// The probe's body: does nothing.
unsafe extern "C" fn nothing(_env: sys::napi_env, _info: sys::napi_callback_info) -> sys::napi_value {
    ptr::null_mut()
}

/// Settles one Promise with `outcome`, on the JavaScript thread of `env`.
fn settle_one(env: sys::napi_env, deferred: SendPtr<sys::napi_deferred__>, outcome: Outcome) {
    // SAFETY: a live environment on its JavaScript thread.
    let js = unsafe { Env::from_raw(env) };
    // Settling never unwinds into Node: the outcome converts values and
    // errors only, and a failed conversion rejects.
    let settled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| outcome(js)))
        .unwrap_or_else(|_| Err(napi::Error::from_reason("settling a Promise panicked (a bug in zklock)")));
    // SAFETY: the deferred of this Promise, settled once, here.
    unsafe {
        match settled {
            Ok(value) => sys::napi_resolve_deferred(env, deferred.0, value),
            Err(e) => {
                let reason = <napi::Error as ToNapiValue>::to_napi_value(env, e).unwrap_or_else(|_| {
                    let mut undefined = ptr::null_mut();
                    sys::napi_get_undefined(env, &mut undefined);
                    undefined
                });
                sys::napi_reject_deferred(env, deferred.0, reason)
            },
        };
    }
}

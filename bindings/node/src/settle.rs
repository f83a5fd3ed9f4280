//! Promises settled from any thread, guarded against the teardown of their
//! Node environment.
//!
//! napi-rs 2's `JsDeferred` settles through a threadsafe function that it
//! calls from whatever thread settles. When the environment is torn down
//! first (a `worker_threads` Worker terminated while an acquire is in
//! flight), Node frees that function with the environment, and the late
//! call aborts the whole process (SIGABRT in `uv_mutex_lock` under
//! `napi_call_threadsafe_function`; found by an outside test, and
//! napi-rs#2460 upstream, fixed only in napi-rs 3). [`Deferred`] is the
//! same Promise with a guard: an environment cleanup hook, added after the
//! threadsafe function (so run before Node's own teardown of it), takes the
//! function and aborts it; a settle takes it too, under the same lock, so
//! exactly one of them uses it and the other finds nothing.
//!
//! Threads: [`Deferred::new`] and the callbacks run on the JavaScript
//! thread of the environment; [`Deferred::settle`] on any thread.

use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::ToNapiValue;
use napi::{sys, Env, JsObject, NapiRaw, NapiValue};

/// What settles a Promise, run on the JavaScript thread: its value, or the
/// error it rejects with.
pub(crate) type Outcome = Box<dyn FnOnce(Env) -> napi::Result<sys::napi_value> + Send>;

/// The pending side of a Promise made by [`Deferred::new`]. Dropping it
/// unsettled leaves the Promise pending but lets Node exit.
pub(crate) struct Deferred {
    shared: Arc<Shared>,
    deferred: SendPtr<sys::napi_deferred__>,
}

struct Shared {
    /// The threadsafe function, until a settle or the teardown takes it.
    tsfn: Mutex<Option<SendPtr<sys::napi_threadsafe_function__>>>,
    /// The cleanup hook still holds its reference to this (an `Arc` made
    /// raw); the one that clears this, on the JavaScript thread, drops it.
    hooked: AtomicBool,
}

/// A raw napi pointer that the guard makes safe to move between threads.
struct SendPtr<T>(*mut T);

// SAFETY: the pointers are napi handles: a threadsafe function is meant to
// be used from any thread (the lock keeps it from being used once torn
// down), and a deferred is only used on the JavaScript thread, in
// `call_js`.
unsafe impl<T> Send for SendPtr<T> {}

/// One settle on its way to the JavaScript thread.
struct Settle {
    deferred: SendPtr<sys::napi_deferred__>,
    outcome: Outcome,
    shared: Arc<Shared>,
}

fn check(status: sys::napi_status) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(napi::Status::from(status), "making a Promise".to_owned()))
    }
}

impl Deferred {
    /// A new Promise and its pending side. On the JavaScript thread.
    pub(crate) fn new(env: &Env) -> napi::Result<(Deferred, JsObject)> {
        let raw = env.raw();
        let (mut deferred, mut promise) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: `raw` is the live environment of this call.
        check(unsafe { sys::napi_create_promise(raw, &mut deferred, &mut promise) })?;
        let name = env.create_string("zklock")?;
        let mut tsfn = ptr::null_mut();
        // SAFETY: as above; no JavaScript function (call_js settles), one
        // thread holding it (released by the settle or the teardown).
        check(unsafe {
            sys::napi_create_threadsafe_function(
                raw,
                ptr::null_mut(),
                ptr::null_mut(),
                name.raw(),
                0,
                1,
                ptr::null_mut(),
                None,
                ptr::null_mut(),
                Some(call_js),
                &mut tsfn,
            )
        })?;
        let shared = Arc::new(Shared { tsfn: Mutex::new(Some(SendPtr(tsfn))), hooked: AtomicBool::new(true) });
        let hook = Arc::into_raw(shared.clone()) as *mut c_void;
        // SAFETY: `hook` is a live `Arc<Shared>` reference, given back by
        // `on_teardown` or by `call_js`.
        if let Err(e) = check(unsafe { sys::napi_add_env_cleanup_hook(raw, Some(on_teardown), hook) }) {
            // SAFETY: the hook was not added: take its reference back.
            drop(unsafe { Arc::from_raw(hook as *const Shared) });
            shared.hooked.store(false, Ordering::Release);
            return Err(e);
        }
        // SAFETY: `promise` is the value napi_create_promise made.
        let promise = unsafe { JsObject::from_raw_unchecked(raw, promise) };
        Ok((Deferred { shared, deferred: SendPtr(deferred) }, promise))
    }

    /// Settles the Promise with `outcome` (run on the JavaScript thread),
    /// unless its environment is gone. Any thread.
    pub(crate) fn settle(self, outcome: Outcome) {
        let Ok(mut slot) = self.shared.tsfn.lock() else { return };
        let Some(SendPtr(tsfn)) = slot.take() else { return };
        let settle = Settle { deferred: SendPtr(self.deferred.0), outcome, shared: self.shared.clone() };
        let data = Box::into_raw(Box::new(settle)) as *mut c_void;
        // SAFETY: `tsfn` is live: it was in the slot, and the teardown
        // takes it under this lock before Node frees it.
        unsafe {
            if sys::napi_call_threadsafe_function(tsfn, data, sys::ThreadsafeFunctionCallMode::nonblocking)
                != sys::Status::napi_ok
            {
                // Not queued: it will never reach call_js.
                drop(Box::from_raw(data as *mut Settle));
            }
            sys::napi_release_threadsafe_function(tsfn, sys::ThreadsafeFunctionReleaseMode::release);
        }
    }
}

impl Drop for Deferred {
    /// Unsettled (its work was dropped): lets the threadsafe function go,
    /// so that a Promise that will never settle does not keep Node alive.
    fn drop(&mut self) {
        if let Ok(mut slot) = self.shared.tsfn.lock() {
            if let Some(SendPtr(tsfn)) = slot.take() {
                // SAFETY: live, as in `settle`.
                unsafe { sys::napi_release_threadsafe_function(tsfn, sys::ThreadsafeFunctionReleaseMode::release) };
            }
        }
    }
}

/// The environment is being torn down (JavaScript thread): take the
/// threadsafe function before Node frees it, so that no settle uses it.
unsafe extern "C" fn on_teardown(arg: *mut c_void) {
    // SAFETY: `arg` is the reference `Deferred::new` made for the hook;
    // this runs once, and only while `hooked` (call_js removes the hook).
    let shared = unsafe { Arc::from_raw(arg as *const Shared) };
    shared.hooked.store(false, Ordering::Release);
    let taken = shared.tsfn.lock().ok().and_then(|mut slot| slot.take());
    if let Some(SendPtr(tsfn)) = taken {
        // SAFETY: live until Node's own teardown of it, which runs after
        // this hook (hooks run in reverse order of addition).
        unsafe { sys::napi_release_threadsafe_function(tsfn, sys::ThreadsafeFunctionReleaseMode::abort) };
    }
}

/// A settle reaches the JavaScript thread (`env` is null when Node drops
/// the queue at teardown: nothing is settled then).
unsafe extern "C" fn call_js(env: sys::napi_env, _js: sys::napi_value, _context: *mut c_void, data: *mut c_void) {
    // SAFETY: `data` is the `Settle` boxed by `Deferred::settle`, given to
    // this callback exactly once.
    let settle = unsafe { Box::from_raw(data as *mut Settle) };
    if env.is_null() {
        return;
    }
    // SAFETY: a live environment on its JavaScript thread.
    let js = unsafe { Env::from_raw(env) };
    let Settle { deferred, outcome, shared } = *settle;
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
    if shared.hooked.swap(false, Ordering::AcqRel) {
        let hook = Arc::as_ptr(&shared) as *mut c_void;
        // SAFETY: the hook added by `Deferred::new` with this argument;
        // removed, it will not run, so its reference is dropped here.
        unsafe {
            sys::napi_remove_env_cleanup_hook(env, Some(on_teardown), hook);
            drop(Arc::from_raw(hook as *const Shared));
        }
    }
}

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
//! Here every Promise of one environment is settled through one libuv
//! async handle of ours ([`Queue`]), made with the environment's first
//! Promise and closed at its teardown. The outcomes wait in a queue of
//! ours; a settle pushes its outcome and wakes the JavaScript thread with
//! `uv_async_send`, which settles every queued outcome, each in a callback
//! scope of its own (so each settle's continuations run before the next,
//! as `abort.test.js` needs). The handle keeps Node's event loop alive only
//! while a Promise of it is pending.
//!
//! Why not a threadsafe function (as until 2026-11-27): Node's calls it
//! from the settling thread under the function's mutex, and the woken
//! JavaScript thread, scheduled at once on 2 cores, blocked on that mutex
//! (`perf record -e sched:sched_switch`: 0.7 switches per acquire and
//! release, and as many for the settling thread). With the handle, 11.5
//! context switches per uncontended acquire and release instead of 13.1,
//! and a 3 % shorter cycle (6 alternating runs each; 15.1 and 5 % with
//! the function per Promise before df700ec). A function per Promise had
//! also cost its making, a cleanup hook added and removed, and a close
//! queued to the JavaScript thread.
//!
//! The guard: an async environment cleanup hook, which Node runs before
//! its own teardown and waits for, takes the handle out of its slot (so no
//! settle uses it from then on: a settle uses it under the slot's read
//! lock) and closes it; the close's callback frees it and lets Node go on.
//! The hook also drops what is still queued (a guard in it is released) and
//! aborts the work still running for a Promise of the environment
//! ([`Deferred::abortable`]): an acquire nobody can see the end of any more
//! (a terminated worker's, waiting without a timeout) is cancelled and
//! leaves no node, where it kept its client, session and queue node alive
//! for the rest of the process (found by an outside test). Between
//! `worker.terminate()` and the hook, when JavaScript can no longer run, an
//! outcome is dropped rather than settled ([`can_run_js`]): making a
//! guard's object then leaked the guard inside napi-rs.
//!
//! Threads: [`Deferred::new`] and the callbacks run on the JavaScript
//! thread of the environment; [`Deferred::settle`] and the drop of a
//! [`Deferred`] on any thread.

use std::alloc::Layout;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_int, c_void};
use std::future::Future;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use futures_util::future::{AbortHandle, Abortable};

use napi::bindgen_prelude::ToNapiValue;
use napi::{sys, Env, JsObject, NapiRaw, NapiValue};

// libuv, exported by the Node binary that loads the addon (as Node-API's
// own functions are). The handle's memory is ours; its size comes from
// `uv_handle_size`, its data pointer through `uv_handle_{set,get}_data`
// (libuv 1.19, Node 10), so no libuv struct layout is assumed here.
extern "C" {
    fn uv_handle_size(kind: c_int) -> usize;
    fn uv_async_init(event_loop: *mut sys::uv_loop_s, handle: *mut c_void, cb: Option<UvCallback>) -> c_int;
    fn uv_async_send(handle: *mut c_void) -> c_int;
    fn uv_close(handle: *mut c_void, cb: Option<UvCallback>);
    fn uv_ref(handle: *mut c_void);
    fn uv_unref(handle: *mut c_void);
    fn uv_handle_set_data(handle: *mut c_void, data: *mut c_void);
    fn uv_handle_get_data(handle: *const c_void) -> *mut c_void;
}

/// libuv's callback of an async handle, and of its close.
type UvCallback = unsafe extern "C" fn(handle: *mut c_void);

/// `UV_ASYNC` of libuv's `uv_handle_type`.
const UV_ASYNC: c_int = 1;

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
    /// The environment's address (only its JavaScript thread uses it).
    env: usize,
    /// The async handle that wakes the JavaScript thread, until the
    /// teardown takes it. Read-locked by a settle (any thread) around its
    /// `uv_async_send` and by the JavaScript thread's counting, which so
    /// never wait for each other; write-locked only by the teardown.
    wake: RwLock<Option<Handle>>,
    /// Promises made and not yet settled or dropped; the handle keeps the
    /// event loop alive while this is not 0. Only read and written on the
    /// JavaScript thread (a `Mutex` only to be `Sync`).
    pending: Mutex<usize>,
    /// The outcomes on their way to the JavaScript thread.
    messages: Mutex<VecDeque<Message>>,
    /// The work of the pending Promises, to abort at the teardown (`None`
    /// once it has run), by the Promise's id.
    running: Mutex<Option<HashMap<u64, AbortHandle>>>,
    /// The next Promise's id.
    next_id: AtomicU64,
    /// A reference to a native function that does nothing, called before a
    /// settle to learn whether JavaScript can still run (see `on_wake`).
    probe: Mutex<Option<SendPtr<sys::napi_ref__>>>,
    /// The async context the settles run in (as a threadsafe function's
    /// calls do: async hooks see a resource named `zklock`), and a
    /// reference to its resource object.
    context: Mutex<Option<(SendPtr<sys::napi_async_context__>, SendPtr<sys::napi_ref__>)>>,
    /// Given back to Node once the handle is closed (teardown).
    remove_hook: Mutex<Option<SendPtr<sys::napi_async_cleanup_hook_handle__>>>,
}

thread_local! {
    /// The queue of the environment whose JavaScript thread this is, until
    /// its teardown.
    static QUEUE: RefCell<Option<Arc<Queue>>> = const { RefCell::new(None) };
}

/// A raw napi pointer that the guard makes safe to move between threads.
struct SendPtr<T>(*mut T);

// SAFETY: the pointers are napi handles used only on the JavaScript
// thread (a deferred, references, the async context, the environment),
// whatever thread carries them there.
unsafe impl<T> Send for SendPtr<T> {}

/// The libuv async handle of a queue, shared by the threads that settle.
struct Handle(*mut c_void);

// SAFETY: `uv_async_send` is the one libuv call that may be made from any
// thread; every other use is on the JavaScript thread, and the lock around
// the handle keeps it from being used once the teardown has taken it.
unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

impl Handle {
    /// The memory layout of a `uv_async_t`.
    fn layout() -> Option<Layout> {
        // SAFETY: a pure query of libuv.
        Layout::from_size_align(unsafe { uv_handle_size(UV_ASYNC) }, 16).ok()
    }
}

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

fn failed(what: &str) -> napi::Error {
    napi::Error::from_reason(format!("making a Promise: {what} failed"))
}

impl Queue {
    /// The queue of `env`, made with its async handle and teardown hook the
    /// first time. On the JavaScript thread.
    fn of(env: &Env) -> napi::Result<Arc<Queue>> {
        let raw = env.raw();
        let known = QUEUE.with(|q| q.borrow().as_ref().filter(|q| q.env == raw as usize).cloned());
        if let Some(queue) = known {
            return Ok(queue);
        }
        let queue = Arc::new(Queue {
            env: raw as usize,
            wake: RwLock::new(None),
            pending: Mutex::new(0),
            messages: Mutex::new(VecDeque::new()),
            running: Mutex::new(Some(HashMap::new())),
            next_id: AtomicU64::new(0),
            probe: Mutex::new(None),
            context: Mutex::new(None),
            remove_hook: Mutex::new(None),
        });
        let name = env.create_string("zklock")?;
        let resource = env.create_object()?;
        let (mut probe, mut probe_ref) = (ptr::null_mut(), ptr::null_mut());
        let (mut resource_ref, mut context, mut event_loop) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
        // SAFETY: `raw` is the live environment of this call; the function
        // has no data; the references live as long as the environment (or
        // until the teardown deletes them).
        unsafe {
            if sys::napi_create_function(raw, c"zklockProbe".as_ptr(), 11, Some(nothing), ptr::null_mut(), &mut probe)
                == sys::Status::napi_ok
                && sys::napi_create_reference(raw, probe, 1, &mut probe_ref) == sys::Status::napi_ok
            {
                if let Ok(mut slot) = queue.probe.lock() {
                    *slot = Some(SendPtr(probe_ref));
                }
            }
            check(sys::napi_create_reference(raw, resource.raw(), 1, &mut resource_ref))?;
            if let Err(e) = check(sys::napi_async_init(raw, resource.raw(), name.raw(), &mut context)) {
                sys::napi_delete_reference(raw, resource_ref);
                return Err(e);
            }
            if let Ok(mut slot) = queue.context.lock() {
                *slot = Some((SendPtr(context), SendPtr(resource_ref)));
            }
            check(sys::napi_get_uv_event_loop(raw, &mut event_loop))?;
        }
        let layout = Handle::layout().ok_or_else(|| failed("sizing libuv's async handle"))?;
        // SAFETY: a layout of non-zero size (libuv's handle).
        let handle = unsafe { std::alloc::alloc(layout) } as *mut c_void;
        if handle.is_null() {
            return Err(failed("allocating libuv's async handle"));
        }
        // SAFETY: `handle` is fresh memory of the handle's size, initialised
        // here on the loop's own thread.
        if unsafe { uv_async_init(event_loop, handle, Some(on_wake)) } != 0 {
            // SAFETY: allocated above with this layout, never initialised.
            unsafe { std::alloc::dealloc(handle as *mut u8, layout) };
            return Err(failed("uv_async_init"));
        }
        // SAFETY: the handle was just initialised on this thread. Its data
        // is its reference to the queue, given back by `on_closed`. Nothing
        // is pending yet: it must not keep Node alive.
        unsafe {
            uv_handle_set_data(handle, Arc::into_raw(queue.clone()) as *mut c_void);
            uv_unref(handle);
        }
        if let Ok(mut slot) = queue.wake.write() {
            *slot = Some(Handle(handle));
        }
        let hook = Arc::into_raw(queue.clone()) as *mut c_void;
        let mut remove = ptr::null_mut();
        // SAFETY: `hook` is a live `Arc<Queue>` reference, given back by
        // `on_teardown`.
        if let Err(e) = check(unsafe { sys::napi_add_async_cleanup_hook(raw, Some(on_teardown), hook, &mut remove) }) {
            // SAFETY: the hook was not added: take its reference back, and
            // close the handle (out of the slot first).
            unsafe {
                drop(Arc::from_raw(hook as *const Queue));
                drop(queue.wake.write().map(|mut slot| slot.take()));
                uv_close(handle, Some(on_closed));
            }
            return Err(e);
        }
        if let Ok(mut slot) = queue.remove_hook.lock() {
            *slot = Some(SendPtr(remove));
        }
        QUEUE.with(|q| *q.borrow_mut() = Some(queue.clone()));
        Ok(queue)
    }

    /// Sends `message` to the JavaScript thread, unless the environment is
    /// gone (then it is dropped here). Any thread.
    fn send(&self, message: Message) {
        let Ok(slot) = self.wake.read() else { return };
        let Some(Handle(handle)) = slot.as_ref() else { return };
        if let Ok(mut messages) = self.messages.lock() {
            messages.push_back(message);
        }
        // SAFETY: the handle is live: it is in the slot, and the teardown
        // takes it under this lock before closing it. Sends made before
        // the JavaScript thread runs `on_wake` are merged into one call.
        unsafe { uv_async_send(*handle) };
    }

    /// Counts a Promise made (`+1`) or done with (`-1`) and keeps the event
    /// loop alive exactly while some are pending. On the JavaScript thread.
    fn count(&self, delta: isize) {
        let Ok(mut pending) = self.pending.lock() else { return };
        let before = *pending;
        *pending = before.saturating_add_signed(delta);
        if (before == 0) == (*pending == 0) {
            return;
        }
        let Ok(slot) = self.wake.read() else { return };
        let Some(Handle(handle)) = slot.as_ref() else { return };
        // SAFETY: live (in the slot, under its lock), on its loop's thread.
        unsafe {
            if before == 0 {
                uv_ref(*handle);
            } else {
                uv_unref(*handle);
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
        queue.count(1);
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

/// The environment is being torn down (its JavaScript thread; an async
/// cleanup hook, so that Node runs its loop until the handle is closed):
/// take the handle, so that no settle uses it, and close it.
unsafe extern "C" fn on_teardown(remove: sys::napi_async_cleanup_hook_handle, arg: *mut c_void) {
    // SAFETY: `arg` is the reference `Queue::of` made for the hook; this
    // runs once.
    let queue = unsafe { Arc::from_raw(arg as *const Queue) };
    QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        if q.as_ref().is_some_and(|known| Arc::ptr_eq(known, &queue)) {
            *q = None;
        }
    });
    let taken = queue.wake.write().ok().and_then(|mut slot| slot.take());
    // No settle is sent from here on: drop what is queued (a guard in an
    // outcome is released by its drop) and end the work still running.
    drop(queue.messages.lock().map(|mut m| std::mem::take(&mut *m)));
    let running = queue.running.lock().ok().and_then(|mut r| r.take()).unwrap_or_default();
    for handle in running.into_values() {
        handle.abort();
    }
    let env = queue.env as sys::napi_env;
    if let Some((context, resource)) = queue.context.lock().ok().and_then(|mut c| c.take()) {
        // SAFETY: made in `Queue::of` for this environment, on this thread.
        unsafe {
            sys::napi_async_destroy(env, context.0);
            sys::napi_delete_reference(env, resource.0);
        }
    }
    match taken {
        // SAFETY: the handle is live and no longer in the slot: closed once,
        // here; `on_closed` gives the hook back to Node.
        Some(Handle(handle)) => unsafe { uv_close(handle, Some(on_closed)) },
        None => {
            // SAFETY: the handle given to this hook by Node, given back once.
            unsafe { sys::napi_remove_async_cleanup_hook(remove) };
        },
    }
}

/// The async handle is closed: its memory and its reference to the queue
/// go, and the teardown hook is given back to Node. On the JavaScript
/// thread.
unsafe extern "C" fn on_closed(handle: *mut c_void) {
    // SAFETY: the handle's data is the reference `Queue::of` gave it.
    let queue = unsafe { Arc::from_raw(uv_handle_get_data(handle) as *const Queue) };
    if let Some(layout) = Handle::layout() {
        // SAFETY: allocated in `Queue::of` with this layout; libuv is done
        // with it once its close callback runs.
        unsafe { std::alloc::dealloc(handle as *mut u8, layout) };
    }
    if let Some(remove) = queue.remove_hook.lock().ok().and_then(|mut r| r.take()) {
        // SAFETY: the handle Node gave the hook (added in `Queue::of`).
        unsafe { sys::napi_remove_async_cleanup_hook(remove.0) };
    }
}

/// The JavaScript thread is woken (one call for any number of sends):
/// settles every message queued, oldest first.
unsafe extern "C" fn on_wake(handle: *mut c_void) {
    // SAFETY: the handle's data is its reference to the queue, given back
    // only by `on_closed`, after the last call of this.
    let queue = unsafe { &*(uv_handle_get_data(handle) as *const Queue) };
    let env = queue.env as sys::napi_env;
    while let Some(Message { deferred, outcome }) = queue.messages.lock().ok().and_then(|mut m| m.pop_front()) {
        queue.count(-1);
        let Some(outcome) = outcome else { continue };
        let mut scope = ptr::null_mut();
        // SAFETY: on the environment's JavaScript thread, inside its loop.
        if unsafe { sys::napi_open_handle_scope(env, &mut scope) } != sys::Status::napi_ok {
            // JavaScript cannot run: the outcome is dropped (see below).
            continue;
        }
        // After `worker.terminate()` JavaScript cannot run while this
        // handle is still served: making a guard's object then fails
        // inside napi-rs, which leaks the guard (its node stayed held for
        // the rest of the process: outside test, round 7). The outcome is
        // dropped instead (a guard in it is released).
        if can_run_js(env, queue) {
            settle_in_scope(env, queue, deferred, outcome);
        }
        // SAFETY: the scope opened above.
        unsafe { sys::napi_close_handle_scope(env, scope) };
    }
}

/// Settles one Promise inside a callback scope of the queue's async
/// context. Closing the scope runs the microtasks (and `process.nextTick`
/// callbacks) the settle queued, so that each settle's continuations run
/// before the next is settled, as with a call of a threadsafe function
/// per Promise (an abort made in a release's continuation must come
/// before a grant that follows it; `abort.test.js`).
fn settle_in_scope(env: sys::napi_env, queue: &Queue, deferred: SendPtr<sys::napi_deferred__>, outcome: Outcome) {
    let context = queue.context.lock().ok().and_then(|c| c.as_ref().map(|(c, r)| (c.0, r.0)));
    let Some((context, resource_ref)) = context else { return };
    let (mut resource, mut scope) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: on the environment's JavaScript thread, inside a handle
    // scope; the context and reference were made for this environment.
    unsafe {
        if sys::napi_get_reference_value(env, resource_ref, &mut resource) != sys::Status::napi_ok
            || sys::napi_open_callback_scope(env, resource, context, &mut scope) != sys::Status::napi_ok
        {
            return;
        }
    }
    settle_one(env, deferred, outcome);
    // SAFETY: as above; an exception the settle left pending is reported
    // as uncaught, as Node does for a threadsafe function's call.
    unsafe {
        let mut pending = false;
        if sys::napi_is_exception_pending(env, &mut pending) == sys::Status::napi_ok && pending {
            let mut error = ptr::null_mut();
            if sys::napi_get_and_clear_last_exception(env, &mut error) == sys::Status::napi_ok {
                sys::napi_fatal_exception(env, error);
            }
        }
        sys::napi_close_callback_scope(env, scope);
    }
}

/// Whether JavaScript can run in `env` now: a call of the queue's native
/// function that does nothing succeeds. On the JavaScript thread, inside a
/// handle scope.
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

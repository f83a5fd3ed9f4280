//! # zklock for Node.js
//!
//! The napi-rs addon behind the npm package `zklock`: distributed locks on
//! Apache ZooKeeper, with the Rust core `zklock-core` linked in directly.
//!
//! Threads: every call that may wait (connect, acquire, release,
//! participants, close) runs the blocking core call on a thread of its own
//! (never on libuv's small thread pool, never on the JavaScript thread) and
//! settles a Promise through a napi threadsafe function. State-change
//! callbacks come from the client's event thread the same way.
//!
//! Errors: [`zk_error`] is the one place that maps the core's `ErrorKind` to
//! a JavaScript error (`code` = the kind's name, e.g. `"TIMEOUT"`); the
//! package's `index.js` turns those into `ZkLockError`. A number out of range
//! (a timeout) is the core's `INVALID_ARGUMENT`, by the core's one rule for
//! every language; a value of the wrong type is napi's conversion error,
//! which `index.js` turns into `TypeError` (`code: "ERR_INVALID_ARG_TYPE"`).
//!
//! Panics: no panic may unwind into Node (that aborts the process). Every
//! `#[napi]` entry point has `catch_unwind` (a panic throws an error with
//! `code: "GenericFailure"`, which `index.js` turns into `ZkLockError`
//! `INTERNAL`); the work of a Promise runs under `catch_unwind` on its thread
//! and rejects with `INTERNAL`; callbacks into JavaScript and the drops that
//! run in GC finalizers do not panic (see [`StateCallback`]).

#![deny(clippy::unwrap_used)]
// `#[napi]` generates undocumented glue items next to ours (registration
// functions, constructors); every item written here has its doc comment,
// which napi turns into the JSDoc of index.d.ts.
#![allow(missing_docs)]
// The crate's docs describe its inner workings (its public API is the
// JavaScript one), so they link to private items.
#![allow(rustdoc::private_intra_doc_links)]

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use napi::bindgen_prelude::{BigInt, Buffer, ToNapiValue};
use napi::threadsafe_function::{ErrorStrategy, ThreadSafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, JsFunction, JsObject, JsRangeError, JsTypeError, JsUnknown, Status};
use napi_derive::napi;
use zklock_core as core;

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// THE mapping of the core's error kinds: a JavaScript `Error` whose `code`
/// is the kind's stable name (`"TIMEOUT"`, `"LOCK_LOST"`, ... the C enum
/// names) and whose message is the core's message. `index.js` gives it the
/// prototype of `ZkLockError`.
fn zk_error(env: &Env, err: &core::Error) -> napi::Error {
    js_error_with_code(env, err.kind().name(), err.message())
}

/// A plain JavaScript `Error` with `code`, thrown or used as a rejection.
fn js_error_with_code(env: &Env, code: &str, message: &str) -> napi::Error {
    let build = || -> napi::Result<JsUnknown> {
        let mut obj = env.create_error(napi::Error::new(Status::GenericFailure, message.to_owned()))?;
        obj.set_named_property("code", env.create_string(code)?)?;
        Ok(obj.into_unknown())
    };
    match build() {
        Ok(v) => napi::Error::from(v),
        Err(e) => e,
    }
}

/// A `RangeError` (`code: "ERR_OUT_OF_RANGE"`) for a value out of range.
fn range_error(env: &Env, message: String) -> napi::Error {
    let build = || -> napi::Result<JsUnknown> {
        let v = JsRangeError::from(napi::Error::new(Status::InvalidArg, message.clone())).into_unknown(*env);
        let mut obj: JsObject = v.coerce_to_object()?;
        obj.set_named_property("code", env.create_string("ERR_OUT_OF_RANGE")?)?;
        Ok(obj.into_unknown())
    };
    build().map(napi::Error::from).unwrap_or_else(|e| e)
}

/// A `TypeError` with `code` (Node's codes, e.g. `"ERR_ILLEGAL_CONSTRUCTOR"`).
fn type_error(env: &Env, code: &str, message: &str) -> napi::Error {
    let build = || -> napi::Result<JsUnknown> {
        let v = JsTypeError::from(napi::Error::new(Status::InvalidArg, message.to_owned())).into_unknown(*env);
        let mut obj: JsObject = v.coerce_to_object()?;
        obj.set_named_property("code", env.create_string(code)?)?;
        Ok(obj.into_unknown())
    };
    build().map(napi::Error::from).unwrap_or_else(|e| e)
}

/// The error of `new Client()`, `new Lock()`, `new Guard()`: these objects
/// come only from the package's own functions.
fn illegal_constructor(env: &Env, class: &str, instead: &str) -> napi::Error {
    type_error(env, "ERR_ILLEGAL_CONSTRUCTOR", &format!("{class} has no public constructor: use {instead}"))
}

/// The names of every error kind of the core, in code order: the values
/// `ZkLockError.code` can take.
#[napi(ts_return_type = "Array<ZkLockErrorCode>", catch_unwind)]
pub fn error_codes() -> Vec<String> {
    core::ErrorKind::ALL.iter().map(|k| k.name().to_owned()).collect()
}

// ---------------------------------------------------------------------------
// Promises settled from our own threads
// ---------------------------------------------------------------------------

/// Runs the blocking `work` on a thread of its own and returns a Promise
/// that settles with its result on the JavaScript thread. A core error
/// rejects through [`zk_error`]; a panic rejects with `INTERNAL`.
///
/// A thread per call in progress keeps long waits (an acquire may wait for
/// hours) off libuv's thread pool, whose four threads also serve `fs` and
/// `dns`. The threads come from [`run_on_call_thread`], which reuses idle
/// ones: starting a thread for every short call cost more than the call.
fn spawn_promise<T, F>(env: &Env, name: &str, work: F) -> napi::Result<JsObject>
where
    T: ToNapiValue + Send + 'static,
    F: FnOnce() -> core::Result<T> + Send + 'static,
{
    let (deferred, promise) = env.create_deferred()?;
    let what = name.to_owned();
    let spawned = run_on_call_thread(Box::new(move || {
        let result = catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|_| {
            Err(core::Error::new(core::ErrorKind::Internal, format!("{what} panicked (a bug in zklock)")))
        });
        deferred.resolve(move |env: Env| match result {
            Ok(v) => Ok(v),
            Err(e) => Err(zk_error(&env, &e)),
        });
    }));
    match spawned {
        Ok(_) => Ok(promise),
        Err(e) => {
            Err(zk_error(env, &core::Error::new(core::ErrorKind::Internal, format!("cannot start a thread: {e}"))))
        },
    }
}

type CallJob = Box<dyn FnOnce() + Send>;

/// How long a call thread waits for another call before it ends.
const CALL_THREAD_IDLE: Duration = Duration::from_secs(30);

/// Call threads waiting for work: an id and where to send the job.
static IDLE_CALL_THREADS: std::sync::Mutex<Vec<(u64, std::sync::mpsc::Sender<CallJob>)>> =
    std::sync::Mutex::new(Vec::new());
static NEXT_CALL_THREAD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Runs `job` on an idle call thread, or on a new one (named
/// `zklock-call`) if none is idle. There are as many threads as calls in
/// progress; each ends after [`CALL_THREAD_IDLE`] without work.
fn run_on_call_thread(job: CallJob) -> std::io::Result<()> {
    let idle = IDLE_CALL_THREADS.lock().ok().and_then(|mut v| v.pop());
    if let Some((_, tx)) = idle {
        // Popped under the lock, so that thread cannot end before it gets
        // this job (see below): the send cannot fail.
        if let Err(std::sync::mpsc::SendError(job)) = tx.send(job) {
            return run_on_call_thread(job);
        }
        return Ok(());
    }
    std::thread::Builder::new().name("zklock-call".into()).spawn(move || {
        let id = NEXT_CALL_THREAD.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut job = job;
        loop {
            // A job catches its own panics (spawn_promise); this keeps the
            // thread's bookkeeping right should anything else panic.
            let _ = catch_unwind(AssertUnwindSafe(job));
            let (tx, rx) = std::sync::mpsc::channel::<CallJob>();
            match IDLE_CALL_THREADS.lock() {
                Ok(mut idle) => idle.push((id, tx)),
                Err(_) => return,
            }
            job = match rx.recv_timeout(CALL_THREAD_IDLE) {
                Ok(j) => j,
                Err(_) => {
                    // Leave only if no caller took our sender meanwhile;
                    // one that did is about to send a job: wait for it.
                    let still_idle = IDLE_CALL_THREADS.lock().map(|mut idle| {
                        let before = idle.len();
                        idle.retain(|(i, _)| *i != id);
                        idle.len() != before
                    });
                    if still_idle.unwrap_or(true) {
                        return;
                    }
                    match rx.recv() {
                        Ok(j) => j,
                        Err(_) => return,
                    }
                },
            };
        }
    })?;
    Ok(())
}

/// Says which JavaScript option, in milliseconds, a core error about a
/// timeout (in seconds) was about.
fn in_millis(option: &str, ms: f64, err: core::Error) -> core::Error {
    core::Error::new(err.kind(), format!("{option} = {ms} ms: {}", err.message()))
}

/// A client option's timeout in milliseconds, by the core's one rule
/// ([`core::option_timeout_from_secs`]): absent keeps the default; NaN,
/// `<= 0`, infinite or more than `max` is `INVALID_ARGUMENT` naming
/// `option`.
fn option_timeout(option: &str, core_name: &str, ms: Option<f64>, max: Duration) -> core::Result<Option<Duration>> {
    let Some(ms) = ms else { return Ok(None) };
    core::option_timeout_from_secs(core_name, ms_to_secs(ms), max).map(Some).map_err(|e| in_millis(option, ms, e))
}

/// Milliseconds to seconds, keeping a nonzero number nonzero (the core's
/// rules look at the sign: a tiny negative must stay negative, a tiny
/// positive positive, where dividing would underflow to zero).
fn ms_to_secs(ms: f64) -> f64 {
    match ms / 1000.0 {
        secs if secs == 0.0 && ms != 0.0 => f64::MIN_POSITIVE.copysign(ms),
        secs => secs,
    }
}

/// An acquire timeout in milliseconds, by the core's one rule
/// ([`core::acquire_timeout_from_secs`]): absent, `Infinity` or more than
/// [`core::FOREVER`] waits without limit (`None`), `0` tries once, NaN or
/// negative is `INVALID_ARGUMENT`.
fn acquire_timeout(ms: Option<f64>) -> core::Result<Option<Duration>> {
    let Some(ms) = ms else { return Ok(None) };
    core::acquire_timeout_from_secs(ms_to_secs(ms)).map_err(|e| in_millis("timeoutMs", ms, e))
}

// ---------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------

/// Options of `Client.connect`.
#[napi(object)]
pub struct ConnectOptions {
    /// The servers: `"host:port[,host:port...][/chroot]"`.
    pub hosts: String,
    /// The session timeout to ask the server for, in milliseconds (default
    /// 10000; the server may negotiate another within its bounds). Held
    /// locks are lost when the session expires.
    /// Must be > 0 and at most 3600000 (one hour), else `INVALID_ARGUMENT`
    /// (README, "Timeouts").
    pub session_timeout_ms: Option<f64>,
    /// How long `connect` may try before it fails with `CONNECTION_LOSS`, in
    /// milliseconds (default 15000).
    /// Must be > 0 and at most 86400000 (one day), else `INVALID_ARGUMENT`
    /// (README, "Timeouts").
    pub connect_timeout_ms: Option<f64>,
    /// The longest a single ZooKeeper request may take, in milliseconds
    /// (default 10000). Bounds `release()`, `participants()` and `close()`.
    /// Must be > 0 and at most 86400000 (one day), else `INVALID_ARGUMENT`
    /// (README, "Timeouts").
    pub operation_timeout_ms: Option<f64>,
}

/// A connection (one ZooKeeper session) to an ensemble, the factory of locks.
///
/// Make one with `await Client.connect({ hosts })`. Locks and guards keep
/// the session alive; `await client.close()` ends it (every lock held
/// through it is lost).
#[napi]
pub struct Client {
    client: core::Client,
}

#[napi]
impl Client {
    /// Not callable: throws `TypeError` `ERR_ILLEGAL_CONSTRUCTOR` (use
    /// `Client.connect()`).
    #[napi(constructor, skip_typescript, catch_unwind)]
    pub fn new_from_js(env: Env) -> napi::Result<Self> {
        Err(illegal_constructor(&env, "Client", "Client.connect()"))
    }

    /// Connects to ZooKeeper and opens a session.
    ///
    /// Rejects with `ZkLockError` `INVALID_ARGUMENT` / `INVALID_PATH` for a
    /// malformed connect string, `CONNECTION_LOSS` when no server answered
    /// within `connectTimeoutMs`. Throws `ZkLockError` `INVALID_ARGUMENT`
    /// for a timeout out of range, `TypeError` for an option of the wrong
    /// type.
    ///
    /// (Exposed to JavaScript as `Client.connect` by `index.js`, which
    /// converts its errors.)
    #[napi(js_name = "_connect", skip_typescript, catch_unwind)]
    pub fn connect(env: Env, options: ConnectOptions) -> napi::Result<JsObject> {
        let timeouts = || -> core::Result<_> {
            Ok((
                option_timeout(
                    "sessionTimeoutMs",
                    "session timeout",
                    options.session_timeout_ms,
                    core::MAX_SESSION_TIMEOUT,
                )?,
                option_timeout(
                    "connectTimeoutMs",
                    "connect timeout",
                    options.connect_timeout_ms,
                    core::MAX_OPTION_TIMEOUT,
                )?,
                option_timeout(
                    "operationTimeoutMs",
                    "operation timeout",
                    options.operation_timeout_ms,
                    core::MAX_OPTION_TIMEOUT,
                )?,
            ))
        };
        let (session, connect, operation) = timeouts().map_err(|e| zk_error(&env, &e))?;
        let mut opts = core::ClientOptions::new(options.hosts);
        if let Some(d) = session {
            opts = opts.session_timeout(d);
        }
        if let Some(d) = connect {
            opts = opts.connect_timeout(d);
        }
        if let Some(d) = operation {
            opts = opts.operation_timeout(d);
        }
        spawn_promise(&env, "zklock-connect", move || core::Client::connect(opts).map(|client| Client { client }))
    }

    /// An exclusive lock on `path` (compatible with Curator's
    /// `InterProcessMutex`). Throws `ZkLockError` `INVALID_PATH` for a bad
    /// path, `CLOSED` after `close()`.
    #[napi(catch_unwind)]
    pub fn lock(&self, env: Env, path: String) -> napi::Result<Lock> {
        let lock = self.client.lock(&path).map_err(|e| zk_error(&env, &e))?;
        Ok(Lock::new(LockRef::Plain(Arc::new(lock))))
    }

    /// The read (shared) side of a read/write lock on `path`, as an
    /// independent handle (Curator `InterProcessReadWriteLock.readLock()`
    /// compatible). Throws like `lock()`.
    #[napi(catch_unwind)]
    pub fn read_lock(&self, env: Env, path: String) -> napi::Result<Lock> {
        let lock = self.client.read_lock(&path).map_err(|e| zk_error(&env, &e))?;
        Ok(Lock::new(LockRef::Plain(Arc::new(lock))))
    }

    /// The write (exclusive) side of a read/write lock on `path`, as an
    /// independent handle. Throws like `lock()`.
    #[napi(catch_unwind)]
    pub fn write_lock(&self, env: Env, path: String) -> napi::Result<Lock> {
        let lock = self.client.write_lock(&path).map_err(|e| zk_error(&env, &e))?;
        Ok(Lock::new(LockRef::Plain(Arc::new(lock))))
    }

    /// A read/write lock pair on `path` whose sides know each other:
    /// acquiring `read` while holding `write` is an immediate downgrade;
    /// acquiring `write` while holding only `read` rejects with
    /// `WOULD_DEADLOCK`. Throws like `lock()`.
    #[napi(catch_unwind)]
    pub fn read_write_lock(&self, env: Env, path: String) -> napi::Result<ReadWriteLock> {
        let rw = self.client.read_write_lock(&path, core::LockOptions::default()).map_err(|e| zk_error(&env, &e))?;
        let rw = Arc::new(rw);
        Ok(ReadWriteLock { read: Lock::new(LockRef::Read(rw.clone())), write: Lock::new(LockRef::Write(rw)), path })
    }

    /// The participants of the lock at `path` in queue order (holders
    /// first), including other libraries' nodes. An absent path has none.
    /// Rejects with `INVALID_PATH`, `CLOSED`, `CONNECTION_LOSS`, `TIMEOUT`.
    #[napi(ts_return_type = "Promise<Array<Participant>>", catch_unwind)]
    pub fn participants(&self, env: Env, path: String) -> napi::Result<JsObject> {
        let client = self.client.clone();
        spawn_promise(&env, "zklock-participants", move || {
            let list = client.participants(&path)?;
            Ok(list
                .into_iter()
                .map(|p| Participant {
                    name: p.name,
                    sequence: p.sequence,
                    kind: match p.kind {
                        core::NodeKind::Reader => "READER".to_owned(),
                        core::NodeKind::Writer => "WRITER".to_owned(),
                    },
                    holds: p.holds,
                    data: p.data.into(),
                    session_id: BigInt::from(p.session_id),
                })
                .collect::<Vec<_>>())
        })
    }

    /// The id of the current ZooKeeper session. Throws `CLOSED` after
    /// `close()`.
    #[napi(catch_unwind)]
    pub fn session_id(&self, env: Env) -> napi::Result<BigInt> {
        self.client.session_id().map(BigInt::from).map_err(|e| zk_error(&env, &e))
    }

    /// Whether `close()` was called.
    #[napi(getter, catch_unwind)]
    pub fn closed(&self) -> bool {
        self.client.is_closed()
    }

    /// Closes the session: every lock held through this client is lost
    /// (its nodes go with the session) and waiting acquires reject with
    /// `CLOSED`. Idempotent. Waits up to the operation timeout for the
    /// server to confirm.
    #[napi(ts_return_type = "Promise<void>", catch_unwind)]
    pub fn close(&self, env: Env) -> napi::Result<JsObject> {
        let client = self.client.clone();
        spawn_promise(&env, "zklock-close", move || {
            client.close();
            Ok(())
        })
    }
}

/// A lock participant as seen in the queue of a lock path.
#[napi(object, object_from_js = false)]
pub struct Participant {
    /// Child name, e.g. `_c_<uuid>-lock-0000000003`.
    pub name: String,
    /// The sequence number the server appended.
    pub sequence: i64,
    /// `"READER"` or `"WRITER"`.
    #[napi(ts_type = "'READER' | 'WRITER'")]
    pub kind: String,
    /// Whether this participant holds the lock now.
    pub holds: bool,
    /// The node's data (chosen by its owner; may be empty).
    pub data: Buffer,
    /// The id of the session that owns the node (compare with
    /// `client.sessionId()`).
    pub session_id: BigInt,
}

/// The two sides of `client.readWriteLock(path)`.
#[napi(object, object_from_js = false)]
pub struct ReadWriteLock {
    /// The read (shared) side.
    pub read: Lock,
    /// The write (exclusive) side.
    pub write: Lock,
    /// The lock path.
    pub path: String,
}

// ---------------------------------------------------------------------------
// Lock
// ---------------------------------------------------------------------------

/// A core lock handle, or one side of a read/write pair.
#[derive(Clone)]
enum LockRef {
    Plain(Arc<core::Lock>),
    Read(Arc<core::ReadWriteLock>),
    Write(Arc<core::ReadWriteLock>),
}

impl LockRef {
    fn get(&self) -> &core::Lock {
        match self {
            LockRef::Plain(l) => l,
            LockRef::Read(rw) => rw.read_lock(),
            LockRef::Write(rw) => rw.write_lock(),
        }
    }
}

/// One acquire that an `AbortSignal` can cancel.
#[derive(Default)]
struct Ticket {
    aborted: AtomicBool,
    done: AtomicBool,
}

struct LockShared {
    lock: LockRef,
    /// Bumped by `lock.cancel()`: an acquire that the core cancelled
    /// without this changing and without its own abort was cancelled on
    /// behalf of another acquire of the handle, and tries again.
    cancels: AtomicU64,
    tickets: Mutex<HashMap<u32, Arc<Ticket>>>,
}

/// Options of `lock.acquire()`.
#[napi(object)]
pub struct AcquireOptions {
    /// The longest to wait in total, in milliseconds: `0` tries once,
    /// absent or `Infinity` waits without limit. One deadline covers every
    /// wait and retry.
    /// More than 1e12 (about 31.7 years) waits without limit too; NaN or
    /// negative is `INVALID_ARGUMENT` (README, "Timeouts").
    pub timeout_ms: Option<f64>,
}

/// A lock handle: exclusive, read or write side, on one path.
///
/// Ownership belongs to the handle, not to a thread or a callback: a handle
/// that holds the lock and acquires again gets another guard on the same
/// node (reentrant); the node is deleted when the last guard is released.
#[napi]
pub struct Lock {
    shared: Arc<LockShared>,
}

impl Lock {
    fn new(lock: LockRef) -> Lock {
        Lock { shared: Arc::new(LockShared { lock, cancels: AtomicU64::new(0), tickets: Mutex::default() }) }
    }
}

#[napi]
impl Lock {
    /// Not callable: throws `TypeError` `ERR_ILLEGAL_CONSTRUCTOR` (use
    /// `client.lock()` and its siblings).
    #[napi(constructor, skip_typescript, catch_unwind)]
    pub fn new_from_js(env: Env) -> napi::Result<Self> {
        Err(illegal_constructor(&env, "Lock", "client.lock(path)"))
    }

    /// The lock path.
    #[napi(getter, catch_unwind)]
    pub fn path(&self) -> String {
        self.shared.lock.get().path().to_owned()
    }

    /// `"EXCLUSIVE"`, `"READ"` or `"WRITE"`.
    #[napi(getter, ts_return_type = "'EXCLUSIVE' | 'READ' | 'WRITE'", catch_unwind)]
    pub fn mode(&self) -> String {
        match self.shared.lock.get().mode() {
            core::LockMode::Exclusive => "EXCLUSIVE",
            core::LockMode::Read => "READ",
            core::LockMode::Write => "WRITE",
        }
        .to_owned()
    }

    /// Acquires the lock and resolves with a `Guard`. Waits at most
    /// `timeoutMs` in total (absent: without limit; `0`: try once) and
    /// rejects with `ZkLockError` `TIMEOUT` then; an aborted `signal`
    /// rejects with `CANCELLED`. On timeout, abort or error our queue node
    /// is deleted. The wait runs on a thread of its own, not on the event
    /// loop or libuv's thread pool.
    ///
    /// Rejects with `TIMEOUT`, `CANCELLED`, `CLOSED`, `WOULD_DEADLOCK`
    /// (read-to-write upgrade on a pair), `ZOOKEEPER` (e.g. no permission);
    /// throws `INVALID_ARGUMENT` for a NaN or negative timeout.
    #[napi(ts_args_type = "options?: AcquireOptions", ts_return_type = "Promise<Guard>", catch_unwind)]
    pub fn acquire(&self, env: Env, options: Option<AcquireOptions>, ticket: Option<u32>) -> napi::Result<JsObject> {
        let timeout = acquire_timeout(options.and_then(|o| o.timeout_ms)).map_err(|e| zk_error(&env, &e))?;
        let ticket = match ticket {
            Some(id) => {
                let t = Arc::new(Ticket::default());
                if let Ok(mut map) = self.shared.tickets.lock() {
                    map.insert(id, t.clone());
                }
                Some((id, t))
            },
            None => None,
        };
        let shared = self.shared.clone();
        spawn_promise(&env, "zklock-acquire", move || {
            let result = acquire_blocking(&shared, timeout, ticket.as_ref().map(|(_, t)| &**t));
            if let Some((id, t)) = &ticket {
                t.done.store(true, Ordering::Release);
                if let Ok(mut map) = shared.tickets.lock() {
                    map.remove(id);
                }
            }
            result.map(Guard::new)
        })
    }

    /// Tries once without waiting: resolves with a `Guard`, or `null` when
    /// someone else holds the lock. Rejects like `acquire()` otherwise.
    #[napi(ts_return_type = "Promise<Guard | null>", catch_unwind)]
    pub fn try_acquire(&self, env: Env) -> napi::Result<JsObject> {
        let shared = self.shared.clone();
        spawn_promise(&env, "zklock-try-acquire", move || Ok(shared.lock.get().try_acquire()?.map(Guard::new)))
    }

    /// Cancels every acquire in progress on this handle: they reject with
    /// `CANCELLED` and leave no node. Acquires started later are not
    /// affected. (To cancel one acquire, pass it an `AbortSignal`.)
    #[napi(catch_unwind)]
    pub fn cancel(&self) {
        self.shared.cancels.fetch_add(1, Ordering::AcqRel);
        self.shared.lock.get().cancel();
    }

    /// Whether this handle holds the lock now (held or suspended).
    #[napi(getter, catch_unwind)]
    pub fn held(&self) -> bool {
        self.shared.lock.get().is_held()
    }

    /// Used by `index.js` when the `AbortSignal` of the acquire with this
    /// ticket fires.
    #[napi(js_name = "_abortAcquire", skip_typescript, catch_unwind)]
    pub fn abort_acquire(&self, ticket: u32) {
        let t = self.shared.tickets.lock().ok().and_then(|m| m.get(&ticket).cloned());
        let Some(t) = t else { return };
        t.aborted.store(true, Ordering::Release);
        self.shared.lock.get().cancel();
        // The core cancels the acquires in progress; one that was just
        // about to start could miss it, so poke again until it ended.
        let shared = self.shared.clone();
        let _ = std::thread::Builder::new().name("zklock-abort".into()).spawn(move || {
            for _ in 0..600 {
                std::thread::sleep(Duration::from_millis(50));
                if t.done.load(Ordering::Acquire) {
                    return;
                }
                shared.lock.get().cancel();
            }
        });
    }
}

/// The blocking acquire behind `lock.acquire()`: retries a cancellation
/// that was meant for another acquire of the same handle.
fn acquire_blocking(
    shared: &LockShared,
    timeout: Option<Duration>,
    ticket: Option<&Ticket>,
) -> core::Result<core::Guard> {
    let try_once = timeout == Some(Duration::ZERO);
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    let aborted = || ticket.is_some_and(|t| t.aborted.load(Ordering::Acquire));
    let cancelled =
        || core::Error::new(core::ErrorKind::Cancelled, format!("acquiring {}: aborted", shared.lock.get().path()));
    loop {
        if aborted() {
            return Err(cancelled());
        }
        let generation = shared.cancels.load(Ordering::Acquire);
        let remaining =
            if try_once { Some(Duration::ZERO) } else { deadline.map(|d| d.saturating_duration_since(Instant::now())) };
        match shared.lock.get().acquire(remaining) {
            Ok(guard) if aborted() => {
                // Granted while the abort was on its way: honour the abort.
                let _ = guard.release();
                return Err(cancelled());
            },
            Err(e) if e.kind() == core::ErrorKind::Cancelled => {
                if aborted() {
                    return Err(cancelled());
                }
                if shared.cancels.load(Ordering::Acquire) != generation {
                    return Err(e);
                }
                // Cancelled for another acquire's abort: try again.
            },
            other => return other,
        }
    }
}

// ---------------------------------------------------------------------------
// Guard
// ---------------------------------------------------------------------------

fn state_name(state: core::LockState) -> &'static str {
    match state {
        core::LockState::Held => "HELD",
        core::LockState::Suspended => "SUSPENDED",
        core::LockState::Lost => "LOST",
        core::LockState::Released => "RELEASED",
    }
}

/// Proof of holding a lock. Release it with `await guard.release()` (or
/// `await using guard = await lock.acquire()`); a guard that is garbage
/// collected unreleased is released in the background.
#[napi]
pub struct Guard {
    guard: Option<Arc<core::Guard>>,
}

impl Guard {
    fn new(guard: core::Guard) -> Guard {
        Guard { guard: Some(Arc::new(guard)) }
    }

    fn get(&self) -> &core::Guard {
        self.guard.as_ref().expect("Guard::guard is Some until drop")
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // Dropping the core guard releases it if needed, which waits for
        // ZooKeeper: never on the JavaScript thread (GC finalizers run there).
        if let Some(g) = self.guard.take() {
            let slot = Arc::new(Mutex::new(Some(g)));
            let theirs = slot.clone();
            let spawned = std::thread::Builder::new().name("zklock-drop".into()).spawn(move || {
                let g = theirs.lock().ok().and_then(|mut s| s.take());
                drop(g);
            });
            if spawned.is_err() {
                // Could not start a thread: leak rather than block (the
                // closure, dropped here, held only the other handle); the
                // node goes with the session.
                std::mem::forget(slot);
            }
        }
    }
}

#[napi]
impl Guard {
    /// Not callable: throws `TypeError` `ERR_ILLEGAL_CONSTRUCTOR` (guards
    /// come from `lock.acquire()`).
    #[napi(constructor, skip_typescript, catch_unwind)]
    pub fn new_from_js(env: Env) -> napi::Result<Self> {
        Err(illegal_constructor(&env, "Guard", "lock.acquire()"))
    }

    /// Test hook: the error that the binding produces for the core's error kind
    /// number `index` in `errorCodes()` (so a test can check that every kind
    /// maps to a `ZkLockError` with the right `code`).
    #[napi(js_name = "_errorForKind", skip_typescript, catch_unwind)]
    pub fn error_for_kind(env: Env, index: u32) -> napi::Result<JsUnknown> {
        let kind = core::ErrorKind::ALL
            .get(index as usize)
            .copied()
            .ok_or_else(|| range_error(&env, format!("no error kind number {index}")))?;
        let err = zk_error(&env, &core::Error::new(kind, format!("test error of kind {}", kind.name())));
        // A napi::Error made from a JS value converts back to that value.
        unsafe {
            let raw = <napi::Error as ToNapiValue>::to_napi_value(env.raw(), err)?;
            Ok(<JsUnknown as napi::NapiValue>::from_raw_unchecked(env.raw(), raw))
        }
    }

    /// Test hook: panics on purpose, where `place` says: `"sync"` in this
    /// call, `"promise"` in the work of the Promise it returns. Either must
    /// end as a `ZkLockError` `INTERNAL` (thrown or rejected), never abort
    /// the process.
    #[napi(js_name = "_panicForTest", skip_typescript, catch_unwind)]
    pub fn panic_for_test(env: Env, place: String) -> napi::Result<JsObject> {
        match place.as_str() {
            "sync" => panic!("test panic in a synchronous call"),
            "promise" => spawn_promise(&env, "zklock-test-panic", || -> core::Result<()> {
                panic!("test panic in the work of a Promise")
            }),
            _ => Err(type_error(&env, "ERR_INVALID_ARG_VALUE", "place must be \"sync\" or \"promise\"")),
        }
    }

    /// Releases this guard; resolves with `"RELEASED"`, or `"PENDING"` when
    /// the delete could not be confirmed (connection trouble; it is retried
    /// in the background until it succeeds or the session ends).
    ///
    /// Rejects with `NOT_HELD` if already released, `LOCK_LOST` if the lock
    /// had been lost before (the critical section may have run without it;
    /// our node is cleaned up all the same).
    #[napi(ts_return_type = "Promise<'RELEASED' | 'PENDING'>", catch_unwind)]
    pub fn release(&self, env: Env) -> napi::Result<JsObject> {
        let guard = self.guard.clone();
        spawn_promise(&env, "zklock-release", move || {
            let guard = guard.ok_or_else(|| core::Error::new(core::ErrorKind::Internal, "guard already dropped"))?;
            Ok(match guard.release()? {
                core::ReleaseStatus::Released => "RELEASED".to_owned(),
                core::ReleaseStatus::Pending => "PENDING".to_owned(),
            })
        })
    }

    /// Throws unless the lock is safely held now: state `HELD`, connected,
    /// and the ZooKeeper leader is known to have heard of the session
    /// recently enough that it cannot have expired. Call it before every step that must not run twice.
    ///
    /// Throws `ZkLockError` `CONNECTION_LOSS` while suspended (may come
    /// back), `LOCK_LOST` once lost, `NOT_HELD` after release.
    #[napi(catch_unwind)]
    pub fn check(&self, env: Env) -> napi::Result<()> {
        self.get().check().map_err(|e| zk_error(&env, &e))
    }

    /// The current state of this guard: `"HELD"`, `"SUSPENDED"`
    /// (connection trouble: act as if not held), `"LOST"` (also once the
    /// client is closed) or `"RELEASED"` (once this guard is released, even
    /// while other guards of its lock keep it).
    #[napi(getter, ts_return_type = "LockState", catch_unwind)]
    pub fn state(&self) -> String {
        state_name(self.get().state()).to_owned()
    }

    /// The fencing token of this grant (the creation zxid of our node):
    /// successive grants of a lock have strictly larger tokens. Give it to
    /// the protected resource and have it reject smaller ones.
    #[napi(getter, catch_unwind)]
    pub fn fencing_token(&self) -> BigInt {
        BigInt::from(self.get().fencing_token())
    }

    /// The full path of our lock node.
    #[napi(getter, catch_unwind)]
    pub fn node_path(&self) -> String {
        self.get().node_path()
    }

    /// The sequence number of our lock node.
    #[napi(getter, catch_unwind)]
    pub fn sequence(&self) -> i64 {
        self.get().sequence()
    }

    /// The id of the session that holds the lock.
    #[napi(getter, catch_unwind)]
    pub fn session_id(&self) -> BigInt {
        BigInt::from(self.get().session_id())
    }

    /// Calls `callback` with the new state on every change (`"SUSPENDED"`,
    /// `"HELD"` again, `"LOST"`), in order, on the JavaScript thread. A
    /// release is not reported (it is the caller's own act). If the lock is
    /// no longer `HELD` when registering, it is called once soon with the
    /// current state (`"RELEASED"` for a released guard). The callback does
    /// not keep the process alive.
    #[napi(ts_args_type = "callback: (state: LockState) => void", catch_unwind)]
    pub fn on_state_change(&self, env: Env, callback: JsFunction) -> napi::Result<()> {
        let mut tsfn: ThreadsafeFunction<&'static str, ErrorStrategy::Fatal> =
            callback.create_threadsafe_function(0, |ctx: ThreadSafeCallContext<&'static str>| {
                // Runs on the JavaScript thread, called from C: an error
                // here (none is expected) reaches 'uncaughtException' like
                // an exception of the callback itself.
                Ok(vec![ctx.env.create_string(ctx.value)?])
            })?;
        tsfn.unref(&env)?;
        let callback = StateCallback(Some(tsfn));
        self.get().on_state_change(move |state| callback.call(state));
        Ok(())
    }
}

/// The threadsafe function behind `guard.onStateChange()`, called on the
/// core's event thread. napi-rs asserts when releasing it fails (as it can
/// while Node shuts down): the drop, wherever the core drops the callback,
/// catches that rather than let it unwind into the core or into C.
struct StateCallback(Option<ThreadsafeFunction<&'static str, ErrorStrategy::Fatal>>);

impl StateCallback {
    fn call(&self, state: core::LockState) {
        if let Some(tsfn) = &self.0 {
            // NonBlocking: fails (ignored) only when Node is going away.
            tsfn.call(state_name(state), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

impl Drop for StateCallback {
    fn drop(&mut self) {
        if let Some(tsfn) = self.0.take() {
            let _ = catch_unwind(AssertUnwindSafe(move || drop(tsfn)));
        }
    }
}

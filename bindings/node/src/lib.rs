//! # zklock for Node.js
//!
//! The napi-rs addon behind the npm package `zklock`: distributed locks on
//! Apache ZooKeeper, with the Rust core `zklock-core` linked in directly.
//!
//! Threads: every call that may wait (connect, acquire, release,
//! participants, close) is the core's async call: its work runs on the
//! core's own runtime. The future of an acquire or a release, which only
//! waits for that work, is polled where it is woken ([`Inline`]: on the
//! core's runtime when the work ends), so the Promise is settled with one
//! hop from the core's runtime to the JavaScript thread; the others are
//! awaited on napi-rs's tokio runtime (one worker thread, made in
//! [`init`]), a hop more. No thread per call, nothing on libuv's thread pool
//! or on the JavaScript thread. State-change callbacks come from the
//! client's event thread through a napi threadsafe function. Every Promise
//! is a [`settle::Deferred`]: settled from any thread, and never into an
//! environment that is gone (a worker terminated while its acquire was in
//! flight aborted the process with napi-rs's own deferred); the work of a
//! Promise ends with its environment ([`settle::Deferred::abortable`]).
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
//! `INTERNAL`); the work of a Promise runs under `catch_unwind` and rejects
//! with `INTERNAL`; callbacks into JavaScript and the drops that
//! run in GC finalizers do not panic (see [`JsCallback`]).

#![deny(clippy::unwrap_used)]
// `#[napi]` generates undocumented glue items next to ours (registration
// functions, constructors); every item written here has its doc comment,
// which napi turns into the JSDoc of index.d.ts.
#![allow(missing_docs)]
// The crate's docs describe its inner workings (its public API is the
// JavaScript one), so they link to private items.
#![allow(rustdoc::private_intra_doc_links)]

use std::ffi::c_void;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::time::Duration;

use futures_util::FutureExt as _;
use napi::bindgen_prelude::{BigInt, Buffer, ClassInstance, Either, ToNapiValue};
use napi::threadsafe_function::{ErrorStrategy, ThreadSafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{sys, Env, JsFunction, JsObject, JsTypeError, JsUnknown, Status};
use napi_derive::napi;
use zklock_core as core;

mod settle;

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// THE mapping of the core's error kinds: a JavaScript `Error` whose `code`
/// is the kind's stable name (`"TIMEOUT"`, `"LOCK_LOST"`, ... the C enum
/// names) and whose message is the core's message. `index.js` gives it the
/// prototype of `ZkLockError`.
/// For a fenced write that ZooKeeper refused because of one of the
/// caller's operations (the core's `Error::failed_op`), the error also has
/// `failedOp: { index, code }`.
fn zk_error(env: &Env, err: &core::Error) -> napi::Error {
    let Some(failed) = err.failed_op() else {
        return js_error_with_code(env, err.kind().name(), err.message());
    };
    let build = || -> napi::Result<JsUnknown> {
        let mut obj = env.create_error(napi::Error::new(Status::GenericFailure, err.message().to_owned()))?;
        obj.set_named_property("code", env.create_string(err.kind().name())?)?;
        let mut op = env.create_object()?;
        // An index into the caller's array: far below 2^32.
        op.set_named_property("index", env.create_double(failed.index as f64)?)?;
        op.set_named_property("code", env.create_string(&failed.code)?)?;
        obj.set_named_property("failedOp", op)?;
        Ok(obj.into_unknown())
    };
    match build() {
        Ok(v) => napi::Error::from(v),
        Err(e) => e,
    }
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

/// A `RangeError` (`code: "ERR_OUT_OF_RANGE"`) for a value out of range
/// (only the test hook `_errorForKind` throws one).
#[cfg(feature = "test-hooks")]
fn range_error(env: &Env, message: String) -> napi::Error {
    let build = || -> napi::Result<JsUnknown> {
        let v = napi::JsRangeError::from(napi::Error::new(Status::InvalidArg, message.clone())).into_unknown(*env);
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
// Logging
// ---------------------------------------------------------------------------

/// Sends the core's log records of `level` and more severe (a `LogLevel`,
/// in any case: `'ERROR'`, `'WARN'`, `'INFO'` (default), `'DEBUG'`,
/// `'TRACE'`, `'OFF'`) to `logger(level, message)`, called on the
/// JavaScript thread (it does not keep the process alive) with the
/// record's `LogLevel`; `null` goes back to the default: warnings on
/// stderr. The records are connects, reconnects, suspensions, session
/// expiries, re-queues and background cleanups, each naming its lock path
/// and session id. Process-wide (one logger for every client). Throws
/// `INVALID_ARGUMENT` for an unknown level.
#[napi(
    ts_args_type = "logger: ((level: Exclude<LogLevel, 'OFF'>, message: string) => void) | null, level?: LogLevel | Lowercase<LogLevel>",
    catch_unwind
)]
pub fn set_logger(env: Env, logger: Option<JsFunction>, level: Option<String>) -> napi::Result<()> {
    let level_name = level.as_deref().unwrap_or(if logger.is_some() { "INFO" } else { "WARN" });
    let Some(filter) = core::LogLevel::parse(level_name).map(core::LogLevel::filter) else {
        let e = core::Error::new(
            core::ErrorKind::InvalidArgument,
            format!("log level must be a LogLevel ({}), not {level_name:?}", names(&core::LogLevel::VOCABULARY)),
        );
        return Err(zk_error(&env, &e));
    };
    let installed = match logger {
        None => core::logging::set_log_sink(filter, core::logging::to_stderr),
        Some(logger) => {
            let mut tsfn: ThreadsafeFunction<core::logging::LogRecord, ErrorStrategy::Fatal> = logger
                .create_threadsafe_function(0, |ctx: ThreadSafeCallContext<core::logging::LogRecord>| {
                    let level = core::LogLevel::of(ctx.value.level).name();
                    Ok(vec![ctx.env.create_string(level)?, ctx.env.create_string(&ctx.value.message)?])
                })?;
            tsfn.unref(&env)?;
            let callback = JsCallback(Some(tsfn));
            core::logging::set_log_sink(filter, move |record| callback.call(record))
        },
    };
    installed.map_err(|e| zk_error(&env, &e))
}

// ---------------------------------------------------------------------------
// Promises settled from our own threads
// ---------------------------------------------------------------------------

/// The runtime that awaits the core's futures for the Promises: one
/// worker (the work itself runs on the core's runtime; this one only waits
/// for it and settles Promises).
#[napi::module_init]
fn init() {
    // Until setLogger() says otherwise: the core's warnings on stderr.
    let _ = core::logging::set_log_sink(log::LevelFilter::Warn, core::logging::to_stderr);
    if let Ok(rt) = napi::tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(1)
        .thread_name("zklock-node")
        .enable_all()
        .build()
    {
        napi::bindgen_prelude::create_custom_tokio_runtime(rt);
    }
}

/// The bytes of a lock node's `data` argument (a string as UTF-8, a
/// Buffer as it is; none: empty).
fn node_data(data: Option<Either<String, Buffer>>) -> Vec<u8> {
    match data {
        Some(Either::A(text)) => text.into_bytes(),
        Some(Either::B(bytes)) => bytes.to_vec(),
        None => Vec::new(),
    }
}

/// Awaits the core's future `work` and returns a Promise that settles with
/// its result on the JavaScript thread. A core error rejects through
/// [`zk_error`]; a panic rejects with `INTERNAL`.
fn promise<T, F>(env: &Env, name: &str, work: F) -> napi::Result<JsObject>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = core::Result<T>> + Send + 'static,
{
    promise_by(env, name, work, |settle| drop(napi::bindgen_prelude::spawn(settle)))
}

/// A Promise settled with the outcome of `work`, which `drive` is given
/// (with the settling) to run.
fn promise_by<T, F>(
    env: &Env,
    name: &str,
    work: F,
    drive: impl FnOnce(std::pin::Pin<Box<dyn Future<Output = ()> + Send>>),
) -> napi::Result<JsObject>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = core::Result<T>> + Send + 'static,
{
    let (deferred, promise) = settle::Deferred::new(env)?;
    let what = name.to_owned();
    // Ends with the environment: nobody could see its outcome.
    let work = deferred.abortable(work);
    drive(Box::pin(async move {
        let result = match AssertUnwindSafe(work).catch_unwind().await {
            Ok(Ok(result)) => result,
            Ok(Err(futures_util::future::Aborted)) => return,
            Err(_) => Err(core::Error::new(core::ErrorKind::Internal, format!("{what} panicked (a bug in zklock)"))),
        };
        deferred.settle(Box::new(move |env: Env| {
            let value = result.map_err(|e| zk_error(&env, &e))?;
            // SAFETY: runs on the JavaScript thread of `env` (settle.rs).
            unsafe { T::to_napi_value(env.raw(), value) }
        }));
    }));
    Ok(promise)
}

/// A native value handed to JavaScript as an instance of its class
/// ([`Client`], [`Guard`], [`MultiGuard`]: the classes that keep a session
/// or a lock). napi-rs's own conversion leaks the value when the object
/// cannot be made, as after `worker.terminate()` from another thread, which
/// can come after the check in settle.rs that JavaScript can run: a guard
/// leaked so kept its node, and its client the session, for the rest of the
/// process (outside test, round 7: `dgterm.js`, a worker terminated while
/// its `downgrade()` was settled). Here the value is dropped then (a guard
/// is released, a client closed).
struct Owned<T>(T);

#[cfg(feature = "test-hooks")]
thread_local! {
    /// How many of the next objects [`Owned`] makes on this thread are to
    /// fail (`Guard._failNextObjects`, a test hook).
    static FAIL_NEXT_OBJECTS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// A `#[napi]` class whose instances [`Owned`] makes.
trait Class: Sized {
    /// The class's JavaScript name, with the NUL napi-rs registers it by.
    const NAME: &'static str;

    /// napi-rs's making of an instance around `value` (a `Box<Self>`
    /// pointer), which owns `value` only if it returns `Ok`.
    ///
    /// # Safety
    /// On the JavaScript thread of `env`; `value` from `Box::into_raw`.
    unsafe fn instance(env: sys::napi_env, value: *mut c_void, ctor: sys::napi_ref) -> napi::Result<sys::napi_value>;
}

macro_rules! class {
    ($($t:ident),*) => {$(
        impl Class for $t {
            const NAME: &'static str = concat!(stringify!($t), "\0");

            unsafe fn instance(env: sys::napi_env, value: *mut c_void, ctor: sys::napi_ref) -> napi::Result<sys::napi_value> {
                // SAFETY: as the caller promises (napi-rs's generated maker).
                unsafe { $t::new_instance(env, value, ctor) }
            }
        }
    )*};
}
class!(Client, Guard, MultiGuard);

impl<T: Class> ToNapiValue for Owned<T> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let Some(ctor) = napi::bindgen_prelude::get_class_constructor(T::NAME) else {
            return Err(napi::Error::from_reason(format!(
                "no constructor of class {}",
                T::NAME.trim_end_matches('\0')
            )));
        };
        let value = Box::into_raw(Box::new(val.0));
        // The test hook: an exception pending makes napi refuse to make the
        // object, as after `worker.terminate()`.
        #[cfg(feature = "test-hooks")]
        let fail = FAIL_NEXT_OBJECTS.with(|n| {
            let left = n.get();
            n.set(left.saturating_sub(1));
            left > 0
        });
        #[cfg(not(feature = "test-hooks"))]
        let fail = false;
        if fail {
            // SAFETY: on the JavaScript thread of `env`.
            unsafe { sys::napi_throw_error(env, ptr::null(), c"test: the object cannot be made".as_ptr()) };
        }
        // SAFETY: on the JavaScript thread (settle.rs runs outcomes there);
        // `value` is ours until the instance owns it.
        let made = unsafe { T::instance(env, value.cast(), ctor) };
        if fail {
            let mut thrown = ptr::null_mut();
            // SAFETY: as above; the exception thrown for the test goes.
            unsafe { sys::napi_get_and_clear_last_exception(env, &mut thrown) };
        }
        match made {
            Ok(object) => Ok(object),
            Err(e) => {
                // napi-rs leaves its "made by a factory" flag set when the
                // construction fails.
                napi::__private::___CALL_FROM_FACTORY.with(|f| f.store(false, std::sync::atomic::Ordering::Relaxed));
                // SAFETY: not wrapped (every error comes before the wrap
                // succeeds), so still ours.
                drop(unsafe { Box::from_raw(value) });
                Err(e)
            },
        }
    }
}

/// [`promise`] for a future that only waits for the core's work (an
/// acquire, a release: the core runs them on its own runtime and the future
/// awaits their outcome): polled by [`Inline`] where it is woken, so the
/// outcome goes from the core's runtime straight to the JavaScript thread
/// (measured by `make bench`: about 90 µs of CPU per acquire and release
/// less than through napi-rs's runtime on 2 cores). Nothing that blocks or
/// drops a client may run in it: it runs on the core's runtime.
fn promise_inline<T, F>(env: &Env, name: &str, work: F) -> napi::Result<JsObject>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = core::Result<T>> + Send + 'static,
{
    promise_by(env, name, work, Inline::start)
}

/// A future with no executor: polled first on the thread that starts it,
/// then on whichever thread wakes it, until it is ready. For futures that
/// do nothing but wait for work done elsewhere and pass its outcome on
/// (see [`promise_inline`]). A wake while it is being polled makes the
/// polling thread poll again, so no wake is lost and it is never polled
/// on two threads at once. (No library offers this small piece: async
/// executors all run futures on threads of their own.)
struct Inline {
    state: std::sync::Mutex<InlineState>,
}

struct InlineState {
    /// `None` while a thread polls it, and once it is ready.
    future: Option<std::pin::Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// A thread is polling it.
    polling: bool,
    /// Woken while being polled: poll again.
    woken: bool,
}

impl Inline {
    fn start(future: std::pin::Pin<Box<dyn Future<Output = ()> + Send>>) {
        let state = InlineState { future: Some(future), polling: false, woken: false };
        std::sync::Arc::new(Inline { state: std::sync::Mutex::new(state) }).drive();
    }

    fn drive(self: std::sync::Arc<Self>) {
        let mut future = {
            let Ok(mut state) = self.state.lock() else { return };
            if state.polling {
                state.woken = true;
                return;
            }
            let Some(future) = state.future.take() else { return };
            state.polling = true;
            future
        };
        let waker = std::task::Waker::from(self.clone());
        let mut cx = std::task::Context::from_waker(&waker);
        loop {
            // The future catches its own panics (promise_inline).
            let ready = future.as_mut().poll(&mut cx).is_ready();
            let Ok(mut state) = self.state.lock() else { return };
            if ready {
                state.polling = false;
                return;
            }
            if std::mem::take(&mut state.woken) {
                continue;
            }
            state.future = Some(future);
            state.polling = false;
            return;
        }
    }
}

impl std::task::Wake for Inline {
    fn wake(self: std::sync::Arc<Self>) {
        self.drive();
    }
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

/// The core's options of one acquire (`lock.acquire()`,
/// `multiLock.acquire()`): the timeout and the call's own cancel token.
fn core_acquire_options(
    options: Option<AcquireOptions>,
    token: Option<ClassInstance<CancelToken>>,
) -> core::Result<core::AcquireOptions> {
    let timeout = acquire_timeout(options.and_then(|o| o.timeout_ms))?;
    let opts = core::AcquireOptions::new().timeout(timeout);
    Ok(match token {
        Some(t) => opts.cancel_token(t.token.clone()),
        None => opts,
    })
}

// ---------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------

/// A client's session as the process's exit sees it: every object that
/// holds a session (its `Client`, `Lock`s, `Guard`s, `MultiLock`s and
/// `MultiGuard`s) holds its `Session`, and [`SESSIONS`] has a weak entry
/// for it, so that [`close_all_at_exit`] finds every session still in use
/// and none that is not.
struct Session {
    client: core::Client,
}

/// The sessions of every client this process opened (all environments:
/// the main thread's and its workers'), weakly: the last JavaScript object
/// of a client that goes frees it as before.
static SESSIONS: std::sync::Mutex<Vec<std::sync::Weak<Session>>> = std::sync::Mutex::new(Vec::new());

impl Session {
    /// Enters `client` among the sessions the exit closes (and forgets
    /// the entries whose objects are all gone).
    fn enter(client: &core::Client) -> std::sync::Arc<Session> {
        let session = std::sync::Arc::new(Session { client: client.clone() });
        if let Ok(mut all) = SESSIONS.lock() {
            all.retain(|w| w.strong_count() > 0);
            all.push(std::sync::Arc::downgrade(&session));
        }
        session
    }
}

/// Closes the session of every client of the process that is still open
/// and waits for the servers to confirm, at most `wait_ms` milliseconds in
/// all (an unreachable server does not hold the exit up longer): their
/// lock nodes, held or queued, go at once instead of after the session
/// timeout. Run by `index.js` on the main thread's `'exit'` event (after
/// `process.exit()`, an uncaught exception or the natural end), where nothing
/// asynchronous runs any more: it blocks the JavaScript thread, which is
/// exiting. Waiting acquires reject with `CLOSED` (nobody sees it).
fn close_all_at_exit(wait_ms: u32) {
    let sessions: Vec<std::sync::Arc<Session>> = match SESSIONS.lock() {
        Ok(all) => all.iter().filter_map(std::sync::Weak::upgrade).collect(),
        Err(_) => return,
    };
    // Each close starts (its request goes out) here; the futures only wait.
    let closes: Vec<_> = sessions.iter().filter(|s| !s.client.is_closed()).map(|s| s.client.close_async()).collect();
    if closes.is_empty() {
        return;
    }
    let (done, confirmed) = std::sync::mpsc::channel();
    napi::bindgen_prelude::spawn(async move {
        futures_util::future::join_all(closes).await;
        let _ = done.send(());
    });
    let _ = confirmed.recv_timeout(Duration::from_millis(u64::from(wait_ms)));
}

/// Options of `Client.connect`. Any other key (a misspelled option) is
/// refused with `ZkLockError` `INVALID_ARGUMENT` naming it and the valid
/// ones, as in `auth`, `sasl` and `tls`.
#[napi(object)]
pub struct ConnectOptions {
    /// The servers: `"host:port[,host:port...][/chroot]"`.
    pub hosts: String,
    /// The session timeout to ask the server for, in milliseconds (default
    /// 10000; the server may negotiate another within its bounds). Held
    /// locks are lost when the session expires.
    /// Must be > 0 and at most 3600000 (one hour), else `INVALID_ARGUMENT`
    /// (docs/input-rules.md).
    pub session_timeout_ms: Option<f64>,
    /// How long `connect` may try before it fails with `CONNECTION_LOSS`, in
    /// milliseconds (default 15000).
    /// Must be > 0 and at most 86400000 (one day), else `INVALID_ARGUMENT`
    /// (docs/input-rules.md).
    pub connect_timeout_ms: Option<f64>,
    /// The longest a single ZooKeeper request may take, in milliseconds
    /// (default 10000). Bounds `release()`, `participants()` and `close()`.
    /// Must be > 0 and at most 86400000 (one day), else `INVALID_ARGUMENT`
    /// (docs/input-rules.md).
    pub operation_timeout_ms: Option<f64>,
    /// Authenticates the session with ZooKeeper's `digest` scheme as
    /// `user:password` (nodes are still created with `acl`, world-open by
    /// default, as Curator does). `INVALID_ARGUMENT` for an empty user, a
    /// user with `:` or more than 64 KiB together.
    pub auth: Option<DigestAuth>,
    /// Authenticates the session with SASL `DIGEST-MD5` (the identity
    /// `sasl:user` that ACLs name); a refused login rejects `connect` with
    /// `NO_AUTH`. Kerberos is not offered.
    pub sasl: Option<DigestAuth>,
    /// The ACL of every node the client creates (lock nodes, lock paths and
    /// their missing ancestors; lock nodes without ADMIN for `world:anyone`,
    /// so nobody may change their ACL), written as `zkCli.sh` writes one:
    /// `scheme:id:perms` entries separated by commas (perms letters of
    /// `cdrwa`), or the words `open` (the default) and `creator` (every
    /// right for the session's authenticated identities, nothing for anyone
    /// else), e.g. `'creator,world:anyone:r'`. `INVALID_ARGUMENT` naming
    /// the entry for a malformed one.
    pub acl: Option<String>,
    /// TLS to every server (name their `secureClientPort`s in `hosts`);
    /// never a plaintext fallback.
    pub tls: Option<TlsFiles>,
}

/// PEM files for [`ConnectOptions::tls`].
#[napi(object)]
pub struct TlsFiles {
    /// The certificate authorities to check the servers' certificates
    /// against (and their names against `hosts`).
    pub ca: String,
    /// The client certificate (chain) shown when the server asks for one;
    /// give `key` with it.
    pub cert: Option<String>,
    /// The client certificate's private key.
    pub key: Option<String>,
}

/// A user and password: ZooKeeper `digest` credentials for
/// [`ConnectOptions::auth`], SASL ones for [`ConnectOptions::sasl`].
#[napi(object)]
pub struct DigestAuth {
    /// The user (non-empty, no `:`).
    pub user: String,
    /// The password.
    pub password: String,
}

/// A connection (one ZooKeeper session) to an ensemble, the factory of locks.
///
/// Make one with `await Client.connect({ hosts })`. Locks and guards keep
/// the session alive; `await client.close()` ends it (every lock held
/// through it is lost).
#[napi]
pub struct Client {
    client: core::Client,
    /// Its entry among the sessions the process's exit closes.
    session: std::sync::Arc<Session>,
}

impl Client {
    /// A client as the value of `connect`'s Promise, entered among the
    /// sessions the process's exit closes.
    fn new(client: core::Client) -> Client {
        Client { session: Session::enter(&client), client }
    }
}

#[napi]
impl Client {
    /// Not callable: throws `TypeError` `ERR_ILLEGAL_CONSTRUCTOR` (use
    /// `Client.connect()`).
    #[napi(constructor, skip_typescript, catch_unwind)]
    pub fn new_from_js(env: Env) -> napi::Result<Self> {
        Err(illegal_constructor(&env, "Client", "Client.connect()"))
    }

    /// Closes every open client of the process, waiting at most `waitMs`
    /// milliseconds in all for the servers ([`close_all_at_exit`]): for
    /// `index.js`'s `'exit'` listener only.
    #[napi(js_name = "_closeAllAtExit", skip_typescript, catch_unwind)]
    pub fn close_all_at_exit_js(wait_ms: u32) {
        close_all_at_exit(wait_ms);
    }

    /// Connects to ZooKeeper and opens a session.
    ///
    /// Rejects with `ZkLockError` `INVALID_ARGUMENT` / `INVALID_PATH` for a
    /// malformed connect string, a malformed `acl`, an unreadable TLS file
    /// (naming it) or a certificate without its key; `CONNECTION_LOSS` when
    /// no server answered within `connectTimeoutMs`, or at once when no
    /// server's TLS certificate verifies (the message says why, e.g.
    /// `UnknownIssuer`); `NO_AUTH` when the server refused the
    /// credentials. Throws `ZkLockError` `INVALID_ARGUMENT`
    /// for a timeout out of range or an unknown option (checked by
    /// `index.js`), `TypeError` for an option of the wrong type.
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
        if let Some(auth) = options.auth {
            opts = opts.digest_auth(auth.user, auth.password);
        }
        if let Some(sasl) = options.sasl {
            opts = opts.sasl_digest_md5(sasl.user, sasl.password);
        }
        let security = |mut opts: core::ClientOptions| -> core::Result<core::ClientOptions> {
            if let Some(acl) = &options.acl {
                opts = opts.acl(core::Acl::parse(acl)?);
            }
            if let Some(t) = &options.tls {
                if let Some(tls) = core::TlsOptions::from_file_names(Some(&t.ca), t.cert.as_deref(), t.key.as_deref())?
                {
                    opts = opts.tls(tls);
                }
            }
            Ok(opts)
        };
        let mut opts = security(opts).map_err(|e| zk_error(&env, &e))?;
        if let Some(d) = session {
            opts = opts.session_timeout(d);
        }
        if let Some(d) = connect {
            opts = opts.connect_timeout(d);
        }
        if let Some(d) = operation {
            opts = opts.operation_timeout(d);
        }
        let connect = core::Client::connect_async(opts);
        promise(&env, "connect", async move { connect.await.map(|client| Owned(Client::new(client))) })
    }

    /// An exclusive lock on `path` (compatible with Curator's
    /// `InterProcessMutex`). Throws `ZkLockError` `INVALID_PATH` for a bad
    /// path, `CLOSED` after `close()`.
    #[napi(catch_unwind)]
    pub fn lock(&self, env: Env, path: String) -> napi::Result<Lock> {
        let lock = self.client.lock(&path).map_err(|e| zk_error(&env, &e))?;
        Ok(Lock { lock, session: self.session.clone() })
    }

    /// The read (shared) side of a read/write lock on `path`, as an
    /// independent handle (Curator `InterProcessReadWriteLock.readLock()`
    /// compatible). Throws like `lock()`.
    #[napi(catch_unwind)]
    pub fn read_lock(&self, env: Env, path: String) -> napi::Result<Lock> {
        let lock = self.client.read_lock(&path).map_err(|e| zk_error(&env, &e))?;
        Ok(Lock { lock, session: self.session.clone() })
    }

    /// The write (exclusive) side of a read/write lock on `path`, as an
    /// independent handle. Throws like `lock()`.
    #[napi(catch_unwind)]
    pub fn write_lock(&self, env: Env, path: String) -> napi::Result<Lock> {
        let lock = self.client.write_lock(&path).map_err(|e| zk_error(&env, &e))?;
        Ok(Lock { lock, session: self.session.clone() })
    }

    /// A read/write lock pair on `path` whose sides know each other, for
    /// `guard.downgrade()`. No implicit downgrade and no upgrade refusal (an
    /// acquire has no thread in Node): acquiring `write` while holding
    /// `read` waits behind your own read node until its timeout. Throws
    /// like `lock()`.
    #[napi(catch_unwind)]
    pub fn read_write_lock(&self, env: Env, path: String) -> napi::Result<ReadWriteLock> {
        let rw = self.client.read_write_lock(&path, core::LockOptions::default()).map_err(|e| zk_error(&env, &e))?;
        let (read, write) = rw.into_sides();
        let session = &self.session;
        Ok(ReadWriteLock {
            read: Lock { lock: read, session: session.clone() },
            write: Lock { lock: write, session: session.clone() },
            path,
        })
    }

    /// The participants of the lock at `path` in queue order (holders
    /// first), including other libraries' nodes. An absent path has none.
    /// Costs a list and a read of each queued node: N + 1 requests for a
    /// queue of N. Rejects with `INVALID_PATH`, `CLOSED`, `CONNECTION_LOSS`, `TIMEOUT`.
    #[napi(ts_return_type = "Promise<Array<Participant>>", catch_unwind)]
    pub fn participants(&self, env: Env, path: String) -> napi::Result<JsObject> {
        let list = self.client.participants_async(&path);
        promise(
            &env,
            "participants",
            async move { Ok(list.await?.into_iter().map(Participant::from).collect::<Vec<_>>()) },
        )
    }

    /// A participant with the id `id` of the leader election on `path`
    /// (Curator `LeaderLatch` compatible): `acquire()` joins the election
    /// and resolves once it leads; the guard is the leadership (`check()`,
    /// `state`, `signal`, fencing token); `release()` resigns. Lost
    /// leadership is not taken back by itself: acquire again to rejoin.
    /// Throws `INVALID_PATH` for a bad path, `INVALID_ARGUMENT` for an id
    /// over 64 KiB or `__REVOKE__`, `CLOSED` after `close()`.
    #[napi(catch_unwind)]
    pub fn election(&self, env: Env, path: String, id: Either<String, Buffer>) -> napi::Result<Lock> {
        let id: Vec<u8> = match id {
            Either::A(text) => text.into_bytes(),
            Either::B(bytes) => bytes.to_vec(),
        };
        let lock = self.client.election(&path, id).map_err(|e| zk_error(&env, &e))?;
        Ok(Lock { lock, session: self.session.clone() })
    }

    /// A counting semaphore on `path` with `permits` leases (Curator
    /// `InterProcessSemaphoreV2` compatible: Curator semaphores and zklock
    /// ones on one path with the same permits share the leases). Each
    /// `acquire()` takes one lease (at most `permits` hold at once); the
    /// guard is the lease (`check()`, `state`, `signal`, fencing token);
    /// `release()` returns it. `data` is stored in the lease node. Throws
    /// `INVALID_ARGUMENT` for permits that are not an integer from 1 to
    /// 2147483647 and for data over 64 KiB or `__REVOKE__`,
    /// `INVALID_PATH` for a bad path, `CLOSED` after `close()`.
    #[napi(catch_unwind)]
    pub fn semaphore(
        &self,
        env: Env,
        path: String,
        permits: f64,
        data: Option<Either<String, Buffer>>,
    ) -> napi::Result<Lock> {
        if !(permits.fract() == 0.0 && (1.0..=f64::from(i32::MAX)).contains(&permits)) {
            let e = core::Error::new(
                core::ErrorKind::InvalidArgument,
                format!("permits must be an integer from 1 to 2147483647, got {permits}"),
            );
            return Err(zk_error(&env, &e));
        }
        let data = node_data(data);
        let options = core::LockOptions::default().data(data);
        // A whole number in range, checked above.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let lock = self.client.semaphore(&path, permits as usize, options).map_err(|e| zk_error(&env, &e))?;
        Ok(Lock { lock, session: self.session.clone() })
    }

    /// A multi-lock over `members` (each a path and a mode, `"EXCLUSIVE"`
    /// by default): `acquire()` takes all of them or none, in one order
    /// (by path) so that two multi-locks sharing paths never deadlock,
    /// under one deadline and one `AbortSignal`. Throws `INVALID_ARGUMENT`
    /// for no member, a path named twice, an unknown mode or a member with
    /// a key other than `path` and `mode`,
    /// `INVALID_PATH` for a bad path, `CLOSED` after `close()`.
    #[napi(catch_unwind)]
    pub fn multi_lock(&self, env: Env, members: Vec<MultiLockMember>) -> napi::Result<MultiLock> {
        let mut list = Vec::with_capacity(members.len());
        for m in &members {
            let mode = match m.mode.as_deref() {
                None | Some("EXCLUSIVE") => core::LockMode::Exclusive,
                Some("READ") => core::LockMode::Read,
                Some("WRITE") => core::LockMode::Write,
                Some(other) => {
                    let message =
                        format!("multi-lock member {}: mode must be EXCLUSIVE, READ or WRITE, got {other:?}", m.path);
                    return Err(zk_error(&env, &core::Error::new(core::ErrorKind::InvalidArgument, message)));
                },
            };
            list.push((m.path.as_str(), mode));
        }
        let multi = self.client.multi_lock(&list).map_err(|e| zk_error(&env, &e))?;
        Ok(MultiLock { multi, session: self.session.clone() })
    }

    /// The leader of the election on `path` (its `data` is its id), or
    /// `null` when nobody takes part. Rejects like `participants()`.
    #[napi(ts_return_type = "Promise<Participant | null>", catch_unwind)]
    pub fn leader(&self, env: Env, path: String) -> napi::Result<JsObject> {
        let leader = self.client.leader_async(&path);
        promise(&env, "leader", async move { Ok(leader.await?.map(Participant::from)) })
    }

    /// Calls `callback(state)` on the JavaScript thread on every change of
    /// this client's connection: `"SUSPENDED"` (connection lost, locks
    /// suspended), `"RECONNECTED"` (same session back), `"LOST"` (session
    /// expired: every lock lost), `"CONNECTED"` (a new session). It does not
    /// keep the process alive and is not called once the client is closed.
    /// Returns the subscription whose `cancel()` takes it back. Throws
    /// `CLOSED` after `close()`.
    #[napi(ts_args_type = "callback: (state: ConnectionState) => void", catch_unwind)]
    pub fn on_connection_state(&self, env: Env, callback: JsFunction) -> napi::Result<Subscription> {
        if self.client.is_closed() {
            let e = core::Error::new(core::ErrorKind::Closed, "the client is closed");
            return Err(zk_error(&env, &e));
        }
        let callback = string_callback(&env, callback)?;
        Ok(Subscription { inner: self.client.on_connection_state(move |state| callback.call(state.name())) })
    }

    /// The id of the current ZooKeeper session (it changes when an expired
    /// session is replaced). Throws `CLOSED` after `close()`, and `TIMEOUT`
    /// or `CONNECTION_LOSS` while no session is established.
    #[napi(catch_unwind)]
    pub fn session_id(&self, env: Env) -> napi::Result<BigInt> {
        self.client.session_id().map(BigInt::from).map_err(|e| zk_error(&env, &e))
    }

    /// Moves this client to the servers of `hosts`
    /// (`"host:port[,host:port...][/chroot]"`: an ensemble that grew,
    /// shrank or moved), keeping its session and every lock. If the server
    /// connected now is in the new list nothing else happens; if not, the
    /// client reconnects to one of the new list (its locks are
    /// `"SUSPENDED"` for that moment, `"HELD"` again once the session is
    /// back). Never blocks. Throws `INVALID_ARGUMENT` for a malformed
    /// connect string or another chroot than the client's (none means the
    /// same), `INVALID_PATH` for a chroot that is no valid node path,
    /// `CLOSED` after `close()`.
    #[napi(catch_unwind)]
    pub fn set_hosts(&self, env: Env, hosts: String) -> napi::Result<()> {
        self.client.set_hosts(&hosts).map_err(|e| zk_error(&env, &e))
    }

    /// Asks the holder of the lock node `nodePath` (a holder's
    /// `guard.nodePath`, or a participant's) to let go: writes
    /// `__REVOKE__` to it as Curator's `Revoker` does, so a zklock holder's
    /// `guard.onRevocation()` callbacks and a Curator holder's
    /// `RevocationListener` are told. The holder decides; nothing is taken
    /// from it. Resolves with `true`, or `false` if the node is gone.
    /// Rejects with `INVALID_PATH` for a malformed path, `NO_AUTH` when the
    /// node's ACL does not let this client write it, `CLOSED`,
    /// `CONNECTION_LOSS` / `TIMEOUT` as `participants()`.
    #[napi(ts_return_type = "Promise<boolean>", catch_unwind)]
    pub fn revoke(&self, env: Env, node_path: String) -> napi::Result<JsObject> {
        promise(&env, "revoke", self.client.revoke_async(&node_path))
    }

    /// A counting semaphore on `path` whose permits are the shared count at
    /// `countPath` (Curator's `InterProcessSemaphoreV2` with a
    /// `SharedCountReader`; the count as Curator's `SharedCount` keeps it:
    /// `setSharedCount()`). Each `acquire()` reads the count and watches it
    /// while it waits: when it grows, waiters look at the queue again; when
    /// it shrinks, leases held stay held (new ones wait until fewer are held
    /// than the count; a negative count is 0). An acquire whose count node
    /// is missing, or goes or stops holding a count while it waits,
    /// rejects (`ZOOKEEPER`, `INVALID_ARGUMENT`), its node cleaned up.
    /// Otherwise as `semaphore()`. Throws `INVALID_ARGUMENT` for a count
    /// path that is `path`, inside it or an ancestor and for bad data, `INVALID_PATH`
    /// for a bad path, `CLOSED` after `close()`.
    #[napi(catch_unwind)]
    pub fn semaphore_with_count(
        &self,
        env: Env,
        path: String,
        count_path: String,
        data: Option<Either<String, Buffer>>,
    ) -> napi::Result<Lock> {
        let data = node_data(data);
        let options = core::LockOptions::default().data(data);
        let lock = self.client.semaphore_with_count(&path, &count_path, options).map_err(|e| zk_error(&env, &e))?;
        Ok(Lock { lock, session: self.session.clone() })
    }

    /// Sets the shared count at `path` to `count` (Curator's
    /// `SharedCount.setCount`: 4 bytes, big-endian), making the node and its
    /// parents if needed; semaphores made with `semaphoreWithCount()` on it
    /// see the new count at once. Rejects with `INVALID_ARGUMENT` for a
    /// count that is not an integer from 0 to 2147483647 or a node that has or had
    /// children (a lock path's parent), `INVALID_PATH`,
    /// `NO_AUTH`, `CLOSED`, `CONNECTION_LOSS` / `TIMEOUT` as
    /// `participants()`.
    #[napi(ts_return_type = "Promise<void>", catch_unwind)]
    pub fn set_shared_count(&self, env: Env, path: String, count: f64) -> napi::Result<JsObject> {
        let set = if count.fract() == 0.0 && (0.0..=f64::from(i32::MAX)).contains(&count) {
            // A whole number in range, checked just now.
            #[allow(clippy::cast_possible_truncation)]
            Ok(self.client.set_shared_count_async(&path, count as i32))
        } else {
            Err(core::Error::new(
                core::ErrorKind::InvalidArgument,
                format!("a shared count must be an integer from 0 to 2147483647, got {count}"),
            ))
        };
        promise(&env, "setSharedCount", async move { set?.await })
    }

    /// The shared count at `path` as written (a negative one, which a
    /// semaphore takes as 0 permits, too). Rejects with `ZOOKEEPER` when
    /// the node does not exist, `INVALID_ARGUMENT` when it does not hold a
    /// 4-byte count, `INVALID_PATH`, `CLOSED`, `CONNECTION_LOSS` /
    /// `TIMEOUT` as `participants()`.
    #[napi(ts_return_type = "Promise<number>", catch_unwind)]
    pub fn shared_count(&self, env: Env, path: String) -> napi::Result<JsObject> {
        promise(&env, "sharedCount", self.client.shared_count_async(&path))
    }

    /// A snapshot of this client's metrics (acquires by outcome, wait and
    /// hold times as histograms, suspensions, losses, reconnects, session
    /// expiries, requests by operation, cleanups pending). Never blocks;
    /// also after `close()`.
    #[napi(catch_unwind)]
    pub fn metrics(&self) -> Metrics {
        Metrics::from(self.client.metrics())
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
        let closed = self.client.close_async();
        promise(&env, "close", async move {
            closed.await;
            Ok(())
        })
    }
}

/// A counter as a JavaScript number (exact up to 2^53, far more than a
/// client counts).
#[allow(clippy::cast_precision_loss)]
fn number(n: u64) -> f64 {
    n as f64
}

/// A snapshot of a client's metrics (`client.metrics()`). Every counter
/// only grows over the client's life (hand them to Prometheus as
/// counters); `cleanupsPending` is a gauge.
#[napi(object, object_from_js = false)]
pub struct Metrics {
    /// Acquires granted (every lock kind, elections and semaphore leases;
    /// each member of a multi-lock).
    pub acquires_granted: f64,
    /// Acquires that ended at their deadline (a `tryAcquire()` that found
    /// the lock held included).
    pub acquires_timed_out: f64,
    /// Acquires cancelled (`AbortSignal`, `lock.cancel()`).
    pub acquires_cancelled: f64,
    /// Acquires that failed otherwise (connection, session, refusals, a
    /// closed client).
    pub acquires_failed: f64,
    /// How long granted acquires waited.
    pub wait_time: Histogram,
    /// How long locks were held: from the grant to the release or the loss.
    pub hold_time: Histogram,
    /// Times a held lock became suspended (connection trouble).
    pub suspensions: f64,
    /// Held locks lost (session expired, node deleted, ...; not a close).
    pub losses: f64,
    /// Times a lost connection came back with the same session.
    pub reconnects: f64,
    /// Sessions that ended without a close (expired).
    pub session_expiries: f64,
    /// Requests written to ZooKeeper by operation, as ZooKeeper names it
    /// (`create2`, `getData`, `sync`, `ping`, ...).
    pub requests: std::collections::HashMap<String, f64>,
    /// Background cleanups (node deletions) not finished yet.
    pub cleanups_pending: f64,
}

/// A histogram of durations as Prometheus keeps one (in [`Metrics`]).
#[napi(object, object_from_js = false)]
pub struct Histogram {
    /// How many durations were observed.
    pub count: f64,
    /// Their sum, in seconds.
    pub sum_seconds: f64,
    /// One per bucket, in order: its upper bound in seconds (`le`) and how
    /// many were at most that (cumulative; `count` is the `+Inf` bucket).
    pub buckets: Vec<Bucket>,
}

/// A bucket of a [`Histogram`].
#[napi(object, object_from_js = false)]
pub struct Bucket {
    /// The upper bound, in seconds.
    pub le: f64,
    /// How many durations were at most `le` (cumulative).
    pub count: f64,
}

impl From<core::Histogram> for Histogram {
    fn from(h: core::Histogram) -> Histogram {
        Histogram {
            count: number(h.count),
            sum_seconds: h.sum_seconds,
            buckets: h.buckets.into_iter().map(|(le, n)| Bucket { le, count: number(n) }).collect(),
        }
    }
}

impl From<core::Metrics> for Metrics {
    fn from(m: core::Metrics) -> Metrics {
        Metrics {
            acquires_granted: number(m.acquires_granted),
            acquires_timed_out: number(m.acquires_timed_out),
            acquires_cancelled: number(m.acquires_cancelled),
            acquires_failed: number(m.acquires_failed),
            wait_time: m.wait_time.into(),
            hold_time: m.hold_time.into(),
            suspensions: number(m.suspensions),
            losses: number(m.losses),
            reconnects: number(m.reconnects),
            session_expiries: number(m.session_expiries),
            requests: m.requests.into_iter().map(|(op, n)| (op.to_owned(), number(n))).collect(),
            cleanups_pending: number(m.cleanups_pending),
        }
    }
}

/// A lock participant as seen in the queue of a lock path.
#[napi(object, object_from_js = false)]
pub struct Participant {
    /// Child name, e.g. `_c_<uuid>-lock-0000000003`.
    pub name: String,
    /// The sequence number the server appended.
    pub sequence: i64,
    /// `"READER"` or `"WRITER"` (exclusive locks, write sides and election
    /// participants are writers).
    #[napi(ts_type = "NodeKind")]
    pub kind: String,
    /// Whether this participant holds the lock now.
    pub holds: bool,
    /// The node's data (chosen by its owner; may be empty).
    pub data: Buffer,
    /// The id of the session that owns the node (compare with
    /// `client.sessionId()`).
    pub session_id: BigInt,
}

impl From<core::Participant> for Participant {
    fn from(p: core::Participant) -> Participant {
        Participant {
            name: p.name,
            sequence: p.sequence,
            kind: p.kind.name().to_owned(),
            holds: p.holds,
            data: p.data.into(),
            session_id: BigInt::from(p.session_id),
        }
    }
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

/// The cancel token of one acquire (`index.js` makes one per acquire
/// given an `AbortSignal`, and cancels it when the signal aborts).
#[napi(js_name = "_CancelToken")]
pub struct CancelToken {
    token: core::CancelToken,
}

impl Default for CancelToken {
    fn default() -> CancelToken {
        CancelToken::new()
    }
}

#[napi]
impl CancelToken {
    /// A token that is not cancelled.
    #[napi(constructor, catch_unwind)]
    pub fn new() -> CancelToken {
        CancelToken { token: core::CancelToken::new() }
    }

    /// Cancels the acquire given this token (also if it has not started).
    #[napi(catch_unwind)]
    pub fn cancel(&self) {
        self.token.cancel();
    }
}

/// Options of `lock.acquire()` (and `multiLock.acquire()`, `withLock()`,
/// `withLeadership()`). Any other key (a misspelled option) is refused
/// with `ZkLockError` `INVALID_ARGUMENT` naming it and the valid ones.
#[napi(object)]
pub struct AcquireOptions {
    /// The longest to wait in total, in milliseconds: `0` tries once,
    /// absent or `Infinity` waits without limit. One deadline covers every
    /// wait and retry.
    /// More than 1e12 (about 31.7 years) waits without limit too; NaN or
    /// negative is `INVALID_ARGUMENT` (docs/input-rules.md).
    pub timeout_ms: Option<f64>,
}

/// A lock handle: exclusive, read or write side, or an election
/// participant, on one path.
///
/// Every `acquire()` is its own contender: its own node and guard. Two
/// acquires of one handle exclude each other like two clients do (a second
/// acquire while you hold the lock waits behind you until its timeout), so
/// one handle can be shared by every part of a program. There is no
/// reentrancy (JavaScript has no threads to go by) and no implicit
/// downgrade: use `guard.downgrade()`.
#[napi]
pub struct Lock {
    lock: core::Lock,
    /// Its client's session, closed by the process's exit.
    session: std::sync::Arc<Session>,
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
        self.lock.path().to_owned()
    }

    /// `"EXCLUSIVE"`, `"READ"`, `"WRITE"`, `"LEADER"` (an election
    /// participant) or `"LEASE"` (a semaphore).
    #[napi(getter, ts_return_type = "LockMode", catch_unwind)]
    pub fn mode(&self) -> String {
        self.lock.mode().name().to_owned()
    }

    /// Acquires the lock and resolves with a `Guard`. Waits at most
    /// `timeoutMs` in total (absent: without limit; `0`: try once) and
    /// rejects with `ZkLockError` `TIMEOUT` then; an aborted `signal`
    /// rejects with `CANCELLED` (that acquire only: others on the same
    /// handle go on). On timeout, abort or error our queue node is deleted.
    /// The wait takes no thread: it is a future on the core's runtime.
    ///
    /// Rejects with `TIMEOUT`, `CANCELLED`, `CLOSED`, `ZOOKEEPER` (e.g. no
    /// permission);
    /// throws `INVALID_ARGUMENT` for a NaN or negative timeout or an unknown
    /// option.
    #[napi(ts_args_type = "options?: AcquireOptions", ts_return_type = "Promise<Guard>", catch_unwind)]
    pub fn acquire(
        &self,
        env: Env,
        options: Option<AcquireOptions>,
        token: Option<ClassInstance<CancelToken>>,
    ) -> napi::Result<JsObject> {
        let opts = core_acquire_options(options, token).map_err(|e| zk_error(&env, &e))?;
        let acquire = self.lock.acquire_async(opts);
        let session = self.session.clone();
        promise_inline(&env, "acquire", async move { acquire.await.map(|g| Guard::new(g, session)) })
    }

    /// Tries once without waiting: resolves with a `Guard`, or `null` when
    /// someone else holds the lock. Rejects like `acquire()` otherwise.
    #[napi(ts_return_type = "Promise<Guard | null>", catch_unwind)]
    pub fn try_acquire(&self, env: Env) -> napi::Result<JsObject> {
        let attempt = self.lock.acquire_async(Duration::ZERO);
        let session = self.session.clone();
        promise_inline(&env, "tryAcquire", async move {
            Ok(core::tried_once(attempt.await)?.map(|g| Guard::new(g, session)))
        })
    }

    /// Cancels every acquire in progress on this handle: they reject with
    /// `CANCELLED` and leave no node. Acquires started later are not
    /// affected. (To cancel one acquire, pass it an `AbortSignal`.)
    #[napi(catch_unwind)]
    pub fn cancel(&self) {
        self.lock.cancel();
    }

    /// Whether this handle holds the lock now (held or suspended).
    #[napi(getter, catch_unwind)]
    pub fn held(&self) -> bool {
        self.lock.is_held()
    }
}

// ---------------------------------------------------------------------------
// Fenced writes
// ---------------------------------------------------------------------------

/// One ZooKeeper operation of a fenced write (`guard.fencedMulti()`).
/// `op` says which (a `FencedKind`, in any case): `'CREATE'` (`path`,
/// `data`, `mode`), `'SET_DATA'` (`path`, `data`, `version`), `'DELETE'`
/// (`path`, `version`), `'CHECK'` (`path`, `version`: writes nothing, fails
/// the write unless the node exists with that version). `version` absent matches any data version;
/// a number makes the whole write fail with `BadVersion` unless the node's
/// data version is that number (a compare-and-set). Any other key, or a key
/// that the operation does not take, is refused (`INVALID_ARGUMENT`).
#[napi(object)]
pub struct FencedOp {
    /// The operation.
    #[napi(ts_type = "FencedKind")]
    pub op: String,
    /// The node (for a sequential create, the prefix of its name). Any
    /// node outside the lock's own path.
    pub path: String,
    /// The data of a create (default empty) or a set data (required): a
    /// string (stored as UTF-8) or a Buffer.
    pub data: Option<Either<String, Buffer>>,
    /// The data version a set data, delete or check requires (an integer
    /// from 0 to 2147483647); absent: any.
    pub version: Option<f64>,
    /// How a create's node lives (default `'PERSISTENT'`); the sequential
    /// modes append a ten-digit sequence number to its name.
    #[napi(ts_type = "CreateMode")]
    pub mode: Option<String>,
}

/// What one operation of a successful fenced write did, in the order of
/// the operations: `op` as the operation's (`'CREATE'`, `'SET_DATA'`,
/// `'DELETE'`, `'CHECK'`), with `path` for a create (the new node's path,
/// with the sequence number for a sequential mode) and `version` for a set
/// data (the node's new data version).
#[napi(object, object_from_js = false)]
pub struct FencedResult {
    /// The operation that did it.
    #[napi(ts_type = "FencedKind")]
    pub op: String,
    /// For a create: the path of the new node.
    pub path: Option<String>,
    /// For a set data: the node's new data version.
    pub version: Option<i32>,
}

impl From<core::FencedResult> for FencedResult {
    fn from(r: core::FencedResult) -> FencedResult {
        let op = r.kind().name().to_owned();
        let (path, version) = match r {
            core::FencedResult::Created { path } => (Some(path), None),
            core::FencedResult::DataSet { version } => (None, Some(version)),
            _ => (None, None),
        };
        FencedResult { op, path, version }
    }
}

/// The words of a vocabulary, for a message: `"A, B or C"`.
fn names(v: &core::vocabulary::Vocabulary) -> String {
    let words: Vec<&str> = v.words.iter().map(|w| w.name).collect();
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => words.join(""),
    }
}

/// The core's operations of a fenced write. Only translates (the core
/// decides paths, negative versions, the size): `INVALID_ARGUMENT` naming
/// the operation's index for an unknown `op` or `mode`, a key the
/// operation does not take, a set data without data, a version that is not
/// an integer of ZooKeeper's range (32 bits).
fn fenced_ops(ops: Vec<FencedOp>) -> core::Result<Vec<core::FencedOp>> {
    let mut out = Vec::with_capacity(ops.len());
    for (i, spec) in ops.into_iter().enumerate() {
        let at = |what: String| {
            core::Error::new(
                core::ErrorKind::InvalidArgument,
                format!("fenced write, operation {i} ({}): {what}", spec.op),
            )
        };
        let data: Option<Vec<u8>> = match &spec.data {
            Some(Either::A(text)) => Some(text.clone().into_bytes()),
            Some(Either::B(bytes)) => Some(bytes.to_vec()),
            None => None,
        };
        let version = match spec.version {
            None => None,
            Some(v) if v.fract() == 0.0 && (f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&v) => {
                // A whole number in range, checked here.
                #[allow(clippy::cast_possible_truncation)]
                Some(v as i32)
            },
            Some(v) => return Err(at(format!("version {v} is not an integer of 32 bits"))),
        };
        let takes = |data_ok: bool, version_ok: bool, mode_ok: bool| -> core::Result<()> {
            for (given, ok, key) in [
                (data.is_some(), data_ok, "data"),
                (version.is_some(), version_ok, "version"),
                (spec.mode.is_some(), mode_ok, "mode"),
            ] {
                if given && !ok {
                    return Err(at(format!("{} takes no {key}", spec.op)));
                }
            }
            Ok(())
        };
        let path = spec.path.clone();
        out.push(match core::FencedKind::from_name(&spec.op.to_ascii_uppercase()) {
            Some(core::FencedKind::Create) => {
                takes(true, false, true)?;
                let mode = match spec.mode.as_deref() {
                    None => core::CreateMode::Persistent,
                    Some(name) => core::CreateMode::from_name(name).ok_or_else(|| {
                        at(format!(
                            "mode must be a CreateMode ({}), got {name:?}",
                            names(&core::CreateMode::VOCABULARY)
                        ))
                    })?,
                };
                core::FencedOp::create(path, data.unwrap_or_default(), mode)
            },
            Some(core::FencedKind::SetData) => {
                takes(true, true, false)?;
                let Some(data) = data else { return Err(at("data is required".into())) };
                core::FencedOp::set_data(path, data, version)
            },
            Some(core::FencedKind::Delete) => {
                takes(false, true, false)?;
                core::FencedOp::delete(path, version)
            },
            Some(core::FencedKind::Check) => {
                takes(false, true, false)?;
                core::FencedOp::check(path, version)
            },
            _ => {
                return Err(core::Error::new(
                    core::ErrorKind::InvalidArgument,
                    format!(
                        "fenced write, operation {i}: op must be a FencedKind ({}), got {:?}",
                        names(&core::FencedKind::VOCABULARY),
                        spec.op
                    ),
                ))
            },
        });
    }
    Ok(out)
}

/// A fenced write's Promise: resolves with the results, rejects with the
/// core's error (its `failedOp` on it).
fn fenced_promise(
    env: &Env,
    write: impl Future<Output = core::Result<Vec<core::FencedResult>>> + Send + 'static,
) -> napi::Result<JsObject> {
    promise_inline(env, "fencedMulti", async move {
        Ok(write.await?.into_iter().map(FencedResult::from).collect::<Vec<_>>())
    })
}

// ---------------------------------------------------------------------------
// Guard
// ---------------------------------------------------------------------------

/// Proof of holding a lock. Release it with `await guard.release()` in a
/// `finally` (or let `client.withLock()` do it); where the runtime has
/// `await using` (not Node 18 to 22), `Symbol.asyncDispose` releases it at
/// the end of the block. A guard that is garbage collected unreleased is
/// released in the background.
#[napi]
pub struct Guard {
    guard: core::Guard,
    /// Its client's session, closed by the process's exit.
    session: std::sync::Arc<Session>,
}

impl Guard {
    /// The guard as the value of a Promise.
    fn new(guard: core::Guard, session: std::sync::Arc<Session>) -> Owned<Guard> {
        Owned(Guard { guard, session })
    }

    fn get(&self) -> &core::Guard {
        &self.guard
    }
}

impl Drop for Guard {
    /// Runs in the GC finalizer, on the JavaScript thread: starts the
    /// release in the background (the core's async release does not block;
    /// a guard already released gives `NOT_HELD`, ignored).
    fn drop(&mut self) {
        drop(self.guard.release_async());
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

    /// Releases this guard; resolves with `"RELEASED"`, or `"PENDING"` when
    /// the delete could not be confirmed (connection trouble; it is retried
    /// in the background until it succeeds or the session ends).
    ///
    /// Rejects with `NOT_HELD` if already released, `LOCK_LOST` if the lock
    /// had been lost before (the critical section may have run without it;
    /// our node is cleaned up all the same), `CLOSED` if the client was
    /// closed (the node went with the session).
    #[napi(ts_return_type = "Promise<ReleaseStatus>", catch_unwind)]
    pub fn release(&self, env: Env) -> napi::Result<JsObject> {
        let release = self.guard.release_async();
        promise_inline(&env, "release", async move { Ok(release.await?.name().to_owned()) })
    }

    /// A fenced write: makes `ops` in one ZooKeeper transaction with a
    /// check that this guard's lock node still exists, so they are made all
    /// or none, and only while the lock is ours, whatever this process
    /// believes: a holder paused past its session, or whose node was
    /// deleted, has its write refused by ZooKeeper itself. For state kept
    /// in ZooKeeper that only the lock's holder may change. Resolves with
    /// one result per operation, in order; an empty array only checks.
    /// Waits (without a thread) for one request, first for the connection
    /// if it is down, at most the client's operation timeout.
    ///
    /// Throws `INVALID_ARGUMENT` naming the operation's index for an
    /// unknown `op`, `mode` or key, a key the operation does not take, a
    /// version that is not a 32-bit integer; `TypeError` for a value of the
    /// wrong type. Rejects, nothing sent, with `INVALID_PATH` /
    /// `INVALID_ARGUMENT` naming the operation's index (a malformed path,
    /// one inside the lock's own path, a negative version, a request or
    /// reply over one ZooKeeper packet: 1 MiB less 1 KiB, a 68-byte Stat
    /// per setData and create in the reply). Rejects, nothing written, with
    /// `NOT_HELD` once released,
    /// `LOCK_LOST` when the lock is lost (known before, or ZooKeeper found
    /// our node gone or the session ended), `CLOSED` after `close()`; with
    /// `ZOOKEEPER` (or `NO_AUTH`, `INVALID_ARGUMENT`) when ZooKeeper
    /// refused one of `ops`, the error's `failedOp` then naming it: `{
    /// index, code }` (`code` like `'BadVersion'`, `'NoNode'`,
    /// `'NodeExists'`). `CONNECTION_LOSS` and `TIMEOUT` leave the outcome
    /// unknown (if the write was made, it was made while the lock was ours).
    #[napi(ts_args_type = "ops: Array<FencedOp>", ts_return_type = "Promise<Array<FencedResult>>", catch_unwind)]
    pub fn fenced_multi(&self, env: Env, ops: Vec<FencedOp>) -> napi::Result<JsObject> {
        let ops = fenced_ops(ops).map_err(|e| zk_error(&env, &e))?;
        fenced_promise(&env, self.get().fenced_multi_async(ops))
    }

    /// Write to read downgrade, for a write guard of `client.readWriteLock()`:
    /// resolves with a read guard of the same pair whose node takes this
    /// write node's sequence, granted at once (no writer queued behind can
    /// slip in); then release this guard to let other readers in.
    ///
    /// Rejects with `INVALID_ARGUMENT` for a guard that is not the write
    /// side of a pair, `NOT_HELD` once released, what `check()` throws if
    /// the write lock is not safely held, `LOCK_LOST` if the write node was
    /// gone when the read node was to be made (one transaction with a check
    /// of the write node).
    #[napi(ts_return_type = "Promise<Guard>", catch_unwind)]
    pub fn downgrade(&self, env: Env) -> napi::Result<JsObject> {
        let downgrade = self.guard.downgrade_async();
        let session = self.session.clone();
        promise_inline(&env, "downgrade", async move { downgrade.await.map(|g| Guard::new(g, session)) })
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
        self.get().state().name().to_owned()
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
    /// not keep the process alive. Returns the subscription whose
    /// `cancel()` takes the callback back.
    #[napi(ts_args_type = "callback: (state: LockState) => void", catch_unwind)]
    pub fn on_state_change(&self, env: Env, callback: JsFunction) -> napi::Result<Subscription> {
        let callback = string_callback(&env, callback)?;
        Ok(Subscription { inner: self.get().on_state_change(move |state| callback.call(state.name())) })
    }

    /// Calls `callback()` on the JavaScript thread when someone asks the
    /// holder of this guard to let go (`client.revoke()`, or Curator's
    /// `Revoker`: revocation, Curator-compatible). Nothing is taken away:
    /// the lock stays held and the holder decides (for example: finish,
    /// then release). If a request came before, it is called once soon.
    /// The callback does not keep the process alive. Returns the
    /// subscription whose `cancel()` takes it back.
    #[napi(ts_args_type = "callback: () => void", catch_unwind)]
    pub fn on_revocation(&self, env: Env, callback: JsFunction) -> napi::Result<Subscription> {
        let callback = unit_callback(&env, callback)?;
        Ok(Subscription { inner: self.get().on_revocation(move || callback.call(())) })
    }

    /// Whether someone asked the holder of this guard to let go (see
    /// `onRevocation()`) while it held the lock.
    #[napi(getter, catch_unwind)]
    pub fn revocation_requested(&self) -> bool {
        self.get().revocation_requested()
    }

    /// Calls `callback(error)` once, on the JavaScript thread, when this
    /// guard is no longer safely held (the core's `Guard::lost`: lost,
    /// suspended, past its safety clock, released, or its client closed),
    /// with the error `check()` throws then. Behind `guard.signal`
    /// (index.js). Does not keep Node running.
    #[napi(js_name = "_onLost", skip_typescript, catch_unwind)]
    pub fn on_lost(&self, env: Env, callback: JsFunction) -> napi::Result<()> {
        let callback = lost_callback(&env, callback)?;
        let lost = self.get().lost();
        napi::bindgen_prelude::spawn(async move { callback.call(lost.await) });
        Ok(())
    }
}

/// The test hooks (`Guard._errorForKind`, `_failNextObjects`,
/// `_panicForTest`): only in the test build (cargo feature `test-hooks`,
/// `npm run build:test`, `make node`), never in the published packages,
/// where `index.js` exports no `__` names either.
#[cfg(feature = "test-hooks")]
#[napi]
impl Guard {
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

    /// Test hook: the next `count` guards, multi-guards or clients that a
    /// Promise of this thread resolves with cannot be made (as after
    /// `worker.terminate()`): the Promise rejects, and the value is dropped
    /// (a guard released, a client closed), never leaked.
    #[napi(js_name = "_failNextObjects", skip_typescript, catch_unwind)]
    pub fn fail_next_objects(count: u32) {
        FAIL_NEXT_OBJECTS.with(|n| n.set(count));
    }

    /// Test hook: panics on purpose, where `place` says: `"sync"` in this
    /// call, `"promise"` in the work of the Promise it returns. Either must
    /// end as a `ZkLockError` `INTERNAL` (thrown or rejected), never abort
    /// the process.
    #[napi(js_name = "_panicForTest", skip_typescript, catch_unwind)]
    pub fn panic_for_test(env: Env, place: String) -> napi::Result<JsObject> {
        match place.as_str() {
            "sync" => panic!("test panic in a synchronous call"),
            "promise" => promise_inline(&env, "a test", async { panic_in_promise() }),
            _ => Err(type_error(&env, "ERR_INVALID_ARG_VALUE", "place must be \"sync\" or \"promise\"")),
        }
    }
}

/// A member of `client.multiLock()`.
#[napi(object)]
pub struct MultiLockMember {
    /// The lock path.
    pub path: String,
    /// `"EXCLUSIVE"` (the default), `"READ"` or `"WRITE"`.
    #[napi(ts_type = "Extract<LockMode, 'EXCLUSIVE' | 'READ' | 'WRITE'>")]
    pub mode: Option<String>,
}

/// Several locks taken all or none (from `client.multiLock()`): each
/// member is an ordinary lock on its path, taken one after another in one
/// order (by path).
#[napi]
pub struct MultiLock {
    multi: core::MultiLock,
    /// Its client's session, closed by the process's exit.
    session: std::sync::Arc<Session>,
}

#[napi]
impl MultiLock {
    /// Not callable: throws `TypeError` `ERR_ILLEGAL_CONSTRUCTOR`.
    #[napi(constructor, skip_typescript, catch_unwind)]
    pub fn new_from_js(env: Env) -> napi::Result<Self> {
        Err(illegal_constructor(&env, "MultiLock", "client.multiLock()"))
    }

    /// The member paths, in the order an acquire takes them.
    #[napi(getter, catch_unwind)]
    pub fn paths(&self) -> Vec<String> {
        self.multi.locks().iter().map(|l| l.path().to_owned()).collect()
    }

    /// Takes every member: resolves with one `MultiGuard`, or rejects with
    /// the first failing member's error (`TIMEOUT` when `timeoutMs`, which
    /// covers the whole set, runs out; `CANCELLED` when the `signal`
    /// aborts; `LOCK_LOST` naming a member lost before the set was held,
    /// at once even while a later member waits in its queue) after giving
    /// back every member taken so far. Throws `INVALID_ARGUMENT` like
    /// `lock.acquire()`.
    #[napi(ts_args_type = "options?: AcquireOptions", ts_return_type = "Promise<MultiGuard>", catch_unwind)]
    pub fn acquire(
        &self,
        env: Env,
        options: Option<AcquireOptions>,
        token: Option<ClassInstance<CancelToken>>,
    ) -> napi::Result<JsObject> {
        let opts = core_acquire_options(options, token).map_err(|e| zk_error(&env, &e))?;
        let acquire = self.multi.acquire_async(opts);
        let session = self.session.clone();
        promise_inline(&env, "acquire", async move {
            acquire.await.map(|guard| Owned(MultiGuard { guard, _session: session }))
        })
    }

    /// Tries each member once: resolves with a `MultiGuard`, or `null`
    /// (nothing held) when one of them is held by someone else.
    #[napi(ts_return_type = "Promise<MultiGuard | null>", catch_unwind)]
    pub fn try_acquire(&self, env: Env) -> napi::Result<JsObject> {
        let attempt = self.multi.acquire_async(Duration::ZERO);
        let session = self.session.clone();
        promise_inline(&env, "tryAcquire", async move {
            Ok(core::tried_once(attempt.await)?.map(|guard| Owned(MultiGuard { guard, _session: session })))
        })
    }
}

/// Every member of a multi-lock held. Release it with `await
/// guard.release()` in a `finally` (or by `Symbol.asyncDispose`, as a
/// `Guard`); one that is garbage collected unreleased is released in the
/// background.
#[napi]
pub struct MultiGuard {
    guard: core::MultiGuard,
    /// Its client's session, closed by the process's exit (only held).
    _session: std::sync::Arc<Session>,
}

impl Drop for MultiGuard {
    /// As `Guard`'s: starts the release in the background.
    fn drop(&mut self) {
        drop(self.guard.release_async());
    }
}

#[napi]
impl MultiGuard {
    /// Not callable: throws `TypeError` `ERR_ILLEGAL_CONSTRUCTOR`.
    #[napi(constructor, skip_typescript, catch_unwind)]
    pub fn new_from_js(env: Env) -> napi::Result<Self> {
        Err(illegal_constructor(&env, "MultiGuard", "multiLock.acquire()"))
    }

    /// Throws unless every member is safely held now: the first failing
    /// member's error (`CONNECTION_LOSS`, `LOCK_LOST`, `NOT_HELD`,
    /// `CLOSED`), naming its path.
    #[napi(catch_unwind)]
    pub fn check(&self, env: Env) -> napi::Result<()> {
        self.guard.check().map_err(|e| zk_error(&env, &e))
    }

    /// `"RELEASED"` once released, `"LOST"` if any member is lost, else
    /// `"SUSPENDED"` if any is suspended, else `"HELD"`.
    #[napi(getter, ts_return_type = "LockState", catch_unwind)]
    pub fn state(&self) -> String {
        self.guard.state().name().to_owned()
    }

    /// Each member's fencing token, in the order of `multiLock.paths`.
    #[napi(getter, catch_unwind)]
    pub fn fencing_tokens(&self) -> Vec<BigInt> {
        self.guard.guards().iter().map(|g| BigInt::from(g.fencing_token())).collect()
    }

    /// Each member's lock node, in the order of `multiLock.paths`.
    #[napi(getter, catch_unwind)]
    pub fn node_paths(&self) -> Vec<String> {
        self.guard.guards().iter().map(core::Guard::node_path).collect()
    }

    /// Releases every member; resolves with `"RELEASED"`, or `"PENDING"`
    /// when a delete could not be confirmed (retried in the background).
    /// Rejects with the first member's error (`LOCK_LOST` if it had been
    /// lost, `NOT_HELD` if already released) after releasing every member.
    #[napi(ts_return_type = "Promise<ReleaseStatus>", catch_unwind)]
    pub fn release(&self, env: Env) -> napi::Result<JsObject> {
        let release = self.guard.release_async();
        promise_inline(&env, "release", async move { Ok(release.await?.name().to_owned()) })
    }

    /// As `guard.fencedMulti()`, fenced by every member: `ops` are made
    /// only while every member's node exists; a path inside any member's
    /// lock path is refused.
    #[napi(ts_args_type = "ops: Array<FencedOp>", ts_return_type = "Promise<Array<FencedResult>>", catch_unwind)]
    pub fn fenced_multi(&self, env: Env, ops: Vec<FencedOp>) -> napi::Result<JsObject> {
        let ops = fenced_ops(ops).map_err(|e| zk_error(&env, &e))?;
        fenced_promise(&env, self.guard.fenced_multi_async(ops))
    }

    /// As `Guard._onLost`, for any member (behind `multiGuard.signal`).
    #[napi(js_name = "_onLost", skip_typescript, catch_unwind)]
    pub fn on_lost(&self, env: Env, callback: JsFunction) -> napi::Result<()> {
        let callback = lost_callback(&env, callback)?;
        let lost = self.guard.lost();
        napi::bindgen_prelude::spawn(async move { callback.call(lost.await) });
        Ok(())
    }
}

/// The work of `_panicForTest("promise")`.
#[cfg(feature = "test-hooks")]
fn panic_in_promise() -> core::Result<()> {
    panic!("test panic in the work of a Promise")
}

/// `callback(error)` as an unreferenced [`JsCallback`] of core errors
/// (behind `guard.signal` and `multiGuard.signal`).
fn lost_callback(env: &Env, callback: JsFunction) -> napi::Result<JsCallback<core::Error>> {
    let mut tsfn: ThreadsafeFunction<core::Error, ErrorStrategy::Fatal> =
        callback.create_threadsafe_function(0, |ctx: ThreadSafeCallContext<core::Error>| {
            // A napi::Error made from a JS value converts back to that value.
            let err = zk_error(&ctx.env, &ctx.value);
            let value = unsafe {
                let raw = <napi::Error as ToNapiValue>::to_napi_value(ctx.env.raw(), err)?;
                <JsUnknown as napi::NapiValue>::from_raw_unchecked(ctx.env.raw(), raw)
            };
            Ok(vec![value])
        })?;
    tsfn.unref(env)?;
    Ok(JsCallback(Some(tsfn)))
}

/// A JavaScript callback called from the core's threads (`T` is what it
/// is given): behind `guard.onStateChange()` (the state's name, on the
/// core's event thread) and `guard.signal` (the error of `Guard::lost`).
/// Unreferenced: it does not keep Node running. napi-rs asserts when
/// releasing it fails (as it can while Node shuts down): the drop,
/// wherever the core drops the callback, catches that rather than let it
/// unwind into the core or into C.
struct JsCallback<T: 'static>(Option<ThreadsafeFunction<T, ErrorStrategy::Fatal>>);

/// A JavaScript function called with one string from zklock's threads (it
/// does not keep the process alive).
fn string_callback(env: &Env, callback: JsFunction) -> napi::Result<JsCallback<&'static str>> {
    let mut tsfn: ThreadsafeFunction<&'static str, ErrorStrategy::Fatal> =
        callback.create_threadsafe_function(0, |ctx: ThreadSafeCallContext<&'static str>| {
            // Runs on the JavaScript thread, called from C: an error here
            // (none is expected) reaches 'uncaughtException' like an
            // exception of the callback itself.
            Ok(vec![ctx.env.create_string(ctx.value)?])
        })?;
    tsfn.unref(env)?;
    Ok(JsCallback(Some(tsfn)))
}

/// A JavaScript function called without arguments from zklock's threads
/// (it does not keep the process alive): behind `guard.onRevocation()`.
fn unit_callback(env: &Env, callback: JsFunction) -> napi::Result<JsCallback<()>> {
    let mut tsfn: ThreadsafeFunction<(), ErrorStrategy::Fatal> =
        callback.create_threadsafe_function(0, |_: ThreadSafeCallContext<()>| Ok(Vec::<JsUnknown>::new()))?;
    tsfn.unref(env)?;
    Ok(JsCallback(Some(tsfn)))
}

/// A registered callback (`guard.onStateChange`, `guard.onRevocation`,
/// `client.onConnectionState`): `cancel()` takes it back.
#[napi]
pub struct Subscription {
    inner: core::Subscription,
}

#[napi]
impl Subscription {
    /// Takes the callback back: it is not called after this returns.
    /// Idempotent.
    #[napi(catch_unwind)]
    pub fn cancel(&self) {
        self.inner.cancel();
    }
}

impl<T: 'static> JsCallback<T> {
    fn call(&self, value: T) {
        if let Some(tsfn) = &self.0 {
            // NonBlocking: fails (ignored) only when Node is going away.
            tsfn.call(value, ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

impl<T: 'static> Drop for JsCallback<T> {
    fn drop(&mut self) {
        if let Some(tsfn) = self.0.take() {
            let _ = catch_unwind(AssertUnwindSafe(move || drop(tsfn)));
        }
    }
}

//! `zklock._zklock`: the native half of the Python package `zklock`.
//!
//! A thin layer over `zklock-core`: every lock decision is made by the core.
//! This module adds what Python needs:
//!
//! - blocking waits that release the GIL and still honour Ctrl-C: the core
//!   call runs on the core's runtime (`acquire_async`; connect through
//!   `connect_then`) while the caller sleeps until its outcome or a signal
//!   wakes it ([`wait`]: Python's wakeup fd on the main thread), running
//!   Python's signal handlers then; an exception from a handler
//!   (KeyboardInterrupt) cancels that call's `CancelToken`, so no lock node
//!   is left, and is then raised;
//! - asyncio without a thread per await: `acquire_start`/`release_start`
//!   start the core call and hand its outcome to a Python `done(ok,
//!   value)` on the client's event thread, which completes an asyncio
//!   future through `loop.call_soon_threadsafe`;
//! - one lock object = one core lock handle with a stack of guards,
//!   newest last (`release()` pops the newest, whichever thread took
//!   it); every acquire is its own contender, as in the core: a nested
//!   `with lock:` on a lock made without `reentrant=True` waits behind
//!   itself;
//! - state-change callbacks called on the client's event thread with the
//!   GIL taken there;
//! - errors: [`to_py_err`] hands the core's error kind name and message to
//!   `zklock._errors._from_code`, the one place that maps a kind to its
//!   Python exception class;
//! - numbers and strings from Python turned into what the core's rules
//!   take ([`seconds`], [`text`]): timeouts go through the core's
//!   `option_timeout_from_secs` / `acquire_timeout_from_secs`, the one rule
//!   of every language;
//! - fork: every object remembers the process that made it ([`Origin`]).
//!   In a forked child an inherited object raises Closed at once and is
//!   leaked rather than dropped: its session, runtime and threads belong to
//!   the parent (the child has none of its threads), so touching it could
//!   hang or disturb the parent's session;
//! - interpreter shutdown: state callbacks stop at the package's atexit
//!   hook (`_shutdown`), which waits for those already running, so no
//!   callback enters Python while the interpreter finalizes; the hook then
//!   closes every client still alive (`_close_all`, bounded), so a thread
//!   still waiting or holding at exit leaves no node behind.
//!
//! The public, documented API is the pure-Python package `zklock`; this
//! module's own contract is `_zklock.pyi` (checked by mypy's stubtest).

// These docs describe the module's inner workings (its public API is the
// Python one), so they link to private items.
#![allow(rustdoc::private_intra_doc_links)]

mod wait;

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyString, PyTuple};
use zklock_core::{
    acquire_timeout_from_secs, option_timeout_from_secs, Acl, AcquireOptions, CancelToken, Client as CoreClient,
    ClientOptions, CreateMode, Error, ErrorKind, FencedKind, FencedOp, FencedResult, Guard, Hold, Lock as CoreLock,
    LockMode, LockOptions, LockState, MultiGuard, MultiLock as CoreMultiLock, Owner, Participant, PendingAcquire,
    ReleaseStatus, TlsOptions, MAX_OPTION_TIMEOUT, MAX_SESSION_TIMEOUT,
};

use wait::wait_for_outcome;

/// `zklock._errors._from_code`, imported once.
static FROM_CODE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Turns a core error into the Python exception of its kind: calls
/// `zklock._errors._from_code(kind_name, message, failed_op)`, the
/// package's single mapping from kind to class; `failed_op` is the core's
/// `Error::failed_op` as an `(index, code)` tuple, or None. If that import
/// fails (a broken install), the import error itself is raised.
fn to_py_err(py: Python<'_>, err: &Error) -> PyErr {
    let failed_op = err.failed_op().map(|f| (f.index, f.code.clone()));
    match FROM_CODE.import(py, "zklock._errors", "_from_code") {
        Ok(from_code) => match from_code.call1((err.kind().name(), err.message(), failed_op)) {
            Ok(exc) => PyErr::from_value(exc),
            Err(e) => e,
        },
        Err(e) => e,
    }
}

/// [`to_py_err`] from code that does not have the `Python` token at hand.
fn py_err(err: Error) -> PyErr {
    Python::attach(|py| to_py_err(py, &err))
}

fn invalid_argument(message: impl Into<String>) -> PyErr {
    py_err(Error::new(ErrorKind::InvalidArgument, message))
}

fn not_held(message: impl Into<String>) -> PyErr {
    py_err(Error::new(ErrorKind::NotHeld, message))
}

/// Locks a mutex of this module, ignoring poisoning (the data it guards
/// stays consistent: every critical section is a push, pop or replace).
fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A number of seconds given by Python, as the `f64` the core's timeout
/// rules take. Accepted: `int` of any size, `float`, and objects with
/// `__float__` or `__index__` (e.g. numpy scalars, `Decimal`, `Fraction`).
/// A number too large for a float (`10**400`) becomes an infinity of its
/// sign, as IEEE rounding would make it; the core's rule then decides.
///
/// Errors: InvalidArgument naming `name` for a bool (a bool is an int in
/// Python, but `timeout=True` is a mistake, never a number of seconds);
/// TypeError naming `name` for anything that is not a number.
fn seconds(name: &str, value: &Bound<'_, PyAny>) -> PyResult<f64> {
    let py = value.py();
    if value.is_instance_of::<PyBool>() {
        return Err(invalid_argument(format!("{name} must be a number of seconds, not a bool ({value})")));
    }
    match value.extract::<f64>() {
        Ok(v) => Ok(v),
        Err(e) if e.is_instance_of::<PyOverflowError>(py) => {
            Ok(if value.lt(0)? { f64::NEG_INFINITY } else { f64::INFINITY })
        },
        Err(e) if e.is_instance_of::<PyTypeError>(py) => Err(PyTypeError::new_err(format!(
            "{name} must be a number of seconds (int or float), not {}",
            value.get_type().name()?
        ))),
        Err(e) => Err(e),
    }
}

/// A client option's timeout in seconds, by the core's rule for options
/// (finite, > 0, at most `max`).
fn option_timeout(name: &str, value: &Bound<'_, PyAny>, max: Duration) -> PyResult<Duration> {
    option_timeout_from_secs(name, seconds(name, value)?, max).map_err(py_err)
}

/// How long an acquire may wait (`None`: without limit), from
/// `acquire(blocking, timeout)`: `blocking=False` tries once (a timeout
/// with it is InvalidArgument); `timeout=None` waits without limit; a
/// number goes through the core's rule (`acquire_timeout_from_secs`: 0
/// tries once, `inf` or more than `FOREVER` waits without limit, NaN or
/// negative, also `threading.Lock`'s -1, is InvalidArgument, whose message
/// tells to pass `timeout=None` for no limit).
fn wait_limit(blocking: bool, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Duration>> {
    match (blocking, timeout) {
        (false, None) => Ok(Some(Duration::ZERO)),
        (false, Some(_)) => Err(invalid_argument("a timeout cannot be given to a non-blocking acquire")),
        (true, None) => Ok(None),
        (true, Some(t)) => acquire_timeout_from_secs(seconds("timeout", t)?).map_err(|e| match e.kind() {
            // The core's "no value" is None in Python, and -1 is what
            // threading.Lock users try first: say so.
            ErrorKind::InvalidArgument => invalid_argument(format!(
                "{}; pass timeout=None to wait without limit (unlike threading.Lock, -1 does not mean no limit)",
                e.message()
            )),
            _ => py_err(e),
        }),
    }
}

/// A `str` argument as Rust text. A `str` that is not valid Unicode (a
/// lone surrogate such as `"\ud800"`) is an error of `kind` naming `name`
/// (InvalidPath for paths, InvalidArgument otherwise); a non-`str` is a
/// TypeError.
fn text(name: &str, value: &Bound<'_, PyAny>, kind: ErrorKind) -> PyResult<String> {
    let s = value.cast::<PyString>().map_err(|_| {
        let type_name = value.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
        PyTypeError::new_err(format!("{name} must be str, not {type_name}"))
    })?;
    match s.to_cow() {
        Ok(t) => Ok(t.into_owned()),
        Err(_) => {
            Err(py_err(Error::new(kind, format!("{name} is not valid Unicode text: it contains a lone surrogate"))))
        },
    }
}

/// The process that made an object. ZooKeeper sessions, the core's runtime
/// and its threads belong to one process: after `fork()` the child has a
/// copy of the parent's objects but none of their threads.
#[derive(Clone, Copy)]
struct Origin(u32);

impl Origin {
    fn here() -> Origin {
        Origin(std::process::id())
    }

    /// Whether this object was inherited through `fork()`.
    fn forked(self) -> bool {
        std::process::id() != self.0
    }

    /// Closed if this object was inherited through `fork()`.
    fn check(self, what: &str) -> PyResult<()> {
        if self.forked() {
            return Err(py_err(self.inherited(what)));
        }
        Ok(())
    }

    fn inherited(self, what: &str) -> Error {
        Error::new(
            ErrorKind::Closed,
            format!(
                "this {what} was made in process {} and inherited through fork(); it does not work in process {} \
                 (its ZooKeeper session and threads belong to the parent): make a new zklock.Client here",
                self.0,
                std::process::id()
            ),
        )
    }
}

/// A core object owned by a Python object: dropped as usual in the process
/// that made it, leaked in a forked child, where dropping it would close
/// the parent's session or wait forever for threads the child does not
/// have.
struct Owned<T> {
    value: Option<T>,
    origin: Origin,
}

impl<T> Owned<T> {
    fn new(value: T, origin: Origin) -> Owned<T> {
        Owned { value: Some(value), origin }
    }
}

impl<T> Deref for Owned<T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.value.as_ref().expect("Owned::value is only taken by drop")
    }
}

impl<T> Drop for Owned<T> {
    fn drop(&mut self) {
        if let Some(value) = self.value.take() {
            if self.origin.forked() {
                std::mem::forget(value);
            }
        }
    }
}

/// Set by `_shutdown` (the package's atexit hook): state callbacks are no
/// longer called.
static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);

/// State callbacks running now (or about to look at [`SHUTTING_DOWN`]).
static RUNNING_CALLBACKS: AtomicUsize = AtomicUsize::new(0);

/// Stops state callbacks for good and waits (without the GIL) until none is
/// running. Called by the package's atexit hook, while the interpreter
/// still works: from then on no zklock thread enters Python, so nothing
/// can call into an interpreter that is finalizing (which printed a PyO3
/// panic or aborted in `PyGILState_Release`). Callbacks must return
/// promptly; this waits for those already running.
#[pyfunction]
fn _shutdown(py: Python<'_>) {
    SHUTTING_DOWN.store(true, Ordering::SeqCst);
    py.detach(|| {
        while RUNNING_CALLBACKS.load(Ordering::SeqCst) > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

/// Called in the child after `os.fork()` (the package registers it with
/// `os.register_at_fork`): callbacks that were running in the parent's
/// threads do not run here.
#[pyfunction]
fn _after_fork_in_child(py: Python<'_>) {
    RUNNING_CALLBACKS.store(0, Ordering::SeqCst);
    // The parent's clients are not the child's to close at its exit.
    locked(&LIVE_CLIENTS).clear();
    *locked(&EXIT_THREAD) = None;
    // A wait of the parent's main thread had borrowed the wakeup fd: the
    // wait is not the child's, and the fd goes back (outside attack round
    // 19, G4: children kept the parent's socket as theirs).
    wait::after_fork_in_child(py);
}

/// Closes every client of this process still alive (the package's exit
/// hook, after `_shutdown`): their sessions end now, so their nodes go at
/// once rather than after the session timeout, also while another thread
/// still waits in `acquire()` or holds a lock (a daemon thread's objects
/// are never garbage at exit). Waits without the GIL up to `wait` seconds
/// in all for the servers to confirm, never longer (a server that does
/// not answer must not hold up the exit). From then on, threads other than
/// this one that come back from a zklock wait stay parked rather than
/// return into Python ([`EXIT_THREAD`]). Clients inherited through
/// `fork()` are not touched.
///
/// The clients closed here are kept (leaked) for the rest of the process:
/// dropped by the interpreter's finalization, each would wait up to 1 s
/// more, one after the other, for a server that did not answer (a client's
/// drop waits for its close); the process ends anyway, which stops their
/// threads.
#[pyfunction]
fn _close_all(py: Python<'_>, wait: f64) {
    *locked(&EXIT_THREAD) = Some(std::thread::current().id());
    let clients: Vec<Arc<CoreClient>> = locked(&LIVE_CLIENTS).drain(..).filter_map(|c| c.upgrade()).collect();
    let wait = Duration::try_from_secs_f64(wait).unwrap_or(Duration::ZERO);
    py.detach(move || {
        let deadline = Instant::now() + wait;
        let (tx, rx) = mpsc::channel();
        let mut closing = 0;
        for client in clients.iter().filter(|c| !c.is_closed()) {
            let tx = tx.clone();
            if client
                .spawn_then(client.close_async(), move |()| {
                    let _ = tx.send(());
                })
                .is_ok()
            {
                closing += 1;
            }
        }
        for _ in 0..closing {
            if rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).is_err() {
                break;
            }
        }
        std::mem::forget(clients);
    });
}

/// [`wait_limit`] for the package: the wait of `acquire(blocking,
/// timeout)` in seconds (`None`: without limit), or the error that acquire
/// would raise for these arguments.
#[pyfunction]
#[pyo3(signature = (blocking, timeout))]
fn _wait_limit(blocking: bool, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Option<f64>> {
    Ok(wait_limit(blocking, timeout)?.map(|d| d.as_secs_f64()))
}

/// Enters Python from one of zklock's threads (the client's event thread):
/// not at all once the interpreter shuts down ([`SHUTTING_DOWN`]), and
/// counted in [`RUNNING_CALLBACKS`] meanwhile so that `_shutdown` waits.
fn enter_python(f: impl FnOnce(Python<'_>)) {
    /// Counts a callback as running from before it looks at the flag
    /// until it has left Python.
    struct Running;
    impl Drop for Running {
        fn drop(&mut self) {
            RUNNING_CALLBACKS.fetch_sub(1, Ordering::SeqCst);
        }
    }
    RUNNING_CALLBACKS.fetch_add(1, Ordering::SeqCst);
    let _running = Running;
    if SHUTTING_DOWN.load(Ordering::SeqCst) {
        return;
    }
    // try_attach: never initialize or panic if the interpreter is gone
    // (embedders that finalize without atexit hooks).
    let _ = Python::try_attach(f);
}

/// The cancel handle of one asyncio acquire or release (what
/// `Lock.acquire_start` returns): `cancel()` cancels that call only.
#[pyclass(frozen, module = "zklock._zklock")]
struct Call {
    token: CancelToken,
}

#[pymethods]
impl Call {
    /// Cancels this call (the acquire fails with Cancelled and leaves no
    /// node). Never blocks; any thread; idempotent.
    fn cancel(&self) {
        self.token.cancel();
    }
}

/// Lock options: node data from `identifier` (`None`, `str` stored as
/// UTF-8, or `bytes`; anything else is a `TypeError`, a `str` that is not
/// valid Unicode InvalidArgument) and reentrancy per thread.
/// `value`, an int from `min` to 2**31 - 1 (Curator's limit for permits
/// and shared counts), named `name` in the errors: InvalidArgument out of
/// range (a bool included), TypeError for what is not an int.
fn int_in(name: &str, value: &Bound<'_, PyAny>, min: i32) -> PyResult<i32> {
    let range = || invalid_argument(format!("{name} must be an int from {min} to 2147483647, not {value}"));
    if value.is_instance_of::<PyBool>() {
        return Err(range());
    }
    match value.extract::<i64>() {
        Ok(n) => i32::try_from(n).ok().filter(|n| *n >= min).ok_or_else(range),
        Err(e) if e.is_instance_of::<PyOverflowError>(value.py()) => Err(range()),
        Err(_) => Err(PyTypeError::new_err(format!("{name} must be an int, not {}", value.get_type().name()?))),
    }
}

fn lock_options(identifier: Option<&Bound<'_, PyAny>>, reentrant: bool) -> PyResult<LockOptions> {
    let options = if reentrant { LockOptions::default().reentrant() } else { LockOptions::default() };
    let Some(id) = identifier else { return Ok(options) };
    if id.is_instance_of::<PyString>() {
        let text = text("identifier", id, ErrorKind::InvalidArgument)?;
        return Ok(options.data(text.into_bytes()));
    }
    if let Ok(b) = id.cast::<PyBytes>() {
        return Ok(options.data(b.as_bytes().to_vec()));
    }
    Err(PyTypeError::new_err(format!("identifier must be str, bytes or None, not {}", id.get_type().name()?)))
}

/// The core's client options from the arguments of `zklock.Client`:
/// `hosts`, the timeouts `[session, connect, operation]` (by the core's
/// rule for options), `[auth, sasl, acl]` and the TLS file names `[ca,
/// cert, key]`. Errors: InvalidArgument / InvalidPath for a bad value
/// (naming it), TypeError for a wrong type.
fn client_options(
    hosts: &Bound<'_, PyAny>,
    [session_timeout, connect_timeout, operation_timeout]: [&Bound<'_, PyAny>; 3],
    [auth, sasl, acl]: [Option<&Bound<'_, PyAny>>; 3],
    [tls_ca, tls_cert, tls_key]: [Option<&Bound<'_, PyAny>>; 3],
) -> PyResult<ClientOptions> {
    let hosts = text("hosts", hosts, ErrorKind::InvalidArgument)?;
    let mut options = ClientOptions::new(hosts)
        .session_timeout(option_timeout("session_timeout", session_timeout, MAX_SESSION_TIMEOUT)?)
        .connect_timeout(option_timeout("connect_timeout", connect_timeout, MAX_OPTION_TIMEOUT)?)
        .operation_timeout(option_timeout("operation_timeout", operation_timeout, MAX_OPTION_TIMEOUT)?);
    let credentials = |name: &str, pair: &Bound<'_, PyAny>| -> PyResult<(String, String)> {
        let (user, password): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair
            .extract()
            .map_err(|_| PyTypeError::new_err(format!("{name} must be a (user, password) tuple of str, or None")))?;
        Ok((
            text(&format!("{name} user"), &user, ErrorKind::InvalidArgument)?,
            text(&format!("{name} password"), &password, ErrorKind::InvalidArgument)?,
        ))
    };
    if let Some(auth) = auth {
        let (user, password) = credentials("auth", auth)?;
        options = options.digest_auth(user, password);
    }
    if let Some(sasl) = sasl {
        let (user, password) = credentials("sasl", sasl)?;
        options = options.sasl_digest_md5(user, password);
    }
    if let Some(acl) = acl {
        options = options.acl(Acl::parse(&text("acl", acl, ErrorKind::InvalidArgument)?).map_err(py_err)?);
    }
    let file =
        |name: &str, f: Option<&Bound<'_, PyAny>>| f.map(|f| text(name, f, ErrorKind::InvalidArgument)).transpose();
    let tls = TlsOptions::from_file_names(
        file("tls_ca", tls_ca)?.as_deref(),
        file("tls_cert", tls_cert)?.as_deref(),
        file("tls_key", tls_key)?.as_deref(),
    )
    .map_err(py_err)?;
    if let Some(tls) = tls {
        options = options.tls(tls);
    }
    Ok(options)
}

/// Every client this process made, weakly (a client is alive while a
/// Python object of it, a lock or a multi-lock, is): the package's exit
/// hook closes those still alive ([`_close_all`]). Emptied in a forked
/// child: the parent's sessions are not the child's to close.
static LIVE_CLIENTS: Mutex<Vec<Weak<CoreClient>>> = Mutex::new(Vec::new());

/// Set by [`_close_all`] (interpreter exit) to the thread that runs it:
/// from then on, every other thread that comes back from a zklock wait
/// stays parked (without the GIL) instead of returning into Python, as
/// Python stops daemon threads at exit anyway; a waiter that was told
/// Closed by the exit's close would otherwise print a traceback.
static EXIT_THREAD: Mutex<Option<std::thread::ThreadId>> = Mutex::new(None);

/// Parks the calling thread for good (without the GIL) if the interpreter
/// is exiting ([`EXIT_THREAD`]) and this is not the thread running the exit.
fn park_if_exiting(py: Python<'_>) {
    let exiting = *locked(&EXIT_THREAD);
    if exiting.is_some_and(|t| t != std::thread::current().id()) {
        py.detach(|| loop {
            std::thread::park();
        });
    }
}

/// A connection to a ZooKeeper ensemble (one session), the factory of locks.
///
/// Thread-safe: every method may be called from any thread. Blocking calls
/// release the GIL. Belongs to the process that made it: inherited through
/// `fork()`, it raises Closed (see [`Origin`]).
#[pyclass(frozen, module = "zklock._zklock")]
struct Client {
    /// Shared with this client's locks; registered in [`LIVE_CLIENTS`].
    inner: Owned<Arc<CoreClient>>,
    origin: Origin,
}

#[pymethods]
impl Client {
    /// Connects and opens a session; blocks (without the GIL, interruptible
    /// by Ctrl-C) until connected or `connect_timeout` seconds passed.
    ///
    /// Timeouts are numbers of seconds (see [`seconds`]) checked by the
    /// core's rule for options: finite, > 0, `session_timeout` at most
    /// `MAX_SESSION_TIMEOUT`, the others at most `MAX_OPTION_TIMEOUT`.
    ///
    /// Raises InvalidArgument / InvalidPath for a bad connect string or
    /// option (also a bool as a timeout), ConnectionLoss when no server
    /// answered in time, ZooKeeperError for other refusals (e.g. failed
    /// authentication), TypeError for arguments of the wrong type.
    /// Every argument is given by the package's `zklock.Client`, which has
    /// the defaults.
    #[new]
    #[pyo3(signature = (hosts, session_timeout, connect_timeout, operation_timeout, auth, sasl, acl, tls_ca, tls_cert, tls_key))]
    #[allow(clippy::too_many_arguments)] // the keyword arguments of zklock.Client
    fn new(
        py: Python<'_>,
        hosts: &Bound<'_, PyAny>,
        session_timeout: &Bound<'_, PyAny>,
        connect_timeout: &Bound<'_, PyAny>,
        operation_timeout: &Bound<'_, PyAny>,
        auth: Option<&Bound<'_, PyAny>>,
        sasl: Option<&Bound<'_, PyAny>>,
        acl: Option<&Bound<'_, PyAny>>,
        tls_ca: Option<&Bound<'_, PyAny>>,
        tls_cert: Option<&Bound<'_, PyAny>>,
        tls_key: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let options = client_options(
            hosts,
            [session_timeout, connect_timeout, operation_timeout],
            [auth, sasl, acl],
            [tls_ca, tls_cert, tls_key],
        )?;
        // On Ctrl-C the connect goes on in the background and its client is
        // dropped (which closes its session) when it ends.
        let (done, connected) = wait::completion();
        CoreClient::connect_then(options, done).map_err(py_err)?;
        // Ctrl-C: the client, when it comes, is dropped with the channel.
        let inner = wait_for_outcome(py, connected, |_| {})?.map_err(py_err)?;
        Ok(Client::made(inner))
    }

    /// Starts a connect for asyncio (`zklock.connect`) with the arguments
    /// of `Client(...)` and returns at once: no thread waits meanwhile.
    /// `done(ok, value)` is called exactly once on the new client's event
    /// thread with the GIL: `(True, client)` once a server answered,
    /// `(False, exception)` otherwise (ConnectionLoss after
    /// `connect_timeout`, ZooKeeperError, NoAuth). Raises at once (and
    /// never calls `done`) for bad arguments, as `Client(...)` does. If
    /// nobody waits for the client any more, the caller closes it
    /// (`close_start`).
    #[staticmethod]
    #[pyo3(signature = (hosts, session_timeout, connect_timeout, operation_timeout, auth, sasl, acl, tls_ca, tls_cert, tls_key, done))]
    #[allow(clippy::too_many_arguments)] // the keyword arguments of zklock.connect
    fn connect_start(
        hosts: &Bound<'_, PyAny>,
        session_timeout: &Bound<'_, PyAny>,
        connect_timeout: &Bound<'_, PyAny>,
        operation_timeout: &Bound<'_, PyAny>,
        auth: Option<&Bound<'_, PyAny>>,
        sasl: Option<&Bound<'_, PyAny>>,
        acl: Option<&Bound<'_, PyAny>>,
        tls_ca: Option<&Bound<'_, PyAny>>,
        tls_cert: Option<&Bound<'_, PyAny>>,
        tls_key: Option<&Bound<'_, PyAny>>,
        done: Py<PyAny>,
    ) -> PyResult<()> {
        let options = client_options(
            hosts,
            [session_timeout, connect_timeout, operation_timeout],
            [auth, sasl, acl],
            [tls_ca, tls_cert, tls_key],
        )?;
        CoreClient::connect_then(options, move |r| {
            // Not delivered (the interpreter shuts down): the client is
            // dropped here, which closes its session.
            complete(done, move |py| match r {
                Ok(client) => Ok(Py::new(py, Client::made(client))?.into_any()),
                Err(e) => Err(to_py_err(py, &e)),
            });
        })
        .map_err(py_err)
    }

    /// An exclusive lock on `path` (Curator `InterProcessMutex` compatible).
    /// `identifier` (str or bytes) is stored in the lock node.
    #[pyo3(signature = (path, identifier=None, reentrant=false))]
    fn lock(&self, path: &Bound<'_, PyAny>, identifier: Option<&Bound<'_, PyAny>>, reentrant: bool) -> PyResult<Lock> {
        self.lock_of(path, LockMode::Exclusive, identifier, reentrant)
    }

    /// The read side of a read/write lock on `path`, as an independent handle.
    #[pyo3(signature = (path, identifier=None, reentrant=false))]
    fn read_lock(
        &self,
        path: &Bound<'_, PyAny>,
        identifier: Option<&Bound<'_, PyAny>>,
        reentrant: bool,
    ) -> PyResult<Lock> {
        self.lock_of(path, LockMode::Read, identifier, reentrant)
    }

    /// The write side of a read/write lock on `path`, as an independent handle.
    #[pyo3(signature = (path, identifier=None, reentrant=false))]
    fn write_lock(
        &self,
        path: &Bound<'_, PyAny>,
        identifier: Option<&Bound<'_, PyAny>>,
        reentrant: bool,
    ) -> PyResult<Lock> {
        self.lock_of(path, LockMode::Write, identifier, reentrant)
    }

    /// A participant with the id `identifier` (str or bytes) of the leader
    /// election on `path` (Curator `LeaderLatch` compatible): an acquire
    /// joins and waits until it leads; releasing resigns.
    #[pyo3(signature = (path, identifier))]
    fn election(&self, path: &Bound<'_, PyAny>, identifier: &Bound<'_, PyAny>) -> PyResult<Lock> {
        self.lock_of(path, LockMode::Leader, Some(identifier), false)
    }

    /// A counting semaphore on `path` with `permits` leases (Curator
    /// `InterProcessSemaphoreV2` compatible): each acquire takes one lease;
    /// `identifier` (str or bytes) is stored in the lease node.
    /// InvalidArgument for permits that are not between 1 and 2**31 - 1 (or
    /// a bool), TypeError for a permits that is not an int.
    #[pyo3(signature = (path, permits, identifier=None))]
    fn semaphore(
        &self,
        path: &Bound<'_, PyAny>,
        permits: &Bound<'_, PyAny>,
        identifier: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Lock> {
        self.origin.check("client")?;
        let path = text("path", path, ErrorKind::InvalidPath)?;
        let count = int_in("permits", permits, 1)?;
        let options = lock_options(identifier, false)?;
        // At least 1: checked by int_in.
        #[allow(clippy::cast_sign_loss)]
        let lock = self.inner.semaphore(&path, count as usize, options).map_err(py_err)?;
        Ok(Lock::new(&self.inner, self.origin, lock))
    }

    /// A counting semaphore on `path` whose permits are the shared count
    /// at `count_path` (the core's `Client::semaphore_with_count`; Curator
    /// `InterProcessSemaphoreV2` with a `SharedCountReader`). InvalidArgument
    /// for a count path that is `path`, inside it or an ancestor, InvalidPath for a bad
    /// path, TypeError for wrong types.
    #[pyo3(signature = (path, count_path, identifier=None))]
    fn semaphore_with_count(
        &self,
        path: &Bound<'_, PyAny>,
        count_path: &Bound<'_, PyAny>,
        identifier: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Lock> {
        self.origin.check("client")?;
        let path = text("path", path, ErrorKind::InvalidPath)?;
        let count_path = text("count_path", count_path, ErrorKind::InvalidPath)?;
        let options = lock_options(identifier, false)?;
        let lock = self.inner.semaphore_with_count(&path, &count_path, options).map_err(py_err)?;
        Ok(Lock::new(&self.inner, self.origin, lock))
    }

    /// Sets the shared count at `path` (the core's
    /// `Client::set_shared_count`), blocking without the GIL for a few
    /// requests. InvalidArgument for a count that is not an int from 0 to
    /// 2**31 - 1 (or a bool), TypeError for a count that is not an int.
    fn set_shared_count(&self, py: Python<'_>, path: &Bound<'_, PyAny>, count: &Bound<'_, PyAny>) -> PyResult<()> {
        self.origin.check("client")?;
        let path = text("path", path, ErrorKind::InvalidPath)?;
        let count = int_in("count", count, 0)?;
        let client = CoreClient::clone(&self.inner);
        py.detach(move || client.set_shared_count(&path, count)).map_err(|e| to_py_err(py, &e))
    }

    /// The shared count at `path` as written (the core's
    /// `Client::shared_count`), blocking without the GIL for one request.
    fn shared_count(&self, py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<i32> {
        self.origin.check("client")?;
        let path = text("path", path, ErrorKind::InvalidPath)?;
        let client = CoreClient::clone(&self.inner);
        py.detach(move || client.shared_count(&path)).map_err(|e| to_py_err(py, &e))
    }

    /// Calls `callback(state)` (`"SUSPENDED"`, `"RECONNECTED"`, `"LOST"`,
    /// `"CONNECTED"`) on every change of this client's connection, on the
    /// client's event thread with the GIL taken there; exceptions go to
    /// `sys.unraisablehook`. Returns the subscription that takes it back.
    /// Closed after close() or in a forked child.
    fn on_connection_state(&self, callback: Py<PyAny>) -> PyResult<Subscription> {
        self.origin.check("client")?;
        if self.inner.is_closed() {
            return Err(py_err(Error::new(ErrorKind::Closed, "the client is closed")));
        }
        let cb: PyCallback = Arc::new(callback);
        let inner = self.inner.on_connection_state(move |state| {
            enter_python(|py| {
                if let Err(e) = cb.call1(py, (state.name(),)) {
                    e.write_unraisable(py, Some(cb.bind(py)));
                }
            });
        });
        Ok(Subscription { cancel: Box::new(move || inner.cancel()) })
    }

    /// Moves this client to the servers of `hosts` (the core's
    /// `Client::set_hosts`): keeps the session and every lock; reconnects
    /// only if the server connected now is not in the new list. Never
    /// blocks. InvalidArgument for a malformed connect string or another
    /// chroot; Closed (also in a forked child); TypeError for a non-str.
    fn set_hosts(&self, py: Python<'_>, hosts: &Bound<'_, PyAny>) -> PyResult<()> {
        self.origin.check("client")?;
        let hosts = text("hosts", hosts, ErrorKind::InvalidArgument)?;
        self.inner.set_hosts(&hosts).map_err(|e| to_py_err(py, &e))
    }

    /// Asks the holder of the lock node `node_path` to let go (the core's
    /// `Client::revoke`, Curator's `Revoker`): True when asked, False if
    /// the node is gone. Blocks (one request, at most the operation
    /// timeout) without the GIL. InvalidPath, NoAuth, Closed,
    /// ConnectionLoss / LockTimeout.
    fn revoke(&self, py: Python<'_>, node_path: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.origin.check("client")?;
        let node_path = text("node_path", node_path, ErrorKind::InvalidPath)?;
        let client = CoreClient::clone(&self.inner);
        py.detach(move || client.revoke(&node_path)).map_err(|e| to_py_err(py, &e))
    }

    /// A snapshot of this client's metrics (the core's `Client::metrics`)
    /// as a dict: the counters by the core's field names (ints), the
    /// histograms `wait_time` and `hold_time` as `(count, sum_seconds,
    /// [(upper_bound, cumulative_count), ...])`, `requests` as a dict of
    /// operation name to count. Never blocks; also after close(). Closed
    /// in a forked child.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.origin.check("client")?;
        let m = self.inner.metrics();
        let out = PyDict::new(py);
        for (name, value) in [
            ("acquires_granted", m.acquires_granted),
            ("acquires_timed_out", m.acquires_timed_out),
            ("acquires_cancelled", m.acquires_cancelled),
            ("acquires_failed", m.acquires_failed),
            ("suspensions", m.suspensions),
            ("losses", m.losses),
            ("reconnects", m.reconnects),
            ("session_expiries", m.session_expiries),
            ("cleanups_pending", m.cleanups_pending),
        ] {
            out.set_item(name, value)?;
        }
        out.set_item("wait_time", (m.wait_time.count, m.wait_time.sum_seconds, m.wait_time.buckets))?;
        out.set_item("hold_time", (m.hold_time.count, m.hold_time.sum_seconds, m.hold_time.buckets))?;
        let requests = PyDict::new(py);
        for (op, n) in m.requests {
            requests.set_item(op, n)?;
        }
        out.set_item("requests", requests)?;
        Ok(out)
    }

    /// A multi-lock over `members`, `(path, mode)` pairs with mode
    /// `"EXCLUSIVE"`, `"READ"` or `"WRITE"` (in any case): acquires take all or none, in
    /// one order (by path). With `reentrant` every member is reentrant per
    /// thread (the core's `multi_lock_with` and `LockOptions::reentrant`):
    /// a thread holding the set that acquires it again (blocking) gets it
    /// at once. InvalidArgument for no member, a path named twice or an
    /// unknown mode; InvalidPath; Closed.
    #[pyo3(signature = (members, reentrant=false))]
    fn multi_lock(
        &self,
        py: Python<'_>,
        members: Vec<(Bound<'_, PyAny>, String)>,
        reentrant: bool,
    ) -> PyResult<MultiLock> {
        self.origin.check("client")?;
        let mut owned = Vec::with_capacity(members.len());
        for (path, mode) in &members {
            let path = text("path", path, ErrorKind::InvalidPath)?;
            let mode = match LockMode::from_name(&mode.to_ascii_uppercase()) {
                Some(m @ (LockMode::Exclusive | LockMode::Read | LockMode::Write)) => m,
                _ => return Err(py_err(bad_member_mode(&path, mode))),
            };
            owned.push((path, mode));
        }
        let list: Vec<(&str, LockMode)> = owned.iter().map(|(p, m)| (p.as_str(), *m)).collect();
        let options = lock_options(None, reentrant)?;
        let handle = self.inner.multi_lock_with(&list, options).map_err(|e| to_py_err(py, &e))?;
        let paths: Vec<&str> = handle.locks().iter().map(|l| l.path()).collect();
        let not_held = format!("multi-lock {} is not held by this object", paths.join(", "));
        Ok(MultiLock {
            client: Owned::new(self.inner.clone(), self.origin),
            guards: Stack::new(self.origin, "multi-lock", not_held),
            handle: Owned::new(handle, self.origin),
            origin: self.origin,
        })
    }

    /// A read/write pair on `path` whose sides know each other (downgrade
    /// allowed, upgrade refused with WouldDeadlock): `(read, write)`.
    #[pyo3(signature = (path, identifier=None, reentrant=false))]
    fn read_write_lock(
        &self,
        path: &Bound<'_, PyAny>,
        identifier: Option<&Bound<'_, PyAny>>,
        reentrant: bool,
    ) -> PyResult<(Lock, Lock)> {
        self.origin.check("client")?;
        let path = text("path", path, ErrorKind::InvalidPath)?;
        let options = lock_options(identifier, reentrant)?;
        let (read, write) = self.inner.read_write_lock(&path, options).map_err(py_err)?.into_sides();
        Ok((Lock::new(&self.inner, self.origin, read), Lock::new(&self.inner, self.origin, write)))
    }

    /// The queue of the lock at `path`, holders first: a list of
    /// `(name, sequence, kind, holds, data, session_id)` tuples with kind
    /// `"READER"` or `"WRITER"`. Blocks without the GIL.
    fn participants<'py>(&self, py: Python<'py>, path: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        self.origin.check("client")?;
        let path = text("path", path, ErrorKind::InvalidPath)?;
        let client = CoreClient::clone(&self.inner);
        let list = py.detach(move || client.participants(&path)).map_err(|e| to_py_err(py, &e))?;
        participant_tuples(py, list)
    }

    /// Starts `participants(path)` for asyncio and returns at once:
    /// `done(ok, value)` is called exactly once on the client's event
    /// thread with the GIL, `(True, list)` (as `participants` returns it)
    /// or `(False, exception)` (InvalidPath, Closed, ConnectionLoss,
    /// LockTimeout). No thread waits meanwhile. Raises at once (and never
    /// calls `done`) TypeError for a path that is not a str, InvalidPath
    /// for one that is not valid Unicode, Closed in a forked child.
    fn participants_start(&self, py: Python<'_>, path: &Bound<'_, PyAny>, done: Py<PyAny>) -> PyResult<()> {
        self.origin.check("client")?;
        let path = text("path", path, ErrorKind::InvalidPath)?;
        let listing = self.inner.participants_async(&path);
        self.inner
            .spawn_then(listing, move |out| {
                complete(done, move |py| match out {
                    Ok(list) => Ok(participant_tuples(py, list)?.into_any().unbind()),
                    Err(e) => Err(to_py_err(py, &e)),
                });
            })
            .map_err(|e| to_py_err(py, &e))
    }

    /// The id of the current ZooKeeper session (raises Closed after close()
    /// or in a forked child, and Timeout or ConnectionLoss while no session
    /// is established).
    #[getter]
    fn session_id(&self, py: Python<'_>) -> PyResult<i64> {
        self.origin.check("client")?;
        self.inner.session_id().map_err(|e| to_py_err(py, &e))
    }

    /// The session timeout the server granted, in seconds (raises Closed).
    #[getter]
    fn session_timeout(&self, py: Python<'_>) -> PyResult<f64> {
        self.origin.check("client")?;
        self.inner.session_timeout().map(|d| d.as_secs_f64()).map_err(|e| to_py_err(py, &e))
    }

    /// Whether close() was called (always True in a forked child).
    #[getter]
    fn closed(&self) -> bool {
        self.origin.forked() || self.inner.is_closed()
    }

    /// How many deletions of our nodes are still retried in the background
    /// (none in a forked child: they are the parent's).
    #[getter]
    fn pending_cleanups(&self) -> u64 {
        if self.origin.forked() {
            return 0;
        }
        self.inner.pending_cleanups()
    }

    /// Closes the session: locks held through this client are lost, waiting
    /// acquires fail with Closed. Idempotent; blocks without the GIL up to
    /// the operation timeout (in a listener or state callback it returns at
    /// once instead: waiting there would hold back every callback). In a
    /// forked child it does nothing (the session is the parent's).
    fn close(&self, py: Python<'_>) {
        if self.origin.forked() {
            return;
        }
        let client = CoreClient::clone(&self.inner);
        py.detach(move || client.close());
    }

    /// Starts `close()` for asyncio and returns at once: the client is
    /// closed when this returns (locks lost, waiting acquires fail with
    /// Closed); `done(True, None)` is called once on the client's event
    /// thread when the server confirmed the close or the operation timeout
    /// passed. Returns True, or False (and never calls `done`) in a forked
    /// child, where it does nothing (the session is the parent's). The
    /// client is kept alive until `done`, so that dropping it meanwhile
    /// never waits for the server on the caller's thread.
    fn close_start(&self, py: Python<'_>, done: Py<PyAny>) -> PyResult<bool> {
        if self.origin.forked() {
            return Ok(false);
        }
        let client = Arc::clone(&self.inner);
        let closing = client.close_async();
        self.inner
            .spawn_then(closing, move |()| {
                complete(done, |py| Ok(py.None()));
                drop(client);
            })
            .map_err(|e| to_py_err(py, &e))?;
        Ok(true)
    }

    fn __repr__(&self) -> String {
        if self.origin.forked() {
            return format!("<zklock._zklock.Client inherited from process {}>", self.origin.0);
        }
        match self.inner.session_id() {
            Ok(id) => format!("<zklock._zklock.Client session=0x{id:x}>"),
            Err(_) => "<zklock._zklock.Client closed>".to_owned(),
        }
    }
}

/// The error of a multi-lock member whose mode is not one a multi-lock
/// takes.
fn bad_member_mode(path: &str, mode: &str) -> Error {
    let message =
        format!("multi-lock member {path:?}: mode must be \"EXCLUSIVE\", \"READ\" or \"WRITE\", not {mode:?}");
    Error::new(ErrorKind::InvalidArgument, message)
}

/// The core's participants as a list of `(name, sequence, kind, holds,
/// data, session_id)` tuples (kind `"READER"` or `"WRITER"`).
fn participant_tuples(py: Python<'_>, list: Vec<Participant>) -> PyResult<Bound<'_, PyList>> {
    let tuples = list
        .into_iter()
        .map(|p| {
            let kind = p.kind.name();
            PyTuple::new(
                py,
                [
                    p.name.into_pyobject(py)?.into_any(),
                    p.sequence.into_pyobject(py)?.into_any(),
                    kind.into_pyobject(py)?.into_any(),
                    PyBool::new(py, p.holds).to_owned().into_any(),
                    PyBytes::new(py, &p.data).into_any(),
                    p.session_id.into_pyobject(py)?.into_any(),
                ],
            )
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, tuples)
}

impl Client {
    /// A new client's Python object, its core client registered in
    /// [`LIVE_CLIENTS`] (closed by the exit hook if still alive then).
    fn made(client: CoreClient) -> Client {
        let client = Arc::new(client);
        let mut live = locked(&LIVE_CLIENTS);
        live.retain(|c| c.strong_count() > 0);
        live.push(Arc::downgrade(&client));
        let origin = Origin::here();
        Client { inner: Owned::new(client, origin), origin }
    }

    fn lock_of(
        &self,
        path: &Bound<'_, PyAny>,
        mode: LockMode,
        identifier: Option<&Bound<'_, PyAny>>,
        reentrant: bool,
    ) -> PyResult<Lock> {
        self.origin.check("client")?;
        let path = text("path", path, ErrorKind::InvalidPath)?;
        let options = lock_options(identifier, reentrant)?;
        let lock = self.inner.lock_with(&path, mode, options).map_err(py_err)?;
        Ok(Lock::new(&self.inner, self.origin, lock))
    }
}

/// A state-change callback, shared by the grants it is registered on.
type PyCallback = Arc<Py<PyAny>>;

/// One lock handle (exclusive, read or write) and the guards it holds.
///
/// Thread-safe. Every acquire is its own contender (threads and tasks that
/// share the object exclude each other), unless the handle is reentrant
/// (per thread, blocking acquires). acquire() pushes its guard, release()
/// pops and releases the newest, whichever thread acquired it.
/// Belongs to the process that made its client: inherited through
/// `fork()`, it is not held (`held` False, `state` LOST if it was held)
/// and its methods raise Closed without touching the parent's node.
#[pyclass(frozen, module = "zklock._zklock")]
struct Lock {
    /// The client the lock was made from (its `closed` decides what
    /// `held` and `state` say right after `close()`).
    client: Owned<Arc<CoreClient>>,
    handle: Owned<CoreLock>,
    origin: Origin,
    guards: Stack<Guard>,
    /// The newest guard still held, or the last one released (answers for
    /// node_path & co).
    last: Mutex<Option<Arc<Guard>>>,
    callbacks: Arc<Mutex<Vec<Arc<StateCallback>>>>,
    /// The revocation callbacks (`on_revocation`), kept as `callbacks`.
    revocations: Arc<Mutex<Vec<Arc<StateCallback>>>>,
}

/// A state callback of a `Lock` object and its registrations on the grants
/// it was registered on (taken back by its `Subscription`).
struct StateCallback {
    cb: PyCallback,
    registrations: Mutex<Vec<zklock_core::Subscription>>,
}

impl Lock {
    fn new(client: &Arc<CoreClient>, origin: Origin, handle: CoreLock) -> Lock {
        Lock {
            client: Owned::new(client.clone(), origin),
            guards: Stack::new(origin, "lock", format!("{} is not held by this lock object", handle.path())),
            handle: Owned::new(handle, origin),
            origin,
            last: Mutex::default(),
            callbacks: Arc::default(),
            revocations: Arc::default(),
        }
    }

    fn last_guard(&self, py: Python<'_>) -> PyResult<Arc<Guard>> {
        locked(&self.last).clone().ok_or_else(|| {
            to_py_err(py, &Error::new(ErrorKind::NotHeld, format!("{} was never acquired", self.handle.path())))
        })
    }

    /// Whether the grant this object holds can no longer be ours whatever
    /// the core's monitor has noticed yet: the client was closed (close()
    /// has returned, the monitor reports LOST a moment later) or this
    /// object was inherited through fork().
    fn defunct(&self) -> bool {
        self.origin.forked() || self.client.is_closed()
    }
}

/// A callback registered with `Client.on_connection_state` or
/// `Lock.on_state_change`: `cancel()` takes it back. Thread-safe.
#[pyclass(frozen, module = "zklock._zklock")]
struct Subscription {
    cancel: Box<dyn Fn() + Send + Sync>,
}

#[pymethods]
impl Subscription {
    /// Takes the callback back: not called after this returns (a call
    /// running on the event thread then finishes). Idempotent; never blocks.
    fn cancel(&self) {
        (self.cancel)();
    }
}

/// Registers `state`'s callback on `guard`'s grant: called with the
/// state's name, on the client's event thread, with the GIL taken there. An
/// exception from the callback is reported through `sys.unraisablehook`.
/// Once the interpreter shuts down (`_shutdown`) callbacks are no longer
/// called.
fn register(guard: &Guard, state: &Arc<StateCallback>) {
    let cb = state.cb.clone();
    let registration = guard.on_state_change(move |state| {
        enter_python(|py| {
            if let Err(e) = cb.call1(py, (LockState::name(state),)) {
                e.write_unraisable(py, Some(cb.bind(py)));
            }
        });
    });
    locked(&state.registrations).push(registration);
}

/// Registers `revocation`'s callback on `guard`'s grant (the core's
/// `Guard::on_revocation`): called without arguments, on the client's
/// event thread, as [`register`] calls a state callback.
fn register_revocation(guard: &Guard, revocation: &Arc<StateCallback>) {
    let cb = revocation.cb.clone();
    let registration = guard.on_revocation(move || {
        enter_python(|py| {
            if let Err(e) = cb.call0(py) {
                e.write_unraisable(py, Some(cb.bind(py)));
            }
        });
    });
    locked(&revocation.registrations).push(registration);
}

/// A `Subscription` that takes `callback` out of `list` (under its lock,
/// which `granted` registers under), then off every grant it was
/// registered on.
fn unregistering(list: &Arc<Mutex<Vec<Arc<StateCallback>>>>, callback: Arc<StateCallback>) -> Subscription {
    let list = Arc::downgrade(list);
    let cancel = move || {
        if let Some(list) = list.upgrade() {
            locked(&list).retain(|c| !Arc::ptr_eq(c, &callback));
        }
        for registration in locked(&callback.registrations).drain(..) {
            registration.cancel();
        }
    };
    Subscription { cancel: Box::new(cancel) }
}

/// The guards of a lock or multi-lock object's acquires not yet released,
/// newest last, and the object's methods over them (each named as the
/// Python method it serves; see `Lock`'s): one implementation for both,
/// over the core's [`Hold`]. Thread-safe. Dropped while holding, it
/// releases its guards on a helper thread (a release may wait for
/// ZooKeeper; a drop runs with the GIL); in a forked child it leaks them:
/// they are the parent's.
struct Stack<G: Hold> {
    guards: Mutex<Vec<Arc<G>>>,
    origin: Origin,
    /// What the object is called in an inherited object's error: `"lock"`,
    /// `"multi-lock"`.
    what: &'static str,
    /// NotHeld's message: "/a is not held by this lock object".
    not_held: String,
}

impl<G: Hold> Stack<G> {
    fn new(origin: Origin, what: &'static str, not_held: String) -> Stack<G> {
        Stack { guards: Mutex::default(), origin, what, not_held }
    }

    /// Pushes a granted guard; whether it is the only one (a fresh grant).
    fn push(&self, guard: Arc<G>) -> bool {
        let mut guards = locked(&self.guards);
        guards.push(guard);
        guards.len() == 1
    }

    /// The newest guard, if any.
    fn newest(&self) -> Option<Arc<G>> {
        locked(&self.guards).last().cloned()
    }

    /// The newest guard: NotHeld if none; Closed in a forked child.
    fn top(&self) -> PyResult<Arc<G>> {
        self.origin.check(self.what)?;
        self.newest().ok_or_else(|| not_held(self.not_held.clone()))
    }

    /// Takes the newest guard off, for a release, with the newest one left
    /// (if any). NotHeld if there is none; Closed in a forked child (an
    /// inherited guard stays where it is: the drop leaks it, so the state
    /// and check() keep saying Closed).
    fn pop(&self) -> PyResult<(Arc<G>, Option<Arc<G>>)> {
        let mut guards = locked(&self.guards);
        if self.origin.forked() && !guards.is_empty() {
            return Err(py_err(self.origin.inherited(self.what)));
        }
        let guard = guards.pop().ok_or_else(|| not_held(self.not_held.clone()))?;
        Ok((guard, guards.last().cloned()))
    }

    /// `acquire(blocking, timeout)`: the calling thread's call (reentrancy,
    /// the pair's rules) made by `start`, waited for without the GIL by
    /// `wait_for_outcome` (Ctrl-C cancels it, and a grant that won the race
    /// is given back); `keep` keeps a granted guard.
    fn acquire(
        &self,
        py: Python<'_>,
        blocking: bool,
        timeout: Option<&Bound<'_, PyAny>>,
        start: impl FnOnce(AcquireOptions) -> PendingAcquire<G>,
        keep: impl FnOnce(G),
    ) -> PyResult<bool> {
        let (options, token) = Lock::call_options(blocking, timeout)?;
        self.origin.check(self.what)?;
        let pending = start(options.owner(Owner::current_thread())).started().map_err(|e| to_py_err(py, &e))?;
        let result = wait_for_outcome(py, pending, move |mut pending| {
            token.cancel();
            // The cancelled acquire returns promptly (its nodes are deleted,
            // in the background if ZooKeeper cannot be reached). If it won
            // the race, give the lock back.
            if let Some(Ok(guard)) = pending.wait_timeout(Duration::MAX) {
                let _ = guard.release();
            }
        })?;
        // A Ctrl-C that came during the last slice of the wait, while the
        // grant was on its way, would be raised by Python just after we
        // return, with the lock held and no `with` block to release it (an
        // outside tester got that in every round): the cancel wins
        // (protocol section 4, rule 6): the lock is given back (without the
        // GIL) and the signal raised here.
        match result {
            Ok(guard) => {
                if let Err(signal) = py.check_signals() {
                    py.detach(move || drop(guard.release()));
                    return Err(signal);
                }
                keep(guard);
                Ok(true)
            },
            Err(e) if e.kind() == ErrorKind::Timeout => Ok(false),
            Err(e) => Err(to_py_err(py, &e)),
        }
    }

    /// `acquire_start(blocking, timeout, done)`: the call made by `start`
    /// (no owner), its outcome to `done` through [`acquire_done`] (`keep`
    /// keeps a granted guard); its cancel handle.
    #[allow(clippy::too_many_arguments)] // the Python method's three and what differs between the objects
    fn acquire_start(
        &self,
        py: Python<'_>,
        blocking: bool,
        timeout: Option<&Bound<'_, PyAny>>,
        start: impl FnOnce(AcquireOptions) -> PendingAcquire<G>,
        keep: impl FnOnce(G) + Send + 'static,
        client: &CoreClient,
        done: Py<PyAny>,
    ) -> PyResult<Call> {
        let (options, token) = Lock::call_options(blocking, timeout)?;
        self.origin.check(self.what)?;
        let call = start(options).started().map_err(|e| to_py_err(py, &e))?;
        client.spawn_then(call, move |out| acquire_done(out, keep, done)).map_err(|e| to_py_err(py, &e))?;
        Ok(Call { token })
    }

    /// `release()` of a popped guard, without the GIL.
    fn release(&self, py: Python<'_>, guard: Arc<G>) -> PyResult<bool> {
        match py.detach(move || guard.release()) {
            Ok(status) => Ok(status == ReleaseStatus::Released),
            Err(e) => Err(to_py_err(py, &e)),
        }
    }

    /// `release_start(done)` of a popped guard.
    fn release_start(&self, py: Python<'_>, guard: Arc<G>, done: Py<PyAny>) -> PyResult<()> {
        let release = guard.release_async();
        guard.client().spawn_then(release, move |out| release_done(out, done)).map_err(|e| to_py_err(py, &e))
    }

    /// `check()`.
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        match self.newest() {
            Some(_) if self.origin.forked() => Err(py_err(self.origin.inherited(self.what))),
            Some(guard) => guard.check().map_err(|e| to_py_err(py, &e)),
            None => Err(not_held(self.not_held.clone())),
        }
    }

    /// [`Stack::top`] for a fenced write (nothing was written).
    fn fenced_top(&self) -> PyResult<Arc<G>> {
        self.origin.check(self.what)?;
        self.newest().ok_or_else(|| not_held(format!("fenced write: {}; nothing was written", self.not_held)))
    }

    /// `fenced_multi(ops)`, without the GIL.
    fn fenced_multi<'py>(&self, py: Python<'py>, ops: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let guard = self.fenced_top()?;
        let ops = fenced_ops(ops)?;
        let results = py.detach(move || guard.fenced_multi(&ops)).map_err(|e| to_py_err(py, &e))?;
        fenced_results(py, results)
    }

    /// `fenced_multi_start(ops, done)`.
    fn fenced_multi_start(&self, py: Python<'_>, ops: &Bound<'_, PyAny>, done: Py<PyAny>) -> PyResult<()> {
        let guard = self.fenced_top()?;
        let write = guard.fenced_multi_async(fenced_ops(ops)?);
        guard.client().spawn_then(write, move |out| fenced_done(out, done)).map_err(|e| to_py_err(py, &e))
    }

    /// `lost_start(done)`.
    fn lost_start(&self, py: Python<'_>, done: Py<PyAny>) -> PyResult<()> {
        let guard = self.top()?;
        let lost = guard.lost();
        guard.client().spawn_then(lost, move |e| lost_done(e, done)).map_err(|e| to_py_err(py, &e))
    }

    /// `held`; never once `defunct` (closed client, forked child).
    fn held(&self, defunct: bool) -> bool {
        !defunct && self.newest().is_some_and(|g| matches!(g.state(), LockState::Held | LockState::Suspended))
    }

    /// `state`: `"LOST"` once `defunct`, `"RELEASED"` when nothing is held.
    fn state(&self, defunct: bool) -> &'static str {
        match self.newest() {
            Some(_) if defunct => "LOST",
            Some(guard) => LockState::name(guard.state()),
            None => "RELEASED",
        }
    }

    /// `depth`.
    fn depth(&self) -> usize {
        locked(&self.guards).len()
    }
}

impl<G: Hold> Drop for Stack<G> {
    fn drop(&mut self) {
        let guards = std::mem::take(&mut *locked(&self.guards));
        if self.origin.forked() {
            std::mem::forget(guards);
            return;
        }
        if !guards.is_empty() {
            let spawned = std::thread::Builder::new().name("zklock-py-release".into()).spawn(move || {
                for guard in guards.into_iter().rev() {
                    let _ = guard.release();
                }
            });
            // Without a thread the guards were dropped (and released) here.
            drop(spawned);
        }
    }
}

impl Lock {
    /// Keeps a granted guard: pushed on this object's stack, and the
    /// object's callbacks registered on a fresh grant.
    fn granted(&self, guard: Guard) {
        let guard = Arc::new(guard);
        let fresh = self.guards.push(guard.clone());
        *locked(&self.last) = Some(guard.clone());
        if fresh {
            for cb in locked(&self.callbacks).iter() {
                register(&guard, cb);
            }
            for cb in locked(&self.revocations).iter() {
                register_revocation(&guard, cb);
            }
        }
    }

    /// The newest guard of this object, to downgrade into `read`.
    fn top_guard_for_downgrade(&self, read: &Bound<'_, Lock>) -> PyResult<Arc<Guard>> {
        self.origin.check("lock")?;
        if read.get().handle.mode() != LockMode::Read || read.get().handle.path() != self.handle.path() {
            return Err(py_err(Error::new(
                ErrorKind::InvalidArgument,
                "downgrade: `read` must be the read side of this pair",
            )));
        }
        self.guards.top()
    }

    /// Takes the newest guard off this object's stack, for a release (see
    /// [`Stack::pop`]).
    fn pop_guard(&self) -> PyResult<Arc<Guard>> {
        let (guard, newest) = self.guards.pop()?;
        // node_path & co follow the newest grant still held (the one
        // check() and state answer for), the released one once none is.
        if let Some(newest) = newest {
            *locked(&self.last) = Some(newest);
        }
        Ok(guard)
    }

    /// The options of one acquire call of `acquire(blocking, timeout)`,
    /// with its own cancel token.
    fn call_options(blocking: bool, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<(AcquireOptions, CancelToken)> {
        let wait = wait_limit(blocking, timeout)?;
        let token = CancelToken::new();
        Ok((AcquireOptions::new().timeout(wait).cancel_token(token.clone()), token))
    }
}

/// Calls the Python `done(ok, value)` of an asyncio call from the event
/// thread: `(True, value)` or `(False, exception)`.
fn complete(done: Py<PyAny>, outcome: impl FnOnce(Python<'_>) -> PyResult<Py<PyAny>>) {
    enter_python(|py| {
        let args = match outcome(py) {
            Ok(v) => (true, v),
            Err(e) => (false, e.into_value(py).into_any()),
        };
        if let Err(e) = done.call1(py, args) {
            e.write_unraisable(py, Some(done.bind(py)));
        }
    });
}

/// Hands the outcome of an asyncio acquire to `done` (see
/// [`complete`]): `(True, True)` once `keep` took the guard, `(True,
/// False)` on timeout, `(False, exception)` otherwise.
fn acquire_done<G>(out: zklock_core::Result<G>, keep: impl FnOnce(G), done: Py<PyAny>) {
    let outcome = match out {
        Ok(guard) => {
            keep(guard);
            Ok(true)
        },
        Err(e) if e.kind() == ErrorKind::Timeout => Ok(false),
        Err(e) => Err(e),
    };
    complete(done, move |py| match outcome {
        Ok(b) => Ok(b.into_pyobject(py)?.to_owned().into_any().unbind()),
        Err(e) => Err(to_py_err(py, &e)),
    });
}

/// Hands the outcome of an asyncio release to `done`: `(True, True)` when
/// released, `(True, False)` when the delete goes on in the background,
/// `(False, exception)` otherwise.
fn release_done(out: zklock_core::Result<ReleaseStatus>, done: Py<PyAny>) {
    complete(done, move |py| match out {
        Ok(status) => Ok((status == ReleaseStatus::Released).into_pyobject(py)?.to_owned().into_any().unbind()),
        Err(e) => Err(to_py_err(py, &e)),
    })
}

/// Calls `done(True, exception)` with the exception of the error a
/// `lost()` future gave.
fn lost_done(e: Error, done: Py<PyAny>) {
    complete(done, move |py| Ok(to_py_err(py, &e).into_value(py).into_any()))
}

/// One operation of a fenced write as the package hands it over (its
/// `FencedOp._native()`): `(op, path, data, version, mode)`, `op` a
/// `FencedKind` name, `data` bytes, `version` an int or None, `mode` a
/// `CreateMode` name.
type NativeFencedOp<'py> = (String, Bound<'py, PyAny>, Vec<u8>, Option<Bound<'py, PyAny>>, String);

/// The core's operations of a fenced write from the package's tuples
/// ([`NativeFencedOp`]). Only translates: what the core decides (paths,
/// negative versions, the size) it decides. Errors name the operation's
/// index: InvalidArgument for a malformed entry (the package makes none),
/// an unknown operation or mode, a version that is not an int of ZooKeeper's
/// range (a 32-bit signed int); InvalidPath for a path that is not valid
/// Unicode.
fn fenced_ops(ops: &Bound<'_, PyAny>) -> PyResult<Vec<FencedOp>> {
    let items: Vec<Bound<'_, PyAny>> = ops
        .extract()
        .map_err(|_| invalid_argument("fenced write: the operations must be a list of zklock.FencedOp"))?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = |what: String| invalid_argument(format!("fenced write, operation {i}{what}"));
        let (op, path, data, version, mode): NativeFencedOp<'_> =
            item.extract().map_err(|_| at(": not a zklock.FencedOp".into()))?;
        if !path.is_instance_of::<PyString>() {
            return Err(at(format!(" ({op}): path must be str, not {}", path.get_type().name()?)));
        }
        let path = text(&format!("fenced write, operation {i} ({op}): path"), &path, ErrorKind::InvalidPath)?;
        let version = match version {
            None => None,
            Some(v) if v.is_instance_of::<PyBool>() => {
                return Err(at(format!(" ({op}): version must be an int, not a bool")))
            },
            Some(v) => {
                let n: i64 = v.extract().map_err(|_| at(format!(" ({op}): version {v} is not an int of 32 bits")))?;
                Some(i32::try_from(n).map_err(|_| {
                    at(format!(" ({op}): version {n} is out of range (ZooKeeper's versions are 32-bit ints)"))
                })?)
            },
        };
        out.push(match FencedKind::from_name(&op) {
            Some(FencedKind::Create) => {
                let Some(mode) = CreateMode::from_name(&mode) else {
                    return Err(at(format!(" (CREATE): unknown mode {mode:?}")));
                };
                FencedOp::create(path, data, mode)
            },
            Some(FencedKind::SetData) => FencedOp::set_data(path, data, version),
            Some(FencedKind::Delete) => FencedOp::delete(path, version),
            Some(FencedKind::Check) => FencedOp::check(path, version),
            _ => return Err(at(format!(": unknown operation {op:?} (a zklock.FencedKind)"))),
        });
    }
    Ok(out)
}

/// The results of a fenced write as the package takes them: a list of
/// `(op, path, version)` tuples, `op` the `FencedKind` name of the
/// operation that made it (`CREATE` with the new node's path, `SET_DATA`
/// with the new data version).
fn fenced_results(py: Python<'_>, results: Vec<FencedResult>) -> PyResult<Bound<'_, PyList>> {
    let tuples = results
        .into_iter()
        .map(|r| {
            let op = r.kind().name();
            let (path, version): (Option<String>, Option<i32>) = match r {
                FencedResult::Created { path } => (Some(path), None),
                FencedResult::DataSet { version } => (None, Some(version)),
                _ => (None, None),
            };
            (op, path, version).into_pyobject(py).map(Bound::into_any)
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, tuples)
}

/// Hands the outcome of an asyncio fenced write to `done`: `(True,
/// results)` as [`fenced_results`] makes them, or `(False, exception)`.
fn fenced_done(out: zklock_core::Result<Vec<FencedResult>>, done: Py<PyAny>) {
    complete(done, move |py| match out {
        Ok(results) => Ok(fenced_results(py, results)?.into_any().unbind()),
        Err(e) => Err(to_py_err(py, &e)),
    })
}

#[pymethods]
impl Lock {
    /// Acquires the lock like `threading.Lock.acquire`: `blocking=False`
    /// tries once; otherwise waits up to `timeout` seconds in total (None:
    /// without limit; numbers by the core's rule, see [`wait_limit`]). Returns False on timeout. Waits without the GIL;
    /// Ctrl-C cancels the wait (our node is deleted) and raises
    /// KeyboardInterrupt. Raises Cancelled when cancel() is called, Closed
    /// (also in a forked child), ConnectionLoss, InvalidArgument for a bad
    /// timeout, TypeError for a timeout that is not a number.
    #[pyo3(signature = (blocking=true, timeout=None))]
    fn acquire(&self, py: Python<'_>, blocking: bool, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        self.guards.acquire(py, blocking, timeout, |o| self.handle.acquire_async(o), |guard| self.granted(guard))
    }

    /// Starts `acquire(blocking, timeout)` for asyncio and returns at once
    /// with the call's cancel handle. `done(ok, value)` is called exactly
    /// once on the client's event thread with the GIL: `(True, True)` when
    /// acquired (the guard is on this object's stack), `(True, False)` on
    /// timeout, `(False, exception)` otherwise. No thread waits meanwhile.
    /// Raises at once (and never calls `done`) for bad arguments, Closed.
    #[pyo3(signature = (blocking, timeout, done))]
    fn acquire_start(
        slf: &Bound<'_, Self>,
        blocking: bool,
        timeout: Option<&Bound<'_, PyAny>>,
        done: Py<PyAny>,
    ) -> PyResult<Call> {
        let this = slf.get();
        let lock: Py<Lock> = slf.clone().unbind();
        let keep = move |guard| lock.get().granted(guard);
        this.guards.acquire_start(
            slf.py(),
            blocking,
            timeout,
            |o| this.handle.acquire_async(o),
            keep,
            &this.client,
            done,
        )
    }

    /// Write to read downgrade: a read guard of the same pair, granted at
    /// once with this write node's sequence, pushed on `read` (this pair's
    /// read side). This object keeps its write guard (release it next).
    /// Raises InvalidArgument unless this is the write side of a pair and
    /// `read` its read side, NotHeld when nothing is held. Blocks (one
    /// request) without the GIL.
    fn downgrade(&self, py: Python<'_>, read: &Bound<'_, Lock>) -> PyResult<()> {
        let write = self.top_guard_for_downgrade(read)?;
        let guard = py.detach(move || write.downgrade()).map_err(|e| to_py_err(py, &e))?;
        read.get().granted(guard);
        Ok(())
    }

    /// `downgrade(read)` for asyncio: `done(ok, value)` is called once on
    /// the client's event thread, `(True, True)` when the read guard is on
    /// `read`'s stack, `(False, exception)` otherwise. Raises at once (and
    /// never calls `done`) as `downgrade` does for bad arguments.
    fn downgrade_start(&self, py: Python<'_>, read: &Bound<'_, Lock>, done: Py<PyAny>) -> PyResult<()> {
        let write = self.top_guard_for_downgrade(read)?;
        let target: Py<Lock> = read.clone().unbind();
        self.client
            .spawn_then(write.downgrade_async(), move |out| {
                acquire_done(out, |guard| target.get().granted(guard), done)
            })
            .map_err(|e| to_py_err(py, &e))
    }

    /// Starts `release()` for asyncio: `done(ok, value)` is called once on
    /// the client's event thread, `(True, True)` when released, `(True,
    /// False)` when the delete goes on in the background, `(False,
    /// exception)` otherwise. Raises at once (and never calls `done`) as
    /// `release()` does for nothing held and in a forked child.
    fn release_start(&self, py: Python<'_>, done: Py<PyAny>) -> PyResult<()> {
        self.guards.release_start(py, self.pop_guard()?, done)
    }

    /// Releases the newest guard of this object (the node is deleted with
    /// the last one). Returns True when done, False when the delete could
    /// not be confirmed and goes on in the background. Raises NotHeld if
    /// nothing is held, LockLost if the lock had been lost meanwhile,
    /// Closed after close() or in a forked child (where the guard is
    /// dropped without touching the parent's node). Blocks without the GIL.
    fn release(&self, py: Python<'_>) -> PyResult<bool> {
        self.guards.release(py, self.pop_guard()?)
    }

    /// A fenced write with the newest guard of this object (the core's
    /// `Guard::fenced_multi`): `ops` (see [`fenced_ops`]) are made in one
    /// ZooKeeper transaction with a check of our lock node, all or none.
    /// Returns the results (see [`fenced_results`]). Blocks (one request,
    /// at most the operation timeout) without the GIL. Raises NotHeld when
    /// this object holds nothing, Closed in a forked child, and what the
    /// core's call raises (its error's `failed_op` on the exception).
    fn fenced_multi<'py>(&self, py: Python<'py>, ops: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        self.guards.fenced_multi(py, ops)
    }

    /// Starts `fenced_multi(ops)` for asyncio and returns at once:
    /// `done(ok, value)` is called once on the client's event thread,
    /// `(True, results)` or `(False, exception)`. Raises at once (and never
    /// calls `done`) as `fenced_multi` does for bad operations (those the
    /// binding translates), nothing held and a forked child.
    fn fenced_multi_start(&self, py: Python<'_>, ops: &Bound<'_, PyAny>, done: Py<PyAny>) -> PyResult<()> {
        self.guards.fenced_multi_start(py, ops, done)
    }

    /// Makes every acquire in progress on this object fail with Cancelled
    /// (their nodes are deleted). Never blocks; any thread. Does nothing in
    /// a forked child (no acquire of this object runs there).
    fn cancel(&self) {
        if !self.origin.forked() {
            self.handle.cancel();
        }
    }

    /// Raises unless the lock is safely held now: NotHeld when not held,
    /// ConnectionLoss while suspended, LockLost once lost, Closed after
    /// close() or in a forked child.
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        self.guards.check(py)
    }

    /// Starts waiting for the newest acquire of this object to be no longer
    /// safely held (the core's `Guard::lost`): `done(True, exception)` is
    /// called once on the client's event thread with the exception
    /// `check()` raises then (LockLost, ConnectionLoss, NotHeld once that
    /// acquire is released, Closed), no later than `check()` starts to
    /// raise. Nothing waits on a thread meanwhile. Raises at once (and never
    /// calls `done`) NotHeld when nothing is held, Closed in a forked child.
    fn lost_start(&self, py: Python<'_>, done: Py<PyAny>) -> PyResult<()> {
        self.guards.lost_start(py, done)
    }

    /// Registers `callback(state: str)` for every state change (HELD,
    /// SUSPENDED, LOST) of the current grant and of later grants of this
    /// object. Called on the client's event thread, one at a time; it must
    /// return promptly. Exceptions go to `sys.unraisablehook`. Not called
    /// once the interpreter shuts down. The returned subscription's
    /// `cancel()` takes it back. Raises Closed in a forked child.
    fn on_state_change(&self, callback: Bound<'_, PyAny>) -> PyResult<Subscription> {
        if !callback.is_callable() {
            return Err(PyTypeError::new_err("callback must be callable"));
        }
        self.origin.check("lock")?;
        let state = Arc::new(StateCallback { cb: Arc::new(callback.unbind()), registrations: Mutex::default() });
        locked(&self.callbacks).push(state.clone());
        if let Some(guard) = self.guards.newest() {
            register(&guard, &state);
        }
        Ok(unregistering(&self.callbacks, state))
    }

    /// Registers `callback()` to be called when someone asks the holder of
    /// the current grant, or of a later grant of this object, to let go
    /// (the core's `Guard::on_revocation`: `Client.revoke`, Curator's
    /// `Revoker`); the lock stays held, the holder decides. Called on the
    /// client's event thread, as `on_state_change` callbacks (once soon if
    /// a request came before). The returned subscription's `cancel()`
    /// takes it back. Raises TypeError for a non-callable, Closed in a
    /// forked child.
    fn on_revocation(&self, callback: Bound<'_, PyAny>) -> PyResult<Subscription> {
        if !callback.is_callable() {
            return Err(PyTypeError::new_err("callback must be callable"));
        }
        self.origin.check("lock")?;
        let revocation = Arc::new(StateCallback { cb: Arc::new(callback.unbind()), registrations: Mutex::default() });
        locked(&self.revocations).push(revocation.clone());
        if let Some(guard) = self.guards.newest() {
            register_revocation(&guard, &revocation);
        }
        Ok(unregistering(&self.revocations, revocation))
    }

    /// Whether someone asked the holder of the newest grant still held to
    /// let go (the core's `Guard::revocation_requested`); False when
    /// nothing is held and in a forked child.
    #[getter]
    fn revocation_requested(&self) -> bool {
        !self.origin.forked() && self.guards.newest().is_some_and(|g| g.revocation_requested())
    }

    /// Whether this object holds the lock now (held or suspended). False
    /// from the moment close() returns, and in a forked child.
    #[getter]
    fn held(&self) -> bool {
        self.guards.held(self.defunct())
    }

    /// `"HELD"`, `"SUSPENDED"`, `"LOST"` or `"RELEASED"` (also when never
    /// acquired). `"LOST"` for a grant of a closed client from the moment
    /// close() returns, and for a grant inherited through fork(). Read from
    /// the newest guard still held (a released reentrant guard says
    /// Released in the core while the older ones still hold the lock).
    #[getter]
    fn state(&self) -> &'static str {
        self.guards.state(self.defunct())
    }

    /// How many guards this object holds (re-entrant acquires).
    #[getter]
    fn depth(&self) -> usize {
        self.guards.depth()
    }

    /// The fencing token of the newest grant still held, or of the last one
    /// released (NotHeld if never acquired).
    #[getter]
    fn fencing_token(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.last_guard(py)?.fencing_token())
    }

    /// The full path of our node of the current or latest grant.
    #[getter]
    fn node_path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.last_guard(py)?.node_path())
    }

    /// The sequence number of our node of the current or latest grant.
    #[getter]
    fn sequence(&self, py: Python<'_>) -> PyResult<i64> {
        Ok(self.last_guard(py)?.sequence())
    }

    /// The session that holds (held) the current or latest grant.
    #[getter]
    fn session_id(&self, py: Python<'_>) -> PyResult<i64> {
        Ok(self.last_guard(py)?.session_id())
    }

    /// The lock path.
    #[getter]
    fn path(&self) -> String {
        self.handle.path().to_owned()
    }

    /// `"EXCLUSIVE"`, `"READ"`, `"WRITE"`, `"LEADER"` or `"LEASE"`.
    #[getter]
    fn mode(&self) -> &'static str {
        self.handle.mode().name()
    }

    fn __repr__(&self) -> String {
        format!("<zklock._zklock.Lock {} {:?} {}>", self.mode(), self.handle.path(), self.state())
    }
}

impl Drop for Lock {
    /// A lock object dropped while holding releases its guards on a helper
    /// thread (the [`Stack`]'s drop). In a forked child the guards are
    /// leaked: they are the parent's (the newest one kept for node_path &
    /// co too).
    fn drop(&mut self) {
        let last = locked(&self.last).take();
        if self.origin.forked() {
            std::mem::forget(last);
        }
    }
}

/// The native module. `ERROR_CODES` lists every error kind name of the core
/// (the `.code` values of zklock's exceptions).
/// A multi-lock (several locks taken all or none, see the core's
/// `MultiLock`) and the guards of its acquires not yet released, newest
/// last. Thread-safe; `release()` releases the newest acquire. Belongs to
/// the process that made its client (see [`Origin`]).
#[pyclass(frozen, module = "zklock._zklock")]
struct MultiLock {
    client: Owned<Arc<CoreClient>>,
    handle: Owned<CoreMultiLock>,
    origin: Origin,
    guards: Stack<MultiGuard>,
}

#[pymethods]
impl MultiLock {
    /// Takes every member, as `Lock.acquire` takes one lock (`timeout`
    /// covers the whole set): True, or False when the time ran out (nothing
    /// is held then). Waits without the GIL; Ctrl-C cancels the wait (every
    /// member taken is given back) and raises KeyboardInterrupt. The wait
    /// is the calling thread's (its owner in the core's options): a
    /// reentrant multi-lock held by this thread is taken again at once.
    #[pyo3(signature = (blocking=true, timeout=None))]
    fn acquire(&self, py: Python<'_>, blocking: bool, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        self.guards.acquire(
            py,
            blocking,
            timeout,
            |o| self.handle.acquire_async(o),
            |guard| {
                self.guards.push(Arc::new(guard));
            },
        )
    }

    /// Starts `acquire(blocking, timeout)` for asyncio, as
    /// `Lock.acquire_start`.
    #[pyo3(signature = (blocking, timeout, done))]
    fn acquire_start(
        slf: &Bound<'_, Self>,
        blocking: bool,
        timeout: Option<&Bound<'_, PyAny>>,
        done: Py<PyAny>,
    ) -> PyResult<Call> {
        let this = slf.get();
        let me: Py<MultiLock> = slf.clone().unbind();
        let keep = move |guard| {
            me.get().guards.push(Arc::new(guard));
        };
        this.guards.acquire_start(
            slf.py(),
            blocking,
            timeout,
            |o| this.handle.acquire_async(o),
            keep,
            &this.client,
            done,
        )
    }

    /// Releases the newest acquire's members: True when done, False when a
    /// delete goes on in the background. Raises NotHeld if nothing is held,
    /// LockLost if a member had been lost, Closed in a forked child.
    fn release(&self, py: Python<'_>) -> PyResult<bool> {
        self.guards.release(py, self.guards.pop()?.0)
    }

    /// Starts `release()` for asyncio, as `Lock.release_start`.
    fn release_start(&self, py: Python<'_>, done: Py<PyAny>) -> PyResult<()> {
        self.guards.release_start(py, self.guards.pop()?.0, done)
    }

    /// Raises unless every member of the newest acquire is safely held.
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        self.guards.check(py)
    }

    /// A fenced write with the newest acquire's members (the core's
    /// `MultiGuard::fenced_multi`: made only while every member's node
    /// exists), as `Lock.fenced_multi`.
    fn fenced_multi<'py>(&self, py: Python<'py>, ops: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        self.guards.fenced_multi(py, ops)
    }

    /// Starts `fenced_multi(ops)` for asyncio, as `Lock.fenced_multi_start`.
    fn fenced_multi_start(&self, py: Python<'_>, ops: &Bound<'_, PyAny>, done: Py<PyAny>) -> PyResult<()> {
        self.guards.fenced_multi_start(py, ops, done)
    }

    /// As `Lock.lost_start`, for any member of the newest acquire.
    fn lost_start(&self, py: Python<'_>, done: Py<PyAny>) -> PyResult<()> {
        self.guards.lost_start(py, done)
    }

    /// Whether this object holds every member now (held or suspended).
    #[getter]
    fn held(&self) -> bool {
        self.guards.held(self.origin.forked() || self.client.is_closed())
    }

    /// The state of the newest acquire's set (see the core's
    /// `MultiGuard::state`), `"RELEASED"` when nothing is held.
    #[getter]
    fn state(&self) -> &'static str {
        self.guards.state(self.origin.forked() || self.client.is_closed())
    }

    /// How many acquires of this object are not yet released.
    #[getter]
    fn depth(&self) -> usize {
        self.guards.depth()
    }

    /// The newest acquire's fencing tokens, in the order of `paths`.
    #[getter]
    fn fencing_tokens(&self) -> PyResult<Vec<u64>> {
        Ok(self.guards.top()?.fencing_tokens())
    }

    /// The member paths, in the order an acquire takes them.
    #[getter]
    fn paths(&self) -> Vec<String> {
        self.handle.locks().iter().map(|l| l.path().to_owned()).collect()
    }
}

/// `zklock.Lock.__enter__` and `__exit__`, in native code. A Python
/// `__enter__` runs Python code between the grant and the `with` block,
/// and a Python `__exit__` between entering it and the release: a Ctrl-C
/// landing there is raised with the lock held and nothing to release it
/// (an outside tester left locks held in 1 of 300 random interrupts). Here
/// no Python frame runs in those windows: the acquire checks for a pending
/// signal after the grant (and gives the lock back), and a signal that
/// comes later is raised inside the block, whose `__exit__` then releases.
/// A descriptor: looked up on a `zklock.Lock`, it gives a callable bound
/// to it, which reads the object's `_native` lock and `timeout`.
#[pyclass(frozen, module = "zklock._zklock")]
struct WithBlock {
    exit: bool,
}

#[pymethods]
impl WithBlock {
    /// `WithBlock(False)` is `__enter__`, `WithBlock(True)` is `__exit__`.
    #[new]
    fn new(exit: bool) -> WithBlock {
        WithBlock { exit }
    }

    fn __get__(
        slf: &Bound<'_, Self>,
        obj: Option<Bound<'_, PyAny>>,
        _owner: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        match obj {
            None => Ok(slf.clone().into_any().unbind()),
            Some(obj) => {
                Ok(Bound::new(py, BoundWithBlock { exit: slf.get().exit, obj: obj.unbind() })?.into_any().unbind())
            },
        }
    }
}

/// A [`WithBlock`] bound to one `zklock.Lock`.
#[pyclass(frozen, module = "zklock._zklock")]
struct BoundWithBlock {
    exit: bool,
    obj: Py<PyAny>,
}

#[pymethods]
impl BoundWithBlock {
    /// `__enter__()`: acquires, waiting up to the object's `timeout`;
    /// returns the object; raises LockTimeout when the time runs out.
    /// `__exit__(*exc_info)`: releases (raises LockLost if the lock was
    /// lost meanwhile).
    #[pyo3(signature = (*_exc_info))]
    fn __call__(&self, py: Python<'_>, _exc_info: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let obj = self.obj.bind(py);
        let native = obj.getattr(pyo3::intern!(py, "_native"))?;
        let (lock, multi) = (native.cast::<Lock>().ok(), native.cast::<MultiLock>().ok());
        if self.exit {
            match (lock, multi) {
                (Some(l), _) => l.get().release(py)?,
                (_, Some(m)) => m.get().release(py)?,
                _ => return Err(PyTypeError::new_err("not a zklock lock")),
            };
            return Ok(py.None());
        }
        let timeout = obj.getattr(pyo3::intern!(py, "timeout"))?;
        let limit = (!timeout.is_none()).then_some(&timeout);
        let (acquired, what) = match (lock, multi) {
            (Some(l), _) => (l.get().acquire(py, true, limit)?, l.get().handle.path().to_owned()),
            (_, Some(m)) => (m.get().acquire(py, true, limit)?, m.get().paths().join(", ")),
            _ => return Err(PyTypeError::new_err("not a zklock lock")),
        };
        if acquired {
            return Ok(self.obj.clone_ref(py));
        }
        let shown = if timeout.is_none() { "None".to_owned() } else { timeout.str()?.to_string() };
        Err(to_py_err(py, &Error::new(ErrorKind::Timeout, format!("{what}: not acquired within {shown} s"))))
    }
}

/// Hands one of the core's log records to the Python logger `zklock` (on
/// the core's `zklock-log` thread; not once the interpreter shuts down).
fn forward_to_logging(record: zklock_core::logging::LogRecord) {
    enter_python(|py| {
        let level = match record.level {
            log::Level::Error => 40,
            log::Level::Warn => 30,
            log::Level::Info => 20,
            log::Level::Debug => 10,
            log::Level::Trace => 5,
        };
        let logger = py.import("logging").and_then(|l| l.call_method1("getLogger", ("zklock",)));
        if let Ok(logger) = logger {
            let _ = logger.call_method1("log", (level, "%s", record.message));
        }
    });
}

/// Which of the core's log records reach the Python logger `zklock`: this
/// level and more severe (`"CRITICAL"`/`"ERROR"`, `"WARNING"`/`"WARN"`,
/// `"INFO"`, `"DEBUG"`, `"TRACE"` or `"OFF"`). InvalidArgument for another
/// name.
#[pyfunction]
fn _set_log_level(py: Python<'_>, level: &str) -> PyResult<()> {
    let Some(filter) = zklock_core::logging::level_filter(level) else {
        return Err(invalid_argument(format!(
            "log level must be ERROR, WARNING, INFO, DEBUG, TRACE or OFF, not {level:?}"
        )));
    };
    // Without the GIL: the replacement waits for a record being handed to
    // Python, which needs the GIL.
    py.detach(|| zklock_core::logging::set_log_sink(filter, forward_to_logging)).map_err(py_err)
}

#[pymodule]
fn _zklock(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The core's records reach `logging.getLogger("zklock")`; INFO and up by
    // default (Python's logging shows WARNING and up unless configured).
    m.py().detach(|| zklock_core::logging::set_log_sink(log::LevelFilter::Info, forward_to_logging)).map_err(py_err)?;
    let codes: Vec<&'static str> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
    m.add("ERROR_CODES", PyTuple::new(m.py(), codes)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Client>()?;
    m.add_class::<Lock>()?;
    m.add_class::<Call>()?;
    m.add_class::<WithBlock>()?;
    m.add_class::<MultiLock>()?;
    m.add_class::<Subscription>()?;
    m.add_function(wrap_pyfunction!(_shutdown, m)?)?;
    m.add_function(wrap_pyfunction!(_after_fork_in_child, m)?)?;
    m.add_function(wrap_pyfunction!(_close_all, m)?)?;
    m.add_function(wrap_pyfunction!(_wait_limit, m)?)?;
    m.add_function(wrap_pyfunction!(_set_log_level, m)?)?;
    Ok(())
}

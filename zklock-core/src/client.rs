//! The blocking ZooKeeper client that locks are made from.
//!
//! A [`Client`] owns a private tokio runtime (one worker thread) that drives
//! the session layer (`zklock-zk`), a supervisor that replaces an expired session with a
//! new one, a heartbeat that keeps the safety clock of section 5 of the
//! protocol, and one event thread that runs state-change callbacks.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::clock::SafetyClock;
use crate::error::{shown, Error, ErrorKind, Result};
use crate::listeners::{Listeners, Subscription};
use crate::names::{self, NodeKind};
use crate::security::{Acl, TlsOptions};
use crate::validate::{
    option_timeout_from_secs, validate_connect_string, validate_lock_path, MAX_OPTION_TIMEOUT, MAX_SESSION_TIMEOUT,
};
use crate::zk::{self, ClientExt as _};

const RUNTIME_THREAD: &str = "zklock-runtime";
/// The name of every client's event thread (state-change callbacks).
const EVENT_THREAD: &str = "zklock-events";

/// Options for [`Client::connect`].
#[derive(Clone, Debug)]
pub struct ClientOptions {
    pub(crate) hosts: String,
    pub(crate) session_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) operation_timeout: Duration,
    pub(crate) digest: Option<(String, String)>,
    pub(crate) sasl: Option<(String, String)>,
    pub(crate) acl: Acl,
    pub(crate) tls: Option<TlsOptions>,
}

impl ClientOptions {
    /// Options for the servers in `hosts`: `"host:port[,host:port...][/chroot]"`.
    /// Defaults: session timeout 10 s, connect timeout 15 s, operation
    /// timeout 10 s, no authentication, [`Acl::open`], no TLS.
    pub fn new(hosts: impl Into<String>) -> Self {
        ClientOptions {
            hosts: hosts.into(),
            session_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(15),
            operation_timeout: Duration::from_secs(10),
            digest: None,
            sasl: None,
            acl: Acl::open(),
            tls: None,
        }
    }

    /// The session timeout to ask the server for (it may negotiate another
    /// one within its min/max bounds). Held locks are lost when the session
    /// expires; a shorter timeout detects a dead holder sooner.
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long [`Client::connect`] may try before it fails with
    /// [`ErrorKind::ConnectionLoss`]. A connect where every server of the
    /// connect string refuses the TCP connection (nothing listens on its
    /// port), has no route, or has a name that does not resolve fails at
    /// once, naming them; a server that is only slow, or whose packets are
    /// dropped, is waited for until this timeout.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The longest a single ZooKeeper request may take (a request sent while
    /// disconnected waits for the reconnect). Bounds `release()` and every
    /// step of an acquire that has no deadline of its own.
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// Authenticates the session with ZooKeeper's `digest` scheme as
    /// `user:password` (the identity `digest:user:base64(sha1(user:password))`
    /// that ACLs name). Nodes are still created with the [`ClientOptions::acl`]
    /// given, world-open by default (as Curator does).
    pub fn digest_auth(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.digest = Some((user.into(), password.into()));
        self
    }

    /// Authenticates the session with SASL `DIGEST-MD5` as `user` (the
    /// identity `sasl:user` that ACLs name), for servers configured with
    /// `authProvider.sasl` and a JAAS `Server` section that lists the
    /// user. A wrong user or password fails [`Client::connect`] with
    /// [`ErrorKind::NoAuth`]. Kerberos (`GSSAPI`) is not offered: the
    /// ZooKeeper client supports it only through a system Kerberos
    /// library and ticket cache, which zklock does not link.
    pub fn sasl_digest_md5(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.sasl = Some((user.into(), password.into()));
        self
    }

    /// The ACL of every node this client creates (lock nodes, lock paths and
    /// their missing ancestors); [`Acl::open`] by default. See [`Acl`].
    /// Lock nodes get it without ADMIN for `world:anyone`, so that nobody
    /// may change their ACL (a session that lost READ on a node is told
    /// nothing of it by ZooKeeper 3.8 and later: protocol section 1).
    /// [`Client::connect`] fails with [`ErrorKind::NoAuth`] when the ACL
    /// gives the session's own identities (as the server lists them,
    /// ZooKeeper >= 3.7) no right to read, create or delete: a lock path
    /// made with it would shut out this client, and everyone it does not
    /// name, for good.
    pub fn acl(mut self, acl: Acl) -> Self {
        self.acl = acl;
        self
    }

    /// Connects to every server over TLS (see [`TlsOptions`]): the connect
    /// string names the servers' `secureClientPort`s. A server whose
    /// certificate does not verify is never used; when none verifies,
    /// [`Client::connect`] fails at once with `ConnectionLoss` saying why.
    pub fn tls(mut self, tls: TlsOptions) -> Self {
        self.tls = Some(tls);
        self
    }

    fn validate(&self) -> Result<String> {
        let hosts = validate_connect_string(&self.hosts)?;
        // The same rule as for front ends' numbers (zero stays zero).
        let within =
            |name: &str, d: Duration, max: Duration| option_timeout_from_secs(name, d.as_secs_f64(), max).map(drop);
        within("session timeout", self.session_timeout, MAX_SESSION_TIMEOUT)?;
        within("connect timeout", self.connect_timeout, MAX_OPTION_TIMEOUT)?;
        within("operation timeout", self.operation_timeout, MAX_OPTION_TIMEOUT)?;
        if let Some((user, password)) = &self.digest {
            if user.is_empty() || user.contains(':') {
                return Err(Error::invalid_argument("digest user must be non-empty and must not contain ':'"));
            }
            if user.len() + password.len() > MAX_DIGEST_BYTES {
                return Err(Error::invalid_argument(format!(
                    "digest user and password must be at most {MAX_DIGEST_BYTES} bytes together (the server refuses larger packets)"
                )));
            }
        }
        if let Some((user, password)) = &self.sasl {
            if user.is_empty() {
                return Err(Error::invalid_argument("SASL user must be non-empty"));
            }
            if user.len() + password.len() > MAX_DIGEST_BYTES {
                return Err(Error::invalid_argument(format!(
                    "SASL user and password must be at most {MAX_DIGEST_BYTES} bytes together"
                )));
            }
        }
        Ok(hosts)
    }
}

/// The longest digest user and password, together, in bytes.
const MAX_DIGEST_BYTES: usize = 64 * 1024;

zklock_proto::vocabulary! {
    /// What the connection listeners of a client are told (see
    /// [`Client::on_connection_state`]), as Curator's
    /// `ConnectionStateListener` and kazoo's listeners are.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum ConnectionState {
        /// The connection to ZooKeeper was lost; the session may still be
        /// alive: the client's locks are `SUSPENDED`.
        Suspended = 1, "SUSPENDED";
        /// The same session is connected again: locks not lost meanwhile are
        /// `HELD` again.
        Reconnected = 2, "RECONNECTED";
        /// The session ended: a server said it expired, or the client gave
        /// it up after no server answered for 4/3 of the session timeout
        /// (ZooKeeper may keep it a while longer: lock protocol, section
        /// 5). Every lock of this client is `LOST`; the client starts a new
        /// session.
        Lost = 3, "LOST";
        /// A new session is connected (after `LOST`). Lost locks are not taken
        /// back: acquire again.
        Connected = 4, "CONNECTED";
    }
}

/// A lock participant as seen in the queue of a lock path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Participant {
    /// Child name, e.g. `_c_<uuid>-lock-0000000003`.
    pub name: String,
    /// The sequence number the server appended.
    pub sequence: i64,
    /// Reader or writer (exclusive locks, write sides and election
    /// participants are writers: each excludes every other).
    pub kind: NodeKind,
    /// Whether this participant holds the lock now (by the ordering rule).
    pub holds: bool,
    /// The node's data (an identifier chosen by its owner; may be empty).
    pub data: Vec<u8>,
    /// The id of the session that owns the node.
    pub session_id: i64,
}

/// One ZooKeeper session and its safety clock.
pub(crate) struct Session {
    zk: Mutex<Option<zk::Client>>,
    states: zk::StateWatcher,
    /// A handle kept for `close()` after `zk` was taken.
    pub(crate) closer: zk::Client,
    /// The session id (`ephemeralOwner` of our nodes).
    pub(crate) id: i64,
    /// The negotiated session timeout.
    pub(crate) timeout: Duration,
    /// Until when the session is surely alive on the leader; moved only by
    /// the heartbeat's sync replies (see `clock.rs`).
    pub(crate) clock: SafetyClock,
}

impl Session {
    /// A clone of the ZooKeeper client, or `Closed` after [`Client::close`].
    pub(crate) fn zk(&self) -> Result<zk::Client> {
        self.zk.lock().map_err(|_| Error::internal("session mutex poisoned"))?.clone().ok_or_else(Error::closed)
    }

    /// A watcher of the ZooKeeper session state that has seen none of its
    /// changes yet: its `changed()` resolves at once if the state changed
    /// since the session began.
    pub(crate) fn states(&self) -> zk::StateWatcher {
        self.states.clone()
    }

    /// A watcher of the session state whose `changed()` resolves on the
    /// first change after now (a fresh [`Session::states`] watcher resolves
    /// at once if the state ever changed since the session began).
    pub(crate) fn watch_from_now(&self) -> zk::StateWatcher {
        let mut states = self.states();
        states.state();
        states
    }

    /// The ZooKeeper session state now.
    pub(crate) fn state(&self) -> zk::SessionState {
        self.states.peek_state()
    }

    /// Until when a lock held by this session is safely ours (protocol
    /// section 5; see `clock.rs` for what moves it).
    pub(crate) fn safe_until(&self) -> Instant {
        self.clock.safe_until()
    }

    /// Resolves the next time the safety clock moves forward (used to
    /// leave Suspended).
    pub(crate) async fn clock_advanced(&self) {
        self.clock.advanced().await
    }

    /// Resolves once the session has ended (expired, closed, auth failed).
    pub(crate) async fn ended(&self) {
        let mut states = self.states();
        while !states.state().is_terminated() {
            states.changed().await;
        }
    }

    /// Waits until the session is connected. Fails with `SessionExpired`
    /// once it is terminated, `Timeout` at the deadline.
    pub(crate) async fn wait_connected(&self, deadline: Option<Instant>) -> Result<()> {
        let mut states = self.states();
        loop {
            match states.state() {
                zk::SessionState::Connected => return Ok(()),
                s if s.is_terminated() => {
                    return Err(Error::new(ErrorKind::SessionExpired, format!("session {:#x} ended: {s}", self.id)))
                },
                _ => {},
            }
            with_deadline(deadline, "waiting for the connection", states.changed()).await?;
        }
    }

    /// Closes the session (its ephemeral nodes go): requests sent before
    /// are answered first; later calls fail with `Closed`.
    fn close(&self) {
        if let Ok(mut zk) = self.zk.lock() {
            zk.take();
        }
        self.closer.start_close();
    }
}

/// Awaits `fut` until `deadline` (`None`: no deadline).
pub(crate) async fn with_deadline<F: Future>(deadline: Option<Instant>, what: &str, fut: F) -> Result<F::Output> {
    match deadline {
        None => Ok(fut.await),
        Some(d) => tokio::time::timeout_at(d.into(), fut).await.map_err(|_| Error::timeout(what)),
    }
}

/// State shared by the client handle and its background tasks. Tasks hold
/// this, never the runtime, so the runtime can shut down from anywhere.
pub(crate) struct Shared {
    pub(crate) options: ClientOptions,
    /// `options.acl` as the session layer takes it.
    acl: Vec<zk::Acl>,
    /// The ACL of our lock nodes: `acl` without `world:anyone`'s ADMIN.
    node_acl: Vec<zk::Acl>,
    /// The connect string every new session uses (changed by
    /// [`Client::set_hosts`]).
    hosts: Mutex<String>,
    pub(crate) handle: tokio::runtime::Handle,
    session: watch::Sender<Option<Arc<Session>>>,
    closed: watch::Sender<bool>,
    events: Mutex<mpsc::Sender<Box<dyn FnOnce() + Send>>>,
    /// Background deletions still running (tests and close() look at this).
    pub(crate) pending_cleanups: AtomicU64,
    /// What [`Client::metrics`] reports.
    pub(crate) counters: crate::metrics::Counters,
    /// The listeners of [`Client::on_connection_state`].
    connection: Arc<Listeners<ConnectionState>>,
    /// The process that made the client, and its fork generation (see
    /// [`fork_generation`]): a child made by `fork()` has a copy of it but
    /// none of its threads (see [`Shared::forked`]).
    pid: u32,
    generation: u64,
}

impl Shared {
    /// The ACL of the lock paths (and their ancestors) this client makes.
    pub(crate) fn acl(&self) -> &[zk::Acl] {
        &self.acl
    }

    /// The ACL of the lock nodes this client makes: the client's ACL, but
    /// `world:anyone` never gets ADMIN on them. With ADMIN a third party
    /// could take READ away from our node, and ZooKeeper 3.8 and later then
    /// tell us nothing of it (not even its deletion): a holder would stay
    /// Held, a waiter would wait for ever (outside test round 13).
    pub(crate) fn node_acl(&self) -> &[zk::Acl] {
        &self.node_acl
    }

    /// The connect string new sessions use.
    pub(crate) fn hosts(&self) -> String {
        self.hosts.lock().map(|h| h.clone()).unwrap_or_else(|p| p.into_inner().clone())
    }

    /// The servers and the chroot of [`Shared::hosts`], as the session
    /// layer reads them (`None` if it cannot: never for a client's own).
    pub(crate) fn connect_string(&self) -> Option<zklock_zk::ConnectString> {
        zklock_zk::ConnectString::parse(&self.hosts()).ok()
    }
}

/// `acl` without ADMIN for `world:anyone` (an entry left with no right is
/// dropped; if none is left, `acl` as it is).
fn without_world_admin(acl: &[zk::Acl]) -> Vec<zk::Acl> {
    const ADMIN: i32 = 16;
    let out: Vec<zk::Acl> = acl
        .iter()
        .map(|e| {
            let world = e.scheme == "world" && e.id == "anyone";
            zk::Acl { perms: if world { e.perms & !ADMIN } else { e.perms }, ..e.clone() }
        })
        .filter(|e| e.perms != 0)
        .collect();
    if out.is_empty() {
        acl.to_vec()
    } else {
        out
    }
}

/// How many `fork()`s led to this process since the first client was made
/// (moved by a `pthread_atfork` child handler): comparing it costs an
/// atomic load, where comparing pids costs a system call on every
/// `check()`.
fn fork_generation() -> u64 {
    static FORKS: AtomicU64 = AtomicU64::new(0);
    static REGISTER: std::sync::Once = std::sync::Once::new();
    extern "C" fn count_fork() {
        // Async-signal-safe: one atomic add.
        FORKS.fetch_add(1, Ordering::SeqCst);
    }
    REGISTER.call_once(|| {
        // SAFETY: registers a handler that only does an atomic add.
        let _ = unsafe { libc::pthread_atfork(None, None, Some(count_fork)) };
    });
    FORKS.load(Ordering::SeqCst)
}

impl Shared {
    /// Whether [`Client::close`] was called, or this is a forked child's
    /// copy of the client (which acts as closed).
    pub(crate) fn is_closed(&self) -> bool {
        *self.closed.borrow() || self.forked()
    }

    /// Whether this process is a child made by `fork()` after the client
    /// was made. The copy has none of the client's threads (nothing would
    /// ever answer) and shares the parent's sockets and epoll instance:
    /// it must fail at once and never touch them, not even to close them.
    pub(crate) fn forked(&self) -> bool {
        fork_generation() != self.generation
    }

    /// `Closed`, saying why: closed, or inherited through `fork()`.
    pub(crate) fn closed_error(&self) -> Error {
        if self.forked() {
            Error::new(
                ErrorKind::Closed,
                format!(
                    "this client was made by process {} before fork(): it cannot be used in the child {} \
                     (make a new client there)",
                    self.pid,
                    std::process::id()
                ),
            )
        } else {
            Error::closed()
        }
    }

    /// Resolves when the client is closed.
    pub(crate) async fn closed(&self) {
        let mut rx = self.closed.subscribe();
        // An error means the sender is gone, which also means closed.
        let _ = rx.wait_for(|c| *c).await;
    }

    /// The current live session, waiting (until `deadline`) while the
    /// supervisor replaces an expired one.
    pub(crate) async fn session(&self, deadline: Option<Instant>) -> Result<Arc<Session>> {
        let mut rx = self.session.subscribe();
        loop {
            if self.is_closed() {
                return Err(Error::closed());
            }
            if let Some(s) = rx.borrow_and_update().clone() {
                if !s.state().is_terminated() {
                    return Ok(s);
                }
            }
            tokio::select! {
                r = with_deadline(deadline, "waiting for a ZooKeeper session", rx.changed()) => {
                    r?.map_err(|_| Error::closed())?;
                }
                _ = self.closed() => return Err(Error::closed()),
            }
        }
    }

    /// Marks the client closed and closes the session, waiting up to `wait`
    /// for the server to confirm (not at all on the runtime's own thread).
    /// Idempotent.
    fn close_session(&self, wait: Duration) {
        if let Some(confirmed) = self.start_close(wait) {
            let _ = self.block_on(confirmed);
        }
    }

    /// Marks the client closed and closes the session; returns the wait
    /// (up to `wait`) for the server's confirmation, to run on the runtime,
    /// or `None` if there is no session. Also when the client was closed
    /// already: a close still on its way must be waited for before the
    /// runtime goes (a worker ended while its `close()` was in flight
    /// dropped the client, which shut the runtime down before the session
    /// was closed: its nodes stayed for the session timeout; outside test).
    fn start_close(&self, wait: Duration) -> Option<impl Future<Output = ()> + Send + 'static> {
        let first = !self.closed.send_replace(true);
        let session = self.session.borrow().clone()?;
        if first {
            session.close();
        }
        Some(async move {
            let mut states = session.states();
            let _ = tokio::time::timeout(wait, async {
                while !states.state().is_terminated() {
                    states.changed().await;
                }
            })
            .await;
        })
    }

    /// Tells the connection listeners `state` (on the event thread).
    fn tell(&self, state: ConnectionState) {
        match state {
            ConnectionState::Reconnected => self.counters.reconnected(),
            ConnectionState::Lost => self.counters.expired(),
            ConnectionState::Suspended | ConnectionState::Connected => {},
        }
        self.connection.notify(state, |job| self.post_event(job));
    }

    /// The session in use now, if any.
    pub(crate) fn current_session(&self) -> Option<Arc<Session>> {
        self.session.borrow().clone()
    }

    /// Runs `job` on the client's event thread (state-change callbacks).
    pub(crate) fn post_event(&self, job: Box<dyn FnOnce() + Send>) {
        if let Ok(tx) = self.events.lock() {
            // The event thread only stops when the client is gone.
            let _ = tx.send(job);
        }
    }

    /// Runs `fut` on the runtime and blocks the calling thread for its
    /// output. Safe from any thread, also from inside another tokio runtime
    /// (it never calls `block_on`).
    pub(crate) fn block_on<F>(&self, fut: F) -> Result<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        if std::thread::current().name() == Some(RUNTIME_THREAD) {
            return Err(Error::internal("a blocking zklock call was made on zklock's own runtime thread"));
        }
        if self.forked() {
            return Err(self.closed_error());
        }
        let (tx, rx) = mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().map_err(|_| Error::closed())
    }

    /// Runs `fut` on the runtime; the returned future, which any executor
    /// can await, gives its output. Dropping the returned future does not
    /// stop `fut`.
    pub(crate) fn run<F>(&self, fut: F) -> impl Future<Output = Result<F::Output>> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let spawned = if self.forked() {
            Err(self.closed_error())
        } else {
            let (tx, rx) = tokio::sync::oneshot::channel();
            self.handle.spawn(async move {
                let _ = tx.send(fut.await);
            });
            Ok(rx)
        };
        async move { spawned?.await.map_err(|_| Error::closed()) }
    }

    /// Runs `fut` on the runtime, then `done` with its output on the event
    /// thread (never on the runtime's thread: a slow `done` must not hold
    /// up heartbeats). `done` runs exactly once if this returns `Ok`, never
    /// if it returns `Err` (a forked child's copy of the client).
    pub(crate) fn spawn_then<F>(self: &Arc<Self>, fut: F, done: impl FnOnce(F::Output) + Send + 'static) -> Result<()>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        if self.forked() {
            return Err(self.closed_error());
        }
        let shared = self.clone();
        self.handle.spawn(async move {
            let out = fut.await;
            shared.post_event(Box::new(move || done(out)));
        });
        Ok(())
    }

    /// Opens a session, trying until the connect timeout. Fails at once,
    /// naming them, when every server refuses the connection, has no
    /// address, or refuses the TLS handshake.
    async fn connect_session(options: &ClientOptions, hosts: &str) -> Result<Arc<Session>> {
        // The protocol counts in milliseconds: a shorter timeout (any
        // positive one is valid) asks for 1 ms, which the server
        // negotiates up to its minimum.
        let asked = options.session_timeout.max(Duration::from_millis(1));
        let bad =
            |e: zk::Error| Error::new(ErrorKind::InvalidArgument, format!("connect string {}: {e}", shown(hosts)));
        let mut config =
            zklock_zk::Config::new(hosts).map_err(bad)?.session_timeout(asked).connect_timeout(options.connect_timeout);
        if let Some((user, password)) = &options.digest {
            if !user.is_ascii() || !password.is_ascii() {
                // The server decodes the login with its JVM's default
                // charset: under LC_ALL=C (Java before 18) that is ASCII,
                // and the session gets another identity than the UTF-8 hash
                // an ACL names (found by an outside test).
                log::warn!(
                    "zklock: the digest user or password is not ASCII: a server whose JVM charset is not UTF-8 \
                     (LC_ALL=C, Java before 18) gives the session another identity than an ACL's hash of it"
                );
            }
            config = config.auth("digest", format!("{user}:{password}").as_bytes());
        }
        if let Some((user, password)) = &options.sasl {
            config = config.sasl_digest_md5(user, password);
        }
        if let Some(tls) = &options.tls {
            config = config.tls(tls.prepare()?);
        }
        let zk = match zklock_zk::Session::connect(config).await {
            Ok(zk) => zk,
            Err(e @ (zk::Error::Unreachable(_) | zk::Error::Timeout(_))) => {
                let why = match &e {
                    zk::Error::Unreachable(why) => why.clone(),
                    _ => format!("no server answered within {:?} ({e})", options.connect_timeout),
                };
                return Err(Error::new(
                    ErrorKind::ConnectionLoss,
                    format!("could not connect to {}: {why}", shown(hosts)),
                ));
            },
            Err(e) => return Err(Error::from_zk(&format!("connecting to {}", shown(hosts)), e)),
        };
        // The server created the session after the connect request was
        // handed to the socket: the safety clock counts from there.
        let Some(first) = zk.connected() else {
            return Err(Error::new(
                ErrorKind::ConnectionLoss,
                format!("connecting to {}: the connection dropped", shown(hosts)),
            ));
        };
        if options.sasl.is_some() || !options.acl.is_open() {
            // One whoami for both checks; servers before 3.7 cannot say
            // which identities the session has: nothing is checked there.
            let identities: Option<Vec<(String, String)>> = match zk.who_am_i().value().await {
                Ok(users) => Some(users),
                Err(zk::Error::Server(zk::Code::Unimplemented)) => {
                    log::debug!("zklock: the server cannot list the session's identities (no whoami before 3.7)");
                    None
                },
                Err(e) => return Err(Error::from_zk("asking the server which identities the session has", e)),
            };
            if let Some(ids) = identities {
                if let Some((user, _)) = &options.sasl {
                    Self::verify_sasl(&ids, user, hosts)?;
                }
                if !options.acl.is_open() {
                    let login = options.digest.as_ref().map(|(u, p)| (u.as_str(), p.as_str()));
                    Self::verify_acl(&ids, &options.acl, login, hosts)?;
                }
            }
        }
        let session = Arc::new(Session {
            states: zk.state_watcher(),
            id: zk.id(),
            timeout: first.timeout,
            clock: SafetyClock::new(first.connect_sent, first.timeout, first.connection),
            closer: zk.clone(),
            zk: Mutex::new(Some(zk)),
        });
        Ok(session)
    }

    /// Makes sure the ACL gives this session (its `ids`, as whoami lists
    /// them) the rights zklock needs on the lock path it may create with it
    /// (read, create, delete): otherwise the first acquire would make a lock
    /// path that shuts out this session and, being empty, is never reaped
    /// (found by an outside test with an ACL naming only another identity).
    /// `login` is our digest login, whose hash the ACL's digest entries for
    /// its user must name (a wrong password logs in as another identity).
    fn verify_acl(ids: &[(String, String)], acl: &crate::Acl, login: Option<(&str, &str)>, hosts: &str) -> Result<()> {
        let authenticated = ids.iter().any(|(scheme, _)| scheme != "ip");
        if acl.has_auth_entry() && !authenticated {
            // ZooKeeper refuses the whole ACL then (InvalidACL), whatever
            // the other entries give.
            return Err(Error::new(
                ErrorKind::NoAuth,
                format!(
                    "connecting to {}: the ACL {} has an `auth`/`creator` entry, which needs an authenticated \
                     session (digest auth, SASL or a TLS client certificate); this one has none (identities [{}])",
                    shown(hosts),
                    shown(&acl.to_string()),
                    shown_identities(ids)
                ),
            ));
        }
        let missing = acl.missing_rights(ids, login);
        if missing.is_empty() {
            return Ok(());
        }
        let hint = if let Some((user, _)) = login.filter(|&login| acl.names_another_password(login)) {
            format!(
                " (the ACL's digest entry for {} names another password than this session logged in with)",
                shown(user)
            )
        } else {
            String::new()
        };
        Err(Error::new(
            ErrorKind::NoAuth,
            format!(
                "connecting to {}: the ACL {} gives this session (identities [{}]) no right to {}{hint}: it could \
                 not take a lock, and a lock path made with that ACL would shut out everyone it does not name",
                shown(hosts),
                shown(&acl.to_string()),
                shown_identities(ids),
                missing.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")
            ),
        ))
    }

    /// Makes sure the server took our SASL login (`ids`, as whoami lists
    /// them, has `sasl:user`): a server without SASL configured ignores it
    /// and the session would go on without the identity (every create
    /// under a `creator` ACL then failing).
    fn verify_sasl(ids: &[(String, String)], user: &str, hosts: &str) -> Result<()> {
        if ids.iter().any(|(scheme, id)| scheme == "sasl" && id == user) {
            return Ok(());
        }
        Err(Error::new(
            ErrorKind::NoAuth,
            format!(
                "connecting to {}: the server did not authenticate the SASL login of {} (the session's \
                 identities: [{}]); is SASL configured there (authProvider.sasl and a JAAS Server section)?",
                shown(hosts),
                shown(user),
                shown_identities(ids)
            ),
        ))
    }

    /// Keeps the safety clock of `session` fresh: a `sync` (or a write:
    /// `SafetyClock::heartbeat`) at the pace `Clock::next_heartbeat` sets,
    /// asked right after each is sent (about every twelfth of the session
    /// timeout, at most every eighth; at once after a reconnect, and as
    /// soon as a reply can first move the clock on a new connection or a
    /// clock near its end), whether or not the last one was answered; each
    /// reply, however late, is credited when it comes. Only these replies
    /// move the clock (`clock.rs`).
    async fn heartbeat(self: Arc<Self>, session: Arc<Session>) {
        let every = session.timeout / 8;
        let mut states = session.states();
        loop {
            if session.state().is_terminated() || self.is_closed() {
                return;
            }
            if let Ok(zk) = session.zk() {
                // Sent now; its reply, however late, credits the clock.
                if let Some(reply) = session.clock.heartbeat(&zk) {
                    let session = session.clone();
                    tokio::spawn(async move {
                        if let Some(reply) = reply.await {
                            session.clock.credit(reply);
                        }
                    });
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(session.clock.next_heartbeat(every)) => {}
                // Another connection: heartbeat as soon as it is up (its
                // first reply credits the reconnect).
                mut s = states.changed() => {
                    while s != zk::SessionState::Connected && !s.is_terminated() && !self.is_closed() {
                        s = states.changed().await;
                    }
                },
            }
        }
    }

    /// Watches the current session; when it expires, makes a new one (with
    /// backoff) so that waiters can queue again. Ends when the client closes.
    async fn supervise(self: Arc<Self>, first: Arc<Session>) {
        let mut current = first;
        loop {
            tokio::spawn(self.clone().heartbeat(current.clone()));
            let mut states = current.states();
            let mut was = zk::SessionState::Connected;
            loop {
                let s = states.state();
                if s.is_terminated() {
                    break;
                }
                if s == zk::SessionState::Connected {
                    if was != zk::SessionState::Connected {
                        log::info!("zklock: session {:#x} reconnected; its locks are held again", current.id);
                        self.tell(ConnectionState::Reconnected);
                    }
                } else if was == zk::SessionState::Connected && !self.is_closed() {
                    log::warn!(
                        "zklock: session {:#x} lost its connection ({s}); its locks are suspended until it \
                         reconnects, lost if it expires",
                        current.id
                    );
                    self.tell(ConnectionState::Suspended);
                }
                was = s;
                tokio::select! {
                    _ = states.changed() => {}
                    _ = self.closed() => { current.close(); return; }
                }
            }
            // Our own close marks the client closed before it closes the
            // session, so a session that ended because of it ends here.
            if self.is_closed() {
                return;
            }
            log::warn!(
                "zklock: session {:#x} ended ({}); its locks are lost; starting a new session",
                current.id,
                current.state()
            );
            self.tell(ConnectionState::Lost);
            let mut backoff = Duration::from_millis(50);
            current = loop {
                if self.is_closed() {
                    return;
                }
                let hosts = self.hosts();
                match Self::connect_session(&self.options, &hosts).await {
                    // Closed while this session was being made: it goes at
                    // once, unannounced (an outside test saw "new session"
                    // after `close()` had returned).
                    Ok(s) if self.is_closed() => {
                        s.close();
                        return;
                    },
                    Ok(s) => {
                        // A set_hosts while it was made: it takes the new
                        // list too (set_hosts saw the old session).
                        let now = self.hosts();
                        if now != hosts {
                            if let Ok(zk) = s.zk() {
                                let _ = zk.set_hosts(&now);
                            }
                        }
                        log::info!("zklock: new session {:#x}, timeout {:?}", s.id, s.timeout);
                        self.tell(ConnectionState::Connected);
                        break s;
                    },
                    Err(e) => {
                        log::warn!("zklock: reconnect failed: {e}");
                        tokio::select! {
                            _ = tokio::time::sleep(backoff) => {}
                            _ = self.closed() => return,
                        }
                        backoff = (backoff * 2).min(Duration::from_secs(2));
                    },
                }
            };
            // The old session's requests join the retired ones as the new
            // session takes its place, under the lock a snapshot takes
            // (each request counted once, the totals never fall).
            let mut retired = self.counters.retired.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let old = self.session.send_replace(Some(current.clone()));
            for (op, n) in old.map(|s| s.closer.requests_sent()).unwrap_or_default() {
                *retired.entry(op).or_default() += n;
            }
        }
    }
}

struct ClientInner {
    runtime: Option<tokio::runtime::Runtime>,
    shared: Arc<Shared>,
}

impl Drop for ClientInner {
    fn drop(&mut self) {
        if self.shared.forked() {
            // A forked child's copy: the runtime's threads are the
            // parent's, and its sockets and epoll instance are shared with
            // the parent. Dropping would deregister them from the parent's
            // epoll (or wait for threads that do not exist): leak it.
            std::mem::forget(self.runtime.take());
            return;
        }
        // Close the session cleanly (its ephemeral nodes go at once rather
        // than after the session timeout), waiting a moment for the server,
        // then stop the runtime (never blocks, never panics).
        let Some(runtime) = self.runtime.take() else { return };
        let shared = self.shared.clone();
        let finish = move |runtime: tokio::runtime::Runtime| {
            shared.close_session(Duration::from_secs(1));
            runtime.shutdown_background();
        };
        if tokio::runtime::Handle::try_current().is_err() {
            finish(runtime);
            return;
        }
        // Inside an async runtime (the last guard dropped by a task on
        // zklock's own runtime, after an aborted downgrade in a terminated
        // worker, say) the wait cannot block here: on zklock's runtime it
        // did not wait at all, and the runtime then stopped before the
        // session was closed, killing the guard's delete (outside test: the
        // nodes stayed for the session timeout). A thread of its own does
        // both; the runtime goes to it once it runs.
        let (tx, rx) = mpsc::channel();
        let spawned = std::thread::Builder::new().name("zklock-close".to_owned()).spawn(move || {
            if let Ok(runtime) = rx.recv() {
                finish(runtime);
            }
        });
        let unsent = match spawned {
            Ok(_) => tx.send(runtime).err().map(|e| e.0),
            Err(_) => Some(runtime),
        };
        // No thread: stop without waiting rather than block here.
        if let Some(runtime) = unsent {
            runtime.shutdown_background();
        }
    }
}

/// A connection to a ZooKeeper ensemble, the factory of locks.
///
/// `Client` is `Send + Sync` and cheap to clone (clones share one session).
/// Methods without `_async` block the calling thread and may be called from
/// any thread, including the client's event thread (state-change callbacks)
/// and threads of another async runtime (where they block that thread: use
/// the `_async` methods there, whose futures any executor can await). Locks and guards keep the client alive; the
/// session closes when [`Client::close`] is called or the last clone, lock
/// and guard are dropped.
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("hosts", &self.inner.shared.hosts()).finish()
    }
}

impl Client {
    /// Connects to ZooKeeper and opens a session.
    ///
    /// # Errors
    /// `InvalidArgument` / `InvalidPath` for a malformed connect string or
    /// option; `ConnectionLoss` when no server answered within the connect
    /// timeout, or at once when every server refused the connection
    /// ("connection refused by HOST:PORT", see
    /// [`ClientOptions::connect_timeout`]); `ZooKeeper` for other server
    /// refusals (e.g. failed auth).
    pub fn connect(options: ClientOptions) -> Result<Client> {
        let (client, first) = Client::start(options)?;
        client.shared().block_on(first)??;
        Ok(client)
    }

    /// [`Client::connect`] as a future that any executor can await (the
    /// connect runs on the client's own runtime). Dropping the future
    /// unfinished drops the client, and with it the session.
    ///
    /// # Errors
    /// As [`Client::connect`].
    pub fn connect_async(options: ClientOptions) -> impl Future<Output = Result<Client>> + Send + 'static {
        let started = Client::start(options).map(|(client, first)| (client.shared().run(first), client));
        async move {
            let (first, client) = started?;
            first.await??;
            Ok(client)
        }
    }

    /// [`Client::connect`] completing through `done`, for programs with
    /// their own event loop: returns at once; `done` is called exactly once
    /// with the client or the error, on the new client's event thread
    /// (where blocking zklock calls are allowed; it is a new thread, so
    /// waiting for `done` in another client's callback is safe).
    ///
    /// # Errors
    /// An error found before connecting (`InvalidArgument`, `InvalidPath`
    /// for a malformed connect string or option; `Internal` if the runtime
    /// cannot start) is returned here, and then `done` is never called.
    pub fn connect_then(options: ClientOptions, done: impl FnOnce(Result<Client>) + Send + 'static) -> Result<()> {
        let (client, first) = Client::start(options)?;
        let made = client.clone();
        client.shared().spawn_then(first, move |r| done(r.map(|()| made)))
    }

    /// Makes the client's runtime and event thread, and returns the work
    /// that opens the first session (to run on the runtime).
    fn start(options: ClientOptions) -> Result<(Client, impl Future<Output = Result<()>> + Send + 'static)> {
        let hosts = options.validate()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(RUNTIME_THREAD)
            .enable_all()
            .build()
            .map_err(|e| Error::internal(format!("cannot start the runtime: {e}")))?;
        let (events_tx, events_rx) = mpsc::channel::<Box<dyn FnOnce() + Send>>();
        std::thread::Builder::new()
            .name(EVENT_THREAD.into())
            .spawn(move || {
                for job in events_rx {
                    // A panicking callback must not end the event thread.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                }
            })
            .map_err(|e| Error::internal(format!("cannot start the event thread: {e}")))?;
        let acl = options.acl.to_zk();
        let node_acl = without_world_admin(&acl);
        let shared = Arc::new(Shared {
            acl,
            node_acl,
            options,
            hosts: Mutex::new(hosts),
            handle: runtime.handle().clone(),
            session: watch::channel(None).0,
            closed: watch::channel(false).0,
            events: Mutex::new(events_tx),
            pending_cleanups: AtomicU64::new(0),
            counters: crate::metrics::Counters::default(),
            connection: Arc::default(),
            pid: std::process::id(),
            generation: fork_generation(),
        });
        let inner = Arc::new(ClientInner { runtime: Some(runtime), shared: shared.clone() });
        let first = async move {
            let session = Shared::connect_session(&shared.options, &shared.hosts()).await?;
            shared.session.send_replace(Some(session.clone()));
            tokio::spawn(shared.clone().supervise(session.clone()));
            log::info!(
                "zklock: connected to {}: session {:#x}, timeout {:?}",
                shown(&shared.hosts()),
                session.id,
                session.timeout
            );
            Ok::<_, Error>(())
        };
        Ok((Client { inner }, first))
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }

    /// The leader of the election on `path` (see [`Client::election`]): the
    /// first participant of its queue, with its id as `data`; `None` when
    /// nobody takes part.
    ///
    /// # Errors
    /// As [`Client::participants`].
    pub fn leader(&self, path: &str) -> Result<Option<Participant>> {
        Ok(self.participants(path)?.into_iter().find(|p| p.holds))
    }

    /// [`Client::leader`] as a future that any executor can await.
    ///
    /// # Errors
    /// As [`Client::participants`].
    pub fn leader_async(&self, path: &str) -> impl Future<Output = Result<Option<Participant>>> + Send + 'static {
        let participants = self.participants_async(path);
        async move { Ok(participants.await?.into_iter().find(|p| p.holds)) }
    }

    /// Registers `callback` to be told of every change of this client's
    /// connection to ZooKeeper ([`ConnectionState`]): lost (suspended),
    /// back with the same session, session lost, new session. It runs on
    /// the client's event thread, one call at a time in order (with the
    /// locks' state callbacks); it may call any zklock function but should
    /// return promptly. The returned [`Subscription`] takes it back. Not
    /// called once the client is closed.
    pub fn on_connection_state(&self, callback: impl Fn(ConnectionState) + Send + Sync + 'static) -> Subscription {
        self.inner.shared.connection.add(Arc::new(callback))
    }

    /// The participants of the lock at `path` in queue order (holders
    /// first). Children that are not lock nodes are left out. An absent
    /// path has no participants. Costs a list of the path and a read of
    /// each queued node (its data and owner): a listing of a queue of N
    /// is N + 1 requests and grows with the queue.
    ///
    /// # Errors
    /// `InvalidPath`, `Closed`, `ConnectionLoss` / `Timeout` when ZooKeeper
    /// does not answer within the operation timeout.
    pub fn participants(&self, path: &str) -> Result<Vec<Participant>> {
        self.shared().block_on(self.start_participants(path)?)?
    }

    /// [`Client::participants`] as a future that any executor can await.
    ///
    /// # Errors
    /// As [`Client::participants`].
    pub fn participants_async(&self, path: &str) -> impl Future<Output = Result<Vec<Participant>>> + Send + 'static {
        let started = self.start_participants(path).map(|work| self.shared().run(work));
        async move { started?.await? }
    }

    fn start_participants(
        &self,
        path: &str,
    ) -> Result<impl Future<Output = Result<Vec<Participant>>> + Send + 'static> {
        self.check_open()?;
        validate_lock_path(path)?;
        let shared = self.shared().clone();
        let path = path.to_owned();
        Ok(async move {
            let deadline = Some(Instant::now() + shared.options.operation_timeout);
            let session = shared.session(deadline).await?;
            let zk = session.zk()?;
            let children = match with_deadline(deadline, "listing the lock", zk.list_children(&path)).await? {
                Ok(c) => c,
                Err(zk::Error::Server(zk::Code::NoNode)) => return Ok(Vec::new()),
                Err(e) => return Err(Error::from_zk("listing the lock", e)),
            };
            let queue = names::queue_with_holders(&children);
            // Requests are sent when created: all reads go out pipelined.
            let reads: Vec<_> = queue.iter().map(|(n, _)| zk.read_data(&format!("{path}/{}", n.name))).collect();
            let mut out = Vec::with_capacity(queue.len());
            for ((node, holds), read) in queue.into_iter().zip(reads) {
                let (data, stat) = match with_deadline(deadline, "reading a lock node", read).await? {
                    Ok(r) => r,
                    Err(zk::Error::Server(zk::Code::NoNode)) => continue,
                    Err(e) => return Err(Error::from_zk("reading a lock node", e)),
                };
                out.push(Participant {
                    name: node.name,
                    sequence: node.sequence,
                    kind: node.kind,
                    holds,
                    data,
                    session_id: stat.ephemeral_owner,
                });
            }
            Ok(out)
        })
    }

    /// The id of the current ZooKeeper session (it changes when an expired
    /// session is replaced). Blocks the calling thread only while it asks.
    ///
    /// # Errors
    /// `Closed` after [`Client::close`]; `Timeout` or `ConnectionLoss` while
    /// no session is established (the last one ended and the next is not yet
    /// made: the client keeps trying).
    pub fn session_id(&self) -> Result<i64> {
        self.check_open()?;
        let shared = self.shared().clone();
        self.shared().block_on(async move { shared.session(Some(Instant::now())).await.map(|s| s.id) })?
    }

    /// The session timeout the server granted.
    ///
    /// # Errors
    /// `Closed` after [`Client::close`].
    pub fn session_timeout(&self) -> Result<Duration> {
        self.check_open()?;
        let s = self.inner.shared.session.borrow().clone();
        s.map(|s| s.timeout).ok_or_else(Error::closed)
    }

    /// How many deletions of our nodes (after a timeout, cancel or a release
    /// during a disconnect) are still being retried in the background.
    pub fn pending_cleanups(&self) -> u64 {
        self.shared().pending_cleanups.load(Ordering::Acquire)
    }

    /// Closes the session: every lock held through this client is lost
    /// (its node goes with the session) and waiting acquires fail with
    /// `Closed`. Idempotent. Waits up to the operation timeout for the
    /// server to confirm (while the session reconnects, the close is sent
    /// on the next connection), except on a client's event thread (in a
    /// state-change callback), where it sends the close and returns at
    /// once: waiting there would hold back every callback, the lock's
    /// `Suspended` and `Lost` among them, until the server answered.
    pub fn close(&self) {
        let shared = self.shared();
        shared.connection.clear();
        // Outside attack round 26, O1: a close in a callback during an
        // outage held the guard's callbacks back until after another client
        // was granted the lock.
        let on_event_thread = std::thread::current().name() == Some(EVENT_THREAD);
        shared.close_session(if on_event_thread { Duration::ZERO } else { shared.options.operation_timeout });
    }

    /// Runs `future` (one of this client's `_async` calls) on the client's
    /// runtime and then calls `done` with its output on the client's event
    /// thread: how a program with its own event loop (C, Python's asyncio)
    /// waits for a call without a thread of its own. `done` may make
    /// blocking zklock calls but should return promptly (other callbacks
    /// wait). `future` must not block (it runs on the runtime that keeps
    /// the sessions alive). Do not wait for `done` on the event thread
    /// itself (in a callback): it would wait for itself. Every callback
    /// runs on that one thread: a blocking acquire made in one is the
    /// event thread's, so on a reentrant handle callbacks reenter each
    /// other's holds; give such acquires an owner of their own
    /// ([`crate::AcquireOptions::owner`]).
    ///
    /// # Errors
    /// `Closed` in a forked child's copy of the client; then `done` is
    /// never called. Otherwise `done` is called exactly once.
    pub fn spawn_then<F>(&self, future: F, done: impl FnOnce(F::Output) + Send + 'static) -> Result<()>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.shared().spawn_then(future, done)
    }

    /// [`Client::close`] as a future that any executor can await: the
    /// client is closed when this is called; the future waits for the
    /// server's confirmation.
    pub fn close_async(&self) -> impl Future<Output = ()> + Send + 'static {
        let shared = self.shared();
        let confirmed = shared.start_close(shared.options.operation_timeout).map(|c| shared.run(c));
        async move {
            if let Some(c) = confirmed {
                let _ = c.await;
            }
        }
    }

    /// Whether [`Client::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.shared().is_closed()
    }

    /// The body of the one-request calls on a node (`revoke`,
    /// `fence_check`, the shared counts): checks that the client is open
    /// and `path` valid, then runs `call` with the current session, the
    /// path and the deadline (the operation timeout from now), blocking
    /// the calling thread.
    pub(crate) fn on_node<T, F, Fut>(&self, path: &str, call: F) -> Result<T>
    where
        F: FnOnce(Arc<Shared>, zk::Client, String, Instant) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        self.shared().block_on(self.on_node_async(path, call))?
    }

    /// [`Client::on_node`] for async callers: the checks are made now
    /// (their error is the returned future's output); `call` starts on the
    /// client's runtime when the returned future (any executor) is first
    /// polled, and dropping the future after that does not stop it.
    pub(crate) fn on_node_async<T, F, Fut>(
        &self,
        path: &str,
        call: F,
    ) -> impl Future<Output = Result<T>> + Send + 'static
    where
        F: FnOnce(Arc<Shared>, zk::Client, String, Instant) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let checked = self.check_open().and_then(|()| validate_lock_path(path));
        let shared = self.shared().clone();
        let path = path.to_owned();
        async move {
            checked?;
            let runner = shared.clone();
            runner
                .run(async move {
                    let deadline = Instant::now() + shared.options.operation_timeout;
                    let session = shared.session(Some(deadline)).await?;
                    let zk = session.zk()?;
                    call(shared, zk, path, deadline).await
                })
                .await?
        }
    }

    /// A snapshot of this client's metrics: acquires by outcome, wait and
    /// hold times, suspensions, losses, reconnects, session expiries,
    /// requests by operation and background cleanups pending. Counters only
    /// grow (hand them to Prometheus as counters); never blocks, any
    /// thread, also after `close()`.
    pub fn metrics(&self) -> crate::metrics::Metrics {
        let shared = self.shared();
        let current = || shared.current_session().map(|s| s.closer.requests_sent()).unwrap_or_default();
        shared.counters.snapshot(current, self.pending_cleanups())
    }

    /// Moves this client to a new list of ZooKeeper servers (an ensemble
    /// that grew, shrank or moved; kazoo's `set_hosts`, Curator's
    /// `EnsembleProvider`), keeping its session and every lock: every later
    /// (re)connect, and every new session, uses `hosts`. If the server
    /// connected now is in the new list nothing else happens; if not, the
    /// session finishes what it has in flight (a list that has that server
    /// again meanwhile calls the move off), then reconnects to a server
    /// of the new list, as after any lost connection: the locks are
    /// `Suspended` for that moment and `Held` again once the session is
    /// back (lost if no new server takes it within the session timeout).
    /// While the session reconnects, the attempts go on over the new list:
    /// one waiting on a server the new list keeps goes on, on its own
    /// connection (unless servers were added and its wait is longer than
    /// one among them would be: then the new ones are asked at once), and
    /// the servers the round has not asked yet follow, each once per round
    /// (by address: a server a list dropped and brought back counts as
    /// asked), the least recently asked first (a server never asked before
    /// all, as every later round asks them), so calling this again and again
    /// neither puts the reconnect off, nor
    /// asks a hung server again before the others, nor opens connections
    /// to a server it keeps. A server written twice counts once. Never
    /// blocks. An attempt the new list does not let go on (its server
    /// dropped, or its wait cut), whose connect was written, is waited for
    /// until a tenth of the session timeout after it began, and its
    /// connection used if its server is in the list then, else closed
    /// unused before the next server is asked: its server, if it reads the
    /// connect, does so first. One that a stalled
    /// server reads later (when it runs again) takes the session over: the
    /// next write on the connection the session went on with is refused
    /// and that connection closed, its calls in flight failing with
    /// `ConnectionLoss`, and the session reconnects once more (see
    /// `docs/connection-state.md`).
    ///
    /// # Errors
    /// `InvalidArgument` for a malformed connect string, or one with
    /// another chroot than the client's (none means the same);
    /// `InvalidPath` for a chroot that is no valid node path (`/a//b`,
    /// `/zookeeper`); `Closed`.
    pub fn set_hosts(&self, hosts: &str) -> Result<()> {
        self.check_open()?;
        let hosts = validate_connect_string(hosts)?;
        let shared = self.shared();
        let old = shared.hosts();
        // The session layer's own parse of a connect string, as every
        // session makes it.
        let chroot_of = |h: &str| zklock_zk::ConnectString::parse(h).map(|c| c.chroot).unwrap_or_default();
        let (was, is) = (chroot_of(&old), chroot_of(&hosts));
        if !is.is_empty() && is != was {
            return Err(Error::invalid_argument(format!(
                "set_hosts: chroot {} is not the client's ({}); a client cannot change its chroot",
                shown(&is),
                shown(&was)
            )));
        }
        let hosts = if is.is_empty() { format!("{}{was}", hosts.trim_end_matches('/')) } else { hosts };
        // The list first: a session the supervisor makes from now on
        // starts with it, or is moved to it once made.
        *shared.hosts.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = hosts.clone();
        let current = shared.session.borrow().clone();
        if let Some(zk) = current.and_then(|s| s.zk().ok()) {
            // An ended session refuses: its successor takes the list.
            let _ = zk.set_hosts(&hosts);
        }
        log::info!("zklock: server list is now {}", shown(&hosts));
        Ok(())
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.is_closed() {
            Err(self.shared().closed_error())
        } else {
            Ok(())
        }
    }
}

/// A session's identities as `scheme:id`, comma-separated, for messages.
fn shown_identities(ids: &[(String, String)]) -> String {
    ids.iter().map(|(scheme, id)| format!("{scheme}:{id}")).collect::<Vec<_>>().join(", ")
}

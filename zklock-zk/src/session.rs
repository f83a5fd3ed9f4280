//! The session: a handle that enqueues requests, and one task per session
//! that owns the socket, sends, reads, pings, reconnects and keeps the
//! watches.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};

use crate::codec::frame::{next_frame, write_frame};
use crate::codec::ops::{op, xid, Code, EventType};
use crate::codec::records::{
    with_chroot, Acl, CreateMode, MultiOp, MultiResult, ReplyHeader, Request, Response, Stat, WatchKind, WatcherEvent,
};
use crate::config::Config;
use crate::conn::{attempt, Attach, CloseAsked, Failure, Progress, Ready, Stream, Unusable};
use crate::error::Error;
use crate::hosts::{strip_chroot, Host};
use zklock_proto::reconnect::{self, Asked, Closing, Ended, NewSession, Next, Reconnect, RoundRobin, Rules};

/// A reply with the facts the safety clock needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply<T> {
    /// The result.
    pub value: T,
    /// Taken just before the write that handed the request's first byte
    /// to the socket: no earlier than that, the server cannot have read it.
    pub sent: Instant,
    /// When the reply was read.
    pub answered: Instant,
    /// The connection it travelled on (see [`Connected`]).
    pub connection: u64,
    /// The server's zxid when it answered.
    pub zxid: i64,
}

/// The session's state as last seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Connected; requests are sent.
    Connected,
    /// Not connected; reconnecting. Calls made now wait: they are sent on
    /// the next connection, in call order (or fail when the session ends).
    Connecting,
    /// Ended: expired.
    Expired,
    /// Ended: the server refused the credentials.
    AuthFailed,
    /// Ended: closed.
    Closed,
}

/// A connection of the session, ready for requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Connected {
    /// Counts connections of this session from 1.
    pub connection: u64,
    /// The server.
    pub server: SocketAddr,
    /// The session timeout this server granted.
    pub timeout: Duration,
    /// Just before the connect request was handed to the socket. A connect
    /// answered with a positive timeout proves the server renewed the
    /// session no earlier than this.
    pub connect_sent: Instant,
    /// When the answer was read.
    pub answered: Instant,
}

/// What happened to the session, in the order it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionEvent {
    /// A reconnect to the same session is ready (the first connection is
    /// the return of [`Session::connect`]; see [`Session::connected`]).
    Connected(Connected),
    /// The connection was lost; outstanding requests failed with
    /// [`Error::ConnectionLoss`]. Reconnecting.
    Disconnected {
        /// The connection that was lost.
        connection: u64,
        /// Why.
        reason: String,
    },
    /// The session ended (expired, auth failed, closed). The last event.
    Ended(Error),
}

/// A watch notification, or the end of the session (then the watch is gone
/// and `kind` is [`EventType::Session`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchedEvent {
    /// What happened.
    pub kind: EventType,
    /// The node (chroot stripped).
    pub path: String,
    /// The zxid of the change as the notification carries it: servers
    /// before 3.9 send -1; 0 when the session ended.
    pub zxid: i64,
}

/// How many bytes of reply frames the session task decodes and hands out
/// before it yields, so that the tasks those replies woke (on the same
/// runtime: zklock's has one worker) take them before more are decoded.
/// Without it the task went on decoding as long as the socket had bytes
/// (up to tokio's budget of 128 reads a turn): N waiters queued at once
/// each get a list of the queue behind their create, and some 150 lists of
/// up to N names each were held decoded at once (issue 33: a peak of
/// O(N^2) bytes that malloc kept, 20 to 75 KB of resident memory per
/// waiter at N = 3,000 against 10 to 12 KB at 300; see
/// `bench/src/bin/memory.rs`). The count runs across reads (a burst comes
/// in many), so small replies also yield once per 64 KiB of them: one
/// yield per more than a hundred uncontended acquires (each reads well
/// under 1 KiB of replies).
const HAND_OUT_BEFORE_YIELD: usize = 64 * 1024;

/// How many requests a connection has in flight at most (sent, or in the
/// write buffer, and not yet answered; pings and the session's own
/// requests are not held back). Calls beyond it wait in the session, in
/// call order, and go out as replies come in: on one session the server
/// answers in order anyway, so this costs no throughput, but it bounds what
/// one client queues at the server. Without it 10,000 waiters queued at
/// once on one lock each sent a list of the queue (up to 10,000 names) at
/// once (issue 33): the server's replies, buffered for a client that read
/// them more slowly than the server made them, exhausted a 256 MB server
/// heap within a minute (`OutOfMemoryError`, the server gone), and the
/// pings of other clients' sessions on that server, queued behind those
/// lists, went unanswered for longer than their read timeout (a holder's
/// connection lost every 12 s). A ping of this session waits behind at
/// most this many requests.
pub(crate) const MAX_IN_FLIGHT: usize = 64;

/// Where a call's answer goes: the result, and the stamps when the server
/// answered (a reply frame came, success or server error).
type Sink = oneshot::Sender<Answered>;

/// What a call's [`Sink`] is given: the reply, and its stamp when it came
/// from the server.
type Answered = (Result<Response, Error>, Option<Stamp>);

/// Whether a call was held back in the client because 64 requests (the
/// most) of its connection were in flight (see [`Outbound`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HeldBack {
    /// Not held back (sent, or waiting for a reconnect, or not yet seen by
    /// the session).
    #[default]
    Never,
    /// Held back now: it waits behind the session's own requests, not for
    /// the server.
    Now,
    /// Held back until this instant (tokio's clock), then sent (or, the
    /// connection lost, left for the next one).
    Until(tokio::time::Instant),
}

/// Where a call is on its way out: a handle that a caller bounding its
/// wait for the reply (an operation timeout) reads, so that the time a call
/// spends held back behind the session's own requests, which only the
/// client decides, is not counted as the server's. Cheap to clone;
/// thread-safe.
#[derive(Clone, Debug, Default)]
pub struct Outbound(Arc<Mutex<HeldBack>>);

impl Outbound {
    /// Whether the call was held back, and until when.
    pub fn held_back(&self) -> HeldBack {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set(&self, to: HeldBack) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = to;
    }

    /// Held back no more (from now), if it was.
    fn released(&self) {
        let mut h = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if *h == HeldBack::Now {
            *h = HeldBack::Until(tokio::time::Instant::now());
        }
    }
}

/// Whether the caller of a call not sent yet gave up on it: it dropped the
/// reply's future and the watch, if the call leaves one. Such a call is
/// not sent: it would have no effect anyone waits for, and under a long
/// queue (see [`MAX_IN_FLIGHT`]) the callers that gave up (the operation
/// timeout) and asked again would otherwise fill the queue with requests
/// nobody reads: 10,000 waiters on one lock re-sent their lists every 10 s
/// while the old ones still waited, and never got through.
fn abandoned(tx: &Sink, watch: Option<&WatchReg>) -> bool {
    tx.is_closed() && watch.is_none_or(|w| w.tx.is_closed())
}

/// When a request left and its reply came, for a reply the server sent
/// (an error code included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// Taken just before the write that handed the request's first byte
    /// to the socket.
    pub sent: Instant,
    /// When the reply was read.
    pub answered: Instant,
    /// The connection it travelled on.
    pub connection: u64,
    /// That connection's connect request: just before it was handed to the
    /// socket ([`Connected::connect_sent`]). A request made on one
    /// connection may travel on the next (calls wait through a reconnect or
    /// a move to a new server list): these are the times of the one it
    /// travelled on, whatever [`Session::connected`] said when it was made.
    pub connect_sent: Instant,
    /// When that connect's answer was read ([`Connected::answered`]).
    pub connect_answered: Instant,
    /// The server's zxid when it answered.
    pub zxid: i64,
}

/// A local watch: its id and where its event goes.
type Waiter = (u64, oneshot::Sender<WatchedEvent>);

enum Cmd {
    Call {
        req: Request,
        tx: Sink,
        watch: Option<WatchReg>,
        out: Outbound,
        /// Not held back for room in flight (see [`Session::sync_urgent`]).
        urgent: bool,
    },
    /// A local watch let go; `server`: remove the server's watch too when
    /// nobody else needs it (false: the caller's own change fires it).
    Unwatch {
        path: String,
        kind: WatchKind,
        id: u64,
        server: bool,
    },
    Close(oneshot::Sender<()>),
    /// A new server list (same chroot): see [`Session::set_hosts`].
    SetHosts(Vec<Host>),
}

struct WatchReg {
    path: String,
    kind: WatchKind,
    id: u64,
    tx: oneshot::Sender<WatchedEvent>,
}

struct Info {
    session_id: i64,
    password: Vec<u8>,
    timeout: Duration,
    connected: Option<Connected>,
    ended: Option<Error>,
}

/// Requests handed to the socket, by operation (indexed as `op::ALL`).
type Sent = Arc<[AtomicU64; crate::codec::ops::op::ALL.len()]>;

struct Shared {
    tx: mpsc::UnboundedSender<Cmd>,
    sent: Sent,
    chroot: Arc<str>,
    info: Mutex<Info>,
    state: watch::Receiver<State>,
    subscribers: Mutex<Vec<mpsc::UnboundedSender<SessionEvent>>>,
    watch_ids: AtomicU64,
}

impl Shared {
    fn info(&self) -> std::sync::MutexGuard<'_, Info> {
        self.info.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn emit(&self, e: SessionEvent) {
        let mut subs = self.subscribers.lock().unwrap_or_else(PoisonError::into_inner);
        subs.retain(|s| s.send(e.clone()).is_ok());
    }
}

/// A ZooKeeper session. Cheap to clone (all clones are the same session).
///
/// Every call is enqueued when it is made, in call order, and sent in that
/// order; the returned future only waits for the reply (dropping it does
/// not take the request back). A call outstanding when a connection is
/// lost fails with [`Error::ConnectionLoss`] (the server may or may not have
/// carried it out); one made while the session reconnects waits and is sent
/// on the next connection. The session reconnects by itself until it
/// expires; bound every wait with a timeout of your own.
///
/// The session's task runs on the tokio runtime that called
/// [`Session::connect`]. Dropping the last clone closes the session (the
/// task sends `closeSession` and ends).
#[derive(Clone)]
pub struct Session {
    shared: Arc<Shared>,
    /// Prefixed to this handle's paths.
    chroot: Arc<str>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Session({:#x})", self.id())
    }
}

impl Session {
    /// Connects a new session, trying the servers in a random order (each
    /// round in the same order) until one answers or the connect timeout
    /// passes.
    ///
    /// # Errors
    ///
    /// * [`Error::Unreachable`] as soon as every server failed in one round
    ///   for a reason waiting will not change (refused, unresolvable, TLS
    ///   refused);
    /// * [`Error::Timeout`] when the connect timeout passed;
    /// * [`Error::AuthFailed`] when a server refused the credentials.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (as `tokio::spawn`).
    pub async fn connect(config: Config) -> Result<Session, Error> {
        let started = tokio::time::Instant::now();
        let mut hosts = config.connect.hosts.clone();
        fastrand::shuffle(&mut hosts);
        let attach = Attach { session_id: 0, password: vec![0; 16], last_zxid: 0, next_xid: 1 };
        let rules = NewSession::new(started.into_std(), config.connect_timeout, config.session_timeout, hosts.len());
        let shared = Mutex::new(Rounds { rounds: RoundRobin::new(rules, hosts.len(), 0), hosts, asked: Asked::new() });
        let ready = connect_round_robin(&config, &shared, &attach, None, &Progress::default()).await;
        let hosts = shared.into_inner().unwrap_or_else(PoisonError::into_inner).hosts;
        let (ready, at) = match ready {
            Ok(r) => r,
            Err(RoundsEnd::Unreachable(why)) => return Err(Error::Unreachable(why)),
            Err(RoundsEnd::Deadline(why)) => return Err(Error::Timeout(why)),
            Err(RoundsEnd::AuthFailed(why)) => return Err(Error::AuthFailed(why)),
            Err(RoundsEnd::Expired) => return Err(Error::SessionExpired),
            // No close is asked of a session being made.
            Err(RoundsEnd::Closed | RoundsEnd::CloseLost) => return Err(Error::Closed),
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let (state_tx, state_rx) = watch::channel(State::Connected);
        let timeout = Duration::from_millis(u64::try_from(ready.response.timeout_ms).unwrap_or(0));
        let first = Connected {
            connection: 1,
            server: ready.server,
            timeout,
            connect_sent: ready.connect_sent,
            answered: ready.answered,
        };
        let sent: Sent = Arc::new(std::array::from_fn(|_| AtomicU64::new(0)));
        let shared = Arc::new(Shared {
            tx,
            sent: sent.clone(),
            chroot: Arc::from(config.connect.chroot.as_str()),
            info: Mutex::new(Info {
                session_id: ready.response.session_id,
                password: ready.response.password.clone(),
                timeout,
                connected: Some(first.clone()),
                ended: None,
            }),
            state: state_rx,
            subscribers: Mutex::new(Vec::new()),
            watch_ids: AtomicU64::new(1),
        });
        let task = Task {
            sent,
            cfg: config,
            hosts,
            host_at: Some(at),
            shared: Arc::downgrade(&shared),
            rx,
            state: state_tx,
            connection: 1,
            connect: (ready.connect_sent, ready.answered),
            pings: 0,
            session_id: ready.response.session_id,
            password: ready.response.password.clone(),
            timeout,
            last_zxid: 0,
            next_xid: ready.next_xid,
            fifo: VecDeque::new(),
            watches: HashMap::new(),
            inflight: HashMap::new(),
            last_recv: tokio::time::Instant::now(),
            held: VecDeque::new(),
            waiting: VecDeque::new(),
            moving: None,
            moving_from: None,
            close: Closing::new(),
            close_asked: watch::channel(false).0,
        };
        log::debug!("session {:#x} connected to {} (timeout {:?})", ready.response.session_id, ready.server, timeout);
        tokio::spawn(task.run(ready));
        let chroot = shared.chroot.clone();
        Ok(Session { shared, chroot })
    }

    /// The session id.
    pub fn id(&self) -> i64 {
        self.shared.info().session_id
    }

    /// The session password (to re-attach from elsewhere; keep it secret).
    pub fn password(&self) -> Vec<u8> {
        self.shared.info().password.clone()
    }

    /// The session timeout granted by the server of the current (or last)
    /// connection.
    pub fn timeout(&self) -> Duration {
        self.shared.info().timeout
    }

    /// The current connection, `None` while reconnecting or after the end.
    pub fn connected(&self) -> Option<Connected> {
        self.shared.info().connected.clone()
    }

    /// The state as last seen.
    pub fn state(&self) -> State {
        *self.shared.state.borrow()
    }

    /// A watcher of the state that has seen the current one: its
    /// [`changed`](StateWatcher::changed) resolves at the next change.
    pub fn state_watcher(&self) -> StateWatcher {
        let mut rx = self.shared.state.clone();
        rx.mark_unchanged();
        StateWatcher { rx }
    }

    /// Waits until the state is not [`State::Connecting`]; returns it.
    pub async fn settled(&self) -> State {
        let mut rx = self.shared.state.clone();
        let r = rx.wait_for(|s| *s != State::Connecting).await.map(|s| *s);
        r.unwrap_or(State::Closed)
    }

    /// A stream of the session's events from now on, in order. Each call
    /// makes a new stream; an unread stream grows without bound, so drop
    /// one that is not read.
    pub fn events(&self) -> Events {
        let (tx, rx) = mpsc::unbounded_channel();
        self.shared.subscribers.lock().unwrap_or_else(PoisonError::into_inner).push(tx);
        Events { rx }
    }

    /// The chroot of this handle's paths (empty for none).
    pub fn chroot(&self) -> &str {
        &self.chroot
    }

    /// The same session, with paths from the server's root (no chroot).
    pub fn without_chroot(&self) -> Session {
        Session { shared: self.shared.clone(), chroot: Arc::from("") }
    }

    fn call<T>(
        &self,
        req: Request,
        watch: Option<WatchReg>,
        map: fn(Response, &str) -> Result<T, Error>,
    ) -> ReplyFuture<T> {
        self.call_with(req, watch, false, map)
    }

    fn call_with<T>(
        &self,
        req: Request,
        watch: Option<WatchReg>,
        urgent: bool,
        map: fn(Response, &str) -> Result<T, Error>,
    ) -> ReplyFuture<T> {
        let (tx, rx) = oneshot::channel();
        let out = Outbound::default();
        let mut req = req;
        let early = match check_paths(&mut req) {
            Err(e) => Some(e),
            Ok(()) => match self.shared.tx.send(Cmd::Call {
                req: {
                    req.chroot(&self.chroot);
                    req
                },
                tx,
                watch,
                out: out.clone(),
                urgent,
            }) {
                Ok(()) => None,
                Err(_) => Some(self.shared.info().ended.clone().unwrap_or(Error::Closed)),
            },
        };
        ReplyFuture { rx, early, chroot: self.chroot.clone(), map, out }
    }

    fn watch(&self, path: &str, kind: WatchKind) -> (WatchReg, Watch) {
        let id = self.shared.watch_ids.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let full = with_chroot(&self.chroot, path);
        let reg = WatchReg { path: full.clone(), kind, id, tx };
        let cmd = self.shared.tx.downgrade();
        (reg, Watch { rx, path: full, chroot: self.chroot.clone(), kind, id, fired: false, cmd })
    }

    /// Creates a node (`create2`, or `createContainer` for
    /// [`CreateMode::Container`]); returns its path (with the sequence
    /// number) and `Stat`.
    pub fn create(&self, path: &str, data: &[u8], acl: &[Acl], mode: CreateMode) -> ReplyFuture<(String, Stat)> {
        let req = Request::Create { path: path.into(), data: data.into(), acl: acl.into(), mode };
        self.call(req, None, |r, chroot| match r {
            Response::Created { path, stat } => Ok((strip_chroot(chroot, path), stat)),
            other => Err(unexpected(other)),
        })
    }

    /// Deletes a node if its version is `version` (-1: any).
    pub fn delete(&self, path: &str, version: i32) -> ReplyFuture<()> {
        self.call(Request::Delete { path: path.into(), version }, None, |_, _| Ok(()))
    }

    /// The node's `Stat`, `None` if it does not exist.
    pub fn exists(&self, path: &str) -> ReplyFuture<Option<Stat>> {
        self.call(Request::Exists { path: path.into(), watch: false }, None, map_exists)
    }

    /// As [`exists`](Session::exists), leaving a watch that fires when the
    /// node is created, changed or deleted. The watch is set only if the
    /// call succeeds.
    pub fn exists_watch(&self, path: &str) -> (ReplyFuture<Option<Stat>>, Watch) {
        let (reg, w) = self.watch(path, WatchKind::Exist);
        (self.call(Request::Exists { path: path.into(), watch: true }, Some(reg), map_exists), w)
    }

    /// The node's data and `Stat`.
    pub fn get_data(&self, path: &str) -> ReplyFuture<(Vec<u8>, Stat)> {
        self.call(Request::GetData { path: path.into(), watch: false }, None, map_data)
    }

    /// As [`get_data`](Session::get_data), leaving a watch that fires when
    /// the node's data changes or it is deleted.
    pub fn get_data_watch(&self, path: &str) -> (ReplyFuture<(Vec<u8>, Stat)>, Watch) {
        let (reg, w) = self.watch(path, WatchKind::Data);
        (self.call(Request::GetData { path: path.into(), watch: true }, Some(reg), map_data), w)
    }

    /// Sets the node's data if its version is `version` (-1: any).
    pub fn set_data(&self, path: &str, data: &[u8], version: i32) -> ReplyFuture<Stat> {
        self.call(Request::SetData { path: path.into(), data: data.into(), version }, None, map_stat)
    }

    /// As [`set_data`](Session::set_data), never held back (see
    /// [`sync_urgent`](Session::sync_urgent)): the safety clock's write
    /// probe.
    pub fn set_data_urgent(&self, path: &str, data: &[u8], version: i32) -> ReplyFuture<Stat> {
        self.call_with(Request::SetData { path: path.into(), data: data.into(), version }, None, true, map_stat)
    }

    /// The node's children (names, unsorted).
    pub fn children(&self, path: &str) -> ReplyFuture<Arc<[String]>> {
        self.call(Request::GetChildren { path: path.into(), watch: false }, None, map_children)
    }

    /// As [`children`](Session::children), leaving a watch that fires when
    /// a child is added or removed, or the node is deleted.
    pub fn children_watch(&self, path: &str) -> (ReplyFuture<Arc<[String]>>, Watch) {
        let (reg, w) = self.watch(path, WatchKind::Children);
        (self.call(Request::GetChildren { path: path.into(), watch: true }, Some(reg), map_children), w)
    }

    /// The node's children and its own `Stat` (`getChildren2`).
    pub fn children2(&self, path: &str) -> ReplyFuture<(Arc<[String]>, Stat)> {
        self.call(Request::GetChildren2 { path: path.into(), watch: false }, None, |r, _| match r {
            Response::Children2 { children, stat } => Ok((children, stat)),
            other => Err(unexpected(other)),
        })
    }

    /// Waits until the server this session is connected to has seen every
    /// write the leader had committed when it got the sync.
    pub fn sync(&self, path: &str) -> ReplyFuture<()> {
        self.call(Request::Sync { path: path.into() }, None, |_, _| Ok(()))
    }

    /// As [`sync`](Session::sync), but never held back behind this
    /// session's own calls (at most 64 requests are in flight; the rest
    /// wait in the client): it goes out with the next write, so it waits at
    /// the server behind at most those 64. For a probe of the session's
    /// life (the safety clock's heartbeat), which must not wait for the
    /// client's own burst of calls (outside attack round 21, F2: a lock
    /// held by a client that queued 6,000 acquires on another path was
    /// suspended for 23 s). It overtakes calls made before it that are
    /// still held back: its reply says nothing about them.
    pub fn sync_urgent(&self, path: &str) -> ReplyFuture<()> {
        self.call_with(Request::Sync { path: path.into() }, None, true, |_, _| Ok(()))
    }

    /// Runs `ops` atomically: all take effect or none.
    ///
    /// # Errors
    ///
    /// [`Error::Multi`] with the index and code of the operation that failed.
    pub fn multi(&self, ops: &[MultiOp]) -> ReplyFuture<Vec<MultiResult>> {
        self.call(Request::Multi(ops.to_vec()), None, |r, chroot| match r {
            Response::Multi(Ok(results)) => Ok(results
                .into_iter()
                .map(|x| match x {
                    MultiResult::Create { path, stat } => {
                        MultiResult::Create { path: strip_chroot(chroot, path), stat }
                    },
                    other => other,
                })
                .collect()),
            Response::Multi(Err((index, code))) => Err(Error::Multi { index, code }),
            other => Err(unexpected(other)),
        })
    }

    /// Moves the session to a new list of servers (a changed ensemble:
    /// kazoo's `set_hosts`, ZooKeeper's `updateServerList`), keeping the
    /// session, its watches and its ephemeral nodes. Every later
    /// (re)connect uses the new list (shuffled). If the server connected
    /// now is in it, nothing else happens; if not, calls made from now on
    /// wait, and once every reply of the current connection is in, that
    /// connection ends ([`SessionEvent::Disconnected`]) and the session
    /// reconnects to a server of the new list (a list that has the server
    /// again before then calls the move off: the calls go out on the
    /// connection; as after any lost
    /// connection; it expires if none takes it within the session
    /// timeout). While reconnecting, the attempts go on over the new list
    /// as [`RoundRobin::set_hosts`] says: one in progress on a server the
    /// new list has goes on, on its own connection and with its own wait,
    /// unless that wait is longer than one on the new list would be (a
    /// first round's, if the list added servers), or the list added servers
    /// and it has not written its connect, nor had its server's last
    /// attempt (likely dead), or its server is not in
    /// the new list: then it is closed at once if its connect was not
    /// written yet, if it started more than [`Reconnect::left_wait`]
    /// before, or if an earlier attempt left so in this reconnect went
    /// unanswered until then (its server likely hung: the time left is the
    /// session's), else its answer is waited for until then
    /// ([`RoundRobin::left_until`]), and its connection used if its
    /// server is in the list then, else closed
    /// unused, so that its server's
    /// revalidation of the session comes before the next one's (else the
    /// next server refuses the session's next write: `SessionMoved`); the
    /// servers this round has not asked yet (by address: a server a list
    /// dropped and brought back counts as asked) follow, the least recently
    /// asked in this reconnect first (by address, under any list; an
    /// attempt broken off before its server accepted the TCP connection
    /// does not count), ties in the new list's
    /// order, as every later round of the reconnect asks them.
    ///
    /// # Errors
    ///
    /// [`Error::BadArgument`] for a malformed connect string or one whose
    /// chroot differs from the session's (none means the same);
    /// [`Error::Closed`] once the session ended.
    pub fn set_hosts(&self, connect: &str) -> Result<(), Error> {
        let parsed = crate::hosts::ConnectString::parse(connect)?;
        if !parsed.chroot.is_empty() && *parsed.chroot != *self.chroot {
            return Err(Error::BadArgument(format!(
                "connect string {connect:?}: chroot {:?} is not the session's ({:?}); a session cannot change its \
                 chroot",
                parsed.chroot, &*self.chroot
            )));
        }
        let mut hosts = parsed.hosts;
        fastrand::shuffle(&mut hosts);
        self.shared.tx.send(Cmd::SetHosts(hosts)).map_err(|_| self.shared.info().ended.clone().unwrap_or(Error::Closed))
    }

    /// How many requests of each operation this session has written to its
    /// connections so far (pings and internal requests included; the
    /// connect, auth and SASL handshakes not), as ZooKeeper names them:
    /// `[("create2", 12), ("getData", 30), ...]`, operations never sent
    /// left out.
    pub fn requests_sent(&self) -> Vec<(&'static str, u64)> {
        crate::codec::ops::op::ALL
            .iter()
            .zip(self.shared.sent.iter())
            .map(|(&op, n)| (crate::codec::ops::op_name(op), n.load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// The identities the server knows this session by: (scheme, id)
    /// pairs. Servers before 3.7 answer [`Code::Unimplemented`] and close
    /// the connection right after: the session reconnects, and the calls
    /// still outstanding then fail with [`Error::ConnectionLoss`].
    pub fn who_am_i(&self) -> ReplyFuture<Vec<(String, String)>> {
        self.call(Request::WhoAmI, None, |r, _| match r {
            Response::WhoAmI(v) => Ok(v),
            other => Err(unexpected(other)),
        })
    }

    /// Starts [`close`](Session::close) without waiting for it.
    pub fn start_close(&self) {
        let (tx, _) = oneshot::channel();
        let _ = self.shared.tx.send(Cmd::Close(tx));
    }

    /// Closes the session: tells the server (if connected; its ephemeral
    /// nodes go at once), fails every outstanding call with
    /// [`Error::Closed`], ends every watch. Waits for the server's answer
    /// at most 2/3 of the session timeout. Closing a closed session does
    /// nothing.
    pub async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.shared.tx.send(Cmd::Close(tx)).is_ok() {
            let _ = rx.await;
        }
    }
}

fn check_paths(req: &mut Request) -> Result<(), Error> {
    for p in req.paths_mut() {
        if !p.starts_with('/') {
            return Err(Error::BadArgument(format!("path {p:?} does not start with '/'")));
        }
        if p.contains('\0') {
            return Err(Error::BadArgument(format!("path {p:?} contains a NUL character")));
        }
    }
    Ok(())
}

fn unexpected(r: Response) -> Error {
    Error::ConnectionLoss(format!("reply of an unexpected kind: {r:?}"))
}

fn map_exists(r: Response, _: &str) -> Result<Option<Stat>, Error> {
    match r {
        Response::Stat(s) => Ok(Some(s)),
        Response::Empty => Ok(None),
        other => Err(unexpected(other)),
    }
}

fn map_stat(r: Response, _: &str) -> Result<Stat, Error> {
    match r {
        Response::Stat(s) => Ok(s),
        other => Err(unexpected(other)),
    }
}

fn map_data(r: Response, _: &str) -> Result<(Vec<u8>, Stat), Error> {
    match r {
        Response::Data { data, stat } => Ok((data, stat)),
        other => Err(unexpected(other)),
    }
}

fn map_children(r: Response, _: &str) -> Result<Arc<[String]>, Error> {
    match r {
        Response::Children(c) => Ok(c),
        other => Err(unexpected(other)),
    }
}

/// The reply to one call. The request was enqueued when the call was made;
/// this only waits for the answer. Dropped before the request left the
/// client (it waits while 64 requests of the session are in flight, or
/// for a reconnect), the request is not sent, unless its watch is still
/// held.
#[must_use = "the request is sent unless this is dropped first; the future carries its reply"]
pub struct ReplyFuture<T> {
    rx: oneshot::Receiver<(Result<Response, Error>, Option<Stamp>)>,
    early: Option<Error>,
    chroot: Arc<str>,
    map: fn(Response, &str) -> Result<T, Error>,
    out: Outbound,
}

impl<T: Send + 'static> ReplyFuture<T> {
    /// The result with the stamps of the reply, also when the server
    /// answered with an error code (`None` when it did not answer).
    pub async fn stamped(self) -> (Result<T, Error>, Option<Stamp>) {
        let ReplyFuture { rx, early, chroot, map, out: _ } = self;
        if let Some(e) = early {
            return (Err(e), None);
        }
        match rx.await {
            Err(_) => (Err(Error::Closed), None),
            Ok((r, stamp)) => (r.and_then(|r| map(r, &chroot)), stamp),
        }
    }

    /// Whether the call is or was held back in the client (see
    /// [`HeldBack`]), as a handle that outlives this future.
    pub fn outbound(&self) -> Outbound {
        self.out.clone()
    }

    /// The reply's value alone.
    pub async fn value(self) -> Result<T, Error> {
        self.await.map(|r| r.value)
    }
}

impl<T> Future for ReplyFuture<T> {
    type Output = Result<Reply<T>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(e) = this.early.take() {
            return Poll::Ready(Err(e));
        }
        match Pin::new(&mut this.rx).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(_)) | Poll::Ready(Ok((Ok(_), None))) => Poll::Ready(Err(Error::Closed)),
            Poll::Ready(Ok((Err(e), _))) => Poll::Ready(Err(e)),
            Poll::Ready(Ok((Ok(r), Some(st)))) => Poll::Ready((this.map)(r, &this.chroot).map(|value| Reply {
                value,
                sent: st.sent,
                answered: st.answered,
                connection: st.connection,
                zxid: st.zxid,
            })),
        }
    }
}

/// A watch left by a call. Resolves once, with the node event or with
/// [`EventType::Session`] when the session ends or the call failed (the
/// server set no watch). A reconnect keeps it (it is registered again on
/// the new connection). Dropping it removes it; the server's watch goes
/// too (a `removeWatches` request) when no other watch of the session
/// needs it.
pub struct Watch {
    rx: oneshot::Receiver<WatchedEvent>,
    /// The server's path (chroot included).
    path: String,
    chroot: Arc<str>,
    kind: WatchKind,
    id: u64,
    /// Its node event was read, or it was let go: nothing for the drop
    /// to remove.
    fired: bool,
    cmd: mpsc::WeakUnboundedSender<Cmd>,
}

impl Future for Watch {
    type Output = WatchedEvent;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<WatchedEvent> {
        let this = self.get_mut();
        match Pin::new(&mut this.rx).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(e)) => {
                this.fired = true;
                Poll::Ready(WatchedEvent { path: strip_chroot(&this.chroot, e.path), ..e })
            },
            Poll::Ready(Err(_)) => Poll::Ready(WatchedEvent {
                kind: EventType::Session,
                path: strip_chroot(&this.chroot, this.path.clone()),
                zxid: 0,
            }),
        }
    }
}

impl Watch {
    /// Lets this watch go without removing the server's watch: for a
    /// caller about to make the change that fires it (the delete of the
    /// watched node), to whom a `removeWatches` request would cost more
    /// than the notification it avoids. The notification, when it comes,
    /// goes to this session's other watches of the node, or to nobody.
    /// Until it fires, the server's watch is not set again after a
    /// reconnect (unless another watch of the session needs it). If the
    /// change is not made, the server keeps the watch until the node
    /// changes or the connection ends.
    pub fn let_fire(mut self) {
        self.release(false);
    }

    fn release(&mut self, server: bool) {
        // One that fired (its event read, or waiting unread) is gone from
        // the server already: a removeWatches would only be refused. So is
        // one the session let go (its call failed, so the server set none:
        // a getData of a missing node, or a call lost with its connection;
        // or the session ended): nothing to remove (issue 33: a waiter whose
        // blocker went before its read paid a removeWatches for it).
        if self.fired || !matches!(self.rx.try_recv(), Err(oneshot::error::TryRecvError::Empty)) {
            self.fired = true;
            return;
        }
        self.fired = true;
        if let Some(tx) = self.cmd.upgrade() {
            let path = std::mem::take(&mut self.path);
            let _ = tx.send(Cmd::Unwatch { path, kind: self.kind, id: self.id, server });
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.release(true);
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            State::Connected => "connected",
            State::Connecting => "disconnected, reconnecting",
            State::Expired => "expired",
            State::AuthFailed => "authentication failed",
            State::Closed => "closed",
        })
    }
}

impl State {
    /// Whether the session has ended (expired, auth failed, closed).
    pub fn is_terminated(self) -> bool {
        matches!(self, State::Expired | State::AuthFailed | State::Closed)
    }
}

/// Follows the session's [`State`] (see [`Session::state_watcher`]).
#[derive(Clone, Debug)]
pub struct StateWatcher {
    rx: watch::Receiver<State>,
}

impl StateWatcher {
    /// The state now; later changes are what [`changed`](Self::changed)
    /// waits for.
    pub fn state(&mut self) -> State {
        *self.rx.borrow_and_update()
    }

    /// The state now, without marking it seen.
    pub fn peek_state(&self) -> State {
        *self.rx.borrow()
    }

    /// Waits for a change not yet seen (at once if one happened since the
    /// state was last looked at) and returns the new state. After the end
    /// the final state comes back at once.
    pub async fn changed(&mut self) -> State {
        let _ = self.rx.changed().await;
        *self.rx.borrow_and_update()
    }

    /// Whether a change happened that was not seen yet.
    pub fn has_changed(&self) -> bool {
        self.rx.has_changed().unwrap_or(true)
    }
}

/// Session events in order (see [`Session::events`]).
pub struct Events {
    rx: mpsc::UnboundedReceiver<SessionEvent>,
}

impl Events {
    /// The next event; `None` after the last ([`SessionEvent::Ended`]).
    pub async fn next(&mut self) -> Option<SessionEvent> {
        self.rx.recv().await
    }

    /// The next event if one is there now.
    pub fn try_next(&mut self) -> Option<SessionEvent> {
        self.rx.try_recv().ok()
    }
}

enum RoundsEnd {
    Unreachable(String),
    Deadline(String),
    AuthFailed(String),
    Expired,
    /// The close written behind a connect was answered ([`CloseAsked`]).
    Closed,
    /// The close written behind a connect that was answered was not
    /// (`Failure::CloseLost`); the attempt was counted unanswered.
    CloseLost,
}

/// The rounds of a connect or reconnect and the server list they go over,
/// which a new list ([`Session::set_hosts`]) may change while an attempt
/// goes on: shared between [`connect_round_robin`] and the session task,
/// locked only between awaits (the mutex is for `Send`: one task uses it).
struct Rounds<R> {
    hosts: Vec<Host>,
    rounds: RoundRobin<R>,
    /// When these rounds last asked each server, under any list (for
    /// [`RoundRobin::set_hosts`]).
    asked: Asked<Host>,
}

fn lock<R>(shared: &Mutex<Rounds<R>>) -> std::sync::MutexGuard<'_, Rounds<R>> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Makes the attempts the rounds say (protocol section 5's reconnect policy
/// or a new session's, [`zklock_proto::reconnect`]) over the servers of
/// `shared` (as they are when each attempt starts) until one is ready or
/// the rules give up. Returns the ready connection and its server's index
/// in the list as it is then. Each attempt's progress is in `progress`
/// (cleared as each starts): an attempt a new list left is not used
/// ([`Task::reconnect`]).
async fn connect_round_robin<R: Rules>(
    cfg: &Config,
    shared: &Mutex<Rounds<R>>,
    attach: &Attach,
    close: Option<&CloseAsked>,
    progress: &Progress,
) -> Result<(Ready, usize), RoundsEnd> {
    // Each server's last failure (`None` inside: refused), for the text of
    // a timeout, and this round's, for the text of `Unreachable`.
    let mut last: Vec<(Host, Option<String>)> = Vec::new();
    let mut refused: Vec<Host> = Vec::new();
    let mut other: Vec<(Host, String)> = Vec::new();
    let timed_out = |last: &[(Host, Option<String>)]| {
        let refused: Vec<Host> = last.iter().filter(|(_, why)| why.is_none()).map(|(h, _)| h.clone()).collect();
        let other: Vec<(Host, String)> =
            last.iter().filter_map(|(h, why)| why.clone().map(|why| (h.clone(), why))).collect();
        said(&cfg.connect.hosts, &refused, &other, "no server tried")
    };
    loop {
        let now = tokio::time::Instant::now();
        let next = lock(shared).rounds.next(now.into_std(), fastrand::f64());
        match next {
            Next::Try { host: i, until } => {
                let host = {
                    let mut rounds = lock(shared);
                    let host = rounds.hosts[i].clone();
                    rounds.asked.ask(&host, now.into_std());
                    host
                };
                let mut failed = |why: Option<String>| {
                    match last.iter_mut().find(|(h, _)| *h == host) {
                        Some(l) => l.1 = why.clone(),
                        None => last.push((host.clone(), why.clone())),
                    }
                    match why {
                        None => refused.push(host.clone()),
                        Some(why) => other.push((host.clone(), why)),
                    }
                };
                progress.reached.store(false, Ordering::SeqCst);
                progress.written.store(false, Ordering::SeqCst);
                progress.left.store(false, Ordering::SeqCst);
                let deadline = tokio::time::Instant::from_std(until);
                let write_by = lock(shared).rounds.write_by().map_or(deadline, tokio::time::Instant::from_std);
                let result = attempt(cfg, &host, attach, deadline, write_by, close, progress).await;
                lock(shared).asked.ended();
                progress.written.store(false, Ordering::SeqCst);
                if progress.left.swap(false, Ordering::SeqCst) {
                    // Left by a new list: answered while its server is in
                    // the list (as it is now), its connection is used;
                    // else it is closed unused (dropped here).
                    let now = tokio::time::Instant::now().into_std();
                    let how = match result {
                        Ok(r) => match lock(shared).hosts.iter().position(|h| *h == host) {
                            Some(at) => return Ok((r, at)),
                            None => Ended::AnsweredThenFailed(r.answered),
                        },
                        Err(Failure::AnsweredThenFailed { answered, .. }) => Ended::AnsweredThenFailed(answered),
                        Err(Failure::Closed) => return Err(RoundsEnd::Closed),
                        Err(Failure::CloseLost) => {
                            lock(shared).rounds.left_ended(Ended::Unanswered(now));
                            return Err(RoundsEnd::CloseLost);
                        },
                        Err(Failure::AuthFailed(why)) => return Err(RoundsEnd::AuthFailed(why)),
                        Err(Failure::Unanswered(_)) => Ended::Unanswered(now),
                        // Its word on the session, or its failure, is not
                        // the new list's: a server of it is asked.
                        Err(Failure::Expired | Failure::Transient(_) | Failure::Unsent(_) | Failure::Unusable(_)) => {
                            Ended::Transient
                        },
                    };
                    lock(shared).rounds.left_ended(how);
                    continue;
                }
                let how = match result {
                    // Where the server is now (a new list may have moved it).
                    Ok(r) => return Ok((r, lock(shared).rounds.current())),
                    // Final once a second server says it (a deposed leader
                    // answers from its stale record: outside attack round
                    // 36, F3), or no other answers in time; at once with
                    // the close asked (the session is being ended).
                    Err(Failure::Expired) => {
                        let closing = close.is_some_and(|c| *c.borrow());
                        let now = tokio::time::Instant::now().into_std();
                        if closing || lock(shared).rounds.said_expired(now) {
                            return Err(RoundsEnd::Expired);
                        }
                        failed(Some("said the session is expired".to_string()));
                        continue;
                    },
                    Err(Failure::Closed) => return Err(RoundsEnd::Closed),
                    Err(Failure::CloseLost) => {
                        lock(shared).rounds.ended(Ended::Unanswered(tokio::time::Instant::now().into_std()));
                        return Err(RoundsEnd::CloseLost);
                    },
                    Err(Failure::AuthFailed(why)) => return Err(RoundsEnd::AuthFailed(why)),
                    Err(Failure::Unusable(Unusable::Refused)) => {
                        failed(None);
                        Ended::Unusable
                    },
                    Err(Failure::Unusable(Unusable::Why(why))) => {
                        failed(Some(why));
                        Ended::Unusable
                    },
                    Err(Failure::Transient(why)) => {
                        failed(Some(why));
                        Ended::Transient
                    },
                    Err(Failure::Unanswered(why)) => {
                        failed(Some(why));
                        Ended::Unanswered(tokio::time::Instant::now().into_std())
                    },
                    Err(Failure::Unsent(why)) => {
                        failed(Some(why));
                        Ended::Unsent
                    },
                    Err(Failure::AnsweredThenFailed { answered, why }) => {
                        failed(Some(why));
                        Ended::AnsweredThenFailed(answered)
                    },
                };
                lock(shared).rounds.ended(how);
            },
            Next::Pause { until } => {
                refused.clear();
                other.clear();
                tokio::time::sleep_until(tokio::time::Instant::from_std(until)).await;
            },
            Next::GiveUp => return Err(RoundsEnd::Deadline(timed_out(&last))),
            Next::Unreachable => return Err(RoundsEnd::Unreachable(said(&cfg.connect.hosts, &refused, &other, ""))),
        }
    }
}

/// One round's failures in words, servers in connect-string order:
/// `connection refused by A and B; C: the name does not resolve (...)`.
fn said(hosts: &[Host], refused: &[Host], other: &[(Host, String)], empty: &str) -> String {
    let order = |h: &Host| hosts.iter().position(|x| x == h).unwrap_or(usize::MAX);
    let mut refused: Vec<&Host> = refused.iter().collect();
    refused.sort_by_key(|h| order(h));
    refused.dedup();
    let mut other: Vec<&(Host, String)> = other.iter().collect();
    other.sort_by_key(|(h, _)| order(h));
    let mut parts = Vec::new();
    if !refused.is_empty() {
        let names: Vec<String> = refused.iter().map(|h| h.to_string()).collect();
        let listed = match names.as_slice() {
            [one] => one.clone(),
            [init @ .., last] => format!("{} and {last}", init.join(", ")),
            [] => String::new(),
        };
        parts.push(format!("connection refused by {listed}"));
    }
    for (h, why) in other {
        let line = format!("{h}: {why}");
        if !parts.contains(&line) {
            parts.push(line);
        }
    }
    if parts.is_empty() {
        empty.to_string()
    } else {
        parts.join("; ")
    }
}

/// What a request in flight is for.
enum Purpose {
    User {
        tx: Sink,
        watch: Option<WatchReg>,
    },
    /// setWatches, removeWatches: the answer matters to nobody.
    Internal,
    Close,
}

struct Pending {
    xid: i32,
    opcode: i32,
    /// Offset in the connection's byte stream of the frame's first byte.
    start: u64,
    sent: Option<Instant>,
    purpose: Purpose,
}

/// Watch keys as the server files them: exists watches of absent nodes go
/// with the data watches.
fn server_kind(k: WatchKind) -> WatchKind {
    match k {
        WatchKind::Children => WatchKind::Children,
        WatchKind::Data | WatchKind::Exist => WatchKind::Data,
    }
}

struct Task {
    cfg: Config,
    sent: Sent,
    hosts: Vec<Host>,
    /// The index of the last connection's server in `hosts`; `None` once
    /// the list no longer has it (a move, [`Session::set_hosts`]): a
    /// reconnect then starts with the list's first.
    host_at: Option<usize>,
    shared: std::sync::Weak<Shared>,
    rx: mpsc::UnboundedReceiver<Cmd>,
    state: watch::Sender<State>,
    connection: u64,
    /// The current connection's connect: when it was sent, when answered
    /// (what each [`Stamp`] of a reply on it carries).
    connect: (Instant, Instant),
    /// Pings written on the current connection and not answered.
    pings: usize,
    session_id: i64,
    password: Vec<u8>,
    timeout: Duration,
    last_zxid: i64,
    next_xid: i32,
    fifo: VecDeque<Pending>,
    /// (path, kind) -> waiters, for watches the server holds.
    watches: HashMap<(String, WatchKind), Vec<Waiter>>,
    /// (path, server kind) -> requests in flight that will leave a watch.
    inflight: HashMap<(String, WatchKind), usize>,
    last_recv: tokio::time::Instant,
    /// Calls made while reconnecting: sent on the next connection.
    held: VecDeque<Cmd>,
    /// Calls waiting for room in flight ([`MAX_IN_FLIGHT`]), in call
    /// order: sent as replies come in; on the next connection if this one
    /// is lost first (they were never sent).
    waiting: VecDeque<Cmd>,
    /// Moving to a server of a new list ([`Session::set_hosts`]): why.
    /// New calls wait in `held`; once every reply is in, the connection
    /// ends and the session reconnects to the new list.
    moving: Option<String>,
    /// The server the connection is on, while it moves away from it: a
    /// list that has it again calls the move off.
    moving_from: Option<Host>,
    /// Whether a close is held or sent again ([`Task::lost`], the
    /// reconnect).
    close: Closing,
    /// Whether a close is held while reconnecting: the reconnect's attempts
    /// write it right behind their connect requests ([`CloseAsked`]).
    close_asked: watch::Sender<bool>,
}

/// How a connection ended.
enum End {
    Lost(String),
    /// Closed by the user, or every handle dropped.
    Closed(Option<oneshot::Sender<()>>),
    Final(Error),
}

/// One connection's buffers.
struct Conn {
    stream: Stream,
    rbuf: BytesMut,
    wbuf: Vec<u8>,
    /// Bytes handed to the socket so far on this connection.
    written: u64,
    last_send: tokio::time::Instant,
    closing: Option<Option<oneshot::Sender<()>>>,
    /// Replies taken in from the frames of this read and not yet handed to
    /// their callers ([`Conn::hand_out`]).
    answered: Vec<(Sink, Answered)>,
}

impl Conn {
    /// Hands the replies taken in to their callers. A reply's caller is
    /// woken only once every frame read with it is taken in, so that a
    /// notification right behind a reply in the same read is in its
    /// watch's channel before the caller can look (the release's look at
    /// its node's watch after the hold's read: zklock-core's `herd.rs`
    /// `a_release_that_waited_sees_a_replacement_notified_right_behind_the_reads_answer`).
    fn hand_out(&mut self) {
        for (tx, answer) in self.answered.drain(..) {
            let _ = tx.send(answer);
        }
    }
}

impl Task {
    async fn run(mut self, first: Ready) {
        let mut ready = first;
        let end = loop {
            let end = self.serve(ready).await;
            let reason = match end {
                End::Lost(reason) => reason,
                other => break other,
            };
            log::debug!("session {:#x}: connection {} lost: {reason}", self.session_id, self.connection);
            // Requests the server may have read, their answers lost with
            // the connection: giving up is put off as for unanswered ones.
            let in_flight = self.pings > 0 || self.fifo.iter().any(|p| p.sent.is_some());
            self.fail_fifo(|| Error::ConnectionLoss(reason.clone()));
            // Never sent: on the next connection, before the calls made
            // since (which come after them).
            while let Some(cmd) = self.waiting.pop_back() {
                if let Cmd::Call { out, .. } = &cmd {
                    out.released();
                }
                self.held.push_front(cmd);
            }
            let _ = self.state.send(State::Connecting);
            if let Some(s) = self.shared.upgrade() {
                s.info().connected = None;
            }
            self.emit(SessionEvent::Disconnected { connection: self.connection, reason });
            match self.reconnect(in_flight).await {
                Ok(r) => {
                    self.connection += 1;
                    let timeout = Duration::from_millis(u64::try_from(r.response.timeout_ms).unwrap_or(0));
                    log::debug!(
                        "session {:#x}: connection {} to {} (timeout {timeout:?})",
                        self.session_id,
                        self.connection,
                        r.server
                    );
                    let c = Connected {
                        connection: self.connection,
                        server: r.server,
                        timeout,
                        connect_sent: r.connect_sent,
                        answered: r.answered,
                    };
                    if let Some(s) = self.shared.upgrade() {
                        s.info().connected = Some(c.clone());
                    }
                    self.emit(SessionEvent::Connected(c));
                    ready = r;
                },
                Err(end) => break end,
            }
        };
        self.finish(end);
    }

    fn emit(&self, e: SessionEvent) {
        if let Some(s) = self.shared.upgrade() {
            s.emit(e);
        }
    }

    fn fail_fifo(&mut self, err: impl Fn() -> Error) {
        for p in self.fifo.drain(..) {
            match p.purpose {
                Purpose::User { tx, watch } => {
                    let _ = tx.send((Err(err()), None));
                    if let Some(w) = watch {
                        let key = (w.path, server_kind(w.kind));
                        if let Some(n) = self.inflight.get_mut(&key) {
                            *n -= 1;
                            if *n == 0 {
                                self.inflight.remove(&key);
                            }
                        }
                    }
                },
                Purpose::Internal | Purpose::Close => {},
            }
        }
    }

    fn finish(mut self, end: End) {
        let (err, state, closer) = match end {
            End::Closed(c) => (Error::Closed, State::Closed, c),
            End::Final(e) => {
                let s = match e {
                    Error::SessionExpired => State::Expired,
                    Error::AuthFailed(_) => State::AuthFailed,
                    _ => State::Closed,
                };
                (e, s, None)
            },
            End::Lost(r) => (Error::ConnectionLoss(r), State::Closed, None),
        };
        log::debug!("session {:#x} ended: {err}", self.session_id);
        if let Some(s) = self.shared.upgrade() {
            let mut i = s.info();
            i.ended = Some(err.clone());
            i.connected = None;
        }
        self.rx.close();
        self.fail_fifo(|| err.clone());
        let held: Vec<Cmd> = self.waiting.drain(..).chain(self.held.drain(..)).collect();
        for cmd in held.into_iter().chain(std::iter::from_fn(|| self.rx.try_recv().ok())) {
            match cmd {
                Cmd::Call { tx, .. } => {
                    let _ = tx.send((Err(err.clone()), None));
                },
                Cmd::Close(c) => {
                    let _ = c.send(());
                },
                Cmd::Unwatch { .. } | Cmd::SetHosts(_) => {},
            }
        }
        for ((path, _), waiters) in self.watches.drain() {
            for (_, tx) in waiters {
                let _ = tx.send(WatchedEvent { kind: EventType::Session, path: path.clone(), zxid: 0 });
            }
        }
        let _ = self.state.send(state);
        self.emit(SessionEvent::Ended(err));
        if let Some(c) = closer {
            let _ = c.send(());
        }
    }

    /// Reconnects to the session, handling calls meanwhile (they fail at
    /// once), as [`Reconnect`] says (protocol section 5). Ends the session
    /// when the server says it expired, when the reconnect gives up (no
    /// server's process reached for 4/3 of the timeout), or on close.
    /// `in_flight`: requests (pings included) were sent on the lost
    /// connection and not answered.
    async fn reconnect(&mut self, in_flight: bool) -> Result<Ready, End> {
        let attach = Attach {
            session_id: self.session_id,
            password: self.password.clone(),
            last_zxid: self.last_zxid,
            next_xid: self.next_xid,
        };
        let now = tokio::time::Instant::now();
        let policy = Reconnect::new(self.timeout, self.hosts.len(), self.last_recv.into_std());
        // The first server tried: the last connection's after a reset, the
        // next one after a silence ([`RoundRobin::after_loss`]); over a new
        // server list (`set_hosts`) with the same deadline.
        let rounds = RoundRobin::after_loss(policy, self.hosts.len(), self.host_at, now.into_std(), in_flight);
        let shared = Mutex::new(Rounds { hosts: self.hosts.clone(), rounds, asked: Asked::new() });
        // A close held already (sent again after its connection was lost)
        // goes behind the connect requests too.
        self.close_asked
            .send_replace(self.close.behind_connect() && self.held.iter().any(|c| matches!(c, Cmd::Close(_))));
        let asked = self.close_asked.subscribe();
        let progress = Progress::default();
        loop {
            let cfg = self.cfg.clone();
            // When an attempt a new list left is broken off if still
            // unanswered (`Reconnect::left_wait`).
            let mut cut: Option<tokio::time::Instant> = None;
            let outcome = {
                let attempts = connect_round_robin(&cfg, &shared, &attach, Some(&asked), &progress);
                tokio::pin!(attempts);
                loop {
                    tokio::select! {
                        r = &mut attempts => break Some(r),
                        () = tokio::time::sleep_until(cut.unwrap_or_else(tokio::time::Instant::now)), if cut.is_some() => {
                            cut = None;
                            if progress.left.swap(false, Ordering::SeqCst) {
                                let now = tokio::time::Instant::now().into_std();
                                lock(&shared).rounds.left_ended(Ended::Unanswered(now));
                                break None;
                            }
                        },
                        cmd = self.rx.recv() => match cmd {
                            None => return Err(End::Closed(None)),
                            // Held like a call: sent on the next connection
                            // after the calls made before it (a release's
                            // delete), so that the server ends the session
                            // and its nodes at once (outside attack round
                            // 25, F1: a close made while reconnecting ended
                            // the task at once, and the nodes stayed for the
                            // session timeout). The caller bounds its wait.
                            Some(close @ Cmd::Close(_)) if self.close.hold_while_reconnecting() => {
                                self.held.push_back(close);
                                self.close_asked.send_replace(self.close.behind_connect());
                            },
                            Some(Cmd::Close(done)) => return Err(End::Closed(Some(done))),
                            Some(call @ Cmd::Call { .. }) => self.held.push_back(call),
                            Some(Cmd::Unwatch { path, kind, id, .. }) => {
                                self.unwatch_local(&path, kind, id);
                            }
                            // An attempt in progress on a server the new list
                            // has goes on, on its connection (unless its wait
                            // is longer than the new list's); any other is
                            // broken off if its connect was not written (or
                            // `RoundRobin::left_until` says so), else
                            // left: its answer is waited for a while
                            // (`RoundRobin::left_until`), and its connection
                            // used if its server is in the list then, else
                            // closed unused (`RoundRobin::set_hosts`: outside
                            // attack rounds 49 and 50, F1); the round goes on
                            // over the new list.
                            Some(Cmd::SetHosts(hosts)) => {
                                let mut rounds = lock(&shared);
                                let kept: Vec<Option<usize>> =
                                    rounds.hosts.iter().map(|h| hosts.iter().position(|x| x == h)).collect();
                                let now = tokio::time::Instant::now();
                                // The attempt in progress counts in the
                                // order once its server accepted the TCP
                                // connection, or once it waited long
                                // enough for that (`RoundRobin::counts`).
                                let reached = progress.reached.load(Ordering::SeqCst);
                                let counts = rounds.rounds.counts(reached, now.into_std());
                                if !progress.written.load(Ordering::SeqCst) {
                                    rounds.rounds.unwritten();
                                }
                                let asked = rounds.asked.of(&hosts, counts);
                                let goes_on = rounds.rounds.set_hosts(hosts.len(), &kept, &asked, now.into_std());
                                // Broken off (or left): counted as it
                                // stands now, for every later list.
                                match (goes_on, counts) {
                                    (true, _) => {},
                                    (false, true) => rounds.asked.ended(),
                                    (false, false) => rounds.asked.unreached(),
                                }
                                // How long a written connect that does not go
                                // on is still waited for.
                                let left_until = rounds.rounds.left_until().map(tokio::time::Instant::from_std);
                                rounds.hosts = hosts.clone();
                                drop(rounds);
                                self.host_at = None;
                                self.cfg.connect.hosts = hosts.clone();
                                self.hosts = hosts;
                                if goes_on || progress.left.load(Ordering::SeqCst) {
                                    // (A second list keeps the first's wait.)
                                } else if let Some(until) =
                                    left_until.filter(|_| progress.written.load(Ordering::SeqCst))
                                {
                                    progress.left.store(true, Ordering::SeqCst);
                                    cut = Some(until);
                                } else {
                                    break None;
                                }
                            },
                        },
                    }
                }
            };
            match outcome {
                Some(Ok((ready, at))) => {
                    self.host_at = Some(at);
                    return Ok(ready);
                },
                Some(Err(RoundsEnd::Expired | RoundsEnd::Deadline(_) | RoundsEnd::Unreachable(_))) => {
                    return Err(End::Final(Error::SessionExpired));
                },
                Some(Err(RoundsEnd::AuthFailed(why))) => return Err(End::Final(Error::AuthFailed(why))),
                // The close went behind a connect and was answered: the
                // session is closed. Calls held before it were not sent
                // (they fail with `Closed`; the session's nodes went with
                // it).
                // (The held close is told by `finish`.)
                Some(Err(RoundsEnd::Closed)) => return Err(End::Closed(None)),
                // Sent again once, as a close lost with its connection
                // (`Task::lost`); then given up.
                Some(Err(RoundsEnd::CloseLost)) if self.close.send_again() => {},
                Some(Err(RoundsEnd::CloseLost)) => return Err(End::Closed(None)),
                // A new list broke the attempt in progress off (or came
                // between attempts): the rounds go on over it.
                None => {},
            }
        }
    }

    fn unwatch_local(&mut self, path: &str, kind: WatchKind, id: u64) -> bool {
        let key = (path.to_string(), kind);
        if let Some(v) = self.watches.get_mut(&key) {
            v.retain(|(i, tx)| *i != id && !tx.is_closed());
            if v.is_empty() {
                self.watches.remove(&key);
            }
        }
        // True when the server's watch is needed by nobody now.
        let sk = server_kind(kind);
        let others = match sk {
            WatchKind::Children => self.watches.contains_key(&(path.to_string(), WatchKind::Children)),
            _ => {
                self.watches.contains_key(&(path.to_string(), WatchKind::Data))
                    || self.watches.contains_key(&(path.to_string(), WatchKind::Exist))
            },
        };
        !others && !self.inflight.contains_key(&(path.to_string(), sk))
    }

    /// The stamp of a reply read on the current connection.
    fn stamp(&self, sent: Instant, answered: Instant, zxid: i64) -> Stamp {
        let (connect_sent, connect_answered) = self.connect;
        Stamp { sent, answered, connection: self.connection, connect_sent, connect_answered, zxid }
    }

    fn take_xid(&mut self) -> i32 {
        let x = self.next_xid;
        self.next_xid = if x == i32::MAX { 1 } else { x + 1 };
        x
    }

    /// Encodes a request into the write buffer; refuses one over the limit.
    fn enqueue(&mut self, c: &mut Conn, x: i32, req: Request, purpose: Purpose) {
        let before = c.wbuf.len();
        let n = write_frame(&mut c.wbuf, |b| req.encode(x, b));
        if n > self.cfg.max_frame {
            c.wbuf.truncate(before);
            if let Purpose::User { tx, .. } = purpose {
                let _ = tx.send((
                    Err(Error::BadArgument(format!(
                        "the request takes {n} bytes, over the packet limit of {} bytes; not sent",
                        self.cfg.max_frame
                    ))),
                    None,
                ));
            }
            return;
        }
        if let Some(i) = crate::codec::ops::op::ALL.iter().position(|&o| o == req.opcode()) {
            self.sent[i].fetch_add(1, Ordering::Relaxed);
            #[cfg(feature = "metrics")]
            metrics::counter!("zklock_requests_total", "op" => crate::codec::ops::op_name(req.opcode())).increment(1);
        }
        if x == xid::PING {
            self.pings += 1;
            return;
        }
        let start = c.written + before as u64;
        self.fifo.push_back(Pending { xid: x, opcode: req.opcode(), start, sent: None, purpose });
    }

    fn on_cmd(&mut self, c: &mut Conn, cmd: Cmd) {
        match cmd {
            Cmd::Call { req, tx, watch, out, urgent } => {
                if abandoned(&tx, watch.as_ref()) {
                    return;
                }
                if c.closing.is_some() {
                    let _ = tx.send((Err(Error::Closed), None));
                    return;
                }
                if self.moving.is_some() {
                    self.held.push_back(Cmd::Call { req, tx, watch, out, urgent });
                    return;
                }
                if !urgent && (!self.waiting.is_empty() || self.fifo.len() >= MAX_IN_FLIGHT) {
                    out.set(HeldBack::Now);
                    self.waiting.push_back(Cmd::Call { req, tx, watch, out, urgent });
                    return;
                }
                self.send_call(c, req, tx, watch);
            },
            Cmd::Unwatch { path, kind, id, server } => {
                if self.unwatch_local(&path, kind, id) && server && c.closing.is_none() {
                    self.remove_server_watch(c, path, kind);
                }
            },
            Cmd::SetHosts(hosts) => {
                let current = self.host_at.and_then(|i| self.hosts.get(i)).cloned().or(self.moving_from.take());
                match current.clone().and_then(|h| hosts.iter().position(|x| *x == h)) {
                    Some(at) => {
                        self.host_at = Some(at);
                        if self.moving.take().is_some() {
                            // The list has the server again: the move is
                            // called off (a list that drops and re-adds it
                            // cost a reconnect), and the calls held for it
                            // go out here, behind the ones waiting.
                            while let Some(cmd) = self.held.pop_front() {
                                self.on_cmd(c, cmd);
                            }
                            self.send_waiting(c);
                        }
                    },
                    None => {
                        self.host_at = None;
                        if c.closing.is_none() {
                            self.moving = Some("moving to a server of the new server list".into());
                            self.moving_from = current;
                        }
                    },
                }
                self.cfg.connect.hosts = hosts.clone();
                self.hosts = hosts;
            },
            Cmd::Close(done) if !self.waiting.is_empty() && c.closing.is_none() => {
                // After the calls made before it, as when they were all sent.
                self.waiting.push_back(Cmd::Close(done));
            },
            Cmd::Close(done) => self.close_now(c, done),
        }
    }

    /// The connection `c` was lost (reset, a failed write, silent): `why`.
    /// A close sent on it and not yet answered may not have reached the
    /// server: it is sent again on the next connection, once, as
    /// [`Closing::send_again`] says (outside attack round 28, F1: it was
    /// taken as done, `Client::close` returned before its time and the
    /// session's nodes stayed until the server expired it).
    fn lost(&mut self, c: &mut Conn, why: String) -> End {
        match c.closing.take() {
            Some(done) if self.close.send_again() => {
                self.held.push_back(Cmd::Close(done.unwrap_or_else(|| oneshot::channel().0)));
            },
            Some(done) => return End::Closed(done),
            None => {},
        }
        End::Lost(why)
    }

    /// Sends the close of the session (calls made after it fail with
    /// `Closed`); a second close only waits for the first.
    fn close_now(&mut self, c: &mut Conn, done: oneshot::Sender<()>) {
        if c.closing.is_none() {
            let x = self.take_xid();
            self.enqueue(c, x, Request::CloseSession, Purpose::Close);
            c.closing = Some(Some(done));
        } else {
            let _ = done.send(());
        }
    }

    /// Puts a call in the write buffer.
    fn send_call(&mut self, c: &mut Conn, req: Request, tx: Sink, watch: Option<WatchReg>) {
        if let Some(w) = &watch {
            *self.inflight.entry((w.path.clone(), server_kind(w.kind))).or_insert(0) += 1;
        }
        let x = self.take_xid();
        self.enqueue(c, x, req, Purpose::User { tx, watch });
    }

    /// Sends the calls waiting for room in flight, as far as there is room
    /// (none while the connection closes or moves: they wait for the end
    /// of the connection, as calls made meanwhile do).
    fn send_waiting(&mut self, c: &mut Conn) {
        while self.fifo.len() < MAX_IN_FLIGHT && c.closing.is_none() && self.moving.is_none() {
            match self.waiting.pop_front() {
                Some(Cmd::Call { tx, watch, .. }) if abandoned(&tx, watch.as_ref()) => {},
                Some(Cmd::Call { req, tx, watch, out, .. }) => {
                    out.released();
                    self.send_call(c, req, tx, watch);
                },
                // Its turn: whatever waits behind it was called after it
                // (outside attack round 21, F1: sent back to the queue's
                // end, two closes took turns for ever on the runtime's
                // thread and `close()` never returned).
                Some(Cmd::Close(done)) => self.close_now(c, done),
                Some(other) => self.on_cmd(c, other),
                None => break,
            }
        }
    }

    fn remove_server_watch(&mut self, c: &mut Conn, path: String, kind: WatchKind) {
        let x = self.take_xid();
        self.enqueue(c, x, Request::RemoveWatches { path, kind: server_kind(kind) }, Purpose::Internal);
    }

    /// Serves one connection until it ends.
    async fn serve(&mut self, ready: Ready) -> End {
        let Ready { stream, rbuf, response, connect_sent, answered, server: _, next_xid } = ready;
        self.connect = (connect_sent, answered);
        self.next_xid = next_xid;
        self.session_id = response.session_id;
        self.password = response.password;
        self.timeout = Duration::from_millis(u64::try_from(response.timeout_ms).unwrap_or(0));
        if let Some(s) = self.shared.upgrade() {
            let mut i = s.info();
            i.session_id = self.session_id;
            i.password = self.password.clone();
            i.timeout = self.timeout;
        }
        let now = tokio::time::Instant::now();
        self.last_recv = now;
        let mut c = Conn {
            stream,
            rbuf,
            wbuf: Vec::with_capacity(4096),
            written: 0,
            last_send: now,
            closing: None,
            answered: Vec::new(),
        };
        self.pings = 0;
        // A new connection ends any move (`set_hosts`): also one whose old
        // connection ended some other way before its replies were in (a
        // silent server's read timeout). Left set, the calls held for the
        // move would be held again here for ever (outside attack round 17,
        // F2: a move away from a frozen server hung the client).
        self.moving = None;
        self.moving_from = None;
        self.register_watches_again(&mut c);
        // Calls made while reconnecting, in call order, after the watches.
        while let Some(cmd) = self.held.pop_front() {
            self.on_cmd(&mut c, cmd);
        }
        self.state.send_if_modified(|s| std::mem::replace(s, State::Connected) != State::Connected);
        let read_timeout = reconnect::read_timeout(self.timeout);
        let ping_after = self.timeout / 3;
        // Bytes of frames handed out since this task last let the tasks
        // waiting for them run (see [`HAND_OUT_BEFORE_YIELD`]).
        let mut handed = 0usize;
        loop {
            if !c.wbuf.is_empty() {
                if let Err(why) = self.flush(&mut c, read_timeout).await {
                    return self.lost(&mut c, why);
                }
            }
            if self.fifo.is_empty() && c.closing.is_none() {
                if let Some(why) = self.moving.take() {
                    return End::Lost(why);
                }
            }
            // Frames already read (a burst may hold many).
            loop {
                match next_frame(&c.rbuf, self.cfg.max_frame) {
                    Err(e) => {
                        c.hand_out();
                        return End::Lost(format!("{e}"));
                    },
                    Ok(None) => {
                        c.hand_out();
                        break;
                    },
                    Ok(Some(n)) => {
                        // Heard: a whole frame. Bytes of an unfinished one
                        // do not count (as ZooKeeper's own client), so a
                        // server trickling bytes still hits the read timeout.
                        self.last_recv = tokio::time::Instant::now();
                        let frame = c.rbuf.split_to(4 + n);
                        if let Some(end) = self.on_frame(&mut c, &frame[4..]) {
                            c.hand_out();
                            return end;
                        }
                        drop(frame);
                        handed += 4 + n;
                        if handed >= HAND_OUT_BEFORE_YIELD {
                            handed = 0;
                            c.hand_out();
                            tokio::task::yield_now().await;
                        }
                    },
                }
            }
            self.send_waiting(&mut c);
            if !c.wbuf.is_empty() {
                continue;
            }
            let read_deadline = self.last_recv + read_timeout;
            let ping_at = c.last_send + ping_after;
            let want = match next_frame(&c.rbuf, usize::MAX) {
                Ok(Some(_)) | Err(_) => 4096,
                Ok(None) if c.rbuf.len() >= 4 => {
                    let len = i32::from_be_bytes([c.rbuf[0], c.rbuf[1], c.rbuf[2], c.rbuf[3]]);
                    (usize::try_from(len).unwrap_or(0) + 4).saturating_sub(c.rbuf.len()).clamp(1, 1 << 20)
                },
                Ok(None) => 4096,
            };
            c.rbuf.reserve(want);
            tokio::select! {
                // Read first: after a long write, bytes that came in time
                // are read before the read timeout is judged.
                biased;
                r = c.stream.read_buf(&mut c.rbuf) => match r {
                    Ok(0) => {
                        if let Some(done) = c.closing.take() {
                            return End::Closed(done);
                        }
                        return End::Lost("the server closed the connection".into());
                    }
                    Ok(_) => {},
                    Err(e) => return self.lost(&mut c, format!("reading: {e}")),
                },
                cmd = self.rx.recv() => match cmd {
                    None => {
                        if c.closing.is_none() {
                            let x = self.take_xid();
                            self.enqueue(&mut c, x, Request::CloseSession, Purpose::Close);
                            c.closing = Some(None);
                        }
                    }
                    Some(cmd) => {
                        self.on_cmd(&mut c, cmd);
                        // Take everything already queued into the same write.
                        while c.wbuf.len() < 64 * 1024 {
                            match self.rx.try_recv() {
                                Ok(cmd) => self.on_cmd(&mut c, cmd),
                                Err(_) => break,
                            }
                        }
                    }
                },
                _ = tokio::time::sleep_until(read_deadline.min(ping_at)) => {
                    let now = tokio::time::Instant::now();
                    if now >= read_deadline {
                        return self.lost(&mut c, format!("no whole frame received for {} ms", read_timeout.as_millis()));
                    }
                    if now >= ping_at && c.closing.is_none() && self.moving.is_none() {
                        self.enqueue(&mut c, xid::PING, Request::Ping, Purpose::Internal);
                    }
                }
            }
        }
    }

    /// Hands the write buffer to the socket, stamping each request whose
    /// first byte goes in this write.
    async fn flush(&mut self, c: &mut Conn, limit: Duration) -> Result<(), String> {
        let stamp = Instant::now();
        let end = c.written + c.wbuf.len() as u64;
        for p in self.fifo.iter_mut().rev() {
            if p.sent.is_some() {
                break;
            }
            if p.start < end {
                p.sent = Some(stamp);
            }
        }
        let r = tokio::time::timeout(limit, async {
            c.stream.write_all(&c.wbuf).await?;
            c.stream.flush().await
        })
        .await;
        match r {
            Err(_) => Err(format!("the server did not take our bytes for {} ms", limit.as_millis())),
            Ok(Err(e)) => Err(format!("writing: {e}")),
            Ok(Ok(())) => {
                c.written = end;
                c.wbuf.clear();
                c.last_send = tokio::time::Instant::now();
                Ok(())
            },
        }
    }

    fn register_watches_again(&mut self, c: &mut Conn) {
        self.watches.retain(|_, v| {
            v.retain(|(_, tx)| !tx.is_closed());
            !v.is_empty()
        });
        if self.watches.is_empty() {
            return;
        }
        // Batches well under the packet limit (as ZooKeeper's own client,
        // which cuts at 128 KiB of paths).
        let budget = (self.cfg.max_frame / 2).min(128 * 1024);
        let mut keys: Vec<(String, WatchKind)> = self.watches.keys().cloned().collect();
        keys.sort();
        let (mut data, mut exist, mut child) = (Vec::new(), Vec::new(), Vec::new());
        let mut size = 0;
        let last = keys.len();
        for (i, (path, kind)) in keys.into_iter().enumerate() {
            size += path.len() + 4;
            match kind {
                WatchKind::Data => data.push(path),
                WatchKind::Exist => exist.push(path),
                WatchKind::Children => child.push(path),
            }
            if size >= budget || i + 1 == last {
                let req = Request::SetWatches {
                    relative_zxid: self.last_zxid,
                    data: std::mem::take(&mut data),
                    exist: std::mem::take(&mut exist),
                    child: std::mem::take(&mut child),
                };
                self.enqueue(c, xid::SET_WATCHES, req, Purpose::Internal);
                size = 0;
            }
        }
    }

    /// Handles one frame; returns how the connection ends if it does.
    fn on_frame(&mut self, c: &mut Conn, frame: &[u8]) -> Option<End> {
        let answered = Instant::now();
        let (h, body) = match ReplyHeader::split(frame) {
            Ok(x) => x,
            Err(e) => return Some(End::Lost(format!("{e}"))),
        };
        match h.xid {
            xid::PING => {
                if self.pings == 0 {
                    return Some(End::Lost("a ping reply with no ping outstanding".into()));
                }
                self.pings -= 1;
                return None;
            },
            xid::NOTIFICATION => {
                let ev = match WatcherEvent::decode(body) {
                    Ok(e) => e,
                    Err(e) => return Some(End::Lost(format!("{e}"))),
                };
                self.dispatch(ev, h.zxid);
                return None;
            },
            xid::AUTH => {
                if Code::from_wire(h.err) == Some(Code::AuthFailed) {
                    return Some(End::Final(Error::AuthFailed("the server refused the credentials".into())));
                }
                return None;
            },
            _ => {},
        }
        let Some(p) = self.fifo.pop_front() else {
            return Some(End::Lost(format!("a reply (xid {}) with no request outstanding", h.xid)));
        };
        if p.xid != h.xid {
            let why = format!("reply xid {} out of order (expected {})", h.xid, p.xid);
            // Still outstanding: it fails with the connection loss.
            self.fifo.push_front(p);
            // Two answers come at once, ahead of the requests before them
            // still in the server's pipeline, and are taken out of order:
            // a request the server does not implement (whoAmI before 3.7:
            // ZooKeeper's UnimplementedRequestProcessor), after which the
            // server closes the connection (that request gets its answer,
            // the others the connection's loss); and a write the server's
            // eager ACL check dismissed before it did anything
            // (`zookeeper.enableEagerACLCheck`: NoAuth or InvalidACL with
            // zxid 0, `ZooKeeperServer.authWriteRequest`), after which the
            // connection goes on (outside attack round 34b: the connection
            // ended, and the session's locks were suspended, for a write
            // the application was not allowed to make).
            let early = match Code::from_wire(h.err) {
                Some(code @ Code::Unimplemented) => Some(code),
                Some(code @ (Code::NoAuth | Code::InvalidAcl)) if h.zxid == 0 => Some(code),
                _ => None,
            };
            let Some(code) = early else { return Some(End::Lost(why)) };
            let at =
                self.fifo.iter().position(|q| q.xid == h.xid && matches!(q.purpose, Purpose::User { watch: None, .. }));
            if let Some(Pending { opcode, sent, purpose: Purpose::User { tx, .. }, .. }) =
                at.and_then(|at| self.fifo.remove(at))
            {
                let stamp = self.stamp(sent.unwrap_or(answered), answered, h.zxid);
                c.answered.push((tx, (Err(Error::Server(code)), Some(stamp))));
                if code != Code::Unimplemented {
                    return None;
                }
                return Some(End::Lost(format!(
                    "the server does not implement request type {opcode} (xid {}) and closes the connection",
                    h.xid
                )));
            }
            return Some(End::Lost(why));
        }
        if h.zxid > 0 {
            self.last_zxid = self.last_zxid.max(h.zxid);
        }
        let code = Code::from_wire(h.err);
        let result = match code {
            Some(Code::NoNode) if p.opcode == op::EXISTS => Ok(Response::Empty),
            Some(code) => Err(Error::Server(code)),
            None => match Response::decode(p.opcode, body) {
                Ok(r) => Ok(r),
                Err(e) => {
                    self.fifo.push_front(p);
                    return Some(End::Lost(format!("{e}")));
                },
            },
        };
        match p.purpose {
            Purpose::Internal => {},
            Purpose::Close => {
                if let Some(done) = c.closing.take() {
                    return Some(End::Closed(done));
                }
            },
            Purpose::User { tx, watch } => {
                if let Some(w) = watch {
                    let sk = server_kind(w.kind);
                    let key = (w.path.clone(), sk);
                    if let Some(n) = self.inflight.get_mut(&key) {
                        *n -= 1;
                        if *n == 0 {
                            self.inflight.remove(&key);
                        }
                    }
                    if let Ok(r) = &result {
                        let kind = match (w.kind, r) {
                            (WatchKind::Exist, Response::Stat(_)) => WatchKind::Data,
                            (k, _) => k,
                        };
                        if w.tx.is_closed() {
                            if self.unwatch_local(&w.path, kind, w.id) && c.closing.is_none() {
                                self.remove_server_watch(c, w.path, kind);
                            }
                        } else {
                            self.watches.entry((w.path, kind)).or_default().push((w.id, w.tx));
                        }
                    }
                }
                let sent = p.sent.unwrap_or(answered);
                let stamp = self.stamp(sent, answered, h.zxid);
                c.answered.push((tx, (result, Some(stamp))));
            },
        }
        if code == Some(Code::SessionExpired) {
            return Some(End::Final(Error::SessionExpired));
        }
        None
    }

    fn dispatch(&mut self, ev: WatcherEvent, zxid: i64) {
        if ev.kind == EventType::Session {
            // A state change sent as an event (e.g. SASL): nothing to do
            // here; the connection's own state says it.
            return;
        }
        let path = ev.path;
        let kinds: &[WatchKind] = match ev.kind {
            EventType::NodeCreated | EventType::NodeDataChanged => &[WatchKind::Data, WatchKind::Exist],
            EventType::NodeDeleted => &[WatchKind::Data, WatchKind::Exist, WatchKind::Children],
            EventType::NodeChildrenChanged => &[WatchKind::Children],
            _ => &[],
        };
        for k in kinds {
            if let Some(waiters) = self.watches.remove(&(path.clone(), *k)) {
                for (_, tx) in waiters {
                    let _ = tx.send(WatchedEvent { kind: ev.kind, path: path.clone(), zxid });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_kinds() {
        assert_eq!(server_kind(WatchKind::Exist), WatchKind::Data);
        assert_eq!(server_kind(WatchKind::Children), WatchKind::Children);
    }
}

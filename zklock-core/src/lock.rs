//! Lock handles, guards and the acquire engine (protocol doc sections 4 to 8).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::FutureExt as _;
use tokio::sync::{watch, Notify};
use zookeeper_client as zk;

use crate::client::{Client, Session, Shared};
use crate::error::{Error, ErrorKind, Result};
use crate::names::{self, Decision, LockMode};

type ZkResult<T> = std::result::Result<T, zk::Error>;

/// Options for a lock handle.
#[derive(Clone, Debug, Default)]
pub struct LockOptions {
    pub(crate) data: Vec<u8>,
}

impl LockOptions {
    /// Bytes stored in our lock node, shown to other participants (for
    /// example a host name). Default: empty. At most 64 KiB, and never the
    /// bytes `__REVOKE__` (Curator's revocation request).
    pub fn data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.data = data.into();
        self
    }

    /// Stores `"<hostname>/<pid>"` in our lock node.
    pub fn identify_process(self) -> Self {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_else(|_| "unknown-host".to_owned());
        self.data(format!("{host}/{}", std::process::id()))
    }

    /// Checks the options (the lock constructors and `acquire` do too):
    /// for checking a user's input before connecting.
    ///
    /// # Errors
    /// `InvalidArgument` for data over 64 KiB or Curator's `__REVOKE__`.
    pub fn validate(&self) -> Result<()> {
        if self.data.len() > 64 * 1024 {
            return Err(Error::invalid_argument("lock node data must be at most 64 KiB"));
        }
        if self.data == b"__REVOKE__" {
            return Err(Error::invalid_argument(
                "lock node data must not be __REVOKE__ (Curator's revocation request)",
            ));
        }
        Ok(())
    }
}

/// What a holder knows about its lock (protocol doc section 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum LockState {
    /// Held, and the session is connected and answering.
    Held = 1,
    /// The connection is lost or the server stopped answering: the lock may
    /// still be ours, but that cannot be known; act as if it is not. Goes
    /// back to `Held` after reconnecting with the same session and finding
    /// our node still ours.
    Suspended = 2,
    /// Lost for good: session expired, our node deleted, or the re-check
    /// after a reconnect failed. Another client may hold the lock.
    Lost = 3,
    /// Released by us.
    Released = 4,
}

/// The outcome of [`Guard::release`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseStatus {
    /// Our node is deleted (or this was an inner reentrant release and the
    /// lock stays held by the handle's other guards).
    Released,
    /// The delete could not be confirmed (connection trouble); it is retried
    /// in the background until it succeeds or the session ends.
    Pending,
}

/// Cancels the acquires in progress on one lock handle, from any thread.
#[derive(Clone)]
pub struct CancelHandle {
    state: Arc<CancelState>,
}

impl CancelHandle {
    /// Makes every acquire that is in progress on the lock handle fail with
    /// `Cancelled` (and delete its node). An acquire that starts later is
    /// not affected. Never blocks; safe from signal-handling threads and
    /// callbacks.
    pub fn cancel(&self) {
        self.state.epoch.fetch_add(1, Ordering::AcqRel);
        self.state.notify.notify_waiters();
    }
}

#[derive(Default)]
struct CancelState {
    epoch: AtomicU64,
    notify: Notify,
}

/// Cancels the one acquire call (or calls) it is given to, from any thread
/// (see [`AcquireOptions::cancel_token`]).
///
/// Make it before the call and keep a clone: [`CancelToken::cancel`] makes
/// the calls that were given it fail with `Cancelled` (their nodes are
/// deleted), whether they are waiting now or start later: a cancel that
/// lands before the call starts is not lost. Other calls on the same lock
/// handle are not affected. Cheap to clone (clones are one token);
/// `Send + Sync`.
#[derive(Clone, Debug, Default)]
pub struct CancelToken {
    token: tokio_util::sync::CancellationToken,
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Cancels every call given this token, now and later. Idempotent;
    /// never blocks; safe from signal-handling threads and callbacks.
    pub fn cancel(&self) {
        self.token.cancel();
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }
}

/// Options for one acquire call: how long it may wait and how it can be
/// cancelled. The default waits without limit and has no cancel token.
#[derive(Clone, Debug, Default)]
pub struct AcquireOptions {
    timeout: Option<Duration>,
    cancel: Option<CancelToken>,
}

impl AcquireOptions {
    /// Waits without limit, no cancel token.
    pub fn new() -> AcquireOptions {
        AcquireOptions::default()
    }

    /// Waits at most `timeout` in total (`None`: no limit; zero: try once
    /// without waiting, see [`Lock::try_acquire`]). A timeout too large to
    /// represent as a deadline is no limit.
    pub fn timeout(mut self, timeout: Option<Duration>) -> AcquireOptions {
        self.timeout = timeout;
        self
    }

    /// The call fails with `Cancelled` once `token` is cancelled, even if
    /// it was cancelled before the call started.
    pub fn cancel_token(mut self, token: CancelToken) -> AcquireOptions {
        self.cancel = Some(token);
        self
    }
}

impl From<Option<Duration>> for AcquireOptions {
    fn from(timeout: Option<Duration>) -> AcquireOptions {
        AcquireOptions::new().timeout(timeout)
    }
}

type Callback = Arc<dyn Fn(LockState) + Send + Sync>;

struct Status {
    state: LockState,
    reason: Option<Error>,
}

/// One held lock node, shared by the reentrant guards of a handle.
struct Holding {
    shared: Arc<Shared>,
    session: Arc<Session>,
    lock_path: String,
    name: String,
    sequence: i64,
    token: u64,
    count: AtomicUsize,
    status: Mutex<Status>,
    callbacks: Mutex<Vec<Callback>>,
    stop: watch::Sender<bool>,
    /// The task that follows this holding (and owns the watch on our node).
    monitor: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Whether the monitor's watch on our node is armed by a read that
    /// showed the node owned by our session, and has not fired. Only then
    /// does a release of a `Held` lock delete without reading the node
    /// first: before that read is answered (the grant's proof was the first
    /// list), our node may already have been replaced by someone else's of
    /// the same name.
    watch_armed: AtomicBool,
}

impl Holding {
    fn node_path(&self) -> String {
        format!("{}/{}", self.lock_path, self.name)
    }

    fn state(&self) -> LockState {
        self.status.lock().map(|s| s.state).unwrap_or(LockState::Lost)
    }

    fn is_live(&self) -> bool {
        matches!(self.state(), LockState::Held | LockState::Suspended)
    }

    /// The state as callers see it: a live lock of a closed client is lost
    /// (its node went with the session), even before the monitor says so.
    fn reported_state(&self) -> LockState {
        match self.state() {
            LockState::Held | LockState::Suspended if self.shared.is_closed() => LockState::Lost,
            state => state,
        }
    }

    /// Moves to `state` (never out of Lost or Released) and tells the
    /// callbacks on the event thread.
    fn set_state(&self, state: LockState, reason: Option<Error>) {
        if state == LockState::Suspended && self.shared.is_closed() {
            // Closing makes requests fail like a lost connection; it is not
            // one: the monitor reports Lost (Closed) instead.
            return;
        }
        {
            let Ok(mut st) = self.status.lock() else { return };
            if st.state == state || matches!(st.state, LockState::Lost | LockState::Released) {
                return;
            }
            st.state = state;
            if reason.is_some() {
                st.reason = reason;
            }
        }
        if state == LockState::Released {
            return;
        }
        log::debug!("zklock: {} is now {state:?}", self.node_path());
        let callbacks = self.callbacks.lock().map(|c| c.clone()).unwrap_or_default();
        for cb in callbacks {
            self.shared.post_event(Box::new(move || cb(state)));
        }
    }

    fn lose(&self, kind: ErrorKind, why: String) {
        // Whatever the route (node deleted, session closed), a loss caused
        // by closing the client is reported as Closed.
        let (kind, why) =
            if self.shared.is_closed() { (ErrorKind::Closed, "the client was closed".into()) } else { (kind, why) };
        let msg = format!("lock {} lost: {why}", self.node_path());
        self.set_state(LockState::Lost, Some(Error::new(kind, msg)));
        self.stop.send_replace(true);
    }

    fn check(&self) -> Result<()> {
        let st = self.status.lock().map_err(|_| Error::internal("status mutex poisoned"))?;
        if self.shared.is_closed() && st.state != LockState::Released {
            let why = self.shared.closed_error();
            return Err(Error::new(ErrorKind::Closed, format!("lock {} lost: {}", self.node_path(), why.message())));
        }
        match st.state {
            LockState::Released => Err(Error::new(ErrorKind::NotHeld, "the lock was released")),
            LockState::Lost => Err(st
                .reason
                .clone()
                .unwrap_or_else(|| Error::new(ErrorKind::LockLost, format!("lock {} lost", self.node_path())))),
            LockState::Suspended => Err(Error::new(
                ErrorKind::ConnectionLoss,
                "the lock is suspended: the connection to ZooKeeper is lost, so it may already be someone else's",
            )),
            LockState::Held => {
                let zs = self.session.state();
                if !matches!(zs, zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly) {
                    return Err(Error::new(
                        ErrorKind::ConnectionLoss,
                        format!("the session is {zs}: the lock is not safely held"),
                    ));
                }
                if Instant::now() >= self.session.safe_until() {
                    return Err(Error::new(
                        ErrorKind::ConnectionLoss,
                        "ZooKeeper has not answered for nearly a session timeout: the session may have expired",
                    ));
                }
                Ok(())
            },
        }
    }
}

/// Whether a ZooKeeper error leaves the outcome of a request unknown.
fn outcome_unknown(e: &zk::Error) -> bool {
    matches!(e, zk::Error::ConnectionLoss | zk::Error::Timeout | zk::Error::Custom(_) | zk::Error::UnexpectedError(_))
}

/// Whether a ZooKeeper error means the session is gone.
fn session_gone(e: &zk::Error) -> bool {
    matches!(e, zk::Error::SessionExpired | zk::Error::SessionMoved | zk::Error::ClientClosed)
}

/// Something to delete in the background until it is gone or the session is.
enum Cleanup {
    /// Our node at this path, if the session still owns it (a node of the
    /// same name made by another session after ours was deleted is not
    /// ours to delete).
    Node(String),
    /// Our nodes under `parent` whose name starts with `prefix` and whose
    /// owner is the session (a create whose reply was lost).
    Prefix { parent: String, prefix: String },
}

/// What became of a node we set out to delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Deletion {
    /// Our delete removed it.
    Deleted,
    /// Nothing of ours was there to delete: the node is gone, is another
    /// session's, or went with our session.
    Gone,
    /// Not done yet (no answer, or a changed version): try again.
    Pending,
}

/// Deletes our node now if the session is connected, else in the
/// background (`Pending`). `known_ours`: the caller holds the lock on this
/// node and a watch armed by a read that showed it ours has reported
/// nothing, so one `delete` is sent at once; otherwise the node is read
/// first and deleted only if the session owns it (see [`Cleanup::Node`]).
/// `patience` bounds the try made now (each request is bounded by the
/// operation timeout anyway); what is not done by then goes on in the
/// background.
async fn delete_node(
    shared: &Arc<Shared>,
    session: &Arc<Session>,
    path: String,
    known_ours: bool,
    patience: Option<Duration>,
) -> Deletion {
    if session.state().is_terminated() {
        return Deletion::Gone;
    }
    if session.state() == zk::SessionState::SyncConnected {
        let now = async {
            if known_ours {
                delete_once(shared, session, &path, None).await
            } else {
                delete_if_ours(shared, session, &path).await
            }
        };
        let done = match patience {
            Some(p) => tokio::time::timeout(p, now).await.unwrap_or(Deletion::Pending),
            None => now.await,
        };
        if done != Deletion::Pending {
            return done;
        }
    }
    spawn_cleanup(shared.clone(), session.clone(), Cleanup::Node(path));
    Deletion::Pending
}

/// One `delete` of `path` (at `version`, if given).
async fn delete_once(shared: &Shared, session: &Session, path: &str, version: Option<i32>) -> Deletion {
    let Ok(zk) = session.zk() else { return Deletion::Gone };
    match tokio::time::timeout(shared.options.operation_timeout, zk.delete(path, version)).await {
        Ok(Ok(())) => Deletion::Deleted,
        Ok(Err(e)) if e == zk::Error::NoNode || session_gone(&e) => Deletion::Gone,
        Ok(Err(_)) | Err(_) => Deletion::Pending,
    }
}

/// Retries `what` until it is done, the session ends, or the client closes
/// (which ends the session).
fn spawn_cleanup(shared: Arc<Shared>, session: Arc<Session>, what: Cleanup) {
    if let Cleanup::Node(path) = &what {
        log::warn!("zklock: cannot delete {path} now; retrying in the background");
    }
    shared.pending_cleanups.fetch_add(1, Ordering::AcqRel);
    let handle = shared.handle.clone();
    handle.spawn(async move {
        let mut backoff = Duration::from_millis(50);
        loop {
            let connected = tokio::select! {
                r = session.wait_connected(None) => r.is_ok(),
                _ = shared.closed() => false,
            };
            if !connected || cleanup_once(&shared, &session, &what).await {
                break;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
        shared.pending_cleanups.fetch_sub(1, Ordering::AcqRel);
    });
}

/// One try of a cleanup; true when nothing is left to do.
async fn cleanup_once(shared: &Shared, session: &Session, what: &Cleanup) -> bool {
    match what {
        Cleanup::Node(path) => delete_if_ours(shared, session, path).await != Deletion::Pending,
        Cleanup::Prefix { parent, prefix } => {
            let Ok(zk) = session.zk() else { return true };
            let children = match tokio::time::timeout(shared.options.operation_timeout, zk.list_children(parent)).await
            {
                Ok(Ok(c)) => c,
                Ok(Err(e)) if e == zk::Error::NoNode || session_gone(&e) => return true,
                _ => return false,
            };
            for node in names::own_nodes(&children, prefix) {
                if delete_if_ours(shared, session, &format!("{parent}/{}", node.name)).await == Deletion::Pending {
                    return false;
                }
            }
            true
        },
    }
}

/// Reads the node at `path` and deletes it (at the version read) if the
/// session owns it.
async fn delete_if_ours(shared: &Shared, session: &Session, path: &str) -> Deletion {
    let Ok(zk) = session.zk() else { return Deletion::Gone };
    match tokio::time::timeout(shared.options.operation_timeout, zk.get_data(path)).await {
        Ok(Ok((_, stat))) if stat.ephemeral_owner == session.id => {
            delete_once(shared, session, path, Some(stat.version)).await
        },
        Ok(Ok((_, stat))) => {
            log::warn!("zklock: not deleting {path}: it is owned by session {:#x}, not ours", stat.ephemeral_owner);
            Deletion::Gone
        },
        Ok(Err(e)) if e == zk::Error::NoNode || session_gone(&e) => Deletion::Gone,
        Ok(Err(_)) | Err(_) => Deletion::Pending,
    }
}

/// How long a failed acquire waits for the deletion of its node before
/// leaving it to the background (its deadline has passed already).
const CLEANUP_GRACE: Duration = Duration::from_millis(250);

/// Why an acquire attempt stopped without the lock.
enum Step {
    /// Our node is gone (session expired, deleted by someone): queue again.
    Restart,
    /// Give up with this error (our node is cleaned up).
    Fail(Error),
}

impl From<Error> for Step {
    fn from(e: Error) -> Self {
        Step::Fail(e)
    }
}

/// One acquire call: what, until when, and how to be interrupted.
struct Ctx {
    shared: Arc<Shared>,
    path: String,
    mode: LockMode,
    data: Vec<u8>,
    deadline: Option<Instant>,
    try_once: bool,
    /// Downgrade: the sequence of the write node this handle's pair holds;
    /// the read node is created non-sequentially with that sequence.
    downgrade: Option<i64>,
    cancel: Arc<CancelState>,
    epoch: u64,
    /// This call's own cancellation: the caller's token (a child of it),
    /// also cancelled when an async acquire's future is dropped.
    call: tokio_util::sync::CancellationToken,
    /// The handle's guess of the sequence our next node will get (see
    /// [`SeqHint`]).
    seq_hint: Arc<SeqHint>,
}

/// A handle's guess of the sequence number of its next node, so that the
/// read of our node that arms the holder's watch can go out with the create
/// instead of after it. On a lock path that only this handle uses, the
/// next node's sequence is ours plus one (measured on ZooKeeper 3.8: the
/// suffix counts creates; the `cversion` in the parent's Stat counts
/// deletes too), so the guess is made only after a list behind our create
/// showed our node alone. Anyone else's create makes the guess miss: the
/// read finds no node (which sets no watch) and costs nothing but itself.
/// A hit is checked like any read of our node (its creation zxid and
/// owner); a guess is never evidence by itself.
#[derive(Debug)]
struct SeqHint(std::sync::atomic::AtomicI64);

impl Default for SeqHint {
    fn default() -> SeqHint {
        SeqHint(std::sync::atomic::AtomicI64::new(-1))
    }
}

impl SeqHint {
    fn get(&self) -> Option<i64> {
        Some(self.0.load(Ordering::Relaxed)).filter(|s| (0..=i64::from(i32::MAX)).contains(s))
    }

    /// Learns from the list pipelined behind the create of our node `name`.
    fn learn(&self, children: &[String], name: &str) {
        let alone = children.len() == 1;
        let next = names::parse_child(name).filter(|_| alone).map_or(-1, |n| n.sequence.saturating_add(1));
        self.0.store(next, Ordering::Relaxed);
    }
}

impl Ctx {
    fn interrupted(&self) -> Result<()> {
        if self.shared.is_closed() {
            return Err(Error::closed());
        }
        if self.cancelled() {
            return Err(Error::cancelled("acquire"));
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(self.deadline_passed());
        }
        Ok(())
    }

    /// Whether this call was cancelled: through its token (or its dropped
    /// future) or through the handle's [`Lock::cancel`].
    fn cancelled(&self) -> bool {
        self.call.is_cancelled() || self.cancel.epoch.load(Ordering::Acquire) != self.epoch
    }

    /// The error when the deadline passes: `Timeout` for a timeout the
    /// caller gave; for a try-once (whose `Timeout` means "held by someone
    /// else") `ConnectionLoss`, as ZooKeeper did not answer in time.
    fn deadline_passed(&self) -> Error {
        if self.try_once {
            Error::new(
                ErrorKind::ConnectionLoss,
                format!(
                    "acquire {} (try once): ZooKeeper did not answer within the operation timeout ({:?})",
                    self.path, self.shared.options.operation_timeout
                ),
            )
        } else {
            Error::timeout(&format!("acquire {}", self.path))
        }
    }

    /// Awaits `fut` unless cancel, the deadline or close comes first.
    async fn race<F: Future>(&self, fut: F) -> Result<F::Output> {
        let notified = self.cancel.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        self.interrupted()?;
        let deadline = async {
            match self.deadline {
                Some(d) => tokio::time::sleep_until(d.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            out = fut => Ok(out),
            _ = notified => Err(Error::cancelled("acquire")),
            _ = self.call.cancelled() => Err(Error::cancelled("acquire")),
            _ = deadline => Err(self.deadline_passed()),
            _ = self.shared.closed() => Err(Error::closed()),
        }
    }

    /// One ZooKeeper request, also bounded by the operation timeout (which
    /// counts as an unknown outcome). Replies do not move the safety clock:
    /// only the heartbeat's syncs do (`clock.rs`).
    async fn op<T>(&self, fut: impl Future<Output = ZkResult<T>>) -> Result<ZkResult<T>> {
        match self.race(tokio::time::timeout(self.shared.options.operation_timeout, fut)).await? {
            Err(_) => Ok(Err(zk::Error::ConnectionLoss)),
            Ok(r) => Ok(r),
        }
    }

    /// After an unknown outcome: wait for the reconnect; Restart if the
    /// session is gone meanwhile.
    async fn reconnected(&self, session: &Session) -> std::result::Result<(), Step> {
        match self.race(session.wait_connected(self.deadline)).await? {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::SessionExpired => Err(Step::Restart),
            Err(e) => Err(Step::Fail(e)),
        }
    }

    fn zk_failure(what: &str, e: zk::Error) -> Step {
        if session_gone(&e) {
            Step::Restart
        } else {
            Step::Fail(Error::from_zk(what, e))
        }
    }
}

struct OwnNode {
    name: String,
    czxid: i64,
}

/// A look at the queue: the children, and a proof of our node's ownership
/// when the list itself gives one.
struct Look {
    children: Vec<String>,
    proof: Option<OwnNodeProof>,
    /// A read of our node pipelined right behind the list (so answered
    /// after it) that showed the node ours, and armed a watch on it.
    own: Option<OwnWatch>,
}

/// A watch on our node, armed by a read whose reply showed the node owned
/// by our session, with the session state as of just before that read was
/// sent. Only [`OwnWatch::armed`] makes one, from such a reply.
///
/// ZooKeeper sends one connection its replies and watch notifications in
/// the order it applied the changes (writes are applied one at a time, and
/// a change's notifications are queued while it is applied). So while this
/// watch has not fired and the connection is the same one, any reply or
/// notification that arrives is about a state in which our node is still
/// the one that read saw.
struct OwnWatch {
    event: EventFuture,
    states: zk::StateWatcher,
}

impl OwnWatch {
    /// The watch from a read of our node, if its reply showed our session
    /// as the node's owner.
    fn armed(stat: &zk::Stat, watch: zk::OneshotWatcher, states: zk::StateWatcher, session: i64) -> Option<OwnWatch> {
        (stat.ephemeral_owner == session).then(|| OwnWatch { event: Box::pin(watch.changed()), states })
    }

    /// `self` if nothing was reported on our node and the session stayed on
    /// the same connection since the read that armed it; `None` otherwise
    /// (the watch has fired, or events of another connection need not come
    /// in order with it). Call it only after the reply or notification it
    /// is to vouch for has been received: the client library hands out a
    /// connection's events in the order they arrive, so one on our node
    /// that came before is visible by then.
    fn intact(mut self) -> Option<OwnWatch> {
        let fired = self.event.as_mut().now_or_never().is_some();
        let reconnected = self.states.changed().now_or_never().is_some();
        (!fired && !reconnected).then_some(self)
    }
}

/// Evidence, required by every grant, that our node exists and is owned by
/// our session at a point (in ZooKeeper's order of our session's replies
/// and notifications) after the last blocker was gone (protocol section 4,
/// grant rule). Only the three functions below make one.
struct OwnNodeProof {
    /// The watch on our node, armed by a read that showed it ours, if the
    /// proof has one: it becomes the holder's watch.
    watch: Option<EventFuture>,
    /// The session state as of just before the request that armed the
    /// watch (or the proving list) was sent (see
    /// [`Session::watch_from_now`]): the holder's monitor starts from it,
    /// so a disconnect after the proof is reported even when it is over
    /// before the monitor first runs.
    states: zk::StateWatcher,
}

impl OwnNodeProof {
    /// A read of our node, sent after the last blocker was seen gone (its
    /// delete notification, or the reply to a list that showed us first
    /// and that the read was pipelined behind), found it ours.
    fn read(own: OwnWatch) -> OwnNodeProof {
        OwnNodeProof { watch: Some(own.event), states: own.states }
    }

    /// The list sent right behind our create (same session, so answered
    /// after it) shows that no child of the lock path was created or
    /// deleted since our node (`pzxid` is still our create's zxid): our
    /// node is the one we created. No proof if anything changed.
    fn unchanged_since_create(czxid: i64, parent: &zk::Stat, states: zk::StateWatcher) -> Option<OwnNodeProof> {
        (parent.pzxid == czxid).then_some(OwnNodeProof { watch: None, states })
    }

    /// `blocker` is the delete notification of the node we waited on, our
    /// only blocker, and `own` (armed before that wait) had not fired when
    /// it arrived on the same connection: our node was still ours when the
    /// blocker went (see [`OwnWatch`]). The list-free handoff: no request
    /// between the notification and the grant.
    fn watched_through(own: OwnWatch, blocker: &zk::WatchedEvent) -> Option<OwnNodeProof> {
        if blocker.event_type != zk::EventType::NodeDeleted {
            return None;
        }
        own.intact().map(OwnNodeProof::read)
    }

    /// A list, sent after the last blocker was seen gone, has just shown us
    /// first, and `own` (armed before it was sent) had not fired when its
    /// reply arrived on the same connection: the name in that list is our
    /// node, still ours (see [`OwnWatch`]). No read behind the list.
    fn watched_through_list(own: OwnWatch) -> Option<OwnNodeProof> {
        own.intact().map(OwnNodeProof::read)
    }
}

/// One attempt: one uuid, one session, at most one node of ours.
struct Attempt {
    session: Arc<Session>,
    name_prefix: String,
    protected: String,
    node: Option<OwnNode>,
    unknown_create: bool,
}

impl Attempt {
    async fn run(&mut self, ctx: &Ctx) -> std::result::Result<Arc<Holding>, Step> {
        let first = self.create(ctx).await?;
        self.wait(ctx, first).await
    }

    /// Creates our node, pipelining a getChildren (with the lock path's
    /// Stat) behind the create. Returns that first look at the queue when
    /// the list is known to include our node.
    async fn create(&mut self, ctx: &Ctx) -> std::result::Result<Option<Look>, Step> {
        let zk = self.session.zk()?;
        let (create_path, mode) = match ctx.downgrade {
            Some(seq) => (format!("{}/{}{seq:010}", ctx.path, self.name_prefix), zk::CreateMode::Ephemeral),
            None => (format!("{}/{}", ctx.path, self.name_prefix), zk::CreateMode::EphemeralSequential),
        };
        let options = mode.with_acls(zk::Acls::anyone_all());
        loop {
            ctx.interrupted()?;
            let states = self.session.watch_from_now();
            // Both requests are sent now, in this order; the server answers
            // them in order, so the list includes our node.
            let create = zk.create(&create_path, &ctx.data, &options);
            let list = zk.get_children(&ctx.path);
            // A read of the node we expect to create, if we can guess its
            // name (see SeqHint): answered after the list.
            let guess = match (ctx.downgrade, ctx.seq_hint.get()) {
                (None, Some(seq)) => {
                    let name = format!("{}{seq:010}", self.name_prefix);
                    let read = zk.get_and_watch_data(&format!("{}/{name}", ctx.path));
                    Some((name, read))
                },
                _ => None,
            };
            self.unknown_create = true;
            match ctx.op(create).await? {
                Ok((stat, seq)) => {
                    self.unknown_create = false;
                    let name = match ctx.downgrade {
                        Some(_) => create_path[ctx.path.len() + 1..].to_owned(),
                        None => format!("{}{seq}", self.name_prefix),
                    };
                    self.node = Some(OwnNode { name: name.clone(), czxid: stat.czxid });
                    crate::fault::stall(crate::fault::AFTER_CREATE_REPLY);
                    let (children, parent) = match ctx.op(list).await? {
                        Ok(reply) => reply,
                        Err(_) => return Ok(None),
                    };
                    ctx.seq_hint.learn(&children, &name);
                    let Some((guessed, read)) = guess.filter(|(guessed, _)| *guessed == name) else {
                        let proof = OwnNodeProof::unchanged_since_create(stat.czxid, &parent, states);
                        return Ok(Some(Look { children, proof, own: None }));
                    };
                    // The guess was right: the read, answered after the
                    // list, shows our node (or what became of it).
                    let own = match ctx.op(read).await? {
                        Ok((_, got, watch)) if got.czxid == stat.czxid => {
                            OwnWatch::armed(&got, watch, states, self.session.id)
                        },
                        _ => None,
                    };
                    log::trace!("zklock: guessed our node {guessed}: {}", if own.is_some() { "armed" } else { "no" });
                    // Anything but our node, unchanged: no proof from this
                    // look; the queue is looked at again (and our node read).
                    return Ok(Some(match own {
                        Some(own) => Look { children, proof: None, own: Some(own) },
                        None => Look { children, proof: None, own: None },
                    }));
                },
                Err(zk::Error::NoNode) => {
                    self.unknown_create = false;
                    drop(list);
                    self.make_parents(ctx).await?;
                },
                // A downgrade's create retried after a lost reply finds its
                // own node: recover it like a lost reply.
                Err(e) if outcome_unknown(&e) || (e == zk::Error::NodeExists && ctx.downgrade.is_some()) => {
                    drop(list);
                    if let Some(children) = self.recover(ctx).await? {
                        return Ok(Some(Look { children, proof: None, own: None }));
                    }
                },
                Err(e) => {
                    self.unknown_create = false;
                    return Err(Ctx::zk_failure("creating the lock node", e));
                },
            }
        }
    }

    /// The create's reply was lost: find our node by its protected prefix,
    /// adopt it only if our session owns it, delete duplicates. `None`: no
    /// node of ours exists, create again (same uuid).
    async fn recover(&mut self, ctx: &Ctx) -> std::result::Result<Option<Vec<String>>, Step> {
        let zk = self.session.zk()?;
        loop {
            ctx.reconnected(&self.session).await?;
            let children = match ctx.op(zk.list_children(&ctx.path)).await? {
                Ok(c) => c,
                Err(zk::Error::NoNode) => {
                    self.unknown_create = false;
                    return Ok(None);
                },
                Err(e) if outcome_unknown(&e) => continue,
                Err(e) => return Err(Ctx::zk_failure("listing the lock after a lost create reply", e)),
            };
            let mut adopted: Option<OwnNode> = None;
            let mut retry = false;
            for node in names::own_nodes(&children, &self.protected) {
                let path = format!("{}/{}", ctx.path, node.name);
                match ctx.op(zk.get_data(&path)).await? {
                    Ok((_, stat)) if stat.ephemeral_owner == self.session.id => {
                        if adopted.is_none() {
                            adopted = Some(OwnNode { name: node.name, czxid: stat.czxid });
                        } else {
                            log::warn!("zklock: deleting duplicate lock node {path}");
                            let _ = ctx.op(zk.delete(&path, None)).await?;
                        }
                    },
                    Ok(_) | Err(zk::Error::NoNode) => {},
                    Err(e) if outcome_unknown(&e) => retry = true,
                    Err(e) => return Err(Ctx::zk_failure("reading our lock node", e)),
                }
            }
            if retry {
                continue;
            }
            self.unknown_create = false;
            return Ok(adopted.map(|n| {
                log::info!("zklock: adopted {}/{} after a lost create reply", ctx.path, n.name);
                self.node = Some(n);
                children
            }));
        }
    }

    /// Creates the lock path (and missing ancestors) as containers, or as
    /// persistent nodes on servers without containers.
    async fn make_parents(&self, ctx: &Ctx) -> std::result::Result<(), Step> {
        let zk = self.session.zk()?;
        let mut mode = zk::CreateMode::Container;
        loop {
            let options = mode.with_acls(zk::Acls::anyone_all());
            match ctx.op(zk.mkdir(&ctx.path, &options)).await? {
                Ok(()) => return Ok(()),
                Err(zk::Error::Unimplemented) if mode == zk::CreateMode::Container => mode = zk::CreateMode::Persistent,
                // The chroot of the connect string does not exist: make it,
                // as persistent nodes (as kazoo does; a namespace is not a
                // lock parent and must not vanish when empty).
                Err(zk::Error::NoNode) if zk.path() != "/" => {
                    let chroot = zk.path().to_owned();
                    let Ok(root) = zk.clone().chroot("/") else {
                        return Err(Step::Fail(Error::internal("cannot leave the chroot")));
                    };
                    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
                    match ctx.op(root.mkdir(&chroot, &persistent)).await? {
                        Ok(()) => log::info!("zklock: created the chroot {chroot} of the connect string"),
                        Err(e) if outcome_unknown(&e) => ctx.reconnected(&self.session).await?,
                        Err(e) => {
                            return Err(Ctx::zk_failure(
                                &format!("creating the chroot {chroot} of the connect string"),
                                e,
                            ))
                        },
                    }
                },
                Err(e) if outcome_unknown(&e) => ctx.reconnected(&self.session).await?,
                Err(e) => return Err(Ctx::zk_failure(&format!("creating the lock path {}", ctx.path), e)),
            }
        }
    }

    /// Waits in the queue until our node holds the lock (section 4, step 4).
    async fn wait(&mut self, ctx: &Ctx, mut known: Option<Look>) -> std::result::Result<Arc<Holding>, Step> {
        let zk = self.session.zk()?;
        let Some(name) = self.node.as_ref().map(|n| n.name.clone()) else { return Err(Step::Restart) };
        let own_path = format!("{}/{name}", ctx.path);
        // Our watch on our own node, armed by a read that showed it ours;
        // kept across waits, and handed to the holder with the grant.
        let mut own: Option<OwnWatch> = None;
        loop {
            ctx.interrupted()?;
            let look = match known.take() {
                Some(look) => look,
                None => match self.look(ctx, &own_path, own.is_none()).await? {
                    Some(look) => look,
                    None => continue,
                },
            };
            // A read pipelined behind this list: sent after the last
            // blocker was seen gone.
            let fresh = look.own.is_some();
            if fresh {
                own = look.own;
            }
            match names::decide(ctx.mode, &look.children, &name) {
                Decision::Gone => {
                    log::info!("zklock: our node {own_path} is gone; queueing again");
                    self.node = None;
                    return Err(Step::Restart);
                },
                // First in the queue as of that list: the grant needs proof
                // that our node is still ours after it (section 4, grant
                // rule): the list itself (right behind our create), the
                // read pipelined behind it, our watch armed before it and
                // silent through its reply, or a read now.
                Decision::Held => {
                    let proof = match (look.proof, fresh, own.take()) {
                        (Some(p), _, _) => Some(p),
                        (None, true, Some(w)) => Some(OwnNodeProof::read(w)),
                        (None, false, Some(w)) => OwnNodeProof::watched_through_list(w),
                        _ => None,
                    };
                    let proof = match proof {
                        Some(p) => p,
                        None => match self.prove(ctx, &own_path).await? {
                            Some(p) => p,
                            None => continue,
                        },
                    };
                    if let Some(h) = self.grant(ctx, &name, proof).await? {
                        return Ok(h);
                    }
                },
                Decision::WaitOn(blocker) => {
                    if ctx.try_once {
                        return Err(Step::Fail(Error::new(
                            ErrorKind::Timeout,
                            format!("acquire {}: the lock is held by another participant", ctx.path),
                        )));
                    }
                    let path = format!("{}/{blocker}", ctx.path);
                    let sole = names::held_once_gone(ctx.mode, &look.children, &name);
                    // Watch the blocker; arm our own watch in the same round
                    // trip if we have none that is still good.
                    own = own.and_then(OwnWatch::intact);
                    let states = self.session.watch_from_now();
                    let watch_blocker = zk.get_and_watch_data(&path);
                    let read_own = own.is_none().then(|| zk.get_and_watch_data(&own_path));
                    let blocker_reply = ctx.op(watch_blocker).await?;
                    if let Some(read) = read_own {
                        match self.read_own(ctx, &own_path, read, states).await? {
                            Some(w) => own = Some(w),
                            None => continue,
                        }
                    }
                    let watcher = match blocker_reply {
                        Ok((_, _, watcher)) => watcher,
                        // Gone between the list and the watch: look again now.
                        Err(zk::Error::NoNode) => continue,
                        Err(e) if outcome_unknown(&e) => {
                            ctx.reconnected(&self.session).await?;
                            continue;
                        },
                        Err(e) => return Err(Ctx::zk_failure("watching the node before ours", e)),
                    };
                    crate::fault::stall(crate::fault::BEFORE_WAITING);
                    let own_event = async {
                        match own.as_mut() {
                            Some(w) => w.event.as_mut().await,
                            None => std::future::pending().await,
                        }
                    };
                    let woken = ctx
                        .race(async {
                            tokio::select! {
                                biased;
                                ev = watcher.changed() => Ok(ev),
                                ev = own_event => Err(ev),
                            }
                        })
                        .await?;
                    let event = match woken {
                        Ok(event) => event,
                        // Something happened to our node while we waited.
                        Err(ev) => {
                            own = None;
                            if ev.event_type == zk::EventType::Session && ev.session_state.is_terminated() {
                                return Err(Step::Restart);
                            }
                            if ev.event_type == zk::EventType::NodeDeleted {
                                log::info!("zklock: our node {own_path} was deleted while waiting; queueing again");
                                self.node = None;
                                return Err(Step::Restart);
                            }
                            continue;
                        },
                    };
                    if event.event_type == zk::EventType::Session && event.session_state.is_terminated() {
                        return Err(Step::Restart);
                    }
                    // The only node before ours is gone and none can take
                    // its place: ours is first, and our watch, armed before
                    // the wait and silent through the delete notification,
                    // proves it still ours (the list-free handoff: no
                    // request between the notification and the grant). If
                    // the watch cannot vouch, one read now does.
                    if sole && event.event_type == zk::EventType::NodeDeleted {
                        let proof = match own.take().and_then(|w| OwnNodeProof::watched_through(w, &event)) {
                            Some(p) => Some(p),
                            None => self.prove(ctx, &own_path).await?,
                        };
                        if let Some(proof) = proof {
                            if let Some(h) = self.grant(ctx, &name, proof).await? {
                                return Ok(h);
                            }
                        }
                    }
                },
            }
        }
    }

    /// Lists the queue. With `read`, a read of our node (and a watch on it)
    /// is pipelined behind the list: sent after the last blocker was seen
    /// gone, it proves the node ours if the list shows us first, and arms
    /// our watch for the next wait if not (without, the caller's watch on
    /// our node vouches for the list). `Restart` if our node is gone or
    /// someone else's; `None` if ZooKeeper did not answer (look again once
    /// reconnected).
    async fn look(&mut self, ctx: &Ctx, own_path: &str, read: bool) -> std::result::Result<Option<Look>, Step> {
        let zk = self.session.zk()?;
        let states = self.session.watch_from_now();
        let list = zk.list_children(&ctx.path);
        let read = read.then(|| zk.get_and_watch_data(own_path));
        let children = match ctx.op(list).await? {
            Ok(children) => children,
            Err(zk::Error::NoNode) => Vec::new(),
            Err(e) if outcome_unknown(&e) => {
                ctx.reconnected(&self.session).await?;
                return Ok(None);
            },
            Err(e) => return Err(Ctx::zk_failure("listing the lock", e)),
        };
        let Some(read) = read else { return Ok(Some(Look { children, proof: None, own: None })) };
        Ok(self.read_own(ctx, own_path, read, states).await?.map(|own| Look { children, proof: None, own: Some(own) }))
    }

    /// Reads our node with a watch, now: a proof if it exists and our
    /// session owns it. `Restart` if it is gone or someone else's (it is not
    /// ours to delete); `None` if ZooKeeper did not answer (look again once
    /// reconnected).
    async fn prove(&mut self, ctx: &Ctx, own_path: &str) -> std::result::Result<Option<OwnNodeProof>, Step> {
        let zk = self.session.zk()?;
        let states = self.session.watch_from_now();
        let read = zk.get_and_watch_data(own_path);
        Ok(self.read_own(ctx, own_path, read, states).await?.map(OwnNodeProof::read))
    }

    /// The reply to a read of our node with a watch (`states` taken just
    /// before it was sent): the armed watch if the node exists and our
    /// session owns it. `Restart` if it is gone or someone else's; `None`
    /// if ZooKeeper did not answer (once reconnected).
    async fn read_own(
        &mut self,
        ctx: &Ctx,
        own_path: &str,
        read: impl Future<Output = ZkResult<(Vec<u8>, zk::Stat, zk::OneshotWatcher)>>,
        states: zk::StateWatcher,
    ) -> std::result::Result<Option<OwnWatch>, Step> {
        match ctx.op(read).await? {
            Ok((_, stat, watch)) => match OwnWatch::armed(&stat, watch, states, self.session.id) {
                Some(own) => Ok(Some(own)),
                None => {
                    log::info!("zklock: our node {own_path} is another session's now; queueing again");
                    self.node = None;
                    Err(Step::Restart)
                },
            },
            Err(zk::Error::NoNode) => {
                log::info!("zklock: our node {own_path} is gone; queueing again");
                self.node = None;
                Err(Step::Restart)
            },
            Err(e) if outcome_unknown(&e) => {
                ctx.reconnected(&self.session).await?;
                Ok(None)
            },
            Err(e) => Err(Ctx::zk_failure("reading our lock node", e)),
        }
    }

    /// Hands out the holding, on the proof that our first-in-line node is
    /// ours, and only while the session is safely alive (protocol sections
    /// 4 and 5): if the safety clock has run out (a stalled process, a
    /// server cut off from the leader) the session may have expired and the
    /// lock been granted to another; wait for the clock to move and look at
    /// the queue again (`None`).
    async fn grant(
        &mut self,
        ctx: &Ctx,
        name: &str,
        proof: OwnNodeProof,
    ) -> std::result::Result<Option<Arc<Holding>>, Step> {
        // A cancel that races with the grant wins (section 4, step 6).
        if ctx.cancelled() {
            return Err(Step::Fail(Error::cancelled("acquire")));
        }
        if !self.session.clock.is_safe() {
            log::info!("zklock: {}/{name} is first, but the session is not safely alive; waiting", ctx.path);
            ctx.race(self.session.clock_advanced()).await?;
            return Ok(None);
        }
        let Some(czxid) = self.node.as_ref().map(|n| n.czxid) else { return Err(Step::Restart) };
        let sequence = names::parse_child(name).map(|n| n.sequence).unwrap_or(-1);
        let holding = Arc::new(Holding {
            shared: ctx.shared.clone(),
            session: self.session.clone(),
            lock_path: ctx.path.clone(),
            name: name.to_owned(),
            sequence,
            token: u64::try_from(czxid).unwrap_or(0),
            count: AtomicUsize::new(1),
            status: Mutex::new(Status { state: LockState::Held, reason: None }),
            callbacks: Mutex::new(Vec::new()),
            stop: watch::channel(false).0,
            monitor: Mutex::new(None),
            watch_armed: AtomicBool::new(proof.watch.is_some()),
        });
        // The node now belongs to the holding: no cleanup by this attempt.
        self.node = None;
        let task = tokio::spawn(monitor(holding.clone(), proof));
        if let Ok(mut slot) = holding.monitor.lock() {
            *slot = Some(task);
        }
        Ok(Some(holding))
    }

    /// Deletes what this attempt left behind (timeout, cancel, error):
    /// within [`CLEANUP_GRACE`] if ZooKeeper answers, else in the
    /// background, so that a failed acquire returns promptly even while
    /// the server is silent.
    async fn cleanup(&mut self, ctx: &Ctx) {
        if let Some(node) = self.node.take() {
            let path = format!("{}/{}", ctx.path, node.name);
            delete_node(&ctx.shared, &self.session, path, false, Some(CLEANUP_GRACE)).await;
        } else if self.unknown_create {
            let what = Cleanup::Prefix { parent: ctx.path.clone(), prefix: self.protected.clone() };
            spawn_cleanup(ctx.shared.clone(), self.session.clone(), what);
        }
    }
}

/// The whole acquire (section 4): attempts until held, failed or cancelled.
async fn acquire(ctx: Ctx) -> Result<Arc<Holding>> {
    loop {
        ctx.interrupted()?;
        let session = ctx.race(ctx.shared.session(ctx.deadline)).await??;
        let uuid = uuid::Uuid::new_v4();
        let mut attempt = Attempt {
            session,
            name_prefix: names::node_name_prefix(ctx.mode, &uuid),
            protected: names::protected_prefix(&uuid),
            node: None,
            unknown_create: false,
        };
        match attempt.run(&ctx).await {
            Ok(holding) => return Ok(holding),
            Err(Step::Restart) => attempt.cleanup(&ctx).await,
            Err(Step::Fail(e)) => {
                attempt.cleanup(&ctx).await;
                return Err(e);
            },
        }
    }
}

type EventFuture = Pin<Box<dyn Future<Output = zk::WatchedEvent> + Send>>;

enum Wake {
    Stop,
    Node(zk::WatchedEvent),
    /// The session state changed (the connection may be another one now).
    StateChanged,
    Other,
}

/// Follows a held lock until it is released or lost (section 5): session
/// state, deletion of our node, and the safety clock. It starts from the
/// grant's proof: its session-state watcher (any change since the proving
/// request was sent means the connection dropped: Suspended until a
/// recheck) and the watch on our node the proving read set; without one
/// (the grant's proof was the first list) it starts by reading our node
/// with a watch. Release aborts this task, which drops the watch (the
/// client sends removeWatches) before the delete, so a release notifies
/// only the next waiter, not ourselves.
async fn monitor(h: Arc<Holding>, proof: OwnNodeProof) {
    let session = h.session.clone();
    let OwnNodeProof { watch, mut states } = proof;
    let mut stop = h.stop.subscribe();
    let mut node_watch: Option<EventFuture> = match watch {
        Some(w) => Some(w),
        None => {
            let first = match session.zk() {
                // Only for this read: a client kept here would keep the
                // session open after Client::close.
                Ok(zk) => tokio::select! {
                    _ = stop.wait_for(|s| *s) => return,
                    r = tokio::time::timeout(h.shared.options.operation_timeout, zk.get_and_watch_data(&h.node_path())) => r.ok(),
                },
                Err(_) => None,
            };
            match first {
                Some(Ok((_, stat, w))) if stat.ephemeral_owner == session.id => {
                    h.watch_armed.store(true, Ordering::Release);
                    Some(Box::pin(w.changed()))
                },
                Some(Ok(_)) => {
                    h.lose(ErrorKind::LockLost, "our lock node is owned by another session".into());
                    return;
                },
                Some(Err(zk::Error::NoNode)) => {
                    h.lose(ErrorKind::LockLost, "our lock node was deleted".into());
                    return;
                },
                // Session gone: the loop below reports it. Connection
                // trouble: suspended until a recheck (which sets the
                // watch) succeeds.
                Some(Err(e)) if session_gone(&e) => None,
                _ => {
                    h.set_state(LockState::Suspended, None);
                    None
                },
            }
        },
    };
    // Whether the session state changed since it was last looked at: the
    // connection may have dropped and come back in between.
    let mut reconnected = states.changed().now_or_never().is_some();
    loop {
        if *stop.borrow() {
            return;
        }
        if h.shared.is_closed() {
            // Closing ends the session: lost, without passing through
            // Suspended on the way (lose() reports it as Closed).
            h.lose(ErrorKind::Closed, "the client was closed".into());
            return;
        }
        let zs = states.state();
        if zs.is_terminated() {
            let kind = if zs == zk::SessionState::Closed { ErrorKind::Closed } else { ErrorKind::LockLost };
            h.lose(kind, format!("the session {:#x} ended ({zs})", session.id));
            return;
        }
        let connected = matches!(zs, zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly);
        let safe = Instant::now() < session.safe_until();
        match h.state() {
            LockState::Held if reconnected || !connected || !safe => h.set_state(LockState::Suspended, None),
            LockState::Suspended if connected && safe => match recheck(&h).await {
                Ok(Some(w)) => {
                    node_watch = Some(Box::pin(w.changed()));
                    h.watch_armed.store(true, Ordering::Release);
                    h.set_state(LockState::Held, None);
                },
                Ok(None) => {
                    h.lose(ErrorKind::LockLost, "after reconnecting, our node is gone or not ours".into());
                    return;
                },
                Err(()) => {},
            },
            LockState::Lost | LockState::Released => return,
            _ => {},
        }
        reconnected = false;
        let wake_at = if h.state() == LockState::Held {
            session.safe_until()
        } else {
            Instant::now() + Duration::from_millis(250)
        };
        let wake = {
            let node = async {
                match node_watch.as_mut() {
                    Some(f) => f.await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = stop.wait_for(|s| *s) => Wake::Stop,
                ev = node => Wake::Node(ev),
                _ = states.changed() => Wake::StateChanged,
                _ = tokio::time::sleep_until(wake_at.into()) => Wake::Other,
                _ = session.clock_advanced() => Wake::Other,
            }
        };
        match wake {
            Wake::Stop => return,
            Wake::StateChanged => reconnected = true,
            Wake::Other => {},
            Wake::Node(ev) => {
                node_watch = None;
                h.watch_armed.store(false, Ordering::Release);
                match ev.event_type {
                    zk::EventType::NodeDeleted => {
                        h.lose(ErrorKind::LockLost, "our lock node was deleted".into());
                        return;
                    },
                    zk::EventType::Session => {},
                    // Data changed (someone wrote to our node): watch again.
                    _ => match recheck(&h).await {
                        Ok(Some(w)) => {
                            node_watch = Some(Box::pin(w.changed()));
                            h.watch_armed.store(true, Ordering::Release);
                        },
                        Ok(None) => {
                            h.lose(ErrorKind::LockLost, "our lock node is gone or not ours".into());
                            return;
                        },
                        Err(()) => h.set_state(LockState::Suspended, None),
                    },
                }
            },
        }
    }
}

/// Reads our node with a watch: `Some` if it exists and our session owns it,
/// `None` if not, `Err` if ZooKeeper did not answer.
async fn recheck(h: &Holding) -> std::result::Result<Option<zk::OneshotWatcher>, ()> {
    let zk = h.session.zk().map_err(|_| ())?;
    let path = h.node_path();
    match tokio::time::timeout(h.shared.options.operation_timeout, zk.get_and_watch_data(&path)).await {
        Ok(Ok((_, stat, w))) => Ok((stat.ephemeral_owner == h.session.id).then_some(w)),
        Ok(Err(zk::Error::NoNode)) => Ok(None),
        Ok(Err(e)) if session_gone(&e) => Ok(None),
        _ => Err(()),
    }
}

/// A lock handle: exclusive, read or write side, on one path.
///
/// Ownership belongs to the handle, not to a thread: a handle that holds the
/// lock and acquires again gets another guard on the same node (reentrant);
/// the node is deleted when the last of its guards is released. `Lock` is
/// `Send + Sync` and cheap to clone; clones are the same handle (one
/// ownership, one [`Lock::cancel`]). Its methods without `_async` block the
/// calling thread; the futures of the `_async` ones run on the client's
/// runtime and can be awaited from any executor.
#[derive(Clone)]
pub struct Lock {
    inner: Arc<LockInner>,
}

/// What the clones of one [`Lock`] share.
struct LockInner {
    client: Client,
    path: String,
    mode: LockMode,
    options: LockOptions,
    cancel: Arc<CancelState>,
    acquiring: Arc<tokio::sync::Mutex<()>>,
    held: HeldSlot,
    /// The other side of a [`ReadWriteLock`] (its held slot), if any.
    sibling: Option<HeldSlot>,
    seq_hint: Arc<SeqHint>,
}

type HeldSlot = Arc<Mutex<Option<Arc<Holding>>>>;

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock").field("path", &self.inner.path).field("mode", &self.inner.mode).finish()
    }
}

impl Lock {
    pub(crate) fn new(client: Client, path: &str, mode: LockMode, options: LockOptions) -> Lock {
        Self::with_slots(client, path, mode, options, Arc::default(), None)
    }

    fn with_slots(
        client: Client,
        path: &str,
        mode: LockMode,
        options: LockOptions,
        held: HeldSlot,
        sibling: Option<HeldSlot>,
    ) -> Lock {
        Lock {
            inner: Arc::new(LockInner {
                client,
                path: path.to_owned(),
                mode,
                options,
                cancel: Arc::default(),
                acquiring: Arc::default(),
                held,
                sibling,
                seq_hint: Arc::default(),
            }),
        }
    }

    /// What holding the other side of this handle's read/write pair means
    /// for an acquire: refuse an upgrade, or downgrade (the write node's
    /// sequence).
    fn pair_rule(&self) -> Result<Option<i64>> {
        let Some(sibling) = &self.inner.sibling else { return Ok(None) };
        let other = sibling.lock().ok().and_then(|s| s.clone()).filter(|h| h.is_live());
        match (self.inner.mode, other) {
            (LockMode::Write, Some(_)) => Err(Error::new(
                ErrorKind::WouldDeadlock,
                format!(
                    "read-to-write upgrade on {} refused: this handle holds the read lock, and waiting for the \
                     write lock behind it would deadlock; release the read lock first",
                    self.inner.path
                ),
            )),
            (LockMode::Read, Some(writer)) => Ok(Some(writer.sequence)),
            _ => Ok(None),
        }
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// The mode of this handle.
    pub fn mode(&self) -> LockMode {
        self.inner.mode
    }

    /// Acquires the lock, waiting at most `timeout` in total (`None`: no
    /// limit; zero: try once without waiting). Returns a guard; the lock is
    /// held until every guard of this handle is released or dropped. Blocks
    /// the calling thread; [`Lock::acquire_async`] is the same call as a
    /// future. `acquire(t)` is `acquire_with(AcquireOptions::new().timeout(t))`.
    ///
    /// One deadline covers every wait and retry. On timeout, cancel or error
    /// our node is deleted (in the background if ZooKeeper cannot be reached
    /// now). A session that expires while waiting costs our place: we
    /// queue again with a new session.
    ///
    /// # Errors
    /// `ConnectionLoss` if this handle holds the lock but it is not safely
    /// held now (suspended: see [`Guard::check`]); `Timeout`, `Cancelled`
    /// (see [`Lock::cancel_handle`]), `Closed`,
    /// `InvalidArgument` for bad lock options, `ZooKeeper` for refusals such
    /// as missing permissions on the lock path.
    pub fn acquire(&self, timeout: Option<Duration>) -> Result<Guard> {
        self.acquire_with(&AcquireOptions::new().timeout(timeout))
    }

    /// [`Lock::acquire`] with per-call options: a timeout and a
    /// [`CancelToken`] that cancels this call only (and that may be
    /// cancelled before the call starts). Blocks the calling thread.
    ///
    /// # Errors
    /// As [`Lock::acquire`]; `Cancelled` once the call's token is cancelled.
    pub fn acquire_with(&self, options: &AcquireOptions) -> Result<Guard> {
        let call = call_token(options);
        let work = self.start_acquire(options, call)?;
        self.inner.client.shared().block_on(work)?
    }

    /// [`Lock::acquire_with`] as a future that any executor can await (the
    /// work runs on the client's own runtime; the calling thread never
    /// blocks). Dropping the future before it completes cancels the call:
    /// our node is deleted as for a timeout, and a guard granted at that
    /// moment is released.
    ///
    /// # Errors
    /// As [`Lock::acquire_with`].
    pub fn acquire_async(&self, options: AcquireOptions) -> impl Future<Output = Result<Guard>> + Send + 'static {
        let call = call_token(&options);
        let started = self.start_acquire(&options, call.clone()).map(|work| self.inner.client.shared().run(work));
        async move {
            // Cancels the call if this future is dropped before its output.
            let on_drop = call.drop_guard();
            let out = started?.await;
            on_drop.disarm();
            out?
        }
    }

    /// [`Lock::acquire_with`] completing through `done`, for programs with
    /// their own event loop: returns at once, and `done` is called exactly
    /// once with the outcome, on the client's event thread (where blocking
    /// zklock calls are allowed; it should return promptly, as other
    /// callbacks wait). Cancel through the options' [`CancelToken`].
    ///
    /// # Errors
    /// An error found before the call starts (`Closed`, `InvalidArgument`,
    /// a suspended reentrant hold) is returned here, and then `done` is
    /// never called.
    pub fn acquire_then(
        &self,
        options: &AcquireOptions,
        done: impl FnOnce(Result<Guard>) + Send + 'static,
    ) -> Result<()> {
        let work = self.start_acquire(options, call_token(options))?;
        self.inner.client.shared().spawn_then(work, done)
    }

    /// Tries once without waiting: `Ok(None)` if someone else holds the lock.
    ///
    /// # Errors
    /// As [`Lock::acquire`], except that a held lock is not an error.
    pub fn try_acquire(&self) -> Result<Option<Guard>> {
        try_once_outcome(self.acquire(Some(Duration::ZERO)))
    }

    /// [`Lock::try_acquire`] as a future (see [`Lock::acquire_async`]).
    ///
    /// # Errors
    /// As [`Lock::try_acquire`].
    pub fn try_acquire_async(&self) -> impl Future<Output = Result<Option<Guard>>> + Send + 'static {
        let acquire = self.acquire_async(AcquireOptions::new().timeout(Some(Duration::ZERO)));
        async move { try_once_outcome(acquire.await) }
    }

    /// Checks what can be checked at once and returns the acquire's work,
    /// to run on the client's runtime. A reentrant acquire is done here.
    fn start_acquire(
        &self,
        options: &AcquireOptions,
        call: tokio_util::sync::CancellationToken,
    ) -> Result<Pin<Box<dyn Future<Output = Result<Guard>> + Send>>> {
        if self.inner.client.is_closed() {
            return Err(self.inner.client.shared().closed_error());
        }
        self.inner.options.validate()?;
        if call.is_cancelled() {
            return Err(Error::cancelled("acquire"));
        }
        if let Some(g) = self.reenter()? {
            return Ok(Box::pin(std::future::ready(Ok(g))));
        }
        let downgrade = self.pair_rule()?;
        let shared = self.inner.client.shared().clone();
        let epoch = self.inner.cancel.epoch.load(Ordering::Acquire);
        let timeout = options.timeout;
        let try_once = timeout == Some(Duration::ZERO);
        let ctx = Ctx {
            shared: shared.clone(),
            path: self.inner.path.clone(),
            mode: self.inner.mode,
            data: self.inner.options.data.clone(),
            // Trying once must not wait for a silent server either: it has
            // the operation timeout. A timeout too large to represent is no
            // deadline at all.
            deadline: if try_once {
                Instant::now().checked_add(shared.options.operation_timeout)
            } else {
                timeout.and_then(|t| Instant::now().checked_add(t))
            },
            try_once,
            downgrade,
            cancel: self.inner.cancel.clone(),
            epoch,
            call,
            seq_hint: self.inner.seq_hint.clone(),
        };
        let acquiring = self.inner.acquiring.clone();
        let held = self.inner.held.clone();
        let client = self.inner.client.clone();
        Ok(Box::pin(async move {
            // Acquires on one handle queue behind each other, then reenter.
            let _turn = ctx.race(acquiring.lock()).await?;
            let holding = match reenter_slot(&held)? {
                Some(h) => h,
                None => {
                    let h = acquire(ctx).await?;
                    if let Ok(mut slot) = held.lock() {
                        *slot = Some(h.clone());
                    }
                    h
                },
            };
            Ok(Guard { client, holding, slot: held, released: Default::default() })
        }))
    }

    /// A handle that cancels this lock's acquires in progress, from any thread.
    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle { state: self.inner.cancel.clone() }
    }

    /// Cancels the acquires in progress on this handle (see [`CancelHandle`]).
    pub fn cancel(&self) {
        self.cancel_handle().cancel()
    }

    /// Whether this handle holds the lock now (held or suspended; not once
    /// the client is closed).
    pub fn is_held(&self) -> bool {
        self.inner
            .held
            .lock()
            .ok()
            .and_then(|s| s.clone())
            .is_some_and(|h| matches!(h.reported_state(), LockState::Held | LockState::Suspended))
    }

    fn reenter(&self) -> Result<Option<Guard>> {
        let Some(holding) = reenter_slot(&self.inner.held)? else { return Ok(None) };
        Ok(Some(Guard {
            client: self.inner.client.clone(),
            holding,
            slot: self.inner.held.clone(),
            released: Default::default(),
        }))
    }
}

/// A read/write lock on one path: a read side and a write side that know
/// each other (Curator `InterProcessReadWriteLock` compatible).
///
/// - Readers share; a writer excludes everyone; FIFO: a reader queued after
///   a waiting writer waits for it, so writers do not starve.
/// - Write to read **downgrade**: acquiring the read side while holding the
///   write side succeeds at once (the read node takes the write node's
///   sequence, so no writer queued behind can slip in); then release the
///   write guard.
/// - Read to write **upgrade** is refused with `WouldDeadlock` (waiting for
///   the write lock behind our own read node would never end).
///
/// Each side is reentrant on its own. `Send + Sync`; cheap to clone (clones
/// are the same pair).
#[derive(Clone, Debug)]
pub struct ReadWriteLock {
    read: Lock,
    write: Lock,
}

impl ReadWriteLock {
    pub(crate) fn new(client: Client, path: &str, options: LockOptions) -> ReadWriteLock {
        let (read_slot, write_slot): (HeldSlot, HeldSlot) = (Arc::default(), Arc::default());
        ReadWriteLock {
            read: Lock::with_slots(
                client.clone(),
                path,
                LockMode::Read,
                options.clone(),
                read_slot.clone(),
                Some(write_slot.clone()),
            ),
            write: Lock::with_slots(client, path, LockMode::Write, options, write_slot, Some(read_slot)),
        }
    }

    /// The read (shared) side. Clone it for an owned handle (see
    /// [`ReadWriteLock::into_sides`]).
    pub fn read_lock(&self) -> &Lock {
        &self.read
    }

    /// The write (exclusive) side. Clone it for an owned handle.
    pub fn write_lock(&self) -> &Lock {
        &self.write
    }

    /// The two sides as owned handles, `(read, write)`: they still know
    /// each other (downgrade, upgrade refused) when kept apart.
    pub fn into_sides(self) -> (Lock, Lock) {
        (self.read, self.write)
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        self.read.path()
    }
}

/// The cancellation of one acquire call: a child of the caller's token, so
/// that the call's own cancel (a dropped future) reaches no other call.
fn call_token(options: &AcquireOptions) -> tokio_util::sync::CancellationToken {
    options.cancel.as_ref().map_or_else(Default::default, |t| t.token.child_token())
}

/// A try-once acquire's outcome: its `Timeout` means "held by someone else".
fn try_once_outcome(out: Result<Guard>) -> Result<Option<Guard>> {
    match out {
        Ok(g) => Ok(Some(g)),
        Err(e) if e.kind() == ErrorKind::Timeout => Ok(None),
        Err(e) => Err(e),
    }
}

/// If the handle holds a live lock, counts one more guard on it, but only
/// while it is safely held (a reentrant grant is a grant: it must not be
/// made on a lock that may already be someone else's). A lock that is
/// suspended or past its safety clock fails the acquire with the error
/// [`Guard::check`] gives; a lost one is not reentered (`None`: acquire
/// anew).
fn reenter_slot(slot: &Mutex<Option<Arc<Holding>>>) -> Result<Option<Arc<Holding>>> {
    let Ok(slot) = slot.lock() else { return Ok(None) };
    let Some(h) = slot.as_ref() else { return Ok(None) };
    if !h.is_live() {
        return Ok(None);
    }
    h.check()?;
    h.count.fetch_add(1, Ordering::AcqRel);
    Ok(Some(h.clone()))
}

/// Proof of holding a lock. Released by [`Guard::release`] or on drop.
///
/// `Guard` is `Send + Sync`: it may be released from any thread.
pub struct Guard {
    client: Client,
    holding: Arc<Holding>,
    slot: Arc<Mutex<Option<Arc<Holding>>>>,
    released: AtomicBool,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("node", &self.holding.node_path())
            .field("token", &self.holding.token)
            .field("state", &self.holding.state())
            .finish()
    }
}

impl Guard {
    /// The full path of our lock node.
    pub fn node_path(&self) -> String {
        self.holding.node_path()
    }

    /// The sequence number of our lock node.
    pub fn sequence(&self) -> i64 {
        self.holding.sequence
    }

    /// The fencing token of this grant: the creation zxid of our node. It
    /// only grows over the ensemble's life, so successive grants of a lock
    /// have strictly larger tokens; give it to the protected resource and
    /// have it reject tokens smaller than the largest it has seen.
    pub fn fencing_token(&self) -> u64 {
        self.holding.token
    }

    /// The id of the session that holds the lock.
    pub fn session_id(&self) -> i64 {
        self.holding.session.id
    }

    /// The current state of this guard: `Released` once this guard is
    /// released (even while the handle's other guards keep the lock), `Lost`
    /// once the client is closed.
    pub fn state(&self) -> LockState {
        if self.released.load(Ordering::Acquire) {
            return LockState::Released;
        }
        self.holding.reported_state()
    }

    /// Ok while the lock is safely held: state `Held`, connected, and the
    /// safety clock ([`Guard::safe_until`]) has not run out, so the
    /// ZooKeeper leader cannot have expired the session yet.
    ///
    /// # Errors
    /// `ConnectionLoss` while suspended (may come back), `LockLost` once
    /// lost, `Closed` once the client is closed, `NotHeld` after this guard
    /// is released.
    pub fn check(&self) -> Result<()> {
        if self.released.load(Ordering::Acquire) {
            return Err(Error::new(
                ErrorKind::NotHeld,
                format!("this guard of {} was released", self.holding.node_path()),
            ));
        }
        self.holding.check()
    }

    /// Until when the lock is safely ours even if ZooKeeper stops answering
    /// now: the latest time at which the ZooKeeper leader is known to have
    /// processed a report of this session's activity, plus the session
    /// timeout, minus a tenth of it for clock-rate drift (protocol document,
    /// section 5). The leader cannot expire the session, and so grant the
    /// lock to anyone else, before then; [`Guard::check`] fails from then
    /// on. While connected it keeps moving forward, by the heartbeat (a
    /// `sync` every eighth of the session timeout); it runs about half a
    /// session timeout ahead of now. `None` once the lock is lost or this
    /// guard is released.
    pub fn safe_until(&self) -> Option<Instant> {
        matches!(self.state(), LockState::Held | LockState::Suspended).then(|| self.holding.session.safe_until())
    }

    /// Registers `callback` to be told of every state change (Held,
    /// Suspended, Lost) of this lock. It runs on the client's event thread,
    /// one call at a time in order; it may call any zklock function but
    /// should return promptly (other callbacks wait). If the lock is no
    /// longer `Held` when registering, the callback is called once soon
    /// with the current state (on a released guard: once, with `Released`,
    /// and not registered). A release is not reported to callbacks: it is
    /// the caller's own act.
    pub fn on_state_change(&self, callback: impl Fn(LockState) + Send + Sync + 'static) {
        let cb: Callback = Arc::new(callback);
        if !self.released.load(Ordering::Acquire) {
            if let Ok(mut cbs) = self.holding.callbacks.lock() {
                cbs.push(cb.clone());
            }
        }
        let state = self.state();
        if state != LockState::Held {
            self.holding.shared.post_event(Box::new(move || cb(state)));
        }
    }

    /// Releases this guard. The node is deleted when this is the handle's
    /// last guard. Idempotent in effect: a second call fails with `NotHeld`.
    /// Blocks the calling thread; [`Guard::release_async`] is the same call
    /// as a future.
    ///
    /// # Errors
    /// `NotHeld` if this guard was already released; `LockLost` if the lock
    /// had been lost before the release (the critical section may have run
    /// without the lock; our node is cleaned up all the same).
    pub fn release(&self) -> Result<ReleaseStatus> {
        match self.begin_release()? {
            Releasing::Done(out) => out,
            Releasing::Delete(work) => self.client.shared().block_on(work.finish())?,
        }
    }

    /// [`Guard::release`] as a future that any executor can await. The
    /// release happens even if the future is dropped unfinished (this guard
    /// counts as released from the first poll's start: the call is made
    /// when this method is called).
    ///
    /// # Errors
    /// As [`Guard::release`].
    pub fn release_async(&self) -> impl Future<Output = Result<ReleaseStatus>> + Send + 'static {
        let started = self.begin_release().map(|r| match r {
            Releasing::Done(out) => Box::pin(std::future::ready(Ok(out))) as Pin<Box<dyn Future<Output = _> + Send>>,
            Releasing::Delete(work) => Box::pin(self.client.shared().run(work.finish())),
        });
        async move { started?.await? }
    }

    /// The part of a release done at once: mark this guard released and,
    /// for the last guard of the node, stop following it; what remains is
    /// the deletion (to run on the runtime).
    fn begin_release(&self) -> Result<Releasing> {
        if self.released.swap(true, Ordering::AcqRel) {
            return Err(Error::new(ErrorKind::NotHeld, format!("{} was already released", self.holding.node_path())));
        }
        if self.holding.count.fetch_sub(1, Ordering::AcqRel) > 1 {
            // An inner guard: the node stays for the others, but a loss is
            // this guard's news too (its critical section may have run
            // without the lock).
            return Ok(Releasing::Done(match self.holding.check() {
                Err(e) if e.kind() != ErrorKind::ConnectionLoss => Err(e),
                _ => Ok(ReleaseStatus::Released),
            }));
        }
        if let Ok(mut slot) = self.slot.lock() {
            if slot.as_ref().is_some_and(|h| Arc::ptr_eq(h, &self.holding)) {
                *slot = None;
            }
        }
        let state = self.holding.state();
        // Read before the monitor stops (it clears this when its watch fires).
        let known_ours = state == LockState::Held && self.holding.watch_armed.load(Ordering::Acquire);
        let lost = self.holding.check().err().filter(|e| e.kind() != ErrorKind::ConnectionLoss);
        self.holding.set_state(LockState::Released, None);
        self.holding.stop.send_replace(true);
        let monitor = self.holding.monitor.lock().ok().and_then(|mut m| m.take());
        Ok(Releasing::Delete(Deleting { holding: self.holding.clone(), state, known_ours, lost, monitor }))
    }
}

/// What [`Guard::begin_release`] leaves to do.
enum Releasing {
    /// Nothing: an inner reentrant guard.
    Done(Result<ReleaseStatus>),
    /// Delete the node.
    Delete(Deleting),
}

/// The deletion of a released node, with what was known at the release.
struct Deleting {
    holding: Arc<Holding>,
    state: LockState,
    known_ours: bool,
    lost: Option<Error>,
    monitor: Option<tokio::task::JoinHandle<()>>,
}

impl Deleting {
    async fn finish(self) -> Result<ReleaseStatus> {
        let Deleting { holding: h, state, known_ours, lost, monitor } = self;
        // End the monitor first: dropping its watch on our node queues
        // removeWatches ahead of the delete.
        if let Some(task) = monitor {
            task.abort();
            let _ = task.await;
        }
        let deletion = match state {
            // Our node was deleted, is not ours any more, or went with the
            // session: nothing of ours to delete (a node of the same name
            // now is someone else's).
            LockState::Lost => Deletion::Gone,
            // Held with an armed watch: one delete at once. (A third party
            // that deletes our node and makes another of the same name in
            // the one round trip before our delete cannot be told apart:
            // ZooKeeper has no delete-if-owner.) Otherwise (suspended, or
            // the watch not yet armed by a read showing the node ours) the
            // node is read first.
            _ => delete_node(&h.shared, &h.session, h.node_path(), known_ours, None).await,
        };
        match (lost, deletion) {
            (Some(e), _) => Err(e),
            (None, Deletion::Deleted) => Ok(ReleaseStatus::Released),
            (None, Deletion::Pending) => Ok(ReleaseStatus::Pending),
            (None, Deletion::Gone) => Err(Error::new(
                ErrorKind::LockLost,
                format!(
                    "lock {} lost before the release: the node was gone or another session's (it was left alone)",
                    h.node_path()
                ),
            )),
        }
    }
}

impl Drop for Guard {
    /// Releases the guard if it was not released. Blocks until the delete
    /// is answered, except inside an async runtime (a tokio one, or the
    /// client's own runtime): there the delete runs in the background, so
    /// a dropped guard never blocks an executor.
    fn drop(&mut self) {
        if self.released.load(Ordering::Acquire) || self.client.shared().forked() {
            return;
        }
        let Ok(Releasing::Delete(work)) = self.begin_release() else { return };
        if tokio::runtime::Handle::try_current().is_ok() {
            drop(self.client.shared().handle.spawn(work.finish()));
        } else {
            let _ = self.client.shared().block_on(work.finish());
        }
    }
}

/// Compile-time check of the thread-safety promises in the docs.
const _: fn() = || {
    fn is<T: Send + Sync>() {}
    is::<Client>();
    is::<Lock>();
    is::<Guard>();
    is::<CancelHandle>();
    is::<CancelToken>();
    is::<AcquireOptions>();
    is::<ReadWriteLock>();
};

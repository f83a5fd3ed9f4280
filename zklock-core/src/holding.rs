//! Holding a lock (protocol doc section 5): the holding of one node, the
//! monitor that follows it (session state, deletion of our node; the
//! safety clock is `clock.rs`), and the deletion a release asks for, all
//! run by zklock-proto's holder machine. The guard that callers hold is
//! `lock.rs`'s; nothing here knows it.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use crate::zk::{self, ClientExt as _};
use tokio::sync::watch;
use zklock_proto::hold as proto;

use crate::cleanup::delete_node;
use crate::client::{Session, Shared};
use crate::error::{Error, ErrorKind, Result};
use crate::listeners::{Listener, Listeners};
use crate::requests::{failure, notice, stat_of};
use crate::state::{LockState, ReleaseStatus};

pub(crate) type Callback = Listener<LockState>;

/// The data a revoker writes to a holder's node to ask it to let go
/// (Curator's `LockInternals.REVOKE_MESSAGE`).
pub(crate) const REVOKE: &[u8] = b"__REVOKE__";

/// How long a recheck of our node that got no answer waits before the next.
const RECHECK_AGAIN: Duration = Duration::from_millis(250);

/// The holder's machine (`zklock_proto::hold`) and the error its loss is
/// reported with.
pub(crate) struct HoldState {
    machine: proto::Hold,
    reason: Option<Error>,
}

/// One held lock node, shared by the guards of its node (more than one on a
/// reentrant handle).
pub(crate) struct Holding {
    pub(crate) shared: Arc<Shared>,
    pub(crate) session: Arc<Session>,
    pub(crate) lock_path: String,
    pub(crate) name: String,
    pub(crate) sequence: i64,
    pub(crate) token: u64,
    pub(crate) count: AtomicUsize,
    /// The protocol's decisions: fed by the monitor and the release.
    pub(crate) hold: Mutex<HoldState>,
    pub(crate) callbacks: Arc<Listeners<LockState>>,
    /// Told when someone asks the holder to let go (Curator's revocation:
    /// `__REVOKE__` written to our node).
    pub(crate) revocations: Arc<Listeners<()>>,
    /// Someone asked (a read of our node found `__REVOKE__`).
    pub(crate) revoke_requested: std::sync::atomic::AtomicBool,
    /// [`Holding::read_for_revocation_once`] was called.
    revoke_read: std::sync::atomic::AtomicBool,
    /// The modification zxid of the newest request told (each is told
    /// once).
    revoke_mzxid: std::sync::atomic::AtomicI64,
    /// When the lock was granted (the hold time's start).
    granted_at: Instant,
    /// The hold time was counted (at the release or the loss), or is not
    /// to be ([`Handover::counted`]).
    hold_counted: std::sync::atomic::AtomicBool,
    /// The metrics count this holding ([`Handover::counted`]).
    counted: bool,
    pub(crate) stop: watch::Sender<bool>,
    /// Moves on every state change and every release of one of its guards
    /// (what [`Guard::lost`] waits for).
    pub(crate) changes: watch::Sender<u64>,
    /// The task that follows this holding (and owns the watches on our
    /// node).
    pub(crate) monitor: Mutex<Option<tokio::task::JoinHandle<Followed>>>,
}

/// What the grant hands the holder: the watch on our node its proof left
/// (armed by a read that showed the node ours), if any, and the session
/// state as of just before the request that began the proof was sent (a
/// disconnect after the proof is reported even when it is over before the
/// monitor first runs).
pub(crate) struct Handover {
    pub(crate) watch: Option<zk::Watch>,
    pub(crate) states: zk::StateWatcher,
    /// Whether the client's metrics count this holding (its suspensions,
    /// loss and hold time): not for zklock's own (a semaphore's mutex).
    pub(crate) counted: bool,
    /// A data change was notified while the acquire waited: the holder
    /// reads our node at once (as if its watch fired), so that a
    /// revocation request written to it before the grant is seen, as
    /// Curator's holder reads its node's data when granted.
    pub(crate) reread: bool,
}

fn lock_state(state: proto::State) -> LockState {
    match state {
        proto::State::Held => LockState::Held,
        proto::State::Suspended => LockState::Suspended,
        proto::State::Lost(_) => LockState::Lost,
        proto::State::Released => LockState::Released,
    }
}

impl Holding {
    /// The holding of a granted node, and its monitor started on the
    /// runtime.
    pub(crate) fn start(
        shared: Arc<Shared>,
        session: Arc<Session>,
        lock_path: String,
        name: String,
        czxid: i64,
        mut handover: Handover,
    ) -> Arc<Holding> {
        let sequence = crate::names::parse_child(&name).map(|n| n.sequence).unwrap_or(-1);
        let changed = handover.states.has_changed();
        let connected = handover.states.state() == zk::SessionState::Connected;
        let safe = Instant::now() < session.safe_until();
        let machine = proto::Hold::new(proto::Config {
            path: format!("{lock_path}/{name}"),
            session: session.id,
            watch: handover.watch.is_some(),
            changed,
            connected,
            safe,
            bugs: zklock_proto::acquire::Bugs::default(),
        });
        let holding = Arc::new(Holding {
            shared,
            session,
            lock_path,
            name,
            sequence,
            token: u64::try_from(czxid).unwrap_or(0),
            count: AtomicUsize::new(1),
            hold: Mutex::new(HoldState { machine, reason: None }),
            callbacks: Arc::default(),
            revocations: Arc::default(),
            revoke_requested: std::sync::atomic::AtomicBool::new(false),
            revoke_read: std::sync::atomic::AtomicBool::new(false),
            revoke_mzxid: std::sync::atomic::AtomicI64::new(i64::MIN),
            granted_at: Instant::now(),
            hold_counted: std::sync::atomic::AtomicBool::new(!handover.counted),
            counted: handover.counted,
            stop: watch::channel(false).0,
            changes: watch::channel(0).0,
            monitor: Mutex::new(None),
        });
        let task = tokio::spawn(monitor(holding.clone(), handover, safe));
        if let Ok(mut slot) = holding.monitor.lock() {
            *slot = Some(task);
        }
        holding
    }

    pub(crate) fn node_path(&self) -> String {
        format!("{}/{}", self.lock_path, self.name)
    }

    /// Reads our node once (the first time this is called), in the
    /// background: a revocation request written before the grant, while
    /// the acquire waited, is then seen (outside attack round 18, F5).
    pub(crate) fn read_for_revocation_once(self: &Arc<Self>) {
        if self.revoke_read.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return;
        }
        let Ok(zk) = self.session.zk() else { return };
        let h = self.clone();
        let read = zk.get_data(&self.node_path()).value();
        let timeout = self.shared.options.operation_timeout;
        self.shared.handle.spawn(async move {
            if let Ok(Ok((data, stat))) = tokio::time::timeout(timeout, read).await {
                if data == REVOKE && stat.ephemeral_owner == h.session.id && h.is_live() {
                    h.revocation_requested(stat.mzxid);
                }
            }
        });
    }

    /// A read of our node found a revocation request, written at `mzxid`:
    /// remembered, and told to every revocation callback on the event
    /// thread, once per request (two reads may find the same one).
    fn revocation_requested(&self, mzxid: i64) {
        if self.revoke_mzxid.fetch_max(mzxid, std::sync::atomic::Ordering::AcqRel) >= mzxid {
            return;
        }
        self.revoke_requested.store(true, std::sync::atomic::Ordering::Release);
        log::info!("zklock: lock {} (session {:#x}): revocation requested", self.node_path(), self.session.id);
        let shared = &self.shared;
        self.revocations.notify((), |job| shared.post_event(job));
    }

    pub(crate) fn state(&self) -> LockState {
        self.hold.lock().map(|h| lock_state(h.machine.state())).unwrap_or(LockState::Lost)
    }

    pub(crate) fn is_live(&self) -> bool {
        matches!(self.state(), LockState::Held | LockState::Suspended)
    }

    /// The state as callers see it: a live lock of a closed client is lost
    /// (its node went with the session), even before the monitor says so.
    pub(crate) fn reported_state(&self) -> LockState {
        match self.state() {
            LockState::Held | LockState::Suspended if self.shared.is_closed() => LockState::Lost,
            state => state,
        }
    }

    /// Feeds the machine `event` (or nothing: its pending actions), reports
    /// the state changes it makes, and gives back its other actions.
    pub(crate) fn feed(&self, event: Option<proto::Event<zk::Error>>) -> Vec<proto::Action> {
        self.feed_if(event, false).unwrap_or_default()
    }

    /// [`Holding::feed`] for the monitor: an event that comes once the
    /// machine is no longer live (released or lost meanwhile, by another
    /// thread) is not fed but given back, for the release to feed: the
    /// actions it makes then are the release's (outside the monitor, which
    /// ends).
    fn feed_while_live(
        &self,
        event: Option<proto::Event<zk::Error>>,
    ) -> Result<Vec<proto::Action>, Option<proto::Event<zk::Error>>> {
        self.feed_if(event, true)
    }

    /// [`Holding::feed`], or with `only_live` the event back when the
    /// machine is not live.
    #[allow(clippy::type_complexity)]
    fn feed_if(
        &self,
        event: Option<proto::Event<zk::Error>>,
        only_live: bool,
    ) -> Result<Vec<proto::Action>, Option<proto::Event<zk::Error>>> {
        let (changes, rest) = {
            let Ok(mut h) = self.hold.lock() else { return Ok(Vec::new()) };
            if only_live && !h.machine.state().is_live() {
                return Err(event);
            }
            if let Some(event) = event {
                h.machine.handle(event);
            }
            let mut changes = Vec::new();
            let mut rest = Vec::new();
            while let Some(action) = h.machine.poll_action() {
                match action {
                    proto::Action::State(state) => {
                        if let proto::State::Lost(loss) = state {
                            h.reason = Some(self.loss_error(loss));
                        }
                        changes.push(lock_state(state));
                    },
                    other => rest.push(other),
                }
            }
            (changes, rest)
        };
        for state in changes {
            self.report(state);
        }
        Ok(rest)
    }

    /// The error a loss is reported with. Whatever the route (node
    /// deleted, session closed), a loss caused by closing the client is
    /// reported as Closed.
    fn loss_error(&self, loss: proto::Loss) -> Error {
        let (kind, why) = match loss {
            _ if self.shared.is_closed() => (ErrorKind::Closed, "the client was closed".to_owned()),
            proto::Loss::Closed => (ErrorKind::Closed, "the client was closed".to_owned()),
            proto::Loss::Deleted => (ErrorKind::LockLost, "our lock node was deleted".to_owned()),
            proto::Loss::NotOurs => (ErrorKind::LockLost, "our lock node is owned by another session".to_owned()),
            proto::Loss::GoneAfterReconnect => {
                (ErrorKind::LockLost, "after reconnecting, our node is gone or not ours".to_owned())
            },
            proto::Loss::SessionEnded => {
                (ErrorKind::LockLost, format!("the session {:#x} ended ({})", self.session.id, self.session.state()))
            },
        };
        Error::new(kind, format!("lock {} lost: {why}", self.node_path()))
    }

    /// Tells a state change: the `changes` watchers, the log and the
    /// callbacks on the event thread (not for a release: the caller's own
    /// act).
    fn report(&self, state: LockState) {
        if state == LockState::Suspended && self.shared.is_closed() {
            // Closing makes requests fail like a lost connection; it is not
            // one: the monitor reports Lost (Closed) instead.
            return;
        }
        let counters = &self.shared.counters;
        match state {
            LockState::Suspended if self.counted => counters.suspended(),
            LockState::Lost if self.counted && !self.shared.is_closed() => counters.lost(),
            _ => {},
        }
        if matches!(state, LockState::Lost | LockState::Released)
            && !self.hold_counted.swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            counters.held(self.granted_at.elapsed());
        }
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
        if state == LockState::Released {
            return;
        }
        let session = self.session.id;
        match state {
            // The caller closed the client: expected, not a warning (an
            // outside test saw one per lock a closing worker held).
            LockState::Lost if self.shared.is_closed() => {
                log::info!("zklock: lock {} (session {session:#x}) is lost: the client was closed", self.node_path())
            },
            LockState::Lost => log::warn!("zklock: lock {} (session {session:#x}) is lost", self.node_path()),
            LockState::Suspended => {
                log::info!("zklock: lock {} (session {session:#x}) is suspended", self.node_path())
            },
            _ => log::info!("zklock: lock {} (session {session:#x}) is {state:?} again", self.node_path()),
        }
        let shared = &self.shared;
        self.callbacks.notify(state, |job| shared.post_event(job));
    }

    /// Resolves once this holding is no longer live (lost or released);
    /// a suspension does not end it.
    pub(crate) async fn ended(&self) {
        let mut changes = self.changes.subscribe();
        while self.is_live() {
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    pub(crate) fn check(&self) -> Result<()> {
        let h = self.hold.lock().map_err(|_| Error::internal("holding mutex poisoned"))?;
        let state = lock_state(h.machine.state());
        if self.shared.is_closed() && state != LockState::Released {
            let why = self.shared.closed_error();
            return Err(Error::new(ErrorKind::Closed, format!("lock {} lost: {}", self.node_path(), why.message())));
        }
        match state {
            LockState::Released => Err(Error::new(ErrorKind::NotHeld, "the lock was released")),
            LockState::Lost => Err(h
                .reason
                .clone()
                .unwrap_or_else(|| Error::new(ErrorKind::LockLost, format!("lock {} lost", self.node_path())))),
            LockState::Suspended | LockState::Held => {
                let zs = self.session.state();
                if !matches!(zs, zk::SessionState::Connected) {
                    return Err(Error::new(
                        ErrorKind::ConnectionLoss,
                        format!(
                            "the lock is suspended: the connection to ZooKeeper is lost (session {zs}), so it may \
                             already be someone else's"
                        ),
                    ));
                }
                if Instant::now() >= self.session.safe_until() {
                    return Err(Error::new(
                        ErrorKind::ConnectionLoss,
                        "the lock is suspended: ZooKeeper has not confirmed the session for nearly a session \
                         timeout, so it may have expired and the lock be someone else's",
                    ));
                }
                if state == LockState::Suspended {
                    return Err(Error::new(
                        ErrorKind::ConnectionLoss,
                        "the lock is suspended: the connection to ZooKeeper came back, and zklock has not yet \
                         seen that our node is still ours",
                    ));
                }
                Ok(())
            },
        }
    }
}

/// A read of our node on its way: its reply (bounded by the operation
/// timeout) with the watch it leaves.
type Read = Pin<Box<dyn Future<Output = zk::Result<(Vec<u8>, zk::Stat, zk::Watch)>> + Send>>;

/// What the monitor hands back when it ends: its watches on our node, and
/// the read of our node it had on its way (a release may wait for it:
/// `proto::Action::AwaitRead`).
pub(crate) struct Followed {
    watches: Vec<zk::Watch>,
    read: Option<(zklock_proto::acquire::Id, Read)>,
    /// An event that came once the machine was released (or lost), not
    /// fed: the release feeds it.
    pending: Option<proto::Event<zk::Error>>,
}

/// Follows a held lock until it is released or lost (protocol section 5):
/// runs the holder's machine (`zklock_proto::hold`), feeding it the
/// replies to its reads of our node, the notifications of its watches on
/// our node, the session's state changes, the safety clock's verdict
/// (`safe`: what the machine was told at the start) and the close of the
/// client. Ends when the holding ends (`stop`, or the machine no longer
/// live) and gives back its watches on our node and its read on its way:
/// a release that deletes the node lets the watches fire
/// (`Watch::let_fire`: the delete's notification costs the server less
/// than a `removeWatches` request; it comes to nobody), any other end
/// drops them (the client sends `removeWatches`).
async fn monitor(h: Arc<Holding>, handover: Handover, mut safe: bool) -> Followed {
    let session = h.session.clone();
    let Handover { watch, mut states, reread, .. } = handover;
    // The machine was told of any change up to now.
    let _ = states.state();
    let mut stop = h.stop.subscribe();
    let mut watches: HashMap<zklock_proto::acquire::Id, zk::Watch> = HashMap::new();
    // With a data change seen while waiting, the machine is told that the
    // watch fired (it reads our node, leaving a new one), so the watch
    // handed over is not kept.
    let reread = reread && watch.is_some();
    if let Some(w) = watch.filter(|_| !reread) {
        watches.insert(proto::GRANT_WATCH, w);
    }
    let mut read: Option<(zklock_proto::acquire::Id, Read)> = None;
    let mut retry_at: Option<tokio::time::Instant> = None;
    let mut actions =
        h.feed(reread.then_some(proto::Event::Watch(proto::GRANT_WATCH, zklock_proto::acquire::Notice::Changed)));
    loop {
        for action in actions.drain(..) {
            match action {
                proto::Action::Send(id, zklock_proto::acquire::Request::GetData { path, .. }) => {
                    let timeout = h.shared.options.operation_timeout;
                    let reply: Read = match session.zk() {
                        Ok(zk) => {
                            let f = zk.get_and_watch_data(&path);
                            Box::pin(async move {
                                tokio::time::timeout(timeout, f).await.unwrap_or_else(|_| {
                                    Err(zk::Error::ConnectionLoss("no reply within the operation timeout".into()))
                                })
                            })
                        },
                        Err(_) => Box::pin(std::future::ready(Err(zk::Error::Closed))),
                    };
                    read = Some((id, reply));
                },
                proto::Action::Send(id, req) => log::error!("zklock: the holder asked for {req:?} ({id:?}): ignored"),
                proto::Action::DropWatch(id) => {
                    watches.remove(&id);
                    if read.as_ref().is_some_and(|(r, _)| *r == id) {
                        read = None;
                    }
                },
                proto::Action::RetryLater => retry_at = Some(tokio::time::Instant::now() + RECHECK_AGAIN),
                // The release's, which stops this task first.
                proto::Action::AwaitRead(_)
                | proto::Action::Delete { .. }
                | proto::Action::Released(_)
                | proto::Action::State(_) => {},
            }
        }
        if !h.is_live() {
            return Followed { watches: watches.into_values().collect(), read, pending: None };
        }
        let safe_until = session.safe_until();
        let event = {
            let reply = async {
                match read.as_mut() {
                    Some((_, f)) => f.await,
                    None => std::future::pending().await,
                }
            };
            let fired = std::future::poll_fn(|cx| {
                for (id, w) in watches.iter_mut() {
                    if let Poll::Ready(ev) = Pin::new(w).poll(cx) {
                        return Poll::Ready((*id, notice(&ev)));
                    }
                }
                Poll::Pending
            });
            let run_out = async {
                if safe {
                    tokio::time::sleep_until(safe_until.into()).await
                } else {
                    std::future::pending().await
                }
            };
            let retry = async {
                match retry_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                _ = stop.wait_for(|s| *s) => {
                    return Followed { watches: watches.into_values().collect(), read, pending: None }
                },
                () = h.shared.closed() => Some(proto::Event::SessionEnded { closed: true }),
                // A reply before the notifications that came after it.
                r = reply => {
                    let id = read.take().map(|(id, _)| id).unwrap_or(proto::GRANT_WATCH);
                    let result = match r {
                        Ok((data, stat, w)) => {
                            watches.insert(id, w);
                            if data == REVOKE && stat.ephemeral_owner == session.id {
                                h.revocation_requested(stat.mzxid);
                            }
                            Ok(zklock_proto::acquire::Answer::Data(stat_of(&stat)))
                        },
                        Err(e) => Err(failure(e)),
                    };
                    Some(proto::Event::Reply(id, zklock_proto::acquire::Reply { result, connection: 0 }))
                },
                (id, notice) = fired => {
                    watches.remove(&id);
                    Some(proto::Event::Watch(id, notice))
                },
                zs = states.changed() => Some(if zs.is_terminated() {
                    proto::Event::SessionEnded { closed: zs == zk::SessionState::Closed }
                } else {
                    proto::Event::Connection { connected: zs == zk::SessionState::Connected }
                }),
                () = run_out => None,
                () = session.clock_advanced() => None,
                () = retry => {
                    retry_at = None;
                    Some(proto::Event::Retry)
                },
            }
        };
        actions = match h.feed_while_live(event) {
            Ok(actions) => actions,
            // Released meanwhile: the event is the release's.
            Err(pending) => return Followed { watches: watches.into_values().collect(), read, pending },
        };
        // The safety clock's verdict, whenever it changed.
        let now_safe = Instant::now() < session.safe_until();
        if now_safe != safe {
            safe = now_safe;
            actions.extend(h.feed(Some(proto::Event::Clock { safe })));
        }
    }
}

impl Holding {
    /// Ends this holding (Released) and stops following it; what remains
    /// is the deletion of its node, if the machine asks for one. For the
    /// last guard's release, and for the mutex a semaphore's acquire holds
    /// while it waits (no guard).
    pub(crate) fn begin_delete(self: &Arc<Self>) -> Deleting {
        let actions = self.feed(Some(proto::Event::Release { closed: self.shared.is_closed() }));
        self.stop.send_replace(true);
        let monitor = self.monitor.lock().ok().and_then(|mut m| m.take());
        let next = actions.into_iter().find_map(next_of);
        Deleting { holding: self.clone(), next, monitor }
    }

    /// What a release's outcome tells the caller.
    fn released(&self, outcome: proto::Outcome) -> Result<ReleaseStatus> {
        match outcome {
            proto::Outcome::Released => Ok(ReleaseStatus::Released),
            proto::Outcome::Pending => Ok(ReleaseStatus::Pending),
            proto::Outcome::Refused => Err(Error::new(
                ErrorKind::NoAuth,
                format!(
                    "releasing {}: not authorized to delete the node (NoAuth: the ACL lacks the delete right): \
                     the lock is held until the session ends (close the client)",
                    self.node_path()
                ),
            )),
            // Closed before or while the release was on its way: the close
            // took the session, and the node with it. Not a loss that the
            // critical section could have run into (an outside test got
            // LOCK_LOST for a release and a close made in the same tick).
            proto::Outcome::Closed => Err(Error::new(
                ErrorKind::Closed,
                format!("releasing {}: the client was closed; the node went with the session", self.node_path()),
            )),
            proto::Outcome::Lost(_) => Err(self.hold.lock().ok().and_then(|h| h.reason.clone()).unwrap_or_else(|| {
                Error::new(ErrorKind::LockLost, format!("lock {} lost before the release", self.node_path()))
            })),
            proto::Outcome::LostBefore => Err(Error::new(
                ErrorKind::LockLost,
                format!(
                    "lock {} lost before the release: the node was gone or another session's (it was left alone)",
                    self.node_path()
                ),
            )),
        }
    }
}

/// Whether any of `watches` has fired by now (the session's task is let
/// run first, so that a notification read right behind a reply is taken
/// in). Polls them once each until one has fired; a fired one is spent.
async fn fired(watches: &mut [zk::Watch]) -> bool {
    tokio::task::yield_now().await;
    std::future::poll_fn(|cx| Poll::Ready(watches.iter_mut().any(|w| Pin::new(w).poll(cx).is_ready()))).await
}

/// What the machine asked of a release.
enum Next {
    /// Wait for the answer to the hold's read on its way, then ask again.
    AwaitRead(zklock_proto::acquire::Id),
    /// Delete our node (at once when `known_ours`, else if still ours).
    Delete { known_ours: bool },
    /// Nothing to delete: the outcome.
    Done(proto::Outcome),
}

/// The release's next step among the machine's actions, if one.
fn next_of(action: proto::Action) -> Option<Next> {
    match action {
        proto::Action::AwaitRead(id) => Some(Next::AwaitRead(id)),
        proto::Action::Delete { known_ours } => Some(Next::Delete { known_ours }),
        proto::Action::Released(outcome) => Some(Next::Done(outcome)),
        _ => None,
    }
}

/// The rest of a release: the deletion of its node, as the machine asked.
pub(crate) struct Deleting {
    holding: Arc<Holding>,
    /// `None`: the machine had nothing to say (released already).
    next: Option<Next>,
    monitor: Option<tokio::task::JoinHandle<Followed>>,
}

impl Deleting {
    pub(crate) async fn finish(self) -> Result<ReleaseStatus> {
        let Deleting { holding: h, next, monitor } = self;
        // The monitor ends (begin_delete told it to stop) and gives back
        // its watches on our node. Dropped, they queue removeWatches ahead
        // of anything sent after them.
        let none = || Followed { watches: Vec::new(), read: None, pending: None };
        let Followed { mut watches, read, pending } = match monitor {
            Some(task) => task.await.unwrap_or_else(|_| none()),
            None => none(),
        };
        // An event the monitor took once the release was fed (the read's
        // answer, a change of the connection): the release's.
        let next = match (next, pending) {
            (Some(Next::AwaitRead(id)), Some(event)) => {
                Some(h.feed(Some(event)).into_iter().find_map(next_of).unwrap_or(Next::AwaitRead(id)))
            },
            (next, _) => next,
        };
        let next = match next {
            // The answer of the read on its way (a round trip at most, the
            // operation timeout bounding it), fed as the monitor would:
            // the machine deletes at once if it shows our node ours.
            Some(Next::AwaitRead(id)) => {
                let reply = match read {
                    Some((r, f)) if r == id => Some(f.await),
                    _ => None,
                };
                let result = match reply {
                    Some(Ok((_, stat, w))) => {
                        watches.push(w);
                        Ok(zklock_proto::acquire::Answer::Data(stat_of(&stat)))
                    },
                    Some(Err(e)) => Err(failure(e)),
                    None => Err(zklock_proto::acquire::Failure::Unknown),
                };
                let reply = zklock_proto::acquire::Reply { result, connection: 0 };
                h.feed(Some(proto::Event::Reply(id, reply))).into_iter().find_map(next_of)
            },
            other => other,
        };
        let outcome = match next {
            None => return Err(Error::new(ErrorKind::NotHeld, format!("{} was already released", h.node_path()))),
            Some(Next::AwaitRead(_)) => {
                return Err(Error::internal(format!("releasing {}: the holder machine waited twice", h.node_path())))
            },
            Some(Next::Done(outcome)) => outcome,
            Some(Next::Delete { known_ours }) => {
                // A notification the session has taken in since the machine
                // last heard (right behind the answer a release waited for,
                // or while the monitor stopped): our node changed, maybe
                // replaced; look at it first (outside attack round 39, O1:
                // the read's answer and the delete's notification held up
                // together, the node made again by a third party meanwhile).
                let known_ours = known_ours && !fired(&mut watches).await;
                // The delete fires them (or our node is gone or replaced,
                // which fired them already): no removeWatches, one request
                // less per release; the notification comes to nobody.
                watches.into_iter().for_each(zk::Watch::let_fire);
                let deletion = delete_node(&h.shared, &h.session, h.node_path(), known_ours, None).await;
                let closed = h.shared.is_closed();
                let actions = h.feed(Some(proto::Event::Deleted { deletion, closed }));
                // The machine answers every deletion it asked for.
                let outcome = actions.into_iter().find_map(|a| match a {
                    proto::Action::Released(outcome) => Some(outcome),
                    _ => None,
                });
                outcome.ok_or_else(|| {
                    Error::internal(format!("releasing {}: the holder machine gave no outcome", h.node_path()))
                })?
            },
        };
        h.released(outcome)
    }
}

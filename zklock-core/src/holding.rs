//! Holding a lock (protocol doc section 5): the holding of one node, the
//! monitor that follows it (session state, deletion of our node; the
//! safety clock is `clock.rs`), and the guard with its release.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use crate::zk::{self, ClientExt as _};
use tokio::sync::watch;
use zklock_proto::hold as proto;

use crate::cleanup::delete_node;
use crate::client::{Client, Session, Shared};
use crate::error::{Error, ErrorKind, Result};
use crate::listeners::{Listener, Listeners, Subscription};
use crate::lock::{AcquireOptions, HeldSlot, Lock, LockState, ReleaseStatus};
use crate::requests::{failure, notice, stat_of};

pub(crate) type Callback = Listener<LockState>;

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
    pub(crate) stop: watch::Sender<bool>,
    /// Moves on every state change and every release of one of its guards
    /// (what [`Guard::lost`] waits for).
    pub(crate) changes: watch::Sender<u64>,
    /// The task that follows this holding (and owns the watches on our
    /// node).
    pub(crate) monitor: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// What the grant hands the holder: the watch on our node its proof left
/// (armed by a read that showed the node ours), if any, and the session
/// state as of just before the request that began the proof was sent (a
/// disconnect after the proof is reported even when it is over before the
/// monitor first runs).
pub(crate) struct Handover {
    pub(crate) watch: Option<zk::Watch>,
    pub(crate) states: zk::StateWatcher,
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
        let (changes, rest) = {
            let Ok(mut h) = self.hold.lock() else { return Vec::new() };
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
        rest
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

/// Follows a held lock until it is released or lost (protocol section 5):
/// runs the holder's machine (`zklock_proto::hold`), feeding it the
/// replies to its reads of our node, the notifications of its watches on
/// our node, the session's state changes, the safety clock's verdict
/// (`safe`: what the machine was told at the start) and the close of the
/// client. Release aborts this task, which drops the watches (the client
/// sends removeWatches) before the delete, so a release notifies only the
/// next waiter, not ourselves.
async fn monitor(h: Arc<Holding>, handover: Handover, mut safe: bool) {
    let session = h.session.clone();
    let Handover { watch, mut states } = handover;
    // The machine was told of any change up to now.
    let _ = states.state();
    let mut stop = h.stop.subscribe();
    let mut watches: HashMap<zklock_proto::acquire::Id, zk::Watch> = HashMap::new();
    if let Some(w) = watch {
        watches.insert(proto::GRANT_WATCH, w);
    }
    let mut read: Option<(zklock_proto::acquire::Id, Read)> = None;
    let mut retry_at: Option<tokio::time::Instant> = None;
    let mut actions = h.feed(None);
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
                proto::Action::Delete { .. } | proto::Action::Released(_) | proto::Action::State(_) => {},
            }
        }
        if !h.is_live() {
            return;
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
                _ = stop.wait_for(|s| *s) => return,
                () = h.shared.closed() => Some(proto::Event::SessionEnded { closed: true }),
                // A reply before the notifications that came after it.
                r = reply => {
                    let id = read.take().map(|(id, _)| id).unwrap_or(proto::GRANT_WATCH);
                    let result = match r {
                        Ok((_, stat, w)) => {
                            watches.insert(id, w);
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
        actions = h.feed(event);
        // The safety clock's verdict, whenever it changed.
        let now_safe = Instant::now() < session.safe_until();
        if now_safe != safe {
            safe = now_safe;
            actions.extend(h.feed(Some(proto::Event::Clock { safe })));
        }
    }
}

/// Proof of holding a lock. Released by [`Guard::release`] or on drop.
///
/// `Guard` is `Send + Sync`: it may be released from any thread.
pub struct Guard {
    pub(crate) client: Client,
    pub(crate) holding: Arc<Holding>,
    /// The nodes its handle holds (this one leaves it at the last release).
    pub(crate) slot: HeldSlot,
    /// For a write guard of a read/write pair: the pair's read side.
    pub(crate) pair_read: Option<Lock>,
    pub(crate) released: Arc<AtomicBool>,
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

    /// The client this guard's lock belongs to.
    pub(crate) fn client(&self) -> &Client {
        &self.client
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
    /// the caller's own act. The returned [`Subscription`] takes the
    /// callback back (ignore it to keep the callback as long as the lock).
    pub fn on_state_change(&self, callback: impl Fn(LockState) + Send + Sync + 'static) -> Subscription {
        let cb: Callback = Arc::new(callback);
        // A released guard's callback is told once and not kept: registered
        // and taken back at once.
        let (subscription, id) = self.holding.callbacks.add_with_id(cb.clone());
        if self.released.load(Ordering::Acquire) {
            subscription.cancel();
            let state = self.state();
            self.holding.shared.post_event(Box::new(move || cb(state)));
            return subscription;
        }
        let state = self.state();
        if state != LockState::Held {
            let shared = &self.holding.shared;
            self.holding.callbacks.post_one(id, cb, state, &|job| shared.post_event(job));
        }
        subscription
    }

    /// Resolves, with the error [`Guard::check`] gives then, once this
    /// guard is no longer safely held: lost, suspended, past its safety
    /// clock, released, or its client closed. Every poll asks what
    /// `check()` says first, so a poll after `check()` started to fail
    /// resolves; and a watcher on the client's runtime wakes the future on
    /// every state change of the lock, every change of the session's
    /// connection and when the safety clock runs out (the wake reaches the
    /// awaiting task a moment after `check()` starts to fail: the time of a
    /// task switch). A "stop now" signal for work done under the lock:
    /// select on it next to the work. Any executor can await it; dropping
    /// it stops nothing.
    pub fn lost(&self) -> impl Future<Output = Error> + Send + 'static {
        let failure = {
            let holding = self.holding.clone();
            let released = self.released.clone();
            move || {
                if released.load(Ordering::Acquire) {
                    Some(Error::new(ErrorKind::NotHeld, format!("this guard of {} was released", holding.node_path())))
                } else {
                    holding.check().err()
                }
            }
        };
        let holding = self.holding.clone();
        let watch_failure = failure.clone();
        let watching = async move {
            let mut changes = holding.changes.subscribe();
            let mut states = holding.session.states();
            loop {
                // Mark what is seen now as seen: only later changes wake us.
                changes.borrow_and_update();
                let _ = states.state();
                if let Some(e) = watch_failure() {
                    return e;
                }
                let until = holding.session.safe_until();
                tokio::select! {
                    _ = changes.changed() => {},
                    _ = states.changed() => {},
                    () = tokio::time::sleep_until(until.into()) => {},
                    () = holding.shared.closed() => {},
                }
            }
        };
        let mut watcher = Box::pin(self.client.shared().run(watching));
        std::future::poll_fn(move |cx| {
            if let Some(e) = failure() {
                return Poll::Ready(e);
            }
            watcher.as_mut().poll(cx).map(|out| out.unwrap_or_else(|e| e))
        })
    }

    /// Write to read downgrade: a read guard of the same pair whose node
    /// takes this write node's sequence, granted at once (no writer queued
    /// behind this one can slip in between); then release this guard to
    /// let other readers in. Each call makes one more read guard (calling
    /// it twice gives two read nodes of that sequence, each to release,
    /// as two read acquires would). Blocks the calling thread for one
    /// request, at most the operation timeout.
    ///
    /// # Errors
    /// `InvalidArgument` unless this is a write guard of a
    /// [`crate::ReadWriteLock`]; `NotHeld` once released; what
    /// [`Guard::check`] gives if the write lock is not safely held;
    /// `LockLost` if the write node was gone when the read node was to be
    /// made (it is made in one transaction with a check of the write node,
    /// so never after it went); `Timeout` if ZooKeeper did not answer
    /// within the operation timeout; as [`crate::Lock::acquire`] otherwise.
    pub fn downgrade(&self) -> Result<Guard> {
        let work = self.start_downgrade(Some(std::thread::current().id()))?;
        self.client.shared().block_on(work)?
    }

    /// [`Guard::downgrade`] as a future that any executor can await.
    ///
    /// # Errors
    /// As [`Guard::downgrade`].
    pub fn downgrade_async(&self) -> impl Future<Output = Result<Guard>> + Send + 'static {
        let started = self.start_downgrade(None).map(|work| self.client.shared().run(work));
        async move { started?.await? }
    }

    fn start_downgrade(
        &self,
        owner: Option<std::thread::ThreadId>,
    ) -> Result<Pin<Box<dyn Future<Output = Result<Guard>> + Send>>> {
        let Some(read) = &self.pair_read else {
            return Err(Error::invalid_argument(format!(
                "{}: only a write guard of a read/write pair can downgrade",
                self.holding.node_path()
            )));
        };
        self.check()?;
        let call = tokio_util::sync::CancellationToken::new();
        let downgrade =
            crate::acquire::Downgrade { sequence: self.holding.sequence, write_node: self.holding.node_path() };
        // One request: bounded by the operation timeout, also while the
        // connection is down (an outside test saw it wait for the reconnect).
        let bound = AcquireOptions::new().timeout(Some(self.client.shared().options.operation_timeout));
        read.start_acquire(&bound, call, owner, Some(downgrade))
    }

    /// Releases this guard. The node is deleted when this is the last guard
    /// of its node (a reentrant handle gives one per acquire of a thread).
    /// Idempotent in effect: a second call fails with `NotHeld`.
    /// Blocks the calling thread; [`Guard::release_async`] is the same call
    /// as a future.
    ///
    /// # Errors
    /// `NotHeld` if this guard was already released; `LockLost` if the lock
    /// had been lost before the release (the critical section may have run
    /// without the lock; our node is cleaned up all the same); `NoAuth` if
    /// ZooKeeper refused to delete our node (an ACL without the delete
    /// right): the guard is released, but the node stays, and others wait,
    /// until the session ends; `Closed` if the client was closed before or
    /// while the release was on its way (the node goes with the session).
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
    pub(crate) fn begin_release(&self) -> Result<Releasing> {
        if self.released.swap(true, Ordering::AcqRel) {
            return Err(Error::new(ErrorKind::NotHeld, format!("{} was already released", self.holding.node_path())));
        }
        // Wakes this guard's `lost()` (an inner guard's release changes no
        // state of the lock).
        self.holding.changes.send_modify(|n| *n = n.wrapping_add(1));
        if self.holding.count.fetch_sub(1, Ordering::AcqRel) > 1 {
            // An inner guard: the node stays for the others, but a loss is
            // this guard's news too (its critical section may have run
            // without the lock).
            return Ok(Releasing::Done(match self.holding.check() {
                Err(e) if e.kind() != ErrorKind::ConnectionLoss => Err(e),
                _ => Ok(ReleaseStatus::Released),
            }));
        }
        if let Ok(mut held) = self.slot.lock() {
            held.retain(|h| !Arc::ptr_eq(&h.holding, &self.holding));
        }
        Ok(Releasing::Delete(self.holding.begin_delete()))
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
        let next = actions.into_iter().find_map(|a| match a {
            proto::Action::Delete { known_ours } => Some(Next::Delete { known_ours }),
            proto::Action::Released(outcome) => Some(Next::Done(outcome)),
            _ => None,
        });
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

/// What [`Guard::begin_release`] leaves to do.
pub(crate) enum Releasing {
    /// Nothing: an inner reentrant guard.
    Done(Result<ReleaseStatus>),
    /// Delete the node.
    Delete(Deleting),
}

/// What the machine asked of a release.
enum Next {
    /// Delete our node (at once when `known_ours`, else if still ours).
    Delete { known_ours: bool },
    /// Nothing to delete: the outcome.
    Done(proto::Outcome),
}

/// The rest of a release: the deletion of its node, as the machine asked.
pub(crate) struct Deleting {
    holding: Arc<Holding>,
    /// `None`: the machine had nothing to say (released already).
    next: Option<Next>,
    monitor: Option<tokio::task::JoinHandle<()>>,
}

impl Deleting {
    pub(crate) async fn finish(self) -> Result<ReleaseStatus> {
        let Deleting { holding: h, next, monitor } = self;
        // End the monitor first: dropping its watch on our node queues
        // removeWatches ahead of the delete.
        if let Some(task) = monitor {
            task.abort();
            let _ = task.await;
        }
        let outcome = match next {
            None => return Err(Error::new(ErrorKind::NotHeld, format!("{} was already released", h.node_path()))),
            Some(Next::Done(outcome)) => outcome,
            Some(Next::Delete { known_ours }) => {
                let deletion = delete_node(&h.shared, &h.session, h.node_path(), known_ours, None).await;
                let closed = h.shared.is_closed();
                let actions = h.feed(Some(proto::Event::Deleted { deletion, closed }));
                actions
                    .into_iter()
                    .find_map(|a| match a {
                        proto::Action::Released(outcome) => Some(outcome),
                        _ => None,
                    })
                    .unwrap_or(proto::Outcome::Pending)
            },
        };
        h.released(outcome)
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

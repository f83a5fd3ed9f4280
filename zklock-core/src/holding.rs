//! Holding a lock (protocol doc section 5): the holding of one node, the
//! monitor that follows it (session state, deletion of our node; the
//! safety clock is `clock.rs`), and the guard with its release.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use crate::zk::{self, ClientExt as _};
use futures_util::FutureExt as _;
use tokio::sync::watch;

use crate::acquire::OwnNodeProof;
use crate::cleanup::{delete_node, session_gone, Deletion};
use crate::client::{Client, Session, Shared};
use crate::error::{Error, ErrorKind, Result};
use crate::listeners::{Listener, Listeners, Subscription};
use crate::lock::{AcquireOptions, HeldSlot, Lock, LockState, ReleaseStatus};

pub(crate) type Callback = Listener<LockState>;

pub(crate) struct Status {
    pub(crate) state: LockState,
    pub(crate) reason: Option<Error>,
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
    pub(crate) status: Mutex<Status>,
    pub(crate) callbacks: Arc<Listeners<LockState>>,
    pub(crate) stop: watch::Sender<bool>,
    /// Moves on every state change and every release of one of its guards
    /// (what [`Guard::lost`] waits for).
    pub(crate) changes: watch::Sender<u64>,
    /// The task that follows this holding (and owns the watch on our node).
    pub(crate) monitor: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Whether the monitor's watch on our node is armed by a read that
    /// showed the node owned by our session, and has not fired. Only then
    /// does a release of a `Held` lock delete without reading the node
    /// first: before that read is answered (the grant's proof was the first
    /// list), our node may already have been replaced by someone else's of
    /// the same name.
    pub(crate) watch_armed: AtomicBool,
}

impl Holding {
    pub(crate) fn node_path(&self) -> String {
        format!("{}/{}", self.lock_path, self.name)
    }

    pub(crate) fn state(&self) -> LockState {
        self.status.lock().map(|s| s.state).unwrap_or(LockState::Lost)
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

    /// Moves to `state` (never out of Lost or Released) and tells the
    /// callbacks on the event thread.
    pub(crate) fn set_state(&self, state: LockState, reason: Option<Error>) {
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

    pub(crate) fn lose(&self, kind: ErrorKind, why: String) {
        // Whatever the route (node deleted, session closed), a loss caused
        // by closing the client is reported as Closed.
        let (kind, why) =
            if self.shared.is_closed() { (ErrorKind::Closed, "the client was closed".into()) } else { (kind, why) };
        let msg = format!("lock {} lost: {why}", self.node_path());
        self.set_state(LockState::Lost, Some(Error::new(kind, msg)));
        self.stop.send_replace(true);
    }

    pub(crate) fn check(&self) -> Result<()> {
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
                if st.state == LockState::Suspended {
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

pub(crate) type EventFuture = Pin<Box<dyn Future<Output = zk::WatchedEvent> + Send>>;

pub(crate) enum Wake {
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
pub(crate) async fn monitor(h: Arc<Holding>, proof: OwnNodeProof) {
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
                    Some(Box::pin(w))
                },
                Some(Ok(_)) => {
                    h.lose(ErrorKind::LockLost, "our lock node is owned by another session".into());
                    return;
                },
                Some(Err(zk::Error::Server(zk::Code::NoNode))) => {
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
        let connected = matches!(zs, zk::SessionState::Connected);
        let safe = Instant::now() < session.safe_until();
        match h.state() {
            LockState::Held if reconnected || !connected || !safe => h.set_state(LockState::Suspended, None),
            LockState::Suspended if connected && safe => match recheck(&h).await {
                Ok(Some(w)) => {
                    node_watch = Some(Box::pin(w));
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
                match ev.kind {
                    zk::EventType::NodeDeleted => {
                        h.lose(ErrorKind::LockLost, "our lock node was deleted".into());
                        return;
                    },
                    zk::EventType::Session => {},
                    // Data changed (someone wrote to our node): watch again.
                    _ => match recheck(&h).await {
                        Ok(Some(w)) => {
                            node_watch = Some(Box::pin(w));
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
pub(crate) async fn recheck(h: &Holding) -> std::result::Result<Option<zk::Watch>, ()> {
    let zk = h.session.zk().map_err(|_| ())?;
    let path = h.node_path();
    match tokio::time::timeout(h.shared.options.operation_timeout, zk.get_and_watch_data(&path)).await {
        Ok(Ok((_, stat, w))) => Ok((stat.ephemeral_owner == h.session.id).then_some(w)),
        Ok(Err(zk::Error::Server(zk::Code::NoNode))) => Ok(None),
        Ok(Err(e)) if session_gone(&e) => Ok(None),
        _ => Err(()),
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
    /// is the deletion of its node. For the last guard's release, and for
    /// the mutex a semaphore's acquire holds while it waits (no guard).
    pub(crate) fn begin_delete(self: &Arc<Self>) -> Deleting {
        let state = self.state();
        // Read before the monitor stops (it clears this when its watch fires).
        let known_ours = state == LockState::Held && self.watch_armed.load(Ordering::Acquire);
        let lost = self.check().err().filter(|e| e.kind() != ErrorKind::ConnectionLoss);
        self.set_state(LockState::Released, None);
        self.stop.send_replace(true);
        let monitor = self.monitor.lock().ok().and_then(|mut m| m.take());
        Deleting { holding: self.clone(), state, known_ours, lost, monitor }
    }
}

/// What [`Guard::begin_release`] leaves to do.
pub(crate) enum Releasing {
    /// Nothing: an inner reentrant guard.
    Done(Result<ReleaseStatus>),
    /// Delete the node.
    Delete(Deleting),
}

/// The deletion of a released node, with what was known at the release.
pub(crate) struct Deleting {
    pub(crate) holding: Arc<Holding>,
    pub(crate) state: LockState,
    pub(crate) known_ours: bool,
    pub(crate) lost: Option<Error>,
    pub(crate) monitor: Option<tokio::task::JoinHandle<()>>,
}

impl Deleting {
    pub(crate) async fn finish(self) -> Result<ReleaseStatus> {
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
            (None, Deletion::Refused) => Err(Error::new(
                ErrorKind::NoAuth,
                format!(
                    "releasing {}: not authorized to delete the node (NoAuth: the ACL lacks the delete right): \
                     the lock is held until the session ends (close the client)",
                    h.node_path()
                ),
            )),
            // Closed while the release was on its way: the close took the
            // session, and the node with it. Not a loss that the critical
            // section could have run into (an outside test got LOCK_LOST
            // for a release and a close made in the same tick).
            (None, Deletion::Gone) if h.shared.is_closed() => Err(Error::new(
                ErrorKind::Closed,
                format!("releasing {}: the client was closed meanwhile; the node went with the session", h.node_path()),
            )),
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

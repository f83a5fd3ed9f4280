//! The acquire engine (protocol doc section 4): attempts, each one run of
//! the protocol's attempt machine (`zklock_proto::acquire`, where every
//! decision is: the queue, the one blocker, the grant rule), against the
//! session; the caller's options (deadline, cancel, close), the safety
//! clock's answers and the cleanup of what an attempt leaves.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use crate::zk;
use futures_util::FutureExt as _;
use zklock_proto::acquire as proto;

use crate::cleanup::{delete_node, spawn_cleanup, Deletion, Target, CLEANUP_GRACE};
use crate::client::{Session, Shared};
use crate::error::{Error, ErrorKind, Result};
use crate::holding::{Handover, Holding};
use crate::names::{self, LockMode};
use crate::options::CancelState;
use crate::requests::{failure, notice, send, Answered, Pending};

/// Why an acquire attempt stopped without the lock.
pub(crate) enum Step {
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
pub(crate) struct Ctx {
    pub(crate) shared: Arc<Shared>,
    pub(crate) path: String,
    pub(crate) mode: LockMode,
    pub(crate) data: Vec<u8>,
    pub(crate) deadline: Option<Instant>,
    pub(crate) try_once: bool,
    /// Downgrade: the write node this handle's pair holds; the read node is
    /// created non-sequentially with its sequence, while it exists.
    pub(crate) downgrade: Option<Downgrade>,
    pub(crate) cancel: Arc<CancelState>,
    pub(crate) epoch: u64,
    /// This call's own cancellation: the caller's token (a child of it),
    /// also cancelled when an async acquire's future is dropped.
    pub(crate) call: tokio_util::sync::CancellationToken,
    /// The handle's guess of the sequence our next node will get (see
    /// [`SeqHint`]).
    pub(crate) seq_hint: Arc<SeqHint>,
    /// How many contenders hold at once: 1 for a lock, a semaphore's
    /// permits.
    pub(crate) permits: usize,
    /// For a serialised kind (see `driver::Layout`): the path of the mutex
    /// taken while our node is created and waits.
    pub(crate) mutex: Option<String>,
    /// A semaphore whose permits come from a shared count: its node (read
    /// at each attempt's start, and watched while it waits).
    pub(crate) count: Option<String>,
    /// zklock's own acquire (a semaphore's mutex), not the caller's: its
    /// holding is left out of the metrics (outside attack round 18, F4).
    pub(crate) internal: bool,
}

/// An error that says the connection failed (no answer within the
/// operation timeout, the connection lost, the session ended), not what a
/// node holds.
fn connection_trouble(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::ConnectionLoss | ErrorKind::SessionExpired)
}

/// A shared count's value from its node's data (Curator's `SharedCount`:
/// 4 bytes, big-endian), as written (a semaphore takes a negative one as 0
/// permits).
pub(crate) fn parse_count(path: &str, data: &[u8]) -> Result<i32> {
    let bytes: [u8; 4] = data.try_into().map_err(|_| {
        Error::invalid_argument(format!(
            "the shared count {path:?} holds {} bytes, not a 4-byte big-endian count (Curator's SharedCount)",
            data.len()
        ))
    })?;
    Ok(i32::from_be_bytes(bytes))
}

/// Reads the shared count at `path` and leaves a watch on it.
async fn read_count(ctx: &Ctx, zk: &zk::Client, path: &str) -> Result<(usize, zk::Watch)> {
    let (reply, watch) = zk.get_data_watch(path);
    let what = format!("reading the shared count {path:?}");
    let read = tokio::time::timeout(ctx.shared.options.operation_timeout, reply.value())
        .await
        .map_err(|_| Error::new(ErrorKind::ConnectionLoss, format!("{what}: no reply within the operation timeout")))?;
    let (data, _) = read.map_err(|e| match e {
        zk::Error::Server(zk::Code::NoNode) => Error::new(
            ErrorKind::ZooKeeper,
            format!(
                "{what}: it does not exist (NoNode); set it first (Client::set_shared_count, Curator's SharedCount)"
            ),
        ),
        e => Error::from_zk(&what, e),
    })?;
    Ok((usize::try_from(parse_count(path, &data)?).unwrap_or(0), watch))
}

/// A write-to-read downgrade: the write node held, whose sequence the read
/// node takes.
#[derive(Clone, Debug)]
pub(crate) struct Downgrade {
    pub(crate) sequence: i64,
    /// Full path of the write node.
    pub(crate) write_node: String,
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
pub(crate) struct SeqHint(std::sync::atomic::AtomicI64);

impl Default for SeqHint {
    fn default() -> SeqHint {
        SeqHint(std::sync::atomic::AtomicI64::new(-1))
    }
}

impl SeqHint {
    pub(crate) fn get(&self) -> Option<i64> {
        Some(self.0.load(Ordering::Relaxed)).filter(|s| (0..=i64::from(i32::MAX)).contains(s))
    }

    /// Takes the attempt's guess (see `zklock_proto::acquire::Action::SeqGuess`).
    pub(crate) fn set(&self, next: Option<i64>) {
        self.0.store(next.unwrap_or(-1), Ordering::Relaxed);
    }
}

impl Ctx {
    /// The acquire of the mutex that serialises this call's kind: an
    /// exclusive lock on `path` under this call's deadline and cancels.
    fn for_mutex(&self, path: String) -> Ctx {
        Ctx {
            shared: self.shared.clone(),
            path,
            mode: LockMode::Exclusive,
            data: Vec::new(),
            deadline: self.deadline,
            try_once: self.try_once,
            downgrade: None,
            cancel: self.cancel.clone(),
            epoch: self.epoch,
            call: self.call.clone(),
            seq_hint: Arc::default(),
            permits: 1,
            mutex: None,
            count: None,
            internal: true,
        }
    }

    pub(crate) fn interrupted(&self) -> Result<()> {
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
    pub(crate) fn cancelled(&self) -> bool {
        self.call.is_cancelled() || self.cancel.epoch.load(Ordering::Acquire) != self.epoch
    }

    /// The error when the deadline passes: `Timeout` for a timeout the
    /// caller gave; for a try-once (whose `Timeout` means "held by someone
    /// else") `ConnectionLoss`, as ZooKeeper did not answer in time.
    pub(crate) fn deadline_passed(&self) -> Error {
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

    /// `e`, unless it is a wait that ran into this call's deadline (a
    /// `Timeout` of [`crate::client::with_deadline`]): then the error of the
    /// deadline, which for a try-once is `ConnectionLoss`, never "held by
    /// another participant" (an outside tester got that answer from a
    /// silent server once the connection was known lost).
    fn deadline_error(&self, e: Error) -> Error {
        if e.kind() == ErrorKind::Timeout {
            self.deadline_passed()
        } else {
            e
        }
    }

    /// Awaits `fut` unless cancel, the deadline or close comes first.
    pub(crate) async fn race<F: Future>(&self, fut: F) -> Result<F::Output> {
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
}

/// One attempt: one uuid, one session, at most one node of ours. The
/// protocol's decisions are the machine's (`zklock_proto::acquire`); this
/// runs it: sends what it asks, in order, and feeds it the replies and
/// notifications in the order the session received them, the caller's
/// stops, the session's news and the safety clock's answers.
pub(crate) struct Attempt {
    pub(crate) session: Arc<Session>,
    pub(crate) protected: String,
    machine: proto::Attempt<zk::Error>,
    /// Until when the cleanup may wait for ZooKeeper before leaving the
    /// rest to the background, when the attempt already waited for its
    /// create's reply after being stopped ([`CLEANUP_GRACE`] in all).
    grace_end: Option<tokio::time::Instant>,
    /// For a serialised kind: the mutex this attempt holds while it waits.
    /// If it is lost (its node deleted, by a third party say), another
    /// contender may take it and queue too, and waiters that each count
    /// the other could wait for ever: the machine starts over.
    mutex: Option<Arc<Holding>>,
    /// For a semaphore with a shared count: the watch on the count node.
    count: Option<zk::Watch>,
    /// A node's data changed while this attempt waited (a notice): our
    /// node may hold a revocation request written before the grant, which
    /// the holder then reads for (outside attack round 18, F5).
    data_changed: bool,
}

/// What the runner waits for besides replies and notifications.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Awaiting {
    Nothing,
    Reconnect,
    Clock,
    Grace(tokio::time::Instant),
}

impl Attempt {
    pub(crate) fn new(
        ctx: &Ctx,
        session: Arc<Session>,
        mutex: Option<Arc<Holding>>,
        count: Option<(usize, zk::Watch)>,
    ) -> Attempt {
        let uuid = uuid::Uuid::new_v4();
        let protected = names::protected_prefix(&uuid);
        let machine = proto::Attempt::new(proto::Config {
            path: ctx.path.clone(),
            mode: ctx.mode,
            permits: count.as_ref().map_or(ctx.permits, |(n, _)| *n),
            data: ctx.data.clone(),
            try_once: ctx.try_once,
            downgrade: ctx
                .downgrade
                .as_ref()
                .map(|d| proto::Downgrade { sequence: d.sequence, write_node: d.write_node.clone() }),
            session: session.id,
            protected: protected.clone(),
            name_prefix: names::node_name_prefix(ctx.mode, &uuid),
            seq_guess: ctx.seq_hint.get(),
            serialised: mutex.is_some(),
            bugs: proto::Bugs::default(),
        });
        Attempt {
            session,
            protected,
            machine,
            grace_end: None,
            mutex,
            count: count.map(|(_, w)| w),
            data_changed: false,
        }
    }

    /// Runs the attempt to its grant or its end.
    pub(crate) async fn run(&mut self, ctx: &Ctx) -> std::result::Result<Arc<Holding>, Step> {
        let zk = self.session.zk()?;
        // Replies in the order the requests went (ZooKeeper answers in
        // that order), and the watches the machine holds: `armed` once the
        // reply that left them was fed.
        let mut pending: std::collections::VecDeque<(proto::Id, bool, Pending)> = Default::default();
        let mut watches: HashMap<proto::Id, zk::Watch> = HashMap::new();
        let mut armed: HashSet<proto::Id> = HashSet::new();
        // The session state as of just before each request that may begin
        // a proof was sent (creates, reads with a watch).
        let mut states_at: HashMap<proto::Id, zk::StateWatcher> = HashMap::new();
        let mut awaiting = Awaiting::Nothing;
        let mut stopped: Option<Error> = None;
        let mut mutex_lost = false;
        let mut count_watch = self.count.take();
        // The count's last read failed for the connection: read it again
        // once connected.
        let mut count_unread = false;
        loop {
            while let Some(action) = self.machine.poll_action() {
                match action {
                    proto::Action::Send(id, req) => {
                        let creates =
                            matches!(req, proto::Request::Create { .. } | proto::Request::CheckAndCreate { .. });
                        if creates || req.watches() {
                            states_at.insert(id, self.session.watch_from_now());
                        }
                        let (reply, watch) = send(&ctx.shared, &zk, req);
                        if let Some(w) = watch {
                            watches.insert(id, w);
                        }
                        pending.push_back((id, creates, reply));
                    },
                    proto::Action::DropWatch(id) => {
                        watches.remove(&id);
                        armed.remove(&id);
                        states_at.remove(&id);
                    },
                    proto::Action::AwaitReconnect => awaiting = Awaiting::Reconnect,
                    proto::Action::CheckClock => {
                        // A cancel that races with the grant wins (section
                        // 4, step 6).
                        if ctx.cancelled() {
                            stopped = Some(Error::cancelled("acquire"));
                            self.machine.handle(proto::Event::Stop { closed: false });
                        } else {
                            let safe = self.session.clock.will_stay_safe();
                            if !safe {
                                log::info!(
                                    "zklock: {} is first, but session {:#x} is not safely alive for long enough; \
                                     waiting for its heartbeat",
                                    ctx.path,
                                    self.session.id
                                );
                            }
                            self.machine.handle(proto::Event::Clock { safe });
                        }
                    },
                    proto::Action::AwaitClock => awaiting = Awaiting::Clock,
                    proto::Action::Linger => {
                        let end = tokio::time::Instant::now() + CLEANUP_GRACE;
                        self.grace_end = Some(end);
                        awaiting = Awaiting::Grace(end);
                    },
                    proto::Action::Waiting => crate::fault::stall(crate::fault::BEFORE_WAITING, &ctx.path),
                    proto::Action::SeqGuess(next) => ctx.seq_hint.set(next),
                    proto::Action::Granted(grant) => {
                        let watch = grant.watch.and_then(|id| watches.remove(&id));
                        let states = states_at.remove(&grant.since).unwrap_or_else(|| self.session.states());
                        return Ok(self.grant(ctx, grant, watch, states));
                    },
                    proto::Action::Ended(proto::End::Restart(why)) => {
                        self.log_requeue(ctx, why);
                        return Err(Step::Restart);
                    },
                    proto::Action::Ended(proto::End::Stopped) => {
                        return Err(Step::Fail(stopped.take().unwrap_or_else(|| Error::cancelled("acquire"))))
                    },
                    proto::Action::Ended(proto::End::Failed(why)) => return Err(Step::Fail(self.failure(ctx, why))),
                }
            }
            let event = self
                .next_event(
                    ctx,
                    &mut pending,
                    &mut watches,
                    &armed,
                    awaiting,
                    stopped.is_some(),
                    mutex_lost,
                    &mut count_watch,
                    count_unread,
                )
                .await;
            match event {
                Input::Stop(e) => {
                    let closed = e.kind() == ErrorKind::Closed;
                    stopped = Some(e);
                    self.machine.handle(proto::Event::Stop { closed });
                },
                Input::Reply(id, creates, answered) => {
                    // Notifications that came before this reply go first.
                    for (wid, notice) in fired(&mut watches, &armed) {
                        self.data_changed |= notice == proto::Notice::Changed;
                        self.machine.handle(proto::Event::Watch(wid, notice));
                    }
                    if watches.contains_key(&id) {
                        armed.insert(id);
                    }
                    let (result, connection) = answered;
                    let made = creates && result.is_ok();
                    let result = result.map_err(failure);
                    self.machine.handle(proto::Event::Reply(id, proto::Reply { result, connection }));
                    if made {
                        crate::fault::stall(crate::fault::AFTER_CREATE_REPLY, &ctx.path);
                    }
                },
                Input::Watch(id, notice) => {
                    self.data_changed |= notice == proto::Notice::Changed;
                    self.machine.handle(proto::Event::Watch(id, notice));
                },
                Input::Reconnected(Ok(())) => {
                    awaiting = Awaiting::Nothing;
                    self.machine.handle(proto::Event::Reconnected);
                },
                Input::Reconnected(Err(e)) if e.kind() == ErrorKind::SessionExpired => {
                    awaiting = Awaiting::Nothing;
                    self.machine.handle(proto::Event::SessionEnded);
                },
                Input::Reconnected(Err(e)) => {
                    awaiting = Awaiting::Nothing;
                    stopped = Some(ctx.deadline_error(e));
                    self.machine.handle(proto::Event::Stop { closed: false });
                },
                Input::ClockMoved(moved) => {
                    awaiting = Awaiting::Nothing;
                    if moved {
                        self.machine.handle(proto::Event::ClockMoved);
                    } else {
                        log::info!(
                            "zklock: session {:#x} ended while {} waited for its heartbeat; queueing again",
                            self.session.id,
                            ctx.path
                        );
                        self.machine.handle(proto::Event::SessionEnded);
                    }
                },
                Input::GraceOver => {
                    awaiting = Awaiting::Nothing;
                    self.machine.handle(proto::Event::GraceOver);
                },
                Input::MutexLost => {
                    mutex_lost = true;
                    self.machine.handle(proto::Event::MutexLost);
                },
                Input::CountChanged => {
                    // Read again (with a new watch): the machine gets the
                    // new count. A count that can no longer be read (gone,
                    // malformed, no answer) fails the acquire, as at its
                    // start: kept, the old count could grant a lease the
                    // count no longer allows, and with no watch left no
                    // later change would be seen (outside attack round 17,
                    // F1: a waiter was granted with the count deleted, then
                    // set to 0). Nothing is granted meanwhile: permits 0.
                    //
                    // A read that failed for the connection (no answer, the
                    // session ended) is no verdict on the count: permits 0
                    // meanwhile, and it is read again once connected; if the
                    // session ended, the machine queues again on the next
                    // one, which reads the count anew (outside attack round
                    // 19, G3, G5: a waiter lost its place instead).
                    count_watch = None;
                    count_unread = false;
                    if let Some(path) = &ctx.count {
                        match read_count(ctx, &zk, path).await {
                            Ok((n, watch)) => {
                                count_watch = Some(watch);
                                self.machine.handle(proto::Event::Permits(n));
                            },
                            Err(e) if connection_trouble(&e) => {
                                self.machine.handle(proto::Event::Permits(0));
                                count_unread = true;
                            },
                            Err(e) => {
                                self.machine.handle(proto::Event::Permits(0));
                                stopped = Some(e);
                                self.machine.handle(proto::Event::Stop { closed: false });
                            },
                        }
                    }
                },
            }
        }
    }

    /// Waits for what comes next: a stop (unless stopping), the oldest
    /// reply, a notification on an armed watch, or what `awaiting` names.
    #[allow(clippy::too_many_arguments)]
    async fn next_event(
        &self,
        ctx: &Ctx,
        pending: &mut std::collections::VecDeque<(proto::Id, bool, Pending)>,
        watches: &mut HashMap<proto::Id, zk::Watch>,
        armed: &HashSet<proto::Id>,
        awaiting: Awaiting,
        stopping: bool,
        mutex_lost: bool,
        count_watch: &mut Option<zk::Watch>,
        count_unread: bool,
    ) -> Input {
        let stop = async {
            if stopping {
                return std::future::pending().await;
            }
            match ctx.race(std::future::pending::<()>()).await {
                Err(e) => e,
                Ok(()) => Error::cancelled("acquire"),
            }
        };
        let reply = async {
            match pending.front_mut() {
                Some((_, _, fut)) => fut.await,
                None => std::future::pending().await,
            }
        };
        let watch = std::future::poll_fn(|cx| {
            for (id, w) in watches.iter_mut().filter(|(id, _)| armed.contains(id)) {
                if let std::task::Poll::Ready(ev) = std::pin::Pin::new(w).poll(cx) {
                    return std::task::Poll::Ready((*id, notice(&ev)));
                }
            }
            std::task::Poll::Pending
        });
        let other = async {
            match awaiting {
                Awaiting::Nothing => std::future::pending().await,
                Awaiting::Reconnect => Input::Reconnected(self.session.wait_connected(ctx.deadline).await),
                Awaiting::Clock => Input::ClockMoved(tokio::select! {
                    () = self.session.clock_advanced() => true,
                    () = self.session.ended() => false,
                }),
                Awaiting::Grace(end) => {
                    tokio::time::sleep_until(end).await;
                    Input::GraceOver
                },
            }
        };
        let mutex = async {
            match &self.mutex {
                Some(m) if !mutex_lost => m.ended().await,
                _ => std::future::pending().await,
            }
        };
        let count = async {
            if count_unread {
                // Connected again with the same session; an ended one is
                // the machine's to see (it queues again).
                if self.session.wait_connected(ctx.deadline).await.is_ok() {
                    return;
                }
                return std::future::pending().await;
            }
            std::future::poll_fn(|cx| match count_watch.as_mut() {
                Some(w) => std::pin::Pin::new(w).poll(cx).map(|_| ()),
                None => std::task::Poll::Pending,
            })
            .await
        };
        let input = tokio::select! {
            biased;
            e = stop => Input::Stop(e),
            // A fired count watch before the replies and notifications
            // that are there: a reply ready now may have come after the
            // change (the session delivers in ZooKeeper's order), and the
            // machine must not decide on a list with a count older than the
            // list (the simulator's `finds_count_no_hold_back`); a newer
            // count with an older list is allowed (the count bounds new
            // leases). Its re-read is awaited before anything else is fed.
            () = count => Input::CountChanged,
            answered = reply => {
                let (id, creates, _) = pending.pop_front().expect("a reply came for the oldest request");
                return Input::Reply(id, creates, answered);
            },
            (id, notice) = watch => Input::Watch(id, notice),
            input = other => input,
            () = mutex => Input::MutexLost,
        };
        if let Input::Watch(id, _) = &input {
            watches.remove(id);
        }
        input
    }

    /// Sends `req` now: its reply (bounded by the operation timeout from
    /// now), and the watch it leaves.
    /// Says why the attempt queues again.
    fn log_requeue(&self, ctx: &Ctx, why: proto::Requeue) {
        let node = format!("{}/{}", ctx.path, self.machine.last_node().unwrap_or("?"));
        let session = self.session.id;
        match why {
            proto::Requeue::NodeGone => {
                log::info!("zklock: our node {node} is gone (session {session:#x}); queueing again")
            },
            proto::Requeue::NotOurs => {
                log::info!("zklock: our node {node} is another session's now (ours is {session:#x}); queueing again")
            },
            proto::Requeue::SessionEnded => {
                log::info!("zklock: session {session:#x} ended while acquiring {}; queueing again", ctx.path)
            },
            proto::Requeue::MutexLost => {
                log::info!("zklock: the mutex of {} is lost while we wait; starting over", ctx.path)
            },
        }
    }

    /// The error of a failed attempt.
    fn failure(&self, ctx: &Ctx, why: proto::Why<zk::Error>) -> Error {
        match why {
            proto::Why::HeldByOthers => held_by_others(ctx),
            proto::Why::WriteLockLost => {
                let write_node = ctx.downgrade.as_ref().map_or("", |d| d.write_node.as_str());
                Error::new(
                    ErrorKind::LockLost,
                    format!("downgrading {write_node}: the write lock was lost (its node is gone); no read lock taken"),
                )
            },
            proto::Why::Zk { what, failure } => {
                let e = match failure {
                    proto::Failure::Other(e) => e,
                    proto::Failure::NoNode => zk::Error::Server(zk::Code::NoNode),
                    proto::Failure::NodeExists => zk::Error::Server(zk::Code::NodeExists),
                    proto::Failure::CheckFailed => zk::Error::Multi { index: 0, code: zk::Code::NoNode },
                    proto::Failure::Unknown => zk::Error::ConnectionLoss("the outcome is unknown".into()),
                    proto::Failure::SessionGone => zk::Error::SessionExpired,
                    proto::Failure::NoAuth => zk::Error::Server(zk::Code::NoAuth),
                };
                let what =
                    if what == "creating the lock path" { format!("{what} {}", ctx.path) } else { what.to_owned() };
                Error::from_zk(&what, e)
            },
        }
    }

    /// Hands out the holding, on the machine's grant (its proof checked,
    /// the safety clock asked).
    fn grant(
        &mut self,
        ctx: &Ctx,
        grant: proto::Grant,
        watch: Option<zk::Watch>,
        states: zk::StateWatcher,
    ) -> Arc<Holding> {
        log::debug!(
            "zklock: granted {}/{} (session {:#x}, token {})",
            ctx.path,
            grant.name,
            self.session.id,
            grant.czxid
        );
        Holding::start(
            ctx.shared.clone(),
            self.session.clone(),
            ctx.path.clone(),
            grant.name,
            grant.czxid,
            Handover { watch, states, counted: !ctx.internal, reread: self.data_changed },
        )
    }

    /// Deletes what this attempt left behind (timeout, cancel, error):
    /// within [`CLEANUP_GRACE`] if ZooKeeper answers, else in the
    /// background, so that a failed acquire returns promptly even while
    /// the server is silent. `Err` when ZooKeeper refused the delete (an
    /// ACL without the delete right): the node stays until the session
    /// ends, and the caller must say so rather than queue again.
    pub(crate) async fn cleanup(&mut self, ctx: &Ctx) -> Result<()> {
        let left = self.machine.leftover();
        if let Some(node) = left.node {
            let path = format!("{}/{}", ctx.path, node.name);
            let patience = self
                .grace_end
                .take()
                .map_or(CLEANUP_GRACE, |end| end.saturating_duration_since(tokio::time::Instant::now()));
            if delete_node(&ctx.shared, &self.session, path.clone(), false, Some(patience)).await == Deletion::Refused {
                return Err(Error::new(
                    ErrorKind::NoAuth,
                    format!(
                        "acquire {}: our node {path} could not be deleted (NoAuth: the ACL lacks the delete \
                         right); it stays in the queue until the session ends",
                        ctx.path
                    ),
                ));
            }
        } else if left.unknown_create {
            let what = Target::Prefix { parent: ctx.path.clone(), prefix: self.protected.clone() };
            spawn_cleanup(ctx.shared.clone(), self.session.clone(), what);
        }
        Ok(())
    }
}

/// What the runner feeds on.
enum Input {
    Stop(Error),
    Reply(proto::Id, bool, Answered),
    Watch(proto::Id, proto::Notice),
    Reconnected(Result<()>),
    ClockMoved(bool),
    GraceOver,
    MutexLost,
    /// The shared count's watch fired.
    CountChanged,
}

/// The notifications of armed watches that have come (in no particular
/// order: they concern different nodes), taken out of `watches`.
fn fired(watches: &mut HashMap<proto::Id, zk::Watch>, armed: &HashSet<proto::Id>) -> Vec<(proto::Id, proto::Notice)> {
    let mut out = Vec::new();
    let ids: Vec<proto::Id> = watches.keys().copied().filter(|id| armed.contains(id)).collect();
    for id in ids {
        if let Some(w) = watches.get_mut(&id) {
            if let Some(ev) = w.now_or_never() {
                watches.remove(&id);
                out.push((id, notice(&ev)));
            }
        }
    }
    out.sort_by_key(|(id, _)| *id);
    out
}

/// A try-once acquire's `Timeout`: held by others now.
fn held_by_others(ctx: &Ctx) -> Error {
    Error::new(ErrorKind::Timeout, format!("acquire {}: the lock is held by another participant", ctx.path))
}

/// The whole acquire (section 4): attempts until held, failed or cancelled.
/// A serialised kind (a semaphore) takes its mutex before each attempt and
/// releases it after, whatever the outcome (protocol section 8c).
pub(crate) async fn acquire(ctx: Ctx) -> Result<Arc<Holding>> {
    loop {
        let mutex = match &ctx.mutex {
            Some(path) => Some(Box::pin(acquire(ctx.for_mutex(path.clone()))).await?),
            None => None,
        };
        let out = attempt(&ctx, mutex.clone()).await;
        if let Some(mutex) = mutex {
            let release = ctx.shared.handle.spawn(async move {
                let _ = mutex.begin_delete().finish().await;
            });
            if matches!(out, Some(Err(_))) {
                // A failed acquire returns within CLEANUP_GRACE of its
                // deadline (or of its end, without one), its own node's
                // deletion and the mutex's together (section 4): the rest
                // goes on in the background if ZooKeeper is silent
                // (outside attack round 20, H3: it took an operation
                // timeout more).
                let grace_end = ctx
                    .deadline
                    .filter(|d| *d <= Instant::now())
                    .map_or_else(|| Instant::now() + CLEANUP_GRACE, |d| d + CLEANUP_GRACE);
                let _ = tokio::time::timeout_at(grace_end.into(), release).await;
            } else {
                let _ = release.await;
            }
        }
        match out {
            Some(out) => return out,
            None => continue,
        }
    }
}

/// One attempt (a new uuid and node): `None` when it must start over (our
/// node went, with its session or by someone's delete).
async fn attempt(ctx: &Ctx, mutex: Option<Arc<Holding>>) -> Option<Result<Arc<Holding>>> {
    if let Err(e) = ctx.interrupted() {
        return Some(Err(e));
    }
    let session = match ctx.race(ctx.shared.session(ctx.deadline)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Some(Err(ctx.deadline_error(e))),
        Err(e) => return Some(Err(e)),
    };
    let count = match &ctx.count {
        Some(path) => {
            let zk = match session.zk() {
                Ok(zk) => zk,
                Err(e) => return Some(Err(e)),
            };
            match ctx.race(read_count(ctx, &zk, path)).await {
                Ok(Ok(c)) => Some(c),
                // The connection's trouble, not the count's: try again (on
                // the next session if this one ended), within the deadline.
                Ok(Err(e)) if connection_trouble(&e) => return None,
                Ok(Err(e)) | Err(e) => return Some(Err(e)),
            }
        },
        None => None,
    };
    let mut attempt = Attempt::new(ctx, session, mutex, count);
    match attempt.run(ctx).await {
        Ok(holding) => Some(Ok(holding)),
        Err(Step::Restart) => match attempt.cleanup(ctx).await {
            Ok(()) => None,
            Err(refused) => Some(Err(refused)),
        },
        Err(Step::Fail(e)) => match attempt.cleanup(ctx).await {
            Ok(()) => Some(Err(e)),
            Err(refused) => Some(Err(Error::new(ErrorKind::NoAuth, format!("{}; {}", e.message(), refused.message())))),
        },
    }
}

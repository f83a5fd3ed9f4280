//! The acquire engine (protocol doc section 4): attempts, the queue (whose
//! rules are the lock kind's driver, `driver.rs`), waiting on the one
//! blocker, and the grant rule ([`OwnNodeProof`]).

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::zk::{self, ClientExt as _};
use futures_util::FutureExt as _;
use tokio::sync::watch;

use crate::cleanup::{delete_node, outcome_unknown, session_gone, spawn_cleanup, Cleanup, Deletion, CLEANUP_GRACE};
use crate::client::{Session, Shared};
use crate::error::{Error, ErrorKind, Result};
use crate::holding::{monitor, EventFuture, Holding, Status};
use crate::lock::{CancelState, LockState};
use crate::names::{self, Decision, LockMode};

type ZkResult<T> = std::result::Result<T, zk::Error>;

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
}

/// A write-to-read downgrade: the write node held, whose sequence the read
/// node takes.
#[derive(Clone, Debug)]
pub(crate) struct Downgrade {
    pub(crate) sequence: i64,
    /// Full path of the write node.
    pub(crate) write_node: String,
}

/// What came of the create of our node.
enum Made {
    /// Created: its Stat (`None` when the server did not send it: a create
    /// inside a transaction on some releases) and its name as the server
    /// made it (`None` for a downgrade's read node, whose name is chosen).
    Node(Option<zk::Stat>, Option<String>),
    /// A downgrade's write node was gone: no read node was made.
    WriteNodeGone,
    Failed(zk::Error),
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

    /// Learns from the list pipelined behind the create of our node `name`.
    pub(crate) fn learn(&self, children: &[String], name: &str) {
        let alone = children.len() == 1;
        let next = names::parse_child(name).filter(|_| alone).map_or(-1, |n| n.sequence.saturating_add(1));
        self.0.store(next, Ordering::Relaxed);
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

    /// One ZooKeeper request, also bounded by the operation timeout (which
    /// counts as an unknown outcome). Replies do not move the safety clock:
    /// only the heartbeat's syncs do (`clock.rs`).
    pub(crate) async fn op<T>(&self, fut: impl Future<Output = ZkResult<T>>) -> Result<ZkResult<T>> {
        match self.race(tokio::time::timeout(self.shared.options.operation_timeout, fut)).await? {
            Err(_) => Ok(Err(zk::Error::ConnectionLoss("no reply within the operation timeout".into()))),
            Ok(r) => Ok(r),
        }
    }

    /// After an unknown outcome: wait for the reconnect; Restart if the
    /// session is gone meanwhile.
    pub(crate) async fn reconnected(&self, session: &Session) -> std::result::Result<(), Step> {
        match self.race(session.wait_connected(self.deadline)).await? {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::SessionExpired => Err(Step::Restart),
            Err(e) => Err(Step::Fail(self.deadline_error(e))),
        }
    }

    pub(crate) fn zk_failure(what: &str, e: zk::Error) -> Step {
        if session_gone(&e) {
            Step::Restart
        } else {
            Step::Fail(Error::from_zk(what, e))
        }
    }
}

pub(crate) struct OwnNode {
    pub(crate) name: String,
    pub(crate) czxid: i64,
}

/// A look at the queue: the children, and a proof of our node's ownership
/// when the list itself gives one.
pub(crate) struct Look {
    pub(crate) children: Vec<String>,
    pub(crate) proof: Option<OwnNodeProof>,
    /// A read of our node pipelined right behind the list (so answered
    /// after it) that showed the node ours, and armed a watch on it.
    pub(crate) own: Option<OwnWatch>,
}

/// A watch on our node, armed by a read whose reply showed the node owned
/// by our session, with the session state as of just before that read was
/// sent. Only [`OwnWatch::armed`] makes one, from such a reply.
///
/// ZooKeeper sends one connection its replies and watch notifications in
/// the order it applied the changes (writes are applied one at a time, and
/// a change's notifications are queued while it is applied). So while this
/// watch has not fired and the connection is the same one, the reply to a
/// request sent after the read is about a state in which our node is still
/// the one that read saw. A notification is not: one transaction (a multi)
/// can delete another node and then ours, and the notification of ours
/// comes after the other's.
pub(crate) struct OwnWatch {
    pub(crate) event: EventFuture,
    pub(crate) states: zk::StateWatcher,
}

impl OwnWatch {
    /// The watch from a read of our node, if its reply showed our session
    /// as the node's owner.
    pub(crate) fn armed(stat: &zk::Stat, watch: zk::Watch, states: zk::StateWatcher, session: i64) -> Option<OwnWatch> {
        (stat.ephemeral_owner == session).then(|| OwnWatch { event: Box::pin(watch), states })
    }

    /// `self` if nothing was reported on our node and the session stayed on
    /// the same connection since the read that armed it; `None` otherwise
    /// (the watch has fired, or events of another connection need not come
    /// in order with it). Call it only after the reply or notification it
    /// is to vouch for has been received: the client library hands out a
    /// connection's events in the order they arrive, so one on our node
    /// that came before is visible by then.
    pub(crate) fn intact(mut self) -> Option<OwnWatch> {
        let fired = self.event.as_mut().now_or_never().is_some();
        let reconnected = self.states.changed().now_or_never().is_some();
        (!fired && !reconnected).then_some(self)
    }
}

/// Evidence, required by every grant, that our node exists and is owned by
/// our session at a point (in ZooKeeper's order of our session's replies
/// and notifications) after the last blocker was gone (protocol section 4,
/// grant rule). Only the three functions below make one.
pub(crate) struct OwnNodeProof {
    /// The watch on our node, armed by a read that showed it ours, if the
    /// proof has one: it becomes the holder's watch.
    pub(crate) watch: Option<EventFuture>,
    /// The session state as of just before the request that armed the
    /// watch (or the proving list) was sent (see
    /// [`Session::watch_from_now`]): the holder's monitor starts from it,
    /// so a disconnect after the proof is reported even when it is over
    /// before the monitor first runs.
    pub(crate) states: zk::StateWatcher,
}

impl OwnNodeProof {
    /// A read of our node, sent after the last blocker was seen gone (its
    /// delete notification, or the reply to a list that showed us first
    /// and that the read was pipelined behind), found it ours.
    pub(crate) fn read(own: OwnWatch) -> OwnNodeProof {
        OwnNodeProof { watch: Some(own.event), states: own.states }
    }

    /// The list sent right behind our create (same session, so answered
    /// after it) shows that no child of the lock path was created or
    /// deleted since our node (`pzxid` is still our create's zxid): our
    /// node is the one we created. No proof if anything changed.
    pub(crate) fn unchanged_since_create(
        czxid: i64,
        parent: &zk::Stat,
        states: zk::StateWatcher,
    ) -> Option<OwnNodeProof> {
        (parent.pzxid == czxid).then_some(OwnNodeProof { watch: None, states })
    }

    /// A list, sent after the last blocker was seen gone, has just shown us
    /// first, and `own` (armed before it was sent) had not fired when its
    /// reply arrived on the same connection: the name in that list is our
    /// node, still ours (see [`OwnWatch`]). No read behind the list.
    pub(crate) fn watched_through_list(own: OwnWatch) -> Option<OwnNodeProof> {
        own.intact().map(OwnNodeProof::read)
    }
}

/// One attempt: one uuid, one session, at most one node of ours.
pub(crate) struct Attempt {
    pub(crate) session: Arc<Session>,
    pub(crate) name_prefix: String,
    pub(crate) protected: String,
    pub(crate) node: Option<OwnNode>,
    pub(crate) unknown_create: bool,
    /// Until when the cleanup may wait for ZooKeeper before leaving the
    /// rest to the background, when the attempt already waited for its
    /// create's reply after being stopped ([`CLEANUP_GRACE`] in all).
    pub(crate) grace_end: Option<tokio::time::Instant>,
    /// For a serialised kind: the mutex this attempt holds while it waits.
    /// If it is lost (its node deleted, by a third party say), another
    /// contender may take it and queue too, and waiters that each count
    /// the other could wait for ever: the attempt starts over.
    pub(crate) mutex: Option<Arc<Holding>>,
}

impl Attempt {
    pub(crate) async fn run(&mut self, ctx: &Ctx) -> std::result::Result<Arc<Holding>, Step> {
        let first = self.create(ctx).await?;
        self.wait(ctx, first).await
    }

    /// Creates our node, pipelining a getChildren (with the lock path's
    /// Stat) behind the create. Returns that first look at the queue when
    /// the list is known to include our node.
    pub(crate) async fn create(&mut self, ctx: &Ctx) -> std::result::Result<Option<Look>, Step> {
        let zk = self.session.zk()?;
        let (create_path, mode) = match &ctx.downgrade {
            Some(d) => (format!("{}/{}{:010}", ctx.path, self.name_prefix, d.sequence), zk::CreateMode::Ephemeral),
            None => (format!("{}/{}", ctx.path, self.name_prefix), zk::CreateMode::EphemeralSequential),
        };
        let acl = ctx.shared.acl();
        loop {
            ctx.interrupted()?;
            let states = self.session.watch_from_now();
            // Both requests are sent now, in this order; the server answers
            // them in order, so the list includes our node.
            // Either future, unboxed: the plain create is every acquire's.
            let create = match &ctx.downgrade {
                None => {
                    let create = zk.create(&create_path, &ctx.data, acl, mode);
                    futures_util::future::Either::Left(async move {
                        match create.await {
                            Ok(made) => {
                                let (path, stat) = made.value;
                                Made::Node(Some(stat), path.rsplit('/').next().map(str::to_owned))
                            },
                            Err(e) => Made::Failed(e),
                        }
                    })
                },
                // The read node takes the write node's sequence, so it
                // sorts before every node queued since: it may be made only
                // while the write node exists, so in one transaction with a
                // check of it. (An outside test delayed the create: a third
                // party deleted the write node meanwhile, a writer queued
                // behind it was granted, and the read node then came before
                // that writer: two holders.)
                Some(d) => {
                    let commit = zk.multi(&[
                        zk::MultiOp::Check { path: d.write_node.clone(), version: -1 },
                        zk::MultiOp::Create {
                            path: create_path.clone(),
                            data: ctx.data.clone(),
                            acl: acl.to_vec(),
                            mode,
                        },
                    ]);
                    futures_util::future::Either::Right(async move {
                        match commit.await {
                            Ok(results) => results
                                .value
                                .into_iter()
                                .find_map(|r| match r {
                                    zk::MultiResult::Create { stat, .. } => Some(Made::Node(stat, None)),
                                    _ => None,
                                })
                                // No create result: not what ZooKeeper
                                // answers; look for our node as after a
                                // lost reply.
                                .unwrap_or(Made::Failed(zk::Error::ConnectionLoss(
                                    "a multi's reply without its create".into(),
                                ))),
                            Err(zk::Error::Multi { index: 0, code: zk::Code::NoNode }) => Made::WriteNodeGone,
                            Err(zk::Error::Multi { code, .. }) => Made::Failed(zk::Error::Server(code)),
                            Err(e) => Made::Failed(e),
                        }
                    })
                },
            };
            let list = zk.get_children(&ctx.path);
            // A read of the node we expect to create, if we can guess its
            // name (see SeqHint): answered after the list.
            let guess = match (&ctx.downgrade, ctx.seq_hint.get()) {
                (None, Some(seq)) => {
                    let name = format!("{}{seq:010}", self.name_prefix);
                    let read = zk.get_and_watch_data(&format!("{}/{name}", ctx.path));
                    Some((name, read))
                },
                _ => None,
            };
            self.unknown_create = true;
            let mut create = std::pin::pin!(create);
            let made = match ctx.op(async { Ok((&mut create).await) }).await {
                Ok(Ok(made)) => made,
                // The operation timeout: the outcome is unknown.
                Ok(Err(e)) => Made::Failed(e),
                Err(stopped) => {
                    self.stopped_while_creating(create, &create_path, &stopped).await;
                    return Err(stopped.into());
                },
            };
            match made {
                Made::Node(stat, seq) => {
                    self.unknown_create = false;
                    let name = self.made_name(seq, &create_path);
                    // A create inside a transaction may come back without
                    // its Stat (ZOOKEEPER-4026, ZOOKEEPER-4667): read it.
                    let stat = if let Some(stat) = stat {
                        stat
                    } else {
                        match ctx.op(zk.check_stat(&create_path)).await? {
                            Ok(Some(stat)) if stat.ephemeral_owner == self.session.id => stat,
                            Ok(_) => {
                                self.node = None;
                                return Err(Step::Restart);
                            },
                            Err(e) if outcome_unknown(&e) => {
                                ctx.reconnected(&self.session).await?;
                                self.node = None;
                                return Err(Step::Restart);
                            },
                            Err(e) => return Err(Ctx::zk_failure("reading the read node made", e)),
                        }
                    };
                    self.node = Some(OwnNode { name: name.clone(), czxid: stat.czxid });
                    crate::fault::stall(crate::fault::AFTER_CREATE_REPLY, &ctx.path);
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
                Made::WriteNodeGone => {
                    self.unknown_create = false;
                    let write_node = ctx.downgrade.as_ref().map_or("", |d| d.write_node.as_str());
                    return Err(Step::Fail(Error::new(
                        ErrorKind::LockLost,
                        format!(
                            "downgrading {write_node}: the write lock was lost (its node is gone); no read lock taken"
                        ),
                    )));
                },
                Made::Failed(zk::Error::Server(zk::Code::NoNode)) => {
                    self.unknown_create = false;
                    drop(list);
                    self.make_parents(ctx).await?;
                },
                // A downgrade's create retried after a lost reply finds its
                // own node: recover it like a lost reply (our read node
                // exists only if its transaction, with the write node's
                // check, was applied).
                Made::Failed(e)
                    if outcome_unknown(&e)
                        || (e == zk::Error::Server(zk::Code::NodeExists) && ctx.downgrade.is_some()) =>
                {
                    drop(list);
                    if let Some(children) = self.recover(ctx).await? {
                        return Ok(Some(Look { children, proof: None, own: None }));
                    }
                },
                Made::Failed(e) => {
                    self.unknown_create = false;
                    return Err(Ctx::zk_failure("creating the lock node", e));
                },
            }
        }
    }

    /// The name of the node our create made at `create_path`: with the
    /// sequence the server appended, or as chosen (a downgrade's read node).
    fn made_name(&self, made: Option<String>, create_path: &str) -> String {
        match made {
            Some(name) => name,
            None => create_path.rsplit('/').next().unwrap_or_default().to_owned(),
        }
    }

    /// The acquire was cancelled or ran out of time with its create on its
    /// way: wait for the create's reply (at most [`CLEANUP_GRACE`]), so
    /// that the cleanup deletes the node it made before the caller hears
    /// of the failure. Without the reply the node is looked for in the
    /// background, after the caller was told: an outside test saw the
    /// node still listed right after a `CANCELLED` rejection in 15 of 30
    /// aborts made in the same tick as the acquire.
    async fn stopped_while_creating(
        &mut self,
        create: std::pin::Pin<&mut impl Future<Output = Made>>,
        create_path: &str,
        stopped: &Error,
    ) {
        if stopped.kind() == ErrorKind::Closed {
            return;
        }
        let grace_end = tokio::time::Instant::now() + CLEANUP_GRACE;
        self.grace_end = Some(grace_end);
        match tokio::time::timeout_at(grace_end, create).await {
            Ok(Made::Node(Some(stat), seq)) => {
                self.node = Some(OwnNode { name: self.made_name(seq, create_path), czxid: stat.czxid });
                self.unknown_create = false;
            },
            // Made, but its Stat not sent (a transaction's create on some
            // releases): the background looks for it like an unknown outcome.
            Ok(Made::Node(None, _)) => {},
            // Nothing was made.
            Ok(Made::WriteNodeGone) => self.unknown_create = false,
            Ok(Made::Failed(e)) if !outcome_unknown(&e) => self.unknown_create = false,
            // Still unknown: the background looks for it.
            Ok(Made::Failed(_)) | Err(_) => {},
        }
    }

    /// The create's reply was lost: find our node by its protected prefix,
    /// adopt it only if our session owns it, delete duplicates. `None`: no
    /// node of ours exists, create again (same uuid).
    pub(crate) async fn recover(&mut self, ctx: &Ctx) -> std::result::Result<Option<Vec<String>>, Step> {
        let zk = self.session.zk()?;
        loop {
            ctx.reconnected(&self.session).await?;
            let children = match ctx.op(zk.list_children(&ctx.path)).await? {
                Ok(c) => c,
                Err(zk::Error::Server(zk::Code::NoNode)) => {
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
                // exists, not getData: it needs no read right on the node.
                match ctx.op(zk.check_stat(&path)).await? {
                    Ok(Some(stat)) if stat.ephemeral_owner == self.session.id => {
                        if adopted.is_none() {
                            adopted = Some(OwnNode { name: node.name, czxid: stat.czxid });
                        } else {
                            log::warn!("zklock: deleting duplicate lock node {path}");
                            let _ = ctx.op(zk.remove(&path, None)).await?;
                        }
                    },
                    Ok(_) | Err(zk::Error::Server(zk::Code::NoNode)) => {},
                    Err(e) if outcome_unknown(&e) => retry = true,
                    Err(e) => return Err(Ctx::zk_failure("looking at our lock node", e)),
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
    pub(crate) async fn make_parents(&self, ctx: &Ctx) -> std::result::Result<(), Step> {
        let zk = self.session.zk()?;
        let mut mode = zk::CreateMode::Container;
        let acl = ctx.shared.acl();
        loop {
            match ctx.op(zk::mkdir(&zk, &ctx.path, acl, mode)).await? {
                Ok(()) => return Ok(()),
                Err(zk::Error::Server(zk::Code::Unimplemented)) if mode == zk::CreateMode::Container => {
                    mode = zk::CreateMode::Persistent
                },
                // The chroot of the connect string does not exist: make it,
                // as persistent nodes (as kazoo does; a namespace is not a
                // lock parent and must not vanish when empty).
                Err(zk::Error::Server(zk::Code::NoNode)) if !zk.chroot().is_empty() => {
                    let chroot = zk.chroot().to_owned();
                    let root = zk.without_chroot();
                    match ctx.op(zk::mkdir(&root, &chroot, acl, zk::CreateMode::Persistent)).await? {
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
    pub(crate) async fn wait(&mut self, ctx: &Ctx, mut known: Option<Look>) -> std::result::Result<Arc<Holding>, Step> {
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
            match names::decide_with_permits(ctx.mode, ctx.permits, &look.children, &name) {
                Decision::Gone => {
                    log::info!("zklock: our node {own_path} is gone (session {:#x}); queueing again", self.session.id);
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
                Decision::WaitOnChildren => {
                    if ctx.try_once {
                        return Err(Step::Fail(held_by_others(ctx)));
                    }
                    // List again with a watch on the children (and a read
                    // of our node behind it when we have no good watch on
                    // it): any change to the queue wakes us to look again.
                    own = own.and_then(OwnWatch::intact);
                    let states = self.session.watch_from_now();
                    let list = zk.list_and_watch_children(&ctx.path);
                    let read_own = own.is_none().then(|| zk.get_and_watch_data(&own_path));
                    let (children, watcher) = match ctx.op(list).await? {
                        Ok((children, watcher)) => (children, Some(watcher)),
                        Err(zk::Error::Server(zk::Code::NoNode)) => (Vec::new(), None),
                        Err(e) if outcome_unknown(&e) => {
                            ctx.reconnected(&self.session).await?;
                            continue;
                        },
                        Err(e) => return Err(Ctx::zk_failure("watching the queue", e)),
                    };
                    let fresh = match read_own {
                        Some(read) => match self.read_own(ctx, &own_path, read, states).await? {
                            Some(w) => Some(w),
                            None => continue,
                        },
                        None => None,
                    };
                    let blocked =
                        names::decide_with_permits(ctx.mode, ctx.permits, &children, &name) == Decision::WaitOnChildren;
                    let Some(mut watcher) = watcher.filter(|_| blocked) else {
                        // Not blocked any more (or gone): decide on this
                        // list, with the read sent behind it as its proof.
                        known = Some(Look { children, proof: None, own: fresh });
                        continue;
                    };
                    if fresh.is_some() {
                        own = fresh;
                    }
                    let mutex = self.mutex.clone();
                    if mutex.as_ref().is_some_and(|m| !m.is_live()) {
                        log::info!("zklock: the mutex of {} is lost while we wait; starting over", ctx.path);
                        return Err(Step::Restart);
                    }
                    crate::fault::stall(crate::fault::BEFORE_WAITING, &ctx.path);
                    let own_event = async {
                        match own.as_mut() {
                            Some(w) => w.event.as_mut().await,
                            None => std::future::pending().await,
                        }
                    };
                    let mutex_ended = async {
                        match &mutex {
                            Some(m) => m.ended().await,
                            None => std::future::pending().await,
                        }
                    };
                    let woken = ctx
                        .race(async {
                            tokio::select! {
                                biased;
                                ev = own_event => Some(Err(ev)),
                                ev = &mut watcher => Some(Ok(ev)),
                                () = mutex_ended => None,
                            }
                        })
                        .await?;
                    match woken {
                        Some(Err(ev)) => {
                            own = None;
                            if ev.kind == zk::EventType::Session {
                                return Err(Step::Restart);
                            }
                        },
                        Some(Ok(_)) => {},
                        // Starts over at the next look, unless that look
                        // grants us.
                        None => {},
                    }
                    // Look at the queue again (the list decides; no
                    // notification is a grant).
                },
                Decision::WaitOn(blocker) => {
                    if ctx.try_once {
                        return Err(Step::Fail(held_by_others(ctx)));
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
                    let mut watcher = match blocker_reply {
                        Ok((_, _, watcher)) => watcher,
                        // Gone between the list and the watch: look again now.
                        Err(zk::Error::Server(zk::Code::NoNode)) => continue,
                        Err(e) if outcome_unknown(&e) => {
                            ctx.reconnected(&self.session).await?;
                            continue;
                        },
                        Err(e) => return Err(Ctx::zk_failure("watching the node before ours", e)),
                    };
                    crate::fault::stall(crate::fault::BEFORE_WAITING, &ctx.path);
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
                                ev = &mut watcher => Ok(ev),
                                ev = own_event => Err(ev),
                            }
                        })
                        .await?;
                    let event = match woken {
                        Ok(event) => event,
                        // Something happened to our node while we waited.
                        Err(ev) => {
                            own = None;
                            if ev.kind == zk::EventType::Session {
                                return Err(Step::Restart);
                            }
                            if ev.kind == zk::EventType::NodeDeleted {
                                log::info!(
                                    "zklock: our node {own_path} was deleted while waiting (session {:#x}); queueing again",
                                    self.session.id
                                );
                                self.node = None;
                                return Err(Step::Restart);
                            }
                            continue;
                        },
                    };
                    if event.kind == zk::EventType::Session {
                        return Err(Step::Restart);
                    }
                    // The only node before ours is gone and none can take
                    // its place: ours is first if it still exists. Our
                    // watch on it, silent through the delete notification,
                    // does not show that: one transaction (a multi) may
                    // delete the blocker and then our node, and its second
                    // notification comes after the first (an outside tester
                    // got a grant on a deleted node that way). A read sent
                    // now is answered after every notification of that
                    // transaction: it proves the node ours, or sends us to
                    // the back of the queue (protocol section 4, grant rule).
                    if sole && event.kind == zk::EventType::NodeDeleted {
                        // The watch armed while waiting is no evidence, but
                        // it is dropped only once the read has armed the new
                        // one: dropping the last watcher of a path makes the
                        // client library send removeWatches, and with the
                        // read's watch registered first it sends nothing
                        // (one request less per handoff, counted on the
                        // wire by `make bench`'s wire-contended-2).
                        let waited_with = own.take();
                        let proof = self.prove(ctx, &own_path).await;
                        drop(waited_with);
                        if let Some(proof) = proof? {
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
    pub(crate) async fn look(
        &mut self,
        ctx: &Ctx,
        own_path: &str,
        read: bool,
    ) -> std::result::Result<Option<Look>, Step> {
        let zk = self.session.zk()?;
        let states = self.session.watch_from_now();
        let list = zk.list_children(&ctx.path);
        let read = read.then(|| zk.get_and_watch_data(own_path));
        let children = match ctx.op(list).await? {
            Ok(children) => children,
            Err(zk::Error::Server(zk::Code::NoNode)) => Vec::new(),
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
    pub(crate) async fn prove(&mut self, ctx: &Ctx, own_path: &str) -> std::result::Result<Option<OwnNodeProof>, Step> {
        let zk = self.session.zk()?;
        let states = self.session.watch_from_now();
        let read = zk.get_and_watch_data(own_path);
        Ok(self.read_own(ctx, own_path, read, states).await?.map(OwnNodeProof::read))
    }

    /// The reply to a read of our node with a watch (`states` taken just
    /// before it was sent): the armed watch if the node exists and our
    /// session owns it. `Restart` if it is gone or someone else's; `None`
    /// if ZooKeeper did not answer (once reconnected).
    pub(crate) async fn read_own(
        &mut self,
        ctx: &Ctx,
        own_path: &str,
        read: impl Future<Output = ZkResult<(Vec<u8>, zk::Stat, zk::Watch)>>,
        states: zk::StateWatcher,
    ) -> std::result::Result<Option<OwnWatch>, Step> {
        match ctx.op(read).await? {
            Ok((_, stat, watch)) => match OwnWatch::armed(&stat, watch, states, self.session.id) {
                Some(own) => Ok(Some(own)),
                None => {
                    log::info!(
                        "zklock: our node {own_path} is another session's now (ours is {:#x}); queueing again",
                        self.session.id
                    );
                    self.node = None;
                    Err(Step::Restart)
                },
            },
            Err(zk::Error::Server(zk::Code::NoNode)) => {
                log::info!("zklock: our node {own_path} is gone (session {:#x}); queueing again", self.session.id);
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
    /// lock been granted to another; if it is about to run out before the
    /// heartbeat can move it (a new session whose connect waited for a
    /// silent server), the lock would be suspended a moment after the
    /// grant. Either way, wait for the clock to move and look at the queue
    /// again (`None`), or, if the session ends meanwhile (a process stalled
    /// past its session timeout: its node went with it, and only the dead
    /// session's heartbeat could move its clock), start again on the new
    /// session at the back of the queue (`Restart`).
    pub(crate) async fn grant(
        &mut self,
        ctx: &Ctx,
        name: &str,
        proof: OwnNodeProof,
    ) -> std::result::Result<Option<Arc<Holding>>, Step> {
        // A cancel that races with the grant wins (section 4, step 6).
        if ctx.cancelled() {
            return Err(Step::Fail(Error::cancelled("acquire")));
        }
        if !self.session.clock.will_stay_safe() {
            log::info!(
                "zklock: {}/{name} is first, but session {:#x} is not safely alive for long enough; waiting for \
                 its heartbeat",
                ctx.path,
                self.session.id
            );
            let moved = ctx
                .race(async {
                    tokio::select! {
                        () = self.session.clock_advanced() => true,
                        () = self.session.ended() => false,
                    }
                })
                .await?;
            if !moved {
                log::info!(
                    "zklock: session {:#x} ended while {}/{name} waited for its heartbeat; queueing again",
                    self.session.id,
                    ctx.path
                );
                return Err(Step::Restart);
            }
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
            callbacks: Arc::default(),
            stop: watch::channel(false).0,
            changes: watch::channel(0).0,
            monitor: Mutex::new(None),
            watch_armed: AtomicBool::new(proof.watch.is_some()),
        });
        // The node now belongs to the holding: no cleanup by this attempt.
        self.node = None;
        log::debug!("zklock: granted {}/{name} (session {:#x}, token {czxid})", ctx.path, self.session.id);
        let task = tokio::spawn(monitor(holding.clone(), proof));
        if let Ok(mut slot) = holding.monitor.lock() {
            *slot = Some(task);
        }
        Ok(Some(holding))
    }

    /// Deletes what this attempt left behind (timeout, cancel, error):
    /// within [`CLEANUP_GRACE`] if ZooKeeper answers, else in the
    /// background, so that a failed acquire returns promptly even while
    /// the server is silent. `Err` when ZooKeeper refused the delete (an
    /// ACL without the delete right): the node stays until the session
    /// ends, and the caller must say so rather than queue again.
    pub(crate) async fn cleanup(&mut self, ctx: &Ctx) -> Result<()> {
        if let Some(node) = self.node.take() {
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
        } else if self.unknown_create {
            let what = Cleanup::Prefix { parent: ctx.path.clone(), prefix: self.protected.clone() };
            spawn_cleanup(ctx.shared.clone(), self.session.clone(), what);
        }
        Ok(())
    }
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
            let _ = mutex.begin_delete().finish().await;
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
    let uuid = uuid::Uuid::new_v4();
    let mut attempt = Attempt {
        session,
        name_prefix: names::node_name_prefix(ctx.mode, &uuid),
        protected: names::protected_prefix(&uuid),
        node: None,
        unknown_create: false,
        grace_end: None,
        mutex,
    };
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

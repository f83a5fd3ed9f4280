//! Multi-locks: several locks taken all or none ([`MultiLock`],
//! [`MultiGuard`]), a composition of lock handles, not a lock kind of its
//! own: each member is an ordinary lock on its path (its own node, queue,
//! states and fencing token), taken one after another in one canonical
//! order under one deadline and one cancel, so that two multi-locks over
//! overlapping paths never wait for each other in a cycle.

use std::future::Future;
use std::time::{Duration, Instant};

use futures_util::future::select_all;
use futures_util::StreamExt;

use crate::cleanup::CLEANUP_GRACE;
use crate::client::Client;
use crate::error::{Error, ErrorKind, Result};
use crate::lock::{Guard, Lock, PendingAcquire};
use crate::names::LockMode;
use crate::options::{AcquireOptions, Owner};
use crate::state::{LockState, ReleaseStatus};
use zklock_proto::acquire::Bugs;
use zklock_proto::multi::{Action, Event, Grace, MultiAcquire, ReadAnswer, Verdict, Why};

/// Several locks (any mix of exclusive, read and write, on distinct paths)
/// taken all or none: made by [`Client::multi_lock`].
///
/// An acquire takes the members one after another in the canonical order
/// (by their nodes' paths on the server: [`MultiLock::new`]), each waiting as long as the one deadline leaves; if one fails
/// (timeout, cancel, error) every member taken so far is released and the
/// call fails with that member's error. Every acquire of a multi-lock that
/// shares a path with another takes the shared paths in the same order, so
/// the two never deadlock. `Send + Sync`, cheap to clone; methods without
/// `_async` block the calling thread.
#[derive(Clone, Debug)]
pub struct MultiLock {
    /// The members in the canonical order.
    members: Vec<Lock>,
}

impl MultiLock {
    /// The member locks, in the order an acquire takes them (by their
    /// nodes' paths on the server: see [`MultiLock::new`]).
    pub fn locks(&self) -> &[Lock] {
        &self.members
    }

    /// Takes every member, waiting at most the options' timeout in total
    /// (`None`: no limit; zero: try each once; a `Duration` or an
    /// `Option<Duration>` converts into options). Returns one guard for the
    /// set. The cancel token cancels the member being waited for (and so
    /// the call). Blocks the calling thread; the call is the calling
    /// thread's unless the options name an owner (each reentrant member
    /// then reenters that owner's hold, as [`Lock::acquire`] does).
    ///
    /// # Errors
    /// The first failing member's error (`Timeout`, `Cancelled`, `Closed`,
    /// `ZooKeeper`, ...), after every member taken so far was released (or
    /// about 250 ms after the deadline or the error, their releases going
    /// on in the background); a member suspended when the last is granted,
    /// or whose node's read the connection left unanswered, is waited for
    /// within the deadline (`ConnectionLoss` if it is not held and read
    /// again by then; `Timeout` if the deadline finds its read out), unless
    /// another member is lost meanwhile: that member's error at once;
    /// a member lost while a later one is waited for: its error (`LockLost`,
    /// also for an expired session; `Closed`) as soon as the later member's
    /// acquire, stopped then, has ended (within about 250 ms, as a cancel);
    /// `InvalidArgument` for a multi-lock with no member.
    pub fn acquire(&self, options: impl Into<AcquireOptions>) -> Result<MultiGuard> {
        let options = options.into();
        let Some(first) = self.members.first() else { return Err(empty()) };
        let owner = options.owner_given().unwrap_or_else(Owner::current_thread);
        let work = self.acquire_members(options, Some(owner));
        first.client().shared().block_on(work)?
    }

    /// [`MultiLock::acquire`] as a future, started at once on the client's
    /// runtime (see [`Lock::acquire_async`]: the same ways to wait, and an
    /// owner only if the options name one). Dropping it before it completes
    /// cancels the member being waited for and releases the members
    /// already taken.
    ///
    /// # Errors
    /// As [`MultiLock::acquire`].
    pub fn acquire_async(&self, options: impl Into<AcquireOptions>) -> PendingAcquire<MultiGuard> {
        let Some(first) = self.members.first() else { return PendingAcquire::failed(empty()) };
        let (options, call) = options.into().for_one_call();
        let owner = options.owner_given();
        // What each member checks at once, before the first is taken (outside
        // attack round 32, F1: `started()` said nothing of them).
        for lock in &self.members {
            if let Err(e) = lock.check_start(&call, owner) {
                return PendingAcquire::failed(member_error(lock.path(), &e));
            }
        }
        let work = self.acquire_members(options, owner);
        PendingAcquire::start(first.client().shared(), call, work)
    }

    /// Takes every member in order; `owner`: whose call it is (each
    /// reentrant member then reenters that owner's hold, as
    /// [`Lock::acquire`] does).
    fn acquire_members(
        &self,
        options: AcquireOptions,
        owner: Option<Owner>,
    ) -> impl Future<Output = Result<MultiGuard>> + Send + 'static {
        let members = self.members.clone();
        let started = Instant::now();
        async move {
            // One deadline for the set, shared by every member (zero stays
            // zero: try each once). Passing each what was left of it, a
            // used-up timeout became zero, which tries once (outside test:
            // a multi-lock with a tiny timeout was granted, or failed
            // CONNECTION_LOSS after the operation timeout).
            let deadline = options.wait_limit().filter(|t| !t.is_zero()).and_then(|t| started.checked_add(t));
            let options = options.until(deadline);
            let cancel = options.call_token();
            // The decisions are the machine's (zklock-proto's `multi`);
            // this loop does what its actions say.
            let mut call = MultiAcquire::new(members.len(), Bugs::default());
            let mut taken: Vec<Guard> = Vec::with_capacity(members.len());
            // When the cancel was first seen: the releases' grace counts
            // from it.
            let mut cancelled_at = None;
            // The member waited for, and its state changes subscribed to
            // before its check (so that no change after the check is
            // missed).
            let mut changes: Option<(usize, tokio::sync::watch::Receiver<u64>)> = None;
            loop {
                let Some(action) = call.poll_action() else {
                    let_go(&taken, deadline).await;
                    return Err(Error::internal("multi-lock: the acquire stopped without an end"));
                };
                match action {
                    Action::Acquire(i) => {
                        // The member's own cancel (a child of the caller's,
                        // as the call's is): the machine stops this
                        // acquire without cancelling the call.
                        let stop = options.call_token();
                        let member = acquire_member(&members[i], &options, owner, stop.clone());
                        tokio::pin!(member);
                        let out = {
                            // An earlier member lost meanwhile (told once).
                            let lost = any_lost(&taken);
                            tokio::pin!(lost);
                            let mut told_lost = false;
                            loop {
                                tokio::select! {
                                    biased;
                                    out = &mut member => break out,
                                    // The caller's cancel reaches the member's
                                    // acquire by itself; it ends on its own.
                                    () = cancel.cancelled(), if cancelled_at.is_none() => {
                                        cancelled_at = Some(Instant::now());
                                        call.handle(Event::Cancelled);
                                    },
                                    (m, error) = &mut lost, if i > 0 && !told_lost => {
                                        told_lost = true;
                                        call.handle(Event::Lost { member: m, error });
                                        // The machine's answer while a member is
                                        // taken (its only one): stop it.
                                        if let Some(Action::Stop(n)) = call.poll_action() {
                                            debug_assert_eq!(n, i, "the member taken is the one stopped");
                                            stop.cancel();
                                        }
                                    },
                                }
                            }
                        };
                        match out {
                            Ok(guard) => {
                                let (session, token) = (guard.holding.session.id, guard.holding.token);
                                taken.push(guard);
                                call.handle(Event::Granted { member: i, session, token });
                            },
                            Err(error) => call.handle(Event::Failed { member: i, error }),
                        }
                    },
                    Action::Read(list) => {
                        // Every read sent before any answer is awaited; a
                        // cancel or the deadline ends the wait for them.
                        let mut reads = read_nodes(&taken, &list);
                        // Each of the two is told once (the machine ends on
                        // either).
                        let (mut told_cancel, mut told_deadline) = (false, false);
                        // A member lost meanwhile ends the call at once
                        // (told once: after the last answer the machine is
                        // past the reads, and its checks see the loss).
                        let lost = any_lost(&taken);
                        tokio::pin!(lost);
                        let mut told_lost = false;
                        while !call.is_done() {
                            let event = tokio::select! {
                                biased;
                                (member, error) = &mut lost, if !told_lost => {
                                    told_lost = true;
                                    Event::Lost { member, error }
                                },
                                () = cancel.cancelled(), if !told_cancel => {
                                    told_cancel = true;
                                    cancelled_at.get_or_insert_with(Instant::now);
                                    Event::Cancelled
                                },
                                () = until(deadline), if !told_deadline => {
                                    told_deadline = true;
                                    Event::DeadlinePassed
                                },
                                next = reads.next() => match next {
                                    Some((i, answer)) => Event::Read { member: i, answer },
                                    None => break,
                                },
                            };
                            call.handle(event);
                        }
                    },
                    Action::Check(i) => {
                        subscribe(&mut changes, &taken, i);
                        call.handle(Event::Checked { member: i, verdict: verdict(&taken[i]) });
                    },
                    Action::Wait(i) => {
                        // Subscribed at its check; else (a read again left
                        // unanswered) from now.
                        let rx = subscribe(&mut changes, &taken, i);
                        let h = &taken[i].holding;
                        let event = tokio::select! {
                            // Another member lost meanwhile ends the call
                            // at once.
                            (member, error) = any_lost(&taken) => Event::Lost { member, error },
                            // The sender lives as long as the guard: an
                            // error cannot come (it would end the wait
                            // rather than spin).
                            changed = rx.changed() => if changed.is_ok() {
                                Event::Changed { member: i }
                            } else {
                                Event::DeadlinePassed
                            },
                            () = h.session.clock_advanced() => Event::Changed { member: i },
                            () = cancel.cancelled() => Event::Cancelled,
                            () = until(deadline) => Event::DeadlinePassed,
                        };
                        if matches!(event, Event::Cancelled) {
                            cancelled_at.get_or_insert_with(Instant::now);
                        }
                        call.handle(event);
                    },
                    // Taken where the member's acquire runs (above).
                    Action::Stop(_) => {},
                    Action::Granted => {
                        let paths = members.iter().map(|l| l.path().to_owned()).collect();
                        return Ok(MultiGuard { guards: taken, paths });
                    },
                    Action::Fail { member, why, grace } => {
                        let until = match grace {
                            Grace::FromCancel => cancelled_at.or(deadline),
                            Grace::FromDeadline => deadline,
                        };
                        let_go(&taken, until).await;
                        let e = match why {
                            Why::Error(e) => e,
                            Why::Gone => Error::new(
                                ErrorKind::LockLost,
                                "our lock node is gone (deleted, or with our session) while a later member was taken",
                            ),
                            Why::Timeout => Error::timeout("acquire"),
                            Why::Cancelled => Error::cancelled("acquire"),
                        };
                        return Err(member_error(members[member].path(), &e));
                    },
                }
            }
        }
    }

    /// Tries each member once, without waiting: `None` (nothing held) if
    /// one of them is held by someone else.
    ///
    /// # Errors
    /// As [`MultiLock::acquire`], but never `Timeout`.
    pub fn try_acquire(&self) -> Result<Option<MultiGuard>> {
        crate::lock::tried_once(self.acquire(Duration::ZERO))
    }
}

/// One member's acquire, as [`Lock::acquire_async`] (dropping the future
/// cancels it), for `owner`, cancelled by `call`.
async fn acquire_member(
    lock: &Lock,
    options: &AcquireOptions,
    owner: Option<Owner>,
    call: tokio_util::sync::CancellationToken,
) -> Result<Guard> {
    let on_drop = call.clone().drop_guard();
    let work = lock.start_acquire(options, call, owner, None)?;
    let out = lock.client().shared().run(work).await;
    on_drop.disarm();
    out?
}

/// Releases the members `taken` (in reverse order) of an acquire that
/// failed: every release begins at once, on the client's runtime, where it
/// goes on to its end; the call waits for them until `CLEANUP_GRACE` after
/// `until` if it passed (the deadline of a timeout, the moment of a
/// cancel), else after now (a member's error), as a single acquire waits
/// for the deletion of its node. A silent server kept a multi-lock's timeout and cancel waiting
/// for the releases until its connection was given up, `2T/3` after the
/// silence began (outside attack round 36, F2).
async fn let_go(taken: &[Guard], until: Option<Instant>) {
    let releases: Vec<_> = taken.iter().rev().map(Guard::release_async).collect();
    let now = Instant::now();
    let end = match until {
        Some(d) if d <= now => (d + CLEANUP_GRACE).max(now),
        _ => now + CLEANUP_GRACE,
    };
    let _ = tokio::time::timeout_at(end.into(), settle(releases)).await;
}

/// Awaits `releases` one after another, each to the end: the error of the
/// last that failed, if any (after all: with the releases newest first,
/// the earliest member's), else `Pending` if any delete is not confirmed.
async fn settle(
    releases: impl IntoIterator<Item = impl Future<Output = Result<ReleaseStatus>>>,
) -> Result<ReleaseStatus> {
    let mut status = ReleaseStatus::Released;
    let mut error = None;
    for release in releases {
        match release.await {
            Ok(ReleaseStatus::Pending) => status = ReleaseStatus::Pending,
            Ok(ReleaseStatus::Released) => {},
            Err(e) => error = Some(e),
        }
    }
    error.map_or(Ok(status), Err)
}

/// Reads the nodes of the members `list` of `taken`, each on its own
/// session, every read sent before any answer is awaited (one round trip):
/// what each showed, in the order the answers come (the still-held check of the
/// members taken before the last, [`Action::Read`]: outside attack round
/// 12, a set came back held whose first member's node a third party had
/// deleted, or whose session had expired, while a later member waited). A
/// read the connection lost, or that has no answer within the operation
/// timeout, is `Unanswered`: the member is read again once it is safe.
fn read_nodes(taken: &[Guard], list: &[usize]) -> futures_util::stream::BoxStream<'static, (usize, ReadAnswer<Error>)> {
    let reads: Vec<_> = list
        .iter()
        .map(|&i| {
            let h = &taken[i].holding;
            let timeout = h.shared.options.operation_timeout;
            (i, timeout, h.session.zk().map(|zk| zk.exists(&h.node_path())))
        })
        .collect();
    // Answers in the order they come: each member's client answers on its
    // own, and a member read gone ends the call whatever the reads before
    // it wait for (outside attack round 44, F1).
    let answers = reads.into_iter().map(|(i, timeout, read)| async move {
        let answer = match read {
            Err(e) if e.kind() == ErrorKind::ConnectionLoss => ReadAnswer::Unanswered(e),
            Err(e) => ReadAnswer::Failed(e),
            Ok(read) => match tokio::time::timeout(timeout, read.value()).await {
                Ok(Ok(Some(stat))) => ReadAnswer::Node { owner: stat.ephemeral_owner, czxid: stat.czxid },
                Ok(Ok(None)) => ReadAnswer::NoNode,
                Ok(Err(e)) => {
                    let e = Error::from_zk("reading our lock node", e);
                    if e.kind() == ErrorKind::ConnectionLoss {
                        ReadAnswer::Unanswered(e)
                    } else {
                        ReadAnswer::Failed(e)
                    }
                },
                Err(_) => ReadAnswer::Unanswered(Error::new(
                    ErrorKind::ConnectionLoss,
                    "reading our lock node: no reply within the operation timeout",
                )),
            },
        };
        (i, answer)
    });
    Box::pin(answers.collect::<futures_util::stream::FuturesUnordered<_>>())
}

/// The receiver of member `i`'s state changes in `changes`, subscribed
/// now unless it already is (at its check: a change after the check is
/// not missed).
fn subscribe<'a>(
    changes: &'a mut Option<(usize, tokio::sync::watch::Receiver<u64>)>,
    taken: &[Guard],
    i: usize,
) -> &'a mut tokio::sync::watch::Receiver<u64> {
    if changes.as_ref().is_some_and(|(m, _)| *m != i) {
        *changes = None;
    }
    &mut changes.get_or_insert_with(|| (i, taken[i].holding.changes.subscribe())).1
}

/// A member's guard's `check()` as the machine takes it: a failure for the
/// connection (suspended, safety clock out) may pass; any other is a loss.
fn verdict(guard: &Guard) -> Verdict<Error> {
    match guard.check() {
        Ok(()) => Verdict::Safe,
        Err(e) if e.kind() == ErrorKind::ConnectionLoss => Verdict::Suspended(e),
        Err(e) => Verdict::Failed(e),
    }
}

/// Resolves with the first member of `taken` whose guard's `check()` fails
/// for anything but the connection (lost: its node gone or not ours, its
/// session ended, its client closed), and that error: at once if one
/// already does, else at the change of a member's state that makes it so
/// (outside attack round 45, F1-F3: a member lost while another's read was
/// out, or another was waited for, ended the call only when that one
/// answered or changed, or at the deadline).
async fn any_lost(taken: &[Guard]) -> (usize, Error) {
    // Subscribed before the first look: no change after it is missed.
    let mut changes: Vec<_> = taken.iter().map(|g| g.holding.changes.subscribe()).collect();
    loop {
        for rx in &mut changes {
            rx.borrow_and_update();
        }
        for (i, guard) in taken.iter().enumerate() {
            if let Verdict::Failed(e) = verdict(guard) {
                return (i, e);
            }
        }
        // The senders live as long as the guards: an error cannot come (it
        // would end the wait rather than spin).
        let next = changes.iter_mut().map(|rx| {
            Box::pin(async move {
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            })
        });
        select_all(next).await;
    }
}

/// Resolves at `deadline` (never without one).
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

fn empty() -> Error {
    Error::new(ErrorKind::InvalidArgument, "a multi-lock needs at least one member")
}

/// The guard of a [`MultiLock`]: every member held. `Send + Sync`.
/// Dropping it releases every member (as dropping each [`Guard`] does).
#[derive(Debug)]
pub struct MultiGuard {
    /// One guard per member, in the canonical order.
    guards: Vec<Guard>,
    /// Their lock paths.
    paths: Vec<String>,
}

impl MultiGuard {
    /// The members' guards, in the order of [`MultiLock::locks`] (each
    /// with its node, fencing token and state).
    pub fn guards(&self) -> &[Guard] {
        &self.guards
    }

    /// Succeeds only while every member is safely held.
    ///
    /// # Errors
    /// The first member's error that is not safely held (see
    /// [`Guard::check`]), naming its path.
    pub fn check(&self) -> Result<()> {
        for (guard, path) in self.guards.iter().zip(&self.paths) {
            guard.check().map_err(|e| member_error(path, &e))?;
        }
        Ok(())
    }

    /// The state of the set: `Released` once released, `Lost` if any member
    /// is lost, else `Suspended` if any is suspended, else `Held`.
    pub fn state(&self) -> LockState {
        let states: Vec<LockState> = self.guards.iter().map(Guard::state).collect();
        [LockState::Released, LockState::Lost, LockState::Suspended]
            .into_iter()
            .find(|s| states.contains(s))
            .unwrap_or(LockState::Held)
    }

    /// Resolves, with the error [`MultiGuard::check`] gives then, once any
    /// member is no longer safely held (see [`Guard::lost`]). Any executor
    /// can await it; dropping it stops nothing.
    pub fn lost(&self) -> impl Future<Output = Error> + Send + 'static {
        let paths = self.paths.clone();
        let each: Vec<_> = self.guards.iter().map(|g| Box::pin(g.lost())).collect();
        async move {
            let (e, i, _) = select_all(each).await;
            member_error(&paths[i], &e)
        }
    }

    /// Releases every member (newest first, each to the end). Blocks the
    /// calling thread.
    ///
    /// # Errors
    /// The error of the first member (in the order of
    /// [`MultiLock::locks`]) whose release failed, naming its path
    /// (`LockLost` if it had been lost, `NotHeld` if already released),
    /// after every member was released.
    pub fn release(&self) -> Result<ReleaseStatus> {
        let Some(first) = self.guards.first() else { return Ok(ReleaseStatus::Released) };
        first.client().shared().block_on(self.release_async())?
    }

    /// [`MultiGuard::release`] as a future that any executor can await.
    ///
    /// # Errors
    /// As [`MultiGuard::release`].
    pub fn release_async(&self) -> impl Future<Output = Result<ReleaseStatus>> + Send + 'static {
        // Each error names its member (outside attack round 43, O2: a lost
        // member's error did not say which).
        let each: Vec<_> = self
            .guards
            .iter()
            .zip(&self.paths)
            .rev()
            .map(|(g, path)| {
                let release = g.release_async();
                let path = path.clone();
                async move { release.await.map_err(|e| member_error(&path, &e)) }
            })
            .collect();
        settle(each)
    }
}

/// A member's error, naming its path.
fn member_error(path: &str, e: &Error) -> Error {
    Error::new(e.kind(), format!("multi-lock, member {}: {}", crate::error::shown(path), e.message()))
}

impl Client {
    /// A multi-lock over `members` (path and mode each: exclusive, read or
    /// write), taken all or none in the canonical order (see
    /// [`MultiLock`]).
    ///
    /// # Errors
    /// `InvalidArgument` for no member, a path named twice (it would wait
    /// behind itself) or a `Leader` member; `InvalidPath` for a bad path;
    /// `Closed`.
    pub fn multi_lock(&self, members: &[(&str, LockMode)]) -> Result<MultiLock> {
        self.multi_lock_with(members, crate::options::LockOptions::default())
    }

    /// [`Client::multi_lock`] with the members' lock options: with
    /// [`LockOptions::reentrant`](crate::LockOptions::reentrant) a thread
    /// that holds the set and acquires it again (blocking) gets another
    /// guard on the same nodes at once (Curator's `InterProcessMultiLock`
    /// over its reentrant mutexes); the nodes go at the last release.
    ///
    /// # Errors
    /// As [`Client::multi_lock`]; `InvalidArgument` for bad options.
    pub fn multi_lock_with(
        &self,
        members: &[(&str, LockMode)],
        options: crate::options::LockOptions,
    ) -> Result<MultiLock> {
        let mut locks = Vec::with_capacity(members.len());
        for &(path, mode) in members {
            if mode == LockMode::Leader {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("multi-lock member {}: an election is not a lock", crate::error::shown(path)),
                ));
            }
            locks.push(self.lock_with(path, mode, options.clone())?);
        }
        MultiLock::new(locks)
    }
}

impl MultiLock {
    /// A multi-lock over lock handles made before (exclusive, read or write
    /// sides; any client), so that a thread holding one of them through a
    /// reentrant handle reenters it from the set (Curator's
    /// `InterProcessMultiLock(List<InterProcessLock>)`).
    ///
    /// The members are taken in the order of their nodes' paths on the
    /// server (a client's chroot included; equal paths of two ensembles by
    /// their connect strings' servers), the order every process shares.
    ///
    /// # Errors
    /// `InvalidArgument` for no member, a path named twice (also one node
    /// named through two clients' chroots, when the clients' connect
    /// strings name a server alike: two spellings of one server, such as
    /// `localhost` and `127.0.0.1`, or a proxy in front of it, are not
    /// recognised, and such a set waits behind itself until its deadline),
    /// or an election or semaphore member. The same path on two ensembles
    /// is two nodes, not refused.
    pub fn new(members: Vec<Lock>) -> Result<MultiLock> {
        if members.is_empty() {
            return Err(empty());
        }
        let locks = members;
        if let Some(l) =
            locks.iter().find(|l| !matches!(l.mode(), LockMode::Exclusive | LockMode::Read | LockMode::Write))
        {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("multi-lock member {}: a {:?} is not a lock", crate::error::shown(l.path()), l.mode()),
            ));
        }
        // The one total order every process shares: the node's path on its
        // server (a client's chroot included), then the servers as the
        // connect string names them (equal paths on two ensembles). By the
        // path as each client names it, two sets over the same nodes
        // through a chroot and the root took them in opposite orders and
        // waited for each other (outside attack round 43, F1).
        let on_server = |l: &Lock| match l.client().shared().connect_string() {
            Some(cs) => {
                let mut hosts: Vec<String> = cs.hosts.iter().map(ToString::to_string).collect();
                hosts.sort();
                (format!("{}{}", cs.chroot, l.path()), hosts)
            },
            None => (l.path().to_owned(), Vec::new()),
        };
        let mut keyed: Vec<_> = locks.into_iter().map(|l| (on_server(&l), l)).collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        // One node named twice waits behind itself: the same path on the
        // server, through clients whose connect strings share a server (as
        // written: two spellings of one server, or a proxy, are not known
        // to be one; outside attack round 43, F2). The same path on two
        // ensembles is two nodes (round 43, O1: refused before).
        for (i, ((path, hosts), lock)) in keyed.iter().enumerate() {
            let same = keyed[i + 1..].iter().find(|((other_path, other_hosts), _)| {
                other_path == path && (hosts.is_empty() || hosts.iter().any(|h| other_hosts.contains(h)))
            });
            let message = match same {
                None => continue,
                Some((_, other)) if other.path() == lock.path() => {
                    format!("multi-lock: path {} named twice (it would wait behind itself)", crate::error::shown(path))
                },
                Some(_) => format!(
                    "multi-lock: node {} named twice, through two clients' chroots (it would wait behind itself)",
                    crate::error::shown(path)
                ),
            };
            return Err(Error::new(ErrorKind::InvalidArgument, message));
        }
        let locks: Vec<Lock> = keyed.into_iter().map(|(_, l)| l).collect();
        Ok(MultiLock { members: locks })
    }
}

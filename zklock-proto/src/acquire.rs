//! One acquire attempt (protocol section 4) as a state machine: the create
//! of our node, the recovery of a lost create reply, the wait on the one
//! node that blocks us, and the grant on a proof that our node is ours.
//!
//! An [`Attempt`] is fed [`Event`]s in the order the session delivered them
//! and answers with [`Action`]s. It never blocks, reads no clock and sends
//! nothing itself: the runner (`zklock-core`'s acquire, or the simulator)
//! sends each [`Request`] in the order the actions give them, feeds every
//! reply and watch notification back, and does what the other actions ask.
//!
//! What the runner promises, and the attempt relies on:
//! - Requests are sent in action order on one session, and ZooKeeper
//!   answers them in that order.
//! - Replies and notifications are fed in the order the session received
//!   them. A notification that came before a reply is fed before it (the
//!   runner looks for fired watches before it feeds a reply); feeding one
//!   that came after it first only makes the attempt more careful.
//! - Each reply names the connection it came on; connections of a session
//!   are numbered upwards.
//!
//! One attempt is one uuid: at most one node of ours. When it ends
//! ([`Action::Ended`]) or grants ([`Action::Granted`]), [`Attempt::leftover`]
//! says what its runner must clean up.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use crate::names::{self, Decision, LockMode};

/// Names a request of one attempt, and the watch it leaves. Numbered from 1
/// in the order the attempt asks for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(pub u64);

/// A request for ZooKeeper. Paths are full paths (below the chroot).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Create an ephemeral node; with `sequential` the server appends the
    /// sequence.
    Create {
        /// The path (its prefix, when sequential).
        path: String,
        /// The node's data.
        data: Vec<u8>,
        /// Ephemeral-sequential (else plain ephemeral).
        sequential: bool,
    },
    /// A transaction: check that `check` exists, then create the ephemeral
    /// node `path` (a downgrade's read node).
    CheckAndCreate {
        /// The node that must exist.
        check: String,
        /// The node to create.
        path: String,
        /// Its data.
        data: Vec<u8>,
    },
    /// getChildren, with the parent's Stat when `stat` (getChildren2), and
    /// a child watch when `watch`.
    Children {
        /// The parent.
        path: String,
        /// With the parent's Stat.
        stat: bool,
        /// Leave a child watch.
        watch: bool,
    },
    /// getData (the data is not needed: the Stat is), with a data watch
    /// when `watch`.
    GetData {
        /// The node.
        path: String,
        /// Leave a data watch.
        watch: bool,
    },
    /// exists, without a watch (it needs no read right on the node).
    Exists {
        /// The node.
        path: String,
    },
    /// delete, at `version` (`None`: any version).
    Delete {
        /// The node.
        path: String,
        /// The version the node must have.
        version: Option<i32>,
    },
    /// Make the lock path and its missing ancestors (as containers where
    /// the server has them). The runner may spend several requests on it;
    /// its answer is [`Answer::Done`] or a failure.
    MakeParents {
        /// The lock path.
        path: String,
    },
    /// A write that changes nothing: a setData at a version that never
    /// matches of a node nobody makes under `path` (zklock-core's
    /// `zk::probe_write`). ZooKeeper answers it (NoNode: the runner answers
    /// [`Answer::Done`] for an answer from a committed transaction) only
    /// once its leader committed it with a quorum, and a read sent right behind it
    /// on the same connection is answered by a server that has applied
    /// every change committed before it: what a read that must see our own
    /// create of unknown outcome is sent behind (protocol section 4, step
    /// 3). A server that lags behind the leader, or one cut off with a
    /// deposed leader that has not noticed yet, would answer that read
    /// from a tree without our node; a sync would not do (a deposed leader
    /// answers syncs alone). `Failure::Unknown` when no answer came.
    Probe {
        /// The node to write (the lock path).
        path: String,
    },
}

impl Request {
    /// Whether the request leaves a watch (named by its [`Id`]).
    pub fn watches(&self) -> bool {
        matches!(self, Request::Children { watch: true, .. } | Request::GetData { watch: true, .. })
    }
}

/// The parts of a node's Stat the protocol reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// The zxid of the node's creation (the fencing token).
    pub czxid: i64,
    /// The zxid of the last change to its children.
    pub pzxid: i64,
    /// The session that owns it (0: not ephemeral).
    pub owner: i64,
    /// The version of its data.
    pub version: i32,
}

/// A successful reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// A create: the name the node got (the last path component; for a
    /// transaction's create, the name asked for), and its Stat when the
    /// server sent it (a create inside a transaction comes without it on
    /// some releases: ZOOKEEPER-4026, ZOOKEEPER-4667).
    Created {
        /// The node's name.
        name: String,
        /// Its Stat, if sent.
        stat: Option<Stat>,
    },
    /// getChildren: the names, and the parent's Stat when asked for.
    Children {
        /// The child names (handed on without a copy: a list may hold the
        /// whole queue).
        names: Arc<[String]>,
        /// The parent's Stat.
        stat: Option<Stat>,
    },
    /// getData: the Stat.
    Data(Stat),
    /// exists: the Stat, `None` for no node.
    Exists(Option<Stat>),
    /// delete, or [`Request::MakeParents`].
    Done,
}

/// A failed reply, as the protocol tells failures apart. `E` is the
/// runner's error, carried to [`Why::Zk`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure<E> {
    /// No such node.
    NoNode,
    /// The node exists.
    NodeExists,
    /// A transaction's check failed (the checked node is gone).
    CheckFailed,
    /// The outcome is unknown: the connection was lost, or no reply came in
    /// time. The session may still live.
    Unknown,
    /// The session is gone (expired, closed): so are its nodes.
    SessionGone,
    /// The node's ACL does not allow it (trying again cannot help).
    NoAuth,
    /// Anything else: the attempt gives up with it.
    Other(E),
}

/// A reply, with the connection it came on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply<E> {
    /// The answer or the failure.
    pub result: Result<Answer, Failure<E>>,
    /// The connection (numbered upwards within the session).
    pub connection: u64,
}

/// A watch notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice {
    /// The node was deleted.
    Deleted,
    /// The node's data changed (or it was created).
    Changed,
    /// The node's children changed.
    Children,
    /// The session ended: the watch is gone.
    SessionEnded,
}

/// What the runner feeds an attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event<E> {
    /// The reply to a request.
    Reply(Id, Reply<E>),
    /// The watch left by a request fired.
    Watch(Id, Notice),
    /// After [`Action::AwaitReconnect`]: connected again, same session.
    Reconnected,
    /// After [`Action::AwaitReconnect`] or [`Action::AwaitClock`]: the
    /// session ended (its nodes are gone).
    SessionEnded,
    /// After [`Action::CheckClock`]: whether the safety clock says the
    /// session is safely alive for long enough to hand out the lock
    /// (protocol section 5).
    Clock {
        /// Safe to grant.
        safe: bool,
    },
    /// After [`Action::AwaitClock`]: the safety clock moved.
    ClockMoved,
    /// A serialised kind's mutex, held while we wait, was lost.
    MutexLost,
    /// The caller stopped the acquire (cancel, deadline); `closed`: the
    /// client was closed (then nothing is waited for).
    Stop {
        /// The client was closed.
        closed: bool,
    },
    /// After [`Action::Linger`]: the grace for the create's reply is over.
    GraceOver,
    /// A semaphore whose permits come from a shared count (Curator's
    /// `SharedCountReader`): the count is now this. A waiter looks at the
    /// queue again with it; leases held stay held.
    Permits(usize),
}

/// What an attempt asks of its runner, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action<E> {
    /// Send this request now (after the ones asked for before it).
    Send(Id, Request),
    /// The watch left by this request is not needed any more: drop it.
    DropWatch(Id),
    /// Wait for the session to be connected again; answer
    /// [`Event::Reconnected`] or [`Event::SessionEnded`].
    AwaitReconnect,
    /// Ask the safety clock; answer [`Event::Clock`].
    CheckClock,
    /// Wait for the safety clock to move; answer [`Event::ClockMoved`] or
    /// [`Event::SessionEnded`].
    AwaitClock,
    /// Stopped while our create was on its way: wait for its reply at most
    /// the cleanup grace, then feed [`Event::GraceOver`].
    Linger,
    /// Blocked: waiting for a notification (a point where a process may
    /// stall for long; the runner's fault points sit here).
    Waiting,
    /// The handle's guess of the sequence of its next node (see
    /// [`Config::seq_guess`]): the next one after ours when the list behind
    /// our create showed our node alone, else none.
    SeqGuess(Option<i64>),
    /// The lock is ours (the attempt is over).
    Granted(Grant),
    /// The attempt is over without the lock.
    Ended(End<E>),
}

/// A grant: our node, and the proof that it is ours.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// Our node's name.
    pub name: String,
    /// Its creation zxid (the fencing token).
    pub czxid: i64,
    /// The watch on our node that comes with the proof (the read that
    /// proved it ours left it), if any: it becomes the holder's.
    pub watch: Option<Id>,
    /// The request sent first in the exchange that proved the node ours:
    /// the holder must hear of any change of the session's connection
    /// since just before it was sent.
    pub since: Id,
}

/// How an attempt ended without the lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End<E> {
    /// Queue again with a new attempt: why.
    Restart(Requeue),
    /// Give up.
    Failed(Why<E>),
    /// Stopped by [`Event::Stop`].
    Stopped,
}

/// Why an attempt ended to queue again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requeue {
    /// Our node is gone: deleted by someone, or with our session.
    NodeGone,
    /// The node by our node's name is another session's.
    NotOurs,
    /// The session ended (its nodes went with it).
    SessionEnded,
    /// A serialised kind's mutex was lost while we waited.
    MutexLost,
}

/// Why an attempt gave up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why<E> {
    /// A try-once found the lock held by others.
    HeldByOthers,
    /// A downgrade found its write node gone: no read node was made.
    WriteLockLost,
    /// ZooKeeper refused a request: while doing `what`.
    Zk {
        /// What the attempt was doing.
        what: &'static str,
        /// The failure.
        failure: Failure<E>,
    },
}

/// Our node, once the attempt knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnNode {
    /// Its name (no parent).
    pub name: String,
    /// Its creation zxid.
    pub czxid: i64,
}

/// What an ended attempt leaves for its runner to clean up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leftover {
    /// Our node, to delete.
    pub node: Option<OwnNode>,
    /// A create whose outcome is unknown: look for a node with our
    /// protected prefix (and our session) and delete it.
    pub unknown_create: bool,
}

/// A write-to-read downgrade: the read node takes the held write node's
/// sequence and may be made only while the write node exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Downgrade {
    /// The write node's sequence.
    pub sequence: i64,
    /// The write node's full path.
    pub write_node: String,
}

/// What one attempt is for.
#[derive(Clone, Debug)]
pub struct Config {
    /// The lock path (the queue's parent).
    pub path: String,
    /// The lock kind.
    pub mode: LockMode,
    /// How many contenders hold at once (1 for a lock).
    pub permits: usize,
    /// Our node's data.
    pub data: Vec<u8>,
    /// Give up at once when blocked ([`Why::HeldByOthers`]).
    pub try_once: bool,
    /// A downgrade's read node, if this attempt makes one.
    pub downgrade: Option<Downgrade>,
    /// Our session.
    pub session: i64,
    /// The protected prefix `_c_<uuid>-` of this attempt.
    pub protected: String,
    /// Our node's name before its sequence (`_c_<uuid>-lock-`).
    pub name_prefix: String,
    /// A guess of the sequence our node will get: a read of that node goes
    /// out with the create, and if the guess is right, it arms our watch a
    /// round trip early. A guess is never evidence: a hit is checked like
    /// any read of our node.
    pub seq_guess: Option<i64>,
    /// Whether a serialised kind's mutex is held while we wait (see
    /// [`Event::MutexLost`]).
    pub serialised: bool,
    /// Bugs zklock once had, brought back for the simulator to find (only
    /// with the `history` feature; without it they are compiled out).
    #[doc(hidden)]
    pub bugs: Bugs,
}

/// Bugs zklock once had, each brought back by its switch when this crate is
/// built with the `history` feature (the simulator's tests must find each).
/// Without the feature every switch is ignored.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bugs {
    /// Grant when the sole blocker's deletion is notified while our watch on
    /// our node stayed silent, without a read (one transaction can delete
    /// the blocker and then our node; its second notification comes later).
    pub grant_on_silent_watch: bool,
    /// Grant when the sole blocker's deletion is notified, with no proof
    /// that our node still exists (the list-free handoff).
    pub grant_on_notice: bool,
    /// Go on waiting when the serialised kind's mutex is lost (a semaphore
    /// waiter whose mutex node a third party deleted: the next contender
    /// takes the mutex and queues too, and with one permit each counts the
    /// other; nobody is granted once the holder releases).
    pub ignore_mutex_lost: bool,
    /// When stopped with a create on its way, end at once (the node it
    /// makes is found by the background cleanup, after the caller was
    /// told).
    pub no_linger: bool,
    /// The holder ([`crate::hold`]): a release overtaken by the client's
    /// close reports the lock lost (LOCK_LOST) rather than closed (the
    /// delete found the node gone with the closed session).
    pub close_is_loss: bool,
    /// A downgrade creates its read node without the check that the write
    /// node still exists (protocol section 7): made after a third party
    /// deleted the write node, the read node takes the write node's
    /// sequence and sorts before a writer granted meanwhile.
    pub downgrade_without_check: bool,
    /// After a lost create reply, list the lock to find our node (and, in
    /// the sweep of one whose outcome stays unknown, to find what to
    /// delete) without a [`Request::Probe`] before the list: a server
    /// behind the leader (one cut off with a deposed leader) answers
    /// without our node, and the node is left in the queue, ahead of
    /// everyone, until our session ends.
    pub list_without_probe: bool,
    /// The holder ([`crate::hold`]): a release that waited for the hold's
    /// read of our node deletes at once whatever the read showed (another
    /// session's node of the same name, made by a third party after ours
    /// was deleted, is deleted too).
    pub release_trusts_any_read: bool,
    /// A multi-lock ([`crate::multi`]): once the last member is granted,
    /// the set is granted without reading the earlier members' nodes (a
    /// member whose node a third party deleted, or whose session expired,
    /// while a later member waited comes back as held: outside attack
    /// round 12).
    pub multi_without_reads: bool,
    /// A multi-lock: a member suspended when the last is granted fails the
    /// call at once (outside attack round 36, F1: every place given up
    /// with most of the deadline left).
    pub multi_fails_suspended: bool,
    /// A multi-lock: after a cancel, the releases' grace counts from the
    /// failure rather than the cancel (outside attack round 37, F1).
    pub multi_grace_from_end: bool,
    /// A multi-lock: a read of an earlier member's node that the
    /// connection left unanswered fails the call (outside attack round 43,
    /// F5: a connection that blinked failed it with most of the deadline
    /// left).
    pub multi_unanswered_fails: bool,
    /// A multi-lock: a cancel or the deadline does not end the reads of the
    /// earlier members' nodes (outside attack round 43, F3, F4, F6: the call
    /// returned when the connection was given up or the operation timed
    /// out, seconds late).
    pub multi_reads_ignore_stop: bool,
    /// A multi-lock: the reads' answers are taken only in the order sent,
    /// and the checks wait for the first suspended member before checking
    /// the ones after it (outside attack round 44, F1: a member found lost
    /// waited behind an earlier suspended one, holding the last member's
    /// lock, up to 10 s).
    pub multi_waits_in_order: bool,
    /// A multi-lock: a member read again and still unanswered is waited
    /// for at once, without a round of checks, so that a member lost while
    /// that read was out is not noticed until the wait ends (found by the
    /// simulator's multi-lock contenders, seed 60014688).
    pub multi_rereads_wait_unchecked: bool,
    /// A multi-lock: while reads are out or a member is waited for, a
    /// member's loss is not watched (`multi::Event::Lost` ignored): the
    /// call ends only once the read is answered, the member waited for
    /// changes, or the deadline passes (outside attack round 45, F1-F3: up
    /// to 25 s after a member was lost).
    pub multi_waits_unwatched: bool,
    /// A multi-lock: while a later member is taken, a member's loss is not
    /// watched (`multi::Event::Lost` ignored there): the call goes on
    /// waiting for that member's acquire, and fails only at the round of
    /// checks after it is granted (or when it fails), however long its
    /// queue (left open after outside attack round 45; mended in session
    /// 40).
    pub multi_takes_unwatched: bool,
}

impl Bugs {
    /// Whether the bug `which` is switched on (never without `history`).
    pub fn is_on(&self, which: fn(&Bugs) -> bool) -> bool {
        cfg!(feature = "history") && which(self)
    }
}

/// Proof that our node is ours after the last blocker was gone (section 4,
/// grant rule).
#[derive(Clone, Copy, Debug)]
struct Proof {
    watch: Option<Id>,
    since: Id,
}

/// Our watch on our node, left by a read that showed it ours.
#[derive(Clone, Copy, Debug)]
struct Own {
    id: Id,
    /// The connection of the read's reply.
    connection: u64,
}

/// A look at the queue.
struct Look {
    children: Arc<[String]>,
    /// A proof the look itself gives (the list right behind our create).
    proof: Option<Proof>,
    /// A read of our node pipelined behind the list, which showed it ours.
    fresh: Option<Own>,
    /// The connection of the list's reply.
    connection: u64,
}

/// Where to go once reconnected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum After {
    Recover,
    Parents,
    Look,
}

/// Our create is out, the list (and maybe a guessed read) behind it.
#[derive(Debug)]
struct Creating {
    create: Id,
    list: Id,
    /// A read of the node we guess we make: its name and request.
    guess: Option<(String, Id)>,
    /// Our node's name, once known (a downgrade's, from the start).
    name: Option<String>,
    /// Our node's Stat, once known.
    made: Option<Stat>,
    /// The read of our node when the create came without its Stat.
    stat_read: Option<Id>,
}

#[derive(Debug)]
enum Phase {
    Create(Creating),
    Parents { req: Id },
    Reconnect { then: After },
    RecoverList { probe: Option<Id>, list: Id },
    RecoverExists { children: Arc<[String]>, checks: Vec<(String, Id)> },
    Look { list: Id, read: Option<Id> },
    Prove { read: Id, old: Option<Id> },
    Clock { proof: Proof },
    ClockWait,
    WatchChildren { list: Id, read: Option<Id> },
    WaitChildren { watch: Id },
    WatchBlocker { get: Id, read: Option<Id>, sole: bool },
    WaitBlocker { watch: Id, sole: bool },
    Linger { create: Id },
    Done,
}

/// One acquire attempt. See the module documentation.
pub struct Attempt<E> {
    cfg: Config,
    next: u64,
    actions: VecDeque<Action<E>>,
    phase: Phase,
    /// Replies the phase is waiting for, as they came.
    got: HashMap<Id, Reply<E>>,
    /// Requests whose watch the runner holds for us.
    watches: HashSet<Id>,
    node: Option<OwnNode>,
    unknown_create: bool,
    own: Option<Own>,
    /// The newest connection a reply came on.
    connection: u64,
    mutex_lost: bool,
    /// A notification on the watch we are about to wait on, come before
    /// the wait began (the read pipelined behind the request that left
    /// the watch was still out): the wait ends as soon as it begins.
    early: Option<(Id, Notice)>,
    /// Our node's name once it is gone.
    last_node: Option<String>,
    /// How often making the lock path found an ancestor gone.
    parents_reaped: u32,
}

/// How often the lock path is made again when an ancestor went before its
/// child was made (see [`Request::MakeParents`]).
const PARENTS_REAPED: u32 = 3;

impl<E: Clone> Attempt<E> {
    /// A new attempt; its first actions (the create and the list behind
    /// it) are ready at once.
    pub fn new(cfg: Config) -> Attempt<E> {
        let mut a = Attempt {
            cfg,
            next: 0,
            actions: VecDeque::new(),
            phase: Phase::Done,
            got: HashMap::new(),
            watches: HashSet::new(),
            node: None,
            unknown_create: false,
            own: None,
            connection: 0,
            mutex_lost: false,
            early: None,
            last_node: None,
            parents_reaped: 0,
        };
        a.create();
        a
    }

    /// The next action, if any.
    pub fn poll_action(&mut self) -> Option<Action<E>> {
        self.actions.pop_front()
    }

    /// Whether the attempt is over (granted or ended).
    pub fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }

    /// What the runner must clean up once the attempt is over (after a
    /// grant, nothing: the node belongs to the holder).
    pub fn leftover(&self) -> Leftover {
        Leftover { node: self.node.clone(), unknown_create: self.unknown_create }
    }

    /// The full path of our node `name`.
    fn path_of(&self, name: &str) -> String {
        format!("{}/{name}", self.cfg.path)
    }

    fn send(&mut self, req: Request) -> Id {
        self.next += 1;
        let id = Id(self.next);
        if req.watches() {
            self.watches.insert(id);
        }
        self.actions.push_back(Action::Send(id, req));
        id
    }

    fn drop_watch(&mut self, id: Id) {
        if self.watches.remove(&id) {
            self.actions.push_back(Action::DropWatch(id));
        }
    }

    fn drop_own(&mut self) {
        if let Some(own) = self.own.take() {
            self.drop_watch(own.id);
        }
    }

    fn end(&mut self, end: End<E>) {
        self.drop_all_but(None);
        self.phase = Phase::Done;
        self.actions.push_back(Action::Ended(end));
    }

    /// Ends to queue again (`why`). A node that is gone, or not ours, is
    /// not ours to delete; otherwise ours stays in [`Attempt::leftover`]
    /// (a lost mutex leaves it in the queue).
    fn requeue(&mut self, why: Requeue) {
        if matches!(why, Requeue::NodeGone | Requeue::NotOurs) {
            if let Some(n) = self.node.take() {
                self.last_node = Some(n.name);
            }
        }
        self.end(End::Restart(why));
    }

    fn restart_gone(&mut self) {
        self.requeue(Requeue::NodeGone);
    }

    /// The name of the node this attempt had last (for the runner's log
    /// when it ends to queue again).
    pub fn last_node(&self) -> Option<&str> {
        self.node.as_ref().map(|n| n.name.as_str()).or(self.last_node.as_deref())
    }

    /// Gives up on `f` while doing `what`; a session that is gone took our
    /// node with it: queue again.
    fn fail(&mut self, what: &'static str, failure: Failure<E>) {
        match failure {
            Failure::SessionGone => self.requeue(Requeue::SessionEnded),
            failure => self.end(End::Failed(Why::Zk { what, failure })),
        }
    }

    /// Drops every watch we hold but `keep`.
    fn drop_all_but(&mut self, keep: Option<Id>) {
        let mut ids: Vec<Id> = self.watches.iter().copied().filter(|id| Some(*id) != keep).collect();
        ids.sort();
        for id in ids {
            self.drop_watch(id);
        }
        if self.own.is_some_and(|o| Some(o.id) != keep) {
            self.own = None;
        }
    }

    fn reconnect(&mut self, then: After) {
        self.got.clear();
        self.early = None;
        self.phase = Phase::Reconnect { then };
        self.actions.push_back(Action::AwaitReconnect);
    }

    /// Whether our watch is still good as of a reply on `connection`: it
    /// has not fired (it would be gone) and no reconnect came between.
    fn intact(&self, connection: u64) -> Option<Own> {
        self.own.filter(|o| o.connection == connection)
    }

    /// Sends the create of our node, the list behind it (answered after it,
    /// so it includes our node) and, with a guess of our name, a read of it.
    fn create(&mut self) {
        self.got.clear();
        self.early = None;
        let (create, name) = match &self.cfg.downgrade {
            None => {
                let path = self.path_of(&self.cfg.name_prefix);
                (Request::Create { path, data: self.cfg.data.clone(), sequential: true }, None)
            },
            // The read node takes the write node's sequence, so it sorts
            // before every node queued since: made only while the write
            // node exists, in one transaction with a check of it.
            Some(d) if self.cfg.bugs.is_on(|b| b.downgrade_without_check) => {
                let name = format!("{}{:010}", self.cfg.name_prefix, d.sequence);
                let path = self.path_of(&name);
                (Request::Create { path, data: self.cfg.data.clone(), sequential: false }, Some(name))
            },
            Some(d) => {
                let name = format!("{}{:010}", self.cfg.name_prefix, d.sequence);
                let req = Request::CheckAndCreate {
                    check: d.write_node.clone(),
                    path: self.path_of(&name),
                    data: self.cfg.data.clone(),
                };
                (req, Some(name))
            },
        };
        let create = self.send(create);
        let list = self.send(Request::Children { path: self.cfg.path.clone(), stat: true, watch: false });
        let guess = match (&self.cfg.downgrade, self.cfg.seq_guess) {
            (None, Some(seq)) => {
                let name = format!("{}{seq:010}", self.cfg.name_prefix);
                let read = self.send(Request::GetData { path: self.path_of(&name), watch: true });
                Some((name, read))
            },
            _ => None,
        };
        self.unknown_create = true;
        self.phase = Phase::Create(Creating { create, list, guess, name, made: None, stat_read: None });
    }

    /// Feeds one event.
    pub fn handle(&mut self, event: Event<E>) {
        match event {
            Event::Reply(id, reply) => {
                self.connection = self.connection.max(reply.connection);
                if self.wanted(id) {
                    self.got.insert(id, reply);
                    self.advance();
                }
            },
            Event::Watch(id, notice) => self.notice(id, notice),
            Event::Reconnected => {
                if let Phase::Reconnect { then } = self.phase {
                    match then {
                        After::Recover => self.recover(),
                        After::Parents => self.parents(),
                        After::Look => self.look(),
                    }
                }
            },
            Event::SessionEnded => {
                if matches!(self.phase, Phase::Reconnect { .. } | Phase::ClockWait) {
                    self.requeue(Requeue::SessionEnded);
                }
            },
            Event::Clock { safe } => {
                if let Phase::Clock { proof } = self.phase {
                    if safe {
                        self.granted(proof);
                    } else {
                        // Not safely alive for long enough: wait for the
                        // clock to move, then look again (the proof is
                        // stale by then).
                        if let Some(w) = proof.watch {
                            self.drop_watch(w);
                        }
                        self.phase = Phase::ClockWait;
                        self.actions.push_back(Action::AwaitClock);
                    }
                }
            },
            Event::ClockMoved => {
                if matches!(self.phase, Phase::ClockWait) {
                    self.look();
                }
            },
            Event::MutexLost if self.cfg.bugs.is_on(|b| b.ignore_mutex_lost) => {},
            Event::MutexLost => {
                self.mutex_lost = true;
                if matches!(self.phase, Phase::WaitChildren { .. }) {
                    self.look();
                }
            },
            Event::Stop { closed } => self.stop(closed),
            Event::Permits(n) => {
                let more = n > self.cfg.permits;
                self.cfg.permits = n;
                // More permits may let a waiter in; fewer never take a
                // lease away (Curator: the count bounds new leases).
                if more && matches!(self.phase, Phase::WaitChildren { .. }) {
                    self.look();
                }
            },
            Event::GraceOver => {
                if matches!(self.phase, Phase::Linger { .. }) {
                    self.end(End::Stopped);
                }
            },
        }
    }

    fn stop(&mut self, closed: bool) {
        // Stopped already and waiting for the create's reply: a second stop
        // (a cancel, then the deadline) changes nothing; a close ends it.
        if matches!(self.phase, Phase::Done) || (matches!(self.phase, Phase::Linger { .. }) && !closed) {
            return;
        }
        // Stopped with our create on its way: wait (a grace) for its
        // reply, so that the node it made is cleaned up before the caller
        // is told.
        if let Phase::Create(Creating { create, made: None, stat_read: None, .. }) = self.phase {
            if !closed && !self.cfg.bugs.is_on(|b| b.no_linger) {
                self.drop_all_but(None);
                self.got.clear();
                self.phase = Phase::Linger { create };
                self.actions.push_back(Action::Linger);
                return;
            }
        }
        self.end(End::Stopped);
    }

    /// Whether the current phase waits for the reply to `id`.
    fn wanted(&self, id: Id) -> bool {
        match &self.phase {
            Phase::Create(Creating { create, list, guess, stat_read, .. }) => {
                id == *create || id == *list || guess.as_ref().is_some_and(|g| g.1 == id) || *stat_read == Some(id)
            },
            Phase::Parents { req } | Phase::Prove { read: req, .. } => id == *req,
            Phase::RecoverList { probe, list } => id == *list || *probe == Some(id),
            Phase::Linger { create } => id == *create,
            Phase::RecoverExists { checks, .. } => checks.iter().any(|c| c.1 == id),
            Phase::Look { list, read } | Phase::WatchChildren { list, read } => id == *list || *read == Some(id),
            Phase::WatchBlocker { get, read, .. } => id == *get || *read == Some(id),
            _ => false,
        }
    }

    fn notice(&mut self, id: Id, notice: Notice) {
        if !self.watches.remove(&id) {
            return;
        }
        if self.own.is_some_and(|o| o.id == id) {
            // Something happened to our node (or the session ended).
            self.own = None;
            match self.phase {
                Phase::WaitBlocker { .. } | Phase::WaitChildren { .. } => match notice {
                    Notice::SessionEnded => self.requeue(Requeue::SessionEnded),
                    Notice::Deleted if matches!(self.phase, Phase::WaitBlocker { .. }) => self.restart_gone(),
                    _ => self.look(),
                },
                _ => {},
            }
            return;
        }
        match self.phase {
            Phase::WaitBlocker { watch, sole } if watch == id => {
                if notice == Notice::SessionEnded {
                    return self.requeue(Requeue::SessionEnded);
                }
                // The only node before ours is gone and none can take its
                // place: ours is first if it still exists. Our watch on it,
                // silent through this notification, does not show that: one
                // transaction may delete the blocker and then our node, and
                // the second notification comes after the first. A read
                // sent now is answered after every notification of that
                // transaction (section 4, grant rule). The old watch is
                // dropped once the read has left a new one.
                if sole && notice == Notice::Deleted && self.cfg.bugs.is_on(|b| b.grant_on_notice) {
                    return self.prove_done(Proof { watch: None, since: id });
                }
                if sole && notice == Notice::Deleted && self.cfg.bugs.is_on(|b| b.grant_on_silent_watch) {
                    if let Some(o) = self.own.take() {
                        return self.prove_done(Proof { watch: Some(o.id), since: o.id });
                    }
                }
                if sole && notice == Notice::Deleted {
                    let old = self.own.take().map(|o| o.id);
                    let read = self.read_own();
                    self.phase = Phase::Prove { read, old };
                } else {
                    self.look();
                }
            },
            Phase::WaitChildren { watch } if watch == id => self.look(),
            // Before the wait on it began: kept for the wait.
            Phase::WatchChildren { list: watch, .. } | Phase::WatchBlocker { get: watch, .. } if watch == id => {
                self.watches.insert(id);
                self.early = Some((id, notice));
            },
            _ => {},
        }
    }

    /// Begins the wait on `watch` (the phase set): at once over if its
    /// notification came already.
    fn begin_wait(&mut self) {
        self.actions.push_back(Action::Waiting);
        if let Some((id, notice)) = self.early.take() {
            self.notice(id, notice);
        }
    }

    fn read_own(&mut self) -> Id {
        let name = self.node.as_ref().map(|n| n.name.clone()).unwrap_or_default();
        self.send(Request::GetData { path: self.path_of(&name), watch: true })
    }

    /// Lists the queue, with a read of our node behind it when we hold no
    /// watch on it.
    fn look(&mut self) {
        self.got.clear();
        self.early = None;
        if self.node.is_none() {
            return self.restart_gone();
        }
        let list = self.send(Request::Children { path: self.cfg.path.clone(), stat: false, watch: false });
        let read = self.own.is_none().then(|| self.read_own());
        self.phase = Phase::Look { list, read };
    }

    fn parents(&mut self) {
        self.got.clear();
        let req = self.send(Request::MakeParents { path: self.cfg.path.clone() });
        self.phase = Phase::Parents { req };
    }

    /// Looks for our node after a lost create reply: a list of the lock,
    /// behind a probe write that makes the server answering it one that
    /// has applied our create if it was made ([`Request::Probe`]).
    fn recover(&mut self) {
        self.got.clear();
        let probe = (!self.cfg.bugs.is_on(|b| b.list_without_probe))
            .then(|| self.send(Request::Probe { path: self.cfg.path.clone() }));
        let list = self.send(Request::Children { path: self.cfg.path.clone(), stat: false, watch: false });
        self.phase = Phase::RecoverList { probe, list };
    }

    /// Works through the replies that came, as far as they allow.
    fn advance(&mut self) {
        loop {
            let progressed = match std::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Create(c) => self.on_create(c),
                Phase::Parents { req } => match self.got.remove(&req) {
                    None => self.wait(Phase::Parents { req }),
                    Some(r) => {
                        match r.result {
                            Ok(_) => self.create(),
                            Err(Failure::Unknown) => self.reconnect(After::Parents),
                            // An ancestor (a container too) reaped between
                            // its create and its child's: make them again,
                            // a few times (a server that refuses for ever
                            // must not keep us here).
                            Err(Failure::NoNode) if self.parents_reaped < PARENTS_REAPED => {
                                self.parents_reaped += 1;
                                self.parents();
                            },
                            Err(f) => self.fail("creating the lock path", f),
                        }
                        true
                    },
                },
                Phase::RecoverList { probe, list } if probe.is_some_and(|p| !self.got.contains_key(&p)) => {
                    self.wait(Phase::RecoverList { probe, list })
                },
                Phase::RecoverList { probe, list } => match self.got.remove(&list) {
                    None => self.wait(Phase::RecoverList { probe, list }),
                    Some(r) => {
                        match probe.and_then(|p| self.got.remove(&p)).map(|p| p.result) {
                            // Without the probe's answer the list may be
                            // of a tree without our create: look again.
                            Some(Err(Failure::Unknown)) => self.reconnect(After::Recover),
                            _ => self.on_recover_list(r),
                        }
                        true
                    },
                },
                Phase::RecoverExists { children, checks } => {
                    if checks.iter().all(|c| self.got.contains_key(&c.1)) {
                        self.on_recover_exists(children, checks);
                        true
                    } else {
                        self.wait(Phase::RecoverExists { children, checks })
                    }
                },
                Phase::Look { list, read } => {
                    if self.got.contains_key(&list) && read.is_none_or(|r| self.got.contains_key(&r)) {
                        self.on_look(list, read);
                        true
                    } else {
                        self.wait(Phase::Look { list, read })
                    }
                },
                Phase::Prove { read, old } => match self.got.remove(&read) {
                    None => self.wait(Phase::Prove { read, old }),
                    Some(r) => {
                        if let Some(old) = old {
                            self.drop_watch(old);
                        }
                        if let Some(own) = self.read_own_reply(read, r, After::Look) {
                            self.prove_done(Proof { watch: Some(own.id), since: own.id });
                        }
                        true
                    },
                },
                Phase::WatchChildren { list, read } => {
                    if self.got.contains_key(&list) && read.is_none_or(|r| self.got.contains_key(&r)) {
                        self.on_watch_children(list, read);
                        true
                    } else {
                        self.wait(Phase::WatchChildren { list, read })
                    }
                },
                Phase::WatchBlocker { get, read, sole } => {
                    if self.got.contains_key(&get) && read.is_none_or(|r| self.got.contains_key(&r)) {
                        self.on_watch_blocker(get, read, sole);
                        true
                    } else {
                        self.wait(Phase::WatchBlocker { get, read, sole })
                    }
                },
                Phase::Linger { create } => match self.got.remove(&create) {
                    None => self.wait(Phase::Linger { create }),
                    Some(r) => {
                        match r.result {
                            Ok(Answer::Created { name, stat: Some(stat) }) => {
                                self.node = Some(OwnNode { name, czxid: stat.czxid });
                                self.unknown_create = false;
                            },
                            // Made, its Stat not sent: looked for by prefix.
                            Ok(_) | Err(Failure::Unknown) => {},
                            Err(_) => self.unknown_create = false,
                        }
                        self.end(End::Stopped);
                        true
                    },
                },
                other => self.wait(other),
            };
            if !progressed || matches!(self.phase, Phase::Done) {
                return;
            }
        }
    }

    /// Puts `phase` back: nothing to do until more replies come.
    fn wait(&mut self, phase: Phase) -> bool {
        self.phase = phase;
        false
    }

    fn on_create(&mut self, c: Creating) -> bool {
        let Creating { create, list, guess, name, made, stat_read } = c;
        // The create's reply (and, when it came without its Stat, the read
        // of the node it made).
        let (name, made) = match (made, stat_read) {
            (Some(stat), _) => (name, stat),
            (None, Some(read)) => {
                let Some(r) = self.got.remove(&read) else {
                    return self.wait(Phase::Create(Creating { create, list, guess, name, made, stat_read }));
                };
                match r.result {
                    Ok(Answer::Exists(Some(stat))) if stat.owner == self.cfg.session => (name, stat),
                    Ok(_) => return self.leave_create(&guess, false, Self::restart_gone),
                    Err(Failure::Unknown) => return self.leave_create(&guess, true, |a| a.reconnect(After::Recover)),
                    Err(f) => return self.leave_create(&guess, true, |a| a.fail("reading the read node made", f)),
                }
            },
            (None, None) => {
                let Some(r) = self.got.remove(&create) else {
                    return self.wait(Phase::Create(Creating { create, list, guess, name, made, stat_read }));
                };
                match r.result {
                    Ok(Answer::Created { name: made_name, stat: Some(stat) }) => {
                        (Some(name.unwrap_or(made_name)), stat)
                    },
                    Ok(Answer::Created { name: made_name, stat: None }) => {
                        let name = name.unwrap_or(made_name);
                        let read = self.send(Request::Exists { path: self.path_of(&name) });
                        self.phase = Phase::Create(Creating {
                            create,
                            list,
                            guess,
                            name: Some(name),
                            made: None,
                            stat_read: Some(read),
                        });
                        return true;
                    },
                    Ok(_) => return self.leave_create(&guess, false, Self::restart_gone),
                    Err(Failure::CheckFailed) => {
                        return self.leave_create(&guess, false, |a| a.end(End::Failed(Why::WriteLockLost)))
                    },
                    Err(Failure::NoNode) => return self.leave_create(&guess, false, Self::parents),
                    // A downgrade's create retried after a lost reply finds
                    // its own node: recovered like a lost reply.
                    Err(Failure::Unknown) => return self.leave_create(&guess, true, |a| a.reconnect(After::Recover)),
                    Err(Failure::NodeExists) if self.cfg.downgrade.is_some() => {
                        return self.leave_create(&guess, true, |a| a.reconnect(After::Recover))
                    },
                    Err(f) => return self.leave_create(&guess, false, |a| a.fail("creating the lock node", f)),
                }
            },
        };
        let name = name.unwrap_or_default();
        self.unknown_create = false;
        self.node = Some(OwnNode { name: name.clone(), czxid: made.czxid });
        // The list behind the create (and the guessed read behind it, if
        // the guess named our node): until they come, wait.
        let guessed_ours = guess.as_ref().filter(|(g, _)| *g == name).map(|(_, read)| *read);
        let Some(listed) = self.got.get(&list).filter(|_| guessed_ours.is_none_or(|read| self.got.contains_key(&read)))
        else {
            let c = Creating { create, list, guess, name: Some(name), made: Some(made), stat_read };
            return self.wait(Phase::Create(c));
        };
        let (children, parent) = match &listed.result {
            Ok(Answer::Children { names, stat }) => (names.clone(), *stat),
            // No first look: look again (with a read of our node).
            _ => return self.leave_create(&guess, false, Self::look),
        };
        let connection = listed.connection;
        let alone = children.len() == 1;
        let next = names::parse_child(&name).filter(|_| alone).map(|n| n.sequence.saturating_add(1));
        self.actions.push_back(Action::SeqGuess(next));
        match guess {
            Some((guessed, read)) if guessed == name => {
                let Some(r) = self.got.remove(&read) else { return true };
                self.got.remove(&list);
                // The guess was right: the read, answered after the list,
                // shows our node (or what became of it).
                let fresh = match r.result {
                    Ok(Answer::Data(got)) if got.czxid == made.czxid && got.owner == self.cfg.session => {
                        Some(Own { id: read, connection: r.connection })
                    },
                    _ => {
                        self.drop_watch(read);
                        None
                    },
                };
                self.decide(Look { children, proof: None, fresh, connection });
            },
            guess => {
                self.got.remove(&list);
                if let Some((_, g)) = &guess {
                    self.drop_watch(*g);
                }
                // The list right behind our create shows that no child was
                // created or deleted since (pzxid is still our create's
                // zxid): the node listed is the one we created.
                let proof = parent.filter(|p| p.pzxid == made.czxid).map(|_| Proof { watch: None, since: create });
                self.decide(Look { children, proof, fresh: None, connection });
            },
        }
        true
    }

    /// Leaves the create phase without a node known: the guessed read's
    /// watch is dropped, the create's outcome stays unknown only if
    /// `unknown`, then `then`.
    fn leave_create(&mut self, guess: &Option<(String, Id)>, unknown: bool, then: impl FnOnce(&mut Self)) -> bool {
        if let Some((_, g)) = guess {
            self.drop_watch(*g);
        }
        if !unknown {
            self.unknown_create = false;
        }
        then(self);
        true
    }

    fn on_recover_list(&mut self, r: Reply<E>) {
        match r.result {
            Ok(Answer::Children { names: children, .. }) => {
                let mine = names::own_nodes(&children, &self.cfg.protected);
                if mine.is_empty() {
                    self.unknown_create = false;
                    return self.create();
                }
                let checks = mine
                    .into_iter()
                    .map(|n| {
                        let id = self.send(Request::Exists { path: self.path_of(&n.name) });
                        (n.name, id)
                    })
                    .collect();
                self.phase = Phase::RecoverExists { children, checks };
            },
            Ok(_) => self.restart_gone(),
            Err(Failure::NoNode) => {
                self.unknown_create = false;
                self.create();
            },
            Err(Failure::Unknown) => self.reconnect(After::Recover),
            Err(f) => self.fail("listing the lock after a lost create reply", f),
        }
    }

    fn on_recover_exists(&mut self, children: Arc<[String]>, checks: Vec<(String, Id)>) {
        let mut adopted: Option<OwnNode> = None;
        let mut retry = false;
        for (name, id) in checks {
            let Some(r) = self.got.remove(&id) else { continue };
            match r.result {
                Ok(Answer::Exists(Some(stat))) if stat.owner == self.cfg.session => {
                    if adopted.is_none() {
                        adopted = Some(OwnNode { name, czxid: stat.czxid });
                    } else {
                        self.send(Request::Delete { path: self.path_of(&name), version: None });
                    }
                },
                Ok(_) | Err(Failure::NoNode) => {},
                Err(Failure::Unknown) => retry = true,
                Err(f) => return self.fail("looking at our lock node", f),
            }
        }
        if retry {
            return self.reconnect(After::Recover);
        }
        self.unknown_create = false;
        match adopted {
            Some(node) => {
                self.node = Some(node);
                self.decide(Look { children, proof: None, fresh: None, connection: self.connection });
            },
            None => self.create(),
        }
    }

    /// The reply to a read of our node with a watch: our watch if the node
    /// is ours. Otherwise the attempt ends (gone or someone else's: not
    /// ours to delete) or waits to reconnect and goes on to `then`.
    fn read_own_reply(&mut self, id: Id, r: Reply<E>, then: After) -> Option<Own> {
        match r.result {
            Ok(Answer::Data(stat)) if stat.owner == self.cfg.session => Some(Own { id, connection: r.connection }),
            Ok(_) => {
                self.drop_watch(id);
                self.requeue(Requeue::NotOurs);
                None
            },
            Err(Failure::NoNode) => {
                self.drop_watch(id);
                self.restart_gone();
                None
            },
            Err(Failure::Unknown) => {
                self.drop_watch(id);
                self.reconnect(then);
                None
            },
            Err(f) => {
                self.drop_watch(id);
                self.fail("reading our lock node", f);
                None
            },
        }
    }

    fn on_look(&mut self, list: Id, read: Option<Id>) {
        let Some(r) = self.got.remove(&list) else { return };
        let read_reply = read.and_then(|id| self.got.remove(&id));
        let connection = r.connection;
        let children = match r.result {
            Ok(Answer::Children { names, .. }) => names,
            Ok(_) | Err(Failure::NoNode) => Arc::default(),
            Err(Failure::Unknown) => {
                if let Some(id) = read {
                    self.drop_watch(id);
                }
                return self.reconnect(After::Look);
            },
            Err(f) => return self.fail("listing the lock", f),
        };
        let fresh = match (read, read_reply) {
            (Some(id), Some(rr)) => match self.read_own_reply(id, rr, After::Look) {
                Some(own) => Some(own),
                None => return,
            },
            _ => None,
        };
        self.decide(Look { children, proof: None, fresh, connection });
    }

    /// Decides on a look at the queue (section 4, step 4).
    fn decide(&mut self, look: Look) {
        let Some(name) = self.node.as_ref().map(|n| n.name.clone()) else { return self.restart_gone() };
        let fresh = look.fresh.is_some();
        if let Some(f) = look.fresh {
            if self.own.is_some_and(|o| o.id != f.id) {
                self.drop_own();
            }
            self.own = Some(f);
        }
        match names::decide_with_permits(self.cfg.mode, self.cfg.permits, &look.children, &name) {
            Decision::Gone => self.restart_gone(),
            // First in the queue as of that list: the grant needs proof
            // that our node is still ours after it: the list itself (right
            // behind our create), the read pipelined behind it, our watch
            // armed before it and silent through its reply, or a read now.
            Decision::Held => {
                let proof = match (look.proof, fresh) {
                    (Some(p), _) => Some(p),
                    (None, true) => self.own.take().map(|o| Proof { watch: Some(o.id), since: o.id }),
                    (None, false) => match self.intact(look.connection) {
                        Some(o) => {
                            self.own = None;
                            Some(Proof { watch: Some(o.id), since: o.id })
                        },
                        None => None,
                    },
                };
                match proof {
                    Some(p) => self.prove_done(p),
                    None => {
                        self.drop_own();
                        let read = self.read_own();
                        self.phase = Phase::Prove { read, old: None };
                    },
                }
            },
            Decision::WaitOnChildren => {
                if self.cfg.try_once {
                    return self.end(End::Failed(Why::HeldByOthers));
                }
                // List again with a watch on the children (and a read of
                // our node behind it when we have no good watch on it).
                if self.intact(self.connection).is_none() {
                    self.drop_own();
                }
                let list = self.send(Request::Children { path: self.cfg.path.clone(), stat: false, watch: true });
                let read = self.own.is_none().then(|| self.read_own());
                self.phase = Phase::WatchChildren { list, read };
            },
            Decision::WaitOn(blocker) => {
                if self.cfg.try_once {
                    return self.end(End::Failed(Why::HeldByOthers));
                }
                let sole = names::held_once_gone(self.cfg.mode, &look.children, &name);
                if self.intact(self.connection).is_none() {
                    self.drop_own();
                }
                // No read of our node with it (issue 33: one request less
                // per wait): what the wait ends with reads it (the sole
                // blocker's delete: a read of our node, the grant's proof;
                // any other notice: a list and that read), so a node a
                // third party deleted meanwhile is found then and never
                // granted on; the waiter queues again only then, not as
                // soon as its node goes. A watch on our node that is still
                // good is kept.
                let get = self.send(Request::GetData { path: self.path_of(&blocker), watch: true });
                self.phase = Phase::WatchBlocker { get, read: None, sole };
            },
        }
    }

    fn on_watch_children(&mut self, list: Id, read: Option<Id>) {
        let Some(r) = self.got.remove(&list) else { return };
        let read_reply = read.and_then(|id| self.got.remove(&id));
        let connection = r.connection;
        let (children, watch) = match r.result {
            Ok(Answer::Children { names, .. }) => (names, Some(list)),
            Ok(_) | Err(Failure::NoNode) => (Arc::default(), None),
            Err(Failure::Unknown) => {
                self.drop_watch(list);
                if let Some(id) = read {
                    self.drop_watch(id);
                }
                return self.reconnect(After::Look);
            },
            Err(f) => return self.fail("watching the queue", f),
        };
        if watch.is_none() {
            self.drop_watch(list);
        }
        let fresh = match (read, read_reply) {
            (Some(id), Some(rr)) => match self.read_own_reply(id, rr, After::Look) {
                Some(own) => Some(own),
                None => {
                    self.drop_watch(list);
                    return;
                },
            },
            _ => None,
        };
        let name = self.node.as_ref().map(|n| n.name.clone()).unwrap_or_default();
        let blocked =
            names::decide_with_permits(self.cfg.mode, self.cfg.permits, &children, &name) == Decision::WaitOnChildren;
        match watch.filter(|_| blocked) {
            // Not blocked any more (or gone): decide on this list, with the
            // read sent behind it as its proof.
            None => {
                self.drop_watch(list);
                self.decide(Look { children, proof: None, fresh, connection });
            },
            Some(watch) => {
                if let Some(f) = fresh {
                    self.drop_own();
                    self.own = Some(f);
                }
                if self.mutex_lost {
                    return self.requeue(Requeue::MutexLost);
                }
                self.phase = Phase::WaitChildren { watch };
                self.begin_wait();
            },
        }
    }

    fn on_watch_blocker(&mut self, get: Id, read: Option<Id>, sole: bool) {
        let Some(r) = self.got.remove(&get) else { return };
        if let Some(id) = read {
            let Some(rr) = self.got.remove(&id) else { return };
            match self.read_own_reply(id, rr, After::Look) {
                Some(own) => {
                    self.drop_own();
                    self.own = Some(own);
                },
                None => {
                    self.drop_watch(get);
                    return;
                },
            }
        }
        match r.result {
            Ok(_) => {
                self.phase = Phase::WaitBlocker { watch: get, sole };
                self.begin_wait();
            },
            // Gone between the list and the watch. The sole blocker's
            // NoNode says what its delete notification would (it went, and
            // none can take its place): a read of our node sent now
            // settles it, with no list (issue 33: one request less when a
            // handoff overtakes the watch). Otherwise look again now.
            Err(Failure::NoNode) => {
                self.drop_watch(get);
                if sole {
                    let old = self.own.take().map(|o| o.id);
                    let read = self.read_own();
                    self.phase = Phase::Prove { read, old };
                } else {
                    self.look();
                }
            },
            Err(Failure::Unknown) => {
                self.drop_watch(get);
                self.reconnect(After::Look);
            },
            Err(f) => {
                self.drop_watch(get);
                self.fail("watching the node before ours", f);
            },
        }
    }

    /// A proof is in hand: ask the safety clock before granting.
    fn prove_done(&mut self, proof: Proof) {
        self.phase = Phase::Clock { proof };
        self.actions.push_back(Action::CheckClock);
    }

    fn granted(&mut self, proof: Proof) {
        let Some(node) = self.node.take() else { return self.restart_gone() };
        self.drop_all_but(proof.watch);
        if let Some(w) = proof.watch {
            self.watches.remove(&w);
        }
        self.phase = Phase::Done;
        self.actions.push_back(Action::Granted(Grant {
            name: node.name,
            czxid: node.czxid,
            watch: proof.watch,
            since: proof.since,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSION: i64 = 0x51;

    fn config(mode: LockMode) -> Config {
        Config {
            path: "/l".into(),
            mode,
            permits: 1,
            data: Vec::new(),
            try_once: false,
            downgrade: None,
            session: SESSION,
            protected: "_c_u-".into(),
            name_prefix: format!("_c_u-{}", mode.driver().token()),
            seq_guess: None,
            serialised: false,
            bugs: Bugs::default(),
        }
    }

    fn actions(a: &mut Attempt<String>) -> Vec<Action<String>> {
        std::iter::from_fn(|| a.poll_action()).collect()
    }

    fn sent(actions: &[Action<String>]) -> Vec<(Id, Request)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Send(id, r) => Some((*id, r.clone())),
                _ => None,
            })
            .collect()
    }

    fn ok(a: &mut Attempt<String>, id: Id, answer: Answer) {
        a.handle(Event::Reply(id, Reply { result: Ok(answer), connection: 1 }));
    }

    fn err(a: &mut Attempt<String>, id: Id, f: Failure<String>) {
        a.handle(Event::Reply(id, Reply { result: Err(f), connection: 1 }));
    }

    /// The recovery after a lost create reply, which `a` asks for next: a
    /// probe write, then the list behind it. Answers the probe; the list's
    /// request.
    fn probed_list(a: &mut Attempt<String>) -> (Id, Request) {
        let sent = sent(&actions(a));
        assert!(
            matches!(&sent[..], [(_, Request::Probe { path }), (_, Request::Children { path: l, .. })] if path == "/l" && l == "/l"),
            "a probe, then the list: {sent:?}"
        );
        ok(a, sent[0].0, Answer::Done);
        sent[1].clone()
    }

    /// A new attempt of `cfg` whose create made `name` (czxid 7) and whose
    /// list behind it showed `queue`, the parent's pzxid `pzxid`: the
    /// attempt (its next actions not yet taken) and the create's requests.
    fn queued(cfg: Config, name: &str, queue: &[&str], pzxid: i64) -> (Attempt<String>, Vec<(Id, Request)>) {
        let mut a = Attempt::new(cfg);
        let out = sent(&actions(&mut a));
        ok(&mut a, out[0].0, created(name, 7));
        ok(&mut a, out[1].0, children(queue, pzxid));
        (a, out)
    }

    fn stat(czxid: i64, owner: i64) -> Stat {
        Stat { czxid, pzxid: czxid, owner, version: 0 }
    }

    fn created(name: &str, czxid: i64) -> Answer {
        Answer::Created { name: name.into(), stat: Some(stat(czxid, SESSION)) }
    }

    fn children(names: &[&str], pzxid: i64) -> Answer {
        Answer::Children {
            names: names.iter().map(|n| n.to_string()).collect(),
            stat: Some(Stat { czxid: 1, pzxid, owner: 0, version: 0 }),
        }
    }

    const OURS: &str = "_c_u-lock-0000000001";
    const BEFORE: &str = "_c_v-lock-0000000000";

    #[test]
    fn alone_on_the_lock_the_list_behind_the_create_is_the_proof() {
        let mut a = Attempt::new(config(LockMode::Exclusive));
        let out = sent(&actions(&mut a));
        assert!(matches!(&out[0].1, Request::Create { path, sequential: true, .. } if path == "/l/_c_u-lock-"));
        assert!(matches!(&out[1].1, Request::Children { stat: true, watch: false, .. }));
        ok(&mut a, out[0].0, created(OURS, 7));
        ok(&mut a, out[1].0, children(&[OURS], 7));
        assert_eq!(actions(&mut a), vec![Action::SeqGuess(Some(2)), Action::CheckClock]);
        a.handle(Event::Clock { safe: true });
        let grant = Grant { name: OURS.into(), czxid: 7, watch: None, since: out[0].0 };
        assert_eq!(actions(&mut a), vec![Action::Granted(grant)]);
        assert_eq!(a.leftover(), Leftover { node: None, unknown_create: false });
    }

    #[test]
    fn a_changed_queue_behind_the_create_needs_a_read_of_our_node() {
        // Something changed after our create (pzxid 8): no proof.
        let (mut a, _) = queued(config(LockMode::Exclusive), OURS, &[OURS], 8);
        let next = actions(&mut a);
        let read = sent(&next);
        assert!(
            matches!(&read[..], [(_, Request::GetData { path, watch: true })] if path == "/l/_c_u-lock-0000000001")
        );
        ok(&mut a, read[0].0, Answer::Data(stat(7, SESSION)));
        assert_eq!(actions(&mut a), vec![Action::CheckClock]);
    }

    #[test]
    fn the_sole_blockers_deletion_is_no_grant_without_a_read_after_it() {
        let (mut a, _) = queued(config(LockMode::Exclusive), OURS, &[BEFORE, OURS], 7);
        let w = sent(&actions(&mut a));
        // Watch the blocker; no read of our node with it (issue 33).
        assert!(matches!(&w[..], [(_, Request::GetData { path, watch: true })] if path == "/l/_c_v-lock-0000000000"));
        ok(&mut a, w[0].0, Answer::Data(stat(5, 0x52)));
        assert_eq!(actions(&mut a), vec![Action::Waiting]);
        a.handle(Event::Watch(w[0].0, Notice::Deleted));
        let prove = sent(&actions(&mut a));
        assert!(matches!(&prove[..], [(_, Request::GetData { watch: true, .. })]), "{prove:?}");
        // One transaction deleted the blocker and then our node.
        err(&mut a, prove[0].0, Failure::NoNode);
        let end = actions(&mut a);
        assert_eq!(end.last(), Some(&Action::Ended(End::Restart(Requeue::NodeGone))));
        assert_eq!(a.leftover(), Leftover { node: None, unknown_create: false });
    }

    #[test]
    fn a_sole_blocker_gone_before_its_read_is_followed_by_a_read_of_our_node_alone() {
        let (mut a, _) = queued(config(LockMode::Exclusive), OURS, &[BEFORE, OURS], 7);
        let w = sent(&actions(&mut a));
        err(&mut a, w[0].0, Failure::NoNode);
        let prove = sent(&actions(&mut a));
        assert!(
            matches!(&prove[..], [(_, Request::GetData { path, watch: true })] if path == "/l/_c_u-lock-0000000001"),
            "a read of our node, no list: {prove:?}"
        );
        // The read is the proof; without it, nothing is granted.
        assert!(!a.is_done());
        ok(&mut a, prove[0].0, Answer::Data(stat(7, SESSION)));
        assert_eq!(actions(&mut a), vec![Action::CheckClock]);
        // Behind a blocker that is not the only one, a list again.
        let (ours, queue) = ("_c_u-lock-0000000002", ["_c_w-lock-0000000000", "_c_v-lock-0000000001"]);
        let (mut a, _) = queued(config(LockMode::Exclusive), ours, &[queue[0], queue[1], ours], 7);
        let w = sent(&actions(&mut a));
        err(&mut a, w[0].0, Failure::NoNode);
        let look = sent(&actions(&mut a));
        assert!(matches!(&look[0].1, Request::Children { .. }), "{look:?}");
    }

    #[test]
    fn a_notification_before_the_read_behind_the_watch_ends_the_wait_at_once() {
        let mut cfg = config(LockMode::Lease);
        cfg.permits = 1;
        cfg.name_prefix = "_c_u-lease-".into();
        let ours = "_c_u-lease-0000000001";
        let other = "_c_v-lease-0000000000";
        let (mut a, _) = queued(cfg, ours, &[other, ours], 7);
        let w = sent(&actions(&mut a));
        assert!(matches!(&w[0].1, Request::Children { watch: true, .. }));
        ok(&mut a, w[0].0, Answer::Children { names: vec![other.into(), ours.into()].into(), stat: None });
        // The children changed between the list's reply and the read's.
        a.handle(Event::Watch(w[0].0, Notice::Children));
        ok(&mut a, w[1].0, Answer::Data(stat(7, SESSION)));
        let next = actions(&mut a);
        assert!(next.contains(&Action::Waiting));
        assert!(
            sent(&next).iter().any(|(_, r)| matches!(r, Request::Children { watch: false, .. })),
            "looks at the queue again at once: {next:?}"
        );
    }

    #[test]
    fn a_shared_count_that_grows_lets_a_waiting_lease_look_again_and_one_that_shrinks_does_not() {
        let mut cfg = config(LockMode::Lease);
        cfg.permits = 1;
        cfg.name_prefix = "_c_u-lease-".into();
        let ours = "_c_u-lease-0000000001";
        let other = "_c_v-lease-0000000000";
        let (mut a, _) = queued(cfg, ours, &[other, ours], 7);
        let w = sent(&actions(&mut a));
        ok(&mut a, w[0].0, Answer::Children { names: vec![other.into(), ours.into()].into(), stat: None });
        ok(&mut a, w[1].0, Answer::Data(stat(7, SESSION)));
        assert!(actions(&mut a).contains(&Action::Waiting));
        // Fewer (or as many): still waiting, nothing sent.
        a.handle(Event::Permits(1));
        a.handle(Event::Permits(0));
        assert!(sent(&actions(&mut a)).is_empty());
        // More: a look at the queue, on which the lease holds.
        a.handle(Event::Permits(2));
        let look = sent(&actions(&mut a));
        assert!(look.iter().any(|(_, r)| matches!(r, Request::Children { watch: false, .. })), "{look:?}");
        let list = look.iter().find(|(_, r)| matches!(r, Request::Children { .. })).map(|(id, _)| *id).unwrap();
        ok(&mut a, list, Answer::Children { names: vec![other.into(), ours.into()].into(), stat: None });
        for (id, r) in look.iter().filter(|(_, r)| matches!(r, Request::GetData { .. })) {
            let _ = r;
            ok(&mut a, *id, Answer::Data(stat(7, SESSION)));
        }
        let next = actions(&mut a);
        assert!(
            next.iter().any(|x| matches!(x, Action::CheckClock | Action::Send(_, Request::GetData { .. }))),
            "on its way to the grant: {next:?}"
        );
    }

    #[test]
    fn a_lost_create_reply_is_recovered_by_our_prefix_and_owner() {
        let mut a = Attempt::new(config(LockMode::Exclusive));
        let out = sent(&actions(&mut a));
        err(&mut a, out[0].0, Failure::Unknown);
        err(&mut a, out[1].0, Failure::Unknown);
        assert_eq!(actions(&mut a), vec![Action::AwaitReconnect]);
        assert!(a.leftover().unknown_create);
        a.handle(Event::Reconnected);
        let list = probed_list(&mut a);
        ok(&mut a, list.0, Answer::Children { names: vec![OURS.into(), BEFORE.into()].into(), stat: None });
        let exists = sent(&actions(&mut a));
        assert!(matches!(&exists[..], [(_, Request::Exists { path })] if path == "/l/_c_u-lock-0000000001"));
        ok(&mut a, exists[0].0, Answer::Exists(Some(stat(7, SESSION))));
        assert_eq!(
            a.leftover(),
            Leftover { node: Some(OwnNode { name: OURS.into(), czxid: 7 }), unknown_create: false }
        );
        // Blocked by the node before ours: watch it.
        let w = sent(&actions(&mut a));
        assert!(matches!(&w[0].1, Request::GetData { path, .. } if path == "/l/_c_v-lock-0000000000"));
    }

    #[test]
    fn a_node_with_our_prefix_but_another_owner_is_not_adopted() {
        let mut a = Attempt::new(config(LockMode::Exclusive));
        let out = sent(&actions(&mut a));
        err(&mut a, out[0].0, Failure::Unknown);
        actions(&mut a);
        a.handle(Event::Reconnected);
        let list = probed_list(&mut a);
        ok(&mut a, list.0, Answer::Children { names: vec![OURS.into()].into(), stat: None });
        let exists = sent(&actions(&mut a));
        ok(&mut a, exists[0].0, Answer::Exists(Some(stat(7, 0x99))));
        // Not ours: create again.
        let again = sent(&actions(&mut a));
        assert!(matches!(&again[0].1, Request::Create { .. }), "{again:?}");
    }

    #[test]
    fn try_once_blocked_gives_up_and_leaves_our_node_to_delete() {
        let mut cfg = config(LockMode::Exclusive);
        cfg.try_once = true;
        let (mut a, _) = queued(cfg, OURS, &[BEFORE, OURS], 7);
        assert_eq!(actions(&mut a).last(), Some(&Action::Ended(End::Failed(Why::HeldByOthers))));
        assert_eq!(a.leftover().node.map(|n| n.name), Some(OURS.to_string()));
    }

    #[test]
    fn stopped_with_the_create_out_it_waits_for_the_reply_to_name_the_node() {
        let mut a = Attempt::new(config(LockMode::Exclusive));
        let out = sent(&actions(&mut a));
        a.handle(Event::Stop { closed: false });
        assert_eq!(actions(&mut a), vec![Action::Linger]);
        ok(&mut a, out[0].0, created(OURS, 7));
        assert_eq!(actions(&mut a), vec![Action::Ended(End::Stopped)]);
        assert_eq!(
            a.leftover(),
            Leftover { node: Some(OwnNode { name: OURS.into(), czxid: 7 }), unknown_create: false }
        );
    }

    #[test]
    fn stopped_with_no_reply_in_the_grace_leaves_an_unknown_create() {
        let mut a = Attempt::new(config(LockMode::Exclusive));
        actions(&mut a);
        a.handle(Event::Stop { closed: false });
        actions(&mut a);
        a.handle(Event::GraceOver);
        assert_eq!(actions(&mut a), vec![Action::Ended(End::Stopped)]);
        assert_eq!(a.leftover(), Leftover { node: None, unknown_create: true });
    }

    #[test]
    fn an_unsafe_clock_holds_the_grant_until_it_moves() {
        let (mut a, _) = queued(config(LockMode::Exclusive), OURS, &[OURS], 7);
        actions(&mut a);
        a.handle(Event::Clock { safe: false });
        assert_eq!(actions(&mut a), vec![Action::AwaitClock]);
        a.handle(Event::ClockMoved);
        // A fresh look, with a read of our node behind it.
        let look = sent(&actions(&mut a));
        assert!(matches!(&look[0].1, Request::Children { .. }));
        assert!(matches!(&look[1].1, Request::GetData { watch: true, .. }));
    }

    #[test]
    fn our_watch_vouches_for_a_list_only_on_the_connection_it_was_left_on() {
        let (mut a, _) = queued(config(LockMode::Exclusive), OURS, &[BEFORE, OURS], 7);
        let w = sent(&actions(&mut a));
        ok(&mut a, w[0].0, Answer::Data(stat(5, 0x52)));
        actions(&mut a);
        // The blocker changes (not deleted): look again, with a read of our
        // node (no watch on it yet), on connection 1; still blocked.
        a.handle(Event::Watch(w[0].0, Notice::Changed));
        let look = sent(&actions(&mut a));
        assert!(matches!(&look[1].1, Request::GetData { watch: true, .. }), "{look:?}");
        a.handle(Event::Reply(look[0].0, Reply { result: Ok(children(&[BEFORE, OURS], 9)), connection: 1 }));
        ok(&mut a, look[1].0, Answer::Data(stat(7, SESSION)));
        let w = sent(&actions(&mut a));
        assert_eq!(w.len(), 1, "the blocker watched again, our good watch kept: {w:?}");
        ok(&mut a, w[0].0, Answer::Data(stat(5, 0x52)));
        actions(&mut a);
        // It changes again: look, no read this time: our watch is good.
        a.handle(Event::Watch(w[0].0, Notice::Changed));
        let look = sent(&actions(&mut a));
        assert_eq!(look.len(), 1, "no read: our watch is good: {look:?}");
        // The list comes on a new connection and shows us first.
        a.handle(Event::Reply(look[0].0, Reply { result: Ok(children(&[OURS], 9)), connection: 2 }));
        let prove = sent(&actions(&mut a));
        assert!(matches!(&prove[..], [(_, Request::GetData { watch: true, .. })]), "a read first: {prove:?}");
    }

    #[test]
    fn a_lost_mutex_starts_over_and_leaves_our_lease_node_to_delete() {
        let mut cfg = config(LockMode::Lease);
        cfg.name_prefix = "_c_u-lease-".into();
        cfg.serialised = true;
        let ours = "_c_u-lease-0000000001";
        let other = "_c_v-lease-0000000000";
        let (mut a, _) = queued(cfg, ours, &[other, ours], 7);
        let w = sent(&actions(&mut a));
        ok(&mut a, w[0].0, Answer::Children { names: vec![other.into(), ours.into()].into(), stat: None });
        ok(&mut a, w[1].0, Answer::Data(stat(7, SESSION)));
        assert_eq!(actions(&mut a), vec![Action::Waiting]);
        a.handle(Event::MutexLost);
        let look = sent(&actions(&mut a));
        ok(&mut a, look[0].0, Answer::Children { names: vec![other.into(), ours.into()].into(), stat: None });
        let again = sent(&actions(&mut a));
        ok(&mut a, again[0].0, Answer::Children { names: vec![other.into(), ours.into()].into(), stat: None });
        assert_eq!(actions(&mut a).last(), Some(&Action::Ended(End::Restart(Requeue::MutexLost))));
        assert_eq!(a.leftover().node.map(|n| n.name), Some(ours.to_string()), "our lease node is still ours to delete");
    }

    /// Found by the simulator (a downgrade's transaction answered without
    /// its create's Stat, and the read of the node lost): the node made
    /// must not be forgotten.
    #[test]
    fn a_lost_read_of_a_create_answered_without_its_stat_recovers_the_node() {
        let mut cfg = config(LockMode::Read);
        cfg.name_prefix = "_c_u-__READ__".into();
        cfg.downgrade = Some(Downgrade { sequence: 4, write_node: "/l/_c_w-__WRIT__0000000004".into() });
        let mut a = Attempt::new(cfg);
        let out = sent(&actions(&mut a));
        assert!(matches!(&out[0].1, Request::CheckAndCreate { path, .. } if path == "/l/_c_u-__READ__0000000004"));
        ok(&mut a, out[0].0, Answer::Created { name: "_c_u-__READ__0000000004".into(), stat: None });
        let read = sent(&actions(&mut a));
        assert!(matches!(&read[..], [(_, Request::Exists { .. })]), "{read:?}");
        err(&mut a, read[0].0, Failure::Unknown);
        assert_eq!(actions(&mut a), vec![Action::AwaitReconnect]);
        assert!(a.leftover().unknown_create, "the node made is looked for if the attempt ends here");
        a.handle(Event::Reconnected);
        let list = probed_list(&mut a);
        assert!(matches!(list.1, Request::Children { stat: false, watch: false, .. }), "{list:?}");
    }

    /// A list after a lost create reply counts only behind an answered
    /// probe: with the probe unanswered (the connection lost meanwhile),
    /// an empty list does not make the attempt create again (the server
    /// that answered may not have applied our create): it waits for the
    /// next connection and looks again.
    #[test]
    fn a_list_behind_an_unanswered_probe_is_not_trusted() {
        let mut a = Attempt::new(config(LockMode::Exclusive));
        let out = sent(&actions(&mut a));
        err(&mut a, out[0].0, Failure::Unknown);
        actions(&mut a);
        a.handle(Event::Reconnected);
        let recover = sent(&actions(&mut a));
        assert!(matches!(&recover[0].1, Request::Probe { .. }), "{recover:?}");
        err(&mut a, recover[0].0, Failure::Unknown);
        ok(&mut a, recover[1].0, Answer::Children { names: vec![BEFORE.into()].into(), stat: None });
        assert_eq!(actions(&mut a), vec![Action::AwaitReconnect]);
        assert!(a.leftover().unknown_create);
        a.handle(Event::Reconnected);
        let list = probed_list(&mut a);
        ok(&mut a, list.0, Answer::Children { names: vec![BEFORE.into()].into(), stat: None });
        let again = sent(&actions(&mut a));
        assert!(matches!(&again[0].1, Request::Create { .. }), "now created again: {again:?}");
    }

    /// An outside test (round 12) deleted the lock path's ancestors (all
    /// containers) whenever they were empty, as the server's reaper does:
    /// one reaped between its create and its child's failed the acquire.
    #[test]
    fn an_ancestor_reaped_while_the_lock_path_is_made_is_made_again() {
        let mut a = Attempt::new(config(LockMode::Exclusive));
        let out = sent(&actions(&mut a));
        err(&mut a, out[0].0, Failure::NoNode);
        err(&mut a, out[1].0, Failure::NoNode);
        for _ in 0..=PARENTS_REAPED {
            let make = sent(&actions(&mut a));
            assert!(matches!(&make[..], [(_, Request::MakeParents { .. })]), "{make:?}");
            err(&mut a, make[0].0, Failure::NoNode);
        }
        assert!(matches!(
            actions(&mut a).last(),
            Some(Action::Ended(End::Failed(Why::Zk { failure: Failure::NoNode, .. })))
        ));
    }
}

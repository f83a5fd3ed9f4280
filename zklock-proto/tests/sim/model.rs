//! A model of a ZooKeeper ensemble: a leader with a linearizable tree of
//! nodes, followers that serve clients from their own copies of it,
//! sessions with one connection each (to one server), and one-shot
//! watches.
//!
//! Each session's connection is two FIFOs: requests in flight (read by its
//! server when the scheduler picks them) and messages for the client
//! (replies and watch notifications, delivered when the scheduler picks
//! them). A change queues its notifications on every watching session's
//! connection while its server applies it, so they come before any later
//! reply, as ZooKeeper does. Every child of the lock path keeps its life
//! (creation and deletion zxid, owner) on the leader so the checker can ask
//! what the tree looked like as of any zxid.
//!
//! The ensemble, as ZooKeeper 3.8 runs it (`Leader`, `Learner`,
//! `LearnerHandler`, `FollowerZooKeeperServer`, `SessionTrackerImpl`,
//! `LearnerSessionTracker`), as far as the safety clock's argument
//! depends on it (`zklock_proto::clock`):
//!
//! - The leader (server 0) alone decides expiry: a session expires once
//!   the leader's time reaches its last touch there plus the session
//!   timeout. The leader touches a session when it creates or revalidates
//!   it (a connect or reconnect, through whichever server), when it reads a
//!   request of a client connected to it, and when it processes a
//!   follower's report naming it, at that moment. A request a follower
//!   forwards does not touch the session.
//! - A follower (servers 1 and 2, when the scenario has them) records a
//!   touch of each session that sends it anything, and reports the
//!   sessions touched since its last report only in its answer to the
//!   leader's ping, which the leader sends every `tick_time / 2`. The
//!   answer goes up the same FIFO stream as the follower's forwarded
//!   requests.
//! - A follower answers reads (getData, exists, getChildren) and the
//!   session layer's pings alone, from its own copy of the tree; it
//!   forwards writes and syncs to the leader and answers them once the
//!   leader's answer comes down its stream, behind the commits the leader
//!   made before it (a session's later requests wait for them). Its copy
//!   follows the leader's commits in order, with a delay (the `LINK`
//!   latency, longer while a `lag` fault holds it), and its watches fire
//!   when it applies a change.
//! - A connect (a new session or a reconnect) goes to the leader or to a
//!   follower that is in step (see [`Zk::servers_for`]); the server
//!   becomes the session's owner, and the leader refuses what an old owner
//!   forwards later (ZooKeeper's SessionMoved).
//! - A follower cut off from the leader (a `partition`) answers reads from
//!   its stale copy and holds writes and syncs; the leader hears none of
//!   its reports. What was sent waits (TCP); if the cut-off lasts
//!   `sync_limit` `tick_time`s without a word from the leader, the follower
//!   gives up: it closes its clients' connections (`dropped`), drops what
//!   it had not sent or applied (its unreported touches too), and once back
//!   in touch takes the leader's tree.
//! - The leader closes an expired session at once (its ephemeral nodes go
//!   in one transaction); a follower closes its client's connection when
//!   it applies that close (`ended`), and answers its reads until then.
//!
//! - A leader change ([`Zk::leader_change`]): a new leader with every
//!   committed change starts and gives every live session a full timeout
//!   from its start; every server's clients lose their connections but
//!   those of one follower, which stays with the deposed leader, cut off
//!   from the new one: the deposed leader still answers its syncs for a
//!   while (the simulator draws up to `0.4 T`), commits nothing, and the
//!   follower gives up once the cut-off ends. The leader stays server 0 in
//!   the model (the old leader's clients reconnect to "server 0", the new
//!   one), and three servers stand for an ensemble large enough for a
//!   leader and a follower to be a minority.
//!
//! Not modelled: observers, read-only servers, the rounding of expiry
//! times up to `tick_time`, a follower's connect or revalidation taking
//! time (a connect is at once, to a server in step), writes lost or
//! committed across a leader change (the new leader has exactly what the
//! old one committed), and the election's own duration.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use zklock_proto::acquire::{Answer, Failure, Notice, Stat};

/// A session id (0: no session, a persistent node's owner).
pub type SessionId = i64;

/// The two kinds of watch a session can leave on a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WatchKind {
    /// getData's watch: fires on change or deletion of the node.
    Data,
    /// getChildren's watch: fires on a child's creation or deletion, or the
    /// node's deletion.
    Child,
}

/// One node of the tree.
#[derive(Clone, Debug)]
pub struct Node {
    /// Creation zxid.
    pub czxid: i64,
    /// Zxid of the last data change (creation: our nodes' data never
    /// changes).
    pub mzxid: i64,
    /// Zxid of the last child created or deleted.
    pub pzxid: i64,
    /// The owning session of an ephemeral node (0: persistent).
    pub owner: SessionId,
    /// Child creates and deletes so far: the next sequential suffix.
    pub cversion: i32,
    /// A container (reaped once empty after it had children).
    pub container: bool,
    /// The names of the children.
    pub children: BTreeSet<String>,
    /// Its data (only a semaphore's shared count has any: `Zk::set_count`).
    pub data: Vec<u8>,
}

impl Node {
    fn stat(&self) -> Stat {
        Stat { czxid: self.czxid, pzxid: self.pzxid, owner: self.owner, version: 0 }
    }
}

/// One life of a child of a tracked parent (the lock path, a semaphore's
/// mutex path), kept forever for the checker.
#[derive(Clone, Debug)]
pub struct Life {
    /// The parent.
    pub parent: String,
    /// The child's name.
    pub name: String,
    /// Creation zxid.
    pub czxid: i64,
    /// Deletion zxid, once deleted.
    pub dzxid: Option<i64>,
    /// Owning session (0: persistent).
    pub owner: SessionId,
}

/// A request as the server applies it.
#[derive(Clone, Debug)]
pub enum Op {
    /// Create an ephemeral node (its sequence appended when `sequential`).
    Create { path: String, sequential: bool },
    /// A transaction: check that `check` exists, then create the ephemeral
    /// node `path` (a downgrade's read node).
    CheckAndCreate { check: String, path: String },
    /// getChildren (with the parent's Stat when `stat`), with a child watch
    /// when `watch`.
    Children { path: String, stat: bool, watch: bool },
    /// getData (its Stat), with a data watch when `watch`.
    GetData { path: String, watch: bool },
    /// exists, no watch.
    Exists { path: String },
    /// delete, any version.
    Delete { path: String },
    /// Read then delete at the version read, only if our session owns the
    /// node (what zklock-core's release and cleanup do): one atomic step,
    /// as the versioned delete makes it. NoNode when not ours.
    DeleteOwned { path: String },
    /// The lock path's missing ancestors (persistent) and the lock path
    /// (a container), in one step.
    MakeParents { path: String },
    /// sync (the safety clock's heartbeat): changes nothing, answered Done.
    Sync,
    /// setData of the root with a version that never matches (the
    /// heartbeat once the clock ran out): answered BadVersion.
    Probe,
    /// The session layer's ping: answered Done.
    Ping,
}

/// A message from the server to a session's client.
#[derive(Clone, Debug)]
pub enum Msg<T> {
    /// The reply to the request tagged `tag`.
    Reply {
        /// The client's tag of the request.
        tag: T,
        /// The answer.
        result: Result<Answer, Failure<String>>,
        /// The connection it came on.
        conn: u64,
        /// The server's last zxid when it was sent.
        zxid: i64,
        /// The node's data, for a getData answered Ok (else empty).
        data: Vec<u8>,
    },
    /// A watch on `path` fired.
    Notify {
        /// The watched path.
        path: String,
        /// What happened.
        notice: Notice,
        /// The zxid of the change.
        zxid: i64,
    },
}

/// A session as the server and the wire between see it.
#[derive(Debug)]
pub struct Session<T> {
    /// Not expired.
    pub alive: bool,
    /// Has a connection now.
    pub connected: bool,
    /// The number of its current (or last) connection.
    pub conn: u64,
    /// Requests sent, not yet applied.
    pub inflight: VecDeque<(T, Op)>,
    /// Messages queued for the client, not yet delivered.
    pub out: VecDeque<Msg<T>>,
    /// The watches the server holds for it (dropped with its connection,
    /// set again by SetWatches on reconnect).
    pub watches: BTreeSet<(String, WatchKind)>,
    /// The leader's time (`Zk::now`) when it last heard from the session:
    /// its creation, a reconnect (revalidated on the leader), a request or
    /// ping the leader read from it, or the leader processing a follower's
    /// report of its activity (a follower's ping answer).
    pub touched: u64,
    /// The server it is connected to (or was last): 0 the leader, `f + 1`
    /// follower `f`.
    pub server: usize,
    /// Requests its follower forwarded to the leader, not answered yet (in
    /// order): the session's later requests wait for them.
    pub forwarded: VecDeque<T>,
}

/// A change the leader committed, as a follower applies it (in zxid
/// order).
#[derive(Clone, Debug)]
pub enum Entry {
    /// The node at this path is now this.
    Put(String, Node),
    /// The node at this path is gone.
    Remove(String),
    /// Watches of these kinds on this path fire with this notice.
    Fire(String, Vec<WatchKind>, Notice),
    /// The session is closed (expired or closed by its client).
    Close(SessionId),
}

/// What the leader sends a follower, in order.
#[derive(Clone, Debug)]
pub enum Down<T> {
    /// Apply every change up to this zxid.
    Commit(i64),
    /// The answer to a forwarded request of session `sid` on connection
    /// `conn`.
    Answer {
        /// The session.
        sid: SessionId,
        /// Its connection the request came on.
        conn: u64,
        /// The client's tag.
        tag: T,
        /// The answer.
        result: Result<Answer, Failure<String>>,
    },
}

/// What a follower sends the leader, in order (one FIFO stream).
#[derive(Clone, Debug)]
pub enum Up<T> {
    /// A ping answer: the sessions touched since the last one.
    Report(Vec<SessionId>),
    /// A client's write or sync.
    Forward {
        /// The session.
        sid: SessionId,
        /// Its connection.
        conn: u64,
        /// The client's tag.
        tag: T,
        /// The request.
        op: Op,
    },
}

/// A follower: its own copy of the tree (applied from the leader's
/// commits with a lag), its clients' touches not reported yet, and its
/// two streams with the leader.
#[derive(Debug)]
pub struct Follower<T> {
    /// Its copy of the tree.
    pub nodes: BTreeMap<String, Node>,
    /// The last zxid it applied.
    pub zxid: i64,
    /// How far into the leader's `log` it applied.
    pub log_pos: usize,
    /// From the leader, with the tick each was sent at.
    pub down: VecDeque<(u64, Down<T>)>,
    /// To the leader, with the tick each was sent at.
    pub up: VecDeque<(u64, Up<T>)>,
    /// Sessions touched here since its last ping answer.
    pub touches: BTreeSet<SessionId>,
    /// The leader's pings on their way (the tick each was sent at).
    pub pings: VecDeque<u64>,
    /// The last tick it heard from the leader.
    pub heard: u64,
    /// Cut off from the leader from this tick ...
    pub cut_from: u64,
    /// ... until this one (nothing goes either way; what was sent waits).
    pub cut_until: u64,
    /// Applies no commit before this tick (a slow disk, a busy machine).
    pub lag_until: u64,
    /// Serving clients: false from when it noticed it lost the leader
    /// (`sync_limit` ticks of `tick_time` without hearing from it) until
    /// it is back in touch and synchronised.
    pub serving: bool,
    /// Cut off from the ensemble together with a deposed leader (a leader
    /// change): once the cut-off ends it gives up and synchronises with the
    /// new leader.
    pub deposed: bool,
    /// From this tick the deposed leader answers the syncs it forwards
    /// (before it, stalled: a GC pause, SIGSTOP, which it does not notice,
    /// and neither does this follower: they freeze together) ...
    pub ghost_from: u64,
    /// ... until this tick (it has not noticed yet that it lost its
    /// quorum).
    pub ghost_until: u64,
    /// The deposed leader's own record of when it last heard from each
    /// session (as it stood when the new leader took over, and its own
    /// revalidations since): a session missing or older than a session
    /// timeout there is one it expires when it runs again, and it answers a
    /// reconnect of it "expired" (an expiry that can never commit: outside
    /// attack round 36, F3).
    pub ghost_touched: BTreeMap<SessionId, u64>,
    /// Whether the deposed leader's own expiry of those sessions came
    /// before the reconnects it answers (else it revalidates them as if
    /// alive: the connect read before its session tracker ran again).
    pub ghost_expires: bool,
}

impl<T> Follower<T> {
    /// Whether it is cut off from the leader at tick `now`.
    pub fn is_cut(&self, now: u64) -> bool {
        (self.cut_from..self.cut_until).contains(&now)
    }
}

/// The server.
#[derive(Debug)]
pub struct Zk<T> {
    /// The tree, by full path.
    pub nodes: BTreeMap<String, Node>,
    /// The last zxid.
    pub zxid: i64,
    /// The lock path whose children's lives are kept.
    pub lock_path: String,
    /// The parents whose children's lives are kept: the lock path first,
    /// then a semaphore's mutex path.
    pub tracked: Vec<String>,
    /// Every life of a child of a tracked parent.
    pub lives: Vec<Life>,
    /// The sessions, by id.
    pub sessions: BTreeMap<SessionId, Session<T>>,
    /// Whether a create's reply carries its Stat (ZooKeeper 3.5+ does for a
    /// plain create; without it the machine reads it).
    pub stat_on_create: bool,
    /// Whether a transaction's create result carries its Stat (not on some
    /// releases: ZOOKEEPER-4026, ZOOKEEPER-4667).
    pub stat_in_multi: bool,
    /// Whether a reconnect sets the session's watches again (SetWatches).
    pub set_watches: bool,
    /// Deletes by a session of a node another session owned: (deleter,
    /// path, owner).
    pub foreign_deletes: Vec<(SessionId, String, SessionId)>,
    /// The server's time in ticks (the World's clock; 0 in untimed runs).
    pub now: u64,
    /// The nodes a third party deleted (outside the holders' promise).
    pub third_party_deleted: BTreeSet<String>,
    /// The followers (none: a standalone server, the leader alone).
    pub followers: Vec<Follower<T>>,
    /// Every change committed, with its zxid, for the followers to apply
    /// (kept only when there are followers).
    pub log: Vec<(i64, Entry)>,
    /// ZooKeeper's `tickTime` in ticks: the leader pings each follower
    /// every half of it.
    pub tick_time: u64,
    /// ZooKeeper's `syncLimit`: a follower that has not heard from the
    /// leader for this many `tick_time`s gives up on it.
    pub sync_limit: u64,
    /// Sessions whose server learned that the leader closed them (it
    /// closed their connection): the simulator tells their clients.
    pub ended: Vec<SessionId>,
    /// Sessions whose follower closed their connection because it lost
    /// the leader: the simulator tells their clients.
    pub dropped: Vec<SessionId>,
    /// The last zxid sent to the followers as a commit.
    pub committed: i64,
    /// A semaphore's shared count node (scenarios with one).
    pub count_path: Option<String>,
    /// Every state of the shared count from its zxid on: the permits it
    /// gives (`None`: missing or not a count, which fails an acquire).
    pub count_log: Vec<(i64, Option<usize>)>,
}

/// How long a message between the leader and a follower, or a ping, is
/// on its way (ticks).
pub const LINK: u64 = 1;

impl Op {
    /// A read (or the session layer's ping): a follower answers it alone.
    pub fn is_read(&self) -> bool {
        matches!(self, Op::Children { .. } | Op::GetData { .. } | Op::Exists { .. } | Op::Ping)
    }
}

/// A read's answer, and the watch it leaves (if any).
type ReadAnswer = (Result<Answer, Failure<String>>, Option<(String, WatchKind)>);

/// Answers the read `op` from the tree `nodes`.
fn read(nodes: &BTreeMap<String, Node>, op: &Op) -> ReadAnswer {
    match op {
        Op::Children { path, stat, watch } => match nodes.get(path) {
            None => (Err(Failure::NoNode), None),
            Some(n) => {
                let names = n.children.iter().cloned().collect();
                let stat = stat.then(|| n.stat());
                (Ok(Answer::Children { names, stat }), watch.then(|| (path.clone(), WatchKind::Child)))
            },
        },
        Op::GetData { path, watch } => match nodes.get(path) {
            None => (Err(Failure::NoNode), None),
            Some(n) => (Ok(Answer::Data(n.stat())), watch.then(|| (path.clone(), WatchKind::Data))),
        },
        Op::Exists { path } => (Ok(Answer::Exists(nodes.get(path).map(Node::stat))), None),
        Op::Ping => (Ok(Answer::Done), None),
        _ => unreachable!("not a read: {op:?}"),
    }
}

/// The data a getData `op` answered Ok (`result`) from `nodes` returns
/// (empty for any other request).
fn data_of(nodes: &BTreeMap<String, Node>, op: &Op, result: &Result<Answer, Failure<String>>) -> Vec<u8> {
    match (op, result) {
        (Op::GetData { path, .. }, Ok(_)) => nodes.get(path).map(|n| n.data.clone()).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// What a third party writes to a semaphore's shared count ([`Zk::set_count`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CountWrite {
    /// This count (4 bytes, big-endian, as Curator's `SharedCount`); the
    /// node is made if it is missing.
    Value(i32),
    /// Three bytes: not a count (the node is made if it is missing).
    Garbage,
    /// The count node is deleted.
    Delete,
}

/// The permits a shared count's data gives, as zklock-core reads it
/// (protocol 8c): a 4-byte big-endian count, a negative one 0 permits;
/// `None` for data that is not a count.
pub fn count_of(data: &[u8]) -> Option<usize> {
    let bytes: [u8; 4] = data.try_into().ok()?;
    Some(usize::try_from(i32::from_be_bytes(bytes)).unwrap_or(0))
}

/// The parent of a full path ("/" for a top-level node).
pub fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The last component of a full path.
pub fn name_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

impl<T: Clone> Zk<T> {
    /// A server with only the root.
    pub fn new(lock_path: &str, stat_on_create: bool, stat_in_multi: bool, set_watches: bool) -> Zk<T> {
        let mut nodes = BTreeMap::new();
        nodes.insert(
            "/".to_string(),
            Node {
                czxid: 0,
                mzxid: 0,
                pzxid: 0,
                owner: 0,
                cversion: 0,
                container: false,
                children: BTreeSet::new(),
                data: Vec::new(),
            },
        );
        Zk {
            nodes,
            zxid: 0,
            lock_path: lock_path.to_string(),
            tracked: vec![lock_path.to_string()],
            lives: Vec::new(),
            sessions: BTreeMap::new(),
            stat_on_create,
            stat_in_multi,
            set_watches,
            foreign_deletes: Vec::new(),
            now: 0,
            third_party_deleted: BTreeSet::new(),
            followers: Vec::new(),
            log: Vec::new(),
            tick_time: 0,
            sync_limit: 0,
            ended: Vec::new(),
            dropped: Vec::new(),
            committed: 0,
            count_path: None,
            count_log: Vec::new(),
        }
    }

    /// A third party writes the shared count `path` (persistent; its
    /// missing ancestors made persistent first): one zxid, its data
    /// watches fired as ZooKeeper does (a change: Changed; a delete:
    /// Deleted; a create fires no getData watch, as a getData of a missing
    /// node leaves none). Recorded in `count_log` for the checker. False
    /// when nothing changed (a delete of a missing node).
    pub fn set_count(&mut self, path: &str, w: CountWrite) -> bool {
        self.count_path = Some(path.to_string());
        let data = match w {
            CountWrite::Value(v) => v.to_be_bytes().to_vec(),
            CountWrite::Garbage => b"abc".to_vec(),
            CountWrite::Delete => {
                if !self.nodes.contains_key(path) {
                    return false;
                }
                self.zxid += 1;
                let _ = self.delete_now(path);
                self.count_log.push((self.zxid, None));
                self.commit();
                return true;
            },
        };
        if self.nodes.contains_key(path) {
            self.zxid += 1;
            let z = self.zxid;
            let n = self.nodes.get_mut(path).expect("count node");
            n.data = data.clone();
            n.mzxid = z;
            self.record_node(path);
            self.trigger(path, &[WatchKind::Data], Notice::Changed);
        } else {
            let mut at = String::new();
            for part in parent_of(path).split('/').filter(|p| !p.is_empty()) {
                at.push('/');
                at.push_str(part);
                if !self.nodes.contains_key(&at) {
                    let _ = self.create(&at, 0, false, false);
                }
            }
            if self.create(path, 0, false, false).is_err() {
                return false;
            }
            self.nodes.get_mut(path).expect("count node").data = data.clone();
            self.record_node(path);
        }
        self.count_log.push((self.zxid, count_of(&data)));
        self.commit();
        true
    }

    /// The permits the shared count gave as of zxid `z` (0 while it was
    /// missing or not a count).
    pub fn permits_at(&self, z: i64) -> usize {
        self.count_log.iter().rev().find(|(at, _)| *at <= z).and_then(|(_, p)| *p).unwrap_or(0)
    }

    /// The most permits the shared count gave at any zxid from `from` to
    /// `to`.
    pub fn max_permits_between(&self, from: i64, to: i64) -> usize {
        let inside = self.count_log.iter().filter(|(at, _)| *at > from && *at <= to).filter_map(|(_, p)| *p);
        inside.chain(std::iter::once(self.permits_at(from))).max().unwrap_or(0)
    }

    /// Adds `n` followers (in step with the leader), pinged every
    /// `tick_time / 2` ticks, giving up on the leader after `sync_limit`
    /// `tick_time`s without it.
    pub fn add_followers(&mut self, n: usize, tick_time: u64, sync_limit: u64) {
        self.tick_time = tick_time;
        self.sync_limit = sync_limit;
        for _ in 0..n {
            self.followers.push(Follower {
                nodes: self.nodes.clone(),
                zxid: self.zxid,
                log_pos: self.log.len(),
                down: VecDeque::new(),
                up: VecDeque::new(),
                touches: BTreeSet::new(),
                pings: VecDeque::new(),
                heard: self.now,
                cut_from: 0,
                cut_until: 0,
                lag_until: 0,
                serving: true,
                deposed: false,
                ghost_from: 0,
                ghost_until: 0,
                ghost_touched: BTreeMap::new(),
                ghost_expires: false,
            });
        }
    }

    /// Before anything runs: every follower takes the leader's tree at
    /// once (a scenario's setup, made after the followers were added).
    pub fn settle(&mut self) {
        for f in &mut self.followers {
            f.nodes = self.nodes.clone();
            f.zxid = self.zxid;
            f.log_pos = self.log.len();
            f.down.clear();
        }
    }

    /// The servers session `sid` (or a new session) may connect to now:
    /// the leader, and each follower that serves, is in touch with the
    /// leader and has applied everything the leader committed, with no
    /// request of the session on its way to or from the leader. A connect
    /// through a follower is a request to the leader in the follower's
    /// stream (the session's creation, or its revalidation, which makes
    /// that follower the session's owner): it is answered after what the
    /// follower forwarded before it was applied, and after the follower
    /// applied what the leader committed before it. The model connects at
    /// once, so it connects only where that already holds (a follower that
    /// lags or still carries the session's requests would delay the
    /// connect; the client takes another server).
    pub fn servers_for(&self, sid: Option<SessionId>) -> Vec<usize> {
        let mut v = vec![0];
        let ours = |s: &SessionId| Some(*s) == sid;
        for (f, fl) in self.followers.iter().enumerate() {
            let carries = fl.up.iter().any(|(_, m)| matches!(m, Up::Forward { sid: s, .. } if ours(s)))
                || fl.down.iter().any(|(_, m)| matches!(m, Down::Answer { sid: s, .. } if ours(s)));
            if fl.serving && !fl.is_cut(self.now) && fl.zxid == self.zxid && !carries {
                v.push(f + 1);
            }
        }
        v
    }

    /// The followers where a reconnect of session `sid` is answered by a
    /// deposed leader: cut off with it after a leader change, while it
    /// still answers (`ghost_until`), serving, with no request of the
    /// session on its way, and not behind `last_zxid`, the last zxid the
    /// client saw (ZooKeeper refuses a client that has seen more than the
    /// server). The deposed leader revalidates the session, a touch the new
    /// leader never hears of (see [`Zk::reconnect`]).
    pub fn ghost_servers_for(&self, sid: SessionId, last_zxid: i64) -> Vec<usize> {
        let ours = |s: &SessionId| *s == sid;
        let mut v = Vec::new();
        for (f, fl) in self.followers.iter().enumerate() {
            let carries = fl.up.iter().any(|(_, m)| matches!(m, Up::Forward { sid: s, .. } if ours(s)))
                || fl.down.iter().any(|(_, m)| matches!(m, Down::Answer { sid: s, .. } if ours(s)));
            let answers = (fl.ghost_from..fl.ghost_until).contains(&self.now);
            if fl.deposed && fl.serving && answers && fl.zxid >= last_zxid && !carries {
                v.push(f + 1);
            }
        }
        v
    }

    /// The followers where a reconnect of session `sid` is answered
    /// "expired" by a deposed leader (as [`Zk::ghost_servers_for`], but its
    /// own record has not heard from the session for `timeout` ticks, or
    /// never: it expired the session, an expiry that never commits).
    pub fn ghost_expired_for(&self, sid: SessionId, last_zxid: i64, timeout: u64) -> Vec<usize> {
        let mut v = Vec::new();
        for (f, fl) in self.followers.iter().enumerate() {
            let answers = (fl.ghost_from..fl.ghost_until).contains(&self.now);
            let expired = fl.ghost_touched.get(&sid).is_none_or(|&t| self.now >= t + timeout);
            if fl.deposed && fl.ghost_expires && fl.serving && answers && fl.zxid >= last_zxid && expired {
                v.push(f + 1);
            }
        }
        v
    }

    /// Whether `server` is a follower cut off with a deposed leader.
    pub fn is_ghost(&self, server: usize) -> bool {
        server > 0 && self.followers[server - 1].deposed
    }

    /// Records `e` for the followers (with the current zxid), if any.
    fn record(&mut self, e: Entry) {
        if !self.followers.is_empty() {
            self.log.push((self.zxid, e));
        }
    }

    /// Records the node at `path` (or its absence) for the followers.
    fn record_node(&mut self, path: &str) {
        if self.followers.is_empty() {
            return;
        }
        let e = match self.nodes.get(path) {
            Some(n) => Entry::Put(path.to_string(), n.clone()),
            None => Entry::Remove(path.to_string()),
        };
        self.record(e);
    }

    /// Sends the followers a commit of everything up to the current zxid
    /// (if anything new).
    fn commit(&mut self) {
        if self.zxid > self.committed {
            self.committed = self.zxid;
            let (now, z) = (self.now, self.zxid);
            for f in &mut self.followers {
                f.down.push_back((now, Down::Commit(z)));
            }
        }
    }

    /// Opens session `id` on server `server`, connected on connection 1,
    /// touched now (a session's creation is a transaction of the leader's).
    pub fn open(&mut self, id: SessionId, server: usize) {
        let touched = self.now;
        self.sessions.insert(
            id,
            Session {
                alive: true,
                connected: true,
                conn: 1,
                inflight: VecDeque::new(),
                out: VecDeque::new(),
                watches: BTreeSet::new(),
                touched,
                server,
                forwarded: VecDeque::new(),
            },
        );
    }

    /// The children of the tracked parent `parent` as of `zxid` (after
    /// every change with that zxid).
    pub fn children_at(&self, parent: &str, zxid: i64) -> Vec<&Life> {
        self.lives
            .iter()
            .filter(|l| l.parent == parent && l.czxid <= zxid && l.dzxid.is_none_or(|d| d > zxid))
            .collect()
    }

    /// The current children of the lock path.
    pub fn lock_children(&self) -> Vec<String> {
        self.children_of(&self.lock_path)
    }

    /// The current children of `path`.
    pub fn children_of(&self, path: &str) -> Vec<String> {
        self.nodes.get(path).map(|n| n.children.iter().cloned().collect()).unwrap_or_default()
    }

    /// Fires the watches `kinds` on `path` at server `server`: each
    /// watching session connected there gets the notification queued now
    /// (with zxid `zxid`).
    fn fire(&mut self, server: usize, path: &str, kinds: &[WatchKind], notice: Notice, zxid: i64) {
        for s in self.sessions.values_mut().filter(|s| s.server == server) {
            let mut fired = false;
            for k in kinds {
                fired |= s.watches.remove(&(path.to_string(), *k));
            }
            if fired && s.connected {
                s.out.push_back(Msg::Notify { path: path.to_string(), notice, zxid });
            }
        }
    }

    /// Fires the watches `kinds` on `path` on the leader now; each
    /// follower fires its own when it applies the change.
    fn trigger(&mut self, path: &str, kinds: &[WatchKind], notice: Notice) {
        self.fire(0, path, kinds, notice, self.zxid);
        self.record(Entry::Fire(path.to_string(), kinds.to_vec(), notice));
    }

    /// Creates `path` (with the next sequence appended when `sequential`)
    /// at a new zxid; its full path.
    fn create(
        &mut self,
        path: &str,
        owner: SessionId,
        sequential: bool,
        container: bool,
    ) -> Result<String, Failure<String>> {
        let parent = parent_of(path).to_string();
        let Some(p) = self.nodes.get(&parent) else { return Err(Failure::NoNode) };
        if p.owner != 0 {
            return Err(Failure::Other("NoChildrenForEphemerals".into()));
        }
        let full = if sequential { format!("{path}{:010}", p.cversion) } else { path.to_string() };
        if self.nodes.contains_key(&full) {
            return Err(Failure::NodeExists);
        }
        self.zxid += 1;
        self.put_new(&full, owner, container);
        Ok(full)
    }

    /// Makes the node `full` (its parent exists, it does not) at the
    /// current zxid: the caller moved it on.
    fn put_new(&mut self, full: &str, owner: SessionId, container: bool) {
        let parent = parent_of(full).to_string();
        let z = self.zxid;
        let name = name_of(full).to_string();
        let p = self.nodes.get_mut(&parent).expect("parent");
        p.cversion += 1;
        p.pzxid = z;
        p.children.insert(name.clone());
        self.nodes.insert(
            full.to_string(),
            Node {
                czxid: z,
                mzxid: z,
                pzxid: z,
                owner,
                cversion: 0,
                container,
                children: BTreeSet::new(),
                data: Vec::new(),
            },
        );
        self.record_node(&parent);
        self.record_node(full);
        if self.tracked.contains(&parent) {
            self.lives.push(Life { parent: parent.clone(), name, czxid: z, dzxid: None, owner });
        }
        self.trigger(&parent, &[WatchKind::Child], Notice::Children);
    }

    /// Deletes `path` at the current zxid (the caller moved it on: a
    /// transaction deletes several nodes at one zxid).
    fn delete_now(&mut self, path: &str) -> Result<(), Failure<String>> {
        let Some(n) = self.nodes.get(path) else { return Err(Failure::NoNode) };
        if !n.children.is_empty() {
            return Err(Failure::Other("NotEmpty".into()));
        }
        let z = self.zxid;
        self.nodes.remove(path);
        let parent = parent_of(path).to_string();
        let name = name_of(path).to_string();
        if let Some(p) = self.nodes.get_mut(&parent) {
            p.cversion += 1;
            p.pzxid = z;
            p.children.remove(&name);
        }
        self.record_node(path);
        self.record_node(&parent);
        if self.tracked.contains(&parent) {
            if let Some(l) =
                self.lives.iter_mut().rev().find(|l| l.parent == parent && l.name == name && l.dzxid.is_none())
            {
                l.dzxid = Some(z);
            }
        }
        self.trigger(path, &[WatchKind::Data, WatchKind::Child], Notice::Deleted);
        self.trigger(&parent, &[WatchKind::Child], Notice::Children);
        Ok(())
    }

    /// A third party deletes `paths` in one transaction (one zxid; the
    /// notifications in op order). Nothing if one is missing.
    pub fn third_party_delete(&mut self, paths: &[String]) -> bool {
        if paths.iter().any(|p| self.nodes.get(p).is_none_or(|n| !n.children.is_empty())) {
            return false;
        }
        self.zxid += 1;
        for p in paths {
            let _ = self.delete_now(p);
            self.third_party_deleted.insert(p.clone());
        }
        self.commit();
        true
    }

    /// A third party deletes `path` and makes a node of the same name owned
    /// by session `owner`, in one transaction (as a `multi` of a delete and
    /// a create does; outside attack round 39's O1): whoever still believes
    /// the name theirs may delete the newcomer. Nothing if `path` is
    /// missing or has children.
    pub fn third_party_replace(&mut self, path: &str, owner: SessionId) -> bool {
        if self.nodes.get(path).is_none_or(|n| !n.children.is_empty()) {
            return false;
        }
        self.zxid += 1;
        let _ = self.delete_now(path);
        self.third_party_deleted.insert(path.to_string());
        self.put_new(path, owner, false);
        self.commit();
        true
    }

    /// Reaps empty containers that had children (ZooKeeper's container
    /// manager); whether any went.
    pub fn reap(&mut self) -> bool {
        let empty: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.container && n.children.is_empty() && n.cversion > 0)
            .map(|(p, _)| p.clone())
            .collect();
        for p in &empty {
            self.zxid += 1;
            let _ = self.delete_now(p);
        }
        self.commit();
        !empty.is_empty()
    }

    /// Queues a request on session `sid`'s connection; false when it has
    /// none (the client fails it at once).
    pub fn send(&mut self, sid: SessionId, tag: T, op: Op) -> bool {
        let s = self.sessions.get_mut(&sid).expect("session");
        if !s.connected {
            return false;
        }
        s.inflight.push_back((tag, op));
        true
    }

    /// Whether session `sid`'s server can read its oldest request in
    /// flight now: there is one, and no request of the session waits for
    /// the leader (a session's requests are answered in order).
    pub fn can_apply(&self, sid: SessionId) -> bool {
        self.sessions.get(&sid).is_some_and(|s| !s.inflight.is_empty() && s.forwarded.is_empty())
    }

    /// Session `sid`'s server reads its oldest request in flight (if it
    /// can: [`Zk::can_apply`]). The leader touches the session, applies
    /// the request (the change, its notifications) and queues the reply.
    /// A follower records the touch for its next ping answer, answers a
    /// read (or ping) from its own copy of the tree, and forwards a write
    /// or sync to the leader. Returns the op read (for the trace).
    pub fn apply(&mut self, sid: SessionId) -> Option<Op> {
        if !self.can_apply(sid) {
            return None;
        }
        let now = self.now;
        let s = self.sessions.get_mut(&sid)?;
        let (tag, op) = s.inflight.pop_front()?;
        let (server, conn) = (s.server, s.conn);
        if server == 0 {
            s.touched = now;
            let result = self.exec(sid, &op);
            self.commit();
            let data = data_of(&self.nodes, &op, &result);
            let s = self.sessions.get_mut(&sid).expect("session");
            s.out.push_back(Msg::Reply { tag, result, conn: s.conn, zxid: self.zxid, data });
            return Some(op);
        }
        let f = &mut self.followers[server - 1];
        f.touches.insert(sid);
        if op.is_read() {
            let (result, watch) = read(&f.nodes, &op);
            let data = data_of(&f.nodes, &op, &result);
            let zxid = f.zxid;
            let s = self.sessions.get_mut(&sid).expect("session");
            if let Some(w) = watch {
                s.watches.insert(w);
            }
            s.out.push_back(Msg::Reply { tag, result, conn, zxid, data });
        } else {
            f.up.push_back((now, Up::Forward { sid, conn, tag: tag.clone(), op: op.clone() }));
            self.sessions.get_mut(&sid).expect("session").forwarded.push_back(tag);
        }
        Some(op)
    }

    /// One tick of the ensemble (after `now` moved on): the leader pings
    /// each follower it has every `tick_time / 2` (while they are cut off,
    /// the pings wait with everything else); a follower answers a ping that
    /// reached it with the sessions touched since its last answer; the
    /// leader reads what each follower sent (reports touch the sessions
    /// they name, forwarded requests are applied and answered down the same
    /// follower's stream, behind their commits); each follower applies what
    /// the leader sent, unless it lags. Each message takes [`LINK`] ticks;
    /// nothing goes between a follower and the leader while it is cut off
    /// from it (what was sent waits). A follower that has not heard from the
    /// leader for `sync_limit` `tick_time`s gives up: it closes its
    /// clients' connections (`dropped`), forgets what it had not sent or
    /// applied, and once back in touch takes the leader's tree.
    pub fn tick_ensemble(&mut self) {
        let now = self.now;
        let half = (self.tick_time / 2).max(1);
        for fi in 0..self.followers.len() {
            let cut = self.followers[fi].is_cut(now);
            if now.is_multiple_of(half) && self.followers[fi].serving {
                self.followers[fi].pings.push_back(now);
            }
            if cut && now < self.followers[fi].ghost_from {
                // Stalled with the deposed leader: it notices nothing.
                self.followers[fi].heard = now;
            } else if cut && now < self.followers[fi].ghost_until {
                self.ghost_answers(fi);
            }
            if !cut {
                let f = &mut self.followers[fi];
                while f.pings.front().is_some_and(|t| t + LINK <= now) {
                    f.pings.pop_front();
                    f.heard = now;
                    let touched: Vec<SessionId> = std::mem::take(&mut f.touches).into_iter().collect();
                    f.up.push_back((now, Up::Report(touched)));
                }
                while self.followers[fi].up.front().is_some_and(|(t, _)| t + LINK <= now) {
                    let (_, m) = self.followers[fi].up.pop_front().expect("up");
                    self.leader_reads(fi, m);
                }
                while now >= self.followers[fi].lag_until
                    && self.followers[fi].down.front().is_some_and(|(t, _)| t + LINK <= now)
                {
                    let (_, m) = self.followers[fi].down.pop_front().expect("down");
                    self.followers[fi].heard = now;
                    self.follower_applies(fi, m);
                }
            }
            let f = &mut self.followers[fi];
            if f.serving && (now >= f.heard + self.sync_limit * self.tick_time || (f.deposed && !cut)) {
                f.serving = false;
                f.deposed = false;
                f.up.clear();
                f.down.clear();
                f.pings.clear();
                f.touches.clear();
                for (sid, s) in &self.sessions {
                    if s.server == fi + 1 && s.connected {
                        self.dropped.push(*sid);
                    }
                }
            }
            if !self.followers[fi].serving && !cut {
                let (nodes, zxid, pos) = (self.nodes.clone(), self.zxid, self.log.len());
                let f = &mut self.followers[fi];
                f.nodes = nodes;
                f.zxid = zxid;
                f.log_pos = pos;
                f.heard = now;
                f.serving = true;
            }
        }
    }

    /// Follower `fi` freezes (stalled with the leader, before the others
    /// give up on it and elect a new one: [`Zk::leader_change`] then
    /// sets how long it stays so): it neither hears from the leader nor
    /// notices that it does not, and takes no connect.
    pub fn freeze_follower(&mut self, fi: usize) {
        let f = &mut self.followers[fi];
        f.cut_from = self.now;
        f.cut_until = u64::MAX;
        f.ghost_from = u64::MAX;
        f.ghost_until = u64::MAX;
    }

    /// A leader change (the leader dies or is cut off, with follower `fi`):
    /// a new leader, which has every committed change, starts now and
    /// gives every live session a full timeout from now. Every other
    /// server's clients lose their connections (`dropped`: their servers
    /// go back to electing; they reconnect to the new ensemble), and the
    /// other followers synchronise with the new leader. Follower `fi` stays
    /// with the deposed leader, cut off from the new one for `cut` ticks
    /// (then it gives up and synchronises), and for `ghost` of them, from
    /// `stall` ticks on (a deposed leader that stalled, freezing with that
    /// follower, and runs again for a moment believing it leads: outside
    /// attack round 33, F2), the deposed leader still answers the syncs it
    /// forwards and the reconnects it takes; it commits nothing (writes
    /// wait) and its reports reach nobody. With `expires`, its own session
    /// tracker expired the sessions it had not heard from for a session
    /// timeout before it answers (it answers their reconnects "expired",
    /// [`Zk::ghost_expired_for`]); without, it answers them as if alive
    /// (a connect read before its tracker ran again).
    pub fn leader_change(&mut self, fi: usize, cut: u64, ghost: u64, stall: u64, expires: bool) {
        let now = self.now;
        let deposed_record: BTreeMap<SessionId, u64> =
            self.sessions.iter().filter(|(_, s)| s.alive).map(|(sid, s)| (*sid, s.touched)).collect();
        for (sid, s) in self.sessions.iter_mut() {
            if s.alive {
                s.touched = now;
            }
            if s.connected && s.server != fi + 1 {
                self.dropped.push(*sid);
            }
        }
        let (nodes, zxid, pos) = (self.nodes.clone(), self.zxid, self.log.len());
        for (g, f) in self.followers.iter_mut().enumerate() {
            if g == fi {
                f.cut_from = now;
                f.cut_until = now + cut.max(stall + ghost + 1);
                f.deposed = true;
                f.ghost_from = now + stall;
                f.ghost_until = now + stall + ghost;
                f.ghost_touched = deposed_record.clone();
                f.ghost_expires = expires;
                f.pings.clear();
                continue;
            }
            f.up.clear();
            f.down.clear();
            f.pings.clear();
            f.touches.clear();
            f.nodes = nodes.clone();
            f.zxid = zxid;
            f.log_pos = pos;
            f.heard = now;
        }
    }

    /// The deposed leader reads what follower `fi` sent it (while it still
    /// answers): reports go nowhere, syncs are answered (the answer reaches
    /// the client through the follower), a write waits for a quorum that
    /// never comes (and the syncs behind it with it).
    fn ghost_answers(&mut self, fi: usize) {
        let now = self.now;
        self.followers[fi].heard = now;
        while let Some((t, m)) = self.followers[fi].up.front() {
            if t + LINK > now {
                break;
            }
            match m {
                Up::Report(_) => {},
                Up::Forward { op: Op::Sync, .. } => {},
                Up::Forward { .. } => break,
            }
            let Some((_, Up::Forward { sid, conn, tag, .. })) = self.followers[fi].up.pop_front() else { continue };
            let zxid = self.followers[fi].zxid;
            if let Some(s) = self.sessions.get_mut(&sid) {
                if s.server == fi + 1 && s.conn == conn && s.connected {
                    s.forwarded.pop_front();
                    s.out.push_back(Msg::Reply { tag, result: Ok(Answer::Done), conn, zxid, data: Vec::new() });
                }
            }
        }
    }

    /// The leader reads `m` from follower `fi`.
    fn leader_reads(&mut self, fi: usize, m: Up<T>) {
        let now = self.now;
        match m {
            Up::Report(sids) => {
                for sid in sids {
                    if let Some(s) = self.sessions.get_mut(&sid).filter(|s| s.alive) {
                        s.touched = now;
                    }
                }
            },
            Up::Forward { sid, conn, tag, op } => {
                // A request from a follower that no longer owns the session
                // (it reconnected elsewhere) is refused (ZooKeeper's
                // SessionMoved); a sync is answered whatever the session's
                // state; a write of a closed session fails.
                let s = self.sessions.get(&sid);
                let alive = s.is_some_and(|s| s.alive);
                let moved = s.is_some_and(|s| s.server != fi + 1);
                let result = match op {
                    _ if moved => Err(Failure::Other("SessionMoved".into())),
                    Op::Sync => Ok(Answer::Done),
                    _ if !alive => Err(Failure::SessionGone),
                    _ => self.exec(sid, &op),
                };
                self.commit();
                self.followers[fi].down.push_back((now, Down::Answer { sid, conn, tag, result }));
            },
        }
    }

    /// Follower `fi` applies `m` from the leader.
    fn follower_applies(&mut self, fi: usize, m: Down<T>) {
        let server = fi + 1;
        match m {
            Down::Commit(z) => {
                while let Some((ez, e)) = self.log.get(self.followers[fi].log_pos).cloned() {
                    if ez > z {
                        break;
                    }
                    self.followers[fi].log_pos += 1;
                    let f = &mut self.followers[fi];
                    match e {
                        Entry::Put(p, n) => {
                            f.nodes.insert(p, n);
                        },
                        Entry::Remove(p) => {
                            f.nodes.remove(&p);
                        },
                        Entry::Fire(p, kinds, notice) => self.fire(server, &p, &kinds, notice, ez),
                        Entry::Close(sid) => {
                            if self.sessions.get(&sid).is_some_and(|s| s.server == server && s.connected) {
                                self.ended.push(sid);
                            }
                        },
                    }
                }
                self.followers[fi].zxid = z;
            },
            Down::Answer { sid, conn, tag, result } => {
                let zxid = self.followers[fi].zxid;
                if let Some(s) = self.sessions.get_mut(&sid) {
                    if s.server == server && s.conn == conn && s.connected {
                        s.forwarded.pop_front();
                        s.out.push_back(Msg::Reply { tag, result, conn, zxid, data: Vec::new() });
                    }
                }
            },
        }
    }

    fn exec(&mut self, sid: SessionId, op: &Op) -> Result<Answer, Failure<String>> {
        if op.is_read() {
            let (result, watch) = read(&self.nodes, op);
            if let Some(w) = watch {
                self.sessions.get_mut(&sid).expect("session").watches.insert(w);
            }
            return result;
        }
        match op {
            Op::Sync | Op::Ping => Ok(Answer::Done),
            Op::Probe => Err(Failure::Other("BadVersion".into())),
            Op::Create { path, sequential } => {
                let full = self.create(path, sid, *sequential, false)?;
                let stat = self.stat_on_create.then(|| self.nodes[&full].stat());
                Ok(Answer::Created { name: name_of(&full).to_string(), stat })
            },
            Op::CheckAndCreate { check, path } => {
                if !self.nodes.contains_key(check) {
                    return Err(Failure::CheckFailed);
                }
                let full = self.create(path, sid, false, false)?;
                let stat = self.stat_in_multi.then(|| self.nodes[&full].stat());
                Ok(Answer::Created { name: name_of(&full).to_string(), stat })
            },
            Op::Children { .. } | Op::GetData { .. } | Op::Exists { .. } => unreachable!("reads are read()'s"),
            Op::Delete { path } => {
                let owner = self.nodes.get(path).ok_or(Failure::NoNode)?.owner;
                self.zxid += 1;
                match self.delete_now(path) {
                    Ok(()) => {
                        if owner != sid {
                            self.foreign_deletes.push((sid, path.clone(), owner));
                        }
                        Ok(Answer::Done)
                    },
                    Err(f) => {
                        self.zxid -= 1;
                        Err(f)
                    },
                }
            },
            Op::DeleteOwned { path } => {
                if self.nodes.get(path).is_none_or(|n| n.owner != sid) {
                    return Err(Failure::NoNode);
                }
                self.zxid += 1;
                self.delete_now(path).map(|()| Answer::Done)
            },
            Op::MakeParents { path } => {
                let mut at = String::new();
                for part in path.split('/').filter(|p| !p.is_empty()) {
                    at.push('/');
                    at.push_str(part);
                    if !self.nodes.contains_key(&at) {
                        let container = at == *path;
                        self.create(&at, 0, false, container)?;
                    }
                }
                Ok(Answer::Done)
            },
        }
    }

    /// The client let go of its last watcher of `path`/`kind`
    /// (removeWatches).
    pub fn unwatch(&mut self, sid: SessionId, path: &str, kind: WatchKind) {
        if let Some(s) = self.sessions.get_mut(&sid) {
            s.watches.remove(&(path.to_string(), kind));
        }
    }

    /// Takes the next message for session `sid`'s client.
    pub fn deliver(&mut self, sid: SessionId) -> Option<Msg<T>> {
        self.sessions.get_mut(&sid)?.out.pop_front()
    }

    /// Drops session `sid`'s connection: returns the tags of every request
    /// not answered to the client (replies queued first, then requests
    /// forwarded to the leader, then requests not read), in order; queued
    /// notifications are lost; the server forgets the connection's
    /// watches. (A forwarded request may still be applied by the leader.)
    pub fn drop_conn(&mut self, sid: SessionId) -> Vec<T> {
        let s = self.sessions.get_mut(&sid).expect("session");
        s.connected = false;
        s.watches.clear();
        let mut tags: Vec<T> = s
            .out
            .drain(..)
            .filter_map(|m| match m {
                Msg::Reply { tag, .. } => Some(tag),
                Msg::Notify { .. } => None,
            })
            .collect();
        tags.extend(s.forwarded.drain(..));
        tags.extend(s.inflight.drain(..).map(|(t, _)| t));
        tags
    }

    /// Connects session `sid` again, to server `server` (a higher
    /// connection number, and a touch: the leader revalidates the
    /// session); with SetWatches, each of `watches` either fires at once
    /// (its node changed after `last_zxid`, the last zxid the client saw,
    /// or is gone: as that server's copy of the tree says) or is set again.
    pub fn reconnect(
        &mut self,
        sid: SessionId,
        server: usize,
        watches: &BTreeSet<(String, WatchKind)>,
        last_zxid: i64,
    ) {
        let (nodes, zxid) = match server {
            0 => (&self.nodes, self.zxid),
            f => (&self.followers[f - 1].nodes, self.followers[f - 1].zxid),
        };
        let set_watches = self.set_watches;
        let mut fire = Vec::new();
        let mut keep = BTreeSet::new();
        if set_watches {
            for (path, kind) in watches {
                match (nodes.get(path), kind) {
                    (None, _) => fire.push((path.clone(), Notice::Deleted)),
                    (Some(n), WatchKind::Data) if n.mzxid > last_zxid => fire.push((path.clone(), Notice::Changed)),
                    (Some(n), WatchKind::Child) if n.pzxid > last_zxid => fire.push((path.clone(), Notice::Children)),
                    _ => {
                        keep.insert((path.clone(), *kind));
                    },
                }
            }
        }
        let now = self.now;
        let ghost = self.is_ghost(server);
        let s = self.sessions.get_mut(&sid).expect("session");
        s.connected = true;
        s.conn += 1;
        s.server = server;
        s.forwarded.clear();
        // The leader revalidates the session: a touch (but a deposed
        // leader's touch reaches nobody but its own record).
        if !ghost {
            s.touched = now;
        } else {
            self.followers[server - 1].ghost_touched.insert(sid, now);
        }
        s.watches = keep;
        fire.dedup();
        for (path, notice) in fire {
            s.out.push_back(Msg::Notify { path, notice, zxid });
        }
    }

    /// The leader closes session `sid` (expired, or closed by its
    /// client): its ephemeral nodes go in one transaction (others are
    /// notified). Its connection stays: its server closes it (the
    /// simulator does, with `drop_conn`) when it learns: the leader at
    /// once, a follower when it applies the close (`ended`).
    pub fn expire(&mut self, sid: SessionId) {
        let s = self.sessions.get_mut(&sid).expect("session");
        s.alive = false;
        let mine: Vec<String> = self.nodes.iter().filter(|(_, n)| n.owner == sid).map(|(p, _)| p.clone()).collect();
        if !mine.is_empty() || !self.followers.is_empty() {
            // The closeSession transaction (with followers it always has a
            // zxid of its own: they apply it in order).
            self.zxid += 1;
            for p in &mine {
                let _ = self.delete_now(p);
            }
        }
        self.record(Entry::Close(sid));
        self.commit();
    }
}

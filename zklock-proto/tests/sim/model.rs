//! A model of one ZooKeeper server: a linearizable tree of nodes, sessions
//! with one connection each, and one-shot watches.
//!
//! Each session's connection is two FIFOs: requests in flight (applied by
//! the server when the scheduler picks them) and messages for the client
//! (replies and watch notifications, delivered when the scheduler picks
//! them). A change queues its notifications on every watching session's
//! connection while it is applied, so they come before any later reply, as
//! ZooKeeper does. Every child of the lock path keeps its life (creation and
//! deletion zxid, owner) so the checker can ask what the tree looked like as
//! of any zxid.

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
    /// The server's time (`Zk::now`) when it last heard from the session:
    /// its creation, a request or ping it read, a reconnect (standalone and
    /// leader semantics: every one touches the session).
    pub touched: u64,
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
            Node { czxid: 0, mzxid: 0, pzxid: 0, owner: 0, cversion: 0, container: false, children: BTreeSet::new() },
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
        }
    }

    /// Opens session `id`, connected on connection 1, touched now.
    pub fn open(&mut self, id: SessionId) {
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

    /// Fires the watches `kinds` on `path`: each watching session that is
    /// connected gets the notification queued now.
    fn trigger(&mut self, path: &str, kinds: &[WatchKind], notice: Notice) {
        let zxid = self.zxid;
        for s in self.sessions.values_mut() {
            let mut fired = false;
            for k in kinds {
                fired |= s.watches.remove(&(path.to_string(), *k));
            }
            if fired && s.connected {
                s.out.push_back(Msg::Notify { path: path.to_string(), notice, zxid });
            }
        }
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
        let z = self.zxid;
        let name = name_of(&full).to_string();
        let p = self.nodes.get_mut(&parent).expect("parent");
        p.cversion += 1;
        p.pzxid = z;
        p.children.insert(name.clone());
        self.nodes.insert(
            full.clone(),
            Node { czxid: z, mzxid: z, pzxid: z, owner, cversion: 0, container, children: BTreeSet::new() },
        );
        if self.tracked.contains(&parent) {
            self.lives.push(Life { parent: parent.clone(), name, czxid: z, dzxid: None, owner });
        }
        self.trigger(&parent, &[WatchKind::Child], Notice::Children);
        Ok(full)
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
        !empty.is_empty()
    }

    /// Queues a request on session `sid`'s connection; false when it has
    /// none (the client fails it at once).
    pub fn send(&mut self, sid: SessionId, tag: T, op: Op) -> bool {
        let s = self.sessions.get_mut(&sid).expect("session");
        if !s.alive || !s.connected {
            return false;
        }
        s.inflight.push_back((tag, op));
        true
    }

    /// Applies the oldest request in flight of session `sid` (reading it
    /// touches the session): the change, its notifications, then the
    /// reply, queued for the client. Returns the op applied (for the
    /// trace).
    pub fn apply(&mut self, sid: SessionId) -> Option<Op> {
        let now = self.now;
        let s = self.sessions.get_mut(&sid)?;
        let (tag, op) = s.inflight.pop_front()?;
        s.touched = now;
        let result = self.exec(sid, &op);
        let s = self.sessions.get_mut(&sid).expect("session");
        s.out.push_back(Msg::Reply { tag, result, conn: s.conn, zxid: self.zxid });
        Some(op)
    }

    fn exec(&mut self, sid: SessionId, op: &Op) -> Result<Answer, Failure<String>> {
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
            Op::Children { path, stat, watch } => {
                let n = self.nodes.get(path).ok_or(Failure::NoNode)?;
                let names = n.children.iter().cloned().collect();
                let stat = stat.then(|| n.stat());
                if *watch {
                    self.watch(sid, path, WatchKind::Child);
                }
                Ok(Answer::Children { names, stat })
            },
            Op::GetData { path, watch } => {
                let st = self.nodes.get(path).ok_or(Failure::NoNode)?.stat();
                if *watch {
                    self.watch(sid, path, WatchKind::Data);
                }
                Ok(Answer::Data(st))
            },
            Op::Exists { path } => Ok(Answer::Exists(self.nodes.get(path).map(Node::stat))),
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

    fn watch(&mut self, sid: SessionId, path: &str, kind: WatchKind) {
        self.sessions.get_mut(&sid).expect("session").watches.insert((path.to_string(), kind));
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
    /// not answered to the client (replies queued first, then requests not
    /// applied), in order; queued notifications are lost; the server
    /// forgets the connection's watches.
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
        tags.extend(s.inflight.drain(..).map(|(t, _)| t));
        tags
    }

    /// Connects session `sid` again (a higher connection number, and a
    /// touch); with
    /// SetWatches, each of `watches` either fires at once (its node changed
    /// after `last_zxid`, the last zxid the client saw, or is gone) or is
    /// set again.
    pub fn reconnect(&mut self, sid: SessionId, watches: &BTreeSet<(String, WatchKind)>, last_zxid: i64) {
        let zxid = self.zxid;
        let set_watches = self.set_watches;
        let mut fire = Vec::new();
        let mut keep = BTreeSet::new();
        if set_watches {
            for (path, kind) in watches {
                match (self.nodes.get(path), kind) {
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
        let s = self.sessions.get_mut(&sid).expect("session");
        s.connected = true;
        s.conn += 1;
        // The server revalidates the session: a touch.
        s.touched = now;
        s.watches = keep;
        fire.dedup();
        for (path, notice) in fire {
            s.out.push_back(Msg::Notify { path, notice, zxid });
        }
    }

    /// Expires session `sid`: its ephemeral nodes go in one transaction
    /// (others are notified); returns the tags of every request not
    /// answered to its client.
    pub fn expire(&mut self, sid: SessionId) -> Vec<T> {
        let tags = self.drop_conn(sid);
        let s = self.sessions.get_mut(&sid).expect("session");
        s.alive = false;
        let mine: Vec<String> = self.nodes.iter().filter(|(_, n)| n.owner == sid).map(|(p, _)| p.clone()).collect();
        if !mine.is_empty() {
            self.zxid += 1;
            for p in &mine {
                let _ = self.delete_now(p);
            }
        }
        tags
    }
}

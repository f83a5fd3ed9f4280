//! Lock kinds as drivers (as Curator's `LockInternals` asks its
//! `LockInternalsDriver`): what a contender creates, which nodes of the
//! queue block it (it watches the last of them), and when the deletion of
//! its only blocker grants it without another look at the queue. The
//! acquire engine asks the driver of its lock kind and has no branch on the
//! kind; a new kind (a semaphore, a leader latch) is a new driver here and
//! its [`crate::names::LockMode`]. The terms the drivers' rules are written
//! in, [`NodeKind`] and [`LockNode`], are defined here (and named in
//! [`crate::names`] too, which parses child names into them).

use std::cmp::Ordering;

crate::vocabulary! {
    /// Whether a lock node is a reader (shared) or a writer (exclusive).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum NodeKind {
        /// A shared (read) node: `__READ__` (Curator) or `__rlock__` (kazoo).
        Reader = 1, "READER";
        /// An exclusive node: Curator's `lock-`, `__WRIT__` and `latch-`,
        /// kazoo's `__lock__`, ZooKeeper's recipe `x-<sid>-`, and every other
        /// name that ends in a sequence.
        Writer = 2, "WRITER";
    }
}

/// A lock node found among the children of a lock path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockNode {
    /// The child name (no parent path).
    pub name: String,
    /// The sequence number the server appended.
    pub sequence: i64,
    /// Reader or writer.
    pub kind: NodeKind,
}

impl LockNode {
    /// Queue order: sequence as a number, then the whole name so that equal
    /// sequences (only possible with foreign, hand-made nodes) still have one
    /// total order and at most one writer holds.
    pub fn queue_cmp(&self, other: &LockNode) -> Ordering {
        self.sequence.cmp(&other.sequence).then_with(|| self.name.cmp(&other.name))
    }
}

/// One lock kind's rules. Drivers are pure: no ZooKeeper access.
pub trait Driver: Send + Sync + 'static {
    /// The token written after the protected prefix `_c_<uuid>-`, before
    /// the sequence the server appends (Curator's names).
    fn token(&self) -> &'static str;

    /// The kind of the nodes this driver creates, as other contenders see
    /// them.
    fn node_kind(&self) -> NodeKind;

    /// Whether `other`, a lock node of the queue, blocks our node `me`.
    fn blocks(&self, me: &LockNode, other: &LockNode) -> bool;

    /// Whether, when `blocker` was the only node blocking us and is then
    /// deleted, we hold the lock without listing the queue again: nodes
    /// created after ours get larger sequences, so the nodes before ours
    /// can only go away (protocol section 1), unless a new node can sort
    /// before ours.
    fn held_once_sole_blocker_gone(&self, blocker: &LockNode) -> bool;

    /// Whether a blocked contender watches the children of the queue
    /// instead of the one blocker before it: for kinds held by several at
    /// once (a semaphore), where any blocker's deletion may grant us.
    fn waits_on_children(&self) -> bool {
        false
    }

    /// For a kind whose contenders queue under a child of the path they
    /// name, one at a time through a mutex on another child (Curator's
    /// semaphore: `leases` and `locks`): those two children, queue first.
    fn layout(&self) -> Option<Layout> {
        None
    }
}

/// Where a serialised kind keeps its queue and its mutex, below the path
/// the user names.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// The child holding the queue (our nodes).
    pub queue: &'static str,
    /// The child holding the exclusive lock a contender takes while it
    /// creates its node and waits (released once it holds or gives up).
    pub mutex: &'static str,
}

/// A writer (exclusive lock, write side): blocked by every lock node
/// before it. Once its sole blocker is gone it holds, except when that
/// blocker is a `__WRIT__` node: a write-to-read downgrade (zklock's and
/// Curator 5.5+'s) then creates a read node with that node's sequence,
/// which sorts before us.
struct Writer(&'static str);

impl Driver for Writer {
    fn token(&self) -> &'static str {
        self.0
    }

    fn node_kind(&self) -> NodeKind {
        NodeKind::Writer
    }

    fn blocks(&self, me: &LockNode, other: &LockNode) -> bool {
        other.queue_cmp(me) == Ordering::Less
    }

    fn held_once_sole_blocker_gone(&self, blocker: &LockNode) -> bool {
        !blocker.name.contains("__WRIT__")
    }
}

/// A reader: blocked only by writers with a smaller sequence; a read node
/// never blocks it, so its sole blocker's deletion always grants it.
struct Reader;

impl Driver for Reader {
    fn token(&self) -> &'static str {
        "__READ__"
    }

    fn node_kind(&self) -> NodeKind {
        NodeKind::Reader
    }

    fn blocks(&self, me: &LockNode, other: &LockNode) -> bool {
        other.kind == NodeKind::Writer && other.sequence < me.sequence
    }

    fn held_once_sole_blocker_gone(&self, _blocker: &LockNode) -> bool {
        true
    }
}

/// A lease of Curator's `InterProcessSemaphoreV2`: every other lease node
/// blocks it, and it holds while fewer of them exist than the semaphore has
/// permits (Curator: "children ≤ permits"). Only a holder of the mutex
/// `<path>/locks` creates lease nodes and waits, so waiters do not crowd
/// each other out; the count alone keeps the holders at most the permits
/// (protocol doc section 8c).
struct Lease;

impl Driver for Lease {
    fn token(&self) -> &'static str {
        "lease-"
    }

    fn node_kind(&self) -> NodeKind {
        NodeKind::Writer
    }

    fn blocks(&self, _me: &LockNode, _other: &LockNode) -> bool {
        true
    }

    fn held_once_sole_blocker_gone(&self, _blocker: &LockNode) -> bool {
        false
    }

    fn waits_on_children(&self) -> bool {
        true
    }

    fn layout(&self) -> Option<Layout> {
        Some(Layout { queue: "leases", mutex: "locks" })
    }
}

/// Curator's `InterProcessMutex`: `_c_<uuid>-lock-<seq>`.
pub static EXCLUSIVE: &dyn Driver = &Writer("lock-");
/// The read side of Curator's `InterProcessReadWriteLock`: `__READ__`.
pub static READ: &dyn Driver = &Reader;
/// The write side of Curator's `InterProcessReadWriteLock`: `__WRIT__`.
pub static WRITE: &dyn Driver = &Writer("__WRIT__");
/// A participant of Curator's `LeaderLatch`: `latch-`; the first in the
/// queue leads, the others wait on the one before them, as writers do.
pub static LEADER: &dyn Driver = &Writer("latch-");
/// A lease of Curator's `InterProcessSemaphoreV2`: `_c_<uuid>-lease-<seq>`
/// under `<path>/leases`.
pub static LEASE: &dyn Driver = &Lease;

//! Lock kinds as drivers (as Curator's `LockInternals` asks its
//! `LockInternalsDriver`): what a contender creates, which nodes of the
//! queue block it (it watches the last of them), and when the deletion of
//! its only blocker grants it without another look at the queue. The
//! acquire engine asks the driver of its lock kind and has no branch on the
//! kind; a new kind (a semaphore, a leader latch) is a new driver here and
//! its [`crate::LockMode`].

use std::cmp::Ordering;

use crate::names::{LockNode, NodeKind};

/// One lock kind's rules. Drivers are pure: no ZooKeeper access.
pub(crate) trait Driver: Send + Sync + 'static {
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

/// Curator's `InterProcessMutex`: `_c_<uuid>-lock-<seq>`.
pub(crate) static EXCLUSIVE: &dyn Driver = &Writer("lock-");
/// The read side of Curator's `InterProcessReadWriteLock`: `__READ__`.
pub(crate) static READ: &dyn Driver = &Reader;
/// The write side of Curator's `InterProcessReadWriteLock`: `__WRIT__`.
pub(crate) static WRITE: &dyn Driver = &Writer("__WRIT__");
/// A participant of Curator's `LeaderLatch`: `latch-`; the first in the
/// queue leads, the others wait on the one before them, as writers do.
pub(crate) static LEADER: &dyn Driver = &Writer("latch-");

//! The soak's properties, computed from what the run recorded. Pure
//! functions over plain records, unit-tested without a server.
//!
//! All times are nanoseconds of `CLOCK_MONOTONIC`, which every process on
//! the machine shares, so times taken in different contender processes
//! compare directly.
//!
//! # Locks and shared holding
//!
//! A run has up to four locks ([`LockId`]): an exclusive lock, a
//! read/write lock, a leader election and a counting semaphore of
//! [`SEMAPHORE_PERMITS`] leases, each at its own path. Every grant has a
//! [`Mode`]: exclusive, read, write, leader or lease. A grant *excludes*
//! (exclusive, write and leader grants) or is *shared* (read grants and
//! leases). Two grants on the same lock *conflict* unless both are shared;
//! leases do not conflict pairwise, but no more of them than the permits
//! may be safely held at once. Every property is evaluated per lock, with
//! these rules:
//!
//! 1. No two conflicting safely-held intervals overlap: readers may overlap
//!    readers, a writer's interval overlaps no other holder's (reader or
//!    writer); no more lease intervals overlap at one instant than the
//!    semaphore has permits. And no contender is granted a lock on a node that a third
//!    party deleted while it waited (its token is that node's czxid): the
//!    node no longer exists, so whoever comes next is granted too.
//! 2. Fencing. Tokens are the czxids of the lock nodes, and a node's queue
//!    position follows its czxid, so in grant order (by interval start):
//!    an excluding grant's token is larger than every earlier grant's token
//!    (reader or writer) and smaller than every later one's; readers'
//!    tokens are not ordered among themselves. The resource enforces the
//!    same rule on writes: an excluding write is refused if any larger token
//!    was accepted before (from anyone); a shared write is refused only if
//!    a larger token was accepted before from an excluding grant (readers
//!    refuse no readers). So a reader granted after a writer carries a larger
//!    token than that writer, and a stale writer's write after a later grant
//!    of anyone, or a stale reader's write after a later writer's, is refused.
//!    Checked from the record: no write is accepted once a later
//!    conflicting grant has written, no write of a grant that no later
//!    conflicting grant has announced yet is refused.
//! 3. Every loss reaches its holder before a conflicting grant starts (for
//!    a lease: a grant that, with the lost one, would make more holders
//!    than permits) (exempt: the holder's process was stopped, or a third party deleted
//!    the holder's node; both are counted apart).
//! 4. No lock node remains once every session is closed.
//! 5. Every lock is granted again after every fault.
//!
//! # A holder's node deleted by a third party
//!
//! The delete frees the lock at once: the next in line is granted as soon
//! as it sees the delete, while the holder learns of it from the same delete
//! (its watch), so it cannot be told first. Its safely-held interval may
//! then overlap the next grant, and its loss may reach it after that grant:
//! such overlaps (property 1) and late notices (property 3) are not
//! violations but are counted and timed apart ([`HolderDelete`]). The
//! fencing token still protects the resource (property 2 holds).
//!
//! # Fault classes
//!
//! Each violation has a time span; it is attributed to every fault whose
//! time `[start, end + settle]` meets that span (settle: what the run
//! passes, a session timeout and a second), and to every third-party delete
//! whose node's token it involves, or to "none".

use std::collections::BTreeMap;

/// The locks of the soak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LockId {
    /// An exclusive lock (`Client::lock`, Curator `lock-` nodes).
    Exclusive,
    /// A read/write lock (`Client::read_lock` / `write_lock`, Curator
    /// `__READ__` / `__WRIT__` nodes).
    Rw,
    /// A leader election (`Client::election`, Curator `latch-` nodes): at
    /// most one leader, as an exclusive lock.
    Election,
    /// A counting semaphore (`Client::semaphore`, Curator
    /// `InterProcessSemaphoreV2` layout) of [`SEMAPHORE_PERMITS`] leases.
    Semaphore,
}

/// The leases of the soak's semaphore.
pub const SEMAPHORE_PERMITS: usize = 2;

impl LockId {
    /// Every lock, in report order.
    pub const ALL: [LockId; 4] = [LockId::Exclusive, LockId::Rw, LockId::Election, LockId::Semaphore];

    /// The lock's name in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            LockId::Exclusive => "exclusive",
            LockId::Rw => "rw",
            LockId::Election => "election",
            LockId::Semaphore => "semaphore",
        }
    }

    /// The lock's path in ZooKeeper.
    pub fn path(self) -> &'static str {
        match self {
            LockId::Exclusive => "/soak/lock",
            LockId::Rw => "/soak/rwlock",
            LockId::Election => "/soak/election",
            LockId::Semaphore => "/soak/semaphore",
        }
    }

    /// Where the lock's nodes queue: its path, or a semaphore's `leases`.
    pub fn queue_path(self) -> String {
        match self {
            LockId::Semaphore => format!("{}/leases", self.path()),
            _ => self.path().to_owned(),
        }
    }

    /// Every path the lock keeps nodes under: its queue, and a semaphore's
    /// mutex `locks` too.
    pub fn node_paths(self) -> Vec<String> {
        match self {
            LockId::Semaphore => vec![self.queue_path(), format!("{}/locks", self.path())],
            _ => vec![self.queue_path()],
        }
    }

    /// How many may hold at once, for a lock whose holders share up to a
    /// count (the semaphore).
    pub fn permits(self) -> Option<usize> {
        (self == LockId::Semaphore).then_some(SEMAPHORE_PERMITS)
    }

    /// The lock called `name`.
    pub fn from_name(name: &str) -> Option<LockId> {
        LockId::ALL.into_iter().find(|l| l.name() == name)
    }
}

/// How a grant holds its lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    /// The exclusive lock.
    Exclusive,
    /// The read side of the read/write lock (shared).
    Read,
    /// The write side of the read/write lock (excluding).
    Write,
    /// Leadership of the election (excluding).
    Leader,
    /// A lease of the semaphore (shared up to its permits).
    Lease,
}

impl Mode {
    /// The lock this mode belongs to.
    pub fn lock(self) -> LockId {
        match self {
            Mode::Exclusive => LockId::Exclusive,
            Mode::Read | Mode::Write => LockId::Rw,
            Mode::Leader => LockId::Election,
            Mode::Lease => LockId::Semaphore,
        }
    }

    /// Whether a grant of this mode excludes every other holder.
    pub fn excludes(self) -> bool {
        !matches!(self, Mode::Read | Mode::Lease)
    }

    /// Whether grants of modes `self` and `other` on one lock may not
    /// overlap.
    pub fn conflicts(self, other: Mode) -> bool {
        self.excludes() || other.excludes()
    }

    /// One-letter code in the resource protocol and the logs.
    pub fn code(self) -> &'static str {
        match self {
            Mode::Exclusive => "x",
            Mode::Read => "r",
            Mode::Write => "w",
            Mode::Leader => "l",
            Mode::Lease => "s",
        }
    }

    /// The mode with code `code`.
    pub fn from_code(code: &str) -> Option<Mode> {
        [Mode::Exclusive, Mode::Read, Mode::Write, Mode::Leader, Mode::Lease].into_iter().find(|m| m.code() == code)
    }

    /// The mode's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Exclusive => "exclusive",
            Mode::Read => "reader",
            Mode::Write => "writer",
            Mode::Leader => "leader",
            Mode::Lease => "lease",
        }
    }
}

/// One grant as the holder lived it: from its first successful `check()`
/// after the acquire returned, to its last successful `check()` (the one
/// right before `release()`, or the last one before a `check()` failed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interval {
    /// Contender id.
    pub cid: u32,
    /// How the grant held its lock (which lock, shared or not).
    pub mode: Mode,
    /// Fencing token of the grant.
    pub token: u64,
    /// First successful check.
    pub start: u64,
    /// Last successful check.
    pub end: u64,
    /// When the holder first learned that the lock was not safely held
    /// (state callback Suspended/Lost, or the first failed `check()`),
    /// if it did.
    pub noticed: Option<u64>,
    /// Whether the interval ended because the lock was no longer safely
    /// held (rather than by a plain release).
    pub lost: bool,
}

/// One write that reached the fenced resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    /// Contender id.
    pub cid: u32,
    /// How the writer's grant held its lock.
    pub mode: Mode,
    /// Token the write carried.
    pub token: u64,
    /// Start of the writer's grant (its first successful check).
    pub grant_start: u64,
    /// Arrival at the resource.
    pub arrival: u64,
    /// Whether this is the first write of a grant (it announces the grant).
    pub enter: bool,
    /// The resource's verdict: accepted, or rejected as stale.
    pub accepted: bool,
}

/// Which chaos thread injects a fault kind. Faults of different lanes run
/// at the same time and may overlap; a lane's faults come one after the
/// other. A new fault kind only needs a lane, a name and its injection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lane {
    /// The ensemble's members (kill, freeze, restart). After each fault
    /// this lane waits a little for the next grant (see `chaos.rs`).
    Servers,
    /// The holders' connections (their proxies).
    HolderNetwork,
    /// The holders' processes.
    HolderProcess,
    /// An outside client acting on the lock nodes.
    ThirdParty,
}

impl Lane {
    /// Every lane, one chaos thread each.
    pub const ALL: [Lane; 4] = [Lane::Servers, Lane::HolderNetwork, Lane::HolderProcess, Lane::ThirdParty];
}

/// The fault kinds of the chaos schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// SIGKILL the leader, wait for a new one, start the old one again.
    KillLeader,
    /// SIGKILL a follower and start it again.
    KillFollower,
    /// SIGSTOP a member for longer than the session timeout, then SIGCONT.
    FreezeMember,
    /// SIGKILL every member, then start them all again.
    RestartEnsemble,
    /// Blackhole the holder's connection for longer than the session timeout.
    BlackholeHolder,
    /// SIGSTOP the holder's process for longer than its session timeout.
    PauseHolder,
    /// Let the server execute a contender's create but drop the reply.
    DropCreateReply,
    /// An outside session deletes a lock node: a waiter's and a holder's,
    /// in turn, on every lock.
    ThirdPartyDelete,
    /// Cut the member the holder is connected to off from the other
    /// members (quorum and election links silent) while the holder stays
    /// connected to it, for longer than the session timeout.
    PartitionMember,
    /// Stop the holder's process between sending its next create (and the
    /// list behind it) and reading their replies: the proxy holds the
    /// replies, the process is stopped, the replies are put into its
    /// socket, and its network is blackholed past its session.
    StallHolder,
    /// Hold every answer to the holder (its requests still reach the
    /// server, which acts on them and touches its session) for a tenth to
    /// half of the session timeout, then reset its connections, the
    /// answers lost with them.
    MuteHolder,
    /// The member the holder is connected through answers every connect
    /// "expired" (its proxy does, as a leader deposed while it stalled
    /// answers from its stale record) for a quarter to a whole session
    /// timeout, and the holder's connection to it is reset: the holder
    /// reconnects through the others, which have its session.
    StaleMember,
    /// The holder's client is given a server list without the member it
    /// is connected through (`set_hosts`, a move), either while connected
    /// (in half of those twice, 2 ms apart, to one other member each time)
    /// or while it reconnects (all its proxies blackholed past its read
    /// timeout, by up to the session timeout more, so that the session
    /// expires in most; the move made, the other members' proxies
    /// healed, the old member's kept silent a while); the whole list again
    /// afterwards.
    MoveHolder,
}

impl FaultKind {
    /// Every kind, in report order.
    pub const ALL: [FaultKind; 13] = [
        FaultKind::KillLeader,
        FaultKind::KillFollower,
        FaultKind::FreezeMember,
        FaultKind::RestartEnsemble,
        FaultKind::BlackholeHolder,
        FaultKind::PauseHolder,
        FaultKind::DropCreateReply,
        FaultKind::ThirdPartyDelete,
        FaultKind::PartitionMember,
        FaultKind::StallHolder,
        FaultKind::MuteHolder,
        FaultKind::StaleMember,
        FaultKind::MoveHolder,
    ];

    /// The kind's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::KillLeader => "kill-leader",
            FaultKind::KillFollower => "kill-follower",
            FaultKind::FreezeMember => "freeze-member",
            FaultKind::RestartEnsemble => "restart-ensemble",
            FaultKind::BlackholeHolder => "blackhole-holder",
            FaultKind::PauseHolder => "pause-holder",
            FaultKind::DropCreateReply => "drop-create-reply",
            FaultKind::ThirdPartyDelete => "third-party-delete",
            FaultKind::PartitionMember => "partition-member",
            FaultKind::StallHolder => "stall-holder",
            FaultKind::MuteHolder => "mute-holder",
            FaultKind::StaleMember => "stale-member",
            FaultKind::MoveHolder => "move-holder",
        }
    }

    /// The chaos thread that injects this kind.
    pub fn lane(self) -> Lane {
        match self {
            FaultKind::KillLeader
            | FaultKind::KillFollower
            | FaultKind::FreezeMember
            | FaultKind::RestartEnsemble
            | FaultKind::PartitionMember => Lane::Servers,
            FaultKind::BlackholeHolder
            | FaultKind::DropCreateReply
            | FaultKind::MuteHolder
            | FaultKind::StaleMember
            | FaultKind::MoveHolder => Lane::HolderNetwork,
            FaultKind::PauseHolder | FaultKind::StallHolder => Lane::HolderProcess,
            FaultKind::ThirdPartyDelete => Lane::ThirdParty,
        }
    }
}

/// Whether a node deleted by a third party was waiting or holding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Not holding: the node it waited on still existed when ours was
    /// deleted (checked in the same transaction as the delete).
    Waiter,
    /// Holding, and its holder had announced the grant to the resource.
    Holder,
}

/// A lock node deleted by the orchestrator's own session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeletedNode {
    /// The node's lock.
    pub lock: LockId,
    /// The node's name (under the lock path).
    pub name: String,
    /// Reader, writer or exclusive node.
    pub mode: Mode,
    /// Its creation zxid: the fencing token of any grant on it.
    pub czxid: u64,
    /// Waiting or holding when deleted.
    pub role: Role,
    /// The delete's reply was lost and the node was gone afterwards: it
    /// may have been its holder's own release. Counted as deleted all the
    /// same (the lenient side for properties 1 and 3; see `third_party.rs`).
    pub reply_lost: bool,
}

/// One injected fault: from the moment it took effect to the moment it was
/// undone (server serving again, connection healed, process resumed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// What was done.
    pub kind: FaultKind,
    /// Took effect (for a delete: when it was sent).
    pub start: u64,
    /// Undone (for a delete: when its reply came).
    pub end: u64,
    /// For `PauseHolder` and `StallHolder`: the contender process that was
    /// stopped.
    pub paused_process: Option<usize>,
    /// For `ThirdPartyDelete`: the node deleted.
    pub deleted: Option<DeletedNode>,
}

impl Fault {
    /// A fault without a paused process or a deleted node.
    pub fn new(kind: FaultKind, start: u64, end: u64) -> Fault {
        Fault { kind, start, end, paused_process: None, deleted: None }
    }
}

/// A violation of one of the properties, with what shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Property number (1 to 5, as in the issue).
    pub property: u8,
    /// The lock it concerns.
    pub lock: LockId,
    /// Human-readable evidence.
    pub detail: String,
    /// When it happened: from..to (nanoseconds).
    pub span: (u64, u64),
    /// Tokens of the grants involved.
    pub tokens: Vec<u64>,
    /// The fault kinds it is attributed to (empty: none), filled by
    /// [`attribute`].
    pub faults: Vec<FaultKind>,
}

impl Violation {
    fn new(property: u8, lock: LockId, span: (u64, u64), tokens: Vec<u64>, detail: String) -> Violation {
        Violation { property, lock, detail, span, tokens, faults: Vec::new() }
    }
}

/// Recovery after one fault: time from its end to the next grant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovery {
    /// The fault.
    pub kind: FaultKind,
    /// Nanoseconds from the fault's end until every lock was granted again
    /// (`None`: some lock was not granted within the bound).
    pub next_grant_after: Option<u64>,
}

/// Everything the run recorded.
#[derive(Clone, Debug, Default)]
pub struct Record {
    /// The locks the contenders took.
    pub locks: Vec<LockId>,
    /// Every finished grant.
    pub intervals: Vec<Interval>,
    /// Every write, in arrival order.
    pub writes: Vec<Write>,
    /// Every injected fault.
    pub faults: Vec<Fault>,
    /// Lock nodes still present once every session was closed, per lock.
    pub leftover_nodes: Vec<(LockId, String)>,
    /// Contender id -> the index of its process.
    pub process_of: BTreeMap<u32, usize>,
}

/// What became of one holder whose node a third party deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HolderDelete {
    /// The lock.
    pub lock: LockId,
    /// The holder's token (the node's czxid).
    pub token: u64,
    /// Nanoseconds from the delete (sent) until the holder learned of the
    /// loss; `None` if it released (or its grant ended) without noticing.
    pub noticed_after: Option<u64>,
    /// Nanoseconds from the delete to the next conflicting grant's start.
    pub next_grant_after: Option<u64>,
    /// Whether the holder learned of it only after that grant started.
    pub noticed_after_next_grant: bool,
    /// Whether its safely-held interval overlapped a grant that started
    /// after the delete (exempt from property 1).
    pub overlapped: bool,
}

/// The verdict.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Violations, by property.
    pub violations: Vec<Violation>,
    /// Recovery after each fault.
    pub recoveries: Vec<Recovery>,
    /// Writes rejected as stale (the fencing token at work).
    pub stale_rejected: usize,
    /// Losses (intervals that ended because the lock was not safely held).
    pub losses: usize,
    /// Losses exempt from property 3 because their process was paused.
    pub paused_losses: usize,
    /// Holders whose node a third party deleted.
    pub holder_deletes: Vec<HolderDelete>,
    /// Grants on a node that a third party deleted while it waited (each
    /// is a property 1 violation too).
    pub deleted_waiter_grants: usize,
    /// The longest times without a grant, per lock, longest first.
    pub gaps: Vec<Gap>,
}

/// A time without any grant on one lock, and the kinds of the faults in
/// effect during it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gap {
    /// The lock.
    pub lock: LockId,
    /// The last grant before the gap.
    pub from: u64,
    /// The first grant after it.
    pub to: u64,
    /// Faults that overlapped the gap.
    pub faults: Vec<FaultKind>,
}

/// The `n` longest gaps between consecutive grants on `lock`.
pub fn longest_gaps(record: &Record, lock: LockId, n: usize) -> Vec<Gap> {
    let mut starts: Vec<u64> =
        record.writes.iter().filter(|w| w.enter && w.mode.lock() == lock).map(|w| w.grant_start).collect();
    starts.sort_unstable();
    let mut gaps: Vec<(u64, u64)> = starts.windows(2).map(|w| (w[0], w[1])).collect();
    gaps.sort_by_key(|&(a, b)| std::cmp::Reverse(b - a));
    gaps.truncate(n);
    gaps.into_iter()
        .map(|(from, to)| {
            let mut faults: Vec<FaultKind> =
                record.faults.iter().filter(|f| f.start <= to && f.end >= from).map(|f| f.kind).collect();
            faults.sort();
            faults.dedup();
            Gap { lock, from, to, faults }
        })
        .collect()
}

impl Report {
    /// Violations of property `p`.
    pub fn count(&self, p: u8) -> usize {
        self.violations.iter().filter(|v| v.property == p).count()
    }

    /// Violations of property `p` on `lock`.
    pub fn count_on(&self, p: u8, lock: LockId) -> usize {
        self.violations.iter().filter(|v| v.property == p && v.lock == lock).count()
    }

    /// Violations of property `p` attributed to `kind` (`None`: to no fault).
    pub fn count_for(&self, p: u8, kind: Option<FaultKind>) -> usize {
        self.violations
            .iter()
            .filter(|v| v.property == p)
            .filter(|v| match kind {
                Some(k) => v.faults.contains(&k),
                None => v.faults.is_empty(),
            })
            .count()
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Holders' nodes deleted by a third party on `lock`: token -> when the
/// delete was sent.
fn deleted_holders(faults: &[Fault], lock: LockId) -> BTreeMap<u64, u64> {
    faults
        .iter()
        .filter_map(|f| f.deleted.as_ref().map(|d| (f, d)))
        .filter(|(_, d)| d.lock == lock && d.role == Role::Holder)
        .map(|(f, d)| (d.czxid, f.start))
        .collect()
}

/// Whether the holder with `token` may overlap (or learn late of) a grant
/// that starts at `start`: a third party deleted its node before that.
fn freed_by_delete(deleted: &BTreeMap<u64, u64>, token: u64, start: u64) -> bool {
    deleted.get(&token).is_some_and(|&at| at <= start)
}

/// Property 1: no two conflicting safely-held intervals on `lock` overlap
/// (readers may overlap readers), except an overlap that starts after a
/// third party deleted the earlier holder's node (`deleted_holders`).
pub fn check_overlap(lock: LockId, intervals: &[Interval], deleted: &BTreeMap<u64, u64>, out: &mut Vec<Violation>) {
    let mut sorted: Vec<&Interval> = intervals.iter().filter(|i| i.mode.lock() == lock).collect();
    sorted.sort_by_key(|i| (i.start, i.end));
    let mut active: Vec<&Interval> = Vec::new();
    for i in sorted {
        active.retain(|a| a.end >= i.start);
        if let Some(permits) = lock.permits() {
            let sharing: Vec<&&Interval> =
                active.iter().filter(|a| !freed_by_delete(deleted, a.token, i.start)).collect();
            if sharing.len() >= permits {
                let until = sharing.iter().map(|a| a.end).min().unwrap_or(i.start).min(i.end);
                out.push(Violation::new(
                    1,
                    lock,
                    (i.start, until),
                    sharing.iter().map(|a| a.token).chain([i.token]).collect(),
                    format!(
                        "{}: contender {} ({}, token {}) was safely holding from {:.3} ms while {} others (of {} \
                         permits) still were: {}",
                        lock.name(),
                        i.cid,
                        i.mode.name(),
                        i.token,
                        ms(i.start),
                        sharing.len(),
                        permits,
                        sharing
                            .iter()
                            .map(|a| format!("contender {} token {} until {:.3} ms", a.cid, a.token, ms(a.end)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
        for prev in &active {
            if !prev.mode.conflicts(i.mode) || freed_by_delete(deleted, prev.token, i.start) {
                continue;
            }
            out.push(Violation::new(
                1,
                lock,
                (i.start, prev.end.min(i.end)),
                vec![prev.token, i.token],
                format!(
                    "{}: contender {} ({}, token {}) was safely holding from {:.3} ms while contender {} ({}, \
                     token {}) was still safely holding until {:.3} ms",
                    lock.name(),
                    i.cid,
                    i.mode.name(),
                    i.token,
                    ms(i.start),
                    prev.cid,
                    prev.mode.name(),
                    prev.token,
                    ms(prev.end)
                ),
            ));
        }
        active.push(i);
    }
}

/// The most safely-held intervals on `lock` at one instant (an interval
/// that ends when another starts does not overlap it).
pub fn most_at_once(lock: LockId, intervals: &[Interval]) -> usize {
    let mut events: Vec<(u64, i64)> = intervals
        .iter()
        .filter(|i| i.mode.lock() == lock)
        .flat_map(|i| [(i.start, 1), (i.end.saturating_add(1), -1)])
        .collect();
    events.sort_by_key(|&(t, step)| (t, step));
    let (mut now, mut most) = (0i64, 0i64);
    for (_, step) in events {
        now += step;
        most = most.max(now);
    }
    usize::try_from(most).unwrap_or(0)
}

/// Property 1, the other half: no grant on a node that a third party
/// deleted while it waited. Every grant announces itself with its first
/// write, which carries its token, the node's czxid. Returns how many.
pub fn check_deleted_waiters(lock: LockId, record: &Record, out: &mut Vec<Violation>) -> usize {
    let before = out.len();
    for (f, d) in record.faults.iter().filter_map(|f| f.deleted.as_ref().map(|d| (f, d))) {
        if d.lock != lock || d.role != Role::Waiter {
            continue;
        }
        for w in record.writes.iter().filter(|w| w.enter && w.mode.lock() == lock && w.token == d.czxid) {
            out.push(Violation::new(
                1,
                lock,
                (f.start, w.grant_start.max(f.start)),
                vec![w.token],
                format!(
                    "{}: contender {} ({}) was granted the lock at {:.3} ms on node {} (token {}), which a third \
                     party had deleted at {:.3} ms while it waited",
                    lock.name(),
                    w.cid,
                    w.mode.name(),
                    ms(w.grant_start),
                    d.name,
                    d.czxid,
                    ms(f.start)
                ),
            ));
        }
    }
    out.len() - before
}

/// Property 2: the fencing tokens protect the resource, on `lock`.
///
/// - in the order grants started, an excluding grant's token is larger than
///   every earlier grant's, a shared grant's larger than every earlier
///   excluding grant's (one violation per grant out of order);
/// - no write is accepted once a later conflicting grant has announced
///   itself to the resource (a stale write), and no write is rejected
///   unless one has (a fresh write refused).
pub fn check_fencing(lock: LockId, writes: &[Write], out: &mut Vec<Violation>) {
    let mut grants: Vec<&Write> = writes.iter().filter(|w| w.enter && w.mode.lock() == lock).collect();
    grants.sort_by_key(|w| (w.grant_start, w.token));
    // The earlier grant with the largest token: of any mode, of an excluding one.
    let mut max_any: Option<&Write> = None;
    let mut max_excl: Option<&Write> = None;
    for g in grants {
        let bound = if g.mode.excludes() { max_any } else { max_excl };
        if let Some(b) = bound.filter(|b| b.token >= g.token) {
            out.push(Violation::new(
                2,
                lock,
                (b.grant_start, g.grant_start),
                vec![b.token, g.token],
                format!(
                    "{}: grant to contender {} ({}) at {:.3} ms has token {}, not larger than token {} of the \
                     earlier grant to contender {} ({}) at {:.3} ms",
                    lock.name(),
                    g.cid,
                    g.mode.name(),
                    ms(g.grant_start),
                    g.token,
                    b.token,
                    b.cid,
                    b.mode.name(),
                    ms(b.grant_start)
                ),
            ));
        }
        if max_any.is_none_or(|m| g.token > m.token) {
            max_any = Some(g);
        }
        if g.mode.excludes() && max_excl.is_none_or(|m| g.token > m.token) {
            max_excl = Some(g);
        }
    }
    // The latest start of an announced grant: of any mode, of an excluding one.
    let mut newest_any: Option<u64> = None;
    let mut newest_excl: Option<u64> = None;
    for w in writes.iter().filter(|w| w.mode.lock() == lock) {
        if w.enter {
            newest_any = newest_any.max(Some(w.grant_start));
            if w.mode.excludes() {
                newest_excl = newest_excl.max(Some(w.grant_start));
            }
        }
        let newest = if w.mode.excludes() { newest_any } else { newest_excl };
        let stale = newest.is_some_and(|n| n > w.grant_start);
        if stale && w.accepted {
            out.push(Violation::new(
                2,
                lock,
                (w.grant_start, w.arrival),
                vec![w.token],
                format!(
                    "{}: stale write accepted: contender {} ({}, token {}, granted at {:.3} ms) wrote at {:.3} ms \
                     after a later conflicting grant had written",
                    lock.name(),
                    w.cid,
                    w.mode.name(),
                    w.token,
                    ms(w.grant_start),
                    ms(w.arrival)
                ),
            ));
        }
        if !stale && !w.accepted {
            out.push(Violation::new(
                2,
                lock,
                (w.grant_start, w.arrival),
                vec![w.token],
                format!(
                    "{}: write of the newest grant rejected: contender {} ({}, token {}) at {:.3} ms",
                    lock.name(),
                    w.cid,
                    w.mode.name(),
                    w.token,
                    ms(w.arrival)
                ),
            ));
        }
    }
}

/// Whether `process` was paused at any time in `[from, to]`.
fn paused_during(faults: &[Fault], process: Option<usize>, from: u64, to: u64) -> bool {
    faults.iter().any(|f| f.paused_process.is_some() && f.paused_process == process && f.start <= to && f.end >= from)
}

/// The first grant on `lock` that starts after `i` started and conflicts
/// with it (not `i` itself): (start, cid).
///
/// On a lock held by up to `permits` (a semaphore), a grant "conflicts"
/// when, with `i` still held, it makes more holders than permits: at least
/// `permits - 1` other intervals of `intervals` are safely held when it
/// starts.
fn next_conflicting(
    starts: &[(u64, u32, u64, Mode)],
    intervals: &[&Interval],
    permits: Option<usize>,
    i: &Interval,
) -> Option<(u64, u32)> {
    let over = |s: u64, c: u32, t: u64| match permits {
        None => false,
        Some(n) => {
            let others = intervals
                .iter()
                .filter(|o| !((o.cid == i.cid && o.token == i.token) || (o.cid == c && o.token == t)))
                .filter(|o| o.start <= s && o.end >= s)
                .count();
            others + 1 >= n
        },
    };
    starts
        .iter()
        .find(|&&(s, c, t, m)| s > i.start && !(c == i.cid && t == i.token) && (m.conflicts(i.mode) || over(s, c, t)))
        .map(|&(s, c, _, _)| (s, c))
}

/// Property 3, on `lock`: every loss reaches its holder before a
/// conflicting grant starts. A holder whose process was stopped (SIGSTOP)
/// cannot learn anything while stopped, and a holder whose node a third
/// party deleted cannot learn of it before the next in line does; those
/// losses are counted apart (properties 1 and 2 still cover the first
/// kind: its `check()` fails on waking, and its writes are rejected by
/// their token; property 2 covers the second).
pub fn check_loss_reported(lock: LockId, record: &Record, report: &mut Report) {
    let deleted = deleted_holders(&record.faults, lock);
    let on_lock: Vec<&Interval> = record.intervals.iter().filter(|i| i.mode.lock() == lock).collect();
    let mut starts: Vec<(u64, u32, u64, Mode)> = on_lock.iter().map(|i| (i.start, i.cid, i.token, i.mode)).collect();
    starts.sort();
    for i in record.intervals.iter().filter(|i| i.lost && i.mode.lock() == lock) {
        report.losses += 1;
        let Some((next_start, next_cid)) = next_conflicting(&starts, &on_lock, lock.permits(), i) else { continue };
        let noticed = i.noticed.unwrap_or(u64::MAX);
        if noticed < next_start || freed_by_delete(&deleted, i.token, next_start) {
            continue;
        }
        if paused_during(&record.faults, record.process_of.get(&i.cid).copied(), i.end, next_start) {
            report.paused_losses += 1;
            continue;
        }
        report.violations.push(Violation::new(
            3,
            lock,
            (i.end, next_start),
            vec![i.token],
            format!(
                "{}: contender {} ({}, token {}) learned of its loss at {} but contender {next_cid} was granted the \
                 lock at {:.3} ms",
                lock.name(),
                i.cid,
                i.mode.name(),
                i.token,
                i.noticed.map_or("no time at all".to_owned(), |n| format!("{:.3} ms", ms(n))),
                ms(next_start)
            ),
        ));
    }
}

/// What became of every holder on `lock` whose node a third party deleted.
pub fn holder_deletes(lock: LockId, record: &Record) -> Vec<HolderDelete> {
    let on_lock: Vec<&Interval> = record.intervals.iter().filter(|i| i.mode.lock() == lock).collect();
    let mut starts: Vec<(u64, u32, u64, Mode)> = on_lock.iter().map(|i| (i.start, i.cid, i.token, i.mode)).collect();
    starts.sort();
    let mut out = Vec::new();
    for (f, d) in record.faults.iter().filter_map(|f| f.deleted.as_ref().map(|d| (f, d))) {
        if d.lock != lock || d.role != Role::Holder {
            continue;
        }
        let at = f.start;
        let held = record.intervals.iter().find(|i| i.mode.lock() == lock && i.token == d.czxid);
        let next = held
            .and_then(|i| next_conflicting(&starts, &on_lock, lock.permits(), i))
            .filter(|&(s, _)| s >= at)
            .map(|(s, _)| s);
        let noticed = held.and_then(|i| i.noticed).filter(|&n| n >= at);
        let overlapped = held.is_some_and(|i| {
            starts
                .iter()
                .any(|&(s, c, t, m)| s >= at && s <= i.end && !(c == i.cid && t == i.token) && m.conflicts(i.mode))
        });
        out.push(HolderDelete {
            lock,
            token: d.czxid,
            noticed_after: noticed.map(|n| n - at),
            next_grant_after: next.map(|s| s - at),
            noticed_after_next_grant: noticed.zip(next).is_some_and(|(n, s)| n >= s),
            overlapped,
        });
    }
    out
}

/// Property 4: no lock nodes remain once every session is closed. A
/// leftover has no time: its span is the whole run (`run`).
pub fn check_leftovers(leftover: &[(LockId, String)], run: (u64, u64), out: &mut Vec<Violation>) {
    for (lock, node) in leftover {
        out.push(Violation::new(
            4,
            *lock,
            run,
            Vec::new(),
            format!("{}: lock node {node} remained after every session closed", lock.name()),
        ));
    }
}

/// Property 5: every lock is granted again after every fault, within
/// `bound` nanoseconds of the fault's end.
pub fn check_progress(record: &Record, bound: u64, report: &mut Report) {
    let starts: BTreeMap<LockId, Vec<u64>> = record
        .locks
        .iter()
        .map(|&lock| {
            let mut s: Vec<u64> = record.intervals.iter().filter(|i| i.mode.lock() == lock).map(|i| i.start).collect();
            s.extend(record.writes.iter().filter(|w| w.enter && w.mode.lock() == lock).map(|w| w.grant_start));
            s.sort_unstable();
            (lock, s)
        })
        .collect();
    for f in &record.faults {
        let mut slowest = Some(0);
        for (&lock, s) in &starts {
            let next = s.iter().find(|&&s| s > f.end).map(|s| s - f.end).filter(|&d| d <= bound);
            if next.is_none() {
                report.violations.push(Violation::new(
                    5,
                    lock,
                    (f.end, f.end.saturating_add(bound)),
                    Vec::new(),
                    format!(
                        "{}: no grant within {:.1} s after the {} fault that ended at {:.3} ms",
                        lock.name(),
                        bound as f64 / 1e9,
                        f.kind.name(),
                        ms(f.end)
                    ),
                ));
            }
            slowest = slowest.zip(next).map(|(a, b)| a.max(b));
        }
        report.recoveries.push(Recovery { kind: f.kind, next_grant_after: slowest });
    }
}

/// Attributes each violation to the fault kinds in effect during it: a
/// fault is in effect from its start to `settle` nanoseconds after its
/// end; a third-party delete also owns every violation that involves its
/// node's token.
pub fn attribute(violations: &mut [Violation], faults: &[Fault], settle: u64) {
    for v in violations {
        let mut kinds: Vec<FaultKind> = faults
            .iter()
            .filter(|f| {
                let in_time = f.start <= v.span.1 && f.end.saturating_add(settle) >= v.span.0;
                let its_token = f.deleted.as_ref().is_some_and(|d| d.lock == v.lock && v.tokens.contains(&d.czxid));
                in_time || its_token
            })
            .map(|f| f.kind)
            .collect();
        kinds.sort();
        kinds.dedup();
        v.faults = kinds;
    }
}

/// Evaluates every property over `record`, per lock. `settle`: how long
/// after its end a fault still counts as in effect when violations are
/// attributed to fault classes.
pub fn analyse(record: &Record, progress_bound_ns: u64, settle_ns: u64) -> Report {
    let mut report = Report::default();
    let first = record.writes.first().map_or(0, |w| w.arrival);
    let last =
        record.writes.iter().map(|w| w.arrival).chain(record.faults.iter().map(|f| f.end)).max().unwrap_or(first);
    for &lock in &record.locks {
        let deleted = deleted_holders(&record.faults, lock);
        check_overlap(lock, &record.intervals, &deleted, &mut report.violations);
        report.deleted_waiter_grants += check_deleted_waiters(lock, record, &mut report.violations);
        check_fencing(lock, &record.writes, &mut report.violations);
        check_loss_reported(lock, record, &mut report);
        report.holder_deletes.extend(holder_deletes(lock, record));
        report.gaps.extend(longest_gaps(record, lock, 3));
    }
    check_leftovers(&record.leftover_nodes, (first, last), &mut report.violations);
    check_progress(record, progress_bound_ns, &mut report);
    attribute(&mut report.violations, &record.faults, settle_ns);
    report.stale_rejected = record.writes.iter().filter(|w| !w.accepted).count();
    report.violations.sort_by_key(|v| (v.property, v.lock));
    report
}

/// The `q`-quantile (0..=1) of `values` (sorted in place); `None` if empty.
pub fn quantile(values: &mut [u64], q: f64) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    let idx = ((values.len() - 1) as f64 * q).round() as usize;
    values.get(idx.min(values.len() - 1)).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    const X: LockId = LockId::Exclusive;
    const RW: LockId = LockId::Rw;

    fn iv(cid: u32, token: u64, start: u64, end: u64) -> Interval {
        ivm(cid, Mode::Exclusive, token, start, end)
    }

    fn ivm(cid: u32, mode: Mode, token: u64, start: u64, end: u64) -> Interval {
        Interval { cid, mode, token, start, end, noticed: None, lost: false }
    }

    fn w(cid: u32, token: u64, grant_start: u64, arrival: u64, enter: bool, accepted: bool) -> Write {
        wm(cid, Mode::Exclusive, token, grant_start, arrival, enter, accepted)
    }

    fn wm(cid: u32, mode: Mode, token: u64, grant_start: u64, arrival: u64, enter: bool, accepted: bool) -> Write {
        Write { cid, mode, token, grant_start, arrival, enter, accepted }
    }

    fn delete(lock: LockId, mode: Mode, czxid: u64, role: Role, at: u64) -> Fault {
        let deleted = DeletedNode { lock, name: format!("n{czxid}"), mode, czxid, role, reply_lost: false };
        Fault { deleted: Some(deleted), ..Fault::new(FaultKind::ThirdPartyDelete, at, at + 1) }
    }

    fn overlaps(lock: LockId, intervals: &[Interval]) -> Vec<Violation> {
        let mut v = Vec::new();
        check_overlap(lock, intervals, &BTreeMap::new(), &mut v);
        v
    }

    fn fencing(lock: LockId, writes: &[Write]) -> Vec<Violation> {
        let mut v = Vec::new();
        check_fencing(lock, writes, &mut v);
        v
    }

    #[test]
    fn disjoint_intervals_pass_and_overlaps_are_reported() {
        assert!(overlaps(X, &[iv(1, 10, 0, 5), iv(2, 11, 6, 9), iv(1, 12, 10, 20)]).is_empty());
        // The second and third start inside the long first one.
        let v = overlaps(X, &[iv(1, 10, 0, 50), iv(2, 11, 6, 9), iv(3, 12, 20, 30)]);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v.iter().all(|x| x.property == 1 && x.lock == X));
        assert_eq!(overlaps(X, &[iv(1, 10, 0, 5), iv(2, 11, 5, 9)]).len(), 1, "touching ends overlap");
    }

    #[test]
    fn readers_share_and_a_writer_overlaps_nobody() {
        let r = |cid, token, s, e| ivm(cid, Mode::Read, token, s, e);
        let wr = |cid, token, s, e| ivm(cid, Mode::Write, token, s, e);
        assert!(overlaps(RW, &[r(1, 10, 0, 50), r(2, 11, 5, 60), r(3, 12, 20, 30), wr(4, 13, 61, 70)]).is_empty());
        assert_eq!(overlaps(RW, &[r(1, 10, 0, 50), wr(2, 11, 40, 60)]).len(), 1, "writer inside a reader");
        assert_eq!(overlaps(RW, &[wr(1, 10, 0, 50), r(2, 11, 40, 60), r(3, 12, 45, 60)]).len(), 2);
        // Intervals of the other lock do not count.
        assert!(overlaps(X, &[wr(1, 10, 0, 50), wr(2, 11, 40, 60)]).is_empty());
    }

    #[test]
    fn an_overlap_after_a_third_party_deleted_the_holders_node_is_exempt() {
        let deleted: BTreeMap<u64, u64> = [(10, 30)].into();
        let mut v = Vec::new();
        check_overlap(X, &[iv(1, 10, 0, 50), iv(2, 11, 35, 60)], &deleted, &mut v);
        assert!(v.is_empty(), "{v:?}");
        // A grant that started before the delete overlapped a live holder.
        check_overlap(X, &[iv(1, 10, 0, 50), iv(2, 11, 25, 60)], &deleted, &mut v);
        assert_eq!(v.len(), 1, "{v:?}");
    }

    #[test]
    fn a_grant_on_a_waiters_deleted_node_violates_property_1() {
        let record = Record {
            locks: vec![X, RW],
            writes: vec![
                w(1, 10, 100, 101, true, true),
                // Contender 2's node (czxid 11) was deleted at 150 while it waited; it is granted anyway.
                w(2, 11, 200, 201, true, true),
                wm(3, Mode::Read, 21, 300, 301, true, true),
                // A deleted holder's token is not a waiter's.
                w(4, 12, 400, 401, true, true),
            ],
            faults: vec![
                delete(X, Mode::Exclusive, 11, Role::Waiter, 150),
                delete(RW, Mode::Read, 21, Role::Waiter, 250),
                delete(X, Mode::Exclusive, 12, Role::Holder, 450),
            ],
            ..Record::default()
        };
        let report = analyse(&record, 1_000, 0);
        assert_eq!(report.deleted_waiter_grants, 2);
        let p1: Vec<&Violation> = report.violations.iter().filter(|v| v.property == 1).collect();
        assert_eq!(p1.len(), 2, "{p1:?}");
        assert_eq!((p1[0].lock, p1[1].lock), (X, RW));
        assert!(p1[0].detail.contains("deleted"), "{}", p1[0].detail);
        assert_eq!(p1[0].faults, vec![FaultKind::ThirdPartyDelete]);
        assert_eq!(report.count_on(1, X), 1);
    }

    #[test]
    fn fencing_accepts_the_current_grant_and_rejects_stale_ones() {
        let writes = [
            w(1, 10, 100, 101, true, true),
            w(1, 10, 100, 150, false, true),
            w(2, 11, 200, 201, true, true),
            // Contender 1 was paused and writes late: rejected, as it must be.
            w(1, 10, 100, 250, false, false),
            w(2, 11, 200, 260, false, true),
        ];
        assert!(fencing(X, &writes).is_empty());
    }

    #[test]
    fn fencing_reports_a_stale_write_accepted_and_a_fresh_one_rejected() {
        let v = fencing(
            X,
            &[w(1, 10, 100, 101, true, true), w(2, 11, 200, 201, true, true), w(1, 10, 100, 250, false, true)],
        );
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("stale write accepted"));
        let v = fencing(X, &[w(1, 10, 100, 101, true, true), w(1, 10, 100, 120, false, false)]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("rejected"));
    }

    #[test]
    fn fencing_reports_tokens_that_do_not_grow_with_the_grants() {
        let v = fencing(X, &[w(1, 12, 100, 101, true, true), w(2, 11, 200, 201, true, false)]);
        assert!(v.iter().any(|x| x.detail.contains("not larger")), "{v:?}");
    }

    #[test]
    fn fencing_on_a_read_write_lock_orders_writers_against_everyone_but_not_readers() {
        let (r, wr) = (Mode::Read, Mode::Write);
        // Readers 11 and 10 share (in either order, each writing after the
        // other), then writer 12, then reader 13; late writes of reader 10
        // and writer 12 are refused.
        let writes = [
            wm(1, r, 11, 100, 101, true, true),
            wm(2, r, 10, 105, 106, true, true),
            wm(1, r, 11, 100, 110, false, true),
            wm(2, r, 10, 105, 111, false, true),
            wm(3, wr, 12, 200, 201, true, true),
            wm(2, r, 10, 105, 210, false, false),
            wm(4, r, 13, 300, 301, true, true),
            wm(3, wr, 12, 200, 310, false, false),
        ];
        assert!(fencing(RW, &writes).is_empty(), "{:?}", fencing(RW, &writes));
        // A writer granted after a reader with a larger token, and a reader
        // granted after a writer with a smaller one: out of order.
        let v = fencing(RW, &[wm(1, r, 11, 100, 101, true, true), wm(2, wr, 10, 200, 201, true, false)]);
        assert!(v.iter().any(|x| x.detail.contains("not larger")), "{v:?}");
        let v = fencing(RW, &[wm(1, wr, 11, 100, 101, true, true), wm(2, r, 10, 200, 201, true, false)]);
        assert!(v.iter().any(|x| x.detail.contains("not larger")), "{v:?}");
        // A stale writer's write accepted after a later reader wrote.
        let v = fencing(
            RW,
            &[
                wm(1, wr, 10, 100, 101, true, true),
                wm(2, r, 11, 200, 201, true, true),
                wm(1, wr, 10, 100, 250, false, true),
            ],
        );
        assert!(v.iter().any(|x| x.detail.contains("stale write accepted")), "{v:?}");
    }

    #[test]
    fn a_loss_must_be_noticed_before_the_next_grant_unless_the_process_was_paused() {
        let mut lost = iv(1, 10, 0, 100);
        lost.lost = true;
        lost.noticed = Some(150);
        let next = iv(2, 11, 300, 400);
        let mut record = Record { intervals: vec![lost.clone(), next.clone()], ..Record::default() };
        record.process_of.insert(1, 0);
        let mut report = Report::default();
        check_loss_reported(X, &record, &mut report);
        assert_eq!((report.count(3), report.losses), (0, 1));

        record.intervals[0].noticed = Some(350);
        let mut report = Report::default();
        check_loss_reported(X, &record, &mut report);
        assert_eq!(report.count(3), 1, "{:?}", report.violations);

        record.intervals[0].noticed = None;
        record.faults.push(Fault { paused_process: Some(0), ..Fault::new(FaultKind::PauseHolder, 120, 500) });
        let mut report = Report::default();
        check_loss_reported(X, &record, &mut report);
        assert_eq!((report.count(3), report.paused_losses), (0, 1));
    }

    #[test]
    fn leases_overlap_up_to_the_permits_and_a_lost_one_must_be_noticed_before_one_too_many() {
        const S: LockId = LockId::Semaphore;
        let l = Mode::Lease;
        // Two at a time, in any pattern: fine; a third at once: reported.
        assert!(overlaps(S, &[ivm(1, l, 10, 0, 50), ivm(2, l, 11, 10, 60), ivm(3, l, 12, 55, 90)]).is_empty());
        let three = [ivm(1, l, 10, 0, 50), ivm(2, l, 11, 10, 60), ivm(3, l, 12, 40, 90)];
        assert_eq!(most_at_once(S, &three), 3);
        assert_eq!(most_at_once(S, &[ivm(1, l, 10, 0, 50), ivm(2, l, 11, 50, 60)]), 2, "the same instant");
        assert_eq!(most_at_once(S, &[ivm(1, l, 10, 0, 50), ivm(2, l, 11, 51, 60)]), 1);
        let v = overlaps(S, &three);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("2 others (of 2 permits)"), "{v:?}");
        // A third party deleted holder 1's lease before 3 was granted: no
        // violation (as for locks).
        let deleted = BTreeMap::from([(10, 30)]);
        let mut v = Vec::new();
        check_overlap(S, &[ivm(1, l, 10, 0, 50), ivm(2, l, 11, 10, 60), ivm(3, l, 12, 40, 90)], &deleted, &mut v);
        assert!(v.is_empty(), "{v:?}");

        // Lease 10 is lost at 100 and noticed at 350. A grant at 300 while
        // nobody else holds is not one too many; one at 300 while lease 11
        // holds is.
        let mut lost = ivm(1, l, 10, 0, 100);
        lost.lost = true;
        lost.noticed = Some(350);
        let alone = Record { intervals: vec![lost.clone(), ivm(3, l, 12, 300, 400)], ..Record::default() };
        let mut report = Report::default();
        check_loss_reported(S, &alone, &mut report);
        assert_eq!(report.count(3), 0, "{:?}", report.violations);
        let crowded =
            Record { intervals: vec![lost, ivm(2, l, 11, 50, 500), ivm(3, l, 12, 300, 400)], ..Record::default() };
        let mut report = Report::default();
        check_loss_reported(S, &crowded, &mut report);
        assert_eq!(report.count(3), 1, "{:?}", report.violations);
    }

    #[test]
    fn a_reader_losing_its_lock_need_only_notice_before_the_next_writer() {
        let mut lost = ivm(1, Mode::Read, 10, 0, 100);
        lost.lost = true;
        lost.noticed = Some(350);
        let record = Record {
            intervals: vec![lost, ivm(2, Mode::Read, 11, 300, 400), ivm(3, Mode::Write, 12, 500, 600)],
            ..Record::default()
        };
        let mut report = Report::default();
        check_loss_reported(RW, &record, &mut report);
        assert_eq!(report.count(3), 0, "{:?}", report.violations);
    }

    #[test]
    fn a_holder_whose_node_a_third_party_deleted_is_reported_apart() {
        let mut held = iv(1, 10, 0, 120);
        held.lost = true;
        held.noticed = Some(130);
        let record = Record {
            locks: vec![X],
            intervals: vec![held, iv(2, 11, 110, 200)],
            writes: vec![w(1, 10, 0, 1, true, true), w(2, 11, 110, 111, true, true), w(1, 10, 0, 115, false, false)],
            faults: vec![delete(X, Mode::Exclusive, 10, Role::Holder, 100)],
            ..Record::default()
        };
        let report = analyse(&record, 1_000, 0);
        assert!(report.violations.is_empty(), "{:?}", report.violations);
        assert_eq!(
            report.holder_deletes,
            vec![HolderDelete {
                lock: X,
                token: 10,
                noticed_after: Some(30),
                next_grant_after: Some(10),
                noticed_after_next_grant: true,
                overlapped: true
            }]
        );
    }

    #[test]
    fn progress_needs_a_grant_on_every_lock_after_every_fault_within_the_bound() {
        let record = Record {
            locks: vec![X, RW],
            intervals: vec![iv(1, 10, 0, 10), iv(2, 11, 1_000, 1_010), ivm(3, Mode::Read, 12, 600, 700)],
            faults: vec![Fault::new(FaultKind::KillLeader, 20, 500), Fault::new(FaultKind::FreezeMember, 1_100, 1_200)],
            ..Record::default()
        };
        let mut report = Report::default();
        check_progress(&record, 600, &mut report);
        assert_eq!(report.recoveries[0].next_grant_after, Some(500));
        assert_eq!(report.recoveries[1].next_grant_after, None);
        assert_eq!((report.count_on(5, X), report.count_on(5, RW)), (1, 1));
        let mut report = Report::default();
        check_progress(&record, 400, &mut report);
        assert_eq!(report.count(5), 3, "a grant later than the bound does not count");
    }

    #[test]
    fn violations_are_attributed_to_the_faults_in_effect_or_to_none() {
        let faults = [Fault::new(FaultKind::KillLeader, 100, 200), delete(X, Mode::Exclusive, 42, Role::Waiter, 5_000)];
        let mut v = vec![
            Violation::new(1, X, (250, 260), vec![7], String::new()),
            Violation::new(2, X, (900, 950), vec![42], String::new()),
            Violation::new(3, X, (900, 950), vec![8], String::new()),
        ];
        attribute(&mut v, &faults, 100);
        assert_eq!(v[0].faults, vec![FaultKind::KillLeader], "within the settle time");
        assert_eq!(v[1].faults, vec![FaultKind::ThirdPartyDelete], "its token");
        assert!(v[2].faults.is_empty());
        let report = Report { violations: v, ..Report::default() };
        assert_eq!((report.count_for(3, None), report.count_for(1, Some(FaultKind::KillLeader))), (1, 1));
    }

    #[test]
    fn the_longest_gaps_come_first_with_the_faults_during_them() {
        let record = Record {
            writes: [0u64, 10, 100, 130].iter().map(|&t| w(1, t, t, t, true, true)).collect(),
            faults: vec![Fault::new(FaultKind::RestartEnsemble, 20, 40)],
            ..Record::default()
        };
        let gaps = longest_gaps(&record, X, 2);
        assert_eq!(gaps.len(), 2);
        assert_eq!((gaps[0].from, gaps[0].to, gaps[0].faults.clone()), (10, 100, vec![FaultKind::RestartEnsemble]));
        assert_eq!((gaps[1].from, gaps[1].to), (100, 130));
        assert!(gaps[1].faults.is_empty());
        assert!(longest_gaps(&record, RW, 2).is_empty());
    }

    #[test]
    fn leftovers_are_violations_and_quantiles_pick_from_sorted_values() {
        let mut v = Vec::new();
        check_leftovers(&[(RW, "_c_x-__READ__0000000001".into())], (0, 10), &mut v);
        assert_eq!((v[0].property, v[0].lock), (4, RW));
        assert_eq!(quantile(&mut [5, 1, 3, 2, 4], 0.5), Some(3));
        assert_eq!(quantile(&mut [5, 1, 3], 1.0), Some(5));
        assert_eq!(quantile(&mut [], 0.5), None);
    }
}

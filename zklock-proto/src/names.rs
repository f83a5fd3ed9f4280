//! Lock-node names and the ordering rule (protocol doc sections 2 and 3).
//!
//! Pure functions over child-name lists: which names are lock nodes, what
//! sequence and kind they have, and for a contender whether it holds the lock
//! or which single node it must watch. No ZooKeeper access here.

use crate::driver::{self, Driver};
// The kinds of lock node and a parsed lock node are the drivers' terms;
// named here too, where names are parsed into them.
pub use crate::driver::{LockNode, NodeKind};

crate::vocabulary! {
    /// The lock modes zklock creates nodes for.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum LockMode {
        /// An exclusive lock (Curator `InterProcessMutex`): nodes
        /// `_c_<uuid>-lock-<seq>`.
        Exclusive = 0, "EXCLUSIVE";
        /// The read (shared) side of a read/write lock: nodes
        /// `_c_<uuid>-__READ__<seq>`. Readers share it; writers exclude them.
        Read = 1, "READ";
        /// The write side of a read/write lock: nodes
        /// `_c_<uuid>-__WRIT__<seq>`. It excludes readers and writers.
        Write = 2, "WRITE";
        /// A participant of a leader election (Curator `LeaderLatch`):
        /// nodes `_c_<uuid>-latch-<seq>` holding the participant's id; the
        /// first in the queue is the leader.
        Leader = 3, "LEADER";
        /// A lease of a counting semaphore (Curator
        /// `InterProcessSemaphoreV2`): nodes `<path>/leases/_c_<uuid>-lease-<seq>`,
        /// taken while holding the mutex `<path>/locks`; held while at most
        /// the semaphore's permits lease nodes exist.
        Lease = 4, "LEASE";
    }
}

impl LockMode {
    /// The driver of this kind of lock: its node names and queue rules.
    pub fn driver(self) -> &'static dyn Driver {
        match self {
            LockMode::Exclusive => driver::EXCLUSIVE,
            LockMode::Read => driver::READ,
            LockMode::Write => driver::WRITE,
            LockMode::Leader => driver::LEADER,
            LockMode::Lease => driver::LEASE,
        }
    }

    /// The kind of the nodes this mode creates.
    pub fn node_kind(self) -> NodeKind {
        self.driver().node_kind()
    }
}

/// The protected prefix `_c_<uuid>-` that identifies one acquire attempt.
pub fn protected_prefix(uuid: &uuid::Uuid) -> String {
    format!("_c_{}-", uuid.hyphenated())
}

/// The name (relative to the lock path, without sequence) that a contender
/// of `mode` passes to a sequential create: `_c_<uuid>-lock-` etc.
pub fn node_name_prefix(mode: LockMode, uuid: &uuid::Uuid) -> String {
    format!("{}{}", protected_prefix(uuid), mode.driver().token())
}

/// Tokens after which a sequence may be negative (`-` and 9 or 10 digits).
const KNOWN_TOKENS: [&str; 7] = ["__READ__", "__WRIT__", "__rlock__", "__lock__", "lock-", "latch-", "lease-"];

/// Parses a sequence written by the server (`%010d`): exactly ten digits, or
/// a minus sign and nine or ten digits once the parent's cversion wrapped.
fn parse_sequence(s: &str) -> Option<i64> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let ok_len = if s.starts_with('-') { digits.len() == 9 || digits.len() == 10 } else { digits.len() == 10 };
    if !ok_len || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value: i64 = s.parse().ok()?;
    (i64::from(i32::MIN)..=i64::from(i32::MAX)).contains(&value).then_some(value)
}

/// Classifies one child name. `None` for a child without a sequence: it
/// never blocks and is never an error.
pub fn parse_child(name: &str) -> Option<LockNode> {
    let (sequence, kind) = parse_parts(name)?;
    Some(LockNode { name: name.to_owned(), sequence, kind })
}

/// [`parse_child`] without the copy of the name: its sequence and kind.
fn parse_parts(name: &str) -> Option<(i64, NodeKind)> {
    // A known token right before the sequence the server appended (ten
    // digits, or a minus sign and nine or ten): the tail holds no letters,
    // so this is the token's last occurrence. Checked at the two places the
    // tail can start, without searching the name (a queue of a thousand is
    // parsed at every look: a profile of `make bench`'s draining queue of
    // 1,000 found a string search here the client's hottest code).
    let tails = [10, 11].map(|n| name.len().checked_sub(n).filter(|&at| name.is_char_boundary(at)));
    for token in KNOWN_TOKENS {
        for at in tails.into_iter().flatten() {
            // The token's last byte first: most tokens fail on it, without
            // a call to compare (a queue of 10,000 is parsed by each of its
            // waiters of one client).
            if at > 0 && name.as_bytes()[at - 1] == token.as_bytes()[token.len() - 1] && name[..at].ends_with(token) {
                if let Some(seq) = parse_sequence(&name[at..]) {
                    let kind =
                        if token == "__READ__" || token == "__rlock__" { NodeKind::Reader } else { NodeKind::Writer };
                    return Some((seq, kind));
                }
            }
        }
    }
    Some((parse_unknown(name)?, NodeKind::Writer))
}

/// The sequence of a child no known token names: unknown writers
/// (ZooKeeper's recipe `x-<sid>-<seq>`, others): the trailing ten digits,
/// or `--` and a negative sequence.
fn parse_unknown(name: &str) -> Option<i64> {
    let bytes = name.as_bytes();
    let digits = bytes.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    if digits < 9 {
        return None;
    }
    let tail = &name[name.len() - digits.min(10)..];
    let before = &name[..name.len() - tail.len()];
    if before.ends_with("--") {
        if let Some(seq) = parse_sequence(&name[before.len() - 1..]) {
            return Some(seq);
        }
    }
    if digits >= 10 {
        return parse_sequence(tail);
    }
    None
}

/// All lock nodes among `children`, in queue order. Unsequenced children are
/// left out.
pub fn queue(children: &[String]) -> Vec<LockNode> {
    let mut nodes: Vec<LockNode> = children.iter().filter_map(|c| parse_child(c)).collect();
    nodes.sort_by(LockNode::queue_cmp);
    nodes
}

/// What a contender should do, decided from the children of the lock path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nothing that blocks us sorts before our node: we hold the lock.
    Held,
    /// Blocked: watch this one child (the blocker right before us).
    WaitOn(String),
    /// Blocked by as many nodes as there are permits, any of whose
    /// deletion may let us hold (a semaphore's leases): watch the children.
    WaitOnChildren,
    /// Our node is not among the children (deleted, or its session expired).
    Gone,
}

/// Decides for our node `ours` (a child name) of `mode` among `children`.
///
/// Writers (exclusive and write modes) are blocked by every lock node before
/// them and wait on the last of those; readers are blocked only by writers
/// with a smaller sequence and wait on the greatest of those.
pub fn decide(mode: LockMode, children: &[String], ours: &str) -> Decision {
    decide_with_permits(mode, 1, children, ours)
}

/// [`decide`] for a kind that `permits` contenders hold at once: held while
/// fewer than `permits` nodes block us. A lock (one permit) waits on the
/// last of its blockers; a kind whose driver says so (a semaphore) waits
/// on the children, as any of its blockers may be the one to go.
pub fn decide_with_permits(mode: LockMode, permits: usize, children: &[String], ours: &str) -> Decision {
    let Some(blockers) = blockers(mode, children, ours) else { return Decision::Gone };
    if blockers.count < permits {
        return Decision::Held;
    }
    if mode.driver().waits_on_children() {
        return Decision::WaitOnChildren;
    }
    match blockers.last {
        None => Decision::Held,
        Some(n) => Decision::WaitOn(n.name),
    }
}

/// What blocks a node: how many nodes, and the last of them in queue order.
struct Blockers {
    count: usize,
    last: Option<LockNode>,
}

/// The nodes that block our node `ours` of `mode` among `children`; `None`
/// if our node is not among them. Each waiter reads a list of up to the
/// whole queue, so each name is looked at in place: only the last blocker
/// so far is copied, not every node (10,000 waiters on one lock: 10^8
/// copies of names, the client's hottest code).
fn blockers(mode: LockMode, children: &[String], ours: &str) -> Option<Blockers> {
    let me = children.iter().find(|c| c.as_str() == ours).and_then(|c| parse_child(c))?;
    let driver = mode.driver();
    let mut found = Blockers { count: 0, last: None };
    // One node, its name written over for each child.
    let mut node = LockNode { name: String::new(), sequence: 0, kind: NodeKind::Writer };
    for c in children.iter().filter(|c| c.as_str() != ours) {
        let Some((sequence, kind)) = parse_parts(c) else { continue };
        node.name.clear();
        node.name.push_str(c);
        (node.sequence, node.kind) = (sequence, kind);
        if !driver.blocks(&me, &node) {
            continue;
        }
        found.count += 1;
        if found.last.as_ref().is_none_or(|l| node.queue_cmp(l) == std::cmp::Ordering::Greater) {
            found.last = Some(node.clone());
        }
    }
    Some(found)
}

/// All lock nodes among `children` in queue order, each with whether it
/// holds the lock (what [`decide`] says of it, in its own mode: readers for
/// read nodes, writers for the others), in one pass: a writer holds when it
/// is first in the queue, a reader when no writer with a smaller sequence
/// is queued.
pub fn queue_with_holders(children: &[String]) -> Vec<(LockNode, bool)> {
    let mut first_writer: Option<i64> = None;
    queue(children)
        .into_iter()
        .enumerate()
        .map(|(i, node)| {
            let holds = match node.kind {
                NodeKind::Writer => i == 0,
                NodeKind::Reader => first_writer.is_none_or(|s| s >= node.sequence),
            };
            if node.kind == NodeKind::Writer && first_writer.is_none() {
                first_writer = Some(node.sequence);
            }
            (node, holds)
        })
        .collect()
}

/// Whether, once the node we wait on is deleted, we hold the lock without
/// listing the children again: the node was the only one blocking us, and
/// the driver of `mode` says no new node can sort before ours then (see
/// `Driver::held_once_sole_blocker_gone`: a writer's sole blocker must not
/// be a `__WRIT__` node, which a downgrade can follow with a read node of
/// its sequence; a reader is never blocked by a read node).
pub fn held_once_gone(mode: LockMode, children: &[String], ours: &str) -> bool {
    match blockers(mode, children, ours) {
        Some(Blockers { count: 1, last: Some(only) }) => mode.driver().held_once_sole_blocker_gone(&only),
        _ => false,
    }
}

/// Our own nodes among `children`: names that start with `prefix` (the
/// protected prefix of one attempt), in queue order.
pub fn own_nodes(children: &[String], prefix: &str) -> Vec<LockNode> {
    queue(children).into_iter().filter(|n| n.name.starts_with(prefix)).collect()
}

#[cfg(test)]
mod tests {
    /// `parse_child`'s token rule as first written (the last occurrence of
    /// each token, then the sequence after it): the fast version must say
    /// the same of every name.
    fn parse_child_by_search(name: &str) -> Option<(i64, NodeKind)> {
        for token in KNOWN_TOKENS {
            if let Some(at) = name.rfind(token) {
                if let Some(seq) = parse_sequence(&name[at + token.len()..]) {
                    let kind =
                        if token == "__READ__" || token == "__rlock__" { NodeKind::Reader } else { NodeKind::Writer };
                    return Some((seq, kind));
                }
            }
        }
        None
    }

    #[test]
    fn the_token_rule_finds_what_a_search_finds() {
        let parts = [
            "_c_",
            "x",
            "é",
            "-",
            "--",
            "lock-",
            "__READ__",
            "__WRIT__",
            "__rlock__",
            "__lock__",
            "latch-",
            "lease-",
            "0",
            "000000001",
            "0000000001",
            "2147483647",
            "-000000001",
            "99999999999",
        ];
        // Every name of up to four parts (18^4 names), deterministic.
        let n = parts.len();
        for k in 0..n * n * n * n {
            let name: String = [k % n, k / n % n, k / (n * n) % n, k / (n * n * n)].iter().map(|&i| parts[i]).collect();
            let searched = parse_child_by_search(&name).or_else(|| Some((parse_unknown(&name)?, NodeKind::Writer)));
            assert_eq!(parse_child(&name).map(|c| (c.sequence, c.kind)), searched, "{name:?}");
        }
    }

    use super::*;

    fn v(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    const U1: &str = "_c_0f8e0f4b-6f7a-4f00-9a6e-1b2c3d4e5f60-";
    const U2: &str = "_c_1a2b3c4d-0000-4000-8000-000000000002-";

    #[test]
    fn held_once_the_sole_blocker_goes_unless_it_could_downgrade() {
        let children =
            v(&[&format!("{U1}lock-0000000001"), &format!("{U2}lock-0000000002"), &format!("{U1}lock-0000000003")]);
        assert!(!held_once_gone(LockMode::Exclusive, &children, &children[0]), "not waiting at all");
        assert!(held_once_gone(LockMode::Exclusive, &children, &children[1]));
        assert!(!held_once_gone(LockMode::Exclusive, &children, &children[2]), "two nodes before it");
        assert!(!held_once_gone(LockMode::Exclusive, &children, "absent-0000000009"));
        let rw = v(&[
            &format!("{U1}__WRIT__0000000001"),
            &format!("{U2}__WRIT__0000000002"),
            &format!("{U2}__READ__0000000003"),
        ]);
        assert!(!held_once_gone(LockMode::Write, &rw, &rw[1]), "the writer before it may downgrade to a reader");
        assert!(!held_once_gone(LockMode::Read, &rw, &rw[2]), "two writers before it");
        let rw = v(&[
            &format!("{U1}__READ__0000000001"),
            &format!("{U1}__WRIT__0000000002"),
            &format!("{U2}__READ__0000000003"),
        ]);
        assert!(held_once_gone(LockMode::Read, &rw, &rw[2]), "a reader waits only for the writer");
        assert!(held_once_gone(LockMode::Write, &rw, &rw[1]), "a writer behind a single reader");
    }

    #[test]
    fn names_have_curators_format() {
        let u = uuid::Uuid::parse_str("0f8e0f4b-6f7a-4f00-9a6e-1b2c3d4e5f60").expect("valid uuid literal");
        assert_eq!(node_name_prefix(LockMode::Exclusive, &u), format!("{U1}lock-"));
        assert_eq!(node_name_prefix(LockMode::Read, &u), format!("{U1}__READ__"));
        assert_eq!(node_name_prefix(LockMode::Write, &u), format!("{U1}__WRIT__"));
        assert_eq!(protected_prefix(&u).len(), 3 + 36 + 1);
    }

    #[test]
    fn parses_every_known_peer_format() {
        let cases = [
            (format!("{U1}lock-0000000007"), 7, NodeKind::Writer),
            (format!("{U1}__READ__0000000012"), 12, NodeKind::Reader),
            (format!("{U1}__WRIT__0000000013"), 13, NodeKind::Writer),
            ("0123456789abcdef0123456789abcdef__lock__0000000042".to_string(), 42, NodeKind::Writer),
            ("0123456789abcdef0123456789abcdef__rlock__0000000043".to_string(), 43, NodeKind::Reader),
            ("x-72057594037927936-0000000044".to_string(), 44, NodeKind::Writer),
            ("lock-2147483647".to_string(), 2147483647, NodeKind::Writer),
        ];
        for (name, seq, kind) in cases {
            let n = parse_child(&name).unwrap_or_else(|| panic!("{name} should parse"));
            assert_eq!((n.sequence, n.kind), (seq, kind), "{name}");
        }
    }

    #[test]
    fn parses_negative_sequences_after_wrap() {
        let n = parse_child(&format!("{U1}lock--000000001")).expect("negative after lock-");
        assert_eq!(n.sequence, -1);
        let n = parse_child(&format!("{U1}__READ__-2147483648")).expect("most negative");
        assert_eq!((n.sequence, n.kind), (-2147483648, NodeKind::Reader));
        let n = parse_child("x-123--000000005").expect("recipe negative");
        assert_eq!(n.sequence, -5);
    }

    #[test]
    fn unsequenced_and_malformed_children_are_ignored() {
        for name in ["config", "lock-", "lock-12345", "_c_abc-lock-00000000x1", "", "leader", "lock-99999999999x"] {
            assert_eq!(parse_child(name), None, "{name:?}");
        }
        // A stranger that ends in ten or more digits is taken as a writer
        // (conservative: waiting on a stranger is safe, ignoring one is not).
        let n = parse_child("foo01234567891").expect("trailing ten digits");
        assert_eq!((n.sequence, n.kind), (1234567891, NodeKind::Writer));
    }

    #[test]
    fn sequence_outside_i32_is_not_a_sequence() {
        assert_eq!(parse_child("lock-9999999999"), None);
    }

    #[test]
    fn sorts_by_sequence_not_by_name() {
        // By whole name the kazoo node would sort first (ZOOKEEPER-2931).
        let children = v(&["zzz__lock__0000000001", "_c_b-lock-0000000003", "aaa__lock__0000000002"]);
        let q: Vec<i64> = queue(&children).iter().map(|n| n.sequence).collect();
        assert_eq!(q, [1, 2, 3]);
    }

    #[test]
    fn exclusive_waits_on_the_node_right_before_it() {
        let children = v(&[
            "config",
            &format!("{U2}lock-0000000001"),
            "abcd__lock__0000000004",
            &format!("{U1}lock-0000000009"),
            "x-99-0000000010",
        ]);
        let ours = format!("{U1}lock-0000000009");
        assert_eq!(decide(LockMode::Exclusive, &children, &ours), Decision::WaitOn("abcd__lock__0000000004".into()));
        let first = format!("{U2}lock-0000000001");
        assert_eq!(decide(LockMode::Exclusive, &children, &first), Decision::Held);
        assert_eq!(decide(LockMode::Exclusive, &children, "x-99-0000000010"), Decision::WaitOn(ours));
    }

    #[test]
    fn writer_is_blocked_by_earlier_readers() {
        let children = v(&[&format!("{U2}__READ__0000000001"), &format!("{U1}__WRIT__0000000002")]);
        assert_eq!(
            decide(LockMode::Write, &children, &format!("{U1}__WRIT__0000000002")),
            Decision::WaitOn(format!("{U2}__READ__0000000001"))
        );
    }

    #[test]
    fn readers_share_and_ignore_later_writers() {
        let children = v(&[
            &format!("{U2}__READ__0000000001"),
            "k__rlock__0000000002",
            &format!("{U1}__READ__0000000003"),
            &format!("{U2}__WRIT__0000000004"),
        ]);
        assert_eq!(decide(LockMode::Read, &children, &format!("{U1}__READ__0000000003")), Decision::Held);
    }

    #[test]
    fn reader_waits_on_greatest_earlier_writer() {
        let children = v(&[
            "k__lock__0000000001",
            &format!("{U2}__WRIT__0000000002"),
            &format!("{U2}__READ__0000000003"),
            &format!("{U1}__READ__0000000005"),
            "x-1-0000000006",
        ]);
        assert_eq!(
            decide(LockMode::Read, &children, &format!("{U1}__READ__0000000005")),
            Decision::WaitOn(format!("{U2}__WRIT__0000000002"))
        );
    }

    #[test]
    fn equal_sequences_give_exactly_one_writer() {
        let a = "a-lock-0000000005".to_string();
        let b = "b-lock-0000000005".to_string();
        let children = vec![b.clone(), a.clone()];
        assert_eq!(decide(LockMode::Exclusive, &children, &a), Decision::Held);
        assert_eq!(decide(LockMode::Exclusive, &children, &b), Decision::WaitOn(a));
    }

    #[test]
    fn reader_is_not_blocked_by_writer_of_equal_sequence() {
        // Curator 5.5+ downgrade creates the read node with the writer's sequence.
        let children = v(&[&format!("{U2}__WRIT__0000000005"), &format!("{U2}__READ__0000000005")]);
        assert_eq!(decide(LockMode::Read, &children, &format!("{U2}__READ__0000000005")), Decision::Held);
    }

    #[test]
    fn a_lease_holds_while_fewer_nodes_than_permits_block_it_and_waits_on_the_children() {
        let lease = |u: &str, seq: u32| format!("{u}lease-{seq:010}");
        let children = v(&[&lease(U1, 1), &lease(U2, 2), "junk", &lease(U1, 3)]);
        // Every other lease node blocks, whatever its sequence; junk does not.
        assert_eq!(decide_with_permits(LockMode::Lease, 3, &children, &lease(U1, 3)), Decision::Held);
        assert_eq!(decide_with_permits(LockMode::Lease, 3, &children, &lease(U1, 1)), Decision::Held);
        assert_eq!(decide_with_permits(LockMode::Lease, 2, &children, &lease(U1, 1)), Decision::WaitOnChildren);
        assert_eq!(decide_with_permits(LockMode::Lease, 1, &children, &lease(U2, 2)), Decision::WaitOnChildren);
        assert_eq!(decide_with_permits(LockMode::Lease, 1, &v(&[&lease(U2, 2)]), &lease(U2, 2)), Decision::Held);
        assert_eq!(decide_with_permits(LockMode::Lease, 5, &children, &lease(U2, 9)), Decision::Gone);
        assert_eq!(parse_child(&format!("{U1}lease--000000005")).map(|n| n.sequence), Some(-5));
    }

    #[test]
    fn missing_own_node_is_gone() {
        let children = v(&["a-lock-0000000001"]);
        assert_eq!(decide(LockMode::Exclusive, &children, "b-lock-0000000002"), Decision::Gone);
        assert_eq!(decide(LockMode::Exclusive, &[], "b-lock-0000000002"), Decision::Gone);
    }

    #[test]
    fn own_nodes_found_by_protected_prefix() {
        let children =
            v(&[&format!("{U1}lock-0000000007"), &format!("{U2}lock-0000000003"), &format!("{U1}lock-0000000004")]);
        let mine: Vec<i64> = own_nodes(&children, U1).iter().map(|n| n.sequence).collect();
        assert_eq!(mine, [4, 7]);
    }

    /// The one-pass holders agree with [`decide`] on every node, over many
    /// pseudo-random queues of readers and writers (with equal sequences,
    /// as a downgrade makes, and unsequenced children).
    #[test]
    fn queue_with_holders_agrees_with_decide() {
        let mut r = Xorshift(0x2545_f491_4f6c_dd1d);
        for _ in 0..2000 {
            let children = r.queue(9, false);
            let fast = queue_with_holders(&children);
            assert_eq!(fast.len(), queue(&children).len());
            for (node, holds) in fast {
                let mode = if node.kind == NodeKind::Reader { LockMode::Read } else { LockMode::Exclusive };
                let slow = decide(mode, &children, &node.name) == Decision::Held;
                assert_eq!(holds, slow, "{} in {children:?}", node.name);
            }
        }
    }

    /// Pseudo-random numbers (xorshift), for queues the tests draw.
    struct Xorshift(u64);

    impl Xorshift {
        /// The next number below `n`.
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }

        /// A queue of fewer than `max_len` children: readers, writers,
        /// exclusive nodes (leases too if `leases`) and unsequenced
        /// children, with sequences 0-5 (equal ones, as a downgrade makes).
        fn queue(&mut self, max_len: u64, leases: bool) -> Vec<String> {
            let len = self.next(max_len);
            let kinds = if leases { 7 } else { 5 };
            (0..len)
                .map(|i| match self.next(kinds) {
                    0 => format!("x{i}"),
                    1 | 2 => format!("_c_{i}-__READ__{:010}", self.next(6)),
                    3 => format!("_c_{i}-__WRIT__{:010}", self.next(6)),
                    4 if leases => format!("_c_{i}-lease-{:010}", self.next(6)),
                    _ => format!("_c_{i}-lock-{:010}", self.next(6)),
                })
                .collect()
        }
    }

    /// `blockers` looks at each name in place and keeps only the last
    /// blocker: its decisions are the rule's as first written (every
    /// blocker parsed and collected, the greatest in queue order waited
    /// on), for every mode and queue, ties in sequence included.
    #[test]
    fn decisions_are_the_rule_as_first_written() {
        fn reference(mode: LockMode, permits: usize, children: &[String], ours: &str) -> (Decision, bool) {
            let Some(me) = children.iter().find(|c| c.as_str() == ours).and_then(|c| parse_child(c)) else {
                return (Decision::Gone, false);
            };
            let d = mode.driver();
            let all: Vec<LockNode> = children
                .iter()
                .filter(|c| c.as_str() != ours)
                .filter_map(|c| parse_child(c))
                .filter(|n| d.blocks(&me, n))
                .collect();
            let sole = matches!(all.as_slice(), [only] if d.held_once_sole_blocker_gone(only));
            let decision = if all.len() < permits {
                Decision::Held
            } else if d.waits_on_children() {
                Decision::WaitOnChildren
            } else {
                all.into_iter().max_by(LockNode::queue_cmp).map_or(Decision::Held, |n| Decision::WaitOn(n.name))
            };
            (decision, sole)
        }
        let mut r = Xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..3000 {
            let children = r.queue(10, true);
            for ours in &children {
                for &mode in LockMode::ALL {
                    let permits = if mode == LockMode::Lease { 1 + r.next(3) as usize } else { 1 };
                    let (want, sole) = reference(mode, permits, &children, ours);
                    assert_eq!(
                        decide_with_permits(mode, permits, &children, ours),
                        want,
                        "{mode:?} {ours} in {children:?}"
                    );
                    assert_eq!(held_once_gone(mode, &children, ours), sole, "{mode:?} {ours} in {children:?}");
                }
            }
        }
    }

    #[test]
    fn a_table_gives_each_word_its_name_code_and_doc() {
        let v = LockMode::VOCABULARY;
        assert_eq!(v.name, "LockMode");
        assert_eq!(v.words.len(), LockMode::ALL.len());
        for (w, m) in v.words.iter().zip(LockMode::ALL) {
            assert_eq!((w.name, w.code), (m.name(), m.code()));
            assert_eq!(LockMode::from_name(w.name), Some(*m));
            assert!(!w.doc.trim().is_empty(), "{} has no doc", w.name);
        }
        assert_eq!(NodeKind::from_name("READER"), Some(NodeKind::Reader));
        assert_eq!(NodeKind::from_name("reader"), None);
        assert_eq!(v.word("WRITE").map(|w| w.variant), Some("Write"));
    }
}

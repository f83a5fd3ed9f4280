//! The promises, checked against the model's record (never the machine's
//! view): grant justification, no more holders than permits (counting
//! those whose `check()` would pass: a holder learns it may have lost the
//! lock before anyone else can be granted it; and a stranger's writer
//! node that sorts first, the exhaustive search's third party), no delete of another
//! session's node, nothing known left behind by a stopped attempt and no
//! grant after a stop (`not_stopped`), a holder's loss and release's
//! outcome true, every member of a multi-lock's set ours after its last
//! member's grant (`multi_grant`; each lock's holders counted by
//! themselves), the shared count's rule at each lease grant
//! (`count_grant`), an acquire failed on the shared count only on
//! ZooKeeper's word (`count_failure`), a holder told all there is that
//! says Held has its node (the exhaustive search), and at quiescence no
//! leaked node, every contender granted (but one whose caller gave up)
//! and every attempt over.

use std::time::Instant;

use zklock_proto::acquire::Leftover;
use zklock_proto::names::{self, Decision, NodeKind};

use super::model::{Msg, Zk};
use zklock_proto::hold::Hold;

use super::runner::{Contender, Member, State, Tag, Task};

/// A broken promise.
#[derive(Clone, Debug)]
pub struct Violation {
    /// Which promise (shrinking keeps it).
    pub kind: &'static str,
    /// What happened.
    pub what: String,
}

/// The session of a stranger, no contender: a semaphore scenario's lease
/// held from the start, or the exhaustive search's third party that
/// creates a node in a lock's queue (`holders` counts a writer node of it
/// that sorts first as a holder).
pub const STRANGER: i64 = 0xff;

/// The sequence the server appended to a child's name (its last ten
/// characters, all digits), read without `names` (whose rules are under
/// test): `None` for a child made without one.
fn server_sequence(name: &str) -> Option<i64> {
    let tail = name.get(name.len().checked_sub(10)?..)?;
    tail.bytes().all(|b| b.is_ascii_digit()).then(|| tail.parse().ok()).flatten()
}

/// Whether the stranger holds the lock now: a node of its session under the
/// lock path, made with a sequence (a writer: the only kind it makes), and
/// no other child with a smaller one (as the server numbered them, not as
/// `names` reads them: a contender that fails to see the stranger's node
/// must not blind this check too).
/// Whether the node `parent/name` owned by `owner` (now, or as of the
/// zxid a check looks at) is one a third party made in place of one of
/// the same name (`World::third_party_replace`): the stranger's, its path
/// once deleted by the third party.
fn replaced(zk: &Zk<Tag>, parent: &str, name: &str, owner: i64) -> bool {
    owner == STRANGER && zk.third_party_deleted.contains(&format!("{parent}/{name}"))
}

fn stranger_holds(zk: &Zk<Tag>) -> bool {
    let owner = |k: &String| zk.nodes[&format!("{}/{k}", zk.lock_path)].owner;
    // A node a third party made in place of one of the same name is not
    // counted (see `grant`).
    let kids: Vec<String> =
        zk.lock_children().into_iter().filter(|k| !replaced(zk, &zk.lock_path, k, owner(k))).collect();
    let (theirs, others): (Vec<&String>, Vec<&String>) = kids.iter().partition(|k| owner(k) == STRANGER);
    theirs
        .into_iter()
        .filter_map(|k| server_sequence(k))
        .any(|s| others.iter().filter_map(|k| server_sequence(k)).all(|o| o > s))
}

fn v(kind: &'static str, what: String) -> Violation {
    Violation { kind, what }
}

/// Grant justification: as of the last message the contender's session got
/// before the grant, our node existed, was owned by our session (hence the
/// session was alive), had the czxid granted, and the queue rule said Held.
/// (A message its runner held back while it read the shared count again
/// is fed later than it came: a grant it leads to is checked as of when it
/// came.)
pub fn grant(zk: &Zk<Tag>, c: &Contender, name: &str, czxid: i64) -> Result<(), Violation> {
    let z = c.as_of.unwrap_or(c.last_zxid);
    let kids = zk.children_at(&c.attempt_path, z);
    let Some(ours) = kids.iter().find(|l| l.name == name) else {
        return Err(v(
            "grant",
            format!("{} granted {name}, but as of zxid {z} (the last message it got) that node did not exist", c.name),
        ));
    };
    // A node of our name a third party made in place of ours
    // (`World::third_party_replace`): a list shows the name, not whose it
    // is (the documented limit on names made by someone else; the holder's
    // read of its node then finds it not ours). The count of holders
    // (`holders`, the stranger counted) is the promise kept there.
    let made_again = replaced(zk, &c.attempt_path, name, ours.owner);
    // A peer that adopted its node by name does not know its czxid (-1).
    if !made_again && (ours.owner != c.session || (czxid >= 0 && ours.czxid != czxid)) {
        return Err(v(
            "grant",
            format!(
                "{} granted {name} (czxid {czxid}) in session {:#x}, but as of zxid {z} it was owned by {:#x} with czxid {}",
                c.name, c.session, ours.owner, ours.czxid
            ),
        ));
    }
    // Nodes a third party made in place of a node of the same name
    // (`World::third_party_replace`): a waiter whose blocker was replaced
    // so may be granted beside the newcomer (the documented limit on names
    // made by someone else: the delete's notification says only that the
    // name went), so they do not count here; `holders` counts them neither.
    let children: Vec<String> = kids
        .iter()
        .filter(|l| l.name == name || !replaced(zk, &c.attempt_path, &l.name, l.owner))
        .map(|l| l.name.clone())
        .collect();
    // A lease of a shared count: the permits the count gave at some point
    // from `at` to the grant (the count's own rule is `count_grant`'s).
    let shared = zk.count_path.is_some() && c.attempt_mode == names::LockMode::Lease;
    let upto = z.max(c.count_zxid);
    let permits = |at: i64| if shared { zk.max_permits_between(at, upto) } else { c.attempt_permits };
    let d = names::decide_with_permits(c.attempt_mode, permits(z), &children, name);
    // A lease counts every other lease node, also ones made after the list
    // that counted (a contender that took the mutex after ours was lost):
    // it is justified when the count said Held at some zxid since our node
    // was made (that list's), our node living on since. The count of
    // holders (`holders`) is the safety promise.
    let counted_once = c.attempt_mode == names::LockMode::Lease
        && (ours.czxid..=z).any(|at| {
            let then: Vec<String> = zk.children_at(&c.attempt_path, at).iter().map(|l| l.name.clone()).collect();
            names::decide_with_permits(c.attempt_mode, permits(at), &then, name) == Decision::Held
        });
    if d != Decision::Held && !counted_once {
        return Err(v(
            "grant",
            format!("{} granted {name}, but as of zxid {z} the queue said {d:?}: {children:?}", c.name),
        ));
    }
    Ok(())
}

/// A cancel wins over a grant (protocol section 4, step 6): an attempt
/// told to stop (its caller's cancel, the client's close, or its runner's
/// stop on a shared count that cannot be read again) is never granted.
pub fn not_stopped(c: &Contender, name: &str) -> Result<(), Violation> {
    if c.stopped {
        return Err(v("stopped", format!("{} granted {name} after its attempt was told to stop", c.name)));
    }
    Ok(())
}

/// The shared count's rule at a lease's grant (protocol 8c: "it holds the
/// lease when fewer than `N` other lease nodes exist", `N` the count; "the
/// count bounds new leases"; a count that cannot be read fails the
/// acquire): the list the grant decided on (the last list of the lease
/// path fed to the attempt, answered at zxid `z`) showed fewer lease nodes
/// other than ours than the permits the count gave at some zxid from `z`
/// to the last one the contender's session had read (a count read after
/// the list may be used, never one older than it; missing or not a count:
/// 0 permits; negative: 0). Checked from the model's record of the lease
/// nodes and of the count, not from the machine's count.
pub fn count_grant(zk: &Zk<Tag>, c: &Contender, name: &str) -> Result<(), Violation> {
    let Some(z) = c.decided_zxid else {
        return Err(v("count", format!("{} granted {name} with no list of the leases fed to it", c.name)));
    };
    let others: Vec<String> = zk
        .children_at(&c.attempt_path, z)
        .iter()
        .filter(|l| l.name != name && names::parse_child(&l.name).is_some())
        .map(|l| super::runner::short(&l.name))
        .collect();
    let upto = c.as_of.unwrap_or(c.last_zxid).max(c.count_zxid);
    let permits = zk.max_permits_between(z, upto);
    if others.len() >= permits {
        return Err(v(
            "count",
            format!(
                "{} granted {name} on the list of zxid {z}, which showed {} other lease(s) {others:?}, but the shared \
                 count gave at most {permits} permit(s) from then to zxid {upto} (count log {:?})",
                c.name,
                others.len(),
                zk.count_log
            ),
        ));
    }
    Ok(())
}

/// An acquire that fails on the shared count (protocol 8c: "a count node
/// that is missing or malformed fails the acquire"; "a read that fails for
/// the connection ... says nothing about the count"): only on ZooKeeper's
/// word, an answer to the count's read (given at zxid `answered`) at a
/// zxid where the model's record of the count says it was missing or not
/// a count. A read that failed on the client (`None`: no answer, the
/// connection or the session lost) is no such word (outside attack round
/// 19, G3, G5: a waiter lost its place). Checked from the model's record
/// of the count, not from what the runner read.
pub fn count_failure(zk: &Zk<Tag>, c: &Contender, answered: Option<i64>) -> Result<(), Violation> {
    let Some(z) = answered else {
        return Err(v(
            "count_read",
            format!(
                "{}'s acquire failed on the shared count, but its read of the count was not answered (it failed \
                 for the connection), which says nothing about the count",
                c.name
            ),
        ));
    };
    let state = zk.count_log.iter().rev().find(|(at, _)| *at <= z).map(|(_, p)| *p);
    if let Some(Some(permits)) = state {
        return Err(v(
            "count_read",
            format!(
                "{}'s acquire failed on the shared count, but as of zxid {z} (the read's answer) the count gave \
                 {permits} permit(s) (count log {:?})",
                c.name, zk.count_log
            ),
        ));
    }
    Ok(())
}

/// Whether a zklock contender's `check()` would pass now, as zklock-core's
/// does: its holder's machine says Held, its session layer believes itself
/// connected, and its safety clock is safe: in timed runs (`base` the
/// client clocks' instant at tick 0) at the contender's own (drifted)
/// time; in untimed runs (the exhaustive search) unless a move of the
/// search made it run out.
/// (The semaphore's mutex has no holder's machine here: its holder counts
/// on the other two alone, which only makes the promise stricter.)
fn check_passes(zk: &Zk<Tag>, c: &Contender, hold: Option<&Hold>, base: Option<Instant>) -> bool {
    let held = hold.is_none_or(|h| h.state() == zklock_proto::hold::State::Held);
    // Untimed runs (the exhaustive search): the clock is safe unless a move
    // of the search made it run out.
    let safe = match base {
        Some(base) => c.clock.as_ref().is_some_and(|k| k.is_safe(super::client_time(base, zk.now, c.rate))),
        None => !c.clock_out,
    };
    !c.peer && held && c.link_up && safe
}

/// Never more holders than permits, counting contenders that hold and
/// whose node still exists now, and (`base`: see `check_passes`) those
/// whose `check()` would pass now (with a shared count: never more than
/// the most permits the count gave from the earliest list a counted
/// holder was granted on to now: a decrease takes no lease away, and the
/// holder granted last counted every other), unless
/// a third party deleted their node (outside the promise): a contender
/// holding a writer node (also a write node kept while it downgrades) is a
/// writer, one holding only a read node a reader. A lock's stranger
/// (`STRANGER`: the exhaustive search's third party) whose writer node
/// sorts first holds too, as a writer (`stranger_holds`). Broken only by those
/// whose `check()` passes: kind `check` (a holder that could not tell it
/// may have lost the lock while another was granted it).
pub fn holders(zk: &Zk<Tag>, cs: &[Contender], base: Option<Instant>) -> Result<(), Violation> {
    // Each lock by itself (a multi-lock contender holds several).
    let mut parents = vec![zk.lock_path.as_str()];
    for c in cs {
        for (p, _) in c.held_nodes() {
            let parent = p.rsplit_once('/').map_or("", |(parent, _)| parent);
            if !parents.contains(&parent) {
                parents.push(parent);
            }
        }
    }
    for parent in parents {
        holders_of(zk, cs, base, parent)?;
    }
    // A semaphore's mutex is an exclusive lock: one holder whose node
    // exists.
    let mutex: Vec<&String> = cs
        .iter()
        .filter(|c| c.mutex_held.as_ref().is_some_and(|m| zk.nodes.contains_key(&m.path)))
        .map(|c| &c.name)
        .collect();
    if mutex.len() > 1 {
        return Err(v("holders", format!("the semaphore's mutex held at once by {mutex:?}")));
    }
    Ok(())
}

/// `holders` for the lock at `parent`.
fn holders_of(zk: &Zk<Tag>, cs: &[Contender], base: Option<Instant>, parent: &str) -> Result<(), Violation> {
    let count = |by_check: bool| {
        let mut writers = Vec::new();
        let mut readers = Vec::new();
        let mut decided: Option<i64> = None;
        for c in cs {
            let held: Vec<&String> = c
                .held_nodes()
                .into_iter()
                .filter(|(p, hold)| {
                    p.rsplit_once('/').is_some_and(|(pp, _)| pp == parent)
                        && (zk.nodes.get(*p).is_some_and(|n| n.owner == c.session)
                            || (by_check && check_passes(zk, c, *hold, base) && !zk.third_party_deleted.contains(*p)))
                })
                .map(|(p, _)| p)
                .collect();
            if held.is_empty() {
                continue;
            }
            if let Some(z) = c.held_decided {
                decided = Some(decided.map_or(z, |d| d.min(z)));
            }
            let reader = held
                .iter()
                .all(|p| names::parse_child(super::model::name_of(p)).is_some_and(|n| n.kind == NodeKind::Reader));
            let ours = zk.nodes.get(held[0]).is_some_and(|n| n.owner == c.session);
            let who = if ours { c.name.clone() } else { format!("{}(check passes)", c.name) };
            if reader {
                readers.push(who);
            } else {
                writers.push(who);
            }
        }
        let permits = match (&zk.count_path, decided) {
            (Some(_), Some(z)) => zk.max_permits_between(z, zk.zxid),
            _ => cs.first().map_or(1, |c| c.permits),
        };
        // A stranger's writer node that sorts first holds a lock (not a
        // semaphore: its stranger's lease is not counted).
        if zk.count_path.is_none() && permits == 1 && parent == zk.lock_path && stranger_holds(zk) {
            writers.push("stranger".to_string());
        }
        // A semaphore (a shared count, or more than one permit) counts
        // holders; a lock's rule is the read/write rule.
        let bad = if zk.count_path.is_some() || permits > 1 {
            writers.len() + readers.len() > permits
        } else {
            writers.len() > 1 || (!writers.is_empty() && !readers.is_empty())
        };
        bad.then(|| format!("holding at once with {permits} permit(s): writers {writers:?}, readers {readers:?}"))
    };
    if let Some(what) = count(false) {
        return Err(v("holders", what));
    }
    if let Some(what) = count(true) {
        return Err(v("check", format!("at t={}: {what}", zk.now)));
    }
    Ok(())
}

/// A multi-lock's grant of its set (`multi::Action::Granted`): every
/// member's node was ours (our session's, with the czxid it was granted
/// with) as of its `runner::Member::due` zxid: the last member's as of
/// its grant; an earlier member's as of the answer to a read of it, or if
/// none, as of what its server had applied when the last member was
/// granted: a member whose server knew it lost then must not be handed
/// out (outside attack round 12: a set came back held whose first
/// member's node a third party had deleted while a later member waited).
pub fn multi_grant(zk: &Zk<Tag>, name: &str, set: &[&Member]) -> Result<(), Violation> {
    for m in set {
        let Some((parent, node)) = m.node.rsplit_once('/') else { continue };
        let z = m.read.unwrap_or(m.due);
        let ours =
            zk.children_at(parent, z).iter().any(|l| l.name == node && l.owner == m.session && l.czxid == m.czxid);
        if !ours {
            return Err(v(
                "multi grant",
                format!(
                    "{name} granted its set, but member {} ({}) was not its node as of zxid {z} ({})",
                    m.member,
                    m.node,
                    if m.read.is_some() {
                        "its read's answer"
                    } else {
                        "what its server had applied at the last grant"
                    }
                ),
            ));
        }
    }
    Ok(())
}

/// A multi-lock call fails for a member's connection alone (its check
/// suspended, its read unanswered: `runner::FOR_THE_CONNECTION`) only at
/// its deadline or a cancel, which the simulator's calls do not have
/// (outside attack rounds 36, F1, and 43, F5: a reconnect near the last
/// grant failed the call with most of its deadline left).
pub fn multi_failure(name: &str, member: usize, why: &zklock_proto::multi::Why<String>) -> Result<(), Violation> {
    match why {
        zklock_proto::multi::Why::Error(e) if e == super::runner::FOR_THE_CONNECTION => Err(v(
            "multi failure",
            format!("{name}'s call failed at member {member} for its connection alone, with no deadline or cancel"),
        )),
        _ => Ok(()),
    }
}

/// A multi-lock call waits for member `waited` only while no other member
/// taken is known lost to its client (its holder's machine says lost or
/// released, or its session ended): a call that knows it failed ends at
/// once (outside attack round 44, F1: a member found gone waited behind
/// a silent earlier one).
pub fn multi_wait(name: &str, waited: usize, set: &[&Member]) -> Result<(), Violation> {
    use zklock_proto::hold::State as H;
    match set
        .iter()
        .find(|m| m.member != waited && m.hold.as_ref().is_none_or(|h| matches!(h.state(), H::Lost(_) | H::Released)))
    {
        Some(m) => Err(v(
            "multi wait",
            format!("{name}'s call waits for member {waited} though member {} ({}) is known lost", m.member, m.node),
        )),
        None => Ok(()),
    }
}

/// A holder's machine says the lock is lost only when it is: our node is
/// gone or not ours (the session's end takes it).
pub fn lost(zk: &Zk<Tag>, c: &Contender, path: &str, loss: zklock_proto::hold::Loss) -> Result<(), Violation> {
    if zk.nodes.get(path).is_some_and(|n| n.owner == c.session) {
        return Err(v(
            "false loss",
            format!("{}'s hold says Lost ({loss:?}), but {path} is still its session's", c.name),
        ));
    }
    Ok(())
}

/// A holder that was told all there is (the exhaustive search, untimed:
/// nothing of its session is left for it to read or for the server to
/// apply, and no retry of its holder's machine is pending) and whose
/// holder's machine says Held has its node, owned by its session: a
/// holder whose node was deleted (by anyone, a third party too) or is
/// another session's does not stay Held once it was told.
pub fn told(zk: &Zk<Tag>, cs: &[Contender]) -> Result<(), Violation> {
    for c in cs {
        let (State::Holding { path, .. }, Some(h)) = (&c.state, &c.hold) else { continue };
        let s = &zk.sessions[&c.session];
        let settled = c.inbox.is_empty()
            && c.deferred.is_empty()
            && s.out.is_empty()
            && s.inflight.is_empty()
            && c.hold_retry.is_none()
            && c.stalled == 0;
        if settled
            && h.state() == zklock_proto::hold::State::Held
            && zk.nodes.get(path).is_none_or(|n| n.owner != c.session)
        {
            return Err(v(
                "told",
                format!(
                    "{}'s hold says Held with nothing left to hear, but {path} is {}",
                    c.name,
                    if zk.nodes.contains_key(path) { "another session's" } else { "gone" }
                ),
            ));
        }
    }
    Ok(())
}

/// What a release tells its caller is true: a loss only when our node is
/// gone or not ours, and never a loss when the client's close took the
/// node (a release overtaken by the close reports Closed).
pub fn released(
    zk: &Zk<Tag>,
    c: &Contender,
    path: &str,
    outcome: zklock_proto::hold::Outcome,
) -> Result<(), Violation> {
    use zklock_proto::hold::Outcome;
    let lost = matches!(outcome, Outcome::Lost(_) | Outcome::LostBefore);
    if lost && zk.nodes.get(path).is_some_and(|n| n.owner == c.session) {
        return Err(v(
            "released",
            format!("{}'s release of {path} says {outcome:?}, but the node is still ours", c.name),
        ));
    }
    if outcome == Outcome::LostBefore && c.closed {
        return Err(v(
            "released",
            format!(
                "{}'s release of {path} was overtaken by the client's close and says {outcome:?}, not Closed",
                c.name
            ),
        ));
    }
    Ok(())
}

/// No contender deleted a node another session owned; but a node a third
/// party put in place of one of ours under the same name
/// (`World::third_party_replace`) counts only when deleted by one of
/// zklock's contenders that had been told before it sent the delete
/// (`Contender::deleted_when_told`): one sent before any word of the
/// change reached the client is the documented window of an at-once
/// delete, and a Curator-like peer deletes its node by name as Curator does.
pub fn deletes(zk: &Zk<Tag>, cs: &[Contender]) -> Result<(), Violation> {
    let counts = |(by, path, _): &&(i64, String, i64)| {
        !zk.third_party_deleted.contains(path.as_str())
            || cs.iter().any(|c| c.session == *by && !c.peer && c.deleted_when_told.contains(path.as_str()))
    };
    match zk.foreign_deletes.iter().find(counts) {
        Some((by, path, owner)) => {
            Err(v("foreign delete", format!("session {by:#x} deleted {path}, owned by session {owner:#x}")))
        },
        None => Ok(()),
    }
}

/// When an attempt tells its caller `Stopped`: a node it made is either
/// named by `leftover` or could not be known. The reply of its create
/// waiting at the client (applied, not yet read) is a node it could have
/// learned of by reading it (the runner waits for it while it lingers).
/// A client that is closed waits for nothing: its session ends, and its
/// nodes with it.
pub fn stopped(zk: &Zk<Tag>, c: &Contender, left: &Leftover) -> Result<(), Violation> {
    if left.node.is_some() || c.closed {
        return Ok(());
    }
    let s = &zk.sessions[&c.session];
    for m in &s.out {
        if let Msg::Reply { tag: Tag::Attempt { gen, id }, result: Ok(_), .. } = m {
            if *gen == c.gen && c.creates.contains(id) {
                return Err(v(
                    "stopped",
                    format!(
                        "{} was told Stopped (leftover {left:?}) while the reply of its create was waiting to be read: \
                         its node stays after the caller was told",
                        c.name
                    ),
                ));
            }
        }
    }
    if !left.unknown_create {
        let prefix = format!("{}/{}", c.attempt_path, c.protected);
        if let Some((p, _)) = zk.nodes.iter().find(|(p, n)| p.starts_with(&prefix) && n.owner == c.session) {
            return Err(v(
                "stopped",
                format!("{} was told Stopped, its node {p} exists and leftover {left:?} does not name it", c.name),
            ));
        }
    }
    Ok(())
}

/// At quiescence: no node of a contender's live session under the lock
/// path, every contender granted after the faults stopped (but one whose
/// caller cancelled its acquire and gave up: `Contender::gave_up`), every
/// attempt over.
pub fn quiescent(zk: &Zk<Tag>, cs: &[Contender]) -> Result<(), Violation> {
    for c in cs {
        if let Some(a) = &c.attempt {
            if !a.is_done() {
                return Err(v("unanswered", format!("{}'s attempt never ended", c.name)));
            }
        }
        // (A contender whose caller cancelled its acquire is not granted.)
        if !c.granted_clean && !c.gave_up {
            return Err(v("liveness", format!("{} was never granted after the faults stopped", c.name)));
        }
        let leaked: Vec<String> = zk
            .tracked
            .iter()
            .flat_map(|parent| zk.children_of(parent).into_iter().map(move |k| format!("{parent}/{k}")))
            .filter(|p| zk.nodes[p].owner == c.session)
            .collect();
        if !leaked.is_empty() {
            return Err(v("leak", format!("{} (session {:#x}) left {leaked:?}", c.name, c.session)));
        }
    }
    Ok(())
}

/// No leaked node, at any step: every node under the lock path (or a
/// semaphore's mutex path) of a contender's session is known to it: its
/// current attempt's (by prefix), the one it holds (or its mutex node), or
/// one a cleanup in flight will delete (by path or prefix). A node nobody
/// knows of blocks everyone behind it until the session ends.
pub fn orphans(zk: &Zk<Tag>, cs: &[Contender]) -> Result<(), Violation> {
    for parent in &zk.tracked {
        orphans_under(zk, cs, parent)?;
    }
    Ok(())
}

fn orphans_under(zk: &Zk<Tag>, cs: &[Contender], parent_path: &str) -> Result<(), Violation> {
    let Some(parent) = zk.nodes.get(parent_path) else { return Ok(()) };
    for k in &parent.children {
        let path = format!("{parent_path}/{k}");
        let owner = zk.nodes[&path].owner;
        let Some(c) = cs.iter().find(|c| c.session == owner) else { continue };
        let current = c.attempt.as_ref().is_some_and(|a| !a.is_done())
            && c.attempt_path == parent_path
            && k.starts_with(&c.protected);
        let held =
            c.held_nodes().iter().any(|(p, _)| **p == path) || c.mutex_held.as_ref().is_some_and(|m| m.path == path);
        let cleaning = c.tasks.iter().chain(&c.retry).any(|t| match t {
            Task::Release(p) | Task::Clean(p) => *p == path,
            Task::Sweep(sp, prefix) | Task::SweepList(sp, prefix) => {
                sp == parent_path && k.starts_with(prefix.as_str())
            },
            Task::Watch(_) => false,
        });
        if !(current || held || cleaning) {
            return Err(v(
                "leak",
                format!(
                    "{path} of {}'s session {owner:#x} is known to no attempt, hold or cleanup of it (its attempt now: {})",
                    c.name, c.protected
                ),
            ));
        }
    }
    Ok(())
}

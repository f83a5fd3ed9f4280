//! The exhaustive search (issue 32 item 4): every interleaving of a small
//! scenario, depth first over the scheduler's moves, with a bounded number
//! of faults (the bound, precisely: `exhaustive.rs`).
//!
//! A world here makes no random draw: every choice but the scheduler's is
//! its plainest (no try-once, no downgrade but by a move, no hold time,
//! no linger grace, no wait between attempts or before a hold's retry),
//! and uuids come from the contender and its attempt number. At each
//! state the moves are
//! every scheduler step that can make progress (apply a request, deliver a
//! message, reconnect, open a new session after an expiry), a release by
//! each contender that holds (`World::release_moves`: a granted contender
//! holds until this move), a credit of each safety clock that ran out
//! (its session connected), and, while faults are left, every fault: drop
//! a contender's connection, expire its session, a third party deletes
//! one node of the queue or two neighbours in one transaction, a
//! contender's safety clock runs out (not done, or its release on its
//! way), a holder's client is closed (holding or releasing), a contender
//! pauses past its session's expiry (its clock runs out, the server
//! expires the session; a wake move, free, tells it). A semaphore whose
//! permits come from a shared count (`Scenario::Semaphore`) has two more
//! moves, no faults: a third party writes the next change of the count's
//! script (each change at any point, in the script's order), and a
//! stranger that holds a lease from the start lets go of it (unless it
//! never does). Within `Bounds::stops`, the caller of the last
//! contender's acquire cancels it mid-wait (`Move::Stop`; it gives up).
//! Within `Bounds::downgrades`, the last contender, a writer holding its
//! write node, downgrades it to a read node (`Move::Downgrade`). Within
//! `Bounds::third`, a stranger (no contender) deletes one node of a
//! lock's queue or two neighbours, or creates a node in it
//! (`Move::Create`: a writer it lets go of by a move, or a child without a
//! sequence).
//! When nothing
//! else can happen, a move lets time pass (countdowns); if that changes
//! nothing, the state is stuck. The world is untimed (`World::timed`
//! false): no heartbeats, no expiry by time, one standalone server (no
//! followers); the safety clock is the two
//! moves above (`Contender::clock_out`), so the state space stays that of
//! the machines.
//!
//! A world cannot be copied (the attempts are not `Clone`), so each state
//! is reached by replaying its moves from the start. States are hashed
//! (the model's tree, sessions and messages, each runner's state, each
//! attempt as its config and the events fed to it: the machine is a pure
//! function of those, and each holder's machine as it is, by its `Debug`
//! form) and a state seen before is not expanded again.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use zklock_proto::acquire::Bugs;
use zklock_proto::names::{self, LockMode};

use super::check::{self, Violation};
use super::model::{CountWrite, Zk};
use super::runner::{self, Contender, CountBugs, State};
use super::schedule::Chooser;
use super::{Step, World};

/// A move of the search.
#[derive(Clone, Debug)]
enum Move {
    Step(Step),
    /// A holder releases.
    Release(usize),
    /// A contender's safety clock, run out, is credited: safe again.
    Credit(usize),
    Tick,
    Drop(usize),
    Expire(usize),
    Delete(Vec<String>),
    /// A contender's safety clock runs out.
    ClockOut(usize),
    /// A holder's client is closed (while it holds, or while its release
    /// is on its way).
    Close(usize),
    /// A contender pauses past its session's expiry: its safety clock runs
    /// out (before the session can expire: the clock's promise, which the
    /// timed simulator tests), the server expires the session, and the
    /// client learns nothing of it until it wakes.
    Silent(usize),
    /// A paused contender wakes: its connection is gone, and it learns
    /// what happened meanwhile.
    Wake(usize),
    /// A third party writes the next change of the shared count's script
    /// (no fault: the script bounds them).
    Count,
    /// The stranger lets go of its lease (deletes its node).
    StrangerReleases,
    /// The caller of a contender's acquire cancels it mid-wait
    /// (`World::cancel`: `Event::Stop`, not closed; the contender gives
    /// up). No fault: `Bounds::stops` bounds them.
    Stop(usize),
    /// A writer that holds its write node downgrades it to a read node
    /// (`World::downgrade`). No fault: `Bounds::downgrades` bounds them.
    Downgrade(usize),
    /// A stranger (`STRANGER`'s session, no contender) creates a node in
    /// the queue: a third party's act, bounded by `Bounds::third` (as a
    /// third party's delete is when any are left).
    Create(Foreign),
}

/// A node a stranger creates in a lock's queue (`Move::Create`).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
enum Foreign {
    /// A writer of ZooKeeper's own recipe, `x-<sid>-<seq10>` (ephemeral
    /// sequential): it holds the lock while nothing sorts before it, and
    /// the stranger lets go of it by a move (`Move::StrangerReleases`).
    Writer,
    /// A child without a sequence (`stranger`): it never blocks, and stays.
    Unsequenced,
}

/// What a search (or a directed case) runs.
#[derive(Clone, Debug)]
pub enum Scenario {
    /// Contenders of these kinds on one lock (`/app/lock`).
    Locks(Vec<LockMode>),
    /// A semaphore whose permits come from a shared count.
    Semaphore(Semaphore),
}

/// A semaphore of lease contenders (`/app/sem/leases`, each attempt
/// behind the mutex `/app/sem/locks`, as the random simulator's) whose
/// permits come from the shared count `/app/sem/count`.
#[derive(Clone, Debug)]
pub struct Semaphore {
    /// The lease contenders.
    pub contenders: usize,
    /// The count at the start.
    pub count: i32,
    /// The changes a third party may write, in order, each at any point
    /// (a move of the search).
    pub script: Vec<CountWrite>,
    /// Wrong rules of the runners' shared count, switched on.
    pub bugs: CountBugs,
    /// A lease held from the start by a session no contender owns (the
    /// first in the queue); it lets go of it by a move of the search
    /// unless `stranger_stays`.
    pub stranger: bool,
    /// The stranger never lets go: a contender is granted only when the
    /// count grows.
    pub stranger_stays: bool,
}

// The session of a stranger: a semaphore scenario's (`Semaphore::stranger`),
// or a third party that creates a node in a lock's queue (`Move::Create`).
use super::check::STRANGER;

/// The lease node of a semaphore scenario's stranger.
const STRANGER_LEASE: &str = "/app/sem/leases/_c_ff000000-0000-0000-0000-000000000000-lease-0000000000";

/// What is left of a path's bounds: faults, cancels, downgrades and a
/// third party's acts.
#[derive(Clone, Copy, Debug, Hash)]
struct Left {
    faults: u32,
    stops: u32,
    downgrades: u32,
    third: u32,
}

impl Left {
    /// All of `bounds`.
    fn of(bounds: &Bounds) -> Left {
        Left { faults: bounds.faults, stops: bounds.stops, downgrades: bounds.downgrades, third: bounds.third }
    }

    /// What is left after `m`. A third party's delete counts against
    /// `third` while any is left, else against the faults.
    fn after(self, m: &Move) -> Left {
        match m {
            Move::Stop(_) => Left { stops: self.stops - 1, ..self },
            Move::Downgrade(_) => Left { downgrades: self.downgrades - 1, ..self },
            Move::Create(_) => Left { third: self.third - 1, ..self },
            Move::Delete(_) if self.third > 0 => Left { third: self.third - 1, ..self },
            m if m.is_fault() => Left { faults: self.faults - 1, ..self },
            _ => self,
        }
    }

    /// Nothing left: no fault, no cancel, no downgrade, no third party.
    fn none() -> Left {
        Left { faults: 0, stops: 0, downgrades: 0, third: 0 }
    }
}

impl Move {
    fn is_fault(&self) -> bool {
        matches!(
            self,
            Move::Drop(_) | Move::Expire(_) | Move::Delete(_) | Move::ClockOut(_) | Move::Close(_) | Move::Silent(_)
        )
    }
}

/// What a search covers.
#[derive(Clone, Debug)]
pub struct Bounds {
    /// The most faults on one path.
    pub faults: u32,
    /// The most cancels of an acquire on one path (`Move::Stop`: the last
    /// contender's, from its attempt's first wait until the attempt ends;
    /// the contender gives up).
    pub stops: u32,
    /// The most downgrades on one path (`Move::Downgrade`: a writer that
    /// holds its write node, at any point while it holds it).
    pub downgrades: u32,
    /// The most acts of a third party on one path, besides `faults`: a
    /// stranger deletes one node of the queue or two neighbours in one
    /// transaction, or creates a node in it (`Move::Create`). A delete
    /// counts here while any is left, else as a fault; a create only here.
    pub third: u32,
    /// The most moves on one path (a path cut there is counted).
    pub depth: usize,
}

/// What a search saw.
#[derive(Debug, Default)]
pub struct Report {
    /// Distinct states expanded.
    pub states: u64,
    /// Paths that reached a state seen before (pruned there).
    pub pruned: u64,
    /// Paths that ended quiet (every contender granted and done).
    pub ends: u64,
    /// Paths cut at the depth bound.
    pub cut: u64,
    /// The longest path.
    pub max_depth: usize,
    /// A broken promise: the moves (indices) that reach it, what broke,
    /// and the readable steps.
    pub found: Option<(Vec<u32>, Violation, Vec<String>)>,
}

impl World {
    /// A world of `scn`, with no random draw.
    pub fn fixed(scn: &Scenario, bugs: Bugs, trace: bool) -> World {
        let (modes, sem) = match scn {
            Scenario::Locks(modes) => (modes.clone(), None),
            Scenario::Semaphore(s) => (vec![LockMode::Lease; s.contenders], Some(s)),
        };
        let lock_path = if sem.is_some() { "/app/sem/leases" } else { "/app/lock" }.to_string();
        let mutex_path = sem.map(|_| "/app/sem/locks".to_string());
        let count_path = sem.map(|_| "/app/sem/count".to_string());
        let mut zk = Zk::new(&lock_path, true, true, true);
        zk.tracked.extend(mutex_path.clone());
        if let (Some(p), Some(s)) = (&count_path, sem) {
            zk.set_count(p, CountWrite::Value(s.count));
        }
        if sem.is_some_and(|s| s.stranger) {
            zk.open(STRANGER, 0);
            let tag = || runner::Tag::Task(runner::Task::Release(STRANGER_LEASE.to_string()));
            let parents = super::model::Op::MakeParents { path: lock_path.clone() };
            let create = super::model::Op::Create { path: STRANGER_LEASE.to_string(), sequential: false };
            for op in [parents, create] {
                zk.send(STRANGER, tag(), op);
                zk.apply(STRANGER);
            }
            zk.sessions.get_mut(&STRANGER).expect("stranger").out.clear();
        }
        let mut cs = Vec::new();
        for (i, mode) in modes.iter().enumerate() {
            let sid = 0x100 + i as i64;
            zk.open(sid, 0);
            let mut c = Contender::new(i, *mode, 1, false, false, sid, &lock_path);
            c.mutex_path = mutex_path.clone();
            cs.push(c);
        }
        let mut w = World {
            zk,
            cs,
            ch: Chooser::from_list(Vec::new()),
            uuids: fastrand::Rng::with_seed(0),
            faults: false,
            bugs,
            trace: trace.then(Vec::new),
            violation: None,
            next_session: 0x100 + modes.len() as i64,
            step: 0,
            lock_path,
            step_starts: Vec::new(),
            counts: Default::default(),
            mutex_path,
            other_paths: Vec::new(),
            multi_watch: true,
            fixed_uuids: true,
            clock_unsafe: 0,
            timed: false,
            base: std::time::Instant::now(),
            clock_bugs: Default::default(),
            reconnect_bugs: Default::default(),
            release_moves: true,
            count_path,
            count_bugs: sem.map(|s| s.bugs).unwrap_or_default(),
            count_script: sem.map(|s| s.script.clone()).unwrap_or_default(),
            count_next: 0,
            stranger_stays: sem.is_some_and(|s| s.stranger_stays),
            abandoned: Vec::new(),
            stalled_change: None,
            replaced: Vec::new(),
            replace: false,
        };
        if let Some(t) = &mut w.trace {
            t.push(format!("exhaustive scenario {scn:?}"));
        }
        w.tick_all();
        w
    }

    /// Every move from here, with `left` faults and cancels left.
    fn moves(&self, left: Left) -> Vec<Move> {
        let faults = left.faults;
        // A paused contender reads nothing and releases nothing.
        let paused = |i: usize| !self.cs[i].deferred.is_empty();
        let mut v: Vec<Move> =
            self.steps().into_iter().filter(|s| !matches!(*s, Step::Deliver(i) if paused(i))).map(Move::Step).collect();
        for (i, c) in self.cs.iter().enumerate() {
            if matches!(c.state, State::Holding { left: 1.., .. }) && !paused(i) {
                v.push(Move::Release(i));
            }
            if paused(i) {
                v.push(Move::Wake(i));
            }
            let s = &self.zk.sessions[&c.session];
            // A credit needs a heartbeat answered: a live connection.
            if c.clock_out && s.alive && s.connected {
                v.push(Move::Credit(i));
            }
        }
        if self.count_next < self.count_script.len() {
            v.push(Move::Count);
        }
        if !self.stranger_stays && self.zk.nodes.get(STRANGER_LEASE).is_some_and(|n| n.owner == STRANGER) {
            v.push(Move::StrangerReleases);
        }
        // The last contender, a writer that holds its write node,
        // downgrades it (at any point while it holds it and is not
        // paused; in a scenario of writers alike, which of them creates
        // first is the scheduler's, as for a cancel below).
        let last = self.cs.len() - 1;
        if left.downgrades > 0
            && matches!(self.cs[last].state, State::Holding { left: 1.., .. })
            && self.can_downgrade(last)
            && !paused(last)
        {
            v.push(Move::Downgrade(last));
        }
        // The stranger lets go of the node it made in a lock's queue.
        if self.lock_stranger().is_some() {
            v.push(Move::StrangerReleases);
        }
        if v.is_empty() {
            v.push(Move::Tick);
        }
        // Only the last contender's caller cancels (in a scenario of
        // contenders alike, which of them creates first is the scheduler's:
        // a cancel of any is one of the last up to their names), and only
        // mid-wait: once its attempt began a wait, until it ends.
        let c = &self.cs[last];
        if left.stops > 0 && c.state == State::Acquiring && c.waited && !c.stopped && !paused(last) {
            v.push(Move::Stop(last));
        }
        // A third party creates a node in a lock's queue (not a
        // semaphore's: its stranger is `Semaphore::stranger`).
        if left.third > 0 && self.count_path.is_none() && self.mutex_path.is_none() {
            v.push(Move::Create(Foreign::Writer));
            v.push(Move::Create(Foreign::Unsequenced));
        }
        if faults > 0 {
            for (i, c) in self.cs.iter().enumerate() {
                let s = &self.zk.sessions[&c.session];
                if s.alive && s.connected {
                    v.push(Move::Drop(i));
                }
                if s.alive {
                    v.push(Move::Expire(i));
                }
                if !c.clock_out && (c.state != State::Done || c.hold.is_some()) {
                    v.push(Move::ClockOut(i));
                }
                if s.alive && c.hold.is_some() && !c.closed {
                    v.push(Move::Close(i));
                }
                if s.alive && (c.state != State::Done || c.hold.is_some()) {
                    v.push(Move::Silent(i));
                }
            }
        }
        // A third party deletes (a fault, or an act while any is left).
        if faults > 0 || left.third > 0 {
            let kids = names::queue(&self.zk.lock_children());
            let path = |k: usize| format!("{}/{}", self.lock_path, kids[k].name);
            for j in 0..kids.len() {
                v.push(Move::Delete(vec![path(j)]));
                if j > 0 {
                    v.push(Move::Delete(vec![path(j - 1), path(j)]));
                }
            }
        }
        v
    }

    /// The node the stranger may let go of (`Move::StrangerReleases`): a
    /// semaphore stranger's lease, or the writer node a third party made in
    /// a lock's queue (`Foreign::Writer`).
    fn stranger_node(&self) -> Option<String> {
        if self.zk.nodes.get(STRANGER_LEASE).is_some_and(|n| n.owner == STRANGER) {
            return Some(STRANGER_LEASE.to_string());
        }
        self.lock_stranger()
    }

    /// The writer node a third party made in a lock's queue, while it is
    /// there.
    fn lock_stranger(&self) -> Option<String> {
        self.zk
            .lock_children()
            .into_iter()
            .map(|k| format!("{}/{k}", self.lock_path))
            .find(|p| self.zk.nodes[p].owner == STRANGER && super::model::name_of(p).starts_with("x-"))
    }

    /// The stranger sends `op` on its session, and the server applies it
    /// at once (the stranger reads no answer).
    fn stranger_does(&mut self, op: super::model::Op) {
        if !self.zk.sessions.contains_key(&STRANGER) {
            self.zk.open(STRANGER, 0);
        }
        let tag = runner::Tag::Task(runner::Task::Release(self.lock_path.clone()));
        self.zk.send(STRANGER, tag, op);
        self.zk.apply(STRANGER);
        self.zk.sessions.get_mut(&STRANGER).expect("stranger").out.clear();
    }

    /// Takes move `m`, then time passes one step; the promises are checked
    /// after each.
    fn take(&mut self, m: &Move) {
        self.step += 1;
        match m {
            Move::Step(s) => self.do_step(*s),
            Move::Release(i) => self.release(*i),
            Move::Credit(i) => self.clock_credited(*i),
            Move::Tick => {},
            Move::Drop(i) => self.drop_connection(*i),
            Move::Expire(i) => self.expire(*i),
            Move::Delete(paths) => self.third_party_delete(paths),
            Move::ClockOut(i) => self.clock_runs_out(*i),
            Move::Close(i) => {
                // As the random simulator's fault: the close ends the
                // session, and the client knows.
                self.cs[*i].closed = true;
                self.trace_line(format!("FAULT close c{i}'s client (holding or releasing)"));
                self.end_session(*i);
                self.link_down(*i);
            },
            Move::Silent(i) => {
                let i = *i;
                let sid = self.cs[i].session;
                let conn = self.zk.sessions[&sid].conn;
                self.trace_line(format!(
                    "FAULT c{i} pauses: its safety clock runs out, then the server expires its session {sid:#x}"
                ));
                self.cs[i].clock_out = true;
                // As `end_session` for a contender cut off: what it is told
                // waits until it wakes.
                let tags = self.zk.drop_conn(sid);
                self.zk.expire(sid);
                let told = tags.into_iter().map(|tag| runner::Local::Fail {
                    tag,
                    failure: zklock_proto::acquire::Failure::SessionGone,
                    conn,
                });
                self.cs[i].deferred.extend(told);
                self.cs[i].deferred.push(runner::Local::SessionEnded);
            },
            Move::Wake(i) => {
                self.trace_line(format!("c{i} wakes"));
                self.link_down(*i);
                self.clock_runs_out(*i);
            },
            Move::Count => {
                let w = self.count_script[self.count_next];
                self.count_next += 1;
                self.write_count(w);
            },
            Move::Stop(i) => self.cancel(*i),
            Move::Downgrade(i) => self.downgrade(*i),
            Move::Create(kind) => {
                let (path, sequential) = match kind {
                    Foreign::Writer => (format!("{}/x-{STRANGER}-", self.lock_path), true),
                    Foreign::Unsequenced => (format!("{}/stranger", self.lock_path), false),
                };
                self.count("third party creates a node");
                self.trace_line(format!(
                    "THIRD PARTY (session {STRANGER:#x}) creates {kind:?} {}",
                    runner::short(&path)
                ));
                self.stranger_does(super::model::Op::MakeParents { path: self.lock_path.clone() });
                self.stranger_does(super::model::Op::Create { path, sequential });
            },
            Move::StrangerReleases => {
                let Some(path) = self.stranger_node() else { return };
                self.trace_line(format!("the stranger lets go of {}", runner::short(&path)));
                self.stranger_does(super::model::Op::DeleteOwned { path });
            },
        }
        self.check_step();
        self.tick_all();
        self.check_step();
        if self.violation.is_none() {
            self.violation = check::told(&self.zk, &self.cs).err();
        }
    }

    /// A hash of the state (not of the path to it), with `left` left.
    fn fingerprint(&self, left: Left) -> u64 {
        let mut h = DefaultHasher::new();
        left.hash(&mut h);
        self.count_next.hash(&mut h);
        format!("{:?}", self.zk).hash(&mut h);
        for c in &self.cs {
            let mut pending: Vec<String> = c.pending_watch.iter().map(|e| format!("{e:?}")).collect();
            pending.sort();
            format!(
                "{:?} {:?} {:?} {:?} {pending:?}",
                (
                    &c.state,
                    c.session,
                    c.last_zxid,
                    &c.inbox,
                    c.gen,
                    &c.creates,
                    &c.watchers,
                    c.awaiting_reconnect,
                    c.linger,
                    c.clock_wait,
                    c.stalled,
                    &c.retry
                ),
                (
                    &c.tasks,
                    c.seq_guess,
                    c.granted_clean,
                    c.stopped,
                    c.gave_up,
                    c.waited,
                    c.closed,
                    c.attempt_mode,
                    &c.write_held,
                    c.fed,
                    &c.mutex_held,
                    c.attempt.as_ref().map(|a| a.is_done()),
                ),
                (c.holds, &c.hold, c.hold_safe, c.hold_retry, c.clock_out, c.awaiting_clock, c.link_up, &c.deferred),
                (c.count_read, c.count_permits, c.count_unread, c.count_zxid, &c.held, c.decided_zxid, c.held_decided),
            )
            .hash(&mut h);
        }
        h.finish()
    }
}

/// Replays `path` (move indices) from the start: the world and what is
/// left of the bounds.
fn replay(scn: &Scenario, bugs: Bugs, bounds: &Bounds, path: &[u32], trace: bool) -> (World, Left) {
    let mut w = World::fixed(scn, bugs, trace);
    let mut left = Left::of(bounds);
    for k in path {
        let ms = w.moves(left);
        let m = &ms[*k as usize];
        left = left.after(m);
        w.take(m);
        if w.violation.is_some() {
            break;
        }
    }
    (w, left)
}

/// Searches every interleaving of contenders of `modes` on one lock within
/// `bounds`; stops at the first broken promise.
pub fn search(modes: &[LockMode], bugs: Bugs, bounds: &Bounds) -> Report {
    search_in(&Scenario::Locks(modes.to_vec()), bugs, bounds)
}

/// Searches every interleaving of `scn` within `bounds`; stops at the
/// first broken promise.
pub fn search_in(scn: &Scenario, bugs: Bugs, bounds: &Bounds) -> Report {
    let mut r = Report::default();
    let mut seen = HashSet::new();
    // Paths to visit, with the hash of their parent's state (a time move
    // that changes nothing is stuck).
    let mut stack: Vec<(Vec<u32>, Option<u64>)> = vec![(Vec::new(), None)];
    // The world of the state expanded last: its first child (visited
    // next) takes one move on it rather than a replay.
    let mut last: Option<(Vec<u32>, World, Left)> = None;
    while let Some((path, parent)) = stack.pop() {
        let (w, left) = match last.take() {
            Some((p, mut w, left)) if path.len() == p.len() + 1 && path.starts_with(&p) => {
                let ms = w.moves(left);
                let m = &ms[path[p.len()] as usize];
                let left = left.after(m);
                w.take(m);
                (w, left)
            },
            _ => replay(scn, bugs, bounds, &path, false),
        };
        r.max_depth = r.max_depth.max(path.len());
        let mut broken = w.violation.clone();
        let quiet = w.quiet();
        let h = w.fingerprint(left);
        if broken.is_none() && quiet {
            r.ends += 1;
            broken = check::quiescent(&w.zk, &w.cs).err();
        } else if broken.is_none() && parent == Some(h) {
            broken = Some(Violation {
                kind: "liveness",
                what: "stuck: nothing can happen, and not every contender was granted and done".to_string(),
            });
        }
        if let Some(v) = broken {
            let (w, _) = replay(scn, bugs, bounds, &path, true);
            r.found = Some((path, v, w.trace.unwrap_or_default()));
            return r;
        }
        if quiet {
            continue;
        }
        if !seen.insert(h) {
            r.pruned += 1;
            continue;
        }
        r.states += 1;
        if r.states % 20_000 == 0 && std::env::var("ZKLOCK_EXHAUSTIVE_PROGRESS").is_ok() {
            eprintln!(
                "  {} states, {} pruned, {} ends, depth {} (max {})",
                r.states,
                r.pruned,
                r.ends,
                path.len(),
                r.max_depth
            );
        }
        if path.len() >= bounds.depth {
            r.cut += 1;
            continue;
        }
        let ms = w.moves(left);
        for k in (0..ms.len()).rev() {
            let mut p = path.clone();
            p.push(k as u32);
            let tick = matches!(ms[k], Move::Tick);
            stack.push((p, tick.then_some(h)));
        }
        last = Some((path, w, left));
    }
    r
}

/// Directed cases (a schedule written out rather than searched): the
/// first move that is no fault, release or count change, again and again.
impl World {
    /// Takes the first move that is a scheduler step (or a clock's credit,
    /// or a wake) until none is left, a promise broke, `until` holds, or
    /// `limit` moves were taken; how many were.
    pub fn settle(&mut self, limit: usize, until: impl Fn(&World) -> bool) -> usize {
        let mut n = 0;
        while n < limit && self.violation.is_none() && !until(self) {
            let Some(m) = self
                .moves(Left::none())
                .into_iter()
                .find(|m| matches!(m, Move::Step(_) | Move::Credit(_) | Move::Wake(_)))
            else {
                break;
            };
            self.take(&m);
            n += 1;
        }
        n
    }

    /// Holder `i` releases (the search's release move).
    pub fn release_move(&mut self, i: usize) {
        self.take(&Move::Release(i));
    }

    /// Contender `i`'s connection drops (the search's fault; nothing if it
    /// has none).
    pub fn drop_move(&mut self, i: usize) {
        self.take(&Move::Drop(i));
    }

    /// Contender `i`'s session expires, its client told at once (the
    /// search's fault).
    pub fn expire_move(&mut self, i: usize) {
        self.take(&Move::Expire(i));
    }

    /// The stranger lets go of its lease.
    pub fn stranger_releases(&mut self) {
        self.take(&Move::StrangerReleases);
    }

    /// A third party writes the shared count (then time passes a step, the
    /// promises checked, as after any move).
    pub fn count_move(&mut self, w: CountWrite) {
        self.count_script.push(w);
        self.take(&Move::Count);
    }
}

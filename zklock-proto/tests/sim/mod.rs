//! A deterministic simulator of zklock's acquire state machine
//! (`zklock_proto::acquire::Attempt`) against a model of ZooKeeper (issue
//! 32): contenders, each a runner of attempts on its own session, under a
//! schedule of steps and faults drawn from one seed. The promises are
//! checked after every step against the model's record (see `check`); a
//! failing schedule is shrunk to a short one and printed as readable
//! steps.
//!
//! Time. A run's steps are its clock: each scheduler step is one tick of
//! model time ([`TICK`], 10 ms), and so is each tick of a `delay` fault.
//! The servers' time is `Zk::now` (in ticks). Four runs in five are
//! against an ensemble, one in five against a standalone server (see
//! `model.rs`): a leader and two followers, `tickTime` `T/2` or `T/3`
//! (the leader pings each follower every `tickTime/2`), `syncLimit` 2 to 5;
//! each session connects to a server drawn at its connect (the leader, or
//! a follower in step with it) and reconnects in time as the session layer
//! does, by its own rounds over the members (`World::reconnect_rounds`;
//! the exhaustive search reconnects at once, to a server it draws). The leader
//! expires a session once `now` reaches its last touch there plus the
//! session timeout ([`T_TICKS`] = 120 ticks, 1.2 s): a request or ping it
//! reads from a client connected to it, the session's creation or
//! revalidation (a reconnect), or a follower's report of the session's
//! activity (in its ping answers only) processed. A client connected to a
//! follower learns of the expiry when the follower applies the close.
//! Sessions expire only so, by time: when a contender is cut off from its
//! server (a `cut` fault: nothing goes either way for 0.25 to 1.5 session
//! timeouts, silently: the client learns only by its read timeout of
//! `2T/3`), stalled (a process pause: mostly 5 to 60 ticks, some 0.33 to
//! 1.5 session timeouts, half of those with a cut-off from a moment into
//! the stall; it sends and reads nothing, what it sent before is still
//! read by the server), or connected to a follower cut off from the
//! leader (a `partition` fault: 0.25 to 1.5 session timeouts; the
//! follower answers reads alone and holds writes and syncs; half of those
//! aimed at a contender's follower also stall the contender as long, a
//! host that carries both freezing) for long enough. A `lag` fault holds a
//! follower's copy of the tree (and its answers to forwarded requests)
//! back for up to `T/2`. A `leader change` fault starts a new leader that
//! gives every session a full timeout; one follower stays with the
//! deposed leader, which answers its syncs for up to [`DEPOSED_TICKS`],
//! and the reconnects that follower takes (revalidating the session
//! without a touch the new leader hears of).
//! Each client reads its own clock, which runs at a rate drawn per
//! contender within ±5 % of the server's ([`DRIFT_PER_MILLE`]): over a
//! session timeout it gains or loses at most `T/20`, less than the `T/10`
//! margin of the safety clock. A client's instants are one base
//! `Instant` plus model durations, so runs stay deterministic per seed.
//! The exhaustive search (`dfs`) stays untimed (time would multiply its
//! states): there a session expires at once by a fault, and the safety
//! clock runs out and is credited by moves of the search.

pub mod check;
pub mod dfs;
pub mod model;
pub mod peer;
pub mod runner;
pub mod schedule;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use zklock_proto::acquire::Bugs;
use zklock_proto::clock::Bugs as ClockBugs;
use zklock_proto::names::LockMode;
use zklock_proto::reconnect::{Ended, Next, Reconnect, RoundRobin};

use check::Violation;
use model::{CountWrite, Zk};
use runner::{Contender, State, Tag};
use schedule::Chooser;

/// One tick of model time: a scheduler step.
pub const TICK: Duration = Duration::from_millis(10);

/// The session timeout `T`, in ticks.
pub const T_TICKS: u64 = 120;

/// The session timeout `T` every session is granted.
pub const SESSION_TIMEOUT: Duration = Duration::from_millis(10 * T_TICKS);

/// The bound of a client clock's rate drift from the server's, per mille
/// (5 %: `T/20` over a session timeout, inside the clock's `T/10` margin).
pub const DRIFT_PER_MILLE: i64 = 50;

/// How long a deposed leader may still answer syncs after the new leader
/// started (ticks): `0.4 T`, the bound the safety clock's documentation
/// relies on (its `T/3` report lag keeps the credit at most `0.07 T` after
/// the new leader's start, inside the `T/10` margin).
pub const DEPOSED_TICKS: u64 = T_TICKS * 2 / 5;

/// A client's read timeout (`2T/3` of its own clock): with nothing read for
/// that long it gives its connection up.
pub const READ_TIMEOUT: Duration = Duration::from_millis(10 * T_TICKS * 2 / 3);

/// How long a member that takes a connect takes to answer it (ticks): the
/// round trip, and a follower's forward of the revalidation to the leader.
pub const CONNECT_TICKS: u64 = 2;

/// How long an election takes at least (ticks): ZooKeeper's
/// `finalizeWait`, 200 ms.
pub const ELECTION_TICKS: u64 = 20;

/// A reconnect in progress (timed runs): `zklock-zk`'s session layer's own
/// rounds over the ensemble's members (`RoundRobin` of `Reconnect`), the
/// model making the connections (see `World::reconnect_rounds`).
#[derive(Debug)]
pub struct Rounds {
    rr: RoundRobin<Reconnect>,
    /// The attempt in progress: its member, until when it waits and when
    /// its connect went (the client's clock), and the tick it went at.
    attempt: Option<(usize, Instant, Instant, u64)>,
    /// The pause between two rounds ends then (the client's clock).
    pause: Option<Instant>,
    /// A deposed leader answered "expired" in this reconnect.
    heard_expired: bool,
}

/// How long after it was sent the server reads a heartbeat or ping at the
/// latest, unless a lock request is ahead of it (ticks): the network's
/// one-way delay for them (lock requests wait for the scheduler).
pub const LATENCY: u64 = 5;

/// The instant a client whose clock runs `rate` per mille fast reads at
/// server time `ticks`.
pub fn client_time(base: Instant, ticks: u64, rate: i64) -> Instant {
    let nanos = (ticks as i128) * (TICK.as_nanos() as i128) * (1000 + rate as i128) / 1000;
    base + Duration::from_nanos(nanos as u64)
}

/// The lock kinds a scenario is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Exclusive locks.
    Exclusive,
    /// Readers and writers of one read/write lock.
    ReadWrite,
    /// Leader election participants.
    Leader,
    /// Leases of a semaphore with 1 or 2 permits (`/app/sem/leases`), each
    /// attempt behind the semaphore's mutex (an exclusive lock of nodes
    /// under `/app/sem/locks`); in half the runs the permits come from a
    /// shared count (`/app/sem/count`, 1 or 2 at the start) that a fault
    /// changes (`World::count_fault`) and that ends 1 or 2 when the faults
    /// stop (so that every contender can be granted).
    Lease,
    /// Locks on two paths (`/app/lock`, exclusive; `/app/lock2`, exclusive,
    /// or a read/write lock in half the scenarios) and in half the
    /// scenarios a third (`/app/lock3`, exclusive): half the contenders
    /// multi-locks of the first two, and of the third in half of those
    /// (`runner::Multi`: the members taken in byte order, all or none, the
    /// second as a reader or a writer on a read/write lock), the others
    /// each a lock of one of them (a Curator-like peer in a quarter of
    /// those on an exclusive lock). Drawn only
    /// when asked for (`Opts::kind`), so that the other kinds' seeds
    /// replay as they were.
    Multi,
}

/// What a run may draw beyond its choices.
#[derive(Clone, Copy, Debug, Default)]
pub struct Opts {
    /// The bugs switched on in every attempt.
    pub bugs: Bugs,
    /// The bugs switched on in every contender's safety clock.
    pub clock_bugs: ClockBugs,
    /// The bugs switched on in every contender's reconnect rounds.
    pub reconnect_bugs: zklock_proto::reconnect::Bugs,
    /// Only scenarios of this kind.
    pub kind: Option<Kind>,
    /// Some scenarios answer a downgrade's transaction without its
    /// create's Stat (as some releases do); `explore` sets it unless
    /// `ZKLOCK_SIM_STATLESS=0`.
    pub statless_multi: bool,
    /// Some scenarios answer plain creates without their Stat too (no
    /// release does: it reaches the same path of the machine more often).
    pub statless_create: bool,
    /// Wrong rules of the runners' shared count switched on.
    pub count_bugs: runner::CountBugs,
    /// A third party never replaces a node by one of the same name
    /// (`World::third_party_replace`): its draw is skipped, so that seeds
    /// found before that fault came replay as they were
    /// (`ZKLOCK_SIM_NO_REPLACE=1`).
    pub no_replace: bool,
    /// Every other multi-lock contender takes its members in the other
    /// order (what `MultiLock::new`'s sort prevents: outside attack round
    /// 43, F1, two sets over the same nodes through a chroot and the root
    /// took them in opposite orders and waited for each other).
    pub multi_unsorted: bool,
    /// The multi-lock runners do not watch their members' losses while
    /// reads are out or a member is waited for (zklock-core before outside
    /// attack round 45; `runner::World::call_lost`): to replay the bugs
    /// found before that watch, which it also covers.
    pub multi_unwatched: bool,
}

impl Opts {
    /// The environment that replays a seed with these options.
    pub fn replay_env(&self, seed: u64) -> String {
        let mut env = Vec::new();
        if self.statless_create {
            env.push("ZKLOCK_SIM_STATLESS=1".to_string());
        } else if !self.statless_multi {
            env.push("ZKLOCK_SIM_STATLESS=0".to_string());
        }
        let b = self.bugs;
        for (on, name) in [
            (b.grant_on_silent_watch, "grant_on_silent_watch"),
            (b.grant_on_notice, "grant_on_notice"),
            (b.no_linger, "no_linger"),
            (b.ignore_mutex_lost, "ignore_mutex_lost"),
            (b.close_is_loss, "close_is_loss"),
            (b.downgrade_without_check, "downgrade_without_check"),
            (b.list_without_probe, "list_without_probe"),
            (b.release_trusts_any_read, "release_trusts_any_read"),
            (b.multi_without_reads, "multi_without_reads"),
            (b.multi_fails_suspended, "multi_fails_suspended"),
            (b.multi_unanswered_fails, "multi_unanswered_fails"),
            (b.multi_waits_in_order, "multi_waits_in_order"),
            (b.multi_reads_ignore_stop, "multi_reads_ignore_stop"),
            (b.multi_rereads_wait_unchecked, "multi_rereads_wait_unchecked"),
            (b.multi_waits_unwatched, "multi_waits_unwatched"),
            (b.multi_takes_unwatched, "multi_takes_unwatched"),
            (self.clock_bugs.credit_on_answer, "credit_on_answer"),
            (self.clock_bugs.no_report_lag, "no_report_lag"),
            (self.clock_bugs.credit_reads, "credit_reads"),
            (self.clock_bugs.connect_unconfirmed, "connect_unconfirmed"),
            (self.reconnect_bugs.no_stall_grace, "no_stall_grace"),
            (self.count_bugs.keep_on_failure, "keep_count_on_failure"),
            (self.count_bugs.no_hold_back, "count_no_hold_back"),
            (self.count_bugs.fail_on_lost_read, "count_fail_on_lost_read"),
            (self.multi_unsorted, "multi_unsorted"),
            (self.multi_unwatched, "multi_unwatched"),
        ] {
            if on {
                env.push(format!("ZKLOCK_SIM_BUG={name}"));
            }
        }
        if let Some(k) = self.kind {
            env.push(format!("ZKLOCK_SIM_KIND={k:?}"));
        }
        if self.no_replace {
            env.push("ZKLOCK_SIM_NO_REPLACE=1".to_string());
        }
        env.push(format!("ZKLOCK_SIM_SEED={seed}"));
        env.join(" ")
    }
}

/// Everything one run is made of.
pub struct World {
    /// The server.
    pub zk: Zk<Tag>,
    /// The contenders.
    pub cs: Vec<Contender>,
    /// The scheduler's choices.
    pub ch: Chooser,
    /// Uuids of new attempts (deterministic from the seed).
    pub uuids: fastrand::Rng,
    /// Faults may still come.
    pub faults: bool,
    /// The bugs switched on in every attempt.
    pub bugs: Bugs,
    /// Readable steps, when kept.
    pub trace: Option<Vec<String>>,
    /// The first broken promise.
    pub violation: Option<Violation>,
    /// The last session id handed out.
    pub next_session: i64,
    /// Steps so far.
    pub step: u64,
    /// The lock path.
    pub lock_path: String,
    /// Where in the chooser's log each step began.
    pub step_starts: Vec<usize>,
    /// How often each interesting thing happened.
    pub counts: BTreeMap<&'static str, u64>,
    /// The semaphore's mutex path (Lease scenarios).
    pub mutex_path: Option<String>,
    /// The other locks' paths (Multi scenarios: `/app/lock2`, an
    /// exclusive or a read/write lock, and in half of them `/app/lock3`).
    pub other_paths: Vec<String>,
    /// The multi-lock runners watch their members' losses
    /// (`Opts::multi_unwatched`).
    pub multi_watch: bool,
    /// Uuids from the contender and its attempt number rather than the
    /// seed (the exhaustive search), and fed events hashed.
    pub fixed_uuids: bool,
    /// Percent of clock checks that say "not safe" (untimed runs).
    pub clock_unsafe: u32,
    /// Time passes (see the module documentation): sessions expire by
    /// time, contenders run the safety clock. The exhaustive search is
    /// untimed.
    pub timed: bool,
    /// Every client clock's instant at tick 0.
    pub base: Instant,
    /// The bugs switched on in every contender's safety clock.
    pub clock_bugs: ClockBugs,
    /// The bugs switched on in every contender's reconnect rounds.
    pub reconnect_bugs: zklock_proto::reconnect::Bugs,
    /// The exhaustive search's holders (untimed): a holder releases only
    /// when the search's release move says so (`runner::World::release`),
    /// not after a countdown.
    pub release_moves: bool,
    /// A semaphore whose permits come from a shared count: the count node
    /// (Lease scenarios with one; see `model::Zk::set_count`).
    pub count_path: Option<String>,
    /// Wrong rules of the runners' shared count, switched on.
    pub count_bugs: runner::CountBugs,
    /// The exhaustive search's changes of the shared count, in order: a
    /// move of the search writes the next one (`dfs`).
    pub count_script: Vec<CountWrite>,
    /// How many of `count_script` were written.
    pub count_next: usize,
    /// A semaphore's stranger never lets go of its lease (`dfs`).
    pub stranger_stays: bool,
    /// Sessions whose clients gave them up (their reconnects did) while
    /// the leader still had them: it expires them by time.
    pub abandoned: Vec<model::SessionId>,
    /// A leader change whose deposed leader stalled: it starts at the
    /// tick given (see `World::leader_change`).
    pub stalled_change: Option<StalledChange>,
    /// Nodes a third party replaced by a stranger's node of the same name
    /// (`World::third_party_replace`), and the tick at which it deletes
    /// its own again.
    pub replaced: Vec<(String, u64)>,
    /// Whether a third party may replace a node (`Opts::no_replace`).
    pub replace: bool,
}

/// How a run went.
pub struct Outcome {
    /// The broken promise, if any.
    pub violation: Option<Violation>,
    /// The choices it consumed.
    pub choices: Vec<u32>,
    /// Steps taken.
    pub steps: u64,
    /// Where in `choices` each step began.
    pub step_starts: Vec<usize>,
    /// How often each interesting thing happened.
    pub counts: BTreeMap<&'static str, u64>,
    /// Readable steps, when asked for.
    pub trace: Vec<String>,
    /// The number of choices made when the faults stopped (the quiet tail's
    /// choices follow).
    pub fault_end: usize,
    /// Steps taken when the faults stopped.
    pub fault_steps: u64,
}

impl Outcome {
    /// The run as the shrinker sees it; for a liveness failure only its
    /// fault phase: the quiet tail's choices are dropped (replayed as zeros,
    /// the first step that can make progress), so shrinking spends its
    /// time on the faults, not on thousands of quiet steps.
    fn failing(self, liveness: bool) -> schedule::Failing {
        let mut f = schedule::Failing { choices: self.choices, step_starts: self.step_starts };
        if liveness {
            // Trailing zeros read the same as none: a shorter list.
            let end = f.choices[..self.fault_end].iter().rposition(|c| *c != 0).map_or(0, |p| p + 1);
            f.choices.truncate(end);
            f.step_starts.retain(|s| *s < end);
        }
        f
    }
}

/// A scheduler step.
#[derive(Clone, Copy, Debug)]
enum Step {
    Apply(usize),
    Deliver(usize),
    Reconnect(usize),
    NewSession(usize),
}

impl World {
    /// Draws a scenario from the chooser: its kind, contenders and model
    /// switches (choice 0 everywhere is the plainest).
    fn new(mut ch: Chooser, seed: u64, opts: Opts, trace: bool) -> World {
        let k = ch.choose(4);
        let kind = opts.kind.unwrap_or([Kind::Exclusive, Kind::ReadWrite, Kind::Leader, Kind::Lease][k]);
        // Multi-locks: a second lock, a read/write lock in half the
        // scenarios, and in half of them a third (exclusive).
        let (second_path, rw_second, third_path) = match kind {
            Kind::Multi => (Some("/app/lock2".to_string()), ch.roll(50), ch.roll(50).then(|| "/app/lock3".to_string())),
            _ => (None, false, None),
        };
        // Half the semaphores take their permits from a shared count (a
        // draw only for them: the other kinds' seeds are as before).
        let shared = kind == Kind::Lease && ch.roll(50);
        let lock_path = if kind == Kind::Lease { "/app/sem/leases" } else { "/app/lock" }.to_string();
        let stat_on_create = !ch.roll(20) || !opts.statless_create;
        let stat_in_multi = !ch.roll(30) || !opts.statless_multi;
        // The session layer sets watches again on reconnect (SetWatches):
        // without it a waiting attempt, told of nothing, waits forever.
        let set_watches = true;
        let clock_unsafe = ch.between(0, 10);
        let mut zk = Zk::new(&lock_path, stat_on_create, stat_in_multi, set_watches);
        // An ensemble: the leader and two followers (one run in five a
        // standalone server); tickTime T/2 or T/3, syncLimit 2 to 5.
        let followers = if ch.roll(20) { 0 } else { 2 };
        let tick_time = [T_TICKS / 2, T_TICKS / 3][ch.choose(2)];
        let sync_limit = u64::from(ch.between(2, 5));
        zk.add_followers(followers, tick_time, sync_limit);
        let mutex_path = (kind == Kind::Lease).then(|| "/app/sem/locks".to_string());
        zk.tracked.extend(mutex_path.clone());
        zk.tracked.extend(second_path.clone());
        zk.tracked.extend(third_path.clone());
        let sem_permits = 1 + ch.choose(2);
        // The shared count, made before anything runs (the followers
        // start with it): as many permits as a fixed semaphore's.
        let count_path = shared.then(|| "/app/sem/count".to_string());
        if let Some(p) = &count_path {
            zk.set_count(p, CountWrite::Value(sem_permits as i32));
            zk.settle();
        }
        let n = 2 + ch.choose(3);
        let mut cs = Vec::new();
        // Multi-locks with a member taken on a client of its own.
        let mut member_clients = Vec::new();
        for i in 0..n {
            let sid = 0x100 + i as i64;
            let servers = zk.servers_for(None);
            zk.open(sid, servers[ch.choose(servers.len())]);
            let read_or_write = |ch: &mut Chooser| if ch.choose(2) == 0 { LockMode::Write } else { LockMode::Read };
            let (mut mode, permits) = match kind {
                Kind::Exclusive | Kind::Multi => (LockMode::Exclusive, 1),
                Kind::ReadWrite => (read_or_write(&mut ch), 1),
                Kind::Leader => (LockMode::Leader, 1),
                Kind::Lease => (LockMode::Lease, sem_permits),
            };
            let try_once = ch.roll(20);
            // A multi-lock of both paths (and sometimes the third), or a
            // lock of one of them.
            let (multi, path) = match &second_path {
                Some(second) => match ch.choose(4) {
                    0 | 1 => (true, lock_path.clone()),
                    2 => (false, lock_path.clone()),
                    _ => match &third_path {
                        Some(third) if ch.roll(50) => (false, third.clone()),
                        _ => (false, second.clone()),
                    },
                },
                None => (false, lock_path.clone()),
            };
            if rw_second && !multi && Some(&path) == second_path.as_ref() {
                mode = read_or_write(&mut ch);
            }
            // Half the multi-locks take a member on a client of its own
            // (`runner::Contender::coordinator`).
            let two_clients = multi && ch.roll(50);
            // Curator-like peers share exclusive locks' queues.
            let peer =
                matches!(kind, Kind::Exclusive | Kind::Multi) && mode == LockMode::Exclusive && !multi && ch.roll(25);
            let mut c = Contender::new(i, mode, permits, try_once && !peer && !multi, peer, sid, &path);
            c.mutex_path = mutex_path.clone();
            if let (true, Some(second)) = (multi, &second_path) {
                // Each member's mode: the second's read or write on a
                // read/write lock.
                let second_mode = if rw_second { read_or_write(&mut ch) } else { LockMode::Exclusive };
                let mut members = vec![(lock_path.clone(), LockMode::Exclusive), (second.clone(), second_mode)];
                if let Some(third) = third_path.as_ref().filter(|_| ch.roll(50)) {
                    members.push((third.clone(), LockMode::Exclusive));
                }
                members.sort_by(|a, b| a.0.cmp(&b.0));
                if opts.multi_unsorted && i % 2 == 1 {
                    members.reverse();
                }
                let n = members.len();
                c.multi = Some(runner::Multi::new(members, vec![i; n]));
                if two_clients {
                    member_clients.push(i);
                }
            }
            c.rate = drift(&mut ch);
            cs.push(c);
        }
        // Their members' clients: contenders of their own (a session, its
        // server, its clock's drift) that take only what the multi-lock's
        // calls give them. Which member (in the order the call takes
        // them: the first, a later one, the last) goes by the seed and the
        // contender, not by a draw (the scenarios' other draws stay).
        for k in member_clients {
            let j = cs.len();
            let sid = 0x100 + j as i64;
            let servers = zk.servers_for(None);
            zk.open(sid, servers[ch.choose(servers.len())]);
            let Some(mu) = cs[k].multi.as_ref() else { continue };
            let own = (seed as usize).wrapping_add(k) % mu.paths.len();
            let (member, mode) = (mu.paths[own].clone(), mu.modes[own]);
            let mut c = Contender::new(j, mode, 1, false, false, sid, &member);
            c.rate = drift(&mut ch);
            c.coordinator = Some(k);
            c.state = State::Done;
            // (Granted when its multi-lock is.)
            c.granted_clean = true;
            c.multi = cs[k].multi.as_ref().map(|mu| {
                let members = mu.paths.iter().cloned().zip(mu.modes.iter().copied()).collect();
                let mut clients = vec![k; mu.paths.len()];
                clients[own] = j;
                runner::Multi::new(members, clients)
            });
            if let Some(m) = cs[k].multi.as_mut() {
                m.clients[own] = j;
            }
            cs.push(c);
        }
        let n = cs.len();
        let mut w = World {
            zk,
            cs,
            ch,
            uuids: fastrand::Rng::with_seed(seed),
            faults: true,
            bugs: opts.bugs,
            trace: trace.then(Vec::new),
            violation: None,
            next_session: 0x100 + n as i64,
            step: 0,
            lock_path,
            clock_unsafe,
            mutex_path,
            other_paths: second_path.into_iter().chain(third_path).collect(),
            multi_watch: !opts.multi_unwatched,
            fixed_uuids: false,
            step_starts: Vec::new(),
            counts: BTreeMap::new(),
            timed: true,
            base: Instant::now(),
            clock_bugs: opts.clock_bugs,
            reconnect_bugs: opts.reconnect_bugs,
            release_moves: false,
            count_path,
            count_bugs: opts.count_bugs,
            count_script: Vec::new(),
            count_next: 0,
            stranger_stays: false,
            abandoned: Vec::new(),
            stalled_change: None,
            replaced: Vec::new(),
            replace: !opts.no_replace,
        };
        for i in 0..w.cs.len() {
            w.connected(i, true);
        }
        let desc: Vec<String> =
            w.cs.iter()
                .enumerate()
                .map(|(i, c)| {
                    let what = match (&c.multi, c.coordinator) {
                        (Some(_), Some(k)) => format!("member client of c{k}"),
                        (Some(mu), None) => {
                            let members: Vec<String> =
                                mu.paths.iter().zip(&mu.modes).map(|(p, m)| format!("{m:?}@{p}")).collect();
                            match mu.clients.iter().position(|&k| k != i) {
                                Some(m) => format!("multi{members:?} (member {m} on c{})", mu.clients[m]),
                                None => format!("multi{members:?}"),
                            }
                        },
                        (None, _) if c.path != w.lock_path => format!("{:?}@{}", c.mode, c.path),
                        (None, _) => format!("{:?}", c.mode),
                    };
                    format!("{}:{what}{} rate{:+}‰", c.name, if c.try_once { "(try)" } else { "" }, c.rate)
                })
                .collect();
        if let Some(t) = &mut w.trace {
            let servers: Vec<String> =
                w.cs.iter().map(|c| format!("{}@s{}", c.name, w.zk.sessions[&c.session].server)).collect();
            t.push(format!(
                "scenario {kind:?}{} {} stat_on_create={stat_on_create} set_watches={set_watches} clock_unsafe={clock_unsafe}% \
                 followers={followers} tickTime={tick_time} syncLimit={sync_limit} servers {}",
                match (kind, shared) {
                    (Kind::Lease, false) => format!(" permits={sem_permits}"),
                    (Kind::Lease, true) => format!(" shared count={sem_permits}"),
                    _ => String::new(),
                },
                desc.join(" "),
                servers.join(" ")
            ));
        }
        w
    }

    /// One fault, chosen.
    fn fault(&mut self) {
        let n = self.cs.len();
        let i = self.ch.choose(n);
        match self.ch.choose(11) {
            0 => {
                let i = self.aim(i);
                self.stall(i);
            },
            1 => self.drop_connection(i),
            2 => {
                let i = self.aim(i);
                self.cut(i);
            },
            3 => {
                // Once per attempt: a second Stop while it lingers would end
                // the linger at once (the caller stops an acquire once).
                if self.cs[i].state == State::Acquiring
                    && self.cs[i].stalled == 0
                    && !self.cs[i].stopped
                    && !self.cs[i].peer
                    && self.cs[i].coordinator.is_none()
                {
                    // Sometimes because the client is closed: nothing is
                    // waited for, and its session ends right after.
                    let closed = self.ch.roll(20);
                    // A multi-lock's member may be taken on another client
                    // (not closed).
                    let j = match self.cs[i].multi.as_ref().and_then(|mu| mu.acquiring) {
                        Some(m) => self.client_of(i, m),
                        None => i,
                    };
                    let closed = closed && j == i;
                    // Unless the call already stopped it for a loss (an
                    // attempt is stopped once).
                    let stopped_for_loss = self.cs[j].stopped;
                    self.cs[i].stopped = true;
                    self.cs[i].closed = closed;
                    self.count(if closed { "fault: client closed" } else { "fault: attempt stopped" });
                    self.trace_line(format!(
                        "FAULT stop c{i}'s attempt{}",
                        if closed { " (client closed)" } else { "" }
                    ));
                    // A multi-lock's caller cancels the call: its machine is
                    // told, and so is the member's attempt that runs.
                    let member_runs = self.cs[i].multi.as_ref().is_none_or(|mu| mu.acquiring.is_some());
                    if self.cs[i].multi.is_some() {
                        self.feed_call(i, zklock_proto::multi::Event::Cancelled);
                        // Reads out or a member waited for: the call ends
                        // at once (outside attack round 43, F3, F4, F6).
                        if !member_runs && self.cs[i].multi.as_ref().is_some_and(|mu| mu.call.is_some()) {
                            self.violation.get_or_insert(check::Violation {
                                kind: "multi cancel",
                                what: format!(
                                    "c{i}'s call went on after a cancel while its reads were out or it waited"
                                ),
                            });
                        }
                    }
                    if member_runs && !stopped_for_loss {
                        self.stop_attempt(j, closed);
                    }
                    if closed {
                        self.end_session(i);
                        // The client closed it: it knows.
                        self.link_down(i);
                    }
                } else if self.cs[i].has_hold() && self.cs[i].stalled == 0 && self.ch.roll(30) {
                    // The client is closed while it holds, or while its
                    // release is on its way.
                    self.cs[i].closed = true;
                    self.count("fault: client closed while holding");
                    self.trace_line(format!("FAULT close c{i}'s client (holding or releasing)"));
                    self.end_session(i);
                    self.link_down(i);
                }
            },
            4 | 5 => {
                // A semaphore's mutex nodes too.
                let parent = match (&self.mutex_path, self.other_paths.as_slice()) {
                    (Some(m), _) if self.ch.choose(2) == 1 => m.clone(),
                    (None, [second]) if self.ch.choose(2) == 1 => second.clone(),
                    // (Two other locks: each in a third of the draws.)
                    (None, others @ [_, _]) => match self.ch.choose(3) {
                        0 => self.lock_path.clone(),
                        k => others[k - 1].clone(),
                    },
                    _ => self.lock_path.clone(),
                };
                let kids = zklock_proto::names::queue(&self.zk.children_of(&parent));
                if kids.is_empty() {
                    return;
                }
                let j = self.ch.choose(kids.len());
                let path = |k: usize| format!("{parent}/{}", kids[k].name);
                // Sometimes (a lock's writer node, timed runs) a third party
                // makes a node of the same name in the same transaction.
                if self.timed
                    && self.replace
                    && parent == self.lock_path
                    && kids[j].kind != zklock_proto::names::NodeKind::Reader
                    && self.ch.roll(25)
                {
                    self.third_party_replace(&path(j));
                    return;
                }
                let paths = if self.ch.choose(2) == 0 || j == 0 { vec![path(j)] } else { vec![path(j - 1), path(j)] };
                self.third_party_delete(&paths);
            },
            6 => {
                if self.zk.reap() {
                    self.count("fault: container reaped");
                    self.trace_line("FAULT containers reaped".to_string());
                }
            },
            8 => self.partition(i),
            9 => {
                if !self.zk.followers.is_empty() {
                    let f = self.ch.choose(self.zk.followers.len());
                    let d = u64::from(self.ch.between(1, (T_TICKS / 2) as u32));
                    let now = self.zk.now;
                    let fl = &mut self.zk.followers[f];
                    fl.lag_until = fl.lag_until.max(now + d);
                    self.count("fault: follower lags");
                    self.trace_line(format!("FAULT follower s{} applies nothing for {d} ticks", f + 1));
                }
            },
            10 => self.leader_change(i),
            7 if self.count_path.is_some() => self.count_fault(),
            _ => {
                let d = self.ch.between(1, 10);
                self.trace_line(format!("FAULT delay {d} steps"));
                for _ in 0..d {
                    self.pass_tick();
                }
            },
        }
    }

    /// A third party changes the shared count: one more or one less, 0,
    /// negative (0 permits), another count, or makes it unreadable (gone,
    /// not a count: an acquire that reads it so fails).
    fn count_fault(&mut self) {
        let now = self.zk.permits_at(self.zk.zxid) as i32;
        let w = match self.ch.choose(7) {
            0 => CountWrite::Value((now + 1).min(3)),
            1 => CountWrite::Value((now - 1).max(0)),
            2 => CountWrite::Value(0),
            3 => CountWrite::Value(-1),
            4 => CountWrite::Delete,
            5 => CountWrite::Garbage,
            _ => CountWrite::Value(1 + self.ch.choose(2) as i32),
        };
        self.write_count(w);
    }

    /// A third party writes `w` to the shared count.
    fn write_count(&mut self, w: CountWrite) {
        let Some(path) = self.count_path.clone() else { return };
        if self.zk.set_count(&path, w) {
            self.count("fault: shared count changed");
            self.trace_line(format!("FAULT a third party writes the shared count: {w:?} (zxid {})", self.zk.zxid));
        }
    }

    /// A follower is cut off from the leader for 0.25 to 1.5 session
    /// timeouts (half the time the follower of a holder, contender `i`
    /// if it holds): it answers its clients' reads alone, their writes
    /// and syncs wait, the leader hears none of its reports.
    fn partition(&mut self, i: usize) {
        let Some(Cut { i, at, f, d }) = self.cut_target(i) else { return };
        let now = self.zk.now;
        let fl = &mut self.zk.followers[f];
        fl.cut_from = now;
        fl.cut_until = now + d;
        self.count("fault: follower cut off from the leader");
        self.trace_line(format!(
            "FAULT follower s{} cut off from the leader for {d} ticks (until t={})",
            f + 1,
            now + d
        ));
        // Half the time, contender `i` on that follower stalls as long: a
        // host or rack that carries both freezes.
        if at == f + 1 && self.cs[i].stalled == 0 && self.ch.roll(50) {
            self.cs[i].stalled = d as u32;
            self.count("fault: host of a contender and its follower freezes");
            self.trace_line(format!("FAULT ... and c{i} stalls as long (their host froze)"));
        }
    }

    /// The leader changes: a new one starts now (see `Zk::leader_change`);
    /// a follower (half the time contender `i`'s, aimed as a partition is)
    /// stays with the deposed leader, cut off from the new one for 0.25 to
    /// 1.5 session timeouts, and the deposed leader answers its syncs for up
    /// to [`DEPOSED_TICKS`] more (half the time that long).
    ///
    /// Half the time the leader stalls instead (a GC pause, SIGSTOP),
    /// freezing with that follower (their clients hear nothing: cut off as
    /// long); the others elect a new leader only once they gave up on it,
    /// `syncLimit` ticks of `tickTime` and an election (at least
    /// `finalizeWait`, 200 ms) later, and the deposed leader runs again a
    /// quarter to a whole session timeout after that and answers for a
    /// moment (outside attack round 33, F2). The contender it was aimed at,
    /// if it is on that follower, names only that member half the time (as
    /// the holder of round 33 did), so that it reconnects there when its
    /// connection goes silent.
    fn leader_change(&mut self, i: usize) {
        if self.stalled_change.is_some() {
            return;
        }
        let stalled = self.timed && self.ch.roll(50);
        let Some(Cut { i, at, f, d }) =
            stalled.then(|| self.holder_on_follower()).flatten().or_else(|| self.cut_target(i))
        else {
            return;
        };
        // Half the time the worst case: the whole `DEPOSED_TICKS`.
        let ghost = if self.ch.roll(50) { DEPOSED_TICKS } else { u64::from(self.ch.between(0, DEPOSED_TICKS as u32)) };
        if !stalled {
            self.zk.leader_change(f, d, ghost, 0, true);
            self.count("fault: leader change");
            self.trace_line(format!(
                "FAULT leader change: a new leader starts; follower s{} stays with the deposed one for {d} ticks, \
                 which answers its syncs for {ghost}",
                f + 1
            ));
            return;
        }
        let elected = self.zk.sync_limit * self.zk.tick_time + ELECTION_TICKS;
        let stall = u64::from(self.ch.between((T_TICKS / 4) as u32, T_TICKS as u32));
        let now = self.zk.now;
        self.zk.freeze_follower(f);
        self.stalled_change = Some(StalledChange { at: now + elected, f, d, ghost, stall });
        self.count("fault: leader change: the deposed leader stalled");
        self.trace_line(format!(
            "FAULT the leader stalls with follower s{}: a new leader in {elected} ticks, the old one runs again \
             {stall} after that",
            f + 1
        ));
        for j in 0..self.cs.len() {
            let s = &self.zk.sessions[&self.cs[j].session];
            if s.alive && s.connected && s.server == f + 1 && !self.is_cut(j) {
                self.cut_for(j, elected + stall);
            }
        }
        let connected = self.zk.sessions[&self.cs[i].session].connected;
        if at == f + 1 && connected && self.ch.roll(50) {
            self.cs[i].only = Some(at);
            self.cs[i].rounds = None;
            self.count("fault: leader change: its contender names only that member");
            self.trace_line(format!("FAULT ... and c{i} names only s{at}"));
        }
    }

    /// A contender that holds the lock on a follower not cut off (if any),
    /// with that follower and a time drawn as `cut_target` draws it.
    fn holder_on_follower(&mut self) -> Option<Cut> {
        let on: Vec<(usize, usize)> = (0..self.cs.len())
            .filter(|&j| matches!(self.cs[j].state, State::Holding { .. }))
            .map(|j| (j, self.zk.sessions[&self.cs[j].session].server))
            .filter(|&(_, at)| at > 0 && !self.zk.followers[at - 1].is_cut(self.zk.now))
            .collect();
        if on.is_empty() {
            return None;
        }
        let (i, at) = on[self.ch.choose(on.len())];
        let d = u64::from(self.ch.between((T_TICKS / 4) as u32, (T_TICKS * 3 / 2) as u32));
        Some(Cut { i, at, f: at - 1, d })
    }

    /// Which follower a partition or a leader change cuts off, and for how
    /// long (0.25 to 1.5 session timeouts): half the time the follower of
    /// contender `i` (aimed as a stall is), else any; `None` without
    /// followers or when that one is cut off already.
    fn cut_target(&mut self, i: usize) -> Option<Cut> {
        if self.zk.followers.is_empty() {
            return None;
        }
        let i = self.aim(i);
        let at = self.zk.sessions[&self.cs[i].session].server;
        let f = if at > 0 && self.ch.roll(50) { at - 1 } else { self.ch.choose(self.zk.followers.len()) };
        if self.zk.followers[f].is_cut(self.zk.now) {
            return None;
        }
        let d = u64::from(self.ch.between((T_TICKS / 4) as u32, (T_TICKS * 3 / 2) as u32));
        Some(Cut { i, at, f, d })
    }

    /// In timed runs, half of the stalls and cut-offs are aimed at a
    /// contender that holds the lock (if any; else `i`): the promise that a
    /// holder learns it may have lost the lock is at stake there.
    fn aim(&mut self, i: usize) -> usize {
        if !self.timed || !self.ch.roll(50) {
            return i;
        }
        let holders: Vec<usize> =
            (0..self.cs.len()).filter(|&j| matches!(self.cs[j].state, State::Holding { .. })).collect();
        if holders.is_empty() {
            return i;
        }
        holders[self.ch.choose(holders.len())]
    }

    /// Contender `i`'s connection drops (if it has one; a connection cut
    /// off carries no reset): everything not answered fails as unknown.
    fn drop_connection(&mut self, i: usize) {
        let sid = self.cs[i].session;
        let s = &self.zk.sessions[&sid];
        if s.alive && s.connected && !self.is_cut(i) {
            let conn = s.conn;
            self.count("fault: connection dropped");
            self.trace_line(format!("FAULT drop c{i}'s connection {conn}"));
            for tag in self.zk.drop_conn(sid) {
                self.cs[i].inbox.push_back(runner::Local::Fail {
                    tag,
                    failure: zklock_proto::acquire::Failure::Unknown,
                    conn,
                });
            }
            self.link_down(i);
        }
    }

    /// Contender `i` is cut off from the server (timed runs; an untimed
    /// run expires its session instead): for a drawn time nothing goes
    /// either way, but what the server had queued for it before (already
    /// on its way) still arrives. Its client learns only by its read
    /// timeout; the server expires the session if the cut lasts.
    fn cut(&mut self, i: usize) {
        if !self.timed {
            self.expire(i);
            return;
        }
        if self.is_cut(i) {
            return;
        }
        let d = u64::from(self.ch.between((T_TICKS / 4) as u32, (T_TICKS * 3 / 2) as u32));
        self.cut_for(i, d);
    }

    /// Cuts contender `i` off for `d` ticks from now (see `cut`).
    fn cut_for(&mut self, i: usize, d: u64) {
        let sid = self.cs[i].session;
        let queued = self.zk.sessions[&sid].out.len();
        let c = &mut self.cs[i];
        c.cut_from = self.zk.now;
        c.cut_until = self.zk.now + d;
        c.cut_readable = queued;
        self.count("fault: cut off");
        self.trace_line(format!("FAULT cut c{i} off for {d} ticks (until t={})", self.zk.now + d));
    }

    /// Whether contender `i` is cut off from the server now.
    pub fn is_cut(&self, i: usize) -> bool {
        (self.cs[i].cut_from..self.cs[i].cut_until).contains(&self.zk.now)
    }

    /// Contender `i`'s session expires (if alive): at once (the
    /// exhaustive search's fault).
    fn expire(&mut self, i: usize) {
        let sid = self.cs[i].session;
        if self.zk.sessions[&sid].alive {
            self.count("fault: session expired");
            self.trace_line(format!("FAULT expire c{i}'s session {sid:#x}"));
            self.end_session(i);
        }
    }

    /// A third party deletes `paths` in one transaction (if all exist).
    fn third_party_delete(&mut self, paths: &[String]) {
        if self.zk.third_party_delete(paths) {
            let s: Vec<String> = paths.iter().map(|p| runner::short(p)).collect();
            self.count(if paths.len() == 1 {
                "fault: third party deletes a node"
            } else {
                "fault: third party multi deletes two"
            });
            self.trace_line(format!("FAULT third party deletes {} in one transaction", s.join(" + ")));
        }
    }

    /// A third party deletes `path` and makes a node of the same name of its
    /// own (the stranger's: it holds the lock if it sorts first) in one
    /// transaction, and deletes that one again 10 ticks to a session
    /// timeout later. Whoever deletes the newcomer having been told (a
    /// notification of the delete, or a read showing the stranger's node)
    /// breaks the promise never to delete someone else's node
    /// (`check::deletes`); one that deleted it before any word of the
    /// change reached it is the documented window of an at-once delete.
    fn third_party_replace(&mut self, path: &str) {
        if self.zk.third_party_replace(path, check::STRANGER) {
            let until = self.zk.now + u64::from(self.ch.between(10, T_TICKS as u32));
            self.replaced.push((path.to_string(), until));
            self.count("fault: third party replaces a node");
            self.trace_line(format!(
                "FAULT third party replaces {} by a stranger's node of the same name until t={until}",
                runner::short(path)
            ));
        }
    }

    /// The stranger deletes the nodes it made whose time is up.
    fn end_replacements(&mut self) {
        let now = self.zk.now;
        let (due, keep): (Vec<_>, Vec<_>) = self.replaced.drain(..).partition(|(_, until)| *until <= now);
        self.replaced = keep;
        for (path, _) in due {
            if self.zk.nodes.get(&path).is_some_and(|n| n.owner == check::STRANGER)
                && self.zk.third_party_delete(std::slice::from_ref(&path))
            {
                self.trace_line(format!("the stranger deletes its {}", runner::short(&path)));
            }
        }
    }

    /// Contender `i`'s session ends (expired, or closed): its ephemeral
    /// nodes go, and its client fails everything outstanding: at once, or
    /// if it is cut off, once it learns (the cut ends, or its read timeout
    /// gives the connection up).
    fn end_session(&mut self, i: usize) {
        let sid = self.cs[i].session;
        if !self.zk.sessions[&sid].alive {
            return;
        }
        let conn = self.zk.sessions[&sid].conn;
        let tags = self.zk.drop_conn(sid);
        self.zk.expire(sid);
        self.tell_end(i, tags, conn);
    }

    /// The leader expires contender `i`'s session (it heard of it for a
    /// session timeout): at once for its client if it is connected to the
    /// leader (or to no server); through a follower, its client learns when
    /// the follower applies the close (or its connection goes), and until
    /// then the follower answers its reads.
    fn expire_by_time(&mut self, i: usize) {
        let sid = self.cs[i].session;
        let s = &self.zk.sessions[&sid];
        if s.server == 0 || !s.connected {
            self.end_session(i);
            return;
        }
        self.zk.expire(sid);
        self.cs[i].end_pending = true;
        self.trace_line(format!("c{i}'s follower s{} does not know yet", self.zk.sessions[&sid].server));
    }

    /// What the followers did to their clients' connections this tick:
    /// closed those of sessions the leader closed (their clients learn the
    /// end), or all of theirs when they lost the leader; and the end of a
    /// session whose connection went meanwhile.
    fn server_events(&mut self) {
        for sid in std::mem::take(&mut self.zk.ended) {
            if let Some(i) = self.cs.iter().position(|c| c.session == sid && c.end_pending) {
                self.cs[i].end_pending = false;
                let conn = self.zk.sessions[&sid].conn;
                let tags = self.zk.drop_conn(sid);
                self.trace_line(format!("c{i}'s follower closes its expired session {sid:#x}"));
                self.tell_end(i, tags, conn);
            }
        }
        for sid in std::mem::take(&mut self.zk.dropped) {
            let Some(i) = self.cs.iter().position(|c| c.session == sid) else { continue };
            let s = &self.zk.sessions[&sid];
            if !s.connected {
                continue;
            }
            let (conn, server) = (s.conn, s.server);
            self.count("follower closed its connections");
            self.trace_line(format!("c{i}'s follower s{server} lost the leader: closes connection {conn}"));
            let tags = self.zk.drop_conn(sid);
            if std::mem::take(&mut self.cs[i].end_pending) {
                self.tell_end(i, tags, conn);
                continue;
            }
            let fails = tags.into_iter().map(|tag| runner::Local::Fail {
                tag,
                failure: zklock_proto::acquire::Failure::Unknown,
                conn,
            });
            self.tell(i, fails);
        }
        for i in 0..self.cs.len() {
            let sid = self.cs[i].session;
            if self.cs[i].end_pending && !self.zk.sessions[&sid].connected {
                self.cs[i].end_pending = false;
                let conn = self.zk.sessions[&sid].conn;
                self.tell_end(i, Vec::new(), conn);
            }
        }
    }

    /// Contender `i`'s client learns that its session ended: the requests
    /// `tags` (on connection `conn`) fail, then the end: at once, or if it
    /// is cut off, once it learns (the cut ends, or its read timeout gives
    /// the connection up).
    fn tell_end(&mut self, i: usize, tags: Vec<Tag>, conn: u64) {
        let mut told: Vec<runner::Local> = tags
            .into_iter()
            .map(|tag| runner::Local::Fail { tag, failure: zklock_proto::acquire::Failure::SessionGone, conn })
            .collect();
        told.push(runner::Local::SessionEnded);
        self.tell(i, told);
    }

    /// Contender `i`'s session layer learns `news` as its connection goes
    /// down: at once, or if it is cut off, once it learns (then the
    /// messages queued before the cut no longer arrive either).
    fn tell(&mut self, i: usize, news: impl IntoIterator<Item = runner::Local>) {
        if self.is_cut(i) {
            self.cs[i].cut_readable = 0;
            self.cs[i].deferred.extend(news);
        } else {
            self.cs[i].inbox.extend(news);
            self.link_down(i);
        }
    }

    /// One tick of time passes: the server expires the sessions it has
    /// not heard from for a session timeout, cut-offs end, and every
    /// contender ticks.
    fn pass_tick(&mut self) {
        if self.timed {
            self.zk.now += 1;
            let now = self.zk.now;
            if let Some(c) = self.stalled_change.filter(|c| now >= c.at) {
                self.stalled_change = None;
                // Half the time (by the stall's parity, drawn already: the
                // schedules of earlier seeds stay as they were) the deposed
                // leader's tracker expires the sessions it lost track of
                // before it answers their reconnects, half the time not
                // (their connects read first).
                self.zk.leader_change(c.f, c.d, c.ghost, c.stall, c.stall % 2 == 1);
                self.count("fault: leader change after the leader stalled");
                self.trace_line(format!(
                    "the followers elected a new leader; follower s{} stays with the deposed one for {} ticks, \
                     which stalls for {} more and then answers its syncs for {}",
                    c.f + 1,
                    c.d,
                    c.stall,
                    c.ghost
                ));
            }
            self.end_replacements();
            if !self.zk.followers.is_empty() {
                self.zk.tick_ensemble();
                self.server_events();
            }
            for i in 0..self.cs.len() {
                let s = &self.zk.sessions[&self.cs[i].session];
                let touched = s.touched;
                if s.alive && now >= touched + T_TICKS {
                    let sid = self.cs[i].session;
                    self.count("session expired");
                    if matches!(self.cs[i].state, State::Holding { .. }) {
                        self.count("session expired while holding");
                    }
                    let cnow = self.client_now(i);
                    if self.cs[i].clock.as_ref().is_some_and(|k| k.is_safe(cnow)) {
                        self.count("session expired while its clock says safe");
                        if matches!(self.cs[i].state, State::Holding { .. }) {
                            self.count("session expired while holding and its clock says safe");
                        }
                    }
                    self.trace_line(format!(
                        "server expires c{i}'s session {sid:#x} (t={now}; last heard t={touched})"
                    ));
                    self.expire_by_time(i);
                }
                if self.cs[i].cut_from == now && self.cs[i].cut_until > now {
                    // A cut-off drawn to begin now: what is queued for it
                    // is on its way.
                    self.cs[i].cut_readable = self.zk.sessions[&self.cs[i].session].out.len();
                }
                if self.cs[i].cut_until == now {
                    self.trace_line(format!("c{i}'s cut-off ends"));
                    if !self.cs[i].deferred.is_empty() {
                        self.link_down(i);
                    }
                }
                self.session_layer_traffic(i);
            }
            for k in 0..self.abandoned.len() {
                let sid = self.abandoned[k];
                let s = &self.zk.sessions[&sid];
                if s.alive && now >= s.touched + T_TICKS {
                    self.trace_line(format!("server expires the given-up session {sid:#x} (t={now})"));
                    self.zk.expire(sid);
                }
            }
        }
        self.tick_all();
    }

    /// The session layer's own requests (heartbeats, pings) take no
    /// scheduler step: those at the head of contender `i`'s requests in
    /// flight are read by the server [`LATENCY`] ticks after they were sent
    /// (or earlier, when the scheduler applies them), and their replies
    /// (or failures)
    /// at the head of what is queued for it are read by its client now,
    /// unless it is cut off or stalled (FIFO order kept: behind a lock
    /// request or reply they wait for the scheduler). Otherwise they would
    /// crowd the lock's messages out of the schedule.
    fn session_layer_traffic(&mut self, i: usize) {
        if self.is_cut(i) {
            return;
        }
        let sid = self.cs[i].session;
        let now = self.zk.now;
        while self.zk.can_apply(sid)
            && self.zk.sessions[&sid]
                .inflight
                .front()
                .is_some_and(|(t, _)| t.session_layer_tick().is_some_and(|at| at + LATENCY <= now))
        {
            self.zk.apply(sid);
        }
        loop {
            let c = &self.cs[i];
            let next = match c.inbox.front() {
                Some(l) => matches!(l, runner::Local::Fail { tag, .. } if tag.is_session_layer()),
                None => self.zk.sessions[&sid]
                    .out
                    .front()
                    .is_some_and(|m| matches!(m, model::Msg::Reply { tag, .. } if tag.is_session_layer())),
            };
            if c.stalled > 0 || !next {
                break;
            }
            self.deliver(i);
        }
    }

    /// Contender `i`'s process stalls: mostly 5 to 60 ticks, in timed runs
    /// sometimes 0.33 to 1.5 session timeouts, and half of those with its
    /// network gone too from 1 to 20 ticks into the stall (a paused
    /// virtual machine whose network goes) until up to a session timeout
    /// after it: what the server had queued for it before the cut is read
    /// when it resumes, nothing more gets through.
    fn stall(&mut self, i: usize) {
        let long = self.timed && self.ch.roll(30);
        let k =
            if long { self.ch.between((T_TICKS / 3) as u32, (T_TICKS * 3 / 2) as u32) } else { self.ch.between(5, 60) };
        self.trace_line(format!("FAULT stall c{i} for {k} ticks"));
        self.cs[i].stalled = k;
        if long && !self.is_cut(i) && self.ch.roll(50) {
            let after = u64::from(self.ch.between(1, 20));
            let d = u64::from(k + self.ch.between(0, T_TICKS as u32));
            self.cs[i].cut_from = self.zk.now + after;
            self.cs[i].cut_until = self.zk.now + after + d;
            self.trace_line(format!(
                "FAULT ... and c{i} is cut off from t={} to t={}",
                self.zk.now + after,
                self.zk.now + after + d
            ));
        }
    }

    /// Counts one `what`.
    pub fn count(&mut self, what: &'static str) {
        *self.counts.entry(what).or_default() += 1;
    }

    fn trace_line(&mut self, s: String) {
        if let Some(t) = &mut self.trace {
            t.push(format!("{:5} {s}", self.step));
        }
    }

    fn tick_all(&mut self) {
        for i in 0..self.cs.len() {
            self.tick(i);
        }
    }

    /// Whether a step could move something but the session layers'
    /// heartbeats and pings (for the stuck detection).
    fn progress(&self) -> bool {
        self.steps().iter().any(|s| match *s {
            Step::Apply(i) => self.zk.sessions[&self.cs[i].session].inflight.iter().any(|(t, _)| !t.is_session_layer()),
            Step::Deliver(i) => {
                !self.cs[i].inbox.is_empty()
                    || !self.cs[i].held.is_empty()
                    || runner::real_out(&self.zk.sessions[&self.cs[i].session])
            },
            Step::Reconnect(_) | Step::NewSession(_) => true,
        })
    }

    /// Steps that make progress, benign first.
    fn steps(&self) -> Vec<Step> {
        let mut v = Vec::new();
        for (i, c) in self.cs.iter().enumerate() {
            let s = &self.zk.sessions[&c.session];
            let cut = self.is_cut(i);
            if self.zk.can_apply(c.session) && !cut {
                v.push(Step::Apply(i));
            }
            let held = !c.held.is_empty() && c.count_read.is_none();
            if c.stalled == 0 && (held || !c.inbox.is_empty() || (!s.out.is_empty() && (!cut || c.cut_readable > 0))) {
                v.push(Step::Deliver(i));
            }
            // Timed runs reconnect as the session layer does, in time
            // (`reconnect_rounds`); the exhaustive search at once.
            if s.alive && !s.connected && !self.timed {
                v.push(Step::Reconnect(i));
            }
            // Not before the messages held back while the shared count is
            // read again are fed (the session's end among them: the seeds
            // after 1796007576081977162 found a new session made before its
            // attempt learned that the old one ended).
            if !s.alive
                && !c.end_pending
                && c.inbox.is_empty()
                && c.held.is_empty()
                && s.out.is_empty()
                && c.stalled == 0
                && c.deferred.is_empty()
                && !cut
            {
                v.push(Step::NewSession(i));
            }
        }
        v
    }

    /// One scheduler step; then the promises are checked.
    fn one(&mut self, fault_pct: u32) {
        self.step += 1;
        self.step_starts.push(self.ch.log.len());
        self.pass_tick();
        if self.faults && self.ch.roll(fault_pct) {
            self.fault();
        } else {
            let steps = self.steps();
            if !steps.is_empty() {
                let s = steps[self.ch.choose(steps.len())];
                self.do_step(s);
            }
        }
        self.check_step();
    }

    /// Takes scheduler step `s`.
    fn do_step(&mut self, s: Step) {
        match s {
            Step::Apply(i) => {
                let sid = self.cs[i].session;
                if let Some(op) = self.zk.apply(sid) {
                    if self.trace.is_some() {
                        let d = runner::short(&format!("{op:?}"));
                        self.trace_line(format!("server applies c{i}'s {d} (zxid {})", self.zk.zxid));
                    }
                }
            },
            Step::Deliver(i) => self.deliver(i),
            Step::Reconnect(i) => {
                let servers = self.zk.servers_for(Some(self.cs[i].session));
                let server = servers[self.ch.choose(servers.len())];
                self.reconnect_to(i, server);
            },
            Step::NewSession(i) => self.new_session(i),
        }
    }

    /// Contender `i`'s session is connected again, through `server`, with
    /// its watches set again.
    fn reconnect_to(&mut self, i: usize, server: usize) {
        let sid = self.cs[i].session;
        let w = self.client_watches(i);
        let last = self.cs[i].last_zxid;
        self.zk.reconnect(sid, server, &w, last);
        self.connected(i, false);
        self.cs[i].inbox.push_back(runner::Local::Reconnected);
        let conn = self.zk.sessions[&sid].conn;
        self.trace_line(format!("c{i} reconnects to s{server} (connection {conn}, {} watches set again)", w.len()));
    }

    /// Contender `i`'s session layer without a connection (timed runs, at
    /// each tick it runs): it reconnects as `zklock-zk`'s does, by the
    /// shared rounds (`RoundRobin::after_loss`: its own member first after
    /// a reset, the next after a silence; each attempt's wait, the pauses
    /// between rounds, giving up). A member
    /// takes the connect where the model can connect at once
    /// (`Zk::servers_for`: the leader, a follower in step with it; and
    /// `Zk::ghost_servers_for`: a follower cut off with a deposed leader
    /// that still answers, which revalidates without a touch; one whose
    /// own record expired the session answers "expired", which the rounds
    /// take only once another member says it: `RoundRobin::said_expired`)
    /// and answers [`CONNECT_TICKS`] after it went, or later once a lagging
    /// follower catches up; a follower that noticed it lost the leader
    /// refuses; one cut off from the leader that has not noticed yet, or
    /// any member while the client is cut off, does not answer. A client
    /// that gives up counts its session expired (`Local::SessionEnded`)
    /// and starts a new one; the leader expires the old one by time.
    fn reconnect_rounds(&mut self, i: usize) {
        let sid = self.cs[i].session;
        let s = &self.zk.sessions[&sid];
        if !s.alive || s.connected || self.cs[i].end_pending {
            self.cs[i].rounds = None;
            return;
        }
        let now = self.client_now(i);
        let cut = self.is_cut(i);
        // The server list: every member, or the one it names.
        let list: Vec<usize> = match self.cs[i].only {
            Some(m) => vec![m],
            None => (0..1 + self.zk.followers.len()).collect(),
        };
        let (from, last_read) = (list.iter().position(|&m| m == s.server), self.cs[i].last_read.unwrap_or(now));
        let mut takes = self.zk.servers_for(Some(sid));
        // A deposed leader whose own record expired the session answers
        // "expired" (outside attack round 36, F3); one that has it takes it.
        let stale = self.zk.ghost_expired_for(sid, self.cs[i].last_zxid, T_TICKS);
        takes.extend(self.zk.ghost_servers_for(sid, self.cs[i].last_zxid).into_iter().filter(|m| !stale.contains(m)));
        let refusing: Vec<bool> = list.iter().map(|&m| !cut && m > 0 && !self.zk.followers[m - 1].serving).collect();
        let refuses = |h: usize| refusing[h];
        let mut r = self.cs[i].rounds.take().unwrap_or_else(|| {
            let mut policy = Reconnect::new(SESSION_TIMEOUT, list.len(), last_read);
            policy.set_bugs(self.reconnect_bugs);
            // Requests in flight at the loss are not tracked here: as if
            // none were (giving up no later than the session layer would).
            Rounds {
                rr: RoundRobin::after_loss(policy, list.len(), from, now, false),
                attempt: None,
                pause: None,
                heard_expired: false,
            }
        });
        loop {
            if let Some((h, until, sent, tick)) = r.attempt {
                let m = list[h];
                if !cut && takes.contains(&m) && self.zk.now >= tick + CONNECT_TICKS {
                    r.attempt = None;
                    let ghost = self.zk.is_ghost(m);
                    if ghost {
                        self.count("reconnect: answered by a deposed leader");
                    }
                    self.reconnect_to(i, m);
                    self.cs[i].connect_sent = Some(sent);
                    if self.clock_bugs.connect_unconfirmed {
                        // The rule before round 33's F2: the connect's
                        // answer credits it at once (as the first reply on
                        // its connection did, and a late answer asked
                        // again), `T/3` before it was sent.
                        let conn = self.zk.sessions[&sid].conn;
                        if let Some(k) = self.cs[i].clock.as_mut() {
                            k.credit(zklock_proto::clock::Heartbeat {
                                sent,
                                answered: now,
                                connection: conn,
                                write: false,
                                connect_sent: Some(sent),
                                connect_answered: Some(now),
                            });
                        }
                    }
                    return;
                }
                if !cut && stale.contains(&m) && self.zk.now >= tick + CONNECT_TICKS {
                    self.count("reconnect: a deposed leader answered expired");
                    r.attempt = None;
                    r.heard_expired = true;
                    if r.rr.said_expired(now) {
                        if list.len() == 1 {
                            self.count("reconnect: took a deposed leader's expired, its only member");
                        }
                        self.give_up_session(i);
                        return;
                    }
                    continue;
                }
                if refuses(h) {
                    self.count("reconnect: a follower that lost the leader closed the attempt");
                    r.attempt = None;
                    r.rr.ended(Ended::Transient);
                    continue;
                }
                if now >= until {
                    self.count("reconnect: an attempt went unanswered");
                    r.attempt = None;
                    r.rr.ended(Ended::Unanswered(now));
                    continue;
                }
                break;
            }
            if r.pause.is_some_and(|p| now < p) {
                break;
            }
            r.pause = None;
            match r.rr.next(now, 0.0) {
                Next::Try { host, .. } if refuses(host) => {
                    self.count("reconnect: refused by a follower that lost the leader");
                    r.rr.ended(Ended::Unusable);
                },
                Next::Try { host, until } => {
                    r.attempt = Some((host, until, now, self.zk.now));
                    break;
                },
                Next::Pause { until } => {
                    r.pause = Some(until);
                    break;
                },
                Next::GiveUp | Next::Unreachable => {
                    if r.heard_expired {
                        self.count("reconnect: gave up after a deposed leader's expired");
                    }
                    self.give_up_session(i);
                    return;
                },
            }
        }
        self.cs[i].rounds = Some(r);
    }

    /// Contender `i`'s reconnect gave its session up, which the leader
    /// still has: its client counts it expired (its attempts and hold
    /// learn `SessionEnded`) and starts a new one; the leader expires the
    /// old one by time (`abandoned`). A dead placeholder session stands
    /// for it until the new one. (A new leader gave every session a full
    /// timeout, a touch the client cannot see. With the client stalled
    /// past its give-up time it now asks once more (`Rules::ran_again`;
    /// before, 2 in 353,490 schedules gave up); with its only reachable
    /// servers refusing it (followers that lost the leader) for `4/3 T` it
    /// still gives up: 1 in 370,086 schedules. The lock is reported lost,
    /// never held twice.)
    fn give_up_session(&mut self, i: usize) {
        let old = self.cs[i].session;
        let conn = self.zk.sessions[&old].conn;
        self.count("reconnect: gave a live session up");
        self.trace_line(format!("c{i}'s reconnect gives its session {old:#x} up (the leader still has it)"));
        self.abandoned.push(old);
        self.next_session += 1;
        let placeholder = self.next_session;
        self.zk.open(placeholder, 0);
        let s = self.zk.sessions.get_mut(&placeholder).expect("session");
        s.alive = false;
        s.connected = false;
        self.cs[i].session = placeholder;
        self.cs[i].rounds = None;
        self.tell_end(i, Vec::new(), conn);
    }

    /// The promises checked after every step.
    fn check_step(&mut self) {
        if self.violation.is_none() {
            if let Err(v) = check::holders(&self.zk, &self.cs, self.timed.then_some(self.base))
                .and_then(|()| check::deletes(&self.zk, &self.cs))
                .and_then(|()| check::orphans(&self.zk, &self.cs))
            {
                self.violation = Some(v);
            }
            self.violation = self.violation.take().or_else(|| (0..self.cs.len()).find_map(|k| self.call_goes_on(k)));
        }
    }

    /// Whether all is quiet: every contender done, nothing in flight.
    fn quiet(&self) -> bool {
        self.cs.iter().all(|c| {
            let s = &self.zk.sessions[&c.session];
            c.quiet()
                && !s.inflight.iter().any(|(t, _)| !t.is_session_layer())
                && !s.forwarded.iter().any(|t| !t.is_session_layer())
                && !runner::real_out(s)
                && c.attempt.as_ref().is_none_or(|a| a.is_done())
        })
    }
}

/// A client clock's drift against the server's, per mille, drawn.
fn drift(ch: &mut Chooser) -> i64 {
    [0, -DRIFT_PER_MILLE, DRIFT_PER_MILLE, -DRIFT_PER_MILLE / 2, DRIFT_PER_MILLE / 2][ch.choose(5)]
}

/// The most steps a run takes after its faults stopped.
const QUIESCE_STEPS: u64 = 4_000;

/// Steps in a row after the faults stopped in which nothing could make
/// progress (no request to apply, message to deliver, reconnect or new
/// session; the session layers' heartbeats and pings do not count) after
/// which a run that is not quiet is stuck for good: longer than every
/// countdown (stall 180, cut-off 180 then the read timeout 80, linger 30,
/// hold 240, idle 10) and than the safety clock's wait for its first
/// credit (about 60 ticks after a connect).
const STUCK_STEPS: u64 = 600;

/// Runs one schedule: its choices from `seed`, or replayed from `list`.
pub fn run(seed: u64, list: Option<&[u32]>, opts: Opts, trace: bool) -> Outcome {
    let ch = match list {
        Some(l) => Chooser::from_list(l.to_vec()),
        None => Chooser::from_seed(seed),
    };
    let mut w = World::new(ch, seed, opts, trace);
    let fault_steps = 50 + w.ch.choose(400) as u64;
    let fault_pct = w.ch.between(2, 20);
    w.trace_line(format!("{fault_steps} steps with faults ({fault_pct}% of steps), then none"));
    while w.step < fault_steps && w.violation.is_none() {
        w.one(fault_pct);
    }
    w.faults = false;
    let fault_end = w.ch.log.len();
    let fault_steps_taken = w.step;
    w.trace_line("faults stop".to_string());
    // A shared count ends readable and above 0, so that every contender
    // can be granted (an increase makes waiters look again).
    if let Some(p) = w.count_path.clone() {
        let n = 1 + w.ch.choose(2) as i32;
        w.zk.set_count(&p, CountWrite::Value(n));
        w.trace_line(format!("the shared count is set to {n} (zxid {})", w.zk.zxid));
    }
    let mut end = w.step + QUIESCE_STEPS;
    let mut idle_since = w.step;
    while w.violation.is_none() && !w.quiet() {
        if w.progress() {
            idle_since = w.step;
        } else if w.step >= idle_since + STUCK_STEPS {
            // Stuck: it would stay so until the end; report it now (a
            // liveness failure costs hundreds of steps, not thousands,
            // which makes shrinking it quick).
            end = w.step;
        }
        if w.step >= end {
            let states: Vec<String> =
                w.cs.iter()
                    .map(|c| {
                        format!(
                            "{}: {:?} stalled={} inbox={} tasks={} retry={} attempt_done={:?}",
                            c.name,
                            c.state,
                            c.stalled,
                            c.inbox.len(),
                            c.tasks.len(),
                            c.retry.len(),
                            c.attempt.as_ref().map(|a| a.is_done())
                        )
                    })
                    .collect();
            // Nodes of a contender's session that neither its attempt nor
            // its hold knows of: leaked.
            let orphans: Vec<String> =
                w.zk.lock_children()
                    .into_iter()
                    .filter(|k| {
                        let path = format!("{}/{k}", w.lock_path);
                        let owner = w.zk.nodes[&path].owner;
                        w.cs.iter().any(|c| {
                            c.session == owner
                                && !k.starts_with(&c.protected)
                                && !c.held_nodes().iter().any(|(p, _)| **p == path)
                        })
                    })
                    .map(|k| runner::short(&k))
                    .collect();
            w.violation = Some(Violation {
                kind: "liveness",
                what: format!(
                    "not quiet {} steps after the faults stopped{}: {}; lock children {:?}; \
                     of those, known to no attempt or hold of their session (leaked): {orphans:?}",
                    w.step - fault_steps_taken,
                    if w.step - fault_steps_taken < QUIESCE_STEPS { " (stuck: nothing could happen)" } else { "" },
                    states.join("; "),
                    w.zk.lock_children().iter().map(|k| runner::short(k)).collect::<Vec<_>>()
                ),
            });
            break;
        }
        w.one(0);
    }
    if w.violation.is_none() {
        if let Err(v) = check::quiescent(&w.zk, &w.cs) {
            w.violation = Some(v);
        }
    }
    Outcome {
        violation: w.violation,
        choices: w.ch.log,
        steps: w.step,
        step_starts: w.step_starts,
        counts: w.counts,
        trace: w.trace.unwrap_or_default(),
        fault_end,
        fault_steps: fault_steps_taken,
    }
}

/// A failure found: its seed, shrunk choices and readable steps.
pub struct Found {
    /// The seed.
    pub seed: u64,
    /// The broken promise (as first found).
    pub violation: Violation,
    /// Steps of the first failing run.
    pub steps: u64,
    /// The shrunk choices.
    pub shrunk: Vec<u32>,
    /// Steps of the shrunk run.
    pub shrunk_steps: u64,
    /// Of those, steps of its fault phase.
    pub shrunk_fault_steps: u64,
    /// The shrunk run, readable.
    pub trace: Vec<String>,
    /// The shrunk run's violation.
    pub shrunk_violation: Violation,
    /// How long the failing run took (before shrinking).
    pub run_time: Duration,
    /// The environment that replays it.
    pub replay: String,
}

impl Found {
    /// A report for stderr.
    pub fn report(&self) -> String {
        format!(
            "seed {} (replay: {} cargo test -p zklock-proto --features history --test sim explore -- --exact): {}: {}\n  first run {} steps; shrunk to {} steps ({} with faults; {} choices): {}: {}\n{}\n  shrunk choices (zeros after them): {:?}",
            self.seed,
            self.replay,
            self.violation.kind,
            self.violation.what,
            self.steps,
            self.shrunk_steps,
            self.shrunk_fault_steps,
            self.shrunk.len(),
            self.shrunk_violation.kind,
            self.shrunk_violation.what,
            self.trace.iter().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n"),
            self.shrunk
        )
    }
}

/// Runs `seed`; on a broken promise, shrinks it (for at most `shrink_for`).
pub fn try_seed(seed: u64, opts: Opts, shrink_for: Duration) -> Result<Outcome, Box<Found>> {
    let began = Instant::now();
    let out = run(seed, None, opts, false);
    let run_time = began.elapsed();
    let Some(violation) = out.violation.clone() else { return Ok(out) };
    let want = violation.kind;
    let deadline = Instant::now() + shrink_for;
    let steps = out.steps;
    let full = schedule::Failing { choices: out.choices.clone(), step_starts: out.step_starts.clone() };
    let fails = |cand: &[u32], liveness: bool| {
        let o = run(seed, Some(cand), opts, false);
        if o.violation.as_ref().is_none_or(|v| v.kind != want) {
            return None;
        }
        let mut f = o.failing(liveness);
        if liveness && cand.len() < f.choices.len() {
            // The list given (its tail read as zeros) replays the same run.
            f.choices = cand.to_vec();
            f.step_starts.retain(|s| *s < cand.len());
        }
        Some(f)
    };
    // A liveness failure: shrink the fault phase only, if it fails with
    // its quiet tail replayed as zeros.
    let liveness = want == "liveness";
    let all_choices = out.choices.len();
    let first = match out.failing(liveness) {
        f if liveness => fails(&f.choices, true).unwrap_or(full),
        _ => full,
    };
    let tail_zero = liveness && first.choices.len() < all_choices;
    let shrunk = schedule::shrink(first, deadline, |cand| fails(cand, tail_zero));
    let last = run(seed, Some(&shrunk), opts, true);
    let shrunk_violation = last.violation.clone().unwrap_or_else(|| violation.clone());
    Err(Box::new(Found {
        seed,
        violation,
        steps,
        shrunk_steps: last.steps,
        shrunk_fault_steps: last.fault_steps,
        shrunk: if tail_zero { shrunk } else { last.choices },
        trace: last.trace,
        shrunk_violation,
        run_time,
        replay: opts.replay_env(seed),
    }))
}

/// A follower to cut off (see `World::cut_target`).
/// A leader change after the leader stalled (`World::leader_change`).
#[derive(Clone, Copy, Debug)]
pub struct StalledChange {
    /// The tick the new leader starts.
    at: u64,
    /// The follower frozen with the deposed leader.
    f: usize,
    /// How long it stays with the deposed leader, from then on.
    d: u64,
    /// How long the deposed leader answers once it runs again.
    ghost: u64,
    /// How long it stays stalled after the new leader started.
    stall: u64,
}

struct Cut {
    /// The contender it was aimed at.
    i: usize,
    /// That contender's server (0: the leader).
    at: usize,
    /// The follower (index into `Zk::followers`; server `f + 1`).
    f: usize,
    /// For how many ticks.
    d: u64,
}

//! A deterministic simulator of zklock's acquire state machine
//! (`zklock_proto::acquire::Attempt`) against a model of ZooKeeper (issue
//! 32): contenders, each a runner of attempts on its own session, under a
//! schedule of steps and faults drawn from one seed. The promises are
//! checked after every step against the model's record (see `check`); a
//! failing schedule is shrunk to a short one and printed as readable
//! steps.

pub mod check;
pub mod dfs;
pub mod model;
pub mod peer;
pub mod runner;
pub mod schedule;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use zklock_proto::acquire::Bugs;
use zklock_proto::names::LockMode;

use check::Violation;
use model::Zk;
use runner::{Contender, State, Tag};
use schedule::Chooser;

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
    /// under `/app/sem/locks`).
    Lease,
}

/// What a run may draw beyond its choices.
#[derive(Clone, Copy, Debug, Default)]
pub struct Opts {
    /// The bugs switched on in every attempt.
    pub bugs: Bugs,
    /// Only scenarios of this kind.
    pub kind: Option<Kind>,
    /// Some scenarios answer a downgrade's transaction without its
    /// create's Stat (as some releases do); `explore` sets it unless
    /// `ZKLOCK_SIM_STATLESS=0`.
    pub statless_multi: bool,
    /// Some scenarios answer plain creates without their Stat too (no
    /// release does: it reaches the same path of the machine more often).
    pub statless_create: bool,
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
        ] {
            if on {
                env.push(format!("ZKLOCK_SIM_BUG={name}"));
            }
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
    /// Uuids from the contender and its attempt number rather than the
    /// seed (the exhaustive search), and fed events hashed.
    pub fixed_uuids: bool,
    /// Percent of clock checks that say "not safe".
    pub clock_unsafe: u32,
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
        let lock_path = if kind == Kind::Lease { "/app/sem/leases" } else { "/app/lock" }.to_string();
        let stat_on_create = !ch.roll(20) || !opts.statless_create;
        let stat_in_multi = !ch.roll(30) || !opts.statless_multi;
        // The session layer sets watches again on reconnect (SetWatches):
        // without it a waiting attempt, told of nothing, waits forever.
        let set_watches = true;
        let clock_unsafe = ch.between(0, 10);
        let mut zk = Zk::new(&lock_path, stat_on_create, stat_in_multi, set_watches);
        let mutex_path = (kind == Kind::Lease).then(|| "/app/sem/locks".to_string());
        zk.tracked.extend(mutex_path.clone());
        let sem_permits = 1 + ch.choose(2);
        let n = 2 + ch.choose(3);
        let mut cs = Vec::new();
        for i in 0..n {
            let sid = 0x100 + i as i64;
            zk.open(sid);
            let (mode, permits) = match kind {
                Kind::Exclusive => (LockMode::Exclusive, 1),
                Kind::ReadWrite => (if ch.choose(2) == 0 { LockMode::Write } else { LockMode::Read }, 1),
                Kind::Leader => (LockMode::Leader, 1),
                Kind::Lease => (LockMode::Lease, sem_permits),
            };
            let try_once = ch.roll(20);
            // Curator-like peers share exclusive locks' queues.
            let peer = kind == Kind::Exclusive && ch.roll(25);
            let mut c = Contender::new(i, mode, permits, try_once && !peer, peer, sid);
            c.mutex_path = mutex_path.clone();
            cs.push(c);
        }
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
            fixed_uuids: false,
            step_starts: Vec::new(),
            counts: BTreeMap::new(),
        };
        let desc: Vec<String> =
            w.cs.iter().map(|c| format!("{}:{:?}{}", c.name, c.mode, if c.try_once { "(try)" } else { "" })).collect();
        if let Some(t) = &mut w.trace {
            t.push(format!(
                "scenario {kind:?}{} {} stat_on_create={stat_on_create} set_watches={set_watches} clock_unsafe={clock_unsafe}%",
                if kind == Kind::Lease { format!(" permits={sem_permits}") } else { String::new() },
                desc.join(" ")
            ));
        }
        w
    }

    /// One fault, chosen.
    fn fault(&mut self) {
        let n = self.cs.len();
        let i = self.ch.choose(n);
        match self.ch.choose(8) {
            0 => {
                self.stall(i);
            },
            1 => self.drop_connection(i),
            2 => self.expire(i),
            3 => {
                // Once per attempt: a second Stop while it lingers would end
                // the linger at once (the caller stops an acquire once).
                if self.cs[i].state == State::Acquiring
                    && self.cs[i].stalled == 0
                    && !self.cs[i].stopped
                    && !self.cs[i].peer
                {
                    // Sometimes because the client is closed: nothing is
                    // waited for, and its session ends right after.
                    let closed = self.ch.roll(20);
                    self.cs[i].stopped = true;
                    self.cs[i].closed = closed;
                    self.count(if closed { "fault: client closed" } else { "fault: attempt stopped" });
                    self.trace_line(format!(
                        "FAULT stop c{i}'s attempt{}",
                        if closed { " (client closed)" } else { "" }
                    ));
                    if let Some(a) = self.cs[i].attempt.as_mut() {
                        a.handle(zklock_proto::acquire::Event::Stop { closed });
                    }
                    self.pump(i);
                    if closed {
                        self.end_session(i);
                    }
                } else if self.cs[i].hold.is_some() && self.cs[i].stalled == 0 && self.ch.roll(30) {
                    // The client is closed while it holds, or while its
                    // release is on its way.
                    self.cs[i].closed = true;
                    self.count("fault: client closed while holding");
                    self.trace_line(format!("FAULT close c{i}'s client (holding or releasing)"));
                    self.end_session(i);
                }
            },
            4 | 5 => {
                // A semaphore's mutex nodes too.
                let parent = match &self.mutex_path {
                    Some(m) if self.ch.choose(2) == 1 => m.clone(),
                    _ => self.lock_path.clone(),
                };
                let kids = zklock_proto::names::queue(&self.zk.children_of(&parent));
                if kids.is_empty() {
                    return;
                }
                let j = self.ch.choose(kids.len());
                let path = |k: usize| format!("{parent}/{}", kids[k].name);
                let paths = if self.ch.choose(2) == 0 || j == 0 { vec![path(j)] } else { vec![path(j - 1), path(j)] };
                self.third_party_delete(&paths);
            },
            6 => {
                if self.zk.reap() {
                    self.count("fault: container reaped");
                    self.trace_line("FAULT containers reaped".to_string());
                }
            },
            _ => {
                let d = self.ch.between(1, 10);
                self.trace_line(format!("FAULT delay {d} steps"));
                for _ in 0..d {
                    self.tick_all();
                }
            },
        }
    }

    /// Contender `i`'s connection drops (if it has one): everything not
    /// answered fails as unknown.
    fn drop_connection(&mut self, i: usize) {
        let sid = self.cs[i].session;
        let s = &self.zk.sessions[&sid];
        if s.alive && s.connected {
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
        }
    }

    /// Contender `i`'s session expires (if alive).
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

    /// Contender `i`'s session ends (expired, or closed): its ephemeral
    /// nodes go, and its client fails everything outstanding.
    fn end_session(&mut self, i: usize) {
        let sid = self.cs[i].session;
        if !self.zk.sessions[&sid].alive {
            return;
        }
        let conn = self.zk.sessions[&sid].conn;
        for tag in self.zk.expire(sid) {
            self.cs[i].inbox.push_back(runner::Local::Fail {
                tag,
                failure: zklock_proto::acquire::Failure::SessionGone,
                conn,
            });
        }
        self.cs[i].inbox.push_back(runner::Local::SessionEnded);
    }

    fn stall(&mut self, i: usize) {
        let k = self.ch.between(5, 60);
        self.trace_line(format!("FAULT stall c{i} for {k} steps"));
        self.cs[i].stalled = k;
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

    /// Steps that make progress, benign first.
    fn steps(&self) -> Vec<Step> {
        let mut v = Vec::new();
        for (i, c) in self.cs.iter().enumerate() {
            let s = &self.zk.sessions[&c.session];
            if !s.inflight.is_empty() {
                v.push(Step::Apply(i));
            }
            if c.stalled == 0 && (!c.inbox.is_empty() || !s.out.is_empty()) {
                v.push(Step::Deliver(i));
            }
            if s.alive && !s.connected {
                v.push(Step::Reconnect(i));
            }
            if !s.alive && c.inbox.is_empty() && s.out.is_empty() && c.stalled == 0 {
                v.push(Step::NewSession(i));
            }
        }
        v
    }

    /// One scheduler step; then the promises are checked.
    fn one(&mut self, fault_pct: u32) {
        self.step += 1;
        self.step_starts.push(self.ch.log.len());
        self.tick_all();
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
                let sid = self.cs[i].session;
                let w = self.client_watches(i);
                let last = self.cs[i].last_zxid;
                self.zk.reconnect(sid, &w, last);
                self.cs[i].inbox.push_back(runner::Local::Reconnected);
                let conn = self.zk.sessions[&sid].conn;
                self.trace_line(format!("c{i} reconnects (connection {conn}, {} watches set again)", w.len()));
            },
            Step::NewSession(i) => self.new_session(i),
        }
    }

    /// The promises checked after every step.
    fn check_step(&mut self) {
        if self.violation.is_none() {
            if let Err(v) = check::holders(&self.zk, &self.cs)
                .and_then(|()| check::deletes(&self.zk))
                .and_then(|()| check::orphans(&self.zk, &self.cs))
            {
                self.violation = Some(v);
            }
        }
    }

    /// Whether all is quiet: every contender done, nothing in flight.
    fn quiet(&self) -> bool {
        self.cs.iter().all(|c| {
            let s = &self.zk.sessions[&c.session];
            c.quiet() && s.inflight.is_empty() && s.out.is_empty() && c.attempt.as_ref().is_none_or(|a| a.is_done())
        })
    }
}

/// The most steps a run takes after its faults stopped.
const QUIESCE_STEPS: u64 = 4_000;

/// Steps in a row after the faults stopped in which nothing could make
/// progress (no request to apply, message to deliver, reconnect or new
/// session) after which a run that is not quiet is stuck for good: longer
/// than every countdown (stall 60, linger 30, clock 20, hold 15, idle 10).
const STUCK_STEPS: u64 = 200;

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
    let mut end = w.step + QUIESCE_STEPS;
    let mut idle_since = w.step;
    while w.violation.is_none() && !w.quiet() {
        if !w.steps().is_empty() {
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
                                && !matches!(&c.state, State::Holding { path: p, .. } if *p == path)
                                && c.write_held.as_ref() != Some(&path)
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
            "seed {} (replay: {} cargo test -p zklock-proto --features history --test sim explore): {}: {}\n  first run {} steps; shrunk to {} steps ({} with faults; {} choices): {}: {}\n{}\n  shrunk choices (zeros after them): {:?}",
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

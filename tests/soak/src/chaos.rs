//! The chaos schedule: one thread per lane of fault kinds
//! ([`Lane`]) injects faults while the contenders
//! run: one against the servers (kill and restart the leader or a
//! follower, freeze a member, restart the whole ensemble, cut a holder's
//! member off from the quorum while its clients stay connected), one
//! against the holders' network (blackhole the holder's connection, drop
//! the reply to a create, hold the holder's answers and then reset its
//! connections, make the holder's member answer its reconnect "expired"),
//! one against the holders' processes (stop the
//! holder's process past its session, or a contender's between its create
//! and reading the replies) and one for a third party (delete a waiter's or
//! a holder's lock node, see `third_party.rs`). The threads' faults
//! overlap, as they do in real outages. After each server fault its thread
//! waits up to 1.5 s for the next grant; progress after each fault is
//! measured afterwards from the record.
//!
//! Two classes need the contenders' timing shaped, through the resource
//! (see `resource.rs`): a partitioned member's holder is asked to keep
//! holding through the fault (a short hold would end before the leader
//! expired its session), and the other contenders on a stalled
//! contender's lock rest before its create, so that its create finds the
//! lock free.
//!
//! A new fault kind is a `FaultKind` with a name and a lane, and an arm of
//! [`Chaos::inject`]; the lanes' threads, the reports per kind and the
//! attribution of violations to kinds follow from that.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use zklock_harness::{Cluster, ProxyGroup};

use crate::analysis::{Fault, FaultKind, Lane, LockId};
use crate::clock::{mono_ns, Rng};
use crate::resource::Resource;
use crate::third_party::Outsider;

/// How long the server-fault thread waits for a grant after each fault
/// before the next one. Every server fault disconnects most clients, and
/// they take a second or two to come back (the client library's reconnect
/// backoff); back-to-back server faults left the lock without a grant for
/// up to 28 s at a time.
const SERVER_BREATHER: Duration = Duration::from_millis(1_500);
/// How long a server may take to come back before the run reports an error.
const SERVE_LIMIT: Duration = Duration::from_secs(90);

/// Everything the fault threads act on, and what they record.
pub struct Chaos<'a> {
    /// The ensemble.
    pub cluster: &'a Cluster,
    /// One proxy group per contender, indexed by contender id.
    pub groups: &'a [ProxyGroup],
    /// The resource (who holds the lock now, when the next grant came).
    pub resource: &'a Resource,
    /// The locks the contenders take.
    pub locks: Vec<LockId>,
    /// The third party (its own sessions), for `ThirdPartyDelete`.
    pub outsider: Mutex<Outsider>,
    /// Pid of each contender process.
    pub worker_pids: Vec<u32>,
    /// Contender id -> process index.
    pub process_of: BTreeMap<u32, usize>,
    /// Contender id -> the lock it takes.
    pub lock_of: BTreeMap<u32, LockId>,
    /// How long a freeze, blackhole or pause lasts (longer than the
    /// session timeout).
    pub hold: Duration,
    /// The contenders' session timeout.
    pub session_timeout: Duration,
    /// The directory the contender processes take their moves from
    /// (`worker.rs`).
    pub moves: std::path::PathBuf,
    /// When to stop injecting.
    pub until: Instant,
    /// Faults injected.
    pub faults: Mutex<Vec<Fault>>,
    /// Faults that could not be injected or undone.
    pub errors: Mutex<Vec<String>>,
}

type Outcome = Result<Option<Fault>, String>;

/// What one injection did: one fault per deleted node for a third-party
/// delete, else at most one.
type Injected = Result<Vec<Fault>, String>;

fn io<T>(what: &str, r: std::io::Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

impl Chaos<'_> {
    /// Runs the faults among `kinds`, one thread per lane, until `until`,
    /// then undoes whatever is still in effect.
    pub fn run(&self, kinds: &[FaultKind], seed: u64) {
        std::thread::scope(|s| {
            for lane in Lane::ALL {
                let mine: Vec<FaultKind> = kinds.iter().copied().filter(|k| k.lane() == lane).collect();
                let (breather, salt) = match lane {
                    Lane::Servers => (SERVER_BREATHER, 0x5e_7e_e5),
                    Lane::HolderNetwork => (Duration::ZERO, 0xc1_1e_27),
                    Lane::HolderProcess => (Duration::ZERO, 0x9a_05_e0),
                    Lane::ThirdParty => (Duration::ZERO, 0x3d_9a_27),
                };
                s.spawn(move || self.schedule(&mine, breather, Rng::new(seed ^ salt)));
            }
        });
        self.restore();
        self.outsider.lock().unwrap_or_else(PoisonError::into_inner).close();
    }

    /// Injects `kinds` in turn until `until`; after each fault waits up to
    /// `breather` for the next grant, then 50 to 250 ms (100 to 500 ms
    /// without a breather).
    fn schedule(&self, kinds: &[FaultKind], breather: Duration, mut rng: Rng) {
        if kinds.is_empty() {
            return;
        }
        let mut next = 0;
        while Instant::now() < self.until {
            let kind = kinds[next % kinds.len()];
            next += 1;
            match self.inject(kind, &mut rng) {
                Ok(faults) => {
                    let end = faults.iter().map(|f| f.end).max();
                    self.faults.lock().unwrap_or_else(PoisonError::into_inner).extend(faults);
                    if let Some(end) = end.filter(|_| !breather.is_zero()) {
                        self.resource.wait_grant_after(end, breather, &self.locks);
                    }
                },
                Err(e) => {
                    eprintln!("soak: {} failed: {e}", kind.name());
                    self.errors.lock().unwrap_or_else(PoisonError::into_inner).push(format!("{}: {e}", kind.name()));
                    self.restore();
                },
            }
            std::thread::sleep(Duration::from_millis(if breather.is_zero() {
                rng.range(100, 500)
            } else {
                rng.range(50, 250)
            }));
        }
    }

    fn inject(&self, kind: FaultKind, rng: &mut Rng) -> Injected {
        if kind == FaultKind::ThirdPartyDelete {
            return self.outsider.lock().unwrap_or_else(PoisonError::into_inner).delete_next(self.resource, self.until);
        }
        self.inject_one(kind, rng).map(|fault| fault.into_iter().collect())
    }

    /// Injects a fault of any kind but a third-party delete.
    fn inject_one(&self, kind: FaultKind, rng: &mut Rng) -> Outcome {
        let fault =
            |start: u64, paused_process: Option<usize>| Fault { paused_process, ..Fault::new(kind, start, mono_ns()) };
        let c = self.cluster;
        match kind {
            FaultKind::KillLeader => {
                let leader = io("waiting for a quorum", c.wait_quorum(SERVE_LIMIT))?;
                io("killing the leader", c.kill(leader))?;
                let start = mono_ns();
                // The others elect a new leader while the old one starts
                // again (a JVM takes longer to start than an election).
                io("restarting the old leader", c.start_member(leader))?;
                io("electing a new leader", c.wait_quorum(SERVE_LIMIT))?;
                io("waiting for the old leader", c.wait_serving(leader, SERVE_LIMIT))?;
                Ok(Some(fault(start, None)))
            },
            FaultKind::KillFollower => {
                let leader = io("waiting for a quorum", c.wait_quorum(SERVE_LIMIT))?;
                let followers: Vec<usize> = (0..c.len()).filter(|&i| i != leader && c.is_running(i)).collect();
                let Some(&victim) = followers.get(rng.range(0, followers.len().max(1) as u64 - 1) as usize) else {
                    return Ok(None);
                };
                io("killing a follower", c.kill(victim))?;
                let start = mono_ns();
                std::thread::sleep(Duration::from_millis(rng.range(100, 800)));
                io(
                    "restarting the follower",
                    c.start_member(victim).and_then(|()| c.wait_serving(victim, SERVE_LIMIT)),
                )?;
                Ok(Some(fault(start, None)))
            },
            FaultKind::FreezeMember => {
                io("waiting for a quorum", c.wait_quorum(SERVE_LIMIT))?;
                let victim = rng.range(0, c.len() as u64 - 1) as usize;
                io("freezing a member", c.freeze(victim))?;
                let start = mono_ns();
                std::thread::sleep(self.hold);
                io("resuming the member", c.resume(victim))?;
                Ok(Some(fault(start, None)))
            },
            FaultKind::RestartEnsemble => {
                for i in 0..c.len() {
                    io("killing a member", c.kill(i))?;
                }
                let start = mono_ns();
                for i in 0..c.len() {
                    io("starting a member", c.start_member(i))?;
                }
                io("waiting for the restarted ensemble", c.wait_quorum(SERVE_LIMIT))?;
                Ok(Some(fault(start, None)))
            },
            FaultKind::BlackholeHolder => {
                let Some(holder) = self.holder() else { return Ok(None) };
                let Some(group) = self.groups.get(holder as usize) else { return Ok(None) };
                group.blackhole();
                let start = mono_ns();
                std::thread::sleep(self.hold);
                group.heal();
                Ok(Some(fault(start, None)))
            },
            FaultKind::MuteHolder => {
                let Some(holder) = self.holder() else { return Ok(None) };
                let Some(group) = self.groups.get(holder as usize) else { return Ok(None) };
                group.hold_replies_now();
                let start = mono_ns();
                let t = self.hold.saturating_sub(Duration::from_millis(500)).as_millis() as u64;
                std::thread::sleep(Duration::from_millis(rng.range(t / 10, t / 2)));
                group.drop_connections();
                Ok(Some(fault(start, None)))
            },
            FaultKind::StaleMember => {
                let Some(holder) = self.holder() else { return Ok(None) };
                let Some(group) = self.groups.get(holder as usize) else { return Ok(None) };
                // The member the holder is on (its proxy has its connection).
                let Some(stale) = group.proxies().iter().find(|p| p.connections() > 0) else { return Ok(None) };
                stale.answer_expired();
                stale.drop_connections();
                let start = mono_ns();
                let t = self.hold.saturating_sub(Duration::from_secs(1)).as_millis() as u64;
                std::thread::sleep(Duration::from_millis(rng.range(t / 4, t)));
                stale.answer_expired_off();
                Ok(Some(fault(start, None)))
            },
            FaultKind::MoveHolder => {
                // A holder kept holding through the move (unless another
                // fault's thread keeps one already: then the latest holder).
                let lock = self.locks[rng.range(0, self.locks.len() as u64 - 1) as usize];
                let kept = self.resource.keep_next_writer_unless_keeping(lock, Duration::from_secs(5));
                let Some(holder) = kept.or_else(|| self.holder()) else { return Ok(None) };
                let outcome = self.move_holder(holder, rng);
                self.resource.stop_keeping_of(holder);
                outcome.map(|start| start.map(|start| fault(start, None)))
            },
            FaultKind::PauseHolder => {
                let Some(holder) = self.holder() else { return Ok(None) };
                let Some(&process) = self.process_of.get(&holder) else { return Ok(None) };
                let Some(&pid) = self.worker_pids.get(process) else { return Ok(None) };
                signal(pid, libc::SIGSTOP)?;
                let start = mono_ns();
                // Long enough for the session to expire AND the next holder
                // to be granted and write: on waking, the paused holder's
                // pending write is stale and the resource must refuse it.
                std::thread::sleep(self.hold + Duration::from_secs(1));
                signal(pid, libc::SIGCONT)?;
                Ok(Some(fault(start, Some(process))))
            },
            FaultKind::DropCreateReply => {
                // The holder creates a new node right after it releases:
                // arm its proxies; otherwise any contender's.
                let target = self.holder().unwrap_or_else(|| rng.range(0, self.groups.len() as u64 - 1) as u32);
                let Some(group) = self.groups.get(target as usize) else { return Ok(None) };
                let before = group.dropped_replies();
                group.drop_next_create_reply();
                let fired = zklock_harness::wait_for(Duration::from_secs(10), || group.dropped_replies() > before);
                group.disarm_drop_create_reply();
                let start = mono_ns();
                Ok(fired.then(|| fault(start, None)))
            },
            FaultKind::PartitionMember => {
                io("waiting for a quorum", c.wait_quorum(SERVE_LIMIT))?;
                // A holder that goes on holding and checking through the
                // fault: a short hold would end (its release pending) before
                // the leader expired its session.
                let lock = self.locks[rng.range(0, self.locks.len() as u64 - 1) as usize];
                let Some(holder) = self.resource.keep_next_writer(lock, Duration::from_secs(10)) else {
                    return Ok(None);
                };
                let outcome = self.partition_holders_member(holder, lock);
                self.resource.stop_keeping();
                outcome.map(|start| start.map(|start| fault(start, None)))
            },
            FaultKind::StallHolder => {
                let target = rng.range(0, self.groups.len() as u64 - 1) as u32;
                let outcome = self.stall_free_create(target);
                self.resource.go();
                self.resource.stop_keeping();
                outcome.map(|stalled| stalled.map(|(start, process)| fault(start, Some(process))))
            },
            FaultKind::ThirdPartyDelete => Ok(None), // in `inject`
        }
    }

    /// Cuts the member that carries `holder`'s connection off from the
    /// quorum while the holder stays connected to it and cannot move to
    /// another member (its proxies to the others drop all traffic), past
    /// the session timeout, and further until `lock` was granted again
    /// (up to 10 s more: a cut-off leader is replaced only once the others
    /// give up on it, after syncLimit x tickTime, and the new leader gives
    /// every session a full timeout), then heals both. A holder kept
    /// holding overlaps that grant unless it learned its loss. The fault's
    /// start, or `None` if the holder was not connected.
    fn partition_holders_member(&self, holder: u32, lock: LockId) -> Result<Option<u64>, String> {
        let c = self.cluster;
        let Some(group) = self.groups.get(holder as usize) else { return Ok(None) };
        let Some(member) = group.proxies().iter().position(|p| p.connections() > 0) else { return Ok(None) };
        io("partitioning a member", c.partition(member))?;
        let start = mono_ns();
        let elsewhere: Vec<_> =
            group.proxies().iter().enumerate().filter(|&(i, _)| i != member).map(|(_, p)| p).collect();
        for p in &elsewhere {
            p.blackhole();
        }
        std::thread::sleep(self.hold + Duration::from_secs(1));
        self.resource.wait_grant_after(start, Duration::from_secs(10), &[lock]);
        let healed = c.heal_partition(member);
        for p in &elsewhere {
            p.heal();
        }
        io("healing the partition", healed)?;
        io("waiting for the member", c.wait_serving(member, SERVE_LIMIT))?;
        Ok(Some(start))
    }

    /// Stops `target`'s process between its create and reading the
    /// replies, on a create made while nobody else is queued on its lock
    /// (the others rest meanwhile), with a timeout longer than the fault
    /// (a short one would end the acquire when it wakes, before anything
    /// else could go wrong): the list answered right behind the
    /// create shows its node first, the case in which an engine that
    /// credited the list's reply with a late send time granted the lock on
    /// an expired session. Its proxies hold the replies, and drop its
    /// traffic once it is stopped, past its session; the others come back
    /// and are granted the lock once the session expired. When it runs
    /// again it is asked to keep holding, if it is granted, until the
    /// fault ends. The fault's start and the stopped process, or `None` if
    /// the others did not come to rest or the target made no create.
    fn stall_free_create(&self, target: u32) -> Result<Option<(u64, usize)>, String> {
        let Some(group) = self.groups.get(target as usize) else { return Ok(None) };
        let Some(&process) = self.process_of.get(&target) else { return Ok(None) };
        let Some(&pid) = self.worker_pids.get(process) else { return Ok(None) };
        let Some(&lock) = self.lock_of.get(&target) else { return Ok(None) };
        // Everyone on the lock rests, the target too; then the target alone
        // goes, once its proxies wait for its create.
        let on_lock: Vec<u32> = self.lock_of.iter().filter(|&(_, &l)| l == lock).map(|(&c, _)| c).collect();
        if !self.resource.rest(&on_lock, Duration::from_secs(15)) {
            return Ok(None);
        }
        group.hold_replies_from_next_create();
        self.resource.go_patient(target);
        if !zklock_harness::wait_for(Duration::from_secs(10), || group.held_replies() > 0) {
            group.release_held_replies();
            return Ok(None);
        }
        // Let the list's reply (answered right after the create's) be held
        // too, then stop the process before it reads them.
        std::thread::sleep(Duration::from_millis(20));
        signal(pid, libc::SIGSTOP)?;
        let start = mono_ns();
        group.release_held_replies();
        group.blackhole();
        self.resource.go();
        self.resource.keep(target);
        std::thread::sleep(self.hold + Duration::from_secs(1));
        signal(pid, libc::SIGCONT)?;
        std::thread::sleep(Duration::from_millis(500));
        group.heal();
        Ok(Some((start, process)))
    }

    /// Moves `holder`'s client off the member it is connected through
    /// (`move-holder`): connected (in half of those twice, a moment apart,
    /// each time to one other member; in half of the others with the list
    /// alternating between a silent member alone and it with the third,
    /// in half of those with a silent address that is no member beside
    /// the silent member in every list, a blackholed proxy or, in half,
    /// an address that drops SYNs; in half of those with the third member
    /// silent a moment and then beside the other two in turn),
    /// or while it reconnects (every member silent past its read timeout,
    /// by up to the session timeout more: the session expires in most),
    /// then back to the whole list. The fault's start, or `None` if the
    /// holder was not connected.
    fn move_holder(&self, holder: u32, rng: &mut Rng) -> Result<Option<u64>, String> {
        let Some(group) = self.groups.get(holder as usize) else { return Ok(None) };
        let proxies = group.proxies();
        // The member the holder is on (its proxy has its connection).
        let Some(member) = proxies.iter().position(|p| p.connections() > 0) else { return Ok(None) };
        let others: Vec<String> =
            proxies.iter().enumerate().filter(|&(i, _)| i != member).map(|(_, p)| p.addr().to_string()).collect();
        let reconnecting = rng.range(0, 1) == 1;
        // Connected, half the moves are double: to one other member, and
        // a moment later (while the first move connects) to another, whose
        // list drops the first one's (outside attack round 49, F1).
        let double = !reconnecting && others.len() >= 2 && rng.range(0, 1) == 1;
        // Connected, half the others alternate: one other member silent
        // (blackholed), the list set to it alone and to it with the third
        // in turn, every 100 to 300 ms for up to twice the session timeout
        // (outside attack round 51, F1: the session stayed on the silent
        // one until it expired); in half of those a silent address (a
        // blackholed proxy of its own) beside it in every list (round 52,
        // F2: two hung servers, the healthy one's turn in a list without
        // it round after round).
        let alternate = !reconnecting && !double && others.len() >= 2 && rng.range(0, 1) == 1;
        // (In half of those, an address that drops SYNs instead: an
        // attempt there never reaches a server.)
        let (mut hung, mut dropping) = (None, None);
        if alternate && rng.range(0, 1) == 1 {
            if rng.range(0, 1) == 1 {
                dropping = Some(io("starting an address that drops SYNs", zklock_harness::SynDrop::start())?);
            } else {
                let p = io("starting a silent address", zklock_harness::Proxy::start(proxies[member].upstream()))?;
                p.blackhole();
                hung = Some(p);
            }
        }
        let silent_addr = hung.as_ref().map(|p| p.addr()).or(dropping.as_ref().map(|d| d.addr()));
        let start = mono_ns();
        if reconnecting {
            // Every member silent past the read timeout (2/3 of the
            // session timeout): the client reconnects, its attempts
            // unanswered, when the move comes; in most the session
            // expires before the others heal.
            group.blackhole();
            let beyond = rng.range(50, self.session_timeout.as_millis() as u64);
            std::thread::sleep(self.session_timeout * 2 / 3 + Duration::from_millis(beyond));
        }
        if alternate {
            // The first other member (`others[0]`).
            let silent = usize::from(member == 0);
            proxies[silent].blackhole();
            let every = Duration::from_millis(rng.range(100, 300));
            let until =
                Instant::now() + Duration::from_millis(rng.range(0, self.session_timeout.as_millis() as u64 * 2));
            let mut alone = vec![others[0].clone()];
            alone.extend(silent_addr.map(|a| a.to_string()));
            let mut with = [alone.clone(), others[1..].to_vec()].concat();
            // With a silent address, in half: the third member, silent for
            // the first list only, in every list beside the silent member
            // and then the silent address, swapped in turn (outside attack
            // round 54, F1: each silent one came back as not asked in the
            // round, and the member, once waited on, was never asked
            // again).
            let third = proxies.iter().enumerate().filter(|&(i, _)| i != member).nth(1).map(|(i, _)| i);
            let swap = match (silent_addr, third) {
                (Some(extra), Some(third)) if rng.range(0, 1) == 1 => {
                    proxies[third].blackhole();
                    alone = vec![others[1].clone(), others[0].clone()];
                    with = vec![others[1].clone(), extra.to_string()];
                    Some(third)
                },
                _ => None,
            };
            loop {
                self.move_client(holder, &alone.join(","))?;
                std::thread::sleep(every);
                if let Some(third) = swap {
                    proxies[third].heal();
                }
                self.move_client(holder, &with.join(","))?;
                if Instant::now() >= until {
                    break;
                }
                std::thread::sleep(every);
            }
            proxies[silent].heal();
        } else {
            self.move_client(holder, &if double { others.join("\n") } else { others.join(",") })?;
        }
        if reconnecting {
            std::thread::sleep(Duration::from_millis(rng.range(20, 300)));
            proxies.iter().enumerate().filter(|&(i, _)| i != member).for_each(|(_, p)| p.heal());
        } else if !zklock_harness::wait_for(self.patience(), || proxies[member].connections() == 0) {
            // A move goes once the replies in flight are in (or the
            // connection's read timeout).
            proxies[member].heal();
            self.move_client(holder, &group.connect_string())?;
            return Err(format!("contender {holder} still on its old member {:?} after the move", self.patience()));
        }
        let t = self.hold.as_millis() as u64;
        std::thread::sleep(Duration::from_millis(rng.range(t / 4, t)));
        proxies[member].heal();
        self.move_client(holder, &group.connect_string())?;
        Ok(Some(start))
    }

    /// Gives contender `cid`'s client the server list `hosts` (written
    /// whole: a rename; its process reads it every 10 ms), and waits up to
    /// [`Chaos::patience`] for the process to take it.
    fn move_client(&self, cid: u32, hosts: &str) -> Result<(), String> {
        let staged = self.moves.join(format!(".move-{cid}"));
        let file = self.moves.join(format!("move-{cid}"));
        io("writing a move", std::fs::write(&staged, hosts))?;
        io("writing a move", std::fs::rename(&staged, &file))?;
        match zklock_harness::wait_for(self.patience(), || !file.exists()) {
            true => Ok(()),
            false => Err(format!("contender {cid} did not take its move within {:?}", self.patience())),
        }
    }

    /// How long a move may take to be made: the other lanes' faults may
    /// stop the contender's process meanwhile (`pause-holder` and
    /// `stall-holder`, each for `hold` + 1 s at most).
    fn patience(&self) -> Duration {
        self.hold * 2 + Duration::from_secs(2)
    }

    /// The contender that most recently announced a grant, on either lock,
    /// and still holds it (waiting up to 10 s for one).
    fn holder(&self) -> Option<u32> {
        let mut found = None;
        zklock_harness::wait_for(Duration::from_secs(10), || {
            found = self.resource.current_holder();
            found.is_some()
        });
        found
    }

    /// Undoes every fault: resumes processes and members, heals every
    /// connection, starts dead members, waits for a quorum.
    pub fn restore(&self) {
        self.resource.go();
        self.resource.stop_keeping();
        for &pid in &self.worker_pids {
            let _ = signal(pid, libc::SIGCONT);
        }
        for g in self.groups {
            g.release_held_replies();
            g.heal();
            g.disarm_drop_create_reply();
            for p in g.proxies() {
                p.answer_expired_off();
            }
        }
        for i in 0..self.cluster.len() {
            if self.cluster.is_partitioned(i) {
                let _ = self.cluster.heal_partition(i);
            }
        }
        for i in 0..self.cluster.len() {
            if self.cluster.is_frozen(i) {
                let _ = self.cluster.resume(i);
            }
            if !self.cluster.is_running(i) {
                let _ = self.cluster.start_member(i);
            }
        }
        if let Err(e) = self.cluster.wait_quorum(SERVE_LIMIT) {
            self.errors.lock().unwrap_or_else(PoisonError::into_inner).push(format!("restore: {e}"));
        }
    }
}

fn signal(pid: u32, sig: libc::c_int) -> Result<(), String> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| "pid out of range".to_owned())?;
    // SAFETY: kill(2) has no memory effects; `pid` is a child we have not reaped.
    if unsafe { libc::kill(pid, sig) } == 0 {
        Ok(())
    } else {
        Err(format!("kill({pid}, {sig}): {}", std::io::Error::last_os_error()))
    }
}

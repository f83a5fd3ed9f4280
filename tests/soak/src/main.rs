//! `zklock-soak`: mutual exclusion and lost-lock safety of zklock under
//! server and network failures, measured (issue 7).
//!
//! ```text
//! zklock-soak [--duration 10m] [--processes 3] [--per-process 4] [--multi 2]
//!             [--session-timeout 2s] [--seed N] [--progress-bound 60s]
//!             [--min-handoffs N] [--min-faults N] [--json FILE]
//!             [--locks exclusive,rw,election,semaphore] [--faults KIND,KIND...]
//!             [--self-test-ignore-check]
//! ```
//!
//! It starts a 3-node ZooKeeper ensemble on loopback (through the test
//! harness), a fenced "resource", one proxy group per contender, and
//! `--processes` contender processes (this same program, `worker`
//! subcommand) with `--per-process` contenders each, every contender in a
//! session of its own. The contenders are dealt out over the locks of
//! `--locks` in turn (by default a quarter each on an exclusive lock, a
//! read/write lock, where each acquire takes the read or the write side at
//! random, a leader election and a semaphore of 2 leases, each at its own
//! path); `--multi` more contenders take the exclusive lock and one side of
//! the read/write lock together, as a multi-lock (each member announced
//! and checked as a grant of its lock). Each contender takes its lock in a loop;
//! while it holds it, it writes its fencing token to the resource and calls
//! `check()`. Meanwhile one fault thread per lane runs the chaos schedule
//! (see `chaos.rs`) until the duration is over. Then every fault is undone,
//! the contenders stop and close their sessions, and the recorded run is
//! checked against the five properties, per lock (see `analysis.rs` for the
//! rules of shared holding):
//!
//! 1. no two conflicting safely-held intervals overlap (no more leases
//!    than permits at once), and nobody is
//!    granted a lock on a node a third party deleted while it waited;
//! 2. no stale token is accepted by the resource (and grants' tokens grow);
//! 3. every loss reaches its holder before a conflicting grant (for a
//!    lease, one that would make more holders than permits);
//! 4. no lock node remains once every session is closed;
//! 5. every lock is granted again after every fault (time reported).
//!
//! It prints a summary (violations per lock and per fault class) and exits
//! 0 only if no property is violated, the chaos schedule ran without
//! errors, and the `--min-*` thresholds are met. Times are
//! `CLOCK_MONOTONIC`, shared by every process of the machine.
//!
//! `--self-test-ignore-check` breaks the contenders on purpose (they act as
//! if every `check()` succeeded): the run must then report violations,
//! which shows that the checker can fail.

mod analysis;
mod chaos;
mod clock;
mod resource;
mod third_party;
mod worker;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use zklock_core::{Client, ClientOptions};
use zklock_harness::{Cluster, ClusterOptions, ProxyGroup};

use crate::analysis::{FaultKind, LockId, Mode, Record, Report, Role};
use crate::clock::mono_ns;

const USAGE: &str =
    "usage: zklock-soak [--duration 10m] [--processes 3] [--per-process 4] [--multi 2] [--session-timeout 2s]
                   [--seed N] [--progress-bound 60s] [--min-handoffs N] [--min-faults N] [--json FILE]
                   [--locks exclusive,rw,election,semaphore] [--faults KIND,KIND...] [--self-test-ignore-check]
locks (default: all, contenders dealt out in turn): exclusive, rw, election, semaphore
fault kinds (default: all): kill-leader, kill-follower, freeze-member, restart-ensemble,
                            blackhole-holder, pause-holder, drop-create-reply, third-party-delete,
                            partition-member, stall-holder, mute-holder, stale-member, move-holder";

/// The orchestrator's settings.
#[derive(Clone, Debug)]
struct Settings {
    duration: Duration,
    processes: usize,
    per_process: usize,
    /// `--multi`: contenders taking the exclusive and the read/write lock
    /// together (a multi-lock), besides those of `--per-process`.
    multi: usize,
    session_timeout: Duration,
    seed: u64,
    progress_bound: Duration,
    min_handoffs: usize,
    min_faults: usize,
    json: Option<String>,
    ignore_check: bool,
    locks: Vec<LockId>,
    kinds: Vec<FaultKind>,
}

impl Settings {
    /// The lock contender `cid` takes: the locks in turn.
    fn lock_of(&self, cid: usize) -> LockId {
        self.locks[cid % self.locks.len()]
    }

    /// How many contenders take one lock each.
    fn lock_contenders(&self) -> usize {
        self.processes * self.per_process
    }

    /// The multi-lock contenders: `--multi`, when the run has both the
    /// exclusive and the read/write lock (their members); none otherwise.
    fn multi_contenders(&self) -> usize {
        let both = self.locks.contains(&LockId::Exclusive) && self.locks.contains(&LockId::Rw);
        if both {
            self.multi
        } else {
            0
        }
    }

    /// What contender `cid` takes: the lock contenders come first, then
    /// the multi-lock ones.
    fn takes_of(&self, cid: usize) -> worker::Takes {
        if cid < self.lock_contenders() {
            worker::Takes::Lock(self.lock_of(cid))
        } else {
            worker::Takes::Multi
        }
    }

    /// The process contender `cid` runs in.
    fn process_of(&self, cid: usize) -> usize {
        if cid < self.lock_contenders() {
            cid / self.per_process
        } else {
            (cid - self.lock_contenders()) % self.processes
        }
    }
}

/// `500ms`, `10s`, `2m`, or a plain number of seconds.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {s:?} (use e.g. 500ms, 10s, 2m)");
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(secs).map_err(|_| bad())
}

fn parse_settings(args: &[String]) -> Result<Settings, String> {
    let mut s = Settings {
        duration: Duration::from_secs(600),
        processes: 3,
        per_process: 4,
        multi: 2,
        session_timeout: Duration::from_secs(2),
        seed: mono_ns(),
        progress_bound: Duration::from_secs(60),
        min_handoffs: 0,
        min_faults: 0,
        json: None,
        ignore_check: false,
        locks: LockId::ALL.to_vec(),
        kinds: FaultKind::ALL.to_vec(),
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("{flag} needs a value"));
        let number = |v: String| v.parse::<usize>().map_err(|_| format!("{flag}: not a number: {v:?}"));
        match flag.as_str() {
            "--duration" => s.duration = parse_duration(&value()?)?,
            "--processes" => s.processes = number(value()?)?,
            "--per-process" => s.per_process = number(value()?)?,
            "--multi" => s.multi = number(value()?)?,
            "--session-timeout" => s.session_timeout = parse_duration(&value()?)?,
            "--seed" => s.seed = value()?.parse().map_err(|_| "--seed: not a number".to_owned())?,
            "--progress-bound" => s.progress_bound = parse_duration(&value()?)?,
            "--min-handoffs" => s.min_handoffs = number(value()?)?,
            "--min-faults" => s.min_faults = number(value()?)?,
            "--json" => s.json = Some(value()?),
            "--self-test-ignore-check" => s.ignore_check = true,
            "--locks" => {
                let v = value()?;
                let mut locks = Vec::new();
                for name in v.split(',') {
                    let lock = LockId::from_name(name)
                        .ok_or(format!("unknown lock {name:?} (exclusive, rw, election, semaphore)"))?;
                    if !locks.contains(&lock) {
                        locks.push(lock);
                    }
                }
                s.locks = locks;
            },
            "--faults" => {
                let v = value()?;
                s.kinds = v
                    .split(',')
                    .map(|name| {
                        FaultKind::ALL
                            .into_iter()
                            .find(|k| k.name() == name)
                            .ok_or(format!("unknown fault kind {name:?}"))
                    })
                    .collect::<Result<_, _>>()?;
            },
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    if s.processes == 0 || s.per_process == 0 {
        return Err("--processes and --per-process must be at least 1".into());
    }
    if s.processes * s.per_process < s.locks.len() {
        return Err("fewer contenders than locks".into());
    }
    Ok(s)
}

fn parse_worker(args: &[String]) -> Result<worker::WorkerConfig, String> {
    let mut cfg = worker::WorkerConfig {
        resource: String::new(),
        session_timeout: Duration::from_secs(2),
        contenders: Vec::new(),
        seed: 1,
        ignore_check: false,
        moves: None,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next().cloned().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--resource" => cfg.resource = value,
            "--session-ms" => {
                cfg.session_timeout = Duration::from_millis(value.parse().map_err(|_| "--session-ms: not a number")?)
            },
            "--seed" => cfg.seed = value.parse().map_err(|_| "--seed: not a number")?,
            "--ignore-check" => cfg.ignore_check = value == "1",
            "--moves" => cfg.moves = Some(value.into()),
            "--contender" => {
                let mut parts = value.splitn(3, '@');
                let (Some(cid), Some(lock), Some(hosts)) = (parts.next(), parts.next(), parts.next()) else {
                    return Err("--contender takes ID@LOCK@HOSTS".into());
                };
                let takes = worker::Takes::from_name(lock).ok_or("--contender: bad lock")?;
                cfg.contenders.push((cid.parse().map_err(|_| "--contender: bad id")?, takes, hosts.to_owned()));
            },
            other => return Err(format!("unknown worker option {other:?}")),
        }
    }
    Ok(cfg)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("worker") {
        return match parse_worker(&args[1..]) {
            Ok(cfg) => ExitCode::from(worker::run(cfg) as u8),
            Err(e) => {
                eprintln!("zklock-soak worker: {e}");
                ExitCode::from(64)
            },
        };
    }
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let settings = match parse_settings(&args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("zklock-soak: {e}\n{USAGE}");
            return ExitCode::from(64);
        },
    };
    match run(&settings) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("zklock-soak: {e}");
            ExitCode::from(2)
        },
    }
}

/// Contender processes, stopped (stdin closed, then killed) on drop.
struct Workers {
    children: Vec<Child>,
}

impl Workers {
    /// Closes every worker's stdin and waits up to `limit` for all to exit;
    /// kills the rest. Returns how many had to be killed or failed.
    fn stop(&mut self, limit: Duration) -> usize {
        for c in &mut self.children {
            drop(c.stdin.take());
        }
        let deadline = Instant::now() + limit;
        let mut bad = 0;
        for c in &mut self.children {
            loop {
                match c.try_wait() {
                    Ok(Some(status)) => {
                        if !status.success() {
                            bad += 1;
                        }
                        break;
                    },
                    Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                    _ => {
                        let _ = c.kill();
                        let _ = c.wait();
                        bad += 1;
                        break;
                    },
                }
            }
        }
        bad
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn run(s: &Settings) -> Result<bool, Box<dyn std::error::Error>> {
    zklock_harness::ensure_zookeeper()?;
    let started = Instant::now();
    // tickTime 500 ms and syncLimit 10: a member cut off from the quorum
    // keeps serving its clients for 5 s, longer than their sessions, as
    // with Debian's stock settings (tickTime 2 s, syncLimit 5).
    let cluster = Cluster::start(
        ClusterOptions::new()
            .size(3)
            .tick_time_ms(500)
            .extra_cfg("syncLimit=10")
            .partitionable(true)
            .start_timeout(Duration::from_secs(90)),
    )?;
    cluster.wait_quorum(Duration::from_secs(90))?;
    let resource = resource::Resource::start()?;
    let contenders = s.lock_contenders() + s.multi_contenders();
    let groups = (0..contenders).map(|_| ProxyGroup::for_cluster(&cluster)).collect::<Result<Vec<_>, _>>()?;
    let logs = cluster.dir().join("contenders");
    std::fs::create_dir_all(&logs)?;
    let moves = cluster.dir().join("moves");
    std::fs::create_dir_all(&moves)?;
    let me = std::env::current_exe()?;
    let mut process_of = BTreeMap::new();
    let mut workers = Workers { children: Vec::new() };
    for p in 0..s.processes {
        let mut cmd = Command::new(&me);
        cmd.arg("worker")
            .args(["--resource", &resource.addr().to_string()])
            .args(["--session-ms", &s.session_timeout.as_millis().to_string()])
            .args(["--seed", &(s.seed ^ p as u64).to_string()])
            .args(["--ignore-check", if s.ignore_check { "1" } else { "0" }])
            .arg("--moves")
            .arg(&moves);
        for cid in (0..contenders).filter(|&c| s.process_of(c) == p) {
            cmd.arg("--contender").arg(format!("{cid}@{}@{}", s.takes_of(cid).name(), groups[cid].connect_string()));
            process_of.insert(cid as u32, p);
        }
        let log = std::fs::File::create(logs.join(format!("process-{p}.log")))?;
        cmd.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(log);
        workers.children.push(cmd.spawn()?);
    }
    let per_lock: Vec<String> = s
        .locks
        .iter()
        .map(|&l| {
            let on = (0..s.lock_contenders()).filter(|&c| s.lock_of(c) == l).count();
            format!("{on} on {} ({})", l.name(), l.path())
        })
        .chain(
            (s.multi_contenders() > 0).then(|| format!("{} on a multi-lock of exclusive and rw", s.multi_contenders())),
        )
        .collect();
    println!(
        "soak: 3-node ensemble, {contenders} contenders in {} processes ({}), session timeout {:?}, {:?} of chaos, seed {}",
        s.processes,
        per_lock.join(", "),
        s.session_timeout,
        s.duration,
        s.seed
    );
    if !resource.wait_grant_after(0, Duration::from_secs(60), &s.locks) {
        return Err("not every lock was granted within 60 s of starting".into());
    }
    let chaos = chaos::Chaos {
        cluster: &cluster,
        groups: &groups,
        resource: &resource,
        locks: s.locks.clone(),
        outsider: Mutex::new(third_party::Outsider::new(cluster.connect_string(), &s.locks)),
        worker_pids: workers.children.iter().map(Child::id).collect(),
        process_of: process_of.clone(),
        lock_of: (0..s.lock_contenders()).map(|cid| (cid as u32, s.lock_of(cid))).collect(),
        hold: s.session_timeout + Duration::from_millis(500),
        session_timeout: s.session_timeout,
        moves: moves.clone(),
        until: Instant::now() + s.duration,
        faults: Mutex::default(),
        errors: Mutex::default(),
    };
    chaos.run(&s.kinds, s.seed);
    // Progress after the last fault, then a quiet stop.
    resource.wait_grant_after(mono_ns(), s.progress_bound, &s.locks);
    std::thread::sleep(Duration::from_millis(500));
    let stuck = workers.stop(Duration::from_secs(30));
    let mut errors = chaos.errors.into_inner().unwrap_or_default();
    // A failed check still lets the run's record be analysed and printed.
    let leftover_nodes = leftovers(&cluster.connect_string(), &s.locks, s.session_timeout * 2 + Duration::from_secs(5))
        .unwrap_or_else(|e| {
            errors.push(format!("checking for leftover lock nodes: {e}"));
            Vec::new()
        });
    let (intervals, writes) = resource.snapshot();
    let faults = chaos.faults.into_inner().unwrap_or_default();
    let record = Record { locks: s.locks.clone(), intervals, writes, faults, leftover_nodes, process_of };
    let settle = s.session_timeout + Duration::from_secs(1);
    let report = analysis::analyse(&record, s.progress_bound.as_nanos() as u64, settle.as_nanos() as u64);
    let ok = summarise(s, &record, &report, &errors, stuck, started.elapsed())?;
    if !ok {
        eprintln!(
            "soak: contender logs and server logs: {} (kept with ZKLOCK_HARNESS_KEEP=1)",
            cluster.dir().display()
        );
    }
    Ok(ok)
}

/// Lock nodes left under the locks' paths once every contender closed its
/// session, after waiting up to `limit` for them to go. Connecting is tried
/// again for up to a minute (the last fault may leave the ensemble slow to
/// take new sessions).
fn leftovers(
    hosts: &str,
    locks: &[LockId],
    limit: Duration,
) -> Result<Vec<(LockId, String)>, Box<dyn std::error::Error>> {
    let options = ClientOptions::new(hosts).connect_timeout(Duration::from_secs(20));
    let mut tries = 0;
    let client = loop {
        match Client::connect(options.clone()) {
            Ok(c) => break c,
            Err(e) if tries < 3 => {
                tries += 1;
                eprintln!("soak: connecting to check for leftover lock nodes: {e}; trying again");
            },
            Err(e) => return Err(e.into()),
        }
    };
    let mut left = Vec::new();
    let gone = zklock_harness::wait_for(limit, || {
        left.clear();
        for &lock in locks {
            for path in lock.node_paths() {
                match client.participants(&path) {
                    Ok(p) => left.extend(
                        p.into_iter().map(|p| (lock, format!("{path}/{} (session {:#x})", p.name, p.session_id))),
                    ),
                    Err(_) => return false,
                }
            }
        }
        left.is_empty()
    });
    client.close();
    if gone {
        Ok(Vec::new())
    } else {
        Ok(left)
    }
}

fn millis(ns: Option<u64>) -> String {
    ns.map_or("-".to_owned(), |n| format!("{:.0}", n as f64 / 1e6))
}

/// The properties' names in the summary, numbered 1 to 5.
const PROPERTIES: [&str; 5] = [
    "1 overlapping safely-held intervals",
    "2 stale tokens accepted / tokens not growing",
    "3 losses not reported before the next grant",
    "4 lock nodes left after every session closed",
    "5 faults without a grant afterwards",
];

/// Grants on `lock` of `mode` (any mode if `None`).
fn grants(record: &Record, lock: LockId, mode: Option<Mode>) -> usize {
    record.writes.iter().filter(|w| w.enter && w.mode.lock() == lock && mode.is_none_or(|m| w.mode == m)).count()
}

/// Third-party deletes of `role` on `lock` of `mode` (any if `None`).
fn deletes(record: &Record, role: Role, lock: Option<LockId>, mode: Option<Mode>) -> usize {
    record
        .faults
        .iter()
        .filter_map(|f| f.deleted.as_ref())
        .filter(|d| d.role == role && lock.is_none_or(|l| d.lock == l) && mode.is_none_or(|m| d.mode == m))
        .count()
}

/// Waiters' nodes deleted in one transaction with their holder's (the two
/// faults of one injection start together).
fn deleted_with_holder(record: &Record) -> usize {
    let deleted: Vec<(u64, &analysis::DeletedNode)> =
        record.faults.iter().filter_map(|f| f.deleted.as_ref().map(|d| (f.start, d))).collect();
    deleted
        .iter()
        .filter(|(start, d)| {
            d.role == Role::Waiter
                && deleted.iter().any(|(s, h)| s == start && h.role == Role::Holder && h.lock == d.lock)
        })
        .count()
}

/// Holders' nodes counted as deleted although the delete's reply was lost.
fn reply_lost(record: &Record) -> usize {
    record.faults.iter().filter_map(|f| f.deleted.as_ref()).filter(|d| d.reply_lost).count()
}

/// What became of the holders whose node a third party deleted, summed up.
struct HolderDeleteStats {
    count: usize,
    noticed: Vec<u64>,
    unnoticed: usize,
    next_grant: Vec<u64>,
    noticed_late: usize,
    overlapped: usize,
}

impl HolderDeleteStats {
    fn of(report: &Report) -> HolderDeleteStats {
        let h = &report.holder_deletes;
        HolderDeleteStats {
            count: h.len(),
            noticed: h.iter().filter_map(|d| d.noticed_after).collect(),
            unnoticed: h.iter().filter(|d| d.noticed_after.is_none()).count(),
            next_grant: h.iter().filter_map(|d| d.next_grant_after).collect(),
            noticed_late: h.iter().filter(|d| d.noticed_after_next_grant).count(),
            overlapped: h.iter().filter(|d| d.overlapped).count(),
        }
    }
}

/// Prints the summary (and writes the JSON file); true if the run passed.
fn summarise(
    s: &Settings,
    record: &Record,
    report: &Report,
    errors: &[String],
    stuck: usize,
    elapsed: Duration,
) -> Result<bool, Box<dyn std::error::Error>> {
    let handoffs = record.writes.iter().filter(|w| w.enter).count();
    let accepted = record.writes.iter().filter(|w| w.accepted).count();
    let mut by_kind: BTreeMap<FaultKind, (usize, Vec<u64>, Vec<u64>)> = BTreeMap::new();
    for (r, f) in report.recoveries.iter().zip(&record.faults) {
        let e = by_kind.entry(r.kind).or_default();
        e.0 += 1;
        e.1.extend(r.next_grant_after);
        e.2.push(f.end.saturating_sub(f.start));
    }
    let per_lock: Vec<String> = s
        .locks
        .iter()
        .map(|&l| match l {
            LockId::Exclusive => format!("exclusive {}", grants(record, l, None)),
            LockId::Election => format!("election {} leaderships", grants(record, l, None)),
            LockId::Semaphore => format!(
                "semaphore {} leases, at most {} held at once",
                grants(record, l, None),
                analysis::most_at_once(l, &record.intervals)
            ),
            LockId::Rw => format!(
                "rw {}: {} as reader, {} as writer",
                grants(record, l, None),
                grants(record, l, Some(Mode::Read)),
                grants(record, l, Some(Mode::Write))
            ),
        })
        .chain((s.multi_contenders() > 0).then(|| {
            let multi = |c: u32| c as usize >= s.lock_contenders();
            let sets = record.writes.iter().filter(|w| w.enter && multi(w.cid) && w.mode == Mode::Exclusive).count();
            format!("multi-lock {sets} (each counted above on both its locks)")
        }))
        .collect();
    let mut out = String::new();
    writeln!(out, "\nsoak summary ({:.0} s in all)", elapsed.as_secs_f64())?;
    writeln!(
        out,
        "  handoffs (grants): {handoffs} ({}); writes accepted: {accepted}; stale writes rejected: {}",
        per_lock.join("; "),
        report.stale_rejected
    )?;
    writeln!(
        out,
        "  losses: {} (of which {} while the holder's process was stopped)",
        report.losses, report.paused_losses
    )?;
    writeln!(
        out,
        "  faults injected: how long each lasted, and the time from its end until every lock was granted again (ms):"
    )?;
    writeln!(out, "    {:<18} {:>6} {:>10} {:>10} {:>10} {:>10}", "kind", "count", "lasted", "median", "p99", "max")?;
    let mut short_kinds = Vec::new();
    for kind in FaultKind::ALL {
        let (count, mut rec, mut lasted) = by_kind.remove(&kind).unwrap_or_default();
        if count < s.min_faults && s.kinds.contains(&kind) {
            short_kinds.push(format!("{} ({count})", kind.name()));
        }
        writeln!(
            out,
            "    {:<18} {:>6} {:>10} {:>10} {:>10} {:>10}",
            kind.name(),
            count,
            millis(analysis::quantile(&mut lasted, 0.5)),
            millis(analysis::quantile(&mut rec, 0.5)),
            millis(analysis::quantile(&mut rec, 0.99)),
            millis(analysis::quantile(&mut rec, 1.0)),
        )?;
    }
    if s.kinds.contains(&FaultKind::ThirdPartyDelete) {
        let waiters: Vec<String> = s
            .locks
            .iter()
            .map(|&l| match l {
                LockId::Exclusive => format!("exclusive {}", deletes(record, Role::Waiter, Some(l), None)),
                LockId::Election | LockId::Semaphore => {
                    format!("{} {}", l.name(), deletes(record, Role::Waiter, Some(l), None))
                },
                LockId::Rw => format!(
                    "rw {} waiting readers, {} waiting writers",
                    deletes(record, Role::Waiter, Some(l), Some(Mode::Read)),
                    deletes(record, Role::Waiter, Some(l), Some(Mode::Write))
                ),
            })
            .collect();
        let holders: Vec<String> = s
            .locks
            .iter()
            .map(|&l| match l {
                LockId::Exclusive => format!("exclusive {}", deletes(record, Role::Holder, Some(l), None)),
                LockId::Election | LockId::Semaphore => {
                    format!("{} {}", l.name(), deletes(record, Role::Holder, Some(l), None))
                },
                LockId::Rw => format!(
                    "rw {} readers, {} writers",
                    deletes(record, Role::Holder, Some(l), Some(Mode::Read)),
                    deletes(record, Role::Holder, Some(l), Some(Mode::Write))
                ),
            })
            .collect();
        writeln!(
            out,
            "  third-party deletes: {} waiters' nodes ({}; {} in one transaction with their holder's; granted on \
             their deleted node afterwards: {}); {} holders' nodes ({}; {} with the reply lost, counted once the \
             node was gone)",
            deletes(record, Role::Waiter, None, None),
            waiters.join("; "),
            deleted_with_holder(record),
            report.deleted_waiter_grants,
            deletes(record, Role::Holder, None, None),
            holders.join("; "),
            reply_lost(record)
        )?;
        let mut h = HolderDeleteStats::of(report);
        writeln!(
            out,
            "  holder's node deleted by a third party: loss noticed within {} ms median, {} ms max of the delete \
             ({} of {}; {} released without noticing); next grant {} ms median after the delete; noticed only \
             after it: {}; safely-held interval overlapping it: {} (exempt from properties 1 and 3)",
            millis(analysis::quantile(&mut h.noticed, 0.5)),
            millis(analysis::quantile(&mut h.noticed, 1.0)),
            h.noticed.len(),
            h.count,
            h.unnoticed,
            millis(analysis::quantile(&mut h.next_grant, 0.5)),
            h.noticed_late,
            h.overlapped
        )?;
    }
    let longest = report.recoveries.iter().filter_map(|r| r.next_grant_after.map(|n| (n, r.kind))).max();
    if let Some((ns, kind)) = longest {
        writeln!(out, "  longest recovery: {} ms after {}", millis(Some(ns)), kind.name())?;
    }
    let t0 = record.writes.first().map_or(0, |w| w.arrival);
    for g in &report.gaps {
        let kinds: Vec<&str> = g.faults.iter().map(|k| k.name()).collect();
        writeln!(
            out,
            "  {}: no grant for {:.1} s from t={:.1} s (faults in effect: {})",
            g.lock.name(),
            (g.to - g.from) as f64 / 1e9,
            g.from.saturating_sub(t0) as f64 / 1e9,
            if kinds.is_empty() { "none".to_owned() } else { kinds.join(", ") }
        )?;
    }
    writeln!(out, "  violations:")?;
    for (p, name) in (1u8..).zip(PROPERTIES) {
        let per_lock: Vec<String> =
            s.locks.iter().map(|&l| format!("{} {}", l.name(), report.count_on(p, l))).collect();
        writeln!(out, "    property {name}: {} ({})", report.count(p), per_lock.join(", "))?;
    }
    writeln!(out, "  violations by fault class (each counts under every fault in effect during it, or none):")?;
    writeln!(out, "    {:<18} {:>6} {:>6} {:>6} {:>6} {:>6}", "class", "1", "2", "3", "4", "5")?;
    let classes = FaultKind::ALL.into_iter().filter(|k| s.kinds.contains(k)).map(Some).chain([None]);
    for class in classes {
        let counts: Vec<String> = (1..=5u8).map(|p| format!("{:>6}", report.count_for(p, class))).collect();
        writeln!(out, "    {:<18} {}", class.map_or("none", FaultKind::name), counts.join(" "))?;
    }
    for v in report.violations.iter().take(20) {
        let kinds: Vec<&str> = v.faults.iter().map(|k| k.name()).collect();
        let kinds = if kinds.is_empty() { "none".to_owned() } else { kinds.join(", ") };
        writeln!(out, "    ! property {}: {} [faults: {kinds}]", v.property, v.detail)?;
    }
    for e in errors {
        writeln!(out, "  chaos error: {e}")?;
    }
    if stuck > 0 {
        writeln!(out, "  contender processes that failed or did not stop: {stuck}")?;
    }
    let mut failed = Vec::new();
    if !report.violations.is_empty() {
        failed.push(format!("{} violations", report.violations.len()));
    }
    if !errors.is_empty() {
        failed.push(format!("{} chaos errors", errors.len()));
    }
    if stuck > 0 {
        failed.push(format!("{stuck} contender processes failed"));
    }
    if handoffs < s.min_handoffs {
        failed.push(format!("{handoffs} handoffs < {}", s.min_handoffs));
    }
    if !short_kinds.is_empty() {
        failed.push(format!("fewer than {} faults of: {}", s.min_faults, short_kinds.join(", ")));
    }
    let ok = failed.is_empty();
    writeln!(out, "soak: {}", if ok { "PASSED".to_owned() } else { format!("FAILED: {}", failed.join("; ")) })?;
    print!("{out}");
    if let Some(path) = &s.json {
        std::fs::write(path, json(s, record, report, handoffs, errors, ok))?;
    }
    Ok(ok)
}

/// `{"1":n1,...,"5":n5}` with `count(p)` for each property.
fn per_property(count: impl Fn(u8) -> usize) -> String {
    let fields: Vec<String> = (1..=5u8).map(|p| format!("\"{p}\":{}", count(p))).collect();
    format!("{{{}}}", fields.join(","))
}

fn ms_json(ns: Option<u64>) -> String {
    ns.map_or("null".into(), |n| format!("{:.1}", n as f64 / 1e6))
}

/// The run's results as JSON (hand-written: no serde dependency).
fn json(s: &Settings, record: &Record, report: &Report, handoffs: usize, errors: &[String], ok: bool) -> String {
    let faults: Vec<String> = FaultKind::ALL
        .iter()
        .map(|k| format!("\"{}\":{}", k.name(), record.faults.iter().filter(|f| f.kind == *k).count()))
        .collect();
    let locks: Vec<String> = s.locks.iter().map(|l| format!("\"{}\"", l.name())).collect();
    let handoffs_by_lock: Vec<String> =
        s.locks.iter().map(|&l| format!("\"{}\":{}", l.name(), grants(record, l, None))).collect();
    let by_lock: Vec<String> =
        s.locks.iter().map(|&l| format!("\"{}\":{}", l.name(), per_property(|p| report.count_on(p, l)))).collect();
    let by_fault: Vec<String> = FaultKind::ALL
        .into_iter()
        .filter(|k| s.kinds.contains(k))
        .map(Some)
        .chain([None])
        .map(|k| format!("\"{}\":{}", k.map_or("none", FaultKind::name), per_property(|p| report.count_for(p, k))))
        .collect();
    let recoveries: Vec<String> = report
        .recoveries
        .iter()
        .map(|r| format!("{{\"kind\":\"{}\",\"ms\":{}}}", r.kind.name(), ms_json(r.next_grant_after)))
        .collect();
    let mut h = HolderDeleteStats::of(report);
    let third_party = format!(
        "{{\"waiters\":{},\"waiters_granted_after_delete\":{},\"waiting_exclusive\":{},\"waiting_readers\":{},\"waiting_writers\":{},\"holders\":{},\
         \"holders_reply_lost\":{},\"holders_exclusive\":{},\"holding_readers\":{},\"holding_writers\":{},\"holder_loss_noticed_ms\":\
         {{\"count\":{},\"median\":{},\"max\":{}}},\"holder_released_unnoticed\":{},\"holder_next_grant_ms_median\":{},\
         \"holder_noticed_after_next_grant\":{},\"holder_overlapped_next_grant\":{}}}",
        deletes(record, Role::Waiter, None, None),
        report.deleted_waiter_grants,
        deletes(record, Role::Waiter, None, Some(Mode::Exclusive)),
        deletes(record, Role::Waiter, None, Some(Mode::Read)),
        deletes(record, Role::Waiter, None, Some(Mode::Write)),
        deletes(record, Role::Holder, None, None),
        reply_lost(record),
        deletes(record, Role::Holder, None, Some(Mode::Exclusive)),
        deletes(record, Role::Holder, None, Some(Mode::Read)),
        deletes(record, Role::Holder, None, Some(Mode::Write)),
        h.noticed.len(),
        ms_json(analysis::quantile(&mut h.noticed, 0.5)),
        ms_json(analysis::quantile(&mut h.noticed, 1.0)),
        h.unnoticed,
        ms_json(analysis::quantile(&mut h.next_grant, 0.5)),
        h.noticed_late,
        h.overlapped
    );
    format!(
        "{{\"passed\":{ok},\"duration_s\":{},\"processes\":{},\"per_process\":{},\"session_timeout_ms\":{},\"seed\":{},\
         \"locks\":[{}],\"handoffs\":{handoffs},\"handoffs_by_lock\":{{{}}},\"stale_writes_rejected\":{},\"losses\":{},\
         \"faults\":{{{}}},\"violations\":{},\"violations_by_lock\":{{{}}},\"violations_by_fault\":{{{}}},\
         \"third_party_deletes\":{third_party},\"chaos_errors\":{},\"recoveries\":[{}]}}\n",
        s.duration.as_secs(),
        s.processes,
        s.per_process,
        s.session_timeout.as_millis(),
        s.seed,
        locks.join(","),
        handoffs_by_lock.join(","),
        report.stale_rejected,
        report.losses,
        faults.join(","),
        per_property(|p| report.count(p)),
        by_lock.join(","),
        by_fault.join(","),
        errors.len(),
        recoveries.join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_settings_parse() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("7 days").is_err());
        let s = parse_settings(&["--duration".into(), "90s".into(), "--min-faults".into(), "2".into()]).expect("valid");
        assert_eq!((s.duration, s.min_faults, s.processes), (Duration::from_secs(90), 2, 3));
        assert_eq!(s.locks, LockId::ALL.to_vec());
        assert_eq!(
            (s.lock_of(0), s.lock_of(1), s.lock_of(2), s.lock_of(3), s.lock_of(4)),
            (LockId::Exclusive, LockId::Rw, LockId::Election, LockId::Semaphore, LockId::Exclusive)
        );
        // 12 contenders: three on each lock, one more than the semaphore's
        // permits.
        assert_eq!(s.processes * s.per_process, 12);
        // And two multi-lock contenders, one in each of the first two processes.
        assert_eq!(
            (s.multi_contenders(), s.takes_of(12), s.takes_of(11)),
            (2, worker::Takes::Multi, worker::Takes::Lock(LockId::Semaphore))
        );
        assert_eq!((s.process_of(11), s.process_of(12), s.process_of(13)), (2, 0, 1));
        assert!(s.kinds.contains(&FaultKind::ThirdPartyDelete));
        let s = parse_settings(&["--locks".into(), "rw".into(), "--faults".into(), "third-party-delete".into()])
            .expect("valid");
        assert_eq!((s.locks.clone(), s.kinds.clone()), (vec![LockId::Rw], vec![FaultKind::ThirdPartyDelete]));
        assert_eq!(s.multi_contenders(), 0, "a multi-lock needs both the exclusive and the rw lock");
        assert_eq!(s.lock_of(0), LockId::Rw);
        assert!(parse_settings(&["--locks".into(), "mutex".into()]).is_err());
        assert!(parse_settings(&["--processes".into(), "0".into()]).is_err());
        assert!(parse_settings(&["--bogus".into()]).is_err());
    }
}

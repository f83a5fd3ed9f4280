//! A contender process: several contenders, each with its own ZooKeeper
//! session (its own `Client`, through its own proxies), taking one lock in
//! a loop and writing their fencing token to the resource while they hold
//! it. A contender on the exclusive lock always takes it exclusively; one on
//! the read/write lock picks the read or the write side at random for each
//! acquire (independent handles: `Client::read_lock` / `write_lock`); one on
//! the election stands for leadership; one on the semaphore takes a lease;
//! a multi-lock contender takes the exclusive lock and one side of the
//! read/write lock together. Runs
//! until its standard input closes. The orchestrator moves a contender's
//! client to another server list (`Client::set_hosts`) by writing the list
//! to the file `move-<id>` in the `--moves` directory, which the process
//! reads every 10 ms (see `chaos.rs`, `move-holder`).

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zklock_core::{
    CancelHandle, Client, ClientOptions, ErrorKind, Guard, Lock, LockMode, LockOptions, LockState, MultiLock,
};

use crate::analysis::{LockId, Mode, SEMAPHORE_PERMITS};
use crate::clock::{mono_ns, Rng};
use crate::resource::ResourceClient;

/// What one contender process runs.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// `host:port` of the resource.
    pub resource: String,
    /// Session timeout asked for.
    pub session_timeout: Duration,
    /// Contenders: id, what it takes, and connect string (through its own
    /// proxies).
    pub contenders: Vec<(u32, Takes, String)>,
    /// Seed of the contenders' timing.
    pub seed: u64,
    /// Self-test of the checker only: act as if every `check()` succeeded
    /// (a broken holder), so the run must report violations.
    pub ignore_check: bool,
    /// The directory of the orchestrator's moves (`move-<id>`: a server
    /// list for contender `id`'s client); none: no moves.
    pub moves: Option<PathBuf>,
}

/// Every contender's client, by contender id, for the moves.
type Clients = Arc<Mutex<BTreeMap<u32, Client>>>;

/// How often the moves' directory is read.
const MOVES_POLL: Duration = Duration::from_millis(10);

/// Between the lists of one move file (outside attack round 49, F1: a
/// second `set_hosts` while the first move connects).
const DOUBLE_MOVE_GAP: Duration = Duration::from_millis(2);

/// Reads `dir` every [`MOVES_POLL`] until `stop`: each `move-<id>` file's
/// lines are given to contender `id`'s client as its server list, one
/// after the other ([`DOUBLE_MOVE_GAP`] apart), and the file removed (the
/// orchestrator writes it whole, by a rename).
fn take_moves(dir: &std::path::Path, clients: &Clients, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(MOVES_POLL);
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(cid) = name.to_str().and_then(|n| n.strip_prefix("move-")).and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Some(client) = clients.lock().ok().and_then(|c| c.get(&cid).cloned()) else { continue };
            let Ok(hosts) = std::fs::read_to_string(entry.path()) else { continue };
            let _ = std::fs::remove_file(entry.path());
            // One list per line, [`DOUBLE_MOVE_GAP`] apart: a second move
            // while the first one connects.
            for (k, hosts) in hosts.lines().map(str::trim).filter(|l| !l.is_empty()).enumerate() {
                if k > 0 {
                    std::thread::sleep(DOUBLE_MOVE_GAP);
                }
                match client.set_hosts(hosts) {
                    Ok(()) => eprintln!("{:.3} contender {cid}: moved to {hosts}", secs()),
                    Err(e) => eprintln!("{:.3} contender {cid}: set_hosts({hosts}): {e}", secs()),
                }
            }
        }
    }
}

/// What a contender takes in each round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    /// One lock.
    Lock(LockId),
    /// A multi-lock over the exclusive lock and the read/write lock (its
    /// read or write side at random, each round), all or none.
    Multi,
}

impl Takes {
    /// The name on the worker's command line: a lock's name, or `multi`.
    pub fn name(self) -> &'static str {
        match self {
            Takes::Lock(lock) => lock.name(),
            Takes::Multi => "multi",
        }
    }

    /// What `name` names.
    pub fn from_name(name: &str) -> Option<Takes> {
        if name == "multi" {
            return Some(Takes::Multi);
        }
        LockId::from_name(name).map(Takes::Lock)
    }
}

/// The lock handles a contender picks from each round: one lock per mode,
/// or multi-locks (one per combination of members' modes).
enum Handles {
    Locks(Vec<(Mode, Lock)>),
    Multi(Vec<(Vec<Mode>, MultiLock)>),
}

impl Handles {
    fn new(client: &Client, cid: u32, takes: Takes) -> zklock_core::Result<Handles> {
        let lock = |lock_id: LockId| -> zklock_core::Result<Vec<(Mode, Lock)>> {
            let path = lock_id.path();
            Ok(match lock_id {
                LockId::Exclusive => vec![(Mode::Exclusive, client.lock(path)?)],
                LockId::Rw => vec![(Mode::Read, client.read_lock(path)?), (Mode::Write, client.write_lock(path)?)],
                LockId::Election => vec![(Mode::Leader, client.election(path, format!("contender {cid}"))?)],
                LockId::Semaphore => {
                    let data = LockOptions::default().data(format!("contender {cid}"));
                    vec![(Mode::Lease, client.semaphore(path, SEMAPHORE_PERMITS, data)?)]
                },
            })
        };
        Ok(match takes {
            Takes::Lock(lock_id) => Handles::Locks(lock(lock_id)?),
            Takes::Multi => {
                let (x, rw) = (LockId::Exclusive.path(), LockId::Rw.path());
                let mut multis = Vec::new();
                for (mode, core_mode) in [(Mode::Read, LockMode::Read), (Mode::Write, LockMode::Write)] {
                    // The members in the canonical order (by path).
                    let multi = client.multi_lock(&[(x, LockMode::Exclusive), (rw, core_mode)])?;
                    multis.push((vec![Mode::Exclusive, mode], multi));
                }
                Handles::Multi(multis)
            },
        })
    }

    fn cancel_handles(&self) -> Vec<CancelHandle> {
        match self {
            Handles::Locks(locks) => locks.iter().map(|(_, l)| l.cancel_handle()).collect(),
            Handles::Multi(multis) => {
                multis.iter().flat_map(|(_, m)| m.locks().iter().map(Lock::cancel_handle)).collect()
            },
        }
    }
}

/// Runs the contenders until standard input reaches EOF; returns the exit
/// code (0 unless the resource could not be reached).
pub fn run(cfg: WorkerConfig) -> i32 {
    // Die with the orchestrator even if it is killed.
    // SAFETY: prctl with PR_SET_PDEATHSIG and a signal number has no memory effects.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let stop = Arc::new(AtomicBool::new(false));
    let cancels: Arc<Mutex<Vec<CancelHandle>>> = Arc::default();
    {
        let (stop, cancels) = (stop.clone(), cancels.clone());
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
            stop.store(true, Ordering::SeqCst);
            for c in cancels.lock().map(|c| c.clone()).unwrap_or_default() {
                c.cancel();
            }
        });
    }
    let clients: Clients = Arc::default();
    if let Some(dir) = cfg.moves.clone() {
        let (clients, stop) = (clients.clone(), stop.clone());
        std::thread::spawn(move || take_moves(&dir, &clients, &stop));
    }
    let threads: Vec<_> = cfg
        .contenders
        .iter()
        .map(|(cid, takes, hosts)| {
            let (cfg, stop, cancels, clients, cid, takes, hosts) =
                (cfg.clone(), stop.clone(), cancels.clone(), clients.clone(), *cid, *takes, hosts.clone());
            std::thread::spawn(move || contender(&cfg, cid, takes, &hosts, &stop, &cancels, &clients))
        })
        .collect();
    let mut code = 0;
    for t in threads {
        if !matches!(t.join(), Ok(true)) {
            code = 1;
        }
    }
    code
}

/// `CLOCK_MONOTONIC` in seconds, to stamp log lines.
fn secs() -> f64 {
    mono_ns() as f64 / 1e9
}

/// One contender taking `takes`; false if it could not talk to the resource.
fn contender(
    cfg: &WorkerConfig,
    cid: u32,
    takes: Takes,
    hosts: &str,
    stop: &AtomicBool,
    cancels: &Mutex<Vec<CancelHandle>>,
    clients: &Clients,
) -> bool {
    let Ok(mut resource) = ResourceClient::connect(&cfg.resource) else {
        eprintln!("{:.3} contender {cid}: cannot reach the resource at {}", secs(), cfg.resource);
        return false;
    };
    let mut rng = Rng::new(cfg.seed ^ (u64::from(cid) << 32 | 0x5eed));
    let options = ClientOptions::new(hosts)
        .session_timeout(cfg.session_timeout)
        .connect_timeout(Duration::from_secs(10))
        .operation_timeout(Duration::from_secs(2));
    let client = loop {
        if stop.load(Ordering::SeqCst) {
            return true;
        }
        match Client::connect(options.clone()) {
            Ok(c) => break c,
            Err(e) => {
                eprintln!("{:.3} contender {cid}: connect: {e}", secs());
                std::thread::sleep(Duration::from_millis(200));
            },
        }
    };
    if let Ok(mut c) = clients.lock() {
        c.insert(cid, client.clone());
    }
    let handles = match Handles::new(&client, cid, takes) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("{:.3} contender {cid}: {e}", secs());
            return false;
        },
    };
    if let Ok(mut c) = cancels.lock() {
        c.extend(handles.cancel_handles());
    }
    let mut ok = true;
    while !stop.load(Ordering::SeqCst) && ok {
        let patient = match resource.request(&format!("READY {cid}")) {
            Ok(a) if a == "REST" => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            },
            Ok(a) => a == "GO PATIENT",
            Err(_) => return false,
        };
        let timeout = Duration::from_millis(if patient { 30_000 } else { rng.range(1_000, 6_000) });
        let acquired = match &handles {
            Handles::Locks(locks) => {
                let (mode, lock) = &locks[rng.range(0, locks.len() as u64 - 1) as usize];
                lock.acquire(Some(timeout)).map(|guard| {
                    let check = || guard.check();
                    let release = || {
                        let _ = guard.release();
                    };
                    hold(cid, &[(*mode, &guard)], &check, &release, &mut resource, &mut rng, cfg.ignore_check)
                })
            },
            Handles::Multi(multis) => {
                let (modes, multi) = &multis[rng.range(0, multis.len() as u64 - 1) as usize];
                multi.acquire(Some(timeout)).map(|guard| {
                    let members: Vec<(Mode, &Guard)> = modes.iter().copied().zip(guard.guards()).collect();
                    let check = || guard.check();
                    let release = || {
                        let _ = guard.release();
                    };
                    hold(cid, &members, &check, &release, &mut resource, &mut rng, cfg.ignore_check)
                })
            },
        };
        match acquired {
            Ok(still) => ok = still,
            Err(e) if matches!(e.kind(), ErrorKind::Timeout | ErrorKind::Cancelled) => {},
            Err(e) => {
                eprintln!("{:.3} contender {cid}: acquire ({}): {e}", secs(), takes.name());
                std::thread::sleep(Duration::from_millis(50));
            },
        }
    }
    client.close();
    ok
}

/// Holds the lock for a few steps; each step waits a little (the "work"),
/// writes to the resource, then checks that the lock is still safely held.
/// While the resource's answers say `KEEP`, goes on with more steps (a long
/// hold through a fault). Reports the interval. False if the resource is
/// gone. A multi-lock's `members` (one guard per lock) are announced,
/// written and reported each as a grant of its own lock, with the one
/// `check` of the set.
fn hold(
    cid: u32,
    members: &[(Mode, &Guard)],
    check: &dyn Fn() -> zklock_core::Result<()>,
    release: &dyn Fn(),
    resource: &mut ResourceClient,
    rng: &mut Rng,
    ignore_check: bool,
) -> bool {
    let check = || if ignore_check { Ok(()) } else { check() };
    let notices: Arc<Mutex<Vec<u64>>> = Arc::default();
    for (_, guard) in members {
        let notices = notices.clone();
        guard.on_state_change(move |s| {
            if s != LockState::Held {
                if let Ok(mut n) = notices.lock() {
                    n.push(mono_ns());
                }
            }
        });
    }
    if check().is_err() {
        release();
        return true;
    }
    let start = mono_ns();
    let mut keep = false;
    for (mode, guard) in members {
        let (m, token) = (mode.code(), guard.fencing_token());
        let Ok(answer) = resource.request(&format!("ENTER {m} {cid} {token} {start}")) else { return false };
        keep |= answer.ends_with("KEEP");
    }
    let mut end = start;
    let mut lost = false;
    let steps = rng.range(1, 4);
    let mut step = 0;
    while step < steps || keep {
        step += 1;
        std::thread::sleep(Duration::from_millis(rng.range(2, 20)));
        // The write lands some time after the last check, as real work
        // would: a holder stopped in between writes late, with its old
        // token, and the resource must refuse it.
        keep = false;
        for (mode, guard) in members {
            let (m, token) = (mode.code(), guard.fencing_token());
            let Ok(answer) = resource.request(&format!("WRITE {m} {cid} {token} {start}")) else { return false };
            keep |= answer.ends_with("KEEP");
        }
        let checked = check();
        let now = mono_ns();
        if checked.is_err() {
            if let Ok(mut n) = notices.lock() {
                n.push(now);
            }
            lost = true;
            break;
        }
        end = now;
    }
    release();
    // A suspension that ended (same session, node still ours) before the
    // last good check was not a loss; the loss was learned at the first
    // notice after it.
    let noticed = notices.lock().ok().and_then(|n| n.iter().copied().filter(|&t| t >= end).min());
    let noticed = noticed.map_or("-".to_owned(), |t| t.to_string());
    let verdict = if lost { "lost" } else { "release" };
    members.iter().all(|(mode, guard)| {
        let (m, token) = (mode.code(), guard.fencing_token());
        resource.request(&format!("INTERVAL {m} {cid} {token} {start} {end} {noticed} {verdict}")).is_ok()
    })
}

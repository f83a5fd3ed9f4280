//! Benchmark driver for the zklock Rust core (`impl=zklock`) and for the
//! raw-client floor (`impl=floor`: create + getChildren + delete on a plain
//! session of zklock's own session layer, `zklock-zk`, no lock logic).
//!
//! Every driver of `make bench` (this one, C, Python, Node, Curator, kazoo)
//! speaks the same small command line, documented in `bench/README.md`:
//!
//! ```text
//! zklock-bench-driver SCENARIO HOSTS PATH [key=value ...]
//! ```
//!
//! and prints one JSON line `{"result": {...}}` on stdout at the end (the
//! herd scenario, and `zklock-bench load`'s `long-queue` and `many-locks`,
//! also print `{"event": ...}` lines and read commands from stdin).

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use zklock_core::{Client, ClientOptions, ConnectionState, ErrorKind};
use zklock_zk as zk;

#[path = "../clock.rs"]
mod clock;
#[path = "../raw.rs"]
mod raw;

use clock::unix_us;

type R<T> = Result<T, String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The `key=value` parameters, with defaults.
struct Params(HashMap<String, String>);

impl Params {
    fn num(&self, key: &str, default: u64) -> u64 {
        self.0.get(key).and_then(|v| v.parse().ok()).unwrap_or(default)
    }
    fn str(&self, key: &str, default: &str) -> String {
        self.0.get(key).cloned().unwrap_or_else(|| default.to_owned())
    }
}

fn connect(hosts: &str) -> R<Client> {
    Client::connect(ClientOptions::new(hosts).session_timeout(Duration::from_secs(10))).map_err(err)
}

/// Creates `path` and its missing ancestors (persistent, open ACL); an
/// existing node is left as it is.
async fn mkdir(zk: &zk::Session, path: &str) -> Result<(), zk::Error> {
    let ends = path.match_indices('/').skip(1).map(|(i, _)| i).chain([path.len()]);
    for end in ends {
        match zk.create(&path[..end], b"", &zk::Acl::open(), zk::CreateMode::Persistent).await {
            Ok(_) | Err(zk::Error::Server(zk::Code::NodeExists)) => {},
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A raw ZooKeeper session with its own single-threaded runtime.
struct Raw {
    rt: tokio::runtime::Runtime,
    zk: zk::Session,
}

impl Raw {
    fn connect(hosts: &str) -> R<Raw> {
        let (rt, zk) = raw::connect(hosts, Duration::from_secs(10), false)?;
        Ok(Raw { rt, zk })
    }

    fn ensure(&self, path: &str) -> R<()> {
        self.rt.block_on(mkdir(&self.zk, path)).map_err(err)
    }

    /// One floor cycle: create (ephemeral sequential), list, delete, each
    /// awaited before the next (three round trips).
    fn cycle(&self, path: &str) -> R<()> {
        let (zk, open) = (&self.zk, zk::Acl::open());
        self.rt.block_on(async {
            let eph = zk::CreateMode::EphemeralSequential;
            let (node, _) = zk.create(&format!("{path}/n-"), b"", &open, eph).await.map_err(err)?.value;
            let _ = zk.children(path).await.map_err(err)?;
            zk.delete(&node, -1).await.map(drop).map_err(err)
        })
    }

    /// Creates `n` ephemeral sequential children of `path` named as
    /// Curator and zklock name a queued node (`_c_<uuid>-lock-<seq>`, 50
    /// bytes each).
    fn fill(&self, path: &str, n: usize) -> R<()> {
        let (open, eph) = (zk::Acl::open(), zk::CreateMode::EphemeralSequential);
        self.rt.block_on(async {
            for i in 0..n {
                let name = format!("{path}/_c_{:08x}-0000-4000-8000-{:012x}-lock-", i, i);
                self.zk.create(&name, b"", &open, eph).await.map_err(err)?;
            }
            Ok(())
        })
    }

    fn count_children(&self, path: &str) -> usize {
        self.rt.block_on(self.zk.children(path)).map(|c| c.value.len()).unwrap_or(0)
    }
}

/// The mutual-exclusion check: every critical section enters and exits a
/// shared counter; a second holder inside is a violation.
#[derive(Default)]
struct Exclusion {
    inside: AtomicUsize,
    violations: AtomicUsize,
}

impl Exclusion {
    fn enter(&self) {
        if self.inside.fetch_add(1, Ordering::AcqRel) != 0 {
            self.violations.fetch_add(1, Ordering::AcqRel);
        }
    }
    fn exit(&self) {
        self.inside.fetch_sub(1, Ordering::AcqRel);
    }
}

/// CPU time (user + system) of this process so far, in seconds.
fn cpu_s() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let u = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(u.ru_utime) + secs(u.ru_stime)
}

/// Tells the runner the measured part starts or ends (it reads the
/// server's CPU time then).
fn event(name: &str) {
    println!("{}", json!({ "event": name }));
}

fn uncontended(hosts: &str, path: &str, p: &Params) -> R<Value> {
    let iters = p.num("iters", 1000);
    let warmup = p.num("warmup", 100);
    if p.str("impl", "zklock").starts_with("hop") {
        // Profiling aid: the floor's cycle run on a one-worker runtime and
        // waited for from the calling thread (as zklock's blocking API
        // does): `hop1` one hand-over per cycle, `hop3` one per request.
        let per_op = p.str("impl", "") == "hop3";
        let (rt, zk) = raw::connect(hosts, Duration::from_secs(10), true)?;
        let _ = rt.block_on(mkdir(&zk, path));
        let hop = |f: std::pin::Pin<Box<dyn std::future::Future<Output = R<()>> + Send>>| -> R<()> {
            let (tx, rx) = mpsc::sync_channel(1);
            rt.spawn(async move {
                let _ = tx.send(f.await);
            });
            rx.recv().map_err(err)?
        };
        timed(warmup as usize, iters as usize, |_| {
            let (zk, path) = (zk.clone(), path.to_owned());
            if per_op {
                let (eph, open) = (zk::CreateMode::EphemeralSequential, zk::Acl::open());
                let (z, pa) = (zk.clone(), path.clone());
                let (tx, rx) = mpsc::sync_channel(1);
                rt.spawn(async move {
                    let _ = tx.send(z.create(&format!("{pa}/n-"), b"", &open, eph).await.map(|r| r.value.0));
                });
                let node = rx.recv().map_err(err)?.map_err(err)?;
                let (z, pa) = (zk.clone(), path.clone());
                hop(Box::pin(async move { z.children(&pa).await.map(drop).map_err(err) }))?;
                let z = zk.clone();
                hop(Box::pin(async move { z.delete(&node, -1).await.map(drop).map_err(err) }))?;
            } else {
                hop(Box::pin(async move {
                    let (eph, open) = (zk::CreateMode::EphemeralSequential, zk::Acl::open());
                    let (node, _) = zk.create(&format!("{path}/n-"), b"", &open, eph).await.map_err(err)?.value;
                    zk.children(&path).await.map_err(err)?;
                    zk.delete(&node, -1).await.map(drop).map_err(err)
                }))?;
            }
            Ok(())
        })
    } else if p.str("impl", "zklock") == "floor" {
        let raw = Raw::connect(hosts)?;
        raw.ensure(path)?;
        timed(warmup as usize, iters as usize, |_| raw.cycle(path))
    } else {
        let client = connect(hosts)?;
        let lock = client.lock(path).map_err(err)?;
        let (mut acq, mut rel) = (Vec::new(), Vec::new());
        let hold = Duration::from_micros(p.num("hold_us", 0));
        let mut out = timed(warmup as usize, iters as usize, |measured| {
            let t = Instant::now();
            let g = lock.acquire(Some(Duration::from_secs(30))).map_err(err)?;
            if !hold.is_zero() {
                std::thread::sleep(hold);
            }
            let t1 = Instant::now();
            g.release().map_err(err)?;
            if measured {
                acq.push((t1 - t).as_secs_f64() * 1e6);
                rel.push(t1.elapsed().as_secs_f64() * 1e6);
            }
            Ok(())
        })?;
        client.close();
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied()
        };
        out["acquire_median_us"] = json!(med(&mut acq));
        out["release_median_us"] = json!(med(&mut rel));
        Ok(out)
    }
}

/// The measurement clock shared by the workers of one run.
#[derive(Clone, Copy)]
struct Window {
    from: Instant,
    end: Instant,
}

impl Window {
    fn new(p: &Params) -> Window {
        let start = Instant::now();
        Window {
            from: start + Duration::from_millis(p.num("warmup_ms", 500)),
            end: start + Duration::from_millis(p.num("duration_ms", 3000)),
        }
    }
    fn counts(&self, t: Instant) -> bool {
        t >= self.from && t < self.end
    }
    fn seconds(&self) -> f64 {
        (self.end - self.from).as_secs_f64()
    }
}

/// The process's CPU seconds in the window `w` (waits for its end), telling
/// the runner when it starts and ends.
fn window_cpu(w: &Window) -> f64 {
    std::thread::sleep(w.from.saturating_duration_since(Instant::now()));
    event("measuring");
    let cpu0 = cpu_s();
    std::thread::sleep(w.end.saturating_duration_since(Instant::now()));
    let cpu = cpu_s() - cpu0;
    event("measured");
    cpu
}

fn hold(us: u64) {
    if us > 0 {
        std::thread::sleep(Duration::from_micros(us));
    }
}

/// contended / independent / queue: workers loop acquire, check, release
/// until the end of the window; grants inside the window are counted.
/// `sessions` sessions carry `waiters` workers (round robin); `independent`
/// gives every worker its own lock path.
fn throughput(hosts: &str, path: &str, p: &Params, independent: bool) -> R<Value> {
    let sessions = p.num("sessions", 2).max(1) as usize;
    let waiters = p.num("waiters", sessions as u64).max(1) as usize;
    let hold_us = p.num("hold_us", 0);
    let floor = p.str("impl", "zklock") == "floor";
    let mut clients = Vec::new();
    let mut raws = Vec::new();
    for _ in 0..sessions {
        if floor {
            let raw = Raw::connect(hosts)?;
            raw.ensure(path)?;
            raws.push(Arc::new(raw));
        } else {
            clients.push(connect(hosts)?);
        }
    }
    if floor {
        for i in 0..waiters {
            raws[0].ensure(&format!("{path}/{i}"))?;
        }
    }
    let barrier = Arc::new(Barrier::new(waiters + 1));
    let window = Arc::new(Mutex::new(None::<Window>));
    let excl: Vec<Arc<Exclusion>> = (0..if independent { waiters } else { 1 }).map(|_| Arc::default()).collect();
    let mut handles = Vec::new();
    for i in 0..waiters {
        let lock_path = if independent { format!("{path}/{i}") } else { path.to_owned() };
        let ex = excl[if independent { i } else { 0 }].clone();
        let (barrier, window) = (barrier.clone(), window.clone());
        let client = clients.get(i % sessions).cloned();
        let raw = raws.get(i % sessions).cloned();
        handles.push(
            std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || -> R<u64> {
                    let lock = match &client {
                        Some(c) => Some(c.lock(&lock_path).map_err(err)?),
                        None => None,
                    };
                    barrier.wait();
                    let w = window.lock().map_err(err)?.ok_or("no window")?;
                    let mut n = 0u64;
                    while Instant::now() < w.end {
                        if let Some(raw) = &raw {
                            raw.cycle(&lock_path)?;
                            if w.counts(Instant::now()) {
                                n += 1;
                            }
                            continue;
                        }
                        let Some(lock) = &lock else { break };
                        let g = lock.acquire(Some(Duration::from_secs(120))).map_err(err)?;
                        ex.enter();
                        if w.counts(Instant::now()) {
                            n += 1;
                        }
                        hold(hold_us);
                        ex.exit();
                        g.release().map_err(err)?;
                    }
                    Ok(n)
                })
                .map_err(err)?,
        );
    }
    let w = Window::new(p);
    *window.lock().map_err(err)? = Some(w);
    barrier.wait();
    let cpu = window_cpu(&w);
    let mut per = Vec::new();
    for h in handles {
        per.push(h.join().map_err(|_| "worker panicked".to_owned())??);
    }
    let violations: usize = excl.iter().map(|e| e.violations.load(Ordering::Acquire)).sum();
    for c in &clients {
        c.close();
    }
    Ok(json!({ "grants": per.iter().sum::<u64>(), "per_worker": per, "violations": violations,
        "window_s": w.seconds(), "cpu_s": cpu }))
}

/// 8 readers and 2 writers (each its own session) on one read/write lock.
fn rw(hosts: &str, path: &str, p: &Params) -> R<Value> {
    let readers = p.num("readers", 8) as usize;
    let writers = p.num("writers", 2) as usize;
    let hold_us = p.num("hold_us", 1000);
    let state = Arc::new(Mutex::new((0usize, 0usize)));
    let violations = Arc::new(AtomicUsize::new(0));
    let mut clients = Vec::new();
    for _ in 0..readers + writers {
        clients.push(connect(hosts)?);
    }
    let barrier = Arc::new(Barrier::new(readers + writers + 1));
    let window = Arc::new(Mutex::new(None::<Window>));
    let mut handles = Vec::new();
    for (i, client) in clients.iter().enumerate() {
        let writer = i >= readers;
        let lock = if writer { client.write_lock(path) } else { client.read_lock(path) }.map_err(err)?;
        let (barrier, window, state, violations) = (barrier.clone(), window.clone(), state.clone(), violations.clone());
        handles.push(std::thread::spawn(move || -> R<(bool, u64)> {
            barrier.wait();
            let w = window.lock().map_err(err)?.ok_or("no window")?;
            let mut n = 0;
            while Instant::now() < w.end {
                let g = lock.acquire(Some(Duration::from_secs(120))).map_err(err)?;
                {
                    let mut s = state.lock().map_err(err)?;
                    if writer {
                        s.1 += 1;
                    } else {
                        s.0 += 1;
                    }
                    if s.1 > 1 || (s.1 == 1 && s.0 > 0) {
                        violations.fetch_add(1, Ordering::AcqRel);
                    }
                }
                if w.counts(Instant::now()) {
                    n += 1;
                }
                hold(hold_us);
                {
                    let mut s = state.lock().map_err(err)?;
                    if writer {
                        s.1 -= 1;
                    } else {
                        s.0 -= 1;
                    }
                }
                g.release().map_err(err)?;
            }
            Ok((writer, n))
        }));
    }
    let w = Window::new(p);
    *window.lock().map_err(err)? = Some(w);
    barrier.wait();
    let (mut r, mut wr) = (0, 0);
    for h in handles {
        let (writer, n) = h.join().map_err(|_| "worker panicked".to_owned())??;
        if writer {
            wr += n
        } else {
            r += n
        }
    }
    for c in &clients {
        c.close();
    }
    Ok(json!({ "read_grants": r, "write_grants": wr, "grants": r + wr,
        "violations": violations.load(Ordering::Acquire), "window_s": w.seconds() }))
}

fn say(v: Value) {
    println!("{v}");
}

/// herd: a holder and `waiters` queued waiters (waiter i in session
/// i % sessions, queued one after the other so that neighbours in the
/// queue are in different sessions). Prints `{"event":"ready"}`, then for
/// each `release` line on stdin releases the holder and prints
/// `{"event":"granted"}` once the next waiter holds; `quit` ends.
fn herd(hosts: &str, path: &str, p: &Params) -> R<Value> {
    let sessions = p.num("sessions", 8).max(2) as usize;
    let waiters = p.num("waiters", 32) as usize;
    let raw = Raw::connect(hosts)?;
    let mut clients = Vec::new();
    for _ in 0..sessions {
        clients.push(connect(hosts)?);
    }
    let (granted_tx, granted_rx) = mpsc::channel::<(usize, mpsc::Sender<()>)>();
    for i in 0..=waiters {
        let lock = clients[i % sessions].lock(path).map_err(err)?;
        let tx = granted_tx.clone();
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                if let Ok(g) = lock.acquire(Some(Duration::from_secs(600))) {
                    let (rel_tx, rel_rx) = mpsc::channel();
                    let _ = tx.send((i, rel_tx));
                    let _ = rel_rx.recv();
                    let _ = g.release();
                }
            })
            .map_err(err)?;
        let t = Instant::now();
        while raw.count_children(path) < i + 1 {
            if t.elapsed() > Duration::from_secs(10) {
                return Err(format!("waiter {i} did not queue"));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let mut holder = granted_rx.recv_timeout(Duration::from_secs(30)).map_err(err)?;
    say(json!({ "event": "ready" }));
    let mut rounds = 0;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(err)?;
        if line.trim() != "release" {
            break;
        }
        let _ = holder.1.send(());
        holder = granted_rx.recv_timeout(Duration::from_secs(30)).map_err(err)?;
        rounds += 1;
        say(json!({ "event": "granted" }));
    }
    // Blocked waiters fail with Closed; their nodes go with the sessions.
    for c in &clients {
        c.close();
    }
    Ok(json!({ "rounds": rounds }))
}

/// drain: `waiters` waiters (threads, over `sessions` sessions) queue
/// behind a holder, each to acquire once and release at once; once all are
/// queued the holder releases. Repeated `rounds` times; the first warms up.
/// Reported: the time from each counted round's release to its last
/// waiter's release, summed (`window_s`), for `grants` handoffs.
fn drain(hosts: &str, path: &str, p: &Params) -> R<Value> {
    let sessions = p.num("sessions", 8).max(1) as usize;
    let waiters = p.num("waiters", 32) as usize;
    let rounds = p.num("rounds", 3).max(2);
    let raw = Raw::connect(hosts)?;
    let mut clients = Vec::new();
    for _ in 0..sessions {
        clients.push(connect(hosts)?);
    }
    let excl = Arc::new(Exclusion::default());
    let mut window_s = 0.0;
    for round in 0..rounds {
        let holder = clients[0].lock(path).map_err(err)?.acquire(Some(Duration::from_secs(30))).map_err(err)?;
        let last = Arc::new(Mutex::new(None::<Instant>));
        let mut handles = Vec::new();
        for i in 0..waiters {
            let lock = clients[i % sessions].lock(path).map_err(err)?;
            let (last, excl) = (last.clone(), excl.clone());
            handles.push(
                std::thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn(move || -> R<()> {
                        let g = lock.acquire(Some(Duration::from_secs(600))).map_err(err)?;
                        excl.enter();
                        excl.exit();
                        g.release().map_err(err)?;
                        *last.lock().map_err(err)? = Some(Instant::now());
                        Ok(())
                    })
                    .map_err(err)?,
            );
        }
        let t = Instant::now();
        while raw.count_children(path) < waiters + 1 {
            if t.elapsed() > Duration::from_secs(120) {
                return Err("the waiters did not all queue".into());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let start = Instant::now();
        holder.release().map_err(err)?;
        for h in handles {
            h.join().map_err(|_| "waiter panicked".to_owned())??;
        }
        let end = last.lock().map_err(err)?.ok_or("no grant")?;
        if round > 0 {
            window_s += (end - start).as_secs_f64();
        }
    }
    for c in &clients {
        c.close();
    }
    Ok(json!({ "grants": waiters as u64 * (rounds - 1), "window_s": window_s,
        "violations": excl.violations.load(Ordering::Acquire) }))
}

/// The list a woken waiter reads, alone: `children` queued nodes under
/// `path`, then `iters` getChildren of it (after `warmup`), each awaited.
/// What one handoff of a long queue costs more than one of a short queue
/// (a woken waiter lists the queue again; ZooKeeper's API has no shorter
/// read that shows which nodes are before its own).
fn list(hosts: &str, path: &str, p: &Params) -> R<Value> {
    let (warmup, iters) = (p.num("warmup", 300) as usize, p.num("iters", 2000) as usize);
    let raw = Raw::connect(hosts)?;
    raw.ensure(path)?;
    raw.fill(path, p.num("children", 32) as usize)?;
    timed(warmup, iters, |_| raw.rt.block_on(raw.zk.children(path)).map(drop).map_err(err))
}

/// Runs `step` `warmup` times, then `iters` times timed (`step` is told
/// which): each one's time (`lat_us`) and the process's CPU over the timed
/// ones (`cpu_s`), with the measuring/measured events around them.
fn timed(warmup: usize, iters: usize, mut step: impl FnMut(bool) -> R<()>) -> R<Value> {
    let mut lat = Vec::with_capacity(iters);
    let mut cpu0 = 0.0;
    for i in 0..warmup + iters {
        if i == warmup {
            event("measuring");
            cpu0 = cpu_s();
        }
        let t = Instant::now();
        step(i >= warmup)?;
        if i >= warmup {
            lat.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    let cpu = cpu_s() - cpu0;
    event("measured");
    Ok(json!({ "cpu_s": cpu, "lat_us": lat }))
}

/// The mutual-exclusion check of `zklock-bench load`, across processes: a
/// marker file per lock in the directory `ZKLOCK_BENCH_MARKERS` (the
/// runner's, shared by every driver process of a run), created with
/// `O_EXCL` once the lock is granted and removed before the release. A
/// create that finds the file already there means two holders at once.
struct Markers {
    /// The shared directory.
    dir: PathBuf,
    /// Creates that found the marker there: mutual-exclusion violations.
    violations: AtomicUsize,
    /// Creates or removals that failed for another reason (that check did
    /// not happen).
    errors: AtomicUsize,
}

impl Markers {
    /// The directory the runner names in `ZKLOCK_BENCH_MARKERS`.
    fn from_env() -> R<Markers> {
        let dir = std::env::var_os("ZKLOCK_BENCH_MARKERS").ok_or("ZKLOCK_BENCH_MARKERS is not set")?;
        Ok(Markers { dir: PathBuf::from(dir), violations: AtomicUsize::new(0), errors: AtomicUsize::new(0) })
    }

    /// Marks lock `key` as ours; false if the marker could not be made (a
    /// violation if it was there).
    fn enter(&self, key: u64) -> bool {
        match std::fs::OpenOptions::new().write(true).create_new(true).open(self.dir.join(key.to_string())) {
            Ok(_) => true,
            Err(e) => {
                let count = if e.kind() == std::io::ErrorKind::AlreadyExists { &self.violations } else { &self.errors };
                count.fetch_add(1, Ordering::AcqRel);
                false
            },
        }
    }

    /// Removes our marker of lock `key` (`mine`: `enter` made it).
    fn exit(&self, key: u64, mine: bool) {
        if mine && std::fs::remove_file(self.dir.join(key.to_string())).is_err() {
            self.errors.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// long-queue (`zklock-bench load`, issue 33 item 4), one process of
/// several: `waiters` waiters (a thread each) over `sessions` sessions,
/// round robin, all on the one lock `path`; with `holder=1` the first
/// session takes (and marks) the lock before anything else. Says `{"event":"ready"}`,
/// then reads commands on stdin: `enqueue` starts the waiters, each
/// acquiring once (timeout `timeout_s`), marking its critical section
/// ([`Markers`]) and releasing at once; `release` releases the holder
/// (`{"event":"released"}`); anything else (`finish`) ends. The result has
/// the time of every grant so far (`grant_us`, µs since the epoch), the
/// acquires and releases that failed and the marker violations.
fn long_queue(hosts: &str, path: &str, p: &Params) -> R<Value> {
    let sessions = p.num("sessions", 10).max(1) as usize;
    let waiters = p.num("waiters", 100) as usize;
    let timeout = Duration::from_secs(p.num("timeout_s", 900));
    let markers = Arc::new(Markers::from_env()?);
    let clients = (0..sessions).map(|_| connect(hosts)).collect::<R<Vec<_>>>()?;
    let mut holder = match p.num("holder", 0) {
        1 => Some(clients[0].lock(path).map_err(err)?.acquire(Some(Duration::from_secs(60))).map_err(err)?),
        _ => None,
    };
    // The holder marks its hold too: a waiter granted before the release is a violation.
    let holder_mine = holder.is_some() && markers.enter(0);
    let grants = Arc::new(Mutex::new(Vec::with_capacity(waiters)));
    let (failed, release_failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    event("ready");
    for line in std::io::stdin().lock().lines() {
        match line.map_err(err)?.trim() {
            "enqueue" => {
                for i in 0..waiters {
                    let lock = clients[i % sessions].lock(path).map_err(err)?;
                    let (grants, markers) = (grants.clone(), markers.clone());
                    let (failed, release_failed) = (failed.clone(), release_failed.clone());
                    std::thread::Builder::new()
                        .stack_size(256 * 1024)
                        .spawn(move || match lock.acquire(Some(timeout)) {
                            Ok(g) => {
                                let t = unix_us();
                                let mine = markers.enter(0);
                                markers.exit(0, mine);
                                if g.release().is_err() {
                                    release_failed.fetch_add(1, Ordering::AcqRel);
                                }
                                if let Ok(mut v) = grants.lock() {
                                    v.push(t);
                                }
                            },
                            Err(_) => {
                                failed.fetch_add(1, Ordering::AcqRel);
                            },
                        })
                        .map_err(err)?;
                }
            },
            "release" => {
                if let Some(g) = holder.take() {
                    markers.exit(0, holder_mine);
                    g.release().map_err(err)?;
                }
                event("released");
            },
            _ => break,
        }
    }
    let grant_us = grants.lock().map_err(err)?.clone();
    let out = json!({ "grants": grant_us.len(), "grant_us": grant_us, "failed": failed.load(Ordering::Acquire),
        "release_failed": release_failed.load(Ordering::Acquire),
        "violations": markers.violations.load(Ordering::Acquire),
        "marker_errors": markers.errors.load(Ordering::Acquire) });
    // Waiters still queued fail with Closed; their nodes go with the sessions.
    for c in &clients {
        c.close();
    }
    Ok(out)
}

/// What the loop of one session of [`many_locks`] saw.
#[derive(Default)]
struct Tally {
    /// Each grant's time, µs since the epoch.
    grant_us: Vec<i64>,
    /// Each grant's wait: from the call to acquire to its return, µs.
    lat_us: Vec<u64>,
    /// Acquires that failed, by error kind.
    failed: BTreeMap<String, u64>,
    /// Checks before the release that found the lock suspended (the
    /// connection lost: not known to be ours, not lost either).
    suspended: u64,
    /// Checks that found the lock lost (or failed otherwise).
    lost: u64,
    /// Of those, lost while the session id stayed the same and the client
    /// saw no session loss.
    false_lost: u64,
    /// Releases that failed.
    release_failed: u64,
}

impl Tally {
    /// Adds `other`'s counts and samples to this one's.
    fn merge(&mut self, other: Tally) {
        self.grant_us.extend(other.grant_us);
        self.lat_us.extend(other.lat_us);
        for (k, n) in other.failed {
            *self.failed.entry(k).or_default() += n;
        }
        self.suspended += other.suspended;
        self.lost += other.lost;
        self.false_lost += other.false_lost;
        self.release_failed += other.release_failed;
    }
}

/// A small xorshift generator (the lock each cycle picks; no crate needed).
struct XorShift(u64);

impl XorShift {
    /// The next number.
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

/// One session's loop of [`many_locks`] until `end`: pick a lock of
/// `path/0` .. `path/{paths-1}`, acquire it, mark it, hold it, check the
/// guard, unmark it, release it.
struct Cycler {
    /// The session.
    client: Client,
    /// Sessions this client saw end (`ConnectionState::Lost`).
    expired: Arc<AtomicUsize>,
    /// The mutual-exclusion check.
    markers: Arc<Markers>,
    /// The parent of the lock paths.
    path: String,
    /// How many lock paths.
    paths: u64,
    /// How long each grant is held.
    hold: Duration,
    /// Each acquire's timeout.
    timeout: Duration,
    /// Picks the lock of each cycle.
    rng: XorShift,
}

impl Cycler {
    /// Runs the loop; returns what it saw.
    fn run(mut self, end: Instant) -> Tally {
        let mut s = Tally::default();
        while Instant::now() < end {
            let key = self.rng.next() % self.paths;
            let t0 = Instant::now();
            let got = self.client.lock(&format!("{}/{key}", self.path)).and_then(|l| l.acquire(Some(self.timeout)));
            let g = match got {
                Ok(g) => g,
                Err(e) => {
                    *s.failed.entry(e.kind().to_string()).or_default() += 1;
                    // No busy loop while the ensemble elects a leader.
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                },
            };
            s.lat_us.push(t0.elapsed().as_micros() as u64);
            s.grant_us.push(unix_us());
            let mine = self.markers.enter(key);
            std::thread::sleep(self.hold);
            match g.check() {
                Ok(()) => {},
                Err(e) if e.kind() == ErrorKind::ConnectionLoss => s.suspended += 1,
                Err(_) => {
                    s.lost += 1;
                    let same = self.client.session_id().ok() == Some(g.session_id());
                    if same && self.expired.load(Ordering::Acquire) == 0 {
                        s.false_lost += 1;
                    }
                },
            }
            self.markers.exit(key, mine);
            if g.release().is_err() {
                s.release_failed += 1;
            }
        }
        s
    }
}

/// many-locks (`zklock-bench load`, issue 33 item 2), one process of
/// several: `sessions` sessions, one thread each, looping over the locks
/// `path/0` .. `path/{paths-1}` ([`Cycler`]: a lock at random, acquire with
/// a timeout of `timeout_ms`, mark, hold `hold_us`, check, unmark,
/// release) for `duration_ms` from the `go` line on stdin (after
/// `{"event":"ready"}`). Reported: every grant's time (`grant_us`, µs
/// since the epoch) and wait (`lat_us`), the acquires that failed by kind,
/// the checks that found the lock suspended or lost, the false losses
/// (lost while the session id stayed the same and the client saw no
/// session loss), failed releases, marker violations, and the sessions
/// that ended (`ConnectionState::Lost`) or changed; with `window_from_ms`
/// < `window_to_ms`, the requests the sessions sent between those times
/// after `go`, by operation (`window_requests`).
fn many_locks(hosts: &str, path: &str, p: &Params) -> R<Value> {
    let sessions = p.num("sessions", 100).max(1) as usize;
    let markers = Arc::new(Markers::from_env()?);
    let mut cyclers = Vec::new();
    let mut ids = Vec::new();
    for i in 0..sessions {
        let client = connect(hosts)?;
        let expired = Arc::new(AtomicUsize::new(0));
        let seen = expired.clone();
        let _kept = client.on_connection_state(move |s| {
            if s == ConnectionState::Lost {
                seen.fetch_add(1, Ordering::AcqRel);
            }
        });
        ids.push(client.session_id().map_err(err)?);
        cyclers.push(Cycler {
            client,
            expired,
            markers: markers.clone(),
            path: path.to_owned(),
            paths: p.num("paths", 10_000).max(1),
            hold: Duration::from_micros(p.num("hold_us", 5000)),
            timeout: Duration::from_millis(p.num("timeout_ms", 30_000)),
            // Distinct, non-zero seeds in every process and session.
            rng: XorShift(((p.num("proc", 0) << 32) | i as u64) ^ 0x9e37_79b9_7f4a_7c15),
        });
    }
    event("ready");
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).map_err(err)?;
    let end = Instant::now() + Duration::from_millis(p.num("duration_ms", 60_000));
    let clients: Vec<(Client, Arc<AtomicUsize>)> =
        cyclers.iter().map(|c| (c.client.clone(), c.expired.clone())).collect();
    let mut handles = Vec::new();
    for c in cyclers {
        handles.push(std::thread::Builder::new().stack_size(256 * 1024).spawn(move || c.run(end)).map_err(err)?);
    }
    // The requests the sessions sent over the runner's steady window
    // (`window_from_ms` to `window_to_ms` after `go`), by operation.
    let started = Instant::now();
    let (from, to) = (p.num("window_from_ms", 0), p.num("window_to_ms", 0));
    let requests = |at: u64| {
        std::thread::sleep(Duration::from_millis(at).saturating_sub(started.elapsed()));
        let mut by_op = BTreeMap::<&str, u64>::new();
        for (c, _) in &clients {
            for (op, n) in c.metrics().requests {
                *by_op.entry(op).or_default() += n;
            }
        }
        by_op
    };
    let window = (from < to).then(|| {
        let before = requests(from);
        let after = requests(to);
        after.into_iter().map(|(op, n)| (op, n - before.get(op).copied().unwrap_or(0))).collect::<BTreeMap<_, _>>()
    });
    let mut all = Tally::default();
    for h in handles {
        all.merge(h.join().map_err(|_| "a session's loop panicked".to_owned())?);
    }
    let expired: usize = clients.iter().map(|(_, e)| e.load(Ordering::Acquire)).sum();
    let changed = clients.iter().zip(&ids).filter(|((c, _), id)| c.session_id().ok() != Some(**id)).count();
    for (c, _) in &clients {
        c.close();
    }
    Ok(json!({ "grants": all.grant_us.len(), "grant_us": all.grant_us, "lat_us": all.lat_us,
        "failed": all.failed, "suspended_checks": all.suspended, "lost": all.lost, "false_losses": all.false_lost,
        "release_failed": all.release_failed, "violations": markers.violations.load(Ordering::Acquire),
        "marker_errors": markers.errors.load(Ordering::Acquire), "sessions_expired": expired,
        "sessions_changed": changed, "window_requests": window }))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: zklock-bench-driver SCENARIO HOSTS PATH [key=value ...]");
        std::process::exit(2);
    }
    let params =
        Params(args[4..].iter().filter_map(|a| a.split_once('=')).map(|(k, v)| (k.to_owned(), v.to_owned())).collect());
    let (scenario, hosts, path) = (args[1].as_str(), args[2].as_str(), args[3].as_str());
    let out = match scenario {
        "uncontended" => uncontended(hosts, path, &params),
        "list" => list(hosts, path, &params),
        "contended" | "queue" => throughput(hosts, path, &params, false),
        "independent" => throughput(hosts, path, &params, true),
        "rw" => rw(hosts, path, &params),
        "herd" => herd(hosts, path, &params),
        "drain" => drain(hosts, path, &params),
        "long-queue" => long_queue(hosts, path, &params),
        "many-locks" => many_locks(hosts, path, &params),
        other => Err(format!("unknown scenario {other}")),
    };
    match out {
        Ok(v) => {
            say(json!({ "result": v }));
            // Waiters of the herd scenario may still be blocked: do not wait.
            std::process::exit(0);
        },
        Err(e) => {
            eprintln!("zklock-bench-driver: {scenario}: {e}");
            std::process::exit(1);
        },
    }
}

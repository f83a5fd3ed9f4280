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
//! herd scenario also prints `{"event": ...}` lines and reads commands from
//! stdin).

use std::collections::HashMap;
use std::io::BufRead;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use zklock_core::{Client, ClientOptions};
use zklock_zk as zk;

#[path = "../raw.rs"]
mod raw;

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

//! Memory per waiter of the Rust core (issue 33, item 3): a holder and `N`
//! waiters queued behind it on one lock, the process's resident memory,
//! its peak, its heap in use and its thread count before the waiters
//! start, once all their nodes exist, and 5 s after every waiter has read
//! its list and watches its blocker (the server's watch count settled).
//!
//! ```text
//! zklock-bench-memory [--n 300,1000,3000] [--clients 1,4] [--settle-s 5]
//! zklock-bench-memory case HOSTS PATH N CLIENTS SETTLE_S
//! ```
//!
//! The first form starts a private standalone ZooKeeper (the test
//! harness's), runs every (N, clients) case as a process of its own (so
//! that no case inherits another's heap) and prints a table, then one JSON
//! line per case. The second runs one case against a running server and
//! prints its JSON line: `clients` clients connect, the first takes the lock
//! and holds it, then `N` acquires start at once as futures on a runtime of
//! the program's own (waiter i on client i % clients, each with its own
//! lock handle, as the Python `waiters-10000` scenario does).
//!
//! Figures per waiter are the growth from "before" (all clients connected,
//! the lock held) divided by `N`. `VmHWM` is reset just before the waiters
//! start (`/proc/self/clear_refs`), so it is the peak of the enqueue. The
//! heap figures come from glibc's `mallinfo2` (bytes handed out by malloc
//! and not freed): a resident figure far above them is memory malloc has
//! freed but not given back to the system; `after trim` is the resident
//! memory once `malloc_trim(0)` gave back what it can.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use zklock_core::{AcquireOptions, Client, ClientOptions};
use zklock_harness::{Cluster, ClusterOptions};

#[path = "../raw.rs"]
mod raw;

type R<T> = Result<T, String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// One look at the process.
#[derive(Clone, Copy, Debug, Default)]
struct Snap {
    /// Resident memory (`VmRSS`), bytes.
    rss: u64,
    /// Peak resident memory since the last reset (`VmHWM`), bytes.
    hwm: u64,
    /// Threads of the process.
    threads: u64,
    /// Bytes malloc has handed out and not had back (arenas and mmapped
    /// blocks).
    heap: u64,
}

/// A `kB` field of `/proc/self/status`, in bytes.
fn status_field(status: &str, key: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|rest| rest.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
}

/// Bytes in use by malloc (glibc's `mallinfo2`: arena chunks in use and
/// mmapped blocks).
fn heap_in_use() -> u64 {
    // SAFETY: mallinfo2 only reads malloc's own state.
    let m = unsafe { libc::mallinfo2() };
    (m.uordblks + m.hblkhd) as u64
}

fn snap() -> Snap {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    Snap {
        rss: status_field(&status, "VmRSS:") * 1024,
        hwm: status_field(&status, "VmHWM:") * 1024,
        threads: status_field(&status, "Threads:"),
        heap: heap_in_use(),
    }
}

/// Resets `VmHWM` to the current resident memory (Linux 4.0 and later).
fn reset_peak() -> R<()> {
    std::fs::write("/proc/self/clear_refs", "5").map_err(|e| format!("resetting VmHWM: {e}"))
}

fn snap_json(s: Snap, before: Snap, n: usize) -> Value {
    let per = |now: u64, then: u64| (now as f64 - then as f64) / n as f64;
    json!({
        "rss": s.rss, "hwm": s.hwm, "threads": s.threads, "heap": s.heap,
        "rss_per_waiter": per(s.rss, before.rss),
        "hwm_per_waiter": per(s.hwm, before.rss),
        "heap_per_waiter": per(s.heap, before.heap),
    })
}

/// The server's count of watches (`wchs`: `Total watches:N`).
fn watches(server: std::net::SocketAddr) -> R<usize> {
    let text = zklock_harness::four_letter_word(server, "wchs", Duration::from_secs(10)).map_err(err)?;
    text.lines()
        .find_map(|l| l.strip_prefix("Total watches:"))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| format!("wchs: {text:?}"))
}

/// One case in this process (see the module documentation).
fn case(hosts: &str, path: &str, n: usize, clients: usize, settle: Duration) -> R<Value> {
    let options = || {
        ClientOptions::new(hosts).session_timeout(Duration::from_secs(20)).operation_timeout(Duration::from_secs(600))
    };
    let clients: Vec<Client> =
        (0..clients.max(1)).map(|_| Client::connect(options()).map_err(err)).collect::<R<_>>()?;
    // A plain session to count the queue (a worker thread keeps it alive).
    let (obs_rt, obs) = raw::connect(hosts, Duration::from_secs(20), true)?;
    let count = || obs_rt.block_on(obs.children(path)).map(|c| c.value.len()).unwrap_or(0);
    let holder = clients[0].lock(path).map_err(err)?;
    let guard = holder.acquire(Some(Duration::from_secs(30))).map_err(err)?;
    // The waiters' futures run here (one worker: a thread count that does
    // not depend on N).
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().map_err(err)?;
    let locks: Vec<_> = (0..n).map(|i| clients[i % clients.len()].lock(path).map_err(err)).collect::<R<_>>()?;
    // Peak heap in use, sampled every 50 ms while the waiters queue
    // (mallinfo2 walks the free lists under the arena lock: sampled every
    // 5 ms it took as much CPU as the client's runtime at N = 10,000).
    let sampling = Arc::new(AtomicBool::new(true));
    let peak_heap = Arc::new(AtomicUsize::new(0));
    std::thread::sleep(Duration::from_millis(200));
    reset_peak()?;
    let before = snap();
    let sampler = {
        let (sampling, peak_heap) = (sampling.clone(), peak_heap.clone());
        std::thread::spawn(move || {
            while sampling.load(Ordering::Acquire) {
                peak_heap.fetch_max(heap_in_use() as usize, Ordering::AcqRel);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let granted = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let mut tasks = Vec::with_capacity(n);
    for lock in &locks {
        let (acquire, granted) = (lock.acquire_async(AcquireOptions::new()), granted.clone());
        tasks.push(rt.spawn(async move {
            if let Ok(g) = acquire.await {
                granted.fetch_add(1, Ordering::AcqRel);
                let _ = g.release_async().await;
            }
        }));
    }
    let spawned_s = t0.elapsed().as_secs_f64();
    while count() < n + 1 {
        if t0.elapsed() > Duration::from_secs(300) {
            return Err(format!("only {} of {} waiters queued in 300 s", count().saturating_sub(1), n));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let queued_s = t0.elapsed().as_secs_f64();
    let queued = snap();
    // Every waiter has read its list and watches its blocker once the
    // server's count of watches stops growing (a list may come long after
    // the last create: N = 10,000 queued in a minute with 2,300 lists
    // still on their way).
    let server: std::net::SocketAddr = hosts.parse().map_err(err)?;
    let mut last = (0, Instant::now());
    loop {
        let total = watches(server)?;
        if total != last.0 {
            last = (total, Instant::now());
        } else if total > n && last.1.elapsed() >= Duration::from_secs(1) {
            break;
        }
        if t0.elapsed() > Duration::from_secs(600) {
            return Err(format!("the server's watch count did not settle ({total})"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let waiting_s = t0.elapsed().as_secs_f64();
    std::thread::sleep(settle);
    let later = snap();
    sampling.store(false, Ordering::Release);
    let _ = sampler.join();
    // SAFETY: malloc_trim only gives free memory of malloc's back.
    unsafe { libc::malloc_trim(0) };
    let trimmed = snap();
    let early_grants = granted.load(Ordering::Acquire);
    drop(guard);
    for c in &clients {
        c.close();
    }
    drop(tasks);
    rt.shutdown_background();
    let peak = peak_heap.load(Ordering::Acquire) as u64;
    Ok(json!({
        "n": n, "clients": clients.len(), "spawned_s": spawned_s, "queued_s": queued_s, "waiting_s": waiting_s,
        "granted_while_held": early_grants,
        "before": snap_json(before, before, n),
        "queued": snap_json(queued, before, n),
        "later": snap_json(later, before, n),
        "trimmed": snap_json(trimmed, before, n),
        "peak_heap": peak, "peak_heap_per_waiter": (peak as f64 - before.heap as f64) / n as f64,
    }))
}

/// A comma-separated list of numbers.
fn list(s: &str) -> R<Vec<usize>> {
    s.split(',').map(|x| x.trim().parse().map_err(|e| format!("{x:?}: {e}"))).collect()
}

/// Starts a server and runs every case as a child process; prints a table.
fn run_all(ns: &[usize], clients: &[usize], settle_s: u64) -> R<()> {
    zklock_harness::ensure_zookeeper().map_err(err)?;
    // The harness's server has 256 MB of heap and C1 only: enough for the
    // tests, but 10,000 waiters' lists (50 million names on the wire) ran
    // it out of memory. The last -Xmx and TieredStopAtLevel win.
    let options = ClusterOptions::new().tick_time_ms(2000).jvm_arg("-Xmx2g").jvm_arg("-XX:TieredStopAtLevel=4");
    let cluster = Cluster::start(options).map_err(|e| format!("ZooKeeper: {e}"))?;
    let hosts = cluster.connect_string();
    let exe = std::env::current_exe().map_err(err)?;
    let mut lines = Vec::new();
    println!(
        "{:>6} {:>7} | {:>26} | {:>26} | {:>26} | {:>9} | {:>9} | {:>13}",
        "N",
        "clients",
        "queued KB/waiter rss hwm heap",
        "later KB/waiter rss hwm heap",
        "after trim rss",
        "peak heap",
        "threads",
        "queued/wait s"
    );
    for &k in clients {
        for &n in ns {
            let path = format!("/memory/n{n}-c{k}");
            let out = std::process::Command::new(&exe)
                .args(["case", &hosts, &path, &n.to_string(), &k.to_string(), &settle_s.to_string()])
                .output()
                .map_err(err)?;
            let text = String::from_utf8_lossy(&out.stdout);
            let Some(v) = text.lines().rev().find_map(|l| serde_json::from_str::<Value>(l).ok()) else {
                return Err(format!("case N={n} clients={k}: {}", String::from_utf8_lossy(&out.stderr)));
            };
            let kb = |s: &str, f: &str| v[s][f].as_f64().unwrap_or(f64::NAN) / 1024.0;
            println!(
                "{:>6} {:>7} | {:>8.1} {:>8.1} {:>8.1} | {:>8.1} {:>8.1} {:>8.1} | {:>26.1} | {:>9.1} | {:>4}->{:<4} | {:>6.1}/{:<6.1}",
                n,
                k,
                kb("queued", "rss_per_waiter"),
                kb("queued", "hwm_per_waiter"),
                kb("queued", "heap_per_waiter"),
                kb("later", "rss_per_waiter"),
                kb("later", "hwm_per_waiter"),
                kb("later", "heap_per_waiter"),
                kb("trimmed", "rss_per_waiter"),
                v["peak_heap_per_waiter"].as_f64().unwrap_or(f64::NAN) / 1024.0,
                v["before"]["threads"],
                v["later"]["threads"],
                v["queued_s"].as_f64().unwrap_or(f64::NAN),
                v["waiting_s"].as_f64().unwrap_or(f64::NAN),
            );
            lines.push(v);
        }
    }
    for v in lines {
        println!("{v}");
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = if args.first().map(String::as_str) == Some("case") {
        let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
        (|| -> R<()> {
            let n = arg(3).parse().map_err(err)?;
            let k = arg(4).parse().map_err(err)?;
            let settle = Duration::from_secs(arg(5).parse().map_err(err)?);
            let v = case(&arg(1), &arg(2), n, k, settle)?;
            println!("{v}");
            Ok(())
        })()
    } else {
        let mut ns = vec![300, 1000, 3000];
        let mut clients = vec![1, 4];
        let mut settle_s = 5;
        let mut it = args.iter();
        let mut parse = || -> R<()> {
            while let Some(a) = it.next() {
                let v = it.next().ok_or_else(|| format!("{a} needs a value"))?;
                match a.as_str() {
                    "--n" => ns = list(v)?,
                    "--clients" => clients = list(v)?,
                    "--settle-s" => settle_s = v.parse().map_err(err)?,
                    other => return Err(format!("unknown option {other}")),
                }
            }
            Ok(())
        };
        parse().and_then(|()| run_all(&ns, &clients, settle_s))
    };
    if let Err(e) = out {
        eprintln!("zklock-bench-memory: {e}");
        std::process::exit(1);
    }
    // Waiters may still be queued: do not wait for them.
    std::process::exit(0);
}

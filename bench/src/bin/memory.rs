//! The Rust core's driver for `zklock-bench memory` (issue 33, item 3): one
//! client, and a holder with `N` waiters queued behind it on one lock
//! (`memory-one`), `N` held locks with a waiter on each (`memory-many`) or
//! `N` held locks (`memory-hold`), the waiters' futures on a one-worker
//! runtime of the program's own (each its own lock handle), or with
//! `ZKLOCK_BENCH_SPAWN_THEN=1` on the client's own runtime
//! (`Client::spawn_then`, as the Python and Node bindings run them); with
//! `ZKLOCK_BENCH_TIMEOUT_S=S` each acquire has a timeout of S seconds.
//!
//! ```text
//! zklock-bench-memory memory-one|memory-many|memory-hold HOSTS PATH n=N
//! zklock-bench-memory [ARGS]      # the same as `zklock-bench memory --impl zklock-rust [ARGS]`
//! ```
//!
//! The runner (`bench/src/memory.rs`) tells it when to start and when to
//! look at itself, on stdin; the protocol and the moments are described
//! there. Its snapshots' `heap` is glibc's `mallinfo2` (bytes handed out by
//! malloc and not freed): a resident figure far above it is memory malloc
//! has freed but not given back to the system; `snap gc` first calls
//! `malloc_trim(0)`. Its `gc` snapshot also gives `peak_heap`, the largest
//! heap in use seen from `start` (sampled every 50 ms by a thread of its
//! own, which the thread count includes).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use zklock_core::{AcquireOptions, Client, ClientOptions};

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

/// A snapshot line: `{"snap": name, "rss", "hwm", "threads", "heap", "gc_heap": null}`.
fn snap_json(name: &str, s: Snap) -> Value {
    json!({ "snap": name, "rss": s.rss, "hwm": s.hwm, "threads": s.threads, "heap": s.heap, "gc_heap": null })
}

fn say(v: &Value) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

/// One case in this process (see the module documentation).
fn case(shape: &str, hosts: &str, path: &str, n: usize) -> R<()> {
    let options =
        ClientOptions::new(hosts).session_timeout(Duration::from_secs(10)).operation_timeout(Duration::from_secs(900));
    let client = Client::connect(options).map_err(err)?;
    // The waiters' and holders' futures run here (one worker: a thread
    // count that does not depend on N).
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().map_err(err)?;
    let path_of = |i: usize| if shape == "memory-one" { path.to_owned() } else { format!("{path}/{i}") };
    // The holders of `one` and `many`, taken before `before`.
    let mut guards = Vec::new();
    match shape {
        "memory-one" => {
            guards.push(client.lock(path).map_err(err)?.acquire(Some(Duration::from_secs(30))).map_err(err)?)
        },
        "memory-many" => {
            let holders: Vec<_> = (0..n).map(|i| client.lock(&path_of(i)).map_err(err)).collect::<R<_>>()?;
            let futs: Vec<_> = holders.iter().map(|l| l.acquire_async(AcquireOptions::new())).collect();
            for g in rt.block_on(async { futures_all(futs).await }) {
                guards.push(g.map_err(err)?);
            }
        },
        "memory-hold" => {},
        other => return Err(format!("unknown scenario {other}")),
    }
    let locks: Vec<_> = (0..n).map(|i| client.lock(&path_of(i)).map_err(err)).collect::<R<_>>()?;
    // The waiters' futures on the client's own runtime, as the Python and
    // Node bindings run them (`Client::spawn_then`), instead of on `rt`.
    let spawn_then = std::env::var("ZKLOCK_BENCH_SPAWN_THEN").is_ok_and(|v| v == "1");
    // Each acquire's timeout, in seconds (none unless set; the Python and
    // Node drivers give theirs 900 s).
    let timeout = std::env::var("ZKLOCK_BENCH_TIMEOUT_S").ok().and_then(|v| v.parse().ok()).map(Duration::from_secs);
    std::thread::sleep(Duration::from_millis(200));
    say(&json!({"event": "ready"}));
    let sampling = Arc::new(AtomicBool::new(true));
    let peak_heap = Arc::new(AtomicUsize::new(0));
    let held = Arc::new(AtomicUsize::new(0));
    let mut sampler = None;
    let mut tasks = Vec::new();
    let mut before_heap = 0;
    for line in std::io::stdin().lines() {
        let line = line.map_err(err)?;
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some("start"), _) => {
                reset_peak()?;
                let before = snap();
                before_heap = before.heap;
                say(&snap_json("before", before));
                let (sampling, peak_heap) = (sampling.clone(), peak_heap.clone());
                sampler = Some(std::thread::spawn(move || {
                    while sampling.load(Ordering::Acquire) {
                        peak_heap.fetch_max(heap_in_use() as usize, Ordering::AcqRel);
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }));
                for lock in &locks {
                    let (acquire, held) = (lock.acquire_async(AcquireOptions::new().timeout(timeout)), held.clone());
                    let hold = shape == "memory-hold";
                    let task = async move {
                        if let Ok(g) = acquire.await {
                            if held.fetch_add(1, Ordering::AcqRel) + 1 == n && hold {
                                say(&json!({"event": "granted"}));
                            }
                            // Holders keep their lock; a waiter granted
                            // early (it should not be) lets go.
                            if hold {
                                std::mem::forget(g);
                            } else {
                                let _ = g.release_async().await;
                            }
                        }
                    };
                    if spawn_then {
                        client.spawn_then(task, |()| {}).map_err(err)?;
                    } else {
                        tasks.push(rt.spawn(task));
                    }
                }
                say(&json!({"event": "started"}));
            },
            (Some("snap"), Some(name)) => {
                if name == "gc" {
                    sampling.store(false, Ordering::Release);
                    if let Some(s) = sampler.take() {
                        let _ = s.join();
                    }
                    // SAFETY: malloc_trim only gives free memory of malloc's back.
                    unsafe { libc::malloc_trim(0) };
                }
                let mut v = snap_json(name, snap());
                if name == "gc" {
                    let peak = peak_heap.load(Ordering::Acquire) as u64;
                    v["peak_heap"] = json!(peak);
                    v["peak_heap_per_item"] = json!((peak as f64 - before_heap as f64) / n as f64);
                    v["granted_early"] = json!(if shape == "memory-hold" { 0 } else { held.load(Ordering::Acquire) });
                }
                say(&v);
            },
            (Some("quit"), _) => break,
            _ => return Err(format!("unknown command {line:?}")),
        }
    }
    client.close();
    drop(guards);
    drop(tasks);
    rt.shutdown_background();
    Ok(())
}

/// Awaits every future of `futs`, in order.
async fn futures_all<F: std::future::Future>(futs: Vec<F>) -> Vec<F::Output> {
    let mut out = Vec::with_capacity(futs.len());
    for f in futs {
        out.push(f.await);
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = if args.first().is_some_and(|a| a.starts_with("memory-")) {
        let n = args.iter().find_map(|a| a.strip_prefix("n=")).and_then(|v| v.parse().ok()).unwrap_or(1000);
        case(&args[0], args.get(1).map_or("", String::as_str), args.get(2).map_or("", String::as_str), n)
    } else {
        // The runner: `zklock-bench memory --impl zklock-rust ARGS`.
        let exe = std::env::current_exe().map_err(err).map(|p| p.with_file_name("zklock-bench"));
        exe.and_then(|exe| {
            let status = std::process::Command::new(exe)
                .arg("memory")
                .args(["--impl", "zklock-rust"])
                .args(&args)
                .status()
                .map_err(err)?;
            if status.success() {
                Ok(())
            } else {
                Err(format!("zklock-bench memory: {status}"))
            }
        })
    };
    if let Err(e) = out {
        say(&json!({"error": e}));
        eprintln!("zklock-bench-memory: {e}");
        std::process::exit(1);
    }
    // Waiters may still be queued: do not wait for them.
    std::process::exit(0);
}

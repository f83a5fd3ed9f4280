//! `make bench`: zklock (Rust core, C, Python, Node) against Apache Curator,
//! kazoo and a raw-client floor, side by side on one private ZooKeeper.
//!
//! ```text
//! zklock-bench [--quick] [--reps N] [--out DIR] [--only IMPL,...] [--scenarios S,...]
//! zklock-bench scale [--quick] [--reps N] [--out DIR] [--only IMPL,...] [--scenarios S,...]
//! zklock-bench memory [--impl IMPL,..] [--n N,..] [--shapes one,many,hold] [--settle-s S] [--out DIR]
//! zklock-bench load [--quick] [--only IMPL,..] [--scenarios queue,many] [--procs N] [--out DIR] ...
//! ```
//!
//! Starts a standalone server through the test harness (forceSync off, then
//! on), runs every scenario for every implementation as a separate driver
//! process (order rotated between repetitions), and writes `results.json`,
//! `results.md` and `latency.svg` under `--out` (default
//! `bench/results/<date>`). `scale` (`make bench-scale`, `scale.rs`)
//! measures a 3-node ensemble's CPU time per lock operation instead
//! (default `bench/results/scale-<date>`); `memory` (`make bench-memory`,
//! `memory.rs`) the client's memory per waiter and per held lock (default
//! `bench/results/memory-<date>`); `load` (`make bench-load`, `load.rs`)
//! many sessions and locks with the leader killed mid-run, and a queue of
//! 10,000 waiters, on a 3-node ensemble (default
//! `bench/results/load-<date>`). See `bench/README.md`.

mod clock;
mod load;
mod memory;
mod raw;
mod report;
mod scale;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use zklock_harness::{four_letter_word, Cluster, ClusterOptions};
use zklock_zk as zk;

type R<T> = Result<T, String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// How to start one implementation's driver.
struct Imp {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// Scenario families it runs.
    runs: &'static [&'static str],
}

const ALL: &[&str] = &["uncontended", "contended", "independent", "queue", "drain", "herd", "rw"];
const BINDING: &[&str] = &["uncontended", "contended", "independent", "queue", "drain", "rw"];
/// The bindings whose waits take no thread (Python asyncio, Node) also run
/// the 10,000-waiter scenario.
const ASYNC_BINDING: &[&str] = &["uncontended", "contended", "independent", "queue", "drain", "rw", "waiters"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn implementations() -> Vec<Imp> {
    let root = root();
    let bench = root.join("target/bench");
    let driver = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("zklock-bench-driver")))
        .unwrap_or_else(|| root.join("target/release/zklock-bench-driver"));
    let drivers = root.join("bench/drivers");
    let s = |p: PathBuf| p.to_string_lossy().into_owned();
    let jars = [
        "curator-recipes",
        "curator-framework",
        "curator-client",
        "zookeeper",
        "zookeeper-jute",
        "guava",
        "slf4j-api",
        "slf4j-nop",
    ]
    .iter()
    .map(|j| format!("/usr/share/java/{j}.jar"))
    .collect::<Vec<_>>()
    .join(":");
    vec![
        Imp { name: "zklock-rust", program: driver.clone(), args: vec![], env: vec![], runs: ALL },
        Imp {
            name: "floor",
            program: driver,
            args: vec![],
            env: vec![("IMPL".into(), "floor".into())],
            runs: &["uncontended", "independent", "list"],
        },
        Imp { name: "zklock-c", program: bench.join("bench_c"), args: vec![], env: vec![], runs: BINDING },
        Imp {
            name: "zklock-python",
            program: root.join("target/python-venv/bin/python"),
            args: vec![s(drivers.join("bench_zklock.py"))],
            env: vec![("PYTHONPATH".into(), s(bench.join("pylib")))],
            runs: ASYNC_BINDING,
        },
        Imp {
            name: "zklock-node",
            program: PathBuf::from("node"),
            args: vec![s(drivers.join("bench.js"))],
            env: vec![("ZKLOCK_NODE_PACKAGE".into(), s(bench.join("node")))],
            runs: ASYNC_BINDING,
        },
        Imp {
            name: "curator",
            program: PathBuf::from("java"),
            args: vec![
                "-XX:+UseSerialGC".into(),
                "-Xss512k".into(),
                "-cp".into(),
                format!("{}:{jars}", s(bench.join("java"))),
                "CuratorBench".into(),
            ],
            env: vec![],
            runs: ALL,
        },
        Imp {
            name: "kazoo",
            program: root.join("target/interop-venv/bin/python"),
            args: vec![s(drivers.join("bench_kazoo.py"))],
            env: vec![],
            runs: ALL,
        },
    ]
}

/// One scenario instance: a name for the report, the driver scenario and
/// its parameters.
struct Scenario {
    name: String,
    family: &'static str,
    params: Vec<(String, u64)>,
    reps: usize,
    /// Upper bound on one driver run.
    limit: Duration,
    /// How the driver reaches the server.
    via: Via,
}

/// The way between a driver and the server.
#[derive(Clone, Copy, PartialEq)]
enum Via {
    /// Straight to the server (loopback).
    Direct,
    /// Through a harness proxy that counts requests and notifications on
    /// the wire (no delay added).
    Counting,
    /// Through a harness proxy that delays each way by this much (and
    /// counts); this kernel has no netem.
    Latency(Duration),
}

fn scenarios(quick: bool, reps: usize, fsync: bool) -> Vec<Scenario> {
    let q = |full: u64, small: u64| if quick { small } else { full };
    let p = |v: &[(&str, u64)]| v.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect::<Vec<_>>();
    // Windows long enough for the JVM's JIT to have compiled Curator's
    // paths before counting starts (its rate is steady after about 2 s of
    // cycles here), the same for every implementation.
    let dur = q(10_000, 1200);
    let warm = q(3000, 300);
    let mut v = vec![Scenario {
        name: "uncontended".into(),
        family: "uncontended",
        params: p(&[("iters", q(2000, 200)), ("warmup", q(3000, 30))]),
        reps,
        limit: Duration::from_secs(180),
        via: Via::Direct,
    }];
    let sizes: &[u64] = if fsync { &[32] } else { &[2, 8, 32] };
    for &n in sizes {
        v.push(Scenario {
            name: format!("contended-{n}"),
            family: "contended",
            params: p(&[("sessions", n), ("duration_ms", dur), ("warmup_ms", warm)]),
            reps,
            limit: Duration::from_secs(120),
            via: Via::Direct,
        });
    }
    v.push(Scenario {
        name: "independent-32".into(),
        family: "independent",
        params: p(&[("sessions", 32), ("duration_ms", dur), ("warmup_ms", warm)]),
        reps,
        limit: Duration::from_secs(120),
        via: Via::Direct,
    });
    if fsync {
        return v;
    }
    // Issue 19: round trips where the network costs. The uncontended
    // cycle with 0.5 ms and 2 ms added to every round trip.
    for (name, one_way_us) in [("rtt-0.5ms", 250), ("rtt-2ms", 1000)] {
        v.push(Scenario {
            name: name.into(),
            family: "uncontended",
            params: p(&[("iters", q(500, 100)), ("warmup", q(300, 30))]),
            reps,
            limit: Duration::from_secs(180),
            via: Via::Latency(Duration::from_micros(one_way_us)),
        });
    }
    // What a cycle costs on the wire: requests by op and notifications, per
    // uncontended cycle at several hold times, and per contended
    // acquisition (2 sessions). Counts barely vary: one repetition.
    for (name, hold_us) in [("wire-hold-0", 0), ("wire-hold-1ms", 1000), ("wire-hold-10ms", 10_000)] {
        v.push(Scenario {
            name: name.into(),
            family: "uncontended",
            params: p(&[("iters", q(500, 100)), ("warmup", 0), ("hold_us", hold_us)]),
            reps: 1,
            limit: Duration::from_secs(180),
            via: Via::Counting,
        });
    }
    let long = q(1000, 200);
    // A draining queue of 1,000 (two rounds, both counted on the wire):
    // requests per waiter, its queueing included.
    v.push(Scenario {
        name: format!("wire-drain-{long}"),
        family: "drain",
        params: p(&[("sessions", 32), ("waiters", long), ("rounds", 2)]),
        reps: 1,
        limit: Duration::from_secs(240),
        via: Via::Counting,
    });
    v.push(Scenario {
        name: "wire-contended-2".into(),
        family: "contended",
        params: p(&[("sessions", 2), ("duration_ms", q(5000, 1500)), ("warmup_ms", 0)]),
        reps: 1,
        limit: Duration::from_secs(120),
        via: Via::Counting,
    });
    for n in [32, long] {
        v.push(Scenario {
            name: format!("queue-{n}"),
            family: "queue",
            params: p(&[
                ("sessions", 32),
                ("waiters", n),
                ("duration_ms", q(6000, 3000)),
                ("warmup_ms", q(3000, 1500)),
            ]),
            reps,
            limit: Duration::from_secs(240),
            via: Via::Direct,
        });
    }
    // What bounds a long drain: the list a woken waiter reads, alone
    // (raw client, getChildren of 32 and of 1,000 queued nodes).
    for n in [32, long] {
        v.push(Scenario {
            name: format!("list-{n}"),
            family: "list",
            params: p(&[("children", n), ("iters", q(2000, 200)), ("warmup", q(300, 30))]),
            reps,
            limit: Duration::from_secs(120),
            via: Via::Direct,
        });
    }
    // A queue that drains: each waiter acquires once (handoff after
    // handoff, nobody re-queues), against the re-queueing queue above.
    for n in [32, long] {
        v.push(Scenario {
            name: format!("drain-{n}"),
            family: "drain",
            // Rounds of a full drain; the first warms up (Curator's JIT).
            params: p(&[("sessions", 32), ("waiters", n), ("rounds", if n == 32 { q(40, 5) } else { q(4, 2) })]),
            reps,
            limit: Duration::from_secs(240),
            via: Via::Direct,
        });
    }
    for n in [32, long] {
        v.push(Scenario {
            name: format!("herd-{n}"),
            family: "herd",
            params: p(&[("sessions", 8), ("waiters", n), ("rounds", q(5, 3))]),
            reps: 1,
            limit: Duration::from_secs(300),
            via: Via::Direct,
        });
    }
    // 10,000 acquires waiting at once in one process (100 paths x 100, on 4
    // sessions): threads, memory per waiter, then the drain rate.
    let (paths, per_path) = (q(100, 20), q(100, 50));
    v.push(Scenario {
        name: format!("waiters-{}", paths * per_path),
        family: "waiters",
        params: p(&[("paths", paths), ("per_path", per_path), ("sessions", 4)]),
        reps: 1,
        limit: Duration::from_secs(300),
        via: Via::Direct,
    });
    v.push(Scenario {
        name: "rw".into(),
        family: "rw",
        params: p(&[("readers", 8), ("writers", 2), ("hold_us", 1000), ("duration_ms", dur), ("warmup_ms", warm)]),
        reps,
        limit: Duration::from_secs(120),
        via: Via::Direct,
    });
    v
}

/// The runner's own raw session (herd measurements).
struct Observer {
    rt: tokio::runtime::Runtime,
    zk: zk::Session,
    addr: std::net::SocketAddr,
    /// The server's process, for its CPU time.
    pid: Option<u32>,
}

/// CPU time (user + system) process `pid` has used so far, in clock ticks
/// (`/proc/PID/stat`; [`ticks_per_s`] of them a second).
fn cpu_ticks(pid: u32) -> Option<u64> {
    stat_cpu_ticks(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// utime + stime of a `/proc/PID/stat` line, in clock ticks.
fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    // Fields after the command name (which may hold spaces and
    // parentheses): state is the first, utime the 12th, stime the 13th.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, 100 on Linux): the
/// resolution of [`cpu_ticks`].
fn ticks_per_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if per_s > 0 {
        per_s as f64
    } else {
        100.0
    }
}

impl Observer {
    /// The current holder of `path` (lowest sequence) and its session.
    fn holder(&self, path: &str) -> R<(String, i64)> {
        let zk = &self.zk;
        self.rt.block_on(async {
            let children = zk.children(path).await.map_err(err)?.value;
            let seq = |n: &String| n.get(n.len().saturating_sub(10)..).and_then(|s| s.parse::<i64>().ok());
            let first = children.iter().filter(|n| seq(n).is_some()).min_by_key(|n| seq(n)).ok_or("empty queue")?;
            let node = format!("{path}/{first}");
            let (_, stat) = zk.get_data(&node).await.map_err(err)?.value;
            Ok((node, stat.ephemeral_owner))
        })
    }

    /// Sessions watching each path (the server's `wchp`).
    fn watches(&self) -> R<HashMap<String, Vec<i64>>> {
        let text = four_letter_word(self.addr, "wchp", Duration::from_secs(10)).map_err(err)?;
        let mut out: HashMap<String, Vec<i64>> = HashMap::new();
        let mut current: Option<String> = None;
        for line in text.lines() {
            let t = line.trim();
            if let Some(hex) = t.strip_prefix("0x") {
                if let (Some(p), Ok(id)) = (&current, u64::from_str_radix(hex, 16)) {
                    out.entry(p.clone()).or_default().push(id as i64);
                }
            } else if t.starts_with('/') {
                current = Some(t.to_owned());
            }
        }
        Ok(out)
    }
}

/// A running driver: its stdout lines arrive on a channel.
struct Driver {
    child: Child,
    lines: mpsc::Receiver<String>,
    deadline: Instant,
}

impl Driver {
    fn start(imp: &Imp, sc: &Scenario, hosts: &str, path: &str, log: &Path) -> R<Driver> {
        let mut cmd = Command::new(&imp.program);
        cmd.args(&imp.args).arg(sc.family).arg(hosts).arg(path);
        for (k, v) in &sc.params {
            cmd.arg(format!("{k}={v}"));
        }
        if let Some((_, v)) = imp.env.iter().find(|(k, _)| k == "IMPL") {
            cmd.arg(format!("impl={v}"));
        }
        cmd.envs(imp.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let log = std::fs::File::create(log).map_err(err)?;
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(log);
        let mut child = cmd.spawn().map_err(|e| format!("starting {}: {e}", imp.program.display()))?;
        let out = child.stdout.take().ok_or("no stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Driver { child, lines: rx, deadline: Instant::now() + sc.limit })
    }

    /// The next JSON line (other output is skipped).
    fn next(&mut self) -> R<Value> {
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Ok(v) = serde_json::from_str::<Value>(line.trim()) {
                        return Ok(v);
                    }
                },
                Err(mpsc::RecvTimeoutError::Timeout) => return Err("driver timed out".into()),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().map_err(err)?;
                    return Err(format!("driver ended without a result ({status})"));
                },
            }
        }
    }

    fn send(&mut self, line: &str) -> R<()> {
        let stdin = self.child.stdin.as_mut().ok_or("no stdin")?;
        writeln!(stdin, "{line}").and_then(|_| stdin.flush()).map_err(err)
    }

    fn result(&mut self) -> R<Value> {
        self.result_with(|_| {})
    }

    /// The result, calling `on_event` with the name of every `{"event"}`
    /// line before it.
    fn result_with(&mut self, mut on_event: impl FnMut(&str)) -> R<Value> {
        loop {
            let v = self.next()?;
            if let Some(r) = v.get("result") {
                return Ok(r.clone());
            }
            if let Some(name) = v.get("event").and_then(Value::as_str) {
                on_event(name);
            }
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs one driver to its result and reads the CPU time of each process
/// of `pids` when the driver says the part it measures starts and ends
/// (`{"event": "measuring"}`, `{"event": "measured"}`): the result, and
/// the clock ticks each used in between (None if the driver did not say
/// both or a process could not be read).
fn run_metered(
    imp: &Imp,
    sc: &Scenario,
    hosts: &str,
    path: &str,
    log: &Path,
    pids: &[u32],
) -> R<(Value, Option<Vec<u64>>)> {
    let mut marks = Vec::new();
    let r = Driver::start(imp, sc, hosts, path, log)?.result_with(|e| {
        if e == "measuring" || e == "measured" {
            marks.push(pids.iter().map(|p| cpu_ticks(*p)).collect::<Option<Vec<u64>>>());
        }
    })?;
    let ticks = match marks.as_slice() {
        [Some(from), Some(to)] => Some(from.iter().zip(to).map(|(a, b)| b.saturating_sub(*a)).collect()),
        _ => None,
    };
    Ok((r, ticks))
}

/// Runs one driver to its result (herd: drives the releases and reads the
/// server's watch table before each).
fn run_one(imp: &Imp, sc: &Scenario, hosts: &str, path: &str, log: &Path, obs: &Observer) -> R<Value> {
    if sc.family != "herd" {
        // The server's CPU time over the part the driver measures.
        let run = |hosts: &str| -> R<Value> {
            let (mut r, ticks) = run_metered(imp, sc, hosts, path, log, &Vec::from_iter(obs.pid))?;
            if let (Some(o), Some([t])) = (r.as_object_mut(), ticks.as_deref()) {
                o.insert("server_cpu_s".into(), json!(*t as f64 / ticks_per_s()));
            }
            Ok(r)
        };
        let proxy = match sc.via {
            Via::Direct => return run(hosts),
            Via::Counting => zklock_harness::Proxy::start(obs.addr),
            Via::Latency(one_way) => zklock_harness::Proxy::start_with_latency(obs.addr, one_way),
        }
        .map_err(err)?;
        let mut r = run(&proxy.addr().to_string())?;
        // What went over the wire during the whole run, and how many
        // cycles that was (uncontended: every cycle, warm-up included;
        // contended: the grants, its window covering the whole run).
        let param = |k: &str| sc.params.iter().find(|(key, _)| key == k).map(|(_, n)| *n);
        let cycles = match sc.family {
            "uncontended" => param("iters").unwrap_or(1000) + param("warmup").unwrap_or(100),
            // Every round's waiters went over the wire, the warm-up's too.
            "drain" => param("waiters").unwrap_or(32) * param("rounds").unwrap_or(3),
            _ => r.get("grants").and_then(Value::as_u64).unwrap_or(0),
        };
        if let Some(o) = r.as_object_mut() {
            o.insert(
                "wire".into(),
                json!({ "requests": proxy.requests(), "notifications": proxy.notifications(), "cycles": cycles }),
            );
        }
        return Ok(r);
    }
    // Herd: the driver talks through a proxy that counts the watch
    // notifications the server really sends.
    let proxy = zklock_harness::Proxy::start(obs.addr).map_err(err)?;
    let mut d = Driver::start(imp, sc, &proxy.addr().to_string(), path, log)?;
    let rounds = sc.params.iter().find(|(k, _)| k == "rounds").map_or(5, |(_, n)| *n);
    let ev = d.next()?;
    if ev.get("event").and_then(Value::as_str) != Some("ready") {
        return Err(format!("expected ready, got {ev}"));
    }
    let mut notes = Vec::new();
    for _ in 0..rounds {
        // Let the new holder's and the waiters' watches settle, then count
        // the sessions the next release will notify: watchers of the
        // holder's node (data/exists) and of the lock path (children).
        std::thread::sleep(Duration::from_millis(400));
        let (node, owner) = obs.holder(path)?;
        let table = obs.watches()?;
        let on_node = table.get(&node).cloned().unwrap_or_default();
        let on_parent = table.get(path).cloned().unwrap_or_default();
        let waiters =
            on_node.iter().filter(|s| **s != owner).count() + on_parent.iter().filter(|s| **s != owner).count();
        notes.push(json!({ "node": node, "total": on_node.len() + on_parent.len(), "to_waiters": waiters,
            "on_node": on_node.len(), "on_parent": on_parent.len() }));
        let before = proxy.notifications();
        d.send("release")?;
        let ev = d.next()?;
        if ev.get("event").and_then(Value::as_str) != Some("granted") {
            return Err(format!("expected granted, got {ev}"));
        }
        // Anything else the release set off has arrived by now.
        std::thread::sleep(Duration::from_millis(300));
        let sent = proxy.notifications() - before;
        if let Some(last) = notes.last_mut().and_then(Value::as_object_mut) {
            last.insert("sent".into(), json!(sent));
        }
    }
    d.send("quit")?;
    let mut r = d.result().unwrap_or_else(|_| json!({}));
    if let Some(o) = r.as_object_mut() {
        o.insert("notifications".into(), Value::Array(notes));
    }
    Ok(r)
}

/// The order of repetition `rep`: `items` rotated left by `rep`, and
/// reversed every other repetition (so that no implementation always
/// follows the same one).
fn rotated<T: Copy>(items: &[T], rep: usize) -> Vec<T> {
    let mut order = items.to_vec();
    if !order.is_empty() {
        order.rotate_left(rep % items.len());
    }
    if rep % 2 == 1 {
        order.reverse();
    }
    order
}

fn sh(cmd: &str) -> String {
    Command::new("sh")
        .args(["-c", cmd])
        .output()
        .map(|o| {
            let mut s = String::from_utf8_lossy(&o.stdout).trim().to_owned();
            if s.is_empty() {
                s = String::from_utf8_lossy(&o.stderr).trim().to_owned();
            }
            s.lines().next().unwrap_or("").to_owned()
        })
        .unwrap_or_default()
}

fn machine() -> Value {
    let root = root();
    let venv = |v: &str| root.join(format!("target/{v}/bin/python")).to_string_lossy().into_owned();
    json!({
        "cpu": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"),
        "nproc": sh("nproc"),
        "memory": sh("free -h | awk '/^Mem:/ {print $2}'"),
        "kernel": sh("uname -sr"),
        "zookeeper": sh("dpkg-query -W -f='${Version}' zookeeper"),
        "java": sh("java -version 2>&1 | head -1"),
        "curator": sh("dpkg-query -W -f='${Version}' libcurator-recipes-java"),
        "rust": sh("rustc --version"),
        "python": sh(&format!("{} --version", venv("python-venv"))),
        "kazoo": sh(&format!("{} -c 'import kazoo.version as v; print(v.__version__)'", venv("interop-venv"))),
        "node": sh("node --version"),
        "date": sh("date -u +%Y-%m-%dT%H:%M:%SZ"),
        "git": sh("git -C .. rev-parse --short HEAD 2>/dev/null || git rev-parse --short HEAD"),
        "load_before": sh("cut -d' ' -f1-3 /proc/loadavg"),
    })
}

/// The command line.
struct Args {
    /// `zklock-bench scale`: the ensemble's work per lock operation
    /// (`scale.rs`) instead of `make bench`'s scenarios.
    scale: bool,
    quick: bool,
    reps: usize,
    out: PathBuf,
    only: Option<Vec<String>>,
    scenarios: Option<Vec<String>>,
    /// forceSync of each server started in turn (false: `no`).
    modes: Vec<bool>,
}

impl Args {
    /// Whether `--scenarios` (if given) names this scenario or its family.
    fn wants(&self, sc: &Scenario) -> bool {
        self.scenarios.as_ref().is_none_or(|o| o.iter().any(|n| *n == sc.name || n == sc.family))
    }
}

/// The implementations `--only` (if given) names, in `all`'s order.
fn chosen(args: &Args, all: Vec<Imp>) -> Vec<Imp> {
    all.into_iter().filter(|i| args.only.as_ref().is_none_or(|o| o.iter().any(|n| n == i.name))).collect()
}

const USAGE: &str = "zklock-bench [scale] [--quick] [--reps N] [--out DIR] [--only IMPL,..] [--scenarios NAME,..] \
                     [--fsync on|off|both]";

fn parse_args() -> R<Args> {
    let date = sh("date -u +%Y-%m-%d");
    let mut it = std::env::args().skip(1).peekable();
    let scale = it.next_if(|a| a == "scale").is_some();
    let mut a = Args {
        scale,
        quick: std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1"),
        reps: 0,
        out: PathBuf::new(),
        only: None,
        scenarios: None,
        // The scale runs: forceSync=no unless asked (as `make bench`'s first mode).
        modes: if scale { vec![false] } else { vec![false, true] },
    };
    let mut reps = None;
    let mut out = None;
    let list = |v: Option<String>| v.map(|s| s.split(',').map(str::to_owned).collect::<Vec<_>>());
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => a.quick = true,
            "--reps" => reps = Some(it.next().and_then(|v| v.parse().ok()).ok_or("--reps N")?),
            "--out" => out = Some(PathBuf::from(it.next().ok_or("--out DIR")?)),
            "--only" => a.only = list(it.next()),
            "--scenarios" => a.scenarios = list(it.next()),
            "--fsync" => {
                a.modes = match it.next().as_deref() {
                    Some("on") => vec![true],
                    Some("off") => vec![false],
                    _ => vec![false, true],
                }
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            },
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    a.reps = reps.unwrap_or(match (a.quick, a.scale) {
        (true, _) => 1,
        (false, true) => 2,
        (false, false) => 3,
    });
    a.out = out.unwrap_or_else(|| {
        let sub = match (a.quick, a.scale) {
            (false, false) => date,
            (true, false) => format!("quick-{date}"),
            (false, true) => format!("scale-{date}"),
            (true, true) => format!("scale-quick-{date}"),
        };
        root().join("bench/results").join(sub)
    });
    Ok(a)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = match args.first().map(String::as_str) {
        Some("memory") => memory::run(&args[1..]),
        Some("load") => load::run(&args[1..]),
        _ => run(),
    };
    if let Err(e) = out {
        eprintln!("zklock-bench: {e}");
        std::process::exit(1);
    }
}

fn run() -> R<()> {
    let args = parse_args()?;
    std::fs::create_dir_all(args.out.join("logs")).map_err(err)?;
    if args.scale {
        return scale::run(&args);
    }
    let imps = chosen(&args, implementations());
    let machine = machine();
    let started = Instant::now();
    let mut record = Record::default();
    let mut lat: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for &fsync in &args.modes {
        let mode = if fsync { "fsync-on" } else { "fsync-off" };
        eprintln!("zklock-bench: starting ZooKeeper (standalone, forceSync={})", if fsync { "yes" } else { "no" });
        let cluster = Cluster::start(ClusterOptions::new().tick_time_ms(2000).force_sync(fsync))
            .map_err(|e| format!("ZooKeeper: {e}"))?;
        let hosts = cluster.connect_string();
        // A worker thread keeps the observer's session alive between reads.
        let (rt, zk) = raw::connect(&hosts, Duration::from_secs(30), true)?;
        let obs = Observer { rt, zk, addr: cluster.client_addr(0), pid: cluster.pid(0) };
        for sc in scenarios(args.quick, args.reps, fsync) {
            if !args.wants(&sc) {
                continue;
            }
            let runs: Vec<&Imp> = imps.iter().filter(|i| i.runs.contains(&sc.family)).collect();
            for rep in 0..sc.reps {
                for imp in rotated(&runs, rep) {
                    let path = format!("/bench/{mode}/{}/{}-{rep}", sc.name, imp.name);
                    let log = args.out.join("logs").join(format!("{mode}-{}-{}-{rep}.log", sc.name, imp.name));
                    let t = Instant::now();
                    let res = run_one(imp, &sc, &hosts, &path, &log, &obs);
                    let wall = t.elapsed().as_secs_f64();
                    let samples = record.add(mode, &sc, imp.name, rep, wall, res, &log);
                    if !samples.is_empty() {
                        lat.entry(mode.to_owned()).or_default().entry(imp.name.to_owned()).or_default().extend(samples);
                    }
                }
            }
        }
        drop(obs);
        drop(cluster);
    }
    let mut notes = vec![format!(
        "Generated by `make bench`{} in {:.0} s; {} repetition(s) per scenario (herd: 1), order rotated between \
         repetitions. Values are medians across repetitions, [min–max] the spread. Ratios divide this \
         implementation's number by the baseline's (latency: lower is better; rates: higher is better).",
        if args.quick { " (quick mode)" } else { "" },
        started.elapsed().as_secs_f64(),
        args.reps
    )];
    if !record.failures.is_empty() {
        notes.push(format!("Failed runs: {}", record.failures.join("; ")));
    }
    let md = report::markdown(&record.metrics, &machine, &notes);
    let results = json!({ "machine": machine, "runs": record.runs, "targets": report::verdicts_json(&record.metrics),
        "failures": record.failures });
    write_results(&args.out, &md, &results)?;
    write_file(&args.out, "latency.svg", &report::svg(&lat))?;
    Ok(())
}

/// Writes `results.md` and `results.json` under `out` and prints the markdown.
fn write_results(out: &Path, md: &str, results: &Value) -> R<()> {
    write_file(out, "results.md", md)?;
    write_file(out, "results.json", &serde_json::to_string_pretty(results).map_err(err)?)?;
    println!("{md}");
    eprintln!("zklock-bench: results in {}", out.display());
    Ok(())
}

fn write_file(out: &Path, name: &str, body: &str) -> R<()> {
    std::fs::write(out.join(name), body).map_err(|e| format!("{name}: {e}"))
}

/// What a run of many drivers keeps: the metrics, every driver run's JSON
/// and the failures.
#[derive(Default)]
struct Record {
    metrics: report::Metrics,
    runs: Vec<Value>,
    failures: Vec<String>,
}

impl Record {
    /// Adds one driver run's outcome under `mode` and prints a line about
    /// it; returns its latency samples (those of a cycle, if it timed
    /// cycles), which the JSON keeps only as quantiles.
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        mode: &str,
        sc: &Scenario,
        imp: &str,
        rep: usize,
        wall: f64,
        res: R<Value>,
        log: &Path,
    ) -> Vec<f64> {
        let mut r = match res {
            Ok(r) => r,
            Err(e) => {
                eprintln!("  {mode} {:<15} rep {rep} {imp:<14} FAILED: {e} (log {})", sc.name, log.display());
                self.failures.push(format!("{mode} {} {imp} rep {rep}: {e}", sc.name));
                return Vec::new();
            },
        };
        report::add_result(&mut self.metrics, mode, &sc.name, imp, &r);
        let summary = self
            .metrics
            .get(mode)
            .and_then(|m| m.get(&sc.name))
            .and_then(|m| m.get(imp))
            .map(|m| {
                m.iter()
                    .filter_map(|(k, s)| s.0.last().map(|v| format!("{k}={}", report::fmt(*v))))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        eprintln!("  {mode} {:<15} rep {rep} {imp:<14} {summary} ({wall:.1}s)", sc.name);
        let mut samples = Vec::new();
        if let Some(o) = r.as_object_mut() {
            // Samples go to the chart and the quantiles; keep the JSON small.
            if let Some(Value::Array(l)) = o.remove("lat_us") {
                samples = l.iter().filter_map(Value::as_f64).collect();
                let qs: Vec<f64> = [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0]
                    .iter()
                    .filter_map(|q| report::quantile(&samples, *q))
                    .collect();
                o.insert("samples".into(), json!(samples.len()));
                o.insert("quantiles_us_0_10_50_90_99_999_100".into(), json!(qs));
            }
        }
        self.runs.push(json!({ "mode": mode, "scenario": sc.name, "impl": imp, "rep": rep,
            "params": sc.params.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "wall_s": wall, "result": r }));
        samples
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn cpu_ticks_are_utime_plus_stime() {
        // A command name may hold spaces and parentheses: the fields are
        // counted from the last ')'.
        let stat = "4242 (java (x) y) S 1 4242 4242 0 -1 4194304 9 0 0 0 1234 567 0 0 20 0 40 0 100 0 0";
        assert_eq!(stat_cpu_ticks(stat), Some(1234 + 567));
        assert_eq!(stat_cpu_ticks("4242 (java) S 1 2"), None, "too few fields");
        assert_eq!(cpu_ticks(std::process::id()).map(|_| ()), Some(()), "our own process can be read");
    }

    #[test]
    fn rotation_varies_the_order() {
        assert_eq!(rotated(&[1, 2, 3, 4], 0), [1, 2, 3, 4]);
        assert_eq!(rotated(&[1, 2, 3, 4], 1), [1, 4, 3, 2]);
        assert_eq!(rotated(&[1, 2, 3, 4], 2), [3, 4, 1, 2]);
        assert!(rotated::<u8>(&[], 1).is_empty());
    }
}

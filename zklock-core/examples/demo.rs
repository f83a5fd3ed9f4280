//! `make demo`: a private ZooKeeper and three programs, in C, Python and
//! Node, contending for one exclusive lock, then for one read/write lock,
//! then standing in one leader election, then sharing a semaphore of two
//! leases.
//!
//! It starts a standalone server (through the test harness), spawns the
//! workers
//!
//! - `zklock-ffi/examples/demo_worker.c` (built by `make demo` into
//!   `target/demo/demo_worker`),
//! - `bindings/python/examples/demo_worker.py` (run by the venv
//!   `target/python-venv`, into which `make demo` installs zklock),
//! - `bindings/node/examples/demo_worker.js` (run by `node`, with the addon
//!   that `make node` builds),
//!
//! lets them start each phase together, reads their event lines (`HOLD` /
//! `RELEASE` with lock, mode, fencing token, time waited and a
//! CLOCK_MONOTONIC timestamp), prints one merged timeline, and checks:
//! exclusive grants never overlap and their fencing tokens strictly grow, a
//! writer never overlaps anyone (and its token orders it against every grant
//! it does not overlap), one leader at a time (each worker leads once, in
//! token order), never more than two leases held, every worker did all its
//! rounds and exited with 0, and no lock node was left behind. It exits with 1 on any violation and
//! always stops the server.
//!
//! Run it with `make demo` (which builds the three workers first). By hand,
//! after those builds: `cargo run -p zklock-core --example demo`. The
//! workers can be pointed elsewhere with `ZKLOCK_DEMO_C_WORKER` (the C
//! binary), `ZKLOCK_DEMO_PYTHON` (a Python with zklock installed) and
//! `ZKLOCK_DEMO_NODE` (the node binary).

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use zklock_core::{Client, ClientOptions};

const MUTEX_PATH: &str = "/demo/mutex";
const RW_PATH: &str = "/demo/rw";
const ELECTION_PATH: &str = "/demo/leader";
const SEMAPHORE_PATH: &str = "/demo/pool";
/// The semaphore's leases (the workers use the same number).
const PERMITS: usize = 2;
/// Rounds of each worker on the exclusive lock.
const ROUNDS: usize = 3;
/// The whole run (start-up included) must end within this.
const RUN_LIMIT: Duration = Duration::from_secs(120);

type DemoResult<T> = Result<T, Box<dyn std::error::Error>>;

/// One worker program: its language, command line and read/write rounds.
struct WorkerSpec {
    lang: &'static str,
    program: PathBuf,
    pre_args: Vec<String>,
    /// One letter per round on the read/write lock: `r` read, `w` write.
    rw_modes: &'static str,
}

struct Running {
    lang: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    pid: u32,
}

/// One parsed `HOLD` or `RELEASE` line.
#[derive(Clone, Debug)]
struct Event {
    lang: &'static str,
    kind: &'static str,
    lock: String,
    mode: String,
    round: u32,
    token: u64,
    waited_ms: u64,
    t_ns: u64,
}

/// One grant: from `HOLD` to `RELEASE` (both as the worker printed them).
#[derive(Clone, Debug)]
struct Interval {
    lang: &'static str,
    mode: String,
    token: u64,
    start: u64,
    end: u64,
}

fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

fn env_path(var: &str, default: PathBuf) -> PathBuf {
    std::env::var_os(var).map(PathBuf::from).unwrap_or(default)
}

fn workers() -> Vec<WorkerSpec> {
    let root = repo_root();
    vec![
        WorkerSpec {
            lang: "c",
            program: env_path("ZKLOCK_DEMO_C_WORKER", root.join("target/demo/demo_worker")),
            pre_args: vec![],
            rw_modes: "wrw",
        },
        WorkerSpec {
            lang: "python",
            program: env_path("ZKLOCK_DEMO_PYTHON", root.join("target/python-venv/bin/python")),
            pre_args: vec![root.join("bindings/python/examples/demo_worker.py").display().to_string()],
            rw_modes: "rrr",
        },
        WorkerSpec {
            lang: "node",
            program: env_path("ZKLOCK_DEMO_NODE", PathBuf::from("node")),
            pre_args: vec![root.join("bindings/node/examples/demo_worker.js").display().to_string()],
            rw_modes: "rwr",
        },
    ]
}

fn main() {
    match run() {
        Ok(true) => {},
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("demo failed: {e}");
            std::process::exit(1);
        },
    }
}

/// Runs the demo; `Ok(false)` when a check failed.
fn run() -> DemoResult<bool> {
    let specs = workers();
    for spec in &specs {
        if spec.program.components().count() > 1 && !spec.program.exists() {
            return Err(format!(
                "the {} worker {} is missing: run `make demo`, which builds it",
                spec.lang,
                spec.program.display()
            )
            .into());
        }
    }
    zklock_harness::ensure_zookeeper()?;
    let cluster = zklock_harness::Cluster::standalone()?;
    let hosts = cluster.connect_string();
    println!("zklock demo: a private ZooKeeper at {hosts} (stopped at the end)");
    println!("phase 1: exclusive lock {MUTEX_PATH}, {ROUNDS} rounds each, held 150 ms per grant");
    println!(
        "phase 2: read/write lock {RW_PATH}: c writes, reads, writes; python reads 3 times; node reads, writes, reads"
    );
    println!("         (reads held 300 ms, writes 150 ms)");
    println!("phase 3: leader election {ELECTION_PATH}: each leads once for 150 ms, then resigns");
    println!("phase 4: semaphore {SEMAPHORE_PATH} of {PERMITS} leases, {ROUNDS} rounds each, held 300 ms per lease\n");

    let outcome = run_workers(&specs, &hosts);
    let ok = match outcome {
        Ok((events, failures)) => report(&specs, &events, failures, &hosts),
        Err(e) => {
            eprintln!("demo failed: {e}");
            false
        },
    };
    println!("stopping ZooKeeper.");
    drop(cluster);
    Ok(ok)
}

/// Spawns the workers, releases each phase once all of them are ready,
/// collects their events. Returns the events and the failures seen
/// (worker exit codes, stray lines).
fn run_workers(specs: &[WorkerSpec], hosts: &str) -> DemoResult<(Vec<Event>, Vec<String>)> {
    let started = Instant::now();
    let mut running: Vec<Running> = Vec::new();
    let (tx, rx) = mpsc::channel::<(usize, Option<String>)>();
    for (idx, spec) in specs.iter().enumerate() {
        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.pre_args)
            .args([hosts, MUTEX_PATH, RW_PATH, &ROUNDS.to_string(), spec.rw_modes, ELECTION_PATH, SEMAPHORE_PATH])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                stop_all(&mut running);
                return Err(format!("cannot start the {} worker ({}): {e}", spec.lang, spec.program.display()).into());
            },
        };
        let stdin = child.stdin.take();
        let Some(out) = child.stdout.take() else {
            stop_all(&mut running);
            return Err("worker has no stdout".into());
        };
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send((idx, Some(line))).is_err() {
                    return;
                }
            }
            let _ = tx.send((idx, None));
        });
        let pid = child.id();
        running.push(Running { lang: spec.lang, child, stdin, pid });
    }
    drop(tx);

    let mut events = Vec::new();
    let mut failures = Vec::new();
    let mut ready: HashMap<String, usize> = HashMap::new();
    let mut open = running.len();
    while open > 0 {
        let Some(left) = RUN_LIMIT.checked_sub(started.elapsed()) else {
            stop_all(&mut running);
            return Err(format!("the workers did not finish within {} s", RUN_LIMIT.as_secs()).into());
        };
        let (idx, line) = match rx.recv_timeout(left) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let lang = specs[idx].lang;
        let Some(line) = line else {
            open -= 1;
            // A worker that stopped early must not keep the others waiting
            // for it at the next phase: close every stdin.
            for r in &mut running {
                r.stdin = None;
            }
            continue;
        };
        let mut words = line.split_whitespace();
        match words.next() {
            Some("READY") => {
                let fields = fields(&line);
                let phase = fields.get("phase").cloned().unwrap_or_default();
                let n = ready.entry(phase.clone()).or_insert(0);
                *n += 1;
                if *n == running.len() {
                    println!(
                        "[{:5.1}s] all {} workers ready: phase {phase} starts",
                        started.elapsed().as_secs_f64(),
                        running.len()
                    );
                    for r in &mut running {
                        if let Some(stdin) = r.stdin.as_mut() {
                            if writeln!(stdin, "go").and_then(|()| stdin.flush()).is_err() {
                                failures.push(format!("{}: could not start phase {phase}", r.lang));
                            }
                        }
                    }
                }
            },
            Some(word @ ("HOLD" | "RELEASE")) => {
                let kind = if word == "HOLD" { "HOLD" } else { "RELEASE" };
                match parse_event(lang, kind, &line) {
                    Ok(e) => events.push(e),
                    Err(msg) => failures.push(format!("{lang}: {msg}: {line}")),
                }
            },
            Some("DONE") => {},
            _ => failures.push(format!("{lang}: unexpected line: {line}")),
        }
    }
    for r in &mut running {
        r.stdin = None;
        match wait_child(&mut r.child, started + RUN_LIMIT) {
            Some(0) => {},
            Some(code) => failures.push(format!("the {} worker (pid {}) exited with {code}", r.lang, r.pid)),
            None => failures.push(format!("the {} worker (pid {}) was killed or did not exit", r.lang, r.pid)),
        }
    }
    Ok((events, failures))
}

/// Waits for a child until `deadline`, then kills it. Its exit code, or
/// `None` if it was killed by a signal.
fn wait_child(child: &mut Child, deadline: Instant) -> Option<i32> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.code(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            },
        }
    }
}

fn stop_all(running: &mut [Running]) {
    for r in running {
        r.stdin = None;
        let _ = r.child.kill();
        let _ = r.child.wait();
    }
}

fn fields(line: &str) -> HashMap<String, String> {
    line.split_whitespace().filter_map(|w| w.split_once('=')).map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
}

fn parse_event(lang: &'static str, kind: &'static str, line: &str) -> Result<Event, String> {
    let f = fields(line);
    let num = |key: &str| -> Result<u64, String> {
        f.get(key).ok_or_else(|| format!("no {key}="))?.parse::<u64>().map_err(|_| format!("{key}= is not a number"))
    };
    if f.get("lang").map(String::as_str) != Some(lang) {
        return Err("lang= does not name this worker".into());
    }
    Ok(Event {
        lang,
        kind,
        lock: f.get("lock").cloned().ok_or("no lock=")?,
        mode: f.get("mode").cloned().ok_or("no mode=")?,
        round: u32::try_from(num("round")?).map_err(|_| "round= too large")?,
        token: num("token")?,
        waited_ms: if kind == "HOLD" { num("waited_ms")? } else { 0 },
        t_ns: num("t_ns")?,
    })
}

/// Pairs each HOLD with its RELEASE, per lock path. Unpaired events are
/// failures.
fn intervals(events: &[Event], failures: &mut Vec<String>) -> BTreeMap<String, Vec<Interval>> {
    let mut open: HashMap<(&str, &str, u32), &Event> = HashMap::new();
    let mut out: BTreeMap<String, Vec<Interval>> = BTreeMap::new();
    for e in events {
        let key = (e.lang, e.lock.as_str(), e.round);
        if e.kind == "HOLD" {
            open.insert(key, e);
        } else if let Some(h) = open.remove(&key) {
            out.entry(e.lock.clone()).or_default().push(Interval {
                lang: e.lang,
                mode: h.mode.clone(),
                token: h.token,
                start: h.t_ns,
                end: e.t_ns,
            });
        } else {
            failures.push(format!("{} released {} round {} without holding it", e.lang, e.lock, e.round));
        }
    }
    for ((lang, lock, round), _) in open {
        failures.push(format!("{lang} never released {lock} (round {round})"));
    }
    for list in out.values_mut() {
        list.sort_by_key(|i| i.start);
    }
    out
}

/// Exclusive grants: no two overlap, tokens strictly grow in grant order.
fn check_exclusive(list: &[Interval]) -> Vec<String> {
    let mut bad = Vec::new();
    let mut latest_end: Option<&Interval> = None;
    let mut last_token: Option<&Interval> = None;
    for i in list {
        if let Some(p) = latest_end {
            if i.start < p.end {
                bad.push(format!("{} was granted the exclusive lock while {} held it", i.lang, p.lang));
            }
        }
        if latest_end.is_none_or(|p| i.end > p.end) {
            latest_end = Some(i);
        }
        if let Some(p) = last_token {
            if i.token <= p.token {
                bad.push(format!("fencing token {} ({}) after {} ({})", i.token, i.lang, p.token, p.lang));
            }
        }
        last_token = Some(i);
    }
    bad
}

/// Read/write grants: a writer overlaps nobody, and the token of a writer
/// orders it against every grant it does not overlap.
fn check_read_write(list: &[Interval]) -> Vec<String> {
    let mut bad = Vec::new();
    for (wi, w) in list.iter().enumerate() {
        if w.mode != "write" {
            continue;
        }
        for (xi, x) in list.iter().enumerate() {
            if xi == wi {
                continue;
            }
            if x.start < w.end && w.start < x.end {
                bad.push(format!("{} held the {} lock while writer {} held it", x.lang, x.mode, w.lang));
            } else if x.end <= w.start && x.token >= w.token {
                bad.push(format!("writer {} (token {}) came after {} (token {})", w.lang, w.token, x.lang, x.token));
            } else if w.end <= x.start && x.token <= w.token {
                bad.push(format!("{} (token {}) came after writer {} (token {})", x.lang, x.token, w.lang, w.token));
            }
        }
    }
    bad
}

/// The largest number of grants holding at the same moment.
fn max_concurrent(list: &[Interval]) -> usize {
    let mut points: Vec<(u64, i32)> = list.iter().flat_map(|i| [(i.start, 1), (i.end, -1)]).collect();
    // Ends before starts at the same instant.
    points.sort();
    let (mut now, mut max) = (0i32, 0i32);
    for (_, d) in points {
        now += d;
        max = max.max(now);
    }
    usize::try_from(max).unwrap_or(0)
}

/// Prints the timeline and the checks; true when every check passed.
fn report(specs: &[WorkerSpec], events: &[Event], mut failures: Vec<String>, hosts: &str) -> bool {
    let mut sorted: Vec<&Event> = events.iter().collect();
    sorted.sort_by_key(|e| e.t_ns);
    let t0 = sorted.first().map_or(0, |e| e.t_ns);
    println!("\n  time    who     event                                          now holding");
    let mut holders: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut last_lock = "";
    for e in &sorted {
        if e.lock != last_lock {
            println!("  --- {} ---", e.lock);
            last_lock = &e.lock;
        }
        let who = match e.mode.as_str() {
            "read" => format!("{}(r)", e.lang),
            "write" => format!("{}(w)", e.lang),
            _ => e.lang.to_owned(),
        };
        let list = holders.entry(&e.lock).or_default();
        let what = if e.kind == "HOLD" {
            list.push(who);
            format!("holds    {:<9} token {:<6} waited {:>4} ms", e.mode, e.token, e.waited_ms)
        } else {
            if let Some(pos) = list.iter().position(|h| *h == who) {
                list.remove(pos);
            }
            format!("releases {:<9} token {:<6}", e.mode, e.token)
        };
        let now = if list.is_empty() { "-".to_owned() } else { list.join(" ") };
        println!("  {:>6.3}s {:<7} {:<46} {}", e.t_ns.saturating_sub(t0) as f64 / 1e9, e.lang, what, now);
    }
    println!("\n(token = the fencing token: the creation zxid of the holder's lock node; it only grows)\n");

    let by_lock = intervals(events, &mut failures);
    let empty = Vec::new();
    let mutex = by_lock.get(MUTEX_PATH).unwrap_or(&empty);
    let rw = by_lock.get(RW_PATH).unwrap_or(&empty);
    let want_mutex = specs.len() * ROUNDS;
    let want_rw: usize = specs.iter().map(|s| s.rw_modes.len()).sum();
    let writes = rw.iter().filter(|i| i.mode == "write").count();
    let readers_at_once = max_concurrent(&rw.iter().filter(|i| i.mode == "read").cloned().collect::<Vec<_>>());

    let mut checks: Vec<(String, Vec<String>)> = Vec::new();
    let langs: Vec<&str> = specs.iter().map(|s| s.lang).collect();
    checks.push((format!("every worker ({}) did all its rounds and exited with 0", langs.join(", ")), failures));
    let mut bad = check_exclusive(mutex);
    if mutex.len() != want_mutex {
        bad.push(format!("{} grants, expected {want_mutex}", mutex.len()));
    }
    checks.push((
        format!("{MUTEX_PATH}: {} grants, never two holders, fencing tokens strictly increasing", mutex.len()),
        bad,
    ));
    let mut bad = check_read_write(rw);
    if rw.len() != want_rw {
        bad.push(format!("{} grants, expected {want_rw}", rw.len()));
    }
    checks.push((
        format!(
            "{RW_PATH}: {} grants; the {writes} writers held it alone, in token order; up to {readers_at_once} readers shared it",
            rw.len()
        ),
        bad,
    ));
    let leaders = by_lock.get(ELECTION_PATH).unwrap_or(&empty);
    let mut bad = check_exclusive(leaders);
    if leaders.len() != specs.len() {
        bad.push(format!("{} leaderships, expected {}", leaders.len(), specs.len()));
    }
    checks.push((
        format!("{ELECTION_PATH}: {} leaderships, one leader at a time, fencing tokens increasing", leaders.len()),
        bad,
    ));
    let leases = by_lock.get(SEMAPHORE_PATH).unwrap_or(&empty);
    let leases_at_once = max_concurrent(leases);
    let mut bad = Vec::new();
    if leases_at_once > PERMITS {
        bad.push(format!("{leases_at_once} leases held at once, of {PERMITS}"));
    }
    if leases.len() != want_mutex {
        bad.push(format!("{} leases, expected {want_mutex}", leases.len()));
    }
    checks.push((
        format!("{SEMAPHORE_PATH}: {} leases, at most {leases_at_once} held at once (of {PERMITS})", leases.len()),
        bad,
    ));
    checks.push(("no lock node left behind".to_owned(), leftovers(hosts)));

    println!("checks:");
    let mut ok = true;
    for (what, bad) in &checks {
        if bad.is_empty() {
            println!("  ok    {what}");
        } else {
            ok = false;
            println!("  FAIL  {what}");
            for b in bad {
                println!("          {b}");
            }
        }
    }
    ok
}

/// Lock nodes still under the demo's paths (the workers are gone).
fn leftovers(hosts: &str) -> Vec<String> {
    let client = match Client::connect(ClientOptions::new(hosts)) {
        Ok(c) => c,
        Err(e) => return vec![format!("cannot connect to look: {e}")],
    };
    let mut bad = Vec::new();
    let semaphore = [format!("{SEMAPHORE_PATH}/leases"), format!("{SEMAPHORE_PATH}/locks")];
    for path in [MUTEX_PATH, RW_PATH, ELECTION_PATH].into_iter().map(str::to_owned).chain(semaphore) {
        match client.participants(&path) {
            Ok(p) if p.is_empty() => {},
            Ok(p) => bad.extend(p.iter().map(|n| format!("{path}/{}", n.name))),
            Err(e) => bad.push(format!("cannot list {path}: {e}")),
        }
    }
    client.close();
    bad
}

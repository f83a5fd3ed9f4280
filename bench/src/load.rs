//! `zklock-bench load` (`make bench-load`): many sessions and locks, and a
//! long queue, on a 3-node ensemble (issue 33, items 2 and 4), for zklock's
//! Rust core and Curator, each run on a fresh ensemble.
//!
//! ```text
//! zklock-bench load [--quick] [--only IMPL,..] [--scenarios queue,many] [--procs N] [--out DIR]
//!                   [--queue-sessions N] [--waiters N] [--proxied N] [--enqueue-limit-s S] [--drain-limit-s S]
//!                   [--sessions N] [--paths N] [--hold-ms MS] [--duration-s S] [--warmup-s S] [--kill-at-s S]
//! ```
//!
//! - `queue-N` (item 4): `--procs` driver processes (10), each with
//!   `--queue-sessions` sessions (10) carrying `--waiters` waiters (100, a
//!   thread each), all on one lock held by the first process. Measured: the
//!   enqueue time (from the `enqueue` command to every node created, and
//!   to every waiter watching: the ensemble's `wchs` total that many
//!   higher, or 99 % of that and settled), then, from the holder's release, the handoffs per second
//!   while the queue drains (each waiter acquires once and releases at
//!   once), the watch notifications per release (counted by harness
//!   proxies on the sessions of the first `--proxied` processes, a sample,
//!   divided by that sample's grants), and the CPU time of the ensemble
//!   (sum and leader) and of the drivers per handoff. The time of a list
//!   of the full queue (5 reads by the runner) gives the physical bound: a
//!   woken waiter reads the list of the queue behind it once per handoff.
//! - `many-N` (item 2): `--procs` processes x `--sessions` sessions (100),
//!   one thread each, looping over `--paths` locks (10,000): a lock at
//!   random, acquire, hold `--hold-ms` (5), check, release, for
//!   `--duration-s` (60). Measured over `--warmup-s` (10) to `--kill-at-s`
//!   (35): cycles per second and the acquire wait (p50, p99), the CPU per
//!   cycle; then the runner kills the leader (SIGKILL) and reports the time
//!   until grants resume (the end of the longest pause in grants after the
//!   kill), the acquires that failed, mutual-exclusion violations (marker
//!   files created with `O_EXCL` in a directory all the drivers share) and
//!   false losses (a lock reported lost while its session lived on); for
//!   zklock, the requests its sessions sent in the window, by operation,
//!   per cycle.
//!
//! `--quick`: 2 processes, 100 waiters, 100 sessions on 1,000 locks, 20 s
//! runs: about a minute of measuring. Results: `results.md` and
//! `results.json` under `--out` (default `bench/results/load-<date>`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use zklock_harness::{Cluster, ClusterOptions, ProxyGroup};

use crate::clock::unix_us;
use crate::memory::{make_paths, watches};
use crate::{
    cpu_ticks, err, implementations, machine, raw, report, root, sh, ticks_per_s, write_results, Driver, Imp, Scenario,
    Via, R,
};

/// The implementations a load run measures.
const IMPLS: [&str; 2] = ["zklock-rust", "curator"];

/// The scenarios (`--scenarios`).
const SCENARIOS: [&str; 2] = ["queue", "many"];

/// Members of the ensemble.
const MEMBERS: usize = 3;

/// The peer every ratio divides by.
const PEER: &str = "curator";

const USAGE: &str = "zklock-bench load [--quick] [--only IMPL,..] [--scenarios queue,many] [--procs N] \
                     [--queue-sessions N] [--waiters N] [--proxied N] [--enqueue-limit-s S] [--drain-limit-s S] \
                     [--sessions N] [--paths N] [--hold-ms MS] [--duration-s S] [--warmup-s S] [--kill-at-s S] \
                     [--out DIR]";

/// The command line of `zklock-bench load` (sizes per driver process).
struct Opts {
    /// `--quick`: the small sizes.
    quick: bool,
    /// Implementations to run, in this order.
    impls: Vec<String>,
    /// Scenarios to run, in this order.
    scenarios: Vec<String>,
    /// Driver processes of every run.
    procs: usize,
    /// queue: sessions per process.
    queue_sessions: usize,
    /// queue: waiters per process.
    waiters: usize,
    /// queue: processes whose sessions talk through the counting proxies.
    proxied: usize,
    /// queue: longest wait for every waiter to watch.
    enqueue_limit: Duration,
    /// queue: longest drain; a drain cut short is measured up to then.
    drain_limit: Duration,
    /// many: sessions per process.
    sessions: usize,
    /// many: lock paths.
    paths: usize,
    /// many: how long each grant is held.
    hold: Duration,
    /// many: each driver's run, from `go`.
    duration: Duration,
    /// many: start of the measured window.
    warmup: Duration,
    /// many: when the leader is killed (the end of the measured window).
    kill_at: Duration,
    /// Where the results go.
    out: PathBuf,
}

/// Parses `zklock-bench load`'s arguments (see the module documentation).
fn parse(args: &[String]) -> R<Opts> {
    let quick = args.iter().any(|a| a == "--quick") || std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1");
    let q = |full: u64, small: u64| if quick { small } else { full };
    let date = sh("date -u +%Y-%m-%d");
    let list = |s: &str| s.split(',').map(|x| x.trim().to_owned()).filter(|x| !x.is_empty()).collect::<Vec<_>>();
    let mut o = Opts {
        quick,
        impls: IMPLS.iter().map(|s| (*s).to_owned()).collect(),
        scenarios: SCENARIOS.iter().map(|s| (*s).to_owned()).collect(),
        procs: q(10, 2) as usize,
        queue_sessions: q(10, 2) as usize,
        waiters: q(1000, 50) as usize,
        proxied: 1,
        enqueue_limit: Duration::from_secs(q(600, 120)),
        drain_limit: Duration::from_secs(q(600, 120)),
        sessions: q(100, 50) as usize,
        paths: q(10_000, 1000) as usize,
        hold: Duration::from_millis(5),
        duration: Duration::from_secs(q(60, 20)),
        warmup: Duration::from_secs(q(10, 4)),
        kill_at: Duration::from_secs(q(35, 12)),
        out: root().join("bench/results").join(if quick {
            format!("load-quick-{date}")
        } else {
            format!("load-{date}")
        }),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => continue,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            },
            _ => {},
        }
        let v = it.next().ok_or_else(|| format!("{a} needs a value\n{USAGE}"))?;
        let n = || v.parse::<u64>().map_err(|e| format!("{a} {v}: {e}"));
        match a.as_str() {
            "--only" | "--impl" => o.impls = list(v),
            "--scenarios" => o.scenarios = list(v),
            "--procs" => o.procs = n()?.max(1) as usize,
            "--queue-sessions" => o.queue_sessions = n()?.max(1) as usize,
            "--waiters" => o.waiters = n()? as usize,
            "--proxied" => o.proxied = n()? as usize,
            "--enqueue-limit-s" => o.enqueue_limit = Duration::from_secs(n()?),
            "--drain-limit-s" => o.drain_limit = Duration::from_secs(n()?),
            "--sessions" => o.sessions = n()?.max(1) as usize,
            "--paths" => o.paths = n()?.max(1) as usize,
            "--hold-ms" => o.hold = Duration::from_millis(n()?),
            "--duration-s" => o.duration = Duration::from_secs(n()?),
            "--warmup-s" => o.warmup = Duration::from_secs(n()?),
            "--kill-at-s" => o.kill_at = Duration::from_secs(n()?),
            "--out" => o.out = PathBuf::from(v),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    if let Some(i) = o.impls.iter().find(|i| !IMPLS.contains(&i.as_str())) {
        return Err(format!("--only {i}: one of {}", IMPLS.join(", ")));
    }
    if let Some(s) = o.scenarios.iter().find(|s| !SCENARIOS.contains(&s.as_str())) {
        return Err(format!("--scenarios {s}: one of {}", SCENARIOS.join(", ")));
    }
    if !(o.warmup < o.kill_at && o.kill_at < o.duration) {
        return Err("want --warmup-s < --kill-at-s < --duration-s".into());
    }
    Ok(o)
}

/// A fresh 3-node ensemble on loopback (tickTime 2000 ms, forceSync=no; 2
/// GB of heap and C2 per member, as `zklock-bench memory`'s server: the
/// harness's 256 MB ran out with 10,000 waiters' lists of one lock), its
/// leader and each member's process.
fn ensemble() -> R<(Cluster, usize, Vec<u32>)> {
    let options = ClusterOptions::new()
        .size(MEMBERS)
        .tick_time_ms(2000)
        .start_timeout(Duration::from_secs(90))
        .jvm_arg("-Xmx2g")
        .jvm_arg("-XX:TieredStopAtLevel=4");
    let cluster = Cluster::start(options).map_err(|e| format!("ZooKeeper: {e}"))?;
    let leader = cluster.wait_quorum(Duration::from_secs(60)).map_err(|e| format!("ZooKeeper: {e}"))?;
    let pids = (0..MEMBERS).map(|i| cluster.pid(i)).collect::<Option<Vec<_>>>().ok_or("a member has no process")?;
    Ok((cluster, leader, pids))
}

/// Clock ticks each of `pids` has used so far (0 for one that cannot be
/// read: a member killed meanwhile).
fn ticks(pids: &[u32]) -> Vec<u64> {
    pids.iter().map(|p| cpu_ticks(*p).unwrap_or(0)).collect()
}

/// Ticks used from `from` to `to`, element by element.
fn used(from: &[u64], to: &[u64]) -> Vec<u64> {
    from.iter().zip(to).map(|(a, b)| b.saturating_sub(*a)).collect()
}

/// `ticks` clock ticks per `n` operations, in µs of CPU (None for no
/// operation).
fn us_per(ticks: u64, n: usize) -> Option<f64> {
    (n > 0).then(|| ticks as f64 / ticks_per_s() * 1e6 / n as f64)
}

/// The 1-, 5- and 15-minute load averages (`/proc/loadavg`).
fn loadavg() -> String {
    sh("cut -d' ' -f1-3 /proc/loadavg")
}

/// The directory of one run's marker files (the drivers' mutual-exclusion
/// check across processes: see `Markers` in `src/bin/driver.rs`), removed
/// when dropped.
struct MarkerDir(PathBuf);

impl MarkerDir {
    /// A new empty directory under the system's temporary directory.
    fn new(run: &str, imp: &str) -> R<MarkerDir> {
        let dir = std::env::temp_dir().join(format!("zklock-bench-load-{}-{run}-{imp}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(MarkerDir(dir))
    }

    /// `imp` with `ZKLOCK_BENCH_MARKERS` naming this directory.
    fn give(&self, imp: &Imp) -> Imp {
        let mut env = imp.env.clone();
        env.push(("ZKLOCK_BENCH_MARKERS".into(), self.0.to_string_lossy().into_owned()));
        Imp { name: imp.name, program: imp.program.clone(), args: imp.args.clone(), env, runs: imp.runs }
    }
}

impl Drop for MarkerDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The driver processes of one run.
struct Fleet {
    drivers: Vec<Driver>,
}

impl Fleet {
    /// Starts one driver of `imp` per entry of `each` (its hosts and its
    /// parameters), running the driver scenario `family` on `path`, each
    /// logging to `logs/NAME-IMPL-I.log`; each has `limit` to give its result.
    fn start(
        imp: &Imp,
        family: &'static str,
        name: &str,
        each: Vec<(String, Vec<(&str, u64)>)>,
        path: &str,
        out: &Path,
        limit: Duration,
    ) -> R<Fleet> {
        let mut drivers = Vec::new();
        for (i, (hosts, params)) in each.into_iter().enumerate() {
            let sc = Scenario {
                name: name.to_owned(),
                family,
                params: params.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
                reps: 1,
                limit,
                via: Via::Direct,
            };
            let log = out.join("logs").join(format!("{name}-{}-{i}.log", imp.name));
            drivers.push(Driver::start(imp, &sc, &hosts, path, &log)?);
        }
        Ok(Fleet { drivers })
    }

    /// Waits for every driver's `{"event": EVENT}` line.
    fn expect(&mut self, event: &str) -> R<()> {
        for (i, d) in self.drivers.iter_mut().enumerate() {
            let v = d.next()?;
            if v.get("event").and_then(Value::as_str) != Some(event) {
                return Err(format!("driver {i}: expected {event}, got {v}"));
            }
        }
        Ok(())
    }

    /// Sends `line` to every driver.
    fn send(&mut self, line: &str) -> R<()> {
        self.drivers.iter_mut().try_for_each(|d| d.send(line))
    }

    /// Every driver's result, in order.
    fn results(&mut self) -> R<Vec<Value>> {
        self.drivers.iter_mut().enumerate().map(|(i, d)| d.result().map_err(|e| format!("driver {i}: {e}"))).collect()
    }

    /// The drivers' processes.
    fn pids(&self) -> Vec<u32> {
        self.drivers.iter().map(|d| d.child.id()).collect()
    }
}

/// The grant times (µs since the epoch) in each driver's result.
fn grant_times(results: &[Value]) -> Vec<Vec<i64>> {
    results
        .iter()
        .map(|r| r["grant_us"].as_array().map(|a| a.iter().filter_map(Value::as_i64).collect()).unwrap_or_default())
        .collect()
}

/// The sum of field `key` over the drivers' results.
fn total(results: &[Value], key: &str) -> u64 {
    results.iter().filter_map(|r| r[key].as_u64()).sum()
}

/// Every driver's result without its per-grant samples (the JSON keeps
/// counts and quantiles only).
fn slim(results: &[Value]) -> Vec<Value> {
    results
        .iter()
        .map(|r| {
            let mut r = r.clone();
            if let Some(o) = r.as_object_mut() {
                o.remove("grant_us");
                o.remove("lat_us");
            }
            r
        })
        .collect()
}

/// `queue-N` for `imp` on a fresh ensemble (see the module documentation).
fn queue(imp: &Imp, o: &Opts, name: &str) -> R<Value> {
    let (cluster, leader, members) = ensemble()?;
    let hosts = cluster.connect_string();
    let proxies = ProxyGroup::for_cluster(&cluster).map_err(err)?;
    let (rt, zk) = raw::connect(&hosts, Duration::from_secs(30), true)?;
    let path = format!("/bench/load/{name}/{}", imp.name);
    make_paths(&rt, &zk, &path, "one", 0)?;
    let children = || -> R<usize> {
        let stat = rt.block_on(zk.exists(&path)).map_err(err)?.value;
        Ok(stat.map_or(0, |s| s.num_children.max(0) as usize))
    };
    let addrs = cluster.client_addrs();
    let watching = || -> R<u64> { addrs.iter().map(|a| watches(*a)).sum() };
    let markers = MarkerDir::new(name, imp.name)?;
    let each = (0..o.procs)
        .map(|i| {
            let hosts = if i < o.proxied { proxies.connect_string() } else { hosts.clone() };
            let params = vec![
                ("sessions", o.queue_sessions as u64),
                ("waiters", o.waiters as u64),
                ("holder", u64::from(i == 0)),
                ("proc", i as u64),
                ("timeout_s", (o.enqueue_limit + o.drain_limit).as_secs() + 60),
            ];
            (hosts, params)
        })
        .collect();
    let limit = o.enqueue_limit + o.drain_limit + Duration::from_secs(300);
    let mut fleet = Fleet::start(&markers.give(imp), "long-queue", name, each, &path, &o.out, limit)?;
    fleet.expect("ready")?;
    let waiters = o.procs * o.waiters;
    let base = watching()?;
    // Enqueue: from the command to every node created, and to every waiter
    // watching (the ensemble's watch count `waiters` higher).
    let t0 = Instant::now();
    fleet.send("enqueue")?;
    let (mut created, mut all_watching, mut watched, mut changed) = (None, None, 0, Duration::ZERO);
    while t0.elapsed() < o.enqueue_limit {
        std::thread::sleep(Duration::from_millis(100));
        if created.is_none() && children()? > waiters {
            created = Some(t0.elapsed().as_secs_f64());
        }
        let now = watching()?.saturating_sub(base);
        if now != watched {
            (watched, changed) = (now, t0.elapsed());
        }
        // Every waiter watches its blocker, but a watch of a session on a
        // node it already watches is not counted again (zklock's holder
        // watches its own node, so a waiter of the holder's session right
        // behind it adds none): settled at `waiters`, or at 99 % of it and
        // unchanged for 2 s; the time is when the count last moved.
        let settled = watched * 100 >= waiters as u64 * 99 && t0.elapsed() - changed >= Duration::from_secs(2);
        if created.is_some() && (watched >= waiters as u64 || settled) {
            all_watching = Some(changed.as_secs_f64());
            break;
        }
    }
    eprintln!("  {name} {}: created {created:?} s, watching {all_watching:?} s ({watched} watches)", imp.name);
    let watches_before_release = watching()?.saturating_sub(base);
    // The physical bound: a woken waiter lists the queue behind it.
    let list_ms = (0..5)
        .map(|_| {
            let t = Instant::now();
            rt.block_on(zk.children(&path)).map(|_| t.elapsed().as_secs_f64() * 1e3).map_err(err)
        })
        .collect::<R<Vec<f64>>>()?;
    // Drain: from the holder's release until the queue is empty.
    let pids: Vec<u32> = members.iter().copied().chain(fleet.pids()).collect();
    let notified = || proxies.proxies().iter().map(zklock_harness::Proxy::notifications).sum::<u64>();
    let (cpu0, sent0) = (ticks(&pids), notified());
    let release_us = unix_us();
    fleet.drivers.first_mut().ok_or("no driver")?.send("release")?;
    let t1 = Instant::now();
    let mut drained = false;
    while t1.elapsed() < o.drain_limit {
        std::thread::sleep(Duration::from_millis(100));
        if children()? == 0 {
            drained = true;
            break;
        }
    }
    let (cpu1, sent1, end_us) = (ticks(&pids), notified(), unix_us());
    fleet.send("finish")?;
    let results = fleet.results()?;
    drop(fleet);
    let times = grant_times(&results);
    let counted = |t: &&i64| **t >= release_us && **t <= end_us;
    let handoffs: usize = times.iter().map(|v| v.iter().filter(counted).count()).sum();
    let sampled: usize = times.iter().take(o.proxied).map(|v| v.iter().filter(counted).count()).sum();
    let last = times.iter().flatten().copied().filter(|t| *t <= end_us).max().unwrap_or(end_us);
    let span_s = ((if drained { last } else { end_us }) - release_us) as f64 / 1e6;
    let cpu = used(&cpu0, &cpu1);
    let member_sum: u64 = cpu[..MEMBERS].iter().sum();
    let drivers_sum: u64 = cpu[MEMBERS..].iter().sum();
    let list_median = report::quantile(&list_ms, 0.5);
    Ok(json!({
        "scenario": name, "impl": imp.name, "procs": o.procs, "sessions_per_proc": o.queue_sessions,
        "waiters_per_proc": o.waiters, "waiters": waiters, "leader": leader,
        "enqueue": { "created_s": created, "all_watching_s": all_watching, "watches_added": watched,
            "watches_at_release": watches_before_release },
        "list_full_queue_ms": list_ms,
        "drained": drained, "handoffs": handoffs, "drain_s": span_s,
        "handoffs_per_s": (span_s > 0.0).then(|| handoffs as f64 / span_s),
        "bound_handoffs_per_s": list_median.map(|l| 2000.0 / l),
        "notifications": { "sample_procs": o.proxied.min(o.procs), "sample_handoffs": sampled, "sent": sent1 - sent0,
            "per_release": (sampled > 0).then(|| (sent1 - sent0) as f64 / sampled as f64) },
        "cpu_ticks": { "members": &cpu[..MEMBERS], "drivers": &cpu[MEMBERS..] },
        "cpu_us_per_handoff": { "sum": us_per(member_sum, handoffs), "leader": us_per(cpu[leader], handoffs),
            "drivers": us_per(drivers_sum, handoffs) },
        "failed": total(&results, "failed"), "release_failed": total(&results, "release_failed"),
        "violations": total(&results, "violations"), "marker_errors": total(&results, "marker_errors"),
        "drivers": slim(&results),
    }))
}

/// The longest pause in grants across the kill at `kill` (µs since the
/// epoch), among the sorted grant times `sorted`: from the last grant
/// before the kill (or the kill) to the next grant. Returns (the pause in
/// ms, when grants resumed after it in ms from the kill, the first grant
/// after the kill in ms from the kill).
fn outage(sorted: &[i64], kill: i64) -> Option<(f64, f64, f64)> {
    let first = sorted.partition_point(|t| *t < kill);
    let after = sorted.get(first..)?;
    let mut prev = if first > 0 { sorted[first - 1] } else { kill };
    let mut longest = (0i64, *after.first()?);
    for &t in after {
        if t - prev > longest.0 {
            longest = (t - prev, t);
        }
        prev = t;
    }
    Some((longest.0 as f64 / 1e3, (longest.1 - kill) as f64 / 1e3, (after[0] - kill) as f64 / 1e3))
}

/// `many-N` for `imp` on a fresh ensemble whose leader is killed mid-run
/// (see the module documentation).
fn many(imp: &Imp, o: &Opts, name: &str) -> R<Value> {
    let (cluster, leader, members) = ensemble()?;
    let hosts = cluster.connect_string();
    let path = format!("/bench/load/{name}/{}", imp.name);
    {
        // Every lock path exists before the run: no acquire makes one.
        let (rt, zk) = raw::connect(&hosts, Duration::from_secs(30), true)?;
        make_paths(&rt, &zk, &path, "many", o.paths)?;
        rt.block_on(zk.close());
    }
    let markers = MarkerDir::new(name, imp.name)?;
    let each = (0..o.procs)
        .map(|i| {
            let params = vec![
                ("sessions", o.sessions as u64),
                ("paths", o.paths as u64),
                ("hold_us", o.hold.as_micros() as u64),
                ("timeout_ms", 30_000),
                ("duration_ms", o.duration.as_millis() as u64),
                ("proc", i as u64),
                ("window_from_ms", o.warmup.as_millis() as u64),
                ("window_to_ms", o.kill_at.as_millis() as u64),
            ];
            (hosts.clone(), params)
        })
        .collect();
    let limit = o.duration + Duration::from_secs(300);
    let mut fleet = Fleet::start(&markers.give(imp), "many-locks", name, each, &path, &o.out, limit)?;
    fleet.expect("ready")?;
    let pids: Vec<u32> = members.iter().copied().chain(fleet.pids()).collect();
    let go = Instant::now();
    let go_us = unix_us();
    fleet.send("go")?;
    std::thread::sleep(o.warmup.saturating_sub(go.elapsed()));
    let (cpu0, from_us) = (ticks(&pids), unix_us());
    std::thread::sleep(o.kill_at.saturating_sub(go.elapsed()));
    let killed = cluster.leader().unwrap_or(leader);
    let (cpu1, kill_us) = (ticks(&pids), unix_us());
    cluster.kill(killed).map_err(err)?;
    let t = Instant::now();
    let mut new_leader = None;
    while t.elapsed() < Duration::from_secs(60) {
        if let Some(l) = cluster.leader() {
            new_leader = Some((l, t.elapsed().as_secs_f64() * 1e3));
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let results = fleet.results()?;
    drop(fleet);
    let end_us = go_us + o.duration.as_micros() as i64;
    // Every grant: (time, wait in µs).
    let mut grants: Vec<(i64, f64)> = results
        .iter()
        .flat_map(|r| {
            let t = r["grant_us"].as_array().cloned().unwrap_or_default();
            let l = r["lat_us"].as_array().cloned().unwrap_or_default();
            t.into_iter().zip(l).filter_map(|(t, l)| Some((t.as_i64()?, l.as_f64()?))).collect::<Vec<_>>()
        })
        .collect();
    grants.sort_by_key(|g| g.0);
    let waits = |from: i64, to: i64| -> Vec<f64> {
        grants.iter().filter(|g| g.0 >= from && g.0 < to).map(|g| g.1 / 1e3).collect()
    };
    let steady = waits(from_us, kill_us);
    let window_s = (kill_us - from_us) as f64 / 1e6;
    let after = waits(kill_us, end_us);
    let sorted: Vec<i64> = grants.iter().map(|g| g.0).collect();
    let gap = outage(&sorted, kill_us);
    let resumed_us = gap.map(|(_, r, _)| kill_us + (r * 1e3) as i64);
    // The rate once recovered: from 5 s after grants resumed to the end.
    let recovered = resumed_us
        .map(|r| r + 5_000_000)
        .filter(|from| *from < end_us)
        .map(|from| waits(from, end_us).len() as f64 / ((end_us - from) as f64 / 1e6));
    // Grants per 250 ms from 1 s before the kill to 10 s after: the shape
    // of the outage.
    let timeline: Vec<usize> =
        (0..44).map(|i| kill_us - 1_000_000 + i * 250_000).map(|from| waits(from, from + 250_000).len()).collect();
    let cpu = used(&cpu0, &cpu1);
    let member_sum: u64 = cpu[..MEMBERS].iter().sum();
    let drivers_sum: u64 = cpu[MEMBERS..].iter().sum();
    let mut failed = serde_json::Map::new();
    for r in &results {
        for (k, v) in r["failed"].as_object().into_iter().flatten() {
            let n = failed.get(k).and_then(Value::as_u64).unwrap_or(0) + v.as_u64().unwrap_or(0);
            failed.insert(k.clone(), json!(n));
        }
    }
    // The requests sent in the steady window, by operation, per cycle
    // (drivers that count them: zklock's).
    let mut sent = BTreeMap::<String, u64>::new();
    for r in &results {
        for (op, n) in r["window_requests"].as_object().into_iter().flatten() {
            *sent.entry(op.clone()).or_default() += n.as_u64().unwrap_or(0);
        }
    }
    let per_cycle: serde_json::Map<String, Value> = if steady.is_empty() {
        serde_json::Map::new()
    } else {
        sent.iter().map(|(op, n)| (op.clone(), json!(*n as f64 / steady.len() as f64))).collect()
    };
    let q = |v: &[f64], p: f64| report::quantile(v, p);
    Ok(json!({
        "scenario": name, "impl": imp.name, "procs": o.procs, "sessions_per_proc": o.sessions,
        "sessions": o.procs * o.sessions, "paths": o.paths, "hold_ms": o.hold.as_secs_f64() * 1e3,
        "duration_s": o.duration.as_secs_f64(), "window_s": window_s, "leader": leader,
        "steady": { "cycles": steady.len(), "cycles_per_s": steady.len() as f64 / window_s,
            "wait_ms_p50": q(&steady, 0.5), "wait_ms_p99": q(&steady, 0.99), "wait_ms_max": q(&steady, 1.0),
            "cpu_ticks": { "members": &cpu[..MEMBERS], "drivers": &cpu[MEMBERS..] },
            "cpu_us_per_cycle": { "sum": us_per(member_sum, steady.len()), "leader": us_per(cpu[leader], steady.len()),
                "drivers": us_per(drivers_sum, steady.len()) },
            "requests_per_cycle": per_cycle },
        "kill": { "member": killed, "at_s": (kill_us - go_us) as f64 / 1e6,
            "new_leader": new_leader.map(|l| l.0), "new_leader_seen_ms": new_leader.map(|l| l.1),
            "longest_pause_ms": gap.map(|g| g.0), "grants_resumed_ms": gap.map(|g| g.1),
            "first_grant_after_ms": gap.map(|g| g.2), "cycles_after": after.len(),
            "wait_ms_p99_after": q(&after, 0.99), "wait_ms_max_after": q(&after, 1.0),
            "recovered_cycles_per_s": recovered, "grants_per_250ms_from_1s_before": timeline },
        "grants": grants.len(), "failed": failed,
        "suspended_checks": total(&results, "suspended_checks"), "lost": total(&results, "lost"),
        "false_losses": total(&results, "false_losses"), "release_failed": total(&results, "release_failed"),
        "violations": total(&results, "violations"), "marker_errors": total(&results, "marker_errors"),
        "sessions_expired": total(&results, "sessions_expired"),
        "sessions_changed": total(&results, "sessions_changed"),
        "drivers": slim(&results),
    }))
}

/// A number of a run's JSON at the `/`-separated `pointer`.
fn num(run: &Value, pointer: &str) -> Option<f64> {
    run.pointer(pointer).and_then(Value::as_f64)
}

/// `num` formatted for a table (`–` when absent).
fn cell(run: &Value, pointer: &str) -> String {
    num(run, pointer).map_or_else(|| "–".into(), report::fmt)
}

/// This run's figure at `pointer` divided by the peer's of the same
/// scenario (`–` when either is absent).
fn ratio(runs: &[Value], run: &Value, pointer: &str) -> String {
    let peer = runs.iter().find(|r| r["scenario"] == run["scenario"] && r["impl"] == PEER);
    match (num(run, pointer), peer.and_then(|p| num(p, pointer))) {
        (Some(a), Some(b)) if b != 0.0 => report::fmt(a / b),
        _ => "–".into(),
    }
}

/// The report: a table per scenario, ratios to Curator.
fn markdown(runs: &[Value], failures: &[String], machine: &Value, notes: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# zklock load benchmark: many sessions and locks, long queues (issue 33, items 2 and 4)\n");
    s.push_str(&report::machine_and_notes(machine, notes));
    let queues: Vec<&Value> =
        runs.iter().filter(|r| r["scenario"].as_str().is_some_and(|n| n.starts_with("queue"))).collect();
    if !queues.is_empty() {
        let _ = writeln!(s, "## Long queue (item 4)\n");
        let _ = writeln!(
            s,
            "| scenario | implementation | waiters (procs x sessions x per session) | all created s | all waiting s | \
             handoffs/s | × Curator | drained | notifications/release (sample) | ensemble CPU µs/handoff: sum | \
             leader | sum × Curator | drivers CPU µs/handoff | list of the full queue ms | list bound handoffs/s | \
             failed | violations |\n|{}",
            "---|".repeat(17)
        );
        for r in &queues {
            let _ = writeln!(
                s,
                "| {} | {} | {} ({} x {} x {}) | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r["scenario"].as_str().unwrap_or("?"),
                r["impl"].as_str().unwrap_or("?"),
                r["waiters"],
                r["procs"],
                r["sessions_per_proc"],
                r["waiters_per_proc"].as_u64().unwrap_or(0) / r["sessions_per_proc"].as_u64().unwrap_or(1).max(1),
                cell(r, "/enqueue/created_s"),
                cell(r, "/enqueue/all_watching_s"),
                cell(r, "/handoffs_per_s"),
                ratio(runs, r, "/handoffs_per_s"),
                if r["drained"] == true {
                    "yes".to_owned()
                } else {
                    format!("no: {} in {} s", r["handoffs"], cell(r, "/drain_s"))
                },
                cell(r, "/notifications/per_release"),
                cell(r, "/cpu_us_per_handoff/sum"),
                cell(r, "/cpu_us_per_handoff/leader"),
                ratio(runs, r, "/cpu_us_per_handoff/sum"),
                cell(r, "/cpu_us_per_handoff/drivers"),
                report::quantile(
                    &r["list_full_queue_ms"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_f64)
                        .collect::<Vec<_>>(),
                    0.5
                )
                .map_or_else(|| "–".into(), report::fmt),
                cell(r, "/bound_handoffs_per_s"),
                r["failed"],
                r["violations"],
            );
        }
        let _ = writeln!(
            s,
            "\nEnqueue times × Curator (all waiting): {}. The list bound: a handoff wakes the next waiter, which \
             reads the list of the queue behind it once; with lists shrinking from the full queue to nothing, a \
             full drain cannot run faster than 2 / (the time of a list of the full queue), the list's time taken \
             as proportional to its length (5 reads by the runner before the release, median).\n",
            queues
                .iter()
                .filter(|r| r["impl"] != PEER)
                .map(|r| format!("{} {}", r["impl"].as_str().unwrap_or("?"), ratio(runs, r, "/enqueue/all_watching_s")))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let manys: Vec<&Value> =
        runs.iter().filter(|r| r["scenario"].as_str().is_some_and(|n| n.starts_with("many"))).collect();
    if !manys.is_empty() {
        let _ = writeln!(s, "## Many sessions and locks (item 2)\n");
        let _ = writeln!(
            s,
            "Before the kill (the measured window):\n\n| scenario | implementation | sessions (procs x per proc) | \
             locks | cycles/s | × Curator | wait p50 ms | × Curator | wait p99 ms | × Curator | ensemble CPU \
             µs/cycle: sum | leader | sum × Curator | drivers CPU µs/cycle | CPU bound cycles/s |\n|{}",
            "---|".repeat(15)
        );
        for r in &manys {
            let cpu = num(r, "/steady/cpu_us_per_cycle/sum").zip(num(r, "/steady/cpu_us_per_cycle/drivers"));
            let _ = writeln!(
                s,
                "| {} | {} | {} ({} x {}) | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r["scenario"].as_str().unwrap_or("?"),
                r["impl"].as_str().unwrap_or("?"),
                r["sessions"],
                r["procs"],
                r["sessions_per_proc"],
                r["paths"],
                cell(r, "/steady/cycles_per_s"),
                ratio(runs, r, "/steady/cycles_per_s"),
                cell(r, "/steady/wait_ms_p50"),
                ratio(runs, r, "/steady/wait_ms_p50"),
                cell(r, "/steady/wait_ms_p99"),
                ratio(runs, r, "/steady/wait_ms_p99"),
                cell(r, "/steady/cpu_us_per_cycle/sum"),
                cell(r, "/steady/cpu_us_per_cycle/leader"),
                ratio(runs, r, "/steady/cpu_us_per_cycle/sum"),
                cell(r, "/steady/cpu_us_per_cycle/drivers"),
                cpu.map_or_else(|| "–".into(), |(m, d)| report::fmt(cores() * 1e6 / (m + d))),
            );
        }
        let _ = writeln!(
            s,
            "\nThe CPU bound: this machine's {} cores divided by the CPU time (ensemble and drivers) per cycle.\n\n\
             The leader killed (SIGKILL) mid-run:\n\n| scenario | implementation | killed member | new leader seen ms | \
             first grant after ms | longest pause ms | grants resumed ms | × Curator | cycles/s 5 s after | wait \
             p99 ms after | wait max ms after | violations | false losses | lost | suspended checks | acquires \
             failed | releases failed | sessions expired | sessions changed |\n|{}",
            cores(),
            "---|".repeat(19)
        );
        for r in &manys {
            let failed: u64 = r["failed"].as_object().into_iter().flatten().filter_map(|(_, v)| v.as_u64()).sum();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} {} | {} | {} | {} |",
                r["scenario"].as_str().unwrap_or("?"),
                r["impl"].as_str().unwrap_or("?"),
                r["kill"]["member"],
                cell(r, "/kill/new_leader_seen_ms"),
                cell(r, "/kill/first_grant_after_ms"),
                cell(r, "/kill/longest_pause_ms"),
                cell(r, "/kill/grants_resumed_ms"),
                ratio(runs, r, "/kill/grants_resumed_ms"),
                cell(r, "/kill/recovered_cycles_per_s"),
                cell(r, "/kill/wait_ms_p99_after"),
                cell(r, "/kill/wait_ms_max_after"),
                r["violations"],
                r["false_losses"],
                r["lost"],
                r["suspended_checks"],
                failed,
                r["failed"],
                r["release_failed"],
                r["sessions_expired"],
                r["sessions_changed"],
            );
        }
        for r in manys.iter().filter(|r| r["steady"]["requests_per_cycle"].as_object().is_some_and(|m| !m.is_empty())) {
            let ops: Vec<String> = r["steady"]["requests_per_cycle"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(op, n)| format!("{op} {}", n.as_f64().map_or_else(|| "–".into(), report::fmt)))
                .collect();
            let _ = writeln!(
                s,
                "\nRequests per cycle in the steady window, {} {} (its sessions' own count): {}.",
                r["scenario"].as_str().unwrap_or("?"),
                r["impl"].as_str().unwrap_or("?"),
                ops.join(", ")
            );
        }
        let _ = writeln!(s);
    }
    if !failures.is_empty() {
        let _ = writeln!(s, "## Failed runs\n");
        for f in failures {
            let _ = writeln!(s, "- {f}");
        }
    }
    s
}

/// The machine's cores (`nproc`), for the CPU bound.
fn cores() -> f64 {
    sh("nproc").parse().unwrap_or(1.0)
}

/// `zklock-bench load`: see the module documentation.
pub(crate) fn run(args: &[String]) -> R<()> {
    let o = parse(args)?;
    std::fs::create_dir_all(o.out.join("logs")).map_err(err)?;
    let mut machine = machine();
    if let Some(m) = machine.as_object_mut() {
        // Neither Python, kazoo nor Node runs here.
        for k in ["python", "kazoo", "node"] {
            m.remove(k);
        }
    }
    zklock_harness::ensure_zookeeper().map_err(err)?;
    let imps: Vec<Imp> = implementations().into_iter().filter(|i| o.impls.iter().any(|n| n == i.name)).collect();
    let started = Instant::now();
    let (mut runs, mut failures) = (Vec::new(), Vec::new());
    for sc in &o.scenarios {
        for imp in &imps {
            let name = match sc.as_str() {
                "queue" => format!("queue-{}", o.procs * o.waiters),
                _ => format!("many-{}", o.procs * o.sessions),
            };
            eprintln!("zklock-bench load: {name} {} (load average {})", imp.name, loadavg());
            let (t, load_before) = (Instant::now(), loadavg());
            let out = if sc == "queue" { queue(imp, &o, &name) } else { many(imp, &o, &name) };
            match out {
                Ok(mut r) => {
                    if let Some(m) = r.as_object_mut() {
                        m.insert("wall_s".into(), json!(t.elapsed().as_secs_f64()));
                        m.insert("load_before".into(), json!(load_before));
                        m.insert("load_after".into(), json!(loadavg()));
                    }
                    eprintln!(
                        "  {}",
                        serde_json::to_string(&r).unwrap_or_default().chars().take(600).collect::<String>()
                    );
                    runs.push(r);
                },
                Err(e) => {
                    eprintln!("  {name} {} FAILED: {e}", imp.name);
                    failures.push(format!("{name} {}: {e}", imp.name));
                },
            }
            // So far, in case the run is cut short.
            let so_far = json!({ "machine": machine, "runs": runs, "failures": failures, "partial": true });
            std::fs::write(o.out.join("results.json"), so_far.to_string()).map_err(err)?;
        }
    }
    let notes = vec![format!(
        "Generated by `zklock-bench load`{} in {:.0} s. Each run on a fresh 3-node ensemble on loopback (test \
         harness, tickTime 2000 ms, forceSync=no, 2 GB heap and C2 per member), {} driver processes per run, \
         every session talking to any member (the connect string of all three) except the queue's sample \
         ({} process(es) through counting proxies). One run per implementation (no repetitions): ratios are \
         this implementation's figure divided by Curator's of the same scenario in this run. CPU = user + \
         system time (/proc/PID/stat, {} ticks a second) of the members and of the driver processes over the \
         measured part.",
        if o.quick { " (quick mode)" } else { "" },
        started.elapsed().as_secs_f64(),
        o.procs,
        o.proxied.min(o.procs),
        ticks_per_s(),
    )];
    let md = markdown(&runs, &failures, &machine, &notes);
    let results = json!({ "machine": machine, "runs": runs, "failures": failures, "options": {
        "quick": o.quick, "procs": o.procs, "queue_sessions": o.queue_sessions, "waiters": o.waiters,
        "proxied": o.proxied, "sessions": o.sessions, "paths": o.paths, "hold_ms": o.hold.as_millis() as u64,
        "duration_s": o.duration.as_secs(), "warmup_s": o.warmup.as_secs(), "kill_at_s": o.kill_at.as_secs(),
        "enqueue_limit_s": o.enqueue_limit.as_secs(), "drain_limit_s": o.drain_limit.as_secs() } });
    write_results(&o.out, &md, &results)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_outage_is_the_longest_pause_after_the_kill() {
        // Grants every 10 ms, the kill at 1,000, nothing from 1,005 to 3,000.
        let sorted = [980, 990, 1000, 1005, 3000, 3010, 3500];
        let (pause, resumed, first) = outage(&sorted, 1000).unwrap();
        assert_eq!(pause, (3000 - 1005) as f64 / 1e3);
        assert_eq!(resumed, 2.0);
        assert_eq!(first, 0.0);
        // No grant before the kill: the pause counts from the kill.
        assert_eq!(outage(&[1500, 1600], 1000).unwrap(), (0.5, 0.5, 0.5));
        assert!(outage(&[900], 1000).is_none(), "no grant after the kill");
    }

    #[test]
    fn ratios_divide_by_the_peer_of_the_same_scenario() {
        let runs = vec![
            json!({ "scenario": "many-10", "impl": "zklock-rust", "x": { "y": 30.0 } }),
            json!({ "scenario": "many-10", "impl": "curator", "x": { "y": 20.0 } }),
            json!({ "scenario": "queue-10", "impl": "curator", "x": { "y": 1.0 } }),
        ];
        assert_eq!(ratio(&runs, &runs[0], "/x/y"), "1.50");
        assert_eq!(ratio(&runs, &runs[2], "/x/z"), "–");
    }
}

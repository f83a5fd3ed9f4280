//! `zklock-bench memory` (`make bench-memory`): the client's memory per
//! waiting acquire and per held lock (issue 33, item 3), for zklock's Rust
//! core, Python and Node packages, Curator and kazoo, each in a process of
//! its own.
//!
//! ```text
//! zklock-bench memory [--impl IMPL,..] [--n 1000,3000,10000] [--shapes one,many,hold] [--settle-s 5]
//!                     [--limit-s 600] [--skip IMPL/SHAPE/N,..] [--out DIR]
//! ```
//!
//! Starts a private standalone ZooKeeper (the test harness's) and runs, for
//! every implementation, shape and `N`, one driver process with scenario
//! `memory-SHAPE` and `n=N` on one client (session):
//!
//! - `one`: a holder and `N` acquires waiting behind it on one lock;
//! - `many`: `N` locks, each held, and one acquire waiting on each;
//! - `hold`: `N` locks acquired and held (nobody waits).
//!
//! The lock paths exist before the driver starts (made here), so each
//! acquire adds exactly one node. The driver speaks a small protocol on its
//! stdin and stdout, the same in every language:
//!
//! 1. it connects, takes the `one` and `many` holders, collects its garbage
//!    and says `{"event": "ready"}`;
//! 2. on `start` it resets `VmHWM` (`/proc/self/clear_refs`), answers with
//!    its `before` snapshot and starts the `N` acquires at once (waiters as
//!    async tasks in zklock's async bindings, as one thread each in Curator
//!    and kazoo, whose acquire blocks; `hold` acquires on one background
//!    thread in those two), then says `{"event": "started"}`; in `hold`
//!    it says `{"event": "granted"}` once every lock is held;
//! 3. on `snap NAME` it answers `{"snap": NAME, "rss", "hwm", "threads",
//!    "heap", "gc_heap"}` (`VmRSS`, `VmHWM`, `Threads` of
//!    `/proc/self/status`; `heap`: bytes in use by glibc's malloc
//!    (`mallinfo2`) where the runtime can call it (Rust, Python), else
//!    null; `gc_heap`: the collected heap in use where there is one
//!    (Node: V8's `heapUsed` + `external`, Java: total - free), else null).
//!    `snap gc` first collects garbage and gives free memory back where the
//!    runtime can (Rust and Python: `malloc_trim(0)`; Python:
//!    `gc.collect()`; Node: `gc()` (`--expose-gc`); Java: `System.gc()`);
//! 4. on `quit` (or the end of its stdin) it exits without releasing.
//!
//! The moments are those of the Rust core's first measurement (issue 33):
//! `queued` once the server holds all `N` new nodes (its `zk_znode_count`),
//! `later` 5 s after every waiter watches its blocker (the server's watch
//! count, `wchs`, at least `N` and unchanged for 1 s; for `hold`: after
//! `granted`, the count unchanged for 1 s), then `gc`. A case whose watch
//! count does not settle within `--limit-s` is measured all the same at
//! that moment (no settling time) and marked `settled: false`. Figures per
//! item are the growth from `before` divided by `N`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use zklock_harness::{four_letter_word, Cluster, ClusterOptions};
use zklock_zk as zk;

use crate::{err, implementations, machine, raw, root, sh, write_results, Driver, Imp, Scenario, Via, R};

/// The implementations measured, in this order (`--impl` chooses).
const IMPLS: [&str; 5] = ["zklock-rust", "zklock-python", "zklock-node", "curator", "kazoo"];

/// More that `--impl` may name: the Rust core with its waiters' futures on
/// the client's own runtime (`Client::spawn_then`, as the Python and Node
/// bindings run them) instead of a runtime of the driver's.
/// `zklock-rust-spawn-then-timeout`: the same with a timeout of 900 s on
/// every acquire, as the Python and Node drivers give theirs.
const MORE: [&str; 2] = ["zklock-rust-spawn-then", "zklock-rust-spawn-then-timeout"];

/// The shapes (see the module documentation).
const SHAPES: [&str; 3] = ["one", "many", "hold"];

const USAGE: &str = "zklock-bench memory [--impl IMPL,..] [--n 1000,3000,10000] [--shapes one,many,hold] \
                     [--settle-s 5] [--limit-s 600] [--skip IMPL/SHAPE/N,..] [--out DIR]";

/// The command line of `zklock-bench memory`.
struct Opts {
    impls: Vec<String>,
    ns: Vec<usize>,
    shapes: Vec<String>,
    settle: Duration,
    /// Longest wait for one case's nodes, then for its watches.
    limit: Duration,
    /// Cases left out, as `IMPL/SHAPE/N`.
    skip: Vec<String>,
    out: PathBuf,
}

fn parse(args: &[String]) -> R<Opts> {
    let list = |s: &str| s.split(',').map(|x| x.trim().to_owned()).filter(|x| !x.is_empty()).collect::<Vec<_>>();
    let mut o = Opts {
        impls: IMPLS.iter().map(|s| (*s).to_owned()).collect(),
        ns: vec![1000, 3000, 10000],
        shapes: SHAPES.iter().map(|s| (*s).to_owned()).collect(),
        settle: Duration::from_secs(5),
        limit: Duration::from_secs(600),
        skip: Vec::new(),
        out: root().join("bench/results").join(format!("memory-{}", sh("date -u +%Y-%m-%d"))),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "-h" || a == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let v = it.next().ok_or_else(|| format!("{a} needs a value\n{USAGE}"))?;
        match a.as_str() {
            "--impl" | "--only" => o.impls = list(v),
            "--n" => o.ns = list(v).iter().map(|x| x.parse().map_err(|e| format!("--n {x}: {e}"))).collect::<R<_>>()?,
            "--shapes" => o.shapes = list(v),
            "--settle-s" => o.settle = Duration::from_secs(v.parse().map_err(err)?),
            "--limit-s" => o.limit = Duration::from_secs(v.parse().map_err(err)?),
            "--skip" => o.skip = list(v),
            "--out" => o.out = PathBuf::from(v),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    for i in &o.impls {
        if !IMPLS.contains(&i.as_str()) && !MORE.contains(&i.as_str()) {
            return Err(format!("--impl {i}: one of {}, {}", IMPLS.join(", "), MORE.join(", ")));
        }
    }
    for s in &o.shapes {
        if !SHAPES.contains(&s.as_str()) {
            return Err(format!("--shapes {s}: one of {}", SHAPES.join(", ")));
        }
    }
    Ok(o)
}

/// How to start `name`'s driver for this run: `make bench`'s, but the Rust
/// core runs `zklock-bench-memory` (its heap sampler and `malloc_trim`;
/// `zklock-rust-spawn-then`: with `ZKLOCK_BENCH_SPAWN_THEN=1`) and Node may
/// collect garbage when told.
fn imp(name: &str) -> R<Imp> {
    let base = if name.starts_with("zklock-rust") { "zklock-rust" } else { name };
    let mut imp = implementations().into_iter().find(|i| i.name == base).ok_or(format!("no implementation {name}"))?;
    match name {
        "zklock-rust" => imp.program = imp.program.with_file_name("zklock-bench-memory"),
        "zklock-rust-spawn-then" | "zklock-rust-spawn-then-timeout" => {
            imp.name =
                if name.ends_with("timeout") { "zklock-rust-spawn-then-timeout" } else { "zklock-rust-spawn-then" };
            imp.program = imp.program.with_file_name("zklock-bench-memory");
            imp.env.push(("ZKLOCK_BENCH_SPAWN_THEN".into(), "1".into()));
            if name.ends_with("timeout") {
                imp.env.push(("ZKLOCK_BENCH_TIMEOUT_S".into(), "900".into()));
            }
        },
        "zklock-node" => imp.args.insert(0, "--expose-gc".into()),
        _ => {},
    }
    Ok(imp)
}

/// A number from the server's `mntr` output (`key\tvalue` lines).
fn mntr(addr: std::net::SocketAddr, key: &str) -> R<u64> {
    let text = four_letter_word(addr, "mntr", Duration::from_secs(10)).map_err(err)?;
    text.lines()
        .find_map(|l| l.strip_prefix(key).and_then(|r| r.trim().parse().ok()))
        .ok_or_else(|| format!("mntr has no {key}: {text:?}"))
}

/// The server's count of watches (`wchs`: `Total watches:N`).
pub(crate) fn watches(addr: std::net::SocketAddr) -> R<u64> {
    let text = four_letter_word(addr, "wchs", Duration::from_secs(10)).map_err(err)?;
    text.lines()
        .find_map(|l| l.strip_prefix("Total watches:"))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| format!("wchs: {text:?}"))
}

/// Creates `path` (and its ancestors) and, unless `shape` is `one`, its
/// children `0..n` (persistent, open ACL), so that every acquire of the run
/// adds exactly one node.
pub(crate) fn make_paths(rt: &tokio::runtime::Runtime, zk: &zk::Session, path: &str, shape: &str, n: usize) -> R<()> {
    let open = zk::Acl::open();
    let made = |r: Result<_, zk::Error>| match r {
        Ok(_) | Err(zk::Error::Server(zk::Code::NodeExists)) => Ok(()),
        Err(e) => Err(e.to_string()),
    };
    rt.block_on(async {
        let ends = path.match_indices('/').skip(1).map(|(i, _)| i).chain([path.len()]);
        for end in ends {
            made(zk.create(&path[..end], b"", &open, zk::CreateMode::Persistent).await.map(|_| ()))?;
        }
        if shape != "one" {
            // In batches, each awaited (the session pipelines a batch).
            for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
                let futs: Vec<_> = chunk
                    .iter()
                    .map(|i| zk.create(&format!("{path}/{i}"), b"", &open, zk::CreateMode::Persistent))
                    .collect();
                for f in futs {
                    made(f.await.map(|_| ()))?;
                }
            }
        }
        Ok::<(), String>(())
    })
}

/// The driver's next JSON line; notes a `granted` event in `granted`
/// (it may come before or after any snapshot) and fails on an `error`.
fn next(d: &mut Driver, granted: &mut bool) -> R<Value> {
    let v = d.next()?;
    if let Some(e) = v.get("error") {
        return Err(format!("driver: {e}"));
    }
    if v.get("event").and_then(Value::as_str) == Some("granted") {
        *granted = true;
    }
    Ok(v)
}

/// Asks for the snapshot `name` (unless `ask` is false: `before` comes
/// unasked after `start`) and returns it; other lines before it are skipped.
fn snap(d: &mut Driver, name: &str, ask: bool, granted: &mut bool) -> R<Value> {
    if ask {
        d.send(&format!("snap {name}"))?;
    }
    loop {
        let v = next(d, granted)?;
        if v.get("snap").and_then(Value::as_str) == Some(name) {
            return Ok(v);
        }
    }
}

/// One case: `imp`'s driver, `shape`, `n` (see the module documentation).
#[allow(clippy::too_many_arguments)]
fn case(
    imp: &Imp,
    shape: &str,
    n: usize,
    settle: Duration,
    limit: Duration,
    hosts: &str,
    addr: std::net::SocketAddr,
    obs: &(tokio::runtime::Runtime, zk::Session),
    log: &Path,
) -> R<Value> {
    let path = format!("/memory/{}/{shape}-{n}", imp.name);
    make_paths(&obs.0, &obs.1, &path, shape, n)?;
    let family: &'static str = match shape {
        "one" => "memory-one",
        "many" => "memory-many",
        _ => "memory-hold",
    };
    let sc = Scenario {
        name: format!("memory-{shape}-{n}"),
        family,
        params: vec![("n".into(), n as u64)],
        reps: 1,
        limit: 2 * limit + Duration::from_secs(120),
        via: Via::Direct,
    };
    let mut d = Driver::start(imp, &sc, hosts, &path, log)?;
    let mut granted = false;
    while next(&mut d, &mut granted)?.get("event").and_then(Value::as_str) != Some("ready") {}
    let nodes0 = mntr(addr, "zk_znode_count")?;
    let watches0 = watches(addr)?;
    let t0 = Instant::now();
    d.send("start")?;
    let before = snap(&mut d, "before", false, &mut granted)?;
    while mntr(addr, "zk_znode_count")? < nodes0 + n as u64 {
        if t0.elapsed() > limit {
            return Err(format!("only {} of {n} nodes in {limit:?}", mntr(addr, "zk_znode_count")? - nodes0));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let queued_s = t0.elapsed().as_secs_f64();
    let queued = snap(&mut d, "queued", true, &mut granted)?;
    while shape == "hold" && !granted {
        next(&mut d, &mut granted)?;
    }
    // Every waiter watches its blocker: the count at least N (each waiter
    // its own blocker's node; the server counts a node watched twice by
    // one session once, so not "N more than before": a holder's own watch
    // on its node is the first waiter's too) and unchanged for 1 s (a list
    // may come long after the last create). Holders: unchanged for 1 s.
    let want = if shape == "hold" { 0 } else { n as u64 };
    let mut last = (u64::MAX, Instant::now());
    let mut settled = true;
    loop {
        let total = watches(addr)?;
        if total != last.0 {
            last = (total, Instant::now());
        } else if total >= want && last.1.elapsed() >= Duration::from_secs(1) {
            break;
        }
        if t0.elapsed() > limit {
            // Measured all the same, and marked (see `settled`).
            settled = false;
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let settled_s = t0.elapsed().as_secs_f64();
    if settled {
        std::thread::sleep(settle);
    }
    let later = snap(&mut d, "later", true, &mut granted)?;
    let gc = snap(&mut d, "gc", true, &mut granted)?;
    let _ = d.send("quit");
    drop(d);
    Ok(json!({
        "impl": imp.name, "shape": shape, "n": n, "queued_s": queued_s, "settled_s": settled_s,
        "watches_added": last.0.saturating_sub(watches0), "watches": last.0, "settled": settled,
        "before": before, "queued": queued, "later": later, "gc": gc,
    }))
}

/// `snap`'s growth of `field` from `before`, per item, in KB (None if the
/// driver could not read it).
fn per_kb(c: &Value, snap: &str, field: &str) -> Option<f64> {
    let n = c["n"].as_f64()?;
    Some((c[snap][field].as_f64()? - c["before"][field].as_f64()?) / n / 1024.0)
}

/// The resident growth at `later`, per item (KB): the headline figure.
fn later_kb(c: &Value) -> Option<f64> {
    per_kb(c, "later", "rss")
}

fn fmt(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| format!("{x:.1}"))
}

/// The report: one table per shape, then the ratios to Curator and the
/// verdicts on the issue's targets.
fn markdown(cases: &[Value], failures: &[String], machine: &Value, opts: &Opts, wall: f64) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Client memory per waiting acquire and per held lock (issue 33, item 3)\n");
    let _ = writeln!(
        md,
        "Generated by `zklock-bench memory` in {wall:.0} s on {} ({} cores, {}), ZooKeeper {}, {}, Curator {}, \
         kazoo {}, Python {}, Node {}; git {}. One process per case, one client (session) each; settle {} s. \
         KB = 1,024 bytes per item (waiter or held lock): growth from `before` divided by N. `queued`: once \
         the server holds every node; `later`: {} s after every waiter watches its blocker; `gc`: after \
         collecting garbage / `malloc_trim(0)`. `hwm`: peak resident memory from `before` to `later` \
         (VmHWM reset at `before`). `heap`: glibc malloc in use (Rust, Python) or the collected heap (Node: \
         V8 heapUsed + external, Java: used), at `later`. Threads: before -> later.\n",
        machine["cpu"].as_str().unwrap_or("?").trim(),
        machine["nproc"].as_str().unwrap_or("?"),
        machine["memory"].as_str().unwrap_or("?"),
        machine["zookeeper"].as_str().unwrap_or("?"),
        machine["java"].as_str().unwrap_or("?"),
        machine["curator"].as_str().unwrap_or("?"),
        machine["kazoo"].as_str().unwrap_or("?"),
        machine["python"].as_str().unwrap_or("?"),
        machine["node"].as_str().unwrap_or("?"),
        machine["git"].as_str().unwrap_or("?"),
        opts.settle.as_secs(),
        opts.settle.as_secs(),
    );
    let find = |imp: &str, shape: &str, n: usize| {
        cases.iter().find(|c| c["impl"] == imp && c["shape"] == shape && c["n"].as_u64() == Some(n as u64))
    };
    for shape in &opts.shapes {
        let title = match shape.as_str() {
            "one" => "N acquires waiting on one lock (KB per waiter)",
            "many" => "N locks, each held, one acquire waiting on each (KB per waiter)",
            _ => "N locks held (KB per held lock)",
        };
        let _ = writeln!(md, "## {title}\n");
        let _ = writeln!(
            md,
            "| implementation | N | queued rss | later rss | hwm | gc rss | heap | x Curator (later rss) | threads | \
             queued / settled s |\n|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"
        );
        for imp in &opts.impls {
            for &n in &opts.ns {
                let Some(c) = find(imp, shape, n) else { continue };
                let heap = per_kb(c, "later", "heap").or_else(|| per_kb(c, "later", "gc_heap"));
                let ratio = find("curator", shape, n)
                    .and_then(later_kb)
                    .and_then(|cur| later_kb(c).map(|x| format!("{:.2}", x / cur)))
                    .unwrap_or_else(|| "–".into());
                let _ = writeln!(
                    md,
                    "| {imp} | {n}{} | {} | {} | {} | {} | {} | {ratio} | {} -> {} | {:.1} / {:.1} |",
                    if c["settled"] == false {
                        format!(" (not settled: {} watches)", c["watches"])
                    } else {
                        String::new()
                    },
                    fmt(per_kb(c, "queued", "rss")),
                    fmt(later_kb(c)),
                    fmt(per_kb(c, "later", "hwm")),
                    fmt(per_kb(c, "gc", "rss")),
                    fmt(heap),
                    c["before"]["threads"],
                    c["later"]["threads"],
                    c["queued_s"].as_f64().unwrap_or(f64::NAN),
                    c["settled_s"].as_f64().unwrap_or(f64::NAN),
                );
            }
        }
        md.push('\n');
    }
    let _ = writeln!(md, "## Targets (issue 33, item 3)\n");
    for shape in opts.shapes.iter().filter(|s| s.as_str() != "hold") {
        for imp in &opts.impls {
            let figs: Vec<(usize, f64)> =
                opts.ns.iter().filter_map(|&n| find(imp, shape, n).and_then(later_kb).map(|k| (n, k))).collect();
            if figs.len() < 2 {
                continue;
            }
            let (lo, hi) = figs.iter().fold((f64::MAX, f64::MIN), |(a, b), (_, k)| (a.min(*k), b.max(*k)));
            // "The same at every N": within 20 % of the smallest (the
            // resident figure moves by a few percent between runs).
            let flat = hi <= lo * 1.2;
            let threads: Vec<u64> = opts
                .ns
                .iter()
                .filter_map(|&n| find(imp, shape, n).and_then(|c| c["later"]["threads"].as_u64()))
                .collect();
            let flat_threads = threads.iter().max() == threads.iter().min();
            let _ = writeln!(
                md,
                "- {imp}, {shape}: KB per waiter {} ({}); threads {:?} ({})",
                figs.iter().map(|(n, k)| format!("{k:.1} at {n}")).collect::<Vec<_>>().join(", "),
                match (flat, figs.len() < opts.ns.len()) {
                    (true, false) => "flat: met",
                    (true, true) => "flat where measured",
                    (false, _) if figs[figs.len() - 1].1 > figs[0].1 => "grows with N: missed",
                    (false, _) => "falls with N: not flat",
                },
                threads,
                if flat_threads { "flat: met" } else { "one per waiter: missed" },
            );
        }
        let rust: Vec<String> = opts
            .ns
            .iter()
            .filter_map(|&n| {
                let r = find("zklock-rust", shape, n).and_then(later_kb)?;
                let c = find("curator", shape, n).and_then(later_kb)?;
                Some(format!("{:.2} at {n} ({})", r / c, if r <= 0.25 * c { "met" } else { "missed" }))
            })
            .collect();
        if !rust.is_empty() {
            let _ = writeln!(md, "- Rust core <= 0.25 x Curator per waiter, {shape}: {}", rust.join(", "));
        }
    }
    if !failures.is_empty() {
        let _ = writeln!(md, "\n## Failed cases\n");
        for f in failures {
            let _ = writeln!(md, "- {f}");
        }
    }
    md
}

/// Runs `zklock-bench memory ARGS` (see the module documentation).
pub(crate) fn run(args: &[String]) -> R<()> {
    let opts = parse(args)?;
    std::fs::create_dir_all(opts.out.join("logs")).map_err(err)?;
    let machine = machine();
    let started = Instant::now();
    zklock_harness::ensure_zookeeper().map_err(err)?;
    // The harness's server has 256 MB of heap and C1 only: 10,000 waiters'
    // lists (50 million names on the wire) ran it out of memory. The last
    // -Xmx and TieredStopAtLevel win.
    let options = ClusterOptions::new().tick_time_ms(2000).jvm_arg("-Xmx2g").jvm_arg("-XX:TieredStopAtLevel=4");
    let cluster = Cluster::start(options).map_err(|e| format!("ZooKeeper: {e}"))?;
    let hosts = cluster.connect_string();
    let addr = cluster.client_addr(0);
    let obs = raw::connect(&hosts, Duration::from_secs(30), true)?;
    let mut cases = Vec::new();
    let mut failures = Vec::new();
    for name in &opts.impls {
        let imp = imp(name)?;
        for shape in &opts.shapes {
            for &n in &opts.ns {
                if opts.skip.contains(&format!("{name}/{shape}/{n}")) {
                    continue;
                }
                let log = opts.out.join("logs").join(format!("{name}-{shape}-{n}.log"));
                let t = Instant::now();
                let nodes = mntr(addr, "zk_znode_count")?;
                let out = case(&imp, shape, n, opts.settle, opts.limit, &hosts, addr, &obs, &log);
                // The next case counts nodes: wait until this one's are gone
                // (the driver closed its session, or it expired), made paths
                // aside.
                let made = if shape == "one" { 0 } else { n as u64 } + 4;
                let t1 = Instant::now();
                while mntr(addr, "zk_znode_count")? > nodes + made && t1.elapsed() < Duration::from_secs(60) {
                    std::thread::sleep(Duration::from_millis(200));
                }
                match out {
                    Ok(c) => {
                        eprintln!(
                            "zklock-bench memory: {name} {shape} N={n}: {} KB per item at later, threads {} in {:.0} s",
                            fmt(later_kb(&c)),
                            c["later"]["threads"],
                            t.elapsed().as_secs_f64()
                        );
                        cases.push(c);
                    },
                    Err(e) => {
                        eprintln!("zklock-bench memory: {name} {shape} N={n} failed: {e}");
                        failures.push(format!("{name} {shape} N={n}: {e} (log {})", log.display()));
                    },
                }
                // So far, in case the run is cut short.
                let so_far = json!({ "machine": machine, "cases": cases, "failures": failures, "partial": true });
                std::fs::write(opts.out.join("results.json"), so_far.to_string()).map_err(err)?;
            }
        }
    }
    drop(obs);
    drop(cluster);
    let md = markdown(&cases, &failures, &machine, &opts, started.elapsed().as_secs_f64());
    let results = json!({ "machine": machine, "cases": cases, "failures": failures,
        "settle_s": opts.settle.as_secs() });
    write_results(&opts.out, &md, &results)
}

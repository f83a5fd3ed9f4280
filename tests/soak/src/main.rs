//! `zklock-soak`: mutual exclusion and lost-lock safety of zklock under
//! server and network failures, measured (issue 7).
//!
//! ```text
//! zklock-soak [--duration 10m] [--processes 3] [--per-process 2]
//!             [--session-timeout 2s] [--seed N] [--progress-bound 60s]
//!             [--min-handoffs N] [--min-faults N] [--json FILE]
//!             [--faults KIND,KIND...] [--self-test-ignore-check]
//! ```
//!
//! It starts a 3-node ZooKeeper ensemble on loopback (through the test
//! harness), a fenced "resource", one proxy group per contender, and
//! `--processes` contender processes (this same program, `worker`
//! subcommand) with `--per-process` contenders each, every contender in a
//! session of its own. Each contender takes one lock in a loop; while it
//! holds it, it writes its fencing token to the resource and calls
//! `check()`. Meanwhile three fault threads run the chaos schedule (see
//! `chaos.rs`) until the duration is over. Then every fault is undone, the
//! contenders stop and close their sessions, and the recorded run is checked
//! against the five properties (see `analysis.rs`):
//!
//! 1. no two holders' safely-held intervals overlap;
//! 2. no stale token is accepted by the resource (and grants' tokens grow);
//! 3. every loss reaches its holder before another client is granted;
//! 4. no lock node remains once every session is closed;
//! 5. the lock is granted again after every fault (time reported).
//!
//! It prints a summary and exits 0 only if no property is violated, the
//! chaos schedule ran without errors, and the `--min-*` thresholds are met.
//! Times are `CLOCK_MONOTONIC`, shared by every process of the machine.
//!
//! `--self-test-ignore-check` breaks the contenders on purpose (they act as
//! if every `check()` succeeded): the run must then report violations,
//! which shows that the checker can fail.

mod analysis;
mod chaos;
mod clock;
mod resource;
mod worker;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use zklock_core::{Client, ClientOptions};
use zklock_harness::{Cluster, ClusterOptions, ProxyGroup};

use crate::analysis::{FaultKind, Record, Report};
use crate::clock::mono_ns;

const LOCK_PATH: &str = "/soak/lock";

const USAGE: &str = "usage: zklock-soak [--duration 10m] [--processes 3] [--per-process 2] [--session-timeout 2s]
                   [--seed N] [--progress-bound 60s] [--min-handoffs N] [--min-faults N] [--json FILE]
                   [--faults KIND,KIND...] [--self-test-ignore-check]
fault kinds (default: all): kill-leader, kill-follower, freeze-member, restart-ensemble,
                            blackhole-holder, pause-holder, drop-create-reply";

/// The orchestrator's settings.
#[derive(Clone, Debug)]
struct Settings {
    duration: Duration,
    processes: usize,
    per_process: usize,
    session_timeout: Duration,
    seed: u64,
    progress_bound: Duration,
    min_handoffs: usize,
    min_faults: usize,
    json: Option<String>,
    ignore_check: bool,
    kinds: Vec<FaultKind>,
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
        per_process: 2,
        session_timeout: Duration::from_secs(2),
        seed: mono_ns(),
        progress_bound: Duration::from_secs(60),
        min_handoffs: 0,
        min_faults: 0,
        json: None,
        ignore_check: false,
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
            "--session-timeout" => s.session_timeout = parse_duration(&value()?)?,
            "--seed" => s.seed = value()?.parse().map_err(|_| "--seed: not a number".to_owned())?,
            "--progress-bound" => s.progress_bound = parse_duration(&value()?)?,
            "--min-handoffs" => s.min_handoffs = number(value()?)?,
            "--min-faults" => s.min_faults = number(value()?)?,
            "--json" => s.json = Some(value()?),
            "--self-test-ignore-check" => s.ignore_check = true,
            "--faults" => {
                let v = value()?;
                s.kinds = v
                    .split(',')
                    .map(|name| {
                        FaultKind::ALL.into_iter().find(|k| k.name() == name).ok_or(format!("unknown fault kind {name:?}"))
                    })
                    .collect::<Result<_, _>>()?;
            },
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    if s.processes == 0 || s.per_process == 0 {
        return Err("--processes and --per-process must be at least 1".into());
    }
    Ok(s)
}

fn parse_worker(args: &[String]) -> Result<worker::WorkerConfig, String> {
    let mut cfg = worker::WorkerConfig {
        resource: String::new(),
        lock_path: LOCK_PATH.into(),
        session_timeout: Duration::from_secs(2),
        contenders: Vec::new(),
        seed: 1,
        ignore_check: false,
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
            "--contender" => {
                let (cid, hosts) = value.split_once('@').ok_or("--contender takes ID@HOSTS")?;
                cfg.contenders.push((cid.parse().map_err(|_| "--contender: bad id")?, hosts.to_owned()));
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
    let cluster = Cluster::start(ClusterOptions::new().size(3).start_timeout(Duration::from_secs(90)))?;
    cluster.wait_quorum(Duration::from_secs(90))?;
    let resource = resource::Resource::start()?;
    let contenders = s.processes * s.per_process;
    let groups = (0..contenders).map(|_| ProxyGroup::for_cluster(&cluster)).collect::<Result<Vec<_>, _>>()?;
    let logs = cluster.dir().join("contenders");
    std::fs::create_dir_all(&logs)?;
    let me = std::env::current_exe()?;
    let mut process_of = BTreeMap::new();
    let mut workers = Workers { children: Vec::new() };
    for p in 0..s.processes {
        let mut cmd = Command::new(&me);
        cmd.arg("worker")
            .args(["--resource", &resource.addr().to_string()])
            .args(["--session-ms", &s.session_timeout.as_millis().to_string()])
            .args(["--seed", &(s.seed ^ p as u64).to_string()])
            .args(["--ignore-check", if s.ignore_check { "1" } else { "0" }]);
        for k in 0..s.per_process {
            let cid = p * s.per_process + k;
            cmd.arg("--contender").arg(format!("{cid}@{}", groups[cid].connect_string()));
            process_of.insert(cid as u32, p);
        }
        let log = std::fs::File::create(logs.join(format!("process-{p}.log")))?;
        cmd.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(log);
        workers.children.push(cmd.spawn()?);
    }
    println!(
        "soak: 3-node ensemble, {contenders} contenders in {} processes, session timeout {:?}, {:?} of chaos, seed {}",
        s.processes, s.session_timeout, s.duration, s.seed
    );
    if resource.wait_grant_after(0, Duration::from_secs(60)).is_none() {
        return Err("no contender got the lock within 60 s of starting".into());
    }
    let chaos = chaos::Chaos {
        cluster: &cluster,
        groups: &groups,
        resource: &resource,
        worker_pids: workers.children.iter().map(Child::id).collect(),
        process_of: process_of.clone(),
        hold: s.session_timeout + Duration::from_millis(500),
        until: Instant::now() + s.duration,
        faults: Mutex::default(),
        errors: Mutex::default(),
    };
    chaos.run(&s.kinds, s.seed);
    // Progress after the last fault, then a quiet stop.
    resource.wait_grant_after(mono_ns(), s.progress_bound);
    std::thread::sleep(Duration::from_millis(500));
    let stuck = workers.stop(Duration::from_secs(30));
    let leftover_nodes = leftovers(&cluster.connect_string(), s.session_timeout * 2 + Duration::from_secs(5))?;
    let (intervals, writes) = resource.snapshot();
    let faults = chaos.faults.into_inner().unwrap_or_default();
    let errors = chaos.errors.into_inner().unwrap_or_default();
    let record = Record { intervals, writes, faults, leftover_nodes, process_of };
    let report = analysis::analyse(&record, s.progress_bound.as_nanos() as u64);
    let ok = summarise(s, &record, &report, &errors, stuck, started.elapsed())?;
    if !ok {
        eprintln!("soak: contender logs and server logs: {} (kept with ZKLOCK_HARNESS_KEEP=1)", cluster.dir().display());
    }
    Ok(ok)
}

/// Lock nodes left under the lock path once every contender closed its
/// session, after waiting up to `limit` for them to go.
fn leftovers(hosts: &str, limit: Duration) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let client = Client::connect(ClientOptions::new(hosts).connect_timeout(Duration::from_secs(30)))?;
    let mut left = Vec::new();
    let gone = zklock_harness::wait_for(limit, || match client.participants(LOCK_PATH) {
        Ok(p) => {
            left = p.into_iter().map(|p| format!("{} (session {:#x})", p.name, p.session_id)).collect();
            left.is_empty()
        },
        Err(_) => false,
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
    let mut out = String::new();
    writeln!(out, "\nsoak summary ({:.0} s in all)", elapsed.as_secs_f64())?;
    writeln!(out, "  handoffs (grants): {handoffs}; writes accepted: {accepted}; stale writes rejected: {}", report.stale_rejected)?;
    writeln!(
        out,
        "  losses: {} (of which {} while the holder's process was stopped)",
        report.losses, report.paused_losses
    )?;
    writeln!(out, "  faults injected: how long each lasted, and the time from its end to the next grant (ms):")?;
    writeln!(
        out,
        "    {:<18} {:>6} {:>10} {:>10} {:>10} {:>10}",
        "kind", "count", "lasted", "median", "p99", "max"
    )?;
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
    let longest = report.recoveries.iter().filter_map(|r| r.next_grant_after.map(|n| (n, r.kind))).max();
    if let Some((ns, kind)) = longest {
        writeln!(out, "  longest recovery: {} ms after {}", millis(Some(ns)), kind.name())?;
    }
    let t0 = record.writes.first().map_or(0, |w| w.arrival);
    for g in &report.gaps {
        let kinds: Vec<&str> = g.faults.iter().map(|k| k.name()).collect();
        writeln!(
            out,
            "  no grant for {:.1} s from t={:.1} s (faults in effect: {})",
            (g.to - g.from) as f64 / 1e9,
            g.from.saturating_sub(t0) as f64 / 1e9,
            if kinds.is_empty() { "none".to_owned() } else { kinds.join(", ") }
        )?;
    }
    let names = [
        "1 overlapping safely-held intervals",
        "2 stale tokens accepted / tokens not growing",
        "3 losses not reported before the next grant",
        "4 lock nodes left after every session closed",
        "5 faults without a grant afterwards",
    ];
    writeln!(out, "  violations:")?;
    for (p, name) in (1u8..).zip(names) {
        writeln!(out, "    property {name}: {}", report.count(p))?;
    }
    for v in report.violations.iter().take(20) {
        writeln!(out, "    ! property {}: {}", v.property, v.detail)?;
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

/// The run's results as JSON (hand-written: no serde dependency).
fn json(s: &Settings, record: &Record, report: &Report, handoffs: usize, errors: &[String], ok: bool) -> String {
    let faults: Vec<String> = FaultKind::ALL
        .iter()
        .map(|k| format!("\"{}\":{}", k.name(), record.faults.iter().filter(|f| f.kind == *k).count()))
        .collect();
    let violations: Vec<String> = (1..=5u8).map(|p| format!("\"{p}\":{}", report.count(p))).collect();
    let recoveries: Vec<String> = report
        .recoveries
        .iter()
        .map(|r| format!("{{\"kind\":\"{}\",\"ms\":{}}}", r.kind.name(), r.next_grant_after.map_or("null".into(), |n| format!("{:.1}", n as f64 / 1e6))))
        .collect();
    format!(
        "{{\"passed\":{ok},\"duration_s\":{},\"processes\":{},\"per_process\":{},\"session_timeout_ms\":{},\"seed\":{},\
         \"handoffs\":{handoffs},\"stale_writes_rejected\":{},\"losses\":{},\"faults\":{{{}}},\"violations\":{{{}}},\
         \"chaos_errors\":{},\"recoveries\":[{}]}}\n",
        s.duration.as_secs(),
        s.processes,
        s.per_process,
        s.session_timeout.as_millis(),
        s.seed,
        report.stale_rejected,
        report.losses,
        faults.join(","),
        violations.join(","),
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
        assert!(parse_settings(&["--processes".into(), "0".into()]).is_err());
        assert!(parse_settings(&["--bogus".into()]).is_err());
    }
}

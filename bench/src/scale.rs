//! `zklock-bench scale` (`make bench-scale`): the ZooKeeper ensemble's
//! work per lock operation (issue 33, item 1).
//!
//! Starts a 3-node ensemble on loopback through the test harness, finds its
//! leader, and runs the uncontended cycle and 2- and 8-way contention for
//! zklock (Rust core), Curator, kazoo and the raw-client floor (uncontended
//! only), each driver talking to one member only: a follower, then the
//! leader. At the driver's `measuring` and `measured` events it reads every
//! member's CPU time (`/proc/PID/stat`, clock ticks) and reports, per cycle
//! or per contended acquisition, the sum over the members, the leader's
//! share and the share of the member the clients talk to. See
//! `bench/README.md`.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use zklock_harness::{Cluster, ClusterOptions};

use crate::{
    chosen, cpu_ticks, implementations, machine, report, rotated, run_metered, ticks_per_s, write_results, Args,
    Driver, Imp, Record, Scenario, Via, R,
};

/// The implementations a scale run measures (the floor only runs the
/// uncontended cycle: its driver has no contended scenario).
const IMPLS: [&str; 4] = ["zklock-rust", "curator", "kazoo", "floor"];

/// Members of the ensemble.
const MEMBERS: usize = 3;

/// How long the idle ensemble's own CPU use is measured before the runs.
const IDLE: Duration = Duration::from_secs(10);

/// The scenarios: the uncontended cycle, 2- and 8-way contention.
///
/// The clock ticks 100 times a second: each figure should rest on at least
/// about 100 ticks (1 s of CPU), so that one tick is at most 1 % of it. The
/// smallest reported figure is the leader's share while the clients talk to
/// a follower: on this machine (2026-11-29) at least about 0.3 ms of CPU per
/// uncontended cycle (the floor's), and per contended acquisition about
/// 0.4 ms at kazoo's 8-way rate of about 500 a second. So 8,000 measured
/// cycles (at least about 240 ticks) and 10 s contended windows (after 3 s
/// of warm-up, as in `make bench`; kazoo's 8-way leader share got 175-220
/// ticks). The report shows the fewest ticks of each run.
fn scenarios(quick: bool, reps: usize) -> Vec<Scenario> {
    let q = |full: u64, small: u64| if quick { small } else { full };
    let p = |v: &[(&str, u64)]| v.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect::<Vec<_>>();
    let mut v = vec![Scenario {
        name: "uncontended".into(),
        family: "uncontended",
        params: p(&[("iters", q(8000, 500)), ("warmup", q(2000, 100))]),
        reps,
        limit: Duration::from_secs(240),
        via: Via::Direct,
    }];
    for n in [2, 8] {
        v.push(Scenario {
            name: format!("contended-{n}"),
            family: "contended",
            params: p(&[("sessions", n), ("duration_ms", q(13_000, 2500)), ("warmup_ms", q(3000, 1000))]),
            reps,
            limit: Duration::from_secs(120),
            via: Via::Direct,
        });
    }
    v
}

/// A member the clients of a run talk to, and what it is.
#[derive(Clone, Copy)]
struct Placement {
    /// `"follower"` or `"leader"`.
    role: &'static str,
    /// Its index in the cluster.
    member: usize,
}

/// The figures of one run from the clock ticks each member used over the
/// measured part (`ticks[i]`: member i's): the sum over the members, the
/// leader's and the client's member's, in seconds (`ensemble_cpu_s`) and
/// in ticks (`ensemble_ticks`), for `report::add_result`.
fn ensemble_figures(ticks: &[u64], leader: usize, member: usize, per_s: f64) -> Option<Value> {
    let sum: u64 = ticks.iter().sum();
    let (l, c) = (*ticks.get(leader)?, *ticks.get(member)?);
    let s = |t: u64| t as f64 / per_s;
    Some(json!({
        "ensemble_cpu_s": { "sum": s(sum), "leader": s(l), "member": s(c) },
        "ensemble_ticks": { "sum": sum, "leader": l, "member": c },
        "member_ticks": ticks,
    }))
}

/// Each member's CPU use while nobody but the harness talks to the
/// ensemble, in ms per second (leader-follower pings, session upkeep).
fn idle_ms_per_s(pids: &[u32], over: Duration) -> Option<Vec<f64>> {
    let before: Vec<u64> = pids.iter().map(|p| cpu_ticks(*p)).collect::<Option<_>>()?;
    let t = Instant::now();
    std::thread::sleep(over);
    let after: Vec<u64> = pids.iter().map(|p| cpu_ticks(*p)).collect::<Option<_>>()?;
    let secs = t.elapsed().as_secs_f64();
    Some(before.iter().zip(&after).map(|(b, a)| a.saturating_sub(*b) as f64 / ticks_per_s() * 1e3 / secs).collect())
}

/// Runs `imp`'s uncontended cycle through each member before anything is
/// measured, so that the servers' code is compiled (`-XX:TieredStopAtLevel=1`)
/// before the first measured run. Not recorded.
fn warm_up(imp: &Imp, cluster: &Cluster, out: &Path, quick: bool) -> R<()> {
    let sc = Scenario {
        name: "warm-up".into(),
        family: "uncontended",
        params: vec![("iters".into(), if quick { 200 } else { 2000 }), ("warmup".into(), 0)],
        reps: 1,
        limit: Duration::from_secs(120),
        via: Via::Direct,
    };
    for i in 0..MEMBERS {
        let log = out.join("logs").join(format!("warm-up-{i}.log"));
        let path = format!("/bench/scale/warm-up/{i}");
        Driver::start(imp, &sc, &cluster.client_addr(i).to_string(), &path, &log)?.result()?;
    }
    Ok(())
}

/// `zklock-bench scale`: see the module's documentation.
pub(crate) fn run(args: &Args) -> R<()> {
    let imps: Vec<Imp> = chosen(args, implementations()).into_iter().filter(|i| IMPLS.contains(&i.name)).collect();
    if imps.is_empty() {
        return Err(format!("scale: --only names none of {}", IMPLS.join(", ")));
    }
    let mut machine = machine();
    if let Some(o) = machine.as_object_mut() {
        // The Python here is kazoo's (zklock's bindings do not run), and Node does not run.
        o.remove("node");
        let python = crate::root().join("target/interop-venv/bin/python");
        o.insert("python".into(), json!(crate::sh(&format!("{} --version", python.display()))));
    }
    let started = Instant::now();
    let mut record = Record::default();
    let mut ensembles = Vec::new();
    for &fsync in &args.modes {
        let fsync_mode = if fsync { "fsync-on" } else { "fsync-off" };
        eprintln!("zklock-bench scale: starting a {MEMBERS}-node ZooKeeper ensemble (forceSync={fsync_mode})");
        let cluster = Cluster::start(ClusterOptions::new().size(MEMBERS).tick_time_ms(2000).force_sync(fsync))
            .map_err(|e| format!("ZooKeeper: {e}"))?;
        let leader = cluster.wait_quorum(Duration::from_secs(30)).map_err(|e| format!("ZooKeeper: {e}"))?;
        let follower = (0..MEMBERS).find(|i| *i != leader).ok_or("no follower")?;
        let pids: Vec<u32> =
            (0..MEMBERS).map(|i| cluster.pid(i)).collect::<Option<_>>().ok_or("a member has no process")?;
        eprintln!("  leader: member {leader} (pid {}), clients' follower: member {follower}", pids[leader]);
        if let Some(imp) = imps.iter().find(|i| i.runs.contains(&"uncontended")) {
            eprintln!("  warming the servers up ({}, uncontended, through each member)", imp.name);
            warm_up(imp, &cluster, &args.out, args.quick)?;
        }
        let idle = idle_ms_per_s(&pids, if args.quick { Duration::from_secs(2) } else { IDLE });
        eprintln!("  idle CPU, ms/s per member: {idle:?}");
        let placements =
            [Placement { role: "follower", member: follower }, Placement { role: "leader", member: leader }];
        for sc in scenarios(args.quick, args.reps) {
            if !args.wants(&sc) {
                continue;
            }
            let runs: Vec<&Imp> = imps.iter().filter(|i| i.runs.contains(&sc.family)).collect();
            for rep in 0..sc.reps {
                // The follower first in even repetitions, the leader first in odd ones.
                let mut order = placements;
                if rep % 2 == 1 {
                    order.reverse();
                }
                for place in order {
                    let mode = format!("{fsync_mode}/{}", place.role);
                    let hosts = cluster.client_addr(place.member).to_string();
                    for imp in rotated(&runs, rep) {
                        // A new leader would mix two ensembles' figures.
                        if cluster.leader() != Some(leader) {
                            return Err(format!("the leader changed (was member {leader}): {:?}", cluster.leader()));
                        }
                        let path = format!("/bench/scale/{}/{}/{}-{rep}", place.role, sc.name, imp.name);
                        let log = args
                            .out
                            .join("logs")
                            .join(format!("scale-{fsync_mode}-{}-{}-{}-{rep}.log", place.role, sc.name, imp.name));
                        let t = Instant::now();
                        let res = run_metered(imp, &sc, &hosts, &path, &log, &pids).and_then(|(mut r, ticks)| {
                            let ticks = ticks.ok_or("no CPU times: the driver did not mark its measured part")?;
                            let figures = ensemble_figures(&ticks, leader, place.member, ticks_per_s())
                                .ok_or("a member's CPU time is missing")?;
                            if let (Some(o), Some(f)) = (r.as_object_mut(), figures.as_object()) {
                                o.extend(f.clone());
                            }
                            Ok(r)
                        });
                        record.add(&mode, &sc, imp.name, rep, t.elapsed().as_secs_f64(), res, &log);
                    }
                }
            }
        }
        let leader_after = cluster.leader();
        if leader_after != Some(leader) {
            return Err(format!("the leader changed (was member {leader}): {leader_after:?}"));
        }
        ensembles.push(json!({ "mode": fsync_mode, "members": MEMBERS, "leader": leader, "follower": follower,
            "pids": pids, "idle_cpu_ms_per_s": idle }));
    }
    let mut notes = vec![format!(
        "Generated by `zklock-bench scale`{} in {:.0} s: a {MEMBERS}-node ensemble on loopback (ZooKeeper through \
         the test harness, tickTime 2000 ms); each driver talks to one member only (a follower, then the leader). \
         {} repetition(s), the order of the implementations rotated and that of the two placements swapped \
         between repetitions. Server CPU = user + system time of each member's process over the driver's \
         measured part (/proc/PID/stat, {} ticks a second: one tick is {:.0} ms of CPU), divided by the \
         cycles (uncontended) or by the acquisitions in the window (contended): the sum over the members, the \
         leader alone, the member the clients talk to (the leader itself in the leader rows). `fewest ticks`: \
         the smallest of those three in ticks (want ≥ 100). Values are medians across repetitions, [min–max] \
         the spread. A ratio divides this implementation's figure by the peer's of the same repetition (runs \
         minutes apart, so that a pair shares the machine's load of the moment), then takes the median of \
         those per-repetition ratios, [min–max] their spread. The leader was the same member before every run \
         and after the last.",
        if args.quick { " (quick mode)" } else { "" },
        started.elapsed().as_secs_f64(),
        args.reps,
        ticks_per_s(),
        1e3 / ticks_per_s(),
    )];
    for e in &ensembles {
        notes.push(format!(
            "Ensemble ({}): leader member {}, clients' follower member {}; idle CPU per member (ms/s, {} s \
             before the runs, nothing but the ensemble's own traffic): {}.",
            e["mode"].as_str().unwrap_or("?"),
            e["leader"],
            e["follower"],
            (if args.quick { Duration::from_secs(2) } else { IDLE }).as_secs(),
            e["idle_cpu_ms_per_s"]
                .as_array()
                .map(|v| v.iter().filter_map(Value::as_f64).map(report::fmt).collect::<Vec<_>>().join(", "))
                .unwrap_or_else(|| "not read".into()),
        ));
    }
    if !record.failures.is_empty() {
        notes.push(format!("Failed runs: {}", record.failures.join("; ")));
    }
    let md = report::scale_markdown(&record.metrics, &machine, &notes);
    let results =
        json!({ "machine": machine, "ensembles": ensembles, "runs": record.runs, "failures": record.failures });
    write_results(&args.out, &md, &results)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn figures_name_the_leader_and_the_clients_member() {
        // Member 1 leads; the clients talk to member 2 (a follower).
        let f = ensemble_figures(&[30, 120, 250], 1, 2, 100.0).unwrap();
        assert_eq!(f["ensemble_ticks"], json!({ "sum": 400, "leader": 120, "member": 250 }));
        assert_eq!(f["ensemble_cpu_s"], json!({ "sum": 4.0, "leader": 1.2, "member": 2.5 }));
        // Clients on the leader: the member is the leader.
        let f = ensemble_figures(&[30, 120, 250], 1, 1, 100.0).unwrap();
        assert_eq!(f["ensemble_ticks"]["member"], json!(120));
        assert!(ensemble_figures(&[30, 120], 1, 2, 100.0).is_none(), "a member's ticks are missing");
    }
}

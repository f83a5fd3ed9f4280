//! The pure part of the runner: statistics, target evaluation, the markdown
//! report and the SVG chart. No server, no processes (unit-tested).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

/// The `q` quantile (0..=1) of `xs` (nearest rank on a sorted copy).
pub fn quantile(xs: &[f64], q: f64) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = (q * (v.len() - 1) as f64).round() as usize;
    v.get(rank.min(v.len() - 1)).copied()
}

/// Jain's fairness index of per-worker counts: 1 = perfectly even, 1/n =
/// one worker got everything.
pub fn jain(counts: &[f64]) -> Option<f64> {
    let n = counts.len() as f64;
    let sum: f64 = counts.iter().sum();
    let sq: f64 = counts.iter().map(|c| c * c).sum();
    (n > 0.0 && sq > 0.0).then(|| sum * sum / (n * sq))
}

/// One measured number of one (mode, scenario, implementation): the value of
/// each repetition.
#[derive(Clone, Debug, Default)]
pub struct Series(pub Vec<f64>);

impl Series {
    /// The median across repetitions (of an even number, the mean of the
    /// middle two: of two repetitions, their mean, not the larger).
    pub fn mid(&self) -> Option<f64> {
        let mut v = self.0.clone();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        match n {
            0 => None,
            _ if n % 2 == 1 => v.get(n / 2).copied(),
            _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
        }
    }

    /// Each repetition's value divided by `base`'s in the same repetition
    /// (None unless both have the same number of repetitions, every one of
    /// `base`'s positive). Runs of one repetition follow each other within
    /// a minute or two: the ratio of a pair shares the machine's state of
    /// the moment, which the ratio of two medians does not.
    pub fn paired_ratio(&self, base: &Series) -> Option<Series> {
        (!self.0.is_empty() && self.0.len() == base.0.len() && base.0.iter().all(|b| *b > 0.0))
            .then(|| Series(self.0.iter().zip(&base.0).map(|(a, b)| a / b).collect()))
    }
    fn spread(&self) -> String {
        let lo = self.0.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = self.0.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        match self.0.len() {
            0 => String::new(),
            1 => String::new(),
            _ => format!(" [{}–{}]", fmt(lo), fmt(hi)),
        }
    }
}

/// A number for a table: 3 significant digits, no exponent.
pub fn fmt(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let a = x.abs();
    if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// `metrics[mode][scenario][impl][metric]` = one value per repetition.
pub type Metrics = BTreeMap<String, BTreeMap<String, BTreeMap<String, BTreeMap<String, Series>>>>;

/// Extracts the metrics of one driver result (`scenario` family decides
/// which) and appends them to `m`.
pub fn add_result(m: &mut Metrics, mode: &str, scenario: &str, imp: &str, result: &Value) {
    let slot = m
        .entry(mode.to_owned())
        .or_default()
        .entry(scenario.to_owned())
        .or_default()
        .entry(imp.to_owned())
        .or_default();
    let mut put = |k: &str, v: Option<f64>| {
        if let Some(v) = v {
            slot.entry(k.to_owned()).or_default().0.push(v);
        }
    };
    let nums = |k: &str| -> Vec<f64> {
        result
            .get(k)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default()
    };
    let num = |k: &str| result.get(k).and_then(Value::as_f64);
    let lat: Option<Vec<f64>> =
        result.get("lat_us").and_then(Value::as_array).map(|l| l.iter().filter_map(Value::as_f64).collect());
    if let Some(lat) = &lat {
        put("median_us", quantile(lat, 0.5));
        put("p99_us", quantile(lat, 0.99));
    }
    // What CPU figures are per: each measured cycle (a driver that times
    // its cycles), else each grant in the window.
    let ops = match &lat {
        Some(lat) => Some(lat.len() as f64),
        None => num("grants").filter(|_| num("window_s").is_some()),
    }
    .filter(|n| *n > 0.0);
    let per_op = |cpu_s: Option<f64>| Some(cpu_s? * 1e6 / ops?);
    // The driver's process, and the server's.
    put("client_cpu_us", per_op(num("cpu_s")));
    put("server_cpu_us", per_op(num("server_cpu_s")));
    // A scale run's ensemble (`scale.rs`): the members' CPU summed, the
    // leader's, the client's member's; and the fewest clock ticks any of
    // them rests on.
    for (k, cpu_s) in result.get("ensemble_cpu_s").and_then(Value::as_object).into_iter().flatten() {
        put(&format!("ensemble_{k}_us"), per_op(cpu_s.as_f64()));
    }
    let ticks = result.get("ensemble_ticks").and_then(Value::as_object);
    put("ticks_min", ticks.and_then(|t| t.values().filter_map(Value::as_f64).reduce(f64::min)));
    if let (Some(g), Some(w)) = (num("grants"), num("window_s")) {
        if w > 0.0 {
            put("per_s", Some(g / w));
        }
        put("violations", num("violations"));
        put("fairness", jain(&nums("per_worker")));
        if let (Some(r), Some(wr)) = (num("read_grants"), num("write_grants")) {
            put("reads_per_s", Some(r / w));
            put("writes_per_s", Some(wr / w));
        }
    }
    if let Some(wire) = result.get("wire") {
        let cycles = wire.get("cycles").and_then(Value::as_f64).filter(|c| *c > 0.0);
        let per = |x: f64| cycles.map(|c| x / c);
        let ops: BTreeMap<String, f64> = wire
            .get("requests")
            .and_then(Value::as_object)
            .map(|o| o.iter().filter_map(|(k, v)| Some((k.clone(), v.as_f64()?))).collect())
            .unwrap_or_default();
        // The session's own upkeep is not the recipe's: keep-alive pings,
        // the session's opening and closing, its login and watch restore.
        let recipe = ops.iter().filter(|(op, _)| !SESSION_OPS.contains(&op.as_str()));
        put("requests_per_cycle", per(recipe.clone().map(|(_, n)| n).sum()));
        put("sync_per_cycle", per(ops.get("sync").copied().unwrap_or(0.0)));
        put("notif_per_cycle", wire.get("notifications").and_then(Value::as_f64).and_then(per));
        for (op, n) in recipe {
            put(&format!("op:{op}"), per(*n));
        }
    }
    put("threads_max", num("threads_max"));
    put("rss_per_waiter", num("rss_per_waiter_bytes"));
    if let Some(rounds) = result.get("notifications").and_then(Value::as_array) {
        // Notifications counted on the wire by the proxy ("sent"); the
        // watch table before the release ("total") where that is missing.
        let all: Vec<f64> =
            rounds.iter().filter_map(|r| r.get("sent").or_else(|| r.get("total")).and_then(Value::as_f64)).collect();
        let waiters: Vec<f64> = rounds.iter().filter_map(|r| r.get("to_waiters").and_then(Value::as_f64)).collect();
        let max = |v: &[f64]| v.iter().copied().fold(f64::NAN, f64::max);
        put("notif_max", (!all.is_empty()).then(|| max(&all)));
        put("notif_mean", (!all.is_empty()).then(|| all.iter().sum::<f64>() / all.len() as f64));
        put("notif_waiters_max", (!waiters.is_empty()).then(|| max(&waiters)));
    }
}

/// Requests on the wire that keep a session, not a lock: left out of the
/// requests per cycle (pings are shown in the per-op breakdown neither).
const SESSION_OPS: [&str; 7] = ["ping", "createSession", "closeSession", "auth", "sasl", "setWatches", "setWatches2"];

/// The value of one metric (median across repetitions).
pub fn get(m: &Metrics, mode: &str, scenario: &str, imp: &str, metric: &str) -> Option<f64> {
    m.get(mode)?.get(scenario)?.get(imp)?.get(metric)?.mid()
}

/// One target of issue 8 and how it came out.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// What the target says.
    pub target: String,
    /// The measured ratio or count.
    pub measured: Option<f64>,
    /// The limit it is compared with.
    pub limit: f64,
    /// Whether `measured` must be at most (true) or at least (false) `limit`.
    pub at_most: bool,
}

impl Verdict {
    /// Met, missed, or not measured (None).
    pub fn met(&self) -> Option<bool> {
        let x = self.measured?;
        Some(if self.at_most { x <= self.limit + 1e-9 } else { x >= self.limit - 1e-9 })
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// The targets of issue 8 for one mode ("fsync-off" / "fsync-on"), from the
/// metrics of that mode only (ratios measured in the same run).
pub fn verdicts(m: &Metrics, mode: &str) -> Vec<Verdict> {
    let g = |s: &str, i: &str, k: &str| get(m, mode, s, i, k);
    let med = |i: &str| g("uncontended", i, "median_us");
    let rust = med("zklock-rust");
    let mut v = vec![
        Verdict {
            target: "uncontended median ≤ 0.75 × Curator".into(),
            measured: ratio(rust, med("curator")),
            limit: 0.75,
            at_most: true,
        },
        Verdict {
            target: "uncontended median ≤ 0.4 × kazoo".into(),
            measured: ratio(rust, med("kazoo")),
            limit: 0.4,
            at_most: true,
        },
        Verdict {
            target: "uncontended median ≤ 1.1 × raw floor".into(),
            measured: ratio(rust, med("floor")),
            limit: 1.1,
            at_most: true,
        },
        Verdict {
            target: "32-way contended throughput ≥ 1.3 × Curator".into(),
            measured: ratio(g("contended-32", "zklock-rust", "per_s"), g("contended-32", "curator", "per_s")),
            limit: 1.3,
            at_most: false,
        },
    ];
    for herd in ["herd-32", "herd-1000"] {
        if m.get(mode).is_some_and(|s| s.contains_key(herd)) {
            v.push(Verdict {
                target: format!("{herd}: watch notifications per release = 1 (max over releases)"),
                measured: g(herd, "zklock-rust", "notif_max"),
                limit: 1.0,
                at_most: true,
            });
        }
    }
    let long = m.get(mode).and_then(|s| s.keys().find(|k| k.starts_with("queue-") && *k != "queue-32").cloned());
    if let Some(long) = long {
        v.push(Verdict {
            target: format!("handoff rate {long} ≥ 0.7 × queue-32"),
            measured: ratio(g(&long, "zklock-rust", "per_s"), g("queue-32", "zklock-rust", "per_s")),
            limit: 0.7,
            at_most: false,
        });
    }
    for b in ["zklock-python", "zklock-node"] {
        v.push(Verdict {
            target: format!("{b} uncontended median ≤ 1.15 × Rust core"),
            measured: ratio(med(b), rust),
            limit: 1.15,
            at_most: true,
        });
    }
    v.retain(|x| x.measured.is_some() || m.get(mode).is_some_and(|s| s.contains_key("uncontended")));
    v.extend(verdicts_19(m, mode));
    v
}

/// Round trips the least uncontended cycle needs: the create with the
/// queue's list pipelined behind it (one round trip: the list, answered
/// after the create, shows whether we are first), then the delete.
pub const CYCLE_ROUND_TRIPS: f64 = 2.0;

/// Round trips of the raw floor's cycle: create, list, delete, each awaited.
pub const FLOOR_ROUND_TRIPS: f64 = 3.0;

/// The targets of issue 19 (round trips, requests and notifications on
/// the wire, bindings) measured in `mode`; those whose scenarios did not
/// run are left out.
fn verdicts_19(m: &Metrics, mode: &str) -> Vec<Verdict> {
    let g = |s: &str, i: &str, k: &str| get(m, mode, s, i, k);
    let ran = |s: &str| m.get(mode).is_some_and(|x| x.contains_key(s));
    let at_most = |target: String, measured, limit| Verdict { target, measured, limit, at_most: true };
    let at_least = |target: String, measured, limit| Verdict { target, measured, limit, at_most: false };
    let mut v = Vec::new();
    if ran("rtt-2ms") {
        let rust = g("rtt-2ms", "zklock-rust", "median_us");
        v.push(at_most(
            "(19) rtt-2ms: uncontended median ≤ 0.7 × Curator".into(),
            ratio(rust, g("rtt-2ms", "curator", "median_us")),
            0.7,
        ));
        v.push(at_most(
            "(19) rtt-2ms: uncontended median ≤ 0.5 × kazoo".into(),
            ratio(rust, g("rtt-2ms", "kazoo", "median_us")),
            0.5,
        ));
        // A round trip as it costs here: the raw floor's cycle is three
        // awaited ones (2 ms added, plus the server, the proxy's threads
        // and the client library on 2 cores).
        let round_trip = g("rtt-2ms", "floor", "median_us").map(|f| f / FLOOR_ROUND_TRIPS);
        v.push(at_most(
            format!(
                "(19) rtt-2ms: uncontended median ≤ 1.05 × {CYCLE_ROUND_TRIPS} round trips (floor median / 3 each)"
            ),
            ratio(rust, round_trip.map(|t| t * CYCLE_ROUND_TRIPS)),
            1.05,
        ));
    }
    if ran("uncontended") {
        let med = |i: &str| g("uncontended", i, "median_us");
        v.push(at_most(
            "(19) uncontended median ≤ 0.8 × Curator".into(),
            ratio(med("zklock-rust"), med("curator")),
            0.8,
        ));
        let cpu = |i: &str| g("uncontended", i, "client_cpu_us");
        v.push(at_most(
            "(19) uncontended client CPU per cycle ≤ 0.5 × Curator's".into(),
            ratio(cpu("zklock-rust"), cpu("curator")),
            0.5,
        ));
        for b in ["zklock-python", "zklock-node"] {
            v.push(at_most(
                format!("(19) {b} uncontended median ≤ 1.1 × Rust core"),
                ratio(med(b), med("zklock-rust")),
                1.1,
            ));
        }
    }
    if ran("independent-32") {
        let r = ratio(g("independent-32", "zklock-rust", "per_s"), g("independent-32", "curator", "per_s"));
        v.push(at_least("(19) independent-32 cycle rate ≥ 1.2 × Curator".into(), r, 1.2));
    }
    if let (true, Some(long)) =
        (ran("drain-32"), m.get(mode).and_then(|s| s.keys().find(|k| k.starts_with("drain-") && *k != "drain-32")))
    {
        let rate = |s: &str, i: &str| g(s, i, "per_s");
        v.push(at_least(
            format!("(19) {long}: handoff rate ≥ 0.9 × drain-32"),
            ratio(rate(long, "zklock-rust"), rate("drain-32", "zklock-rust")),
            0.9,
        ));
    }
    let queue_long = m.get(mode).and_then(|s| s.keys().find(|k| k.starts_with("queue-") && *k != "queue-32").cloned());
    if let Some(q) = queue_long {
        v.push(at_least(
            format!("(19) {q}: re-queue handoff rate ≥ 1.3 × Curator"),
            ratio(g(&q, "zklock-rust", "per_s"), g(&q, "curator", "per_s")),
            1.3,
        ));
    }
    let wire: Vec<String> =
        m.get(mode).map(|x| x.keys().filter(|k| k.starts_with("wire")).cloned().collect()).unwrap_or_default();
    for s in wire {
        let req = |i: &str| g(&s, i, "requests_per_cycle");
        v.push(at_most(
            format!("(19) {s}: requests per cycle ≤ Curator's"),
            ratio(req("zklock-rust"), req("curator")),
            1.0,
        ));
        // Holding alone: no waiter, so a notification can only be the
        // releasing client's own. Contended or draining: one to the next
        // holder.
        let (what, limit) =
            if s.starts_with("wire-hold") { ("= 0 (no one waits)", 0.0) } else { ("≤ 1 (the next holder's)", 1.0) };
        v.push(at_most(
            format!("(19) {s}: notifications per cycle {what}"),
            g(&s, "zklock-rust", "notif_per_cycle"),
            limit,
        ));
    }
    v
}

/// The metrics shown for a scenario family, with their table headings.
fn columns(scenario: &str) -> &'static [(&'static str, &'static str)] {
    if scenario.starts_with("wire") {
        &[
            ("requests_per_cycle", "requests/cycle"),
            ("sync_per_cycle", "of them sync"),
            ("notif_per_cycle", "notifications/cycle"),
        ]
    } else if scenario.starts_with("list") {
        &[
            ("median_us", "getChildren median µs"),
            ("p99_us", "p99 µs"),
            ("client_cpu_us", "client CPU µs/list"),
            ("server_cpu_us", "server CPU µs/list"),
        ]
    } else if scenario == "uncontended" || scenario.starts_with("rtt") {
        &[
            ("median_us", "median µs"),
            ("p99_us", "p99 µs"),
            ("client_cpu_us", "client CPU µs/cycle"),
            ("server_cpu_us", "server CPU µs/cycle"),
        ]
    } else if scenario.starts_with("herd") {
        &[
            ("notif_max", "notifications/release (max)"),
            ("notif_mean", "mean"),
            ("notif_waiters_max", "to waiters (max)"),
        ]
    } else if scenario == "rw" {
        &[("reads_per_s", "reads/s"), ("writes_per_s", "writes/s"), ("violations", "violations")]
    } else if scenario.starts_with("waiters") {
        &[("threads_max", "threads (max)"), ("rss_per_waiter", "bytes per waiter"), ("per_s", "drain grants/s")]
    } else if scenario.starts_with("drain") {
        &[("per_s", "handoffs/s"), ("violations", "violations")]
    } else if scenario.starts_with("contended") {
        &[
            ("per_s", "acquisitions/s"),
            ("fairness", "fairness (Jain)"),
            ("violations", "violations"),
            ("client_cpu_us", "client CPU µs/handoff"),
            ("server_cpu_us", "server CPU µs/handoff"),
        ]
    } else {
        &[("per_s", "cycles/s"), ("violations", "violations")]
    }
}

/// Which metric the ratio columns compare (None: no ratios).
fn ratio_metric(scenario: &str) -> Option<&'static str> {
    if scenario.starts_with("wire") {
        Some("requests_per_cycle")
    } else if scenario == "uncontended" || scenario.starts_with("rtt") {
        Some("median_us")
    } else if scenario.starts_with("herd") || scenario.starts_with("waiters") {
        None
    } else if scenario == "rw" {
        Some("writes_per_s")
    } else {
        Some("per_s")
    }
}

/// The markdown report: machine, one table per mode and scenario, targets.
/// The `## Machine` section of a report (one line per field of `machine`),
/// then each note as a paragraph.
pub fn machine_and_notes(machine: &Value, notes: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## Machine\n");
    for (k, v) in machine.as_object().into_iter().flatten() {
        let v = v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string());
        let _ = writeln!(s, "- **{k}**: {v}");
    }
    let _ = writeln!(s);
    for n in notes {
        let _ = writeln!(s, "{n}\n");
    }
    s
}

pub fn markdown(m: &Metrics, machine: &Value, notes: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# zklock benchmark results\n");
    s.push_str(&machine_and_notes(machine, notes));
    for (mode, scenarios) in m {
        let _ = writeln!(s, "## Targets ({mode})\n");
        let _ = writeln!(s, "| target | measured | limit | |\n|---|---|---|---|");
        for v in verdicts(m, mode) {
            let mark = match v.met() {
                Some(true) => "met",
                Some(false) => "**missed**",
                None => "not measured",
            };
            let limit = format!("{} {}", if v.at_most { "≤" } else { "≥" }, fmt(v.limit));
            let _ = writeln!(
                s,
                "| {} | {} | {limit} | {mark} |",
                v.target,
                v.measured.map(fmt).unwrap_or_else(|| "–".into())
            );
        }
        let _ = writeln!(s);
        for (scenario, imps) in scenarios {
            let _ = writeln!(s, "### {scenario} ({mode})\n");
            let cols = columns(scenario);
            let rm = ratio_metric(scenario);
            let _ = write!(s, "| implementation |");
            for (_, h) in cols {
                let _ = write!(s, " {h} |");
            }
            if rm.is_some() {
                let _ = write!(s, " × Curator | × kazoo | × floor |");
            }
            let by_op = scenario.starts_with("wire");
            if by_op {
                let _ = write!(s, " per cycle, by op |");
            }
            let _ = writeln!(s);
            let n = cols.len() + 1 + if rm.is_some() { 3 } else { 0 } + usize::from(by_op);
            let _ = writeln!(s, "|{}", "---|".repeat(n));
            for (imp, metrics) in imps {
                let _ = write!(s, "| {imp} |");
                for (k, _) in cols {
                    let cell =
                        metrics.get(*k).map(|x| format!("{}{}", x.mid().map(fmt).unwrap_or_default(), x.spread()));
                    let _ = write!(s, " {} |", cell.unwrap_or_else(|| "–".into()));
                }
                if let Some(k) = rm {
                    for base in ["curator", "kazoo", "floor"] {
                        let r = ratio(get(m, mode, scenario, imp, k), get(m, mode, scenario, base, k));
                        let _ = write!(s, " {} |", r.map(fmt).unwrap_or_else(|| "–".into()));
                    }
                }
                if by_op {
                    let ops: Vec<String> = metrics
                        .iter()
                        .filter_map(|(k, x)| Some(format!("{} {}", k.strip_prefix("op:")?, fmt(x.mid()?))))
                        .collect();
                    let _ = write!(s, " {} |", ops.join(", "));
                }
                let _ = writeln!(s);
            }
            let _ = writeln!(s);
        }
    }
    s
}

/// How a scale run's `mode` reads, `"fsync-off/follower"`: (forceSync
/// mode, the member the clients talk to).
fn scale_mode(mode: &str) -> (&str, &str) {
    mode.split_once('/').unwrap_or((mode, "?"))
}

/// The per-operation word of a scale scenario.
fn scale_op(scenario: &str) -> &'static str {
    if scenario.starts_with("contended") {
        "acquisition"
    } else {
        "cycle"
    }
}

/// The markdown report of `zklock-bench scale`: machine, notes, a summary
/// of zklock's figures against Curator's and kazoo's, then one table per
/// scenario and placement of the clients (`m`'s modes are
/// `"<fsync mode>/<follower|leader>"`, see `scale.rs`).
pub fn scale_markdown(m: &Metrics, machine: &Value, notes: &[String]) -> String {
    const ZK: &str = "zklock-rust";
    let mut s = String::new();
    let _ = writeln!(s, "# zklock scale benchmark: the ensemble's work per lock operation\n");
    s.push_str(&machine_and_notes(machine, notes));
    // A ratio: the median of the per-repetition ratios, [min–max] their spread.
    let paired = |mode: &str, scenario: &str, imp: &str, k: &str, base: &str| {
        let series = |i: &str| m.get(mode)?.get(scenario)?.get(i)?.get(k);
        series(imp)?.paired_ratio(series(base)?)
    };
    let cell = |x: Option<Series>| {
        x.and_then(|x| Some(format!("{}{}", fmt(x.mid()?), x.spread()))).unwrap_or_else(|| "–".into())
    };
    let figures =
        [("ensemble_sum_us", "sum"), ("ensemble_leader_us", "leader"), ("ensemble_member_us", "client's member")];
    let _ = writeln!(s, "## Summary: {ZK}'s server CPU per operation ÷ the peer's, same run\n");
    let _ = writeln!(
        s,
        "| scenario | clients on | sum × Curator | leader × Curator | client's member × Curator | sum × kazoo | sum × floor |"
    );
    let _ = writeln!(s, "|{}", "---|".repeat(7));
    let mut rows: Vec<(&String, &String)> =
        m.iter().flat_map(|(mode, scs)| scs.keys().map(move |sc| (sc, mode))).collect();
    // The uncontended cycle first, then the contended scenarios by size.
    rows.sort_by_key(|(sc, mode)| (*sc != "uncontended", sc.len(), *sc, *mode));
    for &(scenario, mode) in &rows {
        let (fsync, on) = scale_mode(mode);
        let x = |k: &str, base: &str| paired(mode, scenario, ZK, k, base);
        let _ = write!(s, "| {scenario} ({fsync}) | {on} |");
        for (k, _) in figures {
            let _ = write!(s, " {} |", cell(x(k, "curator")));
        }
        let _ = writeln!(s, " {} | {} |", cell(x("ensemble_sum_us", "kazoo")), cell(x("ensemble_sum_us", "floor")));
    }
    let _ = writeln!(s);
    for (scenario, mode) in rows {
        let (fsync, on) = scale_mode(mode);
        let Some(imps) = m.get(mode).and_then(|s| s.get(scenario)) else { continue };
        let op = scale_op(scenario);
        let _ = writeln!(s, "### {scenario}: clients on the {on} ({fsync})\n");
        let rate: &[(&str, &str)] = if op == "cycle" {
            &[("median_us", "cycle median µs")]
        } else {
            &[("per_s", "acquisitions/s"), ("violations", "violations")]
        };
        let mut cols: Vec<(&str, String)> = rate.iter().map(|(k, h)| (*k, (*h).to_owned())).collect();
        cols.extend(figures.iter().map(|(k, h)| (*k, format!("{h} µs/{op}"))));
        cols.push(("ticks_min", "fewest ticks".into()));
        let ratios = [
            ("ensemble_sum_us", "curator", "sum × Curator"),
            ("ensemble_sum_us", "kazoo", "sum × kazoo"),
            ("ensemble_sum_us", "floor", "sum × floor"),
            ("ensemble_leader_us", "curator", "leader × Curator"),
            ("ensemble_member_us", "curator", "member × Curator"),
        ];
        let ratios: Vec<_> = ratios.iter().filter(|(_, base, _)| imps.contains_key(*base)).collect();
        let _ = write!(s, "| implementation |");
        for (_, h) in &cols {
            let _ = write!(s, " {h} |");
        }
        for (_, _, h) in &ratios {
            let _ = write!(s, " {h} |");
        }
        let _ = writeln!(s, "\n|{}", "---|".repeat(1 + cols.len() + ratios.len()));
        for (imp, metrics) in imps {
            let _ = write!(s, "| {imp} |");
            for (k, _) in &cols {
                let c = metrics.get(*k).map(|x| format!("{}{}", x.mid().map(fmt).unwrap_or_default(), x.spread()));
                let _ = write!(s, " {} |", c.unwrap_or_else(|| "–".into()));
            }
            for (k, base, _) in &ratios {
                let _ = write!(s, " {} |", cell(paired(mode, scenario, imp, k, base)));
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(s);
    }
    s
}

const COLORS: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"];

/// An SVG of the uncontended cycle latency distributions: one panel per
/// mode, one cumulative curve per implementation, logarithmic time axis.
/// `lat[mode][impl]` holds every sample of every repetition.
pub fn svg(lat: &BTreeMap<String, BTreeMap<String, Vec<f64>>>) -> String {
    let (w, ph, pad) = (900.0, 360.0, 60.0);
    let h = ph * lat.len().max(1) as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    for (pi, (mode, imps)) in lat.iter().enumerate() {
        let top = pi as f64 * ph;
        let all: Vec<f64> = imps.values().flatten().copied().filter(|x| *x > 0.0).collect();
        let lo = quantile(&all, 0.0).unwrap_or(1.0).max(1.0).log10().floor();
        let hi = quantile(&all, 0.999).unwrap_or(10.0).max(10.0).log10().ceil().max(lo + 1.0);
        let (x0, x1, y0, y1) = (pad, w - 220.0, top + ph - 40.0, top + 30.0);
        let xs = |v: f64| x0 + (v.max(1.0).log10() - lo) / (hi - lo) * (x1 - x0);
        let ys = |q: f64| y0 - q * (y0 - y1);
        let _ = writeln!(
            s,
            r#"<text x="{x0}" y="{}" font-size="14">Uncontended acquire+release cycle, {mode}: cumulative distribution</text>"#,
            top + 18.0
        );
        let _ = writeln!(
            s,
            r##"<rect x="{x0}" y="{y1}" width="{}" height="{}" fill="none" stroke="#888"/>"##,
            x1 - x0,
            y0 - y1
        );
        let mut e = lo;
        while e <= hi {
            for m in [1.0, 2.0, 5.0] {
                let v = m * 10f64.powf(e);
                if v.log10() > hi + 1e-9 {
                    continue;
                }
                let x = xs(v);
                let _ = writeln!(s, r##"<line x1="{x:.1}" y1="{y1}" x2="{x:.1}" y2="{y0}" stroke="#eee"/>"##);
                let _ = writeln!(s, r#"<text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#, y0 + 15.0, fmt(v));
            }
            e += 1.0;
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">µs (log scale)</text>"#,
            (x0 + x1) / 2.0,
            y0 + 32.0
        );
        for q in [0.0, 0.25, 0.5, 0.75, 0.99, 1.0] {
            let y = ys(q);
            let _ = writeln!(s, r##"<line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#eee"/>"##);
            let _ = writeln!(s, r#"<text x="{}" y="{:.1}" text-anchor="end">{q}</text>"#, x0 - 5.0, y + 4.0);
        }
        for (i, (imp, xs_raw)) in imps.iter().enumerate() {
            let mut v = xs_raw.clone();
            v.sort_by(f64::total_cmp);
            if v.is_empty() {
                continue;
            }
            let step = (v.len() / 300).max(1);
            let mut pts = String::new();
            for (k, x) in v.iter().enumerate().step_by(step).chain(std::iter::once((v.len() - 1, &v[v.len() - 1]))) {
                let q = (k + 1) as f64 / v.len() as f64;
                let _ = write!(pts, "{:.1},{:.1} ", xs(*x), ys(q));
            }
            let c = COLORS[i % COLORS.len()];
            let _ = writeln!(s, r#"<polyline fill="none" stroke="{c}" stroke-width="1.8" points="{pts}"/>"#);
            let ly = y1 + 10.0 + i as f64 * 18.0;
            let _ = writeln!(
                s,
                r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{c}" stroke-width="3"/>"#,
                x1 + 15.0,
                x1 + 40.0
            );
            let med = quantile(&v, 0.5).map(fmt).unwrap_or_default();
            let _ = writeln!(s, r#"<text x="{}" y="{}">{imp} (median {med})</text>"#, x1 + 45.0, ly + 4.0);
        }
    }
    let _ = writeln!(s, "</svg>");
    s
}

/// Every verdict of every mode as JSON (for results.json).
pub fn verdicts_json(m: &Metrics) -> Value {
    let mut out = serde_json::Map::new();
    for mode in m.keys() {
        let v: Vec<Value> = verdicts(m, mode)
            .into_iter()
            .map(|v| json!({ "target": v.target, "measured": v.measured, "limit": v.limit, "at_most": v.at_most, "met": v.met() }))
            .collect();
        out.insert(mode.clone(), Value::Array(v));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn quantiles_and_fairness() {
        let xs = [5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(quantile(&xs, 0.5), Some(3.0));
        assert_eq!(quantile(&xs, 0.0), Some(1.0));
        assert_eq!(quantile(&xs, 1.0), Some(5.0));
        assert_eq!(quantile(&[], 0.5), None);
        assert!((jain(&[10.0, 10.0, 10.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((jain(&[10.0, 0.0]).unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(fmt(1234.4), "1234");
        assert_eq!(fmt(12.34), "12.3");
        assert_eq!(fmt(0.734), "0.73");
        // Of two repetitions, the median is their mean.
        assert_eq!(Series(vec![3.0, 1.0]).mid(), Some(2.0));
        assert_eq!(Series(vec![3.0, 1.0, 2.0]).mid(), Some(2.0));
        assert_eq!(Series(vec![]).mid(), None);
    }

    #[test]
    fn ratios_pair_the_repetitions() {
        let a = Series(vec![2.0, 9.0]);
        let b = Series(vec![1.0, 10.0]);
        // 2/1 and 9/10: median 1.45; the ratio of the medians would be 5.5/5.5 = 1.
        assert_eq!(a.paired_ratio(&b).unwrap().0, vec![2.0, 0.9]);
        assert!((a.paired_ratio(&b).unwrap().mid().unwrap() - 1.45).abs() < 1e-12);
        assert!(a.paired_ratio(&Series(vec![1.0])).is_none(), "a repetition failed: nothing to pair");
        assert!(a.paired_ratio(&Series(vec![1.0, 0.0])).is_none());
    }

    fn sample() -> Metrics {
        let mut m = Metrics::new();
        for (imp, lat) in
            [("zklock-rust", 100.0), ("curator", 200.0), ("kazoo", 400.0), ("floor", 95.0), ("zklock-python", 120.0)]
        {
            // CPU: a third of the cycle's time in the client, a sixth in the server.
            let r = json!({ "lat_us": [lat, lat, lat * 3.0], "cpu_s": lat * 1e-6, "server_cpu_s": lat * 0.5e-6 });
            add_result(&mut m, "fsync-off", "uncontended", imp, &r);
        }
        for (imp, g) in [("zklock-rust", 300.0), ("curator", 200.0)] {
            let r = json!({ "grants": g, "window_s": 1.0, "per_worker": [g / 2.0, g / 2.0], "violations": 0 });
            add_result(&mut m, "fsync-off", "contended-32", imp, &r);
        }
        add_result(&mut m, "fsync-off", "queue-32", "zklock-rust", &json!({ "grants": 100, "window_s": 1.0 }));
        add_result(&mut m, "fsync-off", "queue-1000", "zklock-rust", &json!({ "grants": 60, "window_s": 1.0 }));
        let herd = json!({ "notifications": [{ "total": 1, "to_waiters": 1 }, { "total": 2, "to_waiters": 1 }] });
        add_result(&mut m, "fsync-off", "herd-32", "zklock-rust", &herd);
        let waiters = json!({ "grants": 10000, "window_s": 4.0, "threads_max": 17, "rss_per_waiter_bytes": 17000 });
        add_result(&mut m, "fsync-off", "waiters-10000", "zklock-node", &waiters);
        for (imp, ops, notes) in [
            ("zklock-rust", json!({ "create2": 100, "getChildren2": 100, "delete": 100, "sync": 10, "ping": 7 }), 5),
            ("curator", json!({ "create2": 101, "getChildren": 100, "delete": 100, "ping": 40 }), 0),
        ] {
            let r = json!({ "lat_us": [1.0], "wire": { "requests": ops, "notifications": notes, "cycles": 100 } });
            add_result(&mut m, "fsync-off", "wire-hold-0", imp, &r);
        }
        m
    }

    #[test]
    fn targets_are_evaluated_from_ratios() {
        let m = sample();
        let v = verdicts(&m, "fsync-off");
        let find = |t: &str| v.iter().find(|x| x.target.contains(t)).unwrap().clone();
        assert_eq!(find("0.75 × Curator").met(), Some(true));
        assert_eq!(find("0.4 × kazoo").measured, Some(0.25));
        assert_eq!(find("floor").met(), Some(true));
        assert_eq!(find("1.3 × Curator").measured, Some(1.5));
        assert_eq!(find("herd-32").met(), Some(false));
        assert_eq!(find("queue-1000").met(), Some(false));
        assert_eq!(find("zklock-python").met(), Some(false));
        assert_eq!(find("zklock-node").met(), None);
        assert_eq!(find("client CPU").measured, Some(0.5));
        // Issue 19's, from the wire counts (pings and the like left out).
        let req = find("wire-hold-0: requests");
        assert!((req.measured.unwrap() - 3.1 / 3.01).abs() < 1e-9, "{req:?}");
        assert_eq!(req.met(), Some(false));
        assert_eq!(find("wire-hold-0: notifications").measured, Some(0.05));
        assert!(!v.iter().any(|x| x.target.contains("rtt-2ms")), "rtt-2ms did not run");
    }

    #[test]
    fn scale_figures_are_per_cycle_and_per_acquisition() {
        let mut m = Metrics::new();
        let ens = |sum: f64, leader: f64, member: f64| json!({ "sum": sum, "leader": leader, "member": member });
        // 4 cycles; 0.004 s of the ensemble's CPU = 1,000 µs a cycle.
        for (imp, sum) in [("zklock-rust", 0.004), ("curator", 0.002), ("kazoo", 0.008), ("floor", 0.001)] {
            let r = json!({ "lat_us": [1.0, 2.0, 3.0, 4.0], "ensemble_cpu_s": ens(sum, sum / 2.0, sum / 4.0),
                "ensemble_ticks": { "sum": 400, "leader": 200, "member": 100 } });
            add_result(&mut m, "fsync-off/follower", "uncontended", imp, &r);
        }
        // 500 grants in the window: per acquisition.
        for (imp, sum) in [("zklock-rust", 1.5), ("curator", 1.0)] {
            let r = json!({ "grants": 500, "window_s": 7.0, "violations": 0, "ensemble_cpu_s": ens(sum, sum, sum),
                "ensemble_ticks": { "sum": 150, "leader": 150, "member": 150 } });
            add_result(&mut m, "fsync-off/leader", "contended-2", imp, &r);
        }
        let g = |mode: &str, sc: &str, imp: &str, k: &str| get(&m, mode, sc, imp, k).unwrap();
        assert!((g("fsync-off/follower", "uncontended", "zklock-rust", "ensemble_sum_us") - 1000.0).abs() < 1e-9);
        assert!((g("fsync-off/follower", "uncontended", "zklock-rust", "ensemble_member_us") - 250.0).abs() < 1e-9);
        assert_eq!(g("fsync-off/follower", "uncontended", "zklock-rust", "ticks_min"), 100.0);
        assert!((g("fsync-off/leader", "contended-2", "zklock-rust", "ensemble_leader_us") - 3000.0).abs() < 1e-9);
        let md = scale_markdown(&m, &json!({ "nproc": 2 }), &["a note".into()]);
        // Summary: zklock ÷ Curator (sum, leader, member), ÷ kazoo, ÷ floor.
        assert!(md.contains("| uncontended (fsync-off) | follower | 2.00 | 2.00 | 2.00 | 0.50 | 4.00 |"), "{md}");
        assert!(md.contains("| contended-2 (fsync-off) | leader | 1.50 | 1.50 | 1.50 | – | – |"), "{md}");
        assert!(md.contains("### uncontended: clients on the follower (fsync-off)"), "{md}");
        assert!(md.contains("| implementation | cycle median µs | sum µs/cycle | leader µs/cycle | client's member µs/cycle | fewest ticks | sum × Curator | sum × kazoo | sum × floor | leader × Curator | member × Curator |"), "{md}");
        assert!(
            md.contains("| zklock-rust | 3.00 | 1000 | 500 | 250 | 100 | 2.00 | 0.50 | 4.00 | 2.00 | 2.00 |"),
            "{md}"
        );
        // No kazoo or floor in the contended run: no column for them.
        assert!(md.contains("| implementation | acquisitions/s | violations | sum µs/acquisition | leader µs/acquisition | client's member µs/acquisition | fewest ticks | sum × Curator | leader × Curator | member × Curator |"), "{md}");
        assert!(md.contains("| curator | 71.4 | 0.00 | 2000 | 2000 | 2000 | 150 | 1.00 | 1.00 | 1.00 |"), "{md}");
        // A second repetition, the machine twice as slow for both: the
        // paired ratios stay 1.5.
        for (imp, sum) in [("zklock-rust", 3.0), ("curator", 2.0)] {
            let r = json!({ "grants": 500, "window_s": 7.0, "ensemble_cpu_s": ens(sum, sum, sum) });
            add_result(&mut m, "fsync-off/leader", "contended-2", imp, &r);
        }
        let md = scale_markdown(&m, &json!({}), &[]);
        assert!(md.contains("| contended-2 (fsync-off) | leader | 1.50 [1.50–1.50] |"), "{md}");
    }

    #[test]
    fn markdown_and_svg_render() {
        let m = sample();
        let md = markdown(&m, &json!({ "nproc": 2 }), &["a note".into()]);
        assert!(md.contains("| zklock-rust | 100 | 300 | 33.3 | 16.7 | 0.50 | 0.25 | 1.05 |"), "{md}");
        assert!(md.contains("**missed**"));
        assert!(md.contains("- **nproc**: 2"));
        assert!(md.contains("| zklock-node | 17.0 | 17000 | 2500 |"), "{md}");
        assert!(md.contains("| zklock-rust | 3.10 | 0.10 | 0.05 | 1.03 | – | – | create2 1.00, delete 1.00, getChildren2 1.00, sync 0.10 |"), "{md}");
        let mut lat = BTreeMap::new();
        lat.entry("fsync-off".to_owned())
            .or_insert_with(BTreeMap::new)
            .insert("curator".to_owned(), vec![150.0, 200.0, 900.0]);
        let svg = svg(&lat);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("curator (median 200)"));
    }
}

//! The soak's properties, computed from what the run recorded. Pure
//! functions over plain records, unit-tested without a server.
//!
//! All times are nanoseconds of `CLOCK_MONOTONIC`, which every process on
//! the machine shares, so times taken in different contender processes
//! compare directly.

use std::collections::BTreeMap;

/// One grant as the holder lived it: from its first successful `check()`
/// after the acquire returned, to its last successful `check()` (the one
/// right before `release()`, or the last one before a `check()` failed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interval {
    /// Contender id.
    pub cid: u32,
    /// Fencing token of the grant.
    pub token: u64,
    /// First successful check.
    pub start: u64,
    /// Last successful check.
    pub end: u64,
    /// When the holder first learned that the lock was not safely held
    /// (state callback Suspended/Lost, or the first failed `check()`),
    /// if it did.
    pub noticed: Option<u64>,
    /// Whether the interval ended because the lock was no longer safely
    /// held (rather than by a plain release).
    pub lost: bool,
}

/// One write that reached the fenced resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    /// Contender id.
    pub cid: u32,
    /// Token the write carried.
    pub token: u64,
    /// Start of the writer's grant (its first successful check).
    pub grant_start: u64,
    /// Arrival at the resource.
    pub arrival: u64,
    /// Whether this is the first write of a grant (it announces the grant).
    pub enter: bool,
    /// The resource's verdict: accepted, or rejected as stale.
    pub accepted: bool,
}

/// The fault kinds of the chaos schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// SIGKILL the leader, wait for a new one, start the old one again.
    KillLeader,
    /// SIGKILL a follower and start it again.
    KillFollower,
    /// SIGSTOP a member for longer than the session timeout, then SIGCONT.
    FreezeMember,
    /// SIGKILL every member, then start them all again.
    RestartEnsemble,
    /// Blackhole the holder's connection for longer than the session timeout.
    BlackholeHolder,
    /// SIGSTOP the holder's process for longer than its session timeout.
    PauseHolder,
    /// Let the server execute a contender's create but drop the reply.
    DropCreateReply,
}

impl FaultKind {
    /// Every kind, in report order.
    pub const ALL: [FaultKind; 7] = [
        FaultKind::KillLeader,
        FaultKind::KillFollower,
        FaultKind::FreezeMember,
        FaultKind::RestartEnsemble,
        FaultKind::BlackholeHolder,
        FaultKind::PauseHolder,
        FaultKind::DropCreateReply,
    ];

    /// The kind's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::KillLeader => "kill-leader",
            FaultKind::KillFollower => "kill-follower",
            FaultKind::FreezeMember => "freeze-member",
            FaultKind::RestartEnsemble => "restart-ensemble",
            FaultKind::BlackholeHolder => "blackhole-holder",
            FaultKind::PauseHolder => "pause-holder",
            FaultKind::DropCreateReply => "drop-create-reply",
        }
    }
}

/// One injected fault: from the moment it took effect to the moment it was
/// undone (server serving again, connection healed, process resumed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// What was done.
    pub kind: FaultKind,
    /// Took effect.
    pub start: u64,
    /// Undone.
    pub end: u64,
    /// For `PauseHolder`: the contender process that was stopped.
    pub paused_process: Option<usize>,
}

/// A violation of one of the properties, with what shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Property number (1 to 5, as in the issue).
    pub property: u8,
    /// Human-readable evidence.
    pub detail: String,
}

/// Recovery after one fault: time from its end to the next grant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovery {
    /// The fault.
    pub kind: FaultKind,
    /// Nanoseconds from the fault's end to the next grant's start (`None`:
    /// no grant within the bound).
    pub next_grant_after: Option<u64>,
}

/// Everything the run recorded.
#[derive(Clone, Debug, Default)]
pub struct Record {
    /// Every finished grant.
    pub intervals: Vec<Interval>,
    /// Every write, in arrival order.
    pub writes: Vec<Write>,
    /// Every injected fault.
    pub faults: Vec<Fault>,
    /// Lock nodes still present once every session was closed.
    pub leftover_nodes: Vec<String>,
    /// Contender id -> the index of its process.
    pub process_of: BTreeMap<u32, usize>,
}

/// The verdict.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Violations, by property.
    pub violations: Vec<Violation>,
    /// Recovery after each fault.
    pub recoveries: Vec<Recovery>,
    /// Writes rejected as stale (the fencing token at work).
    pub stale_rejected: usize,
    /// Losses (intervals that ended because the lock was not safely held).
    pub losses: usize,
    /// Losses exempt from property 3 because their process was paused.
    pub paused_losses: usize,
    /// The longest times without a grant, longest first.
    pub gaps: Vec<Gap>,
}

/// A time without any grant, and the faults in effect during it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gap {
    /// The last grant before the gap.
    pub from: u64,
    /// The first grant after it.
    pub to: u64,
    /// Faults that overlapped the gap.
    pub faults: Vec<FaultKind>,
}

/// The `n` longest gaps between consecutive grants.
pub fn longest_gaps(record: &Record, n: usize) -> Vec<Gap> {
    let mut starts: Vec<u64> = record.writes.iter().filter(|w| w.enter).map(|w| w.grant_start).collect();
    starts.sort_unstable();
    let mut gaps: Vec<(u64, u64)> = starts.windows(2).map(|w| (w[0], w[1])).collect();
    gaps.sort_by_key(|&(a, b)| std::cmp::Reverse(b - a));
    gaps.truncate(n);
    gaps.into_iter()
        .map(|(from, to)| {
            let faults = record.faults.iter().filter(|f| f.start <= to && f.end >= from).map(|f| f.kind).collect();
            Gap { from, to, faults }
        })
        .collect()
}

impl Report {
    /// Violations of property `p`.
    pub fn count(&self, p: u8) -> usize {
        self.violations.iter().filter(|v| v.property == p).count()
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Property 1: no two holders' safely-held intervals overlap.
pub fn check_overlap(intervals: &[Interval], out: &mut Vec<Violation>) {
    let mut sorted: Vec<&Interval> = intervals.iter().collect();
    sorted.sort_by_key(|i| (i.start, i.end));
    let mut latest: Option<&Interval> = None;
    for i in sorted {
        if let Some(prev) = latest {
            if i.start <= prev.end {
                out.push(Violation {
                    property: 1,
                    detail: format!(
                        "contender {} (token {}) was safely holding from {:.3} ms while contender {} (token {}) \
                         was still safely holding until {:.3} ms",
                        i.cid,
                        i.token,
                        ms(i.start),
                        prev.cid,
                        prev.token,
                        ms(prev.end)
                    ),
                });
            }
        }
        if latest.is_none_or(|p| i.end > p.end) {
            latest = Some(i);
        }
    }
}

/// Property 2: the fencing tokens protect the resource.
///
/// - grants, in the order they started, carry strictly increasing tokens;
/// - no write is accepted from a grant once a later grant has announced
///   itself to the resource (a stale write), and no write of the newest
///   announced grant is rejected (a fresh write refused).
pub fn check_fencing(writes: &[Write], out: &mut Vec<Violation>) {
    let mut grants: Vec<(u64, u64, u32)> = writes.iter().filter(|w| w.enter).map(|w| (w.grant_start, w.token, w.cid)).collect();
    grants.sort();
    for pair in grants.windows(2) {
        let ((s0, t0, c0), (s1, t1, c1)) = (pair[0], pair[1]);
        if t1 <= t0 {
            out.push(Violation {
                property: 2,
                detail: format!(
                    "grant to contender {c1} at {:.3} ms has token {t1}, not larger than token {t0} of the earlier \
                     grant to contender {c0} at {:.3} ms",
                    ms(s1),
                    ms(s0)
                ),
            });
        }
    }
    let mut newest_announced: Option<u64> = None;
    for w in writes {
        if w.enter {
            newest_announced = Some(newest_announced.map_or(w.grant_start, |n| n.max(w.grant_start)));
        }
        let stale = newest_announced.is_some_and(|n| n > w.grant_start);
        if stale && w.accepted {
            out.push(Violation {
                property: 2,
                detail: format!(
                    "stale write accepted: contender {} (token {}, granted at {:.3} ms) wrote at {:.3} ms after a \
                     later grant had written",
                    w.cid,
                    w.token,
                    ms(w.grant_start),
                    ms(w.arrival)
                ),
            });
        }
        if !stale && !w.accepted {
            out.push(Violation {
                property: 2,
                detail: format!(
                    "write of the newest grant rejected: contender {} (token {}) at {:.3} ms",
                    w.cid,
                    w.token,
                    ms(w.arrival)
                ),
            });
        }
    }
}

/// Whether `process` was paused at any time in `[from, to]`.
fn paused_during(faults: &[Fault], process: Option<usize>, from: u64, to: u64) -> bool {
    faults
        .iter()
        .any(|f| f.paused_process.is_some() && f.paused_process == process && f.start <= to && f.end >= from)
}

/// Property 3: every loss reaches its holder before anyone else is granted
/// the lock. A holder whose process was stopped (SIGSTOP) cannot learn
/// anything while stopped; those losses are counted apart (properties 1
/// and 2 still cover them: its `check()` fails on waking, and its writes are
/// rejected by their token).
pub fn check_loss_reported(record: &Record, report: &mut Report) {
    let mut starts: Vec<(u64, u32, u64)> = record.intervals.iter().map(|i| (i.start, i.cid, i.token)).collect();
    starts.sort();
    for i in record.intervals.iter().filter(|i| i.lost) {
        report.losses += 1;
        let next = starts.iter().find(|(s, c, t)| *s > i.start && !(*c == i.cid && *t == i.token));
        let Some(&(next_start, next_cid, _)) = next else { continue };
        let noticed = i.noticed.unwrap_or(u64::MAX);
        if noticed < next_start {
            continue;
        }
        if paused_during(&record.faults, record.process_of.get(&i.cid).copied(), i.end, next_start) {
            report.paused_losses += 1;
            continue;
        }
        report.violations.push(Violation {
            property: 3,
            detail: format!(
                "contender {} (token {}) learned of its loss at {} but contender {next_cid} was granted the lock at \
                 {:.3} ms",
                i.cid,
                i.token,
                i.noticed.map_or("no time at all".to_owned(), |n| format!("{:.3} ms", ms(n))),
                ms(next_start)
            ),
        });
    }
}

/// Property 4: no lock nodes remain once every session is closed.
pub fn check_leftovers(leftover: &[String], out: &mut Vec<Violation>) {
    for node in leftover {
        out.push(Violation { property: 4, detail: format!("lock node {node} remained after every session closed") });
    }
}

/// Property 5: the lock is granted again after every fault, within `bound`
/// nanoseconds of the fault's end.
pub fn check_progress(record: &Record, bound: u64, report: &mut Report) {
    let mut starts: Vec<u64> = record.intervals.iter().map(|i| i.start).collect();
    starts.extend(record.writes.iter().filter(|w| w.enter).map(|w| w.grant_start));
    starts.sort_unstable();
    for f in &record.faults {
        let next = starts.iter().find(|&&s| s > f.end).map(|s| s - f.end).filter(|&d| d <= bound);
        if next.is_none() {
            report.violations.push(Violation {
                property: 5,
                detail: format!(
                    "no grant within {:.1} s after the {} fault that ended at {:.3} ms",
                    bound as f64 / 1e9,
                    f.kind.name(),
                    ms(f.end)
                ),
            });
        }
        report.recoveries.push(Recovery { kind: f.kind, next_grant_after: next });
    }
}

/// Evaluates every property over `record`.
pub fn analyse(record: &Record, progress_bound_ns: u64) -> Report {
    let mut report = Report::default();
    check_overlap(&record.intervals, &mut report.violations);
    check_fencing(&record.writes, &mut report.violations);
    check_loss_reported(record, &mut report);
    check_leftovers(&record.leftover_nodes, &mut report.violations);
    check_progress(record, progress_bound_ns, &mut report);
    report.stale_rejected = record.writes.iter().filter(|w| !w.accepted).count();
    report.gaps = longest_gaps(record, 5);
    report.violations.sort_by_key(|v| v.property);
    report
}

/// The `q`-quantile (0..=1) of `values` (sorted in place); `None` if empty.
pub fn quantile(values: &mut [u64], q: f64) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    let idx = ((values.len() - 1) as f64 * q).round() as usize;
    values.get(idx.min(values.len() - 1)).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(cid: u32, token: u64, start: u64, end: u64) -> Interval {
        Interval { cid, token, start, end, noticed: None, lost: false }
    }

    fn w(cid: u32, token: u64, grant_start: u64, arrival: u64, enter: bool, accepted: bool) -> Write {
        Write { cid, token, grant_start, arrival, enter, accepted }
    }

    #[test]
    fn disjoint_intervals_pass_and_overlaps_are_reported() {
        let mut v = Vec::new();
        check_overlap(&[iv(1, 10, 0, 5), iv(2, 11, 6, 9), iv(1, 12, 10, 20)], &mut v);
        assert!(v.is_empty(), "{v:?}");
        // The third starts inside the long first one, though not inside the second.
        check_overlap(&[iv(1, 10, 0, 50), iv(2, 11, 6, 9), iv(3, 12, 20, 30)], &mut v);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v.iter().all(|x| x.property == 1));
        v.clear();
        check_overlap(&[iv(1, 10, 0, 5), iv(2, 11, 5, 9)], &mut v);
        assert_eq!(v.len(), 1, "touching ends overlap: {v:?}");
    }

    #[test]
    fn fencing_accepts_the_current_grant_and_rejects_stale_ones() {
        let writes = [
            w(1, 10, 100, 101, true, true),
            w(1, 10, 100, 150, false, true),
            w(2, 11, 200, 201, true, true),
            // Contender 1 was paused and writes late: rejected, as it must be.
            w(1, 10, 100, 250, false, false),
            w(2, 11, 200, 260, false, true),
        ];
        let mut v = Vec::new();
        check_fencing(&writes, &mut v);
        assert!(v.is_empty(), "{v:?}");
    }

    #[test]
    fn fencing_reports_a_stale_write_accepted_and_a_fresh_one_rejected() {
        let mut v = Vec::new();
        check_fencing(&[w(1, 10, 100, 101, true, true), w(2, 11, 200, 201, true, true), w(1, 10, 100, 250, false, true)], &mut v);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("stale write accepted"));
        v.clear();
        check_fencing(&[w(1, 10, 100, 101, true, true), w(1, 10, 100, 120, false, false)], &mut v);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("rejected"));
    }

    #[test]
    fn fencing_reports_tokens_that_do_not_grow_with_the_grants() {
        let mut v = Vec::new();
        check_fencing(&[w(1, 12, 100, 101, true, true), w(2, 11, 200, 201, true, false)], &mut v);
        assert!(v.iter().any(|x| x.detail.contains("not larger")), "{v:?}");
    }

    #[test]
    fn a_loss_must_be_noticed_before_the_next_grant_unless_the_process_was_paused() {
        let mut lost = iv(1, 10, 0, 100);
        lost.lost = true;
        lost.noticed = Some(150);
        let next = iv(2, 11, 300, 400);
        let mut record = Record { intervals: vec![lost.clone(), next.clone()], ..Record::default() };
        record.process_of.insert(1, 0);
        let mut report = Report::default();
        check_loss_reported(&record, &mut report);
        assert_eq!((report.count(3), report.losses), (0, 1));

        record.intervals[0].noticed = Some(350);
        let mut report = Report::default();
        check_loss_reported(&record, &mut report);
        assert_eq!(report.count(3), 1, "{:?}", report.violations);

        record.intervals[0].noticed = None;
        record.faults.push(Fault { kind: FaultKind::PauseHolder, start: 120, end: 500, paused_process: Some(0) });
        let mut report = Report::default();
        check_loss_reported(&record, &mut report);
        assert_eq!((report.count(3), report.paused_losses), (0, 1));
    }

    #[test]
    fn progress_needs_a_grant_after_every_fault_within_the_bound() {
        let record = Record {
            intervals: vec![iv(1, 10, 0, 10), iv(2, 11, 1_000, 1_010)],
            faults: vec![
                Fault { kind: FaultKind::KillLeader, start: 20, end: 500, paused_process: None },
                Fault { kind: FaultKind::FreezeMember, start: 1_100, end: 1_200, paused_process: None },
            ],
            ..Record::default()
        };
        let mut report = Report::default();
        check_progress(&record, 600, &mut report);
        assert_eq!(report.recoveries[0].next_grant_after, Some(500));
        assert_eq!(report.recoveries[1].next_grant_after, None);
        assert_eq!(report.count(5), 1);
        let mut report = Report::default();
        check_progress(&record, 400, &mut report);
        assert_eq!(report.count(5), 2, "a grant later than the bound does not count");
    }

    #[test]
    fn the_longest_gaps_come_first_with_the_faults_during_them() {
        let record = Record {
            writes: [0u64, 10, 100, 130].iter().map(|&t| w(1, t, t, t, true, true)).collect(),
            faults: vec![Fault { kind: FaultKind::RestartEnsemble, start: 20, end: 40, paused_process: None }],
            ..Record::default()
        };
        let gaps = longest_gaps(&record, 2);
        assert_eq!(gaps.len(), 2);
        assert_eq!((gaps[0].from, gaps[0].to, gaps[0].faults.clone()), (10, 100, vec![FaultKind::RestartEnsemble]));
        assert_eq!((gaps[1].from, gaps[1].to), (100, 130));
        assert!(gaps[1].faults.is_empty());
    }

    #[test]
    fn leftovers_are_violations_and_quantiles_pick_from_sorted_values() {
        let mut v = Vec::new();
        check_leftovers(&["_c_x-lock-0000000001".into()], &mut v);
        assert_eq!(v[0].property, 4);
        assert_eq!(quantile(&mut [5, 1, 3, 2, 4], 0.5), Some(3));
        assert_eq!(quantile(&mut [5, 1, 3], 1.0), Some(5));
        assert_eq!(quantile(&mut [], 0.5), None);
    }
}

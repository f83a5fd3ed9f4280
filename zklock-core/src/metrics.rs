//! Metrics: what a client did, counted as it happens ([`crate::Client::metrics`]
//! takes a snapshot). Every counter only grows over the client's life, so
//! an exporter can hand them on as they are (Prometheus counters and
//! histograms); the only gauge is the background cleanups pending.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::error::{ErrorKind, Result};

/// The upper bounds (seconds) of the wait and hold time histograms'
/// buckets; the last bucket (`+Inf`) is implied.
pub const BUCKETS: [f64; 11] = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 60.0, 300.0];

/// A histogram of durations, as Prometheus keeps one: how many, their sum,
/// and cumulative counts per upper bound.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Histogram {
    /// How many durations were observed.
    pub count: u64,
    /// Their sum, in seconds.
    pub sum_seconds: f64,
    /// `(upper bound in seconds, how many were at most that)`, for each of
    /// [`BUCKETS`] in order (cumulative; `count` is the `+Inf` bucket).
    pub buckets: Vec<(f64, u64)>,
}

/// A snapshot of a client's metrics ([`crate::Client::metrics`]).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Metrics {
    /// Acquires (every lock kind, elections and leases; each member of a
    /// multi-lock) that were granted, reentrant ones included.
    pub acquires_granted: u64,
    /// Acquires that ended at their deadline (a try that found the lock
    /// held included).
    pub acquires_timed_out: u64,
    /// Acquires cancelled (token, handle, a dropped future).
    pub acquires_cancelled: u64,
    /// Acquires that failed otherwise (connection, session, refusals,
    /// a closed client).
    pub acquires_failed: u64,
    /// How long granted acquires waited.
    pub wait_time: Histogram,
    /// How long locks were held: from the grant to the release or the
    /// loss.
    pub hold_time: Histogram,
    /// Times a held lock became suspended (connection trouble).
    pub suspensions: u64,
    /// Held locks lost (session expired, node deleted, ...; not a close of
    /// the client).
    pub losses: u64,
    /// Times a lost connection came back with the same session.
    pub reconnects: u64,
    /// Sessions that ended without a close (expired); the client starts a
    /// new one each time.
    pub session_expiries: u64,
    /// Requests written to ZooKeeper, by operation as ZooKeeper names it
    /// (`create2`, `getData`, `sync`, `ping`, ...), over every session of
    /// the client.
    pub requests: BTreeMap<&'static str, u64>,
    /// Background cleanups (node deletions) not finished yet (a gauge).
    pub cleanups_pending: u64,
}

/// A histogram being filled.
#[derive(Default)]
pub(crate) struct Timer {
    count: AtomicU64,
    sum_micros: AtomicU64,
    buckets: [AtomicU64; BUCKETS.len()],
}

impl Timer {
    pub(crate) fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add(u64::try_from(d.as_micros()).unwrap_or(u64::MAX), Ordering::Relaxed);
        if let Some(i) = BUCKETS.iter().position(|b| secs <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    fn snapshot(&self) -> Histogram {
        let mut total = 0;
        let buckets = BUCKETS
            .iter()
            .zip(&self.buckets)
            .map(|(b, n)| {
                total += n.load(Ordering::Relaxed);
                (*b, total)
            })
            .collect();
        Histogram {
            count: self.count.load(Ordering::Relaxed),
            sum_seconds: self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6,
            buckets,
        }
    }
}

/// The counters a client keeps (in its shared state).
#[derive(Default)]
pub(crate) struct Counters {
    granted: AtomicU64,
    timed_out: AtomicU64,
    cancelled: AtomicU64,
    failed: AtomicU64,
    pub(crate) wait: Timer,
    pub(crate) hold: Timer,
    pub(crate) suspensions: AtomicU64,
    pub(crate) losses: AtomicU64,
    pub(crate) reconnects: AtomicU64,
    pub(crate) expiries: AtomicU64,
    /// Requests of the sessions the client no longer uses.
    pub(crate) retired: Mutex<BTreeMap<&'static str, u64>>,
}

impl Counters {
    /// Counts an acquire's outcome (and its wait, when granted).
    pub(crate) fn acquire<T>(&self, outcome: &Result<T>, waited: Duration) {
        let counter = match outcome {
            Ok(_) => {
                self.wait.observe(waited);
                &self.granted
            },
            Err(e) if e.kind() == ErrorKind::Timeout => &self.timed_out,
            Err(e) if e.kind() == ErrorKind::Cancelled => &self.cancelled,
            Err(_) => &self.failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

impl Counters {
    /// A snapshot ([`crate::Client::metrics`]): `current` gives the
    /// requests of the session in use, read under the lock a session's
    /// replacement takes (each request counted once, the totals never
    /// fall); `cleanups_pending` is the gauge.
    pub(crate) fn snapshot(
        &self,
        current: impl FnOnce() -> Vec<(&'static str, u64)>,
        cleanups_pending: u64,
    ) -> Metrics {
        let requests = {
            let retired = self.retired.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut requests = retired.clone();
            for (op, n) in current() {
                *requests.entry(op).or_default() += n;
            }
            requests
        };
        Metrics {
            acquires_granted: self.granted.load(Ordering::Relaxed),
            acquires_timed_out: self.timed_out.load(Ordering::Relaxed),
            acquires_cancelled: self.cancelled.load(Ordering::Relaxed),
            acquires_failed: self.failed.load(Ordering::Relaxed),
            wait_time: self.wait.snapshot(),
            hold_time: self.hold.snapshot(),
            suspensions: self.suspensions.load(Ordering::Relaxed),
            losses: self.losses.load(Ordering::Relaxed),
            reconnects: self.reconnects.load(Ordering::Relaxed),
            session_expiries: self.expiries.load(Ordering::Relaxed),
            requests,
            cleanups_pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_counts_each_duration_in_its_bucket_and_those_above() {
        let t = Timer::default();
        t.observe(Duration::from_micros(500));
        t.observe(Duration::from_millis(70));
        t.observe(Duration::from_secs(1000));
        let h = t.snapshot();
        assert_eq!(h.count, 3);
        assert!((h.sum_seconds - 1000.0705).abs() < 1e-6, "{}", h.sum_seconds);
        assert_eq!(h.buckets[0], (0.001, 1));
        assert_eq!(h.buckets[3], (0.05, 1));
        assert_eq!(h.buckets[4], (0.1, 2));
        assert_eq!(h.buckets[10], (300.0, 2), "the last one only in +Inf (count)");
    }
}

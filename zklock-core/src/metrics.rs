//! Metrics: what a client did, counted as it happens ([`crate::Client::metrics`]
//! takes a snapshot). Every counter only grows over the client's life, so
//! an exporter can hand them on as they are (Prometheus counters and
//! histograms); the only gauge is the background cleanups pending.
//!
//! With the cargo feature `metrics`, every observation also goes, as it
//! happens, to the recorder the application installed for the `metrics`
//! crate (the Rust metrics facade), under the names the Prometheus
//! exporters of the other front ends use: `zklock_acquires_total{outcome}`
//! (`granted`, `timed_out`, `cancelled`, `failed`),
//! `zklock_acquire_wait_seconds` and `zklock_hold_seconds` (histograms),
//! `zklock_suspensions_total`, `zklock_losses_total`,
//! `zklock_reconnects_total`, `zklock_session_expiries_total`,
//! `zklock_requests_total{op}` and the gauge `zklock_cleanups_pending`. The
//! facade is process-wide: the clients of a process add up.

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

/// The facade's side of each observation (cargo feature `metrics`);
/// without the feature, nothing.
mod facade {
    use std::time::Duration;

    /// `name` (a counter) grew by one; `outcome` labels an acquire's.
    #[cfg(feature = "metrics")]
    pub(super) fn count(name: &'static str, outcome: Option<&'static str>) {
        match outcome {
            Some(outcome) => metrics::counter!(name, "outcome" => outcome).increment(1),
            None => metrics::counter!(name).increment(1),
        }
    }

    /// `d` observed in the histogram `name`.
    #[cfg(feature = "metrics")]
    pub(super) fn observe(name: &'static str, d: Duration) {
        metrics::histogram!(name).record(d.as_secs_f64());
    }

    /// The cleanups pending changed by `delta` (one more or one fewer).
    #[cfg(feature = "metrics")]
    pub(super) fn cleanups(delta: f64) {
        metrics::gauge!("zklock_cleanups_pending").increment(delta);
    }

    #[cfg(not(feature = "metrics"))]
    pub(super) fn count(_: &'static str, _: Option<&'static str>) {}

    #[cfg(not(feature = "metrics"))]
    pub(super) fn observe(_: &'static str, _: Duration) {}

    #[cfg(not(feature = "metrics"))]
    pub(super) fn cleanups(_: f64) {}
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

/// The counters a client keeps (in its shared state). Each observation
/// is one method here, which also hands it to the facade.
#[derive(Default)]
pub(crate) struct Counters {
    granted: AtomicU64,
    timed_out: AtomicU64,
    cancelled: AtomicU64,
    failed: AtomicU64,
    wait: Timer,
    hold: Timer,
    suspensions: AtomicU64,
    losses: AtomicU64,
    reconnects: AtomicU64,
    expiries: AtomicU64,
    /// Requests of the sessions the client no longer uses.
    pub(crate) retired: Mutex<BTreeMap<&'static str, u64>>,
}

impl Counters {
    /// A held lock became suspended.
    pub(crate) fn suspended(&self) {
        self.suspensions.fetch_add(1, Ordering::Relaxed);
        facade::count("zklock_suspensions_total", None);
    }

    /// A held lock was lost.
    pub(crate) fn lost(&self) {
        self.losses.fetch_add(1, Ordering::Relaxed);
        facade::count("zklock_losses_total", None);
    }

    /// A lost connection came back with the same session.
    pub(crate) fn reconnected(&self) {
        self.reconnects.fetch_add(1, Ordering::Relaxed);
        facade::count("zklock_reconnects_total", None);
    }

    /// A session ended without a close.
    pub(crate) fn expired(&self) {
        self.expiries.fetch_add(1, Ordering::Relaxed);
        facade::count("zklock_session_expiries_total", None);
    }

    /// A grant held for `d` ended (released or lost).
    pub(crate) fn held(&self, d: Duration) {
        self.hold.observe(d);
        facade::observe("zklock_hold_seconds", d);
    }

    /// A background cleanup started (`true`) or ended: the counter itself
    /// is the client's `pending_cleanups`; this is the facade's gauge.
    pub(crate) fn cleanup(started: bool) {
        facade::cleanups(if started { 1.0 } else { -1.0 });
    }
}

impl Counters {
    /// Counts an acquire's outcome (and its wait, when granted).
    pub(crate) fn acquire<T>(&self, outcome: &Result<T>, waited: Duration) {
        let (counter, name) = match outcome {
            Ok(_) => {
                self.wait.observe(waited);
                facade::observe("zklock_acquire_wait_seconds", waited);
                (&self.granted, "granted")
            },
            Err(e) if e.kind() == ErrorKind::Timeout => (&self.timed_out, "timed_out"),
            Err(e) if e.kind() == ErrorKind::Cancelled => (&self.cancelled, "cancelled"),
            Err(_) => (&self.failed, "failed"),
        };
        counter.fetch_add(1, Ordering::Relaxed);
        facade::count("zklock_acquires_total", Some(name));
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

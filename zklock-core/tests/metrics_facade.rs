//! The cargo feature `metrics`: every observation of `Client::metrics` also
//! goes to the recorder installed for the `metrics` crate. One test (the
//! recorder is process-wide): after acquires of every outcome, a loss, a
//! suspension with its reconnect and a background cleanup, against a real
//! ZooKeeper, what the recorder holds equals the clients' own snapshots
//! (and the requests what the sessions wrote).

#![cfg(feature = "metrics")]
#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{connect, options, server, wait_until, Raw};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use zklock_core::{AcquireOptions, CancelToken, Client, ErrorKind, Histogram};
use zklock_harness::Proxy;

const SEC: Duration = Duration::from_secs(1);

/// What the recorder holds, by name and label value (`outcome` or `op`;
/// empty for none).
type Recorded = BTreeMap<(String, String), DebugValue>;

#[test]
fn the_facade_sees_what_the_snapshots_count() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().unwrap();

    let zk = server();
    let hosts = zk.connect_string();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let c = Client::connect(options(&proxy.addr().to_string(), 10 * SEC)).unwrap();
    let other = connect(&hosts);
    let raw = Raw::connect(&hosts);

    // Granted (waited), timed out, cancelled, failed.
    let lock = c.lock("/facade/lock").unwrap();
    let g = lock.acquire(Some(5 * SEC)).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    g.release().unwrap();
    let held = other.lock("/facade/lock").unwrap().acquire(Some(5 * SEC)).unwrap();
    assert!(lock.try_acquire().unwrap().is_none());
    let token = CancelToken::new();
    let t2 = token.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        t2.cancel();
    });
    assert_eq!(lock.acquire(AcquireOptions::new().cancel_token(token)).unwrap_err().kind(), ErrorKind::Cancelled);
    canceller.join().unwrap();
    held.release().unwrap();
    // Failed: a lock under an ephemeral node cannot queue.
    raw.mkdir("/facade");
    raw.create("/facade/ephemeral", zklock_zk::CreateMode::Ephemeral);
    let refused = c.lock("/facade/ephemeral/x").unwrap().acquire(Some(5 * SEC)).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::ZooKeeper, "{refused}");
    // A loss (the node deleted by a third party).
    let g = lock.acquire(Some(5 * SEC)).unwrap();
    raw.delete(&g.node_path());
    wait_until("the loss is seen", 10 * SEC, || g.check().is_err());
    let _ = g.release();
    // A suspension and the reconnect that ends it.
    let g = lock.acquire(Some(5 * SEC)).unwrap();
    proxy.drop_connections();
    wait_until("reconnected", 10 * SEC, || c.metrics().reconnects >= 1);
    g.release().unwrap();
    // A background cleanup pending: a create whose reply is held.
    proxy.hold_replies_now();
    assert_eq!(lock.acquire(Some(SEC / 2)).unwrap_err().kind(), ErrorKind::Timeout);
    wait_until("a cleanup pending", 5 * SEC, || c.pending_cleanups() == 1);
    // The requests go on (the cleanup's, pings): read before and after.
    let wrote = || {
        let mut wrote: BTreeMap<&str, u64> = BTreeMap::new();
        let all = [c.metrics().requests, other.metrics().requests];
        for (op, n) in all.iter().flatten().map(|(o, n)| (*o, *n)).chain(raw.zk.requests_sent()) {
            *wrote.entry(op).or_default() += n;
        }
        wrote
    };
    let wrote_before = wrote();

    let recorded: Recorded = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let key = key.key();
            let label = key.labels().map(|l| l.value().to_owned()).collect::<Vec<_>>().join(",");
            ((key.name().to_owned(), label), value)
        })
        .collect();
    let (mc, mo) = (c.metrics(), other.metrics());
    let wrote_after = wrote();
    proxy.release_held_replies();

    let counter = |name: &str, label: &str| match recorded.get(&(name.to_owned(), label.to_owned())) {
        Some(DebugValue::Counter(n)) => *n,
        None => 0,
        Some(v) => panic!("{name}: not a counter: {v:?}"),
    };
    for (label, n) in [
        ("granted", mc.acquires_granted + mo.acquires_granted),
        ("timed_out", mc.acquires_timed_out + mo.acquires_timed_out),
        ("cancelled", mc.acquires_cancelled + mo.acquires_cancelled),
        ("failed", mc.acquires_failed + mo.acquires_failed),
    ] {
        assert_eq!(counter("zklock_acquires_total", label), n, "{label}: {recorded:?}");
    }
    assert_eq!(
        (mc.acquires_granted, mc.acquires_timed_out, mc.acquires_cancelled, mc.acquires_failed),
        (3, 2, 1, 1),
        "{mc:?}"
    );
    for (name, n) in [
        ("zklock_suspensions_total", mc.suspensions + mo.suspensions),
        ("zklock_losses_total", mc.losses + mo.losses),
        ("zklock_reconnects_total", mc.reconnects + mo.reconnects),
        ("zklock_session_expiries_total", mc.session_expiries + mo.session_expiries),
    ] {
        assert_eq!(counter(name, ""), n, "{name}: {recorded:?}");
    }
    assert_eq!((mc.suspensions, mc.losses, mc.reconnects), (1, 1, 1), "{mc:?}");

    let histogram = |name: &str, mine: &[&Histogram]| {
        let Some(DebugValue::Histogram(samples)) = recorded.get(&(name.to_owned(), String::new())) else {
            panic!("{name}: no histogram in {recorded:?}");
        };
        let count: u64 = mine.iter().map(|h| h.count).sum();
        let sum: f64 = mine.iter().map(|h| h.sum_seconds).sum();
        assert_eq!(samples.len() as u64, count, "{name}");
        let recorded_sum: f64 = samples.iter().map(|s| s.0).sum();
        assert!((recorded_sum - sum).abs() < 1e-3, "{name}: {recorded_sum} vs {sum}");
    };
    histogram("zklock_acquire_wait_seconds", &[&mc.wait_time, &mo.wait_time]);
    histogram("zklock_hold_seconds", &[&mc.hold_time, &mo.hold_time]);

    // Requests: every session of the process (the raw one too).
    assert!(wrote_before["create2"] >= 6, "{wrote_before:?}");
    for (op, after) in &wrote_after {
        let before = wrote_before.get(op).copied().unwrap_or(0);
        let n = counter("zklock_requests_total", op);
        assert!((before..=*after).contains(&n), "{op}: {n} not in {before}..={after}: {recorded:?}");
    }
    for (name, op) in recorded.keys() {
        assert!(name != "zklock_requests_total" || wrote_after.contains_key(op.as_str()), "{op} never written");
    }

    match recorded.get(&("zklock_cleanups_pending".to_owned(), String::new())) {
        Some(DebugValue::Gauge(v)) => assert_eq!(v.0, 1.0, "one cleanup pending"),
        v => panic!("zklock_cleanups_pending: {v:?}"),
    }
    assert_eq!(mc.cleanups_pending, 1);
}

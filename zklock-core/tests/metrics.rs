//! `Client::metrics`: acquires by outcome, wait and hold times, losses,
//! suspensions, reconnects, session expiries and requests by operation,
//! counted against a real ZooKeeper (the requests compared with what the
//! proxy saw on the wire).

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use std::time::Duration;

use common::{connect, options, server, wait_until, Raw};
use zklock_core::{AcquireOptions, CancelToken, Client, ErrorKind};
use zklock_harness::Proxy;

const SEC: Duration = Duration::from_secs(1);

#[test]
fn acquires_by_outcome_wait_and_hold_times_and_losses() {
    let zk = server();
    let hosts = zk.connect_string();
    let c = connect(&hosts);
    let other = connect(&hosts);
    let raw = Raw::connect(&hosts);
    assert_eq!(c.metrics().acquires_granted, 0);
    let lock = c.lock("/m/lock").unwrap();
    let g = lock.acquire(Some(5 * SEC)).unwrap();
    std::thread::sleep(Duration::from_millis(120));
    g.release().unwrap();
    // Held elsewhere: a try that finds it held, and a cancelled wait.
    let held = other.lock("/m/lock").unwrap().acquire(Some(5 * SEC)).unwrap();
    assert!(lock.try_acquire().unwrap().is_none());
    let token = CancelToken::new();
    let t2 = token.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        t2.cancel();
    });
    let e = lock.acquire(AcquireOptions::new().cancel_token(token)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled);
    canceller.join().unwrap();
    held.release().unwrap();
    // A lost lock: its node deleted by a third party.
    let g = lock.acquire(Some(5 * SEC)).unwrap();
    raw.delete(&g.node_path());
    wait_until("the loss is seen", 10 * SEC, || g.check().is_err());
    // Counted as it is told, a moment after `check()` sees it (a `make
    // test` run read the metrics in between: one hold counted).
    wait_until("the loss is counted", 10 * SEC, || {
        let m = c.metrics();
        m.losses == 1 && m.hold_time.count == 2
    });
    let m = c.metrics();
    assert_eq!((m.acquires_granted, m.acquires_timed_out, m.acquires_cancelled, m.acquires_failed), (2, 1, 1, 0));
    assert_eq!(m.wait_time.count, 2);
    assert_eq!(m.hold_time.count, 2, "one released, one lost");
    assert!(m.hold_time.sum_seconds >= 0.12, "{:?}", m.hold_time);
    assert_eq!(m.losses, 1);
    assert_eq!(m.wait_time.buckets.len(), zklock_core::BUCKETS.len());
    assert!(m.requests["create2"] >= 4, "{:?}", m.requests);
    let _ = g.release();
    assert_eq!(c.metrics().hold_time.count, 2, "a lost lock's release counts no second hold");
}

#[test]
fn requests_match_the_wire_and_survive_a_session_expiry() {
    let zk = server();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let c = Client::connect(options(&proxy.addr().to_string(), 2 * SEC)).unwrap();
    for _ in 0..3 {
        c.lock("/m/wire").unwrap().acquire(Some(5 * SEC)).unwrap().release().unwrap();
    }
    let wire = proxy.requests();
    let m = c.metrics();
    for op in ["create2", "getChildren", "getData", "delete"] {
        assert_eq!(m.requests.get(op), wire.get(op), "{op}: {:?} vs the wire {wire:?}", m.requests);
    }
    // Cut off past the session timeout: suspended, then the session
    // expires and a new one starts; the old session's requests stay
    // counted.
    let g = c.lock("/m/wire").unwrap().acquire(Some(5 * SEC)).unwrap();
    let before = c.metrics().requests["create2"];
    proxy.blackhole();
    wait_until("suspended", 10 * SEC, || c.metrics().suspensions >= 1);
    std::thread::sleep(3 * SEC);
    proxy.heal();
    // The expiry and the lock's loss are counted by two tasks that each
    // hear of the session's end (the client's supervisor and the lock's
    // holder): wait for both (the first final run of session 35 read the
    // losses between them).
    wait_until("a new session and the lock's loss", 20 * SEC, || {
        let m = c.metrics();
        m.session_expiries == 1 && m.losses >= 1
    });
    let m = c.metrics();
    assert!(m.requests["create2"] >= before, "{:?}", m.requests);
    assert_eq!(m.losses, 1);
    let _ = g.release();
    c.lock("/m/wire").unwrap().acquire(Some(5 * SEC)).unwrap().release().unwrap();
    assert!(c.metrics().requests["create2"] > before);
    // A short cut within the session: one reconnect.
    let reconnects = c.metrics().reconnects;
    proxy.drop_connections();
    wait_until("reconnected", 10 * SEC, || c.metrics().reconnects > reconnects);
}

/// A semaphore's mutex is zklock's own: a lease counts one hold (its own),
/// a lease that timed out none, and the wait behind the mutex is no hold
/// (outside attack round 18, F4).
#[test]
fn a_semaphores_mutex_is_not_counted_as_a_hold() {
    let zk = server();
    let hosts = zk.connect_string();
    let c = connect(&hosts);
    let other = connect(&hosts);
    let sem = c.semaphore("/m/sem", 1, zklock_core::LockOptions::default()).unwrap();
    sem.acquire(Some(5 * SEC)).unwrap().release().unwrap();
    let m = c.metrics();
    assert_eq!((m.acquires_granted, m.hold_time.count, m.wait_time.count), (1, 1, 1), "{m:?}");
    let held =
        other.semaphore("/m/sem", 1, zklock_core::LockOptions::default()).unwrap().acquire(Some(5 * SEC)).unwrap();
    let e = sem.acquire(Some(std::time::Duration::from_millis(500))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    let m = c.metrics();
    assert_eq!((m.acquires_timed_out, m.hold_time.count), (1, 1), "no hold for a lease not granted: {m:?}");
    assert!(m.hold_time.sum_seconds < 0.4, "the wait is no hold: {:?}", m.hold_time);
    held.release().unwrap();
}

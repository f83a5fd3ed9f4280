//! Revocation (Curator-compatible): `Client::revoke` writes `__REVOKE__` to
//! a holder's node; the holder's `on_revocation` callbacks are told, and
//! it keeps the lock until it decides to release. (Both directions with
//! the real Curator: `interop.rs`, `curator_revocation_both_ways`.)

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::{connect, queue, server};
use zklock_core::{ErrorKind, LockState};

const SEC: Duration = Duration::from_secs(1);

#[test]
fn a_holder_is_told_of_each_request_and_decides() {
    let zk = server();
    let hosts = zk.connect_string();
    let (holder, asker) = (connect(&hosts), connect(&hosts));
    let lock = holder.lock("/revoke/lock").unwrap();
    let g = lock.acquire(Some(5 * SEC)).unwrap();
    assert!(!g.revocation_requested());
    let (tx, rx) = mpsc::channel();
    let sub = g.on_revocation(move || {
        let _ = tx.send(());
    });
    assert!(asker.revoke(&g.node_path()).unwrap());
    rx.recv_timeout(10 * SEC).expect("told");
    assert!(g.revocation_requested());
    // Asked again: told again.
    assert!(asker.revoke(&g.node_path()).unwrap());
    rx.recv_timeout(10 * SEC).expect("told again");
    // Registered after a request: called once soon.
    let (late_tx, late_rx) = mpsc::channel();
    let _late = g.on_revocation(move || {
        let _ = late_tx.send(());
    });
    late_rx.recv_timeout(5 * SEC).expect("a late callback hears of the earlier request");
    // Taken back: not called again.
    sub.cancel();
    assert!(asker.revoke(&g.node_path()).unwrap());
    late_rx.recv_timeout(10 * SEC).expect("the other callback still is");
    assert!(rx.recv_timeout(SEC).is_err(), "a cancelled callback is not called");
    // The holder keeps the lock until it decides.
    assert_eq!(g.state(), LockState::Held);
    g.check().unwrap();
    assert_eq!(queue(&asker, "/revoke/lock").len(), 1);
    g.release().unwrap();
    assert!(queue(&asker, "/revoke/lock").is_empty());
    assert!(!asker.revoke(&g.node_path()).unwrap(), "the node is gone");
    assert_eq!(asker.revoke("no-slash").unwrap_err().kind(), ErrorKind::InvalidPath);
}

/// A request written to a waiter's node before its grant is not lost (as
/// Curator's revocable holder reads its node when granted): the first
/// `on_revocation` reads the node; a lease waiter that saw the change
/// reads it at the grant (outside attack round 18, F5).
#[test]
fn a_request_made_while_the_acquire_waited_is_told_once_granted() {
    let zk = server();
    let hosts = zk.connect_string();
    let (holder, waiter, asker) = (connect(&hosts), connect(&hosts), connect(&hosts));
    for (path, lease) in [("/revoke/early-lock", false), ("/revoke/early-sem", true)] {
        let make = |c: &zklock_core::Client| {
            if lease {
                c.semaphore(path, 1, zklock_core::LockOptions::default()).unwrap()
            } else {
                c.lock(path).unwrap()
            }
        };
        let queue_path = if lease { format!("{path}/leases") } else { path.to_owned() };
        let held = make(&holder).acquire(Some(5 * SEC)).unwrap();
        let lock = make(&waiter);
        let waiting = std::thread::spawn(move || lock.acquire(Some(10 * SEC)));
        let mut nodes = Vec::new();
        for _ in 0..200 {
            nodes = queue(&asker, &queue_path);
            if nodes.len() == 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(nodes.len(), 2, "{path}: the waiter queued");
        let node = format!("{queue_path}/{}", nodes[1]);
        assert!(asker.revoke(&node).unwrap());
        std::thread::sleep(Duration::from_millis(200));
        held.release().unwrap();
        let g = waiting.join().unwrap().unwrap();
        assert_eq!(g.node_path(), node);
        let (tx, rx) = mpsc::channel();
        let _sub = g.on_revocation(move || {
            let _ = tx.send(());
        });
        rx.recv_timeout(10 * SEC).unwrap_or_else(|_| panic!("{path}: the request before the grant is told"));
        assert!(rx.recv_timeout(Duration::from_millis(500)).is_err(), "{path}: told once, however many reads found it");
        assert!(g.revocation_requested());
        g.release().unwrap();
    }
}

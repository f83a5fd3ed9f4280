//! A reentrant guard's release racing the release of the node's last
//! other guard (outside attack round 32, F2). Its own test binary: it
//! stalls the process at a fault point named in its environment (the
//! `fault-points` feature, `zklock-core/src/fault.rs`).
#![cfg(feature = "fault-points")]

mod common;

use std::time::Duration;

use zklock_core::{AcquireOptions, LockMode, Owner, ReleaseStatus};

/// Two guards of one owner on one node. The inner one's release (the
/// count falls to 1) is stalled right after it let the handle's slot go;
/// meanwhile the other guard's release, the last, deletes the node. The
/// inner release reports `Released`: the lock was released by its owner,
/// not lost. (It failed `NotHeld`, "the lock was released", when it read
/// the lock's state after letting the slot go: 3 of 40 of the attacker's
/// chaos runs.)
#[test]
fn an_inner_release_racing_the_last_one_reports_released() {
    // Set before any thread of this binary starts a client: read by the
    // fault point when it is reached.
    std::env::set_var("ZKLOCK_FAULT_STALL", "after-inner-release");
    std::env::set_var("ZKLOCK_FAULT_STALL_MS", "1500");
    let zk = common::server();
    let c = common::connect(&zk.connect_string());
    let lock = common::reentrant_lock_of(&c, "/release-race", LockMode::Exclusive);
    let owner = Owner::new();
    let outer = lock.acquire(AcquireOptions::new().timeout(Some(Duration::from_secs(5))).owner(owner)).unwrap();
    let inner = lock.acquire(AcquireOptions::new().timeout(Some(Duration::from_secs(5))).owner(owner)).unwrap();
    assert_eq!(outer.node_path(), inner.node_path(), "reentered");
    let t = std::thread::spawn(move || inner.release());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(outer.release().unwrap(), ReleaseStatus::Released);
    let status = t.join().unwrap();
    assert_eq!(status.unwrap(), ReleaseStatus::Released, "the inner release");
    assert!(common::queue(&c, "/release-race").is_empty(), "the node is gone");
}

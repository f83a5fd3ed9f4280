//! The lock's promises when the holder's or a waiter's server is cut off
//! from the rest of the ensemble (issue 13, hole 2): the partitioned
//! follower answers reads from its own copy while the leader expires the
//! sessions of its clients. Checked from outside: other clients' grants,
//! timed on one monotonic clock.

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::{queue, wait_until};
use zklock_core::{Client, Guard, Lock, LockOptions};
use zklock_harness::{Cluster, ClusterOptions};

const SEC: Duration = Duration::from_secs(1);

/// The holder's server is cut off from the other members (its quorum and
/// election links silent) while the holder stays connected to it. That
/// follower keeps answering reads from its own copy for `syncLimit x
/// tickTime` (5 s here), while the leader expires the holder's session (3 s)
/// and grants the lock to a waiter on another server. The holder's
/// `check()` must fail before that grant: the safety clock may only move on
/// evidence that the leader heard from the session (before the fix, the
/// heartbeat was a read the follower answered by itself).
#[test]
fn a_holder_on_a_server_cut_off_from_the_quorum_fails_check_before_anyone_else_is_granted() {
    holder_cut_off("/cut-holder", |c| c.lock("/cut-holder").unwrap());
}

/// The same for a semaphore's lease (one lease: the waiter's grant is the
/// one that would make two holders).
#[test]
fn a_lease_holder_on_a_server_cut_off_from_the_quorum_fails_check_before_its_lease_is_taken() {
    holder_cut_off("/cut-lease/leases", |c| c.semaphore("/cut-lease", 1, LockOptions::default()).unwrap());
}

/// The holder of `make`'s lock (whose nodes queue under `queue_path`) on a
/// member that is cut off, a waiter on the others.
fn holder_cut_off(queue_path: &str, make: impl Fn(&Client) -> Lock) {
    let cluster = partitionable_ensemble();
    let leader = cluster.wait_quorum(30 * SEC).unwrap();
    let cut = (0..3).find(|&i| i != leader).unwrap();
    let rest = others(&cluster, cut);
    // The holder reaches only the member that will be cut off.
    let h = Client::connect(common::options(&cluster.client_addr(cut).to_string(), 3 * SEC)).unwrap();
    let w = Client::connect(common::options(&rest, 3 * SEC)).unwrap();
    let gh = make(&h).acquire(Some(10 * SEC)).unwrap();
    let lw = make(&w);
    let tw = std::thread::spawn(move || {
        let g = lw.acquire(Some(60 * SEC));
        (g, Instant::now())
    });
    wait_until("w queued", 10 * SEC, || queue(&w, queue_path).len() == 2);
    let checker = Checker::start(gh);
    cluster.partition(cut).unwrap();
    let partitioned = Instant::now();
    let (gw, granted) = tw.join().unwrap();
    let gw = gw.expect("w gets the lock once the leader expired h's session");
    // Keep checking past the grant: any pass after it is the violation.
    std::thread::sleep(2 * SEC);
    let (last_ok, gh) = checker.stop();
    println!(
        "partition -> h's last good check() {:?}, -> w granted {:?}",
        last_ok.map(|t| t - partitioned),
        granted - partitioned
    );
    let last_ok = last_ok.expect("h's check() passed before the partition");
    assert!(last_ok < granted, "h's check() passed {:?} after w was granted the lock", last_ok - granted);
    assert!(gh.check().is_err());
    gw.release().unwrap();
    cluster.heal_partition(cut).unwrap();
}

/// A waiter on a server cut off from the quorum: the leader expires its
/// session and grants the lock to another client when the holder releases;
/// the waiter, which still sees its stale queue on that server, must never
/// be granted meanwhile.
#[test]
fn a_waiter_on_a_server_cut_off_from_the_quorum_is_not_granted_while_another_holds() {
    let cluster = partitionable_ensemble();
    let leader = cluster.wait_quorum(30 * SEC).unwrap();
    let cut = (0..3).find(|&i| i != leader).unwrap();
    let rest = others(&cluster, cut);
    let a = Client::connect(common::options(&rest, 3 * SEC)).unwrap();
    let c = Client::connect(common::options(&rest, 3 * SEC)).unwrap();
    let w = Client::connect(common::options(&cluster.client_addr(cut).to_string(), 3 * SEC)).unwrap();
    let ga = a.lock("/cut-waiter").unwrap().acquire(Some(10 * SEC)).unwrap();
    let lw = w.lock("/cut-waiter").unwrap();
    let tw = std::thread::spawn(move || lw.acquire(Some(15 * SEC)).map(|g| (g.node_path(), Instant::now())));
    wait_until("w queued", 10 * SEC, || queue(&a, "/cut-waiter").len() == 2);
    cluster.partition(cut).unwrap();
    // The leader expires w's session: its node goes (as seen by the quorum).
    wait_until("w's node expired", 15 * SEC, || queue(&a, "/cut-waiter").len() == 1);
    ga.release().unwrap();
    let gc = c.lock("/cut-waiter").unwrap().acquire(Some(10 * SEC)).expect("c gets the lock");
    let c_granted = Instant::now();
    std::thread::sleep(3 * SEC);
    cluster.heal_partition(cut).unwrap();
    gc.check().expect("c still holds");
    let c_released = Instant::now();
    gc.release().unwrap();
    if let Ok((node, at)) = tw.join().unwrap() {
        assert!(
            at < c_granted || at > c_released,
            "w was granted {node} while c held the lock ({:?} after c's grant)",
            at - c_granted
        );
    }
}

/// A 3-node ensemble whose members can be cut off from each other, with
/// a follower patience (`syncLimit x tickTime` = 5 s) longer than the
/// session timeout the tests use (3 s), as with Debian's stock settings.
fn partitionable_ensemble() -> Cluster {
    zklock_harness::ensure_zookeeper().expect("ZooKeeper installed");
    Cluster::start(ClusterOptions::new().size(3).tick_time_ms(1000).partitionable(true)).expect("ensemble starts")
}

/// The connect string of every member but `cut`.
fn others(cluster: &Cluster, cut: usize) -> String {
    (0..cluster.len()).filter(|&i| i != cut).map(|i| cluster.client_addr(i).to_string()).collect::<Vec<_>>().join(",")
}

/// Calls `check()` on a guard every 5 ms on its own thread and remembers
/// when it last passed.
struct Checker {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<(Option<Instant>, Guard)>,
}

impl Checker {
    fn start(guard: Guard) -> Checker {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut last_ok = None;
            while !s.load(Ordering::SeqCst) {
                if guard.check().is_ok() {
                    last_ok = Some(Instant::now());
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            (last_ok, guard)
        });
        Checker { stop, thread }
    }

    fn stop(self) -> (Option<Instant>, Guard) {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap()
    }
}

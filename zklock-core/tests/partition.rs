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
use zklock_core::{Client, Guard, Lock, LockOptions, ReleaseStatus};
use zklock_harness::{Cluster, ClusterOptions, ProxyGroup};

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

/// The leader stalled (SIGSTOP) for 0.3 T while the holder's connection to
/// a follower is reset: the holder reconnects to the other follower, which
/// answers the connect only once the leader (which revalidates the session)
/// runs again, so late; the client uses that connection (until round 33's
/// F2 it asked the follower once more: a late connect's credit, `T/3` less
/// than its send time, would run the safety clock out, outside attack
/// round 22, F1; now it is credited in full once a write on its connection
/// is answered). The connect revalidated the session through that
/// follower, so it stays the session's owner: the holder is Held again,
/// its release is done at once, and the waiter is granted right after it
/// (round 23, R3: a client that gave up unanswered connects left the
/// session owned by a member it had left; its release failed and the
/// waiter waited a whole session timeout, in 5 of 5 runs). The safety
/// clock never runs out.
#[test]
fn a_reset_while_the_leader_is_stalled_keeps_the_lock_and_its_release() {
    zklock_harness::ensure_zookeeper().expect("ZooKeeper installed");
    let cluster = Cluster::start(ClusterOptions::new().size(3).tick_time_ms(500)).expect("ensemble starts");
    let leader = cluster.wait_quorum(30 * SEC).unwrap();
    let followers: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
    let proxies = ProxyGroup::start(&followers.iter().map(|&i| cluster.client_addr(i)).collect::<Vec<_>>()).unwrap();
    let t = 4 * SEC;
    let h = Client::connect(common::options(&proxies.connect_string(), t)).unwrap();
    let w = Client::connect(common::options(&cluster.connect_string(), t)).unwrap();
    let gh = h.lock("/stalled-leader").unwrap().acquire(Some(10 * SEC)).unwrap();
    let lw = w.lock("/stalled-leader").unwrap();
    let tw = std::thread::spawn(move || {
        let g = lw.acquire(Some(60 * SEC));
        (g, Instant::now())
    });
    wait_until("w queued", 10 * SEC, || queue(&w, "/stalled-leader").len() == 2);
    std::thread::sleep(t + t / 2);
    let ran_out = |g: &Guard| g.safe_until().is_none_or(|u| Instant::now() >= u);
    let began = Instant::now();
    cluster.freeze(leader).unwrap();
    proxies.drop_connections();
    let mut out_at = None;
    while began.elapsed() < t * 3 / 10 {
        if out_at.is_none() && ran_out(&gh) {
            out_at = Some(began.elapsed());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    cluster.resume(leader).unwrap();
    let mut held_again = None;
    while began.elapsed() < 2 * t {
        if out_at.is_none() && ran_out(&gh) {
            out_at = Some(began.elapsed());
        }
        // Suspended from the reset until the reconnect (the leader is
        // stalled until now, so no reconnect can be done yet).
        if held_again.is_none() && gh.check().is_ok() {
            held_again = Some(began.elapsed());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let released_at = Instant::now();
    let status = gh.release();
    let (gw, granted) = tw.join().unwrap();
    println!(
        "stall -> clock ran out {out_at:?}, held again {held_again:?}; release {status:?}, w granted {:?} after it",
        granted.saturating_duration_since(released_at)
    );
    assert!(held_again.is_some(), "the holder is not held again");
    assert_eq!(out_at, None, "the safety clock ran out");
    assert_eq!(status.unwrap(), ReleaseStatus::Released, "the release is done at once");
    let gw = gw.expect("w gets the lock");
    assert!(
        granted - released_at < t / 2,
        "w was granted {:?} after the release (a whole session timeout: the release did not reach the server)",
        granted - released_at
    );
    gw.release().unwrap();
}

/// Outside attack round 33, F2: a leader stalled (SIGSTOP, a GC pause)
/// long enough for the followers to elect a new one, which expires the
/// holder's session `T` after it starts and grants the lock to a waiter.
/// The holder names only the old leader. That leader runs again for a
/// moment (it still believes it leads until its next quorum check) and
/// answers the holder's reconnect from its own session tracker, where the
/// session lives, and its stale tree, where the lock's node is; stalled
/// again at once, it keeps the holder's new connection silent rather than
/// reset. Credited from that connect (its send time less `T/3`), the
/// holder's `check()` passed for 61-868 ms after the waiter was granted
/// (7 of 7 runs). Now nothing on a new connection counts until a write on
/// it is answered, which a leader without a quorum never does: `check()`
/// never passes after the waiter's grant. (The ensemble's `syncLimit` is 2
/// ticks of 500 ms, so that the followers elect within `T/2`; the old
/// leader runs again `0.95 T` after its stall began, and stalls again as
/// soon as the holder passes `check()`, or `T/4` after it ran again. The
/// holder's reconnect may also reach the new leader in time, through the
/// old one back as a follower: its session then lives on, and the waiter
/// gets the lock when the holder releases it at the end.)
#[test]
fn a_leader_deposed_while_stalled_that_runs_again_for_a_moment_revives_no_holder() {
    zklock_harness::ensure_zookeeper().expect("ZooKeeper installed");
    let cluster =
        Cluster::start(ClusterOptions::new().size(3).tick_time_ms(500).sync_limit(2)).expect("ensemble starts");
    let leader = cluster.wait_quorum(30 * SEC).unwrap();
    let t = 4 * SEC;
    let h = Client::connect(common::options(&cluster.client_addr(leader).to_string(), t)).unwrap();
    let w = Client::connect(common::options(&others(&cluster, leader), t)).unwrap();
    let gh = h.lock("/deposed-stalled").unwrap().acquire(Some(10 * SEC)).unwrap();
    let lw = w.lock("/deposed-stalled").unwrap();
    let tw = std::thread::spawn(move || {
        let g = lw.acquire(Some(60 * SEC));
        (g, Instant::now())
    });
    wait_until("w queued", 10 * SEC, || queue(&w, "/deposed-stalled").len() == 2);
    std::thread::sleep(t * 6 / 5);
    // Every instant at which the holder's check() passed.
    let mut passed = Vec::new();
    let mut poll = |until: Instant, stop_at_pass: bool| {
        while Instant::now() < until {
            if gh.check().is_ok() {
                passed.push(Instant::now());
                if stop_at_pass {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    };
    let began = Instant::now();
    cluster.freeze(leader).unwrap();
    poll(began + t * 95 / 100, false);
    let new_leader = cluster.leader();
    cluster.resume(leader).unwrap();
    let resumed = Instant::now();
    let revived = poll(resumed + t / 4, true);
    cluster.freeze(leader).unwrap();
    let stalled_again = Instant::now();
    poll(stalled_again + t, false);
    cluster.resume(leader).unwrap();
    poll(Instant::now() + t / 2, false);
    // If the holder's session lived on (its reconnect reached the new
    // leader in time, through the old one back as a follower), it still
    // holds: let the waiter have the lock.
    let release = gh.release();
    let (gw, granted) = tw.join().unwrap();
    let at = |i: Instant| i.saturating_duration_since(began);
    println!(
        "stall at 0, new leader {new_leader:?}; resumed {:?} (holder passed check() then: {revived}), stalled again {:?}; \
         w {} at {:?}; the holder's check() passed last at {:?}; its release at the end: {release:?}",
        at(resumed),
        at(stalled_again),
        match &gw {
            Ok(_) => "granted".to_string(),
            Err(e) => format!("not granted ({e})"),
        },
        at(granted),
        passed.last().map(|&p| at(p))
    );
    assert!(new_leader.is_some_and(|l| l != leader), "no new leader during the stall: {new_leader:?}");
    if gw.is_ok() {
        let after: Vec<Duration> = passed.iter().filter(|&&p| p > granted).map(|&p| p - granted).collect();
        assert!(
            after.is_empty(),
            "the holder's check() passed {} times after w was granted (first {:?} after)",
            after.len(),
            after.first()
        );
    }
    gw.expect("w gets the lock once the new leader expired the holder's session").release().unwrap();
}

/// Outside attack round 34, O1: with the servers' eager ACL check
/// (`zookeeper.enableEagerACLCheck=true`), a write the session may not make
/// is answered at once, without a transaction (zxid 0) and ahead of earlier
/// replies. The reconnect's write went to the chroot's root, which this
/// session may read but not write: answered so, it broke the connection at
/// each reconnect (and, counted, kept `check()` passing after a waiter's
/// grant in round 33's schedule). The write now targets a node nobody
/// makes, which the eager check passes and the quorum commits as NoNode:
/// a session timeout after a reset the lock is held on the new
/// connection's credits. (With the write to the chroot's root, `check()`
/// fails then: checked.) Its name has a token drawn per process: here a
/// third party made `.zklock-write-probe`, the name it had, with the same
/// read-only ACL (outside attack round 34b, F1: with that fixed name the
/// lock stayed suspended after a reset; checked).
#[test]
fn a_reconnect_counts_under_an_eager_acl_check_where_the_chroot_is_not_writable() {
    zklock_harness::ensure_zookeeper().expect("ZooKeeper installed");
    let cluster =
        Cluster::start(ClusterOptions::new().size(3).tick_time_ms(500).jvm_arg("-Dzookeeper.enableEagerACLCheck=true"))
            .expect("ensemble starts");
    let leader = cluster.wait_quorum(30 * SEC).unwrap();
    let raw = common::Raw::connect(&cluster.connect_string());
    // Read, create and delete for anyone; no write.
    let no_write = zklock_zk::Acl { perms: 1 | 4 | 8, scheme: "world".into(), id: "anyone".into() };
    for node in ["/eager", "/eager/.zklock-write-probe"] {
        raw.rt
            .block_on(
                raw.zk.create(node, b"", std::slice::from_ref(&no_write), zklock_zk::CreateMode::Persistent).value(),
            )
            .expect("made");
    }
    let follower = (0..3).find(|&i| i != leader).unwrap();
    let proxies = ProxyGroup::start(&[cluster.client_addr(follower)]).unwrap();
    let t = 4 * SEC;
    let h = Client::connect(common::options(&format!("{}/eager", proxies.connect_string()), t)).unwrap();
    let g = h.lock("/l").unwrap().acquire(Some(10 * SEC)).unwrap();
    std::thread::sleep(t / 2);
    proxies.drop_connections();
    // Past anything the old connection's credits cover.
    std::thread::sleep(t);
    g.check().expect("held a session timeout after the reset, on the new connection's credits");
    g.release().unwrap();
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

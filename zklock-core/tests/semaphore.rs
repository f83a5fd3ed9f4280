//! Counting semaphores (`Client::semaphore`, Curator
//! `InterProcessSemaphoreV2` layout): never more than the permits hold at
//! once, every contender gets a lease, try/timeout/cancel leave nothing
//! behind (no lease node, no mutex node), a lost create reply of a lease
//! is recovered, a holder that loses its lease (third-party delete, session
//! expiry) knows before a waiter gets it, a waiter whose session expires
//! queues again, bad arguments are refused at once.

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{connect, options, server, wait_until, Raw};
use zklock_core::{AcquireOptions, CancelToken, Client, ErrorKind, LockMode, LockOptions, LockState};
use zklock_harness::Proxy;

const LONG: Duration = Duration::from_secs(30);
const SEC: Duration = Duration::from_secs(1);

fn semaphore(c: &Client, path: &str, permits: usize) -> zklock_core::Lock {
    c.semaphore(path, permits, LockOptions::default()).expect("semaphore")
}

/// The lease nodes and the mutex nodes of the semaphore at `path`.
fn nodes(raw: &Raw, path: &str) -> (Vec<String>, Vec<String>) {
    (raw.children(&format!("{path}/leases")), raw.children(&format!("{path}/locks")))
}

#[test]
fn at_most_permits_hold_at_once_and_every_contender_gets_a_lease() {
    let zk = server();
    let hosts = zk.connect_string();
    let raw = Arc::new(Raw::connect(&hosts));
    let holders = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let most_nodes = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..3).map(|_| connect(&hosts)).collect();
    let mut threads = Vec::new();
    for i in 0..6 {
        let sem = semaphore(&clients[i % 3], "/sem", 2);
        let (holders, most, most_nodes, raw) = (holders.clone(), most.clone(), most_nodes.clone(), raw.clone());
        threads.push(std::thread::spawn(move || {
            for _ in 0..4 {
                let lease = sem.acquire(Some(LONG)).expect("a lease");
                let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                // ZooKeeper's own record: the lease nodes, holders plus at
                // most the one waiter that holds the mutex.
                most_nodes.fetch_max(raw.children("/sem/leases").len(), Ordering::SeqCst);
                lease.check().expect("held");
                std::thread::sleep(Duration::from_millis(30));
                holders.fetch_sub(1, Ordering::SeqCst);
                lease.release().expect("released");
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(most.load(Ordering::SeqCst), 2, "two leases held at once, never three");
    assert!(most_nodes.load(Ordering::SeqCst) <= 3, "at most permits + 1 lease nodes");
    assert_eq!(nodes(&raw, "/sem"), (vec![], vec![]), "no lease or mutex node left");
}

#[test]
fn lease_nodes_have_curators_layout_and_try_timeout_cancel_leave_nothing() {
    let zk = server();
    let hosts = zk.connect_string();
    let raw = Raw::connect(&hosts);
    let (a, b) = (connect(&hosts), connect(&hosts));
    let sem = a.semaphore("/sem-try", 2, LockOptions::default().data("host-a")).expect("semaphore");
    assert_eq!((sem.mode(), sem.permits(), sem.path()), (LockMode::Lease, 2, "/sem-try"));
    // One handle, two leases: not reentrant, each acquire its own.
    let first = sem.acquire(Some(LONG)).expect("first lease");
    let second = sem.acquire(Some(LONG)).expect("second lease");
    let (leases, mutex) = nodes(&raw, "/sem-try");
    assert_eq!(leases.len(), 2);
    assert!(mutex.is_empty(), "the mutex is released once a lease is held: {mutex:?}");
    for (g, name) in [(&first, &leases), (&second, &leases)] {
        let node = g.node_path();
        let short = node.strip_prefix("/sem-try/leases/").expect("under leases");
        assert!(short.starts_with("_c_") && short.contains("-lease-"), "{node}");
        assert!(name.iter().any(|n| n == short));
    }
    assert!(second.fencing_token() > first.fencing_token());

    let other = semaphore(&b, "/sem-try", 2);
    assert!(other.try_acquire().expect("try").is_none(), "both leases taken");
    let err = other.acquire(Some(Duration::from_millis(300))).expect_err("times out");
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert_eq!(nodes(&raw, "/sem-try").0.len(), 2, "the timed-out waiter's lease node is gone");
    // A waiter cancelled by its token while it waits.
    let token = CancelToken::new();
    let waiting = {
        let (other, token) = (other.clone(), token.clone());
        std::thread::spawn(move || other.acquire(AcquireOptions::new().cancel_token(token)))
    };
    wait_until("the waiter's lease node", LONG, || nodes(&raw, "/sem-try").0.len() == 3);
    assert_eq!(nodes(&raw, "/sem-try").1.len(), 1, "the waiter holds the mutex while it waits");
    token.cancel();
    assert_eq!(waiting.join().unwrap().expect_err("cancelled").kind(), ErrorKind::Cancelled);
    wait_until("nothing of the waiter left", LONG, || nodes(&raw, "/sem-try") == (leases.clone(), vec![]));
    // A lease returned is free for the next.
    first.release().expect("released");
    let third = other.try_acquire().expect("try").expect("a lease is free");
    third.check().expect("held");
    assert_eq!(third.state(), LockState::Held);
    drop((second, third));
    assert_eq!(nodes(&raw, "/sem-try"), (vec![], vec![]));
}

#[test]
fn a_lease_whose_node_is_deleted_is_lost_before_the_waiter_gets_it() {
    let zk = server();
    let hosts = zk.connect_string();
    let raw = Raw::connect(&hosts);
    let (a, b) = (connect(&hosts), connect(&hosts));
    let held = semaphore(&a, "/sem-del", 1).acquire(Some(LONG)).expect("the lease");
    let waiter = semaphore(&b, "/sem-del", 1);
    let next = std::thread::spawn(move || waiter.acquire(Some(LONG)));
    wait_until("b waits", LONG, || nodes(&raw, "/sem-del").0.len() == 2);
    raw.delete(&held.node_path());
    let next = next.join().unwrap().expect("b gets the lease");
    assert_eq!(held.check().expect_err("a's lease is gone").kind(), ErrorKind::LockLost);
    next.check().expect("b holds");
    assert_eq!(held.release().expect_err("release reports the loss").kind(), ErrorKind::LockLost);
}

#[test]
fn a_holder_whose_session_expires_knows_before_a_waiter_gets_its_lease() {
    let zk = server();
    let hosts = zk.connect_string();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let a = Client::connect(options(&proxy.addr().to_string(), 2 * SEC)).unwrap();
    let b = connect(&hosts);
    let raw = Raw::connect(&hosts);
    let (held, other) = {
        let sem = semaphore(&a, "/sem-exp", 2);
        (sem.acquire(Some(LONG)).unwrap(), sem.acquire(Some(LONG)).unwrap())
    };
    let held = Arc::new(held);
    let g = held.clone();
    let checker = std::thread::spawn(move || loop {
        if g.check().is_err() {
            return Instant::now();
        }
        std::thread::sleep(Duration::from_millis(2));
    });
    let waiter = semaphore(&b, "/sem-exp", 2);
    let next = std::thread::spawn(move || {
        let g = waiter.acquire(Some(60 * SEC)).unwrap();
        (Instant::now(), g)
    });
    wait_until("b waits", LONG, || nodes(&raw, "/sem-exp").0.len() == 3);
    proxy.blackhole();
    let (granted_at, lease) = next.join().unwrap();
    let check_failed_at = checker.join().unwrap();
    assert!(check_failed_at < granted_at, "a's check() still passed when b was granted a lease");
    lease.check().unwrap();
    assert!(other.check().is_err(), "a's other lease went with the session too");
    proxy.heal();
    wait_until("a learns it lost its lease", LONG, || held.state() == LockState::Lost);
    drop(lease);
    wait_until("b's lease returned", LONG, || nodes(&raw, "/sem-exp").0.is_empty());
}

#[test]
fn a_waiter_whose_session_expires_queues_again_and_a_lost_create_reply_is_recovered() {
    let zk = server();
    let hosts = zk.connect_string();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let raw = Raw::connect(&hosts);
    let a = connect(&hosts);
    let b = Client::connect(options(&proxy.addr().to_string(), 2 * SEC)).unwrap();
    let held = semaphore(&a, "/sem-wait", 1).acquire(Some(LONG)).unwrap();
    let old_session = b.session_id().unwrap();
    let waiter = semaphore(&b, "/sem-wait", 1);
    let w = waiter.clone();
    let t = std::thread::spawn(move || w.acquire(Some(60 * SEC)));
    wait_until("b waits", LONG, || nodes(&raw, "/sem-wait").0.len() == 2);
    proxy.blackhole();
    wait_until("the server expired b's session (its lease and mutex nodes went)", LONG, || {
        let (leases, mutex) = nodes(&raw, "/sem-wait");
        leases.len() == 1 && mutex.is_empty()
    });
    proxy.heal();
    wait_until("b waits again", LONG, || nodes(&raw, "/sem-wait").0.len() == 2);
    held.release().unwrap();
    let lease = t.join().unwrap().expect("b gets the lease after queueing again");
    assert_ne!(lease.session_id(), old_session);
    lease.release().unwrap();

    // The create reply of a lease node is lost: the node is found by its
    // protected prefix and adopted, none is left.
    let held = semaphore(&a, "/sem-wait", 1).acquire(Some(LONG)).unwrap();
    proxy.drop_next_create_reply_matching("/sem-wait/leases/");
    let w = waiter.clone();
    let t = std::thread::spawn(move || w.acquire(Some(60 * SEC)));
    wait_until("the lease create reply was dropped", LONG, || proxy.dropped_replies() == 1);
    wait_until("b waits once", LONG, || nodes(&raw, "/sem-wait").0.len() == 2);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(nodes(&raw, "/sem-wait").0.len(), 2, "exactly one lease node of b's");
    held.release().unwrap();
    let lease = t.join().unwrap().expect("b gets the lease");
    assert_eq!(nodes(&raw, "/sem-wait").0.len(), 1);
    lease.release().unwrap();
    assert_eq!(nodes(&raw, "/sem-wait"), (vec![], vec![]));
}

/// A third party deletes the mutex node of a waiter (found by the outside
/// attack: the waiter went on waiting with its lease node, the next one took
/// the mutex and queued too, and with one permit each counted the other:
/// nobody was granted once the holder released). A waiter whose mutex is
/// lost starts over, so both get the lease in turn.
#[test]
fn a_waiter_whose_mutex_node_is_deleted_starts_over_and_nobody_is_stuck() {
    let zk = server();
    let hosts = zk.connect_string();
    let raw = Raw::connect(&hosts);
    let held = semaphore(&connect(&hosts), "/sem-mutex", 1).acquire(Some(LONG)).unwrap();
    let mut waiters = Vec::new();
    for i in 0..2 {
        let sem = semaphore(&connect(&hosts), "/sem-mutex", 1);
        waiters.push(std::thread::spawn(move || {
            let lease = sem.acquire(Some(LONG)).unwrap_or_else(|e| panic!("waiter {i}: {e}"));
            std::thread::sleep(Duration::from_millis(100));
            lease.release().unwrap();
        }));
        wait_until("the waiter holds the mutex or queues on it", LONG, || nodes(&raw, "/sem-mutex").1.len() == i + 1);
    }
    let mut mutex = nodes(&raw, "/sem-mutex").1;
    mutex.sort_by_key(|n| n[n.len() - 10..].to_owned());
    raw.delete(&format!("/sem-mutex/locks/{}", mutex[0]));
    // The second waiter takes the mutex and queues its lease node.
    wait_until("the second waiter's lease node", LONG, || nodes(&raw, "/sem-mutex").0.len() >= 2);
    held.release().unwrap();
    for w in waiters {
        w.join().unwrap();
    }
    wait_until("nothing left", LONG, || nodes(&raw, "/sem-mutex") == (vec![], vec![]));
}

#[test]
fn bad_semaphore_arguments_are_refused_at_once() {
    let zk = server();
    let c = connect(&zk.connect_string());
    let kind = |r: zklock_core::Result<zklock_core::Lock>| r.expect_err("refused").kind();
    assert_eq!(kind(c.semaphore("/s", 0, LockOptions::default())), ErrorKind::InvalidArgument);
    assert_eq!(kind(c.semaphore("/s", 1 << 31, LockOptions::default())), ErrorKind::InvalidArgument);
    assert_eq!(kind(c.semaphore("/s", 2, LockOptions::default().reentrant())), ErrorKind::InvalidArgument);
    assert_eq!(kind(c.semaphore("/s", 2, LockOptions::default().data("__REVOKE__"))), ErrorKind::InvalidArgument);
    assert_eq!(kind(c.semaphore("s", 2, LockOptions::default())), ErrorKind::InvalidPath);
    assert_eq!(kind(c.lock_with("/s", LockMode::Lease, LockOptions::default())), ErrorKind::InvalidArgument);
    let multi = c.multi_lock(&[("/s", LockMode::Lease)]).expect_err("no lease in a multi-lock");
    assert_eq!(multi.kind(), ErrorKind::InvalidArgument);
    let sem = semaphore(&c, "/s", i32::MAX as usize);
    let g = sem.acquire(Some(LONG)).expect("a lease of many");
    assert_eq!(g.downgrade().expect_err("a lease has no read side").kind(), ErrorKind::InvalidArgument);
    g.release().unwrap();
}

/// Curator's `testThreadedLeaseIncrease` (InterProcessSemaphoreV2 with a
/// SharedCount): a waiter gets in as soon as the shared count grows; when
/// it shrinks, leases held stay and new ones wait until fewer are held than
/// the count. The count is stored as Curator's SharedCount stores it.
#[test]
fn a_semaphore_on_a_shared_count_follows_it() {
    let zk = server();
    let hosts = zk.connect_string();
    let c = connect(&hosts);
    let raw = Raw::connect(&hosts);
    c.set_shared_count("/counts/sem", 1).unwrap();
    assert_eq!(raw.block_on(raw.zk.get_data("/counts/sem").value()).unwrap().0, [0, 0, 0, 1], "4 bytes, big-endian");
    let sem = c.semaphore_with_count("/shared-sem", "/counts/sem", LockOptions::default()).unwrap();
    assert_eq!((sem.permits(), sem.shared_count_path()), (0, Some("/counts/sem")));
    let a = sem.acquire(Some(LONG)).unwrap();
    let waiter = {
        let sem = sem.clone();
        std::thread::spawn(move || sem.acquire(Some(LONG)))
    };
    std::thread::sleep(Duration::from_millis(500));
    assert!(!waiter.is_finished(), "one permit, held");
    c.set_shared_count("/counts/sem", 2).unwrap();
    let started = Instant::now();
    let b = waiter.join().unwrap().unwrap();
    assert!(started.elapsed() < 10 * SEC);
    assert_eq!(c.shared_count("/counts/sem").unwrap(), 2);
    // Shrunk to 1 with two held: both stay, and a third gets in only once
    // fewer than 1 are held.
    c.set_shared_count("/counts/sem", 1).unwrap();
    a.check().unwrap();
    b.check().unwrap();
    assert!(sem.try_acquire().unwrap().is_none());
    a.release().unwrap();
    assert!(sem.try_acquire().unwrap().is_none(), "one held, count 1");
    b.release().unwrap();
    sem.try_acquire().unwrap().expect("none held").release().unwrap();
    // Set by someone else, as Curator's SharedCount writes it.
    raw.block_on(raw.zk.set_data("/counts/sem", &3i32.to_be_bytes(), -1).value()).unwrap();
    assert_eq!(c.shared_count("/counts/sem").unwrap(), 3);
    let held: Vec<_> = (0..3).map(|_| sem.acquire(Some(LONG)).unwrap()).collect();
    assert!(sem.try_acquire().unwrap().is_none());
    drop(held);
}

#[test]
fn a_shared_count_that_is_missing_or_malformed_is_refused_clearly() {
    let zk = server();
    let hosts = zk.connect_string();
    let c = connect(&hosts);
    let raw = Raw::connect(&hosts);
    let sem = c.semaphore_with_count("/sc-sem", "/sc-count", LockOptions::default()).unwrap();
    let e = sem.acquire(Some(5 * SEC)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ZooKeeper, "{e}");
    assert!(e.message().contains("does not exist"), "{e}");
    raw.create("/sc-count", zklock_zk::CreateMode::Persistent);
    let e = sem.acquire(Some(5 * SEC)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("4-byte"), "{e}");
    assert_eq!(c.shared_count("/sc-count").unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert!(raw.children("/sc-sem/leases").is_empty(), "nothing left behind");
    let bad = c.semaphore_with_count("/sc-sem", "/sc-sem/count", LockOptions::default()).unwrap_err();
    assert_eq!(bad.kind(), ErrorKind::InvalidArgument);
    assert_eq!(c.set_shared_count("/sc-count", -1).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(c.set_shared_count("rel", 1).unwrap_err().kind(), ErrorKind::InvalidPath);
    // An ancestor of the semaphore, whose parents are containers (outside
    // attack round 18, F2), and a container made as a lock's parent (F1):
    // ZooKeeper would delete the count with it.
    let e = c.semaphore_with_count("/sc-pool/sem", "/sc-pool", LockOptions::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("ancestor"), "{e}");
    let held = c.lock("/sc-parent/lock").unwrap().acquire(Some(5 * SEC)).unwrap();
    let e = c.set_shared_count("/sc-parent", 3).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("children"), "{e}");
    assert_eq!(raw.exists("/sc-parent").unwrap().version, 0, "nothing written");
    held.release().unwrap();
    // A node that had children once (a released lock path, whose container
    // ZooKeeper reaps; outside attack round 19, G1).
    raw.create("/sc-had", zklock_zk::CreateMode::Persistent);
    raw.create("/sc-had/child", zklock_zk::CreateMode::Persistent);
    raw.delete("/sc-had/child");
    let e = c.set_shared_count("/sc-had", 3).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
}

/// A counted waiter keeps its place across connection trouble as any
/// waiter does: a blip while the count is rewritten (its re-read fails for
/// the connection), and its session's expiry (outside attack round 19, G5
/// and G3: it failed `ConnectionLoss` / `SessionExpired` instead).
#[test]
fn a_counted_waiter_keeps_waiting_across_a_blip_and_an_expiry() {
    let zk = server();
    let hosts = zk.connect_string();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let direct = connect(&hosts);
    let raw = Raw::connect(&hosts);
    let waiter_client = Client::connect(options(&proxy.addr().to_string(), 2 * SEC)).unwrap();
    direct.set_shared_count("/counts/trouble", 1).unwrap();
    let opts = LockOptions::default();
    let a = direct.semaphore_with_count("/trouble", "/counts/trouble", opts.clone()).unwrap();
    let sem = waiter_client.semaphore_with_count("/trouble", "/counts/trouble", opts).unwrap();
    for round in ["blip", "expiry"] {
        let held = a.acquire(Some(LONG)).unwrap();
        let s2 = sem.clone();
        let waiter = std::thread::spawn(move || s2.acquire(Some(LONG)));
        wait_until("the waiter queued", LONG, || nodes(&raw, "/trouble").0.len() == 2);
        std::thread::sleep(Duration::from_millis(300));
        if round == "blip" {
            // Its re-read of the count goes out on a connection that drops.
            proxy.blackhole();
            direct.set_shared_count("/counts/trouble", 1).unwrap();
            std::thread::sleep(Duration::from_millis(1200));
            proxy.heal();
        } else {
            proxy.blackhole();
            std::thread::sleep(Duration::from_millis(3500)); // past the 2 s session
            proxy.heal();
            direct.set_shared_count("/counts/trouble", 1).unwrap();
        }
        std::thread::sleep(SEC);
        assert!(!waiter.is_finished(), "{round}: the waiter stopped waiting");
        held.release().unwrap();
        let g = waiter.join().unwrap().unwrap_or_else(|e| panic!("{round}: {e}"));
        g.release().unwrap();
    }
}

/// A waiter whose count node is deleted, or stops holding a count, while it
/// waits fails and leaves nothing (outside attack round 17, F1: it was
/// granted later on the count it had read before, also with the count then
/// set to 0). A negative count is read as written and grants nobody (F5).
#[test]
fn a_count_that_goes_or_breaks_while_a_waiter_waits_fails_the_wait() {
    let zk = server();
    let hosts = zk.connect_string();
    let c = connect(&hosts);
    let raw = Raw::connect(&hosts);
    for (name, breaks) in [("deleted", &[][..]), ("malformed", &b"abc"[..])] {
        let count = format!("/cw-count-{name}");
        let path = format!("/cw-sem-{name}");
        c.set_shared_count(&count, 1).unwrap();
        let sem = c.semaphore_with_count(&path, &count, LockOptions::default()).unwrap();
        let a = sem.acquire(Some(LONG)).unwrap();
        let waiter = {
            let sem = sem.clone();
            std::thread::spawn(move || sem.acquire(Some(LONG)))
        };
        wait_until("the waiter's lease node", 10 * SEC, || raw.children(&format!("{path}/leases")).len() == 2);
        if breaks.is_empty() {
            raw.delete(&count);
        } else {
            raw.block_on(raw.zk.set_data(&count, breaks, -1).value()).unwrap();
        }
        let e = waiter.join().unwrap().map(|_| ()).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::ZooKeeper | ErrorKind::InvalidArgument), "{name}: {e}");
        assert_eq!(raw.children(&format!("{path}/leases")).len(), 1, "{name}: only A's lease is left");
        // Set to 0 afterwards (F1's worst case): nobody new is granted.
        c.set_shared_count(&count, 0).unwrap();
        a.release().unwrap();
        assert!(sem.try_acquire().unwrap().is_none(), "{name}: count 0");
    }
    raw.block_on(raw.zk.set_data("/cw-count-deleted", &(-1i32).to_be_bytes(), -1).value()).unwrap();
    assert_eq!(c.shared_count("/cw-count-deleted").unwrap(), -1);
    let sem = c.semaphore_with_count("/cw-sem-deleted", "/cw-count-deleted", LockOptions::default()).unwrap();
    assert!(sem.try_acquire().unwrap().is_none(), "a negative count grants nobody");
}

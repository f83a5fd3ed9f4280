//! The exclusive lock under faults, through the harness's TCP proxy: lost
//! create replies, session expiry while waiting and while holding, our node
//! deleted by a third party, release / cancel / timeout during a disconnect.

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{lock_of, options, queue, server, wait_until, Raw};
use zklock_core::{Client, ErrorKind, LockMode, LockOptions, LockState, ReleaseStatus};
use zklock_harness::{Proxy, ProxyGroup};

const SEC: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

fn via_proxy(proxy: &Proxy, session: Duration) -> Client {
    Client::connect(options(&proxy.addr().to_string(), session)).expect("connects through the proxy")
}

#[test]
fn create_reply_lost_is_recovered_without_leak_or_deadlock() {
    for mode in common::MODES {
        create_reply_lost_is_recovered_without_leak_or_deadlock_in(mode);
    }
}

fn create_reply_lost_is_recovered_without_leak_or_deadlock_in(mode: LockMode) {
    let zk = server();
    let hosts = zk.connect_string();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let a = via_proxy(&proxy, 4 * SEC);
    let b = common::connect(&hosts);
    // b holds, so a has to queue after recovering its node.
    let gb = b.write_lock("/lost-reply").unwrap().acquire(None).unwrap();
    let la = Arc::new(lock_of(&a, "/lost-reply", mode));
    proxy.drop_next_create_reply();
    let l = la.clone();
    let t = std::thread::spawn(move || l.acquire(Some(20 * SEC)));
    wait_until("the create reply was dropped", 10 * SEC, || proxy.dropped_replies() == 1);
    wait_until("a is queued once", 10 * SEC, || queue(&b, "/lost-reply").len() == 2);
    std::thread::sleep(Duration::from_millis(300));
    let q = b.participants("/lost-reply").unwrap();
    assert_eq!(q.len(), 2, "exactly one node of a's: {q:?}");
    gb.release().unwrap();
    let ga = t.join().unwrap().expect("a gets the lock after b releases");
    assert_eq!(ga.session_id(), q[1].session_id);
    assert_eq!(ga.node_path(), format!("/lost-reply/{}", q[1].name), "a adopted the node it created");
    ga.release().unwrap();
    assert!(queue(&b, "/lost-reply").is_empty());
    // And an uncontended acquire through a lost reply also works.
    proxy.drop_next_create_reply();
    let g = la.acquire(Some(20 * SEC)).unwrap();
    assert_eq!(proxy.dropped_replies(), 2);
    assert_eq!(queue(&b, "/lost-reply").len(), 1);
    drop(g);
    assert!(queue(&b, "/lost-reply").is_empty());
}

#[test]
fn session_expiry_while_waiting_requeues_with_a_new_session() {
    for mode in common::MODES {
        session_expiry_while_waiting_requeues_with_a_new_session_in(mode);
    }
}

fn session_expiry_while_waiting_requeues_with_a_new_session_in(mode: LockMode) {
    let zk = server();
    let hosts = zk.connect_string();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let a = common::connect(&hosts);
    let b = via_proxy(&proxy, 2 * SEC);
    let ga = a.write_lock("/expire-wait").unwrap().acquire(None).unwrap();
    let old_session = b.session_id().unwrap();
    let lb = lock_of(&b, "/expire-wait", mode);
    let t = std::thread::spawn(move || lb.acquire(Some(60 * SEC)));
    wait_until("b queued", 5 * SEC, || queue(&a, "/expire-wait").len() == 2);
    proxy.blackhole();
    wait_until("the server expired b's session", 15 * SEC, || queue(&a, "/expire-wait").len() == 1);
    proxy.heal();
    wait_until("b queued again", 20 * SEC, || queue(&a, "/expire-wait").len() == 2);
    ga.release().unwrap();
    let gb = t.join().unwrap().expect("b gets the lock after re-queueing");
    assert_ne!(gb.session_id(), old_session, "a new session");
    assert_eq!(gb.session_id(), b.session_id().unwrap());
    gb.check().unwrap();
}

#[test]
fn session_expiry_while_holding_fails_check_before_anyone_else_is_granted() {
    for mode in common::MODES {
        session_expiry_while_holding_fails_check_before_anyone_else_is_granted_in(mode);
    }
}

fn session_expiry_while_holding_fails_check_before_anyone_else_is_granted_in(mode: LockMode) {
    let zk = server();
    let hosts = zk.connect_string();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let a = via_proxy(&proxy, 2 * SEC);
    let b = common::connect(&hosts);
    let ga = Arc::new(lock_of(&a, "/expire-hold", mode).acquire(None).unwrap());
    let states = Arc::new(Mutex::new(Vec::new()));
    let s = states.clone();
    ga.on_state_change(move |st| s.lock().unwrap().push((st, Instant::now())));
    // Watch check() as a careful holder would, from another thread.
    let g = ga.clone();
    let checker = std::thread::spawn(move || loop {
        if g.check().is_err() {
            return Instant::now();
        }
        std::thread::sleep(Duration::from_millis(2));
    });
    let lb = b.write_lock("/expire-hold").unwrap();
    let waiter = std::thread::spawn(move || {
        let g = lb.acquire(Some(60 * SEC)).unwrap();
        (Instant::now(), g)
    });
    wait_until("b queued", 5 * SEC, || queue(&b, "/expire-hold").len() == 2);
    proxy.blackhole();
    let (granted_at, gb) = waiter.join().unwrap();
    let check_failed_at = checker.join().unwrap();
    assert!(check_failed_at < granted_at, "a's check() still passed when b was granted the lock");
    eprintln!("check() failed {:?} before b's grant", granted_at - check_failed_at);
    gb.check().unwrap();
    proxy.heal();
    wait_until("a learns it lost the lock", 20 * SEC, || ga.state() == LockState::Lost);
    assert_eq!(ga.check().unwrap_err().kind(), ErrorKind::LockLost);
    wait_until("callbacks delivered", 5 * SEC, || states.lock().unwrap().iter().any(|(s, _)| *s == LockState::Lost));
    let seen: Vec<LockState> = states.lock().unwrap().iter().map(|(s, _)| *s).collect();
    assert_eq!(seen.first(), Some(&LockState::Suspended), "suspended first: {seen:?}");
    assert_eq!(seen.last(), Some(&LockState::Lost));
    assert!(states.lock().unwrap()[0].1 < granted_at, "Suspended reached a before b was granted");
    assert_eq!(ga.release().unwrap_err().kind(), ErrorKind::LockLost, "release reports the loss");
}

#[test]
fn our_node_deleted_by_a_third_party_is_lost() {
    for mode in common::MODES {
        our_node_deleted_by_a_third_party_is_lost_in(mode);
    }
}

fn our_node_deleted_by_a_third_party_is_lost_in(mode: LockMode) {
    let zk = server();
    let hosts = zk.connect_string();
    let a = common::connect(&hosts);
    let raw = Raw::connect(&hosts);
    let g = lock_of(&a, "/stolen", mode).acquire(None).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    g.on_state_change(move |s| {
        let _ = tx.send(s);
    });
    raw.delete(&g.node_path());
    assert_eq!(rx.recv_timeout(10 * SEC).unwrap(), LockState::Lost);
    let e = g.check().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LockLost);
    assert!(e.message().contains("deleted"), "{e}");
}

#[test]
fn disconnect_suspends_and_reconnect_with_same_session_holds_again() {
    for mode in common::MODES {
        disconnect_suspends_and_reconnect_with_same_session_holds_again_in(mode);
    }
}

fn disconnect_suspends_and_reconnect_with_same_session_holds_again_in(mode: LockMode) {
    let zk = server();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let a = via_proxy(&proxy, 6 * SEC);
    let g = lock_of(&a, "/flap", mode).acquire(None).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    g.on_state_change(move |s| {
        let _ = tx.send(s);
    });
    proxy.drop_connections();
    assert_eq!(rx.recv_timeout(10 * SEC).unwrap(), LockState::Suspended);
    assert_eq!(rx.recv_timeout(10 * SEC).unwrap(), LockState::Held);
    g.check().unwrap();
}

#[test]
fn release_during_a_disconnect_is_pending_then_done() {
    for mode in common::MODES {
        release_during_a_disconnect_is_pending_then_done_in(mode);
    }
}

fn release_during_a_disconnect_is_pending_then_done_in(mode: LockMode) {
    let zk = server();
    let hosts = zk.connect_string();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let a = via_proxy(&proxy, 6 * SEC);
    let watcher = common::connect(&hosts);
    let session = a.session_id().unwrap();
    let g = lock_of(&a, "/release-pending", mode).acquire(None).unwrap();
    proxy.blackhole();
    wait_until("a notices the disconnect", 10 * SEC, || g.state() == LockState::Suspended);
    assert_eq!(g.release().unwrap(), ReleaseStatus::Pending);
    assert_eq!(a.pending_cleanups(), 1);
    assert_eq!(queue(&watcher, "/release-pending").len(), 1, "node still there while cut off");
    proxy.heal();
    wait_until("the background delete is done", 10 * SEC, || a.pending_cleanups() == 0);
    assert!(queue(&watcher, "/release-pending").is_empty());
    assert_eq!(a.session_id().unwrap(), session, "done by the same session, not by expiry");
}

#[test]
fn cancel_and_timeout_during_a_disconnect_still_delete_our_node() {
    for mode in common::MODES {
        cancel_and_timeout_during_a_disconnect_still_delete_our_node_in(mode);
    }
}

fn cancel_and_timeout_during_a_disconnect_still_delete_our_node_in(mode: LockMode) {
    let zk = server();
    let hosts = zk.connect_string();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let a = common::connect(&hosts);
    let b = via_proxy(&proxy, 8 * SEC);
    let session = b.session_id().unwrap();
    let _ga = a.write_lock("/cut").unwrap().acquire(None).unwrap();
    for cancel in [true, false] {
        let lb = Arc::new(lock_of(&b, "/cut", mode));
        let l = lb.clone();
        let timeout = if cancel { 60 * SEC } else { 2 * SEC };
        let t = std::thread::spawn(move || l.acquire(Some(timeout)).map(drop));
        wait_until("b queued", 5 * SEC, || queue(&a, "/cut").len() == 2);
        proxy.blackhole();
        if cancel {
            lb.cancel();
        }
        let err = t.join().unwrap().unwrap_err();
        assert_eq!(err.kind(), if cancel { ErrorKind::Cancelled } else { ErrorKind::Timeout });
        assert_eq!(queue(&a, "/cut").len(), 2, "cut off: b's node cannot be deleted yet");
        proxy.heal();
        wait_until("b's node is deleted", 10 * SEC, || queue(&a, "/cut").len() == 1 && b.pending_cleanups() == 0);
        assert_eq!(b.session_id().unwrap(), session, "deleted by b, not by session expiry");
    }
}

#[test]
fn duplicate_own_nodes_after_a_lost_reply_are_deleted_keeping_one() {
    for mode in common::MODES {
        duplicate_own_nodes_after_a_lost_reply_are_deleted_keeping_one_in(mode);
    }
}

fn duplicate_own_nodes_after_a_lost_reply_are_deleted_keeping_one_in(mode: LockMode) {
    let zk = server();
    let hosts = zk.connect_string();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let a = via_proxy(&proxy, 4 * SEC);
    let observer = common::connect(&hosts);
    let raw = Raw::connect(&hosts);
    // A foreign holder, so that both of a's nodes exist while a recovers.
    raw.mkdir("/dup");
    let foreign = raw.create("/dup/ffff__lock__", zklock_zk::CreateMode::EphemeralSequential);
    proxy.duplicate_next_create_and_drop_reply();
    let la = lock_of(&a, "/dup", mode);
    let t = std::thread::spawn(move || la.acquire(Some(20 * SEC)).map(|g| (g.node_path(), g)));
    wait_until("the create reply was dropped", 10 * SEC, || proxy.dropped_replies() == 1);
    // Recovery finds two nodes of this attempt owned by a's session and
    // deletes the later one.
    wait_until("one node of a's is left", 10 * SEC, || queue(&observer, "/dup").len() == 2);
    std::thread::sleep(Duration::from_millis(300));
    let q = observer.participants("/dup").unwrap();
    assert_eq!(q.len(), 2, "{q:?}");
    raw.delete(&format!("/dup/{foreign}"));
    let (node, g) = t.join().unwrap().expect("a gets the lock");
    assert_eq!(node, format!("/dup/{}", q[1].name), "kept the first of the duplicates");
    drop(g);
    assert!(queue(&observer, "/dup").is_empty());
}

#[test]
fn session_expiring_during_recovery_of_a_lost_reply_starts_over() {
    for mode in common::MODES {
        session_expiring_during_recovery_of_a_lost_reply_starts_over_in(mode);
    }
}

fn session_expiring_during_recovery_of_a_lost_reply_starts_over_in(mode: LockMode) {
    let zk = server();
    let hosts = zk.connect_string();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let a = via_proxy(&proxy, 2 * SEC);
    let observer = common::connect(&hosts);
    let old_session = a.session_id().unwrap();
    // The lock path exists, so the create whose reply is dropped succeeds.
    Raw::connect(&hosts).mkdir("/recover-expired");
    proxy.drop_next_create_reply_then_blackhole();
    let la = lock_of(&a, "/recover-expired", mode);
    let t = std::thread::spawn(move || la.acquire(Some(60 * SEC)).map(|g| (g.session_id(), g)));
    wait_until("the create reply was dropped", 10 * SEC, || proxy.dropped_replies() == 1);
    assert!(proxy.is_blackholed());
    assert_eq!(queue(&observer, "/recover-expired").len(), 1, "the create happened");
    // The node created before the reply was lost dies with the session.
    wait_until("the server expired a's session", 15 * SEC, || queue(&observer, "/recover-expired").is_empty());
    proxy.heal();
    let (session, g) = t.join().unwrap().expect("a starts over with a new session");
    assert_ne!(session, old_session);
    let q = observer.participants("/recover-expired").unwrap();
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].session_id, session);
    drop(g);
}

#[test]
fn predecessor_gone_between_list_and_watch_is_looked_at_again() {
    for mode in common::MODES {
        predecessor_gone_between_list_and_watch_is_looked_at_again_in(mode);
    }
}

fn predecessor_gone_between_list_and_watch_is_looked_at_again_in(mode: LockMode) {
    let zk = server();
    let hosts = zk.connect_string();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let w = via_proxy(&proxy, 4 * SEC);
    let raw = Raw::connect(&hosts);
    raw.mkdir("/between");
    let holder = raw.create("/between/aaaa__lock__", zklock_zk::CreateMode::EphemeralSequential);
    let before = raw.create("/between/bbbb__lock__", zklock_zk::CreateMode::EphemeralSequential);
    // Hold the waiter's getData (+watch) on the node before it for a second,
    // and delete that node meanwhile: the watch then answers NoNode.
    proxy.delay_next_request(4, SEC);
    let lw = lock_of(&w, "/between", mode);
    let t = std::thread::spawn(move || lw.acquire(Some(30 * SEC)).map(|g| g.node_path()));
    wait_until("the waiter's node exists", 5 * SEC, || raw.children("/between").len() == 3);
    raw.delete(&format!("/between/{before}"));
    wait_until("the held getData went through", 5 * SEC, || proxy.delayed() == 1);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!t.is_finished(), "must wait for the holder, not fail or take the lock");
    raw.delete(&format!("/between/{holder}"));
    let node = t.join().unwrap().expect("granted once the holder goes");
    assert!(node.starts_with("/between/_c_"));
}

/// A session the server expired in an outage, and a server that stalls
/// just as the client, told of the expiry, makes its new session: the
/// waiter is granted on the new session, and that grant stays held. The
/// new session's connect is sent during the stall (so the safety clock,
/// counted from then, is nearly spent when the server answers): the grant
/// must wait until a heartbeat has moved the clock rather than hand out a
/// lock that counts as suspended a moment later. (The client learns of the
/// expiry from the server: while no server answers it keeps trying, as
/// ZooKeeper's own client does; `zklock_proto::reconnect`.)
#[test]
fn a_grant_after_an_outage_longer_than_the_session_stays_held() {
    let zk = Arc::new(server());
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let a = common::connect(&zk.connect_string());
    // A connect timeout longer than the stall: the new session's connect
    // waits for the frozen server.
    let b = Client::connect(options(&proxy.addr().to_string(), 4 * SEC).connect_timeout(20 * SEC)).unwrap();
    let ga = lock_of(&a, "/outage-grant", LockMode::Exclusive).acquire(None).unwrap();
    let lb = lock_of(&b, "/outage-grant", LockMode::Exclusive);
    let waiter = std::thread::spawn(move || lb.acquire(Some(60 * SEC)).map(|g| (Instant::now(), g)));
    wait_until("b queued", 5 * SEC, || queue(&b, "/outage-grant").len() == 2);
    let old_session = b.session_id().unwrap();
    // Told of the expiry, the client makes a new session: the server stalls
    // at once, before that session's connect can be answered.
    let lost = Arc::new(Mutex::new(None));
    let (l, frozen) = (lost.clone(), zk.clone());
    let _sub = b.on_connection_state(move |s| {
        if s == zklock_core::ConnectionState::Lost && l.lock().unwrap().is_none() {
            frozen.freeze(0).unwrap();
            *l.lock().unwrap() = Some(Instant::now());
        }
    });
    proxy.blackhole();
    wait_until("the server expired b's session", 15 * SEC, || queue(&a, "/outage-grant").len() == 1);
    proxy.heal();
    wait_until("b's client is told its session expired", 30 * SEC, || lost.lock().unwrap().is_some());
    // Resume when most of a session timeout has passed since.
    let connect_began = lost.lock().unwrap().unwrap();
    // a releases meanwhile: its delete waits for the stalled server too.
    let released = std::thread::spawn(move || ga.release());
    std::thread::sleep((connect_began + 2_400 * MS).saturating_duration_since(Instant::now()));
    zk.resume(0).unwrap();
    let resumed = Instant::now();
    released.join().unwrap().unwrap();
    let (granted_at, gb) = waiter.join().unwrap().expect("b is granted after the outage");
    eprintln!("granted {:?} after the resume", granted_at - resumed);
    assert_ne!(gb.session_id(), old_session, "b's session expired in the outage");
    let states = Arc::new(Mutex::new(Vec::new()));
    let s = states.clone();
    gb.on_state_change(move |st| s.lock().unwrap().push(st));
    // Three session timeouts of a healthy server: the lock never stops
    // being safely held.
    let until = Instant::now() + 12 * SEC;
    while Instant::now() < until {
        if let Err(e) = gb.check() {
            panic!("{:?} after the grant, check() failed: {}", granted_at.elapsed(), e.message());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(states.lock().unwrap().is_empty(), "state changes: {:?}", states.lock().unwrap());
}

/// Issue 33's second pause in grants after a leader was killed: a waiter
/// first in line shortly after its session reconnected is granted at once,
/// not held back until the new connection's heartbeats count (`T/3` after
/// its first reply). With T = 10 s the release comes `0.2 T` after the
/// reconnect, where the rule before (`T/3 + T/8` of clock left, counted
/// from the grant) held the grant back for about 1.3 s (the clock lasts
/// until `0.57 T` after the reconnect).
#[test]
fn a_grant_right_after_a_reconnect_does_not_wait_for_the_heartbeats() {
    let zk = server();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let t = 10 * SEC;
    let a = common::connect(&zk.connect_string());
    let b = via_proxy(&proxy, t);
    let ga = lock_of(&a, "/reconnect-grant", LockMode::Exclusive).acquire(None).unwrap();
    let lb = lock_of(&b, "/reconnect-grant", LockMode::Exclusive);
    let waiter = std::thread::spawn(move || lb.acquire(Some(60 * SEC)).map(|g| (Instant::now(), g)));
    wait_until("b queued", 5 * SEC, || queue(&a, "/reconnect-grant").len() == 2);
    // A session in its steady state: its heartbeats, not its creation,
    // move its clock (from T/3 after the connect).
    std::thread::sleep(t * 3 / 5);
    let (tx, rx) = std::sync::mpsc::channel();
    let _sub = b.on_connection_state(move |s| {
        if s == zklock_core::ConnectionState::Reconnected {
            let _ = tx.send(Instant::now());
        }
    });
    // b's connection is reset: it reconnects at once, with its session.
    proxy.drop_connections();
    let back = rx.recv_timeout(10 * SEC).expect("b reconnected");
    std::thread::sleep((back + t / 5).saturating_duration_since(Instant::now()));
    let released = Instant::now();
    ga.release().unwrap();
    let (granted, gb) = waiter.join().unwrap().expect("b is granted");
    let waited = granted - released;
    eprintln!("b granted {waited:?} after the release, {:?} after its reconnect", granted - back);
    assert!(gb.check().is_ok());
    assert!(waited < 700 * MS, "b was granted {waited:?} after the release: it waited for its heartbeats");
}

/// Outside attack round 31, F1: a connection reset on a network whose
/// round trips are 0.08 to 0.1 of the session timeout (here 0.09: T = 8 s,
/// 720 ms: the new rule counts 0.43 s before the clock runs out, the old
/// one 0.29 s after) cost the lock
/// 0.57 T after the reset (Suspended by the clock, Held again a
/// moment later), because the new connection's heartbeats counted only
/// from `T/3` after the first sync's reply: three round trips and `T/3`
/// after the reconnect. The connect is now the connection's first
/// heartbeat: two round trips and `T/3`, before the reconnect's credit
/// runs out. Read from outside zklock's clock: the guard's states, sampled
/// every few ms from the reset to `0.9 T` after it: Held again after the
/// reconnect, and never Suspended after that.
#[test]
fn a_reset_on_a_slow_network_keeps_the_lock() {
    let zk = server();
    let t = 8 * SEC;
    let proxy = Proxy::start_with_latency(zk.client_addr(0), t * 9 / 200).unwrap();
    let holder = via_proxy(&proxy, t);
    let g = lock_of(&holder, "/slow-reset", LockMode::Exclusive).acquire(Some(30 * SEC)).unwrap();
    // The steady state: the clock moved by this connection's heartbeats.
    std::thread::sleep(t);
    right_after_a_credit(&g, t);
    proxy.drop_connections();
    let reset = Instant::now();
    let (mut down, mut held_again, mut lost_after) = (None, None, None);
    while reset.elapsed() < t * 9 / 10 {
        let (state, at) = (g.state(), reset.elapsed());
        match (state == LockState::Held, down, held_again) {
            (false, None, _) => down = Some((state, at)),
            (true, Some(_), None) => held_again = Some(at),
            (false, Some(_), Some(_)) if lost_after.is_none() => lost_after = Some((state, at)),
            _ => {},
        }
        std::thread::sleep(2 * MS);
    }
    eprintln!("after the reset: {down:?}");
    eprintln!("held again {held_again:?} after the reset; then {lost_after:?}");
    assert!(held_again.is_some(), "never Held again after the reset");
    assert_eq!(lost_after, None, "the lock was not safely held again after the reconnect");
    assert!(g.check().is_ok());
}

/// Waits (at most a session timeout) until the guard's safety clock next
/// moves forward, so that an outage started then begins right after a
/// heartbeat was credited: how far the clock runs ahead of an outage
/// depends on the heartbeats' phase (between 0.32 T and 0.57 T: protocol
/// section 5); this takes the phase out of the test.
fn right_after_a_credit(g: &zklock_core::Guard, t: Duration) {
    let before = g.safe_until();
    let end = Instant::now() + t;
    while Instant::now() < end && g.safe_until() == before {
        std::thread::sleep(MS);
    }
}

/// Connection outages of 0.2 T and 0.4 T that the session survives,
/// begun right after a heartbeat was credited, on a healthy server, the connection reset at the start (the client reconnects
/// at once when it heals) or silent (nothing comes back; the client notices
/// nothing before the end): the lock may be Suspended meanwhile (`check()`
/// fails while the connection is down) but its safety clock never runs out
/// (`safe_until()` stays ahead: the CLI keeps its command), and once the
/// connection is back it is Held again within about a round trip. (Before
/// the session layer stamped requests and counted a reconnect from its
/// connect request, and counted syncs answered after an outage, 0.4 T ran
/// the clock out and the CLI killed its command: protocol section 5.)
/// Longer outages (0.6 T, 0.8 T) are measured and printed: the clock runs
/// out about 0.55 T after the outage began (protocol section 5); the lock
/// is Held again after the reconnect.
#[test]
fn a_lock_survives_outages_of_up_to_two_fifths_of_the_session_timeout() {
    let zk = server();
    let t = 4 * SEC;
    for silent in [false, true] {
        for fifths in [1u32, 2, 3, 4] {
            let outage = t * fifths * 2 / 10;
            let proxy = Proxy::start(zk.client_addr(0)).unwrap();
            let c = via_proxy(&proxy, t);
            let path = format!("/outage-{silent}-{fifths}");
            let g = lock_of(&c, &path, LockMode::Exclusive).acquire(Some(5 * SEC)).unwrap();
            // Past the session's first timeout: the clock runs on
            // heartbeats alone, not on the session's creation.
            std::thread::sleep(t + t / 2);
            let ran_out = |g: &zklock_core::Guard| g.safe_until().is_none_or(|u| Instant::now() >= u);
            right_after_a_credit(&g, t);
            let began = Instant::now();
            proxy.blackhole();
            if !silent {
                proxy.drop_connections();
            }
            let mut out_at: Option<Duration> = None;
            while began.elapsed() < outage {
                if out_at.is_none() && ran_out(&g) {
                    out_at = Some(began.elapsed());
                }
                std::thread::sleep(2 * MS);
            }
            proxy.heal();
            let healed = Instant::now();
            let mut held_again: Option<Duration> = None;
            while healed.elapsed() < t {
                if out_at.is_none() && ran_out(&g) {
                    out_at = Some(began.elapsed());
                }
                match g.check() {
                    Err(e) if e.kind() != ErrorKind::ConnectionLoss => {
                        panic!("outage {outage:?} (silent {silent}): {}", e.message())
                    },
                    Err(_) => held_again = None,
                    Ok(()) => {
                        held_again.get_or_insert(healed.elapsed());
                    },
                }
                std::thread::sleep(2 * MS);
            }
            eprintln!(
                "outage {:.1} T ({} ms, {}): the clock ran out at {:?} after the outage began; held again {:?} after \
                 the heal",
                fifths as f64 * 0.2,
                outage.as_millis(),
                if silent { "silent" } else { "reset" },
                out_at,
                held_again
            );
            assert!(held_again.is_some(), "outage {outage:?} (silent {silent}): the lock is not held again");
            if fifths <= 2 {
                assert_eq!(out_at, None, "outage {outage:?} (silent {silent}): the safety clock ran out");
            }
            g.release().unwrap();
            c.close();
        }
    }
}

/// A relay to `upstream` that can refuse: `refuse()` closes its listener
/// and every relayed connection (connects are then refused), `heal()`
/// listens on the same port again.
struct RefusingRelay {
    port: u16,
    open: Arc<std::sync::atomic::AtomicBool>,
    conns: Arc<Mutex<Vec<std::net::TcpStream>>>,
}

impl RefusingRelay {
    fn start(upstream: std::net::SocketAddr) -> RefusingRelay {
        use std::sync::atomic::{AtomicBool, Ordering};
        let first = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = first.local_addr().unwrap().port();
        let open = Arc::new(AtomicBool::new(true));
        let conns: Arc<Mutex<Vec<std::net::TcpStream>>> = Arc::default();
        let (o, c) = (open.clone(), conns.clone());
        std::thread::spawn(move || {
            let mut listener = Some(first);
            loop {
                match (&listener, o.load(Ordering::SeqCst)) {
                    (Some(_), false) => listener = None,
                    (None, true) => listener = std::net::TcpListener::bind(("127.0.0.1", port)).ok(),
                    _ => {},
                }
                let Some(l) = &listener else {
                    std::thread::sleep(MS);
                    continue;
                };
                l.set_nonblocking(true).unwrap();
                let Ok((down, _)) = l.accept() else {
                    std::thread::sleep(MS);
                    continue;
                };
                down.set_nonblocking(false).unwrap();
                let Ok(up) = std::net::TcpStream::connect(upstream) else { continue };
                c.lock().unwrap().extend([down.try_clone().unwrap(), up.try_clone().unwrap()]);
                for (mut from, mut to) in [(down.try_clone().unwrap(), up.try_clone().unwrap()), (up, down)] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        RefusingRelay { port, open, conns }
    }

    fn refuse(&self) {
        self.open.store(false, std::sync::atomic::Ordering::SeqCst);
        for c in self.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
    }

    fn heal(&self) {
        self.open.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The connection reset while the server is stalled (SIGSTOP) for 0.3 T:
/// the client reconnects at once, the server's kernel accepts the
/// connection, and its connect request is answered only when the server
/// runs again. A reconnect is credited from its connect request's send
/// time; sent at the start of the stall, that credit would run out before
/// the new connection's heartbeats can count (`T/3` after its first reply),
/// about 0.27 T after the stall ended, on a healthy connection (outside
/// attack round 22, F1: the CLI killed its command in 3 of 3 runs at
/// T = 4 s; without the fix this test fails: the clock ran out about 2.3 s
/// after a 1.2 s stall began). Until round 33's F2, a connect answered
/// more than `T/6` late was closed unused and the same server asked once
/// more; now the late connect is used and credited in full once the write
/// sent on its connection is answered, which lasts until the heartbeats
/// count.
#[test]
fn a_reset_while_the_server_is_stalled_for_three_tenths_of_the_session_timeout_keeps_the_clock() {
    let zk = server();
    let t = 4 * SEC;
    for run in 0..2 {
        let proxy = Proxy::start(zk.client_addr(0)).unwrap();
        let c = via_proxy(&proxy, t);
        let g = lock_of(&c, &format!("/stalled-{run}"), LockMode::Exclusive).acquire(Some(5 * SEC)).unwrap();
        std::thread::sleep(t + t / 2);
        let ran_out = |g: &zklock_core::Guard| g.safe_until().is_none_or(|u| Instant::now() >= u);
        right_after_a_credit(&g, t);
        let began = Instant::now();
        zk.freeze(0).unwrap();
        proxy.drop_connections();
        let mut out_at: Option<Duration> = None;
        while began.elapsed() < t * 3 / 10 {
            if out_at.is_none() && ran_out(&g) {
                out_at = Some(began.elapsed());
            }
            std::thread::sleep(2 * MS);
        }
        zk.resume(0).unwrap();
        let resumed = Instant::now();
        let mut held_again: Option<Duration> = None;
        while resumed.elapsed() < t {
            if out_at.is_none() && ran_out(&g) {
                out_at = Some(began.elapsed());
            }
            if g.check().is_ok() {
                held_again.get_or_insert(resumed.elapsed());
            }
            std::thread::sleep(2 * MS);
        }
        eprintln!(
            "run {run}: the clock ran out at {out_at:?} after the stall began; held again {held_again:?} after it"
        );
        assert!(held_again.is_some(), "run {run}: the lock is not held again");
        assert_eq!(out_at, None, "run {run}: the safety clock ran out");
        assert_eq!(g.state(), LockState::Held);
        g.release().unwrap();
        c.close();
    }
}

/// A server alive but slow to answer every new connection (each connect
/// answer held back 0.18 T by the proxy), the holder's connection reset:
/// the reconnect's answer comes late and is used (outside attack round 23,
/// R1: a client that gave up connects unanswered for `T/8` kept giving up
/// ones that would have worked, and its clock ran out in 6 of 6 runs): the
/// clock never runs out and the lock is Held again. The proxy's connection
/// count shows one connect (until round 33's F2 a late answer was asked
/// again, and the answer to that was as late).
#[test]
fn a_reset_to_a_server_slow_to_answer_connects_keeps_the_clock() {
    let (out_at, held_again, asked) = reset_with_connects_answered_late(18, "/slow-connects");
    assert_eq!(asked, 1, "the late-answered connect is used");
    assert!(held_again.is_some(), "the lock is not held again");
    assert_eq!(out_at, None, "the safety clock ran out");
}

/// The same with each connect answered 0.21 T late, and the reset 0.11 T
/// after a credit, just before the next heartbeat would have moved the
/// clock (the worst phase: the clock had about 0.41 T left). The late
/// answer must be used and credited (once the write on its connection is
/// answered, 0.21 T and a round trip after the reset): asked again, the
/// second answer came 0.42 T after the reset, and the clock ran out unless
/// the first was credited although its connection went unused (outside
/// attack round 24, F1: `zklock run` lost its command in 8 of 8 such runs,
/// where the client that used the late connection kept it).
#[test]
fn a_reset_in_the_worst_phase_to_a_server_slow_to_answer_connects_keeps_the_clock() {
    let (out_at, held_again, asked) =
        reset_with_connects_answered_late_at(21, 4 * SEC * 11 / 100, "/slow-connects-worst-phase");
    assert_eq!(asked, 1, "the late-answered connect is used");
    assert!(held_again.is_some(), "the lock is not held again");
    assert_eq!(out_at, None, "the safety clock ran out");
}

/// The same with each connect answered 0.85 T late: the clock runs out
/// (no reconnect can be credited in time), but the session lives (the
/// connect revalidated it), so waiting for that answer must not end it:
/// the lock is Held again on the same session (round 23, R2: a client that
/// gave up connects reported the session expired in 6 of 6 runs).
#[test]
fn a_reset_to_a_server_very_slow_to_answer_connects_keeps_the_session() {
    let (_, held_again, asked) = reset_with_connects_answered_late(85, "/very-slow-connects");
    assert_eq!(asked, 1, "the late-answered connect is used");
    assert!(held_again.is_some(), "the lock is not held again");
}

/// An address that accepts connections and never answers (a member in a
/// long GC pause, a frozen VM): it keeps every connection, reading nothing.
struct Hung {
    addr: std::net::SocketAddr,
    /// Connections accepted so far.
    tried: Arc<std::sync::atomic::AtomicU64>,
}

impl Hung {
    fn start() -> Hung {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let tried = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = tried.clone();
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            for s in listener.incoming().flatten() {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                kept.push(s);
            }
        });
        Hung { addr, tried }
    }
}

/// What [`hung_beside`] saw after the fault.
struct HungRun {
    /// When the safety clock ran out, if it did.
    out_at: Option<Duration>,
    /// When the lock was Held again.
    held_again: Option<Duration>,
    /// Whether the session lived on.
    lived: bool,
    /// Connections the hung address accepted after the fault.
    hung_tried: u64,
    /// The client (the guard is released).
    _client: Client,
}

/// Two addresses, the second hung, the holder on the first (`healthy`):
/// acquires a lock, then (1.5 T later, 0.11 T after a heartbeat credit:
/// the worst phase, the clock has about 0.41 T left) calls `fault`, and
/// watches for 2 T.
fn hung_beside(healthy: std::net::SocketAddr, path: &str, fault: impl FnOnce()) -> HungRun {
    let t = 4 * SEC;
    let hung = Hung::start();
    let c = Client::connect(options(&format!("{healthy},{}", hung.addr), t)).unwrap();
    let g = lock_of(&c, path, LockMode::Exclusive).acquire(Some(5 * SEC)).unwrap();
    let session = c.session_id().ok();
    std::thread::sleep(t + t / 2);
    let ran_out = |g: &zklock_core::Guard| g.safe_until().is_none_or(|u| Instant::now() >= u);
    right_after_a_credit(&g, t);
    std::thread::sleep(t * 11 / 100);
    let before = hung.tried.load(std::sync::atomic::Ordering::SeqCst);
    let began = Instant::now();
    fault();
    let (mut out_at, mut held_again, mut suspended) = (None, None, false);
    while began.elapsed() < t * 2 && held_again.is_none() && g.state() != LockState::Lost {
        if out_at.is_none() && ran_out(&g) {
            out_at = Some(began.elapsed());
        }
        let ok = g.check().is_ok();
        suspended |= !ok;
        if suspended && ok {
            held_again = Some(began.elapsed());
        }
        std::thread::sleep(MS);
    }
    let lived = g.state() != LockState::Lost && c.session_id().ok() == session;
    eprintln!("{path}: clock out at {out_at:?}, held again {held_again:?} after the fault; session lived: {lived}");
    let _ = g.release();
    let hung_tried = hung.tried.load(std::sync::atomic::Ordering::SeqCst) - before;
    HungRun { out_at, held_again, lived, hung_tried, _client: c }
}

/// Round 27's F2: the healthy server answers every connect 0.1 T late (a
/// loaded member), the other address is hung, the holder's connection is
/// reset in the worst phase. The client asks its own server again first
/// (it answered a moment ago): the clock never runs out. (Asking the next
/// server first, it waited T/3 for the hung one and then 0.1 T: the
/// command was lost in 3 of 3 runs.)
#[test]
fn a_reset_with_a_slow_server_and_a_hung_one_keeps_the_clock() {
    let zk = server();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let run = hung_beside(proxy.addr(), "/hung-slow", || {
        proxy.delay_connect_answers(4 * SEC / 10);
        proxy.drop_connections();
    });
    assert!(run.lived && run.held_again.is_some(), "the lock is not held again");
    assert_eq!(run.out_at, None, "the safety clock ran out");
}

/// Round 27's F1: the healthy server refuses for 0.45 T (a restart), the
/// other address is hung. A refusal keeps the next round's waits short (the
/// refusing server may be back any moment): the client is back soon after
/// the refusal and the session lives. (With every round waiting twice as
/// long, the second waited 2T/3 on the hung address while the server was
/// back, and the session expired in 8 of 12 runs.)
#[test]
fn a_refusal_with_a_hung_address_beside_keeps_the_session() {
    let zk = server();
    let relay = RefusingRelay::start(zk.client_addr(0));
    let healthy: std::net::SocketAddr = format!("127.0.0.1:{}", relay.port).parse().unwrap();
    let run = hung_beside(healthy, "/hung-refused", || {
        relay.refuse();
        std::thread::sleep(4 * SEC * 45 / 100);
        relay.heal();
    });
    assert!(run.lived, "the session expired");
    let back = run.held_again.expect("the lock is not held again");
    assert!(back < 4 * SEC, "held again only {back:?} after the refusal began (T = 4 s)");
}

/// Two addresses, one hung (it accepts connections and never answers: a
/// member in a long GC pause, a frozen VM), and the holder's connection
/// to the healthy one reset in the worst phase (0.11 T after a credit: the
/// clock has about 0.41 T left). The client asks its own server again
/// first after a reset (outside attack round 25, F3: it tried the other
/// address first and waited half the timeout there; a mere reset cost
/// `zklock run` its command in 14 of 14 runs; round 27 showed that a third
/// of the timeout was not enough either, with a server slow to answer).
#[test]
fn a_reset_with_the_other_address_hung_keeps_the_clock() {
    let zk = server();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let run = hung_beside(proxy.addr(), "/hung-other", || proxy.drop_connections());
    assert_eq!(run.hung_tried, 0, "the client asked its own server first");
    assert!(run.lived && run.held_again.is_some(), "the lock is not held again on the same session");
    assert_eq!(run.out_at, None, "the safety clock ran out");
}

/// Three addresses (proxies of one server), each answering connects 0.4 T
/// late, and the holder's connection reset: every first-round attempt
/// (`T/3` each) is given up unanswered, though each connect kept the
/// session alive on the server. The client must not give the session up
/// for that: later rounds wait longer, and giving up waits for the
/// connects given up (the reconnect search in `zklock-proto` found a
/// false expiry here; before, the session was reported expired at
/// `4/3 T`). The clock runs out (no connect can be credited in time); the
/// lock is Held again on the same session.
#[test]
fn a_reset_to_three_servers_slow_to_answer_connects_keeps_the_session() {
    let zk = server();
    let t = 4 * SEC;
    let proxies = ProxyGroup::start(&[zk.client_addr(0), zk.client_addr(0), zk.client_addr(0)]).unwrap();
    let c = Client::connect(options(&proxies.connect_string(), t)).unwrap();
    let g = lock_of(&c, "/three-slow", LockMode::Exclusive).acquire(Some(5 * SEC)).unwrap();
    let session = c.session_id().ok();
    std::thread::sleep(t);
    for p in proxies.proxies() {
        p.delay_connect_answers(t * 4 / 10);
    }
    let began = Instant::now();
    proxies.drop_connections();
    let mut held_again = None;
    let mut suspended = false;
    while began.elapsed() < 4 * t && held_again.is_none() {
        let ok = g.check().is_ok();
        suspended |= !ok;
        if suspended && ok {
            held_again = Some(began.elapsed());
        }
        assert_ne!(g.state(), LockState::Lost, "the session was given up at {:?}", began.elapsed());
        std::thread::sleep(5 * MS);
    }
    eprintln!("held again {held_again:?} after the reset");
    assert!(held_again.is_some(), "the lock is not held again");
    assert_eq!(c.session_id().ok(), session, "the same session");
    g.release().unwrap();
    c.close();
}

/// Holds a lock through a proxy that holds back every connect answer by
/// `percent` of T = 4 s, resets the connection right after a credit and
/// watches for 2.5 T: when the clock ran out and when the lock was Held
/// again (after the reset, both), and how many connections the client
/// made. Releases the lock (which must still be Held).
fn reset_with_connects_answered_late(percent: u32, path: &str) -> (Option<Duration>, Option<Duration>, u64) {
    reset_with_connects_answered_late_at(percent, Duration::ZERO, path)
}

/// [`reset_with_connects_answered_late`], the reset `phase` after the
/// credit.
fn reset_with_connects_answered_late_at(
    percent: u32,
    phase: Duration,
    path: &str,
) -> (Option<Duration>, Option<Duration>, u64) {
    let zk = server();
    let t = 4 * SEC;
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let c = via_proxy(&proxy, t);
    let g = lock_of(&c, path, LockMode::Exclusive).acquire(Some(5 * SEC)).unwrap();
    let session = c.session_id().ok();
    std::thread::sleep(t + t / 2);
    let ran_out = |g: &zklock_core::Guard| g.safe_until().is_none_or(|u| Instant::now() >= u);
    right_after_a_credit(&g, t);
    std::thread::sleep(phase);
    proxy.delay_connect_answers(t * percent / 100);
    let accepted = proxy.accepted();
    let began = Instant::now();
    proxy.drop_connections();
    let mut out_at: Option<Duration> = None;
    let mut suspended = false;
    let mut held_again: Option<Duration> = None;
    while began.elapsed() < t * 5 / 2 {
        if out_at.is_none() && ran_out(&g) {
            out_at = Some(began.elapsed());
        }
        let ok = g.check().is_ok();
        suspended |= !ok;
        if suspended && ok && held_again.is_none() {
            held_again = Some(began.elapsed());
        }
        std::thread::sleep(2 * MS);
    }
    let asked = proxy.accepted() - accepted;
    eprintln!(
        "connects {percent}% of T late: the clock ran out at {out_at:?} after the reset; held again {held_again:?} after it; {asked} connects"
    );
    assert_eq!(g.state(), LockState::Held);
    assert_eq!(c.session_id().ok(), session, "the same session");
    g.release().unwrap();
    c.close();
    (out_at, held_again, asked)
}

/// Closes `c` on a thread of its own; the thread gives when `close()`
/// returned.
fn close_on_a_thread(c: Client) -> std::thread::JoinHandle<Instant> {
    std::thread::spawn(move || {
        c.close();
        Instant::now()
    })
}

/// What [`behind_a_relay_with_a_waiter`] made.
struct HolderAndWaiter {
    zk: zklock_harness::Cluster,
    relay: RefusingRelay,
    /// The holder's client (behind the relay) and guard.
    c: Client,
    g: zklock_core::Guard,
    /// The waiter's client (direct) and its acquire: when it was granted.
    w: Client,
    waiter: std::thread::JoinHandle<zklock_core::Result<(Instant, zklock_core::Guard)>>,
}

/// A holder of the lock at `path` behind a refusing relay (T = 4 s,
/// operation timeout 5 s) and a waiter connected directly, queued behind
/// it.
fn behind_a_relay_with_a_waiter(path: &'static str) -> HolderAndWaiter {
    let zk = server();
    let relay = RefusingRelay::start(zk.client_addr(0));
    let c = Client::connect(options(&format!("127.0.0.1:{}", relay.port), 4 * SEC).operation_timeout(5 * SEC)).unwrap();
    let w = common::connect(&zk.connect_string());
    let g = lock_of(&c, path, LockMode::Exclusive).acquire(Some(5 * SEC)).unwrap();
    let lw = lock_of(&w, path, LockMode::Exclusive);
    let waiter = std::thread::spawn(move || lw.acquire(Some(30 * SEC)).map(|g| (Instant::now(), g)));
    wait_until("w queued", 5 * SEC, || queue(&w, path).len() == 2);
    HolderAndWaiter { zk, relay, c, g, w, waiter }
}

/// A release and a close made during a refusing outage of 0.3 T (a server
/// restart): the release is Pending, and the close waits (up to the
/// operation timeout, as documented) for the reconnect, then ends the
/// session, so the node goes at once and the waiter is granted right after
/// the outage. (Outside attack round 25, F1: a close made while
/// reconnecting ended the session task at once; `zklock run` exited with
/// its node left for the session timeout, and the next waiter waited
/// 3.7-5.3 s.)
#[test]
fn a_close_during_an_outage_ends_the_session_once_the_server_is_back() {
    let t = 4 * SEC;
    let HolderAndWaiter { zk: _zk, relay, c, g, w: _w, waiter } = behind_a_relay_with_a_waiter("/close-in-outage");
    relay.refuse();
    std::thread::sleep(100 * MS);
    let status = g.release();
    let closer = close_on_a_thread(c);
    std::thread::sleep(t * 3 / 10);
    relay.heal();
    let healed = Instant::now();
    let (granted, gw) = waiter.join().unwrap().expect("w is granted");
    let closed = closer.join().unwrap();
    eprintln!(
        "release {status:?}; close returned {:?} and w was granted {:?} after the outage",
        closed.saturating_duration_since(healed),
        granted.saturating_duration_since(healed)
    );
    assert!(closed >= healed, "close() returned during the outage, before the server could be told");
    assert!(granted - healed < 2 * SEC, "w was granted {:?} after the outage", granted - healed);
    gw.release().unwrap();
}

/// A holder whose server stalls (SIGSTOP: its kernel still accepts
/// connections and keeps what is written) closes its client and goes (the
/// client dropped, its runtime and sockets with it, as when `zklock run`
/// exits) while it reconnects; the server runs again before the session
/// could expire. The close went right behind the reconnect's connect
/// request in flight, so the server, reading that connect, reads the close
/// too and ends the session: the waiter is granted at once. (Outside
/// attack round 30, F2: the close was held for a connection that never
/// came; the server read the queued connect, revalidated the session and
/// kept the holder's node for a session timeout: the waiter was granted
/// 5-13 s later.)
#[test]
fn a_client_closed_while_its_server_is_stalled_ends_its_session_when_the_server_runs_again() {
    let zk = server();
    let t = 8 * SEC;
    let c = Client::connect(options(&zk.connect_string(), t).operation_timeout(SEC)).unwrap();
    let w = Client::connect(options(&zk.connect_string(), 2 * t)).unwrap();
    let g = lock_of(&c, "/close-stalled", LockMode::Exclusive).acquire(Some(5 * SEC)).unwrap();
    let lw = lock_of(&w, "/close-stalled", LockMode::Exclusive);
    let waiter = std::thread::spawn(move || lw.acquire(Some(60 * SEC)).map(|g| (Instant::now(), g)));
    wait_until("w queued", 5 * SEC, || queue(&w, "/close-stalled").len() == 2);
    let (tx, rx) = std::sync::mpsc::channel();
    let _sub = c.on_connection_state(move |s| {
        if s == zklock_core::ConnectionState::Suspended {
            let _ = tx.send(());
        }
    });
    zk.freeze(0).unwrap();
    let frozen = Instant::now();
    // The holder's read timeout (2T/3): it reconnects, to the stalled server.
    rx.recv_timeout(t).expect("the holder noticed the silence");
    std::thread::sleep(300 * MS);
    drop(g);
    c.close();
    drop(c);
    // Before the session could expire (T after the server last heard of it).
    std::thread::sleep((frozen + t * 7 / 8).saturating_duration_since(Instant::now()));
    zk.resume(0).unwrap();
    let resumed = Instant::now();
    let (granted, gw) = waiter.join().unwrap().expect("w is granted");
    eprintln!("w granted {:?} after the server ran again", granted - resumed);
    assert!(granted - resumed < 3 * SEC, "w was granted {:?} after the server ran again", granted - resumed);
    gw.release().unwrap();
}

/// A close sent on a connection that then goes silent (a partition that
/// drops what is sent: the proxy's blackhole reads and discards): when the
/// client gives that connection up (its read timeout) the close's outcome
/// is unknown, so it is sent again on the next connection, once the
/// server is reachable again. `close()` returns then, and the node goes at
/// once (outside attack round 28, F1: the close was taken as done at the
/// read timeout, `close()` returned unconfirmed, and the node stayed until
/// the session expired).
#[test]
fn a_close_lost_in_a_silent_connection_is_sent_again() {
    let zk = server();
    let t = 8 * SEC;
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let c = Client::connect(options(&proxy.addr().to_string(), t).operation_timeout(10 * SEC)).unwrap();
    let w = common::connect(&zk.connect_string());
    let g = lock_of(&c, "/close-silent", LockMode::Exclusive).acquire(Some(5 * SEC)).unwrap();
    let lw = lock_of(&w, "/close-silent", LockMode::Exclusive);
    let waiter = std::thread::spawn(move || lw.acquire(Some(30 * SEC)).map(|g| (Instant::now(), g)));
    wait_until("w queued", 5 * SEC, || queue(&w, "/close-silent").len() == 2);
    // Held while the close is sent: only the close can free the lock.
    let _held = g;
    proxy.blackhole();
    let began = Instant::now();
    let closer = close_on_a_thread(c);
    // After the read timeout (2T/3), before the session can expire (T).
    std::thread::sleep(t * 3 / 4);
    proxy.heal();
    let healed = Instant::now();
    let closed = closer.join().unwrap();
    let (granted, gw) = waiter.join().unwrap().expect("w is granted");
    eprintln!(
        "close() returned {:?} after the call ({:?} after the heal); w granted {:?} after the heal",
        closed - began,
        closed.saturating_duration_since(healed),
        granted.saturating_duration_since(healed)
    );
    assert!(closed >= healed, "close() returned {:?} after the call, before the server could be told", closed - began);
    assert!(granted - healed < 2 * SEC, "w was granted {:?} after the heal", granted - healed);
    gw.release().unwrap();
}

/// `close()` called in a connection-state callback at the start of an
/// outage sends the close and returns at once: the event thread goes on to
/// deliver the guard's own callbacks during the outage (outside attack
/// round 26, O1: the close waited there for the server, up to the operation
/// timeout, and the guard's `Suspended` and `Lost` came after another client
/// had been granted the lock). The close still reaches the server once it
/// is back: a waiter is granted soon after.
#[test]
fn a_close_in_a_callback_during_an_outage_holds_back_no_callback() {
    let t = 4 * SEC;
    let HolderAndWaiter { zk: _zk, relay, c, g, w: _w, waiter } = behind_a_relay_with_a_waiter("/close-in-callback");
    let states = Arc::new(Mutex::new(Vec::new()));
    let seen = states.clone();
    let _states = g.on_state_change(move |s| seen.lock().unwrap().push((Instant::now(), s)));
    let took = Arc::new(Mutex::new(None));
    let (closer, told) = (c.clone(), took.clone());
    let _closes = c.on_connection_state(move |s| {
        if s == zklock_core::ConnectionState::Suspended && told.lock().unwrap().is_none() {
            let began = Instant::now();
            closer.close();
            *told.lock().unwrap() = Some((began, began.elapsed()));
        }
    });
    relay.refuse();
    wait_until("the callback closed the client", 5 * SEC, || took.lock().unwrap().is_some());
    let (began, close_took) = took.lock().unwrap().unwrap();
    wait_until("the guard's own callback", 2 * SEC, || !states.lock().unwrap().is_empty());
    let first = states.lock().unwrap()[0];
    std::thread::sleep(t * 3 / 10);
    relay.heal();
    let healed = Instant::now();
    let (granted, gw) = waiter.join().unwrap().expect("w is granted");
    eprintln!(
        "close() in the callback took {close_took:?}; the guard's first callback {:?} came {:?} after; w granted {:?} after the outage",
        first.1,
        first.0.saturating_duration_since(began),
        granted.saturating_duration_since(healed)
    );
    assert!(close_took < SEC, "close() in a callback waited {close_took:?} (the operation timeout is 5 s)");
    assert!(first.0 < healed, "the guard's callback came only after the outage");
    assert!(granted - healed < 2 * SEC, "w was granted {:?} after the outage", granted - healed);
    gw.release().unwrap();
}

/// An outage of 0.4 T in which every connect is refused (a server restart,
/// a firewall that rejects), begun right after a heartbeat was credited: the client retries its session's server with
/// rounds at most T/40 apart, so it is back soon after the outage and the
/// safety clock never runs out (the CLI keeps its command). (With rounds up
/// to 1.5 s apart an outside test lost the lock in 5 of 8 runs at T = 4 s.)
#[test]
fn a_refusing_outage_of_two_fifths_of_the_session_timeout_keeps_the_clock() {
    let zk = server();
    let t = 4 * SEC;
    let relay = RefusingRelay::start(zk.client_addr(0));
    let c = Client::connect(options(&format!("127.0.0.1:{}", relay.port), t)).unwrap();
    let g = lock_of(&c, "/refusing-outage", LockMode::Exclusive).acquire(Some(5 * SEC)).unwrap();
    let ran_out = |g: &zklock_core::Guard| g.safe_until().is_none_or(|u| Instant::now() >= u);
    // Twice: without the short rounds one outage in three ran the clock out.
    for _ in 0..2 {
        std::thread::sleep(t + t / 2);
        right_after_a_credit(&g, t);
        let began = Instant::now();
        relay.refuse();
        while began.elapsed() < t * 2 / 5 {
            assert!(!ran_out(&g), "the clock ran out {:?} into the outage", began.elapsed());
            std::thread::sleep(2 * MS);
        }
        relay.heal();
        let healed = Instant::now();
        let mut held_again = None;
        while healed.elapsed() < t {
            assert!(!ran_out(&g), "the clock ran out {:?} after the outage began", began.elapsed());
            if held_again.is_none() && g.check().is_ok() {
                held_again = Some(healed.elapsed());
            }
            std::thread::sleep(2 * MS);
        }
        eprintln!("refused for 0.4 T: held again {held_again:?} after the heal");
        assert!(held_again.is_some(), "not held again");
    }
    g.release().unwrap();
    c.close();
}

/// A downgrade's read node is made in a transaction with a check of the
/// write node; when its reply is lost, the read node is found again by its
/// protected prefix after the reconnect (it exists only if the transaction,
/// check included, was applied) and the downgrade completes with it.
#[test]
fn a_downgrade_whose_reply_is_lost_adopts_its_read_node() {
    let zk = server();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let a = via_proxy(&proxy, 4 * SEC);
    let b = common::connect(&zk.connect_string());
    let (_, write) = a.read_write_lock("/lost-downgrade", LockOptions::default()).unwrap().into_sides();
    let w = write.acquire(Some(5 * SEC)).unwrap();
    proxy.drop_next_create_reply();
    let r = w.downgrade().expect("the downgrade completes after the lost reply");
    assert_eq!(proxy.dropped_replies(), 1, "the transaction's reply was dropped");
    assert_eq!(r.sequence(), w.sequence());
    assert!(r.node_path().contains("-__READ__"), "{}", r.node_path());
    let q = b.participants("/lost-downgrade").unwrap();
    assert_eq!(q.len(), 2, "the write node and one read node: {q:?}");
    w.release().unwrap();
    r.check().unwrap();
    r.release().unwrap();
    assert!(queue(&b, "/lost-downgrade").is_empty());
}

/// A downgrade is one request: with the connection silent it fails within
/// about the operation timeout (1 s here) rather than wait for the server
/// (an outside test saw it wait until the connection came back).
#[test]
fn a_downgrade_on_a_silent_connection_fails_within_the_operation_timeout() {
    let zk = server();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let a = via_proxy(&proxy, 4 * SEC);
    let (_, write) = a.read_write_lock("/silent-downgrade", LockOptions::default()).unwrap().into_sides();
    let w = write.acquire(Some(5 * SEC)).unwrap();
    proxy.blackhole();
    let t = std::time::Instant::now();
    let e = w.downgrade().map(drop).expect_err("no read lock from a silent server");
    assert!(t.elapsed() < 5 * SEC, "the downgrade waited {:?} ({e})", t.elapsed());
    proxy.heal();
}

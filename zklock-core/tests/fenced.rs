//! Fenced writes (`Guard::fenced_multi`) against a real ZooKeeper: made
//! only while our lock node exists, judged by ZooKeeper's own record (the
//! data and `mzxid` of the written node, read by another session), also
//! when the holder still believes it holds the lock.

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use std::time::Duration;

use common::{connect, options, server, wait_until, Raw};
use zklock_core::{Client, CreateMode, ErrorKind, FencedOp, FencedResult, LockMode, LockOptions, LockState};
use zklock_harness::Proxy;
use zklock_zk as zk;

const SEC: Duration = Duration::from_secs(1);

fn data(raw: &Raw, path: &str) -> (Vec<u8>, zk::Stat) {
    raw.block_on(raw.zk.get_data(path).value()).unwrap()
}

fn set(raw: &Raw, path: &str, value: &[u8]) {
    raw.block_on(raw.zk.set_data(path, value, -1).value()).unwrap();
}

#[test]
fn a_fenced_write_makes_every_operation_and_says_what_each_did() {
    let zk = server();
    let hosts = zk.connect_string();
    let raw = Raw::connect(&hosts);
    raw.mkdir("/jobs/state");
    let c = connect(&hosts);
    let g = c.lock("/jobs/lock").unwrap().acquire(Some(5 * SEC)).unwrap();
    let out = g
        .fenced_multi(&[
            FencedOp::create("/jobs/state/a", "1", CreateMode::Persistent),
            FencedOp::create("/jobs/state/seq-", "", CreateMode::PersistentSequential),
            FencedOp::set_data("/jobs/state", "v1", Some(0)),
            FencedOp::check("/jobs/state", Some(1)),
            FencedOp::create("/jobs/state/gone", "", CreateMode::Persistent),
            FencedOp::delete("/jobs/state/gone", None),
        ])
        .unwrap();
    assert_eq!(out.len(), 6);
    assert_eq!(out[0], FencedResult::Created { path: "/jobs/state/a".into() });
    assert!(matches!(&out[1], FencedResult::Created { path } if path.starts_with("/jobs/state/seq-0")), "{out:?}");
    assert_eq!(
        out[2..],
        [
            FencedResult::DataSet { version: 1 },
            FencedResult::Checked,
            FencedResult::Created { path: "/jobs/state/gone".into() },
            FencedResult::Deleted
        ]
    );
    assert_eq!(data(&raw, "/jobs/state").0, b"v1");
    assert_eq!(data(&raw, "/jobs/state/a").0, b"1");
    assert!(raw.exists("/jobs/state/gone").is_none());
    // An empty write only checks.
    assert_eq!(g.fenced_multi(&[]).unwrap(), []);
    // The async form, on another runtime.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let out = rt.block_on(g.fenced_multi_async(vec![FencedOp::set_data("/jobs/state", "v2", None)])).unwrap();
    assert_eq!(out, [FencedResult::DataSet { version: 2 }]);
    g.release().unwrap();
    // After the release: refused at once, nothing sent.
    let e = g.fenced_multi(&[FencedOp::set_data("/jobs/state", "late", None)]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld, "{e}");
    assert_eq!(data(&raw, "/jobs/state").0, b"v2");
}

#[test]
fn an_operation_zookeeper_refuses_is_named_and_nothing_is_written() {
    let zk = server();
    let hosts = zk.connect_string();
    let raw = Raw::connect(&hosts);
    raw.mkdir("/cas/state");
    let c = connect(&hosts);
    let g = c.lock("/cas/lock").unwrap().acquire(Some(5 * SEC)).unwrap();
    let e = g
        .fenced_multi(&[
            FencedOp::create("/cas/state/made", "", CreateMode::Persistent),
            FencedOp::set_data("/cas/state", "x", Some(7)),
        ])
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ZooKeeper, "{e}");
    let failed = e.failed_op().expect("the failed operation");
    assert_eq!((failed.index, failed.code.as_str()), (1, "BadVersion"), "{e}");
    assert!(e.message().contains("operation 1 (SET_DATA \"/cas/state\")"), "{e}");
    assert!(raw.exists("/cas/state/made").is_none(), "the create before the refused operation was not made");
    let e = g.fenced_multi(&[FencedOp::delete("/cas/nothing", None)]).unwrap_err();
    assert_eq!(e.failed_op().map(|f| (f.index, f.code.as_str())), Some((0, "NoNode")), "{e}");
    let e = g.fenced_multi(&[FencedOp::create("/cas/state", "", CreateMode::Persistent)]).unwrap_err();
    assert_eq!(e.failed_op().map(|f| f.code.as_str()), Some("NodeExists"), "{e}");
    // Bad input: refused before anything is sent, naming the operation.
    let e = g.fenced_multi(&[FencedOp::check("/cas/state", None), FencedOp::delete("cas", None)]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidPath, "{e}");
    assert!(e.message().contains("operation 1 (DELETE)"), "{e}");
    let own = g.node_path();
    let e = g.fenced_multi(&[FencedOp::delete(own.clone(), None)]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidPath, "{e}");
    assert!(raw.exists(&own).is_some());
    assert_eq!(g.state(), LockState::Held);
    g.release().unwrap();
}

/// The server's check is what refuses: the holder's replies (and so the
/// notification of its node's delete) are held back by the proxy, so when
/// it sends its write its own view still says Held and `check()` passes;
/// between that check and the write, its node was deleted and another
/// client was granted the lock. Without the check of our node in the
/// transaction this test fails (the write is made after the new grant).
#[test]
fn a_write_the_holder_still_believes_in_is_refused_after_a_new_grant() {
    let zk = server();
    let hosts = zk.connect_string();
    let raw = Raw::connect(&hosts);
    raw.mkdir("/fence/state");
    set(&raw, "/fence/state", b"v0");
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let old = Client::connect(options(&proxy.addr().to_string(), 10 * SEC)).unwrap();
    let g = old.lock("/fence/lock").unwrap().acquire(Some(5 * SEC)).unwrap();
    g.check().unwrap();
    proxy.hold_replies_now();
    // Its node is deleted (by a third party: the same fault as an expiry
    // the holder has not heard of) and the next contender is granted.
    raw.delete(&g.node_path());
    let new = connect(&hosts);
    let g2 = new.lock("/fence/lock").unwrap().acquire(Some(5 * SEC)).unwrap();
    assert_eq!(g.state(), LockState::Held, "the old holder has heard nothing");
    g.check().expect("its own view still says held");
    let before = proxy.requests().get("multi").copied().unwrap_or(0);
    let writer = std::thread::spawn(move || {
        let out = g.fenced_multi(&[FencedOp::set_data("/fence/state", "from the old holder", None)]);
        (g, out)
    });
    wait_until("the write reached ZooKeeper", 5 * SEC, || proxy.requests().get("multi").copied().unwrap_or(0) > before);
    proxy.release_held_replies();
    let (g, out) = writer.join().unwrap();
    let e = out.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LockLost, "{e}");
    assert!(e.message().contains("nothing was written"), "{e}");
    // ZooKeeper's record: the old data, last changed before the new grant.
    let (value, stat) = data(&raw, "/fence/state");
    assert_eq!(value, b"v0");
    assert!(u64::try_from(stat.mzxid).unwrap() < g2.fencing_token());
    // The new holder's fenced write is made.
    g2.fenced_multi(&[FencedOp::set_data("/fence/state", "from the new holder", None)]).unwrap();
    assert_eq!(data(&raw, "/fence/state").0, b"from the new holder");
    drop(g);
    g2.release().unwrap();
}

/// A holder cut off from ZooKeeper past its session: the session expires,
/// another client is granted the lock, and the old holder's write is
/// refused (by its own view here, or by ZooKeeper) and not made.
#[test]
fn a_holder_cut_off_past_its_session_writes_nothing_after_the_new_grant() {
    let zk = server();
    let hosts = zk.connect_string();
    let raw = Raw::connect(&hosts);
    raw.mkdir("/cut/state");
    set(&raw, "/cut/state", b"v0");
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let old = Client::connect(options(&proxy.addr().to_string(), 2 * SEC)).unwrap();
    let g = old.lock("/cut/lock").unwrap().acquire(Some(5 * SEC)).unwrap();
    let node = g.node_path();
    proxy.blackhole();
    let new = connect(&hosts);
    let g2 = new.lock("/cut/lock").unwrap().acquire(Some(20 * SEC)).unwrap();
    assert!(raw.exists(&node).is_none(), "ZooKeeper expired the old session");
    let e = g.fenced_multi(&[FencedOp::set_data("/cut/state", "late", None)]).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::LockLost | ErrorKind::ConnectionLoss), "{e}");
    proxy.heal();
    let e = g.fenced_multi(&[FencedOp::set_data("/cut/state", "later", None)]).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::LockLost | ErrorKind::ConnectionLoss), "{e}");
    let (value, stat) = data(&raw, "/cut/state");
    assert_eq!(value, b"v0");
    assert!(u64::try_from(stat.mzxid).unwrap() < g2.fencing_token());
    wait_until("the old holder knows", 20 * SEC, || g.state() == LockState::Lost);
    let e = g.fenced_multi(&[FencedOp::set_data("/cut/state", "latest", None)]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LockLost, "{e}");
    assert_eq!(data(&raw, "/cut/state").0, b"v0");
    g2.release().unwrap();
}

#[test]
fn every_kind_of_guard_fences_its_writes() {
    let zk = server();
    let hosts = zk.connect_string();
    let raw = Raw::connect(&hosts);
    raw.mkdir("/kinds/state");
    let c = connect(&hosts);
    let write = |g: &zklock_core::Guard, v: &str| g.fenced_multi(&[FencedOp::set_data("/kinds/state", v, None)]);
    let r = c.read_lock("/kinds/rw").unwrap().acquire(Some(5 * SEC)).unwrap();
    write(&r, "reader").unwrap();
    let e = c.election("/kinds/elect", "me").unwrap().acquire(Some(5 * SEC)).unwrap();
    write(&e, "leader").unwrap();
    let s = c.semaphore("/kinds/sem", 2, LockOptions::default()).unwrap().acquire(Some(5 * SEC)).unwrap();
    write(&s, "lease").unwrap();
    // The semaphore's whole path is zklock's: its leases and its mutex's
    // queue (outside attack round 16, F2: a node planted in the mutex's
    // queue blocked every later contender).
    for inside in ["/kinds/sem/leases/x", "/kinds/sem/locks/_c_planted-lock-0000000000", "/kinds/sem/x"] {
        let err = s.fenced_multi(&[FencedOp::create(inside, "", CreateMode::Ephemeral)]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidPath, "{inside}: {err}");
    }
    assert!(raw.exists("/kinds/sem/x").is_none());
    // A multi-lock: fenced by every member.
    let m = c.multi_lock(&[("/kinds/m1", LockMode::Exclusive), ("/kinds/m2", LockMode::Read)]).unwrap();
    let mg = m.acquire(Some(5 * SEC)).unwrap();
    mg.fenced_multi(&[FencedOp::set_data("/kinds/state", "both", None)]).unwrap();
    let e2 = mg.fenced_multi(&[FencedOp::check("/kinds/state", Some(99))]).unwrap_err();
    assert_eq!(e2.failed_op().map(|f| f.index), Some(0), "the index is the caller's: {e2}");
    raw.delete(&mg.guards()[1].node_path());
    let lost = mg.fenced_multi(&[FencedOp::set_data("/kinds/state", "one gone", None)]).unwrap_err();
    assert_eq!(lost.kind(), ErrorKind::LockLost, "{lost}");
    assert_eq!(data(&raw, "/kinds/state").0, b"both");
    for g in [r, e, s] {
        g.release().unwrap();
    }
    let _ = mg.release();
}

#[test]
fn paths_are_the_chroot_s_like_every_other_path() {
    let zk = server();
    let hosts = zk.connect_string();
    let raw = Raw::connect(&hosts);
    raw.mkdir("/tenant/state");
    let c = connect(&format!("{hosts}/tenant"));
    let g = c.lock("/lock").unwrap().acquire(Some(5 * SEC)).unwrap();
    let out = g.fenced_multi(&[FencedOp::create("/state/seq-", "x", CreateMode::EphemeralSequential)]).unwrap();
    let FencedResult::Created { path } = &out[0] else { panic!("{out:?}") };
    assert!(path.starts_with("/state/seq-"), "without the chroot: {path}");
    assert!(raw.exists(&format!("/tenant{path}")).is_some_and(|s| s.ephemeral_owner == g.session_id()));
    g.release().unwrap();
}

#[test]
fn a_fence_check_from_another_client_follows_the_grant() {
    let zk = server();
    let hosts = zk.connect_string();
    let raw = Raw::connect(&hosts);
    let holder = connect(&hosts);
    let checker = connect(&hosts);
    let g = holder.lock("/check/lock").unwrap().acquire(Some(5 * SEC)).unwrap();
    let (node, token) = (g.node_path(), g.fencing_token());
    checker.fence_check(&node, token).unwrap();
    let e = checker.fence_check(&node, token + 1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LockLost, "{e}");
    assert!(e.message().contains("another node"), "{e}");
    let e = checker.fence_check("relative", token).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidPath, "{e}");
    g.release().unwrap();
    let e = checker.fence_check(&node, token).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LockLost, "{e}");
    assert!(e.message().contains("is gone"), "{e}");
    // Made again by a third party under the same name: another czxid.
    raw.create(&node, zk::CreateMode::Ephemeral);
    let e = checker.fence_check(&node, token).unwrap_err();
    assert!(e.message().contains("another node"), "{e}");
    checker.close();
    assert_eq!(checker.fence_check(&node, token).unwrap_err().kind(), ErrorKind::Closed);
}

/// The reply is bounded as the request is (outside attack round 16, F1:
/// 20,000 `set_data`s were made but reported as a lost connection, their
/// reply over the packet limit): a write whose reply fits is made and
/// answered; one whose reply would not is refused before it is sent.
#[test]
fn a_large_write_is_answered_or_refused_before_it_is_sent() {
    let zk = server();
    let hosts = zk.connect_string();
    let raw = Raw::connect(&hosts);
    raw.mkdir("/large/state");
    let c = connect(&hosts);
    let g = c.lock("/large/lock").unwrap().acquire(Some(5 * SEC)).unwrap();
    let fits: Vec<FencedOp> = (0..12_000).map(|_| FencedOp::set_data("/large/state", "", None)).collect();
    let out = g.fenced_multi(&fits).unwrap();
    assert_eq!(out.last(), Some(&FencedResult::DataSet { version: 12_000 }));
    let over: Vec<FencedOp> = (0..20_000).map(|_| FencedOp::set_data("/large/state", "", None)).collect();
    let e = g.fenced_multi(&over).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert_eq!(data(&raw, "/large/state").1.version, 12_000, "nothing more was written");
    g.check().expect("the connection was not dropped");
    g.release().unwrap();
}

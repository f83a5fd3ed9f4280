//! Leader election (`Client::election`, Curator `LeaderLatch` layout): one
//! leader at a time in join order, the leader named by `Client::leader`
//! with its id, resigning hands over to the next, a lost leader is told
//! before the next one leads, bad ids refused at once.

mod common;

use std::time::Duration;

use common::*;
use zklock_core::{AcquireOptions, ErrorKind, LockMode, LockState, NodeKind};

const LONG: Duration = Duration::from_secs(20);

#[test]
fn participants_lead_one_at_a_time_in_join_order_and_resigning_hands_over() {
    let zk = server();
    let hosts = zk.connect_string();
    let clients: Vec<_> = (0..3).map(|_| connect(&hosts)).collect();
    let elections: Vec<_> =
        clients.iter().enumerate().map(|(i, c)| c.election("/elect", format!("node-{i}")).expect("election")).collect();
    assert_eq!(elections[0].mode(), LockMode::Leader);
    assert!(clients[0].leader("/elect").expect("leader").is_none(), "nobody takes part yet");

    let first = elections[0].acquire(Some(LONG)).expect("the only participant leads");
    assert!(first.node_path().rsplit('/').next().expect("name").contains("-latch-"), "{}", first.node_path());
    // The two others join and wait, in order.
    let mut waiting = Vec::new();
    for (i, e) in elections.iter().enumerate().skip(1) {
        let e = e.clone();
        waiting.push(std::thread::spawn(move || e.acquire(Some(LONG))));
        wait_until("the participant queued", LONG, || clients[0].participants("/elect").expect("list").len() == i + 1);
    }
    let parts = clients[0].participants("/elect").expect("participants");
    let ids: Vec<_> = parts.iter().map(|p| String::from_utf8_lossy(&p.data).into_owned()).collect();
    assert_eq!(ids, ["node-0", "node-1", "node-2"]);
    assert!(parts[0].holds && !parts[1].holds && !parts[2].holds);
    assert!(parts.iter().all(|p| p.kind == NodeKind::Writer));
    let leader = clients[2].leader("/elect").expect("leader").expect("a leader");
    assert_eq!(leader.data, b"node-0");
    assert_eq!(leader.session_id, clients[0].session_id().expect("session"));

    // Resigning hands leadership to the next in join order, and so on.
    let mut current = first;
    for (i, h) in waiting.into_iter().enumerate() {
        current.release().expect("resigned");
        assert!(current.check().is_err());
        current = h.join().expect("joined").expect("the next leads");
        let leader = clients[0].leader("/elect").expect("leader").expect("a leader");
        assert_eq!(leader.data, format!("node-{}", i + 1).as_bytes());
        assert_eq!(leader.session_id, clients[i + 1].session_id().expect("session"));
    }
    current.release().expect("resigned");
    assert!(clients[0].leader("/elect").expect("leader").is_none());
}

#[test]
fn a_leader_whose_node_is_deleted_knows_before_the_next_leads() {
    let zk = server();
    let hosts = zk.connect_string();
    let raw = Raw::connect(&hosts);
    let (a, b) = (connect(&hosts), connect(&hosts));
    let leading = a.election("/elect-lost", "a").expect("election").acquire(Some(LONG)).expect("leads");
    let b_election = b.election("/elect-lost", "b").expect("election");
    let next = std::thread::spawn(move || b_election.acquire(Some(LONG)));
    wait_until("b waits", LONG, || raw.children("/elect-lost").len() == 2);
    raw.delete(&leading.node_path());
    let next = next.join().expect("joined").expect("b leads");
    // By the time b leads, a's check() already fails: its node was gone
    // before b's wait could end.
    assert_eq!(leading.check().expect_err("a no longer leads").kind(), ErrorKind::LockLost);
    assert_eq!(leading.state(), LockState::Lost);
    next.check().expect("b leads");
    assert!(next.fencing_token() > leading.fencing_token());
}

#[test]
fn bad_ids_are_refused_at_once_and_an_async_participant_cancels_cleanly() {
    let zk = server();
    let hosts = zk.connect_string();
    let c = connect(&hosts);
    let err = c.election("/elect-bad", vec![b'x'; 64 * 1024 + 1]).expect_err("id too large");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let err = c.election("/elect-bad", "__REVOKE__").expect_err("Curator's revocation bytes");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let err = c.election("elect-bad", "x").expect_err("relative path");
    assert_eq!(err.kind(), ErrorKind::InvalidPath, "{err}");

    // A waiting participant given a timeout leaves the election when it
    // runs out; one given a cancelled token never joins.
    let leader = c.election("/elect-bad", "leader").expect("election").acquire(Some(LONG)).expect("leads");
    let other = connect(&hosts);
    let e = other.election("/elect-bad", "waiter").expect("election");
    let err = e.acquire(Some(Duration::from_millis(300))).expect_err("times out");
    assert_eq!(err.kind(), ErrorKind::Timeout);
    let token = zklock_core::CancelToken::new();
    token.cancel();
    let err = e.acquire(AcquireOptions::new().cancel_token(token)).expect_err("cancelled");
    assert_eq!(err.kind(), ErrorKind::Cancelled);
    wait_until("only the leader left", LONG, || c.participants("/elect-bad").expect("participants").len() == 1);
    leader.release().expect("resigned");
    assert!(c.leader("/elect-bad").expect("leader").is_none());
}

/// Leadership as a task (`Lock::run_async`, Curator's `LeaderSelector`):
/// one task at a time, in join order, each released when it returns; a
/// loop stands again with a newer token each time.
#[test]
fn leadership_as_a_task_runs_one_leader_at_a_time_and_a_loop_stands_again() {
    use std::sync::{Arc, Mutex};
    let zk = server();
    let hosts = zk.connect_string();
    let (c1, c2) = (connect(&hosts), connect(&hosts));
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let task = |who: &'static str, log: Arc<Mutex<Vec<String>>>| {
        move |guard: Arc<zklock_core::Guard>| async move {
            log.lock().unwrap().push(format!("{who} start"));
            tokio::time::sleep(Duration::from_millis(300)).await;
            log.lock().unwrap().push(format!("{who} end"));
            guard.fencing_token()
        }
    };
    let e1 = c1.election("/task", "one").unwrap();
    let e2 = c2.election("/task", "two").unwrap();
    let first = rt.spawn(e1.run_async(AcquireOptions::new(), task("one", log.clone())));
    wait_until("one leads", LONG, || log.lock().unwrap().len() == 1);
    let second = rt.spawn(e2.run_async(AcquireOptions::new(), task("two", log.clone())));
    let t1 = rt.block_on(first).unwrap().unwrap();
    let t2 = rt.block_on(second).unwrap().unwrap();
    assert_eq!(*log.lock().unwrap(), ["one start", "one end", "two start", "two end"]);
    assert!(t2 > t1);
    assert!(queue(&c1, "/task").is_empty(), "each released when its task returned");
    // Auto-requeue is a loop: each round leads anew, with a newer token.
    let mut tokens = Vec::new();
    for _ in 0..2 {
        tokens.push(rt.block_on(e1.run_async(AcquireOptions::new(), |g| async move { g.fencing_token() })).unwrap());
    }
    assert!(t2 < tokens[0] && tokens[0] < tokens[1], "{tokens:?}");
}

/// A leader whose node is deleted (its leadership lost) has its task
/// cancelled (dropped) and the call fails with the loss; nothing is left
/// on the path.
#[test]
fn a_task_is_cancelled_when_its_leadership_is_lost() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    struct Dropped(Arc<AtomicBool>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let zk = server();
    let hosts = zk.connect_string();
    let c = connect(&hosts);
    let raw = Raw::connect(&hosts);
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let run = rt.spawn(c.election("/cut", "me").unwrap().run_async(AcquireOptions::new(), move |_guard| async move {
        let _mark = Dropped(flag);
        std::future::pending::<()>().await;
    }));
    wait_until("leading", LONG, || queue(&c, "/cut").len() == 1);
    raw.delete(&format!("/cut/{}", queue(&c, "/cut")[0]));
    let e = rt.block_on(run).unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LockLost, "{e}");
    assert!(dropped.load(Ordering::SeqCst), "the task was dropped");
    assert!(queue(&c, "/cut").is_empty());
}

//! The async API and per-call cancellation: futures awaited on executors
//! that are not the client's, a cancel token that cancels its own call
//! only (also when cancelled before the call), a dropped acquire future
//! that deletes its node, and the callback form's thread and outcome.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use futures_executor::block_on;
use zklock_core::{tried_once, AcquireOptions, CancelToken, Client, ErrorKind, ReleaseStatus};

const LONG: Duration = Duration::from_secs(20);

#[test]
fn every_async_call_works_on_an_executor_that_is_not_tokio() {
    let zk = server();
    let hosts = zk.connect_string();
    // futures-executor's block_on: no tokio runtime anywhere on this thread.
    block_on(async {
        let client = Client::connect_async(options(&hosts, Duration::from_secs(4))).await.expect("connects");
        let lock = client.lock("/async").expect("lock");
        let guard = lock.acquire_async(AcquireOptions::new()).await.expect("acquired");
        let parts = client.participants_async("/async").await.expect("participants");
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].name, guard.node_path().rsplit('/').next().expect("name"));
        let other = connect(&hosts).lock("/async").expect("lock");
        let tried = tried_once(other.acquire_async(Duration::ZERO).await).expect("try");
        assert!(tried.is_none(), "held by the first client");
        assert_eq!(guard.release_async().await.expect("released"), ReleaseStatus::Released);
        assert!(client.participants_async("/async").await.expect("participants").is_empty());
        let second = guard.release_async().await.expect_err("second release");
        assert_eq!(second.kind(), ErrorKind::NotHeld);
        // An acquire in progress can be polled by hand too (and its outcome
        // comes once).
        let mut pending = lock.acquire_async(AcquireOptions::new()).started().expect("started");
        let begun = std::future::poll_fn(|cx| Pin::new(&mut pending).poll(cx)).await.expect("acquired");
        let again = std::future::poll_fn(|cx| Pin::new(&mut pending).poll(cx)).await.expect_err("taken already");
        assert_eq!(again.kind(), ErrorKind::Internal);
        assert_eq!(
            pending.wait_timeout(Duration::ZERO).expect("an answer").expect_err("taken").kind(),
            ErrorKind::Internal
        );
        begun.release_async().await.expect("released");
        // The one-request calls: the shared count, a revoke.
        client.set_shared_count_async("/async-count", 3).await.expect("set");
        assert_eq!(client.shared_count_async("/async-count").await.expect("read"), 3);
        let bad = client.set_shared_count_async("/async-count", -1).await.expect_err("negative");
        assert_eq!(bad.kind(), ErrorKind::InvalidArgument);
        assert_eq!(client.shared_count_async("rel").await.expect_err("path").kind(), ErrorKind::InvalidPath);
        let kept = lock.acquire_async(AcquireOptions::new()).await.expect("acquired");
        let (told, heard) = mpsc::channel();
        let _sub = kept.on_revocation(move || {
            let _ = told.send(());
        });
        assert!(client.revoke_async(&kept.node_path()).await.expect("revoked"));
        heard.recv_timeout(LONG).expect("the holder is told");
        // Made when first polled, not before.
        let unpolled = client.set_shared_count_async("/async-count", 4);
        assert_eq!(client.shared_count_async("/async-count").await.expect("read"), 3);
        drop(unpolled);
        assert_eq!(
            client.shared_count_async("/async-count").await.expect("read"),
            3,
            "a future never polled made nothing"
        );
        client.close_async().await;
        assert_eq!(client.revoke_async("/x").await.expect_err("closed").kind(), ErrorKind::Closed);
        assert!(client.is_closed());
        assert_eq!(kept.check().expect_err("closed").kind(), ErrorKind::Closed);
    });
}

#[test]
fn a_cancel_token_cancels_its_own_call_and_no_other() {
    let zk = server();
    let hosts = zk.connect_string();
    let holder = connect(&hosts);
    let held = holder.lock("/per-call").expect("lock").acquire(Some(LONG)).expect("held");
    let waiter = connect(&hosts);
    let raw = Raw::connect(&hosts);
    // 1,000 acquires sharing one handle: each its own contender, its own node.
    let shared_handle = waiter.lock("/per-call").expect("lock");
    let tokens: Vec<CancelToken> = (0..1000).map(|_| CancelToken::new()).collect();
    let (tx, rx) = mpsc::channel();
    for (i, token) in tokens.iter().enumerate() {
        let tx = tx.clone();
        let call = shared_handle.acquire_async(AcquireOptions::new().cancel_token(token.clone()));
        waiter.spawn_then(call, move |out| drop(tx.send((i, out)))).expect("started");
    }
    wait_until("the 1,000 acquires queued", LONG, || raw.children("/per-call").len() == 1001);
    tokens[0].cancel();
    tokens[500].cancel();
    let mut cancelled = Vec::new();
    while cancelled.len() < 2 {
        let (i, out) = rx.recv_timeout(LONG).expect("a cancelled call ends");
        assert_eq!(out.expect_err("cancelled").kind(), ErrorKind::Cancelled, "call {i}");
        cancelled.push(i);
    }
    cancelled.sort_unstable();
    assert_eq!(cancelled, [0, 500]);
    // Their nodes are gone; the other 998 still wait.
    wait_until("the cancelled calls' nodes deleted", LONG, || raw.children("/per-call").len() == 999);
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err(), "no other call ended");
    held.release().expect("released");
    // The 998 are granted one after another (each released at once).
    for _ in 0..998 {
        let (i, out) = rx.recv_timeout(LONG).expect("the others are granted");
        assert!(i != 0 && i != 500);
        let guard = out.expect("granted");
        guard.release().expect("released");
    }
    assert!(raw.children("/per-call").is_empty());
}

#[test]
fn a_token_cancelled_before_the_call_fails_it_at_once_and_creates_nothing() {
    let zk = server();
    let hosts = zk.connect_string();
    let client = connect(&hosts);
    let raw = Raw::connect(&hosts);
    let lock = client.lock("/early").expect("lock");
    let token = CancelToken::new();
    token.cancel();
    let opts = AcquireOptions::new().cancel_token(token);
    assert_eq!(lock.acquire(&opts).expect_err("cancelled").kind(), ErrorKind::Cancelled);
    assert_eq!(block_on(lock.acquire_async(opts.clone())).expect_err("cancelled").kind(), ErrorKind::Cancelled);
    assert_eq!(lock.acquire_async(&opts).started().expect_err("cancelled").kind(), ErrorKind::Cancelled);
    assert!(raw.children("/early").is_empty(), "no node made");
    // The handle is unaffected: a call with no token acquires.
    lock.acquire(Some(LONG)).expect("acquired").release().expect("released");
}

#[test]
fn a_dropped_acquire_future_deletes_its_node() {
    let zk = server();
    let hosts = zk.connect_string();
    let holder = connect(&hosts);
    let held = holder.lock("/dropped").expect("lock").acquire(Some(LONG)).expect("held");
    let waiter = connect(&hosts).lock("/dropped").expect("lock");
    let raw = Raw::connect(&hosts);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    // The call starts its work at once (on the client's runtime): seen
    // queued before the future is dropped (read after the drop, the count
    // raced the cleanup on a loaded machine).
    let acquire = waiter.acquire_async(AcquireOptions::new());
    wait_until("the waiter queued", LONG, || raw.children("/dropped").len() == 2);
    rt.block_on(async {
        // The caller gives up (select/timeout): the future is dropped.
        let out = tokio::time::timeout(Duration::from_millis(500), acquire).await;
        assert!(out.is_err(), "still waiting behind the holder");
    });
    wait_until("the dropped waiter's node deleted", LONG, || raw.children("/dropped").len() == 1);
    // A future dropped without ever being polled: its call had started (the
    // work runs on the client's runtime) and is cancelled too.
    let unpolled = waiter.acquire_async(AcquireOptions::new());
    wait_until("the unpolled acquire queued", LONG, || raw.children("/dropped").len() == 2);
    drop(unpolled);
    wait_until("the unpolled acquire's node deleted", LONG, || raw.children("/dropped").len() == 1);
    held.release().expect("released");
    assert!(raw.children("/dropped").is_empty());
}

#[test]
fn a_guard_dropped_inside_a_runtime_is_released_in_the_background() {
    let zk = server();
    let hosts = zk.connect_string();
    let client = connect(&hosts);
    let raw = Raw::connect(&hosts);
    let lock = client.lock("/drop-in-async").expect("lock");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let guard = lock.acquire_async(AcquireOptions::new()).await.expect("acquired");
        drop(guard);
    });
    wait_until("the dropped guard's node deleted", LONG, || raw.children("/drop-in-async").is_empty());
    assert!(lock.try_acquire().expect("try").is_some(), "free again");
}

#[test]
fn an_acquire_spawned_then_calls_back_once_on_the_event_thread() {
    let zk = server();
    let hosts = zk.connect_string();
    let client = connect(&hosts);
    let lock = client.lock("/callback").expect("lock");
    let (tx, rx) = mpsc::channel();
    client
        .spawn_then(lock.acquire_async(AcquireOptions::new()), move |out| {
            let thread = std::thread::current().name().map(str::to_owned);
            // Blocking calls are allowed here.
            let status = out.and_then(|g| g.release());
            let _ = tx.send((thread, status));
        })
        .expect("started");
    let (thread, status) = rx.recv_timeout(LONG).expect("called back");
    assert_eq!(thread.as_deref(), Some("zklock-events"));
    assert_eq!(status.expect("acquired and released"), ReleaseStatus::Released);
    assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "called once");
}

#[test]
fn connect_then_calls_back_with_the_client_and_refuses_bad_input_at_once() {
    let zk = server();
    let hosts = zk.connect_string();
    let (tx, rx) = mpsc::channel();
    Client::connect_then(options(&hosts, Duration::from_secs(4)), move |r| {
        let _ = tx.send((std::thread::current().name().map(str::to_owned), r));
    })
    .expect("started");
    let (thread, client) = rx.recv_timeout(LONG).expect("called back");
    assert_eq!(thread.as_deref(), Some("zklock-events"));
    let client = client.expect("connected");
    assert!(client.lock("/after-connect-then").expect("lock").try_acquire().expect("try").is_some());
    let bad = Client::connect_then(zklock_core::ClientOptions::new(""), |_| panic!("never called"));
    assert_eq!(bad.expect_err("empty connect string").kind(), ErrorKind::InvalidArgument);
}

/// A per-call cancel or a dropped future racing with the grant ends in a
/// guard or in `Cancelled`, and leaves no node behind either way.
#[test]
fn a_cancel_racing_with_the_grant_leaves_no_node() {
    let zk = server();
    let hosts = zk.connect_string();
    let holder = connect(&hosts).lock("/race").expect("lock");
    let waiter = connect(&hosts).lock("/race").expect("lock");
    let raw = Raw::connect(&hosts);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let (mut granted, mut cancelled) = (0, 0);
    for i in 0..60 {
        let held = holder.acquire(Some(LONG)).expect("held");
        let token = CancelToken::new();
        let acquire = waiter.acquire_async(AcquireOptions::new().cancel_token(token.clone()));
        let acquire = rt.spawn(acquire);
        wait_until("queued", LONG, || raw.children("/race").len() == 2);
        // Release and cancel at once; every third round drops the future instead.
        drop(held);
        let out = if i % 3 == 2 {
            acquire.abort();
            // Drive the runtime so that the aborted task is dropped (if the
            // grant won, its guard comes back here and is released).
            drop(rt.block_on(acquire));
            None
        } else {
            token.cancel();
            Some(rt.block_on(acquire).expect("joined"))
        };
        match out {
            Some(Ok(g)) => {
                granted += 1;
                g.release().expect("released");
            },
            Some(Err(e)) => {
                assert_eq!(e.kind(), ErrorKind::Cancelled, "round {i}: {e}");
                cancelled += 1;
            },
            None => {},
        }
        wait_until("no node left", LONG, || raw.children("/race").is_empty());
    }
    assert!(granted + cancelled == 40, "{granted} granted, {cancelled} cancelled");
}

/// Awaits `fut` on `rt` for at most [`LONG`] (a hang is a failure).
fn within<F: std::future::Future>(rt: &tokio::runtime::Runtime, fut: F) -> F::Output {
    rt.block_on(async { tokio::time::timeout(LONG, fut).await.expect("resolved in time") })
}

/// `Guard::lost` resolves once the guard is no longer safely held, with
/// the error `check()` gives: released (also an inner reentrant guard),
/// the node deleted by a third party, the server gone silent, the client
/// closed. And it does not resolve while the lock is safely held.
#[test]
fn lost_resolves_when_check_would_fail() {
    let zk = server();
    let hosts = zk.connect_string();
    let raw = Raw::connect(&hosts);
    let client = connect(&hosts);

    // Held: no resolution; released from another thread: NotHeld.
    let lock = client.lock("/lost").expect("lock");
    let guard = lock.acquire(Some(LONG)).expect("held");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let quiet = rt.block_on(async { tokio::time::timeout(Duration::from_millis(500), guard.lost()).await });
    assert!(quiet.is_err(), "lost() resolved while the lock was held: {quiet:?}");
    let lost = guard.lost();
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        guard.release().expect("released");
    });
    assert_eq!(within(&rt, lost).kind(), ErrorKind::NotHeld);
    releaser.join().expect("joined");

    // An inner guard of a reentrant handle: its own release (no state of
    // the lock changes; the release wakes lost()).
    let reentrant = reentrant_lock_of(&client, "/lost-inner", zklock_core::LockMode::Exclusive);
    let (outer, inner) = (reentrant.acquire(Some(LONG)).expect("held"), reentrant.acquire(Some(LONG)).expect("again"));
    let lost = inner.lost();
    // Let its watch start waiting first (it runs on the client's runtime):
    // then the release itself must wake it, well before the safety clock
    // (some 3 s ahead on the test server's 4 s sessions) would.
    std::thread::sleep(Duration::from_millis(300));
    inner.release().expect("released");
    let e = rt.block_on(async { tokio::time::timeout(Duration::from_secs(1), lost).await });
    assert_eq!(e.expect("the inner release woke lost()").kind(), ErrorKind::NotHeld);
    outer.check().expect("the outer guard still holds");
    drop(outer);

    // The node deleted by a third party: LockLost.
    let outer = client.lock("/lost-deleted").expect("lock").acquire(Some(LONG)).expect("held");
    let lost = outer.lost();
    raw.delete(&outer.node_path());
    let e = within(&rt, lost);
    assert_eq!(e.kind(), ErrorKind::LockLost, "{e}");
    assert!(outer.check().is_err());
    drop(outer);

    // The server silent (blackholed): ConnectionLoss, and check() fails too.
    let proxy = zklock_harness::Proxy::start(zk.client_addr(0)).expect("proxy");
    let silent = Client::connect(options(&proxy.addr().to_string(), Duration::from_secs(2))).expect("connects");
    let g = silent.lock("/lost-silent").expect("lock").acquire(Some(LONG)).expect("held");
    let lost = g.lost();
    proxy.blackhole();
    let e = within(&rt, lost);
    assert_eq!(e.kind(), ErrorKind::ConnectionLoss, "{e}");
    assert!(g.check().is_err(), "lost() resolved while check() still passed");
    proxy.heal();

    // The client closed: Closed.
    let g = client.lock("/lost-closed").expect("lock").acquire(Some(LONG)).expect("held");
    let lost = g.lost();
    std::thread::sleep(Duration::from_millis(300));
    client.close();
    assert_eq!(within(&rt, lost).kind(), ErrorKind::Closed);
}

/// The order of the two signals, seen from one thread: once `check()`
/// fails, the next poll of a `lost()` future that was pending resolves (an
/// outside tester found it pending up to a millisecond later, its wake
/// still on the way through the client's runtime): for a third-party
/// delete, a release by another thread and a close.
#[test]
fn a_poll_after_check_fails_resolves_lost() {
    use futures_util::FutureExt as _;
    let zk = server();
    let hosts = zk.connect_string();
    let raw = Raw::connect(&hosts);
    type Cause = fn(&Raw, &Client, &zklock_core::Guard);
    let causes: [(&str, Cause); 3] = [
        ("third-party delete", |raw, _, g| raw.delete(&g.node_path())),
        ("release by another thread", |_, _, g| {
            std::thread::scope(|s| s.spawn(|| g.release().expect("released")).join().expect("joined"));
        }),
        ("close", |_, c, _| c.close()),
    ];
    for (what, cause) in causes {
        for round in 0..15 {
            let client = connect(&hosts);
            let guard = client.lock("/lost-order").expect("lock").acquire(Some(LONG)).expect("held");
            let mut lost = Box::pin(guard.lost());
            assert!(lost.as_mut().now_or_never().is_none(), "{what}: lost() resolved while held");
            cause(&raw, &client, &guard);
            let limit = std::time::Instant::now() + LONG;
            while guard.check().is_ok() {
                assert!(std::time::Instant::now() < limit, "{what}: check() never failed");
                std::hint::spin_loop();
            }
            assert!(lost.as_mut().now_or_never().is_some(), "{what}, round {round}: check() fails, lost() pending");
            client.close();
        }
    }
}

/// An acquire stopped (cancelled, or past its deadline) while its create's
/// reply is on its way waits for that reply, within the cleanup's grace, so
/// that the node the create made is deleted before the acquire returns. An
/// outside test saw the node still listed right after a `CANCELLED`
/// rejection (the abort came in the same tick as the acquire): the node was
/// left to a background search. The proxy holds the create's reply until
/// after the stop.
#[test]
fn an_acquire_stopped_with_its_create_on_its_way_deletes_the_node_before_it_returns() {
    let zk = server();
    let hosts = zk.connect_string();
    let raw = Raw::connect(&hosts);
    raw.mkdir("/on-its-way");
    let proxy = zklock_harness::Proxy::start(zk.client_addr(0)).expect("proxy");
    let client = Client::connect(options(&proxy.addr().to_string(), 8 * Duration::from_secs(1))).expect("connect");
    for stop in ["cancel", "deadline"] {
        let lock = client.lock("/on-its-way").expect("lock");
        let token = CancelToken::new();
        let opts = match stop {
            "cancel" => AcquireOptions::new().cancel_token(token.clone()),
            _ => AcquireOptions::new().timeout(Some(Duration::from_millis(200))),
        };
        proxy.hold_replies_from_next_create();
        let started = std::time::Instant::now();
        let acquire = std::thread::spawn(move || lock.acquire(&opts));
        wait_until("the create's reply is held", LONG, || proxy.held_replies() >= 1);
        assert_eq!(raw.children("/on-its-way").len(), 1, "{stop}: the server made the node");
        // The reply comes within the grace (250 ms) after the stop.
        if stop == "cancel" {
            token.cancel();
            std::thread::sleep(Duration::from_millis(50));
        } else {
            std::thread::sleep(Duration::from_millis(250).saturating_sub(started.elapsed()));
        }
        proxy.release_held_replies();
        let e = acquire.join().expect("acquire thread").expect_err("stopped");
        let kind = if stop == "cancel" { ErrorKind::Cancelled } else { ErrorKind::Timeout };
        assert_eq!(e.kind(), kind, "{stop}: {e}");
        assert!(raw.children("/on-its-way").is_empty(), "{stop}: the node was left behind the acquire's return");
        assert_eq!(client.pending_cleanups(), 0, "{stop}: nothing left to the background");
    }
}

/// A release on its way when the client is closed ends as released or
/// `Closed`, never `LockLost`: the close took the node with the session,
/// nothing was lost before the release (an outside test got LOCK_LOST for
/// a release and a close made in the same tick, in every language).
#[test]
fn a_release_overtaken_by_close_is_not_a_lost_lock() {
    let zk = server();
    let hosts = zk.connect_string();
    let raw = Raw::connect(&hosts);
    for _ in 0..10 {
        let client = connect(&hosts);
        let guard = client.lock("/release-close").expect("lock").acquire(Some(LONG)).expect("acquired");
        let release = guard.release_async();
        client.close();
        if let Err(e) = block_on(release) {
            assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
        }
        assert!(raw.children("/release-close").is_empty());
    }
}

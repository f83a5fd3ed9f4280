//! `close()` with hundreds of acquires just given up returns (outside
//! attack round 21, F1: with more than 64 calls held back in the session,
//! its close went back to the end of their queue and, with a second close,
//! the two took turns there for ever on the runtime's thread: `close()`
//! never returned, the runtime spun a core and the session stayed open
//! until it expired). Judged from outside: `close()` returns, and the
//! server's record shows the session's nodes gone.

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use std::time::{Duration, Instant};

use common::{connect, server, wait_until, Raw};
use zklock_core::{AcquireOptions, CancelToken};

#[test]
fn close_returns_after_hundreds_of_acquires_were_cancelled() {
    const N: usize = 300;
    let zk = server();
    let hosts = zk.connect_string();
    let client = connect(&hosts);
    let other = connect(&hosts);
    let raw = Raw::connect(&hosts);
    let blocker = other.lock("/close-burst/q").unwrap().acquire(None).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let token = CancelToken::new();
    let waiters: Vec<_> = (0..N)
        .map(|_| {
            let options = AcquireOptions::new().cancel_token(token.clone());
            rt.spawn(client.lock("/close-burst/q").unwrap().acquire_async(options))
        })
        .collect();
    wait_until("every waiter queued", Duration::from_secs(120), || raw.children("/close-burst/q").len() > N);
    // Every waiter gives up at once (N deletes of their nodes), then close.
    token.cancel();
    let (done_tx, done) = std::sync::mpsc::channel();
    let closing = client.clone();
    let began = Instant::now();
    std::thread::spawn(move || {
        closing.close();
        let _ = done_tx.send(began.elapsed());
    });
    let took = done.recv_timeout(Duration::from_secs(30)).expect("close() returned within 30 s");
    eprintln!("close() returned after {took:?}");
    for w in waiters {
        assert!(rt.block_on(w).unwrap().is_err(), "a cancelled waiter was granted");
    }
    // The session is closed: its nodes are gone (not left to its expiry).
    wait_until("the closed session's nodes gone", Duration::from_secs(3), || raw.children("/close-burst/q").len() == 1);
    blocker.release().unwrap();
    other.close();
}

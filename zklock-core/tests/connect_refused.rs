//! A connect where nothing listens fails at once, naming the servers
//! (issue 30 item 4): when every server of the connect string refused the
//! TCP connection (or its name does not resolve), `Client::connect` fails
//! with CONNECTION_LOSS long before its connect timeout, saying
//! "connection refused by HOST:PORT". A server that refuses beside one
//! that answers is skipped, and one that accepts but never answers keeps
//! the whole connect timeout. No timing is asserted beyond "well below the
//! connect timeout" (30 s here).

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use zklock_core::{Client, ClientOptions, Error, ErrorKind};

const SEC: Duration = Duration::from_secs(1);

/// A loopback port that nothing listens on (bound, then let go).
fn free_port() -> u16 {
    free_ports::<1>()[0]
}

/// `N` different loopback ports that nothing listens on (all bound at
/// once, then let go).
fn free_ports<const N: usize>() -> [u16; N] {
    let held: Vec<TcpListener> = (0..N).map(|_| TcpListener::bind("127.0.0.1:0").unwrap()).collect();
    std::array::from_fn(|i| held[i].local_addr().unwrap().port())
}

/// A connect to `hosts` with a connect timeout of `timeout`: its error
/// and how long it took.
fn failed_connect(hosts: &str, timeout: Duration) -> (Error, Duration) {
    let began = Instant::now();
    let e = Client::connect(ClientOptions::new(hosts).connect_timeout(timeout)).unwrap_err();
    let took = began.elapsed();
    eprintln!("{hosts}: after {took:?}: {e}");
    (e, took)
}

/// A connect to `hosts` with a connect timeout of 30 s fails with
/// CONNECTION_LOSS saying each of `says`, well within the timeout.
fn refused_at_once(hosts: &str, says: &[&str]) {
    let (e, took) = failed_connect(hosts, 30 * SEC);
    assert_eq!(e.kind(), ErrorKind::ConnectionLoss, "{e}");
    for s in says {
        assert!(e.message().contains(s), "{e} should say {s:?}");
    }
    assert!(took < 10 * SEC, "refused, yet it waited {took:?} of the 30 s connect timeout: {e}");
}

#[test]
fn one_refusing_server_fails_at_once_naming_it() {
    let port = free_port();
    refused_at_once(&format!("127.0.0.1:{port}"), &[&format!("connection refused by 127.0.0.1:{port}")]);
}

#[test]
fn two_refusing_servers_with_a_chroot_fail_at_once_naming_both() {
    let [a, b] = free_ports();
    let says = format!("connection refused by 127.0.0.1:{a} and 127.0.0.1:{b}");
    refused_at_once(&format!("127.0.0.1:{a},127.0.0.1:{b}/app"), &[&says]);
}

#[test]
fn an_ipv6_literal_and_a_name_that_does_not_resolve_fail_at_once() {
    // Skipped where the host has no IPv6 loopback.
    let Ok(v6) = TcpListener::bind("[::1]:0") else { return };
    let port = v6.local_addr().unwrap().port();
    drop(v6);
    let says = format!("connection refused by [::1]:{port}");
    refused_at_once(
        &format!("[::1]:{port},no-such-host.invalid:2181"),
        &[&says, "no-such-host.invalid:2181: the name does not resolve"],
    );
}

#[test]
fn a_refusing_server_beside_a_live_one_is_skipped() {
    let zk = common::server();
    let hosts = format!("127.0.0.1:{},{}", free_port(), zk.connect_string());
    let c = Client::connect(ClientOptions::new(&hosts).connect_timeout(30 * SEC)).unwrap();
    c.lock("/refused/job").unwrap().acquire(Some(10 * SEC)).unwrap().release().unwrap();
}

#[test]
fn a_server_that_accepts_but_never_answers_keeps_the_connect_timeout() {
    // The kernel completes the TCP handshake for the listener's backlog;
    // nobody ever reads or answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let (e, took) = failed_connect(&format!("127.0.0.1:{port}"), 2 * SEC);
    assert_eq!(e.kind(), ErrorKind::ConnectionLoss, "{e}");
    assert!(took >= 2 * SEC, "a slow server must keep the connect timeout, failed after {took:?}: {e}");
    assert!(!e.message().contains("refused"), "{e}");
    // Beside a refusing one: still the timeout, and the refusal is said.
    let refusing = free_port();
    let (e, took) = failed_connect(&format!("127.0.0.1:{refusing},127.0.0.1:{port}"), 2 * SEC);
    assert_eq!(e.kind(), ErrorKind::ConnectionLoss, "{e}");
    assert!(took >= 2 * SEC, "one server is only slow, failed after {took:?}: {e}");
    assert!(e.message().contains(&format!("connection refused by 127.0.0.1:{refusing}")), "{e}");
}

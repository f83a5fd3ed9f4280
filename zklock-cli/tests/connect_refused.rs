//! `zklock` where nothing listens says so at once (issue 30 item 4): every
//! subcommand that connects exits 69 with "connection refused by
//! HOST:PORT" long before its connect timeout (30 s here), not after it
//! with "no answer".

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use std::time::{Duration, Instant};

use common::{zklock, Dir};

#[test]
fn a_refused_connection_is_said_at_once_with_the_address() {
    let d = Dir::new("connect-refused");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let hosts = format!("127.0.0.1:{port}");
    let says = format!("connection refused by 127.0.0.1:{port}");
    for (name, args) in [
        ("run", vec!["run", "--hosts", &hosts, "--connect-timeout", "30s", "/cli/refused", "--", "true"]),
        ("list", vec!["list", "--hosts", &hosts, "--connect-timeout", "30s", "/cli/refused"]),
    ] {
        let began = Instant::now();
        let o = zklock(&d, name, &args);
        let took = began.elapsed();
        eprintln!("{name}: exit {} after {took:?}: {}", o.code, o.stderr.trim());
        assert_eq!(o.code, 69, "{o:?}");
        assert!(o.stderr.contains(&says), "{name} should say {says:?}: {o:?}");
        // Said once: "cannot connect to ZooKeeper: could not connect to
        // "HOSTS": connection refused by ...", not the hosts again in front.
        assert_eq!(o.stderr.matches(&format!("\"{hosts}\"")).count(), 1, "{name}: {o:?}");
        assert!(!o.stderr.contains(&format!("at {hosts}")), "{name} names the servers twice: {o:?}");
        assert!(took < Duration::from_secs(10), "{name}: refused, yet it waited {took:?} of the 30 s connect timeout");
    }
}

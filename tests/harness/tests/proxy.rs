//! Proxy tests against a real ZooKeeper server.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use zklock_harness::{four_letter_word, parse_mode, Cluster, Proxy, ProxyGroup};

const T: Duration = Duration::from_secs(5);

fn wait_until(f: impl FnMut() -> bool) -> bool {
    zklock_harness::wait_for(T, f)
}

#[test]
fn pass_through() {
    let c = Cluster::standalone().expect("start");
    let p = Proxy::start(c.client_addr(0)).expect("proxy");
    assert_eq!(p.upstream(), c.client_addr(0));
    assert_ne!(p.addr(), c.client_addr(0));

    // Non-ZooKeeper framing (a four-letter word) is forwarded raw, and the
    // server's close is passed on.
    let out = four_letter_word(p.addr(), "srvr", T).expect("srvr through proxy");
    assert_eq!(parse_mode(&out).as_deref(), Some("standalone"), "{out}");

    // A ZooKeeper session through the proxy.
    let (mut s, sid) = common::session(p.addr(), T).expect("session via proxy");
    assert_ne!(sid, 0);
    assert_eq!(p.connections(), 1);
    let t0 = Instant::now();
    for i in 0..50 {
        let (xid, _, err) = common::call(&mut s, &common::exists_request(i, "/zookeeper")).expect("exists");
        assert_eq!((xid, err), (i, 0));
    }
    eprintln!("50 round trips through the proxy: {:?}", t0.elapsed());
    assert!(t0.elapsed() < Duration::from_secs(5));
    let (_, _, err) = common::call(&mut s, &common::create_request(100, "/via-proxy")).expect("c");
    assert_eq!(err, 0);
    assert_eq!(common::exists(c.client_addr(0), "/via-proxy"), 0);
    drop(s);
    assert!(wait_until(|| p.connections() == 0), "connection not released");
}

#[test]
fn blackhole_then_heal() {
    let c = Cluster::standalone().expect("start");
    let p = Proxy::start(c.client_addr(0)).expect("proxy");
    let short = Duration::from_millis(500);

    let (mut s, _) = common::session(p.addr(), T).expect("session");
    p.blackhole();
    assert!(p.is_blackholed());
    s.set_read_timeout(Some(short)).expect("timeout");
    s.write_all(&common::exists_request(1, "/")).expect("write");
    assert!(common::read_times_out(&mut s), "reply leaked through the blackhole");

    // New connections are accepted but get no answer.
    let e = four_letter_word(p.addr(), "ruok", short).expect_err("blackholed 4lw");
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
    let mut s2 = TcpStream::connect(p.addr()).expect("accepted while blackholed");
    s2.set_read_timeout(Some(short)).expect("timeout");
    s2.write_all(&common::connect_request()).expect("write");
    assert!(common::read_times_out(&mut s2));
    assert!(p.connections() >= 2);

    p.heal();
    assert!(!p.is_blackholed());
    // Blackholed connections are closed, without any data.
    assert!(common::closed_without_data(&mut s), "old connection not closed");
    assert!(common::closed_without_data(&mut s2), "old connection not closed");
    // New connections work again.
    assert_eq!(four_letter_word(p.addr(), "ruok", T).expect("ruok"), "imok");
    let (mut s3, _) = common::session(p.addr(), T).expect("session after heal");
    assert_eq!(common::call(&mut s3, &common::exists_request(1, "/")).expect("exists").2, 0);
}

#[test]
fn drop_connections_closes_them() {
    let c = Cluster::standalone().expect("start");
    let p = Proxy::start(c.client_addr(0)).expect("proxy");
    let (mut a, _) = common::session(p.addr(), T).expect("a");
    let (mut b, _) = common::session(p.addr(), T).expect("b");
    assert_eq!(p.connections(), 2);
    p.drop_connections();
    assert_eq!(p.connections(), 0);
    // The client sees a reset (SO_LINGER 0, no FIN first), immediately.
    a.set_read_timeout(Some(Duration::from_millis(500))).expect("t");
    b.set_read_timeout(Some(Duration::from_millis(500))).expect("t");
    let mut buf = [0u8; 16];
    let e = a.read(&mut buf).expect_err("reset expected");
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
    assert!(common::closed_without_data(&mut b));
    // Still accepting.
    let (mut s, _) = common::session(p.addr(), T).expect("new session");
    assert_eq!(common::call(&mut s, &common::exists_request(1, "/")).expect("exists").2, 0);
}

#[test]
fn drop_next_create_reply_executes_but_hides_the_outcome() {
    let c = Cluster::standalone().expect("start");
    let p = Proxy::start(c.client_addr(0)).expect("proxy");
    let direct = c.client_addr(0);

    // Prefix filter: a non-matching create passes.
    p.drop_next_create_reply_matching("/locks/");
    assert!(p.drop_create_reply_armed());
    let (mut s, _) = common::session(p.addr(), T).expect("session");
    let (xid, _, err) = common::call(&mut s, &common::create_request(1, "/other")).expect("c");
    assert_eq!((xid, err), (1, 0));
    assert!(p.drop_create_reply_armed());
    assert!(p.disarm_drop_create_reply());
    assert!(!p.drop_create_reply_armed());
    assert_eq!(common::call(&mut s, &common::create_request(2, "/locks")).expect("c").2, 0);

    // Armed: the create is executed, its reply dropped, the connection closed.
    p.drop_next_create_reply();
    // Requests before the create are answered normally.
    assert_eq!(common::call(&mut s, &common::exists_request(3, "/other")).expect("e").2, 0);
    s.write_all(&common::create_request(4, "/locks/n1")).expect("write create");
    assert!(common::closed_without_data(&mut s), "reply was not dropped");
    assert_eq!(p.dropped_replies(), 1);
    assert!(!p.drop_create_reply_armed());
    assert_eq!(common::exists(direct, "/locks/n1"), 0, "create not executed");

    // One-shot: the next create goes through.
    let (mut s, _) = common::session(p.addr(), T).expect("session 2");
    assert_eq!(common::call(&mut s, &common::create_request(1, "/locks/n2")).expect("c").2, 0);
    assert_eq!(p.dropped_replies(), 1);
}

#[test]
fn proxy_group_and_upstream_down() {
    let c = Cluster::standalone().expect("start");
    let g = ProxyGroup::for_cluster(&c).expect("group");
    assert_eq!(g.len(), 1);
    let addr = g.proxy(0).expect("proxy 0").addr();
    assert_eq!(g.connect_string(), addr.to_string());

    g.drop_next_create_reply();
    let (mut s, _) = common::session(addr, T).expect("session");
    s.write_all(&common::create_request(1, "/g")).expect("write");
    assert!(common::closed_without_data(&mut s));
    assert_eq!(g.dropped_replies(), 1);
    assert_eq!(common::exists(c.client_addr(0), "/g"), 0);

    g.blackhole();
    let e = four_letter_word(addr, "ruok", Duration::from_millis(300)).expect_err("blackholed");
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
    g.heal();
    assert_eq!(four_letter_word(addr, "ruok", T).expect("healed"), "imok");

    let (mut s, _) = common::session(addr, T).expect("session");
    g.drop_connections();
    assert!(common::closed_without_data(&mut s));

    // Server killed: a live proxied connection is closed, new ones are reset.
    let (mut s, _) = common::session(addr, T).expect("session");
    c.kill(0).expect("kill");
    assert!(common::closed_without_data(&mut s));
    assert!(four_letter_word(addr, "ruok", T).is_err());
    // The proxy passed the server's FIN on and waits for the client's close.
    assert_eq!(g.connections(), 1);
    drop(s);
    // Restarted on the same port: the proxy works again.
    c.restart(0).expect("restart");
    assert_eq!(four_letter_word(addr, "ruok", T).expect("after restart"), "imok");
    assert!(wait_until(|| g.connections() == 0));
}

#[test]
fn proxy_drop_closes_connections() {
    let c = Cluster::standalone().expect("start");
    let p = Proxy::start(c.client_addr(0)).expect("proxy");
    let addr = p.addr();
    let (mut s, _) = common::session(addr, T).expect("session");
    p.blackhole();
    let (mut s2, _) = (TcpStream::connect(addr).expect("connect"), ());
    s2.set_read_timeout(Some(T)).expect("t");
    assert!(wait_until(|| p.connections() == 2));
    drop(p);
    assert!(common::closed_without_data(&mut s));
    assert!(common::closed_without_data(&mut s2));
    assert!(TcpStream::connect(addr).is_err(), "listener still open");
}

#[test]
fn hold_replies_from_next_create_then_release() {
    let c = Cluster::standalone().expect("start");
    let p = Proxy::start(c.client_addr(0)).expect("proxy");
    let direct = c.client_addr(0);
    let (mut s, _) = common::session(p.addr(), T).expect("session");

    p.hold_replies_from_next_create();
    // Requests before the create are answered normally.
    assert_eq!(common::call(&mut s, &common::exists_request(1, "/")).expect("exists").2, 0);
    assert_eq!(p.held_replies(), 0);

    // create + getChildren back to back: the server answers both, the
    // client gets neither.
    let mut both = common::create_request(2, "/held");
    both.extend(common::get_children_request(3, "/"));
    s.write_all(&both).expect("write create + getChildren");
    assert!(wait_until(|| p.held_replies() >= 2), "replies not held");
    assert_eq!(common::exists(direct, "/held"), 0, "create not executed");
    s.set_read_timeout(Some(Duration::from_millis(300))).expect("timeout");
    assert!(common::read_times_out(&mut s), "a held reply leaked");
    // Requests keep flowing to the server while replies are held.
    s.write_all(&common::create_request(4, "/held2")).expect("write");
    assert!(wait_until(|| common::exists(direct, "/held2") == 0));
    assert!(wait_until(|| p.held_replies() == 3));

    // Release: every reply, in order.
    assert_eq!(p.release_held_replies(), 3);
    assert_eq!(p.held_replies(), 0);
    s.set_read_timeout(Some(T)).expect("timeout");
    let (xid, _, err) = common::reply_header(&common::read_frame(&mut s).expect("create reply"));
    assert_eq!((xid, err), (2, 0));
    let list = common::read_frame(&mut s).expect("getChildren reply");
    assert_eq!(common::reply_header(&list).0, 3);
    assert!(common::children(&list).contains(&"held".to_string()));
    let (xid, _, err) = common::reply_header(&common::read_frame(&mut s).expect("create reply"));
    assert_eq!((xid, err), (4, 0));
    // Later replies flow normally (one-shot).
    assert_eq!(common::call(&mut s, &common::create_request(5, "/held3")).expect("create").2, 0);

    // Release, then blackhole: the released reply is delivered, then
    // nothing flows either way.
    p.hold_replies_from_next_create();
    s.write_all(&common::create_request(6, "/held4")).expect("write");
    assert!(wait_until(|| p.held_replies() == 1));
    assert_eq!(p.release_held_replies(), 1);
    p.blackhole();
    assert_eq!(common::reply_header(&common::read_frame(&mut s).expect("released reply")).0, 6);
    s.set_read_timeout(Some(Duration::from_millis(300))).expect("timeout");
    s.write_all(&common::exists_request(7, "/")).expect("write");
    assert!(common::read_times_out(&mut s));
    p.heal();

    // The group forwards to its proxies; release without arming is a no-op.
    let g = ProxyGroup::for_cluster(&c).expect("group");
    assert_eq!(g.release_held_replies(), 0);
    g.hold_replies_from_next_create();
    let (mut s, _) = common::session(g.proxies()[0].addr(), T).expect("session");
    s.write_all(&common::create_request(1, "/held5")).expect("write");
    assert!(wait_until(|| g.held_replies() == 1));
    assert_eq!(g.release_held_replies(), 1);
    assert_eq!(common::reply_header(&common::read_frame(&mut s).expect("reply")).0, 1);
}

#[test]
fn raw_proxy_forwards_bytes_without_looking() {
    let c = Cluster::standalone().expect("start");
    let p = Proxy::start_raw(c.client_addr(0)).expect("raw proxy");
    assert_eq!(four_letter_word(p.addr(), "ruok", T).expect("ruok"), "imok");
    let (mut s, _) = common::session(p.addr(), T).expect("session");
    // Frame-based faults never fire: the create reply comes through.
    p.drop_next_create_reply();
    p.hold_replies_from_next_create();
    let (xid, _, err) = common::call(&mut s, &common::create_request(1, "/raw")).expect("c");
    assert_eq!((xid, err), (1, 0));
    assert_eq!((p.dropped_replies(), p.held_replies()), (0, 0));
    // Blackhole and heal work as on a framing proxy.
    p.blackhole();
    s.set_read_timeout(Some(Duration::from_millis(300))).expect("timeout");
    s.write_all(&common::exists_request(2, "/raw")).expect("write");
    assert!(common::read_times_out(&mut s));
    p.heal();
    s.set_read_timeout(Some(T)).expect("timeout");
    assert!(common::closed_without_data(&mut s));
    let (mut s, _) = common::session(p.addr(), T).expect("session after heal");
    assert_eq!(common::call(&mut s, &common::exists_request(3, "/raw")).expect("exists").2, 0);
}

#[test]
fn latency_proxy_delays_each_way_keeps_pipelining_and_counts_requests() {
    let c = Cluster::standalone().expect("start");
    let one_way = Duration::from_millis(40);
    let p = Proxy::start_with_latency(c.client_addr(0), one_way).expect("proxy");
    let (mut s, _) = common::session(p.addr(), T).expect("session via delaying proxy");
    // One round trip takes at least the two delays.
    let t0 = Instant::now();
    let (_, _, err) = common::call(&mut s, &common::exists_request(1, "/zookeeper")).expect("exists");
    assert_eq!(err, 0);
    let one = t0.elapsed();
    assert!(one >= 2 * one_way, "a round trip took {one:?}");
    // Ten requests written back to back are answered in about one round
    // trip, not ten: each waits its own delay.
    let t0 = Instant::now();
    let mut batch = Vec::new();
    for xid in 2..12 {
        batch.extend(common::exists_request(xid, "/zookeeper"));
    }
    s.write_all(&batch).expect("write");
    for xid in 2..12 {
        let body = common::read_frame(&mut s).expect("reply");
        assert_eq!(common::reply_header(&body).0, xid);
    }
    let ten = t0.elapsed();
    assert!(ten >= 2 * one_way && ten < 5 * 2 * one_way, "ten pipelined requests took {ten:?}");
    let (_, _, err) = common::call(&mut s, &common::create_request(12, "/via-delay")).expect("create");
    assert_eq!(err, 0);
    let counted = p.requests();
    assert_eq!(counted.get("exists"), Some(&11), "{counted:?}");
    assert_eq!(counted.get("create"), Some(&1), "{counted:?}");
    assert_eq!(counted.values().sum::<u64>(), 12, "the connect is not counted: {counted:?}");
    drop(s);
    assert!(wait_until(|| p.connections() == 0), "connection not released");
}

#[test]
fn reset_new_connections_and_one_connect_answered_then_reset() {
    let c = Cluster::standalone().expect("start");
    let p = Proxy::start(c.client_addr(0)).expect("proxy");
    let (mut open, _) = common::session(p.addr(), T).expect("session via proxy");
    p.reset_new_connections();
    // A new connection gets no answer: it is reset.
    assert!(common::session(p.addr(), T).is_err(), "reset at once");
    // The open one goes on.
    let (xid, _, err) = common::call(&mut open, &common::exists_request(1, "/zookeeper")).expect("exists");
    assert_eq!((xid, err), (1, 0));
    // One connection gets its connect answered, then the reset.
    p.answer_next_connect_then_reset();
    let (mut answered, sid) = common::session(p.addr(), T).expect("the connect is answered");
    assert_ne!(sid, 0);
    assert_eq!(p.connect_answers_reset(), 1);
    assert!(common::call(&mut answered, &common::exists_request(2, "/zookeeper")).is_err(), "then reset");
    assert!(common::session(p.addr(), T).is_err(), "the next is reset at once again");
    assert_eq!(p.connect_answers_reset(), 1);
    p.serve_again();
    common::session(p.addr(), T).expect("served again");
}

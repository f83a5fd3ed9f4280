//! Partition tests: one ensemble member cut off from the others (relays
//! blackholed) while its clients stay connected, against real servers.

mod common;

use std::collections::HashSet;
use std::fs;
use std::io;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use zklock_harness::{parse_mode, wait_for, Cluster, ClusterOptions};

/// A realistic follower patience: with `syncLimit=5` a follower gives up on
/// a silent leader after about 5 s.
const TICK_MS: u32 = 1000;
/// The smallest session timeout the servers accept (2 ticks).
const SESSION_MS: i32 = 2000;
const T: Duration = Duration::from_secs(5);
/// Bound of every wait for a consequence of a partition.
const LIMIT: Duration = Duration::from_secs(15);
const POLL: Duration = Duration::from_millis(100);

fn start() -> Cluster {
    let t0 = Instant::now();
    let c = Cluster::start(
        ClusterOptions::new().size(3).tick_time_ms(TICK_MS).partitionable(true).start_timeout(Duration::from_secs(25)),
    )
    .expect("start a partitionable ensemble");
    eprintln!("partitionable ensemble serving after {:?}", t0.elapsed());
    assert!(c.is_partitionable());
    c
}

/// `Ok(mode)` if member `i` serves, `Err(answer)` otherwise.
fn serving(c: &Cluster, i: usize) -> Result<String, String> {
    match c.four_letter(i, "srvr") {
        Ok(out) => parse_mode(&out).ok_or(out),
        Err(e) => Err(e.to_string()),
    }
}

/// The real quorum and election ports of every member, from the members'
/// own `zoo.cfg` (each lists itself at `0.0.0.0` with its real ports).
fn real_peer_ports(c: &Cluster) -> HashSet<u16> {
    let mut ports = HashSet::new();
    for i in 0..c.len() {
        let cfg = fs::read_to_string(c.dir().join(format!("server{}/zoo.cfg", i + 1))).expect("read zoo.cfg");
        let own = format!("server.{}=0.0.0.0:", i + 1);
        let line = cfg.lines().find_map(|l| l.strip_prefix(&own)).unwrap_or_else(|| panic!("no {own} line in {cfg}"));
        for p in line.split(':') {
            ports.insert(p.parse().expect("port"));
        }
    }
    ports
}

/// Inodes of this process' sockets (the relays' upstream connections).
fn own_socket_inodes() -> HashSet<u64> {
    let mut inodes = HashSet::new();
    for fd in fs::read_dir("/proc/self/fd").expect("/proc/self/fd").flatten() {
        if let Ok(target) = fs::read_link(fd.path()) {
            let t = target.to_string_lossy();
            if let Some(n) = t.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                inodes.insert(n.parse().expect("inode"));
            }
        }
    }
    inodes
}

/// Established connections to a member's real quorum or election port that
/// were not opened by this process, i.e. links between members that bypass
/// the relays (every relayed link is opened by a relay of this process).
fn links_bypassing_relays(c: &Cluster) -> Vec<String> {
    let ports = real_peer_ports(c);
    let ours = own_socket_inodes();
    let mut bypass = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(remote), Some(state), Some(inode)) = (f.get(2), f.get(3), f.get(9)) else {
                continue;
            };
            let port = remote.rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok());
            let inode: u64 = inode.parse().unwrap_or(0);
            // 01 = ESTABLISHED; the connecting side has the port as remote.
            if *state == "01" && port.is_some_and(|p| ports.contains(&p)) && !ours.contains(&inode) {
                bypass.push(line.trim().to_string());
            }
        }
    }
    bypass
}

fn assert_no_bypass(c: &Cluster, when: &str) {
    let bypass = links_bypassing_relays(c);
    assert!(bypass.is_empty(), "{when}: links between members bypass the relays:\n{}", bypass.join("\n"));
}

/// exists(`path`) on an open raw session; the error code, or the I/O error
/// (e.g. the server closed the connection).
fn exists_on(s: &mut TcpStream, xid: i32, path: &str) -> io::Result<i32> {
    let (x, _, err) = common::call(s, &common::exists_request(xid, path))?;
    assert_eq!(x, xid);
    Ok(err)
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

#[test]
fn partitioned_follower_serves_stale_reads_while_the_leader_expires_its_session() {
    let c = start();
    let leader = c.wait_quorum(Duration::from_secs(20)).expect("quorum");
    let f = (leader + 1) % 3;
    let other = (leader + 2) % 3;
    eprintln!("leader {leader}, partitioned follower {f}, other follower {other}");
    assert_no_bypass(&c, "after start");

    // The lock holder: a session whose only connection is to F, with an
    // ephemeral node.
    let (mut holder, sid, negotiated) =
        common::session_with_timeout(c.client_addr(f), SESSION_MS, T).expect("holder session");
    assert_eq!(negotiated, SESSION_MS);
    let (_, _, err) =
        common::call(&mut holder, &common::create_request_with_flags(1, "/lock", 1)).expect("create ephemeral");
    assert_eq!(err, 0);
    // An observer connected to the other follower.
    let (mut observer, _) = common::session(c.client_addr(other), T).expect("observer");
    assert_eq!(exists_on(&mut observer, 1, "/lock").expect("exists"), 0);
    eprintln!("holder session {sid:#x} (timeout {negotiated} ms) holds /lock through member {f}");

    let t0 = Instant::now();
    c.partition(f).expect("partition");
    assert!(c.is_partitioned(f));
    assert!(!c.is_partitioned(other));

    // The other two keep a leader: a write through the other follower.
    let (_, _, err) =
        common::call(&mut observer, &common::create_request(2, "/written")).expect("write during the partition");
    assert_eq!(err, 0);
    let t_write = t0.elapsed();

    let mut xid = 10;
    let mut last_holder_read = None; // last read answered by F
    let mut last_stale_read = None; // ... that still showed /lock
    let mut holder_closed = None;
    let mut f_not_serving = None;
    let mut expired = None; // /lock gone as seen through the other follower
    let deadline = Instant::now() + LIMIT;
    while (f_not_serving.is_none() || expired.is_none() || holder_closed.is_none()) && Instant::now() < deadline {
        xid += 1;
        if holder_closed.is_none() {
            match exists_on(&mut holder, xid, "/lock") {
                Ok(err) => {
                    last_holder_read = Some(t0.elapsed());
                    if err == 0 {
                        last_stale_read = Some(t0.elapsed());
                    }
                },
                Err(e) => {
                    holder_closed = Some(t0.elapsed());
                    eprintln!("holder connection to member {f} ended: {e}");
                },
            }
        }
        if f_not_serving.is_none() {
            if let Err(answer) = serving(&c, f) {
                f_not_serving = Some(t0.elapsed());
                eprintln!("member {f} not serving: {}", answer.trim());
            }
        }
        if expired.is_none() && exists_on(&mut observer, xid, "/lock").expect("observer") != 0 {
            expired = Some(t0.elapsed());
        }
        std::thread::sleep(POLL);
    }
    assert_no_bypass(&c, "during the partition");
    let show = |d: Option<Duration>| d.map_or("never".to_string(), |d| format!("{:.2} s", secs(d)));
    eprintln!(
        "after partition: write through member {other} done at {:.2} s; /lock gone at member \
         {other} (session expired by the leader) at {}; member {f} answered reads until {} \
         (showing /lock until {}), closed the holder's connection at {}, stopped serving at {}",
        secs(t_write),
        show(expired),
        show(last_holder_read),
        show(last_stale_read),
        show(holder_closed),
        show(f_not_serving),
    );
    assert!(t_write < T, "write took {t_write:?}");
    let expired = expired.expect("the leader never expired the holder's session");
    let f_not_serving = f_not_serving.expect("the partitioned follower kept serving");
    let last_stale_read = last_stale_read.expect("no read answered by the partitioned follower");
    assert!(last_stale_read >= Duration::from_secs(2), "member {f} stopped answering reads after {last_stale_read:?}");
    // The core scenario: the session is gone for the rest of the ensemble
    // while the partitioned follower still tells its client it holds /lock.
    assert!(
        last_stale_read > expired,
        "no stale read: /lock gone at {expired:?}, last seen through member {f} at \
         {last_stale_read:?}"
    );
    assert!(f_not_serving > Duration::from_secs(2));

    // Heal: the member rejoins as a follower and catches up.
    let t1 = Instant::now();
    c.heal_partition(f).expect("heal");
    assert!(!c.is_partitioned(f));
    c.wait_serving(f, c.options().get_start_timeout()).expect("serving again after heal");
    eprintln!("member {f} serving again {:?} after heal", t1.elapsed());
    assert_eq!(c.mode(f).expect("mode"), "follower");
    assert_eq!(c.wait_quorum(T).expect("quorum"), leader);
    assert_eq!(common::exists(c.client_addr(f), "/lock"), common::ZNONODE);
    assert_eq!(common::exists(c.client_addr(f), "/written"), 0);
    assert_no_bypass(&c, "after heal");
}

#[test]
fn partitioned_leader_is_replaced() {
    let c = start();
    let old = c.wait_quorum(Duration::from_secs(20)).expect("quorum");
    let rest: Vec<usize> = (0..3).filter(|&i| i != old).collect();

    let t0 = Instant::now();
    c.partition(old).expect("partition the leader");
    let mut new_leader = None;
    let mut old_not_serving = None;
    let deadline = Instant::now() + Duration::from_secs(20);
    while (new_leader.is_none() || old_not_serving.is_none()) && Instant::now() < deadline {
        if new_leader.is_none() {
            let modes: Vec<_> = rest.iter().map(|&i| serving(&c, i)).collect();
            if let [Ok(a), Ok(b)] = &modes[..] {
                let (a, b) = (a.as_str(), b.as_str());
                if matches!((a, b), ("leader", "follower") | ("follower", "leader")) {
                    new_leader = Some((if a == "leader" { rest[0] } else { rest[1] }, t0.elapsed()));
                }
            }
        }
        if old_not_serving.is_none() && serving(&c, old).is_err() {
            old_not_serving = Some(t0.elapsed());
        }
        std::thread::sleep(POLL);
    }
    assert_no_bypass(&c, "during the partition");
    let (new_leader, elected) = new_leader.expect("no new leader among the other two");
    let old_not_serving = old_not_serving.expect("the partitioned leader kept serving");
    eprintln!(
        "after partition of leader {old}: old leader stopped serving at {:.2} s, member \
         {new_leader} leads since {:.2} s",
        secs(old_not_serving),
        secs(elected)
    );
    assert!(rest.contains(&new_leader));
    // About syncLimit ticks of silence plus an election; not initLimit
    // ticks more (a follower that fails to reach the new leader once).
    assert!(elected < Duration::from_secs(12), "election took {elected:?}");
    // A write through the new leader's follower.
    let follower = rest.iter().copied().find(|&i| i != new_leader).expect("follower");
    let (mut s, _) = common::session(c.client_addr(follower), T).expect("session");
    assert_eq!(common::call(&mut s, &common::create_request(1, "/after-failover")).expect("write").2, 0);

    let t1 = Instant::now();
    c.heal_partition(old).expect("heal");
    c.wait_serving(old, c.options().get_start_timeout()).expect("old leader serving again");
    eprintln!("old leader {old} serving again {:?} after heal", t1.elapsed());
    assert_eq!(c.mode(old).expect("mode"), "follower");
    assert!(wait_for(T, || common::exists(c.client_addr(old), "/after-failover") == 0));
    assert_no_bypass(&c, "after heal");
}

#[test]
fn partition_needs_a_partitionable_ensemble() {
    let c = Cluster::standalone().expect("start");
    assert!(!c.is_partitionable());
    let e = c.partition(0).expect_err("not partitionable");
    assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}");
    assert_eq!(c.heal_partition(0).expect_err("not partitionable").kind(), io::ErrorKind::Unsupported);
    assert!(!c.is_partitioned(0));
    // A standalone server ignores the option.
    let c = Cluster::start(ClusterOptions::new().partitionable(true)).expect("start");
    assert!(!c.is_partitionable());
    assert_eq!(c.partition(3).expect_err("bad index").kind(), io::ErrorKind::InvalidInput);
}

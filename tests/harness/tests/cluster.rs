//! Cluster tests against real ZooKeeper servers.

mod common;

use std::io;
use std::time::{Duration, Instant};

use zklock_harness::{process_alive, Cluster, ClusterOptions};

fn wait_gone(pid: u32) -> bool {
    zklock_harness::wait_for(Duration::from_secs(5), || !process_alive(pid))
}

#[test]
fn standalone_start_four_letter_words_and_drop_cleans_up() {
    let c = Cluster::standalone().expect("start standalone");
    assert_eq!(c.len(), 1);
    let addr = c.client_addr(0);
    assert_eq!(c.connect_string(), format!("127.0.0.1:{}", addr.port()));
    assert_eq!(c.mode(0).expect("mode"), "standalone");
    assert_eq!(c.leader(), Some(0));
    assert_eq!(c.four_letter(0, "ruok").expect("ruok"), "imok");
    let wchc = c.four_letter(0, "wchc").expect("wchc");
    assert!(!wchc.is_empty());
    let cfg = std::fs::read_to_string(c.dir().join("server1/zoo.cfg")).expect("zoo.cfg");
    assert!(cfg.contains("forceSync=no"), "{cfg}");
    assert!(cfg.contains("4lw.commands.whitelist=*"), "{cfg}");

    let pid = c.pid(0).expect("running");
    assert!(process_alive(pid));
    let dir = c.dir().to_path_buf();
    assert!(dir.is_dir());
    drop(c);
    assert!(!process_alive(pid), "server {pid} survived drop");
    assert!(!dir.exists(), "{} not removed", dir.display());
}

#[test]
fn freeze_resume_kill_restart_keeps_data() {
    let c = Cluster::start(ClusterOptions::new().extra_cfg("globalOutstandingLimit=500")).expect("start");
    let addr = c.client_addr(0);

    // Some data to survive the restart.
    let (mut s, _) = common::session(addr, Duration::from_secs(5)).expect("session");
    let (_, _, err) = common::call(&mut s, &common::create_request(1, "/persist")).expect("create");
    assert_eq!(err, 0);
    drop(s);

    c.freeze(0).expect("freeze");
    assert!(c.is_frozen(0));
    let e = c.four_letter(0, "srvr").expect_err("a frozen server must not answer");
    assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
    assert_eq!(c.leader(), None);
    c.resume(0).expect("resume");
    assert!(!c.is_frozen(0));
    c.wait_serving(0, Duration::from_secs(10)).expect("serving after resume");

    let pid = c.pid(0).expect("pid");
    c.kill(0).expect("kill");
    assert!(!process_alive(pid));
    assert_eq!(c.pid(0), None);
    assert!(!c.is_running(0));
    assert!(c.four_letter(0, "ruok").is_err());
    c.kill(0).expect("kill is idempotent");
    assert_eq!(c.freeze(0).expect_err("not running").kind(), io::ErrorKind::NotConnected);

    c.restart(0).expect("restart");
    let pid2 = c.pid(0).expect("pid after restart");
    assert_ne!(pid, pid2);
    assert_eq!(c.client_addr(0), addr, "same port after restart");
    assert_eq!(common::exists(addr, "/persist"), 0, "data kept across restart");
    assert_eq!(common::exists(addr, "/nope"), common::ZNONODE);

    let t_stop = Instant::now();
    c.stop(0).expect("graceful stop");
    eprintln!("graceful stop took {:?}", t_stop.elapsed());
    assert!(!process_alive(pid2));
    assert_eq!(c.pid(0), None);
    // Port taken while the member is down: the failure is reported quickly,
    // with the server's log.
    let squatter = std::net::TcpListener::bind(addr).expect("take the port");
    let t0 = Instant::now();
    let e = c.restart(0).expect_err("port is taken");
    assert_eq!(e.kind(), io::ErrorKind::NotConnected, "{e}");
    assert!(e.to_string().contains("BindException"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(10));
    drop(squatter);
    c.start_member(0).expect("start_member");
    c.wait_serving(0, Duration::from_secs(20)).expect("serving");
    assert_eq!(c.wait_quorum(Duration::from_secs(5)).expect("quorum"), 0);
    assert_eq!(c.start_member(0).expect_err("already running").kind(), io::ErrorKind::AlreadyExists);
    assert_eq!(c.kill(5).expect_err("bad index").kind(), io::ErrorKind::InvalidInput);
    assert!(ClusterOptions::new().size(0).get_size() == 0);
    assert_eq!(Cluster::start(ClusterOptions::new().size(0)).expect_err("size 0").kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn cluster_outlives_the_thread_that_created_it() {
    // PR_SET_PDEATHSIG is per thread: the harness forks from a dedicated
    // thread so that a server does not die with the creating test thread.
    let c = std::thread::spawn(|| Cluster::standalone().expect("start")).join().expect("thread");
    std::thread::sleep(Duration::from_millis(300));
    let pid = c.pid(0).expect("still running");
    assert_eq!(c.four_letter(0, "ruok").expect("ruok"), "imok");
    // Dropping from yet another thread works too.
    std::thread::spawn(move || drop(c)).join().expect("drop thread");
    assert!(wait_gone(pid));
}

#[test]
fn ensemble_failover_and_rejoin() {
    let t0 = Instant::now();
    let c = Cluster::ensemble(3).expect("start ensemble");
    eprintln!("ensemble of 3 serving after {:?}", t0.elapsed());
    assert_eq!(c.len(), 3);
    assert_eq!(c.connect_string().split(',').count(), 3);
    let leader = c.wait_quorum(Duration::from_secs(20)).expect("quorum");
    assert_eq!(c.leader(), Some(leader));
    let modes: Vec<String> = (0..3).map(|i| c.mode(i).expect("mode")).collect();
    assert_eq!(modes.iter().filter(|m| *m == "leader").count(), 1, "{modes:?}");
    assert_eq!(modes.iter().filter(|m| *m == "follower").count(), 2, "{modes:?}");

    // Write through one member, read through another.
    let follower = (leader + 1) % 3;
    let (mut s, _) = common::session(c.client_addr(follower), Duration::from_secs(5)).expect("s");
    assert_eq!(common::call(&mut s, &common::create_request(1, "/e")).expect("create").2, 0);
    drop(s);

    let old_pid = c.pid(leader).expect("leader pid");
    let t1 = Instant::now();
    c.kill(leader).expect("kill leader");
    assert!(!process_alive(old_pid));
    let new_leader = c.wait_quorum(Duration::from_secs(20)).expect("new quorum");
    eprintln!("new leader after {:?}", t1.elapsed());
    assert_ne!(new_leader, leader);
    assert_eq!(common::exists(c.client_addr(new_leader), "/e"), 0);

    let t2 = Instant::now();
    c.restart(leader).expect("restart old leader");
    eprintln!("old leader rejoined after {:?}", t2.elapsed());
    assert_eq!(c.mode(leader).expect("mode"), "follower");
    assert_eq!(common::exists(c.client_addr(leader), "/e"), 0);

    // Freeze a follower: the ensemble keeps a quorum.
    let f = (0..3).find(|&i| i != new_leader).expect("a follower");
    c.freeze(f).expect("freeze follower");
    assert_eq!(c.wait_quorum(Duration::from_secs(10)).expect("quorum"), new_leader);
    c.resume(f).expect("resume");
    c.wait_serving(f, Duration::from_secs(20)).expect("follower serves again");

    let pids: Vec<u32> = (0..3).filter_map(|i| c.pid(i)).collect();
    assert_eq!(pids.len(), 3);
    drop(c);
    for p in pids {
        assert!(!process_alive(p), "{p} survived");
    }
}

//! `--process-group`: the command runs in a process group of its own, and
//! signals for it (forwarded ones, the lost signal, SIGKILL) reach every
//! process of the group. Checked from outside: the pid of a grandchild the
//! command started, and whether that process still exists.

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use common::{connect, kill, queue, server, spawn, wait_until, Dir, SEC};
use zklock_harness::{process_alive, Proxy};

/// A shell that starts `sleep 60` in the background (its pid in
/// `$D/<name>.gc`), says it is ready and waits for it: the shell dies of a
/// SIGTERM, its background job only if the signal reaches it too.
fn with_grandchild(name: &str) -> String {
    format!(r#"sleep 60 & echo $! > "$D/{name}.gc"; touch "$D/{name}.ready"; wait"#)
}

/// The pid the command wrote to `$D/<name>.gc`.
fn grandchild(d: &Dir, name: &str) -> u32 {
    d.read(&format!("{name}.gc")).trim().parse().unwrap()
}

/// Kills a process the test left behind.
fn reap(pid: u32) {
    if process_alive(pid) {
        kill(pid as i32, libc::SIGKILL);
    }
}

#[test]
fn a_forwarded_signal_reaches_the_whole_group() {
    let zk = server();
    let hosts = zk.connect_string();
    let d = Dir::new("pgroup-signal");
    let observer = connect(&hosts);
    let mut left = Vec::new();
    for (name, group) in [("alone", false), ("group", true)] {
        let script = with_grandchild(name);
        let mut args = vec!["run", "--hosts", &hosts, "/cli/pgroup", "-c", &script];
        if group {
            args.push("--process-group");
        }
        let r = spawn(&d, name, &args, &[]);
        wait_until("the command runs", 20 * SEC, || d.exists(&format!("{name}.ready")));
        let gc = grandchild(&d, name);
        assert!(process_alive(gc));
        kill(r.pid(), libc::SIGTERM);
        let o = r.wait(20 * SEC);
        assert_eq!(o.code, 128 + libc::SIGTERM, "{name}: the shell died of the forwarded SIGTERM: {o:?}");
        if group {
            wait_until("the grandchild is gone", 30 * SEC, || !process_alive(gc));
        } else {
            // Without --process-group only the shell gets the signal: the
            // grandchild lives on (which is what --process-group is for).
            std::thread::sleep(SEC / 2);
            assert!(process_alive(gc), "without --process-group the grandchild survives");
            left.push(gc);
        }
    }
    left.into_iter().for_each(reap);
    assert!(queue(&observer, "/cli/pgroup").is_empty(), "no node left");
}

/// A lost lock: the lost signal reaches the whole group, and a process of
/// the group that ignores it is killed after --kill-after, although the
/// command itself has exited by then.
#[test]
fn a_lost_lock_stops_the_whole_group() {
    let zk = server();
    let hosts = zk.connect_string();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let via = proxy.addr().to_string();
    let d = Dir::new("pgroup-lost");
    // A grandchild that dies of SIGTERM, one that ignores it.
    let script = r#"sleep 60 & echo $! > "$D/gc"; (trap '' TERM; exec sleep 60) & echo $! > "$D/stubborn"; touch "$D/ready"; wait"#;
    let args = [
        "run",
        "--hosts",
        &via,
        "--session-timeout",
        "2s",
        "--kill-after",
        "1s",
        "--process-group",
        "/cli/pgroup-lost",
        "-c",
        script,
    ];
    let r = spawn(&d, "lost", &args, &[]);
    wait_until("the command runs", 20 * SEC, || d.exists("ready"));
    let gc: u32 = d.read("gc").trim().parse().unwrap();
    let stubborn: u32 = d.read("stubborn").trim().parse().unwrap();
    proxy.blackhole();
    let o = r.wait(30 * SEC);
    assert_eq!(o.code, 70, "{o:?}");
    assert!(o.stderr.contains("process group") && o.stderr.contains("SIGKILL"), "{o:?}");
    let gone = zklock_harness::wait_for(30 * SEC, || !process_alive(gc) && !process_alive(stubborn));
    let (gc_alive, stubborn_alive) = (process_alive(gc), process_alive(stubborn));
    reap(gc);
    reap(stubborn);
    // The server expired the session: no node is left.
    wait_until("no node left", 20 * SEC, || queue(&connect(&hosts), "/cli/pgroup-lost").is_empty());
    assert!(
        gone,
        "the group is gone (grandchild alive: {gc_alive}, the one ignoring SIGTERM: {stubborn_alive}): {o:?}"
    );
    proxy.heal();
}

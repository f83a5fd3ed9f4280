//! The fault tests of the lock's safety (issue 13) that run the `zklock`
//! command-line tool: its process stalls (SIGSTOP, or the engine's fault
//! points, built with the `fault-points` feature) while its session expires
//! and another client takes the lock; it must never run its command while
//! the other client holds the lock. Moved here from zklock-core's
//! `tests/safety.rs` with the binary; the rest of those tests stay there.

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use std::thread::JoinHandle;
use std::time::Duration;

use common::{all_threads_stopped, connect, queue, server, signal_dispositions, wait_until, Raw, SEC};
use zklock_core::{Guard, Result};
use zklock_harness::Proxy;
use zklock_zk as zk;

/// A process that stalls between sending its requests and reading their
/// replies must not credit those replies with the time it read them. Here
/// the `zklock` command's create and list are answered, the replies are held
/// by the proxy, the process is stopped, the replies are put into its
/// socket, and the server hears nothing more from it: its session expires
/// and another client is granted the lock. When the process resumes, it
/// reads replies that say it is first in line, sent long ago: it must not
/// run its command while the other client holds the lock (before the fix,
/// the list's reply was credited with the time it was read, and the
/// command ran).
#[test]
fn a_process_stalled_between_send_and_read_does_not_take_the_lock() {
    let zk = server();
    let hosts = zk.connect_string();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let dir = std::env::temp_dir().join(format!("zklock-stall-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("ran");
    let _ = std::fs::remove_file(&marker);
    proxy.hold_replies_from_next_create();
    let mut cmd = std::process::Command::new(common::bin());
    cmd.args([
        "run",
        "--hosts",
        &proxy.addr().to_string(),
        "--session-timeout",
        "2s",
        "--timeout",
        "30s",
        "/stall",
        "--",
    ])
    .args(["sh", "-c", &format!("touch {}", marker.display())])
    .stdin(std::process::Stdio::null());
    signal_dispositions(&mut cmd, &[]);
    let p = cmd.spawn().unwrap();
    let pid = libc::pid_t::try_from(p.id()).unwrap();
    // The create's reply and the list's (the server answers both at once).
    wait_until("the create's and the list's replies are held", 30 * SEC, || proxy.held_replies() >= 2);
    // SAFETY: kill(2) on our own child, which we have not reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    // SIGSTOP stops the threads one by one: all of them before the replies
    // reach the socket, or one of them could read them before the stall.
    wait_until("every thread of zklock is stopped", 30 * SEC, || all_threads_stopped(pid));
    assert!(proxy.release_held_replies() >= 2, "the create's and the list's replies were held");
    proxy.blackhole();
    // The server expires p's session (2 s) and c gets the lock.
    let c = connect(&hosts);
    let gc = c.lock("/stall").unwrap().acquire(Some(20 * SEC)).expect("c gets the lock once p's session expired");
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
    hold_then_check_it_never_ran(gc, 3 * SEC, || true, p, &dir);
}

/// The same fault at the one moment a signal from outside cannot hit: the
/// `zklock` command stalls (the engine's fault point, as a GC pause would)
/// right after reading its create's reply, with the reply of the list
/// pipelined behind it already received. Its session expires meanwhile and
/// another client gets the lock. The list's reply says the command is first
/// in line; before the fix it was credited with the time it was read (after
/// the stall), so the command ran while the other client held the lock.
#[test]
fn a_process_stalled_after_its_create_reply_does_not_take_the_lock() {
    let zk = server();
    let hosts = zk.connect_string();
    let (p, dir) = zklock_run_stalling(&hosts, "/stall-point", "2s", "after-create-reply", 6000);
    let raw = Raw::connect(&hosts);
    wait_until("p's node exists", 30 * SEC, || raw.children("/stall-point").len() == 1);
    // c queues behind p's node and is granted when p's session expires.
    let c = connect(&hosts);
    let gc = c.lock("/stall-point").unwrap().acquire(Some(20 * SEC)).expect("c gets the lock once p's session expired");
    // p wakes up about 6 s after its create and finds its session expired:
    // it must queue again with its new session, and run only after c.
    hold_then_check_it_queues_again(gc, &raw, "/stall-point", p, &dir);
}

/// The same for a semaphore's lease (one lease): the `zklock run --permits 1`
/// command stalls right after its lease node's create reply (its mutex
/// taken, the list behind the create showing its lease the only one). Its
/// session expires meanwhile and another client takes the lease.
#[test]
fn a_process_stalled_after_its_lease_create_reply_does_not_take_the_lease() {
    let zk = server();
    let hosts = zk.connect_string();
    let (p, dir) = zklock_run_stalling_with(
        &hosts,
        &["--permits", "1", "/stall-lease"],
        "2s",
        "after-create-reply",
        6000,
        Some("/stall-lease/leases"),
    );
    let raw = Raw::connect(&hosts);
    wait_until("p's lease node exists", 30 * SEC, || raw.children("/stall-lease/leases").len() == 1);
    let c = connect(&hosts);
    let sem = c.semaphore("/stall-lease", 1, zklock_core::LockOptions::default()).unwrap();
    let gc = sem.acquire(Some(20 * SEC)).expect("c gets the lease once p's session expired");
    // p wakes up about 6 s after its create and finds its session expired:
    // it must ask for a lease again with its new session.
    hold_then_check_it_queues_again(gc, &raw, "/stall-lease/leases", p, &dir);
}

/// A sole waiter whose blocker's delete notification comes is granted only
/// once a read of its own node, sent then, shows it ours (protocol section
/// 4). Here both notifications are waiting at once: the `zklock` command
/// stalls (fault point) right after setting its watches, and meanwhile a
/// third party deletes its node and the holder releases. The command must
/// queue again, not run its command while the client that took the lock
/// meanwhile holds it.
#[test]
fn a_waiter_whose_node_and_blocker_both_went_while_it_stalled_queues_again() {
    let zk = server();
    let hosts = zk.connect_string();
    let path = "/stall-waiting";
    let a = connect(&hosts);
    let ga = a.lock(path).unwrap().acquire(Some(30 * SEC)).unwrap();
    let (p, dir) = zklock_run_stalling(&hosts, path, "10s", "before-waiting", 5000);
    let raw = Raw::connect(&hosts);
    wait_until("p queued", 30 * SEC, || raw.children(path).len() == 2);
    wait_until("p stalls with its watches set", 30 * SEC, || stalling(&dir));
    let p_node = queue(&a, path)[1].clone();
    raw.delete(&format!("{path}/{p_node}"));
    ga.release().unwrap();
    let c = connect(&hosts);
    let gc = c.lock(path).unwrap().acquire(Some(30 * SEC)).expect("c gets the free lock");
    // p wakes up 5 s after it set its watches (or runs its command).
    let requeued = zklock_harness::wait_for(60 * SEC, || {
        let q = queue(&c, path);
        (q.len() == 2 && !q.contains(&p_node)) || dir.join("ran").exists()
    });
    let q = queue(&c, path);
    hold_then_check_it_never_ran(gc, Duration::ZERO, || true, p, &dir);
    assert!(requeued && q.len() == 2 && !q.contains(&p_node), "p queued again behind c with a new node: {q:?}");
}

/// A waiter with two nodes before it stalls (fault point) with its watches
/// set; meanwhile its own node is replaced by another session's node of the
/// same name, the node it waited on goes (that waiter gives up) and the
/// holder releases. The list it makes on waking shows "its" name first, but
/// its watch on its own node fired before that list's reply: it must queue
/// again, not run its command while the stranger's node is first in line.
#[test]
fn a_waiter_whose_node_was_replaced_is_not_granted_on_a_list_showing_its_name() {
    let zk = server();
    let hosts = zk.connect_string();
    let path = "/stall-replaced";
    let (a, x) = (connect(&hosts), connect(&hosts));
    let raw = Raw::connect(&hosts);
    let ga = a.lock(path).unwrap().acquire(Some(30 * SEC)).unwrap();
    let lx = x.lock(path).unwrap();
    let cancel_x = lx.cancel_handle();
    let tx: JoinHandle<Result<Guard>> = std::thread::spawn(move || lx.acquire(Some(30 * SEC)));
    wait_until("x queued", 30 * SEC, || queue(&a, path).len() == 2);
    let (mut p, dir) = zklock_run_stalling(&hosts, path, "10s", "before-waiting", 5000);
    let marker = dir.join("ran");
    wait_until("p queued", 30 * SEC, || queue(&a, path).len() == 3);
    wait_until("p stalls with its watches set", 30 * SEC, || stalling(&dir));
    let p_node = format!("{path}/{}", queue(&a, path)[2]);
    raw.delete(&p_node);
    raw.create(&p_node, zk::CreateMode::Ephemeral);
    cancel_x.cancel();
    assert!(tx.join().unwrap().is_err(), "x gave up");
    ga.release().unwrap();
    // p wakes 5 s after it set its watches: it queues again (or runs its
    // command).
    wait_until("p queued again, or ran", 60 * SEC, || queue(&a, path).len() == 2 || marker.exists());
    let ran = marker.exists();
    let q = queue(&a, path);
    raw.delete(&p_node);
    let p_done = wait_for_exit(&mut p, 60 * SEC);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!ran, "p ran its command on the stranger's node (queue then: {q:?})");
    assert_eq!(q.len(), 2, "p queued again behind the stranger's node: {q:?}");
    assert_eq!(p_done, Some(true), "p got the lock once the stranger's node went, and ran");
}

/// Starts `zklock run` on `path`, stalling once at the engine's fault
/// `point` for `ms`; its command creates `ran` in the returned directory
/// (which `hold_then_check_it_never_ran` removes).
fn zklock_run_stalling(
    hosts: &str,
    path: &str,
    session: &str,
    point: &str,
    ms: u32,
) -> (std::process::Child, std::path::PathBuf) {
    zklock_run_stalling_with(hosts, &[path], session, point, ms, None)
}

/// [`zklock_run_stalling`] with `zklock run` arguments `run_args` (options
/// and the path, last), stalling only under `under` if given.
fn zklock_run_stalling_with(
    hosts: &str,
    run_args: &[&str],
    session: &str,
    point: &str,
    ms: u32,
    under: Option<&str>,
) -> (std::process::Child, std::path::PathBuf) {
    let path = run_args.last().copied().unwrap_or("/");
    let dir = std::env::temp_dir().join(format!("zklock{}-{}", path.replace('/', "-"), std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = std::process::Command::new(common::bin());
    cmd.args(["run", "--hosts", hosts, "--session-timeout", session, "--timeout", "30s"])
        .args(run_args)
        .arg("--")
        .args(["sh", "-c", &format!("touch {}", dir.join("ran").display())])
        .env("ZKLOCK_FAULT_STALL", point)
        .env("ZKLOCK_FAULT_STALL_MS", ms.to_string())
        .env_remove("ZKLOCK_LOG")
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.join("stderr")).unwrap());
    if let Some(under) = under {
        cmd.env("ZKLOCK_FAULT_STALL_UNDER", under);
    }
    signal_dispositions(&mut cmd, &[]);
    (cmd.spawn().unwrap(), dir)
}

/// Whether the process started by [`zklock_run_stalling_with`] in `dir`
/// has reached its fault point (it logs that before it stalls).
fn stalling(dir: &std::path::Path) -> bool {
    std::fs::read_to_string(dir.join("stderr")).is_ok_and(|e| e.contains("stalling"))
}

/// Whether `p` exited successfully within `limit` (`None`: it did not exit;
/// it is killed).
fn wait_for_exit(p: &mut std::process::Child, limit: Duration) -> Option<bool> {
    let end = std::time::Instant::now() + limit;
    while std::time::Instant::now() < end {
        if let Some(status) = p.try_wait().unwrap() {
            return Some(status.success());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = p.kill();
    let _ = p.wait();
    None
}

/// Whether the process started by [`zklock_run_stalling_with`] in `dir`
/// has woken from its stall and learnt that its session expired (the
/// client logs "session 0x... ended (expired); ...").
fn expired(dir: &std::path::Path) -> bool {
    std::fs::read_to_string(dir.join("stderr")).is_ok_and(|e| e.contains("ended (expired)"))
}

/// Holds `gc` while the `zklock` process `p`, stalled first in line past
/// its session's expiry, wakes up: it must queue again with its new session
/// (a second node in `queue`, beside `gc`'s), never run its command while
/// `gc` holds the lock, and run it once `gc` is released. (Before the fix,
/// p waited for its dead session's safety clock until its `--timeout`, and
/// without one for ever.) Kills `p` if it is still there, removes `dir`.
fn hold_then_check_it_queues_again(
    gc: Guard,
    raw: &Raw,
    queue: &str,
    mut p: std::process::Child,
    dir: &std::path::Path,
) {
    let marker = dir.join("ran");
    let requeued = zklock_harness::wait_for(60 * SEC, || {
        (expired(dir) && raw.children(queue).len() == 2) || marker.exists() || !matches!(p.try_wait(), Ok(None))
    });
    let ran = marker.exists();
    let q = raw.children(queue);
    gc.check().expect("c still holds the lock");
    gc.release().unwrap();
    let done = wait_for_exit(&mut p, 60 * SEC);
    let ran_after = marker.exists();
    let stderr = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(dir);
    assert!(!ran, "the stalled process ran its command while another client held the lock");
    assert!(requeued && q.len() == 2, "p queued again with its new session: {queue} had {q:?}; p said: {stderr}");
    assert_eq!(done, Some(true), "p got the lock once c released, and ran; p said: {stderr}");
    assert!(ran_after, "p's command ran");
}

/// Holds `gc` for `hold` while the stalled `zklock` process `p` runs on,
/// and on until `acted` (`p` did what it does after its stall; at most
/// 60 s more), or `p` ran its command or exited; then checks that `p`'s
/// command (which creates `dir/ran`) never ran: it could only have run
/// while `gc` held the lock. Kills `p`, removes `dir`.
fn hold_then_check_it_never_ran(
    gc: Guard,
    hold: Duration,
    mut acted: impl FnMut() -> bool,
    mut p: std::process::Child,
    dir: &std::path::Path,
) {
    std::thread::sleep(hold);
    zklock_harness::wait_for(60 * SEC, || acted() || dir.join("ran").exists() || !matches!(p.try_wait(), Ok(None)));
    let ran = dir.join("ran").exists();
    gc.check().expect("c still holds the lock");
    gc.release().unwrap();
    let _ = p.kill();
    let _ = p.wait();
    let _ = std::fs::remove_dir_all(dir);
    assert!(!ran, "the stalled process ran its command while another client held the lock");
}

//! The options flock(1) users expect, against a real ZooKeeper: `-n`,
//! `-w` (humantime durations and plain seconds), `-E`, `-c`, and `-s` /
//! `-x` as the two sides of one read/write lock. Sharing and exclusion are
//! shown from outside zklock: by times the commands take themselves and by
//! ZooKeeper's queue, never by zklock's own output.

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use std::time::{Duration, Instant};

use common::{connect, queue, server, spawn, wait_for_file, wait_until, zklock, Dir, SEC};

/// `-n` on a held lock exits at once with the conflict code (75, or `-E`'s),
/// leaving no node and without running the command; on a free lock it runs
/// the command.
#[test]
fn nonblock_exits_at_once_with_the_conflict_code() {
    let zk = server();
    let hosts = zk.connect_string();
    let d = Dir::new("nonblock");
    let holder = connect(&hosts);
    let g = holder.lock("/cli/nb").unwrap().acquire(None).unwrap();
    let try_it = |name: &str, extra: &[&str]| {
        let mut args = vec!["run", "--hosts", &hosts];
        args.extend_from_slice(extra);
        let script = format!(r#"touch "$D/ran.{name}""#);
        args.extend(["/cli/nb", "-c", &script]);
        let started = Instant::now();
        // Without -n zklock would wait for the lock as long as it is held.
        let o = spawn(&d, name, &args, &[]).wait(20 * SEC);
        (o, started.elapsed())
    };
    let (o, took) = try_it("n", &["-n"]);
    assert_eq!(o.code, 75, "{o:?}");
    assert!(took < 10 * SEC, "-n returned after {took:?}");
    assert!(o.stderr.contains("/cli/nb") && o.stderr.contains("-n tries once"), "{o:?}");
    let (o, _) = try_it("n-e3", &["-n", "-E", "3"]);
    assert_eq!(o.code, 3, "{o:?}");
    let (o, _) = try_it("nb-e0", &["--nb", "--conflict-exit-code", "0"]);
    assert_eq!(o.code, 0, "-E 0 is a status like any other: {o:?}");
    // -E is the status of a timeout too.
    let (o, _) = try_it("w-e4", &["-w", "200ms", "-E", "4"]);
    assert_eq!(o.code, 4, "{o:?}");
    for name in ["n", "n-e3", "nb-e0", "w-e4"] {
        assert!(!d.exists(&format!("ran.{name}")), "{name}: the command ran while the lock was held");
    }
    assert_eq!(queue(&holder, "/cli/nb").len(), 1, "only the holder's node is left");
    g.release().unwrap();
    let (o, _) = try_it("free", &["--nonblock", "-E", "3"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(d.exists("ran.free"), "a free lock is taken at once and the command runs");
}

/// `-w`/`--wait`/`--timeout` waits as long as the duration given, in
/// humantime's forms or plain seconds, then exits 75; a lock freed within
/// the wait is taken.
#[test]
fn wait_gives_up_after_the_duration_given() {
    let zk = server();
    let hosts = zk.connect_string();
    let d = Dir::new("wait");
    let holder = connect(&hosts);
    let g = holder.lock("/cli/wait").unwrap().acquire(None).unwrap();
    for (name, option, value, at_least) in [
        ("w", "-w", "300ms", Duration::from_millis(300)),
        ("wait", "--wait", "0.3", Duration::from_millis(300)),
        ("timeout", "--timeout", "1s500ms", Duration::from_millis(1500)),
    ] {
        let started = Instant::now();
        let o = zklock(&d, name, &["run", "--hosts", &hosts, option, value, "/cli/wait", "-c", r#"touch "$D/ran""#]);
        let took = started.elapsed();
        assert_eq!(o.code, 75, "{option} {value}: {o:?}");
        assert!(took >= at_least, "{option} {value} gave up after {took:?}");
        assert!(took < at_least + 10 * SEC, "{option} {value} gave up after {took:?}");
        assert!(o.stderr.contains("not granted within"), "{o:?}");
    }
    assert!(!d.exists("ran"));
    // A wait of 1m30s: the holder lets go after a second, and the command runs.
    let r = spawn(&d, "long", &["run", "--hosts", &hosts, "-w", "1m30s", "/cli/wait", "-c", r#"touch "$D/ran""#], &[]);
    wait_until("zklock queued", 20 * SEC, || queue(&holder, "/cli/wait").len() == 2);
    std::thread::sleep(SEC);
    g.release().unwrap();
    let o = r.wait(30 * SEC);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(d.exists("ran"));
}

/// `-c CMD` runs CMD with /bin/sh -c, in the lock's environment, and zklock
/// exits with its status.
#[test]
fn command_option_runs_through_the_shell() {
    let zk = server();
    let hosts = zk.connect_string();
    let d = Dir::new("shell");
    // A pipe, arithmetic and a redirection: only a shell runs this.
    let script = r#"echo "$ZKLOCK_LOCK_MODE $((6 * 7)) $0" | tr a-z A-Z > "$D/out"; exit 7"#;
    let o = zklock(&d, "c", &["run", "--hosts", &hosts, "/cli/shell", "-c", script]);
    assert_eq!(o.code, 7, "{o:?}");
    assert_eq!(d.read("out").trim(), "EXCLUSIVE 42 /BIN/SH");
    let o = zklock(
        &d,
        "command",
        &["run", "--hosts", &hosts, "-x", "--command", "echo $ZKLOCK_LOCK_MODE > \"$D/out\"", "/cli/shell"],
    );
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(d.read("out").trim(), "WRITE");
    assert!(queue(&connect(&hosts), "/cli/shell").is_empty(), "no node left");
}

/// `-s` holders of a path share it, `-x` excludes them (and waits until
/// they are gone), `-s` waits for an `-x` holder; zklock's plain lock
/// (neither flag) is in the same queue and waits for `-s` holders too.
#[test]
fn shared_holders_overlap_and_exclusive_excludes_them() {
    let zk = server();
    let hosts = zk.connect_string();
    let d = Dir::new("rw-flock");
    let observer = connect(&hosts);
    let p = "/cli/rw-flock";
    // Each command logs when it starts and ends, on the machine's clock.
    let logged = |who: &str, middle: &str| {
        format!(r#"echo "start {who} $(date +%s%N)" >> "$D/log"; {middle}; echo "end {who} $(date +%s%N)" >> "$D/log""#)
    };
    let times = |who: &str| -> (u128, u128) {
        let log = d.read("log");
        let at = |what: &str| {
            log.lines()
                .find_map(|l| l.strip_prefix(&format!("{what} {who} ")))
                .map(|t| t.parse::<u128>().unwrap())
                .unwrap_or_else(|| panic!("{what} {who} not in the log:\n{log}"))
        };
        (at("start"), at("end"))
    };
    let run = |name: &str, flags: &[&str], script: &str| {
        let mut args = vec!["run", "--hosts", &hosts];
        args.extend_from_slice(flags);
        args.extend([p, "-c", script]);
        spawn(&d, name, &args, &[])
    };

    // a (-s) holds until b (-s) has run: b must get the lock while a holds it.
    let a = run("a", &["-s"], &logged("a", &wait_for_file("b-done")));
    wait_until("a runs", 20 * SEC, || d.read("log").contains("start a"));
    // b says it ended before it lets a go (a touch before the log line let
    // a end first now and then: the test, not the lock, overlapped them).
    let b = run("b", &["-s", "-w", "20s"], &format!(r#"{}; touch "$D/b-done""#, logged("b", "sleep 0.2")));
    let o = b.wait(30 * SEC);
    assert_eq!(o.code, 0, "{o:?}");
    let o = a.wait(30 * SEC);
    assert_eq!(o.code, 0, "{o:?}");
    let ((a0, a1), (b0, b1)) = (times("a"), times("b"));
    assert!(a0 < b0 && b1 < a1, "b ran inside a's hold: a {a0}..{a1}, b {b0}..{b1}");

    // c (-s) holds until told; x (-x) waits for it, then runs after it.
    let c = run("c", &["-s"], &logged("c", &wait_for_file("go-c")));
    wait_until("c runs", 20 * SEC, || d.read("log").contains("start c"));
    // c alone holds the path. zklock queues every kind of a path in one
    // queue: the plain lock waits for -s holders too (Curator's and kazoo's
    // readers would not wait for it, the other way round).
    let o = zklock(&d, "plain", &["run", "--hosts", &hosts, "-n", p, "-c", r#"touch "$D/ran""#]);
    assert_eq!(o.code, 75, "the plain lock waits for -s holders: {o:?}");
    let x = run("x", &["-x"], &logged("x", &wait_for_file("go-x")));
    wait_until("x queued", 20 * SEC, || queue(&observer, p).len() == 2);
    std::thread::sleep(SEC);
    assert!(!d.read("log").contains("start x"), "x ran while c held the read side:\n{}", d.read("log"));
    d.touch("go-c");
    assert_eq!(c.wait(30 * SEC).code, 0);
    wait_until("x runs", 20 * SEC, || d.read("log").contains("start x"));
    // x holds the write side: -s and -x wait (here: give up at once).
    for (name, flag) in [("s-n", "-s"), ("x-n", "-x"), ("read-n", "--read"), ("write-n", "--write")] {
        let o = zklock(&d, name, &["run", "--hosts", &hosts, flag, "-n", p, "-c", r#"touch "$D/ran""#]);
        assert_eq!(o.code, 75, "{flag} -n while x holds the write side: {o:?}");
    }
    assert!(!d.exists("ran"));
    d.touch("go-x");
    assert_eq!(x.wait(30 * SEC).code, 0);
    let ((c0, c1), (x0, x1)) = (times("c"), times("x"));
    assert!(c1 <= x0, "x started only after c ended: c {c0}..{c1}, x {x0}..{x1}");
    // And -s waits for a plain holder.
    let plain = run("plain-holder", &[], &format!(r#"touch "$D/plain-holds"; {}"#, wait_for_file("go-p")));
    wait_until("the plain holder runs", 20 * SEC, || d.exists("plain-holds"));
    let o = zklock(&d, "s-plain", &["run", "--hosts", &hosts, "-s", "-n", p, "-c", r#"touch "$D/ran""#]);
    assert_eq!(o.code, 75, "-s waits for the plain lock: {o:?}");
    d.touch("go-p");
    assert_eq!(plain.wait(30 * SEC).code, 0);
    assert!(!d.exists("ran"));
    assert!(queue(&observer, p).is_empty(), "no node left");
}

//! The short soaks of the test command: 80 s of chaos over a 3-node
//! ensemble, every fault kind injected at least three times, and no
//! property violated (`make soak` is the long run); half a minute of the
//! third-party-delete class alone; a minute of the partition-member and
//! stall-holder classes together; 40 s of the move-holder class; and
//! self-tests of the checker.
//!
//! Each of the issue 13 classes fails on the engine from before its fix
//! (`tests/soak/against-engine.sh` builds the soak over another commit's
//! engine and runs it):
//! - third-party-delete, on an engine that grants a waiter the lock on its
//!   own node after a third party deleted that node (it did so when the
//!   node it waited on went and it took the lock without listing the queue
//!   again): property 1 ("granted the lock ... on node ..., which a third
//!   party had deleted ... while it waited");
//! - partition-member, on an engine whose safety clock a follower cut off
//!   from the leader kept moving (plain reads as heartbeats): property 1
//!   and 3 (293 and 7 in one 90 s run);
//! - stall-holder, on an engine that credited a pipelined reply with the
//!   time its request's predecessor was answered: properties 1 and 2, in
//!   some runs only (2 of 4 runs of 40 s to 3 min; 85 and 28 in one of
//!   3 min): the client library usually notices the stall itself when the
//!   process wakes. `zklock-core/tests/safety.rs`, with an engine fault
//!   point, was shown failing on that engine.

use std::process::{Command, Output};
use std::sync::Mutex;

/// Each run starts a 3-node ensemble: one at a time on a 2-core machine.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs the soak with `args`, one run at a time; prints its output.
fn soak(args: &[&str]) -> (Output, String) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let out = Command::new(env!("CARGO_BIN_EXE_zklock-soak")).args(args).output().expect("zklock-soak runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("{stdout}");
    (out, stdout)
}

/// The number after `prefix` on the summary line that starts with it.
fn number_after(stdout: &str, prefix: &str) -> Option<usize> {
    stdout.lines().find_map(|l| l.trim().strip_prefix(prefix)).and_then(|rest| {
        let digits: String = rest.trim_start().chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })
}

fn assert_passed(out: &Output, stdout: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the soak failed ({}):\n{stdout}\n--- stderr ---\n{stderr}", out.status);
    assert!(stdout.contains("soak: PASSED"), "no verdict line:\n{stdout}");
}

/// 80 s: the five server fault kinds take turns on one thread, and a turn
/// of all five took up to 20 s on the 2-core machine, up to 30 s when the
/// recoveries are slow (one run got the last kind of the turn, the member
/// partition, only twice): at least two faults of every kind.
#[test]
fn chaos_of_every_kind_violates_no_property() {
    let (out, stdout) = soak(&["--duration", "80s", "--min-faults", "2", "--min-handoffs", "50"]);
    assert_passed(&out, &stdout);
    // The semaphore's leases were shared. Never by more is property 1's:
    // the count printed includes a holder whose node a third party deleted
    // before it noticed, which property 1 exempts (a run saw 3 that way).
    assert!(stdout.contains("held at once"), "no semaphore in the run:\n{stdout}");
    let most = stdout.split(" leases, at most ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok());
    assert!(most.is_some_and(|n: usize| n >= 2), "the semaphore's two leases were never held together:\n{stdout}");
    // Multi-locks took the exclusive and the rw lock together among the
    // others (their members count under properties 1 to 3 of each lock).
    let sets = stdout.split("; multi-lock ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok());
    assert!(sets.is_some_and(|n: usize| n >= 5), "too few multi-lock grants:\n{stdout}");
}

/// An outside client deletes waiters' and holders' nodes on both locks: no
/// waiter may be granted the lock on its deleted node, and the fencing
/// token must still protect the resource from a holder whose node went.
#[test]
fn third_party_deletes_violate_no_property() {
    let (out, stdout) =
        soak(&["--faults", "third-party-delete", "--duration", "30s", "--min-faults", "6", "--min-handoffs", "50"]);
    assert_passed(&out, &stdout);
    let waiters = number_after(&stdout, "third-party deletes:").expect("a third-party deletes line");
    let holders = stdout
        .lines()
        .find(|l| l.trim().starts_with("third-party deletes:"))
        .and_then(|l| l.split(" holders' nodes").next())
        .and_then(|before| before.split_whitespace().last())
        .and_then(|n| n.parse::<usize>().ok())
        .expect("a count of holders' nodes deleted");
    assert!(waiters >= 3 && holders >= 3, "too few deletes: {waiters} waiters, {holders} holders:\n{stdout}");
    let with_holder = stdout
        .lines()
        .find(|l| l.trim().starts_with("third-party deletes:"))
        .and_then(|l| l.split(" in one transaction with their holder's").next())
        .and_then(|before| before.split_whitespace().last())
        .and_then(|n| n.parse::<usize>().ok())
        .expect("a count of waiters deleted with their holder");
    assert!(with_holder >= 1, "no waiter deleted in one transaction with its holder:\n{stdout}");
}

/// A member cut off from the quorum while its clients stay connected, with
/// a holder on it that goes on holding and checking; and a contender
/// stopped between its create on a free lock and reading the replies,
/// past its session.
#[test]
fn partitioned_members_and_stalled_contenders_violate_no_property() {
    let (out, stdout) = soak(&[
        "--faults",
        "partition-member,stall-holder",
        "--duration",
        "60s",
        "--min-faults",
        "5",
        "--min-handoffs",
        "50",
    ]);
    assert_passed(&out, &stdout);
}

/// The holder's client moved off its member (`set_hosts`), connected or
/// while it reconnects (the session expiring in most of those), with a
/// holder kept holding and checking through it.
#[test]
fn moved_holders_violate_no_property() {
    let (out, stdout) =
        soak(&["--faults", "move-holder", "--duration", "40s", "--min-faults", "8", "--min-handoffs", "50"]);
    assert_passed(&out, &stdout);
}

/// The move class makes a case `check()` guards: a holder that ignores it
/// keeps "holding" after its session expired while it reconnected and was
/// moved, and the run must report the overlap under that class.
#[test]
fn the_checker_catches_holders_that_ignore_check_through_a_move() {
    assert_caught_under("move-holder");
}

/// 30 s of `class` alone with holders that ignore `check()`: the run must
/// fail, with overlaps (property 1) counted under `class`.
fn assert_caught_under(class: &str) {
    let (out, stdout) = soak(&["--duration", "30s", "--faults", class, "--self-test-ignore-check"]);
    assert!(!out.status.success(), "a run with broken holders passed:\n{stdout}");
    let row = class_row(&stdout, class);
    assert!(row.first().is_some_and(|&n| n > 0), "no overlap reported under {class} ({row:?}):\n{stdout}");
}

/// The row of `class` in the table of violations by fault class: the
/// counts for properties 1 to 5.
fn class_row(stdout: &str, class: &str) -> Vec<usize> {
    let row = stdout.lines().map(str::trim).rfind(|l| l.split_whitespace().next() == Some(class));
    row.map(|l| l.split_whitespace().skip(1).filter_map(|n| n.parse().ok()).collect()).unwrap_or_default()
}

/// The partition class makes the case only `check()` guards: a holder that
/// ignores it keeps "holding" on a member cut off from the quorum after the
/// leader expired its session and granted the lock to another, and the run
/// must report the overlap under that class.
#[test]
fn the_checker_catches_holders_that_ignore_check_on_a_partitioned_member() {
    assert_caught_under("partition-member");
}

/// The semaphore's count is checked: lease holders that ignore `check()`
/// keep "holding" after their process was stopped past its session while
/// the next takes their lease, and the run must report more holders than
/// permits.
#[test]
fn the_checker_catches_lease_holders_that_ignore_check() {
    let (out, stdout) =
        soak(&["--duration", "20s", "--locks", "semaphore", "--faults", "pause-holder", "--self-test-ignore-check"]);
    assert!(!out.status.success(), "a run with broken lease holders passed:\n{stdout}");
    assert!(stdout.contains("others (of 2 permits)"), "no lease held beyond the permits reported:\n{stdout}");
}

/// The checker can fail: contenders that ignore `check()` keep "holding"
/// after their process was stopped past its session, and the run must say
/// so.
#[test]
fn the_checker_catches_holders_that_ignore_check() {
    let (out, stdout) = soak(&["--duration", "20s", "--faults", "pause-holder", "--self-test-ignore-check"]);
    assert!(!out.status.success(), "a run with broken holders passed:\n{stdout}");
    let overlaps = number_after(&stdout, "property 1 overlapping safely-held intervals:").unwrap_or_else(|| {
        panic!("no property 1 line (the soak did not finish?):\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr))
    });
    assert!(overlaps > 0, "no overlap reported for holders that ignore check():\n{stdout}");
}

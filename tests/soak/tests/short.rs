//! The short soaks of the test command: a minute of chaos over a 3-node
//! ensemble, every fault kind injected at least three times, and no
//! property violated (`make soak` is the long run); half a minute of the
//! third-party-delete class alone; and a self-test of the checker.
//!
//! The third-party-delete class fails on an engine that grants a waiter
//! the lock on its own node after a third party deleted that node (it does
//! so when the node it waited on goes and it takes the lock without
//! listing the queue again): the first two tests then fail with property 1
//! violations ("granted the lock ... on node ..., which a third party had
//! deleted ... while it waited").

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

#[test]
fn a_minute_of_chaos_violates_no_property() {
    let (out, stdout) = soak(&["--duration", "60s", "--min-faults", "3", "--min-handoffs", "50"]);
    assert_passed(&out, &stdout);
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
}

/// The checker can fail: contenders that ignore `check()` keep "holding"
/// after their process was stopped past its session, and the run must say
/// so.
#[test]
fn the_checker_catches_holders_that_ignore_check() {
    let (out, stdout) = soak(&["--duration", "20s", "--faults", "pause-holder", "--self-test-ignore-check"]);
    assert!(!out.status.success(), "a run with broken holders passed:\n{stdout}");
    let overlaps = number_after(&stdout, "property 1 overlapping safely-held intervals:").expect("a property 1 line");
    assert!(overlaps > 0, "no overlap reported for holders that ignore check():\n{stdout}");
}

//! The short soak of the test command: a minute of chaos over a 3-node
//! ensemble, every fault kind injected at least three times, and no
//! property violated (`make soak` is the long run).

use std::process::Command;
use std::sync::Mutex;

/// Each run starts a 3-node ensemble: one at a time on a 2-core machine.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[test]
fn a_minute_of_chaos_violates_no_property() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let out = Command::new(env!("CARGO_BIN_EXE_zklock-soak"))
        .args(["--duration", "60s", "--min-faults", "3", "--min-handoffs", "50"])
        .output()
        .expect("zklock-soak runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "the short soak failed ({}):\n{stdout}\n--- stderr ---\n{stderr}",
        out.status
    );
    assert!(stdout.contains("soak: PASSED"), "no verdict line:\n{stdout}");
}

/// The checker can fail: contenders that ignore `check()` keep "holding"
/// after their process was stopped past its session, and the run must say
/// so.
#[test]
fn the_checker_catches_holders_that_ignore_check() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let out = Command::new(env!("CARGO_BIN_EXE_zklock-soak"))
        .args(["--duration", "20s", "--faults", "pause-holder", "--self-test-ignore-check"])
        .output()
        .expect("zklock-soak runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(!out.status.success(), "a run with broken holders passed:\n{stdout}");
    let overlaps = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("property 1 overlapping safely-held intervals: "))
        .and_then(|n| n.trim().parse::<usize>().ok())
        .expect("a property 1 line");
    assert!(overlaps > 0, "no overlap reported for holders that ignore check():\n{stdout}");
}

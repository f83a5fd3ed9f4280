//! The short soak of the test command: a minute of chaos over a 3-node
//! ensemble, every fault kind injected at least three times, and no
//! property violated (`make soak` is the long run).

use std::process::Command;

#[test]
fn a_minute_of_chaos_violates_no_property() {
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

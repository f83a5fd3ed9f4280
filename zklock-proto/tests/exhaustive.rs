//! Exhaustive where small (issue 32 item 4): EVERY interleaving of a small
//! scenario, not a sample (see `sim/dfs.rs` for the moves and the state
//! hashing). The same promises as the simulator's (`sim/check.rs`) are
//! checked after every move, and at the end of every path: every contender
//! granted and done with nothing leaked, or, if nothing can happen any
//! more, a liveness failure.
//!
//! The bound, precisely: contenders on one lock path, each acquiring once
//! (again after a fault took its attempt or its hold) and releasing at
//! once; every interleaving of the server applying requests, the clients
//! reading replies and notifications, reconnects and new sessions; and at
//! most `ZKLOCK_EXHAUSTIVE_FAULTS` faults per path (0 in `make test`, where
//! the debug build must finish in seconds; 1 in `make sim`), anywhere in
//! it, among: drop a contender's connection, expire its session, a third
//! party deletes one node of the queue, or two neighbours in one
//! transaction.
//! Every draw other than the scheduler's is its plainest (no try-once, no
//! downgrade, no stop, no stall, the safety clock always safe, creates and
//! transactions answered with their Stat). No depth bound is reached (paths
//! are cut at 400 moves and the cut paths are counted: the tests assert
//! none).
//!
//! - `exhaustive_exclusive_two`, `exhaustive_read_write` and
//!   `exhaustive_two_readers`: two contenders (exclusive; a reader and a
//!   writer; two readers).
//! - `exhaustive_exclusive_three` (ignored; run it by name with
//!   `--ignored`, release build): three exclusive contenders, no fault.
//!   8,018,706 states, 163,314 paths ended quiet, none broke a promise:
//!   18 minutes in a release build on a shared 2-core machine.
//! - `exhaustive_finds_*` (feature `history`): a bug of `acquire::Bugs`
//!   switched on must be found with at most 1 fault (the search stops at
//!   the first broken promise).
//!
//! Each prints the number of distinct states expanded, of paths pruned at
//! a state seen before, of paths that ended quiet, and the time.

#[allow(dead_code)] // the random simulator's parts are sim.rs's
#[path = "sim/mod.rs"]
mod sim;

use std::time::Instant;

use sim::dfs::{self, Bounds};
use zklock_proto::acquire::Bugs;
use zklock_proto::names::LockMode;

/// The number in environment variable `name`, if set.
fn env_u32(name: &str) -> Option<u32> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Searches `modes` with `faults` and asserts that no promise broke and no
/// path was cut.
fn exhaust(name: &str, modes: &[LockMode], faults: u32) {
    let bounds = Bounds { faults, depth: 400 };
    let began = Instant::now();
    let r = dfs::search(modes, Bugs::default(), &bounds);
    eprintln!(
        "{name}: {modes:?}, at most {faults} fault(s): {} states, {} paths pruned at a state seen before, {} paths ended quiet, \
         {} cut, longest path {} moves, in {:.1} s",
        r.states,
        r.pruned,
        r.ends,
        r.cut,
        r.max_depth,
        began.elapsed().as_secs_f64()
    );
    if let Some((path, v, trace)) = r.found {
        panic!("{name}: {}: {}\n  moves {path:?}\n{}", v.kind, v.what, trace.join("\n"));
    }
    assert_eq!(r.cut, 0, "{name}: paths cut at the depth bound");
    assert!(r.ends > 0, "{name}: no path ended");
}

/// Two exclusive contenders.
#[test]
fn exhaustive_exclusive_two() {
    let faults = env_u32("ZKLOCK_EXHAUSTIVE_FAULTS").unwrap_or(0);
    exhaust("exclusive_two", &[LockMode::Exclusive, LockMode::Exclusive], faults);
}

/// A reader and a writer.
#[test]
fn exhaustive_read_write() {
    let faults = env_u32("ZKLOCK_EXHAUSTIVE_FAULTS").unwrap_or(0);
    exhaust("read_write", &[LockMode::Read, LockMode::Write], faults);
}

/// Two readers (they never block each other).
#[test]
fn exhaustive_two_readers() {
    let faults = env_u32("ZKLOCK_EXHAUSTIVE_FAULTS").unwrap_or(0);
    exhaust("two_readers", &[LockMode::Read, LockMode::Read], faults);
}

/// Three exclusive contenders, no fault (`ZKLOCK_EXHAUSTIVE_THREE_FAULTS`
/// for more): millions of states, too many for `make test` and `make sim`.
#[test]
#[ignore = "millions of states: run it by name with --ignored"]
fn exhaustive_exclusive_three() {
    let faults = env_u32("ZKLOCK_EXHAUSTIVE_THREE_FAULTS").unwrap_or(0);
    exhaust("exclusive_three", &[LockMode::Exclusive; 3], faults);
}

/// Switches `bugs` on and asserts that the search finds a broken promise
/// of one of `kinds`.
#[cfg(feature = "history")]
fn finds(name: &str, modes: &[LockMode], bugs: Bugs, faults: u32, kinds: &[&str]) {
    let began = Instant::now();
    let r = dfs::search(modes, bugs, &Bounds { faults, depth: 400 });
    let Some((path, v, trace)) = r.found else {
        panic!("{name}: nothing found in {} states", r.states);
    };
    eprintln!(
        "{name}: found after {} states in {:.2} s: {}: {}\n  moves {path:?} ({} moves)\n{}",
        r.states,
        began.elapsed().as_secs_f64(),
        v.kind,
        v.what,
        path.len(),
        trace.join("\n")
    );
    assert!(kinds.contains(&v.kind), "{name}: found {} ({}), expected one of {kinds:?}", v.kind, v.what);
}

/// `grant_on_silent_watch`: a multi deletes the blocker and then our node.
#[cfg(feature = "history")]
#[test]
fn exhaustive_finds_grant_on_silent_watch() {
    finds(
        "grant_on_silent_watch",
        &[LockMode::Exclusive, LockMode::Exclusive],
        Bugs { grant_on_silent_watch: true, ..Bugs::default() },
        1,
        &["grant", "holders"],
    );
}

/// `grant_on_notice`: a grant with no proof that our node exists.
#[cfg(feature = "history")]
#[test]
fn exhaustive_finds_grant_on_notice() {
    finds(
        "grant_on_notice",
        &[LockMode::Exclusive, LockMode::Exclusive],
        Bugs { grant_on_notice: true, ..Bugs::default() },
        1,
        &["grant", "holders"],
    );
}

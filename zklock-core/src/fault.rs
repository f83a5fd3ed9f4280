//! Fault points for the fault tests: places in the engine where a test can
//! stall the process as a GC pause or CPU starvation would, at a moment a
//! signal from outside cannot hit. Compiled only with the `fault-points`
//! feature (the test command enables it; builds for users do not), and even
//! then inert unless `ZKLOCK_FAULT_STALL=<point>` is set in the environment,
//! with `ZKLOCK_FAULT_STALL_MS` (default 3000), and, if
//! `ZKLOCK_FAULT_STALL_UNDER=<path>` is set, only for nodes under that path
//! (a semaphore's leases, not its mutex). Each point stalls once per
//! process. The stall blocks the calling thread, the client's runtime
//! thread included: nothing of the process runs meanwhile, as in a real
//! pause.

/// Between reading the create's reply and reading the reply of the list
/// pipelined behind it (issue 13, hole 3).
pub(crate) const AFTER_CREATE_REPLY: &str = "after-create-reply";

/// In the queue, with the watches on the blocker and on our own node set,
/// before the wait for their events: events that arrive meanwhile are all
/// there when the waiter looks (issue 13: the handoff on the blocker's
/// delete notification).
pub(crate) const BEFORE_WAITING: &str = "before-waiting";

/// An inner reentrant guard's release, after the count fell and the
/// handle's slot was let go (outside attack round 32, F2: the last
/// guard's release, made meanwhile, made the inner one fail `NotHeld`).
pub(crate) const AFTER_INNER_RELEASE: &str = "after-inner-release";

/// Stalls here, in the queue at `path`, if the environment names `point`
/// (and a path `path` is under, if any: see the module docs).
#[cfg(feature = "fault-points")]
pub(crate) fn stall(point: &str, path: &str) {
    use std::sync::atomic::{AtomicBool, Ordering};
    static DONE: AtomicBool = AtomicBool::new(false);
    if std::env::var("ZKLOCK_FAULT_STALL").ok().as_deref() != Some(point) {
        return;
    }
    if std::env::var("ZKLOCK_FAULT_STALL_UNDER").is_ok_and(|under| !path.starts_with(&under)) {
        return;
    }
    if DONE.swap(true, Ordering::SeqCst) {
        return;
    }
    let ms = std::env::var("ZKLOCK_FAULT_STALL_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(3000);
    log::warn!("zklock: fault point {point}: stalling {ms} ms");
    std::thread::sleep(std::time::Duration::from_millis(ms));
}

/// Without the `fault-points` feature: nothing.
#[cfg(not(feature = "fault-points"))]
pub(crate) fn stall(_point: &str, _path: &str) {}

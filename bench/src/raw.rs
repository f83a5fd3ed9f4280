//! A plain session of zklock's own session layer (`zklock-zk`) on a runtime
//! of its own, shared by the runner (its observer) and the driver (the raw
//! floor).

use std::time::Duration;

use zklock_zk as zk;

/// A runtime and a raw ZooKeeper session on it. `worker_thread`: a
/// one-worker multi-thread runtime (keeps the session alive between
/// `block_on` calls); otherwise a current-thread runtime (runs only inside
/// `block_on`, no hand-over between threads). The session's task runs on
/// the runtime that connects it.
pub(crate) fn connect(
    hosts: &str,
    session: Duration,
    worker_thread: bool,
) -> Result<(tokio::runtime::Runtime, zk::Session), String> {
    let rt = if worker_thread {
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()
    } else {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    }
    .map_err(|e| e.to_string())?;
    let config = zk::Config::new(hosts).map_err(|e| e.to_string())?.session_timeout(session);
    let zk = rt.block_on(zk::Session::connect(config)).map_err(|e| e.to_string())?;
    Ok((rt, zk))
}

//! A plain `zookeeper-client` session on a runtime of its own, shared by the
//! runner (its observer) and the driver (the raw floor).

use std::time::Duration;

use zookeeper_client as zk;

/// A runtime and a raw ZooKeeper session on it. `worker_thread`: a
/// one-worker multi-thread runtime (keeps the session alive between
/// `block_on` calls); otherwise a current-thread runtime (runs only inside
/// `block_on`, no hand-over between threads).
pub(crate) fn connect(
    hosts: &str,
    session: Duration,
    worker_thread: bool,
) -> Result<(tokio::runtime::Runtime, zk::Client), String> {
    let rt = if worker_thread {
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()
    } else {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    }
    .map_err(|e| e.to_string())?;
    let zk =
        rt.block_on(zk::Client::connector().with_session_timeout(session).connect(hosts)).map_err(|e| e.to_string())?;
    Ok((rt, zk))
}

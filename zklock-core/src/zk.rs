//! The session layer as the engine calls it: `zklock-zk`, with the few
//! adapters its call sites share. Each adapter sends its request when it is
//! called (the engine relies on the order of the requests it makes), and
//! gives the reply's value without the send stamps (only the safety clock
//! reads those, from the session directly).

use std::future::Future;
use std::sync::Arc;

pub(crate) use zklock_zk::{
    Acl, Code, CreateMode, Error, EventType, MultiOp, MultiResult, Session as Client, Stat, State as SessionState,
    StateWatcher, Watch, WatchedEvent,
};

/// A reply's value, or why there is none.
pub(crate) type Result<T> = std::result::Result<T, Error>;

/// The name of the node the probe writes target ([`probe_write`]):
/// `.zklock-write-probe-` and a random token drawn once per process, so
/// that no one can make it beforehand (outside attack round 34b, F1: a
/// node of a fixed name, made by anyone with a read-only ACL, had every
/// probe answered NoAuth at once by servers with an eager ACL check, which
/// does not count: a lock was suspended for good after a reset). zklock
/// never creates it.
pub(crate) fn probe_node() -> &'static str {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| format!(".zklock-write-probe-{}", uuid::Uuid::new_v4().simple()))
}

/// A write that changes nothing and is answered only once ZooKeeper's
/// quorum committed it: a `setData` at a version that never matches of
/// [`probe_node`] under `parent`. The node does not exist: ZooKeeper's
/// leader turns the write into an error transaction (NoNode) and commits
/// it like any other before the reply (`PrepRequestProcessor`), and a
/// server's eager ACL check (`zookeeper.enableEagerACLCheck`) passes a node
/// that does not exist (it would answer a write it refuses at once,
/// without a transaction, ahead of earlier replies). Resolves to `Ok` if
/// the answer came from a committed transaction (NoNode, or BadVersion or
/// NoAuth should someone make that node, with the zxid of a transaction:
/// an answer given without one carries zxid 0), else the error (a
/// `ConnectionLoss` for an answer without a transaction), with the reply's
/// stamps if it was answered. `urgent`: never held back behind the
/// session's own calls (the heartbeat's). Also the
/// [`Outbound`](zklock_zk::Outbound) of the call.
pub(crate) fn probe_write(
    zk: &Client,
    parent: &str,
    urgent: bool,
) -> (impl Future<Output = (Result<()>, Option<zklock_zk::Stamp>)> + Send + use<>, zklock_zk::Outbound) {
    let path = format!("{}/{}", parent.trim_end_matches('/'), probe_node());
    let f = if urgent { zk.set_data_urgent(&path, &[], i32::MIN) } else { zk.set_data(&path, &[], i32::MIN) };
    let out = f.outbound();
    let committed = async move {
        let (result, stamp) = f.stamped().await;
        let result = match (result, stamp) {
            (Ok(_) | Err(Error::Server(Code::BadVersion | Code::NoNode | Code::NoAuth)), Some(s)) if s.zxid > 0 => {
                Ok(())
            },
            (Ok(_) | Err(Error::Server(Code::BadVersion | Code::NoNode | Code::NoAuth)), _) => {
                Err(Error::ConnectionLoss("the probe write was answered without a transaction".into()))
            },
            (Err(e), _) => Err(e),
        };
        (result, stamp)
    };
    (committed, out)
}

/// Calls the engine makes, as it reads them.
pub(crate) trait ClientExt {
    /// getChildren: the child names.
    fn list_children(&self, path: &str) -> impl Future<Output = Result<Arc<[String]>>> + Send + use<Self>;
    /// getData with a watch.
    fn get_and_watch_data(&self, path: &str)
        -> impl Future<Output = Result<(Vec<u8>, Stat, Watch)>> + Send + use<Self>;
    /// getData.
    fn read_data(&self, path: &str) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send + use<Self>;
}

impl ClientExt for Client {
    fn list_children(&self, path: &str) -> impl Future<Output = Result<Arc<[String]>>> + Send + use<> {
        self.children(path).value()
    }

    fn get_and_watch_data(&self, path: &str) -> impl Future<Output = Result<(Vec<u8>, Stat, Watch)>> + Send + use<> {
        let (reply, watch) = self.get_data_watch(path);
        async move { reply.await.map(|r| (r.value.0, r.value.1, watch)) }
    }

    fn read_data(&self, path: &str) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send + use<> {
        self.get_data(path).value()
    }
}

/// Creates `path` and its missing ancestors with `acl` and `mode`; an
/// existing node is fine. `NoNode` when the first component cannot be made
/// (a chroot that does not exist); `Unimplemented` for containers on a
/// server before 3.5.3. Tries the whole path first (one round trip when
/// only the last component is missing).
pub(crate) async fn mkdir(zk: &Client, path: &str, acl: &[Acl], mode: CreateMode) -> Result<()> {
    match zk.create(path, &[], acl, mode).await {
        Ok(_) | Err(Error::Server(Code::NodeExists)) => return Ok(()),
        Err(Error::Server(Code::NoNode)) => {},
        Err(e) => return Err(e),
    }
    let mut at = 0;
    while let Some(next) = path[at + 1..].find('/').map(|i| i + at + 1) {
        match zk.create(&path[..next], &[], acl, mode).await {
            Ok(_) | Err(Error::Server(Code::NodeExists)) => {},
            Err(e) => return Err(e),
        }
        at = next;
    }
    match zk.create(path, &[], acl, mode).await {
        Ok(_) | Err(Error::Server(Code::NodeExists)) => Ok(()),
        Err(e) => Err(e),
    }
}

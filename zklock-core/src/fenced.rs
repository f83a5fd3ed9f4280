//! Fenced writes: the caller's ZooKeeper writes in one transaction (a
//! ZooKeeper `multi`) with a check of the guard's own lock node(s), so they
//! are made only while the lock is ours, with no window at all (protocol
//! document, section 8).
//!
//! The check is made by the ZooKeeper leader in the same transaction as the
//! writes: if our node is gone (the session expired, a third party deleted
//! it, zklock's own cleanup deleted it after a loss), nothing is written.
//! Our node existing means no one else can have been granted the lock:
//! every contender waits for it to go. The local state only refuses early
//! what the server would refuse anyway (a released guard, a lost lock, a
//! closed client).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::client::Session;
use crate::error::{shown, Error, ErrorKind, FailedOp, Result};
use crate::lock::Guard;
use crate::multi::MultiGuard;
use crate::requests::outcome_unknown;
use crate::state::LockState;
use crate::zk;

/// The largest fenced write, in bytes on the wire, each way: its request
/// (paths, data, and what ZooKeeper adds per operation: headers, versions,
/// ACLs, the checks of our lock nodes) and its reply (per operation a
/// header, a created node's path and each result's `Stat`: 68 bytes a
/// `set_data`, and a create on servers from 3.7) must both fit in
/// ZooKeeper's packet limit (its default `jute.maxbuffer`, 1 MiB less one
/// byte), with 1 KiB to spare. A larger request makes the server drop the
/// connection, and a larger reply the client: the write would be made (or
/// not) with the outcome unknown. A write over it is refused before
/// anything is sent (outside attack round 16: 20,000 `set_data`s, 40 KB of
/// paths and data, had a 1.5 MB reply).
pub const MAX_FENCED_BYTES: usize = 0xfffff - 1024;

/// What one ZooKeeper `Stat` takes on the wire.
const STAT_BYTES: usize = 68;

/// A multi's header per operation (type, done, error).
const OP_HEADER_BYTES: usize = 9;

zklock_proto::vocabulary! {
    /// How a node made by a fenced write lives: ZooKeeper's create modes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub enum CreateMode {
        /// Stays until deleted (the default).
        Persistent = 0, "PERSISTENT";
        /// Goes when the lock's session ends.
        Ephemeral = 1, "EPHEMERAL";
        /// Persistent, with a ten-digit sequence number appended to its name.
        PersistentSequential = 2, "PERSISTENT_SEQUENTIAL";
        /// Ephemeral, with a ten-digit sequence number appended to its name.
        EphemeralSequential = 3, "EPHEMERAL_SEQUENTIAL";
    }
}

zklock_proto::vocabulary! {
    /// What an operation of a fenced write does ([`FencedOp::kind`]), and
    /// what the result of one did ([`FencedResult::kind`]).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub enum FencedKind {
        /// Creates the node with the data given (its parent must exist), in
        /// the create mode given, with the client's ACL.
        Create = 1, "CREATE";
        /// Sets the data of the node.
        SetData = 2, "SET_DATA";
        /// Deletes the node (it must have no children).
        Delete = 3, "DELETE";
        /// Writes nothing: fails the write unless the node exists (with the
        /// data version given, if any).
        Check = 4, "CHECK";
    }
}

impl Default for CreateMode {
    /// [`CreateMode::Persistent`].
    fn default() -> Self {
        CreateMode::Persistent
    }
}

impl CreateMode {
    fn zk(self) -> zk::CreateMode {
        match self {
            CreateMode::Persistent => zk::CreateMode::Persistent,
            CreateMode::Ephemeral => zk::CreateMode::Ephemeral,
            CreateMode::PersistentSequential => zk::CreateMode::PersistentSequential,
            CreateMode::EphemeralSequential => zk::CreateMode::EphemeralSequential,
        }
    }
}

/// One ZooKeeper operation of a fenced write ([`Guard::fenced_multi`]).
/// A `version` of `None` matches any version; `Some(v)` makes the
/// operation (and so the whole write) fail with `BadVersion` unless the
/// node's data version is `v`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FencedOp {
    /// Creates `path` with `data` (the parent must exist), with the
    /// client's ACL.
    Create {
        /// The node to make (for a sequential mode, the prefix of its name).
        path: String,
        /// Its data.
        data: Vec<u8>,
        /// How it lives.
        mode: CreateMode,
    },
    /// Sets the data of `path`.
    SetData {
        /// The node.
        path: String,
        /// Its new data.
        data: Vec<u8>,
        /// The data version it must have, or any.
        version: Option<i32>,
    },
    /// Deletes `path` (it must have no children).
    Delete {
        /// The node.
        path: String,
        /// The data version it must have, or any.
        version: Option<i32>,
    },
    /// Writes nothing: fails the write unless `path` exists (with that
    /// data version, if given).
    Check {
        /// The node.
        path: String,
        /// The data version it must have, or any.
        version: Option<i32>,
    },
}

impl FencedOp {
    /// [`FencedOp::Create`].
    pub fn create(path: impl Into<String>, data: impl Into<Vec<u8>>, mode: CreateMode) -> FencedOp {
        FencedOp::Create { path: path.into(), data: data.into(), mode }
    }

    /// [`FencedOp::SetData`].
    pub fn set_data(path: impl Into<String>, data: impl Into<Vec<u8>>, version: Option<i32>) -> FencedOp {
        FencedOp::SetData { path: path.into(), data: data.into(), version }
    }

    /// [`FencedOp::Delete`].
    pub fn delete(path: impl Into<String>, version: Option<i32>) -> FencedOp {
        FencedOp::Delete { path: path.into(), version }
    }

    /// [`FencedOp::Check`].
    pub fn check(path: impl Into<String>, version: Option<i32>) -> FencedOp {
        FencedOp::Check { path: path.into(), version }
    }

    /// The node this operation is about.
    pub fn path(&self) -> &str {
        match self {
            FencedOp::Create { path, .. }
            | FencedOp::SetData { path, .. }
            | FencedOp::Delete { path, .. }
            | FencedOp::Check { path, .. } => path,
        }
    }

    /// What this operation does.
    pub fn kind(&self) -> FencedKind {
        match self {
            FencedOp::Create { .. } => FencedKind::Create,
            FencedOp::SetData { .. } => FencedKind::SetData,
            FencedOp::Delete { .. } => FencedKind::Delete,
            FencedOp::Check { .. } => FencedKind::Check,
        }
    }

    fn version(&self) -> Option<i32> {
        match self {
            FencedOp::Create { .. } => None,
            FencedOp::SetData { version, .. } | FencedOp::Delete { version, .. } | FencedOp::Check { version, .. } => {
                *version
            },
        }
    }

    /// What this operation takes in the request and in the reply, at most
    /// (see [`MAX_FENCED_BYTES`]); `acl`: the bytes of the client's ACL.
    fn wire_bytes(&self, acl: usize) -> (usize, usize) {
        let path = 4 + self.path().len();
        match self {
            // A sequential name gets ten digits; the reply may carry a Stat.
            FencedOp::Create { data, .. } => {
                (OP_HEADER_BYTES + path + 4 + data.len() + acl + 4, OP_HEADER_BYTES + path + 10 + STAT_BYTES)
            },
            FencedOp::SetData { data, .. } => {
                (OP_HEADER_BYTES + path + 4 + data.len() + 4, OP_HEADER_BYTES + STAT_BYTES)
            },
            FencedOp::Delete { .. } | FencedOp::Check { .. } => (OP_HEADER_BYTES + path + 4, OP_HEADER_BYTES),
        }
    }

    fn to_zk(&self, acl: &[zk::Acl]) -> zk::MultiOp {
        let version = self.version().unwrap_or(-1);
        match self {
            FencedOp::Create { path, data, mode } => {
                zk::MultiOp::Create { path: path.clone(), data: data.clone(), acl: acl.to_vec(), mode: mode.zk() }
            },
            FencedOp::SetData { path, data, .. } => {
                zk::MultiOp::SetData { path: path.clone(), data: data.clone(), version }
            },
            FencedOp::Delete { path, .. } => zk::MultiOp::Delete { path: path.clone(), version },
            FencedOp::Check { path, .. } => zk::MultiOp::Check { path: path.clone(), version },
        }
    }
}

/// What one operation of a successful fenced write did, in the order of
/// the operations.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FencedResult {
    /// The node was made; its path (with the sequence number for a
    /// sequential mode).
    Created {
        /// The path of the new node.
        path: String,
    },
    /// The data was set; the node's new data version.
    DataSet {
        /// The new data version.
        version: i32,
    },
    /// The node was deleted.
    Deleted,
    /// The check passed.
    Checked,
}

impl FencedResult {
    /// What the operation of this result did.
    pub fn kind(&self) -> FencedKind {
        match self {
            FencedResult::Created { .. } => FencedKind::Create,
            FencedResult::DataSet { .. } => FencedKind::SetData,
            FencedResult::Deleted => FencedKind::Delete,
            FencedResult::Checked => FencedKind::Check,
        }
    }
}

/// Validates `ops` against the guard(s) they are fenced by: every path a
/// node path, none inside a lock's own directory (`lock_paths`: what
/// zklock writes there, its queue), every version given not negative, the
/// request and the reply (with the checks of the lock nodes `nodes` and
/// the ACL `acl` of every create) under [`MAX_FENCED_BYTES`].
fn validate(ops: &[FencedOp], lock_paths: &[&str], nodes: &[String], acl: &[zk::Acl]) -> Result<()> {
    let acl_bytes = 4 + acl.iter().map(|a| 4 + 4 + a.scheme.len() + 4 + a.id.len()).sum::<usize>();
    // The multi's own framing (length, xid, type; the closing header).
    let framing: usize = 64;
    let checks = nodes.iter().map(|n| FencedOp::check(n.clone(), None).wire_bytes(0));
    let (mut request, mut reply) =
        checks.fold((framing, framing), |(q, r), (dq, dr)| (q.saturating_add(dq), r.saturating_add(dr)));
    for (i, op) in ops.iter().enumerate() {
        let path = op.path();
        let at = |e: Error| {
            Error::new(e.kind(), format!("fenced write, operation {i} ({}): {}", op.kind().name(), e.message()))
        };
        if path == "/" {
            return Err(at(Error::invalid_path(path, "the root cannot be written")));
        }
        crate::validate::validate_lock_path(path).map_err(at)?;
        if let Some(lock) =
            lock_paths.iter().find(|l| path.len() > l.len() && path.starts_with(*l) && path[l.len()..].starts_with('/'))
        {
            return Err(at(Error::invalid_path(
                path,
                &format!("it is inside the lock path {} (its queue of lock nodes is zklock's to write)", shown(lock)),
            )));
        }
        if let Some(v) = op.version().filter(|v| *v < 0) {
            return Err(at(Error::invalid_argument(format!("version {v} is negative (leave it out to match any)"))));
        }
        let (q, r) = op.wire_bytes(acl_bytes);
        request = request.saturating_add(q);
        reply = reply.saturating_add(r);
    }
    if request.max(reply) > MAX_FENCED_BYTES {
        let (what, n) = if request >= reply { ("request", request) } else { ("reply", reply) };
        return Err(Error::invalid_argument(format!(
            "fenced write of {} operations: its {what} would take about {n} bytes, over the {MAX_FENCED_BYTES} that \
             fit in one ZooKeeper packet (jute.maxbuffer; each set_data's and create's result carries a 68-byte \
             Stat); split it",
            ops.len()
        )));
    }
    Ok(())
}

/// A fenced write ready to send: the session our nodes belong to, the
/// checks of our nodes, and the caller's operations.
struct Prepared {
    session: Arc<Session>,
    nodes: Vec<String>,
    ops: Vec<FencedOp>,
    acl: Vec<zk::Acl>,
    bound: Duration,
}

/// The part of a fenced write done at once, for the guards that fence it:
/// the local refusals and the validation.
fn prepare(guards: &[&Guard], ops: Vec<FencedOp>) -> Result<Prepared> {
    let Some(first) = guards.first() else {
        return Err(Error::invalid_argument("a fenced write needs at least one guard"));
    };
    for g in guards {
        match g.state() {
            LockState::Released => {
                return Err(Error::new(
                    ErrorKind::NotHeld,
                    format!("fenced write: the guard of {} was released; nothing was written", g.node_path()),
                ))
            },
            LockState::Lost => {
                let why = g.check().err().map(|e| e.message().to_owned()).unwrap_or_else(|| "lost".into());
                let kind = if g.client().is_closed() { ErrorKind::Closed } else { ErrorKind::LockLost };
                return Err(Error::new(kind, format!("fenced write: {why}; nothing was written")));
            },
            LockState::Held | LockState::Suspended => {},
        }
        if g.holding.session.id != first.holding.session.id {
            return Err(Error::new(
                ErrorKind::LockLost,
                format!(
                    "fenced write: {} and {} belong to different sessions (two clients, or a session that ended): one \
                     transaction cannot check both; nothing was written",
                    first.node_path(),
                    g.node_path()
                ),
            ));
        }
    }
    // A lock's directory is its queue; a semaphore's whole path is zklock's
    // (its leases and its mutex's queue: outside attack round 16 planted a
    // node in the mutex's queue that blocked every later contender).
    let lock_paths: Vec<&str> = guards
        .iter()
        .map(|g| {
            let dir = g.holding.lock_path.as_str();
            if g.holding.name.contains("-lease-") {
                dir.rsplit_once('/').map_or(dir, |(p, _)| p)
            } else {
                dir
            }
        })
        .collect();
    let nodes: Vec<String> = guards.iter().map(|g| g.node_path()).collect();
    let shared = first.client().shared();
    validate(&ops, &lock_paths, &nodes, shared.acl())?;
    Ok(Prepared {
        session: first.holding.session.clone(),
        nodes,
        ops,
        acl: shared.acl().to_vec(),
        bound: shared.options.operation_timeout,
    })
}

impl Prepared {
    /// Sends the write once the session is connected (or at once if the
    /// deadline passes first: it then waits in the session's queue) and
    /// reads the answer.
    async fn send(self) -> Result<Vec<FencedResult>> {
        let Prepared { session, nodes, ops, acl, bound } = self;
        let deadline = Instant::now() + bound;
        let zk = session.zk()?;
        // Not sent while disconnected: a write queued for the next
        // connection could be made after the caller's deadline told it
        // "unknown" (it would still be fenced, but late).
        session.wait_connected(Some(deadline)).await.map_err(|e| match e.kind() {
            ErrorKind::Timeout => Error::new(
                ErrorKind::ConnectionLoss,
                format!(
                    "fenced write: not connected to ZooKeeper within the operation timeout ({bound:?}); nothing \
                     was sent"
                ),
            ),
            _ => Error::new(ErrorKind::LockLost, format!("fenced write: {}; nothing was written", e.message())),
        })?;
        let mut request: Vec<zk::MultiOp> =
            nodes.iter().map(|n| zk::MultiOp::Check { path: n.clone(), version: -1 }).collect();
        request.extend(ops.iter().map(|op| op.to_zk(&acl)));
        let reply = zk.multi(&request).value();
        let answer = match tokio::time::timeout_at(deadline.into(), reply).await {
            Ok(answer) => answer,
            Err(_) => {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "fenced write: no answer within the operation timeout ({bound:?}): the outcome is unknown (if \
                         it was made, it was made while {} was ours)",
                        nodes.join(", ")
                    ),
                ))
            },
        };
        match answer {
            Ok(results) => Ok(results.into_iter().skip(nodes.len()).map(result).collect()),
            Err(zk::Error::Multi { index, code }) if index < nodes.len() => Err(Error::new(
                ErrorKind::LockLost,
                format!(
                    "fenced write: lock node {} is gone ({code}): the lock is lost; nothing was written",
                    nodes[index]
                ),
            )),
            Err(zk::Error::Multi { index, code }) => {
                let i = index - nodes.len();
                let op = &ops[i];
                let what = format!("fenced write, operation {i} ({} {})", op.kind().name(), shown(op.path()));
                let mut e = match code {
                    zk::Code::BadArguments => Error::invalid_argument(format!(
                        "{what}: ZooKeeper refused it as malformed ({code}); nothing was written"
                    )),
                    _ => crate::error::refusal(&what, &zk::Error::Server(code)).map_or_else(
                        || Error::new(ErrorKind::ZooKeeper, format!("{what} failed: {code}; nothing was written")),
                        |e| Error::new(e.kind(), format!("{}; nothing was written", e.message())),
                    ),
                };
                e.failed_op = Some(FailedOp { index: i, code: format!("{code:?}") });
                Err(e)
            },
            Err(e) if outcome_unknown(&e) => Err(Error::new(
                ErrorKind::ConnectionLoss,
                format!(
                    "fenced write: {e}: the outcome is unknown (if it was made, it was made while {} was ours)",
                    nodes.join(", ")
                ),
            )),
            Err(
                e @ (zk::Error::SessionExpired | zk::Error::Server(zk::Code::SessionExpired | zk::Code::SessionMoved)),
            ) => Err(Error::new(
                ErrorKind::LockLost,
                format!("fenced write: the session ended ({e}): the lock is lost; nothing was written"),
            )),
            Err(e) => Err(Error::from_zk("fenced write", e)),
        }
    }
}

fn result(r: zk::MultiResult) -> FencedResult {
    match r {
        zk::MultiResult::Create { path, .. } => FencedResult::Created { path },
        zk::MultiResult::SetData { stat } => FencedResult::DataSet { version: stat.version },
        zk::MultiResult::Delete => FencedResult::Deleted,
        zk::MultiResult::Check => FencedResult::Checked,
    }
}

impl Guard {
    /// Makes `ops` (the caller's ZooKeeper writes) in one ZooKeeper
    /// transaction with a check that our lock node still exists: all are
    /// made, and only while the lock is ours, or none is. A holder stalled
    /// past its session, or whose node was deleted, has its write refused
    /// by ZooKeeper itself, whatever it believes. Use it for state kept in
    /// ZooKeeper that only the lock's holder may change. An empty `ops`
    /// only checks. Blocks the calling thread for one request (waiting
    /// first for the connection if it is down), at most the client's
    /// operation timeout; [`Guard::fenced_multi_async`] is the same call as
    /// a future.
    ///
    /// # Errors
    /// Checked at once, nothing sent: `InvalidPath` / `InvalidArgument`
    /// naming the operation (a malformed path, a path inside the lock's own
    /// path, a negative version, more than [`MAX_FENCED_BYTES`]); `NotHeld`
    /// after this guard's release; `LockLost` once the lock is known lost;
    /// `Closed` once the client is closed.
    /// From ZooKeeper, nothing written: `LockLost` when our node is gone or
    /// the session ended; for an operation ZooKeeper refused, `ZooKeeper`
    /// (or `NoAuth`, `InvalidArgument`) with [`Error::failed_op`] giving
    /// its index and ZooKeeper's code (`"BadVersion"`, `"NoNode"`,
    /// `"NodeExists"`, `"NotEmpty"`, ...).
    /// Outcome unknown: `ConnectionLoss` (the connection was lost with the
    /// write on its way, or did not come back within the operation timeout:
    /// then it was not sent) and `Timeout` (no answer within the operation
    /// timeout); if such a write was made, it was made while the lock was
    /// ours.
    pub fn fenced_multi(&self, ops: &[FencedOp]) -> Result<Vec<FencedResult>> {
        let work = prepare(&[self], ops.to_vec())?;
        self.client().shared().block_on(work.send())?
    }

    /// [`Guard::fenced_multi`] as a future that any executor can await.
    /// The checks made at once, and the write's start, happen when this
    /// method is called: the future only waits for the outcome, and
    /// dropping it does not take the write back (it may still be made,
    /// only while the lock is ours).
    ///
    /// # Errors
    /// As [`Guard::fenced_multi`].
    pub fn fenced_multi_async(
        &self,
        ops: Vec<FencedOp>,
    ) -> impl Future<Output = Result<Vec<FencedResult>>> + Send + 'static {
        let started = prepare(&[self], ops).map(|work| self.client().shared().run(work.send()));
        async move { started?.await? }
    }
}

impl MultiGuard {
    /// [`Guard::fenced_multi`] fenced by every member: `ops` are made only
    /// while every member's node exists. One transaction goes on one
    /// session: the members must all be on one client's session.
    ///
    /// # Errors
    /// As [`Guard::fenced_multi`]; a path inside any member's lock path is
    /// refused; members on two sessions (two clients) are refused with
    /// `LockLost`, nothing sent (one session cannot check another's nodes,
    /// whose session may have ended unseen: protocol section 8).
    pub fn fenced_multi(&self, ops: &[FencedOp]) -> Result<Vec<FencedResult>> {
        let guards: Vec<&Guard> = self.guards().iter().collect();
        let work = prepare(&guards, ops.to_vec())?;
        guards[0].client().shared().block_on(work.send())?
    }

    /// [`MultiGuard::fenced_multi`] as a future that any executor can
    /// await (see [`Guard::fenced_multi_async`]).
    ///
    /// # Errors
    /// As [`Guard::fenced_multi`].
    pub fn fenced_multi_async(
        &self,
        ops: Vec<FencedOp>,
    ) -> impl Future<Output = Result<Vec<FencedResult>>> + Send + 'static {
        let guards: Vec<&Guard> = self.guards().iter().collect();
        let started = prepare(&guards, ops).map(|work| guards[0].client().shared().run(work.send()));
        async move { started?.await? }
    }
}

impl crate::Client {
    /// Asks the holder of the lock node `node_path` to let go: writes
    /// `__REVOKE__` to it, as Curator's `Revoker.attemptRevoke` does, so a
    /// zklock holder's [`Guard::on_revocation`] callbacks and a Curator
    /// holder's `RevocationListener` (`makeRevocable`) are told. The holder
    /// decides; nothing is taken from it. `Ok(false)` if the node is gone.
    /// Blocks the calling thread for one request, at most the operation
    /// timeout.
    ///
    /// # Errors
    /// `InvalidPath` for a malformed path; `NoAuth` if the node's ACL does
    /// not let this client write it; `Closed`; `ConnectionLoss` / `Timeout`
    /// when ZooKeeper does not answer within the operation timeout (the
    /// request may have been made).
    pub fn revoke(&self, node_path: &str) -> Result<bool> {
        self.shared().block_on(self.revoke_async(node_path))?
    }

    /// [`crate::Client::revoke`] for async callers: the path and the client are
    /// checked now (an error is the future's output); the request is made
    /// when the returned future (any executor) is first polled, on the
    /// client's runtime, and dropping the future after that does not take
    /// it back.
    ///
    /// # Errors
    /// As [`crate::Client::revoke`].
    pub fn revoke_async(&self, node_path: &str) -> impl Future<Output = Result<bool>> + Send + 'static {
        self.on_node_async(node_path, |_, zk, path, deadline| async move {
            let write = zk.set_data(&path, crate::holding::REVOKE, -1).value();
            match tokio::time::timeout_at(deadline.into(), write).await.map_err(|_| Error::timeout("revoke"))? {
                Ok(_) => Ok(true),
                Err(zk::Error::Server(zk::Code::NoNode)) => Ok(false),
                Err(e) => Err(Error::from_zk(&format!("revoking {}", shown(&path)), e)),
            }
        })
    }

    /// Whether the grant whose node is `node_path` and whose fencing token
    /// is `token` still stands, asked of ZooKeeper by a process that does
    /// not hold its guard (a script run by `zklock run`, which gets both in
    /// its environment): after a `sync` (so the server answering has seen
    /// every write the leader had committed), our node must exist with
    /// creation zxid `token`. A node that exists keeps every other
    /// contender waiting, so the lock was still that grant's when the read
    /// was answered; it may be lost right after (use a fenced write, or
    /// give the token to the resource, where that window matters). Blocks
    /// the calling thread for two requests, at most the operation timeout.
    ///
    /// # Errors
    /// `LockLost` when the node is gone or is another node (made again by
    /// a third party: another creation zxid); `InvalidPath` for a malformed
    /// path; `Closed`; `ConnectionLoss` / `Timeout` when ZooKeeper does not
    /// answer within the operation timeout.
    pub fn fence_check(&self, node_path: &str, token: u64) -> Result<()> {
        self.on_node(node_path, move |_, zk, path, deadline| async move {
            let sync = zk.sync(&path).value();
            let read = zk.exists(&path).value();
            let answered = tokio::time::timeout_at(deadline.into(), async { (sync.await, read.await) }).await;
            let (synced, stat) = answered.map_err(|_| Error::timeout("fence check"))?;
            synced.map_err(|e| Error::from_zk("fence check: sync", e))?;
            match stat.map_err(|e| Error::from_zk("fence check", e))? {
                Some(stat) if u64::try_from(stat.czxid).ok() == Some(token) => Ok(()),
                Some(stat) => Err(Error::new(
                    ErrorKind::LockLost,
                    format!(
                        "fence check: {} is another node (creation zxid {}, not the token {token}): the grant is \
                         over",
                        shown(&path),
                        stat.czxid
                    ),
                )),
                None => Err(Error::new(
                    ErrorKind::LockLost,
                    format!("fence check: {} is gone: the grant with token {token} is over", shown(&path)),
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(ops: &[FencedOp]) -> Error {
        validate(ops, &["/locks/job"], &[], &[]).expect_err("refused")
    }

    #[test]
    fn an_operation_and_its_result_have_the_same_kind() {
        let pairs = [
            (FencedOp::create("/a", "", CreateMode::Ephemeral), FencedResult::Created { path: "/a".into() }),
            (FencedOp::set_data("/a", "x", None), FencedResult::DataSet { version: 1 }),
            (FencedOp::delete("/a", None), FencedResult::Deleted),
            (FencedOp::check("/a", Some(2)), FencedResult::Checked),
        ];
        let kinds: Vec<FencedKind> = pairs
            .iter()
            .map(|(op, result)| {
                assert_eq!(op.kind(), result.kind(), "{op:?}");
                op.kind()
            })
            .collect();
        assert_eq!(kinds, FencedKind::ALL, "one operation of each kind, in table order");
    }

    #[test]
    fn each_bad_operation_is_named() {
        let e = err(&[FencedOp::check("/ok", None), FencedOp::set_data("relative", "x", None)]);
        assert_eq!(e.kind(), ErrorKind::InvalidPath);
        assert!(e.message().starts_with("fenced write, operation 1 (SET_DATA): invalid path \"relative\""), "{e}");
        let e = err(&[FencedOp::delete("/", None)]);
        assert_eq!(e.kind(), ErrorKind::InvalidPath);
        let e = err(&[FencedOp::create("/zookeeper/x", "", CreateMode::Persistent)]);
        assert_eq!(e.kind(), ErrorKind::InvalidPath);
        let e = err(&[FencedOp::check("/a", Some(-1))]);
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("operation 0 (CHECK)") && e.message().contains("negative"), "{e}");
    }

    #[test]
    fn the_lock_s_own_queue_is_refused_but_its_neighbours_are_not() {
        let e = err(&[FencedOp::delete("/locks/job/_c_x-lock-0000000001", None)]);
        assert_eq!(e.kind(), ErrorKind::InvalidPath);
        assert!(e.message().contains("inside the lock path"), "{e}");
        validate(
            &[
                FencedOp::set_data("/locks/job", "x", None),
                FencedOp::set_data("/locks/jobs/a", "x", None),
                FencedOp::set_data("/locks/job-state", "x", Some(3)),
            ],
            &["/locks/job"],
            &[],
            &[],
        )
        .expect("outside the queue");
    }

    #[test]
    fn a_write_over_the_request_limit_is_refused_before_sending() {
        let big = vec![0u8; MAX_FENCED_BYTES / 2 + 1];
        let e = err(&[FencedOp::set_data("/a", big.clone(), None), FencedOp::set_data("/b", big, None)]);
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("jute.maxbuffer"), "{e}");
        validate(&[FencedOp::set_data("/a", vec![0u8; MAX_FENCED_BYTES - 200], None)], &[], &[], &[]).expect("fits");
    }

    /// Outside attack round 16, F1: 20,000 `set_data`s of 40 KB in all had
    /// a 1.5 MB reply (a Stat each): made, but reported as a lost
    /// connection. The reply is bounded too.
    #[test]
    fn a_write_whose_reply_would_be_over_the_limit_is_refused_before_sending() {
        let ops: Vec<FencedOp> = (0..20_000).map(|_| FencedOp::set_data("/a", "", None)).collect();
        let e = validate(&ops, &[], &[], &[]).expect_err("refused");
        assert!(e.message().contains("its reply would take"), "{e}");
        let ops: Vec<FencedOp> = (0..10_000).map(|_| FencedOp::set_data("/a", "", None)).collect();
        validate(&ops, &[], &[], &[]).expect("770 KB of reply fits");
        // The checks of our nodes count too (O1: long lock paths).
        let nodes = vec!["/x".repeat(16 * 1024); 40];
        let e = validate(&[], &[], &nodes, &[]).expect_err("refused");
        assert!(e.message().contains("its request would take"), "{e}");
    }

    #[test]
    fn versions_and_modes_reach_the_wire_as_zookeeper_spells_them() {
        let acl = [];
        assert_eq!(
            FencedOp::set_data("/a", "x", None).to_zk(&acl),
            zk::MultiOp::SetData { path: "/a".into(), data: b"x".to_vec(), version: -1 }
        );
        assert_eq!(FencedOp::delete("/a", Some(4)).to_zk(&acl), zk::MultiOp::Delete { path: "/a".into(), version: 4 });
        assert_eq!(
            FencedOp::create("/a", "", CreateMode::EphemeralSequential).to_zk(&acl),
            zk::MultiOp::Create {
                path: "/a".into(),
                data: vec![],
                acl: vec![],
                mode: zk::CreateMode::EphemeralSequential
            }
        );
    }
}

//! Deleting our nodes (protocol doc sections 6 and 7): after a release, a
//! timeout, a cancel or an error; at once or in the background; and only
//! nodes that are still ours.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::client::{Session, Shared};
use crate::names::{self};
use crate::zk::{self, ClientExt as _, Code};

/// Whether a ZooKeeper error leaves the outcome of a request unknown.
pub(crate) fn outcome_unknown(e: &zk::Error) -> bool {
    matches!(
        e,
        zk::Error::ConnectionLoss(_)
            | zk::Error::Timeout(_)
            | zk::Error::Server(Code::ConnectionLoss | Code::OperationTimeout)
    )
}

/// Whether a ZooKeeper error means the session is gone.
pub(crate) fn session_gone(e: &zk::Error) -> bool {
    matches!(
        e,
        zk::Error::SessionExpired | zk::Error::Closed | zk::Error::Server(Code::SessionExpired | Code::SessionMoved)
    )
}

/// Something to delete in the background until it is gone or the session is.
#[derive(Debug)]
pub(crate) enum Cleanup {
    /// Our node at this path, if the session still owns it (a node of the
    /// same name made by another session after ours was deleted is not
    /// ours to delete).
    Node(String),
    /// Our nodes under `parent` whose name starts with `prefix` and whose
    /// owner is the session (a create whose reply was lost).
    Prefix { parent: String, prefix: String },
}

/// What became of a node we set out to delete (the holder's machine reads
/// it after a release).
pub(crate) use zklock_proto::hold::Deletion;

/// Deletes our node now if the session is connected, else in the
/// background (`Pending`). `known_ours`: the caller holds the lock on this
/// node and a watch armed by a read that showed it ours has reported
/// nothing, so one `delete` is sent at once; otherwise the node is read
/// first and deleted only if the session owns it (see [`Cleanup::Node`]).
/// `patience` bounds the try made now (each request is bounded by the
/// operation timeout anyway); what is not done by then goes on in the
/// background.
pub(crate) async fn delete_node(
    shared: &Arc<Shared>,
    session: &Arc<Session>,
    path: String,
    known_ours: bool,
    patience: Option<Duration>,
) -> Deletion {
    if session.state().is_terminated() {
        return Deletion::Gone;
    }
    if session.state() == zk::SessionState::Connected {
        let now = async {
            if known_ours {
                delete_once(shared, session, &path, None).await
            } else {
                delete_if_ours(shared, session, &path).await
            }
        };
        let done = match patience {
            Some(p) => tokio::time::timeout(p, now).await.unwrap_or(Deletion::Pending),
            None => now.await,
        };
        if done != Deletion::Pending {
            return done;
        }
    }
    spawn_cleanup(shared.clone(), session.clone(), Cleanup::Node(path));
    Deletion::Pending
}

/// One `delete` of `path` (at `version`, if given).
pub(crate) async fn delete_once(shared: &Shared, session: &Session, path: &str, version: Option<i32>) -> Deletion {
    let Ok(zk) = session.zk() else { return Deletion::Gone };
    match tokio::time::timeout(shared.options.operation_timeout, zk.remove(path, version)).await {
        Ok(Ok(())) => Deletion::Deleted,
        Ok(Err(e)) if e == zk::Error::Server(zk::Code::NoNode) || session_gone(&e) => Deletion::Gone,
        Ok(Err(zk::Error::Server(zk::Code::NoAuth))) => refused(path, session),
        Ok(Err(_)) | Err(_) => Deletion::Pending,
    }
}

/// An ACL that does not let us delete (or read) our own node: trying again
/// cannot help; the node, ephemeral, goes with the session.
fn refused(path: &str, session: &Session) -> Deletion {
    log::warn!("zklock: not authorized to delete {path} (NoAuth): it stays until session {:#x} ends", session.id);
    Deletion::Refused
}

/// Retries `what` until it is done, the session ends, or the client closes
/// (which ends the session).
pub(crate) fn spawn_cleanup(shared: Arc<Shared>, session: Arc<Session>, what: Cleanup) {
    match &what {
        // Connected, the server was only slower than the caller's patience
        // (an outside test aborting 2,000 acquires at once got a warning
        // for half of them): routine.
        Cleanup::Node(path) if session.state() == zk::SessionState::Connected => log::info!(
            "zklock: {path} is not deleted yet (session {:#x}): the server is slow to answer; going on in the \
             background",
            session.id
        ),
        Cleanup::Node(path) => log::warn!(
            "zklock: cannot delete {path} now (session {:#x}, {:?}); retrying in the background",
            session.id,
            session.state()
        ),
        // Routine after an acquire cancelled or timed out while its create
        // was on its way (an outside test saw a warning for each such
        // abort): the outcome is not known, so the node is looked for.
        Cleanup::Prefix { parent, prefix } => log::info!(
            "zklock: the outcome of a create under {parent} is not known (its reply was lost, or the acquire \
             stopped waiting for it; session {:#x}); looking for {prefix}* in the background",
            session.id
        ),
    }
    shared.pending_cleanups.fetch_add(1, Ordering::AcqRel);
    let handle = shared.handle.clone();
    handle.spawn(async move {
        let mut backoff = Duration::from_millis(50);
        loop {
            let connected = tokio::select! {
                r = session.wait_connected(None) => r.is_ok(),
                _ = shared.closed() => false,
            };
            if !connected {
                log::info!(
                    "zklock: background cleanup {what:?} ends with session {:#x} (its nodes go with it)",
                    session.id
                );
                break;
            }
            if cleanup_once(&shared, &session, &what).await {
                log::info!("zklock: background cleanup {what:?} done (session {:#x})", session.id);
                break;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
        shared.pending_cleanups.fetch_sub(1, Ordering::AcqRel);
    });
}

/// One try of a cleanup; true when nothing is left to do.
pub(crate) async fn cleanup_once(shared: &Shared, session: &Session, what: &Cleanup) -> bool {
    match what {
        Cleanup::Node(path) => delete_if_ours(shared, session, path).await != Deletion::Pending,
        Cleanup::Prefix { parent, prefix } => {
            let Ok(zk) = session.zk() else { return true };
            let children = match tokio::time::timeout(shared.options.operation_timeout, zk.list_children(parent)).await
            {
                Ok(Ok(c)) => c,
                Ok(Err(e)) if e == zk::Error::Server(zk::Code::NoNode) || session_gone(&e) => return true,
                _ => return false,
            };
            for node in names::own_nodes(&children, prefix) {
                if delete_if_ours(shared, session, &format!("{parent}/{}", node.name)).await == Deletion::Pending {
                    return false;
                }
            }
            true
        },
    }
}

/// Looks at the node at `path` and deletes it (at the version seen) if the
/// session owns it. The look is an `exists`, which ZooKeeper checks
/// against no ACL: a node we may delete but not read is still deleted.
pub(crate) async fn delete_if_ours(shared: &Shared, session: &Session, path: &str) -> Deletion {
    let Ok(zk) = session.zk() else { return Deletion::Gone };
    match tokio::time::timeout(shared.options.operation_timeout, zk.check_stat(path)).await {
        Ok(Ok(Some(stat))) if stat.ephemeral_owner == session.id => {
            delete_once(shared, session, path, Some(stat.version)).await
        },
        Ok(Ok(Some(stat))) => {
            log::warn!("zklock: not deleting {path}: it is owned by session {:#x}, not ours", stat.ephemeral_owner);
            Deletion::Gone
        },
        Ok(Ok(None)) => Deletion::Gone,
        Ok(Err(e)) if e == zk::Error::Server(zk::Code::NoNode) || session_gone(&e) => Deletion::Gone,
        Ok(Err(_)) | Err(_) => Deletion::Pending,
    }
}

/// How long a failed acquire waits for the deletion of its node before
/// leaving it to the background (its deadline has passed already).
pub(crate) const CLEANUP_GRACE: Duration = Duration::from_millis(250);

//! Deleting our nodes (protocol doc sections 6 and 7): after a release, a
//! timeout, a cancel or an error; at once or in the background; and only
//! nodes that are still ours.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use zklock_proto::acquire::Id;
use zklock_proto::cleanup::Action;

use crate::client::{Session, Shared};
use crate::requests::{failure, send, Pending};
use crate::zk;

/// Something to delete: our node, or the nodes of a create of unknown
/// outcome (`zklock_proto::cleanup`).
pub(crate) use zklock_proto::cleanup::Target;
/// What became of a node we set out to delete (the holder's machine reads
/// it after a release).
pub(crate) use zklock_proto::hold::Deletion;

/// Deletes our node now if the session is connected, else in the
/// background (`Pending`). `known_ours`: the caller holds the lock on this
/// node and a watch armed by a read that showed it ours has reported
/// nothing, so one `delete` is sent at once; otherwise the node is looked
/// at first and deleted only if the session owns it (the machine's rule:
/// `zklock_proto::cleanup`). `patience` bounds the try made now (each
/// request is bounded by the operation timeout anyway); what is not done by
/// then goes on in the background.
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
        let now = one_try(shared, session, Target::Node { path: path.clone(), known_ours });
        let done = match patience {
            Some(p) => tokio::time::timeout(p, now).await.unwrap_or(Deletion::Pending),
            None => now.await,
        };
        if done != Deletion::Pending {
            return done;
        }
    }
    spawn_cleanup(shared.clone(), session.clone(), Target::Node { path, known_ours: false });
    Deletion::Pending
}

/// Runs one try of the cleanup machine on `target`: sends what it asks, in
/// order, and feeds it the replies (ZooKeeper answers in order).
async fn one_try(shared: &Shared, session: &Session, target: Target) -> Deletion {
    let Ok(zk) = session.zk() else { return Deletion::Gone };
    let mut machine = zklock_proto::cleanup::Cleanup::new(target, session.id);
    let mut pending: VecDeque<(Id, Pending)> = VecDeque::new();
    loop {
        while let Some(action) = machine.poll_action() {
            match action {
                Action::Send(id, req) => pending.push_back((id, send(shared, &zk, req).0)),
                Action::NotOurs { path, owner } => {
                    log::warn!("zklock: not deleting {path}: it is owned by session {owner:#x}, not ours")
                },
                Action::Done(Deletion::Refused) => {
                    log::warn!(
                        "zklock: not authorized to delete a node of ours (NoAuth): it stays until session {:#x} ends",
                        session.id
                    );
                    return Deletion::Refused;
                },
                Action::Done(done) => return done,
            }
        }
        let Some((id, reply)) = pending.pop_front() else { return Deletion::Pending };
        let (result, connection) = reply.await;
        machine.handle(id, zklock_proto::acquire::Reply { result: result.map_err(failure), connection });
    }
}

/// Retries `what` until it is done, the session ends, or the client closes
/// (which ends the session).
pub(crate) fn spawn_cleanup(shared: Arc<Shared>, session: Arc<Session>, what: Target) {
    match &what {
        // Connected, the server was only slower than the caller's patience
        // (an outside test aborting 2,000 acquires at once got a warning
        // for half of them): routine.
        Target::Node { path, .. } if session.state() == zk::SessionState::Connected => log::info!(
            "zklock: {path} is not deleted yet (session {:#x}): the server is slow to answer; going on in the \
             background",
            session.id
        ),
        Target::Node { path, .. } => log::warn!(
            "zklock: cannot delete {path} now (session {:#x}, {:?}); retrying in the background",
            session.id,
            session.state()
        ),
        // Routine after an acquire cancelled or timed out while its create
        // was on its way (an outside test saw a warning for each such
        // abort): the outcome is not known, so the node is looked for.
        Target::Prefix { parent, prefix } => log::info!(
            "zklock: the outcome of a create under {parent} is not known (its reply was lost, or the acquire \
             stopped waiting for it; session {:#x}); looking for {prefix}* in the background",
            session.id
        ),
    }
    shared.pending_cleanups.fetch_add(1, Ordering::AcqRel);
    crate::metrics::Counters::cleanup(true);
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
            if one_try(&shared, &session, what.clone()).await != Deletion::Pending {
                log::info!("zklock: background cleanup {what:?} done (session {:#x})", session.id);
                break;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
        shared.pending_cleanups.fetch_sub(1, Ordering::AcqRel);
        crate::metrics::Counters::cleanup(false);
    });
}

/// How long a failed acquire waits for the deletion of its node before
/// leaving it to the background (its deadline has passed already).
pub(crate) const CLEANUP_GRACE: Duration = Duration::from_millis(250);

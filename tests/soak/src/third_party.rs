//! The third party: the orchestrator's own sessions, which delete other
//! clients' lock nodes (fault kind `third-party-delete`).
//!
//! It lists the queue with `zklock_core::Client::participants` and acts
//! with a plain session of zklock's own session layer (`zklock-zk`). The targets come in turn (see
//! [`targets`]): a waiter's node, a holder's node, on every lock; on the
//! read/write lock a waiting reader behind a writer and a waiting writer,
//! and the holder (reader or writer, whichever holds).
//!
//! - A **waiter**'s node is deleted in one transaction with a check that
//!   the node it waits on (the one before it; for a reader, the last
//!   writer before it) still exists: so it was not holding at the delete,
//!   and never had been. A grant on it afterwards is a violation.
//! - A **holder**'s node is deleted only once its holder has announced
//!   the grant to the resource (its czxid is the token of an open grant),
//!   so the grant came before the delete.
//! - A **holder and the waiter behind it** go in one transaction, the
//!   holder's node first: the waiter gets the notification of its blocker's
//!   delete while that of its own node is still on the way, and its node
//!   never exists with the blocker gone (issue 13's outside attack: grants
//!   on the deleted node). Recorded as both deletes above.
//!
//! Every deleted node's czxid (read with getData just before) is recorded.
//!
//! A delete whose reply is lost (connection trouble, a server fault of
//! another chaos thread) may or may not have happened. A waiter's is then
//! not recorded: that can only hide a violation, never make one up. A
//! holder's is recorded once the node is gone (its holder releases it
//! within milliseconds anyway), marked `reply_lost`: an unrecorded delete
//! of a holder's node would make its overlap with the next grant look like
//! a violation.

use std::time::{Duration, Instant};

use zklock_core::{Client, ClientOptions, NodeKind, Participant};
use zklock_zk as zk;

use crate::analysis::{DeletedNode, Fault, FaultKind, LockId, Mode, Role};
use crate::clock::mono_ns;
use crate::resource::Resource;

/// How long one request of the third party may take.
const OP_TIMEOUT: Duration = Duration::from_secs(2);
/// How long one injection looks for a suitable node before giving up.
const SEARCH: Duration = Duration::from_secs(5);
/// How long a holder's node may still exist after a delete whose reply was
/// lost (the holder releases within milliseconds, or its session expires).
const REPLY_LOST_LIMIT: Duration = Duration::from_secs(15);

/// Whether `e` says a node was not there (for a multi: the operation that
/// failed).
fn no_node(e: &zk::Error) -> bool {
    e.code() == zk::Code::NoNode
}

/// Which node to delete next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A node that waits, on `lock`; for the read/write lock, of this kind.
    Waiter(LockId, Option<NodeKind>),
    /// The node of a holder that announced its grant, on `lock`.
    Holder(LockId),
    /// That holder's node and then the node waiting right behind it, in one
    /// transaction, on `lock`.
    HolderAndWaiter(LockId),
}

/// The rotation of targets over `locks`: waiter, holder, and holder with
/// its waiter in turn; on the read/write lock the waiter is a reader behind
/// a writer, then a writer.
pub fn targets(locks: &[LockId]) -> Vec<Target> {
    let mut out = Vec::new();
    for &lock in locks {
        match lock {
            LockId::Exclusive | LockId::Election => {
                out.extend([Target::Waiter(lock, None), Target::Holder(lock), Target::HolderAndWaiter(lock)])
            },
            LockId::Rw => out.extend([
                Target::Waiter(lock, Some(NodeKind::Reader)),
                Target::Holder(lock),
                Target::Waiter(lock, Some(NodeKind::Writer)),
                Target::HolderAndWaiter(lock),
            ]),
            // A lease node that waits cannot be told from one granted but
            // not yet announced (no node it waits on to check in the same
            // transaction): only holders' leases are deleted.
            LockId::Semaphore => out.push(Target::Holder(lock)),
        }
    }
    out
}

/// The first waiting node of `kind` (any kind if `None`) in `queue`, and
/// the node it waits on: the one right before it, or for a reader the last
/// writer before it. Returns (waiter, waited on).
pub fn pick_waiter(queue: &[Participant], kind: Option<NodeKind>) -> Option<(&Participant, &Participant)> {
    queue.iter().enumerate().filter(|(_, p)| !p.holds && kind.is_none_or(|k| p.kind == k)).find_map(|(i, p)| {
        let before = &queue[..i];
        let waits_on = match p.kind {
            NodeKind::Reader => before.iter().rev().find(|b| b.kind == NodeKind::Writer),
            NodeKind::Writer => before.last(),
        };
        waits_on.map(|w| (p, w))
    })
}

/// The mode of a node of `kind` on `lock`.
fn mode_of(lock: LockId, kind: NodeKind) -> Mode {
    match (lock, kind) {
        (LockId::Exclusive, _) => Mode::Exclusive,
        (LockId::Election, _) => Mode::Leader,
        (LockId::Rw, NodeKind::Reader) => Mode::Read,
        (LockId::Rw, NodeKind::Writer) => Mode::Write,
        (LockId::Semaphore, _) => Mode::Lease,
    }
}

/// The third party's sessions, made when first needed and again after a
/// failure.
pub struct Outsider {
    hosts: String,
    lister: Option<Client>,
    raw: Option<(tokio::runtime::Runtime, zk::Session)>,
    rotation: Vec<Target>,
    next: usize,
}

impl Outsider {
    /// An outsider on the ensemble at `hosts` (direct, not through any
    /// contender's proxy), deleting nodes on `locks`.
    pub fn new(hosts: String, locks: &[LockId]) -> Outsider {
        Outsider { hosts, lister: None, raw: None, rotation: targets(locks), next: 0 }
    }

    fn lister(&mut self) -> Result<&Client, String> {
        if self.lister.as_ref().is_some_and(Client::is_closed) {
            self.lister = None;
        }
        if self.lister.is_none() {
            let options = ClientOptions::new(self.hosts.clone())
                .session_timeout(Duration::from_secs(20))
                .connect_timeout(Duration::from_secs(10))
                .operation_timeout(OP_TIMEOUT);
            self.lister = Some(Client::connect(options).map_err(|e| format!("third party: connect: {e}"))?);
        }
        self.lister.as_ref().ok_or_else(|| "third party: no session".to_owned())
    }

    /// Runs `f` on the plain session (connecting first if needed), bounded
    /// by `OP_TIMEOUT`; a failed session is dropped to be made again.
    /// A request not answered within `OP_TIMEOUT` fails with
    /// [`zk::Error::ConnectionLoss`]: it may or may not have been carried out.
    fn raw<T>(&mut self, f: impl AsyncFnOnce(&zk::Session) -> Result<T, zk::Error>) -> Result<T, zk::Error> {
        if self.raw.as_ref().is_some_and(|(_, c)| c.state().is_terminated()) {
            self.raw = None;
        }
        if self.raw.is_none() {
            let rt =
                tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().map_err(|e| {
                    zk::Error::ConnectionLoss(format!("not connected: no runtime for the session: {e}"))
                })?;
            let config = zk::Config::new(&self.hosts)?
                .session_timeout(Duration::from_secs(20))
                .connect_timeout(Duration::from_secs(10));
            // The session's task runs on the runtime that connects it.
            let client = rt.block_on(zk::Session::connect(config))?;
            self.raw = Some((rt, client));
        }
        let Some((rt, client)) = self.raw.as_ref() else { return Err(zk::Error::Closed) };
        let out = rt.block_on(async { tokio::time::timeout(OP_TIMEOUT, f(client)).await }).unwrap_or_else(|_| {
            Err(zk::Error::ConnectionLoss(format!("no reply within {OP_TIMEOUT:?} (it may have been carried out)")))
        });
        if out.as_ref().is_err_and(zk::Error::is_final) {
            self.raw = None;
        }
        out
    }

    /// Deletes the next target's node (or nodes): looks for a suitable one
    /// for up to a few seconds (or until `until`). One fault per deleted
    /// node; none if none turned up.
    pub fn delete_next(&mut self, resource: &Resource, until: Instant) -> Result<Vec<Fault>, String> {
        let Some(&target) = self.rotation.get(self.next % self.rotation.len().max(1)) else { return Ok(Vec::new()) };
        self.next += 1;
        let deadline = (Instant::now() + SEARCH).min(until.max(Instant::now() + Duration::from_millis(500)));
        while Instant::now() < deadline {
            match self.try_delete(target, resource) {
                Ok(faults) if !faults.is_empty() => return Ok(faults),
                Ok(_) => {},
                Err(e) => {
                    // The servers may be down (another fault thread): not an error of the run.
                    eprintln!("{:.3} soak: third party: {e}", mono_ns() as f64 / 1e9);
                    std::thread::sleep(Duration::from_millis(200));
                },
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(Vec::new())
    }

    /// One look at the queue and, if it has a suitable node, its delete.
    fn try_delete(&mut self, target: Target, resource: &Resource) -> Result<Vec<Fault>, String> {
        let lock = match target {
            Target::Waiter(lock, _) | Target::Holder(lock) | Target::HolderAndWaiter(lock) => lock,
        };
        let path = lock.queue_path();
        let queue = self.lister()?.participants(&path).map_err(|e| format!("listing {path}: {e}"))?;
        let node = |name: &str| format!("{path}/{name}");
        match target {
            Target::Waiter(_, kind) => {
                let Some((victim, waits_on)) = pick_waiter(&queue, kind) else { return Ok(Vec::new()) };
                let (victim_path, waits_on_path) = (node(&victim.name), node(&waits_on.name));
                let czxid = match self.raw(async |c| c.get_data(&victim_path).await.map(|r| r.value.1.czxid)) {
                    Ok(z) => z,
                    Err(e) if no_node(&e) => return Ok(Vec::new()),
                    Err(e) => return Err(format!("reading {victim_path}: {e}")),
                };
                let start = mono_ns();
                let ops = [
                    zk::MultiOp::Check { path: waits_on_path.clone(), version: -1 },
                    zk::MultiOp::Delete { path: victim_path.clone(), version: -1 },
                ];
                let deleted = self.raw(async |c| c.multi(&ops).await.map(drop));
                let end = mono_ns();
                match deleted {
                    Ok(()) => Ok(vec![self.fault(lock, victim, czxid, Role::Waiter, false, start, end)]),
                    // The node waited on, or ours, went meanwhile: look again.
                    Err(e) if no_node(&e) => Ok(Vec::new()),
                    Err(e) => Err(format!("deleting {victim_path} (not recorded, it may have happened): {e}")),
                }
            },
            Target::Holder(_) => {
                let open = resource.open_grants(lock);
                // Every lease node may hold; the open grants tell which do.
                for holder in queue.iter().filter(|p| p.holds || lock.permits().is_some()) {
                    let holder_path = node(&holder.name);
                    let czxid = match self.raw(async |c| c.get_data(&holder_path).await.map(|r| r.value.1.czxid)) {
                        Ok(z) => z,
                        Err(e) if no_node(&e) => continue,
                        Err(e) => return Err(format!("reading {holder_path}: {e}")),
                    };
                    if !open.iter().any(|g| i64::try_from(g.token) == Ok(czxid)) {
                        continue;
                    }
                    let start = mono_ns();
                    let deleted = self.raw(async |c| c.delete(&holder_path, -1).await.map(drop));
                    let end = mono_ns();
                    return match deleted {
                        Ok(()) => Ok(vec![self.fault(lock, holder, czxid, Role::Holder, false, start, end)]),
                        Err(e) if no_node(&e) => Ok(Vec::new()),
                        Err(e) => self.holder_reply_lost(lock, holder, czxid, start, &e).map(|f| vec![f]),
                    };
                }
                Ok(Vec::new())
            },
            Target::HolderAndWaiter(_) => {
                // The first waiter, blocked by a holder that announced its
                // grant: while the holder's node exists the waiter cannot
                // hold, so deleting both in one transaction deletes a
                // waiter that never held.
                let Some((victim, holder)) = pick_waiter(&queue, None) else { return Ok(Vec::new()) };
                if !holder.holds {
                    return Ok(Vec::new());
                }
                let (victim_path, holder_path) = (node(&victim.name), node(&holder.name));
                let czxids = self.raw(async |c| {
                    let (_, h) = c.get_data(&holder_path).await?.value;
                    let (_, v) = c.get_data(&victim_path).await?.value;
                    Ok((h.czxid, v.czxid))
                });
                let (holder_czxid, victim_czxid) = match czxids {
                    Ok(z) => z,
                    Err(e) if no_node(&e) => return Ok(Vec::new()),
                    Err(e) => return Err(format!("reading {holder_path} and {victim_path}: {e}")),
                };
                if !resource.open_grants(lock).iter().any(|g| i64::try_from(g.token) == Ok(holder_czxid)) {
                    return Ok(Vec::new());
                }
                let start = mono_ns();
                let ops = [
                    zk::MultiOp::Delete { path: holder_path.clone(), version: -1 },
                    zk::MultiOp::Delete { path: victim_path.clone(), version: -1 },
                ];
                let deleted = self.raw(async |c| c.multi(&ops).await.map(drop));
                let end = mono_ns();
                match deleted {
                    Ok(()) => Ok(vec![
                        self.fault(lock, holder, holder_czxid, Role::Holder, false, start, end),
                        self.fault(lock, victim, victim_czxid, Role::Waiter, false, start, end),
                    ]),
                    Err(e) if no_node(&e) => Ok(Vec::new()),
                    // The waiter's delete is not recorded (that can only
                    // hide a violation); the holder's must be once done.
                    Err(e) => self.holder_reply_lost(lock, holder, holder_czxid, start, &e).map(|f| vec![f]),
                }
            },
        }
    }

    /// A holder's delete whose reply was lost: recorded (as `reply_lost`)
    /// once the node is gone, an error if it still exists after a while.
    fn holder_reply_lost(
        &mut self,
        lock: LockId,
        holder: &Participant,
        czxid: i64,
        start: u64,
        e: &zk::Error,
    ) -> Result<Fault, String> {
        let holder_path = format!("{}/{}", lock.queue_path(), holder.name);
        eprintln!("{:.3} soak: third party: deleting {holder_path}: {e}", mono_ns() as f64 / 1e9);
        if self.wait_gone(&holder_path, REPLY_LOST_LIMIT) {
            Ok(self.fault(lock, holder, czxid, Role::Holder, true, start, mono_ns()))
        } else {
            Err(format!("{holder_path} still exists {REPLY_LOST_LIMIT:?} after a delete whose reply was lost"))
        }
    }

    /// Waits up to `limit` until `path` is gone; false if it still exists.
    fn wait_gone(&mut self, path: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.raw(async |c| c.get_data(path).await.map(drop)).is_err_and(|e| no_node(&e)) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    #[allow(clippy::too_many_arguments)]
    fn fault(
        &self,
        lock: LockId,
        p: &Participant,
        czxid: i64,
        role: Role,
        reply_lost: bool,
        start: u64,
        end: u64,
    ) -> Fault {
        let deleted = DeletedNode {
            lock,
            name: p.name.clone(),
            mode: mode_of(lock, p.kind),
            czxid: u64::try_from(czxid).unwrap_or(0),
            role,
            reply_lost,
        };
        Fault { deleted: Some(deleted), ..Fault::new(FaultKind::ThirdPartyDelete, start, end) }
    }

    /// Closes the sessions.
    pub fn close(&mut self) {
        if let Some(c) = self.lister.take() {
            c.close();
        }
        self.raw = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str, kind: NodeKind, holds: bool) -> Participant {
        Participant { name: name.into(), sequence: 0, kind, holds, data: Vec::new(), session_id: 1 }
    }

    #[test]
    fn the_rotation_takes_waiters_holders_and_both_on_every_lock() {
        let t = targets(&[LockId::Exclusive, LockId::Rw]);
        assert_eq!(t.len(), 7);
        assert_eq!(targets(&[LockId::Election]).len(), 3);
        assert_eq!(
            targets(&[LockId::Exclusive]),
            vec![
                Target::Waiter(LockId::Exclusive, None),
                Target::Holder(LockId::Exclusive),
                Target::HolderAndWaiter(LockId::Exclusive)
            ]
        );
        for lock in [LockId::Exclusive, LockId::Rw] {
            let mine: Vec<_> = t.iter().filter(|t| matches!(t, Target::Waiter(l, _) | Target::Holder(l) | Target::HolderAndWaiter(l) if *l == lock)).collect();
            assert!(mine.iter().any(|t| matches!(t, Target::Waiter(..))), "{lock:?}");
            assert!(mine.iter().any(|t| matches!(t, Target::Holder(_))), "{lock:?}");
            assert!(mine.iter().any(|t| matches!(t, Target::HolderAndWaiter(_))), "{lock:?}");
        }
    }

    #[test]
    fn a_waiter_is_deleted_only_with_the_node_it_waits_on() {
        use NodeKind::{Reader, Writer};
        let q = [p("a", Writer, true), p("b", Writer, false), p("c", Writer, false)];
        let (v, w) = pick_waiter(&q, None).expect("a waiter");
        assert_eq!((v.name.as_str(), w.name.as_str()), ("b", "a"));
        // Read/write: readers a and b hold; writer c waits on b; reader d waits on c.
        let q = [p("a", Reader, true), p("b", Reader, true), p("c", Writer, false), p("d", Reader, false)];
        let (v, w) = pick_waiter(&q, Some(Reader)).expect("a waiting reader");
        assert_eq!((v.name.as_str(), w.name.as_str()), ("d", "c"));
        let (v, w) = pick_waiter(&q, Some(Writer)).expect("a waiting writer");
        assert_eq!((v.name.as_str(), w.name.as_str()), ("c", "b"));
        assert!(pick_waiter(&q[..2], Some(Reader)).is_none(), "holding readers are not waiters");
        assert!(pick_waiter(&[p("a", Writer, true)], None).is_none());
    }
}

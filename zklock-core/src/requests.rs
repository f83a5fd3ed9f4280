//! Requests as the protocol's machines ask for them (`zklock_proto`): sent
//! on the session layer, their replies and notifications read back in the
//! machines' terms. Shared by the acquire, the holder and the cleanup
//! runners (`acquire.rs`, `holding.rs`, `cleanup.rs`).

use zklock_proto::acquire as proto;

use zklock_zk::HeldBack;

use crate::client::Shared;
use crate::zk::{self, Code};

/// A reply as the machine reads it, with the connection it came on.
pub(crate) type Answered = (std::result::Result<proto::Answer, zk::Error>, u64);

/// A request on its way: its reply, bounded by the operation timeout from
/// when it was sent (no reply by then counts as an unknown outcome).
pub(crate) type Pending = futures_util::future::BoxFuture<'static, Answered>;

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

/// Sends `req` on `zk` now: its reply as the machines read it, bounded by
/// the operation timeout (no reply by then is an unknown outcome), and the
/// watch it leaves, if any.
pub(crate) fn send(shared: &Shared, zk: &zk::Client, req: proto::Request) -> (Pending, Option<zk::Watch>) {
    let timeout = shared.options.operation_timeout;
    let acl = shared.node_acl();
    let (reply, watch): ((Pending, Option<zklock_zk::Outbound>), Option<zk::Watch>) = match req {
        proto::Request::Create { path, data, sequential } => {
            let mode = if sequential { zk::CreateMode::EphemeralSequential } else { zk::CreateMode::Ephemeral };
            let f = zk.create(&path, &data, acl, mode);
            (answered(f, |(path, stat)| proto::Answer::Created { name: last(&path), stat: Some(stat_of(&stat)) }), None)
        },
        proto::Request::CheckAndCreate { check, path, data } => {
            let f = zk.multi(&[
                zk::MultiOp::Check { path: check, version: -1 },
                zk::MultiOp::Create { path: path.clone(), data, acl: acl.to_vec(), mode: zk::CreateMode::Ephemeral },
            ]);
            let out = f.outbound();
            let f = async move {
                let (result, stamp) = f.stamped().await;
                let result = result.and_then(|results| {
                    results
                        .into_iter()
                        .find_map(|r| match r {
                            zk::MultiResult::Create { stat, .. } => {
                                Some(proto::Answer::Created { name: last(&path), stat: stat.as_ref().map(stat_of) })
                            },
                            _ => None,
                        })
                        // No create result: not what ZooKeeper answers;
                        // look for our node as after a lost reply.
                        .ok_or_else(|| zk::Error::ConnectionLoss("a multi's reply without its create".into()))
                });
                (result, stamp.map_or(0, |s| s.connection))
            };
            ((Box::pin(f), Some(out)), None)
        },
        proto::Request::Children { path, stat: true, watch: false } => {
            let f = zk.children2(&path);
            (answered(f, |(names, stat)| proto::Answer::Children { names, stat: Some(stat_of(&stat)) }), None)
        },
        proto::Request::Children { path, watch: true, .. } => {
            let (f, w) = zk.children_watch(&path);
            (answered(f, |names| proto::Answer::Children { names, stat: None }), Some(w))
        },
        proto::Request::Children { path, .. } => {
            let f = zk.children(&path);
            (answered(f, |names| proto::Answer::Children { names, stat: None }), None)
        },
        proto::Request::GetData { path, watch: true } => {
            let (f, w) = zk.get_data_watch(&path);
            (answered(f, |(_, stat)| proto::Answer::Data(stat_of(&stat))), Some(w))
        },
        proto::Request::GetData { path, watch: false } => {
            let f = zk.get_data(&path);
            (answered(f, |(_, stat)| proto::Answer::Data(stat_of(&stat))), None)
        },
        proto::Request::Exists { path } => {
            let f = zk.exists(&path);
            (answered(f, |stat| proto::Answer::Exists(stat.as_ref().map(stat_of))), None)
        },
        proto::Request::Delete { path, version } => {
            let f = zk.delete(&path, version.unwrap_or(-1));
            (answered(f, |()| proto::Answer::Done), None)
        },
        proto::Request::Probe { path } => {
            // Answered after ZooKeeper's quorum committed it (a failed write
            // is an error transaction, proposed as any other): what the
            // probe is for (`zk::probe_write`). Anything else is no answer.
            let (f, out) = zk::probe_write(zk, &path, false);
            let f = async move {
                let (result, stamp) = f.await;
                (result.map(|()| proto::Answer::Done), stamp.map_or(0, |s| s.connection))
            };
            ((Box::pin(f), Some(out)), None)
        },
        proto::Request::MakeParents { path } => {
            let zk = zk.clone();
            let acl = shared.acl().to_vec();
            let f = async move {
                let connection = zk.connected().map_or(0, |c| c.connection);
                (make_parents(&zk, &path, &acl).await.map(|()| proto::Answer::Done), connection)
            };
            ((Box::pin(f), None), None)
        },
    };
    let (reply, out) = reply;
    (Box::pin(bounded(reply, out, timeout)), watch)
}

/// `reply`, or an unknown outcome when it has not come within `timeout`:
/// from now, or from when the session stopped holding the call back
/// behind its own requests in flight (`held_back`, see
/// `zklock_zk::HeldBack`), for that wait is the client's, not the
/// server's. Counted from the call alone, a long queue of one client's
/// requests (10,000 waiters' lists at once) timed out the calls at its end
/// before they were sent, and their callers asked again at its end (issue
/// 33).
async fn bounded(reply: Pending, out: Option<zklock_zk::Outbound>, timeout: std::time::Duration) -> Answered {
    within_timeout(reply, move || out.as_ref().map_or(HeldBack::Never, zklock_zk::Outbound::held_back), timeout).await
}

/// [`bounded`] with the call's progress read through `held_back`.
async fn within_timeout<F: std::future::Future<Output = Answered>>(
    reply: F,
    held_back: impl Fn() -> HeldBack,
    timeout: std::time::Duration,
) -> Answered {
    tokio::pin!(reply);
    let mut deadline = tokio::time::Instant::now() + timeout;
    loop {
        tokio::select! {
            answered = &mut reply => return answered,
            () = tokio::time::sleep_until(deadline) => {
                let now = tokio::time::Instant::now();
                match held_back() {
                    HeldBack::Now => deadline = now + timeout,
                    HeldBack::Until(at) if at + timeout > now => deadline = at + timeout,
                    HeldBack::Until(_) | HeldBack::Never => {
                        return (Err(zk::Error::ConnectionLoss("no reply within the operation timeout".into())), 0);
                    },
                }
            },
        }
    }
}

pub(crate) fn notice(ev: &zk::WatchedEvent) -> proto::Notice {
    match ev.kind {
        zk::EventType::NodeDeleted => proto::Notice::Deleted,
        zk::EventType::NodeChildrenChanged => proto::Notice::Children,
        zk::EventType::Session => proto::Notice::SessionEnded,
        _ => proto::Notice::Changed,
    }
}

/// A reply future as the machine reads it, and where its call is on its
/// way out.
fn answered<T: Send + 'static>(
    f: zklock_zk::ReplyFuture<T>,
    map: impl FnOnce(T) -> proto::Answer + Send + 'static,
) -> (Pending, Option<zklock_zk::Outbound>) {
    let out = f.outbound();
    let reply = Box::pin(async move {
        let (result, stamp) = f.stamped().await;
        (result.map(map), stamp.map_or(0, |s| s.connection))
    });
    (reply, Some(out))
}

fn last(path: &str) -> String {
    path.rsplit('/').next().unwrap_or_default().to_owned()
}

pub(crate) fn stat_of(stat: &zk::Stat) -> proto::Stat {
    proto::Stat { czxid: stat.czxid, pzxid: stat.pzxid, owner: stat.ephemeral_owner, version: stat.version }
}

/// How the machine tells failures apart.
pub(crate) fn failure(e: zk::Error) -> proto::Failure<zk::Error> {
    match e {
        zk::Error::Server(zk::Code::NoNode) => proto::Failure::NoNode,
        zk::Error::Server(zk::Code::NodeExists) => proto::Failure::NodeExists,
        zk::Error::Server(zk::Code::NoAuth) => proto::Failure::NoAuth,
        zk::Error::Multi { index: 0, code: zk::Code::NoNode } => proto::Failure::CheckFailed,
        zk::Error::Multi { code, .. } => failure(zk::Error::Server(code)),
        e if outcome_unknown(&e) => proto::Failure::Unknown,
        e if session_gone(&e) => proto::Failure::SessionGone,
        e => proto::Failure::Other(e),
    }
}

/// Creates the lock path (and missing ancestors) as containers, or as
/// persistent nodes on servers without containers; and the chroot of the
/// connect string if it does not exist (as persistent nodes, as kazoo
/// does: a namespace is not a lock parent and must not vanish when empty).
async fn make_parents(zk: &zk::Client, path: &str, acl: &[zk::Acl]) -> zk::Result<()> {
    let mut mode = zk::CreateMode::Container;
    let mut made_chroot = false;
    loop {
        match zk::mkdir(zk, path, acl, mode).await {
            Err(zk::Error::Server(zk::Code::Unimplemented)) if mode == zk::CreateMode::Container => {
                mode = zk::CreateMode::Persistent
            },
            Err(zk::Error::Server(zk::Code::NoNode)) if !zk.chroot().is_empty() && !made_chroot => {
                let chroot = zk.chroot().to_owned();
                zk::mkdir(&zk.without_chroot(), &chroot, acl, zk::CreateMode::Persistent).await?;
                log::info!("zklock: created the chroot {chroot} of the connect string");
                made_chroot = true;
            },
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::*;

    const T: Duration = Duration::from_secs(10);

    /// When a reply that comes after `answer` is given up for lost, with
    /// the call held back as `progress` says at each look.
    async fn given_up(answer: Duration, progress: Arc<Mutex<HeldBack>>) -> Option<Duration> {
        let start = tokio::time::Instant::now();
        let reply = async move {
            tokio::time::sleep(answer).await;
            (Ok(proto::Answer::Done), 1)
        };
        let (result, _) = within_timeout(reply, move || *progress.lock().unwrap(), T).await;
        result.is_err().then(|| start.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn the_operation_timeout_does_not_count_the_time_a_call_is_held_back() {
        let never = || Arc::new(Mutex::new(HeldBack::Never));
        // Sent at once: given up 10 s after the call.
        assert_eq!(given_up(Duration::from_secs(12), never()).await, Some(T));
        assert_eq!(given_up(Duration::from_secs(9), never()).await, None);
        // Held back 25 s behind the session's own requests: 10 s from then.
        for (answer, lost) in [(30, None), (40, Some(35))] {
            let progress = Arc::new(Mutex::new(HeldBack::Now));
            let p = progress.clone();
            let start = tokio::time::Instant::now();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(25)).await;
                *p.lock().unwrap() = HeldBack::Until(start + Duration::from_secs(25));
            });
            let got = given_up(Duration::from_secs(answer), progress).await;
            assert_eq!(got, lost.map(Duration::from_secs), "answer after {answer} s");
        }
    }
}

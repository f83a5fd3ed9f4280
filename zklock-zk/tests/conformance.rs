//! Conformance of the session layer with every ZooKeeper release the
//! harness runs ([`ServerRelease::ALL`]: 3.5.10, 3.6.4, 3.7.2, Debian's 3.8,
//! 3.9.5), standalone and as a 3-member ensemble.
//!
//! One test per (release, topology), e.g. `v3_6_4::standalone`. Each starts
//! its cluster once and runs every feature that topology checks, one after
//! the other, each in a task of its own: a failing feature does not hide the
//! others; the test prints a line per feature (`pass` / `FAIL: why`, see
//! `--nocapture`) and fails at the end naming every feature that failed.
//!
//! * standalone (with TLS and a SASL user, so the server runs Netty):
//!   every request, removeWatches, watches, close, expiry, whoAmI, pings,
//!   SetWatches in batches, the packet limit, digest auth, SASL
//!   DIGEST-MD5, TLS (x509 by a client certificate), chroot (auth checked
//!   across a reconnect);
//! * ensemble (plain, NIO): every request (through a follower),
//!   removeWatches, watches, close, expiry (closed on another member),
//!   whoAmI, the re-attach to another member with its watches
//!   registered again (SetWatches), and a write the eager ACL check
//!   refuses ahead of the requests before it (the ensemble's check is on).
//!
//! A release that is not installed fails its tests with the reason, unless
//! `ZKLOCK_ZK_JARS_OPTIONAL=1` (then they say so and pass), as
//! `tests/harness/tests/releases.rs`.
//!
//! At most two server JVMs of this file run at once (a standalone server
//! each), or one ensemble alone (it needs three).

#![allow(clippy::unwrap_used)] // tests assert by panicking

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zklock_harness::{Cluster, ClusterOptions, Proxy, ServerRelease};
use zklock_zk::codec::frame::{next_frame, write_frame, DEFAULT_MAX_FRAME};
use zklock_zk::codec::records::{ConnectRequest, ConnectResponse, ReplyHeader, Request};
use zklock_zk::{
    Acl, Code, Config, CreateMode, Error, EventType, MultiOp, MultiResult, Session, SessionEvent, State, Tls,
};

// ---------------------------------------------------------------- the gate

/// Server JVMs of this file that may run at once.
const JVMS: usize = 2;

static USED: Mutex<usize> = Mutex::new(0);
static FREED: Condvar = Condvar::new();

/// A share of [`JVMS`], given back on drop.
struct Slot(usize);

/// Waits for `weight` of the [`JVMS`] slots (all of them for an ensemble).
fn slot(weight: usize) -> Slot {
    let weight = weight.min(JVMS);
    let mut used = USED.lock().unwrap_or_else(PoisonError::into_inner);
    while *used + weight > JVMS {
        used = FREED.wait(used).unwrap_or_else(PoisonError::into_inner);
    }
    *used += weight;
    Slot(weight)
}

impl Drop for Slot {
    fn drop(&mut self) {
        *USED.lock().unwrap_or_else(PoisonError::into_inner) -= self.0;
        FREED.notify_all();
    }
}

// ------------------------------------------------------------ the features

/// What a feature runs against: one member of a cluster.
struct Env {
    zk: Cluster,
    release: ServerRelease,
    /// The member the feature's sessions use.
    member: usize,
    /// (major, minor, patch) as the server's `srvr` says.
    version: (u32, u32, u32),
}

impl Env {
    /// The connect string of the member alone.
    fn cs(&self) -> String {
        self.zk.client_addr(self.member).to_string()
    }

    /// whoAmI is answered from 3.7 on (ZOOKEEPER-3969).
    fn has_who_am_i(&self) -> bool {
        self.version >= (3, 7, 0)
    }

    /// A create2 inside a multi is answered with its Stat (as create2, not
    /// create) from 3.7.2, 3.8.2 and 3.9.0 on (ZOOKEEPER-4026).
    fn create2_in_multi(&self) -> bool {
        let v = self.version;
        ((3, 7, 2)..(3, 8, 0)).contains(&v) || v >= (3, 8, 2)
    }
}

/// A feature's future; its output is a note for the report (empty: none).
type Feature = std::pin::Pin<Box<dyn Future<Output = String> + Send>>;

/// A feature by name.
type Named = (&'static str, fn(Arc<Env>) -> Feature);

/// Runs every feature in turn, each in a task of its own and within 90 s;
/// prints a line each; panics at the end naming the features that failed.
fn run_features(env: Env, topology: &str, features: &[Named]) {
    let env = Arc::new(env);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let mut failed = Vec::new();
    for &(name, feature) in features {
        let outcome = rt.block_on(async {
            let task = tokio::spawn(feature(env.clone()));
            let abort = task.abort_handle();
            match tokio::time::timeout(Duration::from_secs(90), task).await {
                Ok(Ok(note)) if note.is_empty() => "pass".to_string(),
                Ok(Ok(note)) => format!("pass ({note})"),
                Ok(Err(e)) => {
                    let why = match e.try_into_panic() {
                        Ok(p) => p
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_else(|| "a panic".into()),
                        Err(e) => e.to_string(),
                    };
                    format!("FAIL: {why}")
                },
                Err(_) => {
                    abort.abort();
                    "FAIL: not done within 90 s".to_string()
                },
            }
        });
        eprintln!("conformance {} {topology} {name}: {outcome}", env.release);
        if outcome.starts_with("FAIL") {
            failed.push(format!("{name}: {outcome}"));
        }
    }
    assert!(failed.is_empty(), "ZooKeeper {} {topology}:\n{}", env.release, failed.join("\n"));
}

async fn within<F: Future>(secs: u64, what: &str, f: F) -> F::Output {
    match tokio::time::timeout(Duration::from_secs(secs), f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: not within {secs} s"),
    }
}

async fn connect(cs: &str) -> Session {
    let cfg = Config::new(cs).expect("connect string").session_timeout(Duration::from_secs(4));
    within(20, "connect", Session::connect(cfg)).await.unwrap_or_else(|e| panic!("connect to {cs}: {e}"))
}

async fn next_event(ev: &mut zklock_zk::Events, secs: u64) -> SessionEvent {
    within(secs, "session event", ev.next()).await.expect("an event")
}

/// (major, minor, patch) of the member's `srvr` answer
/// (`Zookeeper version: 3.8.0-1, built on ...`).
fn server_version(zk: &Cluster, i: usize) -> (u32, u32, u32) {
    let srvr = zk.four_letter(i, "srvr").expect("srvr");
    let v = srvr
        .lines()
        .find_map(|l| l.strip_prefix("Zookeeper version: "))
        .unwrap_or_else(|| panic!("no version in {srvr:?}"));
    let n: Vec<u32> = v.split(|c: char| !c.is_ascii_digit()).take(3).map(|n| n.parse().expect("a number")).collect();
    (n[0], n[1], n[2])
}

/// The watches the member holds for all sessions: (data watches as
/// `wchs` counts them, data and child watches as `mntr`'s `zk_watch_count`
/// does). `wchs` leaves the child watches out on every release (its
/// summary is the data watches').
fn watch_count(zk: &Cluster, i: usize) -> (usize, usize) {
    let wchs = zk.four_letter(i, "wchs").expect("wchs");
    let data = wchs
        .lines()
        .find_map(|l| l.strip_prefix("Total watches:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("wchs said {wchs:?}"));
    let mntr = zk.four_letter(i, "mntr").expect("mntr");
    let all = mntr
        .lines()
        .find_map(|l| l.strip_prefix("zk_watch_count"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("mntr said {mntr:?}"));
    (data, all)
}

/// `(a.0 + b.0, a.1 + b.1)`.
fn plus(a: (usize, usize), b: (usize, usize)) -> (usize, usize) {
    (a.0 + b.0, a.1 + b.1)
}

/// Whether `path` is `prefix` and ten digits (a sequential create's name).
fn is_sequential(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix).is_some_and(|n| n.len() == 10 && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Drops the session's connection at `proxy` and waits until it is
/// connected again (connection `n + 1`).
async fn reconnect(s: &Session, proxy: &Proxy) {
    let n = s.connected().expect("connected").connection;
    let mut ev = s.events();
    proxy.drop_connections();
    match next_event(&mut ev, 10).await {
        SessionEvent::Disconnected { connection, .. } if connection == n => {},
        e => panic!("{e:?}"),
    }
    match next_event(&mut ev, 20).await {
        SessionEvent::Connected(c) if c.connection == n + 1 => {},
        e => panic!("{e:?}"),
    }
}

/// Every request of the API, each answer checked.
fn requests(env: Arc<Env>) -> Feature {
    Box::pin(async move {
        let s = connect(&env.cs()).await;
        let open = Acl::open();
        let made = s.create("/requests", b"r", &open, CreateMode::Persistent).await.expect("create persistent");
        assert_eq!(made.value.0, "/requests");
        assert!(made.sent <= made.answered);
        assert_eq!(made.value.1.czxid, made.zxid, "a create's czxid is its reply's zxid");
        assert_eq!((made.value.1.version, made.value.1.ephemeral_owner), (0, 0));
        let again = s.create("/requests", b"", &open, CreateMode::Persistent).await;
        assert_eq!(again.unwrap_err(), Error::Server(Code::NodeExists));
        let orphan = s.create("/requests-none/x", b"", &open, CreateMode::Persistent).await;
        assert_eq!(orphan.unwrap_err(), Error::Server(Code::NoNode));

        // Every mode.
        let eph = s.create("/requests/eph", b"e", &open, CreateMode::Ephemeral).await.expect("ephemeral").value;
        assert_eq!(eph.1.ephemeral_owner, s.id());
        let under = s.create("/requests/eph/x", b"", &open, CreateMode::Persistent).await;
        assert_eq!(under.unwrap_err(), Error::Server(Code::NoChildrenForEphemerals));
        let ps = s.create("/requests/ps-", b"", &open, CreateMode::PersistentSequential).await.expect("p-seq").value;
        assert!(is_sequential(&ps.0, "/requests/ps-"), "{}", ps.0);
        assert_eq!(ps.1.ephemeral_owner, 0);
        let es = s.create("/requests/es-", b"", &open, CreateMode::EphemeralSequential).await.expect("e-seq").value;
        assert!(is_sequential(&es.0, "/requests/es-"), "{}", es.0);
        assert!(es.0[es.0.len() - 10..] > ps.0[ps.0.len() - 10..], "the sequence counts on: {} after {}", es.0, ps.0);
        assert_eq!(es.1.ephemeral_owner, s.id());
        let ctr = s.create("/requests/ctr", b"", &open, CreateMode::Container).await.expect("container").value;
        assert_eq!(ctr.0, "/requests/ctr");
        // The server shows no owner for a container (its internal one is
        // CONTAINER_EPHEMERAL_OWNER); that it is one shows below.
        assert_eq!(ctr.1.ephemeral_owner, 0, "container owner");

        // getData, setData with versions, the clock's probe.
        let (data, stat) = s.get_data("/requests").await.expect("getData").value;
        assert_eq!((data.as_slice(), stat.czxid), (&b"r"[..], made.value.1.czxid));
        assert_eq!(stat.num_children, 4);
        let set = s.set_data("/requests", b"r1", 0).await.expect("setData v0").value;
        assert_eq!((set.version, set.data_length), (1, 2));
        let stale = s.set_data("/requests", b"x", 0).await;
        assert_eq!(stale.unwrap_err(), Error::Server(Code::BadVersion));
        let any = s.set_data("/requests", b"r2", -1).await.expect("setData -1").value;
        assert_eq!(any.version, 2);
        let (r, stamp) = s.set_data("/", b"", i32::MIN).stamped().await;
        assert_eq!(r.unwrap_err(), Error::Server(Code::BadVersion), "the clock's probe");
        let stamp = stamp.expect("the probe's answer is stamped");
        assert!(stamp.sent <= stamp.answered && stamp.zxid >= any.mzxid, "{stamp:?}");
        assert_eq!(s.get_data("/requests/none").await.unwrap_err(), Error::Server(Code::NoNode));

        // exists.
        assert_eq!(s.exists("/requests").await.expect("exists").value, Some(any));
        assert_eq!(s.exists("/requests/none").await.expect("exists of none").value, None);

        // getChildren, getChildren2.
        let mut kids = s.children("/requests").await.expect("getChildren").value.to_vec();
        kids.sort();
        let names = |p: &str| p.trim_start_matches("/requests/").to_string();
        assert_eq!(kids, vec!["ctr".to_string(), "eph".to_string(), names(&es.0), names(&ps.0)]);
        let (kids2, parent) = s.children2("/requests").await.expect("getChildren2").value;
        let mut kids2 = kids2.to_vec();
        kids2.sort();
        assert_eq!(kids2, kids);
        assert_eq!((parent.num_children, parent.version, parent.cversion), (4, 2, 4));
        assert_eq!(s.children("/requests/none").await.unwrap_err(), Error::Server(Code::NoNode));
        assert_eq!(s.children2("/requests/none").await.unwrap_err(), Error::Server(Code::NoNode));

        // sync.
        s.sync("/requests").await.expect("sync");
        assert_eq!(s.sync("/requests/none").await.map(|_| ()), Ok(()), "sync does not look at the node");

        // multi: check + create (of each kind) + setData + delete, all or nothing.
        let ok = s
            .multi(&[
                MultiOp::Check { path: "/requests".into(), version: 2 },
                MultiOp::Create {
                    path: "/requests/m".into(),
                    data: vec![],
                    acl: open.clone(),
                    mode: CreateMode::Persistent,
                },
                MultiOp::Create {
                    path: "/requests/m-".into(),
                    data: vec![],
                    acl: open.clone(),
                    mode: CreateMode::EphemeralSequential,
                },
                MultiOp::Create {
                    path: "/requests/mc".into(),
                    data: vec![],
                    acl: open.clone(),
                    mode: CreateMode::Container,
                },
                MultiOp::SetData { path: "/requests/m".into(), data: b"m".to_vec(), version: 0 },
                MultiOp::Delete { path: ps.0.clone(), version: -1 },
            ])
            .await
            .expect("multi")
            .value;
        assert_eq!(ok.len(), 6, "{ok:?}");
        assert_eq!(ok[0], MultiResult::Check);
        // A create2 inside a multi is answered as a create (no Stat) before
        // ZOOKEEPER-4026; a createContainer always with its Stat.
        let with_stat = env.create2_in_multi();
        let MultiResult::Create { path, stat } = &ok[1] else { panic!("create in a multi: {ok:?}") };
        assert_eq!((path.as_str(), stat.is_some()), ("/requests/m", with_stat), "{ok:?}");
        assert!(stat.is_none_or(|st| st.version == 0), "{stat:?}");
        let MultiResult::Create { path, stat } = &ok[2] else { panic!("e-seq in a multi: {ok:?}") };
        assert!(is_sequential(path, "/requests/m-"), "{path}");
        assert_eq!(stat.is_some(), with_stat, "{ok:?}");
        assert!(stat.is_none_or(|st| st.ephemeral_owner == s.id()), "{stat:?}");
        let MultiResult::Create { path, stat: Some(st) } = &ok[3] else { panic!("container in a multi: {ok:?}") };
        assert_eq!((path.as_str(), st.ephemeral_owner), ("/requests/mc", 0));
        let MultiResult::SetData { stat } = &ok[4] else { panic!("setData in a multi: {ok:?}") };
        assert_eq!(stat.version, 1);
        assert_eq!(ok[5], MultiResult::Delete);
        assert_eq!(s.exists(&ps.0).await.expect("exists").value, None);
        // A failing multi names the operation that failed; nothing took effect.
        let failed = s
            .multi(&[
                MultiOp::Check { path: "/requests".into(), version: 2 },
                MultiOp::Create {
                    path: "/requests/m2".into(),
                    data: vec![],
                    acl: open.clone(),
                    mode: CreateMode::Persistent,
                },
                MultiOp::Check { path: "/requests/m".into(), version: 99 },
                MultiOp::Delete { path: "/requests/m".into(), version: -1 },
            ])
            .await;
        assert_eq!(failed.unwrap_err(), Error::Multi { index: 2, code: Code::BadVersion });
        let failed = s.multi(&[MultiOp::Check { path: "/nothing".into(), version: -1 }]).await;
        assert_eq!(failed.unwrap_err(), Error::Multi { index: 0, code: Code::NoNode });
        assert_eq!(s.exists("/requests/m2").await.expect("exists").value, None, "a failed multi took effect");
        assert!(s.exists("/requests/m").await.expect("exists").value.is_some());

        // delete with a version.
        assert_eq!(s.delete("/requests/m", 0).await.unwrap_err(), Error::Server(Code::BadVersion));
        s.delete("/requests/m", 1).await.expect("delete v1");
        assert_eq!(s.delete("/requests/m", -1).await.unwrap_err(), Error::Server(Code::NoNode));
        assert_eq!(s.delete("/requests", -1).await.unwrap_err(), Error::Server(Code::NotEmpty));

        // Containers: the server deletes one once its last child is gone
        // (the clusters check every 100 ms: `znode.container.checkIntervalMs`).
        for c in ["/requests/ctr", "/requests/mc"] {
            let kid = format!("{c}/kid");
            s.create(&kid, b"", &open, CreateMode::Persistent).await.expect("a container's child");
            let (r, gone) = s.exists_watch(c);
            assert!(r.await.expect("exists").value.is_some());
            s.delete(&kid, -1).await.expect("delete the child");
            let e = within(20, "the container's deletion", gone).await;
            assert_eq!((e.kind, e.path.as_str()), (EventType::NodeDeleted, c));
        }

        // (whoAmI: its own feature.)
        let after = s.exists("/requests").await.expect("exists");
        assert_eq!(after.connection, 1, "a request cost the connection");

        // close takes the session's ephemeral nodes (those of the multi too).
        let other = connect(&env.cs()).await;
        s.close().await;
        let mut left = other.children("/requests").await.expect("getChildren").value.to_vec();
        left.sort();
        assert_eq!(left, Vec::<String>::new());
        other.close().await;
        if with_stat {
            String::new()
        } else {
            "create2 in a multi answered without Stat".to_string()
        }
    })
}

/// A dropped watch goes from the server (`removeWatches`): `wchs` counts
/// down, per kind; a watch that fired is gone from the server already:
/// dropping it sends nothing.
fn remove_watches(env: Arc<Env>) -> Feature {
    Box::pin(async move {
        // Through a proxy, which counts the requests.
        let proxy = Proxy::start(env.zk.client_addr(env.member)).expect("proxy");
        let s = connect(&proxy.addr().to_string()).await;
        s.create("/rw", b"", &Acl::open(), CreateMode::Persistent).await.expect("create");
        let base = watch_count(&env.zk, env.member);
        let (r, data_w) = s.get_data_watch("/rw");
        r.await.expect("getData");
        let (r, child_w) = s.children_watch("/rw");
        r.await.expect("getChildren");
        let (r, exist_w) = s.exists_watch("/rw/absent");
        assert_eq!(r.await.expect("exists").value, None);
        // Two watches of one kind on one node: one server watch.
        let (r, data_w2) = s.get_data_watch("/rw");
        r.await.expect("getData");
        let count = || watch_count(&env.zk, env.member);
        assert_eq!(count(), plus(base, (2, 3)));
        drop(data_w);
        s.sync("/").await.expect("sync");
        assert_eq!(count(), plus(base, (2, 3)), "a watch still needed went");
        drop(data_w2);
        s.sync("/").await.expect("sync");
        assert_eq!(count(), plus(base, (1, 2)), "data watch");
        drop(child_w);
        s.sync("/").await.expect("sync");
        assert_eq!(count(), plus(base, (1, 1)), "child watch");
        drop(exist_w);
        s.sync("/").await.expect("sync");
        assert_eq!(count(), base, "exists watch of an absent node");
        let removes = || proxy.requests().get("removeWatches").copied().unwrap_or(0);
        assert_eq!(removes(), 3, "{:?}", proxy.requests());
        // Fired, then dropped: after its event was read, or unread.
        let (r, read) = s.get_data_watch("/rw");
        r.await.expect("getData");
        s.set_data("/rw", b"1", -1).await.expect("setData");
        assert_eq!(within(10, "data watch", read).await.kind, EventType::NodeDataChanged);
        let (r, unread) = s.get_data_watch("/rw");
        r.await.expect("getData");
        // The notification comes before the reply of the change.
        s.set_data("/rw", b"2", -1).await.expect("setData");
        drop(unread);
        s.sync("/").await.expect("sync");
        assert_eq!(removes(), 3, "removeWatches for a watch that fired: {:?}", proxy.requests());
        assert_eq!(count(), base);
        // The session goes on.
        assert_eq!(s.exists("/rw").await.expect("exists").connection, 1);
        s.close().await;
        String::new()
    })
}

/// Data, child and exists watches fire, once, with the right event.
fn watches(env: Arc<Env>) -> Feature {
    Box::pin(async move {
        let s = connect(&env.cs()).await;
        // Changes come from any member.
        let other = connect(&env.zk.connect_string()).await;
        s.create("/w", b"", &Acl::open(), CreateMode::Persistent).await.expect("create");
        let base = watch_count(&env.zk, env.member);
        let (r, data_w) = s.get_data_watch("/w");
        r.await.expect("getData");
        let (r, child_w) = s.children_watch("/w");
        r.await.expect("getChildren");
        let (r, absent_w) = s.exists_watch("/w/new");
        assert_eq!(r.await.expect("exists").value, None);
        let (r, present_w) = s.exists_watch("/w");
        assert!(r.await.expect("exists").value.is_some());

        let set = other.set_data("/w", b"1", -1).await.expect("setData");
        let e = within(10, "data watch", data_w).await;
        assert_eq!((e.kind, e.path.as_str()), (EventType::NodeDataChanged, "/w"));
        // The notification carries the change's zxid from 3.9 on, -1 before.
        let zxid = if env.version >= (3, 9, 0) { set.zxid } else { -1 };
        assert_eq!(e.zxid, zxid, "the event's zxid (the change's is {})", set.zxid);
        let e = within(10, "exists watch of a present node", present_w).await;
        assert_eq!((e.kind, e.path.as_str()), (EventType::NodeDataChanged, "/w"));
        other.create("/w/new", b"", &Acl::open(), CreateMode::Persistent).await.expect("create");
        let e = within(10, "exists watch of an absent node", absent_w).await;
        assert_eq!((e.kind, e.path.as_str()), (EventType::NodeCreated, "/w/new"));
        let e = within(10, "child watch", child_w).await;
        assert_eq!((e.kind, e.path.as_str()), (EventType::NodeChildrenChanged, "/w"));

        // Deletion: data and child watches of the node, child watch of the
        // parent.
        let (r, data_w) = s.get_data_watch("/w/new");
        r.await.expect("getData");
        let (r, child_w) = s.children_watch("/w/new");
        r.await.expect("getChildren");
        let (r, parent_w) = s.children_watch("/w");
        r.await.expect("getChildren");
        other.delete("/w/new", -1).await.expect("delete");
        assert_eq!(within(10, "data watch", data_w).await.kind, EventType::NodeDeleted);
        assert_eq!(within(10, "child watch", child_w).await.kind, EventType::NodeDeleted);
        let e = within(10, "parent's child watch", parent_w).await;
        assert_eq!((e.kind, e.path.as_str()), (EventType::NodeChildrenChanged, "/w"));

        // Once: a fired watch is gone from the server.
        s.sync("/").await.expect("sync");
        assert_eq!(watch_count(&env.zk, env.member), base, "fired watches left on the server");
        s.close().await;
        other.close().await;
        if zxid == -1 {
            "events carry zxid -1".to_string()
        } else {
            String::new()
        }
    })
}

/// close (and dropping the last handle) takes the ephemeral nodes at once.
fn close(env: Arc<Env>) -> Feature {
    Box::pin(async move {
        let s = connect(&env.cs()).await;
        let other = connect(&env.cs()).await;
        let p = s.create("/close-e", b"", &Acl::open(), CreateMode::Ephemeral).await.expect("create").value.0;
        let q = s.create("/close-s-", b"", &Acl::open(), CreateMode::EphemeralSequential).await.expect("create");
        let (r, w) = other.exists_watch(&p);
        assert!(r.await.expect("exists").value.is_some());
        let mut ev = s.events();
        s.close().await;
        assert_eq!(next_event(&mut ev, 5).await, SessionEvent::Ended(Error::Closed));
        assert_eq!(s.state(), State::Closed);
        assert_eq!(other.exists(&p).await.expect("exists").value, None, "ephemeral after close");
        assert_eq!(other.exists(&q.value.0).await.expect("exists").value, None, "ephemeral-sequential after close");
        assert_eq!(within(10, "watch", w).await.kind, EventType::NodeDeleted);
        assert_eq!(s.exists("/").await.unwrap_err(), Error::Closed);

        let t = connect(&env.cs()).await;
        let p = t.create("/close-d", b"", &Acl::open(), CreateMode::Ephemeral).await.expect("create").value.0;
        let (r, w) = other.exists_watch(&p);
        assert!(r.await.expect("exists").value.is_some());
        drop(t);
        assert_eq!(within(10, "ephemeral of a dropped session", w).await.kind, EventType::NodeDeleted);
        other.close().await;
        String::new()
    })
}

/// Reads one frame's body from a raw connection.
async fn read_raw(s: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> Vec<u8> {
    loop {
        if let Some(n) = next_frame(buf, DEFAULT_MAX_FRAME).expect("a frame") {
            let body = buf[4..4 + n].to_vec();
            buf.drain(..4 + n);
            return body;
        }
        let mut chunk = [0u8; 4096];
        let n = within(10, "raw read", s.read(&mut chunk)).await.expect("raw read");
        assert!(n > 0, "the server closed the raw connection");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Re-attaches to session `id` on `addr` with a raw connection; returns the
/// server's answer and the connection.
async fn raw_attach(addr: SocketAddr, id: i64, password: Vec<u8>) -> (ConnectResponse, tokio::net::TcpStream) {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("raw connect");
    let mut out = Vec::new();
    let req = ConnectRequest { last_zxid_seen: 0, timeout_ms: 30_000, session_id: id, password, read_only: false };
    write_frame(&mut out, |b| req.encode(b));
    s.write_all(&out).await.expect("raw write");
    let body = read_raw(&mut s, &mut Vec::new()).await;
    (ConnectResponse::decode(&body).expect("a connect response"), s)
}

/// The server ends a session; the session's re-attach is answered with
/// timeout 0 and it ends with `SessionExpired`: its calls and watches too.
///
/// The session is cut off (a blackholed proxy) and closed on the server
/// from elsewhere (a raw re-attach with its id and password, then
/// closeSession); the proxy healed, its re-attach gets the server's answer
/// long before its own deadline (4/3 of its 30 s timeout).
fn expiry(env: Arc<Env>) -> Feature {
    Box::pin(async move {
        let n = env.zk.len();
        let proxies: Vec<Proxy> = (0..n).map(|i| Proxy::start(env.zk.client_addr(i)).expect("proxy")).collect();
        let cs = proxies.iter().map(|p| p.addr().to_string()).collect::<Vec<_>>().join(",");
        let cfg = Config::new(&cs).expect("connect string").session_timeout(Duration::from_secs(30));
        let s = Session::connect(cfg).await.expect("connect");
        assert_eq!(s.timeout(), Duration::from_secs(30), "granted timeout");
        let other = connect(&env.zk.connect_string()).await;
        let p = s.create("/expiry-e", b"", &Acl::open(), CreateMode::Ephemeral).await.expect("create").value.0;
        let (r, w) = s.exists_watch("/expiry-none");
        assert_eq!(r.await.expect("exists").value, None);
        let (id, password) = (s.id(), s.password());
        let on = proxies.iter().position(|p| Some(p.addr()) == s.connected().map(|c| c.server)).expect("a proxy");
        let mut ev = s.events();
        for p in &proxies {
            p.blackhole();
            p.drop_connections();
        }
        match next_event(&mut ev, 10).await {
            SessionEvent::Disconnected { connection: 1, .. } => {},
            e => panic!("{e:?}"),
        }
        let waiting = s.exists("/");
        // Closed from another member in an ensemble.
        let elsewhere = env.zk.client_addr((on + 1) % n);
        let (answer, mut raw) = raw_attach(elsewhere, id, password.clone()).await;
        assert_eq!((answer.session_id, answer.timeout_ms > 0), (id, true), "raw re-attach: {answer:?}");
        let mut out = Vec::new();
        write_frame(&mut out, |b| Request::CloseSession.encode(1, b));
        raw.write_all(&out).await.expect("closeSession");
        let reply = read_raw(&mut raw, &mut Vec::new()).await;
        let (h, _) = ReplyHeader::split(&reply).expect("a reply");
        assert_eq!((h.xid, h.err), (1, 0), "closeSession");
        drop(raw);
        // On the wire: a re-attach now gets timeout 0. (On the member that
        // closed it: another member closes the connections of the session
        // when it applies the close, a re-attach in progress too.)
        let (answer, _) = raw_attach(elsewhere, id, password).await;
        assert!(answer.timeout_ms <= 0, "a re-attach of a closed session: {answer:?}");
        for p in &proxies {
            p.heal();
        }
        match next_event(&mut ev, 15).await {
            SessionEvent::Ended(Error::SessionExpired) => {},
            e => panic!("{e:?}"),
        }
        assert_eq!(s.state(), State::Expired);
        assert_eq!(within(5, "held call", waiting).await.unwrap_err(), Error::SessionExpired);
        assert_eq!(within(5, "watch end", w).await.kind, EventType::Session);
        assert_eq!(s.exists("/").await.unwrap_err(), Error::SessionExpired);
        other.sync(&p).await.expect("sync");
        assert_eq!(other.exists(&p).await.expect("exists").value, None, "the ephemeral outlived its session");
        other.close().await;
        format!("server answered the re-attach with timeout {}", answer.timeout_ms)
    })
}

/// whoAmI, pipelined behind creates. From 3.7 on it is answered in turn
/// with the session's identities. Before, the server answers
/// `Unimplemented` at once, ahead of the requests before it still in its
/// pipeline, and closes the connection (ZooKeeper's
/// `UnimplementedRequestProcessor`): the call fails with `Unimplemented`,
/// the creates whose replies were lost with `ConnectionLoss`, and the
/// session reconnects.
fn who_am_i(env: Arc<Env>) -> Feature {
    Box::pin(async move {
        let s = connect(&env.cs()).await;
        let mut ev = s.events();
        let open = Acl::open();
        s.create("/whoami", b"", &open, CreateMode::Persistent).await.expect("create");
        let creates: Vec<_> =
            (0..50).map(|_| s.create("/whoami/n-", b"", &open, CreateMode::PersistentSequential)).collect();
        let me = within(10, "whoAmI", s.who_am_i()).await;
        let mut made = 0;
        let mut lost = 0;
        for c in creates {
            match within(10, "create", c).await {
                Ok(_) => made += 1,
                Err(Error::ConnectionLoss(_)) => lost += 1,
                Err(e) => panic!("create: {e}"),
            }
        }
        let note = if env.has_who_am_i() {
            assert_eq!(me.expect("whoAmI").value, vec![("ip".to_string(), "127.0.0.1".to_string())]);
            assert_eq!(made, 50);
            assert_eq!(s.exists("/").await.expect("exists").connection, 1, "whoAmI cost the connection");
            String::new()
        } else {
            assert_eq!(me.unwrap_err(), Error::Server(Code::Unimplemented));
            match next_event(&mut ev, 10).await {
                SessionEvent::Disconnected { connection: 1, .. } => {},
                e => panic!("{e:?}"),
            }
            match next_event(&mut ev, 20).await {
                SessionEvent::Connected(c) if c.connection == 2 => {},
                e => panic!("{e:?}"),
            }
            let kids = s.children("/whoami").await.expect("getChildren");
            assert_eq!(kids.connection, 2);
            assert!(kids.value.len() >= made, "{} nodes, {made} creates answered", kids.value.len());
            format!("whoAmI Unimplemented, then the server closes the connection ({lost} of 50 creates before it lost)")
        };
        s.close().await;
        note
    })
}

/// A write the servers' eager ACL check refuses (`zookeeper.enableEagerACLCheck`,
/// on for the ensemble; ZooKeeper 3.6 and later) is answered at once with
/// NoAuth, ahead of the creates before it still in the pipeline: the call
/// fails with NoAuth, the creates are made, and the connection goes on
/// (outside attack round 34b: the session layer ended the connection on
/// the reply out of order). Without the eager check (3.5) NoAuth comes in
/// turn.
fn eager_acl(env: Arc<Env>) -> Feature {
    Box::pin(async move {
        let s = connect(&env.cs()).await;
        let mut ev = s.events();
        let open = Acl::open();
        let read_only = Acl { perms: 1, scheme: "world".into(), id: "anyone".into() };
        s.create("/eager-ro", b"", std::slice::from_ref(&read_only), CreateMode::Persistent).await.expect("create");
        s.create("/eager", b"", &open, CreateMode::Persistent).await.expect("create");
        let creates: Vec<_> =
            (0..50).map(|_| s.create("/eager/n-", b"", &open, CreateMode::PersistentSequential)).collect();
        let refused = within(10, "setData", s.set_data("/eager-ro", b"x", -1)).await;
        let at = std::time::Instant::now();
        assert_eq!(refused.unwrap_err(), Error::Server(Code::NoAuth));
        let mut ahead = 0;
        for c in creates {
            let made = within(10, "create", c).await.expect("every create made");
            ahead += usize::from(made.answered > at);
        }
        assert_eq!(s.exists("/").await.expect("exists").connection, 1, "the refused write cost the connection");
        assert!(ev.try_next().is_none(), "no session event");
        s.close().await;
        format!("NoAuth answered ahead of at least {ahead} of 50 creates")
    })
}

/// Pings keep an idle session: idle for three of its timeouts, it is still
/// on its first connection, its ephemeral node kept.
fn pings(env: Arc<Env>) -> Feature {
    Box::pin(async move {
        let proxy = Proxy::start(env.zk.client_addr(env.member)).expect("proxy");
        let cfg = Config::new(&proxy.addr().to_string()).expect("connect string");
        let s = Session::connect(cfg.session_timeout(Duration::from_millis(600))).await.expect("connect");
        let t = s.timeout();
        assert!(t <= Duration::from_millis(600), "granted {t:?}");
        let p = s.create("/pings", b"", &Acl::open(), CreateMode::Ephemeral).await.expect("create").value.0;
        let mut ev = s.events();
        tokio::time::sleep(t * 3).await;
        let pings = proxy.requests().get("ping").copied().unwrap_or(0);
        assert!(pings >= 3, "{pings} pings in three timeouts: {:?}", proxy.requests());
        assert_eq!(ev.try_next(), None, "an idle session's events");
        let r = s.exists(&p).await.expect("exists");
        assert_eq!((r.connection, r.value.map(|st| st.ephemeral_owner)), (1, Some(s.id())));
        s.close().await;
        format!("{pings} pings in {} ms", (t * 3).as_millis())
    })
}

/// Many watches are registered again after a reconnect in several
/// SetWatches requests, each under the packet limit (4 KiB here); every
/// one of them holds.
fn setwatches_batches(env: Arc<Env>) -> Feature {
    Box::pin(async move {
        const N: usize = 150;
        let proxy = Proxy::start(env.zk.client_addr(env.member)).expect("proxy");
        let cfg = Config::new(&proxy.addr().to_string()).expect("connect string").max_frame(4096);
        let s = Session::connect(cfg.session_timeout(Duration::from_secs(4))).await.expect("connect");
        let other = connect(&env.cs()).await;
        let open = Acl::open();
        other.create("/batch", b"", &open, CreateMode::Persistent).await.expect("create");
        let made: Vec<_> =
            (0..N).map(|i| other.create(&format!("/batch/node-{i:03}"), b"", &open, CreateMode::Persistent)).collect();
        for m in made {
            m.await.expect("create");
        }
        let mut data_ws = Vec::new();
        let mut exist_ws = Vec::new();
        for i in 0..N {
            let (r, w) = s.get_data_watch(&format!("/batch/node-{i:03}"));
            r.await.expect("getData");
            data_ws.push(w);
            let (r, w) = s.exists_watch(&format!("/batch/absent-{i:03}"));
            assert_eq!(r.await.expect("exists").value, None);
            exist_ws.push(w);
        }
        let (r, child_w) = s.children_watch("/batch");
        assert_eq!(r.await.expect("getChildren").value.len(), N);
        reconnect(&s, &proxy).await;
        s.sync("/").await.expect("sync");
        let batches = proxy.requests().get("setWatches").copied().unwrap_or(0);
        assert!(batches >= 2, "{batches} setWatches for {} watches: {:?}", 2 * N + 1, proxy.requests());
        let changes: Vec<_> = (0..N).map(|i| other.set_data(&format!("/batch/node-{i:03}"), b"1", -1)).collect();
        for c in changes {
            c.await.expect("setData");
        }
        let creates: Vec<_> = (0..N)
            .map(|i| other.create(&format!("/batch/absent-{i:03}"), b"", &open, CreateMode::Persistent))
            .collect();
        for c in creates {
            c.await.expect("create");
        }
        for (i, w) in data_ws.into_iter().enumerate() {
            let e = within(10, "data watch", w).await;
            assert_eq!((e.kind, e.path), (EventType::NodeDataChanged, format!("/batch/node-{i:03}")));
        }
        for (i, w) in exist_ws.into_iter().enumerate() {
            let e = within(10, "exists watch", w).await;
            assert_eq!((e.kind, e.path), (EventType::NodeCreated, format!("/batch/absent-{i:03}")));
        }
        assert_eq!(within(10, "child watch", child_w).await.kind, EventType::NodeChildrenChanged);
        s.close().await;
        other.close().await;
        format!("{} watches in {batches} setWatches", 2 * N + 1)
    })
}

/// The packet limit (`jute.maxbuffer`, 0xfffff, the default of both
/// sides): a request of exactly that size is accepted by the server; one
/// byte more is refused before it is sent; a reply over it ends the
/// connection (the session reconnects), and a session with a higher limit
/// reads it.
fn packet_limit(env: Arc<Env>) -> Feature {
    Box::pin(async move {
        let s = connect(&env.cs()).await;
        let mut ev = s.events();
        let open = Acl::open();
        let body = |path: &str, data: usize| {
            let req = Request::Create {
                path: path.into(),
                data: vec![0; data],
                acl: open.clone(),
                mode: CreateMode::Persistent,
            };
            write_frame(&mut Vec::new(), |b| req.encode(1, b))
        };
        let data = DEFAULT_MAX_FRAME - body("/big", 0);
        assert_eq!(body("/big", data), DEFAULT_MAX_FRAME);
        let made = s.create("/big", &vec![b'x'; data], &open, CreateMode::Persistent).await;
        assert_eq!(made.expect("a request of exactly the limit").value.1.data_length as usize, data);
        let over = s.create("/bih", &vec![b'x'; data + 1], &open, CreateMode::Persistent).await;
        assert!(matches!(over, Err(Error::BadArgument(_))), "{over:?}");
        let r = s.exists("/bih").await.expect("exists");
        assert_eq!((r.connection, r.value), (1, None), "a request over the limit was sent");
        // getData's reply: header, data and Stat, over the limit.
        let read = s.get_data("/big").await;
        assert!(matches!(read, Err(Error::ConnectionLoss(_))), "{:?}", read.map(|r| r.value.0.len()));
        match next_event(&mut ev, 10).await {
            SessionEvent::Disconnected { connection: 1, reason } => {
                assert!(reason.contains("over the packet limit"), "{reason}")
            },
            e => panic!("{e:?}"),
        }
        assert!(matches!(next_event(&mut ev, 20).await, SessionEvent::Connected(_)));
        let cfg = Config::new(&env.cs()).expect("connect string").max_frame(2 << 20);
        let big = Session::connect(cfg).await.expect("connect");
        assert_eq!(big.get_data("/big").await.expect("getData").value.0.len(), data);
        big.delete("/big", -1).await.expect("delete");
        big.close().await;
        s.close().await;
        String::new()
    })
}

/// Digest auth: a node made with `creator_all` is the digest user's alone,
/// on every connection of the session.
fn digest(env: Arc<Env>) -> Feature {
    Box::pin(async move {
        let proxy = Proxy::start(env.zk.client_addr(env.member)).expect("proxy");
        let cfg = Config::new(&proxy.addr().to_string()).expect("connect string").auth("digest", b"alice:secret");
        let s = Session::connect(cfg).await.expect("connect with digest");
        s.create("/digest", b"d", &Acl::creator_all(), CreateMode::Persistent).await.expect("create creator_all");
        // The credentials go again with every connection.
        reconnect(&s, &proxy).await;
        let read = s.get_data("/digest").await.expect("getData after a reconnect");
        assert_eq!((read.connection, read.value.0.as_slice()), (2, &b"d"[..]));
        let anon = connect(&env.cs()).await;
        assert_eq!(anon.get_data("/digest").await.unwrap_err(), Error::Server(Code::NoAuth));
        assert_eq!(anon.children("/digest").await.unwrap_err(), Error::Server(Code::NoAuth));
        assert_eq!(anon.set_data("/digest", b"x", -1).await.unwrap_err(), Error::Server(Code::NoAuth));
        // exists needs READ from 3.8.4 / 3.9.2 on (ZOOKEEPER-2590).
        let v = env.version;
        let exists_needs_read = ((3, 8, 4)..(3, 9, 0)).contains(&v) || v >= (3, 9, 2);
        let seen = anon.exists("/digest").await.map(|r| r.value.is_some());
        assert_eq!(seen, if exists_needs_read { Err(Error::Server(Code::NoAuth)) } else { Ok(true) }, "exists");
        // The same credentials are the same identity.
        let cfg = Config::new(&env.cs()).expect("connect string").auth("digest", b"alice:secret");
        let again = Session::connect(cfg).await.expect("connect with digest");
        assert_eq!(again.get_data("/digest").await.expect("getData").value.0, b"d");
        let cfg = Config::new(&env.cs()).expect("connect string").auth("digest", b"alice:other");
        let wrong = Session::connect(cfg).await.expect("connect with another password");
        assert_eq!(wrong.get_data("/digest").await.unwrap_err(), Error::Server(Code::NoAuth));
        let me = s.who_am_i().await;
        let note = if env.has_who_am_i() {
            let me = me.expect("whoAmI").value;
            assert!(me.contains(&("digest".to_string(), "alice".to_string())), "{me:?}");
            String::new()
        } else {
            assert_eq!(me.unwrap_err(), Error::Server(Code::Unimplemented));
            "identity by ACL only (no whoAmI)".to_string()
        };
        let note = if exists_needs_read { format!("{note} exists is NoAuth").trim().to_string() } else { note };
        for x in [s, anon, again, wrong] {
            x.close().await;
        }
        note
    })
}

/// SASL DIGEST-MD5: the login is the identity `sasl:<user>`, on every
/// connection of the session; a wrong password ends the connect with
/// `AuthFailed`.
fn sasl(env: Arc<Env>) -> Feature {
    Box::pin(async move {
        let proxy = Proxy::start(env.zk.client_addr(env.member)).expect("proxy");
        let cfg = Config::new(&proxy.addr().to_string()).expect("connect string").sasl_digest_md5("alice", "pw-alice");
        let s = Session::connect(cfg).await.expect("SASL login");
        let acl = [Acl { perms: Acl::ALL, scheme: "sasl".into(), id: "alice".into() }];
        s.create("/sasl", b"s", &acl, CreateMode::Persistent).await.expect("create for sasl:alice");
        assert_eq!(s.get_data("/sasl").await.expect("getData").value.0, b"s");
        // The login is done again on every connection.
        reconnect(&s, &proxy).await;
        let read = s.get_data("/sasl").await.expect("getData after a reconnect");
        assert_eq!((read.connection, read.value.0.as_slice()), (2, &b"s"[..]));
        let anon = connect(&env.cs()).await;
        assert_eq!(anon.get_data("/sasl").await.unwrap_err(), Error::Server(Code::NoAuth));
        let note = if env.has_who_am_i() {
            let me = s.who_am_i().await.expect("whoAmI").value;
            assert!(me.contains(&("sasl".to_string(), "alice".to_string())), "{me:?}");
            String::new()
        } else {
            "identity by ACL only (no whoAmI)".to_string()
        };
        // A wrong password (not a wrong user: ZOOKEEPER-4839).
        let cfg = Config::new(&env.cs()).expect("connect string").sasl_digest_md5("alice", "wrong");
        let e = within(20, "connect", Session::connect(cfg)).await.expect_err("a wrong password");
        assert!(matches!(e, Error::AuthFailed(_)), "{e}");
        s.close().await;
        anon.close().await;
        note
    })
}

/// A rustls configuration trusting `ca`, with a client certificate or not.
fn tls_config(ca: &Path, client: Option<(std::path::PathBuf, std::path::PathBuf)>) -> Tls {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).expect("the CA file") {
        roots.add(cert.expect("a CA certificate")).expect("a usable CA certificate");
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain: Vec<CertificateDer<'static>> =
                CertificateDer::pem_file_iter(&cert).expect("the certificate").collect::<Result<_, _>>().expect("PEM");
            let key = PrivateKeyDer::from_pem_file(&key).expect("the key");
            builder.with_client_auth_cert(chain, key).expect("a usable client certificate")
        },
    };
    Tls { config: Arc::new(config), server_name: None, ca_name: format!("file {:?}", ca.display().to_string()) }
}

/// TLS on the secure port: requests and watches; a client certificate is
/// the identity `x509:<subject DN>`, on every connection; a client that
/// trusts another CA is refused at once, saying why.
fn tls(env: Arc<Env>) -> Feature {
    Box::pin(async move {
        let certs = env.zk.tls_certs().expect("a TLS cluster");
        let secure = env.zk.secure_connect_string();
        let secure = secure.split(',').nth(env.member).expect("the member's secure port").to_string();
        let config = |cs: &str, tls: Tls| {
            Config::new(cs).expect("connect string").session_timeout(Duration::from_secs(4)).tls(tls)
        };
        let cfg = |tls: Tls| config(&secure, tls);

        let s = Session::connect(cfg(tls_config(&certs.ca(), None))).await.expect("TLS without a certificate");
        let p = s.create("/tls-e", b"t", &Acl::open(), CreateMode::Ephemeral).await.expect("create over TLS").value.0;
        let (r, w) = s.get_data_watch(&p);
        assert_eq!(r.await.expect("getData").value.0, b"t");
        s.set_data(&p, b"u", 0).await.expect("setData over TLS");
        assert_eq!(within(10, "watch over TLS", w).await.kind, EventType::NodeDataChanged);
        let anon_me = s.who_am_i().await;

        // Through a relay of the TLS bytes, to drop the connection.
        let relay = Proxy::start_raw(secure.parse().expect("an address")).expect("relay");
        let with_cert = tls_config(&certs.ca(), Some(certs.client()));
        let x = Session::connect(config(&relay.addr().to_string(), with_cert)).await.expect("TLS with a certificate");
        let dn = "CN=zklock-test-client";
        let acl = [Acl { perms: Acl::ALL, scheme: "x509".into(), id: dn.into() }];
        x.create("/tls-x509", b"x", &acl, CreateMode::Persistent).await.expect("create for the x509 identity");
        assert_eq!(x.get_data("/tls-x509").await.expect("getData").value.0, b"x");
        // The certificate is shown again on every connection.
        reconnect(&x, &relay).await;
        let read = x.get_data("/tls-x509").await.expect("getData after a reconnect");
        assert_eq!((read.connection, read.value.0.as_slice()), (2, &b"x"[..]));
        // creator_all names the session's authenticated identities: x509.
        x.create("/tls-creator", b"", &Acl::creator_all(), CreateMode::Persistent).await.expect("creator_all");
        assert_eq!(s.get_data("/tls-x509").await.unwrap_err(), Error::Server(Code::NoAuth));
        assert_eq!(s.get_data("/tls-creator").await.unwrap_err(), Error::Server(Code::NoAuth));
        let plain = connect(&env.cs()).await;
        assert_eq!(plain.get_data("/tls-x509").await.unwrap_err(), Error::Server(Code::NoAuth));
        let x_me = x.who_am_i().await;
        let note = if env.has_who_am_i() {
            let anon_me = anon_me.expect("whoAmI").value;
            assert!(anon_me.iter().all(|(scheme, _)| scheme != "x509"), "{anon_me:?}");
            let x_me = x_me.expect("whoAmI").value;
            assert!(x_me.contains(&("x509".to_string(), dn.to_string())), "{x_me:?}");
            String::new()
        } else {
            assert_eq!(x_me.unwrap_err(), Error::Server(Code::Unimplemented));
            "x509 identity by ACL only (no whoAmI)".to_string()
        };

        let e = Session::connect(cfg(tls_config(&certs.other_ca(), None))).await.expect_err("a CA that signed nothing");
        match &e {
            Error::Unreachable(why) if why.contains("TLS handshake failed") && why.contains("unknown issuer") => {},
            e => panic!("{e}"),
        }
        for s in [s, x, plain] {
            s.close().await;
        }
        note
    })
}

/// A chroot is added to every path sent and taken from every path read.
fn chroot(env: Arc<Env>) -> Feature {
    Box::pin(async move {
        let root = connect(&env.cs()).await;
        root.create("/app", b"", &Acl::open(), CreateMode::Persistent).await.expect("create");
        let s = connect(&format!("{}/app", env.cs())).await;
        assert_eq!(s.chroot(), "/app");
        let p = s.create("/n-", b"", &Acl::open(), CreateMode::EphemeralSequential).await.expect("create").value.0;
        assert!(is_sequential(&p, "/n-"), "{p}");
        assert!(root.exists(&format!("/app{p}")).await.expect("exists").value.is_some());
        let (r, w) = s.children_watch("/");
        assert_eq!(r.await.expect("getChildren").value.to_vec(), vec![p.trim_start_matches('/').to_string()]);
        root.create("/app/more", b"", &Acl::open(), CreateMode::Persistent).await.expect("create");
        let e = within(10, "child watch", w).await;
        assert_eq!((e.kind, e.path.as_str()), (EventType::NodeChildrenChanged, "/"));
        let (r, w) = s.get_data_watch("/more");
        r.await.expect("getData");
        root.set_data("/app/more", b"1", -1).await.expect("setData");
        assert_eq!(within(10, "data watch", w).await.path, "/more");
        let m = s
            .multi(&[
                MultiOp::Check { path: "/more".into(), version: 1 },
                MultiOp::Create { path: "/m".into(), data: vec![], acl: Acl::open(), mode: CreateMode::Persistent },
            ])
            .await
            .expect("multi")
            .value;
        assert!(matches!(&m[1], MultiResult::Create { path, .. } if path == "/m"), "{m:?}");
        let (kids, _) = s.children2("/").await.expect("getChildren2").value;
        assert_eq!(kids.len(), 3, "{kids:?}");
        s.sync("/").await.expect("sync");
        s.delete("/m", -1).await.expect("delete");
        assert_eq!(root.exists("/app/m").await.expect("exists").value, None);
        s.close().await;
        root.close().await;
        String::new()
    })
}

/// The session re-attaches on another member of the ensemble and its
/// watches are registered there again (SetWatches): those whose node
/// changed while it was away fire at once, the others later.
fn reattach_elsewhere(env: Arc<Env>) -> Feature {
    Box::pin(async move {
        let zk = &env.zk;
        // One proxy per member: the test chooses where the session goes.
        let proxies: Vec<Proxy> = (0..zk.len()).map(|i| Proxy::start(zk.client_addr(i)).expect("proxy")).collect();
        let cs = proxies.iter().map(|p| p.addr().to_string()).collect::<Vec<_>>().join(",");
        let s = connect(&cs).await;
        let mut ev = s.events();
        let other = connect(&zk.connect_string()).await;
        for p in ["/sw", "/sw/gone", "/sw/still"] {
            s.create(p, b"", &Acl::open(), CreateMode::Persistent).await.expect("create");
        }
        let eph = s.create("/sw/eph", b"", &Acl::open(), CreateMode::Ephemeral).await.expect("create").value.0;
        let (r, data_w) = s.get_data_watch("/sw");
        r.await.expect("getData");
        let (r, child_w) = s.children_watch("/sw");
        r.await.expect("getChildren");
        let (r, created_w) = s.exists_watch("/sw/new");
        assert_eq!(r.await.expect("exists").value, None);
        let (r, deleted_w) = s.get_data_watch("/sw/gone");
        r.await.expect("getData");
        let (r, quiet_data) = s.get_data_watch("/sw/still");
        r.await.expect("getData");
        let (r, quiet_exists) = s.exists_watch("/sw/later");
        assert_eq!(r.await.expect("exists").value, None);
        let (r, quiet_child) = s.children_watch("/sw/still");
        r.await.expect("getChildren");
        let id = s.id();
        let first = s.connected().expect("connected").server;
        let was = proxies.iter().position(|p| p.addr() == first).expect("a proxy");

        for p in &proxies {
            p.blackhole();
            p.drop_connections();
        }
        match next_event(&mut ev, 10).await {
            SessionEvent::Disconnected { connection: 1, .. } => {},
            e => panic!("{e:?}"),
        }
        // Changes while it is away.
        other.set_data("/sw", b"away", -1).await.expect("setData");
        other.create("/sw/new", b"", &Acl::open(), CreateMode::Persistent).await.expect("create");
        other.delete("/sw/gone", -1).await.expect("delete");
        let held = s.get_data("/sw");
        for (i, p) in proxies.iter().enumerate() {
            if i != was {
                p.heal();
            }
        }
        let now = match next_event(&mut ev, 20).await {
            SessionEvent::Connected(c) if c.connection == 2 => c,
            e => panic!("{e:?}"),
        };
        assert_ne!(now.server, first, "re-attached to the member it was on");
        let member = proxies.iter().position(|p| p.addr() == now.server).expect("a proxy");
        assert_eq!(s.id(), id, "same session");
        let held = within(10, "held call", held).await.expect("the held call");
        assert_eq!((held.connection, held.value.0.as_slice()), (2, &b"away"[..]));
        assert!(held.sent >= now.connect_sent);

        let e = within(10, "data watch", data_w).await;
        assert_eq!((e.kind, e.path.as_str()), (EventType::NodeDataChanged, "/sw"));
        let e = within(10, "exists watch", created_w).await;
        assert_eq!((e.kind, e.path.as_str()), (EventType::NodeCreated, "/sw/new"));
        let e = within(10, "data watch of a deleted node", deleted_w).await;
        assert_eq!((e.kind, e.path.as_str()), (EventType::NodeDeleted, "/sw/gone"));
        let e = within(10, "child watch", child_w).await;
        assert_eq!((e.kind, e.path.as_str()), (EventType::NodeChildrenChanged, "/sw"));
        // The quiet ones are held by the new member now.
        s.sync("/").await.expect("sync");
        assert_eq!(watch_count(zk, member), (2, 3), "watches on the new member");
        other.set_data("/sw/still", b"later", -1).await.expect("setData");
        let e = within(10, "quiet data watch", quiet_data).await;
        assert_eq!((e.kind, e.path.as_str()), (EventType::NodeDataChanged, "/sw/still"));
        other.create("/sw/later", b"", &Acl::open(), CreateMode::Persistent).await.expect("create");
        let e = within(10, "quiet exists watch", quiet_exists).await;
        assert_eq!((e.kind, e.path.as_str()), (EventType::NodeCreated, "/sw/later"));
        other.create("/sw/still/kid", b"", &Acl::open(), CreateMode::Persistent).await.expect("create");
        let e = within(10, "quiet child watch", quiet_child).await;
        assert_eq!((e.kind, e.path.as_str()), (EventType::NodeChildrenChanged, "/sw/still"));
        let owner = other.exists(&eph).await.expect("exists").value.map(|st| st.ephemeral_owner);
        assert_eq!(owner, Some(id), "the ephemeral node stays the session's");
        assert_eq!(s.state(), State::Connected);
        let more = ev.try_next();
        assert!(more.is_none(), "more session events: {more:?}");
        s.close().await;
        other.close().await;
        format!("member {was} -> member {member}")
    })
}

// ------------------------------------------------------------------- tests

/// The servers look for empty containers every 100 ms (default: a minute).
const CONTAINER_CHECK: &str = "-Dznode.container.checkIntervalMs=100";

/// The ensemble's members refuse a write the session may not make before
/// it enters their pipelines (from 3.6 on; see `eager_acl`).
const EAGER_ACL_CHECK: &str = "-Dzookeeper.enableEagerACLCheck=true";

fn standalone(release: ServerRelease) {
    if !release.installed_or_skip() {
        return;
    }
    let _slot = slot(1);
    let opts = ClusterOptions::new().release(release).tls(true).sasl_user("alice", "pw-alice").jvm_arg(CONTAINER_CHECK);
    let zk = Cluster::start(opts).unwrap_or_else(|e| panic!("{release}: start: {e}"));
    let version = server_version(&zk, 0);
    let env = Env { zk, release, member: 0, version };
    let features: [Named; 13] = [
        ("requests", requests),
        ("remove_watches", remove_watches),
        ("watches", watches),
        ("close", close),
        ("expiry", expiry),
        ("who_am_i", who_am_i),
        ("pings", pings),
        ("setwatches_batches", setwatches_batches),
        ("packet_limit", packet_limit),
        ("digest", digest),
        ("sasl", sasl),
        ("tls", tls),
        ("chroot", chroot),
    ];
    run_features(env, "standalone", &features);
}

fn ensemble(release: ServerRelease) {
    if !release.installed_or_skip() {
        return;
    }
    let _slot = slot(3);
    let opts = ClusterOptions::new().release(release).size(3).jvm_arg(CONTAINER_CHECK).jvm_arg(EAGER_ACL_CHECK);
    let zk = Cluster::start(opts).unwrap_or_else(|e| panic!("{release}: start: {e}"));
    let leader = zk.leader().expect("a leader");
    // Through a follower: writes and syncs are forwarded to the leader.
    let member = (0..zk.len()).find(|&i| i != leader).expect("a follower");
    let version = server_version(&zk, member);
    let env = Env { zk, release, member, version };
    let features: [Named; 8] = [
        ("requests", requests),
        ("remove_watches", remove_watches),
        ("watches", watches),
        ("close", close),
        ("expiry", expiry),
        ("who_am_i", who_am_i),
        ("reattach_elsewhere", reattach_elsewhere),
        ("eager_acl", eager_acl),
    ];
    run_features(env, "ensemble", &features);
}

// One module per release (e.g. `v3_5_10::ensemble`), so that one release
// can be run alone.
zklock_harness::release_tests!();

/// The tests above cover every release there is.
#[test]
fn every_release_has_its_tests() {
    assert_eq!(ServerRelease::ALL.len(), 5, "a release was added: add it to release_tests!");
}

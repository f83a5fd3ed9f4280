//! Shared pieces of the zklock-core integration tests: a real ZooKeeper
//! (through the harness), clients with short timeouts, and a raw
//! third-party ZooKeeper client for making foreign nodes and deleting ours.
#![allow(dead_code)]

use std::time::Duration;

use zklock_core::{Client, ClientOptions, Lock, LockMode, LockOptions};
use zklock_harness::{Cluster, ClusterOptions};
use zklock_zk as zk;

/// The lock modes every edge-case test runs in.
pub const MODES: [LockMode; 3] = [LockMode::Exclusive, LockMode::Read, LockMode::Write];

/// A lock handle of `mode` on `path`.
pub fn lock_of(client: &Client, path: &str, mode: LockMode) -> Lock {
    client.lock_with(path, mode, LockOptions::default()).expect("valid lock path")
}

/// A reentrant (per thread) lock handle of `mode` on `path`.
pub fn reentrant_lock_of(client: &Client, path: &str, mode: LockMode) -> Lock {
    client.lock_with(path, mode, LockOptions::default().reentrant()).expect("valid lock path")
}

/// A standalone server whose containers are reaped quickly.
pub fn server() -> Cluster {
    zklock_harness::ensure_zookeeper().expect("ZooKeeper installed");
    Cluster::start(ClusterOptions::new().jvm_arg("-Dznode.container.checkIntervalMs=200")).expect("server starts")
}

/// Options with timeouts short enough for fault tests.
pub fn options(hosts: &str, session: Duration) -> ClientOptions {
    ClientOptions::new(hosts)
        .session_timeout(session)
        .connect_timeout(Duration::from_secs(3))
        .operation_timeout(Duration::from_secs(1))
}

pub fn connect(hosts: &str) -> Client {
    Client::connect(options(hosts, Duration::from_secs(4))).expect("client connects")
}

/// Polls `cond` every 10 ms until it holds; panics with `what` after `limit`.
pub fn wait_until(what: &str, limit: Duration, cond: impl FnMut() -> bool) {
    assert!(zklock_harness::wait_for(limit, cond), "timed out waiting until {what}");
}

/// Names of the lock nodes queued on `path`.
pub fn queue(client: &Client, path: &str) -> Vec<String> {
    client.participants(path).expect("participants").into_iter().map(|p| p.name).collect()
}

/// A plain ZooKeeper session (zklock's own session layer, used directly),
/// for acting as a third party.
pub struct Raw {
    // Dropped before the runtime its task runs on.
    pub zk: zk::Session,
    pub rt: tokio::runtime::Runtime,
}

impl Raw {
    pub fn connect(hosts: &str) -> Raw {
        Raw::connect_with(zk::Config::new(hosts).expect("valid connect string"))
    }

    /// A session made from `config` (e.g. with credentials).
    pub fn connect_with(config: zk::Config) -> Raw {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
        // The session's task runs on the runtime that connects it.
        let zk = rt.block_on(zk::Session::connect(config)).expect("raw client connects");
        Raw { zk, rt }
    }

    pub fn children(&self, path: &str) -> Vec<String> {
        match self.rt.block_on(self.zk.children(path).value()) {
            Ok(c) => c.to_vec(),
            Err(zk::Error::Server(zk::Code::NoNode)) => Vec::new(),
            Err(e) => panic!("list {path}: {e}"),
        }
    }

    pub fn exists(&self, path: &str) -> Option<zk::Stat> {
        self.rt.block_on(self.zk.exists(path).value()).expect("exists")
    }

    pub fn delete(&self, path: &str) {
        self.rt.block_on(self.zk.delete(path, -1).value()).unwrap_or_else(|e| panic!("delete {path}: {e}"));
    }

    /// Creates `path` (parents must exist) with an open ACL and returns the
    /// created name (with the sequence number of a sequential mode).
    pub fn create(&self, path: &str, mode: zk::CreateMode) -> String {
        let (made, _) = self
            .rt
            .block_on(self.zk.create(path, b"", &zk::Acl::open(), mode).value())
            .unwrap_or_else(|e| panic!("create {path}: {e}"));
        made.rsplit('/').next().unwrap_or_default().to_owned()
    }

    /// Creates `path` and its missing ancestors as persistent nodes with
    /// an open ACL; an existing node is left as it is.
    pub fn mkdir(&self, path: &str) {
        let ends = path.match_indices('/').skip(1).map(|(i, _)| i).chain([path.len()]);
        for end in ends {
            let node = &path[..end];
            match self.rt.block_on(self.zk.create(node, b"", &zk::Acl::open(), zk::CreateMode::Persistent).value()) {
                Ok(_) | Err(zk::Error::Server(zk::Code::NodeExists)) => {},
                Err(e) => panic!("mkdir {node}: {e}"),
            }
        }
    }

    pub fn session_id(&self) -> i64 {
        self.zk.id()
    }

    /// Runs `f` to completion on this client's runtime.
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }
}

//! # zklock-core
//!
//! Distributed locks on Apache ZooKeeper: an exclusive lock and a shared
//! (read/write) lock following ZooKeeper's ephemeral-sequential queue recipe,
//! with Apache Curator's node names so that Curator and zklock exclude each
//! other on one path.
//!
//! A [`Client`] drives ZooKeeper on a private runtime. Every call comes
//! blocking (for plain threads and C) and as a future that any executor can
//! await (`_async`: [`Client::connect_async`], [`Lock::acquire_async`],
//! [`Guard::release_async`], ...); [`Client::spawn_then`] turns any of these
//! futures into a callback on the client's event thread. A lock has one
//! blocking acquire ([`Lock::acquire`]) and one async acquire
//! ([`Lock::acquire_async`]), each taking its own options
//! ([`AcquireOptions`]): a timeout, a [`CancelToken`] that cancels that
//! call only, and the [`Owner`] that reentrancy and a read/write pair's
//! rules go by.
//!
//! ```no_run
//! use std::time::Duration;
//! use zklock_core::{Client, ClientOptions};
//!
//! let client = Client::connect(ClientOptions::new("127.0.0.1:2181"))?;
//! let lock = client.lock("/jobs/nightly")?;
//! let guard = lock.acquire(Some(Duration::from_secs(10)))?;
//! guard.check()?; // still safely held?
//! println!("holding {} with token {}", guard.node_path(), guard.fencing_token());
//! guard.release()?;
//! # Ok::<(), zklock_core::Error>(())
//! ```
//!
//! The core logs through the `log` facade: connects, reconnects,
//! suspensions, session expiries, re-queues and background cleanups, each
//! with its lock path and session id; install any `log` logger to see them
//! (the bindings forward them to their language's logging: [`logging`]).
//!
//! Guarantees and their limits are described in the docs site's
//! `docs/guarantees.md` and in the protocol document
//! (`docs/lock-protocol.md`); every public item says which errors it
//! returns and on which thread it may be called.

mod acquire;
mod cleanup;
mod client;
mod clock;
mod error;
mod fault;
mod fenced;
mod hold;
mod holding;
mod listeners;
mod lock;
pub mod logging;
mod metrics;
mod multi;
mod options;
mod requests;
mod security;
mod state;
mod validate;
pub mod vocabulary;
mod zk;

/// Lock-node names and the ordering rule (protocol doc sections 2 and 3):
/// pure functions over child-name lists, from `zklock-proto`.
pub use zklock_proto::names;

pub use client::{Client, ClientOptions, ConnectionState, Participant};
pub use error::{Error, ErrorKind, FailedOp, Result};
pub use fenced::{CreateMode, FencedKind, FencedOp, FencedResult, MAX_FENCED_BYTES};
pub use hold::{Hold, HoldFuture};
pub use listeners::Subscription;
pub use lock::{park_until, tried_once, Guard, Lock, PendingAcquire, ReadWriteLock};
pub use logging::LogLevel;
pub use metrics::{Histogram, Metrics, BUCKETS};
pub use multi::{MultiGuard, MultiLock};
pub use names::{LockMode, NodeKind};
pub use options::{AcquireOptions, CancelHandle, CancelToken, LockOptions, Owner};
pub use security::{Acl, TlsOptions};
pub use state::{LockState, ReleaseStatus};
pub use validate::{
    acquire_timeout_from_secs, option_timeout_from_secs, validate_connect_string, validate_lock_path,
    validate_shared_count_path, FOREVER, MAX_OPTION_TIMEOUT, MAX_PATH_BYTES, MAX_SERVERS_BYTES, MAX_SESSION_TIMEOUT,
};

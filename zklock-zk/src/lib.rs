//! zklock's ZooKeeper session layer, on tokio.
//!
//! A [`Session`] is one ZooKeeper session: it connects to one of the
//! servers of a connect string, re-attaches to the same session on another
//! server when a connection is lost, pings, re-registers watches, and says
//! what happened in [`SessionEvent`]s, in order. Requests are enqueued when
//! the method is called and sent in that order; each [`Reply`] carries the
//! instant its request was handed to the socket (`sent`), and each
//! connection ([`Connected`]) the instant its connect request
//! was (`connect_sent`), which each reply's [`Stamp`] carries too (those
//! of the connection it came on): the facts zklock's safety clock is
//! built on.
//!
//! Nothing is process-wide: no global runtime, reactor, thread pool or
//! crypto provider. A session's task runs on the tokio runtime that made it;
//! a process forked from one that has sessions makes new ones and they just
//! work.
//!
//! The wire format is in [`codec`], pure and fuzzed.
//!
//! ```no_run
//! # async fn f() -> Result<(), zklock_zk::Error> {
//! use zklock_zk::{Acl, Config, CreateMode, Session};
//! let s = Session::connect(Config::new("127.0.0.1:2181")?).await?;
//! let made = s.create("/demo", b"x", &Acl::open(), CreateMode::Ephemeral).await?;
//! println!("{} has czxid {} (sent at {:?})", made.value.0, made.value.1.czxid, made.sent);
//! s.close().await;
//! # Ok(()) }
//! ```

pub mod codec;
mod config;
mod conn;
mod error;
mod hosts;
mod sasl;
mod session;
mod tls;

pub use codec::ops::{Code, EventType};
pub use codec::records::{Acl, CreateMode, MultiOp, MultiResult, Stat, WatchKind};
pub use config::{Config, Tls};
pub use error::Error;
pub use hosts::{ConnectString, Host};
pub use session::{
    Connected, Events, HeldBack, Outbound, Reply, ReplyFuture, Session, SessionEvent, Stamp, State, StateWatcher,
    Watch, WatchedEvent,
};

//! Shared pieces of the zklock-cli integration tests. The ZooKeeper side
//! (a real server through the harness, zklock clients with short timeouts,
//! a raw third-party client) is zklock-core's test module, included here
//! rather than copied.
#![allow(dead_code)]

use std::time::Duration;

#[path = "../../../zklock-core/tests/common/mod.rs"]
mod zk;

pub use zk::*;

/// One second.
pub const SEC: Duration = Duration::from_secs(1);

//! The words every front end shares, one table per vocabulary: each
//! word's one spelling (`UPPER_SNAKE`), fixed number and meaning.
//!
//! The tables are the enums' own declarations ([`zklock_proto::vocabulary!`]):
//! [`ErrorKind`], [`LockState`], [`ReleaseStatus`], [`ConnectionState`],
//! [`LockMode`], [`NodeKind`], [`CreateMode`], [`FencedKind`] and
//! [`LogLevel`]. The C header's enums, the
//! Python enums and exception classes and the TypeScript unions are
//! generated from [`ALL`] (`make vocabulary`); `make test` fails when a
//! generated file differs from the tables.

use crate::{
    ConnectionState, CreateMode, ErrorKind, FencedKind, LockMode, LockState, LogLevel, NodeKind, ReleaseStatus,
};

pub use zklock_proto::vocabulary::{Vocabulary, Word};

/// Every vocabulary, in a fixed order.
pub const ALL: &[Vocabulary] = &[
    ErrorKind::VOCABULARY,
    LockState::VOCABULARY,
    ReleaseStatus::VOCABULARY,
    ConnectionState::VOCABULARY,
    LockMode::VOCABULARY,
    NodeKind::VOCABULARY,
    CreateMode::VOCABULARY,
    FencedKind::VOCABULARY,
    LogLevel::VOCABULARY,
];

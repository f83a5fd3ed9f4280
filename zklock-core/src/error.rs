//! The one error type of zklock, shared by every binding.
//!
//! Every failure carries an [`ErrorKind`] (a stable code that the C, Python and
//! Node bindings map to their own error types) and a message that names what
//! went wrong. The kind list lives here and only here (a [`zklock_proto::vocabulary!`]
//! table: the front ends' error types are generated from it).

use std::fmt;

zklock_proto::vocabulary! {
    /// What kind of failure an [`Error`] is.
    ///
    /// The numeric values are part of the C ABI (`zklock_code`): they are
    /// fixed and never reused. `0` is reserved for success in C. The names
    /// are the C enum's (`ZKLOCK_<NAME>`), Python's `.code` and Node's
    /// `code`: for example `"TIMEOUT"`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[repr(i32)]
    #[non_exhaustive]
    pub enum ErrorKind {
        /// An argument was invalid: an empty or malformed connect string, a bad
        /// option value or mode, a NULL pointer or a string that is not UTF-8
        /// (C), a wrong type (Python, Node). The message names the argument.
        InvalidArgument = 1, "INVALID_ARGUMENT";
        /// A ZooKeeper path was malformed (not absolute, empty component, trailing
        /// slash, forbidden character, reserved name, ...).
        InvalidPath = 2, "INVALID_PATH";
        /// The deadline passed before the operation completed (for an acquire:
        /// someone else holds the lock; our node was deleted).
        Timeout = 3, "TIMEOUT";
        /// The operation was cancelled by the caller (a cancel token or call,
        /// an abort signal, a dropped future); an acquire's node was deleted.
        Cancelled = 4, "CANCELLED";
        /// The connection to ZooKeeper was lost, or could not be established, and
        /// the outcome of the operation is unknown or it could not be started.
        /// Also what a check of a suspended lock fails with (it may come back).
        ConnectionLoss = 5, "CONNECTION_LOSS";
        /// The ZooKeeper session expired.
        SessionExpired = 6, "SESSION_EXPIRED";
        /// The lock was held but is lost (session expired, our node deleted, or
        /// the re-check after a reconnect failed). Another client may hold it.
        LockLost = 7, "LOCK_LOST";
        /// The lock is not held by this handle or guard (for example a release of
        /// a guard that was already released).
        NotHeld = 8, "NOT_HELD";
        /// The client was closed.
        Closed = 9, "CLOSED";
        /// ZooKeeper answered with an error that has no kind of its own (the
        /// message names the ZooKeeper error).
        ZooKeeper = 10, "ZOOKEEPER";
        /// A bug in zklock (a broken invariant or a caught panic).
        Internal = 11, "INTERNAL";
        /// The operation would deadlock and was refused: acquiring the write side
        /// of a read/write pair while holding its read side.
        WouldDeadlock = 12, "WOULD_DEADLOCK";
        /// ZooKeeper refused for lack of permission: the ACL of a node, or of
        /// its parent, does not allow this session (`NoAuth`), or the server
        /// refused the session's credentials (`AuthFailed`).
        NoAuth = 13, "NO_AUTH";
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A zklock failure: a kind and a human-readable message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    pub(crate) failed_op: Option<FailedOp>,
}

/// Which operation of a fenced write ([`crate::Guard::fenced_multi`])
/// ZooKeeper refused, and why; nothing of the write was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedOp {
    /// The index of the operation in the list the caller gave.
    pub index: usize,
    /// ZooKeeper's name for the error, as its Java client spells it
    /// without the prefix: `"BadVersion"`, `"NoNode"`, `"NodeExists"`,
    /// `"NotEmpty"`, `"NoChildrenForEphemerals"`, `"NoAuth"`, ...
    pub code: String,
}

impl Error {
    /// Makes an error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into(), failed_op: None }
    }

    /// For a fenced write that ZooKeeper refused because of one of the
    /// caller's operations: which one and why. `None` for every other
    /// error.
    pub fn failed_op(&self) -> Option<&FailedOp> {
        self.failed_op.as_ref()
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, without the kind.
    pub fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn invalid_argument(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    /// Names `path` (see [`shown`]) and what is wrong with it.
    pub(crate) fn invalid_path(path: &str, why: &str) -> Self {
        Error::new(ErrorKind::InvalidPath, format!("invalid path {}: {why}", shown(path)))
    }

    pub(crate) fn timeout(what: &str) -> Self {
        Error::new(ErrorKind::Timeout, format!("{what}: deadline passed"))
    }

    pub(crate) fn cancelled(what: &str) -> Self {
        Error::new(ErrorKind::Cancelled, format!("{what}: cancelled"))
    }

    pub(crate) fn closed() -> Self {
        Error::new(ErrorKind::Closed, "the client is closed")
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Internal, message)
    }

    /// Maps an error of the ZooKeeper client, adding what we were doing.
    pub(crate) fn from_zk(what: &str, err: zklock_zk::Error) -> Self {
        use zklock_zk::{Code, Error as Zk};
        if let Some(refused) = refusal(what, &err) {
            return refused;
        }
        let kind = match &err {
            Zk::ConnectionLoss(_) | Zk::Timeout(_) | Zk::Unreachable(_) => ErrorKind::ConnectionLoss,
            Zk::Server(Code::ConnectionLoss | Code::OperationTimeout) => ErrorKind::ConnectionLoss,
            Zk::SessionExpired | Zk::Server(Code::SessionExpired | Code::SessionMoved) => ErrorKind::SessionExpired,
            Zk::Closed => ErrorKind::Closed,
            Zk::BadArgument(_) | Zk::Server(Code::BadArguments) => ErrorKind::InvalidArgument,
            _ => ErrorKind::ZooKeeper,
        };
        Error::new(kind, format!("{what}: {err}"))
    }
}

/// The kind and message for ZooKeeper's refusals that have to do with
/// permissions, or `None` for every other error.
pub(crate) fn refusal(what: &str, err: &zklock_zk::Error) -> Option<Error> {
    Some(match err {
        zklock_zk::Error::Server(zklock_zk::Code::NoAuth) => Error::new(
            ErrorKind::NoAuth,
            format!(
                "{what}: not authorized (NoAuth): the ACL of the node or of its parent does not allow this \
                 session; authenticate (digest auth or a TLS client certificate) as an identity the ACL names"
            ),
        ),
        zklock_zk::Error::AuthFailed(why) => Error::new(
            ErrorKind::NoAuth,
            format!("{what}: authentication failed (AuthFailed): the server refused the credentials ({why})"),
        ),
        zklock_zk::Error::Server(zklock_zk::Code::AuthFailed) => Error::new(
            ErrorKind::NoAuth,
            format!("{what}: authentication failed (AuthFailed): the server refused the credentials"),
        ),
        zklock_zk::Error::Server(zklock_zk::Code::InvalidAcl) => Error::invalid_argument(format!(
            "{what}: ZooKeeper refused the ACL (InvalidACL): one of its entries is not valid there (an \
             `auth`/`creator` entry needs an authenticated session; a scheme needs a provider on the server; \
             the id must be one that provider accepts: ZooKeeper 3.8 takes only IPv4 `ip` entries)"
        )),
        _ => return None,
    })
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for Error {}

/// Result with zklock's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `s` quoted for an error message: whole if short, else its first 100
/// characters and its length (a message never carries a huge input).
pub(crate) fn shown(s: &str) -> String {
    const SHOWN: usize = 100;
    if s.chars().nth(SHOWN).is_none() {
        format!("{s:?}")
    } else {
        let head: String = s.chars().take(SHOWN).collect();
        format!("{head:?}... ({} bytes)", s.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_fixed_unique_and_all_listed() {
        let codes: Vec<i32> = ErrorKind::ALL.iter().map(|k| k.code()).collect();
        assert_eq!(codes, (1..=13).collect::<Vec<_>>());
        let mut names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ErrorKind::ALL.len());
    }

    #[test]
    fn display_names_kind_and_message() {
        let e = Error::invalid_path("a/b", "must start with '/'");
        assert_eq!(e.kind(), ErrorKind::InvalidPath);
        assert_eq!(e.to_string(), "INVALID_PATH: invalid path \"a/b\": must start with '/'");
    }
}

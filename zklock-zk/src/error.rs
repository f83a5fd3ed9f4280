//! The one error type of the session layer.

use std::fmt;

use crate::codec::ops::Code;

/// Why a call, a connect or the session failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The server answered with this error code.
    Server(Code),
    /// A multi failed: no operation took effect; `index` is the operation
    /// that failed, `code` why.
    Multi {
        /// Index of the failing operation in the list sent.
        index: usize,
        /// Why it failed.
        code: Code,
    },
    /// The connection was lost while the request was outstanding (the
    /// server may or may not have carried it out), or the session was not
    /// connected when the call was made (then it was never sent). The
    /// session reconnects by itself; the text says which.
    ConnectionLoss(String),
    /// The session expired: every ephemeral node it made is gone. Final.
    SessionExpired,
    /// The server refused the credentials. Final.
    AuthFailed(String),
    /// The session was closed by [`Session::close`](crate::Session::close)
    /// or by dropping it. Final.
    Closed,
    /// Connecting: every server refused the connection or could not be
    /// reached for a reason that waiting will not change (refused, not
    /// resolvable, TLS handshake refused). Each server's reason is in the text.
    Unreachable(String),
    /// Connecting: no server answered within the connect timeout. Each
    /// server's last reason is in the text.
    Timeout(String),
    /// Bad input, e.g. a malformed connect string or a request over the
    /// packet limit; nothing was sent.
    BadArgument(String),
}

impl Error {
    /// The server code nearest to this error, as ZooKeeper's own clients
    /// would report it (`ConnectionLoss` for [`Error::Unreachable`],
    /// [`Error::Timeout`] and [`Error::Closed`]).
    pub fn code(&self) -> Code {
        match self {
            Error::Server(c) | Error::Multi { code: c, .. } => *c,
            Error::ConnectionLoss(_) | Error::Unreachable(_) | Error::Timeout(_) | Error::Closed => {
                Code::ConnectionLoss
            },
            Error::SessionExpired => Code::SessionExpired,
            Error::AuthFailed(_) => Code::AuthFailed,
            Error::BadArgument(_) => Code::BadArguments,
        }
    }

    /// True when the session can never be used again (expired, auth
    /// failed, closed).
    pub fn is_final(&self) -> bool {
        matches!(self, Error::SessionExpired | Error::AuthFailed(_) | Error::Closed)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Server(c) => write!(f, "server error: {c}"),
            Error::Multi { index, code } => write!(f, "multi failed at operation {index}: {code}"),
            Error::ConnectionLoss(why) => write!(f, "connection loss: {why}"),
            Error::SessionExpired => write!(f, "session expired"),
            Error::AuthFailed(why) => write!(f, "authentication failed: {why}"),
            Error::Closed => write!(f, "session closed"),
            Error::Unreachable(why) => write!(f, "no server can be reached: {why}"),
            Error::Timeout(why) => write!(f, "connect timed out: {why}"),
            Error::BadArgument(why) => write!(f, "bad argument: {why}"),
        }
    }
}

impl std::error::Error for Error {}

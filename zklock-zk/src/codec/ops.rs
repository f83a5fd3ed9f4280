//! Numbers of the wire protocol: operation codes, special xids, the server's
//! error codes, watch event types and connection states (ZooKeeper's
//! `ZooDefs.OpCode`, `KeeperException.Code` and `Watcher.Event`).

use std::fmt;

/// Operation codes of the requests this crate sends.
#[allow(missing_docs)]
pub mod op {
    pub const CREATE: i32 = 1;
    pub const DELETE: i32 = 2;
    pub const EXISTS: i32 = 3;
    pub const GET_DATA: i32 = 4;
    pub const SET_DATA: i32 = 5;
    pub const GET_CHILDREN: i32 = 8;
    pub const SYNC: i32 = 9;
    pub const PING: i32 = 11;
    pub const GET_CHILDREN2: i32 = 12;
    pub const CHECK: i32 = 13;
    pub const MULTI: i32 = 14;
    pub const CREATE2: i32 = 15;
    pub const REMOVE_WATCHES: i32 = 18;
    pub const CREATE_CONTAINER: i32 = 19;
    pub const AUTH: i32 = 100;
    pub const SET_WATCHES: i32 = 101;
    pub const SASL: i32 = 102;
    pub const WHO_AM_I: i32 = 107;
    pub const CLOSE_SESSION: i32 = -11;
    /// The type of an operation's result inside a failed multi.
    pub const ERROR: i32 = -1;

    /// Every operation above (but `ERROR`): what a reply body can be
    /// decoded as (`Response::decode`; those without a body decode as
    /// empty). The codec's property tests and fuzz targets go through it.
    pub const ALL: &[i32] = &[
        CREATE,
        DELETE,
        EXISTS,
        GET_DATA,
        SET_DATA,
        GET_CHILDREN,
        SYNC,
        PING,
        GET_CHILDREN2,
        CHECK,
        MULTI,
        CREATE2,
        REMOVE_WATCHES,
        CREATE_CONTAINER,
        AUTH,
        SET_WATCHES,
        SASL,
        WHO_AM_I,
        CLOSE_SESSION,
    ];
}

/// ZooKeeper's name for operation `code` (`ZooDefs.OpCode`, as the
/// server's logs and metrics spell it), `"unknown"` for others.
pub fn op_name(code: i32) -> &'static str {
    match code {
        op::CREATE => "create",
        op::DELETE => "delete",
        op::EXISTS => "exists",
        op::GET_DATA => "getData",
        op::SET_DATA => "setData",
        op::GET_CHILDREN => "getChildren",
        op::SYNC => "sync",
        op::PING => "ping",
        op::GET_CHILDREN2 => "getChildren2",
        op::CHECK => "check",
        op::MULTI => "multi",
        op::CREATE2 => "create2",
        op::REMOVE_WATCHES => "removeWatches",
        op::CREATE_CONTAINER => "createContainer",
        op::AUTH => "auth",
        op::SET_WATCHES => "setWatches",
        op::SASL => "sasl",
        op::WHO_AM_I => "whoAmI",
        op::CLOSE_SESSION => "closeSession",
        _ => "unknown",
    }
}

/// Xids with a meaning of their own (ZooKeeper's `ClientCnxn`).
pub mod xid {
    /// A watch notification from the server.
    pub const NOTIFICATION: i32 = -1;
    /// A ping and its reply.
    pub const PING: i32 = -2;
    /// An `addAuth` packet and its reply.
    pub const AUTH: i32 = -4;
    /// The re-registration of watches after a reconnect.
    pub const SET_WATCHES: i32 = -8;
}

/// An error code the server put in a reply header (or a multi result).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Code {
    /// -2: a later operation of a failed multi (the failing one comes first).
    RuntimeInconsistency,
    /// -3: data inconsistency.
    DataInconsistency,
    /// -4: the server lost its connection to the leader mid-request.
    ConnectionLoss,
    /// -5: marshalling error.
    MarshallingError,
    /// -6: the server does not implement this operation (an older release).
    Unimplemented,
    /// -7: operation timeout.
    OperationTimeout,
    /// -8: bad arguments.
    BadArguments,
    /// -13: the server is in the middle of a new configuration.
    ReconfigInProgress,
    /// -101: the node does not exist.
    NoNode,
    /// -102: not authorised by the node's ACL.
    NoAuth,
    /// -103: the version did not match.
    BadVersion,
    /// -108: ephemeral nodes may not have children.
    NoChildrenForEphemerals,
    /// -110: the node exists.
    NodeExists,
    /// -111: the node has children.
    NotEmpty,
    /// -112: the session expired.
    SessionExpired,
    /// -113: invalid callback.
    InvalidCallback,
    /// -114: invalid ACL.
    InvalidAcl,
    /// -115: authentication failed.
    AuthFailed,
    /// -118: the session moved to another server.
    SessionMoved,
    /// -119: the server is read-only.
    NotReadOnly,
    /// -120: ephemeral on a local session.
    EphemeralOnLocalSession,
    /// -121: no such watch (removeWatches).
    NoWatcher,
    /// -124: the server requires SASL authentication first.
    SessionClosedRequireSaslAuth,
    /// -127: the server throttled the request.
    Throttled,
    /// Any other code, kept as sent.
    Other(i32),
}

impl Code {
    /// The code for a number from the wire; 0 is not an error and gives `None`.
    pub fn from_wire(n: i32) -> Option<Code> {
        Some(match n {
            0 => return None,
            -2 => Code::RuntimeInconsistency,
            -3 => Code::DataInconsistency,
            -4 => Code::ConnectionLoss,
            -5 => Code::MarshallingError,
            -6 => Code::Unimplemented,
            -7 => Code::OperationTimeout,
            -8 => Code::BadArguments,
            -13 => Code::ReconfigInProgress,
            -101 => Code::NoNode,
            -102 => Code::NoAuth,
            -103 => Code::BadVersion,
            -108 => Code::NoChildrenForEphemerals,
            -110 => Code::NodeExists,
            -111 => Code::NotEmpty,
            -112 => Code::SessionExpired,
            -113 => Code::InvalidCallback,
            -114 => Code::InvalidAcl,
            -115 => Code::AuthFailed,
            -118 => Code::SessionMoved,
            -119 => Code::NotReadOnly,
            -120 => Code::EphemeralOnLocalSession,
            -121 => Code::NoWatcher,
            -124 => Code::SessionClosedRequireSaslAuth,
            -127 => Code::Throttled,
            other => Code::Other(other),
        })
    }

    /// The number sent on the wire.
    pub fn to_wire(self) -> i32 {
        match self {
            Code::RuntimeInconsistency => -2,
            Code::DataInconsistency => -3,
            Code::ConnectionLoss => -4,
            Code::MarshallingError => -5,
            Code::Unimplemented => -6,
            Code::OperationTimeout => -7,
            Code::BadArguments => -8,
            Code::ReconfigInProgress => -13,
            Code::NoNode => -101,
            Code::NoAuth => -102,
            Code::BadVersion => -103,
            Code::NoChildrenForEphemerals => -108,
            Code::NodeExists => -110,
            Code::NotEmpty => -111,
            Code::SessionExpired => -112,
            Code::InvalidCallback => -113,
            Code::InvalidAcl => -114,
            Code::AuthFailed => -115,
            Code::SessionMoved => -118,
            Code::NotReadOnly => -119,
            Code::EphemeralOnLocalSession => -120,
            Code::NoWatcher => -121,
            Code::SessionClosedRequireSaslAuth => -124,
            Code::Throttled => -127,
            Code::Other(n) => n,
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Code::Other(n) => write!(f, "error code {n}"),
            c => write!(f, "{c:?} ({})", c.to_wire()),
        }
    }
}

/// What a watch notification says happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    /// The node was created (an `exists` watch).
    NodeCreated,
    /// The node was deleted.
    NodeDeleted,
    /// The node's data changed.
    NodeDataChanged,
    /// The node's children changed.
    NodeChildrenChanged,
    /// A data watch was removed.
    DataWatchRemoved,
    /// A child watch was removed.
    ChildWatchRemoved,
    /// No node event: the session changed state (the watch is gone with it).
    Session,
}

impl EventType {
    /// The type for a number from the wire, `None` if unknown.
    pub fn from_wire(n: i32) -> Option<EventType> {
        Some(match n {
            -1 => EventType::Session,
            1 => EventType::NodeCreated,
            2 => EventType::NodeDeleted,
            3 => EventType::NodeDataChanged,
            4 => EventType::NodeChildrenChanged,
            5 => EventType::DataWatchRemoved,
            6 => EventType::ChildWatchRemoved,
            _ => return None,
        })
    }
}

//! The records zklock sends and receives, with their encodings. No I/O.

use std::sync::Arc;

use super::jute::{DecodeError, Reader, Writer};
use super::ops::{op, Code, EventType};

/// A node's metadata (ZooKeeper's `Stat`, 68 bytes on the wire).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stat {
    /// Zxid of the create: zklock's fencing token.
    pub czxid: i64,
    /// Zxid of the last data change.
    pub mzxid: i64,
    /// Creation time, ms since the epoch (the leader's clock).
    pub ctime: i64,
    /// Last data change time, ms since the epoch.
    pub mtime: i64,
    /// Data version.
    pub version: i32,
    /// Children version.
    pub cversion: i32,
    /// ACL version.
    pub aversion: i32,
    /// Session id of an ephemeral node's owner, 0 for a persistent one.
    pub ephemeral_owner: i64,
    /// Data length in bytes.
    pub data_length: i32,
    /// Number of children.
    pub num_children: i32,
    /// Zxid of the last change of the children.
    pub pzxid: i64,
}

impl Stat {
    /// Bytes a `Stat` takes on the wire.
    pub const WIRE_LEN: usize = 68;

    /// Reads a `Stat`.
    pub fn decode(r: &mut Reader<'_>) -> Result<Stat, DecodeError> {
        Ok(Stat {
            czxid: r.i64("Stat.czxid")?,
            mzxid: r.i64("Stat.mzxid")?,
            ctime: r.i64("Stat.ctime")?,
            mtime: r.i64("Stat.mtime")?,
            version: r.i32("Stat.version")?,
            cversion: r.i32("Stat.cversion")?,
            aversion: r.i32("Stat.aversion")?,
            ephemeral_owner: r.i64("Stat.ephemeralOwner")?,
            data_length: r.i32("Stat.dataLength")?,
            num_children: r.i32("Stat.numChildren")?,
            pzxid: r.i64("Stat.pzxid")?,
        })
    }

    /// Writes a `Stat` (for tests and fake servers).
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.i64(self.czxid).i64(self.mzxid).i64(self.ctime).i64(self.mtime);
        w.i32(self.version).i32(self.cversion).i32(self.aversion);
        w.i64(self.ephemeral_owner).i32(self.data_length).i32(self.num_children).i64(self.pzxid);
    }
}

/// One entry of a node's access control list.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Acl {
    /// Permission bits: read 1, write 2, create 4, delete 8, admin 16.
    pub perms: i32,
    /// Scheme, e.g. `world`, `digest`, `auth`, `x509`, `sasl`.
    pub scheme: String,
    /// Identity within the scheme, e.g. `anyone`.
    pub id: String,
}

impl Acl {
    /// Every permission (31).
    pub const ALL: i32 = 31;

    /// `world:anyone` with every permission (ZooKeeper's `OPEN_ACL_UNSAFE`).
    pub fn open() -> Vec<Acl> {
        vec![Acl { perms: Acl::ALL, scheme: "world".into(), id: "anyone".into() }]
    }

    /// Every permission for the identities the session authenticated as
    /// (ZooKeeper's `CREATOR_ALL_ACL`).
    pub fn creator_all() -> Vec<Acl> {
        vec![Acl { perms: Acl::ALL, scheme: "auth".into(), id: String::new() }]
    }

    fn encode_all(acl: &[Acl], w: &mut Writer<'_>) {
        w.count(acl.len());
        for a in acl {
            w.i32(a.perms).string(&a.scheme).string(&a.id);
        }
    }
}

/// How a node is created (ZooKeeper's `CreateMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CreateMode {
    /// Stays until deleted.
    Persistent,
    /// Deleted when the session that made it ends.
    Ephemeral,
    /// Persistent, with a sequence number appended to the name.
    PersistentSequential,
    /// Ephemeral, with a sequence number appended to the name.
    EphemeralSequential,
    /// Deleted by the server some time after its last child goes (3.5.3+).
    Container,
}

impl CreateMode {
    fn flags(self) -> i32 {
        match self {
            CreateMode::Persistent => 0,
            CreateMode::Ephemeral => 1,
            CreateMode::PersistentSequential => 2,
            CreateMode::EphemeralSequential => 3,
            CreateMode::Container => 4,
        }
    }

    fn opcode(self) -> i32 {
        match self {
            CreateMode::Container => op::CREATE_CONTAINER,
            _ => op::CREATE2,
        }
    }
}

/// Which watches a `removeWatches` removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WatchKind {
    /// Child watches (getChildren).
    Children,
    /// Data watches (getData, and exists on an existing node).
    Data,
    /// Exists watches on a node that did not exist. The server files them
    /// with the data watches.
    Exist,
}

/// One operation of a multi.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultiOp {
    /// Fails the multi unless `path` has this data `version` (-1: exists).
    Check {
        /// Node path.
        path: String,
        /// Expected version, -1 for any.
        version: i32,
    },
    /// Creates a node.
    Create {
        /// Node path.
        path: String,
        /// Data.
        data: Vec<u8>,
        /// ACL.
        acl: Vec<Acl>,
        /// Mode.
        mode: CreateMode,
    },
    /// Deletes a node (`version` -1: any).
    Delete {
        /// Node path.
        path: String,
        /// Expected version, -1 for any.
        version: i32,
    },
    /// Sets a node's data (`version` -1: any).
    SetData {
        /// Node path.
        path: String,
        /// Data.
        data: Vec<u8>,
        /// Expected version, -1 for any.
        version: i32,
    },
}

impl MultiOp {
    fn path_mut(&mut self) -> &mut String {
        match self {
            MultiOp::Check { path, .. }
            | MultiOp::Create { path, .. }
            | MultiOp::Delete { path, .. }
            | MultiOp::SetData { path, .. } => path,
        }
    }
}

/// The result of one operation of a multi that succeeded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultiResult {
    /// A check passed.
    Check,
    /// A node was created: its path, and its `Stat` when the server sent one
    /// (some releases answer a create inside a multi without it).
    Create {
        /// The created path (with the sequence number).
        path: String,
        /// The new node's metadata, if sent.
        stat: Option<Stat>,
    },
    /// A node was deleted.
    Delete,
    /// Data was set.
    SetData {
        /// The node's new metadata.
        stat: Stat,
    },
}

/// A request the session can send (paths already include any chroot).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// create2 / createContainer.
    Create {
        /// Node path.
        path: String,
        /// Data.
        data: Vec<u8>,
        /// ACL.
        acl: Vec<Acl>,
        /// Mode.
        mode: CreateMode,
    },
    /// delete.
    Delete {
        /// Node path.
        path: String,
        /// Expected version, -1 for any.
        version: i32,
    },
    /// exists.
    Exists {
        /// Node path.
        path: String,
        /// Leave a watch.
        watch: bool,
    },
    /// getData.
    GetData {
        /// Node path.
        path: String,
        /// Leave a watch.
        watch: bool,
    },
    /// setData.
    SetData {
        /// Node path.
        path: String,
        /// Data.
        data: Vec<u8>,
        /// Expected version, -1 for any.
        version: i32,
    },
    /// getChildren.
    GetChildren {
        /// Node path.
        path: String,
        /// Leave a watch.
        watch: bool,
    },
    /// getChildren2 (children and the parent's `Stat`).
    GetChildren2 {
        /// Node path.
        path: String,
        /// Leave a watch.
        watch: bool,
    },
    /// sync.
    Sync {
        /// Node path.
        path: String,
    },
    /// multi.
    Multi(Vec<MultiOp>),
    /// removeWatches.
    RemoveWatches {
        /// Node path.
        path: String,
        /// Which watches.
        kind: WatchKind,
    },
    /// whoAmI (3.7+).
    WhoAmI,
    /// closeSession.
    CloseSession,
    /// ping.
    Ping,
    /// addAuth.
    Auth {
        /// Scheme, e.g. `digest`.
        scheme: String,
        /// Credentials, e.g. `user:password`.
        auth: Vec<u8>,
    },
    /// One SASL token.
    Sasl {
        /// The token.
        token: Vec<u8>,
    },
    /// setWatches: re-registration after a reconnect.
    SetWatches {
        /// Zxid the client has seen: the server fires watches for changes after it.
        relative_zxid: i64,
        /// Data watch paths.
        data: Vec<String>,
        /// Exists watch paths.
        exist: Vec<String>,
        /// Child watch paths.
        child: Vec<String>,
    },
}

impl Request {
    /// The operation code.
    pub fn opcode(&self) -> i32 {
        match self {
            Request::Create { mode, .. } => mode.opcode(),
            Request::Delete { .. } => op::DELETE,
            Request::Exists { .. } => op::EXISTS,
            Request::GetData { .. } => op::GET_DATA,
            Request::SetData { .. } => op::SET_DATA,
            Request::GetChildren { .. } => op::GET_CHILDREN,
            Request::GetChildren2 { .. } => op::GET_CHILDREN2,
            Request::Sync { .. } => op::SYNC,
            Request::Multi(_) => op::MULTI,
            Request::RemoveWatches { .. } => op::REMOVE_WATCHES,
            Request::WhoAmI => op::WHO_AM_I,
            Request::CloseSession => op::CLOSE_SESSION,
            Request::Ping => op::PING,
            Request::Auth { .. } => op::AUTH,
            Request::Sasl { .. } => op::SASL,
            Request::SetWatches { .. } => op::SET_WATCHES,
        }
    }

    /// Every node path the request names (none for pings, auth, ...).
    pub fn paths_mut(&mut self) -> Vec<&mut String> {
        match self {
            Request::Create { path, .. }
            | Request::Delete { path, .. }
            | Request::Exists { path, .. }
            | Request::GetData { path, .. }
            | Request::SetData { path, .. }
            | Request::GetChildren { path, .. }
            | Request::GetChildren2 { path, .. }
            | Request::Sync { path }
            | Request::RemoveWatches { path, .. } => vec![path],
            Request::Multi(ops) => ops.iter_mut().map(MultiOp::path_mut).collect(),
            Request::SetWatches { data, exist, child, .. } => {
                data.iter_mut().chain(exist.iter_mut()).chain(child.iter_mut()).collect()
            },
            Request::WhoAmI | Request::CloseSession | Request::Ping | Request::Auth { .. } | Request::Sasl { .. } => {
                Vec::new()
            },
        }
    }

    /// Prefixes every path with `chroot` (empty: no change).
    pub fn chroot(&mut self, chroot: &str) {
        if chroot.is_empty() {
            return;
        }
        for p in self.paths_mut() {
            *p = with_chroot(chroot, p);
        }
    }

    /// Appends the frame body, `RequestHeader{xid, type}` then the record.
    pub fn encode(&self, xid: i32, out: &mut Vec<u8>) {
        let mut w = Writer::new(out);
        w.i32(xid).i32(self.opcode());
        match self {
            Request::Create { path, data, acl, mode } => {
                w.string(path).buffer(data);
                Acl::encode_all(acl, &mut w);
                w.i32(mode.flags());
            },
            Request::Delete { path, version } => {
                w.string(path).i32(*version);
            },
            Request::Exists { path, watch }
            | Request::GetData { path, watch }
            | Request::GetChildren { path, watch }
            | Request::GetChildren2 { path, watch } => {
                w.string(path).bool(*watch);
            },
            Request::SetData { path, data, version } => {
                w.string(path).buffer(data).i32(*version);
            },
            Request::Sync { path } => {
                w.string(path);
            },
            Request::Multi(ops) => {
                for o in ops {
                    match o {
                        MultiOp::Check { path, version } => {
                            w.i32(op::CHECK).bool(false).i32(-1).string(path).i32(*version);
                        },
                        MultiOp::Create { path, data, acl, mode } => {
                            w.i32(mode.opcode()).bool(false).i32(-1).string(path).buffer(data);
                            Acl::encode_all(acl, &mut w);
                            w.i32(mode.flags());
                        },
                        MultiOp::Delete { path, version } => {
                            w.i32(op::DELETE).bool(false).i32(-1).string(path).i32(*version);
                        },
                        MultiOp::SetData { path, data, version } => {
                            w.i32(op::SET_DATA).bool(false).i32(-1).string(path).buffer(data).i32(*version);
                        },
                    }
                }
                w.i32(-1).bool(true).i32(-1);
            },
            Request::RemoveWatches { path, kind } => {
                let t = match kind {
                    WatchKind::Children => 1,
                    WatchKind::Data | WatchKind::Exist => 2,
                };
                w.string(path).i32(t);
            },
            Request::WhoAmI | Request::CloseSession | Request::Ping => {},
            Request::Auth { scheme, auth } => {
                w.i32(0).string(scheme).buffer(auth);
            },
            Request::Sasl { token } => {
                w.buffer(token);
            },
            Request::SetWatches { relative_zxid, data, exist, child } => {
                w.i64(*relative_zxid).strings(data).strings(exist).strings(child);
            },
        }
    }
}

/// `path` under `chroot` (`/` is the chroot itself; an empty chroot
/// changes nothing).
pub fn with_chroot(chroot: &str, path: &str) -> String {
    match (chroot, path) {
        ("", _) => path.to_string(),
        (_, "/") => chroot.to_string(),
        _ => format!("{chroot}{path}"),
    }
}

/// A reply's body, decoded according to the request it answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// No body (delete, setWatches, removeWatches, closeSession, auth, ping).
    Empty,
    /// create2 / createContainer.
    Created {
        /// The created path (chroot included).
        path: String,
        /// The new node's metadata.
        stat: Stat,
    },
    /// exists, setData.
    Stat(Stat),
    /// getData.
    Data {
        /// The node's data.
        data: Vec<u8>,
        /// Its metadata.
        stat: Stat,
    },
    /// getChildren. The names are handed on (to the lock protocol, which
    /// keeps them while it looks) without a copy.
    Children(Arc<[String]>),
    /// getChildren2.
    Children2 {
        /// Child names (as for `Children`).
        children: Arc<[String]>,
        /// The parent's metadata.
        stat: Stat,
    },
    /// sync: the path.
    Path(String),
    /// multi: one result per operation, or the index and code of the
    /// operation that failed (none of them took effect).
    Multi(Result<Vec<MultiResult>, (usize, Code)>),
    /// whoAmI: (scheme, user) pairs.
    WhoAmI(Vec<(String, String)>),
    /// A SASL token from the server.
    Sasl(Vec<u8>),
}

impl Response {
    /// Decodes the body of a successful reply to a request of type `opcode`.
    pub fn decode(opcode: i32, body: &[u8]) -> Result<Response, DecodeError> {
        let mut r = Reader::new(body);
        let resp = match opcode {
            op::CREATE2 | op::CREATE_CONTAINER => {
                let path = r.string("Create2Response.path")?;
                Response::Created { path, stat: Stat::decode(&mut r)? }
            },
            op::EXISTS | op::SET_DATA => Response::Stat(Stat::decode(&mut r)?),
            op::GET_DATA => {
                let data = r.bytes("GetDataResponse.data")?;
                Response::Data { data, stat: Stat::decode(&mut r)? }
            },
            op::GET_CHILDREN => Response::Children(r.strings("GetChildrenResponse.children")?.into()),
            op::GET_CHILDREN2 => {
                let children = r.strings("GetChildren2Response.children")?.into();
                Response::Children2 { children, stat: Stat::decode(&mut r)? }
            },
            op::SYNC => Response::Path(r.string("SyncResponse.path")?),
            op::MULTI => Response::Multi(decode_multi(&mut r)?),
            op::WHO_AM_I => {
                let n = r.count("WhoAmIResponse.clientInfo", 8)?;
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    let scheme = r.string("ClientInfo.authScheme")?;
                    v.push((scheme, r.string("ClientInfo.user")?));
                }
                Response::WhoAmI(v)
            },
            op::SASL => Response::Sasl(r.bytes("SetSASLResponse.token")?),
            _ => Response::Empty,
        };
        // Old servers may pad; trailing bytes of a known record are not
        // trusted either way: refuse them so a desynchronised stream is
        // noticed at once.
        r.finish("reply")?;
        Ok(resp)
    }
}

fn decode_multi(r: &mut Reader<'_>) -> Result<Result<Vec<MultiResult>, (usize, Code)>, DecodeError> {
    let mut results = Vec::new();
    let mut failed: Option<(usize, Code)> = None;
    let mut first_error: Option<(usize, Code)> = None;
    let mut i = 0usize;
    loop {
        let t = r.i32("MultiHeader.type")?;
        let done = r.bool("MultiHeader.done")?;
        let err = r.i32("MultiHeader.err")?;
        if done {
            break;
        }
        match t {
            op::CREATE => results.push(MultiResult::Create { path: r.string("CreateResponse.path")?, stat: None }),
            op::CREATE2 | op::CREATE_CONTAINER => {
                let path = r.string("Create2Response.path")?;
                results.push(MultiResult::Create { path, stat: Some(Stat::decode(r)?) })
            },
            op::DELETE => results.push(MultiResult::Delete),
            op::CHECK => results.push(MultiResult::Check),
            op::SET_DATA => results.push(MultiResult::SetData { stat: Stat::decode(r)? }),
            op::ERROR => {
                let code = r.i32("ErrorResponse.err")?;
                if first_error.is_none() {
                    first_error = Code::from_wire(code).map(|c| (i, c));
                }
                if failed.is_none() {
                    if let Some(c) = Code::from_wire(code).filter(|c| *c != Code::RuntimeInconsistency) {
                        failed = Some((i, c));
                    }
                }
            },
            other => {
                return Err(DecodeError { what: "MultiHeader.type", why: format!("unknown type {other} (err {err})") })
            },
        }
        i += 1;
    }
    Ok(match failed.or(first_error) {
        Some(f) => Err(f),
        None => Ok(results),
    })
}

/// The first frame a client sends on a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectRequest {
    /// Largest zxid the client has seen (0 for a new session).
    pub last_zxid_seen: i64,
    /// Session timeout asked for, ms.
    pub timeout_ms: i32,
    /// Session to re-attach to, 0 for a new one.
    pub session_id: i64,
    /// The session's password (16 zero bytes for a new one).
    pub password: Vec<u8>,
    /// Accept a read-only server.
    pub read_only: bool,
}

impl ConnectRequest {
    /// Appends the frame body (no request header).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = Writer::new(out);
        w.i32(0).i64(self.last_zxid_seen).i32(self.timeout_ms).i64(self.session_id);
        w.buffer(&self.password).bool(self.read_only);
    }
}

/// The server's answer to a [`ConnectRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectResponse {
    /// Protocol version (0).
    pub protocol_version: i32,
    /// Negotiated session timeout, ms; 0 or less: the session expired.
    pub timeout_ms: i32,
    /// Session id (0 when expired).
    pub session_id: i64,
    /// Session password.
    pub password: Vec<u8>,
    /// The server is read-only.
    pub read_only: bool,
}

impl ConnectResponse {
    /// Decodes the frame body. The trailing read-only byte is optional
    /// (servers before 3.4 omit it).
    pub fn decode(body: &[u8]) -> Result<ConnectResponse, DecodeError> {
        let mut r = Reader::new(body);
        let protocol_version = r.i32("ConnectResponse.protocolVersion")?;
        let timeout_ms = r.i32("ConnectResponse.timeOut")?;
        let session_id = r.i64("ConnectResponse.sessionId")?;
        let password = r.bytes("ConnectResponse.passwd")?;
        let read_only = if r.remaining() > 0 { r.bool("ConnectResponse.readOnly")? } else { false };
        r.finish("ConnectResponse")?;
        Ok(ConnectResponse { protocol_version, timeout_ms, session_id, password, read_only })
    }

    /// Appends the frame body (for tests and fake servers).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = Writer::new(out);
        w.i32(self.protocol_version).i32(self.timeout_ms).i64(self.session_id);
        w.buffer(&self.password).bool(self.read_only);
    }
}

/// A reply's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplyHeader {
    /// The request's xid, or a special xid.
    pub xid: i32,
    /// The zxid of the server's state when it answered.
    pub zxid: i64,
    /// Error code, 0 for success.
    pub err: i32,
}

impl ReplyHeader {
    /// Bytes a header takes.
    pub const WIRE_LEN: usize = 16;

    /// Splits a reply frame into header and body.
    pub fn split(frame: &[u8]) -> Result<(ReplyHeader, &[u8]), DecodeError> {
        let mut r = Reader::new(frame);
        let h = ReplyHeader {
            xid: r.i32("ReplyHeader.xid")?,
            zxid: r.i64("ReplyHeader.zxid")?,
            err: r.i32("ReplyHeader.err")?,
        };
        Ok((h, &frame[ReplyHeader::WIRE_LEN..]))
    }

    /// Writes a header (for tests and fake servers).
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out).i32(self.xid).i64(self.zxid).i32(self.err);
    }
}

/// A watch notification's body (ZooKeeper's `WatcherEvent`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatcherEvent {
    /// What happened.
    pub kind: EventType,
    /// The connection state number as sent (3: connected).
    pub state: i32,
    /// The node's path (chroot included).
    pub path: String,
}

impl WatcherEvent {
    /// Decodes the body of a notification (xid -1).
    pub fn decode(body: &[u8]) -> Result<WatcherEvent, DecodeError> {
        let mut r = Reader::new(body);
        let t = r.i32("WatcherEvent.type")?;
        let kind = EventType::from_wire(t)
            .ok_or_else(|| DecodeError { what: "WatcherEvent.type", why: format!("unknown type {t}") })?;
        let state = r.i32("WatcherEvent.state")?;
        let path = r.string("WatcherEvent.path")?;
        r.finish("WatcherEvent")?;
        Ok(WatcherEvent { kind, state, path })
    }
}

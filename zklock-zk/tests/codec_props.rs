//! Properties of the wire format (issue 31, item 4), with proptest:
//!
//! * every request record encodes, and a server-side decoder written here
//!   from the jute definitions reads back what was meant;
//! * the records that have both directions in the crate (`Stat`,
//!   `ConnectResponse`, `ReplyHeader`) and every reply body of every opcode
//!   zklock uses round-trip; `WatcherEvent` decodes what a server writes;
//! * every decoder (`Response::decode` per opcode, `ConnectResponse::decode`,
//!   `WatcherEvent::decode`, `ReplyHeader::split`, `frame::next_frame`) on
//!   random bytes and on mutated valid encodings returns `Ok` or an error,
//!   never panics, and allocates nothing out of proportion to its input:
//!   decoded lengths are at most the input's, and the largest single
//!   allocation during a decode (measured by the counting allocator below)
//!   is at most a small multiple of the input's length.
//!
//! Cases: `PROPTEST_CASES` when set, else 1024 per property (about two
//! seconds in all). `make fuzz` runs the same decoders under libFuzzer for longer
//! (`zklock-zk/fuzz`).

#![allow(clippy::unwrap_used)] // tests assert by panicking

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use proptest::prelude::*;

use zklock_zk::codec::frame::{next_frame, write_frame, FrameError};
use zklock_zk::codec::jute::{DecodeError, Reader, Writer};
use zklock_zk::codec::ops::{op, EventType};
use zklock_zk::codec::records::{
    Acl, ConnectResponse, CreateMode, MultiOp, MultiResult, ReplyHeader, Request, Response, Stat, WatchKind,
    WatcherEvent,
};
use zklock_zk::Code;

// ---- the largest allocation of this thread, for the allocation bound ----

struct Counting;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = LARGEST.try_with(|m| {
        if size > m.get() {
            m.set(size);
        }
    });
}

// SAFETY: every call is passed on to the system allocator unchanged; the
// bookkeeping touches only a const-initialised thread-local `Cell`, which
// neither allocates nor registers a destructor.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result with the largest single allocation it
/// made on this thread.
fn largest_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|m| m.set(0));
    let r = f();
    (r, LARGEST.with(|m| m.get()))
}

/// The bound on one allocation while decoding `input`: proportional to
/// the input. A decoded vector holds at most one element per 4 input bytes
/// (a string's length prefix; 9 for a multi's result), an element takes at
/// most `size_of::<MultiResult>()` bytes (the largest), and a vector grown
/// by pushing may have twice the room it uses, at least 4 elements. A count
/// taken from the wire without that check would ask for up to 2^31
/// elements.
fn allocation_bound(input: &[u8]) -> usize {
    let element = std::mem::size_of::<MultiResult>().max(2 * std::mem::size_of::<String>());
    2 * element * input.len() / 4 + 4 * element + 256
}

fn config() -> ProptestConfig {
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = 1024;
    }
    c
}

/// Every opcode a reply can answer (`op::ALL`).
const OPCODES: &[i32] = op::ALL;

// ---- strategies ---------------------------------------------------------

fn path() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-zA-Z0-9_.-]{1,8}", 0..4).prop_map(|v| format!("/{}", v.join("/")))
}

fn text() -> impl Strategy<Value = String> {
    // Any Unicode, NUL included: the codec carries what it is given.
    any::<String>().prop_map(|s| s.chars().take(12).collect())
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..48)
}

fn stat() -> impl Strategy<Value = Stat> {
    (any::<[i64; 6]>(), any::<[i32; 5]>()).prop_map(|(l, i)| Stat {
        czxid: l[0],
        mzxid: l[1],
        ctime: l[2],
        mtime: l[3],
        ephemeral_owner: l[4],
        pzxid: l[5],
        version: i[0],
        cversion: i[1],
        aversion: i[2],
        data_length: i[3],
        num_children: i[4],
    })
}

fn mode() -> impl Strategy<Value = CreateMode> {
    prop_oneof![
        Just(CreateMode::Persistent),
        Just(CreateMode::Ephemeral),
        Just(CreateMode::PersistentSequential),
        Just(CreateMode::EphemeralSequential),
        Just(CreateMode::Container),
    ]
}

fn acl() -> impl Strategy<Value = Vec<Acl>> {
    prop::collection::vec(
        (any::<i32>(), text(), text()).prop_map(|(perms, scheme, id)| Acl { perms, scheme, id }),
        0..3,
    )
}

fn multi_op() -> impl Strategy<Value = MultiOp> {
    prop_oneof![
        (path(), any::<i32>()).prop_map(|(path, version)| MultiOp::Check { path, version }),
        (path(), bytes(), acl(), mode()).prop_map(|(path, data, acl, mode)| MultiOp::Create { path, data, acl, mode }),
        (path(), any::<i32>()).prop_map(|(path, version)| MultiOp::Delete { path, version }),
        (path(), bytes(), any::<i32>()).prop_map(|(path, data, version)| MultiOp::SetData { path, data, version }),
    ]
}

fn watch_kind() -> impl Strategy<Value = WatchKind> {
    prop_oneof![Just(WatchKind::Children), Just(WatchKind::Data), Just(WatchKind::Exist)]
}

fn paths() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(path(), 0..4)
}

fn request() -> impl Strategy<Value = Request> {
    prop_oneof![
        (path(), bytes(), acl(), mode()).prop_map(|(path, data, acl, mode)| Request::Create { path, data, acl, mode }),
        (path(), any::<i32>()).prop_map(|(path, version)| Request::Delete { path, version }),
        (path(), any::<bool>()).prop_map(|(path, watch)| Request::Exists { path, watch }),
        (path(), any::<bool>()).prop_map(|(path, watch)| Request::GetData { path, watch }),
        (path(), bytes(), any::<i32>()).prop_map(|(path, data, version)| Request::SetData { path, data, version }),
        (path(), any::<bool>()).prop_map(|(path, watch)| Request::GetChildren { path, watch }),
        (path(), any::<bool>()).prop_map(|(path, watch)| Request::GetChildren2 { path, watch }),
        path().prop_map(|path| Request::Sync { path }),
        prop::collection::vec(multi_op(), 0..4).prop_map(Request::Multi),
        (path(), watch_kind()).prop_map(|(path, kind)| Request::RemoveWatches { path, kind }),
        Just(Request::WhoAmI),
        Just(Request::CloseSession),
        Just(Request::Ping),
        (text(), bytes()).prop_map(|(scheme, auth)| Request::Auth { scheme, auth }),
        bytes().prop_map(|token| Request::Sasl { token }),
        (any::<i64>(), paths(), paths(), paths()).prop_map(|(relative_zxid, data, exist, child)| Request::SetWatches {
            relative_zxid,
            data,
            exist,
            child
        }),
    ]
}

fn multi_result() -> impl Strategy<Value = MultiResult> {
    prop_oneof![
        Just(MultiResult::Check),
        (path(), prop::option::of(stat())).prop_map(|(path, stat)| MultiResult::Create { path, stat }),
        Just(MultiResult::Delete),
        stat().prop_map(|stat| MultiResult::SetData { stat }),
    ]
}

/// A reply body and the opcode of the request it answers, with the
/// response it must decode to.
fn reply() -> impl Strategy<Value = (i32, Response)> {
    prop_oneof![
        (path(), stat()).prop_map(|(path, stat)| (op::CREATE2, Response::Created { path, stat })),
        (path(), stat()).prop_map(|(path, stat)| (op::CREATE_CONTAINER, Response::Created { path, stat })),
        stat().prop_map(|s| (op::EXISTS, Response::Stat(s))),
        stat().prop_map(|s| (op::SET_DATA, Response::Stat(s))),
        (bytes(), stat()).prop_map(|(data, stat)| (op::GET_DATA, Response::Data { data, stat })),
        prop::collection::vec(text(), 0..5).prop_map(|c| (op::GET_CHILDREN, Response::Children(c.into()))),
        (prop::collection::vec(text(), 0..5), stat())
            .prop_map(|(children, stat)| (op::GET_CHILDREN2, Response::Children2 { children: children.into(), stat })),
        path().prop_map(|p| (op::SYNC, Response::Path(p))),
        prop::collection::vec(multi_result(), 0..4).prop_map(|r| (op::MULTI, Response::Multi(Ok(r)))),
        prop::collection::vec((text(), text()), 0..4).prop_map(|v| (op::WHO_AM_I, Response::WhoAmI(v))),
        bytes().prop_map(|t| (op::SASL, Response::Sasl(t))),
        prop_oneof![
            Just(op::DELETE),
            Just(op::REMOVE_WATCHES),
            Just(op::CLOSE_SESSION),
            Just(op::PING),
            Just(op::AUTH),
            Just(op::SET_WATCHES)
        ]
        .prop_map(|o| (o, Response::Empty)),
    ]
}

// ---- the server's side of the wire, written here from the jute records --

fn create_mode(flags: i32) -> CreateMode {
    match flags {
        0 => CreateMode::Persistent,
        1 => CreateMode::Ephemeral,
        2 => CreateMode::PersistentSequential,
        3 => CreateMode::EphemeralSequential,
        4 => CreateMode::Container,
        f => panic!("unknown create flags {f}"),
    }
}

fn read_acl(r: &mut Reader<'_>) -> Result<Vec<Acl>, DecodeError> {
    let n = r.count("acl", 12)?;
    (0..n).map(|_| Ok(Acl { perms: r.i32("perms")?, scheme: r.string("scheme")?, id: r.string("id")? })).collect()
}

/// Reads a request frame body as a server does: header, then the record
/// its type names.
fn server_decode(body: &[u8]) -> Result<(i32, Request), DecodeError> {
    let mut r = Reader::new(body);
    let xid = r.i32("xid")?;
    let t = r.i32("type")?;
    let req = match t {
        op::CREATE2 | op::CREATE_CONTAINER => {
            let path = r.string("path")?;
            let data = r.bytes("data")?;
            let acl = read_acl(&mut r)?;
            let mode = create_mode(r.i32("flags")?);
            assert_eq!(t == op::CREATE_CONTAINER, mode == CreateMode::Container, "opcode {t} with mode {mode:?}");
            Request::Create { path, data, acl, mode }
        },
        op::DELETE => Request::Delete { path: r.string("path")?, version: r.i32("version")? },
        op::EXISTS => Request::Exists { path: r.string("path")?, watch: r.bool("watch")? },
        op::GET_DATA => Request::GetData { path: r.string("path")?, watch: r.bool("watch")? },
        op::SET_DATA => {
            Request::SetData { path: r.string("path")?, data: r.bytes("data")?, version: r.i32("version")? }
        },
        op::GET_CHILDREN => Request::GetChildren { path: r.string("path")?, watch: r.bool("watch")? },
        op::GET_CHILDREN2 => Request::GetChildren2 { path: r.string("path")?, watch: r.bool("watch")? },
        op::SYNC => Request::Sync { path: r.string("path")? },
        op::MULTI => {
            let mut ops = Vec::new();
            loop {
                let t = r.i32("MultiHeader.type")?;
                let done = r.bool("MultiHeader.done")?;
                let err = r.i32("MultiHeader.err")?;
                assert_eq!(err, -1, "a request's MultiHeader.err");
                if done {
                    assert_eq!(t, -1, "the end's type");
                    break;
                }
                ops.push(match t {
                    op::CHECK => MultiOp::Check { path: r.string("path")?, version: r.i32("version")? },
                    op::CREATE2 | op::CREATE_CONTAINER => {
                        let path = r.string("path")?;
                        let data = r.bytes("data")?;
                        let acl = read_acl(&mut r)?;
                        let mode = create_mode(r.i32("flags")?);
                        assert_eq!(t == op::CREATE_CONTAINER, mode == CreateMode::Container);
                        MultiOp::Create { path, data, acl, mode }
                    },
                    op::DELETE => MultiOp::Delete { path: r.string("path")?, version: r.i32("version")? },
                    op::SET_DATA => {
                        MultiOp::SetData { path: r.string("path")?, data: r.bytes("data")?, version: r.i32("version")? }
                    },
                    other => panic!("multi op type {other}"),
                });
            }
            Request::Multi(ops)
        },
        op::REMOVE_WATCHES => {
            let path = r.string("path")?;
            let kind = match r.i32("type")? {
                1 => WatchKind::Children,
                2 => WatchKind::Data,
                k => panic!("watcher type {k}"),
            };
            Request::RemoveWatches { path, kind }
        },
        op::WHO_AM_I => Request::WhoAmI,
        op::CLOSE_SESSION => Request::CloseSession,
        op::PING => Request::Ping,
        op::AUTH => {
            assert_eq!(r.i32("AuthPacket.type")?, 0);
            Request::Auth { scheme: r.string("scheme")?, auth: r.bytes("auth")? }
        },
        op::SASL => Request::Sasl { token: r.bytes("token")? },
        op::SET_WATCHES => Request::SetWatches {
            relative_zxid: r.i64("relativeZxid")?,
            data: r.strings("dataWatches")?,
            exist: r.strings("existWatches")?,
            child: r.strings("childWatches")?,
        },
        other => panic!("unknown request type {other}"),
    };
    r.finish("request")?;
    Ok((xid, req))
}

/// What the server reads for a request: the same, except that exists
/// watches are removed as data watches (the server files them together).
fn as_the_server_reads(req: &Request) -> Request {
    match req {
        Request::RemoveWatches { path, kind: WatchKind::Exist } => {
            Request::RemoveWatches { path: path.clone(), kind: WatchKind::Data }
        },
        other => other.clone(),
    }
}

/// A reply body as a server writes it.
fn server_encode(resp: &Response, out: &mut Vec<u8>) {
    let mut w = Writer::new(out);
    match resp {
        Response::Empty => {},
        Response::Created { path, stat } => {
            w.string(path);
            stat.encode(&mut w);
        },
        Response::Stat(s) => s.encode(&mut w),
        Response::Data { data, stat } => {
            w.buffer(data);
            stat.encode(&mut w);
        },
        Response::Children(c) => {
            w.strings(c);
        },
        Response::Children2 { children, stat } => {
            w.strings(children);
            stat.encode(&mut w);
        },
        Response::Path(p) => {
            w.string(p);
        },
        Response::Multi(Ok(results)) => {
            for res in results {
                match res {
                    MultiResult::Check => {
                        w.i32(op::CHECK).bool(false).i32(0);
                    },
                    MultiResult::Create { path, stat: None } => {
                        w.i32(op::CREATE).bool(false).i32(0).string(path);
                    },
                    MultiResult::Create { path, stat: Some(s) } => {
                        w.i32(op::CREATE2).bool(false).i32(0).string(path);
                        s.encode(&mut w);
                    },
                    MultiResult::Delete => {
                        w.i32(op::DELETE).bool(false).i32(0);
                    },
                    MultiResult::SetData { stat } => {
                        w.i32(op::SET_DATA).bool(false).i32(0);
                        stat.encode(&mut w);
                    },
                }
            }
            w.i32(-1).bool(true).i32(-1);
        },
        Response::Multi(Err(_)) => unreachable!("failed multis are made by failed_multi"),
        Response::WhoAmI(v) => {
            w.count(v.len());
            for (scheme, user) in v {
                w.string(scheme).string(user);
            }
        },
        Response::Sasl(t) => {
            w.buffer(t);
        },
    }
}

/// A failed multi's body as a server writes it: one error result per
/// operation (0 before the failing one, its code, -2 after).
fn failed_multi(n: usize, at: usize, code: i32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out);
    for i in 0..n {
        let err = if i < at {
            0
        } else if i == at {
            code
        } else {
            -2
        };
        w.i32(op::ERROR).bool(false).i32(err).i32(err);
    }
    w.i32(-1).bool(true).i32(-1);
    out
}

fn event_type() -> impl Strategy<Value = (i32, EventType)> {
    prop_oneof![
        Just((-1, EventType::Session)),
        Just((1, EventType::NodeCreated)),
        Just((2, EventType::NodeDeleted)),
        Just((3, EventType::NodeDataChanged)),
        Just((4, EventType::NodeChildrenChanged)),
        Just((5, EventType::DataWatchRemoved)),
        Just((6, EventType::ChildWatchRemoved)),
    ]
}

// ---- mutations ------------------------------------------------------------

/// A change to a valid encoding.
#[derive(Clone, Debug)]
enum Mutation {
    /// Flip bits of one byte.
    Xor(usize, u8),
    /// Cut the input at this point.
    Truncate(usize),
    /// Put bytes in at this point.
    Insert(usize, Vec<u8>),
    /// Drop a byte.
    Remove(usize),
    /// Overwrite 4 bytes with a hostile big-endian integer (a length or
    /// count far too large, negative, -1, 0).
    Int(usize, i32),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(i, b)| Mutation::Xor(i, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..8)).prop_map(|(i, v)| Mutation::Insert(i, v)),
        any::<usize>().prop_map(Mutation::Remove),
        (
            any::<usize>(),
            prop_oneof![
                Just(i32::MAX),
                Just(i32::MIN),
                Just(-1),
                Just(-2),
                Just(0),
                Just(0x000f_ffff),
                Just(0x0010_0000),
                any::<i32>()
            ]
        )
            .prop_map(|(i, v)| Mutation::Int(i, v)),
    ]
}

fn mutate(mut v: Vec<u8>, ms: &[Mutation]) -> Vec<u8> {
    for m in ms {
        let at = |i: usize, len: usize| if len == 0 { 0 } else { i % (len + 1) };
        match m {
            Mutation::Xor(i, b) if !v.is_empty() => {
                let n = v.len();
                v[i % n] ^= b;
            },
            Mutation::Truncate(i) => v.truncate(at(*i, v.len())),
            Mutation::Insert(i, bytes) => {
                let p = at(*i, v.len());
                v.splice(p..p, bytes.iter().copied());
            },
            Mutation::Remove(i) if !v.is_empty() => {
                let n = v.len();
                v.remove(i % n);
            },
            Mutation::Int(i, x) if v.len() >= 4 => {
                let p = i % (v.len() - 3);
                v[p..p + 4].copy_from_slice(&x.to_be_bytes());
            },
            _ => {},
        }
    }
    v
}

// ---- the checks every decoder must pass on any input --------------------

/// Sum of the lengths of everything variable-sized in a response.
fn decoded_len(r: &Response) -> usize {
    match r {
        Response::Empty | Response::Stat(_) => 0,
        Response::Created { path, .. } | Response::Path(path) => path.len(),
        Response::Data { data, .. } | Response::Sasl(data) => data.len(),
        Response::Children(c) | Response::Children2 { children: c, .. } => {
            c.len() + c.iter().map(String::len).sum::<usize>()
        },
        Response::Multi(Ok(v)) => {
            v.len()
                + v.iter().map(|x| if let MultiResult::Create { path, .. } = x { path.len() } else { 0 }).sum::<usize>()
        },
        Response::Multi(Err(_)) => 0,
        Response::WhoAmI(v) => v.len() + v.iter().map(|(a, b)| a.len() + b.len()).sum::<usize>(),
    }
}

fn check_response(opcode: i32, body: &[u8]) -> Result<(), TestCaseError> {
    let (r, largest) = largest_allocation(|| Response::decode(opcode, body));
    prop_assert!(
        largest <= allocation_bound(body),
        "opcode {opcode}: {largest} bytes at once for {} input",
        body.len()
    );
    match r {
        Ok(resp) => {
            prop_assert!(decoded_len(&resp) <= body.len(), "opcode {opcode}: {resp:?} from {} bytes", body.len());
            if let Response::Children(c) | Response::Children2 { children: c, .. } = &resp {
                // Reserved from the count before the names were read, the
                // vector the names are taken from is bounded by
                // `allocation_bound` above; what is kept is exactly the names.
                prop_assert!(c.len() <= body.len());
            }
        },
        Err(e) => prop_assert!(!e.why.is_empty() && !e.what.is_empty()),
    }
    Ok(())
}

fn check_connect_response(body: &[u8]) -> Result<(), TestCaseError> {
    let (r, largest) = largest_allocation(|| ConnectResponse::decode(body));
    prop_assert!(largest <= allocation_bound(body));
    if let Ok(c) = r {
        prop_assert!(c.password.len() <= body.len());
        // Everything was read: 36 bytes and the password, or 37 with the
        // read-only byte.
        prop_assert!(body.len() == 20 + c.password.len() || body.len() == 21 + c.password.len());
    }
    Ok(())
}

fn check_watcher_event(body: &[u8]) -> Result<(), TestCaseError> {
    let (r, largest) = largest_allocation(|| WatcherEvent::decode(body));
    prop_assert!(largest <= allocation_bound(body));
    if let Ok(e) = r {
        prop_assert_eq!(body.len(), 12 + e.path.len());
    }
    Ok(())
}

fn check_reply_header(frame: &[u8]) -> Result<(), TestCaseError> {
    match ReplyHeader::split(frame) {
        Ok((h, body)) => {
            prop_assert!(frame.len() >= ReplyHeader::WIRE_LEN);
            prop_assert_eq!(body, &frame[ReplyHeader::WIRE_LEN..]);
            let mut again = Vec::new();
            h.encode(&mut again);
            prop_assert_eq!(&again[..], &frame[..ReplyHeader::WIRE_LEN]);
        },
        Err(_) => prop_assert!(frame.len() < ReplyHeader::WIRE_LEN),
    }
    Ok(())
}

fn check_next_frame(buf: &[u8], max: usize) -> Result<(), TestCaseError> {
    match next_frame(buf, max) {
        Ok(None) => {
            if buf.len() >= 4 {
                let len = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
                prop_assert!(len >= 0 && (len as usize) <= max && buf.len() - 4 < len as usize);
            }
        },
        Ok(Some(n)) => {
            prop_assert!(n <= max && 4 + n <= buf.len());
            prop_assert_eq!(n as i32, i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]));
        },
        Err(e) => {
            let FrameError { len, max: m } = e;
            prop_assert_eq!(m, max);
            prop_assert!(len < 0 || len as usize > max);
            prop_assert!(!e.to_string().is_empty());
        },
    }
    Ok(())
}

// ---- properties -----------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    #[test]
    fn requests_encode_as_the_server_reads_them(req in request(), xid in any::<i32>()) {
        let mut out = Vec::new();
        let n = write_frame(&mut out, |b| req.encode(xid, b));
        prop_assert_eq!(next_frame(&out, usize::MAX), Ok(Some(n)));
        let (x, back) = server_decode(&out[4..]).expect("the server reads it");
        prop_assert_eq!(x, xid);
        prop_assert_eq!(back.opcode(), req.opcode());
        prop_assert_eq!(back, as_the_server_reads(&req));
    }

    #[test]
    fn chroot_prefixes_every_path(req in request(), root in "/[a-z]{1,6}") {
        let mut with = req.clone();
        with.chroot(&root);
        let mut out = Vec::new();
        with.encode(1, &mut out);
        let (_, back) = server_decode(&out).expect("the server reads it");
        let paths: Vec<String> = match back {
            Request::Create { path, .. } | Request::Delete { path, .. } | Request::Exists { path, .. }
            | Request::GetData { path, .. } | Request::SetData { path, .. } | Request::GetChildren { path, .. }
            | Request::GetChildren2 { path, .. } | Request::Sync { path } | Request::RemoveWatches { path, .. } => {
                vec![path]
            },
            Request::Multi(ops) => ops
                .into_iter()
                .map(|o| match o {
                    MultiOp::Check { path, .. } | MultiOp::Create { path, .. } | MultiOp::Delete { path, .. }
                    | MultiOp::SetData { path, .. } => path,
                })
                .collect(),
            Request::SetWatches { data, exist, child, .. } => data.into_iter().chain(exist).chain(child).collect(),
            _ => Vec::new(),
        };
        for p in paths {
            prop_assert!(p == root || p.starts_with(&format!("{root}/")), "{p} under {root}");
        }
    }

    #[test]
    fn stat_round_trips(s in stat()) {
        let mut out = Vec::new();
        s.encode(&mut Writer::new(&mut out));
        prop_assert_eq!(out.len(), Stat::WIRE_LEN);
        let mut r = Reader::new(&out);
        prop_assert_eq!(Stat::decode(&mut r).expect("decodes"), s);
        prop_assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn connect_response_round_trips(
        timeout_ms in any::<i32>(), session_id in any::<i64>(), password in bytes(), read_only in any::<bool>(),
        old in any::<bool>(),
    ) {
        let c = ConnectResponse { protocol_version: 0, timeout_ms, session_id, password, read_only };
        let mut out = Vec::new();
        c.encode(&mut out);
        if old {
            // A server before 3.4 sends no read-only byte.
            out.pop();
            let back = ConnectResponse::decode(&out).expect("decodes");
            prop_assert_eq!(back, ConnectResponse { read_only: false, ..c });
        } else {
            prop_assert_eq!(ConnectResponse::decode(&out).expect("decodes"), c);
        }
    }

    #[test]
    fn reply_header_round_trips(xid in any::<i32>(), zxid in any::<i64>(), err in any::<i32>(), body in bytes()) {
        let h = ReplyHeader { xid, zxid, err };
        let mut out = Vec::new();
        h.encode(&mut out);
        prop_assert_eq!(out.len(), ReplyHeader::WIRE_LEN);
        out.extend_from_slice(&body);
        let (back, rest) = ReplyHeader::split(&out).expect("splits");
        prop_assert_eq!(back, h);
        prop_assert_eq!(rest, &body[..]);
    }

    #[test]
    fn watcher_events_decode_as_a_server_writes_them((t, kind) in event_type(), state in any::<i32>(), path in text()) {
        let mut out = Vec::new();
        Writer::new(&mut out).i32(t).i32(state).string(&path);
        prop_assert_eq!(WatcherEvent::decode(&out).expect("decodes"), WatcherEvent { kind, state, path });
    }

    #[test]
    fn every_reply_round_trips((opcode, resp) in reply()) {
        let mut body = Vec::new();
        server_encode(&resp, &mut body);
        prop_assert_eq!(Response::decode(opcode, &body).expect("decodes"), resp);
    }

    #[test]
    fn a_failed_multi_names_the_operation_that_failed(n in 1usize..6, at in 0usize..6, code in -130i32..-3) {
        let at = at % n;
        let body = failed_multi(n, at, code);
        let want = Code::from_wire(code).expect("an error code");
        prop_assert_eq!(Response::decode(op::MULTI, &body).expect("decodes"), Response::Multi(Err((at, want))));
    }

    #[test]
    fn decoders_survive_random_bytes(body in prop::collection::vec(any::<u8>(), 0..200)) {
        for &o in OPCODES {
            check_response(o, &body)?;
        }
        check_connect_response(&body)?;
        check_watcher_event(&body)?;
        check_reply_header(&body)?;
        for max in [0, 16, 0xfffff, usize::MAX] {
            check_next_frame(&body, max)?;
        }
    }

    #[test]
    fn decoders_survive_mutated_replies((_opcode, resp) in reply(), ms in prop::collection::vec(mutation(), 1..4)) {
        let mut body = Vec::new();
        server_encode(&resp, &mut body);
        let body = mutate(body, &ms);
        // The body read as the reply to every opcode, not only its own: a
        // desynchronised stream pairs replies with the wrong requests.
        for &o in OPCODES {
            check_response(o, &body)?;
        }
    }

    #[test]
    fn decoders_survive_mutated_failed_multis(n in 1usize..6, at in 0usize..6, code in any::<i32>(),
                                               ms in prop::collection::vec(mutation(), 1..4)) {
        let body = mutate(failed_multi(n, at % n, code), &ms);
        check_response(op::MULTI, &body)?;
    }

    #[test]
    fn decoders_survive_mutated_connect_responses(
        timeout_ms in any::<i32>(), session_id in any::<i64>(), password in bytes(),
        ms in prop::collection::vec(mutation(), 1..4),
    ) {
        let mut out = Vec::new();
        ConnectResponse { protocol_version: 0, timeout_ms, session_id, password, read_only: false }.encode(&mut out);
        check_connect_response(&mutate(out, &ms))?;
    }

    #[test]
    fn decoders_survive_mutated_watcher_events(
        (t, _) in event_type(), state in any::<i32>(), path in text(),
        ms in prop::collection::vec(mutation(), 1..4),
    ) {
        let mut out = Vec::new();
        Writer::new(&mut out).i32(t).i32(state).string(&path);
        check_watcher_event(&mutate(out, &ms))?;
    }

    #[test]
    fn frames_survive_mutation((_opcode, resp) in reply(), xid in any::<i32>(), max in 0usize..300,
                               ms in prop::collection::vec(mutation(), 1..4)) {
        let mut out = Vec::new();
        write_frame(&mut out, |b| {
            ReplyHeader { xid, zxid: 1, err: 0 }.encode(b);
            server_encode(&resp, b);
        });
        let framed = mutate(out, &ms);
        check_next_frame(&framed, max)?;
        check_next_frame(&framed, usize::MAX)?;
        if let Ok(Some(n)) = next_frame(&framed, usize::MAX) {
            check_reply_header(&framed[4..4 + n])?;
        }
    }
}

#[test]
fn a_hostile_count_allocates_nothing() {
    // Counts far beyond the input, for every vector a reply can hold.
    for (opcode, body) in [
        (op::GET_CHILDREN, i32::MAX.to_be_bytes().to_vec()),
        (op::GET_CHILDREN2, 0x0100_0000i32.to_be_bytes().to_vec()),
        (op::WHO_AM_I, 0x00ff_ffffi32.to_be_bytes().to_vec()),
        (op::GET_DATA, i32::MAX.to_be_bytes().to_vec()),
        (op::SASL, 0x7fff_fff0i32.to_be_bytes().to_vec()),
    ] {
        let (r, largest) = largest_allocation(|| Response::decode(opcode, &body));
        assert!(r.is_err(), "opcode {opcode}: {r:?}");
        assert!(largest <= allocation_bound(&body), "opcode {opcode}: {largest} bytes at once");
    }
}

#[test]
fn the_allocation_meter_sees_allocations() {
    // The bound above is only worth something if the meter counts.
    let (v, largest) = largest_allocation(|| Vec::<u8>::with_capacity(4096));
    assert!(largest >= 4096, "{largest}");
    drop(v);
}

//! A ZooKeeper-aware TCP proxy with switchable faults.
//!
//! Threading model: one accept thread per proxy, and per proxied connection
//! two pump threads (client→server and server→client) using blocking sockets
//! that share the connection through an `Arc`. The sockets are closed when the
//! last pump exits. Control calls (blackhole, heal, drop, ...) can come from
//! any thread at any time; closing a connection wakes its pumps with
//! `shutdown()` and waits for them to exit.
//!
//! Framing: a ZooKeeper connection is a sequence of frames, each a 4-byte
//! big-endian length followed by the body. The pumps forward whole frames as
//! soon as they are complete (which lets them look at request types and reply
//! xids), and fall back to forwarding raw chunks for anything that is not
//! ZooKeeper framing (e.g. four-letter words). A raw proxy
//! ([`Proxy::start_raw`], e.g. for server-to-server links) forwards raw
//! chunks from the start.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::util::{is_timeout, set_linger_zero};

/// The xid of a watch notification from the server.
const NOTIFICATION_XID: i32 = -1;
/// Frames longer than this are taken as "not ZooKeeper framing".
const MAX_FRAME: usize = 64 * 1024 * 1024;
/// Socket read/write timeout of the pumps: how often a blocked pump re-checks
/// whether its connection is being closed (data is forwarded immediately
/// regardless).
const PUMP_TICK: Duration = Duration::from_millis(200);
/// Timeout for connecting to the upstream server.
const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a raw proxy retries an upstream that refuses connections before
/// resetting the client, and the pause between attempts.
const RAW_REFUSED_RETRY: Duration = Duration::from_secs(1);
const RAW_REFUSED_PAUSE: Duration = Duration::from_millis(50);
/// How long closing a connection waits for its pumps to exit.
const CLOSE_WAIT: Duration = Duration::from_secs(3);

/// ZooKeeper request types whose reply `drop_next_create_reply` drops (and
/// whose reply starts `hold_replies_from_next_create`): create, create2,
/// createContainer, createTTL, and multi (a transaction that creates, such
/// as a read/write lock's downgrade; its path is not parsed, so it matches
/// only an arm without a path prefix).
const CREATE_TYPES: [i32; 5] = [1, 15, 19, 21, 14];

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An armed "drop the next create reply" fault.
#[derive(Clone, Debug, Default)]
struct DropArm {
    /// Only creates whose path starts with this prefix match.
    prefix: Option<String>,
    /// Forward the create request twice (the server creates two nodes).
    duplicate: bool,
    /// Switch the proxy to blackhole mode when the reply is dropped, so the
    /// client cannot reconnect until `heal`.
    then_blackhole: bool,
}

impl DropArm {
    fn matches(&self, path: Option<&[u8]>) -> bool {
        match (&self.prefix, path) {
            (None, _) => true,
            (Some(p), Some(path)) => path.starts_with(p.as_bytes()),
            (Some(_), None) => false,
        }
    }
}

/// Shared between the proxies of a [`ProxyGroup`] (one arm for the group).
type SharedArm = Arc<Mutex<Option<DropArm>>>;

/// Completion tracking of a connection's pumps; outlives the connection.
#[derive(Debug, Default)]
struct Done {
    alive: Mutex<usize>,
    cv: Condvar,
}

impl Done {
    fn wait(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut alive = lock(&self.alive);
        while *alive > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            alive = self.cv.wait_timeout(alive, left).unwrap_or_else(PoisonError::into_inner).0;
        }
    }
}

#[derive(Debug)]
struct Conn {
    id: u64,
    client: TcpStream,
    /// `None` for connections accepted while blackholed (never forwarded).
    server: Option<TcpStream>,
    blackholed: AtomicBool,
    closing: AtomicBool,
    /// Not ZooKeeper framing: forward raw chunks.
    raw: AtomicBool,
    /// xid of a forwarded create whose reply must be dropped, and whether
    /// to blackhole the proxy when it is.
    drop_xid: Mutex<Option<(i32, bool)>>,
    /// xid of a forwarded create whose reply starts holding replies.
    hold_xid: Mutex<Option<(i32, ())>>,
    /// `Some` while server→client frames are held: the held frames (with
    /// their length prefix), oldest first. Checked and filled by the
    /// server→client pump, emptied by `release_held_replies`, under this
    /// lock, so that frames reach the client in order.
    held: Mutex<Option<Vec<Vec<u8>>>>,
    done: Arc<Done>,
}

impl Conn {
    /// Closes the connection abruptly: the client gets a RST (SO_LINGER 0,
    /// no FIN: its socket is only shut down for reading, which wakes our
    /// pump, and the RST goes out when the last pump closes it). Idempotent.
    fn abort(&self) {
        if self.closing.swap(true, Ordering::SeqCst) {
            return;
        }
        let _ = set_linger_zero(&self.client);
        let _ = self.client.shutdown(Shutdown::Read);
        if let Some(s) = &self.server {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

#[derive(Debug, Default)]
struct Registry {
    next_id: u64,
    conns: HashMap<u64, Arc<Conn>>,
    threads: Vec<JoinHandle<()>>,
}

#[derive(Debug)]
struct Inner {
    upstream: SocketAddr,
    /// Forward raw chunks on every connection (no frame parsing).
    raw: bool,
    stop: AtomicBool,
    /// Blackhole mode; written only with `registry` locked.
    blackhole: AtomicBool,
    arm: SharedArm,
    dropped: AtomicU64,
    /// Watch notifications (server frames with xid -1) forwarded to clients.
    notifications: AtomicU64,
    /// Requests forwarded to the server, by ZooKeeper op code.
    requests: Mutex<BTreeMap<i32, u64>>,
    /// Added to every byte's way, in each direction (0: none).
    one_way_delay: Duration,
    /// Print every request and notification to stderr
    /// (`ZKLOCK_PROXY_TRACE=1`, for finding where requests go).
    trace: bool,
    /// One-shot: hold the next request of this type for this long.
    delay: Mutex<Option<(i32, Duration)>>,
    delayed: AtomicU64,
    /// Requests `delay_next_request` took to hold (counted as the hold
    /// begins).
    delaying: AtomicU64,
    /// Every connection's connect answer is held this long before it is
    /// forwarded (0: not held): a server alive but slow to answer new
    /// connections.
    connect_answer_delay: Mutex<Duration>,
    /// One-shot: hold replies from the reply to the next create on.
    hold_armed: AtomicBool,
    /// New connections are reset as soon as they are accepted.
    resetting: AtomicBool,
    /// One-shot: the next connection is forwarded (even while `resetting`)
    /// until its connect answer reached the client, then reset.
    answer_then_reset: AtomicBool,
    /// Connect answers forwarded and then reset (`answer_then_reset`).
    answers_reset: AtomicU64,
    /// Every connect is answered "expired" by the proxy itself
    /// (`answer_expired`), counted in `expired_answers`.
    answer_expired: AtomicBool,
    expired_answers: AtomicU64,
    registry: Mutex<Registry>,
}

impl Inner {
    /// Removes the connections selected by `pred` from the registry, aborts
    /// them and waits for their pumps to exit (so their sockets are closed).
    fn close_where(&self, pred: impl Fn(&Conn) -> bool) {
        let victims: Vec<Arc<Conn>> = {
            let mut reg = lock(&self.registry);
            let ids: Vec<u64> = reg.conns.iter().filter(|(_, c)| pred(c)).map(|(id, _)| *id).collect();
            ids.iter().filter_map(|id| reg.conns.remove(id)).collect()
        };
        let dones: Vec<Arc<Done>> = victims
            .iter()
            .map(|c| {
                c.abort();
                Arc::clone(&c.done)
            })
            .collect();
        drop(victims);
        for d in dones {
            d.wait(CLOSE_WAIT);
        }
    }

    /// The open connections, at this instant.
    fn conns(&self) -> Vec<Arc<Conn>> {
        lock(&self.registry).conns.values().cloned().collect()
    }

    /// Registers a connection and starts its pumps.
    fn add_conn(self: &Arc<Self>, client: TcpStream, server: Option<TcpStream>) {
        let pumps = if server.is_some() { 2 } else { 1 };
        let done = Arc::new(Done { alive: Mutex::new(pumps), cv: Condvar::new() });
        let mut reg = lock(&self.registry);
        if server.is_none() && !self.blackhole.load(Ordering::SeqCst) {
            // Accepted during a blackhole that has been healed since: heal
            // closes blackholed connections, so close this one too.
            let _ = set_linger_zero(&client);
            return;
        }
        reg.next_id += 1;
        let conn = Arc::new(Conn {
            id: reg.next_id,
            client,
            blackholed: AtomicBool::new(server.is_none() || self.blackhole.load(Ordering::SeqCst)),
            server,
            closing: AtomicBool::new(false),
            raw: AtomicBool::new(self.raw),
            drop_xid: Mutex::new(None),
            hold_xid: Mutex::new(None),
            held: Mutex::new(None),
            done,
        });
        reg.conns.insert(conn.id, Arc::clone(&conn));
        reg.threads.retain(|t| !t.is_finished());
        let dirs: &[Dir] = if pumps == 2 { &[Dir::ToServer, Dir::ToClient] } else { &[Dir::ToServer] };
        for &dir in dirs {
            let inner = Arc::clone(self);
            let c = Arc::clone(&conn);
            let spawned = thread::Builder::new()
                .name(format!("zk-proxy-{}-{:?}", conn.id, dir))
                .spawn(move || pump(inner, c, dir));
            match spawned {
                Ok(h) => reg.threads.push(h),
                Err(_) => {
                    // Cannot forward: close the connection; account for the
                    // pump that will never run.
                    conn.abort();
                    reg.conns.remove(&conn.id);
                    let mut alive = lock(&conn.done.alive);
                    *alive -= 1;
                    conn.done.cv.notify_all();
                },
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    /// Client → server (requests).
    ToServer,
    /// Server → client (replies).
    ToClient,
}

/// Pump thread body: forward, then account for our exit.
fn pump(inner: Arc<Inner>, conn: Arc<Conn>, dir: Dir) {
    run_pump(&inner, &conn, dir);
    let id = conn.id;
    let done = Arc::clone(&conn.done);
    drop(conn);
    let last = {
        let mut alive = lock(&done.alive);
        *alive = alive.saturating_sub(1);
        *alive == 0
    };
    if last {
        // Drops the registry's reference, the last one: closes the sockets.
        let removed = lock(&inner.registry).conns.remove(&id);
        drop(removed);
    }
    done.cv.notify_all();
}

/// What processing the buffered bytes decided.
enum Step {
    Continue,
    /// The connection was aborted (reply dropped or write failure).
    Stop,
}

/// Where a pump reads: the socket itself, or (with a one-way delay) a
/// thread that reads it as bytes come and hands each chunk on to be
/// forwarded `delay` after it came, so pipelined requests keep their
/// spacing and each waits only its own delay.
enum Source<'a> {
    Direct(&'a TcpStream),
    Delayed(Receiver<(Instant, io::Result<Vec<u8>>)>),
}

impl Source<'_> {
    fn new<'a>(inner: &Inner, conn: &Arc<Conn>, dir: Dir, src: &'a TcpStream) -> io::Result<Source<'a>> {
        let delay = inner.one_way_delay;
        if delay.is_zero() {
            return Ok(Source::Direct(src));
        }
        let (tx, rx) = mpsc::channel();
        let conn = Arc::clone(conn);
        thread::Builder::new().name(format!("zk-proxy-{}-{dir:?}-delay", conn.id)).spawn(move || {
            let src = match dir {
                Dir::ToServer => &conn.client,
                Dir::ToClient => conn.server.as_ref().unwrap_or(&conn.client),
            };
            let mut chunk = vec![0u8; 64 * 1024];
            while !conn.closing.load(Ordering::SeqCst) {
                let got = match (&*src).read(&mut chunk) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted || is_timeout(&e) => continue,
                    Ok(n) => Ok(chunk[..n].to_vec()),
                    Err(e) => Err(e),
                };
                let end = !matches!(&got, Ok(b) if !b.is_empty());
                if tx.send((Instant::now() + delay, got)).is_err() || end {
                    return;
                }
            }
        })?;
        Ok(Source::Delayed(rx))
    }

    /// Like `Read::read` (a timeout error every [`PUMP_TICK`] without data).
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Source::Direct(s) => (&**s).read(buf),
            Source::Delayed(rx) => match rx.recv_timeout(PUMP_TICK) {
                Ok((due, got)) => {
                    thread::sleep(due.saturating_duration_since(Instant::now()));
                    let bytes = got?;
                    buf[..bytes.len()].copy_from_slice(&bytes);
                    Ok(bytes.len())
                },
                Err(RecvTimeoutError::Timeout) => Err(io::ErrorKind::TimedOut.into()),
                Err(RecvTimeoutError::Disconnected) => Err(io::ErrorKind::ConnectionAborted.into()),
            },
        }
    }
}

fn run_pump(inner: &Inner, conn: &Arc<Conn>, dir: Dir) {
    let (src, dst) = match dir {
        Dir::ToServer => (&conn.client, conn.server.as_ref()),
        Dir::ToClient => match &conn.server {
            Some(s) => (s, Some(&conn.client)),
            None => return,
        },
    };
    let _ = src.set_read_timeout(Some(PUMP_TICK));
    if let Some(d) = dst {
        let _ = d.set_write_timeout(Some(PUMP_TICK));
    }
    let Ok(mut source) = Source::new(inner, conn, dir, src) else {
        conn.abort();
        return;
    };
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    let mut first_frame = true;
    loop {
        if conn.closing.load(Ordering::SeqCst) {
            return;
        }
        let n = match source.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted || is_timeout(&e) => continue,
            Err(_) => {
                // Reset by the peer or similar: pass the abrupt close on.
                conn.abort();
                return;
            },
        };
        if conn.closing.load(Ordering::SeqCst) {
            return;
        }
        let blackholed = conn.blackholed.load(Ordering::SeqCst);
        if n == 0 {
            // EOF.
            if blackholed {
                // A silent peer never tells the client the server left; if
                // the client left, there is nothing more to hide.
                if dir == Dir::ToServer {
                    conn.abort();
                }
                return;
            }
            if let Some(d) = dst {
                if !buf.is_empty() && write_fully(conn, d, &buf).is_err() {
                    conn.abort();
                    return;
                }
                // Half-close, as the peer did.
                let _ = d.shutdown(Shutdown::Write);
            }
            return;
        }
        if blackholed {
            buf.clear();
            continue;
        }
        let Some(d) = dst else {
            continue;
        };
        buf.extend_from_slice(&chunk[..n]);
        if let Step::Stop = forward_frames(inner, conn, dir, d, &mut buf, &mut first_frame) {
            return;
        }
    }
}

/// A connect answer saying the session is expired, framed: protocol
/// version 0, timeout 0, session id 0, a 16-byte zero password, not
/// read-only (as ZooKeeper's server writes it).
fn expired_connect_answer() -> Vec<u8> {
    let mut body = Vec::with_capacity(37);
    body.extend_from_slice(&0i32.to_be_bytes());
    body.extend_from_slice(&0i32.to_be_bytes());
    body.extend_from_slice(&0i64.to_be_bytes());
    body.extend_from_slice(&16i32.to_be_bytes());
    body.extend_from_slice(&[0; 16]);
    body.push(0);
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&i32::try_from(body.len()).unwrap_or(0).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

/// Forwards every complete frame in `buf` (or everything, in raw mode),
/// applying the drop-create-reply fault. Leaves an incomplete frame in `buf`.
fn forward_frames(
    inner: &Inner,
    conn: &Conn,
    dir: Dir,
    dst: &TcpStream,
    buf: &mut Vec<u8>,
    first_frame: &mut bool,
) -> Step {
    let mut end = 0; // bytes of `buf` cleared for forwarding
    let mut drop_at = None; // offset of a reply frame to drop
    loop {
        if conn.raw.load(Ordering::SeqCst) {
            end = buf.len();
            break;
        }
        let rest = &buf[end..];
        if rest.len() < 4 {
            break;
        }
        let len = i32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let Ok(len) = usize::try_from(len) else {
            conn.raw.store(true, Ordering::SeqCst);
            continue;
        };
        if len > MAX_FRAME {
            conn.raw.store(true, Ordering::SeqCst);
            continue;
        }
        if rest.len() < 4 + len {
            break;
        }
        let body = &rest[4..4 + len];
        if *first_frame {
            // Connect request / response: never inspected.
            *first_frame = false;
            if dir == Dir::ToServer && inner.answer_expired.load(Ordering::SeqCst) {
                // Answered here, "expired", as a stale member does; the
                // server never sees it. Counted first (see below).
                inner.expired_answers.fetch_add(1, Ordering::SeqCst);
                let _ = write_fully(conn, &conn.client, &expired_connect_answer());
                // Then closed in order (FIN), as the server closes it.
                let _ = conn.client.shutdown(Shutdown::Write);
                conn.closing.store(true, Ordering::SeqCst);
                if let Some(s) = &conn.server {
                    let _ = s.shutdown(Shutdown::Both);
                }
                return Step::Stop;
            }
            if dir == Dir::ToClient {
                let pause = *lock(&inner.connect_answer_delay);
                thread::sleep(pause);
                if inner.answer_then_reset.swap(false, Ordering::SeqCst) {
                    // The answer reaches the client, then the reset. Counted
                    // first: a client that has the answer sees the count.
                    inner.answers_reset.fetch_add(1, Ordering::SeqCst);
                    let _ = write_fully(conn, dst, &buf[..end + 4 + len]);
                    conn.abort();
                    return Step::Stop;
                }
            }
        } else {
            match dir {
                Dir::ToServer => {
                    if let Some(op) = body.get(4..8).and_then(|b| b.try_into().ok()).map(i32::from_be_bytes) {
                        *lock(&inner.requests).entry(op).or_default() += 1;
                        if inner.trace {
                            let path = body.get(8..).and_then(parse_jute_string).unwrap_or_default();
                            eprintln!("proxy {} -> {} {}", conn.id, op_name(op), String::from_utf8_lossy(path));
                        }
                    }
                    if let Some(pause) = take_delay(inner, body) {
                        // Forward what came before, then hold this request
                        // (and so every later one: order is kept).
                        if write_fully(conn, dst, &buf[..end]).is_err() {
                            conn.abort();
                            return Step::Stop;
                        }
                        buf.drain(..end);
                        end = 0;
                        inner.delaying.fetch_add(1, Ordering::SeqCst);
                        thread::sleep(pause);
                        inner.delayed.fetch_add(1, Ordering::SeqCst);
                        continue;
                    }
                    if inspect_request(inner, conn, body) {
                        // Forward everything up to and including this frame,
                        // then the frame once more.
                        let frame_end = end + 4 + len;
                        let again = buf[end..frame_end].to_vec();
                        if write_fully(conn, dst, &buf[..frame_end]).is_err() || write_fully(conn, dst, &again).is_err()
                        {
                            conn.abort();
                            return Step::Stop;
                        }
                        buf.drain(..frame_end);
                        end = 0;
                        continue;
                    }
                },
                Dir::ToClient => {
                    let xid = reply_xid(body);
                    if xid == Some(NOTIFICATION_XID) {
                        inner.notifications.fetch_add(1, Ordering::SeqCst);
                        if inner.trace {
                            // Header (xid, zxid, err), then type, state, path.
                            let path = body.get(24..).and_then(parse_jute_string).unwrap_or_default();
                            let kind = body.get(16..20).map_or(0, |b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                            eprintln!("proxy {} <- notification {kind} {}", conn.id, String::from_utf8_lossy(path));
                        }
                    }
                    if let Some(then_blackhole) = xid.and_then(|x| take_reply_slot(&conn.drop_xid, x)) {
                        drop_at = Some(then_blackhole);
                        break;
                    }
                    let frame_end = end + 4 + len;
                    if hold_frame(conn, &buf[end..frame_end], xid) {
                        // Forward what came before, keep the held frame out.
                        if write_fully(conn, dst, &buf[..end]).is_err() {
                            conn.abort();
                            return Step::Stop;
                        }
                        buf.drain(..frame_end);
                        end = 0;
                        continue;
                    }
                },
            }
        }
        end += 4 + len;
    }
    if end > 0 {
        if write_fully(conn, dst, &buf[..end]).is_err() {
            conn.abort();
            return Step::Stop;
        }
        buf.drain(..end);
    }
    if let Some(then_blackhole) = drop_at {
        if then_blackhole {
            let _reg = lock(&inner.registry);
            inner.blackhole.store(true, Ordering::SeqCst);
        }
        inner.dropped.fetch_add(1, Ordering::SeqCst);
        conn.abort();
        return Step::Stop;
    }
    Step::Continue
}

/// If a delay is armed for the type of request `body`, disarms it and
/// returns the pause.
fn take_delay(inner: &Inner, body: &[u8]) -> Option<Duration> {
    let typ = i32::from_be_bytes(body.get(4..8)?.try_into().ok()?);
    let mut delay = lock(&inner.delay);
    match *delay {
        Some((t, pause)) if t == typ => {
            *delay = None;
            Some(pause)
        },
        _ => None,
    }
}

/// `(xid, path)` of a create request body (one of [`CREATE_TYPES`]; the path
/// is `None` if it cannot be parsed), `None` for any other request.
fn create_request(body: &[u8]) -> Option<(i32, Option<&[u8]>)> {
    let xid = i32::from_be_bytes(body.get(..4)?.try_into().ok()?);
    let typ = i32::from_be_bytes(body.get(4..8)?.try_into().ok()?);
    const MULTI: i32 = 14;
    CREATE_TYPES.contains(&typ).then(|| (xid, if typ == MULTI { None } else { parse_jute_string(&body[8..]) }))
}

/// Arms the connection's reply drop if `body` is a create request matching
/// the armed fault (consuming the arm), and its reply hold if one is armed.
/// True if the request must be sent twice.
fn inspect_request(inner: &Inner, conn: &Conn, body: &[u8]) -> bool {
    let Some((xid, path)) = create_request(body) else {
        return false;
    };
    // Set before the request is forwarded, so before its reply can come.
    if inner.hold_armed.swap(false, Ordering::SeqCst) {
        *lock(&conn.hold_xid) = Some((xid, ()));
    }
    let mut arm = lock(&inner.arm);
    match arm.take() {
        Some(a) if a.matches(path) => {
            // Set before the request is forwarded, so before its reply can come.
            *lock(&conn.drop_xid) = Some((xid, a.then_blackhole));
            a.duplicate
        },
        other => {
            *arm = other;
            false
        },
    }
}

fn parse_jute_string(b: &[u8]) -> Option<&[u8]> {
    let len = i32::from_be_bytes(b.get(..4)?.try_into().ok()?);
    let len = usize::try_from(len).ok()?;
    b.get(4..4 + len)
}

/// The xid of a server→client frame body (a reply, or -1 for a watch
/// notification).
fn reply_xid(body: &[u8]) -> Option<i32> {
    Some(i32::from_be_bytes(body.get(..4)?.try_into().ok()?))
}

/// If `slot` waits for the reply with this `xid` (a create's xid stored by
/// [`inspect_request`]), empties it and returns what was stored with it.
fn take_reply_slot<T>(slot: &Mutex<Option<(i32, T)>>, xid: i32) -> Option<T> {
    let mut want = lock(slot);
    if want.as_ref().is_some_and(|(x, _)| *x == xid) {
        want.take().map(|(_, v)| v)
    } else {
        None
    }
}

/// Queues `frame` (length prefix included, reply `xid`) on the
/// connection's held replies if it is holding, or if it is the reply that
/// starts holding. False if the frame must be forwarded.
fn hold_frame(conn: &Conn, frame: &[u8], xid: Option<i32>) -> bool {
    // Lock order: `held`, then `hold_xid` (as in `release_held_replies`).
    let mut held = lock(&conn.held);
    if held.is_none() && xid.is_some_and(|x| take_reply_slot(&conn.hold_xid, x).is_some()) {
        *held = Some(Vec::new());
    }
    match held.as_mut() {
        Some(frames) => {
            frames.push(frame.to_vec());
            true
        },
        None => false,
    }
}

/// ZooKeeper's name for request op code `op` (`ZooDefs.OpCode`).
fn op_name(op: i32) -> String {
    let name = match op {
        0 => "notification",
        1 => "create",
        2 => "delete",
        3 => "exists",
        4 => "getData",
        5 => "setData",
        6 => "getACL",
        7 => "setACL",
        8 => "getChildren",
        9 => "sync",
        11 => "ping",
        12 => "getChildren2",
        13 => "check",
        14 => "multi",
        15 => "create2",
        16 => "reconfig",
        17 => "checkWatches",
        18 => "removeWatches",
        19 => "createContainer",
        20 => "deleteContainer",
        21 => "createTTL",
        22 => "multiRead",
        100 => "auth",
        101 => "setWatches",
        102 => "sasl",
        103 => "getEphemerals",
        104 => "getAllChildrenNumber",
        105 => "setWatches2",
        106 => "addWatch",
        107 => "whoAmI",
        -10 => "createSession",
        -11 => "closeSession",
        other => return other.to_string(),
    };
    name.to_owned()
}

/// Writes all of `data`, retrying on write timeouts unless the connection is
/// being closed.
fn write_fully(conn: &Conn, dst: &TcpStream, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        if conn.closing.load(Ordering::SeqCst) {
            return Err(io::Error::new(io::ErrorKind::ConnectionAborted, "closing"));
        }
        match (&*dst).write(data) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "write zero")),
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted || is_timeout(&e) => {},
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Connects to the upstream server. A raw proxy retries a refused connection
/// for up to [`RAW_REFUSED_RETRY`]: its client has already been accepted, so
/// a refusal can only reach it as a reset once connected, which ZooKeeper's
/// peers treat as a failed session, not as a refused connection to retry
/// (e.g. a follower that connects to its new leader a moment before the
/// leader listens).
fn connect_upstream(inner: &Inner) -> io::Result<TcpStream> {
    let deadline = Instant::now() + RAW_REFUSED_RETRY;
    loop {
        match TcpStream::connect_timeout(&inner.upstream, UPSTREAM_CONNECT_TIMEOUT) {
            Err(e)
                if e.kind() == io::ErrorKind::ConnectionRefused
                    && inner.raw
                    && Instant::now() < deadline
                    && !inner.stop.load(Ordering::SeqCst) =>
            {
                thread::sleep(RAW_REFUSED_PAUSE);
            },
            result => return result,
        }
    }
}

fn accept_loop(inner: Arc<Inner>, listener: TcpListener) {
    loop {
        let accepted = listener.accept();
        if inner.stop.load(Ordering::SeqCst) {
            return;
        }
        let client = match accepted {
            Ok((s, _)) => s,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                // E.g. EMFILE; do not spin.
                thread::sleep(Duration::from_millis(20));
                continue;
            },
        };
        let _ = client.set_nodelay(true);
        if inner.blackhole.load(Ordering::SeqCst) {
            inner.add_conn(client, None);
            continue;
        }
        if inner.resetting.load(Ordering::SeqCst) && !inner.answer_then_reset.load(Ordering::SeqCst) {
            let _ = set_linger_zero(&client);
            drop(client);
            continue;
        }
        match connect_upstream(&inner) {
            Ok(server) => {
                let _ = server.set_nodelay(true);
                inner.add_conn(client, Some(server));
            },
            Err(_) => {
                // Upstream down: the client sees a reset, as if the server
                // had refused it.
                let _ = set_linger_zero(&client);
                drop(client);
            },
        }
    }
}

/// A TCP proxy on `127.0.0.1:<free port>` in front of one ZooKeeper server,
/// with faults that can be switched at any time.
///
/// Modes:
/// * pass (default): forwards both ways, frame by frame, with `TCP_NODELAY`.
/// * [`blackhole`](Proxy::blackhole): nothing is forwarded any more, in either
///   direction, on existing or new connections; bytes are read and discarded
///   and sockets stay open, so clients see a silent peer.
///   [`heal`](Proxy::heal) closes those connections and returns to pass.
///
/// One-shot faults: [`drop_connections`](Proxy::drop_connections),
/// [`drop_next_create_reply`](Proxy::drop_next_create_reply) (and its
/// variants), [`delay_next_request`](Proxy::delay_next_request) and
/// [`hold_replies_from_next_create`](Proxy::hold_replies_from_next_create).
///
/// A raw proxy ([`start_raw`](Proxy::start_raw)) forwards bytes as they come,
/// for traffic that is not ZooKeeper client framing (e.g. the links between
/// ensemble members); blackhole, heal and drop work the same, the faults
/// that look at requests and replies never fire.
///
/// # Threads
///
/// `Proxy` is `Send + Sync`; every method takes `&self` and may be called from
/// any thread. Internally: one accept thread and two threads per connection.
///
/// # Drop
///
/// Stops accepting, closes every connection (RST to clients) and joins all
/// its threads.
#[derive(Debug)]
pub struct Proxy {
    inner: Arc<Inner>,
    addr: SocketAddr,
    /// Clone of the listening socket, used to wake the accept thread.
    listener: TcpListener,
    accept: Option<JoinHandle<()>>,
}

impl Proxy {
    /// Starts a proxy listening on `127.0.0.1:0` that forwards to `upstream`.
    ///
    /// Each accepted client gets its own upstream connection (2 s connect
    /// timeout); if the upstream refuses, the client connection is reset.
    ///
    /// # Errors
    ///
    /// Binding the listener or spawning the accept thread fails.
    pub fn start(upstream: SocketAddr) -> io::Result<Proxy> {
        Proxy::start_with_arm(upstream, Arc::new(Mutex::new(None)), false, Duration::ZERO)
    }

    /// Starts a proxy like [`start`](Proxy::start) that also delays every
    /// byte by `one_way` in each direction: a round trip through it takes
    /// `2 x one_way` more, as on a network with that latency (for
    /// benchmarks: this kernel has no `netem`). Requests sent back to back
    /// stay back to back (each chunk waits only its own delay, measured
    /// from when it came), so pipelining keeps what it saves. Costs one more
    /// thread per direction and connection; sleeps are as precise as the
    /// scheduler (tens of microseconds late under load).
    ///
    /// # Errors
    ///
    /// Binding the listener or spawning the accept thread fails.
    pub fn start_with_latency(upstream: SocketAddr, one_way: Duration) -> io::Result<Proxy> {
        Proxy::start_with_arm(upstream, Arc::new(Mutex::new(None)), false, one_way)
    }

    /// Starts a raw proxy (a TCP relay) listening on `127.0.0.1:0` that
    /// forwards to `upstream`: bytes are forwarded as they come, without
    /// looking for ZooKeeper client framing, e.g. for the quorum and election
    /// links between ensemble members.
    ///
    /// [`blackhole`](Proxy::blackhole), [`heal`](Proxy::heal) and
    /// [`drop_connections`](Proxy::drop_connections) work as on
    /// [`start`](Proxy::start)'s proxy; the create-reply, delay and hold
    /// faults never fire (they need frames), and
    /// [`notifications`](Proxy::notifications) stays 0.
    ///
    /// When the upstream refuses a connection, the relay retries for up to
    /// 1 s before resetting its client (which it has already accepted): a
    /// server whose port opens a moment later, such as a newly elected
    /// leader, still gets the connection, as it would have with its peers'
    /// own retries of a refused connection. Meanwhile the proxy accepts no
    /// other connection.
    ///
    /// # Errors
    ///
    /// Binding the listener or spawning the accept thread fails.
    pub fn start_raw(upstream: SocketAddr) -> io::Result<Proxy> {
        Proxy::start_with_arm(upstream, Arc::new(Mutex::new(None)), true, Duration::ZERO)
    }

    fn start_with_arm(upstream: SocketAddr, arm: SharedArm, raw: bool, one_way_delay: Duration) -> io::Result<Proxy> {
        // A proxy on its own upstream's port (free while that server is
        // down) would forward to itself: take another port while holding it.
        let mut listener = TcpListener::bind("127.0.0.1:0")?;
        if listener.local_addr()? == upstream {
            listener = TcpListener::bind("127.0.0.1:0")?;
        }
        let addr = listener.local_addr()?;
        let inner = Arc::new(Inner {
            upstream,
            raw,
            stop: AtomicBool::new(false),
            blackhole: AtomicBool::new(false),
            arm,
            dropped: AtomicU64::new(0),
            notifications: AtomicU64::new(0),
            requests: Mutex::new(BTreeMap::new()),
            one_way_delay,
            trace: std::env::var_os("ZKLOCK_PROXY_TRACE").is_some_and(|v| v == "1"),
            delay: Mutex::new(None),
            delayed: AtomicU64::new(0),
            delaying: AtomicU64::new(0),
            connect_answer_delay: Mutex::new(Duration::ZERO),
            hold_armed: AtomicBool::new(false),
            resetting: AtomicBool::new(false),
            answer_then_reset: AtomicBool::new(false),
            answers_reset: AtomicU64::new(0),
            answer_expired: AtomicBool::new(false),
            expired_answers: AtomicU64::new(0),
            registry: Mutex::new(Registry::default()),
        });
        let accept_listener = listener.try_clone()?;
        let accept_inner = Arc::clone(&inner);
        let accept = thread::Builder::new()
            .name(format!("zk-proxy-accept-{}", addr.port()))
            .spawn(move || accept_loop(accept_inner, accept_listener))?;
        Ok(Proxy { inner, addr, listener, accept: Some(accept) })
    }

    /// The address clients should connect to (`127.0.0.1:port`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server this proxy forwards to.
    pub fn upstream(&self) -> SocketAddr {
        self.inner.upstream
    }

    /// Stops forwarding on every existing and new connection, in both
    /// directions. Bytes are read and discarded, sockets stay open, new
    /// connections are accepted but not connected upstream: clients see a
    /// silent peer (their reads time out). Idempotent.
    pub fn blackhole(&self) {
        let reg = lock(&self.inner.registry);
        self.inner.blackhole.store(true, Ordering::SeqCst);
        for c in reg.conns.values() {
            c.blackholed.store(true, Ordering::SeqCst);
        }
    }

    /// Ends a blackhole: closes (with RST) every connection that was
    /// blackholed and forwards new connections again. Returns once those
    /// connections are closed. Harmless when not blackholed.
    pub fn heal(&self) {
        {
            let _reg = lock(&self.inner.registry);
            self.inner.blackhole.store(false, Ordering::SeqCst);
        }
        self.inner.close_where(|c| c.blackholed.load(Ordering::SeqCst));
    }

    /// From now on every new connection is reset as soon as it is
    /// accepted (as a server that is not serving closes it: the client's
    /// connect goes unanswered, the attempt fails at once); connections
    /// already open go on. [`serve_again`](Proxy::serve_again) ends it.
    pub fn reset_new_connections(&self) {
        self.inner.resetting.store(true, Ordering::SeqCst);
    }

    /// Ends [`reset_new_connections`](Proxy::reset_new_connections).
    pub fn serve_again(&self) {
        self.inner.resetting.store(false, Ordering::SeqCst);
    }

    /// One-shot: the next connect answer (of any connection) reaches the
    /// client, and its connection is then reset both ways: the server
    /// renewed the session, and the handshake's next step (SASL,
    /// `addAuth`) fails. While armed, new connections are forwarded even
    /// while [`reset_new_connections`](Proxy::reset_new_connections) is on
    /// (a client makes one attempt at a time: it is that attempt's).
    /// Counted by [`connect_answers_reset`](Proxy::connect_answers_reset).
    pub fn answer_next_connect_then_reset(&self) {
        self.inner.answer_then_reset.store(true, Ordering::SeqCst);
    }

    /// How many connect answers were forwarded and then reset
    /// ([`answer_next_connect_then_reset`](Proxy::answer_next_connect_then_reset)).
    pub fn connect_answers_reset(&self) -> u64 {
        self.inner.answers_reset.load(Ordering::SeqCst)
    }

    /// From now on (until [`answer_expired_off`](Proxy::answer_expired_off))
    /// the proxy answers every new connection's connect itself, that the
    /// session is expired (timeout 0, session 0), and closes it: what a
    /// leader deposed while it stalled answers from its stale record
    /// (outside attack round 36, F3). The server never sees those
    /// connections; connections already open go on. Counted by
    /// [`expired_answers`](Proxy::expired_answers).
    pub fn answer_expired(&self) {
        self.inner.answer_expired.store(true, Ordering::SeqCst);
    }

    /// Ends [`answer_expired`](Proxy::answer_expired).
    pub fn answer_expired_off(&self) {
        self.inner.answer_expired.store(false, Ordering::SeqCst);
    }

    /// How many connects the proxy answered "expired" itself.
    pub fn expired_answers(&self) -> u64 {
        self.inner.expired_answers.load(Ordering::SeqCst)
    }

    /// Whether the proxy is in blackhole mode.
    pub fn is_blackholed(&self) -> bool {
        self.inner.blackhole.load(Ordering::SeqCst)
    }

    /// Closes every current connection now, on both sides (the client gets a
    /// RST thanks to `SO_LINGER 0`). Returns once they are closed. The mode
    /// is unchanged: new connections are accepted as usual.
    pub fn drop_connections(&self) {
        self.inner.close_where(|_| true);
    }

    /// Arms a one-shot fault: the next create request (types create 1,
    /// create2 15, createContainer 19, createTTL 21) on any connection is
    /// forwarded to the server, but when its reply (same xid) comes back the
    /// reply is dropped and the connection closed both ways. The server has
    /// executed the create; the client never learns the outcome.
    ///
    /// Arming again before it fired has no extra effect (one drop). A create
    /// inside a `multi` does not count. If the connection carrying the create
    /// closes before the reply, the fault is spent without a drop. Each
    /// dropped reply increments [`dropped_replies`](Proxy::dropped_replies).
    /// For a proxy inside a [`ProxyGroup`], the arm is shared by the group.
    pub fn drop_next_create_reply(&self) {
        self.arm(None, false, false);
    }

    /// Like [`drop_next_create_reply`](Proxy::drop_next_create_reply), and
    /// when the reply is dropped the proxy switches to blackhole mode (as if
    /// [`blackhole`](Proxy::blackhole) was called at that instant), so the
    /// client cannot reconnect until [`heal`](Proxy::heal): its session can
    /// expire while the create's outcome is unknown to it.
    pub fn drop_next_create_reply_then_blackhole(&self) {
        self.arm(None, false, true);
    }

    /// Like [`drop_next_create_reply`](Proxy::drop_next_create_reply), but
    /// the create request is forwarded twice, so the server creates two
    /// nodes (two sequential nodes with the same name prefix) and the client
    /// learns of neither: the "duplicate own nodes" case of a retried create.
    pub fn duplicate_next_create_and_drop_reply(&self) {
        self.arm(None, true, false);
    }

    fn arm(&self, prefix: Option<String>, duplicate: bool, then_blackhole: bool) {
        *lock(&self.inner.arm) = Some(DropArm { prefix, duplicate, then_blackhole });
    }

    /// Like [`drop_next_create_reply`](Proxy::drop_next_create_reply), but
    /// only a create whose path starts with `path_prefix` triggers it; other
    /// creates pass normally.
    pub fn drop_next_create_reply_matching(&self, path_prefix: &str) {
        self.arm(Some(path_prefix.to_string()), false, false);
    }

    /// Disarms a pending drop-create-reply fault; returns whether one was
    /// armed (and not yet triggered).
    pub fn disarm_drop_create_reply(&self) -> bool {
        lock(&self.inner.arm).take().is_some()
    }

    /// Whether a drop-create-reply fault is armed and not yet triggered.
    pub fn drop_create_reply_armed(&self) -> bool {
        lock(&self.inner.arm).is_some()
    }

    /// Arms a one-shot fault: the next client request of ZooKeeper op type
    /// `op_type` (e.g. 4 = getData, 8 = getChildren) on any connection is
    /// held for `pause` before it is forwarded; requests behind it on that
    /// connection wait too (order is kept). [`delayed`](Proxy::delayed)
    /// counts how many were held.
    pub fn delay_next_request(&self, op_type: i32, pause: Duration) {
        *lock(&self.inner.delay) = Some((op_type, pause));
    }

    /// From now on, every connection's connect answer (its first frame from
    /// the server) is held for `pause` before it is forwarded, as by a server
    /// that is alive but slow to answer new connections; `Duration::ZERO`
    /// stops it. Connections already past their connect are not affected.
    pub fn delay_connect_answers(&self, pause: Duration) {
        *lock(&self.inner.connect_answer_delay) = pause;
    }

    /// How many requests [`delay_next_request`](Proxy::delay_next_request)
    /// has held so far (counted once forwarded).
    pub fn delayed(&self) -> u64 {
        self.inner.delayed.load(Ordering::SeqCst)
    }

    /// How many requests [`delay_next_request`](Proxy::delay_next_request)
    /// has begun to hold (counted before the pause: one held now has not
    /// reached the server).
    pub fn delaying(&self) -> u64 {
        self.inner.delaying.load(Ordering::SeqCst)
    }

    /// Arms a one-shot fault: when the reply to the next create request
    /// (same request types and xid matching as
    /// [`drop_next_create_reply`](Proxy::drop_next_create_reply)) on any
    /// connection comes from the server, that reply and every later
    /// server→client frame of that connection (replies, notifications,
    /// pings) are held in the proxy, in order, instead of being forwarded,
    /// until [`release_held_replies`](Proxy::release_held_replies).
    /// Client→server traffic keeps flowing.
    ///
    /// The create is the next one sent after this call (a create inside a
    /// `multi` does not count); arming again before it is sent has no extra
    /// effect. [`held_replies`](Proxy::held_replies) tells when the create's
    /// reply is held. If the connection closes (client, server,
    /// [`heal`](Proxy::heal), [`drop_connections`](Proxy::drop_connections)),
    /// its held frames are discarded with it.
    pub fn hold_replies_from_next_create(&self) {
        self.inner.hold_armed.store(true, Ordering::SeqCst);
    }

    /// Starts holding now every server→client frame (replies,
    /// notifications, pings) of every open connection, in order, until
    /// [`release_held_replies`](Proxy::release_held_replies), as
    /// [`hold_replies_from_next_create`](Proxy::hold_replies_from_next_create)
    /// does from its create's reply. Client→server traffic keeps flowing;
    /// connections opened later are not held.
    pub fn hold_replies_now(&self) {
        for conn in self.inner.conns() {
            let mut held = lock(&conn.held);
            if held.is_none() {
                *held = Some(Vec::new());
            }
        }
    }

    /// How many server→client frames are held right now by
    /// [`hold_replies_from_next_create`](Proxy::hold_replies_from_next_create),
    /// over every open connection: 0 before the create's reply arrives, then
    /// at least 1 (the create's reply) until
    /// [`release_held_replies`](Proxy::release_held_replies).
    pub fn held_replies(&self) -> u64 {
        self.inner.conns().iter().map(|c| lock(&c.held).as_ref().map_or(0, |f| f.len() as u64)).sum()
    }

    /// Ends holding: writes every held frame to its client now, in order,
    /// and lets later frames flow normally; also disarms a
    /// [`hold_replies_from_next_create`](Proxy::hold_replies_from_next_create)
    /// that has not fired yet. Returns the number of frames written, once
    /// they are written (they are then in the client's socket buffer, even
    /// if the client process is stopped: the kernel buffers them).
    ///
    /// On a blackholed connection ([`blackhole`](Proxy::blackhole) was
    /// called before) nothing flows: its held frames are discarded, not
    /// written. A connection whose client cannot take the frames (write
    /// error) is closed like on any forwarding error.
    ///
    /// # Threads
    ///
    /// Blocking while writing; the connection's server→client pump waits
    /// meanwhile, so frames arriving from the server during the release are
    /// written after the held ones.
    pub fn release_held_replies(&self) -> u64 {
        self.inner.hold_armed.store(false, Ordering::SeqCst);
        let mut written = 0;
        for conn in self.inner.conns() {
            let mut held = lock(&conn.held);
            *lock(&conn.hold_xid) = None;
            let Some(frames) = held.take() else {
                continue;
            };
            if conn.blackholed.load(Ordering::SeqCst) {
                continue;
            }
            for frame in &frames {
                if write_fully(&conn, &conn.client, frame).is_err() {
                    conn.abort();
                    break;
                }
                written += 1;
            }
        }
        written
    }

    /// How many create replies this proxy has dropped so far.
    pub fn dropped_replies(&self) -> u64 {
        self.inner.dropped.load(Ordering::SeqCst)
    }

    /// How many watch notifications (server frames with xid -1) this proxy
    /// has forwarded to its clients so far, on every connection. Counts what
    /// the server really sent, e.g. to measure notifications per release.
    pub fn notifications(&self) -> u64 {
        self.inner.notifications.load(Ordering::SeqCst)
    }

    /// How many client connections this proxy has accepted so far.
    pub fn accepted(&self) -> u64 {
        lock(&self.inner.registry).next_id
    }

    /// The requests this proxy has forwarded to the server so far, on every
    /// connection, by op name (`create2`, `getChildren2`, `sync`, `ping`,
    /// ...: ZooKeeper's `ZooDefs.OpCode` names; an unknown code as its
    /// number). Connect requests are not counted. For counting what a
    /// recipe costs the server on the wire.
    pub fn requests(&self) -> BTreeMap<String, u64> {
        lock(&self.inner.requests).iter().map(|(op, n)| (op_name(*op), *n)).collect()
    }

    /// Number of currently open proxied connections (including blackholed
    /// ones).
    pub fn connections(&self) -> usize {
        lock(&self.inner.registry).conns.len()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.inner.stop.store(true, Ordering::SeqCst);
        // Wake the blocked accept(): shutdown of a listening socket makes it
        // fail on Linux; the connection is a fallback.
        // SAFETY: valid listening socket fd owned by `self.listener`.
        unsafe {
            libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR);
        }
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        self.inner.close_where(|_| true);
        let threads = std::mem::take(&mut lock(&self.inner.registry).threads);
        for t in threads {
            let _ = t.join();
        }
    }
}

/// One [`Proxy`] per member of a cluster, controlled together.
///
/// The drop-create-reply fault is shared: arming it on the group drops
/// exactly one reply, on whichever proxy sees the next create first.
///
/// # Threads
///
/// `Send + Sync`; all methods take `&self`.
///
/// # Drop
///
/// Drops every proxy (see [`Proxy`]'s drop).
#[derive(Debug)]
pub struct ProxyGroup {
    proxies: Vec<Proxy>,
    arm: SharedArm,
}

impl ProxyGroup {
    /// Starts one proxy per upstream address, in order.
    ///
    /// # Errors
    ///
    /// Any proxy failing to start (the ones already started are dropped).
    pub fn start(upstreams: &[SocketAddr]) -> io::Result<ProxyGroup> {
        let arm: SharedArm = Arc::new(Mutex::new(None));
        let proxies = upstreams
            .iter()
            .map(|&u| Proxy::start_with_arm(u, Arc::clone(&arm), false, Duration::ZERO))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(ProxyGroup { proxies, arm })
    }

    /// Starts one proxy per member of `cluster` (proxy `i` forwards to member
    /// `i`; it keeps working across `kill`/`restart` since ports are kept).
    ///
    /// # Errors
    ///
    /// As [`ProxyGroup::start`].
    pub fn for_cluster(cluster: &crate::Cluster) -> io::Result<ProxyGroup> {
        ProxyGroup::start(&cluster.client_addrs())
    }

    /// Number of proxies.
    pub fn len(&self) -> usize {
        self.proxies.len()
    }

    /// Whether the group has no proxy.
    pub fn is_empty(&self) -> bool {
        self.proxies.is_empty()
    }

    /// Proxy `i` (in front of member `i`), or `None` if out of range.
    pub fn proxy(&self, i: usize) -> Option<&Proxy> {
        self.proxies.get(i)
    }

    /// All proxies, in member order.
    pub fn proxies(&self) -> &[Proxy] {
        &self.proxies
    }

    /// Connect string through the proxies: `"127.0.0.1:p1,127.0.0.1:p2,..."`.
    pub fn connect_string(&self) -> String {
        self.proxies.iter().map(|p| p.addr().to_string()).collect::<Vec<_>>().join(",")
    }

    /// [`Proxy::blackhole`] on every proxy.
    pub fn blackhole(&self) {
        self.proxies.iter().for_each(Proxy::blackhole);
    }

    /// [`Proxy::heal`] on every proxy.
    pub fn heal(&self) {
        self.proxies.iter().for_each(Proxy::heal);
    }

    /// [`Proxy::drop_connections`] on every proxy.
    pub fn drop_connections(&self) {
        self.proxies.iter().for_each(Proxy::drop_connections);
    }

    /// [`Proxy::hold_replies_now`] on every proxy.
    pub fn hold_replies_now(&self) {
        self.proxies.iter().for_each(Proxy::hold_replies_now);
    }

    /// Arms one drop-create-reply fault for the whole group (see
    /// [`Proxy::drop_next_create_reply`]).
    pub fn drop_next_create_reply(&self) {
        *lock(&self.arm) = Some(DropArm::default());
    }

    /// Group version of [`Proxy::drop_next_create_reply_matching`].
    pub fn drop_next_create_reply_matching(&self, path_prefix: &str) {
        *lock(&self.arm) = Some(DropArm { prefix: Some(path_prefix.to_string()), ..DropArm::default() });
    }

    /// Disarms the group's pending drop-create-reply fault; returns whether
    /// one was armed.
    pub fn disarm_drop_create_reply(&self) -> bool {
        lock(&self.arm).take().is_some()
    }

    /// [`Proxy::hold_replies_from_next_create`] on every proxy (each proxy
    /// holds from the next create it sees).
    pub fn hold_replies_from_next_create(&self) {
        self.proxies.iter().for_each(Proxy::hold_replies_from_next_create);
    }

    /// Total [`Proxy::held_replies`] of the group's proxies.
    pub fn held_replies(&self) -> u64 {
        self.proxies.iter().map(Proxy::held_replies).sum()
    }

    /// [`Proxy::release_held_replies`] on every proxy; returns the total
    /// number of frames written.
    pub fn release_held_replies(&self) -> u64 {
        self.proxies.iter().map(Proxy::release_held_replies).sum()
    }

    /// Total replies dropped by the group's proxies.
    pub fn dropped_replies(&self) -> u64 {
        self.proxies.iter().map(Proxy::dropped_replies).sum()
    }

    /// Total open proxied connections.
    pub fn connections(&self) -> usize {
        self.proxies.iter().map(Proxy::connections).sum()
    }
}

/// An address on loopback that drops connection requests (SYNs), as a
/// firewall that drops or a cut route does: a listener whose accept queue
/// (a backlog of none) one connection of its own fills, never accepted.
/// Linux drops the SYNs of a full accept queue, so a connect there waits
/// until its own timeout, reaching no server. Dropping it closes the
/// listener.
pub struct SynDrop {
    addr: SocketAddr,
    _listener: std::net::TcpListener,
    _filler: TcpStream,
}

impl SynDrop {
    /// A new such address; checks that a connect there does wait (300 ms).
    ///
    /// # Errors
    /// The listener could not be made, or a connect was taken.
    pub fn start() -> io::Result<SynDrop> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        // Listening again sets the backlog on Linux.
        // SAFETY: valid listening socket fd owned by `listener`.
        if unsafe { libc::listen(listener.as_raw_fd(), 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let addr = listener.local_addr()?;
        let filler = TcpStream::connect(addr)?;
        match TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {},
            other => {
                return Err(io::Error::other(format!("{addr}: a second connect did not wait ({other:?})")));
            },
        }
        Ok(SynDrop { addr, _listener: listener, _filler: filler })
    }

    /// The address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

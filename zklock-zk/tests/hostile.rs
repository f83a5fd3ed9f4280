//! The session layer against hostile servers (issue 31, item 4): a fake
//! ZooKeeper in the test (a tokio `TcpListener` on 127.0.0.1:0) reads the
//! client's frames and answers as scripted, with frames built by the crate's
//! own codec. Each case must end in a clean, prompt result: no panic, no
//! hang. Every wait is bounded (`within`) so a hang fails the test instead
//! of stopping the suite; the bounds are far above what the code needs and
//! are not speed assertions.

#![allow(clippy::unwrap_used)] // tests assert by panicking

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinSet;

use zklock_zk::codec::frame::write_frame;
use zklock_zk::codec::jute::{Reader, Writer};
use zklock_zk::codec::ops::{op, xid};
use zklock_zk::codec::records::{ConnectResponse, ReplyHeader, Stat};
use zklock_zk::{Code, Config, Error, HeldBack, Session, SessionEvent};

/// The session timeout every fake server grants: the client's read timeout
/// is 2/3 of it (1 s), its ping interval 1/3.
const GRANT_MS: i32 = 1500;
const SESSION_ID: i64 = 0x5eed_0000_0000_0001;
const PASSWORD: [u8; 16] = [7; 16];

async fn within<F: Future>(secs: u64, what: &str, f: F) -> F::Output {
    match tokio::time::timeout(Duration::from_secs(secs), f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: no result within {secs} s (a hang)"),
    }
}

/// A ConnectRequest as the server reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ConnectReq {
    protocol_version: i32,
    last_zxid_seen: i64,
    timeout_ms: i32,
    session_id: i64,
    password: Vec<u8>,
    read_only: bool,
}

fn parse_connect(body: &[u8]) -> ConnectReq {
    let mut r = Reader::new(body);
    let c = ConnectReq {
        protocol_version: r.i32("protocolVersion").unwrap(),
        last_zxid_seen: r.i64("lastZxidSeen").unwrap(),
        timeout_ms: r.i32("timeOut").unwrap(),
        session_id: r.i64("sessionId").unwrap(),
        password: r.bytes("passwd").unwrap(),
        read_only: r.bool("readOnly").unwrap(),
    };
    r.finish("ConnectRequest").unwrap();
    c
}

/// One request as the server reads it: xid, opcode, and the record's bytes.
struct Req {
    xid: i32,
    op: i32,
    body: Vec<u8>,
}

impl Req {
    fn parse(frame: &[u8]) -> Req {
        let mut r = Reader::new(frame);
        let xid = r.i32("xid").unwrap();
        let op = r.i32("type").unwrap();
        Req { xid, op, body: frame[8..].to_vec() }
    }

    /// The path of a request whose record starts with one.
    fn path(&self) -> String {
        Reader::new(&self.body).string("path").unwrap()
    }
}

/// Reads one frame's body; `None` at end of stream or on an error.
async fn read_frame(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await.ok()?;
    let n = usize::try_from(i32::from_be_bytes(len)).ok()?;
    let mut body = vec![0; n];
    s.read_exact(&mut body).await.ok()?;
    Some(body)
}

fn frame(body: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::new();
    write_frame(&mut out, body);
    out
}

fn connect_response(timeout_ms: i32, session_id: i64, password: &[u8]) -> Vec<u8> {
    let r =
        ConnectResponse { protocol_version: 0, timeout_ms, session_id, password: password.to_vec(), read_only: false };
    frame(|b| r.encode(b))
}

fn reply(xid: i32, zxid: i64, err: i32, body: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
    frame(|b| {
        ReplyHeader { xid, zxid, err }.encode(b);
        body(&mut Writer::new(b));
    })
}

fn stat(zxid: i64) -> Stat {
    Stat { czxid: zxid, mzxid: zxid, pzxid: zxid, ..Stat::default() }
}

/// Reads the ConnectRequest and grants `SESSION_ID` for `GRANT_MS`.
async fn handshake(s: &mut TcpStream) -> ConnectReq {
    let c = parse_connect(&read_frame(s).await.expect("a connect request"));
    s.write_all(&connect_response(GRANT_MS, SESSION_ID, &PASSWORD)).await.expect("connect response");
    c
}

/// The next request other than a ping (pings are answered).
async fn next_request(s: &mut TcpStream) -> Option<Req> {
    loop {
        let r = Req::parse(&read_frame(s).await?);
        if r.op != op::PING {
            return Some(r);
        }
        s.write_all(&reply(xid::PING, 0, 0, |_| {})).await.ok()?;
    }
}

/// Answers like a healthy server until the client goes, reporting each
/// request's (xid, opcode) on `log`. Replies carry zxid `zxid`.
async fn serve_ok(mut s: TcpStream, zxid: i64, log: Option<mpsc::UnboundedSender<(i32, i32)>>) {
    while let Some(frame) = read_frame(&mut s).await {
        let r = Req::parse(&frame);
        if let Some(l) = &log {
            let _ = l.send((r.xid, r.op));
        }
        let out = match r.op {
            op::PING => reply(xid::PING, zxid, 0, |_| {}),
            op::EXISTS | op::SET_DATA => reply(r.xid, zxid, 0, |w| stat(zxid).encode(w)),
            op::GET_DATA => reply(r.xid, zxid, 0, |w| {
                w.buffer(b"data");
                stat(zxid).encode(w);
            }),
            op::CREATE2 | op::CREATE_CONTAINER => {
                let path = r.path();
                reply(r.xid, zxid, 0, |w| {
                    w.string(&path);
                    stat(zxid).encode(w);
                })
            },
            op::SYNC => {
                let path = r.path();
                reply(r.xid, zxid, 0, |w| {
                    w.string(&path);
                })
            },
            op::GET_CHILDREN2 => reply(r.xid, zxid, 0, |w| {
                w.strings(&["a"]);
                stat(zxid).encode(w);
            }),
            op::CLOSE_SESSION => {
                let _ = s.write_all(&reply(r.xid, zxid, 0, |_| {})).await;
                return;
            },
            _ => reply(r.xid, zxid, 0, |_| {}),
        };
        if s.write_all(&out).await.is_err() {
            return;
        }
    }
}

/// Holds a connection open, reading and dropping what comes, until the
/// client closes it.
async fn hold(mut s: TcpStream) {
    let mut sink = [0u8; 4096];
    while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
}

/// A fake ZooKeeper server: each accepted connection is given to
/// `script(n, stream)`, `n` counting connections from 1. Dropping it stops
/// the listener and every connection's script.
struct Fake {
    addr: SocketAddr,
    tasks: JoinSet<()>,
}

impl Fake {
    async fn start<F, Fut>(script: F) -> Fake
    where
        F: Fn(usize, TcpStream) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let mut tasks = JoinSet::new();
        tasks.spawn(async move {
            let mut conns = JoinSet::new();
            let mut n = 0;
            while let Ok((s, _)) = listener.accept().await {
                n += 1;
                conns.spawn(script(n, s));
            }
        });
        Fake { addr, tasks }
    }

    fn config(&self) -> Config {
        Config::new(&self.addr.to_string())
            .expect("connect string")
            .session_timeout(Duration::from_millis(GRANT_MS as u64))
            .connect_timeout(Duration::from_secs(5))
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.tasks.abort_all();
    }
}

/// The next event that is not `Connected`.
async fn next_disconnect(ev: &mut zklock_zk::Events) -> (u64, String) {
    loop {
        match within(10, "a session event", ev.next()).await.expect("an event") {
            SessionEvent::Disconnected { connection, reason } => return (connection, reason),
            SessionEvent::Connected(_) => continue,
            other => panic!("expected a disconnect, got {other:?}"),
        }
    }
}

fn connection_loss(r: Result<impl std::fmt::Debug, Error>, what: &str) -> String {
    match r {
        Err(Error::ConnectionLoss(why)) => why,
        other => panic!("expected ConnectionLoss ({what}), got {other:?}"),
    }
}

/// A scripted first connection: handshake, wait for `go`, then `then`;
/// later connections are served normally.
async fn fake_first<F, Fut>(go: Arc<Notify>, then: F) -> Fake
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let then = Arc::new(then);
    Fake::start(move |n, mut s| {
        let go = go.clone();
        let then = then.clone();
        async move {
            handshake(&mut s).await;
            if n == 1 {
                go.notified().await;
                then(s).await;
            } else {
                serve_ok(s, 1, None).await;
            }
        }
    })
    .await
}

// ---- frames the client must refuse -------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_length_over_the_packet_limit_is_a_connection_loss() {
    let go = Arc::new(Notify::new());
    let fake = fake_first(go.clone(), |mut s| async move {
        let _ = next_request(&mut s).await;
        // A length prefix one over the limit, and nothing more: the client
        // must not wait for (or allocate) the body.
        s.write_all(&4097i32.to_be_bytes()).await.unwrap();
        hold(s).await;
    })
    .await;
    let s = within(10, "connect", Session::connect(fake.config().max_frame(4096))).await.expect("connect");
    let mut ev = s.events();
    go.notify_one();
    let why = connection_loss(within(10, "exists", s.exists("/a")).await, "exists");
    assert!(why.contains("4097") && why.contains("packet limit of 4096"), "{why}");
    let (conn, reason) = next_disconnect(&mut ev).await;
    assert_eq!(conn, 1);
    assert!(reason.contains("over the packet limit of 4096"), "{reason}");
    // The session reconnects and works.
    assert!(within(10, "exists on connection 2", retry_exists(&s)).await.is_some());
    within(10, "close", s.close()).await;
}

/// `exists("/a")` until a connection answers it (calls fail at once while
/// the session reconnects).
async fn retry_exists(s: &Session) -> Option<Stat> {
    loop {
        match s.exists("/a").await {
            Ok(r) => return r.value,
            Err(Error::ConnectionLoss(_)) => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(e) => panic!("exists: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_negative_reply_length_is_a_connection_loss() {
    let go = Arc::new(Notify::new());
    let fake = fake_first(go.clone(), |mut s| async move {
        let _ = next_request(&mut s).await;
        s.write_all(&(-16i32).to_be_bytes()).await.unwrap();
        hold(s).await;
    })
    .await;
    let s = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
    let mut ev = s.events();
    go.notify_one();
    let why = connection_loss(within(10, "exists", s.exists("/a")).await, "exists");
    assert!(why.contains("-16 is negative"), "{why}");
    let (_, reason) = next_disconnect(&mut ev).await;
    assert!(reason.contains("negative"), "{reason}");
    within(10, "close", s.close()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_for_an_unknown_xid_fails_the_outstanding_calls_with_connection_loss() {
    let go = Arc::new(Notify::new());
    let fake = fake_first(go.clone(), |mut s| async move {
        let a = next_request(&mut s).await.expect("a request");
        let _b = next_request(&mut s).await.expect("a second request");
        // An xid nobody asked for, while two requests are outstanding.
        s.write_all(&reply(a.xid + 1000, 5, 0, |w| stat(5).encode(w))).await.unwrap();
        hold(s).await;
    })
    .await;
    let s = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
    let mut ev = s.events();
    go.notify_one();
    let (a, b) = (s.exists("/a"), s.exists("/b"));
    // Both were outstanding: the server may or may not have done them.
    let why = connection_loss(within(10, "first call", a).await, "first call");
    assert!(why.contains("out of order"), "{why}");
    connection_loss(within(10, "second call", b).await, "second call");
    let (_, reason) = next_disconnect(&mut ev).await;
    assert!(reason.contains("out of order"), "{reason}");
    within(10, "close", s.close()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_out_of_order_fail_the_calls_with_connection_loss() {
    let go = Arc::new(Notify::new());
    let fake = fake_first(go.clone(), |mut s| async move {
        let _a = next_request(&mut s).await.expect("a request");
        let b = next_request(&mut s).await.expect("a second request");
        // The second request answered first.
        s.write_all(&reply(b.xid, 5, 0, |w| stat(5).encode(w))).await.unwrap();
        hold(s).await;
    })
    .await;
    let s = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
    go.notify_one();
    let (a, b) = (s.exists("/a"), s.exists("/b"));
    connection_loss(within(10, "first call", a).await, "first call");
    connection_loss(within(10, "second call", b).await, "second call");
    within(10, "close", s.close()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_with_nothing_pending_is_a_connection_loss_and_the_session_recovers() {
    let go = Arc::new(Notify::new());
    let fake = fake_first(go.clone(), |mut s| async move {
        s.write_all(&reply(1, 5, 0, |w| stat(5).encode(w))).await.unwrap();
        hold(s).await;
    })
    .await;
    let s = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
    let mut ev = s.events();
    go.notify_one();
    let (conn, reason) = next_disconnect(&mut ev).await;
    assert_eq!(conn, 1);
    assert!(reason.contains("no request outstanding"), "{reason}");
    match within(10, "reconnect", ev.next()).await {
        Some(SessionEvent::Connected(c)) if c.connection == 2 => {},
        other => panic!("expected connection 2, got {other:?}"),
    }
    assert!(within(10, "exists on connection 2", retry_exists(&s)).await.is_some());
    within(10, "close", s.close()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ping_reply_with_no_ping_outstanding_is_a_connection_loss() {
    let go = Arc::new(Notify::new());
    let fake = fake_first(go.clone(), |mut s| async move {
        s.write_all(&reply(xid::PING, 0, 0, |_| {})).await.unwrap();
        hold(s).await;
    })
    .await;
    let s = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
    let mut ev = s.events();
    go.notify_one();
    let (_, reason) = next_disconnect(&mut ev).await;
    assert!(reason.contains("no ping outstanding"), "{reason}");
    within(10, "close", s.close()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_body_that_does_not_decode_fails_the_call_with_connection_loss() {
    let go = Arc::new(Notify::new());
    let fake = fake_first(go.clone(), |mut s| async move {
        let r = next_request(&mut s).await.expect("a request");
        // An exists reply with 10 bytes where a 68-byte Stat belongs.
        s.write_all(&reply(r.xid, 5, 0, |w| {
            w.i64(1).i32(2);
        }))
        .await
        .unwrap();
        hold(s).await;
    })
    .await;
    let s = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
    let mut ev = s.events();
    go.notify_one();
    let why = connection_loss(within(10, "exists", s.exists("/a")).await, "exists");
    assert!(why.contains("Stat"), "{why}");
    let (_, reason) = next_disconnect(&mut ev).await;
    assert!(reason.contains("Stat"), "{reason}");
    within(10, "close", s.close()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_that_does_not_decode_is_a_connection_loss() {
    let go = Arc::new(Notify::new());
    let fake = fake_first(go.clone(), |mut s| async move {
        // Event type 77 does not exist.
        s.write_all(&reply(xid::NOTIFICATION, -1, 0, |w| {
            w.i32(77).i32(3).string("/a");
        }))
        .await
        .unwrap();
        hold(s).await;
    })
    .await;
    let s = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
    let mut ev = s.events();
    go.notify_one();
    let (_, reason) = next_disconnect(&mut ev).await;
    assert!(reason.contains("WatcherEvent.type") && reason.contains("77"), "{reason}");
    within(10, "close", s.close()).await;
}

// ---- servers that stall ------------------------------------------------

/// A whole getData reply frame for `xid`, `data_len` bytes of data.
fn get_data_reply(xid: i32, data_len: usize) -> Vec<u8> {
    reply(xid, 5, 0, |w| {
        w.buffer(&vec![b'x'; data_len]);
        stat(5).encode(w);
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_mid_frame_is_a_connection_loss_after_the_read_timeout() {
    let go = Arc::new(Notify::new());
    let fake = fake_first(go.clone(), |mut s| async move {
        let r = next_request(&mut s).await.expect("a request");
        let whole = get_data_reply(r.xid, 100);
        s.write_all(&whole[..whole.len() / 2]).await.unwrap();
        hold(s).await;
    })
    .await;
    let s = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
    let mut ev = s.events();
    go.notify_one();
    let why = connection_loss(within(10, "get_data", s.get_data("/a")).await, "get_data");
    assert!(why.contains("1000 ms"), "{why}");
    let (_, reason) = next_disconnect(&mut ev).await;
    assert!(reason.contains("1000 ms"), "{reason}");
    within(10, "close", s.close()).await;
}

/// Sends `bytes` one byte per 100 ms.
async fn trickle(s: &mut TcpStream, bytes: &[u8]) {
    for b in bytes {
        if s.write_all(&[*b]).await.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_trickles_a_reply_is_a_connection_loss_after_the_read_timeout() {
    let go = Arc::new(Notify::new());
    let fake = fake_first(go.clone(), |mut s| async move {
        let r = next_request(&mut s).await.expect("a request");
        // About 190 bytes at 10 a second: the whole reply would take 19 s,
        // the read timeout is 1 s.
        trickle(&mut s, &get_data_reply(r.xid, 100)).await;
        hold(s).await;
    })
    .await;
    let s = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
    let mut ev = s.events();
    go.notify_one();
    let why = connection_loss(within(6, "get_data", s.get_data("/a")).await, "get_data");
    assert!(why.contains("1000 ms"), "{why}");
    let (_, reason) = next_disconnect(&mut ev).await;
    assert!(reason.contains("1000 ms"), "{reason}");
    within(10, "close", s.close()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_against_a_trickling_server_ends_within_the_read_timeout() {
    let go = Arc::new(Notify::new());
    let fake = fake_first(go.clone(), |mut s| async move {
        // A frame that never ends, one byte at a time, and closeSession
        // never answered.
        let mut endless = 1000i32.to_be_bytes().to_vec();
        endless.extend(std::iter::repeat_n(0u8, 1000));
        trickle(&mut s, &endless).await;
    })
    .await;
    let s = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
    go.notify_one();
    tokio::time::sleep(Duration::from_millis(300)).await;
    within(6, "close", s.close()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_reads_is_a_connection_loss() {
    let fake = Fake::start(|n, mut s| async move {
        if n == 1 {
            handshake(&mut s).await;
            // Neither reads nor writes: the client's writes fill the socket.
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        // Later connections are dropped at once, so no call can succeed
        // on a reconnect.
    })
    .await;
    let s = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
    let mut ev = s.events();
    // 30 requests of 900 kB: far more than loopback's socket buffers hold.
    let data = vec![0u8; 900_000];
    let calls: Vec<_> = (0..30).map(|_| s.set_data("/a", &data, -1)).collect();
    // Those outstanding when the connection went fail with the loss; those
    // still queued wait for a reconnect, and fail when the session expires
    // without one.
    for (i, c) in calls.into_iter().enumerate() {
        match within(10, "set_data", c).await {
            Err(Error::ConnectionLoss(_)) => {},
            Err(Error::SessionExpired) if i > 0 => {},
            other => panic!("set_data {i}: expected ConnectionLoss or SessionExpired, got {other:?}"),
        }
    }
    let (_, reason) = next_disconnect(&mut ev).await;
    assert!(reason.contains("1000 ms"), "{reason}");
    within(10, "close", s.close()).await;
}

/// One session against a server that stalls its reads during a long write
/// but speaks in time: handshake at t0 (3 s granted: read timeout 2 s),
/// the client starts writing a request bigger than the socket buffers at
/// t0+1.2 s, the server sends a notification at t0+1.4 s and starts reading
/// at t0+2.2 s. The write finishes after the read timeout counted from the
/// handshake, with the notification waiting in the socket: the client must
/// read it before it judges the silence. The write stalls about 1 s, well
/// inside the 2 s the client gives a write (it stalled 1.6 s, and a loaded
/// machine's late wake-ups once made it 2 s: a failure in `make test`).
async fn long_write_with_a_frame_waiting() -> Result<(), Error> {
    let fake = Fake::start(|_, mut s| async move {
        let c = parse_connect(&read_frame(&mut s).await.expect("a connect request"));
        assert_eq!(c.session_id, 0);
        s.write_all(&connect_response(3000, SESSION_ID, &PASSWORD)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1400)).await;
        let note = reply(xid::NOTIFICATION, -1, 0, |w| {
            w.i32(3).i32(3).string("/elsewhere");
        });
        s.write_all(&note).await.unwrap();
        tokio::time::sleep(Duration::from_millis(800)).await;
        serve_ok(s, 2, None).await;
    })
    .await;
    let cfg = fake.config().session_timeout(Duration::from_secs(3)).max_frame(16 << 20);
    let s = within(10, "connect", Session::connect(cfg)).await.expect("connect");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let r = within(10, "set_data", s.set_data("/a", &vec![0u8; 10 << 20], -1)).await.map(|_| ());
    within(10, "close", s.close()).await;
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_that_arrived_during_a_long_write_is_read_before_the_read_timeout_counts() {
    // Six at once: a coin toss between the ready read and the due timer
    // would lose one of them with a chance of 63 in 64.
    let mut all = JoinSet::new();
    for _ in 0..6 {
        all.spawn(long_write_with_a_frame_waiting());
    }
    while let Some(r) = all.join_next().await {
        r.expect("task").expect("set_data on a server that spoke in time");
    }
}

// ---- handshakes --------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbage_connect_response_times_out_naming_it() {
    let fake = Fake::start(|_, mut s| async move {
        let _ = read_frame(&mut s).await;
        s.write_all(&frame(|b| b.extend_from_slice(&[1, 2, 3, 4, 5]))).await.unwrap();
        hold(s).await;
    })
    .await;
    let cfg = fake.config().connect_timeout(Duration::from_millis(1500));
    match within(10, "connect", Session::connect(cfg)).await {
        Err(Error::Timeout(why)) => assert!(why.contains("bad connect response"), "{why}"),
        other => panic!("expected Timeout, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_response_without_the_read_only_byte_is_accepted() {
    let fake = Fake::start(|_, mut s| async move {
        let _ = read_frame(&mut s).await;
        let mut body = Vec::new();
        Writer::new(&mut body).i32(0).i32(GRANT_MS).i64(SESSION_ID).buffer(&PASSWORD);
        assert_eq!(body.len(), 36);
        s.write_all(&frame(|b| b.extend_from_slice(&body))).await.unwrap();
        serve_ok(s, 1, None).await;
    })
    .await;
    let s = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
    assert_eq!(s.id(), SESSION_ID);
    assert_eq!(s.password(), PASSWORD);
    assert_eq!(s.timeout(), Duration::from_millis(GRANT_MS as u64));
    assert!(within(10, "exists", s.exists("/a")).await.expect("exists").value.is_some());
    within(10, "close", s.close()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_response_with_timeout_zero_is_session_expired() {
    let fake = Fake::start(|_, mut s| async move {
        let _ = read_frame(&mut s).await;
        s.write_all(&connect_response(0, 0, &[0; 16])).await.unwrap();
        hold(s).await;
    })
    .await;
    let r = within(10, "connect", Session::connect(fake.config())).await;
    assert_eq!(r.err(), Some(Error::SessionExpired));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_closing_after_the_connect_request_times_out_naming_it() {
    let fake = Fake::start(|_, mut s| async move {
        let _ = read_frame(&mut s).await;
        drop(s);
    })
    .await;
    let cfg = fake.config().connect_timeout(Duration::from_millis(1500));
    match within(10, "connect", Session::connect(cfg)).await {
        Err(Error::Timeout(why)) => assert!(why.contains("closed the connection during the handshake"), "{why}"),
        other => panic!("expected Timeout, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickled_connect_response_times_out_at_the_connect_timeout() {
    let fake = Fake::start(|_, mut s| async move {
        let _ = read_frame(&mut s).await;
        trickle(&mut s, &connect_response(GRANT_MS, SESSION_ID, &PASSWORD)).await;
        hold(s).await;
    })
    .await;
    let cfg = fake.config().connect_timeout(Duration::from_millis(1500));
    match within(10, "connect", Session::connect(cfg)).await {
        Err(Error::Timeout(why)) => assert!(why.contains("no answer to the connect request"), "{why}"),
        other => panic!("expected Timeout, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_host_refusing_is_unreachable_not_a_timeout() {
    // Three ports that were just free: nothing listens there now.
    let mut ports = Vec::new();
    for _ in 0..3 {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        ports.push(l.local_addr().expect("address").port());
    }
    let cs = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect::<Vec<_>>().join(",");
    let cfg = Config::new(&cs).expect("connect string").connect_timeout(Duration::from_secs(30));
    match within(25, "connect", Session::connect(cfg)).await {
        Err(Error::Unreachable(why)) => {
            for p in &ports {
                assert!(why.contains(&format!("127.0.0.1:{p}")), "{why}");
            }
            assert!(why.contains("connection refused"), "{why}");
        },
        other => panic!("expected Unreachable, got {other:?}"),
    }
}

// ---- requests the client must not send ---------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_over_the_packet_limit_is_refused_unsent_and_the_session_goes_on() {
    let (log_tx, mut log) = mpsc::unbounded_channel();
    let fake = Fake::start(move |_, mut s| {
        let log_tx = log_tx.clone();
        async move {
            handshake(&mut s).await;
            serve_ok(s, 1, Some(log_tx)).await;
        }
    })
    .await;
    let s = within(10, "connect", Session::connect(fake.config().max_frame(512))).await.expect("connect");
    match within(10, "set_data", s.set_data("/a", &[0u8; 600], -1)).await {
        Err(Error::BadArgument(why)) => {
            assert!(why.contains("packet limit of 512") && why.contains("not sent"), "{why}")
        },
        other => panic!("expected BadArgument, got {other:?}"),
    }
    assert!(within(10, "exists", s.exists("/a")).await.expect("exists").value.is_some());
    within(10, "close", s.close()).await;
    let mut ops = Vec::new();
    while let Ok(Some((_, o))) = tokio::time::timeout(Duration::from_secs(2), log.recv()).await {
        if o != op::PING {
            ops.push(o);
        }
        if o == op::CLOSE_SESSION {
            break;
        }
    }
    assert_eq!(ops, vec![op::EXISTS, op::CLOSE_SESSION], "the server saw no setData");
}

// ---- re-attach ---------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_reattaches_with_the_session_id_password_and_largest_zxid() {
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let fake = Fake::start(move |n, mut s| {
        let seen_tx = seen_tx.clone();
        async move {
            let c = handshake(&mut s).await;
            let _ = seen_tx.send(c);
            if n == 1 {
                // Three replies whose zxids are not in order, then the
                // connection drops.
                for zxid in [5, 9, 7] {
                    let r = next_request(&mut s).await.expect("a request");
                    s.write_all(&reply(r.xid, zxid, 0, |w| stat(zxid).encode(w))).await.unwrap();
                }
                drop(s);
            } else {
                serve_ok(s, 9, None).await;
            }
        }
    })
    .await;
    let s = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
    let mut ev = s.events();
    let first = within(10, "first connect request", seen.recv()).await.expect("seen");
    assert_eq!((first.session_id, first.last_zxid_seen, first.password.clone()), (0, 0, vec![0; 16]));
    assert_eq!((first.protocol_version, first.timeout_ms, first.read_only), (0, GRANT_MS, false));
    for _ in 0..3 {
        within(10, "exists", s.exists("/a")).await.expect("exists");
    }
    let (conn, _) = next_disconnect(&mut ev).await;
    assert_eq!(conn, 1);
    let again = within(10, "second connect request", seen.recv()).await.expect("seen");
    assert_eq!(again.session_id, SESSION_ID);
    assert_eq!(again.password, PASSWORD);
    assert_eq!(again.last_zxid_seen, 9);
    assert_eq!(again.timeout_ms, GRANT_MS);
    match within(10, "reconnect", ev.next()).await {
        Some(SessionEvent::Connected(c)) if c.connection == 2 => assert!(c.connect_sent <= c.answered),
        other => panic!("expected connection 2, got {other:?}"),
    }
    let r = within(10, "exists on connection 2", s.exists("/a")).await.expect("exists");
    assert_eq!(r.connection, 2);
    within(10, "close", s.close()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reattach_answered_with_another_session_id_ends_the_session() {
    let fake = Fake::start(move |n, mut s| async move {
        if n == 1 {
            handshake(&mut s).await;
            let r = next_request(&mut s).await.expect("a request");
            s.write_all(&reply(r.xid, 3, 0, |w| stat(3).encode(w))).await.unwrap();
            drop(s);
        } else {
            // The old session is gone; this server hands out a new one
            // instead of saying so.
            let _ = read_frame(&mut s).await;
            s.write_all(&connect_response(GRANT_MS, SESSION_ID + 1, &PASSWORD)).await.unwrap();
            serve_ok(s, 4, None).await;
        }
    })
    .await;
    let s = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
    let mut ev = s.events();
    within(10, "exists", s.exists("/a")).await.expect("exists");
    next_disconnect(&mut ev).await;
    // Ephemeral nodes belong to the old session: going on under a new one
    // would be a silent loss of every lock.
    match within(10, "the end", ev.next()).await {
        Some(SessionEvent::Ended(Error::SessionExpired)) => {},
        other => panic!("expected Ended(SessionExpired), got {other:?}"),
    }
    assert_eq!(s.id(), SESSION_ID);
    assert_eq!(within(10, "exists", s.exists("/a")).await.err(), Some(Error::SessionExpired));
}

// ---- servers that flood ------------------------------------------------

/// A burst of large replies (N lock waiters queued at once each get the
/// queue's list behind their create) is handed out a few at a time: the
/// session task lets the tasks waiting for them run before it decodes
/// more, so decoded replies never pile up (issue 33: some 150 lists of up
/// to N names each were held at once, and malloc kept the peak). The
/// client runs on one thread, as in zklock's own runtime; the fake server
/// on another, writing the whole burst as fast as the client reads it.
#[test]
fn a_burst_of_large_replies_is_handed_out_a_few_at_a_time() {
    const CALLS: usize = 256;
    const IN_FLIGHT: usize = 64;
    // 300 names of 50 bytes: a reply frame of about 16 KiB.
    let names: Vec<String> = (0..300).map(|i| format!("_c_{i:08x}-0000-4000-8000-000000000000-lock-{i:010}")).collect();
    let server = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let fake = server.block_on(Fake::start(move |_, mut s| {
        let names = names.clone();
        async move {
            handshake(&mut s).await;
            // The calls come 64 at a time (the session's most in flight):
            // each 64 answered in one burst, as fast as the client reads.
            for _ in 0..CALLS / IN_FLIGHT {
                let mut burst = Vec::new();
                for _ in 0..IN_FLIGHT {
                    let r = next_request(&mut s).await.expect("a getChildren");
                    assert_eq!(r.op, op::GET_CHILDREN);
                    burst.extend(reply(r.xid, 1, 0, |w| {
                        w.strings(&names);
                    }));
                }
                s.write_all(&burst).await.unwrap();
            }
            hold(s).await;
        }
    }));
    let client = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // For each call: when its reply was decoded, and when its task had it.
    let times = client.block_on(async {
        let s = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
        let calls: Vec<_> = (0..CALLS).map(|_| s.children("/q")).collect();
        let tasks: Vec<_> = calls
            .into_iter()
            .map(|call| {
                tokio::spawn(async move {
                    let r = call.await.expect("the list");
                    assert_eq!(r.value.len(), 300);
                    (r.answered, std::time::Instant::now())
                })
            })
            .collect();
        let mut times = Vec::new();
        for t in tasks {
            times.push(within(30, "a reply", t).await.unwrap());
        }
        within(10, "close", s.close()).await;
        times
    });
    // The most replies decoded and not yet taken by their task at once.
    let mut steps: Vec<(std::time::Instant, i32)> = times.iter().flat_map(|&(d, t)| [(d, 1), (t, -1)]).collect();
    steps.sort_by_key(|&(at, step)| (at, step));
    let (mut held, mut most) = (0, 0);
    for (_, step) in steps {
        held += step;
        most = most.max(held);
    }
    // 64 KiB of frames between yields: four of these replies.
    assert!(most <= 5, "{most} decoded replies of about 16 KiB were waiting for their tasks at once");
    drop(fake);
}

/// The body of a getChildren reply with no names.
fn empty_list(w: &mut Writer<'_>) {
    w.strings(&Vec::<String>::new());
}

/// A session has at most 64 requests in flight: 200 calls made at once
/// reach the server 64 first, one more per reply, in call order, and all
/// are answered; its pings are not held back behind them. Issue 33: 10,000
/// waiters' lists sent at once made a 256 MB server run out of heap and
/// other sessions' pings go unanswered (see `MAX_IN_FLIGHT`).
#[test]
fn at_most_64_requests_are_in_flight_and_the_rest_follow_in_order() {
    const CALLS: usize = 200;
    let (tx, mut seen) = mpsc::unbounded_channel::<(usize, usize)>();
    let gate = Arc::new(Notify::new());
    let open = gate.clone();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async move {
        let fake = Fake::start(move |_, mut s| {
            let tx = tx.clone();
            let gate = gate.clone();
            async move {
                handshake(&mut s).await;
                let mut pings = 0;
                // The xids of the requests that come in the next `span`
                // (pings answered at once, counted).
                async fn gather(s: &mut TcpStream, span: Duration, pings: &mut usize) -> Vec<i32> {
                    let mut xids = Vec::new();
                    let until = tokio::time::Instant::now() + span;
                    while let Ok(Some(body)) = tokio::time::timeout_at(until, read_frame(s)).await {
                        let r = Req::parse(&body);
                        if r.op == op::PING {
                            *pings += 1;
                            s.write_all(&reply(xid::PING, 0, 0, |_| {})).await.unwrap();
                        } else {
                            xids.push(r.xid);
                        }
                    }
                    xids
                }
                // Nothing answered for 1.2 s: what came, and a ping (the
                // client pings after 0.5 s of sending nothing).
                let first = gather(&mut s, Duration::from_millis(1200), &mut pings).await;
                tx.send((first.len(), pings)).unwrap();
                // Until the client looked at the calls held back (answered
                // at once, the 65th could be sent before the client looked:
                // seen once in four runs beside other tests).
                gate.notified().await;
                let mut all = first.clone();
                let mut queue: std::collections::VecDeque<i32> = first.into();
                // One answer: one more request.
                let x = queue.pop_front().unwrap();
                s.write_all(&reply(x, 1, 0, empty_list)).await.unwrap();
                let more = gather(&mut s, Duration::from_millis(300), &mut pings).await;
                tx.send((more.len(), pings)).unwrap();
                gate.notified().await;
                all.extend(&more);
                queue.extend(more);
                // The rest, each answered as it comes.
                while let Some(x) = queue.pop_front() {
                    s.write_all(&reply(x, 1, 0, empty_list)).await.unwrap();
                    if queue.is_empty() {
                        let more = gather(&mut s, Duration::from_millis(300), &mut pings).await;
                        all.extend(&more);
                        queue.extend(more);
                    }
                }
                assert!(all.windows(2).all(|w| w[0] < w[1]), "requests out of call order: {all:?}");
                tx.send((all.len(), pings)).unwrap();
                hold(s).await;
            }
        })
        .await;
        let session = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
        let calls: Vec<_> = (0..CALLS).map(|_| session.children("/q")).collect();
        let (sixty_fifth, last) = (calls[64].outbound(), calls[CALLS - 1].outbound());
        assert_eq!(calls[63].outbound().held_back(), HeldBack::Never);
        let (held_back, pinged) = within(10, "the first requests", seen.recv()).await.unwrap();
        assert_eq!(held_back, 64, "requests in flight before any reply");
        assert!(pinged >= 1, "no ping while 64 requests were in flight");
        assert_eq!((sixty_fifth.held_back(), last.held_back()), (HeldBack::Now, HeldBack::Now));
        open.notify_one();
        let (one_more, _) = within(10, "after one reply", seen.recv()).await.unwrap();
        assert_eq!(one_more, 1, "requests sent after one reply");
        assert!(matches!(sixty_fifth.held_back(), HeldBack::Until(_)), "{:?}", sixty_fifth.held_back());
        assert_eq!(last.held_back(), HeldBack::Now);
        open.notify_one();
        for (i, call) in calls.into_iter().enumerate() {
            within(10, "a reply", call).await.unwrap_or_else(|e| panic!("call {i}: {e}"));
        }
        let (total, _) = within(10, "the end", seen.recv()).await.unwrap();
        assert_eq!(total, CALLS);
        within(10, "close", session.close()).await;
        drop(fake);
    });
}

/// A call held back (64 in flight) whose caller drops its future before it
/// leaves is never sent: the server sees 100 - 20 requests, and the other
/// calls are answered. Without it, callers that timed out and asked again
/// filled the queue with requests nobody read (issue 33).
#[test]
fn a_call_given_up_before_it_is_sent_is_not_sent() {
    let (tx, mut seen) = mpsc::unbounded_channel::<Vec<i32>>();
    let (go_tx, go) = tokio::sync::oneshot::channel::<()>();
    let go = Arc::new(tokio::sync::Mutex::new(Some(go)));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async move {
        let fake = Fake::start(move |_, mut s| {
            let tx = tx.clone();
            let go = go.clone();
            async move {
                handshake(&mut s).await;
                let mut xids = Vec::new();
                for _ in 0..64 {
                    xids.push(next_request(&mut s).await.unwrap().xid);
                }
                // Answer nothing until the client gave up on some calls.
                let go = go.lock().await.take().unwrap();
                go.await.unwrap();
                let mut i = 0;
                loop {
                    let x = xids[i];
                    s.write_all(&reply(x, 1, 0, empty_list)).await.unwrap();
                    i += 1;
                    if i == xids.len() {
                        match tokio::time::timeout(Duration::from_millis(500), next_request(&mut s)).await {
                            Ok(Some(r)) => xids.push(r.xid),
                            _ => break,
                        }
                    }
                    while let Ok(Some(r)) = tokio::time::timeout(Duration::from_millis(20), next_request(&mut s)).await
                    {
                        xids.push(r.xid);
                    }
                }
                tx.send(xids).unwrap();
                hold(s).await;
            }
        })
        .await;
        let session = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
        let mut calls: Vec<Option<_>> = (0..100).map(|_| Some(session.children("/q"))).collect();
        // Let the first 64 reach the server, then give up on 20 held back.
        tokio::time::sleep(Duration::from_millis(300)).await;
        for call in &mut calls[70..90] {
            drop(call.take());
        }
        go_tx.send(()).unwrap();
        for (i, call) in calls.into_iter().enumerate() {
            if let Some(call) = call {
                within(10, "a reply", call).await.unwrap_or_else(|e| panic!("call {i}: {e}"));
            }
        }
        let xids = within(10, "the requests", seen.recv()).await.unwrap();
        assert_eq!(xids.len(), 80, "requests the server saw: {xids:?}");
        within(10, "close", session.close()).await;
        drop(fake);
    });
}

/// Answers every request in order, as they come (pings at once), each
/// getChildren with no names and a sync empty; after the close of the
/// session, the connection. Reports the requests' opcodes on `log`.
async fn answer_in_order(mut s: TcpStream, log: mpsc::UnboundedSender<i32>) {
    while let Some(body) = read_frame(&mut s).await {
        let r = Req::parse(&body);
        let _ = log.send(r.op);
        let answer = match r.op {
            op::GET_CHILDREN => reply(r.xid, 1, 0, empty_list),
            op::SYNC => reply(r.xid, 1, 0, |w| {
                w.string("/");
            }),
            _ => reply(r.xid, 1, 0, |_| {}),
        };
        if s.write_all(&answer).await.is_err() || r.op == op::CLOSE_SESSION {
            return;
        }
    }
}

/// Two closes (the client's and a dropped handle's, say) made while calls
/// wait for room in flight end the session: the calls made before them
/// are answered first, the close returns. Outside attack round 21, F1: the
/// two took turns at the end of the queue for ever, on the runtime's
/// thread, and `close()` never returned.
#[test]
fn two_closes_behind_held_back_calls_end_the_session() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async move {
        let (log_tx, mut log) = mpsc::unbounded_channel::<i32>();
        let gate = Arc::new(Notify::new());
        let open = gate.clone();
        let fake = Fake::start(move |_, mut s| {
            let log = log_tx.clone();
            let gate = gate.clone();
            async move {
                handshake(&mut s).await;
                gate.notified().await;
                answer_in_order(s, log).await;
            }
        })
        .await;
        let session = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
        let calls: Vec<_> = (0..100).map(|_| session.children("/q")).collect();
        session.start_close();
        let closing = tokio::spawn({
            let session = session.clone();
            async move { session.close().await }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        open.notify_one();
        within(10, "close", closing).await.unwrap();
        for (i, call) in calls.into_iter().enumerate() {
            within(10, "a reply", call).await.unwrap_or_else(|e| panic!("call {i}: {e}"));
        }
        let mut ops = Vec::new();
        while let Ok(o) = log.try_recv() {
            ops.push(o);
        }
        assert_eq!(ops.iter().filter(|&&o| o == op::GET_CHILDREN).count(), 100, "{ops:?}");
        assert_eq!(ops.last(), Some(&op::CLOSE_SESSION), "{ops:?}");
        drop(fake);
    });
}

/// An urgent sync (the safety clock's probe) goes out at once while 64
/// calls are in flight and more wait: the server sees it before it
/// answers anything. Outside attack round 21, F2: held back behind the
/// client's own 6,000 acquires, the probes went out late and a lock the
/// client held on another path was suspended for 23 s.
#[test]
fn an_urgent_sync_is_not_held_back() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async move {
        let (log_tx, mut log) = mpsc::unbounded_channel::<i32>();
        let fake = Fake::start(move |_, mut s| {
            let log = log_tx.clone();
            async move {
                handshake(&mut s).await;
                // The first 65 requests, answering none (pings aside);
                // then each answered in order.
                let mut first = Vec::new();
                for _ in 0..65 {
                    first.push(next_request(&mut s).await.unwrap());
                }
                for r in &first {
                    let _ = log.send(r.op);
                }
                for r in first {
                    let answer = match r.op {
                        op::SYNC => reply(r.xid, 1, 0, |w| {
                            w.string("/");
                        }),
                        _ => reply(r.xid, 1, 0, empty_list),
                    };
                    s.write_all(&answer).await.unwrap();
                }
                answer_in_order(s, log).await;
            }
        })
        .await;
        let session = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
        let calls: Vec<_> = (0..100).map(|_| session.children("/q")).collect();
        let sync = session.sync_urgent("/");
        let mut first = Vec::new();
        for _ in 0..65 {
            first.push(within(10, "the first 65 requests", log.recv()).await.unwrap());
        }
        assert_eq!(first.last(), Some(&op::SYNC), "the 65th request");
        within(10, "the sync", sync).await.expect("the sync");
        for (i, call) in calls.into_iter().enumerate() {
            within(10, "a reply", call).await.unwrap_or_else(|e| panic!("call {i}: {e}"));
        }
        within(10, "close", session.close()).await;
        drop(fake);
    });
}

#[test]
fn server_error_codes_come_back_typed() {
    // Sanity of the helper encodings against the crate's own decoder.
    let f = reply(3, 9, Code::NoNode.to_wire(), |_| {});
    let (h, body) = ReplyHeader::split(&f[4..]).unwrap();
    assert_eq!((h.xid, h.zxid, h.err, body.len()), (3, 9, -101, 0));
}

/// A close asked while the session reconnects, to a server that has taken
/// the connection but answers nothing yet (stalled: a GC pause, SIGSTOP;
/// its kernel keeps the bytes), goes right behind the connect request on
/// that connection, so the server reads it as soon as it reads the
/// connect. Outside attack round 30, F2: `zklock run` exited while its
/// server was stalled; the server, running again, read the reconnect left
/// queued, revalidated the session and kept its node for a session
/// timeout, because the close had been held for a connection that never
/// came. Here the fake reads the connect, sees the close behind it, and
/// only then answers both: `close()` returns, and the session is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_asked_while_reconnecting_goes_behind_the_connect_in_flight() {
    let (seen_tx, mut seen) = mpsc::unbounded_channel::<i32>();
    let fake = Fake::start(move |n, mut s| {
        let seen_tx = seen_tx.clone();
        async move {
            if n == 1 {
                // Healthy, then silent: the client gives the connection up
                // after its read timeout and reconnects.
                handshake(&mut s).await;
                hold(s).await;
                return;
            }
            // Stalled: read the connect, answer nothing until a request
            // comes behind it.
            let connect = read_frame(&mut s).await.expect("a connect request");
            let _ = parse_connect(&connect);
            let Some(behind) = read_frame(&mut s).await else { return };
            let r = Req::parse(&behind);
            let _ = seen_tx.send(r.op);
            // Running again: the connect's answer, then the close's.
            let _ = s.write_all(&connect_response(GRANT_MS, SESSION_ID, &PASSWORD)).await;
            let _ = s.write_all(&reply(r.xid, 1, 0, |_| {})).await;
            hold(s).await;
        }
    })
    .await;
    let session = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
    let mut events = session.events();
    let (lost, _) = next_disconnect(&mut events).await;
    assert_eq!(lost, 1);
    // The reconnect's attempt is on its way (the fake holds its connect).
    tokio::time::sleep(Duration::from_millis(200)).await;
    within(10, "close", session.close()).await;
    let op = within(10, "the request behind the connect", seen.recv()).await.expect("a request");
    assert_eq!(op, op::CLOSE_SESSION, "the close went behind the connect in flight");
    assert!(matches!(session.exists("/x").await, Err(Error::Closed)), "the session is closed");
}

// ---- replies and the notifications read with them ------------------------

/// A notification frame: event `kind` (2 deleted, 3 data changed) of
/// `path`, state SyncConnected.
fn notification(kind: i32, path: &str) -> Vec<u8> {
    reply(xid::NOTIFICATION, -1, 0, |w| {
        w.i32(kind).i32(3).string(path);
    })
}

/// A caller woken by a reply finds the notifications read with it already
/// given to their watches: the server writes a read's answer, fifty
/// notifications of other nodes and then the deletion of the node the
/// caller watches, in one write (about 2 KiB: one read of the client's);
/// right after the answer, without a yield, the watch has fired. (Handing each reply out as its frame was taken in,
/// the caller, on the other worker, looked before the session's task had
/// come to the deletion: zklock-core's release looks at its node's watch
/// after its read's answer so, `herd.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_is_handed_out_after_the_notifications_read_with_it() {
    let fake = Fake::start(|_, mut s| async move {
        handshake(&mut s).await;
        while let Some(r) = next_request(&mut s).await {
            let out = match r.op {
                op::EXISTS => reply(r.xid, 5, 0, |w| stat(5).encode(w)),
                op::GET_DATA => {
                    let path = r.path();
                    let mut out = reply(r.xid, 5, 0, |w| {
                        w.buffer(b"data");
                        stat(5).encode(w);
                    });
                    for i in 0..50 {
                        out.extend(notification(3, &format!("/other/{i}")));
                    }
                    out.extend(notification(2, &path));
                    out
                },
                op::CLOSE_SESSION => {
                    let _ = s.write_all(&reply(r.xid, 5, 0, |_| {})).await;
                    return;
                },
                _ => reply(r.xid, 5, 0, |_| {}),
            };
            if s.write_all(&out).await.is_err() {
                return;
            }
        }
    })
    .await;
    let s = within(10, "connect", Session::connect(fake.config())).await.expect("connect");
    let mut missed = 0;
    for i in 0..30 {
        let path = format!("/n{i}");
        let (armed, watch) = s.exists_watch(&path);
        within(10, "exists", armed).await.expect("exists");
        within(10, "getData", s.get_data(&path)).await.expect("getData");
        let mut watch = std::pin::pin!(watch);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        if watch.as_mut().poll(&mut cx).is_pending() {
            missed += 1;
        }
    }
    assert_eq!(missed, 0, "the watch had not fired at the reply in {missed} of 30 reads");
    within(10, "close", s.close()).await;
}

//! One connection attempt: resolve, TCP connect, `TCP_NODELAY`, TLS, the
//! connect handshake, SASL and `addAuth`. Ends with a connection ready for
//! requests, or says why not and whether trying again could help.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::timeout_at;

use crate::codec::frame::{next_frame, write_frame};
use crate::codec::ops::{xid, Code};
use crate::codec::records::{ConnectRequest, ConnectResponse, ReplyHeader, Request, Response};
use crate::config::Config;
use crate::hosts::Host;
use crate::sasl::DigestMd5;

/// A plain or TLS socket.
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Why an attempt failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// This server cannot be used now for a reason waiting will not change
    /// soon: refused, not resolvable, TLS refused.
    Unusable(Unusable),
    /// It may work on another try (timeout, reset, server not serving).
    Transient(String),
    /// The name lookup, the TCP connect or the TLS handshake went unanswered
    /// until the attempt's end: the connect request was never written (a
    /// name server that does not answer, a host that drops SYNs, a server
    /// hung)
    /// ([`zklock_proto::reconnect::Ended::Unsent`]).
    Unsent(String),
    /// The connect request was sent, and neither its answer nor the
    /// server's close or reset came in time (or, after its answer, a login
    /// step's): the server (or one stalled with the request in its socket,
    /// once it runs again) may have read it and touched the session.
    /// Otherwise as `Transient`.
    Unanswered(String),
    /// The connect was answered, and a login step (SASL, `addAuth`) failed
    /// after it (a reset, a reply it could not use, no answer in time);
    /// `answered` is when the connect's answer was read: the server
    /// renewed the session when it read the connect (its login steps it
    /// answers itself, touching nothing: `ZooKeeperServer.processPacket`),
    /// and the reconnect counts that
    /// ([`zklock_proto::reconnect::Ended::AnsweredThenFailed`]).
    AnsweredThenFailed {
        /// When the connect's answer was read.
        answered: Instant,
        /// What failed after it.
        why: String,
    },
    /// The server said the session is expired.
    Expired,
    /// The server refused our credentials.
    AuthFailed(String),
    /// The session's close, written right behind the connect request
    /// ([`CloseAsked`]), was answered: the session is closed.
    Closed,
    /// The connect was answered (the session lives) but the close written
    /// behind it was not: it may not have reached the server, as a close
    /// lost with its connection ([`zklock_proto::reconnect::Closing`]).
    CloseLost,
}

/// An attempt's progress, shared with the session task while it runs.
#[derive(Default)]
pub(crate) struct Progress {
    /// Its server accepted the TCP connection (the attempt reached it:
    /// `zklock_proto::reconnect::Asked`).
    pub reached: AtomicBool,
    /// Its connect was handed to the socket: from then on its server may
    /// read it.
    pub written: AtomicBool,
    /// A new server list did not let it go on
    /// (`zklock_proto::reconnect::RoundRobin::set_hosts`): its answer is
    /// waited for a while, and its connection used only if its server is
    /// in the list then.
    pub left: AtomicBool,
}

/// Whether the session's close was asked while it reconnects. An attempt
/// that sees it writes a `closeSession` right behind its connect request
/// (before its answer, if asked meanwhile): ZooKeeper reads a connection's
/// requests in order once the connect is processed, so a server stalled
/// now (a GC pause, SIGSTOP; its kernel accepts the connection and keeps
/// the bytes) that reads the connect when it runs again reads the close
/// too, and ends the session at once. Without it, it revalidated the
/// session and left it, with its nodes, for a session timeout: the
/// process that asked for the close had exited (outside attack round 30,
/// F2: `zklock run` exiting while its server was stalled).
pub(crate) type CloseAsked = tokio::sync::watch::Receiver<bool>;

/// Why a server cannot be used.
#[derive(Debug)]
pub(crate) enum Unusable {
    /// Every address refused the TCP connection.
    Refused,
    /// Another reason, in words.
    Why(String),
}

/// A connection ready for requests.
pub(crate) struct Ready {
    pub stream: Stream,
    /// Bytes read past the handshake.
    pub rbuf: BytesMut,
    pub response: ConnectResponse,
    /// Taken just before the connect request was handed to the socket.
    pub connect_sent: Instant,
    /// When its answer was read.
    pub answered: Instant,
    pub server: SocketAddr,
    /// Next xid to use (SASL used some).
    pub next_xid: i32,
}

/// What the attempt asks for.
pub(crate) struct Attach {
    pub session_id: i64,
    pub password: Vec<u8>,
    pub last_zxid: i64,
    pub next_xid: i32,
}

/// Tries `host` until `deadline`, its connect written by `write_by` (its
/// name lookup, TCP connect and TLS handshake done; no later than
/// `deadline`) or [`Failure::Unsent`], telling `progress` when its connect
/// is written (whether a new list left it is the caller's to act on).
pub(crate) async fn attempt(
    cfg: &Config,
    host: &Host,
    attach: &Attach,
    deadline: tokio::time::Instant,
    write_by: tokio::time::Instant,
    close: Option<&CloseAsked>,
    progress: &Progress,
) -> Result<Ready, Failure> {
    let write_by = write_by.min(deadline);
    let unsent = |what: &str| Failure::Unsent(format!("{what} took longer than the attempt's time"));
    let addrs: Vec<SocketAddr> =
        match timeout_at(write_by, tokio::net::lookup_host((host.name.as_str(), host.port))).await {
            Err(_) => return Err(unsent("name lookup")),
            Ok(Err(e)) => return Err(Failure::Unusable(Unusable::Why(format!("the name does not resolve ({e})")))),
            Ok(Ok(a)) => a.collect(),
        };
    if addrs.is_empty() {
        return Err(Failure::Unusable(Unusable::Why("the name has no address".into())));
    }
    let mut last = None;
    let mut tcp = None;
    for addr in &addrs {
        match timeout_at(write_by, TcpStream::connect(addr)).await {
            Err(_) => return Err(unsent("TCP connect")),
            Ok(Ok(s)) => {
                tcp = Some((s, *addr));
                break;
            },
            Ok(Err(e)) => last = Some((addr, e)),
        }
    }
    let Some((tcp, server)) = tcp else {
        let (addr, e) = last.expect("an address was tried");
        return Err(match e.kind() {
            io::ErrorKind::ConnectionRefused => Failure::Unusable(Unusable::Refused),
            // No route, network down: waiting will not change it soon.
            io::ErrorKind::HostUnreachable | io::ErrorKind::NetworkUnreachable | io::ErrorKind::AddrNotAvailable => {
                Failure::Unusable(Unusable::Why(format!("{addr}: {e}")))
            },
            _ => Failure::Transient(format!("{addr}: {e}")),
        });
    };
    // Our own socket only: replies must not wait for Nagle.
    progress.reached.store(true, Ordering::SeqCst);
    tcp.set_nodelay(true).map_err(|e| Failure::Transient(format!("TCP_NODELAY: {e}")))?;
    let mut stream = match &cfg.tls {
        None => Stream::Plain(tcp),
        Some(tls) => {
            let name = tls.server_name.clone().unwrap_or_else(|| host.name.clone());
            let name = rustls::pki_types::ServerName::try_from(name.clone()).map_err(|_| {
                Failure::Unusable(Unusable::Why(format!("{name:?} is no name a certificate can be checked against")))
            })?;
            let connector = tokio_rustls::TlsConnector::from(tls.config.clone());
            match timeout_at(write_by, connector.connect(name, tcp)).await {
                Err(_) => return Err(unsent("TLS handshake")),
                Ok(Ok(s)) => Stream::Tls(Box::new(s)),
                Ok(Err(e)) => return Err(tls_failure(host, &tls.ca_name, e)),
            }
        },
    };

    let mut out = Vec::with_capacity(64);
    write_frame(&mut out, |b| {
        ConnectRequest {
            last_zxid_seen: attach.last_zxid,
            timeout_ms: i32::try_from(cfg.session_timeout.as_millis()).unwrap_or(i32::MAX),
            session_id: attach.session_id,
            password: attach.password.clone(),
            read_only: false,
        }
        .encode(b)
    });
    let mut next_xid = attach.next_xid;
    let mut close = close.cloned();
    // The close's xid, once written behind the connect.
    let mut closing = None;
    if close.as_mut().is_some_and(|c| *c.borrow_and_update()) {
        closing = Some(write_close(&mut out, &mut next_xid));
    }
    let connect_sent = Instant::now();
    progress.written.store(true, Ordering::SeqCst);
    send(&mut stream, &out, deadline, "sending the connect request").await?;
    let mut rbuf = BytesMut::with_capacity(4096);
    let body = loop {
        let Some(asked) = close.as_mut().filter(|_| closing.is_none()) else {
            break read_frame(&mut stream, &mut rbuf, cfg.max_frame, deadline).await?;
        };
        // Cancelled by the close, `read_frame` keeps in `rbuf` what it read.
        let changed = tokio::select! {
            body = read_frame(&mut stream, &mut rbuf, cfg.max_frame, deadline) => break body?,
            changed = asked.changed() => changed.map(|()| *asked.borrow_and_update()),
        };
        match changed {
            Ok(true) => {
                let mut out = Vec::with_capacity(16);
                closing = Some(write_close(&mut out, &mut next_xid));
                send(&mut stream, &out, deadline, "sending the close").await?;
            },
            Ok(false) => {},
            // The session is gone: no close will come.
            Err(_) => close = None,
        }
    };
    let answered = Instant::now();
    let response =
        ConnectResponse::decode(&body).map_err(|e| Failure::Transient(format!("bad connect response: {e}")))?;
    if response.timeout_ms <= 0 {
        return Err(Failure::Expired);
    }
    if let Some(x) = closing {
        // The close's answer is the next frame (nothing else was sent).
        let reply = read_frame(&mut stream, &mut rbuf, cfg.max_frame, deadline).await;
        return match reply.as_deref().map(split) {
            // Answered, or the session expired meanwhile: it is over.
            Ok(Ok((h, _))) if h.xid == x && matches!(Code::from_wire(h.err), None | Some(Code::SessionExpired)) => {
                Err(Failure::Closed)
            },
            _ => Err(Failure::CloseLost),
        };
    }
    // A re-attach answered with another session: ours is gone (a server
    // never does this; it answers timeout 0), and its ephemeral nodes with it.
    if attach.session_id != 0 && response.session_id != attach.session_id {
        return Err(Failure::Expired);
    }
    if response.read_only {
        return Err(Failure::Transient("the server is read-only".to_string()));
    }
    // A valid answer: the server renewed the session when it read the
    // connect. Its login steps it answers itself (ZooKeeper 3.8's
    // `processPacket` handles `auth` and `sasl` packets without touching
    // the session): one failing, or unanswered, after the connect's answer
    // puts giving up off from that answer.
    let login = async {
        if let Some((user, password)) = &cfg.sasl {
            let mut sasl = DigestMd5::new(user, password);
            let mut token = Vec::new();
            let mut round = 0;
            loop {
                round += 1;
                if round > 4 {
                    return Err(Failure::AuthFailed(format!("{host}: SASL exchange did not end")));
                }
                let x = take_xid(&mut next_xid);
                let reply =
                    roundtrip(&mut stream, &mut rbuf, cfg, deadline, x, &Request::Sasl { token: token.clone() })
                        .await?;
                let (h, body) = split(&reply)?;
                if h.xid != x {
                    return Err(Failure::Transient(format!("SASL reply has xid {} not {x}", h.xid)));
                }
                if let Some(code) = Code::from_wire(h.err) {
                    return Err(Failure::AuthFailed(format!("{host}: SASL login refused ({code})")));
                }
                let challenge = match Response::decode(crate::codec::ops::op::SASL, body) {
                    Ok(Response::Sasl(t)) => t,
                    _ => return Err(Failure::Transient("bad SASL reply".to_string())),
                };
                if round == 1 {
                    token = sasl.respond(&challenge).map_err(|e| Failure::AuthFailed(format!("{host}: SASL: {e}")))?;
                } else {
                    sasl.verify(&challenge).map_err(|e| Failure::AuthFailed(format!("{host}: SASL: {e}")))?;
                    break;
                }
            }
        }
        for (scheme, auth) in &cfg.auth {
            let req = Request::Auth { scheme: scheme.clone(), auth: auth.clone() };
            let reply = roundtrip(&mut stream, &mut rbuf, cfg, deadline, xid::AUTH, &req).await?;
            let (h, _) = split(&reply)?;
            if h.xid != xid::AUTH {
                return Err(Failure::Transient(format!("auth reply has xid {}", h.xid)));
            }
            if let Some(code) = Code::from_wire(h.err) {
                return Err(Failure::AuthFailed(format!("{host}: addAuth {scheme:?} refused ({code})")));
            }
        }
        Ok(())
    };
    let logged_in = login.await;
    logged_in.map_err(|f| match f {
        Failure::Transient(why) | Failure::Unanswered(why) => Failure::AnsweredThenFailed { answered, why },
        other => other,
    })?;
    Ok(Ready { stream, rbuf, response, connect_sent, answered, server, next_xid })
}

/// Appends a `closeSession` request to `out`; its xid.
fn write_close(out: &mut Vec<u8>, next_xid: &mut i32) -> i32 {
    let x = take_xid(next_xid);
    write_frame(out, |b| Request::CloseSession.encode(x, b));
    x
}

/// Writes `out` to `stream` by `deadline`; `what` names it in the error.
async fn send(stream: &mut Stream, out: &[u8], deadline: tokio::time::Instant, what: &str) -> Result<(), Failure> {
    match timeout_at(deadline, async {
        stream.write_all(out).await?;
        stream.flush().await
    })
    .await
    {
        Err(_) => Err(Failure::Transient(format!("{what} took longer than the attempt's time"))),
        Ok(Err(e)) => Err(Failure::Transient(format!("{what}: {e}"))),
        Ok(Ok(())) => Ok(()),
    }
}

fn take_xid(next: &mut i32) -> i32 {
    let x = *next;
    *next = if x == i32::MAX { 1 } else { x + 1 };
    x
}

fn split(frame: &[u8]) -> Result<(ReplyHeader, &[u8]), Failure> {
    ReplyHeader::split(frame).map_err(|e| Failure::Transient(format!("{e}")))
}

async fn roundtrip(
    stream: &mut Stream,
    rbuf: &mut BytesMut,
    cfg: &Config,
    deadline: tokio::time::Instant,
    x: i32,
    req: &Request,
) -> Result<Vec<u8>, Failure> {
    let mut out = Vec::new();
    write_frame(&mut out, |b| req.encode(x, b));
    send(stream, &out, deadline, "sending a login request").await?;
    read_frame(stream, rbuf, cfg.max_frame, deadline).await
}

/// Reads one whole frame's body (handshake only; the session's loop reads
/// its own way).
async fn read_frame(
    stream: &mut Stream,
    rbuf: &mut BytesMut,
    max: usize,
    deadline: tokio::time::Instant,
) -> Result<Vec<u8>, Failure> {
    loop {
        match next_frame(rbuf, max) {
            Err(e) => return Err(Failure::Transient(format!("{e}"))),
            Ok(Some(n)) => {
                let frame = rbuf.split_to(4 + n);
                return Ok(frame[4..].to_vec());
            },
            Ok(None) => {},
        }
        rbuf.reserve(4096);
        match timeout_at(deadline, stream.read_buf(rbuf)).await {
            Err(_) => return Err(Failure::Unanswered("no answer to the connect request in time".to_string())),
            Ok(Ok(0)) => return Err(Failure::Transient(
                "the server closed the connection during the handshake (not serving, or our session is unknown to it)"
                    .to_string(),
            )),
            Ok(Ok(_)) => {},
            Ok(Err(e)) => return Err(Failure::Transient(format!("reading the handshake: {e}"))),
        }
    }
}

/// A TLS handshake error in words that say what to change.
fn tls_failure(host: &Host, ca: &str, e: io::Error) -> Failure {
    let why = match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        Some(tls) => crate::tls::explained(tls, &host.name, ca),
        None if matches!(
            e.kind(),
            io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted
        ) =>
        {
            "the server ended the connection during the TLS handshake (is this ZooKeeper's secureClientPort?)"
                .to_string()
        },
        None => e.to_string(),
    };
    Failure::Unusable(Unusable::Why(format!("TLS handshake failed: {why}")))
}

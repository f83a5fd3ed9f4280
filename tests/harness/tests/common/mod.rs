//! A tiny raw ZooKeeper wire client for the harness' own tests.
#![allow(dead_code, missing_docs)]

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

pub const ZNONODE: i32 = -101;

/// Frames `body` with its 4-byte big-endian length.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut v = (body.len() as i32).to_be_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

fn put_i32(v: &mut Vec<u8>, x: i32) {
    v.extend_from_slice(&x.to_be_bytes());
}
fn put_i64(v: &mut Vec<u8>, x: i64) {
    v.extend_from_slice(&x.to_be_bytes());
}
fn put_str(v: &mut Vec<u8>, s: &str) {
    put_i32(v, s.len() as i32);
    v.extend_from_slice(s.as_bytes());
}

/// Reads one frame body.
pub fn read_frame(s: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let len = i32::from_be_bytes(len);
    if !(0..=16 << 20).contains(&len) {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "bad frame length"));
    }
    let mut body = vec![0u8; len as usize];
    s.read_exact(&mut body)?;
    Ok(body)
}

pub fn connect_request() -> Vec<u8> {
    connect_request_with_timeout(10_000)
}

pub fn connect_request_with_timeout(session_timeout_ms: i32) -> Vec<u8> {
    let mut b = Vec::new();
    put_i32(&mut b, 0); // protocolVersion
    put_i64(&mut b, 0); // lastZxidSeen
    put_i32(&mut b, session_timeout_ms); // timeOut
    put_i64(&mut b, 0); // sessionId
    put_i32(&mut b, 16); // passwd
    b.extend_from_slice(&[0u8; 16]);
    b.push(0); // readOnly
    frame(&b)
}

/// Connects to `addr` and performs the ZooKeeper handshake; returns the stream
/// (with a read timeout of `timeout`) and the session id.
pub fn session(addr: SocketAddr, timeout: Duration) -> io::Result<(TcpStream, i64)> {
    session_with_timeout(addr, 10_000, timeout).map(|(s, id, _)| (s, id))
}

/// Like [`session`], asking for a session timeout of `session_timeout_ms`;
/// also returns the negotiated session timeout (ms).
pub fn session_with_timeout(
    addr: SocketAddr,
    session_timeout_ms: i32,
    timeout: Duration,
) -> io::Result<(TcpStream, i64, i32)> {
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_nodelay(true)?;
    s.write_all(&connect_request_with_timeout(session_timeout_ms))?;
    let body = read_frame(&mut s)?;
    if body.len() < 16 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "short connect response"));
    }
    let negotiated = i32::from_be_bytes(body[4..8].try_into().expect("4 bytes"));
    let session_id = i64::from_be_bytes(body[8..16].try_into().expect("8 bytes"));
    Ok((s, session_id, negotiated))
}

/// create (type 1) of `path` with empty data, world:anyone ALL, persistent.
pub fn create_request(xid: i32, path: &str) -> Vec<u8> {
    create_request_with_flags(xid, path, 0)
}

/// create (type 1) of `path` with empty data, world:anyone ALL and create
/// `flags` (0 persistent, 1 ephemeral, 2 sequential, 3 both).
pub fn create_request_with_flags(xid: i32, path: &str, flags: i32) -> Vec<u8> {
    let mut b = Vec::new();
    put_i32(&mut b, xid);
    put_i32(&mut b, 1);
    put_str(&mut b, path);
    put_i32(&mut b, 0); // data: empty buffer
    put_i32(&mut b, 1); // acl count
    put_i32(&mut b, 31); // perms ALL
    put_str(&mut b, "world");
    put_str(&mut b, "anyone");
    put_i32(&mut b, flags);
    frame(&b)
}

/// exists (type 3) of `path`, no watch.
pub fn exists_request(xid: i32, path: &str) -> Vec<u8> {
    let mut b = Vec::new();
    put_i32(&mut b, xid);
    put_i32(&mut b, 3);
    put_str(&mut b, path);
    b.push(0);
    frame(&b)
}

/// getChildren (type 8) of `path`, no watch.
pub fn get_children_request(xid: i32, path: &str) -> Vec<u8> {
    let mut b = Vec::new();
    put_i32(&mut b, xid);
    put_i32(&mut b, 8);
    put_str(&mut b, path);
    b.push(0);
    frame(&b)
}

/// The child names of a getChildren reply body (after its header).
pub fn children(body: &[u8]) -> Vec<String> {
    let mut rest = &body[16..];
    let take_i32 = |r: &mut &[u8]| {
        let v = i32::from_be_bytes(r[..4].try_into().expect("4 bytes"));
        *r = &r[4..];
        v
    };
    let n = take_i32(&mut rest);
    (0..n)
        .map(|_| {
            let len = take_i32(&mut rest) as usize;
            let name = String::from_utf8_lossy(&rest[..len]).into_owned();
            rest = &rest[len..];
            name
        })
        .collect()
}

/// (xid, zxid, err) of a reply body.
pub fn reply_header(body: &[u8]) -> (i32, i64, i32) {
    assert!(body.len() >= 16, "short reply: {body:?}");
    (
        i32::from_be_bytes(body[0..4].try_into().expect("4 bytes")),
        i64::from_be_bytes(body[4..12].try_into().expect("8 bytes")),
        i32::from_be_bytes(body[12..16].try_into().expect("4 bytes")),
    )
}

/// Sends a request and reads the reply header.
pub fn call(s: &mut TcpStream, req: &[u8]) -> io::Result<(i32, i64, i32)> {
    s.write_all(req)?;
    let body = read_frame(s)?;
    Ok(reply_header(&body))
}

/// Error code of `exists(path)` over a fresh direct session (0 = exists).
pub fn exists(addr: SocketAddr, path: &str) -> i32 {
    let (mut s, _) = session(addr, Duration::from_secs(5)).expect("direct session");
    let (xid, _, err) = call(&mut s, &exists_request(7, path)).expect("exists reply");
    assert_eq!(xid, 7);
    err
}

/// Whether the peer closed `s` (EOF or reset) within its read timeout,
/// without sending anything.
pub fn closed_without_data(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 64];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(n) => panic!("unexpected {n} bytes: {:?}", &b[..n]),
        Err(e) if e.kind() == io::ErrorKind::ConnectionReset => true,
        Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => false,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

/// Whether a read on `s` times out (silent peer).
pub fn read_times_out(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 64];
    matches!(s.read(&mut b), Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut))
}

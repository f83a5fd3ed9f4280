//! Turns Nagle's algorithm off on the ZooKeeper client's connections.
//!
//! `zookeeper-client` 0.11.2 leaves `TCP_NODELAY` unset. With Nagle on, a
//! request written while an earlier one is still unacknowledged waits for
//! the server's reply to the first: the getChildren that zklock pipelines
//! behind its create, and the delete behind the removeWatches of a release,
//! each cost a round trip of their own, so the pipelining saved nothing
//! (issue 8's measurements). zklock cannot reach the library's socket, so
//! after every (re)connect it looks for its own process's sockets whose peer
//! is one of the connect string's servers and sets `TCP_NODELAY` on them.
//! That may also touch another ZooKeeper client of this process connected to
//! the same server, which only makes its small requests go out sooner.
//!
//! Linux only (`/proc/self/fd`); elsewhere it does nothing. Remove it once
//! the client sets `TCP_NODELAY` itself.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// The socket addresses of the servers in a validated connect string
/// (`host:port[,host:port...][/chroot]`), looked up on the runtime's
/// blocking pool, all at once, each within `patience` (a slow resolver
/// holds up no caller); servers that do not resolve in time are left out.
pub(crate) async fn server_addrs(hosts: &str, patience: std::time::Duration) -> Vec<SocketAddr> {
    let servers = hosts.split('/').next().unwrap_or_default();
    let mut lookups = tokio::task::JoinSet::new();
    for (i, server) in servers.split(',').map(|h| h.trim().to_owned()).enumerate() {
        lookups.spawn(async move { (i, tokio::time::timeout(patience, tokio::net::lookup_host(server)).await) });
    }
    let mut found = Vec::new();
    while let Some(done) = lookups.join_next().await {
        if let Ok((i, Ok(Ok(addrs)))) = done {
            found.push((i, addrs.collect::<Vec<_>>()));
        }
    }
    // In the order of the connect string.
    found.sort_by_key(|(i, _)| *i);
    found.into_iter().flat_map(|(_, addrs)| addrs).collect()
}

/// Sets `TCP_NODELAY` on every socket of this process connected to one of
/// `servers`; returns how many it set.
pub(crate) fn disable_nagle(servers: &[SocketAddr]) -> usize {
    if servers.is_empty() {
        return 0;
    }
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else { return 0 };
    let mut set = 0;
    for entry in fds.flatten() {
        let is_socket =
            std::fs::read_link(entry.path()).is_ok_and(|t| t.as_os_str().as_encoded_bytes().starts_with(b"socket:"));
        let Some(fd) = entry.file_name().to_str().and_then(|s| s.parse::<libc::c_int>().ok()) else { continue };
        if is_socket && peer(fd).is_some_and(|p| servers.contains(&p)) && set_nodelay(fd) {
            set += 1;
        }
    }
    set
}

/// The peer of socket `fd`, if it is a connected IPv4/IPv6 socket.
fn peer(fd: libc::c_int) -> Option<SocketAddr> {
    // SAFETY: sockaddr_storage is plain data; all-zero is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: `storage` is writable and `len` holds its size; getpeername
    // writes at most `len` bytes and fails harmlessly on a non-socket fd.
    if unsafe { libc::getpeername(fd, std::ptr::addr_of_mut!(storage).cast(), &mut len) } != 0 {
        return None;
    }
    match libc::c_int::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a: libc::sockaddr_in = unsafe { std::ptr::addr_of!(storage).cast::<libc::sockaddr_in>().read() };
            let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(a.sin_port))))
        },
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a: libc::sockaddr_in6 = unsafe { std::ptr::addr_of!(storage).cast::<libc::sockaddr_in6>().read() };
            let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(ip, u16::from_be(a.sin6_port), a.sin6_flowinfo, a.sin6_scope_id)))
        },
        _ => None,
    }
}

fn set_nodelay(fd: libc::c_int) -> bool {
    let one: libc::c_int = 1;
    // SAFETY: `one` outlives the call and the length is its size.
    unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            std::ptr::addr_of!(one).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_our_connection_to_a_server_and_sets_nodelay_on_it() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let stream = std::net::TcpStream::connect(addr).expect("connect");
        let _accepted = listener.accept().expect("accept");
        assert!(!stream.nodelay().expect("nodelay"), "Nagle is on by default");
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let patience = std::time::Duration::from_secs(3);
        assert_eq!(
            rt.block_on(server_addrs(&format!("{addr},127.0.0.1:1,zz.invalid:2181/chroot"), patience)),
            vec![addr, "127.0.0.1:1".parse().expect("addr")]
        );
        assert!(disable_nagle(&[addr]) >= 1);
        assert!(stream.nodelay().expect("nodelay"), "TCP_NODELAY set on the connection to the server");
        assert_eq!(disable_nagle(&[]), 0);
    }
}

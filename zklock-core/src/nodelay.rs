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

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, ToSocketAddrs};

/// The socket addresses of the servers in a validated connect string
/// (`host:port[,host:port...][/chroot]`). Names are resolved now (this may
/// block on DNS); servers that do not resolve are left out.
pub(crate) fn server_addrs(hosts: &str) -> Vec<SocketAddr> {
    let servers = hosts.split('/').next().unwrap_or_default();
    servers.split(',').filter_map(|h| h.trim().to_socket_addrs().ok()).flatten().collect()
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
        assert_eq!(
            server_addrs(&format!("{addr},127.0.0.1:1/chroot")),
            vec![addr, "127.0.0.1:1".parse().expect("addr")]
        );
        assert!(disable_nagle(&[addr]) >= 1);
        assert!(stream.nodelay().expect("nodelay"), "TCP_NODELAY set on the connection to the server");
        assert_eq!(disable_nagle(&[]), 0);
    }
}

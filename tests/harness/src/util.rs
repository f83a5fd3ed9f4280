//! Small helpers shared by the cluster, the proxy and the binary.

use std::collections::hash_map::RandomState;
use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Polls `cond` every 10 ms until it holds (true) or `limit` passes
/// (false). Blocking, on the caller's thread.
pub fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sends the ZooKeeper four-letter word `word` (e.g. `"srvr"`, `"wchc"`,
/// `"mntr"`) to `addr` and returns everything the server writes back until it
/// closes the connection.
///
/// `timeout` bounds the whole exchange (connect, write and read). The server
/// must whitelist the word (the harness' servers whitelist all of them).
///
/// # Errors
///
/// * [`io::ErrorKind::InvalidInput`] if `word` is not exactly 4 ASCII letters;
/// * connection errors (e.g. `ConnectionRefused` when nothing listens);
/// * [`io::ErrorKind::TimedOut`] if the server does not close the connection
///   within `timeout` (e.g. the server is frozen).
///
/// # Threads
///
/// Blocking; callable from any thread.
pub fn four_letter_word(addr: SocketAddr, word: &str, timeout: Duration) -> io::Result<String> {
    if word.len() != 4 || !word.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("not a four-letter word: {word:?}")));
    }
    let deadline = Instant::now() + timeout;
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_nodelay(true)?;
    s.set_write_timeout(Some(remaining(deadline)?))?;
    s.write_all(word.as_bytes())?;
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        s.set_read_timeout(Some(remaining(deadline)?))?;
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {},
            Err(e) if is_timeout(&e) => return Err(timed_out(addr, word, timeout)),
            // The server closes right after writing; a reset after a complete
            // answer still means we have the answer.
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset && !out.is_empty() => break,
            Err(e) => return Err(e),
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn timed_out(addr: SocketAddr, word: &str, timeout: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("four-letter word {word:?} to {addr}: no complete answer within {timeout:?}"),
    )
}

fn remaining(deadline: Instant) -> io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"))
    } else {
        Ok(left)
    }
}

/// True for the error kinds a socket read/write timeout produces.
pub(crate) fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

/// Extracts the value of the `Mode:` line of a `srvr`/`stat` answer
/// (`"standalone"`, `"leader"`, `"follower"`, `"observer"`, ...).
///
/// Returns `None` when there is no such line, e.g. when the server answers
/// "This ZooKeeper instance is not currently serving requests".
pub fn parse_mode(srvr_output: &str) -> Option<String> {
    srvr_output.lines().find_map(|l| l.strip_prefix("Mode:")).map(|m| m.trim().to_string())
}

/// Whether process `pid` exists and is not a zombie.
///
/// Uses `kill(pid, 0)` and, when that succeeds, `/proc/<pid>/stat` to treat
/// zombies (dead but not yet reaped, e.g. orphans waiting for a non-reaping
/// init in a container) as gone. `EPERM` counts as alive.
///
/// Callable from any thread; never fails.
pub fn process_alive(pid: u32) -> bool {
    let Ok(pid_t) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid_t <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence/permission.
    let rc = unsafe { libc::kill(pid_t, 0) };
    if rc != 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EPERM) {
        return false;
    }
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // Format: "pid (comm) S ...": the state follows the last ')'.
        Ok(stat) => match stat.rfind(')') {
            Some(p) => !matches!(stat[p + 1..].trim_start().chars().next(), Some('Z' | 'X')),
            None => true,
        },
        // No such entry: gone, unless there is no procfs at all (then trust
        // kill()).
        Err(_) => !Path::new("/proc/self").exists(),
    }
}

/// The last `n` lines of `s`.
pub(crate) fn tail_str(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The last `n` lines of the file at `path` (reads at most its last 64 KiB).
pub(crate) fn tail_file(path: &Path, n: usize) -> io::Result<String> {
    use std::io::{Seek, SeekFrom};
    let mut f = fs::File::open(path)?;
    let len = f.metadata()?.len();
    let start = len.saturating_sub(64 * 1024);
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)?;
    Ok(tail_str(&String::from_utf8_lossy(&buf), n))
}

/// A random-ish 64-bit number (std's per-process random hash keys mixed with
/// the clock); good enough for unique directory names.
pub(crate) fn random_u64() -> u64 {
    let mut h = RandomState::new().build_hasher();
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    h.write_u128(nanos);
    h.finish()
}

/// Creates a fresh directory `temp_dir()/zklock-harness-<pid>-<n>-<rand>`.
pub(crate) fn make_temp_root() -> io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut last_err = None;
    for _ in 0..16 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "zklock-harness-{}-{}-{:08x}",
            std::process::id(),
            n,
            random_u64() as u32
        ));
        match fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_err = Some(e),
            Err(e) => return Err(crate::install::annotate(e, &format!("cannot create {}", path.display()))),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::new(io::ErrorKind::AlreadyExists, "temp dir")))
}

/// `n` distinct free TCP ports on 127.0.0.1, each held by a listener until
/// the returned listeners are dropped.
///
/// The ports are drawn at random from below the kernel's ephemeral range
/// (`net.ipv4.ip_local_port_range`), from which `bind(0)` and every
/// outgoing connection take theirs: a member stopped and started again on
/// its old port finds it free unless another process bound that very
/// number on purpose (with `bind(0)` ports, a client's connection or a
/// proxy could take the port of a member while it was down, and its
/// restart failed). Where that range leaves fewer than [`LOW_PORTS_MIN`]
/// ports below it, or none of [`LOW_PORT_TRIES`] draws is free, a port is
/// taken by `bind(0)` instead. Once the listeners are dropped another
/// process may grab a port before we use it, and callers retry.
pub(crate) fn reserve_ports(n: usize) -> io::Result<Vec<TcpListener>> {
    let below = ephemeral_start().map(|start| LOW_PORT_FLOOR..start).filter(|r| r.len() >= LOW_PORTS_MIN);
    let mut held: Vec<TcpListener> = Vec::with_capacity(n);
    for _ in 0..n {
        let drawn = below.clone().and_then(|range| {
            (0..LOW_PORT_TRIES).find_map(|_| {
                let port = range.start + (random_u64() % range.len() as u64) as u16;
                // A port already in `held` cannot be bound twice anyway
                // (no SO_REUSEPORT); the listener holds it.
                TcpListener::bind(("127.0.0.1", port)).ok()
            })
        });
        held.push(match drawn {
            Some(listener) => listener,
            None => TcpListener::bind("127.0.0.1:0")?,
        });
    }
    Ok(held)
}

/// The lowest port [`reserve_ports`] draws (above the well-known and the
/// commonly registered services' ports).
const LOW_PORT_FLOOR: u16 = 10_000;
/// Fewest ports below the ephemeral range for [`reserve_ports`] to draw
/// there.
const LOW_PORTS_MIN: usize = 2_000;
/// Draws [`reserve_ports`] makes for one port before it takes `bind(0)`.
const LOW_PORT_TRIES: usize = 64;

/// The first port of the kernel's ephemeral range, if it can be read.
fn ephemeral_start() -> Option<u16> {
    let range = fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    range.split_whitespace().next()?.parse().ok()
}

/// Sets `SO_LINGER {on, 0}` so that closing the socket sends a RST.
pub(crate) fn set_linger_zero(s: &TcpStream) -> io::Result<()> {
    let lg = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: valid fd, pointer to a properly sized linger struct.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&lg as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ports come from below the ephemeral range (where the kernel's
    /// range leaves room, as on Linux's default 32768-60999), all distinct
    /// and held.
    #[test]
    fn reserved_ports_are_below_the_ephemeral_range() {
        let Some(start) = ephemeral_start().filter(|&s| usize::from(s - LOW_PORT_FLOOR.min(s)) >= LOW_PORTS_MIN) else {
            return; // no room below it here: bind(0) is the documented fallback
        };
        let held = reserve_ports(12).expect("reserve");
        let mut ports: Vec<u16> = held.iter().map(|l| l.local_addr().expect("addr").port()).collect();
        assert!(ports.iter().all(|&p| (LOW_PORT_FLOOR..start).contains(&p)), "{ports:?} not below {start}");
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 12, "distinct");
        // Held: none can be bound again while the listeners live.
        assert!(ports.iter().all(|&p| TcpListener::bind(("127.0.0.1", p)).is_err()));
    }
}

//! Validation of user input: lock paths and connect strings. Every rejection
//! names what was wrong.

use std::time::Duration;

use crate::error::{shown, Error, Result};

/// The longest lock path, and the longest chroot, in bytes of UTF-8 (32 KiB).
/// ZooKeeper itself has no path limit below its packet limit (1 MiB by
/// default, `jute.maxbuffer`), but a server that receives a larger packet
/// drops the connection, and the client then retries the request forever;
/// a lock path appears in several requests of one acquire. Anything longer
/// than this is refused before any request is sent.
pub const MAX_PATH_BYTES: usize = 32 * 1024;

/// Checks a lock path: absolute, not the root, no empty, `.` or `..`
/// components, no trailing slash, no character ZooKeeper forbids (control
/// characters, U+E000 to U+F8FF, and U+FFF0 and above, which takes in every
/// character outside the Basic Multilingual Plane), at most
/// [`MAX_PATH_BYTES`], not under the reserved `/zookeeper`.
///
/// # Errors
/// [`crate::ErrorKind::InvalidPath`] naming the problem.
pub fn validate_lock_path(path: &str) -> Result<()> {
    if path.is_empty() {
        return Err(Error::invalid_path(path, "the path is empty"));
    }
    if path == "/" {
        return Err(Error::invalid_path(path, "the root cannot be a lock path"));
    }
    validate_znode_path(path)?;
    if is_reserved(path) {
        return Err(Error::invalid_path(path, "/zookeeper is reserved for the server"));
    }
    Ok(())
}

/// Checks the shared count of a semaphore at `path`
/// ([`crate::Client::semaphore_with_count`]): a valid path, not the
/// semaphore's path, not inside it, not one of its ancestors (the
/// semaphore's parents are made as container nodes: the count would become
/// one, or sit in one, and ZooKeeper deletes containers once they are
/// empty; outside attack round 18, F1 and F2). Needs no connection, so a
/// front end can check before it connects.
///
/// # Errors
/// [`crate::ErrorKind::InvalidPath`] for a count path that is not a valid
/// lock path; [`crate::ErrorKind::InvalidArgument`] for the others.
pub fn validate_shared_count_path(path: &str, count_path: &str) -> Result<()> {
    validate_lock_path(count_path)?;
    if count_path == path || count_path.starts_with(&format!("{path}/")) {
        return Err(Error::invalid_argument(format!(
            "the shared count {count_path:?} must not be the semaphore's path or inside it"
        )));
    }
    if path.starts_with(&format!("{count_path}/")) {
        return Err(Error::invalid_argument(format!(
            "the shared count {count_path:?} must not be an ancestor of the semaphore's path {path:?} (its parents \
             are container nodes, which ZooKeeper deletes with the count once they are empty)"
        )));
    }
    Ok(())
}

/// Whether `path` is ZooKeeper's reserved subtree or in it.
fn is_reserved(path: &str) -> bool {
    path == "/zookeeper" || path.starts_with("/zookeeper/")
}

/// Checks the syntax of an absolute znode path other than "/".
fn validate_znode_path(path: &str) -> Result<()> {
    if path.len() > MAX_PATH_BYTES {
        return Err(Error::invalid_path(path, &format!("at most {MAX_PATH_BYTES} bytes are allowed")));
    }
    if !path.starts_with('/') {
        return Err(Error::invalid_path(path, "must start with '/'"));
    }
    if path.ends_with('/') {
        return Err(Error::invalid_path(path, "must not end with '/'"));
    }
    for component in path[1..].split('/') {
        match component {
            "" => return Err(Error::invalid_path(path, "empty component ('//')")),
            "." | ".." => return Err(Error::invalid_path(path, "'.' and '..' components are not allowed")),
            _ => {},
        }
    }
    if let Some(c) = path.chars().find(|&c| forbidden_char(c)) {
        let why = if u32::from(c) > 0xffff {
            format!(
                "character U+{:04X} is not allowed (ZooKeeper refuses characters outside the Basic Multilingual Plane)",
                c as u32
            )
        } else {
            format!("character U+{:04X} is not allowed", c as u32)
        };
        return Err(Error::invalid_path(path, &why));
    }
    Ok(())
}

/// Characters ZooKeeper refuses in paths (its `PathUtils.validatePath`,
/// which looks at UTF-16 units: control characters, U+D800 to U+F8FF, which
/// takes in the surrogates that encode every character above U+FFFF, and
/// U+FFF0 to U+FFFF).
fn forbidden_char(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{e000}'..='\u{f8ff}' | '\u{fff0}'..)
}

/// The longest connect or operation timeout (one day): far beyond any
/// real use, and small enough that no deadline computed from it overflows.
pub const MAX_OPTION_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// The longest session timeout zklock asks for (one hour; servers cap it at
/// 20 ticks by default anyway).
pub const MAX_SESSION_TIMEOUT: Duration = Duration::from_secs(3600);

/// Acquire timeouts longer than this (about 31.7 years) wait without limit.
pub const FOREVER: Duration = Duration::from_secs(1_000_000_000);

/// A client option's timeout given as a number of seconds by a front end
/// (Python seconds, Node and C milliseconds divided by 1000): the one rule
/// for `session_timeout`, `connect_timeout` and `operation_timeout` in every
/// language. It must be a finite number greater than zero and at most
/// `max` ([`MAX_SESSION_TIMEOUT`] or [`MAX_OPTION_TIMEOUT`]).
///
/// # Errors
/// [`crate::ErrorKind::InvalidArgument`] naming `option` and the value.
pub fn option_timeout_from_secs(option: &str, secs: f64, max: Duration) -> Result<Duration> {
    if !secs.is_finite() || secs <= 0.0 {
        return Err(Error::invalid_argument(format!(
            "{option} must be a finite number of seconds greater than zero, got {}",
            shown_secs(secs)
        )));
    }
    match positive_duration(secs) {
        Some(d) if d <= max => Ok(d),
        _ => Err(Error::invalid_argument(format!(
            "{option} must be at most {} s, got {}",
            max.as_secs(),
            shown_secs(secs)
        ))),
    }
}

/// A number of seconds for a message: plain, or in exponent form when
/// plain would be long (`1e300` rather than 301 digits).
fn shown_secs(secs: f64) -> String {
    let plain = secs.to_string();
    if plain.len() > 24 {
        format!("{secs:e}")
    } else {
        plain
    }
}

/// An acquire timeout given as a number of seconds by a front end: the one
/// rule in every language. `0` tries once; a positive number is a total
/// deadline; positive infinity, or more than [`FOREVER`], waits without
/// limit (`None`). (Front ends that have a "no value", such as `None`,
/// `null` or `undefined`, also mean no limit by it.)
///
/// # Errors
/// [`crate::ErrorKind::InvalidArgument`] for NaN or a negative number.
pub fn acquire_timeout_from_secs(secs: f64) -> Result<Option<Duration>> {
    if secs.is_nan() || secs < 0.0 {
        return Err(Error::invalid_argument(format!(
            "timeout must be a number of seconds >= 0 (0 tries once; no value waits without limit), got {}",
            shown_secs(secs)
        )));
    }
    // A positive number is a deadline however small, never zero's "try once".
    Ok(positive_duration(secs).filter(|d| *d <= FOREVER))
}

/// `secs` (finite, >= 0) as a duration that is zero only for zero: a
/// positive number below half a nanosecond is 1 ns. `None` if too large.
fn positive_duration(secs: f64) -> Option<Duration> {
    let d = Duration::try_from_secs_f64(secs).ok()?;
    Some(if secs > 0.0 { d.max(Duration::from_nanos(1)) } else { d })
}

/// Checks a connect string `host:port[,host:port...][/chroot]` and returns it
/// as the ZooKeeper client is given it: white space around the servers
/// removed (`" a:1, b:2 /app"` is `"a:1,b:2/app"`).
///
/// # Errors
/// [`crate::ErrorKind::InvalidArgument`] naming the bad part, or
/// [`crate::ErrorKind::InvalidPath`] for a bad chroot.
pub fn validate_connect_string(hosts: &str) -> Result<String> {
    let hosts = hosts.trim();
    if hosts.is_empty() {
        return Err(Error::invalid_argument(
            "connect string is empty (expected \"host:port[,host:port...][/chroot]\")",
        ));
    }
    let (servers, chroot) = match hosts.find('/') {
        Some(i) => (&hosts[..i], Some(&hosts[i..])),
        None => (hosts, None),
    };
    if let Some(chroot) = chroot {
        if chroot != "/" {
            validate_znode_path(chroot)?;
            if chroot.contains(|c: char| c == ',' || c.is_whitespace()) {
                return Err(Error::invalid_path(
                    chroot,
                    "a chroot cannot contain ',' or white space (they separate servers)",
                ));
            }
            if is_reserved(chroot) {
                return Err(Error::invalid_path(
                    chroot,
                    "a chroot under /zookeeper would put locks in the server's reserved subtree",
                ));
            }
        }
    }
    if servers.trim().is_empty() {
        return Err(Error::invalid_argument(format!("connect string {} names no server", shown(hosts))));
    }
    if servers.len() > MAX_SERVERS_BYTES {
        return Err(Error::invalid_argument(format!(
            "connect string {}: the list of servers is longer than {MAX_SERVERS_BYTES} bytes",
            shown(hosts)
        )));
    }
    let mut servers_only = Vec::new();
    for server in servers.split(',') {
        validate_server(hosts, server.trim())?;
        servers_only.push(server.trim());
    }
    Ok(format!("{}{}", servers_only.join(","), chroot.unwrap_or_default()))
}

/// The longest list of servers in a connect string, in bytes (before the
/// chroot, which has [`MAX_PATH_BYTES`] of its own).
pub const MAX_SERVERS_BYTES: usize = 64 * 1024;

/// The longest host name (DNS's limit).
const MAX_HOST_BYTES: usize = 253;

fn validate_server(all: &str, server: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::invalid_argument(format!("connect string {}: server {} {why}", shown(all), shown(server))))
    };
    if server.is_empty() {
        return bad("is empty (stray ',')");
    }
    let (host, port) = if let Some(rest) = server.strip_prefix('[') {
        // [ipv6]:port
        match rest.split_once(']') {
            Some((h, p)) => (h, p.strip_prefix(':')),
            None => return bad("has an unclosed '['"),
        }
    } else {
        match server.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (server, None),
        }
    };
    if host.is_empty() {
        return bad("has no host name");
    }
    if host.contains(|c: char| c.is_whitespace() || c == ':' && !server.starts_with('[')) {
        return bad("has a malformed host name");
    }
    if host.len() > MAX_HOST_BYTES {
        return bad(&format!("has a host name longer than {MAX_HOST_BYTES} bytes"));
    }
    if let Some(c) = host.chars().find(|c| !c.is_ascii_graphic()) {
        return bad(&format!(
            "has a host name with character U+{:04X} (host names are ASCII: use the xn-- form of an internationalized name)",
            c as u32
        ));
    }
    match port {
        None => Ok(()),
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Ok(()),
            _ => bad("has an invalid port (expected 1 to 65535)"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn good_lock_paths() {
        for p in ["/a", "/locks/job-1", "/a/b/c", "/ünïcode/ok", "/with space"] {
            validate_lock_path(p).unwrap_or_else(|e| panic!("{p}: {e}"));
        }
    }

    #[test]
    fn bad_lock_paths_name_the_problem() {
        let cases = [
            ("", "empty"),
            ("/", "root"),
            ("a/b", "start with '/'"),
            ("/a/", "end with '/'"),
            ("/a//b", "empty component"),
            ("/a/./b", "'.'"),
            ("/a/..", "'..'"),
            ("/a\u{0}b", "U+0000"),
            ("/a\u{7}b", "U+0007"),
            ("/zookeeper", "reserved"),
            ("/zookeeper/quota", "reserved"),
            ("/a\u{1F512}b", "Basic Multilingual Plane"),
            ("/a\u{10FFFF}", "Basic Multilingual Plane"),
            ("/a\u{FFFF}", "U+FFFF"),
            ("/a\u{E000}", "U+E000"),
        ];
        for (p, why) in cases {
            let e = validate_lock_path(p).expect_err(p);
            assert_eq!(e.kind(), ErrorKind::InvalidPath, "{p}");
            assert!(e.message().contains(why), "{p:?}: {e}");
        }
    }

    #[test]
    fn paths_longer_than_the_limit_are_refused_without_quoting_them() {
        let ok = format!("/{}", "a".repeat(MAX_PATH_BYTES - 1));
        validate_lock_path(&ok).unwrap();
        for long in [format!("/{}", "a".repeat(MAX_PATH_BYTES)), format!("/{}", "é".repeat(2 * 1024 * 1024))] {
            let e = validate_lock_path(&long).expect_err("too long");
            assert_eq!(e.kind(), ErrorKind::InvalidPath);
            assert!(e.message().contains("at most 32768 bytes"), "{e}");
            assert!(e.message().len() < 300, "the message quotes the whole path");
            let e = validate_connect_string(&format!("h:1{long}")).expect_err("too long chroot");
            assert_eq!(e.kind(), ErrorKind::InvalidPath);
        }
    }

    #[test]
    fn huge_connect_strings_are_refused_without_quoting_them() {
        let long_host = format!("{}:2181", "h".repeat(254));
        let many = vec!["h:1"; 20_000].join(",");
        for (hosts, why) in [(long_host.as_str(), "longer than 253 bytes"), (many.as_str(), "longer than 65536 bytes")]
        {
            let e = validate_connect_string(hosts).expect_err("too long");
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(e.message().contains(why), "{e}");
            assert!(e.message().len() < 600, "the message quotes the whole input: {} bytes", e.message().len());
        }
    }

    #[test]
    fn option_timeouts_follow_one_rule() {
        let max = MAX_OPTION_TIMEOUT;
        assert_eq!(option_timeout_from_secs("t", 1.5, max).unwrap(), Duration::from_millis(1500));
        assert_eq!(option_timeout_from_secs("t", 86_400.0, max).unwrap(), max);
        // Any positive number is accepted: below half a nanosecond, 1 ns.
        assert_eq!(option_timeout_from_secs("t", 1e-12, max).unwrap(), Duration::from_nanos(1));
        assert_eq!(option_timeout_from_secs("t", f64::MIN_POSITIVE, max).unwrap(), Duration::from_nanos(1));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 86_400.001, 1e300, f64::MAX] {
            let e = option_timeout_from_secs("session timeout", bad, max).expect_err(&bad.to_string());
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(e.message().contains("session timeout"), "{e}");
            assert!(e.message().len() < 200, "a long number in the message: {e}");
        }
    }

    #[test]
    fn acquire_timeouts_follow_one_rule() {
        assert_eq!(acquire_timeout_from_secs(0.0).unwrap(), Some(Duration::ZERO));
        assert_eq!(acquire_timeout_from_secs(2.5).unwrap(), Some(Duration::from_millis(2500)));
        for forever in [f64::INFINITY, 1e23, 1e300, f64::MAX, 2e9] {
            assert_eq!(acquire_timeout_from_secs(forever).unwrap(), None, "{forever}");
        }
        // A positive number is a deadline however small, never "try once".
        for tiny in [1e-10, 1e-12, 5e-324] {
            assert_eq!(acquire_timeout_from_secs(tiny).unwrap(), Some(Duration::from_nanos(1)), "{tiny}");
        }
        assert_eq!(acquire_timeout_from_secs(-0.0).unwrap(), Some(Duration::ZERO));
        for bad in [-1.0, -0.001, -5e-324, f64::NAN, f64::NEG_INFINITY] {
            let e = acquire_timeout_from_secs(bad).expect_err(&bad.to_string());
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        }
    }

    #[test]
    fn good_connect_strings() {
        for h in [
            "127.0.0.1:2181",
            "a:1,b:2,c:3",
            "h1:2181,h2:2181/chroot/app",
            "localhost",
            " h:1 ",
            "[::1]:2181",
            "h:2181/",
        ] {
            validate_connect_string(h).unwrap_or_else(|e| panic!("{h}: {e}"));
        }
        // White space around servers is not passed on to the client.
        assert_eq!(validate_connect_string(" a:1 , b:2 /app").unwrap(), "a:1,b:2/app");
        assert_eq!(validate_connect_string("127.0.0.1:1 /x").unwrap(), "127.0.0.1:1/x");
    }

    #[test]
    fn bad_connect_strings_name_the_problem() {
        let cases = [
            ("", "empty"),
            ("   ", "empty"),
            ("/chroot", "no server"),
            ("h:0", "invalid port"),
            ("h:70000", "invalid port"),
            ("h:abc", "invalid port"),
            ("h:1,,h:2", "stray ','"),
            (":2181", "no host"),
            ("[::1:2181", "unclosed"),
            ("h:1/a//b", "empty component"),
            ("h:1/zookeeper", "reserved"),
            ("h:1/zookeeper/quota", "reserved"),
            ("h:1/a\u{1F600}", "Basic Multilingual Plane"),
            ("h\u{0}st:1", "U+0000"),
            ("h\u{1F600}:1", "xn--"),
            ("hé:1", "U+00E9"),
            ("h:1/app,h:2", "cannot contain ','"),
            ("h:1/my app", "white space"),
            ("h:+1", "invalid port"),
        ];
        for (h, why) in cases {
            let e = validate_connect_string(h).expect_err(h);
            assert!(matches!(e.kind(), ErrorKind::InvalidArgument | ErrorKind::InvalidPath), "{h}");
            assert!(e.message().contains(why), "{h:?}: {e}");
        }
    }
}

//! Validation of user input: lock paths and connect strings. Every rejection
//! names what was wrong.

use std::time::Duration;

use crate::error::{Error, Result};

/// Checks a lock path: absolute, not the root, no empty, `.` or `..`
/// components, no trailing slash, no character ZooKeeper forbids, not under
/// the reserved `/zookeeper`.
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
    if path == "/zookeeper" || path.starts_with("/zookeeper/") {
        return Err(Error::invalid_path(path, "/zookeeper is reserved for the server"));
    }
    Ok(())
}

/// Checks the syntax of an absolute znode path other than "/".
fn validate_znode_path(path: &str) -> Result<()> {
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
        return Err(Error::invalid_path(path, &format!("character U+{:04X} is not allowed", c as u32)));
    }
    Ok(())
}

/// Characters ZooKeeper refuses in paths (PathUtils.validatePath).
fn forbidden_char(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{e000}'..='\u{f8ff}' | '\u{fff0}'..='\u{ffff}')
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
        return Err(Error::invalid_argument(format!("{option} must be a finite number of seconds greater than zero, got {secs}")));
    }
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if d <= max && !d.is_zero() => Ok(d),
        Ok(d) if d.is_zero() => Err(Error::invalid_argument(format!("{option} of {secs} s rounds to zero"))),
        _ => Err(Error::invalid_argument(format!("{option} must be at most {} s, got {secs}", max.as_secs()))),
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
            "timeout must be a number of seconds >= 0 (0 tries once; no value waits without limit), got {secs}"
        )));
    }
    Ok(Duration::try_from_secs_f64(secs).ok().filter(|d| *d <= FOREVER))
}

/// Checks a connect string `host:port[,host:port...][/chroot]` and returns it
/// trimmed.
///
/// # Errors
/// [`crate::ErrorKind::InvalidArgument`] naming the bad part, or
/// [`crate::ErrorKind::InvalidPath`] for a bad chroot.
pub fn validate_connect_string(hosts: &str) -> Result<String> {
    let hosts = hosts.trim();
    if hosts.is_empty() {
        return Err(Error::invalid_argument("connect string is empty (expected \"host:port[,host:port...][/chroot]\")"));
    }
    let (servers, chroot) = match hosts.find('/') {
        Some(i) => (&hosts[..i], Some(&hosts[i..])),
        None => (hosts, None),
    };
    if let Some(chroot) = chroot {
        if chroot != "/" {
            validate_znode_path(chroot)?;
        }
    }
    if servers.trim().is_empty() {
        return Err(Error::invalid_argument(format!("connect string {hosts:?} names no server")));
    }
    for server in servers.split(',') {
        validate_server(hosts, server.trim())?;
    }
    Ok(hosts.to_owned())
}

fn validate_server(all: &str, server: &str) -> Result<()> {
    let bad = |why: &str| Err(Error::invalid_argument(format!("connect string {all:?}: server {server:?} {why}")));
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
    match port {
        None => Ok(()),
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => Ok(()),
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
        ];
        for (p, why) in cases {
            let e = validate_lock_path(p).expect_err(p);
            assert_eq!(e.kind(), ErrorKind::InvalidPath, "{p}");
            assert!(e.message().contains(why), "{p:?}: {e}");
        }
    }

    #[test]
    fn option_timeouts_follow_one_rule() {
        let max = MAX_OPTION_TIMEOUT;
        assert_eq!(option_timeout_from_secs("t", 1.5, max).unwrap(), Duration::from_millis(1500));
        assert_eq!(option_timeout_from_secs("t", 86_400.0, max).unwrap(), max);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 86_400.001, 1e300, f64::MAX, 1e-12] {
            let e = option_timeout_from_secs("session timeout", bad, max).expect_err(&bad.to_string());
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(e.message().contains("session timeout"), "{e}");
        }
    }

    #[test]
    fn acquire_timeouts_follow_one_rule() {
        assert_eq!(acquire_timeout_from_secs(0.0).unwrap(), Some(Duration::ZERO));
        assert_eq!(acquire_timeout_from_secs(2.5).unwrap(), Some(Duration::from_millis(2500)));
        for forever in [f64::INFINITY, 1e23, 1e300, f64::MAX, 2e9] {
            assert_eq!(acquire_timeout_from_secs(forever).unwrap(), None, "{forever}");
        }
        for bad in [-1.0, -0.001, f64::NAN, f64::NEG_INFINITY] {
            let e = acquire_timeout_from_secs(bad).expect_err(&bad.to_string());
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        }
    }

    #[test]
    fn good_connect_strings() {
        for h in ["127.0.0.1:2181", "a:1,b:2,c:3", "h1:2181,h2:2181/chroot/app", "localhost", " h:1 ", "[::1]:2181", "h:2181/"] {
            validate_connect_string(h).unwrap_or_else(|e| panic!("{h}: {e}"));
        }
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
        ];
        for (h, why) in cases {
            let e = validate_connect_string(h).expect_err(h);
            assert!(matches!(e.kind(), ErrorKind::InvalidArgument | ErrorKind::InvalidPath), "{h}");
            assert!(e.message().contains(why), "{h:?}: {e}");
        }
    }
}

//! Connect strings: `host:port,host:port/chroot`.

use crate::error::Error;

/// One server of a connect string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    /// Name or address as written (IPv6 without its brackets).
    pub name: String,
    /// Port (2181 when none is written).
    pub port: u16,
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.name.contains(':') {
            write!(f, "[{}]:{}", self.name, self.port)
        } else {
            write!(f, "{}:{}", self.name, self.port)
        }
    }
}

/// A parsed connect string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectString {
    /// The servers, in the order written, each once (a server written
    /// again, with the same port and its name in any case, is left out:
    /// otherwise it would be asked twice per round; outside attack round
    /// 35). A name and its address, or two names of one machine, are two
    /// entries.
    pub hosts: Vec<Host>,
    /// Chroot prefix (`/app`), empty for none.
    pub chroot: String,
}

impl ConnectString {
    /// Parses `host[:port][,host[:port]...][/chroot]`; an IPv6 address is
    /// written in brackets (`[::1]:2181`).
    ///
    /// # Errors
    ///
    /// [`Error::BadArgument`] naming what is wrong: no server, an empty
    /// entry, a port that is not a number from 1 to 65535, an unclosed
    /// bracket, a chroot that is not a plain absolute path.
    pub fn parse(s: &str) -> Result<ConnectString, Error> {
        let bad = |why: String| Error::BadArgument(format!("connect string {s:?}: {why}"));
        let (list, chroot) = match s.find('/') {
            Some(i) => (&s[..i], &s[i..]),
            None => (s, ""),
        };
        let chroot = chroot.trim_end_matches('/');
        if !chroot.is_empty() && chroot.split('/').skip(1).any(|c| c.is_empty() || c == "." || c == "..") {
            return Err(bad(format!("chroot {chroot:?} is not a plain absolute path")));
        }
        if chroot.contains('\0') {
            return Err(bad("chroot contains a NUL character".into()));
        }
        let mut hosts = Vec::new();
        for entry in list.split(',') {
            let entry = entry.trim();
            if entry.is_empty() {
                return Err(bad("an empty server entry".into()));
            }
            let (name, port) = if let Some(rest) = entry.strip_prefix('[') {
                let end = rest.find(']').ok_or_else(|| bad(format!("{entry:?}: no closing ']'")))?;
                let after = &rest[end + 1..];
                let port = match after.strip_prefix(':') {
                    Some(p) => Some(p),
                    None if after.is_empty() => None,
                    None => return Err(bad(format!("{entry:?}: text after ']'"))),
                };
                (&rest[..end], port)
            } else {
                match entry.rsplit_once(':') {
                    Some((h, p)) if !h.contains(':') => (h, Some(p)),
                    Some(_) => return Err(bad(format!("{entry:?}: write an IPv6 address in brackets"))),
                    None => (entry, None),
                }
            };
            if name.is_empty() {
                return Err(bad(format!("{entry:?}: no host name")));
            }
            let port = match port {
                None => 2181,
                Some(p) => match p.parse::<u16>() {
                    Ok(n) if n > 0 => n,
                    _ => return Err(bad(format!("{entry:?}: port {p:?} is not a number from 1 to 65535"))),
                },
            };
            if !hosts.iter().any(|h: &Host| h.port == port && h.name.eq_ignore_ascii_case(name)) {
                hosts.push(Host { name: name.to_string(), port });
            }
        }
        Ok(ConnectString { hosts, chroot: chroot.to_string() })
    }
}

/// Strips `chroot` from a server path; paths outside it come back as they
/// are.
pub(crate) fn strip_chroot(chroot: &str, path: String) -> String {
    if chroot.is_empty() {
        return path;
    }
    match path.strip_prefix(chroot) {
        Some("") => "/".to_string(),
        Some(rest) if rest.starts_with('/') => rest.to_string(),
        _ => path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        let c = ConnectString::parse("a:1,[::1]:2,b/x/y/").unwrap();
        assert_eq!(c.hosts[0], Host { name: "a".into(), port: 1 });
        assert_eq!(c.hosts[1], Host { name: "::1".into(), port: 2 });
        assert_eq!(c.hosts[2], Host { name: "b".into(), port: 2181 });
        assert_eq!(c.chroot, "/x/y");
        assert_eq!(c.hosts[1].to_string(), "[::1]:2");
        assert_eq!(ConnectString::parse("a/").unwrap().chroot, "");
        let twice = ConnectString::parse("a:1,A:1,b,a:2,a:1,B:2181").unwrap().hosts;
        let names: Vec<String> = twice.iter().map(|h| h.to_string()).collect();
        assert_eq!(names, ["a:1", "b:2181", "a:2"], "a server written twice counts once");
    }

    #[test]
    fn refuses() {
        for s in ["", "a,,b", "a:0", "a:x", "a:70000", "[::1", "::1:5", "a/b//c", "a/../b", ":5", "[::1]x"] {
            let e = ConnectString::parse(s).unwrap_err();
            assert!(matches!(e, Error::BadArgument(_)), "{s}: {e}");
        }
    }

    #[test]
    fn strips() {
        assert_eq!(strip_chroot("/c", "/c".into()), "/");
        assert_eq!(strip_chroot("/c", "/c/x".into()), "/x");
        assert_eq!(strip_chroot("/c", "/cx".into()), "/cx");
        assert_eq!(strip_chroot("", "/cx".into()), "/cx");
    }
}

//! Which ZooKeeper server release a [`Cluster`](crate::Cluster) runs.

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::install::{SLF4J_SIMPLE_JAR, ZOOKEEPER_JAR};

/// Where `scripts/install-zk-jars.sh` installs the Maven releases when
/// `ZKLOCK_ZK_JARS_DIR` is not set: the repository's `target/zk`.
const DEFAULT_JARS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/zk");

/// The file `scripts/install-zk-jars.sh` writes last into a release's
/// directory: the directory is complete once it exists.
const COMPLETE_MARKER: &str = ".complete";

/// A ZooKeeper server release that [`Cluster::start`](crate::Cluster::start)
/// can run ([`ClusterOptions::release`](crate::ClusterOptions::release)).
///
/// [`Debian38`](ServerRelease::Debian38), the default, is Debian's
/// `zookeeper` package (3.8), installed by `scripts/install-deps.sh` or on
/// demand by [`ensure_zookeeper`](crate::ensure_zookeeper). The others are
/// the server jars from Maven Central that `scripts/install-zk-jars.sh`
/// puts into `target/zk/<version>/` (or `$ZKLOCK_ZK_JARS_DIR/<version>/`);
/// the harness never downloads them itself: a release that is not installed
/// is refused with the reason ([`ServerRelease::check`]).
///
/// Every release runs with the same generated `zoo.cfg` and supports every
/// [`ClusterOptions`](crate::ClusterOptions) feature: ensembles
/// (partitionable too: from 3.5.10 on, a member ignores a wildcard election
/// address that a peer advertises), TLS on a `secureClientPort` through
/// Netty with PEM files (`ssl.clientAuth` is read by every one of them),
/// SASL `DIGEST-MD5` logins, all four-letter words (whitelisted), and the
/// fault controls. The differences that the harness absorbs: the Maven
/// releases run from a directory of jars (`<dir>/*`, slf4j-simple for the
/// log, Netty for TLS, from 3.6 on dropwizard's metrics-core for the
/// default metrics provider and snappy-java for the snapshot code) instead
/// of the Debian jar whose manifest names the rest; their jars lack the
/// admin server's Jetty (a "provided" dependency), and the harness turns
/// the admin server off (`admin.enableServer=false`) for every release.
///
/// Differences that clients see (checked by `tests/harness/tests/releases.rs`):
/// whoAmI (opcode 107) is answered from 3.7 on, `Unimplemented` before;
/// `exists` of a node the session may not read is `NoAuth` from 3.8.4 and
/// 3.9.2 on (so on 3.9.5, not on Debian's 3.8.0).
///
/// # Threads
///
/// A plain value; every method can be called from any thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ServerRelease {
    /// Debian's `zookeeper` package (3.8.x), `/usr/share/java/zookeeper.jar`.
    #[default]
    Debian38,
    /// ZooKeeper 3.5.10 (the 3.5 line's last release).
    V3_5_10,
    /// ZooKeeper 3.6.4 (the 3.6 line's last release).
    V3_6_4,
    /// ZooKeeper 3.7.2 (the 3.7 line's last release).
    V3_7_2,
    /// ZooKeeper 3.9.5.
    V3_9_5,
}

impl ServerRelease {
    /// Every release, in version order.
    pub const ALL: [ServerRelease; 5] = [
        ServerRelease::V3_5_10,
        ServerRelease::V3_6_4,
        ServerRelease::V3_7_2,
        ServerRelease::Debian38,
        ServerRelease::V3_9_5,
    ];

    /// The release's name as [`FromStr`] reads it and [`fmt::Display`]
    /// writes it: `"debian-3.8"` or the version (`"3.5.10"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ServerRelease::Debian38 => "debian-3.8",
            ServerRelease::V3_5_10 => "3.5.10",
            ServerRelease::V3_6_4 => "3.6.4",
            ServerRelease::V3_7_2 => "3.7.2",
            ServerRelease::V3_9_5 => "3.9.5",
        }
    }

    /// What the server's `srvr` answer starts its version with
    /// (`Zookeeper version: <prefix>...`): `"3.8."` for Debian's package
    /// (whose patch level is Debian's), the exact version otherwise.
    pub fn version_prefix(self) -> &'static str {
        match self {
            ServerRelease::Debian38 => "3.8.",
            other => other.name(),
        }
    }

    /// Whether this is a release from Maven Central (installed by
    /// `scripts/install-zk-jars.sh`), not Debian's package.
    pub fn is_maven(self) -> bool {
        self != ServerRelease::Debian38
    }

    /// The directory that holds the Maven releases: `$ZKLOCK_ZK_JARS_DIR`
    /// if set and not empty (a relative path is taken from the current
    /// directory), else the repository's `target/zk` (where
    /// `scripts/install-zk-jars.sh` puts them).
    pub fn jars_root() -> PathBuf {
        let root = std::env::var_os("ZKLOCK_ZK_JARS_DIR")
            .filter(|d| !d.is_empty())
            .map_or_else(|| PathBuf::from(DEFAULT_JARS_DIR), PathBuf::from);
        // The servers run in their own directories: their classpath must
        // not be relative.
        std::path::absolute(&root).unwrap_or(root)
    }

    /// The directory of this release's jars (`None` for Debian's package,
    /// whose jars are in `/usr/share/java`). It may not exist; see
    /// [`check`](ServerRelease::check).
    pub fn jar_dir(self) -> Option<PathBuf> {
        self.is_maven().then(|| Self::jars_root().join(self.name()))
    }

    /// Whether this release can be started here, without installing
    /// anything: for a Maven release, whether `scripts/install-zk-jars.sh`
    /// completed its directory; for Debian's package, whether its jars are
    /// in place (if not, [`Cluster::start`](crate::Cluster::start) installs
    /// it with apt-get, see [`ensure_zookeeper`](crate::ensure_zookeeper)).
    /// Java itself is not checked here.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::NotFound`] with the reason: the directory is
    /// missing or incomplete (run `scripts/install-zk-jars.sh`), or the
    /// script could not fetch the release (its words, from
    /// `<jars_root>/<version>.failed`, are quoted).
    pub fn check(self) -> io::Result<()> {
        self.check_in(&Self::jars_root())
    }

    /// [`check`](ServerRelease::check) with the Maven releases in `root`.
    fn check_in(self, root: &Path) -> io::Result<()> {
        if !self.is_maven() {
            return if jars_present() {
                Ok(())
            } else {
                Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "{self}: {ZOOKEEPER_JAR} or {SLF4J_SIMPLE_JAR} is missing \
                         (scripts/install-deps.sh installs Debian's zookeeper package)"
                    ),
                ))
            };
        }
        let dir = root.join(self.name());
        if dir.join(COMPLETE_MARKER).is_file() {
            return Ok(());
        }
        let failed = root.join(format!("{}.failed", self.name()));
        let why = match fs::read_to_string(&failed) {
            Ok(text) => format!(
                "scripts/install-zk-jars.sh could not install it ({}): {}",
                failed.display(),
                crate::util::tail_str(&text, 6).trim()
            ),
            Err(_) if dir.exists() => {
                format!("{} is incomplete (no {COMPLETE_MARKER}): run scripts/install-zk-jars.sh", dir.display())
            },
            Err(_) => format!("{} does not exist: run scripts/install-zk-jars.sh", dir.display()),
        };
        Err(io::Error::new(io::ErrorKind::NotFound, format!("ZooKeeper {self} is not installed: {why}")))
    }

    /// The releases that [`check`](ServerRelease::check) finds ready, in the
    /// order of [`ALL`](ServerRelease::ALL). See
    /// [`availability`](ServerRelease::availability) for why the others are
    /// missing.
    pub fn available() -> Vec<ServerRelease> {
        Self::ALL.into_iter().filter(|r| r.check().is_ok()).collect()
    }

    /// Every release with the answer of its [`check`](ServerRelease::check):
    /// `Err` says why it is missing.
    pub fn availability() -> Vec<(ServerRelease, io::Result<()>)> {
        Self::ALL.into_iter().map(|r| (r, r.check())).collect()
    }

    /// For a test that runs this release: `true` if it is installed; if not,
    /// `false` after writing why to the process's stderr (past the test
    /// runner's capture, so a skip is seen) when
    /// `ZKLOCK_ZK_JARS_OPTIONAL=1` (a machine where
    /// `scripts/install-zk-jars.sh` could not fetch it), and otherwise a
    /// panic with the reason: `make test` and CI install every release.
    ///
    /// # Panics
    ///
    /// When the release is not installed and `ZKLOCK_ZK_JARS_OPTIONAL` is
    /// not `1`.
    pub fn installed_or_skip(self) -> bool {
        let Err(e) = self.check() else { return true };
        if std::env::var("ZKLOCK_ZK_JARS_OPTIONAL").is_ok_and(|v| v == "1") {
            use std::io::Write as _;
            let _ =
                writeln!(io::stderr(), "zklock-harness: skipping ZooKeeper {self} (ZKLOCK_ZK_JARS_OPTIONAL=1): {e}");
            return false;
        }
        panic!("{e} (set ZKLOCK_ZK_JARS_OPTIONAL=1 to skip the releases that are not installed)");
    }

    /// The java classpath of this release's server: for Debian's package
    /// its jar (whose manifest names the rest) and the slf4j-simple
    /// binding, plus, when `tls`, the Netty codec and resolver that the
    /// manifest leaves out; for a Maven release its directory's wildcard
    /// (`<dir>/*`, expanded by java), which already holds Netty.
    pub(crate) fn classpath(self, tls: bool) -> OsString {
        match self.jar_dir() {
            Some(dir) => {
                let mut cp = dir.into_os_string();
                cp.push("/*");
                cp
            },
            None => {
                let mut cp = format!("{ZOOKEEPER_JAR}:{SLF4J_SIMPLE_JAR}");
                if tls {
                    for jar in NETTY_TLS_JARS {
                        cp.push(':');
                        cp.push_str(jar);
                    }
                }
                cp.into()
            },
        }
    }
}

/// Jars a TLS server needs beyond the Debian ZooKeeper jar's manifest
/// (Debian's libnetty-java).
const NETTY_TLS_JARS: [&str; 2] = ["/usr/share/java/netty-codec.jar", "/usr/share/java/netty-resolver.jar"];

fn jars_present() -> bool {
    Path::new(ZOOKEEPER_JAR).is_file() && Path::new(SLF4J_SIMPLE_JAR).is_file()
}

impl fmt::Display for ServerRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of [`ServerRelease::from_str`]: the name is not a release the
/// harness knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownRelease(pub String);

impl fmt::Display for UnknownRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<&str> = ServerRelease::ALL.iter().map(|r| r.name()).collect();
        write!(f, "unknown ZooKeeper release {:?} (known: {}, or \"3.8\"/\"debian\")", self.0, known.join(", "))
    }
}

impl std::error::Error for UnknownRelease {}

impl FromStr for ServerRelease {
    type Err = UnknownRelease;

    /// Reads a release's [`name`](ServerRelease::name); `"debian"` and
    /// `"3.8"` also name Debian's package, and `"3.5"`, `"3.6"`, `"3.7"`,
    /// `"3.9"` the one release of that line.
    ///
    /// # Errors
    ///
    /// [`UnknownRelease`] for any other text.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim() {
            "debian-3.8" | "debian" | "3.8" => ServerRelease::Debian38,
            "3.5.10" | "3.5" => ServerRelease::V3_5_10,
            "3.6.4" | "3.6" => ServerRelease::V3_6_4,
            "3.7.2" | "3.7" => ServerRelease::V3_7_2,
            "3.9.5" | "3.9" => ServerRelease::V3_9_5,
            other => return Err(UnknownRelease(other.to_string())),
        })
    }
}

/// One test module per release (`v3_5_10`, `v3_6_4`, `v3_7_2`, `debian_3_8`,
/// `v3_9_5`), each with the tests `standalone` and `ensemble`, which call
/// `super::standalone(release)` and `super::ensemble(release)` of the
/// module that uses the macro: one release's tests can then be run alone
/// (`cargo test v3_5_10::`).
#[macro_export]
macro_rules! release_tests {
    () => {
        $crate::release_tests! {
            v3_5_10 => $crate::ServerRelease::V3_5_10,
            v3_6_4 => $crate::ServerRelease::V3_6_4,
            v3_7_2 => $crate::ServerRelease::V3_7_2,
            debian_3_8 => $crate::ServerRelease::Debian38,
            v3_9_5 => $crate::ServerRelease::V3_9_5,
        }
    };
    ($($module:ident => $release:expr),* $(,)?) => {$(
        mod $module {
            #[test]
            fn standalone() {
                super::standalone($release);
            }

            #[test]
            fn ensemble() {
                super::ensemble($release);
            }
        }
    )*};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for r in ServerRelease::ALL {
            assert_eq!(r.name().parse::<ServerRelease>(), Ok(r));
            assert_eq!(r.to_string(), r.name());
        }
        assert_eq!("3.8".parse(), Ok(ServerRelease::Debian38));
        let e = "3.4.14".parse::<ServerRelease>().expect_err("3.4 is not a release here");
        assert!(e.to_string().contains("3.4.14"), "{e}");
    }

    #[test]
    fn a_missing_release_says_why_and_where() {
        let dir = crate::util::make_temp_root().expect("temp dir");
        let r = ServerRelease::V3_6_4;
        let why = || {
            let e = r.check_in(&dir).expect_err("not installed");
            assert_eq!(e.kind(), io::ErrorKind::NotFound);
            e.to_string()
        };
        let release_dir = dir.join("3.6.4");
        let e = why();
        assert!(e.contains("does not exist") && e.contains(&release_dir.display().to_string()), "{e}");
        fs::create_dir_all(&release_dir).expect("mkdir");
        let e = why();
        assert!(e.contains("incomplete"), "{e}");
        fs::write(dir.join("3.6.4.failed"), "ZooKeeper 3.6.4 could not be installed\n[ERROR] no registry\n")
            .expect("write");
        let e = why();
        assert!(e.contains("could not install it") && e.contains("no registry"), "{e}");
        fs::write(release_dir.join(COMPLETE_MARKER), "").expect("write");
        r.check_in(&dir).expect("complete");
        fs::remove_dir_all(&dir).expect("cleanup");
    }
}

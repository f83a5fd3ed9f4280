//! Test harness for zklock: real Apache ZooKeeper servers on loopback, fault
//! controls, and a ZooKeeper-aware TCP proxy.
//!
//! Every test suite of the project (Rust, C, Python, Node) uses this crate,
//! either directly (Rust) or through the `zkharness` binary (see
//! `src/bin/zkharness.rs` and [`cli`](#command-line-tool)).
//!
//! # What it provides
//!
//! * [`ensure_zookeeper`]: makes sure the Debian `zookeeper` package and a
//!   `java` runtime are present (installs the package with `apt-get` if the jar
//!   is missing, serialised across processes with a file lock).
//! * [`ServerRelease`]: which ZooKeeper release a cluster runs
//!   ([`ClusterOptions::release`]): Debian's 3.8 (the default) or the server
//!   jars of 3.5.10, 3.6.4, 3.7.2 and 3.9.5 that
//!   `scripts/install-zk-jars.sh` installs into `target/zk`;
//!   [`ServerRelease::available`] and [`ServerRelease::check`] say which are
//!   installed and why one is not.
//! * [`Cluster`]: one standalone server or an ensemble of `n` servers, each on
//!   free `127.0.0.1` ports with a fresh temporary data directory, plus fault
//!   controls (`kill`, `freeze`, `resume`, `stop`, `restart`, ...; and for an
//!   ensemble started with [`ClusterOptions::partitionable`], `partition`
//!   and `heal_partition`: cut a member off from the others while its
//!   clients stay connected). Dropping a `Cluster` kills and reaps every
//!   server and removes the directories.
//! * [`Proxy`] / [`ProxyGroup`]: a TCP proxy in front of a server with
//!   switchable faults: blackhole, heal, drop every connection, "execute
//!   the next create on the server but drop its reply", and "hold a
//!   connection's replies from the next create's reply on, until released".
//! * [`SynDrop`]: an address on loopback that drops connection requests
//!   (SYNs), as a firewall that drops does.
//! * [`four_letter_word`]: send a ZooKeeper four-letter word (`srvr`, `wchc`, ...)
//!   to any address.
//!
//! # Processes
//!
//! Server processes are spawned from one dedicated, never-ending thread with
//! `PR_SET_PDEATHSIG(SIGKILL)`, so they die with the test process even if it is
//! killed with `SIGKILL` (the death signal is tied to the spawning *thread* on
//! Linux, which is why a dedicated thread is used). Linux only.
//!
//! # Environment variables
//!
//! * `ZKLOCK_JAVA`: java executable to use (default `java` from `PATH`).
//! * `ZKLOCK_ZK_JARS_DIR`: where the Maven releases are (default the
//!   repository's `target/zk`; `scripts/install-zk-jars.sh` reads it too).
//! * `ZKLOCK_ZK_JARS_OPTIONAL=1`: a test of a release that is not installed
//!   is skipped with the reason instead of failing
//!   ([`ServerRelease::installed_or_skip`]).
//! * `ZKLOCK_HARNESS_KEEP=1`: keep the temporary directories (configs, data,
//!   `server.log`) after a [`Cluster`] is dropped; their path is printed on
//!   stderr.
//!
//! # Command-line tool
//!
//! `zkharness serve [--ensemble N] [--proxy] [--tick-ms T] [--force-sync]
//! [--partitionable] [--release NAME]` prints one JSON line describing the servers, then
//! answers one JSON line per command read from stdin. See the binary's
//! `--help`.

mod cluster;
mod install;
mod proxy;
mod release;
mod spawn;
mod tls;
mod util;

pub use cluster::{Cluster, ClusterOptions};
pub use install::{ensure_zookeeper, java_command, SLF4J_SIMPLE_JAR, ZOOKEEPER_JAR};
pub use proxy::{Proxy, ProxyGroup, SynDrop};
pub use release::{ServerRelease, UnknownRelease};
pub use tls::TestCerts;
pub use util::{four_letter_word, parse_mode, process_alive, wait_for};

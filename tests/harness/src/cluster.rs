//! Real ZooKeeper servers on loopback, with fault controls.

use std::fmt::Write as _;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use crate::install::{annotate, check_java, ensure_zookeeper, java_command};
use crate::proxy::Proxy;
use crate::release::ServerRelease;
use crate::tls::TestCerts;
use crate::util::{four_letter_word, make_temp_root, parse_mode, reserve_ports, tail_file};

/// Timeout of the four-letter words the cluster sends itself.
const FOUR_LETTER_TIMEOUT: Duration = Duration::from_secs(2);
/// Poll period while waiting for servers.
const POLL: Duration = Duration::from_millis(50);
/// How long [`Cluster::stop`] waits after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// Start attempts (fresh ports each) when a port turns out to be taken.
const START_ATTEMPTS: usize = 3;
/// ZooKeeper's `ExitCode.UNABLE_TO_BIND_QUORUM_PORT`: a member gave up
/// binding its election port.
const UNABLE_TO_BIND_QUORUM_PORT: i32 = 14;
/// What a server's log says when its main thread died: the JVM's own
/// words, and those of the uncaught exception handler that ZooKeeper's NIO
/// connection factory installs (Java 17 and 21+ name the thread
/// differently).
const MAIN_THREAD_DIED: [&str; 3] =
    ["Exception in thread \"main\"", "Thread Thread[main,5,main] died", "Thread Thread[#1,main,5,main] died"];
/// Lines of `server.log` quoted in error messages.
const LOG_TAIL_LINES: usize = 25;

/// Configuration for [`Cluster::start`]; a builder.
///
/// Defaults: Debian's ZooKeeper 3.8 ([`ServerRelease::Debian38`]), 1 server
/// (standalone), `tickTime=200`, `forceSync=no`, no extra config lines, no
/// extra JVM arguments, 30 s start timeout, not partitionable.
///
/// The generated `zoo.cfg` contains `tickTime`, `dataDir`, `clientPort`,
/// `clientPortAddress=127.0.0.1`, `maxClientCnxns=0`,
/// `admin.enableServer=false`, `minSessionTimeout` (2 ticks),
/// `maxSessionTimeout=60000`, `4lw.commands.whitelist=*`, `forceSync`, and for
/// an ensemble `initLimit=10`, `syncLimit` (5 unless set) and the `server.N` lines
/// (`127.0.0.1:quorumPort:electionPort` of every member, or, when
/// [`partitionable`](ClusterOptions::partitionable), the member itself at
/// `0.0.0.0` and the others at relay ports); then the extra lines (a later
/// line overrides an earlier one with the same key).
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    size: usize,
    tick_time_ms: u32,
    force_sync: bool,
    extra_cfg: Vec<String>,
    jvm_args: Vec<String>,
    start_timeout: Duration,
    partitionable: bool,
    tls: bool,
    sasl_users: Vec<(String, String)>,
    release: ServerRelease,
    sync_limit: u32,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            size: 1,
            tick_time_ms: 200,
            force_sync: false,
            extra_cfg: Vec::new(),
            jvm_args: Vec::new(),
            start_timeout: Duration::from_secs(30),
            partitionable: false,
            tls: false,
            sasl_users: Vec::new(),
            release: ServerRelease::Debian38,
            sync_limit: 5,
        }
    }
}

impl ClusterOptions {
    /// Same as [`ClusterOptions::default`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of servers: 1 is a standalone server, `n >= 2` an ensemble
    /// (quorum `n/2 + 1`). 0 is rejected by [`Cluster::start`].
    pub fn size(mut self, n: usize) -> Self {
        self.size = n;
        self
    }

    /// ZooKeeper `tickTime` in milliseconds (default 200). Session timeouts
    /// are clamped by the server to `[2, 20] * tickTime` unless overridden;
    /// the harness sets `minSessionTimeout = 2 * tickTime` and
    /// `maxSessionTimeout = 60000`.
    pub fn tick_time_ms(mut self, ms: u32) -> Self {
        self.tick_time_ms = ms;
        self
    }

    /// An ensemble's `syncLimit` in ticks (default 5, ZooKeeper's sample
    /// configuration and Debian's): how long a follower and the leader wait
    /// for each other before giving up.
    pub fn sync_limit(mut self, ticks: u32) -> Self {
        self.sync_limit = ticks;
        self
    }

    /// Whether the transaction log is fsynced (`forceSync`, default `false`:
    /// faster, and durability across machine crashes is irrelevant here).
    pub fn force_sync(mut self, on: bool) -> Self {
        self.force_sync = on;
        self
    }

    /// Appends a raw `key=value` line to every server's `zoo.cfg`.
    pub fn extra_cfg(mut self, line: impl Into<String>) -> Self {
        self.extra_cfg.push(line.into());
        self
    }

    /// Appends an argument to the java command line, before the main class
    /// (e.g. `-Dzookeeper.snapCount=100`).
    pub fn jvm_arg(mut self, arg: impl Into<String>) -> Self {
        self.jvm_args.push(arg.into());
        self
    }

    /// How long [`Cluster::start`] and [`Cluster::restart`] wait for servers
    /// to serve (default 30 s).
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// Whether the members of an ensemble talk to each other through relays
    /// of the harness, so that [`Cluster::partition`] can cut one member off
    /// from the others while its clients stay connected (default `false`).
    /// No effect on a standalone server (size 1).
    ///
    /// When on, for each ordered pair of members (i, j), i != j, the harness
    /// runs two raw relays ([`Proxy::start_raw`]) that member i uses to reach
    /// member j's quorum port and election port: member i's `zoo.cfg` lists
    /// every other member at the relays dedicated to i, and itself at
    /// `0.0.0.0` with its real ports. So its quorum and election ports
    /// listen on all interfaces (not only loopback); in exchange the election
    /// address it advertises to a peer is a wildcard, which ZooKeeper
    /// ignores (every release the harness runs, 3.5.10 included): a member connecting back to a lower id uses the address in
    /// its own `zoo.cfg`, i.e. the relay, so no link between members
    /// bypasses the relays. (Listing itself at `127.0.0.1` would not do: the
    /// peer would connect back directly to the address advertised.) Client
    /// ports are not relayed.
    pub fn partitionable(mut self, on: bool) -> Self {
        self.partitionable = on;
        self
    }

    /// Whether every member also serves TLS on a `secureClientPort` of its
    /// own on `127.0.0.1` (default `false`), with certificates made for the cluster
    /// ([`Cluster::tls_certs`], [`Cluster::secure_connect_string`]). The
    /// servers ask clients for a certificate but do not need one (add
    /// `ssl.clientAuth=need` with [`ClusterOptions::extra_cfg`] for that),
    /// and map a client certificate to the identity `x509:<subject DN>`.
    pub fn tls(mut self, on: bool) -> Self {
        self.tls = on;
        self
    }

    /// Lets `user` log in with SASL `DIGEST-MD5` and `password` (the
    /// identity `sasl:user` in ACLs): the servers get a JAAS `Server`
    /// section listing every such user, and the SASL provider.
    pub fn sasl_user(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.sasl_users.push((user.into(), password.into()));
        self
    }

    /// Which ZooKeeper release the servers run (default
    /// [`ServerRelease::Debian38`]). [`Cluster::start`] refuses a release
    /// that is not installed, saying why ([`ServerRelease::check`]); every
    /// other option works the same on every release.
    pub fn release(mut self, release: ServerRelease) -> Self {
        self.release = release;
        self
    }

    /// The configured release.
    pub fn get_release(&self) -> ServerRelease {
        self.release
    }

    /// The configured number of servers.
    pub fn get_size(&self) -> usize {
        self.size
    }

    /// The configured `tickTime` in milliseconds.
    pub fn get_tick_time_ms(&self) -> u32 {
        self.tick_time_ms
    }

    /// The configured start timeout.
    pub fn get_start_timeout(&self) -> Duration {
        self.start_timeout
    }

    /// Whether [`partitionable`](ClusterOptions::partitionable) was set.
    pub fn get_partitionable(&self) -> bool {
        self.partitionable
    }
}

/// State of one server process.
#[derive(Debug, Default)]
struct Proc {
    child: Option<Child>,
    frozen: bool,
    last_exit: Option<ExitStatus>,
}

impl Proc {
    /// Reaps the child if it exited; returns whether it is still running.
    fn refresh(&mut self) -> bool {
        let Some(child) = self.child.as_mut() else {
            return false;
        };
        match child.try_wait() {
            Ok(None) => true,
            Ok(Some(status)) => {
                self.last_exit = Some(status);
                self.child = None;
                self.frozen = false;
                false
            },
            // ECHILD cannot happen for a child we own; treat as running.
            Err(_) => true,
        }
    }

    fn signal(&self, sig: libc::c_int) -> io::Result<()> {
        let Some(child) = self.child.as_ref() else {
            return Err(not_running_err());
        };
        let pid = libc::pid_t::try_from(child.id()).map_err(|_| io::Error::other("pid out of range"))?;
        // SAFETY: the child has not been reaped (we hold it), so `pid` is ours.
        if unsafe { libc::kill(pid, sig) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// SIGCONT + SIGKILL + waitpid. No-op when not running.
    fn kill_and_reap(&mut self) -> io::Result<()> {
        if self.child.is_none() {
            return Ok(());
        }
        let _ = self.signal(libc::SIGCONT);
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        self.frozen = false;
        let _ = child.kill();
        let status = child.wait()?;
        self.last_exit = Some(status);
        Ok(())
    }
}

fn not_running_err() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "server is not running")
}

#[derive(Debug)]
struct Member {
    myid: usize,
    dir: PathBuf,
    client_port: u16,
    peer_port: u16,
    election_port: u16,
    /// The TLS client port (0: none).
    secure_port: u16,
    proc: Mutex<Proc>,
}

impl Member {
    fn lock(&self) -> MutexGuard<'_, Proc> {
        self.proc.lock().unwrap_or_else(PoisonError::into_inner)
    }
    fn cfg_path(&self) -> PathBuf {
        self.dir.join("zoo.cfg")
    }
    fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }
    fn client_addr(&self) -> SocketAddr {
        loopback(self.client_port)
    }
}

/// The two raw relays member `from` uses to reach member `to` (partitionable
/// ensembles only).
#[derive(Debug)]
struct PeerRelay {
    from: usize,
    to: usize,
    /// Forwards to `to`'s quorum port.
    quorum: Proxy,
    /// Forwards to `to`'s election port.
    election: Proxy,
}

impl PeerRelay {
    fn start(from: usize, to: &Member) -> io::Result<PeerRelay> {
        Ok(PeerRelay {
            from,
            to: to.myid - 1,
            quorum: Proxy::start_raw(loopback(to.peer_port))?,
            election: Proxy::start_raw(loopback(to.election_port))?,
        })
    }
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
}

/// A set of real ZooKeeper server processes (one standalone server or an
/// ensemble) on `127.0.0.1`, each with its own temporary directory
/// (`zoo.cfg`, `data/`, `server.log`).
///
/// Members are indexed from 0; member `i` has ZooKeeper `myid` `i + 1`.
///
/// # Threads
///
/// `Cluster` is `Send + Sync`: all methods take `&self` and can be called from
/// several threads at once (e.g. share it in an `Arc` and kill a server while
/// another thread runs clients). Operations on one member are serialised by
/// a per-member lock; blocking waits ([`wait_serving`](Cluster::wait_serving),
/// [`restart`](Cluster::restart)) do not hold that lock while sleeping.
///
/// # Errors
///
/// Methods taking a member index return [`io::ErrorKind::InvalidInput`] for an
/// index `>= len()`.
///
/// # Partitions
///
/// A cluster started with [`ClusterOptions::partitionable`] can cut members
/// off from the others: [`partition`](Cluster::partition),
/// [`heal_partition`](Cluster::heal_partition).
///
/// # Drop
///
/// Dropping sends SIGCONT then SIGKILL to every live server, reaps it,
/// closes the relays of a partitionable ensemble, and removes the temporary
/// directory (kept if `ZKLOCK_HARNESS_KEEP=1`).
#[derive(Debug)]
pub struct Cluster {
    root: PathBuf,
    members: Vec<Member>,
    opts: ClusterOptions,
    /// Every ordered pair's relays; empty unless partitionable.
    relays: Vec<PeerRelay>,
    /// Which members are partitioned; taken while relays are switched.
    partitioned: Mutex<Vec<bool>>,
    /// The certificates of a TLS cluster.
    certs: Option<TestCerts>,
}

impl Cluster {
    /// Starts one standalone server with default options and waits until it
    /// serves. See [`Cluster::start`] for errors.
    pub fn standalone() -> io::Result<Cluster> {
        Cluster::start(ClusterOptions::new())
    }

    /// Starts an ensemble of `n` servers with default options and waits until
    /// every member serves (which implies a leader was elected). `n == 1`
    /// gives a standalone server. See [`Cluster::start`] for errors.
    pub fn ensemble(n: usize) -> io::Result<Cluster> {
        Cluster::start(ClusterOptions::new().size(n))
    }

    /// Starts the servers described by `opts` and waits (up to
    /// `opts.start_timeout`) until every one of them answers `srvr` with a
    /// `Mode:` line.
    ///
    /// For Debian's release calls [`ensure_zookeeper`] first; for another
    /// release checks that it is installed ([`ServerRelease::check`]) and
    /// that java runs. Ports are drawn from below the kernel's ephemeral
    /// range (see `reserve_ports`: no outgoing connection takes a member's
    /// port while it is down, so a member restarts on its own); if a server
    /// fails because a port was taken in the meantime, everything is torn
    /// down and retried with new ports (3 attempts).
    ///
    /// # Errors
    ///
    /// * `InvalidInput` for size 0 or tick time 0;
    /// * installation / java errors from [`ensure_zookeeper`];
    /// * `NotFound` for a release that is not installed, with the reason;
    /// * I/O errors creating the directories or spawning java;
    /// * a server exits or does not serve in time (`TimedOut`); the message
    ///   quotes the tail of its `server.log`.
    ///
    /// On error no process is left behind and the directory is removed.
    pub fn start(opts: ClusterOptions) -> io::Result<Cluster> {
        if opts.size == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "cluster size must be at least 1"));
        }
        if opts.tick_time_ms == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "tick time must be positive"));
        }
        if opts.release.is_maven() {
            opts.release.check()?;
            check_java()?;
        } else {
            ensure_zookeeper()?;
        }
        let mut attempt = 1;
        loop {
            let cluster = Cluster::prepare(&opts)?;
            match cluster.launch_all() {
                Ok(()) => return Ok(cluster),
                Err(_) if attempt < START_ATTEMPTS && cluster.port_clash() => {
                    drop(cluster);
                    attempt += 1;
                },
                Err(e) => return Err(e),
            }
        }
    }

    /// Creates directories, picks ports and writes configs (no process yet).
    fn prepare(opts: &ClusterOptions) -> io::Result<Cluster> {
        let n = opts.size;
        let root = make_temp_root()?;
        let mut cluster = Cluster {
            root,
            members: Vec::with_capacity(n),
            opts: opts.clone(),
            relays: Vec::new(),
            partitioned: Mutex::new(vec![false; n]),
            certs: None,
        };
        if opts.tls {
            cluster.certs = Some(TestCerts::make(&cluster.root.join("tls"))?);
        }
        if !opts.sasl_users.is_empty() {
            let users: String = opts.sasl_users.iter().map(|(u, p)| format!("\n  user_{u}={p:?}")).collect();
            let jaas =
                format!("Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required{users};\n}};\n");
            fs::write(cluster.jaas_path(), jaas)?;
        }

        // From here on, `cluster`'s Drop removes the directory on error.
        // One call, so that no two ports are the same. The ports stay
        // reserved until the relays listen: a relay given a member's own
        // port by the kernel would forward to itself (a CI run had a relay
        // on member 0's election port: the member could not bind it and
        // exited with status 14).
        let base = if n == 1 { 1 } else { 3 * n };
        let reserved = reserve_ports(base + if opts.tls { n } else { 0 })?;
        let ports = reserved.iter().map(|l| l.local_addr().map(|a| a.port())).collect::<io::Result<Vec<u16>>>()?;
        let secure_ports = &ports[base..];
        for i in 0..n {
            let dir = cluster.root.join(format!("server{}", i + 1));
            fs::create_dir_all(dir.join("data"))
                .map_err(|e| annotate(e, &format!("cannot create {}", dir.display())))?;
            let (client_port, peer_port, election_port) =
                if n == 1 { (ports[0], 0, 0) } else { (ports[3 * i], ports[3 * i + 1], ports[3 * i + 2]) };
            cluster.members.push(Member {
                myid: i + 1,
                dir,
                client_port,
                peer_port,
                election_port,
                secure_port: secure_ports.get(i).copied().unwrap_or(0),
                proc: Mutex::new(Proc::default()),
            });
        }
        if opts.partitionable && n > 1 {
            for from in 0..n {
                for to in cluster.members.iter().filter(|m| m.myid != from + 1) {
                    let relay = PeerRelay::start(from, to)?;
                    cluster.relays.push(relay);
                }
            }
        }
        drop(reserved);
        for m in &cluster.members {
            cluster.write_config(m)?;
        }
        Ok(cluster)
    }

    /// The relays member `from` uses to reach member `to`.
    fn relay(&self, from: usize, to: usize) -> Option<&PeerRelay> {
        self.relays.iter().find(|r| r.from == from && r.to == to)
    }

    fn write_config(&self, m: &Member) -> io::Result<()> {
        let o = &self.opts;
        let data = m.dir.join("data");
        let mut cfg = String::new();
        // Writing to a String cannot fail.
        let _ = writeln!(cfg, "# generated by zklock-harness");
        let _ = writeln!(cfg, "tickTime={}", o.tick_time_ms);
        let _ = writeln!(cfg, "dataDir={}", data.display());
        let _ = writeln!(cfg, "clientPort={}", m.client_port);
        let _ = writeln!(cfg, "clientPortAddress=127.0.0.1");
        let _ = writeln!(cfg, "maxClientCnxns=0");
        let _ = writeln!(cfg, "admin.enableServer=false");
        let _ = writeln!(cfg, "minSessionTimeout={}", u64::from(o.tick_time_ms) * 2);
        let _ = writeln!(cfg, "maxSessionTimeout=60000");
        let _ = writeln!(cfg, "4lw.commands.whitelist=*");
        let _ = writeln!(cfg, "forceSync={}", if o.force_sync { "yes" } else { "no" });
        if self.members.len() > 1 {
            let _ = writeln!(cfg, "initLimit=10");
            let _ = writeln!(cfg, "syncLimit={}", o.sync_limit);
            for p in &self.members {
                let relay = self.relay(m.myid - 1, p.myid - 1);
                let (host, quorum, election) = match relay {
                    Some(r) => ("127.0.0.1", r.quorum.addr().port(), r.election.addr().port()),
                    // Partitionable: itself at the wildcard address (see
                    // `ClusterOptions::partitionable`).
                    None if !self.relays.is_empty() => ("0.0.0.0", p.peer_port, p.election_port),
                    None => ("127.0.0.1", p.peer_port, p.election_port),
                };
                let _ = writeln!(cfg, "server.{}={host}:{quorum}:{election}", p.myid);
            }
            fs::write(data.join("myid"), format!("{}\n", m.myid))?;
        }
        if !o.sasl_users.is_empty() {
            let _ = writeln!(cfg, "authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider");
        }
        if let Some(certs) = &self.certs {
            for line in certs.server_config(m.secure_port) {
                let _ = writeln!(cfg, "{line}");
            }
        }
        for line in &o.extra_cfg {
            let _ = writeln!(cfg, "{line}");
        }
        fs::write(m.cfg_path(), cfg).map_err(|e| annotate(e, &format!("cannot write {}", m.cfg_path().display())))
    }

    fn jaas_path(&self) -> PathBuf {
        self.root.join("jaas.conf")
    }

    /// The server's classpath (see [`ServerRelease`]).
    fn classpath(&self) -> std::ffi::OsString {
        self.opts.release.classpath(self.certs.is_some())
    }

    /// Spawns every member and waits for all of them to serve.
    fn launch_all(&self) -> io::Result<()> {
        for i in 0..self.members.len() {
            self.start_member(i)?;
        }
        let deadline = Instant::now() + self.opts.start_timeout;
        let mut pending: Vec<usize> = (0..self.members.len()).collect();
        let mut polls = 0_u32;
        loop {
            let mut still = Vec::new();
            // About once a second, look for a server whose main thread died
            // (a class missing from a release's jars, a bad config): its
            // other threads keep the process alive, never serving.
            polls += 1;
            let look_for_crash = polls.is_multiple_of(20);
            for &i in &pending {
                self.check_alive(i)?;
                if self.mode(i).is_err() || !self.secure_port_listens(i) {
                    if look_for_crash {
                        self.check_main_thread(i)?;
                    }
                    still.push(i);
                }
            }
            pending = still;
            if pending.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(self.not_serving_err(pending[0]));
            }
            thread::sleep(POLL);
        }
    }

    /// Errors if member `i`'s log says its main thread died with an
    /// exception (quoting the log; the process keeps running until the
    /// caller tears the cluster down). Only meaningful before the member
    /// first serves: a restart appends to the same log.
    fn check_main_thread(&self, i: usize) -> io::Result<()> {
        let tail = self.log_tail(i, LOG_TAIL_LINES * 4).unwrap_or_default();
        match MAIN_THREAD_DIED.iter().filter_map(|m| tail.find(m)).min() {
            None => Ok(()),
            Some(at) => Err(io::Error::other(format!(
                "ZooKeeper member {i} ({}) failed to start: its main thread died; {}:\n{}",
                self.opts.release,
                self.log_path(i).display(),
                // From the exception on (later lines are the harness' polls).
                tail[at..].lines().take(LOG_TAIL_LINES).collect::<Vec<_>>().join("\n")
            ))),
        }
    }

    /// Whether a member exited because it could not bind its election
    /// port (ZooKeeper's exit status 14, `UNABLE_TO_BIND_QUORUM_PORT`) or
    /// any server log mentions a bind failure.
    fn port_clash(&self) -> bool {
        self.members.iter().any(|m| {
            m.lock().last_exit.and_then(|s| s.code()) == Some(UNABLE_TO_BIND_QUORUM_PORT)
                || fs::read_to_string(m.log_path())
                    .map(|s| s.contains("Address already in use") || s.contains("BindException"))
                    .unwrap_or(false)
        })
    }

    fn member(&self, i: usize) -> io::Result<&Member> {
        self.members.get(i).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("no member {i}: the cluster has {} member(s)", self.members.len()),
            )
        })
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Always false (a cluster has at least one member); for clippy's sake.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The options the cluster was started with.
    pub fn options(&self) -> &ClusterOptions {
        &self.opts
    }

    /// The cluster's temporary directory (holds `serverN/zoo.cfg`,
    /// `serverN/data/`, `serverN/server.log`).
    pub fn dir(&self) -> &Path {
        &self.root
    }

    /// ZooKeeper connect string of all members:
    /// `"127.0.0.1:p1,127.0.0.1:p2,..."`.
    pub fn connect_string(&self) -> String {
        self.members.iter().map(|m| m.client_addr().to_string()).collect::<Vec<_>>().join(",")
    }

    /// The connect string of every member's TLS port
    /// (`"127.0.0.1:s1,127.0.0.1:s2,..."`); empty unless started with
    /// [`ClusterOptions::tls`].
    pub fn secure_connect_string(&self) -> String {
        if self.certs.is_none() {
            return String::new();
        }
        self.members.iter().map(|m| loopback(m.secure_port).to_string()).collect::<Vec<_>>().join(",")
    }

    /// The certificates of a cluster started with [`ClusterOptions::tls`].
    pub fn tls_certs(&self) -> Option<&TestCerts> {
        self.certs.as_ref()
    }

    /// Client address (`127.0.0.1:port`) of member `i`.
    ///
    /// # Panics
    ///
    /// If `i >= len()` (like slice indexing; use [`client_addrs`] to iterate).
    ///
    /// [`client_addrs`]: Cluster::client_addrs
    pub fn client_addr(&self, i: usize) -> SocketAddr {
        self.members[i].client_addr()
    }

    /// Client addresses of all members, in index order.
    pub fn client_addrs(&self) -> Vec<SocketAddr> {
        self.members.iter().map(Member::client_addr).collect()
    }

    /// Path of member `i`'s `server.log` (java's stdout and stderr; appended
    /// to across restarts).
    ///
    /// # Panics
    ///
    /// If `i >= len()`.
    pub fn log_path(&self, i: usize) -> PathBuf {
        self.members[i].log_path()
    }

    /// The last `lines` lines of member `i`'s `server.log`.
    ///
    /// # Errors
    ///
    /// Bad index, or the log cannot be read.
    pub fn log_tail(&self, i: usize, lines: usize) -> io::Result<String> {
        tail_file(&self.member(i)?.log_path(), lines)
    }

    /// Process id of member `i`, or `None` if it is not running (never
    /// started, killed, stopped or exited by itself) or `i` is out of range.
    pub fn pid(&self, i: usize) -> Option<u32> {
        let m = self.members.get(i)?;
        let mut p = m.lock();
        if p.refresh() {
            p.child.as_ref().map(Child::id)
        } else {
            None
        }
    }

    /// Whether member `i` has a live process (frozen counts as running).
    /// False for an out-of-range index.
    pub fn is_running(&self, i: usize) -> bool {
        self.members.get(i).is_some_and(|m| m.lock().refresh())
    }

    /// Whether member `i` is currently frozen by [`freeze`](Cluster::freeze).
    pub fn is_frozen(&self, i: usize) -> bool {
        self.members.get(i).is_some_and(|m| {
            let mut p = m.lock();
            p.refresh() && p.frozen
        })
    }

    /// Kills member `i` with SIGKILL (after SIGCONT, in case it is frozen) and
    /// reaps it. Its data directory and ports are kept for
    /// [`restart`](Cluster::restart). No-op if it is not running.
    ///
    /// # Errors
    ///
    /// Bad index; `waitpid` failure.
    pub fn kill(&self, i: usize) -> io::Result<()> {
        self.member(i)?.lock().kill_and_reap()
    }

    /// Stops member `i` gracefully: SIGCONT if frozen, SIGTERM, then waits up
    /// to 10 s for it to exit before falling back to SIGKILL. Reaps it. No-op
    /// if it is not running.
    ///
    /// # Errors
    ///
    /// Bad index; `waitpid` failure.
    pub fn stop(&self, i: usize) -> io::Result<()> {
        let m = self.member(i)?;
        {
            let mut p = m.lock();
            if !p.refresh() {
                return Ok(());
            }
            let _ = p.signal(libc::SIGCONT);
            p.frozen = false;
            p.signal(libc::SIGTERM)?;
        }
        let deadline = Instant::now() + STOP_GRACE;
        loop {
            {
                let mut p = m.lock();
                if !p.refresh() {
                    return Ok(());
                }
                if Instant::now() >= deadline {
                    return p.kill_and_reap();
                }
            }
            thread::sleep(POLL);
        }
    }

    /// Freezes member `i` with SIGSTOP: its sockets stay open but it answers
    /// nothing (peers and clients see a silent server, then time out).
    ///
    /// # Errors
    ///
    /// Bad index; `NotConnected` if it is not running.
    pub fn freeze(&self, i: usize) -> io::Result<()> {
        let m = self.member(i)?;
        let mut p = m.lock();
        if !p.refresh() {
            return Err(not_running(i));
        }
        p.signal(libc::SIGSTOP)?;
        p.frozen = true;
        // SIGSTOP stops the threads one by one: return only once every
        // thread is stopped, so that nothing answers after freeze() returns.
        if let Some(pid) = p.child.as_ref().map(Child::id) {
            wait_all_threads_stopped(pid, Duration::from_secs(2));
        }
        Ok(())
    }

    /// Resumes a member frozen by [`freeze`](Cluster::freeze) (SIGCONT).
    /// Harmless on a running member that is not frozen.
    ///
    /// # Errors
    ///
    /// Bad index; `NotConnected` if it is not running.
    pub fn resume(&self, i: usize) -> io::Result<()> {
        let m = self.member(i)?;
        let mut p = m.lock();
        if !p.refresh() {
            return Err(not_running(i));
        }
        p.signal(libc::SIGCONT)?;
        p.frozen = false;
        Ok(())
    }

    /// Starts member `i` again with the same data directory, config and ports
    /// (killing it first if it is running), then waits until it serves (up to
    /// the cluster's start timeout).
    ///
    /// In an ensemble a member only serves once it has joined a quorum; to
    /// bring back several dead members at once, use
    /// [`start_member`](Cluster::start_member) on each, then
    /// [`wait_quorum`](Cluster::wait_quorum).
    ///
    /// # Errors
    ///
    /// Bad index; spawn failure; the server exits or does not serve in time
    /// (`TimedOut`; the process is left running in that case, e.g. while no
    /// quorum is available).
    pub fn restart(&self, i: usize) -> io::Result<()> {
        self.kill(i)?;
        self.start_member(i)?;
        self.wait_serving(i, self.opts.start_timeout)
    }

    /// Spawns member `i` without waiting for it to serve.
    ///
    /// # Errors
    ///
    /// Bad index; `AlreadyExists` if it is running; log file or spawn errors.
    pub fn start_member(&self, i: usize) -> io::Result<()> {
        let m = self.member(i)?;
        let mut p = m.lock();
        if p.refresh() {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("member {i} is already running")));
        }
        let log_path = m.log_path();
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| annotate(e, &format!("cannot open {}", log_path.display())))?;
        writeln!(log, "=== zklock-harness: starting member {i} (myid {}) ===", m.myid)?;
        let log_err = log.try_clone()?;
        let mut cmd = Command::new(java_command());
        cmd.arg(format!("-Dzookeeper.log.dir={}", m.dir.display()))
            .args([
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-XX:-UsePerfData",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
            ])
            .args(
                (!self.opts.sasl_users.is_empty())
                    .then(|| format!("-Djava.security.auth.login.config={}", self.jaas_path().display())),
            )
            .args(&self.opts.jvm_args)
            .arg("-cp")
            .arg(self.classpath())
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(m.cfg_path())
            .current_dir(&m.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        let child =
            crate::spawn::spawn_tied(cmd).map_err(|e| annotate(e, &format!("cannot spawn {:?}", java_command())))?;
        p.child = Some(child);
        p.frozen = false;
        p.last_exit = None;
        Ok(())
    }

    /// Errors if member `i` is not running (quoting its exit status and log).
    fn check_alive(&self, i: usize) -> io::Result<()> {
        let m = self.member(i)?;
        let mut p = m.lock();
        if p.refresh() {
            return Ok(());
        }
        let status = p.last_exit.map_or_else(|| "never started".to_string(), |s| s.to_string());
        drop(p);
        Err(io::Error::new(
            io::ErrorKind::NotConnected,
            format!(
                "ZooKeeper member {i} is not running ({status}); tail of {}:\n{}",
                m.log_path().display(),
                self.log_tail(i, LOG_TAIL_LINES).unwrap_or_default()
            ),
        ))
    }

    fn not_serving_err(&self, i: usize) -> io::Error {
        let answer = match self.four_letter(i, "srvr") {
            Ok(s) => s.trim().to_string(),
            Err(e) => format!("error: {e}"),
        };
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "ZooKeeper member {i} is not serving (srvr: {answer}); tail of {}:\n{}",
                self.log_path(i).display(),
                self.log_tail(i, LOG_TAIL_LINES).unwrap_or_default()
            ),
        )
    }

    /// Waits until member `i` answers `srvr` with a `Mode:` line (it serves
    /// clients; in an ensemble this means it is part of a quorum).
    ///
    /// # Errors
    ///
    /// Bad index; `NotConnected` if the process is not running or exits while
    /// waiting; `TimedOut` after `timeout`. Messages quote the log tail.
    pub fn wait_serving(&self, i: usize, timeout: Duration) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            self.check_alive(i)?;
            // With TLS, the secure port must listen too: a client that
            // connects to it at once is refused otherwise (the session
            // layer says so at once, where a retrying client library hid
            // the race).
            if self.mode(i).is_ok() && self.secure_port_listens(i) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(self.not_serving_err(i));
            }
            thread::sleep(POLL);
        }
    }

    /// Whether member `i`'s TLS port (if it has one) accepts a connection.
    fn secure_port_listens(&self, i: usize) -> bool {
        match self.members.get(i).map(|m| m.secure_port) {
            None | Some(0) => true,
            Some(port) => std::net::TcpStream::connect_timeout(&loopback(port), Duration::from_secs(1)).is_ok(),
        }
    }

    /// The `Mode:` of member `i` as reported by `srvr`: `"standalone"`,
    /// `"leader"`, `"follower"` or `"observer"`.
    ///
    /// # Errors
    ///
    /// Bad index; connection errors / `TimedOut` (2 s, e.g. frozen);
    /// `Other` if it answers without a `Mode:` line (not serving).
    pub fn mode(&self, i: usize) -> io::Result<String> {
        let out = self.four_letter(i, "srvr")?;
        parse_mode(&out).ok_or_else(|| io::Error::other(format!("member {i} is not serving: {}", out.trim())))
    }

    /// Index of the member whose `srvr` reports `Mode: leader` (or
    /// `standalone` for a single server), asking only running, non-frozen
    /// members. `None` if there is none right now (e.g. during an election).
    pub fn leader(&self) -> Option<usize> {
        (0..self.members.len())
            .filter(|&i| self.is_running(i) && !self.is_frozen(i))
            .find(|&i| matches!(self.mode(i).as_deref(), Ok("leader" | "standalone")))
    }

    /// Waits until a leader exists and at least a majority of the members
    /// (`len()/2 + 1`) serve; returns the leader's index.
    ///
    /// # Errors
    ///
    /// `TimedOut` after `timeout`, with the mode of each member.
    pub fn wait_quorum(&self, timeout: Duration) -> io::Result<usize> {
        let deadline = Instant::now() + timeout;
        let need = self.members.len() / 2 + 1;
        loop {
            let mut serving = 0;
            let mut leader = None;
            let mut report = Vec::new();
            for i in 0..self.members.len() {
                if !self.is_running(i) {
                    report.push(format!("{i}: not running"));
                    continue;
                }
                if self.is_frozen(i) {
                    report.push(format!("{i}: frozen"));
                    continue;
                }
                match self.mode(i) {
                    Ok(mode) => {
                        serving += 1;
                        if mode == "leader" || mode == "standalone" {
                            leader = Some(i);
                        }
                        report.push(format!("{i}: {mode}"));
                    },
                    Err(e) => report.push(format!("{i}: {e}")),
                }
            }
            if let Some(l) = leader {
                if serving >= need {
                    return Ok(l);
                }
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "no quorum after {timeout:?} (need {need} serving members with a leader): {}",
                        report.join("; ")
                    ),
                ));
            }
            thread::sleep(POLL);
        }
    }

    /// Whether the cluster was started with
    /// [`ClusterOptions::partitionable`] and is an ensemble, i.e. whether
    /// [`partition`](Cluster::partition) works.
    pub fn is_partitionable(&self) -> bool {
        !self.relays.is_empty()
    }

    /// Whether member `i` is currently cut off by
    /// [`partition`](Cluster::partition). False for an out-of-range index
    /// or a cluster that is not partitionable.
    pub fn is_partitioned(&self, i: usize) -> bool {
        lock_partitioned(&self.partitioned).get(i).copied().unwrap_or(false)
    }

    /// Cuts member `i` off from every other member, as a dead network would,
    /// while its clients stay connected to it.
    ///
    /// Every relay carrying traffic between member `i` and another member
    /// (quorum and election links, both directions, whoever initiated them)
    /// is blackholed ([`Proxy::blackhole`]): open links stay open but carry
    /// nothing, new links are accepted but lead nowhere, so no server gets
    /// a reset or a refusal; each side only sees silence. The member's
    /// client port is untouched: its clients stay connected and it keeps
    /// answering reads from its local copy until ZooKeeper gives up on the
    /// silence. With the generated `syncLimit=5`: a follower gives up on its
    /// leader about `5 * tickTime` after the last packet it got (it then
    /// closes its client connections and answers `srvr` with "not currently
    /// serving"); a partitioned leader steps down once its followers' acks
    /// have been missing for about as long; the other members, if they
    /// still form a quorum, keep their leader (or elect a new one once they
    /// give up on a partitioned leader) and expire the sessions the
    /// partitioned member can no longer report.
    ///
    /// Several members can be partitioned at once: each is then cut off from
    /// every other member, partitioned or not (they do not form a group).
    /// Partitioning a partitioned member again has no effect. Returns once
    /// the relays are switched.
    ///
    /// # Errors
    ///
    /// Bad index; `Unsupported` if the cluster is not partitionable (see
    /// [`is_partitionable`](Cluster::is_partitionable)).
    ///
    /// # Threads
    ///
    /// Callable from any thread; partition changes are serialised.
    pub fn partition(&self, i: usize) -> io::Result<()> {
        self.set_partitioned(i, true)
    }

    /// Ends the partition of member `i`: every blackholed relay between it
    /// and a member that is not partitioned itself closes its links (the
    /// initiating server gets a reset, the other side an end of stream;
    /// see [`Proxy::heal`]) and carries new links again, so the servers
    /// reconnect. Returns once those links are closed, not once the member
    /// serves again: wait with [`wait_serving`](Cluster::wait_serving).
    ///
    /// A member that gave up during the partition is in leader election
    /// and rejoins when it next sends its vote; ZooKeeper backs that off
    /// while nobody answers (doubling from 200 ms up to 60 s), so after a
    /// long partition rejoining can take that long. No effect if member `i`
    /// is not partitioned.
    ///
    /// # Errors
    ///
    /// As [`partition`](Cluster::partition).
    ///
    /// # Threads
    ///
    /// As [`partition`](Cluster::partition).
    pub fn heal_partition(&self, i: usize) -> io::Result<()> {
        self.set_partitioned(i, false)
    }

    fn set_partitioned(&self, i: usize, cut: bool) -> io::Result<()> {
        self.member(i)?;
        if !self.is_partitionable() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the cluster is not partitionable: start an ensemble with \
                 ClusterOptions::partitionable(true)",
            ));
        }
        let mut partitioned = lock_partitioned(&self.partitioned);
        partitioned[i] = cut;
        for r in &self.relays {
            if partitioned[r.from] || partitioned[r.to] {
                r.quorum.blackhole();
                r.election.blackhole();
            } else if r.quorum.is_blackholed() || r.election.is_blackholed() {
                r.quorum.heal();
                r.election.heal();
            }
        }
        Ok(())
    }

    /// Sends the four-letter word `word` to member `i` (2 s timeout) and
    /// returns the answer. See [`four_letter_word`].
    ///
    /// # Errors
    ///
    /// Bad index, and those of [`four_letter_word`].
    pub fn four_letter(&self, i: usize, word: &str) -> io::Result<String> {
        four_letter_word(self.member(i)?.client_addr(), word, FOUR_LETTER_TIMEOUT)
    }
}

fn lock_partitioned(m: &Mutex<Vec<bool>>) -> MutexGuard<'_, Vec<bool>> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn not_running(i: usize) -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, format!("member {i} is not running"))
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for m in &self.members {
            let _ = m.lock().kill_and_reap();
        }
        let keep = std::env::var_os("ZKLOCK_HARNESS_KEEP").is_some_and(|v| !v.is_empty() && v != "0");
        if keep {
            eprintln!("zklock-harness: keeping {}", self.root.display());
        } else {
            let _ = fs::remove_dir_all(&self.root);
        }
    }
}

/// Waits (up to `limit`) until every thread of `pid` is in the stopped state
/// (`T`/`t` in /proc/PID/task/TID/stat). Best effort: returns either way.
fn wait_all_threads_stopped(pid: u32, limit: Duration) {
    let all_stopped = || {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return true };
        tasks.flatten().all(|t| {
            std::fs::read_to_string(t.path().join("stat"))
                .ok()
                .and_then(|st| st.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with(['T', 't'])))
                .unwrap_or(true)
        })
    };
    crate::wait_for(limit, all_stopped);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A member whose election port is taken exits with status 14; that
    /// counts as a port clash (so `start` retries with new ports) even when
    /// its log cannot be read (the CI run that had this clash quoted an
    /// empty log tail and did not retry).
    #[test]
    fn a_member_that_cannot_bind_its_election_port_is_a_port_clash() {
        ensure_zookeeper().expect("zookeeper");
        let opts = ClusterOptions::new().size(3).tick_time_ms(500).partitionable(true);
        let mut cluster = Cluster::prepare(&opts).expect("prepare");
        let squatter = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        cluster.members[0].election_port = squatter.local_addr().expect("addr").port();
        for m in &cluster.members {
            cluster.write_config(m).expect("config");
        }
        let e = cluster.launch_all().expect_err("member 0 cannot bind");
        assert!(e.to_string().contains("exit status: 14"), "{e}");
        fs::remove_file(cluster.members[0].log_path()).expect("remove the log");
        assert!(cluster.port_clash());
    }
}

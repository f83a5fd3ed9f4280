//! Interoperability against the real peer libraries: Apache Curator 5.x
//! (Debian `libcurator-recipes-java`) and kazoo 2.11.0 (PyPI, in the venv
//! `target/interop-venv`) take locks on the same ZooKeeper path as zklock,
//! and a checker counts every moment two holders were inside at once.
//!
//! The peers are `tests/interop/CuratorPeer.java` (compiled here with
//! `javac` into `target/interop/` when missing or older than its source) and
//! `tests/interop/kazoo_peer.py` (the venv is created here when missing).
//! If either cannot be had the tests FAIL with the reason: they never skip.
//!
//! Curator and kazoo are never made to contend with each other: Curator
//! sorts kazoo's `<hex>__lock__<seq>` names by the whole name and so does not
//! wait for them; that pair can never exclude each other, whatever zklock
//! does. (The foreign-children test has both on one path only in the order
//! that works: Curator holds first and kazoo waits for it.)

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Barrier, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use common::{connect, queue, server, wait_until, Raw};
use zklock_core::{Client, NodeKind};
use zklock_zk as zk;

const SEC: Duration = Duration::from_secs(1);
/// How long a contender that must wait is watched to really be waiting.
const STILL_WAITING: Duration = Duration::from_millis(300);
/// Rounds per contender in the contention tests.
const ROUNDS: u32 = 15;
/// kazoo version the tests pin (and `scripts/install-deps.sh` installs).
const KAZOO_VERSION: &str = "2.11.0";
/// Debian jars the Curator peer is compiled and run against.
const CURATOR_JARS: [&str; 7] = [
    "/usr/share/java/curator-recipes.jar",
    "/usr/share/java/curator-framework.jar",
    "/usr/share/java/curator-client.jar",
    "/usr/share/java/zookeeper.jar",
    "/usr/share/java/zookeeper-jute.jar",
    "/usr/share/java/guava.jar",
    "/usr/share/java/slf4j-api.jar",
];

// ---------------------------------------------------------------------------
// Tools: the compiled Curator peer and the kazoo venv
// ---------------------------------------------------------------------------

/// The repository root (the workspace).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// Runs `cmd`, returning its combined output, or why it failed.
fn run(cmd: &mut Command) -> Result<String, String> {
    let what = format!("{cmd:?}");
    let out = cmd.output().map_err(|e| format!("{what}: cannot run: {e}"))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("{what}: {}\n{text}", out.status))
    }
}

/// The modification time of `p`, if it exists.
fn mtime(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// The classpath to run the Curator peer with (`target/interop` and the
/// Debian jars), compiling the peer first if its class is missing or older
/// than its source. Panics with the reason if that cannot be done.
fn curator_classpath() -> &'static str {
    static CP: OnceLock<Result<String, String>> = OnceLock::new();
    let prepared = CP.get_or_init(|| {
        let missing: Vec<&str> = CURATOR_JARS.iter().copied().filter(|j| !Path::new(j).is_file()).collect();
        if !missing.is_empty() {
            return Err(format!(
                "Curator jars missing: {missing:?}. Install the Debian package libcurator-recipes-java \
                 (scripts/install-deps.sh does)"
            ));
        }
        let source = root().join("tests/interop/CuratorPeer.java");
        let out = root().join("target/interop");
        let class = out.join("CuratorPeer.class");
        let stale = match (mtime(&class), mtime(&source)) {
            (Some(c), Some(s)) => c < s,
            _ => true,
        };
        if stale {
            std::fs::create_dir_all(&out).map_err(|e| format!("mkdir {}: {e}", out.display()))?;
            run(Command::new("javac")
                .args(["-Xlint:all,-path", "-d"])
                .arg(&out)
                .arg("-cp")
                .arg(CURATOR_JARS.join(":"))
                .arg(&source))
            .map_err(|e| {
                format!("compiling the Curator peer failed (a JDK with javac is needed: default-jdk-headless): {e}")
            })?;
        }
        Ok(format!("{}:{}:{}", out.display(), CURATOR_JARS.join(":"), zklock_harness::SLF4J_SIMPLE_JAR))
    });
    match prepared {
        Ok(cp) => cp,
        Err(e) => panic!("Curator peer unavailable: {e}"),
    }
}

/// The venv's python with kazoo 2.11.0, creating `target/interop-venv` if
/// it is missing or lacks kazoo. Panics with the reason if that fails.
fn kazoo_python() -> &'static Path {
    static PY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let prepared = PY.get_or_init(|| {
        let venv = root().join("target/interop-venv");
        let python = venv.join("bin/python");
        let check = format!(
            "import importlib.metadata as m, kazoo.recipe.lock; v = m.version('kazoo'); \
             assert v == '{KAZOO_VERSION}', 'kazoo ' + v"
        );
        if run(Command::new(&python).args(["-c", &check])).is_ok() {
            return Ok(python);
        }
        if !venv.join("bin/pip").exists() {
            let _ = std::fs::remove_dir_all(&venv); // a half-made venv (no pip) is of no use
            run(Command::new("python3").args(["-m", "venv"]).arg(&venv)).map_err(|e| {
                format!("creating the venv failed (python3-venv is needed; scripts/install-deps.sh installs it): {e}")
            })?;
        }
        run(Command::new(venv.join("bin/pip")).args(["install", "-q", &format!("kazoo=={KAZOO_VERSION}")]))
            .map_err(|e| format!("pip install kazoo=={KAZOO_VERSION} into {} failed: {e}", venv.display()))?;
        run(Command::new(&python).args(["-c", &check]))
            .map_err(|e| format!("kazoo still not importable after installing: {e}"))?;
        Ok(python)
    });
    match prepared {
        Ok(p) => p,
        Err(e) => panic!("kazoo peer unavailable: {e}"),
    }
}

// ---------------------------------------------------------------------------
// Peers: the other libraries, one process each
// ---------------------------------------------------------------------------

/// The peer library.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lib {
    /// Apache Curator 5.x (`tests/interop/CuratorPeer.java`).
    Curator,
    /// kazoo 2.11 (`tests/interop/kazoo_peer.py`).
    Kazoo,
}

impl Lib {
    /// Prefix of this library's contender ids.
    fn short(self) -> &'static str {
        match self {
            Lib::Curator => "cur",
            Lib::Kazoo => "kz",
        }
    }
}

/// Which lock a contender takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Exclusive: zklock `lock`, Curator `InterProcessMutex`, kazoo `Lock`.
    Mutex,
    /// Read side of a read/write lock.
    Read,
    /// Write side of a read/write lock.
    Write,
    /// Leadership: zklock `election`, Curator `LeaderLatch` (not kazoo).
    Latch,
    /// Curator's `InterProcessMultiLock` over `PATH/a` and `PATH/b` (hold
    /// mode only; zklock's side is a `MultiLock`, not a `Lock`).
    Multi,
    /// A lease of a semaphore with [`PERMITS`] leases: zklock `semaphore`,
    /// Curator `InterProcessSemaphoreV2` (not kazoo).
    Lease,
    /// A lease of Curator's `InterProcessSemaphoreV2` whose permits are
    /// the `SharedCount` at `<path>-count` (hold mode).
    LeaseShared,
    /// Curator's `InterProcessMutex` made revocable (hold mode; prints
    /// `REVOCATION REQUESTED` when asked to let go).
    Revocable,
    /// Curator's `Revoker.attemptRevoke` on a holder's node (the peer's
    /// path), once: prints `REVOKED` and exits.
    Revoke,
}

/// The leases of the semaphore the `Lease` contenders share.
const PERMITS: usize = 2;

impl Kind {
    /// The peers' command-line name of this kind.
    fn arg(self) -> &'static str {
        match self {
            Kind::Mutex => "mutex",
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::Latch => "latch",
            Kind::Multi => "multi",
            Kind::Lease => "lease",
            Kind::LeaseShared => "lease-shared",
            Kind::Revocable => "revocable",
            Kind::Revoke => "revoke",
        }
    }

    /// How this kind reports to the checker.
    fn side(self) -> Side {
        match self {
            Kind::Read => Side::R,
            Kind::Lease => Side::S,
            _ => Side::W,
        }
    }

    /// The zklock lock handle of this kind.
    fn zklock(self, c: &Client, path: &str) -> zklock_core::Lock {
        match self {
            Kind::Mutex => c.lock(path),
            Kind::Read => c.read_lock(path),
            Kind::Write => c.write_lock(path),
            Kind::Latch => c.election(path, "zklock"),
            Kind::Lease => c.semaphore(path, PERMITS, zklock_core::LockOptions::default()),
            Kind::Multi | Kind::LeaseShared | Kind::Revocable | Kind::Revoke => {
                unreachable!("not a zklock contender kind")
            },
        }
        .unwrap()
    }
}

/// A peer process (see `tests/interop/`). Killed when dropped.
struct Peer {
    /// The id it reports to the checker.
    id: String,
    child: Child,
    /// Closed on drop, which ends a peer still running.
    stdin: Option<ChildStdin>,
    /// Its stdout, line by line.
    lines: Receiver<String>,
    /// Its stderr so far.
    stderr: Arc<Mutex<String>>,
}

impl Peer {
    /// Starts a peer of `lib` taking a `kind` lock on `path`: `rounds` times
    /// (reporting to the checker on `port`), or once and holding it until
    /// told (`rounds` = `None`).
    fn spawn(lib: Lib, hosts: &str, path: &str, kind: Kind, rounds: Option<u32>, port: u16, id: &str) -> Peer {
        let mut cmd = match lib {
            Lib::Curator => {
                let mut c = Command::new(zklock_harness::java_command());
                c.args([
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    "-Xmx96m",
                    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                    "-cp",
                    curator_classpath(),
                    "CuratorPeer",
                ]);
                c
            },
            Lib::Kazoo => {
                let mut c = Command::new(kazoo_python());
                c.arg("-u").arg(root().join("tests/interop/kazoo_peer.py"));
                c
            },
        };
        let rounds = rounds.map_or_else(|| "hold".to_owned(), |r| r.to_string());
        cmd.args([hosts, path, kind.arg(), &rounds, &port.to_string(), id]);
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {lib:?} peer {id}: {e}"));
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let (err_pipe, sink) = (child.stderr.take().unwrap(), stderr.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(err_pipe).lines() {
                let Ok(line) = line else { break };
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        let stdin = child.stdin.take();
        Peer { id: id.to_owned(), child, stdin, lines, stderr }
    }

    /// What the peer wrote on stderr so far (for failure messages).
    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits for the next stdout line, which must start with `word`.
    fn expect(&self, word: &str, limit: Duration) -> String {
        match self.lines.recv_timeout(limit) {
            Ok(line) if line.starts_with(word) => line,
            Ok(line) => panic!("peer {}: expected {word}, got {line:?}; stderr:\n{}", self.id, self.stderr()),
            Err(RecvTimeoutError::Timeout) => {
                panic!("peer {}: no {word} within {limit:?}; stderr:\n{}", self.id, self.stderr())
            },
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(Duration::from_millis(100)); // let stderr drain
                panic!("peer {}: exited before {word}; stderr:\n{}", self.id, self.stderr())
            },
        }
    }

    /// Waits until a hold-mode peer has connected and holds the lock.
    fn expect_held(&self, limit: Duration) -> String {
        self.expect("READY", limit);
        self.expect("HELD", limit)
    }

    /// Asserts the peer prints nothing for `d` (it is still waiting).
    fn quiet_for(&self, d: Duration, why: &str) {
        match self.lines.recv_timeout(d) {
            Err(RecvTimeoutError::Timeout) => {},
            Ok(line) => panic!("peer {}: {why}, but it printed {line:?}", self.id),
            Err(RecvTimeoutError::Disconnected) => panic!("peer {}: exited; stderr:\n{}", self.id, self.stderr()),
        }
    }

    /// Sends one line on the peer's stdin (start signal, or release in hold mode).
    fn send_line(&mut self) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(b"go\n").and_then(|()| stdin.flush()).unwrap();
    }

    /// Waits for the peer to exit; it must exit 0 within `limit`.
    fn expect_success(&mut self, limit: Duration) {
        let start = Instant::now();
        let status: ExitStatus = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(
                start.elapsed() < limit,
                "peer {} still running after {limit:?}; stderr:\n{}",
                self.id,
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        std::thread::sleep(Duration::from_millis(50)); // let stderr drain
        assert!(status.success(), "peer {} failed: {status}; stderr:\n{}", self.id, self.stderr());
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.stdin.take();
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------
// The checker: who is inside the critical section, over TCP
// ---------------------------------------------------------------------------

/// Reader or writer, as reported to the checker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    /// A reader: may share with readers.
    R,
    /// A writer (or exclusive holder): shares with no one.
    W,
    /// A semaphore's lease holder: at most [`PERMITS`] at once.
    S,
}

/// What the checker saw.
#[derive(Debug, Default)]
struct Seen {
    /// Writers inside now.
    writers: Vec<String>,
    /// Readers inside now.
    readers: Vec<String>,
    /// Every time two holders were inside when they must not be, with the
    /// lock's queue at that moment.
    violations: Vec<String>,
    /// Most readers inside at once.
    max_readers: usize,
    /// Lease holders inside now.
    leases: Vec<String>,
    /// Most lease holders inside at once.
    max_leases: usize,
    /// How often a reader entered while another reader was inside.
    shared_entries: u32,
    /// Completed rounds (exits) per contender id.
    rounds: HashMap<String, u32>,
    /// Completed rounds per side.
    rounds_by_side: HashMap<&'static str, u32>,
    /// Contender ids in the order they entered.
    order: Vec<String>,
    /// Protocol errors (an exit without enter, a bad line).
    errors: Vec<String>,
}

/// A critical-section checker: a TCP server on 127.0.0.1 for the peers
/// (`enter W|R <id>` / `exit W|R <id>`, each answered `ok`), also called in
/// process by zklock's contenders. It counts writers entering while anyone
/// is inside and readers entering while a writer is inside.
struct Checker {
    /// Everything counted so far.
    seen: Arc<Mutex<Seen>>,
    /// The TCP port the peers report to.
    port: u16,
    /// Ends the accept loop.
    stop: Arc<AtomicBool>,
    /// Describes the lock's queue, for violation reports.
    snapshot: Arc<dyn Fn() -> String + Send + Sync>,
}

impl Checker {
    /// Starts the server. `snapshot` describes the lock's queue; it is
    /// recorded with every violation (the offender still holds then).
    fn start(snapshot: impl Fn() -> String + Send + Sync + 'static) -> Arc<Checker> {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let checker = Arc::new(Checker {
            seen: Arc::default(),
            port: listener.local_addr().unwrap().port(),
            stop: Arc::default(),
            snapshot: Arc::new(snapshot),
        });
        let weak = Arc::downgrade(&checker);
        let stop = checker.stop.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let (Ok(conn), Some(checker)) = (conn, weak.upgrade()) else { continue };
                std::thread::spawn(move || checker.serve(conn));
            }
        });
        checker
    }

    /// Answers one peer's messages until it disconnects.
    fn serve(&self, conn: TcpStream) {
        let _ = conn.set_nodelay(true);
        let mut out = conn.try_clone().unwrap();
        for line in BufReader::new(conn).lines() {
            let Ok(line) = line else { break };
            let mut words = line.split_whitespace();
            match (words.next(), words.next(), words.next()) {
                (Some(op @ ("enter" | "exit")), Some(side @ ("R" | "W" | "S")), Some(id)) => {
                    let side = match side {
                        "R" => Side::R,
                        "S" => Side::S,
                        _ => Side::W,
                    };
                    if op == "enter" {
                        self.enter(side, id);
                    } else {
                        self.exit(side, id);
                    }
                },
                _ => self.seen.lock().unwrap().errors.push(format!("bad line {line:?}")),
            }
            if out.write_all(b"ok\n").is_err() {
                break;
            }
        }
    }

    /// `id` entered the critical section as a reader or writer.
    fn enter(&self, side: Side, id: &str) {
        let mut seen = self.seen.lock().unwrap();
        let bad = match side {
            Side::W => !seen.writers.is_empty() || !seen.readers.is_empty(),
            Side::R => !seen.writers.is_empty(),
            Side::S => seen.leases.len() >= PERMITS,
        };
        if bad {
            let msg = format!(
                "{side:?} {id} entered while writers {:?}, readers {:?} and lease holders {:?} were inside; queue: {}",
                seen.writers,
                seen.readers,
                seen.leases,
                (self.snapshot)()
            );
            seen.violations.push(msg);
        }
        match side {
            Side::W => seen.writers.push(id.to_owned()),
            Side::S => {
                seen.leases.push(id.to_owned());
                seen.max_leases = seen.max_leases.max(seen.leases.len());
            },
            Side::R => {
                if !seen.readers.is_empty() {
                    seen.shared_entries += 1;
                }
                seen.readers.push(id.to_owned());
                seen.max_readers = seen.max_readers.max(seen.readers.len());
            },
        }
        seen.order.push(id.to_owned());
    }

    /// `id` is about to leave the critical section.
    fn exit(&self, side: Side, id: &str) {
        let mut seen = self.seen.lock().unwrap();
        let inside = match side {
            Side::W => &mut seen.writers,
            Side::R => &mut seen.readers,
            Side::S => &mut seen.leases,
        };
        match inside.iter().position(|x| x == id) {
            Some(i) => {
                inside.remove(i);
                *seen.rounds.entry(id.to_owned()).or_default() += 1;
                let name = match side {
                    Side::R => "R",
                    Side::W => "W",
                    Side::S => "S",
                };
                *seen.rounds_by_side.entry(name).or_default() += 1;
            },
            None => seen.errors.push(format!("exit {side:?} {id} without enter")),
        }
    }
}

impl Drop for Checker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port)); // wakes the accept loop
    }
}

/// The lock's queue as `name(holds)` items, for violation reports.
fn describe_queue(c: &Client, path: &str) -> String {
    match c.participants(path) {
        Ok(ps) => ps
            .iter()
            .map(|p| format!("{}{}", p.name, if p.holds { "(holds)" } else { "" }))
            .collect::<Vec<_>>()
            .join(" "),
        Err(e) => format!("(participants failed: {e})"),
    }
}

/// A small xorshift generator: a number of milliseconds in `range`.
fn jitter_ms(state: &mut u64, range: std::ops::RangeInclusive<u64>) -> Duration {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    Duration::from_millis(range.start() + *state % (range.end() - range.start() + 1))
}

// ---------------------------------------------------------------------------
// Contention: zklock threads and peer processes on one path
// ---------------------------------------------------------------------------

/// Runs `zk_kinds` zklock contenders (threads, one Client each) and
/// `peer_kinds` peers of `lib` on one path, `ROUNDS` rounds each, all
/// started together, and checks: no violation, every round done, the queue
/// empty afterwards, and the two libraries really took turns. Returns what
/// the checker saw.
fn contend(lib: Lib, path: &str, zk_kinds: &[Kind], peer_kinds: &[Kind]) -> Seen {
    let started = Instant::now();
    let zk = server();
    let hosts = zk.connect_string();
    let observer = connect(&hosts);
    // A semaphore's queue is its leases.
    let semaphore = zk_kinds.contains(&Kind::Lease);
    let snap_path = if semaphore { format!("{path}/leases") } else { path.to_owned() };
    let checker = Checker::start(move || describe_queue(&observer, &snap_path));

    let mut peers: Vec<Peer> = peer_kinds
        .iter()
        .enumerate()
        .map(|(i, &k)| {
            let id = format!("{}-{}-{i}", lib.short(), k.arg());
            Peer::spawn(lib, &hosts, path, k, Some(ROUNDS), checker.port, &id)
        })
        .collect();
    let barrier = Arc::new(Barrier::new(zk_kinds.len() + 1));
    let threads: Vec<JoinHandle<()>> = zk_kinds
        .iter()
        .enumerate()
        .map(|(i, &k)| {
            let (hosts, path, checker, barrier) = (hosts.clone(), path.to_owned(), checker.clone(), barrier.clone());
            std::thread::spawn(move || {
                let id = format!("zk-{}-{i}", k.arg());
                let c = connect(&hosts);
                let lock = k.zklock(&c, &path);
                let mut rng = 0x9e37_79b9_7f4a_7c15 ^ (i as u64 + 1).wrapping_mul(0x1234_5678_9abc_def1);
                barrier.wait();
                for round in 0..ROUNDS {
                    let g = lock
                        .acquire(Some(60 * SEC))
                        .unwrap_or_else(|e| panic!("{id} round {round}: acquire failed: {e}"));
                    checker.enter(k.side(), &id);
                    std::thread::sleep(jitter_ms(&mut rng, 5..=20));
                    checker.exit(k.side(), &id);
                    g.release().unwrap_or_else(|e| panic!("{id} round {round}: release failed: {e}"));
                    // Time outside the lock, so that the queue order keeps
                    // changing (a fixed rotation could keep readers apart).
                    std::thread::sleep(jitter_ms(&mut rng, 0..=15));
                }
            })
        })
        .collect();
    for p in &peers {
        p.expect("READY", 30 * SEC);
    }
    let ready = started.elapsed();
    barrier.wait();
    for p in &mut peers {
        p.send_line();
    }
    let go = Instant::now();
    for p in &mut peers {
        p.expect("DONE", 90 * SEC);
        p.expect_success(10 * SEC);
    }
    for t in threads {
        t.join().expect("a zklock contender failed");
    }
    let run = go.elapsed();
    let seen = std::mem::take(&mut *checker.seen.lock().unwrap());

    assert!(
        seen.violations.is_empty(),
        "{} violations (first 10):\n{}",
        seen.violations.len(),
        seen.violations.iter().take(10).cloned().collect::<Vec<_>>().join("\n")
    );
    assert!(seen.errors.is_empty(), "checker protocol errors: {:?}", seen.errors);
    for (i, k) in zk_kinds.iter().enumerate() {
        assert_eq!(seen.rounds.get(&format!("zk-{}-{i}", k.arg())), Some(&ROUNDS), "{:?}", seen.rounds);
    }
    for p in &peers {
        assert_eq!(seen.rounds.get(&p.id), Some(&ROUNDS), "{:?}", seen.rounds);
    }
    // Both libraries were in the queue together: the holder changed between
    // zklock and the peer library many times.
    let switches = seen.order.windows(2).filter(|w| w[0].starts_with("zk-") != w[1].starts_with("zk-")).count();
    assert!(switches >= 4, "zklock and {lib:?} hardly alternated ({switches} switches): {:?}", seen.order);
    let raw = Raw::connect(&hosts);
    let queues =
        if semaphore { vec![format!("{path}/leases"), format!("{path}/locks")] } else { vec![path.to_owned()] };
    for q in queues {
        assert!(raw.children(&q).is_empty(), "nodes left on {q}: {:?}", raw.children(&q));
    }
    eprintln!(
        "{lib:?} vs zklock on {path}: {} grants ({:?}), {switches} library switches, max {} readers at once ({} shared entries), \
         0 violations; peers ready after {ready:?}, rounds took {run:?}, total {:?}",
        seen.order.len(),
        seen.rounds_by_side,
        seen.max_readers,
        seen.shared_entries,
        started.elapsed()
    );
    seen
}

#[test]
fn curator_mutex_vs_zklock_exclusive() {
    contend(Lib::Curator, "/interop/curator-mutex", &[Kind::Mutex; 4], &[Kind::Mutex; 4]);
}

/// Readers and writers of each library: 3 + 2 on each side. With more
/// readers than writers in the queue, some readers are always queued next
/// to each other whatever the order, so sharing must show up (with as many
/// readers as writers a stable rotation can keep them apart).
const RW_MIX: [Kind; 5] = [Kind::Read, Kind::Write, Kind::Read, Kind::Write, Kind::Read];

#[test]
fn curator_rwlock_vs_zklock_rwlock() {
    let mix = RW_MIX;
    let seen = contend(Lib::Curator, "/interop/curator-rw", &mix, &mix);
    assert!(seen.max_readers >= 2, "readers never shared the lock: {:?}", seen.order);
    assert_eq!(seen.rounds_by_side.get("R"), Some(&(6 * ROUNDS)), "{:?}", seen.rounds_by_side);
}

/// Curator `LeaderLatch` participants and zklock election participants on
/// one path elect one leader at a time between them.
#[test]
fn curator_leader_latch_vs_zklock_election() {
    contend(Lib::Curator, "/interop/curator-latch", &[Kind::Latch; 4], &[Kind::Latch; 4]);
}

/// Curator's `InterProcessMultiLock` and zklock's multi-lock over the same
/// two paths exclude each other both ways (each member is an ordinary mutex
/// on its path; Curator takes them in the order given, sorted here as
/// zklock sorts them).
#[test]
fn curator_multi_lock_vs_zklock_multi_lock() {
    let zk = server();
    let hosts = zk.connect_string();
    let c = connect(&hosts);
    let path = "/interop/multi";
    let (a, b) = (format!("{path}/a"), format!("{path}/b"));
    let multi =
        c.multi_lock(&[(&b, zklock_core::LockMode::Exclusive), (&a, zklock_core::LockMode::Exclusive)]).unwrap();

    // Curator holds both: zklock's multi-lock gets neither.
    let mut peer = Peer::spawn(Lib::Curator, &hosts, path, Kind::Multi, None, 0, "holder");
    peer.expect_held(30 * SEC);
    for p in [&a, &b] {
        let seen = participants(&c, p);
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_peer_name(Lib::Curator, Kind::Multi, &seen[0].0);
    }
    assert!(multi.try_acquire().unwrap().is_none(), "zklock's multi-lock granted while Curator's holds");
    let waiting = {
        let multi = multi.clone();
        std::thread::spawn(move || multi.acquire(Some(30 * SEC)))
    };
    std::thread::sleep(STILL_WAITING);
    assert!(!waiting.is_finished(), "zklock's multi-lock granted while Curator's holds");
    peer.send_line();
    peer.expect("RELEASED", 10 * SEC);
    let g = waiting.join().unwrap().unwrap_or_else(|e| panic!("zklock's multi-lock after Curator released: {e}"));
    g.check().unwrap();
    peer.expect_success(10 * SEC);
    drop(peer);

    // zklock holds both: Curator's multi-lock waits until zklock releases.
    let mut peer = Peer::spawn(Lib::Curator, &hosts, path, Kind::Multi, None, 0, "waiter");
    peer.expect("READY", 30 * SEC);
    peer.quiet_for(STILL_WAITING, "it must wait while zklock holds both");
    g.release().unwrap();
    peer.expect("HELD", 10 * SEC);
    assert!(multi.try_acquire().unwrap().is_none(), "zklock's multi-lock granted again while Curator's holds");
    peer.send_line();
    peer.expect("RELEASED", 10 * SEC);
    peer.expect_success(10 * SEC);
}

/// Revocation both ways: Curator's `Revoker` asks a zklock holder to let
/// go (its `on_revocation` callback is told), and zklock's
/// `Client::revoke` asks a Curator holder (its `makeRevocable` listener is
/// told). Each holder keeps the lock until it releases.
#[test]
fn curator_revocation_both_ways() {
    let zk = server();
    let hosts = zk.connect_string();
    let c = connect(&hosts);
    let g = c.lock("/interop/revoke-zklock").unwrap().acquire(Some(10 * SEC)).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let _sub = g.on_revocation(move || {
        let _ = tx.send(());
    });
    let mut revoker = Peer::spawn(Lib::Curator, &hosts, &g.node_path(), Kind::Revoke, None, 0, "revoker");
    revoker.expect("REVOKED", 30 * SEC);
    revoker.expect_success(10 * SEC);
    rx.recv_timeout(10 * SEC).expect("the zklock holder was told");
    assert!(g.revocation_requested());
    g.check().expect("still held: the holder decides");
    g.release().unwrap();

    let path = "/interop/revoke-curator";
    let mut holder = Peer::spawn(Lib::Curator, &hosts, path, Kind::Revocable, None, 0, "holder");
    holder.expect_held(30 * SEC);
    let seen = participants(&c, path);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(c.revoke(&format!("{path}/{}", seen[0].0)).unwrap());
    holder.expect("REVOCATION REQUESTED", 10 * SEC);
    assert_eq!(participants(&c, path).len(), 1, "still held: the holder decides");
    holder.send_line();
    holder.expect("RELEASED", 10 * SEC);
    holder.expect_success(10 * SEC);
    assert!(!c.revoke(&format!("{path}/{}", seen[0].0)).unwrap(), "a node that is gone: false");
}

/// A shared count both libraries read: Curator's `InterProcessSemaphoreV2`
/// over a `SharedCount` and zklock's `semaphore_with_count` on one path and
/// count node. With the count at 1 and Curator holding, zklock waits; when
/// zklock sets the count to 2 (Curator's format), zklock gets in beside
/// Curator's lease.
#[test]
fn curator_shared_count_semaphore_vs_zklock() {
    let zk = server();
    let hosts = zk.connect_string();
    let c = connect(&hosts);
    let path = "/interop/shared-sem";
    let count = format!("{path}-count");
    c.set_shared_count(&count, 1).unwrap();
    let mut peer = Peer::spawn(Lib::Curator, &hosts, path, Kind::LeaseShared, None, 0, "holder");
    peer.expect_held(30 * SEC);
    let sem = c.semaphore_with_count(path, &count, zklock_core::LockOptions::default()).unwrap();
    assert!(sem.try_acquire().unwrap().is_none(), "one permit, Curator's");
    c.set_shared_count(&count, 2).unwrap();
    let g = sem.acquire(Some(10 * SEC)).unwrap();
    assert_eq!(participants(&c, &format!("{path}/leases")).len(), 2, "Curator's lease and ours");
    peer.send_line();
    peer.expect("RELEASED", 10 * SEC);
    peer.expect_success(10 * SEC);
    g.release().unwrap();
}

/// Curator's `InterProcessSemaphoreV2` and zklock's semaphore share the
/// leases of one path: never more than the permits hold at once, both
/// libraries take turns, and leases were held together.
#[test]
fn curator_semaphore_vs_zklock_semaphore() {
    let seen = contend(Lib::Curator, "/interop/curator-sem", &[Kind::Lease; 4], &[Kind::Lease; 4]);
    assert_eq!(seen.max_leases, PERMITS, "leases were never held together: {:?}", seen.order);
}

#[test]
fn kazoo_lock_vs_zklock_exclusive() {
    contend(Lib::Kazoo, "/interop/kazoo-lock", &[Kind::Mutex; 4], &[Kind::Mutex; 4]);
}

#[test]
fn kazoo_rwlock_vs_zklock_rwlock() {
    let mix = RW_MIX;
    let seen = contend(Lib::Kazoo, "/interop/kazoo-rw", &mix, &mix);
    assert!(seen.max_readers >= 2, "readers never shared the lock: {:?}", seen.order);
    assert_eq!(seen.rounds_by_side.get("R"), Some(&(6 * ROUNDS)), "{:?}", seen.rounds_by_side);
}

// ---------------------------------------------------------------------------
// Handoff: one holder at a time, both ways
// ---------------------------------------------------------------------------

/// The lock's participants as (name, kind, holds).
fn participants(c: &Client, path: &str) -> Vec<(String, NodeKind, bool)> {
    c.participants(path).unwrap().into_iter().map(|p| (p.name, p.kind, p.holds)).collect()
}

/// Asserts that `name` is the node name `lib` creates for `kind`.
fn assert_peer_name(lib: Lib, kind: Kind, name: &str) {
    let token = match (lib, kind) {
        (Lib::Curator, Kind::Mutex) => "-lock-",
        (Lib::Curator, Kind::Read) => "-__READ__",
        (Lib::Curator, Kind::Write) => "-__WRIT__",
        (Lib::Curator, Kind::Latch) => "-latch-",
        (Lib::Curator, Kind::Multi) => "-lock-",
        (Lib::Curator, Kind::Lease | Kind::LeaseShared) => "-lease-",
        (Lib::Curator, Kind::Revocable | Kind::Revoke) => "-lock-",
        (Lib::Kazoo, Kind::Latch | Kind::Multi | Kind::Lease | Kind::LeaseShared | Kind::Revocable | Kind::Revoke) => {
            unreachable!("not a kazoo peer kind")
        },
        (Lib::Kazoo, Kind::Mutex | Kind::Write) => "__lock__",
        (Lib::Kazoo, Kind::Read) => "__rlock__",
    };
    let head = &name[..name.len().saturating_sub(10)];
    let ok = match lib {
        Lib::Curator => head.starts_with("_c_") && head.len() == 3 + 36 + token.len() && head.ends_with(token),
        Lib::Kazoo => head.len() == 32 + token.len() && head.ends_with(token),
    };
    assert!(ok, "{lib:?} {kind:?} node has an unexpected name: {name}");
}

/// A peer of `lib` holds a `peer_kind` lock: a zklock `zk_kind` acquire
/// waits for it (not granted while the peer holds) and gets the lock when
/// the peer releases. Then zklock holds and a peer waits until zklock
/// releases. Checks the names and kinds zklock sees, and that zklock's
/// fencing token is above the peer node's creation zxid.
fn handoff(lib: Lib, path: &str, peer_kind: Kind, zk_kind: Kind) {
    let zk = server();
    let hosts = zk.connect_string();
    let c = connect(&hosts);
    let raw = Raw::connect(&hosts);

    // The peer holds; zklock waits.
    let mut peer = Peer::spawn(lib, &hosts, path, peer_kind, None, 0, "holder");
    peer.expect_held(30 * SEC);
    let seen = participants(&c, path);
    assert_eq!(seen.len(), 1, "{seen:?}");
    let (peer_node, peer_node_kind, holds) = seen[0].clone();
    assert_peer_name(lib, peer_kind, &peer_node);
    let expected = if peer_kind == Kind::Read { NodeKind::Reader } else { NodeKind::Writer };
    assert_eq!((peer_node_kind, holds), (expected, true), "{seen:?}");
    let peer_czxid = raw.exists(&format!("{path}/{peer_node}")).expect("peer node exists").czxid;
    if peer_kind == Kind::Latch {
        // zklock names Curator's leader by the id the latch stores.
        let leader = c.leader(path).unwrap().expect("Curator's latch leads");
        assert_eq!((leader.name.as_str(), leader.data.as_slice()), (peer_node.as_str(), &b"holder"[..]));
    }

    let lock = Arc::new(zk_kind.zklock(&c, path));
    assert!(lock.try_acquire().unwrap().is_none(), "zklock {zk_kind:?} granted while {lib:?} {peer_kind:?} holds");
    let waiting = lock.clone();
    let waiter = std::thread::spawn(move || waiting.acquire(Some(30 * SEC)));
    wait_until("zklock queued", 5 * SEC, || queue(&c, path).len() == 2);
    std::thread::sleep(STILL_WAITING);
    assert!(!waiter.is_finished(), "zklock {zk_kind:?} granted while {lib:?} {peer_kind:?} holds");
    let released_at = Instant::now();
    peer.send_line();
    peer.expect("RELEASED", 10 * SEC);
    let g = waiter.join().unwrap().unwrap_or_else(|e| panic!("zklock acquire after {lib:?} released: {e}"));
    let handoff_in = released_at.elapsed();
    g.check().unwrap();
    assert!(g.fencing_token() > peer_czxid as u64, "token {} <= peer czxid {peer_czxid}", g.fencing_token());
    peer.expect_success(10 * SEC);
    drop(peer);

    // zklock holds; the peer waits.
    let mut peer = Peer::spawn(lib, &hosts, path, peer_kind, None, 0, "waiter");
    peer.expect("READY", 30 * SEC);
    wait_until("peer queued", 10 * SEC, || queue(&c, path).len() == 2);
    peer.quiet_for(STILL_WAITING, "it must wait while zklock holds");
    let seen = participants(&c, path);
    assert_eq!(seen.iter().filter(|p| p.2).count(), 1, "only zklock holds: {seen:?}");
    assert!(seen[0].0.starts_with("_c_") && seen[0].2, "{seen:?}");
    assert_peer_name(lib, peer_kind, &seen[1].0);
    let released_at = Instant::now();
    g.release().unwrap();
    peer.expect("HELD", 10 * SEC);
    let reverse_in = released_at.elapsed();
    assert!(lock.try_acquire().unwrap().is_none(), "zklock granted again while {lib:?} holds");
    peer.send_line();
    peer.expect("RELEASED", 10 * SEC);
    peer.expect_success(10 * SEC);
    wait_until("queue empty", 5 * SEC, || queue(&c, path).is_empty());
    eprintln!(
        "handoff {lib:?} {peer_kind:?} -> zklock {zk_kind:?} in {handoff_in:?}, zklock -> {lib:?} in {reverse_in:?}"
    );
}

/// A peer's read lock and zklock's read lock share across libraries: each
/// is granted at once while the other holds, and a zklock writer waits for
/// the peer's reader; a peer writer waits for zklock's reader.
fn readers_share(lib: Lib, path: &str) {
    let zk = server();
    let hosts = zk.connect_string();
    let c = connect(&hosts);
    let mut peer = Peer::spawn(lib, &hosts, path, Kind::Read, None, 0, "reader");
    peer.expect_held(30 * SEC);
    let r = c.read_lock(path).unwrap().try_acquire().unwrap().expect("zklock reader shares with the peer's reader");
    let other = connect(&hosts);
    let w = other.write_lock(path).unwrap();
    assert!(w.try_acquire().unwrap().is_none(), "zklock writer granted while readers hold");
    // zklock's reader holds, the peer's reader too: a peer writer waits.
    let mut writer = Peer::spawn(lib, &hosts, path, Kind::Write, None, 0, "writer");
    writer.expect("READY", 30 * SEC);
    wait_until("peer writer queued", 10 * SEC, || queue(&c, path).len() == 3);
    peer.send_line();
    peer.expect("RELEASED", 10 * SEC);
    writer.quiet_for(STILL_WAITING, "it must wait for zklock's reader");
    r.release().unwrap();
    writer.expect("HELD", 10 * SEC);
    assert!(c.read_lock(path).unwrap().try_acquire().unwrap().is_none(), "zklock reader granted while a writer holds");
    writer.send_line();
    writer.expect("RELEASED", 10 * SEC);
    peer.expect_success(10 * SEC);
    writer.expect_success(10 * SEC);
}

#[test]
fn curator_handoff_both_ways() {
    handoff(Lib::Curator, "/interop/handoff/mutex", Kind::Mutex, Kind::Mutex);
    handoff(Lib::Curator, "/interop/handoff/rw", Kind::Write, Kind::Read);
    handoff(Lib::Curator, "/interop/handoff/latch", Kind::Latch, Kind::Latch);
    readers_share(Lib::Curator, "/interop/share");
}

#[test]
fn kazoo_handoff_both_ways() {
    handoff(Lib::Kazoo, "/interop/handoff/mutex", Kind::Mutex, Kind::Mutex);
    handoff(Lib::Kazoo, "/interop/handoff/rw", Kind::Write, Kind::Read);
    readers_share(Lib::Kazoo, "/interop/share");
}

// ---------------------------------------------------------------------------
// Foreign children: real holders, a recipe node, unsequenced children
// ---------------------------------------------------------------------------

/// zklock queues behind a real Curator holder, a real kazoo waiter, a
/// ZooKeeper-recipe `x-<sid>-` node and two unsequenced children, classifies
/// each correctly, and is granted exactly when the last sequenced node ahead
/// of it goes; the unsequenced children never block and never cause errors.
#[test]
fn foreign_children_with_real_curator_and_kazoo_holders() {
    let path = "/interop/foreign";
    let zk = server();
    let hosts = zk.connect_string();
    let c = connect(&hosts);
    let raw = Raw::connect(&hosts);
    raw.mkdir(path);
    raw.create(&format!("{path}/config"), zk::CreateMode::Persistent);
    raw.create(&format!("{path}/notes"), zk::CreateMode::Ephemeral);

    // Curator holds first (the unsequenced children do not bother it) ...
    let mut curator = Peer::spawn(Lib::Curator, &hosts, path, Kind::Mutex, None, 0, "curator");
    curator.expect_held(30 * SEC);
    // ... kazoo (seeing "-lock-") waits for it ...
    let mut kazoo = Peer::spawn(Lib::Kazoo, &hosts, path, Kind::Mutex, None, 0, "kazoo");
    kazoo.expect("READY", 30 * SEC);
    wait_until("kazoo queued", 10 * SEC, || queue(&c, path).len() == 2);
    kazoo.quiet_for(STILL_WAITING, "kazoo must wait for Curator's -lock- node");
    // ... then a ZooKeeper-recipe node, then zklock.
    let recipe = raw.create(&format!("{path}/x-{}-", raw.session_id()), zk::CreateMode::EphemeralSequential);
    let lock = Arc::new(c.lock(path).unwrap());
    assert!(lock.try_acquire().unwrap().is_none());
    let waiting = lock.clone();
    let waiter = std::thread::spawn(move || waiting.acquire(Some(30 * SEC)));
    wait_until("zklock queued", 5 * SEC, || queue(&c, path).len() == 4);
    let seen = participants(&c, path);
    assert_peer_name(Lib::Curator, Kind::Mutex, &seen[0].0);
    assert_peer_name(Lib::Kazoo, Kind::Mutex, &seen[1].0);
    assert_eq!(seen[2].0, recipe);
    assert!(seen[3].0.starts_with("_c_") && seen[3].0.contains("-lock-"), "{seen:?}");
    let kinds: Vec<(NodeKind, bool)> = seen.iter().map(|p| (p.1, p.2)).collect();
    assert_eq!(
        kinds,
        [(NodeKind::Writer, true), (NodeKind::Writer, false), (NodeKind::Writer, false), (NodeKind::Writer, false)]
    );

    // Curator releases: kazoo gets it, zklock still waits.
    curator.send_line();
    curator.expect("RELEASED", 10 * SEC);
    kazoo.expect("HELD", 10 * SEC);
    std::thread::sleep(STILL_WAITING);
    assert!(!waiter.is_finished(), "zklock granted while kazoo holds");
    // kazoo releases: the recipe node still blocks zklock.
    kazoo.send_line();
    kazoo.expect("RELEASED", 10 * SEC);
    std::thread::sleep(STILL_WAITING);
    assert!(!waiter.is_finished(), "zklock granted while the recipe node is ahead");
    raw.delete(&format!("{path}/{recipe}"));
    let g = waiter.join().unwrap().expect("zklock granted once only unsequenced children remain");
    g.check().unwrap();
    let mut left = raw.children(path);
    left.sort();
    assert_eq!(left.len(), 3, "{left:?}");
    g.release().unwrap();
    let mut left = raw.children(path);
    left.sort();
    assert_eq!(left, ["config", "notes"]);
    curator.expect_success(10 * SEC);
    kazoo.expect_success(10 * SEC);
}

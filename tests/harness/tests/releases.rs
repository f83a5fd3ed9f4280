//! Every ZooKeeper release the harness can run (`ServerRelease`) starts
//! standalone and as a 3-member ensemble, reports its own version, serves
//! TLS on its secure port, lets a SASL user in, and survives the fault
//! controls. A release that is not installed fails its tests, or is skipped
//! with the reason when `ZKLOCK_ZK_JARS_OPTIONAL=1`
//! (`ServerRelease::installed_or_skip`).

mod common;

use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use zklock_harness::{
    ensure_zookeeper, java_command, wait_for, Cluster, ClusterOptions, ServerRelease, SLF4J_SIMPLE_JAR, ZOOKEEPER_JAR,
};

/// ZooKeeper's `NoAuth` error code.
const ZNOAUTH: i32 = -102;
/// ZooKeeper's `Unimplemented` error code.
const ZUNIMPLEMENTED: i32 = -6;

/// The version in a `srvr` answer (`Zookeeper version: 3.5.10-<hash>, built
/// on ...`).
fn srvr_version(srvr: &str) -> Option<&str> {
    srvr.lines().find_map(|l| l.strip_prefix("Zookeeper version: "))
}

fn assert_reports(release: ServerRelease, srvr: &str) {
    let version = srvr_version(srvr).unwrap_or_else(|| panic!("{release}: no version in srvr: {srvr}"));
    assert!(
        version.starts_with(release.version_prefix()),
        "{release}: srvr reports version {version:?}, not {}",
        release.version_prefix()
    );
}

/// Sends `srvr` over TLS to `addr` with `openssl s_client`, trusting only
/// `ca`; its answer, or an error if the handshake (or the server's
/// certificate check) failed.
fn tls_srvr(addr: SocketAddr, ca: &Path) -> io::Result<String> {
    let mut child = Command::new("timeout")
        .arg("20")
        .args(["openssl", "s_client", "-quiet", "-verify_return_error", "-connect"])
        .arg(addr.to_string())
        .arg("-CAfile")
        .arg(ca)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // `-quiet` keeps the connection after stdin's end, until the server
    // closes it (right after its answer).
    child.stdin.take().expect("piped stdin").write_all(b"srvr")?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "openssl s_client to {addr} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn secure_addrs(c: &Cluster) -> Vec<SocketAddr> {
    c.secure_connect_string().split(',').map(|a| a.parse().expect("a secure address")).collect()
}

/// Every member answers `srvr` over TLS with the release's version when the
/// client trusts the cluster's CA, and the handshake fails when it trusts
/// another CA.
fn check_tls(release: ServerRelease, c: &Cluster) {
    let certs = c.tls_certs().expect("a TLS cluster");
    let addrs = secure_addrs(c);
    assert_eq!(addrs.len(), c.len());
    for (i, addr) in addrs.into_iter().enumerate() {
        assert_ne!(addr, c.client_addr(i));
        // Loopback only (127.0.0.1, or ::ffff:127.0.0.1 on a dual-stack
        // socket), like the plain client port.
        let listening = listen_addresses(addr.port());
        assert!(
            !listening.is_empty()
                && listening.iter().all(|a| a == "0100007F" || a == "0000000000000000FFFF00000100007F"),
            "{release}: member {i}'s secure port listens on {listening:?}, not on 127.0.0.1 alone"
        );
        let answer = tls_srvr(addr, &certs.ca()).unwrap_or_else(|e| panic!("{release}: member {i}: {e}"));
        assert_reports(release, &answer);
        tls_srvr(addr, &certs.other_ca()).expect_err("a server whose CA the client does not trust");
    }
}

/// Logs in as `user` with SASL DIGEST-MD5 (Debian's ZooKeeper command-line
/// client, with a JAAS `Client` section), creates `/sasl` readable by that
/// user alone and reads it back; then a session without a login is refused
/// the node's children (`NoAuth`).
fn check_sasl(release: ServerRelease, c: &Cluster, user: &str, password: &str) {
    ensure_zookeeper().expect("Debian's ZooKeeper client");
    let jaas = c.dir().join("client-jaas.conf");
    std::fs::write(
        &jaas,
        format!(
            "Client {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required \
             username={user:?} password={password:?};\n}};\n"
        ),
    )
    .expect("write the client's JAAS file");
    let mut child = Command::new("timeout")
        .arg("60")
        .arg(java_command())
        .arg(format!("-Djava.security.auth.login.config={}", jaas.display()))
        .args(["-Xmx128m", "-XX:TieredStopAtLevel=1", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"])
        .arg("-cp")
        .arg(format!("{ZOOKEEPER_JAR}:{SLF4J_SIMPLE_JAR}"))
        .args(["org.apache.zookeeper.ZooKeeperMain", "-server"])
        .arg(c.client_addr(0).to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the ZooKeeper client");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(format!("create /sasl secret-data sasl:{user}:cdrwa\nget /sasl\nquit\n").as_bytes())
        .expect("commands");
    let out = child.wait_with_output().expect("the ZooKeeper client");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("state:SaslAuthenticated"), "{release}: no SASL login: {text}");
    assert!(text.contains("Created /sasl"), "{release}: create: {text}");
    assert!(text.lines().any(|l| l.trim() == "secret-data"), "{release}: get: {text}");

    let (mut s, _) = common::session(c.client_addr(0), Duration::from_secs(5)).expect("session");
    let (_, _, err) = common::call(&mut s, &common::get_children_request(5, "/sasl")).expect("getChildren");
    assert_eq!(err, ZNOAUTH, "{release}: /sasl is readable without the login");
    // A difference between releases that clients see: from 3.9.2 (and
    // 3.8.4) on, exists() needs READ too (ZOOKEEPER-2590); before, it
    // answers anyone.
    let (_, _, err) = common::call(&mut s, &common::exists_request(6, "/sasl")).expect("exists");
    let exists_needs_read = srvr_version(&c.four_letter(0, "srvr").expect("srvr"))
        .map(version_triple)
        .is_some_and(|v| ((3, 8, 4)..(3, 9, 0)).contains(&v) || v >= (3, 9, 2));
    assert_eq!(err, if exists_needs_read { ZNOAUTH } else { 0 }, "{release}: exists of a node it cannot read");
}

/// (major, minor, patch) of a `srvr` version such as `3.8.0-1, built on ...`.
fn version_triple(version: &str) -> (u32, u32, u32) {
    let numbers: Vec<u32> = version
        .split(|c: char| !c.is_ascii_digit())
        .take(3)
        .map(|n| n.parse().unwrap_or_else(|_| panic!("a version number in {version:?}")))
        .collect();
    (numbers[0], numbers[1], numbers[2])
}

/// The local addresses (as /proc/net/tcp{,6} spell them in hex) of the
/// sockets that listen on TCP `port`.
fn listen_addresses(port: u16) -> Vec<String> {
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st ...; st 0A is LISTEN.
            let (Some(local), Some("0A")) = (fields.get(1), fields.get(3).copied()) else { continue };
            if let Some((addr, p)) = local.split_once(':') {
                if u16::from_str_radix(p, 16) == Ok(port) {
                    found.push(addr.to_string());
                }
            }
        }
    }
    found
}

/// whoAmI (opcode 107) is answered from 3.7.0 on (ZOOKEEPER-3969); an
/// older server answers `Unimplemented` (-6).
fn check_whoami(release: ServerRelease, c: &Cluster) {
    let version = version_triple(srvr_version(&c.four_letter(0, "srvr").expect("srvr")).expect("a version"));
    let (mut s, _) = common::session(c.client_addr(0), Duration::from_secs(5)).expect("session");
    let mut request = 4_i32.to_be_bytes().to_vec();
    request.extend_from_slice(&107_i32.to_be_bytes());
    let (xid, _, err) =
        common::call(&mut s, &common::frame(&request)).unwrap_or_else(|e| panic!("{release}: whoami: {e}"));
    let expected = if version >= (3, 7, 0) { 0 } else { ZUNIMPLEMENTED };
    assert_eq!((xid, err), (4, expected), "{release}: whoami");
}

/// The names of the children of `/` (world-readable), over a fresh session.
fn root_children(addr: SocketAddr) -> Vec<String> {
    let (mut s, _) = common::session(addr, Duration::from_secs(5)).expect("session");
    s.write_all(&common::get_children_request(3, "/")).expect("getChildren");
    let body = common::read_frame(&mut s).expect("getChildren reply");
    assert_eq!(common::reply_header(&body).2, 0, "getChildren /");
    common::children(&body)
}

/// Standalone, with TLS and a SASL user: the version, TLS, SASL, then a
/// restart that keeps the data.
fn standalone(release: ServerRelease) {
    if !release.installed_or_skip() {
        return;
    }
    let c = Cluster::start(ClusterOptions::new().release(release).tls(true).sasl_user("alice", "pw-alice"))
        .unwrap_or_else(|e| panic!("{release}: start: {e}"));
    assert_eq!(c.options().get_release(), release);
    let srvr = c.four_letter(0, "srvr").expect("srvr");
    assert_reports(release, &srvr);
    assert_eq!(c.mode(0).expect("mode"), "standalone");
    assert_eq!(c.four_letter(0, "ruok").expect("ruok"), "imok");
    // The harness whitelists every four-letter word on every release.
    for word in ["stat", "mntr", "cons", "dump", "wchc", "wchp", "wchs", "conf", "envi", "isro"] {
        let answer = c.four_letter(0, word).unwrap_or_else(|e| panic!("{release}: {word}: {e}"));
        assert!(!answer.is_empty() && !answer.contains("whitelist"), "{release}: {word}: {answer}");
    }
    check_whoami(release, &c);
    check_tls(release, &c);
    check_sasl(release, &c, "alice", "pw-alice");

    c.restart(0).unwrap_or_else(|e| panic!("{release}: restart: {e}"));
    let children = root_children(c.client_addr(0));
    assert!(children.iter().any(|n| n == "sasl"), "{release}: /sasl lost across a restart: {children:?}");
}

/// A partitionable 3-member ensemble with TLS and a SASL user: every
/// member's version and secure port, the SASL login, a partition of a follower and its end, the leader killed
/// (a new one is elected) and restarted (it rejoins with the data).
fn ensemble(release: ServerRelease) {
    if !release.installed_or_skip() {
        return;
    }
    let opts = ClusterOptions::new().release(release).size(3).partitionable(true).tls(true).sasl_user("bob", "pw-bob");
    let c = Cluster::start(opts).unwrap_or_else(|e| panic!("{release}: start: {e}"));
    for i in 0..3 {
        assert_reports(release, &c.four_letter(i, "srvr").expect("srvr"));
    }
    let modes: Vec<String> = (0..3).map(|i| c.mode(i).expect("mode")).collect();
    assert_eq!(modes.iter().filter(|m| *m == "leader").count(), 1, "{release}: {modes:?}");
    assert_eq!(modes.iter().filter(|m| *m == "follower").count(), 2, "{release}: {modes:?}");
    check_tls(release, &c);
    check_sasl(release, &c, "bob", "pw-bob");

    let leader = c.leader().expect("a leader");
    let follower = (0..3).find(|&i| i != leader).expect("a follower");
    let (mut s, _) = common::session(c.client_addr(follower), Duration::from_secs(5)).expect("session");
    let (_, _, err) = common::call(&mut s, &common::create_request(1, "/ensemble")).expect("create");
    assert_eq!(err, 0, "{release}: create");
    drop(s);

    // Cut off from the others, the follower stops serving; healed, it
    // rejoins.
    c.partition(follower).expect("partition");
    assert!(
        wait_for(Duration::from_secs(20), || c.mode(follower).is_err()),
        "{release}: member {follower} still serves while partitioned"
    );
    c.heal_partition(follower).expect("heal");
    c.wait_serving(follower, Duration::from_secs(60)).unwrap_or_else(|e| panic!("{release}: rejoin: {e}"));

    let old_leader = c.leader().expect("a leader");
    c.kill(old_leader).expect("kill the leader");
    let new_leader = c.wait_quorum(Duration::from_secs(30)).unwrap_or_else(|e| panic!("{release}: {e}"));
    assert_ne!(new_leader, old_leader);
    c.restart(old_leader).unwrap_or_else(|e| panic!("{release}: restart: {e}"));
    assert_eq!(common::exists(c.client_addr(old_leader), "/ensemble"), 0, "{release}: /ensemble lost");
}

// One module per release (e.g. `v3_5_10::ensemble`), so that one release
// can be run alone.
zklock_harness::release_tests!();

/// The list of releases names every release, and one that is missing says
/// why (a root without any release installed).
#[test]
fn availability_says_why_a_release_is_missing() {
    let all: Vec<ServerRelease> = ServerRelease::availability().into_iter().map(|(r, _)| r).collect();
    assert_eq!(all, ServerRelease::ALL);
    for r in ServerRelease::available() {
        r.check().expect("an available release passes its check");
    }
    let empty = std::env::temp_dir().join(format!("zklock-no-releases-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_zkharness"))
        .arg("releases")
        .env("ZKLOCK_ZK_JARS_DIR", &empty)
        .output()
        .expect("zkharness releases");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for r in ServerRelease::ALL.into_iter().filter(|r| r.is_maven()) {
        let line = text.lines().find(|l| l.contains(&format!("\"release\":\"{r}\""))).expect("a line per release");
        assert!(line.contains("\"available\":false") && line.contains("install-zk-jars.sh"), "{line}");
    }
    let started = Command::new(env!("CARGO_BIN_EXE_zkharness"))
        .args(["serve", "--release", "3.7.2"])
        .env("ZKLOCK_ZK_JARS_DIR", &empty)
        .stdin(Stdio::null())
        .output()
        .expect("zkharness serve");
    assert!(!started.status.success());
    let hello = String::from_utf8_lossy(&started.stdout);
    assert!(hello.contains("\"ok\":false") && hello.contains("3.7.2 is not installed"), "{hello}");
}

/// A release whose server dies in its main thread while its other threads
/// keep the JVM up (3.6.4 without snappy-java: its first snapshot fails)
/// fails the start with the log's exception, not "not serving" after the
/// start timeout (60 s here), with either connection factory.
#[test]
fn a_server_whose_main_thread_died_fails_the_start() {
    let release = ServerRelease::V3_6_4;
    if !release.installed_or_skip() {
        return;
    }
    let jars = release.jar_dir().expect("a Maven release");
    let root = std::env::temp_dir().join(format!("zklock-broken-release-{}", std::process::id()));
    let broken = root.join(release.name());
    std::fs::create_dir_all(&broken).expect("mkdir");
    for jar in std::fs::read_dir(&jars).expect("the release's jars").flatten() {
        let name = jar.file_name();
        if !name.to_string_lossy().starts_with("snappy-java") {
            std::os::unix::fs::symlink(jar.path(), broken.join(&name)).expect("symlink");
        }
    }
    // With TLS the server runs Netty (the JVM reports the death), without
    // it NIO (whose handler logs it).
    for tls in [true, false] {
        let out = Command::new(env!("CARGO_BIN_EXE_zkharness"))
            .args(["serve", "--release", release.name(), "--start-timeout-ms", "60000"])
            .args(tls.then_some("--tls"))
            .env("ZKLOCK_ZK_JARS_DIR", &root)
            .stdin(Stdio::null())
            .output()
            .expect("zkharness serve");
        assert!(!out.status.success());
        let hello = String::from_utf8_lossy(&out.stdout);
        assert!(hello.contains("main thread died") && hello.contains("SnappyInputStream"), "tls {tls}: {hello}");
    }
    std::fs::remove_dir_all(&root).expect("cleanup");
}

//! The CLI's connection options against a real ZooKeeper with a TLS port
//! and a SASL user: `--tls-ca/--tls-cert/--tls-key`, `--digest-user` and
//! `--sasl-user` (passwords from the environment only), `--acl`; a wrong
//! CA is 69 saying why, a refusal for lack of permission 77, bad option
//! combinations 64 before connecting.

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use common::{spawn, Dir, Raw, SEC};
use zklock_harness::{Cluster, ClusterOptions};

fn tls_server() -> Cluster {
    zklock_harness::ensure_zookeeper().unwrap();
    Cluster::start(ClusterOptions::new().tls(true).sasl_user("alice", "pw-alice")).unwrap()
}

#[test]
fn tls_options_lock_through_the_tls_port_and_a_wrong_ca_says_why() {
    let zk = tls_server();
    let certs = zk.tls_certs().unwrap();
    let secure = zk.secure_connect_string();
    let d = Dir::new("cli-tls");
    let (ca, other) = (certs.ca().display().to_string(), certs.other_ca().display().to_string());
    let (cert, key) = certs.client();
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let o = spawn(
        &d,
        "ok",
        &[
            "run",
            "--hosts",
            &secure,
            "--tls-ca",
            &ca,
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
            "/cli/tls",
            "--",
            "sh",
            "-c",
            "echo $ZKLOCK_FENCING_TOKEN",
        ],
        &[],
    )
    .wait(30 * SEC);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.stdout.trim().parse::<u64>().is_ok(), "{o:?}");
    // The same through the environment.
    let o = spawn(&d, "env", &["list", "--hosts", &secure, "/cli/tls"], &[("ZKLOCK_TLS_CA", &ca)]).wait(30 * SEC);
    assert_eq!(o.code, 0, "{o:?}");
    let o = spawn(
        &d,
        "other",
        &["run", "--hosts", &secure, "--tls-ca", &other, "--connect-timeout", "8s", "/cli/tls", "--", "true"],
        &[],
    )
    .wait(30 * SEC);
    assert_eq!(o.code, 69, "{o:?}");
    assert!(o.stderr.contains("UnknownIssuer"), "{o:?}");
    // In words, not rustls's Debug forms (issue 30).
    assert!(o.stderr.contains("not signed by a certificate authority in the TLS CA file"), "{o:?}");
    let port = secure.rsplit_once(':').unwrap().1;
    let localhost = format!("localhost:{port}");
    let o = spawn(&d, "name", &["run", "--hosts", &localhost, "--tls-ca", &ca, "/cli/tls", "--", "true"], &[])
        .wait(30 * SEC);
    assert_eq!(o.code, 69, "{o:?}");
    assert!(
        o.stderr.contains("the server's certificate is not valid for localhost (it names only 127.0.0.1)"),
        "{o:?}"
    );
    for debug in ["IpAddress(", "DnsName(", "InvalidCertificate(", "NotValidForName", "invalid peer certificate"] {
        assert!(!o.stderr.contains(debug), "{debug:?} is Rust's Debug text, not words: {o:?}");
    }
    let o = spawn(&d, "cert-only", &["run", "--hosts", &secure, "--tls-cert", &cert, "/cli/tls", "--", "true"], &[])
        .wait(30 * SEC);
    assert_eq!(o.code, 64, "{o:?}");
    assert!(o.stderr.contains("needs its key"), "{o:?}");
}

#[test]
fn acl_and_credentials_options() {
    let zk = tls_server();
    let hosts = zk.connect_string();
    let d = Dir::new("cli-acl");
    let alice = [("ZKLOCK_SASL_PASSWORD", "pw-alice")];
    // alice holds /cli/acl under a creator ACL for a while.
    let holder = spawn(
        &d,
        "holder",
        &["run", "--hosts", &hosts, "--sasl-user", "alice", "--acl", "creator", "/cli/acl", "--", "sleep", "3"],
        &alice,
    );
    std::thread::sleep(SEC);
    // No identity: refused for lack of permission, at once.
    let o = spawn(&d, "nobody", &["run", "--hosts", &hosts, "-w", "10s", "/cli/acl", "--", "true"], &[]).wait(30 * SEC);
    assert_eq!(o.code, 77, "{o:?}");
    assert!(o.stderr.contains("NoAuth"), "{o:?}");
    // A digest identity that is not alice: the same.
    let o = spawn(
        &d,
        "bob",
        &["run", "--hosts", &hosts, "--digest-user", "bob", "/cli/acl", "--", "true"],
        &[("ZKLOCK_DIGEST_PASSWORD", "pw")],
    )
    .wait(30 * SEC);
    assert_eq!(o.code, 77, "{o:?}");
    assert_eq!(holder.wait(30 * SEC).code, 0);
    // A user without its password, a malformed ACL: 64 before connecting.
    let o = spawn(&d, "nopw", &["run", "--hosts", &hosts, "--sasl-user", "alice", "/cli/acl", "--", "true"], &[])
        .wait(30 * SEC);
    assert_eq!(o.code, 64, "{o:?}");
    assert!(o.stderr.contains("ZKLOCK_SASL_PASSWORD"), "{o:?}");
    let o = spawn(&d, "badacl", &["run", "--hosts", &hosts, "--acl", "world:anyone:rx", "/cli/acl", "--", "true"], &[])
        .wait(30 * SEC);
    assert_eq!(o.code, 64, "{o:?}");
    assert!(o.stderr.contains("unknown permission"), "{o:?}");
    // An ACL that lets no one create: refused before connecting, rather than
    // put on a lock path that would stay, shutting everyone out (found by
    // an outside test). An empty variable counts as unset.
    let o =
        spawn(&d, "readonly", &["run", "--hosts", &hosts, "--acl", "world:anyone:r", "/cli-acl-ro", "--", "true"], &[])
            .wait(30 * SEC);
    assert_eq!(o.code, 64, "{o:?}");
    assert!(o.stderr.contains("no one could take the lock"), "{o:?}");
    assert!(Raw::connect(&hosts).exists("/cli-acl-ro").is_none(), "nothing was created");
    let o = spawn(&d, "emptyacl", &["run", "--hosts", &hosts, "/cli-acl-ro", "--", "true"], &[("ZKLOCK_ACL", "")])
        .wait(30 * SEC);
    assert_eq!(o.code, 0, "{o:?}");
    // A password without its user option: said, not silently ignored.
    let o =
        spawn(&d, "pwonly", &["run", "--hosts", &hosts, "/cli-acl-pw", "--", "true"], &[("ZKLOCK_SASL_PASSWORD", "x")])
            .wait(30 * SEC);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.stderr.contains("ZKLOCK_SASL_PASSWORD is set, but no --sasl-user"), "{o:?}");
    // A wrong SASL password: 77.
    let o = spawn(
        &d,
        "wrongpw",
        &["run", "--hosts", &hosts, "--sasl-user", "alice", "/cli/acl", "--", "true"],
        &[("ZKLOCK_SASL_PASSWORD", "wrong")],
    )
    .wait(30 * SEC);
    assert_eq!(o.code, 77, "{o:?}");
    // `list` creates nothing: an ACL that `run` would refuse at connect
    // (it names bob's hash of another password) does not stop it.
    let acl = "digest:bob:aJ/Pdx7TadRgI84JsdYLXEn9EPw=:cdrwa";
    let o = spawn(
        &d,
        "list-acl",
        &["list", "--hosts", &hosts, "--digest-user", "bob", "--acl", acl, "/cli-acl-pw"],
        &[("ZKLOCK_DIGEST_PASSWORD", "pw-bob")],
    )
    .wait(30 * SEC);
    assert_eq!(o.code, 0, "{o:?}");
    let o = spawn(
        &d,
        "run-acl",
        &["run", "--hosts", &hosts, "--digest-user", "bob", "--acl", acl, "/cli-acl-pw2", "--", "true"],
        &[("ZKLOCK_DIGEST_PASSWORD", "pw-bob")],
    )
    .wait(30 * SEC);
    assert_eq!(o.code, 77, "{o:?}");
    assert!(o.stderr.contains("names another password"), "{o:?}");
}

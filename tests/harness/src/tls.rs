//! Certificates made for a test run (with the `openssl` command), for
//! servers started with [`crate::ClusterOptions::tls`].

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::install::annotate;

/// The PEM files of one TLS cluster, all in one directory:
///
/// * `ca.pem`: the certificate authority that signed the server's and the
///   client's certificates (what a client should trust);
/// * `server.pem`: the server's key and certificate (its subject
///   alternative name is the IP address `127.0.0.1` only, so a client that
///   names the server `localhost` must refuse it);
/// * `client.pem` / `client-key.pem`: a client certificate (CN `zklock-test-client`)
///   and its key, signed by the CA;
/// * `other-ca.pem`: a second authority that signed nothing the servers show
///   (a client that trusts only it must refuse the server);
/// * `other-client.pem` / `other-client-key.pem`: a client certificate
///   signed by the other authority (a server that needs a client
///   certificate must refuse it).
#[derive(Clone, Debug)]
pub struct TestCerts {
    dir: PathBuf,
}

impl TestCerts {
    /// Makes the files in `dir` (created if missing). Keys are RSA 2048
    /// (what ZooKeeper's PEM key store reads), PKCS#8.
    ///
    /// # Errors
    /// `openssl` missing or failing (its stderr quoted), or I/O errors.
    pub fn make(dir: &Path) -> io::Result<TestCerts> {
        fs::create_dir_all(dir).map_err(|e| annotate(e, &format!("cannot create {}", dir.display())))?;
        let certs = TestCerts { dir: dir.to_owned() };
        certs.authority("ca", "zklock test CA")?;
        certs.authority("other-ca", "zklock other test CA")?;
        certs.leaf("server", "ca", "zklock-test-server", "serverAuth")?;
        certs.leaf("client", "ca", "zklock-test-client", "clientAuth")?;
        certs.leaf("other-client", "other-ca", "zklock-other-client", "clientAuth")?;
        // ZooKeeper's PEM key store: the key and the certificate in one file.
        let server = [fs::read_to_string(certs.file("server-key.pem"))?, fs::read_to_string(certs.file("server.pem"))?];
        fs::write(certs.file("server-keystore.pem"), server.concat())?;
        Ok(certs)
    }

    /// The directory of the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of one of the files (see the type's documentation).
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The CA the servers' certificates are signed by.
    pub fn ca(&self) -> PathBuf {
        self.file("ca.pem")
    }

    /// A CA that signed nothing the servers show.
    pub fn other_ca(&self) -> PathBuf {
        self.file("other-ca.pem")
    }

    /// The client certificate signed by [`TestCerts::ca`] and its key.
    pub fn client(&self) -> (PathBuf, PathBuf) {
        (self.file("client.pem"), self.file("client-key.pem"))
    }

    /// A client certificate signed by [`TestCerts::other_ca`] and its key.
    pub fn other_client(&self) -> (PathBuf, PathBuf) {
        (self.file("other-client.pem"), self.file("other-client-key.pem"))
    }

    /// The `zoo.cfg` lines that make a server serve TLS on
    /// `127.0.0.1:port` with these certificates, asking clients for a
    /// certificate (`want`).
    pub(crate) fn server_config(&self, port: u16) -> Vec<String> {
        vec![
            format!("secureClientPort={port}"),
            // Loopback only, like the plain client port (without it the
            // secure port listens on every interface).
            "secureClientPortAddress=127.0.0.1".into(),
            "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory".into(),
            format!("ssl.keyStore.location={}", self.file("server-keystore.pem").display()),
            "ssl.keyStore.type=PEM".into(),
            format!("ssl.trustStore.location={}", self.ca().display()),
            "ssl.trustStore.type=PEM".into(),
            "ssl.clientAuth=want".into(),
            // The server checks a client certificate against the CA, not
            // against the client's address.
            "ssl.clientHostnameVerification=false".into(),
            "authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider".into(),
        ]
    }

    fn authority(&self, name: &str, cn: &str) -> io::Result<()> {
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN={cn}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout",
            &self.path(&format!("{name}-key.pem")),
            "-out",
            &self.path(&format!("{name}.pem")),
        ])
    }

    fn leaf(&self, name: &str, ca: &str, cn: &str, usage: &str) -> io::Result<()> {
        let ext = self.file(&format!("{name}.ext"));
        fs::write(
            &ext,
            format!(
                "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n\
                 extendedKeyUsage={usage}\nsubjectAltName=IP:127.0.0.1\n"
            ),
        )?;
        let (key, csr) = (self.path(&format!("{name}-key.pem")), self.path(&format!("{name}.csr")));
        openssl(&[
            "req",
            "-new",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            &format!("/CN={cn}"),
            "-keyout",
            &key,
            "-out",
            &csr,
        ])?;
        openssl(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &self.path(&format!("{ca}.pem")),
            "-CAkey",
            &self.path(&format!("{ca}-key.pem")),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &ext.to_string_lossy(),
            "-out",
            &self.path(&format!("{name}.pem")),
        ])
    }

    fn path(&self, name: &str) -> String {
        self.file(name).to_string_lossy().into_owned()
    }
}

fn openssl(args: &[&str]) -> io::Result<()> {
    let out = Command::new("openssl")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| annotate(e, "cannot run openssl (install the openssl package)"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "openssl {} failed: {}",
        args.first().copied().unwrap_or_default(),
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}

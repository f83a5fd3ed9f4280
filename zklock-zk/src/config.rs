//! What a session is made from.

use std::sync::Arc;
use std::time::Duration;

use crate::codec::frame::DEFAULT_MAX_FRAME;
use crate::error::Error;
use crate::hosts::ConnectString;

/// TLS for every connection of a session.
#[derive(Clone, Debug)]
pub struct Tls {
    /// The rustls client configuration: trusted roots, an optional client
    /// certificate (ZooKeeper's `x509` scheme names the session by its
    /// subject), the crypto provider. Build it with
    /// `ClientConfig::builder_with_provider` so nothing process-wide is
    /// installed.
    pub config: Arc<rustls::ClientConfig>,
    /// The name the server's certificate must carry; `None` checks each
    /// server against its own host as written in the connect string.
    pub server_name: Option<String>,
    /// How messages name the trusted CA (e.g. `file "/etc/zk/ca.pem"`).
    pub ca_name: String,
}

/// How to connect a [`Session`](crate::Session). Made by [`Config::new`],
/// adjusted by its builder methods.
#[derive(Clone, Debug)]
pub struct Config {
    pub(crate) connect: ConnectString,
    pub(crate) session_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) auth: Vec<(String, Vec<u8>)>,
    pub(crate) sasl: Option<(String, String)>,
    pub(crate) tls: Option<Tls>,
    pub(crate) max_frame: usize,
}

impl Config {
    /// A configuration for the servers of `connect_string`
    /// (`host:port,...[/chroot]`), asking for a 10 s session and waiting up
    /// to 15 s for the first connection.
    ///
    /// # Errors
    ///
    /// [`Error::BadArgument`] when the connect string does not parse.
    pub fn new(connect_string: &str) -> Result<Config, Error> {
        Ok(Config {
            connect: ConnectString::parse(connect_string)?,
            session_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(15),
            auth: Vec::new(),
            sasl: None,
            tls: None,
            max_frame: DEFAULT_MAX_FRAME,
        })
    }

    /// The session timeout to ask for. The server clamps it to its own
    /// `[minSessionTimeout, maxSessionTimeout]`; the granted one is
    /// [`Session::timeout`](crate::Session::timeout).
    pub fn session_timeout(mut self, t: Duration) -> Config {
        self.session_timeout = t;
        self
    }

    /// How long [`Session::connect`](crate::Session::connect) tries before
    /// it gives up with [`Error::Timeout`].
    pub fn connect_timeout(mut self, t: Duration) -> Config {
        self.connect_timeout = t;
        self
    }

    /// Credentials sent with `addAuth` on every connection, e.g. scheme
    /// `digest` with `user:password`. A refusal ends the session with
    /// [`Error::AuthFailed`].
    pub fn auth(mut self, scheme: &str, credentials: &[u8]) -> Config {
        self.auth.push((scheme.to_string(), credentials.to_vec()));
        self
    }

    /// SASL DIGEST-MD5 login, done on every connection before any request.
    pub fn sasl_digest_md5(mut self, user: &str, password: &str) -> Config {
        self.sasl = Some((user.to_string(), password.to_string()));
        self
    }

    /// TLS on every connection.
    pub fn tls(mut self, tls: Tls) -> Config {
        self.tls = Some(tls);
        self
    }

    /// The largest reply frame accepted, and the largest request sent
    /// (default `0xfffff`, ZooKeeper's `jute.maxbuffer`). A reply over it
    /// ends the connection; a request over it fails with
    /// [`Error::BadArgument`] without being sent.
    pub fn max_frame(mut self, bytes: usize) -> Config {
        self.max_frame = bytes;
        self
    }

    /// The chroot of the connect string (empty for none).
    pub fn chroot(&self) -> &str {
        &self.connect.chroot
    }
}

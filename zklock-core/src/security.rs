//! What zklock gives a ZooKeeper ensemble that is not open: the ACL of the
//! nodes it creates ([`Acl`]) and TLS to the servers ([`TlsOptions`]).
//! Authentication itself is [`crate::ClientOptions::digest_auth`] (or a TLS
//! client certificate, where the server maps certificates to identities).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::zk;

use crate::error::{shown, Error, Result};

/// The most entries an [`Acl`] may have, and the longest spec in bytes: an
/// ACL travels in every create request, and ZooKeeper drops a connection
/// whose packet is too large (the client would then retry forever).
const MAX_ACL_ENTRIES: usize = 64;
const MAX_ACL_SPEC_BYTES: usize = 16 * 1024;

/// ZooKeeper's permission letters, in the order `zkCli.sh` prints them.
/// With their bits on the wire.
const PERMS: [(char, i32); 5] = [('c', 4), ('d', 8), ('r', 1), ('w', 2), ('a', 16)];

/// One ACL entry: who (`scheme:id`) may do what (`cdrwa` letters).
#[derive(Clone, Debug, PartialEq, Eq)]
struct AclEntry {
    perms: String,
    scheme: String,
    id: String,
}

/// The ACL zklock gives every node it creates: lock nodes, the lock path
/// and its missing ancestors, a semaphore's `leases` and `locks` nodes.
/// Nodes that exist already keep their ACL (zklock never changes one).
///
/// The default, [`Acl::open`], is ZooKeeper's `OPEN_ACL_UNSAFE` (what
/// Curator and kazoo use unless told otherwise). [`Acl::creator_all`] gives
/// every right to the identities the creating session authenticated as
/// (digest auth, or a TLS client certificate mapped by the server) and none
/// to anyone else: others can then neither list the queue nor create in it,
/// nor delete a holder's node (ZooKeeper checks a delete against the
/// parent's ACL). That holds while the lock path exists: it is a container,
/// deleted by the server some time after its last node goes, and then any
/// client may make it again with its own ACL. A parent made by the operator
/// as a persistent node, with an ACL that gives others no create right,
/// keeps them out for good.
///
/// Every contender of one lock must be allowed to read the others' nodes
/// (a waiter reads the node it waits on) and to list and create in the lock
/// path: give them one identity, or list each of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acl {
    entries: Vec<AclEntry>,
}

impl Acl {
    /// `world:anyone:cdrwa`: everyone may do everything (the default).
    pub fn open() -> Acl {
        Acl { entries: vec![AclEntry { perms: "cdrwa".into(), scheme: "world".into(), id: "anyone".into() }] }
    }

    /// `auth::cdrwa`: every right for the identities of the creating
    /// session, nothing for anyone else. Needs an authenticated session:
    /// otherwise [`Client::connect`](crate::Client::connect) fails with
    /// [`crate::ErrorKind::NoAuth`] saying so (a server before 3.7, which cannot
    /// list the session's identities, refuses the first create instead:
    /// the acquire fails with [`crate::ErrorKind::InvalidArgument`]).
    pub fn creator_all() -> Acl {
        Acl { entries: vec![AclEntry { perms: "cdrwa".into(), scheme: "auth".into(), id: String::new() }] }
    }

    /// Parses an ACL written as `zkCli.sh`'s `setAcl` writes one: entries
    /// `scheme:id:perms` separated by commas, where `perms` are letters of
    /// `cdrwa` (create, delete, read, write, admin), for example
    /// `digest:app:HkOm9nUmJv8qpHw0UnWk0tNQtYg=:cdrwa,world:anyone:r`. The id
    /// is everything between the first and the last colon, so digest ids
    /// (`user:base64(sha1(user:password))`) and IPv6 addresses keep theirs.
    /// Two words stand for whole entries: `open` ([`Acl::open`]) and
    /// `creator` ([`Acl::creator_all`]). A comma inside an id (an x509
    /// subject such as `CN=app,O=Example`) is written `\,`, a backslash
    /// `\\`.
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidArgument`] naming the entry and what is wrong:
    /// empty, no scheme or permissions, a scheme that is not a lower-case
    /// word, an unknown permission letter, a `world` id other than
    /// `anyone`, a digest id without its hash or with a `:` in its user, an
    /// `ip` id that is not an address or `address/bits`, more than 64
    /// entries or 16 KiB, or no entry with one of the rights zklock needs
    /// on the lock path: read, create, delete (`world:anyone:r` would lock
    /// everyone out, and leave the lock path behind).
    pub fn parse(spec: &str) -> Result<Acl> {
        if spec.len() > MAX_ACL_SPEC_BYTES {
            return Err(Error::invalid_argument(format!(
                "ACL {}: longer than {MAX_ACL_SPEC_BYTES} bytes",
                shown(spec)
            )));
        }
        let mut entries = Vec::new();
        for part in split_unescaped(spec) {
            match part.trim() {
                "open" => entries.extend(Acl::open().entries),
                "creator" => entries.extend(Acl::creator_all().entries),
                part => entries.push(parse_entry(spec, part)?),
            }
        }
        if entries.len() > MAX_ACL_ENTRIES {
            return Err(Error::invalid_argument(format!("ACL {}: more than {MAX_ACL_ENTRIES} entries", shown(spec))));
        }
        // zklock lists the lock path, creates its node there and deletes it:
        // an ACL that gives no one some of these rights locks everybody out,
        // and leaves behind the lock path it was put on (empty containers
        // that never had a child are not reaped).
        if let Some(missing) = ['r', 'c', 'd'].into_iter().find(|&c| !entries.iter().any(|e| e.perms.contains(c))) {
            let right = match missing {
                'r' => "read (r: list the queue, read the node waited on)",
                'c' => "create (c: queue a lock node)",
                _ => "delete (d: release)",
            };
            return Err(Error::invalid_argument(format!(
                "ACL {}: no entry gives the right to {right}, so no one could take the lock",
                shown(spec)
            )));
        }
        Ok(Acl { entries })
    }

    /// Whether this is [`Acl::open`].
    pub fn is_open(&self) -> bool {
        *self == Acl::open()
    }

    /// The rights zklock needs (read, create, delete: `r`, `c`, `d`) that
    /// no entry gives a session with `identities` (`(scheme, id)` as
    /// ZooKeeper's whoami lists them): with such an ACL on the lock path
    /// this session could not queue, and the path, made with it, would shut
    /// everyone else out too. As ZooKeeper's own check (`checkACL`), an
    /// entry can match only an identity of its own scheme: one of a scheme
    /// zklock does not know counts as matching when the session has an
    /// identity of that scheme (its provider decides), and never otherwise
    /// (found by an outside test with the `key` provider). A `super`
    /// identity has every right. `digest_login` is the
    /// session's own digest `(user, password)`: whoami names a digest
    /// identity by its user alone, also after a wrong password, so an entry
    /// for that user matches only if it names the hash of this password.
    pub(crate) fn missing_rights(
        &self,
        identities: &[(String, String)],
        digest_login: Option<(&str, &str)>,
    ) -> Vec<char> {
        let ours = digest_login.map(|(user, password)| (user, digest_identity(user, password)));
        let matches = |e: &AclEntry| match e.scheme.as_str() {
            "world" => true,
            // ZooKeeper puts every authenticated identity of the creating
            // session in its place (an IP address is not one).
            "auth" => identities.iter().any(|(scheme, _)| scheme != "ip"),
            "ip" => identities.iter().any(|(scheme, id)| scheme == "ip" && ip_matches(&e.id, id)),
            // whoami names a digest identity by its user alone: our own
            // login's is checked against the hash of our password (the
            // server logs in a wrong password too, as another identity).
            "digest" => {
                let user = digest_user(&e.id);
                identities.iter().any(|(scheme, id)| {
                    scheme == "digest"
                        && (*id == e.id
                            || id == user && ours.as_ref().is_none_or(|(login, hash)| *login != user || e.id == *hash))
                })
            },
            "sasl" | "x509" => identities.iter().any(|(scheme, id)| *scheme == e.scheme && *id == e.id),
            _ => identities.iter().any(|(scheme, _)| *scheme == e.scheme),
        };
        if identities.iter().any(|(scheme, _)| scheme == "super") {
            return Vec::new();
        }
        let granted: String = self.entries.iter().filter(|e| matches(e)).map(|e| e.perms.as_str()).collect();
        ['r', 'c', 'd'].into_iter().filter(|&c| !granted.contains(c)).collect()
    }

    /// Whether an entry is `auth` (as `creator`): ZooKeeper refuses the whole
    /// ACL (InvalidACL) from a session without an authenticated identity.
    pub(crate) fn has_auth_entry(&self) -> bool {
        self.entries.iter().any(|e| e.scheme == "auth")
    }

    /// Whether a digest entry names `login`'s user with the hash of another
    /// password than `login`'s (to say why [`Acl::missing_rights`] failed).
    pub(crate) fn names_another_password(&self, (user, password): (&str, &str)) -> bool {
        let ours = digest_identity(user, password);
        self.entries.iter().any(|e| e.scheme == "digest" && digest_user(&e.id) == user && e.id != ours)
    }

    /// The entries as the ZooKeeper client takes them.
    pub(crate) fn to_zk(&self) -> Vec<zk::Acl> {
        self.entries
            .iter()
            .map(|e| {
                let perms = PERMS.iter().filter(|(c, _)| e.perms.contains(*c)).fold(0, |all, (_, p)| all | *p);
                zk::Acl { perms, scheme: e.scheme.clone(), id: e.id.clone() }
            })
            .collect()
    }
}

impl Default for Acl {
    /// [`Acl::open`].
    fn default() -> Self {
        Acl::open()
    }
}

impl fmt::Display for Acl {
    /// The spec [`Acl::parse`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.entries.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let id = e.id.replace('\\', "\\\\").replace(',', "\\,");
            write!(f, "{sep}{}:{id}:{}", e.scheme, e.perms)?;
        }
        Ok(())
    }
}

/// The user part of a digest id (`user:hash`).
fn digest_user(id: &str) -> &str {
    id.split_once(':').map_or(id, |(user, _)| user)
}

/// The id ZooKeeper's digest scheme gives a session that logged in as
/// `user:password`, and that an ACL entry names: `user:base64(sha1(user:password))`.
pub(crate) fn digest_identity(user: &str, password: &str) -> String {
    use base64::Engine as _;
    let hash = aws_lc_rs::digest::digest(
        &aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY,
        format!("{user}:{password}").as_bytes(),
    );
    format!("{user}:{}", base64::engine::general_purpose::STANDARD.encode(hash.as_ref()))
}

fn parse_entry(spec: &str, entry: &str) -> Result<AclEntry> {
    let bad = |why: &str| Error::invalid_argument(format!("ACL {}: entry {}: {why}", shown(spec), shown(entry)));
    if entry.is_empty() {
        return Err(bad("empty entry (expected scheme:id:perms, 'open' or 'creator')"));
    }
    let (Some(first), Some(last)) = (entry.find(':'), entry.rfind(':')) else {
        return Err(bad("expected scheme:id:perms, 'open' or 'creator'"));
    };
    if first == last {
        return Err(bad("expected scheme:id:perms (the id may be empty, as in auth::cdrwa)"));
    }
    let (scheme, id, letters) = (&entry[..first], &entry[first + 1..last], &entry[last + 1..]);
    if scheme.is_empty()
        || !scheme.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
    {
        return Err(bad("the scheme must be a lower-case word (world, auth, digest, ip, x509, sasl, ...)"));
    }
    if letters.is_empty() {
        return Err(bad("no permissions (give letters of cdrwa)"));
    }
    if let Some(c) = letters.chars().find(|c| !"cdrwa".contains(*c)) {
        return Err(bad(&format!("unknown permission {c:?} (letters of cdrwa: create, delete, read, write, admin)")));
    }
    if id.chars().any(char::is_control) {
        return Err(bad("the id contains a control character"));
    }
    match scheme {
        "world" if id != "anyone" => return Err(bad("the world scheme's only id is 'anyone'")),
        "auth" if !id.is_empty() => return Err(bad("the auth scheme takes no id (auth::perms)")),
        "ip" if !is_ip_id(id) => return Err(bad("an ip id is an address, or address/bits")),
        "digest" if !is_digest_id(id) => {
            return Err(bad("a digest id is user:base64(sha1(user:password)), not the password itself (e.g. \
                 `echo -n user:password | openssl dgst -binary -sha1 | openssl base64`)"))
        },
        _ => {},
    }
    // One letter once, in zkCli's order.
    let perms = PERMS.iter().map(|(c, _)| *c).filter(|c| letters.contains(*c)).collect();
    Ok(AclEntry { perms, scheme: scheme.to_owned(), id: id.to_owned() })
}

/// `user:hash` where hash is the 28-character base64 of a SHA-1 digest.
fn is_digest_id(id: &str) -> bool {
    let Some((user, hash)) = id.split_once(':') else { return false };
    !user.is_empty()
        && hash.len() == 28
        && hash.ends_with('=')
        && hash[..27].chars().all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '/')
}

/// Whether the address `addr` is in `spec` (`address` or `address/bits`).
fn ip_matches(spec: &str, addr: &str) -> bool {
    let (net, bits) = spec.split_once('/').unwrap_or((spec, ""));
    let (Ok(net), Ok(addr)) = (net.parse::<std::net::IpAddr>(), addr.parse::<std::net::IpAddr>()) else {
        return false;
    };
    let (net, addr, most) = match (net, addr) {
        (std::net::IpAddr::V4(n), std::net::IpAddr::V4(a)) => (u128::from(u32::from(n)), u128::from(u32::from(a)), 32),
        (std::net::IpAddr::V6(n), std::net::IpAddr::V6(a)) => (u128::from(n), u128::from(a), 128),
        _ => return false,
    };
    let bits: u32 = if bits.is_empty() { most } else { bits.parse().unwrap_or(most) };
    if bits == 0 {
        return true;
    }
    let shift = most - bits.min(most);
    (net >> shift) == (addr >> shift)
}

/// `address` or `address/bits` (bits within the address's length).
fn is_ip_id(id: &str) -> bool {
    let (addr, bits) = match id.split_once('/') {
        Some((a, b)) => (a, Some(b)),
        None => (id, None),
    };
    let Ok(addr) = addr.parse::<std::net::IpAddr>() else { return false };
    let most = if addr.is_ipv4() { 32 } else { 128 };
    bits.is_none_or(|b| b.parse::<u8>().is_ok_and(|b| b <= most))
}

/// `spec` split at its commas that are not escaped (`\,`), each part with
/// `\,` and `\\` unescaped.
fn split_unescaped(spec: &str) -> Vec<String> {
    let (mut parts, mut part) = (Vec::new(), String::new());
    let mut chars = spec.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some(next @ (',' | '\\')) => part.push(next),
                Some(other) => part.extend(['\\', other]),
                None => part.push('\\'),
            },
            (',', _) => parts.push(std::mem::take(&mut part)),
            (c, _) => part.push(c),
        }
    }
    parts.push(part);
    parts
}

/// Where a PEM text comes from.
#[derive(Clone, Debug)]
enum Pem {
    File(PathBuf),
    Text(Arc<str>),
}

impl Pem {
    fn load(&self, what: &str) -> Result<String> {
        let text = match self {
            Pem::Text(text) => text.to_string(),
            Pem::File(path) => read_pem_file(path, what)?,
        };
        if !text.contains("-----BEGIN ") {
            return Err(Error::invalid_argument(format!("the TLS {what} {} holds no PEM block", self.named())));
        }
        Ok(text)
    }

    fn named(&self) -> String {
        match self {
            Pem::File(path) => format!("file {}", shown_path(path)),
            Pem::Text(_) => "text".to_owned(),
        }
    }
}

/// The most a PEM file may hold: a CA bundle of a whole operating system is
/// well under 1 MiB.
const MAX_PEM_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Reads a PEM file: a regular file (not a FIFO or a device, which could
/// block the connect for ever or never end) of at most 16 MiB.
fn read_pem_file(path: &Path, what: &str) -> Result<String> {
    use std::io::Read;
    let bad = |why: String| Error::invalid_argument(format!("the TLS {what} file {}: {why}", shown_path(path)));
    let meta = std::fs::metadata(path).map_err(|e| bad(format!("cannot be read: {e}")))?;
    if !meta.is_file() {
        return Err(bad("is not a regular file".to_owned()));
    }
    if meta.len() > MAX_PEM_FILE_BYTES {
        return Err(bad(format!("is larger than {} MiB", MAX_PEM_FILE_BYTES >> 20)));
    }
    let file = std::fs::File::open(path).map_err(|e| bad(format!("cannot be read: {e}")))?;
    // The file may have grown since; never read more than the limit.
    let mut text = String::new();
    file.take(MAX_PEM_FILE_BYTES + 1).read_to_string(&mut text).map_err(|e| bad(format!("cannot be read: {e}")))?;
    if text.len() as u64 > MAX_PEM_FILE_BYTES {
        return Err(bad(format!("is larger than {} MiB", MAX_PEM_FILE_BYTES >> 20)));
    }
    Ok(text)
}

fn shown_path(path: &Path) -> String {
    shown(&path.to_string_lossy())
}

/// TLS between the client and every server of the connect string: the
/// servers' certificates are checked against the given certificate
/// authorities and against the host name (or IP address) the connect
/// string names them by; a client certificate is shown when the server asks
/// for one. There is no fallback to plaintext: a server that does not speak
/// TLS, or whose certificate does not verify, is never used.
///
/// ZooKeeper serves TLS on its `secureClientPort` (with the Netty connection
/// factory): name that port in the connect string.
#[derive(Clone, Debug)]
pub struct TlsOptions {
    ca: Pem,
    identity: Option<(Pem, Pem)>,
}

impl TlsOptions {
    /// Trusts the certificate authorities in the PEM file at `path` (read at
    /// each connect, so a replaced file is used by the next session).
    pub fn ca_file(path: impl Into<PathBuf>) -> TlsOptions {
        TlsOptions { ca: Pem::File(path.into()), identity: None }
    }

    /// Trusts the certificate authorities in `pem` (PEM text).
    pub fn ca_pem(pem: impl Into<String>) -> TlsOptions {
        TlsOptions { ca: Pem::Text(pem.into().into()), identity: None }
    }

    /// Shows the client certificate (chain) in the PEM file `cert` with the
    /// private key in the PEM file `key` (PKCS#8, PKCS#1 or SEC1) when the
    /// server asks for one.
    pub fn identity_files(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> TlsOptions {
        self.identity = Some((Pem::File(cert.into()), Pem::File(key.into())));
        self
    }

    /// [`TlsOptions::identity_files`] with the PEM texts themselves.
    pub fn identity_pem(mut self, cert: impl Into<String>, key: impl Into<String>) -> TlsOptions {
        self.identity = Some((Pem::Text(cert.into().into()), Pem::Text(key.into().into())));
        self
    }

    /// The TLS options front ends make from three optional PEM file names
    /// (C, Python, Node and the CLI take them so): `None` when all three are
    /// absent (no TLS).
    ///
    /// # Errors
    /// `InvalidArgument` for a certificate without its key or the other way
    /// round, or either without a CA.
    pub fn from_file_names(ca: Option<&str>, cert: Option<&str>, key: Option<&str>) -> Result<Option<TlsOptions>> {
        let identity = match (cert, key) {
            (None, None) => None,
            (Some(cert), Some(key)) => Some((cert, key)),
            _ => {
                return Err(Error::invalid_argument(
                    "a TLS client certificate needs its key, and a key its certificate",
                ))
            },
        };
        match (ca, identity) {
            (None, None) => Ok(None),
            (None, Some(_)) => {
                Err(Error::invalid_argument("a TLS client certificate needs a CA file to check the server against"))
            },
            (Some(ca), None) => Ok(Some(TlsOptions::ca_file(ca))),
            (Some(ca), Some((cert, key))) => Ok(Some(TlsOptions::ca_file(ca).identity_files(cert, key))),
        }
    }

    /// Reads the PEM texts: `(ca, identity)`.
    fn load(&self) -> Result<Loaded> {
        let ca = self.ca.load("CA")?;
        let identity = match &self.identity {
            None => None,
            Some((cert, key)) => Some((cert.load("certificate")?, key.load("key")?)),
        };
        Ok(Loaded { ca, identity })
    }

    /// TLS for the session layer: the rustls configuration (with an
    /// explicit crypto provider: nothing process-wide is installed). Reads
    /// the files now.
    ///
    /// # Errors
    /// `InvalidArgument` naming the file or text that cannot be read or
    /// holds no usable certificate or key.
    pub(crate) fn prepare(&self) -> Result<zklock_zk::Tls> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let loaded = self.load()?;
        let ca = self.ca.named();
        let bad = |what: &str, e: &dyn fmt::Display| Error::invalid_argument(format!("the TLS {what}: {e}"));
        let refused = |what: &str, e: &rustls::Error| Error::invalid_argument(format!("the TLS {what}: {e}"));
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(loaded.ca.as_bytes()) {
            let cert = cert.map_err(|e| bad("CA", &e))?;
            roots.add(cert).map_err(|e| refused("CA", &e))?;
        }
        if roots.is_empty() {
            return Err(Error::invalid_argument("the TLS CA holds no certificate"));
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| refused("protocol versions", &e))?
            .with_root_certificates(roots);
        let config = match &loaded.identity {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let named = self.identity.as_ref().map(|(c, k)| format!("{} and key {}", c.named(), k.named()));
                let unusable = |e: &dyn fmt::Display| {
                    Error::invalid_argument(format!(
                        "the TLS certificate {} are not usable: {e}",
                        named.clone().unwrap_or_default()
                    ))
                };
                let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| unusable(&e))?;
                if chain.is_empty() {
                    return Err(unusable(&"no certificate in it"));
                }
                let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).map_err(|e| unusable(&e))?;
                builder.with_client_auth_cert(chain, key).map_err(|e| unusable(&e))?
            },
        };
        Ok(zklock_zk::Tls { config: Arc::new(config), server_name: None, ca_name: ca })
    }
}

struct Loaded {
    ca: String,
    identity: Option<(String, String)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn parse_round_trips() {
        let spec = "digest:app:HkOm9nUmJv8qpHw0UnWk0tNQtYg=:cdrwa,world:anyone:r,ip:::1:rw";
        let acl = Acl::parse(spec).unwrap();
        assert_eq!(acl.to_string(), "digest:app:HkOm9nUmJv8qpHw0UnWk0tNQtYg=:cdrwa,world:anyone:r,ip:::1:rw");
        assert_eq!(Acl::parse(&acl.to_string()).unwrap(), acl);
        assert_eq!(Acl::parse("creator").unwrap(), Acl::creator_all());
        assert_eq!(Acl::parse("open").unwrap(), Acl::open());
        assert_eq!(Acl::parse("auth::acdrw").unwrap().to_string(), "auth::cdrwa");
        assert_eq!(Acl::parse("creator, world:anyone:r").unwrap().to_string(), "auth::cdrwa,world:anyone:r");
        assert!(Acl::open().is_open() && !Acl::creator_all().is_open());
        // x509 subjects with commas, escaped.
        let x509 = Acl::parse(r"x509:CN=app\,O=Example\\Co:r,creator").unwrap();
        assert_eq!(x509.to_zk()[0].id, r"CN=app,O=Example\Co");
        assert_eq!(Acl::parse(&x509.to_string()).unwrap(), x509);
        assert!(Acl::parse("ip:10.0.0.0/8:r,ip:::1:rw,ip:192.168.1.2:cd").is_ok());
    }

    #[test]
    fn parse_names_what_is_wrong() {
        for (spec, says) in [
            ("", "empty entry"),
            ("world:anyone", "expected scheme:id:perms"),
            ("world:anyone:", "no permissions"),
            ("world:anyone:rx", "unknown permission 'x'"),
            ("world:everyone:r", "only id is 'anyone'"),
            ("auth:bob:cdrwa", "takes no id"),
            ("digest:bob:secret:cdrwa", "not the password itself"),
            (":x:r", "lower-case word"),
            ("WORLD:anyone:r", "lower-case word"),
            ("digest:al:ice:HkOm9nUmJv8qpHw0UnWk0tNQtYg=:r", "not the password itself"),
            ("ip:not-an-ip:r", "an ip id"),
            ("ip:10.0.0.0/99:r", "an ip id"),
            ("open,", "empty entry"),
            // Rights no entry gives: no one could take the lock.
            ("world:anyone:r", "no entry gives the right to create"),
            ("world:anyone:cd", "no entry gives the right to read"),
            ("auth::crwa,world:anyone:r", "no entry gives the right to delete"),
        ] {
            let e = Acl::parse(spec).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{spec}");
            assert!(e.message().contains(says), "{spec}: {e}");
        }
        let many = vec!["world:anyone:rcd"; 65].join(",");
        assert!(Acl::parse(&many).unwrap_err().message().contains("more than 64"));
        assert!(Acl::parse(&"x".repeat(20_000)).unwrap_err().message().contains("longer than"));
    }

    #[test]
    fn the_rights_an_acl_leaves_a_session() {
        let id = |s: &str, i: &str| (s.to_owned(), i.to_owned());
        let alice = [id("ip", "127.0.0.1"), id("digest", "alice")];
        let missing = |spec: &str| Acl::parse(spec).unwrap().missing_rights(&alice, None);
        assert!(missing("open").is_empty());
        assert!(missing("creator").is_empty());
        assert!(missing("digest:alice:HkOm9nUmJv8qpHw0UnWk0tNQtYg=:cdrwa").is_empty());
        assert_eq!(missing("digest:bob:HkOm9nUmJv8qpHw0UnWk0tNQtYg=:cdrwa"), ['r', 'c', 'd']);
        assert_eq!(missing("ip:10.1.2.3:cdrwa"), ['r', 'c', 'd']);
        assert!(missing("ip:127.0.0.0/8:cdrwa").is_empty());
        assert!(missing("ip:127.0.0.1:cdrwa").is_empty());
        assert_eq!(missing("ip:127.0.0.1:cd,ip:10.0.0.1:r"), ['r']);
        assert!(missing("ip:127.0.0.1:cd,world:anyone:r").is_empty());
        assert_eq!(missing("ip:127.0.0.0/8:r,custom:x:cd"), ['c', 'd'], "no custom identity: nothing from it");
        let custom = [id("ip", "127.0.0.1"), id("custom", "y")];
        let acl = Acl::parse("ip:::1:cdrwa,ip:127.0.0.0/8:r,custom:x:cd").unwrap();
        assert!(acl.missing_rights(&custom, None).is_empty(), "an identity of an unknown scheme may match");
        let root = [id("ip", "127.0.0.1"), id("super", "")];
        assert!(Acl::parse("ip:10.0.0.1:cdrwa").unwrap().missing_rights(&root, None).is_empty());
        // No authenticated identity: `auth` gives nothing.
        let nobody = [id("ip", "127.0.0.1")];
        assert_eq!(Acl::creator_all().missing_rights(&nobody, None), ['r', 'c', 'd']);
        // Our own digest login: whoami says `digest:alice` whatever the
        // password; the entry must name the hash of ours (computed by
        // Python's hashlib for alice:pw-alice).
        let real = "digest:alice:aJ/Pdx7TadRgI84JsdYLXEn9EPw=:cdrwa";
        assert_eq!(digest_identity("alice", "pw-alice"), "alice:aJ/Pdx7TadRgI84JsdYLXEn9EPw=");
        let with = |spec: &str, password| Acl::parse(spec).unwrap().missing_rights(&alice, Some(("alice", password)));
        assert!(with(real, "pw-alice").is_empty());
        assert_eq!(with(real, "wrong"), ['r', 'c', 'd']);
        assert!(with("creator", "wrong").is_empty(), "the wrong password is an identity of its own");
    }

    #[test]
    fn perms_become_bits() {
        let acl = Acl::parse("world:anyone:rcd").unwrap().to_zk();
        assert_eq!(acl[0].perms, 1 | 4 | 8);
        assert_eq!(Acl::open().to_zk()[0].perms, 31);
    }

    #[test]
    fn tls_files_are_named_when_missing() {
        let e = TlsOptions::ca_file("/nonexistent/ca.pem").prepare().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("/nonexistent/ca.pem"), "{e}");
        let e = TlsOptions::ca_pem("not pem").prepare().unwrap_err();
        assert!(e.message().contains("no PEM block"), "{e}");
        // Files that would block the connect for ever or never end.
        let fifo = std::env::temp_dir().join(format!("zklock-fifo-{}", std::process::id()));
        let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for (ca, key) in [(fifo.clone(), None), ("/dev/zero".into(), None), ("/tmp".into(), None)]
            .into_iter()
            .chain([(std::path::PathBuf::from("/dev/null"), Some(fifo.clone()))])
        {
            let tls = match &key {
                None => TlsOptions::ca_file(&ca),
                Some(k) => TlsOptions::ca_pem("-----BEGIN CERTIFICATE-----").identity_files(&ca, k),
            };
            let e = tls.prepare().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(e.message().contains("not a regular file"), "{ca:?}: {e}");
        }
        let _ = std::fs::remove_file(&fifo);
    }
}

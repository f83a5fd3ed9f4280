//! TLS failures in words that say what to change: rustls's own messages
//! show its types' Debug forms (`IpAddress(127.0.0.1)`, `received fatal
//! alert: BadCertificate`).

/// A TLS failure in words: rustls's own messages show its types' Debug
/// form (`IpAddress(127.0.0.1)`, `received fatal alert: BadCertificate`).
/// `host` is the server's name as the connect string gives it, `ca` how
/// the CA is named (`file "/etc/zk/ca.pem"`).
pub(crate) fn explained(e: &rustls::Error, host: &str, ca: &str) -> String {
    use rustls::{AlertDescription as Alert, CertificateError as Cert, Error as Tls};
    let cert = |why: &str| format!("the server's certificate {why}");
    match e {
        Tls::InvalidCertificate(c) => match c {
            Cert::UnknownIssuer => format!(
                "unknown issuer: the server's certificate is not signed by a certificate authority in the TLS CA {ca} \
                 (rustls reports UnknownIssuer)"
            ),
            Cert::NotValidForNameContext { expected, presented } => {
                let names: Vec<String> = presented.iter().filter_map(|p| presented_name(p)).collect();
                let names = if names.is_empty() {
                    "no host name or address".to_owned()
                } else {
                    format!("only {}", names.join(", "))
                };
                cert(&format!("is not valid for {} (it names {names})", expected.to_str()))
            },
            Cert::NotValidForName => cert(&format!("is not valid for {host}")),
            Cert::ExpiredContext { time, not_after } => {
                cert(&format!("expired {} ago", ago(time.as_secs().saturating_sub(not_after.as_secs()))))
            },
            Cert::Expired => cert("expired"),
            Cert::NotValidYetContext { time, not_before } => cert(&format!(
                "is not valid yet (it will be in {}: is a clock wrong?)",
                ago(not_before.as_secs().saturating_sub(time.as_secs()))
            )),
            Cert::NotValidYet => cert("is not valid yet (is a clock wrong?)"),
            Cert::Revoked => cert("was revoked"),
            Cert::BadEncoding => cert("is malformed"),
            Cert::BadSignature => cert("has a bad signature"),
            Cert::UnhandledCriticalExtension => cert("has a critical extension that cannot be checked"),
            Cert::UnsupportedSignatureAlgorithmContext { .. }
            | Cert::UnsupportedSignatureAlgorithmForPublicKeyContext { .. } => {
                cert("is signed with an algorithm that is not supported")
            },
            Cert::InvalidPurpose | Cert::InvalidPurposeContext { .. } => {
                cert("is not meant for a TLS server (its extended key usage)")
            },
            Cert::Other(other) => cert(&format!("was refused: {other}")),
            other => cert(&format!("was refused: {}", words(&format!("{other:?}")))),
        },
        Tls::AlertReceived(alert) => {
            let said = words(&format!("{alert:?}"));
            match alert {
                Alert::BadCertificate
                | Alert::CertificateUnknown
                | Alert::CertificateRequired
                | Alert::UnknownCA
                | Alert::AccessDenied
                | Alert::UnsupportedCertificate
                | Alert::CertificateExpired
                | Alert::CertificateRevoked => format!(
                    "the server refused the handshake ({said}): it wants a client certificate, or does not \
                     accept ours"
                ),
                _ => format!("the server refused the handshake ({said})"),
            }
        },
        Tls::NoCertificatesPresented => "the server presented no certificate".to_owned(),
        Tls::UnsupportedNameType => format!("{host} is no name a certificate can be checked against"),
        Tls::InvalidMessage(_)
        | Tls::InappropriateMessage { .. }
        | Tls::InappropriateHandshakeMessage { .. }
        | Tls::PeerMisbehaved(_) => format!(
            "the server does not speak TLS as expected ({}): is this ZooKeeper's secureClientPort?",
            words(&format!("{e:?}"))
        ),
        Tls::PeerIncompatible(why) => {
            format!("the server has no TLS version or cipher in common with zklock ({})", words(&format!("{why:?}")))
        },
        Tls::InconsistentKeys(_) => "the client certificate and the key do not belong together".to_owned(),
        Tls::General(why) => why.clone(),
        Tls::Other(other) => other.to_string(),
        other => words(&format!("{other:?}")),
    }
}

/// A name a certificate presents, as rustls's message lists it
/// (`DnsName("zk1")`, `IpAddress(127.0.0.1)`, the Debug form of webpki's
/// `GeneralName`), in words: `zk1`, `127.0.0.1`; `None` for kinds of names
/// that say nothing to a user.
fn presented_name(debug: &str) -> Option<String> {
    let inner = |prefix: &str| debug.strip_prefix(prefix)?.strip_suffix(')').map(|s| s.trim_matches('"').to_owned());
    inner("DnsName(").or_else(|| inner("IpAddress(")).or_else(|| inner("UniformResourceIdentifier("))
}

/// A Debug form's leading name in lower-case words: `BadCertificate` ->
/// `bad certificate`, `InvalidMessage(InvalidContentType)` -> `invalid
/// message: invalid content type`.
fn words(debug: &str) -> String {
    let mut out = String::new();
    let mut previous_lower = false;
    for c in debug.chars() {
        match c {
            c if c.is_ascii_uppercase() => {
                if previous_lower {
                    out.push(' ');
                }
                out.push(c.to_ascii_lowercase());
                previous_lower = false;
            },
            '(' => {
                out.push_str(": ");
                previous_lower = false;
            },
            c if c.is_ascii_alphanumeric() => {
                out.push(c);
                previous_lower = true;
            },
            _ => previous_lower = false,
        }
    }
    out.trim_end_matches([':', ' ']).to_owned()
}

/// `secs` as a rough duration: `40 seconds`, `3 hours`, `12 days`.
fn ago(secs: u64) -> String {
    match secs {
        0..120 => format!("{secs} seconds"),
        120..7200 => format!("{} minutes", secs / 60),
        7200..172_800 => format!("{} hours", secs / 3600),
        _ => format!("{} days", secs / 86_400),
    }
}

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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Whether `message` shows a type's Debug form: a CamelCase name
    /// followed by `(` or `{`, or one of rustls's variant names.
    fn shows_debug(message: &str) -> bool {
        let camel_call = message.match_indices(['(', '{']).any(|(i, _)| {
            let word: String = message[..i].chars().rev().take_while(|c| c.is_ascii_alphanumeric()).collect::<String>();
            let word: String = word.chars().rev().collect();
            word.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                && word.chars().skip(1).any(|c| c.is_ascii_uppercase())
        });
        camel_call
            || ["NotValidForName", "BadCertificate", "CertificateUnknown", "received fatal alert", "Context {"]
                .iter()
                .any(|n| message.contains(n))
    }

    #[test]
    fn tls_failures_are_said_in_words() {
        use rustls::pki_types::{ServerName, UnixTime};
        use rustls::{AlertDescription, CertificateError as Cert, Error as Tls, InvalidMessage};
        let ca = "file \"/etc/zk/ca.pem\"";
        let name_error = |expected: &str, presented: &[&str]| {
            Tls::InvalidCertificate(Cert::NotValidForNameContext {
                expected: ServerName::try_from(expected.to_owned()).unwrap(),
                presented: presented.iter().map(|p| p.to_string()).collect(),
            })
        };
        let at = |secs| UnixTime::since_unix_epoch(Duration::from_secs(secs));
        for (e, says) in [
            (name_error("localhost", &["IpAddress(127.0.0.1)"]), "the server's certificate is not valid for localhost (it names only 127.0.0.1)"),
            (
                name_error("127.0.0.1", &["DnsName(\"zk1.example\")", "IpAddress(10.0.0.1)"]),
                "the server's certificate is not valid for 127.0.0.1 (it names only zk1.example, 10.0.0.1)",
            ),
            (name_error("zk1", &[]), "is not valid for zk1 (it names no host name or address)"),
            (
                Tls::InvalidCertificate(Cert::UnknownIssuer),
                "unknown issuer: the server's certificate is not signed by a certificate authority in the TLS CA file \"/etc/zk/ca.pem\"",
            ),
            (
                Tls::InvalidCertificate(Cert::ExpiredContext { time: at(1_000_000), not_after: at(1_000_000 - 3 * 86_400) }),
                "the server's certificate expired 3 days ago",
            ),
            (Tls::InvalidCertificate(Cert::Expired), "the server's certificate expired"),
            (
                Tls::InvalidCertificate(Cert::NotValidYetContext { time: at(1000), not_before: at(1060) }),
                "is not valid yet (it will be in 60 seconds: is a clock wrong?)",
            ),
            (Tls::InvalidCertificate(Cert::NotValidForName), "the server's certificate is not valid for zk9"),
            (Tls::InvalidCertificate(Cert::Revoked), "the server's certificate was revoked"),
            (Tls::InvalidCertificate(Cert::InvalidOcspResponse), "the server's certificate was refused: invalid ocsp response"),
            (Tls::AlertReceived(AlertDescription::BadCertificate), "the server refused the handshake (bad certificate): it wants a client certificate"),
            (Tls::AlertReceived(AlertDescription::CertificateRequired), "(certificate required)"),
            (Tls::AlertReceived(AlertDescription::HandshakeFailure), "the server refused the handshake (handshake failure)"),
            (Tls::InvalidMessage(InvalidMessage::InvalidContentType), "does not speak TLS as expected (invalid message: invalid content type)"),
            (Tls::NoCertificatesPresented, "the server presented no certificate"),
            (Tls::DecryptError, "decrypt error"),
        ] {
            let said = explained(&e, "zk9", ca);
            assert!(said.contains(says), "{e:?}: {said:?} should say {says:?}");
            assert!(!shows_debug(&said), "{e:?}: {said:?} shows a Debug form");
        }
        // What rustls itself says does show them (the check can fail).
        assert!(shows_debug(&name_error("localhost", &["IpAddress(127.0.0.1)"]).to_string()));
        assert!(shows_debug(&Tls::AlertReceived(AlertDescription::BadCertificate).to_string()));
        assert_eq!(words("InvalidMessage(InvalidContentType)"), "invalid message: invalid content type");
        assert_eq!(presented_name("Unsupported(0x66)"), None);
    }
}

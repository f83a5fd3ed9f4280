//! `zklock_client`: a connection (session) to a ZooKeeper ensemble.

use std::ffi::c_char;
use std::ptr;
use std::time::Duration;

use zklock_core::{Acl, Client, ClientOptions, Error, TlsOptions};

use crate::error::{zklock_code, zklock_error};
use crate::participants::zklock_participants;
use crate::util::{arg_ref, arg_str, call, guarded, invalid_arg, out_arg};

/// A connection to a ZooKeeper ensemble (one session), the factory of locks.
///
/// Created by `zklock_client_new`, freed by `zklock_client_free`. Thread-safe:
/// every function may be called on one client from several threads at once.
/// Locks and guards made from a client keep it alive, so the client may be
/// freed before them; the session closes when the client and every lock and
/// guard made from it are freed, or at `zklock_client_close`.
pub struct zklock_client {
    pub(crate) inner: Client,
}

/// Options for `zklock_client_new`. Initialise with
/// `zklock_client_options_init(&opts, sizeof opts)` (every default), then
/// set what you need. zklock copies what it needs during
/// `zklock_client_new`; the strings need not outlive that call.
///
/// The struct can grow without breaking programs built against an older
/// header: `size` (set by the init function) says how large the caller's
/// struct is. A library newer than the caller's header takes the fields the
/// caller does not have as defaults; a library older than the caller's
/// header refuses options that set fields it does not know
/// (`ZKLOCK_INVALID_ARGUMENT`) rather than ignore them (a TLS option
/// silently dropped would mean plaintext). New fields are only ever
/// appended, and zero / NULL always means the default.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zklock_client_options {
    /// `sizeof(zklock_client_options)` as the caller was compiled: set by
    /// `zklock_client_options_init`; do not change it.
    pub size: usize,
    /// The session timeout to ask the server for, in milliseconds (it may
    /// negotiate another within its bounds; at most one hour). Held locks
    /// are lost when the session expires. 0: 10000.
    pub session_timeout_ms: u32,
    /// How long `zklock_client_new` may try to connect, in milliseconds,
    /// before it fails with `ZKLOCK_CONNECTION_LOSS` (at most one day). 0:
    /// 15000.
    pub connect_timeout_ms: u32,
    /// The longest a single ZooKeeper request may take, in milliseconds
    /// (bounds a release and every step of an acquire without a deadline of
    /// its own; at most one day). 0: 10000.
    pub operation_timeout_ms: u32,
    /// User for ZooKeeper's `digest` authentication (NUL-terminated UTF-8,
    /// non-empty, no ':'), or NULL for none. Set both or neither of
    /// `digest_user` and `digest_password`.
    pub digest_user: *const c_char,
    /// Password for `digest` authentication, or NULL for none.
    pub digest_password: *const c_char,
    /// User for SASL `DIGEST-MD5` authentication (the identity `sasl:user`
    /// that ACLs name), or NULL for none. Set both or neither of
    /// `sasl_user` and `sasl_password`. A refused login fails
    /// `zklock_client_new` with `ZKLOCK_NO_AUTH`.
    pub sasl_user: *const c_char,
    /// Password for SASL `DIGEST-MD5`, or NULL for none.
    pub sasl_password: *const c_char,
    /// The ACL of every node the client creates, written as `zkCli.sh`
    /// writes one: `scheme:id:perms` entries separated by commas (perms
    /// letters of `cdrwa`), or the words `open` and `creator` (every right
    /// for the session's authenticated identities only). NULL: `open`.
    /// Lock nodes get it without ADMIN for `world:anyone` (nobody may
    /// change their ACL).
    pub acl: *const c_char,
    /// A PEM file of the certificate authorities to trust: set, the client
    /// speaks TLS to every server (name their `secureClientPort`s in
    /// `hosts`), never plaintext. NULL: no TLS.
    pub tls_ca_file: *const c_char,
    /// A PEM file with the client certificate (chain) shown when the server
    /// asks for one, or NULL. Set both or neither of `tls_cert_file` and
    /// `tls_key_file`; they need `tls_ca_file`.
    pub tls_cert_file: *const c_char,
    /// A PEM file with the client certificate's private key, or NULL.
    pub tls_key_file: *const c_char,
}

/// Sets every field of `*opts` to its default (zero / NULL) and `size` to
/// `size`, which must be `sizeof *opts` as the caller was compiled (the
/// first `size` bytes are written, never more). NULL `opts`, or a `size`
/// too small to hold the `size` field: nothing.
///
/// # Safety
/// `opts` is NULL or valid for writing `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_options_init(opts: *mut zklock_client_options, size: usize) {
    if opts.is_null() || size < std::mem::size_of::<usize>() {
        return;
    }
    // SAFETY: opts is valid for writing `size` bytes (caller's contract);
    // the size field is the first, at offset 0, and fits.
    unsafe {
        ptr::write_bytes(opts.cast::<u8>(), 0, size);
        opts.cast::<usize>().write_unaligned(size);
    }
}

/// The caller's options as this library's struct: the fields the caller's
/// struct has, defaults for the rest.
///
/// # Safety
/// `opts` points to at least `opts->size` readable bytes.
unsafe fn read_options(opts: *const zklock_client_options, f: &str) -> Result<zklock_client_options, Error> {
    let ours = std::mem::size_of::<zklock_client_options>();
    // SAFETY: the size field comes first and every caller's struct has it.
    let size = unsafe { opts.cast::<usize>().read_unaligned() };
    if size < std::mem::size_of::<usize>() || size > 1 << 20 {
        return Err(invalid_arg(
            f,
            "opts->size",
            &format!("is {size}: initialise the options with zklock_client_options_init(&opts, sizeof opts)"),
        ));
    }
    let bytes = opts.cast::<u8>();
    if size > ours {
        // SAFETY: the caller's struct has `size` readable bytes.
        let tail = unsafe { std::slice::from_raw_parts(bytes.add(ours), size - ours) };
        if tail.iter().any(|&b| b != 0) {
            return Err(invalid_arg(
                f,
                "opts",
                &format!(
                    "sets options this libzklock {} does not know (the program was built with a newer zklock.h)",
                    env!("CARGO_PKG_VERSION")
                ),
            ));
        }
    }
    let mut out = std::mem::MaybeUninit::<zklock_client_options>::zeroed();
    // SAFETY: copies min(size, ours) bytes from the caller's struct into a
    // zeroed one of ours (all-zero is a valid value: integers and NULLs).
    unsafe {
        ptr::copy_nonoverlapping(bytes, out.as_mut_ptr().cast::<u8>(), size.min(ours));
        Ok(out.assume_init())
    }
}

/// Connects to ZooKeeper and opens a session. Blocks until the session is
/// established or the connect timeout passes.
///
/// `hosts` is `"host:port[,host:port...][/chroot]"`. `opts` may be NULL
/// (every default). On success `*out` receives a new client that the caller
/// frees with `zklock_client_free`; on failure `*out` is left unchanged.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for a NULL `hosts` or `out`, a string that is
/// not UTF-8, an empty or malformed connect string or a bad option;
/// `ZKLOCK_INVALID_PATH` for a malformed chroot; `ZKLOCK_CONNECTION_LOSS`
/// when no server answered within the connect timeout, or (at once) when
/// no server's TLS certificate verifies (the message says why);
/// `ZKLOCK_NO_AUTH` when the server refused the credentials;
/// `ZKLOCK_ZOOKEEPER` for other refusals. An unreadable TLS file or a
/// malformed ACL is `ZKLOCK_INVALID_ARGUMENT` naming it.
///
/// # Threads
/// Any thread. Each client starts a small runtime thread and one event
/// thread (for state-change callbacks).
///
/// # Safety
/// `hosts` is NULL or a NUL-terminated string; `opts` is NULL or points to
/// an initialised `zklock_client_options` whose string fields are NULL or
/// NUL-terminated; `out` is NULL or valid for writing a pointer; `err` is
/// NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_new(
    hosts: *const c_char,
    opts: *const zklock_client_options,
    out: *mut *mut zklock_client,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_client_new";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let hosts = arg_str(hosts, F, "hosts")?;
            let out = out_arg(out, F, "out")?;
            crate::logger::ensure_default();
            let mut options = ClientOptions::new(hosts);
            let opts = if opts.is_null() { None } else { Some(read_options(opts, F)?) };
            if let Some(o) = opts.as_ref() {
                let ms = |v: u32| Duration::from_millis(u64::from(v));
                if o.session_timeout_ms > 0 {
                    options = options.session_timeout(ms(o.session_timeout_ms));
                }
                if o.connect_timeout_ms > 0 {
                    options = options.connect_timeout(ms(o.connect_timeout_ms));
                }
                if o.operation_timeout_ms > 0 {
                    options = options.operation_timeout(ms(o.operation_timeout_ms));
                }
                let optional = |p: *const c_char, name: &str| (!p.is_null()).then(|| arg_str(p, F, name)).transpose();
                // A user and its password: both or neither.
                let login = |user: *const c_char, password: *const c_char, scheme: &str| {
                    let (u, p) = (format!("opts->{scheme}_user"), format!("opts->{scheme}_password"));
                    match (optional(user, &u)?, optional(password, &p)?) {
                        (None, None) => Ok(None),
                        (Some(user), Some(password)) => Ok(Some((user, password))),
                        (Some(_), None) => Err(invalid_arg(F, &p, &format!("is NULL but {scheme}_user is set"))),
                        (None, Some(_)) => Err(invalid_arg(F, &u, &format!("is NULL but {scheme}_password is set"))),
                    }
                };
                if let Some((user, password)) = login(o.digest_user, o.digest_password, "digest")? {
                    options = options.digest_auth(user, password);
                }
                if let Some((user, password)) = login(o.sasl_user, o.sasl_password, "sasl")? {
                    options = options.sasl_digest_md5(user, password);
                }
                if let Some(acl) = optional(o.acl, "opts->acl")? {
                    options = options.acl(Acl::parse(acl)?);
                }
                let tls = TlsOptions::from_file_names(
                    optional(o.tls_ca_file, "opts->tls_ca_file")?,
                    optional(o.tls_cert_file, "opts->tls_cert_file")?,
                    optional(o.tls_key_file, "opts->tls_key_file")?,
                )?;
                if let Some(tls) = tls {
                    options = options.tls(tls);
                }
            }
            let client = Client::connect(options)?;
            out.write(Box::into_raw(Box::new(zklock_client { inner: client })));
            Ok(())
        })
    }
}

/// Closes the session: every lock held through this client is lost (its
/// node goes with the session; guards turn `LOST` with code
/// `ZKLOCK_CLOSED`), waiting acquires fail with `ZKLOCK_CLOSED`, and new
/// locks cannot be made. Idempotent. Blocks up to the operation timeout for
/// the server to confirm, except in a state-change callback, where it
/// sends the close and returns at once (waiting there would hold back every
/// callback). The client must still be freed.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for a NULL `client`.
///
/// # Threads
/// Any thread, also a state-change callback.
///
/// # Safety
/// `client` is NULL or a live client; `err` is NULL or valid for writing a
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_close(client: *const zklock_client, err: *mut *mut zklock_error) -> zklock_code {
    const F: &str = "zklock_client_close";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            arg_ref(client, F, "client")?.inner.close();
            Ok(())
        })
    }
}

/// Moves the client to a new list of ZooKeeper servers `hosts` (a
/// connect string; an ensemble that grew, shrank or moved), keeping its
/// session and every lock: every later (re)connect, and every new session,
/// uses it. If the server connected now is not in the list, the session
/// finishes the replies in flight and reconnects to one that is (the locks
/// are `SUSPENDED` for that moment). Never blocks.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for NULL arguments, a malformed connect string
/// or one with another chroot than the client's (none keeps it);
/// `ZKLOCK_INVALID_PATH` for a chroot that is no valid node path;
/// `ZKLOCK_CLOSED` after `zklock_client_close`.
///
/// # Threads
/// Any thread, also a state-change callback.
///
/// # Safety
/// `client` is NULL or a live client; `hosts` is NULL or NUL-terminated;
/// `err` is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_set_hosts(
    client: *const zklock_client,
    hosts: *const c_char,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_client_set_hosts";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let client = arg_ref(client, F, "client")?;
            let hosts = arg_str(hosts, F, "hosts")?;
            client.inner.set_hosts(hosts)
        })
    }
}

/// Asks the holder of the lock node `node_path` to let go: writes
/// `__REVOKE__` to it, as Curator's `Revoker.attemptRevoke` does (a zklock
/// holder's `zklock_guard_on_revocation` callbacks and a Curator holder's
/// `RevocationListener` are told; the holder decides). On success
/// `*revoked` (if not NULL) is true, or false if the node was gone. Blocks
/// for one request, at most the operation timeout.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for NULL arguments; `ZKLOCK_INVALID_PATH`;
/// `ZKLOCK_NO_AUTH`; `ZKLOCK_CLOSED`; `ZKLOCK_CONNECTION_LOSS` /
/// `ZKLOCK_TIMEOUT` (the request may have been made).
///
/// # Threads
/// Any thread.
///
/// # Safety
/// `client` is NULL or a live client; `node_path` is NULL or
/// NUL-terminated; `revoked` and `err` are NULL or valid for writing.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_revoke(
    client: *const zklock_client,
    node_path: *const c_char,
    revoked: *mut bool,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_client_revoke";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let client = arg_ref(client, F, "client")?;
            let path = arg_str(node_path, F, "node_path")?;
            let done = client.inner.revoke(path)?;
            if !revoked.is_null() {
                revoked.write(done);
            }
            Ok(())
        })
    }
}

/// Frees a client handle. Locks and guards made from it keep working (they
/// hold the session); the session closes when the last of them is freed.
/// `zklock_client_free(NULL)` does nothing. May block up to about a second
/// when it closes the session.
///
/// # Safety
/// `client` is NULL or a client that was not freed yet and that no other
/// thread is using; it must not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_free(client: *mut zklock_client) {
    if !client.is_null() {
        // SAFETY: client came from Box::into_raw and is freed once (caller's contract).
        guarded((), || drop(unsafe { Box::from_raw(client) }));
    }
}

/// The id of the current ZooKeeper session (it changes when an expired
/// session is replaced). On success `*out` receives it.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for NULL arguments; `ZKLOCK_CLOSED` after
/// `zklock_client_close`; `ZKLOCK_TIMEOUT` / `ZKLOCK_CONNECTION_LOSS` while
/// no session is established.
///
/// # Safety
/// `client` is NULL or a live client; `out` and `err` are NULL or valid for
/// writing.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_session_id(
    client: *const zklock_client,
    out: *mut i64,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_client_session_id";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let client = arg_ref(client, F, "client")?;
            let out = out_arg(out, F, "out")?;
            out.write(client.inner.session_id()?);
            Ok(())
        })
    }
}

/// Lists the participants of the lock at `path` in queue order (holders
/// first), including other libraries' nodes (Curator, kazoo). An absent path
/// has none. On success `*out` receives a new list that the caller frees
/// with `zklock_participants_free`. Blocks up to the operation timeout.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for NULL arguments or a path that is not
/// UTF-8; `ZKLOCK_INVALID_PATH`; `ZKLOCK_CLOSED`;
/// `ZKLOCK_CONNECTION_LOSS` / `ZKLOCK_TIMEOUT` when ZooKeeper does not
/// answer in time.
///
/// # Safety
/// `client` is NULL or a live client; `path` is NULL or NUL-terminated;
/// `out` and `err` are NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_participants(
    client: *const zklock_client,
    path: *const c_char,
    out: *mut *mut zklock_participants,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_client_participants";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let client = arg_ref(client, F, "client")?;
            let path = arg_str(path, F, "path")?;
            let out = out_arg(out, F, "out")?;
            let list = zklock_participants::new(client.inner.participants(path)?);
            out.write(Box::into_raw(Box::new(list)));
            Ok(())
        })
    }
}

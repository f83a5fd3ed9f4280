//! Making sure ZooKeeper and Java are installed.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

/// Path of the ZooKeeper server jar installed by the Debian `zookeeper`
/// package. Its manifest carries the rest of the classpath.
pub const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";

/// Path of the slf4j "simple" binding (logs to stderr), installed as a
/// dependency of the Debian `zookeeper` package.
pub const SLF4J_SIMPLE_JAR: &str = "/usr/share/java/slf4j-simple.jar";

/// File used with `flock` so that parallel test processes do not run `apt-get`
/// at the same time.
const APT_LOCK: &str = "/tmp/zklock-harness-apt.lock";

/// Set once `apt-get update` has run in this process.
static APT_UPDATED: AtomicBool = AtomicBool::new(false);

/// Serialises installation attempts between threads of this process (the
/// `flock` serialises between processes).
static INSTALL_LOCK: Mutex<()> = Mutex::new(());

/// Result of the (cached) java check: `Err((kind, message))`.
static JAVA_CHECK: OnceLock<Result<(), (io::ErrorKind, String)>> = OnceLock::new();

/// The java executable to run: `$ZKLOCK_JAVA` if set, else `java` (looked up in
/// `PATH`).
///
/// Never fails; whether the executable works is checked by
/// [`ensure_zookeeper`]. Callable from any thread.
pub fn java_command() -> OsString {
    std::env::var_os("ZKLOCK_JAVA").filter(|s| !s.is_empty()).unwrap_or_else(|| OsString::from("java"))
}

/// Makes sure the ZooKeeper server jars and a working `java` are available.
///
/// If [`ZOOKEEPER_JAR`] or [`SLF4J_SIMPLE_JAR`] is missing, runs `apt-get
/// update` (at most once per process) and `DEBIAN_FRONTEND=noninteractive
/// apt-get install -y zookeeper` (through `sudo -n` when not root), holding an
/// exclusive `flock` on `/tmp/zklock-harness-apt.lock` so parallel test
/// processes do not run apt at once. Then checks that `java -version` runs
/// (the result of that check is cached for the life of the process).
///
/// Cheap when everything is installed (two `stat` calls plus one cached
/// `java -version`).
///
/// # Errors
///
/// * the lock file cannot be opened or locked;
/// * `apt-get install` fails (the error carries its stderr tail) or the jars
///   are still missing afterwards;
/// * `java` is not found ([`io::ErrorKind::NotFound`]) or `java -version`
///   fails.
///
/// # Threads
///
/// Safe to call from any number of threads and processes at once.
pub fn ensure_zookeeper() -> io::Result<()> {
    if !jars_present() {
        install_zookeeper()?;
    }
    check_java()
}

fn jars_present() -> bool {
    Path::new(ZOOKEEPER_JAR).is_file() && Path::new(SLF4J_SIMPLE_JAR).is_file()
}

fn install_zookeeper() -> io::Result<()> {
    let _in_process = INSTALL_LOCK.lock().unwrap_or_else(PoisonError::into_inner);
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .mode(0o666)
        .open(APT_LOCK)
        .map_err(|e| annotate(e, &format!("cannot open {APT_LOCK}")))?;
    flock_exclusive(&lock)?;
    // Another process may have installed it while we waited for the lock.
    if jars_present() {
        return Ok(());
    }
    if !APT_UPDATED.swap(true, Ordering::SeqCst) {
        // A failing update (e.g. one unreachable mirror) does not necessarily
        // prevent the install; its error is reported by the install if so.
        let _ = run_apt(&["update"]);
    }
    run_apt(&["install", "-y", "zookeeper"])?;
    if !jars_present() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "apt-get install zookeeper succeeded but {ZOOKEEPER_JAR} or {SLF4J_SIMPLE_JAR} \
                 is still missing"
            ),
        ));
    }
    Ok(())
    // `lock` is closed here, which releases the flock.
}

fn flock_exclusive(file: &File) -> io::Result<()> {
    loop {
        // SAFETY: flock on a valid, open file descriptor owned by `file`.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(annotate(err, &format!("cannot lock {APT_LOCK}")));
        }
    }
}

fn run_apt(args: &[&str]) -> io::Result<()> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut cmd = if root {
        Command::new("apt-get")
    } else {
        let mut c = Command::new("sudo");
        c.args(["-n", "apt-get"]);
        c
    };
    cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive").stdin(Stdio::null());
    let out = cmd.output().map_err(|e| {
        let how = if root { "apt-get" } else { "sudo -n apt-get" };
        annotate(e, &format!("cannot run `{how} {}`", args.join(" ")))
    })?;
    if out.status.success() {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "apt-get {} failed ({}): {}",
        args.join(" "),
        out.status,
        crate::util::tail_str(&String::from_utf8_lossy(&out.stderr), 15)
    )))
}

/// Checks once per process that `java -version` runs (see
/// [`ensure_zookeeper`]'s errors).
pub(crate) fn check_java() -> io::Result<()> {
    let res = JAVA_CHECK.get_or_init(|| {
        let java = java_command();
        match Command::new(&java).arg("-version").stdin(Stdio::null()).output() {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => Err((
                io::ErrorKind::Other,
                format!(
                    "`{} -version` failed ({}): {}",
                    java.to_string_lossy(),
                    out.status,
                    crate::util::tail_str(&String::from_utf8_lossy(&out.stderr), 10)
                ),
            )),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err((
                io::ErrorKind::NotFound,
                format!(
                    "java executable `{}` not found: install a Java 11+ runtime \
                     (e.g. apt-get install default-jre-headless) or set ZKLOCK_JAVA",
                    java.to_string_lossy()
                ),
            )),
            Err(e) => Err((e.kind(), format!("cannot run `{} -version`: {e}", java.to_string_lossy()))),
        }
    });
    match res {
        Ok(()) => Ok(()),
        Err((kind, msg)) => Err(io::Error::new(*kind, msg.clone())),
    }
}

/// Prefixes an error's message with context, keeping its kind.
pub(crate) fn annotate(e: io::Error, context: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{context}: {e}"))
}

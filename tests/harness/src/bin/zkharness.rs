//! `zkharness`: the zklock test harness as a command, for the C, Python and
//! Node test suites.
//!
//! ```text
//! zkharness install
//! zkharness serve [--ensemble N] [--proxy] [--tick-ms T] [--force-sync]
//!                 [--start-timeout-ms MS] [--partitionable] [--tls] [--cfg LINE]...
//!                 [--sasl USER:PASSWORD]... [--release NAME]
//! zkharness releases
//! ```
//!
//! `--release NAME` runs another ZooKeeper release than Debian's 3.8
//! (`ClusterOptions::release`): `3.5.10`, `3.6.4`, `3.7.2`, `3.9.5` (from
//! `scripts/install-zk-jars.sh`) or `debian-3.8`; one that is not installed
//! fails the start with the reason. `zkharness releases` prints one JSON
//! line per release: `{"release":"3.5.10","available":true}`, or
//! `"available":false` with `"reason"`.
//!
//! `--tls` makes every member also serve TLS (`ClusterOptions::tls`): the
//! hello line then has `"secure_connect"` (the TLS ports) and `"tls_dir"`
//! (the certificates: `ca.pem`, `other-ca.pem`, `client.pem`,
//! `client-key.pem`, `other-client.pem`, `other-client-key.pem`; see
//! `TestCerts`), both `null` otherwise. `--cfg LINE` appends a `zoo.cfg`
//! line (e.g. `--cfg ssl.clientAuth=need`). `--sasl USER:PASSWORD` lets
//! that user log in with SASL DIGEST-MD5 (`ClusterOptions::sasl_user`).
//!
//! `serve` starts the servers (and with `--proxy` one proxy per server; with
//! `--partitionable` an ensemble's members talk through relays, see
//! `ClusterOptions::partitionable`), then prints ONE JSON line on stdout, e.g.
//!
//! ```text
//! {"ok":true,"connect":"127.0.0.1:4001,...","proxied_connect":"127.0.0.1:5001,...",
//!  "dir":"/tmp/zklock-harness-...","servers":[{"index":0,"client_port":4001,
//!  "pid":123,"proxy_port":5001},...]}
//! ```
//!
//! (`proxied_connect` is `null` and `proxy_port` absent without `--proxy`; on
//! a start failure the line is `{"ok":false,"error":"..."}` and the exit code
//! 1). It then reads commands from stdin, one per line, and answers each with
//! one JSON line:
//!
//! | command               | answer                                   |
//! |-----------------------|------------------------------------------|
//! | `kill I`              | `{"ok":true}`                            |
//! | `freeze I`            | `{"ok":true}`                            |
//! | `resume I`            | `{"ok":true}`                            |
//! | `restart I`           | `{"ok":true,"pid":N}` (waits until serving) |
//! | `stop I`              | `{"ok":true}`                            |
//! | `leader`              | `{"ok":true,"leader":I}` or `"leader":null` |
//! | `wait-quorum [MS]`    | `{"ok":true,"leader":I}`                 |
//! | `pid I`               | `{"ok":true,"pid":N}` or `"pid":null`    |
//! | `4lw I WORD`          | `{"ok":true,"output":"..."}`             |
//! | `blackhole [I]`       | `{"ok":true}` (all proxies, or proxy I)  |
//! | `heal [I]`            | `{"ok":true}`                            |
//! | `drop-connections [I]`| `{"ok":true}`                            |
//! | `drop-create-reply [PREFIX]` | `{"ok":true}` (arms once, group-wide) |
//! | `dropped-replies`     | `{"ok":true,"count":N}`                  |
//! | `connections`         | `{"ok":true,"count":N}`                  |
//! | `partition I`         | `{"ok":true}` (cuts member I off from the others; needs `--partitionable`) |
//! | `heal-partition I`    | `{"ok":true}` (ends it; does not wait for I to serve) |
//! | `shutdown`            | `{"ok":true}` after everything is stopped; exits 0 |
//!
//! Errors answer `{"ok":false,"error":"..."}` (unknown command, bad index,
//! proxy command without `--proxy`, partition command without
//! `--partitionable`, ...). Empty lines are ignored.
//!
//! On `shutdown`, stdin EOF, SIGTERM, SIGINT or SIGHUP it kills and reaps
//! every server, closes the proxies, removes the temporary directory and
//! exits 0. If it is killed with SIGKILL, the servers die too
//! (`PR_SET_PDEATHSIG`), but their directory is left in the temp dir.

use std::io::{self, BufRead, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use zklock_harness::{ensure_zookeeper, Cluster, ClusterOptions, ProxyGroup, ServerRelease};

/// Set by the signal handler.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    SIGNALLED.store(true, Ordering::SeqCst);
}

const USAGE: &str = "usage:
  zkharness install
  zkharness serve [--ensemble N] [--proxy] [--tick-ms T] [--force-sync] [--start-timeout-ms MS]
                  [--partitionable] [--tls] [--cfg LINE]... [--sasl USER:PASSWORD]...
                  [--release 3.5.10|3.6.4|3.7.2|debian-3.8|3.9.5]
  zkharness releases
see the crate docs (tests/harness/src/bin/zkharness.rs) for the stdin protocol";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("install") if args.len() == 1 => match ensure_zookeeper() {
            Ok(()) => {
                println!("{{\"ok\":true}}");
                ExitCode::SUCCESS
            },
            Err(e) => {
                println!("{}", err_json(&e.to_string()));
                eprintln!("zkharness install: {e}");
                ExitCode::FAILURE
            },
        },
        Some("releases") if args.len() == 1 => {
            let mut out = io::stdout().lock();
            for (release, check) in ServerRelease::availability() {
                let name = json_str(release.name());
                let line = match check {
                    Ok(()) => format!("{{\"release\":{name},\"available\":true}}"),
                    Err(e) => {
                        format!("{{\"release\":{name},\"available\":false,\"reason\":{}}}", json_str(&e.to_string()))
                    },
                };
                // A closed stdout (e.g. `| head -1`) ends the listing.
                if writeln!(out, "{line}").is_err() {
                    break;
                }
            }
            ExitCode::SUCCESS
        },
        Some("serve") => match parse_serve(&args[1..]) {
            Ok(cfg) => serve(cfg),
            Err(msg) => {
                eprintln!("zkharness: {msg}\n{USAGE}");
                ExitCode::from(2)
            },
        },
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        },
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        },
    }
}

struct ServeConfig {
    opts: ClusterOptions,
    proxy: bool,
}

fn parse_serve(args: &[String]) -> Result<ServeConfig, String> {
    let mut opts = ClusterOptions::new();
    let mut proxy = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| -> Result<u64, String> {
            let v = it.next().ok_or_else(|| format!("{name} needs a value"))?;
            v.parse::<u64>().map_err(|_| format!("{name}: not a number: {v:?}"))
        };
        match a.as_str() {
            "--ensemble" => {
                let n = value("--ensemble")?;
                if n == 0 || n > 15 {
                    return Err("--ensemble must be between 1 and 15".into());
                }
                opts = opts.size(n as usize);
            },
            "--tick-ms" => {
                let t = value("--tick-ms")?;
                let t = u32::try_from(t).ok().filter(|&t| t > 0).ok_or("--tick-ms must be a positive 32-bit number")?;
                opts = opts.tick_time_ms(t);
            },
            "--start-timeout-ms" => {
                opts = opts.start_timeout(Duration::from_millis(value("--start-timeout-ms")?));
            },
            "--force-sync" => opts = opts.force_sync(true),
            "--proxy" => proxy = true,
            "--partitionable" => opts = opts.partitionable(true),
            "--tls" => opts = opts.tls(true),
            "--sasl" => {
                let login = it.next().ok_or("--sasl needs USER:PASSWORD")?;
                let (user, password) = login.split_once(':').ok_or("--sasl needs USER:PASSWORD")?;
                opts = opts.sasl_user(user, password);
            },
            "--release" => {
                let name = it.next().ok_or("--release needs a release name")?;
                opts = opts.release(name.parse::<ServerRelease>().map_err(|e| e.to_string())?);
            },
            "--cfg" => opts = opts.extra_cfg(it.next().ok_or("--cfg needs a zoo.cfg line")?.as_str()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(ServeConfig { opts, proxy })
}

fn install_signal_handlers() {
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic (async-signal-safe).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

enum Input {
    Line(String),
    Eof,
}

fn serve(cfg: ServeConfig) -> ExitCode {
    install_signal_handlers();
    let mut out = io::stdout().lock();

    let cluster = match Cluster::start(cfg.opts) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(out, "{}", err_json(&format!("cannot start ZooKeeper: {e}")));
            let _ = out.flush();
            return ExitCode::FAILURE;
        },
    };
    let proxies = if cfg.proxy {
        match ProxyGroup::for_cluster(&cluster) {
            Ok(p) => Some(p),
            Err(e) => {
                let _ = writeln!(out, "{}", err_json(&format!("cannot start proxies: {e}")));
                let _ = out.flush();
                return ExitCode::FAILURE;
            },
        }
    } else {
        None
    };
    let state = State { cluster, proxies };
    if writeln!(out, "{}", state.hello_json()).and_then(|()| out.flush()).is_err() {
        return ExitCode::SUCCESS; // Nobody is listening: clean up and leave.
    }

    let (tx, rx) = mpsc::channel::<Input>();
    // Detached: it may stay blocked in read() until the process exits.
    let reader = thread::Builder::new().name("zkharness-stdin".into()).spawn(move || {
        let stdin = io::stdin();
        for line in stdin.lock().lines() {
            match line {
                Ok(l) => {
                    if tx.send(Input::Line(l)).is_err() {
                        return;
                    }
                },
                Err(_) => break,
            }
        }
        let _ = tx.send(Input::Eof);
    });
    if reader.is_err() {
        let _ = writeln!(out, "{}", err_json("cannot start the stdin thread"));
        return ExitCode::FAILURE;
    }

    loop {
        if SIGNALLED.load(Ordering::SeqCst) {
            break;
        }
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Input::Line(line)) => {
                let line = line.trim();
                if line.is_empty() {
                    continue;
                }
                if line == "shutdown" {
                    drop(state);
                    let _ = writeln!(out, "{{\"ok\":true}}");
                    let _ = out.flush();
                    return ExitCode::SUCCESS;
                }
                let answer = state.command(line);
                if writeln!(out, "{answer}").and_then(|()| out.flush()).is_err() {
                    break;
                }
            },
            Ok(Input::Eof) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {},
        }
    }
    drop(state);
    ExitCode::SUCCESS
}

struct State {
    cluster: Cluster,
    proxies: Option<ProxyGroup>,
}

impl Drop for State {
    fn drop(&mut self) {
        // Proxies first (they point at the servers), then the cluster.
        self.proxies = None;
    }
}

impl State {
    fn hello_json(&self) -> String {
        let c = &self.cluster;
        let servers: Vec<String> = (0..c.len())
            .map(|i| {
                let proxy = self
                    .proxies
                    .as_ref()
                    .and_then(|p| p.proxy(i))
                    .map(|p| format!(",\"proxy_port\":{}", p.addr().port()))
                    .unwrap_or_default();
                format!(
                    "{{\"index\":{i},\"client_port\":{},\"pid\":{}{proxy}}}",
                    c.client_addr(i).port(),
                    opt_json(c.pid(i))
                )
            })
            .collect();
        format!(
            "{{\"ok\":true,\"connect\":{},\"proxied_connect\":{},\"secure_connect\":{},\"tls_dir\":{},\"dir\":{},\"servers\":[{}]}}",
            json_str(&c.connect_string()),
            self.proxies.as_ref().map_or_else(|| "null".to_string(), |p| json_str(&p.connect_string())),
            c.tls_certs().map_or_else(|| "null".to_string(), |_| json_str(&c.secure_connect_string())),
            c.tls_certs().map_or_else(|| "null".to_string(), |t| json_str(&t.dir().to_string_lossy())),
            json_str(&c.dir().to_string_lossy()),
            servers.join(",")
        )
    }

    fn proxies(&self) -> Result<&ProxyGroup, String> {
        self.proxies.as_ref().ok_or_else(|| "no proxies: start with --proxy".to_string())
    }

    /// Runs one command line; returns the JSON answer.
    fn command(&self, line: &str) -> String {
        match self.try_command(line) {
            Ok(extra) => format!("{{\"ok\":true{extra}}}"),
            Err(e) => err_json(&e),
        }
    }

    /// Ok(extra JSON members, each starting with a comma) or Err(message).
    fn try_command(&self, line: &str) -> Result<String, String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let c = &self.cluster;
        let index = |k: usize| -> Result<usize, String> {
            let w = words.get(k).ok_or_else(|| format!("{}: missing server index", words[0]))?;
            let i: usize = w.parse().map_err(|_| format!("bad server index {w:?}"))?;
            if i >= c.len() {
                return Err(format!("no server {i}: there are {}", c.len()));
            }
            Ok(i)
        };
        let opt_index = |k: usize| -> Result<Option<usize>, String> {
            if words.len() > k {
                index(k).map(Some)
            } else {
                Ok(None)
            }
        };
        let io = |r: io::Result<()>| r.map(|()| String::new()).map_err(|e| e.to_string());
        match words[0] {
            "kill" => io(c.kill(index(1)?)),
            "freeze" => io(c.freeze(index(1)?)),
            "resume" => io(c.resume(index(1)?)),
            "stop" => io(c.stop(index(1)?)),
            "restart" => {
                let i = index(1)?;
                c.restart(i).map_err(|e| e.to_string())?;
                Ok(format!(",\"pid\":{}", opt_json(c.pid(i))))
            },
            "pid" => Ok(format!(",\"pid\":{}", opt_json(c.pid(index(1)?)))),
            "leader" => Ok(format!(",\"leader\":{}", opt_json(c.leader()))),
            "wait-quorum" => {
                let ms = match words.get(1) {
                    Some(w) => w.parse::<u64>().map_err(|_| format!("bad timeout {w:?}"))?,
                    None => 30_000,
                };
                let l = c.wait_quorum(Duration::from_millis(ms)).map_err(|e| e.to_string())?;
                Ok(format!(",\"leader\":{l}"))
            },
            "4lw" => {
                let i = index(1)?;
                let word = words.get(2).ok_or("4lw: missing word")?;
                let output = c.four_letter(i, word).map_err(|e| e.to_string())?;
                Ok(format!(",\"output\":{}", json_str(&output)))
            },
            "blackhole" | "heal" | "drop-connections" => {
                let g = self.proxies()?;
                let targets: Vec<&zklock_harness::Proxy> = match opt_index(1)? {
                    Some(i) => g.proxy(i).into_iter().collect(),
                    None => g.proxies().iter().collect(),
                };
                for p in targets {
                    match words[0] {
                        "blackhole" => p.blackhole(),
                        "heal" => p.heal(),
                        _ => p.drop_connections(),
                    }
                }
                Ok(String::new())
            },
            "drop-create-reply" => {
                let g = self.proxies()?;
                match words.get(1) {
                    Some(prefix) => g.drop_next_create_reply_matching(prefix),
                    None => g.drop_next_create_reply(),
                }
                Ok(String::new())
            },
            "dropped-replies" => Ok(format!(",\"count\":{}", self.proxies()?.dropped_replies())),
            "connections" => Ok(format!(",\"count\":{}", self.proxies()?.connections())),
            "partition" => io(c.partition(index(1)?)),
            "heal-partition" => io(c.heal_partition(index(1)?)),
            other => Err(format!("unknown command {other:?}")),
        }
    }
}

fn opt_json<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "null".to_string(), |v| v.to_string())
}

fn err_json(msg: &str) -> String {
    format!("{{\"ok\":false,\"error\":{}}}", json_str(msg))
}

/// A JSON string literal for `s`.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            },
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

//! Tests of the `zkharness` binary.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use zklock_harness::{four_letter_word, process_alive};

struct Harness {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    hello: String,
}

fn spawn(args: &[&str]) -> Harness {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zkharness"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn zkharness");
    let stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut hello = String::new();
    stdout.read_line(&mut hello).expect("hello line");
    assert!(hello.starts_with("{\"ok\":true,"), "{hello}");
    Harness { child, stdin: Some(stdin), stdout, hello }
}

impl Harness {
    fn cmd(&mut self, line: &str) -> String {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("write command");
        stdin.flush().expect("flush");
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).expect("answer");
        answer.trim().to_string()
    }

    fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                return st;
            }
            assert!(Instant::now() < deadline, "zkharness did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Values of every `"key":<number>` in `json`.
fn numbers(json: &str, key: &str) -> Vec<u64> {
    let pat = format!("\"{key}\":");
    json.match_indices(&pat)
        .filter_map(|(i, _)| {
            let rest = &json[i + pat.len()..];
            let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
            rest[..end].parse().ok()
        })
        .collect()
}

fn string(json: &str, key: &str) -> Option<String> {
    let pat = format!("\"{key}\":\"");
    let i = json.find(&pat)? + pat.len();
    let end = json[i..].find('"')?;
    Some(json[i..i + end].to_string())
}

fn wait_gone(pid: u32) -> bool {
    zklock_harness::wait_for(Duration::from_secs(5), || !process_alive(pid))
}

#[test]
fn serve_commands_and_shutdown() {
    let mut h = spawn(&["serve", "--proxy", "--tick-ms", "200"]);
    let pids: Vec<u32> = numbers(&h.hello, "pid").into_iter().map(|p| p as u32).collect();
    assert_eq!(pids.len(), 1, "{}", h.hello);
    assert!(process_alive(pids[0]));
    let connect = string(&h.hello, "connect").expect("connect");
    let proxied = string(&h.hello, "proxied_connect").expect("proxied_connect");
    let dir = string(&h.hello, "dir").expect("dir");
    let direct_addr = connect.parse().expect("addr");
    let proxy_addr = proxied.parse().expect("addr");
    assert_eq!(four_letter_word(direct_addr, "ruok", Duration::from_secs(5)).expect("ruok"), "imok");
    assert_eq!(four_letter_word(proxy_addr, "ruok", Duration::from_secs(5)).expect("ruok"), "imok");

    assert_eq!(h.cmd("leader"), "{\"ok\":true,\"leader\":0}");
    assert_eq!(h.cmd("4lw 0 ruok"), "{\"ok\":true,\"output\":\"imok\"}");
    assert!(h.cmd("4lw 0 srvr").contains("Mode: standalone\\n"));
    assert!(h.cmd("4lw 7 ruok").starts_with("{\"ok\":false,\"error\":"));
    assert!(h.cmd("frobnicate").starts_with("{\"ok\":false,\"error\":"));
    // Not started with --partitionable.
    assert!(h.cmd("partition 0").starts_with("{\"ok\":false,\"error\":"));
    // Empty lines are ignored (no answer).
    writeln!(h.stdin.as_mut().expect("stdin")).expect("empty line");
    assert_eq!(h.cmd("leader"), "{\"ok\":true,\"leader\":0}");
    assert_eq!(h.cmd("drop-create-reply /locks/"), "{\"ok\":true}");
    assert_eq!(h.cmd("dropped-replies"), "{\"ok\":true,\"count\":0}");
    assert_eq!(h.cmd("blackhole"), "{\"ok\":true}");
    assert!(four_letter_word(proxy_addr, "ruok", Duration::from_millis(300)).is_err());
    assert_eq!(h.cmd("heal"), "{\"ok\":true}");
    assert_eq!(h.cmd("drop-connections"), "{\"ok\":true}");
    assert_eq!(h.cmd("freeze 0"), "{\"ok\":true}");
    assert_eq!(h.cmd("leader"), "{\"ok\":true,\"leader\":null}");
    assert_eq!(h.cmd("resume 0"), "{\"ok\":true}");
    assert_eq!(h.cmd("kill 0"), "{\"ok\":true}");
    assert!(wait_gone(pids[0]));
    assert_eq!(h.cmd("pid 0"), "{\"ok\":true,\"pid\":null}");
    let restarted = h.cmd("restart 0");
    let new_pid = numbers(&restarted, "pid");
    assert_eq!(new_pid.len(), 1, "{restarted}");
    let new_pid = new_pid[0] as u32;
    assert!(process_alive(new_pid));

    assert_eq!(h.cmd("shutdown"), "{\"ok\":true}");
    let status = h.wait_exit();
    assert!(status.success(), "{status}");
    assert!(!process_alive(new_pid), "server survived shutdown");
    assert!(!std::path::Path::new(&dir).exists(), "{dir} left behind");
}

#[test]
fn serve_partitionable_ensemble() {
    let mut h = spawn(&["serve", "--ensemble", "3", "--partitionable", "--tick-ms", "200"]);
    assert_eq!(numbers(&h.hello, "pid").len(), 3, "{}", h.hello);
    let serving = |h: &mut Harness| h.cmd("4lw 0 srvr").contains("Mode: ");
    assert!(serving(&mut h));
    assert!(h.cmd("partition 3").starts_with("{\"ok\":false,\"error\":"));
    assert_eq!(h.cmd("partition 0"), "{\"ok\":true}");
    // Follower or leader, member 0 gives up after syncLimit (5) ticks.
    assert!(
        zklock_harness::wait_for(Duration::from_secs(10), || !serving(&mut h)),
        "member 0 still serving while partitioned"
    );
    let quorum = h.cmd("wait-quorum 10000");
    assert!(quorum.starts_with("{\"ok\":true,\"leader\":"), "{quorum}");
    assert_eq!(h.cmd("heal-partition 0"), "{\"ok\":true}");
    assert!(zklock_harness::wait_for(Duration::from_secs(20), || serving(&mut h)), "member 0 not serving after heal");
    assert_eq!(h.cmd("shutdown"), "{\"ok\":true}");
    assert!(h.wait_exit().success());
}

#[test]
fn sigterm_and_stdin_eof_stop_everything() {
    // SIGTERM.
    let mut h = spawn(&["serve"]);
    let pid = numbers(&h.hello, "pid")[0] as u32;
    assert!(h.hello.contains("\"proxied_connect\":null"), "{}", h.hello);
    // SAFETY: plain kill(2) on our own child.
    let rc = unsafe { libc::kill(h.child.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let status = h.wait_exit();
    assert!(status.success(), "{status}");
    assert!(!process_alive(pid));

    // stdin EOF.
    let mut h = spawn(&["serve"]);
    let pid = numbers(&h.hello, "pid")[0] as u32;
    drop(h.stdin.take());
    let status = h.wait_exit();
    assert!(status.success(), "{status}");
    assert!(!process_alive(pid));
}

#[test]
fn sigkill_of_the_harness_kills_the_servers() {
    let mut h = spawn(&["serve"]);
    let pid = numbers(&h.hello, "pid")[0] as u32;
    let dir = string(&h.hello, "dir").expect("dir");
    h.child.kill().expect("SIGKILL zkharness");
    h.child.wait().expect("reap zkharness");
    // PR_SET_PDEATHSIG: the server dies with its parent.
    assert!(wait_gone(pid), "server {pid} outlived a SIGKILLed zkharness");
    // The directory is left behind in that case; clean it up.
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_arguments() {
    let out =
        Command::new(env!("CARGO_BIN_EXE_zkharness")).args(["serve", "--ensemble", "zero"]).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(env!("CARGO_BIN_EXE_zkharness")).arg("install").output().expect("run");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "{\"ok\":true}");
}

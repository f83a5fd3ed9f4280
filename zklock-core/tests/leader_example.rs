//! The leader example (`examples/leader.rs`) run as a program: three
//! instances, the leader is killed with SIGKILL, another one takes over
//! through the expiry of the dead leader's session, with a larger fencing
//! token.
//!
//! The example binary is the one `cargo test` builds next to the tests
//! (`target/<profile>/examples/leader`); `cargo test --test leader_example`
//! alone does not build examples, so build it first there
//! (`cargo build -p zklock-core --example leader`).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zklock_core::{Client, ClientOptions};

const SESSION_MS: u64 = 2000;

fn example_binary() -> PathBuf {
    // target/<profile>/deps/leader_example-<hash> -> target/<profile>/examples/leader
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>");
    let bin = profile_dir.join("examples").join("leader");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build -p zklock-core --example leader` (plain `cargo test` builds it)",
        bin.display()
    );
    bin
}

struct Instance {
    id: String,
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Instance {
    fn start(bin: &PathBuf, hosts: &str, id: &str) -> Instance {
        let mut child = Command::new(bin)
            .args([hosts, id, &SESSION_MS.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the leader example starts");
        let out = child.stdout.take().expect("piped stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                sink.lock().expect("lines lock").push(line);
            }
        });
        Instance { id: id.to_owned(), child, lines }
    }

    fn output(&self) -> Vec<String> {
        self.lines.lock().expect("lines lock").clone()
    }

    /// Tokens of the "is leader" lines, in order.
    fn leaderships(&self) -> Vec<u64> {
        let prefix = format!("instance {} is leader (token ", self.id);
        self.output().iter().filter_map(|l| l.strip_prefix(&prefix)?.strip_suffix(')')?.parse().ok()).collect()
    }

    fn printed(&self, text: &str) -> bool {
        self.output().iter().any(|l| l == text)
    }

    /// Sends "quit"; the exit code (the process is killed after 15 s).
    fn quit(&mut self) -> Option<i32> {
        if let Some(stdin) = self.child.stdin.as_mut() {
            let _ = writeln!(stdin, "quit");
        }
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return status.code(),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return None;
                },
            }
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out after {limit:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn leader_example_takeover_after_sigkill() {
    let bin = example_binary();
    zklock_harness::ensure_zookeeper().expect("ZooKeeper installed");
    let cluster = zklock_harness::Cluster::standalone().expect("server starts");
    let hosts = cluster.connect_string();
    let mut instances: Vec<Instance> = (0..3).map(|i| Instance::start(&bin, &hosts, &format!("rs-{i}"))).collect();

    let claims = |list: &[&Instance]| -> Vec<(usize, u64)> {
        list.iter().enumerate().flat_map(|(i, inst)| inst.leaderships().into_iter().map(move |t| (i, t))).collect()
    };
    let all: Vec<&Instance> = instances.iter().collect();
    wait_until("a leader", Duration::from_secs(30), || !claims(&all).is_empty());
    let (leader, token) = claims(&all)[0];
    let leader_id = instances[leader].id.clone();
    wait_until("the leader to poll", Duration::from_secs(10), || {
        instances[leader].printed(&format!("leader {leader_id} polling tasks (token {token})"))
    });
    for inst in instances.iter().filter(|i| i.id != leader_id) {
        wait_until("the others to wait", Duration::from_secs(30), || {
            inst.printed(&format!("instance {} waiting to lead", inst.id))
        });
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(claims(&all).len(), 1, "exactly one leader among 3 instances");
    drop(all);

    // SIGKILL: the leader cannot release; the takeover comes from session expiry.
    let mut dead = instances.remove(leader);
    dead.child.kill().expect("SIGKILL the leader");
    dead.child.wait().expect("reap the leader");
    let killed = Instant::now();
    let others: Vec<&Instance> = instances.iter().collect();
    // A liveness bound (session timeout + 10 s), not a speed check.
    wait_until("a new leader", Duration::from_millis(SESSION_MS) + Duration::from_secs(10), || {
        !claims(&others).is_empty()
    });
    let (next, next_token) = claims(&others)[0];
    let next_id = others[next].id.clone();
    println!(
        "leader {leader_id} (token {token}) killed; {next_id} took over after {:.1} s (token {next_token})",
        killed.elapsed().as_secs_f64()
    );
    assert!(next_token > token, "new token {next_token} must be above {token}");
    wait_until("the new leader to poll", Duration::from_secs(10), || {
        others[next].printed(&format!("leader {next_id} polling tasks (token {next_token})"))
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(claims(&others).len(), 1, "exactly one new leader");
    drop(others);

    // "quit": the survivors hand over or stop waiting, and exit 0.
    for inst in &mut instances {
        assert_eq!(inst.quit(), Some(0), "{} exit code", inst.id);
    }
    for inst in &instances {
        assert_eq!(inst.output().last().map(String::as_str), Some(format!("instance {} exiting", inst.id).as_str()));
    }
    let client = Client::connect(ClientOptions::new(&hosts)).expect("client connects");
    wait_until("no node left", Duration::from_secs(15), || {
        client.participants("/examples/scheduler/leader").map(|p| p.is_empty()).unwrap_or(false)
    });
    client.close();
}

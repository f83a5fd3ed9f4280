//! `make demo`: a private ZooKeeper and several OS processes taking turns on
//! one lock, each printing when it holds the lock and with which fencing
//! token.
//!
//! Run without arguments it starts the server (through the test harness),
//! spawns the workers (this same program with `worker ...` arguments),
//! checks that the tokens it saw only grew, and stops the server.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use zklock_core::{Client, ClientOptions, LockOptions, LockMode};

const LOCK_PATH: &str = "/demo/nightly-job";

fn worker(hosts: &str, id: usize, rounds: usize) -> Result<(), zklock_core::Error> {
    let client = Client::connect(ClientOptions::new(hosts).session_timeout(Duration::from_secs(4)))?;
    let lock = client.lock_with(LOCK_PATH, LockMode::Exclusive, LockOptions::default().identify_process())?;
    for round in 1..=rounds {
        let started = Instant::now();
        let guard = lock.acquire(Some(Duration::from_secs(60)))?;
        let waited = started.elapsed();
        println!(
            "HOLD worker={id} pid={} round={round} token={} node={} waited_ms={}",
            std::process::id(),
            guard.fencing_token(),
            guard.node_path().rsplit('/').next().unwrap_or_default(),
            waited.as_millis()
        );
        // The "work": check that the lock is still safely held, then sleep.
        std::thread::sleep(Duration::from_millis(150));
        guard.check()?;
        guard.release()?;
    }
    client.close();
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("worker") {
        let hosts = args.get(2).cloned().unwrap_or_default();
        let id = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(0);
        let rounds = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(3);
        if let Err(e) = worker(&hosts, id, rounds) {
            eprintln!("worker {id}: {e}");
            std::process::exit(1);
        }
        return;
    }
    if let Err(e) = run() {
        eprintln!("demo failed: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let workers = 4;
    let rounds = 3;
    zklock_harness::ensure_zookeeper()?;
    println!("starting a private ZooKeeper server...");
    let cluster = zklock_harness::Cluster::standalone()?;
    let hosts = cluster.connect_string();
    println!("ZooKeeper at {hosts}; {workers} processes take the lock {LOCK_PATH} {rounds} times each\n");
    let me = std::env::current_exe()?;
    let mut children = Vec::new();
    for id in 1..=workers {
        let child = Command::new(&me)
            .args(["worker", &hosts, &id.to_string(), &rounds.to_string()])
            .stdout(Stdio::piped())
            .spawn()?;
        children.push(child);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    for child in &mut children {
        let out = child.stdout.take().ok_or("worker has no stdout")?;
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
    }
    drop(tx);
    let mut last_token = 0u64;
    let mut grants = 0;
    for line in rx {
        println!("{line}");
        if let Some(t) = line.split_whitespace().find_map(|w| w.strip_prefix("token=")) {
            let token: u64 = t.parse()?;
            if token <= last_token {
                return Err(format!("fencing token went backwards: {token} after {last_token}").into());
            }
            last_token = token;
            grants += 1;
        }
    }
    for mut child in children {
        if !child.wait()?.success() {
            return Err("a worker failed".into());
        }
    }
    println!("\n{grants} grants, fencing tokens strictly increasing; stopping ZooKeeper.");
    drop(cluster);
    Ok(())
}

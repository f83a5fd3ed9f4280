//! A leader-style task with zklock: several scheduler nodes run this same
//! program and join the election `/examples/scheduler/leader`
//! ([`Client::election`], Curator `LeaderLatch` layout); the leader polls
//! task status every 200 ms, the others wait in `acquire`. When the leader
//! dies, its session expires and another instance takes over within the
//! session timeout. Typing `quit` (a line on stdin) resigns at once and
//! exits.
//!
//! ```sh
//! cargo run -p zklock-core --example leader -- 127.0.0.1:2181 node-1 [SESSION_TIMEOUT_MS]
//! ```
//!
//! It prints, one line each:
//!
//! ```text
//! instance ID waiting to lead
//! instance ID is leader (token N)
//! leader ID polling tasks (token N)        every 200 ms while leading
//! instance ID stopped leading: REASON      lock lost or suspended
//! instance ID exiting
//! ```
//!
//! The fencing token N grows with every change of leader: give it to
//! whatever the leader writes to, so that a deposed leader that did not
//! notice in time (paused, partitioned) is refused there.

use std::io::BufRead;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zklock_core::{Client, ClientOptions, ErrorKind};

const LEADER_PATH: &str = "/examples/scheduler/leader";
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// The leader's work; a real scheduler reads task states here and writes
/// with the token.
fn poll_tasks(id: &str, token: u64) {
    println!("leader {id} polling tasks (token {token})");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 || args.len() > 4 {
        eprintln!("usage: leader HOSTS ID [SESSION_TIMEOUT_MS]");
        std::process::exit(2);
    }
    let session_ms = match args.get(3).map(|s| s.parse::<u64>()) {
        None => 10_000,
        Some(Ok(ms)) if ms > 0 => ms,
        Some(_) => {
            eprintln!("SESSION_TIMEOUT_MS must be a positive number");
            std::process::exit(2);
        },
    };
    if let Err(e) = run(&args[1], &args[2], Duration::from_millis(session_ms)) {
        eprintln!("instance {}: {e}", args[2]);
        std::process::exit(1);
    }
}

fn run(hosts: &str, id: &str, session_timeout: Duration) -> Result<(), zklock_core::Error> {
    let client = Client::connect(ClientOptions::new(hosts).session_timeout(session_timeout))?;
    // Our participant, with our id in its node: acquiring it waits until we lead.
    let lock = client.election(LEADER_PATH, format!("scheduler {id}"))?;

    // A line "quit" on stdin: stop waiting, or stop leading and hand over.
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        let cancel = lock.cancel_handle();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines().map_while(Result::ok) {
                if line.trim() == "quit" {
                    stop.store(true, Ordering::SeqCst);
                    // Repeated: a cancel only ends an acquire already waiting.
                    for _ in 0..200 {
                        cancel.cancel();
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    return;
                }
            }
        });
    }

    while !stop.load(Ordering::SeqCst) {
        println!("instance {id} waiting to lead");
        let guard = match lock.acquire(None) {
            Ok(g) => g,
            Err(e) if e.kind() == ErrorKind::Cancelled => break,
            Err(e) => {
                // e.g. no connection: try again a little later
                eprintln!("instance {id}: acquire: {e}");
                std::thread::sleep(Duration::from_secs(1));
                continue;
            },
        };
        let token = guard.fencing_token();
        println!("instance {id} is leader (token {token})");
        while !stop.load(Ordering::SeqCst) {
            // Before each round of work: still safely the leader?
            if let Err(e) = guard.check() {
                println!("instance {id} stopped leading: {}", e.kind());
                break;
            }
            poll_tasks(id, token);
            std::thread::sleep(POLL_INTERVAL);
        }
        // Hand over (a lost lock answers LockLost here: nothing to do).
        let _ = guard.release();
    }
    client.close();
    println!("instance {id} exiting");
    Ok(())
}

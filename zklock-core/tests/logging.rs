//! The core's log records (`zklock_core::logging`): a connect, a lost
//! connection and its return, a re-queue and a background cleanup are each
//! told once, with the session id and lock path they concern, through the
//! sink a binding installs.

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{connect, options, queue, server, wait_until, Raw};
use zklock_core::logging::{set_log_sink, LogRecord};
use zklock_core::Client;
use zklock_harness::Proxy;

const SEC: Duration = Duration::from_secs(1);

#[test]
fn connects_suspensions_reconnects_and_requeues_are_logged_with_session_and_path() {
    let records: Arc<Mutex<Vec<LogRecord>>> = Arc::default();
    let sink = records.clone();
    set_log_sink(log::LevelFilter::Info, move |r| sink.lock().unwrap().push(r)).unwrap();
    let seen = |level: log::Level, parts: &[&str]| {
        records.lock().unwrap().iter().any(|r| r.level == level && parts.iter().all(|p| r.message.contains(p)))
    };

    let zk = server();
    let hosts = zk.connect_string();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let c = Client::connect(options(&proxy.addr().to_string(), 4 * SEC)).unwrap();
    let session = format!("{:#x}", c.session_id().unwrap());
    wait_until("the connect is logged", 5 * SEC, || seen(log::Level::Info, &["connected to", &session]));
    assert!(records.lock().unwrap().iter().all(|r| !r.message.starts_with("zklock: ")), "prefix left in");

    // A lost connection (warning) and its return (info), while a lock is held.
    let held = c.lock("/logged").unwrap().acquire(Some(10 * SEC)).unwrap();
    proxy.drop_connections();
    wait_until("the lost connection is logged", 10 * SEC, || {
        seen(log::Level::Warn, &["lost its connection", &session])
    });
    wait_until("the reconnect is logged", 10 * SEC, || seen(log::Level::Info, &["reconnected", &session]));
    held.release().unwrap();

    // A waiter whose node a third party deletes queues again (when its
    // blocker goes: a wait keeps no watch on its own node): logged with its
    // node's path.
    let other = connect(&hosts);
    let blocker = other.lock("/logged").unwrap().acquire(Some(10 * SEC)).unwrap();
    let lock = c.lock("/logged").unwrap();
    let waiting = std::thread::spawn(move || lock.acquire(Some(20 * SEC)).map(|g| g.release()));
    wait_until("c queued", 10 * SEC, || queue(&other, "/logged").len() == 2);
    let raw = Raw::connect(&hosts);
    let victim = raw.children("/logged").into_iter().find(|n| !blocker.node_path().ends_with(n.as_str())).unwrap();
    raw.delete(&format!("/logged/{victim}"));
    blocker.release().unwrap();
    wait_until("the re-queue is logged", 10 * SEC, || seen(log::Level::Info, &["queueing again", &victim, &session]));
    waiting.join().unwrap().unwrap().unwrap();

    // Nothing below the level asked for.
    set_log_sink(log::LevelFilter::Warn, |_| {}).unwrap();
    assert!(!log::log_enabled!(log::Level::Info));
}

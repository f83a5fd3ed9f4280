//! Connection listeners (`Client::on_connection_state`) and taking back
//! callbacks (`Subscription::cancel`): a lost connection and its return,
//! an expired session and the new one, each told once in order; a
//! cancelled callback is not called again.

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{options, server, wait_until};
use zklock_core::{Client, ConnectionState, LockState};
use zklock_harness::Proxy;

const SEC: Duration = Duration::from_secs(1);

#[test]
fn connection_changes_are_told_in_order_and_a_cancelled_listener_hears_no_more() {
    let zk = server();
    let proxy = Proxy::start(zk.client_addr(0)).unwrap();
    let c = Client::connect(options(&proxy.addr().to_string(), 2 * SEC)).unwrap();
    let seen: Arc<Mutex<Vec<ConnectionState>>> = Arc::default();
    let s = seen.clone();
    let sub = c.on_connection_state(move |st| s.lock().unwrap().push(st));
    let lock_states: Arc<Mutex<Vec<LockState>>> = Arc::default();
    let held = c.lock("/listened").unwrap().acquire(Some(5 * SEC)).unwrap();
    let ls = lock_states.clone();
    let lock_sub = held.on_state_change(move |st| ls.lock().unwrap().push(st));

    // A dropped connection: suspended, then back with the same session.
    proxy.drop_connections();
    wait_until("reconnected", 10 * SEC, || seen.lock().unwrap().contains(&ConnectionState::Reconnected));
    assert_eq!(seen.lock().unwrap()[..], [ConnectionState::Suspended, ConnectionState::Reconnected]);
    wait_until("the lock told too", 10 * SEC, || lock_states.lock().unwrap().contains(&LockState::Suspended));

    // The lock's callback taken back: the loss below is not told to it.
    lock_sub.cancel();
    lock_sub.cancel();
    let told_lock = lock_states.lock().unwrap().len();

    // Silence past the session: lost, then a new session.
    proxy.blackhole();
    wait_until("suspended again", 10 * SEC, || seen.lock().unwrap().len() >= 3);
    std::thread::sleep(4 * SEC);
    proxy.heal();
    wait_until("a new session", 20 * SEC, || seen.lock().unwrap().contains(&ConnectionState::Connected));
    assert_eq!(
        seen.lock().unwrap()[2..],
        [ConnectionState::Suspended, ConnectionState::Lost, ConnectionState::Connected],
        "{:?}",
        seen.lock().unwrap()
    );
    wait_until("the lock is lost", 10 * SEC, || held.state() == LockState::Lost);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(lock_states.lock().unwrap().len(), told_lock, "a cancelled lock callback was called");

    // The connection listener taken back: nothing more.
    sub.cancel();
    let told = seen.lock().unwrap().len();
    proxy.drop_connections();
    std::thread::sleep(2 * SEC);
    assert_eq!(seen.lock().unwrap().len(), told, "a cancelled listener was called");
    assert_eq!(ConnectionState::Lost.name(), "LOST");
}

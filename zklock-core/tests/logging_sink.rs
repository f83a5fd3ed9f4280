//! Replacing a log sink (`zklock_core::logging::set_log_sink`, found by an
//! outside tester): the call waits for a call of the old sink in progress
//! and only then lets the new one in; records queued under a lower level
//! than the new sink's are not handed to it.

#![allow(clippy::unwrap_used)] // tests assert by panicking

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zklock_core::logging::set_log_sink;

#[test]
fn a_new_sink_waits_for_the_old_ones_call_and_gets_nothing_queued_below_its_level() {
    let (entered_tx, entered_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let go_rx = Mutex::new(go_rx);
    set_log_sink(log::LevelFilter::Info, move |r| {
        if r.message == "block" {
            entered_tx.send(()).unwrap();
            go_rx.lock().unwrap().recv().unwrap();
        }
    })
    .unwrap();
    log::info!("block");
    entered_rx.recv_timeout(Duration::from_secs(5)).expect("the old sink is in a call");
    log::info!("queued at info while the old sink was busy");

    let got: Arc<Mutex<Vec<String>>> = Arc::default();
    let g = got.clone();
    let replacing =
        std::thread::spawn(move || set_log_sink(log::LevelFilter::Warn, move |r| g.lock().unwrap().push(r.message)));
    std::thread::sleep(Duration::from_millis(300));
    assert!(!replacing.is_finished(), "set_log_sink returned while the old sink was still in its call");
    assert!(got.lock().unwrap().is_empty(), "the new sink was called before set_log_sink returned");
    go_tx.send(()).unwrap();
    replacing.join().unwrap().unwrap();

    std::thread::sleep(Duration::from_millis(200));
    assert!(got.lock().unwrap().is_empty(), "the new sink got a record queued below its level: {:?}", got);
    log::warn!("after");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !got.lock().unwrap().iter().any(|m| m == "after") {
        assert!(std::time::Instant::now() < deadline, "the new sink never got the warning");
        std::thread::sleep(Duration::from_millis(10));
    }
}

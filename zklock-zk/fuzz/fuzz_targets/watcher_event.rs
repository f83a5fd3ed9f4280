//! A watch notification's body: decodes or says why not; a decoded path
//! is no longer than the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zklock_zk::codec::records::WatcherEvent;

fuzz_target!(|data: &[u8]| {
    if let Ok(e) = WatcherEvent::decode(data) {
        assert_eq!(e.path.len() + 12, data.len());
    }
});

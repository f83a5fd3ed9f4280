//! The server's answer to a connect request: decodes or says why not; what
//! decodes encodes back to the same record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zklock_zk::codec::records::ConnectResponse;

fuzz_target!(|data: &[u8]| {
    let Ok(c) = ConnectResponse::decode(data) else { return };
    assert!(c.password.len() <= data.len());
    let mut again = Vec::new();
    c.encode(&mut again);
    assert_eq!(ConnectResponse::decode(&again).as_ref(), Ok(&c));
});

//! A stream of reply frames as the session reads it: the length prefix
//! against several packet limits, then each whole frame's header, then its
//! body as the reply to an opcode chosen by the header's xid.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zklock_zk::codec::frame::{next_frame, DEFAULT_MAX_FRAME};
use zklock_zk::codec::records::ReplyHeader;

mod common;

fuzz_target!(|data: &[u8]| {
    for max in [0, 16, 4096, DEFAULT_MAX_FRAME, usize::MAX] {
        match next_frame(data, max) {
            Ok(Some(n)) => assert!(n <= max && 4 + n <= data.len()),
            Ok(None) => {},
            Err(e) => assert!(e.len < 0 || e.len as usize > max),
        }
    }
    let mut rest = data;
    while let Ok(Some(n)) = next_frame(rest, DEFAULT_MAX_FRAME) {
        let frame = &rest[4..4 + n];
        if let Ok((h, body)) = ReplyHeader::split(frame) {
            assert_eq!(body.len() + ReplyHeader::WIRE_LEN, frame.len());
            let opcode = common::OPCODES[h.xid.unsigned_abs() as usize % common::OPCODES.len()];
            common::check_reply(opcode, body);
        }
        rest = &rest[4 + n..];
    }
});

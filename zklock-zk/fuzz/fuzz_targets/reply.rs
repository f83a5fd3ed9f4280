//! A reply body, as the answer to the opcode its first byte chooses (every
//! opcode zklock sends).
#![no_main]

use libfuzzer_sys::fuzz_target;

mod common;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else { return };
    let opcode = common::OPCODES[pick as usize % common::OPCODES.len()];
    common::check_reply(opcode, body);
});

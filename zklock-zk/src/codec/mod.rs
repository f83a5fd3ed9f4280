//! The wire format, apart from any I/O: jute values, records, frames and
//! the protocol's numbers. Everything here is pure and is fuzzed
//! (`tests/codec_props.rs`): no input makes it panic or allocate more than
//! the frame it reads.

pub mod frame;
pub mod jute;
pub mod ops;
pub mod records;

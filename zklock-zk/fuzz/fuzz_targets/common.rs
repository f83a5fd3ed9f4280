//! What every target checks of a decoded reply: nothing in it is longer
//! than the bytes it came from (no allocation out of proportion to the
//! input).

use zklock_zk::codec::ops::op;
use zklock_zk::codec::records::{MultiResult, Response};

/// Every opcode a reply can answer (`op::ALL`).
pub const OPCODES: &[i32] = op::ALL;

/// Decodes `body` as the reply to `opcode` and checks the result's sizes.
pub fn check_reply(opcode: i32, body: &[u8]) {
    let Ok(r) = Response::decode(opcode, body) else { return };
    let (n, cap) = match &r {
        Response::Empty | Response::Stat(_) | Response::Multi(Err(_)) => (0, 0),
        Response::Created { path, .. } | Response::Path(path) => (path.len(), 0),
        Response::Data { data, .. } | Response::Sasl(data) => (data.len(), 0),
        Response::Children(c) | Response::Children2 { children: c, .. } => {
            (c.len() + c.iter().map(String::len).sum::<usize>(), c.len())
        },
        Response::Multi(Ok(v)) => {
            let paths: usize =
                v.iter().map(|x| if let MultiResult::Create { path, .. } = x { path.len() } else { 0 }).sum();
            (v.len() + paths, 0)
        },
        Response::WhoAmI(v) => (v.len() + v.iter().map(|(a, b)| a.len() + b.len()).sum::<usize>(), v.capacity()),
    };
    assert!(n <= body.len(), "opcode {opcode}: {n} decoded from {} bytes", body.len());
    assert!(cap <= body.len(), "opcode {opcode}: room for {cap} elements from {} bytes", body.len());
}

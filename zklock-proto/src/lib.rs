//! # zklock-proto
//!
//! zklock's lock protocol (the project's `docs/lock-protocol.md`) as
//! deterministic state machines, kept apart from sockets, clocks and
//! threads as rustls keeps TLS apart from its transport: events go in
//! (replies, watch notifications, session news, the caller's stop), actions
//! come out (requests to send, a grant with its proof, what is left to clean
//! up). `zklock-core` runs them against ZooKeeper; the simulator in this
//! crate's tests runs them against a model of ZooKeeper under schedules drawn
//! from a seed.
//!
//! - [`names`]: lock-node names and the ordering rule (sections 2 and 3).
//! - [`driver`]: each lock kind's queue rules.
//! - [`acquire`]: one acquire attempt, from the create of our node to the
//!   grant (section 4).
//! - [`hold`]: a granted lock from the grant to its release or loss
//!   (sections 5 and 6): suspended, held again, lost, and what a release
//!   deletes.
//! - [`multi`]: a multi-lock's acquire (section 8b): members taken one
//!   after another, the earlier ones read again once the last is granted,
//!   suspended ones waited for, all released if one fails.
//! - [`cleanup`]: one try at deleting a node of ours, or the nodes a create
//!   of unknown outcome may have made: only nodes our session owns.
//! - [`vocabulary`](mod@vocabulary): the words the front ends share, one table each
//!   ([`vocabulary!`]), from which their generated files are made.
//! - [`clock`]: the safety clock (section 5): until when the session is
//!   certainly alive, from the heartbeats' send and answer times.
//! - [`reconnect`]: the session layer's reconnect policy (section 5), which
//!   serves the clock: which server next, how long attempts wait, when to
//!   give up.
//!
//! This crate depends on nothing that does I/O; its API follows what
//! `zklock-core` needs and may change with any release (zklock-core's API is
//! the stable one).

pub mod acquire;
pub mod cleanup;
pub mod clock;
pub mod driver;
pub mod hold;
pub mod multi;
pub mod names;
pub mod reconnect;
pub mod vocabulary;

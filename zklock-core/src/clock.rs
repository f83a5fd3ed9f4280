//! The safety clock as a session runs it (protocol section 5): the
//! protocol's clock (`zklock_proto::clock`, where its rules and their
//! argument are: a pure machine that reads no clock), fed by this module's
//! heartbeat with the session layer's stamps, and read with this machine's
//! clock.
//!
//! This module is the only place that can move the clock, and it accepts
//! one kind of evidence: [`SyncReply`], which only
//! [`SafetyClock::heartbeat`] makes, from the reply to its `sync` (or its
//! write: once the clock ran out, and on a new connection until a write on
//! it is answered), whose send time is the session layer's stamp, taken
//! just before the write that handed the request to the socket (a stall
//! before the write only makes the credit smaller).

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use zklock_proto::clock::{Clock, Heartbeat};

use crate::zk;

/// Evidence that the leader heard from the session (see
/// [`zklock_proto::clock::Heartbeat`]). Only [`SafetyClock::heartbeat`]
/// makes one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SyncReply(Heartbeat);

/// Until when the session is safely alive; see the module documentation.
#[derive(Debug)]
pub(crate) struct SafetyClock {
    clock: Mutex<Clock>,
    advanced: Notify,
}

impl SafetyClock {
    /// The clock of a session with timeout `timeout` whose connect request
    /// was handed to the socket at `connect_sent` (the server created the
    /// session after that), on the session layer's connection `connection`.
    pub(crate) fn new(connect_sent: Instant, timeout: Duration, connection: u64) -> SafetyClock {
        SafetyClock { clock: Mutex::new(Clock::new(connect_sent, timeout, connection)), advanced: Notify::new() }
    }

    fn clock(&self) -> MutexGuard<'_, Clock> {
        self.clock.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Until when a lock held by this session is safely ours
    /// ([`Clock::safe_until`]).
    pub(crate) fn safe_until(&self) -> Instant {
        self.clock().safe_until()
    }

    /// Whether a lock granted now stays safely held while the server
    /// answers ([`Clock::will_stay_safe`]).
    pub(crate) fn will_stay_safe(&self) -> bool {
        self.clock().will_stay_safe(Instant::now())
    }

    /// How long the heartbeat waits before its next request
    /// ([`Clock::next_heartbeat`]).
    pub(crate) fn next_heartbeat(&self, every: Duration) -> Duration {
        self.clock().next_heartbeat(Instant::now(), every)
    }

    /// Resolves the next time the clock moves forward.
    pub(crate) async fn advanced(&self) {
        self.advanced.notified().await
    }

    /// Sends one `sync` (a write once the clock has run out, or while no
    /// write on this connection was answered: [`Clock::heartbeat_write`])
    /// now, if the session is connected; the returned future waits for its reply
    /// (`None` if there is none: the connection failed, or a write was
    /// answered `SessionExpired`). The send time is the session layer's
    /// stamp, taken just before the write that handed the request to the
    /// socket. A reply counts however late it comes (the connection's read
    /// timeout bounds the wait): a sync sent during an outage and answered
    /// after it is evidence like any other.
    /// The probe is never held back behind the session's own calls
    /// (`Session::sync_urgent`): a burst of this client's acquires must
    /// not run its clock out.
    pub(crate) fn heartbeat(
        &self,
        zk: &zk::Client,
    ) -> Option<impl std::future::Future<Output = Option<SyncReply>> + Send + 'static> {
        let connected = zk.connected()?;
        let write = self.clock().heartbeat_write(Instant::now(), connected.connection);
        let probe = if write {
            futures_util::future::Either::Left(zk::probe_write(zk, "/", true).0)
        } else {
            futures_util::future::Either::Right(zk.sync_urgent("/").stamped())
        };
        Some(async move {
            let stamp = match probe {
                futures_util::future::Either::Left(write) => match write.await {
                    (Ok(()), s) => s,
                    _ => None,
                },
                futures_util::future::Either::Right(sync) => match sync.await {
                    (Ok(()), s) => s,
                    _ => None,
                },
            }?;
            // The connect of the connection the reply came on, which may
            // be a later one than `connected` (calls made while the
            // session moves to a new server list wait for the next
            // connection: outside attack round 35, F3, where a write sent
            // so came back without the connect's times and the reconnect
            // was credited only `T / 3` later).
            Some(SyncReply(Heartbeat {
                sent: stamp.sent,
                answered: stamp.answered,
                connection: stamp.connection,
                write,
                connect_sent: Some(stamp.connect_sent),
                connect_answered: Some(stamp.connect_answered),
            }))
        })
    }

    /// Moves the clock forward on the evidence of `reply` (never back).
    pub(crate) fn credit(&self, reply: SyncReply) {
        let moved = self.clock().credit(reply.0);
        if moved {
            self.advanced.notify_waiters();
        }
    }
}

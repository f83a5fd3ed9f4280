//! The session layer's reconnect policy (protocol section 5): how long a
//! reconnect may try, how long each attempt waits for its connect's
//! answer, how far apart rounds of attempts come, and what to do with a
//! connect answered late. Pure: the caller (`zklock-zk`'s session task, and
//! the reconnect search in this crate's tests) reads the clock and makes
//! the connections; this says what to do at each instant it is given.
//!
//! The rules serve the safety clock ([`crate::clock`]), which credits a
//! reconnect from its connect request's send time less `T/3` and counts the
//! new connection's heartbeats only `T/3` after its first reply:
//!
//! - Rounds of attempts come at most `T/40` apart (at least 25 ms, at most
//!   1 s): every moment between the end of an outage and the reconnect
//!   spends the clock (an outside test: with rounds up to 1.5 s apart, a
//!   0.4 T outage of refused connections cost the lock in 5 of 8 runs at
//!   T = 4 s).
//! - An attempt waits for its connect's answer the timeout's share among
//!   the servers (at least 500 ms) in the first round, twice that in the
//!   second and so on, up to the whole timeout: servers that answer every
//!   connect later than the share (loaded, or behind a slow proxy) are
//!   reached in a later round. It is never given up earlier: connects given
//!   up still revalidate the session on the server, can move its owner to a
//!   member the client left (its next write then fails with
//!   `SessionMoved`), and the time spent on them is time the session may
//!   expire in (outside attack round 23: R1-R3, against
//!   [`Bugs::quick_retries`]).
//! - A connect answered more than `T/6` after it was sent (a server stalled,
//!   not down: its kernel accepted the connection and it answered when it
//!   ran again) is taken as proof that the session lives, but its credit
//!   would run out before the new connection's heartbeats count from a lag
//!   of about `0.23 T` (round 22, F1). That connection is closed unused and
//!   the same server asked once more at once: that connect is sent after the
//!   stall, so its credit is fresh. Once per reconnect: a server slow to
//!   answer every connection is as slow the second time.
//! - The reconnect gives up (the session counts as expired) `4/3 T` after
//!   the server was last heard from, after a late answer, or after an
//!   attempt whose connect was sent ended unanswered: a server may have
//!   read that connect and touched the session (a stalled server reads it
//!   when it runs again), so the session may live until `T` after it. So
//!   it gives up only once no server's process could be reached (refused,
//!   unreachable, no TCP connection) for `4/3 T`; a server that accepts
//!   connections and never answers keeps it trying. (The reconnect search
//!   in this crate's tests found the client giving up a live session when
//!   three servers each answered later than their share.)

use std::time::{Duration, Instant};

/// Bugs zklock once had or that a reconnect policy could have, each
/// switched on by its switch when this crate is built with the `history`
/// feature: the reconnect search in this crate's tests must find each.
/// Without the feature every switch is ignored.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bugs {
    /// Use a connection however late its connect was answered (outside
    /// attack round 22, F1: a reset while the server was stalled for
    /// 0.3 T ran the clock out after the stall, on a healthy connection).
    pub never_ask_again: bool,
    /// The first fix of F1, taken back: until half the timeout has passed
    /// since the server was last heard from, give a connect up when it is
    /// unanswered for `T/8` (at least 200 ms) and try again on a new
    /// connection, giving up `4/3 T` after the server was last heard from
    /// whatever the connects sent since. Round 23: a server slow to answer
    /// every connection by more than that was never reached in time (R1, a
    /// false loss), and one answering very late was given up on (R2, a
    /// false expiry).
    pub quick_retries: bool,
    /// Every round's attempts wait the same share of the timeout, and an
    /// attempt that ended unanswered does not put giving up off (the
    /// policy before the reconnect search): three servers each answering
    /// connects later than `T/3` are never reached, and the session is
    /// given up while every connect touched it (a false expiry).
    pub fixed_share: bool,
}

impl Bugs {
    /// Whether the bug `which` is switched on (never without `history`).
    fn on(&self, which: fn(&Bugs) -> bool) -> bool {
        cfg!(feature = "history") && which(self)
    }
}

/// What to do with a connection whose connect was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answered {
    /// Use it: the reconnect is done.
    Use,
    /// Close it unused and ask the same server once more, at once.
    AskAgain,
}

/// One reconnect of a session: from the loss of a connection until a new
/// one is used or the reconnect gives up.
#[derive(Clone, Copy, Debug)]
pub struct Reconnect {
    timeout: Duration,
    hosts: usize,
    last_heard: Instant,
    give_up_at: Instant,
    /// Rounds of attempts over the servers that ended so far.
    round: u32,
    asked_again: bool,
    bugs: Bugs,
}

impl Reconnect {
    /// A reconnect of a session with the (negotiated) timeout `timeout`,
    /// to one of `hosts` servers (at least one is assumed), whose server was
    /// last heard from at `last_heard`.
    pub fn new(timeout: Duration, hosts: usize, last_heard: Instant) -> Reconnect {
        Reconnect {
            timeout,
            hosts: hosts.max(1),
            last_heard,
            give_up_at: last_heard + timeout * 4 / 3,
            round: 0,
            asked_again: false,
            bugs: Bugs::default(),
        }
    }

    /// Switches on the bugs `bugs` (only with the `history` feature;
    /// without it this does nothing).
    #[doc(hidden)]
    pub fn set_bugs(&mut self, bugs: Bugs) {
        self.bugs = bugs;
    }

    /// The server list changed to `hosts` servers (same deadline).
    pub fn set_hosts(&mut self, hosts: usize) {
        self.hosts = hosts.max(1);
    }

    /// When the reconnect gives up: the session is then taken as expired.
    pub fn give_up_at(&self) -> Instant {
        self.give_up_at
    }

    /// The longest pause between two rounds of attempts (the pause doubles
    /// from 50 ms up to this).
    pub fn max_backoff(&self) -> Duration {
        (self.timeout / 40).clamp(Duration::from_millis(25), Duration::from_secs(1))
    }

    /// Until when an attempt started at `now` waits for its connect's
    /// answer (name lookup, TCP and TLS included).
    pub fn attempt_until(&self, now: Instant) -> Instant {
        let share = (self.timeout / self.hosts as u32).max(Duration::from_millis(500));
        if self.bugs.on(|b| b.quick_retries) {
            let quick_until = (self.last_heard + self.timeout / 2).min(self.give_up_at);
            if now < quick_until {
                let quick = (self.timeout / 8).max(Duration::from_millis(200));
                return quick_until.min(now + quick.min(share));
            }
            return self.give_up_at.min(now + share);
        }
        if self.bugs.on(|b| b.fixed_share) {
            return self.give_up_at.min(now + share);
        }
        let wait = share.saturating_mul(1 << self.round.min(16)).min(self.timeout.max(share));
        self.give_up_at.min(now + wait)
    }

    /// A round of attempts over every server ended without a connection.
    pub fn round_over(&mut self) {
        self.round = self.round.saturating_add(1);
    }

    /// An attempt whose connect was sent ended at `ended` without its
    /// answer, given up with the connection open (not closed or reset by
    /// the server): the server may have read the
    /// connect and touched the session as late as that (a stalled server
    /// even later, once it runs again), so the reconnect gives up no
    /// earlier than `4/3 T` after it.
    pub fn unanswered(&mut self, ended: Instant) {
        if self.bugs.on(|b| b.quick_retries || b.fixed_share) {
            return;
        }
        self.give_up_at = self.give_up_at.max(ended + self.timeout * 4 / 3);
    }

    /// A connect sent at `connect_sent` was answered (the session lives) at
    /// `answered`: whether to use that connection or to ask its server once
    /// more (see the module docs). Asking again moves the give-up time to
    /// `4/3 T` after `answered`.
    pub fn answered(&mut self, connect_sent: Instant, answered: Instant) -> Answered {
        let lag = answered.saturating_duration_since(connect_sent);
        if lag <= self.timeout / 6 || self.asked_again || self.bugs.on(|b| b.never_ask_again) {
            return Answered::Use;
        }
        self.asked_again = true;
        self.last_heard = self.last_heard.max(answered);
        self.give_up_at = self.give_up_at.max(answered + self.timeout * 4 / 3);
        Answered::AskAgain
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(4);

    #[test]
    fn a_connect_answered_late_is_asked_again_once() {
        let t0 = Instant::now();
        let mut r = Reconnect::new(T, 1, t0);
        assert_eq!(r.answered(t0, t0 + T / 6), Answered::Use, "T/6 is not late");
        let late = t0 + T * 3 / 10;
        assert_eq!(r.answered(t0, late), Answered::AskAgain);
        assert_eq!(r.give_up_at(), late + T * 4 / 3, "the session lived when it was answered");
        assert_eq!(r.answered(late, late + T * 3 / 10), Answered::Use, "only once");
    }

    #[test]
    fn an_attempt_waits_the_timeouts_share_never_beyond_giving_up() {
        let t0 = Instant::now();
        let mut r = Reconnect::new(T, 3, t0);
        assert_eq!(r.attempt_until(t0), t0 + T / 3);
        assert_eq!(r.attempt_until(t0 + T), t0 + T * 4 / 3);
        r.round_over();
        assert_eq!(r.attempt_until(t0), t0 + T * 2 / 3, "twice the share in the second round");
        r.round_over();
        r.round_over();
        assert_eq!(r.attempt_until(t0), t0 + T, "at most the timeout");
        r.unanswered(t0 + T);
        assert_eq!(r.give_up_at(), t0 + T + T * 4 / 3, "an unanswered connect may have touched the session");
        let one = Reconnect::new(Duration::from_millis(600), 4, t0);
        assert_eq!(one.attempt_until(t0), t0 + Duration::from_millis(500), "at least 500 ms");
        assert_eq!(one.max_backoff(), Duration::from_millis(25));
        assert_eq!(Reconnect::new(T * 100, 1, t0).max_backoff(), Duration::from_secs(1));
    }
}

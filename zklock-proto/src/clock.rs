//! The safety clock (protocol section 5): until when a session certainly
//! has not been expired by the ZooKeeper leader, so that a lock held by it
//! cannot have been granted to anyone else.
//!
//! A [`Clock`] is pure: it reads no clock (every instant is passed in) and
//! sends nothing. It accepts one kind of evidence, a [`Heartbeat`]: the
//! reply to a `sync` (or, once the clock ran out, a write), which a
//! follower cannot answer without the leader. A plain read can be answered
//! by a follower that is cut off from the leader while the leader expires
//! the session, and the reply to any request proves nothing about the time
//! before the request was handed to the socket. zklock-core's heartbeat
//! makes the only `Heartbeat`s it credits, with the session layer's stamps
//! (the send time taken just before the write that handed the request to
//! the socket: a stall before the write only makes the credit smaller).
//!
//! How much a sync reply proves. The leader expires a session one session
//! timeout `T` after it last processed a report of the session's activity.
//! A client connected to a follower is reported to the leader in the
//! follower's answers to the leader's pings, which the leader sends every
//! `tickTime / 2` over the same FIFO stream that carries the follower's
//! forwarded requests (ZooKeeper's `Leader.lead`, `Learner.ping`,
//! `LearnerHandler`); the leader does not count a forwarded request itself
//! as activity. So when sync `k` (sent at `s_k`) is answered, the leader has
//! processed every ping answer the follower wrote before forwarding it.
//! Heartbeat `j` on the same connection, answered at `a_j`, touched the
//! session at the follower before `a_j`; if a ping reached the follower
//! between `a_j` and `s_k`, its answer reported that touch, and the leader
//! processed it after `s_j`: the session lives at least until `s_j + T`.
//! Pings come every `tickTime / 2 <= T / 4` (ZooKeeper's default
//! `minSessionTimeout` is `2 * tickTime`); allowing another `T / 12` for
//! late pings, `a_j <= s_k - T / 3` is enough. The credit is therefore the
//! send time of the latest heartbeat `j` on the same connection with
//! `a_j <= s_k - T / 3`. A client connected to the leader itself is touched
//! directly, later than that: the rule stays safe. A new leader gives every
//! session a full timeout from its start, which only extends the bound.
//! The session's creation counts as a touch at the send time of its connect
//! request (a transaction the quorum committed). So does a reconnect of the
//! same session, and it proves the session alive: the server revalidates
//! it (`touchSession` on the leader, through the follower; ZooKeeper's
//! `Learner.validateSession`, `LeaderZooKeeperServer.checkIfValidGlobalSession`)
//! after reading the connect request and before answering it, with a
//! positive timeout only if the session lives. But the answer does not say
//! which leader touched it: a leader that was deposed while it stalled (a
//! GC pause, SIGSTOP) runs again for a moment still believing it leads,
//! and answers connects from its own tracker, seconds after the new leader
//! started counting the session's timeout (outside attack round 33, F2:
//! credited `T/3` before its send time, such a connect kept `check()`
//! passing up to 868 ms after a waiter was granted). So nothing on a new
//! connection counts until a write sent on it is answered (the heartbeat
//! sends writes there until then, [`Clock::heartbeat_write`]): the quorum
//! committed that write (a failed one too: ZooKeeper commits its error),
//! so the connection's server was then in the quorum of the moment, as it
//! was when it answered the connect (a server that changes its role or
//! loses its quorum closes every client connection); that quorum's leader
//! touched the session after the connect was sent, and a later leader
//! starts after the write was committed and gives the session a full
//! timeout from then. The connect's send time is then credited in full.
//! (The session layer refuses read-only servers.)
//! The connect is also the new connection's first heartbeat: it touched
//! the session before its answer was read, so a sync sent `T/3` after
//! that answer credits the connect's send time, by the argument for
//! heartbeats above. Before (outside attack round 31, F1), only the first
//! sync's reply started the history: after a reset on a network whose
//! round trips exceed about `0.08 T` the clock ran out before the
//! heartbeats counted.
//!
//! A sync reply does not prove that the session is still alive: the leader
//! answers a sync of an expired session too (the follower closes the
//! connection only when the expiry reaches it), and a touch of an expired
//! session is ignored. So a sync can only extend a clock that has not run
//! out when its reply arrives (the report it relies on was processed
//! before that). Once the clock has run out, the heartbeat sends a write
//! instead (a `setData`, at a version that never matches, of a node nobody
//! makes: it changes nothing), whose reply from a committed transaction
//! proves the session alive when the leader processed it, after every
//! report the follower wrote before it.
//!
//! Leader changes: a new leader gives every session a full timeout from
//! its start; an old leader cut off with our follower may still answer
//! syncs for a while `o` after the new one started (it gives up once a
//! tick finds no quorum's ack within `syncLimit` ticks; the followers on
//! the other side give up on it after `syncLimit` ticks without a packet,
//! then elect, which takes at least `finalizeWait`, 200 ms, and the new
//! leader starts after a quorum acknowledged it: `o` is at most about a
//! tick less the election). A sync it answers was sent at most `o` after
//! the new leader's start and credits a heartbeat answered `T/3` before
//! that, so the clock runs until at most `o - T/3 + 0.9 T` after the start,
//! before the new leader's expiry at `T` while `o <= T/3 + T/10` less the
//! drift: always with `tickTime <= T/3`; with `tickTime = T/2` (the
//! server's minimum session timeout) only if the election takes at least
//! about `0.12 T`. The guarantees document states the condition for every
//! `tickTime`, which the fault tests check: the old leader gives up no
//! later than the new one is elected (`o <= 0`).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Heartbeats remembered per connection (more than `T / 3` worth).
const HISTORY: usize = 16;

/// Evidence that the leader heard from the session: a heartbeat request
/// was handed to the socket at `sent` and answered at `answered`, both on
/// the connection numbered `connection` (the session layer's stamps).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heartbeat {
    /// Just before the write that handed the request to the socket.
    pub sent: Instant,
    /// When its reply was read.
    pub answered: Instant,
    /// The session layer's connection it travelled on.
    pub connection: u64,
    /// A write, whose reply proves the session alive (a sync's does not).
    pub write: bool,
    /// When the connect request of `connection` was handed to the socket
    /// (`None` if not known): its answer revalidated the session on the
    /// leader after that.
    pub connect_sent: Option<Instant>,
    /// When the answer to that connect request was read (with
    /// `connect_sent`): the connect counts as the connection's first
    /// heartbeat (see the module documentation).
    pub connect_answered: Option<Instant>,
}

/// Answered heartbeats of the current connection.
#[derive(Debug, Default)]
struct History {
    connection: u64,
    replies: VecDeque<Heartbeat>,
    /// A reply of this connection has moved the clock: from then on each
    /// heartbeat moves it again, keeping it at least about `0.34 T` ahead
    /// while the server answers within `0.05 T` ([`Clock::next_heartbeat`]).
    credited: bool,
    /// A write sent on this connection was answered: its server was in the
    /// quorum of the moment, and the connect counts (see the module
    /// documentation).
    confirmed: bool,
}

/// Until when the session is safely alive; see the module documentation.
#[derive(Debug)]
pub struct Clock {
    base: Instant,
    timeout: Duration,
    /// The latest credited time, after `base`.
    credited: Duration,
    history: History,
    bugs: Bugs,
}

/// Wrong rules a safety clock could follow, which this module's argument
/// rules out, each switched on by its switch when this crate is built with
/// the `history` feature: the simulator's tests must find each. Without
/// the feature every switch is ignored.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bugs {
    /// Credit every reply at the time it was read, as if the server had
    /// just heard from the session (the naive "last heard" rule): no report
    /// lag, the answer time rather than the send time. A reply read long
    /// after the server touched the session (the process stalled, the
    /// reply waited in its socket) stretches the clock past the expiry.
    pub credit_on_answer: bool,
    /// Credit each sync's own send time when its reply comes (the send
    /// time of the latest answered heartbeat), with no `T / 3` report lag:
    /// as if the leader had heard of the session when the sync passed. A
    /// follower reports its clients' activity only in its next ping answer;
    /// if it is cut off from the leader before that, the leader's last
    /// report of the session may be nearly a ping interval older.
    pub no_report_lag: bool,
    /// The heartbeat sends a plain read (an `exists` of the root) rather
    /// than a sync, and its reply is credited like a sync's: a follower cut
    /// off from the leader answers it alone. (Acted on by the heartbeat,
    /// which makes the [`Heartbeat`]s: see [`Bugs::heartbeat_reads`]; the
    /// clock cannot tell.)
    pub credit_reads: bool,
    /// A reconnect's connect is credited at its connection's first reply,
    /// a sync's too, from its send time less `T / 3` (the rule before
    /// outside attack round 33, F2), and the heartbeat sends syncs on a
    /// new connection: a leader deposed while it stalled answers connects
    /// and syncs for a moment when it runs again, from a tracker the new
    /// leader does not share, and the clock outlasts the new leader's
    /// expiry of the session. (Without the write the credit must keep the
    /// `T / 3`: a reset on a server stalled for `0.3 T` then ran the clock
    /// out, outside attack round 22, F1.)
    pub connect_unconfirmed: bool,
    /// The heartbeat keeps a fixed `T / 8` grid in steady state, whatever
    /// the round trip (the schedule outside attack round 39, F1, broke:
    /// once the report lag and a round trip pass three beats, each credit
    /// is a beat older).
    pub fixed_grid: bool,
}

impl Bugs {
    /// Whether the bug `which` is switched on (never without `history`).
    fn on(&self, which: fn(&Bugs) -> bool) -> bool {
        cfg!(feature = "history") && which(self)
    }

    /// Whether the heartbeat should send a plain read rather than a sync
    /// (`credit_reads`; never without `history`).
    pub fn heartbeat_reads(&self) -> bool {
        self.on(|b| b.credit_reads)
    }
}

impl Clock {
    /// The clock of a session with timeout `timeout` whose connect request
    /// was handed to the socket at `connect_sent` (the server created the
    /// session after that), on the session layer's connection `connection`.
    pub fn new(connect_sent: Instant, timeout: Duration, connection: u64) -> Clock {
        Clock {
            base: connect_sent,
            timeout,
            credited: Duration::ZERO,
            // The session's creation was a transaction the quorum committed.
            history: History { connection, confirmed: true, ..History::default() },
            bugs: Bugs::default(),
        }
    }

    /// Switches on the bugs `bugs` (only with the `history` feature; without
    /// it they are ignored). For the simulator.
    #[doc(hidden)]
    pub fn set_bugs(&mut self, bugs: Bugs) {
        self.bugs = bugs;
    }

    /// How long before `s_k` heartbeat `j` must have been answered for its
    /// touch to be known reported (see the module documentation).
    pub fn report_lag(&self) -> Duration {
        self.timeout / 4 + self.timeout / 12
    }

    /// Until when a lock held by this session is safely ours: the credited
    /// time plus the session timeout, minus a tenth of it for clock-rate
    /// drift between this machine and the servers.
    pub fn safe_until(&self) -> Instant {
        self.base + self.credited + self.timeout - self.timeout / 10
    }

    /// Whether the session is safely alive at `now`.
    pub fn is_safe(&self, now: Instant) -> bool {
        now < self.safe_until()
    }

    /// Whether the heartbeat sent at `now` on the session layer's
    /// connection `connection` is a write (a `setData` that changes
    /// nothing) rather than a sync: once the clock has run out (a sync's
    /// reply does not prove the session alive), and on a connection no
    /// write of which was answered yet (nothing on it counts until one is:
    /// see the module documentation).
    pub fn heartbeat_write(&self, now: Instant, connection: u64) -> bool {
        !self.is_safe(now)
            || (!self.bugs.on(|b| b.connect_unconfirmed)
                && (connection != self.history.connection || !self.history.confirmed))
    }

    /// Whether a lock granted at `now` stays safely held while the server
    /// answers: the clock has not run out, and either the heartbeats of
    /// this connection already move it, or it lasts until their first
    /// credit (a connection's first heartbeat can count only once a later
    /// one is sent `T / 3` after its answer, which
    /// [`Clock::next_heartbeat`] schedules for that moment; `T / 8` more
    /// allows for the round trip). That moment is known once the first
    /// reply came: `T / 3` after its answer; before (or once it passed
    /// without a credit), `T / 3` from `now`. A session whose connect
    /// waited long for its server (an outage) starts with a nearly spent
    /// clock: granting on it would hand out a lock that is suspended a
    /// moment later. (Counting from `now` alone held grants back from
    /// `0.11 T` after every reconnect until its heartbeats counted, `0.22 T`
    /// later, although the clock lasted until then: the second pause in
    /// grants after a leader was killed, issue 33.)
    pub fn will_stay_safe(&self, now: Instant) -> bool {
        let until = self.safe_until();
        if now >= until {
            return false;
        }
        if self.history.credited {
            return true;
        }
        let lag = self.report_lag();
        let first_credit =
            self.history.replies.front().map(|first| first.answered + lag).filter(|&at| at > now).unwrap_or(now + lag);
        until >= first_credit + self.timeout / 8
    }

    /// How long, from `now`, the heartbeat waits before its next request.
    ///
    /// In steady state (this connection's heartbeats move the clock, and it
    /// lasts at least two more beats past the moment the next reply can
    /// count) the beats keep an even pace of four per report lag and round
    /// trip, `(T / 3 + 1.3 r) / 4` (`r`: the longest of the last eight
    /// round trips; at most `every`): each beat then goes out just after
    /// the moment the one four back can count (it was answered `T / 3`
    /// before), and credits that one's send time. A fixed `T / 8` grid
    /// lost up to a beat of freshness once the lag and round trip passed
    /// three beats (round trips over `T / 24`: outside attack round 39,
    /// F1); sending early at every moment a reply could count, as before,
    /// kept the freshness with about 25 beats per `T` (three times the
    /// grid; issue 33).
    ///
    /// Otherwise (a new connection, or a clock close to its end, as after a
    /// silent outage whose heartbeats are all answered when it ends) the
    /// next beat goes out as soon as a reply that would move the clock can
    /// first count, not up to a beat later: the first credit then comes
    /// `T / 3` and a round trip after the first answers (outside attack
    /// round 34, F1: with round trips of `0.03`-`0.05 T` a silent outage of
    /// `0.3 T` ran the clock out in some phases). Meant to be asked right
    /// after each heartbeat is sent (a reply that came since is what it
    /// looks at). Never below `T / 32`.
    pub fn next_heartbeat(&self, now: Instant, every: Duration) -> Duration {
        let floor = self.timeout / 32;
        let credited = self.base + self.credited;
        let lag = self.report_lag();
        let replies = &self.history.replies;
        let rtt = replies.iter().rev().take(8).map(|j| j.answered.saturating_duration_since(j.sent)).max();
        let pace = match rtt {
            Some(rtt) if !self.bugs.on(|b| b.fixed_grid) => ((lag + rtt.mul_f64(1.3)) / 4).min(every),
            _ => every,
        };
        let soonest =
            replies.iter().filter(|j| j.sent > credited).map(|j| j.answered + lag).filter(|&at| at > now).min();
        match soonest {
            Some(at) if !self.history.credited || self.safe_until() < at + 2 * pace => (at - now).min(pace).max(floor),
            _ => pace,
        }
    }

    /// Moves the clock forward on the evidence of `reply` (never back);
    /// whether it moved.
    pub fn credit(&mut self, reply: Heartbeat) -> bool {
        let mut moved = false;
        if reply.connection < self.history.connection {
            // A late reply of a connection that was replaced.
            return false;
        }
        if self.bugs.on(|b| b.credit_on_answer) {
            self.history.connection = reply.connection;
            self.history.credited = true;
            return self.credit_to(reply.answered);
        }
        let unconfirmed = self.bugs.on(|b| b.connect_unconfirmed);
        if self.history.connection != reply.connection {
            // The same session on another connection: answering its connect
            // request, the server revalidated the session after the request
            // was handed to the socket, on the leader of the moment if a
            // write on this connection is answered (below).
            self.history.connection = reply.connection;
            self.history.replies.clear();
            self.history.credited = false;
            self.history.confirmed = false;
            if unconfirmed {
                // The old rule: credited at once, `T / 3` before it was sent.
                if let Some(touched) = reply.connect_sent.and_then(|c| c.checked_sub(self.report_lag())) {
                    moved |= self.credit_to(touched);
                }
            }
            // The connect is the connection's first heartbeat: it touched
            // the session (on the leader, through the follower) before its
            // answer was read, so a sync sent `T / 3` after that answer
            // credits its send time, by the heartbeats' argument.
            if let (Some(sent), Some(answered)) = (reply.connect_sent, reply.connect_answered) {
                let connect =
                    Heartbeat { sent, answered, write: false, connect_sent: None, connect_answered: None, ..reply };
                self.history.replies.push_back(connect);
            }
        }
        if !self.history.confirmed && !unconfirmed {
            // Nothing counts on this connection until a write is answered:
            // its server may be a leader deposed while it stalled.
            if !reply.write {
                return moved;
            }
            // The quorum committed the write: the connect's revalidation
            // was the leader's of the moment, after the connect was sent.
            self.history.confirmed = true;
            if let Some(sent) = reply.connect_sent {
                moved |= self.credit_to(sent);
            }
        }
        let lag = self.report_lag();
        // A sync answered after the clock ran out may be an expired
        // session's: it may neither credit nor count for later credits.
        if !reply.write && reply.answered >= self.safe_until() {
            return moved;
        }
        if self.bugs.on(|b| b.no_report_lag) {
            self.history.replies.push_back(reply);
            if self.history.replies.len() > HISTORY {
                self.history.replies.pop_front();
            }
            self.history.credited = true;
            return self.credit_to(reply.sent) || moved;
        }
        let reported = self.history.replies.iter().rev().find(|j| j.answered + lag <= reply.sent).map(|j| j.sent);
        self.history.replies.push_back(reply);
        if self.history.replies.len() > HISTORY {
            self.history.replies.pop_front();
        }
        self.history.credited |= reported.is_some();
        if let Some(sent) = reported {
            moved |= self.credit_to(sent);
        }
        moved
    }

    /// Moves the credited time to `touched` (never back); whether it moved.
    fn credit_to(&mut self, touched: Instant) -> bool {
        let after = touched.saturating_duration_since(self.base);
        let moved = after > self.credited;
        self.credited = self.credited.max(after);
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(12);

    fn reply(clock: &Clock, sent_s: u64, answered_ms: u64, connection: u64) -> Heartbeat {
        let sent = clock.base + Duration::from_secs(sent_s);
        Heartbeat {
            sent,
            answered: sent + Duration::from_millis(answered_ms),
            connection,
            write: false,
            connect_sent: None,
            connect_answered: None,
        }
    }

    /// The first reply on `connection`, whose connect request was sent at
    /// `connect_s`.
    fn first_on(clock: &Clock, sent_s: u64, connection: u64, connect_s: f64) -> Heartbeat {
        Heartbeat {
            connect_sent: Some(clock.base + Duration::from_secs_f64(connect_s)),
            ..reply(clock, sent_s, 10, connection)
        }
    }

    /// The answer to a write sent at `sent_s` on `connection`, whose
    /// connect request was sent at `connect_s`.
    fn write_on(clock: &Clock, sent_s: u64, connection: u64, connect_s: f64) -> Heartbeat {
        Heartbeat { write: true, ..first_on(clock, sent_s, connection, connect_s) }
    }

    fn credited_s(clock: &Clock) -> f64 {
        clock.credited.as_secs_f64()
    }

    #[test]
    fn the_session_start_counts_until_a_reported_heartbeat() {
        let mut clock = Clock::new(Instant::now(), T, 0);
        assert_eq!(clock.safe_until(), clock.base + T - T / 10);
        // T/3 = 4 s: a heartbeat answered less than that before the
        // latest one was sent proves nothing yet.
        clock.credit(reply(&clock, 1, 10, 0));
        clock.credit(reply(&clock, 3, 10, 0));
        clock.credit(reply(&clock, 5, 10, 0));
        assert_eq!(credited_s(&clock), 0.0);
        // 7 s: the one answered at 3.01 s is 0.01 s too late; 1.01 s counts.
        clock.credit(reply(&clock, 7, 10, 0));
        assert_eq!(credited_s(&clock), 1.0);
        clock.credit(reply(&clock, 9, 10, 0));
        assert_eq!(credited_s(&clock), 3.0);
    }

    #[test]
    fn a_late_answer_is_not_reported_yet() {
        let mut clock = Clock::new(Instant::now(), T, 0);
        // Sent at 1 s, answered at 4.5 s: only a heartbeat sent at 8.5 s
        // or later can count it.
        clock.credit(reply(&clock, 1, 3_500, 0));
        clock.credit(reply(&clock, 8, 10, 0));
        assert_eq!(credited_s(&clock), 0.0);
        clock.credit(reply(&clock, 9, 10, 0));
        assert_eq!(credited_s(&clock), 1.0);
    }

    #[test]
    fn another_connection_starts_a_new_history_from_its_connect() {
        let mut clock = Clock::new(Instant::now(), T, 0);
        clock.credit(reply(&clock, 1, 10, 0));
        clock.credit(reply(&clock, 2, 10, 0));
        assert_eq!(credited_s(&clock), 0.0);
        // The session moved to another connection, whose connect request
        // left at 8.5 s: the server revalidated the session after that,
        // on the leader of the moment once a write on it is answered (a
        // sync's answer counts for nothing before).
        assert!(clock.heartbeat_write(clock.base + Duration::from_secs(9), 1));
        clock.credit(first_on(&clock, 9, 1, 8.5));
        assert_eq!(credited_s(&clock), 0.0);
        clock.credit(write_on(&clock, 9, 1, 8.5));
        assert_eq!(credited_s(&clock), 8.5);
        assert!(!clock.heartbeat_write(clock.base + Duration::from_secs(10), 1));
        // Replies of the old connection count no more.
        clock.credit(reply(&clock, 12, 10, 0));
        assert_eq!(credited_s(&clock), 8.5);
        clock.credit(reply(&clock, 13, 10, 1));
        assert_eq!(credited_s(&clock), 8.5, "the write was answered less than T/3 before");
        clock.credit(reply(&clock, 14, 10, 1));
        assert_eq!(credited_s(&clock), 9.0, "the new connection's own history");
    }

    #[test]
    fn a_reconnect_credits_even_after_the_clock_ran_out() {
        let mut clock = Clock::new(Instant::now(), T, 0);
        // Safe until 10.8 s; an outage until 20 s: a sync answered then
        // proves nothing, a connect answered proves the session alive.
        clock.credit(reply(&clock, 21, 10, 0));
        assert_eq!(credited_s(&clock), 0.0);
        clock.credit(write_on(&clock, 21, 1, 20.0));
        assert_eq!(credited_s(&clock), 20.0);
        // Without its connect's time (the connection was gone by then), the
        // reply of a new connection credits nothing.
        let mut clock = Clock::new(Instant::now(), T, 0);
        clock.credit(Heartbeat { write: true, ..reply(&clock, 21, 10, 1) });
        assert_eq!(credited_s(&clock), 0.0);
    }

    #[test]
    fn a_sync_answered_after_the_clock_ran_out_proves_nothing_until_a_write() {
        let mut clock = Clock::new(Instant::now(), T, 0);
        // Safe until 10.8 s. A stall: the next answers come after that.
        clock.credit(reply(&clock, 1, 10, 0));
        clock.credit(reply(&clock, 11, 10, 0));
        clock.credit(reply(&clock, 16, 10, 0));
        assert_eq!(credited_s(&clock), 0.0, "syncs answered after the clock ran out");
        // A write answered proves the session alive: the sync of 11 s was
        // reported before it (but the late syncs were not kept).
        let mut w = reply(&clock, 20, 10, 0);
        w.write = true;
        clock.credit(w);
        assert_eq!(credited_s(&clock), 1.0, "only what was kept before the stall");
        let mut w = reply(&clock, 25, 10, 0);
        w.write = true;
        clock.credit(w);
        assert_eq!(credited_s(&clock), 20.0);
    }

    #[test]
    fn a_grant_needs_time_for_the_first_credit_or_a_moving_clock() {
        let now = Instant::now();
        let beat = |at: Instant, connection: u64, connect_sent: Option<Instant>| Heartbeat {
            sent: at,
            answered: at,
            connection,
            write: false,
            connect_sent,
            connect_answered: None,
        };
        // A connect that waited half a session timeout: 0.4 T left, less
        // than the T/3 + T/8 its first credit may take.
        let mut clock = Clock::new(now - T / 2, T, 0);
        assert!(clock.is_safe(now));
        assert!(!clock.will_stay_safe(now));
        // The first heartbeat is answered: the one that can count, T/3
        // after that answer, goes out then, not a beat later.
        clock.credit(beat(now, 0, None));
        // (Round trips of 0 here: the pace is (T/3 + 0) / 4 = T/12.)
        assert_eq!(clock.next_heartbeat(now, T / 8), T / 12, "T/3 away: the pace");
        let mut clock = Clock::new(now - T / 2, T, 0);
        clock.credit(beat(now - T / 4, 0, None));
        assert_eq!(clock.next_heartbeat(now, T / 8), T / 12);
        // A heartbeat of this connection has moved the clock: it keeps
        // moving at its pace, so even 0.3 T left is enough.
        let mut clock = Clock::new(now - T * 3 / 5, T, 0);
        let first = clock.base + Duration::from_secs(1);
        clock.credit(beat(first, 0, None));
        clock.credit(beat(first + T / 3, 0, None));
        assert_eq!(credited_s(&clock), 1.0);
        assert!(clock.will_stay_safe(now));
        assert_eq!(clock.next_heartbeat(now, T / 8), T / 12);
        // Another connection starts over: a write answered on it credits
        // its connect's send time (7.2 s - 1 s), and its own heartbeats
        // have not moved the clock yet: enough time is left.
        clock.credit(Heartbeat { write: true, ..beat(now, 1, Some(now - Duration::from_secs(1))) });
        assert!((credited_s(&clock) - 6.2).abs() < 0.01, "{}", credited_s(&clock));
        assert_eq!(clock.next_heartbeat(now, T / 8), T / 12, "T/3 until its first reply can count: the pace");
        assert!(clock.will_stay_safe(now));
        // A fresh session has nearly all of its clock.
        assert!(Clock::new(now, T, 0).will_stay_safe(now));
    }

    /// Issue 33's second pause in grants after a leader was killed: a
    /// reconnect's connect, once a write on its connection is answered,
    /// credits its send time (the clock lasts until `0.9 T` after it), and
    /// its heartbeats count from `T/3` after the write's answer: grants
    /// need not wait in between.
    #[test]
    fn a_reconnect_holds_no_grant_back_until_its_heartbeats_count() {
        let c = Instant::now();
        let beat = |sent: Instant, answered: Instant, write: bool| Heartbeat {
            sent,
            answered,
            connection: 1,
            write,
            connect_sent: Some(c),
            connect_answered: None,
        };
        let rtt = Duration::from_millis(2);
        let mut clock = Clock::new(c - T, T, 0);
        assert!(!clock.will_stay_safe(c + rtt * 2));
        clock.credit(beat(c + rtt, c + rtt * 2, true));
        assert_eq!(clock.safe_until(), c + T - T / 10);
        for tenths in [0u32, 1, 2, 3, 4] {
            let now = c + rtt * 2 + T * tenths / 10;
            assert!(clock.will_stay_safe(now), "{tenths}/10 T after the reconnect");
        }
        // The moment for the first credit passed without one (the server
        // stopped answering): T/3 from now again, and 0.4 T is not enough.
        let late = c + rtt * 2 + T / 2;
        assert!(!clock.will_stay_safe(late));
        // The heartbeat sent T/3 after the write's answer is answered: the
        // clock moves.
        assert!(clock.credit(beat(c + rtt * 2 + clock.report_lag(), late, false)));
        assert!(clock.will_stay_safe(late));
    }

    /// Round 31, F1: a reset on a network whose round trips are `0.1 T`,
    /// after the clock ran out. The write sent on the new connection at
    /// once (answered two round trips after the connect was sent) credits
    /// the connect's send time `c` in full: the clock lasts until
    /// `c + 0.9 T`, and the heartbeats sent `T/3` after the connect's and
    /// the write's answers (the connect is the connection's first
    /// heartbeat) are answered long before that. (Credited `T/3` before
    /// `c` at the first reply, as before round 33's F2, the clock ran out
    /// at `c + 0.57 T`, before a heartbeat could count once the connect's
    /// answer and a round trip took over `0.23 T`.)
    #[test]
    fn a_reset_on_a_slow_network_keeps_the_clock_moving() {
        let c = Instant::now();
        let rtt = T / 10;
        let beat = |sent: Instant, write: bool| Heartbeat {
            sent,
            answered: sent + rtt,
            connection: 1,
            write,
            connect_sent: Some(c),
            connect_answered: Some(c + rtt),
        };
        let mut clock = Clock::new(c - T, T, 0);
        assert!(clock.heartbeat_write(c + rtt, 1));
        assert!(!clock.credit(beat(c + rtt, false)), "a sync counts for nothing before a write");
        assert!(clock.credit(beat(c + rtt, true)));
        assert_eq!(clock.safe_until(), c + T - T / 10);
        assert!(!clock.heartbeat_write(c + rtt * 2, 1));
        // The heartbeats go at their pace, and the first that can count as
        // soon as it can: T/3 after the write's answer.
        let mut next = c + rtt * 2;
        while next < c + rtt * 2 + clock.report_lag() {
            next += clock.next_heartbeat(next, T / 8);
        }
        assert_eq!(next, c + rtt * 2 + clock.report_lag());
        assert!(clock.credit(beat(next, false)), "the write's send time");
        assert!(next + rtt < c + T - T / 10);
        assert_eq!(clock.safe_until(), c + rtt + T - T / 10);
    }

    /// Outside attack round 35, F3: the connect's times come with the
    /// replies (the session layer stamps each with those of the connection
    /// it came on). The first write answered on a new connection confirms
    /// it and credits its connect's send time; one answered without the
    /// times (the old stamp of a write made on the connection before and
    /// sent on this one) confirms it without the credit, and later replies
    /// do not bring the credit back: the clock then waits `T/3` for its
    /// heartbeats (the lock came back that late after a move).
    #[test]
    fn the_first_write_on_a_connection_credits_the_connect_it_carries() {
        let c = Instant::now();
        let rtt = T / 100;
        for carried in [true, false] {
            let mut clock = Clock::new(c - T, T, 1);
            let beat = |sent: Instant, times: bool| Heartbeat {
                sent,
                answered: sent + rtt,
                connection: 2,
                write: true,
                connect_sent: times.then_some(c),
                connect_answered: times.then_some(c + rtt),
            };
            clock.credit(beat(c + rtt, carried));
            clock.credit(beat(c + rtt * 2, true));
            let credited = clock.safe_until() == c + T - T / 10;
            assert_eq!(credited, carried, "times carried by the first write: {carried}");
        }
    }

    /// Round 33, F2: a leader deposed while it stalled answers the
    /// reconnect and the syncs on it for a moment when it runs again, but
    /// never a write (it has no quorum): nothing on that connection counts.
    /// With the `connect_unconfirmed` switch (the rule before), its first
    /// answer credits the connect's send time less `T/3`.
    #[test]
    fn a_connection_counts_only_once_a_write_on_it_is_answered() {
        for unconfirmed in [false, true] {
            let mut clock = Clock::new(Instant::now(), T, 0);
            clock.set_bugs(Bugs { connect_unconfirmed: unconfirmed, ..Bugs::default() });
            let old = cfg!(feature = "history") && unconfirmed;
            // The clock ran out (10.8 s); the connect left at 20 s.
            assert!(clock.heartbeat_write(clock.base + Duration::from_secs(21), 1));
            clock.credit(first_on(&clock, 21, 1, 20.0));
            assert_eq!(credited_s(&clock), if old { 16.0 } else { 0.0 }, "{unconfirmed}");
            if old {
                continue;
            }
            assert!(clock.heartbeat_write(clock.base + Duration::from_secs(22), 1));
            clock.credit(write_on(&clock, 22, 1, 20.0));
            assert_eq!(credited_s(&clock), 20.0);
            assert!(!clock.heartbeat_write(clock.base + Duration::from_secs(23), 1));
            // A sync answered on the confirmed connection counts as before:
            // the write, answered T/3 before it was sent.
            clock.credit(first_on(&clock, 26, 1, 20.0));
            assert_eq!(credited_s(&clock), 20.0);
            clock.credit(first_on(&clock, 27, 1, 20.0));
            assert_eq!(credited_s(&clock), 22.0);
        }
    }

    #[test]
    fn the_credit_on_answer_switch_works_only_with_history() {
        let mut clock = Clock::new(Instant::now(), T, 0);
        clock.set_bugs(Bugs { credit_on_answer: true, ..Bugs::default() });
        // Sent at 1 s, read at 1.5 s: the naive rule credits 1.5 s at once.
        clock.credit(reply(&clock, 1, 500, 0));
        let expected = if cfg!(feature = "history") { 1.5 } else { 0.0 };
        assert_eq!(credited_s(&clock), expected);
    }

    #[test]
    fn the_new_switches_work_only_with_history() {
        let on = cfg!(feature = "history");
        // no_report_lag: a sync sent at 1 s credits 1 s on its reply.
        let mut clock = Clock::new(Instant::now(), T, 0);
        clock.set_bugs(Bugs { no_report_lag: true, ..Bugs::default() });
        clock.credit(reply(&clock, 1, 10, 0));
        assert_eq!(credited_s(&clock), if on { 1.0 } else { 0.0 });
        // credit_reads: only the heartbeat acts on it.
        assert_eq!(Bugs { credit_reads: true, ..Bugs::default() }.heartbeat_reads(), on);
    }

    #[test]
    fn the_clock_never_goes_back() {
        let mut clock = Clock::new(Instant::now(), T, 0);
        clock.credit(reply(&clock, 1, 10, 0));
        clock.credit(reply(&clock, 8, 10, 0));
        assert_eq!(credited_s(&clock), 1.0);
        // Another connection whose connect left at 4.5 s: its credit
        // (0.5 s) and older replies do not move the clock back.
        clock.credit(first_on(&clock, 5, 1, 4.5));
        clock.credit(reply(&clock, 0, 10, 1));
        assert_eq!(credited_s(&clock), 1.0);
    }

    /// A connection that answers every heartbeat after at most `rtt`, at
    /// least `1 - jitter` of it (uniformly; with `spikes`, `rtt` one time
    /// in 32 and `1 - jitter` of it otherwise), with each timer firing
    /// up to `late` after its time (a busy runtime), for `40 T` (seeded):
    /// the heartbeats sent per `T` in the second half, and the least time
    /// the clock had left there (just before each credit). The heartbeat
    /// as zklock-core's sends it: one, then `next_heartbeat` asked at once.
    fn steady(rtt: f64, jitter: f64, spikes: bool, late: Duration, seed: u64, bugs: Bugs) -> (f64, f64) {
        let mut rng = fastrand::Rng::with_seed(seed);
        let start = Instant::now();
        let mut clock = Clock::new(start, T, 1);
        clock.set_bugs(bugs);
        let at = |f: f64| start + T.mul_f64(f);
        let (half, end) = (at(20.0), at(40.0));
        let mut answers: Vec<(Instant, Instant)> = Vec::new(); // (answered, sent)
        let (mut now, mut sent_after_half, mut least) = (at(0.01), 0u32, f64::MAX);
        while now < end {
            let rtt = match spikes {
                false => rtt * (1.0 - jitter * rng.f64()),
                true if rng.u8(..32) == 0 => rtt,
                true => rtt * (1.0 - jitter),
            };
            answers.push((now + T.mul_f64(rtt), now));
            sent_after_half += u32::from(now >= half);
            let next = now + clock.next_heartbeat(now, T / 8) + late.mul_f64(rng.f64());
            answers.sort();
            while let Some(&(answered, sent)) = answers.first().filter(|(a, _)| *a <= next) {
                answers.remove(0);
                let left = clock.safe_until().saturating_duration_since(answered);
                let hb = Heartbeat {
                    sent,
                    answered,
                    connection: 1,
                    write: false,
                    connect_sent: None,
                    connect_answered: None,
                };
                if clock.credit(hb) && answered >= half {
                    least = least.min(left.as_secs_f64() / T.as_secs_f64());
                }
            }
            now = next;
        }
        (f64::from(sent_after_half) / 20.0, least)
    }

    /// The least time left and the most heartbeats per `T` of [`steady`]
    /// over round trips up to `0.05 T` that vary in several ways, with
    /// timers on time and `T / 300` late, on `bugs`; prints a table.
    fn steady_worst(bugs: Bugs) -> (f64, f64) {
        let mut worst = (f64::MAX, 0.0, 0.0);
        let mut most = 0.0f64;
        for late_ms in [0u64, 40] {
            for (jitter, spikes) in [(0.0, false), (0.3, false), (0.8, false), (0.8, true)] {
                let mut row = String::new();
                for step in 0..=10 {
                    let rtt = f64::from(step) * 0.005;
                    let mut least = f64::MAX;
                    for seed in 0..12 {
                        let late = Duration::from_millis(late_ms);
                        let (rate, left) = steady(rtt, jitter, spikes, late, seed, bugs);
                        most = most.max(rate);
                        least = least.min(left);
                    }
                    if least < worst.0 {
                        worst = (least, rtt, jitter);
                    }
                    row.push_str(&format!(" {least:.3}"));
                }
                let spikes = if spikes { " spikes" } else { "" };
                println!(
                    "late {late_ms:>2} ms, jitter {jitter:.1}{spikes}: least left (T) at rtt up to 0..0.05 T:{row}"
                );
            }
        }
        println!(
            "heartbeats per T at most: {most:.1}; least left {:.3} T (rtt {:.3} T, jitter {:.1})",
            worst.0, worst.1, worst.2
        );
        (worst.0, most)
    }

    /// In steady state the clock keeps at least `0.3 T` ahead on every
    /// network whose round trips stay under `0.05 T` (the silent outage
    /// protocol section 5 covers is `0.3 T` there: the heartbeats sent
    /// during it credit, when it ends, only what was answered before it
    /// began), however they vary below that, with timers that fire late,
    /// and sends at most 16 heartbeats per `T` (twice the `T / 8` grid).
    /// Seen: 12 beats per `T`, at least 0.337 T left; the schedule before
    /// (a beat at every moment a reply could first count) sent 25.6 and
    /// kept 0.306 T. A fixed `T / 8` grid (the schedule outside attack round
    /// 39, F1, broke) keeps only 0.21 T: with the `history` feature the
    /// test shows that it fails then. Prints the table:
    /// `cargo test -p zklock-proto --lib steady -- --nocapture`.
    #[test]
    fn the_heartbeat_keeps_the_clock_ahead_in_steady_state() {
        let (least, most) = steady_worst(Bugs::default());
        assert!(least >= 0.3, "the clock had {least:.3} T left");
        assert!(most <= 16.0, "{most} heartbeats per T");
        if cfg!(feature = "history") {
            let (least, _) = steady_worst(Bugs { fixed_grid: true, ..Bugs::default() });
            assert!(least < 0.3, "a fixed grid kept {least:.3} T");
        }
    }
}

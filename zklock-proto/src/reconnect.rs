//! The session layer's reconnect policy (protocol section 5): how long a
//! reconnect may try, how long each attempt waits for its connect's
//! answer, how far apart rounds of attempts come, which server is tried
//! next ([`RoundRobin`]), and when to give up.
//! Pure: the caller (`zklock-zk`'s session task, and the reconnect search
//! in this crate's tests, which run the same [`RoundRobin`]) reads the
//! clock and makes the connections; this says what to do at each instant
//! it is given.
//!
//! The rules serve the safety clock ([`crate::clock`]), which credits a
//! reconnect from its connect request's send time once a write on the new
//! connection is answered, and counts the new connection's heartbeats only
//! `T/3` after their answers:
//!
//! - Rounds of attempts come at most `T/40` apart (at least 25 ms, at most
//!   1 s): every moment between the end of an outage and the reconnect
//!   spends the clock (an outside test: with rounds up to 1.5 s apart, a
//!   0.4 T outage of refused connections cost the lock in 5 of 8 runs at
//!   T = 4 s).
//! - After a reset (or a close) the client asks the server it was on
//!   first, waiting at least `T/3` for it: that server answered until a
//!   moment ago, so it is likely there, perhaps slow or stalled for a
//!   moment, where the next may be hung (accepts connections, never
//!   answers: a member in a long GC pause, a frozen VM; outside attack
//!   rounds 25 and 27: a hung server next in the list ran the clock out
//!   behind it; [`Bugs::next_first_after_reset`]). A server that reset
//!   because it went down refuses at once. After a silence (the read
//!   timeout) it asks the next server first.
//! - An attempt waits for its connect's answer the timeout's share among
//!   the servers (at least 500 ms or `T/4`, whichever is less; among at
//!   least three, unless there is only one) in the first round, twice that
//!   in the second and so on, up to the whole timeout: servers that answer
//!   every connect later than the share (loaded, or behind a slow proxy)
//!   are reached in a later round (one later than `T` less the
//!   connection's round trips never is). A third, not a half, with two servers:
//!   with the other hung, a short refusal of the client's own server (a
//!   restart) sends it there for longer than the clock lasts (round 25,
//!   F3; [`Bugs::half_share_for_two`]). But until the reconnect is `T` old,
//!   a server whose connect went unanswered waits only `T/40` (the longest
//!   pause between rounds; `T/8` if its last attempt never wrote its
//!   connect, [`Ended::Unsent`]) in a round after one in which another
//!   refused or reset: the refused one may be
//!   back any moment and is asked again soon (round 27, F1: one hung and
//!   one restarting for 0.34-0.5 T, the session expired while the client
//!   waited on the hung one; [`Bugs::full_share_for_unanswered`]). An
//!   attempt is never given up earlier than that: connects given
//!   up still revalidate the session on the server, can move its owner to a
//!   member the client left (its next write then fails with
//!   `SessionMoved`), and the time spent on them is time the session may
//!   expire in (outside attack round 23: R1-R3, against
//!   [`Bugs::quick_retries`]).
//! - A connect is used however late it was answered (a server stalled,
//!   not down: its kernel accepted the connection and it answered when it
//!   ran again): the clock credits its send time in full once a write on
//!   the connection is answered, which lasts until the connection's
//!   heartbeats count after a stall of up to about `0.5 T`. (Until outside
//!   attack round 33, F2, the credit was `T/3` less and came with the
//!   first answer, which ran out before the heartbeats counted from a lag
//!   of about `0.23 T` (round 22, F1); a connect answered more than `T/6`
//!   late was then closed unused and the same server asked once more. Now
//!   that would only cost a server slow to answer every connect a second
//!   wait.)
//! - The reconnect gives up (the session counts as expired) `4/3 T` after
//!   the server was last heard from (a connect's answer counts although a
//!   login step after it failed: [`Ended::AnsweredThenFailed`]), or after
//!   an attempt whose connect was sent ended unanswered, or after the loss
//!   of a connection with requests in flight: a server may have read that
//!   connect or those requests and touched the session (a stalled server
//!   reads them when it runs again; one that ran again for a moment may
//!   have read them just before it went down), so the session may live
//!   until `T` after it. So
//!   it gives up only once no server's process answered for `4/3 T`
//!   (refused, unreachable, no TCP connection, or a connection closed
//!   unanswered, as a member without a quorum closes it: a quorum lost
//!   that long costs the session, outside attack round 38, F2); a server
//!   that accepts connections and never answers keeps it trying. (The reconnect search
//!   in this crate's tests found the client giving up a live session when
//!   three servers each answered later than their share.) A client whose
//!   own process stalled past that time (a call of the rounds later than
//!   the deadline they handed out by more than `T/10`) asks once more
//!   first: for `T/3` after it runs again, the rounds go on; a new leader
//!   gives every session a full timeout, a touch the client cannot see
//!   (the simulator gave such a live session up about once in 60,000
//!   schedules).
//! - A server's answer that the session is expired is taken as final only
//!   once another server says it too; meanwhile the reconnect asks each
//!   other server once, at once, and takes the word if none gives a
//!   connection, or at its give-up time as it stood then (at least `T/3`
//!   on; an unanswered attempt no longer puts it off:
//!   [`RoundRobin::said_expired`]): a leader
//!   deposed while it stalled answers a reconnect from its own stale record
//!   when it runs again (its expiry of the session can never commit) while
//!   the new quorum keeps the session (outside attack round 36, F3;
//!   [`Bugs::expired_believed_at_once`]). A true expiry costs a connect
//!   to each other server; a client that knows only the stale member
//!   believes it, as ZooKeeper's own client and kazoo do.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Bugs zklock once had or that a reconnect policy could have, each
/// switched on by its switch when this crate is built with the `history`
/// feature: the reconnect search in this crate's tests must find each.
/// Without the feature every switch is ignored.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bugs {
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
    /// policy before the reconnect search): two or three servers each
    /// answering connects later than `T/3` are never reached, and the session is
    /// given up while every connect touched it (a false expiry).
    pub fixed_share: bool,
    /// With two servers, an attempt of the first round waits half the
    /// timeout, the timeout's share among them (the policy before round 25's
    /// F3): with the other address hung (accepting, never answering), a
    /// reset (before round 27) or a short refusal of the healthy server
    /// runs the clock out while the client waits for the hung one.
    pub half_share_for_two: bool,
    /// After a reset, start with the next server (the policy before round
    /// 27): one hung server next in the list (2 of 7, 1 of 3) or a healthy
    /// one answering connects 0.1 T late behind a hung one ran the clock out
    /// (round 27, F2 to F4).
    pub next_first_after_reset: bool,
    /// A server that went unanswered gets its whole share again in the
    /// next round although another refused (the policy before round 27):
    /// with one server hung and the other restarting for 0.34-0.5 T, the
    /// second round waited `2T/3` on the hung one while the other came
    /// back, and the session expired (round 27, F1); with five servers, one
    /// hung, the others restarting for 0.25-0.3 T, each round's `T/5` on
    /// the hung one ran the clock out.
    pub full_share_for_unanswered: bool,
    /// A close sent on a connection that was then lost (reset, silent, a
    /// failed write) counts as done (the policy before outside attack round
    /// 28, F1): the close may never have reached the server, and the
    /// session's nodes stayed until it expired.
    pub close_lost_is_done: bool,
    /// A close asked while reconnecting ends the session's task at once,
    /// sending nothing (the policy before outside attack round 25, F1):
    /// the nodes stayed until the server expired the session.
    pub close_ends_reconnect: bool,
    /// A close asked while reconnecting is only held for the next
    /// connection, not written behind the reconnect attempts' connect
    /// requests (the policy before outside attack round 30, F2): a server
    /// stalled with an attempt's connect in its socket, read when it runs
    /// again after the process exited, renews the session instead of
    /// ending it.
    pub close_not_behind_connect: bool,
    /// A new server list while reconnecting starts the rounds again from
    /// its first with fresh waits, and the attempt it broke off does not
    /// put giving up off (the policy before outside attack round 29, O2):
    /// a list refreshed while the client waits on a hung server first in it
    /// gives that server a fresh wait each time (the session expired), and
    /// a server slow to answer read the broken-off connects after the
    /// client had counted on none (a false expiry: the reconnect search).
    pub set_hosts_restarts_wait: bool,
    /// A new server list starts a new round: from the attempt in progress
    /// if it goes on (it counts as the round's first), else from the new
    /// list's first (the policy of session 32's first change, before
    /// outside attack round 35, F1): a list refreshed between attempts
    /// asks its first servers again before the ones the round had not
    /// reached, and hung servers first in a list refreshed often are asked
    /// again and again before a healthy one.
    pub set_hosts_restarts_round: bool,
    /// An attempt on a server the new list keeps goes on whatever its wait
    /// (the policy before outside attack round 35, F2): servers added to a
    /// list whose only server hangs are asked only after that server's
    /// wait of the whole session timeout, and the session expires.
    pub set_hosts_keeps_any_wait: bool,
    /// A kept attempt's wait is measured against a fresh attempt's in the
    /// round as it stands, also when the new list added servers (the
    /// policy before outside attack round 51, F1): with the list
    /// alternating between a hung server alone and it with a healthy one,
    /// an attempt on the hung one alone waited the whole timeout (a
    /// one-server list's share), each such list ended a round, and a fresh
    /// attempt's wait on the grown list, doubled with the rounds, reached
    /// the whole timeout too: the kept attempt went on, the added server
    /// was never asked in time, and the session expired.
    pub added_wait_doubled: bool,
    /// Every attempt a new list does not let go on is waited for up to
    /// [`Reconnect::left_wait`] (the policy of session 42, before the
    /// reconnect search's alternating lists): with the list alternating
    /// between a hung server alone and a healthy one (alone, or with the
    /// hung one) every `T/20`, each wait for a hung attempt ended in a list
    /// of the hung one alone, the next attempt went to it again, and the
    /// next list's cut waited for that one too: the healthy server was
    /// never asked.
    pub left_waited_again: bool,
    /// The servers a new list's round has still to try, and each round's,
    /// are asked in the list's order (from the one that was next; from
    /// the start), not the least recently asked first (the policy before
    /// outside attack round 52, F2): with two hung servers alone in turn
    /// with them and a healthy one, the healthy one came after them in
    /// each round, its turn came in a list without it, round after round,
    /// and the session expired.
    pub asked_in_list_order: bool,
    /// A server a list dropped and brought back counts as not tried in the
    /// round (the policy before outside attack round 54, F1): with lists
    /// swapping two hung servers beside a healthy one that the round had
    /// tried (hung a moment, or slow), each hung one came back as untried,
    /// the round never ended, and the healthy one was never asked again.
    pub tried_by_index: bool,
    /// A server counts as tried in the round, by address, only if an
    /// attempt there reached it (its TCP connection accepted), as the
    /// order counts it (session 44's first form of the round-54 fix,
    /// before its review): an attempt a list broke off before the server
    /// accepted its connection (a host that drops SYNs) was forgotten, the
    /// server came back untried at each list that brought it back, and a
    /// healthy server beside it was never asked again.
    pub tried_when_reached: bool,
    /// An attempt that never reached its server counts in the order only
    /// if it ran its wait out, however long a list let it wait before it
    /// broke it off (session 44's final form): hosts that drop SYNs,
    /// swapped in turn beside the own server hung a moment, stayed never
    /// asked, went first in every round, and the own server, healthy
    /// again, was not asked before the session expired (the reconnect
    /// search's grid).
    pub unreached_never_counted: bool,
    /// An attempt whose TCP connect or TLS handshake ran its time out
    /// counts as a refusal, its server not as unanswered (the session
    /// layer before session 45): beside a host that drops SYNs, a server
    /// slow to answer connects got only a brief wait in every round (as
    /// after a refusal), and was not reached before the session expired
    /// (the reconnect search).
    pub unsent_as_refused: bool,
    /// An attempt on a server whose last one ended before its connect was
    /// written waits as the rounds lengthen it, up to the whole timeout
    /// (the session layer before session 45): with a host that drops SYNs
    /// (or a server hung in the TLS handshake) beside a server answering
    /// connects `0.38 T` late, each wait on the first left the second less
    /// than that before the give-up time (put off by its late-read
    /// connects), round after round: the reconnect never ended, a close
    /// held for ever (the reconnect search). (Kept to a first round's
    /// share, two such hosts beside a server answering `0.9 T` late did
    /// the same.)
    pub unsent_waits_doubled: bool,
    /// ... waits only the longest pause between rounds (`T/40`, a version
    /// of session 45), also while another refuses: with
    /// [`Bugs::unsent_capped_again`] too, a server stalled past its first
    /// wait as its connection was reset, over TLS on a network with round
    /// trips of `0.05 T`, never had its handshake answered in time again
    /// (`a_server_stalled_past_its_first_wait_is_reached_over_a_slow_network`);
    /// while another refused, members that dropped SYNs for a while, 60 ms
    /// away at `T = 2 s`, were not reached again before the session expired
    /// (outside attack round 56, F2; a unit test, the model has no such
    /// fault).
    pub unsent_wait_brief: bool,
    /// Every round shortens such waits, not every other (a version of
    /// session 45): a server that takes a connection more slowly than
    /// [`Rules::unsent_wait`] (a loaded one, a slow network) was never
    /// reached again.
    pub unsent_capped_again: bool,
    /// ... waits `T/10` (session 45): no margin for a TCP connect and a
    /// TLS handshake at round trips of `0.05 T` (see
    /// [`Rules::unsent_wait`]).
    pub unsent_wait_tenth: bool,
    /// A list that adds servers lets an attempt go on on a server whose
    /// last attempt never wrote its connect (see [`RoundRobin::set_hosts`]).
    pub silent_kept_beside_added: bool,
    /// The give-up time cuts every attempt's wait, also on a server whose
    /// last connect was written and went unanswered (the policy before
    /// session 46): beside two hosts dropping SYNs, a server answering
    /// connects `0.26 T` late had each attempt cut at `0.21 T` (each of its
    /// ends put giving up off by `4/3 T`, and one whole wait on a dead host
    /// came between any two), round after round: the reconnect never ended,
    /// a close held for ever (the reconnect search, run 3,239,900).
    pub written_unanswered_cut: bool,
    /// ... and that wait past the give-up time also holds for the attempt's
    /// name lookup, TCP connect and TLS handshake (the first version of
    /// session 46's rule, before review): a member that answered late,
    /// then dropped SYNs, held the reconnect up to `T` past giving up
    /// though no connect was written that it could answer.
    pub unwritten_past_giving_up: bool,
    /// A client whose process stalled past the give-up time gives up at
    /// once when it runs again, without asking a server (the policy before
    /// session 32): a session a new leader extended meanwhile is given up
    /// alive (a false expiry).
    pub no_stall_grace: bool,
    /// A connect answered before its attempt failed (a reset during the
    /// handshake's SASL or `addAuth` step) does not put giving up off (the
    /// policy before session 33): the session, renewed by that connect, is
    /// given up `4/3 T` after the last answer of a connection used.
    pub answer_before_failure_forgotten: bool,
    /// A connection reset or closed with requests in flight does not put
    /// giving up off (the policy before session 33): a server that read
    /// them just before it went down (a stalled one that ran again for a
    /// moment) touched the session, and the client gave it up early.
    pub reset_in_flight_forgotten: bool,
    /// A server's answer that the session is expired ends the reconnect at
    /// once (the policy before session 34, as ZooKeeper's own client and
    /// kazoo do): a leader deposed while it stalled, answering from its
    /// stale record, ended a session the new quorum kept (outside attack
    /// round 36, F3).
    pub expired_believed_at_once: bool,
    /// After a server's "expired" the rounds go on as they would (the same
    /// server asked again, pauses between rounds) until the give-up time
    /// as it stood then (session 34's first version, before outside attack
    /// round 38, F1): a session truly expired whose other servers refused
    /// was told `4/3 T` late, its one reachable server asked 40 times.
    pub expired_asked_again: bool,
}

impl Bugs {
    /// Whether the bug `which` is switched on (never without `history`).
    fn on(&self, which: fn(&Bugs) -> bool) -> bool {
        cfg!(feature = "history") && which(self)
    }
}

/// One reconnect of a session: from the loss of a connection until a new
/// one is used or the reconnect gives up.
#[derive(Clone, Copy, Debug)]
pub struct Reconnect {
    timeout: Duration,
    hosts: usize,
    last_heard: Instant,
    give_up_at: Instant,
    /// When the connection was lost ([`Reconnect::lost`]).
    lost_at: Instant,
    /// Rounds of attempts over the servers that ended so far.
    round: u32,
    /// The reconnect went on past its give-up time once because the
    /// client's process stalled ([`Rules::ran_again`]).
    stall_grace_used: bool,
    /// A server said the session is expired: the reconnect gives up by
    /// then, whatever puts it off after ([`Rules::said_expired`]).
    expired_by: Option<Instant>,
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
            lost_at: last_heard,
            round: 0,
            stall_grace_used: false,
            expired_by: None,
            bugs: Bugs::default(),
        }
    }

    /// Switches on the bugs `bugs` (only with the `history` feature;
    /// without it this does nothing).
    #[doc(hidden)]
    pub fn set_bugs(&mut self, bugs: Bugs) {
        self.bugs = bugs;
    }

    /// The connection this reconnects from was lost at `at`, with requests
    /// sent on it and not answered if `in_flight`. One lost to its
    /// [`read_timeout`] (silent that long since the server was last heard
    /// from, so with requests unanswered: the heartbeats' at least) counts
    /// as an attempt that ended unanswered then ([`Reconnect::unanswered`]):
    /// a stalled server reads those requests when it runs again, and
    /// touches the session then. So does one reset or closed with requests
    /// in flight: the server may have read them just before (a stalled
    /// server that ran again for a moment and went down), its answers lost
    /// with the connection (the reconnect search found the session given
    /// up `0.3 T` before the server could expire it).
    ///
    /// Returns whether it was lost silent: else it was reset or closed,
    /// and its server answered until a moment ago.
    pub fn lost(&mut self, at: Instant, in_flight: bool) -> bool {
        self.lost_at = at;
        let silent = at >= self.last_heard + read_timeout(self.timeout);
        if silent || (in_flight && !self.bugs.on(|b| b.reset_in_flight_forgotten)) {
            self.unanswered(at);
        }
        silent
    }

    /// The server list changed to `hosts` servers (same deadline).
    pub fn set_hosts(&mut self, hosts: usize) {
        self.hosts = hosts.max(1);
    }

    /// How long after it started an attempt a new server list left
    /// ([`RoundRobin::set_hosts`] said it does not go on) is still waited
    /// for once its connect was written: `T/10` (never past the attempt's
    /// own wait; [`RoundRobin::left_until`]). Its server
    /// reads the connect whether or not the client waits: answered, its
    /// revalidation of the session came first, and the next server's
    /// makes that one the session's owner; broken off at once, a server a
    /// moment slow (a network's latency) read it after the next server's,
    /// took the session over, and the server the client was on refused
    /// its next write and closed the connection (outside attack rounds 49
    /// and 50, F1). Bounded, so that a stalled server (which reads it
    /// whenever it runs again, whatever the client does) holds the move
    /// back only briefly.
    pub fn left_wait(&self) -> Duration {
        self.timeout / 10
    }

    /// When the reconnect gives up: the session is then taken as expired.
    pub fn give_up_at(&self) -> Instant {
        self.expired_by.map_or(self.give_up_at, |by| by.min(self.give_up_at))
    }

    /// The longest pause between two rounds of attempts (the pause doubles
    /// from 50 ms up to this).
    pub fn max_backoff(&self) -> Duration {
        (self.timeout / 40).clamp(Duration::from_millis(25), Duration::from_secs(1))
    }

    /// Until when an attempt started at `now` waits for its connect's
    /// answer (name lookup, TCP and TLS included).
    pub fn attempt_until(&self, now: Instant) -> Instant {
        let among =
            if self.hosts == 1 || self.bugs.on(|b| b.half_share_for_two) { self.hosts } else { self.hosts.max(3) };
        // At least 500 ms for the name lookup and the handshakes, but no
        // more than T/4: at T = 1 s a floor of half the timeout outlasted
        // the clock behind one hung server (round 27, F3).
        let floor = Duration::from_millis(500).min(self.timeout / 4);
        let share = (self.timeout / among as u32).max(floor);
        if self.bugs.on(|b| b.quick_retries) {
            let quick_until = (self.last_heard + self.timeout / 2).min(self.give_up_at());
            if now < quick_until {
                let quick = (self.timeout / 8).max(Duration::from_millis(200));
                return quick_until.min(now + quick.min(share));
            }
            return self.give_up_at().min(now + share);
        }
        if self.bugs.on(|b| b.fixed_share) {
            return self.give_up_at().min(now + share);
        }
        let wait = share.saturating_mul(1 << self.round.min(16)).min(self.timeout.max(share));
        self.give_up_at().min(now + wait)
    }

    /// Until when an attempt started at `now` would wait in a first round
    /// (its share among the servers, not doubled by rounds that ended;
    /// [`Rules::attempt_until`]).
    fn first_round_until(&self, now: Instant, written_unanswered: bool) -> Instant {
        Rules::attempt_until(&Reconnect { round: 0, ..*self }, now, written_unanswered)
    }

    /// A round of attempts over every server ended without a connection:
    /// the next round's attempts wait twice as long (servers slow to answer
    /// are reached; but see [`Rules::short_wait`]).
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

    /// An attempt's connect was answered at `at` and the attempt failed
    /// after it, before its connection was used (the SASL or `addAuth`
    /// step of the handshake reset or answered wrongly): the server renewed
    /// the session when it read the connect, so, as after any answer, the
    /// reconnect gives up no earlier than `4/3 T` after it. (It counted
    /// only the answers of connections it used: a client whose servers
    /// went away right after such an answer gave a live session up.)
    pub fn answered(&mut self, at: Instant) {
        if self.bugs.on(|b| b.answer_before_failure_forgotten) {
            return;
        }
        self.give_up_at = self.give_up_at.max(at + self.timeout * 4 / 3);
    }
}

/// A close of the session, from the moment it is asked until it is sent
/// and answered or given up (protocol section 5). A close tells the server
/// to end the session and its ephemeral nodes at once; one that does not
/// reach it leaves them until the session expires, holding waiters back
/// for up to a session timeout. So a close asked while reconnecting is held
/// and goes with the next connection: the session layer writes it right
/// behind each reconnect attempt's connect request (also into an attempt
/// already waiting for its answer), so that a server stalled with that
/// connect in its socket reads the close too when it runs again (the calls
/// held before the close are then not sent: the session's nodes go with
/// it). One sent on a connection lost before its answer (or behind a
/// connect answered without the close's answer) is sent again on the next
/// connection, once: a server that takes connections and never answers a
/// close would otherwise be asked for ever. The caller bounds
/// how long it waits for the close (`zklock-core`'s `Client::close`, the
/// CLI's exit); the session layer goes on trying until the close is
/// answered, sent twice, or the reconnect gives up.
#[derive(Clone, Copy, Debug, Default)]
pub struct Closing {
    sent_again: bool,
    bugs: Bugs,
}

impl Closing {
    /// A close asked now, not yet sent.
    pub fn new() -> Closing {
        Closing::default()
    }

    /// Switches on the bugs `bugs` (only with the `history` feature;
    /// without it this does nothing).
    #[doc(hidden)]
    pub fn set_bugs(&mut self, bugs: Bugs) {
        self.bugs = bugs;
    }

    /// The close was asked while the session reconnects: whether to hold
    /// it and send it on the next connection (always, but with
    /// [`Bugs::close_ends_reconnect`]) rather than end the session's task
    /// at once.
    pub fn hold_while_reconnecting(&self) -> bool {
        !self.bugs.on(|b| b.close_ends_reconnect)
    }

    /// The close was asked while reconnecting (it is held): whether to
    /// write it right behind each reconnect attempt's connect request, also
    /// into the attempt already waiting for its answer (always, but with
    /// [`Bugs::close_not_behind_connect`]), so that a server that reads
    /// that connect (one stalled with it in its socket, when it runs
    /// again) reads the close too.
    pub fn behind_connect(&self) -> bool {
        !self.bugs.on(|b| b.close_not_behind_connect)
    }

    /// The connection the close was sent on was lost before its answer
    /// came (reset, silent, a failed write): whether to send it again on
    /// the next connection (the first time) rather than count it as done.
    /// (A connection the server closes after a close is not lost: ZooKeeper
    /// answers a close, then closes the connection, so that counts as the
    /// answer.)
    pub fn send_again(&mut self) -> bool {
        if self.bugs.on(|b| b.close_lost_is_done) {
            return false;
        }
        !std::mem::replace(&mut self.sent_again, true)
    }
}

/// How long a connection to a session of timeout `timeout` may stay
/// silent (no whole answer read) before the client counts it as lost: two
/// thirds of the timeout, as ZooKeeper's own client. Its heartbeats go a
/// third of the timeout after the last request sent.
pub fn read_timeout(timeout: Duration) -> Duration {
    timeout * 2 / 3
}

/// The rules a [`RoundRobin`] follows: a reconnect's ([`Reconnect`]) or a
/// new session's ([`NewSession`]).
pub trait Rules {
    /// When to give up.
    fn give_up_at(&self) -> Instant;
    /// Until when an attempt started at `now` waits for its connect's
    /// answer; on a server whose last connect was written and went
    /// unanswered if `written_unanswered`.
    fn attempt_until(&self, now: Instant, written_unanswered: bool) -> Instant;
    /// The longest pause between two rounds.
    fn max_backoff(&self) -> Duration;
    /// How long an attempt waits, at most, on a server whose last attempt
    /// ended before its connect was written ([`Ended::Unsent`]; `None`:
    /// as any other).
    fn unsent_wait(&self) -> Option<Duration>;
    /// A round over every server ended without a connection.
    fn round_over(&mut self);
    /// An attempt whose connect was sent ended unanswered at `ended`.
    fn unanswered(&mut self, ended: Instant);
    /// An attempt whose connect was answered at `at` failed after it.
    fn answered(&mut self, at: Instant);
    /// How long an attempt waits, at most, on a server whose connect went
    /// unanswered in an earlier round while another refused in the last
    /// one, at `now` (`None`: its whole share); [`RoundRobin`] waits no
    /// less than [`Rules::unsent_wait`] on one whose last attempt never
    /// wrote its connect.
    fn short_wait(&self, now: Instant) -> Option<Duration>;
    /// How long the first attempt of a reconnect after a reset waits at
    /// least, on the server that answered until a moment ago.
    fn own_server_wait(&self) -> Duration;
    /// Whether a first round in which every server was unusable (refused,
    /// a name that does not resolve, TLS refused: reasons waiting will not
    /// change) ends the rounds ([`Next::Unreachable`]).
    fn unreachable_ends(&self) -> bool;
    /// The rounds are asked what to do at `now`, having handed out a wait
    /// (an attempt's or a pause's) that ended at `expected`: a call much
    /// later than that means the client's own process stalled.
    fn ran_again(&mut self, now: Instant, expected: Instant);
    /// A server answered at `now` that the session is expired, the first
    /// in this connect: whether that is final at once (else
    /// [`RoundRobin::said_expired`] asks the others, and the rules say how
    /// long).
    fn said_expired(&mut self, now: Instant) -> bool;
    /// The bugs switched on (the tests' models only; none by default).
    #[doc(hidden)]
    fn bugs(&self) -> Bugs {
        Bugs::default()
    }
}

impl Rules for Reconnect {
    fn bugs(&self) -> Bugs {
        self.bugs
    }
    fn give_up_at(&self) -> Instant {
        Reconnect::give_up_at(self)
    }
    /// [`Reconnect::attempt_until`]; on a server whose last connect was
    /// written and went unanswered, not cut by the give-up time (only by a
    /// server's "expired": [`Rules::said_expired`]): such a server may be
    /// reading connects late (slow to answer them, or stalled), each read
    /// renewing the session and each unanswered end putting giving up off
    /// by `4/3 T`; cut by the give-up time, a server answering connects
    /// `0.26 T` late, asked each time with less than that left (one whole
    /// wait on a host dropping SYNs came between any two of its attempts),
    /// never had an answer read: the reconnect never ended, a close held
    /// for ever (the reconnect search). Its answer ends the reconnect one
    /// way or the other: a connection, or "expired". A hung one (which
    /// never reads them) already keeps a reconnect going, its unanswered
    /// ends putting giving up off: this only lets it wait out its wait
    /// (at most `T`). Only once its connect is written: its name lookup,
    /// TCP connect and TLS handshake still end by the give-up time
    /// ([`RoundRobin::write_by`]; a server that answered late and then
    /// dropped SYNs held a reconnect up to `T` past it, review of session
    /// 46). No attempt starts past the give-up time ([`RoundRobin::next`]).
    fn attempt_until(&self, now: Instant, written_unanswered: bool) -> Instant {
        // (Not under the policies before the reconnect search, whose
        // unanswered ends put nothing off.)
        let cut = self.bugs.on(|b| b.written_unanswered_cut || b.quick_retries || b.fixed_share);
        if written_unanswered && !cut {
            return Reconnect { give_up_at: now + self.timeout * 2, ..*self }.attempt_until(now);
        }
        Reconnect::attempt_until(self, now)
    }
    fn max_backoff(&self) -> Duration {
        Reconnect::max_backoff(self)
    }
    fn round_over(&mut self) {
        Reconnect::round_over(self)
    }
    fn unanswered(&mut self, ended: Instant) {
        Reconnect::unanswered(self, ended)
    }
    fn answered(&mut self, at: Instant) {
        Reconnect::answered(self, at)
    }
    /// The longest pause between rounds (`T/40`, 25 ms to 1 s) until the
    /// reconnect is `T` old: the refused server may be back any moment (a
    /// restart), and the one that did not answer may be hung; waiting its
    /// whole share again (`T/n`) kept the client from the other for too
    /// long (outside attack round 27, F1 with five servers), and `T/16`
    /// still cost the lock after refusals of 0.34-0.4 T (round 29, F1).
    fn short_wait(&self, now: Instant) -> Option<Duration> {
        (now < self.lost_at + self.timeout && !self.bugs.on(|b| b.full_share_for_unanswered))
            .then(|| self.max_backoff())
    }
    /// `T/8`: a TCP connect and a TLS 1.3 handshake, a round trip each,
    /// and the connect written, on a network as slow as the clock covers
    /// (round trips up to `0.05 T`, with `0.025 T` to spare; a TLS 1.2
    /// handshake's second round trip, or a name lookup's retries, do not
    /// fit: those are reached in the rounds that do not shorten, and,
    /// while another refuses, only once the reconnect is `T` old). At
    /// `T/10` (session 45; [`Bugs::unsent_wait_tenth`]) there was no margin:
    /// once the model's TCP connect took its round trip (session 46), a
    /// member that dropped SYNs for `0.1-0.5 T` after a reset, over TLS
    /// at round trips of `0.05 T`, had every shortened attempt end just as
    /// its handshake did, and the session expired. Once
    /// such a server can answer, a connection takes only its round trips;
    /// waited for as the rounds lengthen it (up to `T`), or for a first
    /// round's share, such servers left a server slow to answer connects,
    /// asked after them, too little before the give-up time (put off by
    /// its own connects, read late), round after round: the reconnect
    /// never ended (the reconnect search). Not `T/40`: a server stalled
    /// past its first wait was then never reached over a network with
    /// round trips over `T/40` (the search's slow networks).
    fn unsent_wait(&self) -> Option<Duration> {
        if self.bugs.on(|b| b.unsent_wait_brief) {
            return Some(self.max_backoff());
        }
        if self.bugs.on(|b| b.unsent_wait_tenth) {
            return Some(self.left_wait());
        }
        Some(self.timeout / 8)
    }
    /// `T/3` (the share with three servers), also with more: the server
    /// answered until a moment ago, so it is likely slow or stalled for a
    /// moment, not gone; with five servers its share `T/5` gave up on a
    /// stall or a slow answer the clock would have outlasted.
    fn own_server_wait(&self) -> Duration {
        self.timeout / 3
    }
    /// Never: a session's servers may come back before it expires.
    fn unreachable_ends(&self) -> bool {
        false
    }
    /// A stall of the client's own process (a call more than `T/10`
    /// after the wait handed out ended) that ran past the give-up time
    /// puts giving up off once, to `T/3` after it runs again: the session
    /// may well be alive (a new leader gives every session a full timeout
    /// from when it takes over, which the client cannot see), and only a
    /// server can say. Only once: a client that stalls again and again
    /// gives up at its next chance.
    fn ran_again(&mut self, now: Instant, expected: Instant) {
        if self.stall_grace_used || self.bugs.on(|b| b.no_stall_grace) {
            return;
        }
        if now >= self.give_up_at && now > expected + self.timeout / 10 {
            self.stall_grace_used = true;
            self.give_up_at = now + self.timeout / 3;
        }
    }
    /// No: the other servers are asked first (outside attack round 36,
    /// F3), until the give-up time as it stands now (at least `T/3` from
    /// now): the reconnect then gives up (the answer stands), however an
    /// unanswered attempt would put it off after (a server that hangs
    /// would otherwise keep a truly expired session trying for ever).
    fn said_expired(&mut self, now: Instant) -> bool {
        if self.bugs.on(|b| b.expired_believed_at_once) {
            return true;
        }
        let by = self.give_up_at().max(now + self.timeout / 3);
        self.expired_by.get_or_insert(by);
        false
    }
}

/// A new session's rules: until the connect timeout, each attempt given its
/// share, rounds up to 1 s apart (no session to keep alive yet); a first
/// round in which every server was unusable ends it.
#[derive(Clone, Copy, Debug)]
pub struct NewSession {
    deadline: Instant,
    per_attempt: Duration,
}

impl NewSession {
    /// A new session's connect started at `started` to one of `hosts`
    /// servers, given `connect_timeout`, asking for `session_timeout`: each
    /// server gets its share of the connect timeout (or of the session
    /// timeout, if shorter), at least 500 ms, so that a silent one does not
    /// use up the time of the others.
    pub fn new(started: Instant, connect_timeout: Duration, session_timeout: Duration, hosts: usize) -> NewSession {
        let share = session_timeout.min(connect_timeout) / hosts.max(1) as u32;
        NewSession { deadline: started + connect_timeout, per_attempt: share.max(Duration::from_millis(500)) }
    }
}

impl Rules for NewSession {
    fn give_up_at(&self) -> Instant {
        self.deadline
    }
    /// Its share, never past the connect timeout (the caller's bound),
    /// whatever the server did before.
    fn attempt_until(&self, now: Instant, _: bool) -> Instant {
        self.deadline.min(now + self.per_attempt)
    }
    fn max_backoff(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn round_over(&mut self) {}
    fn unanswered(&mut self, _: Instant) {}
    /// Nothing: the connect timeout is the caller's bound.
    fn answered(&mut self, _: Instant) {}
    fn short_wait(&self, _: Instant) -> Option<Duration> {
        None
    }
    fn own_server_wait(&self) -> Duration {
        Duration::ZERO
    }
    /// None: the connect timeout is the caller's bound.
    fn unsent_wait(&self) -> Option<Duration> {
        None
    }
    fn unreachable_ends(&self) -> bool {
        true
    }
    /// Nothing: the connect timeout is the caller's bound.
    fn ran_again(&mut self, _: Instant, _: Instant) {}
    /// Yes: a new session has no session of its own to keep.
    fn said_expired(&mut self, _: Instant) -> bool {
        true
    }
}

/// What a [`RoundRobin`] does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Try server `host` (an index into the list), waiting for its
    /// connect's answer until `until`; then say how it went
    /// ([`RoundRobin::ended`]) unless it was answered.
    Try {
        /// The server's index.
        host: usize,
        /// Until when the attempt waits.
        until: Instant,
    },
    /// Pause until `until`, then ask again: the round is over.
    Pause {
        /// The end of the pause.
        until: Instant,
    },
    /// Give up: the rules' time is over (a reconnect: the session counts as
    /// expired).
    GiveUp,
    /// Every server was unusable in the first round of a new session.
    Unreachable,
}

/// How an attempt ended without a connection to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// For a reason waiting will not change soon: refused, a name that
    /// does not resolve, TLS refused.
    Unusable,
    /// Reset or closed before an answer, or failed before its connect was
    /// sent (the server's process was reached or may be).
    Transient,
    /// Its connect was sent and went unanswered until the attempt's end,
    /// at this instant, with the connection open.
    Unanswered(Instant),
    /// Its wait ran out before its connect was written: the name lookup,
    /// the TCP connect or the TLS handshake went unanswered (a host that
    /// drops SYNs, a server hung). Marked unanswered for the rounds, and no
    /// refusal (a dead address in a connect string, counted as refused,
    /// was not marked unanswered and waited on twice its share while the
    /// ensemble was back: outside attack round 55, F2); giving up is not
    /// put off (nothing the server could read); the server's next attempt
    /// waits no longer than [`Rules::unsent_wait`] in every other round (a
    /// connection's round trips, once it can answer).
    Unsent,
    /// Its connect was answered, and the handshake failed after it (a
    /// reset during the SASL or `addAuth` step, a reply it could not use,
    /// no answer in time); the instant is the connect's answer (the server
    /// renewed the session when it read the connect; its login steps it
    /// answers itself and touches nothing: ZooKeeper 3.8's
    /// `processPacket`). Otherwise as `Transient`.
    AnsweredThenFailed(Instant),
}

/// When a reconnect last asked each server, by the caller's name for it
/// (an address), for [`RoundRobin::set_hosts`]: a server a list drops has
/// no index in the rounds and may come back.
#[derive(Clone, Debug)]
pub struct Asked<H> {
    last: Vec<(H, Ask)>,
    /// The attempt in progress: its server, and its [`Ask::counted`] before.
    current: Option<(H, Option<Instant>)>,
}

/// When a reconnect asked one server ([`Asked::of`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ask {
    /// When its last attempt started (`None`: never): whether it was
    /// tried in a round.
    pub started: Option<Instant>,
    /// When its last attempt that counts started: one that reached it (its
    /// TCP connection accepted), ended (refused, unanswered), or waited
    /// [`Reconnect::left_wait`]; one a list broke off before any of that
    /// does not (the server never saw it: [`RoundRobin::counts`]): the
    /// order of the servers a round has still to try.
    pub counted: Option<Instant>,
}

impl<H: PartialEq + Clone> Asked<H> {
    /// None asked yet.
    pub fn new() -> Asked<H> {
        Asked { last: Vec::new(), current: None }
    }

    fn entry(&mut self, host: &H) -> &mut Ask {
        let at = match self.last.iter().position(|(h, _)| h == host) {
            Some(at) => at,
            None => {
                self.last.push((host.clone(), Ask::default()));
                self.last.len() - 1
            },
        };
        &mut self.last[at].1
    }

    /// An attempt on `host` starts at `now`.
    pub fn ask(&mut self, host: &H, now: Instant) {
        let ask = self.entry(host);
        let before = ask.counted;
        *ask = Ask { started: Some(now), counted: Some(now) };
        self.current = Some((host.clone(), before));
    }

    /// The attempt in progress is over (it counts, written or not: a
    /// refusal is an answer of a kind).
    pub fn ended(&mut self) {
        self.current = None;
    }

    /// The attempt in progress, which a list breaks off, does not count in
    /// the order ([`RoundRobin::counts`]: it had not reached its server nor
    /// waited long for it); it was still tried.
    pub fn unreached(&mut self) {
        if let Some((host, before)) = self.current.take() {
            self.entry(&host).counted = before;
        }
    }

    /// What is known of each of `hosts`; the attempt in progress counts in
    /// the order only if it `counts` ([`RoundRobin::counts`]).
    pub fn of(&self, hosts: &[H], counts: bool) -> Vec<Ask> {
        hosts
            .iter()
            .map(|h| {
                let mut ask = self.last.iter().find(|(a, _)| a == h).map_or(Ask::default(), |&(_, a)| a);
                if let Some((c, before)) = &self.current {
                    if c == h && !counts {
                        ask.counted = *before;
                    }
                }
                ask
            })
            .collect()
    }
}

impl<H: PartialEq + Clone> Default for Asked<H> {
    fn default() -> Asked<H> {
        Asked::new()
    }
}

/// How a server's last attempt in a reconnect ended, as its next one
/// weighs it ([`RoundRobin`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Last {
    /// Answered, refused, or not asked yet.
    #[default]
    Other,
    /// Before its connect was written ([`Ended::Unsent`]; until an attempt
    /// on it writes one): its next waits no longer than
    /// [`Rules::unsent_wait`] in every other round, and a list that adds
    /// servers breaks it off before it writes its connect.
    Unsent,
    /// Its connect written and unanswered ([`Ended::Unanswered`], a
    /// written attempt a list broke off, a connection lost silent): its
    /// next is not cut by the give-up time ([`Rules::attempt_until`]) once
    /// its connect is written.
    WrittenUnanswered,
}

/// The attempts of one connect: servers tried round robin from a start
/// (each round after the first asks the least recently asked first, ties
/// from the start: over a list that did not change, the same order),
/// rounds paused apart (from 50 ms,
/// doubling up to the rules' longest),
/// each attempt given the time the rules say, until they give up. The
/// caller makes the connections and reads the clock; this says what to do
/// at each instant it is given. `zklock-zk`'s session layer and the
/// reconnect search in this crate's tests both run it.
#[derive(Clone, Debug)]
pub struct RoundRobin<R> {
    rules: R,
    hosts: usize,
    /// The server each round starts from.
    start: usize,
    /// The servers this round has still to try, in order.
    queue: VecDeque<usize>,
    /// The server of the attempt last handed out.
    current: usize,
    backoff: Duration,
    first_round: bool,
    all_unusable: bool,
    /// By server: its connect went unanswered in this reconnect.
    unanswered: Vec<bool>,
    /// By server: how its last attempt ended, as the next one weighs it
    /// ([`Last`]).
    last: Vec<Last>,
    /// The attempt handed out last: by when it writes its connect
    /// ([`RoundRobin::write_by`]).
    write_by: Option<Instant>,
    /// A server refused or reset in this round / the last one.
    refused: bool,
    refused_last: bool,
    /// The next attempt is the first, on the server of a connection that
    /// was reset ([`RoundRobin::after_loss`]).
    own_first: bool,
    /// The attempt handed out last and not yet ended: until when it waits.
    waiting_until: Option<Instant>,
    /// ... and when it started, and whether it was a reset's first attempt
    /// on its own server (which waits longer).
    waiting_since: Option<(Instant, bool)>,
    /// Rounds ended so far in this reconnect.
    rounds_ended: u32,
    /// The attempt in progress has written nothing a server could read
    /// ([`RoundRobin::unwritten`]).
    waiting_unwritten: bool,

    /// When the last wait handed out (an attempt's or a pause's) ended:
    /// the next call comes by then, unless the client's process stalled.
    expected: Option<Instant>,
    /// The server that said the session is expired, while the others are
    /// asked ([`RoundRobin::said_expired`]).
    said_expired: Option<usize>,
    /// Set by [`RoundRobin::set_hosts`]: [`RoundRobin::left_until`].
    left_until: Option<Instant>,
    /// An attempt a list left went unanswered until the wait for it
    /// ended, in this reconnect.
    left_unanswered: bool,
    /// When this round began (`None`: the first round, begun before any
    /// attempt): a server asked since is tried in it, under any list.
    round_started: Option<Instant>,
    /// By server: when it was last asked in this reconnect (by a new list:
    /// when its connect was last written, [`Asked`]).
    asked: Vec<Option<Instant>>,
}

impl<R: Rules> RoundRobin<R> {
    /// Rounds over `hosts` servers (at least one is assumed), each round
    /// from the server `start`, following `rules`.
    pub fn new(rules: R, hosts: usize, start: usize) -> RoundRobin<R> {
        let hosts = hosts.max(1);
        let backoff = Duration::from_millis(50).min(rules.max_backoff());
        RoundRobin {
            rules,
            hosts,
            start: start % hosts,
            queue: (0..hosts).map(|k| (start + k) % hosts).collect(),
            current: 0,
            backoff,
            first_round: true,
            all_unusable: true,
            unanswered: vec![false; hosts],
            last: vec![Last::Other; hosts],
            write_by: None,
            refused: false,
            refused_last: false,
            own_first: false,
            waiting_until: None,
            waiting_since: None,
            rounds_ended: 0,
            waiting_unwritten: false,
            expected: None,
            said_expired: None,
            left_until: None,
            left_unanswered: false,
            round_started: None,
            asked: vec![None; hosts],
        }
    }

    /// The rules.
    pub fn rules(&self) -> &R {
        &self.rules
    }

    /// After a [`RoundRobin::set_hosts`] that did not let the attempt in
    /// progress go on: until when the caller still waits for its answer,
    /// if its connect was written: [`Reconnect::left_wait`] after it
    /// started, and, if the new list keeps its server (its wait cut), no
    /// later than a fresh attempt on the new list, started then, would
    /// have waited; `None` if that has passed, if an attempt a list left
    /// went unanswered before in this reconnect, or if no attempt was in
    /// progress: it is broken off at once. (From its start, not from the
    /// new list: one unanswered that long is likely hung, and each moment
    /// more on it is one less for the servers the list added: waited for
    /// `T/10` from the new list, a hung one cost a session the reconnect
    /// search expected to survive.)
    pub fn left_until(&self) -> Option<Instant> {
        self.left_until
    }

    /// By when the attempt handed out last must have written its connect
    /// (its name lookup, TCP connect and TLS handshake done): its wait, but
    /// no later than the give-up time as it stood when it started (past
    /// it only an attempt whose connect a server may read waits on,
    /// [`Rules::attempt_until`]). One that has not written it by then
    /// ends [`Ended::Unsent`]. `None` before the first attempt.
    pub fn write_by(&self) -> Option<Instant> {
        self.write_by
    }

    /// The server of the attempt last handed out (where a new list that
    /// kept it has it: [`RoundRobin::set_hosts`]).
    pub fn current(&self) -> usize {
        self.current
    }

    /// What to do at `now`. `jitter` (from 0 to 1, the caller's random
    /// draw) lengthens a pause between rounds by up to half of it, so that
    /// clients that lost the same server do not come back in step.
    pub fn next(&mut self, now: Instant, jitter: f64) -> Next {
        if let Some(expected) = self.expected.take() {
            self.rules.ran_again(now, expected);
        }
        if self.queue.is_empty() && self.said_expired.is_some() && !self.rules.bugs().on(|b| b.expired_asked_again) {
            // Every other server was asked once since a server said the
            // session is expired, and none gave a connection: the word
            // stands (outside attack round 38, F1).
            return Next::GiveUp;
        }
        if self.queue.is_empty() {
            self.rules.round_over();
            self.rounds_ended = self.rounds_ended.saturating_add(1);
            if self.first_round && self.all_unusable && self.rules.unreachable_ends() {
                return Next::Unreachable;
            }
            self.first_round = false;
            self.all_unusable = true;
            self.refused_last = std::mem::take(&mut self.refused);
            self.queue = self.round();
            self.round_started = Some(now);
            if !self.rules.bugs().on(|b| b.asked_in_list_order) {
                // The least recently asked first (ties from the start; a
                // round over a list that did not change asks in the same
                // order as from the start): a new list's order may have
                // ended the round elsewhere (the reconnect search: with a
                // whole ensemble down, the servers a list added, refusing,
                // asked first and two hung ones after them, a new round
                // from the start went back to the hung ones, each waiting
                // the whole timeout again).
                let asked = &self.asked;
                self.queue.make_contiguous().sort_by_key(|&n| asked[n]);
            }
            let give_up = self.rules.give_up_at();
            if now >= give_up {
                return Next::GiveUp;
            }
            let pause = self.backoff + self.backoff.mul_f64(jitter.clamp(0.0, 1.0) / 2.0);
            self.backoff = (self.backoff * 2).min(self.rules.max_backoff());
            let until = give_up.min(now + pause);
            self.expected = Some(until);
            return Next::Pause { until };
        }
        let give_up = self.rules.give_up_at();
        if now >= give_up {
            return Next::GiveUp;
        }
        self.current = self.queue.pop_front().unwrap_or(self.start);
        if let Some(a) = self.asked.get_mut(self.current) {
            *a = Some(now);
        }
        let mut until = self.rules.attempt_until(now, self.last_was(Last::WrittenUnanswered));
        let own_first = std::mem::take(&mut self.own_first);
        if own_first {
            until = until.max(give_up.min(now + self.rules.own_server_wait()));
        }
        let unsent = self.last_was(Last::Unsent);
        if self.refused_last && self.unanswered[self.current] {
            if let Some(short) = self.rules.short_wait(now) {
                // One that never took its connect, no shorter than a
                // connection's round trips ([`Rules::unsent_wait`]): at
                // `T/40`, members that had dropped SYNs while their
                // connections were reset were never reached again over a
                // network with round trips over `T/40` (outside attack
                // round 56, F2).
                let short = match self.rules.unsent_wait() {
                    Some(wait) if unsent && !self.rules.bugs().on(|b| b.unsent_wait_brief) => short.max(wait),
                    _ => short,
                };
                until = until.min(now + short);
            }
        }
        // The rounds lengthen the waits for servers slow to answer a
        // connect; one that never took it (a host that drops SYNs, a server
        // hung in the TLS handshake) needs only a connection's round trips
        // once it can answer ([`Rules::unsent_wait`]), in every other
        // round: in the others a server slower than that to take a
        // connection (a loaded one, a slow network) is reached (shortened
        // each time, it never was). Every other round for all of them
        // alike: shortened in turn one by one, a hung one's whole wait in
        // each round left a server slow to answer connects too little
        // before the give-up time, round after round (the reconnect
        // search).
        let every_other = self.rounds_ended % 2 == 1 || self.rules.bugs().on(|b| b.unsent_capped_again);
        if unsent && every_other && !self.rules.bugs().on(|b| b.unsent_waits_doubled) {
            if let Some(wait) = self.rules.unsent_wait() {
                until = until.min(now + wait);
            }
        }
        let cut_unwritten = !self.rules.bugs().on(|b| b.unwritten_past_giving_up);
        self.write_by = Some(if cut_unwritten { until.min(give_up) } else { until });
        self.waiting_unwritten = false;
        self.waiting_until = Some(until);
        self.waiting_since = Some((now, own_first));
        self.expected = Some(until);
        Next::Try { host: self.current, until }
    }

    /// The attempt last handed out ended `how`, without a connection.
    pub fn ended(&mut self, how: Ended) {
        self.waiting_until = None;
        self.waiting_since = None;
        let how = match how {
            Ended::Unsent if self.rules.bugs().on(|b| b.unsent_as_refused) => Ended::Transient,
            how => how,
        };
        if let Some(last) = self.last.get_mut(self.current) {
            *last = match how {
                Ended::Unsent => Last::Unsent,
                Ended::Unanswered(_) => Last::WrittenUnanswered,
                _ => Last::Other,
            };
        }
        if !matches!(how, Ended::Unanswered(_) | Ended::Unsent) {
            self.refused = true;
        } else if let Some(u) = self.unanswered.get_mut(self.current) {
            *u = true;
        }
        match how {
            Ended::Unusable => {},
            Ended::Unsent => self.all_unusable = false,
            Ended::Transient => self.all_unusable = false,
            Ended::AnsweredThenFailed(at) => {
                self.all_unusable = false;
                self.rules.answered(at);
            },
            Ended::Unanswered(at) => {
                self.all_unusable = false;
                self.rules.unanswered(at);
            },
        }
    }

    /// An attempt a new list left ([`RoundRobin::set_hosts`]) ended `how`
    /// (its connection closed unused): counted in the rules only (the round
    /// went on over the new list). An
    /// answer renewed the session ([`Ended::AnsweredThenFailed`]); a
    /// connect unanswered until the wait for it ended may be read later
    /// ([`Ended::Unanswered`]); the others touched nothing.
    pub fn left_ended(&mut self, how: Ended) {
        match how {
            Ended::AnsweredThenFailed(at) => self.rules.answered(at),
            Ended::Unanswered(at) => {
                self.rules.unanswered(at);
                self.left_unanswered = true;
            },
            _ => {},
        }
    }

    /// The server of the attempt last handed out answered that the session
    /// is expired, at `now`. Returns whether that is final: when another
    /// server said it before in this reconnect, or when the list has no
    /// other server. Else the attempt ended (the answer touched nothing: a
    /// server that has the session renews it) and the next attempts ask
    /// every other server once, from the next, at once: a connection means
    /// the session lives; another "expired" is final; once each was asked
    /// without either, or at the rules' time for it ([`Rules::said_expired`]:
    /// a reconnect's give-up time as it stood then, at least `T/3` on, no
    /// longer put off), [`RoundRobin::next`] gives up ([`Next::GiveUp`]: the
    /// word stands). Asking them only once: a session truly expired whose
    /// other servers refused was told `4/3 T` late, its one reachable server
    /// asked 40 times (outside attack round 38, F1). A
    /// leader deposed while it stalled answers a reconnect from its own
    /// stale record when it runs again, its expiry of the session never
    /// committed, while the new quorum keeps the session (outside attack
    /// round 36, F3).
    pub fn said_expired(&mut self, now: Instant) -> bool {
        self.waiting_until = None;
        self.waiting_since = None;
        match self.said_expired {
            Some(first) => first != self.current,
            None if self.hosts == 1 || self.rules.said_expired(now) => true,
            None => {
                self.said_expired = Some(self.current);
                self.all_unusable = false;
                // Every other server once from now: one asked before is
                // not tried in this (a new list keeps it to ask).
                self.round_started = Some(now);
                if self.rules.bugs().on(|b| b.expired_asked_again) {
                    return false;
                }
                let from = self.current;
                self.queue = (1..self.hosts).map(|k| (from + k) % self.hosts).collect();
                false
            },
        }
    }

    /// Whether the last attempt on the server of the attempt handed out
    /// last ended `how`.
    fn last_was(&self, how: Last) -> bool {
        self.last.get(self.current) == Some(&how)
    }

    /// A whole round's servers, from `start`.
    fn round(&self) -> VecDeque<usize> {
        (0..self.hosts).map(|k| (self.start + k) % self.hosts).collect()
    }
}

impl RoundRobin<Reconnect> {
    /// Whether the attempt in progress counts at `now` in the order of the
    /// servers a round has still to try ([`Ask::counted`]; the caller's
    /// [`Asked::of`] and [`Asked::unreached`]): once it `reached` its server
    /// (its TCP connection accepted), or once it has waited
    /// [`Reconnect::left_wait`] without reaching it (a host that drops
    /// SYNs had its turn: counted only if it ran its wait out, such hosts
    /// swapped in turn beside a server hung a moment went first in every
    /// round, and that server, healthy again, was not asked in time: the
    /// reconnect search). Not before: a healthy server's attempt that a
    /// list broke off 2 ms after it started (session 44) must not put it
    /// behind hung ones.
    pub fn counts(&self, reached: bool, now: Instant) -> bool {
        reached
            || (!self.rules.bugs.on(|b| b.unreached_never_counted)
                && self.waiting_since.is_some_and(|(started, _)| now >= started + self.rules.left_wait()))
    }

    /// The attempt in progress has written nothing a server could read (its
    /// TCP connect or TLS handshake goes on): a list that breaks it off
    /// puts giving up off no more than [`Ended::Unsent`] does (with lists
    /// swapping dead addresses, each broken off, put off giving up, and
    /// the reconnect would not end while the lists changed).
    pub fn unwritten(&mut self) {
        if self.waiting_until.is_some() {
            self.waiting_unwritten = true;
        }
    }

    /// The rounds of a reconnect from a connection to server `from` (of
    /// `hosts`; `None`: a server no longer in the list, which moved) lost at
    /// `at` ([`Reconnect::lost`]). Lost to its read timeout (silent), they
    /// start with the next server (after a move, the first); reset or
    /// closed, with the same one: it answered until a moment ago, where the next
    /// may be hung (accepting, never answering: a long GC pause, a frozen
    /// VM), and waiting for that one first ran the clock out (outside
    /// attack round 27, F2 to F4: a hung server before a healthy one slow
    /// by 0.1 T, three hung of seven, a timeout of 1 s). A server that
    /// reset because it went down refuses at once.
    pub fn after_loss(
        mut rules: Reconnect,
        hosts: usize,
        from: Option<usize>,
        at: Instant,
        in_flight: bool,
    ) -> RoundRobin<Reconnect> {
        let silent = rules.lost(at, in_flight);
        let Some(host) = from else { return RoundRobin::new(rules, hosts, 0) };
        let next = silent || rules.bugs.on(|b| b.next_first_after_reset);
        let mut rounds = RoundRobin::new(rules, hosts, if next { host + 1 } else { host });
        rounds.own_first = !next;
        if let (true, Some(last)) = (silent, rounds.last.get_mut(host)) {
            // Its requests went unanswered: it may be reading them late.
            *last = Last::WrittenUnanswered;
        }
        rounds
    }

    /// The server list changed to `hosts` servers; `kept[i]` is where the
    /// old list's server `i` is in the new one (`None`: not there). Returns
    /// whether the attempt in progress goes on.
    ///
    /// One on a server the new list has goes on, on its own connection and
    /// with its own wait (a new list, or the same one refreshed, must not
    /// give a hung server a fresh wait: outside attack round 29, O2; nor
    /// open it one connection per call, each read when it wakes: round 31,
    /// O2), unless its wait is longer than a fresh attempt's on the new
    /// list would have been when it started (servers were added to a list
    /// whose only one hangs: round 35, F2; with servers added, a fresh
    /// attempt's of a first round, its share not doubled by the rounds that
    /// ended: an attempt on a hung server alone waits the whole timeout,
    /// rounds over it advance the round count, and with the fresh wait
    /// doubled by them to the whole timeout too, a list alternating
    /// between it alone and it with others held the others back behind it
    /// until the session expired, outside attack round 51, F1; this cuts
    /// any later round's attempt whose wait is longer than a first round's
    /// when servers are added, a slow healthy one's too), or, when servers
    /// are added, if it has not written its connect yet
    /// ([`RoundRobin::unwritten`]) and its server's last attempt never did
    /// either (likely dead: the added ones are asked; one that has written
    /// it is no longer counted so). Otherwise (`false`) the attempt
    /// in progress, if any, is broken off: it counts as unanswered now (its
    /// connect may have been sent, and a server reads it and touches the
    /// session: giving up is put off as for any unanswered connect, unless
    /// the caller said it wrote nothing, [`RoundRobin::unwritten`]; the
    /// reconnect search found the session given up while a server slow to
    /// answer read the connects of attempts a refreshed list broke off).
    ///
    /// An attempt that does not go on, whose connect was written, is left
    /// rather than broken off at once: the caller still waits for its
    /// answer until [`RoundRobin::left_until`] (none: not at all; never
    /// past its own wait); answered while its
    /// server is in the list (as it is then), its connection is used; else
    /// the caller closes it unused and tells how it ended
    /// ([`RoundRobin::left_ended`]) before it asks for the next. (Round 50,
    /// F1: an attempt on a one-server list that grew, its wait cut, was
    /// broken off at once, and its server, slow, read the connect after
    /// the next one's.) Once a left attempt went unanswered until its wait
    /// ended, no other is waited for in this reconnect: a later attempt
    /// that a list does not let go on is broken off at once (with the list
    /// alternating between a hung server alone and a healthy one, alone or
    /// with it, each wait for the hung one ended in a list of it alone, and
    /// the healthy one was never asked: the reconnect search; a server
    /// slow rather than hung may then read a connect late and cost a
    /// reconnect).
    ///
    /// The round goes on over the new list: the servers it has not tried
    /// yet (servers new to the list among them), the least recently asked
    /// first (`asked[n]`: when this reconnect last asked the new list's
    /// server `n`, under this list or an earlier one, [`Asked`]: its
    /// [`Ask::counted`] orders, `None` or an index past its end: never),
    /// ties in the new list's order from the one that was next
    /// (else from the one after the attempt's, else from its first), as
    /// each later round asks them ([`RoundRobin`]). (Outside attack round
    /// 52, F2: with two hung servers alone in turn with them and a healthy
    /// one, the healthy one came after them in each round and its turn
    /// came in a list without it, round after round. Not servers new to
    /// the list first: a healthy server in every list beside hung ones
    /// swapped in turn was never asked when each list's hung one went
    /// first as new, round 53, F1. Not the least waited on: a healthy
    /// server whose one wait ran out went behind hung ones whose attempts
    /// the lists cut sooner. An attempt counts once it reached its server:
    /// one on the healthy server that a list cut 2 ms after it started,
    /// before its TCP connection was accepted, made it the most recently
    /// asked; counted only once its connect was written, a server hung in
    /// the TLS handshake stayed never asked and went first every time; one
    /// that never reached its server counts once it waited
    /// [`Reconnect::left_wait`], [`RoundRobin::counts`].) A server the
    /// round tried is not asked again before the next round, however
    /// often the list is refreshed (round 35, F1: refreshes every `T/50`
    /// asked a hung first server again and again before the healthy last
    /// one), counted by address too ([`Ask::started`] in this round: outside
    /// attack round 54, F1, lists swapping hung servers beside a healthy
    /// one the round had tried brought each hung one back untried, the
    /// round never ended, and the healthy one was never asked again; a
    /// server a list drops has no index here, so the caller keeps when
    /// each was asked, by address). The deadline stays, and servers that
    /// went unanswered stay marked.
    pub fn set_hosts(&mut self, hosts: usize, kept: &[Option<usize>], asked: &[Ask], now: Instant) -> bool {
        let hosts = hosts.max(1);
        self.left_until = None;
        // (Said for this list only: [`RoundRobin::unwritten`].)
        let unwritten = std::mem::take(&mut self.waiting_unwritten);
        let to_new = |old: usize| kept.get(old).copied().flatten().filter(|&n| n < hosts);
        if self.rules.bugs.on(|b| b.set_hosts_restarts_wait) {
            // The policy before round 29's O2: from the new list's first,
            // with fresh waits, nothing marked.
            self.hosts = hosts;
            self.unanswered = vec![false; hosts];
            self.last = vec![Last::Other; hosts];
            self.own_first = false;
            self.said_expired = None;
            self.rules.set_hosts(hosts);
            self.start = 0;
            self.queue = self.round();
            self.asked = vec![None; hosts];
            self.waiting_until = None;
            self.waiting_since = None;
            return false;
        }
        let mut unanswered = vec![false; hosts];
        let mut last = vec![Last::Other; hosts];
        for old in 0..self.hosts {
            if let Some(new) = to_new(old) {
                unanswered[new] = self.unanswered.get(old).is_some_and(|&u| u);
                last[new] = self.last.get(old).copied().unwrap_or_default();
            }
        }
        if let (Some(new), Some(_), false) = (to_new(self.current), self.waiting_until, unwritten) {
            // The attempt in progress wrote its connect: its server took it
            // (review of session 46: marked until an attempt on it ended, a
            // healthy one whose attempts lists kept breaking off stayed
            // "silent" for every later list).
            if last[new] == Last::Unsent {
                last[new] = Last::Other;
            }
        }
        // This round's servers tried so far (the attempt in progress among
        // them), and the one that was to come next, in the new list.
        let mut tried: Vec<usize> = (0..self.hosts).filter(|i| !self.queue.contains(i)).filter_map(to_new).collect();
        if !self.rules.bugs.on(|b| b.tried_by_index) {
            // ... and by address: a server a list dropped and brought
            // back since, asked in this round (outside attack round 54,
            // F1: with lists swapping hung servers beside a healthy one
            // the round had tried, each hung one came back as untried,
            // the round never ended, and the healthy one was never asked
            // again).
            let round = self.round_started;
            let reached_only = self.rules.bugs.on(|b| b.tried_when_reached);
            tried.extend((0..hosts).filter(|&n| {
                let at = asked.get(n).and_then(|a| if reached_only { a.counted } else { a.started });
                at.is_some_and(|at| round.is_none_or(|r| at > r))
            }));
        }
        let next = self.queue.iter().find_map(|&i| to_new(i));
        self.rules.set_hosts(hosts);
        let going_on = match (self.waiting_until, self.waiting_since, to_new(self.current)) {
            (Some(until), Some((started, own_first)), Some(at)) => {
                // With servers the old list lacked, against a first
                // round's wait: the rounds that ended doubled a fresh
                // attempt's, and the added servers would wait behind a
                // kept attempt as long (a hung server alone: the whole
                // timeout; outside attack round 51, F1). A list that adds
                // nobody keeps the doubling that servers slow to answer
                // need.
                let added = (0..hosts).any(|n| !kept.contains(&Some(n)));
                let late = self.last_was(Last::WrittenUnanswered);
                let mut fresh = if added && !self.rules.bugs.on(|b| b.added_wait_doubled) {
                    self.rules.first_round_until(started, late)
                } else {
                    Rules::attempt_until(&self.rules, started, late)
                };
                if own_first {
                    fresh = fresh.max(started + self.rules.own_server_wait());
                }
                let any_wait = self.rules.bugs.on(|b| b.set_hosts_keeps_any_wait);
                // Nor, with servers added, one that has not written its
                // connect yet ([`RoundRobin::unwritten`]), on a server whose
                // last attempt never wrote it either (likely dead): with lists
                // alternating between two such alone and with a healthy one
                // added, each attempt on them went on and ended while the
                // healthy one was out of the list, and the session expired
                // (the reconnect search, once its TCP connects took their
                // round trip and such waits were `T/8`).
                let silent_before = added
                    && unwritten
                    && self.last_was(Last::Unsent)
                    && !self.rules.bugs.on(|b| b.silent_kept_beside_added);
                let goes_on = any_wait || (until <= fresh.max(now) && !silent_before);
                if !goes_on {
                    self.left_until = Some(fresh.min(started + self.rules.left_wait()));
                }
                goes_on.then_some(at)
            },
            _ => None,
        };
        if going_on.is_none() && self.waiting_until.take().is_some() {
            if let (Some((started, _)), None) = (self.waiting_since, self.left_until) {
                // Its server dropped.
                self.left_until = Some(started + self.rules.left_wait());
            }
            // Once a left attempt went unanswered in this reconnect (its
            // server likely hung), no other is waited for: with lists
            // alternating between a hung server alone (or with others)
            // and a healthy one, each wait for the hung one ended in a
            // list of it alone, the next attempt went to it again, and
            // the healthy one was never asked (the reconnect search's
            // alternating lists). The time left is the session's; a
            // server slow rather than hung may then read a connect late
            // and cost a reconnect.
            let again = self.left_unanswered && !self.rules.bugs.on(|b| b.left_waited_again);
            self.left_until = self.left_until.filter(|&until| until > now && !again);
            self.waiting_since = None;
            if !unwritten {
                self.rules.unanswered(now);
                // Its connect may be read late: not cut by giving up next
                // time either.
                if let Some(n) = to_new(self.current) {
                    last[n] = Last::WrittenUnanswered;
                }
            }
        }
        let from = next.or_else(|| to_new(self.current).map(|c| (c + 1) % hosts)).unwrap_or(0);
        self.hosts = hosts;
        self.unanswered = unanswered;
        self.last = last;
        self.said_expired = self.said_expired.and_then(to_new);
        self.own_first = false;
        self.start = to_new(self.start).unwrap_or(0);
        self.queue = (0..hosts).map(|k| (from + k) % hosts).filter(|n| !tried.contains(n)).collect();
        self.asked = (0..hosts).map(|n| asked.get(n).and_then(|a| a.counted)).collect();
        if let (Some(at), Some((started, _))) = (going_on, self.waiting_since) {
            // The attempt going on counts (the caller may not count it
            // yet: its server not reached).
            self.asked[at] = self.asked[at].max(Some(started));
        }
        if !self.rules.bugs.on(|b| b.asked_in_list_order) {
            // The least recently asked first (a stable sort: ties in the
            // list's order; round 52, F2).
            let asked = &self.asked;
            self.queue.make_contiguous().sort_by_key(|&n| asked[n]);
        }
        if self.rules.bugs.on(|b| b.set_hosts_restarts_round) {
            // The policy before round 35's F1: a new round, from the
            // attempt going on (the round's first) or the list's first.
            self.start = going_on.unwrap_or(0);
            self.queue = self.round();
            if going_on.is_some() {
                self.queue.pop_front();
            }
        }
        self.backoff = Duration::from_millis(50).min(self.rules.max_backoff());
        if let Some(at) = going_on {
            self.current = at;
        }
        going_on.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(4);

    /// Servers whose last attempts started at these instants, each counted.
    fn asked_at(at: &[Option<Instant>]) -> Vec<Ask> {
        at.iter().map(|&at| Ask { started: at, counted: at }).collect()
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
        assert_eq!(Reconnect::new(T, 2, t0).attempt_until(t0), t0 + T / 3, "a third with two servers");
        assert_eq!(Reconnect::new(T, 1, t0).attempt_until(t0), t0 + T, "the whole timeout with one");
        let one = Reconnect::new(Duration::from_millis(3000), 12, t0);
        assert_eq!(one.attempt_until(t0), t0 + Duration::from_millis(500), "at least 500 ms");
        let short = Reconnect::new(Duration::from_millis(1000), 4, t0);
        assert_eq!(short.attempt_until(t0), t0 + Duration::from_millis(250), "but at most T/4");
        assert_eq!(short.max_backoff(), Duration::from_millis(25));
        assert_eq!(Reconnect::new(T * 100, 1, t0).max_backoff(), Duration::from_secs(1));
    }
    #[test]
    fn a_server_unanswered_waits_briefly_while_another_refuses_until_t() {
        let t0 = Instant::now();
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 2, t0), 2, Some(0), t0, false);
        assert!(matches!(rr.next(t0, 0.0), Next::Try { host: 0, .. }), "its own server first");
        rr.ended(Ended::Unusable);
        assert_eq!(rr.next(t0, 0.0), Next::Try { host: 1, until: t0 + T / 3 }, "a third of T");
        rr.ended(Ended::Unanswered(t0 + T / 3));
        let Next::Pause { until } = rr.next(t0 + T / 3, 0.0) else { panic!("a pause") };
        assert!(matches!(rr.next(until, 0.0), Next::Try { host: 0, .. }));
        rr.ended(Ended::Unusable);
        assert_eq!(rr.next(until, 0.0), Next::Try { host: 1, until: until + T / 40 }, "refused: T/40");
        rr.ended(Ended::Unanswered(until + T / 40));
        let late = t0 + T;
        let Next::Pause { .. } = rr.next(late, 0.0) else { panic!("a pause") };
        rr.next(late, 0.0);
        rr.ended(Ended::Unusable);
        assert!(matches!(rr.next(late, 0.0), Next::Try { host: 1, until } if until > late + T / 3), "after T: longer");
    }

    #[test]
    fn after_a_reset_the_same_server_first_after_a_silence_the_next() {
        let t0 = Instant::now();
        let mut reset = RoundRobin::after_loss(Reconnect::new(T, 3, t0), 3, Some(2), t0 + T / 8, false);
        assert!(matches!(reset.next(t0 + T / 8, 0.0), Next::Try { host: 2, .. }));
        let silent_at = t0 + read_timeout(T);
        let mut silent = RoundRobin::after_loss(Reconnect::new(T, 3, t0), 3, Some(2), silent_at, false);
        assert!(matches!(silent.next(silent_at, 0.0), Next::Try { host: 0, .. }));
    }

    #[test]
    fn a_connection_lost_to_its_read_timeout_counts_as_unanswered() {
        let t0 = Instant::now();
        let mut reset = Reconnect::new(T, 1, t0);
        assert!(!reset.lost(t0 + T / 2, false));
        assert_eq!(reset.give_up_at(), t0 + T * 4 / 3, "a reset: from the last answer");
        let silent = t0 + read_timeout(T);
        let mut lost = Reconnect::new(T, 1, t0);
        assert!(lost.lost(silent, false));
        assert_eq!(lost.give_up_at(), silent + T * 4 / 3, "silent: its heartbeats may touch it later");
        let mut in_flight = Reconnect::new(T, 1, t0);
        assert!(!in_flight.lost(t0 + T / 2, true));
        assert_eq!(
            in_flight.give_up_at(),
            t0 + T / 2 + T * 4 / 3,
            "reset with requests in flight: they may have been read"
        );
    }

    #[test]
    fn rounds_go_round_robin_and_pause_longer_each_time() {
        let t0 = Instant::now();
        let mut rr = RoundRobin::new(Reconnect::new(T, 3, t0), 3, 2);
        let mut hosts = Vec::new();
        let mut now = t0;
        let mut pauses = Vec::new();
        for _ in 0..9 {
            loop {
                match rr.next(now, 0.0) {
                    Next::Try { host, .. } => {
                        hosts.push(host);
                        rr.ended(Ended::Unusable);
                        break;
                    },
                    Next::Pause { until } => {
                        pauses.push(until - now);
                        now = until;
                    },
                    other => panic!("{other:?}"),
                }
            }
        }
        assert_eq!(hosts, [2, 0, 1, 2, 0, 1, 2, 0, 1]);
        assert_eq!(pauses, [Duration::from_millis(50), Duration::from_millis(100)]);
        // A reconnect never ends for unusable servers before its time.
        let gave_up = refused_until_given_up(&mut rr, now);
        assert!(gave_up >= t0 + T * 4 / 3 && gave_up < t0 + T * 4 / 3 + T / 10, "{:?}", gave_up - t0);
    }

    /// Runs `rr` from `now` with every server refusing at once and every
    /// call on time; returns when it gave up.
    fn refused_until_given_up(rr: &mut RoundRobin<Reconnect>, mut now: Instant) -> Instant {
        loop {
            match rr.next(now, 0.0) {
                Next::Try { .. } => rr.ended(Ended::Unusable),
                Next::Pause { until } => now = until,
                Next::GiveUp => return now,
                Next::Unreachable => panic!("a reconnect never ends unreachable"),
            }
        }
    }

    #[test]
    fn a_new_session_ends_after_a_first_round_of_unusable_servers() {
        let t0 = Instant::now();
        let mut rr = RoundRobin::new(NewSession::new(t0, T * 2, T, 2), 2, 0);
        assert_eq!(rr.next(t0, 0.0), Next::Try { host: 0, until: t0 + T / 2 });
        rr.ended(Ended::Unusable);
        assert_eq!(rr.next(t0, 0.0), Next::Try { host: 1, until: t0 + T / 2 });
        rr.ended(Ended::Unusable);
        assert_eq!(rr.next(t0, 0.0), Next::Unreachable);
        let mut rr = RoundRobin::new(NewSession::new(t0, T * 2, T, 2), 2, 0);
        rr.next(t0, 0.0);
        rr.ended(Ended::Unanswered(t0 + T / 2));
        rr.next(t0 + T / 2, 0.0);
        rr.ended(Ended::Unusable);
        assert!(
            matches!(rr.next(t0 + T / 2, 1.0), Next::Pause { until } if until == t0 + T / 2 + Duration::from_millis(75))
        );
        assert_eq!(rr.next(t0 + T * 2, 0.0), Next::GiveUp, "the connect timeout");
    }

    /// A client whose own process stalled past the give-up time asks the
    /// servers for `T/3` more once it runs again (session 29's false
    /// expiry in the simulator); on time, or stalled a second time, it
    /// gives up at once.
    #[test]
    fn a_client_stalled_past_giving_up_asks_once_more() {
        let t0 = Instant::now();
        let rounds = || {
            let mut rr = RoundRobin::after_loss(Reconnect::new(T, 1, t0), 1, Some(0), t0, false);
            assert!(matches!(rr.next(t0, 0.0), Next::Try { host: 0, .. }));
            rr.ended(Ended::Unusable);
            let Next::Pause { until } = rr.next(t0, 0.0) else { panic!("a pause after a refusal") };
            (rr, until)
        };
        let give_up = t0 + T * 4 / 3;
        // On time: nothing to put off.
        let (mut rr, pause) = rounds();
        let now = refused_until_given_up(&mut rr, pause);
        assert!(now >= give_up && now < give_up + T / 10, "gave up on time: {:?}", now - t0);
        // Stalled through the pause, past giving up: asks again for T/3.
        let (mut rr, _) = rounds();
        let woke = t0 + T * 2;
        let Next::Try { until, .. } = rr.next(woke, 0.0) else { panic!("asks once more") };
        assert_eq!(until, woke + T / 3, "the attempt waits the grace at most");
        rr.ended(Ended::Unusable);
        let Next::Pause { until } = rr.next(woke, 0.0) else { panic!("the rounds go on") };
        // Stalled again: no second grace.
        assert_eq!(rr.next(until + T, 0.0), Next::GiveUp);
        // Without the grace (the policy before): gives up at once.
        let (mut rr, _) = rounds();
        rr.rules.bugs.no_stall_grace = true;
        if cfg!(feature = "history") {
            assert_eq!(rr.next(woke, 0.0), Next::GiveUp);
        }
    }

    /// Round 35's F1: a list refreshed again and again, during attempts and
    /// between them, asks each server once per round, in order: hung
    /// servers first in the list do not hold the last one back.
    #[test]
    fn a_refreshed_list_asks_each_server_once_per_round() {
        let t0 = Instant::now();
        let same = [Some(0), Some(1), Some(2), Some(3)];
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 4, t0), 4, Some(0), t0, false);
        let mut now = t0;
        let mut asked = Vec::new();
        while asked.len() < 4 {
            let Next::Try { host, until } = rr.next(now, 0.0) else { panic!("a try") };
            asked.push(host);
            let was: Vec<Option<Instant>> = (0..4).map(|n| asked.contains(&n).then_some(t0)).collect();
            assert!(rr.set_hosts(4, &same, &asked_at(&was), now + Duration::from_millis(1)), "goes on");
            now = until;
            rr.ended(Ended::Unanswered(now));
            assert!(!rr.set_hosts(4, &same, &asked_at(&was), now), "between attempts");
        }
        assert_eq!(asked, [0, 1, 2, 3]);
    }

    /// Round 36's F3: an answer that the session is expired is taken once
    /// a second server says it, or once every other server was asked
    /// without a connection; with one server, at once.
    #[test]
    fn an_expired_answer_is_final_once_another_server_says_it_too() {
        let t0 = Instant::now();
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 3, t0), 3, Some(1), t0, false);
        assert!(matches!(rr.next(t0, 0.0), Next::Try { host: 1, .. }));
        assert!(!rr.said_expired(t0), "one server's word");
        assert!(matches!(rr.next(t0, 0.0), Next::Try { host: 2, .. }), "the next, at once");
        assert!(rr.said_expired(t0), "a second server's word is final");

        // No other server gives a connection: each is asked once, at once
        // when it refuses, then the word stands (round 38, F1: the one
        // reachable server was asked again and again for `4/3 T`).
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 3, t0), 3, Some(1), t0, false);
        let _ = rr.next(t0, 0.0);
        assert!(!rr.said_expired(t0));
        let mut asked = Vec::new();
        loop {
            match rr.next(t0, 0.0) {
                Next::Try { host, .. } => {
                    asked.push(host);
                    rr.ended(Ended::Unusable);
                },
                Next::GiveUp => break,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(asked, [2, 0], "the others once each, at once");

        // One that hangs is waited for no longer than the give-up time as
        // it stood at the first word, unanswered attempts notwithstanding.
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 3, t0), 3, Some(1), t0 + T / 10, false);
        let _ = rr.next(t0 + T / 10, 0.0);
        assert!(!rr.said_expired(t0 + T), "a word that came late");
        let Next::Try { host: 2, until } = rr.next(t0 + T, 0.0) else { panic!("the next") };
        assert_eq!(until, t0 + T * 4 / 3, "its wait ends at the give-up time");
        rr.ended(Ended::Unanswered(until));
        assert_eq!(rr.next(until, 0.0), Next::GiveUp, "not put off, the last server not asked");

        let mut one = RoundRobin::after_loss(Reconnect::new(T, 1, t0), 1, Some(0), t0, false);
        let _ = one.next(t0, 0.0);
        assert!(one.said_expired(t0), "no other server to ask");
    }

    /// Rounds 49's and 50's F1: an attempt a new list does not let go on
    /// is waited for until `T/10` after it started, a kept server's no
    /// longer than a fresh attempt on the new list would have been; one
    /// older than that is broken off at once (likely hung: the time is the
    /// added servers').
    #[test]
    fn an_attempt_that_does_not_go_on_is_waited_for_until_a_tenth_after_it_started() {
        let t0 = Instant::now();
        // Its server dropped.
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 3, t0), 3, Some(0), t0, false);
        let _ = rr.next(t0, 0.0);
        assert!(!rr.set_hosts(2, &[None, Some(0), Some(1)], &asked_at(&[None, None]), t0 + T / 100), "does not go on");
        assert_eq!(rr.left_until(), Some(t0 + T / 10), "a tenth after it started");
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 3, t0), 3, Some(0), t0, false);
        let _ = rr.next(t0, 0.0);
        assert!(!rr.set_hosts(2, &[None, Some(0), Some(1)], &asked_at(&[None, None]), t0 + T / 5), "does not go on");
        assert_eq!(rr.left_until(), None, "older than that: broken off");
        // Kept, its wait cut (one server alone, grown to two).
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 1, t0), 1, None, t0, false);
        let _ = rr.next(t0, 0.0);
        assert!(!rr.set_hosts(2, &[Some(0)], &asked_at(&[Some(t0), None]), t0 + T / 100), "its wait is cut");
        assert_eq!(rr.left_until(), Some(t0 + T / 10));
        // Between attempts, nothing to wait for.
        assert!(!rr.set_hosts(2, &[Some(0), Some(1)], &asked_at(&[Some(t0), None]), t0 + T / 50));
        assert_eq!(rr.left_until(), None);
    }

    /// Outside attack round 51, F1: after two rounds on one server, its
    /// attempt waits the whole timeout; a list that adds a server measures
    /// that against a first round's wait among them (not one doubled by
    /// the two rounds, which is the whole timeout too) and cuts it: the
    /// added server is not held back behind it. The same list again keeps
    /// the wait.
    #[test]
    fn a_server_added_is_not_held_behind_a_wait_doubled_by_rounds() {
        let t0 = Instant::now();
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 1, t0), 1, None, t0, false);
        let mut now = t0;
        for _ in 0..2 {
            let Next::Try { host: 0, until } = rr.next(now, 0.0) else { panic!("its one server") };
            rr.ended(Ended::Unanswered(until));
            now = until;
            let Next::Pause { until } = rr.next(now, 0.0) else { panic!("a pause between rounds") };
            now = until;
        }
        let Next::Try { host: 0, until } = rr.next(now, 0.0) else { panic!("its one server") };
        assert_eq!(until, rr.rules().give_up_at().min(now + T), "the whole timeout");
        let mut same = rr.clone();
        assert!(same.set_hosts(1, &[Some(0)], &asked_at(&[Some(t0)]), now + T / 50), "the same list: goes on");
        assert!(!rr.set_hosts(2, &[Some(0)], &asked_at(&[Some(t0), None]), now + T / 50), "a server added: cut");
        assert_eq!(rr.left_until(), Some(now + T / 10), "its answer waited for a tenth");
    }

    /// The reconnect search's alternating lists: once an attempt a list
    /// left went unanswered until the wait for it ended, a later attempt
    /// that a list cuts is broken off at once.
    #[test]
    fn after_a_left_attempt_went_unanswered_no_other_is_waited_for() {
        let t0 = Instant::now();
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 1, t0), 1, None, t0, false);
        let Next::Try { host: 0, .. } = rr.next(t0, 0.0) else { panic!("its one server") };
        assert!(!rr.set_hosts(2, &[Some(0)], &asked_at(&[Some(t0), None]), t0 + T / 50), "a server added: cut");
        assert_eq!(rr.left_until(), Some(t0 + T / 10));
        // The list is its server alone again when the wait ends.
        assert!(!rr.set_hosts(1, &[Some(0), None], &asked_at(&[Some(t0)]), t0 + T / 20));
        rr.left_ended(Ended::Unanswered(t0 + T / 10));
        let now = t0 + T / 10;
        let start = match rr.next(now, 0.0) {
            Next::Pause { until } => until,
            Next::Try { .. } => now,
            Next::GiveUp | Next::Unreachable => panic!("gave up"),
        };
        let Next::Try { host: 0, .. } = rr.next(start, 0.0) else { panic!("its one server") };
        assert!(!rr.set_hosts(2, &[Some(0)], &asked_at(&[Some(t0), None]), start + T / 50), "a server added: cut");
        assert_eq!(rr.left_until(), None, "broken off at once");
        assert!(matches!(rr.next(start + T / 50, 0.0), Next::Try { host: 1, .. }), "the added server next");
        // Another server's attempt, too: the first one's server dropped.
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 2, t0), 2, None, t0, false);
        let Next::Try { host: first, .. } = rr.next(t0, 0.0) else { panic!("a server") };
        let kept = if first == 0 { [None, Some(0)] } else { [Some(0), None] };
        assert!(!rr.set_hosts(1, &kept, &asked_at(&[None]), t0 + T / 50), "its server dropped");
        assert_eq!(rr.left_until(), Some(t0 + T / 10));
        rr.left_ended(Ended::Unanswered(t0 + T / 10));
        let now = t0 + T / 10;
        let Next::Try { host: 0, .. } = rr.next(now, 0.0) else { panic!("the other server") };
        assert!(!rr.set_hosts(2, &[Some(0)], &asked_at(&[Some(t0), None]), now + T / 50), "a server added: cut");
        assert_eq!(rr.left_until(), None, "broken off at once");
    }

    /// Round 35's F2: servers added to a list whose only server hangs are
    /// not held back by its whole-timeout wait: the attempt is broken off
    /// (its wait is longer than one on the new list would have been) and
    /// the new server is asked next.
    #[test]
    fn servers_added_beside_a_hung_one_are_asked_at_once() {
        let t0 = Instant::now();
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 1, t0), 1, Some(0), t0, false);
        let Next::Try { host: 0, until } = rr.next(t0, 0.0) else { panic!("its own server") };
        assert_eq!(until, t0 + T, "the whole timeout with one server");
        assert!(!rr.set_hosts(2, &[Some(0)], &asked_at(&[Some(t0), None]), t0 + T / 20), "broken off");
        assert!(matches!(rr.next(t0 + T / 20, 0.0), Next::Try { host: 1, .. }), "the new server next");
        // The same list refreshed keeps an own server's first wait.
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 5, t0), 5, Some(2), t0, false);
        let Next::Try { host: 2, until } = rr.next(t0, 0.0) else { panic!("its own server") };
        assert_eq!(until, t0 + T / 3, "a reset's own server waits T/3");
        let same: Vec<Option<usize>> = (0..5).map(Some).collect();
        assert!(rr.set_hosts(5, &same, &asked_at(&[None, None, Some(t0), None, None]), t0 + T / 20), "goes on");
    }

    #[test]
    fn a_new_list_without_the_attempts_server_goes_on_with_the_round() {
        let t0 = Instant::now();
        let mut rr = RoundRobin::new(Reconnect::new(T, 3, t0), 3, 0);
        rr.next(t0, 0.0);
        rr.ended(Ended::Transient);
        assert!(matches!(rr.next(t0, 0.0), Next::Try { host: 1, .. }));
        assert!(
            !rr.set_hosts(2, &[Some(1), None, Some(0)], &asked_at(&[None, Some(t0)]), t0 + T / 3),
            "its server is not in the new list"
        );
        assert!(matches!(rr.next(t0 + T / 3, 0.0), Next::Try { host: 0, .. }), "the server that was next");
    }

    /// An attempt counts from its start, unless a list broke it off before
    /// it reached its server.
    #[test]
    fn asked_counts_an_attempt_unless_it_did_not_reach_its_server() {
        let t0 = Instant::now();
        let at = |n| Some(t0 + Duration::from_millis(n));
        let counted = |asks: Vec<Ask>| asks.iter().map(|a| a.counted).collect::<Vec<_>>();
        let started = |asks: Vec<Ask>| asks.iter().map(|a| a.started).collect::<Vec<_>>();
        let mut a = Asked::new();
        assert_eq!(a.of(&["a", "b"], true), [Ask::default(), Ask::default()]);
        a.ask(&"a", t0);
        a.ended();
        a.ask(&"b", t0 + Duration::from_millis(300));
        a.ended();
        a.ask(&"a", t0 + Duration::from_millis(400));
        assert_eq!(counted(a.of(&["b", "a", "c"], true)), [at(300), at(400), None]);
        assert_eq!(counted(a.of(&["b", "a", "c"], false)), [at(300), Some(t0), None], "not reached yet");
        assert_eq!(started(a.of(&["a"], false)), [at(400)], "started all the same");
        a.unreached();
        assert_eq!(a.of(&["a"], true), [Ask { started: at(400), counted: Some(t0) }], "broken off unreached");
        a.ask(&"c", t0 + Duration::from_millis(500));
        a.unreached();
        assert_eq!(a.of(&["c"], true), [Ask { started: at(500), counted: None }]);
        // Between attempts, `reached` says nothing.
        a.ask(&"b", t0 + Duration::from_millis(600));
        a.ended();
        assert_eq!(counted(a.of(&["b"], false)), [at(600)]);
    }

    /// Outside attack round 52, F2: the servers a new list's round has
    /// still to try are asked the least recently asked first (two hung
    /// servers asked in every round, a healthy one added behind them); by
    /// when each was asked in this reconnect (by address), not whether it
    /// is new to the list (round 53, F1: a hung server back in the list
    /// does not go before a healthy one asked longer ago); and each later
    /// round the same way.
    #[test]
    fn the_servers_least_recently_asked_come_first() {
        let t0 = Instant::now();
        let at = |n| Some(t0 + Duration::from_millis(n));
        // [B, X], both asked in the first round and B in the second, then
        // [B, X, C]: C (never asked) before X.
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 2, t0), 2, None, t0, false);
        for host in [0, 1] {
            assert!(matches!(rr.next(t0, 0.0), Next::Try { host: h, .. } if h == host));
            rr.ended(Ended::Unusable);
        }
        let Next::Pause { until } = rr.next(t0, 0.0) else { panic!("a pause between rounds") };
        let Next::Try { host: 0, .. } = rr.next(until, 0.0) else { panic!("B again") };
        rr.ended(Ended::Unusable);
        let mut again = rr.clone();
        assert!(!rr.set_hosts(3, &[Some(0), Some(1)], &asked_at(&[Some(until), Some(t0), None]), until));
        let ms = |n| until + Duration::from_millis(n);
        let Next::Try { host: 2, .. } = rr.next(ms(1), 0.0) else { panic!("C, never asked") };
        rr.ended(Ended::Unusable);
        assert!(matches!(rr.next(ms(2), 0.0), Next::Try { host: 1, .. }), "then X");
        rr.ended(Ended::Unusable);
        // The next round: B, C, X were asked in that order.
        let Next::Pause { until: next } = rr.next(ms(3), 0.0) else { panic!("a pause between rounds") };
        assert_eq!(refused(&mut rr, next, 3), [0, 2, 1], "the least recently asked first");
        // ... C asked once, before B and X: C still first.
        assert!(!again.set_hosts(3, &[Some(0), Some(1)], &asked_at(&[Some(until), at(1), Some(t0)]), until));
        assert!(matches!(again.next(until, 0.0), Next::Try { host: 2, .. }), "C, asked longest ago");
        // [C, X], X asked; then [C, Y], Y asked under an earlier list, C
        // never: C first (as new to the list, Y would be).
        let mut rr = RoundRobin::new(Reconnect::new(T, 2, t0), 2, 1);
        let Next::Try { host: 1, .. } = rr.next(t0, 0.0) else { panic!("X") };
        rr.ended(Ended::Unusable);
        assert!(!rr.set_hosts(2, &[Some(0), None], &asked_at(&[None, Some(t0)]), t0));
        assert!(matches!(rr.next(t0, 0.0), Next::Try { host: 0, .. }), "C");
        // Ties in the list's order from the one that was next.
        let mut rr = RoundRobin::new(Reconnect::new(T, 3, t0), 3, 0);
        let Next::Try { host: 0, .. } = rr.next(t0, 0.0) else { panic!("the first") };
        rr.ended(Ended::Unusable);
        let same: Vec<Option<usize>> = (0..3).map(Some).collect();
        assert!(!rr.set_hosts(5, &same, &asked_at(&[Some(t0), None, None, None, None]), t0));
        assert_eq!(refused(&mut rr, t0, 4), [1, 2, 3, 4], "never asked, from the one next");
    }

    /// An attempt that never took its connect (a TCP connect or TLS
    /// handshake unanswered: a host that drops SYNs) is no refusal: a
    /// server unanswered before still gets its whole wait in the next
    /// round; it puts giving up off no more than a refusal; and its own
    /// next wait is `T/8`, not lengthened by the rounds.
    #[test]
    fn an_attempt_that_never_took_its_connect_is_unanswered_without_touching() {
        let t0 = Instant::now();
        let mut rr = RoundRobin::new(Reconnect::new(T, 2, t0), 2, 0);
        let Next::Try { host: 0, until } = rr.next(t0, 0.0) else { panic!("server 0") };
        rr.ended(Ended::Unanswered(until));
        let give_up = rr.rules().give_up_at();
        let Next::Try { host: 1, until } = rr.next(until, 0.0) else { panic!("server 1") };
        assert_eq!(until, t0 + T * 2 / 3, "a first round's share each");
        rr.ended(Ended::Unsent);
        assert_eq!(rr.rules().give_up_at(), give_up, "nothing it could read: giving up not put off");
        let Next::Pause { until: now } = rr.next(until, 0.0) else { panic!("a pause") };
        let Next::Try { host: 0, until } = rr.next(now, 0.0) else { panic!("server 0") };
        assert_eq!(until, now + T * 2 / 3, "no refusal: the unanswered one waits as the rounds lengthen it");
        rr.ended(Ended::Unanswered(until));
        let Next::Try { host: 1, until: unsent } = rr.next(until, 0.0) else { panic!("server 1") };
        assert_eq!(unsent, until + T / 8, "T/8: a TCP connect and a TLS handshake at 0.05 T, and the connect");
        // Counted as a refusal, it gave the other a brief wait.
        let mut rr = RoundRobin::new(Reconnect::new(T, 2, t0), 2, 0);
        rr.rules.bugs.unsent_as_refused = true;
        let Next::Try { until, .. } = rr.next(t0, 0.0) else { panic!("server 0") };
        rr.ended(Ended::Unanswered(until));
        let Next::Try { until, .. } = rr.next(until, 0.0) else { panic!("server 1") };
        rr.ended(Ended::Unsent);
        let Next::Pause { until: now } = rr.next(until, 0.0) else { panic!("a pause") };
        let Next::Try { host: 0, until } = rr.next(now, 0.0) else { panic!("server 0") };
        if cfg!(feature = "history") {
            assert_eq!(until, now + rr.rules().max_backoff(), "the bug: a brief wait, as after a refusal");
        }
    }

    /// An attempt on a server whose last connect was written and went
    /// unanswered (it may read connects late) waits its wait past the
    /// give-up time (its connect to be written by then); one on a server
    /// that never took its connect is cut by it; after a server's
    /// "expired", the first waits until the bound the word set (at least
    /// `T/3` on), not past it.
    #[test]
    fn a_server_that_left_a_connect_unanswered_is_waited_for_past_giving_up() {
        let t0 = Instant::now();
        for cut in [false, true] {
            // Server 0 takes its connects and never answers; 1 never takes one.
            let mut rr = RoundRobin::new(Reconnect::new(T, 2, t0), 2, 0);
            rr.rules.bugs.written_unanswered_cut = cut;
            let Next::Try { host: 0, until } = rr.next(t0, 0.0) else { panic!("server 0") };
            rr.ended(Ended::Unanswered(until));
            let Next::Try { host: 1, until } = rr.next(until, 0.0) else { panic!("server 1") };
            rr.ended(Ended::Unsent);
            let Next::Pause { .. } = rr.next(until, 0.0) else { panic!("a pause") };
            // Asked a moment before giving up (the process stalled).
            let give_up = rr.rules().give_up_at();
            let late = give_up - T / 10;
            let Next::Try { host: 0, until } = rr.next(late, 0.0) else { panic!("server 0 again") };
            if cut && cfg!(feature = "history") {
                assert_eq!(until, give_up, "the bug: cut by giving up");
                continue;
            }
            assert_eq!(until, late + T * 2 / 3, "its whole wait (the second round's)");
            assert!(until > give_up);
            assert_eq!(rr.write_by(), Some(give_up), "its connect written by giving up, though");
            rr.ended(Ended::Unanswered(until));
            let give_up = rr.rules().give_up_at();
            assert_eq!(give_up, until + T * 4 / 3, "put off by its end");
            let late = give_up - T / 20;
            let Next::Try { host: 1, until } = rr.next(late, 0.0) else { panic!("server 1 again") };
            assert_eq!(until, give_up, "never written: cut by giving up");
        }
        // Server 1 takes its connect and never answers; 0, asked late, says
        // "expired": 1 is asked once more, until the bound that set.
        let mut rr = RoundRobin::new(Reconnect::new(T, 2, t0), 2, 0);
        let Next::Try { host: 0, until } = rr.next(t0, 0.0) else { panic!("server 0") };
        rr.ended(Ended::Unsent);
        let Next::Try { host: 1, until } = rr.next(until, 0.0) else { panic!("server 1") };
        rr.ended(Ended::Unanswered(until));
        let Next::Pause { .. } = rr.next(until, 0.0) else { panic!("a pause") };
        let late = rr.rules().give_up_at() - T / 5;
        let Next::Try { host: 0, .. } = rr.next(late, 0.0) else { panic!("server 0 again") };
        assert!(!rr.said_expired(late), "another to ask");
        let Next::Try { host: 1, until } = rr.next(late, 0.0) else { panic!("server 1 again") };
        assert_eq!(until, late + T / 3, "the word's bound (T/3 on), not its whole wait");
        rr.ended(Ended::Unanswered(until));
        assert_eq!(rr.next(until, 0.0), Next::GiveUp, "the word stands");
    }

    /// A server whose last attempt never took its connect waits `T/8` in
    /// every other round only: a server slower than that to take a
    /// connection is reached in the others.
    #[test]
    fn an_unsent_servers_wait_is_shortened_in_every_other_round() {
        let t0 = Instant::now();
        // Server 0 never takes its connect; 1 and 2 take theirs and never
        // answer (so giving up is put off, round after round).
        let mut rr = RoundRobin::new(Reconnect::new(T, 3, t0), 3, 0);
        let mut now = t0;
        for round in 0..4 {
            let Next::Try { host: 0, until } = rr.next(now, 0.0) else { panic!("server 0, round {round}") };
            match round {
                0 => {},
                1 | 3 => assert_eq!(until, now + T / 8, "shortened in round {round}"),
                _ => {
                    assert_eq!(until, rr.rules().attempt_until(now), "the rounds' own wait in round {round}");
                    assert!(until > now + T / 8);
                },
            }
            rr.ended(Ended::Unsent);
            now = until;
            for host in [1, 2] {
                let Next::Try { host: h, until } = rr.next(now, 0.0) else { panic!("server {host}") };
                assert_eq!(h, host);
                rr.ended(Ended::Unanswered(until));
                now = until;
            }
            let Next::Pause { until } = rr.next(now, 0.0) else { panic!("a pause after round {round}") };
            now = until;
        }
    }

    /// A list that adds servers does not let an attempt go on on a server
    /// whose last attempt never wrote its connect (likely dead): the added
    /// ones are asked.
    #[test]
    fn an_attempt_on_a_silent_server_does_not_go_on_beside_added_ones() {
        let t0 = Instant::now();
        // (the bug on, the attempt's connect written)
        for (kept, written) in [(false, false), (true, false), (false, true)] {
            let mut rr = RoundRobin::new(Reconnect::new(T, 1, t0), 1, 0);
            rr.rules.bugs.silent_kept_beside_added = kept;
            let Next::Try { host: 0, until } = rr.next(t0, 0.0) else { panic!("server 0") };
            rr.ended(Ended::Unsent);
            let Next::Pause { until: now } = rr.next(until, 0.0) else { panic!("a pause") };
            // In the second round its wait is T/8, within a first round's share.
            let Next::Try { host: 0, until } = rr.next(now, 0.0) else { panic!("server 0 again") };
            assert_eq!(until, now + T / 8);
            if !written {
                rr.unwritten();
            }
            let goes_on = rr.set_hosts(2, &[Some(0)], &asked_at(&[Some(now), None]), now + T / 100);
            if written {
                // Once the attempt wrote its connect it goes on, and its
                // server no longer counts as one that never took a connect.
                assert!(goes_on, "written: goes on");
                assert_eq!(rr.last, [Last::Other, Last::Other]);
            } else {
                assert_eq!(goes_on, kept && cfg!(feature = "history"), "the bug: kept beside the added one");
            }
        }
    }

    /// A server whose connect may be read late is marked so on every path:
    /// an attempt ended unanswered, a written attempt a list broke off, a
    /// connection lost silent; not one a list broke off unwritten, nor the
    /// server of a connection reset.
    #[test]
    fn a_server_that_may_read_a_connect_late_is_marked_on_every_path() {
        let t0 = Instant::now();
        for unwritten in [false, true] {
            let mut rr = RoundRobin::new(Reconnect::new(T, 1, t0), 1, 0);
            let Next::Try { host: 0, .. } = rr.next(t0, 0.0) else { panic!("server 0") };
            if unwritten {
                rr.unwritten();
            }
            // A server added: the attempt's whole timeout is cut.
            assert!(!rr.set_hosts(2, &[Some(0)], &asked_at(&[Some(t0), None]), t0 + T / 100));
            let broken_off = if unwritten { Last::Other } else { Last::WrittenUnanswered };
            assert_eq!(rr.last, [broken_off, Last::Other], "broken off, unwritten: {unwritten}");
        }
        let lost = t0 + read_timeout(T);
        let silent = RoundRobin::after_loss(Reconnect::new(T, 2, t0), 2, Some(0), lost, false);
        assert_eq!(silent.last, [Last::WrittenUnanswered, Last::Other], "lost silent");
        let reset = RoundRobin::after_loss(Reconnect::new(T, 2, t0), 2, Some(0), t0 + T / 10, false);
        assert_eq!(reset.last, [Last::Other, Last::Other], "reset");
        let mut rr = RoundRobin::new(Reconnect::new(T, 2, t0), 2, 0);
        let Next::Try { until, .. } = rr.next(t0, 0.0) else { panic!("server 0") };
        rr.ended(Ended::Unanswered(until));
        let Next::Try { host: 1, .. } = rr.next(until, 0.0) else { panic!("server 1") };
        rr.ended(Ended::Unsent);
        assert_eq!(rr.last, [Last::WrittenUnanswered, Last::Unsent], "ended unanswered / unsent");
    }

    /// While another refuses, a server whose last attempt never took its
    /// connect waits `T/8`, not `T/40`: long enough for a connection's
    /// round trips on a network as slow as the clock covers (outside
    /// attack round 56, F2: members that dropped SYNs during an outage,
    /// 60 ms away at `T = 2 s`, were never reached again).
    #[test]
    fn while_another_refuses_an_unsent_server_waits_for_a_connection() {
        // Server 0 refuses each round; server 1 ends `how`, and from the
        // second round on waits `wait` (`now` to the wait's end).
        let rounds = |how: fn(Instant) -> Ended, wait: fn(&RoundRobin<Reconnect>, Instant) -> Instant| {
            let t0 = Instant::now();
            let mut rr = RoundRobin::new(Reconnect::new(T, 2, t0), 2, 0);
            let mut now = t0;
            for round in 0..3 {
                let Next::Try { host: 0, .. } = rr.next(now, 0.0) else { panic!("server 0") };
                rr.ended(Ended::Unusable);
                let Next::Try { host: 1, until } = rr.next(now, 0.0) else { panic!("server 1") };
                if round > 0 {
                    assert_eq!(until, wait(&rr, now), "round {round}");
                }
                rr.ended(how(until));
                let Next::Pause { until } = rr.next(until, 0.0) else { panic!("a pause") };
                now = until;
            }
        };
        // A server whose connect was written and went unanswered: `T/40`.
        rounds(Ended::Unanswered, |rr, now| now + rr.rules().max_backoff());
        rounds(|_| Ended::Unsent, |_, now| now + T / 8);
    }

    /// A list that breaks off an attempt that wrote nothing a server could
    /// read (its TCP connect or TLS handshake going on) does not put giving
    /// up off; one whose connect was written does.
    #[test]
    fn an_attempt_broken_off_unwritten_puts_nothing_off() {
        let t0 = Instant::now();
        for written in [false, true] {
            let mut rr = RoundRobin::new(Reconnect::new(T, 2, t0), 2, 0);
            let give_up = rr.rules().give_up_at();
            let Next::Try { host: 0, .. } = rr.next(t0, 0.0) else { panic!("server 0") };
            if !written {
                rr.unwritten();
            }
            let later = t0 + T / 4;
            assert!(!rr.set_hosts(1, &[None, Some(0)], &asked_at(&[None]), later), "its server dropped");
            let put_off = later + T * 4 / 3;
            assert_eq!(rr.rules().give_up_at(), if written { put_off } else { give_up }, "written: {written}");
        }
        // Said for one list only: the attempt goes on (the same list), its
        // connect is written, and the next list that breaks it off puts
        // giving up off.
        let mut rr = RoundRobin::new(Reconnect::new(T, 2, t0), 2, 0);
        let Next::Try { host: 0, .. } = rr.next(t0, 0.0) else { panic!("server 0") };
        rr.unwritten();
        let same = [Some(0), Some(1)];
        assert!(rr.set_hosts(2, &same, &asked_at(&[Some(t0), None]), t0 + T / 20), "goes on");
        let later = t0 + T / 4;
        assert!(!rr.set_hosts(1, &[None, Some(0)], &asked_at(&[None]), later), "its server dropped");
        assert_eq!(rr.rules().give_up_at(), later + T * 4 / 3, "written by then");
    }

    /// An attempt a list breaks off before it reached its server counts in
    /// the order once it waited `T/10` for it (a host that drops SYNs had
    /// its turn), not before (a healthy server cut a moment after it was
    /// asked keeps its place).
    #[test]
    fn an_unreached_attempt_counts_once_it_waited() {
        let t0 = Instant::now();
        let mut rr = RoundRobin::new(Reconnect::new(T, 3, t0), 3, 0);
        assert!(!rr.counts(false, t0) && rr.counts(true, t0), "no attempt: as the caller says");
        let Next::Try { host: 0, .. } = rr.next(t0, 0.0) else { panic!("server 0") };
        assert!(rr.counts(true, t0), "reached");
        assert!(!rr.counts(false, t0 + T / 10 - Duration::from_millis(1)), "not reached, not yet long");
        assert!(rr.counts(false, t0 + T / 10), "waited T/10");
    }

    /// An attempt a new list lets go on counts in the next round's order
    /// from its start, though the caller does not count it yet (it has not
    /// reached its server): it goes after the servers asked before it.
    #[test]
    fn an_attempt_going_on_across_a_list_counts_from_its_start() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut rr = RoundRobin::new(Reconnect::new(T, 3, t0), 3, 1);
        assert!(matches!(rr.next(t0, 0.0), Next::Try { host: 1, .. }));
        rr.ended(Ended::Unusable);
        assert!(matches!(rr.next(ms(10), 0.0), Next::Try { host: 2, .. }));
        rr.ended(Ended::Unusable);
        let Next::Try { host: 0, until } = rr.next(ms(20), 0.0) else { panic!("server 0") };
        let same = [Some(0), Some(1), Some(2)];
        let asked = [
            Ask::default(),
            Ask { started: Some(t0), counted: Some(t0) },
            Ask { started: Some(ms(10)), counted: Some(ms(10)) },
        ];
        assert!(rr.set_hosts(3, &same, &asked, ms(30)), "goes on");
        rr.ended(Ended::Unsent);
        let Next::Pause { until: now } = rr.next(until, 0.0) else { panic!("a pause") };
        let Next::Try { host, .. } = rr.next(now, 0.0) else { panic!("a try") };
        assert_eq!(host, 1, "asked longest ago; 0 was asked last, though unreached");
    }

    /// The servers of the next `n` attempts at `now`, each refused.
    fn refused(rr: &mut RoundRobin<Reconnect>, now: Instant, n: usize) -> Vec<usize> {
        (0..n)
            .map(|_| {
                let Next::Try { host, .. } = rr.next(now, 0.0) else { panic!("a try") };
                rr.ended(Ended::Unusable);
                host
            })
            .collect()
    }

    /// Outside attack round 54, F1: a healthy server S in every list, its
    /// attempt once ended unanswered (hung a moment), hung h0 and h1
    /// swapped beside it: a hung one brought back counts as tried in the
    /// round (by address), so the round ends and the next asks S first;
    /// by index, each came back untried and S was never asked again.
    #[test]
    fn a_server_brought_back_by_a_list_counts_as_tried_in_the_round() {
        let t0 = Instant::now();
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 1, t0), 1, None, t0, false);
        let Next::Try { host: 0, .. } = rr.next(t0, 0.0) else { panic!("S") };
        // [S, h0]: S's whole-timeout wait cut, left, unanswered.
        assert!(!rr.set_hosts(2, &[Some(0)], &asked_at(&[Some(t0), None]), t0 + T / 50));
        rr.left_ended(Ended::Unanswered(t0 + T / 10));
        let Next::Try { host: 1, .. } = rr.next(t0 + T / 10, 0.0) else { panic!("h0") };
        // [S, h1]: h0's attempt broken off; h1 asked.
        assert!(!rr.set_hosts(2, &[Some(0), None], &asked_at(&[Some(t0), None]), t0 + T / 4));
        let Next::Try { host: 1, .. } = rr.next(t0 + T / 4, 0.0) else { panic!("h1") };
        // [S, h0] again: h0 was asked in this round.
        let mut unreached = rr.clone();
        assert!(!rr.set_hosts(2, &[Some(0), None], &asked_at(&[Some(t0), Some(t0 + T / 10)]), t0 + T * 2 / 5));
        let Next::Pause { until } = rr.next(t0 + T * 2 / 5, 0.0) else { panic!("the round is over") };
        assert!(matches!(rr.next(until, 0.0), Next::Try { host: 0, .. }), "S, asked longest ago");
        // The same with h0's attempt broken off before it reached h0 (a host
        // that drops SYNs): tried all the same.
        let h0 = Ask { started: Some(t0 + T / 10), counted: None };
        assert!(!unreached.set_hosts(2, &[Some(0), None], &[asked_at(&[Some(t0)])[0], h0], t0 + T * 2 / 5));
        assert!(matches!(unreached.next(t0 + T * 2 / 5, 0.0), Next::Pause { .. }), "the round is over");
    }

    /// Round 29's O2 and round 31's O2: a new server list while an attempt
    /// waits on a hung server that the new list keeps lets it go on, on its
    /// connection and with its wait; the next server comes from the new
    /// list.
    #[test]
    fn a_new_list_during_an_attempt_leaves_its_wait_as_it_was() {
        let t0 = Instant::now();
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 2, t0), 2, Some(0), t0, false);
        let Next::Try { host: 0, until } = rr.next(t0, 0.0) else { panic!("its own server first") };
        let later = t0 + T / 20;
        // The same server now second in the list.
        assert!(rr.set_hosts(2, &[Some(1), Some(0)], &asked_at(&[None, Some(t0)]), later), "the attempt goes on");
        assert!(
            rr.set_hosts(2, &[Some(0), Some(1)], &asked_at(&[None, Some(t0)]), later),
            "again (the same list refreshed)"
        );
        rr.ended(Ended::Unanswered(until));
        assert!(matches!(rr.next(until, 0.0), Next::Try { host: 0, .. }), "then the other");
        rr.ended(Ended::Unusable);
        let Next::Pause { .. } = rr.next(until, 0.0) else { panic!("one round of two") };
        // A new list without the server of the attempt: the round goes on
        // from the server that was next, then the new one.
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 2, t0), 2, Some(0), t0, false);
        rr.next(t0, 0.0);
        assert!(!rr.set_hosts(3, &[None, Some(2)], &asked_at(&[None, None, None]), later), "broken off");
        let Next::Try { host: 2, until } = rr.next(later, 0.0) else { panic!("the server that was next") };
        assert_eq!(until, later + T / 3, "a fresh wait for a server not waited on");
        rr.ended(Ended::Unusable);
        assert!(matches!(rr.next(later, 0.0), Next::Try { host: 0, .. }), "then the new list's others");
        // Between attempts (none in progress): the server that was next.
        let mut rr = RoundRobin::after_loss(Reconnect::new(T, 2, t0), 2, Some(0), t0, false);
        rr.next(t0, 0.0);
        rr.ended(Ended::Unusable);
        assert!(!rr.set_hosts(2, &[Some(1), Some(0)], &asked_at(&[None, Some(t0)]), later), "nothing to go on");
        assert!(matches!(rr.next(later, 0.0), Next::Try { host: 0, .. }));
    }
}

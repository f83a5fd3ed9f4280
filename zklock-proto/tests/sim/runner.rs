//! The runner of each contender, as zklock-core runs an attempt: it sends
//! the attempt's requests in action order on its session, feeds replies and
//! notifications in the order the session received them, keeps the
//! session layer's watchers (set again with SetWatches on reconnect),
//! answers the clock, lingers, holds and releases, and cleans up what an
//! ended attempt leaves. A semaphore's contender takes the semaphore's
//! mutex first (an exclusive attempt on `<path>/locks`), keeps a watch on
//! its node (the grant's, or a read of its own), feeds `MutexLost` to the
//! lease attempt when the node goes or the session ends, and deletes the
//! node after the lease attempt ends (in order with its requests).
//! A multi-lock contender (`Multi`) runs its calls as zklock-core's
//! `MultiLock::acquire` does on one client: the call's machine
//! (`zklock_proto::multi`) asks for each member's acquire (an exclusive
//! lock's attempt of the runner, one at a time), whose grant starts a
//! holder's machine of that member (its own number: `Tag::Hold`); the
//! reads of the members' nodes after the last grant go as plain reads
//! (`Tag::Multi`), a member's `check()` is its holder's machine's state,
//! its connection and its safety clock (`World::verdict`), and a member
//! waited for is told of each change of its holder's machine and of the
//! clock. A failed call releases the members taken (newest first); a set
//! granted is held and released as one lock is.
//! A granted lock is followed by the holder's machine
//! (`zklock_proto::hold`): its reads and watches of our node, the session's
//! reconnects and end, the release (its delete, the outcome told to the
//! caller). The model's `DeleteOwned` stands in for the look and the delete
//! at the version seen that a release of a node not known ours makes
//! (`zklock_proto::cleanup`).
//!
//! In timed runs each runner's session layer also does what zklock-core's
//! does for the safety clock (`zklock-core/src/clock.rs`, `client.rs`): a
//! heartbeat every `T/8` (sooner while the connection's replies have not
//! moved the clock: `Clock::next_heartbeat`), a `sync` (a plain `exists`
//! with the history switch `credit_reads`), or once the clock ran out a
//! write probe; each reply, however late, is credited with its
//! send and answer stamps and its connection's connect stamp; after a
//! reconnect or a new session the first heartbeat goes at once. The
//! attempt's clock questions are answered from that clock
//! (`Clock::will_stay_safe`; an attempt waiting for it is told when a
//! credit moves it). Every session layer (the Curator-like peers' too)
//! pings after `T/3` without sending, and gives its connection up after
//! its read timeout without reading.
//!
//! A semaphore whose permits come from a shared count (protocol 8c): as
//! zklock-core's acquire, once the mutex is held the runner reads the
//! count with a data watch (`Tag::Count`) and starts the lease attempt
//! with it; a count missing or not a count (or a stop meanwhile) fails the
//! acquire instead, the mutex let go (the contender acquires again later,
//! as a caller would); a read that failed for the connection (no answer,
//! the session gone) starts over: the mutex let go and taken again, the
//! count read again. When the count's watch fires while the attempt runs,
//! the runner reads it again with a new watch and feeds the attempt
//! nothing until the answer came (what it would take meanwhile is held
//! back, `Held`, and fed in order after; zklock-core's loop awaits the
//! read), then `Event::Permits(n)`; a count that is missing or not a count
//! ends the attempt: `Permits(0)`, then `Stop` (outside attack round 17,
//! F1: the machine has no input for an unreadable count, so the rule is
//! the runner's); a read that failed for the connection gives
//! `Permits(0)`, and the count is read again once connected (before the
//! reconnect is given to the attempt), or on the next session after the
//! attempt queued again (outside attack round 19, G3, G5: the waiter keeps
//! its place). `CountBugs` switches three wrong rules on.
//!
//! In the exhaustive search (untimed) a holder releases when the search's
//! release move says so, and its safety clock runs out and is credited by
//! moves of the search (`clock_runs_out`, `clock_credited`), fed to the
//! attempt and the holder's machine as a timed run's clock is.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::Instant;

use zklock_proto::acquire::{
    Action, Attempt, Bugs, Config, Downgrade, End, Event, Failure, Id, Notice, Reply, Request,
};
use zklock_proto::clock::{Clock, Heartbeat};
use zklock_proto::hold::{self, Hold};
use zklock_proto::multi::{self, MultiAcquire, ReadAnswer, Verdict};
use zklock_proto::names::{self, LockMode};

use super::check::{self, Violation};
use super::model::{Msg, Op, Session, SessionId, WatchKind};
use super::peer::{Machine, Peer};
use super::World;

/// Who sent a request.
#[derive(Clone, Debug)]
pub enum Tag {
    /// Request `id` of the contender's attempt number `gen`.
    Attempt {
        /// The attempt's number.
        gen: u64,
        /// The request.
        id: Id,
    },
    /// The runner's own work.
    Task(Task),
    /// Request `id` of the contender's hold number `n` (its delete:
    /// [`HOLD_DELETE`]).
    Hold {
        /// The hold's number.
        n: u64,
        /// The request.
        id: Id,
    },
    /// The safety clock's heartbeat: a sync, or a write probe when `write`.
    Beat {
        /// Its send stamp (the client's clock).
        sent: Instant,
        /// A write probe.
        write: bool,
        /// The connect stamp of the connection it was sent on.
        connect_sent: Instant,
        /// When that connect's answer was read.
        connect_answered: Instant,
        /// The server time (ticks) it was sent at.
        tick: u64,
    },
    /// The session layer's ping, sent at this server time (ticks).
    Ping(u64),
    /// A read of the semaphore's shared count (with a data watch) for
    /// attempt number `gen`: before it starts, or again while it runs.
    Count {
        /// The attempt's number.
        gen: u64,
    },
    /// A multi-lock call's read of a member's node (after the last
    /// member's grant: `multi::Action::Read`).
    Multi {
        /// The call's number.
        call: u64,
        /// The member.
        member: usize,
    },
}

impl Tag {
    /// A request of the session layer (heartbeat, ping), not of the lock.
    pub fn is_session_layer(&self) -> bool {
        matches!(self, Tag::Beat { .. } | Tag::Ping(_))
    }

    /// The server time (ticks) a session-layer request was sent at.
    pub fn session_layer_tick(&self) -> Option<u64> {
        match self {
            Tag::Beat { tick, .. } | Tag::Ping(tick) => Some(*tick),
            _ => None,
        }
    }
}

/// Whether the server queued anything for `s`'s client but replies to its
/// session layer.
pub fn real_out(s: &Session<Tag>) -> bool {
    s.out.iter().any(|m| match m {
        Msg::Reply { tag, .. } => !tag.is_session_layer(),
        Msg::Notify { .. } => true,
    })
}

/// The id of a hold's delete (the hold's own requests count from 1).
pub const HOLD_DELETE: Id = Id(u64::MAX);

/// The watcher key (in place of an attempt number) of hold `n`'s watches.
pub fn hold_key(n: u64) -> u64 {
    u64::MAX / 2 + n
}

/// The runner's own requests: release and cleanup, retried after a lost
/// reply until they are answered or the session ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Task {
    /// Delete our held node.
    Release(String),
    /// Delete a node an ended attempt left (if our session owns it).
    Clean(String),
    /// Sweep this parent for our nodes with this protected prefix (a
    /// create of unknown outcome): first a probe write (what zklock-core's
    /// cleanup sends, `Request::Probe`: its answer comes from a server that
    /// has applied every change made before it), then `SweepList`.
    Sweep(String, String),
    /// List this parent and delete our nodes with this protected prefix.
    SweepList(String, String),
    /// Read our mutex node with a data watch (the holder's monitor, when
    /// the grant left no watch on it).
    Watch(String),
}

/// The attempt number of the runner's own watch on its mutex node.
pub const MONITOR: (u64, Id) = (u64::MAX, Id(0));

/// The request id of the runner's watch on the shared count (with the
/// number of the attempt it is read for).
pub const COUNT: Id = Id(u64::MAX - 1);

/// Wrong rules of the runner's shared count, switched on by tests that
/// show the simulator finds them (the runner is zklock-core's part: the
/// attempt machine has no input for a count that cannot be read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CountBugs {
    /// A count that cannot be read again while an attempt waits (deleted,
    /// not a count) is ignored: the attempt keeps the old count
    /// and no watch is left (zklock-core before the fix of outside attack
    /// round 17, F1).
    pub keep_on_failure: bool,
    /// While the count is read again, replies and notifications that came
    /// after its change's notification are fed to the attempt anyway
    /// (zklock-core's runner until its `select!` took a fired count watch
    /// before a ready reply), so a list answered after the change can be
    /// decided on with the old count.
    pub no_hold_back: bool,
    /// A read of the count that failed for the connection (no answer, the
    /// session gone) fails the acquire, before its attempt or while it
    /// waits (zklock-core before the fix of outside attack round 19, G3,
    /// G5: a waiter lost its place).
    pub fail_on_lost_read: bool,
}

/// A message the runner held back while it read the shared count again
/// (fed in order once the count was given to the attempt).
#[derive(Clone, Debug)]
pub enum Held {
    /// From the session layer.
    Local(Local),
    /// From the server.
    Msg(Msg<Tag>),
}

/// A semaphore contender's mutex, taken before each lease attempt: its node
/// under the mutex path, and the watch on it the grant's proof left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MutexHold {
    /// The mutex node's full path.
    pub path: String,
    /// The watch on it (attempt number, request), if the grant left one.
    pub watch: Option<(u64, Id)>,
}

/// What a member's check or read says when it failed for the connection
/// alone (suspended, safety clock out, no answer): the call waits for it
/// and fails with it only at its deadline or a cancel
/// (`check::multi_failure`).
pub const FOR_THE_CONNECTION: &str = "for the connection";

/// A multi-lock contender's calls (`zklock_proto::multi`), as
/// zklock-core's `MultiLock::acquire` runs them on one client: each member
/// an exclusive lock's attempt (the runner's, one at a time) and then a
/// holder's machine of its own; the call's machine decides.
pub struct Multi {
    /// The members' lock paths, in the order a call takes them (byte
    /// order, as `MultiLock::new` sorts them).
    pub paths: Vec<String>,
    /// Each member's mode (exclusive, or read or write of a read/write
    /// lock).
    pub modes: Vec<LockMode>,
    /// The contender whose client takes each member: this one, or a
    /// member's client of it (`Contender::coordinator`; a `MultiLock` of
    /// locks on several clients).
    pub clients: Vec<usize>,
    /// The call that runs (`None` between calls and while the set is held).
    pub call: Option<MultiAcquire<String>>,
    /// The number of calls so far (the current or last one's; unused on a
    /// member's client: its calls are its coordinator's).
    pub calls: u64,
    /// The member whose acquire the call waits for (after
    /// `multi::Action::Acquire`).
    pub acquiring: Option<usize>,
    /// The member the call waits for (after `multi::Action::Wait`).
    pub waiting: Option<usize>,
    /// The call was told of a member lost (`World::call_lost`).
    pub lost_fed: bool,
    /// The call stopped the acquire of the member it was taking, for that
    /// loss (`multi::Action::Stop`).
    pub stopping: bool,
    /// The members taken: of the call that runs, of the set held, and
    /// those whose release is on its way.
    pub members: Vec<Member>,
}

impl Multi {
    /// A multi-lock of `members` (path and mode, in the order taken) on the
    /// clients of contenders `clients`.
    pub fn new(members: Vec<(String, LockMode)>, clients: Vec<usize>) -> Multi {
        let (paths, modes) = members.into_iter().unzip();
        Multi {
            paths,
            modes,
            clients,
            call: None,
            calls: 0,
            acquiring: None,
            waiting: None,
            lost_fed: false,
            stopping: false,
            members: Vec::new(),
        }
    }
}

/// A member a multi-lock contender took.
pub struct Member {
    /// The call it was taken by.
    pub call: u64,
    /// Its index in the call.
    pub member: usize,
    /// Its node's full path.
    pub node: String,
    /// Its czxid (the token it was granted with).
    pub czxid: i64,
    /// The session that took it.
    pub session: SessionId,
    /// Its hold's number (`Tag::Hold`, `hold_key`).
    pub n: u64,
    /// The zxid as of which the set's grant must find it ours
    /// (`check::multi_grant`): the last member's, that of the last message
    /// its session read before its grant; an earlier member's, what its
    /// server had applied when the last member was granted (a loss its
    /// server knew of then must not go unnoticed); or that of the answer
    /// to a read of it since (`read`).
    pub due: i64,
    /// The zxid of the last answer to a read of its node that showed it
    /// (`multi::Action::Read`).
    pub read: Option<i64>,
    /// Its holder's machine, until its release is over or its session
    /// ended.
    pub hold: Option<Hold>,
}

/// What the session layer tells the runner, not from the server.
#[derive(Clone, Debug)]
pub enum Local {
    /// A request failed on the client (connection lost, session gone).
    Fail {
        /// The request.
        tag: Tag,
        /// Why.
        failure: Failure<String>,
        /// The connection it was sent on.
        conn: u64,
    },
    /// Connected again (same session).
    Reconnected,
    /// The session ended.
    SessionEnded,
}

/// What a contender is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// Between attempts: starts one after this many steps.
    Idle(u32),
    /// An attempt runs.
    Acquiring,
    /// Holds `path`; releases after `left` steps.
    Holding {
        /// The held node.
        path: String,
        /// Steps until release.
        left: u32,
    },
    /// Held and released after the faults stopped: contends no more.
    Done,
}

/// One contender: a client session and the runner of its attempts.
pub struct Contender {
    /// `c0`, `c1`, ...
    pub name: String,
    /// Its lock kind.
    pub mode: LockMode,
    /// The lock path it contends for (a multi-lock's: see `multi`).
    pub path: String,
    /// A multi-lock contender's calls and members; a member's client's
    /// members (its calls are its coordinator's).
    pub multi: Option<Multi>,
    /// A member's client of this multi-lock contender: it takes and holds
    /// the members the contender's calls give it, and nothing else.
    pub coordinator: Option<usize>,
    /// Permits of the lock (1 but for a semaphore).
    pub permits: usize,
    /// Tries once (gives up when held by others).
    pub try_once: bool,
    /// Its session now.
    pub session: SessionId,
    /// The last zxid its session got a message with.
    pub last_zxid: i64,
    /// Session-layer messages to deliver before the server's.
    pub inbox: VecDeque<Local>,
    /// The current (or last) attempt.
    pub attempt: Option<Box<dyn Machine>>,
    /// A Curator-like peer (`peer::Peer`) rather than zklock's machine.
    pub peer: bool,
    /// The attempt's number.
    pub gen: u64,
    /// The attempt's protected prefix.
    pub protected: String,
    /// The creates the attempt sent.
    pub creates: Vec<Id>,
    /// Registered watchers: (attempt, request, path, kind).
    pub watchers: Vec<(u64, Id, String, WatchKind)>,
    /// Watch requests not answered yet.
    pub pending_watch: HashMap<(u64, Id), (String, WatchKind)>,
    /// The attempt waits for a reconnect.
    pub awaiting_reconnect: bool,
    /// Lingering for the create's reply: steps of grace left.
    pub linger: Option<u32>,
    /// Waiting for the clock to move: steps left.
    pub clock_wait: Option<u32>,
    /// Stalled for this many steps (takes no steps).
    pub stalled: u32,
    /// What it is doing.
    pub state: State,
    /// Tasks to send again once reconnected.
    pub retry: Vec<Task>,
    /// Task requests not answered yet.
    pub tasks: Vec<Task>,
    /// The guess the last attempt gave for the next one.
    pub seq_guess: Option<i64>,
    /// Granted after the faults stopped.
    pub granted_clean: bool,
    /// The current attempt was told to stop.
    pub stopped: bool,
    /// The current attempt began a wait (`Action::Waiting`: blocked,
    /// waiting for a notification) since it started.
    pub waited: bool,
    /// Its caller cancelled its acquire and does not acquire again (the
    /// exhaustive search's cancel, `World::cancel`): done once the acquire
    /// ended, never granted.
    pub gave_up: bool,
    /// ... because the client was closed.
    pub closed: bool,
    /// The lock kind of the current attempt (a writer's downgrade is a
    /// reader's attempt).
    pub attempt_mode: LockMode,
    /// The write node a writer keeps while its downgrade attempt runs.
    pub write_held: Option<String>,
    /// The parent the current attempt queues under.
    pub attempt_path: String,
    /// The permits the current attempt counts with.
    pub attempt_permits: usize,
    /// A semaphore contender's mutex path (`<path>/locks`).
    pub mutex_path: Option<String>,
    /// The semaphore's mutex, while this contender holds it.
    pub mutex_held: Option<MutexHold>,
    /// The current attempt is the one for the mutex.
    pub in_mutex: bool,
    /// A hash of every event fed to the current attempt (it is a pure
    /// function of its config and these: the exhaustive search's state).
    pub fed: u64,
    /// The holder's machine of the lock granted last (until its release
    /// is over).
    pub hold: Option<Hold>,
    /// The number of holds so far.
    pub holds: u64,
    /// Steps until the hold's retry.
    pub hold_retry: Option<u32>,
    /// What the hold was last told of the safety clock.
    pub hold_safe: bool,
    /// The safety clock of its session (timed runs; not for peers).
    pub clock: Option<Clock>,
    /// How much faster its clock runs than the server's, per mille.
    pub rate: i64,
    /// Its session layer believes its connection up (what `check()` asks).
    pub link_up: bool,
    /// Its connection went while it was stalled: it learns when the stall
    /// ends.
    pub down_pending: bool,
    /// When its next heartbeat goes (its clock).
    pub next_beat: Option<Instant>,
    /// When it last read a message from the server (its clock).
    pub last_read: Option<Instant>,
    /// When its current connection's connect request went (its clock).
    pub connect_sent: Option<Instant>,
    /// When that connect's answer was read.
    pub connect_answered: Option<Instant>,
    /// The server time (ticks) it last sent something at.
    pub last_send: u64,
    /// Cut off from the server from this server time (ticks) ...
    pub cut_from: u64,
    /// ... until this one.
    pub cut_until: u64,
    /// Messages queued before the cut began: they still arrive.
    pub cut_readable: usize,
    /// What its session layer will learn once the cut ends (its session
    /// expired meanwhile).
    pub deferred: Vec<Local>,
    /// The attempt waits for the safety clock to move (timed runs, and the
    /// exhaustive search's clock moves).
    pub awaiting_clock: bool,
    /// Untimed runs (the exhaustive search): its safety clock ran out (a
    /// move of the search) and was not credited since.
    pub clock_out: bool,
    /// The leader expired its session; its follower has not closed the
    /// connection yet (its client learns when it does).
    pub end_pending: bool,
    /// A read of the shared count in flight, for this attempt number (the
    /// next one's: read before it starts; the current one's: read again
    /// after its watch fired, the attempt fed nothing until it is answered).
    pub count_read: Option<u64>,
    /// The permits the shared count gave, for the attempt about to start.
    pub count_permits: Option<usize>,
    /// The attempt (its number) whose read of the shared count again
    /// failed for the connection: it was given 0 permits, and the count is
    /// read again once its session layer is connected again (zklock-core's
    /// `count_unread`).
    pub count_unread: Option<u64>,
    /// The zxid of the last answer to a read of the shared count.
    pub count_zxid: i64,
    /// Messages held back while the shared count is read again, each with
    /// the last zxid its session had read when it came.
    pub held: VecDeque<(Held, i64)>,
    /// While a held-back message is fed: the last zxid its session had
    /// read when it came (what a grant it leads to is checked as of).
    pub as_of: Option<i64>,
    /// The zxid of the last list of the lease path fed to the current
    /// lease attempt (the list a grant decides on).
    pub decided_zxid: Option<i64>,
    /// The zxid of the list the lease held now was granted on.
    pub held_decided: Option<i64>,
    /// Its session layer's reconnect in progress (timed runs; see
    /// `World::reconnect_rounds`).
    pub rounds: Option<super::Rounds>,
    /// The one member its server list names, if it names only one (set by
    /// a leader change that stalls its member; every member again with a
    /// new session).
    pub only: Option<usize>,
    /// Paths it was told are not (or no longer) its node: a notification
    /// of a delete, or its hold's read showing another session's node
    /// (`World::third_party_replace`).
    pub told_not_ours: BTreeSet<String>,
    /// Paths it sent an unconditional delete of after it was told so
    /// (`told_not_ours`): judged by `check::deletes`.
    pub deleted_when_told: BTreeSet<String>,
}

impl Contender {
    /// A contender of `mode` on session `session`.
    pub fn new(
        i: usize,
        mode: LockMode,
        permits: usize,
        try_once: bool,
        peer: bool,
        session: SessionId,
        path: &str,
    ) -> Contender {
        Contender {
            name: if peer { format!("c{i}(peer)") } else { format!("c{i}") },
            peer,
            mode,
            path: path.to_string(),
            multi: None,
            coordinator: None,
            permits,
            try_once,
            session,
            last_zxid: 0,
            told_not_ours: BTreeSet::new(),
            deleted_when_told: BTreeSet::new(),
            inbox: VecDeque::new(),
            attempt: None,
            gen: 0,
            protected: String::new(),
            creates: Vec::new(),
            watchers: Vec::new(),
            pending_watch: HashMap::new(),
            awaiting_reconnect: false,
            linger: None,
            clock_wait: None,
            stalled: 0,
            state: State::Idle(0),
            retry: Vec::new(),
            tasks: Vec::new(),
            seq_guess: None,
            granted_clean: false,
            stopped: false,
            waited: false,
            gave_up: false,
            closed: false,
            attempt_mode: mode,
            write_held: None,
            attempt_path: String::new(),
            attempt_permits: permits,
            mutex_path: None,
            mutex_held: None,
            in_mutex: false,
            fed: 0,
            hold: None,
            holds: 0,
            hold_retry: None,
            hold_safe: true,
            clock: None,
            rate: 0,
            link_up: true,
            down_pending: false,
            next_beat: None,
            last_read: None,
            connect_sent: None,
            connect_answered: None,
            last_send: 0,
            cut_from: 0,
            cut_until: 0,
            cut_readable: 0,
            deferred: Vec::new(),
            awaiting_clock: false,
            clock_out: false,
            end_pending: false,
            count_read: None,
            count_permits: None,
            count_unread: None,
            count_zxid: 0,
            held: VecDeque::new(),
            as_of: None,
            decided_zxid: None,
            held_decided: None,
            rounds: None,
            only: None,
        }
    }

    /// Whether a release (of the lock, or of a multi-lock's member) waits
    /// for its hold's read: its delete is not sent yet.
    pub fn release_waits_for_read(&self) -> bool {
        let waits = |h: &Hold| h.waits_for_read();
        self.hold.as_ref().is_some_and(waits)
            || self.multi.as_ref().is_some_and(|mu| mu.members.iter().any(|m| m.hold.as_ref().is_some_and(waits)))
    }

    /// Whether a holder's machine of it runs (it holds, or its release is
    /// on its way).
    pub fn has_hold(&self) -> bool {
        self.hold.is_some() || self.multi.as_ref().is_some_and(|mu| mu.members.iter().any(|m| m.hold.is_some()))
    }

    /// The nodes it holds now, each with the holder's machine that knows
    /// it: the lock it was granted (and the write node it keeps while it
    /// downgrades), or a multi-lock's members taken (by the call that
    /// runs or the set it holds) and those whose release is on its way.
    pub fn held_nodes(&self) -> Vec<(&String, Option<&Hold>)> {
        if let Some(mu) = &self.multi {
            return mu.members.iter().filter(|m| m.hold.is_some()).map(|m| (&m.node, m.hold.as_ref())).collect();
        }
        let mut held: Vec<(&String, Option<&Hold>)> = self.write_held.iter().map(|p| (p, self.hold.as_ref())).collect();
        if let State::Holding { path, .. } = &self.state {
            held.push((path, self.hold.as_ref()));
        }
        held
    }

    /// Whether nothing is left to do (for quiescence).
    pub fn quiet(&self) -> bool {
        self.state == State::Done
            && self.tasks.is_empty()
            && self.retry.is_empty()
            && self.inbox.is_empty()
            && self.held.is_empty()
            && self.count_read.is_none()
    }
}

/// A short, readable form of node names and paths (the uuid cut to 4 hex).
pub fn short(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("_c_") {
        out.push_str(&rest[..i + 3]);
        let after = &rest[i + 3..];
        if after.len() >= 37 {
            out.push_str(&after[..4]);
            rest = &after[36..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

impl World {
    /// Contender `i`'s own clock now.
    pub fn client_now(&self, i: usize) -> Instant {
        super::client_time(self.base, self.zk.now, self.cs[i].rate)
    }

    /// Contender `i`'s session layer is connected now (timed runs): a new
    /// session (`fresh`: a new safety clock from its connect stamp) or a
    /// reconnect of the same one; its first heartbeat goes at once.
    pub fn connected(&mut self, i: usize, fresh: bool) {
        let now = self.client_now(i);
        let conn = self.zk.sessions[&self.cs[i].session].conn;
        let (timed, bugs) = (self.timed, self.clock_bugs);
        let c = &mut self.cs[i];
        c.link_up = true;
        c.down_pending = false;
        c.rounds = None;
        c.connect_sent = Some(now);
        c.connect_answered = Some(now);
        c.last_read = Some(now);
        c.next_beat = Some(now);
        c.last_send = self.zk.now;
        if fresh && timed && !c.peer {
            let mut k = Clock::new(now, super::SESSION_TIMEOUT, conn);
            k.set_bugs(bugs);
            c.clock = Some(k);
        }
    }

    /// Contender `i`'s session layer learns that its connection is gone
    /// (when its stall ends, if it is stalled), and what it was kept from
    /// learning while cut off.
    pub fn link_down(&mut self, i: usize) {
        let c = &mut self.cs[i];
        let d: Vec<Local> = c.deferred.drain(..).collect();
        c.inbox.extend(d);
        if c.stalled > 0 {
            c.down_pending = true;
        } else {
            self.link_lost(i);
        }
    }

    /// Contender `i`'s session layer knows its connection is gone: so does
    /// its holder's machine.
    fn link_lost(&mut self, i: usize) {
        if std::mem::replace(&mut self.cs[i].link_up, false) {
            self.feed_hold(i, hold::Event::Connection { connected: false });
        }
    }

    /// Whether contender `i`'s safety clock says safe now: in timed runs at
    /// its own (drifted) time; in untimed runs unless a move of the
    /// exhaustive search made it run out.
    fn clock_safe(&self, i: usize) -> bool {
        match self.timed {
            true => self.cs[i].clock.as_ref().is_some_and(|k| k.is_safe(self.client_now(i))),
            false => !self.cs[i].clock_out,
        }
    }

    /// Tells contender `i`'s holder's machine when its safety clock's
    /// verdict changed (timed runs).
    fn hold_clock(&mut self, i: usize) {
        if !self.timed || self.hold_numbers(i).is_empty() {
            return;
        }
        let safe = self.clock_safe(i);
        if std::mem::replace(&mut self.cs[i].hold_safe, safe) != safe {
            self.feed_hold(i, hold::Event::Clock { safe });
        }
    }

    /// Contender `i`'s session layer (timed runs): gives the connection up
    /// after its read timeout, sends the heartbeat when due, pings after
    /// `T/3` without sending; without a connection, reconnects.
    fn session_layer(&mut self, i: usize) {
        if !self.timed {
            return;
        }
        if !self.cs[i].link_up {
            self.reconnect_rounds(i);
            return;
        }
        let now = self.client_now(i);
        let sid = self.cs[i].session;
        if self.cs[i].last_read.is_some_and(|r| now.duration_since(r) >= super::READ_TIMEOUT) {
            self.count("read timeout");
            self.tr(|| format!("c{i}: read timeout: gives its connection up"));
            let s = &self.zk.sessions[&sid];
            if s.connected {
                let conn = s.conn;
                for tag in self.zk.drop_conn(sid) {
                    self.cs[i].inbox.push_back(Local::Fail { tag, failure: Failure::Unknown, conn });
                }
            }
            self.link_down(i);
            return;
        }
        let c = &mut self.cs[i];
        if let (Some(k), Some(due), Some(connect_sent), Some(connect_answered)) =
            (&c.clock, c.next_beat, c.connect_sent, c.connect_answered)
        {
            if now >= due {
                let write = k.heartbeat_write(now, self.zk.sessions[&sid].conn);
                c.next_beat = Some(now + k.next_heartbeat(now, super::SESSION_TIMEOUT / 8));
                // `credit_reads`: a plain read in place of the sync.
                let op = match write {
                    true => Op::Probe,
                    false if self.clock_bugs.heartbeat_reads() => Op::Exists { path: "/".to_string() },
                    false => Op::Sync,
                };
                let beat = Tag::Beat { sent: now, write, connect_sent, connect_answered, tick: self.zk.now };
                if self.zk.send(sid, beat, op) {
                    self.cs[i].last_send = self.zk.now;
                }
            }
        }
        if self.zk.now >= self.cs[i].last_send + super::T_TICKS / 3
            && self.zk.send(sid, Tag::Ping(self.zk.now), Op::Ping)
        {
            self.cs[i].last_send = self.zk.now;
        }
    }

    fn tr(&mut self, f: impl FnOnce() -> String) {
        if let Some(t) = &mut self.trace {
            t.push(format!("{:5} {}", self.step, f()));
        }
    }

    fn fail(&mut self, v: Violation) {
        if self.violation.is_none() {
            self.violation = Some(v);
        }
    }

    /// Starts a new attempt for contender `i`, with a new uuid (a
    /// downgrade of its held write node when `downgrade`).
    /// A semaphore contender without its mutex starts the mutex's attempt
    /// (an exclusive lock on the mutex path) first.
    pub fn start(&mut self, i: usize, downgrade: Option<Downgrade>) {
        let uuid = match self.fixed_uuids {
            // Contender and attempt number (the exhaustive search: the same
            // state whatever order the contenders started in).
            // Its first hex digits: the contender (from 1), then the number.
            true => uuid::Uuid::from_u128(((i as u128 + 1) << 124) | (u128::from(self.cs[i].gen + 1) << 112)),
            false => uuid::Uuid::from_u128(self.uuids.u128(..)),
        };
        let bugs: Bugs = self.bugs;
        // A multi-lock contender: a new call, or its member's acquire once
        // the call asks for it (`pump_multi`) if its own client takes that
        // member; a member's client of another: only the member's acquire
        // it was asked for.
        if let Some(mu) = &self.cs[i].multi {
            let here = mu.acquiring.is_some_and(|m| mu.clients.get(m).is_none_or(|j| *j == i));
            match (&mu.call, mu.acquiring, self.cs[i].coordinator) {
                (_, None, Some(_)) => {
                    self.cs[i].state = State::Done;
                    return;
                },
                (_, Some(_), Some(_)) => {},
                (None, _, None) => return self.start_call(i),
                (Some(_), _, None) if !here => {
                    self.cs[i].state = State::Acquiring;
                    return;
                },
                (Some(_), _, None) => {},
            }
        }
        let c = &mut self.cs[i];
        let in_mutex = c.mutex_path.is_some() && c.mutex_held.is_none();
        let (path, mode, mut permits) = match (&c.mutex_path, &c.multi) {
            (Some(m), _) if in_mutex => (m.clone(), LockMode::Exclusive, 1),
            (_, Some(mu)) => {
                let m = mu.acquiring.unwrap_or_default();
                (mu.paths[m].clone(), mu.modes[m], 1)
            },
            _ => (c.path.clone(), if downgrade.is_some() { LockMode::Read } else { c.mode }, c.permits),
        };
        // A semaphore with a shared count: the count is read (with a data
        // watch) once the mutex is held, before the lease attempt starts,
        // which counts with it (zklock-core's acquire).
        if let (false, LockMode::Lease, Some(count_path)) = (in_mutex, mode, self.count_path.clone()) {
            match c.count_permits.take() {
                Some(n) => permits = n,
                None => {
                    let gen = c.gen + 1;
                    c.count_read = Some(gen);
                    c.stopped = false;
                    c.closed = false;
                    c.state = State::Acquiring;
                    self.tr(|| format!("c{i}: reads the shared count"));
                    self.send(i, Tag::Count { gen }, Op::GetData { path: count_path, watch: true });
                    return;
                },
            }
        }
        c.attempt_mode = mode;
        c.attempt_path = path.clone();
        c.attempt_permits = permits;
        c.in_mutex = in_mutex;
        c.fed = 0;
        c.decided_zxid = None;
        c.count_permits = None;
        let cfg = Config {
            path,
            mode,
            permits,
            data: Vec::new(),
            try_once: c.try_once && !in_mutex,
            downgrade,
            session: c.session,
            protected: names::protected_prefix(&uuid),
            name_prefix: names::node_name_prefix(mode, &uuid),
            // (A multi-lock's guess would be another member's.)
            seq_guess: if in_mutex || c.multi.is_some() { None } else { c.seq_guess.take() },
            serialised: mode == LockMode::Lease,
            bugs,
        };
        c.protected = cfg.protected.clone();
        c.gen += 1;
        c.waited = false;
        c.stopped = false;
        c.closed = false;
        c.creates.clear();
        c.attempt = Some(if c.peer { Box::new(Peer::new(&cfg.path, &uuid)) } else { Box::new(Attempt::new(cfg)) });
        c.state = State::Acquiring;
        if self.trace.is_some() {
            let p = short(&self.cs[i].protected);
            let what = if self.cs[i].in_mutex { "mutex " } else { "" };
            self.tr(|| format!("c{i}: new {what}attempt {p}"));
        }
        self.pump(i);
    }

    /// Sends a request tagged `tag` for contender `i`, or fails it at once
    /// when there is no connection.
    fn send(&mut self, i: usize, tag: Tag, op: Op) {
        if let Op::Delete { path } = &op {
            if self.cs[i].told_not_ours.contains(path) {
                self.cs[i].deleted_when_told.insert(path.clone());
            }
        }
        let sid = self.cs[i].session;
        if self.zk.send(sid, tag.clone(), op) {
            self.cs[i].last_send = self.zk.now;
        } else {
            let s = &self.zk.sessions[&sid];
            let failure = if s.alive { Failure::Unknown } else { Failure::SessionGone };
            let conn = s.conn;
            self.cs[i].inbox.push_back(Local::Fail { tag, failure, conn });
        }
    }

    /// Sends a task of the runner.
    pub fn task(&mut self, i: usize, t: Task) {
        let op = match &t {
            Task::Release(p) | Task::Clean(p) => Op::DeleteOwned { path: p.clone() },
            Task::Sweep(..) => Op::Probe,
            Task::SweepList(parent, _) => Op::Children { path: parent.clone(), stat: false, watch: false },
            Task::Watch(p) => Op::GetData { path: p.clone(), watch: true },
        };
        self.cs[i].tasks.push(t.clone());
        self.send(i, Tag::Task(t), op);
    }

    /// Lets go of the semaphore's mutex if contender `i` holds it: drops
    /// its watch and deletes its node, after every request sent before.
    fn unlock(&mut self, i: usize) {
        let Some(m) = self.cs[i].mutex_held.take() else { return };
        if let Some((g, id)) = m.watch {
            self.unwatch(i, g, id);
        }
        if self.zk.sessions[&self.cs[i].session].alive {
            self.tr(|| format!("c{i}: lets go of the mutex {}", short(&m.path)));
            self.task(i, Task::Release(m.path));
        }
    }

    /// Contender `i` learned that its mutex is gone (its node deleted, or
    /// its session ended): a lease attempt that runs is told.
    fn mutex_lost(&mut self, i: usize, why: &str) {
        let Some(m) = self.cs[i].mutex_held.take() else { return };
        if let Some((g, id)) = m.watch {
            self.unwatch(i, g, id);
        }
        self.count("mutex lost");
        let sp = short(&m.path);
        self.tr(|| format!("c{i}: lost the mutex {sp} ({why})"));
        if !self.cs[i].in_mutex {
            self.feed(i, Event::MutexLost);
        }
    }

    /// Removes contender `i`'s watcher `(gen, id)`; the server's watch goes
    /// with the path's last watcher.
    fn unwatch(&mut self, i: usize, gen: u64, id: Id) {
        let c = &mut self.cs[i];
        c.pending_watch.remove(&(gen, id));
        let Some(pos) = c.watchers.iter().position(|w| w.0 == gen && w.1 == id) else { return };
        let (_, _, path, kind) = c.watchers.remove(pos);
        if !c.watchers.iter().any(|w| w.2 == path && w.3 == kind) {
            let sid = c.session;
            self.zk.unwatch(sid, &path, kind);
        }
    }

    /// The caller of contender `i`'s acquire cancels it (the exhaustive
    /// search's `Move::Stop`): the attempt that runs (the semaphore's
    /// mutex's, or the lease's) is told `Stop` (not closed), and an acquire
    /// reading its shared count fails once the read is answered; the
    /// contender gives up (`gave_up`): once the acquire ended it is done,
    /// never granted, and must have left nothing behind.
    pub fn cancel(&mut self, i: usize) {
        self.tr(|| format!("c{i}: its caller cancels the acquire and gives up"));
        self.count("acquire cancelled");
        self.cs[i].stopped = true;
        self.cs[i].gave_up = true;
        self.feed(i, Event::Stop { closed: false });
    }

    /// Feeds `ev` to contender `i`'s attempt and does what it asks.
    fn feed(&mut self, i: usize, ev: Event<String>) {
        let Some(a) = self.cs[i].attempt.as_mut() else { return };
        if a.is_done() {
            return;
        }
        if self.fixed_uuids {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            self.cs[i].fed.hash(&mut h);
            format!("{ev:?}").hash(&mut h);
            self.cs[i].fed = h.finish();
        }
        let Some(a) = self.cs[i].attempt.as_mut() else { return };
        a.handle(ev);
        self.pump(i);
    }

    /// Does the actions contender `i`'s attempt asks for.
    pub fn pump(&mut self, i: usize) {
        loop {
            let Some(action) = self.cs[i].attempt.as_mut().and_then(|a| a.poll_action()) else { return };
            let gen = self.cs[i].gen;
            match action {
                Action::Send(id, req) => {
                    if self.trace.is_some() {
                        let lp = short(&format!("{req:?}"));
                        self.tr(|| format!("c{i}: send #{} {lp}", id.0));
                    }
                    let op = match req {
                        Request::Create { path, sequential, .. } => {
                            self.cs[i].creates.push(id);
                            Op::Create { path, sequential }
                        },
                        Request::Children { path, stat, watch } => {
                            if watch {
                                self.cs[i].pending_watch.insert((gen, id), (path.clone(), WatchKind::Child));
                            }
                            Op::Children { path, stat, watch }
                        },
                        Request::GetData { path, watch } => {
                            if watch {
                                self.cs[i].pending_watch.insert((gen, id), (path.clone(), WatchKind::Data));
                            }
                            Op::GetData { path, watch }
                        },
                        Request::Exists { path } => Op::Exists { path },
                        Request::Delete { path, .. } => Op::Delete { path },
                        Request::MakeParents { path } => Op::MakeParents { path },
                        Request::Probe { .. } => Op::Probe,
                        Request::CheckAndCreate { check, path, .. } => {
                            self.cs[i].creates.push(id);
                            Op::CheckAndCreate { check, path }
                        },
                    };
                    self.send(i, Tag::Attempt { gen, id }, op);
                },
                Action::DropWatch(id) => self.unwatch(i, gen, id),
                Action::AwaitReconnect => {
                    let c = &mut self.cs[i];
                    c.awaiting_reconnect = true;
                    let s = &self.zk.sessions[&c.session];
                    if !s.alive && !c.end_pending {
                        if !c.inbox.iter().any(|l| matches!(l, Local::SessionEnded)) {
                            c.inbox.push_back(Local::SessionEnded);
                        }
                    } else if s.connected && !c.inbox.iter().any(|l| matches!(l, Local::Reconnected)) {
                        c.inbox.push_back(Local::Reconnected);
                    }
                },
                Action::CheckClock => {
                    let now = self.client_now(i);
                    let safe = match &self.cs[i].clock {
                        Some(k) if self.timed => k.will_stay_safe(now),
                        _ => !self.cs[i].clock_out && !(self.ch.roll(self.clock_unsafe)),
                    };
                    self.tr(|| format!("c{i}: clock safe={safe}"));
                    if !safe {
                        self.count("clock not safe");
                    }
                    if let Some(a) = self.cs[i].attempt.as_mut() {
                        a.handle(Event::Clock { safe });
                    }
                },
                Action::AwaitClock if (self.timed && self.cs[i].clock.is_some()) || self.cs[i].clock_out => {
                    self.cs[i].awaiting_clock = true;
                },
                Action::AwaitClock => self.cs[i].clock_wait = Some(self.ch.between(1, 20)),
                Action::Linger => {
                    let g = self.ch.between(0, 30);
                    self.cs[i].linger = Some(g);
                    self.count("linger");
                    self.tr(|| format!("c{i}: linger {g}"));
                },
                Action::Waiting => self.cs[i].waited = true,
                Action::SeqGuess(g) => {
                    if !self.cs[i].in_mutex {
                        self.cs[i].seq_guess = g;
                    }
                },
                Action::Granted(g) if self.cs[i].in_mutex => {
                    let path = format!("{}/{}", self.cs[i].attempt_path, g.name);
                    let sp = short(&path);
                    self.tr(|| format!("c{i}: takes the mutex {sp} czxid {}", g.czxid));
                    self.count("mutex taken");
                    if let Err(v) = check::not_stopped(&self.cs[i], &g.name)
                        .and_then(|()| check::grant(&self.zk, &self.cs[i], &g.name, g.czxid))
                    {
                        self.fail(v);
                    }
                    let c = &mut self.cs[i];
                    c.mutex_held = Some(MutexHold { path: path.clone(), watch: g.watch.map(|w| (gen, w)) });
                    c.state = State::Idle(0);
                    if g.watch.is_none() {
                        // The holder's monitor reads its node with a watch.
                        self.count("mutex taken without a watch on its node");
                        self.task(i, Task::Watch(path));
                    }
                },
                Action::Granted(g) if self.cs[i].multi.is_some() => self.member_granted(i, g.name, g.czxid, g.watch),
                Action::Granted(g) => {
                    let path = format!("{}/{}", self.cs[i].attempt_path, g.name);
                    let sp = short(&path);
                    self.tr(|| format!("c{i}: GRANTED {sp} czxid {}", g.czxid));
                    self.count("granted");
                    if let Err(v) = check::not_stopped(&self.cs[i], &g.name) {
                        self.fail(v);
                    }
                    // A lease of a shared count: the count's rule first (it
                    // says more than the queue's).
                    if self.count_path.is_some() {
                        if let Err(v) = check::count_grant(&self.zk, &self.cs[i], &g.name) {
                            self.fail(v);
                        }
                    }
                    if let Err(v) = check::grant(&self.zk, &self.cs[i], &g.name, g.czxid) {
                        self.fail(v);
                    }
                    self.cs[i].held_decided = self.cs[i].decided_zxid;
                    self.unlock(i);
                    let left = self.hold_steps();
                    // A downgrade holds the read node now: the write node
                    // goes.
                    if let Some(w) = self.cs[i].write_held.take() {
                        self.count("downgraded");
                        self.task(i, Task::Release(w));
                    }
                    let c = &mut self.cs[i];
                    c.state = State::Holding { path: path.clone(), left };
                    if !self.faults {
                        c.granted_clean = true;
                    }
                    self.start_hold(i, path, g.watch.map(|w| (gen, w)));
                },
                Action::Ended(end) => self.ended(i, end),
            }
        }
    }

    /// An attempt of contender `i` ended without the lock: check, clean up
    /// what it left, and start again later.
    fn ended(&mut self, i: usize, end: End<String>) {
        let Some(left) = self.cs[i].attempt.as_ref().map(|a| a.leftover()) else { return };
        if self.trace.is_some() {
            let e = format!("{end:?}");
            self.tr(|| format!("c{i}: ended {e} leftover {}", short(&format!("{left:?}"))));
        }
        self.count(match &end {
            End::Restart(_) => "ended: restart",
            End::Stopped => "ended: stopped",
            End::Failed(zklock_proto::acquire::Why::HeldByOthers) => "ended: held by others (try once)",
            End::Failed(_) => "ended: failed",
        });
        if left.unknown_create {
            self.count("ended with a create of unknown outcome");
        }
        if end == End::Stopped {
            if let Err(v) = check::stopped(&self.zk, &self.cs[i], &left) {
                self.fail(v);
            }
        }
        if !self.cs[i].in_mutex {
            self.unlock(i);
        }
        let gen = self.cs[i].gen;
        let ids: Vec<Id> = self.cs[i].watchers.iter().filter(|w| w.0 == gen).map(|w| w.1).collect();
        for id in ids {
            self.unwatch(i, gen, id);
        }
        let c = &mut self.cs[i];
        // The attempt's watch requests only: a hold's read may be out (a
        // multi-lock's member's, a downgrading writer's).
        c.pending_watch.retain(|(g, _), _| *g != gen);
        c.linger = None;
        c.clock_wait = None;
        c.awaiting_clock = false;
        c.awaiting_reconnect = false;
        c.count_unread = None;
        if self.zk.sessions[&c.session].alive {
            if let Some(n) = left.node {
                let p = format!("{}/{}", self.cs[i].attempt_path, n.name);
                self.task(i, Task::Clean(p));
            }
            if left.unknown_create {
                let p = self.cs[i].protected.clone();
                let parent = self.cs[i].attempt_path.clone();
                // Without the probe (`Bugs::list_without_probe`), the list
                // at once.
                let bug = self.bugs.is_on(|b| b.list_without_probe);
                self.task(i, if bug { Task::SweepList(parent, p) } else { Task::Sweep(parent, p) });
            }
        }
        // A downgrade that did not grant: the write node goes too.
        if let Some(w) = self.cs[i].write_held.take() {
            if self.zk.sessions[&self.cs[i].session].alive {
                self.task(i, Task::Release(w));
            }
        }
        if self.cs[i].multi.is_some() {
            self.member_ended(i, end);
            return;
        }
        self.acquire_again(i);
    }

    /// How long a holder holds before it releases: in timed runs a quarter
    /// of the holds last 0.5 to 2 session timeouts (long enough for the
    /// session to expire under a holder that is cut off or stalled). The
    /// exhaustive search releases by a move (`release`).
    fn hold_steps(&mut self) -> u32 {
        if self.release_moves {
            1
        } else if self.timed && self.ch.roll(25) {
            self.ch.between((super::T_TICKS / 2) as u32, (super::T_TICKS * 2) as u32)
        } else {
            self.ch.between(0, 15)
        }
    }

    /// Multi-lock contender `i` starts a call: its machine, and its first
    /// member's acquire (`pump_multi`).
    fn start_call(&mut self, i: usize) {
        let bugs = self.bugs;
        let Some(mu) = self.cs[i].multi.as_mut() else { return };
        mu.calls += 1;
        mu.lost_fed = false;
        mu.stopping = false;
        mu.call = Some(MultiAcquire::new(mu.paths.len(), bugs));
        let (call, clients) = (mu.calls, mu.clients.clone());
        // Its members' clients forget the members whose holds are over.
        for j in clients {
            if let Some(mu) = self.cs[j].multi.as_mut() {
                mu.members.retain(|m| m.hold.is_some());
            }
        }
        self.cs[i].state = State::Acquiring;
        self.cs[i].stopped = false;
        self.cs[i].closed = false;
        self.tr(|| format!("c{i}: multi-lock call {call}"));
        self.count("multi-lock call");
        if let Some(mu) = self.cs[i].multi.as_ref() {
            let (three, rw) = (mu.paths.len() == 3, mu.modes.iter().any(|m| *m != LockMode::Exclusive));
            if three {
                self.count("multi-lock call of three members");
            }
            if rw {
                self.count("multi-lock call with a read or write member");
            }
        }
        self.pump_multi(i);
    }

    /// The contender whose client takes member `m` of contender `k`'s
    /// multi-lock (`k` itself, or a member's client of it).
    pub fn client_of(&self, k: usize, m: usize) -> usize {
        self.cs[k].multi.as_ref().and_then(|mu| mu.clients.get(m).copied()).unwrap_or(k)
    }

    /// The multi-lock contender whose members contender `j`'s client takes
    /// (`j` itself, unless it is a member's client of another).
    pub fn coordinator(&self, j: usize) -> usize {
        self.cs[j].coordinator.unwrap_or(j)
    }

    /// Member `m` of contender `k`'s multi-lock call now, if taken (on its
    /// client's contender).
    fn member_of(&self, k: usize, m: usize) -> Option<&Member> {
        let call = self.cs[k].multi.as_ref()?.calls;
        let j = self.client_of(k, m);
        self.cs[j].multi.as_ref()?.members.iter().find(|x| x.call == call && x.member == m)
    }

    /// Feeds `ev` to contender `i`'s multi-lock call and does what it asks.
    pub fn feed_call(&mut self, i: usize, ev: multi::Event<String>) {
        if self.cs[i].multi.as_ref().and_then(|mu| mu.call.as_ref()).is_none_or(|c| c.is_done()) {
            return;
        }
        if self.trace.is_some() {
            let d = short(&format!("{ev:?}"));
            self.tr(|| format!("c{i}: call gets {d}"));
        }
        if let Some(call) = self.cs[i].multi.as_mut().and_then(|mu| mu.call.as_mut()) {
            call.handle(ev);
        }
        self.pump_multi(i);
    }

    /// Does the actions contender `i`'s multi-lock call asks for; then,
    /// while it takes a member, its reads are out or it waits for a member,
    /// tells it of a member known lost (`call_lost`).
    fn pump_multi(&mut self, i: usize) {
        self.pump_multi_actions(i);
        self.call_lost(i);
    }

    /// While contender `k`'s multi-lock call takes a member, has reads out
    /// or waits for a member: the first member taken that its client knows
    /// lost (its verdict failed) is fed as `multi::Event::Lost`, once a call
    /// (zklock-core's executor watches every member taken then: outside
    /// attack round 45, and for the member taken since session 40).
    fn call_lost(&mut self, k: usize) {
        let Some(mu) = self.cs[k].multi.as_ref() else { return };
        if mu.call.as_ref().is_none_or(|c| c.is_done()) || mu.lost_fed || !self.multi_watch {
            return;
        }
        let Some((m, error)) = self.lost_member(k) else { return };
        if let Some(mu) = self.cs[k].multi.as_mut() {
            mu.lost_fed = true;
        }
        self.feed_call(k, multi::Event::Lost { member: m, error });
    }

    /// The first member taken by contender `k`'s multi-lock call now that
    /// its client knows lost, and its verdict's error.
    pub fn lost_member(&self, k: usize) -> Option<(usize, String)> {
        let n = self.cs[k].multi.as_ref().map_or(0, |mu| mu.paths.len());
        (0..n).filter(|&m| self.member_of(k, m).is_some()).find_map(|m| match self.verdict(k, m) {
            Verdict::Failed(e) => Some((m, e)),
            _ => None,
        })
    }

    /// A broken promise if contender `k`'s multi-lock call has reads out or
    /// waits for a member while a member taken is known lost to its client
    /// (`call_lost` feeds it at once: the call must have ended), or takes a
    /// member without having stopped that acquire (`multi take`).
    pub fn call_goes_on(&self, k: usize) -> Option<check::Violation> {
        let mu = self.cs[k].multi.as_ref()?;
        if mu.call.as_ref().is_none_or(|c| c.is_done()) || mu.stopping || !self.multi_watch {
            return None;
        }
        let (m, _) = self.lost_member(k)?;
        Some(match mu.acquiring {
            Some(a) => check::Violation {
                kind: "multi take",
                what: format!("c{k}'s call goes on taking member {a} with member {m} known lost"),
            },
            None => check::Violation {
                kind: "multi wait",
                what: format!("c{k}'s call goes on (reads out or a member waited for) with member {m} known lost"),
            },
        })
    }

    fn pump_multi_actions(&mut self, i: usize) {
        loop {
            let Some(mu) = self.cs[i].multi.as_mut() else { return };
            let Some(action) = mu.call.as_mut().and_then(|c| c.poll_action()) else { return };
            let call = mu.calls;
            if let multi::Action::Acquire(m) = action {
                mu.acquiring = Some(m);
            }
            if let multi::Action::Wait(m) = action {
                mu.waiting = Some(m);
            }
            if self.trace.is_some() {
                let a = format!("{action:?}");
                self.tr(|| format!("c{i}: call {a}"));
            }
            match action {
                multi::Action::Acquire(m) => {
                    // On the member's client (the contender's own, or
                    // another's).
                    let j = self.client_of(i, m);
                    if let (true, Some(mu)) = (j != i, self.cs[j].multi.as_mut()) {
                        mu.acquiring = Some(m);
                    }
                    self.start(j, None);
                },
                multi::Action::Read(list) => {
                    self.count("multi-lock reads its members");
                    for m in list {
                        let node = self.member_of(i, m).map(|x| x.node.clone()).unwrap_or_default();
                        let j = self.client_of(i, m);
                        self.send(j, Tag::Multi { call, member: m }, Op::GetData { path: node, watch: false });
                    }
                },
                multi::Action::Check(m) => {
                    let verdict = self.verdict(i, m);
                    if let Some(c) = self.cs[i].multi.as_mut().and_then(|mu| mu.call.as_mut()) {
                        c.handle(multi::Event::Checked { member: m, verdict });
                    }
                },
                multi::Action::Wait(m) => {
                    self.count("multi-lock waits for a member");
                    let n = self.cs[i].multi.as_ref().map_or(0, |mu| mu.paths.len());
                    let set: Vec<&Member> = (0..n).filter_map(|x| self.member_of(i, x)).collect();
                    if let Err(v) = check::multi_wait(&self.cs[i].name, m, &set) {
                        self.fail(v);
                    }
                },
                multi::Action::Stop(m) => self.stop_member(i, m),
                multi::Action::Granted => self.set_granted(i),
                multi::Action::Fail { member, why, .. } => self.call_failed(i, member, &why),
            }
        }
    }

    /// Contender `i`'s multi-lock call stops the acquire of member `m` (an
    /// earlier member was lost): on its client, the attempt that runs is
    /// told `Stop` (unless the caller's cancel already stopped it); one
    /// between two attempts (queueing again) ends here.
    fn stop_member(&mut self, i: usize, m: usize) {
        self.count("multi-lock stops a member's acquire for a loss");
        if let Some(mu) = self.cs[i].multi.as_mut() {
            mu.stopping = true;
        }
        let j = self.client_of(i, m);
        if self.cs[j].multi.as_ref().is_none_or(|mu| mu.acquiring != Some(m)) || self.cs[j].stopped {
            return;
        }
        self.stop_attempt(j, false);
    }

    /// Contender `j`'s acquire is told to stop, once (its caller's cancel,
    /// its client's close when `closed`, or its multi-lock call's stop for
    /// a loss): the attempt that runs is told `Stop`; a multi-lock member's
    /// acquire between two attempts (queueing again) ends here.
    pub fn stop_attempt(&mut self, j: usize, closed: bool) {
        self.cs[j].stopped = true;
        match self.cs[j].attempt.as_mut() {
            Some(a) if !a.is_done() => {
                a.handle(zklock_proto::acquire::Event::Stop { closed });
                self.pump(j);
            },
            _ => self.member_ended(j, zklock_proto::acquire::End::Stopped),
        }
    }

    /// Member `m`'s guard's `check()` (zklock-core's `Holding::check`):
    /// failed once its hold is lost or over (its session ended), suspended
    /// while its hold is, its client's connection is down or its safety
    /// clock out.
    fn verdict(&self, k: usize, m: usize) -> Verdict<String> {
        let j = self.client_of(k, m);
        let Some(h) = self.member_of(k, m).and_then(|x| x.hold.as_ref()) else {
            return Verdict::Failed("its session ended".to_string());
        };
        let c = &self.cs[j];
        let safe = self.clock_safe(j);
        match h.state() {
            hold::State::Lost(loss) => Verdict::Failed(format!("lost: {loss:?}")),
            hold::State::Released => Verdict::Failed("released".to_string()),
            hold::State::Held if c.link_up && safe => Verdict::Safe,
            hold::State::Held | hold::State::Suspended => Verdict::Suspended(FOR_THE_CONNECTION.to_string()),
        }
    }

    /// A change on contender `j`'s client: of its holder's machine number
    /// `n`, or (`None`) of its safety clock. The multi-lock call that
    /// waits for a member taken there is told.
    fn call_changed(&mut self, j: usize, n: Option<u64>) {
        let k = self.coordinator(j);
        self.call_lost(k);
        let Some(m) = self.cs[k].multi.as_ref().and_then(|mu| mu.waiting) else { return };
        if self.client_of(k, m) != j || n.is_some_and(|n| self.member_of(k, m).is_none_or(|x| x.n != n)) {
            return;
        }
        if let Some(mu) = self.cs[k].multi.as_mut() {
            mu.waiting = None;
        }
        self.feed_call(k, multi::Event::Changed { member: m });
    }

    /// The zxid the server of contender `j`'s session has applied.
    fn applied(&self, j: usize) -> i64 {
        match self.zk.sessions[&self.cs[j].session].server {
            0 => self.zk.zxid,
            s => self.zk.followers[s - 1].zxid,
        }
    }

    /// A member of a multi-lock call was granted on contender `j`'s
    /// client: its holder's machine starts there (with the grant's watch
    /// on its node), and the call is told.
    fn member_granted(&mut self, j: usize, name: String, czxid: i64, watch: Option<Id>) {
        let path = format!("{}/{name}", self.cs[j].attempt_path);
        let sp = short(&path);
        self.tr(|| format!("c{j}: member granted {sp} czxid {czxid}"));
        self.count("multi-lock member granted");
        if let Err(v) =
            check::not_stopped(&self.cs[j], &name).and_then(|()| check::grant(&self.zk, &self.cs[j], &name, czxid))
        {
            self.fail(v);
        }
        let gen = self.cs[j].gen;
        let (n, hold) = self.new_hold(j, path.clone(), watch.map(|w| (gen, w)));
        // The call's number is its coordinator's.
        let k = self.coordinator(j);
        let call = self.cs[k].multi.as_ref().map_or(0, |mu| mu.calls);
        let c = &mut self.cs[j];
        let (session, due) = (c.session, c.last_zxid);
        let Some(mu) = c.multi.as_mut() else { return };
        let Some(member) = mu.acquiring.take() else { return };
        mu.members.push(Member { call, member, node: path, czxid, session, n, due, read: None, hold: Some(hold) });
        if j != k {
            self.count("multi-lock member granted on a client of its own");
            self.cs[j].state = State::Done;
            if let Some(mu) = self.cs[k].multi.as_mut() {
                mu.acquiring = None;
            }
        }
        // The earlier members are due ours as of what their servers have
        // applied now (see `Member::due`).
        for m in 0..member {
            let (c, z) = (self.client_of(k, m), self.applied(self.client_of(k, m)));
            let call = self.cs[k].multi.as_ref().map_or(0, |mu| mu.calls);
            if let Some(x) =
                self.cs[c].multi.as_mut().and_then(|mu| mu.members.iter_mut().find(|x| x.call == call && x.member == m))
            {
                x.due = z;
            }
        }
        self.pump_hold(j, n);
        self.feed_call(k, multi::Event::Granted { member, session, token: czxid as u64 });
    }

    /// A member's attempt of a multi-lock call ended without the lock on
    /// contender `j`'s client: one that queues again (its node gone, its
    /// session ended) starts again, as a member's acquire does; otherwise
    /// the call is told the member failed.
    pub fn member_ended(&mut self, j: usize, end: End<String>) {
        let stopped = self.cs[j].stopped;
        let Some(member) = self.cs[j].multi.as_ref().and_then(|mu| mu.acquiring) else { return };
        if matches!(end, End::Restart(_)) && !stopped {
            self.cs[j].state = State::Idle(self.ch.between(0, 10));
            return;
        }
        let k = self.coordinator(j);
        for x in [j, k] {
            if let Some(mu) = self.cs[x].multi.as_mut() {
                mu.acquiring = None;
            }
        }
        if j != k {
            self.cs[j].state = State::Done;
        }
        self.feed_call(k, multi::Event::Failed { member, error: format!("{end:?}") });
    }

    /// The answer to the read of member `member`'s node for call `call`, on
    /// contender `j`'s client (`zxid`: the answer's, if it showed the node).
    fn member_read(
        &mut self,
        j: usize,
        call: u64,
        member: usize,
        result: Result<zklock_proto::acquire::Answer, Failure<String>>,
        zxid: Option<i64>,
    ) {
        let k = self.coordinator(j);
        if self.cs[k].multi.as_ref().is_none_or(|mu| mu.calls != call) {
            return;
        }
        if let (Some(z), Some(mu)) = (zxid, self.cs[j].multi.as_mut()) {
            if let Some(m) = mu.members.iter_mut().find(|m| m.call == call && m.member == member) {
                m.read = Some(z);
            }
        }
        let answer = match result {
            Ok(zklock_proto::acquire::Answer::Data(stat)) => ReadAnswer::Node { owner: stat.owner, czxid: stat.czxid },
            Ok(other) => ReadAnswer::Failed(format!("{other:?}")),
            Err(Failure::NoNode) => ReadAnswer::NoNode,
            Err(Failure::Unknown) => ReadAnswer::Unanswered(FOR_THE_CONNECTION.to_string()),
            Err(f) => ReadAnswer::Failed(format!("{f:?}")),
        };
        self.feed_call(k, multi::Event::Read { member, answer });
    }

    /// Contender `k`'s multi-lock call granted the set: checked, then held.
    fn set_granted(&mut self, k: usize) {
        let n = self.cs[k].multi.as_ref().map_or(0, |mu| mu.paths.len());
        let set: Vec<&Member> = (0..n).filter_map(|m| self.member_of(k, m)).collect();
        if let Err(v) = check::multi_grant(&self.zk, &self.cs[k].name, &set) {
            self.fail(v);
        }
        let left = self.hold_steps();
        let first = self.member_of(k, 0).map(|x| x.node.clone()).unwrap_or_default();
        let sp = short(&first);
        self.tr(|| format!("c{k}: GRANTED the set from {sp}"));
        self.count("multi-lock granted");
        let faults = self.faults;
        let c = &mut self.cs[k];
        if let Some(mu) = c.multi.as_mut() {
            mu.call = None;
        }
        c.state = State::Holding { path: first, left };
        if !faults {
            c.granted_clean = true;
        }
    }

    /// Contender `k`'s multi-lock call failed: the members it took are
    /// released (newest first), and it acquires again later.
    fn call_failed(&mut self, k: usize, member: usize, why: &multi::Why<String>) {
        self.count("multi-lock call failed");
        let w = format!("{why:?}");
        self.tr(|| format!("c{k}: the call failed at member {member}: {w}"));
        if let Err(v) = check::multi_failure(&self.cs[k].name, member, why) {
            self.fail(v);
        }
        if let Some(mu) = self.cs[k].multi.as_mut() {
            mu.call = None;
            mu.acquiring = None;
            mu.waiting = None;
        }
        self.release_set(k);
        self.acquire_again(k);
    }

    /// Contender `k` releases the members of its multi-lock's call now (or
    /// the set it holds), newest first, each on its client.
    fn release_set(&mut self, k: usize) {
        let n = self.cs[k].multi.as_ref().map_or(0, |mu| mu.paths.len());
        for m in (0..n).rev() {
            let j = self.client_of(k, m);
            let Some(h) = self.member_of(k, m).filter(|x| x.hold.is_some()).map(|x| x.n) else { continue };
            let closed = self.cs[j].closed;
            self.feed_hold_n(j, h, hold::Event::Release { closed });
        }
    }

    /// Contender `i`'s acquire ended without the lock: it acquires again
    /// after a drawn wait, as a caller would, unless its caller cancelled
    /// it (`cancel`): then it is done.
    fn acquire_again(&mut self, i: usize) {
        if self.cs[i].gave_up {
            self.cs[i].state = State::Done;
            return;
        }
        let wait = self.ch.between(0, 10);
        self.cs[i].state = State::Idle(wait);
    }

    /// Feeds contender `i` a reply (from the server or its session layer).
    fn reply(&mut self, i: usize, tag: Tag, result: Result<zklock_proto::acquire::Answer, Failure<String>>, conn: u64) {
        match tag {
            Tag::Ping(_) => {},
            Tag::Beat { sent, write, connect_sent, connect_answered, .. } => {
                // As zklock-core's heartbeat: a sync answered Ok, or a write
                // answered with anything but SessionExpired (the model
                // answers the probe BadVersion).
                let answered = match &result {
                    Ok(_) => !write,
                    Err(Failure::Other(m)) => write && m == "BadVersion",
                    Err(_) => false,
                };
                if !answered {
                    return;
                }
                let now = self.client_now(i);
                let beat = Heartbeat {
                    sent,
                    answered: now,
                    connection: conn,
                    write,
                    connect_sent: Some(connect_sent),
                    connect_answered: Some(connect_answered),
                };
                let Some(k) = self.cs[i].clock.as_mut() else { return };
                let moved = k.credit(beat);
                if moved {
                    if self.trace.is_some() {
                        let left = k.safe_until().saturating_duration_since(now);
                        self.tr(|| format!("c{i}: clock credited: safe for {} ms more", left.as_millis()));
                    }
                    if std::mem::take(&mut self.cs[i].awaiting_clock) {
                        self.feed(i, Event::ClockMoved);
                    }
                    self.hold_clock(i);
                    self.call_changed(i, None);
                }
            },
            Tag::Attempt { gen, id } => {
                let c = &mut self.cs[i];
                let watch = c.pending_watch.remove(&(gen, id));
                if gen != c.gen {
                    return;
                }
                if let (Some((path, kind)), Ok(_)) = (watch, &result) {
                    c.watchers.push((gen, id, path, kind));
                }
                self.feed(i, Event::Reply(id, Reply { result, connection: conn }));
            },
            Tag::Hold { n, id } => self.hold_reply(i, n, id, result, conn),
            // Only failures on the client come here (the server's answers
            // are `server_msg`'s).
            Tag::Multi { call, member } => self.member_read(i, call, member, result, None),
            // Only failures on the client come here (the server's answers
            // are `server_msg`'s).
            Tag::Count { gen } => self.count_reply(i, gen, result.map(|_| Vec::new()), None),
            Tag::Task(t) => {
                let c = &mut self.cs[i];
                if let Some(k) = c.tasks.iter().position(|x| *x == t) {
                    c.tasks.remove(k);
                }
                match (result, &t) {
                    (Err(Failure::Unknown), _) => {
                        let c = &mut self.cs[i];
                        let s = &self.zk.sessions[&c.session];
                        if s.connected && !c.inbox.iter().any(|l| matches!(l, Local::Reconnected)) {
                            self.task(i, t);
                        } else {
                            c.retry.push(t);
                        }
                    },
                    (Ok(zklock_proto::acquire::Answer::Data(stat)), Task::Watch(p)) => {
                        let c = &mut self.cs[i];
                        let ours = c.mutex_held.as_ref().is_some_and(|m| m.path == *p && m.watch.is_none());
                        if ours && stat.owner == c.session {
                            c.watchers.push((MONITOR.0, MONITOR.1, p.clone(), WatchKind::Data));
                            if let Some(m) = c.mutex_held.as_mut() {
                                m.watch = Some(MONITOR);
                            }
                        } else if ours {
                            self.mutex_lost(i, "its node is another session's");
                        } else if !c.watchers.iter().any(|w| w.2 == *p && w.3 == WatchKind::Data) {
                            let sid = c.session;
                            self.zk.unwatch(sid, p, WatchKind::Data);
                        }
                    },
                    (Err(Failure::NoNode), Task::Watch(p))
                        if self.cs[i].mutex_held.as_ref().is_some_and(|m| m.path == *p) =>
                    {
                        self.mutex_lost(i, "its node is gone");
                    },
                    // The probe answered (a BadVersion, anything but no
                    // answer): the list now.
                    (_, Task::Sweep(parent, prefix)) => self.task(i, Task::SweepList(parent.clone(), prefix.clone())),
                    (Ok(zklock_proto::acquire::Answer::Children { names, .. }), Task::SweepList(parent, prefix)) => {
                        for n in names.iter().filter(|n| n.starts_with(prefix.as_str())) {
                            let p = format!("{parent}/{n}");
                            self.task(i, Task::Clean(p));
                        }
                    },
                    _ => {},
                }
            },
        }
    }

    /// Delivers the next message to contender `i`: what it held back while
    /// it read the shared count again (once that read is answered), then
    /// its session layer's, then the server's.
    pub fn deliver(&mut self, i: usize) {
        if self.cs[i].count_read.is_none() {
            if let Some((h, at)) = self.cs[i].held.pop_front() {
                self.cs[i].as_of = Some(at);
                match h {
                    Held::Local(l) => self.local(i, l),
                    Held::Msg(m) => self.server_msg(i, m),
                }
                self.cs[i].as_of = None;
                return;
            }
        }
        if let Some(l) = self.cs[i].inbox.pop_front() {
            if matches!(l, Local::Reconnected) {
                self.count_connected(i);
            }
            if self.holds_back(
                i,
                matches!(&l, Local::Fail { tag: Tag::Attempt { .. }, .. } | Local::Reconnected | Local::SessionEnded),
            ) {
                self.tr(|| format!("c{i}: holds back {}", short(&format!("{l:?}"))));
                let at = self.cs[i].last_zxid;
                self.cs[i].held.push_back((Held::Local(l), at));
                self.count("held back while the shared count is read again");
                return;
            }
            self.local(i, l);
            return;
        }
        let sid = self.cs[i].session;
        if self.is_cut(i) {
            // Only what was on its way before the cut arrives.
            if self.cs[i].cut_readable == 0 {
                return;
            }
            self.cs[i].cut_readable -= 1;
        }
        let Some(m) = self.zk.deliver(sid) else { return };
        let acquire = matches!(&m, Msg::Reply { tag: Tag::Attempt { .. }, .. } | Msg::Notify { .. });
        if self.holds_back(i, acquire) {
            self.tr(|| format!("c{i}: holds back {}", short(&format!("{m:?}"))));
            let zxid = match &m {
                Msg::Reply { zxid, .. } | Msg::Notify { zxid, .. } => *zxid,
            };
            let c = &mut self.cs[i];
            c.last_zxid = c.last_zxid.max(zxid);
            c.held.push_back((Held::Msg(m), c.last_zxid));
            self.count("held back while the shared count is read again");
            return;
        }
        self.server_msg(i, m);
    }

    /// Whether contender `i` holds back a message its acquire would take
    /// (`acquire`): while it reads the shared count again, as zklock-core's
    /// acquire feeds nothing to the attempt until that read is answered.
    fn holds_back(&self, i: usize, acquire: bool) -> bool {
        let c = &self.cs[i];
        acquire && !self.count_bugs.no_hold_back && c.count_read.is_some_and(|g| g == c.gen)
    }

    /// Contender `i` takes `l` from its session layer.
    fn local(&mut self, i: usize, l: Local) {
        if self.trace.is_some() {
            let d = short(&format!("{l:?}"));
            self.tr(|| format!("c{i}: gets {d}"));
        }
        match l {
            Local::Fail { tag, failure, conn } => self.reply(i, tag, Err(failure), conn),
            Local::Reconnected => {
                self.count("reconnected");
                let retry = std::mem::take(&mut self.cs[i].retry);
                for t in retry {
                    self.task(i, t);
                }
                if std::mem::take(&mut self.cs[i].awaiting_reconnect) {
                    self.feed(i, Event::Reconnected);
                }
                self.feed_hold(i, hold::Event::Connection { connected: true });
            },
            Local::SessionEnded => {
                let closed = self.cs[i].closed;
                self.feed_hold(i, hold::Event::SessionEnded { closed });
                for n in self.hold_numbers(i) {
                    self.drop_hold(i, n);
                }
                self.mutex_lost(i, "session ended");
                let gen = self.cs[i].gen;
                let c = &mut self.cs[i];
                let ws: Vec<Id> = c.watchers.drain(..).filter(|w| w.0 == gen).map(|w| w.1).collect();
                c.pending_watch.clear();
                c.retry.clear();
                c.awaiting_reconnect = false;
                c.clock_wait = None;
                c.awaiting_clock = false;
                c.write_held = None;
                if matches!(c.state, State::Holding { .. }) {
                    c.state = State::Idle(0);
                    // A multi-lock's set: the members held on other clients
                    // are released (as its caller's release of the set).
                    self.release_set(i);
                }
                for id in ws {
                    self.feed(i, Event::Watch(id, Notice::SessionEnded));
                }
                self.feed(i, Event::SessionEnded);
            },
        }
    }

    /// Contender `i` takes `m` from the server.
    fn server_msg(&mut self, i: usize, m: Msg<Tag>) {
        if self.trace.is_some() && !matches!(&m, Msg::Reply { tag, .. } if tag.is_session_layer()) {
            let d = short(&format!("{m:?}"));
            self.tr(|| format!("c{i}: gets {d}"));
        }
        match m {
            Msg::Reply { tag: Tag::Count { gen }, result, zxid, data, .. } => {
                let now = self.timed.then(|| self.client_now(i));
                let c = &mut self.cs[i];
                c.last_read = now.or(c.last_read);
                c.count_zxid = c.count_zxid.max(zxid);
                self.count_reply(i, gen, result.map(|_| data), Some(zxid));
            },
            Msg::Reply { tag: Tag::Multi { call, member }, result, zxid, .. } => {
                let now = self.timed.then(|| self.client_now(i));
                let c = &mut self.cs[i];
                c.last_read = now.or(c.last_read);
                c.last_zxid = c.last_zxid.max(zxid);
                let node = matches!(result, Ok(zklock_proto::acquire::Answer::Data(_)));
                self.member_read(i, call, member, result, node.then_some(zxid));
            },
            Msg::Reply { tag, result, conn, zxid, .. } => {
                let now = self.timed.then(|| self.client_now(i));
                let c = &mut self.cs[i];
                c.last_read = now.or(c.last_read);
                c.last_zxid = c.last_zxid.max(zxid);
                // The list a lease's grant decides on is the last one fed.
                if let (Tag::Attempt { gen, .. }, Ok(zklock_proto::acquire::Answer::Children { .. })) = (&tag, &result)
                {
                    if *gen == c.gen && !c.in_mutex && c.attempt_mode == LockMode::Lease {
                        c.decided_zxid = Some(zxid);
                    }
                }
                self.reply(i, tag, result, conn);
            },
            Msg::Notify { path, notice, zxid } => {
                let now = self.timed.then(|| self.client_now(i));
                let c = &mut self.cs[i];
                if notice == Notice::Deleted {
                    c.told_not_ours.insert(path.clone());
                }
                c.last_read = now.or(c.last_read);
                c.last_zxid = c.last_zxid.max(zxid);
                let fires = |k: WatchKind| match notice {
                    Notice::Deleted => true,
                    Notice::Changed => k == WatchKind::Data,
                    Notice::Children => k == WatchKind::Child,
                    Notice::SessionEnded => true,
                };
                let (hit, keep): (Vec<_>, Vec<_>) = c.watchers.drain(..).partition(|w| w.2 == path && fires(w.3));
                c.watchers = keep;
                let gen = c.gen;
                let mutex_watch = c.mutex_held.as_ref().and_then(|m| m.watch);
                if hit.iter().any(|w| Some((w.0, w.1)) == mutex_watch) {
                    let why = format!("{notice:?} on its node");
                    self.mutex_lost(i, &why);
                }
                for (g, id, _, _) in hit {
                    if g == gen && id == COUNT {
                        self.count_changed(i);
                    } else if g == gen {
                        self.feed(i, Event::Watch(id, notice));
                    } else if let Some(n) = g.checked_sub(hold_key(0)) {
                        // (Only a hold that runs takes it.)
                        self.feed_hold_n(i, n, hold::Event::Watch(id, notice));
                    }
                }
            },
        }
    }

    /// The shared count's watch fired while contender `i`'s attempt runs,
    /// or (`count_unread`) its last read failed for the connection and its
    /// session layer is connected again: it is read again (with a new
    /// watch), and the attempt is fed nothing until the answer is given to
    /// it (`holds_back`).
    fn count_changed(&mut self, i: usize) {
        let Some(path) = self.count_path.clone() else { return };
        let c = &mut self.cs[i];
        c.count_unread = None;
        if c.attempt.as_ref().is_none_or(|a| a.is_done()) {
            return;
        }
        let gen = c.gen;
        c.count_read = Some(gen);
        self.count("shared count read again");
        self.tr(|| format!("c{i}: reads the shared count again"));
        self.send(i, Tag::Count { gen }, Op::GetData { path, watch: true });
    }

    /// Contender `i`'s session layer is connected again (`Local::Reconnected`
    /// taken from its inbox): a count whose read failed for the connection
    /// while the attempt runs is read again now, before the reconnect is
    /// given to the attempt (zklock-core's `next_event` takes its count
    /// input before the others: the reconnect is held back until the
    /// count's answer).
    fn count_connected(&mut self, i: usize) {
        let c = &self.cs[i];
        if c.count_unread.is_some_and(|g| g == c.gen) && c.count_read.is_none() {
            self.count("shared count read again once connected");
            self.count_changed(i);
        }
    }

    /// The answer to contender `i`'s read of the shared count for attempt
    /// `gen`: the data, or why not; `answered`, the zxid of the server's
    /// answer (`None`: the read failed on the client, for the connection).
    /// As zklock-core's acquire (`zklock-core/src/acquire.rs`: `attempt`,
    /// and `Input::CountChanged` in `Attempt::run`), a read that failed for
    /// the connection (no answer, the session gone: its
    /// `connection_trouble`) says nothing about the count (protocol 8c;
    /// outside attack round 19, G3, G5). Read before the attempt: a count
    /// starts it; a stop meanwhile, or a count missing or not a count,
    /// fails the acquire (the mutex let go, nothing left behind); a read
    /// that failed for the connection starts over (the mutex let go and
    /// taken again, the count read again: `attempt` returns `None`), as
    /// does a mutex lost meanwhile (the attempt would be told). Read again
    /// while it runs: a count is given to the attempt (`Event::Permits`, a
    /// new watch left); a count missing or not a count fails the acquire:
    /// `Permits(0)`, then `Stop` (protocol 8c: the old count could grant a
    /// lease the count no longer allows); a read that failed for the
    /// connection gives `Permits(0)` and the count is read again once the
    /// session layer is connected (`count_unread`; at once if it is), or,
    /// if the session ended, the attempt queues again on the next one
    /// (it is told `SessionEnded`) and the count is read anew before it.
    /// `CountBugs` switches wrong rules on.
    fn count_reply(&mut self, i: usize, gen: u64, result: Result<Vec<u8>, Failure<String>>, answered: Option<i64>) {
        if self.cs[i].count_read != Some(gen) {
            return;
        }
        self.cs[i].count_read = None;
        let path = self.count_path.clone().unwrap_or_default();
        let read = result.is_ok();
        // The connection's trouble, not the count's (zklock-core's
        // `connection_trouble`: ConnectionLoss, SessionExpired).
        let lost = matches!(result, Err(Failure::Unknown | Failure::SessionGone)) && !self.count_bugs.fail_on_lost_read;
        let permits = result.ok().and_then(|d| super::model::count_of(&d));
        let before = gen > self.cs[i].gen;
        self.tr(|| {
            format!(
                "c{i}: the shared count gives {permits:?}{}{}",
                if lost { " (the read failed for the connection)" } else { "" },
                if before { "" } else { " (read again)" }
            )
        });
        if before {
            let c = &self.cs[i];
            let mutex_gone = c.mutex_path.is_some() && c.mutex_held.is_none();
            let stopped = c.stopped;
            if stopped || (permits.is_none() && !lost) {
                if read {
                    // The watch the read left is not wanted.
                    let sid = self.cs[i].session;
                    if !self.cs[i].watchers.iter().any(|w| w.2 == path && w.3 == WatchKind::Data) {
                        self.zk.unwatch(sid, &path, WatchKind::Data);
                    }
                }
                if stopped {
                    self.count("acquire stopped while the shared count was read");
                } else {
                    self.count("acquire failed: no shared count");
                    if let Err(v) = check::count_failure(&self.zk, &self.cs[i], answered) {
                        self.fail(v);
                    }
                }
                self.unlock(i);
                self.acquire_again(i);
                return;
            }
            if lost || mutex_gone {
                // Starts over at once (the same acquire): the mutex taken
                // again (once there is a session), then the count read.
                if read {
                    let sid = self.cs[i].session;
                    if !self.cs[i].watchers.iter().any(|w| w.2 == path && w.3 == WatchKind::Data) {
                        self.zk.unwatch(sid, &path, WatchKind::Data);
                    }
                }
                self.count(if lost {
                    "shared count read failed for the connection: starts over"
                } else {
                    "mutex lost while the shared count was read"
                });
                self.unlock(i);
                self.cs[i].state = State::Idle(0);
                return;
            }
            self.cs[i].count_permits = permits;
            self.start(i, None);
            self.cs[i].watchers.push((gen, COUNT, path, WatchKind::Data));
            return;
        }
        if self.cs[i].attempt.as_ref().is_none_or(|a| a.is_done()) || gen != self.cs[i].gen {
            if read && !self.cs[i].watchers.iter().any(|w| w.2 == path && w.3 == WatchKind::Data) {
                let sid = self.cs[i].session;
                self.zk.unwatch(sid, &path, WatchKind::Data);
            }
            return;
        }
        match permits {
            Some(n) => {
                self.cs[i].watchers.push((gen, COUNT, path, WatchKind::Data));
                self.feed(i, Event::Permits(n));
            },
            None if lost => {
                // No verdict on the count: nothing is granted meanwhile.
                self.count("shared count read again failed for the connection: 0 permits");
                self.feed(i, Event::Permits(0));
                let c = &self.cs[i];
                let s = &self.zk.sessions[&c.session];
                let connected = s.alive
                    && s.connected
                    && c.link_up
                    && !c.inbox.iter().any(|l| matches!(l, Local::Reconnected | Local::SessionEnded));
                if connected {
                    self.count_changed(i);
                } else {
                    self.cs[i].count_unread = Some(gen);
                }
            },
            None if self.count_bugs.keep_on_failure => {
                if read && !self.cs[i].watchers.iter().any(|w| w.2 == path && w.3 == WatchKind::Data) {
                    let sid = self.cs[i].session;
                    self.zk.unwatch(sid, &path, WatchKind::Data);
                }
            },
            None => {
                if read && !self.cs[i].watchers.iter().any(|w| w.2 == path && w.3 == WatchKind::Data) {
                    let sid = self.cs[i].session;
                    self.zk.unwatch(sid, &path, WatchKind::Data);
                }
                self.count("acquire failed: the shared count could not be read again");
                if let Err(v) = check::count_failure(&self.zk, &self.cs[i], answered) {
                    self.fail(v);
                }
                self.cs[i].stopped = true;
                self.feed(i, Event::Permits(0));
                self.feed(i, Event::Stop { closed: false });
            },
        }
    }

    /// Time passes for contender `i` (one step): stalls, holds, graces and
    /// the clock count down.
    pub fn tick(&mut self, i: usize) {
        if self.cs[i].stalled > 0 {
            let c = &mut self.cs[i];
            c.stalled -= 1;
            if c.stalled == 0 && std::mem::take(&mut c.down_pending) {
                self.link_lost(i);
            }
            return;
        }
        self.session_layer(i);
        self.hold_clock(i);
        let alive = self.zk.sessions[&self.cs[i].session].alive;
        match self.cs[i].state.clone() {
            // The exhaustive search's holder waits for its release move.
            State::Holding { left: 1.., .. } if self.release_moves => {},
            // A semaphore's contender creates its lease and waits only while
            // it holds the semaphore's mutex (an exclusive lock on
            // `<path>/locks`): `start` takes the mutex first, then the
            // lease; the mutex is let go when the lease attempt grants or
            // ends.
            // A release that waits for its hold's read has not sent its
            // delete: the next acquire starts once it has (as a caller's
            // does after a release returns; the hold of one contender is
            // one at a time).
            State::Idle(0) if alive && self.cs[i].release_waits_for_read() => {},
            State::Idle(0) if alive => self.start(i, None),
            State::Idle(n) if n > 0 => self.cs[i].state = State::Idle(n - 1),
            // A writer that holds its write node may downgrade it to a read
            // node instead of releasing it.
            State::Holding { left: 0, .. } if self.can_downgrade(i) && self.ch.roll(40) => self.downgrade(i),
            State::Holding { path, left: 0 } => {
                let sp = short(&path);
                self.tr(|| format!("c{i}: release {sp}"));
                let done = self.cs[i].granted_clean;
                self.cs[i].state = if done { State::Done } else { State::Idle(self.ch.between(0, 10)) };
                if self.cs[i].multi.is_some() {
                    self.release_set(i);
                } else if self.cs[i].hold.is_some() {
                    let closed = self.cs[i].closed;
                    self.feed_hold(i, hold::Event::Release { closed });
                } else if alive {
                    self.task(i, Task::Release(path));
                }
            },
            State::Holding { path, left } => self.cs[i].state = State::Holding { path, left: left - 1 },
            _ => {},
        }
        match self.cs[i].linger {
            Some(0) => {
                // The grace runs out only while no reply of the attempt is
                // waiting to be read (a runner reads what came first).
                let gen = self.cs[i].gen;
                let waiting = self.zk.sessions[&self.cs[i].session]
                    .out
                    .iter()
                    .any(|m| matches!(m, Msg::Reply { tag: Tag::Attempt { gen: g, .. }, .. } if *g == gen))
                    || !self.cs[i].inbox.is_empty();
                if !waiting {
                    self.cs[i].linger = None;
                    self.tr(|| format!("c{i}: grace over"));
                    self.feed(i, Event::GraceOver);
                }
            },
            Some(n) => self.cs[i].linger = Some(n - 1),
            None => {},
        }
        match self.cs[i].clock_wait {
            Some(0) => {
                self.cs[i].clock_wait = None;
                self.feed(i, Event::ClockMoved);
            },
            Some(n) => self.cs[i].clock_wait = Some(n - 1),
            None => {},
        }
        match self.cs[i].hold_retry {
            Some(0) => {
                self.cs[i].hold_retry = None;
                self.feed_hold(i, hold::Event::Retry);
            },
            Some(n) => self.cs[i].hold_retry = Some(n - 1),
            None => {},
        }
    }

    /// Whether contender `i` holds a write node it may downgrade to a read
    /// node (a writer of a read/write lock, its session alive).
    pub fn can_downgrade(&self, i: usize) -> bool {
        let c = &self.cs[i];
        matches!(&c.state, State::Holding { path, .. } if path.contains("__WRIT__"))
            && c.mode == LockMode::Write
            && self.zk.sessions[&c.session].alive
    }

    /// Contender `i` downgrades the write node it holds (`can_downgrade`)
    /// to a read node, as zklock-core's write guard does (protocol section
    /// 7): it keeps the write node (`Contender::write_held`) while an
    /// attempt of a reader whose node takes the write node's sequence runs
    /// (`acquire::Downgrade`: created in one transaction with a check of
    /// the write node); the write node is released once that attempt is
    /// granted (`pump`), or when it ends without the lock (`ended`).
    pub fn downgrade(&mut self, i: usize) {
        let State::Holding { path, .. } = self.cs[i].state.clone() else { return };
        let sequence = names::parse_child(super::model::name_of(&path)).map_or(0, |n| n.sequence);
        let sp = short(&path);
        self.tr(|| format!("c{i}: downgrades {sp}"));
        self.count("downgrade");
        self.cs[i].write_held = Some(path.clone());
        self.start(i, Some(Downgrade { sequence, write_node: path }));
    }

    /// Contender `i` was granted `path`: its holder's machine starts, with
    /// the grant's watch on our node (`(attempt, request)`), if any.
    fn start_hold(&mut self, i: usize, path: String, watch: Option<(u64, Id)>) {
        // A downgrade's grant: the write node's hold ends here (the node is
        // released by the runner): its watches go.
        let old = hold_key(self.cs[i].holds);
        let ids: Vec<Id> = self.cs[i].watchers.iter().filter(|w| w.0 == old).map(|w| w.1).collect();
        for id in ids {
            self.unwatch(i, old, id);
        }
        self.cs[i].hold_retry = None;
        let (n, hold) = self.new_hold(i, path, watch);
        self.cs[i].hold = Some(hold);
        self.pump_hold(i, n);
    }

    /// A new holder's machine of contender `i` for its node `path`, and its
    /// number: the grant's watch on the node (`(attempt, request)`), if
    /// any, becomes the hold's; it starts with the session's connection and
    /// safety clock as they are now.
    fn new_hold(&mut self, i: usize, path: String, watch: Option<(u64, Id)>) -> (u64, Hold) {
        let safe = self.clock_safe(i);
        let connected = if self.timed { self.cs[i].link_up } else { self.zk.sessions[&self.cs[i].session].connected };
        let c = &mut self.cs[i];
        c.holds += 1;
        let key = hold_key(c.holds);
        if let Some((g, w)) = watch {
            if let Some(entry) = c.watchers.iter_mut().find(|e| e.0 == g && e.1 == w) {
                entry.0 = key;
                entry.1 = hold::GRANT_WATCH;
            }
        }
        c.hold_safe = safe;
        let hold = Hold::new(hold::Config {
            path,
            session: c.session,
            watch: watch.is_some(),
            changed: false,
            connected,
            safe,
            bugs: self.bugs,
        });
        (c.holds, hold)
    }

    /// The exhaustive search's release move: contender `i`, holding,
    /// releases now (in the tick that follows).
    pub fn release(&mut self, i: usize) {
        if let State::Holding { left, .. } = &mut self.cs[i].state {
            *left = 0;
        }
    }

    /// The exhaustive search's move "the safety clock runs out" (untimed
    /// runs; also when a paused contender wakes, its clock having run out
    /// meanwhile): contender `i`'s holder's machine is told, and its
    /// attempt's clock questions are answered "not safe" until
    /// `clock_credited`.
    pub fn clock_runs_out(&mut self, i: usize) {
        self.cs[i].clock_out = true;
        self.tr(|| format!("c{i}: its safety clock is out"));
        if std::mem::replace(&mut self.cs[i].hold_safe, false) {
            self.feed_hold(i, hold::Event::Clock { safe: false });
        }
    }

    /// The exhaustive search's move "the safety clock is credited" (untimed
    /// runs): safe again; as a credit in timed runs, an attempt waiting
    /// for the clock is told it moved, then the holder's machine is told.
    pub fn clock_credited(&mut self, i: usize) {
        self.cs[i].clock_out = false;
        self.tr(|| format!("c{i}: the safety clock is credited: safe again"));
        if std::mem::take(&mut self.cs[i].awaiting_clock) {
            self.feed(i, Event::ClockMoved);
        }
        if !std::mem::replace(&mut self.cs[i].hold_safe, true) {
            self.feed_hold(i, hold::Event::Clock { safe: true });
        }
    }

    /// Contender `i`'s holder's machine number `n`: its lock's (the
    /// current one is number `holds`), or a multi-lock member's.
    fn hold_mut(&mut self, i: usize, n: u64) -> Option<&mut Hold> {
        let c = &mut self.cs[i];
        match &mut c.multi {
            Some(mu) => mu.members.iter_mut().find(|m| m.n == n).and_then(|m| m.hold.as_mut()),
            None if n == c.holds => c.hold.as_mut(),
            None => None,
        }
    }

    /// The numbers of contender `i`'s holders' machines.
    fn hold_numbers(&self, i: usize) -> Vec<u64> {
        let c = &self.cs[i];
        match &c.multi {
            Some(mu) => mu.members.iter().filter(|m| m.hold.is_some()).map(|m| m.n).collect(),
            None => c.hold.iter().map(|_| c.holds).collect(),
        }
    }

    /// Feeds `ev` (a change of the session, its connection or its clock)
    /// to each of contender `i`'s holders' machines and does what they
    /// ask.
    fn feed_hold(&mut self, i: usize, ev: hold::Event<String>) {
        for n in self.hold_numbers(i) {
            self.feed_hold_n(i, n, ev.clone());
        }
    }

    /// Feeds `ev` to contender `i`'s holder's machine number `n`, if it
    /// runs, and does what it asks; a multi-lock call waiting for that
    /// member is told of the change.
    fn feed_hold_n(&mut self, i: usize, n: u64, ev: hold::Event<String>) {
        let Some(h) = self.hold_mut(i, n) else { return };
        h.handle(ev);
        self.pump_hold(i, n);
        self.call_changed(i, Some(n));
    }

    /// Contender `i`'s holder's machine number `n` is over (released, or
    /// its session ended).
    fn drop_hold(&mut self, i: usize, n: u64) {
        let c = &mut self.cs[i];
        match &mut c.multi {
            Some(mu) => {
                if let Some(m) = mu.members.iter_mut().find(|m| m.n == n) {
                    m.hold = None;
                }
            },
            None => c.hold = None,
        }
    }

    /// Does the actions contender `i`'s holder's machine number `n` asks
    /// for.
    fn pump_hold(&mut self, i: usize, n: u64) {
        let key = hold_key(n);
        loop {
            let Some(action) = self.hold_mut(i, n).and_then(|h| h.poll_action()) else { return };
            let path = self.hold_mut(i, n).map(|h| h.path().to_owned()).unwrap_or_default();
            if self.trace.is_some() {
                let a = short(&format!("{action:?}"));
                self.tr(|| format!("c{i}: hold {a}"));
            }
            match action {
                hold::Action::Send(id, Request::GetData { path, .. }) => {
                    self.cs[i].pending_watch.insert((key, id), (path.clone(), WatchKind::Data));
                    self.send(i, Tag::Hold { n, id }, Op::GetData { path, watch: true });
                },
                hold::Action::Send(id, req) => panic!("the hold sent {req:?} ({id:?})"),
                hold::Action::DropWatch(id) => self.unwatch(i, key, id),
                hold::Action::State(hold::State::Lost(loss)) => {
                    self.count("hold lost");
                    if let Err(v) = check::lost(&self.zk, &self.cs[i], &path, loss) {
                        self.fail(v);
                    }
                },
                hold::Action::State(_) => {},
                hold::Action::RetryLater => self.cs[i].hold_retry = Some(self.ch.between(0, 5)),
                // Its reply (or a change of the session) comes as for any
                // read of the hold; the node is the release's from now on.
                hold::Action::AwaitRead(_) => {
                    self.count("release: waits for the hold's read");
                    self.cs[i].tasks.push(Task::Release(path.clone()));
                },
                hold::Action::Delete { known_ours } => {
                    self.count(if known_ours { "release: delete at once" } else { "release: look first" });
                    // Known to the orphan check until answered (once: a
                    // release that waited for its read has it already).
                    if !self.cs[i].tasks.contains(&Task::Release(path.clone())) {
                        self.cs[i].tasks.push(Task::Release(path.clone()));
                    }
                    let op = if known_ours { Op::Delete { path } } else { Op::DeleteOwned { path } };
                    self.send(i, Tag::Hold { n, id: HOLD_DELETE }, op);
                },
                hold::Action::Released(outcome) => {
                    self.count(match outcome {
                        hold::Outcome::Released => "released",
                        hold::Outcome::Pending => "released: pending",
                        hold::Outcome::Closed => "released: closed",
                        hold::Outcome::Lost(_) | hold::Outcome::LostBefore => "released: was lost",
                        hold::Outcome::Refused => "released: refused",
                    });
                    if let Err(v) = check::released(&self.zk, &self.cs[i], &path, outcome) {
                        self.fail(v);
                    }
                    self.drop_hold(i, n);
                },
            }
        }
    }

    /// A reply to contender `i`'s hold number `n`.
    fn hold_reply(
        &mut self,
        i: usize,
        n: u64,
        id: Id,
        result: Result<zklock_proto::acquire::Answer, Failure<String>>,
        conn: u64,
    ) {
        let watch = self.cs[i].pending_watch.remove(&(hold_key(n), id));
        // (A lock's delete answered after its hold is over: the path of
        // the hold now, if any, as before multi-locks came.)
        let path = match self.cs[i].multi.is_some() {
            true => self.hold_mut(i, n).map(|h| h.path().to_owned()),
            false => self.cs[i].hold.as_ref().map(|h| h.path().to_owned()),
        };
        let c = &mut self.cs[i];
        if id == HOLD_DELETE {
            let path = path.unwrap_or_default();
            if let Some(k) = c.tasks.iter().position(|t| *t == Task::Release(path.clone())) {
                c.tasks.remove(k);
            }
            let deletion = match &result {
                Ok(_) => hold::Deletion::Deleted,
                Err(Failure::Unknown) => {
                    // Retried in the background until done or the session ends.
                    c.retry.push(Task::Release(path));
                    hold::Deletion::Pending
                },
                Err(_) => hold::Deletion::Gone,
            };
            let closed = self.cs[i].closed;
            self.feed_hold_n(i, n, hold::Event::Deleted { deletion, closed });
            return;
        }
        if self.hold_mut(i, n).is_none() {
            return;
        }
        let c = &mut self.cs[i];
        if let (Some(p), Ok(zklock_proto::acquire::Answer::Data(stat))) = (path, &result) {
            if stat.owner != c.session {
                c.told_not_ours.insert(p);
            }
        }
        if let (Some((path, kind)), Ok(_)) = (watch, &result) {
            c.watchers.push((hold_key(n), id, path, kind));
        }
        self.feed_hold_n(i, n, hold::Event::Reply(id, Reply { result, connection: conn }));
    }

    /// Contender `i` gets a new session after its old one expired (and
    /// everything of the old one was delivered).
    pub fn new_session(&mut self, i: usize) {
        if let Some(a) = &self.cs[i].attempt {
            if !a.is_done() {
                let n = self.cs[i].name.clone();
                self.fail(Violation {
                    kind: "unanswered",
                    what: format!("{n}'s attempt did not end when its session did"),
                });
            }
        }
        self.next_session += 1;
        let sid = self.next_session;
        self.cs[i].only = None;
        let servers = self.zk.servers_for(None);
        let server = servers[self.ch.choose(servers.len())];
        self.zk.open(sid, server);
        self.cs[i].session = sid;
        self.connected(i, true);
        let c = &mut self.cs[i];
        c.awaiting_clock = false;
        c.watchers.clear();
        c.pending_watch.clear();
        c.retry.clear();
        c.tasks.clear();
        c.seq_guess = None;
        c.write_held = None;
        c.mutex_held = None;
        c.hold = None;
        if let Some(mu) = &mut c.multi {
            mu.members.iter_mut().for_each(|m| m.hold = None);
        }
        c.hold_retry = None;
        if matches!(c.state, State::Holding { .. } | State::Acquiring) {
            c.state = State::Idle(0);
        }
        self.tr(|| format!("c{i}: new session {sid:#x}"));
        self.count("new session");
    }

    /// The client watches of contender `i` (SetWatches on reconnect).
    pub fn client_watches(&self, i: usize) -> BTreeSet<(String, WatchKind)> {
        self.cs[i].watchers.iter().map(|w| (w.2.clone(), w.3)).collect()
    }
}

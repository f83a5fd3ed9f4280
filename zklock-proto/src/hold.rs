//! Holding a lock (protocol section 5) and releasing it (section 6) as a
//! state machine: from the grant to the lock's end, lost or released.
//!
//! A [`Hold`] follows one granted node. It is fed [`Event`]s in the order
//! the session delivered them (replies and notifications of its own reads,
//! changes of the session's connection, the safety clock's verdict, the end
//! of the session, the caller's release) and answers with [`Action`]s: reads
//! of our node to send, watches to drop, state changes to report, the
//! deletion of our node and the release's outcome. It reads no clock and
//! sends nothing itself; its runner (`zklock-core`'s `holding.rs`, or the
//! simulator) does what the actions say.
//!
//! The rules it keeps:
//! - Held becomes Suspended on any change of the session's connection (it
//!   may have dropped and come back in between: the watch on our node was
//!   set again by the session layer, but a notification may have been
//!   missed in the gap) and when the safety clock runs out.
//! - Suspended becomes Held again only on a read of our node, sent after
//!   the last change of the connection, that shows our session as its
//!   owner, while connected and the clock safe; it becomes Lost when such
//!   a read shows the node gone or not ours.
//! - Lost when our node is deleted (a notification, or a read that finds
//!   no node), is another session's, or the session ends.
//! - A release deletes at once only when the lock is Held and a watch on
//!   our node, armed by a read that showed it ours, has said nothing since;
//!   otherwise the runner deletes only if our session owns the node (it
//!   reads the node first). A lock already lost is not deleted (a node of
//!   that name is someone else's now).
//! - A release while Held with the hold's own read of our node on its way
//!   (sent since the last change of the connection: the grant left no
//!   watch, or a data change is being read again) waits for that read's
//!   answer ([`Action::AwaitRead`]) rather than reading the node again:
//!   when it shows our node ours, its watch is armed and the delete goes
//!   at once; any other answer, or a change of the connection or the end
//!   of the session meanwhile, and the runner deletes only if our session
//!   owns the node, as before. (Under load the read was often still on its
//!   way at a short hold's release: the release sent an `exists` before
//!   its delete, and dropping the read's watch sent a `removeWatches`, two
//!   requests per cycle more: issue 33.)

use crate::acquire::{Answer, Bugs, Failure, Id, Notice, Reply, Request};

/// The watch the grant's proof left on our node (armed by a read that
/// showed it ours), as a [`Hold`] names it: the runner feeds its
/// notification as `Event::Watch(GRANT_WATCH, ..)`. The hold's own
/// requests are numbered from 1.
pub const GRANT_WATCH: Id = Id(0);

/// The state of a held lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Ours, as far as the holder knows (the safety clock decides whether
    /// it is safely ours now).
    Held,
    /// The connection changed or the safety clock ran out: it may be
    /// someone else's; Held again after a read shows our node ours.
    Suspended,
    /// Not ours any more (why: [`Loss`]).
    Lost(Loss),
    /// Released by the caller.
    Released,
}

impl State {
    /// Held or Suspended.
    pub fn is_live(self) -> bool {
        matches!(self, State::Held | State::Suspended)
    }
}

/// Why a lock was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// Our node was deleted (a notification said so, or a read found none).
    Deleted,
    /// Our node is another session's.
    NotOurs,
    /// A read after the connection changed found our node gone or not
    /// ours.
    GoneAfterReconnect,
    /// The session ended (expired): our node went with it.
    SessionEnded,
    /// The client was closed: the session, and our node, went with it.
    Closed,
}

/// What became of our node when the runner set out to delete it (after
/// [`Action::Delete`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deletion {
    /// Our delete removed it.
    Deleted,
    /// Nothing of ours was there: the node is gone, another session's, or
    /// went with our session.
    Gone,
    /// Not done yet: the runner goes on in the background.
    Pending,
    /// ZooKeeper refused (NoAuth): the node stays until the session ends.
    Refused,
}

/// What a release tells its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Our node is deleted.
    Released,
    /// The deletion goes on in the background (the lock is released as far
    /// as the caller is concerned).
    Pending,
    /// ZooKeeper refused to delete our node: others wait until the session
    /// ends.
    Refused,
    /// The client was closed before or while the release was on its way:
    /// the node went with the session. Not a loss the critical section
    /// could have run into.
    Closed,
    /// The lock was lost before the release (the critical section may have
    /// run without it).
    Lost(Loss),
    /// When the release came to delete our node, it was gone or another
    /// session's: lost before the release, noticed only now.
    LostBefore,
}

/// How the hold starts: what the grant left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Our node's full path.
    pub path: String,
    /// Our session's id (the owner our node must have).
    pub session: i64,
    /// The grant left a watch on our node armed by a read that showed it
    /// ours ([`GRANT_WATCH`]); without one the hold starts by reading our
    /// node with a watch.
    pub watch: bool,
    /// The session's connection changed since just before the grant's
    /// proof was sent: a disconnect after the proof is reported even when
    /// it is over before the hold starts.
    pub changed: bool,
    /// Connected when the hold starts.
    pub connected: bool,
    /// The safety clock is safe when the hold starts.
    pub safe: bool,
    /// Test-only bugs (see [`Bugs`]; the holder's: `close_is_loss`).
    #[doc(hidden)]
    pub bugs: Bugs,
}

/// What the runner feeds a [`Hold`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event<E> {
    /// The reply to one of the hold's requests.
    Reply(Id, Reply<E>),
    /// A watch on our node fired: [`GRANT_WATCH`] or one a read of the
    /// hold left.
    Watch(Id, Notice),
    /// The session's connection changed (it may be another connection now
    /// even if connected before and after).
    Connection {
        /// Connected now.
        connected: bool,
    },
    /// The safety clock's verdict changed: fed when it runs out, and when it
    /// moves so that it is safe again.
    Clock {
        /// Safe now.
        safe: bool,
    },
    /// The session ended; `closed`: because the client was closed.
    SessionEnded {
        /// Closed by the client.
        closed: bool,
    },
    /// After [`Action::RetryLater`]: time to try again.
    Retry,
    /// The caller releases the lock (its last guard of the node).
    Release {
        /// The client is closed (or closing).
        closed: bool,
    },
    /// After [`Action::Delete`]: what became of our node.
    Deleted {
        /// The deletion's result.
        deletion: Deletion,
        /// The client was closed meanwhile.
        closed: bool,
    },
}

/// What a [`Hold`] asks of its runner, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send this request now (a read of our node with a data watch).
    Send(Id, Request),
    /// The watch left by this request (or [`GRANT_WATCH`]) is not needed:
    /// drop it (before the delete that follows, so a release does not
    /// notify ourselves).
    DropWatch(Id),
    /// The lock's state changed: tell the caller.
    State(State),
    /// A read failed without an answer: feed [`Event::Retry`] a little
    /// later (core waits 250 ms).
    RetryLater,
    /// The release waits for the answer to the hold's read `Id` (sent
    /// before it, not answered yet): keep feeding its reply (and the
    /// changes of the session); a [`Action::Delete`] or
    /// [`Action::Released`] follows.
    AwaitRead(Id),
    /// Delete our node: at once when `known_ours`, else only if our
    /// session owns it (read it first, delete at the version read), in
    /// the background if it cannot be done now; feed [`Event::Deleted`].
    Delete {
        /// Held with an armed watch on our node that said nothing.
        known_ours: bool,
    },
    /// The release is over: tell the caller.
    Released(Outcome),
}

/// The holder of one granted node; see the module documentation.
#[derive(Debug)]
pub struct Hold {
    cfg: Config,
    state: State,
    connected: bool,
    safe: bool,
    /// Moves on every change of the connection: a read proves our node
    /// ours after a change only if sent after it.
    epoch: u64,
    /// The watch on our node, if armed by a read that showed it ours (or
    /// the grant's) and silent since.
    watch: Option<Id>,
    /// A read of our node on its way: its id and the epoch it was sent in.
    reading: Option<(Id, u64)>,
    /// Waiting for [`Event::Retry`].
    retrying: bool,
    /// The release is deleting our node.
    deleting: bool,
    /// The release waits for the answer to this read of our node.
    release_waits: Option<Id>,
    /// The release is over.
    done: bool,
    next: u64,
    actions: std::collections::VecDeque<Action>,
}

impl Hold {
    /// The hold of the node the grant gave; its first actions (a read of
    /// our node when the grant left no watch, Suspended when the
    /// connection changed since the proof) are ready at once.
    pub fn new(cfg: Config) -> Hold {
        let mut h = Hold {
            state: State::Held,
            connected: cfg.connected,
            safe: cfg.safe,
            epoch: 0,
            watch: cfg.watch.then_some(GRANT_WATCH),
            reading: None,
            retrying: false,
            deleting: false,
            release_waits: None,
            done: false,
            next: 1,
            actions: std::collections::VecDeque::new(),
            cfg,
        };
        if !h.cfg.watch {
            h.read();
        }
        if h.cfg.changed {
            h.epoch += 1;
        }
        if h.cfg.changed || !h.connected || !h.safe {
            h.set(State::Suspended);
        }
        h.settle();
        h
    }

    /// The next action, if any.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The state now.
    pub fn state(&self) -> State {
        self.state
    }

    /// Whether a release would delete at once (see [`Action::Delete`]).
    pub fn known_ours(&self) -> bool {
        self.state == State::Held && self.watch.is_some()
    }

    /// Whether a release waits for the answer to the hold's read
    /// ([`Action::AwaitRead`]): the delete is not sent yet.
    pub fn waits_for_read(&self) -> bool {
        self.release_waits.is_some()
    }

    /// Whether the release is over (nothing more will be asked).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Our node's path.
    pub fn path(&self) -> &str {
        &self.cfg.path
    }

    /// Feeds one event.
    pub fn handle<E>(&mut self, event: Event<E>) {
        match event {
            Event::Reply(id, reply) => self.on_reply(id, reply),
            Event::Watch(id, notice) => self.on_watch(id, notice),
            Event::Connection { connected } => {
                self.stop_waiting_for_read();
                self.connected = connected;
                self.epoch += 1;
                // Another connection: a read may be answered now.
                self.retrying = false;
                if self.state == State::Held {
                    self.set(State::Suspended);
                }
            },
            Event::Clock { safe } => {
                self.safe = safe;
                if !safe && self.state == State::Held {
                    self.set(State::Suspended);
                }
            },
            Event::SessionEnded { closed } => {
                self.stop_waiting_for_read();
                self.watch = None;
                self.lose(if closed { Loss::Closed } else { Loss::SessionEnded });
            },
            Event::Retry => self.retrying = false,
            Event::Release { closed } => self.release(closed),
            Event::Deleted { deletion, closed } => self.deleted(deletion, closed),
        }
        self.settle();
    }

    fn on_reply<E>(&mut self, id: Id, reply: Reply<E>) {
        let Some((reading, epoch)) = self.reading else { return };
        if reading != id {
            return;
        }
        self.reading = None;
        if self.release_waits.take() == Some(id) {
            // The read the release waited for: it proves our node ours
            // (the watch it left armed, a reply coming before the
            // notifications of later changes), or the release looks first.
            let ours = matches!(&reply.result, Ok(Answer::Data(stat)) if stat.owner == self.cfg.session)
                || self.cfg.bugs.is_on(|b| b.release_trusts_any_read);
            self.actions.push_back(Action::DropWatch(id));
            self.actions.push_back(Action::Delete { known_ours: ours });
            return;
        }
        if !self.state.is_live() {
            return;
        }
        let after_reconnect = self.state == State::Suspended;
        let lost = if after_reconnect { Loss::GoneAfterReconnect } else { Loss::Deleted };
        match reply.result {
            Ok(Answer::Data(stat)) if stat.owner == self.cfg.session => {
                self.arm(id);
                // A proof after the last change of the connection, while the
                // clock is safe: held again.
                if self.state == State::Suspended && epoch == self.epoch && self.connected && self.safe {
                    self.set(State::Held);
                }
            },
            Ok(_) => {
                // The read left a watch on a node not ours: dropped with the
                // loss.
                self.arm(id);
                self.lose(if after_reconnect { lost } else { Loss::NotOurs });
            },
            Err(Failure::NoNode) => self.lose(lost),
            Err(Failure::SessionGone) => self.lose(Loss::SessionEnded),
            // No answer (or one the protocol does not expect): the node may
            // still be ours; suspended until a read says so.
            Err(_) => {
                if self.state == State::Held {
                    self.set(State::Suspended);
                }
                self.retrying = true;
                self.actions.push_back(Action::RetryLater);
            },
        }
    }

    fn on_watch(&mut self, id: Id, notice: Notice) {
        if self.watch != Some(id) || !self.state.is_live() {
            return;
        }
        self.watch = None;
        match notice {
            Notice::Deleted => self.lose(Loss::Deleted),
            // The session's end comes as its own event.
            Notice::SessionEnded => {},
            // Someone wrote to our node (or its children changed): read it
            // again, with a watch.
            Notice::Changed | Notice::Children => {
                if self.reading.is_none() {
                    self.read();
                }
            },
        }
    }

    /// Sends what the state asks for: a read of our node while Suspended,
    /// connected and the clock safe.
    fn settle(&mut self) {
        if self.state == State::Suspended
            && self.connected
            && self.safe
            && !self.retrying
            && self.reading.is_none_or(|(_, epoch)| epoch != self.epoch)
        {
            // A read sent before the last change proves nothing now; its
            // reply is not waited for.
            self.read();
        }
    }

    fn read(&mut self) {
        let id = Id(self.next);
        self.next += 1;
        if let Some((old, _)) = self.reading.replace((id, self.epoch)) {
            self.actions.push_back(Action::DropWatch(old));
        }
        self.actions.push_back(Action::Send(id, Request::GetData { path: self.cfg.path.clone(), watch: true }));
    }

    /// The watch the read `id` left is the one we follow now (an older one,
    /// kept across a reconnect by the session layer, is dropped).
    fn arm(&mut self, id: Id) {
        if let Some(old) = self.watch.replace(id) {
            if old != id {
                self.actions.push_back(Action::DropWatch(old));
            }
        }
    }

    fn set(&mut self, state: State) {
        if self.state != state && self.state.is_live() {
            self.state = state;
            self.actions.push_back(Action::State(state));
        }
    }

    fn lose(&mut self, why: Loss) {
        if self.state.is_live() {
            self.set(State::Lost(why));
            self.drop_watches();
        }
    }

    fn drop_watches(&mut self) {
        if let Some(w) = self.watch.take() {
            self.actions.push_back(Action::DropWatch(w));
        }
        if let Some((r, _)) = self.reading.take() {
            self.actions.push_back(Action::DropWatch(r));
        }
    }

    fn release(&mut self, closed: bool) {
        if self.state == State::Released || self.done {
            return;
        }
        if let State::Lost(why) = self.state {
            self.finish(Outcome::Lost(why));
            return;
        }
        if closed {
            // The close takes the session, and our node with it.
            self.set(State::Released);
            self.drop_watches();
            self.finish(Outcome::Closed);
            return;
        }
        let known_ours = self.known_ours();
        // The hold's read of our node on its way, sent since the last
        // change of the connection, with the lock Held (connected, the
        // clock safe) and no armed watch to delete on: its answer is
        // waited for instead of a read of our own.
        let wait_for = self
            .reading
            .filter(|&(_, epoch)| epoch == self.epoch)
            .filter(|_| self.state == State::Held && !known_ours && self.connected && !self.retrying)
            .map(|(id, _)| id);
        self.set(State::Released);
        self.deleting = true;
        if let Some(id) = wait_for {
            self.release_waits = Some(id);
            self.actions.push_back(Action::AwaitRead(id));
            return;
        }
        self.drop_watches();
        self.actions.push_back(Action::Delete { known_ours });
    }

    /// A release waiting for a read stops waiting (the connection changed,
    /// or the session ended): the runner looks at our node first.
    fn stop_waiting_for_read(&mut self) {
        if let Some(id) = self.release_waits.take() {
            self.reading = None;
            self.actions.push_back(Action::DropWatch(id));
            self.actions.push_back(Action::Delete { known_ours: false });
        }
    }

    fn deleted(&mut self, deletion: Deletion, closed: bool) {
        if !self.deleting {
            return;
        }
        self.deleting = false;
        let outcome = match deletion {
            Deletion::Deleted => Outcome::Released,
            Deletion::Pending => Outcome::Pending,
            Deletion::Refused => Outcome::Refused,
            Deletion::Gone if closed && !self.cfg.bugs.is_on(|b| b.close_is_loss) => Outcome::Closed,
            Deletion::Gone => Outcome::LostBefore,
        };
        self.finish(outcome);
    }

    fn finish(&mut self, outcome: Outcome) {
        self.done = true;
        self.actions.push_back(Action::Released(outcome));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acquire::Stat;

    const SESSION: i64 = 0x51;

    fn config(watch: bool) -> Config {
        Config {
            path: "/l/_c_u-lock-0000000001".into(),
            session: SESSION,
            watch,
            changed: false,
            connected: true,
            safe: true,
            bugs: Bugs::default(),
        }
    }

    fn actions(h: &mut Hold) -> Vec<Action> {
        std::iter::from_fn(|| h.poll_action()).collect()
    }

    fn data(owner: i64) -> Event<String> {
        Event::Reply(
            Id(1),
            Reply { result: Ok(Answer::Data(Stat { czxid: 7, pzxid: 7, owner, version: 0 })), connection: 1 },
        )
    }

    fn read(id: u64) -> Action {
        Action::Send(Id(id), Request::GetData { path: "/l/_c_u-lock-0000000001".into(), watch: true })
    }

    #[test]
    fn a_grant_with_a_watch_deletes_at_once_on_release() {
        let mut h = Hold::new(config(true));
        assert_eq!(actions(&mut h), vec![]);
        h.handle::<String>(Event::Release { closed: false });
        assert_eq!(
            actions(&mut h),
            vec![Action::State(State::Released), Action::DropWatch(GRANT_WATCH), Action::Delete { known_ours: true }]
        );
        h.handle::<String>(Event::Deleted { deletion: Deletion::Deleted, closed: false });
        assert_eq!(actions(&mut h), vec![Action::Released(Outcome::Released)]);
        assert!(h.is_done());
    }

    #[test]
    fn without_a_watch_the_hold_reads_first_and_a_release_before_the_answer_waits_for_it() {
        let mut h = Hold::new(config(false));
        assert_eq!(actions(&mut h), vec![read(1)]);
        assert!(!h.known_ours());
        h.handle::<String>(Event::Release { closed: false });
        assert_eq!(actions(&mut h), vec![Action::State(State::Released), Action::AwaitRead(Id(1))]);
        // Ours: the watch it left is armed, the delete goes at once.
        h.handle(data(SESSION));
        assert_eq!(actions(&mut h), vec![Action::DropWatch(Id(1)), Action::Delete { known_ours: true }]);
        h.handle::<String>(Event::Deleted { deletion: Deletion::Deleted, closed: false });
        assert_eq!(actions(&mut h), vec![Action::Released(Outcome::Released)]);
        assert!(h.is_done());
    }

    /// The check the wait stands for is still made: an answer that does not
    /// show our node ours (another session's, gone, no answer), a change
    /// of the connection or the session's end while waiting, and the
    /// release looks at the node before it deletes.
    #[test]
    fn a_release_that_waited_deletes_at_once_only_on_a_read_that_shows_our_node() {
        let not_ours: Vec<Event<String>> = vec![
            data(0x99),
            Event::Reply(Id(1), Reply { result: Err(Failure::NoNode), connection: 1 }),
            Event::Reply(Id(1), Reply { result: Err(Failure::Unknown), connection: 1 }),
            Event::Connection { connected: true },
            Event::Connection { connected: false },
            Event::SessionEnded { closed: false },
        ];
        for event in not_ours {
            let mut h = Hold::new(config(false));
            actions(&mut h);
            h.handle::<String>(Event::Release { closed: false });
            assert_eq!(actions(&mut h), vec![Action::State(State::Released), Action::AwaitRead(Id(1))]);
            let what = format!("{event:?}");
            h.handle(event);
            assert_eq!(actions(&mut h), vec![Action::DropWatch(Id(1)), Action::Delete { known_ours: false }], "{what}");
            // A late answer of the read changes nothing.
            h.handle(data(SESSION));
            assert_eq!(actions(&mut h), vec![], "{what}");
        }
    }

    /// Suspended (the connection changed, or the clock ran out) or with a
    /// read sent before the last change: the release looks first, as
    /// before; the read's watch is dropped.
    #[test]
    fn a_release_waits_only_while_held_for_a_read_sent_since_the_last_change() {
        let mut h = Hold::new(config(true));
        h.handle::<String>(Event::Connection { connected: true });
        assert_eq!(actions(&mut h), vec![Action::State(State::Suspended), read(1)]);
        h.handle::<String>(Event::Release { closed: false });
        assert_eq!(
            actions(&mut h),
            vec![
                Action::State(State::Released),
                Action::DropWatch(GRANT_WATCH),
                Action::DropWatch(Id(1)),
                Action::Delete { known_ours: false }
            ]
        );

        let mut h = Hold::new(config(false));
        actions(&mut h);
        h.handle::<String>(Event::Clock { safe: false });
        assert_eq!(actions(&mut h), vec![Action::State(State::Suspended)]);
        h.handle::<String>(Event::Release { closed: false });
        assert_eq!(
            actions(&mut h),
            vec![Action::State(State::Released), Action::DropWatch(Id(1)), Action::Delete { known_ours: false }]
        );
    }

    #[test]
    fn the_first_read_arms_the_watch_or_finds_the_lock_lost() {
        let mut h = Hold::new(config(false));
        actions(&mut h);
        h.handle(data(SESSION));
        assert!(h.known_ours());
        assert_eq!(actions(&mut h), vec![]);

        let mut h = Hold::new(config(false));
        actions(&mut h);
        h.handle(data(0x99));
        assert_eq!(actions(&mut h), vec![Action::State(State::Lost(Loss::NotOurs)), Action::DropWatch(Id(1))]);

        let mut h = Hold::new(config(false));
        actions(&mut h);
        h.handle::<String>(Event::Reply(Id(1), Reply { result: Err(Failure::NoNode), connection: 1 }));
        assert_eq!(actions(&mut h), vec![Action::State(State::Lost(Loss::Deleted))]);
    }

    #[test]
    fn a_deleted_node_is_lost_and_a_release_then_deletes_nothing() {
        let mut h = Hold::new(config(true));
        h.handle::<String>(Event::Watch(GRANT_WATCH, Notice::Deleted));
        assert_eq!(actions(&mut h), vec![Action::State(State::Lost(Loss::Deleted))]);
        h.handle::<String>(Event::Release { closed: false });
        assert_eq!(actions(&mut h), vec![Action::Released(Outcome::Lost(Loss::Deleted))]);
    }

    #[test]
    fn a_connection_change_suspends_until_a_read_after_it_shows_our_node() {
        let mut h = Hold::new(config(true));
        h.handle::<String>(Event::Connection { connected: false });
        assert_eq!(actions(&mut h), vec![Action::State(State::Suspended)]);
        h.handle::<String>(Event::Connection { connected: true });
        assert_eq!(actions(&mut h), vec![read(1)]);
        // Another change while the read is on its way: that read proves
        // nothing now; a new one is sent.
        h.handle::<String>(Event::Connection { connected: true });
        assert_eq!(actions(&mut h), vec![Action::DropWatch(Id(1)), read(2)]);
        h.handle(data(SESSION));
        assert_eq!(actions(&mut h), vec![], "a stale read's reply is ignored");
        h.handle::<String>(Event::Reply(
            Id(2),
            Reply { result: Ok(Answer::Data(Stat { czxid: 7, pzxid: 7, owner: SESSION, version: 0 })), connection: 2 },
        ));
        assert_eq!(actions(&mut h), vec![Action::DropWatch(GRANT_WATCH), Action::State(State::Held)]);
        assert!(h.known_ours());
    }

    #[test]
    fn a_recheck_that_finds_the_node_gone_loses_the_lock() {
        let mut h = Hold::new(config(true));
        h.handle::<String>(Event::Connection { connected: true });
        assert_eq!(actions(&mut h), vec![Action::State(State::Suspended), read(1)]);
        h.handle::<String>(Event::Reply(Id(1), Reply { result: Err(Failure::NoNode), connection: 2 }));
        assert_eq!(
            actions(&mut h),
            vec![Action::State(State::Lost(Loss::GoneAfterReconnect)), Action::DropWatch(GRANT_WATCH)]
        );
    }

    #[test]
    fn an_unanswered_recheck_is_retried_later() {
        let mut h = Hold::new(config(true));
        h.handle::<String>(Event::Connection { connected: true });
        actions(&mut h);
        h.handle::<String>(Event::Reply(Id(1), Reply { result: Err(Failure::Unknown), connection: 2 }));
        assert_eq!(actions(&mut h), vec![Action::RetryLater]);
        h.handle::<String>(Event::Retry);
        assert_eq!(actions(&mut h), vec![read(2)]);
    }

    #[test]
    fn the_clock_running_out_suspends_and_its_return_rechecks() {
        let mut h = Hold::new(config(true));
        h.handle::<String>(Event::Clock { safe: false });
        assert_eq!(actions(&mut h), vec![Action::State(State::Suspended)]);
        assert!(!h.known_ours());
        h.handle::<String>(Event::Clock { safe: true });
        assert_eq!(actions(&mut h), vec![read(1)]);
        h.handle(data(SESSION));
        // The read's watch replaces the grant's.
        assert_eq!(actions(&mut h), vec![Action::DropWatch(GRANT_WATCH), Action::State(State::Held)]);
    }

    #[test]
    fn a_proof_that_comes_once_the_clock_ran_out_does_not_make_it_held() {
        let mut h = Hold::new(config(true));
        h.handle::<String>(Event::Connection { connected: true });
        actions(&mut h);
        h.handle::<String>(Event::Clock { safe: false });
        h.handle(data(SESSION));
        assert_eq!(actions(&mut h), vec![Action::DropWatch(GRANT_WATCH)]);
        assert_eq!(h.state(), State::Suspended);
        h.handle::<String>(Event::Clock { safe: true });
        assert_eq!(actions(&mut h), vec![read(2)]);
    }

    #[test]
    fn a_data_change_reads_again_and_keeps_it_held() {
        let mut h = Hold::new(config(true));
        h.handle::<String>(Event::Watch(GRANT_WATCH, Notice::Changed));
        assert_eq!(actions(&mut h), vec![read(1)]);
        assert!(!h.known_ours(), "no armed watch until the read answers");
        h.handle(data(SESSION));
        assert!(h.known_ours());
        assert_eq!(h.state(), State::Held);
    }

    #[test]
    fn the_session_ending_loses_the_lock_and_a_close_says_closed() {
        let mut h = Hold::new(config(true));
        h.handle::<String>(Event::SessionEnded { closed: false });
        assert_eq!(actions(&mut h), vec![Action::State(State::Lost(Loss::SessionEnded))]);
        let mut h = Hold::new(config(true));
        h.handle::<String>(Event::SessionEnded { closed: true });
        assert_eq!(actions(&mut h), vec![Action::State(State::Lost(Loss::Closed))]);
    }

    #[test]
    fn a_release_overtaken_by_a_close_says_closed_not_lost() {
        let mut h = Hold::new(config(true));
        h.handle::<String>(Event::Release { closed: false });
        actions(&mut h);
        h.handle::<String>(Event::Deleted { deletion: Deletion::Gone, closed: true });
        assert_eq!(actions(&mut h), vec![Action::Released(Outcome::Closed)]);
        let mut h = Hold::new(config(true));
        h.handle::<String>(Event::Release { closed: false });
        actions(&mut h);
        h.handle::<String>(Event::Deleted { deletion: Deletion::Gone, closed: false });
        assert_eq!(actions(&mut h), vec![Action::Released(Outcome::LostBefore)]);
        let mut h = Hold::new(config(true));
        h.handle::<String>(Event::Release { closed: true });
        assert_eq!(
            actions(&mut h),
            vec![Action::State(State::Released), Action::DropWatch(GRANT_WATCH), Action::Released(Outcome::Closed)]
        );
    }

    #[test]
    fn a_change_since_the_proof_starts_suspended() {
        let mut h = Hold::new(Config { changed: true, ..config(true) });
        assert_eq!(actions(&mut h), vec![Action::State(State::Suspended), read(1)]);
    }

    #[test]
    fn a_hold_that_starts_disconnected_or_unsafe_is_suspended() {
        let mut h = Hold::new(Config { connected: false, ..config(true) });
        assert_eq!(actions(&mut h), vec![Action::State(State::Suspended)]);
        h.handle::<String>(Event::Connection { connected: true });
        assert_eq!(actions(&mut h), vec![read(1)]);
        let mut h = Hold::new(Config { safe: false, ..config(true) });
        assert_eq!(actions(&mut h), vec![Action::State(State::Suspended)]);
    }

    #[test]
    fn a_second_release_and_late_events_do_nothing() {
        let mut h = Hold::new(config(true));
        h.handle::<String>(Event::Release { closed: false });
        h.handle::<String>(Event::Deleted { deletion: Deletion::Pending, closed: false });
        actions(&mut h);
        h.handle::<String>(Event::Release { closed: false });
        h.handle::<String>(Event::Watch(GRANT_WATCH, Notice::Deleted));
        h.handle::<String>(Event::SessionEnded { closed: false });
        assert_eq!(actions(&mut h), vec![]);
        assert_eq!(h.state(), State::Released);
    }
}

//! A multi-lock's acquire (protocol section 8b) as a state machine: several
//! ordinary locks taken one after another, all or none.
//!
//! A [`MultiAcquire`] decides what the composition does; each member's own
//! acquire and hold are the machines of [`crate::acquire`] and
//! [`crate::hold`], which its runner (`zklock-core`'s `multi.rs`, or the
//! search in this crate's tests) runs. It is fed [`Event`]s (a member
//! granted or failed, the answers to the reads of the earlier members'
//! nodes, each member's verdict as its guard's `check()` gives it, a change
//! of a member's state, the caller's cancel, the deadline) and answers with
//! [`Action`]s (acquire a member, read nodes, check or wait for a member,
//! and the end: granted, or failed after the members taken are released).
//! It reads no clock and sends nothing itself.
//!
//! The rules it keeps:
//! - Members are taken one at a time in the order the runner gives (byte
//!   order of their paths: section 8b's one total order); the next starts
//!   only once the one before is granted.
//! - A member's failure (timeout, cancel, error) ends the call with that
//!   member's failure, after the members taken are released (newest first).
//!   Their releases' grace counts from the cancel when one came (outside
//!   attack round 37, F1: counted from the member's end, a cancel on a
//!   silent server returned 0.5 s late), else from the deadline if it
//!   passed, else from the failure ([`Grace`]).
//! - Once the last member is granted, every earlier member's node is read
//!   (every read sent before any answer is awaited: one round trip): each
//!   must exist, be our session's and have the czxid it was granted with,
//!   or the call fails (outside attack round 12: a set came back held whose
//!   first member's node a third party had deleted, or whose session had
//!   expired, while a later member waited and another client held the
//!   first). A read the connection left unanswered
//!   ([`ReadAnswer::Unanswered`]) does not end the call: that member is
//!   waited for as a suspended one (below) and read again once its guard is
//!   safe (outside attack round 43, F5: a connection that blinked while the
//!   read was out failed the call with most of its deadline left). A cancel
//!   or the deadline ends the reads at once (round 43, F3, F4, F6: the reads
//!   waited for the connection's end or the operation timeout, seconds past
//!   either).
//! - Then every member's guard is checked, in order, in rounds. A member
//!   whose check fails for the connection ([`Verdict::Suspended`]: its
//!   connection came back and its re-check is not answered yet, or its
//!   safety clock is out while the session reconnects) is waited for, and
//!   the round starts again at each change of its state or its clock, until
//!   it is safe, lost, the deadline passes or a cancel comes (outside attack
//!   round 36, F1: a reconnect right before the last grant failed the call
//!   with most of the deadline left, where a single acquire keeps its place
//!   through a disconnect). Any other failure of a check ends the call. A
//!   round checks every member before it waits for one, and the reads'
//!   answers are taken in the order they come, so a member known lost ends
//!   the call at once whatever the members before it wait for (outside
//!   attack round 44, F1). While reads are out or a member is waited for,
//!   a member whose guard learns it is lost ([`Event::Lost`]) ends the call
//!   at once (round 45, F1-F3). While a later member is taken, such a loss
//!   stops that member's acquire ([`Action::Stop`]) and the call fails with
//!   the lost member's error as soon as the acquire ends (granted or not),
//!   rather than after it is granted, however long its queue.

use std::collections::VecDeque;

use crate::acquire::Bugs;

/// A member's node as a read showed it: the answer to [`Action::Read`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadAnswer<E> {
    /// The node exists: its owner session and its czxid.
    Node {
        /// The session that owns it (its ephemeral owner).
        owner: i64,
        /// The zxid of its create.
        czxid: i64,
    },
    /// No node of that path.
    NoNode,
    /// The read failed for a reason another read would not change (the
    /// session ended, the server refused): the call fails with it.
    Failed(E),
    /// The connection left the read unanswered (lost, or no answer within
    /// the operation timeout): the member is read again once its guard is
    /// safe; the error is what the call fails with if the deadline passes
    /// first.
    Unanswered(E),
}

/// A member's guard's verdict (its `check()`): the answer to
/// [`Action::Check`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict<E> {
    /// Safely held.
    Safe,
    /// Not safe for the connection (suspended, or its safety clock out):
    /// may be safe again. The error is what the call fails with if it is
    /// not safe again in time.
    Suspended(E),
    /// Not held (lost, released): the call fails with this.
    Failed(E),
}

/// What happened, fed to [`MultiAcquire::handle`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event<E> {
    /// Member `member`'s acquire was granted (after [`Action::Acquire`]).
    Granted {
        /// Its index.
        member: usize,
        /// Our session on its client (the owner its node must have).
        session: i64,
        /// Its fencing token (its node's czxid).
        token: u64,
    },
    /// Member `member`'s acquire failed (timeout, cancel, error).
    Failed {
        /// Its index.
        member: usize,
        /// Its error.
        error: E,
    },
    /// The answer to the read of member `member`'s node, fed in the order
    /// of [`Action::Read`]'s list.
    Read {
        /// Its index.
        member: usize,
        /// What the read showed.
        answer: ReadAnswer<E>,
    },
    /// Member `member`'s verdict (after [`Action::Check`]).
    Checked {
        /// Its index.
        member: usize,
        /// What its `check()` said.
        verdict: Verdict<E>,
    },
    /// While waiting for member `member` ([`Action::Wait`]): its state
    /// changed or its safety clock moved on.
    Changed {
        /// Its index.
        member: usize,
    },
    /// Member `member`'s guard learned that it is lost (its `check()` fails
    /// for anything but the connection: its node gone or not ours, its
    /// session ended, its client closed). Fed while a later member is
    /// taken, reads are out or a member is waited for, whenever it happens
    /// and at once if it already had (the runner watches every member
    /// taken): the call ends with that member's error (outside attack round
    /// 45, F1-F3: a member lost while another's read was out, or another
    /// was waited for, ended the call only when that one answered or
    /// changed, or at the deadline). While a later member is taken, the
    /// machine first stops that member's acquire ([`Action::Stop`]) and
    /// ends the call when the acquire ends. Ignored elsewhere (a round of
    /// checks sees it), and after the first while a member is taken.
    Lost {
        /// Its index.
        member: usize,
        /// Its `check()` error.
        error: E,
    },
    /// The caller cancelled the call (the runner also cancels the member
    /// being acquired: its acquire then ends on its own, with `Failed`).
    /// While reads are out or a member is waited for, the call ends at once.
    Cancelled,
    /// The call's deadline passed while reads were out ([`Action::Read`])
    /// or a member was waited for ([`Action::Wait`]).
    DeadlinePassed,
}

/// From when the releases of the members taken get their grace (the
/// runner waits for them until a grace after it, as a single acquire waits
/// for the deletion of its node).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grace {
    /// From the caller's cancel ([`Event::Cancelled`]).
    FromCancel,
    /// From the call's deadline if it passed, else from now.
    FromDeadline,
}

/// Why the call failed ([`Action::Fail`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why<E> {
    /// The member's own error: its acquire's, its check's, or its read's.
    Error(E),
    /// Its node is gone, or not ours, now that a later member was taken.
    Gone,
    /// The deadline passed while its node's read was out.
    Timeout,
    /// The caller cancelled while reads were out or a member was waited
    /// for.
    Cancelled,
}

/// What to do, from [`MultiAcquire::poll_action`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action<E> {
    /// Start member `n`'s acquire, with what is left of the deadline; feed
    /// [`Event::Granted`] or [`Event::Failed`].
    Acquire(usize),
    /// Stop member `n`'s acquire, which runs (an earlier member was lost:
    /// [`Event::Lost`]), as the caller's cancel would stop it, without
    /// cancelling the call; feed its end as for [`Action::Acquire`] (either
    /// may still come: a grant that raced the stop is released with the
    /// others).
    Stop(usize),
    /// Read these members' nodes (send every read before awaiting any);
    /// feed each answer as [`Event::Read`], in this order, or a cancel or
    /// the deadline that comes first.
    Read(Vec<usize>),
    /// Ask member `n`'s guard (`check()`); feed [`Event::Checked`].
    Check(usize),
    /// Wait for a change of member `n`'s state or safety clock
    /// ([`Event::Changed`]), the deadline ([`Event::DeadlinePassed`]) or a
    /// cancel ([`Event::Cancelled`]).
    Wait(usize),
    /// Done: every member is held; hand the caller the set.
    Granted,
    /// Done: release the members taken (newest first), waiting for them
    /// until the grace after `grace`, then fail the call with member
    /// `member`'s failure `why`.
    Fail {
        /// The member that failed.
        member: usize,
        /// How.
        why: Why<E>,
        /// From when the releases' grace counts.
        grace: Grace,
    },
}

/// What a member checked needs before the set can be granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Need {
    /// Suspended: wait for a change of its state.
    Wait,
    /// Safe, but its read was left unanswered: read it again.
    Read,
}

/// Where the call is.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for member `n`'s acquire.
    Taking(usize),
    /// Waiting for the reads' answers: the members still to answer, in
    /// order.
    Reading(VecDeque<usize>),
    /// Waiting for member `n`'s verdict.
    Checking(usize),
    /// Waiting for a change of member `n`, suspended.
    Waiting(usize),
    /// Ended (granted or failed).
    Done,
}

/// One multi-lock acquire: see the [module documentation](self).
#[derive(Clone, Debug)]
pub struct MultiAcquire<E> {
    /// How many members.
    members: usize,
    /// Session and fencing token of each member granted, in order.
    granted: Vec<(i64, u64)>,
    /// Where the call is.
    phase: Phase,
    /// A cancel came.
    cancelled: bool,
    /// What a suspended member waited for fails with if it stays so.
    suspended: Option<E>,
    /// A member lost while a later one was taken, and its error: the call
    /// fails with it once that acquire ends ([`Action::Stop`]).
    lost: Option<(usize, E)>,
    /// Members whose read the connection left unanswered: read again once
    /// their guard is safe.
    unread: Vec<usize>,
    /// A member read again and still unanswered: waited for (not read)
    /// until a change of its state or its clock.
    again: Option<usize>,
    /// In a round of checks: the first member that needs something.
    pending: Option<(usize, Need)>,
    /// Actions not yet taken.
    actions: VecDeque<Action<E>>,
    /// Bugs switched on (history only).
    bugs: Bugs,
}

impl<E: Clone> MultiAcquire<E> {
    /// An acquire of `members` members (at least one), in the order given,
    /// with `bugs` switched on (ignored without the `history` feature).
    ///
    /// # Panics
    /// If `members` is zero (the runner refuses an empty multi-lock before).
    pub fn new(members: usize, bugs: Bugs) -> MultiAcquire<E> {
        assert!(members > 0, "a multi-lock has at least one member");
        MultiAcquire {
            members,
            granted: Vec::with_capacity(members),
            phase: Phase::Taking(0),
            cancelled: false,
            suspended: None,
            lost: None,
            unread: Vec::new(),
            again: None,
            pending: None,
            actions: VecDeque::from([Action::Acquire(0)]),
            bugs,
        }
    }

    /// The next action to take, if any.
    pub fn poll_action(&mut self) -> Option<Action<E>> {
        self.actions.pop_front()
    }

    /// Whether the call has ended (granted or failed).
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Feeds one event. Events that do not fit where the call is (a read's
    /// answer while nothing is read, an event after the end) are ignored.
    pub fn handle(&mut self, event: Event<E>) {
        if self.phase == Phase::Done {
            return;
        }
        match event {
            Event::Cancelled => {
                self.cancelled = true;
                match &self.phase {
                    Phase::Waiting(n) => self.fail(*n, Why::Cancelled),
                    Phase::Reading(left) if !self.bugs.is_on(|b| b.multi_reads_ignore_stop) => {
                        let n = left.front().copied().unwrap_or(0);
                        self.fail(n, Why::Cancelled);
                    },
                    _ => {},
                }
            },
            Event::Granted { member, session, token } if self.phase == Phase::Taking(member) => {
                self.granted.push((session, token));
                match self.lost.take() {
                    Some((lost, error)) => self.fail(lost, Why::Error(error)),
                    None => self.after_grant(member),
                }
            },
            Event::Failed { member, error } if self.phase == Phase::Taking(member) => match self.lost.take() {
                // Stopped for that loss (or failed meanwhile): the loss is
                // the cause.
                Some((lost, error)) => self.fail(lost, Why::Error(error)),
                None => self.fail(member, Why::Error(error)),
            },
            Event::Lost { member, error }
                if matches!(self.phase, Phase::Taking(_))
                    && member < self.granted.len()
                    && self.lost.is_none()
                    && !self.bugs.is_on(|b| b.multi_takes_unwatched) =>
            {
                if let Phase::Taking(n) = self.phase {
                    self.lost = Some((member, error));
                    self.actions.push_back(Action::Stop(n));
                }
            },
            Event::Read { member, answer } if self.reading(member) => {
                let (session, token) = self.granted[member];
                let ours = |czxid: i64| u64::try_from(czxid) == Ok(token);
                match answer {
                    ReadAnswer::Node { owner, czxid } if owner == session && ours(czxid) => {
                        self.unread.retain(|&m| m != member);
                    },
                    ReadAnswer::Node { .. } | ReadAnswer::NoNode => return self.fail(member, Why::Gone),
                    ReadAnswer::Failed(e) => return self.fail(member, Why::Error(e)),
                    ReadAnswer::Unanswered(e) if self.bugs.is_on(|b| b.multi_unanswered_fails) => {
                        return self.fail(member, Why::Error(e));
                    },
                    ReadAnswer::Unanswered(e) => {
                        if self.unread.contains(&member) {
                            // Read again and still unanswered: the next
                            // read waits for a change of its state or its
                            // clock (no read after read while nothing
                            // moves).
                            self.again = Some(member);
                        } else {
                            self.unread.push(member);
                        }
                        self.suspended = Some(e);
                    },
                }
                if let Phase::Reading(left) = &mut self.phase {
                    left.retain(|&m| m != member);
                    if left.is_empty() {
                        match self.again {
                            Some(n) if self.bugs.is_on(|b| b.multi_rereads_wait_unchecked) => {
                                self.again = None;
                                self.phase = Phase::Waiting(n);
                                self.actions.push_back(Action::Wait(n));
                            },
                            // The checks, in order from the first member (a
                            // member lost while the reads were out fails
                            // the call at once; one read again and still
                            // unanswered is waited for).
                            _ => self.check(0),
                        }
                    }
                }
            },
            Event::Checked { member, verdict } if self.phase == Phase::Checking(member) => {
                // What this member needs before the set can be granted, if
                // anything: the first such member is waited for (or read
                // again) once every member is checked, so that a member
                // lost further on fails the call at once (outside attack
                // round 44, F1: it waited behind an earlier suspended
                // member, holding the last member's lock, and failed at
                // the deadline naming the wrong member).
                let need = match verdict {
                    Verdict::Failed(e) => return self.fail(member, Why::Error(e)),
                    Verdict::Suspended(e) if self.bugs.is_on(|b| b.multi_fails_suspended) => {
                        return self.fail(member, Why::Error(e));
                    },
                    Verdict::Suspended(e) if self.cancelled => {
                        self.suspended = Some(e);
                        return self.fail(member, Why::Cancelled);
                    },
                    Verdict::Suspended(e) => {
                        if self.pending.is_none() {
                            self.suspended = Some(e);
                        }
                        Some(Need::Wait)
                    },
                    // Read again and still unanswered: waited for until it
                    // changes (no read after read while nothing moves).
                    Verdict::Safe if self.again == Some(member) => Some(Need::Wait),
                    // Safe, with its read unanswered: read again (its guard
                    // has seen the connection settle, or has not noticed
                    // yet: an answer decides).
                    Verdict::Safe if self.unread.contains(&member) => Some(Need::Read),
                    Verdict::Safe => None,
                };
                if let Some(need) = need {
                    self.pending.get_or_insert((member, need));
                }
                let in_order = self.bugs.is_on(|b| b.multi_waits_in_order);
                match self.pending {
                    Some(p) if in_order || member + 1 == self.members => self.settle_pending(p),
                    _ if member + 1 < self.members => self.check(member + 1),
                    _ => {
                        self.phase = Phase::Done;
                        self.actions.push_back(Action::Granted);
                    },
                }
            },
            Event::Changed { member } if self.phase == Phase::Waiting(member) => {
                if self.again == Some(member) {
                    self.again = None;
                }
                // A new round (in order: `multi_waits_in_order`, from it).
                let from = if self.bugs.is_on(|b| b.multi_waits_in_order) { member } else { 0 };
                self.check(from);
            },
            Event::Lost { member, error }
                if matches!(self.phase, Phase::Reading(_) | Phase::Waiting(_))
                    && member < self.granted.len()
                    && !self.bugs.is_on(|b| b.multi_waits_unwatched) =>
            {
                self.fail(member, Why::Error(error));
            },
            Event::DeadlinePassed => match &self.phase {
                Phase::Waiting(n) => {
                    let n = *n;
                    let why = self.suspended.take().map_or(Why::Timeout, Why::Error);
                    self.fail(n, why);
                },
                Phase::Reading(left) if !self.bugs.is_on(|b| b.multi_reads_ignore_stop) => {
                    let n = left.front().copied().unwrap_or(0);
                    self.fail(n, Why::Timeout);
                },
                _ => {},
            },
            _ => {},
        }
    }

    /// Member `n` was granted: the next member, or the reads of the earlier
    /// ones, or the checks.
    fn after_grant(&mut self, n: usize) {
        if n + 1 < self.members {
            self.phase = Phase::Taking(n + 1);
            self.actions.push_back(Action::Acquire(n + 1));
        } else if self.members > 1 && !self.bugs.is_on(|b| b.multi_without_reads) {
            let list: Vec<usize> = (0..self.members - 1).collect();
            self.phase = Phase::Reading(list.iter().copied().collect());
            self.actions.push_back(Action::Read(list));
        } else {
            self.check(0);
        }
    }

    /// Whether member `n`'s read is out: its answer is taken in whatever
    /// order the answers come (two clients answer independently: outside
    /// attack round 44, F1, a member read gone waited behind an earlier
    /// member's read on a silent connection), or only in the order sent
    /// (`multi_waits_in_order`).
    fn reading(&self, n: usize) -> bool {
        match &self.phase {
            Phase::Reading(left) if self.bugs.is_on(|b| b.multi_waits_in_order) => left.front() == Some(&n),
            Phase::Reading(left) => left.contains(&n),
            _ => false,
        }
    }

    /// Every member checked, one needs something: wait for it, or read it
    /// again.
    fn settle_pending(&mut self, (member, need): (usize, Need)) {
        self.pending = None;
        match need {
            Need::Wait => {
                self.phase = Phase::Waiting(member);
                self.actions.push_back(Action::Wait(member));
            },
            Need::Read => {
                self.phase = Phase::Reading(VecDeque::from([member]));
                self.actions.push_back(Action::Read(vec![member]));
            },
        }
    }

    /// Asks member `n`'s verdict (a round of checks starts at 0).
    fn check(&mut self, n: usize) {
        if n == 0 {
            self.pending = None;
        }
        self.phase = Phase::Checking(n);
        self.actions.push_back(Action::Check(n));
    }

    /// Ends the call: member `n` failed with `why`.
    fn fail(&mut self, member: usize, why: Why<E>) {
        let from_cancel = self.cancelled && !self.bugs.is_on(|b| b.multi_grace_from_end);
        let grace = if from_cancel { Grace::FromCancel } else { Grace::FromDeadline };
        self.phase = Phase::Done;
        self.actions.push_back(Action::Fail { member, why, grace });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type M = MultiAcquire<&'static str>;

    fn granted(n: usize) -> Event<&'static str> {
        Event::Granted { member: n, session: 7, token: 100 + n as u64 }
    }

    /// Runs `m` on `events`, each fed after the action before it was
    /// taken: the actions in order.
    fn run(m: &mut M, events: Vec<Event<&'static str>>) -> Vec<Action<&'static str>> {
        let mut out = Vec::new();
        out.extend(std::iter::from_fn(|| m.poll_action()));
        for e in events {
            m.handle(e);
            out.extend(std::iter::from_fn(|| m.poll_action()));
        }
        out
    }

    #[test]
    fn one_member_is_taken_then_checked() {
        let mut m = M::new(1, Bugs::default());
        let got = run(&mut m, vec![granted(0), Event::Checked { member: 0, verdict: Verdict::Safe }]);
        assert_eq!(got, vec![Action::Acquire(0), Action::Check(0), Action::Granted]);
        assert!(m.is_done());
    }

    #[test]
    fn earlier_members_are_read_once_the_last_is_granted() {
        let mut m = M::new(3, Bugs::default());
        let node = |n: usize| Event::Read { member: n, answer: ReadAnswer::Node { owner: 7, czxid: 100 + n as i64 } };
        let safe = |n: usize| Event::Checked { member: n, verdict: Verdict::Safe };
        let got = run(&mut m, vec![granted(0), granted(1), granted(2), node(0), node(1), safe(0), safe(1), safe(2)]);
        assert_eq!(
            got,
            vec![
                Action::Acquire(0),
                Action::Acquire(1),
                Action::Acquire(2),
                Action::Read(vec![0, 1]),
                Action::Check(0),
                Action::Check(1),
                Action::Check(2),
                Action::Granted,
            ]
        );
    }

    #[test]
    fn a_node_made_again_by_another_session_or_with_another_czxid_is_gone() {
        for answer in
            [ReadAnswer::Node { owner: 8, czxid: 100 }, ReadAnswer::Node { owner: 7, czxid: 99 }, ReadAnswer::NoNode]
        {
            let mut m = M::new(2, Bugs::default());
            let got = run(&mut m, vec![granted(0), granted(1), Event::Read { member: 0, answer }]);
            assert_eq!(got.last(), Some(&Action::Fail { member: 0, why: Why::Gone, grace: Grace::FromDeadline }));
            assert!(m.is_done());
        }
    }

    #[test]
    fn a_suspended_member_is_waited_for_and_checked_again() {
        let mut m = M::new(1, Bugs::default());
        let got = run(
            &mut m,
            vec![
                granted(0),
                Event::Checked { member: 0, verdict: Verdict::Suspended("loss") },
                Event::Changed { member: 0 },
                Event::Checked { member: 0, verdict: Verdict::Safe },
            ],
        );
        assert_eq!(got, vec![Action::Acquire(0), Action::Check(0), Action::Wait(0), Action::Check(0), Action::Granted]);
    }

    #[test]
    fn a_member_still_suspended_at_the_deadline_fails_with_its_error() {
        let mut m = M::new(1, Bugs::default());
        let got = run(
            &mut m,
            vec![granted(0), Event::Checked { member: 0, verdict: Verdict::Suspended("loss") }, Event::DeadlinePassed],
        );
        assert_eq!(got.last(), Some(&Action::Fail { member: 0, why: Why::Error("loss"), grace: Grace::FromDeadline }));
    }

    #[test]
    fn a_cancel_fails_a_wait_and_the_grace_counts_from_it() {
        let mut m = M::new(2, Bugs::default());
        let got = run(&mut m, vec![granted(0), Event::Cancelled, Event::Failed { member: 1, error: "cancelled" }]);
        assert_eq!(
            got,
            vec![
                Action::Acquire(0),
                Action::Acquire(1),
                Action::Fail { member: 1, why: Why::Error("cancelled"), grace: Grace::FromCancel }
            ]
        );
        let mut m = M::new(1, Bugs::default());
        let got = run(
            &mut m,
            vec![granted(0), Event::Checked { member: 0, verdict: Verdict::Suspended("loss") }, Event::Cancelled],
        );
        assert_eq!(got.last(), Some(&Action::Fail { member: 0, why: Why::Cancelled, grace: Grace::FromCancel }));
    }

    #[test]
    fn an_unanswered_read_is_read_again_once_its_member_is_safe() {
        let mut m = M::new(2, Bugs::default());
        let ours = Event::Read { member: 0, answer: ReadAnswer::Node { owner: 7, czxid: 100 } };
        let unanswered = || Event::Read { member: 0, answer: ReadAnswer::Unanswered("lost") };
        let checked = |n: usize, verdict: Verdict<&'static str>| Event::Checked { member: n, verdict };
        let got = run(
            &mut m,
            vec![
                granted(0),
                granted(1),
                unanswered(),
                checked(0, Verdict::Suspended("suspended")),
                checked(1, Verdict::Safe),
                Event::Changed { member: 0 },
                checked(0, Verdict::Safe),
                checked(1, Verdict::Safe),
                unanswered(),
                checked(0, Verdict::Safe),
                checked(1, Verdict::Safe),
                Event::Changed { member: 0 },
                checked(0, Verdict::Safe),
                checked(1, Verdict::Safe),
                ours,
                checked(0, Verdict::Safe),
                checked(1, Verdict::Safe),
            ],
        );
        assert_eq!(
            got,
            vec![
                Action::Acquire(0),
                Action::Acquire(1),
                Action::Read(vec![0]),
                // A round of checks: every member, then the wait for 0.
                Action::Check(0),
                Action::Check(1),
                Action::Wait(0),
                Action::Check(0),
                Action::Check(1),
                Action::Read(vec![0]),
                // Unanswered again: a round of checks, then a change comes
                // before the next read.
                Action::Check(0),
                Action::Check(1),
                Action::Wait(0),
                Action::Check(0),
                Action::Check(1),
                Action::Read(vec![0]),
                Action::Check(0),
                Action::Check(1),
                Action::Granted,
            ]
        );
    }

    #[test]
    fn a_member_lost_while_reads_are_out_or_another_is_waited_for_ends_the_call() {
        // While 0's read is out, 1 is lost.
        let mut m = M::new(2, Bugs::default());
        let got = run(&mut m, vec![granted(0), granted(1), Event::Lost { member: 1, error: "lost" }]);
        assert_eq!(got.last(), Some(&Action::Fail { member: 1, why: Why::Error("lost"), grace: Grace::FromDeadline }));
        // While 0 is waited for (suspended), 1 is lost.
        let mut m = M::new(2, Bugs::default());
        let got = run(
            &mut m,
            vec![
                granted(0),
                granted(1),
                Event::Read { member: 0, answer: ReadAnswer::Node { owner: 7, czxid: 100 } },
                Event::Checked { member: 0, verdict: Verdict::Suspended("suspended") },
                Event::Checked { member: 1, verdict: Verdict::Safe },
                Event::Lost { member: 1, error: "lost" },
            ],
        );
        assert_eq!(
            got[got.len() - 2..],
            [Action::Wait(0), Action::Fail { member: 1, why: Why::Error("lost"), grace: Grace::FromDeadline }]
        );
    }

    #[test]
    fn a_member_lost_while_a_later_one_is_taken_stops_that_acquire_and_fails_the_call() {
        let lost = |n: usize| Event::Lost { member: n, error: "lost" };
        let failed_with_loss = Action::Fail { member: 0, why: Why::Error("lost"), grace: Grace::FromDeadline };
        // 0 is lost while 1 is taken: 1's acquire is stopped, and its end
        // (its failure, as stopped) fails the call with 0's loss.
        let mut m = M::new(3, Bugs::default());
        let stopped = Event::Failed { member: 1, error: "cancelled" };
        let got = run(&mut m, vec![granted(0), lost(0), lost(0), stopped]);
        assert_eq!(got, vec![Action::Acquire(0), Action::Acquire(1), Action::Stop(1), failed_with_loss.clone()]);
        // A grant that raced the stop: the call fails all the same (the
        // member is released with the others), never goes on to 2.
        let mut m = M::new(3, Bugs::default());
        let got = run(&mut m, vec![granted(0), lost(0), granted(1)]);
        assert_eq!(got, vec![Action::Acquire(0), Action::Acquire(1), Action::Stop(1), failed_with_loss]);
        // After a cancel, the grace counts from it.
        let mut m = M::new(2, Bugs::default());
        let got = run(&mut m, vec![granted(0), Event::Cancelled, lost(0), Event::Failed { member: 1, error: "c" }]);
        assert_eq!(got.last(), Some(&Action::Fail { member: 0, why: Why::Error("lost"), grace: Grace::FromCancel }));
        // A loss of a member not yet taken (or the one taken) is not one
        // to stop for: its acquire ends by itself.
        let mut m = M::new(2, Bugs::default());
        let got = run(&mut m, vec![granted(0), lost(1)]);
        assert_eq!(got, vec![Action::Acquire(0), Action::Acquire(1)]);
    }

    #[test]
    fn a_member_lost_while_a_read_again_is_out_fails_the_call_at_once() {
        let mut m = M::new(2, Bugs::default());
        let unanswered = || Event::Read { member: 0, answer: ReadAnswer::Unanswered("lost") };
        let checked = |n: usize, verdict: Verdict<&'static str>| Event::Checked { member: n, verdict };
        let got = run(
            &mut m,
            vec![
                granted(0),
                granted(1),
                unanswered(),
                checked(0, Verdict::Safe),
                checked(1, Verdict::Safe),
                // Read again, and member 1 is lost while it is out.
                unanswered(),
                checked(0, Verdict::Safe),
                checked(1, Verdict::Failed("lost")),
            ],
        );
        assert_eq!(
            got,
            vec![
                Action::Acquire(0),
                Action::Acquire(1),
                Action::Read(vec![0]),
                Action::Check(0),
                Action::Check(1),
                Action::Read(vec![0]),
                // A round of checks before any wait (the simulator found a
                // wait for 0 here, without one, with 1 known lost).
                Action::Check(0),
                Action::Check(1),
                Action::Fail { member: 1, why: Why::Error("lost"), grace: Grace::FromDeadline },
            ]
        );
    }

    #[test]
    fn a_member_lost_after_a_suspended_one_fails_the_call_at_once() {
        let mut m = M::new(3, Bugs::default());
        let got = run(
            &mut m,
            vec![
                granted(0),
                granted(1),
                granted(2),
                // The answers in the order they come: 1's first.
                Event::Read { member: 1, answer: ReadAnswer::Node { owner: 7, czxid: 101 } },
                Event::Read { member: 0, answer: ReadAnswer::Unanswered("lost") },
                Event::Checked { member: 0, verdict: Verdict::Suspended("suspended") },
                Event::Checked { member: 1, verdict: Verdict::Failed("lost") },
            ],
        );
        assert_eq!(got.last(), Some(&Action::Fail { member: 1, why: Why::Error("lost"), grace: Grace::FromDeadline }));
        let mut m = M::new(3, Bugs::default());
        let got = run(
            &mut m,
            vec![granted(0), granted(1), granted(2), Event::Read { member: 1, answer: ReadAnswer::NoNode }],
        );
        assert_eq!(got.last(), Some(&Action::Fail { member: 1, why: Why::Gone, grace: Grace::FromDeadline }));
    }

    #[test]
    fn a_cancel_or_the_deadline_ends_the_reads() {
        for (stop, why, grace) in [
            (Event::Cancelled, Why::Cancelled, Grace::FromCancel),
            (Event::DeadlinePassed, Why::Timeout, Grace::FromDeadline),
        ] {
            let mut m = M::new(3, Bugs::default());
            let ours = Event::Read { member: 0, answer: ReadAnswer::Node { owner: 7, czxid: 100 } };
            let got = run(&mut m, vec![granted(0), granted(1), granted(2), ours, stop]);
            assert_eq!(got.last(), Some(&Action::Fail { member: 1, why, grace }));
            assert!(m.is_done());
        }
    }

    #[test]
    fn events_that_do_not_fit_are_ignored() {
        let mut m = M::new(2, Bugs::default());
        let got = run(
            &mut m,
            vec![
                granted(1),
                Event::Changed { member: 0 },
                Event::DeadlinePassed,
                Event::Read { member: 0, answer: ReadAnswer::NoNode },
            ],
        );
        assert_eq!(got, vec![Action::Acquire(0)]);
        assert!(!m.is_done());
    }
}

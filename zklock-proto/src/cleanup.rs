//! Deleting our nodes (protocol sections 6 and 7): one try at deleting a
//! node of ours, or the nodes a create of unknown outcome may have made, as
//! a state machine.
//!
//! A [`Cleanup`] is one try: it asks for requests ([`Action::Send`]) and
//! ends with what became of its target ([`Action::Done`]). Whether and when
//! to try again (in the background, with a backoff, until the session
//! ends) is its runner's business: a try that ends [`Deletion::Pending`] is
//! to be made again while the session lives.
//!
//! The rule it keeps: a node is deleted only if our session owns it. When
//! the caller knows the node is ours (a holder whose armed watch on it said
//! nothing: [`Target::Node`] with `known_ours`) one `delete` goes at once;
//! otherwise the node is looked at first (an `exists`, which ZooKeeper
//! checks against no ACL) and deleted at the version seen only if its owner
//! is our session. A node of the same name made by another session after
//! ours was deleted is not ours to delete. (ZooKeeper has no
//! delete-if-owner: a third party that deletes our node and makes another
//! of the same name between the look and the delete cannot be told apart.)

use crate::acquire::{Answer, Failure, Id, Reply, Request};
use crate::hold::Deletion;
use crate::names;

/// What to delete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Our node at `path`.
    Node {
        /// The node's full path.
        path: String,
        /// The caller knows it ours: delete without looking first.
        known_ours: bool,
    },
    /// Our nodes under `parent` whose names start with `prefix` (a create
    /// whose reply was lost).
    Prefix {
        /// The lock path.
        parent: String,
        /// The protected prefix (`_c_<uuid>-`).
        prefix: String,
    },
}

/// What a [`Cleanup`] asks of its runner, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send this request now.
    Send(Id, Request),
    /// This node is another session's: it is left alone (the runner may
    /// say so).
    NotOurs {
        /// The node.
        path: String,
        /// Its owner.
        owner: i64,
    },
    /// The try is over.
    Done(Deletion),
}

/// One node being deleted.
#[derive(Debug)]
enum Step {
    /// The `exists` (look) or the `delete` on its way, with how many more
    /// looks a delete at a version that changed meanwhile may make (a
    /// revocation request, Curator's `__REVOKE__`, changes it: outside
    /// attack round 17, F3, saw a release come back `Pending`).
    Look(Id, u8),
    Delete(Id, u8),
}

/// How many times a delete at the version read looks again after the
/// version changed, before the try ends `Pending` (the background goes on).
const LOOKS_AGAIN: u8 = 3;

/// One try at a cleanup; see the module documentation.
#[derive(Debug)]
pub struct Cleanup {
    session: i64,
    /// The list of a prefix's parent on its way.
    list: Option<(Id, String, String)>,
    /// The probe write sent before that list, until its answer, and
    /// whether it was answered (see [`Request::Probe`]).
    probe: Option<(Id, bool)>,
    /// Nodes being deleted: path and step.
    nodes: Vec<(String, Step)>,
    /// The results of the nodes done.
    results: Vec<Deletion>,
    next: u64,
    done: bool,
    actions: std::collections::VecDeque<Action>,
}

impl Cleanup {
    /// One try at deleting `target`, for session `session`; its first
    /// requests are ready at once. A prefix's parent is listed behind a
    /// probe write ([`Request::Probe`]): the list then shows our create of
    /// unknown outcome if it was made.
    pub fn new(target: Target, session: i64) -> Cleanup {
        let mut c = Cleanup {
            session,
            list: None,
            probe: None,
            nodes: Vec::new(),
            results: Vec::new(),
            next: 1,
            done: false,
            actions: std::collections::VecDeque::new(),
        };
        match target {
            Target::Node { path, known_ours } => c.node(path, known_ours),
            Target::Prefix { parent, prefix } => {
                c.probe = Some((c.send(Request::Probe { path: parent.clone() }), false));
                let id = c.send(Request::Children { path: parent.clone(), stat: false, watch: false });
                c.list = Some((id, parent, prefix));
            },
        }
        c
    }

    /// The next action, if any.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// Whether the try is over.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Feeds the reply to one of its requests.
    pub fn handle<E>(&mut self, id: Id, reply: Reply<E>) {
        if self.done {
            return;
        }
        if let Some((probe, answered)) = &mut self.probe {
            if *probe == id {
                *answered = !matches!(reply.result, Err(Failure::Unknown));
                return;
            }
        }
        if let Some((list, parent, prefix)) = self.list.take() {
            if list != id {
                self.list = Some((list, parent, prefix));
                return;
            }
            // A list not behind an answered probe may be of a tree without
            // our create: try again.
            if self.probe.take().is_some_and(|(_, answered)| !answered) {
                self.results.push(Deletion::Pending);
                self.settle();
                return;
            }
            match reply.result {
                Ok(Answer::Children { names, .. }) => {
                    for node in names::own_nodes(&names, &prefix) {
                        self.node(format!("{parent}/{}", node.name), false);
                    }
                },
                // No lock path, or no session: nothing of ours is there.
                Err(Failure::NoNode | Failure::SessionGone) => {},
                Ok(_) | Err(_) => self.results.push(Deletion::Pending),
            }
            self.settle();
            return;
        }
        let Some(at) =
            self.nodes.iter().position(|(_, step)| matches!(step, Step::Look(i, _) | Step::Delete(i, _) if *i == id))
        else {
            return;
        };
        let (path, step) = self.nodes.remove(at);
        match (step, reply.result) {
            (Step::Look(_, left), Ok(Answer::Exists(Some(stat)))) if stat.owner == self.session => {
                let id = self.send(Request::Delete { path: path.clone(), version: Some(stat.version) });
                self.nodes.push((path, Step::Delete(id, left)));
            },
            (Step::Look(..), Ok(Answer::Exists(Some(stat)))) => {
                self.actions.push_back(Action::NotOurs { path, owner: stat.owner });
                self.results.push(Deletion::Gone);
            },
            (Step::Look(..), Ok(Answer::Exists(None))) => self.results.push(Deletion::Gone),
            (Step::Delete(..), Ok(_)) => self.results.push(Deletion::Deleted),
            (_, Err(Failure::NoNode | Failure::SessionGone)) => self.results.push(Deletion::Gone),
            // An ACL without the delete (or read) right: trying again cannot
            // help; the node goes with the session.
            (_, Err(Failure::NoAuth)) => self.results.push(Deletion::Refused),
            // A delete at the version read refused (the version changed,
            // say by a revocation request): look again, a few times.
            (Step::Delete(_, left), Err(Failure::Other(_))) if left > 0 => {
                let id = self.send(Request::Exists { path: path.clone() });
                self.nodes.push((path, Step::Look(id, left - 1)));
            },
            // No answer, a changed version, anything else: try again.
            (_, Ok(_) | Err(_)) => self.results.push(Deletion::Pending),
        }
        self.settle();
    }

    fn node(&mut self, path: String, known_ours: bool) {
        let step = if known_ours {
            Step::Delete(self.send(Request::Delete { path: path.clone(), version: None }), 0)
        } else {
            Step::Look(self.send(Request::Exists { path: path.clone() }), LOOKS_AGAIN)
        };
        self.nodes.push((path, step));
    }

    fn send(&mut self, req: Request) -> Id {
        let id = Id(self.next);
        self.next += 1;
        self.actions.push_back(Action::Send(id, req));
        id
    }

    /// Ends the try once nothing is on its way: Refused or Pending if any
    /// node was, Deleted if one was deleted, else Gone.
    fn settle(&mut self) {
        if self.list.is_some() || !self.nodes.is_empty() {
            return;
        }
        let r = &self.results;
        let outcome = if r.contains(&Deletion::Refused) {
            Deletion::Refused
        } else if r.contains(&Deletion::Pending) {
            Deletion::Pending
        } else if r.contains(&Deletion::Deleted) {
            Deletion::Deleted
        } else {
            Deletion::Gone
        };
        self.done = true;
        self.actions.push_back(Action::Done(outcome));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acquire::Stat;

    const SESSION: i64 = 0x51;
    const NODE: &str = "/l/_c_u-lock-0000000001";

    fn actions(c: &mut Cleanup) -> Vec<Action> {
        std::iter::from_fn(|| c.poll_action()).collect()
    }

    fn ok(answer: Answer) -> Reply<String> {
        Reply { result: Ok(answer), connection: 1 }
    }

    fn err(f: Failure<String>) -> Reply<String> {
        Reply { result: Err(f), connection: 1 }
    }

    fn stat(owner: i64, version: i32) -> Stat {
        Stat { czxid: 5, pzxid: 5, owner, version }
    }

    #[test]
    fn a_node_known_ours_is_deleted_at_once() {
        let mut c = Cleanup::new(Target::Node { path: NODE.into(), known_ours: true }, SESSION);
        assert_eq!(actions(&mut c), vec![Action::Send(Id(1), Request::Delete { path: NODE.into(), version: None })]);
        c.handle(Id(1), ok(Answer::Done));
        assert_eq!(actions(&mut c), vec![Action::Done(Deletion::Deleted)]);
    }

    #[test]
    fn a_node_not_known_ours_is_looked_at_and_deleted_at_the_version_seen() {
        let mut c = Cleanup::new(Target::Node { path: NODE.into(), known_ours: false }, SESSION);
        assert_eq!(actions(&mut c), vec![Action::Send(Id(1), Request::Exists { path: NODE.into() })]);
        c.handle(Id(1), ok(Answer::Exists(Some(stat(SESSION, 3)))));
        assert_eq!(actions(&mut c), vec![Action::Send(Id(2), Request::Delete { path: NODE.into(), version: Some(3) })]);
        c.handle(Id(2), ok(Answer::Done));
        assert_eq!(actions(&mut c), vec![Action::Done(Deletion::Deleted)]);
    }

    #[test]
    fn a_delete_at_a_version_that_changed_looks_again() {
        let mut c = Cleanup::new(Target::Node { path: NODE.into(), known_ours: false }, SESSION);
        actions(&mut c);
        c.handle(Id(1), ok(Answer::Exists(Some(stat(SESSION, 3)))));
        assert_eq!(actions(&mut c), vec![Action::Send(Id(2), Request::Delete { path: NODE.into(), version: Some(3) })]);
        c.handle(Id(2), err(Failure::Other("BadVersion".into())));
        assert_eq!(actions(&mut c), vec![Action::Send(Id(3), Request::Exists { path: NODE.into() })]);
        c.handle(Id(3), ok(Answer::Exists(Some(stat(SESSION, 4)))));
        assert_eq!(actions(&mut c), vec![Action::Send(Id(4), Request::Delete { path: NODE.into(), version: Some(4) })]);
        c.handle(Id(4), ok(Answer::Done));
        assert_eq!(actions(&mut c), vec![Action::Done(Deletion::Deleted)]);
        // Not for ever: after LOOKS_AGAIN more looks, Pending.
        let mut c = Cleanup::new(Target::Node { path: NODE.into(), known_ours: false }, SESSION);
        actions(&mut c);
        let mut next = 1;
        for round in 0..=LOOKS_AGAIN {
            c.handle(Id(next), ok(Answer::Exists(Some(stat(SESSION, i32::from(round))))));
            actions(&mut c);
            c.handle(Id(next + 1), err(Failure::Other("BadVersion".into())));
            next += 2;
        }
        assert_eq!(actions(&mut c), vec![Action::Done(Deletion::Pending)]);
    }

    #[test]
    fn another_sessions_node_is_left_alone() {
        let mut c = Cleanup::new(Target::Node { path: NODE.into(), known_ours: false }, SESSION);
        actions(&mut c);
        c.handle(Id(1), ok(Answer::Exists(Some(stat(0x99, 0)))));
        assert_eq!(
            actions(&mut c),
            vec![Action::NotOurs { path: NODE.into(), owner: 0x99 }, Action::Done(Deletion::Gone)]
        );
    }

    #[test]
    fn no_node_no_session_no_answer_and_no_right_each_say_so() {
        for (f, want) in [
            (Failure::NoNode, Deletion::Gone),
            (Failure::SessionGone, Deletion::Gone),
            (Failure::Unknown, Deletion::Pending),
            (Failure::Other("BadVersion".into()), Deletion::Pending),
            (Failure::NoAuth, Deletion::Refused),
        ] {
            let mut c = Cleanup::new(Target::Node { path: NODE.into(), known_ours: true }, SESSION);
            actions(&mut c);
            c.handle(Id(1), err(f.clone()));
            assert_eq!(actions(&mut c), vec![Action::Done(want)], "{f:?}");
        }
        let mut c = Cleanup::new(Target::Node { path: NODE.into(), known_ours: false }, SESSION);
        actions(&mut c);
        c.handle(Id(1), ok(Answer::Exists(None)));
        assert_eq!(actions(&mut c), vec![Action::Done(Deletion::Gone)]);
    }

    #[test]
    fn a_prefix_deletes_each_of_our_nodes_under_it_and_only_ours() {
        let mut c = Cleanup::new(Target::Prefix { parent: "/l".into(), prefix: "_c_u-".into() }, SESSION);
        assert_eq!(
            actions(&mut c),
            vec![
                Action::Send(Id(1), Request::Probe { path: "/l".into() }),
                Action::Send(Id(2), Request::Children { path: "/l".into(), stat: false, watch: false }),
            ]
        );
        c.handle(Id(1), ok(Answer::Done));
        let names =
            vec!["_c_u-lock-0000000002".to_owned(), "_c_v-lock-0000000001".into(), "_c_u-lock-0000000003".into()];
        c.handle(Id(2), ok(Answer::Children { names: names.into(), stat: None }));
        assert_eq!(
            actions(&mut c),
            vec![
                Action::Send(Id(3), Request::Exists { path: "/l/_c_u-lock-0000000002".into() }),
                Action::Send(Id(4), Request::Exists { path: "/l/_c_u-lock-0000000003".into() }),
            ]
        );
        c.handle(Id(3), ok(Answer::Exists(Some(stat(SESSION, 0)))));
        c.handle(Id(4), ok(Answer::Exists(Some(stat(0x99, 0)))));
        c.handle(Id(5), ok(Answer::Done));
        assert_eq!(
            actions(&mut c),
            vec![
                Action::Send(Id(5), Request::Delete { path: "/l/_c_u-lock-0000000002".into(), version: Some(0) }),
                Action::NotOurs { path: "/l/_c_u-lock-0000000003".into(), owner: 0x99 },
                Action::Done(Deletion::Deleted),
            ]
        );
    }

    /// No lock path: nothing to delete. An unanswered list, or a list
    /// behind an unanswered probe (the server that answered it may not
    /// have applied our create): try again.
    #[test]
    fn a_prefix_with_no_lock_path_is_done_and_an_unanswered_list_is_pending() {
        let mut c = Cleanup::new(Target::Prefix { parent: "/l".into(), prefix: "_c_u-".into() }, SESSION);
        actions(&mut c);
        c.handle(Id(1), err(Failure::NoNode));
        c.handle(Id(2), err(Failure::NoNode));
        assert_eq!(actions(&mut c), vec![Action::Done(Deletion::Gone)]);
        let mut c = Cleanup::new(Target::Prefix { parent: "/l".into(), prefix: "_c_u-".into() }, SESSION);
        actions(&mut c);
        c.handle(Id(1), ok(Answer::Done));
        c.handle(Id(2), err(Failure::Unknown));
        assert_eq!(actions(&mut c), vec![Action::Done(Deletion::Pending)]);
        let mut c = Cleanup::new(Target::Prefix { parent: "/l".into(), prefix: "_c_u-".into() }, SESSION);
        actions(&mut c);
        c.handle(Id(1), err(Failure::Unknown));
        c.handle(Id(2), ok(Answer::Children { names: vec![].into(), stat: None }));
        assert_eq!(actions(&mut c), vec![Action::Done(Deletion::Pending)]);
    }
}

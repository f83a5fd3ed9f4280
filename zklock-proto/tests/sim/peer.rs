//! A Curator-like peer: a plain contender of the textbook recipe with the
//! same node names (`_c_<uuid>-lock-<seq>`), sharing the queue with zklock's
//! attempts. It creates its node ephemeral-sequential with the list
//! pipelined behind, holds when the list shows it first, else watches the
//! node before it with getData and lists again when that one goes. After a
//! lost reply it lists the queue and adopts the node with its protected
//! prefix (Curator's protection mode), else creates again. Unlike Curator,
//! that list goes behind a probe write, as zklock's does (protocol section
//! 4, step 3): Curator lists from whichever server it reconnected to, and
//! one behind the leader (a follower cut off with a deposed leader) lists
//! without its node: it creates a second one and leaves the first in the
//! queue until its session ends (the simulator saw it once deposed leaders
//! answered reconnects). That is Curator's to fix; the peer is here for the
//! queue it shares with zklock. It speaks the
//! same events and actions as `acquire::Attempt`, so one runner drives both.

use std::collections::VecDeque;

use zklock_proto::acquire::{Action, Answer, End, Event, Failure, Grant, Id, Leftover, OwnNode, Request, Requeue};
use zklock_proto::names::{self, Decision, LockMode};

/// What a runner drives: an attempt of zklock's machine, or a peer.
pub trait Machine {
    /// Feeds one event.
    fn handle(&mut self, ev: Event<String>);
    /// The next action, if any.
    fn poll_action(&mut self) -> Option<Action<String>>;
    /// What is left to clean up once over.
    fn leftover(&self) -> Leftover;
    /// Whether it is over.
    fn is_done(&self) -> bool;
}

impl Machine for zklock_proto::acquire::Attempt<String> {
    fn handle(&mut self, ev: Event<String>) {
        zklock_proto::acquire::Attempt::handle(self, ev)
    }
    fn poll_action(&mut self) -> Option<Action<String>> {
        zklock_proto::acquire::Attempt::poll_action(self)
    }
    fn leftover(&self) -> Leftover {
        zklock_proto::acquire::Attempt::leftover(self)
    }
    fn is_done(&self) -> bool {
        zklock_proto::acquire::Attempt::is_done(self)
    }
}

#[derive(Debug)]
enum Phase {
    /// The create is out with the list behind it.
    Create {
        create: Id,
        list: Id,
        created: Option<(String, i64)>,
        listed: Option<std::sync::Arc<[String]>>,
    },
    /// Making the lock path after NoNode.
    Parents {
        req: Id,
    },
    /// Listing the queue.
    Look {
        list: Id,
    },
    /// getData with a watch on the node before ours.
    Watch {
        get: Id,
    },
    /// Waiting for that watch.
    Wait {
        get: Id,
    },
    /// Waiting to be connected again.
    Reconnect,
    /// Listing for our protected prefix after a lost create reply, behind
    /// a probe write (whether it was answered: `None` until its reply).
    Recover {
        probe: (Id, Option<bool>),
        list: Id,
    },
    Done,
}

/// A Curator-like peer's one acquire (one uuid).
pub struct Peer {
    path: String,
    protected: String,
    name_prefix: String,
    next: u64,
    actions: VecDeque<Action<String>>,
    phase: Phase,
    /// Our node and its czxid (-1: not known, adopted by name).
    node: Option<(String, i64)>,
    unknown_create: bool,
}

impl Peer {
    /// A peer's acquire on `path` with the names of `uuid`.
    pub fn new(path: &str, uuid: &uuid::Uuid) -> Peer {
        let mut p = Peer {
            path: path.to_string(),
            protected: names::protected_prefix(uuid),
            name_prefix: names::node_name_prefix(LockMode::Exclusive, uuid),
            next: 0,
            actions: VecDeque::new(),
            phase: Phase::Done,
            node: None,
            unknown_create: false,
        };
        p.create();
        p
    }

    fn send(&mut self, r: Request) -> Id {
        self.next += 1;
        let id = Id(self.next);
        self.actions.push_back(Action::Send(id, r));
        id
    }

    fn create(&mut self) {
        let create = self.send(Request::Create {
            path: format!("{}/{}", self.path, self.name_prefix),
            data: Vec::new(),
            sequential: true,
        });
        let list = self.send(Request::Children { path: self.path.clone(), stat: false, watch: false });
        self.unknown_create = true;
        self.phase = Phase::Create { create, list, created: None, listed: None };
    }

    fn look(&mut self) {
        let list = self.send(Request::Children { path: self.path.clone(), stat: false, watch: false });
        self.phase = Phase::Look { list };
    }

    fn end(&mut self, e: End<String>) {
        self.phase = Phase::Done;
        self.actions.push_back(Action::Ended(e));
    }

    fn reconnect(&mut self) {
        self.phase = Phase::Reconnect;
        self.actions.push_back(Action::AwaitReconnect);
    }

    /// Decides on a list: first holds (the textbook recipe grants on it).
    fn decide(&mut self, children: &[String], since: Id) {
        let Some((name, czxid)) = self.node.clone() else { return self.end(End::Restart(Requeue::NodeGone)) };
        match names::decide(LockMode::Exclusive, children, &name) {
            Decision::Held => {
                self.node = None;
                self.phase = Phase::Done;
                self.actions.push_back(Action::Granted(Grant { name, czxid, watch: None, since }));
            },
            Decision::WaitOn(b) => {
                let get = self.send(Request::GetData { path: format!("{}/{b}", self.path), watch: true });
                self.phase = Phase::Watch { get };
            },
            _ => {
                self.node = None;
                self.end(End::Restart(Requeue::NodeGone));
            },
        }
    }

    fn failed(&mut self, f: Failure<String>) {
        match f {
            Failure::Unknown => self.reconnect(),
            _ => {
                self.unknown_create = false;
                self.end(End::Restart(Requeue::NodeGone))
            },
        }
    }
}

impl Machine for Peer {
    fn handle(&mut self, ev: Event<String>) {
        match ev {
            Event::Reply(id, r) => match std::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Create { create, list, mut created, mut listed } => {
                    if id == create {
                        match r.result {
                            Ok(Answer::Created { name, stat }) => {
                                self.unknown_create = false;
                                created = Some((name, stat.map_or(-1, |s| s.czxid)));
                            },
                            Err(Failure::NoNode) => {
                                self.unknown_create = false;
                                let req = self.send(Request::MakeParents { path: self.path.clone() });
                                self.phase = Phase::Parents { req };
                                return;
                            },
                            Err(f) => return self.failed(f),
                            Ok(_) => return self.end(End::Restart(Requeue::NodeGone)),
                        }
                    } else if id == list {
                        match r.result {
                            Ok(Answer::Children { names, .. }) => listed = Some(names),
                            Err(f) => {
                                // The node made (if its reply came) is ours.
                                if created.is_some() {
                                    self.node = created;
                                }
                                return self.failed(f);
                            },
                            Ok(_) => return self.end(End::Restart(Requeue::NodeGone)),
                        }
                    }
                    match (created, listed) {
                        (Some(node), Some(children)) => {
                            self.node = Some(node);
                            self.decide(&children, create);
                        },
                        (created, listed) => self.phase = Phase::Create { create, list, created, listed },
                    }
                },
                Phase::Parents { req } if id == req => match r.result {
                    Ok(_) => self.create(),
                    Err(f) => self.failed(f),
                },
                Phase::Look { list } if id == list => match r.result {
                    Ok(Answer::Children { names, .. }) => self.decide(&names, list),
                    Err(Failure::NoNode) => self.end(End::Restart(Requeue::NodeGone)),
                    Err(f) => self.failed(f),
                    Ok(_) => self.end(End::Restart(Requeue::NodeGone)),
                },
                Phase::Watch { get } if id == get => match r.result {
                    Ok(_) => {
                        self.phase = Phase::Wait { get };
                        self.actions.push_back(Action::Waiting);
                    },
                    Err(Failure::NoNode) => {
                        self.actions.push_back(Action::DropWatch(get));
                        self.look();
                    },
                    Err(f) => {
                        self.actions.push_back(Action::DropWatch(get));
                        self.failed(f);
                    },
                },
                Phase::Recover { probe: (p, None), list } if id == p => {
                    let answered = !matches!(r.result, Err(Failure::Unknown));
                    self.phase = Phase::Recover { probe: (p, Some(answered)), list };
                },
                Phase::Recover { probe: (_, answered), list } if id == list => match r.result {
                    // A list not behind an answered probe: as if unanswered.
                    Ok(_) if answered != Some(true) => self.failed(Failure::Unknown),
                    Ok(Answer::Children { names, .. }) => {
                        self.unknown_create = false;
                        match names.iter().find(|n| n.starts_with(&self.protected)) {
                            Some(n) => {
                                self.node = Some((n.clone(), -1));
                                self.decide(&names, list);
                            },
                            None => self.create(),
                        }
                    },
                    Err(f) => self.failed(f),
                    Ok(_) => self.end(End::Restart(Requeue::NodeGone)),
                },
                other => self.phase = other,
            },
            Event::Watch(id, notice) => {
                if let Phase::Wait { get } = self.phase {
                    if id == get {
                        if notice == zklock_proto::acquire::Notice::SessionEnded {
                            return self.end(End::Restart(Requeue::SessionEnded));
                        }
                        self.look();
                    }
                }
            },
            Event::Reconnected => {
                if matches!(self.phase, Phase::Reconnect) {
                    if self.node.is_some() {
                        self.look();
                    } else if self.unknown_create {
                        let probe = self.send(Request::Probe { path: self.path.clone() });
                        let list = self.send(Request::Children { path: self.path.clone(), stat: false, watch: false });
                        self.phase = Phase::Recover { probe: (probe, None), list };
                    } else {
                        self.create();
                    }
                }
            },
            Event::SessionEnded if !matches!(self.phase, Phase::Done) => {
                self.node = None;
                self.unknown_create = false;
                self.end(End::Restart(Requeue::SessionEnded));
            },
            Event::Stop { .. } if !matches!(self.phase, Phase::Done) => self.end(End::Stopped),
            _ => {},
        }
    }

    fn poll_action(&mut self) -> Option<Action<String>> {
        self.actions.pop_front()
    }

    fn leftover(&self) -> Leftover {
        Leftover {
            node: self.node.as_ref().map(|(name, czxid)| OwnNode { name: name.clone(), czxid: *czxid }),
            unknown_create: self.unknown_create,
        }
    }

    fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }
}

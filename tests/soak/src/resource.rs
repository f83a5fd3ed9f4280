//! The fenced "resource" the holders write to: a line protocol on a
//! loopback TCP port that accepts or refuses each write by its fencing
//! token (the rule is [`Fence::offer`]), and records every grant and write.
//!
//! Protocol (one line each way, per request; `<mode>` is `x` for the
//! exclusive lock, `r` / `w` for the read / write side of the read/write
//! lock, which has a fence of its own):
//!
//! | request | answer |
//! |---|---|
//! | `ENTER <mode> <cid> <token> <grant_start_ns>` (first write of a grant) | `OK` / `STALE` |
//! | `WRITE <mode> <cid> <token> <grant_start_ns>` | `OK` / `STALE` |
//! | `INTERVAL <mode> <cid> <token> <start_ns> <end_ns> <noticed_ns or -> <release or lost>` | `OK` |
//! | `READY <cid>` (before each acquire) | `GO` / `GO PATIENT` / `REST` |
//!
//! Three directives let a fault class shape the contenders' timing (see
//! `chaos.rs`): an `ENTER` or `WRITE` answer ends in ` KEEP` while the
//! contender is asked to keep holding (it then goes on writing and checking
//! past its usual few steps, until the answer no longer says `KEEP` or a
//! `check()` fails); `READY` answers `REST` while the contender is asked
//! not to start an acquire (it asks again a little later), and `GO PATIENT`
//! when its next acquire should wait longer than any fault lasts.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, BufRead, BufReader, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::analysis::{Interval, LockId, Mode, Write};
use crate::clock::mono_ns;

/// The fencing state of one lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fence {
    /// The largest token accepted, from any grant.
    pub max_any: u64,
    /// The largest token accepted from an excluding grant (exclusive or
    /// writer).
    pub max_excluding: u64,
}

impl Fence {
    /// Accepts or refuses a write carrying `token` from a grant of `mode`,
    /// and remembers it if accepted.
    ///
    /// - An excluding write (exclusive lock, or a writer) is accepted only
    ///   if its token is at least every token accepted so far, from anyone:
    ///   a writer overlaps nobody, so every grant it may follow has a
    ///   smaller token, and a larger one means a later grant exists.
    /// - A shared write (a reader) is accepted only if its token is at least
    ///   every token accepted so far from an *excluding* grant: readers hold
    ///   together and their tokens are not ordered among themselves, but a
    ///   writer granted after a reader has a larger token than that reader.
    ///
    /// Equal tokens are the same grant writing again.
    pub fn offer(&mut self, mode: Mode, token: u64) -> bool {
        let floor = if mode.excludes() { self.max_any } else { self.max_excluding };
        if token < floor {
            return false;
        }
        self.max_any = self.max_any.max(token);
        if mode.excludes() {
            self.max_excluding = self.max_excluding.max(token);
        }
        true
    }
}

/// A grant announced to the resource and not yet finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenGrant {
    /// Contender id.
    pub cid: u32,
    /// How it holds its lock.
    pub mode: Mode,
    /// Its fencing token.
    pub token: u64,
    /// Its first successful check.
    pub start: u64,
}

#[derive(Default)]
struct State {
    fences: BTreeMap<LockId, Fence>,
    writes: Vec<Write>,
    intervals: Vec<Interval>,
    /// Grants announced and not yet finished, by contender and lock (a
    /// multi-lock contender holds two).
    open: BTreeMap<(u32, LockId), OpenGrant>,
    /// Start of the latest announced grant, per lock.
    last_grant: BTreeMap<LockId, u64>,
    /// Who is asked to keep holding.
    keep: Keep,
    /// Contenders asked not to start an acquire.
    rest: BTreeSet<u32>,
    /// Contenders told `REST` since they last heard `GO`.
    resting: BTreeSet<u32>,
    /// The contender whose acquires are to be patient.
    patient: Option<u32>,
}

/// Who the resource asks to keep holding (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Keep {
    /// Nobody.
    #[default]
    Nobody,
    /// The next contender that writes on this lock; it becomes `Contender`.
    NextWriter(LockId),
    /// This contender.
    Contender(u32),
}

/// The resource server. Connections are served on their own threads until
/// the process ends.
#[derive(Clone)]
pub struct Resource {
    addr: SocketAddr,
    state: Arc<(Mutex<State>, Condvar)>,
}

impl Resource {
    /// Listens on `127.0.0.1:<free port>`.
    pub fn start() -> io::Result<Resource> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let resource = Resource { addr, state: Arc::default() };
        let r = resource.clone();
        std::thread::Builder::new().name("soak-resource".into()).spawn(move || {
            for stream in listener.incoming().flatten() {
                let r = r.clone();
                let _ = std::thread::Builder::new().name("soak-resource-conn".into()).spawn(move || r.serve(stream));
            }
        })?;
        Ok(resource)
    }

    /// Where the contenders connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn serve(&self, stream: TcpStream) {
        let _ = stream.set_nodelay(true);
        let Ok(mut out) = stream.try_clone() else { return };
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            let answer = self.handle(&line);
            if out.write_all(answer.as_bytes()).and_then(|()| out.write_all(b"\n")).is_err() {
                return;
            }
        }
    }

    fn handle(&self, line: &str) -> String {
        let arrival = mono_ns();
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok());
        let mode = f.get(1).and_then(|m| Mode::from_code(m));
        match (f.first().copied(), mode, num(2).and_then(|c| u32::try_from(c).ok()), num(3), num(4)) {
            (Some(verb @ ("ENTER" | "WRITE")), Some(mode), Some(cid), Some(token), Some(grant_start)) => {
                let enter = verb == "ENTER";
                let lock = mode.lock();
                let mut st = self.lock();
                let accepted = st.fences.entry(lock).or_default().offer(mode, token);
                st.writes.push(Write { cid, mode, token, grant_start, arrival, enter, accepted });
                if enter {
                    st.open.insert((cid, lock), OpenGrant { cid, mode, token, start: grant_start });
                    let last = st.last_grant.entry(lock).or_default();
                    *last = (*last).max(grant_start);
                }
                if st.keep == Keep::NextWriter(lock) {
                    st.keep = Keep::Contender(cid);
                }
                let keep = if st.keep == Keep::Contender(cid) { " KEEP" } else { "" };
                self.state.1.notify_all();
                format!("{}{keep}", if accepted { "OK" } else { "STALE" })
            },
            (Some("READY"), _, _, _, _) => {
                let Some(cid) = f.get(1).and_then(|c| c.parse::<u32>().ok()) else {
                    return "ERR bad ready".into();
                };
                let mut st = self.lock();
                let rest = st.rest.contains(&cid);
                if rest {
                    st.resting.insert(cid);
                } else {
                    st.resting.remove(&cid);
                }
                self.state.1.notify_all();
                match (rest, st.patient == Some(cid)) {
                    (true, _) => "REST",
                    (false, true) => "GO PATIENT",
                    (false, false) => "GO",
                }
                .into()
            },
            (Some("INTERVAL"), Some(mode), Some(cid), Some(token), Some(start)) if f.len() == 8 => {
                let Some(end) = num(5) else { return "ERR bad interval".into() };
                let noticed = num(6);
                let lost = f[7] == "lost";
                let mut st = self.lock();
                if st.open.get(&(cid, mode.lock())).is_some_and(|g| g.token == token) {
                    st.open.remove(&(cid, mode.lock()));
                }
                st.intervals.push(Interval { cid, mode, token, start, end, noticed, lost });
                "OK".into()
            },
            _ => format!("ERR cannot parse {line:?}"),
        }
    }

    /// The contender that most recently announced a grant and has not
    /// finished it, if any.
    pub fn current_holder(&self) -> Option<u32> {
        self.lock().open.values().max_by_key(|g| g.start).map(|g| g.cid)
    }

    /// Every grant announced on `lock` and not yet finished.
    pub fn open_grants(&self, lock: LockId) -> Vec<OpenGrant> {
        self.lock().open.values().filter(|g| g.mode.lock() == lock).copied().collect()
    }

    /// Asks the next contender that writes on `lock` (first write of a
    /// grant, or a later one) to keep holding, and waits up to `limit` for
    /// one to; returns it, or `None` (nobody is asked then).
    pub fn keep_next_writer(&self, lock: LockId, limit: Duration) -> Option<u32> {
        let mut st = self.lock();
        st.keep = Keep::NextWriter(lock);
        let (mut st, _) = self
            .state
            .1
            .wait_timeout_while(st, limit, |s| matches!(s.keep, Keep::NextWriter(_)))
            .unwrap_or_else(PoisonError::into_inner);
        match st.keep {
            Keep::Contender(cid) => Some(cid),
            _ => {
                st.keep = Keep::Nobody;
                None
            },
        }
    }

    /// [`Resource::keep_next_writer`] unless someone is asked to keep
    /// holding already (by another fault's thread: that one goes on).
    pub fn keep_next_writer_unless_keeping(&self, lock: LockId, limit: Duration) -> Option<u32> {
        if self.lock().keep != Keep::Nobody {
            return None;
        }
        self.keep_next_writer(lock, limit)
    }

    /// [`Resource::stop_keeping`] if `cid` is the one asked to keep
    /// holding (not one another fault's thread asked since).
    pub fn stop_keeping_of(&self, cid: u32) {
        let mut st = self.lock();
        if st.keep == Keep::Contender(cid) {
            st.keep = Keep::Nobody;
        }
    }

    /// Asks `cid` to keep holding (from its next write on, if it holds).
    pub fn keep(&self, cid: u32) {
        self.lock().keep = Keep::Contender(cid);
    }

    /// Lets whoever was asked to keep holding stop as usual.
    pub fn stop_keeping(&self) {
        self.lock().keep = Keep::Nobody;
    }

    /// Asks `cids` not to start an acquire, and waits up to `limit` until
    /// each of them has been told so (it is then not in an acquire, nor
    /// holding); returns whether they all were. Undo with [`Resource::go`].
    pub fn rest(&self, cids: &[u32], limit: Duration) -> bool {
        let mut st = self.lock();
        st.rest = cids.iter().copied().collect();
        st.resting.clear();
        let all = |s: &State| s.rest.iter().all(|c| s.resting.contains(c));
        let (st, _) = self.state.1.wait_timeout_while(st, limit, |s| !all(s)).unwrap_or_else(PoisonError::into_inner);
        all(&st)
    }

    /// Lets `cid` alone (of those resting) start acquires again, patient
    /// ones.
    pub fn go_patient(&self, cid: u32) {
        let mut st = self.lock();
        st.rest.remove(&cid);
        st.patient = Some(cid);
    }

    /// Lets every contender start acquires again, each as it usually does.
    pub fn go(&self) {
        let mut st = self.lock();
        st.rest.clear();
        st.patient = None;
    }

    /// Waits up to `limit` until every lock of `locks` has had a grant that
    /// started after `after`; returns whether they all had.
    pub fn wait_grant_after(&self, after: u64, limit: Duration, locks: &[LockId]) -> bool {
        let granted = |s: &State| locks.iter().all(|l| s.last_grant.get(l).is_some_and(|&t| t > after));
        let st = self.lock();
        let (st, _) =
            self.state.1.wait_timeout_while(st, limit, |s| !granted(s)).unwrap_or_else(PoisonError::into_inner);
        granted(&st)
    }

    /// Everything recorded: (intervals, writes in arrival order).
    pub fn snapshot(&self) -> (Vec<Interval>, Vec<Write>) {
        let st = self.lock();
        (st.intervals.clone(), st.writes.clone())
    }
}

/// A contender's connection to the resource.
pub struct ResourceClient {
    out: TcpStream,
    input: BufReader<TcpStream>,
}

impl ResourceClient {
    /// Connects to the resource at `addr`.
    pub fn connect(addr: &str) -> io::Result<ResourceClient> {
        let out = TcpStream::connect(addr)?;
        out.set_nodelay(true)?;
        let input = BufReader::new(out.try_clone()?);
        Ok(ResourceClient { out, input })
    }

    /// Sends one request and returns the answer line.
    pub fn request(&mut self, line: &str) -> io::Result<String> {
        self.out.write_all(format!("{line}\n").as_bytes())?;
        let mut answer = String::new();
        if self.input.read_line(&mut answer)? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the resource closed the connection"));
        }
        Ok(answer.trim().to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exclusive_fence_refuses_smaller_tokens() {
        let mut f = Fence::default();
        assert!(f.offer(Mode::Exclusive, 10));
        assert!(f.offer(Mode::Exclusive, 10), "the same grant again");
        assert!(f.offer(Mode::Exclusive, 12));
        assert!(!f.offer(Mode::Exclusive, 11));
    }

    #[test]
    fn a_read_write_fence_orders_writers_against_everyone_and_readers_against_writers() {
        let mut f = Fence::default();
        // Two readers share, writing in either order.
        assert!(f.offer(Mode::Read, 11));
        assert!(f.offer(Mode::Read, 10));
        // A writer after them; a stale reader's write after it is refused.
        assert!(f.offer(Mode::Write, 12));
        assert!(!f.offer(Mode::Read, 10));
        // A reader after the writer; the stale writer's write after it too.
        assert!(f.offer(Mode::Read, 13));
        assert!(!f.offer(Mode::Write, 12));
        assert!(f.offer(Mode::Read, 14));
        // A writer whose token is below a reader's: refused.
        assert!(!f.offer(Mode::Write, 13));
    }

    #[test]
    fn the_server_fences_each_lock_apart_and_tracks_open_grants() {
        let r = Resource::start().expect("listens");
        let mut c = ResourceClient::connect(&r.addr().to_string()).expect("connects");
        assert_eq!(c.request("ENTER x 1 100 5").expect("answer"), "OK");
        assert_eq!(c.request("ENTER r 2 50 6").expect("answer"), "OK", "the rw lock has a fence of its own");
        assert_eq!(c.request("WRITE w 3 40 7").expect("answer"), "STALE");
        assert_eq!(r.open_grants(LockId::Rw).len(), 1);
        assert_eq!(c.request("INTERVAL r 2 50 6 9 - release").expect("answer"), "OK");
        assert!(r.open_grants(LockId::Rw).is_empty());
        assert_eq!(r.current_holder(), Some(1));
        assert!(r.wait_grant_after(4, Duration::ZERO, &[LockId::Exclusive, LockId::Rw]));
        assert!(!r.wait_grant_after(5, Duration::ZERO, &[LockId::Exclusive]));
        assert!(c.request("ENTER q 1 1 1").expect("answer").starts_with("ERR"));
    }

    #[test]
    fn keep_and_rest_directives_reach_the_contenders_they_name() {
        let r = Resource::start().expect("listens");
        let mut c = ResourceClient::connect(&r.addr().to_string()).expect("connects");
        assert_eq!(r.keep_next_writer(LockId::Rw, Duration::from_millis(10)), None, "nobody wrote");
        assert_eq!(c.request("WRITE r 4 50 6").expect("answer"), "OK", "nobody is asked any more");
        let r2 = r.clone();
        let asked = std::thread::spawn(move || r2.keep_next_writer(LockId::Rw, Duration::from_secs(10)));
        while c.request("WRITE x 1 100 5").expect("answer") == "OK" && !asked.is_finished() {
            // Another lock's writer is not asked; the next rw writer is.
            if c.request("WRITE w 3 60 7").expect("answer") == "OK KEEP" {
                break;
            }
        }
        assert_eq!(asked.join().expect("joins"), Some(3));
        assert_eq!(c.request("WRITE w 3 60 7").expect("answer"), "OK KEEP");
        assert_eq!(c.request("WRITE r 2 40 7").expect("answer"), "STALE", "only contender 3 keeps");
        r.stop_keeping();
        assert_eq!(c.request("WRITE w 3 60 7").expect("answer"), "OK");
        r.keep(2);
        assert_eq!(c.request("ENTER r 2 70 8").expect("answer"), "OK KEEP");
        r.stop_keeping();

        assert_eq!(c.request("READY 1").expect("answer"), "GO");
        let r2 = r.clone();
        let rested = std::thread::spawn(move || r2.rest(&[1, 2], Duration::from_secs(10)));
        while !rested.is_finished() {
            for cid in [1, 2, 3] {
                let answer = c.request(&format!("READY {cid}")).expect("answer");
                if cid == 3 {
                    assert_eq!(answer, "GO", "contender 3 is not asked to rest");
                }
            }
        }
        assert!(rested.join().expect("joins"));
        assert_eq!(c.request("READY 2").expect("answer"), "REST");
        r.go_patient(2);
        assert_eq!(c.request("READY 2").expect("answer"), "GO PATIENT");
        assert_eq!(c.request("READY 1").expect("answer"), "REST");
        assert!(!r.rest(&[1, 5], Duration::from_millis(10)), "contender 5 never asked");
        r.go();
        assert_eq!(c.request("READY 2").expect("answer"), "GO");
    }
}

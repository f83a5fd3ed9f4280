//! The fenced "resource" the holders write to: a line protocol on a
//! loopback TCP port that accepts a write only if its fencing token is at
//! least the largest it has seen, and records every grant and write.
//!
//! Protocol (one line each way, per request):
//!
//! | request | answer |
//! |---|---|
//! | `ENTER <cid> <token> <grant_start_ns>` (first write of a grant) | `OK` / `STALE` |
//! | `WRITE <cid> <token> <grant_start_ns>` | `OK` / `STALE` |
//! | `INTERVAL <cid> <token> <start_ns> <end_ns> <noticed_ns or -> <release or lost>` | `OK` |

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::analysis::{Interval, Write};
use crate::clock::mono_ns;

#[derive(Default)]
struct State {
    max_token: u64,
    writes: Vec<Write>,
    intervals: Vec<Interval>,
    /// Grants announced and not yet finished: cid -> (token, start).
    open: BTreeMap<u32, (u64, u64)>,
    /// Start of the latest announced grant.
    last_grant: u64,
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
        match (f.first().copied(), num(1), num(2), num(3)) {
            (Some(verb @ ("ENTER" | "WRITE")), Some(cid), Some(token), Some(grant_start)) => {
                let Ok(cid) = u32::try_from(cid) else { return "ERR bad cid".into() };
                let enter = verb == "ENTER";
                let mut st = self.lock();
                let accepted = token >= st.max_token;
                if accepted {
                    st.max_token = token;
                }
                st.writes.push(Write { cid, token, grant_start, arrival, enter, accepted });
                if enter {
                    st.open.insert(cid, (token, grant_start));
                    st.last_grant = st.last_grant.max(grant_start);
                    self.state.1.notify_all();
                }
                if accepted { "OK" } else { "STALE" }.into()
            },
            (Some("INTERVAL"), Some(cid), Some(token), Some(start)) if f.len() == 7 => {
                let (Ok(cid), Some(end)) = (u32::try_from(cid), num(4)) else { return "ERR bad interval".into() };
                let noticed = num(5);
                let lost = f[6] == "lost";
                let mut st = self.lock();
                if st.open.get(&cid).is_some_and(|&(t, _)| t == token) {
                    st.open.remove(&cid);
                }
                st.intervals.push(Interval { cid, token, start, end, noticed, lost });
                "OK".into()
            },
            _ => format!("ERR cannot parse {line:?}"),
        }
    }

    /// The contender that most recently announced a grant and has not
    /// finished it, if any.
    pub fn current_holder(&self) -> Option<u32> {
        self.lock().open.iter().max_by_key(|(_, &(_, start))| start).map(|(&cid, _)| cid)
    }

    /// Waits up to `limit` for a grant that started after `after`; returns
    /// its start.
    pub fn wait_grant_after(&self, after: u64, limit: Duration) -> Option<u64> {
        let st = self.lock();
        let (st, _) = self
            .state
            .1
            .wait_timeout_while(st, limit, |s| s.last_grant <= after)
            .unwrap_or_else(PoisonError::into_inner);
        (st.last_grant > after).then_some(st.last_grant)
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

//! Blocking waits for a core call that release the GIL, wake when the
//! outcome comes, and still honour Ctrl-C, without waking in between.
//!
//! Python runs its signal handlers only on the main thread, between
//! bytecodes; a thread blocked in native code must come back to run them.
//! So a wait on the main thread makes a socket pair, gives its write end to
//! `signal.set_wakeup_fd` (Python's C-level handler writes a byte to it on
//! every signal, whichever thread the kernel chose) and blocks reading the
//! other end; the call's outcome wakes the same read (the waker writes a
//! byte). On a byte it looks at the outcome and runs the pending signal
//! handlers (`check_signals`): a handler that raises (KeyboardInterrupt)
//! ends the wait. The previous wakeup fd (none) is put back at the end.
//! A child forked meanwhile (from another thread or a signal handler)
//! gets the program's wakeup fd from the fork hook ([`after_fork_in_child`]).
//!
//! Other threads never run signal handlers: they just wait for the
//! outcome. Only when the main thread's wakeup fd is already someone
//! else's (an asyncio loop's signal handling, the application's own)
//! does the wait fall back to looking at the signals every [`SLICE`].

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use zklock_core::{Error, ErrorKind, PendingAcquire};

/// How long a wait sleeps between two looks at Python's pending signals
/// when it cannot be woken by them (see the module docs).
const SLICE: Duration = Duration::from_millis(50);

/// A core call in progress whose outcome a blocking method waits for.
pub(crate) trait Awaited: Send {
    /// The call's outcome.
    type Output: Send;
    /// The outcome if it is there; otherwise `cx`'s waker is woken once it
    /// may be.
    fn poll_outcome(&mut self, cx: &mut Context<'_>) -> Poll<Self::Output>;
}

/// An acquire started with `acquire_async`: its outcome comes straight
/// from the core's runtime, never through the client's event thread, so a
/// blocking acquire may be made from a state-change callback.
impl<G: Send + 'static> Awaited for PendingAcquire<G> {
    type Output = zklock_core::Result<G>;

    fn poll_outcome(&mut self, cx: &mut Context<'_>) -> Poll<Self::Output> {
        std::future::Future::poll(std::pin::Pin::new(self), cx)
    }
}

/// The outcome of a core call that completes through a callback
/// ([`completion`]).
pub(crate) struct Completion<T> {
    outcome: mpsc::Receiver<T>,
    waker: Arc<Mutex<Option<Waker>>>,
}

/// A callback for a core call (`connect_then`) and the [`Completion`] a
/// blocking wait waits on.
pub(crate) fn completion<T: Send + 'static>() -> (impl FnOnce(T) + Send + 'static, Completion<T>) {
    let (tx, rx) = mpsc::sync_channel(1);
    let waker: Arc<Mutex<Option<Waker>>> = Arc::default();
    let to_wake = waker.clone();
    let done = move |out: T| {
        let _ = tx.send(out);
        if let Some(w) = crate::locked(&to_wake).take() {
            w.wake();
        }
    };
    (done, Completion { outcome: rx, waker })
}

impl<X: Send> Awaited for Completion<zklock_core::Result<X>> {
    type Output = zklock_core::Result<X>;

    fn poll_outcome(&mut self, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // The waker first: an outcome sent after the look below wakes it.
        *crate::locked(&self.waker) = Some(cx.waker().clone());
        match self.outcome.try_recv() {
            Ok(out) => Poll::Ready(out),
            Err(mpsc::TryRecvError::Empty) => Poll::Pending,
            Err(mpsc::TryRecvError::Disconnected) => {
                Poll::Ready(Err(Error::new(ErrorKind::Internal, "the call ended without a result")))
            },
        }
    }
}

/// Waits (blocking, without the GIL: the caller detaches) until `call`'s
/// outcome is there, or `limit` passed (`None`: without limit).
fn park_until<A: Awaited>(call: &mut A, limit: Option<Duration>) -> Option<A::Output> {
    zklock_core::park_until(|cx| call.poll_outcome(cx), limit)
}

/// The socket pair of a main-thread wait: Python's wakeup fd (the write
/// end, non-blocking as Python requires) and the end the wait reads.
struct Bell {
    ring: UnixStream,
    listen: UnixStream,
}

impl Wake for Bell {
    fn wake(self: Arc<Self>) {
        // Full means a byte is waiting already: the wake is not lost.
        let _ = (&self.ring).write(&[0]);
    }
}

/// Python's wakeup fd taken for one wait on the main thread, put back when
/// dropped (with the GIL).
struct WakeupFd<'py> {
    py: Python<'py>,
    bell: Arc<Bell>,
    /// Our bell's write end in [`LENT`] for as long as the wait lasts.
    lent: OnLoan,
}

impl<'py> WakeupFd<'py> {
    /// How signals can reach a wait on this thread: our bell as the wakeup
    /// fd if this is the main thread and the fd was nobody's. Only C
    /// functions are called (Python code could run a signal handler and
    /// raise before the wait has begun).
    ///
    /// Python tells the wakeup fd only by replacing it, so the program's
    /// own fd is replaced by none for a moment and then put back. Setting
    /// an fd other than none releases the GIL (CPython `fstat`s it first,
    /// without the GIL), so another thread can fork while the fd is none:
    /// [`LENT`] tells that child's fork hook the program's fd (outside
    /// attack round 20, H4: such children had none).
    fn signals(py: Python<'py>) -> PyResult<Signals<'py>> {
        let signal = py.import("signal")?;
        // Setting none does not release the GIL (setting an fd does, see
        // above): the loan below is made before another thread can run.
        let previous = match set_wakeup_fd(&signal, -1) {
            Ok(p) => p,
            // Not the main thread (of the main interpreter): signal handlers
            // never run here.
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyValueError>(py) => return Ok(Signals::NotHere),
            Err(e) => return Err(e),
        };
        if previous != -1 {
            // Someone else's: give it back and look at the signals in slices.
            let _lent = OnLoan::new(py, -1, previous);
            set_wakeup_fd(&signal, previous)?;
            return Ok(Signals::Sliced);
        }
        let (ring, listen) = UnixStream::pair()?;
        ring.set_nonblocking(true)?;
        let ours = i64::from(ring.as_raw_fd());
        // In LENT before it is set: a child forked while it is set gets none.
        let lent = OnLoan::new(py, ours, -1);
        set_wakeup_fd(&signal, ours)?;
        Ok(Signals::Woken(WakeupFd { py, bell: Arc::new(Bell { ring, listen }), lent }))
    }
}

/// `signal.set_wakeup_fd(fd, warn_on_full_buffer=False)`: sets Python's
/// wakeup fd (-1: none) and returns the one it replaced. Raises ValueError
/// on a thread other than the main thread of the main interpreter.
fn set_wakeup_fd(signal: &Bound<'_, PyModule>, fd: i64) -> PyResult<i64> {
    let kwargs = PyDict::new(signal.py());
    kwargs.set_item("warn_on_full_buffer", false)?;
    signal.call_method("set_wakeup_fd", (fd,), Some(&kwargs))?.extract()
}

/// A wakeup fd that zklock has set in place of the program's: while
/// Python's wakeup fd is `ours`, the program's is `programs` (-1: none).
#[derive(Clone, Copy)]
struct Loan {
    ours: i64,
    programs: i64,
}

/// The [`Loan`]s of the main thread not yet settled, the newest last (a
/// signal handler run during a wait may wait too), for
/// [`after_fork_in_child`]. Locked only with the GIL held and never
/// across a call that releases it, so it is not locked while another
/// thread forks (`os.fork()` holds the GIL).
static LENT: Mutex<Vec<Loan>> = Mutex::new(Vec::new());

/// A [`Loan`] in [`LENT`] from [`OnLoan::new`] until dropped (with the
/// GIL). In a forked child it is not there: the fork hook emptied `LENT`.
struct OnLoan {
    /// The length of `LENT` before this loan.
    depth: usize,
    /// The process whose `LENT` holds it.
    pid: u32,
}

impl OnLoan {
    /// Records in [`LENT`] that zklock is about to set `ours` in place of
    /// the program's wakeup fd `programs` (with the GIL, `_py`).
    fn new(_py: Python<'_>, ours: i64, programs: i64) -> OnLoan {
        let mut lent = crate::locked(&LENT);
        lent.push(Loan { ours, programs });
        OnLoan { depth: lent.len() - 1, pid: std::process::id() }
    }

    /// Whether this process is a forked child of the one that made the
    /// loan.
    fn forked(&self) -> bool {
        std::process::id() != self.pid
    }
}

impl Drop for OnLoan {
    fn drop(&mut self) {
        if !self.forked() {
            crate::locked(&LENT).truncate(self.depth);
        }
    }
}

/// In a child forked while zklock had set a wakeup fd in place of the
/// program's (a main-thread wait's borrowed fd, or none for a moment, see
/// [`WakeupFd::signals`]): the program's is put back (the parent's wait is
/// not the child's), unless a signal handler has set one of its own
/// meanwhile.
pub(crate) fn after_fork_in_child(py: Python<'_>) {
    let loans = std::mem::take(&mut *crate::locked(&LENT));
    if loans.is_empty() {
        return;
    }
    let restored = py.import("signal").and_then(|signal| {
        let now = set_wakeup_fd(&signal, -1)?;
        // Newest first: a signal handler's wait lends itself the fd that an
        // interrupted wait had put in place of the program's.
        let programs = loans.iter().rev().fold(now, |fd, loan| if fd == loan.ours { loan.programs } else { fd });
        if programs != -1 {
            set_wakeup_fd(&signal, programs)?;
        }
        Ok(())
    });
    if let Err(e) = restored {
        e.write_unraisable(py, None);
    }
}

impl Drop for WakeupFd<'_> {
    fn drop(&mut self) {
        if self.lent.forked() {
            // A signal handler forked during the wait and this is the
            // child: its fork hook has put the program's fd back.
            return;
        }
        let ours = i64::from(self.bell.ring.as_raw_fd());
        let put_back = self.py.import("signal").and_then(|signal| {
            let now = set_wakeup_fd(&signal, -1)?;
            if now != ours {
                // A signal handler run meanwhile set one of its own: it
                // stays, and a child forked while it is none gets it.
                let _lent = OnLoan::new(signal.py(), -1, now);
                set_wakeup_fd(&signal, now)?;
            }
            Ok(())
        });
        if let Err(e) = put_back {
            e.write_unraisable(self.py, None);
        }
    }
}

/// How a wait learns of signals.
enum Signals<'py> {
    /// The main thread, woken by them through its wakeup fd.
    Woken(WakeupFd<'py>),
    /// The main thread whose wakeup fd is someone else's: every [`SLICE`].
    Sliced,
    /// Another thread: they are not its to handle.
    NotHere,
}

/// Waits for the outcome of `call` without the GIL, running Python's
/// signal handlers when a signal comes (see the module docs). If a handler
/// raises (KeyboardInterrupt on Ctrl-C), `interrupt` is called (without
/// the GIL) with the call, so that it can cancel it and clean up after it,
/// and the handler's exception is returned.
pub(crate) fn wait_for_outcome<A, I>(py: Python<'_>, call: A, interrupt: I) -> PyResult<A::Output>
where
    A: Awaited,
    I: FnOnce(A) + Send,
{
    let signals = match WakeupFd::signals(py) {
        Ok(s) => s,
        Err(e) => {
            // The call has begun: it is cancelled and cleaned up after, as
            // for a signal during the wait.
            py.detach(move || interrupt(call));
            return Err(e);
        },
    };
    let pid = std::process::id();
    let mut call = call;
    loop {
        // The call moves in and out: it is Send but not Sync.
        let (back, outcome) = match &signals {
            Signals::Woken(fd) => {
                let bell = fd.bell.clone();
                py.detach(move || {
                    let waker = Waker::from(bell.clone());
                    let outcome = match call.poll_outcome(&mut Context::from_waker(&waker)) {
                        Poll::Ready(out) => Some(out),
                        Poll::Pending => {
                            // The outcome's wake or a signal's byte; then
                            // look again (and at the signals, below).
                            let _ = (&bell.listen).read(&mut [0; 64]);
                            None
                        },
                    };
                    (call, outcome)
                })
            },
            Signals::Sliced => py.detach(move || {
                let outcome = park_until(&mut call, Some(SLICE));
                (call, outcome)
            }),
            Signals::NotHere => py.detach(move || {
                let outcome = park_until(&mut call, None);
                (call, outcome)
            }),
        };
        call = back;
        if let Some(out) = outcome {
            drop(signals);
            crate::park_if_exiting(py);
            return Ok(out);
        }
        if let Err(signal) = py.check_signals() {
            drop(signals);
            py.detach(move || interrupt(call));
            return Err(signal);
        }
        if std::process::id() != pid {
            // A signal handler forked and this is the child, come back into
            // the parent's wait: the call runs on the parent's threads (the
            // child has none of them), and reading on, the child would take
            // the wake-ups of the parent's socket (outside attack round 20,
            // H1: the parent's acquire never returned). The call is left
            // alone (the parent's), as any object inherited through fork.
            drop(signals);
            std::mem::forget(call);
            return Err(crate::py_err(Error::new(
                ErrorKind::Closed,
                "this wait belongs to the parent process (a signal handler forked while it waited)",
            )));
        }
    }
}

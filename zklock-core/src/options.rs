//! The options of a lock handle ([`LockOptions`]) and of one acquire call
//! ([`AcquireOptions`], with its [`Owner`]), and the two ways to cancel
//! acquires: per call ([`CancelToken`]) and per handle ([`CancelHandle`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::error::{Error, Result};

/// Options for a lock handle.
#[derive(Clone, Debug, Default)]
pub struct LockOptions {
    pub(crate) data: Vec<u8>,
    pub(crate) reentrant: bool,
}

impl LockOptions {
    /// Makes the handle reentrant per owner, as Curator's
    /// `InterProcessMutex` is per thread: an acquire by an [`Owner`] that
    /// holds the lock through this handle (or a clone) gets another guard
    /// on the same node at once; the node is deleted when the last of them
    /// is released. A blocking acquire's owner is the calling thread unless
    /// its options name one ([`AcquireOptions::owner`]); an async acquire
    /// has an owner only if its options name one (a future may complete on
    /// any thread). Other owners, and acquires without one, are contenders
    /// like anyone else. Default: not reentrant (a thread that acquires
    /// twice waits behind itself, as with `std::sync::Mutex`).
    pub fn reentrant(mut self) -> Self {
        self.reentrant = true;
        self
    }

    /// Bytes stored in our lock node, shown to other participants (for
    /// example a host name). Default: empty. At most 64 KiB, and never the
    /// bytes `__REVOKE__` (Curator's revocation request).
    pub fn data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.data = data.into();
        self
    }

    /// Stores `"<hostname>/<pid>"` in our lock node.
    pub fn identify_process(self) -> Self {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_else(|_| "unknown-host".to_owned());
        self.data(format!("{host}/{}", std::process::id()))
    }

    /// Checks the options (the lock constructors and `acquire` do too):
    /// for checking a user's input before connecting.
    ///
    /// # Errors
    /// `InvalidArgument` for data over 64 KiB or Curator's `__REVOKE__`.
    pub fn validate(&self) -> Result<()> {
        if self.data.len() > 64 * 1024 {
            return Err(Error::invalid_argument("lock node data must be at most 64 KiB"));
        }
        if self.data == b"__REVOKE__" {
            return Err(Error::invalid_argument(
                "lock node data must not be __REVOKE__ (Curator's revocation request)",
            ));
        }
        Ok(())
    }
}

/// Cancels the acquires in progress on one lock handle, from any thread.
#[derive(Clone)]
pub struct CancelHandle {
    state: Arc<CancelState>,
}

impl CancelHandle {
    /// The handle of a lock handle's cancel state.
    pub(crate) fn of(state: Arc<CancelState>) -> CancelHandle {
        CancelHandle { state }
    }

    /// Makes every acquire that is in progress on the lock handle fail with
    /// `Cancelled` (and delete its node). An acquire that starts later is
    /// not affected. Never blocks; safe from signal-handling threads and
    /// callbacks.
    pub fn cancel(&self) {
        self.state.epoch.fetch_add(1, Ordering::AcqRel);
        self.state.notify.notify_waiters();
    }
}

/// What a lock handle's [`CancelHandle`]s and its acquires share: each
/// cancel moves the epoch and wakes the acquires in progress.
#[derive(Default)]
pub(crate) struct CancelState {
    pub(crate) epoch: AtomicU64,
    pub(crate) notify: Notify,
}

/// Cancels the one acquire call (or calls) it is given to, from any thread
/// (see [`AcquireOptions::cancel_token`]).
///
/// Make it before the call and keep a clone: [`CancelToken::cancel`] makes
/// the calls that were given it fail with `Cancelled` (their nodes are
/// deleted), whether they are waiting now or start later: a cancel that
/// lands before the call starts is not lost. A cancel that comes after the
/// grant is too late: the call returns its guard (a dropped future releases
/// it). Other calls on the same lock
/// handle are not affected. Cheap to clone (clones are one token);
/// `Send + Sync`.
#[derive(Clone, Debug, Default)]
pub struct CancelToken {
    token: tokio_util::sync::CancellationToken,
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Cancels every call given this token, now and later. Idempotent;
    /// never blocks; safe from signal-handling threads and callbacks.
    pub fn cancel(&self) {
        self.token.cancel();
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }
}

/// Who an acquire is for: the key by which a reentrant handle
/// ([`LockOptions::reentrant`]) reenters a hold, and by which a read/write
/// pair ([`crate::ReadWriteLock`]) downgrades a write hold or refuses an
/// upgrade. A thread ([`Owner::current_thread`], what a blocking acquire
/// uses unless told otherwise) or an owner of the caller's own making
/// ([`Owner::new`]: a task, a request, a C event loop's job), given to
/// each acquire in [`AcquireOptions::owner`]. `Copy`, `Send + Sync`;
/// owners compare equal only to themselves (and their copies).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Owner(OwnerKey);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum OwnerKey {
    Thread(std::thread::ThreadId),
    Made(u64),
}

impl Owner {
    /// The calling thread.
    pub fn current_thread() -> Owner {
        Owner(OwnerKey::Thread(std::thread::current().id()))
    }

    /// A new owner, equal to no other (never to a thread).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Owner {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Owner(OwnerKey::Made(NEXT.fetch_add(1, Ordering::Relaxed)))
    }
}

/// Options for one acquire call: how long it may wait, how it can be
/// cancelled, and who it is for. The default waits without limit, has no
/// cancel token, and its owner is the calling thread for a blocking call
/// and no one for an async one (see [`AcquireOptions::owner`]).
#[derive(Clone, Debug, Default)]
pub struct AcquireOptions {
    timeout: Option<Duration>,
    cancel: Option<CancelToken>,
    owner: Option<Owner>,
    /// The deadline itself, when the caller has one already (a multi-lock's
    /// members share theirs); else the positive `timeout` counts from the
    /// call. Not for a try-once (zero) timeout.
    until: Option<Instant>,
}

impl AcquireOptions {
    /// Waits without limit, no cancel token.
    pub fn new() -> AcquireOptions {
        AcquireOptions::default()
    }

    /// Waits at most `timeout` in total (`None`: no limit; zero: try once
    /// without waiting, see [`crate::Lock::try_acquire`]). A timeout too large to
    /// represent as a deadline is no limit.
    pub fn timeout(mut self, timeout: Option<Duration>) -> AcquireOptions {
        self.timeout = timeout;
        self.until = None;
        self
    }

    /// The call fails with `Cancelled` once `token` is cancelled, even if
    /// it was cancelled before the call started.
    pub fn cancel_token(mut self, token: CancelToken) -> AcquireOptions {
        self.cancel = Some(token);
        self
    }

    /// The call is `owner`'s: on a reentrant handle it reenters `owner`'s
    /// hold, and on a read/write pair `owner`'s hold of the other side
    /// downgrades (write held, read asked) or is refused (read held, write
    /// asked: `WouldDeadlock`). Without it a blocking acquire is the calling
    /// thread's and an async one is no one's (no reentrancy, no pair rule).
    /// Only a hold is reentered: two acquires of one owner that both start
    /// before it holds (tasks sharing an owner) each queue a node, and the
    /// second waits behind the first's until that one is released (or its
    /// own timeout).
    pub fn owner(mut self, owner: Owner) -> AcquireOptions {
        self.owner = Some(owner);
        self
    }

    /// The owner given to [`AcquireOptions::owner`], if any.
    pub(crate) fn owner_given(&self) -> Option<Owner> {
        self.owner
    }

    /// The cancellation of one acquire call: a child of the caller's
    /// token, so that the call's own cancel (a dropped future) reaches no
    /// other call.
    pub(crate) fn call_token(&self) -> tokio_util::sync::CancellationToken {
        self.cancel.as_ref().map_or_else(Default::default, |t| t.token.child_token())
    }

    /// These options with a cancel token of one call's own (a child of
    /// the caller's, if any: [`AcquireOptions::call_token`]), and that
    /// call's token, which cancels it (and nothing else).
    pub(crate) fn for_one_call(&self) -> (AcquireOptions, tokio_util::sync::CancellationToken) {
        let token = self.call_token();
        (self.clone().cancel_token(CancelToken { token: token.clone() }), token)
    }

    /// The wait limit given to [`AcquireOptions::timeout`].
    pub(crate) fn wait_limit(&self) -> Option<Duration> {
        self.timeout
    }

    /// When the call must end: the deadline given to
    /// [`AcquireOptions::until`], else `timeout` from now (`None`: no
    /// limit, also for a timeout too large to represent).
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.until.or_else(|| self.timeout.and_then(|t| Instant::now().checked_add(t)))
    }

    /// These options with `until` as the deadline of a positive timeout
    /// (see the field).
    pub(crate) fn until(mut self, until: Option<Instant>) -> AcquireOptions {
        self.until = until;
        self
    }
}

impl From<Option<Duration>> for AcquireOptions {
    /// Options that wait at most `timeout` (see [`AcquireOptions::timeout`]).
    fn from(timeout: Option<Duration>) -> AcquireOptions {
        AcquireOptions::new().timeout(timeout)
    }
}

impl From<Duration> for AcquireOptions {
    /// Options that wait at most `timeout` (zero: try once).
    fn from(timeout: Duration) -> AcquireOptions {
        AcquireOptions::new().timeout(Some(timeout))
    }
}

impl From<&AcquireOptions> for AcquireOptions {
    fn from(options: &AcquireOptions) -> AcquireOptions {
        options.clone()
    }
}

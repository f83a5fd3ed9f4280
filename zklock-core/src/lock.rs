//! The public lock handles and per-call options: [`Lock`], [`ReadWriteLock`],
//! [`LockOptions`], [`AcquireOptions`], [`CancelToken`]. The engine behind
//! them: `acquire.rs` (queue and grant), `holding.rs` (monitor, guard,
//! release), `cleanup.rs` (deleting our nodes), `driver.rs` (the rules of
//! each lock kind).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::acquire::{acquire, Ctx, Downgrade, SeqHint};
use crate::client::Client;
use crate::error::{Error, ErrorKind, Result};
use crate::holding::{Guard, Holding};
use crate::names::LockMode;

/// Options for a lock handle.
#[derive(Clone, Debug, Default)]
pub struct LockOptions {
    pub(crate) data: Vec<u8>,
    pub(crate) reentrant: bool,
}

impl LockOptions {
    /// Makes the handle reentrant per thread, as Curator's
    /// `InterProcessMutex`: a blocking acquire (`acquire`, `acquire_with`,
    /// `try_acquire`, `begin_acquire`) by a thread that holds the lock
    /// through this handle (or a clone) gets another guard on the same node
    /// at once; the node is deleted when the last of them is released.
    /// Other threads, and every async or callback acquire (which may
    /// complete on any thread), are contenders like anyone else. Default:
    /// not reentrant (a thread that acquires twice waits behind itself, as
    /// with `std::sync::Mutex`).
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

/// What a holder knows about its lock (protocol doc section 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum LockState {
    /// Held, and the session is connected and answering.
    Held = 1,
    /// The connection is lost or the server stopped answering: the lock may
    /// still be ours, but that cannot be known; act as if it is not. Goes
    /// back to `Held` after reconnecting with the same session and finding
    /// our node still ours.
    Suspended = 2,
    /// Lost for good: session expired, our node deleted, or the re-check
    /// after a reconnect failed. Another client may hold the lock.
    Lost = 3,
    /// Released by us.
    Released = 4,
}

/// The outcome of [`Guard::release`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseStatus {
    /// Our node is deleted (or this was an inner reentrant release and the
    /// lock stays held by the handle's other guards).
    Released,
    /// The delete could not be confirmed (connection trouble); it is retried
    /// in the background until it succeeds or the session ends.
    Pending,
}

impl LockState {
    /// The state's name, the same in every language: `"HELD"`,
    /// `"SUSPENDED"`, `"LOST"`, `"RELEASED"` (the front ends show these;
    /// C has the enum `zklock_state` of the same names).
    pub fn name(self) -> &'static str {
        match self {
            LockState::Held => "HELD",
            LockState::Suspended => "SUSPENDED",
            LockState::Lost => "LOST",
            LockState::Released => "RELEASED",
        }
    }
}

impl ReleaseStatus {
    /// `"RELEASED"` or `"PENDING"`.
    pub fn name(self) -> &'static str {
        match self {
            ReleaseStatus::Released => "RELEASED",
            ReleaseStatus::Pending => "PENDING",
        }
    }
}

/// Cancels the acquires in progress on one lock handle, from any thread.
#[derive(Clone)]
pub struct CancelHandle {
    state: Arc<CancelState>,
}

impl CancelHandle {
    /// Makes every acquire that is in progress on the lock handle fail with
    /// `Cancelled` (and delete its node). An acquire that starts later is
    /// not affected. Never blocks; safe from signal-handling threads and
    /// callbacks.
    pub fn cancel(&self) {
        self.state.epoch.fetch_add(1, Ordering::AcqRel);
        self.state.notify.notify_waiters();
    }
}

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

/// Options for one acquire call: how long it may wait and how it can be
/// cancelled. The default waits without limit and has no cancel token.
#[derive(Clone, Debug, Default)]
pub struct AcquireOptions {
    timeout: Option<Duration>,
    cancel: Option<CancelToken>,
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
    /// without waiting, see [`Lock::try_acquire`]). A timeout too large to
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

    /// The wait limit given to [`AcquireOptions::timeout`].
    pub(crate) fn wait_limit(&self) -> Option<Duration> {
        self.timeout
    }

    /// These options with `until` as the deadline of a positive timeout
    /// (see the field).
    pub(crate) fn until(mut self, until: Option<Instant>) -> AcquireOptions {
        self.until = until;
        self
    }
}

impl From<Option<Duration>> for AcquireOptions {
    fn from(timeout: Option<Duration>) -> AcquireOptions {
        AcquireOptions::new().timeout(timeout)
    }
}

/// A lock handle: exclusive, read or write side, on one path.
///
/// Every acquire is its own contender: its own node in the queue, its own
/// guard. Threads and tasks that share one handle (or its clones) exclude
/// each other like separate clients do, and a thread that acquires a lock
/// it holds waits behind itself, unless the handle was made reentrant
/// ([`LockOptions::reentrant`]: per thread, blocking calls). `Lock` is
/// `Send + Sync` and cheap to clone; clones are the same handle (one
/// [`Lock::cancel`], one reentrancy). Its methods without `_async` block
/// the calling thread; the futures of the `_async` ones run on the client's
/// runtime and can be awaited from any executor.
#[derive(Clone)]
pub struct Lock {
    inner: Arc<LockInner>,
}

/// What the clones of one [`Lock`] share.
struct LockInner {
    client: Client,
    path: String,
    mode: LockMode,
    options: LockOptions,
    cancel: Arc<CancelState>,
    held: HeldSlot,
    /// The other side of a [`ReadWriteLock`] (its held slot), if any.
    sibling: Option<HeldSlot>,
    /// The write side of a pair: its read side, for [`Guard::downgrade`].
    pair_read: Option<Lock>,
    seq_hint: Arc<SeqHint>,
    /// How many hold at once: 1, or a semaphore's permits.
    permits: usize,
}

/// The nodes a handle holds now, each with the thread whose blocking
/// acquire was granted it (for reentrancy and the pair's rules).
pub(crate) type HeldSlot = Arc<Mutex<Vec<Held>>>;

/// One node a handle holds.
pub(crate) struct Held {
    /// The thread of the blocking acquire that was granted it; `None` for
    /// an async or callback acquire.
    pub(crate) owner: Option<ThreadId>,
    pub(crate) holding: Arc<Holding>,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock").field("path", &self.inner.path).field("mode", &self.inner.mode).finish()
    }
}

impl Lock {
    pub(crate) fn new(client: Client, path: &str, mode: LockMode, options: LockOptions) -> Lock {
        Self::with_slots(client, path, mode, options, 1, Arc::default(), None, None)
    }

    /// A semaphore's handle: leases of `permits` on `path`.
    pub(crate) fn semaphore(client: Client, path: &str, permits: usize, options: LockOptions) -> Lock {
        Self::with_slots(client, path, LockMode::Lease, options, permits, Arc::default(), None, None)
    }

    #[allow(clippy::too_many_arguments)]
    fn with_slots(
        client: Client,
        path: &str,
        mode: LockMode,
        options: LockOptions,
        permits: usize,
        held: HeldSlot,
        sibling: Option<HeldSlot>,
        pair_read: Option<Lock>,
    ) -> Lock {
        Lock {
            inner: Arc::new(LockInner {
                client,
                path: path.to_owned(),
                mode,
                options,
                cancel: Arc::default(),
                held,
                sibling,
                pair_read,
                seq_hint: Arc::default(),
                permits,
            }),
        }
    }

    /// What the calling thread's hold of the other side of this handle's
    /// read/write pair means for its blocking acquire: refuse an upgrade,
    /// or downgrade (the write node's sequence). Async and callback
    /// acquires (`owner` None) have no thread: no rule (an explicit
    /// downgrade is [`Guard::downgrade`]).
    fn pair_rule(&self, owner: Option<ThreadId>) -> Result<Option<Downgrade>> {
        let (Some(sibling), Some(owner)) = (&self.inner.sibling, owner) else { return Ok(None) };
        let other = sibling.lock().ok().and_then(|held| {
            held.iter()
                .find(|h| h.owner == Some(owner) && h.holding.is_live())
                .map(|h| Downgrade { sequence: h.holding.sequence, write_node: h.holding.node_path() })
        });
        match (self.inner.mode, other) {
            (LockMode::Write, Some(_)) => Err(Error::new(
                ErrorKind::WouldDeadlock,
                format!(
                    "read-to-write upgrade on {} refused: this thread holds the read lock, and waiting for the \
                     write lock behind it would deadlock; release the read lock first",
                    self.inner.path
                ),
            )),
            (LockMode::Read, Some(downgrade)) => Ok(Some(downgrade)),
            _ => Ok(None),
        }
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// The client this handle belongs to.
    pub(crate) fn client(&self) -> &Client {
        &self.inner.client
    }

    /// The mode of this handle.
    pub fn mode(&self) -> LockMode {
        self.inner.mode
    }

    /// How many acquires of this kind hold at once: a semaphore's permits
    /// (see [`Client::semaphore`]); 1 for every lock and an election.
    pub fn permits(&self) -> usize {
        self.inner.permits
    }

    /// Acquires the lock, waiting at most `timeout` in total (`None`: no
    /// limit; zero: try once without waiting). Returns a guard; the lock is
    /// held until it is released or dropped (on a reentrant handle: until
    /// every guard of its node is). Blocks the calling thread; [`Lock::acquire_async`] is the same call as a
    /// future. `acquire(t)` is `acquire_with(AcquireOptions::new().timeout(t))`.
    ///
    /// One deadline covers every wait and retry. On timeout, cancel or error
    /// our node is deleted (in the background if ZooKeeper cannot be reached
    /// now). A session that expires while waiting costs our place: we
    /// queue again with a new session.
    ///
    /// # Errors
    /// `ConnectionLoss` if this thread holds the lock through a reentrant
    /// handle but it is not safely held now (suspended: see
    /// [`Guard::check`]); `WouldDeadlock` for a read-to-write upgrade on a
    /// pair (see [`ReadWriteLock`]); `Timeout`, `Cancelled`
    /// (see [`Lock::cancel_handle`]), `Closed`,
    /// `InvalidArgument` for bad lock options, `ZooKeeper` for refusals such
    /// as missing permissions on the lock path.
    pub fn acquire(&self, timeout: Option<Duration>) -> Result<Guard> {
        self.acquire_with(&AcquireOptions::new().timeout(timeout))
    }

    /// [`Lock::acquire`] with per-call options: a timeout and a
    /// [`CancelToken`] that cancels this call only (and that may be
    /// cancelled before the call starts). Blocks the calling thread.
    ///
    /// # Errors
    /// As [`Lock::acquire`]; `Cancelled` once the call's token is cancelled.
    pub fn acquire_with(&self, options: &AcquireOptions) -> Result<Guard> {
        let call = call_token(options);
        let work = self.start_acquire(options, call, Some(std::thread::current().id()), None)?;
        self.inner.client.shared().block_on(work)?
    }

    /// [`Lock::acquire_with`] as a future that any executor can await (the
    /// work runs on the client's own runtime; the calling thread never
    /// blocks). Dropping the future before it completes cancels the call:
    /// our node is deleted as for a timeout, and a guard granted at that
    /// moment is released. Never reentrant, and no implicit downgrade on a
    /// pair (a future has no thread): use [`Guard::downgrade_async`].
    ///
    /// # Errors
    /// As [`Lock::acquire_with`].
    pub fn acquire_async(&self, options: AcquireOptions) -> impl Future<Output = Result<Guard>> + Send + 'static {
        let call = call_token(&options);
        let started =
            self.start_acquire(&options, call.clone(), None, None).map(|work| self.inner.client.shared().run(work));
        // Cancels the call if this future is dropped before its output, also
        // if it is dropped without ever being polled.
        let on_drop = call.drop_guard();
        async move {
            let out = started?.await;
            on_drop.disarm();
            out?
        }
    }

    /// [`Lock::acquire_with`] completing through `done`, for programs with
    /// their own event loop: returns at once, and `done` is called exactly
    /// once with the outcome, on the client's event thread (where blocking
    /// zklock calls are allowed; it should return promptly, as other
    /// callbacks wait). Cancel through the options' [`CancelToken`]. Never
    /// reentrant, as [`Lock::acquire_async`]. Do not wait for `done` on
    /// the event thread itself (in a state-change or completion callback):
    /// it would wait for itself; use [`Lock::begin_acquire`] there.
    ///
    /// # Errors
    /// An error found before the call starts (`Closed`, `InvalidArgument`,
    /// a suspended reentrant hold) is returned here, and then `done` is
    /// never called.
    pub fn acquire_then(
        &self,
        options: &AcquireOptions,
        done: impl FnOnce(Result<Guard>) + Send + 'static,
    ) -> Result<()> {
        let work = self.start_acquire(options, call_token(options), None, None)?;
        self.inner.client.shared().spawn_then(work, done)
    }

    /// Starts [`Lock::acquire_with`] and returns at once with the call in
    /// progress, for a blocking caller that must do other work while it
    /// waits (Python checks for Ctrl-C between slices of the wait): wait
    /// for the outcome in slices with [`PendingAcquire::wait_timeout`].
    /// Nothing but the caller's own thread waits (no callback thread is
    /// involved, so this may be used from the client's event thread). A
    /// blocking call of the calling thread: reentrant on a reentrant handle.
    ///
    /// # Errors
    /// An error found before the call starts (`Closed`, `InvalidArgument`,
    /// `Cancelled`, a suspended reentrant hold); everything else is the
    /// outcome.
    pub fn begin_acquire(&self, options: &AcquireOptions) -> Result<PendingAcquire> {
        let call = call_token(options);
        let work = self.start_acquire(options, call.clone(), Some(std::thread::current().id()), None)?;
        let shared = self.inner.client.shared();
        if shared.forked() {
            return Err(shared.closed_error());
        }
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        shared.handle.spawn(async move {
            let _ = tx.send(work.await);
        });
        Ok(PendingAcquire { outcome: rx, call: Some(call.drop_guard()) })
    }

    /// Tries once without waiting: `Ok(None)` if someone else holds the lock.
    ///
    /// # Errors
    /// As [`Lock::acquire`], except that a held lock is not an error.
    pub fn try_acquire(&self) -> Result<Option<Guard>> {
        try_once_outcome(self.acquire(Some(Duration::ZERO)))
    }

    /// [`Lock::try_acquire`] as a future (see [`Lock::acquire_async`]).
    ///
    /// # Errors
    /// As [`Lock::try_acquire`].
    pub fn try_acquire_async(&self) -> impl Future<Output = Result<Option<Guard>>> + Send + 'static {
        let acquire = self.acquire_async(AcquireOptions::new().timeout(Some(Duration::ZERO)));
        async move { try_once_outcome(acquire.await) }
    }

    /// Checks what can be checked at once and returns the acquire's work,
    /// to run on the client's runtime. `owner`: the thread of a blocking
    /// call (reentrancy, the pair's rules); `downgrade`: an explicit
    /// downgrade from the write node of this sequence.
    pub(crate) fn start_acquire(
        &self,
        options: &AcquireOptions,
        call: tokio_util::sync::CancellationToken,
        owner: Option<ThreadId>,
        downgrade: Option<Downgrade>,
    ) -> Result<Pin<Box<dyn Future<Output = Result<Guard>> + Send>>> {
        if self.inner.client.is_closed() {
            return Err(self.inner.client.shared().closed_error());
        }
        self.inner.options.validate()?;
        if call.is_cancelled() {
            return Err(Error::cancelled("acquire"));
        }
        if let Some(g) = self.reenter(owner)? {
            return Ok(Box::pin(std::future::ready(Ok(g))));
        }
        let downgrade = match downgrade {
            Some(d) => Some(d),
            None => self.pair_rule(owner)?,
        };
        let shared = self.inner.client.shared().clone();
        let epoch = self.inner.cancel.epoch.load(Ordering::Acquire);
        let timeout = options.timeout;
        let try_once = timeout == Some(Duration::ZERO);
        // A serialised kind (a semaphore) queues under one child of the path
        // and takes a mutex on another (driver::Layout).
        let (path, mutex) = match self.inner.mode.driver().layout() {
            Some(l) => (format!("{}/{}", self.inner.path, l.queue), Some(format!("{}/{}", self.inner.path, l.mutex))),
            None => (self.inner.path.clone(), None),
        };
        let ctx = Ctx {
            shared: shared.clone(),
            path,
            mode: self.inner.mode,
            data: self.inner.options.data.clone(),
            // Trying once must not wait for a silent server either: it has
            // the operation timeout. A timeout too large to represent is no
            // deadline at all.
            deadline: if try_once {
                Instant::now().checked_add(shared.options.operation_timeout)
            } else {
                options.until.or_else(|| timeout.and_then(|t| Instant::now().checked_add(t)))
            },
            try_once,
            downgrade,
            cancel: self.inner.cancel.clone(),
            epoch,
            call,
            seq_hint: self.inner.seq_hint.clone(),
            permits: self.inner.permits,
            mutex,
        };
        let lock = self.clone();
        Ok(Box::pin(async move {
            let holding = acquire(ctx).await?;
            if let Ok(mut held) = lock.inner.held.lock() {
                held.push(Held { owner, holding: holding.clone() });
            }
            Ok(lock.guard(holding))
        }))
    }

    /// A new guard of this handle on `holding`.
    fn guard(&self, holding: Arc<Holding>) -> Guard {
        Guard {
            client: self.inner.client.clone(),
            holding,
            slot: self.inner.held.clone(),
            pair_read: self.inner.pair_read.clone(),
            released: Default::default(),
        }
    }

    /// A handle that cancels this lock's acquires in progress, from any thread.
    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle { state: self.inner.cancel.clone() }
    }

    /// Cancels the acquires in progress on this handle (see [`CancelHandle`]).
    pub fn cancel(&self) {
        self.cancel_handle().cancel()
    }

    /// Whether an acquire through this handle (or a clone) holds the lock
    /// now (held or suspended; not once the client is closed).
    pub fn is_held(&self) -> bool {
        self.inner.held.lock().is_ok_and(|held| {
            held.iter().any(|h| matches!(h.holding.reported_state(), LockState::Held | LockState::Suspended))
        })
    }

    /// On a reentrant handle, a blocking acquire by a thread that holds a
    /// live node of it counts one more guard on that node, but only while
    /// it is safely held (a reentrant grant is a grant: it must not be made
    /// on a lock that may already be someone else's). A lock that is
    /// suspended or past its safety clock fails the acquire with the error
    /// [`Guard::check`] gives; a lost one is not reentered (`None`: acquire
    /// anew).
    fn reenter(&self, owner: Option<ThreadId>) -> Result<Option<Guard>> {
        let Some(owner) = owner.filter(|_| self.inner.options.reentrant) else { return Ok(None) };
        let holding = {
            let Ok(held) = self.inner.held.lock() else { return Ok(None) };
            let Some(h) = held.iter().find(|h| h.owner == Some(owner) && h.holding.is_live()) else {
                return Ok(None);
            };
            h.holding.check()?;
            h.holding.count.fetch_add(1, Ordering::AcqRel);
            h.holding.clone()
        };
        Ok(Some(self.guard(holding)))
    }
}

/// A read/write lock on one path: a read side and a write side that know
/// each other (Curator `InterProcessReadWriteLock` compatible).
///
/// - Readers share; a writer excludes everyone; FIFO: a reader queued after
///   a waiting writer waits for it, so writers do not starve.
/// - Write to read **downgrade**: [`Guard::downgrade`] on a write guard of
///   the pair, or a blocking acquire of the read side by the thread that
///   holds the write side (Curator's rule), succeeds at once (the read
///   node takes the write node's sequence, so no writer queued behind can
///   slip in); then release the write guard. A downgrade whose write node
///   turns out to be gone fails with `LockLost` and makes no read node;
///   once the write guard is known lost, the thread's read acquire is an
///   ordinary one and queues like any reader's.
/// - Read to write **upgrade** by the thread that holds the read side is
///   refused with `WouldDeadlock` (waiting for the write lock behind its
///   own read node would never end).
///
/// Every acquire of either side is its own contender, as for [`Lock`]
/// (reentrant per thread with [`LockOptions::reentrant`]). `Send + Sync`;
/// cheap to clone (clones are the same pair).
#[derive(Clone, Debug)]
pub struct ReadWriteLock {
    read: Lock,
    write: Lock,
}

impl ReadWriteLock {
    pub(crate) fn new(client: Client, path: &str, options: LockOptions) -> ReadWriteLock {
        let (read_slot, write_slot): (HeldSlot, HeldSlot) = (Arc::default(), Arc::default());
        let read = Lock::with_slots(
            client.clone(),
            path,
            LockMode::Read,
            options.clone(),
            1,
            read_slot.clone(),
            Some(write_slot.clone()),
            None,
        );
        let write = Lock::with_slots(
            client,
            path,
            LockMode::Write,
            options,
            1,
            write_slot,
            Some(read_slot),
            Some(read.clone()),
        );
        ReadWriteLock { read, write }
    }

    /// The read (shared) side. Clone it for an owned handle (see
    /// [`ReadWriteLock::into_sides`]).
    pub fn read_lock(&self) -> &Lock {
        &self.read
    }

    /// The write (exclusive) side. Clone it for an owned handle.
    pub fn write_lock(&self) -> &Lock {
        &self.write
    }

    /// The two sides as owned handles, `(read, write)`: they still know
    /// each other (downgrade, upgrade refused) when kept apart.
    pub fn into_sides(self) -> (Lock, Lock) {
        (self.read, self.write)
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        self.read.path()
    }
}

/// An acquire in progress (see [`Lock::begin_acquire`]). Dropping it
/// before its outcome was taken cancels the call (its node is deleted; a
/// guard granted at that moment is released). `Send`, not `Sync`.
pub struct PendingAcquire {
    outcome: std::sync::mpsc::Receiver<Result<Guard>>,
    /// Cancels the call when dropped; disarmed once the outcome is taken.
    call: Option<tokio_util::sync::DropGuard>,
}

impl PendingAcquire {
    /// Waits up to `timeout` for the outcome: `None` while the call goes
    /// on, `Some` once (later calls give an `Internal` error).
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<Result<Guard>> {
        let outcome = match self.outcome.recv_timeout(timeout) {
            Ok(out) => out,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => return None,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                Err(Error::internal("the acquire's outcome was already taken"))
            },
        };
        if let Some(call) = self.call.take() {
            call.disarm();
        }
        Some(outcome)
    }

    /// Cancels the call: it ends with `Cancelled` (or with the guard, if it
    /// was granted first). Never blocks; idempotent.
    pub fn cancel(&self) {
        if let Some(call) = &self.call {
            call.token().cancel();
        }
    }
}

impl std::fmt::Debug for PendingAcquire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingAcquire").field("done", &self.call.is_none()).finish()
    }
}

/// The cancellation of one acquire call: a child of the caller's token, so
/// that the call's own cancel (a dropped future) reaches no other call.
fn call_token(options: &AcquireOptions) -> tokio_util::sync::CancellationToken {
    options.cancel.as_ref().map_or_else(Default::default, |t| t.token.child_token())
}

/// A try-once acquire's outcome: its `Timeout` means "held by someone else".
fn try_once_outcome(out: Result<Guard>) -> Result<Option<Guard>> {
    match out {
        Ok(g) => Ok(Some(g)),
        Err(e) if e.kind() == ErrorKind::Timeout => Ok(None),
        Err(e) => Err(e),
    }
}

/// Compile-time check of the thread-safety promises in the docs.
const _: fn() = || {
    fn is<T: Send + Sync>() {}
    is::<Client>();
    is::<Lock>();
    is::<Guard>();
    is::<CancelHandle>();
    is::<CancelToken>();
    is::<AcquireOptions>();
    is::<ReadWriteLock>();
};

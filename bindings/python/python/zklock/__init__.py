"""zklock: distributed locks on Apache ZooKeeper, with a Rust core.

zklock follows ZooKeeper's ephemeral-sequential queue recipe with Apache
Curator's node names, so a zklock lock and a Curator ``InterProcessMutex``
(or a kazoo ``Lock`` with ``extra_lock_patterns=["-lock-"]``) on the same
path exclude each other.

Example::

    import zklock

    with zklock.Client("zk1:2181,zk2:2181/myapp", session_timeout=10.0) as zk:
        with zk.lock("/jobs/nightly", timeout=30) as lock:   # LockTimeout after 30 s
            lock.check()                 # raises unless still safely held
            write_to_storage(lock.fencing_token)

Threads: a :class:`Client` and its locks may be used from any thread.
Every acquire is its own contender, as with ``threading.Lock``: threads
and tasks that share one lock object exclude each other, and acquiring a
lock the same object already holds waits behind itself: a nested ``with
lock: with lock:`` on a default lock waits for itself (LockTimeout once
the lock's ``timeout`` runs out; without one, for ever). With
``reentrant=True`` (``zk.lock(path, reentrant=True)``) a lock is like
``threading.RLock``: the thread that holds it gets in again at once (not
an asyncio task). A held lock is owned by the object, not by a thread:
``release()`` releases its newest acquire, whichever thread made it.
Blocking calls release the GIL; a blocking acquire in the main thread is
interrupted by Ctrl-C (KeyboardInterrupt), which deletes the waiting node
first.

Timeouts are numbers of seconds: ``int`` (any size), ``float``, or any
object with ``__float__`` or ``__index__`` (numpy scalars, ``Decimal``,
``Fraction``). A bool is refused (:class:`InvalidArgument`), anything else
is a ``TypeError``. The rules are the core's, the same in every language:
client options must be finite and > 0 (``session_timeout`` at most 3600 s,
the others at most one day); an acquire timeout of 0 tries once, ``None``,
``math.inf`` or more than 10**9 s (about 31.7 years) wait without limit,
NaN and negative numbers (also ``threading.Lock``'s -1) are refused
(:class:`InvalidArgument`): pass ``None`` (the default) for no limit.

Processes: a client belongs to the process that made it. A child made by
``fork()`` (or a ``fork`` multiprocessing pool) makes its own clients.
Objects inherited through the fork do not work in the child: every call
raises :class:`Closed` at once, ``held`` is False, ``state`` is LOST for a
lock that was held, and ``release()`` leaves the parent's node alone.

Interpreter exit: zklock's ``atexit`` hook (registered when zklock is
imported, so it runs after the hooks registered later) stops state
callbacks (waiting for those already running), then closes every client
of the process that is still open, so that their nodes go at once, also
the nodes of a daemon thread still waiting in ``acquire()`` or holding a
lock when the program ends (``sys.exit()``, the end of the main module,
an uncaught exception). It waits at most 1 s in all for the servers to
confirm; with no server answering the exit goes on, and the nodes go
when a server reads the close or, if none does, when the session times
out, as after a crash. From then on a thread whose blocking
``acquire()`` ends stays stopped there (as Python stops daemon threads
at exit) instead of raising :class:`Closed`. A child made by ``fork()`` closes only its own clients.
A process killed (SIGKILL) or ended with ``os._exit()`` runs no hook: its
nodes stay until its sessions time out.

asyncio: ``async with zklock.connect(hosts) as zk:`` (or ``zk = await
zklock.connect(hosts)``) connects without blocking the event loop
(``zklock.Client(...)`` blocks its thread until connected);
``await lock.acquire_async(timeout=...)`` and ``async with
zk.lock(path):`` take no thread while they wait (the core completes the
awaited future from its event thread), so the event loop keeps running;
cancelling the awaiting task cancels that acquire only and deletes its
node before the cancellation is re-raised. ``await zk.close_async()``,
``await zk.participants_async(path)``, ``await
zk.leader_async(path)`` and ``await lock.fenced_multi_async(ops)`` are
the asyncio forms of the blocking calls.

Fenced writes: for state kept in ZooKeeper itself,
``lock.fenced_multi([zklock.FencedOp.set_data(path, data), ...])`` makes
the operations in one ZooKeeper transaction with a check of the lock's
node, all or none, and only while the lock is ours (see
:meth:`Lock.fenced_multi`).

Leadership as a task: ``lock.run(func, ...)`` (kazoo's ``Election.run``)
and ``await lock.run_async(coro_fn, ...)``, which cancels the task when the
lock stops being safely held. Revocation (Curator-compatible):
``zk.revoke(node_path)`` and :meth:`Lock.on_revocation`. A changing
ensemble: ``zk.set_hosts(hosts)``. Metrics: ``zk.metrics()``
(:class:`Metrics`; for Prometheus, :func:`zklock.metrics.register_client`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import threading
from dataclasses import dataclass
from types import TracebackType
from typing import (
    TYPE_CHECKING,
    Any,
    Awaitable,
    Callable,
    Dict,
    Generator,
    List,
    Optional,
    Sequence,
    Tuple,
    Type,
    TypeVar,
    Union,
)

from . import _errors, _vocabulary, _zklock

# `X as X`: an explicit re-export, which type checkers (mypy --strict)
# follow; they do not follow the `__all__ +=` below. The star import
# re-exports the enums and exception classes generated from the core's
# tables (their `__all__`).
from ._errors import FailedOp as FailedOp
from ._errors import ZkLockError as ZkLockError
from ._errors import error_class
from ._vocabulary import *  # noqa: F403
from ._vocabulary import (
    ConnectionState,
    CreateMode,
    FencedKind,
    InvalidArgument,
    LockMode,
    LockState,
    LockTimeout,
    NodeKind,
    NotHeld,
)

__all__ = [
    "Client",
    "connect",
    "Connecting",
    "Lock",
    "MultiLock",
    "ReadWriteLock",
    "Subscription",
    "Participant",
    "FencedOp",
    "FencedResult",
    "Metrics",
    "Histogram",
    "ERROR_CODES",
    "error_class",
    "set_log_level",
]
# The base exception, and the enums and exception classes of the core's tables.
__all__ += _errors.__all__ + _vocabulary.__all__

__version__: str = _zklock.__version__

#: Every error code of the core, e.g. ``"TIMEOUT"`` (the ``.code`` values).
ERROR_CODES: Tuple[str, ...] = _zklock.ERROR_CODES


def set_log_level(level: Union[int, str]) -> None:
    """Chooses which of the core's log records reach the standard
    ``logging`` logger ``"zklock"``: records of ``level`` and more severe
    (``logging.DEBUG``, ``"INFO"``, ...; ``"OFF"`` for none). The default is
    INFO: connects, reconnects, suspensions, session expiries, re-queues
    and background cleanups, each naming its lock path and session id;
    Python's logging then shows what its configuration lets through
    (WARNING and up unless configured)::

        logging.basicConfig(level=logging.INFO)   # see INFO records too
        zklock.set_log_level(logging.DEBUG)       # also every grant

    The records are handed over from a thread of zklock's (``zklock-log``),
    never from the thread that waits for a lock. Raises InvalidArgument for
    an unknown level name, TypeError for another type.
    """
    if isinstance(level, bool) or not isinstance(level, (int, str)):
        raise TypeError("level must be a logging level (int) or its name, not %s" % type(level).__name__)
    if isinstance(level, int):
        names = [(40, "ERROR"), (30, "WARN"), (20, "INFO"), (10, "DEBUG"), (0, "TRACE")]
        level = next(name for floor, name in names if level >= floor) if level >= 0 else "TRACE"
    _zklock._set_log_level(level)


_LockT = TypeVar("_LockT", bound="_Held")
_T = TypeVar("_T")
_ClientT = TypeVar("_ClientT", bound="Client")
Identifier = Union[str, bytes, None]
#: A file name: ``str`` or an ``os.PathLike`` (e.g. ``pathlib.Path``).
PathLike = Union[str, "os.PathLike[str]"]


class Subscription:
    """A callback registered with :meth:`Lock.on_state_change`:
    :meth:`cancel` takes it back. Thread-safe."""

    __slots__ = ("_native",)

    def __init__(self, native: _zklock.Subscription) -> None:
        self._native = native

    def cancel(self) -> None:
        """Takes the callback back: it is not called after this returns (a
        call running on the event thread then finishes). Idempotent; never
        blocks; may be called from the callback itself."""
        self._native.cancel()


@dataclass(frozen=True)
class Participant:
    """One node in the queue of a lock path (see :meth:`Client.participants`)."""

    #: Child name, e.g. ``_c_<uuid>-lock-0000000003``.
    name: str
    #: The sequence number the server appended.
    sequence: int
    #: :attr:`NodeKind.READER` or :attr:`NodeKind.WRITER` (a ``str``:
    #: ``kind == "READER"`` works).
    kind: NodeKind
    #: Whether this participant holds the lock now.
    holds: bool
    #: The node's data (an identifier chosen by its owner; may be empty).
    data: bytes
    #: The id of the session that owns the node.
    session_id: int


def _participant(p: Tuple[str, int, str, bool, bytes, int]) -> Participant:
    """A :class:`Participant` of the native module's tuple."""
    name, sequence, kind, holds, data, session_id = p
    return Participant(name, sequence, NodeKind(kind), holds, data, session_id)


#: The data of a fenced write's create or set_data: bytes (any bytes-like
#: object) or ``str`` (stored as UTF-8).
Data = Union[bytes, bytearray, memoryview, str]


def _fenced_invalid(message: str) -> InvalidArgument:
    return InvalidArgument("fenced write: " + message, "INVALID_ARGUMENT")


@dataclass(frozen=True)
class FencedOp:
    """One ZooKeeper operation of a fenced write (:meth:`Lock.fenced_multi`).
    Make it with :meth:`create`, :meth:`set_data`, :meth:`delete` or
    :meth:`check`. A ``version`` of None matches any data version; an int
    makes the operation (and so the whole write) fail with ``BadVersion``
    unless the node's data version is that int (a compare-and-set).

    Wrong types are refused when it is made (:class:`InvalidArgument`,
    naming the argument); the paths, negative versions and the write's size
    are checked by :meth:`Lock.fenced_multi` (naming the operation's index).
    """

    #: What it does: a :class:`FencedKind` (given as one, or as its name in
    #: any case: ``"set_data"`` works).
    op: FencedKind
    #: The node (for a sequential create, the prefix of its name).
    path: str
    #: The data of a create or set_data (empty for the others).
    data: bytes = b""
    #: The data version a set_data, delete or check requires, or None
    #: (any); always None for a create.
    version: Optional[int] = None
    #: How a create's node lives; None for the other operations.
    mode: Optional[CreateMode] = None

    def __post_init__(self) -> None:
        kind = _fenced_kind(self.op, "op")
        object.__setattr__(self, "op", kind)
        op = kind.value
        if not isinstance(self.path, str):
            raise _fenced_invalid("%s: path must be str, not %s" % (op, type(self.path).__name__))
        data = self.data
        if isinstance(data, str):
            try:
                data = data.encode("utf-8")
            except UnicodeEncodeError:
                raise _fenced_invalid("%s: data is not valid Unicode text (a lone surrogate)" % op) from None
        elif isinstance(data, (bytearray, memoryview)):
            data = bytes(data)
        elif not isinstance(data, bytes):
            raise _fenced_invalid("%s: data must be bytes or str, not %s" % (op, type(data).__name__))
        if data and kind in (FencedKind.DELETE, FencedKind.CHECK):
            raise _fenced_invalid("%s takes no data" % op)
        object.__setattr__(self, "data", data)
        version = self.version
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
            raise _fenced_invalid("%s: version must be an int or None, not %s" % (op, type(version).__name__))
        if kind is FencedKind.CREATE:
            if version is not None:
                raise _fenced_invalid("CREATE takes no version")
            mode = CreateMode.PERSISTENT if self.mode is None else self.mode
            try:
                object.__setattr__(self, "mode", CreateMode(mode))
            except ValueError:
                names = ", ".join(m.value for m in CreateMode)
                raise _fenced_invalid("CREATE: mode must be a zklock.CreateMode (%s), not %r" % (names, mode)) from None
        elif self.mode is not None:
            raise _fenced_invalid("%s takes no mode" % op)

    @classmethod
    def create(cls, path: str, data: Data = b"", mode: Union[CreateMode, str] = CreateMode.PERSISTENT) -> "FencedOp":
        """Creates ``path`` with ``data`` (its parent must exist), with the
        client's ACL; ``mode`` as :class:`CreateMode` says (or its name)."""
        return cls(FencedKind.CREATE, path, data, None, mode)  # type: ignore[arg-type]

    @classmethod
    def set_data(cls, path: str, data: Data, version: Optional[int] = None) -> "FencedOp":
        """Sets the data of ``path`` (if its data version is ``version``,
        when given)."""
        return cls(FencedKind.SET_DATA, path, data, version)  # type: ignore[arg-type]

    @classmethod
    def delete(cls, path: str, version: Optional[int] = None) -> "FencedOp":
        """Deletes ``path``, which must have no children (if its data version
        is ``version``, when given)."""
        return cls(FencedKind.DELETE, path, b"", version)

    @classmethod
    def check(cls, path: str, version: Optional[int] = None) -> "FencedOp":
        """Writes nothing: fails the write unless ``path`` exists (with that
        data version, when given)."""
        return cls(FencedKind.CHECK, path, b"", version)

    def _native(self) -> Tuple[str, str, bytes, Optional[int], str]:
        """The tuple the native module takes."""
        return (self.op.value, self.path, self.data, self.version, (self.mode or CreateMode.PERSISTENT).value)


def _fenced_result(r: Tuple[str, Optional[str], Optional[int]]) -> "FencedResult":
    """A :class:`FencedResult` of the native module's tuple."""
    op, path, version = r
    return FencedResult(FencedKind(op), path, version)


def _multi_member(member: object, index: int) -> Tuple[str, str]:
    """One member of :meth:`Client.multi_lock` as ``(path, mode)``: a path
    (exclusive), or a ``(path, mode)`` pair whose mode is a
    :class:`LockMode` or its name; raises TypeError naming the member's
    index for anything else (outside attack round 36, F4: a 1-tuple raised
    IndexError, a dict KeyError, a triple was taken with its third element
    ignored), InvalidArgument for a mode that is not valid Unicode."""
    if isinstance(member, str):
        return (member, LockMode.EXCLUSIVE.value)
    if isinstance(member, (tuple, list)) and len(member) == 2:
        path, mode = member
        if isinstance(path, str) and isinstance(mode, str):
            try:
                mode.encode("utf-8")
            except UnicodeEncodeError:
                # As for any str that is not valid Unicode (round 37, F2:
                # UnicodeEncodeError, no ZkLockError, naming nothing).
                raise InvalidArgument(
                    "multi_lock member %d: its mode %r is not valid Unicode" % (index, mode), "INVALID_ARGUMENT"
                ) from None
            return (path, str(mode))
    raise TypeError(
        "multi_lock member %d must be a path or a (path, mode) pair with a zklock.LockMode or its name, not %r"
        % (index, member)
    )


def _fenced_kind(op: object, what: str) -> FencedKind:
    """The :class:`FencedKind` ``op`` is or names (in any case); raises
    :class:`InvalidArgument` naming ``what`` for anything else."""
    if isinstance(op, FencedKind):
        return op
    if isinstance(op, str) and op.upper() in FencedKind.__members__:
        return FencedKind(op.upper())
    names = ", ".join(k.value for k in FencedKind)
    raise _fenced_invalid("%s must be a zklock.FencedKind (%s), not %r" % (what, names, op))


@dataclass(frozen=True)
class FencedResult:
    """What one operation of a successful fenced write did, in the order of
    the operations (:meth:`Lock.fenced_multi`)."""

    #: What the operation did: a :class:`FencedKind` (made from its name in
    #: any case too: ``FencedResult("set_data", version=1)`` compares equal).
    op: FencedKind
    #: For a create, the path of the new node (with the sequence number for
    #: a sequential mode); None for the others.
    path: Optional[str] = None
    #: For a set_data, the node's new data version; None for the others.
    version: Optional[int] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _fenced_kind(self.op, "a result's op"))


@dataclass(frozen=True)
class Histogram:
    """A histogram of durations as Prometheus keeps one (in :class:`Metrics`)."""

    #: How many durations were observed.
    count: int
    #: Their sum, in seconds.
    sum_seconds: float
    #: ``(upper bound in seconds, how many were at most that)`` for each
    #: bucket, in order (cumulative; :attr:`count` is the ``+Inf`` bucket).
    buckets: Tuple[Tuple[float, int], ...]


@dataclass(frozen=True)
class Metrics:
    """A snapshot of a client's metrics (:meth:`Client.metrics`). Every
    counter only grows over the client's life (hand them to Prometheus as
    counters); ``cleanups_pending`` is a gauge."""

    #: Acquires granted (every lock kind, elections and semaphore leases;
    #: each member of a multi-lock), reentrant ones included.
    acquires_granted: int
    #: Acquires that ended at their deadline (a try that found the lock
    #: held included).
    acquires_timed_out: int
    #: Acquires cancelled (``cancel()``, Ctrl-C, a cancelled task).
    acquires_cancelled: int
    #: Acquires that failed otherwise (connection, session, refusals, a
    #: closed client).
    acquires_failed: int
    #: How long granted acquires waited.
    wait_time: Histogram
    #: How long locks were held: from the grant to the release or the loss.
    hold_time: Histogram
    #: Times a held lock became suspended (connection trouble).
    suspensions: int
    #: Held locks lost (session expired, node deleted, ...; not a close).
    losses: int
    #: Times a lost connection came back with the same session.
    reconnects: int
    #: Sessions that ended without a close (expired).
    session_expiries: int
    #: Requests written to ZooKeeper by operation, as ZooKeeper names it
    #: (``"create2"``, ``"getData"``, ``"sync"``, ``"ping"``, ...).
    requests: Dict[str, int]
    #: Background cleanups (node deletions) not finished yet.
    cleanups_pending: int


def _histogram(native: Tuple[int, float, List[Tuple[float, int]]]) -> Histogram:
    count, sum_seconds, buckets = native
    return Histogram(count, sum_seconds, tuple(buckets))


def _fenced_tuples(ops: Sequence[FencedOp]) -> List[Tuple[str, str, bytes, Optional[int], str]]:
    """The native tuples of ``ops``; InvalidArgument naming the index of an
    entry that is not a :class:`FencedOp`, or if ``ops`` is not a list or
    tuple."""
    if not isinstance(ops, (list, tuple)):
        raise _fenced_invalid("the operations must be a list of zklock.FencedOp, not %s" % type(ops).__name__)
    for i, op in enumerate(ops):
        if not isinstance(op, FencedOp):
            raise InvalidArgument(
                "fenced write, operation %d: not a zklock.FencedOp (make it with FencedOp.create, .set_data, "
                ".delete or .check) but %s" % (i, type(op).__name__),
                "INVALID_ARGUMENT",
            )
    return [op._native() for op in ops]


def _wait_limit(blocking: bool, timeout: Optional[float]) -> Optional[float]:
    """The wait of ``acquire(blocking, timeout)`` in seconds (None: no
    limit), by the core's rule; raises what acquire would raise for these
    arguments (InvalidArgument, TypeError)."""
    return _zklock._wait_limit(blocking, timeout)


#: How long the exit hook waits in all for the servers to confirm the
#: close of the clients still open (seconds).
_EXIT_CLOSE_WAIT = 1.0


def _at_exit() -> None:
    """zklock's ``atexit`` hook: state callbacks stop (waiting for those
    already running, see ``_zklock._shutdown``), then every client of this
    process still open is closed, waiting up to :data:`_EXIT_CLOSE_WAIT`
    in all (``_zklock._close_all``)."""
    _zklock._shutdown()
    _zklock._close_all(_EXIT_CLOSE_WAIT)


atexit.register(_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_zklock._after_fork_in_child)


def _completion(loop: asyncio.AbstractEventLoop) -> "Tuple[asyncio.Future[Any], Callable[[bool, Any], None]]":
    """A future on ``loop`` and the ``done(ok, value)`` that completes it
    from the client's event thread (the native ``*_start`` calls call it
    once): no thread waits for the call meanwhile."""
    fut: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if fut.done():
            return
        if ok:
            fut.set_result(value)
        else:
            fut.set_exception(value)

    def done(ok: bool, value: Any) -> None:
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:  # the loop is closed: nobody is waiting
            pass

    return fut, done


class _Held:
    """What :class:`Lock` and :class:`MultiLock` share: the stop-now
    signals, ``with``/``async with`` and the asyncio calls, over a native
    object (``_native``) with the same methods."""

    __slots__ = ()
    _native: "Union[_zklock.Lock, _zklock.MultiLock]"
    timeout: Optional[float]

    def _what(self) -> str:
        """What is locked, for messages."""
        raise NotImplementedError

    def check(self) -> None:
        """Raises unless held safely right now (see :meth:`Lock.check`)."""
        self._native.check()

    def fenced_multi(self, ops: Sequence[FencedOp]) -> List[FencedResult]:
        """A fenced write: makes ``ops`` (:class:`FencedOp`) in one ZooKeeper
        transaction with a check that this object's lock node (for a
        :class:`MultiLock`, every member's node) still exists, so they are
        made all or none, and only while the lock is ours, whatever this
        process believes: a holder paused past its session, or whose node
        was deleted, has its write refused by ZooKeeper itself. For state
        kept in ZooKeeper that only the lock's holder may change::

            with zk.lock("/jobs/nightly") as lock:
                lock.fenced_multi([zklock.FencedOp.set_data("/jobs/nightly-state", b"step 2")])

        Goes with the newest acquire of this object. An empty list only
        checks. Returns one :class:`FencedResult` per operation, in order.
        Blocks (one request, waiting first for the connection if it is down)
        at most the client's operation timeout, without the GIL.

        Raises:
            InvalidArgument, InvalidPath: refused before sending, naming the
                operation's index: a malformed path, one inside the lock's
                own path (its queue is zklock's), a negative version or one
                beyond 32 bits, a request or reply over one ZooKeeper
                packet (1 MiB less 1 KiB; a 68-byte Stat per set_data and
                create in the reply), an entry that is not a
                :class:`FencedOp`.
            NotHeld: this object holds nothing (e.g. released).
            LockLost: the lock is lost (known before, or ZooKeeper found our
                node gone or the session ended); nothing was written.
            Closed: the client was closed, or this object was inherited
                through ``fork()``.
            ZooKeeperError, NoAuth, InvalidArgument: ZooKeeper refused one
                of ``ops``; ``failed_op`` on the exception is its index and
                ZooKeeper's code, e.g. ``FailedOp(0, "BadVersion")``;
                nothing was written.
            ConnectionLoss, LockTimeout: the outcome is unknown (if the
                write was made, it was made while the lock was ours).
        """
        return [_fenced_result(r) for r in self._native.fenced_multi(_fenced_tuples(ops))]

    async def fenced_multi_async(self, ops: Sequence[FencedOp]) -> List[FencedResult]:
        """:meth:`fenced_multi` for asyncio: the write is awaited without a
        thread (completed from the client's event thread), so the event
        loop keeps running. Errors as :meth:`fenced_multi`, raised by the
        ``await``. Cancelling the awaiting task only stops the wait: the
        write, once started, may still be made."""
        fut, done = _completion(asyncio.get_running_loop())
        self._native.fenced_multi_start(_fenced_tuples(ops), done)
        results: List[Tuple[str, Optional[str], Optional[int]]] = await fut
        return [_fenced_result(r) for r in results]

    def lost_event(self) -> threading.Event:
        """A ``threading.Event`` that is set once the newest acquire of this
        object is no longer safely held: lost, suspended (connection
        trouble), past its safety clock, released, or its client closed. The
        core fires it no later than :meth:`check` starts to raise; the
        client's event thread sets the Event a moment after (and it is set
        at once if :meth:`check` already raises). Work done under the lock
        can poll ``event.is_set()`` or wait on it as its "stop now" signal.
        Each call makes a new Event; nothing waits on a thread of yours
        meanwhile. The Event can be set while :meth:`check` passes again
        later (a suspension that ended): stop all the same.

        Raises:
            NotHeld: this object does not hold the lock.
            Closed: this object was inherited through ``fork()``.
        """
        event = threading.Event()
        self._native.lost_start(lambda ok, error: event.set())
        if self._check_error() is not None:
            event.set()  # already: no need to wait for the event thread
        return event

    def _check_error(self) -> Optional[ZkLockError]:
        """What :meth:`check` raises now, or None."""
        try:
            self._native.check()
        except ZkLockError as e:
            return e
        return None

    def wait_lost(self, timeout: Optional[float] = None) -> Optional[ZkLockError]:
        """Waits until the newest acquire of this object is no longer safely
        held (see :meth:`lost_event`), at most ``timeout`` seconds (None: no
        limit; numbers as :meth:`acquire` takes them). Returns the exception
        :meth:`check` raises then (:class:`LockLost`,
        :class:`ConnectionLoss`, :class:`NotHeld` once released,
        :class:`Closed`), or None if the time ran out first. In the main
        thread, Ctrl-C interrupts the wait.

        Raises:
            NotHeld: this object does not hold the lock.
            Closed: this object was inherited through ``fork()``.
            InvalidArgument, TypeError: a bad timeout.
        """
        limit = _wait_limit(True, timeout)
        event = threading.Event()
        errors: List[ZkLockError] = []

        def done(ok: bool, error: ZkLockError) -> None:
            errors.append(error)
            event.set()

        self._native.lost_start(done)
        now = self._check_error()
        if now is not None:
            return now
        event.wait(limit)
        return errors[0] if errors else self._check_error()

    #: ``with lock:`` acquires, waiting up to ``self.timeout``, and raises
    #: LockTimeout when the time runs out; the end of the block releases
    #: (raising LockLost if the lock was lost meanwhile). Both are native
    #: code, so no Python code runs between the grant and the block, nor
    #: between leaving the block and the release: a Ctrl-C cannot leave the
    #: lock held (one that lands during the grant gives it back and is
    #: raised; a later one is raised inside the block, and the release
    #: runs).
    # For type checkers the same two, declared (the native descriptors are
    # typed Any): `with lock as held:` gives the object itself, typed.
    if TYPE_CHECKING:

        def __enter__(self: _LockT) -> _LockT: ...

        def __exit__(
            self,
            exc_type: Optional[Type[BaseException]],
            exc: Optional[BaseException],
            tb: Optional[TracebackType],
        ) -> None: ...

    else:
        __enter__ = _zklock.WithBlock(False)
        __exit__ = _zklock.WithBlock(True)

    # -- asyncio -------------------------------------------------------------

    async def acquire_async(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """:meth:`acquire` for asyncio. Returns False on timeout. The wait
        takes no thread: the core completes the awaited future from its
        event thread, and the event loop keeps running.

        Cancelling the awaiting task cancels this acquire only (other
        acquires on the same object go on): our node is deleted (or the
        lock, if it was granted in the race, released) before the
        ``CancelledError`` propagates, on a server that answers within
        about 250 ms; else the deletion goes on in the background until it
        is done or the session ends.
        """
        loop = asyncio.get_running_loop()
        fut, done = _completion(loop)
        call = self._native.acquire_start(blocking, timeout, done)
        try:
            return bool(await asyncio.shield(fut))
        except asyncio.CancelledError as cancelled:
            call.cancel()
            while not fut.done():
                try:
                    await asyncio.shield(fut)
                except asyncio.CancelledError:
                    continue  # cleanup first; the task is cancelled anyway
                except BaseException:  # noqa: BLE001 - Cancelled etc.: no lock
                    break
            if not fut.cancelled() and fut.exception() is None and fut.result():
                await self.release_async()
            raise cancelled

    async def wait_lost_async(self) -> ZkLockError:
        """:meth:`wait_lost` for asyncio, without a time limit (wrap it in
        ``asyncio.wait_for`` or a ``TaskGroup`` next to the work): returns
        the exception :meth:`check` raises once the newest acquire of this
        object is no longer safely held. The wait takes no thread.
        Cancelling the awaiting task stops nothing.

        Raises:
            NotHeld: this object does not hold the lock.
            Closed: this object was inherited through ``fork()``.
        """
        fut, done = _completion(asyncio.get_running_loop())
        self._native.lost_start(done)
        now = self._check_error()
        if now is not None:
            return now
        error: ZkLockError = await fut
        return error

    async def release_async(self) -> bool:
        """:meth:`release` for asyncio: the delete is awaited without a
        thread (completed from the client's event thread)."""
        fut, done = _completion(asyncio.get_running_loop())
        self._native.release_start(done)
        return bool(await fut)

    async def __aenter__(self: _LockT) -> _LockT:
        """Acquires without blocking the loop, up to ``self.timeout``; raises LockTimeout."""
        if not await self.acquire_async(timeout=self.timeout):
            raise LockTimeout("%s: not acquired within %s s" % (self._what(), self.timeout), "TIMEOUT")
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        """Releases without blocking the loop."""
        await self.release_async()

    # -- leadership (or any lock) as a task ----------------------------------

    def run(self, func: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """Acquires (as ``with self:``, waiting up to ``self.timeout``),
        calls ``func(*args, **kwargs)``, releases, and returns what ``func``
        returned; an exception of ``func`` is raised after the release. For
        an election: runs ``func`` while leading (kazoo's ``Election.run``).
        A blocking call cannot be cut short: ``func`` should watch
        :meth:`lost_event` if it must stop when the lock is lost.

        Raises:
            LockTimeout: not acquired within ``self.timeout``.
            LockLost: lost before the release (``func``'s result is then
                dropped: it may have run without the lock).
            Closed, ConnectionLoss: as :meth:`acquire`.
        """
        with self:
            return func(*args, **kwargs)

    async def run_async(self, func: Callable[..., Awaitable[_T]], *args: Any, **kwargs: Any) -> _T:
        """Runs ``func(*args, **kwargs)`` (a coroutine function) as a task
        while this lock is held, as the core's ``Lock::run_async`` does
        (leadership as a task: Curator's ``LeaderSelector``): acquires as
        ``async with self:`` (up to ``self.timeout``), runs the task,
        releases, and returns the task's value. If the lock stops being
        safely held first (:meth:`wait_lost_async`: lost, or suspended by
        connection trouble, as ``LeaderSelector`` cancels its leader on
        SUSPENDED) the task is cancelled, the lock released, and the loss
        raised. A task that releases this object itself runs to its end.
        Cancelling the awaiting task cancels ``func``'s task and releases.
        To stand again after a loss, call it again in a loop.

        Raises:
            LockTimeout: not acquired within ``self.timeout``.
            LockLost, ConnectionLoss, Closed: the lock stopped being safely
                held while the task ran (the task was cancelled), or lost
                just as it ended (its value is then dropped).
            Whatever ``func`` raised (after the release).
        """
        await self.__aenter__()
        task: "asyncio.Task[_T]" = asyncio.ensure_future(func(*args, **kwargs))
        lost: "asyncio.Task[ZkLockError]" = asyncio.ensure_future(self.wait_lost_async())
        try:
            await asyncio.wait([task, lost], return_when=asyncio.FIRST_COMPLETED)
            if not task.done():
                # NotHeld is raised rather than returned if the task
                # released before the wait started.
                failed = lost.exception()
                error = failed if failed is not None else lost.result()
                if not isinstance(error, NotHeld):
                    task.cancel()
                    await asyncio.wait([task])
                    with contextlib.suppress(ZkLockError):
                        await self.release_async()
                    raise error
                # The task released the lock itself: it runs to its end.
                return await task
        except BaseException:
            # Cancelled from outside (or the wait failed): no task outlives
            # the call, and the lock goes back.
            lost.cancel()
            if not task.done():
                task.cancel()
                await asyncio.wait([task])
                with contextlib.suppress(ZkLockError):
                    await self.release_async()
            raise
        lost.cancel()
        try:
            await self.release_async()
        except NotHeld:
            pass  # the task released it itself
        except ZkLockError:
            if task.cancelled() or task.exception() is None:
                raise  # lost as the task ended: its value is dropped
        return task.result()


class Lock(_Held):
    """A lock handle on one path: exclusive, or the read or write side.

    Made by :meth:`Client.lock`, :meth:`Client.read_lock`,
    :meth:`Client.write_lock` or :meth:`Client.read_write_lock`. Use it like
    ``threading.Lock`` (``acquire``/``release``, ``with``), or from asyncio
    (``acquire_async``, ``async with``).

    Every acquire is its own contender, as with ``threading.Lock``: threads
    and tasks that share one lock object exclude each other, and a thread
    that acquires a lock it holds waits behind itself. With
    ``reentrant=True`` (``Client.lock(path, reentrant=True)``) it is like
    ``threading.RLock``: a thread's blocking ``acquire()`` while it holds
    the lock returns at once, and the node is deleted by the matching last
    ``release()``; asyncio acquires are never re-entrant (tasks share the
    loop's thread, and a task must not get in because another holds).
    Thread-safe; ``release()`` releases the newest acquire of the object,
    whichever thread made it. ``timeout`` (given to ``Client.lock()``)
    bounds the wait of ``with`` / ``async with``, which raise
    :class:`LockTimeout` when it expires.
    """

    __slots__ = ("_native", "timeout")
    _native: _zklock.Lock

    def __init__(self, native: _zklock.Lock, timeout: Optional[float] = None) -> None:
        self._native = native
        #: The wait limit of ``with``/``async with`` in seconds (None: no
        #: limit), as :meth:`acquire` reads ``timeout``.
        self.timeout = _wait_limit(True, timeout)

    # -- blocking API -------------------------------------------------------

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """Acquires the lock like ``threading.Lock.acquire``.

        ``blocking=False`` tries once without waiting; otherwise waits up to
        ``timeout`` seconds in total: 0 tries once; None, ``math.inf`` or
        more than 10**9 s: no limit. Unlike ``threading.Lock``, -1 is not
        "no limit" but refused, as every negative number (the rule of every
        zklock language): pass ``timeout=None`` (the default) to wait
        without limit. Returns True when acquired, False when the time
        ran out (our node is deleted).

        Releases the GIL while waiting. In the main thread, Ctrl-C cancels
        the wait (deleting our node) and raises KeyboardInterrupt; one that
        lands while the grant comes gives the lock back and is raised. As
        with ``threading.Lock``, a Ctrl-C just after ``acquire()`` returned
        True is raised before your next line runs, with the lock held: use
        ``with lock:``, which cannot be interrupted between the grant and
        its block, nor between the block and the release.

        Raises:
            Cancelled: :meth:`cancel` was called meanwhile.
            WouldDeadlock: write side of a pair while its read side is held.
            Closed: the client was closed, or this object was inherited
                through ``fork()``.
            ConnectionLoss, ZooKeeperError: client or server trouble.
            InvalidArgument: a timeout with ``blocking=False``, NaN, a
                negative number, or a bool.
            TypeError: a timeout that is not a number.
        """
        return self._native.acquire(blocking, timeout)

    def release(self) -> bool:
        """Releases one acquire of this object (the node goes with the last).

        Returns True when done, False when ZooKeeper could not confirm the
        delete now (it is retried in the background). Blocks without the GIL.

        Raises:
            NotHeld: this object does not hold the lock.
            LockLost: the lock had been lost before the release (the
                critical section may have run without it); the node is
                cleaned up all the same.
            Closed: the client was closed (the node went with the
                session), or this object was inherited through ``fork()``
                (the parent's node is left alone).
        """
        return self._native.release()

    def cancel(self) -> None:
        """Makes every acquire in progress on this object fail with
        :class:`Cancelled` (their nodes are deleted). Never blocks; safe from
        any thread, signal handler or callback."""
        self._native.cancel()

    def check(self) -> None:
        """Raises unless the lock is safely held right now.

        Raises:
            NotHeld: not held by this object.
            ConnectionLoss: suspended (connection trouble; may come back).
            LockLost: lost for good; another client may hold it.
            Closed: the client was closed, or this object was inherited
                through ``fork()``.
        """
        self._native.check()

    def on_state_change(self, callback: Callable[[LockState], object]) -> Subscription:
        """Calls ``callback(state)`` on every state change (HELD, SUSPENDED,
        LOST) of the current grant and of later grants of this object, until
        the returned :class:`Subscription` is cancelled.

        The callback runs on the client's event thread (not the caller's),
        with the GIL taken there, one call at a time and in order. It should
        return promptly; exceptions go to ``sys.unraisablehook``. If the lock
        is no longer HELD when registering, it is called once soon. It is
        not called once the interpreter starts to shut down.

        Raises:
            TypeError: ``callback`` is not callable.
            Closed: this object was inherited through ``fork()``.
        """
        if not callable(callback):
            raise TypeError("callback must be callable")

        def call(state: str) -> None:
            callback(LockState(state))

        return Subscription(self._native.on_state_change(call))

    def on_revocation(self, callback: Callable[[], object]) -> Subscription:
        """Calls ``callback()`` when someone asks the holder of the current
        grant, or of a later grant of this object, to let go
        (:meth:`Client.revoke`, or Curator's ``Revoker``: revocation,
        Curator-compatible), until the returned :class:`Subscription` is
        cancelled. Nothing is taken away: the lock stays held and the holder
        decides (for example: finish, then release). Runs on the client's
        event thread, as :meth:`on_state_change` callbacks; if a request came
        before, it is called once soon.

        Raises:
            TypeError: ``callback`` is not callable.
            Closed: this object was inherited through ``fork()``.
        """
        return Subscription(self._native.on_revocation(callback))

    @property
    def revocation_requested(self) -> bool:
        """Whether someone asked the holder of this object's newest grant
        to let go (see :meth:`on_revocation`); False when nothing is held."""
        return self._native.revocation_requested

    @property
    def held(self) -> bool:
        """Whether this object holds the lock now (held or suspended).
        False from the moment :meth:`Client.close` returns, and in a forked
        child."""
        return self._native.held

    @property
    def state(self) -> LockState:
        """HELD, SUSPENDED or LOST while acquired; RELEASED otherwise. LOST
        from the moment :meth:`Client.close` returns, and in a forked child
        for a lock that was held at the fork."""
        return LockState(self._native.state)

    @property
    def fencing_token(self) -> int:
        """The fencing token (creation zxid of our node) of the newest grant
        this object still holds, or of the last one released: grows with
        every grant of the lock. Raises NotHeld if never acquired."""
        return self._native.fencing_token

    @property
    def node_path(self) -> str:
        """The full path of our node (current or latest grant; NotHeld if never)."""
        return self._native.node_path

    @property
    def sequence(self) -> int:
        """The sequence number of our node (current or latest grant)."""
        return self._native.sequence

    @property
    def session_id(self) -> int:
        """The id of the session of the current or latest grant."""
        return self._native.session_id

    @property
    def depth(self) -> int:
        """How many acquires of this object are not yet released."""
        return self._native.depth

    @property
    def path(self) -> str:
        """The lock path."""
        return self._native.path

    @property
    def mode(self) -> LockMode:
        """:class:`LockMode`: ``EXCLUSIVE``, ``READ``, ``WRITE``, ``LEADER``
        (an election) or ``LEASE`` (a semaphore). A ``str``."""
        return LockMode(self._native.mode)

    # The fenced writes and run of _Held, named here so that the API docs
    # (which show a class's own members) list them.
    fenced_multi = _Held.fenced_multi
    fenced_multi_async = _Held.fenced_multi_async
    run = _Held.run
    run_async = _Held.run_async

    def _what(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return "<zklock.Lock %s %r %s>" % (self.mode, self.path, self.state.value)


class MultiLock(_Held):
    """Several locks (any mix of exclusive, read and write, on distinct
    paths) taken all or none: made by :meth:`Client.multi_lock`.

    An acquire takes the members one after another in one order (by path),
    so two multi-locks that share paths never deadlock; ``timeout`` covers
    the whole set, and if a member cannot be taken every member taken so far
    is given back. Used like :class:`Lock`: ``with multi:``, ``async with
    multi:``, ``acquire``/``release``, ``check()`` (raises once any member
    is not safely held), :meth:`lost_event`, :meth:`wait_lost`. Each member
    is an ordinary lock on its path. Thread-safe; ``release()`` releases the
    newest acquire of the object.
    """

    __slots__ = ("_native", "timeout")
    _native: _zklock.MultiLock

    def __init__(self, native: _zklock.MultiLock, timeout: Optional[float] = None) -> None:
        self._native = native
        #: The wait limit of ``with``/``async with`` in seconds (None: no limit).
        self.timeout = _wait_limit(True, timeout)

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """Takes every member, as :meth:`Lock.acquire` takes one lock:
        True, or False when the time ran out (nothing is held then). Do not
        call it from a state-change callback (use ``Lock`` there).

        Raises:
            Cancelled, Closed, ConnectionLoss, ZooKeeperError: as
                :meth:`Lock.acquire` (the message names the member).
            LockLost: a member taken was lost (its node gone, its session
                expired) before the set was held (at once, even while a
                later member waits in its queue; the message names it;
                every member taken is released).
            InvalidArgument, TypeError: a bad timeout.
        """
        return self._native.acquire(blocking, timeout)

    def release(self) -> bool:
        """Releases every member of the newest acquire: True when done,
        False when a delete goes on in the background.

        Raises:
            NotHeld: nothing is held by this object.
            LockLost: a member had been lost (all are released all the same).
            Closed: this object was inherited through ``fork()``.
        """
        return self._native.release()

    def check(self) -> None:
        """Raises unless every member is safely held right now (the error
        of the first member that is not, naming its path)."""
        self._native.check()

    @property
    def held(self) -> bool:
        """Whether this object holds every member now (held or suspended)."""
        return self._native.held

    @property
    def state(self) -> LockState:
        """The set's state: LOST if a member is lost, else SUSPENDED if one
        is suspended, else HELD; RELEASED when nothing is held."""
        return LockState(self._native.state)

    @property
    def depth(self) -> int:
        """How many acquires of this object are not yet released."""
        return self._native.depth

    @property
    def fencing_tokens(self) -> List[int]:
        """The newest acquire's fencing tokens, in the order of :attr:`paths`
        (NotHeld if nothing is held)."""
        return self._native.fencing_tokens

    @property
    def paths(self) -> List[str]:
        """The member paths, in the order an acquire takes them."""
        return self._native.paths

    # As in Lock: listed for the API docs.
    fenced_multi = _Held.fenced_multi
    fenced_multi_async = _Held.fenced_multi_async
    run = _Held.run
    run_async = _Held.run_async

    def _what(self) -> str:
        return ", ".join(self.paths)

    def __repr__(self) -> str:
        return "<zklock.MultiLock %r %s>" % (self.paths, self.state.value)


class ReadWriteLock:
    """A read/write lock pair on one path whose sides know each other.

    ``.read`` (shared) and ``.write`` (exclusive) are :class:`Lock` objects.
    Readers share; a writer excludes everyone; readers queue behind a waiting
    writer. Downgrade: :meth:`downgrade` (or ``await downgrade_async()``),
    or ``.read.acquire()`` by the thread that holds ``.write``, gives a read
    lock at once (then release ``.write``); ``.write.acquire()`` by the
    thread that holds only ``.read`` raises :class:`WouldDeadlock`. In
    asyncio there is no thread to go by: use :meth:`downgrade_async`.
    """

    __slots__ = ("read", "write")

    def __init__(self, read: Lock, write: Lock) -> None:
        #: The read (shared) side.
        self.read = read
        #: The write (exclusive) side.
        self.write = write

    @property
    def path(self) -> str:
        """The lock path."""
        return self.read.path

    def downgrade(self) -> None:
        """Takes the read lock at once while ``.write`` is held (its node
        gets the write node's sequence, so no writer queued behind can slip
        in); then release ``.write`` to let other readers in. Raises
        NotHeld if ``.write`` is not held, what ``check()`` raises if it is
        not safely held, LockLost if the write node was gone when the read
        node was to be made (one transaction with a check of the write
        node), LockTimeout if ZooKeeper did not answer within the operation
        timeout. Blocks (one request) without the GIL."""
        self.write._native.downgrade(self.read._native)

    async def downgrade_async(self) -> None:
        """:meth:`downgrade` for asyncio (no thread waits)."""
        fut, done = _completion(asyncio.get_running_loop())
        self.write._native.downgrade_start(self.read._native, done)
        await fut

    def __repr__(self) -> str:
        return "<zklock.ReadWriteLock %r>" % (self.path,)


class Client:
    """A connection to a ZooKeeper ensemble (one session), the factory of locks.

    ``hosts`` is ``"host:port[,host:port...][/chroot]"``; timeouts are in
    seconds (finite, > 0; ``session_timeout`` at most 3600, the others at
    most 86400); ``auth`` is ``(user, password)`` for ZooKeeper's digest
    scheme, ``sasl`` is ``(user, password)`` for a SASL ``DIGEST-MD5``
    login (the identity ``sasl:user``; Kerberos is not offered).

    ``acl`` is the ACL of every node the client creates (lock nodes, lock
    paths and their missing ancestors; lock nodes without ADMIN for
    ``world:anyone``, so nobody may change their ACL), written as
    ``zkCli.sh`` writes one:
    ``"scheme:id:perms"`` entries separated by commas (perms letters of
    ``cdrwa``), or the words ``"open"`` (the default: everyone may do
    everything) and ``"creator"`` (every right for the session's
    authenticated identities, nothing for anyone else), e.g.
    ``acl="creator,world:anyone:r"``. Existing nodes keep their ACL.

    ``tls_ca`` (a PEM file of certificate authorities) turns TLS on: every
    server of ``hosts`` (name their ``secureClientPort``) must show a
    certificate signed by them for the name ``hosts`` gives it; there is no
    plaintext fallback. ``tls_cert`` and ``tls_key`` (PEM files, together)
    are the client certificate shown when the server asks for one.

    Connecting blocks (without the GIL; Ctrl-C interrupts it) until
    a server answers or ``connect_timeout`` passes: in asyncio use
    :func:`connect`, which does not block the event loop. A context
    manager: ``with zklock.Client(...) as zk:`` closes the session on exit.
    A client still open when the interpreter exits is closed then (see the
    module's "Interpreter exit").

    Thread-safe. Locks keep the session alive until :meth:`close` (which
    loses every lock held through this client) or until the client and all
    its locks are garbage. A client belongs to the process that made it:
    inherited through ``fork()``, its methods raise :class:`Closed`.

    Raises:
        InvalidArgument, InvalidPath: malformed connect string or option
            (also a bool as a timeout, or text that is not valid Unicode).
        ConnectionLoss: no server answered within ``connect_timeout``,
            or (at once) no server's TLS certificate verifies; the message
            says why (e.g. ``UnknownIssuer``).
        NoAuth: the server refused the credentials (e.g. a wrong SASL
            password).
        ZooKeeperError: other refusals.
        TypeError: arguments of the wrong type.
        InvalidArgument also for a malformed ``acl`` (naming the entry), an
        unreadable TLS file (naming it), or a certificate without its key.
    """

    __slots__ = ("_native", "_listeners", "_listeners_lock")

    def __init__(
        self,
        hosts: str,
        session_timeout: float = 10.0,
        connect_timeout: float = 15.0,
        operation_timeout: float = 10.0,
        auth: Optional[Tuple[str, str]] = None,
        sasl: Optional[Tuple[str, str]] = None,
        acl: Optional[str] = None,
        tls_ca: Optional[PathLike] = None,
        tls_cert: Optional[PathLike] = None,
        tls_key: Optional[PathLike] = None,
    ) -> None:
        tls = tuple(None if f is None else os.fspath(f) for f in (tls_ca, tls_cert, tls_key))
        self._native = _zklock.Client(hosts, session_timeout, connect_timeout, operation_timeout, auth, sasl, acl, *tls)
        self._listeners: "List[Tuple[Callable[[ConnectionState], object], _zklock.Subscription]]" = []
        self._listeners_lock = threading.Lock()

    def add_listener(self, listener: Callable[[ConnectionState], object]) -> None:
        """Calls ``listener(state)`` on every change of this client's
        connection (:class:`ConnectionState`: SUSPENDED, RECONNECTED, LOST,
        CONNECTED), as kazoo's ``add_listener``. It runs on the client's
        event thread with the GIL taken there, one call at a time and in
        order (with the locks' state callbacks); it should return promptly;
        exceptions go to ``sys.unraisablehook``. Not called once the client
        is closed. :meth:`remove_listener` takes it back.

        Raises TypeError if ``listener`` is not callable, Closed after
        :meth:`close` or in a forked child.
        """
        if not callable(listener):
            raise TypeError("listener must be callable")

        def call(state: str) -> None:
            listener(ConnectionState(state))

        subscription = self._native.on_connection_state(call)
        with self._listeners_lock:
            self._listeners.append((listener, subscription))

    def remove_listener(self, listener: Callable[[ConnectionState], object]) -> None:
        """Takes back a listener given to :meth:`add_listener` (each time it
        was added): it is not called after this returns (a call running on
        the event thread then finishes). A listener never added is
        ignored, as kazoo does."""
        with self._listeners_lock:
            gone = [sub for cb, sub in self._listeners if cb == listener]
            self._listeners = [(cb, sub) for cb, sub in self._listeners if cb != listener]
        for subscription in gone:
            subscription.cancel()

    def lock(
        self, path: str, timeout: Optional[float] = None, identifier: Identifier = None, reentrant: bool = False
    ) -> Lock:
        """An exclusive lock on ``path`` (Curator ``InterProcessMutex``
        compatible). ``timeout`` bounds ``with``/``async with`` (None: no
        limit; a negative number, also -1, is InvalidArgument);
        ``identifier`` (str or bytes) is stored in the lock node for other
        participants to see; ``reentrant=True`` lets a thread that holds it
        acquire it again (like ``threading.RLock``; see :class:`Lock`).
        Does not touch ZooKeeper.

        Raises InvalidPath for a malformed path (also one that is not valid
        Unicode), InvalidArgument for an identifier over 64 KiB or
        ``__REVOKE__``, Closed after :meth:`close` or in a forked child,
        TypeError for wrong types.
        """
        return Lock(self._native.lock(path, identifier, reentrant), timeout)

    def read_lock(
        self, path: str, timeout: Optional[float] = None, identifier: Identifier = None, reentrant: bool = False
    ) -> Lock:
        """The read side of a read/write lock on ``path``, as an independent
        handle (Curator ``InterProcessReadWriteLock.readLock()`` compatible).
        Arguments and errors as :meth:`lock`."""
        return Lock(self._native.read_lock(path, identifier, reentrant), timeout)

    def write_lock(
        self, path: str, timeout: Optional[float] = None, identifier: Identifier = None, reentrant: bool = False
    ) -> Lock:
        """The write side of a read/write lock on ``path``, as an independent
        handle: a separate read handle of the same client blocks it like
        anyone else's. Arguments and errors as :meth:`lock`."""
        return Lock(self._native.write_lock(path, identifier, reentrant), timeout)

    def election(self, path: str, identifier: Union[str, bytes], timeout: Optional[float] = None) -> Lock:
        """A participant of the leader election on ``path`` with the id
        ``identifier`` (Curator ``LeaderLatch`` compatible: Curator latches
        and zklock participants on one path elect one leader between them).

        Acquiring it joins the election and waits until it leads; holding
        it is leading (``check()``, ``state``, ``fencing_token``,
        :meth:`Lock.lost_event` as for a lock); releasing it resigns. Run
        work while leading and stop it when leadership is lost::

            with client.election("/jobs/scheduler", "host-1") as leading:
                stop = leading.lost_event()
                while not stop.is_set():
                    do_one_step()

        Lost leadership is not taken back by itself: acquire again to rejoin.
        ``timeout`` bounds ``with``/``async with`` as for :meth:`lock`. Does
        not touch ZooKeeper.

        Raises InvalidPath for a malformed path, InvalidArgument for an id
        over 64 KiB or ``__REVOKE__``, Closed after :meth:`close` or in a
        forked child, TypeError for wrong types.
        """
        return Lock(self._native.election(path, identifier), timeout)

    def leader(self, path: str) -> Optional[Participant]:
        """The leader of the election on ``path`` (its ``data`` is its id),
        or None when nobody takes part. Errors as :meth:`participants`."""
        return next((p for p in self.participants(path) if p.holds), None)

    def semaphore(
        self, path: str, permits: int, timeout: Optional[float] = None, identifier: Identifier = None
    ) -> Lock:
        """A counting semaphore on ``path`` with ``permits`` leases (Curator
        ``InterProcessSemaphoreV2`` compatible: Curator semaphores and zklock
        ones on one path with the same permits share the leases).

        Each acquire of the returned :class:`Lock` takes one lease: at most
        ``permits`` acquires hold at once (one object may hold several). A
        held lease is a lock in every other way (``check()``, ``state``,
        ``fencing_token``, :meth:`Lock.lost_event`); releasing it returns
        the lease::

            with client.semaphore("/pools/db", 4) as lease:
                run_query(lease.fencing_token)

        Lease nodes are ``<path>/leases/_c_<uuid>-lease-<seq>`` (holding
        ``identifier``); a contender holds the lock ``<path>/locks`` while it
        waits. Every participant must use the same ``permits``. Not
        reentrant. ``timeout`` bounds ``with``/``async with`` as for
        :meth:`lock`. Does not touch ZooKeeper.

        Raises InvalidArgument for permits not between 1 and 2**31 - 1 (or
        a bool) and for an identifier over 64 KiB or ``__REVOKE__``,
        InvalidPath for a malformed path, Closed after :meth:`close` or in a
        forked child, TypeError for wrong types.
        """
        return Lock(self._native.semaphore(path, permits, identifier), timeout)

    def semaphore_with_count(
        self, path: str, count_path: str, timeout: Optional[float] = None, identifier: Identifier = None
    ) -> Lock:
        """A counting semaphore on ``path`` whose permits are the shared
        count at ``count_path`` (Curator's ``InterProcessSemaphoreV2`` with a
        ``SharedCountReader``; the count is 4 bytes, big-endian, as Curator's
        ``SharedCount`` keeps it: :meth:`set_shared_count`)::

            zk.set_shared_count("/pools/db-size", 4)
            with zk.semaphore_with_count("/pools/db", "/pools/db-size") as lease:
                run_query(lease.fencing_token)

        Each acquire reads the count and watches it while it waits: when it
        grows, waiters look at the queue again; when it shrinks, leases held
        stay held (new ones wait until fewer are held than the count; a
        negative count is 0). The count node must exist when an acquire
        starts and stay readable while it waits: otherwise the acquire
        fails (ZooKeeperError for a missing node, InvalidArgument for one
        that does not hold a 4-byte count), its node cleaned up. Otherwise
        as :meth:`semaphore`. Does not touch ZooKeeper.

        Raises InvalidArgument for a ``count_path`` that is ``path``,
        inside it or an ancestor of it and for a bad identifier, InvalidPath for a malformed
        path, Closed after :meth:`close` or in a forked child, TypeError
        for wrong types.
        """
        return Lock(self._native.semaphore_with_count(path, count_path, identifier), timeout)

    def set_shared_count(self, path: str, count: int) -> None:
        """Sets the shared count at ``path`` to ``count`` (Curator's
        ``SharedCount.setCount``: 4 bytes, big-endian), making the node and
        its parents if needed. Semaphores made with
        :meth:`semaphore_with_count` on it see the new count at once.
        Blocks (without the GIL) for a few requests.

        Raises:
            InvalidArgument: a count that is not an int from 0 to 2**31 - 1
                (or a bool), or a node that has or had children (a lock path's
                parent, a container ZooKeeper would delete with the count).
            InvalidPath: a malformed path.
            NoAuth, Closed, ConnectionLoss, LockTimeout: as :meth:`revoke`.
            TypeError: a count that is not an int.
        """
        self._native.set_shared_count(path, count)

    def shared_count(self, path: str) -> int:
        """The shared count at ``path`` as written (a negative one, which a
        semaphore takes as 0 permits, too). Blocks (without the GIL) for one
        request.

        Raises:
            ZooKeeperError: the node does not exist.
            InvalidArgument: it does not hold a 4-byte count.
            InvalidPath, Closed, ConnectionLoss, LockTimeout: as :meth:`revoke`.
        """
        return self._native.shared_count(path)

    def multi_lock(
        self, members: "List[Union[str, Tuple[str, str]]]", timeout: Optional[float] = None, reentrant: bool = False
    ) -> MultiLock:
        """A multi-lock over ``members``: paths (exclusive) or ``(path,
        mode)`` pairs with a :class:`LockMode` ``EXCLUSIVE``, ``READ`` or
        ``WRITE`` (or its name, in any case), taken all or none (see
        :class:`MultiLock`)::

            with zk.multi_lock([("/accounts/a", LockMode.WRITE), ("/accounts/b", LockMode.WRITE)]) as both:
                transfer(both.fencing_tokens)

        ``timeout`` bounds ``with``/``async with``. Does not touch ZooKeeper.
        With ``reentrant=True`` every member is reentrant per thread (as
        ``Client.lock(path, reentrant=True)``; Curator's
        ``InterProcessMultiLock`` over reentrant mutexes): a thread holding
        the set whose blocking ``acquire()`` takes it again gets it at once,
        and the nodes go at the last ``release()`` (Ctrl-C interrupts its
        wait as any acquire's); asyncio acquires are never re-entrant.

        Raises InvalidArgument for no member, a path named twice or an
        unknown mode, InvalidPath for a bad path, Closed after
        :meth:`close` or in a forked child, TypeError for wrong types.
        """
        if isinstance(members, (str, bytes)) or not isinstance(members, (list, tuple)):
            raise TypeError("multi_lock members must be a list of paths or (path, mode) pairs, not %r" % (members,))
        pairs = [_multi_member(m, i) for i, m in enumerate(members)]
        return MultiLock(self._native.multi_lock(pairs, reentrant), timeout)

    def read_write_lock(
        self, path: str, timeout: Optional[float] = None, identifier: Identifier = None, reentrant: bool = False
    ) -> ReadWriteLock:
        """A :class:`ReadWriteLock` pair on ``path`` (downgrade allowed,
        upgrade refused). ``timeout`` applies to ``with`` on either side."""
        read, write = self._native.read_write_lock(path, identifier, reentrant)
        return ReadWriteLock(Lock(read, timeout), Lock(write, timeout))

    def participants(self, path: str) -> List[Participant]:
        """The queue of the lock at ``path``, holders first, including other
        libraries' nodes; an absent path has none. Blocks without the GIL.
        Costs a list and a read of each queued node: N + 1 requests for a
        queue of N.

        Raises InvalidPath, Closed, ConnectionLoss or LockTimeout when
        ZooKeeper does not answer within the operation timeout.
        """
        return [_participant(p) for p in self._native.participants(path)]

    async def participants_async(self, path: str) -> List[Participant]:
        """:meth:`participants` for asyncio: the listing is awaited without
        a thread (completed from the client's event thread), so the event
        loop keeps running. Errors as :meth:`participants` (raised by the
        await; TypeError for a path that is not a ``str``). Cancelling the
        awaiting task only stops the wait (the reads are harmless)."""
        fut, done = _completion(asyncio.get_running_loop())
        self._native.participants_start(path, done)
        tuples: List[Tuple[str, int, str, bool, bytes, int]] = await fut
        return [_participant(p) for p in tuples]

    async def leader_async(self, path: str) -> Optional[Participant]:
        """:meth:`leader` for asyncio (as :meth:`participants_async`): the
        leader of the election on ``path``, or None when nobody takes part."""
        return next((p for p in await self.participants_async(path) if p.holds), None)

    @property
    def session_id(self) -> int:
        """The id of the current ZooKeeper session (raises Closed after
        close() or in a forked child, and Timeout or ConnectionLoss while no
        session is established)."""
        return self._native.session_id

    @property
    def session_timeout(self) -> float:
        """The session timeout the server granted, in seconds."""
        return self._native.session_timeout

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (always True in a forked child)."""
        return self._native.closed

    @property
    def pending_cleanups(self) -> int:
        """How many deletions of our nodes are still retried in the background."""
        return self._native.pending_cleanups

    def set_hosts(self, hosts: str) -> None:
        """Moves this client to the servers of ``hosts``
        (``"host:port[,host:port...][/chroot]"``: an ensemble that grew,
        shrank or moved; kazoo's ``set_hosts``), keeping its session and
        every lock. If the server connected now is in the new list nothing
        else happens; if not, the client reconnects to one of the new list
        (its locks are SUSPENDED for that moment, HELD again once the
        session is back). Never blocks.

        Raises:
            InvalidArgument: a malformed connect string, or another chroot
                than the client's (none means the same).
            InvalidPath: a chroot that is no valid node path.
            Closed: after :meth:`close` or in a forked child.
        """
        self._native.set_hosts(hosts)

    def revoke(self, node_path: str) -> bool:
        """Asks the holder of the lock node ``node_path`` (a holder's
        :attr:`Lock.node_path`, or a :class:`Participant`'s path) to let go:
        writes ``__REVOKE__`` to it as Curator's ``Revoker`` does, so a
        zklock holder's :meth:`Lock.on_revocation` callbacks and a Curator
        holder's ``RevocationListener`` are told. The holder decides;
        nothing is taken from it. Returns False if the node is gone. Blocks
        (without the GIL) for one request.

        Raises:
            InvalidPath: a malformed path.
            NoAuth: the node's ACL does not let this client write it.
            Closed, ConnectionLoss, LockTimeout: as :meth:`participants`.
        """
        return self._native.revoke(node_path)

    def metrics(self) -> Metrics:
        """A snapshot of this client's :class:`Metrics`: acquires by
        outcome, wait and hold times (histograms), suspensions, losses,
        reconnects, session expiries, requests by operation and cleanups
        pending. Never blocks; also after :meth:`close`. For Prometheus,
        see :func:`zklock.metrics.register_client`.

        Raises:
            Closed: in a forked child.
        """
        m = self._native.metrics()
        m["wait_time"] = _histogram(m["wait_time"])
        m["hold_time"] = _histogram(m["hold_time"])
        return Metrics(**m)

    def close(self) -> None:
        """Closes the session: every lock held through this client is lost
        and waiting acquires fail with :class:`Closed`. When it returns,
        every lock of this client says so (``held`` False, ``state`` LOST).
        Idempotent; blocks (without the GIL) up to the operation timeout
        for the server to confirm, except in a listener or state callback,
        where it returns at once (waiting there would hold back every
        callback). In a forked child it does nothing: the session is the
        parent's."""
        self._native.close()

    async def close_async(self) -> None:
        """:meth:`close` for asyncio: awaiting it closes the client at once
        (every lock held through it is lost, waiting acquires fail with
        :class:`Closed`), then waits, without a thread and without blocking
        the event loop, until the server confirmed or the operation timeout
        passed. Idempotent. Cancelling the awaiting task
        only stops that wait. In a forked child it does nothing."""
        fut, done = _completion(asyncio.get_running_loop())
        if self._native.close_start(done):
            await fut

    @classmethod
    def _wrap(cls, native: _zklock.Client) -> "Client":
        """A client over a connected native one (see :func:`connect`)."""
        client = cls.__new__(cls)
        client._native = native
        client._listeners = []
        client._listeners_lock = threading.Lock()
        return client

    def __enter__(self: _ClientT) -> _ClientT:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        """Closes the client."""
        self.close()

    def __repr__(self) -> str:
        return repr(self._native).replace("zklock._zklock.", "zklock.")


class Connecting:
    """A connect in progress, as :func:`connect` returns it: ``await`` it
    for the :class:`Client`, or use it in ``async with`` (which closes the
    client with :meth:`Client.close_async` at the end of the block). Each
    ``await`` (or ``async with``) makes a new connect."""

    __slots__ = ("_args", "_client")

    def __init__(self, args: Tuple[Any, ...]) -> None:
        self._args = args
        self._client: Optional[Client] = None

    async def _connect(self) -> Client:
        fut, done = _completion(asyncio.get_running_loop())
        hosts, session_timeout, connect_timeout, operation_timeout, auth, sasl, acl, *files = self._args
        tls_ca, tls_cert, tls_key = (None if f is None else os.fspath(f) for f in files)
        _zklock.Client.connect_start(
            hosts, session_timeout, connect_timeout, operation_timeout, auth, sasl, acl, tls_ca, tls_cert, tls_key, done
        )
        try:
            native: _zklock.Client = await asyncio.shield(fut)
        except asyncio.CancelledError:
            # Nobody waits for this client any more: close it when it
            # comes, without blocking the loop.
            fut.add_done_callback(_close_unwanted)
            raise
        return Client._wrap(native)

    def __await__(self) -> Generator[Any, None, Client]:
        return self._connect().__await__()

    async def __aenter__(self) -> Client:
        """Connects without blocking the event loop; the client."""
        self._client = await self._connect()
        return self._client

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        """Closes the client without blocking the event loop."""
        client, self._client = self._client, None
        if client is not None:
            await client.close_async()


def _close_unwanted(fut: "asyncio.Future[Any]") -> None:
    """Closes the client of a connect whose awaiting task was cancelled
    (without waiting); a failed connect's exception is taken (it was
    nobody's)."""
    if fut.cancelled():
        return
    if fut.exception() is None:
        fut.result().close_start(lambda ok, value: None)


def connect(
    hosts: str,
    session_timeout: float = 10.0,
    connect_timeout: float = 15.0,
    operation_timeout: float = 10.0,
    auth: Optional[Tuple[str, str]] = None,
    sasl: Optional[Tuple[str, str]] = None,
    acl: Optional[str] = None,
    tls_ca: Optional[PathLike] = None,
    tls_cert: Optional[PathLike] = None,
    tls_key: Optional[PathLike] = None,
) -> Connecting:
    """:class:`Client` for asyncio: connects without blocking the event
    loop (no thread waits either: the core completes the awaited future
    from the new client's event thread). The arguments and the errors are
    those of :class:`Client`; they are raised by the ``await`` (or the
    ``async with``), also for bad arguments::

        async with zklock.connect("zk1:2181,zk2:2181", connect_timeout=5) as zk:
            async with zk.lock("/jobs/nightly", timeout=30) as lock:
                await write_to_storage(lock.fencing_token)

    ``async with`` closes the client at the end of the block
    (:meth:`Client.close_async`); ``zk = await zklock.connect(...)`` gives
    a client to close yourself. Cancelling the awaiting task (e.g.
    ``asyncio.wait_for``) stops the wait at once; the connect goes on in
    the background and its client, if one comes, is closed then.
    Nothing is connected until it is awaited; each await makes a new
    connect.
    """
    return Connecting(
        (hosts, session_timeout, connect_timeout, operation_timeout, auth, sasl, acl, tls_ca, tls_cert, tls_key)
    )

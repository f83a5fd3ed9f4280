"""zklock's exceptions and the one mapping from the core's error codes to them.

Every failure of zklock raises a subclass of :class:`ZkLockError`. Each
carries ``.code``, the stable name of the core's error kind (the same name
as the C enum ``ZKLOCK_<CODE>`` and Node's ``code``), and ``.message``.
Where a builtin exception fits, the class also subclasses it, so that
``except TimeoutError`` or ``except ValueError`` work as expected. An
error of a fenced write that ZooKeeper refused because of one of the
caller's operations also carries ``.failed_op`` (:class:`FailedOp`).
"""

from __future__ import annotations

from typing import Dict, NamedTuple, Optional, Tuple, Type

__all__ = [
    "FailedOp",
    "ZkLockError",
    "InvalidArgument",
    "InvalidPath",
    "LockTimeout",
    "Cancelled",
    "ConnectionLoss",
    "SessionExpired",
    "LockLost",
    "NotHeld",
    "Closed",
    "ZooKeeperError",
    "InternalError",
    "WouldDeadlock",
    "NoAuth",
]


class FailedOp(NamedTuple):
    """Which operation of a fenced write (:meth:`zklock.Lock.fenced_multi`)
    ZooKeeper refused, and why; nothing of the write was made."""

    #: The index of the operation in the list given to ``fenced_multi``.
    #: (It hides the tuple method ``index``, which nobody needs here.)
    index: int  # type: ignore[assignment]
    #: ZooKeeper's name for the error, as its Java client spells it
    #: without the prefix: ``"BadVersion"``, ``"NoNode"``,
    #: ``"NodeExists"``, ``"NotEmpty"``, ``"NoAuth"``, ...
    code: str


class ZkLockError(Exception):
    """Base class of every zklock error.

    Attributes:
        code: the core's error kind name, e.g. ``"TIMEOUT"``.
        message: what went wrong, without the code.
        failed_op: for a fenced write that ZooKeeper refused because of
            one of the caller's operations, which one and ZooKeeper's
            code (:class:`FailedOp`, a named tuple ``(index, code)``);
            None for every other error.
    """

    code: str = "INTERNAL"
    failed_op: Optional[FailedOp] = None

    def __init__(self, message: str = "", code: "str | None" = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return "%s: %s" % (self.code, self.message)


class InvalidArgument(ZkLockError, ValueError):
    """An argument was invalid (malformed connect string, bad timeout, ...)."""

    code = "INVALID_ARGUMENT"


class InvalidPath(InvalidArgument):
    """A ZooKeeper path was malformed (not absolute, empty component, ...)."""

    code = "INVALID_PATH"


class LockTimeout(ZkLockError, TimeoutError):
    """The deadline passed before the lock (or operation) completed."""

    code = "TIMEOUT"


class Cancelled(ZkLockError):
    """The acquire was cancelled with ``Lock.cancel()``; its node is deleted."""

    code = "CANCELLED"


class ConnectionLoss(ZkLockError, ConnectionError):
    """The connection to ZooKeeper was lost or could not be established.

    From ``Lock.check()``: the lock is suspended (it may come back).
    """

    code = "CONNECTION_LOSS"


class SessionExpired(ZkLockError):
    """The ZooKeeper session expired."""

    code = "SESSION_EXPIRED"


class LockLost(ZkLockError):
    """The lock was held but is lost (session expired, node deleted, ...)."""

    code = "LOCK_LOST"


class NotHeld(ZkLockError):
    """The lock is not held by this lock object (e.g. release when not held)."""

    code = "NOT_HELD"


class Closed(ZkLockError):
    """The client was closed."""

    code = "CLOSED"


class ZooKeeperError(ZkLockError):
    """ZooKeeper refused a request with an error that has no class of its own."""

    code = "ZOOKEEPER"


class InternalError(ZkLockError):
    """A bug in zklock (a broken invariant or a caught panic)."""

    code = "INTERNAL"


class WouldDeadlock(ZkLockError):
    """Refused because it would deadlock (read-to-write upgrade on a pair)."""

    code = "WOULD_DEADLOCK"


class NoAuth(ZkLockError, PermissionError):
    """ZooKeeper refused for lack of permission: an ACL does not allow this
    session (e.g. a lock path made with the ``creator`` ACL of another
    identity), or the server refused the credentials."""

    code = "NO_AUTH"


#: The one mapping from the core's error code to its exception class.
_CLASS_BY_CODE: Dict[str, Type[ZkLockError]] = {
    cls.code: cls
    for cls in (
        InvalidArgument,
        InvalidPath,
        LockTimeout,
        Cancelled,
        ConnectionLoss,
        SessionExpired,
        LockLost,
        NotHeld,
        Closed,
        ZooKeeperError,
        InternalError,
        WouldDeadlock,
        NoAuth,
    )
}


for _cls in (FailedOp, ZkLockError, *_CLASS_BY_CODE.values()):
    _cls.__module__ = "zklock"  # shown as zklock.LockTimeout in tracebacks
del _cls


def error_class(code: str) -> Type[ZkLockError]:
    """The exception class for the core's error ``code``.

    An unknown code (a kind added to the core but not here) gives
    :class:`ZkLockError` itself; the test suite fails in that case.
    """
    return _CLASS_BY_CODE.get(code, ZkLockError)


def _from_code(code: str, message: str, failed_op: Optional[Tuple[int, str]] = None) -> ZkLockError:
    """The exception for a core error, with the core's ``failed_op`` as
    ``(index, code)`` or None; called by the native module."""
    exc = error_class(code)(message, code)
    if failed_op is not None:
        exc.failed_op = FailedOp(*failed_op)
    return exc

"""zklock's base exception and the one mapping from the core's error codes to
the exception classes.

Every failure of zklock raises a subclass of :class:`ZkLockError`. Each
carries ``.code``, the stable name of the core's error kind (the same name
as the C enum ``ZKLOCK_<CODE>`` and Node's ``code``), and ``.message``.
Where a builtin exception fits, the class also subclasses it, so that
``except TimeoutError`` or ``except ValueError`` work as expected. An
error of a fenced write that ZooKeeper refused because of one of the
caller's operations also carries ``.failed_op`` (:class:`FailedOp`).

The subclasses, one per error kind, are generated from the core's table
(``_vocabulary.py``).
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Tuple, Type

__all__ = ["FailedOp", "ZkLockError"]


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


for _cls in (FailedOp, ZkLockError):
    _cls.__module__ = "zklock"  # shown as zklock.ZkLockError in tracebacks
del _cls


def error_class(code: str) -> Type[ZkLockError]:
    """The exception class for the core's error ``code``.

    An unknown code (a kind the generated classes do not have yet) gives
    :class:`ZkLockError` itself; the test suite fails in that case.
    """
    from ._vocabulary import ERROR_CLASSES  # imports this module: not at the top

    return ERROR_CLASSES.get(code, ZkLockError)


def _from_code(code: str, message: str, failed_op: Optional[Tuple[int, str]] = None) -> ZkLockError:
    """The exception for a core error, with the core's ``failed_op`` as
    ``(index, code)`` or None; called by the native module."""
    exc = error_class(code)(message, code)
    if failed_op is not None:
        exc.failed_op = FailedOp(*failed_op)
    return exc

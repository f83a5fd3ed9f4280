"""Hostile input and misuse (issue 14): no crash, no hang, one clear error.

Tables of bad values go through every public entry point. Each case must
end within BOUND seconds (it runs on a thread of its own) with the
package's typed error of the right code (``TypeError`` where the value is
not of the right type at all), or with the documented result.

The checks these tables rely on are the core's (zklock-core/src/validate.rs,
ClientOptions):
paths and chroots at most 32 KiB and inside the Basic Multilingual Plane,
no chroot under /zookeeper, host names ASCII and at most 253 bytes, the
list of servers at most 64 KiB, no ',' or white space in a chroot, digest
user and password at most 64 KiB together. None of the cases is expected
to fail.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from decimal import Decimal
from fractions import Fraction
from typing import Any, Callable, Dict, FrozenSet, Iterator, List, Optional, Tuple, Type, Union

import pytest
import zklock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

#: The longest any hostile case may take.
BOUND = 5.0
#: One of the package's error codes, several acceptable ones, TypeError
#: (the value is not of a type the argument takes) or OK (no error).
Expect = Union[str, FrozenSet[str], Type[BaseException], None]
OK: Expect = None

INVALID_ARGUMENT = "INVALID_ARGUMENT"
INVALID_PATH = "INVALID_PATH"
CLOSED = "CLOSED"
NOT_HELD = "NOT_HELD"

BIG = 2 * 1024 * 1024  # a 2 MB string


class Index:
    """An object with ``__index__`` only (like numpy integers)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


def outcome(fn: Callable[[], Any], bound: float = BOUND) -> Tuple[Any, Optional[BaseException]]:
    """Runs ``fn`` on a daemon thread; fails unless it ends within ``bound``
    seconds. Returns (value, None) or (None, exception)."""
    box: Dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - judged by the caller
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="hostile-case", daemon=True).start()
    assert done.wait(bound), "no answer within %s s (a hang)" % bound
    return box.get("value"), box.get("error")


def check(fn: Callable[[], Any], expect: Expect, bound: float = BOUND) -> Any:
    """Runs ``fn`` (bounded) and asserts its outcome is ``expect``."""
    value, error = outcome(fn, bound)
    if expect is OK:
        assert error is None, "raised %r" % (error,)
        return value
    assert error is not None, "no error (returned %r), expected %s" % (value, expect)
    if isinstance(expect, type):
        assert isinstance(error, expect) and not isinstance(error, zklock.ZkLockError), repr(error)
        return None
    codes = frozenset({expect}) if isinstance(expect, str) else expect
    assert isinstance(error, zklock.ZkLockError), "%r is not a zklock error (expected %s)" % (error, sorted(codes))
    assert error.code in codes, "%r: expected %s" % (error, sorted(codes))
    assert type(error) is zklock.error_class(error.code)
    assert error.message and len(str(error)) < 4096, "no message, or one too long to read"
    return None


def run_async(coro_fn: Callable[[], Any]) -> Callable[[], Any]:
    """A callable that runs the coroutine function on a new event loop."""
    return lambda: asyncio.run(coro_fn())


def connect_and_close(*args: Any, **options: Any) -> Callable[[], Any]:
    """A callable that connects with ``zklock.connect(*args, **options)``
    (asyncio) on a new event loop and closes the client."""

    async def run() -> None:
        zk = await zklock.connect(*args, **options)
        await zk.close_async()

    return run_async(run)


# ---- Client options ---------------------------------------------------------

HOSTS = [
    pytest.param("", INVALID_ARGUMENT, id="empty"),
    pytest.param("   ", INVALID_ARGUMENT, id="blank"),
    pytest.param("/", INVALID_ARGUMENT, id="slash"),
    pytest.param(":2181", INVALID_ARGUMENT, id="no-host"),
    pytest.param("127.0.0.1:2181,", INVALID_ARGUMENT, id="stray-comma"),
    pytest.param("127.0.0.1:99999", INVALID_ARGUMENT, id="port-too-big"),
    pytest.param("127.0.0.1:2181\x00", INVALID_ARGUMENT, id="nul-in-port"),
    pytest.param("127.0.0.1\x00:2181", INVALID_ARGUMENT, id="nul-in-host"),
    pytest.param("\x00", INVALID_ARGUMENT, id="nul-host"),
    pytest.param("h\x07st:2181", INVALID_ARGUMENT, id="control-char-host"),
    pytest.param("127.0.0.1:2181/\ud800", INVALID_ARGUMENT, id="lone-surrogate"),
    pytest.param("\ud800:2181", INVALID_ARGUMENT, id="lone-surrogate-host"),
    pytest.param("h" * BIG, INVALID_ARGUMENT, id="2MB-host"),
    pytest.param("h\U0001f600st:2181", INVALID_ARGUMENT, id="non-BMP-host"),
    pytest.param("h\u00e9:2181", INVALID_ARGUMENT, id="non-ASCII-host"),
    pytest.param("h" * 254 + ":2181", INVALID_ARGUMENT, id="254-byte-host"),
    pytest.param(",".join(["127.0.0.1:2181"] * 5000), INVALID_ARGUMENT, id="servers-over-64KiB"),
    pytest.param(None, TypeError, id="None"),
    pytest.param(2181, TypeError, id="int"),
    pytest.param(b"127.0.0.1:2181", TypeError, id="bytes"),
]


@pytest.mark.parametrize("hosts_value, expect", HOSTS)
def test_hostile_connect_strings(hosts_value: Any, expect: Expect) -> None:
    check(lambda: zklock.Client(hosts_value, connect_timeout=1.0).close(), expect)
    check(connect_and_close(hosts_value, connect_timeout=1.0), expect)


CHROOTS = [
    pytest.param("/a//b", INVALID_PATH, id="empty-component"),
    pytest.param("/a/", INVALID_PATH, id="trailing-slash"),
    pytest.param("/a/./b", INVALID_PATH, id="dot"),
    pytest.param("/a\x00b", INVALID_PATH, id="nul"),
    pytest.param("/a\x1fb", INVALID_PATH, id="control-char"),
    pytest.param("/zookeeper", INVALID_PATH, id="zookeeper"),
    pytest.param("/zookeeper/x", INVALID_PATH, id="under-zookeeper"),
    pytest.param("/a\U0001f600", INVALID_PATH, id="non-BMP"),
    pytest.param("/" + "a" * BIG, INVALID_PATH, id="2MB"),
    pytest.param("/" + "a" * (32 * 1024), INVALID_PATH, id="32KiB-plus-1"),
    pytest.param("/a,b", INVALID_PATH, id="comma"),
    pytest.param("/my app", INVALID_PATH, id="space"),
]


@pytest.mark.parametrize("chroot, expect", CHROOTS)
def test_hostile_chroots(hosts: str, chroot: str, expect: Expect) -> None:
    check(lambda: zklock.Client(hosts + chroot, connect_timeout=2.0).close(), expect)


def test_missing_chroot_is_created(hosts: str, observer: zklock.Client, path: str) -> None:
    """A chroot that does not exist is made by the first acquire."""
    with zklock.Client(hosts + path + "/chroot") as zk:
        with zk.lock("/job") as lock:
            assert lock.held
            assert [p.holds for p in observer.participants(path + "/chroot/job")] == [True]


NAN, INF = math.nan, math.inf
#: Never a client option: INVALID_ARGUMENT naming the option.
BAD_OPTION_NUMBERS: List[Any] = [True, False, NAN, -1, -0.5, 0, 0.0, -0.0, INF, -INF, 1e300, 10**400, -(10**400)]
#: Not numbers: TypeError.
NOT_NUMBERS: List[Any] = ["10", b"10", None, [], object()]
OPTIONS = {"session_timeout": 3600, "connect_timeout": 86400, "operation_timeout": 86400}


def option_cases() -> Iterator[Any]:
    for option, most in OPTIONS.items():
        for value in BAD_OPTION_NUMBERS + [most + 0.001, most * 2]:
            yield pytest.param(option, value, INVALID_ARGUMENT, id="%s=%s" % (option, short(value)))
        for value in NOT_NUMBERS:
            yield pytest.param(option, value, TypeError, id="%s=%s" % (option, short(value)))


def short(value: Any) -> str:
    """A test id for ``value``."""
    text = repr(value)
    if len(text) < 20:
        return text
    return "huge-int" if isinstance(value, int) else type(value).__name__


@pytest.mark.parametrize("option, value, expect", list(option_cases()))
def test_hostile_client_timeouts(hosts: str, option: str, value: Any, expect: Expect) -> None:
    # Refused before any connection is tried.
    check(lambda: zklock.Client(hosts, **{option: value}).close(), expect, bound=1.0)
    check(connect_and_close(hosts, **{option: value}), expect, bound=1.0)
    if expect == INVALID_ARGUMENT:
        _, error = outcome(lambda: zklock.Client(hosts, **{option: value}))
        assert option in str(error), "the error does not name %s: %s" % (option, error)


@pytest.mark.parametrize("value", [5, 5.0, Fraction(5), Decimal("5"), Index(5), OPTIONS["session_timeout"]])
def test_numbers_a_client_option_takes(hosts: str, value: Any) -> None:
    for option in OPTIONS:
        with check(lambda: zklock.Client(hosts, **{option: value}), OK) as zk:
            if option == "session_timeout":
                assert 0 < zk.session_timeout <= float(value)


@pytest.mark.parametrize("value", [1e-12, 5e-324, Fraction(1, 10**30)], ids=short)
def test_any_positive_client_option_is_taken(hosts: str, value: Any) -> None:
    """The core takes any positive timeout (below half a nanosecond: 1 ns).
    The connect string is judged after the options: an empty one shows the
    option passed."""
    for option in OPTIONS:
        _, error = outcome(lambda: zklock.Client("", **{option: value}), bound=1.0)
        assert isinstance(error, zklock.InvalidArgument) and "connect string" in str(error), (option, error)
    # A tiny session timeout asks for the least; the server grants its minimum.
    with check(lambda: zklock.Client(hosts, session_timeout=value), OK) as zk:
        assert zk.session_timeout > 0


AUTH = [
    pytest.param(("", "pw"), INVALID_ARGUMENT, id="empty-user"),
    pytest.param(("us:er", "pw"), INVALID_ARGUMENT, id="colon-in-user"),
    pytest.param(("u\ud800", "pw"), INVALID_ARGUMENT, id="surrogate-user"),
    pytest.param(("user", "p\udfff"), INVALID_ARGUMENT, id="surrogate-password"),
    pytest.param(("user", "p" * (64 * 1024)), INVALID_ARGUMENT, id="over-64KiB"),
    pytest.param(("u" * BIG, "pw"), INVALID_ARGUMENT, id="2MB-user"),
    pytest.param("user:pw", TypeError, id="str"),
    pytest.param(("user",), TypeError, id="1-tuple"),
    pytest.param(("u", "p", "x"), TypeError, id="3-tuple"),
    pytest.param((1, 2), TypeError, id="ints"),
]


@pytest.mark.parametrize("auth, expect", AUTH)
def test_hostile_auth(hosts: str, auth: Any, expect: Expect) -> None:
    check(lambda: zklock.Client(hosts, auth=auth).close(), expect)
    check(connect_and_close(hosts, auth=auth), expect)


# ---- Lock paths and identifiers ---------------------------------------------

PATHS = [
    pytest.param("", INVALID_PATH, id="empty"),
    pytest.param("relative", INVALID_PATH, id="relative"),
    pytest.param("a/b", INVALID_PATH, id="relative-2"),
    pytest.param("/", INVALID_PATH, id="root"),
    pytest.param("//", INVALID_PATH, id="double-slash"),
    pytest.param("/a/", INVALID_PATH, id="trailing-slash"),
    pytest.param("/a//b", INVALID_PATH, id="empty-component"),
    pytest.param("/a/./b", INVALID_PATH, id="dot"),
    pytest.param("/a/..", INVALID_PATH, id="dotdot"),
    pytest.param("/zookeeper", INVALID_PATH, id="zookeeper"),
    pytest.param("/zookeeper/x", INVALID_PATH, id="under-zookeeper"),
    pytest.param("/nul\x00", INVALID_PATH, id="nul"),
    pytest.param("/ctl\x07x", INVALID_PATH, id="bell"),
    pytest.param("/tab\tx", INVALID_PATH, id="tab"),
    pytest.param("/del\x7f", INVALID_PATH, id="del"),
    pytest.param("/c1\x85", INVALID_PATH, id="c1-control"),
    pytest.param("/private\ue000", INVALID_PATH, id="private-use"),
    pytest.param("/x\uffff", INVALID_PATH, id="non-character"),
    pytest.param("/\ud800", INVALID_PATH, id="lone-surrogate"),
    pytest.param("/a\udfff/b", INVALID_PATH, id="lone-low-surrogate"),
    pytest.param("/a\U0001f600", INVALID_PATH, id="non-BMP"),
    pytest.param("/\U00010000", INVALID_PATH, id="non-BMP-first"),
    pytest.param("/" + "a" * BIG, INVALID_PATH, id="2MB"),
    pytest.param("/a/" + "b" * BIG, INVALID_PATH, id="2MB-component"),
    pytest.param(None, TypeError, id="None"),
    pytest.param(42, TypeError, id="int"),
    pytest.param(b"/x", TypeError, id="bytes"),
]

ENTRY_POINTS: Dict[str, Callable[[zklock.Client, Any], Any]] = {
    "lock": lambda c, p: c.lock(p),
    "read_lock": lambda c, p: c.read_lock(p),
    "write_lock": lambda c, p: c.write_lock(p),
    "read_write_lock": lambda c, p: c.read_write_lock(p),
    "participants": lambda c, p: c.participants(p),
    "participants_async": lambda c, p: asyncio.run(c.participants_async(p)),
    "leader_async": lambda c, p: asyncio.run(c.leader_async(p)),
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("bad_path, expect", PATHS)
def test_hostile_lock_paths(client: zklock.Client, entry: str, bad_path: Any, expect: Expect) -> None:
    check(lambda: ENTRY_POINTS[entry](client, bad_path), expect)


def test_longest_lock_path(client: zklock.Client, observer: zklock.Client, path: str) -> None:
    """32 KiB of UTF-8 locks; one byte more is INVALID_PATH."""
    longest = path + "/" + "a" * (32 * 1024 - len(path) - 1)
    assert len(longest.encode()) == 32 * 1024
    with client.lock(longest) as lock:
        assert lock.held and [p.holds for p in observer.participants(longest)] == [True]
    check(lambda: client.lock(longest + "a"), INVALID_PATH)
    check(lambda: client.lock(longest[:-1] + "\u00e9"), INVALID_PATH)


IDENTIFIERS = [
    pytest.param("\ud800", INVALID_ARGUMENT, id="lone-surrogate"),
    pytest.param(12, TypeError, id="int"),
    pytest.param(1.5, TypeError, id="float"),
    pytest.param(["x"], TypeError, id="list"),
    pytest.param(bytearray(b"x"), TypeError, id="bytearray"),
]


@pytest.mark.parametrize("identifier, expect", IDENTIFIERS)
def test_hostile_identifiers(client: zklock.Client, path: str, identifier: Any, expect: Expect) -> None:
    for make in (client.lock, client.read_lock, client.write_lock, client.read_write_lock):
        check(lambda: make(path, identifier=identifier), expect)


def test_oversized_identifier_is_refused_when_the_lock_is_made(client: zklock.Client, path: str) -> None:
    for make in (client.lock, client.read_lock, client.write_lock, client.read_write_lock):
        check(lambda: make(path, identifier=b"x" * (64 * 1024 + 1)), INVALID_ARGUMENT)
    assert client.participants(path) == []


# ---- Acquire timeouts ---------------------------------------------------------

#: Never an acquire timeout.
BAD_WAITS = [
    pytest.param(True, INVALID_ARGUMENT, id="True"),
    pytest.param(False, INVALID_ARGUMENT, id="False"),
    pytest.param(NAN, INVALID_ARGUMENT, id="nan"),
    pytest.param(-1, INVALID_ARGUMENT, id="-1"),
    pytest.param(-1.0, INVALID_ARGUMENT, id="-1.0"),
    pytest.param(-2, INVALID_ARGUMENT, id="-2"),
    pytest.param(-0.5, INVALID_ARGUMENT, id="-0.5"),
    pytest.param(-1e-300, INVALID_ARGUMENT, id="-1e-300"),
    pytest.param(-INF, INVALID_ARGUMENT, id="-inf"),
    pytest.param(-(10**400), INVALID_ARGUMENT, id="-10**400"),
    pytest.param("5", TypeError, id="str"),
    pytest.param(b"5", TypeError, id="bytes"),
    pytest.param([], TypeError, id="list"),
    pytest.param(object(), TypeError, id="object"),
]


def acquire_entry_points(client: zklock.Client, path: str) -> Dict[str, Callable[[Any], Any]]:
    """Every way to give an acquire timeout, each a function of the value."""

    async def acquire_async(value: Any) -> bool:
        return await client.lock(path).acquire_async(timeout=value)

    return {
        "acquire": lambda v: client.lock(path).acquire(timeout=v),
        "acquire-positional": lambda v: client.lock(path).acquire(True, v),
        "lock": lambda v: client.lock(path, timeout=v),
        "read_lock": lambda v: client.read_lock(path, timeout=v),
        "write_lock": lambda v: client.write_lock(path, timeout=v),
        "read_write_lock": lambda v: client.read_write_lock(path, timeout=v),
        "acquire_async": lambda v: asyncio.run(acquire_async(v)),
    }


@pytest.mark.parametrize("value, expect", BAD_WAITS)
def test_hostile_acquire_timeouts(client: zklock.Client, path: str, value: Any, expect: Expect) -> None:
    for _name, entry in acquire_entry_points(client, path).items():
        check(lambda: entry(value), expect)
    assert client.participants(path) == []


@pytest.mark.parametrize("value", [-1, -1.0, -0.5, NAN])
def test_refused_acquire_timeout_says_to_pass_none(client: zklock.Client, path: str, value: Any) -> None:
    """-1 is "no limit" in threading.Lock, refused here: the message says
    what to pass instead."""
    for name, entry in acquire_entry_points(client, path).items():
        _, error = outcome(lambda: entry(value))
        assert isinstance(error, zklock.InvalidArgument), (name, error)
        assert "timeout=None" in str(error), (name, str(error))


@pytest.mark.parametrize("value", [0, 1, 0.5, INF, None])
def test_timeout_with_non_blocking_acquire(client: zklock.Client, path: str, value: Any) -> None:
    lock = client.lock(path)
    if value is None:
        assert check(lambda: lock.acquire(blocking=False, timeout=value), OK) is True
        lock.release()
        return
    check(lambda: lock.acquire(blocking=False, timeout=value), INVALID_ARGUMENT)
    check(run_async(lambda: lock.acquire_async(blocking=False, timeout=value)), INVALID_ARGUMENT)
    assert not lock.held


def test_blocking_must_be_a_bool(client: zklock.Client, path: str) -> None:
    check(lambda: client.lock(path).acquire("yes"), TypeError)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [None, INF, 1e300, 10**400, 2e9, Decimal("Infinity")], ids=short)
def test_timeouts_that_wait_without_limit(client: zklock.Client, hosts: str, path: str, value: Any) -> None:
    if value is not None:
        assert client.lock(path, timeout=value).timeout is None
    with zklock.Client(hosts) as other:
        holder = other.lock(path)
        holder.acquire()
        waiter = client.lock(path)
        result: List[bool] = []
        thread = threading.Thread(target=lambda: result.append(waiter.acquire(timeout=value)), daemon=True)
        thread.start()
        time.sleep(0.5)
        assert result == [], "a wait without limit returned %r" % result
        holder.release()
        thread.join(BOUND)
        assert result == [True]
        waiter.release()


# (A positive timeout, however small, is a deadline: 1e-12 is 1 ns, not
# "try once"; see docs/input-rules.md.)
@pytest.mark.parametrize("value", [0, 0.0, Fraction(0), Index(0)], ids=short)
def test_timeouts_that_try_once(client: zklock.Client, hosts: str, path: str, value: Any) -> None:
    assert client.lock(path, timeout=value).timeout == 0
    with zklock.Client(hosts) as other:
        with other.lock(path):
            start = time.monotonic()
            assert check(lambda: client.lock(path).acquire(timeout=value), OK) is False
            assert time.monotonic() - start < 2.0
            check(lambda: client.lock(path, timeout=value).__enter__(), "TIMEOUT")
        assert check(lambda: client.lock(path).acquire(timeout=value), OK) is True


@pytest.mark.parametrize("value", [1e-12, 5e-324, 5e-6], ids=short)
def test_a_tiny_timeout_is_a_deadline_for_a_multi_lock(client: zklock.Client, path: str, value: Any) -> None:
    # Its members share the deadline; the time left was passed on as zero,
    # which tries once, and the free multi-lock was granted (outside test).
    multi = client.multi_lock([path + "/a", path + "/b"])
    assert check(lambda: multi.acquire(timeout=value), OK) is False
    lock = client.lock(path + "/a")
    assert lock.acquire(blocking=False) is True
    lock.release()


# ---- Misuse: after close(), twice, asyncio -------------------------------------


def test_methods_after_close(hosts: str, path: str) -> None:
    zk = zklock.Client(hosts)
    made_before = zk.lock(path)
    rw = zk.read_write_lock(path + "-rw")
    zk.close()
    check(zk.close, OK)  # idempotent
    assert zk.closed
    for _name, entry in ENTRY_POINTS.items():
        check(lambda: entry(zk, path), CLOSED)
    check(lambda: zk.session_id, CLOSED)
    check(lambda: zk.session_timeout, CLOSED)
    for lock in (made_before, rw.read, rw.write):
        check(lock.acquire, CLOSED)
        check(lambda: lock.acquire(blocking=False), CLOSED)
        check(lambda: lock.acquire(timeout=1), CLOSED)
        check(run_async(lock.acquire_async), CLOSED)
        check(lock.__enter__, CLOSED)
        check(run_async(lock.__aenter__), CLOSED)
        check(lock.release, NOT_HELD)
        check(run_async(lock.release_async), NOT_HELD)
        check(lock.check, NOT_HELD)
        assert not lock.held and lock.state == "RELEASED"


def test_held_lock_after_close(hosts: str, observer: zklock.Client, path: str) -> None:
    zk = zklock.Client(hosts)
    lock = zk.lock(path)
    lock.acquire()
    zk.close()
    assert not lock.held and lock.state == "LOST"
    check(lock.check, CLOSED)
    check(lock.acquire, CLOSED)
    check(lock.release, CLOSED)
    check(lock.release, NOT_HELD)
    assert lock.state == "RELEASED"
    assert observer.participants(path) == []


def test_state_right_after_close(hosts: str, path: str) -> None:
    """close() returns only when every read says what it did (50 tries)."""
    for i in range(50):
        zk = zklock.Client(hosts)
        lock = zk.lock("%s-%d" % (path, i))
        lock.acquire()
        zk.close()
        state, held = lock.state, lock.held
        assert (state, held) == ("LOST", False), "try %d: state %s, held %s after close()" % (i, state, held)


def test_release_twice(client: zklock.Client, path: str) -> None:
    lock = client.lock(path)
    lock.acquire()
    assert check(lock.release, OK) is True
    check(lock.release, NOT_HELD)
    check(run_async(lock.release_async), NOT_HELD)

    def exit_after_release() -> None:
        with lock:
            lock.release()

    check(exit_after_release, NOT_HELD)
    assert not lock.held


def test_async_release_twice_and_async_with(client: zklock.Client, path: str) -> None:
    lock = client.lock(path)

    async def main() -> None:
        assert await lock.acquire_async(timeout=INF)
        assert await lock.release_async()
        with pytest.raises(zklock.NotHeld):
            await lock.release_async()
        async with lock:
            assert lock.held
        with pytest.raises(zklock.NotHeld):
            await lock.__aexit__(None, None, None)

    check(run_async(main), OK)


def test_check_and_callbacks_misuse(client: zklock.Client, path: str) -> None:
    lock = client.lock(path)
    check(lock.check, NOT_HELD)
    check(lambda: lock.fencing_token, NOT_HELD)
    check(lambda: lock.node_path, NOT_HELD)
    for bad in (None, 5, "callback"):
        check(lambda: lock.on_state_change(bad), TypeError)  # type: ignore[arg-type]


# ---- Properties: timeouts and paths -------------------------------------------

FOREVER = 1_000_000_000.0


def as_seconds(value: Any) -> float:
    """``value`` as a float; a number beyond a float's range is an infinity."""
    try:
        return float(value)
    except OverflowError:
        return INF if value > 0 else -INF


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(), st.integers(), st.integers(min_value=-(2**70), max_value=2**70).map(Fraction)))
def test_acquire_timeout_rule(value: Any) -> None:
    """The rule of the core for acquire timeouts, as Python sees it."""
    secs = as_seconds(value)
    value_out, error = outcome(lambda: zklock._zklock._wait_limit(True, value), bound=1.0)
    expected: Optional[float]
    if math.isnan(secs) or secs < 0:
        assert isinstance(error, zklock.InvalidArgument), (value, error)
        return
    elif secs > FOREVER:
        expected = None
    else:
        expected = secs
    assert error is None, (value, error)
    if expected is None:
        assert value_out is None
    else:
        assert value_out == pytest.approx(expected, abs=1e-9)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(), st.integers(), st.integers().map(Fraction)), st.sampled_from(sorted(OPTIONS)))
def test_client_option_rule(value: Any, option: str) -> None:
    """Options are refused (INVALID_ARGUMENT naming the option) unless
    finite, > 0 and at most their maximum. The options are judged before
    the connect string, which is empty here: an accepted value gets the
    connect string's error, so nothing connects."""
    secs = as_seconds(value)
    valid = math.isfinite(secs) and 0 < secs <= OPTIONS[option]
    _, error = outcome(lambda: zklock.Client("", **{option: value}), bound=1.0)
    assert isinstance(error, zklock.InvalidArgument), (value, error)
    if valid:
        assert "connect string" in str(error), (value, error)
    else:
        assert option in str(error), (value, error)


SIMPLE_COMPONENT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=12)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(st.characters(exclude_categories=()), max_size=40))
def test_any_text_is_a_lock_path_or_invalid_path(client: zklock.Client, text: str) -> None:
    """Any text: a lock object (no server round trip) or INVALID_PATH."""
    value, error = outcome(lambda: client.lock(text), bound=1.0)
    if error is None:
        assert value.path == text and text.startswith("/")
        assert all(ord(c) <= 0xFFFF for c in text), "a character outside the BMP was accepted: %r" % text
    else:
        assert isinstance(error, zklock.InvalidPath), (text, error)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(SIMPLE_COMPONENT.filter(lambda c: c not in ("zookeeper",)), min_size=1, max_size=6))
def test_plain_paths_are_accepted(client: zklock.Client, components: List[str]) -> None:
    text = "/" + "/".join(components)
    assert client.lock(text).path == text

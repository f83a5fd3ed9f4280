"""Exceptions: every core error code is mapped; bad input raises the right class."""

from __future__ import annotations

import pytest
import zklock
from zklock import _zklock

#: The builtin each class must also be, where one fits.
BUILTIN = {
    "TIMEOUT": TimeoutError,
    "CONNECTION_LOSS": ConnectionError,
    "INVALID_ARGUMENT": ValueError,
    "INVALID_PATH": ValueError,
}


def test_every_core_error_code_is_mapped() -> None:
    codes = _zklock.ERROR_CODES
    assert len(codes) == len(set(codes)) >= 12
    assert zklock.ERROR_CODES == codes
    unmapped = [c for c in codes if zklock.error_class(c) is zklock.ZkLockError]
    assert unmapped == [], "core error codes without a Python exception class: %s" % unmapped
    for code in codes:
        cls = zklock.error_class(code)
        assert issubclass(cls, zklock.ZkLockError)
        err = cls("some message", code)
        assert err.code == code and cls.code == code
        assert err.message == "some message"
        assert str(err) == "%s: some message" % code
        assert cls.__name__ in zklock.__all__
        if code in BUILTIN:
            assert isinstance(err, BUILTIN[code])


def test_class_hierarchy() -> None:
    assert issubclass(zklock.InvalidPath, zklock.InvalidArgument)
    assert issubclass(zklock.LockTimeout, TimeoutError)
    assert issubclass(zklock.ConnectionLoss, ConnectionError)
    assert issubclass(zklock.InvalidArgument, ValueError)
    assert zklock.error_class("NO_SUCH_CODE") is zklock.ZkLockError


@pytest.mark.parametrize(
    "bad", ["", "relative", "/trailing/", "//double", "/a//b", "/zookeeper/x", "/a/./b", "/a/../b", "/nul\x00"]
)
def test_bad_lock_paths(client: zklock.Client, bad: str) -> None:
    for make in (client.lock, client.read_lock, client.write_lock, client.read_write_lock, client.participants):
        with pytest.raises(zklock.InvalidPath) as info:
            make(bad)
        assert info.value.code == "INVALID_PATH"
        assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "bad", ["", "  ", "a:1,,b:2", "127.0.0.1:notaport", "127.0.0.1:0", "127.0.0.1:2181/bad/", ":2181", "[::1:2181"]
)
def test_bad_connect_strings(bad: str) -> None:
    with pytest.raises(zklock.InvalidArgument):
        zklock.Client(bad, connect_timeout=2.0)


def test_nobody_listening_is_connection_loss() -> None:
    with pytest.raises(zklock.ConnectionLoss) as info:
        zklock.Client("127.0.0.1:1", connect_timeout=0.5)
    assert isinstance(info.value, ConnectionError)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"session_timeout": 0},
        {"session_timeout": -1.0},
        {"connect_timeout": float("nan")},
        {"operation_timeout": float("inf")},
        {"session_timeout": 7200.0},
        {"auth": ("", "pw")},
        {"auth": ("us:er", "pw")},
    ],
)
def test_bad_client_options(hosts: str, kwargs: dict) -> None:
    with pytest.raises(zklock.InvalidArgument):
        zklock.Client(hosts, **kwargs)


def test_wrong_types_are_type_errors(client: zklock.Client, hosts: str) -> None:
    with pytest.raises(TypeError):
        zklock.Client(2181)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        zklock.Client(hosts, session_timeout="10")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        zklock.Client(hosts, auth="user:pw")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        client.lock(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        client.lock("/x", identifier=12)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        client.lock("/x", timeout="5")  # type: ignore[arg-type]
    lock = client.lock("/x")
    with pytest.raises(TypeError):
        lock.acquire(timeout="1")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        lock.on_state_change(None)  # type: ignore[arg-type]


def test_bad_acquire_arguments(client: zklock.Client, path: str) -> None:
    lock = client.lock(path)
    with pytest.raises(zklock.InvalidArgument):
        lock.acquire(blocking=False, timeout=1.0)
    with pytest.raises(zklock.InvalidArgument):
        lock.acquire(timeout=-2)
    with pytest.raises(zklock.InvalidArgument):
        lock.acquire(timeout=float("nan"))
    with pytest.raises(zklock.InvalidArgument):
        client.lock(path, timeout=-5)
    assert not lock.held


def test_bad_identifier(client: zklock.Client, path: str) -> None:
    with pytest.raises(zklock.InvalidArgument):
        client.lock(path, identifier=b"__REVOKE__")
    with pytest.raises(zklock.InvalidArgument):
        client.lock(path, identifier=b"x" * (64 * 1024 + 1))


def test_native_module_raises_the_same_classes(client: zklock.Client) -> None:
    native = client._native  # the PyO3 object
    with pytest.raises(zklock.InvalidPath):
        native.lock("nope")
    with pytest.raises(zklock.NotHeld):
        native.lock("/x").release()

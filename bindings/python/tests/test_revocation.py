"""Revocation, Curator-compatible: Client.revoke asks a holder to let go,
the holder's Lock.on_revocation callbacks are told and it keeps the lock."""

from __future__ import annotations

import threading

import pytest
import zklock


def test_a_revoked_holder_is_told_and_keeps_the_lock(client: zklock.Client, hosts: str, path: str) -> None:
    lock = client.lock(path)
    told = threading.Event()
    before = threading.Event()
    early = lock.on_revocation(before.set)  # registered before the grant
    assert lock.acquire(timeout=5)
    assert not lock.revocation_requested
    subscription = lock.on_revocation(told.set)
    with zklock.Client(hosts) as other:
        assert other.revoke(lock.node_path) is True
        assert told.wait(10), "the holder was not told"
        assert before.wait(10), "a callback registered before the grant was not told"
        assert lock.revocation_requested
        lock.check()  # nothing was taken away
        assert lock.held
        # A callback registered after the request is called once soon.
        late = threading.Event()
        lock.on_revocation(late.set)
        assert late.wait(10)
        subscription.cancel()
        early.cancel()
        node = lock.node_path
        assert lock.release()
        assert not lock.revocation_requested
        assert other.revoke(node) is False, "the node is gone"
        with pytest.raises(zklock.InvalidPath):
            other.revoke("not/a/path")
        with pytest.raises(TypeError):
            lock.on_revocation(42)  # type: ignore[arg-type]


def test_a_callback_that_raises_goes_to_the_unraisable_hook(client: zklock.Client, path: str) -> None:
    lock = client.lock(path)
    assert lock.acquire(timeout=5)
    seen = threading.Event()
    hook_args: list = []

    def boom() -> None:
        raise RuntimeError("boom")

    import sys

    old = sys.unraisablehook

    def hook(args) -> None:  # type: ignore[no-untyped-def]
        hook_args.append(args.exc_value)
        seen.set()

    sys.unraisablehook = hook
    try:
        lock.on_revocation(boom)
        assert client.revoke(lock.node_path)
        assert seen.wait(10)
        assert isinstance(hook_args[0], RuntimeError)
    finally:
        sys.unraisablehook = old
    assert lock.release()

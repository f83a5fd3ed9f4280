"""The "stop now" signals of a held lock: lost_event(), wait_lost() and
wait_lost_async() fire once check() raises, and not while it passes."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import zklock
from support import delete_as_third_party


def test_wait_lost_returns_none_while_held_and_not_held_after_release(client: zklock.Client, path: str) -> None:
    lock = client.lock(path)
    with pytest.raises(zklock.NotHeld):
        lock.wait_lost(0)
    with pytest.raises(zklock.NotHeld):
        lock.lost_event()
    assert lock.acquire(timeout=5)
    event = lock.lost_event()
    assert lock.wait_lost(0.3) is None, "held: nothing to report"
    assert not event.is_set()
    lock.check()
    with pytest.raises(zklock.InvalidArgument):
        lock.wait_lost(-1)
    waiter: list = []
    t = threading.Thread(target=lambda: waiter.append(lock.wait_lost()))
    t.start()
    time.sleep(0.2)
    assert lock.release()
    t.join(10)
    assert not t.is_alive(), "wait_lost() did not return after the release"
    assert isinstance(waiter[0], zklock.NotHeld)
    assert event.wait(10), "the Event was not set by the release"


def test_signals_fire_when_the_connection_goes_and_the_session_expires(harness, path: str) -> None:
    zk = zklock.Client(harness.proxied, session_timeout=2.0, connect_timeout=5.0, operation_timeout=2.0)
    try:
        lock = zk.lock(path)
        assert lock.acquire(timeout=5)
        event = lock.lost_event()
        got: list = []
        t = threading.Thread(target=lambda: got.append(lock.wait_lost(30)))
        t.start()
        time.sleep(0.2)
        assert not event.is_set()
        harness.command("blackhole")
        try:
            # The safety clock runs out well before the session can expire:
            # both signals fire, and check() raises from then on.
            assert event.wait(10), "lost_event not set with the server unreachable"
            t.join(10)
            assert isinstance(got[0], (zklock.ConnectionLoss, zklock.LockLost)), got
            with pytest.raises((zklock.ConnectionLoss, zklock.LockLost)):
                lock.check()
        finally:
            harness.command("heal")
    finally:
        zk.close()


def test_the_event_is_set_by_the_time_check_raises(client: zklock.Client, hosts: str, path: str) -> None:
    lock = client.lock(path)
    assert lock.acquire(timeout=5)
    event = lock.lost_event()
    # A third party (kazoo) deletes our node: the lock is LOST.
    delete_as_third_party(hosts, lock.node_path)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            lock.check()
        except zklock.LockLost:
            break
        time.sleep(0.005)
    else:
        pytest.fail("check() still passes after our node was deleted")
    assert event.wait(2), "check() raises but the Event is not set"
    assert isinstance(lock.wait_lost(0), zklock.LockLost), "check() raises: wait_lost(0) says so at once"


def test_wait_lost_async_returns_the_error_of_check(client: zklock.Client, path: str) -> None:
    async def main() -> None:
        lock = client.lock(path)
        async with lock:
            waiting = asyncio.ensure_future(lock.wait_lost_async())
            await asyncio.sleep(0.2)
            assert not waiting.done(), "held: nothing to report"
            # Cancelling a waiter stops nothing.
            other = asyncio.ensure_future(lock.wait_lost_async())
            await asyncio.sleep(0)
            other.cancel()
            with pytest.raises(asyncio.CancelledError):
                await other
            lock.check()
        assert isinstance(await asyncio.wait_for(waiting, 10), zklock.NotHeld)
        with pytest.raises(zklock.NotHeld):
            await lock.wait_lost_async()
        # Closing the client: Closed.
        assert await lock.acquire_async(timeout=5)
        waiting = asyncio.ensure_future(lock.wait_lost_async())
        await asyncio.sleep(0.1)
        client.close()
        assert isinstance(await asyncio.wait_for(waiting, 10), (zklock.Closed, zklock.LockLost))

    asyncio.run(main())

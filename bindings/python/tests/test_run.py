"""Lock.run (kazoo's Election.run) and Lock.run_async (the core's
Lock::run_async): the work runs while the lock is held, then it goes."""

from __future__ import annotations

import asyncio
import time

import pytest
import zklock
from support import delete_as_third_party, wait_for


def test_run_returns_the_value_and_releases(client: zklock.Client, path: str) -> None:
    lock = client.lock(path)

    def work(a: int, b: int = 0) -> int:
        assert lock.held
        return a + b

    assert lock.run(work, 40, b=2) == 42
    assert not lock.held
    assert client.participants(path) == []


def test_run_releases_and_reraises(client: zklock.Client, path: str) -> None:
    lock = client.lock(path)

    def fail() -> None:
        assert lock.held
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        lock.run(fail)
    assert not lock.held
    assert client.participants(path) == []


def test_run_in_an_election_runs_while_leading(client: zklock.Client, path: str) -> None:
    election = client.election(path, "me")
    assert election.run(lambda: client.leader(path).data) == b"me"  # type: ignore[union-attr]
    assert client.leader(path) is None


def test_run_async_returns_the_value_and_releases(client: zklock.Client, path: str) -> None:
    lock = client.lock(path)

    async def work(x: int) -> int:
        await asyncio.sleep(0.05)
        assert lock.held
        return x * 2

    async def main() -> None:
        assert await lock.run_async(work, 21) == 42
        assert not lock.held
        with pytest.raises(KeyError):

            async def fail() -> None:
                raise KeyError("k")

            await lock.run_async(fail)
        assert not lock.held

    asyncio.run(main())
    assert client.participants(path) == []


def test_run_async_cancels_the_task_when_the_lock_is_lost(client: zklock.Client, hosts: str, path: str) -> None:
    lock = client.lock(path)
    state: list = []

    async def work() -> None:
        state.append("started")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            state.append("cancelled")
            raise

    async def main() -> None:
        async def thief() -> None:
            while not state:
                await asyncio.sleep(0.01)
            await asyncio.to_thread(delete_as_third_party, hosts, lock.node_path)

        t = asyncio.ensure_future(thief())
        with pytest.raises(zklock.LockLost):
            await asyncio.wait_for(lock.run_async(work), 20)
        await t

    asyncio.run(main())
    assert state == ["started", "cancelled"]
    assert not lock.held


def test_run_async_cancels_the_task_when_the_lock_is_suspended(harness, observer: zklock.Client, path: str) -> None:
    # Cut off from ZooKeeper for less than the session timeout: the session
    # survives, but the task is cancelled once the lock is SUSPENDED (as
    # Curator's LeaderSelector cancels its leader), not at the expiry.
    zk = zklock.Client(harness.proxied, session_timeout=6.0, connect_timeout=5.0, operation_timeout=2.0)
    session = zk.session_id
    lock = zk.lock(path)
    state: list = []

    async def work() -> None:
        state.append("started")
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            state.append("cancelled")
            raise

    async def main() -> float:
        async def cut() -> float:
            while not state:
                await asyncio.sleep(0.01)
            harness.command("blackhole")
            cut_at = time.monotonic()
            while state[-1] != "cancelled":
                await asyncio.sleep(0.01)
            harness.command("heal")
            return time.monotonic() - cut_at

        t = asyncio.ensure_future(cut())
        with pytest.raises(zklock.ZkLockError) as raised:
            await asyncio.wait_for(lock.run_async(work), 30)
        assert not isinstance(raised.value, zklock.LockTimeout), raised.value
        return await t

    try:
        took = asyncio.run(main())
        assert state == ["started", "cancelled"]
        assert took < 6.0, "cancelled at the suspension, before any expiry (%.1f s)" % took
        assert not lock.held
        wait_for(lambda: observer.participants(path) == [], timeout=15, what="the node to go")
        assert zk.session_id == session, "the session survived the cut"
    finally:
        harness.command("heal")
        zk.close()


def test_cancelling_run_async_cancels_the_task_and_releases(client: zklock.Client, path: str) -> None:
    lock = client.lock(path)
    state: list = []

    async def work() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            state.append("cancelled")
            raise

    async def main() -> None:
        outer = asyncio.ensure_future(lock.run_async(work))
        await asyncio.sleep(0.5)
        assert lock.held
        outer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await outer

    asyncio.run(main())
    assert state == ["cancelled"]
    assert not lock.held
    assert client.participants(path) == []

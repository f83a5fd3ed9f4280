"""asyncio: waits do not block the event loop; task cancellation leaves no node."""

from __future__ import annotations

import asyncio
import time
from typing import List

import pytest
import zklock
from support import wait_for


async def ticker(ticks: List[float], period: float = 0.02) -> None:
    while True:
        ticks.append(time.monotonic())
        await asyncio.sleep(period)


def test_async_with_and_loop_keeps_running(client: zklock.Client, hosts: str, path: str) -> None:
    async def main() -> None:
        ticks: List[float] = []
        tick_task = asyncio.ensure_future(ticker(ticks))
        holder = client.lock(path)
        async with holder:
            assert holder.held
            with zklock.Client(hosts) as other:
                waiter = other.lock(path, timeout=10)
                enter = asyncio.ensure_future(waiter.__aenter__())
                await asyncio.sleep(0.3)
                assert not enter.done()
                before = len(ticks)
                await asyncio.sleep(0.3)
                # The loop ran the ticker while the acquire waited.
                assert len(ticks) - before >= 8
                await holder.release_async()
                assert await asyncio.wait_for(enter, 10) is waiter
                assert waiter.held
                await waiter.__aexit__(None, None, None)
                assert not waiter.held
            await holder.acquire_async()  # so that the async with can release
        assert not holder.held
        gaps = [b - a for a, b in zip(ticks, ticks[1:])]
        assert max(gaps) < 0.5, "the event loop was blocked for %.2f s" % max(gaps)
        tick_task.cancel()

    asyncio.run(main())


def test_acquire_async_timeout_returns_false(client: zklock.Client, hosts: str, path: str) -> None:
    async def main() -> None:
        async with client.lock(path):
            with zklock.Client(hosts) as other:
                waiter = other.lock(path)
                start = time.monotonic()
                assert await waiter.acquire_async(timeout=0.4) is False
                assert time.monotonic() - start >= 0.35
                assert await waiter.acquire_async(blocking=False) is False
                with pytest.raises(zklock.LockTimeout):
                    async with other.lock(path, timeout=0.2):
                        pytest.fail("entered a held lock")

    asyncio.run(main())


def test_cancelled_task_cancels_the_acquire(
    client: zklock.Client, observer: zklock.Client, hosts: str, path: str
) -> None:
    async def main() -> None:
        async with client.lock(path):
            with zklock.Client(hosts) as other:
                waiter = other.lock(path)
                task = asyncio.ensure_future(waiter.acquire_async())
                for _ in range(250):
                    if len(observer.participants(path)) == 2:
                        break
                    await asyncio.sleep(0.02)
                assert len(observer.participants(path)) == 2
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                # The node was deleted before the cancellation propagated.
                parts = observer.participants(path)
                assert [p.session_id for p in parts] == [client.session_id]
                assert not waiter.held
                # The handle still works afterwards (the cancel is over).
                assert await waiter.acquire_async(blocking=False) is False

    asyncio.run(main())


def test_async_wait_for_timeout_leaves_no_node(
    client: zklock.Client, observer: zklock.Client, hosts: str, path: str
) -> None:
    async def main() -> None:
        async with client.lock(path):
            with zklock.Client(hosts) as other:
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(other.lock(path).acquire_async(), 0.5)
                wait_for(lambda: len(observer.participants(path)) == 1, what="the waiter's node to go")

    asyncio.run(main())


def _process_threads() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise AssertionError("no Threads: line in /proc/self/status")


def test_cancelling_one_of_1000_tasks_on_one_lock_object_cancels_that_acquire_only(
    client: zklock.Client, observer: zklock.Client, hosts: str, path: str
) -> None:
    async def main() -> None:
        holder = client.lock(path)
        assert await holder.acquire_async()
        with zklock.Client(hosts) as other:
            shared = other.lock(path)
            before = _process_threads()
            tasks = [asyncio.ensure_future(shared.acquire_async()) for _ in range(1000)]
            for _ in range(500):
                if len(observer.participants(path)) == 1001:
                    break
                await asyncio.sleep(0.02)
            assert len(observer.participants(path)) == 1001, "each acquire is its own node"
            # No thread per waiting acquire.
            extra = _process_threads() - before
            assert extra < 4, "%d more threads for 1,000 waiting acquires" % extra
            tasks[500].cancel()
            with pytest.raises(asyncio.CancelledError):
                await tasks[500]
            await asyncio.sleep(0.3)
            assert [t.done() for t in tasks].count(True) == 1, "only the cancelled acquire ended"
            assert await holder.release_async()
            # The 999 others are granted one after another, each its own
            # contender (each released as it comes).
            others = [t for i, t in enumerate(tasks) if i != 500]
            for granted in asyncio.as_completed(others, timeout=60):
                assert await granted is True
                assert shared.depth == 1, "two tasks of one lock object held it at once"
                await shared.release_async()
            assert observer.participants(path) == []

    asyncio.run(main())


def test_a_blocking_acquire_from_the_event_thread_does_not_hang(client: zklock.Client, path: str) -> None:
    """The native completion of an asyncio acquire runs on the client's
    event thread (as state-change callbacks do); a blocking acquire made
    there must not wait for that same thread."""
    import queue

    outcome: "queue.Queue[object]" = queue.Queue()
    first, second = client.lock(path + "/a"), client.lock(path + "/b")

    def done(ok: bool, value: object) -> None:
        try:
            outcome.put(("inner", second._native.acquire(True, 5.0)))
        except BaseException as e:  # noqa: BLE001 - reported to the test
            outcome.put(("inner", e))

    first._native.acquire_start(True, 5.0, done)
    assert outcome.get(timeout=20) == ("inner", True)
    assert second.held
    second.release()
    first.release()


def test_a_task_cancelled_around_its_grant_leaves_no_lock_and_no_node(
    client: zklock.Client, observer: zklock.Client, hosts: str, path: str
) -> None:
    async def main() -> None:
        holder = client.lock(path)
        with zklock.Client(hosts) as other:
            waiter = other.lock(path)
            for i in range(30):
                assert await holder.acquire_async()
                task = asyncio.ensure_future(waiter.acquire_async())
                for _ in range(500):
                    if len(observer.participants(path)) == 2:
                        break
                    await asyncio.sleep(0.01)
                released = asyncio.ensure_future(holder.release_async())
                if i % 3 == 0:
                    task.cancel()
                await released
                for _ in range(i % 3):
                    await asyncio.sleep(0)
                task.cancel()
                try:
                    got = await task
                except asyncio.CancelledError:
                    got = None
                if got:  # granted before the cancel reached it
                    await waiter.release_async()
                assert waiter.depth == 0
                for _ in range(500):
                    if not observer.participants(path):
                        break
                    await asyncio.sleep(0.01)
                assert observer.participants(path) == [], "round %d left a node" % i

    asyncio.run(main())

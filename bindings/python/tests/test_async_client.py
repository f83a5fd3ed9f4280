"""asyncio forms of the client: ``zklock.connect`` (connect without
blocking the event loop), ``close_async``, ``participants_async`` and
``leader_async``."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Iterator, List

import pytest
import zklock
from conftest import Harness
from support import wait_for


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A loopback port that accepts TCP connections (the kernel completes
    the handshake) but never answers: a ZooKeeper that hangs. Its connect
    string."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield "127.0.0.1:%d" % server.getsockname()[1]


async def ticks_while(task: "asyncio.Future[object]", count: int) -> int:
    """Runs ``count`` turns of 10 ms on the loop; how many of them ended
    with ``task`` still pending."""
    pending = 0
    for _ in range(count):
        await asyncio.sleep(0.01)
        pending += not task.done()
    return pending


def test_connect_leaves_the_loop_running_while_the_server_is_silent(silent_server: str) -> None:
    async def attempt() -> None:
        async with zklock.connect(silent_server, connect_timeout=3.0):
            raise AssertionError("connected to a server that never answers")

    async def main() -> None:
        task = asyncio.ensure_future(attempt())
        # A connect that blocked the loop would run (and fail) inside the
        # task's first step: the loop's other turns would only come after.
        assert await ticks_while(task, 10) == 10, "the event loop did not run while connecting"
        with pytest.raises(zklock.ConnectionLoss):
            await asyncio.wait_for(task, 30)

    asyncio.run(main())


def test_connect_looks_names_up_off_the_loop(silent_server: str) -> None:
    # Names go to the resolver (none of them resolves); many at once make a
    # resolver slow (seconds on this project's machines). The connect must
    # look them up off the event loop: before, the servers' addresses for
    # TCP_NODELAY were looked up by the calling thread, one by one, with
    # the GIL held (the loop stood still for 5-10 s).
    hosts = ",".join("zz%d.invalid:2181" % i for i in range(40)) + "," + silent_server

    async def main() -> None:
        gaps: List[float] = []

        async def ticker() -> None:
            last = time.monotonic()
            while True:
                await asyncio.sleep(0.01)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        ticking = asyncio.ensure_future(ticker())
        await asyncio.sleep(0.05)
        with pytest.raises(zklock.ConnectionLoss):
            await asyncio.wait_for(zklock.connect(hosts, connect_timeout=3.0), 60)
        ticking.cancel()
        assert max(gaps) < 1.0, "the event loop stood still for %.2f s while connecting" % max(gaps)

    asyncio.run(main())


def test_cancelled_connect_ends_the_wait_at_once(silent_server: str, hosts: str) -> None:
    async def main() -> None:
        task = asyncio.ensure_future(zklock.connect(silent_server, connect_timeout=5.0).__aenter__())
        assert await ticks_while(task, 3) == 3
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 2)
        # The loop and the package still work.
        zk = await asyncio.wait_for(zklock.connect(hosts), 30)
        assert not zk.closed
        await zk.close_async()
        assert zk.closed

    asyncio.run(main())


def test_async_with_connect_locks_lists_and_closes(observer: zklock.Client, hosts: str, path: str) -> None:
    async def main() -> zklock.Client:
        async with zklock.connect(hosts, session_timeout=10.0) as zk:
            assert isinstance(zk, zklock.Client) and not zk.closed
            async with zk.lock(path, identifier="async-holder") as lock:
                assert lock.held
                mine = await zk.participants_async(path)
                assert [(p.holds, p.data, p.session_id) for p in mine] == [(True, b"async-holder", zk.session_id)]
                assert mine == observer.participants(path)
            assert await zk.participants_async(path) == []
            async with zk.election(path + "/election", "me"):
                leader = await zk.leader_async(path + "/election")
                assert leader is not None and leader.data == b"me" and leader.session_id == zk.session_id
            assert await zk.leader_async(path + "/election") is None
            held = zk.lock(path + "/held")
            await held.acquire_async()
        # The end of the block closed the client: its lock went with the session.
        assert not held.held
        wait_for(lambda: observer.participants(path + "/held") == [], what="the closed session's node to go")
        return zk

    zk = asyncio.run(main())
    assert zk.closed
    with pytest.raises(zklock.Closed):
        zk.lock(path)


def test_await_connect_and_bad_arguments(hosts: str, path: str) -> None:
    async def main() -> None:
        zk = await zklock.connect(hosts)
        try:
            with pytest.raises(zklock.InvalidPath):
                await zk.participants_async("no-slash")
            with pytest.raises(TypeError):
                await zk.participants_async(42)  # type: ignore[arg-type]
        finally:
            await zk.close_async()
        await zk.close_async()  # idempotent
        with pytest.raises(zklock.Closed):
            await zk.participants_async(path)
        with pytest.raises(zklock.InvalidArgument):
            await zklock.connect(hosts, session_timeout=-1)
        with pytest.raises(zklock.InvalidArgument):
            await zklock.connect(hosts, connect_timeout=True)
        with pytest.raises(TypeError):
            await zklock.connect(7)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            await zklock.connect(hosts, tls_ca=3)  # type: ignore[arg-type]

    asyncio.run(main())


def test_close_and_participants_async_leave_the_loop_running_while_the_server_is_silent(path: str) -> None:
    # A server of its own: the test stops it (SIGSTOP) while the client
    # lists and closes, so that both wait for the operation timeout.
    harness = Harness()
    try:

        async def main() -> None:
            zk = await zklock.connect(harness.connect, operation_timeout=2.0)
            lock = zk.lock(path)
            assert await lock.acquire_async()
            harness.command("freeze 0")
            try:
                listing = asyncio.ensure_future(zk.participants_async(path))
                assert await ticks_while(listing, 10) == 10, "the event loop did not run while listing"
                with pytest.raises((zklock.ConnectionLoss, zklock.LockTimeout)):
                    await asyncio.wait_for(listing, 30)
                ticks: List[float] = []
                closing = asyncio.ensure_future(zk.close_async())
                while not closing.done():
                    ticks.append(time.monotonic())
                    await asyncio.sleep(0.01)
                # The close took the operation timeout, and the loop kept
                # turning meanwhile.
                assert len(ticks) >= 10, "the event loop did not run while closing (%d turns)" % len(ticks)
                await closing
                assert zk.closed and not lock.held
            finally:
                harness.command("resume 0")

        asyncio.run(main())
    finally:
        harness.stop()

"""Multi-locks: all or none, one order (no deadlock), one deadline; the
set's check(), signals and release."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, List

import pytest
import zklock


def test_overlapping_multi_locks_in_opposite_orders_never_deadlock(hosts: str, path: str) -> None:
    a, b, c = path + "/a", path + "/b", path + "/c"
    inside = []
    errors = []

    def contend(members: list) -> None:
        try:
            with zklock.Client(hosts) as zk:
                multi = zk.multi_lock(members, timeout=20)
                assert multi.paths == [a, b, c]
                for _ in range(10):
                    with multi:
                        assert not inside, "two holders"
                        inside.append(1)
                        multi.check()
                        time.sleep(0.002)
                        inside.pop()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [
        threading.Thread(target=contend, args=([a, (b, "EXCLUSIVE"), c],)),
        threading.Thread(target=contend, args=([c, b, (a, zklock.LockMode.EXCLUSIVE)],)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors


def test_all_or_none_and_the_sets_guard(client: zklock.Client, observer: zklock.Client, hosts: str, path: str) -> None:
    x, y, z = path + "/x", path + "/y", path + "/z"
    with zklock.Client(hosts) as other:
        blocker = other.lock(z)
        assert blocker.acquire(timeout=5)
        multi = client.multi_lock([(z, "EXCLUSIVE"), (x, zklock.LockMode.WRITE), (y, "read")])  # a name in any case
        assert multi.acquire(timeout=0.3) is False
        assert observer.participants(x) == [] and observer.participants(y) == []
        with pytest.raises(zklock.LockTimeout):
            with zklock.Client(hosts).multi_lock([z], timeout=0.2):
                pass
        blocker.release()
        with multi as held:
            assert held is multi and multi.held and multi.state == zklock.LockState.HELD
            assert len(multi.fencing_tokens) == 3
            stop = multi.lost_event()
            assert multi.wait_lost(0.1) is None
        assert stop.wait(5)
        assert not multi.held and multi.state == zklock.LockState.RELEASED
        with pytest.raises(zklock.NotHeld):
            multi.release()

        async def main() -> None:
            async with multi:
                multi.check()
                waiting = asyncio.ensure_future(multi.wait_lost_async())
                await asyncio.sleep(0.1)
                assert not waiting.done()
            assert isinstance(await asyncio.wait_for(waiting, 10), zklock.NotHeld)

        asyncio.run(main())
        for p in (x, y, z):
            assert observer.participants(p) == []


def test_bad_members_are_refused_at_once(client: zklock.Client, path: str) -> None:
    with pytest.raises(zklock.InvalidArgument):
        client.multi_lock([])
    with pytest.raises(zklock.InvalidArgument):
        client.multi_lock([path, (path, "read")])
    with pytest.raises(zklock.InvalidArgument, match='mode must be "EXCLUSIVE", "READ" or "WRITE", not "leader"'):
        client.multi_lock([(path, "leader")])
    with pytest.raises(zklock.InvalidPath):
        client.multi_lock(["relative"])
    with pytest.raises(TypeError):
        client.multi_lock([5])  # type: ignore[list-item]
    # Outside attack round 36, F4: each a TypeError naming the member (or
    # the argument), never IndexError or KeyError, never taken in part.
    bad: List[Any] = [[(path,)], [()], [{"path": path}], [(path, "read", "extra")], [(path, 5)], [(5, "read")], path, 5]
    for members in bad:
        with pytest.raises(TypeError, match="multi_lock member"):
            client.multi_lock(members)
    # Round 37, F2: a mode that is not valid Unicode, as any such str.
    with pytest.raises(zklock.InvalidArgument, match="multi_lock member 0"):
        client.multi_lock([(path, "\ud800")])


def test_a_reentrant_multi_lock_is_taken_twice_by_one_thread_and_others_wait(client: zklock.Client, path: str) -> None:
    multi = client.multi_lock([path + "/a", (path + "/b", zklock.LockMode.WRITE)], reentrant=True)
    assert multi.acquire(timeout=5)
    assert multi.acquire(timeout=2), "the holding thread reenters"
    assert multi.depth == 2
    tokens = multi.fencing_tokens
    got: list = []
    t = threading.Thread(target=lambda: got.append(multi.acquire(timeout=0.5)))
    t.start()
    t.join(10)
    assert got == [False], "another thread waits"
    assert multi.release()
    assert multi.held and multi.fencing_tokens == tokens, "the first acquire still holds the same nodes"
    assert multi.release()
    assert not multi.held
    assert client.participants(path + "/a") == []
    got.clear()
    t = threading.Thread(target=lambda: got.append(multi.acquire(timeout=5)) or multi.release())
    t.start()
    t.join(10)
    assert got == [True], "free again for another thread"


def test_a_multi_lock_is_not_reentrant_by_default(client: zklock.Client, path: str) -> None:
    multi = client.multi_lock([path + "/a", path + "/b"])
    assert multi.acquire(timeout=5)
    assert not multi.acquire(timeout=0.3), "a second acquire waits behind the first"
    assert multi.release()

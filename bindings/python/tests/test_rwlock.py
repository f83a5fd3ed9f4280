"""Read/write locks: readers share, writers exclude, downgrade, no upgrade."""

from __future__ import annotations

import asyncio

import pytest
import zklock


def test_readers_share_writer_excludes(client: zklock.Client, hosts: str, path: str) -> None:
    with zklock.Client(hosts) as other:
        r1 = client.read_lock(path)
        r2 = other.read_lock(path)
        w = other.write_lock(path)
        assert r1.mode == "READ" and w.mode == "WRITE" and r1.mode is zklock.LockMode.READ
        with r1:
            assert r2.acquire(timeout=5), "readers must share"
            assert w.acquire(blocking=False) is False
            r2.release()
            assert w.acquire(blocking=False) is False
        assert w.acquire(timeout=5)
        assert r1.acquire(blocking=False) is False
        kinds = sorted(p.kind for p in other.participants(path))
        assert kinds == ["WRITER"]
        w.release()


def test_pair_downgrade_and_refused_upgrade(client: zklock.Client, observer: zklock.Client, path: str) -> None:
    rw = client.read_write_lock(path)
    assert isinstance(rw, zklock.ReadWriteLock) and rw.path == path
    with rw.write:
        with rw.read:  # downgrade: immediate
            assert rw.read.held and rw.write.held
            assert rw.read.sequence == rw.write.sequence
        assert rw.read.held is False
    rw.write.acquire()
    rw.read.acquire()
    rw.write.release()  # now only shared
    kinds = [p.kind for p in observer.participants(path)]
    assert kinds == ["READER"]
    with pytest.raises(zklock.WouldDeadlock) as info:
        rw.write.acquire()
    assert info.value.code == "WOULD_DEADLOCK"
    rw.read.release()
    assert observer.participants(path) == []
    # Explicit downgrade, blocking and asyncio.
    with rw.write:
        rw.downgrade()
        assert rw.read.held and rw.read.sequence == rw.write.sequence
    rw.read.release()

    async def main() -> None:
        async with rw.write:
            await rw.downgrade_async()
            assert rw.read.held and rw.read.sequence == rw.write.sequence
        await rw.read.release_async()

    asyncio.run(main())
    with pytest.raises(zklock.NotHeld):
        rw.downgrade()
    assert observer.participants(path) == []

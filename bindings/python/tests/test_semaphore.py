"""Counting semaphores: never more than the permits hold at once, a held
lease behaves as a lock (with, asyncio, lost_event), bad permits refused."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import List

import pytest
import zklock
from support import delete_as_third_party


def test_at_most_permits_hold_at_once(hosts: str, path: str, observer: zklock.Client) -> None:
    inside: List[int] = []
    most = [0]
    guard = threading.Lock()
    errors: List[BaseException] = []

    def contender(i: int) -> None:
        try:
            with zklock.Client(hosts) as zk:
                sem = zk.semaphore(path, 2, identifier="worker-%d" % i)
                for _ in range(3):
                    with sem as lease:
                        with guard:
                            inside.append(i)
                            most[0] = max(most[0], len(inside))
                        lease.check()
                        time.sleep(0.03)
                        with guard:
                            inside.remove(i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=contender, args=(i,)) for i in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert most[0] == 2, "two leases at once, never three"
    assert observer.participants(path + "/leases") == []
    assert observer.participants(path + "/locks") == []


def test_a_lease_is_a_lock_in_every_other_way(client: zklock.Client, hosts: str, path: str) -> None:
    sem = client.semaphore(path, 2, identifier=b"me")
    assert sem.mode == "LEASE"
    assert sem.acquire(timeout=10)
    first = (sem.fencing_token, sem.node_path)
    assert sem.acquire(timeout=10), "one object, two leases"
    assert sem.fencing_token > first[0]
    # Releasing the newer lease: the properties follow the one still held.
    sem.release()
    assert (sem.fencing_token, sem.node_path) == first
    sem.check()
    assert sem.acquire(timeout=10)
    with zklock.Client(hosts) as other:
        waiter = other.semaphore(path, 2)
        assert not waiter.acquire(timeout=0.3), "a third lease"
        assert not waiter.acquire(blocking=False)
        node = sem.node_path
        assert node.startswith(path + "/leases/_c_") and "-lease-" in node
        assert [p.data for p in other.participants(path + "/leases")] == [b"me", b"me"]
        sem.release()
        assert waiter.acquire(timeout=10), "the returned lease"
        stop = waiter.lost_event()
        delete_as_third_party(hosts, waiter.node_path)
        assert stop.wait(10), "the lost lease was not told"
        with pytest.raises(zklock.LockLost):
            waiter.check()
        with pytest.raises(zklock.LockLost):
            waiter.release()

        async def take() -> int:
            async with other.semaphore(path, 2) as lease:
                return lease.fencing_token

        assert asyncio.run(take()) > 0
    sem.release()


@pytest.mark.parametrize("permits", [0, -1, 2**31, 10**30, True])
def test_bad_permits_are_refused(client: zklock.Client, permits: object) -> None:
    with pytest.raises(zklock.InvalidArgument, match="permits"):
        client.semaphore("/s", permits)  # type: ignore[arg-type]


def test_permits_of_a_wrong_type_are_a_type_error(client: zklock.Client) -> None:
    with pytest.raises(TypeError, match="permits"):
        client.semaphore("/s", "2")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="permits"):
        client.semaphore("/s", 2.0)  # type: ignore[arg-type]
    with pytest.raises(zklock.InvalidPath):
        client.semaphore("relative", 2)
    with pytest.raises(zklock.InvalidArgument):
        client.semaphore("/s", 2, identifier="__REVOKE__")


def test_a_semaphore_on_a_shared_count_follows_it(client: zklock.Client, hosts: str, path: str, kz) -> None:
    count = path + "-count"
    client.set_shared_count(count, 1)
    assert client.shared_count(count) == 1
    assert kz.get(count)[0] == b"\x00\x00\x00\x01", "Curator's SharedCount: 4 bytes, big-endian"
    first = client.semaphore_with_count(path, count, identifier="first")
    held = first.acquire(timeout=10)
    assert held
    with zklock.Client(hosts) as other:
        second = other.semaphore_with_count(path, count)
        assert not second.acquire(timeout=0.3), "one permit, held"
        granted = threading.Event()

        def wait() -> None:
            if second.acquire(timeout=20):
                granted.set()

        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(0.3)
        assert not granted.is_set()
        client.set_shared_count(count, 2)
        waiter.join(20)
        assert granted.is_set(), "the count grew: the waiter gets the second lease"
        # Shrunk: both leases stay held; a third waits.
        client.set_shared_count(count, 1)
        first.check()
        second.check()
        third = client.semaphore_with_count(path, count)
        assert not third.acquire(timeout=0.3)
        second.release()
        assert not third.acquire(timeout=0.3), "two held, count 1: still one too many"
        first.release()
        assert third.acquire(timeout=10)
        third.release()


def test_a_shared_count_that_is_missing_or_bad_is_refused(client: zklock.Client, path: str, kz) -> None:
    count = path + "-count"
    sem = client.semaphore_with_count(path, count)
    with pytest.raises(zklock.ZooKeeperError):
        sem.acquire(timeout=5)
    kz.create(count, b"not a count", makepath=True)
    with pytest.raises(zklock.InvalidArgument):
        sem.acquire(timeout=5)
    with pytest.raises(zklock.InvalidArgument):
        client.shared_count(count)
    assert client.participants(path + "/leases") == [], "nothing left behind"
    kz.set(count, b"\xff\xff\xff\xff")
    assert client.shared_count(count) == -1, "a negative count as written"
    for bad in (-1, 2**31, True):
        with pytest.raises(zklock.InvalidArgument):
            client.set_shared_count(count, bad)
    with pytest.raises(TypeError):
        client.set_shared_count(count, "3")  # type: ignore[arg-type]
    with pytest.raises(zklock.InvalidArgument):
        client.semaphore_with_count(path, path + "/inside")
    with pytest.raises(zklock.InvalidPath):
        client.semaphore_with_count(path, "relative")
    with pytest.raises(zklock.InvalidPath):
        client.shared_count("relative")

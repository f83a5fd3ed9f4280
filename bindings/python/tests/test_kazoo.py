"""kazoo 2.11 and zklock on one lock path exclude each other both ways."""

from __future__ import annotations

import threading
import time

import pytest
import zklock
from kazoo.exceptions import LockTimeout as KazooLockTimeout  # noqa: E402


def test_kazoo_holds_zklock_waits(kz, client: zklock.Client, path: str) -> None:
    klock = kz.Lock(path, "kazoo-peer", extra_lock_patterns=["-lock-"])
    assert klock.acquire(timeout=10)
    lock = client.lock(path)
    assert lock.acquire(blocking=False) is False
    assert lock.acquire(timeout=0.3) is False
    got = threading.Event()

    def wait() -> None:
        if lock.acquire(timeout=10):
            got.set()

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.3)
    assert not got.is_set()
    klock.release()
    t.join(15)
    assert got.is_set()
    lock.release()


def test_zklock_holds_kazoo_waits(kz, client: zklock.Client, path: str) -> None:
    lock = client.lock(path, identifier="zklock-peer")
    klock = kz.Lock(path, "kazoo-peer", extra_lock_patterns=["-lock-"])
    with lock:
        with pytest.raises(KazooLockTimeout):
            klock.acquire(timeout=0.5)
        contenders = klock.contenders()
        assert "zklock-peer" in contenders
    assert klock.acquire(timeout=10)
    assert lock.acquire(blocking=False) is False
    klock.release()


def test_kazoo_and_zklock_contending(kz, hosts: str, path: str) -> None:
    """2 zklock threads and 2 kazoo threads, 6 turns each, one inside at a time."""
    inside = 0
    guard = threading.Lock()
    violations = []
    errors = []

    def critical(who: str) -> None:
        nonlocal inside
        with guard:
            inside += 1
            if inside != 1:
                violations.append(who)
        time.sleep(0.005)
        with guard:
            inside -= 1

    def zk_worker(n: int) -> None:
        try:
            with zklock.Client(hosts) as zk:
                lock = zk.lock(path, timeout=60)
                for _ in range(6):
                    with lock:
                        critical("zklock-%d" % n)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    def kazoo_worker(n: int) -> None:
        try:
            klock = kz.Lock(path, "kazoo-%d" % n, extra_lock_patterns=["-lock-"])
            for _ in range(6):
                assert klock.acquire(timeout=60)
                try:
                    critical("kazoo-%d" % n)
                finally:
                    klock.release()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=zk_worker, args=(n,)) for n in range(2)]
    threads += [threading.Thread(target=kazoo_worker, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert violations == []

"""Threads and processes contending; cancel from another thread."""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path
from typing import List

import zklock
from support import process_contender, wait_for


def test_threads_exclude_each_other(client: zklock.Client, hosts: str, path: str) -> None:
    """4 threads (two on a shared client, two with their own), 8 turns each."""
    inside = 0
    guard = threading.Lock()
    violations: List[str] = []
    tokens: List[int] = []
    errors: List[BaseException] = []
    own = [zklock.Client(hosts) for _ in range(2)]

    def worker(zk: zklock.Client, n: int) -> None:
        nonlocal inside
        try:
            lock = zk.lock(path, timeout=60)
            for _ in range(8):
                with lock:
                    with guard:
                        inside += 1
                        if inside != 1:
                            violations.append("thread %d entered with %d inside" % (n, inside - 1))
                        tokens.append(lock.fencing_token)
                    time.sleep(0.005)
                    with guard:
                        inside -= 1
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(zk, n)) for n, zk in enumerate([client, client] + own)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for zk in own:
        zk.close()
    assert errors == []
    assert violations == []
    assert len(tokens) == 32
    assert tokens == sorted(tokens) and len(set(tokens)) == 32, "fencing tokens must grow with every grant"


def test_processes_exclude_each_other(hosts: str, path: str, tmp_path: Path) -> None:
    """3 processes (spawned, each its own client), 6 turns each."""
    marker = str(tmp_path / "inside")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(3) as pool:
        # A time limit: a worker that hangs fails the test (leaving the
        # pool terminates the workers) instead of hanging the run.
        work = pool.starmap_async(process_contender, [(hosts, path, marker, 6, n) for n in range(3)], chunksize=1)
        results = work.get(timeout=120)
    turns = sum(r[0] for r in results)
    violations = [v for r in results for v in r[2]]
    tokens = sorted(t for r in results for t in r[1])
    assert violations == []
    assert turns == 18
    assert len(set(tokens)) == 18


def test_cancel_from_another_thread(client: zklock.Client, observer: zklock.Client, hosts: str, path: str) -> None:
    with client.lock(path):
        with zklock.Client(hosts) as other:
            waiter = other.lock(path)
            outcome: List[BaseException] = []

            def wait() -> None:
                try:
                    waiter.acquire()
                except BaseException as e:  # noqa: BLE001
                    outcome.append(e)

            t = threading.Thread(target=wait)
            t.start()
            wait_for(lambda: len(observer.participants(path)) == 2, what="the waiter to queue")
            waiter.cancel()
            t.join(10)
            assert not t.is_alive()
            assert len(outcome) == 1 and isinstance(outcome[0], zklock.Cancelled)
            assert outcome[0].code == "CANCELLED"
            assert not waiter.held
            # The cancelled acquire deleted its node before returning.
            parts = observer.participants(path)
            assert len(parts) == 1 and parts[0].holds and parts[0].session_id == client.session_id
    # A later acquire on another handle is not affected.
    again = client.lock(path)
    assert again.acquire(timeout=5)
    again.release()

"""Helpers shared by the tests (importable by multiprocessing children)."""

from __future__ import annotations

import os
import time
from typing import Callable, List, Tuple

import zklock


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Polls ``predicate`` every 20 ms until it is true; fails after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %s s waiting for %s" % (timeout, what))
        time.sleep(0.02)


def delete_as_third_party(hosts: str, node: str) -> None:
    """Deletes ``node`` through a session of another library (kazoo 2.11.0,
    pinned in the test venv): a third party's delete."""
    import kazoo.client as kazoo_client  # noqa: PLC0415 - not needed by process children

    kz = kazoo_client.KazooClient(hosts=hosts, timeout=10.0)
    kz.start(timeout=20)
    try:
        kz.delete(node)
    finally:
        kz.stop()
        kz.close()


def process_contender(hosts: str, path: str, marker: str, rounds: int, worker: int) -> Tuple[int, List[int], List[str]]:
    """Body of one contending process: ``rounds`` turns on the lock.

    Inside the lock it creates ``marker`` exclusively (O_EXCL), sleeps a
    little and removes it: a second holder would find it there. Returns
    (turns taken, fencing tokens, violations).
    """
    violations: List[str] = []
    tokens: List[int] = []
    turns = 0
    with zklock.Client(hosts) as zk:
        lock = zk.lock(path, identifier="worker-%d" % worker)
        for _ in range(rounds):
            with lock:
                try:
                    fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                except FileExistsError:
                    violations.append("worker %d entered while another process was inside" % worker)
                    continue
                os.close(fd)
                tokens.append(lock.fencing_token)
                time.sleep(0.01)
                os.unlink(marker)
                turns += 1
    return turns, tokens, violations

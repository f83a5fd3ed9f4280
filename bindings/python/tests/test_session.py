"""Session trouble: SUSPENDED, then LOST after expiry, reach the holder."""

from __future__ import annotations

import threading
from typing import List

import pytest
import zklock
from support import wait_for


def test_lost_lock_is_reported_after_session_expiry(harness, observer: zklock.Client, path: str) -> None:
    states: List[zklock.LockState] = []
    threads: List[str] = []
    seen = threading.Event()

    def on_change(state: zklock.LockState) -> None:
        states.append(state)
        threads.append(threading.current_thread().name)
        if state == zklock.LockState.LOST:
            seen.set()

    zk = zklock.Client(harness.proxied, session_timeout=2.0, connect_timeout=5.0, operation_timeout=2.0)
    try:
        lock = zk.lock(path)
        assert lock.acquire(timeout=5)
        lock.on_state_change(on_change)
        lock.check()
        harness.command("blackhole")
        try:
            # check() fails well before the server can expire the session.
            wait_for(lambda: _check_fails(lock), timeout=5, what="check() to fail")
            # The server expires the session after ~2 s without heartbeats;
            # another client then sees the queue empty.
            wait_for(lambda: observer.participants(path) == [], timeout=15, what="the node to expire")
        finally:
            harness.command("heal")
        assert seen.wait(20), "no LOST callback; states so far: %s" % states
        assert states[-1] == zklock.LockState.LOST
        assert zklock.LockState.SUSPENDED in states
        assert lock.state == zklock.LockState.LOST
        with pytest.raises(zklock.LockLost):
            lock.check()
        # The callbacks ran on the client's event thread, not ours.
        assert threading.current_thread().name not in threads
        with pytest.raises(zklock.LockLost):
            lock.release()
        # The client queues again with a new session.
        assert lock.acquire(timeout=15)
        lock.release()
    finally:
        zk.close()


def _check_fails(lock: zklock.Lock) -> bool:
    try:
        lock.check()
    except (zklock.ConnectionLoss, zklock.LockLost):
        return True
    return False

"""Client connection listeners (add_listener / remove_listener, as kazoo's):
suspended, session lost and a new session, in order; a removed listener is
not called again; bad listeners refused."""

from __future__ import annotations

import threading
import time
from typing import List

import pytest
import zklock
from support import wait_for


def test_listeners_hear_suspension_loss_and_new_session_until_removed(harness) -> None:
    zk = zklock.Client(harness.proxied, session_timeout=2.0, connect_timeout=5.0, operation_timeout=2.0)
    seen: List[zklock.ConnectionState] = []
    other: List[zklock.ConnectionState] = []
    mu = threading.Lock()

    def listener(state: zklock.ConnectionState) -> None:
        with mu:
            seen.append(state)

    def states() -> List[zklock.ConnectionState]:
        with mu:
            return list(seen)

    try:
        zk.add_listener(listener)
        zk.add_listener(other.append)
        harness.command("blackhole")
        try:
            wait_for(lambda: zklock.ConnectionState.SUSPENDED in states(), timeout=10, what="SUSPENDED")
            time.sleep(3.0)  # past the 2 s session
        finally:
            harness.command("heal")
        wait_for(lambda: zklock.ConnectionState.CONNECTED in states(), timeout=20, what="a new session")
        assert states() == ["SUSPENDED", "LOST", "CONNECTED"]
        assert all(isinstance(s, zklock.ConnectionState) for s in states())
        zk.remove_listener(listener)
        zk.remove_listener(print)  # never added: ignored
        told = len(states())
        harness.command("blackhole")
        try:
            wait_for(lambda: len(other) >= 4, timeout=10, what="the other listener")
        finally:
            harness.command("heal")
        assert len(states()) == told, "a removed listener was called"
    finally:
        zk.close()


def test_bad_listeners_are_refused(client: zklock.Client, hosts: str) -> None:
    with pytest.raises(TypeError):
        client.add_listener("not callable")  # type: ignore[arg-type]
    closed = zklock.Client(hosts)
    closed.close()
    with pytest.raises(zklock.Closed):
        closed.add_listener(print)

"""A changing ensemble: Client.set_hosts moves a client to a new server
list keeping its session and its locks (the core's Client::set_hosts)."""

from __future__ import annotations

import time

import pytest
import zklock
from support import wait_for


def test_a_client_moved_off_the_proxy_keeps_its_session_and_lock_when_the_proxy_goes(harness, kz, path: str) -> None:
    before = harness.command("connections")["count"]
    zk = zklock.Client(harness.proxied, session_timeout=2.0, connect_timeout=5.0, operation_timeout=2.0)
    try:
        session = zk.session_id
        lock = zk.lock(path)
        assert lock.acquire(timeout=5)
        assert harness.command("connections")["count"] == before + 1
        zk.set_hosts(harness.connect)
        wait_for(lambda: harness.command("connections")["count"] == before, what="the client left the proxy")
        wait_for(lambda: lock.state == zklock.LockState.HELD, what="the lock is held again")
        harness.command("blackhole")
        try:
            # Still on the proxy, the safety clock (under the 2 s session
            # timeout) would make check() raise within this time.
            deadline = time.monotonic() + 3.0
            while time.monotonic() < deadline:
                lock.check()
                time.sleep(0.1)
        finally:
            harness.command("heal")
        assert zk.session_id == session
        stat = kz.exists(lock.node_path)
        assert stat is not None and stat.ephemeralOwner == session, "the node is still ours"
        assert lock.release()
    finally:
        zk.close()


def test_bad_lists_are_refused_and_a_closed_client_says_so(hosts: str) -> None:
    zk = zklock.Client(hosts)
    for bad in ["", "host:notaport", "a,,b"]:
        with pytest.raises(zklock.InvalidArgument):
            zk.set_hosts(bad)
    with pytest.raises(zklock.InvalidArgument):
        zk.set_hosts(hosts + "/another-chroot")
    with pytest.raises(TypeError):
        zk.set_hosts(b"127.0.0.1:2181")  # type: ignore[arg-type]
    zk.set_hosts(hosts)  # the same list: nothing happens
    zk.close()
    with pytest.raises(zklock.Closed):
        zk.set_hosts(hosts)

"""Leader election: one leader at a time in join order, named by
Client.leader(); resigning hands over; a lost leader's Event is set."""

from __future__ import annotations

import asyncio
import threading

import pytest
import zklock
from support import delete_as_third_party, wait_for


def test_one_leader_at_a_time_in_join_order(client: zklock.Client, hosts: str, path: str) -> None:
    with zklock.Client(hosts) as other:
        first = client.election(path, "first")
        second = other.election(path, b"second")
        assert first.mode == "LEADER"
        assert client.leader(path) is None
        with first:
            leader = other.leader(path)
            assert leader is not None and leader.data == b"first" and leader.session_id == client.session_id
            assert "-latch-" in first.node_path
            assert not second.acquire(timeout=0.3), "a second leader"
            got = threading.Event()

            def stand() -> None:
                if second.acquire(timeout=20):
                    got.set()

            t = threading.Thread(target=stand)
            t.start()
            wait_for(lambda: len(client.participants(path)) == 2, what="second to join")
            assert [p.data for p in client.participants(path)] == [b"first", b"second"]
            assert not got.is_set()
        # first resigned: second leads.
        t.join(20)
        assert got.is_set()
        assert client.leader(path).data == b"second"
        second.release()
        assert client.leader(path) is None


def test_a_leader_whose_node_is_deleted_is_told_and_the_next_leads(
    client: zklock.Client, hosts: str, path: str
) -> None:
    with zklock.Client(hosts) as other:
        leading = client.election(path, "a")
        assert leading.acquire(timeout=5)
        stop = leading.lost_event()
        delete_as_third_party(hosts, leading.node_path)
        assert stop.wait(10), "the lost leader was not told"
        with pytest.raises(zklock.LockLost):
            leading.check()
        nxt = other.election(path, "b")
        assert nxt.acquire(timeout=5)
        assert nxt.fencing_token > leading.fencing_token
        nxt.release()
        with pytest.raises(zklock.LockLost):
            leading.release()


def test_bad_ids_and_asyncio(client: zklock.Client, path: str) -> None:
    with pytest.raises(zklock.InvalidArgument):
        client.election(path, b"x" * (64 * 1024 + 1))
    with pytest.raises(zklock.InvalidArgument):
        client.election(path, "__REVOKE__")
    with pytest.raises(TypeError):
        client.election(path, 5)  # type: ignore[arg-type]
    with pytest.raises(zklock.InvalidPath):
        client.election("relative", "x")

    async def main() -> None:
        async with client.election(path, "async") as leading:
            assert client.leader(path).data == b"async"
            waiting = asyncio.ensure_future(leading.wait_lost_async())
            await asyncio.sleep(0.1)
            assert not waiting.done()
        assert isinstance(await asyncio.wait_for(waiting, 10), zklock.NotHeld)

    asyncio.run(main())
    assert client.leader(path) is None

"""What type checkers see of zklock's context managers (and, at the end,
of the calls whose results are typed from their arguments, ``run``, and of
the newer calls): checked with ``mypy --strict`` by ``make test-python``,
never run.

Every ``with`` and ``async with`` of the package must give its real type
(a ``with lock as held:`` typed ``Any`` let ``return held.fencing_token``
pass for an ``int`` unchecked, and failed ``mypy --strict`` in a function
that returns ``int``).
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import zklock
from typing_extensions import assert_type


def blocking(hosts: str) -> int:
    """Every blocking ``with``: the client, each lock kind, the multi-lock."""
    with zklock.Client(hosts) as zk:
        assert_type(zk, zklock.Client)
        with zk.lock("/typed/lock") as lock:
            assert_type(lock, zklock.Lock)
            token = lock.fencing_token
        with zk.lock("/typed/lock", reentrant=True) as again:
            assert_type(again, zklock.Lock)
        with zk.read_lock("/typed/rw") as read:
            assert_type(read, zklock.Lock)
        with zk.write_lock("/typed/rw") as write:
            assert_type(write, zklock.Lock)
        pair = zk.read_write_lock("/typed/pair")
        with pair.write as write_side:
            assert_type(write_side, zklock.Lock)
        with pair.read as read_side:
            assert_type(read_side, zklock.Lock)
        with zk.election("/typed/election", "me") as leading:
            assert_type(leading, zklock.Lock)
        with zk.semaphore("/typed/semaphore", 2) as lease:
            assert_type(lease, zklock.Lock)
        with zk.multi_lock(["/typed/a", ("/typed/b", zklock.LockMode.READ)]) as both:
            assert_type(both, zklock.MultiLock)
            tokens: List[int] = both.fencing_tokens
            assert_type(tokens, List[int])
        leader = zk.leader("/typed/election")
        assert_type(leader, Optional[zklock.Participant])
    # Returning it from a function declared -> int: an error if it were Any.
    return lock.fencing_token + token


async def asynchronous(hosts: str) -> int:
    """Every ``async with``, and the asyncio forms of the client's calls."""
    async with zklock.connect(hosts, connect_timeout=5) as zk:
        assert_type(zk, zklock.Client)
        async with zk.lock("/typed/lock") as lock:
            assert_type(lock, zklock.Lock)
        async with zk.read_lock("/typed/rw") as read:
            assert_type(read, zklock.Lock)
        async with zk.write_lock("/typed/rw") as write:
            assert_type(write, zklock.Lock)
        pair = zk.read_write_lock("/typed/pair")
        async with pair.write as write_side:
            assert_type(write_side, zklock.Lock)
        async with pair.read as read_side:
            assert_type(read_side, zklock.Lock)
        async with zk.election("/typed/election", "me") as leading:
            assert_type(leading, zklock.Lock)
        async with zk.semaphore("/typed/semaphore", 2) as lease:
            assert_type(lease, zklock.Lock)
        async with zk.multi_lock(["/typed/a", "/typed/b"]) as both:
            assert_type(both, zklock.MultiLock)
        participants = await zk.participants_async("/typed/lock")
        assert_type(participants, List[zklock.Participant])
        leader = await zk.leader_async("/typed/election")
        assert_type(leader, Optional[zklock.Participant])
    connecting = zklock.connect(hosts)
    assert_type(connecting, zklock.Connecting)
    other = await connecting
    assert_type(other, zklock.Client)
    await other.close_async()
    return lock.fencing_token


def fenced(lock: zklock.Lock, multi: zklock.MultiLock) -> Optional[int]:
    """Fenced writes: the operations, the results and the error's failed_op."""
    ops = [
        zklock.FencedOp.create("/typed/state", b"", zklock.CreateMode.PERSISTENT),
        zklock.FencedOp.create("/typed/state/e-", "text", "EPHEMERAL_SEQUENTIAL"),
        zklock.FencedOp.set_data("/typed/state", "v1", version=0),
        zklock.FencedOp.delete("/typed/state/x"),
        zklock.FencedOp.check("/typed/state", 1),
    ]
    results = lock.fenced_multi(ops)
    assert_type(results, List[zklock.FencedResult])
    assert_type(multi.fenced_multi(ops)[0].path, Optional[str])
    assert_type(results[0].op, zklock.FencedKind)
    assert_type(ops[0].op, zklock.FencedKind)
    try:
        lock.fenced_multi(ops)
    except zklock.ZkLockError as e:
        assert_type(e.failed_op, Optional[zklock.FailedOp])
        if e.failed_op is not None:
            assert_type(e.failed_op.index, int)
            assert_type(e.failed_op.code, str)
    return results[2].version


async def fenced_async(lock: zklock.Lock, multi: zklock.MultiLock) -> List[zklock.FencedResult]:
    """The asyncio form of fenced writes."""
    done = await multi.fenced_multi_async([zklock.FencedOp.check("/typed/state")])
    assert_type(done, List[zklock.FencedResult])
    return await lock.fenced_multi_async([zklock.FencedOp.check("/typed/state")])


def features(zk: zklock.Client, lock: zklock.Lock) -> str:
    """Run, revocation, metrics and a changing ensemble: the types of what
    they give back (``run`` keeps ``func``'s return type)."""
    assert_type(lock.run(lambda: "done"), str)
    assert_type(lock.run(int, "42"), int)
    assert_type(zk.revoke(lock.node_path), bool)
    assert_type(lock.revocation_requested, bool)
    lock.on_revocation(lambda: None).cancel()
    zk.set_hosts("127.0.0.1:2181")
    m = zk.metrics()
    assert_type(m.wait_time.buckets[0], Tuple[float, int])
    assert_type(m.requests.get("create2", 0), int)
    assert_type(zk.multi_lock(["/typed/a"], reentrant=True), zklock.MultiLock)
    return lock.run(str.upper, "x")


async def run_async(lock: zklock.Lock) -> int:
    """``run_async`` gives the coroutine function's result type."""

    async def work(x: int) -> int:
        return x

    return await lock.run_async(work, 1)

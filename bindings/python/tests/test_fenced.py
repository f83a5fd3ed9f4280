"""Fenced writes (``Lock.fenced_multi``, ``MultiLock.fenced_multi`` and their
asyncio forms): the caller's ZooKeeper writes made in one transaction with a
check of the holder's lock node(s), all or none. Every outcome is read back
through a kazoo session: ZooKeeper's own record, not the holder's belief."""

from __future__ import annotations

import asyncio
import signal
import sys

import kazoo.client as kazoo_client
import pytest
import zklock
from support import Child, delete_as_third_party, wait_for
from zklock import CreateMode, FencedKind, FencedOp, FencedResult


def test_every_operation_kind_and_its_result(client: zklock.Client, kz: kazoo_client.KazooClient, path: str) -> None:
    state = path + "-state"
    with client.lock(path) as lock:
        results = lock.fenced_multi(
            [
                FencedOp.create(state, b"v0"),
                FencedOp.create(state + "/job-", "41", CreateMode.PERSISTENT_SEQUENTIAL),
                FencedOp.create(state + "/mine", mode="EPHEMERAL"),
                FencedOp.set_data(state, "v1"),
                FencedOp.check(state, version=1),
                FencedOp.create(state + "/gone"),
                FencedOp.delete(state + "/gone"),
            ]
        )
        assert results == [
            FencedResult("create", path=state),
            FencedResult("create", path=state + "/job-0000000000"),
            FencedResult("create", path=state + "/mine"),
            FencedResult("set_data", version=1),
            FencedResult("check"),
            FencedResult("create", path=state + "/gone"),
            FencedResult("delete"),
        ]
        data, stat = kz.get(state)
        assert (data, stat.version) == (b"v1", 1)
        assert sorted(kz.get_children(state)) == ["job-0000000000", "mine"]
        assert kz.get(state + "/job-0000000000")[0] == b"41"
        # The ephemeral node belongs to the lock's session.
        assert kz.exists(state + "/mine").ephemeralOwner == lock.session_id
        # Compare-and-set with the version the last write returned, and a
        # delete at a version; an empty list only checks.
        again = lock.fenced_multi(
            [
                FencedOp.set_data(state, bytearray(b"v2"), version=results[3].version),
                FencedOp.delete(state + "/mine", 0),
            ]
        )
        assert again == [FencedResult("set_data", version=2), FencedResult("delete")]
        # The kinds are zklock.FencedKind (a str enum), named in any case.
        assert [r.op for r in again] == [FencedKind.SET_DATA, "DELETE"]
        assert FencedOp("Set_Data", state, b"x").op is FencedKind.SET_DATA == FencedOp.set_data(state, b"x").op
        assert lock.fenced_multi([]) == []
        assert kz.get(state)[0] == b"v2"
        assert kz.exists(state + "/mine") is None


def test_a_refused_operation_names_its_index_and_code_and_writes_nothing(
    client: zklock.Client, kz: kazoo_client.KazooClient, path: str
) -> None:
    state = path + "-state"
    kz.create(state, b"v0", makepath=True)
    with client.lock(path) as lock:
        with pytest.raises(zklock.ZooKeeperError) as info:
            lock.fenced_multi(
                [
                    FencedOp.create(state + "/new", b"x"),
                    FencedOp.set_data(state, b"v1"),
                    FencedOp.set_data(state, b"v2", version=5),
                ]
            )
        assert info.value.code == "ZOOKEEPER"
        assert info.value.failed_op == (2, "BadVersion")
        assert info.value.failed_op.index == 2 and info.value.failed_op.code == "BadVersion"
        assert isinstance(info.value.failed_op, zklock.FailedOp)
        assert "operation 2" in info.value.message and "nothing was written" in info.value.message
        # Nothing of the transaction was made: not the create, not the
        # first set_data.
        data, stat = kz.get(state)
        assert (data, stat.version) == (b"v0", 0)
        assert kz.exists(state + "/new") is None

        for ops, failed in (
            ([FencedOp.check(state), FencedOp.set_data(state + "/none", b"x")], (1, "NoNode")),
            ([FencedOp.create(state, b"again")], (0, "NodeExists")),
            ([FencedOp.create(state + "/a/b")], (0, "NoNode")),
        ):
            with pytest.raises(zklock.ZooKeeperError) as info:
                lock.fenced_multi(ops)
            assert info.value.failed_op == failed, info.value
        assert kz.get(state)[0] == b"v0"
        # Errors that are not about an operation have no failed_op.
        lock.release()
        with pytest.raises(zklock.NotHeld) as not_held:
            lock.fenced_multi([FencedOp.set_data(state, b"x")])
        assert not_held.value.failed_op is None
        lock.acquire()


def test_bad_input_is_refused_before_sending(client: zklock.Client, kz: kazoo_client.KazooClient, path: str) -> None:
    state = path + "-state"
    kz.create(state, b"v0", makepath=True)
    with client.lock(path) as lock:
        node_data = kz.get(lock.node_path)[0]
        # The lock's own queue is zklock's: refused, naming the operation.
        with pytest.raises(zklock.InvalidPath) as info:
            lock.fenced_multi([FencedOp.set_data(state, b"x"), FencedOp.set_data(lock.node_path, b"mine")])
        assert info.value.code == "INVALID_PATH"
        assert "operation 1 (SET_DATA)" in info.value.message and "inside the lock path" in info.value.message
        assert info.value.failed_op is None
        with pytest.raises(zklock.InvalidPath):
            lock.fenced_multi([FencedOp.create(path + "/x")])
        with pytest.raises(zklock.InvalidPath) as info:
            lock.fenced_multi([FencedOp.check("relative")])
        assert "operation 0 (CHECK)" in info.value.message
        with pytest.raises(zklock.InvalidArgument) as info:
            lock.fenced_multi([FencedOp.check(state), FencedOp.delete(state, version=-1)])
        assert "operation 1 (DELETE)" in info.value.message and "negative" in info.value.message
        # Beyond ZooKeeper's 32-bit versions: refused by the binding.
        with pytest.raises(zklock.InvalidArgument) as info:
            lock.fenced_multi([FencedOp.set_data(state, b"x", version=2**31)])
        assert "operation 0" in info.value.message and "out of range" in info.value.message
        with pytest.raises(zklock.InvalidArgument) as info:
            lock.fenced_multi([FencedOp.set_data(state, b"x" * (1 << 20))])
        assert "jute.maxbuffer" in info.value.message
        # A path that is not valid Unicode.
        with pytest.raises(zklock.InvalidPath):
            lock.fenced_multi([FencedOp.check("/a\ud800")])
        assert kz.get(state)[0] == b"v0"
        assert kz.get(lock.node_path)[0] == node_data


def test_wrong_types_are_invalid_argument_never_a_crash(client: zklock.Client, path: str) -> None:
    with client.lock(path) as lock:
        for bad_ops in ("not a list", None, 42, {"op": "check"}):
            with pytest.raises(zklock.InvalidArgument):
                lock.fenced_multi(bad_ops)  # type: ignore[arg-type]
        with pytest.raises(zklock.InvalidArgument) as info:
            lock.fenced_multi([FencedOp.check("/a"), {"op": "check", "path": "/a"}])  # type: ignore[list-item]
        assert "operation 1" in info.value.message and "dict" in info.value.message
        bad_makers = [
            lambda: FencedOp.set_data(1, b"x"),  # type: ignore[arg-type]
            lambda: FencedOp.set_data("/a", 1),  # type: ignore[arg-type]
            lambda: FencedOp.set_data("/a", b"x", version="1"),  # type: ignore[arg-type]
            lambda: FencedOp.delete("/a", version=True),
            lambda: FencedOp.check("/a", version=1.0),  # type: ignore[arg-type]
            lambda: FencedOp.create("/a", mode="BOGUS"),
            lambda: FencedOp.create("/a", "\ud800"),
            lambda: FencedOp("rename", "/a"),
            lambda: FencedOp("create", "/a", version=1),
            lambda: FencedOp("delete", "/a", b"data"),
            lambda: FencedOp("check", "/a", mode=CreateMode.EPHEMERAL),
        ]
        for make in bad_makers:
            with pytest.raises(zklock.InvalidArgument) as info:
                make()
            assert info.value.code == "INVALID_ARGUMENT" and info.value.message.startswith("fenced write: ")
        # The native module's own checks, for tuples the package never makes.
        native = lock._native
        for tuples in (
            [("rename", "/a", b"", None, "PERSISTENT")],
            [("CREATE", "/a", b"", None, "BOGUS")],
            [("CHECK", 5, b"", None, "PERSISTENT")],
            [("CHECK", "/a", b"", "1", "PERSISTENT")],
            [("CHECK", "/a", b"", 10**30, "PERSISTENT")],
            [("CHECK",)],
            [object()],
            object(),
        ):
            with pytest.raises(zklock.InvalidArgument) as info:
                native.fenced_multi(tuples)  # type: ignore[arg-type]
            assert info.value.message.startswith("fenced write"), info.value


def test_a_released_or_never_acquired_lock_writes_nothing(
    client: zklock.Client, kz: kazoo_client.KazooClient, path: str
) -> None:
    state = path + "-state"
    kz.create(state, b"v0", makepath=True)
    lock = client.lock(path)
    with pytest.raises(zklock.NotHeld):
        lock.fenced_multi([FencedOp.set_data(state, b"never")])
    with lock:
        lock.fenced_multi([FencedOp.set_data(state, b"held")])
    with pytest.raises(zklock.NotHeld) as info:
        lock.fenced_multi([FencedOp.set_data(state, b"after")])
    assert "nothing was written" in info.value.message
    assert kz.get(state)[0] == b"held"


def test_a_lock_whose_node_was_deleted_writes_nothing(
    client: zklock.Client, kz: kazoo_client.KazooClient, hosts: str, path: str
) -> None:
    state = path + "-state"
    kz.create(state, b"v0", makepath=True)
    lock = client.lock(path)
    lock.acquire()
    try:
        delete_as_third_party(hosts, lock.node_path)
        with pytest.raises(zklock.LockLost) as info:
            lock.fenced_multi([FencedOp.set_data(state, b"stale")])
        assert "nothing was written" in info.value.message and info.value.failed_op is None
        assert kz.get(state)[0] == b"v0"
    finally:
        with pytest.raises(zklock.LockLost):
            lock.release()


def test_a_multi_lock_fences_by_every_member(
    client: zklock.Client, kz: kazoo_client.KazooClient, hosts: str, path: str
) -> None:
    a, b = path + "/a", path + "/b"
    state = path + "-state"
    kz.create(state, b"v0", makepath=True)
    multi = client.multi_lock([b, (a, zklock.LockMode.WRITE)])
    assert multi.acquire(timeout=30)
    try:
        assert multi.fenced_multi([FencedOp.set_data(state, b"both"), FencedOp.check(state)]) == [
            FencedResult("set_data", version=1),
            FencedResult("check"),
        ]
        with pytest.raises(zklock.InvalidPath) as info:
            multi.fenced_multi([FencedOp.create(b + "/x")])
        assert "inside the lock path" in info.value.message
        with pytest.raises(zklock.ZooKeeperError) as refused:
            multi.fenced_multi([FencedOp.set_data(state, b"x", version=0)])
        assert refused.value.failed_op == (0, "BadVersion")
        # The member taken last loses its node: the write is refused.
        last = kz.get_children(b)[0]
        delete_as_third_party(hosts, b + "/" + last)
        with pytest.raises(zklock.LockLost):
            multi.fenced_multi([FencedOp.set_data(state, b"one member only")])
        assert kz.get(state)[0] == b"both"
    finally:
        with pytest.raises(zklock.LockLost):
            multi.release()
    with pytest.raises(zklock.NotHeld):
        multi.fenced_multi([FencedOp.set_data(state, b"released")])
    assert kz.get(state)[0] == b"both"


def test_the_asyncio_form(hosts: str, kz: kazoo_client.KazooClient, path: str) -> None:
    state = path + "-state"

    async def main() -> None:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        async with zklock.connect(hosts) as zk:
            lock = zk.lock(path)
            async with lock:
                tick = asyncio.ensure_future(ticker())
                results = await lock.fenced_multi_async([FencedOp.create(state, "v0"), FencedOp.set_data(state, "v1")])
                tick.cancel()
                assert results == [FencedResult("create", path=state), FencedResult("set_data", version=1)]
                with pytest.raises(zklock.ZooKeeperError) as info:
                    await lock.fenced_multi_async([FencedOp.delete(state, version=0)])
                assert info.value.failed_op == (0, "BadVersion")
                with pytest.raises(zklock.InvalidPath):
                    await lock.fenced_multi_async([FencedOp.delete(lock.node_path)])
                with pytest.raises(zklock.InvalidArgument):
                    await lock.fenced_multi_async(["junk"])  # type: ignore[list-item]
            with pytest.raises(zklock.NotHeld):
                await lock.fenced_multi_async([FencedOp.set_data(state, "released")])
            multi = zk.multi_lock([path + "/m1", path + "/m2"])
            async with multi:
                assert await multi.fenced_multi_async([FencedOp.check(state, 1)]) == [FencedResult("check")]
            with pytest.raises(zklock.NotHeld):
                await multi.fenced_multi_async([FencedOp.check(state)])
        assert ticks > 0

    asyncio.run(main())
    data, stat = kz.get(state)
    assert (data, stat.version) == (b"v1", 1)


#: The holder of the issue's scenario: acquires, checks (OK), stops itself
#: right before its fenced write, and makes the write as soon as it runs
#: again. Arguments: hosts, lock path, state node.
PAUSED_HOLDER = """
import os, signal, sys
import zklock
from zklock import FencedOp

hosts, path, state = sys.argv[1:4]
zk = zklock.Client(hosts, session_timeout=2.0)
lock = zk.lock(path)
assert lock.acquire(timeout=30)
print("holding", lock.node_path, lock.session_id, flush=True)
lock.check()
print("checked", flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
try:
    lock.fenced_multi([FencedOp.set_data(state, b"stale holder")])
    print("written", flush=True)
except zklock.ZkLockError as e:
    print("refused", e.code, e.failed_op, e.message, flush=True)
"""


def test_a_holder_paused_past_its_session_writes_nothing(hosts: str, kz: kazoo_client.KazooClient, path: str) -> None:
    """The issue's scenario: A holds, checks, and is stopped (SIGSTOP) right
    before its fenced write; ZooKeeper expires its session; B takes the lock
    and writes the state; A, resumed, makes its write at once: refused, and
    the state node still holds B's write, the last one ZooKeeper made to it."""
    state = path + "-state"
    kz.create(state, b"initial", makepath=True)
    with Child(PAUSED_HOLDER, hosts, path, state) as a:
        word, a_node, a_session = a.line().split()
        assert word == "holding"
        assert a.line() == "checked"
        # A stops itself; ZooKeeper's record: its node goes when its session
        # expires.
        wait_for(lambda: kz.exists(a_node) is None, timeout=30, what="A's session to expire")
        with open("/proc/%d/stat" % a.proc.pid) as f:
            assert f.read().rsplit(")", 1)[1].split()[0] == "T", "A must still be stopped"
        with zklock.Client(hosts) as zk:
            with zk.lock(path, timeout=30) as b:
                assert b.session_id != int(a_session)
                assert b.fenced_multi([FencedOp.set_data(state, b"B")]) == [FencedResult("set_data", version=1)]
                data, b_write = kz.get(state)
                assert data == b"B" and b_write.mzxid > b.fencing_token
                a.proc.send_signal(signal.SIGCONT)
                outcome = a.line()
                assert a.wait() == 0, a.stderr
        print("paused holder's fenced write:", outcome, file=sys.stderr)
        word, code, *rest = outcome.split(" ", 3)
        assert word == "refused", outcome
        assert code in ("LOCK_LOST", "CONNECTION_LOSS"), outcome
        assert rest[0] == "None", outcome
    # ZooKeeper's record: the state is B's, last written by B's write; a
    # node made now gets a later zxid than any write to the state.
    probe = kz.create(path + "-probe", b"")
    data, stat = kz.get(state)
    assert (data, stat.version, stat.mzxid) == (b"B", 1, b_write.mzxid)
    assert stat.mzxid < kz.exists(probe).czxid

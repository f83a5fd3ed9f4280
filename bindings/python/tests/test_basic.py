"""The blocking API: clients, locks, context managers, participants."""

from __future__ import annotations

import time

import pytest
import zklock
from support import delete_as_third_party, wait_for


def test_client_context_manager_closes(hosts: str, path: str) -> None:
    with zklock.Client(hosts) as zk:
        assert not zk.closed
        assert zk.session_id != 0
        assert 0 < zk.session_timeout <= 10.0
        lock = zk.lock(path)
    assert zk.closed
    with pytest.raises(zklock.Closed) as info:
        lock.acquire()
    assert info.value.code == "CLOSED"
    with pytest.raises(zklock.Closed):
        zk.session_id


def test_with_lock_holds_and_releases(client: zklock.Client, observer: zklock.Client, path: str) -> None:
    lock = client.lock(path, identifier="me")
    assert not lock.held
    assert lock.state == zklock.LockState.RELEASED
    with lock as same:
        assert same is lock
        assert lock.held
        assert lock.state == "HELD"
        assert lock.state is zklock.LockState.HELD
        lock.check()
        assert lock.node_path.startswith(path + "/_c_")
        assert "-lock-" in lock.node_path
        assert lock.session_id == client.session_id
        parts = observer.participants(path)
        assert len(parts) == 1
        p = parts[0]
        assert isinstance(p, zklock.Participant)
        assert path + "/" + p.name == lock.node_path
        assert (p.kind, p.holds, p.data, p.session_id) == ("WRITER", True, b"me", client.session_id)
        assert p.kind is zklock.NodeKind.WRITER
        assert p.sequence == lock.sequence
    assert not lock.held
    assert lock.state == "RELEASED"
    assert observer.participants(path) == []
    with pytest.raises(zklock.NotHeld):
        lock.check()


def test_acquire_release_like_threading_lock(client: zklock.Client, path: str) -> None:
    lock = client.lock(path)
    assert lock.acquire() is True
    assert lock.release() is True
    assert lock.acquire(blocking=False) is True
    assert lock.release() is True
    assert lock.acquire(timeout=5) is True
    assert lock.release() is True
    assert lock.acquire(True, None) is True
    lock.release()
    # Unlike threading.Lock's, -1 is a negative timeout like any other
    # (the rule of every zklock language).
    with pytest.raises(zklock.InvalidArgument):
        lock.acquire(True, -1)


def test_fencing_tokens_grow(client: zklock.Client, path: str) -> None:
    lock = client.lock(path)
    tokens = []
    for _ in range(3):
        with lock:
            tokens.append(lock.fencing_token)
    assert tokens == sorted(tokens) and len(set(tokens)) == 3
    # The latest grant still answers after release.
    assert lock.fencing_token == tokens[-1]


def test_reentrant_per_thread_when_asked(client: zklock.Client, observer: zklock.Client, path: str) -> None:
    lock = client.lock(path, reentrant=True)
    with lock:
        node = lock.node_path
        with lock:
            assert lock.depth == 2
            assert lock.node_path == node
        # The inner guard is released (the core says RELEASED for it); the
        # object still holds through the outer one.
        assert lock.held and lock.depth == 1 and lock.state == zklock.LockState.HELD
        lock.check()
        assert len(observer.participants(path)) == 1
    assert not lock.held and lock.depth == 0 and lock.state == zklock.LockState.RELEASED
    assert observer.participants(path) == []


def test_threads_that_share_a_lock_object_exclude_each_other(
    client: zklock.Client, observer: zklock.Client, path: str
) -> None:
    """kazoo's many-threads test, ported: 20 threads share one lock object
    and are never two inside (before issue 15 they were all inside at
    once). A thread that holds it and acquires again waits behind itself."""
    import threading

    lock = client.lock(path)
    inside = []
    most = [0]
    mutex = threading.Lock()

    def work() -> None:
        for _ in range(3):
            with lock:
                with mutex:
                    inside.append(1)
                    most[0] = max(most[0], len(inside))
                time.sleep(0.002)
                with mutex:
                    inside.pop()

    threads = [threading.Thread(target=work) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert most[0] == 1, "%d threads were inside at once" % most[0]
    with lock:
        assert lock.acquire(timeout=0.3) is False, "the holding thread re-entered a lock that is not reentrant"
    assert observer.participants(path) == []


def test_two_lock_objects_are_two_contenders(client: zklock.Client, path: str) -> None:
    a = client.lock(path)
    b = client.lock(path)
    with a:
        assert b.acquire(blocking=False) is False
    assert b.acquire(blocking=False) is True
    b.release()


def test_timeout_returns_false_and_leaves_no_node(
    client: zklock.Client, observer: zklock.Client, hosts: str, path: str
) -> None:
    with client.lock(path):
        with zklock.Client(hosts) as other:
            waiter = other.lock(path)
            start = time.monotonic()
            assert waiter.acquire(timeout=0.5) is False
            assert 0.4 < time.monotonic() - start < 5
            assert not waiter.held
            wait_for(lambda: len(observer.participants(path)) == 1, what="the timed-out node to go")


def test_with_timeout_raises_lock_timeout(client: zklock.Client, hosts: str, path: str) -> None:
    with client.lock(path):
        with zklock.Client(hosts) as other:
            with pytest.raises(zklock.LockTimeout) as info:
                with other.lock(path, timeout=0.3):
                    pytest.fail("entered a held lock")
            assert isinstance(info.value, TimeoutError)
            assert info.value.code == "TIMEOUT"


def test_release_when_not_held_raises(client: zklock.Client, path: str) -> None:
    lock = client.lock(path)
    with pytest.raises(zklock.NotHeld) as info:
        lock.release()
    assert info.value.code == "NOT_HELD"
    lock.acquire()
    lock.release()
    with pytest.raises(zklock.NotHeld):
        lock.release()
    with pytest.raises(zklock.NotHeld):
        client.lock(path).fencing_token


def test_close_loses_held_locks(hosts: str, observer: zklock.Client, path: str) -> None:
    zk = zklock.Client(hosts)
    lock = zk.lock(path)
    states = []
    lock.acquire()
    lock.on_state_change(states.append)
    zk.close()
    wait_for(lambda: zklock.LockState.LOST in states, what="LOST after close")
    assert lock.state == "LOST"
    # Closing the client loses its locks with the kind CLOSED.
    with pytest.raises(zklock.Closed):
        lock.check()
    with pytest.raises(zklock.Closed):
        lock.release()
    wait_for(lambda: observer.participants(path) == [], what="the node to go with the session")


def test_a_cancelled_state_callback_is_not_called_again(hosts: str, path: str) -> None:
    # Two callbacks on one lock object, registered before its grants; one
    # is cancelled between two grants: it hears of the first loss only,
    # the other of both.
    zk = zklock.Client(hosts)
    lock = zk.lock(path)
    kept: "list[zklock.LockState]" = []
    dropped: "list[zklock.LockState]" = []
    lock.on_state_change(kept.append)
    subscription = lock.on_state_change(dropped.append)
    assert isinstance(subscription, zklock.Subscription)
    lock.acquire()
    delete_as_third_party(hosts, lock.node_path)
    wait_for(lambda: zklock.LockState.LOST in dropped, what="LOST told to both")
    subscription.cancel()
    subscription.cancel()  # idempotent
    with pytest.raises(zklock.LockLost):
        lock.release()
    lock.acquire()
    delete_as_third_party(hosts, lock.node_path)
    wait_for(lambda: kept.count(zklock.LockState.LOST) == 2, what="the second LOST told to the kept one")
    time.sleep(0.2)
    assert dropped.count(zklock.LockState.LOST) == 1
    zk.close()


def test_nested_with_on_a_default_lock_waits_for_itself(client: zklock.Client, path: str) -> None:
    # What the package's docstring says: every acquire is its own contender.
    lock = client.lock(path, timeout=0.3)
    with lock:
        with pytest.raises(zklock.LockTimeout):
            with lock:
                raise AssertionError("a default lock re-entered")
        assert lock.held and lock.depth == 1
    assert not lock.held

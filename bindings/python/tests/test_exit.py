"""Interpreter exit closes every client still open: a process that ends
(``sys.exit()`` or the end of its main module) while a daemon thread waits
in ``acquire()`` or holds a lock leaves no node behind, at once rather than
after its session timeout (30 s here), and a server that does not answer
cannot hold the exit up.

The nodes are watched from outside zklock: a kazoo session lists the lock
paths' children and reads their owners.
"""

from __future__ import annotations

import time
from typing import List, Set

import pytest
import zklock
from conftest import Harness, kazoo_session
from kazoo.client import KazooClient
from support import Child, wait_for

#: The child's sessions last this long without a close (seconds).
SESSION_TIMEOUT = 30.0

#: A child: one client; a daemon thread waits in acquire() on PATH (held
#: by the test), another holds PATH/held; it prints its session id once
#: both nodes exist, waits for a line on stdin, then ends as ENDING says.
CHILD = """
    import sys, threading, zklock
    hosts, path, ending = sys.argv[1:4]
    zk = zklock.Client(hosts, session_timeout=%(session)s, operation_timeout=%(session)s)

    def wait():
        zk.lock(path).acquire()
        print("ACQUIRED", flush=True)  # never: the test holds the lock

    def hold():
        with zk.lock(path + "/held"):
            threading.Event().wait()

    threading.Thread(target=wait, daemon=True).start()
    threading.Thread(target=hold, daemon=True).start()
    while len(zk.participants(path)) < 2 or len(zk.participants(path + "/held")) < 1:
        pass
    print(zk.session_id, flush=True)
    sys.stdin.readline()
    if ending == "sys.exit":
        sys.exit(0)
    if ending == "uncaught exception":
        raise RuntimeError("the end")
""" % {"session": SESSION_TIMEOUT}


def owners(kz: KazooClient, path: str) -> List[int]:
    """The sessions that own the children of ``path``, as the server says."""
    found = []
    for child in kz.get_children(path) if kz.exists(path) else []:
        stat = kz.exists("%s/%s" % (path, child))
        if stat is not None and stat.ephemeralOwner:
            found.append(stat.ephemeralOwner)
    return found


@pytest.mark.parametrize("ending", ["sys.exit", "end of main", "uncaught exception"])
def test_exit_takes_the_nodes_of_waiting_and_holding_daemon_threads(
    client: zklock.Client, kz: KazooClient, hosts: str, path: str, ending: str
) -> None:
    with client.lock(path), Child(CHILD, hosts, path, ending) as child:
        session = int(child.line())
        assert owners(kz, path).count(session) == 1 and owners(kz, path + "/held") == [session]
        child.send("\n")
        assert child.wait(20) == (1 if ending == "uncaught exception" else 0), child.stderr
        # Gone at once, long before the session timeout.
        wait_for(
            lambda: session not in owners(kz, path) + owners(kz, path + "/held"),
            timeout=2.0,
            what="the exited child's nodes to go (its session timeout is %s s)" % SESSION_TIMEOUT,
        )
        assert owners(kz, path) == [client.session_id]
        # The waiter told Closed by the exit's close stayed silent.
        assert "Closed" not in child.stderr, child.stderr
        assert child.stderr.count("Traceback") == (ending == "uncaught exception"), child.stderr


def test_exit_with_the_server_stopped_ends_within_a_bound(path: str) -> None:
    # A server of its own, stopped (SIGSTOP) while two children exit: each
    # exit waits about 1 s for it in all, although their operation timeout
    # (the wait of close()) is 30 s: the first has daemon threads waiting
    # and holding, the second 6 clients that are garbage at its exit (each
    # of which waited 1 s more for the server, in turn, when finalization
    # dropped them after the exit hook had closed them).
    # Resumed, the server reads the closes the children sent before they
    # ended: their nodes go at once.
    harness = Harness()
    try:
        with (
            kazoo_session(harness.connect) as kz,
            zklock.Client(harness.connect) as holder,
            holder.lock(path),
            Child(CHILD, harness.connect, path, "sys.exit") as child,
            Child(CLIENTS_CHILD, harness.connect, path) as clients,
        ):
            session = int(child.line())
            sessions = [int(s) for s in clients.line().split()]
            assert owners(kz, path + "/c") == sessions[:1]
            harness.command("freeze 0")
            try:
                took = []
                for each in (child, clients):
                    start = time.monotonic()
                    each.send("\n")
                    assert each.wait(20) == 0
                    took.append(time.monotonic() - start)
            finally:
                harness.command("resume 0")
            print("the exits with the server stopped took %.2f s and %.2f s" % tuple(took))
            assert max(took) < 4, "an exit waited %.1f s for a stopped server" % max(took)

            def left() -> Set[int]:
                paths = [path, path + "/held", path + "/c"]
                return {session, *sessions} & {owner for p in paths for owner in owners(kz, p)}

            wait_for(
                lambda: not left(),
                timeout=5.0,
                what="the exited children's nodes to go once the server runs again",
            )
            assert "Traceback" not in child.stderr + clients.stderr, child.stderr + clients.stderr
    finally:
        harness.stop()


#: A child with 6 clients that are garbage when it exits (at the end of
#: its main module; no thread keeps them), the first holding PATH/c: it
#: prints their session ids and waits for a line on stdin.
CLIENTS_CHILD = """
    import sys, zklock
    hosts, path = sys.argv[1:3]
    clients = [zklock.Client(hosts, session_timeout=%(session)s, operation_timeout=%(session)s) for _ in range(6)]
    held = clients[0].lock(path + "/c")
    held.acquire()
    print(" ".join(str(zk.session_id) for zk in clients), flush=True)
    sys.stdin.readline()
""" % {"session": SESSION_TIMEOUT}


FORK_CHILD = """
    import os, sys, zklock
    hosts, path = sys.argv[1:3]
    zk = zklock.Client(hosts, session_timeout=%(session)s)
    lock = zk.lock(path)
    lock.acquire()
    pid = os.fork()
    if pid == 0:
        sys.exit(0)  # through the exit hook: it must not close the parent's session
    _, status = os.waitpid(pid, 0)
    lock.check()
    print(status, zk.session_id, flush=True)
    sys.stdin.readline()
""" % {"session": SESSION_TIMEOUT}


def test_a_forked_child_exit_leaves_the_parent_session_alone(kz: KazooClient, hosts: str, path: str) -> None:
    with Child(FORK_CHILD, hosts, path) as child:
        status, session = map(int, child.line().split())
        assert status == 0
        time.sleep(0.5)  # a close by the child's exit would be through by now
        assert owners(kz, path) == [session]
        child.send("\n")
        assert child.wait(20) == 0
        wait_for(lambda: owners(kz, path) == [], timeout=2.0, what="the parent's node to go at its own exit")

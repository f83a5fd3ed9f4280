"""Blocking waits release the GIL and honour Ctrl-C (a real SIGINT)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time

import zklock
from support import wait_for

CHILD = textwrap.dedent(
    """
    import sys, zklock
    hosts, path = sys.argv[1:3]
    zk = zklock.Client(hosts)
    lock = zk.lock(path)
    print("WAITING", flush=True)
    try:
        lock.acquire()
        print("ACQUIRED", flush=True)
    except KeyboardInterrupt:
        # Our session is still open: the node must already be gone.
        print("INTERRUPTED %d held=%s" % (len(zk.participants(path)), lock.held), flush=True)
        sys.stdin.readline()  # keep the session open while the test looks
        zk.close()
        print("BYE", flush=True)
    """
)


def test_ctrl_c_cancels_a_blocked_acquire_and_leaves_no_node(
    client: zklock.Client, observer: zklock.Client, hosts: str, path: str
) -> None:
    with client.lock(path):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, hosts, path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout is not None and child.stdin is not None
            assert child.stdout.readline().strip() == "WAITING"
            wait_for(lambda: len(observer.participants(path)) == 2, what="the child to queue")
            time.sleep(0.2)  # well inside the blocking wait
            sent = time.monotonic()
            child.send_signal(signal.SIGINT)
            line = child.stdout.readline().strip()
            assert line == "INTERRUPTED 1 held=False", line
            assert time.monotonic() - sent < 3, "Ctrl-C took too long to interrupt the wait"
            # Seen from another client while the child's session is alive:
            # only our holder's node is left.
            parts = observer.participants(path)
            assert [p.session_id for p in parts] == [client.session_id]
            child.stdin.write("\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "BYE"
            assert child.wait(10) == 0
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()


def test_blocking_acquire_releases_the_gil(client: zklock.Client, hosts: str, path: str) -> None:
    with client.lock(path):
        with zklock.Client(hosts) as other:
            waiter = other.lock(path)
            t = threading.Thread(target=lambda: waiter.acquire(timeout=1.5))
            t.start()
            time.sleep(0.1)
            # While the other thread waits, this one keeps running Python code.
            count = 0
            end = time.monotonic() + 0.5
            while time.monotonic() < end:
                count += 1
            t.join(10)
            assert count > 10000, "the waiting thread held the GIL (only %d iterations)" % count

"""kazoo 2.11 lock peer for zklock's interoperability tests.

Takes a real kazoo lock on a ZooKeeper path that zklock contenders use at
the same time, so that zklock-core/tests/interop.rs can check that the two
libraries exclude each other. Runs in the project-local venv
target/interop-venv (kazoo==2.11.0), which the test creates if missing.

Usage (same as tests/interop/CuratorPeer.java)::

    kazoo_peer.py HOSTS LOCK_PATH KIND ROUNDS CHECKER_PORT PEER_ID

KIND is ``mutex`` (kazoo ``Lock``), ``read`` (``ReadLock``) or ``write``
(``WriteLock``), each created with the ``extra_lock_patterns`` that make
kazoo wait for zklock's and Curator's nodes (see EXTRA_LOCK_PATTERNS).
ROUNDS is a number or the word ``hold``; CHECKER_PORT is the test's checker
on 127.0.0.1 (0: none, hold mode only); PEER_ID names us in its messages.

Loop mode: connect, print ``READY``, wait for one line on stdin (the start
signal), then per round: acquire (60 s, failing loudly), ``enter W|R id`` to
the checker, sleep 5-20 ms, ``exit W|R id``, release, then sleep 0-15 ms
before the next round (so that the queue order keeps changing); each
checker message waits for its ``ok``. Print ``DONE`` and exit 0 after the last round.

Hold mode: connect, print ``READY``, acquire once, print ``HELD <node>``,
wait for a line (or end of input) on stdin, release, print ``RELEASED``,
exit 0.

Any failure prints a message on stderr and exits non-zero. A watchdog ends
the process after 150 s, and the end of stdin in loop mode ends it at once,
so a dead test never leaves a peer behind.
"""

import os
import random
import socket
import sys
import threading
import time

from kazoo.client import KazooClient

#: Patterns of other libraries' node names that kazoo must treat as
#: contenders ahead of it (zklock and Curator write ``-lock-``,
#: ``__WRIT__`` and ``__READ__`` before the sequence).
EXTRA_LOCK_PATTERNS = {
    "mutex": ["-lock-"],
    "write": ["__WRIT__", "__READ__"],
    "read": ["__WRIT__"],
}

SESSION_TIMEOUT_S = 10.0
ACQUIRE_TIMEOUT_S = 60.0
WATCHDOG_S = 150.0


def say(line):
    """Print a line on stdout at once (the test reads it)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def fail(code, message):
    """Print the reason on stderr and end the process with ``code``."""
    sys.stderr.write("kazoo_peer: %s\n" % message)
    sys.stderr.flush()
    os._exit(code)


class Checker:
    """The test's checker: one line per message, each answered ``ok``."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("r", encoding="utf-8")

    def send(self, line):
        """Send ``line`` and wait for the answer ``ok``."""
        self.sock.sendall((line + "\n").encode("utf-8"))
        answer = self.reader.readline().strip()
        if answer != "ok":
            raise RuntimeError("checker answered %r to %r" % (answer, line))


def make_lock(zk, kind, path, peer_id):
    """The kazoo lock of ``kind`` on ``path``, seeing other libraries' nodes."""
    extra = EXTRA_LOCK_PATTERNS[kind]
    if kind == "mutex":
        return zk.Lock(path, peer_id, extra_lock_patterns=extra)
    if kind == "write":
        return zk.WriteLock(path, peer_id, extra_lock_patterns=extra)
    return zk.ReadLock(path, peer_id, extra_lock_patterns=extra)


def acquire(lock, what):
    """Acquire ``lock`` within ACQUIRE_TIMEOUT_S or fail the process."""
    try:
        ok = lock.acquire(timeout=ACQUIRE_TIMEOUT_S)
    except Exception as e:  # LockTimeout and every other error
        fail(4, "%s: not acquired within %s s: %r" % (what, ACQUIRE_TIMEOUT_S, e))
    if not ok:
        fail(4, "%s: acquire returned False" % what)


def watch_stdin_eof(peer_id):
    """End the process when stdin closes (the test gave up on us)."""
    while sys.stdin.readline():
        pass
    fail(6, "%s: stdin closed while running" % peer_id)


def main(argv):
    """Run the peer (see the module docstring)."""
    if len(argv) != 7 or argv[3] not in EXTRA_LOCK_PATTERNS:
        fail(2, "usage: kazoo_peer.py HOSTS LOCK_PATH mutex|read|write ROUNDS|hold CHECKER_PORT PEER_ID")
    hosts, path, kind, rounds_arg, port_arg, peer_id = argv[1:]
    hold = rounds_arg == "hold"
    rounds = 1 if hold else int(rounds_arg)
    port = int(port_arg)
    side = "R" if kind == "read" else "W"

    watchdog = threading.Timer(WATCHDOG_S, fail, (5, "%s: watchdog: still running after %s s" % (peer_id, WATCHDOG_S)))
    watchdog.daemon = True
    watchdog.start()

    zk = KazooClient(hosts=hosts, timeout=SESSION_TIMEOUT_S)
    try:
        zk.start(timeout=20)
    except Exception as e:
        fail(3, "%s: could not connect to %s: %r" % (peer_id, hosts, e))
    lock = make_lock(zk, kind, path, peer_id)
    checker = Checker(port) if port else None

    say("READY")
    if hold:
        acquire(lock, "%s: %s lock on %s" % (peer_id, kind, path))
        if checker:
            checker.send("enter %s %s" % (side, peer_id))
        say("HELD %s" % lock.node)
        sys.stdin.readline()  # a line or the end of input: release
        if checker:
            checker.send("exit %s %s" % (side, peer_id))
        lock.release()
        say("RELEASED")
    else:
        if not sys.stdin.readline():
            fail(6, "%s: stdin closed before the start signal" % peer_id)
        threading.Thread(target=watch_stdin_eof, args=(peer_id,), daemon=True).start()
        for round_no in range(rounds):
            acquire(lock, "%s: round %d: %s lock on %s" % (peer_id, round_no, kind, path))
            checker.send("enter %s %s" % (side, peer_id))
            time.sleep(random.uniform(0.005, 0.020))
            checker.send("exit %s %s" % (side, peer_id))
            lock.release()
            time.sleep(random.uniform(0.0, 0.015))
        say("DONE")
    zk.stop()
    zk.close()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 - any failure must be loud
        import traceback

        traceback.print_exc()
        fail(1, "failed: %r" % e)

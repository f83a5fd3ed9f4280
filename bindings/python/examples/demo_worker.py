"""The Python worker of ``make demo``.

zklock-core/examples/demo.rs starts it next to the C, Node and Rust workers,
all on one private ZooKeeper. It takes turns on an exclusive lock, then on a
read/write lock, stands once in a leader election (leads, then resigns), and
takes leases of a semaphore of 2, and prints one line per event on stdout
for the demo to merge into a timeline::

    READY lang=python pid=P phase=mutex|rw|election|semaphore t_ns=T    (then waits for a line on stdin)
    HOLD lang=python lock=PATH mode=exclusive|read|write|leader|lease round=R token=N waited_ms=W t_ns=T
    RELEASE lang=python lock=PATH mode=... round=R token=N t_ns=T
    DONE lang=python t_ns=T

``t_ns`` is ``time.monotonic_ns()`` (CLOCK_MONOTONIC, the same clock in every
process of the machine). HOLD is printed after the acquire returned, RELEASE
before the release is sent.

Run by hand, with zklock installed from this repository (``make demo`` uses
the venv target/python-venv; never ``pip install zklock`` from PyPI, that
name belongs to an unrelated package)::

    pip install ./bindings/python
    python bindings/python/examples/demo_worker.py 127.0.0.1:2181 /demo/mutex /demo/rw 3 rrr /demo/leader /demo/pool

Arguments: connect string, exclusive lock path, read/write lock path, rounds
on the exclusive lock (and on the semaphore), one letter per round on the
read/write lock (r = read, w = write), election path, semaphore path. Exit
status 0 when every round went through.
"""

from __future__ import annotations

import os
import sys
import time

import zklock

# How long each grant is held (the same in every demo worker), in seconds.
HOLD = {"exclusive": 0.150, "read": 0.300, "write": 0.150, "leader": 0.150, "lease": 0.300}
# The semaphore's leases (the same in every demo worker).
PERMITS = 2


def emit(line: str) -> None:
    print("%s t_ns=%d" % (line, time.monotonic_ns()), flush=True)


def ready(phase: str) -> None:
    """Announces a phase and waits for the demo's "go" line on stdin."""
    emit("READY lang=python pid=%d phase=%s" % (os.getpid(), phase))
    if not sys.stdin.readline():
        raise SystemExit("python worker: stdin closed before the start of phase %s" % phase)


def one_round(lock: zklock.Lock, mode: str, rnd: int) -> None:
    started = time.monotonic()
    lock.acquire()  # no deadline: the demo bounds the whole run
    waited_ms = int((time.monotonic() - started) * 1000)
    token = lock.fencing_token
    emit("HOLD lang=python lock=%s mode=%s round=%d token=%d waited_ms=%d" % (lock.path, mode, rnd, token, waited_ms))
    try:
        time.sleep(HOLD[mode])  # the "work"
        lock.check()  # before acting on the work: is the lock still safely ours?
    finally:
        emit("RELEASE lang=python lock=%s mode=%s round=%d token=%d" % (lock.path, mode, rnd, token))
        lock.release()


def main(argv: list[str]) -> int:
    if len(argv) != 8:
        print(
            "usage: %s HOSTS MUTEX_PATH RW_PATH ROUNDS RW_MODES ELECTION_PATH SEMAPHORE_PATH (e.g. rrr)" % argv[0],
            file=sys.stderr,
        )
        return 2
    hosts, mutex_path, rw_path, rounds, rw_modes = argv[1], argv[2], argv[3], int(argv[4]), argv[5]
    election_path, semaphore_path = argv[6], argv[7]
    with zklock.Client(hosts, session_timeout=10.0) as zk:
        mutex = zk.lock(mutex_path, identifier="demo python worker")
        rw = zk.read_write_lock(rw_path)
        ready("mutex")
        for rnd in range(1, rounds + 1):
            one_round(mutex, "exclusive", rnd)
        ready("rw")
        for rnd, letter in enumerate(rw_modes, start=1):
            if letter == "w":
                one_round(rw.write, "write", rnd)
            else:
                one_round(rw.read, "read", rnd)
        ready("election")
        one_round(zk.election(election_path, "python"), "leader", 1)  # leads once, then resigns
        ready("semaphore")
        pool = zk.semaphore(semaphore_path, PERMITS)
        for rnd in range(1, rounds + 1):
            one_round(pool, "lease", rnd)
    emit("DONE lang=python")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

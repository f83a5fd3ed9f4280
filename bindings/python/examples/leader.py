"""A leader-style task with zklock.

Several scheduler nodes run this same program and join the election
``/examples/scheduler/leader`` (``Client.election``, Curator ``LeaderLatch``
layout). The leader polls task status every 200 ms; the others wait in
``acquire``. When the leader dies, its session expires and another instance
takes over within the session timeout; when it stops cleanly (Ctrl-C,
SIGTERM) it resigns and the next one takes over at once.

Run (zklock installed from this repository: ``pip install ./bindings/python``,
or the wheel from ``make python``; the ``zklock`` on PyPI is an unrelated
package)::

    python bindings/python/examples/leader.py 127.0.0.1:2181 node-1 [SESSION_TIMEOUT_MS]

It prints, one line each::

    instance ID waiting to lead
    instance ID is leader (token N)
    leader ID polling tasks (token N)        every 200 ms while leading
    instance ID stopped leading: REASON      lock lost or suspended
    instance ID exiting

The fencing token N grows with every change of leader: give it to whatever
the leader writes to, so that a deposed leader that did not notice in time
(paused, partitioned) is refused there.
"""

from __future__ import annotations

import signal
import sys
import time

import zklock

LEADER_PATH = "/examples/scheduler/leader"
POLL_INTERVAL = 0.2


def poll_tasks(instance: str, token: int) -> None:
    """The leader's work; a real scheduler reads task states here and writes with the token."""
    print("leader %s polling tasks (token %d)" % (instance, token), flush=True)


def lead(hosts: str, instance: str, session_timeout: float) -> None:
    """Contends for leadership and leads, until interrupted."""
    with zklock.Client(hosts, session_timeout=session_timeout) as zk:
        lock = zk.election(LEADER_PATH, "scheduler %s" % instance)
        while True:
            print("instance %s waiting to lead" % instance, flush=True)
            try:
                lock.acquire()  # until we lead; Ctrl-C / SIGTERM cancel it (no node left)
            except zklock.ZkLockError as e:  # e.g. no connection: try again a little later
                print("instance %s: acquire: %s" % (instance, e), file=sys.stderr, flush=True)
                time.sleep(1.0)
                continue
            token = lock.fencing_token
            print("instance %s is leader (token %d)" % (instance, token), flush=True)
            try:
                while True:
                    try:
                        lock.check()  # before each round of work: still safely the leader?
                    except zklock.ZkLockError as e:
                        print("instance %s stopped leading: %s" % (instance, e.code), flush=True)
                        break
                    poll_tasks(instance, token)
                    time.sleep(POLL_INTERVAL)
            finally:
                try:
                    lock.release()  # hand over
                except zklock.ZkLockError:
                    pass  # the lock was lost: nothing to hand over


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4):
        print("usage: %s HOSTS ID [SESSION_TIMEOUT_MS]" % argv[0], file=sys.stderr)
        return 2
    hosts, instance = argv[1], argv[2]
    session_timeout = int(argv[3]) / 1000.0 if len(argv) == 4 else 10.0
    # SIGTERM stops it like Ctrl-C: KeyboardInterrupt cancels a waiting
    # acquire or ends the leading loop (which releases the lock). SIGINT is
    # set too: a shell starts background jobs with SIGINT ignored.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        lead(hosts, instance, session_timeout)
    except KeyboardInterrupt:
        pass
    print("instance %s exiting" % instance, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Interpreter shutdown: state callbacks that fire while Python exits stay
silent (no panic message, no fatal error) and the exit status is 0."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

#: Each program holds locks with state callbacks and then ends in a way
#: that makes LOST fire while the interpreter shuts down.
PROGRAMS = {
    # close() at the end of the program: 20 LOST callbacks (each sleeping,
    # so releasing the GIL) are still running when finalization starts.
    "close-at-exit": """
        zk.close()
    """,
    # close() from an atexit hook registered after importing zklock (so it
    # runs before zklock's own hook).
    "atexit-close": """
        import atexit
        atexit.register(zk.close)
    """,
    # A daemon thread closes the client while the main thread exits.
    "daemon-thread-close": """
        import threading
        threading.Thread(target=lambda: (time.sleep(0.05), zk.close()), daemon=True).start()
        time.sleep(0.045)
    """,
    # Nothing closed: the client and its locks are garbage at exit.
    "garbage-at-exit": "",
    # The callbacks raise.
    "raising-callbacks": """
        for lock in locks:
            lock.on_state_change(lambda state: 1 / 0)
        zk.close()
    """,
}

PRELUDE = """
    import sys, time, zklock
    hosts, path = sys.argv[1:3]
    zk = zklock.Client(hosts)
    locks = []
    for i in range(20):
        lock = zk.lock("%s/%d" % (path, i))
        lock.acquire()
        lock.on_state_change(lambda state: time.sleep(0.01))
        locks.append(lock)
"""


@pytest.mark.parametrize("ending", sorted(PROGRAMS))
def test_callbacks_during_shutdown_are_silent(hosts: str, path: str, ending: str) -> None:
    program = textwrap.dedent(PRELUDE) + textwrap.dedent(PROGRAMS[ending])
    for attempt in range(3):
        proc = subprocess.run(
            [sys.executable, "-c", program, hosts, "%s-%d" % (path, attempt)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert "panicked" not in proc.stderr, proc.stderr
        assert "Fatal Python error" not in proc.stderr, proc.stderr
        assert proc.returncode == 0, "exit status %d, stderr:\n%s" % (proc.returncode, proc.stderr)

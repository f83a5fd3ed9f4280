"""Helpers shared by the tests (importable by multiprocessing children)."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import textwrap
import threading
import time
from typing import Callable, List, Optional, Tuple

import zklock


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Polls ``predicate`` every 20 ms until it is true; fails after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %s s waiting for %s" % (timeout, what))
        time.sleep(0.02)


def delete_as_third_party(hosts: str, node: str) -> None:
    """Deletes ``node`` through a session of another library (kazoo 2.11.0,
    pinned in the test venv): a third party's delete."""
    import kazoo.client as kazoo_client  # noqa: PLC0415 - not needed by process children

    kz = kazoo_client.KazooClient(hosts=hosts, timeout=10.0)
    kz.start(timeout=20)
    try:
        kz.delete(node)
    finally:
        kz.stop()
        kz.close()


def process_contender(hosts: str, path: str, marker: str, rounds: int, worker: int) -> Tuple[int, List[int], List[str]]:
    """Body of one contending process: ``rounds`` turns on the lock.

    Inside the lock it creates ``marker`` exclusively (O_EXCL), sleeps a
    little and removes it: a second holder would find it there. Returns
    (turns taken, fencing tokens, violations).
    """
    violations: List[str] = []
    tokens: List[int] = []
    turns = 0
    with zklock.Client(hosts) as zk:
        lock = zk.lock(path, identifier="worker-%d" % worker)
        for _ in range(rounds):
            with lock:
                try:
                    fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                except FileExistsError:
                    violations.append("worker %d entered while another process was inside" % worker)
                    continue
                os.close(fd)
                tokens.append(lock.fencing_token)
                time.sleep(0.01)
                os.unlink(marker)
                turns += 1
    return turns, tokens, violations


#: Put first in every child program of :class:`Child`: SIGINT raises
#: KeyboardInterrupt there even if the test run was started with SIGINT
#: ignored (``make test &`` from a script: the child inherits the ignored
#: signal and Python then installs no handler of its own).
CHILD_PRELUDE = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"


class Child:
    """A Python program run as a child process (``python -c``): its stdout
    and stderr read by threads of their own, so that every wait on it has
    a time limit (:meth:`line`, :meth:`wait`): a child that hangs or dies
    fails the test with what it wrote instead of hanging the run. SIGINT
    is Python's default in the child (:data:`CHILD_PRELUDE`). A context
    manager: leaving it kills the child if it still runs."""

    def __init__(self, program: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD_PRELUDE + textwrap.dedent(program), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._lines: "queue.Queue[Optional[str]]" = queue.Queue()
        self._stderr: List[str] = []
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)  # end of output

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    @property
    def stderr(self) -> str:
        """What the child wrote on stderr so far."""
        return "".join(self._stderr)

    def _fail(self, why: str) -> AssertionError:
        self.kill()
        return AssertionError("%s; the child was killed. Its stderr:\n%s" % (why, self.stderr))

    def line(self, timeout: float = 30.0) -> str:
        """The child's next stdout line (without the newline); fails (and
        kills the child) if none comes within ``timeout`` seconds or the
        child's output ended."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise self._fail("no line from the child within %s s" % timeout) from None
        if line is None:
            self._lines.put(None)
            raise self._fail("the child's output ended (exit status %s)" % self.proc.poll())
        return line

    def send(self, text: str) -> None:
        """Writes ``text`` to the child's stdin."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(text)
        self.proc.stdin.flush()

    def wait(self, timeout: float = 30.0) -> int:
        """The child's exit status; fails (and kills it) if it has not
        ended within ``timeout`` seconds."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise self._fail("the child did not end within %s s" % timeout) from None
        for reader in self._readers:
            reader.join(5)
        return code

    def kill(self) -> None:
        """Kills the child if it still runs, and reaps it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def __enter__(self) -> "Child":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.kill()
        for reader in self._readers:
            reader.join(5)
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:  # the child is gone: nothing to flush to
                pass

"""Fixtures of zklock's Python tests: one real ZooKeeper for the session.

The server comes from the project's shared harness (``zkharness serve
--proxy``, crate tests/harness): it prints one JSON line with the connect
strings and then takes commands on stdin (``blackhole``, ``heal``, ...).
Set ``ZKHARNESS`` to use another binary; by default
``target/debug/zkharness`` of the repository is used (built with cargo if
it is missing).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import threading
import uuid
from pathlib import Path
from typing import Any, Dict, Iterator, Optional

import kazoo.client as kazoo_client  # kazoo 2.11.0, pinned in the test venv
import pytest
import zklock

ROOT = Path(__file__).resolve().parents[3]
HARNESS = Path(os.environ.get("ZKHARNESS", ROOT / "target" / "debug" / "zkharness"))

#: The longest the harness may take to start its servers or to answer a
#: command (``restart`` waits until the server serves): past it the test
#: fails instead of hanging the run.
HARNESS_WAIT = 180.0


class Harness:
    """A running ``zkharness serve --proxy``: connect strings and commands.
    ``args`` are more ``serve`` arguments (e.g. ``--tls``)."""

    def __init__(self, *args: str) -> None:
        if not HARNESS.exists():
            subprocess.run(["cargo", "build", "--locked", "-p", "zklock-harness"], cwd=ROOT, check=True, timeout=1800)
        self.proc = subprocess.Popen(
            [str(HARNESS), "serve", "--proxy", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        # Its answers are read by a thread of their own, so that every
        # wait for one has a time limit (_answer).
        self._answers: "queue.Queue[str]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        line = self._answer()
        info = json.loads(line) if line else {"ok": False, "error": "no output"}
        if not info.get("ok"):
            self.proc.kill()
            raise RuntimeError("zkharness did not start: %s" % info.get("error"))
        self.info: Dict[str, Any] = info
        #: Direct connect string of the server.
        self.connect: str = info["connect"]
        #: Connect string through the harness's proxy (blackhole/heal).
        self.proxied: str = info["proxied_connect"]
        #: With ``--tls``: the TLS ports, and the certificates' directory.
        self.secure: Optional[str] = info.get("secure_connect")
        self.tls_dir: Optional[str] = info.get("tls_dir")
        self._lock = threading.Lock()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._answers.put(line)
        self._answers.put("")  # end of output

    def _answer(self) -> str:
        """The harness's next line ("" once its output ended); fails (and
        kills it) if none comes within :data:`HARNESS_WAIT`."""
        try:
            line = self._answers.get(timeout=HARNESS_WAIT)
        except queue.Empty:
            self.proc.kill()
            raise RuntimeError("zkharness did not answer within %s s (killed)" % HARNESS_WAIT) from None
        if not line:
            self._answers.put("")
        return line

    def command(self, line: str) -> Dict[str, Any]:
        """Sends one command and returns its JSON answer (fails unless ok)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self._lock:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
            answer: Dict[str, Any] = json.loads(self._answer() or '{"ok": false, "error": "the harness ended"}')
        if not answer.get("ok"):
            raise RuntimeError("zkharness %r: %s" % (line, answer.get("error")))
        return answer

    def stop(self) -> None:
        """Stops the servers and the harness."""
        try:
            self.command("shutdown")
        except Exception:  # noqa: BLE001 - fall back to a kill below
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="session")
def harness() -> Iterator[Harness]:
    """The session's ZooKeeper server (with a proxy in front of it)."""
    h = Harness()
    try:
        yield h
    finally:
        h.stop()


@pytest.fixture(scope="session")
def hosts(harness: Harness) -> str:
    """Direct connect string of the test server."""
    return harness.connect


@pytest.fixture
def client(hosts: str) -> Iterator[zklock.Client]:
    """A connected client, closed after the test."""
    with zklock.Client(hosts, session_timeout=10.0) as c:
        yield c


@pytest.fixture
def observer(hosts: str) -> Iterator[zklock.Client]:
    """A second client that only looks (participants)."""
    with zklock.Client(hosts) as c:
        yield c


@contextlib.contextmanager
def kazoo_session(hosts: str) -> Iterator[kazoo_client.KazooClient]:
    """A kazoo session on ``hosts``: the view from outside zklock (another
    library's session), stopped and closed on leaving."""
    kz = kazoo_client.KazooClient(hosts=hosts, timeout=10.0)
    kz.start(timeout=20)
    try:
        yield kz
    finally:
        kz.stop()
        kz.close()


@pytest.fixture
def kz(hosts: str) -> Iterator[kazoo_client.KazooClient]:
    """A kazoo session on the test server (see :func:`kazoo_session`)."""
    with kazoo_session(hosts) as session:
        yield session


@pytest.fixture
def path(request: pytest.FixtureRequest) -> str:
    """A lock path of its own for each test."""
    return "/pytest/%s-%s" % (request.node.name.replace("[", "_").replace("]", ""), uuid.uuid4().hex[:8])

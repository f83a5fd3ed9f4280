"""The example programs of bindings/python/examples, run as programs."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import zklock
from support import wait_for

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
LEADER_LINE = re.compile(r"^instance (\S+) is leader \(token (\d+)\)$")


class Instance:
    """One running ``leader.py``; its output lines are collected by a thread."""

    def __init__(self, hosts: str, instance: str, session_ms: int) -> None:
        self.id = instance
        self.proc = subprocess.Popen(
            [sys.executable, str(EXAMPLES / "leader.py"), hosts, instance, str(session_ms)],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lines: List[str] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    def output(self) -> List[str]:
        with self._lock:
            return list(self.lines)

    def leaderships(self) -> List[int]:
        """Tokens of the "is leader" lines, in order."""
        return [int(m.group(2)) for m in (LEADER_LINE.match(line) for line in self.output()) if m]

    def printed(self, text: str) -> bool:
        return text in self.output()

    def stop(self) -> Optional[int]:
        """SIGTERM (SIGKILL after 15 s); the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = None
        self._reader.join(5)
        return code


def test_leader_example_takeover(hosts: str) -> None:
    """3 instances; SIGKILL the leader; another leads within the session timeout + 10 s."""
    session_ms = 2000
    instances = [Instance(hosts, "py-%d" % i, session_ms) for i in range(3)]
    try:

        def current() -> List[Tuple[Instance, int]]:
            return [(inst, t) for inst in instances for t in inst.leaderships()]

        wait_for(lambda: len(current()) > 0, timeout=30, what="a leader")
        leader, token = current()[0]
        wait_for(
            lambda: leader.printed("leader %s polling tasks (token %d)" % (leader.id, token)),
            timeout=10,
            what="the leader to poll",
        )
        others = [i for i in instances if i is not leader]
        for other in others:
            wait_for(lambda: other.printed("instance %s waiting to lead" % other.id), timeout=30, what="waiting")
        time.sleep(0.5)
        assert len(current()) == 1, "exactly one leader among 3 instances: %r" % current()

        # SIGKILL: the leader cannot release; the takeover comes from session expiry.
        leader.proc.kill()
        leader.proc.wait()
        killed = time.monotonic()

        def successors() -> List[Tuple[Instance, int]]:
            return [(inst, t) for inst in others for t in inst.leaderships()]

        wait_for(lambda: len(successors()) > 0, timeout=session_ms / 1000 + 10, what="a new leader (liveness bound)")
        took = time.monotonic() - killed
        successor, new_token = successors()[0]
        print(
            "leader %s (token %d) killed; %s took over after %.1f s (token %d)"
            % (leader.id, token, successor.id, took, new_token)
        )
        assert new_token > token
        wait_for(
            lambda: successor.printed("leader %s polling tasks (token %d)" % (successor.id, new_token)),
            timeout=10,
            what="the new leader to poll",
        )
        time.sleep(0.5)
        assert len(successors()) == 1, "exactly one new leader: %r" % successors()

        # SIGTERM: the survivors hand over or stop waiting, and exit 0.
        codes: Dict[str, Optional[int]] = {inst.id: inst.stop() for inst in others}
        assert codes == {inst.id: 0 for inst in others}
        for inst in others:
            assert inst.output()[-1] == "instance %s exiting" % inst.id
    finally:
        for inst in instances:
            inst.stop()
    with zklock.Client(hosts) as zk:
        wait_for(lambda: zk.participants("/examples/scheduler/leader") == [], timeout=15, what="no node left")


class Fenced:
    """One running ``fencing_sqlite.py``, its stdin a pipe, its lines kept."""

    def __init__(self, hosts: str, db: str, name: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(EXAMPLES / "fencing_sqlite.py"), hosts, db, name, "2"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lines: List[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def has(self, fragment: str) -> bool:
        return any(fragment in line for line in list(self.lines))

    def token(self) -> int:
        line = next(line for line in list(self.lines) if " holds the lock with token " in line)
        return int(line.rsplit(" ", 1)[1])

    def write_again_then_end(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.write("write\n")
        self.proc.stdin.close()
        code = self.proc.wait(timeout=30)
        self._reader.join(5)
        return code


def test_fencing_example_refuses_a_paused_holder(hosts: str, tmp_path: Path) -> None:
    """A holds and writes; A is stopped (SIGSTOP) until its session expires;
    B takes the lock and writes with a larger token; A, resumed, writes with
    its old token and the SQLite resource refuses it (issue 17, fencing
    guide)."""
    db = str(tmp_path / "resource.db")
    a = Fenced(hosts, db, "A")
    b: Optional[Fenced] = None
    try:
        wait_for(lambda: a.has("A wrote with token"), timeout=30, what="A's first write")
        assert a.has("accepted")
        a.proc.send_signal(signal.SIGSTOP)
        b = Fenced(hosts, db, "B")
        wait_for(
            lambda: b is not None and b.has("B wrote with token"),
            timeout=30,
            what="B's write after A's session expired",
        )
        assert b.has("B wrote with token %d: accepted" % b.token())
        assert b.token() > a.token()
        a.proc.send_signal(signal.SIGCONT)
        assert a.write_again_then_end() == 0
        assert a.has("A wrote with token %d: refused (the resource has seen token %d)" % (a.token(), b.token())), (
            a.lines
        )
        assert b.write_again_then_end() == 0
        assert b.lines.count("B wrote with token %d: accepted" % b.token()) == 2, b.lines
    finally:
        for p in (a, b):
            if p is not None and p.proc.poll() is None:
                p.proc.send_signal(signal.SIGCONT)
                p.proc.kill()
                p.proc.wait()

"""A resource that refuses stale lock holders: fencing tokens in SQLite.

A lock alone cannot stop a holder that was paused (a long GC, SIGSTOP, a
swapped-out VM) from writing after its session expired and someone else
got the lock. The resource must check: every grant of a zklock lock carries
a fencing token that grows with every grant on that path, and the resource
accepts a write only with a token at least as large as the largest it has
seen. Here the resource is a SQLite table; the check and the write are one
statement, so nothing can slip in between::

    UPDATE resource SET value = ?, token = ? WHERE key = ? AND token <= ?

Run (zklock installed from this repository: ``pip install ./bindings/python``,
or the wheel from ``make python``; the ``zklock`` on PyPI is an unrelated
package)::

    python bindings/python/examples/fencing_sqlite.py HOSTS DB_FILE NAME [SESSION_TIMEOUT_S]

It takes the lock ``/examples/fencing``, writes once, then writes again for
every line read from stdin (until EOF), and prints one line per event::

    NAME holds the lock with token T
    NAME wrote with token T: accepted
    NAME wrote with token T: refused (the resource has seen token U)

The project's test stops one such program with SIGSTOP while it holds the
lock, lets its session expire and a second program take the lock and
write, then resumes the first and makes it write: the resource refuses it.
"""

from __future__ import annotations

import sqlite3
import sys

import zklock


def open_resource(db_file: str) -> sqlite3.Connection:
    """The resource: one row per key, with the largest token that wrote it."""
    conn = sqlite3.connect(db_file, isolation_level=None, timeout=30)
    conn.execute("CREATE TABLE IF NOT EXISTS resource (key TEXT PRIMARY KEY, value TEXT, token INTEGER NOT NULL)")
    return conn


def write_fenced(conn: sqlite3.Connection, key: str, value: str, token: int) -> bool:
    """Writes ``value`` under ``key`` unless a larger token has written it:
    True if accepted. One statement: the check and the write are atomic."""
    conn.execute("INSERT OR IGNORE INTO resource (key, value, token) VALUES (?, NULL, 0)", (key,))
    cur = conn.execute(
        "UPDATE resource SET value = ?, token = ? WHERE key = ? AND token <= ?",
        (value, token, key, token),
    )
    return cur.rowcount == 1


def seen_token(conn: sqlite3.Connection, key: str) -> int:
    """The largest token that has written ``key``."""
    row = conn.execute("SELECT token FROM resource WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row else 0


def main() -> int:
    if len(sys.argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        return 2
    hosts, db_file, name = sys.argv[1:4]
    session_timeout = float(sys.argv[4]) if len(sys.argv) == 5 else 10.0
    conn = open_resource(db_file)
    with zklock.Client(hosts, session_timeout=session_timeout) as zk:
        lock = zk.lock("/examples/fencing", identifier=name)
        lock.acquire()
        token = lock.fencing_token
        print("%s holds the lock with token %d" % (name, token), flush=True)
        writes = 0
        while True:
            writes += 1
            # A paused holder gets here without knowing that it lost the
            # lock (a check() just before would race the same way): the
            # resource's token check is what keeps the data safe.
            if write_fenced(conn, "report", "%s write %d" % (name, writes), token):
                print("%s wrote with token %d: accepted" % (name, token), flush=True)
            else:
                seen = seen_token(conn, "report")
                print(
                    "%s wrote with token %d: refused (the resource has seen token %d)" % (name, token, seen), flush=True
                )
            if not sys.stdin.readline():
                break
        try:
            lock.release()
        except zklock.LockLost:
            print("%s had lost the lock" % name, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

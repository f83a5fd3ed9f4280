"""Benchmark driver for kazoo 2.11 (Lock, ReadLock, WriteLock) in
target/interop-venv; scenarios in pybench.py.

Every contender of a path in one run is a kazoo lock, so no
`extra_lock_patterns` are needed (they matter only when kazoo shares a path
with Curator or zklock nodes; see docs/lock-protocol.md section 3).
"""

import logging

import pybench
from kazoo.client import KazooClient

logging.basicConfig(level=logging.CRITICAL)


class Kazoo:
    @staticmethod
    def connect(hosts):
        c = KazooClient(hosts=hosts, timeout=10.0)
        c.start(timeout=15)
        return c

    @staticmethod
    def lock(c, path, kind):
        return {"mutex": c.Lock, "read": c.ReadLock, "write": c.WriteLock}[kind](path)

    @staticmethod
    def children(c, path):
        return len(c.get_children(path)) if c.exists(path) else 0

    @staticmethod
    def close(c):
        c.stop()
        c.close()


if __name__ == "__main__":
    pybench.main(Kazoo)

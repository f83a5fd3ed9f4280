"""Benchmark driver for zklock's Python package (the release build unpacked
into target/bench/pylib by `make bench`); scenarios in pybench.py."""

import pybench
import zklock


class _Lock:
    """acquire()/release() over a zklock lock handle (the handle holds the guard)."""

    def __init__(self, lock):
        self.lock = lock

    def acquire(self):
        if not self.lock.acquire(timeout=120):
            raise TimeoutError("acquire timed out")

    def release(self):
        self.lock.release()


class Zk:
    @staticmethod
    def connect(hosts):
        return zklock.Client(hosts, session_timeout=10.0)

    @staticmethod
    def lock(c, path, kind):
        return _Lock({"mutex": c.lock, "read": c.read_lock, "write": c.write_lock}[kind](path))

    @staticmethod
    def children(c, path):
        return len(c.participants(path))

    @staticmethod
    def close(c):
        c.close()


if __name__ == "__main__":
    pybench.main(Zk)

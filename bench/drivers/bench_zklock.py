"""Benchmark driver for zklock's Python package (the release build unpacked
into target/bench/pylib by `make bench`); scenarios in pybench.py."""

import asyncio
import gc
import time

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


def _process_status():
    """The process's thread count and resident memory (bytes), from /proc."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            fields[key] = value.split()
    return int(fields["Threads"][0]), int(fields["VmRSS"][0]) * 1024


def waiters(hosts, path, p):
    """paths x per_path asyncio acquires waiting at once, each its own lock
    object (its own node), behind one holder per path: the thread count and
    memory per waiter while they wait, then how fast they drain once the
    holders release (each waiter releases at once when granted)."""
    paths, per_path = p.get("paths", 100), p.get("per_path", 100)
    sessions = max(1, p.get("sessions", 16))
    clients = [zklock.Client(hosts, session_timeout=10.0) for _ in range(sessions)]

    def lock_path(i):
        return f"{path}/{i}"

    holders = [clients[0].lock(lock_path(i)) for i in range(paths)]
    for h in holders:
        h.acquire()

    async def one(lock):
        assert await lock.acquire_async(timeout=600)
        await lock.release_async()

    async def run():
        gc.collect()
        threads_before, rss_before = _process_status()
        threads_max = threads_before
        t0 = time.perf_counter()
        tasks = [
            asyncio.ensure_future(one(clients[i % sessions].lock(lock_path(i % paths))))
            for i in range(paths * per_path)
        ]
        while True:
            counts = [len(clients[0].participants(lock_path(i))) for i in range(paths)]
            threads_max = max(threads_max, _process_status()[0])
            if all(c == per_path + 1 for c in counts):
                break
            await asyncio.sleep(0.2)
        queued_s = time.perf_counter() - t0
        gc.collect()
        threads, rss = _process_status()
        threads_max = max(threads_max, threads)
        t1 = time.perf_counter()
        for h in holders:
            await h.release_async()
        await asyncio.gather(*tasks)
        drain_s = time.perf_counter() - t1
        n = paths * per_path
        return {
            "waiters": n,
            "threads_before": threads_before,
            "threads_max": threads_max,
            "rss_per_waiter_bytes": round((rss - rss_before) / n),
            "queued_s": queued_s,
            "grants": n,
            "window_s": drain_s,
        }

    out = asyncio.run(run())
    for c in clients:
        c.close()
    return out


def memory(hosts, path, p, shape):
    """`zklock-bench memory` (bench/src/memory.rs) for the asyncio API: one
    client; a holder (one) or N holders (many) taken first, then on `start`
    N acquire_async tasks, each its own lock object, on an asyncio loop that
    runs on a thread of its own (the main thread reads the runner's
    commands). In `hold` the tasks keep their locks and say `granted` once
    all hold; waiters granted (none should be) release at once."""
    import threading

    n = p.get("n", 1000)
    c = zklock.Client(hosts, session_timeout=10.0)
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()

    def on_loop(coro):
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    async def acquire_all(locks):
        await asyncio.gather(*(lock.acquire_async(timeout=900) for lock in locks))

    holders = []
    if shape == "one":
        holders = [c.lock(path)]
    elif shape == "many":
        holders = [c.lock(pybench.memory_path(path, shape, i)) for i in range(n)]
    on_loop(acquire_all(holders))
    locks = [c.lock(pybench.memory_path(path, shape, i)) for i in range(n)]
    granted = [0]

    async def one(lock):
        assert await lock.acquire_async(timeout=900)
        granted[0] += 1
        if shape == "hold":
            if granted[0] == n:
                pybench.say({"event": "granted"})
        else:
            await lock.release_async()

    async def start_all():
        return [asyncio.ensure_future(one(lock)) for lock in locks]

    tasks = []
    pybench.memory_serve(lambda: tasks.extend(on_loop(start_all())))
    c.close()
    return {"n": n, "granted": granted[0]}


if __name__ == "__main__":
    pybench.main(
        Zk,
        extra={
            "waiters": waiters,
            **{f"memory-{s}": (lambda hosts, path, p, s=s: memory(hosts, path, p, s)) for s in ("one", "many", "hold")},
        },
    )

"""The scenarios of zklock's `make bench`, shared by the Python drivers
(bench_zklock.py: zklock's Python package; bench_kazoo.py: kazoo).

A backend provides: connect(hosts) -> session, lock(session, path, kind)
with kind "mutex" | "read" | "write" -> an object with acquire() and
release(), children(session, path) -> int, close(session). Output: one JSON
line {"result": {...}} on stdout (herd also prints {"event": ...} lines and
reads "release" / "quit" lines from stdin).
"""

import ctypes
import gc
import json
import sys
import threading
import time


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def uncontended(b, hosts, path, p):
    s = b.connect(hosts)
    lock = b.lock(s, path, "mutex")
    lat = []
    warmup = p.get("warmup", 100)
    hold = p.get("hold_us", 0) / 1e6
    cpu0 = 0.0
    for i in range(warmup + p.get("iters", 1000)):
        if i == warmup:
            say({"event": "measuring"})
            cpu0 = time.process_time()
        t = time.perf_counter()
        lock.acquire()
        if hold > 0:
            time.sleep(hold)
        lock.release()
        if i >= warmup:
            lat.append(round((time.perf_counter() - t) * 1e6, 1))
    cpu = time.process_time() - cpu0
    say({"event": "measured"})
    b.close(s)
    return {"cpu_s": cpu, "lat_us": lat}


def _window(p):
    start = time.perf_counter()
    return start + p.get("warmup_ms", 500) / 1e3, start + p.get("duration_ms", 3000) / 1e3


def _run_workers(b, clients, n, p, setup, body):
    """Runs ``body(i, state, frm, end) -> count`` on n threads that start
    together (``state = setup(i)``, made before the start); closes the
    clients. Returns (per-thread counts, measured window in seconds, the
    process's CPU seconds in that window, which it tells the runner)."""
    per = [0] * n
    errors = []
    barrier = threading.Barrier(n + 1)
    win = []

    def worker(i):
        try:
            state = setup(i)
            barrier.wait()
            frm, end = win[0]
            per[i] = body(i, state, frm, end)
        except BaseException as e:  # reported below
            errors.append(repr(e))
            try:
                barrier.abort()
            except Exception:
                pass

    threading.stack_size(512 * 1024)
    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    win.append(_window(p))
    barrier.wait()
    frm, end = win[0]
    time.sleep(max(0.0, frm - time.perf_counter()))
    say({"event": "measuring"})
    cpu0 = time.process_time()
    time.sleep(max(0.0, end - time.perf_counter()))
    cpu = time.process_time() - cpu0
    say({"event": "measured"})
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(errors[0])
    for s in clients:
        b.close(s)
    return per, end - frm, cpu


def throughput(b, hosts, path, p, independent):
    sessions = max(1, p.get("sessions", 2))
    waiters = max(1, p.get("waiters", sessions))
    clients = [b.connect(hosts) for _ in range(sessions)]
    mx = threading.Lock()
    inside = [0] * (waiters if independent else 1)
    stats = {"violations": 0}

    def setup(i):
        return b.lock(clients[i % sessions], f"{path}/{i}" if independent else path, "mutex")

    def body(i, lock, frm, end):
        slot = i if independent else 0
        n = 0
        while time.perf_counter() < end:
            lock.acquire()
            with mx:
                inside[slot] += 1
                if inside[slot] != 1:
                    stats["violations"] += 1
            now = time.perf_counter()
            if frm <= now < end:
                n += 1
            with mx:
                inside[slot] -= 1
            lock.release()
        return n

    per, window, cpu = _run_workers(b, clients, waiters, p, setup, body)
    return {"grants": sum(per), "per_worker": per, "violations": stats["violations"], "window_s": window, "cpu_s": cpu}


def rw(b, hosts, path, p):
    readers, writers = p.get("readers", 8), p.get("writers", 2)
    hold = p.get("hold_us", 1000) / 1e6
    n = readers + writers
    clients = [b.connect(hosts) for _ in range(n)]
    mx = threading.Lock()
    state = [0, 0]
    stats = {"violations": 0}

    def setup(i):
        return b.lock(clients[i], path, "write" if i >= readers else "read")

    def body(i, lock, frm, end):
        writer = i >= readers
        k = 0
        while time.perf_counter() < end:
            lock.acquire()
            with mx:
                state[1 if writer else 0] += 1
                if state[1] > 1 or (state[1] == 1 and state[0] > 0):
                    stats["violations"] += 1
            now = time.perf_counter()
            if frm <= now < end:
                k += 1
            time.sleep(hold)
            with mx:
                state[1 if writer else 0] -= 1
            lock.release()
        return k

    per, window, cpu = _run_workers(b, clients, n, p, setup, body)
    r, w = sum(per[:readers]), sum(per[readers:])
    return {
        "read_grants": r,
        "write_grants": w,
        "grants": r + w,
        "violations": stats["violations"],
        "window_s": window,
        "cpu_s": cpu,
    }


def herd(b, hosts, path, p):
    import queue

    sessions = max(2, p.get("sessions", 8))
    waiters = p.get("waiters", 32)
    clients = [b.connect(hosts) for _ in range(sessions)]
    granted = queue.Queue()

    def waiter(lock):
        try:
            lock.acquire()
        except Exception:
            return
        ev = threading.Event()
        granted.put(ev)
        ev.wait()
        lock.release()

    threading.stack_size(256 * 1024)
    for i in range(waiters + 1):
        lock = b.lock(clients[i % sessions], path, "mutex")
        threading.Thread(target=waiter, args=(lock,), daemon=True).start()
        until = time.monotonic() + 10
        while b.children(clients[0], path) < i + 1:
            if time.monotonic() > until:
                raise RuntimeError(f"waiter {i} did not queue")
            time.sleep(0.001)
    holder = granted.get(timeout=30)
    say({"event": "ready"})
    rounds = 0
    for line in sys.stdin:
        if line.strip() != "release":
            break
        holder.set()
        holder = granted.get(timeout=30)
        rounds += 1
        say({"event": "granted"})
    return {"rounds": rounds}


def drain(b, hosts, path, p):
    """Waiters (threads, over sessions) queue behind a holder and acquire
    once each; timed from the holder's release to the last release.
    Repeated ``rounds`` times, the first not counted."""
    sessions = max(1, p.get("sessions", 8))
    waiters = p.get("waiters", 32)
    rounds = max(2, p.get("rounds", 3))
    clients = [b.connect(hosts) for _ in range(sessions)]
    state = {"inside": 0, "violations": 0, "failed": 0}
    mutex = threading.Lock()
    threading.stack_size(256 * 1024)
    window = 0.0
    for rnd in range(rounds):
        holder = b.lock(clients[0], path, "mutex")
        holder.acquire()
        last = [0.0]

        def waiter(lock, last):
            try:
                lock.acquire()
                with mutex:
                    state["inside"] += 1
                    if state["inside"] != 1:
                        state["violations"] += 1
                    state["inside"] -= 1
                lock.release()
                with mutex:
                    last[0] = time.perf_counter()
            except Exception:
                with mutex:
                    state["failed"] += 1

        locks = [b.lock(clients[i % sessions], path, "mutex") for i in range(waiters)]
        threads = [threading.Thread(target=waiter, args=(lock, last)) for lock in locks]
        for t in threads:
            t.start()
        until = time.monotonic() + 120
        while b.children(clients[0], path) < waiters + 1:
            if time.monotonic() > until:
                raise RuntimeError("the waiters did not all queue")
            time.sleep(0.005)
        start = time.perf_counter()
        holder.release()
        for t in threads:
            t.join()
        if state["failed"]:
            raise RuntimeError(f"{state['failed']} waiters failed")
        if rnd > 0:
            window += last[0] - start
    for c in clients:
        b.close(c)
    return {"grants": waiters * (rounds - 1), "window_s": window, "violations": state["violations"]}


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


_libc = ctypes.CDLL(None)
_libc.mallinfo2.restype = _Mallinfo2


def mem_snapshot(name):
    """One look at this process for `zklock-bench memory` (bench/src/memory.rs):
    VmRSS, VmHWM (bytes), Threads from /proc/self/status, and the bytes glibc's
    malloc has handed out (mallinfo2: the Rust core's allocations and Python's
    large objects; pymalloc's own arenas are mmapped apart and not in it)."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            fields[key] = value.split()
    m = _libc.mallinfo2()
    return {
        "snap": name,
        "rss": int(fields["VmRSS"][0]) * 1024,
        "hwm": int(fields["VmHWM"][0]) * 1024,
        "threads": int(fields["Threads"][0]),
        "heap": m.uordblks + m.hblkhd,
        "gc_heap": None,
    }


def memory_serve(start):
    """The driver's side of `zklock-bench memory`'s protocol (described in
    bench/src/memory.rs): says ready, then on `start` resets VmHWM, says the
    `before` snapshot and calls ``start()`` (which starts the acquires and
    returns); on `snap NAME` says a snapshot (`gc`: after gc.collect() and
    malloc_trim(0)); stops on `quit` or the end of stdin."""
    gc.collect()
    time.sleep(0.2)
    say({"event": "ready"})
    for line in sys.stdin:
        words = line.split()
        if words == ["start"]:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            say(mem_snapshot("before"))
            start()
            say({"event": "started"})
        elif len(words) == 2 and words[0] == "snap":
            if words[1] == "gc":
                gc.collect()
                _libc.malloc_trim(0)
            say(mem_snapshot(words[1]))
        elif words == ["quit"]:
            break
        else:
            raise RuntimeError(f"unknown command {line!r}")


def memory_path(path, shape, i):
    """The lock path of item i: the one lock, or the i-th of N."""
    return path if shape == "one" else f"{path}/{i}"


def memory(b, hosts, path, p, shape):
    """`zklock-bench memory` for a blocking backend (kazoo): one session; a
    holder (one) or N holders (many) taken first, then on `start` N acquires,
    each its own lock object: one thread each waiting (one, many), or taken
    one after another on one background thread (hold, which then says
    `granted`). Nothing is released; on `quit` the session is closed."""
    n = p.get("n", 1000)
    c = b.connect(hosts)
    if shape == "one":
        b.lock(c, path, "mutex").acquire()
    elif shape == "many":
        for i in range(n):
            b.lock(c, memory_path(path, shape, i), "mutex").acquire()
    locks = [b.lock(c, memory_path(path, shape, i), "mutex") for i in range(n)]
    # As the drain and herd scenarios: 256 KiB of address space per thread
    # (only the pages a thread touches are resident).
    threading.stack_size(256 * 1024)

    def hold_all():
        for lock in locks:
            lock.acquire()
        say({"event": "granted"})

    def start():
        if shape == "hold":
            threading.Thread(target=hold_all, daemon=True).start()
        else:
            for lock in locks:
                threading.Thread(target=lock.acquire, daemon=True).start()

    memory_serve(start)
    b.close(c)
    return {"n": n}


def main(backend, extra=None):
    """Runs the scenario named on the command line; ``extra`` maps more
    scenario names to ``fn(hosts, path, params)`` (a backend's own)."""
    scenario, hosts, path = sys.argv[1:4]
    p = {}
    for kv in sys.argv[4:]:
        k, _, v = kv.partition("=")
        p[k] = int(v) if v.isdigit() else v
    fn = {
        "uncontended": lambda: uncontended(backend, hosts, path, p),
        "contended": lambda: throughput(backend, hosts, path, p, False),
        "queue": lambda: throughput(backend, hosts, path, p, False),
        "independent": lambda: throughput(backend, hosts, path, p, True),
        "rw": lambda: rw(backend, hosts, path, p),
        "herd": lambda: herd(backend, hosts, path, p),
        "drain": lambda: drain(backend, hosts, path, p),
        **{f"memory-{s}": (lambda s=s: memory(backend, hosts, path, p, s)) for s in ("one", "many", "hold")},
        **{name: (lambda f=f: f(hosts, path, p)) for name, f in (extra or {}).items()},
    }[scenario]
    out = fn()
    say({"result": out})
    sys.stdout.flush()
    import os

    os._exit(0)

#!/usr/bin/env python3
"""The uncontended acquire+release cycle of several Node addon builds and of
the Rust core, run in turns against one private ZooKeeper (forceSync off),
each run under `perf stat -e context-switches`.

    compare.py OUT_DIR ROUNDS NAME=PACKAGE_DIR... [rust=DRIVER]

PACKAGE_DIR is a directory with index.js, native.js, package.json and the
release addon (as bench/build.sh's target/bench/node); `rust=PATH` names
the Rust driver (zklock-bench-driver). Each round runs every build once,
in an order rotated round by round; each run is the driver's uncontended
scenario with the parameters of `make bench` (3,000 warm-up and 2,000
measured cycles). Context switches are counted over the whole process and
divided by every cycle it ran (warm-up included). Writes OUT_DIR/runs.json
and prints a table of medians."""

import json
import os
import statistics
import subprocess
import sys
import tempfile

out, rounds = sys.argv[1], int(sys.argv[2])
builds = [a.split("=", 1) for a in sys.argv[3:]]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
zkharness = os.environ["ZKHARNESS"]
ITERS, WARMUP = 2000, 3000
os.makedirs(out, exist_ok=True)

harness = subprocess.Popen([zkharness, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
runs = []
try:
    hello = json.loads(harness.stdout.readline())
    hosts = f"127.0.0.1:{hello['servers'][0]['client_port']}"
    for r in range(rounds):
        order = builds[r % len(builds) :] + builds[: r % len(builds)]
        for name, where in order:
            if name == "rust":
                cmd, env = [where], dict(os.environ)
            else:
                cmd = ["node", os.path.join(root, "bench/drivers/bench.js")]
                env = dict(os.environ, ZKLOCK_NODE_PACKAGE=where)
            path = f"/napi3/{name}/{r}"
            with tempfile.NamedTemporaryFile("r", suffix=".perf") as perf:
                p = subprocess.run(
                    [
                        "perf",
                        "stat",
                        "-x,",
                        "-e",
                        "context-switches",
                        "-o",
                        perf.name,
                        *cmd,
                        "uncontended",
                        hosts,
                        path,
                        f"iters={ITERS}",
                        f"warmup={WARMUP}",
                    ],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                switches = None
                for line in perf.read().splitlines():
                    f = line.split(",")
                    if len(f) > 2 and f[2] == "context-switches":
                        switches = int(f[0])
            res = [json.loads(line)["result"] for line in p.stdout.splitlines() if '"result"' in line]
            if p.returncode != 0 or not res:
                sys.exit(f"{name} round {r} failed: {p.stderr[-800:]}")
            lat = res[0]["lat_us"]
            run = {
                "build": name,
                "round": r,
                "median_us": statistics.median(lat),
                "p99_us": sorted(lat)[int(0.99 * len(lat))],
                "cpu_us_per_cycle": res[0]["cpu_s"] * 1e6 / len(lat),
                "switches_per_cycle": switches / (ITERS + WARMUP) if switches is not None else None,
            }
            runs.append(run)
            print(
                f"round {r} {name:>10}: median {run['median_us']:6.1f} µs  cpu {run['cpu_us_per_cycle']:6.1f} µs"
                f"  switches {run['switches_per_cycle']:.2f}",
                file=sys.stderr,
                flush=True,
            )
finally:
    harness.stdin.close()
    harness.wait()
with open(os.path.join(out, "runs.json"), "w") as f:
    json.dump({"iters": ITERS, "warmup": WARMUP, "rounds": rounds, "builds": dict(builds), "runs": runs}, f, indent=1)


def med(name, k):
    return statistics.median(x[k] for x in runs if x["build"] == name)


rust = med("rust", "median_us") if any(n == "rust" for n, _ in builds) else None
print(
    f"| build ({rounds} alternating runs, medians) | cycle median µs | p99 µs | client CPU µs/cycle"
    " | context switches/cycle | / Rust |"
)
print("|---|---|---|---|---|---|")
for name, _ in builds:
    ratio = f"{med(name, 'median_us') / rust:.3f}" if rust else "–"
    print(
        f"| {name} | {med(name, 'median_us'):.0f} | {med(name, 'p99_us'):.0f} | {med(name, 'cpu_us_per_cycle'):.0f}"
        f" | {med(name, 'switches_per_cycle'):.2f} | {ratio} |"
    )

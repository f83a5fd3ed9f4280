#!/bin/sh
# Compares this checkout's engine with another commit's on this machine:
# the Rust bench driver built twice (once over each engine), run in turns
# against one private ZooKeeper, so that drift of a noisy machine hits both
# alike. Prints a table of medians and the change, and one of the server's
# CPU time per cycle or acquisition (read from /proc over the part each
# driver measures: the work the engine costs ZooKeeper).
#
#   bench/against-engine.sh COMMIT [ROUNDS] [SCENARIOS]
#
# ROUNDS (default 5) alternating runs per scenario; SCENARIOS a comma list of
# uncontended, contended-2, contended-32, queue-32 (default: all four).
# AGAINST_ENSEMBLE=3: on a 3-node ensemble instead of a standalone server,
# the drivers talking to its first member only; the server CPU is then the
# sum over the members.
# e.g. issue 13's check against the engine before it:
#   bench/against-engine.sh c227ec0 6
#
# The other engine is built in a throwaway worktree of HEAD with COMMIT's
# engine in place (the sources of zklock-zk, zklock-proto and zklock-core:
# the driver uses only the public API, which must still compile), its own
# target directory, removed at the end. Needs an idle machine for numbers that mean
# anything; `make bench` is the full benchmark.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 COMMIT [ROUNDS] [SCENARIOS]" >&2; exit 64; }
commit=$1
rounds=${2:-5}
scenarios=${3:-uncontended,contended-2,contended-32,queue-32}
repo=$(git rev-parse --show-toplevel)
git -C "$repo" rev-parse --verify --quiet "$commit^{commit}" >/dev/null || { echo "$0: no commit $commit" >&2; exit 64; }
tree=$(mktemp -d "${TMPDIR:-/tmp}/zklock-bench-against-XXXXXX")
cleanup() { git -C "$repo" worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"; }
trap cleanup EXIT INT TERM
git -C "$repo" worktree add --detach "$tree" HEAD >/dev/null
cp -R "$repo/bench/." "$tree/bench/"
for crate in zklock-zk zklock-proto zklock-core; do
  rm -rf "${tree:?}/$crate/src"
  git -C "$repo" archive "$commit" "$crate/src" | tar -x -C "$tree"
done
echo "against-engine: building the driver over this checkout's engine and over $commit's" >&2
(cd "$repo" && cargo build --release --locked -p zklock-bench -p zklock-harness --bin zklock-bench-driver --bin zkharness)
(cd "$tree" && CARGO_TARGET_DIR="$tree/target" cargo build --release -p zklock-bench --bin zklock-bench-driver)
python3 - "$repo/target/release" "$tree/target/release" "$commit" "$rounds" "$scenarios" "${AGAINST_ENSEMBLE:-1}" <<'EOF'
import json, os, statistics, subprocess, sys

now_dir, other_dir, commit, rounds, scenarios = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
members = int(sys.argv[6])
# scenario -> (driver scenario, parameters, what the number is, higher is better)
SCENARIOS = {
    "uncontended": ("uncontended", ["iters=3000", "warmup=300"], "median cycle, µs", False),
    "contended-2": ("contended", ["sessions=2", "duration_ms=2500", "warmup_ms=500"], "grants/s", True),
    "contended-32": ("contended", ["sessions=32", "duration_ms=2500", "warmup_ms=500"], "grants/s", True),
    "queue-32": ("queue", ["sessions=32", "waiters=32", "duration_ms=3500", "warmup_ms=1500"], "handoffs/s", True),
}
wanted = [s for s in scenarios.split(",") if s]
unknown = [s for s in wanted if s not in SCENARIOS]
if unknown:
    sys.exit(f"against-engine: unknown scenario(s) {unknown}; known: {list(SCENARIOS)}")
serve = [f"{now_dir}/zkharness", "serve"] + (["--ensemble", str(members)] if members > 1 else [])
harness = subprocess.Popen(serve, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
try:
    hello = json.loads(harness.stdout.readline())
    hosts = f"127.0.0.1:{hello['servers'][0]['client_port']}"
    pids = [s["pid"] for s in hello["servers"]]
    tick = os.sysconf("SC_CLK_TCK")

    def server_cpu_s():
        # utime + stime of each member's process (fields 14 and 15), summed.
        total = 0
        for pid in pids:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        return total / tick

    values, cpu = {}, {}
    for r in range(rounds):
        # Alternate which engine goes first, round by round.
        order = [("now", now_dir), (commit, other_dir)]
        for who, d in order if r % 2 == 0 else order[::-1]:
            for name in wanted:
                scenario, params, _, _ = SCENARIOS[name]
                path = f"/against/{name}/{r}/{who}"
                driver = subprocess.Popen(
                    [f"{d}/zklock-bench-driver", scenario, hosts, path, *params],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                results, marks = [], []
                for line in driver.stdout:
                    if '"event"' in line and json.loads(line).get("event") in ("measuring", "measured"):
                        marks.append(server_cpu_s())
                    elif '"result"' in line:
                        results.append(json.loads(line)["result"])
                err = driver.stderr.read()
                driver.wait()
                if not results or len(marks) != 2:
                    sys.exit(f"against-engine: {who} {name} failed: {err[-500:]}")
                res = results[0]
                if name == "uncontended":
                    v, n = statistics.median(res["lat_us"]), len(res["lat_us"])
                else:
                    v, n = res["grants"] / res["window_s"], res["grants"]
                c = (marks[1] - marks[0]) * 1e6 / n
                values.setdefault((name, who), []).append(v)
                cpu.setdefault((name, who), []).append(c)
                print(f"  round {r} {who:>8} {name:<13} {v:9.0f}  server {c:6.0f} µs", file=sys.stderr, flush=True)
finally:
    harness.stdin.close()
    harness.wait()
print(f"| scenario ({rounds} alternating runs, median) | {commit} | now | change |")
print("|---|---|---|---|")
for name in wanted:
    _, _, unit, higher = SCENARIOS[name]
    old, new = statistics.median(values[(name, commit)]), statistics.median(values[(name, "now")])
    change = 100 * (new - old) / old
    better = change >= 0 if higher else change <= 0
    print(f"| {name}: {unit} | {old:.0f} | {new:.0f} | {change:+.1f} % ({'better or equal' if better else 'worse'}) |")
print()
print(f"| server CPU per cycle or acquisition, µs ({rounds} alternating runs, median) | {commit} | now | change |")
print("|---|---|---|---|")
for name in wanted:
    old, new = statistics.median(cpu[(name, commit)]), statistics.median(cpu[(name, "now")])
    print(f"| {name} | {old:.0f} | {new:.0f} | {100 * (new - old) / old:+.1f} % |")
EOF

#!/usr/bin/env bash
# Builds everything `make bench` runs, release builds only, into target/:
#   target/release/zklock-bench, zklock-bench-driver   runner, Rust core + floor driver
#   target/bench/bench_c                               C driver against libzklock.so
#   target/bench/pylib/zklock                          Python package (abi3 wheel, unpacked)
#   target/bench/node/                                 Node package (index.js, native.js, addon)
#   target/bench/java/CuratorBench.class               Curator driver
# The test venvs and bindings/node are left as they are (the bench uses
# copies), so `make test` and the benchmarks do not disturb each other.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out=target/bench
mkdir -p "$out"
cargo="${CARGO:-cargo}"

echo "bench/build: cargo build --release (bench, C library, Node addon)"
"$cargo" build --release --locked -p zklock-bench -p zklock-ffi -p zklock-node

echo "bench/build: C driver"
# The library's SONAME is libzklock.so.0: give the driver its own copy.
mkdir -p "$out/lib"
cp target/release/libzklock.so "$out/lib/libzklock.so.0"
ln -sfn libzklock.so.0 "$out/lib/libzklock.so"
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -Iinclude bench/drivers/bench.c -o "$out/bench_c" \
  -L"$out/lib" -lzklock -lpthread -Wl,-rpath,"$root/$out/lib"

echo "bench/build: Python wheel (maturin, release)"
rm -rf "$out/wheels" "$out/pylib"
(cd bindings/python && ../../target/python-venv/bin/maturin build --release --quiet --out "../../$out/wheels")
target/python-venv/bin/python -m zipfile -e "$(ls "$out"/wheels/zklock_rs-*.whl | head -n 1)" "$out/pylib"

echo "bench/build: Node package (release addon)"
rm -rf "$out/node"
mkdir -p "$out/node"
cp bindings/node/index.js bindings/node/native.js bindings/node/package.json "$out/node/"
suffix="$(node -p "process.platform + '-' + process.arch + (process.platform === 'linux' ? (require('fs').existsSync('/etc/alpine-release') ? '-musl' : '-gnu') : '')")"
cp target/release/libzklock_node.so "$out/node/zklock.$suffix.node"

echo "bench/build: Curator driver (javac)"
cp=""
for j in curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api; do
  cp="$cp/usr/share/java/$j.jar:"
done
mkdir -p "$out/java"
javac -nowarn -d "$out/java" -cp "$cp" bench/drivers/CuratorBench.java
echo "bench/build: done"

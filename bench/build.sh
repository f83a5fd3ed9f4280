#!/usr/bin/env bash
# Builds what `make bench` runs, release builds only, into target/:
#   target/release/zklock-bench, zklock-bench-driver   runner, Rust core + floor driver   (part rust)
#   target/bench/bench_c                               C driver against libzklock.so      (part c)
#   target/bench/pylib/zklock                          Python package (abi3 wheel, unpacked) (part python)
#   target/bench/node/                                 Node package (index.js, native.js, addon) (part node)
#   target/bench/java/CuratorBench.class               Curator driver                     (part java)
# `bench/build.sh PART...` builds only those parts (`make bench-scale`:
# rust java); no argument builds them all. Cargo writes to
# $CARGO_TARGET_DIR if set (target/ otherwise).
# The test venvs and bindings/node are left as they are (the bench uses
# copies), so `make test` and the benchmarks do not disturb each other.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out=target/bench
mkdir -p "$out"
cargo="${CARGO:-cargo}"
release="${CARGO_TARGET_DIR:-target}/release"
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(rust c python node java)
want() {
  local p
  for p in "${parts[@]}"; do [ "$p" = "$1" ] && return 0; done
  return 1
}
for p in "${parts[@]}"; do
  case "$p" in
    rust | c | python | node | java) ;;
    *) echo "bench/build: unknown part $p (rust, c, python, node, java)" >&2; exit 64 ;;
  esac
done

# One cargo build for every crate the chosen parts need.
crates=()
want rust && crates+=(-p zklock-bench)
want c && crates+=(-p zklock-ffi)
want node && crates+=(-p zklock-node)
if [ ${#crates[@]} -gt 0 ]; then
  echo "bench/build: cargo build --release ${crates[*]}"
  "$cargo" build --release --locked "${crates[@]}"
fi

if want c; then
  echo "bench/build: C driver"
  # The library's SONAME is libzklock.so.0: give the driver its own copy.
  mkdir -p "$out/lib"
  cp "$release/libzklock.so" "$out/lib/libzklock.so.0"
  ln -sfn libzklock.so.0 "$out/lib/libzklock.so"
  ${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -Iinclude bench/drivers/bench.c -o "$out/bench_c" \
    -L"$out/lib" -lzklock -lpthread -Wl,-rpath,"$root/$out/lib"
fi

if want python; then
  echo "bench/build: Python wheel (maturin, release)"
  rm -rf "$out/wheels" "$out/pylib"
  (cd bindings/python && ../../target/python-venv/bin/maturin build --release --quiet --out "../../$out/wheels")
  target/python-venv/bin/python -m zipfile -e "$(ls "$out"/wheels/zklock_rs-*.whl | head -n 1)" "$out/pylib"
fi

if want node; then
  echo "bench/build: Node package (release addon)"
  rm -rf "$out/node"
  mkdir -p "$out/node"
  cp bindings/node/index.js bindings/node/native.js bindings/node/package.json "$out/node/"
  suffix="$(node -p "process.platform + '-' + process.arch + (process.platform === 'linux' ? (require('fs').existsSync('/etc/alpine-release') ? '-musl' : '-gnu') : '')")"
  cp "$release/libzklock_node.so" "$out/node/zklock.$suffix.node"
fi

if want java; then
  echo "bench/build: Curator driver (javac)"
  cp=""
  for j in curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api; do
    cp="$cp/usr/share/java/$j.jar:"
  done
  mkdir -p "$out/java"
  javac -nowarn -d "$out/java" -cp "$cp" bench/drivers/CuratorBench.java
fi
echo "bench/build: done"

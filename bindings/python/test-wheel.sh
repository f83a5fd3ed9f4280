#!/usr/bin/env bash
# test-wheel.sh: installs the manylinux2014 x86_64 wheel of target/wheels
# (`make python`) into a fresh venv, with no Rust toolchain on PATH and no
# package index, then imports zklock from it and takes a lock on a private
# ZooKeeper (zklock-ffi/tests/c/with-zk.sh).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
wheel="$(ls "$root"/target/wheels/zklock_rs-*-manylinux2014_x86_64*.whl | head -n 1)"
work="$(mktemp -d "${TMPDIR:-/tmp}/zklock-wheel.XXXXXX")"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
# No cargo or rustc here: the wheel must not need them.
clean_path="$(dirname "$(command -v python3)"):/usr/bin:/bin"
if PATH="$clean_path" command -v cargo >/dev/null; then
  clean_path="/usr/bin:/bin"
fi
PATH="$clean_path" "$work/venv/bin/pip" install -q --no-index --disable-pip-version-check "$wheel"
cat >"$work/check.py" <<'PY'
import importlib.metadata
import os
import sys

import zklock

assert zklock.__file__.startswith(sys.prefix), zklock.__file__
assert importlib.metadata.version("zklock-rs") == zklock.__version__
with zklock.Client(os.environ["ZKLOCK_TEST_CONNECT"]) as zk:
    with zk.lock("/wheel-test/job", timeout=10) as lock:
        print("python wheel: zklock %s from %s holds with token %d" % (zklock.__version__, zklock.__file__, lock.fencing_token))
PY
PATH="$clean_path" "$root/zklock-ffi/tests/c/with-zk.sh" "$work/venv/bin/python" "$work/check.py"
echo "python wheel: ok ($(basename "$wheel"))"

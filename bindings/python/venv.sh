#!/usr/bin/env bash
# Makes the Python test venv target/python-venv with the pinned tools of
# bindings/python/requirements-test.txt (maturin, pytest, mypy, kazoo,
# hypothesis, and the packages they need, pinned too).
# Safe to run again: it creates the venv only when it is missing and
# installs only when a pinned package is missing or has another version.
# It does not install zklock itself (`make test-python` does, from source).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$root/target/python-venv"
req="$root/bindings/python/requirements-test.txt"

if [ ! -x "$venv/bin/pip" ]; then
  rm -rf "$venv"
  echo "python-venv: creating $venv"
  if ! python3 -m venv "$venv"; then
    rm -rf "$venv"
    echo "python-venv: 'python3 -m venv' failed; run scripts/install-deps.sh (it installs python3-venv)" >&2
    exit 1
  fi
fi

pinned_ok() {
  "$venv/bin/python" - "$req" <<'PY'
import importlib.metadata as m
import sys

for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, version = line.split("==")
    try:
        if m.version(name) != version:
            sys.exit(1)
    except m.PackageNotFoundError:
        sys.exit(1)
PY
}

if ! pinned_ok; then
  echo "python-venv: installing $(grep -v '^#' "$req" | tr '\n' ' ')"
  "$venv/bin/pip" install -q -r "$req"
  pinned_ok || { echo "python-venv: pinned packages not importable from $venv" >&2; exit 1; }
fi

#!/usr/bin/env bash
# venv.sh VENV REQUIREMENTS: makes the Python venv VENV with exactly the
# pinned packages of REQUIREMENTS (every line `name==version`), e.g. the
# test venv target/python-venv (bindings/python/requirements-test.txt:
# maturin, pytest, mypy, kazoo, hypothesis), the packaging venv and the docs
# venv. Safe to run again: it creates the venv only when it is missing and
# installs only when a pinned package is missing or has another version.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: scripts/venv.sh VENV REQUIREMENTS" >&2
  exit 64
fi
venv="$1"
req="$2"
name="$(basename "$venv")"

if [ ! -x "$venv/bin/pip" ]; then
  rm -rf "$venv"
  echo "$name: creating $venv"
  if ! python3 -m venv "$venv"; then
    rm -rf "$venv"
    echo "$name: 'python3 -m venv' failed; run scripts/install-deps.sh (it installs python3-venv)" >&2
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
  echo "$name: installing $(grep -v '^#' "$req" | tr '\n' ' ')"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
  pinned_ok || { echo "$name: pinned packages not importable from $venv" >&2; exit 1; }
fi

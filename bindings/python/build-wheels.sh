#!/usr/bin/env bash
# build-wheels.sh: `make python`. Builds the sdist and the abi3 wheels
# (CPython >= 3.9) of the distribution zklock-rs into target/wheels:
#   manylinux2014 (glibc 2.17: RHEL 7+, Debian 9+, Ubuntu 18.04+) and
#   musllinux_1_2 (Alpine 3.13+), each for x86_64 and aarch64,
# cross-built with maturin's zig support (ziglang from PyPI, no Docker), then
# checks each wheel: auditwheel for the manylinux ones (its platform tag
# must be the one it claims, and it may link only the system libraries the
# tag allows); for the musllinux ones an equivalent check of its own
# (check_musl: auditwheel 6.8 fails on them on a glibc machine).
# The tools come pinned from bindings/python/requirements-package.txt into
# target/python-package-venv; the Rust targets are added with rustup.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$root/target/python-package-venv"
out="$root/target/wheels"
req="$root/bindings/python/requirements-package.txt"

"$root/scripts/venv.sh" "$venv" "$req"
export PATH="$venv/bin:$PATH"

targets=(
  "x86_64-unknown-linux-gnu manylinux2014 manylinux_2_17_x86_64"
  "aarch64-unknown-linux-gnu manylinux2014 manylinux_2_17_aarch64"
  "x86_64-unknown-linux-musl musllinux_1_2 musllinux_1_2_x86_64"
  "aarch64-unknown-linux-musl musllinux_1_2 musllinux_1_2_aarch64"
)
# shellcheck disable=SC2046
rustup target add $(for t in "${targets[@]}"; do echo "${t%% *}"; done) >/dev/null

# The extension needs only musl's libc.so (and libgcc_s.so.1, which
# musllinux allows) and no glibc symbol.
check_musl() {
  local dir so needed
  dir="$(mktemp -d)"
  python3 -m zipfile -e "$1" "$dir"
  so="$(find "$dir" -name '*.so')"
  needed="$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -vxE 'libc\.so|libgcc_s\.so\.1' || true)"
  if [ -n "$needed" ] || readelf --dyn-syms "$so" | grep -q 'GLIBC_'; then
    echo "python: $1 needs more than musl's libc: ${needed:-glibc symbols}" >&2
    rm -rf "$dir"
    exit 1
  fi
  rm -rf "$dir"
  echo "python: $(basename "$1"): needs only musl's libc.so (musllinux_1_2)"
}

rm -rf "$out"
mkdir -p "$out"
cd "$root/bindings/python"
maturin sdist --out "$out"
for t in "${targets[@]}"; do
  read -r triple compat tag <<<"$t"
  echo "python: wheel for $triple ($compat)"
  maturin build --release --zig --target "$triple" --compatibility "$compat" --out "$out" --quiet
  wheel="$(ls -t "$out"/zklock_rs-*.whl | head -n 1)"
  case "$compat" in
    manylinux*)
      shown="$(auditwheel show "$wheel")"
      if ! grep -q "\"$tag\"" <<<"$shown"; then
        echo "python: $wheel is not a $tag wheel:" >&2
        echo "$shown" >&2
        exit 1
      fi
      echo "python: $(basename "$wheel"): auditwheel: consistent with $tag"
      ;;
    musllinux*) check_musl "$wheel" ;;
  esac
done
ls -l "$out"

#!/usr/bin/env bash
# build-packages.sh: `make node-package`. Builds the npm packages of the Node
# binding the napi-rs way into target/node-packages:
#   zklock-<version>.tgz                 the main package: JavaScript, types,
#       README, LICENSE, no binary; it names one package per platform in
#       optionalDependencies, and native.js loads the one npm installed;
#   zklock-linux-x64-gnu-<version>.tgz   the addon for glibc >= 2.17,
#   zklock-linux-x64-musl-<version>.tgz  for musl (Alpine),
#   zklock-linux-arm64-gnu-<version>.tgz for 64-bit ARM with glibc >= 2.17;
# each addon release-built and stripped, cross-built with zig (ziglang from
# PyPI, pinned in bindings/python/requirements-package.txt) and checked: its
# ELF machine, that it needs nothing but the C library (and libgcc_s),
# and, for glibc, no symbol newer than glibc 2.17.
# Not built yet (their loaders are in native.js): macOS, Windows,
# linux-arm64-musl, 32-bit ARM; users there build from source (`make node`).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
pkg="$root/bindings/node"
out="$root/target/node-packages"
venv="$root/target/python-package-venv"
cd "$pkg"

"$root/scripts/venv.sh" "$venv" "$root/bindings/python/requirements-package.txt"
zigdir="$("$venv/bin/python" -c 'import os, ziglang; print(os.path.dirname(ziglang.__file__))')"
export PATH="$zigdir:$PATH"

version="$(node -p "require('./package.json').version")"
# target triple, napi platform, npm cpu, npm libc, ELF machine (readelf -h)
platforms=(
  "x86_64-unknown-linux-gnu linux-x64-gnu x64 glibc X86-64"
  "x86_64-unknown-linux-musl linux-x64-musl x64 musl X86-64"
  "aarch64-unknown-linux-gnu linux-arm64-gnu arm64 glibc AArch64"
)
# shellcheck disable=SC2046
rustup target add $(for p in "${platforms[@]}"; do echo "${p%% *}"; done) >/dev/null

rm -rf "$out"
mkdir -p "$out/build"
optional=()
for p in "${platforms[@]}"; do
  read -r triple platform cpu libc machine <<<"$p"
  echo "node-package: building zklock.$platform.node ($triple)"
  abi=()
  if [ "$libc" = glibc ]; then abi=(--zig-abi-suffix 2.17); fi
  # A musl addon must link the C library dynamically (Node's own).
  rustflags=""
  if [ "$libc" = musl ]; then rustflags="-C target-feature=-crt-static"; fi
  RUSTFLAGS="$rustflags" CARGO_PROFILE_RELEASE_DEBUG=0 \
    node_modules/.bin/napi build --platform --release --strip --target "$triple" --zig "${abi[@]}" \
    --js false --dts generated.d.ts ../../target/node-packages/build >/dev/null
  # (napi joins the destination, relative to this directory, and --dts;
  # the declarations are committed as index.d.ts: this copy is not used.)
  rm -f "$out/build/generated.d.ts"
  addon="$out/build/zklock.$platform.node"
  header="$(readelf -h "$addon")"
  grep -q "Machine:.*$machine" <<<"$header" || { echo "node-package: $addon is not $machine" >&2; exit 1; }
  needed="$(readelf -d "$addon" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')"
  for lib in $needed; do
    case "$lib" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libgcc_s.so.1|ld-linux-*.so*|libc.musl-*.so*) ;;
      *) echo "node-package: $addon needs $lib" >&2; exit 1 ;;
    esac
  done
  if [ "$libc" = glibc ]; then
    newest="$(objdump -T "$addon" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)"
    if [ "$(printf '%s\n' "$newest" GLIBC_2.17 | sort -V | tail -n 1)" != GLIBC_2.17 ]; then
      echo "node-package: $addon needs $newest (more than glibc 2.17)" >&2
      exit 1
    fi
  fi
  dir="$out/zklock-$platform"
  mkdir -p "$dir"
  cp "$addon" "$dir/"
  cp "$root/LICENSE" "$dir/"
  node packaging/platform-package.js "$platform" "$cpu" "$libc" "$version" "$dir"
  (cd "$dir" && npm pack --silent --pack-destination "$out" >/dev/null)
  optional+=("zklock-$platform")
  echo "node-package: zklock-$platform-$version.tgz ($(du -h "$addon" | cut -f1) addon; needs $needed)"
done

main="$out/zklock"
mkdir -p "$main"
cp index.js index.d.ts native.js metrics.js metrics.d.ts README.md "$main/"
cp "$root/LICENSE" "$main/"
node packaging/main-package.js "$version" "$main" "${optional[@]}"
(cd "$main" && npm pack --silent --pack-destination "$out" >/dev/null)
echo "node-package: zklock-$version.tgz: $(tar -tzf "$out/zklock-$version.tgz" | sed 's#^package/##' | tr '\n' ' ')"

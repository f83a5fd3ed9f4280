#!/usr/bin/env bash
# Installs what zklock's build, demo and tests need on a Debian machine;
# `install-deps.sh demo` only what `make demo` needs (ZooKeeper with Java, a
# C compiler, python3-venv with maturin, Node with the package's build
# tools); `install-deps.sh bench-scale` only what `make bench-scale` needs
# (the apt packages below and kazoo's venv). Safe to run again: it installs
# only what is missing.
# - apt: ZooKeeper 3.8 (package `zookeeper`, which brings Java), a C
#   compiler, Apache Curator 5.x and a JDK (interop tests compile a Curator
#   peer), python3 with venv, valgrind, pkg-config and g++ (C tests);
# - PyPI: kazoo 2.11.0 in the project-local venv target/interop-venv;
# - crates.io: cbindgen (pinned) for include/zklock.h;
# - Maven Central: the server jars of ZooKeeper 3.5.10, 3.6.4, 3.7.2 and
#   3.9.5 in target/zk (scripts/install-zk-jars.sh);
# - checks for the Rust toolchain.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
demo_only=false
scale_only=false
case "${1:-}" in
  "") ;;
  demo) demo_only=true ;;
  bench-scale) scale_only=true ;;
  *) echo "usage: scripts/install-deps.sh [demo|bench-scale]" >&2; exit 64 ;;
esac
venv="$root/target/interop-venv"
kazoo_version=2.11.0

apt_install() {
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "install-deps: installing $* with apt-get"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@"
}

need_apt=()
[ -f /usr/share/java/zookeeper.jar ] || need_apt+=(zookeeper)
command -v java >/dev/null 2>&1 || need_apt+=(default-jre-headless)
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
# Debian's python3 makes venvs only with python3-venv (ensurepip).
python3 -c 'import ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
if ! $demo_only; then
  [ -f /usr/share/java/curator-recipes.jar ] || need_apt+=(libcurator-recipes-java)
  command -v javac >/dev/null 2>&1 || need_apt+=(default-jdk-headless)
  # The C tests run under valgrind; test-install uses pkg-config; the header
  # is checked to compile as C++.
  command -v valgrind >/dev/null 2>&1 || need_apt+=(valgrind)
  command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
  command -v c++ >/dev/null 2>&1 || need_apt+=(g++)
  # make lint checks the C style with it.
  command -v clang-format >/dev/null 2>&1 || need_apt+=(clang-format)
fi
[ ${#need_apt[@]} -eq 0 ] || apt_install "${need_apt[@]}"

if ! command -v cargo >/dev/null 2>&1; then
  echo "install-deps: cargo not found; install Rust >= 1.89 (https://rustup.rs) and run again" >&2
  exit 1
fi

if ! $demo_only; then
  kazoo_ok() {
    "$venv/bin/python" -c "import importlib.metadata as m, kazoo; assert m.version('kazoo') == '$kazoo_version'" >/dev/null 2>&1
  }
  if ! kazoo_ok; then
    echo "install-deps: creating $venv with kazoo==$kazoo_version"
    if [ ! -x "$venv/bin/pip" ]; then
      rm -rf "$venv"
      if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        # Debian's python3 makes venvs only with python3-venv (ensurepip).
        rm -rf "$venv"
        apt_install python3-venv
        python3 -m venv "$venv"
      fi
    fi
    "$venv/bin/pip" install -q "kazoo==$kazoo_version"
    kazoo_ok || { echo "install-deps: kazoo $kazoo_version not importable from $venv" >&2; exit 1; }
  fi

  version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo '(not from apt)'; }
  echo "install-deps: zookeeper $(version zookeeper); curator $(version libcurator-recipes-java); $(java -version 2>&1 | head -1); $(javac -version 2>&1); kazoo $kazoo_version; $(cargo --version)"
  # `make bench-scale` runs the Rust core, Curator and kazoo only.
  if $scale_only; then exit 0; fi

  # C ABI (zklock-ffi, `make header`, `make check-header`, `make test-c`):
  # cbindgen generates include/zklock.h. Pinned, so that the committed header
  # and the check agree.
  cbindgen_version=0.29.4
  if [ "$(cbindgen --version 2>/dev/null)" != "cbindgen $cbindgen_version" ]; then
    echo "install-deps: installing cbindgen $cbindgen_version with cargo"
    cargo install cbindgen --version "$cbindgen_version" --locked
  fi
  echo "install-deps: $(cbindgen --version); $(valgrind --version); pkg-config $(pkg-config --version)"

  # The conformance tests' other ZooKeeper releases (3.5.10, 3.6.4, 3.7.2,
  # 3.9.5) from Maven Central into target/zk (ZKLOCK_ZK_JARS_OPTIONAL=1:
  # go on without one that cannot be fetched; its tests are then skipped).
  "$root/scripts/install-zk-jars.sh"
fi

# Python package (bindings/python, `make test-python`): the test venv
# target/python-venv with pinned maturin, pytest, mypy and kazoo
# (bindings/python/requirements-test.txt; for the demo maturin alone,
# requirements-build.txt); installs only what is missing.
requirements="$root/bindings/python/requirements-test.txt"
if $demo_only; then requirements="$root/bindings/python/requirements-build.txt"; fi
"$root/scripts/venv.sh" "$root/target/python-venv" "$requirements"
echo "install-deps: python venv $root/target/python-venv: $("$root/target/python-venv/bin/python" --version)"

# Node package (bindings/node, `make test-node`): Node >= 18 (Debian's
# `nodejs` and `npm` if missing) and the pinned dev dependencies from
# bindings/node/package-lock.json (npm ci, only when node_modules is stale).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt_install nodejs npm
fi
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" -lt 18 ]; then
  echo "install-deps: Node $(node --version) is too old; the Node package needs Node >= 18" >&2
  exit 1
fi
if ! cmp -s "$root/bindings/node/package-lock.json" "$root/bindings/node/node_modules/.zklock-lock-stamp" 2>/dev/null; then
  echo "install-deps: npm ci in bindings/node"
  (cd "$root/bindings/node" && npm ci --no-audit --no-fund && cp package-lock.json node_modules/.zklock-lock-stamp)
fi
echo "install-deps: node $(node --version), npm $(npm --version 2>/dev/null)"

# The docs' js blocks (`make test-docs`) run on every Node major the package
# claims: besides the system node, 18 and 22, the official linux-x64 builds
# as the npm registry ships them (scripts/node-versions, pinned with their
# integrity in its package-lock.json), into target/node-versions.
if ! $demo_only; then
  node_versions="$root/target/node-versions"
  if [ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ]; then
    if ! cmp -s "$root/scripts/node-versions/package-lock.json" "$node_versions/node_modules/.zklock-lock-stamp" 2>/dev/null; then
      echo "install-deps: Node 18 and 22 into $node_versions (npm ci)"
      mkdir -p "$node_versions"
      cp "$root/scripts/node-versions/package.json" "$root/scripts/node-versions/package-lock.json" "$node_versions/"
      (cd "$node_versions" && npm ci --no-audit --no-fund && cp package-lock.json node_modules/.zklock-lock-stamp)
    fi
    echo "install-deps: for the docs' js blocks also node $("$node_versions/node_modules/node18/bin/node" --version) and $("$node_versions/node_modules/node22/bin/node" --version)"
  else
    echo "install-deps: Node 18 and 22 for the docs' js blocks come only for linux x86_64; here they run on the system node alone"
  fi
fi

# zklock entry points. `make demo` runs the main job, `make test` runs every
# test; both install what they need first (scripts/install-deps.sh).

SHELL := /bin/bash
CARGO ?= cargo
# Tests start real ZooKeeper servers; two test threads suit a 2-core machine.
TEST_THREADS ?= 2

.PHONY: all build deps demo test test-rust test-demo lint clean

all: build

## build: compile the workspace (release)
build:
	$(CARGO) build --release --workspace --locked

## deps: install ZooKeeper (Debian package) and check the toolchain
deps:
	./scripts/install-deps.sh

## demo: a private ZooKeeper; a C, a Python and a Node program contend for one
## lock and one read/write lock; prints the timeline and checks it
demo: deps demo-workers
	$(CARGO) run --locked -p zklock-core --example demo

## test: every test suite (Rust, C under valgrind, install), against real
## ZooKeeper servers, and the demo
test: deps lint test-rust test-c test-install test-python test-node test-demo
	@scripts/test-summary.sh target/test-rust.log target/test-c.log target/test-python.log target/test-node.log

# The fault tests need the engine's stall points (zklock-core/src/fault.rs).
test-rust:
	@mkdir -p target
	set -o pipefail; $(CARGO) test --workspace --locked --features zklock-core/fault-points -- --test-threads=$(TEST_THREADS) 2>&1 | tee target/test-rust.log

# The demo must keep working: run it (the same builds as the C, Python and
# Node tests; make builds each prerequisite once per run).
test-demo: demo-workers
	$(CARGO) run --locked -p zklock-core --example demo

# ---- Demo workers: libzklock + the C worker, zklock in the venv, the Node addon
DEMO_DIR := target/demo

.PHONY: demo-workers
## demo-workers: build what `make demo` runs (target/demo/demo_worker links
## libzklock.so.0 from target/demo/lib, found through its rpath)
demo-workers: ffi python-install node
	@mkdir -p $(DEMO_DIR)/lib
	ln -sfn ../../debug/libzklock.so $(DEMO_DIR)/lib/libzklock.so.0
	ln -sfn libzklock.so.0 $(DEMO_DIR)/lib/libzklock.so
	$(CC) -std=c11 -Wall -Wextra -Werror -Iinclude zklock-ffi/examples/demo_worker.c \
	  -o $(DEMO_DIR)/demo_worker -L$(DEMO_DIR)/lib -lzklock -Wl,-rpath,'$$ORIGIN/lib'

## lint: formatting (rustfmt.toml, ruff.toml, biome.json), clippy, ruff, Biome (JS/TS) and the API docs,
## warnings are errors
lint: python-venv node-deps
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --locked --quiet
	$(PYVENV)/bin/ruff format --check --quiet .
	$(PYVENV)/bin/ruff check --quiet .
	bindings/node/node_modules/.bin/biome check .

clean:
	$(CARGO) clean
	rm -rf .zkharness

.PHONY: cli
## cli: the zklock command-line tool (release): target/release/zklock
cli:
	$(CARGO) build --release --locked -p zklock-core --bin zklock

.PHONY: soak
# The long fault soak (issue 7). The test command runs short soaks
# (tests/soak/tests/short.rs); this is
# the long one. Override e.g.
# `make soak SOAK_ARGS="--duration 30m --seed 42"`.
# Five server fault kinds share one chaos thread (each takes seconds to
# undo, a partition up to 13 s): about 31-33 of each fit in 10 minutes, so
# the floor is 25.
SOAK_ARGS ?= --duration 10m --min-faults 25 --min-handoffs 1000
## soak: chaos over a 3-node ensemble (kills, freezes, blackholes, pauses,
## lost replies, third-party deletes) while contenders take an exclusive and a
## read/write lock; prints the summary and writes target/soak.json; fails on
## any violated property
soak: deps
	@mkdir -p target
	$(CARGO) run --release --locked -p zklock-soak -- $(SOAK_ARGS) --json target/soak.json

.PHONY: test-interop
## test-interop: only the interoperability tests (real Curator and kazoo peers)
test-interop: deps
	$(CARGO) test --locked -p zklock-core --test interop -- --test-threads=$(TEST_THREADS)

.PHONY: bench
## bench: zklock (Rust, C, Python, Node) vs Curator, kazoo and a raw-client floor on a
## private ZooKeeper (forceSync off and on); results in bench/results/<date>.
## BENCH_QUICK=1: a ~3-minute smoke run into bench/results/quick-<date>; BENCH_ARGS: more flags
bench: deps
	bench/build.sh
	target/release/zklock-bench $(if $(filter 1,$(BENCH_QUICK)),--quick) $(BENCH_ARGS)

# ---- C ABI (zklock-ffi): libzklock, include/zklock.h, install ---------------
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
CBINDGEN ?= cbindgen
# The library version is the workspace version; the ABI major version (the
# SONAME libzklock.so.0) is set in zklock-ffi/build.rs and must match.
ZKLOCK_VERSION := $(shell sed -n 's/^version = "\([^"]*\)".*/\1/p' Cargo.toml | head -n 1)
ZKLOCK_SOVERSION := 0
# In zklock.pc, paths under the prefix are written relative to ${prefix}, so
# that `pkg-config --define-prefix` can relocate them.
pc_rel = $(patsubst $(PREFIX)%,$${prefix}%,$(1))

.PHONY: ffi header check-header test-c install uninstall test-install

## ffi: build libzklock.so / libzklock.a (debug) and the test harness
ffi:
	$(CARGO) build --locked -p zklock-ffi -p zklock-harness

## header: regenerate include/zklock.h from zklock-ffi with cbindgen
header:
	cd zklock-ffi && $(CBINDGEN) --quiet --config cbindgen.toml --output ../include/zklock.h

## check-header: fail if regenerating include/zklock.h gives a diff
check-header:
	@mkdir -p target
	cd zklock-ffi && $(CBINDGEN) --quiet --config cbindgen.toml --output ../target/zklock.h.check
	@diff -u include/zklock.h target/zklock.h.check \
	  || { echo "include/zklock.h is out of date: run 'make header' and commit it" >&2; exit 1; }
	@echo "check-header: include/zklock.h is up to date"

## test-c: the C tests under valgrind, the header checks and the example
test-c: check-header ffi
	@mkdir -p target
	set -o pipefail; zklock-ffi/tests/c/run.sh 2>&1 | tee target/test-c.log

## install: header, libzklock.so.$(ZKLOCK_VERSION) (+ symlinks), libzklock.a, zklock.pc, bin/zklock
install:
	$(CARGO) build --release --locked -p zklock-ffi
	$(CARGO) build --release --locked -p zklock-core --bin zklock
	install -d "$(DESTDIR)$(INCLUDEDIR)" "$(DESTDIR)$(LIBDIR)" "$(DESTDIR)$(PKGCONFIGDIR)" "$(DESTDIR)$(BINDIR)"
	install -m 755 target/release/zklock "$(DESTDIR)$(BINDIR)/zklock"
	install -m 644 include/zklock.h "$(DESTDIR)$(INCLUDEDIR)/zklock.h"
	install -m 755 target/release/libzklock.so "$(DESTDIR)$(LIBDIR)/libzklock.so.$(ZKLOCK_VERSION)"
	ln -sfn "libzklock.so.$(ZKLOCK_VERSION)" "$(DESTDIR)$(LIBDIR)/libzklock.so.$(ZKLOCK_SOVERSION)"
	ln -sfn "libzklock.so.$(ZKLOCK_SOVERSION)" "$(DESTDIR)$(LIBDIR)/libzklock.so"
	install -m 644 target/release/libzklock.a "$(DESTDIR)$(LIBDIR)/libzklock.a"
	sed -e 's|@PREFIX@|$(PREFIX)|' \
	    -e 's|@LIBDIR@|$(call pc_rel,$(LIBDIR))|' \
	    -e 's|@INCLUDEDIR@|$(call pc_rel,$(INCLUDEDIR))|' \
	    -e 's|@VERSION@|$(ZKLOCK_VERSION)|' \
	    zklock-ffi/zklock.pc.in > "$(DESTDIR)$(PKGCONFIGDIR)/zklock.pc"
	chmod 644 "$(DESTDIR)$(PKGCONFIGDIR)/zklock.pc"

uninstall:
	rm -f "$(DESTDIR)$(INCLUDEDIR)/zklock.h" "$(DESTDIR)$(PKGCONFIGDIR)/zklock.pc" \
	  "$(DESTDIR)$(LIBDIR)/libzklock.so.$(ZKLOCK_VERSION)" "$(DESTDIR)$(LIBDIR)/libzklock.so.$(ZKLOCK_SOVERSION)" \
	  "$(DESTDIR)$(LIBDIR)/libzklock.so" "$(DESTDIR)$(LIBDIR)/libzklock.a" "$(DESTDIR)$(BINDIR)/zklock"

## test-install: install into a temporary DESTDIR, build the example with only
## <zklock.h> and pkg-config, and run it against a private ZooKeeper
test-install: ffi
	@set -euo pipefail; \
	dest="$$(mktemp -d "$${TMPDIR:-/tmp}/zklock-install.XXXXXX")"; \
	trap 'rm -rf "$$dest"' EXIT; \
	$(MAKE) --no-print-directory install DESTDIR="$$dest" PREFIX=/usr/local; \
	export PKG_CONFIG_PATH="$$dest/usr/local/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$$dest"; \
	flags="$$(pkg-config --cflags --libs zklock)"; \
	echo "test-install: pkg-config --cflags --libs zklock: $$flags"; \
	ls -l "$$dest/usr/local/lib" "$$dest/usr/local/include"; \
	$(CC) -std=c11 -Wall -Wextra -Werror zklock-ffi/examples/example.c -o "$$dest/example" $$flags; \
	readelf -d "$$dest/example" | grep -q 'NEEDED.*\[libzklock\.so\.$(ZKLOCK_SOVERSION)\]'; \
	LD_LIBRARY_PATH="$$dest/usr/local/lib" ldd "$$dest/example" | grep libzklock; \
	LD_LIBRARY_PATH="$$dest/usr/local/lib" zklock-ffi/tests/c/with-zk.sh "$$dest/example"; \
	"$$dest/usr/local/bin/zklock" --version; \
	echo "test-install: ok"

# ---- Python package (bindings/python): zklock, PyO3 + maturin --------------
PYVENV := target/python-venv

.PHONY: python python-venv python-install test-python

## python-venv: the test venv target/python-venv (pinned maturin, pytest, mypy,
## kazoo, hypothesis and what they need: bindings/python/requirements-test.txt)
python-venv:
	bindings/python/venv.sh

## python-install: install zklock from source into the venv (built by the
## venv's pinned maturin: no isolated build env to download)
python-install: python-venv
	PATH="$(CURDIR)/$(PYVENV)/bin:$$PATH" $(PYVENV)/bin/pip install -q --no-build-isolation --force-reinstall --no-deps ./bindings/python

## python: build the sdist and the abi3 wheel (CPython >= 3.9) into target/wheels
python: python-venv
	cd bindings/python && ../../$(PYVENV)/bin/maturin build --release --sdist --out ../../target/wheels

## test-python: install zklock from source into the venv, run stubtest and pytest
test-python: deps python-install
	$(CARGO) build --locked -p zklock-harness
	$(PYVENV)/bin/python -m mypy.stubtest zklock._zklock
	cd target && python-venv/bin/python -m mypy --strict -p zklock
	$(PYVENV)/bin/python -m mypy --strict bindings/python/examples
	set -o pipefail; $(PYVENV)/bin/python -m pytest bindings/python/tests 2>&1 | tee target/test-python.log

# ---- Node package (bindings/node): zklock, napi-rs ---------------------------
.PHONY: node-deps node node-pack test-node

## node-deps: the pinned npm dev dependencies (@napi-rs/cli, typescript) from package-lock.json
node-deps:
	cd bindings/node && { cmp -s package-lock.json node_modules/.zklock-lock-stamp 2>/dev/null \
	  || { npm ci --no-audit --no-fund && cp package-lock.json node_modules/.zklock-lock-stamp; }; }

## node: build the addon (debug) next to index.js: bindings/node/zklock.<platform>.node
node: node-deps
	cd bindings/node && npm run --silent build

## node-pack: release build and `npm pack` into target/ (the tarball holds this platform's addon)
node-pack: node-deps
	cd bindings/node && npm run --silent build:release && npm pack --pack-destination ../../target

## test-node: build the addon, type-check test/typed-usage.ts with tsc, run `node --test`
test-node: deps node
	@git diff --exit-code -- bindings/node/index.d.ts bindings/node/native.js \
	  || { echo "bindings/node/index.d.ts or native.js differ from the build: commit the regenerated files" >&2; exit 1; }
	$(CARGO) build --locked -p zklock-harness
	cd bindings/node && npx --no-install tsc --noEmit -p test/tsconfig.json
	@mkdir -p target
	set -o pipefail; cd bindings/node && node --test test/*.test.js 2>&1 | tee ../../target/test-node.log

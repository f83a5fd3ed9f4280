# zklock entry points. `make demo` runs the main job, `make test` runs every
# test; both install what they need first (scripts/install-deps.sh).

SHELL := /bin/bash
CARGO ?= cargo
# Tests start real ZooKeeper servers; two test threads suit a 2-core machine.
TEST_THREADS ?= 2

.PHONY: all build deps deps-demo demo test test-rust test-demo lint clean

all: build

## build: compile the workspace (release)
build:
	$(CARGO) build --release --workspace --locked

## deps: install what the tests need (scripts/install-deps.sh) and check the toolchain
deps:
	./scripts/install-deps.sh

## deps-demo: only what `make demo` needs (no Curator, JDK, valgrind, kazoo,
## cbindgen, test tools)
deps-demo:
	./scripts/install-deps.sh demo

## demo: a private ZooKeeper; a C, a Python and a Node program contend for one
## lock and one read/write lock; prints the timeline and checks it
demo: deps-demo demo-workers
	$(CARGO) run --locked -p zklock-core --example demo

# The demo's Python package is built in the dev profile, like everything else
# the demo builds (one build of zklock-core's dependencies, not two), into a
# venv with maturin only; `make test` builds it in release with its tools.
demo: PY_REQUIREMENTS = bindings/python/requirements-build.txt
demo: export MATURIN_PEP517_ARGS = --profile dev

## test: every test suite (Rust, C under valgrind, install), against real
## ZooKeeper servers, and the demo
test: deps lint publish-check docs test-rust test-c test-install test-python test-python-wheel test-node test-node-package test-docs test-demo
	@scripts/test-summary.sh target/test-rust.log target/test-c.log target/test-python.log target/test-node.log target/test-docs.log

## docs: the docs site in target/docs/html (Sphinx pages of docs/, rustdoc,
## the C header, the Python API, TypeDoc), every internal link checked
.PHONY: docs
docs: python-install node-deps
	scripts/docs.sh

## publish-check: `cargo publish --dry-run` of the crates meant for crates.io
## (zklock-proto, zklock-zk, zklock-core, zklock-cli): packaged and built from the package as
## a user would get them (--allow-dirty: a working tree with local changes too).
## Cargo unpacks a workspace crate a dependent is verified against into
## $CARGO_HOME/registry/src/-<hash>/ and reuses what an earlier run left there
## under the same version, and its build too (a registry crate of one version
## counts as unchanged): those copies of our crates and their builds go first
## (the verify builds go to target/publish-check, so the rest stays built).
.PHONY: publish-check
publish-check:
	rm -rf "$${CARGO_HOME:-$$HOME/.cargo}"/registry/src/-*/zklock-*
	rm -rf target/publish-check/debug/.fingerprint/zklock-* target/publish-check/debug/deps/*zklock*
	$(CARGO) publish --dry-run --workspace --locked --allow-dirty --target-dir target/publish-check

# The fault tests need the engine's stall points (zklock-core/src/fault.rs);
# tests/metrics_facade.rs the feature it tests.
test-rust:
	@mkdir -p target
	set -o pipefail; $(CARGO) test --workspace --locked --features zklock-core/fault-points,zklock-core/metrics,zklock-proto/history -- --test-threads=$(TEST_THREADS) 2>&1 | tee target/test-rust.log

# The demo must keep working: run it (the same builds as the C, Python and
# Node tests; make builds each prerequisite once per run).
test-demo: demo-workers
	$(CARGO) run --locked -p zklock-core --example demo

# ---- The docs' code blocks --------------------------------------------------
.PHONY: test-docs doctest-wheel

## test-docs: every code block of README.md and docs/**/*.md run against a real
## ZooKeeper (tests/docs/doctest.py): rust (built against zklock-core), c (with
## libzklock), python (on the oldest and the newest Python the package claims),
## js (on Node 18, 20 and 22), sh (the zklock command on PATH), toml, sql.
## A block says its language; `<!-- doctest: skip-run: REASON -->` or
## `<!-- doctest: fails: TEXT -->` on the line before a fence changes what is
## asked of it. tests/docs/test_doctest.py tests the runner itself. One block:
## `target/python-venv/bin/python tests/docs/doctest.py --only README.md:149`
test-docs: deps ffi node doctest-wheel
	$(CARGO) build --locked -p zklock-cli -p zklock-harness
	@mkdir -p target
	set -o pipefail; { $(PYVENV)/bin/python -m pytest tests/docs && $(PYVENV)/bin/python tests/docs/doctest.py; } 2>&1 | tee target/test-docs.log

# The Python blocks' package: one abi3 wheel (dev profile, like the demo's
# build; installed into a venv of each Python version the blocks run on).
doctest-wheel: python-venv
	rm -rf target/doctest/wheels
	PATH="$(CURDIR)/$(PYVENV)/bin:$$PATH" $(PYVENV)/bin/maturin build --quiet --profile dev --locked \
	  -m bindings/python/Cargo.toml -o target/doctest/wheels

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

# The C sources in the one C style (.clang-format); include/zklock.h is
# generated by cbindgen.
C_SOURCES := $(filter-out include/%,$(shell git ls-files '*.c' '*.h'))

## lint: formatting (rustfmt.toml, ruff.toml, biome.json, .clang-format), clippy, ruff, Biome (JS/TS) and the API docs,
## warnings are errors
lint: python-venv node-deps
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	$(CARGO) clippy -p zklock-core --all-targets --locked --features metrics -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --locked --quiet
	$(PYVENV)/bin/ruff format --check --quiet .
	$(PYVENV)/bin/ruff check --quiet .
	bindings/node/node_modules/.bin/biome check .
	clang-format --dry-run --Werror $(C_SOURCES)

clean:
	$(CARGO) clean
	rm -rf .zkharness

# Where cargo writes its builds: $CARGO_TARGET_DIR if set, as cargo does.
CARGO_OUT ?= $(or $(CARGO_TARGET_DIR),target)
CLI_DIR := target/cli

.PHONY: cli
## cli: the zklock command-line tool (release): target/release/zklock, its man
## pages target/cli/zklock.1 (and zklock-run.1, ...) and completion scripts
## target/cli/completions/{zklock.bash,_zklock,zklock.fish}, generated by the binary
cli:
	$(CARGO) build --release --locked -p zklock-cli --bin zklock
	rm -rf $(CLI_DIR)
	@mkdir -p $(CLI_DIR)/completions
	$(CARGO_OUT)/release/zklock man --dir $(CLI_DIR)
	$(CARGO_OUT)/release/zklock completions bash > $(CLI_DIR)/completions/zklock.bash
	$(CARGO_OUT)/release/zklock completions zsh > $(CLI_DIR)/completions/_zklock
	$(CARGO_OUT)/release/zklock completions fish > $(CLI_DIR)/completions/zklock.fish

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
	$(CARGO_OUT)/release/zklock-bench $(if $(filter 1,$(BENCH_QUICK)),--quick) $(BENCH_ARGS)

.PHONY: bench-scale
## bench-scale: the ZooKeeper ensemble's CPU time per lock operation (3 nodes on loopback; clients
## on a follower, then on the leader): zklock (Rust core), Curator, kazoo and the raw-client floor,
## uncontended and 2-/8-way contended, 2 repetitions; results in bench/results/scale-<date>
## (about 9 minutes). BENCH_QUICK=1: a ~1-minute smoke run; BENCH_SCALE_ARGS: more flags
## (--reps N, --only IMPL,.., --scenarios NAME,.., --out DIR)
bench-scale:
	./scripts/install-deps.sh bench-scale
	bench/build.sh rust java
	$(CARGO_OUT)/release/zklock-bench scale $(if $(filter 1,$(BENCH_QUICK)),--quick) $(BENCH_SCALE_ARGS)

.PHONY: bench-memory
## bench-memory: the client's memory per waiting acquire and per held lock (issue 33, item 3):
## zklock's Rust core, Python (asyncio) and Node packages, Curator and kazoo, N = 1,000, 3,000,
## 10,000 on one lock and on N locks; results in bench/results/memory-<date>. Each case waits at
## most 120 s for the server's watches to settle (Python and Node at 10,000 on one lock take
## 80-105 s: bench/results/memory-2026-11-29-cap). BENCH_MEMORY_ARGS: more flags (--impl IMPL,.., --n N,.., --shapes one,many,hold,
## --settle-s S, --limit-s S, --skip IMPL/SHAPE/N,.., --out DIR)
bench-memory: deps
	bench/build.sh rust python node java
	$(CARGO_OUT)/release/zklock-bench memory --limit-s 120 $(BENCH_MEMORY_ARGS)

.PHONY: bench-load
## bench-load: many sessions and locks, and a long queue, on a 3-node ensemble (issue 33, items 2
## and 4): 10 processes x 100 sessions on 10,000 locks with the leader killed mid-run, and 10,000
## waiters on one lock; zklock (Rust core) and Curator, each on a fresh ensemble; results in
## bench/results/load-<date>. BENCH_QUICK=1: a small run (2 processes, 100 sessions/waiters, about
## a minute of measuring); BENCH_LOAD_ARGS: more flags (--only IMPL,.., --scenarios queue,many,
## --procs N, --waiters N, --sessions N, --paths N, --out DIR; zklock-bench load --help)
bench-load:
	./scripts/install-deps.sh bench-scale
	bench/build.sh rust java
	$(CARGO_OUT)/release/zklock-bench load $(if $(filter 1,$(BENCH_QUICK)),--quick) $(BENCH_LOAD_ARGS)

# ---- C ABI (zklock-ffi): libzklock, include/zklock.h, install ---------------
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
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

## vocabulary: regenerate the front ends' files of the shared words (C enums in
## zklock-ffi/src/vocabulary.rs, Python enums and exceptions in zklock/_vocabulary.py,
## TypeScript unions in bindings/node/vocabulary.d.ts) from the core's tables, then the
## header; `make test` fails while one differs (zklock-core/tests/vocabulary.rs)
.PHONY: vocabulary
vocabulary:
	ZKLOCK_WRITE_VOCABULARY=1 $(CARGO) test --locked -q -p zklock-core --test vocabulary
	$(MAKE) header

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

## install: header, libzklock.so.$(ZKLOCK_VERSION) (+ symlinks), libzklock.a, zklock.pc, bin/zklock,
## its man pages (man1) and bash, zsh and fish completions
install: cli
	$(CARGO) build --release --locked -p zklock-ffi
	install -d "$(DESTDIR)$(INCLUDEDIR)" "$(DESTDIR)$(LIBDIR)" "$(DESTDIR)$(PKGCONFIGDIR)" "$(DESTDIR)$(BINDIR)"
	install -d "$(DESTDIR)$(MANDIR)/man1" "$(DESTDIR)$(BASHCOMPDIR)" "$(DESTDIR)$(ZSHCOMPDIR)" "$(DESTDIR)$(FISHCOMPDIR)"
	scripts/install-stripped.sh 755 $(CARGO_OUT)/release/zklock "$(DESTDIR)$(BINDIR)/zklock"
	install -m 644 $(CLI_DIR)/*.1 "$(DESTDIR)$(MANDIR)/man1/"
	install -m 644 $(CLI_DIR)/completions/zklock.bash "$(DESTDIR)$(BASHCOMPDIR)/zklock"
	install -m 644 $(CLI_DIR)/completions/_zklock "$(DESTDIR)$(ZSHCOMPDIR)/_zklock"
	install -m 644 $(CLI_DIR)/completions/zklock.fish "$(DESTDIR)$(FISHCOMPDIR)/zklock.fish"
	install -m 644 include/zklock.h "$(DESTDIR)$(INCLUDEDIR)/zklock.h"
	scripts/install-stripped.sh 755 $(CARGO_OUT)/release/libzklock.so "$(DESTDIR)$(LIBDIR)/libzklock.so.$(ZKLOCK_VERSION)"
	ln -sfn "libzklock.so.$(ZKLOCK_VERSION)" "$(DESTDIR)$(LIBDIR)/libzklock.so.$(ZKLOCK_SOVERSION)"
	ln -sfn "libzklock.so.$(ZKLOCK_SOVERSION)" "$(DESTDIR)$(LIBDIR)/libzklock.so"
	install -m 644 $(CARGO_OUT)/release/libzklock.a "$(DESTDIR)$(LIBDIR)/libzklock.a"
	strip --strip-debug "$(DESTDIR)$(LIBDIR)/libzklock.a"
	sed -e 's|@PREFIX@|$(PREFIX)|' \
	    -e 's|@LIBDIR@|$(call pc_rel,$(LIBDIR))|' \
	    -e 's|@INCLUDEDIR@|$(call pc_rel,$(INCLUDEDIR))|' \
	    -e 's|@VERSION@|$(ZKLOCK_VERSION)|' \
	    zklock-ffi/zklock.pc.in > "$(DESTDIR)$(PKGCONFIGDIR)/zklock.pc"
	chmod 644 "$(DESTDIR)$(PKGCONFIGDIR)/zklock.pc"

uninstall:
	rm -f "$(DESTDIR)$(INCLUDEDIR)/zklock.h" "$(DESTDIR)$(PKGCONFIGDIR)/zklock.pc" \
	  "$(DESTDIR)$(LIBDIR)/libzklock.so.$(ZKLOCK_VERSION)" "$(DESTDIR)$(LIBDIR)/libzklock.so.$(ZKLOCK_SOVERSION)" \
	  "$(DESTDIR)$(LIBDIR)/libzklock.so" "$(DESTDIR)$(LIBDIR)/libzklock.a" "$(DESTDIR)$(BINDIR)/zklock" \
	  "$(DESTDIR)$(MANDIR)"/man1/zklock.1 "$(DESTDIR)$(MANDIR)"/man1/zklock-*.1 "$(DESTDIR)$(BASHCOMPDIR)/zklock" \
	  "$(DESTDIR)$(ZSHCOMPDIR)/_zklock" "$(DESTDIR)$(FISHCOMPDIR)/zklock.fish" \
	  "$(DESTDIR)$(LIBDIR)/.debug/libzklock.so.$(ZKLOCK_VERSION).debug" "$(DESTDIR)$(BINDIR)/.debug/zklock.debug"

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
	so="$$dest/usr/local/lib/libzklock.so.$(ZKLOCK_VERSION)"; \
	! readelf -S "$$so" | grep -q '\.debug_info'; \
	readelf -S "$$so" | grep -q '\.gnu_debuglink'; \
	readelf -S "$$dest/usr/local/lib/.debug/libzklock.so.$(ZKLOCK_VERSION).debug" | grep -q '\.debug_info'; \
	! readelf -S "$$dest/usr/local/bin/zklock" | grep -q '\.debug_info'; \
	echo "test-install: stripped libzklock.so $$(stat -c %s "$$so") bytes, zklock $$(stat -c %s "$$dest/usr/local/bin/zklock") bytes; debug info in .debug/"; \
	man -l "$$dest/usr/local/share/man/man1/zklock-run.1" | grep -q -- --nonblock; \
	bash -n "$$dest/usr/local/share/bash-completion/completions/zklock"; \
	test -s "$$dest/usr/local/share/zsh/site-functions/_zklock"; \
	test -s "$$dest/usr/local/share/fish/vendor_completions.d/zklock.fish"; \
	echo "test-install: ok"

# ---- Python package (bindings/python): zklock, PyO3 + maturin --------------
PYVENV := target/python-venv

.PHONY: python python-venv python-install test-python

## python-venv: the test venv target/python-venv (pinned maturin, pytest, mypy,
## kazoo, hypothesis and what they need: bindings/python/requirements-test.txt)
PY_REQUIREMENTS ?= bindings/python/requirements-test.txt
python-venv:
	scripts/venv.sh $(PYVENV) $(PY_REQUIREMENTS)

## python-install: install zklock from source into the venv (built by the
## venv's pinned maturin: no isolated build env to download)
python-install: python-venv
	PATH="$(CURDIR)/$(PYVENV)/bin:$$PATH" $(PYVENV)/bin/pip install -q --no-build-isolation --force-reinstall --no-deps ./bindings/python

## python: the sdist and the abi3 wheels (CPython >= 3.9) of zklock-rs into
## target/wheels: manylinux2014 and musllinux_1_2, x86_64 and aarch64,
## cross-built with zig and checked with auditwheel (bindings/python/build-wheels.sh)
python:
	bindings/python/build-wheels.sh

## test-python-wheel: install the x86_64 manylinux2014 wheel into a fresh venv
## without Rust and take a lock with it (bindings/python/test-wheel.sh)
.PHONY: test-python-wheel
test-python-wheel: python
	$(CARGO) build --locked -p zklock-harness
	bindings/python/test-wheel.sh

## node-package: the npm tarballs in target/node-packages: the main package
## (no binary) and one per platform (linux-x64-gnu, linux-x64-musl,
## linux-arm64-gnu; cross-built with zig): bindings/node/build-packages.sh
.PHONY: node-package test-node-package
node-package: node-deps
	bindings/node/build-packages.sh

## test-node-package: install the main tarball and the linux-x64-gnu one into a
## fresh directory without Rust or a registry; require() and import, take a lock
test-node-package: node-package
	$(CARGO) build --locked -p zklock-harness
	bindings/node/test-packages.sh

## test-python: install zklock from source into the venv, run stubtest and pytest
test-python: deps python-install
	$(CARGO) build --locked -p zklock-harness
	$(PYVENV)/bin/python -m mypy.stubtest zklock._zklock
	cd target && python-venv/bin/python -m mypy --strict -p zklock
	$(PYVENV)/bin/python -m mypy --strict bindings/python/examples
	$(PYVENV)/bin/python -m mypy --strict bindings/python/tests/typecheck
	set -o pipefail; $(PYVENV)/bin/python -m pytest bindings/python/tests 2>&1 | tee target/test-python.log

# ---- Node package (bindings/node): zklock, napi-rs ---------------------------
.PHONY: node-deps node test-node

## node-deps: the pinned npm dev dependencies (@napi-rs/cli, typescript) from package-lock.json
node-deps:
	cd bindings/node && { cmp -s package-lock.json node_modules/.zklock-lock-stamp 2>/dev/null \
	  || { npm ci --no-audit --no-fund && cp package-lock.json node_modules/.zklock-lock-stamp; }; }

## node: build the addon (debug) next to index.js: bindings/node/zklock.<platform>.node
node: node-deps
	cd bindings/node && npm run --silent build:test

## test-node: build the addon, type-check test/typed-usage.ts with tsc, run `node --test`
test-node: deps node
	@git diff --exit-code -- bindings/node/index.d.ts bindings/node/native.js \
	  || { echo "bindings/node/index.d.ts or native.js differ from the build: commit the regenerated files" >&2; exit 1; }
	$(CARGO) build --locked -p zklock-harness
	cd bindings/node && npx --no-install tsc --noEmit -p test/tsconfig.json
	@mkdir -p target
	set -o pipefail; cd bindings/node && node --test test/*.test.js 2>&1 | tee ../../target/test-node.log

# ---- fuzzing (not part of `make test`) ----------------------------------------
.PHONY: fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= frame reply connect_response watcher_event
CARGO_FUZZ_VERSION := 0.13.2
FUZZ_TOOLS := $(CURDIR)/target/fuzz-tools

## fuzz: zklock-zk's codec under libFuzzer (zklock-zk/fuzz, its own workspace):
## each of FUZZ_TARGETS for FUZZ_SECONDS (60) s with AddressSanitizer. Needs the
## nightly toolchain (rustup toolchain install nightly); installs the pinned
## cargo-fuzz into target/fuzz-tools; builds into target/fuzz. The corpus grows
## in zklock-zk/fuzz/corpus/<target>, a crashing input lands in
## zklock-zk/fuzz/artifacts/<target> (both ignored by git)
fuzz:
	@rustup toolchain list | grep -q '^nightly' \
	  || { echo "make fuzz: needs the nightly toolchain: rustup toolchain install nightly" >&2; exit 1; }
	@$(FUZZ_TOOLS)/bin/cargo-fuzz --version 2>/dev/null | grep -qx 'cargo-fuzz $(CARGO_FUZZ_VERSION)' \
	  || $(CARGO) install cargo-fuzz --locked --version $(CARGO_FUZZ_VERSION) --root $(FUZZ_TOOLS)
	set -e; cd zklock-zk && for t in $(FUZZ_TARGETS); do \
	  PATH="$(FUZZ_TOOLS)/bin:$$PATH" cargo +nightly fuzz run --target-dir $(CURDIR)/target/fuzz $$t \
	    -- -max_total_time=$(FUZZ_SECONDS); \
	done

# ---- the acquire machine's simulator (not part of `make test`) -----------------
.PHONY: sim
SIM_SECONDS ?= 600

## sim: zklock-proto's state machines (acquire, holder, cleanup, clock) against the simulator's model of
## a ZooKeeper ensemble (zklock-proto/tests/sim.rs: a leader and two followers that report their
## clients' sessions only in ping answers, answer reads alone from a copy that may lag, and may be
## cut off from the leader; or a standalone server) for SIM_SECONDS (600) s, one thread per
## core, each with its own seed range (release build); prints schedules per
## second, and a broken promise with its seed and shrunk schedule (replay one
## seed: ZKLOCK_SIM_SEED=<n> make sim). `make test` runs it for 20 s. Then multi-locks among
## exclusive locks on two paths for a quarter of SIM_SECONDS (`make test`: 10 s). Then the
## exhaustive search (zklock-proto/tests/exhaustive.rs): two contenders, from
## their grants to their releases' ends, and a semaphore whose shared count
## changes, with SIM_FAULTS (1) fault per path (`make test`: no fault); last, two exclusive
## contenders and one act of a third party per path, no fault (about 540,000 states, under a minute;
## too long for `make test`'s debug build); then the reconnect search (zklock-proto/tests/reconnect.rs:
## the session layer's reconnect policy and the safety clock under server stalls, refusals,
## resets, slow answers, hung addresses and the own address hanging, with and without a close) with SIM_RECONNECT_RUNS (400,000) random runs, a quarter as many with the own address hung and a quarter with login steps on slow networks (about 30 s; `make test`: 20,000, 5,000 and 5,000)
SIM_FAULTS ?= 1
SIM_RECONNECT_RUNS ?= 400000
sim:
	ZKLOCK_SIM_SECONDS=$(SIM_SECONDS) ZKLOCK_SIM_THREADS=$$(nproc) \
	  $(CARGO) test --locked --release -p zklock-proto --features history --test sim explore -- --exact --nocapture
	ZKLOCK_SIM_MULTI_SECONDS=$$(( $(SIM_SECONDS) / 4 )) ZKLOCK_SIM_THREADS=$$(nproc) \
	  $(CARGO) test --locked --release -p zklock-proto --features history --test sim explore_multi_locks -- --nocapture
	ZKLOCK_EXHAUSTIVE_FAULTS=$(SIM_FAULTS) \
	  $(CARGO) test --locked --release -p zklock-proto --features history --test exhaustive -- --nocapture
	$(CARGO) test --locked --release -p zklock-proto --features history --test exhaustive \
	  exhaustive_third_party -- --ignored --exact --nocapture
	ZKLOCK_RECONNECT_RUNS=$(SIM_RECONNECT_RUNS) \
	  $(CARGO) test --locked --release -p zklock-proto --features history --test reconnect -- --nocapture

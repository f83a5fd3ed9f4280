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

## demo: a private ZooKeeper and several processes taking turns on one lock
demo: deps
	$(CARGO) run --release --locked -p zklock-core --example demo

## test: every test suite, against real ZooKeeper servers, and the demo
test: deps lint test-rust test-demo
	@scripts/test-summary.sh target/test-rust.log

test-rust:
	@mkdir -p target
	set -o pipefail; $(CARGO) test --workspace --locked -- --test-threads=$(TEST_THREADS) 2>&1 | tee target/test-rust.log

# The demo must keep working: run it (debug build, already built by the tests).
test-demo:
	$(CARGO) run --locked -p zklock-core --example demo

## lint: formatting and clippy, warnings are errors
lint:
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

clean:
	$(CARGO) clean
	rm -rf .zkharness

.PHONY: test-interop
## test-interop: only the interoperability tests (real Curator and kazoo peers)
test-interop: deps
	$(CARGO) test --locked -p zklock-core --test interop -- --test-threads=$(TEST_THREADS)

# The two commands of the README: `make demo` and `make test`.
# Each installs what is missing first (scripts/bootstrap.sh), quietly when all is there:
# `make demo` only what the demo runs, `make test` the whole test toolchain.

SHELL := /bin/bash
export UV_PYTHON_DOWNLOADS := never
# pytest rewrites the asserts of every test module (and of schemathesis, a plugin) at each
# start, and keeps the result only where byte-code may be written: with
# PYTHONDONTWRITEBYTECODE set, each pytest process (each xdist worker) spent about 12 s of a
# core on it every time, and each process in the virtual environments the tests install
# compiled every module it imported. Byte-code goes to __pycache__ (ignored by git).
unexport PYTHONDONTWRITEBYTECODE
VENV := .venv/bin
# The native crates (perfbench, hypervisor): one Cargo workspace (Cargo.toml), one target/
CARGO_CRATES := perfbench hypervisor

.PHONY: demo test check quick bootstrap-demo bootstrap bootstrap-rust lint unit integration fuzz \
	rust rust-test bench-build dist install-rust clean

demo: bootstrap-demo
	$(VENV)/vnet demo

# compileall: the tests start hundreds of agents and CLI processes, many at the same moment;
# with vnet's byte-code written before, none of them compiles its modules.
# Two phases: the suite (shared among WORKERS processes with WORKERS=2 or more: most of its
# time is waiting on agents, labs and timeouts, so more workers than cores pay), then the
# tests marked serial (a measured rate, loss or time: tests/integration/conftest.py SERIAL)
# alone. tests/conftest.py says how tests are shared out. Three workers: the first phase took
# 840 s instead of 1492-1580 s with one on this 2-core machine kind; a test whose verdict
# failed beside them belongs in SERIAL, not in a slower default.
WORKERS ?= 3
ifeq ($(WORKERS),1)
PARALLEL := -m "not serial"
else
PARALLEL := -n $(WORKERS) --dist loadscope -m "not serial"
endif
test: bootstrap-rust lint rust-test
	@$(VENV)/python -m compileall -q src >/dev/null
	$(VENV)/pytest -q $(PARALLEL) tests
	$(VENV)/pytest -q -m serial tests

bootstrap-demo:
	@scripts/bootstrap.sh --demo

bootstrap:
	@scripts/bootstrap.sh

bootstrap-rust:
	@scripts/bootstrap.sh --rust

lint: bootstrap
	$(VENV)/ruff check src tests
	$(VENV)/ruff format --check src tests
	$(VENV)/lint-imports --no-cache
	$(VENV)/mypy src/vnet/model src/vnet/client src/vnet/substrate src/vnet/controller

unit: bootstrap
	$(VENV)/pytest -q tests/unit

# The fast loop between two small changes: lint, unit tests and the fuzzers briefly; no root,
# no labs, no Rust. `make quick` adds the integration tests but the slow modules, benchmarks
# and the browser (markers: agents, postgres, browser, bench, slow; pyproject.toml).
# One worker more than cores: most unit tests compute, but the controller's tests on hosts in
# memory also wait on its timers (RPC timeouts, backoffs). On 2 cores: 87-92 s with 2
# workers, 73 s with 3, 71 s with 4 at more CPU.
CHECK_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
check: lint
	$(VENV)/pytest -q -n $(CHECK_WORKERS) -m "not slow" tests/unit tests/fuzz

quick: check rust
	$(VENV)/pytest -q tests/integration -m "not slow and not bench and not browser"

integration: bootstrap-rust rust
	$(VENV)/pytest -q $(PARALLEL) tests/integration
	$(VENV)/pytest -q -m serial tests/integration

# Property-based tests and fuzzers (tests/fuzz) at length: `make test` runs them briefly.
fuzz: bootstrap
	HYPOTHESIS_PROFILE=fuzz $(VENV)/pytest -q tests/fuzz

# Native crates: built in release for benchmarks and integration tests.
rust: bootstrap-rust
	cargo build -q --release --workspace

# --release: the tests reuse the release build instead of compiling everything twice
rust-test: rust
	cargo fmt --all --check
	cargo clippy -q --release --workspace --all-targets -- -D warnings
	cargo test -q --release --workspace

# The packages an operator installs (docs/deploy.md): a wheel and an sdist in dist/, whose
# extras are the roles (vnet[agent], vnet[controller], vnet[bench], vnet[all]). The wheel
# ships the console's browser libraries that bootstrap fetches.
DIST ?= dist
dist: bootstrap
	rm -rf $(DIST)
	.cache/tools/bin/uv build -q --out-dir $(DIST)

# The native binaries (perfbench, hypervisor), built in release and installed into
# $(PREFIX)/bin: `make install-rust PREFIX=/usr/local` on the machine that runs benchmarks.
PREFIX ?= /usr/local
install-rust: rust
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(addprefix target/release/,$(CARGO_CRATES)) $(DESTDIR)$(PREFIX)/bin/

bench-build: bootstrap
	$(VENV)/vnet bench build --vrs 100 --json out/bench-build-100.json
	$(VENV)/vnet bench build --vrs 1000 --json out/bench-build-1000.json

clean:
	rm -rf .venv .cache out dist target

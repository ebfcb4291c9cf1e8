# bgtaskd — the two commands: `make run` and `make test`.
SWIFT      ?= swift
PYTHON     ?= python3
RUNDIR     ?= $(CURDIR)/.run
BIN        := $(CURDIR)/.build/debug
RELEASEBIN := $(CURDIR)/.build/release

.PHONY: all build deps journald run test test-unit test-integration test-units test-systemd bench clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

# Starts the daemon on the repo's config/ with a local runtime and state directory. Works without
# root: the socket is $(RUNDIR)/io.bgtaskd; without a journal it logs to stderr.
run: build
	@mkdir -p $(RUNDIR)/state
	@echo "bgtaskd: socket $(RUNDIR)/io.bgtaskd  (try: $(BIN)/bgtaskctl --socket $(RUNDIR)/io.bgtaskd list)"
	$(BIN)/bgtaskd --config-dir $(CURDIR)/config --runtime-dir $(RUNDIR) --state-dir $(RUNDIR)/state --socket $(RUNDIR)/io.bgtaskd

journald:
	@scripts/ensure-journald.sh

# Everything: dependencies, journald, build, unit tests, integration tests, unit-file checks.
test: deps journald
	$(SWIFT) build --build-tests
	$(MAKE) --no-print-directory test-unit test-units test-integration

test-unit:
	$(SWIFT) test --skip-build

test-integration:
	BGTASKD_BIN_DIR=$(BIN) $(PYTHON) -m pytest -q -p no:cacheprovider tests/integration

test-units:
	tests/check-units.sh
	scripts/gen-wayland-glue.sh --check

# The shipped units under a real systemd (PID 1 of a PID namespace on this machine; root, no systemd as
# PID 1 here). Not part of `test`: see the script's header for what it touches and undoes.
test-systemd: deps
	$(SWIFT) build -c release
	tests/systemd-in-namespace.sh $(RELEASEBIN)

bench: deps journald
	$(SWIFT) build -c release
	BGTASKD_BIN_DIR=$(RELEASEBIN) $(PYTHON) bench/bench.py

clean:
	rm -rf .build $(RUNDIR)

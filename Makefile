# bgtaskd — the two commands: `make run` and `make test`.
SWIFT      ?= swift
PYTHON     ?= python3
RUNDIR     ?= $(CURDIR)/.run
BIN        := $(CURDIR)/.build/debug
RELEASEBIN := $(CURDIR)/.build/release

.PHONY: all build deps journald run test test-unit test-integration test-units test-docs test-dependency test-systemd test-systemd-run test-fuzz fuzz soak bench examples clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@scripts/c-headers-guard.sh
	$(SWIFT) build

# Starts the daemon on the repo's config/ with a local runtime and state directory. Works without
# root: the socket is $(RUNDIR)/io.bgtaskd; without a journal it logs to stderr.
# The daemon says on the terminal when it is ready, its socket and the freezer backend in force (and why).
# `exec`: the daemon replaces the recipe's shell, so Ctrl-C and `kill` of the job reach it (SIGTERM:
# it terminates the apps it launched, then exits).
run: build
	@mkdir -p $(RUNDIR)/state
	@echo "bgtaskd: starting (then try: export BGTASKD_SOCKET=$(RUNDIR)/io.bgtaskd; $(BIN)/bgtaskctl list)"
	@exec $(BIN)/bgtaskd --config-dir $(CURDIR)/config --runtime-dir $(RUNDIR) --state-dir $(RUNDIR)/state --socket $(RUNDIR)/io.bgtaskd

journald:
	@scripts/ensure-journald.sh

# Everything: dependencies, journald, build, unit tests, integration tests, unit-file checks, the units
# under a real systemd, the documentation against the code, and the Debian package installed and checked.
test: deps journald
	@scripts/c-headers-guard.sh
	scripts/build-warning-free.sh $(SWIFT)
	$(MAKE) --no-print-directory test-unit test-units test-docs test-dependency test-integration test-systemd-run test-fuzz test-package

test-docs:
	IntegrationTests/check-docs.sh $(BIN)

test-unit:
	$(SWIFT) test --skip-build

test-integration:
	BGTASKD_BIN_DIR=$(BIN) $(PYTHON) -m pytest -q -p no:cacheprovider IntegrationTests/integration

# An app package builds against BGTaskClient named by version (no unsafe flags on our products).
test-dependency:
	IntegrationTests/check-versioned-dependency.sh $(SWIFT)

test-units:
	IntegrationTests/check-units.sh
	scripts/gen-wayland-glue.sh --check
	$(PYTHON) scripts/gen-varlink.py --check

# issue 11 at full length: 200 kill -9s in the crash loop and a 20 s journald stall (`make test` runs them
# with 30 kills and a 5 s stall).
soak: deps journald
	@scripts/c-headers-guard.sh
	$(SWIFT) build
	BGTASKD_BIN_DIR=$(BIN) BGTASKD_KILLS=200 BGTASKD_STALL_SEC=20 $(PYTHON) -m pytest -q -s -p no:cacheprovider \
		IntegrationTests/integration/test_crash_loop.py IntegrationTests/integration/test_journal_budget.py

# libFuzzer on the daemon's framing, call decoding and call checks (FuzzTesting/, a separate package
# built with -sanitize=fuzzer,address): a bounded pass in `test`, ten minutes in `fuzz`.
FUZZ_TEST_SECONDS ?= 60
FUZZ_SECONDS      ?= 600
test-fuzz:
	SWIFT=$(SWIFT) scripts/fuzz.sh $(FUZZ_TEST_SECONDS)

fuzz: deps
	SWIFT=$(SWIFT) scripts/fuzz.sh $(FUZZ_SECONDS)

# The shipped units under a real systemd (PID 1 of a PID and mount namespace on this machine; root, no
# systemd as PID 1 here), with the debug build: see the script's header for what it touches and undoes.
# `test` runs it on the build it has just made; alone, it builds the three programs it needs first.
SYSTEMD_CHECK_PRODUCTS := bgtaskd bgtaskd-launcher bgtaskctl
test-systemd: deps
	@scripts/c-headers-guard.sh
	for p in $(SYSTEMD_CHECK_PRODUCTS); do $(SWIFT) build --product $$p || exit 1; done
	IntegrationTests/systemd-in-namespace.sh $(BIN)

# Where systemd already is PID 1 (a Debian VM) a second one cannot boot beside it: `make test` says so and
# goes on (`make test-systemd` alone still fails there); the units are then checked by check-units.sh only.
test-systemd-run:
	@if [ -d /run/systemd/system ]; then \
		echo "test-systemd: SKIPPED, systemd is PID 1 on this machine (the check boots its own systemd as PID 1 of a namespace)"; \
	else IntegrationTests/systemd-in-namespace.sh $(BIN); fi

# Row 8 measures the package: `deb` first (incremental in .build-deb/).
bench: deps journald deb
	@scripts/c-headers-guard.sh
	BGTASKD_EXTRAS=1 $(SWIFT) build -c release
	BGTASKD_BIN_DIR=$(RELEASEBIN) $(PYTHON) bench/bench.py

# The example apps (Examples/), outside the default build.
examples: deps
	@scripts/c-headers-guard.sh
	BGTASKD_EXTRAS=1 $(SWIFT) build --product mail-sync
	BGTASKD_EXTRAS=1 $(SWIFT) build --product notes

clean:
	rm -rf .build .build-deb man/build $(RUNDIR)

# ---- Installing and packaging (issue 16) -------------------------------------------------------
PREFIX         ?= /usr/local
DESTDIR        ?=
SYSCONFDIR     ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
BINDIR         ?= $(RELEASEBIN)
MANPAGES       := man/build/bgtaskctl.1 man/build/bgtaskd-focus.1 man/build/bgtaskd.8 man/build/bgtaskd-launcher.8 man/build/bgtaskd.conf.5 man/build/bgtaskd.app.5
# Full RELRO for the installed programs (lintian's hardening-no-bindnow). The four programs share one
# copy of the Swift runtime in a private library directory, $(PREFIX)/lib/bgtaskd (as systemd's programs
# share libsystemd-shared): they find it through an rpath relative to themselves, never the toolchain's.
# Unused sections are dropped (--gc-sections), identical functions folded (--icf=all) and only libraries a
# program uses are linked (--as-needed).
PKGLIBDIR      := lib/bgtaskd
RELEASEFLAGS   := -c release -Xswiftc -no-toolchain-stdlib-rpath -Xlinker -rpath -Xlinker '$$ORIGIN/../$(PKGLIBDIR)' \
	-Xlinker --gc-sections -Xlinker --icf=all -Xlinker --as-needed -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now
RELEASEPRODUCTS := bgtaskd bgtaskd-launcher bgtaskctl bgtaskd-focus
# The daemon is optimized for speed (-O); the programs that are not the daemon for size (-Osize).
SIZEPRODUCTS   := bgtaskd-launcher bgtaskctl bgtaskd-focus
# Where the toolchain keeps the Swift runtime's shared libraries (copied into $(PKGLIBDIR) by install).
SWIFTRUNTIME   ?= $(shell dirname "$$(readlink -f "$$(command -v $(SWIFT))")")/../lib/swift/linux

.PHONY: man release release-build install deb test-package

man: $(MANPAGES)
man/build/%: man/%.scd
	@mkdir -p man/build
	scdoc < $< > $@

# The programs a device runs, with the Swift runtime linked in (no toolchain needed there).
release: deps release-build
release-build:
	@scripts/c-headers-guard.sh
	$(SWIFT) build $(RELEASEFLAGS) --product bgtaskd
	for p in $(SIZEPRODUCTS); do \
		$(SWIFT) build $(RELEASEFLAGS) -Xswiftc -Osize --product $$p || exit 1; done

# `make release install PREFIX=/usr DESTDIR=/tmp/root`. Units name /usr/bin: with another PREFIX,
# ExecStart= is rewritten to match.
install: man
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(PREFIX)/lib/sysusers.d \
		$(DESTDIR)$(PREFIX)/lib/systemd/catalog $(DESTDIR)$(SYSCONFDIR)/bgtaskd/apps.d \
		$(DESTDIR)$(SYSCONFDIR)/bgtaskd/bgtaskd.conf.d \
		$(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5 $(DESTDIR)$(PREFIX)/share/man/man8 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d $(DESTDIR)$(PREFIX)/lib/systemd/user
	install -m755 $(BINDIR)/bgtaskd $(BINDIR)/bgtaskd-launcher $(BINDIR)/bgtaskctl $(BINDIR)/bgtaskd-focus $(DESTDIR)$(PREFIX)/bin/
	install -d $(DESTDIR)$(PREFIX)/$(PKGLIBDIR)
	libs=$$(scripts/swift-runtime-libs.sh $(SWIFTRUNTIME) $(addprefix $(BINDIR)/,$(RELEASEPRODUCTS))) && \
		install -m644 $$libs $(DESTDIR)$(PREFIX)/$(PKGLIBDIR)/
	sed -e 's|/usr/bin/|$(PREFIX)/bin/|g' systemd/bgtaskd-focus.service > $(DESTDIR)$(PREFIX)/lib/systemd/user/bgtaskd-focus.service
	chmod 644 $(DESTDIR)$(PREFIX)/lib/systemd/user/bgtaskd-focus.service
	for u in bgtaskd.service bgtaskd.socket bgtaskd-launcher.service bgtaskd-launcher.socket; do \
		sed -e 's|/usr/bin/|$(PREFIX)/bin/|g' -e 's|/etc/bgtaskd|$(SYSCONFDIR)/bgtaskd|g' systemd/$$u \
			> $(DESTDIR)$(SYSTEMDUNITDIR)/$$u && chmod 644 $(DESTDIR)$(SYSTEMDUNITDIR)/$$u; done
	install -m644 systemd/bgtaskd.sysusers $(DESTDIR)$(PREFIX)/lib/sysusers.d/bgtaskd.conf
	install -m644 systemd/bgtaskd.catalog $(DESTDIR)$(PREFIX)/lib/systemd/catalog/bgtaskd.catalog
	install -m644 config/bgtaskd.conf $(DESTDIR)$(SYSCONFDIR)/bgtaskd/bgtaskd.conf
	install -m644 man/build/bgtaskctl.1 man/build/bgtaskd-focus.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m644 man/build/bgtaskd.conf.5 man/build/bgtaskd.app.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	install -m644 man/build/bgtaskd.8 man/build/bgtaskd-launcher.8 $(DESTDIR)$(PREFIX)/share/man/man8/
	install -m644 completions/bgtaskctl.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/bgtaskctl
	install -m644 completions/_bgtaskctl $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_bgtaskctl
	install -m644 completions/bgtaskctl.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/bgtaskctl.fish

# The Debian package, built in a copy of the tracked files (.build-deb/src) so that the work tree and
# its parent stay clean; the .deb lands in .build-deb/.
deb: deps
	scripts/build-deb.sh

# Builds the package, installs it with dpkg into an overlay of this machine (private mount namespace,
# nothing outside it changes) and checks what landed; see the script's header.
test-package: deb
	IntegrationTests/check-package.sh

# Makefile: the one entry point.
#   make              build build/lib/libtf.a, build/lib/libtf.so and the programs
#   make check        install missing deps, build and run every unit test
#   make install PREFIX=/usr/local DESTDIR=   headers, libraries, tf.pc, programs,
#                     conf examples, docs, the systemd units and /etc/tf/cluster.yaml
#                     (make uninstall removes them)
#   make SANITIZE=address,undefined check   the same under sanitizers
#   make lint         scripts/lint.py: layer direction, purpose comments, lengths,
#                     libtf.so's exported symbols, cppcheck (LINT_RULES="layers purpose"
#                     runs only those rules)
#   make bench-matmul MatMul kernel vs direct cblas_sgemm
#   make bench-tstream 100 MB over the tensor stream vs raw TCP
#   make bench-replicas null steps of 1, 2, 4 workers (OSDI Fig. 6) and
#                     Fashion-MNIST images/s, 1 vs 2 workers, on loopback
#   make docs         regenerate docs/ops.md from the op registry
# Sources are found by globbing: a new lib/ file or test/unit/*_test.c is
# built without editing this file. Every output goes under build/.

CC      ?= cc
SANITIZE ?=
ARCH    ?= native
OPT     ?= -O3

comma   := ,
ifeq ($(SANITIZE),)
BUILD   := build
else
# One build directory per sanitizer set.
BUILD   := build/san-$(subst $(comma),-,$(SANITIZE))
endif
LIBDIR  := $(BUILD)/lib
BINDIR  := $(BUILD)/bin

PKGS     := msgpack yaml-0.1 check libuv libmicrohttpd
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs msgpack yaml-0.1 libuv 2>/dev/null)
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)

WARN    := -Wall -Wextra -Wstrict-prototypes -Wno-unused-parameter -Wno-missing-field-initializers \
           -Werror=implicit-function-declaration
ifneq ($(filter true 1,$(CI) $(WERROR)),)
WARN    += -Werror
endif
CFLAGS  := -std=c11 -D_GNU_SOURCE $(OPT) -g -march=$(ARCH) -fPIC -pthread $(WARN) \
           -I. -Iinclude -MMD -MP
ifneq ($(SANITIZE),)
SANFLAGS := -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer
CFLAGS  += $(SANFLAGS)
LDSAN   := -fsanitize=$(SANITIZE)
endif
# lib/ objects: only what include/tf marks TF_API is exported from libtf.so.
LIB_CFLAGS := -fvisibility=hidden
# The C++ test of the public headers (test/unit/cxx): they must compile
# cleanly as C++ too.
CXXFLAGS_TEST := -std=c++17 $(OPT) -g -march=$(ARCH) -pthread -Wall -Wextra \
           -Werror -pedantic-errors -Iinclude -MMD -MP $(SANFLAGS)
LDLIBS  = $(PKG_LIBS) -lnng -lcrypto -lopenblas -lz -lm -lpthread
# mbedTLS (libmbedtls-dev, the TLS engine of Debian's NNG): lib/transport/tls.c
# checks certificates and keys with it when they are loaded.
LDLIBS  += -lmbedx509 -lmbedcrypto
# oneDNN (Debian libdnnl-dev), optional: convolutions use it when found
# (cpu_conv_dnnl.c), im2col + OpenBLAS otherwise or with TF_DISABLE_DNNL=1.
HAVE_DNNL := $(shell { [ -e /usr/include/dnnl.h ] || pkg-config --exists dnnl 2>/dev/null; } && echo yes)
ifeq ($(HAVE_DNNL),yes)
CFLAGS  += -DTF_HAVE_DNNL $(shell pkg-config --cflags dnnl 2>/dev/null)
LDLIBS  += -ldnnl -lgomp
endif

LIB_SRCS  := $(shell find lib -name '*.c' -not -path 'lib/devices/cuda/*' | sort)
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
# TESTS="core/tensor devices/cpu/cpu_matmul" limits a run to those tests
# (test/unit/<name>_test.c, or _test.cc for C++; api/<name> and lint/<name>
# are the scripts test/api/<name>_test.sh and test/lint/<name>_test.py;
# integration/<name> is test/integration/<name>_test.c).
SCRIPT_TEST_NAMES := $(filter api/% lint/%,$(TESTS))
INTEG_TEST_NAMES := $(filter integration/%,$(TESTS))
UNIT_TEST_NAMES := $(filter-out api/% lint/% integration/%,$(TESTS))
ifeq ($(TESTS),)
TEST_SRCS := $(shell find test/unit -name '*_test.c' -o -name '*_test.cc' | sort)
API_TESTS := $(sort $(wildcard test/api/*_test.sh test/lint/*_test.py))
else
TEST_SRCS := $(foreach t,$(UNIT_TEST_NAMES),$(or $(wildcard test/unit/$(t)_test.cc),test/unit/$(t)_test.c))
API_TESTS := $(foreach t,$(SCRIPT_TEST_NAMES),$(wildcard test/$(t)_test.sh test/$(t)_test.py))
endif
# Integration tests (test/integration/*_test.c) start the real daemons: they
# link the harness and run after the programs are built.
ifeq ($(TESTS),)
INTEG_SRCS := $(shell find test/integration -name '*_test.c' 2>/dev/null | sort)
else
INTEG_SRCS := $(foreach t,$(INTEG_TEST_NAMES),test/$(t)_test.c)
endif
TEST_SRCS += $(INTEG_SRCS)
TEST_BINS := $(addprefix $(BUILD)/,$(basename $(TEST_SRCS)))
CXX_TEST_BINS := $(addprefix $(BUILD)/,$(basename $(filter %.cc,$(TEST_SRCS))))
HARNESS_OBJS := $(BUILD)/obj/test/integration/harness.o $(BUILD)/obj/test/integration/igraph.o \
  $(BUILD)/obj/test/integration/jobutil.o
TESTUTIL_OBJS := $(BUILD)/obj/test/unit/testutil.o $(BUILD)/obj/test/unit/testnet.o
CMD_SRCS  := $(wildcard cmd/*/main.c)
CMD_BINS  := $(patsubst cmd/%/main.c,$(BINDIR)/%,$(CMD_SRCS))
# cmd/common/*.c go into every program; cmd/<prog>/*.c other than main.c
# are that program's helpers (tfctl's), which its unit tests link too;
# tfctl's also take cmd/common/pidfile.c, for the integration tests and
# benchmarks that link them without the rest of cmd/common.
CMD_COMMON_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard cmd/common/*.c))
cmd_helper_objs = $(patsubst %.c,$(BUILD)/obj/%.o,$(filter-out cmd/$(1)/main.c,$(wildcard cmd/$(1)/*.c)) \
  $(if $(filter tfctl,$(1)),cmd/common/pidfile.c))
# libsystemd's sd_notify for Type=notify readiness (optional at build time).
HAVE_SYSTEMD := $(shell pkg-config --exists libsystemd 2>/dev/null && echo yes)
ifeq ($(HAVE_SYSTEMD),yes)
CMD_CFLAGS := -DTF_HAVE_SYSTEMD
CMD_LIBS   := $(shell pkg-config --libs libsystemd)
endif
# libmicrohttpd serves the daemons' /metrics (cmd/common/metrics_http.c);
# only the programs link it, never libtf.
CMD_LIBS   += $(shell pkg-config --libs libmicrohttpd 2>/dev/null)
FUZZ_SRCS := $(wildcard test/fuzz/*_fuzz.c)

# The compiler and flags an object was built with: when they change (OPT,
# ARCH, CC, a new optional library) the stamp changes and everything
# rebuilds, as redis's .make-settings does.
FLAGS_STAMP := $(BUILD)/flags.stamp
FLAGS_NOW   := $(strip $(CC) $(CFLAGS) $(LIB_CFLAGS) $(PKG_CFLAGS) $(LDLIBS) $(CMD_CFLAGS) $(CMD_LIBS) \
                       $(CXX) $(CXXFLAGS_TEST))
ifneq ($(FLAGS_NOW),$(strip $(shell cat $(FLAGS_STAMP) 2>/dev/null)))
$(shell mkdir -p $(BUILD) && printf '%s' '$(FLAGS_NOW)' > $(FLAGS_STAMP))
endif

# The version is defined once, in include/tf/version.h.
tf_version_part = $(shell sed -n 's/^\#define TF_VERSION_$(1) \([0-9][0-9]*\)$$/\1/p' include/tf/version.h)
VERSION_MAJOR := $(call tf_version_part,MAJOR)
VERSION := $(VERSION_MAJOR).$(call tf_version_part,MINOR).$(call tf_version_part,PATCH)
SONAME  := libtf.so.$(VERSION_MAJOR)

STATIC  := $(LIBDIR)/libtf.a
# libtf.so.X.Y.Z with SONAME libtf.so.X, and the links libtf.so.X and
# libtf.so (what -ltf finds) to it.
SHARED_REAL := $(LIBDIR)/libtf.so.$(VERSION)
SHARED  := $(LIBDIR)/libtf.so
SHARED_LINKS := $(LIBDIR)/$(SONAME) $(SHARED)
# Kernels and ops register from constructors: link the whole archive.
LINK_TF := -Wl,--whole-archive $(STATIC) -Wl,--no-whole-archive

# Keep test objects (make would delete them as intermediates).
.SECONDARY:

.PHONY: all deps check lint test-run chaos demo-local bench-matmul bench-executor bench-loop bench-dist bench-replicas bench-tstream bench-train soak docs clean info demo fuzz \
        install uninstall
all: info $(STATIC) $(SHARED_LINKS) $(CMD_BINS)

NVCC := $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
HAVE_VERBS := $(shell [ -e /usr/include/infiniband/verbs.h ] && echo yes)
info:
	@echo "tf build ($(BUILD)):"
	@echo "  ✓ CPU device: OpenBLAS GEMM, intra-op thread pool"
	@if [ -n "$(HAVE_DNNL)" ]; then echo "  ✓ oneDNN: float32 convolutions (TF_DISABLE_DNNL=1 falls back to im2col + OpenBLAS)"; \
	 else echo "  ✗ oneDNN: libdnnl-dev not installed (convolutions use im2col + OpenBLAS)"; fi
	@if [ -n "$(NVCC)" ]; then echo "  ✗ CUDA device: nvcc found at $(NVCC), but CUDA devices are not supported (CPU only)"; \
	 else echo "  ✗ CUDA device: nvcc not found"; fi
	@if [ -n "$(HAVE_VERBS)" ]; then echo "  ✗ RDMA verbs: libibverbs found, but the RDMA transport is not supported (tcp, ipc, inproc)"; \
	 else echo "  ✗ RDMA verbs: libibverbs-dev not installed"; fi
	@$(if $(SANITIZE),echo "  sanitizers: $(SANITIZE)",true)

deps:
	@scripts/install-deps.sh

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

$(BUILD)/obj/lib/%.o: lib/%.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) $(PKG_CFLAGS) -c $< -o $@

$(STATIC): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

$(SHARED_REAL): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDSAN) -Wl,-soname,$(SONAME) -o $@ $^ $(LDLIBS)

$(LIBDIR)/$(SONAME): $(SHARED_REAL)
	ln -sf $(notdir $<) $@

$(SHARED): $(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $@

$(BUILD)/obj/cmd/%.o: cmd/%.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $(CMD_CFLAGS) -c $< -o $@

.SECONDEXPANSION:
$(BINDIR)/%: $(BUILD)/obj/cmd/%/main.o $$(call cmd_helper_objs,%) $(CMD_COMMON_OBJS) $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -o $@ $(filter %.o,$^) $(LINK_TF) $(LDLIBS) $(CMD_LIBS)

$(BUILD)/obj/test/integration/%.o: test/integration/%.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -DTF_BIN_DIR='"$(abspath $(BINDIR))"' -c $< -o $@

# The harness drives the daemons with tfctl's helpers (spawn, pid files).
# Naming the harness objects as prerequisites of the test binaries makes
# make pick this rule (not $(BUILD)/test/%) before they are built.
$(filter $(BUILD)/test/integration/%,$(TEST_BINS)): $(HARNESS_OBJS)
$(BUILD)/test/integration/%: $(BUILD)/obj/test/integration/%.o $(HARNESS_OBJS) $(call cmd_helper_objs,tfctl) $(TESTUTIL_OBJS) $(STATIC) $(CMD_BINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -o $@ $(filter %.o,$^) $(LINK_TF) $(CHECK_LIBS) $(LDLIBS)

# Tests of a program's helpers (test/unit/cmd/<prog>/) link them.
$(BUILD)/test/unit/cmd/%: $(BUILD)/obj/test/unit/cmd/%.o $$(call cmd_helper_objs,$$(firstword $$(subst /, ,$$*))) $(CMD_COMMON_OBJS) $(TESTUTIL_OBJS) $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -o $@ $(filter %.o,$^) $(LINK_TF) $(CHECK_LIBS) $(LDLIBS) $(CMD_LIBS)

$(BUILD)/test/%: $(BUILD)/obj/test/%.o $(TESTUTIL_OBJS) $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -o $@ $< $(TESTUTIL_OBJS) $(LINK_TF) $(CHECK_LIBS) $(LDLIBS)

# C++ tests link the shared library: they may use only what it exports.
$(CXX_TEST_BINS): $(BUILD)/%: %.cc $(SHARED_LINKS) $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS_TEST) -o $@ $< -L$(LIBDIR) -ltf -Wl,-rpath,$(abspath $(LIBDIR)) $(CHECK_LIBS)

# check: the README's test command. Installs what is missing, then builds
# and runs every unit test binary in a sub-make (so pkg-config sees the
# freshly installed packages). The script tests (test/api: exports and
# install; test/lint: the lint itself) run with the binaries.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
check: deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(TEST_BINS) $(STATIC) $(SHARED_LINKS) $(CMD_BINS) \
	  $(if $(TESTS)$(SANITIZE),,$(BENCH_BINS) $(EXAMPLE_BINS)) >/dev/null
	@$(MAKE) --no-print-directory test-run

# lint: every rule of scripts/lint.py over the tree; the symbols rule reads
# the shared library, so it is built first. LINT_RULES="layers length" limits it.
LINT_RULES ?=
lint: deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(SHARED) >/dev/null
	@/usr/bin/python3 scripts/lint.py --lib $(SHARED) --jobs $(JOBS) $(foreach r,$(LINT_RULES),--rule $(r))

# The scripts under test/api (exports, install) learn the build through
# these variables.
test-run: info $(STATIC) $(TEST_BINS)
	@TF_BUILD=$(BUILD) TF_CC="$(CC)" TF_SANFLAGS="$(SANFLAGS)" TF_SONAME=$(SONAME) \
	  TF_VERSION=$(VERSION) scripts/run-tests.sh $(TEST_BINS) $(API_TESTS)

BENCH_CFLAGS = $(CFLAGS) $(PKG_CFLAGS)
# bench_dist and bench_replicas start and watch the daemons with tfctl's
# process helpers.
BENCH_EXTRA_OBJS = $(if $(filter bench_dist bench_replicas,$(notdir $@)),$(call cmd_helper_objs,tfctl))
$(BUILD)/bench/%: bench/%.c $(STATIC) $(call cmd_helper_objs,tfctl) $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $(BENCH_EXTRA_OBJS) $(LINK_TF) $(LDLIBS)

bench-matmul: deps
	@$(MAKE) --no-print-directory $(BUILD)/bench/bench_matmul
	@$(BUILD)/bench/bench_matmul

# Examples: examples/<name>/<name>.c, one program each. A full make check
# builds them and the benchmarks too, so a change that breaks their link
# is caught without running them.
EXAMPLE_BINS := $(patsubst %.c,$(BUILD)/%,$(wildcard examples/*/*.c))
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/*.c))
$(BUILD)/examples/%: examples/%.c $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $(LINK_TF) $(LDLIBS)

FASHION := $(BUILD)/examples/fashion_mnist/fashion_mnist

# The word2vec integration test runs the example against its cluster.
$(BUILD)/test/integration/word2vec_test: $(BUILD)/examples/word2vec/word2vec

# demo: the README's first command: a local cluster of real daemons trains
# the Fashion-MNIST MLP as a sync job (scripts/demo.sh); last line
# test_accuracy: X. demo-local: the same model in-process (the example).
demo: deps
	@$(MAKE) --no-print-directory $(CMD_BINS)
	@scripts/demo.sh

demo-local: deps
	@$(MAKE) --no-print-directory $(FASHION)
	@$(FASHION) --model mlp

bench-train: deps
	@INSTALL_EXTRAS=1 scripts/install-deps.sh
	@$(MAKE) --no-print-directory $(BUILD)/bench/bench_train
	@$(BUILD)/bench/bench_train

bench-executor: deps
	@$(MAKE) --no-print-directory $(BUILD)/bench/bench_executor
	@$(BUILD)/bench/bench_executor

# bench-loop: parallel_iterations' speedup and a long loop's peak memory.
bench-loop: deps
	@$(MAKE) --no-print-directory $(BUILD)/bench/bench_loop
	@$(BUILD)/bench/bench_loop

# bench-dist: the loopback figures; starts build/bin/tfmaster and
# build/bin/tfworker (a 1 master, 1 ps, 1 worker cluster on free ports).
bench-dist: deps
	@$(MAKE) --no-print-directory $(BINDIR)/tfmaster $(BINDIR)/tfworker $(BUILD)/bench/bench_dist
	@$(BUILD)/bench/bench_dist --bin $(BINDIR)

# bench-replicas: null training steps of 1, 2 and 4 workers (scalar, dense
# 100 MB, sparse 100 MB vs 1 GB) after OSDI 2016 Fig. 6, and Fashion-MNIST
# jobs with 1 and 2 workers, sync and async, on local clusters of real
# daemons (bench/bench_replicas.c; 1-4 minutes, docs/benchmarks.md).
bench-replicas: deps
	@$(MAKE) --no-print-directory $(BINDIR)/tfmaster $(BINDIR)/tfworker $(BUILD)/bench/bench_replicas
	@$(BUILD)/bench/bench_replicas --bin $(BINDIR) --jobs conf/jobs

# soak: 10,000 null and 1,000 100 MB steps on a local cluster with every
# daemon's RSS sampled (build/soak.csv), plotted to docs/soak-rss.png.
soak: deps
	@$(MAKE) --no-print-directory $(BINDIR)/tfmaster $(BINDIR)/tfworker $(BUILD)/bench/bench_dist
	@$(BUILD)/bench/bench_dist --bin $(BINDIR) --soak $(BUILD)/soak.csv
	@command -v gnuplot >/dev/null || apt-get install -y -q gnuplot-nox >/dev/null
	@gnuplot -e "csv='$(BUILD)/soak.csv'; out='docs/soak-rss.png'" scripts/soak.gnuplot
	@echo "soak: docs/soak-rss.png"
# chaos: the chaos test (test/integration/chaos_test.c) RUNS times: a
# Fashion-MNIST sync job survives 5 SIGKILLs of random tasks per run;
# prints each run's accuracy and recovery times (docs/benchmarks.md).
RUNS ?= 3
chaos: deps
	@$(MAKE) --no-print-directory $(CMD_BINS) $(BUILD)/test/integration/chaos_test
	@CHAOS_RUNS=$(RUNS) CK_FORK=no $(BUILD)/test/integration/chaos_test

# bench-tstream: 100 MB over the tensor stream against raw TCP and one NNG
# message, in process (bench/bench_tstream.c).
bench-tstream: deps
	@$(MAKE) --no-print-directory $(BUILD)/bench/bench_tstream
	@$(BUILD)/bench/bench_tstream

docs: $(BUILD)/tools/gen_ops_doc
	$(BUILD)/tools/gen_ops_doc > docs/ops.md

$(BUILD)/tools/%: tools/%.c $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $< $(LINK_TF) $(LDLIBS)

# Fuzz harnesses (clang + libFuzzer): make fuzz FUZZ_TIME=20; then the
# network fuzz test (test/integration/netfuzz_test.c, 30 s in make check)
# against running daemons for NETFUZZ_TIME seconds.
FUZZ_TIME ?= 10
NETFUZZ_TIME ?= 300
fuzz:
	@scripts/run-fuzz.sh $(FUZZ_TIME)
	@$(MAKE) --no-print-directory $(CMD_BINS) $(BUILD)/test/integration/netfuzz_test
	@NETFUZZ_SECS=$(NETFUZZ_TIME) CK_FORK=no $(BUILD)/test/integration/netfuzz_test

# install: PREFIX (default /usr/local) and the GNU directory variables below
# may be overridden; DESTDIR stages the tree elsewhere (packaging, tests).
# Installs what `make` built (SANITIZE=... installs that build), building
# what is missing first: run `make` as yourself before `sudo make install`.
PREFIX      ?= /usr/local
bindir      ?= $(PREFIX)/bin
libdir      ?= $(PREFIX)/lib
includedir  ?= $(PREFIX)/include
datadir     ?= $(PREFIX)/share
docdir      ?= $(datadir)/doc/tf
confdir     ?= $(datadir)/tf/conf
completionsdir ?= $(datadir)/bash-completion/completions
pkgconfigdir ?= $(libdir)/pkgconfig
# /etc for the system prefixes (the units read /etc/tf/cluster.yaml), else
# under PREFIX; systemd 252 reads units from /usr/local/lib/systemd/system
# and /usr/lib/systemd/system (systemd-analyze unit-paths).
sysconfdir  ?= $(if $(filter /usr /usr/local,$(PREFIX)),/etc,$(PREFIX)/etc)
systemdunitdir ?= $(PREFIX)/lib/systemd/system
INSTALL     ?= install

INST_HEADERS := $(sort $(wildcard include/tf/*.h))
INST_CONF    := $(sort $(wildcard conf/*.yaml))
INST_DOCS    := README.md $(sort $(wildcard docs/*.md))
INST_PROGS   := $(notdir $(CMD_BINS))
INST_UNITS   := systemd/tfmaster.service systemd/tfworker@.service
# The units name /usr/local/bin, its docs and /etc/tf: the installed paths.
UNIT_SED = s|/usr/local/bin/|$(bindir)/|g; s|/usr/local/share/doc/tf/|$(docdir)/|g; s|/etc/tf/|$(sysconfdir)/tf/|g
# A directory for tf.pc, relative to ${prefix} when it is under PREFIX.
pc_dir = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
# Static-link flags for tf.pc: the dependencies of libtf.a, one of each.
PC_LIBS_PRIVATE = $(strip $(shell printf '%s\n' $(LDLIBS) | awk '!seen[$$0]++' | tr '\n' ' '))

install: $(STATIC) $(SHARED_LINKS) $(CMD_BINS)
	$(INSTALL) -d $(DESTDIR)$(includedir)/tf $(DESTDIR)$(libdir) $(DESTDIR)$(pkgconfigdir) \
	  $(DESTDIR)$(bindir) $(DESTDIR)$(confdir) $(DESTDIR)$(docdir) $(DESTDIR)$(completionsdir)
	$(INSTALL) -m 644 $(INST_HEADERS) $(DESTDIR)$(includedir)/tf/
	$(INSTALL) -m 644 $(STATIC) $(DESTDIR)$(libdir)/
	$(INSTALL) -m 755 $(SHARED_REAL) $(DESTDIR)$(libdir)/
	ln -sf libtf.so.$(VERSION) $(DESTDIR)$(libdir)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(libdir)/libtf.so
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(call pc_dir,$(libdir))|; s|@INCLUDEDIR@|$(call pc_dir,$(includedir))|' \
	  -e 's|@VERSION@|$(VERSION)|; s|@LIBS_PRIVATE@|$(PC_LIBS_PRIVATE)|' \
	  tf.pc.in > $(DESTDIR)$(pkgconfigdir)/tf.pc
	chmod 644 $(DESTDIR)$(pkgconfigdir)/tf.pc
	$(INSTALL) -m 755 $(CMD_BINS) $(DESTDIR)$(bindir)/
	$(INSTALL) -m 644 cmd/tfctl/tfctl.bash $(DESTDIR)$(completionsdir)/tfctl
	$(INSTALL) -m 644 $(INST_CONF) $(DESTDIR)$(confdir)/
	$(INSTALL) -m 644 $(INST_DOCS) $(DESTDIR)$(docdir)/
	$(INSTALL) -d $(DESTDIR)$(systemdunitdir) $(DESTDIR)$(sysconfdir)/tf
	for u in $(INST_UNITS); do sed -e '$(UNIT_SED)' $$u > $(DESTDIR)$(systemdunitdir)/$${u##*/} && \
	  chmod 644 $(DESTDIR)$(systemdunitdir)/$${u##*/} || exit 1; done
	@if [ -e $(DESTDIR)$(sysconfdir)/tf/cluster.yaml ]; then \
	  echo "install: keeping the existing $(DESTDIR)$(sysconfdir)/tf/cluster.yaml"; \
	else $(INSTALL) -m 644 systemd/cluster.yaml $(DESTDIR)$(sysconfdir)/tf/cluster.yaml; fi

# Removes exactly what install put there (the example config only while it
# is unchanged), then the directories that are tf's own (include/tf,
# share/tf, share/doc/tf, etc/tf) if they are empty.
uninstall:
	rm -f $(addprefix $(DESTDIR)$(includedir)/tf/,$(notdir $(INST_HEADERS)))
	rm -f $(addprefix $(DESTDIR)$(libdir)/,libtf.a libtf.so $(SONAME) libtf.so.$(VERSION))
	rm -f $(DESTDIR)$(pkgconfigdir)/tf.pc
	rm -f $(addprefix $(DESTDIR)$(bindir)/,$(INST_PROGS))
	rm -f $(DESTDIR)$(completionsdir)/tfctl
	rm -f $(addprefix $(DESTDIR)$(confdir)/,$(notdir $(INST_CONF)))
	rm -f $(addprefix $(DESTDIR)$(docdir)/,$(notdir $(INST_DOCS)))
	rm -f $(addprefix $(DESTDIR)$(systemdunitdir)/,$(notdir $(INST_UNITS)))
	@c=$(DESTDIR)$(sysconfdir)/tf/cluster.yaml; if cmp -s systemd/cluster.yaml $$c; then rm -f $$c; \
	  elif [ -e $$c ]; then echo "uninstall: keeping $$c (changed since install)"; fi
	@for d in $(DESTDIR)$(includedir)/tf $(DESTDIR)$(confdir) $(DESTDIR)$(datadir)/tf $(DESTDIR)$(docdir) \
	  $(DESTDIR)$(sysconfdir)/tf; do \
	  rmdir "$$d" 2>/dev/null || true; done

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

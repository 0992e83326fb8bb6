# freqctl: one Makefile for the BPF programs, the loader, the tests and the tools.
#
#   make            what is installed, into build/: the freqctl binary (with its BPF
#                   programs), the nginx module, the man pages; nothing else
#   make test       install what the tests need, build the tests, tools and fuzzers, run
#                   every test suite
#   make check      build and run what needs neither root nor the network nor apt:
#                   the unit tests, the L7 engine under ASan/UBSan, the fuzz corpora
#                   replayed, the docs' static part (installs nothing: says what is missing)
#   make bench      XDP cost against xdp-filter (each path, and under a flood of 1M spoofed sources)
#                   and through libxdp's dispatcher; nginx req/s
#                   and worker CPU time against limit_req, its instructions per request (callgrind);
#                   L7 per key against fixed values and Redis; one change published with 1M bans
#                   stored; the agent's store-to-enforced time; fleet policies: Redis commands per
#                   1,000 requests and the agents' CPU (four nodes, one Redis)
#   make demo       the self-contained demo (namespace, attach, ban, traffic): installs and
#                   builds only what it uses (tools/build/install-deps.sh demo)
#   make fuzz       each fuzz target for FUZZ_SECONDS (default 60); make test replays their corpora
#   make all-dev    everything: what make builds, and the tests, tools and fuzzers
#   make deps       install the Debian packages make builds with (install-deps.sh build)
#   make install    the binary, the nginx module, the unit, man pages, completion
#                   (PREFIX=/usr/local, DESTDIR; make uninstall removes them)
#   make deb        the Debian packages freqctl and libnginx-mod-http-freqctl, in build/deb
#
# The loader is layered, and the include paths enforce it: loader/lib (with
# lib/store, the policy store, and lib/publish, what writes the store to the
# BPF maps and nginx's shm) is a static library that knows no front end;
# loader/cmd (the CLI), loader/agent and loader/http are front ends over it.
# A library object is compiled with the library's headers only, so an include
# from it up into a command does not build.

.DELETE_ON_ERROR:
.SUFFIXES:
# Keep generated skeletons and objects: they are not throwaway intermediates.
.SECONDARY:

B        := build
# The one place the version is written: the binary, /metrics, the console and
# the packages (debian/changelog must agree; tests/integration/test_install.sh checks).
FC_VERSION := $(shell cat VERSION)
CC       ?= gcc
CLANG    ?= clang
# In /usr/sbin, which a user's PATH may not hold (make check runs unprivileged).
BPFTOOL  ?= $(shell PATH="$$PATH:/usr/sbin:/sbin" command -v bpftool || echo bpftool)
PKG_CONFIG ?= pkg-config
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)

pc_cflags = $(shell $(PKG_CONFIG) --cflags $(1) 2>/dev/null)
pc_libs   = $(shell $(PKG_CONFIG) --libs $(1) 2>/dev/null)

# libxdp (Debian libxdp-dev) lets freqctl share the XDP hook through its
# dispatcher; without it, attach takes the hook directly, as it always did.
LIBXDP    := $(shell $(PKG_CONFIG) --exists libxdp 2>/dev/null && echo libxdp)
LIB_PKGS  := libbpf libelf zlib sqlite3 jansson $(LIBXDP)
HTTP_PKGS := libmicrohttpd
# Loaded on first use (loader/lib/fc_dl.h): their headers, not their libraries.
# hiredis (the agent's Redis client, loader/lib/redis) is too, but its headers
# are included as <hiredis/...> without its flags: their -D_FILE_OFFSET_BITS=64
# turns pread into pread64, past test_l7's --wrap=pread.
DL_PKGS   := libpq $(HTTP_PKGS)

CFLAGS   ?= -O2 -g
WARN     := -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-missing-field-initializers
FC_CFLAGS = $(CPPFLAGS) $(CFLAGS) $(WARN) -D_GNU_SOURCE -MMD -MP $(INC) $(call pc_cflags,$(LIB_PKGS) $(DL_PKGS)) \
	    $(if $(LIBXDP),-DFC_HAVE_LIBXDP)

LIB_LIBS  := $(call pc_libs,$(LIB_PKGS)) -lpthread
# The freqctl binary takes libbpf, libxdp and jansson in statically (each is
# BSD-2-Clause or MIT; libbpf and libxdp dual-licensed so): each shared
# library costs a command's process its mapping and relocation before main
# (page faults, dear under a hypervisor). libelf (LGPL/GPL), SQLite and zlib
# (lintian: embedded-library) stay shared.
BIN_STATIC_PKGS := $(LIBXDP) libbpf jansson
BIN_LIBS  := -Wl,-Bstatic $(call pc_libs,$(BIN_STATIC_PKGS)) -Wl,-Bdynamic \
	     $(call pc_libs,$(filter-out $(BIN_STATIC_PKGS),$(LIB_PKGS))) -lpthread

TEST_LIBS := $(call pc_libs,cmocka)

# Include paths, per layer.
LIB_INC   := -Imaps -Iloader/lib -Iloader/lib/store -Iloader/lib/publish -Iloader/lib/redis -I$(B)
HTTP_INC  := $(LIB_INC) -Iloader/http
CMD_INC   := $(HTTP_INC) -Iloader/cmd -Iloader/agent
L7_INC    := -Imaps -Ingx_bridge
TEST_INC  := $(CMD_INC) -Ingx_bridge -Itests -Itests/bpf

BPF_CFLAGS := -O2 -g -target bpf -mcpu=v3 -Wall -Werror -Imaps -Ibpf \
	      $(if $(MULTIARCH),-I/usr/include/$(MULTIARCH)) -MMD -MP

LIB_SRCS    := $(wildcard loader/lib/*.c loader/lib/store/*.c loader/lib/publish/*.c loader/lib/redis/*.c)
HTTP_SRCS   := $(wildcard loader/http/*.c)
FRONT_SRCS  := $(wildcard loader/cmd/*.c loader/agent/*.c)
LIB_A       := $(B)/libfreqctl.a
HTTP_A      := $(B)/libfreqctl_http.a
L7_OBJ      := $(B)/ngx_bridge/fc_l7.o
# Generated headers: the skeletons, the maps' shapes and the version.
GEN_HDRS    := $(B)/freqctl.skel.h $(B)/fc_clock_probe.skel.h $(B)/fc_map_shapes.h $(B)/fc_version.h

UNIT_TESTS  := $(patsubst tests/unit/%.c,$(B)/tests/%,$(wildcard tests/unit/test_*.c))
BPF_TESTS   := $(patsubst tests/bpf/%.c,$(B)/tests/%,$(wildcard tests/bpf/test_*.c))
# The L7 engine's tests (test_l7*, by topic, over the fixtures of
# fc_test_l7.c) run under AddressSanitizer: they feed corrupt shm to the reader.
ASAN        := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
L7_TESTS    := $(patsubst tests/unit/%.c,$(B)/tests/%,$(wildcard tests/unit/test_l7*.c))
ASAN_OBJS   := $(patsubst %.c,$(B)/asan/%.o,tests/unit/fc_test_l7.c ngx_bridge/fc_l7.c $(LIB_SRCS))
NGX_MODULE  := $(B)/ngx_http_freqctl_module.so
NGX_SRCS    := $(wildcard ngx_bridge/*.c ngx_bridge/*.h) ngx_bridge/config $(wildcard maps/*.h)
# Man pages from their scdoc sources, and the bash completion.
MAN_PAGES   := $(patsubst doc/%.scd,$(B)/man/%,$(wildcard doc/*.scd))
COMPLETION  := tools/pkg/freqctl.bash-completion
TOOLS       := $(B)/fc_bench $(B)/fc_l7_bench $(B)/fc_agent_bench $(B)/fc_redis_probe

# Fuzz targets (tests/fuzz/): clang's libFuzzer with ASan and UBSan, over
# code built again with coverage for them, in $(B)/fuzz.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_FLAGS   := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ         := $(patsubst tests/fuzz/%.c,$(B)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_LIB     := $(B)/fuzz/libfreqctl.a
FUZZ_COMMON  := $(B)/fuzz/tests/fuzz/fc_fuzz.o

.PHONY: all all-dev test check bench demo deps clean fuzz install uninstall deb programs
# The default goal: what install installs (programs, below), fast.
all: programs
# What make test, bench and fuzz build besides.
DEV_PROGS := $(UNIT_TESTS) $(BPF_TESTS) $(TOOLS) $(FUZZ) $(B)/tests/fc_redis_it $(B)/tests/fc_fleet_script_it \
	     $(B)/tests/fc_fleet_engine_it $(B)/tests/fc_fleet_gcra_it
all-dev: programs $(DEV_PROGS)

# BPF objects and their generated skeletons: the programs, and the empty
# program the benchmark compares against (its object beside the other
# objects of tools/bench/).
$(B)/%.bpf.o: bpf/%.bpf.c | $(B)
	$(CLANG) $(BPF_CFLAGS) -MF $(@:.o=.d) -c $< -o $@

$(B)/tools/bench/%.bpf.o: tools/bench/%.bpf.c | $(B)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -MF $(@:.o=.d) -c $< -o $@

$(B)/%.skel.h: $(B)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $* > $@

$(B)/bench_empty.skel.h $(B)/bench_flood.skel.h: $(B)/bench_%.skel.h: $(B)/tools/bench/bench_%.bpf.o
	$(BPFTOOL) gen skeleton $< name bench_$* > $@

# The benchmark's programs (the empty one, the flood's wrapper) are the
# benchmark's alone: make does not build them.
FC_BENCH_OBJ := $(addprefix $(B)/tools/bench/,fc_bench.o fc_bench_store.o fc_bench_progs.o fc_bench_flood.o)
$(FC_BENCH_OBJ): | $(B)/bench_empty.skel.h $(B)/bench_flood.skel.h

# The pinned maps' shapes, read from the object at build time (a host tool,
# built alone: the objects' rule waits for this header).
$(B)/fc_map_shapes: tools/build/fc_map_shapes.c maps/fc_maps.h | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(WARN) -Imaps $(call pc_cflags,libbpf) $< -o $@ $(call pc_libs,libbpf)

$(B)/fc_map_shapes.h: $(B)/freqctl.bpf.o $(B)/fc_map_shapes
	$(B)/fc_map_shapes $< > $@

# Generated, so that only what includes it is rebuilt when VERSION changes.
$(B)/fc_version.h: VERSION | $(B)
	printf '#define FC_VERSION "%s"\n' '$(FC_VERSION)' > $@

# Userspace objects, each layer with its own include path; those including a
# generated header wait for it.
$(B)/loader/lib/%.o $(B)/asan/loader/lib/%.o $(B)/fuzz/loader/lib/%.o: INC = $(LIB_INC)
$(B)/loader/http/%.o $(B)/fuzz/loader/http/%.o: INC = $(HTTP_INC)
$(B)/loader/cmd/%.o $(B)/loader/agent/%.o $(B)/asan/loader/agent/%.o $(B)/fuzz/loader/agent/%.o: INC = $(CMD_INC)
$(B)/ngx_bridge/%.o $(B)/asan/ngx_bridge/%.o $(B)/fuzz/ngx_bridge/%.o: INC = $(L7_INC)
$(B)/tests/%.o $(B)/asan/tests/%.o $(B)/tools/%.o: INC = $(TEST_INC)
$(B)/fuzz/tests/%.o: INC = $(TEST_INC) -Itests/fuzz

$(B)/%.o: %.c | $(GEN_HDRS)
	@mkdir -p $(@D)
	$(CC) $(FC_CFLAGS) -c $< -o $@

$(B)/asan/%.o: %.c | $(GEN_HDRS)
	@mkdir -p $(@D)
	$(CC) $(FC_CFLAGS) $(ASAN) -c $< -o $@

$(B)/fuzz/%.o: %.c | $(GEN_HDRS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FC_CFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

# The console's page is built into the binary (.incbin, which -MMD does not see).
CONSOLE_PAGE := $(wildcard loader/http/console/*)
$(B)/loader/http/fc_console_page.o $(B)/fuzz/loader/http/fc_console_page.o: $(CONSOLE_PAGE)
# So is the fleet's script.
$(B)/loader/agent/fc_fleet_redis.o $(B)/fuzz/loader/agent/fc_fleet_redis.o: loader/agent/fc_fleet_sync.lua

$(LIB_A): $(LIB_SRCS:%.c=$(B)/%.o)
	$(AR) rcs $@ $^

$(HTTP_A): $(HTTP_SRCS:%.c=$(B)/%.o)
	$(AR) rcs $@ $^

$(B)/freqctl: $(FRONT_SRCS:%.c=$(B)/%.o) $(HTTP_A) $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(BIN_LIBS)

# Unit tests link the library; the store's test also libpq (it writes SQL of
# its own to a PostgreSQL store), and counts the directory syncs the
# library makes itself (SQLite's, in its own library, are not wrapped).
$(B)/tests/%: $(B)/tests/unit/%.o $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LIB_LIBS) $(TEST_LIBS)

# The agent's escalation is tested apart from the agent's loop.
$(B)/tests/test_escalate: $(B)/tests/unit/test_escalate.o $(B)/loader/agent/fc_escalate.o $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LIB_LIBS) $(TEST_LIBS)

$(B)/tests/test_fleet_reply: $(B)/tests/unit/test_fleet_reply.o $(B)/loader/agent/fc_fleet_reply.o $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LIB_LIBS) $(TEST_LIBS)

$(B)/tests/test_fleet_map: $(B)/tests/unit/test_fleet_map.o $(B)/loader/agent/fc_fleet_map.o $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LIB_LIBS) $(TEST_LIBS)

$(B)/tests/test_fleet_status: $(B)/tests/unit/test_fleet_status.o $(B)/loader/agent/fc_fleet_status.o $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LIB_LIBS) $(TEST_LIBS)

# The heartbeat's parser reads hostile numbers: under UBSan (and ASan).
$(B)/tests/test_fleet_beat: $(patsubst %.c,$(B)/asan/%.o,tests/unit/test_fleet_beat.c loader/agent/fc_fleet_beat.c \
			    loader/agent/fc_fleet_durable.c $(LIB_SRCS))
	$(CC) $(CFLAGS) $(LDFLAGS) $(ASAN) $^ -o $@ $(LIB_LIBS) $(TEST_LIBS)

$(B)/tests/test_http: $(B)/tests/unit/test_http.o $(HTTP_A) $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LIB_LIBS) $(TEST_LIBS)

# The Redis client against real servers, which tests/integration/test_redis.sh
# starts; its admin connection is hiredis's own client, linked.
$(B)/tests/fc_redis_it: $(B)/tests/integration/fc_redis_it.o $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LIB_LIBS) $(TEST_LIBS) $(call pc_libs,hiredis)

# The fleet's script and its calls against a real redis-server, which
# tests/integration/test_fleet_script.sh starts.
FLEET_REDIS_OBJS := $(B)/loader/agent/fc_fleet_redis.o $(B)/loader/agent/fc_fleet_reply.o
$(B)/tests/fc_fleet_script_it: $(B)/tests/integration/fc_fleet_script_it.o $(FLEET_REDIS_OBJS) \
			       $(B)/loader/agent/fc_fleet_sub.o $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LIB_LIBS) $(TEST_LIBS) $(call pc_libs,hiredis)
FLEET_ENGINE_OBJS := $(FLEET_REDIS_OBJS) $(addprefix $(B)/loader/agent/,fc_fleet_engine.o fc_fleet_map.o fc_fleet_status.o \
		     fc_fleet_sub.o fc_fleet_beat.o fc_fleet_durable.o)
$(B)/tests/fc_fleet_engine_it: $(B)/tests/integration/fc_fleet_engine_it.o $(FLEET_ENGINE_OBJS) $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LIB_LIBS) $(TEST_LIBS) $(call pc_libs,hiredis)
$(B)/tests/fc_fleet_gcra_it: $(B)/tests/integration/fc_fleet_gcra_it.o $(FLEET_ENGINE_OBJS) $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LIB_LIBS) $(TEST_LIBS) $(call pc_libs,hiredis)

$(B)/tests/test_store: TEST_LIBS += $(call pc_libs,libpq) -Wl,--wrap=fsync
$(B)/tests/test_l7_keys: TEST_LIBS += -Wl,--wrap=pread

$(L7_TESTS): $(B)/tests/%: $(B)/asan/tests/unit/%.o $(ASAN_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) $(ASAN) $^ -o $@ $(LIB_LIBS) $(TEST_LIBS)

$(B)/tests/%: $(B)/tests/bpf/%.o $(B)/tests/bpf/fc_frames.o $(B)/tests/bpf/fc_test_bpf.o $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LIB_LIBS) $(TEST_LIBS)

# The publishing order's test decides requests with the nginx engine too.
$(B)/tests/test_order: $(L7_OBJ)

$(B)/fc_bench: $(FC_BENCH_OBJ) $(B)/tests/bpf/fc_frames.o $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LIB_LIBS)

# The Redis client by hand (tests/integration/test_redis.sh drives it too).
$(B)/fc_redis_probe: $(B)/tools/fc_redis_probe.o $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LIB_LIBS)

$(B)/fc_agent_bench $(B)/fc_l7_bench: $(B)/%: $(B)/tools/bench/%.o $(B)/tools/bench/fc_worker_map.o $(L7_OBJ) $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LIB_LIBS)

$(FUZZ_LIB): $(LIB_SRCS:%.c=$(B)/fuzz/%.o)
	$(AR) rcs $@ $^

# Each target links what it drives, instrumented, and the library.
$(B)/fuzz/fuzz_l7: $(B)/fuzz/ngx_bridge/fc_l7.o
$(B)/fuzz/fuzz_state: $(B)/fuzz/loader/agent/fc_escalate.o
$(B)/fuzz/fuzz_fleet_reply: $(B)/fuzz/loader/agent/fc_fleet_reply.o $(B)/fuzz/loader/agent/fc_fleet_beat.o \
			    $(B)/fuzz/loader/agent/fc_fleet_durable.o
$(B)/fuzz/fuzz_api: $(HTTP_SRCS:%.c=$(B)/fuzz/%.o)
$(FUZZ): $(B)/fuzz/%: $(B)/fuzz/tests/fuzz/%.o $(FUZZ_COMMON) $(FUZZ_LIB)
	$(FUZZ_CC) $(CFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer $(filter-out $(FUZZ_LIB),$^) $(FUZZ_LIB) -o $@ \
		$(LIB_LIBS)

# Man pages (MAN_PAGES, above): doc/NAME.N.scd, in scdoc(5), built into
# build/man/NAME.N (man -l build/man/freqctl.8 reads one in place);
# tests/integration/test_doc.sh checks them against --help and the module.
SCDOC    ?= scdoc
$(B)/man/%: doc/%.scd
	@mkdir -p $(@D)
	$(SCDOC) < $< > $@

# The nginx module, built against Debian's nginx-dev (see the script).
$(NGX_MODULE): $(NGX_SRCS) tools/build/build-ngx-module.sh | $(B)
	CFLAGS="$(CFLAGS)" LDFLAGS="$(LDFLAGS)" tools/build/build-ngx-module.sh $(B)

$(B):
	@mkdir -p $@

# Each package set (tools/build/install-deps.sh) is checked once, then again
# only when the lists change.
$(B)/.deps-%: tools/build/install-deps.sh | $(B)
	@tools/build/install-deps.sh $*
	@touch $@

deps: $(B)/.deps-build

test: $(B)/.deps-test
	@$(MAKE) --no-print-directory all-dev
	@tests/run.sh

# What make check runs: no BPF tests, no integration suites, no packages.
CHECK_PROGS := $(B)/freqctl $(UNIT_TESTS) $(FUZZ) $(MAN_PAGES)
check:
	@tools/build/install-deps.sh --check check
	@$(MAKE) --no-print-directory $(CHECK_PROGS)
	@tests/run.sh --check

# Each benchmark's results (its stdout; progress goes to stderr, on the
# terminal) are kept in build/bench/NAME.txt too, headed by the command, the
# date, the commit and the load average: doc/performance.md is updated from
# them by hand. pipefail: a benchmark that fails still fails make bench.
bench: SHELL := /bin/bash
bench: .SHELLFLAGS := -o pipefail -c
bench_run = { printf '\# %s%s\n\# %s, %s, load average %s\n' "$$(env | grep -E '^(RUNS|ROUNDS|QUICK|SECS|KEYS|LL|BASE)=' | \
	tr '\n' ' ')" "$(2)" "$$(date -u '+%F %H:%M UTC')" \
	"$$(git describe --always --dirty 2>/dev/null || echo 'no git')" "$$(cut -d' ' -f1-3 /proc/loadavg)"; \
	$(2); } | tee $(B)/bench/$(1).txt

# fc_bench: RUNS runs of ROUNDS rounds (3 and 9); QUICK=1 a small store and short runs.
FC_BENCH_ARGS = $(if $(QUICK), --quick)$(if $(RUNS), --runs $(RUNS))$(if $(ROUNDS), --rounds $(ROUNDS))
bench: $(B)/.deps-bench
	@$(MAKE) --no-print-directory programs $(TOOLS)
	@mkdir -p $(B)/bench
	@$(call bench_run,fc_bench,$(B)/fc_bench$(FC_BENCH_ARGS))
	@echo
	@$(call bench_run,bench_nginx,tools/bench/bench_nginx.sh)
	@echo
	@$(call bench_run,bench_nginx_cost,tools/bench/bench_nginx_cost.sh)
	@echo
	@$(call bench_run,bench_publish,tools/bench/bench_publish.sh)
	@echo
	@$(call bench_run,bench_agent,tools/bench/bench_agent.sh)
	@echo
	@$(call bench_run,bench_fleet,tools/bench/bench_fleet.sh)

fuzz: $(B)/.deps-fuzz
	@$(MAKE) --no-print-directory $(FUZZ)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) tools/fuzz.sh

# The demo runs the binary and the module: only those are built.
demo: $(B)/.deps-demo
	@$(MAKE) --no-print-directory $(B)/freqctl $(NGX_MODULE)
	@tools/demo.sh

clean:
	rm -rf $(B)

# ---- install and packages ----
# PREFIX places freqctl's own files; the module and its load file go where
# Debian's nginx looks for them (modules-available is enabled by a symlink in
# /etc/nginx/modules-enabled, as Debian's module packages do).
PREFIX      ?= /usr/local
SBINDIR     ?= $(PREFIX)/sbin
MANDIR      ?= $(PREFIX)/share/man
UNITDIR     ?= $(PREFIX)/lib/systemd/system
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
NGX_MODDIR  ?= /usr/lib/nginx/modules
NGX_CONFDIR ?= /usr/share/nginx/modules-available
INSTALL     ?= install

$(B)/freqctl-agent.service: tools/pkg/freqctl-agent.service.in | $(B)
	sed 's|@SBINDIR@|$(SBINDIR)|g' $< > $@

$(B)/mod-http-freqctl.conf: | $(B)
	echo 'load_module $(NGX_MODDIR)/ngx_http_freqctl_module.so;' > $@

# Rebuilt each time: the paths inside depend on the make command line.
.PHONY: $(B)/freqctl-agent.service $(B)/mod-http-freqctl.conf

# What install installs, built alone (debian/rules builds only this).
programs: $(B)/freqctl $(NGX_MODULE) $(MAN_PAGES)

install: programs $(B)/freqctl-agent.service $(B)/mod-http-freqctl.conf
	$(INSTALL) -D -m 0755 $(B)/freqctl $(DESTDIR)$(SBINDIR)/freqctl
	$(INSTALL) -D -m 0644 $(NGX_MODULE) $(DESTDIR)$(NGX_MODDIR)/ngx_http_freqctl_module.so
	$(INSTALL) -D -m 0644 $(B)/mod-http-freqctl.conf $(DESTDIR)$(NGX_CONFDIR)/mod-http-freqctl.conf
	$(INSTALL) -D -m 0644 $(B)/freqctl-agent.service $(DESTDIR)$(UNITDIR)/freqctl-agent.service
	$(INSTALL) -D -m 0644 $(COMPLETION) $(DESTDIR)$(BASHCOMPDIR)/freqctl
	for m in $(MAN_PAGES); do $(INSTALL) -D -m 0644 $$m $(DESTDIR)$(MANDIR)/man$${m##*.}/$${m##*/} || exit; done
	@echo "freqctl: installed; enable the module with: ln -s $(NGX_CONFDIR)/mod-http-freqctl.conf" \
		"/etc/nginx/modules-enabled/50-mod-http-freqctl.conf"

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/freqctl $(DESTDIR)$(NGX_MODDIR)/ngx_http_freqctl_module.so \
		$(DESTDIR)$(NGX_CONFDIR)/mod-http-freqctl.conf $(DESTDIR)$(UNITDIR)/freqctl-agent.service \
		$(DESTDIR)$(BASHCOMPDIR)/freqctl
	for m in $(MAN_PAGES); do rm -f $(DESTDIR)$(MANDIR)/man$${m##*.}/$${m##*/}; done

# Debian's own tooling (debian/), in a copy of the tree so the packages and
# dpkg-buildpackage's by-products land in $(B)/deb, not beside the checkout.
deb: $(B)/.deps-deb
	@tools/pkg/build-deb.sh $(B)/deb

-include $(shell find $(B) -name '*.d' 2>/dev/null)

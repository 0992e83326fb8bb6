# freqctl: one Makefile for the BPF programs, the loader, the tests and the tools.
#
#   make            build everything into build/
#   make test       install what the tests need, build, run every test suite
#   make bench      XDP cost against xdp-filter; nginx req/s against limit_req; L7 against Redis
#   make demo       the self-contained demo (namespace, attach, ban, traffic)
#   make deps       install the Debian packages freqctl needs

.DELETE_ON_ERROR:
.SUFFIXES:
# Keep generated skeletons and objects: they are not throwaway intermediates.
.SECONDARY:

B        := build
CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)

CFLAGS   ?= -O2 -g
FC_CFLAGS := $(CFLAGS) -Itests/bpf -Ingx_bridge -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	     -Wno-missing-field-initializers -D_GNU_SOURCE \
	     -Imaps -Iloader -I$(B) -I/usr/include/postgresql -MMD -MP
LDLIBS   := -lbpf -lelf -lz -lsqlite3 -lpq -ljansson -lmicrohttpd -lpthread

BPF_CFLAGS := -O2 -g -target bpf -mcpu=v3 -Wall -Werror -Imaps -Ibpf \
	      $(if $(MULTIARCH),-I/usr/include/$(MULTIARCH)) -MMD -MP

LOADER_SRCS := $(wildcard loader/*.c)
# Everything but main(): linked into the CLI and into the tests.
LIB_SRCS    := $(filter-out loader/freqctl.c,$(LOADER_SRCS))
LIB_OBJS    := $(LIB_SRCS:%.c=$(B)/%.o)
BPF_SRCS    := $(wildcard bpf/*.bpf.c)
SKELS       := $(BPF_SRCS:bpf/%.bpf.c=$(B)/%.skel.h)

UNIT_TESTS  := $(patsubst tests/unit/%.c,$(B)/tests/%,$(wildcard tests/unit/test_*.c))
# The L7 engine's test runs under AddressSanitizer: it feeds corrupt shm to the reader.
ASAN        := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
ASAN_OBJS   := $(patsubst %.c,$(B)/asan/%.o,tests/unit/test_l7.c ngx_bridge/fc_l7.c $(LIB_SRCS))
NGX_MODULE  := $(B)/ngx_http_freqctl_module.so
NGX_SRCS    := $(wildcard ngx_bridge/*.c ngx_bridge/*.h) ngx_bridge/config maps/fc_shm.h maps/fc_limit.h
BPF_TESTS   := $(patsubst tests/bpf/%.c,$(B)/tests/%,$(wildcard tests/bpf/test_*.c))
TOOLS       := $(B)/fc_bench $(B)/fc_l7_bench $(B)/fc_agent_bench

.PHONY: all test bench demo deps clean
all: $(B)/freqctl $(UNIT_TESTS) $(BPF_TESTS) $(TOOLS) $(NGX_MODULE)

# BPF objects and their generated skeletons.
$(B)/%.bpf.o: bpf/%.bpf.c | $(B)
	$(CLANG) $(BPF_CFLAGS) -MF $(@:.o=.d) -c $< -o $@

$(B)/%.skel.h: $(B)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $* > $@

# Userspace objects; those including a skeleton wait for it.
$(B)/%.o: %.c | $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(FC_CFLAGS) -c $< -o $@

# The console's page is built into the binary (.incbin, which -MMD does not see).
CONSOLE_PAGE := loader/console/index.html loader/console/console.js loader/console/console.css
$(B)/loader/fc_console_page.o $(B)/asan/loader/fc_console_page.o: $(CONSOLE_PAGE)

$(B)/freqctl: $(B)/loader/freqctl.o $(LIB_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(B)/asan/%.o: %.c | $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(FC_CFLAGS) -Ingx_bridge $(ASAN) -c $< -o $@

$(B)/tests/test_l7: $(ASAN_OBJS)
	$(CC) $(CFLAGS) $(ASAN) $^ -o $@ $(LDLIBS) -lcmocka

$(B)/fc_agent_bench: $(B)/tools/fc_agent_bench.o $(B)/ngx_bridge/fc_l7.o $(LIB_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(B)/fc_l7_bench: $(B)/tools/fc_l7_bench.o $(B)/ngx_bridge/fc_l7.o $(LIB_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# The nginx module, built against Debian's nginx-dev (see the script).
$(NGX_MODULE): $(NGX_SRCS) tools/build-ngx-module.sh | $(B)
	tools/build-ngx-module.sh $(B)

$(B)/tests/%: $(B)/tests/unit/%.o $(LIB_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS) -lcmocka -lpthread

$(B)/tests/%: $(B)/tests/bpf/%.o $(B)/tests/bpf/fc_frames.o $(B)/tests/bpf/fc_test_bpf.o $(LIB_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS) -lcmocka -lpthread

$(B)/fc_bench: $(B)/tools/fc_bench.o $(B)/tests/bpf/fc_frames.o $(LIB_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(B):
	@mkdir -p $@

deps:
	@tools/install-deps.sh

test: deps
	@$(MAKE) --no-print-directory all
	@tests/run.sh

bench: deps
	@tools/install-deps.sh bench
	@$(MAKE) --no-print-directory all
	@$(B)/fc_bench
	@echo
	@tools/bench_nginx.sh
	@echo
	@tools/bench_agent.sh

demo: deps
	@$(MAKE) --no-print-directory all
	@tools/demo.sh

clean:
	rm -rf $(B)

-include $(shell find $(B) -name '*.d' 2>/dev/null)

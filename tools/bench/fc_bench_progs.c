// SPDX-License-Identifier: BSD-2-Clause
/*
 * The programs fc_bench compares freqctl with, each as its users run it:
 * xdp-filter (Debian xdp-tools) loaded on a veth in the bench's namespace,
 * freqctl through libxdp's dispatcher, and another build's freqctl
 * (--baseline) on the same maps.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "fc_attach.h"
#include "fc_bench.h"
#include "fc_clock.h"
#include "fc_kern.h"

/* Sets the read-only global name (a __u64) of obj to v before it loads, as
 * a skeleton's rodata would be; -1 if obj has none. */
static int fc_rodata_u64(struct bpf_object *obj, const char *name, uint64_t v)
{
	struct btf *btf = bpf_object__btf(obj);
	const struct btf_var_secinfo *vi;
	const struct btf_type *sec;
	struct bpf_map *m;
	const void *init;
	size_t size;
	char *copy;
	int id, i, rc = -1;

	bpf_object__for_each_map(m, obj)
		if (strstr(bpf_map__name(m), ".rodata"))
			break;
	id = btf ? btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC) : -1;
	if (!m || id < 0 || !(init = bpf_map__initial_value(m, &size)))
		return -1;
	sec = btf__type_by_id(btf, (__u32)id);
	vi = btf_var_secinfos(sec);
	for (i = 0; i < btf_vlen(sec); i++, vi++) {
		if (strcmp(btf__name_by_offset(btf, btf__type_by_id(btf, vi->type)->name_off), name) ||
		    vi->size != sizeof(v) || vi->offset + sizeof(v) > size || !(copy = malloc(size)))
			continue;
		memcpy(copy, init, size);
		memcpy(copy + vi->offset, &v, sizeof(v));
		rc = bpf_map__set_initial_value(m, copy, size);
		free(copy);
		break;
	}
	return rc;
}

/* The XDP program of another build's freqctl.bpf.o, on the bench's pinned
 * maps (which must have its layouts), as an fd; -1 if it cannot load. Its
 * clock's tick is set as freqctl attach sets it: without it, it would read
 * the coarse clock's helper, as this build's program does not. */
int fc_baseline(struct bpf_object **obj)
{
	LIBBPF_OPTS(bpf_object_open_opts, oopts, .pin_root_path = fc_b.main.pin);
	struct bpf_program *prog;
	int err;

	*obj = bpf_object__open_file(fc_b.baseline, &oopts);
	if (!*obj) {
		fprintf(stderr, "fc_bench: --baseline %s: %s\n", fc_b.baseline, strerror(errno));
		return -1;
	}
	prog = bpf_object__find_program_by_name(*obj, FC_PROG_XDP);
	if (!prog) {
		fprintf(stderr, "fc_bench: --baseline %s: no program %s\n", fc_b.baseline, FC_PROG_XDP);
		return -1;
	}
	if (fc_rodata_u64(*obj, "fc_tick_ns", fc_clock_tick_ns()) < 0)
		fprintf(stderr, "fc_bench: --baseline %s: no fc_tick_ns: it reads the coarse clock's helper\n",
			fc_b.baseline);
	err = bpf_object__load(*obj);
	if (err) {
		fprintf(stderr, "fc_bench: --baseline %s: cannot load: %s\n", fc_b.baseline, strerror(-err));
		return -1;
	}
	return bpf_program__fd(prog);
}

/* Runs fn(arg) inside the bench's namespace; -1 if it cannot get there. */
int fc_in_ns(int (*fn)(void *), void *arg)
{
	char path[128];
	int self, target, rc = -1;

	snprintf(path, sizeof(path), "/var/run/netns/%s", fc_b.ns);
	self = open("/proc/self/ns/net", O_RDONLY);
	target = open(path, O_RDONLY);
	if (self < 0 || target < 0 || setns(target, CLONE_NEWNET) < 0)
		goto out;
	rc = fn(arg);
	setns(self, CLONE_NEWNET);
out:
	if (self >= 0)
		close(self);
	if (target >= 0)
		close(target);
	return rc;
}

/* The XDP program attached to ifname (in either mode), as an fd. */
static int fc_hook_fd(void *ifname)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	if (bpf_xdp_query((int)if_nametoindex(ifname), 0, &q) || !q.prog_id)
		return -1;
	return bpf_prog_get_fd_by_id(q.prog_id);
}

/* The bench's namespace: two veth pairs, fcb0 for xdp-filter with one
 * rule per family, fcb1 for freqctl in libxdp's dispatcher, fcb2 for the
 * flood's xdp-filter with its exact bans (fcb3 idle). */
int fc_bench_ns(void)
{
	return fc_sh("ip netns add %s && ip -n %s link add fcb0 type veth peer name fcb1 && "
		     "ip -n %s link add fcb2 type veth peer name fcb3 && "
		     "for i in 0 1 2 3; do ip -n %s link set fcb$i up || exit 1; done",
		     fc_b.ns, fc_b.ns, fc_b.ns, fc_b.ns);
}

/* xdp-filter as its users run it: loaded on an interface, one IP rule per
 * family (so that neither map is empty; its IPv4 rule 198.18.0.99). */
int fc_xdp_filter(bool have_ns, const char *ifname, const char **why)
{
	if (system("command -v xdp-filter >/dev/null")) {
		*why = "xdp-filter not installed (Debian xdp-tools)";
		return -1;
	}
	if (!have_ns) {
		*why = "cannot create the bench namespace";
		return -1;
	}
	/* `ip netns exec` gives a fresh /sys: a private bpffs for xdp-filter's pins,
	 * gone with this shell; the program stays attached until the veth goes.
	 * Without libxdp's dispatcher, so that the row is xdp-filter alone, as
	 * freqctl's is freqctl alone; the dispatcher has a row of its own. */
	if (fc_sh("ip netns exec %s sh -c 'mount -t bpf bpf /sys/fs/bpf && "
		  "LIBXDP_SKIP_DISPATCHER=1 xdp-filter load %s && "
		  "xdp-filter ip --mode src 198.18.0.99 && xdp-filter ip --mode src 2001:db8::99' >/dev/null",
		  fc_b.ns, ifname)) {
		*why = "xdp-filter load or ip failed";
		return -1;
	}
	return fc_in_ns(fc_hook_fd, (void *)ifname);
}

/* Attaches freqctl, on the bench's pin dir, to fcb1 the way `freqctl attach`
 * does, and returns the dispatcher libxdp put on the hook. */
int fc_dispatched(void *why)
{
	struct fc_attachment a;
	struct fc_maps m = { .dirfd = -1 };
	struct fc_err err;
	int rc;

	rc = fc_maps_open(fc_b.main.pin, &m, &err);
	if (!rc)
		rc = fc_attach(fc_b.main.pin, &m, "fcb1", FC_MODE_XDP_GENERIC, FC_XDP_PRIO_DEFAULT, &a, &err);
	fc_maps_close(&m);
	if (rc < 0) {
		fprintf(stderr, "fc_bench: freqctl attach: %s\n", err.msg);
		*(const char **)why = "freqctl attach failed";
		return -1;
	}
	if (!a.dispatched) {
#ifdef FC_HAVE_LIBXDP
		*(const char **)why = "libxdp's dispatcher cannot load on this kernel (freqctl -v attach says why)";
#else
		*(const char **)why = "built without libxdp (Debian libxdp-dev)";
#endif
		return -1;
	}
	return fc_hook_fd("fcb1");
}

/* The map of program prog_fd named name, as an fd (-1: none). */
static int fc_prog_map(int prog_fd, const char *name)
{
	struct bpf_prog_info info = { 0 };
	struct bpf_map_info mi;
	__u32 ids[64], len = sizeof(info), mlen, i;
	int fd;

	info.nr_map_ids = 64;
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -1;
	for (i = 0; i < info.nr_map_ids && i < 64; i++) {
		fd = bpf_map_get_fd_by_id(ids[i]);
		memset(&mi, 0, sizeof(mi));
		mlen = sizeof(mi);
		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &mi, &mlen) && !strcmp(mi.name, name))
			return fd;
		if (fd >= 0)
			close(fd);
	}
	return -1;
}

/* Replaces the IPv4 rule of the xdp-filter prog_fd with n exact source
 * bans, 10.0.0.0 upwards as the store's, each with the value xdp-filter
 * wrote for its own rule: a command per address would take minutes. */
int fc_xdp_filter_fill(int prog_fd, long n)
{
	int fd = fc_prog_map(prog_fd, "filter_ipv4"), ncpu = libbpf_num_possible_cpus(), rc = -1;
	struct in_addr rule;
	void *val = NULL;
	__u32 key;
	long i;

	inet_pton(AF_INET, "198.18.0.99", &rule);
	if (fd < 0 || ncpu < 1)
		goto out;
	/* Per-CPU or not, a buffer large enough for either. */
	val = calloc((size_t)ncpu, 64);
	if (!val || bpf_map_lookup_elem(fd, &rule.s_addr, val) || bpf_map_delete_elem(fd, &rule.s_addr))
		goto out;
	for (i = 0; i < n; i++) {
		key = htonl(0x0a000000u + (__u32)i);
		if (bpf_map_update_elem(fd, &key, val, BPF_NOEXIST))
			goto out;
	}
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "fc_bench: xdp-filter's filter_ipv4: cannot hold %ld bans: %s\n", n, strerror(errno));
	free(val);
	if (fd >= 0)
		close(fd);
	return rc;
}

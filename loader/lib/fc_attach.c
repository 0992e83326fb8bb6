// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fc_attach.h"
#include "freqctl.skel.h"

const char *const fc_mode_names[] = {
	[FC_MODE_XDP] = "xdp",
	[FC_MODE_XDP_GENERIC] = "xdp-generic",
	[FC_MODE_TC] = "tc",
	NULL,
};

const char *fc_mode_name(enum fc_mode mode)
{
	return fc_mode_names[mode];
}


/* What runs on one hook of an interface. */
struct fc_hook_prog {
	uint32_t id;
	bool ours; /* a freqctl program using this pin dir's maps */
	char name[BPF_OBJ_NAME_LEN];
};

/* Ours = it uses this pin dir's config map, so another pin dir's freqctl
 * (or any other program) is never mistaken for it. */
static void fc_hook_prog_inspect(const struct fc_maps *m, uint32_t id, struct fc_hook_prog *hp)
{
	struct bpf_prog_info info = {};
	__u32 map_ids[16], len = sizeof(info), i;
	uint32_t cfg_id = fc_obj_id(m->config);
	int fd;

	memset(hp, 0, sizeof(*hp));
	hp->id = id;
	if (!id)
		return;
	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return;
	info.nr_map_ids = sizeof(map_ids) / sizeof(map_ids[0]);
	info.map_ids = (__u64)(unsigned long)map_ids;
	if (!bpf_obj_get_info_by_fd(fd, &info, &len)) {
		memcpy(hp->name, info.name, sizeof(hp->name));
		for (i = 0; i < info.nr_map_ids && i < sizeof(map_ids) / sizeof(map_ids[0]); i++)
			hp->ours |= map_ids[i] == cfg_id;
	}
	close(fd);
}

static uint32_t fc_xdp_flags(enum fc_mode mode)
{
	return mode == FC_MODE_XDP ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
}

static void fc_xdp_query(const struct fc_maps *m, int ifindex, enum fc_mode mode, struct fc_hook_prog *hp)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	if (bpf_xdp_query(ifindex, 0, &q))
		q.drv_prog_id = q.skb_prog_id = 0;
	fc_hook_prog_inspect(m, mode == FC_MODE_XDP ? q.drv_prog_id : q.skb_prog_id, hp);
}

static void fc_tc_query(const struct fc_maps *m, int ifindex, struct fc_hook_prog *hp)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, q, .handle = FC_TC_HANDLE, .priority = FC_TC_PRIORITY);

	libbpf_print_fn_t print;
	int rc;

	/* No clsact qdisc is the common case, not worth libbpf's warning. */
	print = libbpf_set_print(NULL);
	rc = bpf_tc_query(&hook, &q);
	libbpf_set_print(print);
	if (rc)
		q.prog_id = 0;
	fc_hook_prog_inspect(m, q.prog_id, hp);
}

static void fc_hook_query(const struct fc_maps *m, int ifindex, enum fc_mode mode, struct fc_hook_prog *hp)
{
	if (mode == FC_MODE_TC)
		fc_tc_query(m, ifindex, hp);
	else
		fc_xdp_query(m, ifindex, mode, hp);
}

/* Finds freqctl's attachment on ifindex, in whichever mode. */
static bool fc_find_ours(const struct fc_maps *m, int ifindex, enum fc_mode *mode, struct fc_hook_prog *hp)
{
	enum fc_mode md;

	for (md = FC_MODE_XDP; md <= FC_MODE_TC; md++) {
		fc_hook_query(m, ifindex, md, hp);
		if (hp->ours) {
			*mode = md;
			return true;
		}
	}
	return false;
}

static void fc_attachment_set(struct fc_attachment *a, const char *ifname, int ifindex, enum fc_mode mode,
			      uint32_t prog_id)
{
	snprintf(a->ifname, sizeof(a->ifname), "%s", ifname);
	a->ifindex = ifindex;
	a->mode = mode;
	a->prog_id = prog_id;
}

static int fc_ifindex(const char *ifname, struct fc_err *err)
{
	unsigned idx;

	if (strlen(ifname) >= IF_NAMESIZE)
		return fc_err_set(err, "interface \"%s\": name longer than %d characters", ifname, IF_NAMESIZE - 1);
	idx = if_nametoindex(ifname);
	if (!idx)
		return fc_err_set(err, "interface \"%s\": no such interface in this network namespace", ifname);
	return (int)idx;
}

static int fc_attach_xdp(int ifindex, int prog_fd, enum fc_mode mode, const struct fc_hook_prog *cur,
			 const char *ifname, struct fc_err *err)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts);
	uint32_t flags = fc_xdp_flags(mode);
	int old_fd = -1, rc;

	if (cur->ours) {
		/* Swap atomically: no packet goes unfiltered during a reload. */
		old_fd = bpf_prog_get_fd_by_id(cur->id);
		opts.old_prog_fd = old_fd;
		flags |= XDP_FLAGS_REPLACE;
	} else {
		flags |= XDP_FLAGS_UPDATE_IF_NOEXIST;
	}
	rc = bpf_xdp_attach(ifindex, prog_fd, flags, &opts);
	if (old_fd >= 0)
		close(old_fd);
	if (!rc)
		return 0;
	if (rc == -EBUSY || rc == -EEXIST)
		return fc_err_set(err, "interface %s: another XDP program (id %u%s%s) is attached; freqctl does not "
				       "replace it",
				  ifname, cur->id, cur->name[0] ? ", " : "", cur->name);
	if (rc == -EOPNOTSUPP && mode == FC_MODE_XDP)
		return fc_err_set(err, "interface %s: the driver has no native XDP; use --mode xdp-generic or --mode tc",
				  ifname);
	return fc_err_set(err, "interface %s: XDP attach failed: %s", ifname, strerror(-rc));
}

static int fc_attach_tc(int ifindex, int prog_fd, const struct fc_hook_prog *cur, const char *ifname,
			struct fc_err *err)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = FC_TC_HANDLE, .priority = FC_TC_PRIORITY, .prog_fd = prog_fd);
	int rc;

	if (cur->id && !cur->ours)
		return fc_err_set(err, "interface %s: TC ingress filter handle %#x priority %d holds another program "
				       "(id %u); freqctl does not replace it",
				  ifname, FC_TC_HANDLE, FC_TC_PRIORITY, cur->id);
	rc = bpf_tc_hook_create(&hook);
	if (rc && rc != -EEXIST)
		return fc_err_set(err, "interface %s: cannot create the clsact qdisc: %s", ifname, strerror(-rc));
	if (cur->ours)
		opts.flags = BPF_TC_F_REPLACE;
	rc = bpf_tc_attach(&hook, &opts);
	if (rc)
		return fc_err_set(err, "interface %s: TC attach failed: %s", ifname, strerror(-rc));
	return 0;
}

int fc_attach(const char *pin_dir, const struct fc_maps *m, const char *ifname, enum fc_mode mode,
	      struct fc_attachment *out, struct fc_err *err)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = pin_dir);
	struct fc_hook_prog cur;
	struct bpf_program *prog;
	struct freqctl *skel;
	enum fc_mode other;
	int ifindex, rc = -1;

	ifindex = fc_ifindex(ifname, err);
	if (ifindex < 0)
		return -1;
	if (fc_find_ours(m, ifindex, &other, &cur) && other != mode)
		return fc_err_set(err, "interface %s: freqctl is already attached in %s mode; detach it first", ifname,
				  fc_mode_name(other));
	fc_hook_query(m, ifindex, mode, &cur);

	skel = freqctl__open_opts(&opts);
	if (!skel)
		return fc_err_set(err, "cannot open the BPF object: %s", strerror(errno));
	prog = mode == FC_MODE_TC ? skel->progs.freqctl_tc : skel->progs.freqctl_xdp;
	bpf_program__set_autoload(mode == FC_MODE_TC ? skel->progs.freqctl_xdp : skel->progs.freqctl_tc, false);
	if (freqctl__load(skel)) {
		fc_err_set(err, "cannot load %s: %s (run with -v for the verifier log)", bpf_program__name(prog),
			   strerror(errno));
		goto out;
	}
	if (mode == FC_MODE_TC)
		rc = fc_attach_tc(ifindex, bpf_program__fd(prog), &cur, ifname, err);
	else
		rc = fc_attach_xdp(ifindex, bpf_program__fd(prog), mode, &cur, ifname, err);
	if (rc)
		goto out;
	fc_attachment_set(out, ifname, ifindex, mode, fc_obj_id(bpf_program__fd(prog)));
out:
	/* The interface holds the program now; our references can go. */
	freqctl__destroy(skel);
	return rc;
}

int fc_detach(const struct fc_maps *m, const char *ifname, struct fc_attachment *out, struct fc_err *err)
{
	struct fc_hook_prog cur;
	enum fc_mode mode;
	int ifindex, rc;

	ifindex = fc_ifindex(ifname, err);
	if (ifindex < 0)
		return -1;
	if (!fc_find_ours(m, ifindex, &mode, &cur))
		return fc_err_set(err, "interface %s: freqctl is not attached", ifname);
	if (mode == FC_MODE_TC) {
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
		LIBBPF_OPTS(bpf_tc_opts, opts, .handle = FC_TC_HANDLE, .priority = FC_TC_PRIORITY);

		rc = bpf_tc_detach(&hook, &opts);
	} else {
		LIBBPF_OPTS(bpf_xdp_attach_opts, opts);
		int old_fd = bpf_prog_get_fd_by_id(cur.id);

		/* REPLACE semantics: only remove the program if it is still ours. */
		opts.old_prog_fd = old_fd;
		rc = bpf_xdp_detach(ifindex, fc_xdp_flags(mode) | XDP_FLAGS_REPLACE, &opts);
		if (old_fd >= 0)
			close(old_fd);
	}
	if (rc)
		return fc_err_set(err, "interface %s: detach failed: %s", ifname, strerror(-rc));
	fc_attachment_set(out, ifname, ifindex, mode, cur.id);
	return 0;
}

int fc_attachments(const struct fc_maps *m, struct fc_attachment **v, size_t *n, struct fc_err *err)
{
	struct if_nameindex *ifs, *i;
	struct fc_attachment *res;
	struct fc_hook_prog hp;
	enum fc_mode mode;
	size_t cnt = 0, total = 0;

	ifs = if_nameindex();
	if (!ifs)
		return fc_err_set(err, "cannot list interfaces: %s", strerror(errno));
	for (i = ifs; i->if_index; i++)
		total++;
	res = calloc(total ? total : 1, sizeof(*res));
	if (!res) {
		if_freenameindex(ifs);
		return fc_err_set(err, "out of memory");
	}
	for (i = ifs; i->if_index; i++) {
		if (!fc_find_ours(m, (int)i->if_index, &mode, &hp))
			continue;
		fc_attachment_set(&res[cnt++], i->if_name, (int)i->if_index, mode, hp.id);
	}
	if_freenameindex(ifs);
	*v = res;
	*n = cnt;
	return 0;
}

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
#ifdef FC_HAVE_LIBXDP
#include <xdp/libxdp.h>
#endif

#include "fc_attach.h"
#include "fc_clock.h"
#include "fc_pins.h"
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
	uint32_t id; /* on the hook; freqctl's own when a dispatcher runs it */
	bool ours;   /* a freqctl program of this pin dir (fc_pins.h) */
	bool stale;  /* ... reading a map that is not the pinned one */
	uint32_t map[FC_NMAPS]; /* ... the maps it reads */
	char name[BPF_OBJ_NAME_LEN];
	bool dispatcher; /* the hook holds libxdp's dispatcher */
	uint32_t prio;   /* freqctl's run priority there */
	size_t n_peers;  /* and the programs it runs besides freqctl */
	struct fc_xdp_peer peers[FC_XDP_MAX_PROGS];
};

/* Ours = a freqctl program reading this pin dir's maps or loaded for it
 * (fc_pins.h), so another pin dir's freqctl (or any other program) is never
 * mistaken for it. */
static void fc_hook_prog_inspect(const struct fc_pin_ref *r, uint32_t id, struct fc_hook_prog *hp)
{
	struct fc_prog_maps p;

	memset(hp, 0, sizeof(*hp));
	hp->id = id;
	if (!id || fc_prog_maps_read(r, id, &p) < 0)
		return;
	memcpy(hp->name, p.name, sizeof(hp->name));
	hp->ours = p.ours;
	hp->stale = p.stale;
	memcpy(hp->map, p.map, sizeof(hp->map));
}

static uint32_t fc_xdp_flags(enum fc_mode mode)
{
	return mode == FC_MODE_XDP ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
}

#ifdef FC_HAVE_LIBXDP
static enum xdp_attach_mode fc_xdp_mode(enum fc_mode mode)
{
	return mode == FC_MODE_XDP ? XDP_MODE_NATIVE : XDP_MODE_SKB;
}

/* libxdp's account of what it tried, with -v only: what went wrong is
 * freqctl's to say, in its own words (as libbpf's, fc_libbpf_print). */
static int fc_libxdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	if (!fc_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* hp is the program on the hook: if it is libxdp's dispatcher in this mode,
 * finds freqctl among the programs it runs and lists the others. */
static void fc_dispatcher_query(const struct fc_pin_ref *r, int ifindex, enum fc_mode mode, struct fc_hook_prog *hp)
{
	struct xdp_program *p = NULL;
	struct xdp_multiprog *mp;
	struct fc_xdp_peer *peer;
	struct fc_hook_prog cp;

	libxdp_set_print(fc_libxdp_print);
	mp = xdp_multiprog__get_from_ifindex(ifindex);
	if (!mp || libxdp_get_error(mp))
		return;
	if (xdp_multiprog__is_legacy(mp) || xdp_multiprog__attach_mode(mp) != fc_xdp_mode(mode) ||
	    xdp_program__id(xdp_multiprog__main_prog(mp)) != hp->id)
		goto out;
	hp->dispatcher = true;
	while ((p = xdp_multiprog__next_prog(p, mp))) {
		fc_hook_prog_inspect(r, xdp_program__id(p), &cp);
		if (cp.ours && !hp->ours) {
			hp->ours = true;
			hp->stale = cp.stale;
			memcpy(hp->map, cp.map, sizeof(hp->map));
			hp->id = cp.id;
			hp->prio = xdp_program__run_prio(p);
			continue;
		}
		if (hp->n_peers == FC_XDP_MAX_PROGS)
			break;
		peer = &hp->peers[hp->n_peers++];
		peer->id = xdp_program__id(p);
		peer->prio = xdp_program__run_prio(p);
		snprintf(peer->name, sizeof(peer->name), "%s", xdp_program__name(p));
	}
out:
	xdp_multiprog__close(mp);
}
#endif

static void fc_xdp_query(const struct fc_pin_ref *r, int ifindex, enum fc_mode mode, struct fc_hook_prog *hp)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	if (bpf_xdp_query(ifindex, 0, &q))
		q.drv_prog_id = q.skb_prog_id = 0;
	fc_hook_prog_inspect(r, mode == FC_MODE_XDP ? q.drv_prog_id : q.skb_prog_id, hp);
#ifdef FC_HAVE_LIBXDP
	if (hp->id && !hp->ours)
		fc_dispatcher_query(r, ifindex, mode, hp);
#endif
}

static void fc_tc_query(const struct fc_pin_ref *r, int ifindex, struct fc_hook_prog *hp)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, q, .handle = FC_TC_HANDLE, .priority = FC_TC_PRIORITY);

	if (bpf_tc_query(&hook, &q))
		q.prog_id = 0; /* no clsact qdisc, or no filter of ours */
	fc_hook_prog_inspect(r, q.prog_id, hp);
}

static void fc_hook_query(const struct fc_pin_ref *r, int ifindex, enum fc_mode mode, struct fc_hook_prog *hp)
{
	if (mode == FC_MODE_TC)
		fc_tc_query(r, ifindex, hp);
	else
		fc_xdp_query(r, ifindex, mode, hp);
}

/* Finds freqctl's attachment on ifindex, in whichever mode. */
static bool fc_find_ours(const struct fc_pin_ref *r, int ifindex, enum fc_mode *mode, struct fc_hook_prog *hp)
{
	enum fc_mode md;

	for (md = FC_MODE_XDP; md <= FC_MODE_TC; md++) {
		fc_hook_query(r, ifindex, md, hp);
		if (hp->ours) {
			*mode = md;
			return true;
		}
	}
	return false;
}

static void fc_attachment_set(struct fc_attachment *a, const char *ifname, int ifindex, enum fc_mode mode,
			      const struct fc_hook_prog *hp)
{
	snprintf(a->ifname, sizeof(a->ifname), "%s", ifname);
	a->ifindex = ifindex;
	a->mode = mode;
	a->prog_id = hp->id;
	a->stale = hp->stale;
	memcpy(a->map, hp->map, sizeof(a->map));
	a->dispatched = hp->dispatcher;
	a->prio = hp->prio;
	a->n_peers = hp->n_peers;
	memcpy(a->peers, hp->peers, sizeof(a->peers));
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

/* The XDP program on ifindex, in whichever mode (the kernel runs one mode
 * at a time), as bpftool names it: "id 9271, name xdpfilt_alw_all, driver
 * mode" into buf; false when there is none. */
static bool fc_xdp_holder(int ifindex, char *buf, size_t len)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct bpf_prog_info info = {};
	__u32 ilen = sizeof(info), id;
	const char *where;
	int fd;

	if (bpf_xdp_query(ifindex, 0, &q))
		return false;
	id = q.drv_prog_id ? q.drv_prog_id : q.skb_prog_id ? q.skb_prog_id : q.hw_prog_id;
	where = q.drv_prog_id ? "driver" : q.skb_prog_id ? "generic" : "offload";
	if (!id)
		return false;
	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &ilen))
		info.name[0] = '\0';
	if (fd >= 0)
		close(fd);
	snprintf(buf, len, "id %u%s%.*s, %s mode", id, info.name[0] ? ", name " : "", (int)sizeof(info.name), info.name,
		 where);
	return true;
}

/* Refuses to attach in an XDP mode where another program holds the XDP
 * hook (in this mode or the other), naming it; 0 when none does. */
static int fc_xdp_taken(int ifindex, const char *ifname, struct fc_err *err)
{
	char who[BPF_OBJ_NAME_LEN + 64];

	if (!fc_xdp_holder(ifindex, who, sizeof(who)))
		return 0;
	return fc_err_set(err, "interface %s: another XDP program (%s) is attached; freqctl does not replace it, "
			       "but runs beside it with --mode tc",
			  ifname, who);
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
	if ((rc == -EBUSY || rc == -EEXIST) && fc_xdp_taken(ifindex, ifname, err))
		return -1;
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
				       "(id %u%s%.*s); freqctl does not replace it",
				  ifname, FC_TC_HANDLE, FC_TC_PRIORITY, cur->id, cur->name[0] ? ", name " : "",
				  (int)sizeof(cur->name), cur->name);
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

/* The skeleton opened on pin_dir's maps, with only mode's program to load. */
static struct freqctl *fc_skel_open(const char *pin_dir, enum fc_mode mode, struct fc_err *err)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = pin_dir);
	struct freqctl *skel;

	skel = freqctl__open_opts(&opts);
	if (!skel) {
		fc_err_set(err, "cannot open the BPF object: %s", strerror(errno));
		return NULL;
	}
	skel->rodata->fc_tick_ns = fc_clock_tick_ns();
	fc_pin_mark_dir(pin_dir, skel->rodata->fc_pin_mark.dir);
	bpf_program__set_autoload(mode == FC_MODE_TC ? skel->progs.freqctl_xdp : skel->progs.freqctl_tc, false);
	return skel;
}

static int fc_attach_direct(struct freqctl *skel, int ifindex, enum fc_mode mode, const struct fc_hook_prog *cur,
			    const char *ifname, struct fc_err *err)
{
	struct bpf_program *prog = mode == FC_MODE_TC ? skel->progs.freqctl_tc : skel->progs.freqctl_xdp;

	if (freqctl__load(skel))
		return fc_err_set(err, "cannot load %s: %s (run with -v for the verifier log)", bpf_program__name(prog),
				  strerror(errno));
	if (mode == FC_MODE_TC)
		return fc_attach_tc(ifindex, bpf_program__fd(prog), cur, ifname, err);
	return fc_attach_xdp(ifindex, bpf_program__fd(prog), mode, cur, ifname, err);
}

#ifdef FC_HAVE_LIBXDP
/* Removes the program id from the dispatcher on ifindex; libxdp swaps in a
 * dispatcher without it, or removes the dispatcher with the last program. */
static int fc_dispatcher_remove(int ifindex, enum fc_mode mode, uint32_t id)
{
	struct xdp_program *p;
	int rc;

	p = xdp_program__from_id(id);
	if (!p || libxdp_get_error(p))
		return -ENOENT;
	rc = xdp_program__detach(p, ifindex, fc_xdp_mode(mode), 0);
	xdp_program__close(p);
	return rc;
}

/* Adds freqctl to libxdp's dispatcher on ifindex, which libxdp creates when
 * the hook is free and otherwise rebuilds with the programs it ran, then
 * swaps atomically. The skeleton is opened, not loaded: libxdp loads the
 * object as an extension of the dispatcher, its maps reused from the pin
 * dir as by any load. Where the kernel cannot run a dispatcher, libxdp
 * attaches the program directly itself, when the hook is free. */
static int fc_attach_dispatched(struct freqctl *skel, int ifindex, enum fc_mode mode, uint32_t prio,
				const struct fc_hook_prog *cur, const char *ifname, struct fc_err *err)
{
	DECLARE_LIBXDP_OPTS(xdp_program_opts, xo, .obj = skel->obj, .prog_name = FC_PROG_XDP);
	struct xdp_program *p;
	int rc;

	libxdp_set_print(fc_libxdp_print);
	p = xdp_program__create(&xo);
	if (!p)
		return fc_err_set(err, "libxdp cannot take %s from the BPF object: %s", FC_PROG_XDP, strerror(errno));
	/* The dispatcher runs the next program only after the actions listed:
	 * what freqctl lets through goes on to the others. */
	xdp_program__set_chain_call_enabled(p, XDP_PASS, true);
	xdp_program__set_run_prio(p, prio);
	rc = xdp_program__attach(p, ifindex, fc_xdp_mode(mode), 0);
	xdp_program__close(p);
	if (rc)
		return fc_err_set(err, "interface %s: libxdp's dispatcher: %s", ifname, strerror(-rc));
	/* The old freqctl goes only now: for the moment both ran, nothing went
	 * unfiltered (a packet passing both was counted, and charged, twice). */
	if (cur->ours) {
		rc = fc_dispatcher_remove(ifindex, mode, cur->id);
		if (rc)
			return fc_err_set(err, "interface %s: the new program is in libxdp's dispatcher, but the old "
					       "one (id %u) could not be removed: %s",
					  ifname, cur->id, strerror(-rc));
	}
	return 0;
}
#endif

/* In the XDP modes, through libxdp's dispatcher when the hook is free or
 * runs one; a program attached directly (freqctl's own included) is dealt
 * with as without libxdp. When the hook was free and the dispatcher fails
 * (a driver, a kernel without program extensions), directly after all, on a
 * fresh skeleton: libxdp has loaded, or failed to load, the first. */
static int fc_attach_prog(const char *pin_dir, struct freqctl **skel, int ifindex, enum fc_mode mode, uint32_t prio,
			  const struct fc_hook_prog *cur, const char *ifname, struct fc_err *err)
{
#ifdef FC_HAVE_LIBXDP
	int rc;

	if (mode != FC_MODE_TC && (!cur->id || cur->dispatcher)) {
		rc = fc_attach_dispatched(*skel, ifindex, mode, prio, cur, ifname, err);
		/* Into a dispatcher running others, or not at all: a direct
		 * attach could not share the hook with them. */
		if (!rc || cur->dispatcher)
			return rc;
		fc_debug("%s; attaching directly instead", err->msg);
		freqctl__destroy(*skel);
		*skel = fc_skel_open(pin_dir, mode, err);
		if (!*skel)
			return -1;
	}
#else
	(void)pin_dir;
	(void)prio;
#endif
	return fc_attach_direct(*skel, ifindex, mode, cur, ifname, err);
}

int fc_attach(const char *pin_dir, const struct fc_maps *m, const char *ifname, enum fc_mode mode, uint32_t prio,
	      struct fc_attachment *out, struct fc_err *err)
{
	struct fc_hook_prog cur, now;
	struct freqctl *skel;
	struct fc_pin_ref r;
	enum fc_mode other;
	int ifindex, rc;

	ifindex = fc_ifindex(ifname, err);
	if (ifindex < 0)
		return -1;
	fc_pin_ref_init(&r, pin_dir, m);
	if (fc_find_ours(&r, ifindex, &other, &cur) && other != mode)
		return fc_err_set(err, "interface %s: freqctl is already attached in %s mode; detach it first", ifname,
				  fc_mode_name(other));
	fc_hook_query(&r, ifindex, mode, &cur);
	/* Another program on the XDP hook, unless a dispatcher freqctl can
	 * join runs it: refused before any library tries. */
	if (mode != FC_MODE_TC && !cur.ours && !cur.dispatcher && fc_xdp_taken(ifindex, ifname, err))
		return -1;
	skel = fc_skel_open(pin_dir, mode, err);
	if (!skel)
		return -1;
	rc = fc_attach_prog(pin_dir, &skel, ifindex, mode, prio, &cur, ifname, err);
	if (rc)
		goto out;
	fc_hook_query(&r, ifindex, mode, &now);
	if (!now.ours) {
		rc = fc_err_set(err, "interface %s: attached, but freqctl's program is not on the hook any more", ifname);
		goto out;
	}
	if (mode != FC_MODE_TC && !now.dispatcher)
		fc_debug("interface %s: freqctl runs alone on the XDP hook, not through libxdp's dispatcher", ifname);
	fc_attachment_set(out, ifname, ifindex, mode, &now);
out:
	/* The interface holds the program now; our references can go. */
	freqctl__destroy(skel);
	return rc;
}

int fc_detach(const char *pin_dir, const struct fc_maps *m, const char *ifname, struct fc_attachment *out,
	      struct fc_err *err)
{
	struct fc_hook_prog cur;
	struct fc_pin_ref r;
	enum fc_mode mode;
	int ifindex, rc;

	ifindex = fc_ifindex(ifname, err);
	if (ifindex < 0)
		return -1;
	fc_pin_ref_init(&r, pin_dir, m);
	if (!fc_find_ours(&r, ifindex, &mode, &cur))
		return fc_err_set(err, "interface %s: freqctl is not attached", ifname);
	if (mode == FC_MODE_TC) {
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
		LIBBPF_OPTS(bpf_tc_opts, opts, .handle = FC_TC_HANDLE, .priority = FC_TC_PRIORITY);

		rc = bpf_tc_detach(&hook, &opts);
#ifdef FC_HAVE_LIBXDP
	} else if (cur.dispatcher) {
		/* Only freqctl leaves; the others keep running. */
		rc = fc_dispatcher_remove(ifindex, mode, cur.id);
#endif
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
	fc_attachment_set(out, ifname, ifindex, mode, &cur);
	return 0;
}

int fc_attachments(const struct fc_pin_ref *r, struct fc_attachment **v, size_t *n, struct fc_err *err)
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
		if (!fc_find_ours(r, (int)i->if_index, &mode, &hp))
			continue;
		fc_attachment_set(&res[cnt++], i->if_name, (int)i->if_index, mode, &hp);
	}
	if_freenameindex(ifs);
	*v = res;
	*n = cnt;
	return 0;
}

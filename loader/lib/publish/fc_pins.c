// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "fc_attach.h"
#include "fc_pins.h"

/* More maps than a freqctl program of any version reads. */
#define FC_PROG_MAPS_MAX 64
/* The largest .rodata searched for the mark. */
#define FC_RODATA_MAX 4096

void fc_pin_mark_dir(const char *pin_dir, char out[FC_PIN_MARK_DIR])
{
	char real[PATH_MAX];
	size_t len;

	if (!realpath(pin_dir, real))
		snprintf(real, sizeof(real), "%s", pin_dir);
	len = strlen(real);
	while (len > 1 && real[len - 1] == '/')
		real[--len] = '\0';
	if (len >= FC_PIN_MARK_DIR)
		len = 0;
	memcpy(out, real, len);
	out[len] = '\0';
}

void fc_pin_ref_init(struct fc_pin_ref *r, const char *pin_dir, const struct fc_maps *m)
{
	size_t i;

	fc_pin_mark_dir(pin_dir, r->dir);
	for (i = 0; i < FC_NMAPS; i++)
		r->pinned[i] = m->fd[i] >= 0 ? fc_obj_id(m->fd[i]) : 0;
}

static bool fc_prog_is_freqctl(const char *name)
{
	return !strcmp(name, FC_PROG_XDP) || !strcmp(name, FC_PROG_TC);
}

/* Whether the .rodata map fd (value_size bytes) carries a mark naming dir. */
static bool fc_rodata_marks(int fd, __u32 value_size, const char *dir)
{
	struct fc_pin_mark mark;
	__u32 zero = 0, off;
	bool found = false;
	char *v;

	if (!*dir || value_size < sizeof(mark) || value_size > FC_RODATA_MAX || !(v = malloc(value_size)))
		return false;
	if (bpf_map_lookup_elem(fd, &zero, v) == 0) {
		for (off = 0; !found && off + sizeof(mark) <= value_size; off += 8) {
			memcpy(&mark, v + off, sizeof(mark));
			found = mark.magic == FC_PIN_MARK_MAGIC && memchr(mark.dir, '\0', sizeof(mark.dir)) &&
				!strcmp(mark.dir, dir);
		}
	}
	free(v);
	return found;
}

/* The index in FC_MAPS of a map's name, or -1. */
static int fc_map_index(const char *name)
{
	int i;

	for (i = 0; i < FC_NMAPS; i++)
		if (!strcmp(name, fc_map_names[i]))
			return i;
	return -1;
}

static int fc_id_desc(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* Names the maps of ids not pinned here: those of FC_MAPS go into p->map;
 * 1 if the .rodata among them marks r's dir, 0 if it marks another (the
 * rest is not looked at: the program is another pin dir's), -1 if none
 * does. Newest first: libbpf makes a program's .rodata after its other
 * maps, so another pin dir's program costs one map's look. */
static int fc_prog_unpinned(const struct fc_pin_ref *r, __u32 *ids, size_t n, bool overlap, struct fc_prog_maps *p)
{
	struct bpf_map_info info;
	int mark = -1, fd, k;
	size_t i, len;
	__u32 ilen;

	qsort(ids, n, sizeof(*ids), fc_id_desc);
	for (i = 0; i < n && (mark || overlap); i++) {
		fd = bpf_map_get_fd_by_id(ids[i]);
		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		ilen = sizeof(info);
		if (bpf_obj_get_info_by_fd(fd, &info, &ilen) == 0) {
			len = strnlen(info.name, sizeof(info.name));
			if ((k = fc_map_index(info.name)) >= 0)
				p->map[k] = ids[i];
			else if (len >= 7 && !strcmp(info.name + len - 7, ".rodata"))
				mark = fc_rodata_marks(fd, info.value_size, r->dir);
		}
		close(fd);
	}
	return mark;
}

int fc_prog_maps_read(const struct fc_pin_ref *r, uint32_t id, struct fc_prog_maps *p)
{
	struct bpf_prog_info info = {};
	__u32 ids[FC_PROG_MAPS_MAX], unpinned[FC_PROG_MAPS_MAX], len = sizeof(info);
	size_t i, n, nun = 0, overlap = 0;
	int fd, k, rc;

	memset(p, 0, sizeof(*p));
	p->id = id;
	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return -1;
	info.nr_map_ids = FC_PROG_MAPS_MAX;
	info.map_ids = (__u64)(unsigned long)ids;
	rc = bpf_obj_get_info_by_fd(fd, &info, &len);
	close(fd);
	if (rc)
		return -1;
	memcpy(p->name, info.name, sizeof(p->name) - 1);
	if (!fc_prog_is_freqctl(p->name))
		return 0;
	n = info.nr_map_ids < FC_PROG_MAPS_MAX ? info.nr_map_ids : FC_PROG_MAPS_MAX;
	for (i = 0; i < n; i++) {
		for (k = 0; k < FC_NMAPS && ids[i] != r->pinned[k]; k++)
			;
		if (k < FC_NMAPS && ids[i]) {
			p->map[k] = ids[i];
			overlap++;
		} else {
			unpinned[nun++] = ids[i];
		}
	}
	/* Every pinned map among its own (the common case): nothing to name. */
	if (overlap == FC_NMAPS) {
		p->ours = true;
		return 0;
	}
	p->ours = fc_prog_unpinned(r, unpinned, nun, overlap > 0, p) == 1 || overlap > 0;
	for (k = 0; p->ours && k < FC_NMAPS; k++)
		p->stale |= p->map[k] && p->map[k] != r->pinned[k];
	return 0;
}

bool fc_pins_suspect(const struct fc_pin_ref *r)
{
	struct fc_prog_maps p;
	__u32 id = 0;

	while (bpf_prog_get_next_id(id, &id) == 0)
		if (fc_prog_maps_read(r, id, &p) == 0 && p.stale)
			return true;
	return false;
}

/* The one map of each name the attached programs read (want), or -1 with
 * err naming two that differ and what to do. */
static int fc_pins_wanted(const char *pin_dir, const struct fc_attachment *v, size_t n, const struct fc_pin_ref *r,
			  uint32_t want[FC_NMAPS], struct fc_err *err)
{
	size_t i, j, from[FC_NMAPS] = { 0 };
	int k;

	memset(want, 0, sizeof(uint32_t) * FC_NMAPS);
	for (i = 0; i < n; i++) {
		for (k = 0; k < FC_NMAPS; k++) {
			if (!v[i].map[k])
				continue;
			if (!want[k]) {
				want[k] = v[i].map[k];
				from[k] = i;
				continue;
			}
			if (want[k] == v[i].map[k])
				continue;
			/* Name one whose map is not the pinned one: attached again, it
			 * reads the pinned maps. */
			j = v[i].map[k] == r->pinned[k] ? from[k] : i;
			return fc_err_set(err,
					  "pin dir %s: the programs attached here read different maps: %s on %s (prog "
					  "%u) and on %s (prog %u) are not the same map (ids %u and %u), and only one "
					  "is pinned. Attach freqctl again to %s ('freqctl attach %s --mode %s'): it "
					  "then reads the pinned maps, as every publish writes them",
					  pin_dir, fc_map_names[k], v[from[k]].ifname, v[from[k]].prog_id, v[i].ifname,
					  v[i].prog_id, want[k], v[i].map[k], v[j].ifname, v[j].ifname,
					  fc_mode_name(v[j].mode));
		}
	}
	return 0;
}

/* The map id that the program attached to a reads as FC_MAPS[k], if its
 * shape is this version's: its fd, or -1. */
static int fc_map_wanted(const char *pin_dir, int k, uint32_t id, const struct fc_attachment *a, struct fc_err *err)
{
	char diff[96];
	int fd;

	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return fc_err_set(err, "pin dir %s: map %s (id %u) of %s: %s", pin_dir, fc_map_names[k], id, a->ifname,
				  strerror(errno));
	if (fc_map_shape_diff(fd, k, diff, sizeof(diff)) < 0 || diff[0]) {
		close(fd);
		return fc_err_set(err,
				  "pin dir %s: %s attached to %s (prog %u) reads a %s that is not pinned here, of "
				  "another version (%s): detach it ('freqctl detach %s'), then attach this version",
				  pin_dir, a->mode == FC_MODE_TC ? FC_PROG_TC : FC_PROG_XDP, a->ifname, a->prog_id,
				  fc_map_names[k], diff[0] ? diff : "unreadable", a->ifname);
	}
	return fd;
}

/* Pins fd at pin_dir/FC_MAPS[k] in place of what is there: under a new
 * name, then renamed over it, so the path is never without a map. */
static int fc_pin_over(const char *pin_dir, int k, int fd, struct fc_err *err)
{
	char path[PATH_MAX], tmp[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", pin_dir, fc_map_names[k]);
	/* bpffs refuses dots in names. */
	snprintf(tmp, sizeof(tmp), "%s/%s_repin%d", pin_dir, fc_map_names[k], (int)getpid());
	unlink(tmp);
	if (bpf_obj_pin(fd, tmp) < 0 || rename(tmp, path) < 0) {
		fc_err_set(err, "pin dir %s: cannot pin %s again: %s", pin_dir, fc_map_names[k], strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* What fc_pins_repair says it did. */
static void fc_pins_said(const char *pin_dir, const bool *moved, const struct fc_attachment *a, size_t n,
			 struct fc_err *note)
{
	char names[FC_NMAPS * 16];
	size_t len = 0;
	int k, nmaps = 0;

	names[0] = '\0';
	for (k = 0; k < FC_NMAPS; k++)
		if (moved[k] && ++nmaps && len < sizeof(names))
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", len ? ", " : "",
						fc_map_names[k]);
	if (nmaps == FC_NMAPS)
		fc_err_set(note,
			   "pin dir %s: none of the maps pinned there was one that the program attached to %s (prog "
			   "%u%s) reads (the pins removed, or bpffs mounted again): pinned the program's maps there "
			   "again",
			   pin_dir, a->ifname, a->prog_id, n > 1 ? ", and the others attached" : "");
	else
		fc_err_set(note,
			   "pin dir %s: %s pinned there %s not the map%s that the program attached to %s (prog %u%s) "
			   "reads (a pin removed, or bpffs mounted again): pinned the program's map%s there again",
			   pin_dir, names, nmaps > 1 ? "were" : "was", nmaps > 1 ? "s" : "", a->ifname, a->prog_id,
			   n > 1 ? ", and the others attached" : "", nmaps > 1 ? "s" : "");
}

int fc_pins_repair(const char *pin_dir, struct fc_maps *m, struct fc_err *note, struct fc_err *err)
{
	struct fc_attachment *v = NULL;
	uint32_t want[FC_NMAPS];
	struct fc_pin_ref r;
	size_t n = 0, i, stale = 0, at = 0;
	bool moved[FC_NMAPS] = { false };
	int k, fds[FC_NMAPS], rc = -1;

	for (k = 0; k < FC_NMAPS; k++)
		fds[k] = -1;
	fc_pin_ref_init(&r, pin_dir, m);
	if (!fc_pins_suspect(&r))
		return 0;
	/* Only what runs on a hook counts: a program some process merely
	 * holds (or one a replace has just taken off) is not enforcing. */
	if (fc_attachments(&r, &v, &n, err) < 0)
		return -1;
	for (i = 0; i < n; i++)
		if (v[i].stale && !stale++)
			at = i;
	if (!stale) {
		rc = 0;
		goto out;
	}
	/* Every map checked before any is pinned: a refusal changes nothing. */
	if (fc_pins_wanted(pin_dir, v, n, &r, want, err) < 0)
		goto out;
	for (k = 0; k < FC_NMAPS; k++)
		if (want[k] && want[k] != r.pinned[k] && (fds[k] = fc_map_wanted(pin_dir, k, want[k], &v[at], err)) < 0)
			goto out;
	for (k = 0; k < FC_NMAPS; k++) {
		if (fds[k] < 0)
			continue;
		if (fc_pin_over(pin_dir, k, fds[k], err) < 0)
			goto out;
		if (m->fd[k] >= 0)
			close(m->fd[k]);
		m->fd[k] = fds[k];
		fds[k] = -1;
		moved[k] = true;
	}
	fc_pins_said(pin_dir, moved, &v[at], n, note);
	rc = 1;
out:
	for (k = 0; k < FC_NMAPS; k++)
		if (fds[k] >= 0)
			close(fds[k]);
	free(v);
	return rc;
}

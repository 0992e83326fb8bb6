// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fc_attach.h"
#include "fc_kern.h"
#include "fc_step.h"
#include "fc_map_shapes.h"
#include "fc_owner.h"
#include "fc_pins.h"
#include "freqctl.skel.h"

#define FC_BPFFS_ROOT "/sys/fs/bpf"

static bool fc_is_bpffs(const char *path)
{
	struct statfs st;

	return statfs(path, &st) == 0 && st.f_type == BPF_FS_MAGIC;
}

/* The nearest existing ancestor of path (path itself if it exists). */
static void fc_existing_ancestor(const char *path, char buf[PATH_MAX])
{
	char *slash;

	snprintf(buf, PATH_MAX, "%s", path);
	while (access(buf, F_OK) != 0 && (slash = strrchr(buf, '/')) && slash != buf)
		*slash = '\0';
}

int fc_pin_dir_prepare(const char *pin_dir, struct fc_err *err)
{
	char anc[PATH_MAX], buf[PATH_MAX];
	bool bpffs;
	char *p;

	if (strlen(pin_dir) >= PATH_MAX - 16)
		return fc_err_set(err, "pin dir %s: path too long", pin_dir);
	fc_existing_ancestor(pin_dir, anc);
	bpffs = fc_is_bpffs(anc);
	/* There already, on bpffs: nothing to mount or make (every command
	 * that publishes comes here). */
	if (bpffs && !strcmp(anc, pin_dir))
		return 0;
	if (!bpffs) {
		/* As bpftool does: a fresh machine has /sys/fs/bpf but nothing on it. */
		if (strncmp(pin_dir, FC_BPFFS_ROOT "/", sizeof(FC_BPFFS_ROOT)) != 0 ||
		    strcmp(anc, FC_BPFFS_ROOT) != 0)
			return fc_err_set(err, "pin dir %s: %s is not on a BPF filesystem (mount -t bpf bpf DIR)",
					  pin_dir, anc);
		if (mount("bpf", FC_BPFFS_ROOT, "bpf", 0, "mode=0700") < 0)
			return fc_err_set(err, "pin dir %s: cannot mount bpffs at %s: %s", pin_dir, FC_BPFFS_ROOT,
					  strerror(errno));
	}
	snprintf(buf, sizeof(buf), "%s", pin_dir);
	for (p = buf + 1;; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return fc_err_set(err, "pin dir %s: cannot create %s: %s", pin_dir, buf, strerror(errno));
		*p = c;
		if (!c)
			break;
	}
	return 0;
}

int fc_maps_match(const struct bpf_object *obj, struct fc_err *err)
{
	const struct bpf_map *map;
	size_t i, npinned = 0;

	bpf_object__for_each_map(map, obj) {
		if (!bpf_map__pin_path(map))
			continue; /* the program's own scratch and .rodata */
		for (i = 0; i < FC_NMAPS && strcmp(bpf_map__name(map), fc_map_names[i]); i++)
			;
		if (i == FC_NMAPS)
			return fc_err_set(err, "BPF object: pinned map %s is not in FC_MAPS (maps/fc_maps.h)",
					  bpf_map__name(map));
		npinned++;
	}
	if (npinned != FC_NMAPS)
		return fc_err_set(err, "BPF object: %zu pinned maps, FC_MAPS (maps/fc_maps.h) lists %d", npinned,
				  FC_NMAPS);
	return 0;
}

/* Loads the object with no program, which creates and pins the missing maps
 * (libbpf reuses the pinned ones and checks they are compatible). */
static int fc_maps_create(const char *pin_dir, struct fc_err *err)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = pin_dir);
	struct freqctl *skel;
	int rc;

	skel = freqctl__open_opts(&opts);
	if (!skel)
		return fc_err_set(err, "pin dir %s: cannot open the BPF object: %s", pin_dir, strerror(errno));
	rc = fc_maps_match(skel->obj, err);
	if (rc) {
		freqctl__destroy(skel);
		return -1;
	}
	bpf_program__set_autoload(skel->progs.freqctl_xdp, false);
	bpf_program__set_autoload(skel->progs.freqctl_tc, false);
	rc = freqctl__load(skel);
	if (rc)
		fc_err_set(err, "pin dir %s: cannot create the maps: %s (run with -v for libbpf's log)", pin_dir,
			   strerror(-rc));
	freqctl__destroy(skel);
	return rc ? -1 : 0;
}

#define FC_MAP_STR(name) FC_MAP_NAME(name),
const char *const fc_map_names[FC_NMAPS] = { FC_MAPS(FC_MAP_STR) };
#undef FC_MAP_STR

/* The shape the BPF object gives each map of FC_MAPS, read from it at build
 * time (tools/build/fc_map_shapes.c). */
struct fc_map_shape {
	__u32 type, key_size, value_size, map_flags, max_entries;
};
static const struct fc_map_shape fc_map_shapes[FC_NMAPS] = { FC_MAP_SHAPES };

/* How a pinned map differs from the BPF object's, in words, or "" if it
 * does not. A hash's capacity may differ (tests shrink the LRUs); an
 * array's is its layout. */
static void fc_map_diff(const struct bpf_map_info *have, const struct fc_map_shape *want, char *buf, size_t size)
{
	const char *h = libbpf_bpf_map_type_str(have->type), *w = libbpf_bpf_map_type_str(want->type);
	bool array = have->type == BPF_MAP_TYPE_ARRAY || have->type == BPF_MAP_TYPE_PERCPU_ARRAY;

	buf[0] = '\0';
	if (have->type != want->type)
		snprintf(buf, size, "a %s, not a %s", h ? h : "map of another type", w ? w : "?");
	else if (have->key_size != want->key_size)
		snprintf(buf, size, "%u-byte keys, not %u", have->key_size, want->key_size);
	else if (have->value_size != want->value_size)
		snprintf(buf, size, "%u-byte values, not %u", have->value_size, want->value_size);
	else if (have->map_flags != want->map_flags)
		snprintf(buf, size, "flags %#x, not %#x", have->map_flags, want->map_flags);
	else if (array && have->max_entries != want->max_entries)
		snprintf(buf, size, "%u entries, not %u", have->max_entries, want->max_entries);
}

int fc_map_shape_diff(int fd, int i, char *diff, size_t size)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -1;
	fc_map_diff(&info, &fc_map_shapes[i], diff, size);
	return 0;
}

/*
 * Opens the maps pinned under pin_dir into m (those that are; the others'
 * fds -1) and checks each has the shape this freqctl's BPF object gives it.
 * Pins another version of freqctl left behind would otherwise fail
 * somewhere in libbpf ("parameter mismatch"), or, read by a reader, be
 * misread. The number of maps missing (err names the first), or -1.
 */
static int fc_maps_get(const char *pin_dir, struct fc_maps *m, struct fc_err *err)
{
	char path[PATH_MAX], diff[96];
	int missing = 0;
	size_t i;

	if (fc_owner_check(FC_OWNED_PIN_DIR, pin_dir, err) < 0)
		return -1;
	for (i = 0; i < FC_NMAPS; i++) {
		snprintf(path, sizeof(path), "%s/%s", pin_dir, fc_map_names[i]);
		m->fd[i] = bpf_obj_get(path);
		if (m->fd[i] < 0) {
			if (errno != ENOENT)
				return fc_err_set(err, "pinned map %s: %s", path, strerror(errno));
			if (!missing++)
				fc_err_set(err, "pinned map %s: %s", path, strerror(errno));
			continue;
		}
		if (fc_map_shape_diff(m->fd[i], (int)i, diff, sizeof(diff)) < 0)
			return fc_err_set(err, "pinned map %s: %s", path, strerror(errno));
		if (diff[0])
			return fc_err_set(err,
					  "pinned map %s: %s: another version's pins. Detach freqctl ('freqctl "
					  "detach IFACE' takes any version's), remove %s (the store keeps bans and "
					  "policies), run 'freqctl sync', then 'freqctl attach IFACE'; or use another "
					  "--pin-dir",
					  path, diff, pin_dir);
	}
	return missing;
}

static void fc_maps_init(struct fc_maps *m)
{
	size_t i;

	m->dirfd = -1;
	for (i = 0; i < FC_NMAPS; i++)
		m->fd[i] = -1;
}

int fc_maps_open(const char *pin_dir, struct fc_maps *m, struct fc_err *err)
{
	int missing;

	fc_maps_init(m);
	if (fc_pin_dir_prepare(pin_dir, err) < 0)
		return -1;
	missing = fc_maps_get(pin_dir, m, err);
	if (missing > 0) {
		fc_maps_close(m);
		if (fc_maps_create(pin_dir, err) < 0)
			return -1;
		missing = fc_maps_get(pin_dir, m, err);
	}
	if (missing)
		goto fail;
	m->dirfd = open(pin_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (m->dirfd < 0) {
		fc_err_set(err, "pin dir %s: %s", pin_dir, strerror(errno));
		goto fail;
	}
	return 0;
fail:
	fc_maps_close(m);
	return -1;
}

int fc_maps_open_config(const char *pin_dir, struct fc_maps *m, struct fc_err *err)
{
	char path[PATH_MAX];

	fc_maps_init(m);
	if (fc_owner_check(FC_OWNED_PIN_DIR, pin_dir, err) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", pin_dir, fc_map_names[FC_MAP_IDX_config]);
	m->config = bpf_obj_get(path);
	if (m->config < 0)
		return fc_err_set(err, "pinned map %s: %s", path, strerror(errno));
	return 0;
}

int fc_maps_open_existing(const char *pin_dir, struct fc_maps *m, struct fc_err *err)
{
	int missing;

	fc_maps_init(m);
	/* Every pin is checked before a missing one says "nothing published":
	 * another version's pins miss maps too. */
	missing = fc_maps_get(pin_dir, m, err);
	if (missing)
		fc_maps_close(m);
	return missing > 0 ? 1 : missing; /* 1: nothing published here yet */
}

int fc_maps_open_pinned(const char *pin_dir, struct fc_maps *m, struct fc_err *err)
{
	int missing;

	fc_maps_init(m);
	missing = fc_maps_get(pin_dir, m, err);
	if (missing < 0)
		fc_maps_close(m);
	return missing;
}

void fc_maps_close(struct fc_maps *m)
{
	size_t i;

	for (i = 0; i < FC_NMAPS; i++) {
		if (m->fd[i] >= 0)
			close(m->fd[i]);
		m->fd[i] = -1;
	}
	if (m->dirfd >= 0)
		close(m->dirfd);
	m->dirfd = -1;
}

int fc_maps_unpin(const char *pin_dir, const struct fc_maps *m, struct fc_err *err)
{
	struct fc_attachment *v = NULL;
	char path[PATH_MAX];
	struct fc_pin_ref r;
	size_t n = 0, i;

	fc_pin_ref_init(&r, pin_dir, m);
	if (fc_attachments(&r, &v, &n, err) < 0)
		return -1;
	free(v);
	if (n)
		return fc_err_set(err, "pin dir %s: %zu interface%s here still run%s its programs: detach %s first",
				  pin_dir, n, n == 1 ? "" : "s", n == 1 ? "s" : "", n == 1 ? "it" : "them");
	for (i = 0; i < FC_NMAPS; i++) {
		snprintf(path, sizeof(path), "%s/%s", pin_dir, fc_map_names[i]);
		if (unlink(path) < 0 && errno != ENOENT)
			return fc_err_set(err, "pinned map %s: %s", path, strerror(errno));
	}
	/* Anything else there is not freqctl's to remove. */
	if (rmdir(pin_dir) < 0 && errno != ENOENT && errno != ENOTEMPTY)
		return fc_err_set(err, "pin dir %s: %s", pin_dir, strerror(errno));
	return 0;
}

int fc_maps_lock(const struct fc_maps *m, const char *pin_dir, struct fc_err *err)
{
	if (flock(m->dirfd, LOCK_EX) < 0)
		return fc_err_set(err, "pin dir %s: cannot lock: %s", pin_dir, strerror(errno));
	return 0;
}

void fc_maps_unlock(const struct fc_maps *m)
{
	flock(m->dirfd, LOCK_UN);
}

uint32_t fc_obj_id(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	/* id sits at the same offset in every bpf_*_info. */
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.id;
}

/* Sums a per-CPU value made only of struct fc_counter fields (fc_stats,
 * fc_pstats, fc_setstats) over all CPUs into out (size bytes). */
static int fc_percpu_sum(int fd, const char *name, __u32 key, void *out, size_t size, struct fc_err *err)
{
	int ncpu = libbpf_num_possible_cpus();
	struct fc_counter *percpu, *dst = out;
	size_t per = size / sizeof(*dst), k;
	int i;

	memset(out, 0, size);
	if (ncpu <= 0)
		return fc_err_set(err, "cannot count possible CPUs: %s", strerror(-ncpu));
	percpu = calloc((size_t)ncpu, size);
	if (!percpu)
		return fc_err_set(err, "out of memory");
	if (bpf_map_lookup_elem(fd, &key, percpu)) {
		fc_err_set(err, "map %s: %s", name, strerror(errno));
		free(percpu);
		return -1;
	}
	for (i = 0; i < ncpu; i++) {
		for (k = 0; k < per; k++) {
			dst[k].packets += percpu[(size_t)i * per + k].packets;
			dst[k].bytes += percpu[(size_t)i * per + k].bytes;
		}
	}
	free(percpu);
	return 0;
}

int fc_stats_read(const struct fc_maps *m, struct fc_stats *out, struct fc_err *err)
{
	return fc_percpu_sum(m->stats, FC_MAP_NAME(stats), 0, out, sizeof(*out), err);
}

int fc_pstats_read(const struct fc_maps *m, uint32_t slot, struct fc_pstats *out, struct fc_err *err)
{
	return fc_percpu_sum(m->pstats, FC_MAP_NAME(pstats), slot, out, sizeof(*out), err);
}

int fc_setstats_read(const struct fc_maps *m, uint32_t set, struct fc_counter *out, struct fc_err *err)
{
	return fc_percpu_sum(m->setstats, FC_MAP_NAME(setstats), set, out, sizeof(*out), err);
}

int fc_config_read(const struct fc_maps *m, struct fc_config *cfg, struct fc_err *err)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(m->config, &zero, cfg))
		return fc_err_set(err, "map %s: %s", FC_MAP_NAME(config), strerror(errno));
	return 0;
}

int fc_config_write(const struct fc_maps *m, const struct fc_config *cfg, struct fc_err *err)
{
	__u32 zero = 0;

	if (bpf_map_update_elem(m->config, &zero, cfg, BPF_ANY))
		return fc_err_set(err, "map %s: %s", FC_MAP_NAME(config), strerror(errno));
	fc_step("fc_config");
	return 0;
}

// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fc_shm_state.h"
#include "fc_shm_write.h"

int fc_state_open(const char *shm_path, struct fc_err *err)
{
	char path[PATH_MAX];
	struct stat sb;
	int fd;

	if (fc_shm_state_path(shm_path, path, err) < 0)
		return -1;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return fc_err_set(err, "shm state %s: %s", path, strerror(errno));
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return fc_err_set(err, "shm state %s: not a regular file", path);
	}
	return fd;
}

/* Reads len bytes at off; a short read (a truncated file) leaves zeros. */
static void fc_state_pread(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = 0, r;

	while ((size_t)n < len && (r = pread(fd, (char *)buf + n, len - (size_t)n, (off_t)(off + (uint64_t)n))) > 0)
		n += r;
	memset((char *)buf + n, 0, len - (size_t)n);
}

void fc_state_slots(int fd, struct fc_shm_slot *out, size_t n)
{
	if (n > FC_SHM_SLOTS)
		n = FC_SHM_SLOTS;
	fc_state_pread(fd, out, n * sizeof(*out), FC_STATE_SLOTS_OFF);
}

uint64_t fc_state_ring_head(int fd)
{
	uint64_t head;

	fc_state_pread(fd, &head, sizeof(head), FC_STATE_RING_OFF + offsetof(struct fc_shm_ring, head));
	return head;
}

void fc_state_ring_read(int fd, uint64_t from, size_t n, struct fc_shm_ring_entry *out)
{
	size_t first, at;

	if (n > FC_SHM_RING_SIZE)
		n = FC_SHM_RING_SIZE;
	at = (size_t)(from & (FC_SHM_RING_SIZE - 1));
	first = n < FC_SHM_RING_SIZE - at ? n : FC_SHM_RING_SIZE - at;
	fc_state_pread(fd, out, first * sizeof(*out),
		       FC_STATE_RING_OFF + offsetof(struct fc_shm_ring, e) + at * sizeof(*out));
	fc_state_pread(fd, out + first, (n - first) * sizeof(*out), FC_STATE_RING_OFF + offsetof(struct fc_shm_ring, e));
}

int fc_state_keys_recount(const char *shm_path, uint64_t now, struct fc_err *err)
{
	enum { CHUNK = 16384 };
	struct fc_shm_key *buf = NULL;
	struct fc_shm_slot *slots = NULL;
	uint64_t *live = NULL;
	char path[PATH_MAX];
	struct stat sb;
	size_t i, j;
	int fd = -1, rc = -1;

	if (fc_shm_state_path(shm_path, path, err) < 0)
		return -1;
	fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		fc_err_set(err, "shm state %s: %s", path, fd < 0 ? strerror(errno) : "not a regular file");
		goto out;
	}
	buf = malloc(CHUNK * sizeof(*buf));
	slots = malloc(FC_SHM_SLOTS * sizeof(*slots));
	live = calloc(FC_SHM_SLOTS, sizeof(*live));
	if (!buf || !slots || !live) {
		fc_err_set(err, "out of memory");
		goto out;
	}
	fc_state_slots(fd, slots, FC_SHM_SLOTS);
	for (i = 0; i < FC_SHM_KEYS; i += CHUNK) {
		fc_state_pread(fd, buf, CHUNK * sizeof(*buf), FC_STATE_KEYS_OFF + i * sizeof(*buf));
		for (j = 0; j < CHUNK; j++) {
			const struct fc_shm_key *e = &buf[j];

			/* Every field is the workers' say-so: bounded before use. */
			if (e->tag >= FC_SHM_KEY_TAG_MIN && e->slot && e->slot < FC_SHM_SLOTS &&
			    (uint32_t)slots[e->slot].owner == e->epoch && e->idle_ns >= now)
				live[e->slot]++;
		}
	}
	for (i = 1; i < FC_SHM_SLOTS; i++) {
		if (!slots[i].owner || slots[i].keys == live[i])
			continue;
		if (pwrite(fd, &live[i], sizeof(live[i]),
			   (off_t)(FC_STATE_SLOTS_OFF + i * sizeof(struct fc_shm_slot) + offsetof(struct fc_shm_slot, keys))) !=
		    (ssize_t)sizeof(live[i])) {
			fc_err_set(err, "shm state %s: %s", path, strerror(errno));
			goto out;
		}
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	free(slots);
	free(live);
	return rc;
}

int fc_state_keys_of(const char *shm_path, uint32_t slot, uint32_t epoch, struct fc_shm_key **out, size_t *n,
		     struct fc_err *err)
{
	enum { CHUNK = 16384 };
	struct fc_shm_key *buf, *v = NULL, *nv;
	size_t i, j, cap = 0;
	int fd;

	*out = NULL;
	*n = 0;
	fd = fc_state_open(shm_path, err);
	if (fd < 0)
		return -1;
	buf = malloc(CHUNK * sizeof(*buf));
	if (!buf)
		goto oom;
	for (i = 0; i < FC_SHM_KEYS; i += CHUNK) {
		fc_state_pread(fd, buf, CHUNK * sizeof(*buf), FC_STATE_KEYS_OFF + i * sizeof(*buf));
		for (j = 0; j < CHUNK; j++) {
			if (buf[j].tag < FC_SHM_KEY_TAG_MIN || buf[j].slot != slot || buf[j].epoch != epoch)
				continue;
			if (*n == cap) {
				cap = cap ? cap * 2 : 1024;
				nv = realloc(v, cap * sizeof(*v));
				if (!nv)
					goto oom;
				v = nv;
			}
			v[(*n)++] = buf[j];
		}
	}
	free(buf);
	close(fd);
	*out = v;
	return 0;
oom:
	free(buf);
	free(v);
	close(fd);
	*n = 0;
	return fc_err_set(err, "out of memory reading the key table");
}

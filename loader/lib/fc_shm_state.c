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
#include "fc_topn.h"

/* Opens the state file of the shm at shm_path with flags, a regular file,
 * no link followed; path and *size: its path and size. */
static int fc_state_open_as(const char *shm_path, int flags, char path[PATH_MAX], uint64_t *size, struct fc_err *err)
{
	struct stat sb;
	int fd, e;

	if (fc_shm_state_path(shm_path, path, err) < 0)
		return -1;
	fd = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		e = errno; /* ENOENT: nginx has no state yet, which callers may take as none */
		fc_err_set(err, "shm state %s: %s", path, strerror(e));
		errno = e;
		return -1;
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		fc_err_set(err, "shm state %s: not a regular file", path);
		errno = EINVAL;
		return -1;
	}
	*size = (uint64_t)sb.st_size;
	return fd;
}

int fc_state_open(const char *shm_path, struct fc_err *err)
{
	char path[PATH_MAX];
	uint64_t size;

	return fc_state_open_as(shm_path, O_RDONLY, path, &size, err);
}

int fc_state_open_keys(const char *shm_path, uint32_t keys, int flags, uint32_t *nkeys, struct fc_err *err)
{
	uint32_t named = fc_shm_state_keys(shm_path);
	char path[PATH_MAX];
	uint64_t size;
	int fd;

	*nkeys = named ? named : keys ? keys : FC_SHM_KEYS;
	fd = fc_state_open_as(shm_path, flags, path, &size, err);
	/* The workers' user may resize the file: its size is no say-so. */
	if (fd >= 0 && size != FC_STATE_SIZE_FOR(*nkeys)) {
		close(fd);
		fc_err_set(err, "shm state %s: %llu bytes, expected %llu (a key table of %u entries, as %s)", path,
			   (unsigned long long)size, (unsigned long long)FC_STATE_SIZE_FOR(*nkeys), *nkeys,
			   named ? "the shm names" :
			   keys  ? "--shm-keys says" :
				   "by default: freqctl sync names the table");
		errno = EINVAL;
		return -1;
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

uint64_t fc_state_allowed(int fd)
{
	uint64_t n = 0;

	fc_state_pread(fd, &n, sizeof(n), offsetof(struct fc_shm_state_header, allowed));
	return n;
}

void fc_state_banned(int fd, uint64_t *uid, uint64_t *addr)
{
	struct fc_shm_state_header h;

	fc_state_pread(fd, &h, sizeof(h), 0);
	*uid = h.banned_uid;
	*addr = h.banned_addr;
}

void fc_state_vals(int fd, struct fc_shm_val *out)
{
	struct fc_shm_val *again = malloc(FC_SHM_VALS * sizeof(*again));
	size_t i;

	fc_state_pread(fd, out, FC_SHM_VALS * sizeof(*out), FC_STATE_VALS_OFF);
	if (again)
		fc_state_pread(fd, again, FC_SHM_VALS * sizeof(*again), FC_STATE_VALS_OFF);
	for (i = 0; i < FC_SHM_VALS; i++)
		if (!again || memcmp(&out[i], &again[i], sizeof(out[i])) || out[i].tag < FC_SHM_KEY_TAG_MIN ||
		    out[i].len > FC_SHM_VAL_MAX || !out[i].slot || out[i].slot >= FC_SHM_SLOTS)
			memset(&out[i], 0, sizeof(out[i]));
	free(again);
}

const struct fc_shm_val *fc_state_val_of(const struct fc_shm_val *vals, uint64_t tag, uint32_t slot, uint32_t epoch)
{
	const struct fc_shm_val *set = vals + fc_shm_val_set(tag);
	int i;

	for (i = 0; i < FC_SHM_VAL_WAYS; i++)
		if (set[i].tag == tag && set[i].slot == slot && set[i].epoch == epoch && tag >= FC_SHM_KEY_TAG_MIN)
			return &set[i];
	return NULL;
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

int fc_state_keys_each(int fd, uint32_t nkeys, uint64_t from_tag, void (*each)(const struct fc_shm_key *k, void *arg),
		       void *arg, struct fc_err *err)
{
	enum { CHUNK = FC_SHM_KEYS_MIN }; /* a table is whole chunks */
	struct fc_shm_key *buf;
	size_t i, j, n = fc_state_nkeys(FC_STATE_SIZE_FOR(nkeys));

	/* What the file no longer holds when read (a worker may truncate it)
	 * reads as zeros. */
	buf = malloc(CHUNK * sizeof(*buf));
	if (!buf)
		return fc_err_set(err, "out of memory reading the key table");
	for (i = 0; i < n; i += CHUNK) {
		fc_state_pread(fd, buf, CHUNK * sizeof(*buf), FC_STATE_KEYS_OFF + i * sizeof(*buf));
		for (j = 0; j < CHUNK; j++)
			if (buf[j].tag >= from_tag)
				each(&buf[j], arg);
	}
	free(buf);
	return 0;
}

struct fc_recount {
	const struct fc_shm_slot *slots;
	uint64_t *live, now;
	bool *busy;
};

static void fc_recount_one(const struct fc_shm_key *e, void *arg)
{
	struct fc_recount *rc = arg;

	/* Every field is the workers' say-so: bounded before use. */
	if (!e->slot || e->slot >= FC_SHM_SLOTS || (uint32_t)rc->slots[e->slot].owner != e->epoch)
		return;
	/* A worker tags a new key's entry just after adding it to the count:
	 * one caught in between is counted but not seen, so its policy's count
	 * is left for the next recount (a killed worker's is not: it stays
	 * busy, and its key never comes). */
	if (e->tag < FC_SHM_KEY_TAG_MIN)
		rc->busy[e->slot] |= fc_shm_key_busy(e->tag, rc->now / FC_NS_PER_SEC);
	else if (e->idle_ns >= rc->now)
		rc->live[e->slot]++;
}

int fc_state_keys_recount(const char *shm_path, uint32_t keys, uint64_t now, struct fc_err *err)
{
	struct fc_shm_slot *slots = NULL, *after = NULL;
	uint64_t *live = NULL;
	bool *busy = NULL;
	uint32_t nkeys;
	size_t i;
	int fd, rc = -1;

	fd = fc_state_open_keys(shm_path, keys, O_RDWR, &nkeys, err);
	if (fd < 0)
		return -1;
	slots = malloc(FC_SHM_SLOTS * sizeof(*slots));
	after = malloc(FC_SHM_SLOTS * sizeof(*after));
	live = calloc(FC_SHM_SLOTS, sizeof(*live));
	busy = calloc(FC_SHM_SLOTS, sizeof(*busy));
	if (!slots || !after || !live || !busy) {
		fc_err_set(err, "out of memory");
		goto out;
	}
	fc_state_slots(fd, slots, FC_SHM_SLOTS);
	if (fc_state_keys_each(fd, nkeys, 1, fc_recount_one, &(struct fc_recount){ slots, live, now, busy }, err) < 0)
		goto out;
	/* A worker that made a key while the table was read added one to the
	 * count, which the scan may have missed: that slot is left for the
	 * next recount rather than written back one short. */
	fc_state_slots(fd, after, FC_SHM_SLOTS);
	for (i = 1; i < FC_SHM_SLOTS; i++) {
		if (!slots[i].owner || busy[i] || slots[i].keys == live[i] || after[i].owner != slots[i].owner ||
		    after[i].keys != slots[i].keys)
			continue;
		if (pwrite(fd, &live[i], sizeof(live[i]),
			   (off_t)(FC_STATE_SLOTS_OFF + i * sizeof(struct fc_shm_slot) + offsetof(struct fc_shm_slot, keys))) !=
		    (ssize_t)sizeof(live[i])) {
			fc_err_set(err, "shm state of %s: %s", shm_path, strerror(errno));
			goto out;
		}
	}
	rc = 0;
out:
	close(fd);
	free(slots);
	free(after);
	free(live);
	free(busy);
	return rc;
}

/* Busier first: more requests passed and denied. */
static int fc_key_busier(const void *a, const void *b)
{
	const struct fc_shm_key *x = a, *y = b;
	uint64_t nx = (uint64_t)x->passed + x->denied, ny = (uint64_t)y->passed + y->denied;

	return nx < ny ? 1 : nx > ny ? -1 : 0;
}

struct fc_keys_scan {
	uint32_t slot, epoch;
	uint64_t now;
	struct fc_topn top;
	struct fc_keys_top *t;
};

static void fc_keys_scan_one(const struct fc_shm_key *e, void *arg)
{
	struct fc_keys_scan *c = arg;

	if (e->slot != c->slot || e->epoch != c->epoch)
		return;
	c->t->total++;
	c->t->live += e->idle_ns >= c->now;
	fc_topn_push(&c->top, e);
}

int fc_state_keys_top(const char *shm_path, uint32_t keys, uint32_t slot, uint32_t epoch, uint64_t now, size_t max,
		      struct fc_keys_top *t, struct fc_err *err)
{
	struct fc_keys_scan c = { .slot = slot, .epoch = epoch, .now = now, .t = t };
	uint32_t nkeys;
	int fd, rc;

	memset(t, 0, sizeof(*t));
	fd = fc_state_open_keys(shm_path, keys, O_RDONLY, &nkeys, err);
	if (fd < 0)
		return -1;
	/* Never more than the table holds, whatever is asked. */
	max = max < nkeys ? max : nkeys;
	t->v = malloc((max ? max : 1) * sizeof(*t->v));
	if (!t->v) {
		close(fd);
		return fc_err_set(err, "out of memory for %zu keys", max);
	}
	fc_topn_init(&c.top, t->v, sizeof(*t->v), max, fc_key_busier);
	rc = fc_state_keys_each(fd, nkeys, FC_SHM_KEY_TAG_MIN, fc_keys_scan_one, &c, err);
	close(fd);
	if (rc < 0) {
		free(t->v);
		t->v = NULL;
		return -1;
	}
	fc_topn_sort(&c.top);
	t->n = c.top.n;
	return 0;
}

// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
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

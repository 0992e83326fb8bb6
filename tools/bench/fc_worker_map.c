// SPDX-License-Identifier: BSD-2-Clause
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "fc_worker_map.h"

/* Maps the file at path, of size bytes (0: the state file's, any valid). */
static void *fc_map(const char *path, size_t *size, bool writable)
{
	struct stat sb;
	void *base;
	int fd = open(path, writable ? O_RDWR : O_RDONLY);

	if (fd < 0 || fstat(fd, &sb) < 0 ||
	    (*size ? (size_t)sb.st_size != *size : !fc_state_nkeys((uint64_t)sb.st_size))) {
		fprintf(stderr, "%s: not a freqctl shm file of this version\n", path);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	*size = (size_t)sb.st_size;
	base = mmap(NULL, *size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
	close(fd);
	return base == MAP_FAILED ? NULL : base;
}

int fc_worker_map(const char *shm, struct fc_l7_index *ix, const struct fc_l7_alloc *a)
{
	size_t size = FC_SHM_SIZE, ssize = 0;
	char state[PATH_MAX];
	void *base, *sbase;

	snprintf(state, sizeof(state), "%s%s", shm, FC_SHM_STATE_SUFFIX);
	base = fc_map(shm, &size, false);
	sbase = fc_map(state, &ssize, true);
	if (!base || !sbase || fc_l7_build(base, size, sbase, ssize, ix, a) != 0) {
		fprintf(stderr, "%s: cannot build an index from it\n", shm);
		return -1;
	}
	return 0;
}

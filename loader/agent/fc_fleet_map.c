// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fleet's read-write mappings and the SIGBUS guard over them (see
 * fc_fleet_map.h). The guard's table is read by the handler, in whatever
 * thread faulted, while the fleet thread may add or remove a mapping: each
 * slot is published by storing its map pointer last (release) and retired
 * by clearing it first, and the handler loads it once (acquire).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "fc_fleet_map.h"

static struct fc_fleet_map *_Atomic fc_guarded[FC_FLEET_MAPS_MAX];
static struct sigaction fc_bus_prev;

static void fc_bus_handler(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr, b;
	struct fc_fleet_map *m;
	int i, saved = errno;

	for (i = 0; i < FC_FLEET_MAPS_MAX; i++) {
		m = atomic_load_explicit(&fc_guarded[i], memory_order_acquire);
		if (!m)
			continue;
		b = (uintptr_t)m->base;
		if (a < b || a - b >= m->len)
			continue;
		/* mmap is not on POSIX's list, but is a plain system call on
		 * Linux: the fault's page and all others read zeros now. */
		if (mmap(m->base, m->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
		    MAP_FAILED)
			break;
		m->lost = 1;
		errno = saved;
		return;
	}
	/* Not ours: as if we were not here. The access faults again and the
	 * previous disposition (the default: the process ends) takes it. */
	if (fc_bus_prev.sa_flags & SA_SIGINFO && fc_bus_prev.sa_sigaction) {
		fc_bus_prev.sa_sigaction(sig, si, uc);
		return;
	}
	if (fc_bus_prev.sa_handler != SIG_DFL && fc_bus_prev.sa_handler != SIG_IGN && fc_bus_prev.sa_handler) {
		fc_bus_prev.sa_handler(sig);
		return;
	}
	sigaction(SIGBUS, &fc_bus_prev, NULL);
	errno = saved;
}

/* Installs the handler unless it is the one in place (checked at each
 * mapping: someone else may have set another since). */
static int fc_bus_install(struct fc_err *err)
{
	struct sigaction sa = { .sa_sigaction = fc_bus_handler, .sa_flags = SA_SIGINFO | SA_NODEFER }, cur;

	if (sigaction(SIGBUS, NULL, &cur) == 0 && cur.sa_flags & SA_SIGINFO && cur.sa_sigaction == fc_bus_handler)
		return 0;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &fc_bus_prev) < 0)
		return fc_err_set(err, "fleet: SIGBUS handler: %s", strerror(errno));
	return 0;
}

static int fc_guard_add(struct fc_fleet_map *m)
{
	struct fc_fleet_map *none;
	int i;

	for (i = 0; i < FC_FLEET_MAPS_MAX; i++) {
		none = NULL;
		if (atomic_compare_exchange_strong_explicit(&fc_guarded[i], &none, m, memory_order_release,
							    memory_order_relaxed))
			return 0;
	}
	return -1;
}

static void fc_guard_remove(struct fc_fleet_map *m)
{
	struct fc_fleet_map *mine;
	int i;

	for (i = 0; i < FC_FLEET_MAPS_MAX; i++) {
		mine = m;
		atomic_compare_exchange_strong(&fc_guarded[i], &mine, NULL);
	}
}

int fc_fleet_map_file(struct fc_fleet_map *m, const char *path, size_t len, struct fc_err *err)
{
	struct stat st;
	int fd, rc = -1;

	memset(m, 0, sizeof(*m));
	if (fc_bus_install(err))
		return -1;
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return fc_err_set(err, "fleet: %s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		fc_err_set(err, "fleet: %s: not a regular file", path);
		goto out;
	}
	if (!len || (uint64_t)st.st_size < len) {
		fc_err_set(err, "fleet: %s: %lld bytes, expected at least %zu", path, (long long)st.st_size, len);
		goto out;
	}
	m->base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m->base == MAP_FAILED) {
		m->base = NULL;
		fc_err_set(err, "fleet: %s: mmap: %s", path, strerror(errno));
		goto out;
	}
	m->len = len;
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	if (fc_guard_add(m) < 0) {
		fc_err_set(err, "fleet: %s: more than %d guarded mappings", path, FC_FLEET_MAPS_MAX);
		munmap(m->base, len);
		memset(m, 0, sizeof(*m));
		goto out;
	}
	m->guarded = true;
	rc = 0;
out:
	close(fd);
	return rc;
}

int fc_fleet_map_bpf(struct fc_fleet_map *m, int map_fd, size_t len, const char *name, struct fc_err *err)
{
	memset(m, 0, sizeof(*m));
	m->base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
	if (m->base == MAP_FAILED) {
		m->base = NULL;
		return fc_err_set(err,
				  "fleet: map %s: mmap of %zu bytes: %s (made without BPF_F_MMAPABLE? its pins "
				  "are of another version)",
				  name, len, strerror(errno));
	}
	m->len = len;
	return 0;
}

void fc_fleet_map_close(struct fc_fleet_map *m)
{
	if (m->guarded)
		fc_guard_remove(m);
	if (m->base)
		munmap(m->base, m->len);
	memset(m, 0, sizeof(*m));
}

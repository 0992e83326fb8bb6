// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fleet agent's read-write mapping of the workers' state file and its
 * SIGBUS guard (loader/agent/fc_fleet_map.c): words written through the
 * mapping are the file's; the file truncated under it (what a hostile
 * worker can do) makes the next access read zeros and mark the mapping
 * lost, with the process alive, in this thread and in another; a SIGBUS
 * outside every guarded mapping still ends the process as SIGBUS does;
 * what can not be mapped is refused with a message naming it.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "fc_fleet_map.h"
#include "fc_test_dir.h"

#define LEN (64 * 1024)

static char dir[64];

/* A file of len bytes of pattern, its path in out. */
static void make_file(const char *name, size_t len, char *out, size_t outlen)
{
	char buf[4096];
	size_t done;
	int fd;

	snprintf(out, outlen, "%s/%s", dir, name);
	fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	memset(buf, 0x5a, sizeof(buf));
	for (done = 0; done < len; done += sizeof(buf))
		assert_int_equal(write(fd, buf, sizeof(buf)), sizeof(buf));
	close(fd);
}

static void test_shared_words(void **state)
{
	struct fc_fleet_map m;
	struct fc_err err;
	uint64_t word = 0;
	char path[128];
	int fd;

	(void)state;
	make_file("words", LEN, path, sizeof(path));
	assert_int_equal(fc_fleet_map_file(&m, path, LEN, &err), 0);
	__atomic_store_n((uint64_t *)((char *)m.base + 4096), 0x1122334455667788ull, __ATOMIC_SEQ_CST);
	fd = open(path, O_RDONLY);
	assert_int_equal(pread(fd, &word, sizeof(word), 4096), sizeof(word));
	close(fd);
	assert_int_equal(word, 0x1122334455667788ull);
	assert_false(fc_fleet_map_lost(&m));
	fc_fleet_map_close(&m);
}

/* Truncated under the mapping: zeros, lost, alive. */
static void test_truncated(void **state)
{
	struct fc_fleet_map m;
	struct fc_err err;
	char path[128];
	uint64_t *w;

	(void)state;
	make_file("trunc", LEN, path, sizeof(path));
	assert_int_equal(fc_fleet_map_file(&m, path, LEN, &err), 0);
	w = (uint64_t *)((char *)m.base + LEN / 2);
	assert_int_equal(*w, 0x5a5a5a5a5a5a5a5aull);
	assert_int_equal(truncate(path, 4096), 0);
	assert_int_equal(__atomic_load_n(w, __ATOMIC_SEQ_CST), 0);
	assert_true(fc_fleet_map_lost(&m));
	/* a CAS on the zero page goes nowhere, and does not fault */
	uint64_t zero = 0;
	assert_true(__atomic_compare_exchange_n(w, &zero, 7, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
	fc_fleet_map_close(&m);
	/* next round: mapped again, refused as too short */
	assert_int_equal(fc_fleet_map_file(&m, path, LEN, &err), -1);
	assert_non_null(strstr(err.msg, "4096 bytes, expected at least 65536"));
}

static void *touch(void *arg)
{
	return (void *)(uintptr_t)__atomic_load_n((uint64_t *)arg, __ATOMIC_SEQ_CST);
}

/* The fault in another thread than the one that mapped it. */
static void test_truncated_other_thread(void **state)
{
	struct fc_fleet_map m;
	struct fc_err err;
	char path[128];
	pthread_t t;
	void *got = (void *)1;

	(void)state;
	make_file("thread", LEN, path, sizeof(path));
	assert_int_equal(fc_fleet_map_file(&m, path, LEN, &err), 0);
	assert_int_equal(truncate(path, 0), 0);
	assert_int_equal(pthread_create(&t, NULL, touch, (char *)m.base + LEN - 8), 0);
	assert_int_equal(pthread_join(t, &got), 0);
	assert_null(got);
	assert_true(fc_fleet_map_lost(&m));
	fc_fleet_map_close(&m);
}

/* A SIGBUS that is not in a guarded mapping ends the process, as SIGBUS. */
static void test_other_sigbus_kills(void **state)
{
	struct fc_fleet_map m;
	struct fc_err err;
	char path[128], other[128];
	int status, fd;
	pid_t pid;

	(void)state;
	make_file("guarded", LEN, path, sizeof(path));
	make_file("unguarded", LEN, other, sizeof(other));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		volatile uint64_t *w;

		signal(SIGBUS, SIG_DFL); /* not cmocka's: it would go on in the child */
		if (fc_fleet_map_file(&m, path, LEN, &err))
			_exit(3);
		fd = open(other, O_RDWR);
		w = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (w == MAP_FAILED || ftruncate(fd, 0))
			_exit(4);
		(void)w[LEN / 16];
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGBUS);
}

static void test_refused(void **state)
{
	struct fc_fleet_map m[FC_FLEET_MAPS_MAX + 1];
	struct fc_err err;
	char path[128], link[128];
	int i;

	(void)state;
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(fc_fleet_map_file(&m[0], path, LEN, &err), -1);
	assert_non_null(strstr(err.msg, "missing: No such file or directory"));
	make_file("target", LEN, path, sizeof(path));
	snprintf(link, sizeof(link), "%s/link", dir);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(fc_fleet_map_file(&m[0], link, LEN, &err), -1);
	assert_non_null(strstr(err.msg, "link: Too many levels of symbolic links"));
	assert_int_equal(fc_fleet_map_file(&m[0], dir, LEN, &err), -1);
	for (i = 0; i < FC_FLEET_MAPS_MAX; i++)
		assert_int_equal(fc_fleet_map_file(&m[i], path, LEN, &err), 0);
	assert_int_equal(fc_fleet_map_file(&m[i], path, LEN, &err), -1);
	assert_non_null(strstr(err.msg, "more than 8 guarded mappings"));
	for (i = 0; i < FC_FLEET_MAPS_MAX; i++)
		fc_fleet_map_close(&m[i]);
	assert_int_equal(fc_fleet_map_file(&m[0], path, LEN, &err), 0);
	fc_fleet_map_close(&m[0]);
}

static int setup(void **state)
{
	(void)state;
	return fc_test_dir_make(dir, sizeof(dir), "fleet-map");
}

static int teardown(void **state)
{
	(void)state;
	return fc_test_dir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared_words),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_truncated_other_thread),
		cmocka_unit_test(test_other_sigbus_kills),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests_name("fleet mappings and the SIGBUS guard", tests, setup, teardown);
}

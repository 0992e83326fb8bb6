// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fc_fleet.h"
#include "fc_fleet_file.h"
#include "fc_owner.h"
#include "fc_shm.h"

int fc_fleet_file_read(const char *shm_path, struct fc_fleet_file *f, struct fc_err *err)
{
	struct timespec now;
	json_error_t jerr;
	struct stat sb;
	int64_t interval;
	char *buf = NULL;
	ssize_t got;
	int fd = -1, rc = -1;

	memset(f, 0, sizeof(*f));
	if ((size_t)snprintf(f->path, sizeof(f->path), "%s%s", shm_path, FC_FLEET_STATUS_SUFFIX) >= sizeof(f->path))
		return fc_err_set(err, "%s%s: path too long", shm_path, FC_FLEET_STATUS_SUFFIX);
	fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return 1;
		return fc_err_set(err, "%s: %s", f->path, strerror(errno));
	}
	/* Root reads what root wrote: one planted in a shared directory
	 * (/dev/shm) is not the agent's. The file opened is the one checked. */
	if (fc_owner_check_fd(FC_OWNED_FLEET_STATUS, f->path, fd, err) < 0)
		goto out;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		fc_err_set(err, "%s: not a regular file", f->path);
		goto out;
	}
	if (sb.st_size > FC_FLEET_STATUS_MAX) {
		fc_err_set(err, "%s: %lld bytes, more than a status file holds (%u)", f->path, (long long)sb.st_size,
			   FC_FLEET_STATUS_MAX);
		goto out;
	}
	buf = malloc((size_t)sb.st_size + 1);
	got = buf ? read(fd, buf, (size_t)sb.st_size) : -1;
	if (got < 0) {
		fc_err_set(err, "%s: %s", f->path, buf ? strerror(errno) : "out of memory");
		goto out;
	}
	f->doc = json_loadb(buf, (size_t)got, JSON_REJECT_DUPLICATES, &jerr);
	if (!f->doc || !json_is_object(f->doc)) {
		fc_err_set(err, "%s: not a fleet status (%s)", f->path, f->doc ? "expected a JSON object" : jerr.text);
		fc_fleet_file_free(f);
		goto out;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	f->age_ms = (int64_t)(now.tv_sec - sb.st_mtim.tv_sec) * 1000 + (now.tv_nsec - sb.st_mtim.tv_nsec) / 1000000;
	interval = fc_fleet_int(f->doc, "interval_ms", 0);
	f->stale = f->age_ms > FC_FLEET_STALE_MS && (interval <= 0 || f->age_ms / 10 > interval);
	rc = 0;
out:
	free(buf);
	close(fd);
	return rc;
}

void fc_fleet_file_free(struct fc_fleet_file *f)
{
	json_decref(f->doc);
	f->doc = NULL;
}

json_t *fc_fleet_file_policy(const struct fc_fleet_file *f, uint32_t id)
{
	json_t *pols = f->doc ? json_object_get(f->doc, "policies") : NULL, *p;
	size_t i;

	json_array_foreach(pols, i, p) {
		if (fc_fleet_int(p, "id", -1) == (int64_t)id)
			return p;
	}
	return NULL;
}

json_t *fc_fleet_policy_json(const json_t *p)
{
	if (!p)
		return json_null();
	return json_pack("{s:I, s:I, s:I, s:I}", "used", fc_fleet_int(p, "fleet_used", 0), "limit",
			 fc_fleet_int(p, "limit", 0), "node_used", fc_fleet_int(p, "node_used", 0), "credit",
			 fc_fleet_int(p, "credit", 0));
}

void fc_key_fleet_view(const json_t *sp, const struct fc_shm_key *k, struct fc_key_fleet *f)
{
	const char *algo = fc_fleet_str(sp, "algo", "");
	uint64_t w = (uint64_t)fc_fleet_int(sp, "window", 0), word;

	memset(f, 0, sizeof(*f));
	f->demand = fc_fleet_wanted(k->state[1], w);
	if (!strcmp(algo, "sliding")) {
		word = k->state[0];
		f->current = FC_FLEET_SLIDE_W(word) == FC_FLEET_SLABEL(w);
		f->credit = f->current ? FC_FLEET_SLIDE_ROOM(word) : 0;
		return;
	}
	/* window: the credit word; gcra: the lease credit, beside the TAT */
	word = !strcmp(algo, "gcra") ? k->state[2] : k->state[0];
	f->current = FC_FLEET_WORD_W(word) == FC_FLEET_LABEL(w);
	f->credit = f->current ? FC_FLEET_WORD_CREDIT(word) : 0;
}

int64_t fc_fleet_int(const json_t *o, const char *key, int64_t def)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? json_integer_value(v) : def;
}

const char *fc_fleet_str(const json_t *o, const char *key, const char *def)
{
	const json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : def;
}

double fc_fleet_num(const json_t *o, const char *key, double def)
{
	const json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : def;
}

// SPDX-License-Identifier: BSD-2-Clause
/* Where this machine enforces what is published (fc_where.h). */
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_attach.h"
#include "fc_cli.h"
#include "fc_pins.h"
#include "fc_where.h"

/* The interfaces of this network namespace that run the pin dir's
 * programs on the maps pinned there (a program on other maps enforces
 * none of what was published). */
static int fc_where_ifs(const struct fc_ctx *ctx, struct fc_where *w)
{
	struct fc_attachment *v = NULL;
	struct fc_pin_ref r;
	struct fc_maps m;
	struct fc_err err;
	size_t n = 0, i, off = 0;
	int rc = -1;

	if (fc_maps_open_pinned(ctx->pin_dir, &m, &err) < 0)
		goto out;
	fc_pin_ref_init(&r, ctx->pin_dir, &m);
	if (fc_attachments(&r, &v, &n, &err) < 0)
		goto out;
	for (i = 0; i < n && off < sizeof(w->ifs); i++)
		if (!v[i].stale)
			off += (size_t)snprintf(w->ifs + off, sizeof(w->ifs) - off, "%s%s (%s)", off ? ", " : "",
						v[i].ifname, fc_mode_name(v[i].mode));
	rc = 0;
out:
	if (rc < 0)
		fc_warn("where it is enforced at XDP/TC: %s", err.msg);
	fc_maps_close(&m);
	free(v);
	return rc;
}

/* Whether a line of /proc/PID/maps maps path (or the file path named when
 * mapped: a publish replaces a file that changes size, and a worker maps
 * the new one at its next request). */
static bool fc_maps_line_is(const char *line, const char *path)
{
	const char *p = strchr(line, '/');
	size_t len = strlen(path);

	return p && !strncmp(p, path, len) && (!strcmp(p + len, "\n") || !strcmp(p + len, " (deleted)\n"));
}

/* Whether process pid is an nginx mapping path. */
static bool fc_nginx_maps(const char *pid, const char *path)
{
	char file[300], comm[32] = "", *line = NULL;
	size_t cap = 0;
	bool found = false;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%s/comm", pid);
	if (!(f = fopen(file, "r")))
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	if (strcmp(comm, "nginx\n"))
		return false;
	snprintf(file, sizeof(file), "/proc/%s/maps", pid);
	if (!(f = fopen(file, "r")))
		return false;
	while (!found && getline(&line, &cap, f) != -1)
		found = fc_maps_line_is(line, path);
	free(line);
	fclose(f);
	return found;
}

/* nginx's processes that map the shm (its workers, once a request made
 * them map it). */
static size_t fc_where_nginx(const char *shm_path)
{
	char path[PATH_MAX];
	struct dirent *e;
	size_t n = 0;
	DIR *d;

	if (!realpath(shm_path, path) || !(d = opendir("/proc")))
		return 0;
	while ((e = readdir(d)))
		if (isdigit((unsigned char)e->d_name[0]) && fc_nginx_maps(e->d_name, path))
			n++;
	closedir(d);
	return n;
}

void fc_where_read(const struct fc_ctx *ctx, struct fc_where *w)
{
	memset(w, 0, sizeof(*w));
	w->l4_unknown = fc_where_ifs(ctx, w) < 0;
	w->nginx = fc_where_nginx(ctx->shm_path);
}

bool fc_where_ban(const struct fc_ctx *ctx, const struct fc_where *w, bool l4, char *buf, size_t len)
{
	const char *unknown = w->l4_unknown ? " (above)" : "";
	bool xdp = l4 && *w->ifs;

	if (!xdp && !w->nginx) {
		if (l4)
			snprintf(buf, len,
				 "no freqctl program is attached with pin dir %s%s ('freqctl attach IFACE' drops it "
				 "at XDP/TC), and no nginx maps the shm %s (nginx refuses it once a server with "
				 "freqctl_shm %s serves a request)",
				 ctx->pin_dir, unknown, ctx->shm_path, ctx->shm_path);
		else
			snprintf(buf, len,
				 "no nginx maps the shm %s (nginx refuses it once a server with freqctl_shm %s and a "
				 "freqctl_uid that reads the uid serves a request)",
				 ctx->shm_path, ctx->shm_path);
		return false;
	}
	if (!xdp)
		snprintf(buf, len, "refused by nginx%s (%zu process%s map%s %s)%s%s%s",
			 l4 ? "" : " where freqctl_uid reads the uid", w->nginx, w->nginx == 1 ? "" : "es",
			 w->nginx == 1 ? "s" : "", ctx->shm_path,
			 l4 ? "; not at XDP/TC: no freqctl program is attached with pin dir " : "",
			 l4 ? ctx->pin_dir : "", l4 ? unknown : "");
	else if (w->nginx)
		snprintf(buf, len, "dropped at XDP/TC on %s; refused by nginx (%zu process%s map%s %s)", w->ifs,
			 w->nginx, w->nginx == 1 ? "" : "es", w->nginx == 1 ? "s" : "", ctx->shm_path);
	else
		snprintf(buf, len, "dropped at XDP/TC on %s; no nginx maps the shm %s yet", w->ifs, ctx->shm_path);
	return true;
}

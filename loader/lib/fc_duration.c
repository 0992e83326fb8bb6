// SPDX-License-Identifier: BSD-2-Clause
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fc_duration.h"

static const struct {
	char unit;
	int64_t secs;
} fc_units[] = { { 'd', 86400 }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 } };

#define FC_NUNITS (sizeof(fc_units) / sizeof(fc_units[0]))

int fc_duration_parse(const char *s, int64_t *secs, struct fc_err *err)
{
	const char *p = s;
	size_t next_unit = 0, u;
	int64_t total = 0;

	if (!*s)
		return fc_err_set(err, "empty duration: expected e.g. 90s, 10m, 1h, 7d");
	while (*p) {
		int64_t n = 0;
		const char *digits = p;

		while (*p >= '0' && *p <= '9') {
			if (n > FC_DURATION_MAX)
				break;
			n = n * 10 + (*p++ - '0');
		}
		if (p == digits)
			return fc_err_set(err, "duration \"%s\": expected a number at \"%s\"", s, p);
		if (n > FC_DURATION_MAX)
			return fc_err_set(err, "duration \"%s\": too long (at most %lldd)", s,
					  FC_DURATION_MAX / 86400);
		if (!*p)
			return fc_err_set(err, "duration \"%s\": missing unit after %lld (one of s, m, h, d)", s,
					  (long long)n);
		for (u = 0; u < FC_NUNITS && fc_units[u].unit != *p; u++)
			;
		if (u == FC_NUNITS)
			return fc_err_set(err, "duration \"%s\": unit '%c' must be one of s, m, h, d", s, *p);
		if (u < next_unit)
			return fc_err_set(err, "duration \"%s\": units must appear once each, largest first", s);
		next_unit = u + 1;
		total += n * fc_units[u].secs;
		if (total > FC_DURATION_MAX)
			return fc_err_set(err, "duration \"%s\": too long (at most %lldd)", s,
					  FC_DURATION_MAX / 86400);
		p++;
	}
	if (total == 0)
		return fc_err_set(err, "duration \"%s\": must be at least 1s", s);
	*secs = total;
	return 0;
}

void fc_duration_format(int64_t secs, char buf[FC_DURATION_STRLEN])
{
	size_t u, off = 0;

	buf[0] = '\0';
	if (secs <= 0) {
		snprintf(buf, FC_DURATION_STRLEN, "0s");
		return;
	}
	for (u = 0; u < FC_NUNITS; u++) {
		int64_t n = secs / fc_units[u].secs;

		if (!n)
			continue;
		off += (size_t)snprintf(buf + off, FC_DURATION_STRLEN - off, "%lld%c", (long long)n,
					fc_units[u].unit);
		secs %= fc_units[u].secs;
	}
}

int64_t fc_expires_at(const struct timespec *now, int64_t ttl)
{
	return (int64_t)now->tv_sec + (now->tv_nsec > 0) + ttl;
}

int64_t fc_expires_after(int64_t ttl)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return fc_expires_at(&now, ttl);
}

void fc_time_format(int64_t t, char buf[FC_TIME_STRLEN])
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(buf, FC_TIME_STRLEN, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

uint64_t fc_utc_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

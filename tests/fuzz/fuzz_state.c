// SPDX-License-Identifier: BSD-2-Clause
/*
 * Root's side of the workers' state file, which the workers' user can
 * write: the readers of loader/lib/fc_shm_state.c (slots, the ring's head
 * and entries) on whatever the file holds, however long it is, and the
 * agent's escalation (loader/agent/fc_escalate.c) turning its ring into
 * bans, and the key table as keys, top and the console read it.
 * Properties: nothing crashes; escalation makes no more bans than it was
 * given room for, never more than its cap in a minute, only bans of a
 * whole address or an IPv6 /64, and never reads past the ring's head; the
 * key readers give only keys of the policy asked for, the busiest at most
 * as many as asked, most used first (freqctl keys: by requests; top: by
 * use, each 0 to 1), and freqctl keys' view of each (a policy with a
 * concurrency cap: its requests in flight are the word past its rates; no
 * rate admits more than its burst); the value table's reader keeps only
 * whole entries, and a key's value as shown (keys, top, the console) is
 * printable UTF-8 within its bounds that says exactly what the bytes were;
 * a state file of another size than the config file names is refused by
 * them, never read.
 *
 * Each input is cheap, so that thousands run a second: the config file
 * names the smallest key table, escalation counts in small tables, the
 * state file is made once and each input's writes are undone (zeros where
 * it wrote, its size back), and 64 stat slots are read back, not 65,537.
 *
 * An input is chunks of [u8 what][u32 offset][u16 len][len bytes]: what 0
 * writes the file at offset, 1 truncates it to offset, 2 lets the agent
 * read the ring (offset: the seconds since the start, and room), 3 writes
 * the ring at offset from its start, 4 the value table at offset from its
 * start (seeds outlive a change of layout); 8 escapes its bytes as a key's
 * value is shown, into offset's bytes of room.
 */
#include <ctype.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fc_escalate.h"
#include "fc_escape.h"
#include "fc_fuzz.h"
#include "fc_policy.h"
#include "fc_shm_state.h"
#include "fc_stats.h"

#define FC_FUZZ_CAP 5
/* The smallest key table, so that a whole scan is cheap; the file may be
 * cut or grown to any size around it. */
#define FC_FUZZ_STATE FC_STATE_SIZE_FOR(FC_SHM_KEYS_MIN)
#define FC_FUZZ_SLOTS 64 /* stat slots read back: what any slot read does */
#define FC_FUZZ_VALS_END (FC_STATE_VALS_OFF + FC_SHM_VALS * sizeof(struct fc_shm_val))
#define FC_FUZZ_WRITES 4096 /* writes of an input noted to be undone (a chunk is 7 bytes or more) */

static char state_path[600];
static struct fc_policy_row rows[2], krows[2];
static int state_fd = -1, wfd = -1; /* the state file, as root reads it and as the workers write it */

/* Where the input wrote, to be undone. */
static struct fc_written {
	uint64_t at;
	size_t len;
} written[FC_FUZZ_WRITES];
static size_t nwritten; /* past FC_FUZZ_WRITES: not all noted */

static uint64_t fc_head(void *ctx)
{
	(void)ctx;
	return fc_state_ring_head(state_fd);
}

static void fc_read(void *ctx, uint64_t from, size_t n, struct fc_shm_ring_entry *out)
{
	(void)ctx;
	fc_state_ring_read(state_fd, from, n, out);
}

static const struct fc_ring_src src = { fc_head, fc_read, NULL };

static void fc_check_bans(const struct fc_ban_row *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!(b[i].p.family == 4 && b[i].p.len == 32) &&
		    !(b[i].p.family == 6 && (b[i].p.len == 128 || b[i].p.len == 64)))
			fc_fuzz_fail("a ban of family %u, /%u", b[i].p.family, b[i].p.len);
		if (b[i].by_policy != 1 && b[i].by_policy != 2)
			fc_fuzz_fail("a ban by policy %u, which does not escalate", b[i].by_policy);
	}
}

/* The bytes text (fc_escape's) says, into out; their count, or -1 if
 * text is not one of its outputs: printable ASCII, '\\' only before '\\',
 * '"' or "xNN", '"' only after one, UTF-8 that a JSON string takes. */
static long fc_unescape(const char *text, uint8_t *out)
{
	const unsigned char *p = (const unsigned char *)text;
	unsigned int b;
	json_t *j = json_string(text);
	long n = 0;

	if (!j)
		return -1; /* not UTF-8 */
	json_decref(j);
	for (; *p; p++) {
		if (*p < 0x20 || *p == 0x7f || *p == '"')
			return -1;
		if (*p != '\\') {
			out[n++] = *p;
			continue;
		}
		if (p[1] == '\\' || p[1] == '"') {
			out[n++] = *++p;
		} else if (p[1] == 'x' && sscanf((const char *)p + 2, "%2x", &b) == 1 && isxdigit(p[2]) &&
			   isxdigit(p[3])) {
			out[n++] = (uint8_t)b;
			p += 3;
		} else {
			return -1;
		}
	}
	return n;
}

/* fc_escape of len bytes at v into cap bytes of room: a prefix of them,
 * whole if there is room for all, in text fc_unescape reads back. */
static void fc_check_escape(const uint8_t *v, size_t len, size_t cap)
{
	static char text[FC_ESCAPED_LEN(65536)];
	static uint8_t back[65536];
	size_t n;
	long m;

	if (cap > sizeof(text))
		cap = sizeof(text);
	n = fc_escape(v, len, text, cap);
	if (cap && (n >= cap || strlen(text) != n))
		fc_fuzz_fail("escaped into %zu bytes of %zu room", n, cap);
	if (!cap)
		return;
	m = fc_unescape(text, back);
	if (m < 0 || (size_t)m > len || memcmp(back, v, (size_t)m) || (cap >= FC_ESCAPED_LEN(len) && (size_t)m != len))
		fc_fuzz_fail("escaped %zu bytes into \"%s\", which says %ld of them", len, text, m);
}

/* The value table as root reads it, and each value as keys, top and the
 * console show it. */
static void fc_check_vals(int fd)
{
	static struct fc_shm_val vals[FC_SHM_VALS];
	struct fc_enforced e;
	char text[FC_KEY_VALUE_LEN];
	size_t i;
	bool cut;

	fc_policy_enforced(&krows[0], &(struct fc_node_ctx){ .weight = 1, .ncpus = 1, .tick_ns = 1 }, NULL, &e);
	fc_state_vals(fd, vals);
	for (i = 0; i < FC_SHM_VALS; i++) {
		if (!vals[i].tag)
			continue;
		if (vals[i].tag < FC_SHM_KEY_TAG_MIN || vals[i].len > FC_SHM_VAL_MAX || !vals[i].slot ||
		    vals[i].slot >= FC_SHM_SLOTS)
			fc_fuzz_fail("value entry %zu kept: tag %llx, %u bytes, slot %u", i, (unsigned long long)vals[i].tag,
				     vals[i].len, vals[i].slot);
		if (vals[i].slot == krows[0].slot && fc_key_value(&krows[0], &e, vals, vals[i].tag, text, &cut))
			fc_check_escape(vals[i].value, vals[i].len, FC_KEY_VALUE_LEN);
	}
}

static void fc_check_keys(void)
{
	struct fc_policy_stats ps[2] = { { .row = &krows[0] }, { .row = &krows[1] } };
	struct fc_stats_all a = { .ps = ps, .n = 2, .node = fc_node_here(1) };
	const uint64_t now = 1800000000ULL * FC_NS_PER_SEC;
	struct fc_key_use top[4];
	uint8_t buf[FC_KEY_VALUE_LEN];
	struct fc_keys_top kt;
	struct fc_err err;
	size_t n, i;

	for (i = 0; i < 2; i++)
		fc_policy_enforced(ps[i].row, &a.node, NULL, &ps[i].enforced);
	if (fc_stats_busiest_keys(fc_fuzz_ctx(), &a, now, top, 4, &n, &err) == 0) {
		if (n > 4)
			fc_fuzz_fail("%zu busiest keys, asked for 4", n);
		for (i = 0; i < n; i++) {
			if (!(top[i].use > 0 && top[i].use <= 1) || (i && top[i].use > top[i - 1].use))
				fc_fuzz_fail("busiest key %zu used %g, after %g", i, top[i].use, i ? top[i - 1].use : 1.0);
			if (top[i].policy != krows[0].spec.id && top[i].policy != krows[1].spec.id)
				fc_fuzz_fail("a busiest key of policy %u, which is not per-key", top[i].policy);
			if (top[i].has_value && (top[i].policy != krows[0].spec.id || fc_unescape(top[i].value, buf) < 0 ||
						 fc_unescape(top[i].value, buf) > FC_SHM_VAL_MAX))
				fc_fuzz_fail("busiest key %zu of policy %u shown as \"%s\"", i, top[i].policy, top[i].value);
		}
	}
	if (fc_state_keys_top(fc_fuzz_ctx()->shm_path, FC_SHM_KEYS_MIN, krows[0].slot, krows[0].epoch, now, 3, &kt,
			      &err) == 0) {
		const struct fc_enforced *e = &ps[0].enforced;
		const struct fc_shm_key *keys = kt.v;
		struct fc_key_view v;
		uint8_t w = fc_shm_conc_word(e->k.ntiers, e->k.warmup_ms); /* past the rates and the ramp's word */

		if (kt.n > 3 || kt.n > kt.total || kt.live > kt.total)
			fc_fuzz_fail("%zu keys kept of %llu (%llu live), asked for 3", kt.n,
				     (unsigned long long)kt.total, (unsigned long long)kt.live);
		for (i = 0; i < kt.n; i++) {
			if (i && (uint64_t)keys[i].passed + keys[i].denied >
					 (uint64_t)keys[i - 1].passed + keys[i - 1].denied)
				fc_fuzz_fail("key %zu busier than key %zu before it", i, i - 1);
			if (keys[i].slot != krows[0].slot || keys[i].epoch != krows[0].epoch)
				fc_fuzz_fail("a key of slot %u epoch %u listed for slot %u", keys[i].slot, keys[i].epoch,
					     krows[0].slot);
			fc_key_view(&krows[0], e, &keys[i], now, &v);
			if (!v.capped || v.inflight != keys[i].state[w] || v.remaining > fc_tier_burst(&krows[0].spec, 0) ||
			    v.held != !!(keys[i].idle_ns & FC_SHM_KEY_HELD) || v.idle_s > FC_SHM_KEY_HELD / FC_NS_PER_SEC)
				fc_fuzz_fail("key %zu: in flight %llu of word %llu, %llu remaining, held %d, idle in %llu s", i,
					     (unsigned long long)v.inflight, (unsigned long long)keys[i].state[w],
					     (unsigned long long)v.remaining, v.held, (unsigned long long)v.idle_s);
		}
		free(kt.v);
	}
}

/* Puts the state file back as it was before an input: its size, zeros
 * where the input wrote, the header. Only what the input touched is
 * rewritten, so an input costs what it does, not the file's size. */
static void fc_state_restore(void)
{
	struct fc_shm_state_header h = { .magic = FC_SHM_STATE_MAGIC, .version = FC_SHM_VERSION };
	static const uint8_t zeros[65536];
	size_t i;

	/* Too many writes to note (a long input): the whole file afresh. */
	if ((nwritten > FC_FUZZ_WRITES && ftruncate(wfd, 0)) || ftruncate(wfd, FC_FUZZ_STATE))
		abort();
	for (i = 0; i < nwritten && nwritten <= FC_FUZZ_WRITES; i++)
		if (written[i].at < FC_FUZZ_STATE &&
		    pwrite(wfd, zeros, written[i].len, (off_t)written[i].at) != (ssize_t)written[i].len)
			abort();
	nwritten = 0;
	if (pwrite(wfd, &h, sizeof(h), 0) != sizeof(h))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fc_shm_slot slots[FC_FUZZ_SLOTS];
	/* Small tables: cheap to make for each input, and crowded and read
	 * in several batches by short inputs. */
	struct fc_escalation e = { .cap = FC_FUZZ_CAP, .v6_aggregate = 4, .nkeys = 64, .nbatch = 64 };
	struct fc_fuzz_in in = { data, size };
	struct fc_fuzz_chunk c;
	struct fc_ban_row bans[16];
	struct fc_esc_stats est;
	struct fc_shm_ring_entry ent[8];
	size_t made = 0, n;
	bool vals = false; /* whether the input touched the value table */

	if (fc_esc_set_policies(&e, rows, 2) < 0)
		abort();
	fc_esc_attach(&e, &src);
	while (fc_fuzz_next_chunk(&in, &c)) {
		if (c.what == 8) {
			fc_check_escape(c.p, c.len, c.off % (FC_ESCAPED_LEN(c.len) + 2));
		} else if (c.what == 4 || c.what % 4 == 0 || c.what % 4 == 3) {
			uint64_t at = c.what == 4     ? FC_STATE_VALS_OFF + c.off % (FC_SHM_VALS * sizeof(struct fc_shm_val)) :
				      c.what % 4 == 3 ? FC_STATE_RING_OFF + c.off % sizeof(struct fc_shm_ring) :
							c.off % (FC_FUZZ_STATE + 4096);

			if (pwrite(wfd, c.p, c.len, (off_t)at) < 0)
				abort();
			vals |= at < FC_FUZZ_VALS_END && at + c.len > FC_STATE_VALS_OFF;
			if (nwritten < FC_FUZZ_WRITES)
				written[nwritten] = (struct fc_written){ at, c.len };
			nwritten++;
		} else if (c.what % 4 == 1) {
			if (ftruncate(wfd, c.off % (FC_FUZZ_STATE + 4096)))
				abort();
			vals |= c.off % (FC_FUZZ_STATE + 4096) < FC_FUZZ_VALS_END;
		} else {
			/* All in one minute: the cap holds across reads. */
			size_t room = c.off >> 8 & 31;

			n = fc_esc_drain(&e, 1800000000 + (c.off & 31), room, bans, 16, &est);
			if (n > room || n > 16)
				fc_fuzz_fail("%zu bans made with room for %zu", n, room);
			if (e.tail > fc_state_ring_head(state_fd))
				fc_fuzz_fail("the ring read up to %llu, past its head", (unsigned long long)e.tail);
			fc_check_bans(bans, n);
			made += n;
			if (made > FC_FUZZ_CAP)
				fc_fuzz_fail("%zu bans made in a minute, past the cap of %d", made, FC_FUZZ_CAP);
		}
	}
	/* Root's other readers of the file, on what it holds now. */
	fc_state_slots(state_fd, slots, FC_FUZZ_SLOTS);
	fc_state_ring_read(state_fd, fc_state_ring_head(state_fd) - 8, 8, ent);
	fc_check_keys();
	/* The value table is 393 KB read twice: read where the input made it
	 * hostile, so that an input stays cheap. */
	if (vals)
		fc_check_vals(state_fd);
	fc_esc_free(&e);
	fc_state_restore();
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct fc_shm_header ch = { .magic = FC_SHM_MAGIC, .version = FC_SHM_VERSION, .state_keys = FC_SHM_KEYS_MIN };
	const char *shm = fc_fuzz_ctx()->shm_path;
	struct fc_err err;
	int fd;

	(void)argc;
	(void)argv;
	/* The config file names the smallest key table (a whole scan is
	 * cheap); the state file is made once, and each input's writes undone. */
	fd = open(shm, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)FC_SHM_SIZE) || pwrite(fd, &ch, sizeof(ch), 0) != sizeof(ch))
		abort();
	close(fd);
	snprintf(state_path, sizeof(state_path), "%s%s", shm, FC_SHM_STATE_SUFFIX);
	wfd = open(state_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (wfd < 0)
		abort();
	fc_state_restore();
	state_fd = fc_state_open(shm, &err);
	if (state_fd < 0)
		fc_fuzz_fail("state file: %s", err.msg);
	fc_fuzz_policy_spec(1, "uid=u1", "3/s", "escalate=2/m ban_ttl=1h", &rows[0].spec);
	fc_fuzz_policy_spec(2, "arg:api=login", "1/s", "escalate=1/s ban_ttl=10m", &rows[1].spec);
	/* Per-key policies in slots 1 and 2, as the key table names them (the
	 * first warming up and capped: its ramp's word and its count of places
	 * read from whatever the file holds). */
	fc_fuzz_policy_spec(3, "uid=*", "3/s,100/m", "warmup=10s concurrency=2 show_keys=1", &krows[0].spec);
	fc_fuzz_policy_spec(4, "header:X-Key=*", "1/m", "algo=window", &krows[1].spec);
	krows[0].slot = krows[0].epoch = 1;
	krows[1].slot = 2;
	krows[1].epoch = 7;
	return 0;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SipHash-1-3 (Aumasson and Bernstein), for the tags a sender must not be
 * able to collide: the nginx module's key table and the uids of the ban
 * table (maps/fc_shm.h), keyed by the secret the config file is made with.
 */
#ifndef FC_SIPHASH_H
#define FC_SIPHASH_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* SipHash-1-3 (a round a word, three to finish: the variant CPython's and
 * Rust's hash tables take against hash flooding) over whole words: a key's
 * parts are hashed where they lie, each part starting on a word of its own
 * (fc_sip_part), so no byte goes through a byte-at-a-time path. */
struct fc_sip {
	uint64_t v[4];
	uint64_t len; /* bytes fed, a multiple of 8 */
};

#define FC_ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

static inline void fc_sip_round(uint64_t *v)
{
	v[0] += v[1], v[1] = FC_ROTL(v[1], 13), v[1] ^= v[0], v[0] = FC_ROTL(v[0], 32);
	v[2] += v[3], v[3] = FC_ROTL(v[3], 16), v[3] ^= v[2];
	v[0] += v[3], v[3] = FC_ROTL(v[3], 21), v[3] ^= v[0];
	v[2] += v[1], v[1] = FC_ROTL(v[1], 17), v[1] ^= v[2], v[2] = FC_ROTL(v[2], 32);
}

static inline void fc_sip_word(struct fc_sip *h, uint64_t m)
{
	h->v[3] ^= m;
	fc_sip_round(h->v);
	h->v[0] ^= m;
	h->len += 8;
}

static inline void fc_sip_init(struct fc_sip *h, const uint64_t k[2])
{
	h->v[0] = k[0] ^ 0x736f6d6570736575ULL;
	h->v[1] = k[1] ^ 0x646f72616e646f6dULL;
	h->v[2] = k[0] ^ 0x6c7967656e657261ULL;
	h->v[3] = k[1] ^ 0x7465646279746573ULL;
	h->len = 0;
}

/* The n (below 8) bytes at p as a little-endian word, read in three loads
 * at most, none past p + n. */
static inline uint64_t fc_sip_short(const uint8_t *p, size_t n)
{
	uint64_t m = 0;
	uint32_t w;
	uint16_t hw;
	size_t o = 0;

	if (n & 4) {
		memcpy(&w, p, 4);
		m = le32toh(w);
		o = 4;
	}
	if (n & 2) {
		memcpy(&hw, p + o, 2);
		m |= (uint64_t)le16toh(hw) << (8 * o);
		o += 2;
	}
	if (n & 1)
		m |= (uint64_t)p[o] << (8 * o);
	return m;
}

/* One part of a key, so that parts never run together ("a" + "bc" against
 * "ab" + "c"): under 8 bytes, one word, its length in the top byte (0-7);
 * else a word of its length, top byte 0xff, then its bytes in words, the
 * last one zero-filled. Always inline: the state then stays in registers
 * (a call takes it through memory, a third of a short key's hash). */
static inline __attribute__((always_inline)) void fc_sip_part(struct fc_sip *h, const void *data, size_t n)
{
	const uint8_t *p = data;
	uint64_t m;
	size_t i, r = n & 7;

	if (n < 8) {
		fc_sip_word(h, fc_sip_short(p, n) | (uint64_t)n << 56);
		return;
	}
	fc_sip_word(h, (uint64_t)n | 0xffULL << 56); /* a value is far below 2^56 bytes */
	for (i = 0; i + 8 <= n; i += 8) {
		memcpy(&m, p + i, 8);
		fc_sip_word(h, le64toh(m));
	}
	if (r) { /* the last 8 bytes, those already hashed shifted out */
		memcpy(&m, p + n - 8, 8);
		fc_sip_word(h, le64toh(m) >> (8 * (8 - r)));
	}
}

static inline uint64_t fc_sip_final(struct fc_sip *h)
{
	uint64_t b = h->len << 56;

	h->v[3] ^= b;
	fc_sip_round(h->v);
	h->v[0] ^= b;
	h->v[2] ^= 0xff;
	fc_sip_round(h->v);
	fc_sip_round(h->v);
	fc_sip_round(h->v);
	return h->v[0] ^ h->v[1] ^ h->v[2] ^ h->v[3];
}

#endif /* FC_SIPHASH_H */

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SipHash-2-4 (Aumasson and Bernstein), for the tags a sender must not be
 * able to collide: the nginx module's key table and the uids of the ban
 * table (maps/fc_shm.h), keyed by the secret the config file is made with.
 */
#ifndef FC_SIPHASH_H
#define FC_SIPHASH_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* SipHash-2-4, fed in pieces: a key's parts are hashed where they lie. */
struct fc_sip {
	uint64_t v[4];
	uint64_t tail; /* the bytes of an unfinished word */
	uint64_t len;
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
	fc_sip_round(h->v);
	h->v[0] ^= m;
}

static inline void fc_sip_init(struct fc_sip *h, const uint64_t k[2])
{
	h->v[0] = k[0] ^ 0x736f6d6570736575ULL;
	h->v[1] = k[1] ^ 0x646f72616e646f6dULL;
	h->v[2] = k[0] ^ 0x6c7967656e657261ULL;
	h->v[3] = k[1] ^ 0x7465646279746573ULL;
	h->tail = 0;
	h->len = 0;
}

static inline void fc_sip_update(struct fc_sip *h, const void *data, size_t n)
{
	const uint8_t *p = data;
	uint64_t m;
	size_t i = 0;

	if (!(h->len & 7)) /* word-aligned: whole words at once */
		for (; i + 8 <= n; i += 8, h->len += 8) {
			memcpy(&m, p + i, 8);
			fc_sip_word(h, le64toh(m));
		}
	for (; i < n; i++) {
		h->tail |= (uint64_t)p[i] << (8 * (h->len & 7));
		if ((++h->len & 7) == 0) {
			fc_sip_word(h, h->tail);
			h->tail = 0;
		}
	}
}

static inline uint64_t fc_sip_final(struct fc_sip *h)
{
	fc_sip_word(h, h->tail | h->len << 56);
	h->v[2] ^= 0xff;
	fc_sip_round(h->v);
	fc_sip_round(h->v);
	fc_sip_round(h->v);
	fc_sip_round(h->v);
	return h->v[0] ^ h->v[1] ^ h->v[2] ^ h->v[3];
}

#endif /* FC_SIPHASH_H */

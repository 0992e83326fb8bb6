/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the fuzz targets share: a scratch store, pin dir and shm, named by
 * the runner (tools/fuzz.sh sets FC_FUZZ_DIR and FC_FUZZ_PIN and removes
 * them after, however the target ended), and a way to stop on a broken
 * property that libFuzzer reports as a crash.
 */
#ifndef FC_FUZZ_H
#define FC_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fc_ctx.h"

/* The scratch context, made on first use; exits with a message if the
 * runner gave no FC_FUZZ_DIR/FC_FUZZ_PIN. */
const struct fc_ctx *fc_fuzz_ctx(void);

/* Publishes, as the CLI does (store, then XDP/TC and the shm): a policy
 * (opts: "key=value ..." with the keys of a policy's JSON) and a ban. Any
 * refusal exits: the targets' setup is fixed. */
void fc_fuzz_policy(uint32_t id, const char *match, const char *rates, const char *opts);
/* The same policy, parsed and validated only. */
struct fc_policy_spec;
void fc_fuzz_policy_spec(uint32_t id, const char *match, const char *rates, const char *opts,
			 struct fc_policy_spec *p);
void fc_fuzz_ban(const char *text);
/* Lifts a ban by hand (a setup step: fails the run on error). */
void fc_fuzz_unban(const char *text);
/* An allow entry, as allow add takes it. */
void fc_fuzz_allow(const char *text);

/* A property does not hold: says which, then aborts (a crash to libFuzzer). */
__attribute__((noreturn, format(printf, 1, 2)))
void fc_fuzz_fail(const char *fmt, ...);

/* Reads input bytes in order: a small cursor over libFuzzer's data. */
struct fc_fuzz_in {
	const uint8_t *p;
	size_t n;
};

uint8_t fc_fuzz_byte(struct fc_fuzz_in *in);
/* The inputs of fuzz_l7 and fuzz_state are chunks: [u8 what][u32 offset]
 * [u16 len][len bytes], little-endian. Takes the next one (its bytes cut to
 * what is left); false when no whole header is left. */
struct fc_fuzz_chunk {
	uint8_t what;
	uint32_t off;
	const uint8_t *p;
	size_t len;
};

bool fc_fuzz_next_chunk(struct fc_fuzz_in *in, struct fc_fuzz_chunk *c);

/* Up to max bytes (fewer at the end) as a NUL-terminated string in out. */
size_t fc_fuzz_str(struct fc_fuzz_in *in, char *out, size_t max);

#endif /* FC_FUZZ_H */

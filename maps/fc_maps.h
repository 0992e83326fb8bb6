/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The kernel ABI of freqctl: keys and values of the pinned BPF maps.
 *
 * This header is the only definition of these structs. It is included by the
 * BPF programs (clang -target bpf), the loader, and the tests, so it uses only
 * fixed-width <linux/types.h> types and no padding the two ABIs could disagree
 * on.
 */
#ifndef FC_MAPS_H
#define FC_MAPS_H

#include <linux/types.h>

/* Map names as pinned under the pin dir (<pin-dir>/<name>). */
#define FC_MAP_BAN_EXACT   "fc_ban_exact"
#define FC_MAP_BAN_PFX4    "fc_ban_pfx4"
#define FC_MAP_BAN_PFX6    "fc_ban_pfx6"
#define FC_MAP_STATS       "fc_stats"
#define FC_MAP_CONFIG      "fc_config"

#define FC_PROG_XDP        "freqctl_xdp"
#define FC_PROG_TC         "freqctl_tc"

/* Capacity: one million bans of each kind. The maps are not preallocated, so
 * an empty map costs nothing. */
#define FC_MAX_BANS        1000000

/*
 * An address as the exact-ban hash keys it: IPv6 as is, IPv4 as the
 * v4-mapped IPv6 address ::ffff:a.b.c.d, so one hash serves both families.
 * (A real IPv6 packet never carries a v4-mapped source, so nothing collides.)
 */
struct fc_addr {
	__u8 a[16];
};

/* LPM trie keys. Prefixes get one trie per family so that an IPv6 prefix such
 * as ::/0 can never cover IPv4 traffic. */
struct fc_pfx4_key {
	__u32 prefixlen;
	__u8 a[4];
};

struct fc_pfx6_key {
	__u32 prefixlen;
	__u8 a[16];
};

/*
 * A ban. expires_ns is CLOCK_TAI in nanoseconds (bpf_ktime_get_tai_ns in the
 * kernel, clock_gettime(CLOCK_TAI) in userspace: the same wall-based clock on
 * both sides, so a TTL set from the store's UTC expiry is exact and stable
 * across syncs); 0 means the ban never expires.
 */
struct fc_ban {
	__u64 expires_ns;
};

/* One per-CPU counter. */
struct fc_counter {
	__u64 packets;
	__u64 bytes;
};

/* The fc_stats map holds one of these per CPU; the fields are the verdicts. */
struct fc_stats {
	struct fc_counter passed;      /* well-formed IP, no ban matched */
	struct fc_counter drop_exact;  /* dropped: exact-address ban */
	struct fc_counter drop_prefix; /* dropped: prefix (CIDR) ban */
	struct fc_counter non_ip;      /* passed: not IPv4/IPv6 (ARP, LLDP, ...) */
	struct fc_counter malformed;   /* passed: truncated or invalid headers */
};

/*
 * Published by the loader with the bans, read once per packet by the program:
 * lets it skip a lookup into a map that holds nothing (an empty LPM trie is
 * not free to search).
 */
struct fc_config {
	__u32 n_exact;
	__u32 n_pfx4;
	__u32 n_pfx6;
	__u32 pad;
};

#endif /* FC_MAPS_H */

/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The maps of the packet path, pinned by name under the loader's pin dir so
 * that every program instance (one per attached interface) and every run of
 * the loader share them. Key and value types come from maps/fc_maps.h, and
 * the BTF they carry lets `bpftool map dump` print field names.
 */
#ifndef FC_STATE_BPF_H
#define FC_STATE_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "fc_maps.h"

/* Exact addresses (bans, ip=ADDR policies): a hash lookup costs the same at
 * 1 entry and at 1M. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, FC_MAX_RULES);
	__type(key, struct fc_addr4);
	__type(value, struct fc_rule);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fc_exact4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, FC_MAX_RULES);
	__type(key, struct fc_addr6);
	__type(value, struct fc_rule);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fc_exact6 SEC(".maps");

/* Prefixes (see maps/fc_maps.h): IPv4 /1-/16 spread over one entry per /16,
 * longer IPv4 and all IPv6 prefixes in hashes keyed by length and address. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, FC_TOP4_SLOTS);
	__type(key, __u32);
	__type(value, struct fc_top4);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fc_top4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, FC_MAX_RULES);
	__type(key, struct fc_pfx4_key);
	__type(value, struct fc_rule);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fc_pfx4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, FC_MAX_RULES);
	__type(key, struct fc_pfx6_key);
	__type(value, struct fc_rule);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fc_pfx6 SEC(".maps");

/* fc_pfx6's /32 entries again, keyed by the /32: its tree's root (with the
 * one prefix inside, where there is one: struct fc_top6). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, FC_MAX_RULES);
	__type(key, struct fc_top6_key);
	__type(value, struct fc_top6);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fc_top6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fc_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fc_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fc_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fc_config SEC(".maps");

/* Policies by slot; array lookups compile to an address computation. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FC_POLICY_SLOTS);
	__type(key, __u32);
	__type(value, struct fc_policy);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fc_policies SEC(".maps");

/* Bucket state by slot, apart from the policy so that publishing a policy's
 * limits never overwrites its state. Mappable: the agent tops a fleet
 * policy's credit up and locks it by compare-and-exchange on the word the
 * packet path charges (maps/fc_fleet.h), in place, as exact as the packet
 * path's own CAS (a syscall's update would overwrite racing charges). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, FC_POLICY_SLOTS);
	__type(key, __u32);
	__type(value, struct fc_bucket);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fc_buckets SEC(".maps");

/* Per-source buckets of the ip=* policy. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FC_MAX_SOURCES);
	__type(key, struct fc_addr4);
	__type(value, struct fc_src_bucket);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fc_src4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FC_MAX_SOURCES);
	__type(key, struct fc_addr6);
	__type(value, struct fc_src_bucket);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fc_src6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FC_POLICY_SLOTS);
	__type(key, __u32);
	__type(value, struct fc_pstats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fc_pstats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fc_flood);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fc_flood SEC(".maps");

/* Packets dropped by a ban, by its source (FC_RULE_SET of the rule's flags):
 * 0 by hand or escalated, else the ban set's id. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FC_MAX_SETS + 1);
	__type(key, __u32);
	__type(value, struct fc_counter);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fc_setstats SEC(".maps");

#endif /* FC_STATE_BPF_H */

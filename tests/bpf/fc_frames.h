/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Test frames: Ethernet, VLAN tags, IPv4 (optionally with options)
 * or IPv6 (optionally with extension headers), then TCP, UDP or ICMP. Used by
 * the BPF_PROG_TEST_RUN tests and the benchmark.
 */
#ifndef FC_FRAMES_H
#define FC_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#define FC_FRAME_MAX 256
#define FC_FRAME_VLANS 8

struct fc_frame_spec {
	const char *src;     /* IPv4 or IPv6 source address (text) */
	uint8_t l4proto;     /* IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP(V6) */
	uint8_t tcp_flags;   /* for TCP */
	uint8_t vlans;       /* tags: 0, 1 (802.1Q), 2 (802.1ad + 802.1Q), ... FC_FRAME_VLANS (802.1ad outside) */
	uint8_t ip_options;  /* IPv4: 4-byte option words (0-10) */
	uint8_t ipv6_ext;    /* IPv6: hop-by-hop + destination options headers before L4 (0-10) */
	uint16_t payload;    /* bytes after the L4 header */
	uint8_t frag;        /* enum fc_frag: a fragment (IPv6: behind a fragment header) */
	uint8_t l4_bytes;    /* if set, the L4 header is cut to this many bytes (lengths agree) */
};

enum fc_frag {
	FC_FRAG_NONE,
	FC_FRAG_FIRST, /* offset 0, more fragments */
	FC_FRAG_LATER, /* offset 8 bytes: the part of a TCP header with the flags */
};

/* Builds the frame into buf; returns its length, or 0 if the spec is bad. */
size_t fc_frame_build(const struct fc_frame_spec *spec, uint8_t buf[FC_FRAME_MAX]);

/* The length of the headers alone: truncating below this makes the frame malformed. */
size_t fc_frame_headers_len(const struct fc_frame_spec *spec);

/* Where the source address ends: from this length on, a frame has a source. */
size_t fc_frame_source_len(const struct fc_frame_spec *spec);

#endif /* FC_FRAMES_H */

/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The packet parser shared by the XDP and the TC program, in two steps. The
 * first (fc_parse_src) reads Ethernet, VLAN tags and the IPv4 or IPv6 base
 * header: from there the source is known, and the caller decides bans on it.
 * The second (fc_parse_rest) walks what follows (IPv4 options and lengths,
 * IPv6 extension headers, the L4 header) and only notes what it could not
 * read: a malformed remainder never decides a verdict by itself, so dressing
 * a packet up can not take a banned or limited source past the checks.
 * Every read is checked against data_end first; helpers return the next
 * protocol (or 0 when done) or -1 when the frame is malformed.
 */
#ifndef FC_PARSE_BPF_H
#define FC_PARSE_BPF_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <stdbool.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "fc_maps.h"

/* 802.1ad outer + 802.1Q inner (QinQ). Each more tag parsed would have the
 * verifier walk the rest of the program once more (its offset is another
 * constant): a frame with more is dropped while rules are published. */
#define FC_MAX_VLAN     2
#define FC_MAX_IPV6_EXT 8 /* extension headers walked to find the L4 header */

#ifndef ETH_P_8021AD
#define ETH_P_8021AD 0x88A8
#endif
#define FC_IP_MF     0x2000
#define FC_IP_OFFSET 0x1fff

enum fc_parse_rc {
	FC_PARSE_OK,        /* the source is known */
	FC_PARSE_NOT_IP,
	FC_PARSE_MALFORMED, /* cut or invalid before the source address */
	FC_PARSE_TAGGED,    /* more VLAN tags than FC_MAX_VLAN: what they carry is not seen */
};

/* fc_pkt.flags: what fc_parse_rest could not read. */
#define FC_PKT_MALFORMED 0x1 /* something after the source is cut or invalid */
#define FC_PKT_L4_UNSEEN 0x2 /* the L4 header was not read (a fragment, cut, too many extension headers) */
#define FC_PKT_IPV6_HDR  0x4 /* the IP header is IPv6 (the source may still be a v4-mapped IPv4 one) */

struct fc_pkt {
	struct fc_addr6 saddr; /* IPv4 in a[0..3] */
	__u32 len;            /* the packet's length (the skb's at TC, headers and all) */
	__u8 family;          /* 4 or 6 */
	__u8 l4proto;         /* IPPROTO_*, as far as it is known; 0 when unknown */
	__u8 tcp_flags;       /* byte 13 of the TCP header, when read */
	__u8 flags;           /* FC_PKT_* */
};

struct fc_cursor {
	void *pos;
	void *end;
};

struct fc_vlan_hdr {
	__be16 tci;
	__be16 proto;
};

/* The IPv6 fragment header (the uapi headers do not export one). */
struct fc_frag_hdr {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off;
	__be32 identification;
};

/* Returns the EtherType after up to FC_MAX_VLAN tags, or -1. */
static __always_inline int fc_parse_eth(struct fc_cursor *c)
{
	struct ethhdr *eth = c->pos;
	struct fc_vlan_hdr *vlan;
	__u16 proto;
	int i;

	if ((void *)(eth + 1) > c->end)
		return -1;
	c->pos = eth + 1;
	proto = bpf_ntohs(eth->h_proto);

#pragma unroll
	for (i = 0; i < FC_MAX_VLAN; i++) {
		if (proto != ETH_P_8021Q && proto != ETH_P_8021AD)
			break;
		vlan = c->pos;
		if ((void *)(vlan + 1) > c->end)
			return -1;
		c->pos = vlan + 1;
		proto = bpf_ntohs(vlan->proto);
	}
	return proto;
}


/* The IPv4 base header: the source, and where the rest starts. */
static __always_inline int fc_parse_ipv4_src(struct fc_cursor *c, struct fc_pkt *pkt)
{
	struct iphdr *iph = c->pos;

	if ((void *)(iph + 1) > c->end)
		return -1;
	pkt->family = 4;
	__builtin_memcpy(pkt->saddr.a, &iph->saddr, 4);
	pkt->l4proto = iph->protocol;
	return 0;
}

/* The IPv6 base header: the source (a v4-mapped one as that IPv4 address). */
static __always_inline int fc_parse_ipv6_src(struct fc_cursor *c, struct fc_pkt *pkt)
{
	struct ipv6hdr *ip6h = c->pos;

	if ((void *)(ip6h + 1) > c->end)
		return -1;
	if (ip6h->saddr.in6_u.u6_addr32[0] == 0 && ip6h->saddr.in6_u.u6_addr32[1] == 0 &&
	    ip6h->saddr.in6_u.u6_addr32[2] == bpf_htonl(0x0000ffff)) {
		pkt->family = 4;
		__builtin_memcpy(pkt->saddr.a, &ip6h->saddr.in6_u.u6_addr32[3], 4);
	} else {
		pkt->family = 6;
		__builtin_memcpy(pkt->saddr.a, &ip6h->saddr, sizeof(pkt->saddr.a));
	}
	pkt->l4proto = ip6h->nexthdr; /* the first header after it, until fc_parse_rest walks on */
	return 0;
}

/* The rest of an IPv4 packet: returns the L4 protocol, 0 when there is no L4
 * header to read (a later fragment), or -1. */
static __always_inline int fc_parse_ipv4(struct fc_cursor *c)
{
	struct iphdr *iph = c->pos;
	__u32 hlen, tot_len;

	if ((void *)(iph + 1) > c->end)
		return -1;
	if (iph->version != 4 || iph->ihl < 5)
		return -1;
	hlen = iph->ihl * 4;
	tot_len = bpf_ntohs(iph->tot_len);
	if (tot_len < hlen)
		return -1;
	/* Shorter than the header says: truncated (trailing padding is fine). */
	if (c->pos + tot_len > c->end)
		return -1;
	c->pos += hlen;
	if (iph->frag_off & bpf_htons(FC_IP_OFFSET))
		return 0;
	return iph->protocol;
}

/* Whether the IPv6 header at c is whole, of version 6 and no longer than
 * the frame (truncated, as for IPv4; a payload length of 0 is a jumbogram,
 * whose length is elsewhere). */
static __always_inline bool fc_ipv6_hdr_ok(const struct fc_cursor *c)
{
	struct ipv6hdr *ip6h = c->pos;

	return (void *)(ip6h + 1) <= c->end && ip6h->version == 6 &&
	       (!ip6h->payload_len || (void *)(ip6h + 1) + bpf_ntohs(ip6h->payload_len) <= c->end);
}

/* Whether an IPv6 next-header value is an extension header fc_parse_ipv6
 * walks past. */
static __always_inline bool fc_ipv6_ext(__u8 next)
{
	return next == IPPROTO_HOPOPTS || next == IPPROTO_ROUTING || next == IPPROTO_DSTOPTS ||
	       next == IPPROTO_AH || next == IPPROTO_FRAGMENT;
}

/* The rest of an IPv6 packet: returns the L4 protocol after the extension
 * headers, 0 when there is none to read (a later fragment, IPPROTO_NONE), or
 * -1; *next is the last next-header value seen. */
static __always_inline int fc_parse_ipv6(struct fc_cursor *c, __u8 *next)
{
	struct ipv6hdr *ip6h = c->pos;
	struct ipv6_opt_hdr *opt;
	struct fc_frag_hdr *frag;
	int i;

	if (!fc_ipv6_hdr_ok(c))
		return -1;
	c->pos = ip6h + 1;
	*next = ip6h->nexthdr;

#pragma unroll
	for (i = 0; i <= FC_MAX_IPV6_EXT; i++) {
		switch (*next) {
		case IPPROTO_HOPOPTS:
		case IPPROTO_ROUTING:
		case IPPROTO_DSTOPTS:
			opt = c->pos;
			if ((void *)(opt + 1) > c->end)
				return -1;
			*next = opt->nexthdr;
			c->pos += (opt->hdrlen + 1) * 8;
			break;
		case IPPROTO_AH:
			opt = c->pos;
			if ((void *)(opt + 1) > c->end)
				return -1;
			*next = opt->nexthdr;
			c->pos += (opt->hdrlen + 2) * 4;
			break;
		case IPPROTO_FRAGMENT:
			frag = c->pos;
			if ((void *)(frag + 1) > c->end)
				return -1;
			*next = frag->nexthdr;
			if (frag->frag_off & bpf_htons(0xfff8))
				return 0; /* a later fragment: no L4 header */
			c->pos = frag + 1;
			break;
		case IPPROTO_NONE:
			return 0;
		default:
			return *next;
		}
	}
	*next = 0; /* more extension headers than we walk: the L4 protocol is unknown */
	return -1;
}

/* Checks that the L4 header is whole and notes the TCP flags. */
static __always_inline int fc_parse_l4(struct fc_cursor *c, struct fc_pkt *pkt, int proto)
{
	struct tcphdr *tcph;

	switch (proto) {
	case IPPROTO_TCP:
		tcph = c->pos;
		if ((void *)(tcph + 1) > c->end)
			return -1;
		if (tcph->doff < 5)
			return -1;
		pkt->tcp_flags = ((__u8 *)tcph)[13];
		return 0;
	case IPPROTO_UDP:
		if (c->pos + sizeof(struct udphdr) > c->end)
			return -1;
		return 0;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if (c->pos + 4 > c->end) /* type, code, checksum */
			return -1;
		return 0;
	default:
		return 0; /* other protocols: the source address is all we need */
	}
}

/* Step one: returns FC_PARSE_OK with the source in pkt and c at the IP
 * header, or why there is no source to decide on. */
static __always_inline enum fc_parse_rc fc_parse_src(struct fc_cursor *c, struct fc_pkt *pkt)
{
	int proto = fc_parse_eth(c);

	if (proto < 0)
		return FC_PARSE_MALFORMED;
	if (proto == ETH_P_IP) {
		proto = fc_parse_ipv4_src(c, pkt);
	} else if (proto == ETH_P_IPV6) {
		pkt->flags |= FC_PKT_IPV6_HDR;
		proto = fc_parse_ipv6_src(c, pkt);
	} else {
		return proto == ETH_P_8021Q || proto == ETH_P_8021AD ? FC_PARSE_TAGGED : FC_PARSE_NOT_IP;
	}
	return proto < 0 ? FC_PARSE_MALFORMED : FC_PARSE_OK;
}

/* The end of step two: notes the L4 protocol proto (0: none to read, -1:
 * malformed before it), and checks its header, at c. */
static __always_inline void fc_parse_l4_note(struct fc_cursor *c, struct fc_pkt *pkt, int proto)
{
	if (proto < 0) {
		pkt->flags |= FC_PKT_MALFORMED | FC_PKT_L4_UNSEEN;
		return;
	}
	if (proto == 0) {
		pkt->flags |= FC_PKT_L4_UNSEEN;
		return;
	}
	pkt->l4proto = (__u8)proto;
	if (fc_parse_l4(c, pkt, proto) < 0)
		pkt->flags |= FC_PKT_MALFORMED | FC_PKT_L4_UNSEEN;
}

/* Step two, from the IP header on: fills l4proto and tcp_flags as far as
 * they can be read, and flags what could not be. */
static __always_inline void fc_parse_rest(struct fc_cursor *c, struct fc_pkt *pkt)
{
	__u8 next = 0;
	int proto;

	if (!(pkt->flags & FC_PKT_IPV6_HDR)) {
		proto = fc_parse_ipv4(c);
	} else {
		proto = fc_parse_ipv6(c, &next);
		pkt->l4proto = next;
	}
	fc_parse_l4_note(c, pkt, proto);
}

/* The IP header starts at most this far into the frame. */
#define FC_L3_MAX (ETH_HLEN + FC_MAX_VLAN * sizeof(struct fc_vlan_hdr))

/* Step two, on the frame data to end whose IP header is off bytes in. */
static __always_inline int fc_parse_rest_at(void *data, void *end, struct fc_pkt *pkt, __u32 off)
{
	struct fc_cursor c = { .pos = data, .end = end };

	if (!pkt || off > FC_L3_MAX)
		return 0;
	c.pos += off;
	fc_parse_rest(&c, pkt);
	return 0;
}

/*
 * Step two as a global function of each program type, for IPv6 extension
 * headers (fc_parse_after): inlined after the ban lookups, their walk would
 * be verified again for each of the many states those leave; the verifier
 * checks it once. It reads the frame's bounds from the context (a global
 * function is given no packet pointer).
 */
__noinline int fc_parse_rest_xdp(struct xdp_md *ctx, struct fc_pkt *pkt, __u32 off)
{
	return fc_parse_rest_at((void *)(long)ctx->data, (void *)(long)ctx->data_end, pkt, off);
}

__noinline int fc_parse_rest_tc(struct __sk_buff *skb, struct fc_pkt *pkt, __u32 off)
{
	return fc_parse_rest_at((void *)(long)skb->data, (void *)(long)skb->data_end, pkt, off);
}

/*
 * Step two as the caller runs it, after the ban lookups, on the frame from
 * data (ctx its program's context, tc whether TC's): inline, but for the
 * walk of IPv6 extension headers, a global function. The IPv6 header's next
 * header (in l4proto since step one) says which.
 */
static __always_inline void fc_parse_after(struct fc_cursor *c, struct fc_pkt *pkt, void *ctx, bool tc, void *data)
{
	struct ipv6hdr *ip6h = c->pos;
	int proto;

	if (!(pkt->flags & FC_PKT_IPV6_HDR)) {
		proto = fc_parse_ipv4(c);
	} else if (fc_ipv6_ext(pkt->l4proto)) {
		if (tc)
			fc_parse_rest_tc(ctx, pkt, c->pos - data);
		else
			fc_parse_rest_xdp(ctx, pkt, c->pos - data);
		return;
	} else if (!fc_ipv6_hdr_ok(c)) {
		proto = -1;
		pkt->l4proto = 0; /* as fc_parse_ipv6 leaves it */
	} else {
		c->pos = ip6h + 1;
		proto = pkt->l4proto == IPPROTO_NONE ? 0 : pkt->l4proto;
	}
	fc_parse_l4_note(c, pkt, proto);
}

#endif /* FC_PARSE_BPF_H */

// SPDX-License-Identifier: BSD-2-Clause
#include <arpa/inet.h>
#include <string.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>

#include "fc_frames.h"

static size_t fc_l4_full(uint8_t proto)
{
	switch (proto) {
	case IPPROTO_TCP:
		return sizeof(struct tcphdr);
	case IPPROTO_UDP:
		return sizeof(struct udphdr);
	default:
		return 8; /* ICMP echo */
	}
}

static int fc_is_v6(const struct fc_frame_spec *s)
{
	return strchr(s->src, ':') != NULL;
}

/* What of the L4 header the frame carries. */
static size_t fc_l4_len(const struct fc_frame_spec *s)
{
	return s->l4_bytes ? s->l4_bytes : fc_l4_full(s->l4proto);
}

size_t fc_frame_source_len(const struct fc_frame_spec *s)
{
	return ETH_HLEN + s->vlans * 4u + (fc_is_v6(s) ? sizeof(struct ipv6hdr) : sizeof(struct iphdr));
}

size_t fc_frame_headers_len(const struct fc_frame_spec *s)
{
	size_t l3 = fc_is_v6(s) ? sizeof(struct ipv6hdr) + s->ipv6_ext * 8u + (s->frag ? 8u : 0) :
				  sizeof(struct iphdr) + s->ip_options * 4u;

	return ETH_HLEN + s->vlans * 4u + l3 + fc_l4_len(s);
}

static void fc_l4_build(const struct fc_frame_spec *s, int v6, uint8_t *p, size_t l4len);

static uint8_t *fc_put16(uint8_t *p, uint16_t v)
{
	v = htons(v);
	memcpy(p, &v, 2);
	return p + 2;
}

size_t fc_frame_build(const struct fc_frame_spec *s, uint8_t buf[FC_FRAME_MAX])
{
	static const uint8_t dmac[6] = { 0x02, 0, 0, 0, 0, 1 }, smac[6] = { 0x02, 0, 0, 0, 0, 2 };
	size_t len = fc_frame_headers_len(s) + s->payload, l4len = fc_l4_len(s) + s->payload;
	uint8_t l4[64] = { 0 }, *p = buf, next;
	int v6 = fc_is_v6(s), i;

	if (len > FC_FRAME_MAX || s->vlans > FC_FRAME_VLANS || s->ip_options > 10 || s->ipv6_ext > 10 ||
	    s->l4_bytes > fc_l4_full(s->l4proto) || s->frag > FC_FRAG_LATER)
		return 0;
	memset(buf, 0, len);
	memcpy(p, dmac, 6);
	memcpy(p + 6, smac, 6);
	p += 12;
	for (i = 0; i < s->vlans; i++) { /* 802.1ad tags outside, the innermost 802.1Q */
		p = fc_put16(p, i + 1 < s->vlans ? 0x88A8 : ETH_P_8021Q);
		p = fc_put16(p, (uint16_t)(100 * (i + 1)));
	}
	p = fc_put16(p, v6 ? ETH_P_IPV6 : ETH_P_IP);

	if (!v6) {
		struct iphdr *ip = (struct iphdr *)p;

		ip->version = 4;
		ip->ihl = (uint8_t)(5 + s->ip_options);
		ip->tot_len = htons((uint16_t)(ip->ihl * 4 + l4len));
		ip->ttl = 64;
		ip->protocol = s->l4proto;
		if (s->frag)
			ip->frag_off = htons(s->frag == FC_FRAG_FIRST ? 0x2000 : 1); /* MF, or offset 8 bytes */
		if (inet_pton(AF_INET, s->src, &ip->saddr) != 1)
			return 0;
		inet_pton(AF_INET, "198.18.255.1", &ip->daddr);
		p += ip->ihl * 4;
		/* Options: NOPs, ending with End of Options. */
		memset((uint8_t *)(ip + 1), 1, s->ip_options * 4u);
		if (s->ip_options)
			p[-1] = 0;
	} else {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)p;

		ip6->version = 6;
		ip6->payload_len = htons((uint16_t)(s->ipv6_ext * 8 + (s->frag ? 8 : 0) + l4len));
		ip6->hop_limit = 64;
		if (inet_pton(AF_INET6, s->src, &ip6->saddr) != 1)
			return 0;
		inet_pton(AF_INET6, "2001:2::ff", &ip6->daddr);
		p += sizeof(*ip6);
		/* Hop-by-hop then destination options, 8 bytes each (PadN), then
		 * a fragment header if asked. */
		next = s->frag ? IPPROTO_FRAGMENT : s->l4proto;
		ip6->nexthdr = s->ipv6_ext ? IPPROTO_HOPOPTS : next;
		for (i = 0; i < s->ipv6_ext; i++) {
			p[0] = i + 1 < s->ipv6_ext ? IPPROTO_DSTOPTS : next;
			p[1] = 0;
			p[2] = 1; /* PadN */
			p[3] = 4;
			p += 8;
		}
		if (s->frag) {
			p[0] = s->l4proto;
			fc_put16(p + 2, s->frag == FC_FRAG_FIRST ? 1 : 8); /* M, or offset 8 bytes */
			p += 8;
		}
	}

	/* The L4 header is built whole, then cut to l4_bytes. */
	{
		uint8_t *hdr = p;

		p = l4;
		fc_l4_build(s, v6, p, l4len);
		memcpy(hdr, l4, fc_l4_len(s));
		p = hdr + fc_l4_len(s);
	}
	return len;
}

static void fc_l4_build(const struct fc_frame_spec *s, int v6, uint8_t *p, size_t l4len)
{
	if (s->l4proto == IPPROTO_TCP) {
		struct tcphdr *tcp = (struct tcphdr *)p;

		tcp->source = htons(40000);
		tcp->dest = htons(80);
		tcp->doff = 5;
		p[13] = s->tcp_flags;
	} else if (s->l4proto == IPPROTO_UDP) {
		struct udphdr *udp = (struct udphdr *)p;

		udp->source = htons(40000);
		udp->dest = htons(53);
		udp->len = htons((uint16_t)l4len);
	} else {
		p[0] = v6 ? 128 : 8; /* echo request */
	}
}

/*
 * The lab's `nft` for guests without Debian's nftables (big-endian MIPS):
 * `nft -f FILE` loads the lab's router ruleset (xtask/src/lab/guest.rs,
 * `ruleset()`) into the kernel's nf_tables over netlink, as one batch
 * (flush ruleset, table, two base chains, three rules), and nothing else.
 *
 * FILE must be byte for byte the ruleset this program was built with
 * (XL_RULESET, from the generated xl-ruleset.h): the netlink messages
 * below spell out that ruleset and no other, so a changed ruleset fails
 * here rather than loading something else. The messages are the ones
 * nftables 1.0.6 sends for it (`nft --debug=netlink`); xtask's tests load
 * both into fresh network namespaces of the host and compare the kernel's
 * listings (xtask/tests/lab_static_guest.rs).
 *
 * Formats: netlink (linux/netlink.h), nfnetlink batches
 * (linux/netfilter/nfnetlink.h: BATCH_BEGIN, messages, BATCH_END, res_id =
 * NFNL_SUBSYS_NFTABLES), nf_tables attributes (linux/netfilter/
 * nf_tables.h): numbers in attributes are big-endian, register data
 * (NFTA_DATA_VALUE) is in the CPU's byte order, as nftables writes it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "xl-ruleset.h"

#define IFNAMSIZ 16

static unsigned char buf[8192] __attribute__((aligned(4)));
static size_t used;
static uint32_t seq;
/* What each acknowledged message was, for error messages. */
static const char *what[16];
static uint32_t first_seq;
static unsigned acked_messages;

static void *put(const void *data, size_t n)
{
	size_t padded = NLMSG_ALIGN(n);
	if (used + padded > sizeof(buf)) {
		fputs("nft: batch too large\n", stderr);
		exit(1);
	}
	void *at = buf + used;
	memset(at, 0, padded);
	if (data)
		memcpy(at, data, n);
	used += padded;
	return at;
}

/* Starts a message; returns its offset, for msg_end. */
static size_t msg_begin(uint16_t type, uint16_t flags, uint8_t family, const char *why)
{
	size_t start = used;
	struct nlmsghdr *h = put(NULL, sizeof(*h));
	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | flags;
	h->nlmsg_seq = seq++;
	struct nfgenmsg *g = put(NULL, sizeof(*g));
	g->nfgen_family = family;
	g->version = NFNETLINK_V0;
	g->res_id = htons(type == NFNL_MSG_BATCH_BEGIN || type == NFNL_MSG_BATCH_END
				  ? NFNL_SUBSYS_NFTABLES : 0);
	if (flags & NLM_F_ACK) {
		what[acked_messages++] = why;
	}
	return start;
}

static void msg_end(size_t start)
{
	((struct nlmsghdr *)(buf + start))->nlmsg_len = used - start;
}

static void attr(uint16_t type, const void *data, size_t n)
{
	struct nlattr *a = put(NULL, NLA_HDRLEN);
	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + n;
	put(data, n);
}

static void attr_str(uint16_t type, const char *s)
{
	attr(type, s, strlen(s) + 1);
}

static void attr_be32(uint16_t type, uint32_t v)
{
	v = htonl(v);
	attr(type, &v, sizeof(v));
}

static size_t nest_begin(uint16_t type)
{
	size_t start = used;
	struct nlattr *a = put(NULL, NLA_HDRLEN);
	a->nla_type = type | NLA_F_NESTED;
	return start;
}

static void nest_end(size_t start)
{
	((struct nlattr *)(buf + start))->nla_len = used - start;
}

/* NFTA_DATA_VALUE inside a nest of `type`. */
static void data_value(uint16_t type, const void *v, size_t n)
{
	size_t d = nest_begin(type);
	attr(NFTA_DATA_VALUE, v, n);
	nest_end(d);
}

static size_t expr_elem, expr_data;

static void expr_begin(const char *name)
{
	expr_elem = nest_begin(NFTA_LIST_ELEM);
	attr_str(NFTA_EXPR_NAME, name);
	expr_data = nest_begin(NFTA_EXPR_DATA);
}

static void expr_end(void)
{
	nest_end(expr_data);
	nest_end(expr_elem);
}

/* meta load iifname/oifname => reg 1; cmp eq reg 1 NAME (IFNAMSIZ bytes). */
static void ifname_is(uint32_t key, const char *name)
{
	char padded[IFNAMSIZ] = {0};
	strncpy(padded, name, IFNAMSIZ - 1);
	expr_begin("meta");
	attr_be32(NFTA_META_KEY, key);
	attr_be32(NFTA_META_DREG, NFT_REG_1);
	expr_end();
	expr_begin("cmp");
	attr_be32(NFTA_CMP_SREG, NFT_REG_1);
	attr_be32(NFTA_CMP_OP, NFT_CMP_EQ);
	data_value(NFTA_CMP_DATA, padded, sizeof(padded));
	expr_end();
}

/* immediate reg 0 accept */
static void verdict_accept(void)
{
	expr_begin("immediate");
	attr_be32(NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT);
	size_t d = nest_begin(NFTA_IMMEDIATE_DATA);
	size_t v = nest_begin(NFTA_DATA_VERDICT);
	attr_be32(NFTA_VERDICT_CODE, NF_ACCEPT);
	nest_end(v);
	nest_end(d);
	expr_end();
}

static size_t rule_begin(const char *chain, const char *why)
{
	size_t m = msg_begin((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWRULE,
			     NLM_F_CREATE | NLM_F_APPEND | NLM_F_ACK, NFPROTO_IPV4, why);
	attr_str(NFTA_RULE_TABLE, "xl");
	attr_str(NFTA_RULE_CHAIN, chain);
	return m;
}

static void base_chain(const char *name, uint32_t hook, int32_t priority, uint32_t policy,
		       const char *type)
{
	size_t m = msg_begin((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWCHAIN,
			     NLM_F_CREATE | NLM_F_ACK, NFPROTO_IPV4, name);
	attr_str(NFTA_CHAIN_TABLE, "xl");
	attr_str(NFTA_CHAIN_NAME, name);
	size_t h = nest_begin(NFTA_CHAIN_HOOK);
	attr_be32(NFTA_HOOK_HOOKNUM, hook);
	attr_be32(NFTA_HOOK_PRIORITY, (uint32_t)priority);
	nest_end(h);
	attr_be32(NFTA_CHAIN_POLICY, policy);
	attr_str(NFTA_CHAIN_TYPE, type);
	msg_end(m);
}

/* The batch of XL_RULESET. */
static void build(void)
{
	size_t m = msg_begin(NFNL_MSG_BATCH_BEGIN, 0, AF_UNSPEC, "batch begin");
	msg_end(m);
	first_seq = seq;

	/* flush ruleset: delete every table of every family. */
	m = msg_begin((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_DELTABLE, NLM_F_ACK, NFPROTO_UNSPEC,
		      "flush ruleset");
	msg_end(m);

	m = msg_begin((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_ACK,
		      NFPROTO_IPV4, "table ip xl");
	attr_str(NFTA_TABLE_NAME, "xl");
	attr_be32(NFTA_TABLE_FLAGS, 0);
	msg_end(m);

	/* type filter hook forward priority filter (0); policy drop; */
	base_chain("forward", NF_INET_FORWARD, 0, NF_DROP, "filter");
	/* type nat hook postrouting priority srcnat (100); policy accept; */
	base_chain("postrouting", NF_INET_POST_ROUTING, 100, NF_ACCEPT, "nat");

	/* ct state established,related accept */
	m = rule_begin("forward", "ct state established,related accept");
	size_t e = nest_begin(NFTA_RULE_EXPRESSIONS);
	expr_begin("ct");
	attr_be32(NFTA_CT_KEY, NFT_CT_STATE);
	attr_be32(NFTA_CT_DREG, NFT_REG_1);
	expr_end();
	uint32_t mask = NF_CT_STATE_BIT(IP_CT_ESTABLISHED) | NF_CT_STATE_BIT(IP_CT_RELATED);
	uint32_t zero = 0;
	expr_begin("bitwise");
	attr_be32(NFTA_BITWISE_SREG, NFT_REG_1);
	attr_be32(NFTA_BITWISE_DREG, NFT_REG_1);
	attr_be32(NFTA_BITWISE_LEN, sizeof(mask));
	data_value(NFTA_BITWISE_MASK, &mask, sizeof(mask));
	data_value(NFTA_BITWISE_XOR, &zero, sizeof(zero));
	expr_end();
	expr_begin("cmp");
	attr_be32(NFTA_CMP_SREG, NFT_REG_1);
	attr_be32(NFTA_CMP_OP, NFT_CMP_NEQ);
	data_value(NFTA_CMP_DATA, &zero, sizeof(zero));
	expr_end();
	verdict_accept();
	nest_end(e);
	msg_end(m);

	/* iifname "lan" oifname "wan" accept */
	m = rule_begin("forward", "iifname \"lan\" oifname \"wan\" accept");
	e = nest_begin(NFTA_RULE_EXPRESSIONS);
	ifname_is(NFT_META_IIFNAME, "lan");
	ifname_is(NFT_META_OIFNAME, "wan");
	verdict_accept();
	nest_end(e);
	msg_end(m);

	/* oifname "wan" masquerade */
	m = rule_begin("postrouting", "oifname \"wan\" masquerade");
	e = nest_begin(NFTA_RULE_EXPRESSIONS);
	ifname_is(NFT_META_OIFNAME, "wan");
	expr_begin("masq");
	expr_end();
	nest_end(e);
	msg_end(m);

	m = msg_begin(NFNL_MSG_BATCH_END, 0, AF_UNSPEC, "batch end");
	msg_end(m);
}

/* Sends the batch; fails on the first error the kernel acknowledges. */
static int load(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
	if (fd < 0) {
		perror("nft: netlink socket");
		return 1;
	}
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	if (sendto(fd, buf, used, 0, (struct sockaddr *)&kernel, sizeof(kernel)) != (ssize_t)used) {
		perror("nft: sending the batch");
		return 1;
	}
	static unsigned char reply[16384] __attribute__((aligned(4)));
	unsigned acks = 0;
	while (acks < acked_messages) {
		ssize_t n = recv(fd, reply, sizeof(reply), 0);
		if (n < 0) {
			perror("nft: reading the kernel's replies");
			return 1;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)reply; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type != NLMSG_ERROR)
				continue;
			const struct nlmsgerr *err = NLMSG_DATA(h);
			uint32_t i = h->nlmsg_seq - first_seq;
			if (err->error != 0) {
				fprintf(stderr, "nft: Could not process rule: %s (%s)\n",
					strerror(-err->error), i < acked_messages ? what[i] : "?");
				return 1;
			}
			acks++;
		}
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3 || strcmp(argv[1], "-f") != 0) {
		fputs("usage: nft -f FILE (the lab's loader of its router ruleset only)\n", stderr);
		return 2;
	}
	FILE *f = fopen(argv[2], "r");
	if (!f) {
		fprintf(stderr, "nft: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	static char text[sizeof(XL_RULESET) + 1];
	size_t n = fread(text, 1, sizeof(text), f);
	fclose(f);
	if (n != sizeof(XL_RULESET) - 1 || memcmp(text, XL_RULESET, n) != 0) {
		fprintf(stderr,
			"nft: %s is not the ruleset this loader was built for: the lab's nft "
			"(lab/static-guest/nft.c) loads only xtask's router ruleset\n",
			argv[2]);
		return 1;
	}
	seq = (uint32_t)getpid() << 8;
	build();
	return load();
}

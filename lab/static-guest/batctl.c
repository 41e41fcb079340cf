/*
 * The lab's `batctl` for guests without Debian's batctl (big-endian MIPS):
 * the read-only part of batctl's command line that the lab's mesh needs,
 * over batman-adv's generic netlink family ("batadv",
 * include/uapi/linux/batman_adv.h), and nothing else.
 *
 * Debian's batctl cannot be built here: the Debian mirror this lab uses
 * answers 404 for batctl's source files (batctl_2023.0.orig.tar.gz, its
 * debian.tar.xz, and bookworm-backports' and trixie's 2025.0), so this
 * program stands in for it, as lab/static-guest/nft.c stands in for nft.
 * Creating the mesh is the kernel's rtnetlink, which busybox's ip speaks:
 * `ip link add bat0 type batadv`, `ip link set eth1 master bat0`.
 *
 *   batctl -v                      version; batman-adv's from sysfs
 *   batctl [-m MESHIF | meshif MESHIF] COMMAND, MESHIF default bat0:
 *     ra | routing_algo            the kernel's routing algorithms
 *     if | interface               the mesh's hard interfaces
 *     o  | originators             the originator table
 *     n  | neighbors               the neighbor table
 *
 * Output follows batctl 2023.0's layout (a header line, then one line per
 * entry, `*` marking the best next hop), so the lab parses either. Exit
 * status 0 on success; 1 with a message on stderr otherwise.
 */
#include <errno.h>
#include <linux/batman_adv.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define VERSION "xtask-lab-subset"

static int sock = -1;
static uint32_t seq;
static uint16_t family;
static unsigned char buf[32768] __attribute__((aligned(4)));

static void die(const char *what)
{
	fprintf(stderr, "batctl: %s\n", what);
	exit(1);
}

/* Attributes of one genetlink message, indexed by type (0 if absent). */
struct attrs {
	struct nlattr *a[BATADV_ATTR_MAX + 1];
};

static void parse(struct nlmsghdr *h, size_t fixed, struct attrs *out, int max)
{
	memset(out, 0, sizeof(*out));
	struct nlattr *a = (struct nlattr *)((char *)NLMSG_DATA(h) + NLMSG_ALIGN(fixed));
	int left = (int)h->nlmsg_len - (int)NLMSG_LENGTH(NLMSG_ALIGN(fixed));
	while (left >= (int)sizeof(*a) && a->nla_len >= sizeof(*a) && a->nla_len <= left) {
		int type = a->nla_type & NLA_TYPE_MASK;
		if (type <= max)
			out->a[type] = a;
		left -= NLA_ALIGN(a->nla_len);
		a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len));
	}
}

static void *payload(struct nlattr *a)
{
	return (char *)a + NLA_HDRLEN;
}

static uint32_t u32_of(struct nlattr *a)
{
	uint32_t v = 0;
	if (a)
		memcpy(&v, payload(a), sizeof(v));
	return v;
}

static uint8_t u8_of(struct nlattr *a)
{
	return a ? *(uint8_t *)payload(a) : 0;
}

static const char *mac_of(struct nlattr *a, char *text)
{
	const unsigned char *m = a ? payload(a) : (const unsigned char *)"\0\0\0\0\0\0";
	sprintf(text, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
	return text;
}

static const char *ifname_of(struct nlattr *index, char *name)
{
	if (!index || !if_indextoname(u32_of(index), name))
		strcpy(name, "?");
	return name;
}

/* Sends one request: generic netlink header `cmd`, then one u32 or string
 * attribute when `attr` is not 0. */
static void request(uint16_t type, uint8_t cmd, uint16_t flags, uint16_t attr,
		    const void *value, size_t len)
{
	unsigned char msg[256] __attribute__((aligned(4)));
	memset(msg, 0, sizeof(msg));
	struct nlmsghdr *h = (struct nlmsghdr *)msg;
	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | flags;
	h->nlmsg_seq = ++seq;
	struct genlmsghdr *g = NLMSG_DATA(h);
	g->cmd = cmd;
	g->version = 1;
	size_t used = NLMSG_LENGTH(GENL_HDRLEN);
	if (attr) {
		struct nlattr *a = (struct nlattr *)(msg + used);
		a->nla_type = attr;
		a->nla_len = NLA_HDRLEN + len;
		memcpy(payload(a), value, len);
		used += NLA_ALIGN(a->nla_len);
	}
	h->nlmsg_len = used;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	if (sendto(sock, msg, used, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		die("sending a netlink request failed");
}

/* Reads the answers to the last request, calling `each` per message, until
 * the dump's NLMSG_DONE or, for a plain request, its one answer. Returns 0,
 * or the kernel's error as a negative errno. */
static int answers(int dump, void (*each)(struct nlmsghdr *, void *), void *ctx)
{
	for (;;) {
		ssize_t n = recv(sock, buf, sizeof(buf), 0);
		if (n < 0)
			die("reading netlink answers failed");
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);
				return e->error;
			}
			each(h, ctx);
			if (!dump)
				return 0;
		}
	}
}

static void family_id(struct nlmsghdr *h, void *ctx)
{
	struct attrs at;
	(void)ctx;
	parse(h, GENL_HDRLEN, &at, CTRL_ATTR_FAMILY_ID);
	if (at.a[CTRL_ATTR_FAMILY_ID])
		family = *(uint16_t *)payload(at.a[CTRL_ATTR_FAMILY_ID]);
}

static void open_batadv(void)
{
	sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (sock < 0)
		die("cannot open a generic netlink socket");
	request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, NLM_F_ACK, CTRL_ATTR_FAMILY_NAME,
		BATADV_NL_NAME, sizeof(BATADV_NL_NAME));
	int err = answers(0, family_id, NULL);
	if (err || !family)
		die("this kernel has no batman-adv (no generic netlink family \"batadv\")");
}

static unsigned mesh_index(const char *mesh)
{
	unsigned index = if_nametoindex(mesh);
	if (!index) {
		fprintf(stderr, "batctl: no interface %s\n", mesh);
		exit(1);
	}
	return index;
}

static void dump(uint8_t cmd, const char *mesh, void (*each)(struct nlmsghdr *, void *), void *ctx)
{
	uint32_t index = mesh ? mesh_index(mesh) : 0;
	request(family, cmd, NLM_F_DUMP, mesh ? BATADV_ATTR_MESH_IFINDEX : 0, &index, sizeof(index));
	int err = answers(1, each, ctx);
	if (err) {
		fprintf(stderr, "batctl: the kernel refused the request: %s%s\n", strerror(-err),
			err == -EOPNOTSUPP && mesh ? " (is it a batman-adv interface with a primary hard interface up?)" : "");
		exit(1);
	}
}

/* The mesh's own attributes, for headers. */
struct mesh_info {
	char version[32], algo[32], mesh_addr[18], hard_name[IF_NAMESIZE], hard_addr[18];
};

static void mesh_info_of(struct nlmsghdr *h, void *ctx)
{
	struct mesh_info *m = ctx;
	struct attrs at;
	parse(h, GENL_HDRLEN, &at, BATADV_ATTR_MAX);
	if (at.a[BATADV_ATTR_VERSION])
		snprintf(m->version, sizeof(m->version), "%s", (char *)payload(at.a[BATADV_ATTR_VERSION]));
	if (at.a[BATADV_ATTR_ALGO_NAME])
		snprintf(m->algo, sizeof(m->algo), "%s", (char *)payload(at.a[BATADV_ATTR_ALGO_NAME]));
	if (at.a[BATADV_ATTR_HARD_IFNAME])
		snprintf(m->hard_name, sizeof(m->hard_name), "%s", (char *)payload(at.a[BATADV_ATTR_HARD_IFNAME]));
	mac_of(at.a[BATADV_ATTR_MESH_ADDRESS], m->mesh_addr);
	mac_of(at.a[BATADV_ATTR_HARD_ADDRESS], m->hard_addr);
}

static struct mesh_info header(const char *mesh)
{
	struct mesh_info m;
	memset(&m, 0, sizeof(m));
	uint32_t index = mesh_index(mesh);
	request(family, BATADV_CMD_GET_MESH_INFO, 0, BATADV_ATTR_MESH_IFINDEX, &index, sizeof(index));
	int err = answers(0, mesh_info_of, &m);
	if (err) {
		fprintf(stderr, "batctl: %s is not a batman-adv interface: %s\n", mesh, strerror(-err));
		exit(1);
	}
	printf("[B.A.T.M.A.N. adv %s, MainIF/MAC: %s/%s (%s/%s %s)]\n", m.version,
	       m.hard_name[0] ? m.hard_name : "none", m.hard_addr, mesh, m.mesh_addr, m.algo);
	return m;
}

static void print_algo(struct nlmsghdr *h, void *ctx)
{
	struct attrs at;
	(void)ctx;
	parse(h, GENL_HDRLEN, &at, BATADV_ATTR_MAX);
	if (at.a[BATADV_ATTR_ALGO_NAME])
		printf(" * %s\n", (char *)payload(at.a[BATADV_ATTR_ALGO_NAME]));
}

static void print_hardif(struct nlmsghdr *h, void *ctx)
{
	struct attrs at;
	char name[IF_NAMESIZE];
	(void)ctx;
	parse(h, GENL_HDRLEN, &at, BATADV_ATTR_MAX);
	printf("%s: %s\n", ifname_of(at.a[BATADV_ATTR_HARD_IFINDEX], name),
	       at.a[BATADV_ATTR_ACTIVE] ? "active" : "inactive");
}

/* One originator or neighbor line; `orig` is 0 for the neighbor table. */
static void print_entry(struct nlmsghdr *h, int orig)
{
	struct attrs at;
	char a[18], n[18], name[IF_NAMESIZE];
	parse(h, GENL_HDRLEN, &at, BATADV_ATTR_MAX);
	uint32_t seen = u32_of(at.a[BATADV_ATTR_LAST_SEEN_MSECS]);
	char metric[32] = "";
	if (at.a[BATADV_ATTR_TQ])
		snprintf(metric, sizeof(metric), "(%3u)", u8_of(at.a[BATADV_ATTR_TQ]));
	else if (at.a[BATADV_ATTR_THROUGHPUT])
		snprintf(metric, sizeof(metric), "(%9u.%1u)", u32_of(at.a[BATADV_ATTR_THROUGHPUT]) / 10,
			 u32_of(at.a[BATADV_ATTR_THROUGHPUT]) % 10);
	ifname_of(at.a[BATADV_ATTR_HARD_IFINDEX], name);
	if (orig)
		printf(" %c %s %4u.%03us   %s %s [%10s]\n", at.a[BATADV_ATTR_FLAG_BEST] ? '*' : ' ',
		       mac_of(at.a[BATADV_ATTR_ORIG_ADDRESS], a), seen / 1000, seen % 1000, metric,
		       mac_of(at.a[BATADV_ATTR_NEIGH_ADDRESS], n), name);
	else
		printf("%10s %s %4u.%03us %s\n", name, mac_of(at.a[BATADV_ATTR_NEIGH_ADDRESS], n),
		       seen / 1000, seen % 1000, metric);
}

static void print_originator(struct nlmsghdr *h, void *ctx)
{
	(void)ctx;
	print_entry(h, 1);
}

static void print_neighbor(struct nlmsghdr *h, void *ctx)
{
	(void)ctx;
	print_entry(h, 0);
}

static void version(void)
{
	char text[64] = "module not loaded";
	FILE *f = fopen("/sys/module/batman_adv/version", "r");
	if (f) {
		if (fgets(text, sizeof(text), f))
			text[strcspn(text, "\n")] = 0;
		fclose(f);
	}
	printf("batctl %s [batman-adv: %s]\n", VERSION, text);
}

static void usage(void)
{
	fputs("Usage: batctl -v | batctl [-m MESHIF | meshif MESHIF] ra|if|o|n\n"
	      "(the lab's read-only batctl; create a mesh with `ip link add bat0 type batadv`\n"
	      "and `ip link set DEV master bat0`)\n",
	      stderr);
	exit(1);
}

int main(int argc, char **argv)
{
	const char *mesh = "bat0";
	int i = 1;
	if (argc == 2 && !strcmp(argv[1], "-v")) {
		version();
		return 0;
	}
	if (i + 1 < argc && (!strcmp(argv[i], "-m") || !strcmp(argv[i], "meshif"))) {
		mesh = argv[i + 1];
		i += 2;
	}
	if (i + 1 != argc)
		usage();
	const char *cmd = argv[i];
	static const char *const known[] = { "ra", "routing_algo", "if", "interface",
					     "o", "originators", "n", "neighbors" };
	size_t k = 0;
	while (k < sizeof(known) / sizeof(known[0]) && strcmp(cmd, known[k]))
		k++;
	if (k == sizeof(known) / sizeof(known[0]))
		usage();
	open_batadv();
	if (!strcmp(cmd, "ra") || !strcmp(cmd, "routing_algo")) {
		puts("Available routing algorithms:");
		dump(BATADV_CMD_GET_ROUTING_ALGOS, NULL, print_algo, NULL);
	} else if (!strcmp(cmd, "if") || !strcmp(cmd, "interface")) {
		dump(BATADV_CMD_GET_HARDIF, mesh, print_hardif, NULL);
	} else if (!strcmp(cmd, "o") || !strcmp(cmd, "originators")) {
		struct mesh_info m = header(mesh);
		if (!strcmp(m.algo, "BATMAN_IV"))
			puts("   Originator        last-seen (#/255) Nexthop           [outgoingIF]");
		else
			puts("   Originator        last-seen ( throughput)  Nexthop           [outgoingIF]");
		dump(BATADV_CMD_GET_ORIGINATORS, mesh, print_originator, NULL);
	} else {
		header(mesh);
		puts("IF             Neighbor              last-seen");
		dump(BATADV_CMD_GET_NEIGHBORS, mesh, print_neighbor, NULL);
	}
	return 0;
}

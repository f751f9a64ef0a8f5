// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_sport: watch the RoCE v2 packets of one RC connection on a network
 * interface and check their UDP source ports against ib_core's rule
 * (rdma_get_udp_sport with flow label 0, as RoCE NICs, rxe and rrxe use it):
 *
 *     v = lqpn * rqpn;  v ^= v >> 20;  v ^= v >> 40;  fl = v & 0xfffff
 *     sport = 0xC000 | ((fl & 0x3fff) ^ ((fl & 0xfc000) >> 14))
 *
 * The two QP numbers are the destination QPs of the packets in each
 * direction; the rule is symmetric, so both directions must use the same
 * port. Only RC packets (BTH opcodes 0x00..0x1f) to UDP port 4791 count.
 *
 * usage: rrxe_sport -i IFACE [-n PACKETS] [-t SECONDS]
 *   -i IFACE    interface to watch (AF_PACKET, both directions)
 *   -n PACKETS  stop after this many RC packets in each direction (default 100)
 *   -t SECONDS  give up after SECONDS (default 60)
 *
 * Prints each direction's destination QPN and source ports, the expected
 * port and PASS or FAIL. Exit status: 0 every packet used the expected port,
 * 1 a packet did not (or one QP used two ports), 2 usage or setup error,
 * 4 too few packets before the time limit.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ROCE_PORT 4791

/* One direction of the connection: packets out of (or into) this host. */
struct dir {
	const char *name;
	unsigned long pkts;
	uint32_t dqpn;		/* destination QPN of the first packet */
	uint16_t sport;		/* source port of the first packet */
	unsigned long other_qpn, other_sport; /* packets that differed */
};

static uint16_t expected_sport(uint32_t lqpn, uint32_t rqpn)
{
	uint64_t v = (uint64_t)lqpn * rqpn;
	uint32_t fl;

	v ^= v >> 20;
	v ^= v >> 40;
	fl = (uint32_t)(v & 0xfffff);
	return (uint16_t)(0xC000 | ((fl & 0x3fff) ^ ((fl & 0xfc000) >> 14)));
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Account one IPv4 packet; ignore all but RC over RoCE v2. */
static void take(struct dir *d, const uint8_t *ip, ssize_t len)
{
	size_t ihl;
	const uint8_t *udp, *bth;
	uint16_t sport, dport;
	uint32_t dqpn;

	if (len < 20 || (ip[0] >> 4) != 4 || ip[9] != IPPROTO_UDP)
		return;
	ihl = (size_t)(ip[0] & 0xf) * 4;
	if (ihl < 20 || (size_t)len < ihl + 8 + 12)
		return;
	udp = ip + ihl;
	dport = (uint16_t)(udp[2] << 8 | udp[3]);
	if (dport != ROCE_PORT)
		return;
	sport = (uint16_t)(udp[0] << 8 | udp[1]);
	bth = udp + 8;
	if (bth[0] >= 0x20)	/* not RC */
		return;
	dqpn = (uint32_t)bth[5] << 16 | (uint32_t)bth[6] << 8 | bth[7];
	if (d->pkts == 0) {
		d->dqpn = dqpn;
		d->sport = sport;
	} else {
		if (dqpn != d->dqpn)
			d->other_qpn++;
		if (sport != d->sport)
			d->other_sport++;
	}
	d->pkts++;
}

int main(int argc, char **argv)
{
	const char *iface = NULL;
	unsigned long want = 100;
	double limit = 60, end;
	struct dir out = { .name = "out" }, in = { .name = "in" };
	struct sockaddr_ll sll;
	uint16_t exp;
	int fd, c, bad = 0;

	while ((c = getopt(argc, argv, "i:n:t:")) != -1) {
		switch (c) {
		case 'i': iface = optarg; break;
		case 'n': want = strtoul(optarg, NULL, 0); break;
		case 't': limit = atof(optarg); break;
		default:
			fprintf(stderr, "usage: rrxe_sport -i IFACE [-n PACKETS] [-t SECONDS]\n");
			return 2;
		}
	}
	if (!iface || !want) {
		fprintf(stderr, "usage: rrxe_sport -i IFACE [-n PACKETS] [-t SECONDS]\n");
		return 2;
	}
	/* ETH_P_ALL: protocol taps see only received packets, not sent ones. */
	fd = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_ALL));
	if (fd < 0) {
		perror("rrxe_sport: socket(AF_PACKET)");
		return 2;
	}
	c = 4 << 20;	/* room for bursts between reads */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &c, sizeof(c));
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = (int)if_nametoindex(iface);
	if (!sll.sll_ifindex || bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		fprintf(stderr, "rrxe_sport: %s: %s\n", iface, strerror(errno));
		return 2;
	}
	printf("rrxe_sport: watching %s\n", iface);
	fflush(stdout);
	end = now_s() + limit;
	while (out.pkts < want || in.pkts < want) {
		uint8_t buf[2048];
		struct sockaddr_ll from;
		socklen_t fl = sizeof(from);
		struct pollfd p = { .fd = fd, .events = POLLIN };
		double left = end - now_s();
		ssize_t n;

		if (left <= 0)
			break;
		if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
			continue;
		n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
		if (n < 0 || from.sll_protocol != htons(ETH_P_IP))
			continue;
		take(from.sll_pkttype == PACKET_OUTGOING ? &out : &in, buf, n);
	}
	close(fd);
	exp = expected_sport(out.dqpn, in.dqpn);
	for (struct dir *d = &out; d; d = d == &out ? &in : NULL) {
		printf("rrxe_sport: %-3s %lu RC packets to QPN 0x%06x, source port 0x%04x "
		       "(%lu to another QPN, %lu from another port)\n",
		       d->name, d->pkts, d->dqpn, d->sport, d->other_qpn, d->other_sport);
		if (d->pkts && (d->sport != exp || d->other_qpn || d->other_sport))
			bad = 1;
	}
	printf("rrxe_sport: expected source port 0x%04x (QPNs 0x%06x and 0x%06x)\n",
	       exp, out.dqpn, in.dqpn);
	if (out.pkts < want || in.pkts < want) {
		printf("rrxe_sport: FAIL: fewer than %lu packets each way in %.0f s\n", want, limit);
		return 4;
	}
	printf("rrxe_sport: %s\n", bad ? "FAIL: source port differs" : "PASS");
	return bad;
}

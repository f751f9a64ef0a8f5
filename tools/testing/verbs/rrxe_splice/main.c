// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_splice: sends RoCE v2 packets over UDP/IPv6 from SRC to DST, port 4791,
 * each twice: once copied from a buffer (send) and once spliced from the pages
 * of a file (sendfile), which the kernel hands on as page fragments that their
 * owner may still write (SKBFL_SHARED_FRAG). Each packet is an RC SEND ONLY to
 * QP 0xabcde (which does not exist) with a valid ICRC: a receiver that checks
 * the ICRC of both kinds counts every one as "no such QP".
 *
 * IPv6, because its ICRC covers nothing the sender's kernel picks (IPv4's
 * covers the identification field).
 *
 * usage: rrxe_splice SRC6 DST6 COUNT
 * Prints "sent N copied, N spliced"; exits non-zero on any failed send.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crc32.h"

#define ROCE_PORT 4791
#define BTH_LEN 12
#define PAYLOAD_LEN 16
#define ICRC_LEN 4
#define ROCE_LEN (BTH_LEN + PAYLOAD_LEN + ICRC_LEN)
#define UDP_LEN (8 + ROCE_LEN)

/*
 * The ICRC of @roce (BTH to ICRC) sent from @src:@sport to @dst:4791: over
 * eight bytes of ones (the LRH a RoCE v2 packet has none of), the IPv6 header
 * with traffic class, flow label and hop limit as ones, the UDP header with its
 * checksum as ones, the BTH with its byte 4 as ones, then the payload.
 */
static uint32_t icrc6(const struct in6_addr *src, const struct in6_addr *dst, uint16_t sport,
		      const uint8_t *roce)
{
	uint8_t ones[8], p[40 + 8 + BTH_LEN];
	uint32_t crc;

	memset(ones, 0xff, sizeof(ones));
	memset(p, 0, sizeof(p));
	p[0] = 0x6f;
	p[1] = p[2] = p[3] = 0xff;
	p[4] = UDP_LEN >> 8;
	p[5] = UDP_LEN & 0xff;
	p[6] = IPPROTO_UDP;
	p[7] = 0xff;
	memcpy(p + 8, src, 16);
	memcpy(p + 24, dst, 16);
	p[40] = sport >> 8;
	p[41] = sport & 0xff;
	p[42] = ROCE_PORT >> 8;
	p[43] = ROCE_PORT & 0xff;
	p[44] = UDP_LEN >> 8;
	p[45] = UDP_LEN & 0xff;
	p[46] = p[47] = 0xff;
	memcpy(p + 48, roce, BTH_LEN);
	p[48 + 4] = 0xff;
	crc = crc32_le(0xffffffffu, ones, sizeof(ones));
	crc = crc32_le(crc, p, sizeof(p));
	crc = crc32_le(crc, roce + BTH_LEN, PAYLOAD_LEN);
	return ~crc;
}

int main(int argc, char **argv)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6 }, b = { .sin6_family = AF_INET6 };
	socklen_t alen = sizeof(a);
	char path[] = "/tmp/rrxe_splice.XXXXXX";
	uint8_t roce[ROCE_LEN] = { 0 };
	long count, copied = 0, spliced = 0;
	uint32_t crc;
	int s, f;

	if (argc != 4 || inet_pton(AF_INET6, argv[1], &a.sin6_addr) != 1 ||
	    inet_pton(AF_INET6, argv[2], &b.sin6_addr) != 1 || (count = atol(argv[3])) <= 0) {
		fprintf(stderr, "usage: %s SRC6 DST6 COUNT\n", argv[0]);
		return 2;
	}
	b.sin6_port = htons(ROCE_PORT);
	s = socket(AF_INET6, SOCK_DGRAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) ||
	    connect(s, (struct sockaddr *)&b, sizeof(b)) ||
	    getsockname(s, (struct sockaddr *)&a, &alen)) {
		perror("rrxe_splice: socket");
		return 1;
	}
	/* BTH: RC SEND ONLY, P_Key 0xffff, QP 0xabcde, PSN 0; then the payload. */
	roce[0] = 0x04;
	roce[2] = roce[3] = 0xff;
	roce[5] = 0x0a;
	roce[6] = 0xbc;
	roce[7] = 0xde;
	for (int i = 0; i < PAYLOAD_LEN; i++)
		roce[BTH_LEN + i] = 0xa0 + i;
	crc = icrc6(&a.sin6_addr, &b.sin6_addr, ntohs(a.sin6_port), roce);
	for (int i = 0; i < ICRC_LEN; i++)
		roce[BTH_LEN + PAYLOAD_LEN + i] = crc >> (8 * i);

	f = mkstemp(path);
	if (f < 0 || write(f, roce, sizeof(roce)) != (ssize_t)sizeof(roce)) {
		perror("rrxe_splice: file");
		return 1;
	}
	unlink(path);
	for (long i = 0; i < count; i++) {
		off_t off = 0;

		if (send(s, roce, sizeof(roce), 0) == (ssize_t)sizeof(roce))
			copied++;
		else
			perror("rrxe_splice: send");
		if (sendfile(s, f, &off, sizeof(roce)) == (ssize_t)sizeof(roce))
			spliced++;
		else
			perror("rrxe_splice: sendfile");
	}
	printf("sent %ld copied, %ld spliced\n", copied, spliced);
	return copied == count && spliced == count ? 0 : 1;
}

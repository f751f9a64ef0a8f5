// SPDX-License-Identifier: GPL-2.0
/*
 * The control channel: one TCP connection between the owner (listens) and
 * the accessor (connects, retrying until the owner listens). Fixed-size
 * messages; every wait is bounded by g_limit_s seconds.
 */
#define _GNU_SOURCE
#include <netdb.h>
#include <poll.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "mwp.h"

static const char *msg_name(uint32_t t)
{
	static const char *const n[] = {
		"?", "HELLO", "WINDOWS", "WROTE", "INV_SENT", "VERDICT", "ABORT",
	};

	return t < sizeof(n) / sizeof(n[0]) ? n[t] : "?";
}

/* A listening socket on every IPv4 address, TCP port `port`. */
int ctrl_listen(int port)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = INADDR_ANY,
	};
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1)) {
		snprintf(g_reason, sizeof(g_reason), "TCP port %d: %s", port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* The accessor's connection, within g_limit_s. */
int ctrl_accept(int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int fd, one = 1;

	CHECK(poll(&p, 1, g_limit_s * 1000) == 1, "no accessor connected within %d s", g_limit_s);
	fd = accept(lfd, NULL, NULL);
	CHECK(fd >= 0, "accept: %s", strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Connect to host:port, again every 0.5 s while nobody listens, for g_limit_s. */
int ctrl_connect(const char *host, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timespec t0;
	int fd, one = 1;

	CHECK(inet_pton(AF_INET, host, &sa.sin_addr) == 1, "not an IPv4 address: %s", host);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(fd >= 0, "socket: %s", strerror(errno));
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		snprintf(g_reason, sizeof(g_reason), "connecting to %s:%d: %s", host, port,
			 strerror(errno));
		close(fd);
		if (ms_since(&t0) >= g_limit_s * 1000L)
			return -1;
		usleep(500 * 1000);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	vlog("control channel to %s:%d after %ld ms", host, port, ms_since(&t0));
	return fd;
}

int ctrl_send(int fd, const struct msg *m)
{
	const uint8_t *p = (const uint8_t *)m;
	size_t done = 0;
	ssize_t n;

	while (done < sizeof(*m)) {
		n = send(fd, p + done, sizeof(*m) - done, MSG_NOSIGNAL);
		CHECK(n > 0, "sending %s: %s", msg_name(m->type), n ? strerror(errno) : "closed");
		done += (size_t)n;
	}
	return 0;
}

/*
 * The next message, which must be of type `want`, within g_limit_s. An ABORT
 * from the other end fails with its reason.
 */
int ctrl_recv(int fd, struct msg *m, enum msg_type want)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint8_t *b = (uint8_t *)m;
	struct timespec t0;
	size_t done = 0;
	ssize_t n;
	long left;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (done < sizeof(*m)) {
		left = g_limit_s * 1000L - ms_since(&t0);
		CHECK(left > 0 && poll(&p, 1, (int)left) == 1,
		      "waiting for %s from the other end: nothing within %d s", msg_name(want),
		      g_limit_s);
		n = recv(fd, b + done, sizeof(*m) - done, 0);
		CHECK(n > 0, "waiting for %s: %s", msg_name(want),
		      n ? strerror(errno) : "the other end closed the connection");
		done += (size_t)n;
	}
	m->text[sizeof(m->text) - 1] = 0;
	CHECK(m->type != MSG_ABORT, "the other end failed: %s", m->text);
	CHECK(m->type == want, "got %s, expected %s", msg_name(m->type), msg_name(want));
	return 0;
}

/* Accessor: send m and wait for the owner's verdict on it. */
int ctrl_ask(int fd, const struct msg *m)
{
	struct msg v;

	if (ctrl_send(fd, m) || ctrl_recv(fd, &v, MSG_VERDICT))
		return -1;
	CHECK(v.arg == 0, "the owner's check failed: %s", v.text);
	return 0;
}

/* Owner: tell the accessor whether its checks passed (rc 0) or why not; returns rc. */
int ctrl_verdict(int fd, int rc)
{
	struct msg v = { .type = MSG_VERDICT, .arg = rc ? 1 : 0 };

	if (rc)
		snprintf(v.text, sizeof(v.text), "%.500s", g_reason);
	if (ctrl_send(fd, &v))
		return -1;
	return rc;
}

/* Tell the other end that this one failed (g_reason), so it stops waiting. */
void ctrl_abort(int fd)
{
	struct msg m = { .type = MSG_ABORT };
	char saved[sizeof(g_reason)];

	if (fd < 0)
		return;
	memcpy(saved, g_reason, sizeof(saved));
	snprintf(m.text, sizeof(m.text), "%.500s", g_reason);
	ctrl_send(fd, &m);
	memcpy(g_reason, saved, sizeof(saved));
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Completion channels and asynchronous events, every wait bounded.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>

#include "vt.h"

/* poll() on a completion channel for `ms`: 1 if readable, 0 if not, -1 on error. */
int channel_ready(struct ibv_comp_channel *ch, int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	int n = poll(&pfd, 1, ms);

	return n < 0 ? -1 : n > 0 && (pfd.revents & POLLIN);
}

int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}


/*
 * Wait up to ms for an async event of `type` on object `obj` (a QP, SRQ or CQ);
 * every event read is acknowledged at once and logged. 1 if it came, 0 if not,
 * -1 on error.
 */
int wait_event(struct env *e, enum ibv_event_type type, void *obj, int ms)
{
	struct pollfd pfd = { .fd = e->ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	struct timespec t0;
	long left;
	void *what;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		left = ms - ms_since(&t0);
		n = poll(&pfd, 1, left > 0 ? (int)left : 0);
		CHECK(n >= 0, "poll(async_fd): %s", errname(errno));
		if (n == 0 || !(pfd.revents & POLLIN))
			return 0;
		OK(ibv_get_async_event(e->ctx, &ev));
		switch (ev.event_type) {
		case IBV_EVENT_CQ_ERR:
			what = ev.element.cq;
			break;
		case IBV_EVENT_SRQ_ERR:
		case IBV_EVENT_SRQ_LIMIT_REACHED:
			what = ev.element.srq;
			break;
		default:
			what = ev.element.qp;
			break;
		}
		/* Before any check: destroying the object waits for the acknowledgement. */
		ibv_ack_async_event(&ev);
		vlog("async event %s on %p after %ld ms", ibv_event_type_str(ev.event_type), what,
		     ms_since(&t0));
		if (ev.event_type == type && what == obj)
			return 1;
	}
}

/* Wait ms for async events; the number of `type` on obj that came (all are acknowledged). */
int count_events(struct env *e, enum ibv_event_type type, void *obj, int ms)
{
	struct timespec t0;
	long left;
	int n = 0, r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((left = ms - ms_since(&t0)) > 0) {
		r = wait_event(e, type, obj, (int)left);
		if (r < 0)
			return -1;
		if (!r)
			break;
		n++;
	}
	return n;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The environment of a case: the device, its context, port, RoCE v2 GID, and
 * an address vector to the port's own GID.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>

#include "vt.h"

struct ibv_device *g_dev;
int g_gid_arg = -1;
int g_driver = DRV_OTHER;

int vt_driver(void)
{
	const char *name;

	if (g_driver != DRV_OTHER || !g_dev)
		return g_driver;
	name = ibv_get_device_name(g_dev);
	if (!strncmp(name, "rrxe", 4))
		return DRV_RRXE;
	if (!strncmp(name, "rxe", 3))
		return DRV_RXE;
	return DRV_OTHER;
}

const char *vt_driver_name(int d)
{
	return d == DRV_RXE ? "rxe" : d == DRV_RRXE ? "rrxe" : "other";
}

static int is_v4mapped(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g->raw, pfx, sizeof(pfx));
}

const char *gid_str(const union ibv_gid *g)
{
	static char buf[INET6_ADDRSTRLEN];

	return inet_ntop(AF_INET6, g->raw, buf, sizeof(buf)) ? buf : "?";
}

/* Find the RoCE v2 GID to use: -g, else IPv4-mapped RoCE v2, else any RoCE v2. */
static int find_gid(struct env *e)
{
	struct ibv_gid_entry ent;
	int i, any = -1, v4 = -1;

	if (g_gid_arg >= 0) {
		if (ibv_query_gid(e->ctx, PORT, g_gid_arg, &e->gid))
			return -1;
		e->gid_index = g_gid_arg;
		return 0;
	}
	for (i = 0; i < e->port.gid_tbl_len; i++) {
		if (ibv_query_gid_ex(e->ctx, PORT, i, &ent, 0))
			continue;
		if (ent.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (any < 0)
			any = i;
		if (v4 < 0 && is_v4mapped(&ent.gid))
			v4 = i;
	}
	i = v4 >= 0 ? v4 : any;
	if (i < 0)
		return -1;
	e->gid_index = i;
	return ibv_query_gid(e->ctx, PORT, i, &e->gid);
}

/*
 * The device list, with g_dev set to the device called `name` (NULL: the
 * first); NULL with the reason in g_reason if there is none. The caller frees
 * the list after its last use of g_dev.
 */
struct ibv_device **env_device(const char *name)
{
	struct ibv_device **list;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		snprintf(g_reason, sizeof(g_reason), "no RDMA devices (%s)", errname(errno));
		if (list)
			ibv_free_device_list(list);
		return NULL;
	}
	for (i = 0; i < n; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			break;
	if (i == n) {
		snprintf(g_reason, sizeof(g_reason), "device %s not found", name);
		ibv_free_device_list(list);
		return NULL;
	}
	g_dev = list[i];
	return list;
}

int env_open(struct env *e)
{
	memset(e, 0, sizeof(*e));
	errno = 0;
	e->ctx = ibv_open_device(g_dev);
	if (!e->ctx) {
		snprintf(g_reason, sizeof(g_reason), "ibv_open_device: %s", errname(errno));
		return -1;
	}
	if (ibv_query_device(e->ctx, &e->dev)) {
		snprintf(g_reason, sizeof(g_reason), "ibv_query_device: %s", errname(errno));
		return -1;
	}
	if (ibv_query_port(e->ctx, PORT, &e->port)) {
		snprintf(g_reason, sizeof(g_reason), "ibv_query_port: %s", errname(errno));
		return -1;
	}
	if (find_gid(e)) {
		snprintf(g_reason, sizeof(g_reason), "no RoCE v2 GID on port %d", PORT);
		return -1;
	}
	return 0;
}

void env_close(struct env *e)
{
	if (e->ctx && ibv_close_device(e->ctx))
		fprintf(stderr, "ibv_close_device failed: %s\n", errname(errno));
	e->ctx = NULL;
}

/* An address vector to the port's own RoCE v2 GID (loopback). */
void self_ah_attr(struct env *e, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->grh.dgid = e->gid;
	ah->grh.sgid_index = e->gid_index;
	ah->grh.hop_limit = 64;
	ah->port_num = PORT;
	ah->sl = 0;
}

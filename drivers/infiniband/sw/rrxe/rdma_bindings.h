/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Headers rrxe generates Rust bindings for, and the prototypes of the C shims
 * in rrxe_shims.c (static inlines and macros that bindgen cannot see).
 */
#include <linux/netdevice.h>
#include <linux/crc32.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/rdma_netlink.h>
#include <uapi/rdma/rdma_user_rxe.h>
#include <uapi/rdma/ib_user_verbs.h>

/* Size and layout probes, compared against the Rust view at load time. */
size_t rrxe_sizeof_ib_device(void);

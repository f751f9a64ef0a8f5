// SPDX-License-Identifier: GPL-2.0
/*
 * C shims for rrxe: static inline functions and macros of the RDMA and
 * networking headers that Rust cannot call through bindgen.
 */
#include "rdma_bindings.h"

size_t rrxe_sizeof_ib_device(void)
{
	return sizeof(struct ib_device);
}

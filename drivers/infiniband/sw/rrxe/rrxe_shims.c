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

bool rrxe_ib_device_try_get(struct ib_device *dev)
{
	return ib_device_try_get(dev);
}

struct net_device *rrxe_netdev_notifier_info_to_dev(void *info)
{
	return netdev_notifier_info_to_dev(info);
}

bool rrxe_netif_running(const struct net_device *ndev)
{
	return netif_running(ndev);
}

bool rrxe_netif_carrier_ok(const struct net_device *ndev)
{
	return netif_carrier_ok(ndev);
}

unsigned int rrxe_netdev_mtu(const struct net_device *ndev)
{
	return READ_ONCE(ndev->mtu);
}

const unsigned char *rrxe_netdev_addr(const struct net_device *ndev)
{
	return ndev->dev_addr;
}

void rrxe_dev_hold(struct net_device *ndev)
{
	dev_hold(ndev);
}

void rrxe_dev_put(struct net_device *ndev)
{
	dev_put(ndev);
}

unsigned long rrxe_copy_from_user(void *to, const void __user *from, unsigned long n)
{
	return copy_from_user(to, from, n);
}

unsigned long rrxe_copy_to_user(void __user *to, const void *from, unsigned long n)
{
	return copy_to_user(to, from, n);
}

bool rrxe_user_buffer_is_zero(const void __user *p, size_t len)
{
	return ib_is_buffer_cleared(p, len);
}

struct ib_ucontext *rrxe_udata_to_ucontext(struct ib_udata *udata)
{
	return container_of(udata, struct uverbs_attr_bundle, driver_udata)->context;
}

struct ib_udata *rrxe_bundle_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

unsigned long rrxe_mmap_entry_offset(const struct rdma_user_mmap_entry *entry)
{
	return rdma_user_mmap_get_offset(entry);
}

struct ib_umem *rrxe_umem_get(struct ib_device *dev, unsigned long addr, size_t size, int access)
{
	return ib_umem_get_va(dev, addr, size, access);
}

/* vmalloc_user is a macro around vmalloc_user_noprof in 7.3. */
void *rrxe_vmalloc_user(unsigned long size)
{
	return vmalloc_user(size);
}

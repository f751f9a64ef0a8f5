// SPDX-License-Identifier: GPL-2.0
/*
 * C shims for rrxe: static inline functions and macros of the RDMA and
 * networking headers that Rust cannot call through bindgen.
 */
#include <linux/if_vlan.h>
#include <linux/bottom_half.h>
#include <linux/highmem.h>
#include <linux/hmm.h>
#include <linux/inetdevice.h>
#include <linux/skbuff.h>
#include <linux/workqueue.h>
#include <net/addrconf.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/route.h>
#include "rdma_bindings.h"

size_t rrxe_sizeof_ib_device(void)
{
	return sizeof(struct ib_device);
}

bool rrxe_ib_device_try_get(struct ib_device *dev)
{
	return ib_device_try_get(dev);
}

/* A reference to the device's memory (its struct device), not to its registration. */
void rrxe_ib_device_hold(struct ib_device *dev)
{
	get_device(&dev->dev);
}

void rrxe_ib_device_release(struct ib_device *dev)
{
	put_device(&dev->dev);
}

/*
 * Returns once no unregistration of the device is in progress: ib_core runs
 * every one of them, dealloc_driver included, under the device's
 * unregistration lock, which ib_unregister_device takes (it unregisters a
 * device that is still registered, and does nothing more to one that is
 * not). Drops the reference of rrxe_ib_device_hold.
 */
void rrxe_ib_device_unregister_and_release(struct ib_device *dev)
{
	ib_unregister_device(dev);
	put_device(&dev->dev);
}

u16 rrxe_rdma_get_udp_sport(u32 fl, u32 lqpn, u32 rqpn)
{
	return rdma_get_udp_sport(fl, lqpn, rqpn);
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

unsigned long rrxe_umem_num_pages(struct ib_umem *umem)
{
	return ib_umem_num_pages(umem);
}

/* The pinned pages of @umem in address order; returns how many were stored. */
unsigned long rrxe_umem_pages(struct ib_umem *umem, struct page **pages, unsigned long n)
{
	struct sg_page_iter iter;
	unsigned long i = 0;

	for_each_sgtable_page(&umem->sgt_append.sgt, &iter, 0) {
		if (i == n)
			break;
		pages[i++] = sg_page_iter_page(&iter);
	}
	return i;
}

void *rrxe_kmap_local_page(struct page *page)
{
	return kmap_local_page(page);
}

void rrxe_kunmap_local(void *addr)
{
	kunmap_local(addr);
}

bool rrxe_mmu_range_blockable(const struct mmu_notifier_range *range)
{
	return mmu_notifier_range_blockable(range);
}

void rrxe_mmu_interval_set_seq(struct mmu_interval_notifier *mni, unsigned long seq)
{
	mmu_interval_set_seq(mni, seq);
}

struct ib_umem_odp *rrxe_umem_odp_of_notifier(struct mmu_interval_notifier *mni)
{
	return container_of(mni, struct ib_umem_odp, notifier);
}

unsigned long rrxe_umem_odp_start(struct ib_umem_odp *odp)
{
	return ib_umem_start(odp);
}

unsigned long rrxe_umem_odp_end(struct ib_umem_odp *odp)
{
	return ib_umem_end(odp);
}

bool rrxe_umem_odp_writable(struct ib_umem_odp *odp)
{
	return odp->umem.writable;
}

void rrxe_umem_odp_lock(struct ib_umem_odp *odp)
{
	mutex_lock(&odp->umem_mutex);
}

void rrxe_umem_odp_unlock(struct ib_umem_odp *odp)
{
	mutex_unlock(&odp->umem_mutex);
}

/* Faults in (or, without @fault, looks up) @len bytes at user address @va;
 * on success (>= 0) returns with umem_mutex held. */
int rrxe_umem_odp_map_and_lock(struct ib_umem_odp *odp, u64 va, u64 len, bool write, bool fault)
{
	return ib_umem_odp_map_dma_and_lock(odp, va, len, write ? HMM_PFN_WRITE : 0, fault);
}

/* The page holding user address @va if it is mapped, and writable if
 * @write; NULL otherwise. Only valid while umem_mutex is held. */
struct page *rrxe_umem_odp_page(struct ib_umem_odp *odp, unsigned long va, bool write)
{
	unsigned long need = HMM_PFN_VALID | (write ? HMM_PFN_WRITE : 0);
	unsigned long pfn;

	lockdep_assert_held(&odp->umem_mutex);
	if (va < ib_umem_start(odp) || va >= ib_umem_end(odp))
		return NULL;
	pfn = odp->map.pfn_list[(va - ib_umem_start(odp)) >> odp->page_shift];
	if ((pfn & need) != need)
		return NULL;
	return hmm_pfn_to_page(pfn);
}

void rrxe_skb_free(struct sk_buff *skb)
{
	consume_skb(skb);
}

struct sk_buff *rrxe_skb_clone(struct sk_buff *skb)
{
	return skb_clone(skb, GFP_ATOMIC);
}

/* Whether @skb, which its owner no longer needs, can be made an empty packet
 * again by rrxe_skb_reuse: a packet as alloc_skb() makes them (one owner, never
 * cloned, a kmalloc'ed head: no page fragment, page pool or emergency memory,
 * which the flags rrxe_skb_reuse clears tell skb_free_head about), linear, and
 * holding nothing that would need releasing (route, socket, destructor,
 * conntrack, extensions, zero-copy state). */
bool rrxe_skb_reusable(struct sk_buff *skb)
{
	const struct skb_shared_info *shinfo = skb_shinfo(skb);

	return !skb_shared(skb) && !skb->cloned && atomic_read(&shinfo->dataref) == 1 &&
	       skb->fclone == SKB_FCLONE_UNAVAILABLE && !skb->head_frag &&
	       !skb->pp_recycle && !skb->pfmemalloc && !skb_is_nonlinear(skb) &&
	       !shinfo->nr_frags && !shinfo->frag_list && !shinfo->tx_flags &&
	       !skb_zcopy(skb) && !skb->destructor && !skb->sk && !skb_dst(skb) &&
	       !skb_nfct(skb) && !skb_has_extensions(skb);
}

/* Makes a reusable @skb (see rrxe_skb_reusable) as alloc_skb() leaves a new
 * one, with @headroom bytes reserved, if its head holds @size bytes; false
 * (the skb unchanged) otherwise. */
bool rrxe_skb_reuse(struct sk_buff *skb, unsigned int headroom, unsigned int size)
{
	struct skb_shared_info *shinfo = skb_shinfo(skb);

	if (!rrxe_skb_reusable(skb) || skb_end_offset(skb) < size || headroom > size)
		return false;
	/* What __alloc_skb clears and sets; head, end, truesize and users (1)
	 * stay as they are. */
	memset(skb, 0, offsetof(struct sk_buff, tail));
	skb->data = skb->head;
	skb_reset_tail_pointer(skb);
	skb->mac_header = (typeof(skb->mac_header))~0U;
	skb->transport_header = (typeof(skb->transport_header))~0U;
	skb->alloc_cpu = raw_smp_processor_id();
	memset(shinfo, 0, offsetof(struct skb_shared_info, dataref));
	skb_reserve(skb, headroom);
	return true;
}

/* rust/sync */

void rrxe_cond_resched(void)
{
	cond_resched();
}

/*
 * alloc_workqueue is a macro; high priority, usable in reclaim, and per-CPU
 * (a work item runs on the CPU that queued it) or unbound.
 */
struct workqueue_struct *rrxe_alloc_workqueue(const char *name, bool per_cpu)
{
	unsigned int flags = WQ_HIGHPRI | WQ_MEM_RECLAIM;

	flags |= per_cpu ? WQ_PERCPU : WQ_UNBOUND;
	return alloc_workqueue("%s", flags, 0, name);
}

void rrxe_xa_init_bh(struct xarray *xa)
{
	xa_init_flags(xa, XA_FLAGS_LOCK_BH);
}

int rrxe_xa_insert_bh(struct xarray *xa, unsigned long index, void *entry)
{
	return xa_insert_bh(xa, index, entry, GFP_KERNEL);
}

void *rrxe_xa_erase_bh(struct xarray *xa, unsigned long index)
{
	return xa_erase_bh(xa, index);
}

void rrxe_xa_lock_bh(struct xarray *xa)
{
	xa_lock_bh(xa);
}

void rrxe_xa_unlock_bh(struct xarray *xa)
{
	xa_unlock_bh(xa);
}

/* The first entry at or after *index, which is updated; NULL if none. */
void *rrxe_xa_find_from(struct xarray *xa, unsigned long *index)
{
	return xa_find(xa, index, ULONG_MAX, XA_PRESENT);
}

/* rust/net */

struct sk_buff *rrxe_alloc_skb(unsigned int size)
{
	return alloc_skb(size, GFP_ATOMIC);
}

void rrxe_skb_reserve(struct sk_buff *skb, int len)
{
	skb_reserve(skb, len);
}

int rrxe_skb_tailroom(const struct sk_buff *skb)
{
	return skb_tailroom(skb);
}

unsigned int rrxe_skb_headroom(const struct sk_buff *skb)
{
	return skb_headroom(skb);
}

unsigned int rrxe_skb_headlen(const struct sk_buff *skb)
{
	return skb_headlen(skb);
}

bool rrxe_skb_may_pull(struct sk_buff *skb, unsigned int len)
{
	return pskb_may_pull(skb, len);
}

bool rrxe_skb_has_frag_list(const struct sk_buff *skb)
{
	return skb_has_frag_list(skb);
}

unsigned int rrxe_skb_nr_frags(const struct sk_buff *skb)
{
	return skb_shinfo(skb)->nr_frags;
}

/*
 * Appends @len bytes at @off of @page as the skb's next fragment, with a
 * page reference of the skb's own; false if the skb has no fragment left.
 * @shared: others may write the page while the skb lives (user memory),
 * which SKBFL_SHARED_FRAG tells every reader of the skb.
 */
bool rrxe_skb_add_page(struct sk_buff *skb, struct page *page, unsigned int off,
		       unsigned int len, bool shared)
{
	unsigned int i = skb_shinfo(skb)->nr_frags;

	if (i >= MAX_SKB_FRAGS)
		return false;
	get_page(page);
	skb_add_rx_frag(skb, i, page, off, len, len);
	if (shared)
		skb_shinfo(skb)->flags |= SKBFL_SHARED_FRAG;
	return true;
}

/*
 * Kernel address and length of fragment @i; NULL if the skb has no such
 * fragment or it is not readable. @shared: whether others may write it (the
 * skb has shared fragments and this one is not the kernel's page of zeros,
 * which nothing writes).
 */
const void *rrxe_skb_frag_data(const struct sk_buff *skb, unsigned int i, unsigned int *len,
			       bool *shared)
{
	const skb_frag_t *frag;
	const void *p;

	*len = 0;
	*shared = false;
	if (i >= skb_shinfo(skb)->nr_frags)
		return NULL;
	frag = &skb_shinfo(skb)->frags[i];
	p = skb_frag_address_safe(frag);
	*len = skb_frag_size(frag);
	*shared = p && skb_has_shared_frag(skb) && !is_zero_page(skb_frag_page(frag));
	return p;
}

bool rrxe_skb_has_shared_frag(const struct sk_buff *skb)
{
	return skb_has_shared_frag(skb);
}

/* The kernel's page of zeros, which nothing ever writes. */
struct page *rrxe_zero_page(void)
{
	return ZERO_PAGE(0);
}

int rrxe_skb_network_offset(const struct sk_buff *skb)
{
	return skb_network_offset(skb);
}

void rrxe_skb_reset_network_header(struct sk_buff *skb)
{
	skb_reset_network_header(skb);
}

void rrxe_skb_set_transport_after_network(struct sk_buff *skb, int off)
{
	skb_set_transport_header(skb, skb_network_offset(skb) + off);
}

int rrxe_gid_attr_ifindex(const struct ib_gid_attr *attr)
{
	const struct net_device *ndev;
	int ifindex = 0;

	rcu_read_lock();
	ndev = rcu_dereference(attr->ndev);
	if (ndev)
		ifindex = ndev->ifindex;
	rcu_read_unlock();
	return ifindex;
}

bool rrxe_netdev_is_vlan(const struct net_device *ndev)
{
	return is_vlan_dev(ndev);
}

/*
 * The interface a received packet is for: the one it came in on or, for
 * a packet a local device sent to its own address through the loopback
 * device, the one that owns the destination address. NULL if none. Under
 * the RCU read lock.
 */
static const struct net_device *rrxe_skb_in_dev(const struct sk_buff *skb)
{
	const struct net_device *dev = skb->dev;

	if (!dev || !(dev->flags & IFF_LOOPBACK))
		return dev;
	if (ip_hdr(skb)->version == 4)
		return __ip_dev_find(dev_net(dev), ip_hdr(skb)->daddr, false);
#if IS_ENABLED(CONFIG_IPV6)
	return ipv6_dev_find(dev_net(dev), &ipv6_hdr(skb)->daddr, NULL);
#else
	return NULL;
#endif
}

/*
 * The index of the interface a received packet is for (rrxe_skb_in_dev); a
 * VLAN device's real device, since RoCE devices sit on real devices and
 * reach their VLANs through the GIDs of the upper devices. 0 if none.
 */
int rrxe_skb_ifindex(const struct sk_buff *skb)
{
	const struct net_device *dev;
	int ifindex = 0;

	rcu_read_lock();
	dev = rrxe_skb_in_dev(skb);
	if (dev && is_vlan_dev(dev))
		dev = vlan_dev_real_dev(dev);
	if (dev)
		ifindex = dev->ifindex;
	rcu_read_unlock();
	return ifindex;
}

/* The VLAN a received packet came in on (rrxe_skb_in_dev), or -1. */
int rrxe_skb_vlan_id(const struct sk_buff *skb)
{
	const struct net_device *dev;
	int vlan = -1;

	rcu_read_lock();
	dev = rrxe_skb_in_dev(skb);
	if (dev && is_vlan_dev(dev))
		vlan = vlan_dev_vlan_id(dev);
	rcu_read_unlock();
	return vlan;
}

void rrxe_skb_queue_init(struct sk_buff_head *head)
{
	skb_queue_head_init(head);
}

unsigned int rrxe_skb_queue_len(const struct sk_buff_head *head)
{
	return skb_queue_len_lockless(head);
}

/* Attaches the route @dst (whose reference the skb takes) for output. */
void rrxe_skb_prepare_output(struct sk_buff *skb, struct dst_entry *dst, bool ipv6)
{
	skb_dst_set(skb, dst);
	skb->dev = dst->dev;
	if (ipv6) {
		skb->protocol = htons(ETH_P_IPV6);
		memset(IP6CB(skb), 0, sizeof(*IP6CB(skb)));
	} else {
		skb->protocol = htons(ETH_P_IP);
		memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
	}
}

struct net *rrxe_dev_net(const struct net_device *ndev)
{
	return dev_net(ndev);
}

/* A tunnel socket's user data; under the RCU read lock. */
void *rrxe_sk_user_data(struct sock *sk)
{
	return rcu_dereference_sk_user_data(sk);
}

int rrxe_dst_cache_init(struct dst_cache *cache)
{
	return dst_cache_init(cache, GFP_KERNEL);
}

void rrxe_local_bh_disable(void)
{
	local_bh_disable();
}

void rrxe_local_bh_enable(void)
{
	local_bh_enable();
}

bool rrxe_bh_may_disable(void)
{
	return !in_hardirq() && !irqs_disabled();
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Headers rrxe generates Rust bindings for, and the prototypes of the C shims
 * in rrxe_shims.c (static inlines and macros that bindgen cannot see).
 */
#include <linux/netdevice.h>
#include <linux/crc32.h>
#include <linux/vmalloc.h>
#include <linux/xarray.h>
#include <linux/workqueue.h>
#include <linux/skbuff.h>
#include <net/dst_cache.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/route.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_umem_odp.h>
#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/rdma_netlink.h>
#include <uapi/rdma/rdma_user_rxe.h>
#include <uapi/rdma/ib_user_verbs.h>

/* Size and layout probes, compared against the Rust view at load time. */
size_t rrxe_sizeof_ib_device(void);

/* Static inlines of ib_verbs.h and netdevice.h, wrapped in rrxe_shims.c. */
bool rrxe_ib_device_try_get(struct ib_device *dev);
void rrxe_ib_device_hold(struct ib_device *dev);
void rrxe_ib_device_release(struct ib_device *dev);
void rrxe_ib_device_unregister_and_release(struct ib_device *dev);
u16 rrxe_rdma_get_udp_sport(u32 fl, u32 lqpn, u32 rqpn);
struct net_device *rrxe_netdev_notifier_info_to_dev(void *info);
bool rrxe_netif_running(const struct net_device *ndev);
bool rrxe_netif_carrier_ok(const struct net_device *ndev);
bool rrxe_netdev_is_vlan(const struct net_device *ndev);
int rrxe_gid_attr_ifindex(const struct ib_gid_attr *attr);
int rrxe_skb_vlan_id(const struct sk_buff *skb);
struct sk_buff *rrxe_skb_clone(struct sk_buff *skb);
bool rrxe_skb_reusable(struct sk_buff *skb);
bool rrxe_skb_reuse(struct sk_buff *skb, unsigned int headroom, unsigned int size);
unsigned int rrxe_netdev_mtu(const struct net_device *ndev);
const unsigned char *rrxe_netdev_addr(const struct net_device *ndev);
void rrxe_dev_hold(struct net_device *ndev);
void rrxe_dev_put(struct net_device *ndev);
unsigned long rrxe_copy_from_user(void *to, const void __user *from, unsigned long n);
unsigned long rrxe_copy_to_user(void __user *to, const void *from, unsigned long n);
bool rrxe_user_buffer_is_zero(const void __user *p, size_t len);
struct ib_ucontext *rrxe_udata_to_ucontext(struct ib_udata *udata);
struct ib_udata *rrxe_bundle_udata(struct uverbs_attr_bundle *attrs);
unsigned long rrxe_mmap_entry_offset(const struct rdma_user_mmap_entry *entry);
struct ib_umem *rrxe_umem_get(struct ib_device *dev, unsigned long addr, size_t size, int access);
void *rrxe_vmalloc_user(unsigned long size);

/* Pinned user pages, mapped one at a time (rust/rdma/umem.rs). */
unsigned long rrxe_umem_num_pages(struct ib_umem *umem);
unsigned long rrxe_umem_pages(struct ib_umem *umem, struct page **pages, unsigned long n);
void *rrxe_kmap_local_page(struct page *page);
void rrxe_kunmap_local(void *addr);

/* On-demand paging user memory (rust/rdma/umem_odp.rs). */
bool rrxe_mmu_range_blockable(const struct mmu_notifier_range *range);
void rrxe_mmu_interval_set_seq(struct mmu_interval_notifier *mni, unsigned long seq);
struct ib_umem_odp *rrxe_umem_odp_of_notifier(struct mmu_interval_notifier *mni);
unsigned long rrxe_umem_odp_start(struct ib_umem_odp *odp);
unsigned long rrxe_umem_odp_end(struct ib_umem_odp *odp);
bool rrxe_umem_odp_writable(struct ib_umem_odp *odp);
void rrxe_umem_odp_lock(struct ib_umem_odp *odp);
void rrxe_umem_odp_unlock(struct ib_umem_odp *odp);
int rrxe_umem_odp_map_and_lock(struct ib_umem_odp *odp, u64 va, u64 len, bool write, bool fault);
struct page *rrxe_umem_odp_page(struct ib_umem_odp *odp, unsigned long va, bool write);

void rrxe_skb_free(struct sk_buff *skb);

/* rust/sync: execution primitives. */
void rrxe_cond_resched(void);
struct workqueue_struct *rrxe_alloc_workqueue(const char *name, bool per_cpu);
void rrxe_xa_init_bh(struct xarray *xa);
int rrxe_xa_insert_bh(struct xarray *xa, unsigned long index, void *entry);
void *rrxe_xa_erase_bh(struct xarray *xa, unsigned long index);
void rrxe_xa_lock_bh(struct xarray *xa);
void rrxe_xa_unlock_bh(struct xarray *xa);
void *rrxe_xa_find_from(struct xarray *xa, unsigned long *index);

/* rust/net: socket buffers, queues and output. */
struct sk_buff *rrxe_alloc_skb(unsigned int size);
void rrxe_skb_reserve(struct sk_buff *skb, int len);
int rrxe_skb_tailroom(const struct sk_buff *skb);
unsigned int rrxe_skb_headroom(const struct sk_buff *skb);
unsigned int rrxe_skb_headlen(const struct sk_buff *skb);
bool rrxe_skb_may_pull(struct sk_buff *skb, unsigned int len);
bool rrxe_skb_has_frag_list(const struct sk_buff *skb);
unsigned int rrxe_skb_nr_frags(const struct sk_buff *skb);
bool rrxe_skb_add_page(struct sk_buff *skb, struct page *page, unsigned int off,
		       unsigned int len, bool shared);
const void *rrxe_skb_frag_data(const struct sk_buff *skb, unsigned int i, unsigned int *len,
			       bool *shared);
bool rrxe_skb_has_shared_frag(const struct sk_buff *skb);
struct page *rrxe_zero_page(void);
int rrxe_skb_network_offset(const struct sk_buff *skb);
void rrxe_skb_reset_network_header(struct sk_buff *skb);
void rrxe_skb_set_transport_after_network(struct sk_buff *skb, int off);
int rrxe_skb_ifindex(const struct sk_buff *skb);
void rrxe_skb_queue_init(struct sk_buff_head *head);
unsigned int rrxe_skb_queue_len(const struct sk_buff_head *head);
void rrxe_skb_prepare_output(struct sk_buff *skb, struct dst_entry *dst, bool ipv6);
struct net *rrxe_dev_net(const struct net_device *ndev);
void *rrxe_sk_user_data(struct sock *sk);
int rrxe_dst_cache_init(struct dst_cache *cache);
void rrxe_local_bh_disable(void);
void rrxe_local_bh_enable(void);
bool rrxe_bh_may_disable(void);

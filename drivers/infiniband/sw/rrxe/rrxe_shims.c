// SPDX-License-Identifier: GPL-2.0
/*
 * C shims for rrxe: static inline functions and macros of the RDMA and
 * networking headers that Rust cannot call through bindgen.
 */
#include <linux/highmem.h>
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

/*
 * Packet I/O. Received RoCE v2 packets are queued here in softirq context and
 * handed to the Rust datapath worker, which runs in process context.
 */
static struct sk_buff_head rrxe_rxq;
static void (*rrxe_run)(void);

static void rrxe_work_fn(struct work_struct *work)
{
	rrxe_run();
}

/* One work item runs the datapath, so it never runs twice at once. */
static DECLARE_WORK(rrxe_work, rrxe_work_fn);

static void rrxe_timer_fn(struct work_struct *work)
{
	queue_work(system_highpri_wq, &rrxe_work);
}

/* The datapath's timer (retransmission, RNR wait): it only queues the worker. */
static DECLARE_DELAYED_WORK(rrxe_timer, rrxe_timer_fn);

void rrxe_worker_init(void (*run)(void))
{
	skb_queue_head_init(&rrxe_rxq);
	rrxe_run = run;
}

void rrxe_worker_kick(void)
{
	queue_work(system_highpri_wq, &rrxe_work);
}

/* (Re)arms the timer to fire after @delay jiffies. */
void rrxe_worker_arm(unsigned long delay)
{
	mod_delayed_work(system_dfl_wq, &rrxe_timer, delay);
}

void rrxe_worker_stop(void)
{
	cancel_delayed_work_sync(&rrxe_timer);
	cancel_work_sync(&rrxe_work);
	cancel_delayed_work_sync(&rrxe_timer);
	skb_queue_purge(&rrxe_rxq);
}

struct sk_buff *rrxe_rx_pop(void)
{
	return skb_dequeue(&rrxe_rxq);
}

bool rrxe_rx_pending(void)
{
	return !skb_queue_empty_lockless(&rrxe_rxq);
}

static int rrxe_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	if (skb_linearize(skb)) {
		kfree_skb(skb);
		return 0;
	}
	skb_queue_tail(&rrxe_rxq, skb);
	rrxe_worker_kick();
	return 0;
}

struct socket *rrxe_udp_open(bool ipv6)
{
	struct udp_port_cfg cfg = {};
	struct udp_tunnel_sock_cfg tcfg = {};
	struct socket *sock;
	int err;

	if (ipv6) {
		cfg.family = AF_INET6;
		cfg.ipv6_v6only = 1;
	} else {
		cfg.family = AF_INET;
		cfg.local_ip.s_addr = htonl(INADDR_ANY);
	}
	cfg.local_udp_port = htons(ROCE_V2_UDP_DPORT);
	err = udp_sock_create(&init_net, &cfg, &sock);
	if (err)
		return ERR_PTR(err);
	tcfg.encap_type = 1;
	tcfg.encap_rcv = rrxe_encap_recv;
	setup_udp_tunnel_sock(&init_net, sock->sk, &tcfg);
	return sock;
}

void rrxe_udp_close(struct socket *sock)
{
	udp_tunnel_sock_release(sock->sk);
}

/* The whole IP packet of a received skb (linearised on arrival). */
const void *rrxe_skb_ip(struct sk_buff *skb, unsigned int *len)
{
	*len = skb_tail_pointer(skb) - skb_network_header(skb);
	return skb_network_header(skb);
}

/*
 * The net device a packet was addressed to: the one it arrived on, or for a
 * packet a local device sent to its own address (delivered through the
 * loopback device), the device owning the destination address. Only compared,
 * never dereferenced, by the caller.
 */
const struct net_device *rrxe_skb_netdev(struct sk_buff *skb)
{
	const struct net_device *dev = skb->dev;

	if (!dev || !(dev->flags & IFF_LOOPBACK))
		return dev;
	rcu_read_lock();
	if (ip_hdr(skb)->version == 4)
		dev = __ip_dev_find(dev_net(dev), ip_hdr(skb)->daddr, false);
#if IS_ENABLED(CONFIG_IPV6)
	else
		dev = ipv6_dev_find(dev_net(dev), &ipv6_hdr(skb)->daddr, NULL);
#endif
	rcu_read_unlock();
	return dev;
}

void rrxe_skb_free(struct sk_buff *skb)
{
	consume_skb(skb);
}

/*
 * Sends a whole IPv4 or IPv6 packet built by the datapath (headers, UDP,
 * RoCE v2 headers, payload and ICRC) out of @ndev, routed by its addresses.
 */
int rrxe_xmit(struct net_device *ndev, const void *pkt, unsigned int len)
{
	struct net *net = dev_net(ndev);
	struct dst_entry *dst;
	struct sk_buff *skb;
	unsigned int hlen;
	u8 ver = len ? *(const u8 *)pkt >> 4 : 0;

	if (ver == 4 && len >= sizeof(struct iphdr)) {
		const struct iphdr *iph = pkt;
		struct flowi4 fl = {
			.flowi4_oif = ndev->ifindex,
			.flowi4_proto = IPPROTO_UDP,
			.daddr = iph->daddr,
			.saddr = iph->saddr,
		};
		struct rtable *rt = ip_route_output_key(net, &fl);

		if (IS_ERR(rt))
			return PTR_ERR(rt);
		dst = &rt->dst;
		hlen = sizeof(struct iphdr);
#if IS_ENABLED(CONFIG_IPV6)
	} else if (ver == 6 && len >= sizeof(struct ipv6hdr)) {
		const struct ipv6hdr *ip6h = pkt;
		struct flowi6 fl6 = {
			.flowi6_oif = ndev->ifindex,
			.flowi6_proto = IPPROTO_UDP,
			.daddr = ip6h->daddr,
			.saddr = ip6h->saddr,
		};
		int err;

		dst = ip6_route_output(net, NULL, &fl6);
		err = dst->error;
		if (err) {
			dst_release(dst);
			return err;
		}
		hlen = sizeof(struct ipv6hdr);
#endif
	} else {
		return -EINVAL;
	}

	skb = alloc_skb(LL_RESERVED_SPACE(dst->dev) + len, GFP_KERNEL);
	if (!skb) {
		dst_release(dst);
		return -ENOMEM;
	}
	skb_reserve(skb, LL_RESERVED_SPACE(dst->dev));
	skb_put_data(skb, pkt, len);
	skb_reset_network_header(skb);
	skb_set_transport_header(skb, hlen);
	skb->dev = dst->dev;
	skb_dst_set(skb, dst);
	if (ver == 4) {
		skb->protocol = htons(ETH_P_IP);
		memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
		return ip_local_out(net, NULL, skb);
	}
#if IS_ENABLED(CONFIG_IPV6)
	skb->protocol = htons(ETH_P_IPV6);
	memset(IP6CB(skb), 0, sizeof(*IP6CB(skb)));
	return ip6_local_out(net, NULL, skb);
#else
	return -EINVAL;
#endif
}

/* rust/sync */

void rrxe_cond_resched(void)
{
	cond_resched();
}

/* alloc_workqueue is a macro; high priority, unbound, usable in reclaim. */
struct workqueue_struct *rrxe_alloc_workqueue(const char *name)
{
	return alloc_workqueue("%s", WQ_HIGHPRI | WQ_UNBOUND | WQ_MEM_RECLAIM, 0, name);
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

/* Kernel address and length of fragment @i; NULL if it is not readable. */
const void *rrxe_skb_frag_data(const struct sk_buff *skb, unsigned int i, unsigned int *len)
{
	const skb_frag_t *frag = &skb_shinfo(skb)->frags[i];

	*len = skb_frag_size(frag);
	return skb_frag_address_safe(frag);
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

/*
 * The interface a received packet is for: the one it came in on or, for
 * a packet a local device sent to its own address through the loopback
 * device, the one that owns the destination address. 0 if none.
 */
int rrxe_skb_ifindex(const struct sk_buff *skb)
{
	const struct net_device *dev = skb->dev;
	int ifindex;

	if (!dev)
		return 0;
	if (!(dev->flags & IFF_LOOPBACK))
		return dev->ifindex;
	rcu_read_lock();
	if (ip_hdr(skb)->version == 4)
		dev = __ip_dev_find(dev_net(dev), ip_hdr(skb)->daddr, false);
#if IS_ENABLED(CONFIG_IPV6)
	else
		dev = ipv6_dev_find(dev_net(dev), &ipv6_hdr(skb)->daddr, NULL);
#endif
	ifindex = dev ? dev->ifindex : 0;
	rcu_read_unlock();
	return ifindex;
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

int rrxe_dst_cache_init(struct dst_cache *cache)
{
	return dst_cache_init(cache, GFP_KERNEL);
}

// SPDX-License-Identifier: GPL-2.0

//! Network namespaces, as rxe has them: each namespace with an rrxe device
//! gets its own RoCE v2 sockets (UDP port 4791, IPv4 and IPv6) when its
//! first device is added; they close when its last device goes, or when the
//! namespace is dismantled (pernet exit), or on `rmmod`.
//!
//! A namespace's sockets deliver to its [`Space`], which finds the device
//! by the interface index a packet came in on (indices are per namespace).
//! Routes and output use the net device's own namespace (`route.rs`).

use crate::{
    datapath::Datapath,
    net::{
        netdev::NetDevice,
        ns::{Net, PernetHandler},
        skb::SkBuff,
        udp_tunnel::{EncapReceiver, Family, TunnelSocket},
    },
    proto::headers::ROCE_V2_PORT,
    sync::table::Table,
};
use kernel::{prelude::*, sync::Arc};

kernel::sync::global_lock! {
    // SAFETY: Initialised in the module initialiser before any device exists.
    unsafe(uninit) static SPACES: Mutex<KVec<Entry>> = KVec::new();
}

/// Initialises the namespace list; call once from the module initialiser.
pub(crate) fn init() {
    // SAFETY: Called exactly once, before any other use of `SPACES`.
    unsafe { SPACES.init() };
}

/// The rrxe devices of one namespace, as its sockets' receive path finds
/// them.
#[pin_data]
pub(crate) struct Space {
    /// Each device's datapath by the interface index of its net device.
    #[pin]
    by_ifindex: Table<Datapath>,
}

impl Space {
    /// Makes packets that come in on interface `ifindex` reach `dp`.
    pub(crate) fn add(&self, ifindex: u32, dp: Arc<Datapath>) -> Result {
        self.by_ifindex.insert(ifindex, dp)
    }

    /// Drops packets that come in on interface `ifindex` from now on.
    pub(crate) fn remove(&self, ifindex: u32) {
        drop(self.by_ifindex.remove(ifindex));
    }
}

impl EncapReceiver for Space {
    fn receive(&self, skb: SkBuff) {
        let Ok(ifindex) = u32::try_from(skb.ifindex()) else {
            return;
        };
        if let Some(dp) = self.by_ifindex.get(ifindex) {
            crate::recv::dispatch(&dp, skb);
        }
    }
}

/// A namespace with rrxe devices: its sockets, and how many devices use
/// them.
struct Entry {
    net: usize,
    users: usize,
    space: Arc<Space>,
    _v4: TunnelSocket<Space>,
    _v6: Option<TunnelSocket<Space>>,
}

/// Joins the namespace of `netdev` (`rdma link add`): opens its sockets if
/// it is the first device there. Each join needs a [`leave`].
pub(crate) fn join(netdev: &NetDevice) -> Result<Arc<Space>> {
    let net = netdev.namespace();
    let mut list = SPACES.lock();
    if let Some(e) = list.iter_mut().find(|e| e.net == net.key()) {
        e.users = e.users.checked_add(1).ok_or(EOVERFLOW)?;
        return Ok(e.space.clone());
    }
    let space = Arc::pin_init(
        try_pin_init!(Space {
            by_ifindex <- Table::new(),
        }),
        GFP_KERNEL,
    )?;
    // SAFETY: The sockets belong to the list entry, which `NsExit::exit`
    // drops when the namespace is dismantled, and the module drops with
    // the registration before it unloads.
    let v4 = unsafe { TunnelSocket::open(net, Family::V4, ROCE_V2_PORT, space.clone()) }?;
    // SAFETY: As above.
    let v6 = match unsafe { TunnelSocket::open(net, Family::V6, ROCE_V2_PORT, space.clone()) } {
        Ok(s) => Some(s),
        Err(e) => {
            pr_warn!("no IPv6 RoCE v2 socket ({:?}): IPv4 only\n", e);
            None
        }
    };
    list.push(
        Entry {
            net: net.key(),
            users: 1,
            space: space.clone(),
            _v4: v4,
            _v6: v6,
        },
        GFP_KERNEL,
    )?;
    Ok(space)
}

/// Leaves a namespace joined with [`join`]: closes its sockets if this was
/// its last device (unless the namespace is gone already).
pub(crate) fn leave(space: &Arc<Space>) {
    let mut list = SPACES.lock();
    let Some(i) = list.iter().position(|e| Arc::ptr_eq(&e.space, space)) else {
        return;
    };
    match list.get_mut(i) {
        Some(e) if e.users > 1 => e.users = e.users.saturating_sub(1),
        // Closed under the lock (closing waits for a grace period), so that
        // a device added next in the namespace finds the port free.
        _ => drop(list.remove(i)),
    }
}

/// Frees the list's memory at `rmmod` (it is a static, never dropped),
/// once every namespace's sockets are closed.
pub(crate) fn clear() {
    let old = core::mem::take(&mut *SPACES.lock());
    drop(old);
}

/// Closes a dismantled namespace's sockets.
pub(crate) struct NsExit;

impl PernetHandler for NsExit {
    fn exit(net: &Net) {
        let mut list = SPACES.lock();
        if let Some(i) = list.iter().position(|e| e.net == net.key()) {
            drop(list.remove(i));
        }
    }
}

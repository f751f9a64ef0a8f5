//! Typed zero-copy views and representations of the IB transport headers
//! carried in a RoCE v2 UDP payload: BTH and the extension headers.

use crate::proto::wire::{read_bit, write_bits, BeField, HeaderRepr};
use crate::proto::{Msn, ParseError, Psn, Syndrome};

/// Byte offsets of header fields (all big-endian on the wire).
pub mod field {
    /// BTH: opcode.
    pub const BTH_OPCODE: usize = 0;
    /// BTH: SE, M, PadCnt, TVer.
    pub const BTH_FLAGS: usize = 1;
    /// BTH: partition key.
    pub const BTH_PKEY: usize = 2;
    /// BTH: FECN, BECN and six reserved bits (resv8a).
    pub const BTH_RESV8A: usize = 4;
    /// BTH: destination QP (24 bits).
    pub const BTH_DQPN: usize = 5;
    /// BTH: AckReq and seven reserved bits.
    pub const BTH_ACKREQ: usize = 8;
    /// BTH: PSN (24 bits).
    pub const BTH_PSN: usize = 9;
}

header_view!(
    /// Base Transport Header (12 bytes).
    Bth,
    12
);

header_fields!(Bth {
    /// Opcode byte (transport in the top three bits).
    opcode / set_opcode: u8 = field::BTH_OPCODE;
    /// Partition key.
    pkey / set_pkey: u16 = field::BTH_PKEY;
});

header_fields24!(Bth {
    /// Destination QP number.
    dest_qpn / set_dest_qpn = field::BTH_DQPN;
    /// Packet sequence number (raw 24-bit value).
    psn_raw / set_psn_raw = field::BTH_PSN;
});

impl<T: AsRef<[u8]>> Bth<T> {
    /// Solicited event bit.
    pub fn solicited(&self) -> bool {
        read_bit(self.buffer.as_ref(), field::BTH_FLAGS, 7)
    }
    /// Migration request bit.
    pub fn mig_req(&self) -> bool {
        read_bit(self.buffer.as_ref(), field::BTH_FLAGS, 6)
    }
    /// Number of pad bytes (0..=3) appended to the payload.
    pub fn pad_count(&self) -> u8 {
        u8::read(self.buffer.as_ref(), field::BTH_FLAGS) >> 4 & 3
    }
    /// Transport header version (must be 0).
    pub fn tver(&self) -> u8 {
        u8::read(self.buffer.as_ref(), field::BTH_FLAGS) & 0xf
    }
    /// Forward explicit congestion notification.
    pub fn fecn(&self) -> bool {
        read_bit(self.buffer.as_ref(), field::BTH_RESV8A, 7)
    }
    /// Backward explicit congestion notification.
    pub fn becn(&self) -> bool {
        read_bit(self.buffer.as_ref(), field::BTH_RESV8A, 6)
    }
    /// Acknowledge request bit.
    pub fn ack_req(&self) -> bool {
        read_bit(self.buffer.as_ref(), field::BTH_ACKREQ, 7)
    }
    /// Packet sequence number.
    pub fn psn(&self) -> Psn {
        Psn::new(self.psn_raw())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Bth<T> {
    /// Set the solicited event bit.
    pub fn set_solicited(&mut self, v: bool) {
        write_bits(
            self.buffer.as_mut(),
            field::BTH_FLAGS,
            0x80,
            u8::from(v) << 7,
        );
    }
    /// Set the migration request bit.
    pub fn set_mig_req(&mut self, v: bool) {
        write_bits(
            self.buffer.as_mut(),
            field::BTH_FLAGS,
            0x40,
            u8::from(v) << 6,
        );
    }
    /// Set the pad count (low two bits of `v`).
    pub fn set_pad_count(&mut self, v: u8) {
        write_bits(self.buffer.as_mut(), field::BTH_FLAGS, 0x30, (v & 3) << 4);
    }
    /// Set the transport header version (low four bits of `v`).
    pub fn set_tver(&mut self, v: u8) {
        write_bits(self.buffer.as_mut(), field::BTH_FLAGS, 0x0f, v);
    }
    /// Set FECN.
    pub fn set_fecn(&mut self, v: bool) {
        write_bits(
            self.buffer.as_mut(),
            field::BTH_RESV8A,
            0x80,
            u8::from(v) << 7,
        );
    }
    /// Set BECN.
    pub fn set_becn(&mut self, v: bool) {
        write_bits(
            self.buffer.as_mut(),
            field::BTH_RESV8A,
            0x40,
            u8::from(v) << 6,
        );
    }
    /// Set the AckReq bit (the reserved bits are cleared).
    pub fn set_ack_req(&mut self, v: bool) {
        write_bits(
            self.buffer.as_mut(),
            field::BTH_ACKREQ,
            0xff,
            u8::from(v) << 7,
        );
    }
    /// Set the PSN.
    pub fn set_psn(&mut self, psn: Psn) {
        self.set_psn_raw(psn.value());
    }
}

/// High-level representation of a BTH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BthRepr {
    /// Opcode byte.
    pub opcode: u8,
    /// Solicited event.
    pub solicited: bool,
    /// Migration request.
    pub mig_req: bool,
    /// Pad count (0..=3).
    pub pad_count: u8,
    /// Partition key.
    pub pkey: u16,
    /// Forward ECN.
    pub fecn: bool,
    /// Backward ECN.
    pub becn: bool,
    /// Destination QP number (24 bits).
    pub dest_qpn: u32,
    /// Acknowledge request.
    pub ack_req: bool,
    /// Packet sequence number.
    pub psn: Psn,
}

impl HeaderRepr for BthRepr {
    const LEN: usize = 12;

    fn parse(buf: &[u8]) -> Result<Self, ParseError> {
        let b = Bth::new_checked(buf)?;
        if b.tver() != 0 {
            return Err(ParseError::BadVersion);
        }
        Ok(BthRepr {
            opcode: b.opcode(),
            solicited: b.solicited(),
            mig_req: b.mig_req(),
            pad_count: b.pad_count(),
            pkey: b.pkey(),
            fecn: b.fecn(),
            becn: b.becn(),
            dest_qpn: b.dest_qpn(),
            ack_req: b.ack_req(),
            psn: b.psn(),
        })
    }

    fn emit(&self, buf: &mut [u8]) -> Result<(), ParseError> {
        let mut b = Bth::new_checked(buf)?;
        b.set_opcode(self.opcode);
        write_bits(b.buffer, field::BTH_FLAGS, 0xff, 0);
        b.set_solicited(self.solicited);
        b.set_mig_req(self.mig_req);
        b.set_pad_count(self.pad_count);
        b.set_pkey(self.pkey);
        write_bits(b.buffer, field::BTH_RESV8A, 0xff, 0);
        b.set_fecn(self.fecn);
        b.set_becn(self.becn);
        b.set_dest_qpn(self.dest_qpn);
        b.set_ack_req(self.ack_req);
        b.set_psn(self.psn);
        Ok(())
    }
}

header_view!(
    /// RDMA Extended Transport Header (16 bytes).
    Reth,
    16
);
header_fields!(Reth {
    /// Remote virtual address.
    va / set_va: u64 = 0;
    /// Remote key.
    rkey / set_rkey: u32 = 8;
    /// DMA length of the whole message.
    dma_len / set_dma_len: u32 = 12;
});

/// High-level representation of a RETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RethRepr {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// DMA length.
    pub len: u32,
}

impl HeaderRepr for RethRepr {
    const LEN: usize = 16;
    fn parse(buf: &[u8]) -> Result<Self, ParseError> {
        let h = Reth::new_checked(buf)?;
        Ok(RethRepr {
            va: h.va(),
            rkey: h.rkey(),
            len: h.dma_len(),
        })
    }
    fn emit(&self, buf: &mut [u8]) -> Result<(), ParseError> {
        let mut h = Reth::new_checked(buf)?;
        h.set_va(self.va);
        h.set_rkey(self.rkey);
        h.set_dma_len(self.len);
        Ok(())
    }
}

header_view!(
    /// FLUSH Extended Transport Header (4 bytes): one big-endian word whose
    /// bits 3-0 are the placement type and bits 5-4 the selectivity level;
    /// the other bits are reserved.
    Feth,
    4
);
header_fields!(Feth {
    /// The whole word.
    word / set_word: u32 = 0;
});

/// High-level representation of a FETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FethRepr {
    /// Placement type: bit 0 global visibility, bit 1 persistence
    /// (`IB_FLUSH_GLOBAL`, `IB_FLUSH_PERSISTENT`); four bits.
    pub placement: u8,
    /// Selectivity level: [`FethRepr::RANGE`] or [`FethRepr::REGION`]; two
    /// bits.
    pub selectivity: u8,
}

impl FethRepr {
    /// Placement type bit: make the data globally visible.
    pub const GLOBAL: u8 = 1;
    /// Placement type bit: make the data persistent.
    pub const PERSISTENT: u8 = 2;
    /// Selectivity: the RETH's range (`IB_FLUSH_RANGE`).
    pub const RANGE: u8 = 0;
    /// Selectivity: the whole region the R_Key names (`IB_FLUSH_MR`).
    pub const REGION: u8 = 1;
}

impl HeaderRepr for FethRepr {
    const LEN: usize = 4;
    fn parse(buf: &[u8]) -> Result<Self, ParseError> {
        let w = Feth::new_checked(buf)?.word();
        let [.., low] = w.to_be_bytes();
        Ok(FethRepr {
            placement: low & 0xf,
            selectivity: low >> 4 & 3,
        })
    }
    fn emit(&self, buf: &mut [u8]) -> Result<(), ParseError> {
        let mut h = Feth::new_checked(buf)?;
        let low = (self.placement & 0xf) | (self.selectivity & 3) << 4;
        h.set_word(u32::from(low));
        Ok(())
    }
}

header_view!(
    /// ACK Extended Transport Header (4 bytes).
    Aeth,
    4
);
header_fields!(Aeth {
    /// Raw syndrome byte.
    syndrome / set_syndrome: u8 = 0;
});
header_fields24!(Aeth {
    /// Message sequence number (raw).
    msn / set_msn = 1;
});

/// High-level representation of an AETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AethRepr {
    /// Decoded syndrome.
    pub syndrome: Syndrome,
    /// Message sequence number.
    pub msn: Msn,
}

impl HeaderRepr for AethRepr {
    const LEN: usize = 4;
    fn parse(buf: &[u8]) -> Result<Self, ParseError> {
        let h = Aeth::new_checked(buf)?;
        Ok(AethRepr {
            syndrome: Syndrome::from_u8(h.syndrome())?,
            msn: Msn::new(h.msn()),
        })
    }
    fn emit(&self, buf: &mut [u8]) -> Result<(), ParseError> {
        let mut h = Aeth::new_checked(buf)?;
        h.set_syndrome(self.syndrome.to_u8());
        h.set_msn(self.msn.value());
        Ok(())
    }
}

header_view!(
    /// Atomic Extended Transport Header (28 bytes).
    AtomicEth,
    28
);
header_fields!(AtomicEth {
    /// Remote virtual address (8-byte aligned).
    va / set_va: u64 = 0;
    /// Remote key.
    rkey / set_rkey: u32 = 8;
    /// Swap value (CMP_SWP) or addend (FETCH_ADD).
    swap_add / set_swap_add: u64 = 12;
    /// Compare value (CMP_SWP only).
    compare / set_compare: u64 = 20;
});

/// High-level representation of an AtomicETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AtomicEthRepr {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Swap value or addend.
    pub swap_add: u64,
    /// Compare value.
    pub compare: u64,
}

impl HeaderRepr for AtomicEthRepr {
    const LEN: usize = 28;
    fn parse(buf: &[u8]) -> Result<Self, ParseError> {
        let h = AtomicEth::new_checked(buf)?;
        Ok(AtomicEthRepr {
            va: h.va(),
            rkey: h.rkey(),
            swap_add: h.swap_add(),
            compare: h.compare(),
        })
    }
    fn emit(&self, buf: &mut [u8]) -> Result<(), ParseError> {
        let mut h = AtomicEth::new_checked(buf)?;
        h.set_va(self.va);
        h.set_rkey(self.rkey);
        h.set_swap_add(self.swap_add);
        h.set_compare(self.compare);
        Ok(())
    }
}

/// Declare a header carrying a single big-endian integer, its view and Repr.
macro_rules! single_field_header {
    ($(#[$m:meta])* $view:ident, $repr:ident, $ty:ty, $len:expr, $get:ident / $set:ident, $doc:expr) => {
        header_view!($(#[$m])* $view, $len);
        header_fields!($view {
            #[doc = $doc]
            $get / $set: $ty = 0;
        });

        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct $repr(
            #[doc = $doc]
            pub $ty,
        );

        impl HeaderRepr for $repr {
            const LEN: usize = $len;
            fn parse(buf: &[u8]) -> Result<Self, ParseError> {
                Ok($repr($view::new_checked(buf)?.$get()))
            }
            fn emit(&self, buf: &mut [u8]) -> Result<(), ParseError> {
                $view::new_checked(buf)?.$set(self.0);
                Ok(())
            }
        }
    };
}

single_field_header!(
    /// Atomic ACK Extended Transport Header (8 bytes).
    AtomicAckEth, AtomicAckRepr, u64, 8, orig / set_orig,
    "Original value at the remote address before the atomic operation."
);
single_field_header!(
    /// Immediate data header (4 bytes).
    ImmDt, ImmDtRepr, u32, 4, imm / set_imm,
    "Immediate data, opaque to the transport."
);
single_field_header!(
    /// Invalidate Extended Transport Header (4 bytes).
    Ieth, IethRepr, u32, 4, rkey / set_rkey,
    "R_Key to invalidate at the responder."
);

header_view!(
    /// Datagram Extended Transport Header (8 bytes).
    Deth,
    8
);
header_fields!(Deth {
    /// Queue key.
    qkey / set_qkey: u32 = 0;
});
header_fields24!(Deth {
    /// Source QP number.
    src_qpn / set_src_qpn = 5;
});

/// High-level representation of a DETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DethRepr {
    /// Queue key.
    pub qkey: u32,
    /// Source QP number (24 bits).
    pub src_qpn: u32,
}

impl HeaderRepr for DethRepr {
    const LEN: usize = 8;
    fn parse(buf: &[u8]) -> Result<Self, ParseError> {
        let h = Deth::new_checked(buf)?;
        Ok(DethRepr {
            qkey: h.qkey(),
            src_qpn: h.src_qpn(),
        })
    }
    fn emit(&self, buf: &mut [u8]) -> Result<(), ParseError> {
        let mut h = Deth::new_checked(buf)?;
        h.set_qkey(self.qkey);
        write_bits(h.buffer, 4, 0xff, 0);
        h.set_src_qpn(self.src_qpn);
        Ok(())
    }
}

header_view!(
    /// IPv4 header without options (20 bytes), the fields the ICRC covers.
    Ipv4,
    20
);
header_fields!(Ipv4 {
    /// Version and IHL byte.
    ver_ihl / set_ver_ihl: u8 = 0;
    /// DSCP and ECN (masked in the ICRC).
    tos / set_tos: u8 = 1;
    /// Total length.
    total_len / set_total_len: u16 = 2;
    /// Identification.
    ident / set_ident: u16 = 4;
    /// Flags and fragment offset.
    frag / set_frag: u16 = 6;
    /// Time to live (masked in the ICRC).
    ttl / set_ttl: u8 = 8;
    /// Protocol (17 for UDP).
    protocol / set_protocol: u8 = 9;
    /// Header checksum (masked in the ICRC).
    checksum / set_checksum: u16 = 10;
    /// Source address.
    src / set_src: u32 = 12;
    /// Destination address.
    dst / set_dst: u32 = 16;
});

impl<T: AsRef<[u8]>> Ipv4<T> {
    /// Compute the header checksum over the 20-byte header (checksum
    /// field treated as zero).
    pub fn compute_checksum(&self) -> u16 {
        let b = self.buffer.as_ref();
        let mut sum: u32 = 0;
        for i in 0..10usize {
            if i != 5 {
                sum = sum.wrapping_add(u32::from(u16::read(b, i.wrapping_mul(2))));
            }
        }
        while sum >> 16 != 0 {
            sum = (sum & 0xffff).wrapping_add(sum >> 16);
        }
        !(u16::try_from(sum & 0xffff).unwrap_or(0))
    }
}

header_view!(
    /// IPv6 fixed header (40 bytes).
    Ipv6,
    40
);
header_fields!(Ipv6 {
    /// Version, traffic class and flow label.
    ver_tc_flow / set_ver_tc_flow: u32 = 0;
    /// Payload length.
    payload_len / set_payload_len: u16 = 4;
    /// Next header (17 for UDP).
    next_header / set_next_header: u8 = 6;
    /// Hop limit (masked in the ICRC).
    hop_limit / set_hop_limit: u8 = 7;
});

header_view!(
    /// UDP header (8 bytes).
    Udp,
    8
);
header_fields!(Udp {
    /// Source port (RoCE v2 uses it for entropy).
    src_port / set_src_port: u16 = 0;
    /// Destination port (4791 for RoCE v2).
    dst_port / set_dst_port: u16 = 2;
    /// Length of header plus payload.
    length / set_length: u16 = 4;
    /// Checksum (masked in the ICRC; RoCE v2 sends 0).
    checksum / set_checksum: u16 = 6;
});

/// UDP destination port assigned to RoCE v2.
pub const ROCE_V2_PORT: u16 = 4791;

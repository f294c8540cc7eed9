//! A PACKET_MMAP receive ring (TPACKET_V2): the kernel writes each frame that
//! arrives on a port into a slot of memory it shares with us, and we read it
//! there, with no syscall per frame or per batch.
//!
//! Why a ring and not a socket buffer: the ring is sized in frames, not in
//! the kernel's per-buffer accounting (a 9 KB frame costs a 16 KB+ socket
//! buffer charge), so it holds several times more frames in the same memory,
//! and reading it costs a memory copy, not a syscall. A frame that finds the
//! ring full is dropped by the kernel and counted (PACKET_STATISTICS).
//!
//! TPACKET_V2 and not V3: V3 hands a block to user space only when it is
//! full or its retire timer (a millisecond or more) fires, which would delay
//! frames at low rates; V2's slots are visible as soon as each is written.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

use braid_link::hist::Hist;

use crate::clock::realtime_ns;

/// The ring's shape: equal slots of `slot` bytes, `per_block` to a block of
/// `block` bytes (frames never straddle blocks), `blocks` blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub slot: usize,
    pub per_block: usize,
    pub block: usize,
    pub blocks: usize,
}

/// Where the kernel puts a frame's first byte inside its slot, for a socket
/// of type SOCK_RAW with no reserve: the header, aligned, then room for the
/// link header so that the network header lands aligned (af_packet.c's
/// `netoff = TPACKET_ALIGN(hdrlen + max(maclen, 16))`, `macoff = netoff - maclen`).
fn mac_offset() -> usize {
    align(libc::TPACKET2_HDRLEN + 16) - ETH_HLEN
}

const ETH_HLEN: usize = 14;
/// A VLAN tag a frame may carry beyond the MTU and its Ethernet header.
const VLAN_HLEN: usize = 4;
/// Blocks are allocated by the kernel as contiguous pages; a megabyte is a
/// size it grants readily and holds over a hundred jumbo frames.
const BLOCK: usize = 1 << 20;

fn align(x: usize) -> usize {
    (x + libc::TPACKET_ALIGNMENT - 1) & !(libc::TPACKET_ALIGNMENT - 1)
}

impl Geometry {
    /// Slots for whole frames of an interface of this MTU, as many as fit in
    /// `bytes` (rounded down to whole blocks, at least one).
    pub fn for_mtu(mtu: usize, bytes: usize) -> Geometry {
        let slot = align(mac_offset() + ETH_HLEN + VLAN_HLEN + mtu);
        let block = BLOCK.max(slot.next_power_of_two());
        Geometry {
            slot,
            per_block: block / slot,
            block,
            blocks: (bytes / block).max(1),
        }
    }

    pub fn slots(&self) -> usize {
        self.per_block * self.blocks
    }

    pub fn bytes(&self) -> usize {
        self.block * self.blocks
    }

    /// The byte offset of slot `i` from the start of the mapping.
    pub fn offset(&self, i: usize) -> usize {
        (i / self.per_block) * self.block + (i % self.per_block) * self.slot
    }
}

/// A receive ring mapped from a packet socket.
pub struct Ring {
    map: *mut u8,
    geo: Geometry,
    /// The slot to read next: the kernel fills them in order.
    next: usize,
    /// Frames longer than a slot (cut short by the kernel), skipped.
    pub truncated: u64,
    /// How long frames sat in the ring before they were read: the kernel
    /// stamps each slot as it fills it, and a frame's emulated delay only
    /// starts when it is read, so this is delay the link adds beyond its
    /// spec whenever the loop falls behind (nothing else would show it).
    pub wait: Hist,
}

impl Ring {
    /// Makes `fd` (an unbound or bound AF_PACKET socket) a TPACKET_V2 socket
    /// with a receive ring of this geometry, and maps it.
    pub fn attach(fd: &OwnedFd, geo: Geometry) -> io::Result<Ring> {
        let version = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
        setsockopt(fd, libc::PACKET_VERSION, &version)?;
        let req = libc::tpacket_req {
            tp_block_size: geo.block as libc::c_uint,
            tp_block_nr: geo.blocks as libc::c_uint,
            tp_frame_size: geo.slot as libc::c_uint,
            tp_frame_nr: geo.slots() as libc::c_uint,
        };
        setsockopt(fd, libc::PACKET_RX_RING, &req)?;
        // SAFETY: maps the ring the kernel just made for this fd; the length
        // is the one it was asked for.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                geo.bytes(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Ring {
            map: map.cast(),
            geo,
            next: 0,
            truncated: 0,
            wait: Hist::default(),
        })
    }

    pub fn geometry(&self) -> Geometry {
        self.geo
    }

    /// Copies waiting frames into `bufs` (each cleared first) until the ring
    /// has none or `bufs` is full; returns how many it filled. Each slot goes
    /// back to the kernel as soon as its frame is copied.
    pub fn read(&mut self, bufs: &mut [Vec<u8>]) -> usize {
        let mut got = 0;
        // The kernel's stamps are wall-clock time (af_packet's
        // tpacket_get_timestamp, else ktime_get_real as it fills the slot);
        // read once a batch, and only when a frame waits (an empty ring is
        // polled every turn of the loop).
        let mut now = None;
        while got < bufs.len() {
            // SAFETY: offset(next) is a slot inside the mapping, 16-aligned,
            // and starts with a tpacket2_hdr the kernel owns until its status
            // has TP_STATUS_USER.
            let hdr = unsafe { self.map.add(self.geo.offset(self.next)) };
            let status = unsafe { AtomicU32::from_ptr(hdr.cast::<u32>()) };
            // Acquire: the frame's bytes the kernel wrote before it set the
            // status are visible once we see the status.
            if status.load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                break;
            }
            // SAFETY: the slot is ours; its header is initialised.
            let h = unsafe { &*hdr.cast::<libc::tpacket2_hdr>() };
            let (mac, snap, len) = (h.tp_mac as usize, h.tp_snaplen as usize, h.tp_len as usize);
            let stamped = h.tp_sec as u64 * 1_000_000_000 + h.tp_nsec as u64;
            let now = *now.get_or_insert_with(realtime_ns);
            self.wait.record(now.saturating_sub(stamped));
            if snap < len || mac + snap > self.geo.slot {
                self.truncated += 1;
            } else {
                let buf = &mut bufs[got];
                buf.clear();
                // SAFETY: [mac, mac + snap) lies inside the slot (checked).
                buf.extend_from_slice(unsafe { std::slice::from_raw_parts(hdr.add(mac), snap) });
                got += 1;
            }
            // Release: our reads of the slot are done before the kernel may
            // write it again.
            status.store(libc::TP_STATUS_KERNEL, Ordering::Release);
            self.next = (self.next + 1) % self.geo.slots();
        }
        got
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: the mapping made in attach, of that length.
        unsafe { libc::munmap(self.map.cast(), self.geo.bytes()) };
    }
}

fn setsockopt<T>(fd: &OwnedFd, opt: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: v points to a value of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            opt,
            (v as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_holds_a_whole_frame_of_the_mtu_with_a_vlan_tag_after_the_header() {
        for mtu in [576, 1500, 4418, 9000] {
            let g = Geometry::for_mtu(mtu, 64 << 20);
            assert!(
                mac_offset() + ETH_HLEN + VLAN_HLEN + mtu <= g.slot,
                "mtu {mtu}: {g:?}"
            );
            assert_eq!(g.slot % libc::TPACKET_ALIGNMENT, 0);
            assert!(g.slot < mac_offset() + ETH_HLEN + VLAN_HLEN + mtu + libc::TPACKET_ALIGNMENT);
        }
    }

    #[test]
    fn slots_never_straddle_a_block_and_blocks_are_whole_pages() {
        let g = Geometry::for_mtu(9000, 10 << 20);
        assert_eq!(g.block % 4096, 0);
        assert_eq!(g.blocks, 10);
        for i in 0..g.slots() {
            let at = g.offset(i);
            assert_eq!(
                at / g.block,
                (at + g.slot - 1) / g.block,
                "slot {i} straddles"
            );
        }
        assert_eq!(g.offset(g.per_block), g.block);
        assert!(g.offset(g.slots() - 1) + g.slot <= g.bytes());
    }

    #[test]
    fn a_ring_asked_for_less_than_a_block_still_has_one() {
        let g = Geometry::for_mtu(1500, 1000);
        assert_eq!(g.blocks, 1);
        assert!(g.slots() >= 1);
    }
}

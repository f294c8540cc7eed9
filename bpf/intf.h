/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The one contract between braid's BPF congestion controls and user space.
 *
 * Rust reads these layouts from the BTF of the compiled object (the generated
 * skeleton's types, crates/braid-cc/build.rs); a change
 * here is a change of the pinned maps' format, so bump BRAID_ABI_VERSION.
 */
#ifndef BRAID_INTF_H
#define BRAID_INTF_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

enum braid_abi {
	/* Stored in the defaults map so a loader can refuse maps of another layout. */
	BRAID_ABI_VERSION = 2,
};

enum braid_scales {
	/* frac_cwnd is in thousandths of Reno's growth: 1000 = Reno, 100 = a 10x virtual RTT. */
	BRAID_FRAC_SCALE = 1000,
	/* TCP-P strength k is carried in thousandths so that fractional k works too. */
	BRAID_STRENGTH_SCALE = 1000,
	BRAID_MAX_GROUPS = 4096,
};

/*
 * Per-socket settings, in a BPF_MAP_TYPE_SK_STORAGE map that user space
 * updates with the socket's fd as key. A zero field means "use the default".
 */
struct braid_sock_settings {
	__u32 frac_cwnd;      /* braid_frac: [1, 1000] */
	__u32 strength_milli; /* braid_tcpp: k * 1000, >= 1 */
	__u64 group_id;       /* braid_tcpp: explicit group; 0 = group by destination address */
};

/*
 * Single entry (key 0) of the defaults array map. `repaired` counts the
 * windows the controls found out of bounds and put back (math/reno.h); it
 * was padding before, always 0, so the layout and the ABI are unchanged.
 */
struct braid_defaults {
	__u32 abi_version;
	__u32 frac_cwnd;
	__u32 strength_milli;
	__u32 repaired;
};

enum braid_group_kind {
	BRAID_GROUP_USER = 1,  /* id[0] = low 32 bits, id[1] = high 32 bits of group_id */
	BRAID_GROUP_INET = 2,  /* id[0] = IPv4 destination, network order */
	BRAID_GROUP_INET6 = 3, /* id[0..3] = IPv6 destination, network order */
};

/*
 * Groups are scoped by network namespace: the same destination address in
 * two namespaces (two testbeds, two containers) is two different paths.
 */
struct braid_group_key {
	__u32 kind;
	__u32 id[4];
	__u32 pad;
	__u64 netns; /* the socket's network namespace cookie */
};

/* TCP-P group state, shared by every member socket (Cho & Bettati section 3.1). */
struct braid_group {
	__u32 members;           /* N: sockets that ran init and not yet release */
	__u32 strength_milli;    /* k of the latest member to join */
	__u64 epoch;             /* group reductions signalled so far (Eq. 9) */
	__u64 last_reduction_ns; /* bpf_ktime_get_ns() of the latest signal */
	__s64 cwnd_sum;          /* sum of members' cwnd in packets, as last reported */
	__u64 guarded;           /* losses the burst guard (section 2.3) kept from cascading */
};

#endif /* BRAID_INTF_H */

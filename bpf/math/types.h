/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The congestion-control arithmetic of braid is plain integer C: no kernel
 * types, no floats (the verifier forbids them), no I/O. The BPF programs in
 * bpf/ and the native tests in crates/braid-cc call the very same functions.
 */
#ifndef BRAID_MATH_TYPES_H
#define BRAID_MATH_TYPES_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define BRAID_FN static inline __attribute__((always_inline))

BRAID_FN __u32 braid_min_u32(__u32 a, __u32 b) { return a < b ? a : b; }
BRAID_FN __u32 braid_max_u32(__u32 a, __u32 b) { return a > b ? a : b; }

#endif

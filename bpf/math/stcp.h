/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Scalable TCP (Kelly 2003): a = 0.01 packet per ACK, b = 1/8.
 *
 * Like Linux's tcp_scalable we grow one packet per min(cwnd, 100) ACKs, so the
 * window grows like Reno below 100 packets and by 0.01 per ACK above (older
 * kernels and ns-3 use 50 ACKs, a = 0.02; we follow Kelly's a = 0.01). The
 * steady-state response is cwnd = a / (b p) = 0.08 / p packets.
 */
#ifndef BRAID_MATH_STCP_H
#define BRAID_MATH_STCP_H

#include "reno.h"

enum braid_stcp_consts {
	BRAID_STCP_AI_ACKS = 100, /* ACKs per packet of growth: a = 1/100 */
	BRAID_STCP_MD_SHIFT = 3,  /* decrease by cwnd >> 3: b = 0.125 */
};

BRAID_FN void braid_stcp_on_ack(struct braid_win *w, __u32 acked)
{
	if (braid_in_slow_start(w)) {
		acked = braid_slow_start(w, acked);
		if (!acked)
			return;
	}
	braid_cong_avoid_ai(w, braid_min_u32(w->cwnd, BRAID_STCP_AI_ACKS), acked);
}

BRAID_FN __u32 braid_stcp_ssthresh(__u32 cwnd)
{
	return braid_max_u32(cwnd - (cwnd >> BRAID_STCP_MD_SHIFT), 2);
}

#endif

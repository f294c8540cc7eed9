/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * HighSpeed TCP, RFC 3649: above Low_Window = 38 packets the window grows by
 * a(w) packets per RTT and falls by b(w) * w on loss, from a table (row i
 * covers windows up to braid_hstcp_table[i].cwnd with a(w) = i + 1, as Linux's
 * tcp_highspeed reads it). Below 38 packets it is Reno.
 *
 * Differences from Linux's tcp_highspeed:
 * - the table is computed from the RFC's formulas (gen_hstcp_table.py), not copied;
 * - growth counts packets ACKed (a(w) per window of ACKed packets, as the RFC
 *   says), where Linux adds a(w) per ACK callback whatever the ACK covered;
 * - the row is found by binary search each time rather than walked from the last.
 */
#ifndef BRAID_MATH_HSTCP_H
#define BRAID_MATH_HSTCP_H

#include "reno.h"
#include "hstcp_table.h"

/* Index of the row that governs `cwnd`: the first row whose cwnd is >= it. */
BRAID_FN __u32 braid_hstcp_row(__u32 cwnd)
{
	__u32 lo = 0, hi = BRAID_HSTCP_ROWS - 1, mid;
	int i;

	/* 2^7 > 73 rows: seven halvings always suffice; the bound is for the verifier. */
	for (i = 0; i < 8 && lo < hi; i++) {
		mid = (lo + hi) / 2;
		if (mid >= BRAID_HSTCP_ROWS)
			break;
		if (cwnd <= braid_hstcp_table[mid].cwnd)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* a(w): packets of growth per window of ACKed packets. */
BRAID_FN __u32 braid_hstcp_a(__u32 cwnd)
{
	return braid_hstcp_row(cwnd) + 1;
}

/* b(w) in 1/256. */
BRAID_FN __u32 braid_hstcp_b_256(__u32 cwnd)
{
	__u32 row = braid_hstcp_row(cwnd);

	if (row >= BRAID_HSTCP_ROWS)
		row = BRAID_HSTCP_ROWS - 1;
	return braid_hstcp_table[row].b_256;
}

BRAID_FN void braid_hstcp_on_ack(struct braid_win *w, __u32 acked)
{
	__u32 grow;

	if (braid_in_slow_start(w)) {
		acked = braid_slow_start(w, acked);
		if (!acked)
			return;
	}
	if (w->cwnd == 0)
		return;
	w->cnt += acked * braid_hstcp_a(w->cwnd);
	if (w->cnt >= w->cwnd) {
		grow = w->cnt / w->cwnd;
		w->cnt -= grow * w->cwnd;
		w->cwnd += grow;
	}
}

BRAID_FN __u32 braid_hstcp_ssthresh(__u32 cwnd)
{
	__u64 cut = ((__u64)cwnd * braid_hstcp_b_256(cwnd)) >> 8;

	return braid_max_u32(cwnd - (__u32)cut, 2);
}

#endif

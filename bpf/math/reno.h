/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The two growth rules every control here builds on, with Linux's semantics
 * (appropriate byte counting: `acked` is packets newly acknowledged by this ACK).
 */
#ifndef BRAID_MATH_RENO_H
#define BRAID_MATH_RENO_H

#include "types.h"

/* A window in packets with the counter TCP keeps for fractional growth. */
struct braid_win {
	__u32 cwnd;     /* packets */
	__u32 ssthresh; /* packets */
	__u32 cnt;      /* ACKed packets not yet turned into window (snd_cwnd_cnt) */
};

/*
 * Slow start: one packet of window per packet ACKed, never past ssthresh.
 * Returns the ACKed packets left over once ssthresh is reached, which the
 * caller hands to congestion avoidance (as tcp_slow_start() does).
 */
BRAID_FN __u32 braid_slow_start(struct braid_win *w, __u32 acked)
{
	__u32 next = w->cwnd + acked;

	if (next > w->ssthresh)
		next = w->ssthresh;
	if (next < w->cwnd) /* cwnd above ssthresh: nothing to do here */
		return acked;
	acked -= next - w->cwnd;
	w->cwnd = next;
	return acked;
}

/* Additive increase: one packet of window per `per` packets ACKed. */
BRAID_FN void braid_cong_avoid_ai(struct braid_win *w, __u32 per, __u32 acked)
{
	__u32 delta;

	if (per == 0)
		per = 1;
	/* A counter left above `per` by a shrunk window pays out once, as in Linux. */
	if (w->cnt >= per) {
		w->cnt = 0;
		w->cwnd++;
	}
	w->cnt += acked;
	if (w->cnt >= per) {
		delta = w->cnt / per;
		w->cnt -= delta * per;
		w->cwnd += delta;
	}
}

BRAID_FN int braid_in_slow_start(const struct braid_win *w)
{
	return w->cwnd < w->ssthresh;
}

/* Reno's multiplicative decrease: half the window, at least two packets. */
BRAID_FN __u32 braid_reno_ssthresh(__u32 cwnd)
{
	return braid_max_u32(cwnd >> 1, 2);
}

#endif

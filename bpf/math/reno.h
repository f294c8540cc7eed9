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

/*
 * The largest window the controls take from the kernel: 2^24 packets, 24 GB
 * at 1448 bytes, more than 100 Gb/s needs across a 1.9 s round trip.
 *
 * Why a control checks at all: on this laboratory's kernel (6.18, x86 with
 * the SRSO return thunk) a threshold our ssthresh callback computed and
 * returned was, now and then, not the one the kernel stored. Traced on
 * braid_tcpp sockets under `--mode auto` (twice in fifteen 4-minute runs of
 * nine streams): once the callback returned 15 on entering recovery and the
 * socket came out of it with a threshold of 2,165,326,096 (0x81104110, the
 * low half of a return address inside srso_alias_return_thunk, i.e. stale
 * stack) and a window of 332 that recovery had grown toward it; no callback
 * of ours had written or returned either. Other runs held windows of 1e9
 * packets. Left alone, such a window floods the path for seconds (25,000
 * retransmissions in one run) until losses have halved it thirty times.
 */
#define BRAID_WINDOW_MAX (1U << 24)
#define BRAID_INFINITE_SSTHRESH 0x7fffffffU /* TCP_INFINITE_SSTHRESH */

/*
 * A window no sender could have set goes back to what it had in flight
 * lately (`in_flight`, at least two packets); a threshold out of bounds
 * goes back to the one the control last returned (`told`, 0 if none, or out
 * of bounds itself), else to the window, ending a slow start it has no
 * reason for. Linux's initial threshold is in bounds. Returns whether
 * anything changed.
 */
BRAID_FN int braid_window_repair(struct braid_win *w, __u32 in_flight, __u32 told)
{
	int fixed = 0;

	if (w->cwnd > BRAID_WINDOW_MAX) {
		w->cwnd = in_flight > BRAID_WINDOW_MAX ? BRAID_WINDOW_MAX
						       : braid_max_u32(in_flight, 2);
		w->cnt = 0;
		fixed = 1;
	}
	if (w->ssthresh > BRAID_WINDOW_MAX && w->ssthresh != BRAID_INFINITE_SSTHRESH) {
		w->ssthresh = told && told <= BRAID_WINDOW_MAX ? told : w->cwnd;
		fixed = 1;
	}
	return fixed;
}

/* Reno's multiplicative decrease: half the window, at least two packets. */
BRAID_FN __u32 braid_reno_ssthresh(__u32 cwnd)
{
	return braid_max_u32(cwnd >> 1, 2);
}

#endif

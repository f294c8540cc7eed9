/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Fractional stream of Combined Parallel TCP (Hacker, Noble, Athey 2004, section V).
 *
 * Reno whose window grows at frac_cwnd/1000 of Reno's rate, in slow start and
 * in congestion avoidance alike: a virtual RTT 1000/frac_cwnd times the real
 * one. The loss response is Reno's, unchanged (halve).
 *
 * The paper keeps the fraction inside snd_cwnd_cnt; we keep it in thousandths
 * of a packet in the control's own state, which is the same rule with room for
 * windows up to 4 million packets without overflow.
 */
#ifndef BRAID_MATH_FRAC_H
#define BRAID_MATH_FRAC_H

#include "reno.h"

enum braid_frac_consts {
	BRAID_FRAC_ONE = 1000, /* frac_cwnd of a plain Reno stream */
	BRAID_FRAC_MIN = 1,
};

struct braid_frac {
	__u32 ss_milli; /* slow start credit, thousandths of a packet */
	__u32 ca_milli; /* congestion avoidance credit, thousandths of an ACK */
};

BRAID_FN __u32 braid_frac_clamp(__u32 frac_cwnd)
{
	if (frac_cwnd < BRAID_FRAC_MIN)
		return BRAID_FRAC_ONE;
	return braid_min_u32(frac_cwnd, BRAID_FRAC_ONE);
}

BRAID_FN void braid_frac_on_ack(struct braid_win *w, struct braid_frac *st,
				__u32 acked, __u32 frac_cwnd)
{
	__u32 grow, room, per;

	frac_cwnd = braid_frac_clamp(frac_cwnd);
	if (braid_in_slow_start(w)) {
		/* Reno: +1 per ACKed packet; here +frac/1000 per packet. */
		st->ss_milli += acked * frac_cwnd;
		grow = st->ss_milli / BRAID_FRAC_ONE;
		room = w->ssthresh - w->cwnd;
		if (grow <= room) {
			st->ss_milli -= grow * BRAID_FRAC_ONE;
			w->cwnd += grow;
			return;
		}
		/* Reaching ssthresh: the unused credit carries on into avoidance. */
		st->ss_milli -= room * BRAID_FRAC_ONE;
		w->cwnd = w->ssthresh;
		st->ca_milli += st->ss_milli;
		st->ss_milli = 0;
		acked = 0;
	}
	/* Reno: +1 per cwnd ACKs; here +1 per cwnd * 1000 / frac ACKs. */
	st->ca_milli += acked * frac_cwnd;
	per = w->cwnd * BRAID_FRAC_ONE;
	if (per && st->ca_milli >= per) {
		grow = st->ca_milli / per;
		st->ca_milli -= grow * per;
		w->cwnd += grow;
	}
}

/* Section V: "we did not modify congestion avoidance behavior when a packet loss occurs". */
BRAID_FN __u32 braid_frac_ssthresh(struct braid_frac *st, __u32 cwnd)
{
	st->ss_milli = 0;
	st->ca_milli = 0;
	return braid_reno_ssthresh(cwnd);
}

#endif

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * H-TCP (Leith & Shorten, "H-TCP: TCP for high-speed and long-distance
 * networks", 2004), with the behaviour of Linux's tcp_htcp:
 *
 *  - alpha(D) = 1 + 10 (D - DL) + ((D - DL) / 2)^2 packets per RTT once
 *    D, the time since the last congestion event, passes DL = 1 s; 1 before;
 *  - RTT scaling: alpha *= min_rtt / 100 ms, the ratio clamped to [0.1, 2];
 *  - alpha = 2 (1 - beta) alpha, so the mean window matches Reno's at D < DL;
 *  - adaptive backoff beta = min_rtt / max_rtt in [0.5, 0.8], back to 0.5 when
 *    the throughput measured before this congestion event moved by more than
 *    20 % from the one before the previous event (the "bandwidth switch").
 *
 * Differences from Linux's tcp_htcp: time in microseconds from the socket's
 * clock (tcp_mstamp) instead of jiffies, so D, min_rtt and max_rtt keep their
 * precision at HZ = 250; the throughput sample uses the packets of cong_avoid.
 * Fixed point: every `_128` value is scaled by 2^7 (128 = 1.0).
 */
#ifndef BRAID_MATH_HTCP_H
#define BRAID_MATH_HTCP_H

#include "reno.h"

enum braid_htcp_consts {
	BRAID_HTCP_ONE_128 = 128,
	BRAID_HTCP_BETA_MIN_128 = 64,  /* 0.5 */
	BRAID_HTCP_BETA_MAX_128 = 102, /* 0.8 (102/128 = 0.797) */
	BRAID_HTCP_DELTA_L_US = 1000000,
	BRAID_HTCP_RTT_REF_US = 100000,    /* alpha is scaled by min_rtt / 100 ms */
	BRAID_HTCP_RTT_JUMP_US = 20000,    /* ignore max_rtt samples more than 20 ms above */
	BRAID_HTCP_MODESWITCH_RTT_US = 10000, /* adaptive beta only above 10 ms min_rtt */
	BRAID_HTCP_DELTA_CAP_MS = 10000000,   /* keep alpha's square in range */
};

struct braid_htcp {
	__u64 last_cong_us;      /* latest congestion event (end of its recovery) */
	__u64 undo_last_cong_us; /* last_cong before a recovery that may be undone */
	__u64 sample_start_us;   /* start of the current throughput sample */
	__u32 alpha_128;         /* additive increase, packets per RTT */
	__u32 beta_128;          /* multiplicative decrease factor */
	__u32 min_rtt_us;        /* 0 until the first sample */
	__u32 max_rtt_us;
	__u32 undo_max_rtt_us;
	__u32 sample_pkts;       /* packets ACKed in the current throughput sample */
	__u32 rate;              /* smoothed throughput, packets per second */
	__u32 max_rate;          /* largest smoothed throughput since the last congestion */
	__u32 old_max_rate;      /* max_rate at the previous congestion event */
	__u32 undo_old_max_rate;
	__u32 modeswitch;        /* 1 once a congestion event left beta adaptive */
	__u32 undo_pending;      /* a congestion event is open: undo and open() apply */
};

BRAID_FN void braid_htcp_init(struct braid_htcp *st, __u64 now_us)
{
	__builtin_memset(st, 0, sizeof(*st));
	st->alpha_128 = BRAID_HTCP_ONE_128;
	st->beta_128 = BRAID_HTCP_BETA_MIN_128;
	st->last_cong_us = now_us;
	st->sample_start_us = now_us;
}

/* RTT sample; max_rtt is only learnt while no loss recovery distorts it. */
BRAID_FN void braid_htcp_rtt(struct braid_htcp *st, __u32 rtt_us, int ca_open)
{
	if (rtt_us == 0)
		return;
	if (st->min_rtt_us == 0 || rtt_us < st->min_rtt_us)
		st->min_rtt_us = rtt_us;
	if (!ca_open)
		return;
	if (st->max_rtt_us < st->min_rtt_us)
		st->max_rtt_us = st->min_rtt_us;
	if (rtt_us > st->max_rtt_us && rtt_us <= st->max_rtt_us + BRAID_HTCP_RTT_JUMP_US)
		st->max_rtt_us = rtt_us;
}

BRAID_FN __u64 braid_htcp_since_cong_us(const struct braid_htcp *st, __u64 now_us)
{
	return now_us > st->last_cong_us ? now_us - st->last_cong_us : 0;
}

/* Throughput sample over at least one min_rtt and about one window of packets. */
BRAID_FN void braid_htcp_rate(struct braid_htcp *st, __u64 now_us, __u32 pkts,
			      __u32 cwnd, int ca_open)
{
	__u64 elapsed;
	__u32 cur, alpha_pkts;

	if (!ca_open) {
		st->sample_pkts = 0;
		st->sample_start_us = now_us;
		return;
	}
	st->sample_pkts += pkts;
	elapsed = now_us > st->sample_start_us ? now_us - st->sample_start_us : 0;
	alpha_pkts = st->alpha_128 >> 7;
	if (alpha_pkts == 0)
		alpha_pkts = 1;
	if (st->min_rtt_us == 0 || elapsed < st->min_rtt_us ||
	    st->sample_pkts + alpha_pkts < cwnd)
		return;
	cur = (__u32)(((__u64)st->sample_pkts * 1000000) / elapsed);
	if (braid_htcp_since_cong_us(st, now_us) <= 3 * (__u64)st->min_rtt_us) {
		/* Just after a backoff: start the estimate afresh. */
		st->rate = cur;
		st->max_rate = cur;
	} else {
		st->rate = (3 * st->rate + cur) / 4;
		if (st->rate > st->max_rate)
			st->max_rate = st->rate;
	}
	st->sample_pkts = 0;
	st->sample_start_us = now_us;
}

/* alpha from the time since the last congestion event, min_rtt and beta. */
BRAID_FN __u32 braid_htcp_alpha_128(const struct braid_htcp *st, __u64 now_us)
{
	__u64 since = braid_htcp_since_cong_us(st, now_us);
	__u64 factor = BRAID_HTCP_ONE_128, d_ms, half, alpha;
	__u32 ratio;

	if (since > BRAID_HTCP_DELTA_L_US) {
		d_ms = (since - BRAID_HTCP_DELTA_L_US) / 1000;
		if (d_ms > BRAID_HTCP_DELTA_CAP_MS)
			d_ms = BRAID_HTCP_DELTA_CAP_MS;
		half = d_ms / 2;
		/* 1 + 10 d + (d/2)^2 with d in seconds, scaled by 128. */
		factor += (128 * 10 * d_ms) / 1000 + (128 * half * half) / 1000000;
	}
	if (st->min_rtt_us) {
		/* min_rtt / 100 ms in 1/128, clamped to [0.1, 2] */
		ratio = (__u32)(((__u64)st->min_rtt_us * 128) / BRAID_HTCP_RTT_REF_US);
		if (ratio < 13)
			ratio = 13;
		if (ratio > 256)
			ratio = 256;
		factor = (factor * ratio) >> 7;
	}
	alpha = (2 * factor * (BRAID_HTCP_ONE_128 - st->beta_128)) >> 7;
	if (alpha == 0)
		alpha = BRAID_HTCP_ONE_128;
	if (alpha > 0xffffffffULL)
		alpha = 0xffffffffULL;
	return (__u32)alpha;
}

/* Adaptive backoff, evaluated at each congestion event. */
BRAID_FN void braid_htcp_update_beta(struct braid_htcp *st)
{
	__u32 max_rate = st->max_rate, old = st->old_max_rate;
	__u32 beta;

	st->old_max_rate = max_rate;
	/* Throughput moved by more than 20 %: the path changed, back off fully. */
	if (!(5ULL * max_rate >= 4ULL * old && 5ULL * max_rate <= 6ULL * old)) {
		st->beta_128 = BRAID_HTCP_BETA_MIN_128;
		st->modeswitch = 0;
		return;
	}
	if (st->modeswitch && st->min_rtt_us > BRAID_HTCP_MODESWITCH_RTT_US && st->max_rtt_us) {
		beta = (__u32)(((__u64)st->min_rtt_us << 7) / st->max_rtt_us);
		st->beta_128 = braid_min_u32(braid_max_u32(beta, BRAID_HTCP_BETA_MIN_128),
					     BRAID_HTCP_BETA_MAX_128);
	} else {
		st->beta_128 = BRAID_HTCP_BETA_MIN_128;
		st->modeswitch = 1;
	}
}

/* The loss response: new ssthresh, after updating beta, alpha and max_rtt. */
BRAID_FN __u32 braid_htcp_ssthresh(struct braid_htcp *st, __u32 cwnd, __u64 now_us)
{
	__u32 min_rtt = st->min_rtt_us, max_rtt = st->max_rtt_us;

	braid_htcp_update_beta(st);
	st->alpha_128 = braid_htcp_alpha_128(st, now_us);
	/* Let max_rtt fade towards min_rtt so a route change is forgotten. */
	if (min_rtt > 0 && max_rtt > min_rtt)
		st->max_rtt_us = min_rtt + (__u32)(((__u64)(max_rtt - min_rtt) * 95) / 100);
	return braid_max_u32((__u32)(((__u64)cwnd * st->beta_128) >> 7), 2);
}

BRAID_FN void braid_htcp_on_ack(struct braid_htcp *st, struct braid_win *w,
				__u32 acked, __u64 now_us)
{
	if (braid_in_slow_start(w)) {
		braid_slow_start(w, acked);
		return;
	}
	/* cwnd += alpha / cwnd per ACKed packet, kept as a count of ACKed packets. */
	w->cnt += acked;
	if ((((__u64)w->cnt * st->alpha_128) >> 7) >= w->cwnd) {
		w->cwnd++;
		w->cnt = 0;
		st->alpha_128 = braid_htcp_alpha_128(st, now_us);
	}
}

/* Entering loss recovery, CWR or RTO: a congestion event starts now. */
BRAID_FN void braid_htcp_congestion(struct braid_htcp *st, __u64 now_us)
{
	st->undo_last_cong_us = st->last_cong_us;
	st->undo_max_rtt_us = st->max_rtt_us;
	st->undo_old_max_rate = st->old_max_rate;
	st->undo_pending = 1;
	st->last_cong_us = now_us;
}

/* Back to the open state: D counts from the end of the recovery. */
BRAID_FN void braid_htcp_open(struct braid_htcp *st, __u64 now_us)
{
	if (st->undo_pending) {
		st->last_cong_us = now_us;
		st->undo_pending = 0;
	}
}

/* The loss was spurious: forget the congestion event. */
BRAID_FN void braid_htcp_undo(struct braid_htcp *st)
{
	if (st->undo_pending) {
		st->last_cong_us = st->undo_last_cong_us;
		st->max_rtt_us = st->undo_max_rtt_us;
		st->old_max_rate = st->undo_old_max_rate;
		st->undo_pending = 0;
	}
}

#endif

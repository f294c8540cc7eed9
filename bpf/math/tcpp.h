/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * TCP-P (Cho & Bettati, "Aggregated Aggressiveness Control on Groups of TCP
 * Flows"): N member flows whose increase and decrease are coupled so that the
 * group takes what k ordinary TCP flows would ("strength k").
 *
 *  - slow start: each member grows k/N per ACKed packet (Eq. 2; section 3.2
 *    implements it as +k per N ACKs);
 *  - congestion avoidance: +k after N W_j + (N-1)/2 ACKed packets (Eq. 8);
 *  - decrease: the member that saw the loss halves (section 3.3); every other
 *    member scales by 1/2 + N(k-1) / (2(N-1)k) (Eq. 9), applied at its next
 *    callback since a BPF program may only write its own socket;
 *  - burst guard (section 2.3): a loss within the guard time of the group's
 *    latest reduction signals no further group reduction.
 *
 * Where we differ from the paper: the guard time is the member's current
 * smoothed RTT, never less than its minimum (the paper's). The members of a
 * burst detect their losses about one current RTT after the drops; on the
 * paper's paths the base RTT dominated and the two were close, but behind a
 * deep drop-tail queue on a short path the minimum is a fraction of the
 * current RTT and every member's loss cascades into another group
 * reduction. Measured on a 20-50 Mb/s tbf bottleneck with 100-400 KB of
 * queue (tests/system): 4 members with k = 1 against one Reno flow took
 * 0.35-0.46 of its rate with the minimum as guard (almost no loss guarded),
 * 0.72-1.22 with the current smoothed RTT at 300-400 KB of queue.
 *
 * Where we go beyond the paper: k is carried in thousandths so fractional k
 * >= 1 works; Eq. 9 is clamped to [0, 1] (for k > N it would grow the other
 * members); members that missed several reductions apply them all.
 * Where we read the paper: a guarded loss takes the member to half of its
 * window before the group reduction it just received, not half of what Eq. 9
 * left (for k = 1 that means no second halving, for k = N a plain halving);
 * a second loss of the member that signalled the reduction keeps its window.
 */
#ifndef BRAID_MATH_TCPP_H
#define BRAID_MATH_TCPP_H

#include "reno.h"

enum braid_tcpp_consts {
	BRAID_TCPP_K_ONE = 1000,   /* strength k = 1 in thousandths */
	BRAID_TCPP_F_ONE = 1024,   /* Eq. 9 factor scale */
	BRAID_TCPP_MAX_CATCHUP = 8 /* reductions applied at once by a late member */
};

/* A member's arithmetic state (the rest lives in the BPF program's private area). */
struct braid_tcpp {
	__u32 acks2;         /* twice the ACKed packets toward the next +k (Eq. 8 doubled) */
	__u32 ss_credit;     /* slow start: ACKed packets * k_milli, paid out per N * 1000 */
	__u32 k_carry_milli; /* congestion avoidance: fraction of k not yet added */
	__u32 pre_cwnd;      /* window before the latest group reduction applied here */
	__u32 pre_epoch;     /* low bits of the group epoch that reduction belonged to */
};

BRAID_FN __u32 braid_tcpp_clamp_k(__u32 k_milli)
{
	return k_milli < BRAID_TCPP_K_ONE ? BRAID_TCPP_K_ONE : k_milli;
}

/* How long after a group reduction a member's loss counts as the same burst. */
BRAID_FN __u32 braid_tcpp_guard_us(__u32 min_srtt_us, __u32 srtt_us)
{
	return braid_max_u32(min_srtt_us, srtt_us);
}

/* Eq. 8, doubled to stay in integers: 2 N W_j + (N - 1) ACKed packets per +k. */
BRAID_FN __u64 braid_tcpp_ca_threshold2(__u32 n, __u32 cwnd)
{
	if (n == 0)
		n = 1;
	return 2ULL * n * cwnd + (n - 1);
}

BRAID_FN void braid_tcpp_on_ack(struct braid_win *w, struct braid_tcpp *st, __u32 acked,
				__u32 n, __u32 k_milli)
{
	__u64 thr2, credit, unit, times, carry;
	__u32 grow, room;

	if (n == 0)
		n = 1;
	k_milli = braid_tcpp_clamp_k(k_milli);
	if (braid_in_slow_start(w)) {
		/* Eq. 2: k/N per ACKed packet. */
		unit = (__u64)n * BRAID_TCPP_K_ONE;
		credit = st->ss_credit + (__u64)acked * k_milli;
		grow = (__u32)(credit / unit);
		st->ss_credit = (__u32)(credit - (__u64)grow * unit);
		room = w->ssthresh - w->cwnd;
		w->cwnd += grow < room ? grow : room;
		return;
	}
	thr2 = braid_tcpp_ca_threshold2(n, w->cwnd);
	if (thr2 == 0)
		return;
	credit = st->acks2 + 2ULL * acked;
	if (credit < thr2) {
		st->acks2 = (__u32)credit;
		return;
	}
	times = credit / thr2;
	st->acks2 = (__u32)(credit - times * thr2);
	carry = st->k_carry_milli + times * k_milli;
	w->cwnd += (__u32)(carry / BRAID_TCPP_K_ONE);
	st->k_carry_milli = (__u32)(carry % BRAID_TCPP_K_ONE);
}

/* Eq. 9: the factor, in 1/1024, by which the other members scale their windows. */
BRAID_FN __u32 braid_tcpp_others_factor_1024(__u32 n, __u32 k_milli)
{
	__u64 num, den;
	__s64 f;

	k_milli = braid_tcpp_clamp_k(k_milli);
	if (n < 2)
		return BRAID_TCPP_F_ONE;
	/* 1/2 + N (k - 1) / (2 (N - 1) k), with k = k_milli / 1000 */
	num = (__u64)BRAID_TCPP_F_ONE * n * (k_milli - BRAID_TCPP_K_ONE);
	den = 2ULL * (n - 1) * k_milli;
	f = BRAID_TCPP_F_ONE / 2 + (__s64)(num / den);
	if (f > BRAID_TCPP_F_ONE)
		f = BRAID_TCPP_F_ONE;
	return (__u32)f;
}

/*
 * Apply `missed` group reductions signalled by other members. The window
 * leaves slow start: the group has seen congestion.
 */
BRAID_FN void braid_tcpp_apply_reductions(struct braid_win *w, struct braid_tcpp *st,
					  __u32 missed, __u64 group_epoch, __u32 n,
					  __u32 k_milli)
{
	__u32 f = braid_tcpp_others_factor_1024(n, k_milli), i;
	__u64 cwnd = w->cwnd;

	if (missed == 0)
		return;
	st->pre_cwnd = w->cwnd;
	st->pre_epoch = (__u32)group_epoch;
	for (i = 0; i < BRAID_TCPP_MAX_CATCHUP && i < missed; i++)
		cwnd = (cwnd * f) >> 10;
	if (cwnd < 2)
		cwnd = 2;
	w->cwnd = (__u32)cwnd;
	w->ssthresh = (__u32)cwnd;
	w->cnt = 0;
	st->acks2 = 0;
}

/*
 * A member saw a loss, after applying any pending group reduction. Returns
 * its new ssthresh and sets *signal when the group must reduce (Eq. 9).
 * `since_reduction_us` is the time since the group's latest reduction (~0 if
 * none), `group_epoch` that reduction's number, `guard_us` the burst guard's
 * time (braid_tcpp_guard_us).
 */
BRAID_FN __u32 braid_tcpp_on_loss(struct braid_tcpp *st, __u32 cwnd, __u64 since_reduction_us,
				  __u64 group_epoch, __u32 guard_us, int *signal)
{
	st->acks2 = 0;
	st->ss_credit = 0;
	if (since_reduction_us >= guard_us) {
		*signal = 1;
		return braid_reno_ssthresh(cwnd);
	}
	*signal = 0;
	if (st->pre_cwnd && st->pre_epoch == (__u32)group_epoch)
		return braid_max_u32(braid_min_u32(cwnd, st->pre_cwnd >> 1), 2);
	return braid_max_u32(cwnd, 2);
}

#endif

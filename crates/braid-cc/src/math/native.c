// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The arithmetic of bpf/math/ compiled for the host, behind a small C ABI that
 * the Rust tests drive from bpf/vectors/. These are the same functions the
 * BPF programs call; only the glue that reads and writes the socket differs.
 */
#include <stdlib.h>

#include "intf.h"
#include "math/stcp.h"
#include "math/hstcp.h"
#include "math/htcp.h"
#include "math/frac.h"
#include "math/tcpp.h"

/* Numbering shared with src/math/mod.rs (enum Control). */
enum braid_native_control {
	NATIVE_RENO = 0,
	NATIVE_STCP = 1,
	NATIVE_HSTCP = 2,
	NATIVE_HTCP = 3,
	NATIVE_FRAC = 4,
	NATIVE_TCPP = 5,
};

struct braid_native_sim {
	int control;
	struct braid_win w;
	struct braid_frac frac;
	struct braid_htcp htcp;
	struct braid_tcpp tcpp;
};

unsigned braid_native_abi_version(void) { return BRAID_ABI_VERSION; }
unsigned braid_native_frac_scale(void) { return BRAID_FRAC_SCALE; }
unsigned braid_native_strength_scale(void) { return BRAID_STRENGTH_SCALE; }
unsigned braid_native_hstcp_rows(void) { return BRAID_HSTCP_ROWS; }

struct braid_native_sim *braid_native_new(int control, __u32 cwnd, __u32 ssthresh, __u64 now_us)
{
	struct braid_native_sim *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->control = control;
	s->w.cwnd = cwnd;
	s->w.ssthresh = ssthresh;
	if (control == NATIVE_HTCP)
		braid_htcp_init(&s->htcp, now_us);
	return s;
}

void braid_native_free(struct braid_native_sim *s) { free(s); }

__u32 braid_native_cwnd(const struct braid_native_sim *s) { return s->w.cwnd; }
__u32 braid_native_ssthresh(const struct braid_native_sim *s) { return s->w.ssthresh; }
__u32 braid_native_cnt(const struct braid_native_sim *s) { return s->w.cnt; }
__u32 braid_native_htcp_alpha_128(const struct braid_native_sim *s) { return s->htcp.alpha_128; }
__u32 braid_native_htcp_beta_128(const struct braid_native_sim *s) { return s->htcp.beta_128; }
__u32 braid_native_htcp_max_rtt_us(const struct braid_native_sim *s) { return s->htcp.max_rtt_us; }

void braid_native_ack(struct braid_native_sim *s, __u32 acked, __u64 now_us, __u32 frac_cwnd,
		      __u32 n, __u32 k_milli)
{
	switch (s->control) {
	case NATIVE_RENO:
		if (braid_in_slow_start(&s->w))
			acked = braid_slow_start(&s->w, acked);
		if (acked)
			braid_cong_avoid_ai(&s->w, s->w.cwnd, acked);
		break;
	case NATIVE_STCP:
		braid_stcp_on_ack(&s->w, acked);
		break;
	case NATIVE_HSTCP:
		braid_hstcp_on_ack(&s->w, acked);
		break;
	case NATIVE_HTCP:
		braid_htcp_on_ack(&s->htcp, &s->w, acked, now_us);
		break;
	case NATIVE_FRAC:
		braid_frac_on_ack(&s->w, &s->frac, acked, frac_cwnd);
		break;
	case NATIVE_TCPP:
		braid_tcpp_on_ack(&s->w, &s->tcpp, acked, n, k_milli);
		break;
	}
}

/* H-TCP's measurements, which the kernel feeds from pkts_acked. */
void braid_native_htcp_sample(struct braid_native_sim *s, __u64 now_us, __u32 rtt_us,
			      __u32 pkts, int ca_open)
{
	braid_htcp_rtt(&s->htcp, rtt_us, ca_open);
	braid_htcp_rate(&s->htcp, now_us, pkts, s->w.cwnd, ca_open);
}

/*
 * A loss detected at now_us, then a recovery of recovery_us after which the
 * window restarts at the new ssthresh (what PRR converges to).
 */
__u32 braid_native_loss(struct braid_native_sim *s, __u64 now_us, __u64 recovery_us,
			__u64 since_reduction_us, __u64 group_epoch, __u32 min_srtt_us,
			int *signal)
{
	__u32 ssthresh = 0;

	*signal = 0;
	switch (s->control) {
	case NATIVE_RENO:
		ssthresh = braid_reno_ssthresh(s->w.cwnd);
		break;
	case NATIVE_STCP:
		ssthresh = braid_stcp_ssthresh(s->w.cwnd);
		break;
	case NATIVE_HSTCP:
		ssthresh = braid_hstcp_ssthresh(s->w.cwnd);
		break;
	case NATIVE_HTCP:
		ssthresh = braid_htcp_ssthresh(&s->htcp, s->w.cwnd, now_us);
		braid_htcp_congestion(&s->htcp, now_us);
		braid_htcp_open(&s->htcp, now_us + recovery_us);
		break;
	case NATIVE_FRAC:
		ssthresh = braid_frac_ssthresh(&s->frac, s->w.cwnd);
		break;
	case NATIVE_TCPP:
		ssthresh = braid_tcpp_on_loss(&s->tcpp, s->w.cwnd, since_reduction_us, group_epoch,
					      min_srtt_us, signal);
		break;
	}
	s->w.ssthresh = ssthresh;
	s->w.cwnd = ssthresh;
	s->w.cnt = 0;
	return ssthresh;
}

void braid_native_tcpp_reduce(struct braid_native_sim *s, __u32 missed, __u64 group_epoch,
			      __u32 n, __u32 k_milli)
{
	braid_tcpp_apply_reductions(&s->w, &s->tcpp, missed, group_epoch, n, k_milli);
}

__u32 braid_native_hstcp_a(__u32 cwnd) { return braid_hstcp_a(cwnd); }
__u32 braid_native_hstcp_b_256(__u32 cwnd) { return braid_hstcp_b_256(cwnd); }
__u32 braid_native_hstcp_row_cwnd(__u32 row)
{
	return row < BRAID_HSTCP_ROWS ? braid_hstcp_table[row].cwnd : 0;
}
__u32 braid_native_tcpp_factor_1024(__u32 n, __u32 k_milli)
{
	return braid_tcpp_others_factor_1024(n, k_milli);
}
__u64 braid_native_tcpp_threshold2(__u32 n, __u32 cwnd) { return braid_tcpp_ca_threshold2(n, cwnd); }

/* braid_window_repair on a window given by value; the result through *out. */
int braid_native_window_repair(__u32 cwnd, __u32 ssthresh, __u32 in_flight, __u32 told,
			       __u32 out[2])
{
	struct braid_win w = { .cwnd = cwnd, .ssthresh = ssthresh };
	int fixed = braid_window_repair(&w, in_flight, told);

	out[0] = w.cwnd;
	out[1] = w.ssthresh;
	return fixed;
}

/* alpha for a state with the given history, without running a connection. */
__u32 braid_native_htcp_alpha_at(__u64 since_cong_us, __u32 min_rtt_us, __u32 beta_128)
{
	struct braid_htcp st;

	braid_htcp_init(&st, 0);
	st.min_rtt_us = min_rtt_us;
	st.beta_128 = beta_128;
	return braid_htcp_alpha_128(&st, since_cong_us);
}

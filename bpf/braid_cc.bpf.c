// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * braid's congestion controls as tcp_congestion_ops in the running kernel.
 *
 * This file is the glue between the kernel and the arithmetic in math/:
 * it reads the socket's window into a struct braid_win, calls the control's
 * pure function, and writes the result back. Where a control differs from
 * its paper or from Linux's module, the header in math/ says so at its top.
 *
 * What BPF imposes: a program may write only snd_cwnd, snd_cwnd_cnt,
 * snd_ssthresh and its own icsk_ca_priv, so TCP-P members learn of a group
 * reduction through the group map and apply it at their next callback. An
 * accepted socket's sk_storage can only be filled after init ran, so the
 * per-socket settings are read on every cong_avoid, never cached at init.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "intf.h"
#include "math/stcp.h"
#include "math/hstcp.h"
#include "math/htcp.h"
#include "math/frac.h"
#include "math/tcpp.h"

char _license[] SEC("license") = "Dual BSD/GPL";

/* Used when the defaults map was never written: the papers' own settings. */
#define DEFAULT_FRAC_CWND 100   /* Hacker 2004: virtual RTT multiplier m = 10 */
#define DEFAULT_STRENGTH 1000   /* Cho & Bettati: k = 1 */
#define NO_REDUCTION_YET (~0ULL)
#define AF_INET6 10 /* a #define in the uapi headers, absent from vmlinux.h */

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct braid_sock_settings);
} braid_sock SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct braid_defaults);
} braid_defaults SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BRAID_MAX_GROUPS);
	__type(key, struct braid_group_key);
	__type(value, struct braid_group);
} braid_groups SEC(".maps");

/* ---- access to the socket ---------------------------------------------- */

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline void *ca_priv(const struct sock *sk)
{
	return (void *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

/*
 * The threshold the control last returned, kept in the last bytes of the
 * private area (104 bytes; every control's own state stays below 96), so a
 * threshold the kernel stored instead of it can be put back (math/reno.h).
 */
#define TOLD_OFFSET 96

static __always_inline __u32 *told_ssthresh(const struct sock *sk)
{
	return (__u32 *)((char *)ca_priv(sk) + TOLD_OFFSET);
}

static __always_inline __u32 told(struct sock *sk, __u32 ssthresh)
{
	*told_ssthresh(sk) = ssthresh;
	return ssthresh;
}

static __always_inline __u32 ca_state(const struct sock *sk)
{
	const struct inet_connection_sock *icsk = (const struct inet_connection_sock *)sk;

	return BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
}

/* tcp_is_cwnd_limited(): growing a window the sender does not fill would be a lie. */
static __always_inline int cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (tp->snd_cwnd < tp->snd_ssthresh)
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited);
}

static __always_inline struct braid_defaults *defaults(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&braid_defaults, &zero);
}

static __always_inline void count_repair(void)
{
	struct braid_defaults *d = defaults();

	if (d)
		__sync_fetch_and_add(&d->repaired, 1);
}

/*
 * The socket's window, put back in bounds first if the kernel handed it over
 * out of them (math/reno.h, braid_window_repair); the repair is written to
 * the socket at once, so a control that returns early keeps it too.
 */
static __always_inline void win_load(struct sock *sk, struct braid_win *w)
{
	struct tcp_sock *tp = tcp_sk(sk);

	w->cwnd = tp->snd_cwnd;
	w->ssthresh = tp->snd_ssthresh;
	w->cnt = tp->snd_cwnd_cnt;
	if (braid_window_repair(w, tp->max_packets_out, *told_ssthresh(sk))) {
		tp->snd_cwnd = w->cwnd;
		tp->snd_cwnd_cnt = w->cnt;
		tp->snd_ssthresh = w->ssthresh;
		count_repair();
	}
}

/* The window a loss is taken from, in bounds. */
static __always_inline __u32 loss_cwnd(struct sock *sk)
{
	struct braid_win w;

	win_load(sk, &w);
	return w.cwnd;
}

/*
 * Every ACK that acknowledges data checks the window, in recovery too, where
 * no other callback runs: a threshold lost on the way into recovery would
 * otherwise steer its whole reduction (math/reno.h).
 */
static __always_inline void win_check(struct sock *sk)
{
	struct braid_win w;

	win_load(sk, &w);
}

static __always_inline void win_store(struct sock *sk, const struct braid_win *w)
{
	struct tcp_sock *tp = tcp_sk(sk);

	tp->snd_cwnd = braid_min_u32(w->cwnd, tp->snd_cwnd_clamp);
	tp->snd_cwnd_cnt = w->cnt;
}

/* tcp_reno_undo_cwnd(): a spurious loss gives the window back, if in bounds. */
static __always_inline __u32 reno_undo(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct braid_win w = {
		.cwnd = braid_max_u32(tp->snd_cwnd, tp->prior_cwnd),
		.ssthresh = BRAID_INFINITE_SSTHRESH,
	};

	if (braid_window_repair(&w, tp->max_packets_out, 0))
		count_repair();
	return w.cwnd;
}

static __always_inline struct braid_sock_settings *sock_settings(struct sock *sk)
{
	return bpf_sk_storage_get(&braid_sock, sk, 0, 0);
}

/* ---- braid_stcp: Scalable TCP --------------------------------------------- */

SEC("struct_ops")
void BPF_PROG(stcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct braid_win w;

	win_load(sk, &w);
	if (!cwnd_limited(sk))
		return;
	braid_stcp_on_ack(&w, acked);
	win_store(sk, &w);
}

SEC("struct_ops")
__u32 BPF_PROG(stcp_ssthresh, struct sock *sk)
{
	return told(sk, braid_stcp_ssthresh(loss_cwnd(sk)));
}

SEC("struct_ops")
void BPF_PROG(stcp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	win_check(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(stcp_undo_cwnd, struct sock *sk)
{
	return reno_undo(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops braid_stcp = {
	.cong_avoid = (void *)stcp_cong_avoid,
	.ssthresh = (void *)stcp_ssthresh,
	.undo_cwnd = (void *)stcp_undo_cwnd,
	.pkts_acked = (void *)stcp_pkts_acked,
	.name = "braid_stcp",
};

/* ---- braid_hstcp: HighSpeed TCP ------------------------------------------- */

SEC("struct_ops")
void BPF_PROG(hstcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct braid_win w;

	win_load(sk, &w);
	if (!cwnd_limited(sk))
		return;
	braid_hstcp_on_ack(&w, acked);
	win_store(sk, &w);
}

SEC("struct_ops")
__u32 BPF_PROG(hstcp_ssthresh, struct sock *sk)
{
	return told(sk, braid_hstcp_ssthresh(loss_cwnd(sk)));
}

SEC("struct_ops")
void BPF_PROG(hstcp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	win_check(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(hstcp_undo_cwnd, struct sock *sk)
{
	return reno_undo(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops braid_hstcp = {
	.cong_avoid = (void *)hstcp_cong_avoid,
	.ssthresh = (void *)hstcp_ssthresh,
	.undo_cwnd = (void *)hstcp_undo_cwnd,
	.pkts_acked = (void *)hstcp_pkts_acked,
	.name = "braid_hstcp",
};

/* ---- braid_htcp: H-TCP ---------------------------------------------------- */

SEC("struct_ops")
void BPF_PROG(htcp_init, struct sock *sk)
{
	braid_htcp_init(ca_priv(sk), tcp_sk(sk)->tcp_mstamp);
}

SEC("struct_ops")
void BPF_PROG(htcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct braid_win w;

	win_load(sk, &w);
	if (!cwnd_limited(sk))
		return;
	braid_htcp_on_ack(ca_priv(sk), &w, acked, tcp_sk(sk)->tcp_mstamp);
	win_store(sk, &w);
}

SEC("struct_ops")
void BPF_PROG(htcp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct braid_htcp *st = ca_priv(sk);
	__u32 state = ca_state(sk);
	__s32 rtt_us = sample->rtt_us;

	win_check(sk);
	if (rtt_us > 0)
		braid_htcp_rtt(st, (__u32)rtt_us, state == TCP_CA_Open);
	braid_htcp_rate(st, tcp_sk(sk)->tcp_mstamp, sample->pkts_acked, tcp_sk(sk)->snd_cwnd,
			state == TCP_CA_Open || state == TCP_CA_Disorder);
}

SEC("struct_ops")
void BPF_PROG(htcp_set_state, struct sock *sk, __u8 new_state)
{
	__u64 now = tcp_sk(sk)->tcp_mstamp;

	if (new_state == TCP_CA_Open)
		braid_htcp_open(ca_priv(sk), now);
	else if (new_state == TCP_CA_CWR || new_state == TCP_CA_Recovery ||
		 new_state == TCP_CA_Loss)
		braid_htcp_congestion(ca_priv(sk), now);
}

SEC("struct_ops")
__u32 BPF_PROG(htcp_ssthresh, struct sock *sk)
{
	return told(sk, braid_htcp_ssthresh(ca_priv(sk), loss_cwnd(sk), tcp_sk(sk)->tcp_mstamp));
}

SEC("struct_ops")
__u32 BPF_PROG(htcp_undo_cwnd, struct sock *sk)
{
	braid_htcp_undo(ca_priv(sk));
	return reno_undo(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops braid_htcp = {
	.init = (void *)htcp_init,
	.cong_avoid = (void *)htcp_cong_avoid,
	.pkts_acked = (void *)htcp_pkts_acked,
	.set_state = (void *)htcp_set_state,
	.ssthresh = (void *)htcp_ssthresh,
	.undo_cwnd = (void *)htcp_undo_cwnd,
	.name = "braid_htcp",
};

/* ---- braid_frac: fractional stream ---------------------------------------- */

static __always_inline __u32 frac_cwnd_of(struct sock *sk)
{
	struct braid_sock_settings *s = sock_settings(sk);
	struct braid_defaults *d;

	if (s && s->frac_cwnd)
		return s->frac_cwnd;
	d = defaults();
	if (d && d->frac_cwnd)
		return d->frac_cwnd;
	return DEFAULT_FRAC_CWND;
}

SEC("struct_ops")
void BPF_PROG(frac_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct braid_win w;

	win_load(sk, &w);
	if (!cwnd_limited(sk))
		return;
	braid_frac_on_ack(&w, ca_priv(sk), acked, frac_cwnd_of(sk));
	win_store(sk, &w);
}

SEC("struct_ops")
__u32 BPF_PROG(frac_ssthresh, struct sock *sk)
{
	return told(sk, braid_frac_ssthresh(ca_priv(sk), loss_cwnd(sk)));
}

SEC("struct_ops")
void BPF_PROG(frac_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	win_check(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(frac_undo_cwnd, struct sock *sk)
{
	return reno_undo(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops braid_frac = {
	.cong_avoid = (void *)frac_cong_avoid,
	.ssthresh = (void *)frac_ssthresh,
	.undo_cwnd = (void *)frac_undo_cwnd,
	.pkts_acked = (void *)frac_pkts_acked,
	.name = "braid_frac",
};

/* ---- braid_tcpp: TCP-P ----------------------------------------------------- */

/* A member's private state (icsk_ca_priv holds 104 bytes). */
struct tcpp_priv {
	struct braid_tcpp m;
	struct braid_group_key key; /* group joined, valid while joined */
	__u64 seen_epoch;           /* group reductions applied or signalled here */
	__u32 min_srtt_us;          /* section 2.3: minimum of the smoothed RTT */
	__u32 reported_cwnd;        /* this member's share of the group's cwnd_sum */
	__u32 joined;
};

_Static_assert(sizeof(struct tcpp_priv) <= TOLD_OFFSET, "the told threshold follows the state");
_Static_assert(sizeof(struct braid_htcp) <= TOLD_OFFSET, "the told threshold follows the state");
_Static_assert(sizeof(struct braid_frac) <= TOLD_OFFSET, "the told threshold follows the state");

static __always_inline void tcpp_settings(struct sock *sk, __u64 *group_id, __u32 *k_milli)
{
	struct braid_sock_settings *s = sock_settings(sk);
	struct braid_defaults *d = defaults();

	*group_id = s ? s->group_id : 0;
	*k_milli = DEFAULT_STRENGTH;
	if (s && s->strength_milli)
		*k_milli = s->strength_milli;
	else if (d && d->strength_milli)
		*k_milli = d->strength_milli;
}

/* Section 3.1: the group is the destination address unless the socket names one. */
static __always_inline void tcpp_key(struct sock *sk, __u64 group_id, struct braid_group_key *key)
{
	__builtin_memset(key, 0, sizeof(*key));
	key->netns = sk->__sk_common.skc_net.net->net_cookie;
	if (group_id) {
		key->kind = BRAID_GROUP_USER;
		key->id[0] = (__u32)group_id;
		key->id[1] = (__u32)(group_id >> 32);
	} else if (sk->__sk_common.skc_family == AF_INET6) {
		key->kind = BRAID_GROUP_INET6;
		key->id[0] = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[0];
		key->id[1] = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[1];
		key->id[2] = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[2];
		key->id[3] = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[3];
	} else {
		key->kind = BRAID_GROUP_INET;
		key->id[0] = sk->__sk_common.skc_daddr;
	}
}

static __always_inline int key_eq(const struct braid_group_key *a, const struct braid_group_key *b)
{
	return a->kind == b->kind && a->id[0] == b->id[0] && a->id[1] == b->id[1] &&
	       a->id[2] == b->id[2] && a->id[3] == b->id[3] && a->netns == b->netns;
}

/* Map helpers take keys from the stack only, not from the socket's private area. */
static __always_inline struct braid_group *group_lookup(const struct tcpp_priv *p)
{
	struct braid_group_key key = p->key;

	return bpf_map_lookup_elem(&braid_groups, &key);
}

static __always_inline void tcpp_leave(struct tcpp_priv *p)
{
	struct braid_group_key key = p->key;
	struct braid_group *g;

	if (!p->joined)
		return;
	p->joined = 0;
	g = bpf_map_lookup_elem(&braid_groups, &key);
	if (!g)
		return;
	__sync_fetch_and_add(&g->cwnd_sum, -(__s64)p->reported_cwnd);
	p->reported_cwnd = 0;
	/* The last member out removes the group. */
	if (__sync_fetch_and_sub(&g->members, 1) == 1)
		bpf_map_delete_elem(&braid_groups, &key);
}

static __always_inline void tcpp_join(struct sock *sk, struct tcpp_priv *p, __u64 group_id,
				      __u32 k_milli)
{
	struct braid_group fresh = {}, *g;
	struct braid_group_key key;

	tcpp_key(sk, group_id, &key);
	p->key = key;
	fresh.strength_milli = k_milli;
	/* EEXIST is the common case: another member made the group. */
	bpf_map_update_elem(&braid_groups, &key, &fresh, BPF_NOEXIST);
	g = bpf_map_lookup_elem(&braid_groups, &key);
	if (!g)
		return; /* map full: the socket runs as a group of one */
	__sync_fetch_and_add(&g->members, 1);
	g->strength_milli = k_milli;
	p->seen_epoch = g->epoch;
	p->reported_cwnd = 0;
	p->joined = 1;
}

/* The group this member belongs to now, rejoining if its settings changed. */
static __always_inline struct braid_group *tcpp_group(struct sock *sk, struct tcpp_priv *p,
						      __u32 *k_milli)
{
	struct braid_group_key want;
	__u64 group_id;

	tcpp_settings(sk, &group_id, k_milli);
	tcpp_key(sk, group_id, &want);
	if (!p->joined || !key_eq(&want, &p->key)) {
		tcpp_leave(p);
		tcpp_join(sk, p, group_id, *k_milli);
	}
	if (!p->joined)
		return NULL;
	return group_lookup(p);
}

static __always_inline void tcpp_observe(struct sock *sk, struct tcpp_priv *p,
					 struct braid_group *g)
{
	__u32 srtt = tcp_sk(sk)->srtt_us >> 3, cwnd = tcp_sk(sk)->snd_cwnd;

	if (srtt && (p->min_srtt_us == 0 || srtt < p->min_srtt_us))
		p->min_srtt_us = srtt;
	if (cwnd != p->reported_cwnd) {
		__sync_fetch_and_add(&g->cwnd_sum, (__s64)cwnd - (__s64)p->reported_cwnd);
		p->reported_cwnd = cwnd;
	}
}

/* Apply the reductions other members signalled since this one last looked (Eq. 9). */
static __always_inline void tcpp_catch_up(struct tcpp_priv *p, struct braid_group *g,
					  struct braid_win *w, __u32 k_milli)
{
	__u64 epoch = g->epoch;

	if (epoch == p->seen_epoch)
		return;
	braid_tcpp_apply_reductions(w, &p->m, (__u32)(epoch - p->seen_epoch), epoch, g->members,
				    k_milli);
	p->seen_epoch = epoch;
}

SEC("struct_ops")
void BPF_PROG(tcpp_init, struct sock *sk)
{
	struct tcpp_priv *p = ca_priv(sk);
	__u64 group_id;
	__u32 k_milli;

	tcpp_settings(sk, &group_id, &k_milli);
	tcpp_join(sk, p, group_id, k_milli);
}

SEC("struct_ops")
void BPF_PROG(tcpp_release, struct sock *sk)
{
	tcpp_leave(ca_priv(sk));
}

SEC("struct_ops")
void BPF_PROG(tcpp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcpp_priv *p = ca_priv(sk);
	struct braid_group *g;
	struct braid_win w;
	__u32 k_milli;

	g = tcpp_group(sk, p, &k_milli);
	win_load(sk, &w);
	if (g)
		tcpp_catch_up(p, g, &w, k_milli);
	if (cwnd_limited(sk))
		braid_tcpp_on_ack(&w, &p->m, acked, g ? g->members : 1, k_milli);
	win_store(sk, &w);
	tcp_sk(sk)->snd_ssthresh = w.ssthresh;
	if (g)
		tcpp_observe(sk, p, g);
}

SEC("struct_ops")
__u32 BPF_PROG(tcpp_ssthresh, struct sock *sk)
{
	struct tcpp_priv *p = ca_priv(sk);
	__u64 now = bpf_ktime_get_ns(), since = NO_REDUCTION_YET, last;
	struct braid_group *g;
	struct braid_win w;
	__u32 k_milli, ssthresh;
	int signal = 0;

	g = tcpp_group(sk, p, &k_milli);
	win_load(sk, &w);
	if (!g)
		return told(sk, braid_reno_ssthresh(w.cwnd));
	tcpp_catch_up(p, g, &w, k_milli);
	last = g->last_reduction_ns;
	if (last && now > last)
		since = (now - last) / 1000;
	else if (last)
		since = 0;
	ssthresh = braid_tcpp_on_loss(&p->m, w.cwnd, since, g->epoch,
				      braid_tcpp_guard_us(p->min_srtt_us, tcp_sk(sk)->srtt_us >> 3),
				      &signal);
	if (signal) {
		p->seen_epoch = __sync_fetch_and_add(&g->epoch, 1) + 1;
		g->last_reduction_ns = now;
	} else {
		__sync_fetch_and_add(&g->guarded, 1);
	}
	return told(sk, ssthresh);
}

SEC("struct_ops")
void BPF_PROG(tcpp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	win_check(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(tcpp_undo_cwnd, struct sock *sk)
{
	return reno_undo(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops braid_tcpp = {
	.init = (void *)tcpp_init,
	.release = (void *)tcpp_release,
	.cong_avoid = (void *)tcpp_cong_avoid,
	.ssthresh = (void *)tcpp_ssthresh,
	.undo_cwnd = (void *)tcpp_undo_cwnd,
	.pkts_acked = (void *)tcpp_pkts_acked,
	.name = "braid_tcpp",
};

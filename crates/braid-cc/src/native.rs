//! The controls' arithmetic of bpf/math/, compiled natively (math/native.c):
//! the same integer code the BPF programs run, for the shared test vectors
//! and for simulations on virtual time (braid-sim). A [`Window`] is one
//! connection's state; the caller plays the kernel's part (when an ACK or a
//! loss happens) and the BPF glue's (a TCP-P group's epoch and members).

// The vectors' tests (math/) call the functions Window does not wrap.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) mod ffi {
    #[repr(C)]
    pub struct Sim {
        _opaque: [u8; 0],
    }

    extern "C" {
        pub fn braid_native_abi_version() -> u32;
        pub fn braid_native_frac_scale() -> u32;
        pub fn braid_native_strength_scale() -> u32;
        pub fn braid_native_hstcp_rows() -> u32;
        pub fn braid_native_new(control: i32, cwnd: u32, ssthresh: u32, now_us: u64) -> *mut Sim;
        pub fn braid_native_free(s: *mut Sim);
        pub fn braid_native_cwnd(s: *const Sim) -> u32;
        pub fn braid_native_ssthresh(s: *const Sim) -> u32;
        pub fn braid_native_cnt(s: *const Sim) -> u32;
        pub fn braid_native_htcp_alpha_128(s: *const Sim) -> u32;
        pub fn braid_native_htcp_beta_128(s: *const Sim) -> u32;
        pub fn braid_native_htcp_max_rtt_us(s: *const Sim) -> u32;
        pub fn braid_native_ack(
            s: *mut Sim,
            acked: u32,
            now_us: u64,
            frac_cwnd: u32,
            n: u32,
            k_milli: u32,
        );
        pub fn braid_native_htcp_sample(
            s: *mut Sim,
            now_us: u64,
            rtt_us: u32,
            pkts: u32,
            ca_open: i32,
        );
        pub fn braid_native_loss(
            s: *mut Sim,
            now_us: u64,
            recovery_us: u64,
            since_reduction_us: u64,
            group_epoch: u64,
            min_srtt_us: u32,
            signal: *mut i32,
        ) -> u32;
        pub fn braid_native_tcpp_reduce(
            s: *mut Sim,
            missed: u32,
            group_epoch: u64,
            n: u32,
            k_milli: u32,
        );
        pub fn braid_native_hstcp_a(cwnd: u32) -> u32;
        pub fn braid_native_hstcp_b_256(cwnd: u32) -> u32;
        pub fn braid_native_hstcp_row_cwnd(row: u32) -> u32;
        pub fn braid_native_tcpp_factor_1024(n: u32, k_milli: u32) -> u32;
        pub fn braid_native_tcpp_threshold2(n: u32, cwnd: u32) -> u64;
        pub fn braid_native_window_repair(
            cwnd: u32,
            ssthresh: u32,
            in_flight: u32,
            told: u32,
            out: *mut [u32; 2],
        ) -> i32;
        pub fn braid_native_htcp_alpha_at(
            since_cong_us: u64,
            min_rtt_us: u32,
            beta_128: u32,
        ) -> u32;
    }
}

use ffi::*;

/// Which control's arithmetic a [`Window`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arith {
    Reno,
    Stcp,
    Hstcp,
    Htcp,
    Frac,
    Tcpp,
}

impl Arith {
    fn id(self) -> i32 {
        match self {
            Arith::Reno => 0,
            Arith::Stcp => 1,
            Arith::Hstcp => 2,
            Arith::Htcp => 3,
            Arith::Frac => 4,
            Arith::Tcpp => 5,
        }
    }
}

/// One connection's window, as the control's arithmetic keeps it.
pub struct Window {
    ptr: *mut Sim,
    pub arith: Arith,
}

// SAFETY: the C state is owned by this value alone and has no thread affinity.
unsafe impl Send for Window {}

impl Window {
    /// `ssthresh` u32::MAX: slow start until the first loss.
    pub fn new(arith: Arith, cwnd: u32, ssthresh: u32, now_us: u64) -> Window {
        // SAFETY: plain allocation, checked for NULL.
        let ptr = unsafe { braid_native_new(arith.id(), cwnd, ssthresh, now_us) };
        assert!(!ptr.is_null(), "allocating a native window");
        Window { ptr, arith }
    }

    pub fn cwnd(&self) -> u32 {
        // SAFETY: a live window.
        unsafe { braid_native_cwnd(self.ptr) }
    }

    pub fn ssthresh(&self) -> u32 {
        // SAFETY: a live window.
        unsafe { braid_native_ssthresh(self.ptr) }
    }

    /// `acked` packets acknowledged at `now_us`, while the window limits the
    /// sender (the kernel calls cong_avoid only then). `frac_cwnd` is
    /// braid_frac's setting (1000 for Reno's growth), `n` and `k_milli` a
    /// TCP-P group's members and strength.
    pub fn ack(&mut self, acked: u32, now_us: u64, frac_cwnd: u32, n: u32, k_milli: u32) {
        // SAFETY: a live window.
        unsafe { braid_native_ack(self.ptr, acked, now_us, frac_cwnd, n, k_milli) }
    }

    /// H-TCP's RTT sample (its alpha scales with the RTT).
    pub fn htcp_sample(&mut self, now_us: u64, rtt_us: u32) {
        // SAFETY: a live window.
        unsafe { braid_native_htcp_sample(self.ptr, now_us, rtt_us, 0, 1) }
    }

    /// A loss at `now_us`: the window drops to the new ssthresh, returned
    /// with whether a TCP-P member signals a group reduction (Eq. 9).
    /// `since_reduction_us` is the time since the group's last reduction
    /// (u64::MAX for none), `guard_us` the burst guard's time.
    pub fn loss(
        &mut self,
        now_us: u64,
        since_reduction_us: u64,
        group_epoch: u64,
        guard_us: u32,
    ) -> (u32, bool) {
        let mut signal = 0;
        // SAFETY: a live window; signal is a valid out pointer.
        let ss = unsafe {
            braid_native_loss(
                self.ptr,
                now_us,
                0,
                since_reduction_us,
                group_epoch,
                guard_us,
                &mut signal,
            )
        };
        (ss, signal != 0)
    }

    /// Applies `missed` reductions other members of a TCP-P group signalled.
    pub fn tcpp_reduce(&mut self, missed: u32, group_epoch: u64, n: u32, k_milli: u32) {
        // SAFETY: a live window.
        unsafe { braid_native_tcpp_reduce(self.ptr, missed, group_epoch, n, k_milli) }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: ptr came from braid_native_new and is freed once.
        unsafe { braid_native_free(self.ptr) }
    }
}

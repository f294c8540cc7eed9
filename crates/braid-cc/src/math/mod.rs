//! The congestion-control arithmetic of bpf/math/, compiled natively
//! (native.c) and driven by the shared test vectors in bpf/vectors/cc.json.

use std::path::PathBuf;

use serde_json::Value;

use crate::native::ffi::*;

/// One control's window, owned on the C side.
struct Window {
    ptr: *mut Sim,
}

impl Window {
    fn new(control: &str, cwnd: u32, ssthresh: u32) -> Self {
        let id = match control {
            "reno" => 0,
            "stcp" => 1,
            "hstcp" => 2,
            "htcp" => 3,
            "frac" => 4,
            "tcpp" => 5,
            other => panic!("vectors name an unknown control {other:?}"),
        };
        // SAFETY: plain allocation; checked for NULL below.
        let ptr = unsafe { braid_native_new(id, cwnd, ssthresh, 0) };
        assert!(!ptr.is_null());
        Window { ptr }
    }

    fn get(&self, field: &str) -> u64 {
        // SAFETY: ptr is a live simulation until drop.
        unsafe {
            match field {
                "cwnd" => braid_native_cwnd(self.ptr) as u64,
                "ssthresh" => braid_native_ssthresh(self.ptr) as u64,
                "cnt" => braid_native_cnt(self.ptr) as u64,
                "alpha_128" => braid_native_htcp_alpha_128(self.ptr) as u64,
                "beta_128" => braid_native_htcp_beta_128(self.ptr) as u64,
                "max_rtt_us" => braid_native_htcp_max_rtt_us(self.ptr) as u64,
                other => panic!("vectors expect an unknown field {other:?}"),
            }
        }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: ptr came from braid_native_new and is freed once.
        unsafe { braid_native_free(self.ptr) }
    }
}

fn vectors() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bpf/vectors/cc.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

fn u(v: &Value, key: &str, default: u64) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(default)
}

fn k_milli(v: &Value) -> u32 {
    (v.get("k").and_then(Value::as_f64).unwrap_or(1.0) * 1000.0).round() as u32
}

/// Runs one trace; returns the failures as readable lines.
fn run_trace(t: &Value) -> Vec<String> {
    let name = t["name"].as_str().unwrap_or("?");
    let control = t["control"].as_str().expect("trace without control");
    let start = &t["start"];
    let w = Window::new(
        control,
        u(start, "cwnd", 10) as u32,
        u(start, "ssthresh", u32::MAX as u64) as u32,
    );
    let frac = u(t, "frac_cwnd", 1000) as u32;
    let n = u(t, "n", 1) as u32;
    let k = k_milli(t);
    let mut now = 0u64;
    let mut failures = Vec::new();
    for (i, step) in t["steps"].as_array().expect("steps").iter().enumerate() {
        if let Some(at) = step.get("at_us").and_then(Value::as_u64) {
            now = at;
        }
        if let Some(acked) = step.get("ack").and_then(Value::as_u64) {
            for _ in 0..u(step, "times", 1) {
                // SAFETY: live simulation.
                unsafe { braid_native_ack(w.ptr, acked as u32, now, frac, n, k) };
            }
        }
        if let Some(rtt) = step.get("rtt_us").and_then(Value::as_u64) {
            let open = step.get("open").and_then(Value::as_bool).unwrap_or(true);
            // SAFETY: live simulation.
            unsafe { braid_native_htcp_sample(w.ptr, now, rtt as u32, 0, open as i32) };
        }
        if let Some(r) = step.get("reduce") {
            // SAFETY: live simulation.
            unsafe {
                braid_native_tcpp_reduce(w.ptr, u(r, "missed", 1) as u32, u(r, "epoch", 0), n, k)
            };
        }
        if let Some(l) = step.get("loss") {
            let mut signal = 0;
            // SAFETY: live simulation; signal is a valid out pointer.
            unsafe {
                braid_native_loss(
                    w.ptr,
                    now,
                    u(l, "recovery_us", 0),
                    u(l, "since_us", u64::MAX),
                    u(l, "epoch", 0),
                    u(l, "min_srtt_us", 0) as u32,
                    &mut signal,
                )
            };
            if let Some(want) = step.get("signal").and_then(Value::as_i64) {
                if want != signal as i64 {
                    failures.push(format!(
                        "{name}: step {i}: signal {signal}, expected {want}"
                    ));
                }
            }
        }
        if let Some(exp) = step.get("expect").and_then(Value::as_object) {
            for (field, want) in exp {
                let got = w.get(field);
                if Some(got) != want.as_u64() {
                    failures.push(format!(
                        "{name}: step {i}: {field} = {got}, expected {want}"
                    ));
                }
            }
        }
    }
    failures
}

#[test]
fn every_trace_of_the_vectors_holds() {
    let v = vectors();
    let traces = v["traces"].as_array().expect("traces");
    let controls: std::collections::BTreeSet<_> = traces
        .iter()
        .map(|t| t["control"].as_str().unwrap())
        .collect();
    for c in ["stcp", "hstcp", "htcp", "frac", "tcpp"] {
        assert!(controls.contains(c), "the vectors cover no {c} trace");
    }
    let failures: Vec<String> = traces.iter().flat_map(run_trace).collect();
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn hstcp_table_matches_rfc3649_rows() {
    let v = vectors();
    for row in v["hstcp_rows"]["rows"].as_array().unwrap() {
        let w = row[0].as_u64().unwrap() as u32;
        let a = row[1].as_u64().unwrap() as u32;
        let b = row[2].as_f64().unwrap();
        // SAFETY: pure functions.
        let (got_a, got_b) = unsafe { (braid_native_hstcp_a(w), braid_native_hstcp_b_256(w)) };
        assert_eq!(got_a, a, "a({w})");
        let got_b = got_b as f64 / 256.0;
        assert!(
            (got_b - b).abs() <= 0.01,
            "b({w}) = {got_b}, RFC 3649 says {b}"
        );
    }
    let beyond = &v["hstcp_rows"]["beyond_table"];
    let w = beyond[0].as_u64().unwrap() as u32;
    // SAFETY: pure functions.
    let (a, b) = unsafe { (braid_native_hstcp_a(w), braid_native_hstcp_b_256(w)) };
    assert_eq!(a, beyond[1].as_u64().unwrap() as u32);
    assert!((b as f64 / 256.0 - beyond[2].as_f64().unwrap()).abs() <= 0.01);
}

#[test]
fn hstcp_table_is_monotonic() {
    // SAFETY: pure functions.
    let rows = unsafe { braid_native_hstcp_rows() };
    let mut last_w = 0;
    let mut last_b = u32::MAX;
    for r in 0..rows {
        // SAFETY: pure functions, r in range.
        let (w, b) = unsafe {
            (
                braid_native_hstcp_row_cwnd(r),
                braid_native_hstcp_b_256(braid_native_hstcp_row_cwnd(r)),
            )
        };
        assert!(w > last_w && b <= last_b, "row {r}: w {w} b {b}");
        // SAFETY: pure function.
        assert_eq!(unsafe { braid_native_hstcp_a(w) }, r + 1);
        last_w = w;
        last_b = b;
    }
}

#[test]
fn tcpp_eq9_for_n10_matches_the_paper_and_gives_eq6() {
    let v = vectors();
    let n = v["tcpp_eq9"]["n"].as_u64().unwrap() as u32;
    for row in v["tcpp_eq9"]["rows"].as_array().unwrap() {
        let k = row[0].as_u64().unwrap() as u32;
        let f = row[1].as_f64().unwrap();
        // SAFETY: pure function.
        let got = unsafe { braid_native_tcpp_factor_1024(n, k * 1000) } as f64 / 1024.0;
        assert!(
            (got - f).abs() < 1.0 / 1024.0,
            "Eq. 9 N={n} k={k}: {got} vs {f}"
        );
        // Eq. 6: with equal windows, one member halving and N-1 scaling by Eq. 9
        // leaves the group at (2k-1)/(2k) of its window.
        let total = 0.5 + (n - 1) as f64 * got;
        let eq6 = n as f64 * (2 * k - 1) as f64 / (2 * k) as f64;
        assert!(
            (total - eq6).abs() < 0.01 * n as f64,
            "Eq. 6 N={n} k={k}: {total} vs {eq6}"
        );
    }
}

#[test]
fn tcpp_eq8_thresholds() {
    let v = vectors();
    for row in v["tcpp_eq8"]["rows"].as_array().unwrap() {
        let (n, w, want) = (
            row[0].as_u64().unwrap(),
            row[1].as_u64().unwrap(),
            row[2].as_u64().unwrap(),
        );
        // SAFETY: pure function.
        assert_eq!(
            unsafe { braid_native_tcpp_threshold2(n as u32, w as u32) },
            want,
            "N={n} W={w}"
        );
    }
}

/// (window, threshold, packets lately in flight, threshold last returned)
/// -> the repaired (window, threshold), or None when in bounds.
fn repair(cwnd: u32, ssthresh: u32, in_flight: u32, told: u32) -> Option<(u32, u32)> {
    let mut out = [0u32; 2];
    // SAFETY: pure function; out is a valid [u32; 2].
    let fixed = unsafe { braid_native_window_repair(cwnd, ssthresh, in_flight, told, &mut out) };
    (fixed != 0).then_some((out[0], out[1]))
}

#[test]
fn windows_out_of_bounds_go_back_to_what_was_in_flight_and_told() {
    const MAX: u32 = 1 << 24;
    const INFINITE: u32 = 0x7fff_ffff;
    // In bounds: nothing changes, the largest window and Linux's initial
    // threshold included.
    assert_eq!(repair(41, 41, 40, 20), None);
    assert_eq!(repair(10, INFINITE, 0, 0), None);
    assert_eq!(repair(MAX, MAX, 3, 0), None);
    // The traced case: 15 returned, 0x81104110 stored, the window grown to 332.
    assert_eq!(repair(332, 0x8110_4110, 300, 15), Some((332, 15)));
    // adaptive-held-9e97d88-arrive-7's stream 5: both out, nothing told yet.
    assert_eq!(repair(1_003_443_801, 2_165_326_096, 40, 0), Some((40, 40)));
    // A told threshold out of bounds itself is no guide: the window is.
    assert_eq!(repair(85, 1_014_996_607, 60, MAX + 1), Some((85, 85)));
    // Nothing in flight still leaves two packets; never above the bound.
    assert_eq!(repair(MAX + 1, 5, 0, 0), Some((2, 5)));
    assert_eq!(
        repair(u32::MAX, INFINITE, u32::MAX, 0),
        Some((MAX, INFINITE))
    );
}

#[test]
fn htcp_alpha_rows() {
    let v = vectors();
    for row in v["htcp_alpha"]["rows_since_us_minrtt_us_beta128_alpha128"]
        .as_array()
        .unwrap()
    {
        let r: Vec<u64> = row
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        // SAFETY: pure function.
        let got = unsafe { braid_native_htcp_alpha_at(r[0], r[1] as u32, r[2] as u32) };
        assert_eq!(
            got as u64, r[3],
            "alpha(since {} us, min_rtt {} us, beta {}/128)",
            r[0], r[1], r[2]
        );
    }
}

#[test]
fn frac_growth_ratio_is_frac_over_1000_over_a_long_run() {
    // Over many windows, the ACKs a fractional stream needs per packet of
    // growth are 1000/frac_cwnd times Reno's (Hacker 2004 section V).
    for frac in [100u32, 250, 500] {
        let reno = Window::new("reno", 20, 20);
        let fr = Window::new("frac", 20, 20);
        for _ in 0..200_000 {
            // SAFETY: live simulations.
            unsafe {
                braid_native_ack(reno.ptr, 1, 0, 1000, 1, 1000);
                braid_native_ack(fr.ptr, 1, 0, frac, 1, 1000);
            }
        }
        // In avoidance cwnd^2/2 grows by one per ACK for Reno, by frac/1000 for frac.
        let g = |w: &Window| (w.get("cwnd").pow(2) - 400) as f64;
        let ratio = g(&fr) / g(&reno);
        let want = frac as f64 / 1000.0;
        assert!(
            (ratio - want).abs() / want < 0.05,
            "frac {frac}: ratio {ratio}, want {want}"
        );
    }
}

#[test]
fn shared_constants_agree_with_intf_h() {
    // SAFETY: constant getters.
    unsafe {
        assert_eq!(braid_native_abi_version(), crate::settings::ABI_VERSION);
        assert_eq!(braid_native_frac_scale(), crate::settings::FRAC_SCALE);
        assert_eq!(
            braid_native_strength_scale(),
            crate::settings::STRENGTH_SCALE
        );
    }
}

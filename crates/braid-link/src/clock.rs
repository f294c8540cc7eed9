//! The clocks braid-link reads: monotonic for its schedule, wall-clock for
//! the kernel's stamps on received frames, process CPU time for its cost.

fn read(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out pointer and id a clock every Linux has.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Monotonic nanoseconds: what frames are scheduled against.
pub fn now_ns() -> u64 {
    read(libc::CLOCK_MONOTONIC)
}

/// Wall-clock nanoseconds, the clock af_packet stamps ring slots with.
pub fn realtime_ns() -> u64 {
    read(libc::CLOCK_REALTIME)
}

/// CPU time this process has used, in nanoseconds.
pub fn cpu_time_ns() -> u64 {
    read(libc::CLOCK_PROCESS_CPUTIME_ID)
}

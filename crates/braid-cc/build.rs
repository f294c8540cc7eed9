//! Builds the BPF object and its Rust skeleton, and the native copy of the
//! congestion-control arithmetic that the tests drive with test vectors.

use std::env;
use std::path::PathBuf;
use std::process::Command;

use libbpf_cargo::SkeletonBuilder;

const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

fn main() {
    let manifest =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let bpf_dir = manifest
        .join("../../bpf")
        .canonicalize()
        .expect("bpf/ beside crates/");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));

    // vmlinux.h comes from the running kernel's BTF, so the object's CO-RE
    // relocations are checked against the kernel it will be loaded into.
    let vmlinux = out.join("vmlinux.h");
    let dump = Command::new("bpftool")
        .args(["btf", "dump", "file", VMLINUX_BTF, "format", "c"])
        .output()
        .unwrap_or_else(|e| panic!("running bpftool (install it with scripts/setup.sh): {e}"));
    assert!(
        dump.status.success(),
        "bpftool btf dump {VMLINUX_BTF} failed: {}",
        String::from_utf8_lossy(&dump.stderr)
    );
    std::fs::write(&vmlinux, &dump.stdout).expect("writing vmlinux.h into OUT_DIR");

    let src = bpf_dir.join("braid_cc.bpf.c");
    SkeletonBuilder::new()
        .source(&src)
        .clang_args([
            "-I".into(),
            out.clone().into_os_string(),
            "-I".into(),
            bpf_dir.clone().into_os_string(),
            // atomic fetch-and-add with a result (group membership) needs v3
            "-mcpu=v3".into(),
            "-Wall".into(),
        ])
        .build_and_generate(out.join("braid_cc.skel.rs"))
        .expect("compiling bpf/braid_cc.bpf.c");

    cc::Build::new()
        .file(manifest.join("src/math/native.c"))
        .include(&bpf_dir)
        .warnings(true)
        .extra_warnings(true)
        .compile("braid_cc_math");

    println!("cargo:rerun-if-changed={}", bpf_dir.display());
    println!("cargo:rerun-if-changed=src/math/native.c");
}

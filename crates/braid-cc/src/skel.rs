//! The skeleton libbpf-cargo generates from bpf/braid_cc.bpf.c at build time.
#![allow(
    clippy::all,
    missing_docs,
    dead_code,
    unused_imports,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    unsafe_op_in_unsafe_fn
)]

include!(concat!(env!("OUT_DIR"), "/braid_cc.skel.rs"));

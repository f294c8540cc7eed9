//! Any bytes into the frame decoder: it must never panic, and whatever it
//! accepts must encode back to exactly the bytes it consumed.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((m, used))) = braid_wire::decode(data) {
        let mut again = Vec::new();
        braid_wire::encode(&m, &mut again);
        assert_eq!(&again[..], &data[..used], "{m:?} re-encodes differently");
    }
});

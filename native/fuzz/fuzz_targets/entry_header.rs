#![no_main]
//! Entry headers of any bytes at any offset: a value or an error, never a panic.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let offset = u64::from_le_bytes(data[..8].try_into().unwrap());
    let _ = _native::pack::entry_header::parse_header(&data[8..], offset);
});

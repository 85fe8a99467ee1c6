#![no_main]
//! A delta of any bytes applied to a base of any bytes: a result of the declared size, or an
//! error; never a panic and never an allocation bigger than the limit.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let split = (data[0] as usize * data.len() / 256).min(data.len() - 1).max(1);
    let (base, delta) = data[1..].split_at(split - 1);
    if let Ok(out) = _native::pack::delta::apply_delta(base, delta, 12, 1 << 24) {
        let (_, declared, _) = _native::pack::delta::delta_sizes(delta, 12).unwrap();
        assert_eq!(out.len() as u64, declared);
    }
});

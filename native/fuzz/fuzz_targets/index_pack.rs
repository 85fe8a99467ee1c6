#![no_main]
//! Both passes of the indexer over any bytes as a pack file (a valid header is prepended half
//! the time, so the fuzzer gets past the signature): an index or an error, never a panic.
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use _native::progress::Progress;
use _native::index::resolve::{resolve, Forest, ResolveOptions};
use _native::index::first_pass::{scan, ScanOptions};
use _native::pack::source::PackFile;
use libfuzzer_sys::fuzz_target;

static RUN: AtomicU64 = AtomicU64::new(0);
/// One pool for the whole run: threads started and stopped per input read as leaks.
static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    // A file in memory where there is /dev/shm: the target reads a path, as index-pack does.
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
    let path = dir.join(format!("packorder-fuzz-{}-{}.pack", std::process::id(), RUN.fetch_add(1, Ordering::Relaxed)));
    {
        let mut f = std::fs::File::create(&path).unwrap();
        if data.first().is_some_and(|b| b & 1 == 1) {
            let count = data.get(1).copied().unwrap_or(1) as u32 % 16;
            f.write_all(b"PACK\0\0\0\x02").unwrap();
            f.write_all(&count.to_be_bytes()).unwrap();
            f.write_all(&data[1..]).unwrap();
        } else {
            f.write_all(data).unwrap();
        }
    }
    let pack = PackFile::open(&path, false).unwrap();
    let progress = Progress::default();
    let opts = ScanOptions { threads: 2, detect_collisions: true, split_min_bytes: 0, whole_limit: 1 << 20 };
    if let Ok(mut r) = scan(&pack, &opts, &progress) {
        if let Ok(mut forest) = Forest::new(&mut r.table) {
            let pool = POOL.get_or_init(|| rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap());
            let ropts = ResolveOptions {
                trace: false,
                budget: 1 << 16,
                object_limit: 1 << 24,
                big_threshold: 1 << 20,
                detect_collisions: true,
            };
            let roots: Vec<u32> =
                (0..r.table.len()).filter(|&i| !_native::pack::entry_header::is_delta(r.table.entries.kinds[i])).map(|i| i as u32).collect();
            let _ = resolve(&pack, &mut r.table, &mut forest, &roots, &ropts, &progress, pool, &mut Vec::new());
        }
    }
    let _ = std::fs::remove_file(&path);
});

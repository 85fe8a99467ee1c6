//! Writing a pack from a plan: entries reused byte for byte from existing packs (their CRC
//! checked against the source index first, so corruption is never copied), deltas reused
//! with a new header, and objects compressed anew (from a source pack's delta chain, a loose
//! object, or a delta computed for this pack).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use crate::error::{PackError, Result};
use crate::pack::entries::PackEntries;
use crate::pack::entry_header::{
    encode_ofs, encode_type_size, HashAlgo, ObjectId, OBJ_OFS_DELTA, OBJ_REF_DELTA,
};
use crate::pack::hash::FileChecksum;
use crate::pack::object_read::{Reader, Store};
use crate::progress::Progress;

mod copy;
use copy::{copy_entry, copy_read_entry, Batch};

/// How one output entry is produced.
pub const COPY_WHOLE: u8 = 0;
pub const COPY_DELTA: u8 = 1;
pub const FROM_PACK: u8 = 2;
pub const FROM_LOOSE: u8 = 3;
pub const NEW_DELTA: u8 = 4;

/// The plan, one element per output entry, in write order.
pub struct Plan {
    pub how: Vec<u8>,
    /// Source pack index (COPY_*, FROM_PACK), loose path index (FROM_LOOSE), new-delta index
    /// (NEW_DELTA).
    pub src: Vec<u32>,
    /// Pack position in the source (COPY_*, FROM_PACK).
    pub pos: Vec<u64>,
    /// Output index of the delta base (COPY_DELTA, NEW_DELTA), else -1.
    pub base: Vec<i64>,
    /// Object type (1-4) of the object the entry stands for.
    pub kinds: Vec<u8>,
    pub oids: Vec<ObjectId>,
    /// The hash of the ids, and of the pack's trailer.
    pub algo: HashAlgo,
    pub loose: Vec<PathBuf>,
    /// Delta data computed for this pack (NEW_DELTA), each applying to the entry's base.
    pub new_deltas: Vec<Vec<u8>>,
    pub ref_delta: bool,
    pub level: u32,
    pub object_limit: u64,
}

pub struct Written {
    pub offsets: Vec<u64>,
    pub crcs: Vec<u32>,
    pub checksum: ObjectId,
    pub size: u64,
}

/// The output stream. Bytes are gathered in chunks that a second thread hashes and writes
/// (the pack's SHA-1 was a quarter of the copying thread's time), so reading sources and
/// computing CRCs overlap with hashing and writing.
struct Out<'scope> {
    chunk: Vec<u8>,
    at: u64,
    to_disk: Option<mpsc::SyncSender<Vec<u8>>>,
    spare: mpsc::Receiver<Vec<u8>>,
    disk: Option<DiskSide<'scope>>,
}

type DiskSide<'scope> = std::thread::ScopedJoinHandle<'scope, Result<(File, FileChecksum)>>;

const CHUNK: usize = 1 << 20;

impl Out<'_> {
    fn put(&mut self, data: &[u8], crc: &mut crc32fast::Hasher) -> Result<()> {
        crc.update(data);
        self.at += data.len() as u64;
        let mut rest = data;
        while !rest.is_empty() {
            let take = rest.len().min(CHUNK - self.chunk.len());
            self.chunk.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.chunk.len() == CHUNK {
                self.send()?;
            }
        }
        Ok(())
    }

    fn send(&mut self) -> Result<()> {
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        let full = std::mem::replace(&mut self.chunk, next);
        match self.to_disk.as_ref().map(|tx| tx.send(full)) {
            Some(Ok(())) => Ok(()),
            // The disk side stopped: its error is the one to report.
            _ => Err(self
                .stop()
                .err()
                .unwrap_or_else(|| PackError::general("the pack's writer stopped"))),
        }
    }

    /// Close the stream and wait for the disk side: the file and its checksum.
    fn stop(&mut self) -> Result<(File, FileChecksum)> {
        self.to_disk = None;
        let disk = self
            .disk
            .take()
            .ok_or_else(|| PackError::general("the pack's writer stopped"))?;
        disk.join()
            .map_err(|_| PackError::general("the pack's writer panicked"))?
    }

    /// Send what is left; the file and its checksum once all of it is written.
    fn finish(mut self) -> Result<(File, FileChecksum)> {
        if !self.chunk.is_empty() {
            self.send()?;
        }
        self.stop()
    }
}

/// The disk side of Out: hash and write each chunk, hand the buffer back for reuse.
fn hash_and_write(
    path: &Path,
    mut file: File,
    mut sum: FileChecksum,
    chunks: mpsc::Receiver<Vec<u8>>,
    spare: mpsc::Sender<Vec<u8>>,
) -> Result<(File, FileChecksum)> {
    for mut chunk in chunks {
        sum.update(&chunk);
        file.write_all(&chunk).map_err(|e| {
            PackError::io(&format!("cannot write the new pack {}", path.display()), e)
        })?;
        chunk.clear();
        let _ = spare.send(chunk);
    }
    Ok((file, sum))
}

/// An entry packorder produces (an object rebuilt from its source's chain, a loose object,
/// a new delta): its type for the header, its data size, and its data compressed. None of it
/// depends on where the entry lands, so producer threads make these ahead of the writer.
struct Produced {
    kind: u8,
    size: u64,
    compressed: Vec<u8>,
}

/// Entries produced by one thread in a row (consecutive entries are often one family, whose
/// bases the thread's reader then has in its cache).
const PRODUCE_BLOCK: usize = 32;
/// Produced entries a thread may have ready before the writer takes them.
const PRODUCE_AHEAD: usize = 4 * PRODUCE_BLOCK;
/// Each producer's cache of rebuilt delta bases.
const PRODUCE_CACHE: u64 = 64 << 20;

fn produce(i: usize, plan: &Plan, reader: &mut Reader<'_>) -> Result<Produced> {
    let (kind, size, compressed) = match plan.how[i] {
        FROM_PACK => {
            let data = reader.read_entry(plan.src[i], plan.pos[i] as usize)?;
            (
                plan.kinds[i],
                data.len() as u64,
                deflate(&data, plan.level)?,
            )
        }
        FROM_LOOSE => {
            let (kind, data) = crate::pack::loose::read_loose(
                &plan.loose[plan.src[i] as usize],
                plan.object_limit,
            )?;
            (kind, data.len() as u64, deflate(&data, plan.level)?)
        }
        _ => {
            let delta = &plan.new_deltas[plan.src[i] as usize];
            (
                OBJ_OFS_DELTA,
                delta.len() as u64,
                deflate(delta, plan.level)?,
            )
        }
    };
    Ok(Produced {
        kind,
        size,
        compressed,
    })
}

fn is_produced(how: u8) -> bool {
    matches!(how, FROM_PACK | FROM_LOOSE | NEW_DELTA)
}

/// Producer `t` of `threads`: the produced entries of blocks t, t + threads, ... in order,
/// into `out` (stops when the writer stops taking them).
fn produce_blocks(
    t: usize,
    threads: usize,
    produced: &[usize],
    store: &Store,
    plan: &Plan,
    progress: &Progress,
    out: mpsc::SyncSender<Result<Produced>>,
) {
    let mut reader = Reader::new(store, PRODUCE_CACHE);
    for block in produced.chunks(PRODUCE_BLOCK).skip(t).step_by(threads) {
        for &i in block {
            let item = progress
                .check_cancelled()
                .and_then(|()| produce(i, plan, &mut reader));
            let failed = item.is_err();
            if out.send(item).is_err() || failed {
                return;
            }
        }
    }
}

fn deflate(data: &[u8], level: u32) -> Result<Vec<u8>> {
    let mut z = flate2::write::ZlibEncoder::new(
        Vec::with_capacity(data.len() / 2 + 64),
        flate2::Compression::new(level),
    );
    z.write_all(data)
        .map_err(|e| PackError::io("cannot compress", e))?;
    z.finish().map_err(|e| PackError::io("cannot compress", e))
}

/// Write the pack of `plan`, whose sources are `store`'s packs, to `path`; the entries it
/// produces are compressed by `threads` threads ahead of the writer.
pub fn write_pack(
    path: &Path,
    store: &Store,
    plan: &Plan,
    threads: usize,
    progress: &Progress,
) -> Result<Written> {
    let n = plan.how.len();
    let count =
        u32::try_from(n).map_err(|_| PackError::general("too many objects for one pack"))?;
    let file = File::create(path)
        .map_err(|e| PackError::io(&format!("cannot create {}", path.display()), e))?;
    let produced: Vec<usize> = (0..n).filter(|&i| is_produced(plan.how[i])).collect();
    let threads = threads.clamp(1, produced.len().div_ceil(PRODUCE_BLOCK).max(1));
    std::thread::scope(|scope| {
        let (to_disk, chunks) = mpsc::sync_channel(4);
        let (give_back, spare) = mpsc::channel();
        let checksum = FileChecksum::new(plan.algo);
        let disk = scope.spawn(move || hash_and_write(path, file, checksum, chunks, give_back));
        let mut ready = Vec::with_capacity(threads);
        for t in 0..threads {
            let (tx, rx) = mpsc::sync_channel(PRODUCE_AHEAD);
            let produced = &produced;
            scope.spawn(move || produce_blocks(t, threads, produced, store, plan, progress, tx));
            ready.push(rx);
        }
        let out = Out {
            chunk: Vec::with_capacity(CHUNK),
            at: 0,
            to_disk: Some(to_disk),
            spare,
            disk: Some(disk),
        };
        // Dropping `ready` (when the writer returns, on success or error) stops the producers.
        write_entries(path, out, &store.packs, plan, progress, count, ready)
    })
}

fn write_entries(
    path: &Path,
    mut out: Out<'_>,
    sources: &[PackEntries],
    plan: &Plan,
    progress: &Progress,
    count: u32,
    ready: Vec<mpsc::Receiver<Result<Produced>>>,
) -> Result<Written> {
    let n = plan.how.len();
    let mut head = Vec::with_capacity(12);
    head.extend_from_slice(b"PACK");
    head.extend_from_slice(&2u32.to_be_bytes());
    head.extend_from_slice(&count.to_be_bytes());
    out.put(&head, &mut crc32fast::Hasher::new())?;
    let mut offsets = Vec::with_capacity(n);
    let mut crcs = Vec::with_capacity(n);
    let mut taken = 0usize; // produced entries taken so far
    let mut take = || -> Result<Produced> {
        let rx = &ready[(taken / PRODUCE_BLOCK) % ready.len()];
        taken += 1;
        rx.recv()
            .unwrap_or_else(|_| Err(PackError::general("an entry's producer stopped")))
    };
    let mut header = Vec::with_capacity(32);
    let mut copy_buf = Vec::new();
    let mut batch = Batch::default();
    for i in 0..n {
        if i % 1024 == 0 {
            progress.check_cancelled()?;
        }
        let offset = out.at;
        offsets.push(offset);
        let mut crc = crc32fast::Hasher::new();
        let how = plan.how[i];
        header.clear();
        let delta_header = |header: &mut Vec<u8>, size: u64| -> Result<()> {
            let b = plan.base[i];
            if b < 0 || b as usize >= i {
                return Err(PackError::general(format!(
                    "plan error: entry {i} has its base after it"
                )));
            }
            if plan.ref_delta {
                encode_type_size(OBJ_REF_DELTA, size, header);
                header.extend_from_slice(&plan.oids[b as usize]);
            } else {
                encode_type_size(OBJ_OFS_DELTA, size, header);
                encode_ofs(offset - offsets[b as usize], header);
            }
            Ok(())
        };
        match how {
            COPY_WHOLE | COPY_DELTA => {
                let src = &sources[plan.src[i] as usize];
                let pos = plan.pos[i] as usize;
                let is_delta = how == COPY_DELTA;
                if is_delta {
                    delta_header(&mut header, src.entries.sizes[pos])?;
                    out.put(&header, &mut crc)?;
                }
                if i >= batch.end {
                    batch.fill(i, sources, plan)?;
                }
                match batch.get(i) {
                    Some(raw) => copy_read_entry(src, pos, raw, is_delta, &mut out, &mut crc)?,
                    None => copy_entry(src, pos, is_delta, &mut out, &mut crc, &mut copy_buf)?,
                }
            }
            FROM_PACK | FROM_LOOSE => {
                let made = take()?;
                if made.kind != plan.kinds[i] {
                    return Err(PackError::general(format!(
                        "object {} changed type",
                        crate::pack::hash::hex(&plan.oids[i])
                    )));
                }
                encode_type_size(made.kind, made.size, &mut header);
                out.put(&header, &mut crc)?;
                out.put(&made.compressed, &mut crc)?;
            }
            NEW_DELTA => {
                let made = take()?;
                delta_header(&mut header, made.size)?;
                out.put(&header, &mut crc)?;
                out.put(&made.compressed, &mut crc)?;
            }
            _ => {
                return Err(PackError::general(format!(
                    "plan error: unknown entry kind {how}"
                )))
            }
        }
        crcs.push(crc.finalize());
        progress.add(1);
    }
    let size = out.at + plan.algo.rawsz() as u64;
    let (mut file, sum) = out.finish()?;
    let checksum = sum.finish();
    file.write_all(&checksum)
        .map_err(|e| PackError::io(&format!("cannot write the new pack {}", path.display()), e))?;
    file.sync_all()
        .map_err(|e| PackError::io(&format!("cannot sync the new pack {}", path.display()), e))?;
    Ok(Written {
        offsets,
        crcs,
        checksum,
        size,
    })
}

//! The Python face of the bitmap writer: one call, run without the GIL.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::bitmap::file::{self, BitmapError, Input};
use crate::bitmap::graph::Graph;
use crate::bitmap::reach::{read_graph, Objects};
use crate::pack::entries::PackEntries;
use crate::pack::header_reader::read_entries;
use crate::pack::object_read::Store;
use crate::pack::source::PackFile;
use crate::python::arrays::ids_column;
use crate::python::arrays::{i64s, u32s, u64s};
use crate::python::limits::Limits;
use crate::python::walk::WalkEdges;
use crate::{to_py_err, PackFormatError};

/// What pack_bitmap made: the bitmap, or why the pack cannot have one of its own; and the
/// graph it was made from.
#[pyclass(get_all, frozen, module = "packorder._native")]
pub struct BitmapOutcome {
    /// The `.bitmap` file's bytes; None when the pack cannot have a bitmap of its own.
    data: Option<Py<PyBytes>>,
    bitmaps: usize,
    /// How many of the bitmaps are stored XORed with an earlier one.
    xored: usize,
    /// Why there is no bitmap: the pack names an object it does not hold.
    why: Option<String>,
    /// Edge targets the graph kept in memory (shared within a delta family).
    edges_stored: usize,
    /// Edges the trees and commits name.
    edges_named: usize,
    /// Whether the graph is the one the walk recorded (else it was read from the pack).
    graph_from_walk: bool,
}

/// What a bitmap's outcome says of its graph.
struct Edges {
    stored: usize,
    named: usize,
    from_walk: bool,
}

fn edges_of(graph: &Graph, from_walk: bool) -> Edges {
    let (stored, named) = graph.sizes();
    Edges {
        stored,
        named,
        from_walk,
    }
}

/// The `.bitmap` of a pack just written and verified, from its entries in pack order (start
/// offsets, where they end, base positions or -1, real types, ids, path-name hashes) and the pack
/// positions of the commits to give a bitmap; `hash_cache` writes the path-name hashes.
/// `edges`, the graph the walk recorded, spares reading the pack's commits and trees again
/// (they are read when it lacks one a bitmap needs, or is None). It is not optional: a caller
/// that left it out would pay for that reading without a sign.
#[pyfunction]
#[pyo3(signature = (pack_path, offsets, data_end, bases, kinds, oids, name_hashes, selected, checksum, hash_cache, limits, edges))]
#[allow(clippy::too_many_arguments)]
pub fn pack_bitmap<'py>(
    py: Python<'py>,
    pack_path: PathBuf,
    offsets: &[u8],
    data_end: u64,
    bases: &[u8],
    kinds: &[u8],
    oids: &[u8],
    name_hashes: &[u8],
    selected: &[u8],
    checksum: &[u8],
    hash_cache: bool,
    limits: Limits,
    edges: Option<Bound<'py, WalkEdges>>,
) -> PyResult<BitmapOutcome> {
    let walk_graph = edges.and_then(|e| e.get().take());
    let (offsets, bases) = (u64s(offsets), i64s(bases));
    let (name_hashes, selected) = (u32s(name_hashes), u32s(selected));
    // The pack's checksum names the hash of everything else.
    let checksum = crate::pack::entry_header::ObjectId::try_from(checksum)
        .map_err(|_| pyo3::exceptions::PyValueError::new_err("pack_bitmap: not a pack checksum"))?;
    let algo = checksum.algo();
    let oids = ids_column(algo, oids, "pack_bitmap")?;
    let n = kinds.len();
    if [offsets.len(), bases.len(), oids.len(), name_hashes.len()]
        .iter()
        .any(|&l| l != n)
        || bases.iter().any(|&b| b >= n as i64)
        || selected
            .iter()
            .any(|&s| s as usize >= n || kinds[s as usize] != crate::pack::entry_header::OBJ_COMMIT)
    {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "pack_bitmap: columns differ in length, or a base or selected commit out of range",
        ));
    }
    let pack = PackFile::open(&pack_path, false, algo).map_err(to_py_err)?;
    let outcome = py.detach(|| -> crate::error::Result<_> {
        let order = crate::pack::sorted_ids::sort_order(&oids);
        let mut index_pos = vec![0u32; n];
        for (k, &i) in order.iter().enumerate() {
            index_pos[i as usize] = k as u32;
        }
        let write = |graph: &Graph| {
            file::write(&Input {
                kinds,
                graph,
                selected: &selected,
                index_pos: &index_pos,
                name_hashes: &name_hashes,
                hash_cache,
                pack_checksum: &checksum,
            })
        };
        if let Some(walked) = walk_graph {
            let graph = walked.into_graph(&oids);
            match write(&graph) {
                Err(BitmapError::Unrecorded(_)) => {}
                written => return Ok((edges_of(&graph, true), written)),
            }
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(limits.threads.max(1))
            .build()
            .map_err(|e| crate::error::PackError::at(0, e.to_string()))?;
        let sorted_ids: Vec<_> = order.iter().map(|&i| oids[i as usize]).collect();
        // The reader rebuilds objects from the entries as stored: their headers, read here.
        let mut entries = read_entries(&pack, offsets, data_end)?;
        entries.bases = bases;
        let store = Store::new(
            vec![PackEntries {
                pack,
                path: pack_path.clone(),
                entries,
            }],
            Vec::new(),
            limits.object_limit,
        )?;
        let objects = Objects {
            algo,
            entries: &store.packs[0].entries,
            kinds,
            sorted_ids: &sorted_ids,
            sorted_pos: &order,
            index_pos: &index_pos,
        };
        let graph = read_graph(&store, &objects, &pool)?;
        drop(store);
        drop(sorted_ids);
        Ok((edges_of(&graph, false), write(&graph)))
    });
    match outcome {
        Ok((edges, Ok((bytes, stats)))) => Ok(BitmapOutcome {
            data: Some(PyBytes::new(py, &bytes).unbind()),
            bitmaps: stats.bitmaps,
            xored: stats.xored,
            why: None,
            edges_stored: edges.stored,
            edges_named: edges.named,
            graph_from_walk: edges.from_walk,
        }),
        Ok((_, Err(BitmapError::Unrecorded(at)))) => Err(PackFormatError::new_err((
            format!("the graph read from the pack lacks the object at position {at}"),
            py.None(),
        ))),
        Ok((_, Err(BitmapError::Corrupt(message)))) => {
            Err(PackFormatError::new_err((message, py.None())))
        }
        Ok((edges, Err(BitmapError::Outside(from, missing)))) => Ok(BitmapOutcome {
            data: None,
            bitmaps: 0,
            xored: 0,
            why: Some(format!(
                "{} names {}, which is not in the pack",
                crate::pack::hash::hex(&oids[from as usize]),
                crate::pack::hash::hex(&missing)
            )),
            edges_stored: edges.stored,
            edges_named: edges.named,
            graph_from_walk: edges.from_walk,
        }),
        Err(e) => Err(to_py_err(e)),
    }
}

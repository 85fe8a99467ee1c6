//! The reachability bitmap of a new pack: its commit and tree graph, the bitmaps, EWAH.

pub mod ewah;
pub mod file;
pub mod graph;
pub mod reach;

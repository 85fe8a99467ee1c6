//! Writing packs: the writer (entries copied or produced from a plan), delta creation and
//! the window search, and the proof of produced entries.

pub mod delta_create;
pub mod delta_search;
pub mod object_check;
pub mod pack_writer;

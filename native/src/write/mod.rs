//! Writing packs: the writer (entries copied or produced from a plan), delta creation and
//! the window search, the proof of produced entries, and the enumeration helpers repack needs
//! (rev-list output, delta families for the orders).

pub mod delta_create;
pub mod delta_search;
pub mod families;
pub mod object_check;
pub mod pack_writer;
pub mod revlist;

//! The Python face of the native core, one module per part; lib.rs registers them.

pub(crate) mod arrays;
pub(crate) mod bitmap;
pub(crate) mod delta;
pub(crate) mod format;
pub(crate) mod fsck;
pub(crate) mod index;
pub(crate) mod limits;
pub(crate) mod loose;
pub(crate) mod object_check;
pub(crate) mod orders;
pub(crate) mod pack_writer;
pub(crate) mod revlist;
pub(crate) mod seek;
pub(crate) mod sorted_ids;
pub(crate) mod stream;
pub(crate) mod walk;

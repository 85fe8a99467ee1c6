//! The Python face of the native core, one module per part; lib.rs registers them.

pub(crate) mod arrays;
pub(crate) mod bitmap;
pub(crate) mod delta;
pub(crate) mod format;
pub(crate) mod fsck;
pub(crate) mod index;
pub(crate) mod orders;
pub(crate) mod seek;
pub(crate) mod stream;
pub(crate) mod walk;
pub(crate) mod write;

//! The pack format and reading objects: entry headers, the entries of a pack in pack order,
//! positioned reads, inflate, deltas and the one delta-chain decoder, object ids, loose
//! objects, and whole objects read through a cache.

pub mod delta;
pub mod delta_chain;
pub mod entries;
pub mod entry_header;
pub mod hash;
pub mod header_reader;
pub mod inflate;
pub mod loose;
pub mod lru;
pub mod object_id;
pub mod object_read;
pub mod sorted_ids;
pub mod source;

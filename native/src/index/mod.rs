//! The indexer: pass 1 (scan every entry), the entry table, pass 2 (resolve every delta in
//! parallel, with the bases it keeps), and completing a thin pack.

pub mod resolve;
pub(crate) mod retain;
pub mod scan;
pub(crate) mod scanner;
pub mod table;
pub mod thin;

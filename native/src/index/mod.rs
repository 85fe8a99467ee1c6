//! The indexer: pass 1 (scan every entry), the entry table, pass 2 (resolve every delta in
//! parallel, with the bases it keeps), completing a thin pack, and Git's object checks.

pub mod checks;
pub mod reread;
pub mod resolve;
pub(crate) mod retain;
pub mod scan;
pub(crate) mod scanner;
pub mod stream;
pub mod table;
pub mod thin;

//! packorder's own object walk, in place of `git rev-list --objects`: a repository's objects
//! read by id (odb.rs, through each pack's index: pack_index.rs), the parts of commits, trees
//! and tags a walk follows (objects.rs), what an index adds (index_file.rs), the walk in
//! Git's order (traverse.rs: the commits' in commit_order.rs, each object's walker.rs), one tree as it reads it (tree.rs),
//! the tree entries it may pass unread (copied.rs, same_path.rs), the walk on every core
//! (parallel.rs), the sets it asks (id_set.rs) and the hashes of each object's path it records
//! (path_names.rs); and the same result read from `git rev-list --objects` output, where
//! Git walks instead (revlist.rs).

pub mod commit_order;
pub mod copied;
pub mod edges;
pub mod id_set;
pub mod index_file;
pub mod numbers;
pub mod objects;
pub mod odb;
pub mod pack_index;
pub mod parallel;
pub mod path_names;
pub mod revlist;
pub mod same_path;
pub mod traverse;
pub mod tree;
pub mod walker;

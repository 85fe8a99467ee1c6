//! The hot loops of seekstats: the pack access log, the near-read statistic, and the model
//! of index-pack's second pass.

pub mod access_log;
pub mod nearness;
pub mod second_pass;

//! The hot loops of seekstats: the pack access log and the near-read statistic.

pub mod access_log;
pub mod nearness;

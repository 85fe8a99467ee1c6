//! The loops of the write orders that Python cannot run fast: traversals over delta forests
//! given as arrays (the orders' policy stays in packorder/orders/).

pub mod families;

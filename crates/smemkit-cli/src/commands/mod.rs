//! One module per subcommand: each turns its parsed arguments into library calls and output.

pub mod digitize;
pub mod hist;
pub mod histdd;
pub mod lab;
pub mod matmul;
pub mod ops;
pub mod plan;
pub mod warmup;

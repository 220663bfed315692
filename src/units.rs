//! Units and tolerances every module shares.
//!
//! GPU sharing is counted in thousandths of one GPU ("milli"), as the instance format's
//! `gpu_milli` field is; objective values and GPU-equivalent counts are `f64`, compared with
//! one tolerance.

/// Thousandths of one GPU in a whole GPU: a whole GPU is `gpu_milli: 1000`.
pub const MILLI_PER_GPU: u32 = 1000;

/// Two objective values, GPU counts or shares within this of each other are equal: an
/// improvement must exceed it, and a limit is kept when a value exceeds it by no more.
pub const TOLERANCE: f64 = 1e-9;

/// A GPU demand in thousandths, in GPU units (`gpu_milli / 1000`).
pub fn gpu_units(milli: u32) -> f64 {
    milli as f64 / MILLI_PER_GPU as f64
}

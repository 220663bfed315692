//! Adapters between gangplan and the systems around it.

pub mod nvml;

//! Adapters between gangplan and the systems around it: cluster engines (read their state
//! into an instance, apply a plan back) and the GPUs of a node (NVML discovery).

pub mod nvml;
pub mod slurm;

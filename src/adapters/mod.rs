//! Adapters to real cluster engines: read their state into an instance, apply a plan back.

pub mod slurm;

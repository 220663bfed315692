//! Documented bounds on instance size and values (docs/reliability.md lists them).

/// Nodes per instance.
pub const MAX_NODES: usize = 100_000;
/// GPUs per node.
pub const MAX_GPUS_PER_NODE: u64 = 1024;
/// Running plus pending jobs per instance.
pub const MAX_JOBS: usize = 1_000_000;
/// GPUs one pending job may ask for.
pub const MAX_JOB_GPUS: u64 = 1_000_000;
/// Tenants per instance.
pub const MAX_TENANTS: usize = 100_000;
/// Absolute value of a priority.
pub const MAX_PRIORITY: i64 = 1_000_000_000_000;
/// CPU milli or memory MiB of a node or job.
pub const MAX_RESOURCE: u64 = 1_000_000_000_000;
/// Length of a name or id.
pub const MAX_NAME_LEN: usize = 256;
/// Task types in `policy.task_distribution`.
pub const MAX_TASK_TYPES: usize = 10_000;
/// Largest fair-share weight of a tenant.
pub const MAX_TENANT_WEIGHT: f64 = 1e6;
/// Largest checkpoint cost of a running job, GPU-seconds.
pub const MAX_CHECKPOINT_COST: f64 = 1e15;
/// Longest wait of a pending job, seconds.
pub const MAX_WAIT_S: f64 = 1e10;
/// Largest share of a task type (shares are normalised to sum to 1).
pub const MAX_TASK_SHARE: f64 = 1e12;
/// Longest `ends_in` of a running job and `time_limit` of a pending job, seconds.
pub const MAX_TIME_S: f64 = 1e10;

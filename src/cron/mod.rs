//! The planning cron: one round at a time under a lock, with a state dir that remembers the
//! last round (for stable placements and for jobs released but not started yet), a journal of
//! every change made to the cluster, a Prometheus metrics file, and optional Kubernetes
//! Binding output. The engine-specific part (reading state, applying) lives in
//! [`crate::adapters`]; this module is what every engine shares. See docs/slurm.md.
//!
//! State dir layout ([`StateDir`]):
//!
//! | file | what |
//! |---|---|
//! | `lock` | held (flock) for the whole round; a second round exits with code 5 |
//! | `memory.json` | last round's placements and the jobs released but not started |
//! | `last-plan.json` | the last round's plan (SPEC plan format) |
//! | `metrics.prom` | the last round's metrics, Prometheus text format |
//! | `journal.jsonl` | one JSON line per change made to the cluster, with its outcome |
//! | `admission` | Slurm only: the room a new one-node job may take at submission (see [`crate::adapters::slurm::admission`]) |

pub mod journal;
pub mod k8s;
pub mod lock;
pub mod memory;
pub mod metrics;
pub mod round;
pub mod stability;
pub mod statedir;
pub mod trigger;

pub use lock::RoundLock;
pub use memory::Memory;
pub use statedir::StateDir;
pub use trigger::{Timing, Trigger};

use thiserror::Error;

/// Errors of the cron's own machinery.
#[derive(Debug, Error)]
pub enum CronError {
    /// Another round holds the lock.
    #[error("another planning round holds the lock {path} (pid {holder}); this round did nothing")]
    Locked {
        /// The lock file.
        path: String,
        /// Pid written by the holder, if readable.
        holder: String,
    },
    /// A state file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A state file is not what the cron wrote.
    #[error("{path}: {message}")]
    Corrupt {
        /// The path.
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl CronError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        CronError::Io {
            path: path.display().to_string(),
            source,
        }
    }

    /// Write a state file atomically ([`crate::fsutil::write_atomic`]).
    pub(crate) fn write(path: &std::path::Path, bytes: &[u8]) -> Result<(), CronError> {
        crate::fsutil::write_atomic(path, bytes).map_err(|e| match e {
            crate::error::Error::Io { source, .. } => CronError::io(path, source),
            other => CronError::Corrupt {
                path: path.display().to_string(),
                message: other.to_string(),
            },
        })
    }
}

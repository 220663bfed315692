//! Paths inside the cron's state dir.

use super::CronError;
use std::path::{Path, PathBuf};

/// The state dir of one cron (one cluster, or one partition of it).
#[derive(Debug, Clone)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    /// Open (and create when missing) the state dir.
    pub fn open(root: &Path) -> Result<Self, CronError> {
        std::fs::create_dir_all(root).map_err(|e| CronError::io(root, e))?;
        Ok(StateDir {
            root: root.to_path_buf(),
        })
    }

    /// The dir itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The lock file.
    pub fn lock(&self) -> PathBuf {
        self.root.join("lock")
    }

    /// Memory of the last round.
    pub fn memory(&self) -> PathBuf {
        self.root.join("memory.json")
    }

    /// The last plan.
    pub fn last_plan(&self) -> PathBuf {
        self.root.join("last-plan.json")
    }

    /// The metrics file.
    pub fn metrics(&self) -> PathBuf {
        self.root.join("metrics.prom")
    }

    /// The journal of changes.
    pub fn journal(&self) -> PathBuf {
        self.root.join("journal.jsonl")
    }

    /// The admission file (Slurm: room offered to new one-node jobs at submission).
    pub fn admission(&self) -> PathBuf {
        self.root.join("admission")
    }
}

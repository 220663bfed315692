//! What one round remembers for the next: where each pending job was planned (so a job still
//! pending keeps that placement while it stays good, see [`super::stability`]) and which jobs
//! were released to the engine but may not have started yet (kept as reservations, so no
//! other job is planned onto their GPUs, and held again when they never start).

use super::CronError;
use crate::plan::Plan;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Format tag of `memory.json`.
pub const MEMORY_FORMAT: &str = "gangplan-cron-memory/1";

/// A job released to the engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Released {
    /// Nodes it was pinned to.
    pub nodes: Vec<String>,
    /// When it was released (Unix seconds).
    pub at: i64,
}

/// The memory file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    /// Always [`MEMORY_FORMAT`].
    pub format: String,
    /// Rounds run so far with this state dir.
    pub round: u64,
    /// Last round's placements: job -> node -> GPU count.
    #[serde(default)]
    pub placements: BTreeMap<String, BTreeMap<String, u32>>,
    /// Jobs released to the engine and not seen running yet.
    #[serde(default)]
    pub released: BTreeMap<String, Released>,
}

impl Default for Memory {
    fn default() -> Self {
        Memory {
            format: MEMORY_FORMAT.into(),
            round: 0,
            placements: BTreeMap::new(),
            released: BTreeMap::new(),
        }
    }
}

impl Memory {
    /// Read the memory; a missing file is an empty memory.
    pub fn load(path: &Path) -> Result<Memory, CronError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Memory::default()),
            Err(e) => return Err(CronError::io(path, e)),
        };
        let m: Memory = serde_json::from_str(&text).map_err(|e| CronError::Corrupt {
            path: path.display().to_string(),
            message: format!("{e}; delete the file to start with an empty memory"),
        })?;
        if m.format != MEMORY_FORMAT {
            return Err(CronError::Corrupt {
                path: path.display().to_string(),
                message: format!("format is {:?}, expected {MEMORY_FORMAT:?}", m.format),
            });
        }
        Ok(m)
    }

    /// Write the memory atomically.
    pub fn save(&self, path: &Path) -> Result<(), CronError> {
        let mut text = serde_json::to_string_pretty(self).map_err(|e| CronError::Corrupt {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        text.push('\n');
        CronError::write(path, text.as_bytes())
    }

    /// The placements of a plan, as remembered (node -> GPU count per job).
    pub fn placements_of(plan: &Plan) -> BTreeMap<String, BTreeMap<String, u32>> {
        plan.placements
            .iter()
            .map(|p| {
                (
                    p.job.clone(),
                    p.gpus
                        .iter()
                        .map(|(n, g)| (n.clone(), g.len() as u32))
                        .collect(),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("memory.json");
        assert_eq!(Memory::load(&p).unwrap(), Memory::default());
        let mut m = Memory {
            round: 3,
            ..Default::default()
        };
        m.placements
            .insert("7".into(), BTreeMap::from([("node1".into(), 4)]));
        m.released.insert(
            "8".into(),
            Released {
                nodes: vec!["node2".into()],
                at: 5,
            },
        );
        m.save(&p).unwrap();
        assert_eq!(Memory::load(&p).unwrap(), m);
        std::fs::write(&p, "{").unwrap();
        assert!(matches!(Memory::load(&p), Err(CronError::Corrupt { .. })));
    }
}

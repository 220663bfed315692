//! What one round remembers for the next: where each pending job was planned (so a job still
//! pending keeps that placement while it stays good, see [`super::stability`]) and which jobs
//! were released to the engine but may not have started yet (kept as reservations, so no
//! other job is planned onto their GPUs, and held again when they never start, see
//! [`Released::overdue`]).

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
    /// When its nodes were expected to free for it (Unix seconds): set for a gang released
    /// ahead of its reservation, which Slurm starts only then. Absent in memory files written
    /// before it existed, and for jobs released onto GPUs free at the release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_start: Option<i64>,
}

impl Released {
    /// A job released at `at` onto `nodes`, expected to start at `expected_start` when its
    /// nodes were still busy at the release (`None`: at once).
    pub fn new(nodes: Vec<String>, at: i64, expected_start: Option<i64>) -> Released {
        Released {
            nodes,
            at,
            expected_start,
        }
    }

    /// A job released at `at` onto `nodes` whose nodes were expected to free `expected_in`
    /// seconds later (`None`: free at the release).
    pub fn expected_after(nodes: Vec<String>, at: i64, expected_in: Option<u64>) -> Released {
        let expected_start =
            expected_in.map(|s| at.saturating_add(i64::try_from(s).unwrap_or(i64::MAX)));
        Released::new(nodes, at, expected_start)
    }

    /// Whether it was released ahead of its reservation (onto nodes still busy, with an
    /// expected start): such a gang is planned again each round rather than kept in flight.
    pub fn is_ahead(&self) -> bool {
        self.expected_start.is_some()
    }

    /// Whether the job, still not started at `now`, is to be held again: more than
    /// `start_timeout` seconds have passed since it was released or, when later, since its
    /// nodes were expected to free. A gang released ahead of its reservation is not held
    /// again only because the jobs on its nodes have not ended yet.
    pub fn overdue(&self, now: i64, start_timeout: u64) -> bool {
        let due = self.expected_start.map_or(self.at, |t| t.max(self.at));
        now.saturating_sub(due) > i64::try_from(start_timeout).unwrap_or(i64::MAX)
    }
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
        m.released
            .insert("8".into(), Released::new(vec!["node2".into()], 5, None));
        m.released.insert(
            "9".into(),
            Released::new(vec!["node3".into()], 6, Some(290)),
        );
        m.save(&p).unwrap();
        assert_eq!(Memory::load(&p).unwrap(), m);
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.matches("expected_start").count(), 1, "{text}");
        std::fs::write(&p, "{").unwrap();
        assert!(matches!(Memory::load(&p), Err(CronError::Corrupt { .. })));
    }

    #[test]
    fn a_memory_file_without_expected_starts_still_loads() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("memory.json");
        std::fs::write(
            &p,
            r#"{"format": "gangplan-cron-memory/1", "round": 2,
                "released": {"8": {"nodes": ["node2"], "at": 5}}}"#,
        )
        .unwrap();
        let m = Memory::load(&p).unwrap();
        assert_eq!(
            m.released["8"],
            Released::new(vec!["node2".into()], 5, None)
        );
    }

    #[test]
    fn overdue_counts_from_the_later_of_release_and_expected_start() {
        let plain = Released::new(vec!["n".into()], 100, None);
        assert!(!plain.overdue(400, 300));
        assert!(plain.overdue(401, 300));
        let ahead = Released::new(vec!["n".into()], 100, Some(350));
        assert!(!ahead.overdue(650, 300));
        assert!(ahead.overdue(651, 300));
        // An expected start before the release (clock skew) counts from the release.
        let early = Released::new(vec!["n".into()], 100, Some(50));
        assert!(early.overdue(401, 300));
        assert!(!plain.overdue(i64::MIN, u64::MAX));
    }
}

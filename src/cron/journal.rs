//! The journal: one JSON line per change made to the cluster, appended (and flushed) right
//! after the change was tried, with its outcome. When an apply fails half-way, the journal
//! says exactly what was done; the next round reads the cluster afresh and finishes the rest.

use super::CronError;
use serde::Serialize;
use std::io::Write;
use std::path::Path;

/// Journals larger than this are rotated to `journal.jsonl.1` before a round appends.
pub const ROTATE_BYTES: u64 = 4 << 20;

/// One journal line.
#[derive(Debug, Clone, Serialize)]
pub struct Entry<'a, A: Serialize> {
    /// Unix seconds.
    pub time: i64,
    /// Round number (from the memory).
    pub round: u64,
    /// The change.
    #[serde(flatten)]
    pub action: &'a A,
    /// `ok` or `failed`.
    pub outcome: &'a str,
    /// The error, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Append one entry (rotating an oversized journal first).
pub fn append<A: Serialize>(path: &Path, entry: &Entry<'_, A>) -> Result<(), CronError> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() > ROTATE_BYTES) {
        let old = path.with_extension("jsonl.1");
        std::fs::rename(path, &old).map_err(|e| CronError::io(path, e))?;
    }
    let mut line = serde_json::to_string(entry).map_err(|e| CronError::Corrupt {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    line.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| CronError::io(path, e))?;
    f.write_all(line.as_bytes())
        .and_then(|_| f.sync_data())
        .map_err(|e| CronError::io(path, e))
}

//! The journal: one JSON line per change made to the cluster. A change is written twice: a
//! `begun` line just before it is tried and a line with its outcome (`ok`, `failed`) just
//! after, each appended and synced. So when a round dies half-way (killed, the machine lost),
//! the journal's last line is a `begun` one and names the change that may or may not have
//! gone through; the next round notes it ([`Event::Interrupted`]) and reads the cluster
//! afresh. A round that finds the lock held notes that too ([`Event::Skipped`]).

use super::CronError;
use serde::Serialize;
use serde_json::Value;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Journals larger than this are rotated to `journal.jsonl.1` before a round appends.
pub const ROTATE_BYTES: u64 = 4 << 20;

/// The outcome written before a change is tried.
pub const BEGUN: &str = "begun";

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
    /// `begun`, `ok`, `failed` (changes) or `noted` (events).
    pub outcome: &'a str,
    /// The error, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What the cron notes about its own rounds (not changes to the cluster).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Event {
    /// A round started while another held the lock, and did nothing.
    Skipped {
        /// The pid of the round holding the lock, as its lock file says.
        holder: String,
    },
    /// The round before ended while this change was under way (its `begun` line has no
    /// outcome): it may or may not have gone through; this round reads the cluster afresh.
    Interrupted {
        /// The job the change was about.
        job: String,
        /// The round that was interrupted.
        interrupted_round: u64,
        /// The `begun` line, as it was written.
        change: Value,
    },
}

/// Append one entry (rotating an oversized journal first). A journal whose last line was cut
/// short (a round killed while writing) gets a line break first, so every line stays JSON.
pub fn append<A: Serialize>(path: &Path, entry: &Entry<'_, A>) -> Result<(), CronError> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() > ROTATE_BYTES) {
        let old = path.with_extension("jsonl.1");
        std::fs::rename(path, &old).map_err(|e| CronError::io(path, e))?;
    }
    append_line(path, entry)
}

/// Append without rotating (for a round that does not hold the lock).
pub fn append_line<A: Serialize>(path: &Path, entry: &Entry<'_, A>) -> Result<(), CronError> {
    let mut line = serde_json::to_string(entry).map_err(|e| CronError::Corrupt {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    line.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)
        .map_err(|e| CronError::io(path, e))?;
    if !ends_with_newline(&mut f).map_err(|e| CronError::io(path, e))? {
        line.insert(0, '\n');
    }
    f.write_all(line.as_bytes())
        .and_then(|_| f.sync_data())
        .map_err(|e| CronError::io(path, e))
}

/// Whether the file is empty or ends with a line break.
fn ends_with_newline(f: &mut std::fs::File) -> std::io::Result<bool> {
    if f.metadata()?.len() == 0 {
        return Ok(true);
    }
    f.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    f.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

/// The journal's last complete JSON line, if any (read from the file's last 64 KiB).
pub fn last_entry(path: &Path) -> Option<Value> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(64 << 10))).ok()?;
    let mut tail = Vec::new();
    f.read_to_end(&mut tail).ok()?;
    let text = String::from_utf8_lossy(&tail);
    text.lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .find_map(|l| serde_json::from_str(l).ok())
}

/// The change the last round left under way: the journal's last line when it is `begun`.
pub fn interrupted(path: &Path) -> Option<Value> {
    last_entry(path).filter(|v| v.get("outcome").and_then(Value::as_str) == Some(BEGUN))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(a: &'a Value, outcome: &'a str) -> Entry<'a, Value> {
        Entry {
            time: 1,
            round: 2,
            action: a,
            outcome,
            error: None,
        }
    }

    #[test]
    fn a_begun_line_without_outcome_is_an_interrupted_change() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("journal.jsonl");
        assert!(interrupted(&p).is_none());
        let a = serde_json::json!({"action": "start", "job": "7"});
        append(&p, &entry(&a, BEGUN)).unwrap();
        assert_eq!(interrupted(&p).unwrap()["job"], "7");
        append(&p, &entry(&a, "ok")).unwrap();
        assert!(interrupted(&p).is_none());
    }

    #[test]
    fn a_cut_line_is_closed_before_the_next_one() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("journal.jsonl");
        let a = serde_json::json!({"action": "start", "job": "7"});
        append(&p, &entry(&a, BEGUN)).unwrap();
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"time\":1,\"rou").unwrap();
        assert_eq!(
            interrupted(&p).unwrap()["job"],
            "7",
            "the cut line is skipped"
        );
        append(&p, &entry(&a, "ok")).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text.lines().last().unwrap().starts_with('{'));
        assert_eq!(last_entry(&p).unwrap()["outcome"], "ok");
    }
}

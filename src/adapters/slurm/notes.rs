//! Reasons where users look: each held job a round leaves pending gets why it waits in its
//! admin comment (`gangplan: waiting: <reason>`), and a running job that still carries such a
//! note gets it cleared (a start clears it in the same update that pins the job).
//!
//! A note is rewritten only when its **words** change: [`note_substance`] leaves out the
//! numbers (counts, seconds, job and node numbers) and what stands in parentheses (the GPUs
//! each listed job holds), which change in most rounds while the reason stays the same. The
//! numbers of a note are those of the round that wrote it. [`notes_to_write`] lists the notes
//! to write, jobs without a waiting note first; the round writes at most `--notes-per-round` of
//! them (after its starts), the rest in the next rounds.

use super::convert::{note_is_ours, SlurmRound, NOTE_PREFIX};
use crate::plan::Plan;

/// Longest reason written into an admin comment, in characters.
pub const NOTE_MAX_CHARS: usize = 240;

/// How a waiting note begins (after [`NOTE_PREFIX`]).
const WAITING: &str = " waiting: ";

/// The admin comment that tells why a held job waits.
pub fn waiting_note(reason: &str) -> String {
    let clean: String = reason
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut text = format!("{NOTE_PREFIX}{WAITING}{clean}");
    if text.chars().count() > NOTE_MAX_CHARS {
        text = text.chars().take(NOTE_MAX_CHARS - 3).collect::<String>() + "...";
    }
    text
}

/// What a note says, numbers and parenthesised details aside: every run of digits becomes
/// `#`, and text in parentheses (closed or cut off by the length limit) is left out. Two
/// notes with the same substance tell a user the same thing.
pub fn note_substance(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    let mut in_number = false;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            d if d.is_ascii_digit() => {
                if !in_number {
                    out.push('#');
                }
                in_number = true;
                continue;
            }
            other => out.push(other),
        }
        in_number = false;
    }
    out
}

/// Whether an admin comment holds a gangplan waiting note.
fn is_waiting_note(admin_comment: &str) -> bool {
    admin_comment
        .strip_prefix(NOTE_PREFIX)
        .is_some_and(|rest| rest.starts_with(WAITING))
}

/// A note to write: the job and its new admin comment (empty: clear gangplan's note).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteToWrite {
    /// Job id.
    pub job: String,
    /// The admin comment to set.
    pub text: String,
}

/// The notes to write, in the order they should be written: each held job the plan leaves
/// pending whose admin comment is empty or a gangplan note that says something else (in
/// substance, [`note_substance`]), first the jobs that carry no waiting note yet, each group
/// in the plan's pending order; then the clears of running jobs that still carry a gangplan
/// note. An operator's own admin comment is never overwritten.
pub fn notes_to_write(round: &SlurmRound, plan: &Plan) -> Vec<NoteToWrite> {
    let mut first = Vec::new();
    let mut changed = Vec::new();
    for p in &plan.pending {
        let Some(held) = round.held.get(&p.job) else {
            continue;
        };
        let now = &held.admin_comment;
        let text = waiting_note(&p.reason);
        if !note_is_ours(now) || note_substance(now) == note_substance(&text) {
            continue;
        }
        let note = NoteToWrite {
            job: p.job.clone(),
            text,
        };
        if is_waiting_note(now) {
            changed.push(note);
        } else {
            first.push(note);
        }
    }
    let clears = round.noted_running.iter().map(|job| NoteToWrite {
        job: job.clone(),
        text: String::new(),
    });
    first.into_iter().chain(changed).chain(clears).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_parenthesised_lists_are_not_the_substance() {
        let a = waiting_note(
            "needs 8 GPUs within one node; the most free in any node is 5 (node5); would need \
             to preempt job 160 (8 GPUs on node6, 8 GPUs on node14; not preemptible)",
        );
        let b = waiting_note(
            "needs 8 GPUs within one node; the most free in any node is 4 (node2); would need \
             to preempt job 172 (8 GPUs on node3; not preemptible)",
        );
        assert_eq!(note_substance(&a), note_substance(&b));
        let reserved = waiting_note(
            "needs 8 GPUs within one node; the most free in any node is 4 (node2); would need \
             to preempt job 172 (8 GPUs on node3; not preemptible); node7, node9 reserved for \
             job 194 from 18 s on, and it has a time limit of 60 s",
        );
        assert_ne!(
            note_substance(&b),
            note_substance(&reserved),
            "a reservation that keeps it off nodes is news"
        );
        let fits = waiting_note("42 GPUs are free after this round and its shape fits them");
        assert_ne!(note_substance(&a), note_substance(&fits));
        assert_eq!(
            note_substance("gangplan: waiting: from 287 s on (cut off"),
            "gangplan: waiting: from # s on "
        );
    }

    #[test]
    fn waiting_notes_are_told_from_other_comments() {
        assert!(is_waiting_note(&waiting_note("x")));
        assert!(!is_waiting_note("gangplan: held at submission"));
        assert!(!is_waiting_note(""));
        assert!(!is_waiting_note("ops: waiting: x"));
    }
}

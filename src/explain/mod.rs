//! "Why is my job pending?", answered exactly, and what-if analysis.
//!
//! - [`explain_job`]: the plan's reason for one pending job ([`crate::plan::reasons`]) plus the
//!   smallest changes that would let it start, found by a relaxation solve ([`relax`]) and
//!   checked by re-planning where the change can be written into the instance.
//! - [`prices::prices`]: shadow prices of GPUs (per node, GPU type, rack) and tenant quotas from
//!   the LP relaxation of the round's MIP.
//! - [`whatif::whatif`]: apply changes to an instance (add or drain nodes, quotas, weights),
//!   re-plan, and report what changed.

pub mod candidates;
pub mod hardware;
pub mod lp;
pub mod prices;
pub mod relax;
pub mod round;
pub mod whatif;

pub use round::Round;

use crate::error::{Error, Result};
use crate::hardware::ModelLibrary;
use crate::instance::raw::RawInstance;
use crate::plan::reasons::{reason, Binding, Reason};
use relax::{relax_alternatives, Relaxation};
use serde::Serialize;

/// Whether a relaxation's changes, written into the instance, make the planner start the job.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "result")]
pub enum Verification {
    /// Re-planned with the change: the job starts.
    Starts,
    /// Re-planned with the change: the job fits but still waits (other work is worth more).
    StillWaits {
        /// The new reason.
        reason: String,
    },
    /// The change cannot be written into the instance (it adds hardware), so it was not run.
    NotRun {
        /// Why.
        why: String,
    },
}

/// One way to let the job start.
#[derive(Debug, Clone, Serialize)]
pub struct Fix {
    /// The relaxation found.
    #[serde(flatten)]
    pub relaxation: Relaxation,
    /// The re-planning check.
    pub verification: Verification,
}

/// The answer to "why is my job pending?".
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    /// The job.
    pub job: String,
    /// Whether the plan starts it.
    pub started: bool,
    /// Where it starts: GPU indices per node (absent when it waits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placed_on: Option<std::collections::BTreeMap<String, Vec<u32>>>,
    /// The reason it waits (absent when it starts).
    pub reason: Option<String>,
    /// `unschedulable` or `unresolvable` (absent when it starts).
    pub kind: Option<String>,
    /// The binding constraint's short name (absent when it starts).
    pub binding: Option<String>,
    /// Ways to let it start, cheapest first (empty when it starts).
    pub options: Vec<Fix>,
    /// Limits of the analysis that apply to this job.
    pub notes: Vec<String>,
}

/// Explain one pending job of a raw instance: plan the round, give the reason, and search for
/// the smallest changes that would let the job start (at most `max_options`), each checked by
/// re-planning the changed instance when `verify` is set.
pub fn explain_job(
    raw: &RawInstance,
    lib: &ModelLibrary,
    source: &str,
    job_id: &str,
    max_options: usize,
    verify: bool,
) -> Result<Explanation> {
    let round = Round::plan(raw, lib, source)?;
    let inst = &round.inst;
    let Some(j) = inst.pending_index(job_id) else {
        let msg = if inst.running_index(job_id).is_some() {
            format!("{job_id:?} is a running job; explain takes a pending job")
        } else {
            let ids: Vec<&str> = inst
                .pending
                .iter()
                .map(|p| p.id.as_str())
                .take(20)
                .collect();
            format!(
                "no pending job {job_id:?}; pending jobs: {}{}",
                ids.join(", "),
                if inst.pending.len() > 20 { ", ..." } else { "" }
            )
        };
        return Err(Error::input(source, "", msg));
    };
    if let Some(gpus) = round.assignment().placed.get(&j) {
        return Ok(Explanation {
            job: job_id.to_string(),
            started: true,
            placed_on: Some(
                gpus.iter()
                    .map(|(&n, idx)| (inst.nodes[n].name.clone(), idx.clone()))
                    .collect(),
            ),
            reason: None,
            kind: None,
            binding: None,
            options: Vec::new(),
            notes: Vec::new(),
        });
    }
    let after = round.after();
    let r: Reason = reason(inst, &after, j);
    let (relaxations, mut notes) = relax_alternatives(
        inst,
        round.assignment(),
        &after,
        j,
        max_options,
        r.binding == Binding::Resources,
    )?;
    let mut options = Vec::new();
    for relaxation in relaxations {
        let job = &inst.pending[j];
        if let Some((relaxation, verification)) =
            hardware::in_whole_nodes(raw, lib, source, job, &relaxation, verify)?
        {
            options.push(Fix {
                relaxation,
                verification,
            });
            continue;
        }
        let verification = if verify {
            verify_relaxation(raw, lib, source, job_id, &relaxation)?
        } else {
            Verification::NotRun {
                why: "verification was turned off".into(),
            }
        };
        options.push(Fix {
            relaxation,
            verification,
        });
    }
    if round.outcome.status == crate::plan::Status::Fallback {
        let why = round
            .outcome
            .note
            .as_deref()
            .unwrap_or("the greedy planner was asked for");
        notes.push(format!(
            "the round's plan is the greedy fallback, not a MIP optimum ({why})"
        ));
    }
    Ok(Explanation {
        job: job_id.to_string(),
        started: false,
        placed_on: None,
        reason: Some(r.text.clone()),
        kind: Some(r.kind().to_string()),
        binding: Some(r.binding.as_str().to_string()),
        options,
        notes,
    })
}

/// Write a relaxation's changes into the instance and re-plan.
fn verify_relaxation(
    raw: &RawInstance,
    lib: &ModelLibrary,
    source: &str,
    job_id: &str,
    rel: &Relaxation,
) -> Result<Verification> {
    let Some(changed) = relax::apply(raw, job_id, rel) else {
        return Ok(Verification::NotRun {
            why: "the change adds GPUs, which cannot be written into this instance; try `gangplan whatif --add-nodes`".into(),
        });
    };
    let round = Round::plan(&changed, lib, source)?;
    let Some(j) = round.inst.pending_index(job_id) else {
        return Err(Error::Solver(format!(
            "job {job_id} vanished from the changed instance"
        )));
    };
    if round.assignment().placed.contains_key(&j) {
        return Ok(Verification::Starts);
    }
    let after = round.after();
    Ok(Verification::StillWaits {
        reason: reason(&round.inst, &after, j).text,
    })
}

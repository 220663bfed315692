//! A plan -> Slurm actions, and running them.
//!
//! Order: preemptions first (`scontrol requeuehold`: the victim goes back to the queue, held,
//! and its GPUs free up), then each placement: `scontrol update JobId=X NodeList=<its nodes>
//! ExcNodeList=<every other node>` (plus `StartTime=now` for a requeued job, whose begin time
//! Slurm pushed ~2 minutes out) and `scontrol release X`. Because the job asks exactly as many
//! nodes as it is pinned to and every other node is excluded, Slurm starts it on exactly those
//! nodes, as soon as their GPUs are free. Slurm picks the GPU indices inside each node.
//!
//! **Pre-release.** The gang of the round's first reservation (the plan's `reservation`: the
//! first held gang that cannot start now, with its reserved nodes) is pinned
//! and released the same way in the same round, ahead of time ([`pre_release_action`]): Slurm
//! starts it the moment its nodes free, without waiting for a round to see them free. Its
//! start carries `expected_in`, the seconds until then, and the job is not held again before
//! `--start-timeout` seconds after that ([`Released::overdue`]). It waits for a later round
//! when a reserved node is pinned to another job released and not started yet, the round's
//! own starts included. The gangs of further reservations (`--reservations` above 1) stay
//! held until a round starts them.
//!
//! Every later round plans such a gang again ([`HeldJob::released_to`]): its start now on
//! its pinned nodes, or its reservation there again, needs no action; a start or reservation
//! on other nodes moves the pin (`scontrol update` alone: it is released already); a round
//! that neither starts it nor makes it its first reservation holds it again. Node ends come
//! earlier than time limits say, so the nodes that free first are often not the ones a
//! reservation guessed.
//!
//! [`apply_actions`] carries a round's actions out one by one, journaling each, and stops at
//! the first failure (the next round reads the cluster afresh and finishes the rest).

use super::cli::{check_job_id, check_node_name, command_line, SlurmCli};
use super::convert::{HeldJob, SlurmRound, NOTE_PREFIX};
use super::notes::notes_to_write;
use super::SlurmError;
use crate::cron::journal::{self, Entry};
use crate::cron::memory::Released;
use crate::cron::CronError;
use crate::plan::{Plan, PlanReservation};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One change to the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Requeue a running job and hold it.
    Preempt {
        /// Job id.
        job: String,
    },
    /// Pin a held job to exactly these nodes and release it.
    Start {
        /// Job id.
        job: String,
        /// Nodes it must run on.
        nodes: Vec<String>,
        /// Every other node of the cluster.
        exclude: Vec<String>,
        /// Also clear a begin time left by a requeue.
        clear_begin: bool,
        /// Also clear gangplan's note in the admin comment.
        #[serde(default)]
        clear_note: bool,
        /// Released ahead of its reservation: seconds from the round until its nodes' GPUs
        /// free, when Slurm starts it. `None`: its GPUs are free now (or once the round's
        /// preemptions have freed them).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expected_in: Option<u64>,
        /// Released already (ahead, pinned elsewhere): only its pin moves, no `release`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        repin: bool,
    },
    /// Write why a held job waits into its admin comment, or clear a gangplan note (`text`
    /// empty) from a job that runs.
    Note {
        /// Job id.
        job: String,
        /// The admin comment to set.
        text: String,
    },
    /// Hold again a job released earlier that never started, so the next round replans it.
    Rehold {
        /// Job id.
        job: String,
    },
}

impl Action {
    /// The job the action is about.
    pub fn job(&self) -> &str {
        match self {
            Action::Preempt { job }
            | Action::Start { job, .. }
            | Action::Rehold { job }
            | Action::Note { job, .. } => job,
        }
    }

    /// The Slurm commands, in order (program, arguments). Ids and names are checked first.
    pub fn commands(&self) -> Result<Vec<(&'static str, Vec<String>)>, SlurmError> {
        check_job_id(self.job())?;
        Ok(match self {
            Action::Preempt { job } => vec![("scontrol", vec!["requeuehold".into(), job.clone()])],
            Action::Rehold { job } => vec![("scontrol", vec!["uhold".into(), job.clone()])],
            Action::Note { job, text } => vec![(
                "scontrol",
                vec![
                    "update".into(),
                    format!("JobId={job}"),
                    format!("AdminComment={text}"),
                ],
            )],
            Action::Start {
                job,
                nodes,
                exclude,
                clear_begin,
                clear_note,
                repin,
                ..
            } => {
                for n in nodes.iter().chain(exclude) {
                    check_node_name(n)?;
                }
                let mut update = vec![
                    "update".into(),
                    format!("JobId={job}"),
                    format!("NodeList={}", nodes.join(",")),
                    format!("ExcNodeList={}", exclude.join(",")),
                ];
                if *clear_begin {
                    update.push("StartTime=now".into());
                }
                if *clear_note {
                    update.push("AdminComment=".into());
                }
                let mut commands = vec![("scontrol", update)];
                if !repin {
                    commands.push(("scontrol", vec!["release".into(), job.clone()]));
                }
                commands
            }
        })
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        match self {
            Action::Preempt { job } => format!("preempt job {job} (scontrol requeuehold)"),
            Action::Rehold { job } => {
                format!("hold job {job} again: released earlier but never started")
            }
            Action::Start {
                job,
                nodes,
                expected_in: None,
                repin: false,
                ..
            } => format!("start job {job} on {} (pin + release)", nodes.join(",")),
            Action::Start {
                job,
                nodes,
                expected_in: None,
                repin: true,
                ..
            } => format!(
                "start job {job} on {} (move its pin: released ahead onto other nodes)",
                nodes.join(",")
            ),
            Action::Start {
                job,
                nodes,
                expected_in: Some(s),
                repin: true,
                ..
            } => format!(
                "move job {job}'s pin to {}, whose GPUs free in about {s} s (released ahead \
                 onto other nodes)",
                nodes.join(",")
            ),
            Action::Start {
                job,
                nodes,
                expected_in: Some(s),
                ..
            } => format!(
                "start job {job} on {} when their GPUs free, in about {s} s (pin + release \
                 now, ahead of its reservation)",
                nodes.join(",")
            ),
            Action::Note { job, text } if text.is_empty() => {
                format!("clear gangplan's note on job {job}")
            }
            Action::Note { job, text } => format!("note on job {job}: {text}"),
        }
    }

    /// Run the action's commands through `cli`, stopping at the first failure.
    pub fn run(&self, cli: &dyn SlurmCli) -> Result<(), SlurmError> {
        for (program, args) in self.commands()? {
            tracing::debug!(command = %command_line(program, &args), "slurm");
            cli.run(program, &args)?;
        }
        Ok(())
    }
}

/// The actions that carry out `plan` on the round's cluster: preemptions, then starts in the
/// plan's order. Placements of jobs that are not held jobs of this round are refused.
pub fn plan_actions(round: &SlurmRound, plan: &Plan) -> Result<Vec<Action>, SlurmError> {
    plan_actions_after(round, plan, &BTreeSet::new())
}

/// [`plan_actions`] once the jobs in `reheld` are held again: a gang released ahead among
/// them is started like any held job; one not among them needs no action to start on the
/// nodes it is pinned to, and only a new pin elsewhere.
fn plan_actions_after(
    round: &SlurmRound,
    plan: &Plan,
    reheld: &BTreeSet<&str>,
) -> Result<Vec<Action>, SlurmError> {
    let mut actions = Vec::new();
    for p in &plan.preemptions {
        if !round.running.contains(&p.job) {
            return Err(SlurmError::Invalid {
                what: "job id",
                value: p.job.clone(),
                message: "the plan preempts a job that is not running in Slurm".into(),
            });
        }
        check_job_id(&p.job)?;
        actions.push(Action::Preempt { job: p.job.clone() });
    }
    for p in &plan.placements {
        let Some(held) = round.held.get(&p.job) else {
            return Err(SlurmError::Invalid {
                what: "job id",
                value: p.job.clone(),
                message: "the plan starts a job that is not held in Slurm".into(),
            });
        };
        let nodes: Vec<String> = p.gpus.keys().cloned().collect();
        if nodes.len() != held.node_count as usize {
            return Err(SlurmError::Invalid {
                what: "job id",
                value: p.job.clone(),
                message: format!(
                    "the plan puts it on {} node(s) but it asks for {}",
                    nodes.len(),
                    held.node_count
                ),
            });
        }
        let pinned = pin_of(held, &p.job, reheld);
        actions.extend(start_action(round, &p.job, held, nodes, None, pinned));
    }
    for a in &actions {
        a.commands()?;
    }
    Ok(actions)
}

/// The nodes a gang released ahead is pinned to, unless it is held again this round.
fn pin_of<'h>(held: &'h HeldJob, job: &str, reheld: &BTreeSet<&str>) -> Option<&'h [String]> {
    held.released_to
        .as_deref()
        .filter(|_| !reheld.contains(job))
}

/// The start of held job `job` on exactly `nodes`: pinned there with every other node of the
/// cluster excluded, a requeue's begin time and gangplan's note cleared where it has them.
/// `expected_in`: see [`Action::Start`]. A job already released and `pinned` to other nodes
/// only moves its pin; `None` when it is pinned to these nodes already.
fn start_action(
    round: &SlurmRound,
    job: &str,
    held: &HeldJob,
    nodes: Vec<String>,
    expected_in: Option<u64>,
    pinned: Option<&[String]>,
) -> Option<Action> {
    if pinned.is_some_and(|p| same_nodes(p, &nodes)) {
        return None;
    }
    let exclude = round
        .all_nodes
        .iter()
        .filter(|n| !nodes.contains(n))
        .cloned()
        .collect();
    Some(Action::Start {
        job: job.to_string(),
        nodes,
        exclude,
        clear_begin: held.clear_begin,
        clear_note: held.admin_comment.starts_with(NOTE_PREFIX),
        expected_in,
        repin: pinned.is_some(),
    })
}

/// Whether two node lists name the same nodes.
fn same_nodes(a: &[String], b: &[String]) -> bool {
    fn set(x: &[String]) -> BTreeSet<&str> {
        x.iter().map(String::as_str).collect()
    }
    set(a) == set(b)
}

/// The plan's first reservation (`reservation`; the others are never released ahead) when its
/// gang may be released ahead of time (with the gang as held); `None` (with the reason
/// logged) when the plan holds no reservation, or [`pre_release_blocker`] names one.
fn reserved_ahead<'r>(
    round: &'r SlurmRound,
    plan: &'r Plan,
    released: &BTreeMap<String, Released>,
) -> Option<(&'r PlanReservation, &'r HeldJob)> {
    let r = plan.reservation.as_ref()?;
    match pre_release_blocker(round, plan, r, released) {
        Ok(held) => Some((r, held)),
        Err(why) => {
            tracing::info!(job = %r.job, reason = %why, "reserved gang stays held until its nodes are free");
            None
        }
    }
}

/// Reservation `r` of gang `held` released ahead of time: pinned to its reserved nodes and
/// released now, so that Slurm starts it as soon as their GPUs free. A gang released ahead
/// by an earlier round and `pinned` to other nodes only moves its pin, and needs nothing
/// when it is pinned there already.
fn pre_release_action(
    round: &SlurmRound,
    r: &PlanReservation,
    held: &HeldJob,
    pinned: Option<&[String]>,
) -> Option<Action> {
    let expected_in = r.starts_in.max(0.0).ceil() as u64;
    let act = start_action(
        round,
        &r.job,
        held,
        r.nodes.clone(),
        Some(expected_in),
        pinned,
    )?;
    if let Err(e) = act.commands() {
        tracing::warn!(job = %r.job, error = %e, "reserved gang not released ahead");
        return None;
    }
    Some(act)
}

/// What keeps reservation `r`'s gang from being released ahead of time, or the gang as held.
/// It must be held in Slurm; its nodes must be busy now (a gang the plan left waiting on free
/// nodes waits for the plan's reason); it must ask as many nodes as are reserved (Slurm starts
/// a job pinned to more nodes than it asks on all of them, and cannot start one pinned to
/// fewer); no reserved node may be pinned to another job that is released and has not
/// started, see [`pinned_elsewhere`]; and its reserved nodes must lie in one rack (a gang
/// pinned across racks would start there, while a round that sees nodes free may find it
/// one rack).
fn pre_release_blocker<'r>(
    round: &'r SlurmRound,
    plan: &Plan,
    r: &PlanReservation,
    released: &BTreeMap<String, Released>,
) -> Result<&'r HeldJob, String> {
    let held = round
        .held
        .get(&r.job)
        .ok_or("it is not held in Slurm".to_string())?;
    if r.starts_in <= 0.0 {
        return Err("its nodes are free now; the plan left it waiting".into());
    }
    if r.nodes.len() != held.node_count as usize {
        return Err(format!(
            "{} node(s) are reserved but it asks for {}",
            r.nodes.len(),
            held.node_count
        ));
    }
    if let Some((other, node)) = pinned_elsewhere(plan, r, released) {
        return Err(format!(
            "{node} is pinned to job {other}, released and not started yet"
        ));
    }
    let racks = racks_of(round, &r.nodes);
    if racks.len() > 1 {
        return Err(format!(
            "its reserved nodes span racks {}: a later round may start it in one",
            racks.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(held)
}

/// The racks of `nodes` in the round's instance (nodes without a rack share one).
fn racks_of<'r>(round: &'r SlurmRound, nodes: &[String]) -> BTreeSet<&'r str> {
    round
        .raw
        .nodes
        .iter()
        .filter(|n| nodes.contains(&n.name))
        .map(|n| n.rack.as_deref().unwrap_or(""))
        .collect()
}

/// A reserved node of `r` pinned to another job that is released and has not started (with
/// that job): one released earlier (`released`: by a round, ahead or not, or admitted at
/// submission) or one the round starts (a job whose time limit ends it by the reservation's
/// start). Slurm's main scheduler keeps the nodes of a waiting pinned job for it, so such a
/// job could start only by Slurm's backfill pass, which at its coarser time resolution may
/// find it too late: the gang is released by a later round, once that job runs.
fn pinned_elsewhere<'a>(
    plan: &'a Plan,
    r: &'a PlanReservation,
    released: &'a BTreeMap<String, Released>,
) -> Option<(&'a str, &'a str)> {
    let earlier = released
        .iter()
        .flat_map(|(id, rel)| rel.nodes.iter().map(move |n| (id.as_str(), n.as_str())));
    let starting = plan
        .placements
        .iter()
        .flat_map(|p| p.gpus.keys().map(move |n| (p.job.as_str(), n.as_str())));
    earlier
        .chain(starting)
        .find(|(id, node)| *id != r.job && r.nodes.iter().any(|n| n == node))
}

/// The notes of [`notes_to_write`] as actions, in its order.
pub fn note_actions(round: &SlurmRound, plan: &Plan) -> Vec<Action> {
    notes_to_write(round, plan)
        .into_iter()
        .map(|n| Action::Note {
            job: n.job,
            text: n.text,
        })
        .collect()
}

/// A round's actions: re-hold the jobs released earlier that have not started and are
/// [`Released::overdue`] at `now` (`released`), and the gangs released ahead that the plan
/// neither starts nor reserves again (with `pre_release`); then [`plan_actions`]; then with
/// `pre_release` the reservation gang released ahead ([`reserved_ahead`], not one held again
/// as overdue); then at most `notes_per_round` notes of [`note_actions`] (all of them when
/// `None`; none for a gang released ahead, which is Slurm's to start from then on).
pub fn round_actions(
    round: &SlurmRound,
    plan: &Plan,
    released: &BTreeMap<String, Released>,
    now: i64,
    start_timeout: u64,
    notes_per_round: Option<usize>,
    pre_release: bool,
) -> Result<Vec<Action>, SlurmError> {
    let overdue: BTreeSet<&str> = released
        .iter()
        .filter(|(_, r)| r.overdue(now, start_timeout))
        .map(|(id, _)| id.as_str())
        .collect();
    let reserved = pre_release
        .then(|| reserved_ahead(round, plan, released))
        .flatten()
        .filter(|(r, _)| !overdue.contains(r.job.as_str()));
    let reserved_job = reserved.map(|(r, _)| r.job.as_str());
    let reheld: BTreeSet<&str> = overdue
        .iter()
        .copied()
        .chain(unplanned_ahead(round, plan, reserved_job))
        .collect();
    let mut actions: Vec<Action> = reheld
        .iter()
        .map(|id| Action::Rehold {
            job: id.to_string(),
        })
        .collect();
    actions.extend(plan_actions_after(round, plan, &reheld)?);
    if let Some((r, held)) = reserved {
        actions.extend(pre_release_action(
            round,
            r,
            held,
            pin_of(held, &r.job, &reheld),
        ));
    }
    let notes: Vec<Action> = note_actions(round, plan)
        .into_iter()
        .filter(|n| reserved_job != Some(n.job()))
        .collect();
    let limit = notes_per_round.unwrap_or(notes.len());
    actions.extend(notes.into_iter().take(limit));
    Ok(actions)
}

/// The gangs released ahead by earlier rounds (still pending) that `plan` neither starts nor
/// keeps as the reservation released ahead (`reserved`): pinned to nodes the plan may give
/// to others, they are held again.
fn unplanned_ahead<'r>(
    round: &'r SlurmRound,
    plan: &'r Plan,
    reserved: Option<&'r str>,
) -> impl Iterator<Item = &'r str> {
    round
        .held
        .iter()
        .filter(|(_, h)| h.released_to.is_some())
        .map(|(id, _)| id.as_str())
        .filter(move |id| Some(*id) != reserved && !plan.placements.iter().any(|p| p.job == *id))
}

/// Why an apply stopped.
#[derive(Debug, thiserror::Error)]
pub enum ApplyStop {
    /// A Slurm command failed or timed out.
    #[error("a Slurm command failed: {0}")]
    Slurm(#[from] SlurmError),
    /// The journal could not be written: no change is made that the journal cannot record.
    #[error("the journal cannot be written, so no further change is made: {0}")]
    Journal(#[from] CronError),
}

/// What applying a round's actions did.
#[derive(Debug, Default)]
pub struct Applied {
    /// Actions that failed (0 or 1: the apply stops at the first).
    pub failures: u32,
    /// What stopped the apply.
    pub first_error: Option<ApplyStop>,
}

/// Now, Unix seconds.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Append one line about `act` to the journal.
fn journal(
    path: &Path,
    round: u64,
    act: &Action,
    outcome: &str,
    error: Option<String>,
) -> Result<(), CronError> {
    journal::append(
        path,
        &Entry {
            time: unix_now(),
            round,
            action: act,
            outcome,
            error,
        },
    )
}

/// Run `actions` in order through `cli`, journaling each at `journal_path` (round `round`):
/// a `begun` line before it is tried (an action whose line cannot be written is not tried),
/// its outcome after. Stops at the first failure. Started jobs are recorded in `released`,
/// also when the start failed (a release that timed out may have gone through; a job still
/// held is planned afresh anyway), re-held ones removed.
pub fn apply_actions(
    actions: &[Action],
    cli: &dyn SlurmCli,
    journal_path: &Path,
    round: u64,
    released: &mut BTreeMap<String, Released>,
) -> Applied {
    let mut applied = Vec::new();
    for act in actions {
        if let Err(e) = journal(journal_path, round, act, journal::BEGUN, None) {
            return stopped(act, &applied, ApplyStop::Journal(e));
        }
        let result = act.run(cli);
        remember(act, result.is_ok(), released);
        let (outcome, error) = match &result {
            Ok(()) => ("ok", None),
            Err(e) => ("failed", Some(e.to_string())),
        };
        let written = journal(journal_path, round, act, outcome, error);
        if let Err(e) = result {
            if let Err(j) = written {
                tracing::error!(error = %j, "could not write the journal");
            }
            return stopped(act, &applied, ApplyStop::Slurm(e));
        }
        tracing::info!(job = %act.job(), action = %act.describe(), "applied");
        applied.push(act.describe());
        if let Err(e) = written {
            return stopped(act, &applied, ApplyStop::Journal(e));
        }
    }
    Applied::default()
}

/// Record a start in `released`, tried or done; a re-hold that went through removes it.
fn remember(act: &Action, ok: bool, released: &mut BTreeMap<String, Released>) {
    match act {
        Action::Start {
            job,
            nodes,
            expected_in,
            ..
        } => {
            // Counted from the release, a little after the round read the cluster: a
            // re-hold comes no earlier than the start the round expected.
            released.insert(
                job.clone(),
                Released::expected_after(nodes.clone(), unix_now(), *expected_in),
            );
        }
        Action::Rehold { job } if ok => {
            released.remove(job);
        }
        Action::Rehold { .. } | Action::Preempt { .. } | Action::Note { .. } => {}
    }
}

/// Log why the apply stopped at `act`.
fn stopped(act: &Action, applied: &[String], why: ApplyStop) -> Applied {
    tracing::error!(
        job = %act.job(),
        action = %act.describe(),
        error = %why,
        applied = ?applied,
        "apply stopped; what was applied is in the journal, the next round finishes the rest"
    );
    Applied {
        failures: 1,
        first_error: Some(why),
    }
}

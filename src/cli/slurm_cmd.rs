//! `gangplan slurm plan`: one planning round on a live Slurm cluster (run it from cron or a
//! systemd timer). Reads the cluster, plans the held gangs, prints what it would do, and with
//! `--apply` does it: requeue-hold the victims, pin each placed job to exactly its nodes and
//! release it. See docs/slurm.md.

use super::plan_cmd::{
    check_flags, cron_failure, emit_outputs, init_logging, log_planned, save_round, unix_now,
    CronFlags,
};
use super::{exit, Failure};
use clap::Args;
use gangplan::adapters::slurm::admission::{
    admitted_pending, offered_room, read_withdrawn, Admission,
};
use gangplan::adapters::slurm::apply::{apply_actions, round_actions, Applied};
use gangplan::adapters::slurm::{build_round, Action, Conventions, SlurmCli, SlurmError, Snapshot};
use gangplan::cron::journal::{self, Entry, Event};
use gangplan::cron::memory::Released;
use gangplan::cron::metrics::RoundMetrics;
use gangplan::cron::round::plan_with_memory;
use gangplan::cron::{CronError, Memory, RoundLock, StateDir};
use gangplan::hardware::ModelLibrary;
use gangplan::instance::load::parse_document;
use gangplan::instance::raw::RawPolicy;
use gangplan::instance::validate::validate;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Flags of `gangplan slurm plan`.
#[derive(Debug, Clone, Args)]
pub struct SlurmPlanArgs {
    /// Carry the plan out (requeue-hold, pin, release); without it nothing is changed.
    #[arg(long)]
    pub apply: bool,
    /// State dir: lock, memory of the last round, journal, metrics (created when missing).
    #[arg(long, value_name = "DIR", default_value = "/var/lib/gangplan/slurm")]
    pub state_dir: PathBuf,
    /// Plan only this partition's nodes and held jobs.
    #[arg(long, value_name = "P")]
    pub partition: Option<String>,
    /// Running jobs of this partition are preemptible (repeatable); jobs whose --comment holds
    /// the word `preemptible` are too.
    #[arg(long, value_name = "P")]
    pub preemptible_partition: Vec<String>,
    /// Policy block (YAML/JSON: time_limit, mip_gap, weights, preemption, reservations) for
    /// every round.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Hold again (with --apply) a job released this many seconds ago that has not started;
    /// for a reserved gang released ahead, S seconds after its nodes were expected to free.
    #[arg(long, value_name = "S", default_value_t = 300)]
    pub start_timeout: u64,
    /// Release the reserved gang (the first held gang that cannot start now) ahead: the round
    /// that reserves nodes for it pins it to them and releases it at once, so that Slurm
    /// starts it the moment they free, with no round in between; later rounds move the pin
    /// to nodes that free sooner, or hold it again. Skipped when the gang is not held, its
    /// nodes are free now, it asks another number of nodes than are reserved, a reserved node
    /// is pinned to another released job that has not started (one the same round starts
    /// included), or the reserved nodes span racks. Off by default: on the stream benchmark
    /// under `serve` it did not shorten waits (docs/results/stream-bench). See docs/slurm.md,
    /// "Time: reservations for blocked gangs".
    #[arg(long)]
    pub pre_release: bool,
    /// Reserve nodes for up to N blocked jobs per round, 0..=64 (sets `policy.reservations`;
    /// 0: none), in priority order as Slurm's backfill does: each blocked job plans around
    /// the nodes reserved for those ranked above it, and a job may use a reserved node only
    /// if its time limit ends it by that reservation's start. Default: the --policy file's
    /// `reservations`, else 1 (the first blocked job only). --pre-release releases the first
    /// reservation's gang only. See docs/formats.md, "Time and reservations".
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=64))]
    pub reservations: Option<u32>,
    /// Kill a Slurm command (squeue, sinfo, scontrol) still running after S seconds; the
    /// round then stops with exit code 6 and the next round finishes.
    #[arg(long, value_name = "S", default_value_t = 30.0)]
    pub slurm_timeout: f64,
    /// Write at most N reasons into admin comments per round (after the starts; the rest in
    /// the next rounds, jobs without a reason yet first). Default: all for `slurm plan`,
    /// 5 for `slurm serve`.
    #[arg(long, value_name = "N")]
    pub notes_per_round: Option<usize>,
    /// With --apply, write after each round the room that none of its held jobs can use, for
    /// gangplan's job_submit.lua to give to a new one-node GPU job at its submission, so that
    /// Slurm starts the job at once (default FILE: STATE_DIR/admission; the plugin must read
    /// the same path). See docs/slurm.md, "Admission at submission".
    #[arg(long, value_name = "FILE")]
    pub admission_file: Option<PathBuf>,
    /// Write no admission file: every GPU job the plugin holds waits for a round.
    #[arg(long, conflicts_with = "admission_file")]
    pub no_admission: bool,
    #[command(flatten)]
    pub cron: CronFlags,
}

impl SlurmPlanArgs {
    /// Where the round writes its admission file: only with --apply, and not with
    /// --no-admission.
    pub fn admission_path(&self) -> Option<PathBuf> {
        if !self.apply || self.no_admission {
            return None;
        }
        Some(
            self.admission_file
                .clone()
                .unwrap_or_else(|| self.state_dir.join("admission")),
        )
    }
}

/// Map an adapter error to its exit code: unreadable state is bad input, a failing command an
/// I/O failure with the cluster.
fn slurm_failure(e: SlurmError) -> Failure {
    let code = match &e {
        SlurmError::Parse { .. } | SlurmError::Invalid { .. } => exit::BAD_INPUT,
        SlurmError::Spawn { .. } | SlurmError::Command { .. } | SlurmError::Timeout { .. } => {
            exit::IO
        }
    };
    Failure::new(code, e.into())
}

/// Open the state dir and take its lock (a round that finds it held notes that in the
/// journal and exits 5), read the memory, take over a change the round before left under
/// way, and write the memory with this round's number before anything else: a state dir
/// that cannot be written stops the round here, before Slurm is changed.
fn open_round(dir: &Path) -> Result<(StateDir, RoundLock, Memory), Failure> {
    let state = StateDir::open(dir).map_err(cron_failure)?;
    let lock = match RoundLock::acquire(&state.lock()) {
        Ok(l) => l,
        Err(e) => {
            if let CronError::Locked { holder, .. } = &e {
                // The holder saved its round number when it started: name that round.
                let holding = Memory::load(&state.memory()).map_or(0, |m| m.round);
                note(
                    &state,
                    holding,
                    &Event::Skipped {
                        holder: holder.clone(),
                    },
                );
            }
            return Err(cron_failure(e));
        }
    };
    let mut memory = Memory::load(&state.memory()).map_err(cron_failure)?;
    let interrupted = journal::interrupted(&state.journal());
    if let Some(change) = &interrupted {
        take_over(change, &mut memory);
    }
    memory.round += 1;
    memory.save(&state.memory()).map_err(|e| {
        Failure::new(
            exit::IO,
            anyhow::anyhow!(
                "the state dir cannot be written, so nothing was changed in Slurm: {e}"
            ),
        )
    })?;
    if let Some(change) = interrupted {
        let ev = Event::Interrupted {
            job: change["job"].as_str().unwrap_or_default().to_string(),
            interrupted_round: change["round"].as_u64().unwrap_or(0),
            change,
        };
        note(&state, memory.round, &ev);
    }
    Ok((state, lock, memory))
}

/// The round before was interrupted during `change`: log it, and treat a start that may have
/// gone through as released (its nodes stay reserved while it is pending; a job still held is
/// planned afresh).
fn take_over(change: &serde_json::Value, memory: &mut Memory) {
    tracing::warn!(change = %change, "the round before was interrupted during this change; reading the cluster afresh");
    if let Ok(Action::Start {
        job,
        nodes,
        expected_in,
        ..
    }) = serde_json::from_value::<Action>(change.clone())
    {
        let at = change["time"].as_i64().unwrap_or_else(unix_now);
        memory
            .released
            .insert(job, Released::expected_after(nodes, at, expected_in));
    }
}

/// Append a note about the cron's own rounds to the journal (best effort: logged on failure).
fn note(state: &StateDir, round: u64, ev: &Event) {
    let entry = Entry {
        time: unix_now(),
        round,
        action: ev,
        outcome: "noted",
        error: None,
    };
    if let Err(e) = journal::append_line(&state.journal(), &entry) {
        tracing::error!(error = %e, "could not write the journal");
    }
}

/// One round against `cli`.
pub fn plan(a: SlurmPlanArgs, cli: &dyn SlurmCli) -> Result<i32, Failure> {
    plan_after_ends(a, cli, &BTreeSet::new())
}

/// One round against `cli` that counts the completing jobs of `ended` (told by their Epilog,
/// `slurm serve --listen`) as gone.
pub fn plan_after_ends(
    a: SlurmPlanArgs,
    cli: &dyn SlurmCli,
    ended: &BTreeSet<String>,
) -> Result<i32, Failure> {
    let started = Instant::now();
    init_logging(a.cron.log_format);
    check_flags(&a.cron)?;
    if let Some(p) = &a.partition {
        gangplan::adapters::slurm::cli::check_node_name(p).map_err(slurm_failure)?;
    }
    let mut policy: Option<RawPolicy> = match &a.policy {
        Some(path) => {
            let text = gangplan::instance::load::read_document(path).map_err(Failure::from_lib)?;
            Some(parse_document(&text, &path.display().to_string()).map_err(Failure::from_lib)?)
        }
        None => None,
    };
    if let Some(n) = a.reservations {
        policy.get_or_insert_with(RawPolicy::default).reservations = Some(n.into());
    }
    let (state, _lock, mut memory) = open_round(&a.state_dir)?;
    let round_no = memory.round;
    let now = unix_now();
    let admission = a.admission_path();
    let mut snap = read_withdrawn(cli, now, admission.as_deref()).map_err(slurm_failure)?;
    let forgotten = snap.forget_ended(ended);
    if !forgotten.is_empty() {
        tracing::info!(jobs = %forgotten.join(","), "ended (told by their Epilog): their GPUs count free");
    }
    let site = snap.site.describe();
    tracing::info!(policy = %site, "site policy");
    let conv = Conventions {
        partition: a.partition.clone(),
        preemptible_partitions: a.preemptible_partition.iter().cloned().collect(),
        policy,
    };
    // Jobs the plugin admitted that have not started are kept like the round's own releases.
    for (id, admitted) in admitted_pending(&snap) {
        memory.released.entry(id).or_insert(admitted);
    }
    let round = build_round(&snap, &conv, &memory.released).map_err(slurm_failure)?;
    // Forget released jobs that started (or vanished); keep those still starting.
    memory.released.retain(|id, _| round.in_flight.contains(id));
    for (id, why) in &round.ignored {
        tracing::info!(job = %id, reason = %why, "held job not planned");
    }
    let mut inst = validate(&round.raw, &ModelLibrary::builtin()).map_err(|issues| {
        Failure::from_lib(gangplan::Error::Input {
            source_name: "the Slurm cluster's state".into(),
            issues,
        })
    })?;
    if let Some(t) = a.cron.time_limit {
        inst.policy.time_limit = t;
    }
    tracing::info!(
        round = round_no,
        nodes = inst.nodes.len(),
        running = inst.running.len(),
        held = inst.pending.len(),
        in_flight = round.in_flight.len(),
        "read cluster state"
    );
    let planned =
        plan_with_memory(inst, a.cron.planner, &memory, started).map_err(Failure::from_lib)?;
    log_planned(&planned);
    let plan = &planned.plan;
    let actions = round_actions(
        &round,
        plan,
        &memory.released,
        now,
        a.start_timeout,
        a.notes_per_round,
        a.pre_release,
    )
    .map_err(|e| {
        Failure::new(
            exit::INTERNAL,
            anyhow::anyhow!("the plan does not match the cluster (a bug): {e}"),
        )
    })?;
    print_round(round_no, a.apply, plan, &actions, &round.ignored);
    println!("policy: {site}");
    // The room the round leaves is offered before its starts go out: a submission admitted
    // while they do no longer lands on a node the round is starting a gang on.
    if let Some(path) = admission {
        write_admission(&path, round_no, &snap, &round, plan);
    }
    let applied = if a.apply {
        apply_actions(
            &actions,
            cli,
            &state.journal(),
            round_no,
            &mut memory.released,
        )
    } else {
        Applied::default()
    };
    memory.placements = Memory::placements_of(plan);
    let mut metrics = RoundMetrics::from_plan(plan);
    metrics.kept = planned.kept.len() as u32;
    metrics.applied = a.apply;
    metrics.apply_failures = applied.failures;
    metrics.timestamp = unix_now();
    metrics.round_seconds = started.elapsed().as_secs_f64();
    emit_outputs(&a.cron, plan, state.root())?;
    save_round(&state, &memory, plan, &metrics)?;
    match applied.first_error {
        Some(e) => Err(Failure::new(
            exit::IO,
            anyhow::anyhow!("apply stopped (re-run to finish): {e}"),
        )),
        None => Ok(exit::OK),
    }
}

/// Write the round's admission file (see [`gangplan::adapters::slurm::admission`]). A file
/// that cannot be written is logged, not fatal: the plugin finds the old one stale and holds.
fn write_admission(
    path: &Path,
    round_no: u64,
    snap: &Snapshot,
    round: &gangplan::adapters::slurm::SlurmRound,
    plan: &gangplan::plan::Plan,
) {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let admission = Admission {
        generation: format!("{round_no}.{now_ms}"),
        time: unix_now(),
        read: snap.now,
        room: offered_room(snap, round, plan),
    };
    match admission.write(path) {
        Ok(()) => tracing::debug!(nodes = admission.room.len(), "admission file written"),
        Err(e) => tracing::error!(error = %e, "could not write the admission file"),
    }
}

/// Print the round: the summary line, each action (with the reason of a preemption), the
/// jobs left pending and the held jobs not planned.
fn print_round(
    round_no: u64,
    apply: bool,
    plan: &gangplan::plan::Plan,
    actions: &[Action],
    ignored: &[(String, String)],
) {
    let verb = if apply { "doing" } else { "would" };
    println!(
        "round {round_no}: {} to start, {} to preempt, {} left pending{}",
        plan.placements.len(),
        plan.preemptions.len(),
        plan.pending.len(),
        if apply {
            ""
        } else {
            " (dry run: nothing changed; --apply to carry it out)"
        }
    );
    // Notes (reasons in admin comments) are journaled and logged; the pending lines say the same.
    for act in actions.iter().filter(|a| !matches!(a, Action::Note { .. })) {
        let why = match act {
            Action::Preempt { job } => plan
                .preemptions
                .iter()
                .find(|p| &p.job == job)
                .map(|p| format!(": {}", p.reason))
                .unwrap_or_default(),
            _ => String::new(),
        };
        println!("{verb}: {}{why}", act.describe());
    }
    for p in &plan.pending {
        println!("pending: job {}: {}", p.job, p.reason);
    }
    for (id, why) in ignored {
        println!("ignored: held job {id}: {why}");
    }
}

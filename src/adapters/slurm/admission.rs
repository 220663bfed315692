//! The admission file: the room a round leaves that none of its held jobs can use, written for
//! gangplan's job_submit/lua plugin (scripts/job_submit.lua), which gives it to a new one-node
//! GPU job at its submission so that Slurm starts the job inside its submission, without
//! waiting for a round. See docs/slurm.md, "Admission at submission".
//!
//! **What is offered**, per node in scope: the GPUs that no running job, no job the round
//! starts and no job released or admitted earlier that has not started yet holds, with the
//! CPUs and memory left likewise. Left out: nodes that are down, drained or draining; nodes of
//! the round's reservations for blocked gangs; and every node where a job the round left
//! waiting would fit its GPUs per node (that room is the waiting job's: a newcomer ranks below
//! it). A node with no GPU left is not listed.
//!
//! **The format** (one record a line, fields separated by single spaces):
//!
//! ```text
//! gangplan-admission 1
//! generation 12.1796226779123
//! time 1796226779
//! read 1796226778
//! node node3 gpus 4 cpus 28 mem 64000 partitions gpu,gangplan
//! ```
//!
//! `generation`: a token that changes with every round (the plugin keeps what it gave away per
//! generation); `time`: when the offer was last known good (Unix seconds; `slurm serve` stamps
//! it again at every look that finds nothing changed), the plugin ignores an older file;
//! `read`: when the round read the cluster (a job admitted from that second on may be missing
//! from the round, so the plugin keeps counting it); `node NAME gpus G [cpus C] [mem M]
//! [partitions P,Q]`: the room on one node (CPUs and memory, MB, only where Slurm reports
//! them) and the partitions it belongs to (the plugin admits a job only to a node of its
//! partition).

use super::cli::SlurmCli;
use super::convert::{SlurmRound, ADMITTED_NOTE};
use super::parse::{SlurmJob, Snapshot};
use super::SlurmError;
use crate::cron::memory::Released;
use crate::cron::CronError;
use crate::plan::Plan;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// First line of the admission file.
pub const ADMISSION_FORMAT: &str = "gangplan-admission 1";

/// Room on one node.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Room {
    /// Free GPUs.
    pub gpus: u32,
    /// Free CPUs, where Slurm reports them.
    pub cpus: Option<u32>,
    /// Free memory, MB, where Slurm reports it.
    pub memory_mb: Option<u64>,
    /// The partitions the node belongs to (a job is admitted only to a node of its own).
    pub partitions: Vec<String>,
}

/// One round's offer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// Changes with every round.
    pub generation: String,
    /// When the offer was last known good (Unix seconds).
    pub time: i64,
    /// When the round read the cluster (Unix seconds).
    pub read: i64,
    /// Room per node.
    pub room: BTreeMap<String, Room>,
}

impl Admission {
    /// The file's text.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "{ADMISSION_FORMAT}\ngeneration {}\ntime {}\nread {}\n",
            self.generation, self.time, self.read
        );
        for (node, r) in &self.room {
            out.push_str(&format!("node {node} gpus {}", r.gpus));
            if let Some(c) = r.cpus {
                out.push_str(&format!(" cpus {c}"));
            }
            if let Some(m) = r.memory_mb {
                out.push_str(&format!(" mem {m}"));
            }
            if !r.partitions.is_empty() {
                out.push_str(&format!(" partitions {}", r.partitions.join(",")));
            }
            out.push('\n');
        }
        out
    }

    /// Write the file atomically (temporary file, then rename).
    pub fn write(&self, path: &Path) -> Result<(), CronError> {
        CronError::write(path, self.to_text().as_bytes())
    }
}

/// The cluster as a round reads it, with the offer at `admission` withdrawn first (the file
/// removed; the round writes its own offer once it has planned). A job admitted from the
/// last round's offer while this round reads and plans is missing from its view, and a gang
/// the round starts on that node then waits in Slurm until the admitted job ends (seen on the
/// stream benchmark: a 4 x 8 gang waited 31 s behind a one-GPU job admitted 30 ms before the
/// gang's release). With the offer withdrawn before the read, every admission the round does
/// not see comes after its offer, which leaves out the nodes it starts jobs on. A file that
/// cannot be removed is logged and the round goes on (the window stays as it was).
pub fn read_withdrawn(
    cli: &dyn SlurmCli,
    now: i64,
    admission: Option<&Path>,
) -> Result<Snapshot, SlurmError> {
    if let Some(path) = admission {
        match std::fs::remove_file(path) {
            Ok(()) => tracing::debug!(path = %path.display(), "admission offer withdrawn"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                let e = CronError::io(path, e);
                tracing::error!(error = %e, "could not withdraw the admission offer");
            }
        }
    }
    Snapshot::read(cli, now)
}

/// Stamp the admission file at `path` with a new `time` (the offer still holds: nothing changed
/// since its round); a missing file stays missing, and a file already stamped `time` is not
/// written again.
pub fn restamp(path: &Path, time: i64) -> Result<(), CronError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(CronError::io(path, e)),
    };
    let stamped: String = text
        .lines()
        .map(|l| {
            if l.starts_with("time ") {
                format!("time {time}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    // `serve` looks every 0.2 s and the stamp is whole seconds: most looks change nothing.
    if stamped == text {
        return Ok(());
    }
    CronError::write(path, stamped.as_bytes())
}

/// The room the round leaves for newcomers (see the module docs): the round read from `snap`,
/// its plan, its instance's nodes and holders in `round`.
pub fn offered_room(snap: &Snapshot, round: &SlurmRound, plan: &Plan) -> BTreeMap<String, Room> {
    let gpus = gpus_left(round, plan);
    let withheld = withheld_nodes(round, plan, &gpus);
    let starting: BTreeSet<&str> = plan
        .placements
        .iter()
        .map(|p| p.job.as_str())
        .chain(round.in_flight.iter().map(String::as_str))
        .collect();
    let unstarted = unstarted_use(snap, round, plan, &starting);
    snap.nodes
        .iter()
        .filter_map(|n| {
            let g = *gpus.get(&n.name)?;
            if g == 0 || withheld.contains(n.name.as_str()) {
                return None;
            }
            let (cpus, mem) = unstarted.get(&n.name).copied().unwrap_or_default();
            let room = Room {
                gpus: g,
                cpus: n
                    .cpus
                    .map(|(c, a)| c.saturating_sub(a).saturating_sub(cpus)),
                memory_mb: n
                    .memory_mb
                    .map(|(m, a)| m.saturating_sub(a).saturating_sub(mem)),
                partitions: n.partitions.clone(),
            };
            Some((n.name.clone(), room))
        })
        .collect()
}

/// GPUs left per usable node in scope after the round: its GPUs less those of the holders
/// (running jobs and in-flight ones) and of the round's starts.
fn gpus_left(round: &SlurmRound, plan: &Plan) -> BTreeMap<String, u32> {
    let mut left: BTreeMap<String, u32> = round
        .raw
        .nodes
        .iter()
        .filter(|n| n.down.is_empty())
        .map(|n| (n.name.clone(), n.gpus.unwrap_or(0) as u32))
        .collect();
    let held = round.raw.running.iter().flat_map(|r| &r.gpus);
    let started = plan.placements.iter().flat_map(|p| &p.gpus);
    for (node, n) in held
        .map(|(n, g)| (n, g.len()))
        .chain(started.map(|(n, g)| (n, g.len())))
    {
        if let Some(l) = left.get_mut(node) {
            *l = l.saturating_sub(n as u32);
        }
    }
    left
}

/// Nodes whose room is not offered: those of the round's reservations, and those where a job
/// the round left waiting fits its GPUs per node into the GPUs left.
fn withheld_nodes<'p>(
    round: &SlurmRound,
    plan: &'p Plan,
    gpus: &'p BTreeMap<String, u32>,
) -> BTreeSet<&'p str> {
    let waiting: BTreeSet<&str> = plan.pending.iter().map(|p| p.job.as_str()).collect();
    let smallest_need = round
        .raw
        .pending
        .iter()
        .filter(|p| waiting.contains(p.id.as_str()))
        .map(|p| p.gpus_per_node.unwrap_or(p.gpus))
        .min();
    let reserved = plan
        .reservation
        .iter()
        .chain(&plan.reservations)
        .flat_map(|r| &r.nodes);
    let fitting = gpus
        .iter()
        .filter(move |(_, &g)| smallest_need.is_some_and(|need| need <= g as u64))
        .map(|(n, _)| n);
    reserved.chain(fitting).map(String::as_str).collect()
}

/// CPUs and memory (MB) per node of the jobs that will start there but that Slurm has not
/// allocated yet (`starting`: the round's starts and in-flight jobs), which `sinfo` does not
/// count yet.
fn unstarted_use(
    snap: &Snapshot,
    round: &SlurmRound,
    plan: &Plan,
    starting: &BTreeSet<&str>,
) -> BTreeMap<String, (u32, u64)> {
    let nodes_of = |id: &str| -> Vec<String> {
        let planned = plan.placements.iter().find(|p| p.job == id);
        let held = round.raw.running.iter().find(|r| r.id == id);
        planned
            .map(|p| p.gpus.keys().cloned().collect())
            .or_else(|| held.map(|r| r.gpus.keys().cloned().collect()))
            .unwrap_or_default()
    };
    let mut used: BTreeMap<String, (u32, u64)> = BTreeMap::new();
    for job in snap
        .jobs
        .iter()
        .filter(|j| starting.contains(j.id.to_string().as_str()))
    {
        let (cpus, mem) = per_node_ask(job);
        for node in nodes_of(&job.id.to_string()) {
            let u = used.entry(node).or_default();
            *u = (u.0 + cpus, u.1 + mem);
        }
    }
    used
}

/// CPUs and memory (MB) a job asks per node (its CPUs split evenly over its nodes).
fn per_node_ask(job: &SlurmJob) -> (u32, u64) {
    let cpus = job.cpus.div_ceil(job.node_count.max(1));
    (cpus, job.memory_per_node_mb.unwrap_or(0))
}

/// Jobs the plugin admitted at submission that Slurm has not started yet (pending, not held,
/// with the plugin's note): each as released at its submission, to the node it was pinned to.
pub fn admitted_pending(snap: &Snapshot) -> BTreeMap<String, Released> {
    snap.jobs
        .iter()
        .filter(|j| j.state == "PENDING" && !j.is_held())
        .filter_map(|j| {
            let noted = j.admin_comment.strip_prefix(ADMITTED_NOTE)?;
            let nodes = if j.required_nodes.is_empty() {
                vec![noted.trim().to_string()]
            } else {
                j.required_nodes.clone()
            };
            Some((j.id.to_string(), Released::new(nodes, j.submit_time, None)))
        })
        .collect()
}

//! A [`Snapshot`] of the cluster -> the round's instance, with these conventions (also in
//! docs/slurm.md):
//!
//! - **Nodes**: every node of `sinfo` (of `--partition` when given) with GPUs in its GRES; rack
//!   = its level-0 switch, pod = the switch above. A node that is down, drained or draining
//!   keeps its running jobs but all its GPUs are marked `down`, so nothing new starts there.
//! - **Pending gangs**: jobs held by their user (`sbatch --hold`; `JobHeldUser`) that ask
//!   `-N k --gres=gpu:g` (k nodes with g GPUs each: `gpus: k*g, gpus_per_node: g`) or
//!   `-N 1 --gpus=g`. Other held jobs are left alone and listed as ignored.
//! - **Running jobs**: `RUNNING`, `COMPLETING`, `CONFIGURING`, `SUSPENDED` jobs, with their GPU
//!   indices from `gres_detail`. Jobs the cron released that Slurm has not started yet are
//!   reserved as running (non-preemptible) on the nodes they were pinned to; a gang released
//!   ahead of its reservation is planned again instead, as a held gang that knows its pin
//!   ([`HeldJob::released_to`]), so a round that finds room for it sooner elsewhere moves it.
//! - **Time**: a holding job's `ends_in` is its `end_time` (start plus `--time`) less now; a
//!   released job not started yet ends at most its time limit from now; a held gang's
//!   `time_limit` is its `--time`. A job without a time limit (Slurm shows a year, see
//!   [`super::parse::UNLIMITED_MINUTES`]) has neither: it is planned as never ending.
//! - **Priority**: Slurm writes 0 as the priority of every held job (a hold *is* priority 0),
//!   so its number cannot rank gangs. The rank key is (PriorityTier of the job's partition,
//!   then its QOS priority (0 without slurmdbd), then lower `nice` first); the distinct keys
//!   of the round, sorted, are numbered 0, 1, 2... (dense ranks): deterministic, small, and
//!   the same for running and held jobs.
//! - **Tenant**: the job's account (`default` when empty); its weight is 1 without slurmdbd,
//!   and with it the fair-share weight of [`super::site`] (1 for an account `sshare` omits).
//! - **Preemptible**: a running job in a partition named by `--preemptible-partition`; without
//!   slurmdbd also one whose `--comment` holds the word `preemptible`; with slurmdbd instead
//!   one that the controller's own rule lets be preempted (`preempt/qos`: another QOS lists
//!   its QOS in `Preempt`; `preempt/partition_prio`: a partition of higher tier holds one of
//!   its nodes and its partition's `PreemptMode` is not `OFF`).

use super::cli::{check_job_id, check_node_name};
use super::parse::{gpu_gres, GpuGres, SlurmJob, SlurmNode, Snapshot};
use super::SlurmError;
use crate::cron::memory::Released;
use crate::instance::raw::{
    GpuTypes, RawInstance, RawNode, RawPending, RawPolicy, RawRunning, RawTenant,
};
use std::collections::{BTreeMap, BTreeSet};

/// How Slurm's facts map onto the planner's (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Conventions {
    /// Plan only this partition's nodes and held jobs.
    pub partition: Option<String>,
    /// Running jobs of these partitions are preemptible.
    pub preemptible_partitions: BTreeSet<String>,
    /// Policy block for the instance (time limit, gap, weights).
    pub policy: Option<RawPolicy>,
}

/// The word in a job's `--comment` that makes it preemptible.
pub const PREEMPTIBLE_WORD: &str = "preemptible";

/// A held job the plan may start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldJob {
    /// Nodes the job asks for (`-N`).
    pub node_count: u32,
    /// Whether a begin time must be cleared on release (the job was requeued, or its
    /// eligible time lies in the future).
    pub clear_begin: bool,
    /// Its admin comment now (gangplan writes its reason there, see [`NOTE_PREFIX`]).
    pub admin_comment: String,
    /// Not held but released ahead of its reservation and pinned to these nodes, not started
    /// yet: a start there is already under way; a start elsewhere moves the pin.
    pub released_to: Option<Vec<String>>,
}

/// How gangplan's notes in a job's admin comment begin. gangplan overwrites or clears an
/// admin comment only when it is empty or begins so: operators' own comments stay.
pub const NOTE_PREFIX: &str = "gangplan:";

/// How the admin comment of a job that gangplan's job_submit/lua plugin admitted at submission
/// begins (the node follows): kept when the job runs, as the record of how it started.
pub const ADMITTED_NOTE: &str = "gangplan: admitted at submission to ";

/// Whether gangplan may write a job's admin comment (empty, or one of gangplan's notes).
pub fn note_is_ours(admin_comment: &str) -> bool {
    admin_comment.is_empty() || admin_comment.starts_with(NOTE_PREFIX)
}

/// The round read from Slurm.
#[derive(Debug, Clone)]
pub struct SlurmRound {
    /// The instance to plan.
    pub raw: RawInstance,
    /// Held jobs the plan may start, by id.
    pub held: BTreeMap<String, HeldJob>,
    /// Held jobs left alone, with why.
    pub ignored: Vec<(String, String)>,
    /// Running job ids the plan may preempt through Slurm (in-flight reservations excluded).
    pub running: BTreeSet<String>,
    /// Released jobs still waiting to start, kept as reservations (where their nodes have
    /// GPUs free for them).
    pub in_flight: Vec<String>,
    /// Every node name of the cluster (for `ExcNodeList`).
    pub all_nodes: Vec<String>,
    /// Running jobs whose admin comment still holds a gangplan note (to clear).
    pub noted_running: Vec<String>,
}

const HOLDING_STATES: &[&str] = &["RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"];

fn in_partition(job: &SlurmJob, p: &Option<String>) -> bool {
    p.as_ref()
        .is_none_or(|p| job.partition.split(',').any(|x| x == p))
}

fn tenant_of(job: &SlurmJob) -> String {
    if job.account.is_empty() {
        "default".into()
    } else {
        job.account.clone()
    }
}

fn is_preemptible(job: &SlurmJob, conv: &Conventions, snap: &Snapshot) -> bool {
    let listed = job
        .partition
        .split(',')
        .any(|p| conv.preemptible_partitions.contains(p));
    if !snap.site.from_accounting {
        return listed
            || job
                .comment
                .split(|c: char| c.is_whitespace() || c == ',' || c == ';')
                .any(|w| w.eq_ignore_ascii_case(PREEMPTIBLE_WORD));
    }
    listed
        || snap.site.qos_preemptible(&job.qos)
        || (snap.site.partition_preemption() && below_a_tier_on_its_nodes(job, snap))
}

/// Slurm's `preempt/partition_prio` rule: a job whose partition (not `PreemptMode=OFF`) has a
/// lower `PriorityTier` than another partition holding one of its nodes.
fn below_a_tier_on_its_nodes(job: &SlurmJob, snap: &Snapshot) -> bool {
    let Some(own) = snap
        .partitions
        .get(job.partition.split(',').next().unwrap_or(""))
    else {
        return false;
    };
    own.preempt_mode != "OFF"
        && snap.partitions.values().any(|p| {
            p.priority_tier > own.priority_tier && job.nodes.iter().any(|n| p.nodes.contains(n))
        })
}

/// The gang shape of a held job: (gpus, gpus_per_node, gpu type), or why it is not planned.
fn gang_shape(job: &SlurmJob) -> Result<(u64, Option<u64>, Option<String>), String> {
    let per_node = gpu_gres(&job.tres_per_node).map_err(|e| e.to_string())?;
    let per_job = gpu_gres(&job.tres_per_job).map_err(|e| e.to_string())?;
    let gtype = per_node
        .iter()
        .chain(&per_job)
        .find_map(|g| g.gpu_type.clone());
    let g: u64 = per_node.iter().map(|g| g.count as u64).sum();
    if g > 0 {
        return Ok((g * job.node_count as u64, Some(g), gtype));
    }
    let k: u64 = per_job.iter().map(|g| g.count as u64).sum();
    if k > 0 {
        if job.node_count == 1 {
            return Ok((k, None, gtype));
        }
        return Err(format!(
            "asks --gpus={k} over {} nodes without a per-node shape; submit it as -N {} --gres=gpu:G",
            job.node_count, job.node_count
        ));
    }
    Err("asks no GPUs; gangplan plans GPU gangs only".into())
}

/// Build the round from a snapshot. `released`: jobs this cron released earlier, with the
/// nodes they were pinned to; those Slurm has not started yet are kept as reservations, but
/// a gang released ahead of its reservation ([`Released::expected_start`]) is planned again.
pub fn build_round(
    snap: &Snapshot,
    conv: &Conventions,
    released: &BTreeMap<String, Released>,
) -> Result<SlurmRound, SlurmError> {
    let all_nodes: Vec<String> = snap.nodes.iter().map(|n| n.name.clone()).collect();
    for n in &all_nodes {
        check_node_name(n)?;
    }
    let (nodes, gpus_of) = nodes_in_scope(snap, conv)?;
    let mut b = RoundBuilder {
        snap,
        conv,
        ranks: Ranks::new(snap, released),
        gpus_of,
        claimed: BTreeMap::new(),
        tenants: BTreeSet::new(),
    };
    let (mut running, running_ids) = b.running_jobs()?;
    let in_flight = b.in_flight_reservations(released, &mut running);
    let HeldGangs {
        pending,
        held,
        ignored,
    } = b.held_gangs(released)?;
    let raw = RawInstance {
        nodes,
        tenants: raw_tenants(b.tenants, snap),
        running,
        pending,
        policy: conv.policy.clone(),
    };
    Ok(SlurmRound {
        raw,
        held,
        ignored,
        running: running_ids,
        in_flight,
        all_nodes,
        noted_running: noted_running(snap),
    })
}

/// The instance's nodes: those of `sinfo` in scope (of `--partition` when given) with GPUs in
/// their GRES, and each one's GPU count by name. An error when there is none.
fn nodes_in_scope(
    snap: &Snapshot,
    conv: &Conventions,
) -> Result<(Vec<RawNode>, BTreeMap<String, u32>), SlurmError> {
    let mut nodes = Vec::new();
    let mut gpus_of: BTreeMap<String, u32> = BTreeMap::new();
    for n in snap
        .nodes
        .iter()
        .filter(|n| node_in_partition(n, snap, conv))
    {
        let gres = gpu_gres(&n.gres)?;
        let count: u32 = gres.iter().map(|g| g.count).sum();
        if count == 0 {
            continue;
        }
        gpus_of.insert(n.name.clone(), count);
        nodes.push(raw_node(n, snap, &gres, count));
    }
    if nodes.is_empty() {
        return Err(SlurmError::Parse {
            what: "sinfo --json".into(),
            message: match &conv.partition {
                Some(p) => format!("no node with GPUs in partition {p:?}"),
                None => "no node with GPUs".into(),
            },
        });
    }
    Ok((nodes, gpus_of))
}

/// Whether a node belongs to `--partition` (every node does without one): the partition lists
/// it, or the node lists the partition.
fn node_in_partition(n: &SlurmNode, snap: &Snapshot, conv: &Conventions) -> bool {
    let Some(p) = &conv.partition else {
        return true;
    };
    let listed = snap
        .partitions
        .get(p)
        .is_some_and(|x| x.nodes.contains(&n.name));
    listed || n.partitions.contains(p)
}

/// A node with `count` GPUs: its GPU type when the GRES names exactly one, rack and pod from the
/// topology, and every GPU down when the node is not usable (down, drained or draining).
fn raw_node(n: &SlurmNode, snap: &Snapshot, gres: &[GpuGres], count: u32) -> RawNode {
    let types: BTreeSet<&String> = gres.iter().filter_map(|g| g.gpu_type.as_ref()).collect();
    let gpu_type = if types.len() == 1 {
        types.into_iter().next().cloned()
    } else {
        None
    };
    let place = snap.places.get(&n.name).cloned().unwrap_or_default();
    RawNode {
        name: n.name.clone(),
        gpus: Some(count as u64),
        gpu_type,
        rack: place.rack,
        pod: place.pod,
        down: if n.usable() {
            Vec::new()
        } else {
            (0..count as u64).collect()
        },
        ..Default::default()
    }
}

/// Dense priority ranks over every job the round will hold (see the module docs): the
/// distinct rank keys, sorted, numbered 0, 1, 2...
struct Ranks<'s> {
    snap: &'s Snapshot,
    keys: BTreeSet<(i64, i64, i64)>,
}

impl<'s> Ranks<'s> {
    /// The keys of the holding jobs, the held ones and the released ones not started yet.
    fn new(snap: &'s Snapshot, released: &BTreeMap<String, Released>) -> Self {
        let relevant = |j: &SlurmJob| {
            HOLDING_STATES.contains(&j.state.as_str())
                || j.is_held()
                || (j.state == "PENDING" && released.contains_key(&j.id.to_string()))
        };
        let keys = snap
            .jobs
            .iter()
            .filter(|j| relevant(j))
            .map(|j| rank_key(snap, j))
            .collect();
        Ranks { snap, keys }
    }

    /// A job's rank (0 for a key not among the round's).
    fn rank(&self, job: &SlurmJob) -> i64 {
        let key = rank_key(self.snap, job);
        self.keys.iter().position(|k| *k == key).unwrap_or(0) as i64
    }
}

/// The rank key: (the highest PriorityTier of the job's partitions (1 when none is known), its
/// QOS priority, then lower `nice` first).
fn rank_key(snap: &Snapshot, job: &SlurmJob) -> (i64, i64, i64) {
    let tier = job
        .partition
        .split(',')
        .filter_map(|p| snap.partitions.get(p))
        .map(|p| p.priority_tier)
        .max()
        .unwrap_or(1);
    (tier, snap.site.qos_priority(&job.qos), -job.nice)
}

/// The round's jobs as they are read: GPUs claimed so far on each node in scope, and the
/// tenants seen.
struct RoundBuilder<'s> {
    snap: &'s Snapshot,
    conv: &'s Conventions,
    ranks: Ranks<'s>,
    /// GPU count of each node in scope.
    gpus_of: BTreeMap<String, u32>,
    /// GPU indices taken on each node.
    claimed: BTreeMap<String, BTreeSet<u32>>,
    tenants: BTreeSet<String>,
}

impl RoundBuilder<'_> {
    /// The holding jobs with GPUs on nodes in scope, and their ids. GPU indices come from
    /// `gres_detail`; a node whose indices Slurm did not report gets its lowest free GPUs, once
    /// every reported index is claimed.
    fn running_jobs(&mut self) -> Result<(Vec<RawRunning>, BTreeSet<String>), SlurmError> {
        let mut running = Vec::new();
        let mut running_ids = BTreeSet::new();
        let mut missing_idx: Vec<(usize, String, u32)> = Vec::new();
        let snap = self.snap;
        for job in snap
            .jobs
            .iter()
            .filter(|j| HOLDING_STATES.contains(&j.state.as_str()))
        {
            let id = job.id.to_string();
            let gpus = self.reported_gpus(job, &id, running.len(), &mut missing_idx)?;
            if gpus.is_empty() && !missing_idx.iter().any(|m| m.0 == running.len()) {
                continue;
            }
            running_ids.insert(id.clone());
            running.push(RawRunning {
                id,
                tenant: Some(self.tenant(job)),
                priority: self.ranks.rank(job),
                preemptible: job.state == "RUNNING" && is_preemptible(job, self.conv, snap),
                gpus,
                ends_in: ends_in(job, snap.now),
                ..Default::default()
            });
        }
        // Jobs whose indices Slurm did not report: lowest unclaimed GPUs of their nodes.
        // A node with none left free adds nothing: a job lists only nodes where it holds GPUs.
        for (k, node, count) in missing_idx {
            let picked = take_free(&mut self.claimed, &node, self.gpus_of[&node], count);
            tracing::warn!(job = %running[k].id, node = %node, gpus = ?picked, "GPU indices not reported; assuming the lowest free ones");
            if !picked.is_empty() {
                running[k].gpus.insert(node, picked);
            }
        }
        running.retain(|r| !r.gpus.is_empty());
        Ok((running, running_ids))
    }

    /// A holding job's GPUs by node, from `gres_detail`, claimed. A node in scope without
    /// reported indices, for a job that asks GPUs per node, goes to `missing` as (`k`, node,
    /// GPUs per node).
    fn reported_gpus(
        &mut self,
        job: &SlurmJob,
        id: &str,
        k: usize,
        missing: &mut Vec<(usize, String, u32)>,
    ) -> Result<BTreeMap<String, Vec<u64>>, SlurmError> {
        let mut gpus = BTreeMap::new();
        let per_node: u32 = gpu_gres(&job.tres_per_node)?.iter().map(|g| g.count).sum();
        for (i, node) in job.nodes.iter().enumerate() {
            if !self.gpus_of.contains_key(node) {
                continue;
            }
            let detail = match job.gres_detail.get(i) {
                Some(d) => gpu_gres(d)?,
                None => Vec::new(),
            };
            match reported_indices(&detail) {
                Some(idx) => {
                    let mine = self.claim(id, node, idx);
                    if !mine.is_empty() {
                        gpus.insert(node.clone(), mine);
                    }
                }
                None if per_node > 0 => missing.push((k, node.clone(), per_node)),
                None => {}
            }
        }
        Ok(gpus)
    }

    /// Claim the GPU indices Slurm reports for job `id` on a node; an index out of range or
    /// already claimed is ignored (with a warning).
    fn claim(&mut self, id: &str, node: &String, idx: Vec<u32>) -> Vec<u64> {
        let total = self.gpus_of[node];
        let taken = self.claimed.entry(node.clone()).or_default();
        let mut mine = Vec::new();
        for g in idx {
            if g < total && taken.insert(g) {
                mine.push(g as u64);
            } else {
                tracing::warn!(job = %id, node = %node, gpu = g, "GPU index out of range or held twice; ignored");
            }
        }
        mine
    }

    /// Released jobs that have not started: reservations (non-preemptible running jobs) on the
    /// lowest free GPUs of the nodes they were pinned to, added to `running` (none where those
    /// nodes have no GPU free), except gangs released ahead, which [`Self::held_gangs`] plans
    /// again. Returns the ids of all of them.
    fn in_flight_reservations(
        &mut self,
        released: &BTreeMap<String, Released>,
        running: &mut Vec<RawRunning>,
    ) -> Vec<String> {
        let mut in_flight = Vec::new();
        let snap = self.snap;
        for job in snap
            .jobs
            .iter()
            .filter(|j| j.state == "PENDING" && !j.is_held())
        {
            let id = job.id.to_string();
            let Some(release) = released.get(&id) else {
                continue;
            };
            // Still waiting to start (and held again after the start timeout), also when its
            // nodes have no GPU free for it now.
            in_flight.push(id.clone());
            if release.is_ahead() {
                continue;
            }
            let pinned = &release.nodes;
            let Ok((_, Some(per), _)) = gang_shape(job).map(|(g, p, t)| (g, p.or(Some(g)), t))
            else {
                continue;
            };
            let mut gpus = BTreeMap::new();
            for node in pinned.iter().filter(|n| self.gpus_of.contains_key(*n)) {
                gpus.insert(
                    node.clone(),
                    take_free(&mut self.claimed, node, self.gpus_of[node], per as u32),
                );
            }
            gpus.retain(|_, v: &mut Vec<u64>| !v.is_empty());
            if gpus.is_empty() {
                continue;
            }
            running.push(RawRunning {
                id,
                tenant: Some(self.tenant(job)),
                priority: self.ranks.rank(job),
                preemptible: false,
                gpus,
                // Not started yet: it ends at most its time limit from now.
                ends_in: job.time_limit.map(|t| t as f64),
                ..Default::default()
            });
        }
        in_flight
    }

    /// The held jobs of the partition, and the gangs released ahead that have not started
    /// (`released`): gangs to plan (with what releasing each needs), and the ones left alone
    /// with why.
    fn held_gangs(
        &mut self,
        released: &BTreeMap<String, Released>,
    ) -> Result<HeldGangs, SlurmError> {
        let mut out = HeldGangs::default();
        let snap = self.snap;
        // A gang released ahead and still pending: the nodes it is pinned to.
        let ahead = |j: &SlurmJob| {
            if j.state != "PENDING" || j.is_held() {
                return None;
            }
            let r = released.get(&j.id.to_string())?;
            r.is_ahead().then(|| r.nodes.clone())
        };
        let planned = snap
            .jobs
            .iter()
            .filter(|j| in_partition(j, &self.conv.partition))
            .filter_map(|j| {
                let released_to = ahead(j);
                (j.is_held() || released_to.is_some()).then_some((j, released_to))
            });
        for (job, released_to) in planned {
            let id = check_job_id(&job.id.to_string())?.to_string();
            match gang_shape(job) {
                Ok(shape) => {
                    out.pending.push(self.held_gang(job, &id, shape));
                    let held = HeldJob {
                        released_to,
                        ..held_job(job, snap.now)
                    };
                    out.held.insert(id, held);
                }
                Err(why) => out.ignored.push((id, why)),
            }
        }
        Ok(out)
    }

    /// A held job of the given gang shape (see [`gang_shape`]) as a pending gang.
    fn held_gang(
        &mut self,
        job: &SlurmJob,
        id: &str,
        (gpus, per_node, gtype): (u64, Option<u64>, Option<String>),
    ) -> RawPending {
        RawPending {
            id: id.to_string(),
            tenant: Some(self.tenant(job)),
            gpus,
            priority: self.ranks.rank(job),
            wait: Some((self.snap.now - job.submit_time).max(0) as f64),
            gpu_type: gtype.map(GpuTypes::One),
            max_nodes: Some(job.node_count as u64),
            gpus_per_node: per_node,
            time_limit: job.time_limit.map(|t| t as f64),
            ..Default::default()
        }
    }

    /// A job's tenant, noted among the round's tenants.
    fn tenant(&mut self, job: &SlurmJob) -> String {
        let tenant = tenant_of(job);
        self.tenants.insert(tenant.clone());
        tenant
    }
}

/// The round's held jobs: the gangs to plan, what releasing each needs, and those left alone.
#[derive(Default)]
struct HeldGangs {
    pending: Vec<RawPending>,
    held: BTreeMap<String, HeldJob>,
    ignored: Vec<(String, String)>,
}

/// The GPU indices a `gres_detail` entry reports, all entries together (`None` when none
/// reports any).
fn reported_indices(detail: &[GpuGres]) -> Option<Vec<u32>> {
    detail
        .iter()
        .filter_map(|g| g.indices.clone())
        .reduce(|mut a, b| {
            a.extend(b);
            a
        })
}

/// What releasing a held job needs: its node count, whether to clear a begin time (it was
/// requeued, or its eligible time lies after `now`), and its admin comment.
fn held_job(job: &SlurmJob, now: i64) -> HeldJob {
    HeldJob {
        node_count: job.node_count,
        clear_begin: job.restart_cnt > 0 || job.eligible_time > now,
        admin_comment: job.admin_comment.clone(),
        released_to: None,
    }
}

/// The round's tenants (none when no job names one): weight from the site's fair share, 1
/// without it; no quota.
fn raw_tenants(tenants: BTreeSet<String>, snap: &Snapshot) -> Option<Vec<RawTenant>> {
    (!tenants.is_empty()).then(|| {
        tenants
            .into_iter()
            .map(|name| RawTenant {
                weight: snap.site.tenant_weight(&name).unwrap_or(1.0),
                name,
                quota: None,
            })
            .collect()
    })
}

/// Holding jobs whose admin comment still holds a gangplan note (to clear; the note of an
/// admitted job stays).
fn noted_running(snap: &Snapshot) -> Vec<String> {
    snap.jobs
        .iter()
        .filter(|j| HOLDING_STATES.contains(&j.state.as_str()))
        .filter(|j| j.admin_comment.starts_with(NOTE_PREFIX))
        .filter(|j| !j.admin_comment.starts_with(ADMITTED_NOTE))
        .map(|j| j.id.to_string())
        .collect()
}

/// Seconds until a holding job's time limit ends it: its `end_time` less now (0 once past),
/// or `None` for a job without a time limit.
fn ends_in(job: &SlurmJob, now: i64) -> Option<f64> {
    job.time_limit?;
    (job.end_time > 0).then(|| (job.end_time - now).max(0) as f64)
}

fn take_free(
    claimed: &mut BTreeMap<String, BTreeSet<u32>>,
    node: &str,
    total: u32,
    count: u32,
) -> Vec<u64> {
    let taken = claimed.entry(node.to_string()).or_default();
    let picked: Vec<u32> = (0..total)
        .filter(|g| !taken.contains(g))
        .take(count as usize)
        .collect();
    taken.extend(&picked);
    picked.into_iter().map(u64::from).collect()
}

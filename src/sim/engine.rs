//! The event-driven replay. Each planning round turns the simulated cluster into an
//! [`Instance`] (through [`RawInstance`] and the same validation every instance file gets),
//! asks a [`RoundPlanner`], and applies the decision: placements start, preempted jobs lose the
//! work since their last checkpoint and wait again.
//!
//! Two protocols:
//! - **replay** (time-based): jobs arrive at their submit times; rounds run every `round_s`
//!   seconds; a job runs its trace duration times its placement slowdown (the workload
//!   profile's factor for the [`Span`] its GPUs cover); completions free GPUs. Rounds in which
//!   nothing can change (no arrival, no completion, and the last round started nothing) are
//!   skipped, except where priorities move with attained service: under `las`, and under
//!   `ilp` and `greedy` with the attained-service objective ([`super::service`]).
//! - **fill** (the FGD paper's): the jobs are shuffled by the seed and submitted in that order,
//!   never departing, until the GPUs asked for reach `load` times the capacity (when the trace
//!   runs out, jobs drawn at random with replacement are appended, as the FGD simulator's
//!   workload tuning does). `batch` arrivals form one round; what a round does not place
//!   fails. The metric is the share of GPU capacity allocated at the end.

use super::metrics::{jain, percentile, JobRecord, Metrics, Report, RunInfo, Series};
use super::planners::{PlannerName, RoundPlanner};
use super::service::{ReplayObjective, ServiceObjective};
use super::trace::{Trace, TraceJob};
use crate::assignment::GpuSet;
use crate::error::{Error, Result};
use crate::hardware::{ModelLibrary, Slowdown};
use crate::heuristics::placement::free::{gpu_free_milli, node_free};
use crate::instance::raw::{GpuTypes, RawInstance, RawPending, RawPolicy, RawRunning, RawTenant};
use crate::instance::task_dist::{frag, TaskDist, TaskType};
use crate::instance::validate::validate;
use crate::instance::Instance;
use crate::round_state::RoundState;
use crate::state::ClusterState;
use crate::topology::{Span, Topology};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// Which protocol.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Protocol {
    /// Time-based replay.
    Replay,
    /// FGD's fill protocol.
    Fill {
        /// Requested GPUs as a multiple of capacity at which submission stops.
        load: f64,
        /// Arrivals per planning round.
        batch: usize,
    },
}

/// Settings of a run.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Protocol.
    pub protocol: Protocol,
    /// Seconds between planning rounds (replay).
    pub round_s: f64,
    /// Seconds of run time between checkpoints (replay): a preempted job loses the work done
    /// since its last one.
    pub checkpoint_s: f64,
    /// Seed (fill order, random planner, solver).
    pub seed: u64,
    /// ILP time limit per round, seconds.
    pub round_time_limit: f64,
    /// Stop after this many rounds (replay); jobs not done count as failed.
    pub max_rounds: u64,
    /// LAS queue thresholds in attained GPU-seconds (Tiresias' discretised 2D-LAS).
    pub las_thresholds: Vec<f64>,
    /// Give the greedy and the ILP the trace's task distribution, so that they place
    /// one-node jobs where fragmentation grows least (default true; false: best fit).
    pub planner_task_dist: bool,
    /// How the task types of that distribution are weighted (default: by count, as FGD).
    pub planner_dist_weight: DistWeight,
    /// Score the greedy's (and the ILP's greedy start's) node choices as the FGD artifact
    /// does: integer score, ties to a seeded random node order (default false: exact growth,
    /// best-fit ties).
    pub planner_artifact_score: bool,
    /// The price per GPU of fragment the greedy and the ILP are given with the distribution
    /// (`policy.weights.fragmentation`); `None`: [`FILL_FRAGMENTATION_PRICE`] under fill, the
    /// policy's default in a replay ([`SimConfig::fragmentation_price`]).
    pub planner_fragmentation_price: Option<f64>,
    /// Write every round's instance, as the planner sees it, to this folder
    /// (`round-00000.json`, ...): rounds cut from a replay, for `bench --instances`, with the
    /// task distribution, tie seed and fragmentation price the greedy and the ILP are given.
    pub dump_rounds: Option<std::path::PathBuf>,
    /// replay: what the `ilp` and `greedy` planners are told a job is worth (default:
    /// least attained service first, [`ServiceObjective`]).
    pub objective: ReplayObjective,
    /// replay: the attained-service objective's queues, weights and preemption.
    pub service: ServiceObjective,
}

/// The price per GPU of fragment under fill when none is given: 1, the value of a GPU started.
/// Nothing departs under fill and the trace asks for more than the cluster holds, so room
/// left as fragment is room the run loses for good; in a replay jobs end and fragments heal,
/// and the policy's default (0.02) stays. (openb fill, load 1.3, 1,213 nodes, the ILP with
/// the artifact's score, seeds 42-51: at 0.02 a repacking move that starts one more sharer
/// now at the cost of room for the sharers to come is kept, and on `gpushare100` the ILP
/// ended below the greedy on 4 of 10 seeds; at 1 it is above on all 10: docs/research.md.)
pub const FILL_FRAGMENTATION_PRICE: f64 = 1.0;

impl SimConfig {
    /// The price per GPU of fragment the greedy and the ILP are given (see
    /// [`SimConfig::planner_fragmentation_price`]).
    pub fn fragmentation_price(&self) -> f64 {
        self.planner_fragmentation_price
            .unwrap_or(match self.protocol {
                Protocol::Fill { .. } => FILL_FRAGMENTATION_PRICE,
                Protocol::Replay => crate::instance::Weights::default().fragmentation,
            })
    }
}

/// How the task types of the distribution given to the greedy and the ILP are weighted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DistWeight {
    /// By how many tasks are of the type (FGD's popularity; what `fgd` and the
    /// fragmentation metric use).
    #[default]
    Tasks,
    /// By the GPU capacity the type's tasks ask for: count x GPUs x milli per GPU.
    Gpus,
}

/// `dist` with its shares reweighted as `w` says (renormalised).
pub fn weighted_dist(dist: &TaskDist, w: DistWeight) -> TaskDist {
    match w {
        DistWeight::Tasks => dist.clone(),
        DistWeight::Gpus => TaskDist::from_shares(
            dist.types
                .iter()
                .map(|(t, p)| (t.clone(), p * t.gpus as f64 * t.milli_per_gpu as f64))
                .collect(),
        ),
    }
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            protocol: Protocol::Replay,
            round_s: 60.0,
            checkpoint_s: 1800.0,
            seed: 42,
            round_time_limit: 2.0,
            max_rounds: 1_000_000,
            las_thresholds: vec![super::service::DEFAULT_THRESHOLD],
            planner_task_dist: true,
            planner_dist_weight: DistWeight::default(),
            planner_artifact_score: false,
            planner_fragmentation_price: None,
            dump_rounds: None,
            objective: ReplayObjective::default(),
            service: ServiceObjective::default(),
        }
    }
}

/// Progress callback: (done, total) in protocol units (jobs submitted).
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// The task distribution of a trace (FGD's typical tasks). As in the FGD artifact, a task
/// type is its CPU, GPU count, GPU share and GPU types; memory is left out.
pub fn trace_dist(trace: &Trace) -> TaskDist {
    TaskDist::from_types(trace.jobs.iter().map(|j| TaskType {
        memory_mib: 0,
        ..task_type(j)
    }))
}

/// Share of the tasks the artifact's typical pods cover (`podPopularityThreshold: 95` in its
/// run scripts, `scripts/generate_config_and_run.py`).
pub const TYPICAL_POD_COVERAGE: f64 = 0.95;

/// The FGD artifact's typical pods (`GetTypicalPods` in `pkg/utils/frag.go`, with the run
/// scripts' settings `isInvolvedCpuPods: true`, `podPopularityThreshold: 95`,
/// `podIncreaseStep: 1`): task types (CPU, GPU count, share per GPU, GPU types; memory is
/// left out) of every job of the trace, CPU-only ones included, most frequent first (ties: the
/// larger CPU, share, count, then type name first), kept until they cover
/// [`TYPICAL_POD_COVERAGE`] of the jobs, renormalised. The `fgd` planner measures
/// fragmentation against it.
pub fn typical_pods(trace: &Trace) -> TaskDist {
    let mut count: BTreeMap<(u64, u32, u32, String), (TaskType, u64)> = BTreeMap::new();
    for j in &trace.jobs {
        let t = TaskType {
            memory_mib: 0,
            milli_per_gpu: if j.gpus == 0 {
                0
            } else {
                j.gpu_milli.unwrap_or(1000)
            },
            ..task_type(j)
        };
        let name = t.gpu_types.as_ref().map_or(String::new(), |v| v.join("|"));
        let key = (t.cpu_milli, t.milli_per_gpu, t.gpus, name);
        count.entry(key).or_insert((t, 0)).1 += 1;
    }
    let total = trace.jobs.len() as f64;
    let mut v: Vec<_> = count.into_iter().collect();
    // Decreasing count, then decreasing (CPU, milli, GPUs, type): Go's sort.Reverse of the
    // artifact's Less.
    v.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(b.0.cmp(&a.0)));
    let mut kept = Vec::new();
    let mut covered = 0.0;
    for (_, (t, c)) in v {
        if covered >= TYPICAL_POD_COVERAGE * total {
            break;
        }
        covered += c as f64;
        kept.push((t, c as f64));
    }
    TaskDist::from_shares(kept)
}

fn task_type(j: &TraceJob) -> TaskType {
    TaskType {
        cpu_milli: j.cpu_milli,
        memory_mib: j.memory_mib,
        gpus: j.gpus,
        milli_per_gpu: j.gpu_milli.unwrap_or(1000),
        gpu_types: j.gpu_types.clone(),
    }
}

/// Slowdown of a gang on a span: the factor of the widest level it crosses (pods, racks,
/// nodes, NVLink islands), 1 when it sits in one island.
pub fn span_factor(span: &Span, s: &Slowdown) -> f64 {
    if span.pods > 1 {
        s.span_pods
    } else if span.racks > 1 {
        s.span_racks
    } else if span.units > 1 {
        s.span_nodes
    } else if span.island_splits > 0 {
        s.split_island
    } else {
        1.0
    }
}

#[derive(Debug, Clone)]
struct Live {
    job: usize,
    id: String,
    submit: f64,
    /// Ideal seconds of work done before the current run.
    done: f64,
    run_start: f64,
    slowdown: f64,
    alloc: GpuSet,
    attained: f64,
    /// Times the job was preempted before this run.
    preempted: u32,
}

struct Sim<'a> {
    trace: &'a Trace,
    cfg: &'a SimConfig,
    lib: &'a ModelLibrary,
    planner: &'a RoundPlanner,
    tenants: Option<Vec<RawTenant>>,
    topo: Option<Arc<Topology>>,
    dist: Arc<TaskDist>,
    planner_dist: Arc<TaskDist>,
    solve_s: Vec<f64>,
    changed: Vec<u64>,
    fallbacks: u64,
    reasons: BTreeMap<String, u64>,
    limit_hits: u64,
    preemptions: u64,
    rounds: u64,
}

impl<'a> Sim<'a> {
    fn las(&self) -> bool {
        self.planner.name() == PlannerName::Las
    }

    /// The attained-service objective, when this run gives it to its planner: a replay under
    /// `ilp` or `greedy` with `--objective attained-service`.
    fn service(&self) -> Option<&ServiceObjective> {
        let ours = matches!(self.planner.name(), PlannerName::Ilp | PlannerName::Greedy);
        (ours
            && self.cfg.protocol == Protocol::Replay
            && self.cfg.objective == ReplayObjective::AttainedService)
            .then_some(&self.cfg.service)
    }

    /// Whether priorities move with attained service, so rounds run while jobs wait even when
    /// no job arrived or finished.
    fn priorities_move(&self) -> bool {
        self.las() || self.service().is_some()
    }

    /// (priority, preemptible) of a running job `l` at `now`.
    fn running_rank(&self, l: &Live, now: f64) -> (i64, bool) {
        let attained = l.attained;
        if let Some(s) = self.service() {
            let gpus = self.trace.jobs[l.job].gpu_milli_total() as f64 / 1000.0;
            let waited = ServiceObjective::waited(now, l.submit, attained, gpus);
            (s.rank(attained, waited, gpus), s.preemptible(l.preempted))
        } else if self.las() {
            (self.queue_priority(attained), true)
        } else {
            (0, false)
        }
    }

    /// (priority, age in seconds) of a waiting job of trace job `k`.
    fn pending_rank(&self, k: usize, submit: f64, attained: f64, now: f64) -> (i64, f64) {
        if let Some(s) = self.service() {
            let gpus = self.trace.jobs[k].gpu_milli_total() as f64 / 1000.0;
            let waited = ServiceObjective::waited(now, submit, attained, gpus);
            let age = s.age(now, submit, attained, gpus);
            let cluster = self.trace.gpus() as f64;
            (s.waiting_rank(attained, waited, gpus, cluster), age)
        } else if self.las() {
            (self.queue_priority(attained), (now - submit).max(0.0))
        } else {
            (0, (now - submit).max(0.0))
        }
    }

    /// The `las` planner's priority of a job: minus its attained-service queue.
    fn queue_priority(&self, attained: f64) -> i64 {
        -(super::service::queue_of(&self.cfg.las_thresholds, attained) as i64)
    }

    fn build(
        &self,
        running: &[Live],
        pending: &[(usize, String, f64, f64)],
        now: f64,
    ) -> Result<Instance> {
        let preemption = self.las() || self.service().is_some_and(|s| s.preempt);
        let names: Vec<&str> = self.trace.nodes.iter().map(|n| n.name.as_str()).collect();
        let raw = RawInstance {
            nodes: self.trace.nodes.clone(),
            tenants: self.tenants.clone(),
            running: running
                .iter()
                .map(|l| {
                    let j = &self.trace.jobs[l.job];
                    let held = (now - l.run_start).max(0.0);
                    let (priority, preemptible) = self.running_rank(l, now);
                    RawRunning {
                        id: l.id.clone(),
                        tenant: j.tenant.clone(),
                        priority,
                        preemptible,
                        checkpoint_cost: Some(
                            j.gpus as f64 * (held % self.cfg.checkpoint_s.max(1e-9)),
                        ),
                        gpus: l
                            .alloc
                            .iter()
                            .map(|(&n, g)| {
                                (names[n].to_string(), g.iter().map(|&x| x as u64).collect())
                            })
                            .collect(),
                        gpu_milli: j.gpu_milli.map(u64::from),
                        cpu_milli: Some(j.cpu_milli),
                        memory_mib: Some(j.memory_mib),
                        ends_in: None,
                    }
                })
                .collect(),
            pending: pending
                .iter()
                .map(|(k, id, submit, attained)| {
                    let j = &self.trace.jobs[*k];
                    let (priority, wait) = self.pending_rank(*k, *submit, *attained, now);
                    RawPending {
                        id: id.clone(),
                        tenant: j.tenant.clone(),
                        gpus: j.gpus as u64,
                        priority,
                        wait: Some(wait),
                        gpu_type: j.gpu_types.clone().map(GpuTypes::Many),
                        workload: j.workload.clone(),
                        gpu_milli: j.gpu_milli.map(u64::from),
                        cpu_milli: Some(j.cpu_milli),
                        memory_mib: Some(j.memory_mib),
                        ..Default::default()
                    }
                })
                .collect(),
            policy: Some(RawPolicy {
                time_limit: Some(self.cfg.round_time_limit.max(0.05)),
                preemption: Some(preemption),
                weights: self.round_weights(),
                seed: Some(self.cfg.seed),
                ..Default::default()
            }),
        };
        // A state with nothing waiting (the run's final one) is no round to keep.
        if let Some(dir) = self
            .cfg
            .dump_rounds
            .as_ref()
            .filter(|_| !pending.is_empty())
        {
            let file = dir.join(format!("round-{:05}.json", self.rounds));
            let text = serde_json::to_vec(&self.as_planned(&raw)).expect("an instance serialises");
            crate::fsutil::write_atomic(&file, &text)?;
        }
        let mut inst = validate(&raw, self.lib).map_err(|issues| Error::Input {
            source_name: format!("{} (simulated round at t={now:.0} s)", self.trace.name),
            issues,
        })?;
        if self.planner_takes_dist() {
            inst.task_dist = Some(Arc::clone(&self.planner_dist));
        }
        Ok(inst)
    }

    /// The objective weights a round's instance carries: the attained-service objective's in
    /// a replay, and the fragmentation price where the planner takes the distribution.
    fn round_weights(&self) -> std::collections::BTreeMap<String, f64> {
        let mut w = self.service().map(|s| s.weights()).unwrap_or_default();
        if self.planner_takes_dist() {
            w.insert("fragmentation".into(), self.cfg.fragmentation_price());
        }
        w
    }

    /// Whether the run gives its planner the task distribution (the greedy and the ILP, unless
    /// `--no-task-dist`).
    fn planner_takes_dist(&self) -> bool {
        self.cfg.planner_task_dist
            && matches!(self.planner.name(), PlannerName::Greedy | PlannerName::Ilp)
    }

    /// A round's instance as the planner sees it: with the task distribution (and the
    /// artifact's tie seed) the run sets on the validated instance.
    fn as_planned(&self, raw: &RawInstance) -> RawInstance {
        let mut raw = raw.clone();
        if let Some(policy) = raw.policy.as_mut().filter(|_| self.planner_takes_dist()) {
            policy.task_distribution = Some(self.planner_dist.raw_types());
            policy.artifact_score = self.planner_dist.artifact_ties;
        }
        raw
    }

    fn plan(
        &mut self,
        inst: Instance,
    ) -> Result<(Arc<Instance>, crate::sim::planners::RoundDecision)> {
        let inst = Arc::new(inst);
        let topo = match &self.topo {
            Some(t) => Arc::clone(t),
            None => {
                let t = Arc::new(Topology::new(&inst));
                self.topo = Some(Arc::clone(&t));
                t
            }
        };
        let t0 = Instant::now();
        let d = self.planner.plan(&inst, &topo);
        self.solve_s.push(t0.elapsed().as_secs_f64());
        self.rounds += 1;
        if d.fell_back && self.planner.name() == PlannerName::Ilp {
            self.fallbacks += 1;
            let why: String = d
                .note
                .as_deref()
                .unwrap_or("no note")
                .chars()
                .filter(|c| !c.is_ascii_digit())
                .take(160)
                .collect();
            *self.reasons.entry(why).or_default() += 1;
        }
        if d.time_limit_hit {
            self.limit_hits += 1;
        }
        crate::plan::validate::check_assignment(&inst, &d.assignment)?;
        if let Some(c) = self.planner.changed_vs_greedy(&inst, &topo, &d.assignment) {
            self.changed.push(c);
        }
        Ok((inst, d))
    }
}

/// Fragmented over idle GPU capacity of a round's cluster (before its decisions).
pub fn frag_ratio(inst: &Instance, dist: &TaskDist) -> f64 {
    let before = ClusterState::new(inst);
    let state = RoundState::new(inst, &before);
    let (mut fr, mut idle) = (0.0, 0.0);
    for n in 0..inst.nodes.len() {
        let nf = node_free(&state, n, i64::MIN);
        idle += nf.free.iter().map(|&x| x as f64).sum::<f64>();
        fr += frag(&nf, dist);
    }
    if idle <= 0.0 {
        0.0
    } else {
        (fr / idle).clamp(0.0, 1.0)
    }
}

/// GPU milli allocated in a round's cluster.
fn allocated_milli(inst: &Instance) -> f64 {
    let before = ClusterState::new(inst);
    let state = RoundState::new(inst, &before);
    let mut used = 0.0;
    for (n, node) in inst.nodes.iter().enumerate() {
        for g in 0..node.gpus {
            if !node.down[g as usize] {
                used += (1000 - gpu_free_milli(&state, n, g, i64::MIN)) as f64;
            }
        }
    }
    used
}

/// Run a trace under a planner; the report of the run.
pub fn simulate(
    trace: &Trace,
    planner: &RoundPlanner,
    cfg: &SimConfig,
    lib: &ModelLibrary,
    progress: Progress<'_>,
) -> Result<Report> {
    if trace.jobs.is_empty() {
        return Err(Error::input(&trace.name, "jobs", "the trace has no jobs"));
    }
    let mut tenant_names: Vec<String> =
        trace.jobs.iter().filter_map(|j| j.tenant.clone()).collect();
    tenant_names.sort();
    tenant_names.dedup();
    let tenants = (!tenant_names.is_empty()).then(|| {
        let mut t: Vec<RawTenant> = tenant_names
            .into_iter()
            .map(|name| RawTenant {
                name,
                weight: 1.0,
                quota: None,
            })
            .collect();
        if trace.jobs.iter().any(|j| j.tenant.is_none()) {
            t.push(RawTenant {
                name: "default".into(),
                weight: 1.0,
                quota: None,
            });
        }
        t
    });
    let dist = trace_dist(trace);
    let mut pd = weighted_dist(&dist, cfg.planner_dist_weight);
    pd.artifact_ties = cfg.planner_artifact_score.then_some(cfg.seed);
    let planner_dist = Arc::new(pd);
    let mut sim = Sim {
        planner_dist,
        trace,
        cfg,
        lib,
        planner,
        tenants,
        topo: None,
        dist: Arc::new(dist),
        solve_s: Vec::new(),
        changed: Vec::new(),
        fallbacks: 0,
        reasons: BTreeMap::new(),
        limit_hits: 0,
        preemptions: 0,
        rounds: 0,
    };
    let started = Instant::now();
    let mut report = match cfg.protocol {
        Protocol::Fill { load, batch } => fill(&mut sim, load, batch.max(1), progress)?,
        Protocol::Replay => replay(&mut sim, progress)?,
    };
    report.planner = planner.name().as_str().to_string();
    report.trace = trace.name.clone();
    report.seed = cfg.seed;
    report.metrics.preemptions = sim.preemptions;
    report.metrics.rounds = sim.rounds;
    report.metrics.solve_s_p50 = percentile(&sim.solve_s, 0.5).unwrap_or(0.0);
    report.metrics.solve_s_max = sim.solve_s.iter().copied().fold(0.0, f64::max);
    report.info.cluster_gpus = trace.gpus();
    report.info.ilp_fallback_rounds = sim.fallbacks;
    report.info.ilp_time_limit_rounds = sim.limit_hits;
    report.info.ilp_fallback_reasons = sim.reasons.clone();
    report.info.wall_s = started.elapsed().as_secs_f64();
    report.series.solve_s = sim.solve_s.clone();
    report.info.ilp_changed_rounds = sim.changed.iter().filter(|&&c| c > 0).count() as u64;
    report.info.ilp_changed_jobs = sim.changed.iter().sum();
    report.series.ilp_changed = sim.changed.clone();
    let ours = matches!(planner.name(), PlannerName::Ilp | PlannerName::Greedy);
    if ours && cfg.protocol == Protocol::Replay {
        report.info.objective = Some(match sim.service() {
            Some(s) => s.describe(),
            None => ReplayObjective::Default.as_str().to_string(),
        });
    }
    Ok(report)
}

/// FGD's submission sequence: shuffled, then cut or extended (random draws with replacement)
/// so the GPUs asked for stay within `load` x capacity. Returns (job index, id).
pub fn fill_sequence(trace: &Trace, load: f64, seed: u64) -> Vec<(usize, String)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..trace.jobs.len()).collect();
    order.shuffle(&mut rng);
    let target = load * trace.gpus() as f64 * 1000.0;
    let mut asked = 0.0;
    let mut seq = Vec::new();
    for k in order {
        let m = trace.jobs[k].gpu_milli_total() as f64;
        if asked + m > target {
            return seq;
        }
        asked += m;
        seq.push((k, trace.jobs[k].id.clone()));
    }
    for i in 0.. {
        let k = rng.gen_range(0..trace.jobs.len());
        let m = trace.jobs[k].gpu_milli_total() as f64;
        if asked + m > target || i > 10_000_000 {
            break;
        }
        asked += m;
        seq.push((k, format!("{}-tuned-{i}", trace.jobs[k].id)));
    }
    seq
}

fn fill(sim: &mut Sim<'_>, load: f64, batch: usize, progress: Progress<'_>) -> Result<Report> {
    if !(load.is_finite() && load > 0.0 && load <= 100.0) {
        return Err(Error::input(
            "--load",
            "",
            format!("is {load}; expected a multiple of capacity in (0, 100]"),
        ));
    }
    let seq = fill_sequence(sim.trace, load, sim.cfg.seed);
    let submitted: Vec<usize> = seq.iter().map(|s| s.0).collect();
    let bound = super::bound::offline_upper_bound(sim.trace, &submitted)?;
    let cap = sim.trace.gpus() as f64 * 1000.0;
    let mut running: Vec<Live> = Vec::new();
    let mut asked = 0.0;
    let mut alloc = 0.0;
    let mut curve: Vec<(u32, f64)> = Vec::new();
    let (mut placed, mut failed) = (0u64, 0u64);
    let mut flags: Vec<f64> = Vec::new();
    for (round, chunk) in seq.chunks(batch).enumerate() {
        let now = round as f64;
        let pending: Vec<(usize, String, f64, f64)> = chunk
            .iter()
            .map(|(k, id)| (*k, id.clone(), now, 0.0))
            .collect();
        let inst = sim.build(&running, &pending, now)?;
        let (inst, d) = sim.plan(inst)?;
        for (i, (k, id)) in chunk.iter().enumerate() {
            let job = &sim.trace.jobs[*k];
            asked += job.gpu_milli_total() as f64;
            match d.assignment.placed.get(&i) {
                Some(set) => {
                    placed += 1;
                    alloc += job.gpu_milli_total() as f64;
                    if job.gpus > 0 {
                        flags.push(1.0);
                    }
                    running.push(Live {
                        job: *k,
                        id: id.clone(),
                        submit: now,
                        done: 0.0,
                        run_start: now,
                        slowdown: 1.0,
                        alloc: set.clone(),
                        attained: 0.0,
                        preempted: 0,
                    });
                }
                None => {
                    failed += 1;
                    if job.gpus > 0 {
                        flags.push(0.0);
                    }
                }
            }
        }
        drop(inst);
        let pct = (100.0 * asked / cap).floor() as u32;
        let next = curve.last().map_or(0, |c| c.0 + 1);
        for k in next..=pct {
            curve.push((k, 100.0 * alloc / cap));
        }
        progress(
            ((round + 1) * batch).min(seq.len()) as u64,
            seq.len() as u64,
        );
    }
    let last = sim.build(&running, &[], seq.len() as f64)?;
    let frag_rate = frag_ratio(&last, &sim.dist);
    let ratio = (allocated_milli(&last) / cap).clamp(0.0, 1.0);
    Ok(Report {
        metrics: Metrics {
            gpu_allocation_ratio: ratio,
            avg_jct_s: None,
            p50_jct_s: None,
            p99_jct_s: None,
            makespan_s: None,
            utilization: ratio,
            fragmentation_rate: frag_rate,
            jain_fairness: jain(&flags),
            offline_upper_bound: Some(bound),
            ..Default::default()
        },
        info: RunInfo {
            protocol: "fill".into(),
            jobs_submitted: seq.len() as u64,
            jobs_done: placed,
            jobs_failed: failed,
            ..Default::default()
        },
        series: Series {
            alloc_curve: curve,
            ..Default::default()
        },
        ..Default::default()
    })
}

/// What a replay has measured so far.
#[derive(Default)]
struct Tally {
    /// Completion times, in completion order.
    jct: Vec<f64>,
    /// Per completed job: ideal duration over JCT (at most 1).
    fair: Vec<f64>,
    /// Ideal GPU-seconds of completed jobs.
    useful: f64,
    /// GPU-seconds held.
    held_area: f64,
    /// Latest completion.
    last_finish: f64,
    /// Per trace job: its first start, and the times it was preempted.
    first_start: BTreeMap<usize, f64>,
    /// See `first_start`.
    preempted: BTreeMap<usize, u32>,
    /// Every completed job.
    jobs: Vec<JobRecord>,
}

/// A job waiting in a replay: (trace job, attained GPU-seconds, ideal seconds of work kept).
type Waiting = (usize, f64, f64);

/// Ideal run time of trace job `k` (never ends without one).
fn duration(trace: &Trace, k: usize) -> f64 {
    trace.jobs[k].duration.unwrap_or(f64::INFINITY)
}

/// GPU-equivalents of trace job `k` (sharers count their share).
fn gpu_eq(trace: &Trace, k: usize) -> f64 {
    trace.jobs[k].gpu_milli_total() as f64 / 1000.0
}

/// When running job `l` finishes, if nothing preempts it.
fn finish_time(trace: &Trace, l: &Live) -> f64 {
    l.run_start + (duration(trace, l.job) - l.done).max(0.0) * l.slowdown
}

/// Retire the running jobs that finish by `t` into `tally`; whether any did.
fn complete_due(trace: &Trace, running: &mut Vec<Live>, t: f64, tally: &mut Tally) -> bool {
    let mut any = false;
    running.retain(|l| {
        let finish = finish_time(trace, l);
        if finish > t {
            return true;
        }
        let d = duration(trace, l.job);
        let c = finish - l.submit;
        tally.held_area += gpu_eq(trace, l.job) * (finish - l.run_start);
        tally.jct.push(c);
        tally.fair.push((d / c.max(1e-9)).min(1.0));
        tally.useful += gpu_eq(trace, l.job) * d;
        tally.last_finish = tally.last_finish.max(finish);
        tally.jobs.push(JobRecord {
            id: l.id.clone(),
            gpus: trace.jobs[l.job].gpus,
            submit_s: l.submit,
            first_start_s: tally
                .first_start
                .get(&l.job)
                .copied()
                .unwrap_or(l.run_start),
            finish_s: finish,
            duration_s: d,
            preemptions: tally.preempted.get(&l.job).copied().unwrap_or(0),
        });
        any = true;
        false
    });
    any
}

/// Apply a round's decision at `t`: preempted jobs go back to waiting with the work of their
/// last checkpoint, placed ones (the first `pending` of `waiting`) start with their placement
/// slowdown. Whether any job started.
#[allow(clippy::too_many_arguments)]
fn apply_decision(
    sim: &mut Sim<'_>,
    inst: &Instance,
    d: &crate::sim::planners::RoundDecision,
    t: f64,
    running: &mut Vec<Live>,
    waiting: &mut Vec<Waiting>,
    pending: usize,
    tally: &mut Tally,
) -> Result<bool> {
    let trace = sim.trace;
    let ckpt = sim.cfg.checkpoint_s.max(1e-9);
    let topo = sim
        .topo
        .clone()
        .ok_or_else(|| Error::Solver("no topology".into()))?;
    // Preemptions (indices into running).
    let mut pre = d.assignment.preempted.clone();
    pre.sort_unstable_by(|a, b| b.cmp(a));
    for k in pre {
        let l = running.remove(k);
        let wall = (t - l.run_start).max(0.0);
        let kept = wall - wall % ckpt;
        tally.held_area += gpu_eq(trace, l.job) * wall;
        waiting.push((l.job, l.attained, l.done + kept / l.slowdown));
        sim.preemptions += 1;
        *tally.preempted.entry(l.job).or_default() += 1;
    }
    let mut started = false;
    let mut keep = Vec::new();
    for (i, w) in waiting.iter().enumerate() {
        let Some(set) = d.assignment.placed.get(&i).filter(|_| i < pending) else {
            keep.push(*w);
            continue;
        };
        let k = w.0;
        tally.first_start.entry(k).or_insert(t);
        let f = if trace.jobs[k].gpus > 1 {
            let slow = sim.lib.slowdown(trace.jobs[k].workload.as_deref());
            span_factor(&topo.span(inst, set), &slow)
        } else {
            1.0
        };
        running.push(Live {
            job: k,
            id: trace.jobs[k].id.clone(),
            submit: trace.jobs[k].submit,
            done: w.2,
            run_start: t,
            slowdown: f,
            alloc: set.clone(),
            attained: w.1,
            preempted: tally.preempted.get(&k).copied().unwrap_or(0),
        });
        started = true;
    }
    *waiting = keep;
    Ok(started)
}

fn replay(sim: &mut Sim<'_>, progress: Progress<'_>) -> Result<Report> {
    let trace = sim.trace;
    let cfg = sim.cfg;
    let r = cfg.round_s;
    if !(r.is_finite() && r > 0.0) {
        return Err(Error::input(
            "--round",
            "",
            format!("is {r}; expected seconds > 0"),
        ));
    }
    let total = trace.jobs.len();
    let t_first = trace.jobs.first().map_or(0.0, |j| j.submit);
    let mut t = (t_first / r).ceil() * r;
    let mut next_arrival = 0usize;
    let mut waiting: Vec<Waiting> = Vec::new();
    let mut running: Vec<Live> = Vec::new();
    let mut tally = Tally {
        last_finish: t_first,
        ..Tally::default()
    };
    let mut frag = (0.0, 0u64);
    let mut changed = true;
    let mut last_t = t;
    loop {
        changed |= complete_due(trace, &mut running, t, &mut tally);
        // Attained service grows with time held.
        for l in &mut running {
            l.attained += gpu_eq(trace, l.job) * (t - last_t).max(0.0);
        }
        last_t = t;
        while next_arrival < total && trace.jobs[next_arrival].submit <= t {
            waiting.push((next_arrival, 0.0, 0.0));
            next_arrival += 1;
            changed = true;
        }
        let mut started_any = false;
        if !waiting.is_empty() && (changed || sim.priorities_move()) {
            if sim.rounds >= cfg.max_rounds {
                break;
            }
            let pend: Vec<(usize, String, f64, f64)> = waiting
                .iter()
                .map(|&(k, att, _)| (k, trace.jobs[k].id.clone(), trace.jobs[k].submit, att))
                .collect();
            let inst = sim.build(&running, &pend, t)?;
            frag.0 += frag_ratio(&inst, &sim.dist);
            frag.1 += 1;
            let (inst, d) = sim.plan(inst)?;
            started_any = apply_decision(
                sim,
                &inst,
                &d,
                t,
                &mut running,
                &mut waiting,
                pend.len(),
                &mut tally,
            )?;
            // Jobs finished so far: arrived and no longer waiting or running (never counts
            // jobs that have not arrived yet, so it only grows).
            let finished = next_arrival - waiting.len() - running.len();
            progress(finished as u64, total as u64);
        }
        changed = started_any;
        if running.is_empty() && waiting.is_empty() && next_arrival >= total {
            break;
        }
        // Next round: the next event, on the round grid.
        let mut next = f64::INFINITY;
        if next_arrival < total {
            next = next.min(trace.jobs[next_arrival].submit);
        }
        for l in &running {
            next = next.min(finish_time(trace, l));
        }
        if changed || (sim.priorities_move() && !running.is_empty() && !waiting.is_empty()) {
            next = next.min(t + r);
        }
        if !next.is_finite() {
            break; // nothing will ever change: what waits cannot be placed
        }
        t = ((next / r).ceil() * r).max(t + r);
    }
    let unfinished = waiting.len() + running.len() + (total - next_arrival);
    progress((total - unfinished) as u64, total as u64);
    for l in &running {
        tally.held_area += gpu_eq(trace, l.job) * (t - l.run_start).max(0.0);
    }
    let frag_rate = if frag.1 > 0 {
        frag.0 / frag.1 as f64
    } else {
        0.0
    };
    Ok(replay_report(
        trace, r, t, t_first, tally, frag_rate, unfinished,
    ))
}

/// The report of a replay that ended at `t`.
fn replay_report(
    trace: &Trace,
    round_s: f64,
    t: f64,
    t_first: f64,
    tally: Tally,
    frag_rate: f64,
    unfinished: usize,
) -> Report {
    let cap = trace.gpus() as f64;
    let jct = tally.jct;
    let makespan = (tally.last_finish - t_first).max(0.0);
    let span = makespan.max(round_s);
    Report {
        metrics: Metrics {
            gpu_allocation_ratio: (tally.held_area / (cap * span.max(t - t_first))).clamp(0.0, 1.0),
            avg_jct_s: (!jct.is_empty()).then(|| jct.iter().sum::<f64>() / jct.len() as f64),
            p50_jct_s: percentile(&jct, 0.5),
            p99_jct_s: percentile(&jct, 0.99),
            makespan_s: (!jct.is_empty()).then_some(makespan),
            utilization: (tally.useful / (cap * span)).clamp(0.0, 1.0),
            fragmentation_rate: frag_rate,
            jain_fairness: jain(&tally.fair),
            ..Default::default()
        },
        info: RunInfo {
            protocol: "replay".into(),
            jobs_submitted: trace.jobs.len() as u64,
            jobs_done: jct.len() as u64,
            jobs_failed: unfinished as u64,
            ..Default::default()
        },
        series: Series {
            jct_s: jct,
            jobs: tally.jobs,
            ..Default::default()
        },
        ..Default::default()
    }
}

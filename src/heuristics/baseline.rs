//! The placement machinery the baseline planners share.
//!
//! A baseline decides two things: the order in which pending jobs are tried and, for each
//! job, which of its feasible single-node placements ([`single_node_options`]) to take. Gangs
//! no single node can hold go to the topology-aware placement search
//! ([`super::placement::find_placement`]), the same for every baseline, so the baselines differ
//! where the literature's do: order and node choice. Each job is placed whole or not at all.

use super::placement::find_placement;
use super::{Planner, RoundContext};
use crate::assignment::{Assignment, GpuSet};
use crate::instance::{Instance, NodeIx};
use crate::objective::evaluate;
use crate::round_state::RoundState;
use crate::solve::budget::Budget;
use crate::solve::outcome::SolveOutcome;
use crate::state::ClusterState;
use crate::topology::Topology;
use std::time::Instant;

/// A baseline planner: its name and its plan, considering no job past a cutoff. Every
/// baseline is a [`Planner`]: its pure plan has no cutoff (what replays compare); under a
/// round's time limit (`solve`) it considers no job after the round's work deadline
/// ([`Budget::work_until`]: the jobs not reached wait, and the note says so).
pub trait Baseline {
    /// Name used on the command line and in reports.
    const NAME: &'static str;
    /// Decide the round, considering no job past the cutoff.
    fn plan_cut(&self, ctx: &RoundContext, cut: &mut Cutoff) -> Assignment;
}

impl<B: Baseline> Planner for B {
    fn name(&self) -> &'static str {
        B::NAME
    }

    fn plan(&self, ctx: &RoundContext) -> Assignment {
        self.plan_cut(ctx, &mut Cutoff::never())
    }

    fn solve(&self, ctx: &RoundContext) -> SolveOutcome {
        let mut cut = Cutoff::at(Budget::new(ctx.inst, ctx.deadline).work_until());
        let assignment = self.plan_cut(ctx, &mut cut);
        let objective = evaluate(ctx.inst, ctx.topo, &assignment).total();
        let mut out = SolveOutcome::heuristic(B::NAME, assignment, objective);
        if let Some(considered) = cut.stopped_after() {
            out.time_limit_hit = true;
            out.note = Some(format!(
                "the time limit stopped {} after {considered} of {} pending jobs (in its \
                 order); the jobs it did not reach wait: a longer --time-limit lets it finish",
                B::NAME,
                ctx.inst.pending.len()
            ));
        }
        out
    }
}

/// When a baseline stops considering jobs: never (the pure plan a replay compares), or at an
/// instant (a round under a time limit: the jobs it did not reach wait, as the greedy's do).
#[derive(Debug, Clone, Copy)]
pub struct Cutoff {
    until: Option<Instant>,
    considered: usize,
    hit: bool,
}

impl Cutoff {
    /// No cutoff: every job is considered, whatever the time.
    pub fn never() -> Self {
        Cutoff {
            until: None,
            considered: 0,
            hit: false,
        }
    }

    /// Stop considering jobs at `until`.
    pub fn at(until: Instant) -> Self {
        Cutoff {
            until: Some(until),
            ..Self::never()
        }
    }

    /// Whether the next job may still be considered (counted when it may).
    pub fn next_job(&mut self) -> bool {
        if self.hit || self.until.is_some_and(|t| Instant::now() >= t) {
            self.hit = true;
            return false;
        }
        self.considered += 1;
        true
    }

    /// How many jobs were considered before the cutoff, when it stopped the planner.
    pub fn stopped_after(&self) -> Option<usize> {
        self.hit.then_some(self.considered)
    }
}

/// One way to place a job on one node: the node and, for a sharer, the GPU it shares. A
/// whole-GPU job's GPU indices are chosen once its node is ([`placement_for`]): every option's
/// GPUs are whole (free, or freed by a preemption), and choosing indices on every node a job
/// fits took most of a baseline's time on 12,500-node rounds (27 s for FIFO on 20,000 pending
/// jobs, against 1-2 s without).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeOption {
    /// Node.
    pub node: NodeIx,
    /// The GPU a sharer shares; `None` for whole-GPU and CPU-only jobs.
    pub shared_gpu: Option<u32>,
}

/// A baseline's node choice: the index of the option to take among a job's single-node
/// options, or `None` to leave the job waiting.
pub type Pick<'p> = dyn FnMut(&RoundState, &[NodeOption]) -> Option<usize> + 'p;

/// Every feasible single-node placement of pending job j, by node then GPU. A whole-GPU job
/// gets one option per node with enough whole GPUs; a sharer one option per GPU with room; a
/// CPU-only job one option per node with room. GPUs freed by a preemption this round count as
/// free.
pub fn single_node_options(state: &RoundState, topo: &Topology, j: usize) -> Vec<NodeOption> {
    single_node_options_on(state, topo, j, 0..state.inst.nodes.len())
}

/// [`single_node_options`] on the listed nodes only, in their order.
pub fn single_node_options_on(
    state: &RoundState,
    topo: &Topology,
    j: usize,
    nodes: impl IntoIterator<Item = NodeIx>,
) -> Vec<NodeOption> {
    let inst = state.inst;
    let job = &inst.pending[j];
    let mut out = Vec::new();
    if !state.quota_allows(job) {
        return out;
    }
    let fits_one_node = job.gpus_per_node.is_none_or(|g| g == job.gpus);
    let accepted = topo.type_mask(job);
    for n in nodes {
        let node = &inst.nodes[n];
        if job.gpus > 0 && !accepted[state.node_type[n]] {
            continue;
        }
        if job.gpus == 0 {
            if state.fits_resources(n, job, 0) {
                out.push(NodeOption {
                    node: n,
                    shared_gpu: None,
                });
            }
        } else if let Some(m) = job.gpu_milli {
            if !state.fits_resources(n, job, 1) {
                continue;
            }
            for g in 0..node.gpus {
                if state
                    .shareable_milli(n, g, job.priority)
                    .is_some_and(|f| f >= m)
                {
                    out.push(NodeOption {
                        node: n,
                        shared_gpu: Some(g),
                    });
                }
            }
        } else if fits_one_node
            && state.avail_count(n, job.priority) >= job.gpus
            && state.fits_resources(n, job, job.gpus)
        {
            out.push(NodeOption {
                node: n,
                shared_gpu: None,
            });
        }
    }
    out
}

/// Where job j goes: the single-node option `pick` chooses; when there is none and the job may
/// span nodes, the placement search's multi-node placement. `None`: it waits.
pub fn placement_for(
    state: &RoundState,
    topo: &Topology,
    j: usize,
    pick: &mut Pick,
) -> Option<GpuSet> {
    let options = single_node_options(state, topo, j);
    let job = &state.inst.pending[j];
    if !options.is_empty() {
        let k = pick(state, &options)?;
        let o = options[k.min(options.len() - 1)];
        return match o.shared_gpu {
            Some(g) => Some(GpuSet::from([(o.node, vec![g])])),
            None if job.gpus == 0 => Some(GpuSet::from([(o.node, Vec::new())])),
            // Indices inside NVLink islands; there are enough whole GPUs, so this never fails.
            None => state.pick_indices(j, &[(o.node, job.gpus)]),
        };
    }
    multi_node(state, topo, j)
}

/// Job j's placement over several nodes by the placement search, where it may span nodes.
pub fn multi_node(state: &RoundState, topo: &Topology, j: usize) -> Option<GpuSet> {
    let job = &state.inst.pending[j];
    if job.gpus < 2 || job.node_limit() < 2 || !state.quota_allows(job) {
        return None;
    }
    find_placement(state, topo, j).filter(|set| set.len() > 1)
}

/// Place job j where [`placement_for`] puts it. Returns whether it was placed.
pub fn place_with(state: &mut RoundState, topo: &Topology, j: usize, pick: &mut Pick) -> bool {
    match placement_for(state, topo, j, pick) {
        Some(set) => {
            state.commit(j, set);
            true
        }
        None => false,
    }
}

/// Run one pass over `order` with a node chooser, until the cutoff; the assignment of the
/// round.
pub fn run_pass(
    inst: &Instance,
    topo: &Topology,
    order: &[usize],
    pick: &mut Pick,
    cut: &mut Cutoff,
) -> Assignment {
    let before = ClusterState::new(inst);
    let mut state = RoundState::new(inst, &before);
    for &j in order {
        if !cut.next_job() {
            break;
        }
        place_with(&mut state, topo, j, pick);
    }
    state.assignment
}

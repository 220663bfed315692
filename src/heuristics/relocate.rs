//! Relocation: local moves on a finished plan that put one job whole on one node, moving the
//! plan's jobs already there elsewhere.
//!
//! A planner that places jobs one at a time (the greedy, the aggregated model's second stage)
//! can leave a gang split over two nodes because no node was whole when its turn came, or leave
//! a job of one accepted type waiting while its type is full of jobs that could have gone
//! elsewhere. A move takes job w (placed with spread, or waiting) and a node C of its type:
//! the plan's jobs on C are released, lowest value per GPU first, until w fits C whole; w
//! starts there; the released jobs are placed again where the greedy puts them, largest first,
//! and those that no longer fit wait. The move stays when the objective rises: the change is
//! counted exactly on what the move touched,
//!
//! ```text
//! delta = sum value(started) - sum value(left waiting) - (spread after - spread before)
//!         - (fairness after - fairness before) - (packing after - packing before, touched nodes)
//! ```
//!
//! and a move that does not raise it is undone exactly. Victims whose GPUs no job takes in the
//! end are released at the close ([`super::greedy::keep_needed_victims`]).

use super::greedy::{find_placement, keep_needed_victims};
use crate::assignment::{Assignment, GpuSet};
use crate::instance::{Instance, NodeIx};
use crate::objective::{
    fair_shares, fairness_penalty, job_spread, job_value, node_packing, value_per_gpu,
};
use crate::round_state::RoundState;
use crate::state::ClusterState;
use crate::topology::Topology;
use std::collections::BTreeSet;
use std::time::Instant;

/// Nodes tried for one job, best first.
const NODES_TRIED: usize = 4;

/// Improve `plan` by relocation moves until `until`: first the placed jobs that pay spread
/// but fit one node (most spread first), then the jobs of `insert` that wait, in that order.
/// Returns a plan whose objective is at least `plan`'s.
pub fn relocate(
    inst: &Instance,
    topo: &Topology,
    plan: &Assignment,
    insert: &[usize],
    until: Instant,
) -> Assignment {
    let before = ClusterState::new(inst);
    let mut state = RoundState::new(inst, &before);
    for &k in &plan.preempted {
        state.preempt(k);
    }
    for (&j, gpus) in &plan.placed {
        state.commit(j, gpus.clone());
    }
    let mut search = Search {
        topo,
        fair: fair_shares(inst),
        busy_before: (0..inst.nodes.len())
            .map(|n| before.node_busy_count(n))
            .collect(),
        widest: (0..topo.type_names.len())
            .map(|t| {
                inst.nodes
                    .iter()
                    .enumerate()
                    .filter(|&(n, _)| topo.node_type[n] == t)
                    .map(|(_, node)| node.gpus)
                    .max()
                    .unwrap_or(0)
            })
            .collect(),
        value: inst.pending.iter().map(|j| job_value(inst, j)).collect(),
        per_gpu: inst
            .pending
            .iter()
            .map(|j| value_per_gpu(inst, j))
            .collect(),
        accepts: inst.pending.iter().map(|j| topo.type_mask(j)).collect(),
        state,
    };
    let mut spread: Vec<(f64, usize)> = plan
        .placed
        .iter()
        .map(|(&j, gpus)| (job_spread(inst, topo, &inst.pending[j], gpus), j))
        .filter(|&(s, j)| s > 0.0 && search.fits_one_node(j))
        .collect();
    spread.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let waiting = insert
        .iter()
        .copied()
        .filter(|j| !plan.placed.contains_key(j) && search.fits_one_node(*j))
        .collect::<Vec<usize>>();
    let spread_gangs = spread.len();
    let (mut tried, mut kept) = (0, 0);
    for j in spread.into_iter().map(|(_, j)| j).chain(waiting) {
        if Instant::now() >= until {
            break;
        }
        tried += 1;
        kept += search.improve(j) as usize;
    }
    // (A second sweep over the same jobs kept 1 more move of 200 on the 100k-GPU round.)
    tracing::debug!(spread_gangs, tried, kept, "relocation moves");
    keep_needed_victims(&mut search.state, &plan.preempted);
    search.state.assignment
}

/// The working plan and what scoring a move needs.
struct Search<'s, 'a> {
    topo: &'s Topology,
    state: RoundState<'a>,
    fair: Vec<f64>,
    /// GPUs busy on each node before the round (for the packing penalty).
    busy_before: Vec<u32>,
    /// Most GPUs of one node, per GPU type.
    widest: Vec<u32>,
    /// Per pending job: its value, its value per GPU, and the GPU types it accepts.
    value: Vec<f64>,
    per_gpu: Vec<f64>,
    accepts: Vec<Vec<bool>>,
}

/// What a move changed, to score it and to undo it.
struct Move {
    /// Jobs placed before the move, with their GPUs then.
    released: Vec<(usize, Option<GpuSet>)>,
    /// Nodes whose occupancy the move changed.
    touched: BTreeSet<NodeIx>,
}

impl Search<'_, '_> {
    /// Whether job j could sit whole on one node of a type it accepts.
    fn fits_one_node(&self, j: usize) -> bool {
        let job = &self.state.inst.pending[j];
        let mask = &self.accepts[j];
        job.gpus > 0
            && job.gpu_milli.is_none()
            && job.gpus_per_node.is_none_or(|k| k >= job.gpus)
            && (0..self.widest.len()).any(|t| mask[t] && self.widest[t] >= job.gpus)
    }

    /// Try job j on its best few nodes; keep the first move that raises the objective (true).
    fn improve(&mut self, j: usize) -> bool {
        let holes = self.largest_holes(j);
        self.candidates(j, &holes)
            .into_iter()
            .any(|node| self.try_on(j, node, &holes))
    }

    /// Nodes where j could start whole once the plan's jobs there move: those displacing the
    /// least value that would find no room again first (then the fewest GPUs moved, then the
    /// lowest index).
    fn candidates(&self, j: usize, holes: &[u32]) -> Vec<NodeIx> {
        let state = &self.state;
        let inst = state.inst;
        let job = &inst.pending[j];
        let mask = &self.accepts[j];
        // The best NODES_TRIED so far, best first: (value lost, GPUs moved, node).
        let mut best: Vec<(f64, u32, NodeIx)> = Vec::with_capacity(NODES_TRIED + 1);
        let mut on = Vec::new();
        for n in (0..inst.nodes.len()).filter(|&n| mask[self.topo.node_type[n]]) {
            let avail = state.avail_count(n, job.priority);
            let (mut own, mut movable) = (0u32, 0u32);
            for t in state.taken[n].iter().flatten() {
                if *t == j {
                    own += 1;
                } else {
                    movable += 1;
                }
            }
            if own == job.gpus || avail + own + movable < job.gpus {
                continue; // already whole here, or no room even with every job moved
            }
            let need = job.gpus - (avail + own).min(job.gpus);
            let worst = (best.len() == NODES_TRIED).then(|| best[NODES_TRIED - 1]);
            if worst.is_some_and(|w| w.0 == 0.0 && w.1 <= need) {
                continue; // cannot beat the nodes found
            }
            let (mut freed, mut lost) = (0, 0.0);
            self.evictions(n, j, holes, &mut on);
            for &(x, g, fits_back) in &on {
                if freed >= need {
                    break;
                }
                freed += g;
                if !fits_back {
                    lost += self.value[x];
                }
            }
            let key = (lost, need, n);
            let rank = |a: &(f64, u32, NodeIx), b: &(f64, u32, NodeIx)| {
                a.0.total_cmp(&b.0).then((a.1, a.2).cmp(&(b.1, b.2)))
            };
            let at = best.partition_point(|b| rank(b, &key).is_lt());
            if at < NODES_TRIED {
                best.insert(at, key);
                best.truncate(NODES_TRIED);
            }
        }
        best.into_iter().map(|r| r.2).collect()
    }

    /// Per GPU type, the most GPUs one node has free, counting job j's own GPUs as free: where
    /// a job moved off a node could go (GPUs freed by victims aside: not every job may take
    /// them).
    fn largest_holes(&self, j: usize) -> Vec<u32> {
        let state = &self.state;
        let mut holes = vec![0u32; self.widest.len()];
        let own = state.assignment.placed.get(&j);
        for n in 0..state.inst.nodes.len() {
            let mine = own
                .and_then(|g| g.get(&n))
                .map_or(0, |idx| idx.len() as u32);
            let hole = state.free[n] + mine;
            let t = self.topo.node_type[n];
            holes[t] = holes[t].max(hole);
        }
        holes
    }

    /// The plan's jobs holding GPUs of node n (other than j), into `on`, with the GPUs each
    /// holds there and whether a hole of `holes` could take it whole: those that could first,
    /// then the lowest value per GPU.
    fn evictions(&self, n: NodeIx, j: usize, holes: &[u32], on: &mut Vec<(usize, u32, bool)>) {
        on.clear();
        for &x in self.state.taken[n].iter().flatten().filter(|&&x| x != j) {
            match on.iter_mut().find(|e| e.0 == x) {
                Some(e) => e.1 += 1,
                None => {
                    let gpus = self.state.inst.pending[x].gpus;
                    let mask = &self.accepts[x];
                    let fits = (0..holes.len()).any(|t| mask[t] && holes[t] >= gpus);
                    on.push((x, 1, fits));
                }
            }
        }
        on.sort_by(|a, b| {
            b.2.cmp(&a.2)
                .then(self.per_gpu[a.0].total_cmp(&self.per_gpu[b.0]))
                .then(a.0.cmp(&b.0))
        });
    }

    /// Move j whole onto node n; keep the move when it raises the objective.
    fn try_on(&mut self, j: usize, n: NodeIx, holes: &[u32]) -> bool {
        let inst = self.state.inst;
        let job = &inst.pending[j];
        let mut mv = Move {
            released: Vec::new(),
            touched: BTreeSet::from([n]),
        };
        // The jobs to release: j itself, then the cheapest on n until j fits.
        let mut out = vec![j];
        let own = self.state.taken[n]
            .iter()
            .filter(|&&t| t == Some(j))
            .count() as u32;
        let need = job
            .gpus
            .saturating_sub(self.state.avail_count(n, job.priority) + own);
        let mut freed = 0;
        let mut on = Vec::new();
        self.evictions(n, j, holes, &mut on);
        for (x, g, _) in on {
            if freed >= need {
                break;
            }
            freed += g;
            out.push(x);
        }
        for &x in &out {
            if let Some(gpus) = self.state.assignment.placed.get(&x) {
                mv.touched.extend(gpus.keys().copied());
            }
        }
        let score_before = self.score(&mv.touched, &out);
        for &x in &out {
            let gpus = self.state.release(x);
            mv.released.push((x, gpus));
        }
        // j on n, whole.
        let fits = self.state.avail_count(n, job.priority) >= job.gpus
            && self.state.fits_resources(n, job, job.gpus)
            && self.state.quota_allows(job);
        let on_n = fits
            .then(|| self.state.pick_indices(j, &[(n, job.gpus)]))
            .flatten();
        let Some(gpus) = on_n else {
            self.undo(mv);
            return false;
        };
        self.state.commit(j, gpus);
        // The released jobs again, largest first, where the greedy puts them.
        let mut again: Vec<usize> = out[1..].to_vec();
        again.sort_by_key(|&x| (std::cmp::Reverse(inst.pending[x].gpus), x));
        for x in again {
            if !self.state.quota_allows(&inst.pending[x]) {
                continue;
            }
            if let Some(gpus) = find_placement(&self.state, self.topo, x) {
                mv.touched.extend(gpus.keys().copied());
                self.state.commit(x, gpus);
            }
        }
        let score_after = self.score(&mv.touched, &out);
        if score_after > score_before + 1e-9 {
            true
        } else {
            self.undo(mv);
            false
        }
    }

    /// Put back the plan as it was before the move.
    fn undo(&mut self, mv: Move) {
        for (x, _) in &mv.released {
            self.state.release(*x);
        }
        for (x, gpus) in mv.released {
            if let Some(gpus) = gpus {
                self.state.commit(x, gpus);
            }
        }
    }

    /// The part of the objective a move of `jobs` over `nodes` can change: their value and
    /// spread, the fairness term, and the packing penalty of those nodes.
    fn score(&self, nodes: &BTreeSet<NodeIx>, jobs: &[usize]) -> f64 {
        let state = &self.state;
        let inst = state.inst;
        let w = &inst.policy.weights;
        let mut s = -fairness_penalty(w, &self.fair, &state.held);
        for &x in jobs {
            if let Some(gpus) = state.assignment.placed.get(&x) {
                s += self.value[x] - job_spread(inst, self.topo, &inst.pending[x], gpus);
            }
        }
        for &n in nodes {
            let usable = inst.nodes[n].down.iter().filter(|d| !**d).count() as u32;
            s -= node_packing(w, usable, self.busy_before[n], state.busy[n]);
        }
        s
    }
}

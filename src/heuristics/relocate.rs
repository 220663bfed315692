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
//! and a move that does not raise it is undone exactly (it runs inside a
//! [`crate::round_state::Transaction`]). Victims whose GPUs no job takes in the end are
//! released at the close ([`super::greedy::keep_needed_victims`]).

use super::greedy::keep_needed_victims;
use super::move_score::MoveScore;
use super::placement::find_placement;
use crate::assignment::Assignment;
use crate::instance::{Instance, NodeIx};
use crate::objective::{job_spread, value_per_gpu};
use crate::round_state::RoundState;
use crate::state::ClusterState;
use crate::topology::Topology;
use crate::units::TOLERANCE;
use std::collections::BTreeSet;
use std::time::Instant;

/// Nodes tried for one job, best first.
const NODES_TRIED: usize = 4;

/// Improve `plan` by relocation moves until `until`: first the placed jobs that pay spread
/// but fit one node (most spread first), then the jobs of `insert` that wait, in that order.
/// Returns a plan whose objective is at least `plan`'s, or `None` where no move was kept
/// (nothing is set up where `until` has passed: at 100k GPUs that took 0.1 s past the work
/// deadline).
pub fn relocate(
    inst: &Instance,
    topo: &Topology,
    plan: &Assignment,
    insert: &[usize],
    until: Instant,
) -> Option<Assignment> {
    if Instant::now() >= until {
        return None;
    }
    let before = ClusterState::new(inst);
    let mut state = RoundState::with_plan(inst, &before, plan);
    let search = Search {
        inst,
        topo,
        score: MoveScore::new(inst, topo, &before),
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
        per_gpu: inst
            .pending
            .iter()
            .map(|j| value_per_gpu(inst, j))
            .collect(),
        accepts: inst.pending.iter().map(|j| topo.type_mask(j)).collect(),
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
        kept += search.improve(&mut state, j) as usize;
    }
    // (A second sweep over the same jobs kept 1 more move of 200 on the 100k-GPU round.)
    tracing::debug!(spread_gangs, tried, kept, "relocation moves");
    if kept == 0 || !keep_needed_victims(&mut state, &plan.preempted).is_empty() {
        // No move, or the moves took away the work that outranked a victim (SPEC rule 5).
        return None;
    }
    Some(state.assignment)
}

/// What choosing and scoring a move on the working plan needs.
struct Search<'s> {
    inst: &'s Instance,
    topo: &'s Topology,
    /// The part of the objective a move changes (and each pending job's value).
    score: MoveScore<'s>,
    /// Most GPUs of one node, per GPU type.
    widest: Vec<u32>,
    /// Per pending job: its value per GPU, and the GPU types it accepts.
    per_gpu: Vec<f64>,
    accepts: Vec<Vec<bool>>,
}

impl Search<'_> {
    /// Whether job j could sit whole on one node of a type it accepts.
    fn fits_one_node(&self, j: usize) -> bool {
        let job = &self.inst.pending[j];
        let mask = &self.accepts[j];
        job.gpus > 0
            && job.gpu_milli.is_none()
            && job.gpus_per_node.is_none_or(|k| k >= job.gpus)
            && (0..self.widest.len()).any(|t| mask[t] && self.widest[t] >= job.gpus)
    }

    /// Try job j on its best few nodes; keep the first move that raises the objective (true).
    fn improve(&self, state: &mut RoundState, j: usize) -> bool {
        let holes = self.largest_holes(state, j);
        self.candidates(state, j, &holes)
            .into_iter()
            .any(|node| self.try_on(state, j, node, &holes))
    }

    /// Nodes where j could start whole once the plan's jobs there move: those displacing the
    /// least value that would find no room again first, then those whose largest moved job is
    /// smallest (small jobs fill the pieces j leaves; a whole 8-GPU job moved for a split
    /// 8-GPU gang never finds room again), then the fewest GPUs moved, then the lowest index.
    /// Measured with the smallest-largest key (`bench --family all --sizes 1k,10k`, 1 s, seeds
    /// 1-2, 44 rounds): up on 17 (partial-nodes +0.18-0.31%, quotas 10k seed 1 +0.17%: kept
    /// moves 7 to 26, constrained and sharers 10k +0.13-0.18%), down on 3 within the run-to-run
    /// spread of a 1 s round; at 100k GPUs (3 s) partial-nodes, sharers and constrained
    /// +0.03-0.09%.
    fn candidates(&self, state: &RoundState, j: usize, holes: &[u32]) -> Vec<NodeIx> {
        let inst = self.inst;
        let job = &inst.pending[j];
        let mask = &self.accepts[j];
        // The best NODES_TRIED so far, best first: (value lost, largest job moved, GPUs
        // moved, node).
        let mut best: Vec<(f64, u32, u32, NodeIx)> = Vec::with_capacity(NODES_TRIED + 1);
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
            if worst.is_some_and(|w| w.0 == 0.0 && w.1 <= 1 && w.2 <= need) {
                continue; // cannot beat the nodes found
            }
            let (mut freed, mut lost, mut largest) = (0, 0.0, 0);
            self.evictions(state, n, j, holes, &mut on);
            for &(x, g, fits_back) in &on {
                if freed >= need {
                    break;
                }
                freed += g;
                largest = largest.max(inst.pending[x].gpus);
                if !fits_back {
                    lost += self.score.value[x];
                }
            }
            let key = (lost, largest, need, n);
            let rank = |a: &(f64, u32, u32, NodeIx), b: &(f64, u32, u32, NodeIx)| {
                a.0.total_cmp(&b.0)
                    .then((a.1, a.2, a.3).cmp(&(b.1, b.2, b.3)))
            };
            let at = best.partition_point(|b| rank(b, &key).is_lt());
            if at < NODES_TRIED {
                best.insert(at, key);
                best.truncate(NODES_TRIED);
            }
        }
        best.into_iter().map(|r| r.3).collect()
    }

    /// Per GPU type, the most GPUs one node has free, counting job j's own GPUs as free: where
    /// a job moved off a node could go (GPUs freed by victims aside: not every job may take
    /// them).
    fn largest_holes(&self, state: &RoundState, j: usize) -> Vec<u32> {
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
    fn evictions(
        &self,
        state: &RoundState,
        n: NodeIx,
        j: usize,
        holes: &[u32],
        on: &mut Vec<(usize, u32, bool)>,
    ) {
        on.clear();
        for &x in state.taken[n].iter().flatten().filter(|&&x| x != j) {
            match on.iter_mut().find(|e| e.0 == x) {
                Some(e) => e.1 += 1,
                None => {
                    let gpus = self.inst.pending[x].gpus;
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
    fn try_on(&self, state: &mut RoundState, j: usize, n: NodeIx, holes: &[u32]) -> bool {
        let inst = self.inst;
        let job = &inst.pending[j];
        let out = self.to_release(state, j, n, holes);
        // Nodes whose occupancy the move changes.
        let mut touched = BTreeSet::from([n]);
        for &x in &out {
            if let Some(gpus) = state.assignment.placed.get(&x) {
                touched.extend(gpus.keys().copied());
            }
        }
        let score_before = self.score.score(state, &touched, &out);
        let mut mv = state.transaction();
        for &x in &out {
            mv.release(x);
        }
        // j on n, whole.
        let fits = mv.avail_count(n, job.priority) >= job.gpus
            && mv.fits_resources(n, job, job.gpus)
            && mv.quota_allows(job);
        let Some(gpus) = fits.then(|| mv.pick_indices(j, &[(n, job.gpus)])).flatten() else {
            return false;
        };
        mv.commit(j, gpus);
        // The released jobs again, largest first, where the greedy puts them.
        let mut again: Vec<usize> = out[1..].to_vec();
        again.sort_by_key(|&x| (std::cmp::Reverse(inst.pending[x].gpus), x));
        for x in again {
            if !mv.quota_allows(&inst.pending[x]) {
                continue;
            }
            if let Some(gpus) = find_placement(&mv, self.topo, x) {
                touched.extend(gpus.keys().copied());
                mv.commit(x, gpus);
            }
        }
        let score_after = self.score.score(&mv, &touched, &out);
        let better = score_after > score_before + TOLERANCE;
        if better {
            mv.keep();
        }
        better
    }

    /// The jobs a move of j onto n releases: j itself, then the cheapest on n until j fits.
    fn to_release(&self, state: &RoundState, j: usize, n: NodeIx, holes: &[u32]) -> Vec<usize> {
        let job = &self.inst.pending[j];
        let mut out = vec![j];
        let own = state.taken[n].iter().filter(|&&t| t == Some(j)).count() as u32;
        let need = job
            .gpus
            .saturating_sub(state.avail_count(n, job.priority) + own);
        let mut freed = 0;
        let mut on = Vec::new();
        self.evictions(state, n, j, holes, &mut on);
        for (x, g, _) in on {
            if freed >= need {
                break;
            }
            freed += g;
            out.push(x);
        }
        out
    }
}

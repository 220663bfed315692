//! Repacking: ruin and recreate on a finished plan, for rounds where CPU, memory or GPU
//! shapes make the packing of a few nodes decide how many jobs start.
//!
//! A plan built job by job can leave a node's GPUs idle because the CPU or memory left there
//! suits no waiting job, while another arrangement of the same nodes would start more: on the
//! 48-node tight-cpu round of seed 2 (77 pending), the optimum starts every job of the
//! aggregated path's plan and seven more, with nearly every job on other nodes. Trades
//! ([`super::trade`]) move one job at a time and cannot reach it. A repack move:
//!
//! 1. **ruins** a region: a node drawn at random (most often one with idle GPUs, else one on
//!    which the plan starts a job: a more valuable waiting job may take its place) and 1 to
//!    [`MOST_PARTNERS`] nodes of its GPU type on which the plan starts jobs (most of them
//!    from its rack); every job the plan starts there is released (a gang wholly, wherever
//!    its other GPUs are);
//! 2. **recreates**: the released jobs and up to [`MOST_WAITING`] waiting jobs that fit the
//!    region's type and room are placed again one by one by the greedy's placement search
//!    (anywhere in the cluster; on the ruined nodes only on rounds with a task distribution,
//!    where each placement would scan the cluster), in one of three orders drawn at random
//!    (largest first, value per GPU, or lightest on the region's scarcest resource first),
//!    each job's key scaled by a random factor in [1 - [`NOISE`], 1 + [`NOISE`]];
//! 3. is **kept** when the objective does not fall (an arrangement of equal worth is kept
//!    too, so that the search walks across plateaus), the change counted exactly on what the
//!    move touched ([`super::move_score`]), and undone exactly otherwise (a
//!    [`crate::round_state::Transaction`]).
//!
//! The moves are drawn from a generator seeded by the policy's `seed`, so the same round gives
//! the same plan; the search stops after [`most_moves`] moves, after [`MOST_FRUITLESS`] moves
//! in a row that raised nothing, or at its deadline (then the plan depends on the machine's
//! speed, and the caller says so). Victims whose GPUs no job takes in the end are released at
//! the close ([`super::greedy::keep_needed_victims`]).

use super::greedy::{greedy_order, keep_needed_victims, Order};
use super::move_score::{MoveScore, Ranking};
use super::placement::{find_placement_on, Nodes};
use super::stop::StopWhen;
use crate::assignment::Assignment;
use crate::instance::{Instance, NodeIx, PendingJob};
use crate::round_state::{RoundState, Transaction};
use crate::state::ClusterState;
use crate::topology::Topology;
use crate::units::TOLERANCE;
use rand::seq::{IteratorRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};

/// Moves tried at most on rounds of up to 250 nodes. (On the 48-node rounds of tight-cpu,
/// skewed-resources, sharers and mixed-types, 77 pending, and their 125-node rounds, 400
/// pending, seeds 1-4, 1 s: 3,000 moves with 1,000 fruitless gave plans 0.2% lower on average
/// than 20,000 with 3,000, which took 0.2-0.3 s at 48 nodes; these limits lie between.)
pub const MOST_MOVES: usize = 10_000;

/// Moves tried at most per node on larger rounds ([`most_moves`]). A move touches a few
/// nodes, so a fixed count covers less of a larger cluster: on 1,250-node tight-cpu rounds
/// with a 10 s limit, 10,000 moves ended in 1.6-1.9 s with moves still being kept; with up to
/// 60,000 (cut at the deadline or by [`MOST_FRUITLESS`] after 23,000-25,000) the plans rose
/// by 0.55% (gangs of up to 16 GPUs, 2,000 pending), 0.08% (tight-cpu, 4,000 pending) and
/// 0.05% (skewed-resources). Rounds of 1 s stop at their deadline long before either count.
pub const MOST_MOVES_PER_NODE: usize = 40;

/// Moves tried at most on a round of `nodes` nodes: [`MOST_MOVES`], or
/// [`MOST_MOVES_PER_NODE`] per node where that is more.
pub fn most_moves(nodes: usize) -> usize {
    MOST_MOVES.max(MOST_MOVES_PER_NODE * nodes)
}

/// Moves in a row that raised nothing (undone, or kept sideways) after which the search
/// stops. Sideways moves walk a plateau, and a better arrangement often lies past more than
/// 1,500 of them: on 48-200-node rounds (the seven CPU-bound and mixed families at 48 nodes,
/// seeds 1-2, and the saved rounds of `instances/bench`; 20 rounds, 1 s) 6,000 raised 11
/// plans and lowered 1 (mean +0.085%, up to +0.48%; at 3 s, 16 rounds: +0.083%, 9 up, 2
/// down), where 1,500 had stopped several searches with nothing kept; 20,000 gave the same
/// plans as 6,000. On 1,250-node rounds the deadline ends the search first (44 family rounds
/// at 1 s: mean +0.005%).
pub const MOST_FRUITLESS: usize = 6000;

/// Nodes a region holds besides its idle node, at most.
pub const MOST_PARTNERS: usize = 4;

/// Waiting jobs a move tries to start, at most.
pub const MOST_WAITING: usize = 48;

/// Share of a region's partners drawn from its idle node's rack (the rest from any rack).
const SAME_RACK: f64 = 0.75;

/// Share of regions drawn around a node with idle GPUs, where there is one (the others
/// around any node on which the plan starts a job: a more valuable job may take its place).
const IDLE_SEED: f64 = 0.75;

/// Sideways moves after which the nodes regions are drawn from are listed again on rounds
/// of more than [`MOST_MOVES`] / [`MOST_MOVES_PER_NODE`] nodes ([`Seeds`]; a move that raises
/// the objective lists them again at once, and on smaller rounds every kept move does). A
/// list a few sideways moves old still draws valid regions (any nodes can be ruined), only
/// not quite the ones the draw's rules name; listing them after each of the many sideways
/// moves of a 1,250-node quota-bound round took a third of its moves' time.
const STALE_SIDEWAYS: usize = 64;

/// Sideways moves after which a round of `nodes` nodes lists its region seeds again
/// ([`STALE_SIDEWAYS`]).
fn most_stale_sideways(nodes: usize) -> usize {
    if most_moves(nodes) > MOST_MOVES {
        STALE_SIDEWAYS
    } else {
        1
    }
}

/// Relative noise on the recreate order's keys.
const NOISE: f64 = 0.25;

/// What the search did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Repacked {
    /// Moves tried.
    pub tried: usize,
    /// Moves kept that raised the objective.
    pub kept: usize,
    /// Moves kept that left the objective as it was (another arrangement of equal worth).
    pub sideways: usize,
    /// Whether the deadline (or the event that cut it) ended the search.
    pub cut_short: bool,
}

/// Improve `plan` by ruin-and-recreate moves until `until` ([`StopWhen`]: a deadline, or one
/// cut by an event; see the module's doc). Returns a plan whose objective is at least
/// `plan`'s, and what the search did.
pub fn repack(
    inst: &Instance,
    topo: &Topology,
    plan: &Assignment,
    until: impl StopWhen,
) -> (Assignment, Repacked) {
    let before = ClusterState::new(inst);
    let mut state = RoundState::with_plan(inst, &before, plan);
    let score = MoveScore::new(inst, topo, &before).ranked_from(&state.held);
    let plain = greedy_order(inst, Order::ValuePerGpu);
    // The fairness ranking's order, where it differs (an empty list is never drawn).
    let mut fair = Vec::new();
    if score.fair_differs {
        fair = plain.clone();
        fair.sort_by(|&a, &b| score.rank_per_gpu[b].total_cmp(&score.rank_per_gpu[a]));
    }
    let packer = Packer {
        inst,
        topo,
        score,
        orders: [plain, fair],
        accepts: inst.pending.iter().map(|j| topo.type_mask(j)).collect(),
        recreate_in_region: inst.task_dist.is_some(),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(inst.policy.seed);
    let mut done = Repacked::default();
    let mut fruitless = 0;
    let most = most_moves(inst.nodes.len());
    let mut seeds: Option<Seeds> = None;
    let mut jobs_on = JobsOn::of(inst, &state);
    let (mut stale, stale_sideways) = (0, most_stale_sideways(inst.nodes.len()));
    while done.tried < most && fruitless < MOST_FRUITLESS {
        if until.reached() {
            done.cut_short = true;
            break;
        }
        let drawn_from =
            seeds.get_or_insert_with(|| Seeds::of(inst, &state, &jobs_on, &packer.orders));
        let Some(region) = packer.region(&state, drawn_from, &mut rng) else {
            break;
        };
        done.tried += 1;
        let outcome = if region.is_empty() {
            Outcome::Undone
        } else {
            let (outcome, moved) =
                packer.try_move(&mut state, drawn_from, &jobs_on, &region, &mut rng);
            jobs_on.moved(&state, &moved);
            outcome
        };
        // A kept move changes what regions are drawn from: listed again at once after a
        // gain, after a few sideways moves on large rounds ([`most_stale_sideways`]).
        match outcome {
            Outcome::Better => {
                done.kept += 1;
                fruitless = 0;
                seeds = None;
            }
            Outcome::Sideways => {
                done.sideways += 1;
                fruitless += 1;
                stale += 1;
                if stale >= stale_sideways {
                    (seeds, stale) = (None, 0);
                }
            }
            Outcome::Undone => fruitless += 1,
        }
    }
    if done.kept + done.sideways == 0
        || !keep_needed_victims(&mut state, &plan.preempted).is_empty()
    {
        // Nothing kept, or the moves took away the work that outranked a victim (SPEC rule 5).
        return (plan.clone(), Repacked { kept: 0, ..done });
    }
    (state.assignment, done)
}

/// What became of a move.
enum Outcome {
    /// Kept: the objective rose.
    Better,
    /// Kept: the objective stayed as it was.
    Sideways,
    /// Undone: the objective would have fallen.
    Undone,
}

/// What drawing, ruining and recreating a region needs.
struct Packer<'s> {
    inst: &'s Instance,
    topo: &'s Topology,
    score: MoveScore<'s>,
    /// Pending jobs in the greedy's value-per-GPU order ([`Ranking::Value`]), and by value
    /// per GPU with fairness counted ([`Ranking::FairValue`]; ties in the greedy's order;
    /// empty where the rankings do not differ).
    orders: [Vec<usize>; 2],
    /// Per pending job, whether it accepts each GPU type (by type id).
    accepts: Vec<Vec<bool>>,
    /// Whether a recreate places its jobs on the ruined nodes only: when the round carries a
    /// task distribution. With one, a one-node placement weighs every node's fragmentation (a
    /// scan of the cluster per job); without one it finds its node through the round state's
    /// indexes. Measured (release build, 2 cores): openb `gpushare20` (1,213 nodes,
    /// `--artifact-score`, seed 42, 2 s rounds), the ruined nodes only: allocation 97.27%
    /// against 97.24%, 39 s a run against 107 s (a move 0.07 ms against 2.2 ms); on `gangplan
    /// bench --sizes small,1k,10k --time-limit 1` (seed 1) the ruined nodes only lose 0.40% on
    /// mixed small, 0.08-0.11% on mixed 1k/10k and quotas 10k, and win 0.22% on tight-cpu 10k:
    /// moving a job off the region to free it for a waiting one pays there.
    recreate_in_region: bool,
}

/// The orders a recreate may place its jobs in.
#[derive(Clone, Copy)]
enum Recreate {
    /// Most GPUs first, then value per GPU.
    LargestFirst,
    /// Value per GPU.
    ValuePerGpu,
    /// Value per share of the region's scarcest resource the job takes.
    Lightest,
}

impl Packer<'_> {
    /// A region to ruin: a node drawn at random ([`IDLE_SEED`]), and partners of its type
    /// holding jobs the plan starts; empty when the node drawn has no partner and starts no
    /// job itself. `None` when no node has idle GPUs or starts a job.
    fn region(
        &self,
        state: &RoundState,
        seeds: &Seeds,
        rng: &mut ChaCha8Rng,
    ) -> Option<Vec<NodeIx>> {
        let (idle, busy) = (&seeds.idle, &seeds.started);
        let seed = if !idle.is_empty() && rng.gen_bool(IDLE_SEED) {
            *idle.choose(rng)?
        } else {
            *busy.choose(rng).or(idle.choose(rng))?
        };
        let t = state.node_type[seed];
        let rack = self.inst.nodes[seed].rack;
        let holding = But(seeds.of_type(t), seed);
        let near = But(seeds.of_type_in_rack(t, rack), seed);
        let mut region = vec![seed];
        for _ in 0..rng.gen_range(1..=MOST_PARTNERS) {
            let from = if !near.is_empty() && rng.gen_bool(SAME_RACK) {
                near
            } else {
                holding
            };
            if let Some(n) = from.choose(rng) {
                if !region.contains(&n) {
                    region.push(n);
                }
            }
        }
        if region.len() == 1 && busy.binary_search(&seed).is_err() {
            region.clear();
        }
        Some(region)
    }

    /// Ruin `region`, recreate it, and keep the result when the objective does not fall.
    fn try_move(
        &self,
        state: &mut RoundState,
        seeds: &Seeds,
        jobs_on: &JobsOn,
        region: &[NodeIx],
        rng: &mut ChaCha8Rng,
    ) -> (Outcome, Vec<(usize, Vec<NodeIx>)>) {
        let released = jobs_on.started_on(region);
        let moved: Vec<(usize, Vec<NodeIx>)> = released
            .iter()
            .map(|&j| (j, state.assignment.placed[&j].keys().copied().collect()))
            .collect();
        let mut nodes: BTreeSet<NodeIx> = region.iter().copied().collect();
        nodes.extend(moved.iter().flat_map(|(_, held)| held.iter().copied()));
        let before = self.score.score(state, &nodes, &released);
        let mut mv = state.transaction();
        for &j in &released {
            mv.release(j);
        }
        let room = RegionRoom::of(&mv, region);
        let mut jobs = released.clone();
        let t = mv.node_type[region[0]];
        // Draw a ranking only where the two differ: other rounds keep their moves.
        let ranking = match Ranking::all(&self.score) {
            [only] => *only,
            both => both[rng.gen_range(0..both.len())],
        };
        let waiting = seeds.waiting(ranking);
        jobs.extend(self.waiting_for(&mv, waiting, t, &room, &released, rng));
        let order = match rng.gen_range(0..3) {
            0 => Recreate::LargestFirst,
            1 => Recreate::ValuePerGpu,
            _ => Recreate::Lightest,
        };
        self.sort(&mut jobs, (order, ranking), &room, rng);
        let mut costs_before = 0.0;
        // The ruined nodes as a list, only where the recreate is kept to them.
        let region_nodes: Vec<NodeIx> = if self.recreate_in_region {
            nodes.iter().copied().collect()
        } else {
            Vec::new()
        };
        let scope = if self.recreate_in_region {
            Nodes::Only(&region_nodes)
        } else {
            Nodes::All
        };
        for &j in &jobs {
            if !mv.quota_allows(&self.inst.pending[j]) {
                continue;
            }
            let Some(gpus) = find_placement_on(&mv, self.topo, j, scope) else {
                continue;
            };
            for &e in gpus.keys() {
                if nodes.insert(e) {
                    costs_before += self.score.node_cost(&mv, e);
                }
            }
            mv.commit(j, gpus);
        }
        let after = self.score.score(&mv, &nodes, &jobs);
        let outcome = if after > before - costs_before + TOLERANCE {
            Outcome::Better
        } else if after >= before - costs_before - TOLERANCE {
            Outcome::Sideways
        } else {
            return (Outcome::Undone, Vec::new());
        };
        mv.keep();
        let started = jobs
            .iter()
            .filter(|j| released.binary_search(j).is_err())
            .map(|&j| (j, Vec::new()));
        (outcome, moved.into_iter().chain(started).collect())
    }

    /// Waiting jobs the recreate tries besides the `released` ones: in value-per-GPU order,
    /// each passed over with probability a half past the first [`MOST_WAITING`] / 2, those
    /// that accept the region's type t and ask at most its free GPUs, up to [`MOST_WAITING`].
    fn waiting_for(
        &self,
        mv: &Transaction,
        waiting: &[usize],
        t: usize,
        room: &RegionRoom,
        released: &[usize],
        rng: &mut ChaCha8Rng,
    ) -> Vec<usize> {
        let mut out = Vec::new();
        for &j in waiting {
            if out.len() >= MOST_WAITING {
                break;
            }
            let job = &self.inst.pending[j];
            if mv.assignment.placed.contains_key(&j)
                || released.contains(&j)
                || job.gpus as f64 > room.gpus
                || !self.accepts[j][t]
            {
                continue;
            }
            if out.len() < MOST_WAITING / 2 || rng.gen_bool(0.5) {
                out.push(j);
            }
        }
        out
    }

    /// Sort `jobs` for the recreate in `order`, values by `ranking` (`room`: the region's,
    /// emptied), each key scaled by random noise.
    fn sort(
        &self,
        jobs: &mut [usize],
        (order, ranking): (Recreate, Ranking),
        room: &RegionRoom,
        rng: &mut ChaCha8Rng,
    ) {
        let per_gpu = |j| self.score.per_gpu_by(ranking, j);
        let value = |j| self.score.value_by(ranking, j);
        let mut keyed: Vec<(f64, u32, usize)> = jobs
            .iter()
            .map(|&j| {
                let job = &self.inst.pending[j];
                let noise = 1.0 + rng.gen_range(-NOISE..=NOISE);
                let (key, size) = match order {
                    Recreate::LargestFirst => (per_gpu(j) * noise, job.gpus),
                    Recreate::ValuePerGpu => (per_gpu(j) * noise, 0),
                    Recreate::Lightest => (value(j) / room.share(job) * noise, 0),
                };
                (key, size, j)
            })
            .collect();
        keyed.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.total_cmp(&a.0)).then(a.2.cmp(&b.2)));
        for (slot, (_, _, j)) in jobs.iter_mut().zip(keyed) {
            *slot = j;
        }
    }
}

/// The nodes a region is drawn from: listed once and kept while moves are undone (most are)
/// or go sideways ([`STALE_SIDEWAYS`]), so that drawing a region does not scan the cluster
/// each time (on 1,250-node rounds that scan took a third of a move's time or more).
struct Seeds {
    /// Nodes with idle GPUs (free, or freed by a victim), ascending.
    idle: Vec<NodeIx>,
    /// Nodes on which the plan starts a job (whole GPUs, a share, or a CPU-only job),
    /// ascending.
    started: Vec<NodeIx>,
    /// `started` by GPU type, and by GPU type and rack (each ascending).
    started_of_type: BTreeMap<usize, Vec<NodeIx>>,
    started_of_type_in_rack: BTreeMap<(usize, usize), Vec<NodeIx>>,
    /// The pending jobs the plan does not start, in each of the packer's orders (by
    /// [`Ranking`]; the recreate checks each again: the lists may be a few sideways moves old).
    waiting: [Vec<usize>; 2],
}

impl Seeds {
    fn of(inst: &Instance, state: &RoundState, jobs_on: &JobsOn, orders: &[Vec<usize>; 2]) -> Self {
        let idle = (0..inst.nodes.len())
            .filter(|&n| state.free[n] + state.freed[n].len() as u32 > 0)
            .collect();
        let started: Vec<NodeIx> = (0..inst.nodes.len())
            .filter(|&n| !jobs_on.0[n].is_empty())
            .collect();
        let mut started_of_type: BTreeMap<usize, Vec<NodeIx>> = BTreeMap::new();
        let mut started_of_type_in_rack: BTreeMap<(usize, usize), Vec<NodeIx>> = BTreeMap::new();
        for &n in &started {
            let t = state.node_type[n];
            started_of_type.entry(t).or_default().push(n);
            started_of_type_in_rack
                .entry((t, inst.nodes[n].rack))
                .or_default()
                .push(n);
        }
        let waiting = orders.clone().map(|mut order| {
            order.retain(|j| !state.assignment.placed.contains_key(j));
            order
        });
        Seeds {
            idle,
            started,
            started_of_type,
            started_of_type_in_rack,
            waiting,
        }
    }

    /// The waiting jobs in `ranking`'s order.
    fn waiting(&self, ranking: Ranking) -> &[usize] {
        match ranking {
            Ranking::Value => &self.waiting[0],
            Ranking::FairValue => &self.waiting[1],
        }
    }

    /// The nodes of type t on which the plan starts a job.
    fn of_type(&self, t: usize) -> &[NodeIx] {
        self.started_of_type.get(&t).map_or(&[], Vec::as_slice)
    }

    /// The nodes of type t in `rack` on which the plan starts a job.
    fn of_type_in_rack(&self, t: usize, rack: usize) -> &[NodeIx] {
        self.started_of_type_in_rack
            .get(&(t, rack))
            .map_or(&[], Vec::as_slice)
    }
}

/// Per node, the jobs the plan starts there (ascending): a region's jobs found without a
/// scan of the plan (on 1,250-node rounds that scan was a fifth of a move's time), kept
/// exact after every kept move.
struct JobsOn(Vec<Vec<usize>>);

impl JobsOn {
    fn of(inst: &Instance, state: &RoundState) -> Self {
        let mut on = vec![Vec::new(); inst.nodes.len()];
        for (&j, gpus) in &state.assignment.placed {
            for &n in gpus.keys() {
                on[n].push(j);
            }
        }
        JobsOn(on)
    }

    /// The jobs the plan starts on the nodes of `region`, ascending.
    fn started_on(&self, region: &[NodeIx]) -> Vec<usize> {
        let mut jobs: Vec<usize> = region
            .iter()
            .flat_map(|&n| self.0[n].iter().copied())
            .collect();
        jobs.sort_unstable();
        jobs.dedup();
        jobs
    }

    /// After a kept move: each `moved` job (with the nodes it held before) off its old
    /// nodes and onto those the plan now gives it.
    fn moved(&mut self, state: &RoundState, moved: &[(usize, Vec<NodeIx>)]) {
        for (j, old) in moved {
            for &n in old {
                self.0[n].retain(|x| x != j);
            }
            for &n in state
                .assignment
                .placed
                .get(j)
                .into_iter()
                .flat_map(|g| g.keys())
            {
                let at = self.0[n].partition_point(|x| x < j);
                self.0[n].insert(at, *j);
            }
        }
    }
}

/// A list of nodes (ascending) without one of them, drawn from without building the shorter
/// list: the same draws as from that list.
#[derive(Clone, Copy)]
struct But<'a>(&'a [NodeIx], NodeIx);

impl But<'_> {
    /// Where the left-out node sits in the list, if it is there.
    fn at(&self) -> Option<usize> {
        self.0.binary_search(&self.1).ok()
    }

    fn len(&self) -> usize {
        self.0.len() - usize::from(self.at().is_some())
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A node drawn uniformly, as [`SliceRandom::choose`] draws from the shorter list.
    fn choose(&self, rng: &mut ChaCha8Rng) -> Option<NodeIx> {
        let i = (0..self.len()).choose(rng)?;
        let skip = self.at().is_some_and(|at| i >= at);
        Some(self.0[i + usize::from(skip)])
    }
}

/// A region's free GPUs (whole, and freed by victims), CPU and memory, summed (a node without
/// a CPU or memory size counts as having none of that resource to share out).
struct RegionRoom {
    gpus: f64,
    cpu: f64,
    mem: f64,
}

impl RegionRoom {
    fn of(mv: &Transaction, region: &[NodeIx]) -> Self {
        let sum = |f: &dyn Fn(NodeIx) -> f64| region.iter().map(|&n| f(n)).sum::<f64>();
        RegionRoom {
            gpus: sum(&|n| (mv.free[n] + mv.freed[n].len() as u32) as f64),
            cpu: sum(&|n| mv.cpu_free[n].unwrap_or(0).max(0) as f64),
            mem: sum(&|n| mv.mem_free[n].unwrap_or(0).max(0) as f64),
        }
    }

    /// The largest share of the region's room the job takes of one resource (at least a
    /// small positive number, so that keys stay finite).
    fn share(&self, job: &PendingJob) -> f64 {
        let of = |need: f64, room: f64| if room > 0.0 { need / room } else { 0.0 };
        of(job.gpus as f64, self.gpus)
            .max(of(job.cpu_milli as f64, self.cpu))
            .max(of(job.memory_mib as f64, self.mem))
            .max(1e-6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drawing from a list without one node gives the same nodes, draw for draw, as drawing
    /// from the shorter list itself, wherever that node sits (or when it is not there).
    #[test]
    fn a_list_without_a_node_draws_as_the_shorter_list() {
        let list: Vec<NodeIx> = vec![2, 3, 5, 8, 13, 21];
        for left_out in [2, 8, 21, 4] {
            let shorter: Vec<NodeIx> = list.iter().copied().filter(|&n| n != left_out).collect();
            let but = But(&list, left_out);
            assert_eq!(but.len(), shorter.len());
            let (mut a, mut b) = (ChaCha8Rng::seed_from_u64(7), ChaCha8Rng::seed_from_u64(7));
            for _ in 0..200 {
                assert_eq!(but.choose(&mut a), shorter.choose(&mut b).copied());
            }
        }
        let only = [4];
        assert!(But(&only, 4).is_empty());
        assert_eq!(
            But(&only, 4).choose(&mut ChaCha8Rng::seed_from_u64(1)),
            None
        );
    }
}

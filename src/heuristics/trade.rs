//! Trades: local moves on a finished plan for the nodes whose free GPUs the CPU and memory
//! left there strand.
//!
//! A planner that places jobs one at a time in value order fills a node's CPU or memory with
//! the jobs that came first and can leave some of its GPUs free with too little CPU or memory
//! for any waiting job, while lighter jobs wait. A trade on node n with free whole GPUs:
//!
//! 1. fills n from the waiting jobs that fit it whole (nothing released), or
//! 2. releases one of the plan's jobs x holding GPUs on n, fills every node x held from the
//!    waiting jobs, and places x again where the greedy puts it (it waits when no room is
//!    left): a gang whose pieces take its nodes' CPU strands GPUs on each of them,
//!
//! filling in one of two orders: by value per GPU, or by value per share of n's room that the
//! job takes of its scarcest resource (GPUs, CPU or memory), so that light jobs pack what a
//! heavy one would strand; each with the values counting the fairness a job's GPUs buy first,
//! where that ranks otherwise ([`super::move_score::Ranking`]), then without. A trade stays
//! when the objective rises, the change counted exactly on what it touched
//! ([`super::move_score`]); one that does not is undone exactly (it runs in
//! a [`crate::round_state::Transaction`]). Each node is traded on until no trade pays (at
//! most [`TRADES_PER_NODE`] times), node by node, in up to [`SWEEPS`] sweeps while the last
//! one kept a trade. Victims whose GPUs no job takes in the end are released at the close
//! ([`super::greedy::keep_needed_victims`]).

use super::greedy::keep_needed_victims;
use super::move_score::{MoveScore, Ranking};
use super::placement::find_placement;
use super::stop::StopWhen;
use crate::assignment::Assignment;
use crate::instance::{Instance, NodeIx, PendingJob};
use crate::round_state::{RoundState, Transaction};
use crate::state::ClusterState;
use crate::topology::Topology;
use crate::units::TOLERANCE;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

/// Most trades kept on one node before the next node is looked at (a node of 8 GPUs needs a
/// few; the cap bounds a pass on nodes of many GPUs).
const TRADES_PER_NODE: usize = 8;

/// Sweeps over the nodes at most (a choice: on the tight-cpu rounds of 1k and 10k GPUs the
/// second sweep kept no trade).
const SWEEPS: usize = 4;

/// Waiting jobs of one shape looked at on a node before the shape is passed over.
const SAME_SHAPE_TRIED: usize = 4;

/// Improve `plan` by trades until `until` ([`StopWhen`]: a deadline, or one cut by an event),
/// node by node in index order. Returns a plan whose objective is at least `plan`'s, and how
/// many trades were kept.
pub fn trade(
    inst: &Instance,
    topo: &Topology,
    plan: &Assignment,
    until: impl StopWhen,
) -> (Assignment, usize) {
    let before = ClusterState::new(inst);
    let mut state = RoundState::with_plan(inst, &before, plan);
    let mut trader = Trader {
        inst,
        topo,
        score: MoveScore::new(inst, topo, &before).ranked_from(&state.held),
        waiting: BTreeMap::new(),
    };
    trader.wait_all((0..inst.pending.len()).filter(|j| !plan.placed.contains_key(j)));
    let (mut nodes, mut kept) = (0, 0);
    for sweep in 0..SWEEPS {
        let kept_before = kept;
        for n in most_free_first(&state.free) {
            if state.free[n] == 0 {
                continue;
            }
            if until.reached() {
                break;
            }
            nodes += 1;
            for _ in 0..TRADES_PER_NODE {
                if !trader.trade_on(&mut state, n) {
                    break;
                }
                kept += 1;
            }
        }
        tracing::debug!(sweep, nodes, kept, "trade sweep");
        if kept == kept_before {
            break;
        }
    }
    if !keep_needed_victims(&mut state, &plan.preempted).is_empty() {
        // The trades took away the work that outranked a victim (SPEC rule 5).
        return (plan.clone(), 0);
    }
    (state.assignment, kept)
}

/// The nodes with free GPUs, most free first, then by index: where a round's time cuts the
/// sweep, the nodes with the most GPUs to fill come first.
fn most_free_first(free: &[u32]) -> Vec<NodeIx> {
    let mut nodes: Vec<NodeIx> = (0..free.len()).filter(|&n| free[n] > 0).collect();
    nodes.sort_by_key(|&n| (std::cmp::Reverse(free[n]), n));
    nodes
}

/// Waiting jobs that fit one node whole, grouped by what they ask of a node: (GPUs, CPU,
/// memory, accepted GPU types). Within a group, the jobs by value per GPU (best first), then
/// index.
type Shape = (u32, u64, u64, Vec<bool>);

/// How a fill ranks the waiting jobs that fit.
#[derive(Clone, Copy)]
enum FillOrder {
    /// Value per GPU.
    ValuePerGpu,
    /// Value per share of the node's room its scarcest resource takes.
    ValuePerRoom,
}

/// What choosing and scoring a trade needs.
struct Trader<'s> {
    inst: &'s Instance,
    topo: &'s Topology,
    score: MoveScore<'s>,
    /// The waiting jobs that could sit whole on one node, by shape (a job leaves its list
    /// when a kept trade starts it; those a trade under way started are skipped).
    waiting: BTreeMap<Shape, Vec<usize>>,
}

impl Trader<'_> {
    /// Whether pending job j is listed when it waits: a whole-GPU job that may sit on one node.
    fn listed(&self, j: usize) -> bool {
        let job = &self.inst.pending[j];
        job.gpus > 0 && !job.is_sharer() && job.gpus_per_node.is_none_or(|k| k >= job.gpus)
    }

    /// The order within a shape's list: value per GPU with fairness counted
    /// ([`MoveScore::ranked_from`]), best first, then index.
    fn rank(&self, a: usize, b: usize) -> std::cmp::Ordering {
        self.score.rank_per_gpu[b]
            .total_cmp(&self.score.rank_per_gpu[a])
            .then(a.cmp(&b))
    }

    /// List the waiting jobs `jobs` (those [`Trader::listed`]), each list sorted once.
    fn wait_all(&mut self, jobs: impl Iterator<Item = usize>) {
        let mut lists = std::mem::take(&mut self.waiting);
        for j in jobs.filter(|&j| self.listed(j)) {
            let shape = self.shape_of(&self.inst.pending[j]);
            lists.entry(shape).or_default().push(j);
        }
        for list in lists.values_mut() {
            list.sort_by(|&a, &b| self.rank(a, b));
        }
        self.waiting = lists;
    }

    /// List pending job j as waiting again (a trade left it waiting), in its place.
    fn wait(&mut self, j: usize) {
        if !self.listed(j) {
            return;
        }
        let shape = self.shape_of(&self.inst.pending[j]);
        let mut lists = std::mem::take(&mut self.waiting);
        let list = lists.entry(shape).or_default();
        let at = list.partition_point(|&x| self.rank(x, j).is_lt());
        list.insert(at, j);
        self.waiting = lists;
    }

    /// What the job asks of a node.
    fn shape_of(&self, job: &PendingJob) -> Shape {
        (
            job.gpus,
            job.cpu_milli,
            job.memory_mib,
            self.topo.type_mask(job),
        )
    }

    /// Remove pending job j from the waiting lists (it started).
    fn unwait(&mut self, j: usize) {
        let shape = self.shape_of(&self.inst.pending[j]);
        if let Some(list) = self.waiting.get_mut(&shape) {
            list.retain(|&x| x != j);
        }
    }

    /// Keep the first trade on node n that raises the objective (true), trying the fill alone
    /// first, then each of the plan's jobs holding GPUs on n, the least valuable first (they
    /// cost the least to move or leave waiting).
    fn trade_on(&mut self, state: &mut RoundState, n: NodeIx) -> bool {
        let on_n: BTreeSet<usize> = state.taken[n].iter().flatten().copied().collect();
        let mut releasable: Vec<usize> = on_n.into_iter().collect();
        let value = &self.score.rank_value;
        releasable.sort_by(|&a, &b| value[a].total_cmp(&value[b]));
        let options = std::iter::once(None).chain(releasable.into_iter().map(Some));
        for out in options {
            let orders = [FillOrder::ValuePerGpu, FillOrder::ValuePerRoom];
            for order in orders
                .into_iter()
                .flat_map(|o| Ranking::all(&self.score).iter().map(move |&r| (o, r)))
            {
                if let Some((added, left_waiting)) = self.try_trade(state, n, out, order) {
                    for j in added {
                        self.unwait(j);
                    }
                    if let Some(x) = left_waiting {
                        self.wait(x);
                    }
                    return true;
                }
            }
        }
        false
    }

    /// Release `out` (if any), fill n (or every node `out` held) in `order`, place `out` again;
    /// keep it when the objective rises: the jobs started, and `out` when it was left waiting.
    fn try_trade(
        &self,
        state: &mut RoundState,
        n: NodeIx,
        out: Option<usize>,
        order: (FillOrder, Ranking),
    ) -> Option<(Vec<usize>, Option<usize>)> {
        // The nodes filled: n, or every node the released job holds GPUs on.
        let mut nodes: BTreeSet<NodeIx> = match out {
            Some(x) => state.assignment.placed[&x].keys().copied().collect(),
            None => BTreeSet::from([n]),
        };
        // The jobs the fill starts are waiting before the trade: they add nothing before.
        let before = self.score.score(state, &nodes, out.as_slice());
        let mut mv = state.transaction();
        if let Some(x) = out {
            mv.release(x);
        }
        let mut added = Vec::new();
        for &home in &nodes {
            added.extend(self.fill(&mut mv, home, order));
        }
        if added.is_empty() {
            return None;
        }
        let mut jobs = added.clone();
        // Other nodes are as before the trade until x lands there.
        let mut costs_before = 0.0;
        if let Some(x) = out {
            jobs.push(x);
            let again = mv.quota_allows(&self.inst.pending[x]);
            if let Some(gpus) = again.then(|| find_placement(&mv, self.topo, x)).flatten() {
                for &e in gpus.keys() {
                    if !nodes.contains(&e) {
                        costs_before += self.score.node_cost(&mv, e);
                        nodes.insert(e);
                    }
                }
                mv.commit(x, gpus);
            }
        }
        let after = self.score.score(&mv, &nodes, &jobs);
        if after <= before - costs_before + TOLERANCE {
            return None;
        }
        let left_waiting = out.filter(|x| !mv.assignment.placed.contains_key(x));
        mv.keep();
        Some((added, left_waiting))
    }

    /// Start waiting jobs whole on node n, best first in `order`, while one fits; the jobs
    /// started.
    fn fill(&self, mv: &mut Transaction, n: NodeIx, order: (FillOrder, Ranking)) -> Vec<usize> {
        let mut added = Vec::new();
        while let Some(j) = self.best_fit_on(mv, n, order) {
            let job = &self.inst.pending[j];
            let Some(gpus) = mv.pick_indices(j, &[(n, job.gpus)]) else {
                break;
            };
            mv.commit(j, gpus);
            added.push(j);
        }
        added
    }

    /// The waiting job to start on node n next in `order`, if any fits.
    fn best_fit_on(
        &self,
        state: &RoundState,
        n: NodeIx,
        (order, ranking): (FillOrder, Ranking),
    ) -> Option<usize> {
        let t = state.node_type[n];
        let most = state.free[n] + state.freed[n].len() as u32;
        // A whole job fits only where it asks at most the node's CPU left (or none): the
        // lists are keyed by GPUs, then CPU, so only the shapes of at most `most` GPUs and
        // that much CPU are looked at (on 12,500-node rounds, scanning every shape took most
        // of the trades' time).
        let cpu_most = state.cpu_free[n].map_or(u64::MAX, |left| left.max(0) as u64);
        let mut best: Option<(f64, usize)> = None;
        let shapes = (1..=most).flat_map(|g| {
            let past = match cpu_most.checked_add(1) {
                Some(cpu) => (g, cpu, 0, Vec::new()),
                None => (g + 1, 0, 0, Vec::new()),
            };
            let from = (g, 0, 0, Vec::new());
            self.waiting
                .range((Bound::Included(from), Bound::Excluded(past)))
        });
        for ((_, _, _, mask), list) in shapes {
            if !mask[t] {
                continue;
            }
            // Jobs of one shape differ only in priority, tenant and reservations: a few are
            // looked at, not the whole list, when the first does not fit.
            let Some(&j) = list
                .iter()
                .filter(|&&j| !state.assignment.placed.contains_key(&j))
                .take(SAME_SHAPE_TRIED)
                .find(|&&j| self.fits(state, n, j))
            else {
                continue;
            };
            let key = match order {
                FillOrder::ValuePerGpu => self.score.per_gpu_by(ranking, j),
                FillOrder::ValuePerRoom => {
                    let share = room_share(state, n, &self.inst.pending[j]);
                    self.score.value_by(ranking, j) / share.max(1e-9)
                }
            };
            if best.is_none_or(|(k, b)| key > k || (key == k && j < b)) {
                best = Some((key, j));
            }
        }
        best.map(|(_, j)| j)
    }

    /// Whether waiting job j may start whole on node n now.
    fn fits(&self, state: &RoundState, n: NodeIx, j: usize) -> bool {
        let job = &self.inst.pending[j];
        state.avail_count(n, job.priority) >= job.gpus
            && state.fits_resources(n, job, job.gpus)
            && state.quota_allows(job)
    }
}

/// The largest share of node n's room (free whole GPUs, CPU, memory left) that the job takes
/// of one resource.
fn room_share(state: &RoundState, n: NodeIx, job: &PendingJob) -> f64 {
    let gpus = job.gpus as f64 / state.avail_count(n, job.priority).max(1) as f64;
    let of = |need: u64, left: Option<i64>| match left {
        Some(l) if l > 0 => need as f64 / l as f64,
        _ => 0.0,
    };
    gpus.max(of(job.cpu_milli, state.cpu_free[n]))
        .max(of(job.memory_mib, state.mem_free[n]))
}

#[cfg(test)]
mod tests {
    use super::{most_free_first, trade};
    use crate::assignment::Assignment;
    use crate::hardware::ModelLibrary;
    use crate::instance::parse_instance;
    use crate::topology::Topology;

    /// One GPU free; `o1` (of `over`, which holds its fair share) is worth 0.1 more than `u1`
    /// (of `under`, which holds nothing of its share of 1 GPU), whose start also takes 0.3 off
    /// the fairness term.
    const ONE_FREE_GPU: &str = "
nodes:
  - {name: n1, gpus: 8}
  - {name: n2, gpus: 8}
tenants:
  - {name: over}
  - {name: under}
running:
  - {id: r1, tenant: over, gpus: {n1: [0, 1, 2, 3, 4, 5, 6, 7]}}
  - {id: r2, tenant: over, gpus: {n2: [0, 1, 2, 3, 4, 5, 6]}}
pending:
  - {id: o1, tenant: over, gpus: 1, priority: 1}
  - {id: u1, tenant: under, gpus: 1}
";

    #[test]
    fn a_fill_starts_the_job_whose_start_the_fairness_term_prices_higher() {
        let inst = parse_instance(ONE_FREE_GPU, "fair", &ModelLibrary::builtin()).unwrap();
        let topo = Topology::new(&inst);
        let far = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let (plan, kept) = trade(&inst, &topo, &Assignment::default(), far);
        assert_eq!(kept, 1);
        assert_eq!(
            plan.placed.keys().copied().collect::<Vec<_>>(),
            [1],
            "u1 starts"
        );
    }

    #[test]
    fn sweeps_visit_the_nodes_with_free_gpus_most_free_first_then_by_index() {
        assert_eq!(most_free_first(&[1, 0, 4, 2, 4, 0]), vec![2, 4, 3, 0]);
        assert!(most_free_first(&[0, 0]).is_empty());
    }
}

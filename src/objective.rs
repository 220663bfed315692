//! The objective, as one function of an [`Assignment`], shared by every planner: the greedy
//! plan, the MIP incumbent and any baseline compare directly. The MIP's objective equals this
//! function on its solutions except for NVLink-island splits, which the MIP under-counts (so
//! its bound stays a valid upper bound of this function). Terms and weights: see
//! [`crate::instance::Weights`].

use crate::assignment::Assignment;
use crate::heuristics::placement::free::node_free;
use crate::instance::task_dist::NodeFree;
use crate::instance::{Instance, PackingWeights, PendingJob, RunningJob, Weights};
use crate::round_state::RoundState;
use crate::state::GpuUse;
use crate::topology::{spread_penalty, Topology};
use crate::units::MILLI_PER_GPU;

/// Objective cost per milli GPU of fragmentation growth ([`fragmentation_cost`]):
/// `policy.weights.fragmentation` per whole GPU of fragment (default 0.02, the default price
/// of a stranded GPU, `policy.weights.strand`).
pub fn frag_cost_per_milli(inst: &Instance) -> f64 {
    inst.policy.weights.fragmentation / f64::from(MILLI_PER_GPU)
}

/// Value per GPU of a priority level.
pub fn priority_factor(inst: &Instance, priority: i64) -> f64 {
    let w = &inst.policy.weights;
    (1.0 + w.priority * priority as f64).max(0.01)
}

/// Value of starting a pending job (before spread costs).
pub fn job_value(inst: &Instance, job: &PendingJob) -> f64 {
    let w = &inst.policy.weights;
    let eq = if job.gpus == 0 {
        w.cpu_job
    } else {
        job.gpu_equivalent()
    };
    let aging = w.aging * (job.wait / 3600.0).min(w.aging_cap_hours);
    eq * (w.gpu * priority_factor(inst, job.priority) + aging)
}

/// Value per GPU-equivalent of a pending job, the greedy's ordering key.
pub fn value_per_gpu(inst: &Instance, job: &PendingJob) -> f64 {
    let eq = if job.gpus == 0 {
        inst.policy.weights.cpu_job
    } else {
        job.gpu_equivalent()
    };
    job_value(inst, job) / eq.max(1e-9)
}

/// Spread penalty of a pending job placed on `gpus` (0 for jobs of one GPU or none).
pub fn job_spread(
    inst: &Instance,
    topo: &Topology,
    job: &PendingJob,
    gpus: &crate::assignment::GpuSet,
) -> f64 {
    if job.gpus <= 1 {
        return 0.0;
    }
    spread_penalty(
        &topo.span(inst, gpus),
        topo.min_units(inst, job),
        job.gpus,
        &job.slowdown,
        inst.policy.weights.spread,
    )
}

/// Cost of preempting a running job.
pub fn victim_cost(inst: &Instance, job: &RunningJob) -> f64 {
    let w = &inst.policy.weights;
    w.preemption * job.gpu_equivalent() * w.gpu * priority_factor(inst, job.priority)
        + w.checkpoint * job.checkpoint_cost / 3600.0
}

/// Weighted max-min fair share of each tenant with demand, by water-filling the usable GPUs;
/// tenants without demand get 0 and do not dilute the others. An instance that carries its
/// shares ([`Instance::fair_share`]) gives those.
pub fn fair_shares(inst: &Instance) -> Vec<f64> {
    if let Some(shares) = &inst.fair_share {
        return shares.clone();
    }
    let mut demand = vec![0.0; inst.tenants.len()];
    for r in &inst.running {
        demand[r.tenant] += r.gpu_equivalent();
    }
    for p in &inst.pending {
        demand[p.tenant] += p.gpu_equivalent();
    }
    let mut share = vec![0.0; inst.tenants.len()];
    let mut left = inst.gpus_usable() as f64;
    let mut active: Vec<usize> = (0..inst.tenants.len())
        .filter(|&t| demand[t] > 0.0)
        .collect();
    while left > 1e-9 && !active.is_empty() {
        let wsum: f64 = active.iter().map(|&t| inst.tenants[t].weight).sum();
        let unit = left / wsum;
        let capped: Vec<usize> = active
            .iter()
            .copied()
            .filter(|&t| demand[t] - share[t] <= unit * inst.tenants[t].weight)
            .collect();
        if capped.is_empty() {
            for &t in &active {
                share[t] += unit * inst.tenants[t].weight;
            }
            break;
        }
        for &t in &capped {
            left -= demand[t] - share[t];
            share[t] = demand[t];
        }
        active.retain(|t| !capped.contains(t));
    }
    share
}

/// GPUs each tenant holds before the round (sharers count their share).
pub fn held_before(inst: &Instance) -> Vec<f64> {
    let mut held = vec![0.0; inst.tenants.len()];
    for r in &inst.running {
        held[r.tenant] += r.gpu_equivalent();
    }
    held
}

/// GPUs each tenant holds after the round (sharers count their share).
pub fn held_after(inst: &Instance, a: &Assignment) -> Vec<f64> {
    let mut held = vec![0.0; inst.tenants.len()];
    for (k, r) in inst.running.iter().enumerate() {
        if !a.preempted.contains(&k) {
            held[r.tenant] += r.gpu_equivalent();
        }
    }
    for &j in a.placed.keys() {
        let p = &inst.pending[j];
        held[p.tenant] += p.gpu_equivalent();
    }
    held
}

/// The breakdown of the objective of an assignment.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ObjectiveTerms {
    /// Value of the jobs started.
    pub value: f64,
    /// Spread (topology) penalty.
    pub spread: f64,
    /// Preemption cost.
    pub preemption: f64,
    /// Fairness shortfall penalty.
    pub fairness: f64,
    /// Nodes opened plus stranded GPUs penalty.
    pub packing: f64,
    /// Fragmentation the round adds (negative where it removes some), priced; 0 without a
    /// task distribution ([`fragmentation_cost`]).
    pub fragmentation: f64,
}

impl ObjectiveTerms {
    /// The objective (maximised).
    pub fn total(&self) -> f64 {
        self.value
            - self.spread
            - self.preemption
            - self.fairness
            - self.packing
            - self.fragmentation
    }
}

/// Evaluate an assignment.
pub fn evaluate(inst: &Instance, topo: &Topology, a: &Assignment) -> ObjectiveTerms {
    let w = &inst.policy.weights;
    let mut t = ObjectiveTerms::default();
    for (&j, gpus) in &a.placed {
        let job = &inst.pending[j];
        t.value += job_value(inst, job);
        t.spread += job_spread(inst, topo, job, gpus);
    }
    for &k in &a.preempted {
        t.preemption += victim_cost(inst, &inst.running[k]);
    }
    t.fairness = fairness_penalty(w, &fair_shares(inst), &held_after(inst, a));
    t.packing = packing_penalty(inst, a);
    t.fragmentation = fragmentation_cost(inst, a);
    t
}

/// Fairness penalty: `fairness` per GPU each tenant holds below its fair share (`fair` and
/// `held` per tenant).
pub fn fairness_penalty(w: &Weights, fair: &[f64], held: &[f64]) -> f64 {
    w.fairness
        * fair
            .iter()
            .zip(held)
            .map(|(f, h)| (f - h).max(0.0))
            .sum::<f64>()
}

/// Packing penalty of one node with `usable` GPUs, `busy_before` of them busy before the round
/// and `busy_after` after: `open_node` if it was empty and is used, `strand` per free usable
/// GPU if it is in use before or after.
pub fn node_packing(w: PackingWeights, usable: u32, busy_before: u32, busy_after: u32) -> f64 {
    let mut penalty = 0.0;
    if busy_before == 0 && busy_after > 0 {
        penalty += w.open_node;
    }
    if busy_before > 0 || busy_after > 0 {
        penalty += w.strand * usable.saturating_sub(busy_after) as f64;
    }
    penalty
}

/// Open-node and stranding penalty: `open_node` per node empty before and used after, plus
/// `strand` per free usable GPU left on every node in use before or after the round. A GPU
/// shared before the round counts as busy after it (it is never given whole).
pub fn packing_penalty(inst: &Instance, a: &Assignment) -> f64 {
    let w = inst.packing_weights();
    if w.open_node == 0.0 && w.strand == 0.0 {
        return 0.0; // rounds with a task distribution price fragmentation instead
    }
    let before = crate::state::ClusterState::new(inst);
    let mut taken: Vec<Vec<bool>> = inst
        .nodes
        .iter()
        .map(|n| vec![false; n.gpus as usize])
        .collect();
    for gpus in a.placed.values() {
        for (n, idx) in gpus {
            for &g in idx {
                taken[*n][g as usize] = true;
            }
        }
    }
    let mut penalty = 0.0;
    for (n, node) in inst.nodes.iter().enumerate() {
        let mut usable = 0u32;
        let mut busy_before = 0u32;
        let mut busy_after = 0u32;
        for (g, u) in before.gpus[n].iter().enumerate() {
            if node.down[g] {
                continue;
            }
            usable += 1;
            let (b, kept) = match u {
                GpuUse::Whole(k) => (true, !a.preempted.contains(k)),
                GpuUse::Shared { .. } => (true, true),
                _ => (false, false),
            };
            busy_before += b as u32;
            busy_after += (kept || taken[n][g]) as u32;
        }
        penalty += node_packing(w, usable, busy_before, busy_after);
    }
    penalty
}

/// Fragmentation cost of an assignment, only when the instance carries a task distribution M
/// (0 otherwise):
///
/// ```text
/// fragmentation = frag_cost * sum_n ( F_n(M) after the round - F_n(M) before it )
/// ```
///
/// F_n(M) is FGD's fragmentation of node n against M, in milli GPUs
/// ([`crate::instance::task_dist::frag`]), over the nodes the plan places on or preempts on
/// (no other node changes); `frag_cost` is [`frag_cost_per_milli`].
/// The per-node MIP prices the same growth job by job ([`crate::model::fragmentation`], exact
/// when every node receives at most one arrival); this is the exact sum, so every plan of the
/// round is compared on what it leaves for the jobs to come.
pub fn fragmentation_cost(inst: &Instance, a: &Assignment) -> f64 {
    let Some(dist) = inst.task_dist.as_deref() else {
        return 0.0;
    };
    let touched: std::collections::BTreeSet<usize> = a
        .placed
        .values()
        .flat_map(|gpus| gpus.keys().copied())
        .chain(
            a.preempted
                .iter()
                .flat_map(|&k| inst.running[k].gpus.iter().map(|(n, _)| *n)),
        )
        .collect();
    if touched.is_empty() {
        return 0.0;
    }
    let before = crate::state::ClusterState::new(inst);
    let (s0, s1) = (
        RoundState::new(inst, &before),
        RoundState::with_plan(inst, &before, a),
    );
    let growth: f64 = touched
        .into_iter()
        .map(|n| {
            dist.frag_cached(&node_free(&s1, n, i64::MIN))
                - dist.frag_cached(&node_free(&s0, n, i64::MIN))
        })
        .sum();
    frag_cost_per_milli(inst) * growth
}

/// The most [`fragmentation_cost`] can lower the objective's cost below 0 on any plan of the
/// round, priced. A bound of the objective without the fragmentation term plus this is a bound
/// with it.
///
/// ```text
/// slack = frag_cost * ( sum_{n in P} F_n + min( sum_{n in T \ P} F_n, W ) )
/// ```
///
/// F_n is node n's fragmentation before the round, P the nodes holding preemptible work (when
/// the round allows preemption), T the nodes some pending job can take a GPU or a share of
/// one from ([`takes_gpu_from`]), W the GPU milli every pending job asks. No node ends below 0.
/// A node outside P and T keeps its F_n: nothing frees room on it, and the only placements it
/// can get are CPU-only jobs, which take CPU and memory alone and so can only stop task types
/// from fitting (F_n(m) of such a type becomes the whole free milli, at least what it was).
/// On a node the round only takes from (no victim frees anything there), F_n falls by at most
/// the milli placed on it: against each task type m, a GPU that was a fragment loses what is
/// taken from it and no more, a GPU that becomes one adds to F_n(m), and where m stops
/// fitting at all F_n(m) becomes the whole free milli, which is what it was less what was
/// taken; F_n(M) averages these over M. So those nodes give back at most what the pending
/// jobs ask in all.
pub fn fragmentation_slack(inst: &Instance) -> f64 {
    let Some(dist) = inst.task_dist.as_deref() else {
        return 0.0;
    };
    let before = crate::state::ClusterState::new(inst);
    let state = RoundState::new(inst, &before);
    let freeable: std::collections::BTreeSet<usize> = inst
        .running
        .iter()
        .filter(|r| inst.policy.preemption && r.preemptible)
        .flat_map(|r| r.gpus.iter().map(|(n, _)| *n))
        .collect();
    let (mut on_freeable, mut taken_from_only) = (0.0, 0.0);
    for n in 0..inst.nodes.len() {
        let free = node_free(&state, n, i64::MIN);
        let f = dist.frag_cached(&free);
        if freeable.contains(&n) {
            on_freeable += f;
        } else if f > 0.0 && takes_gpu_from(&state, n, &free) {
            taken_from_only += f;
        }
    }
    let asked: f64 = inst
        .pending
        .iter()
        .map(|j| f64::from(j.gpus) * f64::from(j.gpu_milli.unwrap_or(MILLI_PER_GPU)))
        .sum();
    frag_cost_per_milli(inst) * (on_freeable + taken_from_only.min(asked))
}

/// Whether some pending job can take a GPU, or a share of one, on node n as the round finds
/// it (`free`: the node's free view): a type it accepts, a GPU with the milli it asks free,
/// and CPU and memory for one GPU's share of it (every placement on n needs at least that).
fn takes_gpu_from(state: &RoundState, n: usize, free: &NodeFree) -> bool {
    let most = free.free.iter().copied().max().unwrap_or(0);
    state.inst.pending.iter().any(|job| {
        job.gpus > 0
            && job.accepts_type(&free.gpu_type)
            && most >= job.gpu_milli.unwrap_or(MILLI_PER_GPU)
            && state.fits_resources(n, job, 1)
    })
}

//! A floor under the packing penalty (open nodes and stranded GPUs), per GPU type.
//!
//! On type t, nodes with a GPU busy before the round ("partial") have F_t free usable GPUs;
//! E_t nodes have none busy, each with between u_t^min and u_t^max usable GPUs. Victims free
//! G_t = sum_{k on t} g_kt p_k GPUs on partial nodes (a victim sharer its share: a GPU whose
//! sharers all go is free whole), of which W_t = sum_{k on t} w_kt p_k are GPUs the victims
//! hold whole (a GPU shared before the round stays busy in every plan's penalty, so only
//! these can be stranded). With o_t the empty nodes a plan opens,
//! the GPUs whole-GPU jobs take on t fit in what the partial and opened nodes offer, and every
//! GPU of those nodes that stays free is stranded. The o_t opened nodes hold at least the GPUs
//! of the o_t smallest empty nodes, cap_t(o_t): with u_(1) <= u_(2) <= ... the empty nodes'
//! usable GPUs, cap_t is convex and piecewise linear, the largest of the lines through its
//! breakpoints (one per distinct size), so c_t >= each line is exact where the floor pulls c_t
//! down:
//!
//! ```text
//! o_t in Z+, o_t <= E_t
//! sum_c g_c x_ct <= F_t + G_t + u_t^max o_t                       (whole-GPU classes)
//! c_t >= cap_t(k) + u_(k+1) (o_t - k)       k: 0 and each breakpoint of cap_t
//! packing >= sum_t open_node o_t + strand (F_t + W_t + c_t - sum_c h_c x_ct)
//! ```
//!
//! h_c = g_c for whole-GPU classes and 1 per sharer (a sharer takes at most one free GPU), so
//! the stranded count is never overstated and the floor stays below every plan's penalty.
//! (Counting every opened node at u_t^min instead, 6 on a type where one empty 8-GPU node has
//! two GPUs down, left 2 GPUs of every other opened node uncounted: about 15 points of the 10k
//! bench round's 48-point gap.)

use super::supply::Supply;
use crate::instance::Instance;
use crate::state::{ClusterState, GpuUse};
use crate::topology::Topology;
use good_lp::{variable, Constraint, Expression, ProblemVariables, Variable};
use std::collections::BTreeMap;

/// GPUs a class takes from the free pool of one type: (at least, at most) per job, and the
/// count variable.
pub struct TypeTake {
    /// GPUs per job taken for sure (0 for a sharer, which may go to a shared GPU).
    pub least: f64,
    /// GPUs per job taken at most.
    pub most: f64,
    /// Jobs of the class on this type.
    pub count: Variable,
}

/// The floor's contribution: the (negated) penalty expression to add to the objective, the
/// constraint rows, and the constant part of the penalty.
pub struct PackingFloor {
    /// Minus the penalty's variable part (add to the objective).
    pub objective: Expression,
    /// Minus the penalty's constant part (add to the objective's constant).
    pub constant: f64,
    /// The capacity rows tying opened nodes to GPUs taken.
    pub constraints: Vec<Constraint>,
}

/// What the victims free on each type, per victim variable.
pub struct Freed {
    /// GPUs a victim frees for the capacity row: a sharer's share counts (a GPU all of
    /// whose sharers go is free whole).
    all: Vec<Vec<(f64, Variable)>>,
    /// Usable GPUs a victim holds whole: the only ones a plan counts free, and so stranded,
    /// after it (a GPU shared before the round stays busy in the plan's penalty).
    whole: Vec<Vec<(f64, Variable)>>,
}

impl Freed {
    /// The victims of `supply` on each type.
    pub fn new(topo: &Topology, before: &ClusterState, supply: &Supply) -> Self {
        let ntypes = topo.type_names.len();
        let all = supply
            .victims
            .iter()
            .map(|v| v.iter().map(|&(_, g, var)| (g, var)).collect())
            .collect();
        let mut held: BTreeMap<(usize, usize), u32> = BTreeMap::new();
        for (n, gpus) in before.gpus.iter().enumerate() {
            for u in gpus {
                if let GpuUse::Whole(k) = u {
                    if supply.preempt[*k].is_some() {
                        *held.entry((topo.node_type[n], *k)).or_default() += 1;
                    }
                }
            }
        }
        let mut whole = vec![Vec::new(); ntypes];
        for ((t, k), g) in held {
            whole[t].push((f64::from(g), supply.preempt[k].expect("a victim")));
        }
        Freed { all, whole }
    }
}

/// Build the packing floor. `takes[t]`: the classes' counts on type t; `freed`: what each
/// victim variable frees.
pub fn floor(
    inst: &Instance,
    topo: &Topology,
    before: &ClusterState,
    problem: &mut ProblemVariables,
    integer: bool,
    takes: &[Vec<TypeTake>],
    freed: &Freed,
) -> PackingFloor {
    let w = inst.packing_weights();
    let ntypes = takes.len();
    let mut partial_free = vec![0u64; ntypes];
    // Usable GPUs of each empty node, per type.
    let mut empties: Vec<Vec<u32>> = vec![Vec::new(); ntypes];
    for (n, gpus) in before.gpus.iter().enumerate() {
        let t = topo.node_type[n];
        let free = gpus.iter().filter(|u| matches!(u, GpuUse::Free)).count() as u32;
        let busy = gpus
            .iter()
            .any(|u| matches!(u, GpuUse::Whole(_) | GpuUse::Shared { .. }));
        if busy {
            partial_free[t] += free as u64;
        } else if free > 0 {
            empties[t].push(free);
        }
    }
    let mut out = PackingFloor {
        objective: Expression::from(0.0),
        constant: 0.0,
        constraints: Vec::new(),
    };
    if w.open_node == 0.0 && w.strand == 0.0 {
        return out;
    }
    for t in 0..ntypes {
        let sizes = &mut empties[t];
        sizes.sort_unstable();
        let count = sizes.len();
        let u_max = sizes.last().copied().unwrap_or(0);
        let mut least = Expression::from(0.0);
        let mut most = Expression::from(0.0);
        for take in &takes[t] {
            least.add_mul(take.least, take.count);
            most.add_mul(take.most, take.count);
        }
        let mut freed_t = Expression::from(0.0);
        for &(g, v) in &freed.all[t] {
            freed_t.add_mul(g, v);
        }
        let mut freed_whole = Expression::from(0.0);
        for &(g, v) in &freed.whole[t] {
            freed_whole.add_mul(g, v);
        }
        let f = partial_free[t] as f64;
        let mut strand = freed_whole - most;
        if count > 0 {
            let def = variable().min(0).max(count as f64);
            let opened = problem.add(if integer { def.integer() } else { def });
            out.constraints
                .push((least - freed_t - u_max as f64 * opened).leq(f));
            out.objective.add_mul(-w.open_node, opened);
            if sizes[0] == u_max {
                strand.add_mul(u_max as f64, opened);
            } else {
                // c_t over the lines of cap_t: from 0, and from each size's last node.
                let capacity = problem.add(variable().min(0));
                let mut held = 0.0;
                for (k, &u) in sizes.iter().enumerate() {
                    if k == 0 || sizes[k - 1] != u {
                        out.constraints
                            .push((u as f64 * opened - capacity).leq(u as f64 * k as f64 - held));
                    }
                    held += u as f64;
                }
                strand += capacity;
            }
        } else {
            out.constraints.push((least - freed_t).leq(f));
        }
        out.objective.add_mul(-w.strand, strand);
        out.constant -= w.strand * f;
    }
    out
}

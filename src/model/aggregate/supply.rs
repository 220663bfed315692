//! What the round offers each GPU type: free GPUs, room on shared GPUs, and the GPUs of the
//! candidate victims, with their preemption variables.
//!
//! ```text
//! p_k in {0,1}   preemptible running job k is preempted (only if some pending job outranks
//!                it); in [0,1] past INTEGER_VICTIMS_LIMIT candidates (a relaxation)
//! u_n in [0,1]   some victim on node n is preempted (nodes with several victims):
//!                u_n <= sum_{k on n} p_k
//! ```

use crate::instance::{Instance, RunningJob};
use crate::model::MipModel;
use crate::state::{ClusterState, GpuUse};
use crate::topology::Topology;
use crate::units::{gpu_units, MILLI_PER_GPU};
use good_lp::{variable, Expression, Variable};
use std::collections::BTreeMap;

/// Rounds with more candidate victims than this get continuous preemption variables.
pub const INTEGER_VICTIMS_LIMIT: usize = 200;

/// What one node offers the round: free GPUs, and the GPUs each victim there would free.
pub struct NodeOffer {
    /// Free whole GPUs.
    pub free: u32,
    /// u_n, for a node with several victims.
    pub any_victim: Option<Variable>,
    /// (GPUs, p_k) of each victim on the node.
    pub victims: Vec<(u32, Variable)>,
}

/// The round's supply of GPUs per type.
pub struct Supply {
    /// p_k per running job (`None`: not a candidate victim).
    pub preempt: Vec<Option<Variable>>,
    /// Free GPUs per type, room on shared GPUs counted in GPU units.
    pub free: Vec<f64>,
    /// (priority, GPUs, p_k) of the victims on each type.
    pub victims: Vec<Vec<(i64, f64, Variable)>>,
    /// Each type's nodes, as offers.
    pub node_offers: Vec<Vec<NodeOffer>>,
    /// Per node: (priority below which the GPUs are offered, GPUs): the free ones at
    /// `i64::MIN`, then each victim's.
    pub offers: Vec<Vec<(i64, u32)>>,
}

/// The supply, adding p_k (binary while few, `integer`) and u_n to the model.
pub fn build(
    inst: &Instance,
    topo: &Topology,
    before: &ClusterState,
    integer: bool,
    m: &mut MipModel,
) -> Supply {
    let ntypes = topo.type_names.len();
    let top_priority = inst.pending.iter().map(|j| j.priority).max();
    let can_be_victim = |r: &RunningJob| {
        inst.policy.preemption && r.preemptible && top_priority.is_some_and(|t| t > r.priority)
    };
    let integer_victims = integer
        && inst.running.iter().filter(|r| can_be_victim(r)).count() <= INTEGER_VICTIMS_LIMIT;
    let preempt: Vec<Option<Variable>> = inst
        .running
        .iter()
        .map(|r| {
            can_be_victim(r).then(|| {
                let def = variable().min(0).max(1);
                m.problem
                    .add(if integer_victims { def.integer() } else { def })
            })
        })
        .collect();
    let mut supply = Supply {
        preempt,
        free: vec![0.0f64; ntypes],
        victims: vec![Vec::new(); ntypes],
        node_offers: (0..ntypes).map(|_| Vec::new()).collect(),
        offers: vec![Vec::new(); inst.nodes.len()],
    };
    for (n, gpus) in before.gpus.iter().enumerate() {
        node(inst, topo.node_type[n], n, gpus, &mut supply, m);
    }
    supply
}

/// Node n's share of the supply of its type t.
fn node(
    inst: &Instance,
    t: usize,
    n: usize,
    gpus: &[GpuUse],
    supply: &mut Supply,
    m: &mut MipModel,
) {
    let preempt = &supply.preempt;
    let mut pot = 0;
    let mut by_victim: BTreeMap<usize, u32> = BTreeMap::new();
    for u in gpus {
        match u {
            GpuUse::Free => {
                supply.free[t] += 1.0;
                pot += 1;
            }
            GpuUse::Shared { milli, .. } => {
                supply.free[t] += gpu_units(MILLI_PER_GPU - milli.min(&MILLI_PER_GPU))
            }
            GpuUse::Whole(k) if preempt[*k].is_some() => {
                *by_victim.entry(*k).or_default() += 1;
                pot += 1;
            }
            _ => {}
        }
    }
    supply.offers[n].push((i64::MIN, pot - by_victim.values().sum::<u32>()));
    for (&k, &g) in &by_victim {
        supply.offers[n].push((inst.running[k].priority, g));
    }
    let free = pot - by_victim.values().sum::<u32>();
    // u_n: whether any victim on the node is preempted (several victims share the GPUs
    // left over past the node's last full slot, counted once).
    let any_victim = (by_victim.len() > 1).then(|| {
        let u = m.problem.add(variable().min(0).max(1));
        let mut sum_p = Expression::from(0.0);
        for &k in by_victim.keys() {
            sum_p += preempt[k].expect("a victim");
        }
        m.constraints.push((u - sum_p).leq(0.0));
        u
    });
    supply.node_offers[t].push(NodeOffer {
        free,
        any_victim,
        victims: by_victim
            .iter()
            .map(|(&k, &g)| (g, preempt[k].expect("a victim")))
            .collect(),
    });
    for (k, g) in by_victim {
        supply.victims[t].push((
            inst.running[k].priority,
            g as f64,
            preempt[k].expect("a victim"),
        ));
    }
}

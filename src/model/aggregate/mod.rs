//! The aggregated model of a round, whose size does not grow with the node count: the form
//! used when the per-node model is too big to solve in the round's time.
//!
//! Jobs that are interchangeable for capacity form a class c (accepted GPU types, size, share,
//! shape, tenant, priority). Every quantity below is a relaxation of the per-node model, so the
//! optimum of this model (and HiGHS's dual bound of it) is a valid upper bound on the objective
//! of every plan of the round.
//!
//! ```text
//! n_c in Z+           jobs of class c that start
//! z_c                 value of the class's best n_c jobs:  z_c <= F_c(k) + v_c,k+1 (n_c - k)
//! x_ct in Z+          jobs of class c on GPU type t:       sum_t x_ct = n_c
//! p_k in {0,1}        preemptible running job k is preempted (only if some pending job outranks
//!                     it); in [0,1] past INTEGER_VICTIMS_LIMIT candidates, a relaxation: integer
//!                     victims made tight 10k-GPU rounds 4x slower and moved the bound by under
//!                     0.01%; the second stage takes p_k > 0.5 as the victims to try and settles
//!                     preemption itself
//!
//! GPUs of type t, for every priority pi of a victim on t and pi = infinity:
//!   sum_{c: prio_c <= pi} eq_c x_ct <= free_t + shared_t + sum_{k on t: prio_k < pi} g_kt p_k
//! one-node and fixed-shape gangs, for every size level L = 2, 4, 8, ... (S_t,L(p): the slots
//! of L GPUs the free GPUs and the preempted victims leave on nodes of type t, see
//! `slots_at_level`):
//!   slots:   sum_{c: size >= L} s_c x_ct          <= S_t,L(p)
//!   digits:  sum_{c: L divides size} g_c x_ct     <= L S_t,L(p)
//!   (s_c = 1 for one-node jobs, g_c / gpus_per_node for fixed-shape gangs; a job of size >= L
//!   takes at least L GPUs of a node, and jobs whose sizes are multiples of L fill a node in
//!   multiples of L, so both rows hold for every real placement); gangs of no fixed shape
//!   placed on their fewest nodes take slots too ([`compact`])
//! quotas:    sum_{c of t} eq_c n_c - sum_{k of t} eq_k p_k <= q_t - held_t   (tenants within quota)
//! fairness:  sigma_t >= F_t - H_t,  sigma_t >= 0
//! objective: sum_c z_c - sum_k cost_k p_k - fairness sum_t sigma_t - packing_floor
//!            (v_c,k: the class's job values net of their spread floors, best first;
//!            F_c(k) their prefix sums; see `top_k_value`)
//! ```
//! x_ct is integer where a job of the class lands on one type (one-node jobs, one accepted
//! type); a multi-node gang accepting several types may mix them, so its x_ct is continuous.
//! Spread and packing enter through floors that no placement can beat ([`spread`],
//! [`packing`]); CPU, memory and the locality of multi-node gangs beyond those floors are left
//! out: all on the safe side for the bound. A second stage
//! (`solve`) places the chosen jobs first with the greedy machinery, so the returned plan is
//! always concrete and valid, and never worse than greedy.

pub mod compact;
pub mod packing;
pub mod spread;

use super::{MipModel, Vars};
use crate::instance::Instance;
use crate::objective::{fair_shares, job_value, victim_cost};
use crate::state::{ClusterState, GpuUse};
use crate::topology::Topology;
use good_lp::{variable, Expression, ProblemVariables, Variable};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Rounds with more candidate victims than this get continuous preemption variables.
pub const INTEGER_VICTIMS_LIMIT: usize = 200;

/// Rounds with more nodes holding several candidate victims than this count the slots those
/// nodes gain continuously (integer counts made 85%-busy 100k-GPU rounds overrun HiGHS's time
/// limit twofold).
pub const INTEGER_SLOT_NODES_LIMIT: usize = 2000;

/// The aggregated model and how to read its answer.
pub struct AggregateModel {
    /// The model (its `vars` are empty: read answers through this struct).
    pub model: MipModel,
    /// Each class's jobs, best first, and its count variable n_c.
    pub classes: Vec<(Vec<usize>, Variable)>,
    /// p_k per preemptible running job.
    pub preempt: Vec<(usize, Variable)>,
    /// Column of every variable.
    pub columns: HashMap<Variable, usize>,
}

impl AggregateModel {
    /// Running jobs a solution preempts.
    pub fn victims(&self, col: &[f64]) -> Vec<usize> {
        self.preempt
            .iter()
            .filter(|&&(_, v)| col[self.columns[&v]] > 0.5)
            .map(|&(k, _)| k)
            .collect()
    }

    /// Pending jobs chosen by a solution: the best `round(n_c)` jobs of each class.
    pub fn chosen(&self, col: &[f64]) -> BTreeSet<usize> {
        let mut out = BTreeSet::new();
        for (ranked, n) in &self.classes {
            let count = col[self.columns[n]].round().max(0.0) as usize;
            out.extend(ranked.iter().copied().take(count));
        }
        out
    }
}

/// Build the aggregated model. `integer`: class counts, type counts, opened nodes and (while
/// few) victims integer
/// (the MIP); otherwise its LP relaxation.
pub fn build(inst: &Instance, topo: &Topology, integer: bool) -> AggregateModel {
    let before = ClusterState::new(inst);
    let mut p = ProblemVariables::new();
    let mut objective = Expression::from(0.0);
    let mut constraints = Vec::new();
    let mut constant = 0.0;
    let int = |v: good_lp::VariableDefinition| if integer { v.integer() } else { v };
    let ntypes = topo.type_names.len();

    // Victims: binary while few, continuous (a relaxation) past INTEGER_VICTIMS_LIMIT.
    let top_priority = inst.pending.iter().map(|j| j.priority).max();
    let can_be_victim = |r: &crate::instance::RunningJob| {
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
                p.add(if integer_victims { def.integer() } else { def })
            })
        })
        .collect();
    // Per type: free GPUs, sharable milli as GPUs, victims' GPUs, and per-node potential.
    let mut free_t = vec![0.0f64; ntypes];
    let mut victims_t: Vec<Vec<(i64, f64, Variable)>> = vec![Vec::new(); ntypes];
    let mut node_offers: Vec<Vec<NodeOffer>> = (0..ntypes).map(|_| Vec::new()).collect();
    let mut offers: Vec<Vec<(i64, u32)>> = vec![Vec::new(); inst.nodes.len()];
    for (n, gpus) in before.gpus.iter().enumerate() {
        let t = topo.node_type[n];
        let mut pot = 0;
        let mut by_victim: BTreeMap<usize, u32> = BTreeMap::new();
        for u in gpus {
            match u {
                GpuUse::Free => {
                    free_t[t] += 1.0;
                    pot += 1;
                }
                GpuUse::Shared { milli, .. } => {
                    free_t[t] += (1000 - milli.min(&1000)) as f64 / 1000.0
                }
                GpuUse::Whole(k) if preempt[*k].is_some() => {
                    *by_victim.entry(*k).or_default() += 1;
                    pot += 1;
                }
                _ => {}
            }
        }
        offers[n].push((i64::MIN, pot - by_victim.values().sum::<u32>()));
        for (&k, &g) in &by_victim {
            offers[n].push((inst.running[k].priority, g));
        }
        let free = pot - by_victim.values().sum::<u32>();
        // u_n: whether any victim on the node is preempted (several victims share the GPUs
        // left over past the node's last full slot, counted once).
        let any_victim = (by_victim.len() > 1).then(|| {
            let u = p.add(variable().min(0).max(1));
            let mut sum_p = Expression::from(0.0);
            for &k in by_victim.keys() {
                sum_p += preempt[k].expect("a victim");
            }
            constraints.push((u - sum_p).leq(0.0));
            u
        });
        node_offers[t].push(NodeOffer {
            free,
            any_victim,
            victims: by_victim
                .iter()
                .map(|(&k, &g)| (g, preempt[k].expect("a victim")))
                .collect(),
        });
        for (k, g) in by_victim {
            victims_t[t].push((
                inst.running[k].priority,
                g as f64,
                preempt[k].expect("a victim"),
            ));
        }
    }
    let mut spread_floor = spread::SpreadFloor::new(inst, topo, &offers);

    // Classes.
    let units_are_nodes = topo.units == inst.nodes.len();
    type Key = (Vec<bool>, u32, Option<u32>, Option<u32>, bool, usize, i64);
    let mut class_of: BTreeMap<Key, Vec<usize>> = BTreeMap::new();
    for (j, job) in inst.pending.iter().enumerate() {
        if job.gpus == 0 {
            continue; // CPU-only jobs use no GPU: counted below at full value, a safe relaxation
        }
        if inst.tenants[job.tenant]
            .quota
            .is_some_and(|q| job.gpu_equivalent() > q as f64 + 1e-9)
        {
            continue;
        }
        let key: Key = (
            topo.type_mask(job),
            job.gpus,
            job.gpu_milli,
            job.gpus_per_node,
            job.node_limit() == 1,
            job.tenant,
            job.priority,
        );
        class_of.entry(key).or_default().push(j);
    }
    let mut classes = Vec::new();
    let mut type_users: Vec<Vec<(i64, f64, Variable)>> = vec![Vec::new(); ntypes];
    let mut takes: Vec<Vec<packing::TypeTake>> = (0..ntypes).map(|_| Vec::new()).collect();
    let mut level_rows: BTreeMap<(usize, u32), (Expression, Expression)> = BTreeMap::new();
    let mut tenant_y: Vec<Expression> = vec![Expression::from(0.0); inst.tenants.len()];
    for (key, members) in &class_of {
        let (mask, gpus, milli, gpn, one_node, _, prio) = key;
        let n_c = p.add(int(variable().min(0).max(members.len() as f64)));
        let ranked = top_k_value(
            inst,
            &mut spread_floor,
            members,
            n_c,
            &mut p,
            &mut objective,
            &mut constraints,
        );
        let compact = (!*one_node && gpn.is_none() && milli.is_none() && units_are_nodes)
            .then(|| compact::CompactGang::of(inst, topo, &mut spread_floor, members));
        let eq = inst.pending[members[0]].gpu_equivalent();
        tenant_y[inst.pending[members[0]].tenant].add_mul(eq, n_c);
        let mut sum_x = Expression::from(0.0);
        let one_type = mask.iter().filter(|&&m| m).count() == 1;
        for t in (0..ntypes).filter(|&t| mask[t]) {
            let def = variable().min(0).max(members.len() as f64);
            let x_integer = *one_node || one_type;
            let x = p.add(if x_integer { int(def) } else { def });
            sum_x += x;
            let per_job = milli.map_or(*gpus as f64, |m| m as f64 / 1000.0);
            type_users[t].push((*prio, per_job, x));
            takes[t].push(packing::TypeTake {
                least: if milli.is_some() { 0.0 } else { *gpus as f64 },
                most: *gpus as f64,
                count: x,
            });
            if let Some(gang) = &compact {
                // y_ct: the jobs placed on the fewest nodes; the rest pay an extra node.
                let y = p.add(if x_integer {
                    int(variable().min(0))
                } else {
                    variable().min(0)
                });
                constraints.push((y - x).leq(0.0));
                objective -= gang.extra_node * (x - y);
                let mut level = 2;
                while level <= gang.least_per_node {
                    level_rows
                        .entry((t, level))
                        .or_insert_with(|| (Expression::from(0.0), Expression::from(0.0)))
                        .0
                        .add_mul((gang.nodes * (gang.least_per_node / level)) as f64, y);
                    level *= 2;
                }
            }
            let (slots_per_job, piece) = match (gpn, one_node) {
                (_, true) => (1.0, *gpus),
                (Some(k), false) => ((*gpus / k) as f64, *k),
                _ => (0.0, 0),
            };
            if slots_per_job > 0.0 && milli.is_none() {
                let mut level = 2;
                while level <= piece {
                    let e = level_rows
                        .entry((t, level))
                        .or_insert_with(|| (Expression::from(0.0), Expression::from(0.0)));
                    e.0.add_mul(slots_per_job, x);
                    if piece % level == 0 {
                        e.1.add_mul(*gpus as f64, x);
                    }
                    level *= 2;
                }
            }
        }
        constraints.push((sum_x - n_c).eq(0.0));
        classes.push((ranked, n_c));
    }
    // CPU-only jobs: value taken whole (they need no GPU), one class each.
    for (j, _) in inst.pending.iter().enumerate().filter(|(_, j)| j.gpus == 0) {
        let n_c = p.add(int(variable().min(0).max(1)));
        let ranked = top_k_value(
            inst,
            &mut spread_floor,
            &[j],
            n_c,
            &mut p,
            &mut objective,
            &mut constraints,
        );
        classes.push((ranked, n_c));
    }

    // GPU rows per type and priority threshold.
    for t in 0..ntypes {
        let mut levels: BTreeSet<i64> = victims_t[t].iter().map(|v| v.0).collect();
        levels.insert(i64::MAX);
        for &pi in &levels {
            let mut lhs = Expression::from(0.0);
            let mut any = false;
            for &(pr, g, x) in &type_users[t] {
                if pr <= pi {
                    lhs.add_mul(g, x);
                    any = true;
                }
            }
            if !any {
                continue;
            }
            for &(pk, g, v) in &victims_t[t] {
                if pk < pi {
                    lhs.add_mul(-g, v);
                }
            }
            constraints.push(lhs.leq(free_t[t]));
        }
    }
    // Whole slots per node are integer at each type's top level while few nodes need them.
    let shared_nodes = node_offers
        .iter()
        .flatten()
        .filter(|n| n.any_victim.is_some())
        .count();
    let integer_slots = integer && shared_nodes <= INTEGER_SLOT_NODES_LIMIT;
    let top_level: BTreeMap<usize, u32> = level_rows.keys().copied().collect();
    for ((t, level), (slots, digits)) in level_rows {
        let whole = integer_slots && top_level[&t] == level;
        let (free_slots, freed) =
            slots_at_level(&node_offers[t], level, whole, &mut p, &mut constraints);
        constraints.push((slots - freed.clone()).leq(free_slots as f64));
        constraints.push((digits - level as f64 * freed).leq((free_slots * level) as f64));
    }
    // Preemption cost, quotas, fairness.
    let mut tenant_p: Vec<Expression> = vec![Expression::from(0.0); inst.tenants.len()];
    for (k, r) in inst.running.iter().enumerate() {
        if let Some(v) = preempt[k] {
            objective -= victim_cost(inst, r) * v;
            tenant_p[r.tenant].add_mul(r.gpu_equivalent(), v);
        }
    }
    let fair = fair_shares(inst);
    let held_before_round = crate::objective::held_before(inst);
    for (t, tenant) in inst.tenants.iter().enumerate() {
        let held = held_before_round[t];
        let change = tenant_y[t].clone() - tenant_p[t].clone();
        if let Some(q) = tenant.quota {
            if held <= q as f64 + 1e-9 {
                constraints.push(change.clone().leq(q as f64 - held));
            }
        }
        let w = inst.policy.weights.fairness;
        if fair[t] > 0.0 && w > 0.0 {
            let sigma = p.add(variable().min(0.0));
            constraints.push((sigma + change).geq(fair[t] - held));
            objective -= w * sigma;
        }
    }
    let freed: Vec<Vec<(f64, Variable)>> = victims_t
        .iter()
        .map(|v| v.iter().map(|&(_, g, var)| (g, var)).collect())
        .collect();
    let floor = packing::floor(inst, topo, &before, &mut p, integer, &takes, &freed);
    objective += floor.objective;
    constant += floor.constant;
    constraints.extend(floor.constraints);
    let columns = p
        .iter_variables_with_def()
        .enumerate()
        .map(|(i, (v, _))| (v, i))
        .collect();
    let preempt = preempt
        .iter()
        .enumerate()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect();
    AggregateModel {
        model: MipModel {
            problem: p,
            vars: Vars::default(),
            objective,
            constant,
            constraints,
        },
        classes,
        preempt,
        columns,
    }
}

/// What one node offers the round: free GPUs, and the GPUs each victim there would free.
struct NodeOffer {
    free: u32,
    any_victim: Option<Variable>,
    victims: Vec<(u32, Variable)>,
}

/// Slots of `level` GPUs on a type's nodes: those free now, and an expression of the slots
/// the preempted victims add. A node with f = qL + r free GPUs holds floor((r + G) / L) extra
/// slots once victims freeing G GPUs in all are preempted, never more than
/// e = floor(pot / L) - floor(f / L) (pot: free plus every victim's GPUs):
///
/// ```text
/// one victim k:       e p_k                                          (exact)
/// several victims:    s_n <= sum_k (g_k / L) p_k + (r / L) u_n,  0 <= s_n <= e
///                     u_n <= sum_k p_k,  u_n <= 1                    (u_n: any victim gone)
///                     s_n <= e_k + (e - e_k) p_k   for each victim k with e_k < e
/// ```
///
/// (e_k = floor((pot - g_k) / L) - floor(f / L): the extra slots the node reaches with k kept.
/// The last rows matter where s_n is continuous: without them a node whose victims free half
/// a slot counts half a slot.)
///
/// s_n is integer (`integer`: the slots are whole, so a victim freeing part of a slot adds
/// none) or, on large rounds, continuous: a relaxation. Both hold for every real plan and tie
/// the slots to the victims paid for.
fn slots_at_level(
    nodes: &[NodeOffer],
    level: u32,
    integer: bool,
    p: &mut ProblemVariables,
    constraints: &mut Vec<good_lp::Constraint>,
) -> (u32, Expression) {
    let mut free_slots = 0;
    let mut freed = Expression::from(0.0);
    let l = level as f64;
    for node in nodes {
        let pot = node.free + node.victims.iter().map(|v| v.0).sum::<u32>();
        let extra = pot / level - node.free / level;
        free_slots += node.free / level;
        if extra == 0 {
            continue;
        }
        match node.any_victim {
            Some(u) => {
                // s_n: whole slots, at most what the preempted GPUs and the rest complete.
                let def = variable().min(0).max(extra as f64);
                let s_n = p.add(if integer { def.integer() } else { def });
                let mut credit = Expression::from(0.0);
                for &(g, v) in &node.victims {
                    credit.add_mul(g as f64 / l, v);
                }
                credit.add_mul((node.free % level) as f64 / l, u);
                constraints.push((s_n - credit).leq(0.0));
                // Without victim k the node reaches at most e_k extra slots.
                for &(g, v) in &node.victims {
                    let e_k = (pot - g) / level - node.free / level;
                    if e_k < extra {
                        constraints.push((s_n - (extra - e_k) as f64 * v).leq(e_k as f64));
                    }
                }
                freed += s_n;
            }
            None => {
                // One victim: exactly the slots it completes.
                for &(_, v) in &node.victims {
                    freed.add_mul(extra as f64, v);
                }
            }
        }
    }
    (free_slots, freed)
}

/// The value of the best n_c jobs of a class, as an epigraph: with v_1 >= v_2 >= ... the
/// members' values net of their spread floors and F(k) = v_1 + ... + v_k (concave in k),
///
/// ```text
/// z_c <= F(k) + v_{k+1} (n_c - k)      k = 0 .. K-1
/// ```
///
/// so z_c = F(n_c) at every integer n_c: two non-zeros a row, no per-job variable. Returns the
/// members best first (index on ties), the order in which a solution's n_c picks them.
fn top_k_value(
    inst: &Instance,
    spread_floor: &mut spread::SpreadFloor,
    members: &[usize],
    n_c: Variable,
    p: &mut ProblemVariables,
    objective: &mut Expression,
    constraints: &mut Vec<good_lp::Constraint>,
) -> Vec<usize> {
    let mut ranked: Vec<(f64, usize)> = members
        .iter()
        .map(|&j| {
            let job = &inst.pending[j];
            (job_value(inst, job) - spread_floor.of(job), j)
        })
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let z = p.add(variable());
    *objective += z;
    let mut prefix = 0.0;
    for (k, &(v, _)) in ranked.iter().enumerate() {
        constraints.push((z - v * n_c).leq(prefix - v * k as f64));
        prefix += v;
    }
    ranked.into_iter().map(|(_, j)| j).collect()
}

//! The aggregated model of a round, whose size does not grow with the node count: the form
//! used when the per-node model is too big to solve in the round's time. The largest rounds
//! solve its LP relaxation (`build` with `integer` false; see
//! [`crate::solve::aggregated::RELAXATION_FROM_NODES`]), which bounds the objective as well.
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
//!   (shared_t: what the waiting sharers' shares can fill of the room on shared GPUs; a
//!   victim sharer's g_kt is its share: see [`supply`])
//! sharers per GPU, for the dual-feasible functions u_k (k = 1..8, [`sharer_bins`]):
//!   sum_c u_k(eq_c) x_ct <= free GPUs_t + sum_{shared s of t} best_k(room_s)
//!                           + sum_{k' on t} max(g_k't, 1) p_k'
//!   (u_k(x) >= x, and the u_k of the shares one GPU holds add up to at most 1)
//! one-node and fixed-shape gangs, for every size level L = 2, 4, 8, ... (S_t,L(p): the slots
//! of L GPUs the free GPUs and the preempted victims leave on nodes of type t, see
//! `slots_at_level`):
//!   slots:   sum_{c: size >= L} s_c x_ct          <= S_t,L(p)
//!   digits:  sum_{c: L divides size} g_c x_ct     <= L S_t,L(p)
//!   (s_c = 1 for one-node jobs, g_c / gpus_per_node for fixed-shape gangs; a job of size >= L
//!   takes at least L GPUs of a node, and jobs whose sizes are multiples of L fill a node in
//!   multiples of L, so both rows hold for every real placement); gangs of no fixed shape
//!   placed on their fewest nodes take slots too ([`compact`]), and those of them inside
//!   one rack take blocks of whole nodes of that rack ([`rack_blocks`]); where a type's
//!   NVLink units hold several nodes, gangs inside one unit take blocks of its free GPUs
//!   ([`unit_blocks`])
//! outranked: sum_{k: prio_k = pi} p_k <= N_pi sum_{c: prio_c > pi} n_c     (see [`outranked`])
//! quotas:    sum_{c of t} eq_c n_c - sum_{k of t} eq_k p_k <= q_t - held_t   (tenants within quota;
//!            above it, the same once the tenant starts a job: [`crate::model::quota`])
//! fairness:  sigma_t >= F_t - H_t,  sigma_t >= 0
//! objective: sum_c z_c - sum_k cost_k p_k - fairness sum_t sigma_t - packing_floor
//!            (v_c,k: the class's job values net of their spread floors, best first;
//!            F_c(k) their prefix sums; see `top_k_value`)
//! ```
//! x_ct is integer where a job of the class lands on one type (one-node jobs, one accepted
//! type); a multi-node gang accepting several types may mix them, so its x_ct is continuous.
//! Spread and packing enter through floors that no placement can beat ([`spread`],
//! [`packing`]; a floor that counts on victims' GPUs holds only as far as the victims are
//! preempted, [`victim_spread`]); CPU and memory enter per type and level of CPU (memory) per GPU
//! ([`resources`]); the locality of multi-node gangs beyond those floors is left out: all on
//! the safe side for the bound. A second stage
//! (`solve`) places the chosen jobs first with the greedy machinery, so the returned plan is
//! always concrete and valid, and never worse than greedy.
//!
//! One file per constraint family, each with its math: [`supply`] (victims and what each type
//! offers), [`classes`] (counts, values, what classes take), [`capacity`] (GPUs per type and
//! priority), [`sharer_bins`] (sharers per GPU), [`resources`] (CPU and memory), [`cpu_and_memory`] (both on one node),
//! [`cpu_only`] (CPU-only jobs in the cluster's CPU and memory),
//! [`resource_sums`] (amounts per node), [`node_levels`] (each node's room split among pairs
//! of levels, on rounds where it cuts the relaxation), [`reserved`] (reserved nodes for the
//! jobs they do not take), [`slots`] (size levels), [`compact`],
//! [`rack_blocks`] (whole nodes per rack), [`unit_blocks`] (free GPUs per NVLink unit),
//! [`spread`],
//! [`victim_spread`], [`unit_spread`] and [`packing`]; victims' need of outranking starts
//! ([`crate::model::outranked`]), quotas and fairness are the per-node model's rows
//! ([`crate::model::quota`], [`crate::model::fairness`]) over the class counts.

pub mod capacity;
pub mod classes;
pub mod compact;
pub mod cpu_and_memory;
pub mod cpu_only;
pub mod node_levels;
pub mod packing;
pub mod rack_blocks;
pub mod reserved;
pub mod resource_sums;
pub mod resources;
pub mod sharer_bins;
pub mod slots;
pub mod spread;
pub mod supply;
pub mod unit_blocks;
pub mod unit_spread;
pub mod victim_spread;

pub use slots::INTEGER_SLOT_NODES_LIMIT;
pub use supply::INTEGER_VICTIMS_LIMIT;

use super::fairness::{self, FixedTenants, Shortfall};
use super::holdings;
use super::outranked;
use super::quota::{self, QuotaRows};
use super::MipModel;
use crate::instance::Instance;
use crate::objective::victim_cost;
use crate::state::ClusterState;
use crate::topology::Topology;
use good_lp::Variable;
use std::collections::{BTreeSet, HashMap};

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
    /// Per pending job: the spread floor its class's value is taken net of.
    pub spread_floors: Vec<f64>,
    /// Whether the per-node rows of [`node_levels`] are in the model.
    pub node_levels: bool,
    /// The columns those rows take (in the model or not).
    pub node_level_columns: usize,
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
/// few) victims integer (the MIP); otherwise its LP relaxation. Without the per-node rows of
/// [`node_levels`] (see [`build_with`]).
pub fn build(inst: &Instance, topo: &Topology, integer: bool) -> AggregateModel {
    build_with(
        inst,
        topo,
        Form {
            integer,
            node_levels: None,
        },
    )
}

/// How a build forms the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Form {
    /// Class counts, type counts, opened nodes and (while few) victims integer (the MIP);
    /// otherwise its LP relaxation.
    pub integer: bool,
    /// With the per-node rows of [`node_levels`], where their columns stay within this many.
    pub node_levels: Option<usize>,
}

/// Build the aggregated model in the form asked ([`Form`]).
pub fn build_with(inst: &Instance, topo: &Topology, form: Form) -> AggregateModel {
    let integer = form.integer;
    let before = ClusterState::new(inst);
    let mut m = MipModel::empty();
    let supply = supply::build(inst, topo, &before, integer, &mut m);
    let rules = classes::KeyRules::new(inst, supply.victim_priorities());
    let rules = classes::granularity(inst, topo, rules);
    tracing::debug!(
        levels_per_octave = 1u32 << rules.levels().bits(),
        victim_priorities = rules.victims().len(),
        "aggregated model's classes: CPU and memory levels, victims' priorities told apart"
    );
    let mut spread_floor =
        spread::SpreadFloor::new(inst, topo, &supply.offers, rules.levels(), rules.victims());
    let demand = classes::build(inst, topo, integer, &rules, &mut spread_floor, &mut m);
    capacity::add(&supply, &demand, &mut m);
    sharer_bins::add(inst, &supply, &demand, &mut m);
    victim_spread::add(&supply.victims, &demand.victim_users, &mut m);
    let rooms = resources::add(inst, topo, &before, &supply, &demand.resource_users, &mut m);
    cpu_and_memory::add(&demand.resource_users, &rooms, &mut m);
    resource_sums::add(&demand.resource_users, &rooms, &mut m);
    cpu_only::add(&demand.cpu_only, &demand.resource_users, &rooms, &mut m);
    let levels = node_levels::rows(&demand.resource_users, &rooms);
    let node_level_columns = levels.columns();
    let node_levels = form
        .node_levels
        .is_some_and(|most| (1..=most).contains(&node_level_columns));
    if node_levels {
        levels.add(&mut m);
    }
    let classes::Demand {
        classes,
        takes,
        level_rows,
        tenant_starts,
        spread_floors,
        rack_rows,
        unit_rows,
        reserved_users,
        ..
    } = demand;
    reserved::add(inst, &supply.node_offers, &reserved_users, &mut m);
    slots::add(&supply.node_offers, level_rows, integer, &mut m);
    rack_blocks::add(inst, &supply.node_offers, rack_rows, &mut m);
    unit_blocks::add(topo, &supply.node_offers, unit_rows, &mut m);
    for (k, r) in inst.running.iter().enumerate() {
        if let Some(v) = supply.preempt[k] {
            m.objective -= victim_cost(inst, r) * v;
        }
    }
    add_outranked(inst, &classes, &supply.preempt, &mut m);
    let mut terms = holdings::with_victims(inst, &supply.preempt);
    for (t, starts) in tenant_starts.into_iter().enumerate() {
        terms[t].starts = starts;
    }
    tenant_rows(inst, &terms, integer, &mut m);
    let freed = packing::Freed::new(topo, &before, &supply);
    let floor = packing::floor(inst, topo, &before, &mut m.problem, integer, &takes, &freed);
    m.objective += floor.objective;
    m.constant += floor.constant;
    m.constraints.extend(floor.constraints);
    let columns = m
        .problem
        .iter_variables_with_def()
        .enumerate()
        .map(|(i, (v, _))| (v, i))
        .collect();
    let preempt = supply
        .preempt
        .iter()
        .enumerate()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect();
    AggregateModel {
        model: m,
        classes,
        preempt,
        columns,
        spread_floors,
        node_levels,
        node_level_columns,
    }
}

/// The outranking rows ([`crate::model::outranked`]): each class at its jobs' highest
/// priority.
fn add_outranked(
    inst: &Instance,
    classes: &[(Vec<usize>, Variable)],
    preempt: &[Option<Variable>],
    m: &mut MipModel,
) {
    let starts: Vec<(i64, Variable)> = classes
        .iter()
        .filter_map(|(jobs, n)| {
            let top = jobs.iter().map(|&j| inst.pending[j].priority).max()?;
            Some((top, *n))
        })
        .collect();
    outranked::add(inst, &starts, preempt, m);
}

/// Quota and fairness rows, tenant by tenant: the quota row of a tenant within its quota,
/// then its shortfall row; then the rows of the tenants above their quotas.
fn tenant_rows(inst: &Instance, terms: &[holdings::TenantTerms], integer: bool, m: &mut MipModel) {
    let over_quota = quota::over_quota_rows(inst, terms, &mut m.problem, integer);
    m.constraints.extend(over_quota);
    let quotas = quota::rows_of(inst, terms, QuotaRows::WithinQuota);
    let shortfalls = fairness::shortfalls(inst, terms, &mut m.problem, FixedTenants::Variable);
    let w = inst.policy.weights.fairness;
    for (rows, shortfall) in quotas.into_iter().zip(shortfalls) {
        m.constraints.extend(rows.into_iter().map(|(row, _)| row));
        if let Shortfall::Variable(sigma, row) = shortfall {
            m.constraints.push(row);
            m.objective -= w * sigma;
        }
    }
}

//! Gangs that accept GPU types whose NVLink units differ in size: the units a gang spans on
//! each type.
//!
//! A gang's spread counts its extra node units, `units - u` with u = ceil(g / U) and U the
//! largest unit of any type it accepts (one NVLink domain of GB200 trays holds 64-72 GPUs, a
//! DGX node 8). The job's spread floor ([`super::spread`]) may take the gang in the largest
//! unit, and the class's type counts x_ct may then put it on the small ones at no charge. On
//! type t the units hold at most U_t GPUs of the gang each, so a placement with g_t of its GPUs
//! on type t spans at least sum_t ceil(g_t / U_t) >= sum_t g_t / U_t units. With x_ct the
//! class's jobs on type t (a mixed gang counts there g_t / g of a job), every placement of the
//! class's started jobs spans at least
//!
//! ```text
//! sum_t (g / U_t) x_ct - u n_c          extra units over the started jobs
//! ```
//!
//! and pays at least kappa = w g (s_n - 1) per extra unit (w the spread weight, s_n the
//! lowest node-span slowdown among the class's jobs). Their values are already net of their
//! floors, each at most F (the class's largest floor), so the class pays beyond its floors at
//! least
//!
//! ```text
//! sum_t (kappa (g / U_t - u) - F) x_ct                 (using sum_t x_ct = n_c)
//! ```
//!
//! when that is positive: a placement's spread is at least both its floor and its units'
//! charge. Where one unit holds the gang (u = 1), each type's kappa (g / U_t - u) is taken at
//! 0 at least: a placement with g_t of its GPUs on the types P whose coefficient is
//! positive and the rest on others spans at least sum_{t in P} g_t / U_t + 1 units where it
//! uses another type, and sum_{t in P} g_t / U_t >= 1 units where it uses none, so its extra
//! units are at least sum_{t in P} (g_t / g) (g / U_t - 1) either way; a placement's share of
//! the charge is then at most kappa times its extra units, less F. (Not so for u >= 2: a
//! type whose units hold g / u GPUs or more may hold the gang's rest in fewer units than its
//! share of u.) The charge is one side of the class's largest charge beyond its floors (with
//! [`super::compact`]'s and [`super::victim_spread`]'s), so nothing is counted twice. It is
//! added only where some type's coefficient is positive.

use crate::instance::Instance;
use crate::topology::Topology;
use good_lp::{Expression, Variable};

/// The charge beyond the floors of a class of multi-node gangs (`members`; `floors` the
/// round's spread floors per pending job) placed by the type counts `xs` ((type, x_ct)), or
/// `None` where no type's coefficient is positive.
pub fn charge(
    inst: &Instance,
    topo: &Topology,
    members: &[usize],
    floors: &[f64],
    xs: &[(usize, Variable)],
) -> Option<Expression> {
    let job = &inst.pending[members[0]];
    // Where a unit holds several types, GPUs of two types may share one unit: the count of
    // units per type below does not hold.
    if job.gpus < 2 || job.node_limit() < 2 || job.gpu_milli.is_some() || topo.units_mix_types {
        return None;
    }
    let g = f64::from(job.gpus);
    let fewest = f64::from(topo.min_units(inst, job));
    let slowdown = members
        .iter()
        .map(|&j| inst.pending[j].slowdown.span_nodes - 1.0)
        .fold(f64::INFINITY, f64::min);
    let kappa = inst.policy.weights.spread * g * slowdown.max(0.0);
    let most_floor = members.iter().map(|&j| floors[j]).fold(0.0, f64::max);
    let ntypes = topo.type_names.len();
    let coefficient = |t: usize| {
        let mask = (0..ntypes).map(|s| s == t).collect();
        let unit = f64::from(topo.unit_capacity_on(inst, mask, job.gpus_per_node));
        let units_charge = kappa * (g / unit - fewest);
        // A gang one unit holds: a type whose units hold it adds no negative part.
        let units_charge = if fewest == 1.0 {
            units_charge.max(0.0)
        } else {
            units_charge
        };
        units_charge - most_floor
    };
    let terms: Vec<(f64, Variable)> = xs.iter().map(|&(t, x)| (coefficient(t), x)).collect();
    if terms.iter().all(|&(c, _)| c <= 1e-9) {
        return None;
    }
    let mut out = Expression::from(0.0);
    for (c, x) in terms {
        out.add_mul(c, x);
    }
    Some(out)
}

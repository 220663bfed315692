//! Shadow prices from the LP relaxation of the round's MIP.
//!
//! The model of [`crate::model::build`] is solved with integrality dropped (every binary and
//! integer column made continuous), and the row duals are read back:
//!
//! - **node price**: the sum of the duals of every row whose right-hand side is the node's
//!   free-GPU count (the whole-GPU capacity row and the preemption rows of that node): how
//!   much the LP objective would rise per extra free GPU on that node, for a small change;
//! - **GPU type / rack price**: the largest node price among nodes of that type / in that rack
//!   (where one extra GPU would be worth the most), with the node that attains it;
//! - **quota price**: d(LP objective)/d(quota) of a tenant: the dual of its quota row, or for a
//!   tenant above its quota, the sum over its per-job quota rows of dual times the job's LP start.
//!
//! These are LP duals of a MIP relaxation: marginal values at the LP optimum, valid for small
//! changes while the LP basis stays optimal; the LP may start fractions of gangs, so a price
//! says what a GPU is worth to a fractional plan, not that one more GPU starts a job. A zero
//! price means slack in the LP (the resource is not scarce there), not that it is worthless
//! to the integer plan; degenerate LPs can split a price between equivalent rows.

use crate::error::{Error, Result};
use crate::instance::Instance;
use crate::model::capacity::{fresh_slots, whole_users};
use crate::model::{self, Ctx, MipModel};
use crate::state::{ClusterState, GpuUse};
use crate::topology::Topology;
use good_lp::solvers::SolverModel;
use good_lp::{Expression, IntoAffineExpression, Variable};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// A price and where it is attained.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Price {
    /// Type, rack or node name.
    pub name: String,
    /// Objective units per extra GPU (or per unit of quota).
    pub price: f64,
    /// The node attaining it (for type and rack prices).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// The prices of one round.
#[derive(Debug, Clone, Serialize)]
pub struct Prices {
    /// Objective of the LP relaxation (an upper bound on the MIP objective).
    pub lp_objective: f64,
    /// Per node.
    pub nodes: Vec<Price>,
    /// Per GPU type (largest node price).
    pub gpu_types: Vec<Price>,
    /// Per rack (largest node price).
    pub racks: Vec<Price>,
    /// Per tenant with a quota.
    pub quotas: Vec<Price>,
}

/// Solve the LP relaxation of the round's MIP and read its prices.
pub fn prices(inst: &Instance, topo: &Topology) -> Result<Prices> {
    let m = model::build(inst, topo);
    let ctx = Ctx {
        inst,
        topo,
        before: ClusterState::new(inst),
    };
    let node_sets: Vec<Option<(HashMap<Variable, f64>, f64)>> = (0..inst.nodes.len())
        .map(|n| capacity_row(&ctx, &m, n))
        .collect();
    let quota_rows = quota_rows(&ctx, &m);
    // Row index -> (node) for every row of a node's capacity family.
    let mut node_rows: Vec<Vec<usize>> = vec![Vec::new(); inst.nodes.len()];
    let mut quota_of: Vec<Vec<(usize, Option<Variable>)>> = vec![Vec::new(); inst.tenants.len()];
    let mut by_const: HashMap<u64, Vec<usize>> = HashMap::new();
    for (n, set) in node_sets.iter().enumerate() {
        if let Some((_, c)) = set {
            by_const.entry(c.to_bits()).or_default().push(n);
        }
    }
    for (i, c) in m.constraints.iter().enumerate() {
        if c.is_equality() {
            continue;
        }
        let e = c.expression();
        if let Some(nodes) = by_const.get(&e.constant().to_bits()) {
            for &n in nodes {
                let (set, _) = node_sets[n].as_ref().expect("indexed above");
                if in_family(e, set) {
                    node_rows[n].push(i);
                }
            }
        }
        for (t, rows) in quota_rows.iter().enumerate() {
            for (expr, y) in rows {
                if e == expr {
                    quota_of[t].push((i, *y));
                }
            }
        }
    }
    // Solve the LP.
    let MipModel {
        problem,
        objective,
        constraints,
        vars,
        constant,
    } = m;
    let mut lp = problem.maximise(objective).using(good_lp::highs);
    for c in constraints {
        lp.add_constraint(c);
    }
    let mut hm = lp
        .try_into_inner()
        .map_err(|e| Error::Solver(e.to_string()))?;
    hm.make_quiet();
    let _ = hm.try_set_option("time_limit", inst.policy.time_limit.max(1.0));
    let cols = hm.num_cols();
    if cols > 0 {
        let continuous = vec![0 as highs_sys::HighsInt; cols];
        // SAFETY: hm owns a live Highs instance; the array has one entry per column.
        let status = unsafe {
            highs_sys::Highs_changeColsIntegralityByRange(
                hm.as_mut_ptr(),
                0,
                cols as highs_sys::HighsInt - 1,
                continuous.as_ptr(),
            )
        };
        if status == highs_sys::STATUS_ERROR {
            return Err(Error::Solver("HiGHS refused to drop integrality".into()));
        }
    }
    let solved = hm
        .try_solve()
        .map_err(|e| Error::Solver(format!("HiGHS run failed: {e:?}")))?;
    if solved.status() != highs::HighsModelStatus::Optimal {
        return Err(Error::Solver(format!(
            "the LP relaxation ended with status {:?}",
            solved.status()
        )));
    }
    let sol = solved.get_solution();
    let duals = sol.dual_rows();
    let values = sol.columns();
    // HiGHS reports duals as d(objective)/d(rhs) in the sense of the model: for a maximised
    // objective a binding `<=` row has a non-positive dual, so flip the sign.
    let price_of = |rows: &[usize]| -> f64 { rows.iter().map(|&i| -duals[i]).sum::<f64>() + 0.0 };
    let nodes: Vec<Price> = (0..inst.nodes.len())
        .map(|n| Price {
            name: inst.nodes[n].name.clone(),
            price: clean(price_of(&node_rows[n])),
            at: None,
        })
        .collect();
    let best_by = |key: &dyn Fn(usize) -> String| -> Vec<Price> {
        let mut best: BTreeMap<String, (f64, usize)> = BTreeMap::new();
        for (n, p) in nodes.iter().enumerate() {
            let k = key(n);
            let e = best.entry(k).or_insert((p.price, n));
            if p.price > e.0 + 1e-12 {
                *e = (p.price, n);
            }
        }
        best.into_iter()
            .map(|(name, (price, n))| Price {
                name,
                price,
                at: Some(inst.nodes[n].name.clone()),
            })
            .collect()
    };
    let gpu_types = best_by(&|n| inst.nodes[n].gpu_type.clone());
    let racks = best_by(&|n| inst.racks[inst.nodes[n].rack].clone());
    let quotas = inst
        .tenants
        .iter()
        .enumerate()
        .filter(|(_, t)| t.quota.is_some())
        .map(|(t, tenant)| {
            let price: f64 = quota_of[t]
                .iter()
                .map(|&(i, y)| {
                    let weight = y.map_or(1.0, |y| values[vars.col(y)]);
                    -duals[i] * weight
                })
                .sum();
            Price {
                name: tenant.name.clone(),
                price: clean(price),
                at: None,
            }
        })
        .collect();
    Ok(Prices {
        lp_objective: solved.objective_value() + constant,
        nodes,
        gpu_types,
        racks,
        quotas,
    })
}

fn clean(x: f64) -> f64 {
    if x.abs() < 1e-9 {
        0.0
    } else {
        (x * 1e9).round() / 1e9
    }
}

/// The whole-GPU capacity row of node n as (coefficients, constant), as the capacity family
/// writes it; `None` when the node has no row.
fn capacity_row(ctx: &Ctx, m: &MipModel, n: usize) -> Option<(HashMap<Variable, f64>, f64)> {
    let users = whole_users(ctx, m, n);
    if users.is_empty() && m.vars.fresh[n].is_empty() {
        return None;
    }
    let mut lhs: Expression =
        users.into_iter().map(|(_, e)| e).sum::<Expression>() + fresh_slots(m, n);
    for (k, r) in ctx.inst.running.iter().enumerate() {
        if let (Some(p), None) = (m.vars.preempt[k], r.gpu_milli) {
            let on = ctx.before.gpus[n]
                .iter()
                .filter(|u| **u == GpuUse::Whole(k))
                .count();
            if on > 0 {
                lhs -= on as f64 * p;
            }
        }
    }
    let row = lhs.leq(ctx.before.free_count(n) as f64);
    let e = row.expression();
    Some((e.clone().linear_coefficients().collect(), e.constant()))
}

/// Whether a row belongs to a node's capacity family: same right-hand side, and every
/// coefficient equal to the capacity row's coefficient of that variable.
fn in_family(e: &Expression, set: &HashMap<Variable, f64>) -> bool {
    let mut any = false;
    for (v, c) in e.clone().linear_coefficients() {
        match set.get(&v) {
            Some(&s) if (s - c).abs() < 1e-12 => any = true,
            _ => return false,
        }
    }
    any
}

/// The quota rows of every tenant as the quota family writes them, each with the start
/// variable whose coefficient carries the quota (over-quota tenants) or `None`.
fn quota_rows(ctx: &Ctx, m: &MipModel) -> Vec<Vec<(Expression, Option<Variable>)>> {
    let inst = ctx.inst;
    inst.tenants
        .iter()
        .enumerate()
        .map(|(t, tenant)| {
            let Some(q) = tenant.quota else {
                return Vec::new();
            };
            let q = q as f64;
            let held: f64 = inst
                .running
                .iter()
                .filter(|r| r.tenant == t)
                .map(|r| r.gpu_equivalent())
                .sum();
            let mut change = Expression::from(0.0);
            let mut starts = Vec::new();
            for (j, job) in inst.pending.iter().enumerate() {
                if let (true, Some(y)) = (job.tenant == t, m.vars.start[j]) {
                    change.add_mul(job.gpu_equivalent(), y);
                    starts.push(y);
                }
            }
            if starts.is_empty() {
                return Vec::new();
            }
            for (k, r) in inst.running.iter().enumerate() {
                if let (true, Some(p)) = (r.tenant == t, m.vars.preempt[k]) {
                    change.add_mul(-r.gpu_equivalent(), p);
                }
            }
            if held <= q + 1e-9 {
                vec![(change.leq(q - held).expression().clone(), None)]
            } else {
                starts
                    .into_iter()
                    .map(|y| {
                        (
                            (change.clone() + (held - q) * y)
                                .leq(0.0)
                                .expression()
                                .clone(),
                            Some(y),
                        )
                    })
                    .collect()
            }
        })
        .collect()
}

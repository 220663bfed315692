//! Shadow prices from the LP relaxation of the round's MIP.
//!
//! The model of [`crate::model::build`] is solved with integrality dropped (every binary and
//! integer column made continuous), and the row duals are read back:
//!
//! - **node price**: the sum of the duals of every row whose right-hand side is the node's
//!   free-GPU count (the whole-GPU capacity row and the preemption rows of that node), plus the
//!   reduced costs of the split-gang columns at an upper bound equal to that count, plus the
//!   dual of the node's packing row (`placed <= usable x open`) times its open value: how much the LP
//!   objective would rise per extra free GPU on that node, for a small change (a change that
//!   creates new placements, such as a node becoming large enough to hold a gang whole, is
//!   discrete and not in the price);
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
use crate::model::{self, CellCount, Ctx, MipModel};
use crate::state::{ClusterState, GpuUse};
use crate::topology::Topology;
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

/// The LP relaxation's optimum: objective (without the model's constant), row duals, column
/// values and column duals. HiGHS reports duals as d(objective)/d(bound) in the sense of the
/// model (maximised here), for rows and for columns at a bound alike.
struct LpAnswer {
    objective: f64,
    duals: Vec<f64>,
    values: Vec<f64>,
    col_duals: Vec<f64>,
}

/// Drop the integrality of every column of `hm` and solve it (at least a second, else the
/// round's time limit). A round where no job can go anywhere has an empty model: every price
/// is 0.
fn solve_relaxation(mut hm: highs::Model, time_limit: f64) -> Result<LpAnswer> {
    let _ = hm.try_set_option("time_limit", time_limit.max(1.0));
    let (cols, rows) = (hm.num_cols(), hm.num_rows());
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
    let solved = super::lp::solve(hm)?;
    match solved.status() {
        highs::HighsModelStatus::Optimal => {
            let sol = solved.get_solution();
            Ok(LpAnswer {
                objective: solved.objective_value(),
                duals: sol.dual_rows().to_vec(),
                values: sol.columns().to_vec(),
                col_duals: sol.dual_columns().to_vec(),
            })
        }
        highs::HighsModelStatus::ModelEmpty => Ok(LpAnswer {
            objective: 0.0,
            duals: vec![0.0; rows],
            values: vec![0.0; cols],
            col_duals: vec![0.0; cols],
        }),
        highs::HighsModelStatus::ReachedTimeLimit => Err(Error::TimeLimit(format!(
            "the LP relaxation did not finish within {:.1} s; give explain --prices a longer \
             --time-limit (or policy.time_limit)",
            time_limit.max(1.0)
        ))),
        other => Err(Error::Solver(format!(
            "the LP relaxation ended with status {other:?}"
        ))),
    }
}

/// The most (job, node) columns ([`crate::solve::per_node_columns`]) of a round whose prices
/// are worked out. Measured (2 cores): 96,000 columns (125 nodes, 400 pending) 6-19 s and 0.1
/// GiB; 960,000 (400 nodes, 1,200 pending) 61 s and 0.8 GiB, its LP past a 60 s limit;
/// 5,700,000 (1,250 nodes, 4,000 pending) 77 s and 6.4 GiB before its LP could start in a
/// 20 s limit. Past the limit the round is refused at once.
pub const PRICES_MOST_COLUMNS: usize = 1_000_000;

/// Solve the LP relaxation of the round's MIP and read its prices.
pub fn prices(inst: &Instance, topo: &Topology) -> Result<Prices> {
    let columns = crate::solve::per_node_columns(inst, topo);
    if columns > PRICES_MOST_COLUMNS {
        return Err(Error::TimeLimit(format!(
            "the prices come from the LP of the per-node model, which for this round has about \
             {columns} (job, node) columns; past {PRICES_MOST_COLUMNS} it takes minutes and \
             gigabytes; `explain JOB` and `whatif` answer on rounds of any size"
        )));
    }
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
    let open_exprs: Vec<Option<(Expression, Variable)>> = (0..inst.nodes.len())
        .map(|n| packing_row(&ctx, &m, n))
        .collect();
    let mut open_rows: Vec<Option<(usize, Variable)>> = vec![None; inst.nodes.len()];
    // Row index -> (node) for every row of a node's capacity family.
    let mut node_rows: Vec<Vec<usize>> = vec![Vec::new(); inst.nodes.len()];
    let mut quota_of: Vec<Vec<(usize, Option<Variable>)>> = vec![Vec::new(); inst.tenants.len()];
    // Rows are matched through indexes, not by comparing each row with every node's and
    // tenant's (at 1,250 nodes that took a minute): a capacity row through its first column
    // (the nodes whose capacity row has it), the packing and quota rows through a key of
    // their first column and length.
    let key = |e: &Expression| row_key(&m, e);
    let mut nodes_of_column: HashMap<usize, Vec<usize>> = HashMap::new();
    for (n, set) in node_sets.iter().enumerate() {
        for v in set.iter().flat_map(|(coefs, _)| coefs.keys()) {
            nodes_of_column.entry(m.vars.col(*v)).or_default().push(n);
        }
    }
    let mut open_by_key: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
    for (n, open) in open_exprs.iter().enumerate() {
        if let Some((expr, _)) = open {
            open_by_key.entry(key(expr)).or_default().push(n);
        }
    }
    let mut quota_by_key: HashMap<(usize, usize), Vec<(usize, usize)>> = HashMap::new();
    for (t, rows) in quota_rows.iter().enumerate() {
        for (r, (expr, _)) in rows.iter().enumerate() {
            quota_by_key.entry(key(expr)).or_default().push((t, r));
        }
    }
    for (i, c) in m.constraints.iter().enumerate() {
        if c.is_equality() {
            continue;
        }
        let e = c.expression();
        let k = key(e);
        for &n in nodes_of_column.get(&k.0).into_iter().flatten() {
            let (set, constant) = node_sets[n].as_ref().expect("indexed above");
            if e.constant().to_bits() == constant.to_bits() && in_family(e, set) {
                node_rows[n].push(i);
            }
        }
        for &n in open_by_key.get(&k).into_iter().flatten() {
            if let Some((expr, o)) = &open_exprs[n] {
                if open_rows[n].is_none() && e == expr {
                    open_rows[n] = Some((i, *o));
                }
            }
        }
        for &(t, r) in quota_by_key.get(&k).into_iter().flatten() {
            let (expr, y) = &quota_rows[t][r];
            if e == expr {
                quota_of[t].push((i, *y));
            }
        }
    }
    // Columns whose upper bound is the node's free (or freeable) GPU count: one more free GPU
    // raises that bound too.
    let node_cols = bound_columns(&ctx, &m);
    let (hm, vars, constant) = m.into_highs()?;
    let LpAnswer {
        objective,
        duals,
        values,
        col_duals,
    } = solve_relaxation(hm, inst.policy.time_limit)?;
    let nodes: Vec<Price> = (0..inst.nodes.len())
        .map(|n| {
            let rows: f64 = node_rows[n].iter().map(|&i| duals[i]).sum();
            let cols: f64 = node_cols[n]
                .iter()
                .filter(|&&(c, cap)| values[c] >= cap - 1e-7)
                .map(|&(c, _)| col_duals[c])
                .sum();
            let open: f64 = open_rows[n]
                .map(|(i, o)| duals[i] * values[vars.col(o)])
                .unwrap_or(0.0);
            Price {
                name: inst.nodes[n].name.clone(),
                price: clean(rows + cols + open),
                at: None,
            }
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
                    duals[i] * weight
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
        lp_objective: objective + constant,
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

/// Per node, the columns of split-gang cells whose upper bound is the GPUs the job could get on
/// the node (`Ctx::potential`), below the most a piece may hold: one more free GPU raises them.
fn bound_columns(ctx: &Ctx, m: &MipModel) -> Vec<Vec<(usize, f64)>> {
    let mut out = vec![Vec::new(); ctx.inst.nodes.len()];
    for (j, cells) in m.vars.cells.iter().enumerate() {
        let g = ctx.inst.pending[j].gpus;
        for cell in cells {
            if let CellCount::Free(x, cap) = cell.count {
                let piece = if cell.split { g.saturating_sub(1) } else { g };
                if cap == ctx.potential(j, cell.node) && cap < piece {
                    out[cell.node].push((m.vars.col(x), cap as f64));
                }
            }
        }
    }
    out
}

/// The packing row of a node empty before the round, `placed - U_n o_n <= 0`: with `o_n = 1`
/// it caps the node at its usable GPUs, so one more GPU relaxes it by `o_n`.
fn packing_row(ctx: &Ctx, m: &MipModel, n: usize) -> Option<(Expression, Variable)> {
    let o = m.vars.open.get(n).copied().flatten()?;
    let usable = ctx.inst.nodes[n].down.iter().filter(|d| !**d).count() as f64;
    let placed: Expression = whole_users(ctx, m, n)
        .into_iter()
        .map(|(_, e)| e)
        .sum::<Expression>()
        + fresh_slots(m, n);
    Some(((placed - usable * o).leq(0.0).expression().clone(), o))
}

/// A row's first column (the lowest, `usize::MAX` for a row without one) and its number of
/// terms: equal rows have equal keys.
fn row_key(m: &MipModel, e: &Expression) -> (usize, usize) {
    let mut first = usize::MAX;
    let mut len = 0;
    for (v, _) in e.linear_coefficients() {
        first = first.min(m.vars.col(v));
        len += 1;
    }
    (first, len)
}

/// Whether a row belongs to a node's capacity family: same right-hand side, and every
/// coefficient equal to the capacity row's coefficient of that variable.
fn in_family(e: &Expression, set: &HashMap<Variable, f64>) -> bool {
    let mut any = false;
    for (v, c) in e.linear_coefficients() {
        match set.get(&v) {
            Some(&s) if (s - c).abs() < 1e-12 => any = true,
            _ => return false,
        }
    }
    any
}

/// The quota rows of every tenant as the quota family writes them, as expressions.
fn quota_rows(ctx: &Ctx, m: &MipModel) -> Vec<Vec<(Expression, Option<Variable>)>> {
    model::quota::rows(ctx, m)
        .into_iter()
        .map(|rows| {
            rows.into_iter()
                .map(|(row, y)| (row.expression().clone(), y))
                .collect()
        })
        .collect()
}

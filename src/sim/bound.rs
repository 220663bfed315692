//! The offline upper bound of a fill run: no placement of the submitted pods, online or
//! offline, allocates more GPU capacity than this linear program's optimum.
//!
//! Nodes with the same hardware (GPU type, GPU count G_c, CPU C_c, memory M_c) form a class c
//! of N_c nodes; submitted pods with the same request (CPU, memory, GPU count g_t, share per
//! GPU m_t, accepted GPU types) form a type t of D_t pods (repeated draws of the fill
//! sequence count again). With w_t = g_t m_t the type's GPU milli:
//!
//! ```text
//! x_tc >= 0           pods of type t on nodes of class c, only where one pod fits one empty
//!                     node of the class (type accepted, g_t <= G_c, cpu_t <= C_c, mem_t <= M_c)
//! max  sum_tc w_t x_tc
//! pods:      sum_c x_tc                          <= D_t
//! per-node:  x_tc                                <= N_c k_tc   (k_tc: pods of type t that fit
//!                                                   one empty node of class c, by GPUs, GPU
//!                                                   milli, CPU and memory)
//! GPU milli: sum_t w_t x_tc                      <= 1000 G_c N_c
//! GPUs:      sum_{t whole} g_t x_tc + sum_{t sharer, m_t > 500} x_tc <= G_c N_c
//!            (a sharer of more than half a GPU shares its GPU with no other such sharer)
//! CPU:       sum_t cpu_t x_tc                    <= C_c N_c
//! memory:    sum_t mem_t x_tc                    <= M_c N_c
//! ```
//!
//! Every placement of any subset of the pods gives, by counting its pods per (type, class), a
//! feasible x with the same allocated milli, so the optimum bounds them all; the LP is solved
//! to optimality by HiGHS (a relaxation, so no time limit can make it invalid: a solve that
//! does not finish returns no bound). The bound is `optimum / (1000 x cluster GPUs)`.

use super::trace::{Trace, TraceJob};
use crate::error::{Error, Result};
use good_lp::{variable, Expression, ProblemVariables, SolverModel, Variable};
use std::collections::BTreeMap;

/// A node class: (GPU type, GPUs, CPU milli, memory MiB).
type ClassKey = (String, u64, u64, u64);
/// A pod type: (CPU, memory, GPUs, milli per GPU, accepted types).
type TypeKey = (u64, u64, u32, u32, Option<Vec<String>>);

fn classes(trace: &Trace) -> BTreeMap<ClassKey, u64> {
    let mut c = BTreeMap::new();
    for n in &trace.nodes {
        let key = (
            n.gpu_type.clone().unwrap_or_default(),
            n.gpus.unwrap_or(0),
            n.cpu_milli.unwrap_or(u64::MAX),
            n.memory_mib.unwrap_or(u64::MAX),
        );
        *c.entry(key).or_insert(0) += 1;
    }
    c
}

fn type_key(j: &TraceJob) -> TypeKey {
    let milli = if j.gpus == 0 {
        0
    } else {
        j.gpu_milli.unwrap_or(1000)
    };
    (
        j.cpu_milli,
        j.memory_mib,
        j.gpus,
        milli,
        j.gpu_types.clone(),
    )
}

/// Pods of type `t` that fit one empty node of class `c` (0: none).
fn per_node(t: &TypeKey, c: &ClassKey) -> u64 {
    let (cpu, mem, g, m, types) = t;
    let (ty, gpus, ccpu, cmem) = c;
    if *g == 0 || types.as_ref().is_some_and(|v| !v.contains(ty)) {
        return 0;
    }
    let by_gpu = if *m < 1000 {
        gpus * (1000 / *m as u64)
    } else {
        gpus / *g as u64
    };
    let by = |have: u64, need: u64| have.checked_div(need).unwrap_or(u64::MAX);
    by_gpu.min(by(*ccpu, *cpu)).min(by(*cmem, *mem))
}

/// The bound (a fraction of the cluster's GPU capacity) for the pods `submitted` (indices
/// into `trace.jobs`, repeats allowed).
pub fn offline_upper_bound(trace: &Trace, submitted: &[usize]) -> Result<f64> {
    let cap = trace.gpus() as f64 * 1000.0;
    if cap <= 0.0 {
        return Ok(0.0);
    }
    let mut demand: BTreeMap<TypeKey, u64> = BTreeMap::new();
    for &k in submitted {
        *demand.entry(type_key(&trace.jobs[k])).or_insert(0) += 1;
    }
    let classes = classes(trace);
    let mut pv = ProblemVariables::new();
    let mut objective = Expression::from(0.0);
    let mut rows = Vec::new();
    let mut by_class: BTreeMap<&ClassKey, Vec<(&TypeKey, Variable)>> = BTreeMap::new();
    for (t, &d) in &demand {
        let mut pods = Expression::from(0.0);
        for (c, &nc) in &classes {
            let k = per_node(t, c);
            if k == 0 {
                continue;
            }
            let x = pv.add(
                variable()
                    .min(0.0)
                    .max((nc.saturating_mul(k)).min(d) as f64),
            );
            objective += (t.2 as f64 * t.3 as f64) * x;
            pods += x;
            by_class.entry(c).or_default().push((t, x));
        }
        rows.push(pods.leq(d as f64));
    }
    for (c, xs) in &by_class {
        let n = classes[*c] as f64;
        let (_, gpus, cpu, mem) = c;
        let mut milli = Expression::from(0.0);
        let mut whole = Expression::from(0.0);
        let mut cpu_use = Expression::from(0.0);
        let mut mem_use = Expression::from(0.0);
        for (t, x) in xs {
            milli += (t.2 as f64 * t.3 as f64) * *x;
            if t.3 >= 1000 {
                whole += t.2 as f64 * *x;
            } else if t.3 > 500 {
                whole += *x;
            }
            cpu_use += t.0 as f64 * *x;
            mem_use += t.1 as f64 * *x;
        }
        rows.push(milli.leq(1000.0 * *gpus as f64 * n));
        rows.push(whole.leq(*gpus as f64 * n));
        if *cpu < u64::MAX {
            rows.push(cpu_use.leq(*cpu as f64 * n));
        }
        if *mem < u64::MAX {
            rows.push(mem_use.leq(*mem as f64 * n));
        }
    }
    if pv.is_empty() {
        return Ok(0.0); // no pod fits any node
    }
    let mut lp = pv.maximise(objective.clone()).using(good_lp::highs);
    lp.set_verbose(false);
    for r in rows {
        lp.add_constraint(r);
    }
    let sol = lp
        .solve()
        .map_err(|e| Error::Solver(format!("offline bound LP: {e}")))?;
    Ok((objective.eval_with(&sol) / cap).clamp(0.0, 1.0))
}

//! New hardware in real units. The relaxation solve adds single GPUs to existing nodes (its
//! `e_n` columns), which no site can buy; this turns them into whole nodes of a shipped
//! hardware model in the same rack, and checks the suggestion as `gangplan whatif --add-nodes`
//! would: the nodes are written into the instance and the round is planned again.
//!
//! The model for a rack is the one its nodes already use most among those of a GPU type the
//! job accepts (ties by name), else the shipped model with the most GPUs of the rack's own GPU
//! type, else of any type the job accepts.
//! The count starts at the fewest nodes that hold the GPUs the relaxation added; when the job
//! still waits with that many (new nodes compete with the other pending jobs, and a gang may
//! need its GPUs on fewer, fuller nodes), it grows up to the count that holds the whole job on
//! new nodes alone, and the smallest count that lets the job start is reported (binary search,
//! one re-plan each).

use super::relax::{self, Change, Relaxation};
use super::round::Round;
use super::whatif::{self, WhatIf};
use super::Verification;
use crate::error::{Error, Result};
use crate::hardware::{HardwareModel, ModelLibrary};
use crate::instance::raw::RawInstance;
use crate::instance::PendingJob;
use crate::plan::reasons::reason;
use std::collections::BTreeMap;

/// Nodes of one model for one rack.
#[derive(Debug, Clone)]
struct RackOrder<'m> {
    rack: String,
    model: &'m HardwareModel,
    count: u32,
}

/// A relaxation that adds GPUs, restated as whole nodes of shipped models and (when `verify`
/// is set) checked by re-planning. `None` when the relaxation adds no GPUs or no shipped model
/// has a GPU type the job accepts (the GPU-level suggestion then stands, unverified).
pub fn in_whole_nodes(
    raw: &RawInstance,
    lib: &ModelLibrary,
    source: &str,
    job: &PendingJob,
    rel: &Relaxation,
    verify: bool,
) -> Result<Option<(Relaxation, Verification)>> {
    let mut added: BTreeMap<String, u32> = BTreeMap::new();
    for c in &rel.changes {
        if let Change::AddGpus { rack, gpus, .. } = c {
            *added.entry(rack.clone()).or_default() += gpus;
        }
    }
    if added.is_empty() {
        return Ok(None);
    }
    let mut orders = Vec::new();
    for (rack, gpus) in added {
        let Some(model) = model_for(raw, lib, job, &rack) else {
            return Ok(None);
        };
        let count = gpus.div_ceil(model.gpus.max(1));
        orders.push(RackOrder { rack, model, count });
    }
    let others: Vec<Change> = rel
        .changes
        .iter()
        .filter(|c| !matches!(c, Change::AddGpus { .. }))
        .cloned()
        .collect();
    let base = Relaxation {
        changes: others.clone(),
        cost: rel.cost,
        summary: String::new(),
    };
    let Some(without_hardware) = relax::apply(raw, &job.id, &base) else {
        return Ok(None);
    };
    let check = |orders: &[RackOrder]| -> Result<Verification> {
        if !verify {
            return Ok(Verification::NotRun {
                why: "verification was turned off".into(),
            });
        }
        starts_with(&without_hardware, lib, source, &job.id, orders)
    };
    let mut verdict = check(&orders)?;
    if orders.len() == 1 && !matches!(verdict, Verification::Starts | Verification::NotRun { .. }) {
        (orders[0].count, verdict) = smallest_count(&orders[0], job, &check, verdict)?;
    }
    let mut changes = others;
    changes.extend(orders.iter().map(|o| Change::AddNodes {
        model: o.model.name.clone(),
        gpus_each: o.model.gpus,
        gpu_type: o.model.gpu_type.clone(),
        count: o.count,
        rack: o.rack.clone(),
    }));
    let summary = relax::summary(&changes);
    Ok(Some((
        Relaxation {
            changes,
            cost: rel.cost,
            summary,
        },
        verdict,
    )))
}

/// Between the count that holds the added GPUs (where the job still waits, `at_least`) and the
/// one that holds the whole job, the smallest count with which the job starts; the largest
/// count and its verdict when none does.
fn smallest_count(
    order: &RackOrder,
    job: &PendingJob,
    check: &dyn Fn(&[RackOrder]) -> Result<Verification>,
    at_least: Verification,
) -> Result<(u32, Verification)> {
    let with = |count: u32| -> Result<Verification> {
        check(&[RackOrder {
            count,
            ..order.clone()
        }])
    };
    let mut lo = order.count;
    let hi = lo.max(job.gpus.div_ceil(order.model.gpus.max(1)));
    if hi == lo {
        return Ok((lo, at_least));
    }
    let top = with(hi)?;
    if top != Verification::Starts {
        return Ok((hi, top));
    }
    // Invariant: the job waits with `lo` nodes and starts with `hi`.
    let mut hi = hi;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if with(mid)? == Verification::Starts {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok((hi, Verification::Starts))
}

/// Re-plan the instance with the ordered nodes added: does the job start?
fn starts_with(
    raw: &RawInstance,
    lib: &ModelLibrary,
    source: &str,
    job_id: &str,
    orders: &[RackOrder],
) -> Result<Verification> {
    let changes: Vec<WhatIf> = orders
        .iter()
        .map(|o| WhatIf::AddNodes {
            model: o.model.name.clone(),
            count: o.count,
            rack: (!o.rack.is_empty()).then(|| o.rack.clone()),
        })
        .collect();
    let changed = whatif::apply(raw, &changes, lib, source)?;
    let round = match Round::plan(&changed, lib, source) {
        Ok(round) => round,
        // The order is the suggestion's, not the user's input: a cluster it makes too large
        // is a verdict on the order.
        Err(Error::Input { issues, .. }) => {
            let what: Vec<String> = issues
                .iter()
                .map(|i| format!("{}: {}", i.path, i.message))
                .collect();
            return Ok(Verification::NotRun {
                why: format!(
                    "the cluster with these nodes added is not a valid instance ({})",
                    what.join("; ")
                ),
            });
        }
        Err(e) => return Err(e),
    };
    let Some(j) = round.inst.pending_index(job_id) else {
        return Ok(Verification::NotRun {
            why: format!("job {job_id} is not pending in the changed instance"),
        });
    };
    if round.assignment().placed.contains_key(&j) {
        return Ok(Verification::Starts);
    }
    Ok(Verification::StillWaits {
        reason: reason(&round.inst, &round.after(), j).text,
    })
}

/// The shipped model to add to `rack` for `job`: the rack's most used model of an accepted
/// GPU type (ties by name), else the accepted model with the most GPUs (ties by name). Models
/// with fewer GPUs than the job's `gpus_per_node` are never chosen.
fn model_for<'m>(
    raw: &RawInstance,
    lib: &'m ModelLibrary,
    job: &PendingJob,
    rack: &str,
) -> Option<&'m HardwareModel> {
    let fits = |m: &HardwareModel| {
        job.accepts_type(&m.gpu_type) && job.gpus_per_node.is_none_or(|k| m.gpus >= k) && m.gpus > 0
    };
    let mut used: BTreeMap<&str, usize> = BTreeMap::new();
    for n in &raw.nodes {
        if n.rack.as_deref().unwrap_or("") != rack {
            continue;
        }
        if let Some(m) = n.model.as_deref().and_then(|m| lib.hardware.get(m)) {
            if fits(m) {
                *used.entry(m.name.as_str()).or_default() += 1;
            }
        }
    }
    let most_used = used
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .and_then(|(name, _)| lib.hardware.get(*name));
    // Nodes without a model: a model of the rack's own GPU type, if one is shipped.
    let rack_types: Vec<&str> = raw
        .nodes
        .iter()
        .filter(|n| n.rack.as_deref().unwrap_or("") == rack)
        .filter_map(|n| n.gpu_type.as_deref())
        .collect();
    let largest = |same_type: bool| {
        lib.hardware
            .values()
            .filter(|m| fits(m) && (!same_type || rack_types.contains(&m.gpu_type.as_str())))
            .max_by(|a, b| a.gpus.cmp(&b.gpus).then(b.name.cmp(&a.name)))
    };
    most_used
        .or_else(|| largest(true))
        .or_else(|| largest(false))
}

//! The `running` section: each job's tenant, priority, checkpoint cost and the GPUs it holds
//! (each GPU held by one job, or by sharers totalling at most one GPU).

use super::issues::Issues;
use super::limits;
use super::nodes::NodeTable;
use super::tenants::TenantTable;
use crate::instance::raw::RawRunning;
use crate::instance::text::{quoted, shorten, ECHO_CHARS};
use crate::instance::{NodeIx, RunningJob};
use crate::units::MILLI_PER_GPU;
use std::collections::{BTreeMap, BTreeSet};

/// Who holds a GPU so far: the job, whether it shares the GPU, and the thousandths held.
type Holders = BTreeMap<(NodeIx, u32), (String, bool, u32)>;

/// Check every running job; `ids` collects the job ids seen (unique across sections).
pub fn check(
    is: &mut Issues,
    raw: &[RawRunning],
    nodes: &NodeTable,
    tenants: &mut TenantTable,
    ids: &mut BTreeSet<String>,
) -> Vec<RunningJob> {
    let mut holders = Holders::new();
    let mut running = Vec::with_capacity(raw.len());
    for (i, r) in raw.iter().enumerate() {
        let p = format!("running[{i}]");
        is.job_id(&p, &r.id, ids);
        let tenant = tenants.of(is, format!("{p}.tenant"), &r.tenant);
        is.priority(&format!("{p}.priority"), r.priority);
        let checkpoint_cost = r.checkpoint_cost.unwrap_or(0.0);
        if !(checkpoint_cost.is_finite()
            && (0.0..=limits::MAX_CHECKPOINT_COST).contains(&checkpoint_cost))
        {
            is.push(
                format!("{p}.checkpoint_cost"),
                format!(
                    "is {checkpoint_cost}; expected GPU-seconds in 0..={:e}",
                    limits::MAX_CHECKPOINT_COST
                ),
            );
        }
        node_lists(is, &p, r);
        let milli = is.milli(&format!("{p}.gpu_milli"), r.gpu_milli);
        let total: usize = r.gpus.values().map(|v| v.len()).sum();
        if milli.is_some() && total != 1 {
            is.push(
                format!("{p}.gpu_milli"),
                format!("is set but the job holds {total} GPUs; a sharer holds exactly one GPU"),
            );
        }
        let held = held_gpus(is, &p, r, milli, nodes, &mut holders);
        let ends_in = is.seconds(&format!("{p}.ends_in"), r.ends_in);
        running.push(RunningJob {
            id: r.id.clone(),
            tenant,
            priority: r.priority,
            preemptible: r.preemptible,
            checkpoint_cost,
            gpus: held,
            gpu_milli: milli,
            cpu_milli: is
                .resource(&format!("{p}.cpu_milli"), r.cpu_milli)
                .unwrap_or(0),
            memory_mib: is
                .resource(&format!("{p}.memory_mib"), r.memory_mib)
                .unwrap_or(0),
            ends_in,
        });
    }
    running
}

/// The shape of `gpus`: at least one node; a CPU-only job (no GPU listed) names exactly one
/// node, with an empty list; a job with GPUs lists only nodes where it holds some. Another
/// shape would charge the job's CPU and memory on nodes it does not use.
fn node_lists(is: &mut Issues, p: &str, r: &RawRunning) {
    let empty: Vec<String> = r
        .gpus
        .iter()
        .filter(|(_, idx)| idx.is_empty())
        .map(|(n, _)| shorten(n, ECHO_CHARS))
        .collect();
    if r.gpus.is_empty() {
        is.push(format!("{p}.gpus"), "is empty; map each node the job holds to its GPU indices (a CPU-only job lists its node with [])");
    } else if empty.len() == r.gpus.len() && empty.len() > 1 {
        is.push(
            format!("{p}.gpus"),
            format!(
                "lists {} nodes ({}), each with no GPU; a CPU-only job lists exactly one node, with an empty list: {{{}: []}}",
                empty.len(),
                empty.join(", "),
                empty[0]
            ),
        );
    } else if !empty.is_empty() && empty.len() < r.gpus.len() {
        is.push(
            format!("{p}.gpus"),
            format!(
                "lists node(s) {} with no GPU beside nodes where the job holds GPUs; a job with GPUs lists only the nodes where it holds GPUs: remove {}",
                empty.join(", "),
                empty.join(", ")
            ),
        );
    }
}

/// The GPUs job `r` holds, per node: names of listed nodes, indices that exist on them, each
/// GPU once and not held by another job (sharers may share a GPU up to one GPU in all). A
/// node refused in the nodes section has its own issue; its indices are not checked.
fn held_gpus(
    is: &mut Issues,
    p: &str,
    r: &RawRunning,
    milli: Option<u32>,
    nodes: &NodeTable,
    holders: &mut Holders,
) -> Vec<(NodeIx, Vec<u32>)> {
    let mut held = Vec::new();
    for (node_name, idx) in &r.gpus {
        let shown = shorten(node_name, ECHO_CHARS);
        let np = format!("{p}.gpus.{shown}");
        let Some(&n) = nodes.by_name.get(node_name) else {
            is.push(
                np,
                format!(
                    "node {} is not in nodes; use one of the listed node names",
                    quoted(node_name)
                ),
            );
            continue;
        };
        let Some(gpus) = nodes.gpus(n) else {
            continue;
        };
        let mut list = Vec::new();
        for (k, &g) in idx.iter().enumerate() {
            if g >= gpus as u64 {
                is.push(
                    format!("{np}[{k}]"),
                    format!(
                        "GPU index {g} does not exist; node {shown} has GPUs 0..{}",
                        gpus.saturating_sub(1)
                    ),
                );
                continue;
            }
            let g = g as u32;
            if list.contains(&g) {
                is.push(
                    format!("{np}[{k}]"),
                    format!("GPU index {g} is listed twice; list each GPU once"),
                );
                continue;
            }
            list.push(g);
            let shared = milli.is_some();
            match holders.get_mut(&(n, g)) {
                Some((other, oshared, omilli)) => {
                    if shared && *oshared && *omilli + milli.unwrap_or(0) <= MILLI_PER_GPU {
                        *omilli += milli.unwrap_or(0);
                    } else {
                        is.push(format!("{np}[{k}]"), format!("GPU {shown}:{g} is already held by running job {}; a GPU is held by one job (or by sharers totalling at most {MILLI_PER_GPU} milli)", quoted(other)));
                    }
                }
                None => {
                    holders.insert(
                        (n, g),
                        (r.id.clone(), shared, milli.unwrap_or(MILLI_PER_GPU)),
                    );
                }
            }
        }
        list.sort_unstable();
        held.push((n, list));
    }
    held
}
